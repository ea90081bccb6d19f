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


# names of per-column vectors (a bias, a LayerNorm's weight): one dimension, the last
_VECTOR_NAMES = {"bias", "gamma", "beta", "weight", "w", "b", "scale", "shift"}
# problem sizes when STARK_SMALL=1 (CPU tests) and otherwise (like a real workload), by rank
_SIZES = {1: ((1 << 12,), (1 << 20,)), 2: ((64, 128), (4096, 1024)), 3: ((4, 32, 64), (16, 512, 512))}
_MATMUL_SIZES = (64, 1024)


@dataclass(frozen=True)
class SizePlan:
    """How a launcher's integer parameters relate to its tensors' shapes."""

    dims: tuple[str, ...]  # module constants, in order (e.g. ROWS, COLS)
    small: tuple[int, ...]
    large: tuple[int, ...]
    shapes: dict[str, tuple[str, ...]]  # tensor parameter -> its dims
    size_dims: dict[str, str]  # size parameter -> the dim it passes ("": the element count)


def plan_sizes(params: list[Param]) -> SizePlan:
    """Shapes for the tensors and what each size parameter is: one size is the
    element count of 1-D tensors; ``m, n, k`` is a matmul (a: M×K, b: K×N,
    out: M×N); otherwise the sizes, in order, are the dimensions of the
    tensors (``rows, cols``), and an input named like a bias or a weight is a
    vector along the last one."""
    sizes = [p for p in params if p.role == "size"]
    tensors = [p for p in params if p.pointer]
    inputs = [p for p in tensors if p.role == "input"]
    if len(sizes) == 3 and sorted(p.name.lower() for p in sizes) == ["k", "m", "n"] and len(inputs) >= 2:
        by = {p.name.lower(): p.name for p in sizes}
        m, n, k = by["m"].upper(), by["n"].upper(), by["k"].upper()
        shapes = {inputs[0].name: (m, k), inputs[1].name: (k, n)}
        shapes.update({p.name: (m, n) for p in tensors if p.name not in shapes})
        small, large = _MATMUL_SIZES
        return SizePlan((m, n, k), (small,) * 3, (large,) * 3, shapes, {p.name: p.name.upper() for p in sizes})
    if len(sizes) <= 1:
        return SizePlan(("N",), *_SIZES[1], {p.name: ("N",) for p in tensors}, {p.name: "" for p in sizes})
    dims = tuple(_dim_name(p.name, i) for i, p in enumerate(sizes))
    rank = len(dims)
    small, large = _SIZES.get(rank, ((8,) * rank, (64,) * rank))
    shapes = {}
    for p in tensors:
        vector = p.role == "input" and p.name.lower() in _VECTOR_NAMES and inputs and p is not inputs[0]
        shapes[p.name] = (dims[-1],) if vector else dims
    return SizePlan(dims, small, large, shapes, {p.name: d for p, d in zip(sizes, dims)})


def _dim_name(name: str, i: int) -> str:
    up = re.sub(r"\W", "_", name).upper()
    return up if up.isidentifier() and up not in ("DEVICE", "SMALL", "N", "TORCH", "OS") else f"DIM{i}"


def _dim_expr(dim: str, plan: SizePlan, inputs: list[Param]) -> str:
    """An expression for ``dim`` from the tensors run() receives (else its constant)."""
    for p in inputs:
        shape = plan.shapes.get(p.name, ())
        if dim in shape:
            return f"{p.name}.shape[{shape.index(dim)}]"
    return dim


