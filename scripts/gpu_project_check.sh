#!/usr/bin/env bash
# GPU end-to-end checks for kernels that live in projects (issue 15), on the device machine:
#   bash scripts/gpu_project_check.sh
# About 5 minutes (each step has a hard limit; together under 8 minutes). Writes to $OUT when it
# is set, else out/gpu_project:
#   gpu.txt                  the GPU
#   pytest.txt               tests/test_project_build*.py on the GPU (the sample project runs: status ok)
#   eval_samples.txt         `stark eval` of samples/project/src/l2norm.cu and samples/triton_pkg/rowops/rms_norm.py
#   optimize_project.txt     `stark optimize` of the CUDA project sample (two units, compile_commands.json), then `stark show`
#   optimize_triton_pkg.txt  `stark optimize` of the Triton package sample (relative imports), then `stark show`
#   editor.txt               both samples optimized from the editor: `stark serve` driven by pytest-lsp
#                            (tests/test_server_projects_gpu.py; needs .whl/ with pygls and pytest-lsp, see below)
#   eval_latency.txt/.json   the one-file CUDA path, the two-unit project path, the header-rebuild figure
# Exit status: 0 when every step did what it should, else the number of steps that did not.
# Wheels the image lacks (pygls, lsprotocol, pytest-lsp, ...): ../shared/device/fetch-wheels.sh NAME...,
# then carry .whl; this script installs them into /tmp/site when .whl/ exists.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
out=${OUT:-out/gpu_project}
mkdir -p "$out" && out=$(cd "$out" && pwd)  # absolute: the searches run in a workspace elsewhere
PY=${STARK_PYTHON:-python3}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export STARK_CACHE_DIR=$(mktemp -d)  # a fresh cache: first builds are real builds
failed=0
step() {  # step NAME LIMIT_S CMD...: run with a hard limit, its output to $out/NAME.txt
  local name=$1 limit=$2; shift 2
  echo "== $name (limit ${limit}s): $*" | tee -a "$out/$name.txt"
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$out/$name.txt"
  local rc=${PIPESTATUS[0]}
  echo "== $name: exit $rc" | tee -a "$out/$name.txt"
  return "$rc"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv 2>&1 | tee "$out/gpu.txt"

step pytest 100 "$PY" -m pytest -q -p no:cacheprovider tests/test_project_build.py tests/test_project_build_pure.py \
  || failed=$((failed + 1))
step eval_samples 40 "$PY" -m stark_lsp eval samples/project/src/l2norm.cu --compile-baseline || failed=$((failed + 1))
step eval_samples 35 "$PY" -m stark_lsp eval samples/triton_pkg/rowops/rms_norm.py --compile-baseline || failed=$((failed + 1))

# optimize from the CLI, each in a copy of the sample in its own workspace (.git marks the root)
ws=$(mktemp -d) && mkdir "$ws/.git" && cp -r samples/project samples/triton_pkg "$ws/"
opt() {  # opt NAME TASK: exit 0 (beat the kernel) and 3 (nothing better) both mean the search ran
  local name=$1 task=$2 rc
  (cd "$ws" && step "$name" 85 "$PY" -m stark_lsp optimize "$task" --budget 8 --wall-time 55)
  rc=$?
  (cd "$ws" && timeout 20 "$PY" -m stark_lsp show "$task" 2>&1 | tee -a "$out/$name.txt")
  cp "$ws/${task%.*}.best.${task##*.}" "$out/" 2>/dev/null  # the best kernel, when one beat the original
  [ "$rc" = 0 ] || [ "$rc" = 3 ]
}
opt optimize_project project/src/l2norm.cu || failed=$((failed + 1))
opt optimize_triton_pkg triton_pkg/rowops/rms_norm.py || failed=$((failed + 1))

step editor 300 "$PY" -m pytest -q -p no:cacheprovider -rfE tests/test_server_projects_gpu.py || failed=$((failed + 1))

step eval_latency 90 "$PY" benchmarks/eval_latency.py --only cuda,cuda_project --n 5 --no-inline \
  --json "$out/eval_latency.json" || failed=$((failed + 1))
echo "gpu_project_check: $failed step(s) failed; outputs in $out"
exit "$failed"
