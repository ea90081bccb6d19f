#!/usr/bin/env bash
# The built-in team's Triton templates on a GPU (tests/test_fusion_gpu.py), in groups that each fit
# a 10-minute command:
#   scripts/gpu_fusion_tests.sh [level1|level2|variants|ops|matmul|all] [OUTDIR]
# level1: every lowering template on KernelBench level-1 models at their own sizes (evaluator);
# level2: the fused level-2 test models at their own sizes; variants: fused starting points, the
# linear-layer-with-epilogue matmul, training mode; ops: every fusion op case compiled for the GPU;
# matmul: the matmul template on level-1 products at full size and sizes specialized to 1 (tests/test_kb_matmul.py).
# level1/level2 also print each model's first-candidate speedup over eager (a hint: 10 timed calls, no search).
# GROUP may also be a pytest -k expression, e.g. 'test_kernelbench and (Matrix_vector or large_K)' (output: fusion_k.txt).
set -uo pipefail
group=${1:-all}
out=${2:-out/gpu}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export STARK_CACHE_DIR=${STARK_CACHE_DIR:-/tmp/stark-cache}
case "$group" in
  level1) sel="test_kernelbench and not level2_" ;;
  level2) sel="test_kernelbench and level2_" ;;
  variants) sel="test_variants" ;;
  ops) sel="test_ops_on_the_gpu" ;;
  matmul) python3 -m pytest -q -s -p no:cacheprovider -rs tests/test_kb_matmul.py -k gpu 2>&1 | tee "$out/fusion_matmul.txt"
          exit "${PIPESTATUS[0]}" ;;
  all) sel="" ;;
  "") echo "usage: $0 [level1|level2|variants|ops|matmul|all|'PYTEST -k EXPRESSION'] [OUTDIR]" >&2; exit 2 ;;
  *) sel="$group"; group=k ;;
esac
python3 -m pytest -q -s -p no:cacheprovider -rs tests/test_fusion_gpu.py ${sel:+-k "$sel"} 2>&1 | tee "$out/fusion_$group.txt"
exit "${PIPESTATUS[0]}"
