#!/usr/bin/env bash
# CI for the VS Code client: install, lint, type-check, unit tests, package.
# Runs with the system Node (>= 20). Usage: vscode-client/scripts/ci.sh
set -euo pipefail
cd "$(dirname "$0")/.."

step() { echo "== $*"; }

step "npm ci"
npm ci --no-audit --no-fund
step "lint (eslint)"
npx eslint .
step "type-check (tsc --noEmit)"
npx tsc --noEmit -p .
step "unit tests (mocha, stubbed vscode)"
npm test --silent
step "package (.vsix)"
npm run package --silent
ls -l dist-vsix/stark-lsp.vsix
