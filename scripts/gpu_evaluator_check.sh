#!/usr/bin/env bash
# The evaluator's trust boundary on a GPU machine, in one command that fits a
# 10-minute device call:
#   scripts/gpu_evaluator_check.sh [OUTDIR]      (default $OUT, else out/gpu-evaluator)
# 1. the sandbox as this machine makes it (syscall filter, limits) and the evaluator's tests (CPU and GPU
#    attacks of every round, hung kernel, exact-name launch check, sandbox keeps the GPU) and the
#    profiler's, on the GPU (EXTRA_TESTS adds files; STEPS=tests|bench|all, default all);
# 2. eval latency (candidate turnaround per path, hung-kernel kill time, slow candidates per minute)
#    and the timing spread at 10 us, 0.1 ms and 1 ms with what a forged claim gains there;
# 3. the ncu path inside the sandbox.
# Wheels the image lacks (pytest-timeout): ../shared/device/fetch-wheels.sh pytest-timeout,
# then carry .whl; this script installs them into /tmp/site when .whl/ exists.
set -uo pipefail
out=${1:-${OUT:-out/gpu-evaluator}}
mkdir -p "$out"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
  export PYTHONPATH=/tmp/site
fi
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export STARK_CACHE_DIR=${STARK_CACHE_DIR:-/tmp/stark-cache}
steps=${STEPS:-all}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv | tee "$out/gpu.txt"
python3 -c 'from stark_lsp.evaluate.sandbox.policy import probe; print("sandbox:", probe().describe())' | tee -a "$out/gpu.txt"
if [ "$steps" != bench ]; then
  timeout "${PYTEST_S:-300}" python3 -m pytest -q -p no:cacheprovider --timeout 120 --tb=short -rfE \
    tests/test_evaluator_gpu.py tests/test_evaluator_attacks.py tests/test_evaluator_attacks_round3.py \
    tests/test_profile_ncu.py tests/test_profile_search.py \
    ${EXTRA_TESTS:-} 2>&1 | tee "$out/pytest.txt" | grep -E "^(FAILED|ERROR)|passed|failed|^E  " | tail -40
fi
if [ "$steps" != tests ]; then
  for t in benchmarks/tasks/axpy_triton.py tests/data/evaluator/add_task.py; do
    timeout 60 python3 benchmarks/protocol_cost.py "$t" --n 200 2>&1 | tee -a "$out/protocol.txt" | tail -12
  done
  timeout "${LATENCY_S:-170}" python3 benchmarks/eval_latency.py --n 5 --repeat 5 --no-inline --think 2 \
    --only "${LATENCY_ONLY:-cuda,triton,hang,slow_mix,repeat}" --json "$out/lat.json" 2>&1 | tee "$out/lat.txt" | tail -45
  timeout "${SPREAD_S:-150}" python3 benchmarks/timing_spread.py --repeat 3 --json "$out/spread.json" 2>&1 \
    | tee "$out/spread.txt" | tail -8
  timeout "${NCU_S:-60}" bash scripts/ncu_check.sh "$(mktemp -d)" 2>&1 | tail -4
fi
