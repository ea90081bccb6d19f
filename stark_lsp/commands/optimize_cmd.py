"""``stark optimize TASK``: search for a faster kernel and write the best one out.

Exit codes: 0 a verified candidate beat your kernel and was written; 3 none did
(nothing written); 2 bad input or a task this machine cannot run (CUDA without
a GPU is refused before any budget is spent); 5 the evaluator failed; 130 Ctrl-C
(143 SIGTERM, 129 SIGHUP: the same orderly stop).
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import Any

from stark_lsp import exit_codes
from stark_lsp.commands import hints, moved_tree, refusal
from stark_lsp.commands.agent_team import team_from_args
from stark_lsp.commands.arguments import (add_sandbox_argument, add_screen_argument, non_negative_int, positive_float,
                                         positive_int, url)
from stark_lsp.commands.interrupt import Interrupts
from stark_lsp.commands.overwrite import keep_previous
from stark_lsp.agents.llm.in_flight import in_flight_for_server
from stark_lsp.commands.llm_args import add_llm_arguments, token_budget
from stark_lsp.evaluate import protocol as evaluator_protocol

NAME = "optimize"
HELP = "search for a faster kernel: Plan, Code and Debug agents over a tree of evaluated candidates"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from stark_lsp.search.policies import POLICY_NAMES

    p.add_argument("task", help="the task: a KernelBench .py, a .cu kernel, or a Triton .py")
    p.add_argument("--harness", help="the harness file (default: <kernel>.harness.py beside the kernel)")
    p.add_argument("--budget", type=positive_int, default=30,
                   help="attempts, at least 1: plan+code, or one debug (default 30)")
    p.add_argument("--policy", default="stark", choices=POLICY_NAMES, help="search policy (default stark)")
    p.add_argument("--epsilon", type=float, default=0.35, help="stark: exploration probability (default 0.35)")
    p.add_argument("--n-root", type=int, default=5, help="stark: most children of the root (default 5)")
    p.add_argument("--n-child", type=int, default=3,
                   help="stark: most children of a node other than the root; one whose children all failed "
                        "is pruned (default 3)")
    p.add_argument("--leaderboard", type=non_negative_int, default=5, help="top nodes shown to the Plan agent (default 5)")
    p.add_argument("--llm", default="builtin", choices=["builtin", "openai"],
                   help="the agents: built-in heuristics, or an OpenAI-compatible endpoint "
                        "(key in STARK_API_KEY, else OPENAI_API_KEY)")
    p.add_argument("--model", help="model name for --llm openai")
    p.add_argument("--base-url", type=url, help="endpoint for --llm openai")
    p.add_argument("--cache-dir", help="where builds and candidates are cached (default: $STARK_CACHE_DIR, else "
                                       "~/.cache/stark-lsp)")
    p.add_argument("--workers", type=positive_int, default=1,
                   help="evaluator worker processes (default 1); with --cluster and no GPU: CPU actors")
    p.add_argument("--cluster", metavar="auto|ray://HOST:PORT",
                   help="evaluate on a Ray cluster, one actor per GPU (auto: RAY_ADDRESS, else a local one; "
                        "needs pip install -e '.[ray]')")
    p.add_argument("--concurrency", type=positive_int,
                   help="attempts in flight at once (default 2; with --cluster, one more than the actors; with a "
                        "server that says its slots, such as llama.cpp's, one more than those)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--wall-time", type=positive_float, help="stop the search after this many seconds: attempts in flight are stopped (redone on resume), "
                        "then the leaders are re-timed, which takes longer")
    p.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"],
                   help="auto: the GPU when there is one, else the CPU (Triton interpreter); cuda needs a GPU")
    p.add_argument("--store", help="the store directory (default: .stark in the workspace root)")
    p.add_argument("--fresh", action="store_true",
                   help="start a new tree; the old one is archived, never deleted (stark show TASK --archived)")
    p.add_argument("--out", help="where to write the best kernel (default: <stem>.best<suffix> beside the task); "
                                 "written only when a verified candidate beats your kernel")
    p.add_argument("--profile-top", type=non_negative_int, default=0, metavar="K",
                   help="profile the top K correct kernels with Nsight Compute (ncu) in the background and show "
                        "the figures to the Plan agent (default 0: off; needs ncu and a GPU)")
    add_screen_argument(p)
    p.add_argument("--no-compile-baseline", action="store_true",
                   help="a KernelBench model on a GPU: do not time torch.compile of it, nor start the built-in team "
                        "from the code torch.compile writes for it (default: both; see docs/AGENTS.md)")
    add_llm_arguments(p)
    add_sandbox_argument(p)


# the two expensive parts, separate so tests can swap them ---------------------
def evaluator_from_args(args: argparse.Namespace, warm_for: Any = None) -> Any:
    """The search's evaluator. ``warm_for``: the task it will judge, so each judge starts its sandbox
    for it as it starts (alongside its CUDA start), not at the first evaluation (a local evaluator only)."""
    if getattr(args, "cluster", None):
        if getattr(args, "cache_dir", None):
            raise refusal.Refusal("--cache-dir is this machine's evaluator's cache; with --cluster every actor "
                                  "caches on its own node (set STARK_CACHE_DIR there)")
        from stark_lsp.cluster import make_evaluator as cluster_evaluator

        return cluster_evaluator(args.cluster, device=args.device, cpu_actors=args.workers,
                                 sandbox=sandbox_policy(args))
    from stark_lsp.evaluate.evaluator import Evaluator

    cache = Path(args.cache_dir) if getattr(args, "cache_dir", None) else None
    return Evaluator(workers=args.workers, device=args.device, sandbox=sandbox_policy(args), cache_dir=cache,
                     warm_for=warm_for)


def sandbox_policy(args: argparse.Namespace) -> str:
    from stark_lsp.evaluate.sandbox.policy import policy

    return policy(getattr(args, "llm", "builtin"), getattr(args, "unsafe_no_sandbox", False))


def best_path(task: Any, out: str | None) -> Path:
    if out:
        return Path(out)
    return task.path.with_name(f"{task.path.stem}.best{task.candidate_suffix}")


def check_arguments(args: argparse.Namespace, task: Any) -> Path:
    """Everything that can be refused before any work; returns where the best kernel would go."""
    from stark_lsp.search.tree_store import store_path

    out = best_path(task, args.out)
    store = store_path(args.store, start=Path(task.path).resolve().parent).parent
    store_ok = refusal.writable_folder(store)
    if not args.out and not refusal.writable_folder(out.parent):  # a read-only workspace: say every fix at once
        raise refusal.Refusal(f"the folder {out.parent} is not writable, and the best kernel goes beside the task: "
                              f"give --out FILE" + ("" if store_ok else " and --store DIR (the search tree)")
                              + " in a folder you can write")
    refusal.output_file(str(out), "--out")
    if not store_ok:  # refused before any evaluator starts, as TreeStore.open would refuse it after
        raise refusal.Refusal(f"cannot write the search tree at {store}: use --store DIR for a folder you can write")
    if out.resolve() == task.path.resolve() or (task.harness and out.resolve() == task.harness.resolve()):
        raise refusal.Refusal(f"--out {out} is the task's own file: name another file")
    if not args.cluster:
        refusal.require_gpu_for_device(args.device)
        refusal.require_evaluator_modules(task)
        refusal.require_writable_cache(getattr(args, "cache_dir", None))
    return out


def refuse_without_gpu(task: Any, evaluator: Any, args: argparse.Namespace) -> None:
    """A task that cannot run without a GPU, on a machine (or --device) without one:
    compile-check the user's kernel, then refuse before spending any budget."""
    if args.cluster or not refusal.needs_gpu(task) or not refusal.runs_on_cpu(args.device):
        return
    from stark_lsp.evaluate.result import Status

    name = task.path.name
    if task.kind != "cuda":
        raise refusal.Refusal(f"{name} needs an NVIDIA GPU (its ModelNew builds CUDA with load_inline): "
                              f"nothing can be run or timed here")
    result = evaluator.evaluate(task, task.root_source())
    if result.status is Status.COMPILE_ERROR:
        raise refusal.Refusal(f"{name} needs an NVIDIA GPU, and nvcc could not compile it either: {result.message} "
                              f"({hints.stark('eval', args.task, '--compile-only', args=args, flags=('harness',))} "
                              f"shows every error)")
    raise refusal.Refusal(f"{name} {refusal.GPU_NEEDED}")


