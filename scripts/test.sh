#!/usr/bin/env bash
# Run every test: the Python suite (CPU; Triton interpreter), then the VS Code
# client's lint, type-check, unit tests and packaging, then the end-to-end test
# in a real VS Code (code-server + headless Chromium).
#   scripts/test.sh             # everything
#   STARK_TEST_E2E=0 scripts/test.sh   # skip the code-server end-to-end test
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${STARK_PYTHON:-$PWD/.venv/bin/python}
export STARK_PYTHON=$PY
mkdir -p out
"$PY" -m pytest -q -p no:cacheprovider --timeout 900 tests "$@"
rc=$?
if [ $rc -eq 5 ]; then echo "test.sh: pytest collected no tests: failing"; exit 1; fi
if [ $rc -ne 0 ]; then echo "test.sh: pytest failed ($rc)"; exit $rc; fi
# the VS Code client's tests run on the pinned Node 24 (scripts/constraints.txt), installed once
# into $STARK_TOOLS (default ~/.cache/stark-lsp/tools) whether or not the machine has a Node
echo "test.sh: Node 24 for the VS Code client (scripts/tools.sh; installs it on first use)"
NODE24="$(bash scripts/tools.sh node)" || { echo "test.sh: could not install Node 24 (see above): the VS Code client was not tested"; exit 1; }
export PATH="$(dirname "$NODE24"):$PATH"
echo "test.sh: node $(node -v), npm $(npm -v) from $(dirname "$NODE24")"
bash vscode-client/scripts/ci.sh || { echo "test.sh: vscode-client CI failed"; exit 1; }
if [ "${STARK_TEST_E2E:-1}" = 1 ]; then
  bash vscode-client/scripts/e2e.sh || { echo "test.sh: VS Code end-to-end test failed"; exit 1; }
fi
echo "test.sh: all tests passed"
