#!/usr/bin/env bash
# End-to-end test in a real VS Code (code-server) driven by headless chromium
# with real keystrokes and clicks (test/e2e/drive.mjs): nothing in the
# extension drives itself.
#
#   1. installs code-server (Node 24) and chromium if needed (install-code-server.sh)
#   2. packages the extension (.vsix) and installs it into a fresh code-server profile
#   3. makes a temp workspace: Triton samples (with and without a harness), a CUDA
#      kernel, and a kernel whose search tree already has 100+ nodes; for issue 25's
#      items a 20,000-line .cu, the Triton package sample (a helper module), a kernel
#      with a syntax error and one with a finished search (to delete from a terminal)
#   4. starts code-server and runs the driver: optimize, hover, tree, apply; cancel
#      from the progress notification; the GPU-less CUDA refusal; rename and delete
#      mid-search; the harness quick fix, fill it in, optimize; the tree at 100+ nodes;
#      typing in a 20,000-line .cu, a helper module, "Optimize" disabled with its reason,
#      a kernel removed from a terminal and saved again
#   5. screenshots, the driver's report and the logs go to out/e2e/ at the repository root
#      (or $STARK_E2E_OUT)
#
# Environment:
#   STARK_PYTHON        interpreter with stark_lsp (default: the repository's .venv/bin/python, else python3)
#   STARK_E2E_BACKEND   real (default: built-in team, Triton interpreter) or fake (the tests'
#                       stand-in evaluator and agents, tests/fake_backend.py)
#   STARK_E2E_BUDGET    search budget (default 3)
#   STARK_E2E_ONLY      run only these scenarios (comma-separated, see drive.mjs)
#   STARK_E2E_TREE      attempts in big_tree.py's search tree (default 120)
#   STARK_E2E_TREE_FAIL the share of them that fail (default 0; the fake evaluator's STARK_FAKE_FAIL_RATE)
#   STARK_E2E_TIMEOUT_S how long the whole run may take (default 1800)
#   STARK_E2E_OUT       where the report, screenshots and logs go (default out/e2e at the repository root)
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
OUT="${STARK_E2E_OUT:-$REPO/out/e2e}"
BACKEND="${STARK_E2E_BACKEND:-real}"
BUDGET="${STARK_E2E_BUDGET:-3}"
TIMEOUT_S="${STARK_E2E_TIMEOUT_S:-1800}"
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

M="$REPO/samples/mistuned"
cp "$M/row_softmax.py" "$M/row_softmax.harness.py" "$WS/"
for name in cancel_me moving doomed big_tree; do
  cp "$M/swish_add.py" "$WS/$name.py"; cp "$M/swish_add.harness.py" "$WS/$name.harness.py"
done
cp "$M/swish_add.py" "$WS/fill_me.py"   # no harness: the quick fix makes one
cp "$REPO/samples/cuda/softmax_rows.cu" "$REPO/samples/cuda/softmax_rows.harness.py" "$WS/"
# issue 25's items: the Triton package sample (rowops/helpers.py is a helper module), a kernel whose
# saved file has a syntax error, a kernel with a finished search (gone.py, removed from a terminal)
cp -r "$REPO/samples/triton_pkg" "$WS/triton_pkg" && rm -rf "$WS/triton_pkg/rowops/__pycache__"
sed 's/^    out = torch.empty_like(x)$/    out = torch.empty_like(x/' "$M/swish_add.py" > "$WS/broken.py"
grep -q '^    out = torch.empty_like(x$' "$WS/broken.py" || { log "broken.py has no syntax error"; exit 1; }
for name in broken gone; do cp "$M/swish_add.harness.py" "$WS/$name.harness.py"; done
cp "$M/swish_add.py" "$WS/gone.py"
log "workspace $WS ($BACKEND backend, budget $BUDGET)"
export STARK_E2E_TREE="${STARK_E2E_TREE:-120}"  # drive.mjs reads it too
log "a search tree of $STARK_E2E_TREE attempts for big_tree.py, 3 for gone.py (the tests' fake evaluator and team); big.cu (20,000 lines)"
STARK_FAKE_GPU=0 STARK_FAKE_FAIL_RATE="${STARK_E2E_TREE_FAIL:-0}" PYTHONPATH="$REPO" "$PY" - "$WS" <<'PY'
import os
import sys
from pathlib import Path
from stark_lsp.search import Search, SearchConfig, TreeStore
from stark_lsp.tasks.spec import load_task
from tests.fake_backend import FakeEvaluator, fake_team
from tests.test_server_big_file import big_cuda
ws = Path(sys.argv[1])
store = TreeStore.open(ws / ".stark" / "tree.sqlite")
for name, budget in (("big_tree.py", int(os.environ["STARK_E2E_TREE"])), ("gone.py", 3)):
    task = load_task(ws / name)
    Search(task, store, FakeEvaluator(delay=0), fake_team(), SearchConfig(budget=budget, concurrency=1)).run()
    print(f"{name}: {len(store.nodes(task.task_id()))} nodes", file=sys.stderr)
(ws / "big.cu").write_text(big_cuda(20_000))  # the kernels of the tests' big file: scale_kernel_0..
PY

SERVER_CMD='[]'
if [ "$BACKEND" = fake ]; then
  SERVER_CMD="[\"$PY\", \"-m\", \"stark_lsp\", \"serve\", \"--backend\", \"$REPO/tests/fake_backend.py:FakeBackend\"]"
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
  "editor.quickSuggestions": {"other": false, "comments": false, "strings": false},
  "editor.suggestOnTriggerCharacters": false,
  "editor.autoClosingBrackets": "never",
  "editor.autoClosingQuotes": "never",
  "editor.acceptSuggestionOnEnter": "off",
  "explorer.confirmDelete": false,
  "files.enableTrash": false,
  "files.autoSave": "off",
  "window.confirmBeforeClose": "never",
  "workbench.secondarySideBar.defaultVisibility": "hidden",
  "chat.disableAIFeatures": true
}
JSON

PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
REPORT="$OUT/report.json"
log "start code-server on 127.0.0.1:$PORT"
TRITON_INTERPRET=1 STARK_SMALL=1 STARK_FAKE_DELAY=0.3 PYTHONPATH="$REPO" \
PATH="$(dirname "$NODE24"):$PATH" \
  setsid "$CODE_SERVER" --user-data-dir "$CS_DATA" --extensions-dir "$CS_EXT" \
    --bind-addr "127.0.0.1:$PORT" --auth none --disable-workspace-trust --disable-telemetry "$WS" \
  > "$OUT/code-server.log" 2>&1 &
CS_PID=$!
cleanup() {
  kill -- -"$CS_PID" 2>/dev/null || true
  cp -r "$CS_DATA/logs" "$OUT/code-server-logs" 2>/dev/null || true
  cp "$WS/row_softmax.py" "$OUT/row_softmax.py.after" 2>/dev/null || true
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
node "$HERE/test/e2e/drive.mjs" --url "http://127.0.0.1:$PORT/?folder=$WS" --workspace "$WS" --report "$REPORT" \
  --out "$OUT" --chromium "$CHROMIUM" --timeout-s "$TIMEOUT_S" --tmp "$WORK" --only "${STARK_E2E_ONLY:-}" || rc=$?
log "report: $REPORT; screenshots: $OUT/*.png; total $(( $(date +%s) - t0 )) s"
exit "$rc"
