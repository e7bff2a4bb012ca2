#!/usr/bin/env bash
# The UI test: real Neovim in a tmux terminal. Types :Bridle and a prompt
# like a person, then reads the screen until the streamed answer is there.
# With SCREENSHOT=file.png (and aha + chromium installed) it also renders
# the screen to a PNG. Prints "N passed, N failed".
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
: "${BRIDLE_BIN:?BRIDLE_BIN must name a built bridle binary}"
tmp=$(mktemp -d)
sock="bridle-ui-$$"
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

mkdir -p "$tmp/ws"
printf 'hello\n' >"$tmp/ws/notes.txt"
cat >"$tmp/init.lua" <<EOF
vim.opt.rtp:prepend("$here")
vim.cmd("runtime plugin/bridle.lua")
require("bridle").setup({
  cmd = { "$BRIDLE_BIN" },
  env = { BRIDLE_DB = "$tmp/bridle.db", BRIDLE_MODEL = "scripted/$here/tests/scenarios/chat.json" },
})
vim.o.laststatus = 2
vim.o.statusline = "%f %= %{v:lua.require'bridle'.statusline()} "
vim.o.termguicolors = false
EOF

screen() { tmux -L "$sock" capture-pane -p -t ui; }
wait_for() { # text timeout_s
  local end=$((SECONDS + $2))
  while [ $SECONDS -lt $end ]; do
    screen | grep -qF -- "$1" && return 0
    sleep 0.1
  done
  return 1
}

passed=0
failed=0
fail() {
  failed=$((failed + 1))
  echo "FAIL $1"
  echo "---- screen ----"
  screen
  echo "----------------"
}

cd "$tmp/ws"
tmux -L "$sock" -f /dev/null new-session -d -s ui -x 150 -y 40 "nvim -u $tmp/init.lua -i NONE -n notes.txt"
if ! wait_for "notes.txt" 10; then
  fail "nvim did not start in tmux"
else
  tmux -L "$sock" send-keys -t ui ":Bridle" Enter
  sleep 0.5
  tmux -L "$sock" send-keys -t ui -l "hello bridle"
  tmux -L "$sock" send-keys -t ui Enter
  if wait_for "word by word." 15 && wait_for "## You" 1 && wait_for "hello bridle" 1; then
    passed=$((passed + 1))
    echo "ok   typed prompt in tmux; the streamed answer is on screen"
  else
    fail "the answer did not appear on screen"
  fi
  # The first prompt names the session: the chat's statusline (%f) shows it.
  if wait_for "bridle://chat/hello bridle" 5; then
    passed=$((passed + 1))
    echo "ok   the session's title names the chat buffer in its statusline"
  else
    fail "the title is not in the chat's statusline"
  fi
  tmux -L "$sock" send-keys -t ui -l "please read the notes"
  tmux -L "$sock" send-keys -t ui Enter
  # notes.txt is open in this Neovim: bridle reads it through the buffer
  # (fs/read_text_file), which adds a "[from the editor's buffer]" line.
  if wait_for "notes.txt says hello." 15 && wait_for "▸ [read] Read notes.txt · done  [4 lines]" 2 && ! screen | grep -qF "│ @ "; then
    passed=$((passed + 1))
    echo "ok   a tool call shows as a folded block with its status"
  else
    fail "the tool call block did not appear"
  fi
  if wait_for "ctx " 5 && screen | grep -qE "ctx [0-9]+% · [0-9.]+[kM]?/[0-9.]+[kM]?"; then
    passed=$((passed + 1))
    echo "ok   the statusline shows context use"
  else
    fail "no context use in the statusline"
  fi
  if [ -n "${SCREENSHOT:-}" ] && command -v aha >/dev/null && command -v chromium >/dev/null; then
    tmux -L "$sock" capture-pane -e -p -t ui | aha --black --title bridle.nvim >"$tmp/screen.html"
    sed -i 's#<head>#<head><style>body{margin:0;padding:6px;font:14px/1.25 "DejaVu Sans Mono",monospace;background:\#000;}pre{margin:0}</style>#' "$tmp/screen.html"
    chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1290,720 \
      --screenshot="$SCREENSHOT" "file://$tmp/screen.html" >/dev/null 2>&1 && echo "screenshot: $SCREENSHOT"
  fi
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
