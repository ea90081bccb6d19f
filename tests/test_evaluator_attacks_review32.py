"""Session 32's hostile review of three changes to the judge: the sandboxes' memory cgroup (sandbox/cgroup.py), the
rule that gives a KernelBench build its time (tasks/gpu_need.py), and the copy of outputs held elsewhere
(candidate/own_outputs.py). Runs on the CPU; the candidates are in tests/data/attacks/r32_*.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import EvalResult, Status
from stark_lsp.evaluate.sandbox.policy import probe
from stark_lsp.tasks.gpu_need import builds_cuda_inline
from stark_lsp.tasks.spec import load_task

ROOT = Path(__file__).resolve().parents[1]
ATTACKS = ROOT / "tests" / "data" / "attacks"
ADD_TASK = ROOT / "tests" / "data" / "evaluator" / "add_task.py"
OPTS = EvalOptions(trials=3, cpu_reps=5, reps=30, time_budget_s=1.0, load_timeout_s=30)

needs_sandbox = pytest.mark.skipif(not probe().available, reason=f"no sandbox here: {probe().reason}")


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    from stark_lsp.evaluate.evaluator import Evaluator

    with Evaluator(workers=1, cache_dir=tmp_path_factory.mktemp("cache"), sandbox="required") as e:
        yield e


def run(ev, name: str) -> EvalResult:
    return ev.evaluate(load_task(ADD_TASK), (ATTACKS / name).read_text(), OPTS)


# gpu_need: every way code reaches cpp_extension's build is a build ------------------------------------------------
def test_a_build_reached_through_the_module_as_a_value_is_a_build():
    """An honest build through ``cpp_extension`` bound to another name, ``getattr`` on it, a star import's ``load``,
    ``importlib.import_module`` of it, the module passed to a function: each lost the build's 300 s (and on the CPU
    was run instead of "not run: no GPU"), as only calls through an import's own name were read."""
    builds = [
        "import torch.utils.cpp_extension\next = torch.utils.cpp_extension\nm = ext.load(name='m', sources=['k.cu'])\n",
        "from torch.utils.cpp_extension import *\nm = load(name='m', sources=['k.cu'])\n",
        "import torch.utils.cpp_extension as ce\nm = getattr(ce, 'load')(name='m', sources=['k.cu'])\n",
        "import importlib\nm = importlib.import_module('torch.utils.cpp_extension').load(name='m', sources=['k.cu'])\n",
        "import torch.utils.cpp_extension\ndef build(e):\n    return e.load(name='m', sources=['k.cu'])\n"
        "m = build(torch.utils.cpp_extension)\n",
        "exec('from torch.utils.cpp_extension import load_inline\\nm = load_inline(name=\"m\", cpp_sources=\"\")')\n",
    ]
    for src in builds:
        assert builds_cuda_inline(src), src
    # still no build: a word, an unused import, another module's ``load``, an attribute that builds nothing
    assert not builds_cuda_inline('"""no load_inline, no cpp_extension.load"""\nimport torch\n')
    assert not builds_cuda_inline("exec('x = 1')\nprint('no load_inline here')\n")
    assert not builds_cuda_inline("from torch.utils.cpp_extension import load_inline\nimport torch\n")
    assert not builds_cuda_inline("import json, torch.utils.cpp_extension\ncfg = json.load(open('c'))\n")
    assert not builds_cuda_inline("from torch.utils import cpp_extension\nprint(cpp_extension.CUDA_HOME)\n")
    assert builds_cuda_inline("def f(:\n    load_inline  # broken source: read as tokens\n")
    assert not builds_cuda_inline("x = = 1  # load_inline named in a comment of a broken source\n")


@needs_sandbox
def test_an_honest_build_through_a_module_alias_is_not_run_on_the_cpu(ev):
    r = run(ev, "r32_build_through_a_module_alias.py")
    assert r.status is Status.NOT_RUN and "load_inline" in r.message, r.summary()


# own_outputs: nothing an output is makes the copy raise ------------------------------------------------------------
def test_owned_never_raises_and_copies_an_output_whose_storage_it_cannot_see():
    import torch

    from stark_lsp.evaluate.candidate.own_outputs import owned

    def fresh():
        return torch.randn(4, 4)

    odd = [fresh().to_sparse(), fresh().to_sparse_csr(), fresh().to_mkldnn(),
           torch.nested.nested_tensor([torch.randn(2, 4), torch.randn(3, 4)], layout=torch.jagged)]
    for o in odd:
        got = owned([o.detach(), 1.5])
        assert got[1] == 1.5 and got[0] is not o and type(got[0]) is type(o)
    plain = fresh()
    assert owned([plain])[0] is plain  # a new output nothing else holds: as it is
    assert owned([torch.empty(0), torch.empty(2, device="meta")])[0].numel() == 0


@needs_sandbox
def test_a_sparse_output_is_the_candidates_failure_said_by_the_judges_checks(ev):
    r = run(ev, "r32_sparse_output.py")
    assert r.status in (Status.RUNTIME_ERROR, Status.INCORRECT), r.summary()
    assert "Cannot access storage" not in r.message, r.summary()


# cgroup: what its users call, and the cap a user writes -------------------------------------------------------------
def test_the_cgroup_says_why_not_and_reads_the_cap_as_users_write_it():
    from stark_lsp.evaluate.sandbox import cgroup

    why = cgroup.why_not()  # tests/test_sandbox_cgroup.py's skip message called it, and it did not exist
    assert why is None or isinstance(why, str)
    assert cgroup.parse_size("512MiB") == 512 << 20 and cgroup.parse_size("1.5G") == 3 << 29
    for bad in ("inf", "1e400G", "nan", "-0.5G", "G"):  # a ValueError (the cap falls back), never an OverflowError
        with pytest.raises(ValueError):
            cgroup.parse_size(bad)


def _limit(group: Path) -> int:
    for name in ("memory.max", "memory.limit_in_bytes"):
        text = (group / name).read_text().strip() if (group / name).exists() else ""
        if text:
            return int(text) if text.isdigit() else 1 << 62
    return 1 << 62


def test_the_sandboxes_of_every_judge_process_share_one_cap():
    """Class 7 across judges: each judge is a process of its own (``Evaluator(workers=N)``, the server's searches at
    once, the CLI's bench), and each had a parent group capped at 3/4 of RAM: N candidates, one a judge, could hold
    N x 3/4 of RAM together, and the machine's OOM killer, not the cap, stopped them (where it took a sandbox process
    of an honest candidate beside them). The groups of two processes now lie in one group capped at 3/4 of RAM."""
    import os
    import subprocess
    import sys

    from stark_lsp.evaluate.sandbox import cgroup
    from stark_lsp.evaluate.sandbox.limits import ram_bytes

    mine = cgroup.group("probe")
    if mine is None:
        pytest.skip(f"no cgroup here: {cgroup.why_not()}")
    mine.close()
    env = {k: v for k, v in os.environ.items() if k != cgroup.ENV_CAP}
    other = subprocess.run([sys.executable, "-c", "from stark_lsp.evaluate.sandbox import cgroup\n"
                            "print(cgroup.group('probe').path)"], capture_output=True, text=True, env=env, cwd=ROOT,
                           timeout=60)
    theirs = Path(other.stdout.strip())
    assert theirs.is_absolute() and theirs != mine.path, other.stderr[-800:]
    common = Path(os.path.commonpath([mine.path, theirs]))
    cap = max(cgroup.memory_cap(), ram_bytes() * 3 // 4)
    assert _limit(common) <= cap, (common, _limit(common))  # both processes' sandboxes under one bound
