-- The chat buffer: a markdown transcript that ACP session/update
-- notifications are folded into, item by item. Each item owns a range of
-- lines, so a streamed answer rewrites only its own lines. Tool calls are
-- folded blocks (foldexpr on their "│" lines) with their status in the header.

local M = {}

local api = vim.api

---@class bridle.Chat
---@field buf integer
---@field items table[]
local Chat = {}
Chat.__index = Chat

local function nn(v)
  if v == vim.NIL then
    return nil
  end
  return v
end
M.nn = nn

-- A plan entry's checkbox: done, in progress, to do.
local plan_mark = { completed = "x", in_progress = ">", pending = " " }
M.plan_mark = plan_mark

local status_label = { pending = "pending", in_progress = "running", completed = "done", failed = "failed" }

local function split(text)
  return vim.split(text, "\n", { plain = true })
end

--- Last n lines of text, noting what was cut.
local function tail(text, n)
  local lines = split((text:gsub("%s+$", "")))
  if #lines <= n then
    return lines
  end
  local out = { ("… (%d earlier lines)"):format(#lines - n) }
  for i = #lines - n + 1, #lines do
    out[#out + 1] = lines[i]
  end
  return out
end

local function content_text(c)
  c = nn(c)
  if not c then
    return ""
  end
  if c.type == "text" then
    return c.text or ""
  elseif c.type == "resource_link" then
    return ("[%s](%s)"):format(c.name or "", c.uri or "")
  elseif c.type == "resource" and c.resource then
    return c.resource.text or c.resource.uri or ""
  end
  return "(" .. tostring(c.type) .. ")"
end

--- Text and diffs of a tool call's content list.
local function tool_content(content)
  local texts, diffs = {}, {}
  for _, c in ipairs(nn(content) or {}) do
    if c.type == "content" then
      local t = content_text(c.content)
      -- Command output arrives fenced as markdown; the block shows it as is.
      t = t:gsub("^```[%w-]*\n", ""):gsub("\n?```%s*$", "")
      texts[#texts + 1] = t
    elseif c.type == "diff" then
      diffs[#diffs + 1] = { path = c.path, oldText = nn(c.oldText), newText = c.newText }
    elseif c.type == "terminal" then
      texts[#texts + 1] = "(terminal " .. tostring(c.terminalId) .. ")"
    end
  end
  return (#texts > 0) and table.concat(texts, "\n") or nil, diffs
end
M.tool_content = tool_content

local function input_summary(raw)
  raw = nn(raw)
  if raw == nil then
    return nil, nil
  end
  if type(raw) == "table" and type(raw.command) == "string" then
    return raw.command, nil
  end
  local s = type(raw) == "string" and raw or vim.json.encode(raw)
  if #s > 200 then
    s = s:sub(1, 200) .. "…"
  end
  return nil, s
end

function M.new(buf)
  return setmetatable({ buf = buf, items = {}, seq = 0 }, Chat)
end

--- The lines an item shows.
function Chat:format(it)
  if it.kind == "user" then
    local out = { "## You" }
    vim.list_extend(out, split(it.text))
    out[#out + 1] = ""
    return out
  elseif it.kind == "agent" then
    local out = split(it.text)
    out[#out + 1] = ""
    return out
  elseif it.kind == "thought" then
    local out = {}
    for _, l in ipairs(split(it.text)) do
      out[#out + 1] = "> " .. l
    end
    out[#out + 1] = ""
    return out
  elseif it.kind == "tool" then
    local out = {
      ("▸ [%s] %s · %s"):format(it.tool_kind or "other", it.title or it.id, status_label[it.status] or it.status or "pending"),
    }
    if it.command then
      out[#out + 1] = "  │ $ " .. it.command
    elseif it.input then
      out[#out + 1] = "  │ " .. it.input
    end
    for _, loc in ipairs(it.locations or {}) do
      out[#out + 1] = "  │ @ " .. loc
    end
    for _, d in ipairs(it.diffs or {}) do
      out[#out + 1] = "  │ diff: " .. d.path .. "  (:BridleDiff)"
    end
    if it.output then
      for _, l in ipairs(tail(it.output, 12)) do
        out[#out + 1] = "  │ " .. l
      end
    end
    out[#out + 1] = ""
    return out
  elseif it.kind == "permission" then
    local names = {}
    for _, o in ipairs(it.options) do
      names[#names + 1] = o.name
    end
    local answer = "waiting: " .. table.concat(names, " / ")
    if it.answer == "cancelled" then
      answer = "cancelled"
    elseif it.answer then
      for _, o in ipairs(it.options) do
        if o.optionId == it.answer then
          answer = "answered: " .. o.name
        end
      end
    end
    return { ("⚠ Approval: %s — %s"):format(it.title, answer), "" }
  elseif it.kind == "notice" then
    return { "_" .. it.text .. "_", "" }
  elseif it.kind == "plan" then
    if #it.entries == 0 then
      return {}
    end
    local done = 0
    local out = { "" }
    for _, e in ipairs(it.entries) do
      local mark = plan_mark[e.status] or " "
      if e.status == "completed" then
        done = done + 1
      end
      local text = table.concat(split(tostring(nn(e.content) or "")), " ")
      out[#out + 1] = ("- [%s] %s%s"):format(mark, text, e.priority == "high" and " (high)" or "")
    end
    out[1] = ("**Plan** · %d/%d done"):format(done, #it.entries)
    out[#out + 1] = ""
    return out
  end
  return {}
end

--- Runs fn with a window showing the chat current, when there is one:
--- Neovim 0.7 updates the folds of the current window only.
function Chat:in_window(fn)
  for _, win in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_buf(win) == self.buf then
      return api.nvim_win_call(win, fn)
    end
  end
  return fn()
end

--- Writes an item's lines in place (or at the end), shifting later items.
function Chat:render(it)
  if not api.nvim_buf_is_valid(self.buf) then
    return
  end
  self:in_window(function()
    self:write(it)
  end)
  self:follow()
  if it.kind == "tool" and it.folded ~= it.status then
    -- Fold the block when it appears and when it finishes; a fold the user
    -- opened in between stays open until then.
    it.folded = it.status
    self:close_fold(it.start + 1)
  end
end

function Chat:write(it)
  local lines = self:format(it)
  vim.bo[self.buf].modifiable = true
  if it.start == nil then
    local n = api.nvim_buf_line_count(self.buf)
    local first_empty = n == 1 and api.nvim_buf_get_lines(self.buf, 0, 1, false)[1] == ""
    it.start = first_empty and 0 or n
    api.nvim_buf_set_lines(self.buf, it.start, first_empty and 1 or it.start, false, lines)
  else
    api.nvim_buf_set_lines(self.buf, it.start, it.start + it.count, false, lines)
    local delta = #lines - it.count
    if delta ~= 0 then
      local after = false
      for _, o in ipairs(self.items) do
        if after and o.start then
          o.start = o.start + delta
        end
        if o == it then
          after = true
        end
      end
    end
  end
  it.count = #lines
  vim.bo[self.buf].modifiable = false
end

--- Recomputes the folds so that the block at lnum is closed. Neovim does not
--- update expression folds while Insert mode is on (the user is typing in
--- the input buffer), so they are recomputed here; blocks the user opened
--- stay open.
function Chat:close_fold(lnum)
  for _, win in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_buf(win) == self.buf and vim.wo[win].foldmethod == "expr" then
      api.nvim_win_call(win, function()
        local open = {}
        for _, o in ipairs(self.items) do
          if o.kind == "tool" and o.fold_known and o.start and vim.fn.foldclosed(o.start + 1) == -1 then
            open[#open + 1] = o
          end
        end
        vim.cmd("silent! normal! zx")
        for _, o in ipairs(self.items) do
          if o.kind == "tool" and o.start then
            o.fold_known = true
          end
        end
        for _, o in ipairs(open) do
          if o.start + 1 ~= lnum then
            vim.cmd("silent! " .. (o.start + 1) .. "foldopen")
          end
        end
        vim.cmd("silent! " .. lnum .. "foldclose")
      end)
    end
  end
end

--- Keeps windows showing the chat scrolled to the end, unless the cursor is there.
function Chat:follow()
  local last = api.nvim_buf_line_count(self.buf)
  for _, win in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_buf(win) == self.buf and win ~= api.nvim_get_current_win() then
      api.nvim_win_set_cursor(win, { last, 0 })
    end
  end
end

function Chat:add(it)
  self.seq = self.seq + 1
  it.id = it.id or ("i" .. self.seq)
  self.items[#self.items + 1] = it
  self:render(it)
  return it
end

function Chat:clear()
  self.items = {}
  self.plan = nil
  if api.nvim_buf_is_valid(self.buf) then
    vim.bo[self.buf].modifiable = true
    api.nvim_buf_set_lines(self.buf, 0, -1, false, {})
    vim.bo[self.buf].modifiable = false
  end
end

function Chat:find_tool(id)
  for _, it in ipairs(self.items) do
    if it.kind == "tool" and it.tool_call_id == id then
      return it
    end
  end
end

function Chat:add_user(text)
  return self:add({ kind = "user", text = text })
end

function Chat:add_notice(text)
  return self:add({ kind = "notice", text = text })
end

function Chat:add_permission(req)
  local tc = req.toolCall or {}
  local tool = self:find_tool(tc.toolCallId)
  local _, diffs = tool_content(tc.content)
  if #diffs == 0 and tool then
    diffs = tool.diffs
  end
  return self:add({
    kind = "permission",
    tool_call_id = tc.toolCallId,
    title = nn(tc.title) or (tool and tool.title) or tostring(tc.toolCallId),
    options = req.options or {},
    diffs = diffs,
  })
end

--- Folds one ACP SessionUpdate in. Returns the item it changed, if any.
function Chat:apply(u)
  local kind = u.sessionUpdate
  if kind == "user_message_chunk" or kind == "agent_message_chunk" or kind == "agent_thought_chunk" then
    local k = kind == "user_message_chunk" and "user" or kind == "agent_message_chunk" and "agent" or "thought"
    local text = content_text(u.content)
    local last = self.items[#self.items]
    local id = nn(u.messageId)
    -- Agent chunks continue the message before them; a user chunk is a new
    -- prompt (bridle replays each prompt whole) unless its messageId says otherwise.
    local continues = last and last.kind == k and last.message_id == id and (k ~= "user" or id ~= nil)
    if continues then
      last.text = last.text .. text
      self:render(last)
      return last
    end
    return self:add({ kind = k, text = text, message_id = nn(u.messageId) })
  elseif kind == "plan" then
    -- Each update is the whole plan: one checklist, rewritten in place.
    local entries = {}
    for _, e in ipairs(nn(u.entries) or {}) do
      entries[#entries + 1] = { content = nn(e.content), status = nn(e.status), priority = nn(e.priority) }
    end
    if self.plan then
      self.plan.entries = entries
      self:render(self.plan)
      return self.plan
    end
    self.plan = self:add({ kind = "plan", entries = entries })
    return self.plan
  elseif kind == "tool_call" or kind == "tool_call_update" then
    local it = self:find_tool(u.toolCallId)
    local fresh = not it
    it = it or { kind = "tool", tool_call_id = u.toolCallId, diffs = {}, locations = {}, status = "pending" }
    if nn(u.title) then
      it.title = u.title
    end
    if nn(u.kind) then
      it.tool_kind = u.kind
    end
    if nn(u.status) then
      it.status = u.status
    end
    if u.rawInput ~= nil then
      it.command, it.input = input_summary(u.rawInput)
    end
    if nn(u.content) then
      local out, diffs = tool_content(u.content)
      it.output = out
      if #diffs > 0 then
        it.diffs = diffs
      end
    end
    if nn(u.locations) then
      it.locations = {}
      for _, l in ipairs(u.locations) do
        it.locations[#it.locations + 1] = nn(l.line) and (l.path .. ":" .. l.line) or l.path
      end
    end
    if fresh then
      return self:add(it)
    end
    self:render(it)
    return it
  end
end

--- The buffer's fold expression: a tool block folds under its "▸" header.
M.foldexpr = [[getline(v:lnum)=~'^  │'?1:(getline(v:lnum)=~'^▸ '?'>1':0)]]
--- A folded block shows its header and how much is inside (the same on 0.7 and 0.10+).
M.foldtext = [[getline(v:foldstart).'  ['.(v:foldend-v:foldstart).' lines]']]

return M
