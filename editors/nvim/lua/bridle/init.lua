-- bridle.nvim: chat with the bridle agent over ACP (JSON-RPC on stdio).
-- One bridle process per Neovim, one current session, one chat buffer.

local rpc = require("bridle.rpc")
local installer = require("bridle.install")
local fs = require("bridle.fs")
local chatmod = require("bridle.chat")
local rewindmod = require("bridle.rewind")
local nn = chatmod.nn

local api = vim.api

local M = {}

M.version = "0.1.0"

local defaults = {
  cmd = { "bridle" }, -- a plain "bridle": PATH, then the copy :BridleInstall put in install_dir
  install_dir = nil, -- where :BridleInstall installs; default stdpath('data')/bridle
  env = {}, -- extra environment for bridle (BRIDLE_MODEL, BRIDLE_DB, API keys…)
  cwd = nil, -- workspace root; default: the current directory
  width = 70, -- chat column width
  input_height = 3,
  diff_preview = true, -- open a diff tab when an edit asks for approval
  fs = true, -- let bridle read and write files through Neovim's buffers (fs/*)
  keymaps = { stop = "<C-c>", sessions = "gs", diff = "gd", mode = "gm" },
}

M.config = vim.deepcopy(defaults)

--- Everything about the current connection; tests read it.
M.state = {
  rpc = nil,
  info = nil,
  session_id = nil,
  modes = nil, -- { currentModeId, availableModes }
  commands = {},
  usage = nil, -- { used, size }
  title = nil, -- the current session's title (session_info_update, session/list)
  titles = {}, -- sessionId -> title, as learned from updates and lists
  running = false,
  pending = {}, -- approvals waiting for the user
  chat = nil,
  starting = nil, -- callbacks waiting for initialize
}
local S = M.state

local function notify(msg, level)
  vim.notify(msg, level or vim.log.levels.INFO, { title = "bridle" })
end

--- The binary to run and where it was found: { cmd, path, source }, source
--- one of "setup" (cmd names a binary), "PATH", "installed" (by
--- :BridleInstall) or "missing". See |bridle-install|.
function M.binary()
  return installer.resolve(M.config)
end

--- :BridleInstall {archive-or-URL}; cb(ok, result or message).
function M.install(src, cb, opts)
  installer.install(src, M.config, cb, opts)
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  if type(M.config.cmd) == "string" then
    M.config.cmd = { M.config.cmd }
  end
end

local function cwd()
  return M.config.cwd or vim.fn.getcwd()
end

-- ---- the chat window ----

local function chat_buf()
  if S.chat and api.nvim_buf_is_valid(S.chat.buf) then
    return S.chat
  end
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(buf, M.chat_name(S.title))
  vim.bo[buf].filetype = "markdown"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].modifiable = false
  S.chat = chatmod.new(buf)
  M.buffer_keymaps(buf)
  return S.chat
end

local function input_buf()
  if S.input and api.nvim_buf_is_valid(S.input) then
    return S.input
  end
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(buf, "bridle://input")
  vim.bo[buf].buftype = "prompt"
  vim.bo[buf].bufhidden = "hide"
  vim.fn.prompt_setprompt(buf, "> ")
  vim.fn.prompt_setcallback(buf, function(text)
    -- Keep the input area small: drop what was sent.
    vim.schedule(function()
      if api.nvim_buf_is_valid(buf) then
        api.nvim_buf_set_lines(buf, 0, -1, false, {})
      end
    end)
    M.send(text)
  end)
  vim.fn.prompt_setinterrupt(buf, function()
    M.stop()
  end)
  S.input = buf
  M.buffer_keymaps(buf)
  return buf
end

function M.buffer_keymaps(buf)
  local km = M.config.keymaps
  local function map(lhs, fn, desc)
    if lhs and lhs ~= "" then
      api.nvim_buf_set_keymap(buf, "n", lhs, "", { noremap = true, silent = true, callback = fn, desc = desc })
    end
  end
  map(km.stop, M.stop, "bridle: stop the turn")
  map(km.sessions, M.sessions, "bridle: resume a session")
  map(km.diff, M.diff, "bridle: diff of the edit under the cursor")
  map(km.mode, M.select_mode, "bridle: select mode")
