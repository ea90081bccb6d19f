"""stark optimize / show / export, with the fake evaluator and team."""

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakes import FakeEvaluator, FakeTeam, fake_source, make_fake_task
from stark_lsp import cli
from stark_lsp.commands import optimize_cmd
from stark_lsp.search import TreeStore

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def ws(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    sub = tmp_path / "kernels"
    sub.mkdir()
    monkeypatch.chdir(sub)  # the store goes to the workspace root, not the cwd
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: FakeEvaluator())
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam(fail_rate=0.3))
    task = make_fake_task(sub)
    return tmp_path, task


def test_optimize_writes_the_best_kernel_and_a_table(ws, capsys):
    root, task = ws
    assert cli.main(["optimize", str(task.path), "--budget", "5", "--concurrency", "1"]) == 0
    out, err = capsys.readouterr()
    store = TreeStore.open(root / ".stark" / "tree.sqlite", readonly=True)
    best = store.best(task.task_id())
    written = task.path.with_name("k.best.py")
    assert written.read_text() == best.source
    assert f"wrote {written}" in out and "status" in out.splitlines()[0]
    assert len([l for l in out.splitlines() if l.strip()[:1].isdigit()]) == 6  # the root and 5 attempts
    assert "attempt 5/5" in err  # plain progress lines when not a TTY
    assert "\r" not in err


def test_optimize_starts_its_judges_warm_for_the_task(ws, monkeypatch):
    """The evaluator is told the task up front, so each judge starts its sandbox for it as it starts."""
    root, task = ws
    seen = []
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args",
                        lambda args, warm_for=None: seen.append(warm_for) or FakeEvaluator())
    assert cli.main(["optimize", str(task.path), "--budget", "1"]) in (0, 3)
    assert len(seen) == 1 and Path(seen[0].path).resolve() == Path(task.path).resolve()


def test_optimize_out_and_resume(ws, capsys, tmp_path):
    root, task = ws
    out_file = tmp_path / "best.py"
    assert cli.main(["optimize", str(task.path), "--budget", "2", "--out", str(out_file)]) == 0
    assert cli.main(["optimize", str(task.path), "--budget", "4", "--out", str(out_file)]) == 0
    store = TreeStore.open(root / ".stark" / "tree.sqlite", readonly=True)
    assert sorted(n.attempt for n in store.nodes(task.task_id()) if n.parent_id) == [1, 2, 3, 4]
    assert out_file.read_text() == store.best(task.task_id()).source
    kept = out_file.read_text()
    # the fresh tree's one attempt (0.95x, seed 0) does not beat the kernel: exit 3, the file is left alone
    assert cli.main(["optimize", str(task.path), "--budget", "1", "--fresh", "--out", str(out_file)]) == 3
    assert len(store.nodes(task.task_id())) == 2
    assert out_file.read_text() == kept
    archived = store.nodes(task.task_id() + "~1")  # --fresh archives the old tree, never deletes it
    assert len(archived) == 5 and any(n.source == kept for n in archived)
    assert "kept as" in capsys.readouterr().err


def test_optimize_with_no_correct_node_writes_nothing(ws, capsys, monkeypatch, tmp_path):
    root, _ = ws
    task = make_fake_task(tmp_path / "kernels", status="incorrect", name="bad")
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam(debug_fixes=False))
    assert cli.main(["optimize", str(task.path), "--budget", "2", "--store", str(tmp_path / "st")]) == 3
    assert "nothing written" in capsys.readouterr().out
    assert not task.path.with_name("bad.best.py").exists()


def test_optimize_rejects_a_non_task_and_a_bad_epsilon(ws, capsys, tmp_path):
    root, task = ws
    junk = tmp_path / "junk.txt"
    junk.write_text("x")
    assert cli.main(["optimize", str(junk)]) == 2
    assert cli.main(["optimize", str(task.path), "--epsilon", "2"]) == 2
    assert "epsilon" in capsys.readouterr().err


