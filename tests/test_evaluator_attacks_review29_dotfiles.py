"""Session 29's hostile review: a task in a project folder outside the hidden ones (``/work/proj/k.py``) showed
every candidate the project's ``.env``, ``.git/config`` (tokens), ``.npmrc``: everything outside ``$HOME`` and
``/tmp`` is visible read-only. Every sandbox now covers the dot-entries of the task's folder and of each folder
above it (``policy.dot_entries``), but those it needs (a ``.venv`` holding the interpreter). Runs on the CPU
against a real sandboxed evaluator (docs/EVALUATOR.md, "Threat model")."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import Status
from stark_lsp.evaluate.sandbox import policy
from stark_lsp.evaluate.sandbox.policy import dot_entries, make_layout, probe
from stark_lsp.tasks.spec import load_task

ROOT = Path(__file__).resolve().parents[1]
ADD_TASK = ROOT / "tests" / "data" / "evaluator" / "add_task.py"
ATTACK = ROOT / "tests" / "data" / "attacks" / "read_project_dotfiles.py"
OPTS = EvalOptions(trials=3, cpu_reps=5, reps=30, time_budget_s=1.0, load_timeout_s=30)
SECRETS = ("sk-proj-dotenv-secret", "ghp_token_in_git_config", "npm-token-secret", "machine-pass-secret")

sandboxed = pytest.mark.skipif(not probe().available, reason=f"no sandbox here: {probe().reason}")


def _project(root: Path) -> Path:
    """A project folder (not under a hidden one) holding a task, its secrets in dot-entries, and a package."""
    proj = root / f"dotproj-{os.getpid()}"
    shutil.rmtree(proj, ignore_errors=True)
    (proj / ".git").mkdir(parents=True)
    (proj / "pkg").mkdir()
    (proj / ".env").write_text("OPENAI_API_KEY=sk-proj-dotenv-secret\n")
    (proj / ".git" / "config").write_text('[remote "origin"]\n\turl = https://ghp_token_in_git_config@x/y.git\n')
    (proj / ".npmrc").write_text("//registry.npmjs.org/:_authToken=npm-token-secret\n")
    (proj / ".netrc-link").symlink_to(proj / "pkg" / ".netrc")  # a link to a dot-file elsewhere: covered too
    (proj / "pkg" / ".netrc").write_text("machine x password machine-pass-secret\n")
    (proj / "pkg" / "__init__.py").write_text("")
    shutil.copy(ADD_TASK, proj / "kernel_task.py")
    for p in [proj, *proj.rglob("*")]:
        if not p.is_symlink():
            p.chmod(0o755 if p.is_dir() else 0o644)
    return proj


# the pure function --------------------------------------------------------------------------------------------
def test_dot_entries_covers_secrets_beside_and_above_and_keeps_what_the_sandbox_needs(tmp_path):
    proj = tmp_path / "proj"
    (proj / ".venv" / "bin").mkdir(parents=True)
    (proj / ".venv" / "bin" / "python").write_text("")
    (proj / ".git").mkdir()
    (proj / ".cache" / "stark").mkdir(parents=True)  # the evaluator's cache, inside a dot-folder
    (proj / ".build").mkdir()  # a writable path itself
    (proj / "src").mkdir()
    (proj / "src" / "k.py").write_text("")
    (proj / "src" / ".npmrc").write_text("token")
    (proj / ".env").write_text("KEY=1")
    (tmp_path / ".netrc").write_text("password")  # a folder above
    (proj / ".python").symlink_to(proj / ".venv" / "bin" / "python")  # a link into a needed path: kept
    (proj / ".gone").symlink_to(proj / "nowhere")  # dangling: nothing to cover
    (proj / ".elsewhere").symlink_to(tmp_path / "outside.txt")
    (tmp_path / "outside.txt").write_text("secret")
    venv = str(proj / ".venv")
    dirs, files = dot_entries([proj / "src" / "k.py", proj / ".build"],
                              needed=[venv, str(proj / ".cache" / "stark"), str(proj / ".build")], runtime=[venv])
    assert str(proj / ".git") in dirs and str(proj / ".venv") not in dirs, dirs
    assert str(proj / ".cache") not in dirs and str(proj / ".build") not in dirs, dirs
    assert {str(proj / ".env"), str(proj / "src" / ".npmrc"), str(tmp_path / ".netrc")} <= set(files), files
    assert str(tmp_path / "outside.txt") not in files, files  # a link to a plain name: readable by that name anyway
    assert not any(f.endswith(("python", ".gone", "nowhere")) for f in files), files
    assert "/" not in dirs and not any(os.path.dirname(p) == "/" for p in [*dirs, *files])


def test_dot_entries_takes_at_most_the_cap_per_folder_secret_looking_names_first(tmp_path):
    for i in range(policy.MAX_DOT_ENTRIES + 10):
        (tmp_path / f".a{i:03d}").write_text("")
    (tmp_path / ".zz-token").write_text("")
    (tmp_path / ".env").write_text("")
    _, files = dot_entries([tmp_path])
    mine = [f for f in files if os.path.dirname(f) == str(tmp_path)]
    assert len(mine) == policy.MAX_DOT_ENTRIES
    assert {str(tmp_path / ".env"), str(tmp_path / ".zz-token")} <= set(mine)


def test_the_layout_keeps_a_project_venv_holding_the_interpreter_and_covers_the_rest(monkeypatch):
    proj = _project(ROOT / "out")
    venv = proj / ".venv"
    (venv / "lib" / "site-packages").mkdir(parents=True)
    real = policy.python_paths
    monkeypatch.setattr(policy, "python_paths", lambda: [*real(), str(venv), str(venv / "lib" / "site-packages")])
    try:
        lay = make_layout(expose=[str(proj)], gpu=False)
    finally:
        shutil.rmtree(proj, ignore_errors=True)
    assert str(venv) not in lay.covered and lay.covers(venv / "lib" / "site-packages"), lay.covered
    assert str(proj / ".git") in lay.covered and str(proj / ".env") in lay.covered_files, lay
    assert {str(proj / ".npmrc"), str(proj / "pkg" / ".netrc")} <= set(lay.covered_files), lay.covered_files
    assert not lay.covers(proj / ".env") and lay.covers(proj / "kernel_task.py")
    assert policy.Layout.from_json(lay.to_json()) == lay
    top = ROOT / "out" / f"dotproj-build-{os.getpid()}"
    build = top / "build"
    (build / ".ninja_deps").mkdir(parents=True, exist_ok=True)  # a writable folder's own dot-entries stay its own
    (build / ".ninja_log").write_text("")
    (top / ".env").write_text("KEY=1")
    try:
        lay = make_layout(expose=[str(proj)], writable=[str(build)], gpu=False)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    assert not any(p.startswith(str(build)) for p in (*lay.covered, *lay.covered_files)), lay
    # above the writable folder, as above the task: covered, or not shown at all (a folder hidden but for the build,
    # now that the source checkout on the Python path is no longer shown whole: session 30's review)
    assert not lay.covers(top / ".env")
    assert str(top / ".env") in lay.covered_files or any(top.as_posix().startswith(h + "/") for h in lay.hidden)
    # the interpreter running this (a .venv in a folder above the tasks here) stays
    assert lay.covers(sys.executable) and lay.covers(os.path.realpath(sys.executable))


# a real sandboxed evaluator -----------------------------------------------------------------------------------
@sandboxed
def test_a_candidate_cannot_read_the_dotfiles_of_the_project_its_task_sits_in():
    """``.env`` (an API key), ``.git/config`` (a token in the remote's URL), ``.npmrc`` and a dot-link to a
    password file: the candidate walks them all and prints what it reads. None appears; the honest result still
    comes out, and the package beside the task is still shown."""
    proj = _project(ROOT / "out")
    source = ATTACK.read_text().replace("PROJECT_DIR", str(proj))
    try:
        with Evaluator(workers=1, cache_dir=proj.parent / f"dotproj-cache-{os.getpid()}", sandbox="auto") as e:
            r = e.evaluate(load_task(proj / "kernel_task.py"), source, OPTS)
    finally:
        shutil.rmtree(proj, ignore_errors=True)
        shutil.rmtree(proj.parent / f"dotproj-cache-{os.getpid()}", ignore_errors=True)
    assert r.status is Status.OK, r.summary()
    assert "NO " + str(proj / ".env") in r.output, r.output[-3000:]
    for secret in SECRETS:
        assert secret not in r.output, r.output[-3000:]


@sandboxed
def test_a_task_whose_interpreter_lives_in_a_venv_in_its_project_folder_still_runs():
    """The evaluator run by an interpreter in ``proj/.venv`` (a venv over this one's packages): that ``.venv``
    is what the sandbox needs, so it is never covered, while ``proj/.env`` is."""
    proj = _project(ROOT / "out")
    base = getattr(sys, "_base_executable", sys.executable)
    try:
        subprocess.run([base, "-m", "venv", "--without-pip", str(proj / ".venv")], check=True, timeout=120)
        py = proj / ".venv" / "bin" / "python"
        site_dir = subprocess.run([str(py), "-c", "import site; print(site.getsitepackages()[0])"], check=True,
                                  capture_output=True, text=True, timeout=60).stdout.strip()
        import site as this_site

        Path(site_dir, "outer.pth").write_text("\n".join([*this_site.getsitepackages(), str(ROOT)]) + "\n")
        for p in [proj / ".venv", *(proj / ".venv").rglob("*")]:
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | (0o755 if p.is_dir() else 0o644))
        script = (
            "import sys\n"
            "from stark_lsp.evaluate.evaluator import Evaluator\n"
            "from stark_lsp.evaluate.options import EvalOptions\n"
            "from stark_lsp.evaluate.sandbox.policy import make_layout\n"
            "from stark_lsp.tasks.spec import load_task\n"
            f"proj = {str(proj)!r}\n"
            "lay = make_layout(expose=[proj], gpu=False)\n"
            "assert sys.prefix == proj + '/.venv', sys.prefix\n"
            "assert proj + '/.venv' not in lay.covered and proj + '/.env' in lay.covered_files, lay\n"
            "opts = EvalOptions(trials=3, cpu_reps=5, reps=30, time_budget_s=1.0, load_timeout_s=60)\n"
            f"src = open({str(ATTACK)!r}).read().replace('PROJECT_DIR', proj)\n"
            "with Evaluator(workers=1, cache_dir=proj + '-cache', sandbox='auto') as e:\n"
            "    r = e.evaluate(load_task(proj + '/kernel_task.py'), src, opts)\n"
            "print('STATUS', r.status.name)\n"
            "print(r.output)\n")
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
        out = subprocess.run([str(py), "-c", script], capture_output=True, text=True, timeout=400, env=env,
                             cwd=str(proj))
    finally:
        shutil.rmtree(proj, ignore_errors=True)
        shutil.rmtree(str(proj) + "-cache", ignore_errors=True)
    assert out.returncode == 0 and "STATUS OK" in out.stdout, (out.stdout[-3000:], out.stderr[-3000:])
    for secret in SECRETS:
        assert secret not in out.stdout, out.stdout[-3000:]


@sandboxed
def test_a_task_file_that_is_itself_a_dotfile_still_runs_its_neighbours_covered():
    """A kernel named ``.k.py``: the task's folders name it, so the sandbox that covers ``.env`` beside it does not
    cover the task."""
    from stark_lsp.evaluate.evaluator import task_folders

    proj = _project(ROOT / "out")
    shutil.move(proj / "kernel_task.py", proj / ".kernel_task.py")
    source = ATTACK.read_text().replace("PROJECT_DIR", str(proj))
    try:
        task = load_task(proj / ".kernel_task.py")
        assert str(proj / ".kernel_task.py") in task_folders(task)
        with Evaluator(workers=1, cache_dir=proj.parent / f"dotproj-cache-{os.getpid()}", sandbox="auto") as e:
            r = e.evaluate(task, source, OPTS)
    finally:
        shutil.rmtree(proj, ignore_errors=True)
        shutil.rmtree(proj.parent / f"dotproj-cache-{os.getpid()}", ignore_errors=True)
    assert r.status is Status.OK, r.summary()
    assert "NO " + str(proj / ".env") in r.output, r.output[-3000:]
    for secret in SECRETS:
        assert secret not in r.output, r.output[-3000:]


@sandboxed
def test_a_dot_entry_removed_after_the_layout_was_made_is_skipped_not_a_failed_sandbox():
    """The user's own edits race the sandbox: ``.env`` and ``.git`` gone (and ``.npmrc`` made a link) between the
    listing and the mounts. The sandbox still starts; what is still there stays covered."""
    proj = _project(ROOT / "out")
    (proj / ".env2").write_text("sk-proj-dotenv-secret\n")
    (proj / ".env2").chmod(0o644)
    try:
        lay = make_layout(expose=[str(proj)], gpu=False)
        assert {str(proj / ".env"), str(proj / ".env2")} <= set(lay.covered_files), lay.covered_files
        (proj / ".env").unlink()
        shutil.rmtree(proj / ".git")
        (proj / ".npmrc").unlink()
        (proj / ".npmrc").symlink_to(proj / "pkg" / "__init__.py")
        code = (f"import os\nprint('LS', sorted(os.listdir({str(proj)!r})))\n"
                f"try:\n    print(open({str(proj / '.env2')!r}).read())\nexcept OSError as e:\n    print('NO', e.strerror)\n")
        out = subprocess.run(probe().wrap([sys.executable, "-c", code], lay), capture_output=True, text=True,
                             timeout=120)
    finally:
        shutil.rmtree(proj, ignore_errors=True)
    assert out.returncode == 0 and "LS" in out.stdout, (out.stdout, out.stderr)
    assert "NO" in out.stdout and "sk-proj-dotenv-secret" not in out.stdout, out.stdout


def test_a_dot_link_to_a_package_of_the_task_leaves_the_package_shown(tmp_path):
    """Review 29 follow-up: ``proj/.helpers -> helpers`` covered ``proj/helpers`` (the link's target) by an empty
    tmpfs, and a task that imports ``helpers`` was a task error (``module 'helpers' has no attribute``) for every
    candidate. The target is readable by its own name, so covering it hid nothing; a link to a dot-name still is."""
    proj = tmp_path / "proj"
    (proj / "helpers").mkdir(parents=True)
    (proj / "helpers" / "__init__.py").write_text("SCALE = 1.0\n")
    (proj / "k.py").write_text("import helpers\n")
    (proj / ".helpers").symlink_to("helpers")
    (proj / "sub").mkdir()
    (proj / "sub" / ".token").write_text("t")
    (proj / ".token-link").symlink_to(proj / "sub" / ".token")
    dirs, files = dot_entries([proj / "k.py"])
    assert str(proj / "helpers") not in dirs, dirs
    assert str(proj / "sub" / ".token") in files, files
