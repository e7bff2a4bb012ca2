-- :BridleInstall against the host's real release archive, which
-- run-tests.sh builds once with `go run ./internal/dist` ($BRIDLE_DIST),
-- with no bridle on PATH.
local H = require("helpers")
local inst = require("bridle.install")

local host = inst.platform()

--- The host's archive in $BRIDLE_DIST, with its SHA256SUMS.
local function dist()
  local d = os.getenv("BRIDLE_DIST") or ""
  if d == "" then
    H.fail("missing: BRIDLE_DIST, a folder holding the host's release archive "
      .. "(run-tests.sh builds it with go run ./internal/dist -targets " .. host .. ")", 2)
  end
  local found = vim.fn.glob(d .. "/bridle-*-" .. host .. ".tar.gz", false, true)
  if #found ~= 1 then
    H.fail(("missing: bridle-VERSION-%s.tar.gz in BRIDLE_DIST=%s (found %d)"):format(host, d, #found), 2)
  end
  if vim.fn.filereadable(d .. "/SHA256SUMS") ~= 1 then
    H.fail("missing: SHA256SUMS in BRIDLE_DIST=" .. d, 2)
  end
  return found[1], d .. "/SHA256SUMS"
end

--- Runs fn with no folder on PATH that holds a bridle.
local function without_bridle_on_path(fn)
  local saved = vim.env.PATH
  local keep = {}
  for _, d in ipairs(vim.split(saved, ":", { plain = true })) do
    if vim.fn.executable(d .. "/bridle") ~= 1 then
      keep[#keep + 1] = d
    end
  end
  vim.env.PATH = table.concat(keep, ":")
  local ok, err = xpcall(fn, debug.traceback)
  vim.env.PATH = saved
  if not ok then
    error(err, 0)
  end
end

--- Captures vim.notify while fn runs; returns the messages.
local function notes()
  local got = {}
  local orig = vim.notify
  vim.notify = function(msg, level)
    got[#got + 1] = { msg = msg, level = level }
  end
  return got, function()
    vim.notify = orig
  end
end

--- Runs :BridleInstall {src} (the user command) and waits for its last
--- word: returns the final message and its level.
local function install_cmd(src)
  local got, restore = notes()
  local ok, err = pcall(vim.cmd, "BridleInstall " .. vim.fn.fnameescape(src))
  local done = ok and vim.wait(30000, function()
    return not require("bridle.install").busy
  end, 10)
  restore()
  if not ok then
    H.fail("BridleInstall raised: " .. tostring(err), 2)
  end
  if not done then
    H.fail("timed out waiting for :BridleInstall " .. src .. "; said: " .. vim.inspect(got), 2)
  end
  return got[#got].msg, got[#got].level
end

--- The entries of a folder (none if it does not exist).
local function entries(dir)
  return vim.fn.isdirectory(dir) == 1 and vim.fn.readdir(dir) or {}
end

local function copy(from, to)
  local f = assert(io.open(from, "rb"))
  local body = f:read("*a")
  f:close()
  local w = assert(io.open(to, "wb"))
  w:write(body)
  w:close()
  return body
end

return {
  {
    ":BridleInstall without an argument says what to pass",
    function()
      H.plugin()
      local got, restore = notes()
      vim.cmd("BridleInstall")
      restore()
      H.ok(got[1], "a message")
      local msg = got[1].msg
      H.ok(msg:find("Usage: :BridleInstall {archive-or-URL}", 1, true), msg)
      H.ok(msg:find("https://github.com/bridle-dev/bridle/releases/download/v0.1.0/bridle-0.1.0-" .. host .. ".tar.gz", 1, true), msg)
      H.ok(msg:find("SHA256SUMS", 1, true), msg)
    end,
  },
  {
    "installs the local archive with no bridle on PATH; it is found and a chat works",
    function()
      local archive = dist()
      without_bridle_on_path(function()
        local t = H.tmp()
        local data = t.dir .. "/data"
        local b = H.plugin(t, { cmd = { "bridle" }, install_dir = data })
        H.eq("missing", b.binary().source, "source before the install")

        local msg, level = install_cmd(archive)
        H.eq(vim.log.levels.INFO, level, "level of: " .. msg)
        H.ok(msg:find("installed bridle 0.1.0", 1, true), "reports bridle --version: " .. msg)
        H.ok(msg:find("checksum verified", 1, true), msg)
        H.eq({ "bin" }, entries(data), "the data folder holds the install and nothing else")
        H.eq({ "LICENSE", "bridle" }, vim.fn.sort(entries(data .. "/bin")), "the unpacked archive")

        local found = b.binary()
        H.eq("installed", found.source, "source after the install")
        H.eq(data .. "/bin/bridle", found.path, "path")

        vim.cmd("silent checkhealth bridle")
        local text = H.buf_text(0)
        H.ok(text:find("using " .. data .. "/bin/bridle (installed by :BridleInstall)", 1, true), text)
        H.ok(not text:find("ERROR", 1, true), text)
        vim.cmd("silent! bwipeout!")

        vim.cmd("Bridle")
        H.eq("end_turn", H.turn(b, "hello there"), "a turn with the installed bridle")
        H.ok(H.agent_text(b):find("word by word.", 1, true), H.agent_text(b))
        local exe = vim.loop.fs_readlink("/proc/" .. b.state.rpc.pid .. "/exe")
        if exe then
          H.eq(data .. "/bin/bridle", exe, "the running bridle")
        end

        -- A broken archive over it is refused and keeps the working install.
        local bad = t.dir .. "/bad/" .. vim.fn.fnamemodify(archive, ":t")
        vim.fn.mkdir(t.dir .. "/bad", "p")
        vim.fn.writefile({ "not a tarball" }, bad)
        msg, level = install_cmd(bad)
        H.eq(vim.log.levels.ERROR, level, "level of: " .. msg)
        H.ok(msg:find("is a bad archive: tar failed", 1, true), msg)
        H.eq({ "bin" }, entries(data), "no temp folder left")
        H.ok(vim.fn.system({ data .. "/bin/bridle", "--version" }):find("^bridle "), "the previous install still runs")
      end)
    end,
  },
  {
    "installs from a URL (curl, file://) and verifies SHA256SUMS from its folder",
    function()
      local archive = dist()
      if vim.fn.executable("curl") ~= 1 then
        H.fail("missing: curl, which :BridleInstall uses to download")
      end
      local t = H.tmp()
      local data = t.dir .. "/data"
      H.plugin(t, { cmd = { "bridle" }, install_dir = data })
      local msg, level = install_cmd("file://" .. archive)
      H.eq(vim.log.levels.INFO, level, "level of: " .. msg)
      H.ok(msg:find("installed bridle 0.1.0", 1, true) and msg:find("checksum verified", 1, true), msg)
      H.eq({ "bin" }, entries(data), "only the install")
    end,
  },
  {
    "a tampered archive (checksum mismatch) is refused and nothing is installed",
    function()
      local archive, sums = dist()
      local t = H.tmp()
      local data = t.dir .. "/data"
      H.plugin(t, { cmd = { "bridle" }, install_dir = data })
      local dir = t.dir .. "/tampered"
      vim.fn.mkdir(dir, "p")
      local name = vim.fn.fnamemodify(archive, ":t")
      local body = copy(archive, dir .. "/" .. name)
      copy(sums, dir .. "/SHA256SUMS")
      -- Flip one byte in the middle: still the right size and name.
      local i = math.floor(#body / 2)
      local w = assert(io.open(dir .. "/" .. name, "r+b"))
      w:seek("set", i)
      w:write(string.char((body:byte(i + 1) + 1) % 256))
      w:close()
      local msg, level = install_cmd(dir .. "/" .. name)
      H.eq(vim.log.levels.ERROR, level, "level of: " .. msg)
      H.ok(msg:find("checksum mismatch for " .. name, 1, true), msg)
      H.ok(msg:find("nothing was installed", 1, true), msg)
      H.eq({}, entries(data), "the data folder is empty")
      H.ok(require("bridle").binary().source ~= "installed", "no installed binary")

      -- A SHA256SUMS that does not list the archive cannot vouch for it.
      vim.fn.writefile({ string.rep("0", 64) .. "  bridle-0.0.1-" .. host .. ".tar.gz" }, dir .. "/SHA256SUMS")
      msg = install_cmd(dir .. "/" .. name)
      H.ok(msg:find("SHA256SUMS next to " .. name .. " does not list it", 1, true), msg)
      H.eq({}, entries(data), "still nothing installed")
      copy(sums, dir .. "/SHA256SUMS")

      -- A file URL is checked the same way.
      if vim.fn.executable("curl") == 1 then
        msg = install_cmd("file://" .. dir .. "/" .. name)
        H.ok(msg:find("checksum mismatch for " .. name, 1, true), msg)
        H.eq({}, entries(data), "the data folder is still empty")
      end
    end,
  },
  {
    "an archive for another platform is refused",
    function()
      local archive = dist()
      local t = H.tmp()
      local data = t.dir .. "/data"
      H.plugin(t, { cmd = { "bridle" }, install_dir = data })
      local other = host == "linux-aarch64" and "darwin-x86_64" or "linux-aarch64"
      local name = "bridle-0.1.0-" .. other .. ".tar.gz"
      copy(archive, t.dir .. "/" .. name)
      local msg, level = install_cmd(t.dir .. "/" .. name)
      H.eq(vim.log.levels.ERROR, level, "level of: " .. msg)
      H.ok(msg:find(name .. " is for " .. other .. ", but this machine is " .. host, 1, true), msg)
      H.ok(msg:find("bridle-0.1.0-" .. host .. ".tar.gz", 1, true), "names the right archive: " .. msg)
      H.eq({}, entries(data), "nothing installed")

      -- And a file that is no release archive at all.
      vim.fn.writefile({ "x" }, t.dir .. "/bridle.zip")
      msg = install_cmd(t.dir .. "/bridle.zip")
      H.ok(msg:find("bridle.zip is not a bridle release archive", 1, true), msg)
    end,
  },
}