def test_show_prints_the_tree_and_json(ws, capsys):
    root, task = ws
    cli.main(["optimize", str(task.path), "--budget", "3", "--concurrency", "1"])
    capsys.readouterr()
    assert cli.main(["show", str(task.path)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("k.py (triton): 3 attempts")
    assert lines[1].startswith("#1 root [ok] 1.00× eager") and all(l.startswith("  ") for l in lines[2:-1])
    assert lines[-1].startswith("agents, whole tree: ")  # the fake team's calls count tokens (tests/test_usage_views.py)
    assert cli.main(["show", str(task.path), "--json", "--sources"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["task_id"] == task.task_id() and len(data["nodes"]) == 4
    assert data["nodes"][0]["source"] == fake_source(1.0)
    assert data["best_node_id"] in [n["id"] for n in data["nodes"]]


def test_show_without_a_tree(ws, capsys):
    root, task = ws
    assert cli.main(["show", str(task.path)]) == 2
    assert "no search store at" in capsys.readouterr().err
    TreeStore.open(root / ".stark" / "tree.sqlite").close()
    assert cli.main(["show", str(task.path)]) == 2
    assert "no search tree for k.py" in capsys.readouterr().err


def test_export_a_node_and_the_best(ws, capsys, tmp_path):
    root, task = ws
    cli.main(["optimize", str(task.path), "--budget", "3", "--concurrency", "1"])
    capsys.readouterr()
    assert cli.main(["export", str(task.path), "1"]) == 0
    assert capsys.readouterr().out == fake_source(1.0)
    target = tmp_path / "b.py"
    assert cli.main(["export", str(task.path), "best", "-o", str(target)]) == 0
    store = TreeStore.open(root / ".stark" / "tree.sqlite", readonly=True)
    assert target.read_text() == store.best(task.task_id()).source
    assert cli.main(["export", str(task.path), "999"]) == 2
    assert "no node 999" in capsys.readouterr().err
    assert cli.main(["export", str(task.path), "x"]) == 2
    assert "NODE_ID 'x'" in capsys.readouterr().err


def optimize_in_a_process(task, store_dir: Path, *args: str) -> subprocess.Popen:
    """``stark optimize TASK`` as a user runs it, with the fake evaluator and team (``SCRIPT``)."""
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT.format(tests=str(Path(__file__).parent)), "optimize", str(task.path),
         *args, "--store", str(store_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_attempts(store_dir: Path, task, n: int, timeout: float = 30.0) -> None:
    """Until ``n`` attempts of the process's search are complete in its store (or ``timeout`` passed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        nodes = []
        if (store_dir / "tree.sqlite").exists():
            try:
                nodes = TreeStore.open(store_dir / "tree.sqlite", readonly=True).nodes(task.task_id())
            except Exception:
                pass
        if sum(1 for n in nodes if n.parent_id and n.completed) >= n:
            return
        time.sleep(0.05)


SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from fakes import FakeEvaluator, FakeTeam
from stark_lsp import cli
from stark_lsp.commands import optimize_cmd
optimize_cmd.evaluator_from_args = lambda args, warm_for=None: FakeEvaluator(delay=0.3)
optimize_cmd.team_from_args = lambda args: FakeTeam()
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT")
def test_ctrl_c_stops_cleanly_and_writes_no_best_it_did_not_re_time(tmp_path):
    task = make_fake_task(tmp_path)
    store_dir = tmp_path / "st"
    proc = optimize_in_a_process(task, store_dir, "--budget", "30", "--concurrency", "2")
    wait_for_attempts(store_dir, task, 2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "the attempts in flight are cut and will be redone" in err
    assert "to resume, run the same command again: stark optimize" in err
    nodes = TreeStore.open(store_dir / "tree.sqlite", readonly=True).nodes(task.task_id())
    assert not any(n.in_flight for n in nodes)
    assert 2 <= sum(1 for n in nodes if n.parent_id and n.completed) < 30
    # the search did not end: no verdict, nothing written; the best so far, measured once, labelled so, the
    # command that writes it, and the one that resumes, last (issue 24's hostile pass)
    assert not task.path.with_name("k.best.py").exists()
    assert "no verified candidate" not in out and "beat your kernel" not in out, out
    line = next(x for x in out.splitlines() if x.startswith("interrupted before the search's end: "))
    assert re.search(r"the best so far is node #\d+, [\d.]+× your kernel \(one measurement, not yet timed in turn "
                     r"with yours\); nothing written \(stark export \S+k\.py \d+ -o \S+k\.best\.py --store \S+ "
                     r"writes it\)$", line), line
    assert err.rstrip().splitlines()[-1].startswith("stark optimize: interrupted: the tree is saved; to resume")


def test_a_task_deleted_mid_search_stops_the_command_with_one_line_and_writes_nothing(tmp_path):
    """The CLI as a user runs it: the kernel file goes while the search runs; exit 2, one line saying so,
    no best file, no traceback (issue 24, item 8)."""
    task = make_fake_task(tmp_path)
    store_dir = tmp_path / "st"
    proc = optimize_in_a_process(task, store_dir, "--budget", "30", "--concurrency", "1")
    wait_for_attempts(store_dir, task, 1)
    task.path.unlink()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2, err
    assert "is gone (deleted or moved during the search)" in err and "Traceback" not in err
    assert not task.path.with_name("k.best.py").exists()


def test_optimize_into_a_closed_pipe_runs_to_its_own_end(tmp_path):
    """``stark optimize ... | head -1``: the reader goes after a line; the command still finishes its
    search and exits with its own code, and nothing is recorded as a BrokenPipeError."""
    task = make_fake_task(tmp_path)
    store_dir = tmp_path / "st"
    proc = optimize_in_a_process(task, store_dir, "--budget", "4", "--concurrency", "1")
    first = proc.stdout.readline()
    proc.stdout.close()  # head -1 is done
    err = proc.stderr.read()
    code = proc.wait(timeout=60)
    assert first.strip() and code in (0, 3), err
    assert "BrokenPipe" not in err and "Traceback" not in err
    nodes = TreeStore.open(store_dir / "tree.sqlite", readonly=True).nodes(task.task_id())
    assert sum(1 for n in nodes if n.parent_id) == 4 and not any("BrokenPipe" in (n.error or "") for n in nodes)


def test_optimize_without_a_usable_team(ws, capsys, monkeypatch):
    root, task = ws
    from stark_lsp.agents.base import AgentError

    def no_team(args):
        raise AgentError("unknown team 'x'")

    monkeypatch.setattr(optimize_cmd, "team_from_args", no_team)
    assert cli.main(["optimize", str(task.path)]) == 2
    assert "no agent team: unknown team 'x'" in capsys.readouterr().err


def test_a_win_must_beat_the_noise_of_its_re_timing(tmp_path, capsys):
    """The best file is written only when every re-timing round beat the user's kernel (issue 24)."""
    from stark_lsp.commands.optimize_cmd import report_best
    from stark_lsp.search.node import Node

    root = Node(id=1, task_id="t", parent_id=None, kind="root", status="ok", source="a", speedup=1.0, runtime_ms=1.0)
    best = Node(id=2, task_id="t", parent_id=1, kind="plan_code", status="ok", source="b", speedup=1.02,
                runtime_ms=0.98, retimed={"rounds": 3, "speedup": 1.0, "speedup_low": 0.5, "speedup_high": 2.0,
                                          "runtime_ms": 1.0, "vs_root": 1.01, "vs_root_low": 0.62, "vs_root_high": 1.9})
    out = tmp_path / "k.best.py"
    assert not report_best(None, [root, best], best, out, None)
    said = capsys.readouterr().out
    assert "beyond the noise" in said and "0.62–1.90 over 3 rounds" in said and not out.exists()


def test_one_measurement_is_not_a_win_the_best_file_waits_for_the_re_timing(tmp_path, capsys):
    """A search stopped before its re-timing (Ctrl-C, --wall-time) writes nothing on a single run's figure."""
    from stark_lsp.commands.optimize_cmd import report_best
    from stark_lsp.search.node import Node

    root = Node(id=1, task_id="t", parent_id=None, kind="root", status="ok", source="a", speedup=1.0, runtime_ms=1.0)
    best = Node(id=2, task_id="t", parent_id=1, kind="plan_code", status="ok", source="b", speedup=2.0,
                runtime_ms=0.5)
    out = tmp_path / "k.best.py"
    assert not report_best(None, [root, best], best, out, None)
    said = capsys.readouterr().out
    assert "2.00× your kernel" in said and "run the same command again" in said and not out.exists()


def test_the_resume_command_goes_on_with_the_tree():
    from stark_lsp.commands.optimize_cmd import resume_argv

    assert resume_argv(["optimize", "k.py", "--fresh", "--budget", "8"]) == ["optimize", "k.py", "--budget", "8"]


def test_one_ratio_for_your_kernel_on_every_surface():
    """The table, the agents' lines, the JSON and the editor's tree all give the re-timed figure (issue 24)."""
    from stark_lsp.search.labels import timing_words
    from stark_lsp.search.node import Node, speedup_vs_yours
    from stark_lsp.search.render import node_dict
    from stark_lsp.search.node_view import node_view
    from stark_lsp.search.tree_view import TreeView
    from stark_lsp.speedups import ratio_text

    root = Node(id=1, task_id="t", parent_id=None, kind="root", status="ok", source="a", speedup=1.0, runtime_ms=1.0)
    n = Node(id=2, task_id="t", parent_id=1, kind="plan_code", status="ok", source="b", speedup=3.0,
             runtime_ms=0.25, retimed={"rounds": 3, "speedup": 2.1, "speedup_low": 2.0, "speedup_high": 2.2,
                                       "runtime_ms": 0.4, "vs_root": 2.5, "vs_root_low": 2.4, "vs_root_high": 2.6})
    assert speedup_vs_yours(n, root) == 2.5
    assert "2.50× your kernel" in timing_words(n, root)
    assert node_dict(n, root=root)["speedup_vs_yours"] == 2.5 and node_dict(n, root=root)["retimed"]["vs_root"] == 2.5
    tree = TreeView("t", (node_view(root), node_view(n)))
    assert ratio_text(tree.gain(tree.get(2))) == "2.50×"


def test_a_re_run_of_a_spent_tree_says_so(ws, capsys):
    root, task = ws
    cli.main(["optimize", str(task.path), "--budget", "2", "--concurrency", "1"])
    capsys.readouterr()
    cli.main(["optimize", str(task.path), "--budget", "2", "--concurrency", "1"])
    err = capsys.readouterr().err
    assert "already spent a budget of 2" in err and "--fresh" in err


def test_a_changed_task_file_is_said_to_start_a_new_tree(ws, capsys):
    root, task = ws
    cli.main(["optimize", str(task.path), "--budget", "2", "--concurrency", "1"])
    capsys.readouterr()
    task.path.write_text(task.path.read_text() + "\n# edited\n")
    cli.main(["optimize", str(task.path), "--budget", "2", "--concurrency", "1"])
    err = capsys.readouterr().err
    assert "changed since the stored tree began" in err and "starting a new one" in err
    assert "already spent" not in err and "attempt 2/2" in err  # the new tree is searched, not called spent


def test_a_changed_harness_starts_a_new_tree_and_never_says_the_old_one_is_spent(ws, capsys):
    """A budget no larger than the old tree's attempts, and a harness edited since: the old tree is archived
    and a new one searched, so no "already spent" notice comes first (issue 24, item 12)."""
    root, task = ws
    harness = task.path.with_name("k.harness.py")
    harness_text = 'ENTRY = "entry_kernel"\n\n\ndef reference():\n    return []\n\n\ndef get_inputs():\n    return []\n'
    harness.write_text(harness_text)  # a harness stark's checks accept
    cli.main(["optimize", str(task.path), "--budget", "2", "--concurrency", "1"])
    capsys.readouterr()
    cli.main(["optimize", str(task.path), "--budget", "1", "--concurrency", "1"])  # nothing changed: spent
    assert "already spent a budget of 1 (2 attempts)" in capsys.readouterr().err
    harness.write_text(harness_text + "# edited\n")
    cli.main(["optimize", str(task.path), "--budget", "1", "--concurrency", "1"])
    err = capsys.readouterr().err
    assert "the harness changed since the stored tree began" in err and "starting a new one" in err
    assert "already spent" not in err and "attempt 1/1" in err


def test_one_ratio_through_every_surface_of_a_real_tree(ws, capsys):
    """One tree, re-timed, rendered by every surface a user or an agent reads: `stark show` (table, --node,
    --node --json), the editor's tree and labels, and the agents' lines give the same two figures."""
    import json as _json

    from stark_lsp.search.labels import timing_words
    from stark_lsp.server import labels as server_labels
    from stark_lsp.search.tree_view import tree_view

    root, task = ws
    cli.main(["optimize", str(task.path), "--budget", "4", "--concurrency", "1"])
    store = TreeStore.open(root / ".stark" / "tree.sqlite")
    nodes = store.nodes(task.task_id())
    n = next(x for x in nodes if x.parent_id is not None and x.correct)
    store.update_node(n.id, retimed={"rounds": 3, "speedup": 2.1, "speedup_low": 2.0, "speedup_high": 2.2,
                                     "runtime_ms": 0.4, "vs_root": 2.5, "vs_root_low": 2.4, "vs_root_high": 2.6})
    # your kernel's medians of the same rounds: 2.1 / 0.84 = 2.5, the re-timed "× yours" every surface prints
    store.update_node(next(x for x in nodes if x.parent_id is None).id,
                      retimed={"rounds": 3, "speedup": 0.84, "speedup_low": 0.8, "speedup_high": 0.9, "runtime_ms": 1.0})
    nodes = store.nodes(task.task_id())
    n, top = next(x for x in nodes if x.id == n.id), next(x for x in nodes if x.parent_id is None)
    store.close()
    capsys.readouterr()
    assert cli.main(["show", str(task.path)]) == 0
    row = next(ln for ln in capsys.readouterr().out.splitlines() if ln.lstrip().startswith(f"#{n.id} "))
    assert "2.50×" in row and "2.10×" in row, row
    assert cli.main(["show", str(task.path), "--node", str(n.id)]) == 0
    detail = capsys.readouterr().out
    assert "2.50× your kernel" in detail and "2.10× eager" in detail, detail
    assert cli.main(["show", str(task.path), "--node", str(n.id), "--json"]) == 0
    d = _json.loads(capsys.readouterr().out)
    assert (d["speedup_vs_yours"], d["speedup_vs_eager"]) == (2.5, 2.1)
    tree = tree_view(task.task_id(), nodes)
    assert server_labels.gain_text(tree, tree.get(n.id)).startswith("2.50× your kernel")
    assert server_labels.eager_text(tree.get(n.id)).startswith("2.10× eager")
    words = timing_words(n, top)
    assert "2.50× your kernel" in words and "2.10× eager" in words, words
    # export's line and the agents' history line: the re-timed ms with the re-timed × eager, not the single run's
    assert cli.main(["export", str(task.path), str(n.id), "-o", str(root / "n.py")]) == 0
    said = capsys.readouterr().err
    assert "2.10× eager" in said and "0.4 ms" in said and f"{n.runtime_ms:.4g} ms" not in said, said
    from stark_lsp.search.history_window import outcome_summary

    assert "2.10× eager" in outcome_summary(n) and "0.4 ms" in outcome_summary(n), outcome_summary(n)


PROGRESS_BEST = re.compile(r"best ([\d.]+)× your kernel, ([\d.]+)× eager(?: \([^)]*\))? \(#(\d+)\)")
RETIMED_BEST = re.compile(r"\| re-timed: best #(\d+) ([\d.]+)× eager \([^)]*\), ([\d.]+)× your kernel")


def retimed_progress_line(err: str) -> tuple[re.Match, re.Match]:
    """The progress line printed as the re-timing ends: its best, and what the re-timing said."""
    line = next(ln for ln in err.splitlines() if "| re-timed: best #" in ln)
    best, said = PROGRESS_BEST.search(line), RETIMED_BEST.search(line)
    assert best and said, line
    return best, said


def test_the_progress_line_and_the_table_give_the_re_timed_figures_stark_show_gives(ws, capsys, monkeypatch):
    """The live line of `stark optimize` once the re-timing ends, the final table (× yours, × eager and ms) and
    `stark show --node N --json` give the same best and the same figures: the re-timed ones, which disagree
    with the single runs here (issue 24, items 2 and 10)."""
    from fakes import RetimedEvaluator
    from stark_lsp.speedups import ratio_text

    root, task = ws
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: RetimedEvaluator())
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam(factor=2.0))
    cli.main(["optimize", str(task.path), "--budget", "4", "--concurrency", "1"])
    out, err = capsys.readouterr()
    best, said = retimed_progress_line(err)
    assert best.group(3) == said.group(1), (best.group(0), said.group(0))  # one best
    assert (best.group(1), best.group(2)) == (said.group(3), said.group(2))  # one pair of figures
    node_id = int(best.group(3))

    assert cli.main(["show", str(task.path), "--node", str(node_id), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["retimed"] and d["speedup_vs_eager"] != d["single_speedup"]  # the re-timing disagreed with the single run
    assert d["speedup"] == d["speedup_vs_eager"] and d["runtime_ms"] == d["retimed"]["runtime_ms"]  # one figure
    assert ratio_text(d["speedup_vs_yours"]) == best.group(1) + "×"
    assert ratio_text(d["speedup_vs_eager"]) == best.group(2) + "×"
    with TreeStore.open(root / ".stark" / "tree.sqlite", readonly=True) as store:
        assert store.best(task.task_id()).id == node_id
        first = store.root(task.task_id())

    # the optimize table: the best's row has the same × yours and × eager, and the re-timed ms that they divide
    row = next(ln for ln in out.splitlines() if ln.lstrip().startswith(f"{node_id}* ")).split()
    yours, eager, ms = row[5], row[6], row[7]
    assert (yours, eager) == (best.group(1) + "×", best.group(2) + "×"), row
    assert ms == f"{d['retimed']['runtime_ms']:.4g}" == f"{d['runtime_ms']:.4g}" != f"{d['single_runtime_ms']:.4g}", row
    assert ratio_text(first.runtime_ms / d["retimed"]["runtime_ms"]) == yours  # ms and × yours agree


def test_export_best_says_when_the_best_is_your_own_kernel(ws, capsys, monkeypatch):
    _, task = ws
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam(factor=0.5))  # every child slower
    assert cli.main(["optimize", str(task.path), "--budget", "2", "--concurrency", "1"]) == 3
    capsys.readouterr()
    assert cli.main(["export", str(task.path), "best"]) == 0
    got = capsys.readouterr()
    assert got.out == fake_source(1.0)
    assert got.err == "stark export: the best node is #1, your kernel itself: no candidate beat it\n"


def test_export_best_with_no_correct_node_is_the_documented_exit_1(ws, capsys, monkeypatch, tmp_path):
    from stark_lsp import exit_codes

    task = make_fake_task(tmp_path / "kernels", status="incorrect", name="bad")
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam(debug_fixes=False))
    cli.main(["optimize", str(task.path), "--budget", "1", "--store", str(tmp_path / "st")])
    capsys.readouterr()
    assert cli.main(["export", str(task.path), "best", "--store", str(tmp_path / "st")]) == exit_codes.FAILED
    assert "no correct node" in capsys.readouterr().err
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| 1 |"))
    assert "`export TASK best` of a tree with no correct node" in row
    assert "(export best)" in exit_codes.MEANINGS[exit_codes.FAILED]


def test_one_attempt_is_said_as_one(ws, capsys):
    _, task = ws
    cli.main(["optimize", str(task.path), "--budget", "1", "--concurrency", "1"])
    cli.main(["optimize", str(task.path), "--budget", "1", "--concurrency", "1"])
    assert "a budget of 1 (1 attempt): nothing new" in capsys.readouterr().err
    assert cli.main(["show", str(task.path)]) == 0
    assert ": 1 attempt, " in capsys.readouterr().out


def test_show_of_a_node_of_another_tree_lists_this_trees_ids_with_their_gaps(ws, capsys):
    """Two tasks in one store: a tree's ids have gaps; 'nodes: 1..9' named ids of the other tree."""
    root, task = ws
    other = make_fake_task(task.path.parent, name="k2")
    cli.main(["optimize", str(task.path), "--budget", "1", "--concurrency", "1"])
    cli.main(["optimize", str(other.path), "--budget", "1", "--concurrency", "1"])
    cli.main(["optimize", str(task.path), "--budget", "2", "--concurrency", "1"])
    capsys.readouterr()
    assert cli.main(["show", str(task.path), "--json"]) == 0
    mine = [n["id"] for n in json.loads(capsys.readouterr().out)["nodes"]]
    assert cli.main(["show", str(other.path), "--json"]) == 0
    theirs = [n["id"] for n in json.loads(capsys.readouterr().out)["nodes"]]
    gap = next(i for i in theirs if min(mine) < i < max(mine))
    assert cli.main(["show", str(task.path), "--node", str(gap)]) == 2
    err = capsys.readouterr().err
    listed = re.search(r"\(nodes: (.*)\)$", err.strip()).group(1)
    shown = {i for part in listed.split(", ") for a, _, b in [part.partition("-")] for i in range(int(a), int(b or a) + 1)}
    assert shown == set(mine) and gap not in shown, err


def test_show_of_a_tree_kept_in_another_store_names_the_store_flag(ws, capsys):
    """optimize --store DIR, then show without it: 'run optimize first' alone sent the user to search again."""
    root, task = ws
    cli.main(["optimize", str(task.path), "--budget", "1", "--concurrency", "1", "--store", str(root / "elsewhere")])
    other = make_fake_task(task.path.parent, name="k2")  # the workspace's own store exists, without k's tree
    cli.main(["optimize", str(other.path), "--budget", "1", "--concurrency", "1"])
    capsys.readouterr()
    for command in (["show", str(task.path)], ["export", str(task.path), "best"]):
        assert cli.main(command) == 2
        err = capsys.readouterr().err
        assert "no search tree for k.py" in err and "--store DIR" in err and err.count("\n") == 1, err
    assert cli.main(["show", str(task.path), "--store", str(root / "elsewhere")]) == 0


def test_export_best_of_a_task_with_only_archived_trees_says_so(ws, capsys):
    """--fresh archives the tree before the new one begins; when the new one never began (the LLM endpoint
    refused), export best said 'no correct node in the tree' where show said 'only archived trees'."""
    root, task = ws
    cli.main(["optimize", str(task.path), "--budget", "1", "--concurrency", "1"])
    store = TreeStore.open(root / ".stark" / "tree.sqlite")
    store.archive_tree(task.task_id())
    store.close()
    capsys.readouterr()
    assert cli.main(["export", str(task.path), "best"]) == 1
    err = capsys.readouterr().err
    assert "has only archived trees" in err and "--archived" in err and err.count("\n") == 1, err


def test_a_store_deleted_mid_search_is_said_and_nothing_is_written(ws, capsys, monkeypatch):
    """rm -rf .stark while optimize ran: the search went on in the deleted file, wrote the best with exit 0,
    and the tree (which keeps what the best file replaces) was gone: said in one line, exit 2, nothing written."""
    import shutil as _shutil

    root, task = ws

    class DeletesTheStore(FakeEvaluator):
        def evaluate(self, t, source, options=None):
            if self.calls == 1:
                _shutil.rmtree(root / ".stark")
            return super().evaluate(t, source, options)

    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: DeletesTheStore())
    code = cli.main(["optimize", str(task.path), "--budget", "3", "--concurrency", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "was deleted during the search: this run's nodes are lost; nothing written" in err, err
    assert not task.path.with_name("k.best.py").exists()


def test_show_of_a_task_edited_since_its_tree_began_says_so(ws, capsys):
    """The task file edited during or after a search: `stark show` printed the tree's '12.9× your kernel' of
    the earlier version with no word of it (the next optimize archives the tree)."""
    root, task = ws
    cli.main(["optimize", str(task.path), "--budget", "1", "--concurrency", "1"])
    capsys.readouterr()
    assert cli.main(["show", str(task.path)]) == 0
    assert "changed since" not in capsys.readouterr().err
    task.path.write_text(task.path.read_text() + "\n# edited\n")
    for extra in ((), ("--json",)):
        assert cli.main(["show", str(task.path), *extra]) == 0
        out, err = capsys.readouterr()
        assert "the task file changed since this tree began" in err and err.count("\n") == 1, err
        assert "changed since" not in out