def run(args: argparse.Namespace) -> int:
    from stark_lsp.agents.base import AgentError
    from stark_lsp.cluster.spec import parse_cluster
    from stark_lsp.evaluate.evaluator import EvaluatorUnavailable
    from stark_lsp.search import SearchConfig, StoreError, TreeStore
    from stark_lsp.search.policies import make_policy
    from stark_lsp.search.tree_store import store_path

    task = refusal.load_task_or_refuse(args.task, args.harness)
    # the task's files are checked as stark eval checks them, before anything runs: a harness named by hand
    # (a KernelBench file given a Triton harness ran as Triton), an ENTRY the kernel does not define, a
    # harness calling a launcher the kernel lacks (each spent the budget on Debug attempts, then exit 3)
    from stark_lsp.bench.checks import check_task

    problems = check_task(task)
    if problems:
        raise refusal.Refusal("; ".join(problems))
    try:
        make_policy(args.policy, epsilon=args.epsilon, n_root=args.n_root, n_child=args.n_child)  # check first
        args.cluster = parse_cluster(getattr(args, "cluster", None))
        config = SearchConfig(
            budget=args.budget, policy=args.policy, epsilon=args.epsilon, n_root=args.n_root,
            n_child=args.n_child, leaderboard=args.leaderboard, concurrency=args.concurrency or 2,
            wall_time_s=args.wall_time, seed=args.seed, profile_top=max(0, getattr(args, "profile_top", 0) or 0),
            context_tokens=getattr(args, "context_tokens", None) or 12000,
            screen=not getattr(args, "no_screen", False),
            compiled_seed=not getattr(args, "no_compile_baseline", False),
            token_budget=token_budget(args, lambda line: print(f"stark optimize: {line}", file=sys.stderr)),
        )
    except ValueError as e:
        raise refusal.Refusal(str(e)) from None
    out = check_arguments(args, task)
    try:
        team = team_from_args(args)
    except (ImportError, AgentError, ValueError) as e:
        raise refusal.Refusal(f"no agent team: {e}") from None
    try:
        evaluator = evaluator_from_args(args, warm_for=task)
    except ImportError as e:
        raise refusal.Refusal(str(e)) from None
    except EvaluatorUnavailable as e:
        print(f"stark optimize: {e}", file=sys.stderr)
        return exit_codes.EVALUATOR_UNAVAILABLE
    try:
        refuse_without_gpu(task, evaluator, args)
        path = store_path(args.store, start=Path(task.path).resolve().parent)
        if path.exists():
            moved_tree.carry(path, task, "optimize", args.task)  # the task's files were moved or renamed since its search
        try:
            store = TreeStore.open(path)
        except StoreError as e:
            raise refusal.Refusal(str(e)) from None
        placement = evaluator_protocol.placement(evaluator)
        if args.concurrency is None and placement is not None:
            config.concurrency = placement.actors + 1  # keep every actor busy while agents work
        with store:
            return _search(args, task, store, path, evaluator, team, config, out)
    finally:
        evaluator_protocol.close(evaluator)


