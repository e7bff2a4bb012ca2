-- Finding the bridle binary, and :BridleInstall, which installs a release
-- archive (bridle-VERSION-PLATFORM.tar.gz, .zip for Windows, see
-- docs/release.md) into the plugin's data directory, so that bridle runs
-- without Go.
--
-- Lookup order: `cmd` from setup when it names anything but the plain
-- "bridle"; then "bridle" on PATH; then the copy :BridleInstall put in
-- install_dir (default stdpath('data')/bridle), as install_dir/bin/bridle
-- (bin/bridle.exe on Windows).
--
-- An install never leaves half a binary: everything happens in a temp
-- folder inside install_dir (fetch, checksum, extract, `bridle --version`),
-- and only a binary that ran is renamed into place.

local M = {}
local uv = vim.uv or vim.loop

M.releases = "https://github.com/bridle-dev/bridle/releases"
M.platforms = { "linux-x86_64", "linux-aarch64", "darwin-x86_64", "darwin-aarch64", "windows-x86_64", "windows-aarch64" }

--- The release platform of this machine (as the archives name it), from
--- uname (or the one given): linux-x86_64, windows-aarch64, ...
function M.platform(uname)
  local windows = not uname and vim.fn.has("win32") == 1
  uname = uname or uv.os_uname()
  local os = (uname.sysname or "unknown"):lower()
  if windows or os:match("windows") or os:match("mingw") or os:match("msys") then
    os = "windows"
  end
  local arch = (uname.machine or "unknown"):lower()
  if arch == "amd64" or arch == "x64" then
    arch = "x86_64"
  elseif arch == "arm64" then
    arch = "aarch64"
  end
  return os .. "-" .. arch
end

local function supported(platform)
  return vim.tbl_contains(M.platforms, platform)
end

local function is_windows(platform)
  return platform:match("^windows%-") ~= nil
end

--- The binary's name in a platform's archive: Windows runs only .exe files.
function M.exe(platform)
  return is_windows(platform or M.platform()) and "bridle.exe" or "bridle"
end

--- The release archive of a version for a platform: a zip for Windows
--- (which unpacks zips itself), a gzipped tar elsewhere.
function M.archive_name(version, platform)
  return ("bridle-%s-%s%s"):format(version, platform, is_windows(platform) and ".zip" or ".tar.gz")
end

--- Splits a release archive's file name into version and platform, or
--- returns nil for any other name (and for a platform's archive of the
--- wrong kind).
function M.parse_name(name)
  local version, platform = name:match("^bridle%-(%d[%w.+-]-)%-(%l+%-[%w_]+)%.tar%.gz$")
  if not version then
    version, platform = name:match("^bridle%-(%d[%w.+-]-)%-(%l+%-[%w_]+)%.zip$")
  end
  if version and M.archive_name(version, platform) == name then
    return version, platform
  end
end

