"""``stark bench PATH...``: every task under every policy, the same budget and seeds; JSON, HTML and a table."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from stark_lsp import exit_codes
from stark_lsp.commands import hints, refusal
from stark_lsp.commands.agent_team import team_from_args
from stark_lsp.commands.arguments import (add_sandbox_argument, add_screen_argument, non_negative_int, positive_float,
                                         positive_int, url)
from stark_lsp.commands.interrupt import Interrupts
from stark_lsp.agents.llm.in_flight import in_flight_for_server
from stark_lsp.commands.llm_args import token_budget
from stark_lsp.evaluate import protocol as evaluator_protocol

NAME = "bench"
HELP = "benchmark the search policies on a set of tasks (samples, a KernelBench folder): success, fast_p, speedups"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="task files or directories (walked; every file load_task accepts is a task)")
    p.add_argument("--policies", default="stark,sampling,reflexion,greedy",
                   help="comma-separated policies (default: all four)")
    p.add_argument("--budget", type=positive_int, default=30, help="attempts per run, at least 1 (default 30)")
    p.add_argument("--repeat", type=positive_int, default=1,
                   help="runs per task and policy; repeat r uses seed S+r (default 1)")
    p.add_argument("--seed", type=int, default=0, help="the base seed S (default 0)")
    p.add_argument("--llm", default="builtin", choices=["builtin", "openai"],
                   help="the agents: built-in heuristics, or an OpenAI-compatible endpoint "
                        "(key in STARK_API_KEY, else OPENAI_API_KEY)")
    p.add_argument("--model", help="model name for --llm openai")
    p.add_argument("--base-url", type=url, help="endpoint for --llm openai")
    from stark_lsp.commands.llm_args import add_llm_arguments

    add_llm_arguments(p)
    p.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"],
                   help="cpu: the Triton interpreter and eager CPU (CI); auto: the GPU when there is one")
    p.add_argument("--shapes", default="auto", choices=["auto", "small", "full"],
                   help="small sets STARK_SMALL=1 for the harnesses; auto: small without a GPU (default)")
    p.add_argument("--concurrency", type=positive_int,
                   help="attempts in flight per run (default 2; with a server that says its slots, such as "
                        "llama.cpp's, one more than those)")
    p.add_argument("--cache-dir", help="where builds and candidates are cached (default: $STARK_CACHE_DIR, else "
                                       "~/.cache/stark-lsp)")
    p.add_argument("--workers", type=positive_int, default=1,
                   help="evaluator worker processes (default 1); on one GPU they take turns (one evaluation per GPU)")
    p.add_argument("--jobs", type=positive_int,
                   help="tasks searched at once on each GPU: their builds and agents overlap, their evaluations take "
                        "turns on the GPU, and a task whose estimated GPU memory does not fit beside the others "
                        "waits (default on a GPU: 3 per 8 CPU cores, one per 12 GiB of GPU memory, at most 8; "
                        "1 on the CPU)")
    p.add_argument("--gpus", help="share the tasks out over these GPUs, e.g. 0,1,2,3 or 'all': one evaluator per "
                                  "GPU; every run of a task stays on one GPU (default: one evaluator, GPU 0)")
    p.add_argument("--wall-time", type=positive_float, help="per run: stop the search after this many seconds (attempts in flight "
                        "are stopped), then re-time its leaders")
    p.add_argument("--trials", type=positive_int, default=5,
                   help="correctness trials per evaluation (default 5); they count against each evaluation's time "
                        "limit (120 s for a candidate): too many time the evaluation out, saying how many ran")
    p.add_argument("--no-compile-baseline", action="store_true",
                   help="do not time torch.compile of the references (GPU only anyway)")
    p.add_argument("--retime-top", type=non_negative_int, default=3, metavar="K",
                   help="after each search, re-time its top K candidates in turn with the root (0: off; default 3)")
    p.add_argument("--retime-rounds", type=non_negative_int, default=3, metavar="R", help="re-timing rounds (default 3)")
    add_screen_argument(p)
    p.add_argument("--out", help="output directory (default bench-results/<date-time>)")
    p.add_argument("--resume", action="store_true",
                   help="continue the bench in --out: keep its finished runs, do the rest")
    p.add_argument("--stop-after", type=positive_float, metavar="SEC",
                   help="start no run after SEC seconds (a batch: continue later with --resume; exit 0 when "
                        "every run that ran finished)")
    p.add_argument("--dry-run", action="store_true",
                   help="load the tasks, check their files, print the plan; evaluate nothing")
    add_sandbox_argument(p)


# the two expensive parts, separate so tests can swap them ---------------------
def evaluator_from_args(args: argparse.Namespace, warm_for: Any = None) -> Any:
    """One evaluator, or with --gpus a list of them, one per GPU. ``warm_for``: the first task, so each
    judge starts its sandbox for its folders as it starts (the bench's tasks mostly share a folder)."""
    from stark_lsp.evaluate.evaluator import Evaluator

    from stark_lsp.evaluate.sandbox.policy import policy

    sandbox = policy(args.llm, getattr(args, "unsafe_no_sandbox", False))
    cache = Path(args.cache_dir) if getattr(args, "cache_dir", None) else None
    gpus = parse_gpus(getattr(args, "gpus", None))
    jobs = jobs_from_args(args)
    if gpus is None and jobs == 1:
        return Evaluator(workers=args.workers, device=args.device, sandbox=sandbox, cache_dir=cache,
                         warm_for=warm_for)
    if gpus is None:
        return [Evaluator(workers=args.workers, device=args.device, sandbox=sandbox, cache_dir=cache,
                          warm_for=warm_for) for _ in range(jobs)]
    return [Evaluator(workers=args.workers, device=args.device, gpu=g, sandbox=sandbox, cache_dir=cache,
                      warm_for=warm_for) for g in gpus for _ in range(jobs)]


def jobs_from_args(args: argparse.Namespace) -> int:
    """``--jobs``, or what fits the machine: on a GPU three searches for every eight cores (a search keeps
    about two busy between its builds, its agents and its sandboxed processes; only timing holds the GPU
    alone, ``gpu_lock.py``), one per ``GIB_PER_JOB`` of the GPU's memory, at most 8; on the CPU one (the
    interpreter is the bottleneck, and CI's two cores have nothing to spare). Measured on a 16-core H100
    (level 2, docs/benchmarks.md, session 24): 2 searches 18, 4 searches 30, 6 searches 45 attempts a
    minute, the GPU's memory at most 57 of 80 GiB; the tasks' own sizes are admitted by
    ``bench/memory_admission.py``, so a task of gigabytes a call does not run beside others."""
    if getattr(args, "jobs", None):
        return int(args.jobs)
    if refusal.runs_on_cpu(args.device):
        return 1
    from stark_lsp.evaluate.evaluator import gpu_memory_gib

    mem = gpu_memory_gib()
    by_memory = int(mem // GIB_PER_JOB) if mem else 8
    return max(1, min(8, (os.cpu_count() or 1) * 3 // 8, by_memory))


GIB_PER_JOB = 12


def admission_memory_gib(args: argparse.Namespace, evaluators: list[Any]) -> float | None:
    """Each GPU's memory, which the jobs sharing a GPU share by their tasks' estimates
    (``bench/memory_admission.py``); None on the CPU, with one job a GPU, or where it cannot be read."""
    if refusal.runs_on_cpu(args.device):
        return None
    gpus = [evaluator_protocol.gpu_index(ev) for ev in evaluators]
    if len(gpus) == len(set(gpus)):  # one job a GPU: nothing to share
        return None
    from stark_lsp.evaluate.evaluator import gpu_memory_gib

    return gpu_memory_gib()


def parse_gpus(text: str | None) -> list[int] | None:
    """'0,2' -> [0, 2]; 'all' -> every visible GPU; None -> None. ValueError when unusable."""
    if text is None:
        return None
    if text.strip() == "all":
        from stark_lsp.evaluate.evaluator import gpu_count

        n = gpu_count()
        if n == 0:
            raise ValueError("--gpus all: no GPU here")
        return list(range(n))
    try:
        gpus = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"--gpus {text!r}: expected GPU numbers such as 0,1,2,3 or 'all'") from None
    if not gpus or any(g < 0 for g in gpus) or len(set(gpus)) != len(gpus):
        raise ValueError(f"--gpus {text!r}: expected distinct GPU numbers such as 0,1,2,3 or 'all'")
    from stark_lsp.evaluate.evaluator import gpu_count

    have = gpu_count()
    if max(gpus) >= have:
        raise ValueError(f"--gpus {text!r}: this machine has {have} GPU{'s' if have != 1 else ''} "
                         f"({'none' if not have else ', '.join(map(str, range(have)))})")
    return gpus


def _tokens(config: Any) -> str:
    return f", token budget {config.token_budget} a run" if config.token_budget else ""


def _err(msg: str) -> None:
    print(f"stark bench: {msg}", file=sys.stderr)


def use_small_shapes(shapes: str, device: str) -> bool:
    if shapes != "auto":
        return shapes == "small"
    if device == "cpu":
        return True
    from stark_lsp.evaluate.evaluator import gpu_present

    return device == "auto" and not gpu_present()


def _hardware(evaluators: list[Any]) -> str:
    names = []
    for ev in evaluators:
        try:
            names.append(str(ev.hardware()))
        except Exception as e:  # noqa: BLE001
            names.append(f"unknown ({e})")
    if len(evaluators) == 1:
        return names[0]
    gpus = [evaluator_protocol.gpu_index(ev) for ev in evaluators]
    per_gpu = len(evaluators) // max(1, len(set(gpus)))  # --jobs: searches sharing each GPU
    sharing = f", {per_gpu} searches at once on each" if per_gpu > 1 else ""
    if len(set(gpus)) == 1:  # --jobs on one device: one GPU, not several
        return f"{names[0]}, {len(evaluators)} searches at once"
    if len(set(names)) == 1:
        return f"{len(set(gpus))} x {names[0]}{sharing}"
    seen: dict[Any, str] = {}
    for i, (g, n) in enumerate(zip(gpus, names)):
        seen.setdefault(g if g is not None else i, n)
    return "; ".join(f"GPU {g}: {n}" for g, n in seen.items()) + sharing


def gpu_reason(task: Any) -> str:
    """Why the task cannot run on this GPU-less machine, or "" (CUDA; load_inline)."""
    if not refusal.needs_gpu(task):
        return ""
    name = task.path.name
    what = "" if task.kind == "cuda" else " (its ModelNew builds CUDA with load_inline)"
    return (f"{name} needs an NVIDIA GPU{what}: nothing can be run or timed here "
            f"({hints.stark('eval', task.path, '--compile-only')} checks that it compiles)")


def print_plan(tasks: list[Any], names: list[str], problems: dict[int, list[str]], skipped: list[Any],
               config: Any, runs: int, out: Path, gpu_only: dict[int, str] | None = None) -> None:
    print(f"{len(tasks)} task(s):")
    for i, (t, n) in enumerate(zip(tasks, names)):
        extra = f"  harness {t.harness}" if t.harness and t.harness != t.path else ""
        state = "ok" if not problems.get(i) else "PROBLEM: " + "; ".join(problems[i])
        if state == "ok" and (gpu_only or {}).get(i):
            state = "skipped on this machine: needs an NVIDIA GPU"
        print(f"  {n:28s} {t.kind:11s} {t.path}{extra}  [{state}]")
    loud = [s for s in skipped if not s.quiet]
    if loud:
        print(f"skipped {len(loud)} file(s):")
        for s in loud:
            print(f"  {s.path}: {s.reason}")
    quiet = len(skipped) - len(loud)
    if quiet:
        print(f"(and {quiet} harness or helper file(s))")
    seeds = f"{config.seed}" if config.repeat == 1 else f"{config.seed}..{config.seed + config.repeat - 1}"
    print(f"policies {', '.join(config.policies)}; budget {config.budget}{_tokens(config)}; repeat {config.repeat} (seeds {seeds}); "
          f"team {config.llm}; device {config.device}; shapes {'small' if config.small else 'full'}")
    print(f"{runs} run(s), at most {runs * config.budget} attempts; output {out}")


def _probe(team: Any, evaluator: Any) -> int | None:
    """An LLM team's endpoint, before any run (``Team.probe``): a dead one is exit 4 now, not one error
    per run after every task's baselines were timed. An evaluator that will refuse the team's candidates
    (no sandbox) is left to say so itself."""
    from stark_lsp.agents.base import AgentsUnavailable
    from stark_lsp.safe_text import for_terminal

    probe = getattr(team, "probe", None)
    if probe is None or evaluator_protocol.refusal(evaluator):
        return None
    try:
        for notice in probe():
            print(f"stark bench: {for_terminal(notice)}", file=sys.stderr)
    except AgentsUnavailable as e:
        _err(f"agents unavailable: {for_terminal(str(e)).splitlines()[0]}")
        return exit_codes.AGENTS_UNAVAILABLE
    return None


def run(args: argparse.Namespace) -> int:
    from stark_lsp.bench.checks import check_task
    from stark_lsp.bench.discover import Skipped, discover, short_names
    from stark_lsp.bench.plan import BenchConfig, parse_policies, schedule
    from stark_lsp.search.policies import POLICY_NAMES

    try:
        policies = parse_policies(args.policies, POLICY_NAMES)
    except ValueError as e:
        _err(str(e))
        return exit_codes.USAGE
    refusal.require_gpu_for_device(args.device)
    try:
        gpus = parse_gpus(getattr(args, "gpus", None))
    except ValueError as e:
        _err(str(e))
        return exit_codes.USAGE
    if gpus is not None and args.device == "cpu":
        _err("--gpus and --device cpu do not go together")
        return exit_codes.USAGE
    for path in args.paths:  # a pipe named on the command line would block discover's read
        refusal.require_plain_file(path, "task")
    found = discover(args.paths)
    tasks = found.tasks
    names = short_names(tasks)
    problems = {i: check_task(t) for i, t in enumerate(tasks)}
    gpu_only = {i: gpu_reason(t) for i, t in enumerate(tasks)} if refusal.runs_on_cpu(args.device) else {}
    gpu_only = {i: why for i, why in gpu_only.items() if why}
    small = use_small_shapes(args.shapes, args.device)
    config = BenchConfig(policies=policies, budget=args.budget, repeat=args.repeat, seed=args.seed, llm=args.llm,
                         model=args.model, base_url=args.base_url, device=args.device, small=small,
                         concurrency=args.concurrency or 2, workers=args.workers, jobs=jobs_from_args(args),
                         wall_time_s=args.wall_time,
                         compile_baseline=not args.no_compile_baseline, trials=args.trials,
                         retime_top=max(0, args.retime_top), retime_rounds=max(0, args.retime_rounds),
                         screen=not args.no_screen,
                         context_tokens=getattr(args, "context_tokens", None) or 12000,
                         token_budget=token_budget(args, _err))
    out = Path(args.out) if args.out else Path("bench-results") / time.strftime("%Y%m%d-%H%M%S")
    if args.dry_run:
        runnable = [t for i, t in enumerate(tasks) if i not in gpu_only]
        print_plan(tasks, names, problems, found.skipped, config, len(schedule(runnable, config)), out, gpu_only)
        if not tasks:
            return exit_codes.USAGE
        return exit_codes.FAILED if any(problems.values()) else exit_codes.OK
    skipped = list(found.skipped)
    keep = [i for i in range(len(tasks)) if not problems[i] and i not in gpu_only]
    for i in range(len(tasks)):
        why = "; ".join(problems[i]) or gpu_only.get(i)
        if why:
            skipped.append(Skipped(str(tasks[i].path), why))
            _err(f"skipping {names[i]}: {why}")
    if tasks and len(gpu_only) == len(tasks):  # nothing here can run: refuse before any budget is spent
        raise refusal.Refusal(gpu_only[0] if len(tasks) == 1 else
                              "every task needs an NVIDIA GPU: nothing can be run or timed here")
    tasks, names = [tasks[i] for i in keep], [names[i] for i in keep]
    if not tasks:
        listed = [s for s in skipped if not s.quiet]
        if not listed:  # an empty folder, or one of harnesses and the like: say what a task is
            _err(f"no tasks in {' '.join(args.paths)}: give KernelBench .py files, or .cu and Triton .py kernels "
                 f"with a harness beside each (docs/HARNESS.md)")
        else:
            _err("no tasks" + "".join(f"\n  {s.path}: {s.reason}" for s in listed))
        return exit_codes.USAGE
    refusal.require_evaluator_modules(next((t for t in tasks if t.kind == "triton"), tasks[0]))
    refusal.require_writable_cache(getattr(args, "cache_dir", None))
    refusal.require_writable_folder(out, "--out", "--out DIR")  # the report's folder: before any run
    if small:
        os.environ["STARK_SMALL"] = "1"  # the evaluator's workers inherit it
    elif args.shapes == "full":
        os.environ.pop("STARK_SMALL", None)
    return _bench(args, config, tasks, names, skipped, out)


def _bench(args: argparse.Namespace, config: Any, tasks: list[Any], names: list[str], skipped: list[Any],
           out: Path) -> int:
    from dataclasses import asdict

    from stark_lsp.agents.base import AgentError
    from stark_lsp.bench import report_json
    from stark_lsp.bench.plan import schedule
    from stark_lsp.bench.progress import BenchProgress
    from stark_lsp.bench.report_html import render_html
    from stark_lsp.bench.runner import BenchRunner
    from stark_lsp.bench.table import ceilings_line, policy_table, task_table

    json_path, html_path, jsonl_path = out / "bench.json", out / "bench.html", out / "runs.jsonl"
    records: list[Any] = []
    if args.resume and json_path.exists():
        try:
            old, old_records = report_json.load_runs(json_path)
        except (ValueError, OSError) as e:
            _err(f"cannot resume: {e}")
            return exit_codes.USAGE
        if (old["config"]["budget"], old["config"]["seed"]) != (config.budget, config.seed):
            _err(f"cannot resume: {json_path} was made with budget {old['config']['budget']} and seed "
                 f"{old['config']['seed']}")
            return exit_codes.USAGE
        keys = {t.task_id() for t in tasks}
        records = [r for r in old_records if r.outcome == "done" and r.task_key in keys and r.policy in config.policies
                   and r.repeat < config.repeat]
        print(f"stark bench: resuming {out}: {len(records)} finished run(s) kept", file=sys.stderr)
    elif json_path.exists():
        _err(f"{json_path} exists: use --resume to continue it, or another --out")
        return exit_codes.USAGE
    try:
        team = team_from_args(args)
    except (ImportError, AgentError, ValueError) as e:
        _err(f"no agent team: {e}")
        return exit_codes.USAGE
    out.mkdir(parents=True, exist_ok=True)
    planned = len(schedule(tasks, config))
    print(f"stark bench: {len(tasks)} task(s) x {len(config.policies)} policies x {config.repeat} repeat(s) = "
          f"{planned} runs, budget {config.budget}{_tokens(config)}, team {team.name}; writing {out}", file=sys.stderr)
    made = evaluator_from_args(args, warm_for=tasks[0] if tasks else None)
    evaluators = made if isinstance(made, list) else [made]
    code = _probe(team, evaluators[0])
    if code is not None:
        return code
    fitted = in_flight_for_server(team)
    if fitted and args.concurrency is None:
        config.concurrency = fitted[0]
        print(f"stark bench: {fitted[1]}", file=sys.stderr)
    header: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%d %H:%M:%S"), "config": config.to_dict(), "planned_runs": planned,
        "tasks": [{"name": n, "key": t.task_id(), **t.to_dict()} for n, t in zip(names, tasks)],
        "skipped": [asdict(s) for s in skipped], "hardware": "",
    }

    def write(complete: bool) -> None:
        doc = report_json.build_document(header, records, complete)
        report_json.write_document(json_path, doc)
        report_json.write_atomic(html_path, render_html(doc))

    progress = BenchProgress(names, tty=False if len(evaluators) > 1 else None,  # parallel runs: plain lines
                             planned=planned, kept=len(records))

    def on_record(rec: Any, index: int, total: int) -> None:
        records.append(rec)
        report_json.append_run(jsonl_path, rec)
        try:
            write(complete=False)
        except Exception as e:  # noqa: BLE001 - a report that cannot be written must not stop the bench
            _err(f"cannot write the report: {type(e).__name__}: {e}")
        progress.finish(index, total, rec)

    cancel = threading.Event()
    stopped = Interrupts(cancel, "bench", "aborted (bench.json has the runs that finished)",
                         again="when you go on with --resume").__enter__()  # Ctrl-C, SIGTERM, SIGHUP
    done = {(r.task_key, r.policy, r.repeat) for r in records}
    try:
        header["hardware"] = _hardware(evaluators)
        print(f"stark bench: device {header['hardware']}", file=sys.stderr)
        memory = admission_memory_gib(args, evaluators)
        if memory:
            from stark_lsp.bench.memory_admission import budget_gib, gib_text

            print(f"stark bench: the searches on a GPU share its memory ({gib_text(budget_gib(memory))} of "
                  f"{gib_text(memory)}): a task whose estimate does not fit beside the others waits", file=sys.stderr)
        write(complete=False)
        runner = BenchRunner(tasks, names, config, made, team, out, on_record=on_record,
                             on_progress=progress, on_start=progress.start, cancel=cancel,
                             gpu_memory_gib=memory, on_memory_wait=progress.memory_wait)
        deadline = time.monotonic() + args.stop_after if getattr(args, "stop_after", None) else None
        runner.run(done=done, deadline=deadline)
        if runner.stopped_early:
            print(f"stark bench: --stop-after {args.stop_after:g} s reached: {len(records)} of {planned} run(s) "
                  f"done; to go on: {hints.stark(*resume_argv(sys.argv[1:], out))}", file=sys.stderr)
    finally:
        stopped.__exit__()
        for evaluator in evaluators:
            evaluator_protocol.close(evaluator)
    complete = not cancel.is_set() and len(records) == planned
    write(complete=complete)
    doc = report_json.build_document(header, records, complete)
    print()
    cpu = bool(records) and not any(r.is_gpu for r in records)
    print(policy_table(doc["summary"]["policies"], cpu=cpu))
    print()
    print(task_table(doc["summary"]["tasks"], cpu=cpu))
    print()
    print(ceilings_line(doc["summary"]["ceilings"]))
    print(f"wrote {json_path}, {html_path}")
    if cancel.is_set():
        print(f"stark bench: {stopped.word}: {json_path} has the {sum(r.outcome == 'done' for r in records)} run(s) that finished; to go "
              f"on: "
              f"{hints.stark(*resume_argv(sys.argv[1:], out))}", file=sys.stderr)
        return stopped.code
    return exit_codes.FAILED if any(r.outcome != "done" for r in records) else exit_codes.OK


def resume_argv(argv: list[str], out: Path) -> list[str]:
    """The command that goes on with an interrupted bench: the same, with ``--resume`` and its ``--out`` folder
    (a bench without ``--out`` wrote to a new dated folder, which the same command would not find)."""
    argv = list(argv)
    if not any(a in ("--out", "-o") or a.startswith("--out=") for a in argv):
        argv += ["--out", str(out)]
    return argv if "--resume" in argv else [*argv, "--resume"]
