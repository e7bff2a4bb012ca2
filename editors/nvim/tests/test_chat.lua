-- Headless tests against the real bridle binary and the scripted provider.
local H = require("helpers")
local api = vim.api

return {
  {
    "protocol round trip: initialize, session/new, session/list",
    function()
      local b, t = H.plugin()
      local connected
      b.connect(function(ok)
        connected = ok
      end)
      H.wait(function()
        return connected ~= nil
      end, 10000, "initialize")
      H.ok(connected, "connected")
      local info = b.state.info
      H.eq(1, info.protocolVersion, "protocolVersion")
      H.eq("bridle", info.agentInfo.name, "agentInfo.name")
      H.ok(info.agentCapabilities.loadSession, "loadSession advertised")
      local r, e = b.state.rpc:request_sync("session/new", { cwd = t.ws, mcpServers = {} })
      H.ok(r, "session/new answered: " .. vim.inspect(e))
      local ids = {}
      for _, m in ipairs(r.modes.availableModes) do
        ids[#ids + 1] = m.id
      end
      H.eq({ "read-only", "ask", "auto-edit", "full-auto" }, ids, "modes")
      local l = b.state.rpc:request_sync("session/list", { cwd = t.ws })
      H.ok(vim.tbl_contains(vim.tbl_map(function(s)
        return s.sessionId
      end, l.sessions), r.sessionId), "session/list has the new session")
      -- An unknown method gets a JSON-RPC error, not a hang.
      local _, err = b.state.rpc:request_sync("session/nope", {})
      H.eq(-32601, err and err.code, "error code for an unknown method")
    end,
  },
  {
    "a missing binary reports how to fix it",
    function()
      local b = H.plugin(nil, { cmd = { "/nonexistent/bridle" } })
      local notified = {}
      local orig = vim.notify
      vim.notify = function(msg, level)
        notified[#notified + 1] = { msg = msg, level = level }
      end
      local result
      b.connect(function(ok)
        result = ok
      end)
      vim.notify = orig
      H.eq(false, result, "connect result")
      H.ok(notified[1], "a notification")
      H.ok(notified[1].msg:find('"/nonexistent/bridle" was not found', 1, true), notified[1].msg)
      H.ok(notified[1].msg:find("cmd = {", 1, true), "names the setup option: " .. notified[1].msg)
      H.eq(vim.log.levels.ERROR, notified[1].level, "level")
    end,
  },
  {
    ":Bridle opens the chat; an answer streams into the markdown buffer",
    function()
      local b = H.plugin()
      vim.cmd("Bridle")
      H.wait(function()
        return b.state.session_id
      end, 10000, "a session")
      local chat = b.state.chat
      H.eq("markdown", vim.bo[chat.buf].filetype, "filetype")
      H.eq("prompt", vim.bo[b.state.input].buftype, "input buftype")
      -- Count buffer changes while the answer streams.
      local changes = 0
      api.nvim_buf_attach(chat.buf, false, {
        on_lines = function()
          changes = changes + 1
        end,
      })
      H.eq("end_turn", H.turn(b, "hello there"), "stop reason")
      local text = H.buf_text(chat.buf)
      H.ok(text:find("## You\nhello there\n", 1, true), text)
      H.ok(text:find("Hello from **bridle**. This answer streams in word by word.", 1, true), text)
      H.ok(changes >= 4, "the answer arrived in pieces (" .. changes .. " buffer changes)")
      H.eq(false, vim.bo[chat.buf].modifiable, "the transcript is read-only")
    end,
  },
  {
    "typing in the prompt buffer and pressing Enter sends",
    function()
      local b = H.plugin()
      vim.cmd("Bridle")
      H.wait(function()
        return b.state.session_id
      end, 10000, "a session")
      api.nvim_set_current_win(vim.fn.bufwinid(b.state.input))
      api.nvim_feedkeys(api.nvim_replace_termcodes("ihello from keys<CR>", true, false, true), "xt", false)
      H.wait(function()
        return H.agent_text(b):find("word by word.", 1, true) and not b.state.running
      end, 10000, "the answer")
      H.ok(H.buf_text(b.state.chat.buf):find("## You\nhello from keys", 1, true), "the prompt is in the transcript")
    end,
  },
  {
    "tool calls render as folded blocks with their status",
    function()
      local b = H.plugin()
      vim.cmd("Bridle")
      H.eq("end_turn", H.turn(b, "please read the notes"), "stop reason")
      local chat = b.state.chat
      local lines = api.nvim_buf_get_lines(chat.buf, 0, -1, false)
      local header
      for i, l in ipairs(lines) do
        if l:match("^▸ %[read%]") then
          header = i
        end
      end
      H.ok(header, "a tool header: " .. table.concat(lines, "\n"))
      H.ok(lines[header]:find("· done", 1, true), lines[header])
      H.ok(lines[header + 1]:match("^  │ "), "detail lines follow: " .. tostring(lines[header + 1]))
      local win = vim.fn.bufwinid(chat.buf)
      local closed = api.nvim_win_call(win, function()
        return vim.fn.foldclosed(header)
      end)
      H.eq(header, closed, "the block is folded at its header")
      H.ok(H.agent_text(b):find("notes.txt says hello.", 1, true), "the answer after the tool")
    end,
  },
  {
    "a command in the background keeps its card running, its output streamed, until it ends",
    function()
      local b = H.plugin()
      vim.cmd("Bridle")
      H.wait(function()
        return b.state.session_id
      end, 10000, "a session")
      b.state.rpc:request_sync("session/set_mode", { sessionId = b.state.session_id, modeId = "full-auto" })
      H.eq("end_turn", H.turn(b, "bg server go"), "stop reason")
      local card
      for _, it in ipairs(b.state.chat.items) do
        if it.kind == "tool" and it.title == "a server (in the background)" then
          card = it
        end
      end
      H.ok(card, "the command's card")
      H.eq("in_progress", card.status, "the card stays live after the turn")
      local text = H.buf_text(b.state.chat.buf)
      H.ok(text:find("a server (in the background) · running", 1, true), text)
      H.wait(function()
        return (card.output or ""):find("bg-ready", 1, true)
      end, 10000, "the command's output streamed into its card")
      H.eq("end_turn", H.turn(b, "bg finish go"), "stop reason")
      H.wait(function()
        return card.status == "completed"
      end, 10000, "the card completed when the command ended")
      H.ok((card.output or ""):find("bg-got bye", 1, true), "its last output: " .. tostring(card.output))
      H.ok(H.buf_text(b.state.chat.buf):find("a server (in the background) · done", 1, true), "shown done")
    end,
  },
  {
    ":BridleStop during a slow stream ends the turn as cancelled",
    function()
      local b = H.plugin()
      vim.cmd("Bridle")
      H.wait(function()
        return b.state.session_id
      end, 10000, "a session")
      local reason
      b.send("a slow answer please", function(r)
        reason = r
      end)
      H.wait(function()
        return H.agent_text(b) ~= ""
      end, 10000, "the first chunk")
      vim.cmd("BridleStop")
      H.wait(function()
        return reason
      end, 5000, "the cancelled turn")
      H.eq("cancelled", reason, "stop reason")
      H.ok(not H.agent_text(b):find("longer still", 1, true), "the stream was cut short")
      H.ok(H.buf_text(b.state.chat.buf):find("_Stopped: the turn was cancelled._", 1, true), "a notice")
      H.eq(false, b.state.running, "not running")
      -- The buffer keymap cancels as well.
      b.send("another slow answer", function(r)
        reason = r
      end)
      reason = nil
      H.wait(function()
        local items = b.state.chat.items
        local last = items[#items]
        return b.state.running and last.kind == "agent" and last.text:find("slow on purpose", 1, true)
      end, 10000, "the second stream")
      api.nvim_set_current_win(vim.fn.bufwinid(b.state.chat.buf))
      vim.cmd("stopinsert")
      api.nvim_feedkeys(api.nvim_replace_termcodes("<C-c>", true, false, true), "xt", false)
      H.wait(function()
        return reason
      end, 5000, "the keymap's cancel")
      H.eq("cancelled", reason, "stop reason from <C-c>")
    end,
  },
  {
    ":BridleSessions resumes a session in a new process and replays it",
    function()
      local b, t = H.plugin()
      vim.cmd("Bridle")
      H.turn(b, "hello before restart")
      local id = b.state.session_id
      local before = H.agent_text(b)
      -- A new Neovim session: plugin reloaded, a new bridle process.
      b = H.plugin(t)
      local offered
      local orig = vim.ui.select
      vim.ui.select = function(items, opts, on_choice)
        offered = vim.tbl_map(opts.format_item, items)
        for _, s in ipairs(items) do
          if s.sessionId == id then
            vim.defer_fn(function()
              on_choice(s)
            end, 10)
            return
          end
        end
        on_choice(nil)
      end
      vim.cmd("BridleSessions")
      H.wait(function()
        return b.state.session_id == id and H.agent_text(b) ~= ""
      end, 10000, "the replay")
      vim.ui.select = orig
      H.ok(offered and offered[1]:find(id, 1, true), "sessions offered: " .. vim.inspect(offered))
      H.eq(before, H.agent_text(b), "replayed answer")
      H.ok(H.buf_text(b.state.chat.buf):find("## You\nhello before restart", 1, true), "replayed prompt")
      -- And the session goes on.
      H.eq("end_turn", H.turn(b, "hello after restart"), "a new turn")
    end,
  },
  {
    ":BridleMode sets the mode through session/set_mode",
    function()
      local b, t = H.plugin()
      vim.cmd("Bridle")
      H.wait(function()
        return b.state.modes
      end, 10000, "modes")
      H.eq("ask", b.state.modes.currentModeId, "default mode")
      local done
      b.set_mode("read-only", function(ok)
        done = ok
      end)
      H.wait(function()
        return done ~= nil
      end, 5000, "set_mode")
      H.eq("read-only", b.state.modes.currentModeId, "mode after :BridleMode")
      local orig = vim.ui.select
      vim.ui.select = function(items, _, on_choice)
        on_choice(items[3])
      end
      vim.cmd("BridleMode")
      H.wait(function()
        return b.state.modes.currentModeId == "auto-edit"
      end, 5000, "mode from the picker")
      vim.ui.select = orig
      local log = H.bridle_log(t, b.state.session_id)
      H.ok(log:find("mode_changed", 1, true) and log:find("auto-edit", 1, true), log)
      local fails = vim.tbl_map(function(c)
        return c
      end, vim.fn.getcompletion("BridleMode ", "cmdline"))
      H.eq({ "read-only", "ask", "auto-edit", "full-auto" }, fails, "completion")
    end,
  },
  {
    "/constraint and /decision are pinned; :BridleLog shows the event log",
    function()
      local b = H.plugin()
      vim.cmd("Bridle")
      H.wait(function()
        return #b.state.commands > 0
      end, 10000, "available commands")
      local names = vim.tbl_map(function(c)
        return c.name
      end, b.state.commands)
      H.ok(vim.tbl_contains(names, "constraint") and vim.tbl_contains(names, "decision"), vim.inspect(names))
      H.turn(b, "/constraint never touch the tests folder")
      H.turn(b, "/decision use tabs for indentation")
      vim.cmd("BridleLog")
      local text = H.buf_text(0)
      H.ok(text:find("constraint_pinned", 1, true), text)
      H.ok(text:find("never touch the tests folder", 1, true), text)
      H.ok(text:find("decision_recorded", 1, true), text)
    end,
  },
  {
    "statusline shows context use from usage_update",
    function()
      local b = H.plugin()
      H.eq("", b.statusline(), "before any usage")
      vim.cmd("Bridle")
      H.turn(b, "hello")
      H.wait(function()
        return b.statusline() ~= ""
      end, 5000, "a usage_update")
      H.ok(b.statusline():match("^ctx %d+%% · [%d%.]+[kM]?/[%d%.]+[kM]?$"), b.statusline())
    end,
  },
  {
    "token counts read like 950, 124k, 1.2M",
    function()
      local b = H.plugin()
      H.eq({ "950", "1k", "124k", "200k", "1M", "1.2M", "12M" }, vim.tbl_map(b.tokens, { 950, 1499, 124400, 200000, 1000000, 1200000, 12000000 }), "tokens")
      b.state.usage = { used = 124000, size = 200000 }
      H.eq("ctx 62% · 124k/200k", b.statusline(), "statusline")
    end,
  },
  {
    ":checkhealth bridle checks the binary, its version and bridle doctor",
    function()
      H.plugin()
      vim.cmd("silent checkhealth bridle")
      local text = H.buf_text(0)
      H.ok(text:find("bridle binary", 1, true), text)
      H.ok(text:find("using " .. H.bin .. " (from `cmd` in setup)", 1, true), text)
      H.ok(text:find("version: ", 1, true), text)
      H.ok(text:find("bridle doctor", 1, true), text)
      H.ok(not text:find("ERROR", 1, true), text)
      -- A missing binary is an error with the fix.
      H.plugin(nil, { cmd = { "/nonexistent/bridle" } })
      vim.cmd("silent checkhealth bridle")
      text = H.buf_text(0)
      H.ok(text:find("ERROR", 1, true) and text:find("go install", 1, true), text)
    end,
  },
  {
    "when bridle dies, the next prompt restarts it and continues the same session",
    function()
      local b = H.plugin()
      vim.cmd("Bridle")
      H.turn(b, "hello before the crash")
      local id, pid = b.state.session_id, b.state.rpc.pid
      local uv = vim.uv or vim.loop
      uv.kill(pid, 9)
      H.wait(function()
        return b.state.rpc == nil
      end, 5000, "the exit to be noticed")
      H.eq("end_turn", H.turn(b, "hello after the crash"), "the next turn")
      H.eq(id, b.state.session_id, "the same session")
      H.ok(b.state.rpc.pid ~= pid, "a new process")
      local text = H.buf_text(b.state.chat.buf)
      H.ok(text:find("## You\nhello before the crash", 1, true), text)
      H.ok(text:find("restarted", 1, true), text)
      local _, n = H.agent_text(b):gsub("word by word%.", "")
      H.eq(2, n, "both answers")
    end,
  },
  {
    "checkhealth reads bridle doctor's findings, as JSON or as text",
    function()
      H.plugin()
      local health = require("bridle.health")
      local got = {}
      local r = {}
      for _, k in ipairs({ "ok", "warn", "error", "info" }) do
        r[k] = function(msg, advice)
          got[#got + 1] = k .. ": " .. msg .. (advice and (" | " .. table.concat(advice, "; ")) or "")
        end
      end
      -- The text form (sandbox/box Report.String) and the JSON form.
      health.report_doctor(r, 0, table.concat({
        "ok       landlock           ABI 3",
        "MISSING  netns              operation not permitted",
        "                            without it: commands keep the network",
      }, "\n"))
      health.report_doctor(r, 0, vim.json.encode({ layers = {
        { name = "landlock", ok = true, detail = "ABI 3" },
        { name = "netns", ok = false, detail = "EPERM", without = "commands keep the network" },
      } }))
      health.report_doctor(r, 2, 'bridle: unknown command "doctor"; run `bridle help`')
      H.eq({
        "ok: ok       landlock           ABI 3",
        "warn: MISSING  netns              operation not permitted",
        "info: without it: commands keep the network",
        "ok: landlock: ABI 3",
        "warn: netns: EPERM (missing) | without it: commands keep the network",
        "warn: this bridle has no `doctor` command | Update bridle to see which sandbox layers this machine supports.",
      }, got, "findings")
    end,
  },
  {
    ":BridleNew starts a fresh session and an empty chat",
    function()
      local b = H.plugin()
      vim.cmd("Bridle")
      H.turn(b, "hello first")
      local first = b.state.session_id
      vim.cmd("BridleNew")
      H.wait(function()
        return b.state.session_id and b.state.session_id ~= first
      end, 10000, "a new session")
      H.eq("", H.buf_text(b.state.chat.buf), "empty chat")
      H.eq("end_turn", H.turn(b, "hello second"), "the new session works")
    end,
  },
  {
    "with no model configured, the prompt's error says what to set",
    function()
      local t = H.tmp()
      local b = H.plugin(t, { env = { BRIDLE_MODEL = "", ANTHROPIC_API_KEY = "", ANTHROPIC_AUTH_TOKEN = "", OPENAI_API_KEY = "", XDG_CONFIG_HOME = t.dir .. "/config" } })
      local notified = {}
      local orig = vim.notify
      vim.notify = function(msg, level)
        notified[#notified + 1] = { msg = msg, level = level }
      end
      vim.cmd("Bridle")
      local ok, reason = pcall(H.turn, b, "hello")
      vim.notify = orig
      H.ok(ok, tostring(reason))
      H.eq(nil, reason, "no stop reason: the prompt failed")
      local text = H.buf_text(b.state.chat.buf)
      H.ok(text:find("ANTHROPIC_API_KEY", 1, true), text)
      H.ok(notified[1] and notified[1].msg:find("setup{ env", 1, true), vim.inspect(notified))
    end,
  },
}