def _search(args: argparse.Namespace, task: Any, store: Any, path: Path, evaluator: Any, team: Any,
            config: Any, out: Path) -> int:
    from stark_lsp.agents.base import AgentsUnavailable
    from stark_lsp.evaluate.evaluator import EvaluatorUnavailable
    from stark_lsp.safe_text import for_terminal
    from stark_lsp.search import EvaluatorFailed, Search, SearchBusy, TaskBroken, usage
    from stark_lsp.search.lock import tree_lock
    from stark_lsp.search.progress import ProgressPrinter
    from stark_lsp.search.render import table

    tid = task.task_id()
    fresh = args.fresh and store.has_tree(tid)  # archived once the team's endpoint answered: a dead one keeps it

    def archive() -> None:
        try:
            with tree_lock(path, tid):  # never under a search that is running
                kept = store.archive_tree(tid)
        except SearchBusy as e:
            raise refusal.Refusal(str(e)) from None
        print(f"stark optimize: --fresh: the earlier tree is kept as {kept} "
              f"({hints.stark('show', args.task, '--archived', args=args)} lists it)", file=sys.stderr)

    if fresh and not getattr(team, "probe", None):
        archive()
        fresh = False
    tokens = f", token budget {config.token_budget}" if config.token_budget else ""
    print(f"stark optimize: {task.path.name} ({task.kind}), policy {config.policy}, budget {config.budget}{tokens}, "
          f"team {team.name}, store {path}", file=sys.stderr)
    if store.has_tree(tid) and not fresh and not store.changed(task):  # a changed task's tree is archived
        spent = store.view(tid).spent
        if spent >= config.budget:
            print(f"stark optimize: this tree already spent a budget of {config.budget} ({spent} attempt{'' if spent == 1 else 's'}): nothing "
                  f"new is tried; give a larger --budget to go on, or --fresh to start anew", file=sys.stderr)
    before = max((n.id for n in store.nodes(tid)), default=0) if store.has_tree(tid) else 0  # this run's come after
    cancel = threading.Event()
    code = exit_codes.OK
    with Interrupts(cancel, "optimize", "aborted") as stopped:  # Ctrl-C, SIGTERM, SIGHUP
        try:
            if getattr(team, "probe", None):  # a dead endpoint: found before any timing
                refused = evaluator_protocol.refusal(evaluator, task)
                if refused:  # but an evaluator that will refuse the team's candidates says so first
                    raise EvaluatorUnavailable(refused)
                for notice in team.probe():
                    print(f"stark optimize: {for_terminal(notice)}", file=sys.stderr)
                fitted = in_flight_for_server(team)
                if fitted and args.concurrency is None and evaluator_protocol.placement(evaluator) is None:
                    config.concurrency = fitted[0]
                    print(f"stark optimize: {fitted[1]}", file=sys.stderr)
            if fresh:
                archive()
            search = Search(task, store, evaluator, team, config, on_progress=ProgressPrinter(sys.stderr))
            stopped.doing = lambda: RETIMING_CUT if search.retiming else ""  # what Ctrl-C cuts, once the search ended
            search.run(cancel)
        except TaskBroken as e:
            print(f"stark optimize: the task is broken: {e}", file=sys.stderr)
            code = exit_codes.USAGE
        except SearchBusy as e:
            raise refusal.Refusal(str(e)) from None
        except AgentsUnavailable as e:  # the endpoint cannot serve the team: nothing written
            print(f"stark optimize: agents unavailable: {for_terminal(str(e)).splitlines()[0]}", file=sys.stderr)
            return exit_codes.AGENTS_UNAVAILABLE
        except (EvaluatorFailed, EvaluatorUnavailable) as e:
            print(f"stark optimize: {e}", file=sys.stderr)
            code = exit_codes.EVALUATOR_UNAVAILABLE
    if code == exit_codes.OK and not cancel.is_set() and not Path(path).exists():  # the store's file was deleted mid-search: its nodes
        # are in a file no one can open again, so no best is written as if a tree kept what it replaces
        print(f"stark optimize: the search tree {path} was deleted during the search: this run's nodes are lost; "
              f"nothing written (run the command again to search anew)", file=sys.stderr)
        return exit_codes.USAGE
    nodes = store.nodes(tid)
    best = store.best(tid)
    print(table(nodes, best.id if best else None))
    spent = usage.total(nodes)
    if args.llm != "builtin" and usage.used(spent):  # the tree's agents' tokens, as under ``stark show``
        print(usage.line(spent))
    if code != exit_codes.OK:  # a broken or vanished task, a failed evaluator: no verdict to act on; the
        # best so far and the command that writes it (it said 'nothing written' of a 13.1× your kernel node)
        report_interrupted(args, nodes, best, out, "the search stopped", "before its end")
        if not Path(task.path).exists():
            print(f"stark optimize: {task.path.name} is gone: the tree keeps its nodes; put it back, or give its new "
                  f"name to stark show / export (a moved task's tree follows it)", file=sys.stderr)
        return code
    if cancel.is_set():  # not the search's end: no verdict, nothing written; the best so far and how to go on
        again = hints.stark(*resume_argv(sys.argv[1:]))
        if stopped.cut:  # the search had ended: its leaders were being re-timed (no figure of it is kept)
            report_interrupted(args, nodes, best, out, stopped.word, "during the re-timing")
            print(f"stark optimize: {stopped.word} during the re-timing: the tree is saved, without this "
                  f"re-timing's rounds; to re-time the leaders, run the same command again: {again}", file=sys.stderr)
            return stopped.code
        report_interrupted(args, nodes, best, out, stopped.word)
        print(f"stark optimize: {stopped.word}: the tree is saved; to resume, run the same command again: "
              f"{again}", file=sys.stderr)
        return stopped.code
    wrote = report_best(task, nodes, best, out, store, args)
    if not wrote and args.llm != "builtin":
        from stark_lsp.agents.llm.failures import run_failure

        failure = run_failure(n for n in nodes if n.id > before)  # this run's attempts only
        if failure is not None:  # not one candidate reached the evaluator
            print(f"stark optimize: the LLM team made no candidate: {for_terminal(failure.line)}", file=sys.stderr)
            return exit_codes.AGENTS_UNAVAILABLE
    return exit_codes.OK if wrote else exit_codes.NO_IMPROVEMENT


