"""The bytes of one call's inputs and outputs: what the bench's memory admission (``memory_admission.py``)
estimates a task's GPU memory from.

Two sources, the second better:

* ``read_call_size(task)``, before anything ran: the task's ``get_inputs()`` (the KernelBench file, or the
  harness) read with ``ast``, never imported or run. A small interpreter follows module-level constants,
  ``STARK_SMALL`` switches (read from the environment, as the harness will), small helpers, ``for``
  loops over ``range``, and the tensors ``torch.rand``/``randn``/``zeros``/``ones``/``empty``/``full``/
  ``randint``/``arange``/``*_like``... make, with their ``dtype`` and ``.half()``-style casts. What it
  cannot follow makes the answer None (unknown), never a guess. A call's outputs are written nowhere
  before the reference runs: they are taken as large as the largest input (an elementwise operation, a
  normalization, a square product; a reduction's are smaller, a transposed convolution's larger).
* ``io_call_size(result.io)``, once an evaluation reported the inputs and outputs it saw
  (``EvalResult.io``: shapes and dtypes): exact.

Pure: no torch.
"""

from __future__ import annotations

import ast
import math
import operator
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from stark_lsp.agents.builtin.kb_ast import dotted
from stark_lsp.evaluate.result import TaskIO, ValueInfo
from stark_lsp.tasks.spec import TaskSpec

DTYPE_BYTES = {
    "float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "float64": 8, "double": 8,
    "int64": 8, "long": 8, "int32": 4, "int": 4, "int16": 2, "short": 2, "int8": 1, "uint8": 1, "bool": 1,
    "uint16": 2, "uint32": 4, "uint64": 8, "complex64": 8, "cfloat": 8, "complex128": 16, "cdouble": 16,
    "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
}
DEFAULT_ITEMSIZE = 4  # torch's default dtype, float32
MAX_STEPS = 200_000  # expressions evaluated for one task, at most: a file that loops longer is unknown
MAX_DEPTH = 8  # helper calls within helper calls


@dataclass(frozen=True)
class CallSize:
    """One call's inputs and outputs, in bytes. ``measured``: from an evaluation's ``io`` (exact), else
    read from the task's files (the outputs guessed)."""

    input_bytes: int
    output_bytes: int
    measured: bool = False

    @property
    def total_bytes(self) -> int:
        return self.input_bytes + self.output_bytes


def io_call_size(io: TaskIO | None) -> CallSize | None:
    """The exact sizes of an evaluation's reported inputs and outputs; None without any."""
    if io is None or not (io.inputs or io.outputs):
        return None
    return CallSize(sum(_value_bytes(v) for v in io.inputs), sum(_value_bytes(v) for v in io.outputs), measured=True)


def _value_bytes(v: ValueInfo) -> int:
    if v.shape is None:
        return 0
    return math.prod(v.shape) * DTYPE_BYTES.get(str(v.dtype or "").replace("torch.", ""), DEFAULT_ITEMSIZE)


def read_call_size(task: TaskSpec, env: Mapping[str, str] | None = None) -> CallSize | None:
    """One call's sizes read from the task's files (the outputs as large as the largest input); None when
    its ``get_inputs`` cannot be followed or the file cannot be read."""
    path = task.path if task.kind == "kernelbench" else (task.harness or task.path)
    try:
        text = Path(path).read_text()
    except OSError:
        return None
    return call_size_of_text(text, env)


def call_size_of_text(text: str, env: Mapping[str, str] | None = None) -> CallSize | None:
    tensors = input_tensors(text, env)
    if tensors is None:
        return None
    sizes = [t.nbytes for t in tensors]
    return CallSize(sum(sizes), max(sizes, default=0))


