#!/usr/bin/env bash
# The Neovim plugin's tests: headless tests in real Neovim and one UI test
# in tmux, against the real bridle binary ($BRIDLE_BIN, or one built here).
# The :BridleInstall tests use this machine's release archive ($BRIDLE_DIST,
# or one built here once with go run ./internal/dist, a few seconds).
# As root it installs neovim and tmux with apt-get; otherwise it names what
# is missing and stops. Ends with "N passed, N failed"; non-zero on failure.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
say() { printf '%s\n' "nvim: $*" >&2; }

missing=()
command -v nvim >/dev/null || missing+=(neovim)
command -v tmux >/dev/null || missing+=(tmux)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    say "installing ${missing[*]} with apt-get"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}") >/dev/null ||
      { say "apt-get install ${missing[*]} failed"; echo "0 passed, 1 failed"; exit 1; }
  else
    say "missing: ${missing[*]}. Install them (apt-get install ${missing[*]}) or run this script as root."
    echo "0 passed, 1 failed"
    exit 1
  fi
fi

tmp=$(mktemp -d)
trap 'chmod -R u+rwx "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
# Everything the tests, the editor and bridle put in the temporary
# directory lands here and goes with it.
mkdir "$tmp/t"
export TMPDIR="$tmp/t"
if [ -z "${BRIDLE_BIN:-}" ]; then
  command -v go >/dev/null || { say "missing: go (to build bridle), or set BRIDLE_BIN to a built binary."; echo "0 passed, 1 failed"; exit 1; }
  say "building bridle"
  (cd "$repo" && go build -o "$tmp/bridle" .) || { say "go build failed"; echo "0 passed, 1 failed"; exit 1; }
  export BRIDLE_BIN="$tmp/bridle"
fi

# The host's release archive (and its SHA256SUMS), built once, for the
# :BridleInstall tests; they fail naming what is missing if it cannot be built.
if [ -z "${BRIDLE_DIST:-}" ]; then
  case "$(uname -s)-$(uname -m)" in
  Linux-x86_64 | Linux-amd64) plat=linux-x86_64 ;;
  Linux-aarch64 | Linux-arm64) plat=linux-aarch64 ;;
  Darwin-x86_64) plat=darwin-x86_64 ;;
  Darwin-arm64 | Darwin-aarch64) plat=darwin-aarch64 ;;
  MINGW*-x86_64 | MSYS*-x86_64 | CYGWIN*-x86_64) plat=windows-x86_64 ;;
  MINGW*-aarch64 | MSYS*-aarch64 | CYGWIN*-aarch64 | MINGW*-arm64 | MSYS*-arm64) plat=windows-aarch64 ;;
  *) plat= ;;
  esac
  if [ -z "$plat" ]; then
    say "no release platform for $(uname -s) $(uname -m): the install tests will fail"
  elif ! command -v go >/dev/null; then
    say "missing: go (to build the release archive), or set BRIDLE_DIST: the install tests will fail"
  else
    started=$SECONDS
    if (cd "$repo" && go run ./internal/dist -out "$tmp/dist" -targets "$plat") >"$tmp/dist.log" 2>&1; then
      export BRIDLE_DIST="$tmp/dist"
      say "built the $plat release archive in $((SECONDS - started)) s"
    else
      cat "$tmp/dist.log" >&2
      say "go run ./internal/dist failed: the install tests will fail"
    fi
  fi
fi

say "$(nvim --version | head -1)"
passed=0
failed=0
add() { # log file, exit status
  local line
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" | tail -1)
  if [ -n "$line" ]; then
    passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
    failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
  fi
  if [ "$2" != 0 ] && { [ -z "$line" ] || [ "$(echo "$line" | cut -d' ' -f3)" = 0 ]; }; then
    failed=$((failed + 1)) # failed without counting a failure: a crash or a hang
  fi
}

# Headless: pcall per test, a watchdog in run.lua, and timeout as a last resort.
timeout 300 nvim --headless -u NONE -i NONE -n --cmd "set rtp^=$here" --cmd 'runtime plugin/bridle.lua' \
  -c "luafile $here/tests/run.lua" >"$tmp/headless.log" 2>&1 </dev/null
st=$?
grep -vE '^[0-9]+ passed, [0-9]+ failed$' "$tmp/headless.log"
add "$tmp/headless.log" $st

# The UI test in tmux.
timeout 120 "$here/tests/ui.sh" >"$tmp/ui.log" 2>&1
st=$?
grep -vE '^[0-9]+ passed, [0-9]+ failed$' "$tmp/ui.log"
add "$tmp/ui.log" $st

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
