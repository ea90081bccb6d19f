#!/usr/bin/env bash
# Verify the Nsight Compute path on the GPU machine, in one command:
#   scripts/ncu_check.sh [OUTDIR]
# Profiles the root kernel of samples/triton/softmax.py and
# samples/cuda/softmax_rows.cu the way `stark optimize --profile-top K` does
# (ncu --clock-control none ... around `python -m stark_lsp.profile.run_once`),
# prints each parsed KernelProfile and the line the Plan agent would see, and
# keeps ncu's raw CSV in OUTDIR (default out/ncu). Then runs the CPU tests of
# the profile package. Exit status: non-zero if a sample gave no profile.
set -uo pipefail
out=${1:-out/ncu}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export STARK_CACHE_DIR=${STARK_CACHE_DIR:-/tmp/stark-cache}
py=${PYTHON:-python3}
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv 2>&1 | tee "$out/gpu.txt"
"$py" -m stark_lsp.profile.check --out "$out" 2>&1 | tee "$out/check.txt"
status=${PIPESTATUS[0]}
# as an LLM-written candidate is profiled: in the sandbox, as nobody (where the driver keeps the
# counters for admins, this says so as the profile's reason)
"$py" -m stark_lsp.profile.check --out "$out/required" --sandbox required samples/triton/softmax.py 2>&1 \
  | tee "$out/check_required.txt" | grep -E "^(sandbox|FAILED|Plan agent|[0-9]+/[0-9]+ profiled)"
"$py" -m pytest -q -p no:cacheprovider tests/test_profile_ncu.py tests/test_profile_search.py 2>&1 | tail -3 | tee "$out/pytest.txt"
exit "$status"