def render_cuda_harness(file_name: str, text: str, kernel: str | None = None) -> str:
    found = cuda_launcher(text, kernel)
    base = file_name.rsplit("/", 1)[-1]
    if found is None:
        return _CUDA_NO_LAUNCHER.format(file=base, kernel=kernel or "your kernel")
    launcher, decls = found
    params = [parse_c_param(d, i) for i, d in enumerate(decls)]
    plan = plan_sizes(params)
    inputs = [p for p in params if p.role in ("input", "scalar")]
    tensor_inputs = [p for p in inputs if p.pointer]
    outputs = [p for p in params if p.role == "output"]

    def dtype(p: Param) -> str:
        return _TORCH_DTYPES.get(p.base_type, "torch.float32")

    def make(p: Param) -> str:
        shape = ", ".join(plan.shapes.get(p.name, plan.dims))
        if dtype(p) in _FLOAT_DTYPES:
            return f"    {p.name} = torch.randn({shape}, device=DEVICE, dtype={dtype(p)})"
        return f"    {p.name} = torch.randint(0, 8, ({shape},), device=DEVICE, dtype={dtype(p)})"

    lines = [make(p) if p.pointer else f"    {p.name} = 1.5  # {p.base_type} scalar: choose a value" for p in inputs]
    call_args = []
    for p in params:
        if p.role != "size":
            call_args.append(p.name)
        elif plan.size_dims.get(p.name):
            call_args.append(_dim_expr(plan.size_dims[p.name], plan, tensor_inputs))
        else:
            call_args.append(f"{tensor_inputs[0].name}.numel()" if tensor_inputs else "N")
    alloc = []
    for p in outputs:
        shape = ", ".join(_dim_expr(d, plan, tensor_inputs) for d in plan.shapes.get(p.name, plan.dims))
        alloc.append(f"    {p.name} = torch.empty({shape}, device=DEVICE, dtype={dtype(p)})  "
                     f"# room for what {launcher} writes: make it the output's shape")
    input_names = [p.name for p in inputs]
    sig = ", ".join(input_names)
    return _CUDA_TEMPLATE.format(
        file=base,
        kernel=kernel or launcher,
        launcher=launcher,
        signature=", ".join(decls),
        sizes=_sizes_line(plan.dims, plan.small, plan.large),
        make="\n".join(lines) or "    pass",
        inputs_list=", ".join(input_names),
        sig=sig,
        sig_comma=(", " + sig) if sig else "",
        alloc="\n".join(alloc) or "    # the launcher has no output pointer: return what it writes",
        call=", ".join(call_args),
        returns=", ".join(p.name for p in outputs) or "None",
    )


_FLOAT_DTYPES = ("torch.float32", "torch.float64", "torch.float16", "torch.bfloat16")


def _sizes_line(dims: tuple[str, ...], small: tuple[int, ...], large: tuple[int, ...]) -> str:
    """``ROWS, COLS = (64, 128) if SMALL else (4096, 1024)``; one dimension: ``N = ... if SMALL else ...``."""
    if len(dims) == 1:
        return f"{dims[0]} = {small[0]} if SMALL else {large[0]}"
    return f"{', '.join(dims)} = ({', '.join(map(str, small))}) if SMALL else ({', '.join(map(str, large))})"


