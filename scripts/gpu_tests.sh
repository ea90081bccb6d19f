#!/usr/bin/env bash
# Run the GPU checks on a machine with a CUDA GPU (the device machine):
#   scripts/gpu_tests.sh [OUTDIR]
# The evaluator's tests (CPU and GPU ones), the harness templates on the CUDA
# samples, the agents' task and hardware cards from a real evaluation (the
# printed prompts), `stark eval` on each sample format,
# the built-in team's search on the mistuned samples, and the evaluation
# latency benchmark. Output goes to OUTDIR (default out/gpu).
# The built-in team's Triton templates (tests/test_fusion_gpu.py) run last; in a
# 10-minute command run them alone, a group at a time: scripts/gpu_fusion_tests.sh GROUP.
set -uo pipefail
out=${1:-out/gpu}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export STARK_CACHE_DIR=${STARK_CACHE_DIR:-/tmp/stark-cache}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv | tee "$out/gpu.txt"
python3 -m pytest -q -p no:cacheprovider tests/test_evaluator.py tests/test_evaluator_gpu.py tests/test_gpu_lock.py \
  tests/test_evaluator_attacks.py tests/test_evaluator_attacks_round3.py tests/test_evaluator_racing.py 2>&1 | tee "$out/pytest.txt"
# the editor's harness templates, generated for each CUDA sample, built and run (no launch out of bounds)
python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_harness_template.py 2>&1 | tee "$out/pytest_templates.txt"
python3 -m pytest -q -s -p no:cacheprovider tests/test_agent_cards_gpu.py 2>&1 | tee "$out/agent_cards.txt"
for t in "samples/cuda/softmax_rows.cu" "samples/triton/softmax.py" "samples/kernelbench/relu.py samples/kernelbench/relu_triton_new.py"; do
  python3 -m stark_lsp eval $t --compile-baseline 2>&1 | tee -a "$out/eval_samples.txt"
done
python3 benchmarks/optimize_samples.py --budget "${BUDGET:-30}" --json "$out/optimize.json" 2>&1 | tee "$out/optimize.txt"
python3 benchmarks/eval_latency.py --json "$out/eval_latency.json" 2>&1 | tee "$out/eval_latency.txt"
# the CLI on a GPU: labelled speedups without the CPU note, a CUDA search that runs (exit 0: it beat the
# mistuned kernel; 3: nothing did), and the refusals that do not depend on the machine
python3 -m pytest -q -p no:cacheprovider tests/test_cli_refusals.py 2>&1 | tee "$out/cli_refusals.txt"
ws=$(mktemp -d) && mkdir "$ws/.git" && cp samples/mistuned/row_sum.cu samples/mistuned/row_sum.harness.py "$ws/"
(cd "$ws" && python3 -m stark_lsp optimize row_sum.cu --budget 4; echo "exit $?"; python3 -m stark_lsp show row_sum.cu) \
  2>&1 | tee "$out/cli_optimize_cuda.txt"
for g in level1 level2 variants ops; do
  scripts/gpu_fusion_tests.sh "$g" "$out"
done
