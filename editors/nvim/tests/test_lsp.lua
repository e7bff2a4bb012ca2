-- A language server's answer on a tool card, as any result: bridle runs
-- the pinned gopls (.tools/bin, installed by make test) for a Go
-- workspace; the scripted model calls the diagnostics tool (read-only
-- mode offers it: it reads), and the card shows what gopls said.
local H = require("helpers")

return {
  {
    "a diagnostics tool card shows what gopls said",
    function()
      local gopls = H.root .. "/../../.tools/bin"
      H.ok(vim.fn.executable(gopls .. "/gopls") == 1, "gopls is not in " .. gopls .. ": run make tools (scripts/ensure-test-tools)")
      local go = vim.fn.exepath("go")
      H.ok(go ~= "", "the go command is needed on PATH for gopls")
      local t = H.tmp()
      vim.fn.writefile({ "module example.com/demo", "", "go 1.22" }, t.ws .. "/go.mod")
      vim.fn.writefile({ "package main", "", "func main() {}" }, t.ws .. "/main.go")
      vim.fn.writefile({ "package main", "", 'var alreadyBroken int = "not a number"' }, t.ws .. "/other.go")
      vim.fn.mkdir(t.dir .. "/config/bridle", "p")
      vim.fn.writefile({ '{"lsp": {"wait_seconds": 120}}' }, t.dir .. "/config/bridle/settings.json")
      local b = H.plugin(t, {
        env = {
          BRIDLE_MODEL = "scripted/" .. H.root .. "/tests/scenarios/lsp.json",
          PATH = gopls .. ":" .. vim.fn.fnamemodify(go, ":h") .. ":/usr/bin:/bin",
          XDG_CONFIG_HOME = t.dir .. "/config",
          XDG_CACHE_HOME = t.dir .. "/cache",
        },
      })
      vim.cmd("Bridle")
      H.wait(function()
        return b.state.modes
      end, 10000, "modes")
      local done
      b.set_mode("read-only", function(ok)
        done = ok
      end)
      H.wait(function()
        return done ~= nil
      end, 5000, "set_mode")
      H.eq("end_turn", H.turn(b, "list the problems", 120000), "stop reason")
      local text = H.buf_text(b.state.chat.buf)
      H.ok(text:find('other.go:3:25 error cannot use "not a number" (untyped string constant) as int value in variable declaration', 1, true), text)
    end,
  },
}
