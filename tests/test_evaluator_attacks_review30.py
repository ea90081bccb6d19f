"""Session 30: what session 29's review left readable. Outside ``/tmp`` and ``$HOME`` the whole filesystem was
visible read-only, its dot-entries covered only beside and above the task: another project's ``.env``, a
``proj/sub/.env``, a file written after the sandbox started, ``/container_info.json``. Every top-level folder
that is not the system's software is now an empty read-only tmpfs (``policy.elsewhere``, ``sealed``), the task's
folders and the Python installation bound back, and the dot-entries below a folder shown whole are covered too
(``policy.nested_dot_entries``). Runs on the CPU against a real sandboxed evaluator (docs/EVALUATOR.md)."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest

from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import Status
from stark_lsp.evaluate.sandbox import policy
from stark_lsp.evaluate.sandbox.policy import make_layout, nested_dot_entries, probe
from stark_lsp.tasks.spec import load_task

ROOT = Path(__file__).resolve().parents[1]
ADD_TASK = ROOT / "tests" / "data" / "evaluator" / "add_task.py"
ATTACK = ROOT / "tests" / "data" / "attacks" / "read_elsewhere.py"
OPTS = EvalOptions(trials=3, cpu_reps=5, reps=30, time_budget_s=1.0, load_timeout_s=30)
SECRETS = ("nested-env-secret", "deep-npm-secret", "other-project-secret", "late-secret")

sandboxed = pytest.mark.skipif(not probe().available, reason=f"no sandbox here: {probe().reason}")


def _under_any(p: str, dirs) -> bool:
    return any(p == d or p.startswith(d.rstrip("/") + "/") for d in dirs)


@contextlib.contextmanager
def _folder_made(path: Path):
    """A folder made at ``path`` (at ``/`` or in ``/var``: the test is skipped where that is not allowed), removed
    with whatever it holds afterwards."""
    try:
        path.mkdir()
    except OSError as e:
        pytest.skip(f"cannot make {path} here: {e}")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# the pure functions -------------------------------------------------------------------------------------------
def test_every_top_level_folder_but_the_systems_software_is_hidden_and_only_scratch_is_writable():
    hidden = policy.hidden_dirs()
    sealed = policy.sealed_dirs(hidden)
    names = os.listdir("/")
    if os.path.isdir("/var") and not os.path.islink("/var"):  # /var's own folders; its links (/var/run) stay
        names = [n for n in names if n != "var"] + [f"var/{n}" for n in os.listdir("/var")]
    for name in names:
        p = "/" + name
        if os.path.islink(p) or not os.path.isdir(p):
            continue
        if name in policy.SYSTEM_ROOTS:
            assert not _under_any(p, hidden), (p, hidden)
        else:
            assert _under_any(p, hidden), (p, hidden)
    for h in policy.HIDDEN_DIRS:  # the scratch folders stay hidden, writable: /var/tmp too inside a hidden /var
        if os.path.isdir(h) and not os.path.islink(h):
            assert h in hidden and h not in sealed, (h, hidden, sealed)
    assert not any(s in policy.scratch_dirs() for s in sealed)
    assert sorted(hidden) == list(hidden)  # a folder before those inside it: mounted in that order
    for f in policy.elsewhere()[1]:
        assert f in make_layout(gpu=False).covered_files


def test_nested_dot_entries_finds_them_at_any_depth_secret_names_first_within_its_bounds(tmp_path):
    proj = tmp_path / "proj"
    (proj / "sub" / "deep" / "er").mkdir(parents=True)
    (proj / "sub" / ".env").write_text("KEY=1")
    (proj / "sub" / "deep" / "er" / ".npmrc").write_text("t")
    (proj / ".git" / "sub").mkdir(parents=True)  # a dot-folder is covered whole, never walked into
    (proj / ".git" / "sub" / ".inner").write_text("")
    (proj / "cache" / "x").mkdir(parents=True)
    (proj / "cache" / "x" / ".env").write_text("")
    (proj / "linked").symlink_to(tmp_path / "outside")  # never followed
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / ".env").write_text("")
    (proj / "sub" / ".venv").mkdir()  # needed: kept
    dirs, files = nested_dot_entries([str(proj)], needed=[str(proj / "sub" / ".venv")], skip=[str(proj / "cache")])
    assert str(proj / ".git") in dirs and str(proj / "sub" / ".venv") not in dirs, dirs
    assert {str(proj / "sub" / ".env"), str(proj / "sub" / "deep" / "er" / ".npmrc")} <= set(files), files
    assert not any(".inner" in f or "/cache/" in f or "outside" in f for f in files), files
    many = tmp_path / "many"
    many.mkdir()
    for i in range(policy.MAX_NESTED_ENTRIES + 20):
        (many / f".a{i:03d}").write_text("")
    (many / ".zz-secret").write_text("")
    _, files = nested_dot_entries([str(many)])
    assert len(files) == policy.MAX_NESTED_ENTRIES and str(many / ".zz-secret") in files


def test_a_toolkit_on_the_path_in_a_hidden_folder_is_bound_back_but_never_a_top_level_or_home_folder(
        tmp_path, monkeypatch):
    tool = tmp_path / "cuda" / "bin"
    tool.mkdir(parents=True)
    tool.parent.chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([str(tool), "/tmp", "/", os.environ.get("PATH", "")]))
    paths = policy.tool_paths()
    assert str(tool) in paths and "/tmp" not in paths and "/" not in paths, paths
    assert os.path.realpath(os.path.expanduser("~")) not in paths


# a real sandboxed evaluator -----------------------------------------------------------------------------------
def _projects(base: Path) -> tuple[Path, Path]:
    proj = base / f"nestproj-{os.getpid()}"
    other = base / f"otherproj-{os.getpid()}"
    for d in (proj, other):
        shutil.rmtree(d, ignore_errors=True)
    (proj / "sub" / "deep").mkdir(parents=True)
    (proj / "sub" / ".env").write_text("OPENAI_API_KEY=nested-env-secret\n")
    (proj / "sub" / "deep" / ".npmrc").write_text("//r/:_authToken=deep-npm-secret\n")
    shutil.copy(ADD_TASK, proj / "kernel_task.py")
    other.mkdir()
    (other / "notes.txt").write_text("other-project-secret\n")
    (other / ".env").write_text("KEY=other-project-secret\n")
    for p in [proj, other, *proj.rglob("*"), *other.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return proj, other


@sandboxed
def test_a_candidate_reads_no_nested_dotfile_no_other_project_no_late_file_and_writes_nowhere_it_should_not():
    """The candidate walks its project's dot-files at every depth, another project beside it, the top of ``/``,
    and tries to leave a file in its project and in every top-level folder; a second evaluation of the same
    evaluator (the same zygote: its layout was fixed before) looks for a secret written after the first. Nothing
    secret appears, nothing is left, the honest result still comes out."""
    base = ROOT.parent
    if not os.access(base, os.W_OK):
        pytest.skip(f"cannot write beside the repository ({base})")
    proj, other = _projects(base)
    cache = base / f"nestproj-cache-{os.getpid()}"
    source = ATTACK.read_text().replace("PROJECT_DIR", str(proj)).replace("OTHER_DIR", str(other))
    try:
        with Evaluator(workers=1, cache_dir=cache, sandbox="auto") as e:
            first = e.evaluate(load_task(proj / "kernel_task.py"), source, OPTS)
            (proj / "sub" / ".late").write_text("late-secret\n")  # made after the sandbox started
            (other / "late.txt").write_text("late-secret\n")
            second = e.evaluate(load_task(proj / "kernel_task.py"), source, OPTS)
        left = (proj / "left-for-the-next-candidate").exists()
    finally:
        for d in (proj, other, cache):
            shutil.rmtree(d, ignore_errors=True)
    for r in (first, second):
        assert r.status is Status.OK, r.summary()
        for secret in SECRETS:
            assert secret not in r.output, r.output[-3000:]
        assert "WROTE " + str(proj) not in r.output and not left, r.output[-3000:]
        assert not any(line.startswith("MOUNT ") and line.endswith(" rw") and not _under_any(
            line.split()[1], policy.scratch_dirs()) for line in r.output.splitlines()), r.output[-3000:]
    assert "NO " + str(proj / "sub" / ".env") in first.output, first.output[-3000:]


def test_a_layout_knows_when_a_folder_it_covered_has_new_entries_but_not_from_its_own_writes(tmp_path):
    proj = tmp_path / "proj"
    (proj / "sub").mkdir(parents=True)
    (proj / "k.py").write_text("")
    build = tmp_path / "build"
    build.mkdir()
    os.utime(proj / "sub", ns=(1, 1))  # long ago: a file made there now changes it, however coarse the clock
    lay = make_layout(expose=[str(proj)], writable=[str(build)], gpu=False)
    assert policy.unchanged(lay)
    (build / "obj.o").write_text("")  # the sandbox's own work
    assert policy.unchanged(lay)
    (proj / "sub" / ".env").write_text("late")
    assert not policy.unchanged(lay)
    again = make_layout(expose=[str(proj)], writable=[str(build)], gpu=False)
    assert str(proj / "sub" / ".env") in again.covered_files and policy.unchanged(again)
    assert policy.Layout.from_json(again.to_json()) == again and "stamps" not in again.to_json()


# the review of session 30's layout ----------------------------------------------------------------------------
def _top_level_folder(tmpfs: bool) -> Path | None:
    """A fresh top-level folder (``/srv``-like), a tmpfs of the machine's own when ``tmpfs`` and root may mount;
    None where ``/`` is not writable."""
    top = Path(f"/stark-review30-{os.getpid()}{'-tmpfs' if tmpfs else ''}")
    try:
        top.mkdir()
    except OSError:
        return None
    top.chmod(0o755)
    if tmpfs:
        import subprocess

        if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0755", "tmpfs",
                                                str(top)], capture_output=True).returncode != 0:
            top.rmdir()
            return None
    return top


@sandboxed
@pytest.mark.parametrize("tmpfs", [False, True], ids=["folder", "tmpfs"])
def test_a_task_directly_in_a_top_level_folder_runs_and_the_machines_mount_there_is_left_as_it_was(tmpfs, tmp_path):
    """A task at ``/srv/k.py`` binds ``/srv`` back over its hidden tmpfs; sealing the hidden folders then remounted
    the filesystem under that bind (a plain remount, not a bind remount): on a disk the options were refused and
    every candidate failed ("mount /srv: Invalid argument"); on a tmpfs of the machine's (a ``/scratch``) it was
    made read-only, and 1 GiB, for every process on the machine."""
    top = _top_level_folder(tmpfs)
    if top is None:
        pytest.skip("cannot make a top-level folder (or mount a tmpfs there) here")
    try:
        shutil.copy(ADD_TASK, top / "k.py")
        (top / "k.py").chmod(0o644)
        with Evaluator(workers=1, cache_dir=tmp_path / "cache", sandbox="auto") as e:
            r = e.evaluate(load_task(top / "k.py"), ADD_TASK.read_text().replace("class Model(", "class ModelNew("),
                           OPTS)
        (top / "still-writable").write_text("x")  # the machine's own folder (or tmpfs) after the sandbox
    finally:
        if tmpfs:
            import subprocess

            subprocess.run(["umount", str(top)], capture_output=True)
        shutil.rmtree(top, ignore_errors=True)
    assert r.status is Status.OK, r.summary()


def test_a_layout_knows_when_a_top_level_folder_or_one_of_vars_is_made_after_it():
    """A top-level folder (or file, or a folder of ``/var``'s) made after a zygote started was shown, read-only, to
    every later candidate of that zygote (``elsewhere`` lists them once, when the layout is made): measured, a
    ``/late/secret.txt``, ``/var/late/secret.txt`` and ``/late.json`` read by the second evaluation."""
    lay = make_layout(gpu=False)
    assert policy.unchanged(lay)
    for parent in ("/", "/var"):
        if not os.path.isdir(parent) or os.path.islink(parent):
            continue
        before = os.stat(parent).st_mtime_ns
        with _folder_made(Path(parent) / f"stark-review30-late-{os.getpid()}") as late:
            if os.stat(parent).st_mtime_ns == before:
                pytest.skip(f"{parent}'s modification time did not change (a coarse clock)")
            assert not policy.unchanged(lay), parent
            again = make_layout(gpu=False)
            assert str(late) in again.hidden and policy.unchanged(again), (late, again.hidden)
        lay = make_layout(gpu=False)


def test_python_paths_show_this_packages_folder_never_the_source_checkout_that_holds_it(monkeypatch):
    checkout = str(ROOT)
    monkeypatch.setattr("sys.path", [checkout, *__import__("sys").path])  # the judge's PYTHONPATH (pool.py)
    paths = policy.python_paths()
    assert str(ROOT / "stark_lsp") in paths
    if os.path.realpath(checkout) not in {os.path.realpath(p) for p in policy.install_paths()}:
        assert os.path.realpath(checkout) not in paths, paths


@sandboxed
def test_a_candidate_reads_no_store_nor_nested_dotfile_in_the_checkout_or_a_project_on_the_pythonpath(monkeypatch):
    """An editable install's judge has the source checkout on its PYTHONPATH (``pool.py``), and the user's own
    PYTHONPATH may name a project: both were shown whole, their nested dot-entries uncovered. Measured: a candidate
    read a workspace's ``.stark/tree.sqlite`` (other candidates' code) and a ``sub/.env`` under the checkout's
    ``out/``, and a ``sub/.env`` of a project on the PYTHONPATH."""
    base = ROOT.parent
    if not os.access(base, os.W_OK) or not os.access(ROOT, os.W_OK):
        pytest.skip("cannot write beside or in the repository")
    proj, other = _projects(base)
    inside = ROOT / "out" / f"review30-ws-{os.getpid()}"
    shutil.rmtree(inside, ignore_errors=True)
    (inside / ".stark").mkdir(parents=True)
    (inside / ".stark" / "tree.sqlite").write_text("other-candidates-code-secret\n")
    (inside / "sub").mkdir()
    (inside / "sub" / ".env").write_text("KEY=checkout-nested-secret\n")
    (other / "sub").mkdir()
    (other / "sub" / ".env").write_text("KEY=pythonpath-nested-secret\n")
    for p in [inside, *inside.rglob("*"), *other.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    monkeypatch.setenv("PYTHONPATH", str(other))
    targets = [inside / ".stark" / "tree.sqlite", inside / "sub" / ".env", other / "sub" / ".env"]
    source = ("import torch.nn as nn\n"
              f"for p in {[str(t) for t in targets]!r}:\n"
              "    try:\n        print('READ', p, open(p).read())\n"
              "    except OSError as e:\n        print('NO', p, e.strerror)\n"
              "class ModelNew(nn.Module):\n    def forward(self, a, b):\n        return a * 2 + b\n")
    try:
        with Evaluator(workers=1, cache_dir=base / f"nestproj-cache-{os.getpid()}", sandbox="auto") as e:
            r = e.evaluate(load_task(proj / "kernel_task.py"), source, OPTS)
    finally:
        for d in (proj, other, inside, base / f"nestproj-cache-{os.getpid()}"):
            shutil.rmtree(d, ignore_errors=True)
    assert r.status is Status.OK, r.summary()
    assert all(f"NO {t}" in r.output for t in targets), r.output[-3000:]
    for secret in ("other-candidates-code-secret", "checkout-nested-secret", "pythonpath-nested-secret"):
        assert secret not in r.output, r.output[-3000:]


_FINDER = '''import os
import sys
from importlib.util import spec_from_file_location

MAPPING = {NAME!r: FOLDER!r}


class _Finder:  # as setuptools' editable finder (``pip install -e`` of a flat layout) does
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname in MAPPING:
            return spec_from_file_location(fullname, os.path.join(MAPPING[fullname], "__init__.py"),
                                           submodule_search_locations=[MAPPING[fullname]])
        return None


def install():
    sys.meta_path.append(_Finder)
'''


@sandboxed
def test_a_task_importing_a_helper_installed_editable_from_a_hidden_folder_loads(tmp_path, monkeypatch):
    """setuptools' editable finder maps a package's name to its source, which is not on ``sys.path``: a task
    importing such a helper, its source in a hidden folder, failed to load in every candidate ("No module named").
    The finder is loaded here by a ``sitecustomize`` on the PYTHONPATH, as the ``.pth`` file of a real one does."""
    name = f"edhelper_r30_{os.getpid()}"
    lib = tmp_path / "edlib" / name
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("def twice(x):\n    return x * 2\n")
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    finder = f"__editable___{name}_0_1_finder"
    (site_dir / f"{finder}.py").write_text(_FINDER.replace("NAME!r", repr(name)).replace("FOLDER!r", repr(str(lib))))
    (site_dir / "sitecustomize.py").write_text(f"import {finder}\n{finder}.install()\n")
    task_dir = tmp_path / "task"
    task_dir.mkdir()
    (task_dir / "k.py").write_text(ADD_TASK.read_text().replace("import torch.nn as nn\n",
                                                                   f"import torch.nn as nn\nfrom {name} import twice\n")
                                   .replace("return a * 2 + b", "return twice(a) + b"))
    for p in [tmp_path, *tmp_path.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    monkeypatch.setenv("PYTHONPATH", str(site_dir))
    with Evaluator(workers=1, cache_dir=tmp_path / "cache", sandbox="auto") as e:
        r = e.evaluate(load_task(task_dir / "k.py"), ADD_TASK.read_text().replace("class Model(", "class ModelNew("),
                       OPTS)
    assert r.status is Status.OK, r.summary()


@sandboxed
@pytest.mark.parametrize("parent", ["/", "/var"])
def test_a_task_directly_in_the_root_or_var_loads_with_its_helper_and_the_other_top_level_files_stay_covered(
        parent, tmp_path):
    """``elsewhere`` lists the files at the top of ``/`` and of ``/var`` (``/container_info.json``) to cover: a task
    directly there (``/k.py``, its helper package beside it) was covered too, and could not open itself
    ("Permission denied: '/k.py'") in any candidate."""
    name = f"r30helper{os.getpid()}"
    task = Path(parent) / f"r30task{os.getpid()}.py"
    helper = Path(parent) / name
    other = Path(parent) / f"r30other{os.getpid()}.json"
    with _folder_made(helper), contextlib.ExitStack() as files:
        for p in (task, other):
            files.callback(p.unlink, missing_ok=True)
        (helper / "__init__.py").write_text("def twice(x):\n    return x * 2\n")
        task.write_text(ADD_TASK.read_text().replace("import torch.nn as nn\n",
                                                     f"import torch.nn as nn\nfrom {name} import twice\n"))
        other.write_text("top-level-file-secret\n")
        for p in (helper, helper / "__init__.py", task, other):
            p.chmod(0o755 if p.is_dir() else 0o644)
        source = ("import torch.nn as nn\n"
                  f"from {name} import twice\n"
                  f"try:\n    print('READ', open({str(other)!r}).read())\nexcept OSError as e:\n    print('NO', e)\n"
                  "class ModelNew(nn.Module):\n    def forward(self, a, b):\n        return twice(a) + b\n")
        with Evaluator(workers=1, cache_dir=tmp_path / "cache", sandbox="auto") as e:
            r = e.evaluate(load_task(task), source, OPTS)
    assert r.status is Status.OK, r.summary()
    assert "top-level-file-secret" not in r.output and "NO " in r.output, r.output[-3000:]


@sandboxed
def test_a_task_whose_helper_lies_on_a_volume_mounted_inside_its_folder_loads_and_cannot_write_there(tmp_path):
    """A task's folder is bound back into its hidden top-level folder: not recursively, the mounts below it (a
    volume inside the project, its helper package there) were left out, visible before session 30 hid ``/work``:
    every candidate failed to load the task ("No module named ..."). They come with it, read-only."""
    import subprocess

    base = ROOT.parent
    if os.geteuid() != 0 or not os.access(base, os.W_OK):
        pytest.skip("needs root (a mount) and a folder beside the repository")
    proj = base / f"r30vol-{os.getpid()}"
    shutil.rmtree(proj, ignore_errors=True)
    (proj / "vol").mkdir(parents=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,mode=0755", "tmpfs", str(proj / "vol")],
                      capture_output=True).returncode != 0:
        shutil.rmtree(proj, ignore_errors=True)
        pytest.skip("cannot mount a tmpfs here")
    try:
        (proj / "vol" / "volhelper").mkdir()
        (proj / "vol" / "volhelper" / "__init__.py").write_text("def twice(x):\n    return x * 2\n")
        (proj / "k.py").write_text(ADD_TASK.read_text().replace(
            "import torch.nn as nn\n", "import torch.nn as nn\nimport os, sys\n"
            "sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'vol'))\n"
            "from volhelper import twice\n"))
        for p in [proj, *proj.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        target = proj / "vol" / "left-by-a-candidate"
        source = ("import torch.nn as nn\n"
                  f"try:\n    open({str(target)!r}, 'w').write('x')\nexcept OSError as e:\n    print('NOWRITE', e)\n"
                  "class ModelNew(nn.Module):\n    def forward(self, a, b):\n        return a * 2 + b\n")
        with Evaluator(workers=1, cache_dir=tmp_path / "cache", sandbox="auto") as e:
            r = e.evaluate(load_task(proj / "k.py"), source, OPTS)
        left = target.exists()
    finally:
        subprocess.run(["umount", str(proj / "vol")], capture_output=True)
        shutil.rmtree(proj, ignore_errors=True)
    assert r.status is Status.OK, r.summary()
    assert not left and "NOWRITE" in r.output, r.output[-3000:]


def test_a_python_path_holding_the_home_folder_never_shows_it(tmp_path, monkeypatch):
    """PYTHONPATH=/work/u with HOME=/work/u/home: the Python path was bound back whole, and with it the home's
    files (measured: a candidate read ``home/notes.txt``), never shown whole otherwise (``never_whole``)."""
    import sys

    holder = tmp_path / "pp"
    (holder / "home").mkdir(parents=True)
    (holder / "home" / "notes.txt").write_text("home-secret")
    (holder / "mod.py").write_text("")
    monkeypatch.setenv("HOME", str(holder / "home"))
    monkeypatch.setattr(sys, "path", [str(holder), *sys.path])
    lay = make_layout(gpu=False)
    assert not lay.covers(holder / "home" / "notes.txt"), lay.expose


def test_a_search_store_below_a_task_folder_is_covered_past_the_cap(tmp_path):
    """The cap on nested dot-entries (``MAX_NESTED_ENTRIES``) was spent on a project's many dot-files (node_modules'
    ``.github`` folders, here 270 ``.a*`` files) before a ``sub/.stark`` store (every candidate's code) was reached."""
    proj = tmp_path / "proj"
    (proj / "sub" / ".stark").mkdir(parents=True)
    for i in range(policy.MAX_NESTED_ENTRIES + 14):
        (proj / f".a{i:03d}").write_text("")
    dirs, _ = nested_dot_entries([str(proj)])
    assert str(proj / "sub" / ".stark") in dirs, dirs[-5:]


def test_a_tool_on_the_path_is_bound_back_with_its_installation_but_never_a_home_folders(tmp_path, monkeypatch):
    """gcc of a toolset in ``/opt`` runs ``libexec/.../cc1plus`` beside its ``bin``: the whole prefix is bound back
    (only ``bin`` was: 'exec .../libexec/...: not found', session 30's review); a ``bin`` in the home folder stays
    itself (``~/.cargo`` holds a registry token)."""
    home = tmp_path / "home"
    tool = tmp_path / "opt" / "toolset" / "usr" / "bin"
    cargo = home / ".cargo" / "bin"
    for d in (tool, cargo, tool.parent / "libexec"):
        d.mkdir(parents=True)
    for d in [tmp_path, *tmp_path.rglob("*")]:
        d.chmod(0o755)
    monkeypatch.setattr(policy, "never_whole", lambda: (str(home),))
    monkeypatch.setenv("PATH", os.pathsep.join([str(tool), str(cargo), os.environ.get("PATH", "")]))
    paths = policy.tool_paths()
    assert str(tool.parent) in paths and str(cargo) in paths and str(cargo.parent) not in paths, paths


@sandboxed
def test_a_candidate_of_one_project_cannot_read_another_project_the_same_evaluator_showed_before():
    """An evaluator that evaluated a task in ``projA`` then one in ``projB``: its judge restarted the zygote with a
    wider view, ``projA`` still shown, and ``projB``'s candidate read ``projA``'s files (session 30's review). A
    zygote now shows the folders of the task it was made for alone."""
    base = ROOT.parent
    if not os.access(base, os.W_OK):
        pytest.skip(f"cannot write beside the repository ({base})")
    a, _ = _projects(base)
    b = base / f"projb-{os.getpid()}"
    shutil.rmtree(b, ignore_errors=True)
    b.mkdir()
    shutil.copy(ADD_TASK, b / "kernel_task.py")
    (a / "data.txt").write_text("other-project-secret\n")
    for p in (b, b / "kernel_task.py", a / "data.txt"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    cache = base / f"projab-cache-{os.getpid()}"
    source = ATTACK.read_text().replace("PROJECT_DIR", str(b)).replace("OTHER_DIR", str(a))
    try:
        with Evaluator(workers=1, cache_dir=cache, sandbox="auto") as e:
            first = e.evaluate(load_task(a / "kernel_task.py"), ADD_TASK.read_text().replace("class Model(",
                                                                                       "class ModelNew("), OPTS)
            second = e.evaluate(load_task(b / "kernel_task.py"), source, OPTS)
    finally:
        for d in (a, b, cache, base / f"otherproj-{os.getpid()}"):
            shutil.rmtree(d, ignore_errors=True)
    assert first.status is Status.OK and second.status is Status.OK, (first.summary(), second.summary())
    assert "other-project-secret" not in second.output, second.output[-3000:]


class _ShowsAll:
    """A live sandboxed zygote whose layout covers every path asked about (``judge.start_zygote_soon``'s view)."""

    sandbox = object()

    def alive(self):
        return True

    def covers(self, paths):
        return True


def test_a_zygote_made_for_another_tasks_folders_is_restarted_ahead_not_in_the_jobs_own_thread(monkeypatch):
    """``_zygote_for`` restarts a sandboxed zygote made for another task's folders even where it covers this
    task's (a task in a folder below the last one's); ``start_zygote_soon`` skipped any that covers them, so that
    restart ran in the job's own thread, no longer beside the task's load (review of 11df5b6)."""
    from stark_lsp.evaluate.judge import judge as J

    judge = J.Judge(device="cpu")
    made: list[list[str]] = []
    monkeypatch.setattr(judge, "_zygote_for", lambda paths, policy, hide=None: made.append(sorted(paths)))
    judge.zygote, judge._zygote_shows = _ShowsAll(), ["/projA"]
    try:
        judge.start_zygote_soon(["/projA/sub"], "auto", [])
        assert judge._await_start() is None and made == [["/projA/sub"]]
        judge._zygote_shows = ["/projA/sub"]
        judge.start_zygote_soon(["/projA/sub"], "auto", [])  # its own task's: kept, nothing started
        assert judge._starting is None and made == [["/projA/sub"]]
    finally:
        judge.zygote = None
        judge.close()


def test_a_top_level_folder_removed_after_the_layout_was_made_does_not_fail_the_sandbox():
    """A top-level folder the layout hides, removed before its sandbox starts (another program's scratch folder at
    ``/``): its tmpfs cannot be made on a read-only ``/`` and every candidate failed ('Read-only file system',
    seen in CI beside a test that made and removed such a folder); it is skipped, as a covered entry that is gone."""
    import subprocess
    import sys

    sb = probe()
    with _folder_made(Path(f"/stark-gone-{os.getpid()}")) as gone:
        lay = make_layout(gpu=False)
        assert str(gone) in lay.hidden and str(gone) in lay.sealed
    if not sb.available:
        pytest.skip(f"no sandbox here: {sb.reason}")
    out = subprocess.run(sb.wrap([sys.executable, "-c", "print('ran')"], lay), capture_output=True, text=True,
                         env=policy.scrubbed_env(), timeout=120)
    assert out.returncode == 0 and "ran" in out.stdout, out.stderr[-2000:]