--- The tar that unpacks a platform's archive. Windows 10 and later ship
--- bsdtar as System32\tar.exe, which reads zips; it comes first there, as
--- another tar on PATH (Git's GNU tar) reads no zips and takes C: for a host.
function M.tar(platform)
  if is_windows(platform or M.platform()) then
    local tar = (vim.env.SystemRoot or "C:\\Windows") .. "\\System32\\tar.exe"
    if vim.fn.executable(tar) == 1 then
      return tar
    end
  end
  return "tar"
end

--- The command that unpacks a platform's archive into dir.
function M.extract_argv(archive, dir, platform)
  platform = platform or M.platform()
  return { M.tar(platform), is_windows(platform) and "-xf" or "-xzf", archive, "-C", dir }
end

function M.dir(cfg)
  return cfg.install_dir or (vim.fn.stdpath("data") .. "/bridle")
end

--- Where :BridleInstall puts the binary.
function M.installed_path(cfg, platform)
  return M.dir(cfg) .. "/bin/" .. M.exe(platform)
end

--- The command to run and where its binary comes from:
--- { cmd = {...}, path = absolute path or nil, source = "setup" | "PATH" |
--- "installed" | "missing" }.
function M.resolve(cfg)
  local cmd = vim.deepcopy(cfg.cmd)
  local bin = cmd[1]
  if bin ~= "bridle" then
    local p = vim.fn.exepath(bin)
    return { cmd = cmd, path = p ~= "" and p or bin, source = "setup" }
  end
  local p = vim.fn.exepath("bridle")
  if p ~= "" then
    cmd[1] = p
    return { cmd = cmd, path = p, source = "PATH" }
  end
  local inst = M.installed_path(cfg)
  if vim.fn.executable(inst) == 1 then
    cmd[1] = inst
    return { cmd = cmd, path = inst, source = "installed" }
  end
  return { cmd = cmd, path = nil, source = "missing" }
end

--- What :BridleInstall without an argument says.
function M.usage(version)
  local plat = M.platform()
  local lines = { "Usage: :BridleInstall {archive-or-URL}" }
  if supported(plat) then
    local v = version or "VERSION"
    lines[#lines + 1] = ("This machine (%s) needs %s from %s, e.g."):format(plat, M.archive_name("VERSION", plat), M.releases)
    lines[#lines + 1] = (":BridleInstall %s/download/v%s/%s"):format(M.releases, v, M.archive_name(v, plat))
    lines[#lines + 1] = "or the path of a downloaded archive (keep SHA256SUMS next to it: the checksum is then verified)."
  else
    lines[#lines + 1] = ("bridle has no release for this machine (%s); releases exist for %s."):format(plat, table.concat(M.platforms, ", "))
  end
  return table.concat(lines, "\n")
end

-- ---- running tools, asynchronously ----

--- Runs argv; cb(code, output) with stdout and stderr together.
local function run(argv, cb)
  local out = {}
  local function collect(_, data)
    for _, l in ipairs(data or {}) do
      if l ~= "" then
        out[#out + 1] = l
      end
    end
  end
  local ok, id = pcall(vim.fn.jobstart, argv, {
    stdout_buffered = true,
    stderr_buffered = true,
    on_stdout = collect,
    on_stderr = collect,
    on_exit = function(_, code)
      vim.schedule(function()
        cb(code, table.concat(out, "\n"))
      end)
    end,
  })
  if not ok or id <= 0 then
    vim.schedule(function()
      cb(-1, ("could not run %s: %s"):format(argv[1], ok and ("jobstart returned " .. id) or tostring(id)))
    end)
  end
end

local function is_url(s)
  return s:match("^%a[%w+.-]*://") ~= nil
end

local function sha256_argv(file)
  if vim.fn.executable("sha256sum") == 1 then
    return { "sha256sum", file }
  elseif vim.fn.executable("shasum") == 1 then
    return { "shasum", "-a", "256", file }
  elseif vim.fn.executable("openssl") == 1 then
    return { "openssl", "dgst", "-sha256", "-r", file }
  elseif vim.fn.executable("certutil") == 1 then -- Windows
    return { "certutil", "-hashfile", file, "SHA256" }
  end
end

--- The SHA-256 in a checksum tool's output: the first word of
--- sha256sum's, shasum's and openssl -r's line, or certutil's line of hex
--- (its second, with the bytes spaced apart on older Windows).
function M.parse_sum(out)
  for line in (out .. "\n"):gmatch("(.-)\r?\n") do
    local word = line:match("^%s*(%x+)")
    if word and #word == 64 then
      return word:lower()
    end
    local hex = line:gsub("%s", "")
    if #hex == 64 and hex:match("^%x+$") then
      return hex:lower()
    end
  end
end

--- The sum SHA256SUMS gives for name, or nil.
local function sum_for(sums_file, name)
  for _, line in ipairs(vim.fn.readfile(sums_file)) do
    local hash, n = line:match("^(%x+)%s+%*?(.-)%s*$")
    if hash and n == name then
      return hash:lower()
    end
  end
end

local function exists(path)
  return uv.fs_lstat(path) ~= nil
end

-- ---- the install ----

M.busy = false

--- Installs the archive at src (a file, a folder holding the archive for
--- this platform, or a URL) into install_dir. cb(true, { path, version,
--- verified }) or cb(false, message). Also reports through vim.notify
--- unless opts.quiet.
function M.install(src, cfg, cb, opts)
  opts = opts or {}
  cb = cb or function() end
  local function say(msg, level)
    if not opts.quiet then
      vim.notify(msg, level or vim.log.levels.INFO, { title = "bridle" })
    end
  end
  if M.busy then
    local msg = "bridle: an install is already running"
    say(msg, vim.log.levels.ERROR)
    return cb(false, msg)
  end

  local tmp, finished
  local function done(ok, res)
    if finished then
      return
    end
    finished = true
    if tmp then
      vim.fn.delete(tmp, "rf")
    end
    M.busy = false
    if ok then
      say(("bridle: installed %s\n  at %s\n  %s"):format(res.version, res.path,
        res.verified and "checksum verified against SHA256SUMS" or "checksum NOT verified (no SHA256SUMS next to the archive)"))
    else
      res = "bridle: " .. res
      say(res, vim.log.levels.ERROR)
    end
    cb(ok, res)
  end

  src = vim.trim(src or "")
  if src == "" then
    local msg = M.usage(require("bridle").version)
    say(msg, vim.log.levels.WARN)
    return cb(false, msg)
  end
  M.busy = true
  -- A Lua error in any step still ends the install: reported, cleaned up.
  local function guard(f)
    return function(...)
      local ok, err = pcall(f, ...)
      if not ok then
        if finished then
          error(err, 0) -- from cb: not the install's
        end
        done(false, "the install failed: " .. tostring(err))
      end
    end
  end
  local function step(argv, k)
    run(argv, guard(k))
  end
  guard(function()
    local host = M.platform()
    if not supported(host) then
      return done(false, ("bridle has no release for this machine (%s); releases exist for %s. Build it from source: go install github.com/bridle-dev/bridle@latest")
        :format(host, table.concat(M.platforms, ", ")))
    end
    if vim.fn.executable(M.tar(host)) ~= 1 then
      return done(false, "tar was not found on PATH: it is needed to unpack the archive. Install tar and try again.")
    end

    local url = is_url(src) and src or nil
    local archive, sums
    if url then
      local name = url:gsub("[?#].*$", ""):match("([^/]+)$") or ""
      archive = name
    else
      local path = vim.fn.fnamemodify(vim.fn.expand(src), ":p")
      if vim.fn.isdirectory(path) == 1 then
        local found = vim.fn.glob(path .. "/" .. M.archive_name("*", host), false, true)
        if #found == 0 then
          return done(false, ("no %s in %s"):format(M.archive_name("VERSION", host), path))
        elseif #found > 1 then
          return done(false, ("several archives for %s in %s; name one: %s"):format(host, path,
            table.concat(vim.tbl_map(function(f)
              return vim.fn.fnamemodify(f, ":t")
            end, found), ", ")))
        end
        path = found[1]
      elseif vim.fn.filereadable(path) ~= 1 then
        return done(false, ("%s: no such file (pass a release archive or its URL; :BridleInstall alone says which)"):format(path))
      end
      archive = path
    end

    -- The file name says the platform: refuse another machine's archive
    -- before fetching or unpacking anything.
    local name = vim.fn.fnamemodify(archive, ":t")
    local version, platform = M.parse_name(name)
    if not version or not supported(platform) then
      return done(false, ("%s is not a bridle release archive: want bridle-VERSION-PLATFORM.tar.gz (.zip for Windows), PLATFORM one of %s")
        :format(name, table.concat(M.platforms, ", ")))
    end
    if platform ~= host then
      return done(false, ("%s is for %s, but this machine is %s: use %s"):format(name, platform, host, M.archive_name(version, host)))
    end
    if url and vim.fn.executable("curl") ~= 1 then
      return done(false, "curl was not found on PATH: it is needed to download " .. url
        .. ". Install curl, or download the archive (and SHA256SUMS) yourself and pass the file.")
    end

    local dir = M.dir(cfg)
    if vim.fn.mkdir(dir, "p") == 0 and vim.fn.isdirectory(dir) == 0 then
      return done(false, "could not create " .. dir)
    end
    tmp = ("%s/.install-%d-%d"):format(dir, uv.getpid(), uv.hrtime())
    vim.fn.mkdir(tmp .. "/new", "p")
    if vim.fn.isdirectory(tmp .. "/new") == 0 then
      tmp = nil
      return done(false, "could not create a temp folder in " .. dir)
    end

    local verified = false

    local function swap(ver)
      local dest = dir .. "/bin"
      local old
      if exists(dest) then
        old = tmp .. "/old"
        local ok, err = uv.fs_rename(dest, old)
        if not ok then
          return done(false, ("could not move the previous install (%s) aside: %s"):format(dest, tostring(err)))
        end
      end
      local ok, err = uv.fs_rename(tmp .. "/new", dest)
      if not ok then
        if old then
          uv.fs_rename(old, dest)
        end
        return done(false, ("could not move the new binary to %s: %s"):format(dest, tostring(err)))
      end
      done(true, { path = dest .. "/" .. M.exe(host), version = ver, verified = verified, dir = dir })
    end

    local function check_binary()
      local bin = tmp .. "/new/" .. M.exe(host)
      local st = uv.fs_lstat(bin)
      if not st or st.type ~= "file" then
        return done(false, name .. " is a bad archive: it holds no bridle binary")
      end
      step({ bin, "--version" }, function(code, out)
        if code ~= 0 or not out:match("^bridle ") then
          return done(false, ("the bridle in %s does not run on this machine (`bridle --version`: exit %d%s)")
            :format(name, code, out ~= "" and (", " .. out) or ""))
        end
        swap(out:gsub("\n.*", ""))
      end)
    end

    local function extract(file)
      step(M.extract_argv(file, tmp .. "/new", host), function(code, out)
        if code ~= 0 then
          return done(false, ("%s is a bad archive: tar failed (exit %d)%s"):format(name, code, out ~= "" and (": " .. out) or ""))
        end
        check_binary()
      end)
    end

    local function verify(file, sums_file)
      if not sums_file then
        return extract(file)
      end
      local want = sum_for(sums_file, name)
      if not want then
        return done(false, ("SHA256SUMS next to %s does not list it: refusing an archive it cannot check"):format(name))
      end
      local argv = sha256_argv(file)
      if not argv then
        return done(false, "no sha256sum, shasum or openssl on PATH to check the archive against SHA256SUMS")
      end
      step(argv, function(code, out)
        local got = code == 0 and M.parse_sum(out) or nil
        if not got then
          return done(false, ("could not compute the checksum of %s: %s"):format(name, out))
        end
        if got:lower() ~= want then
          return done(false, ("checksum mismatch for %s: SHA256SUMS says %s, the file is %s. "
            .. "The archive is damaged or was tampered with; nothing was installed."):format(name, want, got:lower()))
        end
        verified = true
        extract(file)
      end)
    end

    if not url then
      sums = vim.fn.fnamemodify(archive, ":h") .. "/SHA256SUMS"
      return verify(archive, vim.fn.filereadable(sums) == 1 and sums or nil)
    end

    -- A URL: SHA256SUMS from the same folder first (missing is allowed,
    -- and said), then the archive.
    local dl = tmp .. "/" .. name
    local sums_url = url:gsub("[?#].*$", ""):gsub("[^/]+$", "SHA256SUMS")
    say("bridle: downloading " .. url)
    local function curl(u, out, k)
      step({ "curl", "-fsSL", "--proto", "=https,http,file", "--connect-timeout", "30", "-o", out, u }, k)
    end
    curl(sums_url, tmp .. "/SHA256SUMS", function(scode)
      local have_sums = scode == 0 and vim.fn.filereadable(tmp .. "/SHA256SUMS") == 1
      curl(url, dl, function(code, out)
        if code ~= 0 then
          return done(false, ("downloading %s failed (curl exit %d)%s"):format(url, code, out ~= "" and (": " .. out) or ""))
        end
        verify(dl, have_sums and (tmp .. "/SHA256SUMS") or nil)
      end)
    end)
  end)()
end

return M
