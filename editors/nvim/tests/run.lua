-- Runs the headless tests: nvim --headless -u NONE -i NONE -n
--   --cmd 'set rtp^=editors/nvim' -c 'luafile editors/nvim/tests/run.lua'
-- Each test runs under pcall; a watchdog ends nvim with an error if the
-- whole run hangs, so an uncaught error can never pass as success.
-- Prints "N passed, N failed" and exits non-zero on any failure.

local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h")
package.path = root .. "/?.lua;" .. package.path
local H = require("helpers")

local out = io.stdout
local function say(s)
  out:write(s .. "\n")
  out:flush()
end

vim.defer_fn(function()
  say("watchdog: the test run took longer than 240 s")
  vim.cmd("cquit 2")
end, 240000)

if H.bin == "" or vim.fn.executable(H.bin) ~= 1 then
  say("BRIDLE_BIN must name a built bridle binary (run-tests.sh builds one)")
  say("0 passed, 1 failed")
  vim.cmd("cquit 1")
end

vim.o.showmode = false -- "-- INSERT --" would land in the output
vim.o.more = false

local filter = os.getenv("BRIDLE_TEST_FILTER")
local passed, failed = 0, 0
local files = vim.fn.glob(root .. "/test_*.lua", false, true)
table.sort(files)
for _, file in ipairs(files) do
  local loaded, tests = pcall(dofile, file)
  if not loaded then
    failed = failed + 1
    say(("FAIL loading %s\n     %s"):format(file, tostring(tests)))
    tests = {}
  end
  for _, t in ipairs(tests) do
    if not filter or t[1]:find(filter, 1, true) then
      local started = (vim.uv or vim.loop).hrtime()
      local ok, err = xpcall(t[2], debug.traceback)
      local ms = math.floor(((vim.uv or vim.loop).hrtime() - started) / 1e6)
      if ok then
        passed = passed + 1
        say(("ok   %s (%d ms)"):format(t[1], ms))
      else
        failed = failed + 1
        say(("FAIL %s (%d ms)\n     %s"):format(t[1], ms, tostring(err):gsub("\n", "\n     ")))
      end
    end
  end
end
pcall(H.unload)
say(("nvim %s"):format(tostring(vim.version and vim.version() and (vim.version().major .. "." .. vim.version().minor .. "." .. vim.version().patch))))
say(("%d passed, %d failed"):format(passed, failed))
if failed > 0 or passed == 0 then
  vim.cmd("cquit 1")
else
  vim.cmd("qall!")
end