end

local function find_win(buf)
  for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
    if api.nvim_win_get_buf(w) == buf then
      return w
    end
  end
end

--- Opens (or focuses) the chat column: transcript on top, input below.
function M.open()
  local chat = chat_buf()
  local input = input_buf()
  local cw = find_win(chat.buf)
  if not cw then
    vim.cmd("botright vsplit")
    cw = api.nvim_get_current_win()
    api.nvim_win_set_buf(cw, chat.buf)
    api.nvim_win_set_width(cw, M.config.width)
  end
  for opt, v in pairs({ wrap = true, linebreak = true, number = false, relativenumber = false, foldmethod = "expr", foldexpr = chatmod.foldexpr, foldtext = chatmod.foldtext, foldlevel = 0, foldenable = true }) do
    vim.wo[cw][opt] = v
  end
  local iw = find_win(input)
  if not iw then
    api.nvim_set_current_win(cw)
    vim.cmd("belowright split")
    iw = api.nvim_get_current_win()
    api.nvim_win_set_buf(iw, input)
    api.nvim_win_set_height(iw, M.config.input_height)
    vim.wo[iw].number = false
    vim.wo[iw].winfixheight = true
  end
  api.nvim_set_current_win(iw)
  vim.cmd("startinsert")
  M.ensure_session()
end

