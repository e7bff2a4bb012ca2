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
  local found = vim.fn.glob(d .. "/" .. inst.archive_name("*", host), false, true)
  if #found ~= 1 then
    H.fail(("missing: %s in BRIDLE_DIST=%s (found %d)"):format(inst.archive_name("VERSION", host), d, #found), 2)
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
    "Windows gets the zip, bsdtar and bridle.exe; the others the tar.gz and bridle",
    function()
      -- uname as libuv reports it on each system.
      for _, c in ipairs({
        { { sysname = "Windows_NT", machine = "x86_64" }, "windows-x86_64" },
        { { sysname = "Windows_NT", machine = "arm64" }, "windows-aarch64" },
        { { sysname = "MINGW64_NT-10.0", machine = "x86_64" }, "windows-x86_64" },
        { { sysname = "Linux", machine = "x86_64" }, "linux-x86_64" },
        { { sysname = "Darwin", machine = "arm64" }, "darwin-aarch64" },
      }) do
        H.eq(c[2], inst.platform(c[1]), "platform of " .. vim.inspect(c[1]))
      end
      H.eq(vim.fn.has("win32") == 1 and "windows" or vim.loop.os_uname().sysname:lower(), (inst.platform():gsub("%-.*", "")), "this machine")

      local want = {
        ["windows-x86_64"] = { "bridle-0.1.0-windows-x86_64.zip", "bridle.exe", "-xf" },
        ["windows-aarch64"] = { "bridle-0.1.0-windows-aarch64.zip", "bridle.exe", "-xf" },
        ["linux-x86_64"] = { "bridle-0.1.0-linux-x86_64.tar.gz", "bridle", "-xzf" },
        ["linux-aarch64"] = { "bridle-0.1.0-linux-aarch64.tar.gz", "bridle", "-xzf" },
        ["darwin-x86_64"] = { "bridle-0.1.0-darwin-x86_64.tar.gz", "bridle", "-xzf" },
        ["darwin-aarch64"] = { "bridle-0.1.0-darwin-aarch64.tar.gz", "bridle", "-xzf" },
      }
      for _, plat in ipairs(inst.platforms) do
        local w = want[plat]
        H.ok(w, "no expectation for " .. plat)
        H.eq(w[1], inst.archive_name("0.1.0", plat), "archive of " .. plat)
        H.eq({ "0.1.0", plat }, { inst.parse_name(w[1]) }, "parse_name of " .. w[1])
        H.eq(w[2], inst.exe(plat), "binary of " .. plat)
        H.eq("/data/bin/" .. w[2], inst.installed_path({ install_dir = "/data" }, plat), "installed path on " .. plat)
        local argv = inst.extract_argv("A", "D", plat)
        H.eq({ w[3], "A", "-C", "D" }, { unpack(argv, 2) }, "unpacking on " .. plat)
        H.ok(argv[1] == "tar" or argv[1]:match("\\System32\\tar%.exe$"), "the tar: " .. argv[1])
      end
      H.eq(6, #inst.platforms, "the release's platforms")
      -- No Windows tar.gz and no zip for the others: such names are no release.
      H.eq({}, { inst.parse_name("bridle-0.1.0-windows-x86_64.tar.gz") }, "a Windows tar.gz")
      H.eq({}, { inst.parse_name("bridle-0.1.0-linux-x86_64.zip") }, "a Linux zip")

      -- The sum, from each tool's output (certutil is Windows' own).
      local sum = ("0123456789abcdef"):rep(4)
      for _, out in ipairs({
        sum .. "  bridle-0.1.0-linux-x86_64.tar.gz",
        sum .. " *bridle-0.1.0-windows-x86_64.zip",
        "SHA256 hash of C:\\Users\\me\\bridle-0.1.0-windows-x86_64.zip:\r\n" .. sum:upper() .. "\r\nCertUtil: -hashfile command completed successfully.",
        "SHA256 hash of file bridle.zip:\n" .. sum:gsub("..", "%0 "):sub(1, -2) .. "\nCertUtil: -hashfile command completed successfully.",
      }) do
        H.eq(sum, inst.parse_sum(out), "the sum in " .. out)
      end
      H.eq(nil, inst.parse_sum("CertUtil: -hashfile command FAILED: 0x80070002"), "no sum in a failure")
    end,
  },
  {
    "a Windows zip is refused on this machine, naming this machine's archive",
    function()
      if vim.fn.has("win32") == 1 then
        H.fail("this test names a foreign archive for a Unix host; on Windows test a tar.gz instead")
      end
      local t = H.tmp()
      local data = t.dir .. "/data"
      H.plugin(t, { cmd = { "bridle" }, install_dir = data })
      local name = "bridle-0.1.0-windows-x86_64.zip"
      vim.fn.writefile({ "PK" }, t.dir .. "/" .. name)
      local msg, level = install_cmd(t.dir .. "/" .. name)
      H.eq(vim.log.levels.ERROR, level, "level of: " .. msg)
      H.ok(msg:find(name .. " is for windows-x86_64, but this machine is " .. host .. ": use bridle-0.1.0-" .. host .. ".tar.gz", 1, true), msg)
      H.eq({}, entries(data), "nothing installed")
    end,
  },
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
      H.ok(msg:find("https://github.com/bridle-dev/bridle/releases/download/v0.1.0/" .. inst.archive_name("0.1.0", host), 1, true), msg)
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
