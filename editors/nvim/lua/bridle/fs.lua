-- The client's fs capability: ACP's fs/read_text_file and fs/write_text_file,
-- backed by loaded buffers. A read sees a buffer's unsaved text; a write
-- lands in the buffer (undoable) and is written like :write. Files that no
-- buffer holds are read and written on disk.

local M = {}

local api = vim.api
local uv = vim.uv or vim.loop

-- JSON-RPC error codes: invalid params, ACP's resource not found, internal.
M.INVALID_PARAMS = -32602
M.NOT_FOUND = -32002
M.INTERNAL = -32603

local function err(code, msg)
  return { code = code, message = "bridle.nvim: " .. msg }
end

local function is_abs(path)
  return path:sub(1, 1) == "/" or path:match("^%a:[/\\]") ~= nil
end

-- The same file, spelled either way: with symlinks resolved when it exists.
local function norm(path)
  path = vim.fn.fnamemodify(path, ":p")
  local real = uv.fs_realpath(path)
  return real or path
end

--- The loaded buffer that holds the file at path (absolute), if any. Only
--- file buffers count ('buftype' "" or "acwrite"), not bridle's own.
function M.find_buffer(path)
  local want = norm(path)
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(buf) then
      local bt = vim.bo[buf].buftype
      local name = api.nvim_buf_get_name(buf)
      if (bt == "" or bt == "acwrite") and name ~= "" and (name == path or norm(name) == want) then
        return buf
      end
    end
  end
end

--- A buffer's text as :write would save it (line endings, final newline).
function M.buffer_text(buf)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  if #lines == 1 and lines[1] == "" then
    return "" -- an empty buffer is written as an empty file
  end
  local bo = vim.bo[buf]
  local nl = bo.fileformat == "dos" and "\r\n" or bo.fileformat == "mac" and "\r" or "\n"
  local text = table.concat(lines, nl)
  if bo.eol or (bo.fixeol and not bo.binary) then
    text = text .. nl
  end
  return text
end

--- Lines line .. line+limit-1 (1-based) of text, each with its newline.
local function slice(text, line, limit)
  if line == nil and limit == nil then
    return text
  end
  line = math.max(1, math.floor(tonumber(line) or 1))
  local last = limit and (line + math.floor(tonumber(limit)) - 1) or math.huge
  local out, n, pos = {}, 0, 1
  while pos <= #text and n < last do
    local nl = text:find("\n", pos, true)
    local stop = nl or #text
    n = n + 1
    if n >= line then
      out[#out + 1] = text:sub(pos, stop)
    end
    pos = stop + 1
  end
  return table.concat(out)
end
M.slice = slice

--- A file's bytes from disk: text, or nil and why.
local function read_disk(path)
  local f, e = io.open(path, "rb")
  if not f then
    return nil, e
  end
  local text = f:read("*a")
  f:close()
  return text
end
M.read_disk = read_disk

--- fs/read_text_file: returns result, error.
function M.read(params)
  local path = type(params) == "table" and params.path or nil
  if type(path) ~= "string" or not is_abs(path) then
    return nil, err(M.INVALID_PARAMS, "fs/read_text_file needs an absolute path, got " .. vim.inspect(path))
  end
  local text
  local buf = M.find_buffer(path)
  if buf then
    text = M.buffer_text(buf)
  else
    if vim.fn.isdirectory(path) == 1 then
      return nil, err(M.INVALID_PARAMS, "cannot read " .. path .. ": it is a directory")
    end
    local e
    text, e = read_disk(path)
    if not text then
      if vim.fn.filereadable(path) == 0 and vim.fn.getftype(path) == "" then
        return nil, err(M.NOT_FOUND, "cannot read " .. path .. ": no such file")
      end
      return nil, err(M.INTERNAL, "cannot read " .. path .. ": " .. tostring(e))
    end
  end
  return { content = slice(text, params.line, params.limit) }
end

--- Puts content into buf (one undo step) and writes it like :write.
local function write_buffer(buf, path, content)
  local bo = vim.bo[buf]
  local dos = bo.fileformat == "dos"
  local body = content
  local final = body:sub(-1) == "\n"
  if final then
    body = body:sub(1, -2)
  end
  local lines = vim.split(body, "\n", { plain = true })
  if dos then
    for i, l in ipairs(lines) do
      lines[i] = l:gsub("\r$", "")
    end
  end
  if content == "" then
    lines = {}
  end
  if not bo.modifiable then
    return err(M.INTERNAL, "cannot write " .. path .. ": its buffer " .. buf .. " is not modifiable")
  end
  -- Its own undo step: u in the buffer brings back what was there before.
  local function undo_break()
    api.nvim_buf_call(buf, function()
      vim.cmd("let &undolevels = &undolevels")
    end)
  end
  undo_break()
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  undo_break()
  -- The file ends as content does: no newline added when it has none.
  bo.eol = final
  if not final then
    bo.fixeol = false
  end
  local ok, e = pcall(api.nvim_buf_call, buf, function()
    vim.cmd("silent write!")
  end)
  if not ok then
    return err(M.INTERNAL, "wrote " .. path .. " into buffer " .. buf .. " but not to disk: " .. tostring(e))
  end
end

--- fs/write_text_file: returns result (nil), error.
function M.write(params)
  local path = type(params) == "table" and params.path or nil
  if type(path) ~= "string" or not is_abs(path) then
    return nil, err(M.INVALID_PARAMS, "fs/write_text_file needs an absolute path, got " .. vim.inspect(path))
  end
  if type(params.content) ~= "string" then
    return nil, err(M.INVALID_PARAMS, "fs/write_text_file needs content (a string) for " .. path)
  end
  local buf = M.find_buffer(path)
  if buf then
    return nil, write_buffer(buf, path, params.content)
  end
  if vim.fn.isdirectory(path) == 1 then
    return nil, err(M.INVALID_PARAMS, "cannot write " .. path .. ": it is a directory")
  end
  local dir = vim.fn.fnamemodify(path, ":h")
  if vim.fn.isdirectory(dir) == 0 and not (pcall(vim.fn.mkdir, dir, "p") and vim.fn.isdirectory(dir) == 1) then
    return nil, err(M.INTERNAL, "cannot write " .. path .. ": cannot create " .. dir)
  end
  local f, e = io.open(path, "wb")
  if not f then
    return nil, err(M.INTERNAL, "cannot write " .. path .. ": " .. tostring(e))
  end
  local ok, we = f:write(params.content)
  f:close()
  if not ok then
    return nil, err(M.INTERNAL, "cannot write " .. path .. ": " .. tostring(we))
  end
  return nil
end

return M
