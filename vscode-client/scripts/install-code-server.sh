#!/usr/bin/env bash
# Idempotently installs the tools the end-to-end test needs:
#   - Node 24 (scripts/tools.sh: pinned in scripts/constraints.txt), which code-server 4.x requires
#   - code-server (npm, version pinned there too), built against that Node's headers
#   - Debian chromium (headless browser) and libkrb5-dev (native build dependency)
# Everything goes under $STARK_TOOLS (default: ~/.cache/stark-lsp/tools), outside the repository.
# Prints nothing on stdout except the final summary lines, so callers can source paths:
#   NODE24=...   CODE_SERVER=...   CHROMIUM=...
set -euo pipefail

REPO="$(cd "$(dirname "$0")/../.." && pwd)"
TOOLS="$(bash "$REPO/scripts/tools.sh" dir)"
CODE_SERVER_VERSION="${CODE_SERVER_VERSION:-$(bash "$REPO/scripts/tools.sh" pin code-server)}"
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

NODE24_BIN="$(bash "$REPO/scripts/tools.sh" node)"
# node-gyp needs the distribution's root (bin/, include/node/common.gypi) as its nodedir
NODE24_ROOT="$(cd "$(dirname "$NODE24_BIN")/.." && pwd)"
[ -f "$NODE24_ROOT/include/node/common.gypi" ] || { log "no Node 24 headers under $NODE24_ROOT"; exit 1; }
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