def resume_argv(argv: list[str]) -> list[str]:
    """The command that resumes an interrupted one: the same, less ``--fresh`` (which would archive the
    tree it is meant to go on with)."""
    return [a for a in argv if a != "--fresh"]


# what Ctrl-C (or SIGTERM, SIGHUP) cuts once the search has ended and its leaders are being re-timed
RETIMING_CUT = ("the re-timing of the leaders is cut, its evaluations in flight stopped (the search's attempts are "
                "all saved; the rounds timed so far are dropped) and is done when you run the same command again")


def report_interrupted(args: argparse.Namespace, nodes: list[Any], best: Any, out: Path,
                       word: str = "interrupted", when: str = "before the search's end") -> None:
    """Ctrl-C: the search did not end (or its re-timing did not: ``when``), so no verdict and nothing
    written; the best so far, its figure labelled as the table's (re-timed or one measurement), and the
    command that writes it anyway."""
    from stark_lsp.search.tree_view import TreeView
    from stark_lsp.speedups import speedup_text

    view = TreeView.of(nodes)
    root = view.root
    gain = view.gain(best) if best is not None and best.parent_id is not None else None
    if gain is None or (root is not None and root.correct and gain <= 1.0):
        so_far = "no correct candidate" if root is None or not root.correct else "no candidate faster than your kernel"
        print(f"{word} {when}: {so_far} so far; nothing written")
        return
    how = ("the median of the rounds timed in turn with yours" if best.retimed_vs_root is not None
           else "one measurement, not yet timed in turn with yours")
    figure = (speedup_text(gain, "yours", cpu=best.cpu_timed, degenerate=best.degenerate) if root is not None
              and root.correct else f"correct where your kernel is not, {best.eager_text()}")
    export = hints.stark("export", args.task, best.id, "-o", out, args=args)
    print(f"{word} {when}: the best so far is node #{best.id}, {figure} ({how}); "
          f"nothing written ({export} writes it)")


