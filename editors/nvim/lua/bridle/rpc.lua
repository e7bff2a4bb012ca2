-- JSON-RPC 2.0 over a child process's stdio, newline-delimited (ACP's framing).
--
-- Unlike vim.lsp.rpc, a request from the agent is answered whenever the
-- handler calls its `reply`, so an approval can wait for the user.
-- Works on Neovim 0.7 (vim.loop) and 0.10+ (vim.uv).

local uv = vim.uv or vim.loop

local M = {}

local decode_opts = { luanil = { object = true, array = true } }

---@class bridle.Rpc
---@field private handle userdata
---@field private stdin userdata
---@field private next_id integer
---@field private callbacks table<integer, fun(err: table|nil, result: any)>
---@field pid integer
---@field closed boolean
local Rpc = {}
Rpc.__index = Rpc

--- Builds a `K=V` list for uv.spawn from the current environment plus extra.
local function environment(extra)
  local env = vim.fn.environ()
  for k, v in pairs(extra or {}) do
    env[k] = v
  end
  local list = {}
  for k, v in pairs(env) do
    list[#list + 1] = k .. "=" .. tostring(v)
  end
  return list
end

--- Starts `cmd` (a list: binary then arguments).
--- handlers: on_request(method, params, reply), on_notification(method, params),
--- on_exit(code, signal, stderr), on_stderr(chunk).
--- Returns an Rpc, or nil and a message that says how to fix the problem.
function M.start(cmd, opts, handlers)
  opts = opts or {}
  local stdin, stdout, stderr = uv.new_pipe(false), uv.new_pipe(false), uv.new_pipe(false)
  local self = setmetatable({ next_id = 0, callbacks = {}, closed = false, stderr_tail = "" }, Rpc)
  local args = {}
  for i = 2, #cmd do
    args[#args + 1] = cmd[i]
  end
  local handle, pid_or_err = uv.spawn(cmd[1], {
    args = args,
    stdio = { stdin, stdout, stderr },
    env = environment(opts.env),
    cwd = opts.cwd,
  }, function(code, signal)
    self.closed = true
    for _, p in ipairs({ stdin, stdout, stderr }) do
      if not p:is_closing() then
        p:close()
      end
    end
    if self.handle and not self.handle:is_closing() then
      self.handle:close()
    end
    vim.schedule(function()
      local cbs = self.callbacks
      self.callbacks = {}
      for _, cb in pairs(cbs) do
        cb({ code = -32099, message = "bridle exited (code " .. code .. ", signal " .. signal .. ")" }, nil)
      end
      if handlers.on_exit then
        handlers.on_exit(code, signal, self.stderr_tail)
      end
    end)
  end)
  if not handle then
    for _, p in ipairs({ stdin, stdout, stderr }) do
      p:close()
    end
    local msg = tostring(pid_or_err)
    if msg:find("ENOENT") then
      return nil,
        ("bridle: %q was not found. Install bridle with :BridleInstall {archive-or-URL} (:BridleInstall alone "
          .. "says which), or go install github.com/bridle-dev/bridle@latest, "
          .. "or pass its full path: require('bridle').setup{ cmd = { '/path/to/bridle' } }"):format(cmd[1])
    elseif msg:find("EACCES") then
      return nil, ("bridle: %q is not executable (chmod +x it, or fix `cmd` in setup)"):format(cmd[1])
    end
    return nil, ("bridle: could not start %q: %s"):format(cmd[1], msg)
  end
  self.handle, self.stdin, self.pid = handle, stdin, pid_or_err

  local pending = ""
  stdout:read_start(function(err, data)
    if err or not data then
      return
    end
    pending = pending .. data
    while true do
      local nl = pending:find("\n", 1, true)
      if not nl then
        break
      end
      local line = pending:sub(1, nl - 1)
      pending = pending:sub(nl + 1)
      if line:match("%S") then
        vim.schedule(function()
          self:dispatch(line, handlers)
        end)
      end
    end
  end)
  stderr:read_start(function(err, data)
    if err or not data then
      return
    end
    self.stderr_tail = (self.stderr_tail .. data):sub(-4096)
    if handlers.on_stderr then
      vim.schedule(function()
        handlers.on_stderr(data)
      end)
    end
  end)
  return self
end

function Rpc:send(msg)
  if self.closed then
    return false
  end
  msg.jsonrpc = "2.0"
  self.stdin:write(vim.json.encode(msg) .. "\n")
  return true
end

--- Sends a request; cb(err, result) runs on the main loop.
function Rpc:request(method, params, cb)
  self.next_id = self.next_id + 1
  local id = self.next_id
  self.callbacks[id] = cb or function() end
  if not self:send({ id = id, method = method, params = params }) then
    self.callbacks[id] = nil
    if cb then
      cb({ code = -32099, message = "bridle is not running" }, nil)
    end
  end
  return id
end

function Rpc:notify(method, params)
  return self:send({ method = method, params = params })
end

function Rpc:dispatch(line, handlers)
  local ok, msg = pcall(vim.json.decode, line, decode_opts)
  if not ok or type(msg) ~= "table" then
    vim.notify("bridle: ignoring a malformed message: " .. line:sub(1, 200), vim.log.levels.WARN)
    return
  end
  if msg.method and msg.id ~= nil then
    local answered = false
    local function reply(result, err)
      if answered then
        return
      end
      answered = true
      if err then
        self:send({ id = msg.id, error = err })
      else
        self:send({ id = msg.id, result = result == nil and vim.NIL or result })
      end
    end
    if handlers.on_request then
      local hok, herr = pcall(handlers.on_request, msg.method, msg.params, reply)
      if not hok then
        reply(nil, { code = -32603, message = "bridle.nvim: " .. tostring(herr) })
      end
    else
      reply(nil, { code = -32601, message = "method not found: " .. msg.method })
    end
  elseif msg.method then
    if handlers.on_notification then
      handlers.on_notification(msg.method, msg.params)
    end
  elseif msg.id ~= nil then
    local cb = self.callbacks[msg.id]
    self.callbacks[msg.id] = nil
    if cb then
      cb(msg.error, msg.result)
    end
  end
end

--- Blocks (processing events) until the request answers or timeout_ms pass.
--- Returns result or nil, err. For commands and tests, never for callbacks.
function Rpc:request_sync(method, params, timeout_ms)
  local done, res, er = false, nil, nil
  self:request(method, params, function(e, r)
    done, res, er = true, r, e
  end)
  vim.wait(timeout_ms or 10000, function()
    return done
  end, 10)
  if not done then
    return nil, { code = -32098, message = method .. " timed out" }
  end
  return res, er
end

--- Ends the process: TERM now, KILL after 2 s.
function Rpc:stop()
  if self.closed then
    return
  end
  pcall(function()
    self.stdin:shutdown()
  end)
  self.handle:kill("sigterm")
  local timer = uv.new_timer()
  timer:start(2000, 0, function()
    timer:close()
    if not self.closed and not self.handle:is_closing() then
      self.handle:kill("sigkill")
    end
  end)
end

return M
