"""``stark optimize TASK``: search for a faster kernel and write the best one out."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from stark_lsp.commands.interrupt import on_interrupt

NAME = "optimize"
HELP = "search for a faster kernel: Plan, Code and Debug agents over a tree of evaluated candidates"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from stark_lsp.search.policies import POLICY_NAMES

    p.add_argument("task", help="the task: a KernelBench .py, a .cu kernel, or a Triton .py")
    p.add_argument("--harness", help="the harness file (default: <kernel>.harness.py beside the kernel)")
    p.add_argument("--budget", type=int, default=30, help="attempts: plan+code, or one debug (default 30)")
    p.add_argument("--policy", default="stark", choices=POLICY_NAMES, help="search policy (default stark)")
    p.add_argument("--epsilon", type=float, default=0.35, help="stark: exploration probability (default 0.35)")
    p.add_argument("--n-root", type=int, default=5, help="stark: most children of the root (default 5)")
    p.add_argument("--n-child", type=int, default=3,
                   help="stark: a node with more children than this, all failed, is pruned (default 3)")
    p.add_argument("--leaderboard", type=int, default=5, help="top nodes shown to the Plan agent (default 5)")
    p.add_argument("--llm", default="builtin", choices=["builtin", "openai"],
                   help="the agents: built-in heuristics, or an OpenAI-compatible endpoint (key in OPENAI_API_KEY)")
    p.add_argument("--model", help="model name for --llm openai")
    p.add_argument("--base-url", help="endpoint for --llm openai")
    p.add_argument("--workers", type=int, default=1,
                   help="evaluator worker processes (default 1); with --cluster and no GPU: CPU actors")
    p.add_argument("--cluster", metavar="auto|ray://HOST:PORT",
                   help="evaluate on a Ray cluster, one actor per GPU (auto: RAY_ADDRESS, else a local one; "
                        "needs pip install 'stark-lsp[ray]')")
    p.add_argument("--concurrency", type=int,
                   help="attempts in flight at once (default 2; with --cluster, one more than the actors)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--wall-time", type=float, help="stop starting attempts after this many seconds")
    p.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"])
    p.add_argument("--store", help="the store directory (default: .stark in the workspace root)")
    p.add_argument("--fresh", action="store_true", help="delete this task's tree first and start over")
    p.add_argument("--out", help="where to write the best kernel (default: <stem>.best<suffix> beside the task)")
    p.add_argument("--profile-top", type=int, default=0, metavar="K",
                   help="profile the top K correct kernels with Nsight Compute (ncu) in the background and show "
                        "the figures to the Plan agent (default 0: off; needs ncu and a GPU)")


# the two expensive parts, separate so tests can swap them ---------------------
def make_evaluator(args: argparse.Namespace) -> Any:
    if getattr(args, "cluster", None):
        from stark_lsp.cluster import make_evaluator as cluster_evaluator

        return cluster_evaluator(args.cluster, device=args.device, cpu_actors=args.workers)
    from stark_lsp.evaluate.evaluator import Evaluator

    return Evaluator(workers=args.workers, device=args.device)


def make_team(args: argparse.Namespace) -> Any:
    from stark_lsp.agents.team import make_team as factory

    kwargs = {"llm": args.llm, "base_url": args.base_url, "model": args.model}
    if args.llm == "openai":
        kwargs["api_key"] = os.environ.get("OPENAI_API_KEY")
    return factory(**{k: v for k, v in kwargs.items() if v is not None})


def best_path(task: Any, out: str | None) -> Path:
    if out:
        return Path(out)
    return task.path.with_name(f"{task.path.stem}.best{task.candidate_suffix}")


def run(args: argparse.Namespace) -> int:
    from stark_lsp.agents.base import AgentError
    from stark_lsp.cluster.spec import parse_cluster
    from stark_lsp.evaluate.evaluator import EvaluatorUnavailable
    from stark_lsp.search import EvaluatorFailed, Search, SearchBusy, SearchConfig, StoreError, TreeStore
    from stark_lsp.search.lock import tree_lock
    from stark_lsp.search.policies import make_policy
    from stark_lsp.search.progress import ProgressPrinter
    from stark_lsp.search.render import table
    from stark_lsp.search.tree_store import store_path
    from stark_lsp.tasks.spec import TaskError, load_task

    try:
        task = load_task(args.task, args.harness)
    except TaskError as e:
        print(f"stark optimize: {e}", file=sys.stderr)
        return 2
    try:
        make_policy(args.policy, epsilon=args.epsilon, n_root=args.n_root, n_child=args.n_child)  # check first
        args.cluster = parse_cluster(getattr(args, "cluster", None))
        config = SearchConfig(
            budget=args.budget, policy=args.policy, epsilon=args.epsilon, n_root=args.n_root,
            n_child=args.n_child, leaderboard=args.leaderboard, concurrency=args.concurrency or 2,
            wall_time_s=args.wall_time, seed=args.seed, profile_top=max(0, getattr(args, "profile_top", 0) or 0),
        )
        path = store_path(args.store)
        store = TreeStore.open(path)
    except (ValueError, StoreError) as e:
        print(f"stark optimize: {e}", file=sys.stderr)
        return 2
    tid = task.task_id()
    cancel = threading.Event()
    previous = on_interrupt(cancel, "optimize", "aborted")
    code = 0
    try:
        if args.fresh:
            try:
                with tree_lock(path, tid):  # never under a search that is running
                    store.delete_tree(tid)
            except SearchBusy as e:
                print(f"stark optimize: {e}", file=sys.stderr)
                return 1
        try:
            team = make_team(args)
        except (ImportError, AgentError, ValueError) as e:
            print(f"stark optimize: no agent team: {e}", file=sys.stderr)
            return 2
        print(f"stark optimize: {task.path.name} ({task.kind}), policy {config.policy}, budget {config.budget}, "
              f"team {team.name}, store {path}", file=sys.stderr)
        try:
            evaluator = make_evaluator(args)
        except (ImportError, EvaluatorUnavailable) as e:
            print(f"stark optimize: {e}", file=sys.stderr)
            return 2
        if args.concurrency is None and getattr(evaluator, "placement", None) is not None:
            config.concurrency = evaluator.placement.actors + 1  # keep every actor busy while agents work
        try:
            Search(task, store, evaluator, team, config, on_progress=ProgressPrinter(sys.stderr)).run(cancel)
        except (SearchBusy, EvaluatorFailed) as e:
            print(f"stark optimize: {e}", file=sys.stderr)
            code = 1
        finally:
            close = getattr(evaluator, "close", None)
            if close:
                close()
        best = store.best(tid)
        print(table(store.nodes(tid), best.id if best else None))
        if best is None:
            print("no correct candidate: nothing written")
            return code or 1
        out = best_path(task, args.out)
        out.write_text(best.source)
        what = "the original kernel (nothing beat it)" if best.parent_id is None else f"node #{best.id}"
        root = store.root(tid)
        yours = (f"{root.runtime_ms / best.runtime_ms:.2f}x your kernel ({best.runtime_ms:.4g} ms vs {root.runtime_ms:.4g} ms); "
                 if root and root.runtime_ms and best.runtime_ms and best.parent_id is not None else "")
        print(f"best: {what}, {yours}against eager: {best.result.summary() if best.result else best.outcome()}")
        if best.retimed:
            from stark_lsp.search.retime import Retimed

            print(f"re-timed in turn with your kernel: {Retimed.from_dict(best.retimed).text()}")
        print(f"wrote {out}")
        return 130 if cancel.is_set() else code
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        store.close()
