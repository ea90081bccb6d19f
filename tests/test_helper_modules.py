"""A module of @triton.jit helpers is found as such across its package (issue 25, item 2): its users are the
task files (a kernel with a harness) under the package root that import it, absolutely or relatively."""

from __future__ import annotations

from pathlib import Path

import pytest

from stark_lsp.server.diagnostics import CODE_HELPER
from stark_lsp.server.documents import resolve_task
from stark_lsp.server.helper_modules import helper_users, shown_name

HELPER = '''import triton
import triton.language as tl


@triton.jit
def square_sum(ptr, offs, mask):
    x = tl.load(ptr + offs, mask=mask, other=0.0)
    return tl.sum(x * x, axis=0)
'''

KERNEL = '''import triton
import triton.language as tl

{imports}


@triton.jit
def rms_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = square_sum(x_ptr, offs, offs < n)


def rms(x):
    return x
'''

HARNESS = "ENTRY = 'rms'\n\ndef reference(x):\n    return x\n\ndef get_inputs():\n    return []\n"


def write(root: Path, rel: str, text: str = "") -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def package(tmp_path: Path, imports: str) -> tuple[Path, Path]:
    """proj/pkg/{common,ops}: the helper in common/, the kernel in ops/ with its harness beside it."""
    for d in ("pkg", "pkg/common", "pkg/ops"):
        write(tmp_path, f"proj/{d}/__init__.py")
    helper = write(tmp_path, "proj/pkg/common/helpers.py", HELPER)
    kernel = write(tmp_path, "proj/pkg/ops/rms.py", KERNEL.format(imports=imports))
    write(tmp_path, "proj/pkg/ops/rms.harness.py", HARNESS)
    return helper, kernel


@pytest.mark.parametrize("imports", [
    "from pkg.common.helpers import square_sum",
    "import pkg.common.helpers\nsquare_sum = pkg.common.helpers.square_sum",
    "from ..common import helpers\nsquare_sum = helpers.square_sum",
    "from ..common.helpers import square_sum",
])
def test_a_helper_used_across_the_package_is_a_hint_naming_its_user(tmp_path: Path, imports: str):
    helper, kernel = package(tmp_path, imports)
    assert helper_users(helper) == [kernel.resolve()]
    resolved = resolve_task(helper)
    assert resolved.task is None and resolved.problem.code == CODE_HELPER
    assert "pkg/ops/rms.py uses it" in resolved.problem.message
    assert not resolved.problem.missing_harness


def test_a_user_beside_the_helper_is_named_by_its_file_name(tmp_path: Path):
    write(tmp_path, "pkg/__init__.py")
    helper = write(tmp_path, "pkg/helpers.py", HELPER)
    kernel = write(tmp_path, "pkg/rms.py", KERNEL.format(imports="from .helpers import square_sum"))
    write(tmp_path, "pkg/rms.harness.py", HARNESS)
    assert helper_users(helper) == [kernel.resolve()]
    assert shown_name(kernel, helper) == "rms.py"
    assert "a helper module: rms.py uses it" in resolve_task(helper).problem.message


def test_a_user_whose_harness_a_stark_harness_comment_names(tmp_path: Path):
    helper, kernel = package(tmp_path, "from pkg.common.helpers import square_sum")
    harness = kernel.with_name("rms.harness.py")
    harness.rename(tmp_path / "proj" / "rms_check.py")
    kernel.write_text("# stark-harness: ../../rms_check.py\n" + kernel.read_text())
    assert helper_users(helper) == [kernel.resolve()]


def test_a_triton_file_nobody_imports_is_still_a_task_without_a_harness(tmp_path: Path):
    helper, _ = package(tmp_path, "import math")
    assert helper_users(helper) == []
    resolved = resolve_task(helper)
    assert resolved.problem.missing_harness and resolved.problem.code != CODE_HELPER
    assert "no harness for helpers.py" in resolved.problem.message


def test_a_kernel_without_a_harness_is_no_user(tmp_path: Path):
    helper, kernel = package(tmp_path, "from pkg.common.helpers import square_sum")
    kernel.with_name("rms.harness.py").unlink()
    assert helper_users(helper) == []
    assert resolve_task(helper).problem.missing_harness


def test_a_module_of_the_same_name_elsewhere_is_not_the_helper(tmp_path: Path):
    helper, _ = package(tmp_path, "from ..other.helpers import square_sum")
    write(tmp_path, "proj/pkg/other/__init__.py")
    write(tmp_path, "proj/pkg/other/helpers.py", HELPER)
    # and one beside it, importing its own helpers.py
    write(tmp_path, "proj/pkg/other/norm.py", KERNEL.format(imports="from .helpers import square_sum"))
    write(tmp_path, "proj/pkg/other/norm.harness.py", HARNESS)
    assert helper_users(helper) == []
    assert resolve_task(helper).problem.missing_harness


def test_venvs_node_modules_and_the_cap(tmp_path: Path):
    helper, kernel = package(tmp_path, "from pkg.common.helpers import square_sum")
    for d in ("node_modules", "venv_x", "__pycache__"):  # users there would resolve the import: they are skipped
        write(tmp_path, f"proj/pkg/{d}/__init__.py")
        write(tmp_path, f"proj/pkg/{d}/k.py", KERNEL.format(imports="from pkg.common.helpers import square_sum"))
        write(tmp_path, f"proj/pkg/{d}/k.harness.py", HARNESS)
    write(tmp_path, "proj/pkg/venv_x/pyvenv.cfg", "home = /usr/bin\n")
    assert helper_users(helper) == [kernel.resolve()]
    assert helper_users(helper, limit=1) == []  # the first file under the root is pkg/__init__.py


def test_optimize_on_a_helper_offers_the_users_kernel_that_calls_it(tmp_path: Path):
    """What "Optimize" on a helper module searches (issue 25): each user's kernel that calls one of the helper's
    functions (not merely the file's first kernel), named as the hint names the file; kept in the problem."""
    from stark_lsp.server.helper_modules import helper_user

    helper, kernel = package(tmp_path, "from pkg.common.helpers import square_sum")
    first = "@triton.jit\ndef copy_kernel(x_ptr, n, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n\n\n"
    kernel.write_text(kernel.read_text().replace("@triton.jit\ndef rms_kernel", first + "@triton.jit\ndef rms_kernel", 1))
    u = helper_user(kernel, helper)
    assert (u.kernel, u.shown, u.path) == ("rms_kernel", "pkg/ops/rms.py", str(kernel.resolve()))
    assert resolve_task(helper).problem.users == (u,)
    # no kernel calls it by name (a kernel passed it along): the file's first kernel
    kernel.write_text(kernel.read_text().replace("square_sum(x_ptr", "other(x_ptr"))
    assert helper_user(kernel, helper).kernel == "copy_kernel"
    kernel.write_text("import pkg.common.helpers\n")  # no kernel at all: nothing to search
    assert helper_user(kernel, helper) is None
