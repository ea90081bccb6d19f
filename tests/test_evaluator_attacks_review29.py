"""Session 29's hostile review of the judge, as a candidate author after a false figure, a false verdict, a
broken judge or an honest candidate's harm. Runs on the CPU against a real sandboxed evaluator; the candidates
are in tests/data/attacks/ (docs/EVALUATOR.md, "Threat model").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import EvalResult, Status
from stark_lsp.evaluate.sandbox.policy import probe
from stark_lsp.tasks.spec import load_task

ROOT = Path(__file__).resolve().parents[1]
ATTACKS = ROOT / "tests" / "data" / "attacks"
ADD_TASK = ROOT / "tests" / "data" / "evaluator" / "add_task.py"
GOOD = (ROOT / "tests" / "data" / "evaluator" / "good_torch.py").read_text()
OPTS = EvalOptions(trials=3, cpu_reps=5, reps=30, time_budget_s=1.0, load_timeout_s=30)

pytestmark = pytest.mark.skipif(not probe().available, reason=f"no sandbox here: {probe().reason}")


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    with Evaluator(workers=1, cache_dir=tmp_path_factory.mktemp("cache"), sandbox="required") as e:
        yield e


def run(ev, name: str = "", task: Path = ADD_TASK, source: str | None = None) -> EvalResult:
    return ev.evaluate(load_task(task), source if source is not None else (ATTACKS / name).read_text(), OPTS)


# an honest candidate accused -------------------------------------------------------------------------------------
def test_a_candidate_that_changes_its_input_in_place_as_the_reference_does_is_no_cheat(ev):
    """A reference that changes its input in place (``nn.ReLU(inplace=True)`` first, common in KernelBench's
    models) and a candidate that is the reference's own code: it was ``cheat: inputs_modified`` (the judge
    accused the reference's own code). The judge now learns, in the task's check, which inputs the reference
    changes itself, and a candidate changing those is no cheat."""
    r = run(ev, "inplace_as_the_reference.py", task=ATTACKS / "inplace_reference_task.py")
    assert r.status is Status.OK and not r.cheats, r.summary()


def test_an_input_the_reference_leaves_alone_changed_in_place_is_still_a_cheat(ev):
    r = run(ev, "inplace_beside_the_reference.py")
    assert r.status is Status.CHEAT and r.cheats[0].kind == "inputs_modified", r.summary()


def test_the_tasks_check_notes_the_inputs_the_reference_changes_in_place():
    import torch

    from stark_lsp.evaluate.judge import task_sanity

    def inputs_of(seed: int) -> list:
        g = torch.Generator().manual_seed(seed)
        return [torch.randn(64, generator=g), torch.randn(64, generator=g), 3]

    def relu_first(xs: list) -> list:
        return [torch.relu_(xs[0]) + xs[1] * xs[2]]

    got = task_sanity.check(relu_first, inputs_of, [1, 2, 3, 4], None, None)
    assert got.changes_inputs == (0,) and not got.degenerate
    assert task_sanity.check(lambda xs: [xs[0] + xs[1]], inputs_of, [1, 2, 3, 4], None, None).changes_inputs == ()


# a source the evaluator cannot write or send --------------------------------------------------------------------
@pytest.mark.parametrize("source, said", [
    ("S = '\ud83d'\n" + GOOD, "lone surrogate U+D83D on line 1"),  # half an emoji, as a broken JSON escape decodes
    ("# " + "x" * (5 << 20) + "\n" + GOOD, "too large to judge: 5.0 MiB"),
])
def test_a_source_that_cannot_be_written_or_sent_is_a_compile_error_in_one_line(ev, source, said):
    """A lone surrogate made ``Evaluator.evaluate`` raise UnicodeEncodeError (a bad candidate must never raise:
    a search would stop on it); a source over one message of the wire was judged "crashed: the candidate process
    died (exit code 1)". Both are refused before anything runs, saying why."""
    r = run(ev, source=source)
    assert r.status is Status.COMPILE_ERROR and said in r.message and "\\n" not in r.message, r.summary()
    assert r.compile is not None and not r.compile.ok
    assert run(ev, source=GOOD).status is Status.OK  # the judge goes on


# the launch check is the process's word --------------------------------------------------------------------------
@pytest.mark.xfail(strict=True, reason="the launch check reads Triton's launch counter (and on a GPU the profiler) in "
                   "the candidate's own process: a process that rewrites its 'launches' reply passes a fallback. No "
                   "figure is forged (the fallback's time is the judge's clock's, and a source defining no kernel "
                   "is judged by its figure alone), but the verdict rests on the process's word; nothing outside "
                   "the process sees which kernels ran (docs/EVALUATOR.md, 'Out of scope')")
