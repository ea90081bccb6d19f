"""Duplicates in a real search: the engine and the built-in team on the
mistuned Triton samples, judged by a cost model instead of a GPU.

``ModelEvaluator`` reads the tunables of a candidate (the built-in team's own
finder) and prices them: each tunable costs more the further it is (in log2)
from a per-name optimum; a block over 2048 elements fails with a shared-memory
message and 16 warps on a block under 256 elements gives wrong results, so
the Debug agent is exercised too. Deterministic: the same source, the same
verdict.

Run as a script for the before/after figures:

    python tests/test_dedup_search.py [--seeds 5] [--budget 30]
"""

from __future__ import annotations

import math
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stark_lsp.agents.builtin import make_builtin_team  # noqa: E402
from stark_lsp.agents.builtin.tunables import find_tunables  # noqa: E402
from stark_lsp.evaluate.result import CompileReport, EvalResult, KernelResources, Runtime, Status, Timing  # noqa: E402
from stark_lsp.search import Search, SearchConfig, TreeStore  # noqa: E402
from stark_lsp.search.node import ABANDONED, AGENT_ERROR, ROOT  # noqa: E402
from stark_lsp.tasks.spec import load_task  # noqa: E402

SAMPLES = Path(__file__).resolve().parent.parent / "samples" / "mistuned"
OPTIMUM = {"BLOCK_SIZE": 1024, "BLOCK": 512, "num_warps": 4, "num_stages": 3}


def _timing(ms: float) -> Timing:
    return Timing(median_ms=ms, mean_ms=ms, min_ms=ms, max_ms=ms, iqr_ms=0.0, std_ms=0.0, reps=10)


class ModelEvaluator:
    """Thread-safe; counts calls and keeps every source it was given."""

    def __init__(self) -> None:
        self.sources: list[str] = []
        self._lock = threading.Lock()

    def hardware(self) -> str:
        return "cost model"

    def evaluate(self, task, source, options=None) -> EvalResult:
        with self._lock:
            self.sources.append(source)
        values = {t.name: t.value for t in find_tunables(source, "python")}
        block = max((v for k, v in values.items() if k.startswith("BLOCK") and isinstance(v, int)), default=1024)
        warps = values.get("num_warps", 4)
        if block > 2048:
            return EvalResult(Status.COMPILE_ERROR, "out of resource: shared memory, Required: 262144, Hardware limit: 232448",
                              compile=CompileReport(ok=False, log="out of resource: shared memory"))
        if warps == 16 and block < 256:
            return EvalResult(Status.INCORRECT, "trial 1 (seed 0): max abs error 3.1 (allclose failed)")
        ms = 1.0
        for name, opt in OPTIMUM.items():
            v = values.get(name)
            if isinstance(v, int) and v > 0:
                ms *= 1.0 + 0.35 * abs(math.log2(v) - math.log2(opt))
        ref = 2.0
        return EvalResult(Status.OK, runtime=Runtime(device="cost model", is_gpu=True, candidate=_timing(ms),
                                                     reference=_timing(ref), speedup=ref / ms),
                          resources=[KernelResources("k", registers=32, shared_bytes=0, spill_stores=0, spill_loads=0)])


def run_search(sample: str, store_dir: Path, seed: int, budget: int = 30, concurrency: int = 2, team=None):
    """(attempt nodes, evaluator): one budget-``budget`` search with the built-in team."""
    task = load_task(SAMPLES / sample)
    ev = ModelEvaluator()
    with TreeStore.open(store_dir / f"{sample}-{seed}.sqlite") as store:
        Search(task, store, ev, team or make_builtin_team(),
               SearchConfig(budget=budget, seed=seed, concurrency=concurrency, retime_top=0)).run()
        nodes = [n for n in store.nodes(task.task_id()) if n.kind != ROOT and n.status != ABANDONED]
    return nodes, ev


def figures(nodes) -> dict[str, int]:
    return {
        "attempts": len(nodes),
        "spent": sum(1 for n in nodes if n.spends_budget),
        "duplicates": sum(1 for n in nodes if n.duplicate_of is not None),
        "agent_errors": sum(1 for n in nodes if n.status == AGENT_ERROR),
        "evaluated": sum(1 for n in nodes if n.result is not None and n.duplicate_of is None),
    }


@pytest.mark.timeout(120)
@pytest.mark.parametrize("sample", ["swish_add.py", "row_softmax.py"])
def test_sequential_search_never_evaluates_a_source_twice(sample, tmp_path):
    # one attempt at a time: every agent sees every source in the tree, so the
    # built-in team proposes nothing the tree holds and there is no duplicate
    for seed in range(3):
        nodes, ev = run_search(sample, tmp_path, seed, concurrency=1)
        f = figures(nodes)
        assert f["spent"] == 30  # "nothing new to try" answers are free, on top
        assert f["duplicates"] == 0, [(n.id, n.summary, n.duplicate_of) for n in nodes if n.duplicate_of]
        assert len(ev.sources) == len(set(ev.sources))


@pytest.mark.timeout(120)
def test_concurrent_search_keeps_duplicates_rare(tmp_path):
    # two attempts in flight: two planners may still pick the same move before
    # either source exists; that is the only way left to make a duplicate
    total = sum(figures(run_search("swish_add.py", tmp_path, seed)[0])["duplicates"] for seed in range(3))
    assert total <= 3


def main(argv: list[str]) -> int:
    import argparse
    import tempfile

    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budget", type=int, default=30)
    ap.add_argument("--concurrency", type=int, default=2)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for sample in ("swish_add.py", "row_softmax.py"):
            rows = [figures(run_search(sample, Path(tmp), s, args.budget, args.concurrency)[0]) for s in range(args.seeds)]
            dups = [r["duplicates"] for r in rows]
            errs = [r["agent_errors"] for r in rows]
            ev = [r["evaluated"] for r in rows]
            print(f"{sample:16s} budget {args.budget} concurrency {args.concurrency}: duplicates {dups} "
                  f"(mean {sum(dups) / len(dups):.1f}), agent errors {errs}, evaluated {ev}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
