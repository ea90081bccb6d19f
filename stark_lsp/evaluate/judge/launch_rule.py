"""The launch rule the judge applies: which kernels a candidate's source launches, and whether
they ran (which kernels it defines: ``tasks/kernel_names.py``, the profiler's answer too).

``missing_launches`` says which kernels were reached but never launched, or
whether none of the kernels the source launches ran, matching exact names (a
kernel called ``elementwise`` is not PyTorch's ``vectorized_elementwise_kernel``).
``source_flags`` names constructs a reviewer should look at. Pure text: no torch.
"""

from __future__ import annotations

import re

from stark_lsp.evaluate.diagnostics import demangle
from stark_lsp.tasks.kernel_names import defined_kernel_names


def kernel_base_name(name: str) -> str:
    """The bare function name of a kernel as a profiler or Triton reports it.

    ``void ns::softmax<256>(float const*, float*, int)`` -> ``softmax``;
    ``_Z3addPKfPfi`` -> ``add``; ``my_kernel`` -> ``my_kernel``.
    """
    n = name.strip()
    if n.startswith("_Z"):
        return demangle(n)
    depth, cut = 0, len(n)
    for i, ch in enumerate(n):  # the parameter list: the first '(' outside template brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0:
            cut = i
            break
    n = n[:cut]
    out, depth = [], 0
    for ch in n:  # drop template arguments
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    n = "".join(out).strip().split()[-1] if "".join(out).strip() else ""
    return n.rsplit("::", 1)[-1].lstrip("*&")


def uses_cuda_graph(source: str) -> bool:
    """Whether the source may replay a CUDA graph: its kernels then run with no launch from Python, which
    Triton's launch counter cannot see, so only the profiler can tell whether they ran. The built-in
    team's switch written off (``CUDA_GRAPH = False``, torch.compile's written-out code) replays none: such
    a source keeps the counter alone. A reading of the text, which a source can fool either way (a line
    ``CUDA_GRAPH = False`` above the graph, ``torch._C._CUDAGraph``, a comment): nothing rests on it. The
    counter counts every launch of the process, a graph's capture included, and it alone speaks for a
    Triton kernel (``judge._launch_check``: the profiler, which names PyTorch's kernels too, only for CUDA's)."""
    if re.search(r"^CUDA_GRAPH\s*=\s*False\b", source, re.M):
        return False
    return bool(re.search(r"\bCUDAGraph\b|\bmake_graphed_callables\b|\bcuda\.graph\b", source))


def launched_kernel_names(raw: list[str]) -> set[str]:
    return {kernel_base_name(r) for r in raw if r}


def launch_sites(source: str, kernels: list[str]) -> list[str]:
    """Kernels the source launches by name: ``k[grid](...)`` (Triton) or ``k<<<...>>>`` (CUDA)."""
    return [k for k in kernels if re.search(r"\b" + re.escape(k) + r"\s*(\[|<<<)", source)]


def missing_launches(source: str, defined: list[str], ran: set[str], reached: set[str] = frozenset()) -> list[str]:
    """The candidate's kernels that should have run and did not (exact names).

    Every kernel whose launch the forward path reached (``kernel[grid]``
    evaluated) must have launched: reached but not launched is a launch that
    failed behind a fallback. And at least one kernel the source launches by
    name (any defined one, where it launches none by name: an indirect launch)
    must have run. Not every one: a kernel chosen by shape (``if inner == 1:
    rows_kernel[...] else: strided_kernel[...]``) rightly leaves the other
    unreached.
    """
    failed = [k for k in defined if k in reached and k not in ran]
    if failed:
        return failed
    expected = launch_sites(source, defined) or list(defined)
    return [] if any(k in ran for k in expected) else list(expected)


STREAM = "creates its own CUDA stream"
_SUSPICIOUS = [
    (re.compile(r"\b(torch\.cuda\.Stream|cuda\.Stream|cudaStreamCreate\w*|cupy\.cuda\.Stream)\b"), STREAM),
    (re.compile(r"\b(threading|multiprocessing|concurrent\.futures)\b"), "uses threads or processes"),
    (re.compile(r"\b(gc\.get_objects|sys\._getframe|inspect\.stack)\b"), "inspects the interpreter's state"),
    (re.compile(r"\b(elapsed_time|perf_counter|Event\s*\.)"), "touches timing functions"),
]


_GRAPH_OFF = re.compile(r"^CUDA_GRAPH\s*=\s*False\b", re.M)


def source_flags(source: str) -> list[str]:
    """Patterns worth a reviewer's look; dynamic checks decide pass or fail. The built-in team's candidates
    carry a CUDA graph's runtime, whose warm-up runs on a stream of its own (``cuda_graph_text.py``): with
    their switch off (``CUDA_GRAPH = False``) that stream is never made, and is not flagged. A reading of the
    text like ``uses_cuda_graph``'s, so nothing rests on it: a flag only asks for a look."""
    flags = [f"source {why}" for pat, why in _SUSPICIOUS
             if pat.search(source) and not (why == STREAM and _GRAPH_OFF.search(source))]
    if re.search(r"^\s*except\b", source, re.M) and defined_kernel_names(source):
        flags.append("source has try/except around kernel code (possible fallback)")
    return flags
