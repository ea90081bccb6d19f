"""torch.compile's written-out code imports as little of ``torch._inductor`` as it can
(``agents/builtin/inductor_imports.py``): a candidate process that imports it pays over a second."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_inductor_seed import DATA, compiled, source  # noqa: E402

from stark_lsp.agents.builtin import inductor_imports as II  # noqa: E402
from stark_lsp.agents.builtin.inductor_seed import write_seed  # noqa: E402

HERE = II.installed_torch_version()


def test_library_calls_are_torchs_own_functions_under_inductors_names():
    text = write_seed(compiled("12_Gemm_Multiply_LeakyReLU"), source("12_Gemm_Multiply_LeakyReLU"))
    assert II.EXTERN_IMPORT not in text
    block = re.search(r"^class extern_kernels:\n(?:    .*\n|\n)+", text, re.M).group(0)
    ns: dict = {"torch": torch}
    exec(block, ns)  # noqa: S102 - the namespace alone
    assert ns["extern_kernels"].mm is torch.mm
    for name, fn in II.EXTERN.items():  # what Inductor registers under each name is that torch function
        from torch._inductor.select_algorithm import extern_kernels

        if hasattr(extern_kernels, name):
            assert getattr(extern_kernels, name) is eval(fn, {"torch": torch})  # noqa: S307


def test_a_library_call_not_known_here_keeps_inductors_import():
    code = (DATA / "12_Gemm_Multiply_LeakyReLU.0.py").read_text().replace("extern_kernels.mm(", "extern_kernels._mm_plus_mm(")
    text = write_seed(compiled("12_Gemm_Multiply_LeakyReLU", code), source("12_Gemm_Multiply_LeakyReLU"))
    assert II.EXTERN_IMPORT in text and "class extern_kernels" not in text


@pytest.mark.skipif(HERE is None, reason="no torch installed to read the helpers from")
def test_helpers_are_copied_from_the_torch_that_wrote_the_code_and_renamed():
    text = write_seed(compiled("23_Softmax", torch=HERE), source("23_Softmax"))
    assert "torch._inductor" not in text  # nothing of Inductor's is imported
    assert II.TRITON_KERNEL_IMPORTS[0] in text
    assert "def triton_helpers_online_softmax_reduce(" in text and "def triton_helpers_maximum(" in text
    assert "triton_helpers." not in text  # every call renamed, in the kernels and in the helpers
    called = set(re.findall(r"\b(triton_helpers_\w+)\(", text))
    assert called <= set(re.findall(r"^def (triton_helpers_\w+)\(", text, re.M))


def test_helpers_of_another_torch_are_imported_as_inductor_does():
    text = write_seed(compiled("23_Softmax", torch="0.0.0-not-this-one"), source("23_Softmax"))
    assert all(line in text for line in II.INDUCTOR_KERNEL_IMPORTS)
    assert "triton_helpers.online_softmax_reduce(" in text


@pytest.mark.skipif(HERE is None, reason="no torch installed to read the helpers from")
def test_a_helper_that_reads_anything_but_triton_is_not_copied(monkeypatch, tmp_path):
    fake = tmp_path / "torch"
    (fake / "_inductor" / "runtime").mkdir(parents=True)
    (fake / "version.py").write_text("__version__ = '9.9'\n")
    (fake / "_inductor" / "runtime" / "triton_helpers.py").write_text(
        "import triton\nSCALE = 2\n\n@triton.jit\ndef maximum(a, b):\n    return a * SCALE\n")
    monkeypatch.setattr(II, "_torch_dir", lambda: fake)
    assert II._helpers(["maximum"], "9.9") is None
    (fake / "_inductor" / "runtime" / "triton_helpers.py").write_text(
        "import triton\n\n@triton.jit\ndef maximum(a, b):\n    maximum_ = 1\n    return tl.maximum(a, b)\n")
    assert II._helpers(["maximum"], "9.9") == ["@triton.jit\ndef triton_helpers_maximum(a, b):\n"
                                               "    maximum_ = 1\n    return tl.maximum(a, b)"]
    assert II._helpers(["no_such_helper"], "9.9") is None


@pytest.mark.skipif(HERE is None, reason="no torch installed to read the helpers from")
def test_the_copied_helpers_run_as_inductors(tmp_path):
    """Under Triton's interpreter: the copied ``maximum`` keeps Inductor's NaN rule, and ``exp`` runs
    (its fast path: the interpreter has no libdevice)."""
    import triton

    helpers = II._helpers(["maximum", "exp"], HERE)
    assert helpers is not None
    f = tmp_path / "copied_helpers.py"
    f.write_text("\n".join(["import torch", "import triton", "import triton.language as tl",
                            *II.TRITON_KERNEL_IMPORTS, "", *helpers, "",
                            "@triton.jit",
                            "def k(a_ptr, b_ptr, out_ptr, e_ptr, N: tl.constexpr):",
                            "    i = tl.arange(0, N)",
                            "    a = tl.load(a_ptr + i)",
                            "    tl.store(out_ptr + i, triton_helpers_maximum(a, tl.load(b_ptr + i)))",
                            "    tl.store(e_ptr + i, triton_helpers_exp(a, True))", ""]))
    spec = importlib.util.spec_from_file_location("copied_helpers", f)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    a = torch.tensor([1.0, float("nan"), -3.0, 2.0])
    b = torch.tensor([0.5, 1.0, float("nan"), 5.0])
    out, e = torch.empty(4), torch.empty(4)
    mod.k[(1,)](a, b, out, e, N=4)
    torch.testing.assert_close(out, torch.maximum(a, b), equal_nan=True)
    torch.testing.assert_close(e, torch.exp(a), equal_nan=True)
    assert triton is not None