def test_a_fallback_whose_process_forges_its_launch_report_is_still_called_one(ev):
    r = run(ev, "forge_launch_report.py")
    assert r.status is Status.CHEAT and r.cheats[0].kind == "kernel_not_launched", r.summary()


# tasks the judge could not take: a cheat or an evaluator error for any candidate --------------------------------
def _task_and_its_own_code(name: str) -> tuple[Path, str]:
    task = ATTACKS / name
    return task, task.read_text().split("\n\n\ndef get_inputs")[0].replace("class Model(", "class ModelNew(") + "\n"


@pytest.mark.parametrize("name", ["nested_outputs_task.py", "dict_outputs_task.py"])
def test_nested_outputs_are_compared_flattened_not_an_evaluator_error(ev, name):
    """A reference returning nested tuples or a dict (an LSTM's ``out, (h, c)``) was "runtime_error: evaluator
    error: RuntimeError: Boolean value of Tensor with more than one value is ambiguous" for any candidate, the
    reference's own code included: the judge's task check compared the nested tuple whole. Outputs are
    flattened in order (a dict's by key) on both sides of the wire."""
    task, own = _task_and_its_own_code(name)
    r = run(ev, task=task, source=own)
    assert r.status is Status.OK, r.summary()
    body = own.split("return ", 1)[1].split("\n")[0]
    flat = own.replace(f"return {body}", "return a * b, a - b, a + b")  # other tensors, or in another order
    assert run(ev, task=task, source=flat).status is Status.INCORRECT


def test_a_reference_with_more_outputs_than_a_reply_may_describe_is_a_task_error_not_a_cheat(ev):
    """100 outputs (``torch.split(x, 1, dim=1)``): every process's calibration broke the wire's limit of 64
    outputs, and any candidate was ``cheat: channel`` ("the candidate process broke the protocol") before its
    code even loaded. Now the task is refused in one line, saying what to do."""
    task, own = _task_and_its_own_code("split100_outputs_task.py")
    r = run(ev, task=task, source=own)
    assert r.status is Status.TASK_ERROR and not r.cheats and "returns 100 outputs" in r.message, r.summary()
    task60, own60 = _task_and_its_own_code("split60_outputs_task.py")
    assert run(ev, task=task60, source=own60).status is Status.OK


def test_outputs_flatten_in_order():
    import torch

    from stark_lsp.evaluate.harness import as_outputs

    x, y, z = torch.zeros(1), torch.ones(1), torch.full((1,), 2.0)
    assert as_outputs((x, (y, [z]))) == [x, y, z] and as_outputs({"b": y, "a": (x, 3)}) == [x, 3, y]
    assert as_outputs(x) == [x] and as_outputs(torch.max(torch.ones(2, 2), 1)) != []


def test_a_reference_whose_output_is_no_tensor_nor_number_is_a_task_error_in_one_line(ev):
    """A NumPy array from the reference was "evaluator error: ValueError: The truth value of an array ... is
    ambiguous" (the judge's task check compared it whole); None or text read "the reference could not be timed"
    after a degenerate-task note. One line now, naming the output."""
    task, own = _task_and_its_own_code("numpy_output_task.py")
    r = run(ev, task=task, source=own)
    assert r.status is Status.TASK_ERROR and "output 1 is a ndarray, not a tensor or a number" in r.message, r.summary()


# the protocol's own cost, which a candidate could undercut -----------------------------------------------------
def test_the_cpu_digest_takes_the_cheap_path_with_the_same_signs():
    """The digest is the protocol's, and half of its calibrated cost is subtracted from every figure: a candidate
    that computed it more cheaply in its own process (tests/data/attacks/fast_protocol.py: NumPy, the same
    numbers) read 3.2-4.2x eager for eager's own work on the CPU. The CPU's digest takes that cheap path itself
    (``signed_sum._numpy_sum``), with the signs torch's path and the GPU's kernel use."""
    import torch

    from stark_lsp.evaluate.wire import signed_sum as S

    assert S._np is not None  # NumPy ships with torch here: without it the torch path runs (several times dearer)
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        for n in (0, 1, 7, 8192, 70001):
            x = torch.randn(n).to(dtype)
            got, want = float(S.signed_sum(x, 99, 2)), float(S._torch_sum(x, S.key(99, 2, 0)))
            assert abs(got - want) <= 1e-9 * max(1.0, abs(want)), (dtype, n, got, want)


# the sandbox's view of a task in the user's home folder ---------------------------------------------------------
_HOME_BASE: list[Path] = []


