-- The client fs capability: fs/read_text_file and fs/write_text_file backed
-- by loaded buffers. The first test has bridle's read_file, edit_file and
-- write_file go through them for real; the others drive the plugin's request
-- handler (and its JSON-RPC dispatch, with a captured reply) against real
-- buffers and files, for the cases bridle does not produce on demand.
local H = require("helpers")
local api = vim.api

local function read_file(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

--- Calls the plugin's request handler; returns result, error once it replies.
local function request(b, method, params)
  local done, res, er = false, nil, nil
  b.on_request(method, params, function(r, e)
    done, res, er = true, r, e
  end)
  H.wait(function()
    return done
  end, 5000, "the reply to " .. method)
  return res, er
end

--- Feeds one JSON-RPC line to the plugin's real dispatch (a connection
--- whose writes are captured) with the plugin's handlers; returns the reply.
local function dispatch(b, msg)
  H.ok(b.state.rpc, "connected")
  local sent = {}
  local fake = setmetatable({
    send = function(_, m)
      sent[#sent + 1] = vim.json.decode(vim.json.encode(m))
      return true
    end,
  }, getmetatable(b.state.rpc))
  fake:dispatch(vim.json.encode(msg), { on_request = b.on_request })
  H.wait(function()
    return sent[1]
  end, 5000, "the dispatched reply")
  return sent[1]
end

local function connect(b)
  local connected
  b.connect(function(ok)
    connected = ok
  end)
  H.wait(function()
    return connected ~= nil
  end, 10000, "initialize")
  H.ok(connected, "connected")
end

--- The output of the latest tool block whose title has text.
local function tool_output(b, text)
  local out
  for _, it in ipairs(b.state.chat.items) do
    if it.kind == "tool" and tostring(it.title):find(text, 1, true) then
      out = it.output or ""
    end
  end
  return out or ("no tool block titled " .. text .. " in:\n" .. H.buf_text(b.state.chat.buf))
end

return {
  {
    "bridle reads unsaved buffer text and its edits land in the buffer and on disk (fs over the real RPC)",
    function()
      local b, t = H.plugin(nil, { env = { BRIDLE_MODEL = "scripted/" .. H.root .. "/tests/scenarios/fs.json" } })
      local notes = t.ws .. "/notes.txt"
      local code = t.ws .. "/code.txt"
      vim.fn.writefile({ "alpha" }, code)
      -- Two files open with unsaved changes, as a user would have them.
      vim.cmd("edit " .. vim.fn.fnameescape(notes))
      local nbuf = api.nvim_get_current_buf()
      api.nvim_buf_set_lines(nbuf, 0, -1, false, { "unsaved notes in the buffer" })
      vim.cmd("edit " .. vim.fn.fnameescape(code))
      local cbuf = api.nvim_get_current_buf()
      api.nvim_buf_set_lines(cbuf, 0, -1, false, { "alpha", "beta" })
      vim.cmd("Bridle")
      H.wait(function()
        return b.state.session_id
      end, 10000, "a session")
      local done
      b.set_mode("auto-edit", function(ok)
        done = ok
      end)
      H.wait(function()
        return done ~= nil
      end, 5000, "auto-edit")
      H.ok(done, "auto-edit set")
      -- read_file sees the buffer, not the disk.
      H.eq("end_turn", H.turn(b, "read the notes"), "read turn")
      local out = tool_output(b, "Read notes.txt")
      H.ok(out:find("unsaved notes in the buffer", 1, true), "read the buffer's text: " .. out)
      H.ok(out:find("from the editor's buffer", 1, true), "bridle says where it read from: " .. out)
      H.eq("hello\n", read_file(notes), "the disk is untouched by a read")
      H.ok(vim.bo[nbuf].modified, "the buffer is still unsaved")
      -- edit_file works on the unsaved text (beta exists only in the buffer).
      H.eq("end_turn", H.turn(b, "edit the code"), "edit turn")
      H.eq({ "alpha", "BETA" }, api.nvim_buf_get_lines(cbuf, 0, -1, false), "the edited buffer")
      H.eq(false, vim.bo[cbuf].modified, "saved like :write")
      H.eq("alpha\nBETA\n", read_file(code), "the disk")
      -- write_file replaces the buffer's text and saves it.
      H.eq("end_turn", H.turn(b, "rewrite the notes"), "write turn")
      H.eq({ "rewritten by bridle" }, api.nvim_buf_get_lines(nbuf, 0, -1, false), "the rewritten buffer")
      H.eq(false, vim.bo[nbuf].modified, "saved")
      H.eq("rewritten by bridle\n", read_file(notes), "the disk")
      -- The user's text is one undo away.
      api.nvim_buf_call(nbuf, function()
        vim.cmd("silent undo")
      end)
      H.eq({ "unsaved notes in the buffer" }, api.nvim_buf_get_lines(nbuf, 0, -1, false), "undo")
    end,
  },
  {
    "with setup{ fs = false } bridle reads the disk, not the unsaved buffer",
    function()
      local b, t = H.plugin(nil, { fs = false, env = { BRIDLE_MODEL = "scripted/" .. H.root .. "/tests/scenarios/fs.json" } })
      vim.cmd("edit " .. vim.fn.fnameescape(t.ws .. "/notes.txt"))
      api.nvim_buf_set_lines(0, 0, -1, false, { "unsaved notes in the buffer" })
      vim.cmd("Bridle")
      H.eq("end_turn", H.turn(b, "read the notes"), "read turn")
      local out = tool_output(b, "Read notes.txt")
      H.ok(out:find("hello", 1, true) and not out:find("unsaved notes", 1, true), "read the disk: " .. out)
      H.ok(not out:find("from the editor's buffer", 1, true), out)
    end,
  },
  {
    "fs: initialize advertises readTextFile/writeTextFile, and setup{ fs = false } turns them off",
    function()
      local b = H.plugin()
      H.eq({ fs = { readTextFile = true, writeTextFile = true }, terminal = false }, b.client_capabilities(), "default")
      b = H.plugin(nil, { fs = false })
      H.eq({ fs = { readTextFile = false, writeTextFile = false }, terminal = false }, b.client_capabilities(), "fs = false")
      local _, e = request(b, "fs/read_text_file", { sessionId = "s", path = "/etc/hostname" })
      H.eq(-32601, e and e.code, "fs/* refused when off")
      H.ok(e.message:find("fs = false", 1, true), e.message)
    end,
  },
  {
    "fs/read_text_file reads a loaded buffer's unsaved text, else the disk",
    function()
      local b, t = H.plugin()
      local path = t.ws .. "/code.txt"
      vim.fn.writefile({ "one", "two", "three" }, path)
      vim.cmd("edit " .. vim.fn.fnameescape(path))
      local buf = api.nvim_get_current_buf()
      api.nvim_buf_set_lines(buf, 1, 2, false, { "TWO (unsaved)" })
      H.ok(vim.bo[buf].modified, "the buffer has unsaved changes")
      local r, e = request(b, "fs/read_text_file", { sessionId = "s", path = path })
      H.eq(nil, e, "no error")
      H.eq("one\nTWO (unsaved)\nthree\n", r.content, "the buffer's text")
      H.eq("one\ntwo\nthree\n", read_file(path), "the disk is untouched")
      r = request(b, "fs/read_text_file", { sessionId = "s", path = path, line = 2, limit = 2 })
      H.eq("TWO (unsaved)\nthree\n", r.content, "line 2, limit 2")
      r = request(b, "fs/read_text_file", { sessionId = "s", path = path, line = 3 })
      H.eq("three\n", r.content, "from line 3")
      -- The same file by another spelling of its path (a symlinked folder).
      local uv = vim.uv or vim.loop
      uv.fs_symlink(t.ws, t.dir .. "/link")
      r = request(b, "fs/read_text_file", { sessionId = "s", path = t.dir .. "/link/code.txt" })
      H.eq("one\nTWO (unsaved)\nthree\n", r.content, "through a symlink")
      -- No buffer: the disk, byte for byte.
      r = request(b, "fs/read_text_file", { sessionId = "s", path = t.ws .. "/notes.txt" })
      H.eq("hello\n", r.content, "a file no buffer holds")
      H.eq(-1, vim.fn.bufnr(t.ws .. "/notes.txt"), "reading did not load a buffer")
      -- Errors say what went wrong.
      local _, missing = request(b, "fs/read_text_file", { sessionId = "s", path = t.ws .. "/nope.txt" })
      H.eq(-32002, missing and missing.code, "missing file")
      H.ok(missing.message:find(t.ws .. "/nope.txt: no such file", 1, true), missing.message)
      local _, rel = request(b, "fs/read_text_file", { sessionId = "s", path = "code.txt" })
      H.eq(-32602, rel and rel.code, "relative path")
      H.ok(rel.message:find("absolute path", 1, true), rel.message)
    end,
  },
  {
    "fs/write_text_file lands in the loaded buffer and on disk, or on disk alone",
    function()
      local b, t = H.plugin()
      local path = t.ws .. "/code.txt"
      vim.fn.writefile({ "old" }, path)
      vim.cmd("edit " .. vim.fn.fnameescape(path))
      local buf = api.nvim_get_current_buf()
      api.nvim_buf_set_lines(buf, 0, -1, false, { "unsaved edit" })
      local r, e = request(b, "fs/write_text_file", { sessionId = "s", path = path, content = "new line 1\nnew line 2\n" })
      H.eq(nil, e, "no error")
      H.eq(nil, r, "null result")
      H.eq({ "new line 1", "new line 2" }, api.nvim_buf_get_lines(buf, 0, -1, false), "the buffer")
      H.eq(false, vim.bo[buf].modified, "written, like :write")
      H.eq("new line 1\nnew line 2\n", read_file(path), "the disk")
      -- Undo in the buffer goes back to what the user had.
      api.nvim_buf_call(buf, function()
        vim.cmd("silent undo")
      end)
      H.eq({ "unsaved edit" }, api.nvim_buf_get_lines(buf, 0, -1, false), "one undo step")
      -- Content without a final newline is written as given.
      request(b, "fs/write_text_file", { sessionId = "s", path = path, content = "no newline" })
      H.eq("no newline", read_file(path), "no newline added")
      H.eq("no newline", request(b, "fs/read_text_file", { sessionId = "s", path = path }).content, "read back")
      -- A loaded buffer in no window (hidden) is written too.
      vim.cmd("enew")
      H.eq(-1, vim.fn.bufwinid(buf), "the buffer is hidden")
      H.ok(api.nvim_buf_is_loaded(buf), "and loaded")
      r, e = request(b, "fs/write_text_file", { sessionId = "s", path = path, content = "while hidden\n" })
      H.eq(nil, e, "no error writing a hidden buffer")
      H.eq({ "while hidden" }, api.nvim_buf_get_lines(buf, 0, -1, false), "the hidden buffer")
      H.eq("while hidden\n", read_file(path), "the disk, from the hidden buffer")
      -- No buffer: the file (and its folder) is created; no buffer appears.
      local other = t.ws .. "/sub/dir/new.txt"
      r, e = request(b, "fs/write_text_file", { sessionId = "s", path = other, content = "fresh\n" })
      H.eq(nil, e, "no error")
      H.eq("fresh\n", read_file(other), "the new file")
      H.eq(-1, vim.fn.bufnr(other), "no buffer loaded for it")
      -- A failure is a JSON-RPC error with the reason.
      local _, bad = request(b, "fs/write_text_file", { sessionId = "s", path = t.ws .. "/notes.txt/x", content = "x" })
      H.ok(bad and bad.code == -32603 and bad.message:find("cannot write " .. t.ws .. "/notes.txt/x", 1, true), vim.inspect(bad))
      local _, nocontent = request(b, "fs/write_text_file", { sessionId = "s", path = other })
      H.eq(-32602, nocontent and nocontent.code, "no content")
    end,
  },
  {
    "fs requests through the JSON-RPC dispatch get JSON-RPC replies",
    function()
      local b, t = H.plugin()
      connect(b)
      local path = t.ws .. "/notes.txt"
      vim.cmd("edit " .. vim.fn.fnameescape(path))
      api.nvim_buf_set_lines(0, 0, -1, false, { "hello from the buffer" })
      local reply = dispatch(b, { jsonrpc = "2.0", id = 41, method = "fs/read_text_file", params = { sessionId = "s", path = path } })
      H.eq({ id = 41, result = { content = "hello from the buffer\n" } }, reply, "read reply")
      reply = dispatch(b, { jsonrpc = "2.0", id = 42, method = "fs/write_text_file", params = { sessionId = "s", path = path, content = "written\n" } })
      H.eq(42, reply.id, "id")
      H.eq(vim.NIL, reply.result, "result is null")
      H.eq(nil, reply.error, "no error")
      H.eq("written\n", read_file(path), "on disk")
      H.eq({ "written" }, api.nvim_buf_get_lines(0, 0, -1, false), "in the buffer")
      reply = dispatch(b, { jsonrpc = "2.0", id = 43, method = "fs/read_text_file", params = { sessionId = "s", path = t.ws .. "/gone.txt" } })
      H.eq(-32002, reply.error and reply.error.code, "error reply: " .. vim.inspect(reply))
    end,
  },
}
