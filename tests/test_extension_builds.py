"""A candidate's CUDA extension build is said as a compile (candidate/extension_builds.py), so its load can
hold the GPU's gate shared like any candidate's (a source that named load_inline had its whole load run
without the gate): the wrapper's side, on the CPU, with torch's own cpp_extension and a stand-in build."""

import pytest
import torch.utils.cpp_extension as ext

from stark_lsp.evaluate.candidate.extension_builds import say_builds


class Counter:
    def __init__(self):
        self.on_compile = None
        self.said = []


@pytest.fixture
def stand_in_build(monkeypatch):
    built = []

    def build(name, *a, **k):
        built.append(name)
        if name == "broken":
            raise RuntimeError("nvcc: error")
        return f"module {name}"

    monkeypatch.setattr(ext, "_jit_compile", build)
    return built


def test_each_build_is_said_before_and_after_while_the_judge_asked(stand_in_build):
    counter = Counter()
    assert say_builds(counter) and say_builds(counter)  # once: a second call keeps the one wrapper
    counter.on_compile = lambda step, name: counter.said.append((step, name))
    assert ext._jit_compile("relu_ext", ["a.cu"]) == "module relu_ext"
    assert counter.said == [("compiling", "relu_ext"), ("compiled", "relu_ext")] and stand_in_build == ["relu_ext"]
    with pytest.raises(RuntimeError, match="nvcc"):  # a failed build ends said too: its error comes with the gate back
        ext._jit_compile(name="broken")
    assert counter.said[-2:] == [("compiling", "broken"), ("compiled", "broken")]


def test_outside_a_request_that_asked_nothing_is_said(stand_in_build):
    counter = Counter()
    say_builds(counter)
    ext._jit_compile("later", [])  # on_compile unset: the trials, the timing
    assert counter.said == [] and stand_in_build == ["later"]


def test_load_inline_goes_through_the_wrapper(stand_in_build, tmp_path):
    """torch's load_inline reaches its build through the module's _jit_compile, which the wrapper replaced."""
    counter = Counter()
    say_builds(counter)
    counter.on_compile = lambda step, name: counter.said.append((step, name))
    out = ext.load_inline(name="inline_ext", cpp_sources="int f() { return 1; }", build_directory=str(tmp_path))
    assert out == "module inline_ext" and counter.said == [("compiling", "inline_ext"), ("compiled", "inline_ext")]
