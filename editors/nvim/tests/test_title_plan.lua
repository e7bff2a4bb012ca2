-- Session titles (session_info_update) and the plan checklist.
local H = require("helpers")
local api = vim.api

local function chat_name(b)
  return api.nvim_buf_get_name(b.state.chat.buf)
end

--- Runs fn with vim.ui.select stubbed: returns the labels offered; pick(items)
--- chooses one (or nil).
local function offered_by(fn, pick)
  local labels
  local orig = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    labels = vim.tbl_map(opts.format_item, items)
    local choice = pick and pick(items) or nil
    vim.defer_fn(function()
      on_choice(choice)
    end, 1)
  end
  local ok, e = pcall(fn)
  H.wait(function()
    return labels
  end, 10000, "the sessions picker")
  vim.ui.select = orig
  if not ok then
    error(e, 0)
  end
  return labels
end

local function plan_lines(buf)
  local out, on = {}, false
  for _, l in ipairs(api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if l:match("^%*%*Plan%*%*") then
      on = true
      out = { l }
    elseif on and l:match("^%- %[") then
      out[#out + 1] = l
    elseif on then
      on = false
    end
  end
  return out
end

local function count(text, pat)
  local n = 0
  for _ in text:gmatch(pat) do
    n = n + 1
  end
  return n
end

return {
  {
    "the first prompt's title names the chat buffer and :BridleSessions lists it",
    function()
      local b, t = H.plugin()
      vim.cmd("Bridle")
      H.wait(function()
        return b.state.session_id
      end, 10000, "a session")
      H.eq("bridle://chat", chat_name(b), "name before the first prompt")
      H.eq("end_turn", H.turn(b, "hello, name this session"), "stop reason")
      H.wait(function()
        return chat_name(b) == "bridle://chat/hello, name this session"
      end, 5000, "the title in the buffer name (got " .. chat_name(b) .. ")")
      H.eq("hello, name this session", b.state.title, "state.title")
      local names = {}
      for _, buf in ipairs(api.nvim_list_bufs()) do
        local n = api.nvim_buf_get_name(buf)
        if n:match("^bridle://chat") then
          names[#names + 1] = n
        end
      end
      H.eq({ "bridle://chat/hello, name this session" }, names, "no leftover buffer under the old name")
      local id = b.state.session_id
      local labels = offered_by(function()
        vim.cmd("BridleSessions")
      end)
      H.eq(1, #labels, "one session: " .. vim.inspect(labels))
      H.ok(labels[1]:find("^hello, name this session  ") and labels[1]:find(id, 1, true), labels[1])
      H.ok(labels[1]:find("(current)", 1, true), "the open session is marked: " .. labels[1])
      -- A new session: untitled until its first prompt.
      local fresh
      b.new_session(function(ok)
        fresh = ok
      end)
      H.wait(function()
        return fresh ~= nil
      end, 10000, "the new session")
      H.eq("bridle://chat", chat_name(b), "a new session's chat is untitled")
      labels = offered_by(function()
        vim.cmd("BridleSessions")
      end)
      local untitled = vim.tbl_filter(function(l)
        return l:find("^%(untitled%)") ~= nil
      end, labels)
      H.eq(1, #untitled, "the new session is (untitled): " .. vim.inspect(labels))
      -- Another Neovim: resuming by the picker brings the title back (from
      -- the list, then replayed by session/load).
      b = H.plugin(t)
      offered_by(function()
        vim.cmd("BridleSessions")
      end, function(items)
        for _, s in ipairs(items) do
          if s.sessionId == id then
            return s
          end
        end
      end)
      H.wait(function()
        -- The notice comes once session/load has answered.
        return b.state.session_id == id and H.buf_text(b.state.chat.buf):find("Resumed session " .. id, 1, true)
      end, 10000, "the replay")
      H.eq("bridle://chat/hello, name this session", chat_name(b), "the resumed chat's name")
    end,
  },
  {
    "the model's plan tool, called twice, shows one checklist updated in place (and replayed on resume)",
    function()
      local b, t = H.plugin(nil, { env = { BRIDLE_MODEL = "scripted/" .. H.root .. "/tests/scenarios/plan.json" } })
      vim.cmd("Bridle")
      H.wait(function()
        return b.state.session_id
      end, 10000, "a session")
      -- Record the checklist as each plan update arrives.
      local chat = b.state.chat
      local seen = {}
      chat.apply = function(self, u)
        local r = getmetatable(self).__index.apply(self, u)
        if u.sessionUpdate == "plan" then
          seen[#seen + 1] = plan_lines(self.buf)
        end
        return r
      end
      H.eq("end_turn", H.turn(b, "make a plan and start"), "stop reason")
      H.eq({
        {
          "**Plan** · 0/3 done",
          "- [>] Read the code",
          "- [ ] Fix the bug",
          "- [ ] Run the tests",
        },
        {
          "**Plan** · 1/3 done",
          "- [x] Read the code",
          "- [>] Fix the bug",
          "- [ ] Run the tests",
        },
      }, seen, "the checklist after each plan call")
      local text = H.buf_text(chat.buf)
      H.eq(1, count(text, "%*%*Plan%*%*"), "one checklist:\n" .. text)
      H.ok(text:find("The plan is under way.", 1, true), text)
      local id = b.state.session_id
      -- Another Neovim: session/load replays the plan into one checklist.
      b = H.plugin(t, { env = { BRIDLE_MODEL = "scripted/" .. H.root .. "/tests/scenarios/plan.json" } })
      local resumed
      b.resume(id, function(ok)
        resumed = ok
      end)
      H.wait(function()
        return resumed ~= nil
      end, 10000, "session/load")
      H.ok(resumed, "resumed")
      text = H.buf_text(b.state.chat.buf)
      H.eq(1, count(text, "%*%*Plan%*%*"), "one checklist after the replay:\n" .. text)
      H.eq(seen[2], plan_lines(b.state.chat.buf), "the latest plan")
    end,
  },
  {
    "a plan update renders a checklist, rewritten in place by the next one",
    function()
      -- The client side only: plan updates fed to the plugin's session/update
      -- handler between two real turns (the agent's plan tool has its own test).
      local b = H.plugin()
      vim.cmd("Bridle")
      H.eq("end_turn", H.turn(b, "hello before the plan"), "first turn")
      local sid = b.state.session_id
      local function plan(entries)
        b.on_update({ sessionId = sid, update = { sessionUpdate = "plan", entries = entries } })
      end
      plan({
        { content = "Read the code", priority = "medium", status = "in_progress" },
        { content = "Fix the bug", priority = "high", status = "pending" },
        { content = "Run the tests", priority = "low", status = "pending" },
      })
      local buf = b.state.chat.buf
      H.eq({
        "**Plan** · 0/3 done",
        "- [>] Read the code",
        "- [ ] Fix the bug (high)",
        "- [ ] Run the tests",
      }, plan_lines(buf), "the first plan")
      H.eq("end_turn", H.turn(b, "hello after the plan"), "second turn")
      local n = api.nvim_buf_line_count(buf)
      plan({
        { content = "Read the code", priority = "medium", status = "completed" },
        { content = "Fix the bug", priority = "high", status = "in_progress" },
        { content = "Run the tests", priority = "low", status = "pending" },
      })
      H.eq({
        "**Plan** · 1/3 done",
        "- [x] Read the code",
        "- [>] Fix the bug (high)",
        "- [ ] Run the tests",
      }, plan_lines(buf), "the updated plan")
      local text = H.buf_text(buf)
      H.eq(1, count(text, "%*%*Plan%*%*"), "one checklist, not two")
      H.eq(n, api.nvim_buf_line_count(buf), "rewritten in place: same length")
      local plan_at = text:find("**Plan**", 1, true)
      H.ok(plan_at > text:find("hello before the plan", 1, true) and plan_at < text:find("hello after the plan", 1, true), "the plan stays where it first appeared:\n" .. text)
      -- A longer plan shifts what follows; the answer after it is intact.
      plan({
        { content = "Read the code", status = "completed" },
        { content = "Fix the bug", status = "completed" },
        { content = "Run the tests", status = "completed" },
        { content = "Write it up", status = "pending" },
      })
      H.eq(5, #plan_lines(buf), "four entries")
      H.ok(H.buf_text(buf):find("## You\nhello after the plan\n\nHello from **bridle**.", 1, true), H.buf_text(buf))
    end,
  },
}
