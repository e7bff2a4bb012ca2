-- A user's hook on a tool card: a PreToolUse hook refuses read_file, and
-- the chat shows the hook's card (a finished card of kind other, titled
-- with the event) with its reason, as any tool card.
local H = require("helpers")

return {
  {
    "a hook that refuses a call shows as a card with its reason",
    function()
      local t = H.tmp()
      vim.fn.mkdir(t.dir .. "/config/bridle", "p")
      vim.fn.writefile({
        vim.fn.json_encode({
          hooks = { PreToolUse = { { matcher = "read_file", command = "echo 'notes are private here' >&2; exit 2" } } },
        }),
      }, t.dir .. "/config/bridle/settings.json")
      local b = H.plugin(t, { env = { XDG_CONFIG_HOME = t.dir .. "/config" } })
      vim.cmd("Bridle")
      H.wait(function()
        return b.state.session_id
      end, 10000, "a session")
      H.eq("end_turn", H.turn(b, "read the notes"), "stop reason")
      local text = H.buf_text(b.state.chat.buf)
      H.ok(text:find("PreToolUse", 1, true), "the hook's card is titled with its event:\n" .. text)
      H.ok(text:find("notes are private here", 1, true), "the card shows the hook's reason:\n" .. text)
    end,
  },
}
