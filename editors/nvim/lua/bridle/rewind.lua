-- :BridleRewind's pure parts: which chat message is which of bridle's
-- prompts, and how the prompts and a rewind's preview read. The requests
-- and the questions are in init.lua.

local M = {}

local nn = require("bridle.chat").nn

--- True for a prompt bridle answers without recording it as a prompt:
--- "/rewind [N|undo]", "/fork N", "/constraint TEXT", "/decision TEXT"
--- (session/turn.go).
function M.unrecorded(text)
  local name, arg = vim.trim(text or ""):match("^(%S+)%s*(.-)$")
  if name == "/rewind" or name == "/fork" then
    return true
  end
  return (name == "/constraint" or name == "/decision") and arg ~= ""
end

--- Whether bridle's prompt text (the first line, cut to 77 characters and
--- "..." past 80) is the chat message's text.
local function same(ptext, utext)
  local first = (utext or ""):match("^[^\n]*")
  ptext = ptext or ""
  if ptext == first then
    return true
  end
  return ptext:sub(-3) == "..." and first:sub(1, #ptext - 3) == ptext:sub(1, -4)
end

--- Maps the chat's user items to prompt numbers, in order: a message that
--- bridle did not record (a command) or that matches no later prompt gets
--- none. Returns a table item -> n.
function M.map_users(items, prompts)
  local out, j = {}, 1
  for _, it in ipairs(items or {}) do
    if it.kind == "user" and not M.unrecorded(it.text) then
      for k = j, #prompts do
        if same(prompts[k].text, it.text) then
          out[it] = prompts[k].n
          j = k + 1
          break
        end
      end
    end
  end
  return out
end

--- The user item whose lines hold line (0-based), if any.
function M.user_item_at(items, line)
  for _, it in ipairs(items or {}) do
    if it.kind == "user" and it.start and line >= it.start and line < it.start + (it.count or 0) then
      return it
    end
  end
end

--- path relative to base (the workspace) when under it, else as :~ shows it.
local function short(path, base)
  if base and base ~= "" then
    base = base:gsub("/+$", "") .. "/"
    if path:sub(1, #base) == base then
      return path:sub(#base + 1)
    end
  end
  return vim.fn.fnamemodify(path, ":~")
end

--- One prompt as the list shows it: "2. fix the parser · 2 files: a.go, b.go",
--- "(rewound)" at the end of one a rewind went back over.
function M.label(p, base)
  local files = nn(p.files) or {}
  local what
  if #files == 0 then
    what = "no files"
  else
    what = ("%d file%s: %s"):format(#files, #files == 1 and "" or "s", table.concat(vim.tbl_map(function(f)
      return short(f, base)
    end, files), ", "))
  end
  return ("%d. %s · %s%s"):format(p.n, p.text ~= "" and p.text or "(empty)", what, nn(p.rewound) and " (rewound)" or "")
end

--- Whether a preview's restore entry removes its file (`to` empty: the
--- agent, or a command it ran, created it).
local function removes(r)
  return nn(r.to) == nil or r.to == ""
end

--- What a rewind will do, from _bridle/rewind_preview, one line each.
function M.preview_lines(plan, base)
  local lines = { ("Rewind to before prompt %d:"):format(plan.prompt) }
  local any = false
  for _, r in ipairs(nn(plan.restore) or {}) do
    any = true
    if removes(r) then
      lines[#lines + 1] = "  remove " .. short(r.path, base) .. " (the agent created it)"
    else
      lines[#lines + 1] = "  put back " .. short(r.path, base)
    end
  end
  for _, p in ipairs(nn(plan.yours) or {}) do
    any = true
    lines[#lines + 1] = "  ask about " .. short(p, base) .. " (you changed it after the agent)"
  end
  for _, k in ipairs(nn(plan.kept) or {}) do
    any = true
    lines[#lines + 1] = "  cannot put back " .. k
  end
  if not any then
    lines[#lines + 1] = "  no file needs putting back; the agent forgets what came after"
  end
  return lines
end

--- The one-line question: "Rewind to before prompt 2 (put back 1, remove 1, ask about 1)?"
function M.question(plan)
  local back, remove = 0, 0
  for _, r in ipairs(nn(plan.restore) or {}) do
    if removes(r) then
      remove = remove + 1
    else
      back = back + 1
    end
  end
  local parts = {}
  if back > 0 then
    parts[#parts + 1] = "put back " .. back
  end
  if remove > 0 then
    parts[#parts + 1] = "remove " .. remove
  end
  local yours = #(nn(plan.yours) or {})
  if yours > 0 then
    parts[#parts + 1] = "ask about " .. yours
  end
  local files = #parts > 0 and (" (" .. table.concat(parts, ", ") .. ")") or " (no files)"
  return ("Rewind to before prompt %d%s?"):format(plan.prompt, files)
end

return M
