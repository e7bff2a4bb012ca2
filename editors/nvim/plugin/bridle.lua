-- User commands for bridle.nvim. require('bridle').setup{} is optional:
-- without it the defaults apply (bridle on PATH).
if vim.g.loaded_bridle then
  return
end
vim.g.loaded_bridle = true

local function cmd(name, fn, opts)
  vim.api.nvim_create_user_command(name, fn, opts or {})
end

cmd("Bridle", function(a)
  local b = require("bridle")
  b.open()
  if a.args ~= "" then
    b.send(a.args)
  end
end, {
  nargs = "*",
  desc = "Open the bridle chat (and send the arguments as a prompt)",
  complete = function(lead)
    return require("bridle").complete_command(lead)
  end,
})
cmd("BridleCommands", function()
  require("bridle").open()
  require("bridle").pick_command()
end, { desc = "Pick one of bridle's commands (its own, skills, prompt commands) and send it" })
cmd("BridleNew", function()
  require("bridle").new_session()
  require("bridle").open()
end, { desc = "Start a new bridle chat" })
cmd("BridleStop", function()
  require("bridle").stop()
end, { desc = "Cancel bridle's running turn" })
cmd("BridleSessions", function()
  require("bridle").sessions()
end, { desc = "List bridle sessions and resume one" })
cmd("BridleMode", function(a)
  if a.args ~= "" then
    require("bridle").set_mode(a.args)
  else
    require("bridle").select_mode()
  end
end, {
  nargs = "?",
  desc = "Set bridle's mode (read-only, ask, auto-edit, full-auto)",
  complete = function()
    local m = require("bridle").state.modes
    local out = {}
    for _, x in ipairs(m and m.availableModes or {}) do
      out[#out + 1] = x.id
    end
    return out
  end,
})
cmd("BridleDiff", function()
  require("bridle").diff()
end, { desc = "Show the edit under the cursor as a diff" })
cmd("BridleLog", function(a)
  require("bridle").show_log(a.args ~= "" and a.args or nil)
end, { nargs = "?", desc = "Show a session's event log (bridle log)" })
cmd("BridleInstall", function(a)
  require("bridle").install(a.args)
end, { nargs = "?", complete = "file", desc = "Install bridle from a release archive (file or URL)" })
cmd("BridleRewind", function(a)
  local n = nil
  if a.args ~= "" then
    n = tonumber(a.args)
    if not n or n < 1 or n ~= math.floor(n) then
      return vim.notify("bridle: :BridleRewind takes the number of a prompt (from 1), or nothing to pick one", vim.log.levels.ERROR)
    end
  end
  require("bridle").rewind(n)
end, { nargs = "?", desc = "Rewind bridle's session (files and conversation) to before a prompt" })