--- The chat buffer's name: "bridle://chat", or "bridle://chat/TITLE" once
--- the session has a title (0.7 has no winbar: the name is the header, and
--- the statusline's %f shows it).
function M.chat_name(title)
  return title and ("bridle://chat/" .. title) or "bridle://chat"
end

--- One line, no control characters, at most 80 characters; nil when empty.
local function clean_title(t)
  if type(t) ~= "string" then
    return nil
  end
  t = vim.trim((t:gsub("%c+", " "):gsub("%s+", " ")))
  if t == "" then
    return nil
  end
  if vim.fn.strchars(t) > 80 then
    t = vim.fn.strcharpart(t, 0, 79) .. "…"
  end
  return t
end

--- Renames buf; false if another buffer has the name. Neovim 0.7 keeps the
--- old name as a new unloaded buffer (like :file): wipe it, so that it
--- neither piles up nor blocks the name later.
local function rename(buf, name)
  local old = api.nvim_buf_get_name(buf)
  if not pcall(api.nvim_buf_set_name, buf, name) then
    return false
  end
  for _, left in ipairs(api.nvim_list_bufs()) do
    if left ~= buf and not api.nvim_buf_is_loaded(left) and api.nvim_buf_get_name(left) == old then
      pcall(api.nvim_buf_delete, left, { force = true })
    end
  end
  return true
end

--- Records session id's title; for the current session it also renames the
--- chat buffer.
function M.set_title(id, title)
  title = clean_title(title)
  if id then
    S.titles[id] = title
  end
  if id ~= S.session_id then
    return
  end
  S.title = title
  local chat = S.chat
  if chat and api.nvim_buf_is_valid(chat.buf) then
    local name = M.chat_name(title)
    if api.nvim_buf_get_name(chat.buf) ~= name and not rename(chat.buf, name) then
      -- Another buffer has that name already: tell them apart by the id.
      rename(chat.buf, name .. " (" .. tostring(id) .. ")")
    end
  end
  vim.cmd("redrawstatus!")
end

-- ---- connection and session ----

local function on_update(params)
  if params and params.sessionId ~= S.session_id and params.update and params.update.sessionUpdate == "session_info_update" then
    -- Another session's title (or this one's before session/new answers):
    -- remembered for the sessions list and for when it becomes current.
    if nn(params.update.title) then
      M.set_title(params.sessionId, params.update.title)
    end
  end
  if not params or params.sessionId ~= S.session_id then
    if S.early and params then
      S.early[#S.early + 1] = params
    end
    return
  end
  local u = params.update
  local k = u.sessionUpdate
  if k == "usage_update" then
    S.usage = { used = u.used, size = u.size }
    vim.cmd("redrawstatus!")
  elseif k == "current_mode_update" then
    if S.modes then
      S.modes.currentModeId = u.currentModeId
    end
  elseif k == "available_commands_update" then
    S.commands = u.availableCommands or {}
  elseif k == "session_info_update" then
    -- JSON null decodes to nil here, so an absent title and a cleared one
    -- look alike: keep the title unless a new one comes.
    if nn(u.title) then
      M.set_title(S.session_id, u.title)
    end
  else
    chat_buf():apply(u)
  end
end
M.on_update = on_update -- session/update notifications (tests feed it too)

local function answer(p, option_id)
  if p.done then
    return
  end
  p.done = true
  for i, q in ipairs(S.pending) do
    if q == p then
      table.remove(S.pending, i)
      break
    end
  end
  if option_id then
    p.reply({ outcome = { outcome = "selected", optionId = option_id } })
  else
    p.reply({ outcome = { outcome = "cancelled" } })
  end
  p.item.answer = option_id or "cancelled"
  chat_buf():render(p.item)
  if p.diff_tab and api.nvim_tabpage_is_valid(p.diff_tab) then
    local cur = api.nvim_get_current_tabpage()
    api.nvim_set_current_tabpage(p.diff_tab)
    vim.cmd("tabclose")
    if api.nvim_tabpage_is_valid(cur) then
      api.nvim_set_current_tabpage(cur)
    end
  end
end

--- Handles session/request_permission: shows it in the chat, asks through
--- vim.ui.select, and replies whenever the user chooses (asynchronously).
function M.handle_permission(params, reply)
  local item = chat_buf():add_permission(params)
  local p = { reply = reply, item = item, params = params }
  S.pending[#S.pending + 1] = p
  if M.config.diff_preview and item.diffs[1] then
    p.diff_tab = M.preview_diff(item.diffs[1])
  end
  vim.ui.select(params.options, {
    prompt = "bridle: " .. item.title,
    kind = "bridle.permission",
    format_item = function(o)
      return o.name
    end,
  }, function(choice)
    if choice then
      answer(p, choice.optionId)
      return
    end
    -- Dismissed: the safe answer is "reject once" when offered.
    for _, o in ipairs(params.options) do
      if o.kind == "reject_once" then
        answer(p, o.optionId)
        return
      end
    end
    answer(p, nil)
  end)
end

local function cancel_pending()
  for _, p in ipairs(vim.list_slice(S.pending, 1, #S.pending)) do
    answer(p, nil)
  end
end

--- What initialize tells bridle this client can do: fs/* only with setup's
--- fs = true (the default).
function M.client_capabilities()
  local on = M.config.fs ~= false
  return { fs = { readTextFile = on, writeTextFile = on }, terminal = false }
end

--- Answers a request from bridle: reply(result) or reply(nil, error), now
--- or later (an approval waits for the user).
function M.on_request(method, params, reply)
  if method == "session/request_permission" then
    return M.handle_permission(params, reply)
  end
  if M.config.fs ~= false and (method == "fs/read_text_file" or method == "fs/write_text_file") then
    local result, e
    if method == "fs/read_text_file" then
      result, e = fs.read(params)
    else
      result, e = fs.write(params)
    end
    return reply(result, e)
  end
  local why = (method:match("^fs/") and " (setup's fs = false)") or ""
  reply(nil, { code = -32601, message = "bridle.nvim does not implement " .. method .. why })
end

--- Starts bridle if needed, then calls cb(ok).
function M.connect(cb)
  cb = cb or function() end
  if S.rpc and not S.rpc.closed and S.info then
    return cb(true)
  end
  if S.starting then
    table.insert(S.starting, cb)
    return
  end
  S.starting = { cb }
  local function finish(ok)
    local waiting = S.starting or {}
    S.starting = nil
    for _, f in ipairs(waiting) do
      f(ok)
    end
  end
  local client, err
  client, err = rpc.start(M.binary().cmd, { env = M.config.env, cwd = cwd() }, {
    on_notification = function(method, params)
      if method == "session/update" then
        on_update(params)
      end
    end,
    on_request = M.on_request,
    on_exit = function(code, signal, stderr)
      if S.rpc == client then
        -- bridle keeps the session in its log: the next prompt resumes it.
        S.orphan = S.session_id or S.orphan
        S.rpc, S.info, S.session_id = nil, nil, nil
      end
      cancel_pending()
      if S.running then
        S.running = false
        chat_buf():add_notice(("bridle stopped unexpectedly (exit %d, signal %d). %s"):format(code, signal, vim.trim(stderr or "")))
      end
      if S.starting then
        notify("bridle exited before it answered initialize: " .. vim.trim(stderr or ""), vim.log.levels.ERROR)
        finish(false)
      end
    end,
  })
  if not client then
    S.starting = nil
    notify(err, vim.log.levels.ERROR)
    S.last_error = err
    return cb(false)
  end
  S.rpc = client
  client:request("initialize", {
    protocolVersion = 1,
    clientCapabilities = M.client_capabilities(),
    clientInfo = { name = "bridle.nvim", version = M.version },
  }, function(e, result)
    if e then
      notify("bridle: initialize failed: " .. tostring(e.message), vim.log.levels.ERROR)
      return finish(false)
    end
    S.info = result
    finish(true)
  end)
end

local function session_result(id, r)
  S.session_id = id
  S.modes = r and nn(r.modes) or nil
  M.set_title(id, S.titles[id])
end

--- Starts a new session (closing the current one), then cb(ok).
function M.new_session(cb)
  cb = cb or function() end
  M.connect(function(ok)
    if not ok then
      return cb(false)
    end
    local function create()
      chat_buf():clear()
      S.usage, S.commands, S.early = nil, {}, {}
      M.set_title(nil, nil)
      S.rpc:request("session/new", { cwd = cwd(), mcpServers = {} }, function(e, r)
        local early = S.early or {}
        S.early = nil
        if e then
          notify("bridle: session/new failed: " .. tostring(e.message), vim.log.levels.ERROR)
          return cb(false)
        end
        session_result(r.sessionId, r)
        for _, n in ipairs(early) do
          on_update(n)
        end
        cb(true)
      end)
    end
    M.close_current(create)
  end)
end

--- Closes the current session on the agent (if it supports it), then cb().
function M.close_current(cb)
  local id = S.session_id
  if not id or not S.rpc then
    return cb()
  end
  if S.running then
    M.stop()
  end
  S.session_id = nil
  local caps = S.info and nn(S.info.agentCapabilities) or {}
  if nn(caps.sessionCapabilities) and nn(caps.sessionCapabilities.close) then
    S.rpc:request("session/close", { sessionId = id }, function()
      cb()
    end)
  else
    cb()
  end
end

function M.ensure_session(cb)
  cb = cb or function() end
  if S.session_id and S.rpc and not S.rpc.closed then
    return cb(true)
  end
  local orphan = S.orphan
  if orphan then
    -- bridle went away (crash, kill); its log has the session: reopen it.
    S.orphan = nil
    return M.resume(orphan, function(ok)
      if ok then
        chat_buf():add_notice("bridle was restarted; the session continues from its log.")
        return cb(true)
      end
      M.new_session(cb)
    end)
  end
  M.new_session(cb)
end

--- Sends a prompt; cb(stopReason|nil) when the turn ends.
function M.send(text, cb)
  cb = cb or function() end
  text = vim.trim(text or "")
  if text == "" then
    return cb(nil)
  end
  if S.running then
    notify("bridle is still answering; :BridleStop first or wait for the turn to end", vim.log.levels.WARN)
    return cb(nil)
  end
  M.ensure_session(function(ok)
    if not ok then
      return cb(nil)
    end
    local chat = chat_buf()
    chat:add_user(text)
    S.running = true
    vim.cmd("redrawstatus!")
    S.rpc:request("session/prompt", { sessionId = S.session_id, prompt = { { type = "text", text = text } } }, function(e, r)
      S.running = false
      cancel_pending()
      vim.cmd("redrawstatus!")
      if e then
        chat:add_notice("error: " .. tostring(e.message))
        if e.code == -32000 then
          -- ACP's "auth required": bridle has no model provider configured.
          notify(tostring(e.message) .. "\nPass keys or BRIDLE_MODEL to bridle with require('bridle').setup{ env = { ... } }.", vim.log.levels.ERROR)
        end
        return cb(nil)
      end
      local reason = r.stopReason
      if reason == "cancelled" then
        chat:add_notice("Stopped: the turn was cancelled.")
      elseif reason ~= "end_turn" then
        chat:add_notice("Stopped: " .. tostring(reason))
      end
      cb(reason)
    end)
  end)
end

--- The label of an available command in the picker: "/name  description  <hint>".
function M.command_label(c)
  local hint = c.input and nn(c.input.hint) or nil
  local l = "/" .. c.name
  if nn(c.description) and c.description ~= "" then
    l = l .. "  " .. c.description
  end
  if hint and hint ~= "" then
    l = l .. "  <" .. hint .. ">"
  end
  return l
end

--- Picks one of the session's available commands (bridle's own, skills'
--- /skills, and the prompt commands of the user's and the project's
--- folders), asks for its argument when it takes one, and sends it.
function M.pick_command(cb)
  cb = cb or function() end
  if #S.commands == 0 then
    notify("bridle has not offered any command yet (open a chat with :Bridle first)", vim.log.levels.WARN)
    return cb(nil)
  end
  vim.ui.select(S.commands, { prompt = "bridle command", format_item = M.command_label }, function(c)
    if not c then
      return cb(nil)
    end
    if not (c.input and nn(c.input.hint)) then
      return M.send("/" .. c.name, cb)
    end
    vim.ui.input({ prompt = "/" .. c.name .. " " .. c.input.hint .. ": " }, function(arg)
      if arg == nil then
        return cb(nil)
      end
      M.send(vim.trim("/" .. c.name .. " " .. arg), cb)
    end)
  end)
end

--- Completes :Bridle's argument: the session's commands after a "/".
function M.complete_command(lead)
  if lead:sub(1, 1) ~= "/" then
    return {}
  end
  local out = {}
  for _, c in ipairs(S.commands) do
    local name = "/" .. c.name
    if name:sub(1, #lead) == lead then
      out[#out + 1] = name
    end
  end
  table.sort(out)
  return out
end

--- Cancels the running turn (session/cancel) and answers pending approvals as cancelled.
function M.stop()
  if not (S.rpc and S.session_id) then
    return
  end
  cancel_pending()
  S.rpc:notify("session/cancel", { sessionId = S.session_id })
end

function M.set_mode(mode_id, cb)
  cb = cb or function() end
  M.ensure_session(function(ok)
    if not ok then
      return cb(false)
    end
    S.rpc:request("session/set_mode", { sessionId = S.session_id, modeId = mode_id }, function(e)
      if e then
        notify("bridle: " .. tostring(e.message), vim.log.levels.ERROR)
        return cb(false)
      end
      if S.modes then
        S.modes.currentModeId = mode_id
      end
      vim.cmd("redrawstatus!")
      cb(true)
    end)
  end)
end

function M.select_mode()
  M.ensure_session(function(ok)
    if not ok or not S.modes then
      return notify("bridle offers no modes for this session", vim.log.levels.WARN)
    end
    vim.ui.select(S.modes.availableModes, {
      prompt = "bridle mode",
      format_item = function(m)
        local cur = m.id == S.modes.currentModeId and " (current)" or ""
        return m.name .. cur .. (nn(m.description) and (" — " .. m.description) or "")
      end,
    }, function(m)
      if m then
        M.set_mode(m.id)
      end
    end)
  end)
end

--- Lists sessions for this folder: cb(list|nil).
function M.list_sessions(cb)
  M.connect(function(ok)
    if not ok then
      return cb(nil)
    end
    S.rpc:request("session/list", { cwd = cwd() }, function(e, r)
      if e then
        notify("bridle: session/list failed: " .. tostring(e.message), vim.log.levels.ERROR)
        return cb(nil)
      end
      local list = r.sessions or {}
      for _, s in ipairs(list) do
        -- bridle's list has the titles; one that arrived as an update since
        -- fills in for a list that has none yet.
        if nn(s.title) then
          S.titles[s.sessionId] = clean_title(s.title)
        elseif S.titles[s.sessionId] then
          s.title = S.titles[s.sessionId]
        end
      end
      cb(list)
    end)
  end)
end

--- Reopens a session: its history is replayed into the chat buffer.
function M.resume(id, cb)
  cb = cb or function() end
  M.connect(function(ok)
    if not ok then
      return cb(false)
    end
    M.close_current(function()
      chat_buf():clear()
      S.usage, S.session_id = nil, id
      M.set_title(id, S.titles[id])
      local caps = nn(S.info.agentCapabilities) or {}
      local method = caps.loadSession and "session/load" or "session/resume"
      S.rpc:request(method, { sessionId = id, cwd = cwd(), mcpServers = {} }, function(e, r)
        if e then
          S.session_id = nil
          notify("bridle: " .. method .. " failed: " .. tostring(e.message), vim.log.levels.ERROR)
          return cb(false)
        end
        session_result(id, r)
        chat_buf():add_notice("Resumed session " .. id)
        cb(true)
      end)
    end)
  end)
end

--- How :BridleSessions shows a session: "TITLE  UPDATED  ID", "(untitled)"
--- before its first prompt, "(current)" for the open one.
function M.session_label(s)
  local title = clean_title(nn(s.title)) or "(untitled)"
  local when = nn(s.updatedAt) and ("  " .. s.updatedAt) or ""
  local cur = s.sessionId == S.session_id and "  (current)" or ""
  return title .. when .. "  " .. s.sessionId .. cur
end

function M.sessions()
  M.list_sessions(function(list)
    if not list then
      return
    end
    if #list == 0 then
      return notify("no earlier bridle sessions in " .. cwd())
    end
    vim.ui.select(list, {
      prompt = "Resume bridle session",
      format_item = M.session_label,
    }, function(s)
      if s then
        M.resume(s.sessionId)
      end
    end)
  end)
end

-- ---- rewind ----

--- Runs fn() in the current session, reopening it if bridle went away;
--- false (and a message) when there is none yet.
local function with_session(fn)
  if not (S.session_id or S.orphan) then
    notify("no bridle session yet: start a chat with :Bridle", vim.log.levels.WARN)
    return fn(false)
  end
  M.ensure_session(fn)
end

--- The session's prompts (_bridle/prompts): cb(list|nil), each
--- { n, text, rewound?, files }.
function M.prompts(cb)
  with_session(function(ok)
    if not ok then
      return cb(nil)
    end
    S.rpc:request("_bridle/prompts", { sessionId = S.session_id }, function(e, r)
      if e then
        notify("bridle: _bridle/prompts failed: " .. tostring(e.message), vim.log.levels.ERROR)
        return cb(nil)
      end
      cb(nn(r and r.prompts) or {})
    end)
  end)
end

--- What /rewind n would do now (_bridle/rewind_preview): cb(plan|nil),
--- { prompt, restore = { {path, from, to} }, yours, kept }. With fs/* on,
--- bridle reads the files for it through this editor (fs/read_text_file)
--- while the request is open: a loaded buffer's unsaved text is what it
--- compares, as the rewind itself will.
function M.rewind_preview(n, cb)
  with_session(function(ok)
    if not ok then
      return cb(nil)
    end
    S.rpc:request("_bridle/rewind_preview", { sessionId = S.session_id, prompt = n }, function(e, r)
      if e then
        notify("bridle: " .. tostring(e.message), vim.log.levels.ERROR)
        return cb(nil)
      end
      cb(r)
    end)
  end)
end

--- The chat's user message under the cursor; nil when the cursor is not
--- on one.
local function user_item_at_cursor()
  local chat = S.chat
  if not (chat and api.nvim_buf_is_valid(chat.buf) and api.nvim_get_current_buf() == chat.buf) then
    return nil
  end
  return rewindmod.user_item_at(chat.items, api.nvim_win_get_cursor(0)[1] - 1)
end

--- Reloads the loaded, unmodified buffers of paths whose text differs
--- from the disk, so a rewind's restored files show.
--- Returns the paths left as they were: { unsaved = {...}, removed = {...} }.
function M.reload_files(paths)
  local want, left = {}, { unsaved = {}, removed = {} }
  for _, p in ipairs(paths) do
    want[vim.fn.resolve(vim.fn.fnamemodify(p, ":p"))] = p
  end
  for _, buf in ipairs(api.nvim_list_bufs()) do
    local name = api.nvim_buf_get_name(buf)
    local p = api.nvim_buf_is_loaded(buf) and name ~= "" and want[vim.fn.resolve(vim.fn.fnamemodify(name, ":p"))]
    if p then
      local disk = fs.read_disk(p)
      if disk == nil then
        left.removed[#left.removed + 1] = p
      elseif vim.bo[buf].modified then
        left.unsaved[#left.unsaved + 1] = p
      else
        -- By the text, not by :checktime's size and mtime (seconds on some
        -- systems): a file put back within the same second at the same
        -- size is reloaded too.
        local text = table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. (vim.bo[buf].eol and "\n" or "")
        if text ~= disk then
          api.nvim_buf_call(buf, function()
            vim.cmd("silent! edit!")
          end)
        end
      end
    end
  end
  return left
end

--- Asks Yes/No with the preview, then sends "/rewind n" and reloads the
--- restored files' buffers; cb(stopReason|nil) when done (nil: not rewound).
function M.confirm_rewind(n, cb)
  cb = cb or function() end
  M.rewind_preview(n, function(plan)
    if not plan then
      return cb(nil)
    end
    S.rewind_preview = plan
    local lines = rewindmod.preview_lines(plan, cwd())
    if #api.nvim_list_uis() > 0 then
      -- The files, above the question (a picker shows the one-line prompt).
      api.nvim_echo({ { table.concat(lines, "\n") } }, true, {})
    end
    vim.ui.select({ "Yes", "No" }, {
      prompt = rewindmod.question(plan),
      kind = "bridle.rewind",
    }, function(choice)
      if choice ~= "Yes" then
        return cb(nil)
      end
      local paths = {}
      for _, r in ipairs(nn(plan.restore) or {}) do
        paths[#paths + 1] = r.path
      end
      vim.list_extend(paths, nn(plan.yours) or {})
      M.send("/rewind " .. n, function(reason)
        local left = M.reload_files(paths)
        local msg = {}
        if #left.unsaved > 0 then
          msg[#msg + 1] = "not reloaded, the buffer has unsaved changes: " .. table.concat(left.unsaved, ", ")
        end
        if #left.removed > 0 then
          msg[#msg + 1] = "removed (its buffer is kept): " .. table.concat(left.removed, ", ")
        end
        if #msg > 0 then
          notify("bridle rewind: " .. table.concat(msg, "\n"), vim.log.levels.WARN)
        end
        cb(reason)
      end)
    end)
  end)
end

--- :BridleRewind [N]: with N, rewinds to before prompt N; without, lists
--- the prompts to pick from, "Rewind to here" first when the cursor is on
--- a message in the chat. Asks before rewinding (see confirm_rewind).
function M.rewind(n, cb)
  cb = cb or function() end
  if S.running then
    notify("bridle is still answering; :BridleStop first or wait for the turn to end", vim.log.levels.WARN)
    return cb(nil)
  end
  if n then
    return M.confirm_rewind(n, cb)
  end
  -- The message under the cursor, taken before the request answers (the
  -- cursor may move meanwhile).
  local chat = S.chat
  local item = user_item_at_cursor()
  M.prompts(function(prompts)
    if not prompts then
      return cb(nil)
    end
    if #prompts == 0 then
      notify("this session has no prompts to rewind to yet")
      return cb(nil)
    end
    local at = item and rewindmod.map_users(chat.items, prompts)[item]
    local choices = {}
    for _, p in ipairs(at and prompts or {}) do
      if p.n == at then
        choices[1] = { n = at, here = true, label = "Rewind to here: " .. rewindmod.label(p, cwd()) }
      end
    end
    for _, p in ipairs(prompts) do
      choices[#choices + 1] = { n = p.n, label = rewindmod.label(p, cwd()) }
    end
    vim.ui.select(choices, {
      prompt = "Rewind to before which prompt?",
      kind = "bridle.rewind_prompt",
      format_item = function(c)
        return c.label
      end,
    }, function(c)
      if not c then
        return cb(nil)
      end
      M.confirm_rewind(c.n, cb)
    end)
  end)
end

-- ---- diffs, log, statusline ----

local function scratch(name, text, path)
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text or "", "\n", { plain = true }))
  pcall(api.nvim_buf_set_name, buf, name)
  local ft = vim.fn.fnamemodify(path, ":e")
  if ft ~= "" then
    pcall(api.nvim_buf_call, buf, function()
      vim.cmd("silent! doautocmd BufRead " .. vim.fn.fnameescape(path))
    end)
  end
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  return buf
end

--- Shows an edit as a diff split in a new tab; returns the tab.
function M.preview_diff(d)
  local old = d.oldText
  if old == nil and vim.fn.filereadable(d.path) == 1 then
    old = table.concat(vim.fn.readfile(d.path, "b"), "\n")
  end
  local cur = api.nvim_get_current_tabpage()
  vim.cmd("tabnew")
  local tab = api.nvim_get_current_tabpage()
  local n = (S.diff_seq or 0) + 1
  S.diff_seq = n
  local left = scratch(("bridle://%d/before/%s"):format(n, d.path), old or "", d.path)
  api.nvim_win_set_buf(0, left)
  vim.cmd("diffthis")
  vim.cmd("vsplit")
  local right = scratch(("bridle://%d/after/%s"):format(n, d.path), d.newText, d.path)
  api.nvim_win_set_buf(0, right)
  vim.cmd("diffthis")
  if M.config.diff_return ~= false and api.nvim_tabpage_is_valid(cur) then
    -- Stay where the user was; the tab waits until they look.
    api.nvim_set_current_tabpage(cur)
  end
  return tab
end

--- :BridleDiff — the diff of the edit under the cursor, or the latest one.
function M.diff()
  local chat = chat_buf()
  local line = api.nvim_get_current_buf() == chat.buf and (api.nvim_win_get_cursor(0)[1] - 1) or nil
  local pick
  for _, it in ipairs(chat.items) do
    if (it.kind == "tool" or it.kind == "permission") and it.diffs and it.diffs[1] then
      if line == nil or (it.start and it.start <= line) then
        pick = it
      end
    end
  end
  if not pick then
    return notify("no edit to show")
  end
  local tab = M.preview_diff(pick.diffs[1])
  api.nvim_set_current_tabpage(tab)
end

--- :BridleLog — the session's event log (`bridle log SESSION`) in a scratch buffer.
function M.show_log(id)
  id = id or S.session_id
  if not id then
    return notify("no bridle session yet: start a chat with :Bridle", vim.log.levels.WARN)
  end
  local cmd = M.binary().cmd
  vim.list_extend(cmd, { "log", id })
  local env = {}
  for k, v in pairs(M.config.env or {}) do
    env[#env + 1] = k .. "=" .. v
  end
  local out = vim.fn.system(vim.list_extend(#env > 0 and vim.list_extend({ "env" }, env) or {}, cmd))
  vim.cmd("tabnew")
  local buf = api.nvim_get_current_buf()
  api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(out, "\n", { plain = true }))
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "wipe"
  pcall(api.nvim_buf_set_name, buf, "bridle://log/" .. id)
  vim.bo[buf].modifiable = false
  return buf
end

local function tokens(n)
  if n < 1000 then
    return tostring(n)
  elseif n < 1000000 then
    return ("%dk"):format(math.floor(n / 1000 + 0.5))
  end
  local m = n / 1000000
  if m >= 10 or m == math.floor(m) then
    return ("%dM"):format(math.floor(m + 0.5))
  end
  return ("%.1fM"):format(m)
end
M.tokens = tokens

--- For 'statusline': "ctx 62% · 124k/200k", or "" before the first usage_update.
function M.statusline()
  local u = S.usage
  if not u or not u.size or u.size <= 0 then
    return ""
  end
  return ("ctx %d%% · %s/%s"):format(math.floor(u.used / u.size * 100 + 0.5), tokens(u.used), tokens(u.size))
end

return M
