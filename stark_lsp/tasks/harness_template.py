"""A starting harness for a kernel file that has none.

A harness (see ``stark_lsp/tasks/spec.py``) holds what the kernel file does
not: the PyTorch reference, the inputs, and ``run(lib, *inputs)`` that calls
the user's code. The template is written for the kernel's own signature:

* CUDA: the ``extern "C"`` launcher that launches the kernel (its parameters
  become inputs: ``const T*`` are input tensors, other pointers outputs,
  integers sizes, floats scalars);
* Triton: the entry function that launches the kernel (``kernel[grid](...)``).

The reference is left for the user to write: a harness that guessed it would
make every candidate "correct" against the wrong thing.

Pure: text in, text out.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from stark_lsp.tasks.kernels import find_cuda_functions, find_triton_kernels

_TORCH_DTYPES = {
    "float": "torch.float32",
    "double": "torch.float64",
    "half": "torch.float16",
    "__half": "torch.float16",
    "__nv_bfloat16": "torch.bfloat16",
    "nv_bfloat16": "torch.bfloat16",
    "int": "torch.int32",
    "int32_t": "torch.int32",
    "unsigned": "torch.int32",
    "int64_t": "torch.int64",
    "long": "torch.int64",
    "int8_t": "torch.int8",
    "uint8_t": "torch.uint8",
    "bool": "torch.bool",
}
_QUALIFIERS = {"const", "__restrict__", "__restrict", "restrict", "volatile", "unsigned", "signed", "struct"}


@dataclass(frozen=True)
class Param:
    name: str
    base_type: str  # e.g. "float", without qualifiers and '*'
    pointer: bool
    const: bool

    @property
    def role(self) -> str:
        """input | output | size | scalar"""
        if self.pointer:
            return "input" if self.const else "output"
        if self.base_type in ("int", "int32_t", "int64_t", "long", "size_t", "unsigned"):
            return "size"
        return "scalar"


def parse_c_param(decl: str, index: int) -> Param:
    """``const float* __restrict__ x`` -> Param('x', 'float', pointer, const)."""
    decl = re.sub(r"\[\s*\]", "*", decl.split("=")[0])
    pointer = "*" in decl or "&" in decl
    words = re.findall(r"[A-Za-z_]\w*", decl)
    name = words[-1] if len(words) >= 2 else f"arg{index}"
    types_ = [w for w in (words[:-1] if len(words) >= 2 else words) if w not in _QUALIFIERS]
    base = types_[-1] if types_ else "int"
    if "unsigned" in words and base == "int":
        base = "unsigned"
    return Param(name, base, pointer, "const" in words)


def _module_name(file_name: str) -> str:
    return re.sub(r"\W", "_", file_name.rsplit("/", 1)[-1].rsplit(".", 1)[0])


def render_harness(language: str, file_name: str, text: str, kernel: str | None = None) -> str:
    """The harness text for ``file_name`` (its ``text``), aimed at ``kernel``."""
    if language == "cuda":
        return render_cuda_harness(file_name, text, kernel)
    return render_triton_harness(file_name, text, kernel)


# -- CUDA ------------------------------------------------------------------------


def cuda_launcher(text: str, kernel: str | None) -> tuple[str, tuple[str, ...]] | None:
    """(name, parameter declarations) of the extern "C" launcher of ``kernel``."""
    fns = find_cuda_functions(text)
    launchers = [f for f in fns if f.is_extern_c and not f.is_kernel and not f.is_device]
    if not launchers:
        return None
    lines = text.split("\n")
    if kernel:
        launch = re.compile(rf"\b{re.escape(kernel)}\s*(?:<[^;]*?>)?\s*<<<")
        for f in launchers:
            body = "\n".join(lines[f.start_line : f.end_line + 1])
            if launch.search(body):
                return f.name, f.params
    return launchers[0].name, launchers[0].params


def render_cuda_harness(file_name: str, text: str, kernel: str | None = None) -> str:
    found = cuda_launcher(text, kernel)
    base = file_name.rsplit("/", 1)[-1]
    if found is None:
        return _CUDA_NO_LAUNCHER.format(file=base, kernel=kernel or "your kernel")
    launcher, decls = found
    params = [parse_c_param(d, i) for i, d in enumerate(decls)]
    inputs = [p for p in params if p.role in ("input", "scalar")]
    outputs = [p for p in params if p.role == "output"]
    first_tensor = next((p for p in params if p.pointer), None)
    make = []
    for p in inputs:
        if p.pointer:
            make.append(f"    {p.name} = torch.randn(N, device=DEVICE, dtype={_TORCH_DTYPES.get(p.base_type, 'torch.float32')})")
        else:
            make.append(f"    {p.name} = 1.5  # {p.base_type} scalar: choose a value")
    input_names = [p.name for p in inputs]
    call_args = []
    for p in params:
        if p.role == "size":
            call_args.append(f"{first_tensor.name}.numel()" if first_tensor and first_tensor in inputs else "N")
        else:
            call_args.append(p.name)
    like = next((p.name for p in inputs if p.pointer), None)
    shape = f"{like}.shape" if like else "N"
    alloc = [
        f"    {p.name} = torch.empty({shape}, device=DEVICE, dtype={_TORCH_DTYPES.get(p.base_type, 'torch.float32')})"
        for p in outputs
    ]
    returns = ", ".join(p.name for p in outputs) or "None"
    sig = ", ".join(input_names)
    return _CUDA_TEMPLATE.format(
        file=base,
        kernel=kernel or launcher,
        launcher=launcher,
        signature=", ".join(decls),
        make="\n".join(make) or "    pass",
        inputs_list=", ".join(input_names),
        sig=sig,
        sig_comma=(", " + sig) if sig else "",
        alloc="\n".join(alloc) or "    # the launcher has no output pointer: return what it writes",
        call=", ".join(call_args),
        returns=returns,
    )


_CUDA_TEMPLATE = '''"""Harness for {file}: what "correct" and "fast" mean for {kernel}.

