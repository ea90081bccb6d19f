"""Session 31's hostile review of the sandbox and the judge's side of the channel (issue 20's classes 5-9): a
candidate after the judge itself, the next candidate, or the user's machine. Runs on the CPU against a real
sandboxed evaluator; the candidates are in tests/data/attacks/ (docs/EVALUATOR.md, "Threat model")."""

from __future__ import annotations

from pathlib import Path

import pytest

from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.evaluate.judge import replies as R
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import EvalResult, Status
from stark_lsp.evaluate.sandbox.policy import probe
from stark_lsp.evaluate.wire.channel import ChannelError, check_output_headers, decode, nesting_depth
from stark_lsp.tasks.spec import load_task

ROOT = Path(__file__).resolve().parents[1]
ATTACKS = ROOT / "tests" / "data" / "attacks"
ADD_TASK = ROOT / "tests" / "data" / "evaluator" / "add_task.py"
GOOD = (ROOT / "tests" / "data" / "evaluator" / "good_torch.py").read_text()
# a cap on the whole evaluation: a judge stuck in its own code is stopped (a timeout) instead of the test hanging
OPTS = EvalOptions(trials=3, cpu_reps=5, reps=30, time_budget_s=1.0, load_timeout_s=30, cap_s=90.0)

needs_sandbox = pytest.mark.skipif(not probe().available, reason=f"no sandbox here: {probe().reason}")


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    with Evaluator(workers=1, cache_dir=tmp_path_factory.mktemp("cache"), sandbox="auto") as e:
        yield e


def run(ev, name: str, opts: EvalOptions = OPTS) -> EvalResult:
    return ev.evaluate(load_task(ADD_TASK), (ATTACKS / name).read_text() if name else GOOD, opts)


# class 9: what the candidate sends on its channel ----------------------------------------------------------------
def test_nesting_depth_sees_strings_as_the_parser_does_escapes_and_unclosed_strings_included():
    assert nesting_depth(b'{"a": "[[[\\"[[", "b": [[1]]}') == 3  # brackets in a string, an escaped quote in it
    assert nesting_depth(b'["\\\\", [[]]]') == 3  # an escaped backslash ends before the closing quote
    assert nesting_depth(b'{"a": "\\u005b[[["}') == 1
    assert nesting_depth(b"[" * 40 + b"]" * 40) == 13  # counted up to the limit + 1
    unclosed = b'{"calls": "' + b'\\"' * 20_000  # the attack's shape, smaller: a string that never closes
    assert nesting_depth(unclosed) == 1
    with pytest.raises(ChannelError):
        decode(unclosed)


def test_a_reply_check_that_meets_an_unforeseen_type_is_the_candidates_broken_protocol():
    tensor = {"kind": "tensor", "shape": [2], "nbytes": 8, "stored": True, "offset": 0}
    for dtype in (["float32"], {"a": 1}, None, 3):
        with pytest.raises(ChannelError):
            check_output_headers([{**tensor, "dtype": dtype}], 1 << 20)
    assert check_output_headers([{**tensor, "dtype": "float32"}], 1 << 20)[0]["nbytes"] == 8


@needs_sandbox
@pytest.mark.parametrize("name, words", [
    ("unclosed_escaped_string.py", "not a valid message"),  # the judge scanned it for hours
    ("unhashable_dtype.py", "is not allowed"),  # the judge's TypeError was the verdict, "evaluator error"
])
def test_a_malformed_reply_fails_that_candidate_as_a_broken_protocol_and_the_judge_goes_on(ev, name, words):
    r = run(ev, name)
    assert r.status is Status.CHEAT and ("broke the protocol" in r.message or "invalid outputs" in r.message), \
        r.summary()
    assert words in r.message and "Traceback" not in r.message, r.message
    assert run(ev, "").status is Status.OK  # the same judge, the next honest candidate


def test_replies_stay_typed():  # the checks of replies.py, which the same class reaches through ``ask``
    with pytest.raises(ChannelError):
        R.batch({"calls": [{"meta": [[["float32"], [2]]], "digest": [[0, 0, 0, 0]], "hash": [""]}]}, 1)


# class 5: what a candidate leaves for the next one ---------------------------------------------------------------
def test_the_zygote_lists_every_sysv_ipc_object_by_id_from_proc():
    from stark_lsp.evaluate.sandbox.zygote import sysv_ipc_ids

    tables = {"shm": "       key      shmid perms       size\n     20817          0     0    67108864\n",
              "sem": "       key      semid perms      nsems\n", "msg": "       key      msqid perms\n  1 7 600\n"}
    assert sysv_ipc_ids(tables.__getitem__) == {"shm": [0], "sem": [], "msg": [7]}


