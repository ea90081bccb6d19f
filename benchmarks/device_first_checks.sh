#!/bin/bash
# On a GPU machine (the device tool's, from the repository's root), in one command of under 10 minutes:
# what changed on the CPU since the last GPU session and has never run on a GPU, then the two open
# measurements that need little time. Each step is bounded; everything lands in $OUT (or /tmp/first).
#   1. the judge's GPU tests of session 27's review (a load_inline source under the gate, the launch
#      rule's profiler names) and a real load_inline evaluation;
#   2. the CUDA-graph move on launch-bound models (benchmarks/launch_bound/, compiled_seed.py --graph);
#   3. session 28's new templates and switches through their tests on the GPU;
#   4. the root against eager on an idle GPU with the candidate sandbox as usual and with
#      STARK_SANDBOX=none (is the 1.6 % the sandbox's?), one round each, on three level-2 tasks.
# Wheels the machine lacks are installed from .whl/ when it is there (carry [".whl"]).
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
fi
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 STARK_CACHE_DIR=${STARK_CACHE_DIR:-/tmp/stark-cache}
O=${OUT:-/tmp/first}; mkdir -p "$O"
git rev-parse --short HEAD > "$O/commit" 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$O/gpu.txt" 2>&1
timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_evaluator_attacks_review27.py > "$O/review27.txt" 2>&1
timeout 60 python3 -m stark_lsp eval samples/kernelbench/relu.py samples/kernelbench/relu_inline_new.py > "$O/inline.txt" 2>&1
timeout 120 python3 benchmarks/compiled_seed.py --graph --json "$O/launch_bound.json" benchmarks/launch_bound/*.py \
  > "$O/launch_bound.txt" 2>&1
# the templates and switches written on the CPU in session 28 (attention, cross-entropy, the MLP start, the
# CUDA-graph switch of the team's own candidates): their tests on the GPU
timeout 110 python3 -m pytest -q -p no:cacheprovider -x tests/test_cuda_graph_switch.py tests/test_fusion_mlp.py \
  tests/test_kb_attention.py > "$O/new_templates.txt" 2>&1
L2=benchmarks/kernelbench/level2
for mode in ${BIAS_MODES-sandbox none}; do  # BIAS_MODES= skips step 4
  if [ $mode = none ]; then export STARK_SANDBOX=none; fi
  timeout 70 python3 benchmarks/root_vs_reference.py --rounds 1 --json "$O/bias_$mode.json" \
    $L2/1_Conv2D_ReLU_BiasAdd.py $L2/12_Gemm_Multiply_LeakyReLU.py $L2/45_Gemm_Sigmoid_LogSumExp.py > "$O/bias_$mode.txt" 2>&1
done
unset STARK_SANDBOX
tail -3 "$O/review27.txt"; grep -E "speedup|verdict|status" "$O/inline.txt" | head -3; tail -6 "$O/launch_bound.txt"
tail -2 "$O/new_templates.txt" "$O/bias_sandbox.txt" "$O/bias_none.txt"