Generated by STARK-LSP from the launcher
    extern "C" void {launcher}({signature})
Fill in reference() (and adjust the sizes); the evaluator calls get_inputs()
for fresh inputs on every trial, reference(*inputs) for the expected output
and run(lib, *inputs) for the candidate, where lib is the compiled {file}
(lib.{launcher}(...) takes tensors and numbers; pointers are passed for you).
"""

import torch

DEVICE = "cuda"
N = 1 << 20  # problem size: make it like the real workload


def get_inputs():
{make}
    return [{inputs_list}]


def reference({sig}):
    """The PyTorch computation that {kernel} must match."""
    raise NotImplementedError("write the PyTorch reference for {kernel} in this harness")


def run(lib{sig_comma}):
{alloc}
    lib.{launcher}({call})
    return {returns}
'''

_CUDA_NO_LAUNCHER = '''"""Harness for {file}.

STARK-LSP found no extern "C" launcher in {file}. Add one that launches
{kernel}, e.g.

    extern "C" void launch(const float* x, float* y, int n) {{ ... <<<grid, block>>>(x, y, n); }}

then fill in the three functions below.
"""

import torch

DEVICE = "cuda"


def get_inputs():
    raise NotImplementedError("return the list of input tensors")


def reference(*inputs):
    raise NotImplementedError("write the PyTorch reference")


def run(lib, *inputs):
    raise NotImplementedError("call your extern \\"C\\" launcher through lib")
'''


# -- Triton ----------------------------------------------------------------------


def triton_entry(text: str, kernel: str | None) -> tuple[str, list[str]] | None:
    """(name, parameter names) of the top-level function that launches ``kernel``."""
    kernels = {k.name for k in find_triton_kernels(text)}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return _triton_entry_by_regex(text, kernel, kernels)
    candidates = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name in kernels:
            continue
        names = [a.arg for a in node.args.args]
        launches = {
            n.value.id
            for n in ast.walk(node)
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
        }
        candidates.append((node.name, names, launches))
    for name, names, launches in candidates:
        if kernel and kernel in launches:
            return name, names
    for name, names, launches in candidates:
        if launches & kernels and name not in ("get_inputs", "reference", "run"):
            return name, names
    return None


def _triton_entry_by_regex(text: str, kernel: str | None, kernels: set[str]) -> tuple[str, list[str]] | None:
    for m in re.finditer(r"^def\s+([A-Za-z_]\w*)\s*\(([^)]*)\)", text, re.M):
        if m.group(1) in kernels:
            continue
        names = [re.split(r"[:=]", p)[0].strip() for p in m.group(2).split(",") if p.strip()]
        return m.group(1), [n for n in names if n.isidentifier()]
    return None


def render_triton_harness(file_name: str, text: str, kernel: str | None = None) -> str:
    base = file_name.rsplit("/", 1)[-1]
    found = triton_entry(text, kernel)
    entry, names = found if found else ("entry", ["x"])
    names = [n for n in names if n not in ("self",)]
    sig = ", ".join(names)
    make = "\n".join(f"    {n} = torch.randn(N, device=DEVICE)" for n in names) or "    pass"
    note = "" if found else (
        f"\nSTARK-LSP found no function in {base} that launches {kernel or 'a kernel'}:\n"
        f"write one (an entry function) and call it from run().\n"
    )
    return _TRITON_TEMPLATE.format(
        file=base,
        module=_module_name(base),
        kernel=kernel or entry,
        entry=entry,
        sig=sig,
        sig_comma=(", " + sig) if sig else "",
        make=make,
        inputs_list=", ".join(names),
        note=note,
    )


_TRITON_TEMPLATE = '''"""Harness for {file}: what "correct" and "fast" mean for {kernel}.

Generated by STARK-LSP for the entry function {entry}({sig}).
Fill in reference() (and adjust the sizes); the evaluator calls get_inputs()
for fresh inputs on every trial, reference(*inputs) for the expected output
and run(mod, *inputs) for the candidate, where mod is the candidate {file}
imported as a module.{note}
"""

import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # cpu: TRITON_INTERPRET=1
N = 1 << 16  # problem size: make it like the real workload


def get_inputs():
{make}
    return [{inputs_list}]


def reference({sig}):
    """The PyTorch computation that {kernel} must match."""
    raise NotImplementedError("write the PyTorch reference for {entry} in this harness")


def run(mod{sig_comma}):
    return mod.{entry}({sig})
'''