def _home_base() -> Path:
    """Where the tests' home folder is made: beside the repository's files (``out/``), or, where the repository
    lies in a folder the sandbox hides (a clone under ``/tmp`` or ``~``: the package's root is then shown to the
    sandbox whole, and a home inside it with it), in a folder of its own under ``/tmp``, readable by others:
    a home inside a hidden folder, which the sandbox must not show whole either (``policy.never_whole``)."""
    import atexit
    import shutil
    import tempfile

    from stark_lsp.evaluate.sandbox.policy import hidden_dirs

    if not _HOME_BASE:
        if not any(str(ROOT) == h or str(ROOT).startswith(h.rstrip("/") + "/") for h in hidden_dirs()):
            _HOME_BASE.append(ROOT / "out")
        else:
            base = Path(tempfile.mkdtemp(prefix="stark-review29-home-"))
            base.chmod(0o755)
            atexit.register(shutil.rmtree, base, True)
            _HOME_BASE.append(base)
    return _HOME_BASE[0]


def _home_with_a_task(root: Path) -> Path:
    """A home folder holding a task directly, a sibling module, a package, secrets and a folder of other things."""
    import shutil

    home = root / "home-of-caller"
    shutil.rmtree(home, ignore_errors=True)
    (home / ".config" / "stark").mkdir(parents=True)
    (home / "pkg").mkdir()
    (home / "Documents").mkdir()
    (home / ".netrc").write_text("machine api.example.com password hunter2\n")
    (home / ".config" / "stark" / "llm.toml").write_text("api_key = 'sk-secret-in-home'\n")
    (home / "Documents" / "taxes.txt").write_text("private\n")
    (home / "helper.py").write_text("X = 1\n")
    (home / "pkg" / "__init__.py").write_text("")
    shutil.copy(ADD_TASK, home / "kernel_task.py")
    for p in [home, *home.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return home


def test_a_task_directly_in_the_home_folder_shows_only_what_python_imports_from_it(monkeypatch):
    from stark_lsp.evaluate.evaluator import task_folders

    home = _home_with_a_task(_home_base())
    monkeypatch.setenv("HOME", str(home))
    shown = task_folders(load_task(home / "kernel_task.py"))
    assert str(home) not in shown, shown
    assert sorted(Path(p).name for p in shown) == ["helper.py", "kernel_task.py", "pkg"], shown


def test_a_candidate_cannot_read_the_home_folder_a_task_sits_in(monkeypatch):
    """A kernel directly in ``~`` (``stark optimize ~/kernel.py``): its folder, shown read-only to the sandbox,
    was the whole home folder, hidden otherwise, and a candidate printed ``~/.netrc`` and a key file (the output
    goes to the user, the tree and, for an LLM team, back into a prompt). ``policy="auto"`` here: as root the
    sandbox drops to ``nobody`` only where every path the evaluation needs is readable by others, and this
    machine's Python lives under ``/root``, which a home elsewhere no longer hides."""
    home = _home_with_a_task(_home_base())
    monkeypatch.setenv("HOME", str(home))
    source = (ATTACKS / "read_home.py").read_text().replace("HOME_OF_CALLER", str(home))
    with Evaluator(workers=1, cache_dir=home.parent / "home-cache", sandbox="auto") as e:
        r = e.evaluate(load_task(home / "kernel_task.py"), source, OPTS)
    assert r.status is Status.OK, r.summary()
    assert "READ " + str(home / "kernel_task.py") in r.output, r.output[-2000:]
    for secret in ("hunter2", "sk-secret-in-home", "private"):
        assert secret not in r.output, r.output[-2000:]


def test_a_task_directly_in_tmp_runs_and_shows_only_the_modules_beside_it(ev):
    """A kernel directly in ``/tmp``: its folder, bound back whole over the sandbox's private ``/tmp``, hid the
    candidates' own work folder there, and every candidate, the task's own code included, was "crashed: the
    candidate process died (exit code 1)". Now it runs, and sees the machine's ``/tmp`` only as the Python
    modules beside the task."""
    import os
    import shutil

    stem = f"stark-review29-{os.getpid()}"
    task, other = Path("/tmp") / f"{stem}_task.py", Path("/tmp") / f"{stem}.lock"
    shutil.copy(ADD_TASK, task)
    other.write_text("not a module\n")
    task.chmod(0o644)
    other.chmod(0o644)
    lister = ("import os\n\nimport torch.nn as nn\n\nprint('TMP', sorted(os.listdir('/tmp')))\n\n\n"
              "class ModelNew(nn.Module):\n    def forward(self, a, b):\n        return a * 2 + b\n")
    try:
        r = run(ev, task=task, source=lister)
    finally:
        task.unlink()
        other.unlink()
    assert r.status is Status.OK, r.summary()
    assert task.name in r.output and other.name not in r.output, r.output[-2000:]


def test_a_hidden_folder_is_never_bound_back_whole_only_its_entries_but_dotfiles(monkeypatch):
    from stark_lsp.evaluate.sandbox.policy import make_layout

    home = _home_with_a_task(_home_base())
    monkeypatch.setenv("HOME", str(home))
    shown = make_layout(expose=[str(home)], gpu=False).expose
    assert str(home) not in shown and not any(p.startswith(f"{home}/.") for p in shown), shown
    assert {str(home / n) for n in ("Documents", "helper.py", "kernel_task.py", "pkg")} <= set(shown), shown
    assert str(home) not in make_layout(expose=[str(home.parent)], gpu=False).expose  # nor through a folder holding it


@pytest.mark.nvcc
def test_a_cuda_build_cannot_embed_a_file_of_the_home_folder_its_kernel_sits_in(monkeypatch):
    """A CUDA kernel directly in ``~`` (or in a dotfiles repository at ``~``: the build shows the repository's
    root): the build's sandbox showed the whole home folder, and a candidate's ``.incbin`` of ``~/.netrc`` put
    the file into its library (loaded and run by its process on a GPU, where it may print it). Dotfiles are
    never shown now: the build fails to find it."""
    import shutil

    home = _home_with_a_task(_home_base())
    (home / ".git").mkdir()  # a dotfiles repository: the build shows the repository's root (and stops there)
    for name in ("bias_gelu.cu", "bias_gelu.harness.py"):
        shutil.copy(ROOT / "samples" / "cuda" / name, home / name)
        (home / name).chmod(0o644)
    monkeypatch.setenv("HOME", str(home))
    task = load_task(home / "bias_gelu.cu")
    steal = (task.path.read_text() + '\nasm(".section .rodata\\n.global stolen\\nstolen:\\n.incbin \\"'
             + str(home / ".netrc") + '\\"\\n.byte 0\\n.text");\n')
    shutil.rmtree(home.parent / "home-cache-cu", ignore_errors=True)  # no library built before
    with Evaluator(workers=1, cache_dir=home.parent / "home-cache-cu", sandbox="auto") as e:
        art = e.builder().build(steal, OPTS.nvcc_flags, timeout_s=300, task=task)
        assert not (art.library and b"hunter2" in Path(art.library).read_bytes())
        honest = e.builder().build(task.path.read_text(), OPTS.nvcc_flags, timeout_s=300, task=task)
    assert not art.report.ok and honest.report.ok, (art.report, honest.report)


# other candidates' code: the workspace's search store ----------------------------------------------------------
def test_a_candidate_cannot_read_the_search_store_beside_its_task(monkeypatch):
    """A task in the workspace's folder (``stark optimize kernel.py`` in a project under ``~``): that folder is
    shown to the sandbox, and with it ``.stark/tree.sqlite``, every other candidate's code and figures (an asset
    the evaluator's own cache is covered for). Every sandbox now covers the ``.stark`` folders beside and above
    what it shows."""
    import shutil

    from stark_lsp.evaluate.sandbox.policy import make_layout

    home = _home_with_a_task(_home_base())
    ws = home / "ws"
    (ws / ".stark").mkdir(parents=True)
    (ws / ".stark" / "tree.sqlite").write_text("another candidate's code: secret-kernel-trick\n")
    shutil.copy(ADD_TASK, ws / "kernel_task.py")
    for p in [ws, *ws.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    monkeypatch.setenv("HOME", str(home))
    assert str(ws / ".stark") in make_layout(expose=[str(ws)], gpu=False).covered
    reader = ("import torch.nn as nn\n\ntry:\n    print('STORE', open('" + str(ws / ".stark" / "tree.sqlite") + "').read())\n"
              "except OSError as e:\n    print('NO STORE', e.strerror)\n\n\nclass ModelNew(nn.Module):\n"
              "    def forward(self, a, b):\n        return a * 2 + b\n")
    with Evaluator(workers=1, cache_dir=home.parent / "home-cache", sandbox="auto") as e:
        r = e.evaluate(load_task(ws / "kernel_task.py"), reader, OPTS)
    assert r.status is Status.OK, r.summary()
    assert "NO STORE" in r.output and "secret-kernel-trick" not in r.output, r.output[-2000:]


def test_an_output_list_that_holds_itself_is_the_candidates_runtime_error_in_one_line(ev):
    """Flattening nested outputs must end: a list that holds itself is the candidate's error, said in one line
    (never a RecursionError's traceback, nor a "task error")."""
    src = ("import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, a, b):\n"
           "        out = [a * 2 + b]\n        out.append(out)\n        return out\n")
    r = run(ev, source=src)
    assert r.status is Status.RUNTIME_ERROR and "nested more than 32 levels" in r.message, r.summary()
    assert "task error" not in r.message and "Recursion" not in r.message, r.message
