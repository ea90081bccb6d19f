"""What a kernel task is, and how a file on disk becomes one.

Three formats (docs/HARNESS.md has the user-facing description):

* ``kernelbench``: a Python file with ``Model``, ``get_inputs()`` and
  ``get_init_inputs()``. Candidates are Python files with ``ModelNew``.
* ``cuda``: a ``.cu`` file with ``__global__`` kernels and ``extern "C"`` host
  launchers, plus a Python *harness* with the reference, the inputs and a
  ``run(lib, *inputs)`` that calls the launchers. Candidates are ``.cu`` files.
* ``triton``: a Python file with ``@triton.jit`` kernels and an entry function,
  plus a harness (beside it, or the same file). Candidates are Python files.

The harness of ``foo.cu`` / ``foo.py`` is found, in this order: the path given
explicitly; a ``stark-harness: PATH`` comment in the kernel file (relative to
it); ``foo.harness.py`` beside it; for Triton only, the kernel file itself when
it defines ``get_inputs``.

This module is pure: it reads text files and never imports torch.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

TaskKind = Literal["kernelbench", "cuda", "triton"]

CUDA_SUFFIXES = (".cu", ".cuh")
_HARNESS_COMMENT = re.compile(r"(?://|#)\s*stark-harness:\s*(\S+)")
_TRITON_JIT = re.compile(r"^\s*@triton\.(?:jit|autotune|heuristics)\b", re.M)
_CLASS_MODEL = re.compile(r"^class\s+Model\s*\(", re.M)
_DEF_GET_INPUTS = re.compile(r"^def\s+get_inputs\s*\(", re.M)
_CLASS_MODEL_NEW = re.compile(r"^class\s+ModelNew\s*\(", re.M)


class TaskError(ValueError):
    """A file that is not a usable task; the message says what to do."""


class HarnessNotFound(TaskError):
    """A CUDA or Triton kernel file whose harness could not be found."""

    def __init__(self, kernel: Path, expected: Path):
        self.kernel = kernel
        self.expected = expected
        super().__init__(
            f"no harness for {kernel.name}: create {expected.name} beside it "
            f"(reference, get_inputs and run; see docs/HARNESS.md), or name one "
            f"with a 'stark-harness: FILE' comment"
        )

    def command_line_text(self, given: str | Path, harness_flag: bool = True) -> str:
        """The line a command prints: ``stark harness PATH`` writes the harness (PATH as the user gave the
        kernel, quoted for the shell), rather than the functions to write by hand."""
        import shlex

        flag = "give --harness FILE, or " if harness_flag else ""
        return (f"no harness for {self.kernel.name}: {shlex.join(['stark', 'harness', str(given)])} writes one "
                f"({self.expected.name} beside it; then fill in its reference()), or {flag}name one in a "
                f"'# stark-harness: FILE' comment")


@dataclass(frozen=True)
class TaskSpec:
    kind: TaskKind
    path: Path  # kernelbench: the reference; cuda/triton: the kernel file
    harness: Path | None = None  # cuda/triton: where reference and inputs live

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def candidate_suffix(self) -> str:
        return ".cu" if self.kind == "cuda" else ".py"

    @property
    def language(self) -> str:
        return "cuda" if self.kind == "cuda" else "python"

    def root_source(self) -> str:
        """The starting candidate: the user's kernel, or for KernelBench the
        reference itself wrapped as ``ModelNew`` (speedup 1.0 by construction)."""
        text = self.path.read_text()
        if self.kind != "kernelbench":
            return text
        if _CLASS_MODEL_NEW.search(text):
            return text
        return text.rstrip() + KERNELBENCH_STUB

    def task_id(self) -> str:
        """Stable id from the resolved paths (not the contents, which change)."""
        key = f"{self.kind}:{self.path.resolve()}:{self.harness.resolve() if self.harness else ''}"
        return hashlib.sha256(key.encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": str(self.path),
            "harness": str(self.harness) if self.harness else None,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TaskSpec":
        h = d.get("harness")
        return cls(kind=d["kind"], path=Path(d["path"]), harness=Path(h) if h else None)


def default_harness_path(kernel: Path) -> Path:
    return kernel.with_name(kernel.stem + ".harness.py")


def find_harness(kernel: Path, text: str | None = None) -> Path | None:
    """The harness of a CUDA or Triton kernel file, or None."""
    text = kernel.read_text() if text is None else text
    m = _HARNESS_COMMENT.search(text)
    if m:
        p = (kernel.parent / m.group(1)).resolve()
        if not p.exists():
            raise TaskError(f"{kernel.name}: stark-harness names {m.group(1)}, which does not exist")
        return p
    beside = default_harness_path(kernel)
    try:
        there = beside.exists()
    except OSError as e:  # ENAMETOOLONG: the kernel's name fits, its harness's (".harness.py" more) does not
        raise TaskError(f"{kernel.name[:40]}…: its harness's name would be {len(beside.name)} characters, "
                        f"{e.strerror.lower() if e.strerror else 'refused'} here: shorten the kernel's file "
                        f"name, or name its harness in a '# stark-harness: FILE' comment") from None
    if there:
        return beside
    if kernel.suffix == ".py" and _DEF_GET_INPUTS.search(text):
        return kernel  # self-contained Triton file
    return None


KERNELBENCH_STUB = "\n\n\nclass ModelNew(Model):\n    pass\n"  # appended to a reference without ModelNew


def without_kernelbench_stub(source: str) -> str | None:
    """The file a KernelBench root was made from (up to trailing blank lines), or None if
    ``source`` does not end in the stub ``root_source`` appends."""
    return source[: -len(KERNELBENCH_STUB)] if source.endswith(KERNELBENCH_STUB) else None


def is_kernelbench_reference(text: str) -> bool:
    return bool(_CLASS_MODEL.search(text) and _DEF_GET_INPUTS.search(text))


def is_triton_source(text: str) -> bool:
    return bool(_TRITON_JIT.search(text))


def load_task(path: str | Path, harness: str | Path | None = None) -> TaskSpec:
    """Turn a file into a task, or raise TaskError saying why it is not one."""
    p = Path(path).resolve()
    text = read_source(path, "task")
    h = Path(harness).resolve() if harness else None
    if h is not None:
        read_source(harness, "harness")
    if p.suffix in CUDA_SUFFIXES:
        h = h or find_harness(p, text)
        if h is None:
            raise HarnessNotFound(p, default_harness_path(p))
        return TaskSpec("cuda", p, h)
    if p.suffix != ".py":
        raise TaskError(f"{p.name}: expected a .cu, .cuh or .py file")
    if h is None and is_kernelbench_reference(text) and not default_harness_path(p).exists():
        return TaskSpec("kernelbench", p)
    if is_triton_source(text) or h is not None:
        h = h or find_harness(p, text)
        if h is None:
            raise HarnessNotFound(p, default_harness_path(p))
        return TaskSpec("triton", p, h)
    bad = syntax_error(text, p.name)
    if bad:
        raise TaskError(f"{bad}: fix it first (a file with a syntax error is not read as a task)")
    raise TaskError(
        f"{p.name}: not a task: expected a KernelBench file (class Model, get_inputs, "
        f"get_init_inputs) or a Triton file with @triton.jit kernels"
    )


def read_source(path: str | Path, what: str = "file") -> str:
    """The text of a source file, or TaskError saying why it cannot be one (missing,
    a directory, not UTF-8 text)."""
    p = Path(path)
    if not p.exists():
        raise TaskError(f"{what} {path}: no such file")
    if p.is_dir():
        raise TaskError(f"{what} {path} is a directory: give one kernel file (a .cu, a Triton .py or a KernelBench .py)")
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TaskError(f"{what} {path} is not text (not UTF-8): give the kernel's source file") from None
    except OSError as e:
        raise TaskError(f"{what} {path}: cannot read it: {e.strerror or e}") from None


def syntax_error_at(text: str, name: str) -> tuple[int | None, str] | None:
    """(line, message) when ``text`` is not valid Python (line None: not Python at all, e.g. NUL bytes),
    else None: the one check behind the CLI's refusal and the editor's "fix the syntax error" reason."""
    import ast

    try:
        ast.parse(text, filename=name)
    except SyntaxError as e:
        return e.lineno or 1, str(e.msg)
    except ValueError as e:  # NUL bytes
        return None, f"not valid Python: {e}"
    return None


def syntax_error(text: str, name: str) -> str | None:
    """``name:LINE: syntax error: MSG`` when ``text`` is not valid Python, else None."""
    bad = syntax_error_at(text, name)
    if bad is None:
        return None
    line, msg = bad
    return f"{name}:{line}: syntax error: {msg}" if line is not None else f"{name}: {msg}"
