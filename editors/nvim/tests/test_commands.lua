-- The session's available commands: :BridleCommands picks one (a prompt
-- command of the project here), asks for its argument and sends it;
-- :Bridle completes their names after a "/".
local H = require("helpers")

return {
  {
    ":BridleCommands offers the project's prompt command with its description and hint, and sends it",
    function()
      local t = H.tmp()
      vim.fn.mkdir(t.ws .. "/.bridle/commands", "p")
      vim.fn.writefile({
        "---",
        "description: Review a file",
        "argument-hint: a path",
        "---",
        "say hello about $ARGUMENTS",
      }, t.ws .. "/.bridle/commands/review.md")
      local b = H.plugin(t)
      vim.cmd("Bridle")
      H.wait(function()
        for _, c in ipairs(b.state.commands) do
          if c.name == "review" then
            return true
          end
        end
      end, 10000, "the review command offered (available_commands_update)")
      H.eq({ "/review" }, vim.fn.getcompletion("Bridle /rev", "cmdline"), ":Bridle completes /review")

      local labels, done, reason
      local select, input = vim.ui.select, vim.ui.input
      vim.ui.select = function(items, opts, on_choice)
        labels = vim.tbl_map(opts.format_item, items)
        for _, c in ipairs(items) do
          if c.name == "review" then
            return on_choice(c)
          end
        end
        on_choice(nil)
      end
      vim.ui.input = function(opts, on_confirm)
        H.ok(opts.prompt:find("a path", 1, true), "the argument is asked for with its hint: " .. opts.prompt)
        on_confirm("main.go")
      end
      local ok, e = pcall(b.pick_command, function(r)
        done, reason = true, r
      end)
      vim.ui.select, vim.ui.input = select, input
      if not ok then
        error(e, 0)
      end
      H.ok(vim.tbl_contains(labels, "/review  Review a file  <a path>"), "the picker's labels: " .. vim.inspect(labels))
      H.wait(function()
        return done
      end, 15000, "the command's turn")
      H.eq("end_turn", reason, "stop reason")
      local log = H.bridle_log(t, b.state.session_id)
      H.ok(log:find("say hello about main.go", 1, true), "the log records the expansion:\n" .. log)
      H.ok(log:find("review", 1, true), "the log names the command:\n" .. log)
    end,
  },
}