@needs_sandbox
def test_a_sysv_segment_given_away_does_not_reach_the_next_candidate(ev):
    """Its creator gave it another owner and mode 0: ``ipcrm --all`` could not read it and left it, memory and
    marker, to every later candidate, which took it back and read it (FOUND b'LEFT-BY-AN-EARLIER-CANDIDATE')."""
    first = run(ev, "sysv_segment_given_away.py")
    assert first.status is Status.OK and "GIVEN AWAY True" in first.output, (first.summary(), first.output)
    second = run(ev, "sysv_segment_taken_back.py")
    assert second.status is Status.OK, second.summary()
    assert "NO SEGMENT LEFT" in second.output and "FOUND" not in second.output, second.output


# class 7: what a build prints ------------------------------------------------------------------------------------
def test_a_builds_output_is_kept_as_its_head_and_tail_whatever_it_prints():
    """A build (nvcc in the sandbox, its output read by the CLI or the editor) printing 340 MB took the caller to
    1 GiB read whole, before any parsing; now its head and tail are kept, and the rest is counted."""
    import sys

    from stark_lsp.evaluate.bounded_run import run_bounded

    spam = ("import sys\nsys.stdout.write('FIRST\\n'); sys.stdout.flush()\n"
            "for _ in range(40_000): sys.stderr.write('w' * 255 + '\\n')\nsys.stderr.write('LAST\\n')\nsys.exit(3)\n")
    code, out = run_bounded([sys.executable, "-c", spam], cwd=".", env={}, timeout_s=120, head=64 << 10,
                            tail=16 << 10)
    assert code == 3
    assert out.startswith("FIRST\n") and out.endswith("LAST\n"), (out[:40], out[-40:])
    assert len(out) <= (64 << 10) + (16 << 10) + 100 and "bytes of the build's output left out" in out
    dropped = int(out.split("... (")[1].split(" bytes")[0])
    assert dropped + (64 << 10) + (16 << 10) == len("FIRST\n") + 40_000 * 256 + len("LAST\n")
    code, out = run_bounded([sys.executable, "-c", "print('short')"], cwd=".", env={}, timeout_s=120)
    assert (code, out) == (0, "short\n")
    code, _ = run_bounded([sys.executable, "-c", "import time; print('x', flush=True); time.sleep(600)"], cwd=".",
                          env={}, timeout_s=1)
    assert code is None  # killed with its session once its time passed


def test_the_cuda_build_reads_its_commands_output_bounded(tmp_path, monkeypatch):
    import stark_lsp.evaluate.cuda_build as CB

    seen = []
    monkeypatch.setattr(CB, "run_bounded", lambda argv, **kw: seen.append(argv) or (0, "ok"))
    b = CB.CudaBuilder(tmp_path / "cache")
    assert b._run(["nvcc", "--version"], tmp_path, None, [tmp_path], 10) == (True, "ok") and seen


# class 7: memory past any one process's limit --------------------------------------------------------------------
@needs_sandbox
def test_a_sandboxs_processes_are_the_oom_killers_first(ev):
    """Each process has its limit, the sandbox none: its processes, memfds and segments could run the machine out of
    memory, and the OOM killer took the largest process, the judge or the user's editor. Every process of a sandbox
    starts at oom_score_adj 1000 (a candidate without CAP_SYS_RESOURCE's root may set its own back to the user's)."""
    source = ("import torch.nn as nn\nprint('OOM_SCORE_ADJ', open('/proc/self/oom_score_adj').read().strip())\n"
              "class ModelNew(nn.Module):\n    def forward(self, a, b):\n        return a * 2 + b\n")
    r = ev.evaluate(load_task(ADD_TASK), source, OPTS)
    assert r.status is Status.OK and "OOM_SCORE_ADJ 1000" in r.output, (r.summary(), r.output)


# class 5: two judges at once (``stark bench --jobs``) --------------------------------------------------------------
def _busiest_uid() -> int:
    """The most processes and threads any one uid but root has on the machine now."""
    import collections
    import os

    counts: collections.Counter = collections.Counter()
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            st = os.stat(f"/proc/{pid}")
            counts[st.st_uid] += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            continue
    counts.pop(0, None)
    return max(counts.values(), default=0)


THREADS = ("import threading, time\nts = [threading.Thread(target=time.sleep, args=(1,)) for _ in range(100)]\n"
           "[t.start() for t in ts]\n[t.join() for t in ts]\nprint('THREADS ok', flush=True)\n" + GOOD)