_CUDA_TEMPLATE = '''"""Harness for {file}: what "correct" and "fast" mean for {kernel}.

Generated by STARK-LSP from the launcher
    extern "C" void {launcher}({signature})
Fill in reference() (and adjust the sizes); the evaluator calls get_inputs()
for fresh inputs on every trial, reference(*inputs) for the expected output
and run(lib, *inputs) for the candidate, where lib is the compiled {file}
(lib.{launcher}(...) takes tensors and numbers; pointers are passed for you).
The sizes given to the launcher are read from the tensors, so a shape changed
here keeps every call in bounds.
"""

import os

import torch

DEVICE = "cuda"
SMALL = os.environ.get("STARK_SMALL") == "1"  # small shapes for quick checks
{sizes}  # problem size: make it like the real workload


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


_INT_NAMES = {"n", "n_elements", "numel", "size", "length", "count", "n_rows", "n_cols", "rows", "cols", "m", "k"}
_TRITON_SIZES = {1: (1 << 10, 1 << 16), 2: (32, 256)}  # (STARK_SMALL, real) per dimension, by rank


def _entry_function(text: str, name: str) -> ast.FunctionDef | None:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _shape_of(node: ast.AST, params: set[str]) -> str | None:
    """``p`` for ``p.shape`` / ``p.size()``, else None."""
    if isinstance(node, ast.Attribute) and node.attr == "shape" and isinstance(node.value, ast.Name) \
            and node.value.id in params:
        return node.value.id
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size" \
            and not node.args and isinstance(node.func.value, ast.Name) and node.func.value.id in params:
        return node.func.value.id
    return None


def tensor_dims(fn: ast.FunctionDef, params: list[str]) -> dict[str, list[str | None]]:
    """What the entry function reads of each parameter's shape: its rank and the
    names it gives the dimensions (``M, K = a.shape``, ``N = b.shape[1]``,
    ``x.stride(1)``). A parameter it never looks into is 1-D."""
    known = set(params)
    dims: dict[str, dict[int, str | None]] = {p: {} for p in params}

    def note(p: str, i: int, name: str | None) -> None:
        if i >= 0 and (dims[p].get(i) is None):
            dims[p][i] = name

    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            p = _shape_of(value, known)
            if p is not None and isinstance(target, (ast.Tuple, ast.List)):
                for i, t in enumerate(target.elts):
                    note(p, i, t.id if isinstance(t, ast.Name) else None)
                continue
            if isinstance(value, ast.Subscript) and isinstance(target, ast.Name):
                p = _shape_of(value.value, known)
                if p is not None and isinstance(value.slice, ast.Constant) and isinstance(value.slice.value, int):
                    note(p, value.slice.value, target.id)
        if isinstance(node, ast.Subscript):
            p = _shape_of(node.value, known)
            if p is not None and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
                note(p, node.slice.value, None)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("stride", "size") \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in known and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, int):
            note(node.func.value.id, node.args[0].value, None)
    out = {}
    for p, by_index in dims.items():
        rank = max(by_index) + 1 if by_index else 1
        out[p] = [by_index.get(i) for i in range(rank)]
    return out


def _is_number_param(arg: ast.arg) -> str | None:
    """'int' / 'float' for a parameter that is a number, not a tensor."""
    ann = arg.annotation
    if isinstance(ann, ast.Name) and ann.id in ("int", "float"):
        return ann.id
    return "int" if arg.arg.lower() in _INT_NAMES else None


def render_triton_harness(file_name: str, text: str, kernel: str | None = None) -> str:
    base = file_name.rsplit("/", 1)[-1]
    found = triton_entry(text, kernel)
    entry, names = found if found else ("entry", ["x"])
    fn = _entry_function(text, entry) if found else None
    if fn is not None:
        args = fn.args.args
        required = args[: len(args) - len(fn.args.defaults)]  # parameters with defaults keep them
        names = [a.arg for a in required if a.arg != "self"]
        numbers = {a.arg: kind for a in required if (kind := _is_number_param(a))}
    else:
        names = [n for n in names if n != "self"]
        numbers = {}
    tensors = [n for n in names if n not in numbers]
    dims = tensor_dims(fn, tensors) if fn is not None else {n: [None] for n in tensors}
    constants: dict[str, int] = {}  # dimension constant -> rank it was seen with (for its size)
    shapes: dict[str, list[str]] = {}
    for p in tensors:
        shape = []
        for i, d in enumerate(dims[p]):
            const = re.sub(r"\W", "_", d).upper() if d else (f"{p.upper()}_DIM{i}" if len(dims[p]) > 1 else "N")
            if not const.isidentifier() or const in ("DEVICE", "SMALL", "TORCH", "OS"):
                const = f"{p.upper()}_DIM{i}"
            constants[const] = max(constants.get(const, 0), len(dims[p]))
            shape.append(const)
        shapes[p] = shape
    small = tuple(_TRITON_SIZES[1 if r == 1 else 2][0] for r in constants.values())
    large = tuple(_TRITON_SIZES[1 if r == 1 else 2][1] for r in constants.values())
    make = []
    for n in names:
        if n in numbers:
            make.append(f"    {n} = {'1024' if numbers[n] == 'int' else '1.0'}  # a {numbers[n]}: choose a value")
        else:
            make.append(f"    {n} = torch.randn({', '.join(shapes[n])}, device=DEVICE)  # dtype: as {entry} expects")
    sig = ", ".join(names)
    note = "" if found else (
        f"\nSTARK-LSP found no function in {base} that launches {kernel or 'a kernel'}:\n"
        f"write one (an entry function) and call it from run().\n"
    )
    size_line = _sizes_line(tuple(constants), small, large) if constants else "N = 1024 if SMALL else 65536"
    return _TRITON_TEMPLATE.format(
        file=base,
        module=_module_name(base),
        kernel=kernel or entry,
        entry=entry,
        sig=sig,
        sig_comma=(", " + sig) if sig else "",
        sizes=size_line,
        make="\n".join(make) or "    pass",
        inputs_list=", ".join(names),
        note=note,
    )


_TRITON_TEMPLATE = '''"""Harness for {file}: what "correct" and "fast" mean for {kernel}.

Generated by STARK-LSP for the entry function {entry}({sig}).
Fill in reference() (and adjust the sizes); the evaluator calls get_inputs()
for fresh inputs on every trial, reference(*inputs) for the expected output
and run(mod, *inputs) for the candidate, where mod is the candidate {file}
imported as a module. The shapes follow what {entry} reads of them.{note}
"""

import os

import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # cpu: TRITON_INTERPRET=1
SMALL = os.environ.get("STARK_SMALL") == "1"  # small shapes for quick checks (and the CPU interpreter)
{sizes}  # problem size: make it like the real workload


def get_inputs():
{make}
    return [{inputs_list}]


def reference({sig}):
    """The PyTorch computation that {kernel} must match."""
    raise NotImplementedError("write the PyTorch reference for {entry} in this harness")


def run(mod{sig_comma}):
    return mod.{entry}({sig})
'''
