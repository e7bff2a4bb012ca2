-- Approvals end to end: the scripted model calls bridle's real write_file in
-- "ask" mode; bridle asks over the wire (session/request_permission); the
-- answer, picked through a stubbed vim.ui.select some time later, decides
-- whether the file on disk changes.
local H = require("helpers")

local function read(path)
  return table.concat(vim.fn.readfile(path, "b"), "\n")
end

--- Answers bridle's question with the option of `kind` after `delay` ms.
local function answer_with(kind, delay)
  local asked = {}
  local orig = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    asked[#asked + 1] = { labels = vim.tbl_map(opts.format_item, items), kinds = vim.tbl_map(function(o)
      return o.kind
    end, items) }
    vim.defer_fn(function()
      for _, o in ipairs(items) do
        if o.kind == kind then
          return on_choice(o)
        end
      end
      on_choice(nil)
    end, delay or 100)
  end
  return asked, function()
    vim.ui.select = orig
  end
end

return {
  {
    "allowing an edit once writes the file, after a diff preview",
    function()
      local b, t = H.plugin()
      vim.cmd("Bridle")
      local asked, restore = answer_with("allow_once", 300)
      local tabs
      local done, reason = false, nil
      b.send("please edit notes.txt", function(r)
        done, reason = true, r
      end)
      H.wait(function()
        return #asked > 0 or done
      end, 10000, "the question")
      H.ok(#asked > 0, "the turn ended without asking: " .. H.buf_text(b.state.chat.buf))
      tabs = #vim.api.nvim_list_tabpages()
      H.eq({ "allow_once", "allow_always", "reject_once", "reject_always" }, asked[1].kinds, "option kinds")
      H.eq("Allow once", asked[1].labels[1], "first label")
      H.eq(2, tabs, "a diff tab while the question is open")
      H.eq("hello\n", read(t.ws .. "/notes.txt"), "not written before the answer")
      H.wait(function()
        return done
      end, 10000, "the turn")
      restore()
      H.eq("end_turn", reason, "stop reason")
      H.eq("edited by bridle\n", read(t.ws .. "/notes.txt"), "written")
      local text = H.buf_text(b.state.chat.buf)
      H.ok(text:find("— answered: Allow once", 1, true), text)
      H.ok(text:find("▸ [edit] Write notes.txt · done", 1, true), text)
      H.eq(1, #vim.api.nvim_list_tabpages(), "the diff tab closed")
    end,
  },
  {
    "rejecting an edit leaves the file alone",
    function()
      local b, t = H.plugin()
      vim.cmd("Bridle")
      local _, restore = answer_with("reject_once")
      H.eq("end_turn", H.turn(b, "please edit notes.txt"), "stop reason")
      restore()
      H.eq("hello\n", read(t.ws .. "/notes.txt"), "unchanged")
      H.ok(H.buf_text(b.state.chat.buf):find("▸ [edit] Write notes.txt · failed", 1, true), H.buf_text(b.state.chat.buf))
    end,
  },
  {
    "allow for this session is remembered: the next edit does not ask",
    function()
      local b, t = H.plugin()
      vim.cmd("Bridle")
      local asked, restore = answer_with("allow_always")
      H.turn(b, "please edit notes.txt")
      -- No change between the turns: bridle refuses an edit over text the
      -- model has not seen (docs/sandbox.md), which is not what this tests.
      H.eq("end_turn", H.turn(b, "edit it once more"), "stop reason")
      restore()
      H.eq(1, #asked, "asked once")
      H.eq("edited by bridle\n", read(t.ws .. "/notes.txt"), "written")
      local _, done = H.buf_text(b.state.chat.buf):gsub("▸ %[edit%] Write notes.txt · done", "")
      H.eq(2, done, "both edits done")
    end,
  },
}
