-- Test helpers: a fresh plugin per test, wired to the real bridle binary
-- ($BRIDLE_BIN) with a scripted scenario, a temp database and workspace.

local H = {}

H.root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
H.bin = os.getenv("BRIDLE_BIN") or ""

function H.fail(msg, level)
  error(msg, (level or 1) + 1)
end

function H.eq(want, got, what)
  if not vim.deep_equal(want, got) then
    H.fail(("%s: want %s, got %s"):format(what or "value", vim.inspect(want), vim.inspect(got)), 2)
  end
end

function H.ok(cond, what)
  if not cond then
    H.fail(what or "condition failed", 2)
  end
  return cond
end

function H.wait(pred, ms, what)
  local ok = vim.wait(ms or 10000, function()
    local v = pred()
    return v ~= nil and v ~= false
  end, 10)
  if not ok then
    H.fail("timed out waiting for " .. (what or "a condition"), 2)
  end
  return pred()
end

--- A file's bytes, or nil when it does not exist.
function H.read(path)
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  local s = f:read("*a")
  f:close()
  return s
end

function H.buf_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

--- Unloads the plugin (ending its bridle) so the next test starts clean.
function H.unload()
  local ok, b = pcall(require, "bridle")
  if ok and b.state and b.state.rpc then
    local r = b.state.rpc
    r:stop()
    vim.wait(3000, function()
      return r.closed
    end, 10)
  end
  for name in pairs(package.loaded) do
    if name == "bridle" or name:match("^bridle%.") then
      package.loaded[name] = nil
    end
  end
  vim.cmd("silent! tabonly!")
  vim.cmd("silent! only!")
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(buf):match("^bridle://") then
      pcall(vim.api.nvim_buf_delete, buf, { force = true })
    end
  end
end

--- A temp folder with a workspace and a database path.
function H.tmp()
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir .. "/ws", "p")
  vim.fn.writefile({ "hello" }, dir .. "/ws/notes.txt")
  return { dir = dir, ws = dir .. "/ws", db = dir .. "/bridle.db" }
end

--- The plugin, freshly loaded and set up against the real binary.
function H.plugin(t, overrides)
  H.unload()
  t = t or H.tmp()
  local b = require("bridle")
  b.setup(vim.tbl_deep_extend("force", {
    cmd = { H.bin },
    cwd = t.ws,
    env = { BRIDLE_DB = t.db, BRIDLE_MODEL = "scripted/" .. H.root .. "/tests/scenarios/chat.json" },
  }, overrides or {}))
  return b, t
end

function H.agent_text(b)
  local out = {}
  for _, it in ipairs(b.state.chat and b.state.chat.items or {}) do
    if it.kind == "agent" then
      out[#out + 1] = it.text
    end
  end
  return table.concat(out)
end

--- Sends a prompt and waits for the turn to end; returns the stop reason.
function H.turn(b, text, ms)
  local done, reason = false, nil
  b.send(text, function(r)
    done, reason = true, r
  end)
  H.wait(function()
    return done
  end, ms or 15000, "the turn on " .. vim.inspect(text))
  return reason
end

function H.bridle_log(t, id)
  return vim.fn.system({ "env", "BRIDLE_DB=" .. t.db, H.bin, "log", id })
end

return H
