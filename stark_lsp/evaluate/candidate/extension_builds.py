"""A candidate's CUDA extension build (``torch.utils.cpp_extension.load_inline`` / ``load``), said as a compile.

A candidate that builds CUDA while it loads spends tens of seconds in nvcc, the CPU's work. Its load holds
the GPU's gate shared like any candidate's (docs/EVALUATOR.md); the build itself is said to the judge as
a compile, as each Triton compile is (``guards.LaunchCounter``: ``on_compile``), so the judge lets go of the
gate for it and takes it back, shared, before the extension's code runs. Saying is the process's word, and
the judge trusts it only as far as it trusts any compile said: at most ``link.UNGATED_S`` a process
without the gate, the rest of a longer build under the gate held shared. Before this, a source whose text
named ``load_inline`` (a comment would do) had its whole load run without the gate, saying nothing.

Wrapped where every build passes (``cpp_extension._jit_compile``, which ``load`` and ``load_inline`` call), in
the candidate's process only, once its judge asked for it (``op_load``'s ``builds``: a source that names
the API); importing ``cpp_extension`` costs a candidate that never builds nothing then.
"""

from __future__ import annotations

from typing import Any


def say_builds(counter: Any) -> bool:
    """Wrap ``torch.utils.cpp_extension._jit_compile`` so that each build is said through
    ``counter.on_compile`` (``("compiling", name)`` before, ``("compiled", name)`` after, a failed build
    too), when set. True when the wrapper is in place (now or before); False where torch has no such point
    (then a build runs with the gate held shared: slower for the other judges, never ungated)."""
    try:
        import torch.utils.cpp_extension as ext
    except ImportError:
        return False
    build = getattr(ext, "_jit_compile", None)
    if not callable(build):
        return False
    if getattr(build, "_stark_says_builds", False):
        return True

    def said(*a: Any, **k: Any) -> Any:
        told = counter.on_compile
        if told is None:
            return build(*a, **k)
        name = str(a[0] if a else k.get("name", "extension"))
        told("compiling", name)
        try:
            return build(*a, **k)
        finally:
            told("compiled", name)

    said._stark_says_builds = True  # type: ignore[attr-defined]
    ext._jit_compile = said  # type: ignore[attr-defined]
    return True
