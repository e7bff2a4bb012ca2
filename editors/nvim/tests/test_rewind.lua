-- :BridleRewind end to end against the real bridle: scripted prompts
-- change files (edit_file, write_file in auto-edit mode; a shell command
-- in full-auto), then :BridleRewind goes back to before one of them.
-- vim.ui.select is stubbed to pick and confirm, answering a little later as
-- a person would; the files on disk and a loaded buffer must show the
-- content from before that prompt.
--
-- They run with fs/* on (setup's default), as people use the plugin:
-- bridle then reads and writes the files through this editor, for the
-- preview (_bridle/rewind_preview) as for the rewind itself. One runs with
-- setup{ fs = false }, where bridle reads and writes the disk itself and
-- the plugin reloads the loaded buffer afterwards.
local H = require("helpers")
local api = vim.api

local read = H.read

--- The plugin on the rewind scenario; fs is setup's (nil: the default, on).
local function setup(fs)
  local b, t = H.plugin(nil, { fs = fs, env = { BRIDLE_MODEL = "scripted/" .. H.root .. "/tests/scenarios/rewind.json" } })
  return b, t
end

local function set_mode(b, mode)
  H.wait(function()
    return b.state.session_id
  end, 10000, "a session")
  local done
  b.set_mode(mode, function(ok)
    done = ok
  end)
  H.wait(function()
    return done ~= nil
  end, 5000, mode)
  H.ok(done, mode .. " set")
end

local function auto_edit(b)
  set_mode(b, "auto-edit")
end

--- The plugin on the rewind scenario (fs on), its chat open in mode, and
--- the first prompt answered.
local function after_first_prompt(mode)
  local b, t = setup()
  vim.cmd("Bridle")
  set_mode(b, mode)
  H.eq("end_turn", H.turn(b, "make the first change"), "first turn")
  return b, t
end

--- Stubs vim.ui.select: answers[kind](items) returns the item to pick (or
--- nil to dismiss); a kind with no answer fails the test. Returns the
--- calls seen and a function that puts vim.ui.select back.
local function stub_select(answers)
  local seen, orig = {}, vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    local fmt = opts.format_item or tostring
    seen[#seen + 1] = { kind = opts.kind, prompt = opts.prompt, labels = vim.tbl_map(fmt, items) }
    local pick = answers[opts.kind]
    vim.defer_fn(function()
      if not pick then
        seen.unexpected = (seen.unexpected or "") .. " " .. tostring(opts.kind)
        return on_choice(nil)
      end
      on_choice(pick(items))
    end, 50)
  end
  return seen, function()
    vim.ui.select = orig
  end
end

local function first(pred)
  return function(items)
    for _, it in ipairs(items) do
      if pred(it) then
        return it
      end
    end
  end
end

local function user_items(b)
  local out = {}
  for _, it in ipairs(b.state.chat.items) do
    if it.kind == "user" then
      out[#out + 1] = it
    end
  end
  return out
end

--- Runs :BridleRewind (args) and waits for the rewind turn to end.
local function rewind(b, args)
  local before = #user_items(b)
  vim.cmd("BridleRewind" .. (args and (" " .. args) or ""))
  H.wait(function()
    return #user_items(b) > before and not b.state.running
  end, 15000, "the /rewind turn")
  H.wait(function()
    return H.agent_text(b):find("Rewound to before prompt", 1, true)
  end, 5000, "bridle's answer to /rewind")
end

--- Loads notes.txt in a buffer, runs both prompts and :BridleRewind 2 with
--- setup's fs: the confirmation must come from bridle's preview, and the
--- files and the buffer must end as after the first prompt.
local function rewind_loaded_buffer(fs)
  local b, t = setup(fs)
  local notes, created = t.ws .. "/notes.txt", t.ws .. "/created.txt"
  vim.cmd("edit " .. vim.fn.fnameescape(notes))
  local nbuf = api.nvim_get_current_buf()
  -- The files bridle reads through this editor while the preview is open.
  local previewing, reads = false, {}
  local on_request = b.on_request
  b.on_request = function(method, params, reply)
    if previewing and method == "fs/read_text_file" then
      reads[#reads + 1] = params.path
    end
    return on_request(method, params, reply)
  end
  vim.cmd("Bridle")
  auto_edit(b)
  H.eq("end_turn", H.turn(b, "make the first change"), "first turn")
  H.eq("end_turn", H.turn(b, "make the second change"), "second turn")
  if fs ~= false then
    H.eq({ "hello from the second prompt, which is longer" }, api.nvim_buf_get_lines(nbuf, 0, -1, false), "the edits landed in the buffer")
  end
  H.eq("hello from the second prompt, which is longer\n", read(notes), "notes.txt after the second prompt")
  local seen, restore = stub_select({
    ["bridle.rewind"] = function(items)
      previewing = false
      return first(function(c)
        return c == "Yes"
      end)(items)
    end,
  })
  local started = (vim.uv or vim.loop).hrtime()
  previewing = true
  local ok, err = pcall(rewind, b, "2")
  restore()
  H.ok(ok, err)
  local ms = ((vim.uv or vim.loop).hrtime() - started) / 1e6
  H.eq(nil, seen.unexpected, "no other question")
  H.eq("Rewind to before prompt 2 (put back 1, remove 1)?", seen[1] and seen[1].prompt, "the confirmation")
  local plan = b.state.rewind_preview
  local restored = vim.tbl_map(function(r)
    return { r.path, r.to ~= vim.NIL and (r.to or "") ~= "" }
  end, plan.restore)
  table.sort(restored, function(x, y)
    return x[1] < y[1]
  end)
  H.eq({ { created, false }, { notes, true } }, restored, "bridle's plan: remove created.txt, put notes.txt back")
  H.ok(plan.kept == vim.NIL or #plan.kept == 0, "nothing it cannot put back: " .. vim.inspect(plan.kept))
  if fs ~= false then
    H.ok(vim.tbl_contains(reads, notes), "bridle read notes.txt through the editor for the preview: " .. vim.inspect(reads))
  else
    H.eq({}, reads, "no fs/* with fs = false")
  end
  -- A guard against the preview waiting out bridle's 10 s read timeout.
  H.ok(ms < 5000, ("the rewind took %d ms"):format(ms))
  H.eq("hello from the first prompt\n", read(notes), "notes.txt as after the first prompt")
  H.eq(nil, read(created), "created.txt removed")
  H.eq({ "hello from the first prompt" }, api.nvim_buf_get_lines(nbuf, 0, -1, false), "the loaded buffer")
  H.eq(false, vim.bo[nbuf].modified, "the buffer is unmodified")
end

return {
  {
    "rewind helpers: chat messages map to prompts by order, skipping commands bridle does not record",
    function()
      local R = require("bridle.rewind")
      local long = string.rep("x", 90)
      local items = {
        { kind = "user", text = "fix the parser\nand the tests" },
        { kind = "agent", text = "ok" },
        { kind = "user", text = "/constraint keep it small" },
        { kind = "user", text = "/rewind" },
        { kind = "user", text = long },
        { kind = "user", text = "/rewind 1" },
        { kind = "user", text = "fix the parser" },
      }
      local prompts = {
        { n = 1, text = "fix the parser", files = {} },
        { n = 2, text = string.rep("x", 77) .. "...", files = {} },
        { n = 3, text = "fix the parser", files = {} },
      }
      local m = R.map_users(items, prompts)
      H.eq({ 1, nil, nil, 2, nil, 3 }, { m[items[1]], m[items[3]], m[items[4]], m[items[5]], m[items[6]], m[items[7]] }, "mapped")
      H.eq(true, R.unrecorded("/decision use sqlite"), "/decision")
      H.eq(false, R.unrecorded("/decision"), "/decision alone is a prompt")
      H.eq(true, R.unrecorded("/fork 2"), "/fork")
      H.eq(true, R.unrecorded("/rewind undo"), "/rewind undo")
      H.eq("2. fix it · 2 files: a.txt, sub/b.txt (rewound)", R.label({ n = 2, text = "fix it", rewound = true, files = { "/w/a.txt", "/w/sub/b.txt" } }, "/w"), "label")
      H.eq("1. hi · no files", R.label({ n = 1, text = "hi", files = {} }, "/w"), "label without files")
      local plan = { prompt = 2, restore = { { path = "/w/a.txt", from = "h1", to = "h0" }, { path = "/w/new.txt", from = "h2", to = "" } }, yours = { "/w/c.txt" }, kept = {} }
      H.eq("Rewind to before prompt 2 (put back 1, remove 1, ask about 1)?", R.question(plan), "question")
      H.eq({
        "Rewind to before prompt 2:",
        "  put back a.txt",
        "  remove new.txt (the agent created it)",
        "  ask about c.txt (you changed it after the agent)",
      }, R.preview_lines(plan, "/w"), "preview lines")
    end,
  },
  {
    ":BridleRewind on the chat's second message puts the files back as after the first prompt, and the loaded buffer shows it",
    function()
      local b, t = after_first_prompt("auto-edit")
      local notes, created = t.ws .. "/notes.txt", t.ws .. "/created.txt"
      H.eq("hello from the first prompt\n", read(notes), "after the first prompt")
      H.eq("end_turn", H.turn(b, "make the second change"), "second turn")
      H.eq("hello from the second prompt, which is longer\n", read(notes), "after the second prompt")
      H.eq("made by the second prompt\n", read(created), "created by the second prompt")
      -- notes.txt loaded in a buffer (in the other window), as after the second prompt.
      vim.cmd("stopinsert")
      vim.cmd("wincmd t")
      vim.cmd("edit " .. vim.fn.fnameescape(notes))
      local nbuf = api.nvim_get_current_buf()
      H.eq({ "hello from the second prompt, which is longer" }, api.nvim_buf_get_lines(nbuf, 0, -1, false), "the buffer before")

      -- The cursor on the second message in the chat: "Rewind to here".
      local users = user_items(b)
      H.eq(2, #users, "two user messages")
      local cw
      for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
        if api.nvim_win_get_buf(w) == b.state.chat.buf then
          cw = w
        end
      end
      H.ok(cw, "the chat window")
      vim.cmd("stopinsert")
      api.nvim_set_current_win(cw)
      api.nvim_win_set_cursor(cw, { users[2].start + 2, 0 })
      local seen, restore = stub_select({
        ["bridle.rewind_prompt"] = first(function(c)
          return c.here
        end),
        ["bridle.rewind"] = first(function(c)
          return c == "Yes"
        end),
      })
      local ok, err = pcall(rewind, b)
      restore()
      H.ok(ok, err)
      H.eq(nil, seen.unexpected, "no other question")
      H.eq(2, #seen, "two questions: which prompt, then confirm")
      H.eq({
        "Rewind to here: 2. make the second change · 2 files: notes.txt, created.txt",
        "1. make the first change · 1 file: notes.txt",
        "2. make the second change · 2 files: notes.txt, created.txt",
      }, seen[1].labels, "the prompts offered")
      H.eq("Rewind to before prompt 2 (put back 1, remove 1)?", seen[2].prompt, "the confirmation")
      H.eq({ "Yes", "No" }, seen[2].labels, "Yes/No")
      local plan = b.state.rewind_preview
      H.eq(2, plan.prompt, "previewed prompt")
      H.eq(2, #plan.restore, "two files to restore: " .. vim.inspect(plan))

      H.eq("hello from the first prompt\n", read(notes), "notes.txt as after the first prompt")
      H.eq(nil, read(created), "created.txt removed")
      H.eq({ "hello from the first prompt" }, api.nvim_buf_get_lines(nbuf, 0, -1, false), "the loaded buffer reloaded")
      H.eq(false, vim.bo[nbuf].modified, "the buffer is unmodified")

      -- bridle marks the second prompt rewound.
      local prompts
      b.prompts(function(p)
        prompts = p or false
      end)
      H.wait(function()
        return prompts ~= nil
      end, 5000, "_bridle/prompts")
      H.eq(2, #prompts, "two prompts")
      H.eq(true, prompts[2].rewound, "prompt 2 rewound")
      H.ok(not prompts[1].rewound, "prompt 1 not rewound")
    end,
  },
  {
    ":BridleRewind N asks about a file the user changed after the agent, and puts it back when told",
    function()
      local b, t = after_first_prompt("auto-edit")
      local notes = t.ws .. "/notes.txt"
      vim.fn.writefile({ "the user's own text" }, notes)
      local seen, restore = stub_select({
        ["bridle.rewind"] = first(function(c)
          return c == "Yes"
        end),
        ["bridle.permission"] = first(function(o)
          return o.kind == "allow_once"
        end),
      })
      local ok, err = pcall(rewind, b, "1")
      restore()
      H.ok(ok, err)
      H.eq(nil, seen.unexpected, "no other question")
      H.eq({ "bridle.rewind", "bridle.permission" }, { seen[1] and seen[1].kind, seen[2] and seen[2].kind }, "confirm, then bridle's question")
      H.eq("Rewind to before prompt 1 (ask about 1)?", seen[1].prompt, "the confirmation")
      H.eq({ "Put them back too", "Leave them as they are" }, seen[2].labels, "bridle's options")
      H.eq({ notes }, b.state.rewind_preview.yours, "the preview names the user's file")
      H.eq("hello\n", read(notes), "put back as before prompt 1")
    end,
  },
  {
    ":BridleRewind answered No at the confirmation changes nothing",
    function()
      local b, t = after_first_prompt("auto-edit")
      local notes = t.ws .. "/notes.txt"
      local seen, restore = stub_select({
        ["bridle.rewind_prompt"] = first(function(c)
          return c.n == 1
        end),
        ["bridle.rewind"] = first(function(c)
          return c == "No"
        end),
      })
      -- From the input window (not the chat): no "Rewind to here".
      local result
      b.rewind(nil, function(r)
        result = { r }
      end)
      local ok, err = pcall(H.wait, function()
        return result
      end, 5000, "the rewind to be called off")
      restore()
      H.ok(ok, err)
      H.eq(nil, seen.unexpected, "no other question")
      H.eq({ "1. make the first change · 1 file: notes.txt" }, seen[1].labels, "the prompts offered")
      H.eq(2, #seen, "which prompt, then confirm")
      H.eq({ nil }, result, "called off")
      H.eq(false, b.state.running, "no /rewind sent")
      H.eq(1, #user_items(b), "no /rewind in the chat")
      H.eq("hello from the first prompt\n", read(notes), "unchanged")
    end,
  },
  {
    "with fs/* on (the default) :BridleRewind 2 previews bridle's plan promptly and bridle restores through the loaded buffer",
    function()
      rewind_loaded_buffer(nil)
    end,
  },
  {
    "with setup{ fs = false } :BridleRewind 2 previews bridle's plan, bridle restores the disk and the loaded buffer is reloaded",
    function()
      rewind_loaded_buffer(false)
    end,
  },
  {
    ":BridleRewind puts back a file a shell command removed and removes the one it created",
    function()
      local b, t = after_first_prompt("full-auto")
      local notes, made = t.ws .. "/notes.txt", t.ws .. "/made.txt"
      -- full-auto asks once before commands when this machine's sandbox
      -- cannot keep them in: allowed, as a person in full-auto would.
      local seen, restore = stub_select({
        ["bridle.permission"] = first(function(o)
          return o.kind == "allow_once"
        end),
      })
      local ok, err = pcall(H.turn, b, "run the command")
      restore()
      H.ok(ok, err)
      H.eq("end_turn", err, "command turn")
      H.eq(nil, seen.unexpected, "no other question")
      H.eq(nil, read(notes), "the command removed notes.txt")
      H.eq("made by a command\n", read(made), "the command made made.txt")

      seen, restore = stub_select({
        ["bridle.rewind"] = first(function(c)
          return c == "Yes"
        end),
      })
      ok, err = pcall(rewind, b, "2")
      restore()
      H.ok(ok, err)
      H.eq(nil, seen.unexpected, "no other question")
      H.eq("Rewind to before prompt 2 (put back 1, remove 1)?", seen[1] and seen[1].prompt, "the confirmation")
      H.eq("hello from the first prompt\n", read(notes), "notes.txt back as after the first prompt")
      H.eq(nil, read(made), "made.txt removed")
    end,
  },
}
