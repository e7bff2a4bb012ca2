-- :checkhealth bridle — the binary, its version, and `bridle doctor`.
-- vim.health on 0.10+ (start/ok/warn/error), require('health') on 0.7.

local M = {}

local function reporter()
  local h = vim.health
  if h and h.start then
    return { start = h.start, ok = h.ok, info = h.info, warn = h.warn, error = h.error }
  end
  h = h or require("health")
  return { start = h.report_start, ok = h.report_ok, info = h.report_info, warn = h.report_warn, error = h.report_error }
end

local function env_prefix(env)
  local out = {}
  for k, v in pairs(env or {}) do
    out[#out + 1] = k .. "=" .. v
  end
  if #out == 0 then
    return {}
  end
  table.insert(out, 1, "env")
  return out
end

local function run(cmd, args, env)
  local full = vim.list_extend(env_prefix(env), vim.deepcopy(cmd))
  vim.list_extend(full, args)
  local out = vim.fn.system(full)
  return vim.v.shell_error, vim.trim(out or "")
end

local where = {
  setup = "from `cmd` in setup",
  PATH = "found on PATH",
  installed = "installed by :BridleInstall",
}

function M.check()
  local r = reporter()
  local b = require("bridle")
  local cfg = b.config
  local found = b.binary()
  local cmd = found.cmd
  local inst = require("bridle.install")
  r.start("bridle binary")
  r.info("lookup order: `cmd` in setup (if not the plain \"bridle\"), then PATH, then " .. inst.installed_path(cfg))
  if found.source == "missing" then
    r.error("bridle was not found: not on PATH, not installed in " .. inst.dir(cfg), {
      "Install it without Go: " .. inst.usage(b.version):gsub("\n", " "),
      "or build it: go install github.com/bridle-dev/bridle@latest",
      "or point the plugin at it: require('bridle').setup{ cmd = { '/path/to/bridle' } }",
    })
    return
  end
  local bin = found.path
  if vim.fn.executable(bin) ~= 1 then
    r.error(("%q (from `cmd` in setup) is not executable or not on PATH"):format(cmd[1]), {
      "Fix `cmd` in setup, or remove it to use bridle from PATH or from :BridleInstall",
      "Install bridle: :BridleInstall {archive-or-URL}, or go install github.com/bridle-dev/bridle@latest",
    })
    return
  end
  r.ok(("using %s (%s)"):format(bin, where[found.source]))
  if found.source ~= "installed" and vim.fn.executable(inst.installed_path(cfg)) == 1 then
    r.info(("also installed: %s (not used: %s comes first)"):format(inst.installed_path(cfg), found.source == "PATH" and "PATH" or "`cmd`"))
  end
  local code, version = run(cmd, { "--version" }, cfg.env)
  if code == 0 and version ~= "" then
    r.ok("version: " .. version:gsub("\n.*", ""))
  else
    r.warn("`" .. bin .. " --version` failed: " .. version, { "Reinstall bridle (:BridleInstall); this binary may be broken or too old." })
  end

  r.start("bridle doctor")
  local out
  code, out = run(cmd, { "doctor", "--json" }, cfg.env)
  if code ~= 0 then
    code, out = run(cmd, { "doctor" }, cfg.env)
  end
  M.report_doctor(r, code, out)
end

--- Reports `bridle doctor`'s findings: its JSON ({layers = {{name, ok,
--- detail, without}}}) when it has it, else its text, one finding a line
--- ("ok  name detail" / "MISSING  name detail" / "without it: …").
function M.report_doctor(r, code, out)
  if code ~= 0 and (out:find("unknown command", 1, true) or out:find("Usage:", 1, true)) then
    r.warn("this bridle has no `doctor` command", { "Update bridle to see which sandbox layers this machine supports." })
    return
  end
  local ok, doc = pcall(vim.json.decode, out, { luanil = { object = true, array = true } })
  if ok and type(doc) == "table" and type(doc.layers) == "table" then
    for _, l in ipairs(doc.layers) do
      local line = l.name .. (l.detail and l.detail ~= "" and (": " .. l.detail) or "")
      if l.ok then
        r.ok(line)
      else
        r.warn(line .. " (missing)", l.without and { "without it: " .. l.without } or nil)
      end
    end
    if #doc.layers == 0 then
      r.info("bridle doctor reported no layers")
    end
  else
    local any = false
    for _, line in ipairs(vim.split(out, "\n", { plain = true })) do
      local l = vim.trim(line)
      if l ~= "" then
        any = true
        local lower = l:lower()
        if lower:match("^ok") or lower:match("^✓") then
          r.ok(l)
        elseif lower:match("^missing") or lower:match("^warn") or lower:match("unsupported") or lower:match("not available") then
          r.warn(l)
        elseif lower:match("^error") or lower:match("^fail") then
          r.error(l)
        else
          r.info(l)
        end
      end
    end
    if not any then
      r.info("bridle doctor printed nothing")
    end
  end
  if code ~= 0 then
    r.error("bridle doctor exited with status " .. code)
  end
end

return M