def input_tensors(text: str, env: Mapping[str, str] | None = None) -> list[Tensor] | None:
    """The tensors ``get_inputs()`` returns, read from the source; None when it cannot be followed."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    interp = _Interpreter(os.environ if env is None else env)
    try:
        interp.module(tree)
        fn = interp.names.get("get_inputs")
        if not isinstance(fn, _Function):
            return None
        out = interp.call_function(fn, [], {})
    except (_CannotFollow, RecursionError, ArithmeticError, TypeError, ValueError, IndexError, KeyError,
            AttributeError, MemoryError):
        return None
    found: list[Tensor] = []
    return found if _collect(out, found) else None


def _collect(value: Any, found: list[Tensor]) -> bool:
    """Every tensor in ``value`` (nested lists and tuples); False where something is not known."""
    if isinstance(value, Tensor):
        found.append(value)
        return True
    if isinstance(value, (list, tuple)):
        return all(_collect(v, found) for v in value)
    if isinstance(value, dict):
        return all(_collect(v, found) for v in value.values())
    return isinstance(value, (int, float, bool, str, type(None), _DType, _Opaque))


# -- the interpreter --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tensor:
    numel: int
    itemsize: int = DEFAULT_ITEMSIZE
    shape: tuple[int, ...] | None = None  # where known (a factory's size), for ``x.shape``

    @property
    def nbytes(self) -> int:
        return self.numel * self.itemsize


@dataclass(frozen=True)
class _DType:
    name: str

    @property
    def itemsize(self) -> int:
        return DTYPE_BYTES[self.name]


class _Opaque:
    """A value the interpreter does not model but that makes no size (a device, a generator...)."""


OPAQUE = _Opaque()


class _CannotFollow(Exception):
    pass


@dataclass
class _Function:
    node: ast.FunctionDef
    depth: int = 0


class _Return(Exception):
    def __init__(self, value: Any):
        self.value = value


_SIZE_FACTORIES = {"rand", "randn", "zeros", "ones", "empty", "full", "empty_strided"}
_LIKE = {"rand_like", "randn_like", "zeros_like", "ones_like", "empty_like", "full_like", "randint_like"}
_CASTS = {"half": "float16", "float": "float32", "double": "float64", "bfloat16": "bfloat16", "long": "int64",
          "int": "int32", "short": "int16", "bool": "bool", "char": "int8", "byte": "uint8"}
_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
}
_COMPARES: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
_BUILTINS: dict[str, Callable[..., Any]] = {
    "int": int, "float": float, "bool": bool, "str": str, "min": min, "max": max, "abs": abs, "len": len,
    "round": round, "tuple": tuple, "list": list, "range": range, "divmod": divmod,
}  # no pow (a huge exponent) nor sum (quadratic over lists): ``**`` and ``_sum`` are bounded
MAX_INT_BITS = 4096  # an integer beyond this is no tensor's size: the file is not followed
MAX_ITEMS = 100_000  # a sequence built by repetition beyond this is not followed
_MATH: dict[str, Callable[..., Any]] = {"prod": math.prod, "ceil": math.ceil, "floor": math.floor,
                                        "sqrt": math.sqrt, "log2": math.log2, "isqrt": math.isqrt}


class _Interpreter:
    def __init__(self, env: Mapping[str, str]):
        self.env = env
        self.names: dict[str, Any] = {}
        self.torch = {"torch"}  # names torch is imported as
        self.steps = 0

    # statements ------------------------------------------------------------------------------------
    def module(self, tree: ast.Module) -> None:
        """Every module-level statement it can follow; one it cannot leaves its names unknown."""
        for stmt in tree.body:
            if isinstance(stmt, ast.Import):
                for a in stmt.names:
                    if a.name == "torch":
                        self.torch.add(a.asname or "torch")
                continue
            if isinstance(stmt, (ast.ImportFrom, ast.ClassDef, ast.Try)):
                continue
            before = dict(self.names)
            try:
                self.run([stmt], self.names, depth=0)
            except (_CannotFollow, ArithmeticError, TypeError, ValueError, IndexError, KeyError, AttributeError):
                touched = {n for n, v in self.names.items() if n not in before or before[n] is not v}
                for name in touched | set(_assigned(stmt)):  # a loop's partial work is no value either
                    self.names.pop(name, None)

    def run(self, body: list[ast.stmt], scope: dict[str, Any], depth: int) -> None:
        for stmt in body:
            self._tick()
            if isinstance(stmt, ast.FunctionDef):
                scope[stmt.name] = _Function(stmt, depth)
            elif isinstance(stmt, ast.Assign):
                value = self.eval(stmt.value, scope, depth)
                for target in stmt.targets:
                    self._bind(target, value, scope)
            elif isinstance(stmt, ast.AnnAssign):
                if stmt.value is not None:
                    self._bind(stmt.target, self.eval(stmt.value, scope, depth), scope)
            elif isinstance(stmt, ast.AugAssign):
                if not isinstance(stmt.target, ast.Name):
                    raise _CannotFollow
                old = self._name(stmt.target.id, scope)
                scope[stmt.target.id] = self._binop(type(stmt.op), old, self.eval(stmt.value, scope, depth))
            elif isinstance(stmt, ast.Return):
                raise _Return(None if stmt.value is None else self.eval(stmt.value, scope, depth))
            elif isinstance(stmt, ast.If):
                test = self.eval(stmt.test, scope, depth)
                if isinstance(test, (Tensor, _Opaque)):
                    raise _CannotFollow
                self.run(stmt.body if test else stmt.orelse, scope, depth)
            elif isinstance(stmt, ast.For):
                items = self.eval(stmt.iter, scope, depth)
                if not isinstance(items, (range, list, tuple)) or len(items) > 10_000 or stmt.orelse:
                    raise _CannotFollow
                for item in items:
                    self._bind(stmt.target, item, scope)
                    self.run(stmt.body, scope, depth)
            elif isinstance(stmt, ast.With):
                self.run(stmt.body, scope, depth)
            elif isinstance(stmt, ast.Expr):
                self._statement_call(stmt.value, scope, depth)
            elif isinstance(stmt, (ast.Pass, ast.Import, ast.ImportFrom, ast.Assert)):
                continue
            else:
                raise _CannotFollow

    def _statement_call(self, node: ast.expr, scope: dict[str, Any], depth: int) -> None:
        """An expression statement: ``xs.append(t)`` (followed), anything else (a docstring,
        ``torch.manual_seed(0)``, ``x.uniform_(-1, 1)``: no new tensor a call returns) left out."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
                and node.func.attr in ("append", "extend", "insert"):
            owner = scope.get(node.func.value.id, self.names.get(node.func.value.id))
            if not isinstance(owner, list):
                raise _CannotFollow  # something that may hold the inputs, not modelled
            args = self._args(node, scope, depth)
            if node.func.attr == "insert" and len(args) == 2:
                owner.insert(args[0], args[1])
            elif len(args) == 1:
                owner.append(args[0]) if node.func.attr == "append" else owner.extend(args[0])
            else:
                raise _CannotFollow

    def _bind(self, target: ast.expr, value: Any, scope: dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            scope[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if not isinstance(value, (tuple, list)) or len(value) != len(target.elts):
                raise _CannotFollow
            for t, v in zip(target.elts, value):
                self._bind(t, v, scope)
        else:
            raise _CannotFollow

    def call_function(self, fn: _Function, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if fn.depth >= MAX_DEPTH:
            raise _CannotFollow
        a = fn.node.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            raise _CannotFollow
        params = [p.arg for p in a.args]
        if len(args) > len(params):
            raise _CannotFollow
        scope: dict[str, Any] = {}
        defaults = dict(zip(params[len(params) - len(a.defaults):], a.defaults))
        for i, name in enumerate(params):
            if i < len(args):
                scope[name] = args[i]
            elif name in kwargs:
                scope[name] = kwargs[name]
            elif name in defaults:
                scope[name] = self.eval(defaults[name], {}, fn.depth)
            else:
                raise _CannotFollow
        try:
            self.run(fn.node.body, scope, fn.depth + 1)
        except _Return as r:
            return r.value
        return None

    # expressions -----------------------------------------------------------------------------------
    def _tick(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _CannotFollow

    def _name(self, name: str, scope: dict[str, Any]) -> Any:
        if name in scope:
            return scope[name]
        if name in self.names:
            return self.names[name]
        if name in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[name]
        raise _CannotFollow

    def eval(self, node: ast.expr, scope: dict[str, Any], depth: int) -> Any:
        self._tick()
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self._name(node.id, scope)
        if isinstance(node, (ast.Tuple, ast.List)):
            values = [self.eval(e, scope, depth) for e in node.elts]
            return tuple(values) if isinstance(node, ast.Tuple) else values
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                raise _CannotFollow
            return {self.eval(k, scope, depth): self.eval(v, scope, depth) for k, v in zip(node.keys, node.values)}
        if isinstance(node, ast.BinOp):
            return self._binop(type(node.op), self.eval(node.left, scope, depth), self.eval(node.right, scope, depth))
        if isinstance(node, ast.UnaryOp):
            v = self.eval(node.operand, scope, depth)
            if isinstance(v, Tensor):
                return v
            if isinstance(node.op, ast.Not):
                return not v
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.UAdd):
                return +v
            return ~v
        if isinstance(node, ast.BoolOp):
            result = None
            for e in node.values:
                result = self.eval(e, scope, depth)
                if isinstance(result, (Tensor, _Opaque)):
                    raise _CannotFollow
                if isinstance(node.op, ast.And) and not result or isinstance(node.op, ast.Or) and result:
                    return result
            return result
        if isinstance(node, ast.Compare):
            left = self.eval(node.left, scope, depth)
            for op, right_node in zip(node.ops, node.comparators):
                right = self.eval(right_node, scope, depth)
                if isinstance(left, (Tensor, _Opaque)) or isinstance(right, (Tensor, _Opaque)):
                    raise _CannotFollow
                if not _COMPARES[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            test = self.eval(node.test, scope, depth)
            if isinstance(test, (Tensor, _Opaque)):  # "cuda" if torch.cuda.is_available() else "cpu"
                either = [self.eval(node.body, scope, depth), self.eval(node.orelse, scope, depth)]
                if all(isinstance(v, (str, _Opaque, type(None))) for v in either):
                    return OPAQUE  # a device or a name: no size either way
                raise _CannotFollow
            return self.eval(node.body if test else node.orelse, scope, depth)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, scope, depth)
        if isinstance(node, ast.Attribute):
            return self._attribute(node, scope, depth)
        if isinstance(node, ast.Call):
            return self._call(node, scope, depth)
        if isinstance(node, ast.ListComp) and len(node.generators) == 1 and not node.generators[0].ifs:
            gen = node.generators[0]
            items = self.eval(gen.iter, scope, depth)
            if not isinstance(items, (range, list, tuple)) or len(items) > 10_000:
                raise _CannotFollow
            out = []
            inner = dict(scope)
            for item in items:
                self._bind(gen.target, item, inner)
                out.append(self.eval(node.elt, inner, depth))
            return out
        raise _CannotFollow

    def _binop(self, op: type, a: Any, b: Any) -> Any:
        if isinstance(a, Tensor) or isinstance(b, Tensor):  # broadcast: the larger operand's size
            sizes = [t for t in (a, b) if isinstance(t, Tensor)]
            largest = max(sizes, key=lambda t: t.numel)
            return Tensor(largest.numel, max(t.itemsize for t in sizes), largest.shape)
        if isinstance(a, _Opaque) or isinstance(b, _Opaque) or op not in _BINOPS:
            raise _CannotFollow
        if op is ast.Pow and isinstance(b, int) and (b > 256 or abs(a) > 1 << 64):
            raise _CannotFollow
        if op is ast.LShift and isinstance(b, int) and b > 256:
            raise _CannotFollow
        if op is ast.Mult and (isinstance(a, (str, list, tuple)) or isinstance(b, (str, list, tuple))):
            n, seq = (b, a) if isinstance(b, int) else (a, b)
            if not isinstance(n, int) or not isinstance(seq, (str, list, tuple)) or n * len(seq) > MAX_ITEMS:
                raise _CannotFollow
        if isinstance(a, int) and isinstance(b, int) and op in (ast.Mult, ast.Add, ast.Sub) and \
                a.bit_length() + b.bit_length() > MAX_INT_BITS:  # x = x * x forty times: no size, and no end
            raise _CannotFollow
        return _BINOPS[op](a, b)

    def _subscript(self, node: ast.Subscript, scope: dict[str, Any], depth: int) -> Any:
        if dotted(node.value) == "os.environ":
            key = self.eval(node.slice, scope, depth)
            if key not in self.env:
                raise _CannotFollow
            return self.env[key]
        value = self.eval(node.value, scope, depth)
        if isinstance(value, Tensor):
            return value  # a slice of it: at most as large
        if isinstance(node.slice, ast.Slice):
            s = node.slice
            bounds = [None if e is None else self.eval(e, scope, depth) for e in (s.lower, s.upper, s.step)]
            return value[slice(*bounds)]
        return value[self.eval(node.slice, scope, depth)]

    def _attribute(self, node: ast.Attribute, scope: dict[str, Any], depth: int) -> Any:
        base = node.value
        if isinstance(base, ast.Name) and base.id in self.torch and base.id not in scope:
            if node.attr in DTYPE_BYTES:
                return _DType(node.attr)
            return OPAQUE  # torch.cuda, torch.float... a namespace or a setting, no size
        if isinstance(base, ast.Name) and base.id == "math" and base.id not in scope:
            if node.attr in ("pi", "e"):
                return getattr(math, node.attr)
            raise _CannotFollow
        value = self.eval(base, scope, depth)
        if isinstance(value, Tensor):
            if node.attr in ("T", "mT", "H", "mH", "data", "real"):
                return value
            if node.attr == "shape" and value.shape is not None:
                return value.shape
            raise _CannotFollow  # .ndim and the like: not modelled
        if isinstance(value, _Opaque):
            return OPAQUE
        raise _CannotFollow

    def _call(self, node: ast.Call, scope: dict[str, Any], depth: int) -> Any:
        func = node.func
        if any(k.arg is None for k in node.keywords):
            raise _CannotFollow
        name = dotted(func)
        if name in ("os.environ.get", "os.getenv"):
            args = self._args(node, scope, depth)
            if not args:
                raise _CannotFollow
            return self.env.get(args[0], args[1] if len(args) > 1 else None)
        if isinstance(func, ast.Name) and func.id not in scope and func.id not in self.names and func.id in _BUILTINS:
            args = self._args(node, scope, depth)
            if any(isinstance(a, (Tensor, _Opaque)) for a in args) or node.keywords:
                raise _CannotFollow
            if func.id == "range" and len(range(*args)) > 10_000:
                raise _CannotFollow
            return _BUILTINS[func.id](*args)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "math" \
                and "math" not in scope and func.attr in _MATH:
            return _MATH[func.attr](*self._args(node, scope, depth))
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in self.torch \
                and func.value.id not in scope:
            return self._torch(func.attr, node, scope, depth)
        if isinstance(func, ast.Name):
            fn = self._name(func.id, scope)
            if isinstance(fn, _Function):
                args = self._args(node, scope, depth)
                kwargs = {k.arg: self.eval(k.value, scope, depth) for k in node.keywords if k.arg}
                return self.call_function(_Function(fn.node, depth + 1), args, kwargs)
            raise _CannotFollow
        if isinstance(func, ast.Attribute):  # a method: of a tensor (a cast, an operation), or of something unknown
            owner = self.eval(func.value, scope, depth)
            if isinstance(owner, Tensor):
                return self._method(owner, func.attr, node, scope, depth)
            if isinstance(owner, _Opaque):
                return OPAQUE  # torch.cuda.is_available(): not a size
        raise _CannotFollow

    def _kw(self, node: ast.Call, name: str, scope: dict[str, Any], depth: int) -> Any:
        for k in node.keywords:
            if k.arg == name:
                return self.eval(k.value, scope, depth)
        return None

    def _args(self, node: ast.Call, scope: dict[str, Any], depth: int) -> list[Any]:
        """A call's positional arguments, ``*shape`` spread."""
        out: list[Any] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                value = self.eval(a.value, scope, depth)
                if not isinstance(value, (tuple, list, range)):
                    raise _CannotFollow
                out.extend(value)
            else:
                out.append(self.eval(a, scope, depth))
        return out

    def _lenient(self, node: ast.expr, scope: dict[str, Any], depth: int) -> Any:
        """Its value, or OPAQUE where it cannot be followed (an argument whose value does not matter)."""
        try:
            return self.eval(node, scope, depth)
        except (_CannotFollow, ArithmeticError, TypeError, ValueError, IndexError, KeyError, AttributeError):
            return OPAQUE

    def _lenient_kw(self, node: ast.Call, name: str, scope: dict[str, Any], depth: int) -> Any:
        return next((self._lenient(k.value, scope, depth) for k in node.keywords if k.arg == name), None)

    def _itemsize(self, node: ast.Call, scope: dict[str, Any], depth: int, default: int) -> int:
        dtype = self._kw(node, "dtype", scope, depth)
        if dtype is None:
            return default
        if isinstance(dtype, _DType):
            return dtype.itemsize
        raise _CannotFollow

    def _torch(self, name: str, node: ast.Call, scope: dict[str, Any], depth: int) -> Any:
        args = self._args(node, scope, depth)
        if name in _SIZE_FACTORIES:
            size = self._kw(node, "size", scope, depth)
            if size is None:
                size = args[0] if len(args) >= 1 and isinstance(args[0], (tuple, list)) else \
                    (tuple(args) if name not in ("full", "empty_strided") else args[0] if args else None)
            return Tensor(_numel(size), self._itemsize(node, scope, depth, DEFAULT_ITEMSIZE), _shape(size))
        if name in _LIKE:
            if not args or not isinstance(args[0], Tensor):
                raise _CannotFollow
            return Tensor(args[0].numel, self._itemsize(node, scope, depth, args[0].itemsize), args[0].shape)
        if name == "randint":
            size = self._kw(node, "size", scope, depth)
            if size is None:
                size = next((a for a in reversed(args) if isinstance(a, (tuple, list))), None)
            return Tensor(_numel(size), self._itemsize(node, scope, depth, 8), _shape(size))
        if name == "randperm":
            return Tensor(_count(args[0] if args else None), self._itemsize(node, scope, depth, 8))
        if name == "arange":
            bounds = [a for a in args if not isinstance(a, _DType)]
            if not bounds or not all(isinstance(b, (int, float)) for b in bounds):
                raise _CannotFollow
            start, end, step = (0, bounds[0], 1) if len(bounds) == 1 else (*bounds[:2], bounds[2] if len(bounds) > 2 else 1)
            n = max(0, math.ceil((end - start) / step))
            floaty = any(isinstance(b, float) for b in bounds)
            return Tensor(n, self._itemsize(node, scope, depth, DEFAULT_ITEMSIZE if floaty else 8))
        if name in ("linspace", "logspace"):
            steps = args[2] if len(args) > 2 else self._kw(node, "steps", scope, depth)
            return Tensor(_count(steps), self._itemsize(node, scope, depth, DEFAULT_ITEMSIZE))
        if name == "eye":
            n = args[0] if args else None
            m = args[1] if len(args) > 1 else n
            return Tensor(_count(n) * _count(m), self._itemsize(node, scope, depth, DEFAULT_ITEMSIZE))
        if name in ("tensor", "as_tensor"):
            leaves = _leaves(args[0] if args else None)
            return Tensor(leaves, self._itemsize(node, scope, depth, DEFAULT_ITEMSIZE))
        if name in ("cat", "concat", "stack", "hstack", "vstack"):
            parts = args[0] if args else None
            if not isinstance(parts, (list, tuple)) or not all(isinstance(p, Tensor) for p in parts) or not parts:
                raise _CannotFollow
            return Tensor(sum(p.numel for p in parts), max(p.itemsize for p in parts))
        if name == "Size":
            return tuple(args[0]) if args else ()
        if name in ("manual_seed", "device", "Generator", "no_grad", "inference_mode"):
            return OPAQUE
        tensors = [a for a in args if isinstance(a, Tensor)]
        if tensors:  # torch.abs(x), torch.tril(x)...: as large as its largest tensor argument
            return Tensor(max(t.numel for t in tensors), max(t.itemsize for t in tensors))
        raise _CannotFollow

    def _method(self, owner: Tensor, name: str, node: ast.Call, scope: dict[str, Any], depth: int) -> Any:
        if name in _CASTS:
            return Tensor(owner.numel, DTYPE_BYTES[_CASTS[name]], owner.shape)
        if name in ("to", "type"):  # x.to(DEVICE, torch.float16): only a dtype matters
            args = [self._lenient(a.value if isinstance(a, ast.Starred) else a, scope, depth) for a in node.args]
            dtype = next((a for a in args if isinstance(a, _DType)), None) or self._lenient_kw(node, "dtype", scope, depth)
            return Tensor(owner.numel, dtype.itemsize if isinstance(dtype, _DType) else owner.itemsize, owner.shape)
        if name in ("cuda", "cpu", "contiguous", "clone", "detach", "pin_memory", "requires_grad_"):
            return owner
        args = self._args(node, scope, depth)
        if name == "repeat":
            reps = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
            return Tensor(owner.numel * _numel(reps), owner.itemsize)
        if name in ("size", "dim", "numel", "item", "tolist", "stride", "data_ptr"):
            raise _CannotFollow  # a number, not modelled
        return owner  # a view, a copy, an elementwise operation: at most as large (.sum() is smaller)


def _numel(size: Any) -> int:
    if isinstance(size, int) and not isinstance(size, bool):
        return max(0, size)
    if isinstance(size, (tuple, list)) and all(isinstance(s, int) and not isinstance(s, bool) for s in size):
        return math.prod(max(0, s) for s in size)
    raise _CannotFollow


def _shape(size: Any) -> tuple[int, ...] | None:
    if isinstance(size, int):
        return (size,)
    return tuple(size) if isinstance(size, (tuple, list)) else None


def _count(n: Any) -> int:
    if isinstance(n, int) and not isinstance(n, bool):
        return max(0, n)
    raise _CannotFollow


def _leaves(v: Any) -> int:
    if isinstance(v, (int, float, bool)):
        return 1
    if isinstance(v, (list, tuple)):
        return sum(_leaves(x) for x in v)
    raise _CannotFollow


def _assigned(stmt: ast.stmt) -> list[str]:
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    elif isinstance(stmt, ast.If):
        return [n for s in stmt.body + stmt.orelse for n in _assigned(s)]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
