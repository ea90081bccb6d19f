"""Call a compiled CUDA candidate's ``extern "C"`` launchers from Python.

The launchers' parameter lists are read from the source, so a harness calls
``lib.softmax(x, y, rows, cols)`` with torch tensors and numbers: tensors become
device pointers (after checking device, dtype and contiguity), numbers become
the declared C types, a ``cudaStream_t`` parameter gets the current stream.
After every call the launch error is read back, so a bad launch configuration
raises at once instead of passing silently.

The parsing half is pure; ``CudaLibrary`` imports torch and runs in a worker.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from typing import Any

_EXTERN_C_FN = re.compile(
    r'extern\s+"C"\s+(?:__host__\s+)?(?P<ret>[\w\s\*]+?)\s*\b(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^)]*)\)\s*\{',
    re.S,
)
_EXTERN_C_BLOCK = re.compile(r'extern\s+"C"\s*\{')
_FN_IN_BLOCK = re.compile(r"(?:^|\n)\s*(?!__global__|__device__|static\s+__device__)(?:__host__\s+)?(?P<ret>[\w\s\*]+?)\s*\b(?P<name>[A-Za-z_]\w*)\s*\((?P<params>[^)]*)\)\s*\{", re.S)

# C base type -> (ctypes type for values, torch dtype name for pointers)
_SCALARS: dict[str, tuple[Any, str | None]] = {
    "float": (ctypes.c_float, "float32"),
    "double": (ctypes.c_double, "float64"),
    "half": (None, "float16"),
    "__half": (None, "float16"),
    "__nv_bfloat16": (None, "bfloat16"),
    "nv_bfloat16": (None, "bfloat16"),
    "int": (ctypes.c_int, "int32"),
    "int32_t": (ctypes.c_int32, "int32"),
    "unsigned": (ctypes.c_uint, "int32"),
    "unsigned int": (ctypes.c_uint, "int32"),
    "uint32_t": (ctypes.c_uint32, "int32"),
    "long": (ctypes.c_long, "int64"),
    "long long": (ctypes.c_longlong, "int64"),
    "int64_t": (ctypes.c_int64, "int64"),
    "uint64_t": (ctypes.c_uint64, "int64"),
    "size_t": (ctypes.c_size_t, "int64"),
    "short": (ctypes.c_short, "int16"),
    "int16_t": (ctypes.c_int16, "int16"),
    "char": (ctypes.c_char, "int8"),
    "int8_t": (ctypes.c_int8, "int8"),
    "uint8_t": (ctypes.c_uint8, "uint8"),
    "unsigned char": (ctypes.c_ubyte, "uint8"),
    "bool": (ctypes.c_bool, "bool"),
    "void": (None, None),
}
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct", "signed"}


_TYPE_WORDS = {w for k in _SCALARS for w in k.split()} | {"cudaStream_t"}  # words that are part of a type


class SignatureError(ValueError):
    pass


@dataclass(frozen=True)
class Param:
    name: str
    base: str  # C base type without qualifiers, e.g. "float"
    pointer: bool
    stream: bool = False

    @property
    def torch_dtype(self) -> str | None:
        return _SCALARS.get(self.base, (None, None))[1]


@dataclass(frozen=True)
class Launcher:
    name: str
    returns: str
    params: tuple[Param, ...]


def _strip_comments(src: str) -> str:
    src = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), src, flags=re.S)
    return re.sub(r"//[^\n]*", "", src)


def _parse_param(text: str, index: int) -> Param | None:
    text = " ".join(text.replace("*", " * ").replace("&", " & ").split())
    if not text or text == "void":
        return None
    if "&" in text:
        raise SignatureError(f"parameter {text!r}: references cannot be passed from Python; use a pointer")
    text = re.sub(r"\[\s*\]", " * ", text)
    words = [w for w in text.split() if w not in _QUALIFIERS]
    pointer = "*" in words
    words = [w for w in words if w != "*"]
    if not words:
        raise SignatureError(f"cannot read parameter {index + 1}: {text!r}")
    if len(words) >= 2 and words[-1] not in _TYPE_WORDS and re.fullmatch(r"[A-Za-z_]\w*", words[-1]):
        name, type_words = words[-1], words[:-1]  # "int2 v", "unsigned int n": the last word names it
    else:
        name, type_words = f"arg{index}", words
    base = " ".join(type_words)
    if base == "cudaStream_t":
        return Param(name, base, False, stream=True)
    if base not in _SCALARS:
        if pointer:  # a pointer to a user type (struct, vector type): passed as a raw pointer
            return Param(name, base, True)
        raise SignatureError(f"parameter {name!r} has type {base!r}, which cannot be passed from Python")
    return Param(name, base, pointer)


def parse_launchers(source: str) -> dict[str, Launcher]:
    """All ``extern "C"`` host functions of a CUDA source, by name."""
    src = _strip_comments(source)
    found: dict[str, Launcher] = {}

    def add(m: re.Match[str]) -> None:
        ret = " ".join(w for w in m.group("ret").split() if w not in ("static", "inline", "__host__"))
        if "__global__" in ret or "__device__" in ret:
            return
        raw = [p for p in m.group("params").split(",")]
        params = tuple(p for p in (_parse_param(t, i) for i, t in enumerate(raw)) if p is not None)
        found[m.group("name")] = Launcher(m.group("name"), ret.strip(), params)

    for m in _EXTERN_C_FN.finditer(src):
        add(m)
    for b in _EXTERN_C_BLOCK.finditer(src):
        depth, i = 1, b.end()
        while i < len(src) and depth:
            depth += {"{": 1, "}": -1}.get(src[i], 0)
            i += 1
        body = src[b.end(): i - 1]
        # only top-level functions of the block
        depth, start, chunks = 0, 0, []
        for j, ch in enumerate(body):
            if ch == "{":
                if depth == 0:
                    chunks.append(body[start: j + 1])
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    start = j + 1
        for chunk in chunks:
            m = _FN_IN_BLOCK.search(chunk)
            if m:
                add(m)
    return found


class CudaLaunchError(RuntimeError):
    pass


class CudaLibrary:
    """A loaded candidate library whose launchers are called like functions."""

    def __init__(self, path: str, source: str):
        import torch  # noqa: F401  (worker side only)

        self._lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        self._lib.stark_last_error.restype = ctypes.c_int
        self._lib.stark_error_string.restype = ctypes.c_char_p
        self._lib.stark_error_string.argtypes = [ctypes.c_int]
        self.launchers = parse_launchers(source)
        self.calls = 0
        for name, fn in self.launchers.items():
            cfn = getattr(self._lib, name)
            cfn.argtypes = [ctypes.c_void_p if (p.pointer or p.stream) else _SCALARS[p.base][0] for p in fn.params]
            ret = _SCALARS.get(fn.returns.replace("*", "").strip(), (None,))[0]
            cfn.restype = ctypes.c_void_p if "*" in fn.returns else ret

    def __getattr__(self, name: str) -> Any:
        launchers = self.__dict__.get("launchers", {})
        if name not in launchers:
            known = ", ".join(sorted(launchers)) or "none"
            raise AttributeError(f'no extern "C" launcher named {name!r} in the candidate (launchers: {known})')
        return lambda *args: self._call(launchers[name], args)

    def _call(self, fn: Launcher, args: tuple[Any, ...]) -> Any:
        import torch

        if len(args) != len(fn.params) and not (len(args) == len(fn.params) - 1 and fn.params[-1].stream):
            raise TypeError(f"{fn.name} takes {len(fn.params)} arguments ({', '.join(p.name for p in fn.params)}), got {len(args)}")
        cargs = []
        for i, p in enumerate(fn.params):
            a = args[i] if i < len(args) else None
            if p.stream:
                cargs.append(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream if a is None else int(getattr(a, "cuda_stream", a))))
            elif p.pointer:
                if not isinstance(a, torch.Tensor):
                    raise TypeError(f"{fn.name}: argument {p.name!r} is a pointer: pass a tensor, got {type(a).__name__}")
                if not a.is_cuda:
                    raise TypeError(f"{fn.name}: argument {p.name!r} must be on the GPU")
                if not a.is_contiguous():
                    raise TypeError(f"{fn.name}: argument {p.name!r} must be contiguous")
                want = p.torch_dtype
                if want and str(a.dtype).replace("torch.", "") != want:
                    raise TypeError(f"{fn.name}: argument {p.name!r} is {p.base}* but the tensor is {a.dtype}")
                cargs.append(ctypes.c_void_p(a.data_ptr()))
            else:
                if isinstance(a, torch.Tensor):
                    a = a.item()
                cargs.append(a)
        self.calls += 1
        out = getattr(self._lib, fn.name)(*cargs)
        err = self._lib.stark_last_error()
        if err:
            raise CudaLaunchError(f"{fn.name}: CUDA error {err}: {self._lib.stark_error_string(err).decode()}")
        return out