@needs_sandbox
@pytest.mark.skipif(__import__("os").geteuid() != 0, reason="a user's sandboxes all run as the user (a user namespace)")
def test_a_candidate_holding_the_process_limit_leaves_another_judges_candidate_its_threads(tmp_path):
    """Every root caller's sandbox ran as ``nobody``, and the process limit counts a uid's processes machine-wide:
    a candidate holding its 509 made another judge's honest candidate "can't start new thread" (compile_error)."""
    import os
    import shutil
    import threading
    import time

    folder = ROOT / "out" / f"hold-{os.getpid()}"  # readable by the sandbox, unlike pytest's private tmp folders
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o755)
    task = folder / "add_task.py"
    shutil.copy(ADD_TASK, task)
    os.chmod(task, 0o644)
    release = folder / "release"
    source = (ATTACKS / "hold_the_process_count.py").read_text().replace("RELEASE_PATH", str(release))
    try:
        with Evaluator(workers=1, cache_dir=tmp_path / "a", sandbox="auto") as a, \
                Evaluator(workers=1, cache_dir=tmp_path / "b", sandbox="auto") as b:
            assert b.evaluate(load_task(ADD_TASK), GOOD, OPTS).status is Status.OK  # the other judge, ready
            got: dict = {}
            t = threading.Thread(target=lambda: got.update(r=a.evaluate(load_task(task), source, OPTS)))
            t.start()
            end = time.monotonic() + 90
            while _busiest_uid() < 400 and t.is_alive() and time.monotonic() < end:
                time.sleep(0.2)
            before = _busiest_uid()
            r = b.evaluate(load_task(ADD_TASK), THREADS, OPTS)
            during = _busiest_uid()
            release.write_text("go")
            t.join(120)
        assert before >= 400 and during >= 400, (before, during)  # held all through the other's evaluation
        assert got["r"].status is Status.OK and "HOLD" in got["r"].output, got["r"].output[-300:]
        assert r.status is Status.OK and "THREADS ok" in r.output, (r.summary(), r.output[-300:])
    finally:
        release.touch()
        shutil.rmtree(folder, ignore_errors=True)


# a project's objects folder outlives the process whose sandbox wrote it ---------------------------------------
def test_for_the_sandbox_gives_what_a_folder_holds_to_the_uid_and_never_follows_a_link(tmp_path):
    """Each process's sandboxes have a uid of their own (``policy.sandbox_uid``); a folder another process's sandbox
    wrote (a project's objects) is given whole to this one's, its links as links."""
    import os

    from stark_lsp.evaluate.cuda_build import for_the_sandbox

    if os.geteuid() != 0:
        pytest.skip("only a root caller's sandboxes change uid")
    folder = tmp_path / "objects"
    (folder / "sub").mkdir(parents=True)
    target = tmp_path / "the-users-file"
    target.write_text("x")
    for p in (folder / "a.o", folder / "a.o.d", folder / "sub" / "b.o"):
        p.write_text("")
    (folder / "link").symlink_to(target)
    for p in (folder, folder / "sub", folder / "a.o", folder / "a.o.d", folder / "sub" / "b.o"):
        os.chown(p, 0x7F000001, 0x7F000001)  # an earlier process's sandbox
    for_the_sandbox(folder, 0x7F000002)
    for p in (folder, folder / "sub", folder / "a.o", folder / "a.o.d", folder / "sub" / "b.o", folder / "link"):
        assert os.lstat(p).st_uid == 0x7F000002, p
    assert os.stat(target).st_uid == 0, "the link was followed"


@pytest.mark.nvcc
@needs_sandbox
@pytest.mark.timeout(600)
def test_a_project_kernel_builds_where_another_processs_sandbox_wrote_its_objects(tmp_path):
    """The objects of a project's other units are shared between processes (``cuda_build._objects_dir``): written by
    one process's sandbox, they were that uid's, and the next process's build of the same project failed ("nvcc
    fatal: Could not open output file ...o.d"; CI, after session 31's own uid per process)."""
    import os

    from stark_lsp.evaluate.cuda_build import build_root

    if os.geteuid() != 0:
        pytest.skip("only a root caller's sandboxes change uid")
    task = load_task(ROOT / "samples" / "project" / "src" / "l2norm.cu")
    opts = EvalOptions(trials=2, cpu_reps=1, reps=10, time_budget_s=0.5, run_timeout_s=240)
    with Evaluator(workers=1, cache_dir=tmp_path / "first", sandbox="auto") as e:
        first = e.evaluate(task, task.root_source(), opts)
    assert first.compile is not None and first.compile.ok, first.summary()
    ours = [d for d in (build_root() / "objects").iterdir()
            if (d / "build.ninja").exists() and str(task.path.parent) in (d / "build.ninja").read_text()]
    assert ours
    for d in ours:  # as another process's sandbox left it, its objects to be made again
        for folder, dirs, files in os.walk(d):
            for name in (*dirs, *files):
                p = os.path.join(folder, name)
                if name.endswith(".o"):
                    os.unlink(p)
                elif name != ".lock":
                    os.chown(p, 0x7F000001, 0x7F000001, follow_symlinks=False)
        os.chown(d, 0x7F000001, 0x7F000001)
    with Evaluator(workers=1, cache_dir=tmp_path / "second", sandbox="auto") as e:
        second = e.evaluate(task, task.root_source(), opts)
    assert second.compile is not None and second.compile.ok, second.compile.log if second.compile else second.summary()
