#!/usr/bin/env bash
# End-to-end test in a real VS Code (code-server) driven by headless chromium.
#
#   1. installs code-server (Node 24) and chromium if needed (install-code-server.sh)
#   2. packages the extension (.vsix) and installs it into a fresh code-server profile
#   3. makes a temp workspace with a Triton sample and its harness
#   4. starts code-server, opens it in headless chromium (test/e2e/drive.mjs)
#   5. the extension drives itself (STARK_E2E_REPORT, src/e2e.ts): code actions,
#      "Optimize kernel" with the built-in team, the speedup diagnostic, the hover,
#      the search tree, "Apply best candidate", the file on disk
#   6. screenshots and logs go to out/e2e/ at the repository root
#
# Environment:
#   STARK_PYTHON        interpreter with stark_lsp (default: the repository's .venv/bin/python, else python3)
#   STARK_E2E_BACKEND   real (default) or fake (the server's fast stand-in evaluator/agents)
#   STARK_E2E_SAMPLE    kernel file to copy with its harness (default: samples/mistuned/row_softmax.py,
#                       else the fixture in test/e2e/fixture)
#   STARK_E2E_BUDGET    search budget (default 3)
#   STARK_E2E_TIMEOUT_S how long the whole run may take (default 1200)
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
OUT="$REPO/out/e2e"
BACKEND="${STARK_E2E_BACKEND:-real}"
BUDGET="${STARK_E2E_BUDGET:-3}"
TIMEOUT_S="${STARK_E2E_TIMEOUT_S:-1200}"
PY="${STARK_PYTHON:-}"
if [ -z "$PY" ]; then if [ -x "$REPO/.venv/bin/python" ]; then PY="$REPO/.venv/bin/python"; else PY="$(command -v python3)"; fi; fi
log() { echo "[e2e] $*" >&2; }
t0=$(date +%s)

rm -rf "$OUT" && mkdir -p "$OUT"
log "tools (idempotent install)"
eval "$("$HERE/scripts/install-code-server.sh")"
log "code-server $(PATH="$(dirname "$NODE24"):$PATH" "$CODE_SERVER" --version | head -n1)"

log "package the extension"
cd "$HERE"
[ -d node_modules ] || npm ci --no-audit --no-fund >&2
npm run package --silent >&2
VSIX="$HERE/dist-vsix/stark-lsp.vsix"

WORK="$(mktemp -d /tmp/stark-e2e.XXXXXX)"
WS="$WORK/workspace"; CS_DATA="$WORK/code-server-data"; CS_EXT="$WORK/extensions"
mkdir -p "$WS/.vscode" "$CS_DATA/User" "$CS_EXT"
cs() { PATH="$(dirname "$NODE24"):$PATH" "$CODE_SERVER" --user-data-dir "$CS_DATA" --extensions-dir "$CS_EXT" "$@"; }

log "install the .vsix into code-server"
cs --install-extension "$VSIX" >&2
cs --list-extensions --show-versions | tee "$OUT/extensions.txt" >&2

SAMPLE="${STARK_E2E_SAMPLE:-$REPO/samples/mistuned/row_softmax.py}"
[ -f "$SAMPLE" ] || SAMPLE="$HERE/test/e2e/fixture/scale_add.py"
HARNESS="${SAMPLE%.py}.harness.py"
cp "$SAMPLE" "$WS/"; [ -f "$HARNESS" ] && cp "$HARNESS" "$WS/"
FILE="$(basename "$SAMPLE")"
log "workspace $WS with $FILE ($BACKEND backend, budget $BUDGET)"

SERVER_CMD='[]'
if [ "$BACKEND" = fake ]; then
  SERVER_CMD="[\"$PY\", \"-m\", \"stark_lsp\", \"serve\", \"--backend\", \"stark_lsp.server.fake_backend:FakeBackend\"]"
fi
cat > "$WS/.vscode/settings.json" <<JSON
{
  "stark.python": "$PY",
  "stark.server.command": $SERVER_CMD,
  "stark.llm": "builtin",
  "stark.budget": $BUDGET,
  "stark.policy": "stark",
  "stark.evaluation.device": "cpu",
  "stark.evaluation.workers": 1
}
JSON
cat > "$CS_DATA/User/settings.json" <<'JSON'
{
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "telemetry.telemetryLevel": "off",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "update.mode": "none",
  "security.workspace.trust.enabled": false,
  "window.restoreWindows": "none",
  "editor.hover.delay": 300,
  "workbench.secondarySideBar.defaultVisibility": "hidden",
  "chat.disableAIFeatures": true
}
JSON

PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
REPORT="$OUT/report.json"
log "start code-server on 127.0.0.1:$PORT"
TRITON_INTERPRET=1 STARK_SMALL=1 STARK_FAKE_DELAY=0.05 \
STARK_E2E_REPORT="$REPORT" STARK_E2E_FILE="$WS/$FILE" STARK_E2E_SEARCH_S="$TIMEOUT_S" \
PATH="$(dirname "$NODE24"):$PATH" \
  setsid "$CODE_SERVER" --user-data-dir "$CS_DATA" --extensions-dir "$CS_EXT" \
    --bind-addr "127.0.0.1:$PORT" --auth none --disable-workspace-trust --disable-telemetry "$WS" \
  > "$OUT/code-server.log" 2>&1 &
CS_PID=$!
cleanup() {
  kill -- -"$CS_PID" 2>/dev/null || true
  cp -r "$CS_DATA/logs" "$OUT/code-server-logs" 2>/dev/null || true
  cp "$WS/$FILE" "$OUT/$FILE.after" 2>/dev/null || true
  [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
for _ in $(seq 1 120); do
  curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  kill -0 "$CS_PID" 2>/dev/null || { log "code-server exited"; tail -20 "$OUT/code-server.log" >&2; exit 1; }
  sleep 0.5
done
log "code-server up after $(( $(date +%s) - t0 )) s"

rc=0
node "$HERE/test/e2e/drive.mjs" --url "http://127.0.0.1:$PORT/?folder=$WS" --report "$REPORT" --out "$OUT" \
  --chromium "$CHROMIUM" --timeout-s "$TIMEOUT_S" --tmp "$WORK" || rc=$?
log "report: $REPORT; screenshots: $OUT/*.png; total $(( $(date +%s) - t0 )) s"
exit "$rc"
