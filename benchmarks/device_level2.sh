#!/bin/bash
# On a GPU machine (the device tool's, from the repository's root): one batch of KernelBench level 2
# (or WHAT=level1 / policies; it resumes from benchmarks/results/kb-$WHAT: its bench.json is
# committed, its trees travel where they were carried)
# with the evaluator's trace (STARK_EVAL_TRACE: timed processes, the gate's exclusive holds, the
# judges' GPU memory), GPU utilisation and memory (nvidia-smi, 1 s) and the load average (5 s); with
# LATENCY=1 then the turnaround (eval_latency.py). Everything lands in /tmp/w, tarred into $OUT/w.tgz.
#   BATCH_ARGS="--batch-seconds 300 --run-seconds 150 --hard-seconds 390 --jobs 8" bash benchmarks/device_level2.sh
# Wheels the machine lacks (pytest-timeout and the like) are installed from .whl/ when it is there.
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null
fi
export PYTHONPATH=$PWD:/tmp/site STARK_CACHE_DIR=${STARK_CACHE_DIR:-/tmp/stark-cache} PYTHONUNBUFFERED=1
W=/tmp/w; rm -rf $W; mkdir -p $W  # a warm machine keeps /tmp: the trace, samples and runs are this call's alone
# a batch resumes the level where earlier ones left it: benchmarks/results/kb-<what> (committed), or
# bench-results/kb-<what> carried from this machine
WHAT=${WHAT:-level2}
if [ -d benchmarks/results/kb-$WHAT ]; then cp -r benchmarks/results/kb-$WHAT $W/kb;  # committed: resumes from it
elif [ -d bench-results/kb-$WHAT ]; then cp -r bench-results/kb-$WHAT $W/kb; fi
export STARK_EVAL_TRACE=$W/trace.jsonl
git rev-parse --short HEAD > $W/commit 2>/dev/null; git status --short > $W/status
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -lms 1000 > $W/smi.csv 2>&1 &
SMI=$!
( while true; do echo "$(date +%s) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 5; done ) > $W/load.txt &
LOAD=$!
python3 benchmarks/kernelbench_runs.py $WHAT --out $W/kb ${BATCH_ARGS:---batch-seconds 300 --run-seconds 150 --hard-seconds 390} > $W/bench.log 2>&1
kill $SMI $LOAD
unset STARK_EVAL_TRACE
if [ -n "$LATENCY" ]; then
  timeout 150 python3 benchmarks/eval_latency.py --n 3 --repeat 1 --no-inline --think 2 --only cuda,triton > $W/latency.log 2>&1
fi
tail -5 $W/bench.log
tail -8 $W/latency.log 2>/dev/null
python3 benchmarks/device_trace.py $W 2>/dev/null
(cd /tmp && tar czf ${OUT:-/tmp}/w.tgz w)