def report_best(task: Any, nodes: list[Any], best: Any, out: Path, store: Any,
                args: argparse.Namespace | None = None) -> bool:
    """Write the best kernel when a verified candidate beats the user's kernel, and
    say what happened either way; True when it wrote."""
    from stark_lsp.search.retime import Retimed
    from stark_lsp.search.tree_view import TreeView
    from stark_lsp.speedups import shown_ms, speedup_text

    view = TreeView.of(nodes)
    root = view.root
    if best is None or best.parent_id is None:
        if root is not None and root.correct:
            ms = shown_ms(root.runtime_ms, root.retimed)  # the table's: your kernel's re-timed median where it was
            print(f"no verified candidate beat your kernel ({ms:.4g} ms): nothing written")
        elif root is not None and root.evaluated:
            print(f"no correct candidate, and your kernel fails the evaluation ({root.status}: {root.error}): "
                  f"nothing written")
        else:
            print("no correct candidate: nothing written")
        return False
    gain = view.gain(best)  # the re-timed median against your kernel where there is one (speedups.vs_yours)
    retimed = Retimed.from_dict(best.retimed) if best.retimed else None
    if root is not None and root.correct and (gain is None or gain <= 1.0):
        print(f"no verified candidate beat your kernel (the fastest, #{best.id}, is "
              f"{speedup_text(gain, 'yours', cpu=best.cpu_timed, degenerate=best.degenerate)}): nothing written")
        return False
    if root is not None and root.correct and (retimed is None or retimed.vs_root is None):
        # one measurement is not a win: the search stopped (Ctrl-C, --wall-time, a failed evaluator) before
        # it timed the candidate in turn with your kernel; the next run of the same command does
        print(f"#{best.id} looked faster in one measurement "
              f"({speedup_text(gain, 'yours', cpu=best.cpu_timed, degenerate=best.degenerate)}), but the search "
              f"stopped before timing it in turn with your kernel: nothing written; run the same command again "
              f"to re-time it")
        return False
    low = retimed.vs_root_low if retimed is not None else None
    if root is not None and root.correct and low is not None and low <= 1.0:
        # a win must beat the noise: every round that timed it in turn with your kernel, not only their median
        print(f"no candidate beat your kernel beyond the noise (the fastest, #{best.id}, "
              f"{speedup_text(gain, 'yours', cpu=best.cpu_timed, degenerate=best.degenerate)}, "
              f"{low:.2f}–{retimed.vs_root_high:.2f} over {retimed.rounds} rounds): nothing written")
        return False
    replaced = keep_previous(out, best.source, task, store, args)
    refusal.write_file(out, best.source, "--out")
    if root is not None and root.correct and retimed is not None and retimed.vs_root is not None:
        # the re-timed figures only: the single measurements of the table would not give this ratio
        vs = (f"{speedup_text(gain, 'yours', degenerate=best.degenerate)} ({retimed.runtime_ms:.4g} ms, the median of "
              f"{retimed.rounds} rounds timed in turn with yours), "
              f"{speedup_text(retimed.speedup, 'eager', cpu=best.cpu_timed, degenerate=best.degenerate)}")
    elif root is not None and root.correct:
        vs = (f"{speedup_text(gain, 'yours', degenerate=best.degenerate)} ({ms_words(best)}; yours "
              f"{ms_words(root)}), "
              f"{best.eager_text()}")
    else:
        vs = f"correct where your kernel is not ({root.status if root else 'missing'}), {best.eager_text()}"
    print(f"best: node #{best.id}, {vs}")
    if retimed is not None:
        print(f"re-timed in turn with your kernel: {retimed.text()}")
    print(f"wrote {out}" + (f" ({replaced})" if replaced else ""))
    return True


def ms_words(node: Any) -> str:
    """``0.42 ms``; on the CPU, where eager is timed in turn with each evaluation and "× your kernel" is the
    ratio of the two figures against eager, with the eager time of its own evaluation:
    ``41.2 ms against eager's 0.2 ms``."""
    from stark_lsp.speedups import paired_eager_ms

    eager = paired_eager_ms(node.runtime_ms, node.speedup) if node.cpu_timed and not node.is_reference_itself else None
    return f"{node.runtime_ms:.4g} ms" + (f" against eager's {eager:.4g} ms, timed in turn" if eager else "")

