"""A candidate's exception, as the candidate process reports it: status, message, lines.

Runs in the candidate process (it has the exception and its traceback); the
judge treats what comes back as untrusted text and cleans it (``clean_text``).
"""

from __future__ import annotations

import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

from stark_lsp.evaluate.diagnostics import find_kernel_line, locate_snippet, parse_compiler_output, traceback_diagnostics
from stark_lsp.safe_text import first_line
from stark_lsp.evaluate.result import Diagnostic
from stark_lsp.tasks.kernel_names import defined_kernel_names

STICKY_CUDA = ("illegal memory access", "misaligned address", "unspecified launch failure", "device-side assert",
               "illegal instruction", "an illegal", "CUDA error: unknown error", "launch timed out")
def is_triton_compile_error(e: BaseException) -> bool:
    return type(e).__module__.startswith("triton.compiler") or type(e).__name__ in ("CompilationError", "CompileTimeAssertionFailure")


def triton_message(e: BaseException) -> str:
    """Triton's CompilationError reads "at L:C:", the source, a caret, then the cause."""
    text = str(e)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and set(ln.strip()) != {"^"}]
    cause = e.__cause__
    detail = f"{type(cause).__name__}: {cause}" if cause is not None else (lines[-1] if len(lines) > 1 else "")
    head = lines[0] if lines else type(e).__name__
    return f"{type(e).__name__} {head} {detail}".strip()[:1000]


def triton_diagnostics(e: BaseException, source: str) -> list[Diagnostic]:
    message = triton_message(e)
    line = None
    src = getattr(e, "src", None)
    fn_src = getattr(src, "src", src) if src is not None else None
    m = re.search(r"^at (\d+):(\d+):", str(e), re.M)
    if isinstance(fn_src, str) and m:
        first = next((ln for ln in fn_src.splitlines() if ln.strip().startswith("def ")), None)
        start = locate_snippet(first, source) if first else None
        if start is not None:  # "at L:C" counts from the function's def line
            def_offset = next((i for i, ln in enumerate(fn_src.splitlines()) if ln.strip().startswith("def ")), 0)
            line = start - def_offset + int(m.group(1)) - 1
    if line is None:  # fall back to the echoed source line
        for ln in str(e).splitlines()[1:]:
            hit = locate_snippet(ln, source) if len(ln.strip()) > 6 else None
            if hit:
                line = hit
                break
    return [Diagnostic(message=message, line=line, severity="error")]


def load_diagnostics(cause: BaseException, cand_file: Path, source: str) -> list[Diagnostic]:
    text = str(cause)
    compiler = parse_compiler_output(text, source=source)
    if compiler:
        return compiler
    diags = traceback_diagnostics(cause, str(cand_file))
    if diags and diags[0].line is None:
        name = None
        for n in defined_kernel_names(source):
            if n in text:
                name = n
        if name:
            diags[0].line = find_kernel_line(source, name)
    return diags


def error_reply(status: str, message: str, diagnostics: list[Diagnostic] = (), log: str = "",
                sticky: bool = False) -> dict[str, Any]:
    return {"error": {"status": status, "message": message[:2000], "diagnostics": [asdict(d) for d in diagnostics][:20],
                      "log": log[-20000:], "sticky": sticky}}


def call_failure(e: BaseException, cand_file: Path | None, source: str, first: bool) -> dict[str, Any]:
    """The reply for an exception raised by a call of the candidate."""
    if type(e).__name__ == "OutOfMemoryError":
        return error_reply("runtime_error", f"out of GPU memory: {first_line(str(e))}")
    if first and is_triton_compile_error(e):
        return error_reply("compile_error", triton_message(e), triton_diagnostics(e, source), log=str(e))
    msg = f"{type(e).__name__}: {first_line(str(e))}"
    sticky = any(s in str(e) for s in STICKY_CUDA)
    diags = traceback_diagnostics(e, str(cand_file)) if cand_file else []
    return error_reply("runtime_error", msg, diags, sticky=sticky)
