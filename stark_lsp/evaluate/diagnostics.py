"""Turn compiler output and Python tracebacks into diagnostics on candidate lines.

Pure text processing: nvcc / host-compiler / ptxas messages, the resource
report of ``-Xptxas -v``, and tracebacks whose frames point into the candidate.
"""

from __future__ import annotations

import re
import traceback
from types import TracebackType

from stark_lsp.evaluate.result import Diagnostic, KernelResources

# nvcc front end:  file.cu(12): error: message      (then the source line, then a caret)
_NVCC = re.compile(r"^(?P<file>[^\s()][^()]*?)\((?P<line>\d+)\): (?P<sev>error|warning|catastrophic error|remark)(?: #[\w-]+)?: (?P<msg>.*)$")
# gcc / clang host compiler:  file.cu:12:5: error: message
_GCC = re.compile(r"^(?P<file>[^\s:][^:]*?):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning|note|fatal error): (?P<msg>.*)$")
_PTXAS_ERR = re.compile(r"^ptxas (?:error|fatal)\s*: (?P<msg>.*)$")
_LINK_ERR = re.compile(r"^(?:nvlink error|.*undefined reference to)\s*:?\s*(?P<msg>.*)$")

_PTXAS_ENTRY = re.compile(r"ptxas info\s*: (?:Compiling entry function|Function properties for) '?(?P<name>[\w$.]+)'?")
_PTXAS_FRAME = re.compile(r"(?P<stack>\d+) bytes stack frame, (?P<st>\d+) bytes spill stores, (?P<ld>\d+) bytes spill loads")
_PTXAS_USED = re.compile(r"ptxas info\s*: Used (?P<regs>\d+) registers(?P<rest>.*)")
_SMEM = re.compile(r"(\d+) bytes smem")


def demangle(name: str) -> str:
    """The plain function name of an Itanium-mangled kernel (``_Z3addPKfPfi`` -> ``add``)."""
    m = re.match(r"_Z(?:N\d*)?(\d+)(\w+)", name)
    if not m:
        return name
    n = int(m.group(1))
    return m.group(2)[:n] or name


def _severity(s: str) -> str:
    s = s.lower()
    if "error" in s:
        return "error"
    if s in ("warning",):
        return "warning"
    return "note"


def locate_snippet(snippet: str, source: str) -> int | None:
    """The 1-based line of ``source`` whose text matches ``snippet`` uniquely."""
    key = " ".join(snippet.split())
    if len(key) < 4:
        return None
    hits = [i for i, ln in enumerate(source.splitlines(), 1) if " ".join(ln.split()) == key]
    if len(hits) == 1:
        return hits[0]
    hits = [i for i, ln in enumerate(source.splitlines(), 1) if key in " ".join(ln.split())]
    return hits[0] if len(hits) == 1 else None


def parse_compiler_output(
    log: str,
    *,
    source: str | None = None,
    source_name: str | None = None,
    line_offset: int = 0,
    max_line: int | None = None,
) -> list[Diagnostic]:
    """Diagnostics from nvcc / gcc / ptxas output.

    ``source_name``: the file name the compiler saw for the candidate; messages
    about other files (headers) keep their file and get no line.
    ``source``: the candidate text; where the compiler names a file we do not
    know (e.g. the ``main.cu`` that ``load_inline`` writes), the echoed source
    line that nvcc prints under the message is looked up in it.
    """
    out: list[Diagnostic] = []
    lines = log.splitlines()
    for i, raw in enumerate(lines):
        text = raw.rstrip()
        m = _NVCC.match(text) or _GCC.match(text)
        if m:
            file = m.group("file")
            line: int | None = int(m.group("line")) - line_offset
            col = int(m.group("col")) if "col" in m.groupdict() and m.group("col") else None
            ours = source_name is not None and file.endswith(source_name)
            if not ours:
                line = None
                if source is not None and i + 1 < len(lines):
                    line = locate_snippet(lines[i + 1], source)
            if line is not None and (line < 1 or (max_line is not None and line > max_line)):
                line = None
            if m.group("sev") == "remark":
                continue
            out.append(Diagnostic(message=m.group("msg").strip(), line=line, column=col, severity=_severity(m.group("sev")), file=file))
            continue
        m = _PTXAS_ERR.match(text)
        if m:
            msg = m.group("msg").strip()
            kernel = re.search(r"'(_Z\w+|\w+)'", msg)
            line = None
            if kernel and source is not None:
                name = demangle(kernel.group(1))
                line = find_kernel_line(source, name)
                msg = msg.replace(kernel.group(1), name)
            out.append(Diagnostic(message=f"ptxas: {msg}", line=line, severity="error", file="ptxas"))
            continue
        m = _LINK_ERR.match(text)
        if m and "error" in text.lower():
            out.append(Diagnostic(message=text.strip(), severity="error", file="link"))
    return out


def find_kernel_line(source: str, name: str) -> int | None:
    pat = re.compile(r"__global__[^;{]*?\b" + re.escape(name) + r"\s*\(")
    for i, ln in enumerate(source.splitlines(), 1):
        if pat.search(ln):
            return i
    pat = re.compile(r"^\s*def\s+" + re.escape(name) + r"\s*\(")
    for i, ln in enumerate(source.splitlines(), 1):
        if pat.search(ln):
            return i
    return None


def parse_ptxas_resources(log: str) -> list[KernelResources]:
    """Registers, shared memory, stack and spills per kernel from ``-Xptxas -v``."""
    res: dict[str, KernelResources] = {}
    current: str | None = None
    for text in log.splitlines():
        m = _PTXAS_ENTRY.search(text)
        if m:
            current = demangle(m.group("name"))
            res.setdefault(current, KernelResources(kernel=current))
            continue
        if current is None:
            continue
        m = _PTXAS_FRAME.search(text)
        if m:
            r = res[current]
            r.stack_bytes = int(m.group("stack"))
            r.spill_stores = int(m.group("st"))
            r.spill_loads = int(m.group("ld"))
            continue
        m = _PTXAS_USED.search(text)
        if m:
            r = res[current]
            r.registers = int(m.group("regs"))
            s = _SMEM.search(m.group("rest"))
            r.shared_bytes = int(s.group(1)) if s else 0
    return list(res.values())


def traceback_diagnostics(exc: BaseException, candidate_file: str, *, limit: int = 1) -> list[Diagnostic]:
    """The innermost frames of ``exc`` that lie in the candidate file."""
    frames: list[traceback.FrameSummary] = []
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:  # interpreters re-raise: follow the chain
        seen.add(id(e))
        tb: TracebackType | None = e.__traceback__
        frames += [f for f in traceback.extract_tb(tb) if f.filename == candidate_file and f not in frames]
        e = e.__cause__ or e.__context__
    msg = f"{type(exc).__name__}: {exc}".strip()
    if len(msg) > 2000:
        msg = msg[:2000] + " ..."
    if not frames:
        line = _line_from_syntax_error(exc, candidate_file)
        return [Diagnostic(message=msg, line=line, severity="error")]
    return [Diagnostic(message=msg, line=f.lineno, severity="error", file=candidate_file) for f in frames[-limit:]]


def _line_from_syntax_error(exc: BaseException, candidate_file: str) -> int | None:
    if isinstance(exc, SyntaxError) and exc.filename == candidate_file:
        return exc.lineno
    return None


_TRITON_AT = re.compile(r"^at (\d+):(\d+):", re.M)

