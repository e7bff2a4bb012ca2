-- Approvals: a session/request_permission shaped as bridle sends it
-- (session/tools.go: four options, a diff), answered through a stubbed
-- vim.ui.select after a delay, as a person would.
local H = require("helpers")
local api = vim.api

local function request(session_id, path)
  return {
    sessionId = session_id,
    toolCall = {
      toolCallId = "call-7-0",
      title = "Write notes.txt",
      kind = "edit",
      status = "pending",
      rawInput = { path = "notes.txt", content = "edited\n" },
      content = { { type = "diff", path = path, oldText = "hello\n", newText = "edited\n" } },
    },
    options = {
      { optionId = "allow_once", name = "Allow once", kind = "allow_once" },
      { optionId = "allow_always", name = "Allow write_file for this session", kind = "allow_always" },
      { optionId = "reject_once", name = "Reject", kind = "reject_once" },
      { optionId = "reject_always", name = "Reject write_file for this session", kind = "reject_always" },
    },
  }
end

--- Replaces vim.ui.select; `choose(items)` picks (nil dismisses) after `delay` ms.
local function stub_select(choose, delay)
  local seen = {}
  local orig = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    seen.items, seen.opts = items, opts
    seen.labels = vim.tbl_map(opts.format_item, items)
    vim.defer_fn(function()
      on_choice(choose(items))
    end, delay or 50)
  end
  return seen, function()
    vim.ui.select = orig
  end
end

local function setup()
  local b, t = H.plugin()
  vim.cmd("Bridle")
  H.wait(function()
    return b.state.session_id
  end, 10000, "a session")
  return b, t
end

return {
  {
    "an approval is asked through vim.ui.select and answered asynchronously",
    function()
      local b, t = setup()
      local seen, restore = stub_select(function(items)
        return items[1]
      end, 200)
      local reply
      local tabs_before = #api.nvim_list_tabpages()
      b.handle_permission(request(b.state.session_id, t.ws .. "/notes.txt"), function(r)
        reply = r
      end)
      -- While the user decides: the question is on screen and the diff is open.
      H.eq(nil, reply, "no answer yet")
      H.eq({ "Allow once", "Allow write_file for this session", "Reject", "Reject write_file for this session" }, seen.labels, "options offered")
      H.eq("bridle: Write notes.txt", seen.opts.prompt, "prompt")
      H.ok(H.buf_text(b.state.chat.buf):find("⚠ Approval: Write notes.txt — waiting: Allow once / ", 1, true), H.buf_text(b.state.chat.buf))
      H.eq(tabs_before + 1, #api.nvim_list_tabpages(), "a diff tab")
      local tab = api.nvim_list_tabpages()[#api.nvim_list_tabpages()]
      local wins = api.nvim_tabpage_list_wins(tab)
      H.eq(2, #wins, "two diff windows")
      local texts = {}
      for _, w in ipairs(wins) do
        H.ok(vim.wo[w].diff, "diff mode on")
        texts[#texts + 1] = H.buf_text(api.nvim_win_get_buf(w))
      end
      table.sort(texts)
      H.eq({ "edited\n", "hello\n" }, texts, "before and after")
      H.wait(function()
        return reply
      end, 5000, "the answer")
      H.eq({ outcome = { outcome = "selected", optionId = "allow_once" } }, reply, "reply")
      H.eq(reply, vim.json.decode(vim.json.encode(reply)), "survives JSON encoding")
      H.ok(H.buf_text(b.state.chat.buf):find("⚠ Approval: Write notes.txt — answered: Allow once", 1, true), "the chat records the answer")
      H.eq(tabs_before, #api.nvim_list_tabpages(), "the diff tab closes after the answer")
      H.eq(0, #b.state.pending, "nothing pending")
      restore()
      -- :BridleDiff shows the edit again, on demand.
      vim.cmd("BridleDiff")
      H.eq(tabs_before + 1, #api.nvim_list_tabpages(), ":BridleDiff opens a tab")
      local shown = {}
      for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
        H.ok(vim.wo[w].diff, "diff mode on")
        shown[#shown + 1] = H.buf_text(api.nvim_win_get_buf(w))
      end
      table.sort(shown)
      H.eq({ "edited\n", "hello\n" }, shown, ":BridleDiff before and after")
      vim.cmd("tabclose")
    end,
  },
  {
    "dismissing the question rejects once",
    function()
      local b, t = setup()
      local _, restore = stub_select(function()
        return nil
      end)
      local reply
      b.handle_permission(request(b.state.session_id, t.ws .. "/notes.txt"), function(r)
        reply = r
      end)
      H.wait(function()
        return reply
      end, 5000, "the answer")
      H.eq({ outcome = { outcome = "selected", optionId = "reject_once" } }, reply, "reply")
      restore()
    end,
  },
  {
    ":BridleStop answers a pending approval as cancelled",
    function()
      local b, t = setup()
      local _, restore = stub_select(function(items)
        return items[1]
      end, 500)
      local reply
      b.handle_permission(request(b.state.session_id, t.ws .. "/notes.txt"), function(r)
        reply = r
      end)
      vim.cmd("BridleStop")
      H.eq({ outcome = { outcome = "cancelled" } }, reply, "reply")
      H.ok(H.buf_text(b.state.chat.buf):find("— cancelled", 1, true), "the chat shows it")
      -- The user's late choice changes nothing.
      vim.wait(700, function()
        return false
      end)
      H.eq({ outcome = { outcome = "cancelled" } }, reply, "still cancelled")
      restore()
    end,
  },
}
