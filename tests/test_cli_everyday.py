"""Everyday use (issue 24): what a user's own commands hit, each run as the real command in a subprocess.

A read-only workspace (also as root, who ignores file modes), a command run from another folder than the
task's, ``--cache-dir`` and ``$STARK_CACHE_DIR``, and one "× your kernel" figure for the best node on every
surface that prints it (optimize's table and best line, ``stark show``, ``--node N``, ``--json``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from stark_lsp import exit_codes
from stark_lsp.speedups import ratio_text
from test_cli_refusals import SAMPLES, refused, stark, ws  # noqa: F401  (ws: the fixture)

pytestmark = pytest.mark.timeout(300)

SMALL = {"STARK_SMALL": "1"}


def copy_sample(to: Path) -> Path:
    for f in ("swish_add.py", "swish_add.harness.py"):
        shutil.copy(SAMPLES / "mistuned" / f, to / f)
    return to / "swish_add.py"


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# --- 1. a read-only workspace ----------------------------------------------------------------

RO_MOUNT = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && cd "$0" && exec "$@"'


def read_only(folder: Path) -> tuple[str, ...]:
    """A prefix that runs a command with ``folder`` read-only, in a way root respects too: as root, a
    read-only bind mount of it in a mount namespace of the command's own (nothing outside sees it);
    otherwise the caller takes away the write bit (``chmod``)."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("unshare") is None:
        pytest.skip("root, and no unshare here for a read-only bind mount")
    probe = subprocess.run(["unshare", "-m", "sh", "-c", RO_MOUNT, str(folder), "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"root, and no read-only bind mount here: {probe.stderr.decode(errors='replace').strip()}")
    return ("unshare", "-m", "sh", "-c", RO_MOUNT, str(folder))


@pytest.fixture
def ro_workspace(ws, monkeypatch):
    """The sample in ``ws``, and a prefix under which ``ws`` is read-only (``chmod 555`` without root)."""
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("STARK_CACHE_DIR", raising=False)
    copy_sample(ws)
    prefix = read_only(ws)
    if not prefix:
        os.chmod(ws, 0o555)
    yield ws, prefix
    os.chmod(ws, 0o755)


def test_a_read_only_workspace_is_refused_with_the_fix_before_anything_runs(ro_workspace, tmp_path_factory):
    ws, prefix = ro_workspace
    home, out = tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("out")
    before = listing(ws)
    env = {**SMALL, "HOME": str(home)}
    # the plain command: both the best file (beside the task) and the tree (.stark) would go into ws
    line = refused(stark("optimize", "swish_add.py", "--budget", "1", cwd=ws, env=env, prefix=prefix),
                   "not writable", "--out", "--store DIR")
    assert line.startswith("stark optimize: ")
    # --out elsewhere: the tree still would go into ws
    refused(stark("optimize", "swish_add.py", "--budget", "1", "--out", str(out / "best.py"), cwd=ws, env=env,
                  prefix=prefix), "use --store DIR")
    assert listing(ws) == before and not list(out.iterdir())
    assert not (home / ".cache" / "stark-lsp").exists()  # refused before the evaluator started: nothing cached


def test_with_out_and_store_elsewhere_a_read_only_workspace_is_searched(ro_workspace, tmp_path_factory):
    """The fix the refusal names works: the search runs, and writes only where it was told."""
    ws, prefix = ro_workspace
    home, out = tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("out")
    before = listing(ws)
    r = stark("optimize", "swish_add.py", "--budget", "1", "--concurrency", "1", "--out", str(out / "best.py"),
              "--store", str(out / "store"), cwd=ws, env={**SMALL, "HOME": str(home)}, prefix=prefix)
    assert r.returncode in (exit_codes.OK, exit_codes.NO_IMPROVEMENT), r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    assert (out / "store" / "tree.sqlite").exists() and listing(ws) == before


# --- 2 and 4. from another folder; one figure on every surface ---------------------------------

@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """The sample searched twice, each run from a folder of its own (neither the task's): budget 1, then 3."""
    ws = tmp_path_factory.mktemp("task")
    (ws / ".git").mkdir()
    task = copy_sample(ws)
    first, second = tmp_path_factory.mktemp("first"), tmp_path_factory.mktemp("second")
    runs = [stark("optimize", str(task), "--budget", budget, "--concurrency", "1", cwd=cwd, env=SMALL)
            for budget, cwd in (("1", first), ("3", second))]
    return ws, task, (first, second), runs


def store_line(r: subprocess.CompletedProcess) -> str:
    m = re.search(r"^stark optimize: .*, store (\S+)$", r.stderr, re.M)
    assert m, r.stderr
    return m.group(1)


@pytest.mark.timeout(600)
def test_optimize_from_another_folder_reuses_the_store_beside_the_task(searched, tmp_path_factory):
    ws, task, folders, runs = searched
    for r in runs:
        assert r.returncode in (exit_codes.OK, exit_codes.NO_IMPROVEMENT), r.stdout + r.stderr
        assert "Traceback" not in r.stdout + r.stderr
        assert store_line(r) == str(ws / ".stark" / "tree.sqlite")
    for f in folders:
        assert not (f / ".stark").exists() and not list(f.iterdir()), listing(f)
    # the second run went on with the first's tree: one root, timed once, and attempts 1..3 under it
    assert "evaluating the original kernel" in runs[0].stderr
    assert "evaluating the original kernel" not in runs[1].stderr
    assert "attempt 1: plan" in runs[0].stderr and "attempt 1: plan" not in runs[1].stderr
    third = tmp_path_factory.mktemp("third")
    r = stark("show", str(task), "--json", cwd=third)
    assert r.returncode == exit_codes.OK, r.stdout + r.stderr
    nodes = json.loads(r.stdout)["nodes"]
    assert [n["kind"] for n in nodes].count("root") == 1
    assert sorted(n["attempt"] for n in nodes if n["parent_id"] is not None) == [1, 2, 3]
    r = stark("show", str(task), "--archived", cwd=third)
    assert r.returncode == exit_codes.OK and "no archived trees" in r.stderr, r.stdout + r.stderr
    r = stark("show", str(task), cwd=third)
    assert r.returncode == exit_codes.OK and r.stdout.startswith("swish_add.py (triton): 3 attempts"), r.stdout
    assert not (third / ".stark").exists()


@pytest.mark.timeout(600)
def test_the_best_nodes_figure_against_your_kernel_is_one_on_every_surface(searched, tmp_path_factory):
    """optimize's table and best line, `stark show` (head and tree), `--node N` and `--json`: the same
    "× your kernel" for the best node, the re-timed one (show does not fall back to the single run)."""
    ws, task, _, runs = searched
    out = runs[1].stdout
    best = re.search(r"^best: node #(\d+), ([\d.]+×) your kernel \(", out, re.M)
    if best is None:
        pytest.skip(f"no candidate beat the kernel in this search: {out}")
    node, yours = int(best.group(1)), best.group(2)
    row = next(ln for ln in out.splitlines() if ln.lstrip().startswith(f"{node}* ")).split()
    assert row[5] == yours, (row, yours)

    third = tmp_path_factory.mktemp("show")
    r = stark("show", str(task), cwd=third)
    assert r.returncode == exit_codes.OK, r.stderr
    head, *rest = r.stdout.splitlines()
    assert f"best #{node}: {yours} your kernel, " in head, head
    tree_row = next(ln for ln in rest if ln.lstrip().startswith(f"#{node} "))
    assert f" {yours} yours, " in tree_row and "*best*" in tree_row, tree_row

    r = stark("show", str(task), "--node", str(node), cwd=third)
    assert r.returncode == exit_codes.OK, r.stderr
    assert re.match(rf"#{node} \w+: ok, [\d.]+ ms(?: \(eager [\d.]+ ms, timed in turn with it\))?, "
                    rf"{re.escape(yours)} your kernel, ", r.stdout), r.stdout  # on the CPU: eager's ms beside

    for extra in ((), ("--node", str(node))):
        r = stark("show", str(task), "--json", *extra, cwd=third)
        assert r.returncode == exit_codes.OK, r.stderr
        d = json.loads(r.stdout)
        if not extra:
            assert d["best_node_id"] == node
            d = next(n for n in d["nodes"] if n["id"] == node)
        assert d["retimed"] and d["speedup_vs_yours"] == d["retimed"]["vs_root"], d  # the re-timed figure
        assert ratio_text(d["speedup_vs_yours"]) == yours, (d["speedup_vs_yours"], yours)


# --- 3. --cache-dir and $STARK_CACHE_DIR -----------------------------------------------------

def cached_candidates(folder: Path) -> list[Path]:
    return sorted((folder / "candidates").glob("c*.py"))


@pytest.mark.parametrize("how", ["--cache-dir", "STARK_CACHE_DIR"])
def test_optimize_caches_where_it_is_told(ws, tmp_path_factory, monkeypatch, how):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("STARK_CACHE_DIR", raising=False)
    copy_sample(ws)
    home, cache = tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("cache") / "stark"
    env, extra = {**SMALL, "HOME": str(home)}, []
    if how == "--cache-dir":
        extra = ["--cache-dir", str(cache)]
    else:
        env["STARK_CACHE_DIR"] = str(cache)
    r = stark("optimize", "swish_add.py", "--budget", "1", "--concurrency", "1", *extra, cwd=ws, env=env)
    assert r.returncode in (exit_codes.OK, exit_codes.NO_IMPROVEMENT), r.stdout + r.stderr
    assert cached_candidates(cache), listing(cache) if cache.exists() else "no cache folder"
    assert not (home / ".cache" / "stark-lsp").exists(), listing(home)


def test_the_default_cache_is_under_home(ws, tmp_path_factory, monkeypatch):
    """What the two tests above check against: without either, the cache is ~/.cache/stark-lsp."""
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("STARK_CACHE_DIR", raising=False)
    copy_sample(ws)
    home = tmp_path_factory.mktemp("home")
    r = stark("optimize", "swish_add.py", "--budget", "1", "--concurrency", "1", cwd=ws,
              env={**SMALL, "HOME": str(home)})
    assert r.returncode in (exit_codes.OK, exit_codes.NO_IMPROVEMENT), r.stdout + r.stderr
    assert cached_candidates(home / ".cache" / "stark-lsp"), listing(home)


def test_bench_caches_where_it_is_told(ws, tmp_path_factory, monkeypatch):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("STARK_CACHE_DIR", raising=False)
    copy_sample(ws)
    home, cache = tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("cache") / "stark"
    r = stark("bench", "swish_add.py", "--policies", "greedy", "--budget", "1", "--retime-top", "0",
              "--concurrency", "1", "--out", str(ws / "bench"), "--cache-dir", str(cache), cwd=ws,
              env={**SMALL, "HOME": str(home)})
    assert r.returncode == exit_codes.OK, r.stdout + r.stderr
    assert cached_candidates(cache), listing(cache) if cache.exists() else "no cache folder"
    assert not (home / ".cache" / "stark-lsp").exists(), listing(home)
