"""Read a KernelBench ``Model`` into a ``Graph`` (nothing is imported or run).

``read_model(source)`` walks ``forward`` statement by statement, keeping a
table of what each local name holds: a graph value (a tensor, or a number
that may meet tensors) or a piece of plain Python (a dim, a shape, a flag).
Calls it knows become graph values (elementwise functions and activation
modules, reductions, softmax, cumulative sums, norm modules, pools, losses);
any other call on tensors becomes a ``Lib`` value, run as PyTorch in the
generated forward. Beyond straight-line assignments it follows ``if`` on
host values (``control``: forward is read once per outcome), tuple unpacking
(``q, k, v = x.chunk(3, -1)``: one value per element), ``nn.Sequential``
(inlined, layer by layer) and ``for`` loops (``loops``: unrolled when the
length is known, else a host loop over a body graph of its own). Refused:
branches and loops on tensor values, in-place updates, ``while``, ...

Python text that needs a value's run-time shape holds a token ``__S<n>__``
(value number n) that the writer replaces by the variable with that shape.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from stark_lsp.agents.builtin.kb_ast import NotRecognized, dotted, library_function, model_methods

from . import catalog as cat
from .control import MAX_VARIANTS, Fork, condition_key, host_condition, literal_truth
from .graph import (Branch, Graph, Leaf, Lib, NormStats, Part, Pointwise, Pool, PyAssign, Reduction, Scan, Value,
                    Variant, View)
from .ops import ARITY

SHAPE_TOKEN = re.compile(r"__S(\d+)__")
_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*")


@dataclass
class Py:
    """Plain Python: ``text`` is an expression; ``num`` its value when it is a literal number."""

    text: str
    num: float | None = None
    tensorish: bool = False  # torch.tensor(<number>): a number that acts as a tensor operand


@dataclass
class Seq:
    items: list
    brackets: str = "()"


@dataclass
class Extreme:
    """torch.max(x, dim) / torch.min: a (values, indices) pair."""

    values: Value
    indices: Value


@dataclass
class Flipped:
    """``x.flip(d)``: kept apart so that ``cumsum(x.flip(d), d).flip(d)`` becomes a reverse scan."""

    x: Value
    dim: str
    scan: bool = False  # x is a reverse scan of the unflipped input (cumsum of a flip)


@dataclass
class ModuleRef:
    expr: str  # "self.conv"
    cls: str  # "Conv2d" ('' when not built by a constructor call in __init__)
    ctor: ast.Call | None


@dataclass
class Gone:
    """A name that cannot be read here: set by a host loop (read after it), or not carried into one."""

    name: str
    why: str = "it is read after the loop that sets it (only tensors set before a loop are carried through it)"


@dataclass
class Outer:
    """Inside a host loop's body: a tensor of the enclosing forward, passed to the body when read."""

    name: str


class Reader:
    def __init__(self, source: str, assume: dict[str, bool] | None = None):
        methods = model_methods(source)
        self.forward = methods["forward"]
        a = self.forward.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults:
            raise NotRecognized("forward takes *args, **kwargs, keyword-only arguments or defaults")
        self.params = [x.arg for x in a.args[1:]]
        self.attrs = _init_attrs(methods.get("__init__"))
        self.assume: dict[str, bool] = dict(assume or {})  # host conditions already decided (control)
        self.nested = False  # the body of a host loop (loops)
        self.fresh()
        for p in self.params:
            self.env[p] = self.leaf(p)

    def fresh(self) -> None:
        self.env: dict[str, object] = {}
        self.values: list[Value] = []  # every value, by number (the shape tokens)
        self.numbers: dict[int, int] = {}
        self.leaves: dict[str, Leaf] = {}
        self.statements: list[PyAssign] = []
        self.py_after: dict[str, Value | None] = {}  # Python locals: the value their statement comes after
        self.local_defs: dict[str, str | None] = {}  # Python locals: name -> the Python they hold (None: unknown)

    def child(self) -> "Reader":
        """A reader for a host loop's body: the same model, its own values."""
        r = Reader.__new__(Reader)
        r.forward, r.params, r.attrs, r.assume = self.forward, [], self.attrs, self.assume
        r.nested = True
        r.fresh()
        return r

    # -- values ----------------------------------------------------------------
    def add(self, v: Value) -> Value:
        if id(v) not in self.numbers:
            self.numbers[id(v)] = len(self.values)
            self.values.append(v)
        return v

    def leaf(self, expr: str, const: float | None = None) -> Leaf:
        if const is not None:
            return self.add(Leaf(expr, const=const))  # type: ignore[return-value]
        if expr not in self.leaves:
            self.leaves[expr] = self.add(Leaf(expr))  # type: ignore[assignment]
        return self.leaves[expr]

    def shape(self, v: Value) -> str:
        return f"__S{self.numbers[id(self.add(v))]}__"

    def pw(self, op: str, *args: object) -> Value:
        vals = tuple(self.as_value(a) for a in args)
        if len(vals) != ARITY[op]:
            raise NotRecognized(f"{op} with {len(vals)} operands")
        if op == "identity":
            return vals[0]
        return self.add(Pointwise(op, vals))

    def as_value(self, x: object) -> Value:
        if isinstance(x, Value):
            return x
        if isinstance(x, Py):
            if x.num is not None:
                return self.leaf(x.text, const=x.num)
            return self.leaf(x.text)
        if isinstance(x, Flipped):
            return self.lib("{0}.flip(" + x.dim.replace("{", "{{").replace("}", "}}") + ")", [x.x], "flip")
        if isinstance(x, Extreme):
            raise NotRecognized("torch.max / torch.min over a dim used without [0] / .values / .indices")
        if isinstance(x, ModuleRef):
            raise NotRecognized(f"{x.expr} (a module) used as a value")
        if isinstance(x, Seq):
            raise NotRecognized("a tuple or list used as a tensor")
        raise NotRecognized(f"cannot use {x!r} as a tensor")

    def lib(self, code: str, args: list[Value], what: str) -> Value:
        return self.add(Lib(code, tuple(args), what))

    def text(self, x: object, args: list[Value]) -> str:
        """Python text of x with every tensor value replaced by a {k} placeholder (appended to args)."""
        if isinstance(x, (Value, Flipped)):
            v = self.as_value(x)
            args.append(v)
            return "{" + str(len(args) - 1) + "}"
        if isinstance(x, Py):
            return x.text.replace("{", "{{").replace("}", "}}")
        if isinstance(x, Seq):
            inner = ", ".join(self.text(i, args) for i in x.items)
            if x.brackets == "()" and len(x.items) == 1:
                inner += ","
            return x.brackets[0] + inner + x.brackets[1]
        if isinstance(x, ModuleRef):
            return x.expr
        raise NotRecognized(f"cannot write {x!r} as Python")

    def py(self, x: object, what: str) -> str:
        if isinstance(x, Py):
            return x.text
        if isinstance(x, ModuleRef):
            return x.expr
        if isinstance(x, Seq) and all(isinstance(i, Py) for i in x.items):
            return self.text(x, []).replace("{{", "{").replace("}}", "}")
        raise NotRecognized(f"{what} is a tensor, not a Python value")

    # -- statements ------------------------------------------------------------
    def read(self) -> Graph:
        ret = self.block(self.forward.body)
        if ret is None or ret.value is None:
            raise NotRecognized("forward does not end with a return of its result")
        result = self.ev(ret.value)
        if isinstance(result, Seq):
            outs = [self.resolve(i) for i in result.items]
            tuple_output = True
        else:
            outs = [self.resolve(result)]
            tuple_output = False
        if not any(isinstance(o, Value) for o in outs):
            raise NotRecognized("forward returns no tensor")
        return Graph(self.params, [self.as_value(o) for o in outs], tuple_output, self.statements)

    def resolve(self, x: object) -> object:
        if isinstance(x, Flipped):
            return self.as_value(x)
        if isinstance(x, Py) and not x.tensorish:
            raise NotRecognized("forward returns a Python value, not a tensor")
        return x

    def block(self, stmts: list[ast.stmt]) -> ast.Return | None:
        """Read statements in order; the ``return`` that ends them (None when they run off the end)."""
        for stmt in stmts:
            if isinstance(stmt, ast.Return):
                return stmt
            if isinstance(stmt, ast.Pass) or isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue
            if isinstance(stmt, ast.If):
                ret = self.block(stmt.body if self.decide(stmt.test) else stmt.orelse)
                if ret is not None:
                    return ret
                continue
            if isinstance(stmt, ast.For):
                from .loops import read_for

                read_for(self, stmt)
                continue
            self.statement(stmt)
        return None

    def decide(self, test: ast.expr) -> bool:
        """Which way a host condition goes in this reading (``control``); Fork when not decided yet."""
        cond = self.ev(test)
        src = ast.unparse(test)
        src = src if len(src) <= 60 else src[:57] + "..."
        if _tensorish(cond) or isinstance(cond, (Flipped, Extreme)):
            raise NotRecognized(f"forward branches on a tensor's values (if {src}): data-dependent control flow "
                                f"is not followed")
        if isinstance(cond, Seq):
            return bool(cond.items)
        text = self.py(cond, "the condition")
        truth = literal_truth(text)
        if truth is not None:
            return truth
        try:
            key, positive = condition_key(host_condition(text, lambda name: self._host_name(name, src)))
        except RecursionError:
            raise NotRecognized(f"cannot follow the condition of if {src}") from None
        if key not in self.assume:
            raise Fork(key)
        return self.assume[key] == positive

    def _host_name(self, name: str, src: str) -> str | None:
        """What a name of a condition stands for before forward runs (control.host_condition)."""
        m = SHAPE_TOKEN.fullmatch(name)
        if self.nested and (m or name in self.env):
            raise NotRecognized(f"a host loop's body branches on {'a shape' if m else name} (if {src}): only "
                                f"conditions on the model's attributes and globals are followed there")
        if m:
            v = self.values[int(m.group(1))]
            if isinstance(v, Leaf) and v.const is None:
                return f"_stark_shape({v.expr})"
            raise NotRecognized(f"forward branches on the shape of a tensor it computes (if {src})")
        if name in self.local_defs:
            text = self.local_defs[name]
            if text is None:
                raise NotRecognized(f"forward branches on {name}, which it computes itself (if {src})")
            return host_condition(text, lambda n: self._host_name(n, src))
        if name in self.env and name not in self.params:
            raise NotRecognized(f"forward branches on {name}, which it computes itself (if {src}): only "
                                f"conditions on the model's attributes, globals and the inputs are followed")
        return None

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            self.assign(stmt.targets[0], self.ev(stmt.value), stmt)
            return
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            self.env[stmt.target.id] = self.binop(stmt.op, self.ev(stmt.target), self.ev(stmt.value))
            return
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            self.statement(ast.Assign(targets=[stmt.target], value=stmt.value))
            return
        if isinstance(stmt, ast.Expr):
            raise NotRecognized(f"forward has a bare expression ({ast.unparse(stmt)[:60]}): an in-place update?")
        raise NotRecognized(f"forward has a {type(stmt).__name__} statement (the built-in team follows "
                            f"assignments, if on host values and for loops)")

    def assign(self, target: ast.expr, value: object, stmt: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, Py):  # a Python local: emitted as a statement, used by name
                self.py_statement(target.id, value.text)
                self.env[target.id] = Py(target.id, value.num, value.tensorish)
                self.local_defs[target.id] = self._inline(value.text)
            else:
                self.env[target.id] = value
                self.local_defs.pop(target.id, None)
            return
        if not isinstance(target, (ast.Tuple, ast.List)) or any(isinstance(e, ast.Starred) for e in target.elts):
            raise NotRecognized(f"an assignment to {ast.unparse(target)} the built-in team cannot follow")
        elts = target.elts
        if isinstance(value, Extreme) and len(elts) == 2:
            value = Seq([value.values, value.indices])
        if isinstance(value, Py):
            if not all(isinstance(e, ast.Name) for e in elts):
                raise NotRecognized(f"an assignment to {ast.unparse(target)} the built-in team cannot follow")
            names = [e.id for e in elts]  # type: ignore[attr-defined]
            self.py_statement(", ".join(names), value.text)
            whole = self._inline(value.text)
            for i, n in enumerate(names):
                self.env[n] = Py(n)
                self.local_defs[n] = None if whole is None else f"({whole})[{i}]"
            return
        if isinstance(value, Seq):
            if len(value.items) != len(elts):
                raise NotRecognized(f"{ast.unparse(stmt)[:60]}: {len(elts)} names for {len(value.items)} values")
            items = list(value.items)
            for i, item in enumerate(items):  # every item is read before any name is set (a, b = b, a)
                if isinstance(item, Py) and not _literal(item):
                    name = f"_stark_v{len(self.values)}_{i}"
                    self.py_statement(name, item.text)
                    self.local_defs[name] = self._inline(item.text)
                    items[i] = Py(name, item.num, item.tensorish)
            for e, item in zip(elts, items):
                self.assign(e, item, stmt)
            return
        if isinstance(value, (Value, Flipped)):  # x.chunk / torch.split / unbind, any tensor sequence
            whole = self.as_value(value)
            what = whole.what if isinstance(whole, Lib) else "unpacking"
            for i, e in enumerate(elts):
                self.assign(e, self.lib("{0}[" + str(i) + "]", [whole], what), stmt)
            return
        raise NotRecognized(f"an assignment to {ast.unparse(target)} the built-in team cannot follow")

    def _inline(self, text: str) -> str | None:
        """``text`` with the Python locals it reads replaced by what they hold (None when one is unknown)."""
        def known(name: str) -> str | None:
            if name in self.local_defs and self.local_defs[name] is None:
                raise NotRecognized(name)
            return self.local_defs.get(name)

        try:
            return host_condition(text, known)
        except NotRecognized:
            return None

    def py_statement(self, target: str, text: str) -> None:
        """``target = text`` in the generated forward, after the shapes and the Python locals it reads."""
        after = self._after(text)
        self.statements.append(PyAssign(target, text, after))
        for name in target.split(","):
            self.py_after[name.strip()] = after

    def _after(self, text: str) -> Value | None:
        nums = [int(m.group(1)) for m in SHAPE_TOKEN.finditer(text)]
        for name in set(_NAME.findall(text)) & set(self.py_after):
            v = self.py_after[name]
            if v is not None:
                nums.append(self.numbers[id(v)])
        return self.values[max(nums)] if nums else None

    # -- expressions -----------------------------------------------------------
    def ev(self, e: ast.expr) -> object:
        if isinstance(e, ast.Constant):
            if isinstance(e.value, (int, float)) and not isinstance(e.value, bool):
                return Py(repr(e.value), float(e.value))
            return Py(repr(e.value))
        if isinstance(e, ast.Name):
            if e.id in self.env:
                v = self.env[e.id]
                if isinstance(v, Outer):  # a tensor of the enclosing forward, read in a host loop's body
                    v = self.env[e.id] = self.leaf(e.id)
                if isinstance(v, Gone):
                    raise NotRecognized(f"{e.id}: {v.why}")
                return v
            return Py(e.id)  # a global of the task file, math, ...
        if isinstance(e, ast.Attribute):
            return self.attribute(e)
        if isinstance(e, ast.BinOp):
            return self.binop(e.op, self.ev(e.left), self.ev(e.right))
        if isinstance(e, ast.UnaryOp):
            x = self.ev(e.operand)
            if isinstance(x, (Value, Flipped)) or (isinstance(x, Py) and x.tensorish):
                if isinstance(e.op, ast.USub):
                    return self.pw("neg", x)
                if isinstance(e.op, ast.UAdd):
                    return x
                if isinstance(e.op, ast.Not):
                    raise NotRecognized("`not` of a tensor")
                return self.lib("(~{0})", [self.as_value(x)], "bitwise not")
            t = self.py(x, "an operand")
            op = {ast.USub: "-", ast.UAdd: "+", ast.Not: "not ", ast.Invert: "~"}[type(e.op)]
            num = -x.num if isinstance(e.op, ast.USub) and isinstance(x, Py) and x.num is not None else None
            if isinstance(e.op, ast.Not) and literal_truth(t) is not None:
                return Py(repr(not literal_truth(t)))
            return Py(f"({op}{t})", num)
        if isinstance(e, ast.Compare):
            return self.compare(e)
        if isinstance(e, ast.BoolOp):
            items = [self.ev(v) for v in e.values]
            if any(_tensorish(i) or isinstance(i, Flipped) for i in items):
                raise NotRecognized(f"`and` / `or` of tensors ({ast.unparse(e)[:60]}): data-dependent control flow")
            texts = [self.py(i, "an operand") for i in items]
            truths = [literal_truth(t) for t in texts]
            if all(t is not None for t in truths):  # Python's own: the first that decides, else the last
                stop = False if isinstance(e.op, ast.And) else True
                i = next((i for i, t in enumerate(truths) if t is stop), len(items) - 1)
                return items[i]
            return Py("(" + (" and " if isinstance(e.op, ast.And) else " or ").join(texts) + ")")
        if isinstance(e, ast.IfExp):
            return self.ev(e.body) if self.decide(e.test) else self.ev(e.orelse)
        if isinstance(e, (ast.Tuple, ast.List)):
            items = [self.ev(i) for i in e.elts]
            return Seq(items, "()" if isinstance(e, ast.Tuple) else "[]")
        if isinstance(e, ast.Subscript):
            return self.subscript(e)
        if isinstance(e, ast.Call):
            return self.call(e)
        if isinstance(e, ast.Starred):
            raise NotRecognized("a starred argument")
        if isinstance(e, ast.Slice):
            return Py(ast.unparse(e))
        raise NotRecognized(f"{type(e).__name__} in forward is not something the built-in team follows")

    def compare(self, e: ast.Compare) -> object:
        items = [self.ev(e.left)] + [self.ev(c) for c in e.comparators]
        ops = {ast.Gt: "gt", ast.Lt: "lt", ast.GtE: "ge", ast.LtE: "le", ast.Eq: "eq", ast.NotEq: "ne"}
        identity = all(isinstance(op, (ast.Is, ast.IsNot)) for op in e.ops)
        if len(e.ops) == 1 and (_tensorish(items[0]) or _tensorish(items[1])) and not identity:
            if type(e.ops[0]) not in ops:
                raise NotRecognized(f"the comparison {type(e.ops[0]).__name__} of tensors")
            return self.pw(ops[type(e.ops[0])], items[0], items[1])
        texts = []
        for x in items:
            if identity and isinstance(x, Leaf) and x.const is None:  # `bias is None`: the input itself
                texts.append(x.expr)
            elif _tensorish(x) or isinstance(x, (Value, Flipped, Extreme)):
                raise NotRecognized(f"the comparison {ast.unparse(e)[:60]} of tensors")
            else:
                texts.append(self.py(x, "an operand"))
        syms = {ast.Gt: ">", ast.Lt: "<", ast.GtE: ">=", ast.LtE: "<=", ast.Eq: "==", ast.NotEq: "!=",
                ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}
        text = texts[0] + "".join(f" {syms[type(op)]} {t}" for op, t in zip(e.ops, texts[1:]))
        if all(isinstance(x, Py) and x.num is not None for x in items) and not identity:
            nums = " ".join([repr(items[0].num)] + [f"{syms[type(op)]} {x.num!r}"  # type: ignore[union-attr]
                                                    for op, x in zip(e.ops, items[1:])])
            return Py(repr(bool(eval(nums))))  # literal numbers only
        return Py(f"({text})")

    def attribute(self, e: ast.Attribute) -> object:
        if isinstance(e.value, ast.Name) and e.value.id == "self":
            name = e.attr
            built = self.attrs.get(name)
            expr = f"self.{name}"
            if name in self.attrs["__unsure__"]:  # set more than once, or changed after it is built
                kinds = self.attrs["__unsure__"][name]
                if kinds == "tensor":
                    return self.leaf(expr)
                return ModuleRef(expr, "", None) if kinds == "module" else Py(expr)
            if isinstance(built, ast.Call):
                ctor = dotted(built.func)
                last = ctor.rpartition(".")[2]
                if last == "Parameter" or ctor.split(".")[0] == "torch" and last[:1].islower():
                    return self.leaf(expr)
                if last[:1].isupper():
                    return ModuleRef(expr, last, built)
            if name in self.attrs.get("__buffers__", ()):  # register_buffer
                return self.leaf(expr)
            return Py(expr)
        base = self.ev(e.value)
        if isinstance(base, Extreme):
            if e.attr == "values":
                return base.values
            if e.attr == "indices":
                return base.indices
        if isinstance(base, (Value, Flipped)):
            v = self.as_value(base)
            if e.attr == "shape":
                return Py(self.shape(v))
            if e.attr == "ndim":
                return Py(f"len({self.shape(v)})")
            if e.attr == "device":
                return Py("_stark_device")
            if e.attr in ("T", "mT", "H", "mH", "real"):
                return self.lib("{0}." + e.attr, [v], f".{e.attr}")
            if e.attr == "dtype" and isinstance(v, Leaf):
                return Py(f"{v.expr}.dtype")
            raise NotRecognized(f"the attribute .{e.attr} of a computed tensor")
        if isinstance(base, ModuleRef):
            return Py(f"{base.expr}.{e.attr}")
        if isinstance(base, Py):
            return Py(f"{base.text}.{e.attr}")
        raise NotRecognized(f"the attribute .{e.attr}")

    def binop(self, op: ast.operator, a: object, b: object) -> object:
        names = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow"}
        if _tensorish(a) or _tensorish(b):
            if isinstance(op, ast.MatMult):
                return self.lib("({0} @ {1})", [self.as_value(a), self.as_value(b)], "matmul (@)")
            if type(op) in names:
                return self.pw(names[type(op)], a, b)
            sym = {ast.Mod: "%", ast.FloorDiv: "//", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
                   ast.LShift: "<<", ast.RShift: ">>"}[type(op)]
            args: list[Value] = []
            code = f"({self.text(a, args)} {sym} {self.text(b, args)})"
            return self.lib(code, args, f"operator {sym}")
        ta, tb = self.py(a, "an operand"), self.py(b, "an operand")
        sym = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**", ast.Mod: "%",
               ast.FloorDiv: "//", ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
               ast.LShift: "<<", ast.RShift: ">>"}[type(op)]
        num = None
        if isinstance(a, Py) and isinstance(b, Py) and a.num is not None and b.num is not None:
            try:
                num = float(eval(f"{a.num!r} {sym} {b.num!r}"))  # literal arithmetic only
            except (ArithmeticError, TypeError):
                num = None
        return Py(f"({ta} {sym} {tb})", num)

    def subscript(self, e: ast.Subscript) -> object:
        base = self.ev(e.value)
        if isinstance(base, ModuleRef):
            from .loops import container_items

            items = container_items(base)
            index = self.ev(e.slice)
            if items is not None and isinstance(index, Py) and index.num is not None \
                    and float(index.num).is_integer() and -len(items) <= index.num < len(items):
                return items[int(index.num)]
            return ModuleRef(f"{base.expr}[{self.py(index, 'an index')}]", "", None)
        if isinstance(base, Extreme) and isinstance(e.slice, ast.Constant) and e.slice.value in (0, 1):
            return base.values if e.slice.value == 0 else base.indices
        index = self.ev(e.slice)
        if isinstance(base, (Value, Flipped)):
            args: list[Value] = []
            head = self.text(base, args)
            if isinstance(index, Seq) and index.brackets == "()":
                idx = ", ".join(self.text(i, args) for i in index.items)
            else:
                idx = self.text(index, args)
            return self.lib(f"{head}[{idx}]", args, "indexing")
        if isinstance(base, Py):
            return Py(f"{base.text}[{self.py(index, 'an index')}]")
        raise NotRecognized("indexing something the built-in team does not follow")

    # -- calls -----------------------------------------------------------------
    def call(self, e: ast.Call) -> object:
        func = e.func
        if any(isinstance(a, ast.Starred) for a in e.args) or any(k.arg is None for k in e.keywords):
            raise NotRecognized("a call with *args or **kwargs")
        if isinstance(func, ast.Name) and func.id in self.env or isinstance(func, ast.Subscript):
            target = self.ev(func)
            if isinstance(target, ModuleRef):  # a module held by a local, a loop's variable, self.layers[0]
                return self.module_call(target, e)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            target = self.attribute(func)
            if isinstance(target, ModuleRef):
                return self.module_call(target, e)
            return self.generic(target.text if isinstance(target, Py) else "self." + func.attr, *self.args_of(e))
        if isinstance(func, ast.Attribute):
            base = self.ev(func.value)
            if isinstance(base, (Value, Flipped, Extreme)):
                return self.method(base, func.attr, e)
            if isinstance(base, Py) and base.tensorish:
                return self.method(self.as_value(base), func.attr, e)
        lib = library_function(func)
        if lib:
            return self.function(lib, e, *self.args_of(e))
        name = dotted(func)
        if name in ("isinstance", "hasattr", "callable", "len") and name not in self.env and e.args \
                and not e.keywords:
            pos = [self.ev(a) for a in e.args]
            if name == "len" and isinstance(pos[0], Value):  # a tensor's first dim
                return Py(f"{self.shape(pos[0])}[0]")
            if name != "len" and isinstance(pos[0], Leaf) and pos[0].const is None:  # the input itself
                return Py(f"{name}({', '.join([pos[0].expr] + [self.py(p, 'an argument') for p in pos[1:]])})")
        if name == "len" and len(e.args) == 1 and not e.keywords and "len" not in self.env:
            target = self.ev(e.args[0])
            if isinstance(target, ModuleRef):
                from .loops import container_items

                items = container_items(target)
                if items is not None:  # the layers written out in __init__: a literal
                    return Py(repr(len(items)), float(len(items)))
        if name in ("float", "int", "abs", "min", "max", "round", "len", "bool") or name.startswith("math."):
            return self.generic(name, *self.args_of(e))
        return self.generic(name or ast.unparse(func), *self.args_of(e))

    def args_of(self, e: ast.Call) -> tuple[list[object], dict[str, object]]:
        return [self.ev(a) for a in e.args], {k.arg: self.ev(k.value) for k in e.keywords if k.arg}

    def generic(self, name: str, pos: list, kw: dict, first: object | None = None) -> object:
        """Any other call: plain Python when no tensor is involved, else a PyTorch call (Lib).
        ``first``: the tensor whose method ``name`` is (not in ``pos``)."""
        pos = ([first] if first is not None else []) + list(pos)
        if not any(_tensorish(x) or isinstance(x, Seq) and any(_tensorish(i) for i in x.items)
                   for x in list(pos) + list(kw.values())):
            inner = ", ".join([self.py(p, "an argument") for p in pos] + [f"{k}={self.py(v, 'an argument')}" for k, v in kw.items()])
            return Py(f"{name}({inner})")
        args: list[Value] = []
        if first is not None:
            head = self.text(first, args) + "." + name + "("
            pos = pos[1:]
        else:
            head = name.replace("{", "{{") + "("
        inner = ", ".join([self.text(p, args) for p in pos] + [f"{k}={self.text(v, args)}" for k, v in kw.items()])
        return self.lib(head + inner + ")", args, name if first is None else f".{name}")

    def method(self, base: object, name: str, e: ast.Call) -> object:
        if isinstance(base, Extreme):
            raise NotRecognized("a method of torch.max / torch.min's (values, indices) pair")
        pos, kw = self.args_of(e)
        if isinstance(base, Flipped):
            if name == "flip" and base.scan and (pos or "dims" in kw):
                dim = self.py(pos[0] if len(pos) == 1 else Seq(pos) if pos else kw["dims"], "a dim")
                if _same_dim(dim, base.dim):
                    return base.x
            base = self.as_value(base)
        x: Value = base  # type: ignore[assignment]
        if name in cat.IDENTITY_METHODS or name == "clone" and not isinstance(x, Leaf) \
                or name == "contiguous" and not isinstance(x, Leaf):
            if pos or set(kw) - {"memory_format"}:
                raise NotRecognized(f".{name} with arguments")
            return x
        if name in ("size", "dim", "numel"):
            s = self.shape(x)
            if name == "dim":
                return Py(f"len({s})")
            if name == "numel":
                return Py(f"math.prod({s})")
            return Py(s) if not pos and not kw else Py(f"{s}[{self.py((pos or list(kw.values()))[0], 'a dim')}]")
        if name == "flip":
            dims = pos[0] if len(pos) == 1 else Seq(pos) if pos else kw.get("dims")
            return Flipped(x, self.py(dims, "flip's dims"))
        if name in cat.SIZE1_VIEWS:
            if len(pos) + len(kw) > 1:
                raise NotRecognized(f".{name} with several dims")
            arg = ", ".join(self.py(a, "a dim") for a in pos + list(kw.values()))
            return self.add(View(x, name, arg))
        return self.function(name, e, pos, kw, first=x)

    def module_call(self, m: ModuleRef, e: ast.Call) -> object:
        pos, kw = self.args_of(e)
        return self.apply_module(m, pos, kw)

    def apply_module(self, m: ModuleRef, pos: list, kw: dict) -> object:
        if m.cls == "Sequential":
            from .loops import container_items

            items = container_items(m)
            if items is not None:  # inlined: each layer in turn
                x = self._single(pos, kw, m)
                for layer in items:
                    x = self.apply_module(layer, [x], {})
                return x
        if m.cls in cat.ACTIVATION_MODULES:
            op, settings = cat.ACTIVATION_MODULES[m.cls]
            x = self._single(pos, kw, m)
            return self.pw(op, x, *[Py(f"{m.expr}.{s}") for s in settings])
        if m.cls == "GELU":
            x = self._single(pos, kw, m)
            approx = _keyword_const(m.ctor, "approximate", 0)
            if approx not in (None, "none", "tanh"):
                return self.generic(m.expr, pos, kw)
            return self.pw("gelu_tanh" if approx == "tanh" else "gelu", x)
        if m.cls in cat.SOFTMAX_MODULES:
            x = self._single(pos, kw, m)
            return self.softmax(cat.SOFTMAX_MODULES[m.cls], x, f"{m.expr}.dim")
        if m.cls in cat.NORM_MODULES:
            x = self._single(pos, kw, m)
            return self.norm(cat.NORM_MODULES[m.cls], m, self.as_value(x))
        if m.cls in cat.POOL_MODULES and not _keyword_literal_true(m.ctor, "return_indices"):
            op, nd = cat.POOL_MODULES[m.cls]
            x = self._single(pos, kw, m)
            return self.add(Pool(op, self.as_value(x), nd, f"_stark_pool_module({m.expr}, {nd})"))
        if m.cls in cat.ADAPTIVE_MODULES and _output_is_one(m.ctor):
            op, nd = cat.ADAPTIVE_MODULES[m.cls]
            x = self._single(pos, kw, m)
            return self.reduce(op, self.as_value(x), f"('last', {nd})", "True")
        out = self.generic(m.expr, pos, kw)
        if isinstance(out, Lib):
            out.module_class = m.cls
        return out

    def _single(self, pos: list, kw: dict, m: ModuleRef) -> object:
        if len(pos) != 1 or kw:
            raise NotRecognized(f"{m.expr} is called with other than one input")
        return pos[0]

    def function(self, name: str, e: ast.Call, pos: list, kw: dict, first: Value | None = None) -> object:
        """torch.<name> / F.<name> / x.<name>(...) (``first``: the tensor of a method call; ``pos`` and
        ``kw``: the call's arguments, already read)."""
        given_pos, given_kw = list(pos), dict(kw)
        pos = ([first] if first is not None else []) + list(pos)
        kw = {k: v for k, v in kw.items() if k not in cat.IGNORED_KEYWORDS}
        called = name
        name = {"clip": "clamp"}.get(name, name)

        def fallback() -> object:
            if first is not None:
                return self.generic(called, given_pos, given_kw, first)
            return self.generic(_call_name(e.func, "torch." + called), given_pos, given_kw)

        if name == "tensor" and first is None:
            if len(pos) == 1 and isinstance(pos[0], Py):
                return Py(pos[0].text, pos[0].num, tensorish=True)
            return fallback()
        if name in cat.ELEMENTWISE:
            op, spec = cat.ELEMENTWISE[name]
            return self.elementwise(op, spec, pos, kw, name) or fallback()
        if name == "gelu":
            if len(pos) != 1 or set(kw) - {"approximate"}:
                return fallback()
            approx = kw.get("approximate")
            mode = approx.text.strip("'\"") if isinstance(approx, Py) else "none"
            if mode not in ("none", "tanh"):
                return fallback()
            return self.pw("gelu_tanh" if mode == "tanh" else "gelu", pos[0])
        if name == "clamp":
            return self.clamp(pos, kw) or fallback()
        if name == "where" and len(pos) == 3 and not kw:
            return self.pw("where", *pos)
        if name in ("max", "min") and self._is_elementwise_extreme(pos, kw):
            return self.pw("maximum" if name == "max" else "minimum", pos[0], pos[1])
        if name in cat.BINARY:
            return self.binary(cat.BINARY[name], pos, kw) or fallback()
        if name in cat.EXTREMES or name in cat.REDUCTIONS and cat.REDUCTIONS[name]:
            return self.reduction_call(name, pos, kw) or fallback()
        if name in ("norm", "vector_norm") and first is None or name == "norm":
            return self.norm_call(pos, kw) or fallback()
        if name in cat.SOFTMAX:
            dim = kw.pop("dim", pos[1] if len(pos) > 1 else None)
            if dim is None or len(pos) > 2 or kw:
                return fallback()
            return self.softmax(name, pos[0], self.py(dim, "softmax's dim"))
        if name in cat.SCANS:
            return self.scan(cat.SCANS[name], pos, kw) or fallback()
        if name in cat.POOL_FUNCTIONS and first is None:
            return self.pool_call(name, pos, kw) or fallback()
        if name in cat.ADAPTIVE_FUNCTIONS and first is None:
            op, nd = cat.ADAPTIVE_FUNCTIONS[name]
            size = pos[1] if len(pos) > 1 else kw.get("output_size")
            if len(pos) <= 2 and set(kw) <= {"output_size"} and _py_is_one(size):
                return self.reduce(op, self.as_value(pos[0]), f"('last', {nd})", "True")
            return fallback()
        loss = self.loss(name, pos, kw) if first is None else None
        if loss is not None:
            return loss
        return fallback()

    # -- elementwise -----------------------------------------------------------
    def elementwise(self, op: str, spec, pos: list, kw: dict, name: str) -> object | None:
        if not pos:
            raise NotRecognized(f"{name} without an input")
        names = [s for s, _ in spec]
        if len(pos) - 1 > len(spec) or set(kw) - set(names):
            return None
        values: dict[str, object] = {s: (None if d is None else Py(repr(float(d)), float(d))) for s, d in spec}
        for (s, _), a in zip(spec, pos[1:]):
            values[s] = a
        for k, v in kw.items():
            values[k] = v
        if any(v is None for v in values.values()):
            return None
        return self.pw(op, pos[0], *[values[s] for s in names])

    def clamp(self, pos: list, kw: dict) -> object | None:
        if not pos or len(pos) > 3 or set(kw) - {"min", "max"}:
            return None
        lo = kw.get("min", pos[1] if len(pos) > 1 else None)
        hi = kw.get("max", pos[2] if len(pos) > 2 else None)
        lo = None if isinstance(lo, Py) and lo.text == "None" else lo
        hi = None if isinstance(hi, Py) and hi.text == "None" else hi
        if lo is None and hi is None:
            raise NotRecognized("clamp without min or max")
        y = pos[0]
        if lo is not None:
            y = self.pw("clamp_min", y, lo)
        if hi is not None:
            y = self.pw("clamp_max", y, hi)
        return y

    def _is_elementwise_extreme(self, pos: list, kw: dict) -> bool:
        if len(pos) == 2 and not kw:
            other = pos[1]
            if isinstance(other, Value) or isinstance(other, Py) and (other.tensorish or other.num is not None
                                                                      and not float(other.num).is_integer()):
                return True
            if isinstance(other, Py) and "." in other.text and other.num is not None:
                return True
        return set(kw) == {"other"} and len(pos) == 1

    def binary(self, op: str, pos: list, kw: dict) -> object | None:
        other = kw.pop("other", kw.pop("exponent", None))
        if other is not None:
            pos = pos + [other]
        alpha = kw.pop("alpha", None)
        if len(pos) != 2 or kw:
            return None
        a, b = pos
        if alpha is not None and op in ("add", "sub"):
            b = self.pw("mul", b, alpha)
        return self.pw(op, a, b)

    # -- reductions ------------------------------------------------------------
    def reduce(self, name: str, x: Value, dims: str, keepdim: str) -> Value:
        acc, finish = cat.REDUCTIONS[name]
        return self.add(Reduction(acc, x, dims, keepdim, finish))

    def reduction_call(self, name: str, pos: list, kw: dict) -> object | None:
        if not pos:
            raise NotRecognized(f"{name} without an input")
        x = pos[0]
        if set(kw) - {"dim", "keepdim", "axis"}:
            return None
        dim = kw.get("dim", kw.get("axis", pos[1] if len(pos) > 1 else None))
        keep = kw.get("keepdim", pos[2] if len(pos) > 2 else None)
        if len(pos) > 3:
            return None
        keepdim = self.py(keep, "keepdim") if keep is not None else "False"
        if name in cat.EXTREMES:
            if dim is None:
                return self.reduce("amax" if name == "max" else "amin", self.as_value(x), "None", "False")
            d = self.py(dim, f"{name}'s dim")
            acc, arg = cat.EXTREMES[name]
            values = self.add(Reduction(acc, self.as_value(x), d, keepdim, acc))
            indices = self.add(Reduction(arg, self.as_value(x), d, keepdim, "index"))
            return Extreme(values, indices)
        if name == "logsumexp" and dim is None:
            return None
        d = "None" if dim is None else self.py(dim, f"{name}'s dim")
        return self.reduce(name, self.as_value(x), d, keepdim)

    def norm_call(self, pos: list, kw: dict) -> object | None:
        """torch.norm / x.norm / torch.linalg.vector_norm: p (ord) 1, 2, 'fro' or inf."""
        if not pos or set(kw) - {"p", "ord", "dim", "keepdim"}:
            return None
        x = self.as_value(pos[0])
        p = kw.get("p", kw.get("ord", pos[1] if len(pos) > 1 else Py("'fro'")))
        dim = kw.get("dim", pos[2] if len(pos) > 2 else None)
        keep = kw.get("keepdim", pos[3] if len(pos) > 3 else None)
        ptext = self.py(p, "the norm's p").strip()
        d = "None" if dim is None else self.py(dim, "the norm's dim")
        keepdim = "False" if keep is None else self.py(keep, "keepdim")
        if ptext in ("'fro'", '"fro"', "2", "2.0", "None"):
            return self.add(Reduction("sum", self.pw("mul", x, x), d, keepdim, "sqrt"))
        if ptext in ("1", "1.0"):
            return self.add(Reduction("sum", self.pw("abs", x), d, keepdim, "sum"))
        if ptext in ("float('inf')", 'float("inf")', "math.inf", "torch.inf", "inf"):
            return self.add(Reduction("max", self.pw("abs", x), d, keepdim, "max"))
        return None

    def softmax(self, name: str, x: object, dim: str) -> Value:
        xv = self.as_value(x)
        lse = self.add(Reduction("lse", xv, dim, "True", "lse"))
        shifted = self.pw("sub", xv, lse)
        return shifted if name == "log_softmax" else self.pw("exp", shifted)

    def scan(self, op: str, pos: list, kw: dict) -> object | None:
        if not pos or set(kw) - {"dim"} or len(pos) > 2:
            return None
        dim = kw.get("dim", pos[1] if len(pos) > 1 else None)
        if dim is None:
            return None
        d = self.py(dim, "the scan's dim")
        x = pos[0]
        if isinstance(x, Flipped) and _same_dim(x.dim, d):
            return Flipped(self.add(Scan(op, x.x, d, reverse=True)), d, scan=True)
        return self.add(Scan(op, self.as_value(x), d))

    def pool_call(self, name: str, pos: list, kw: dict) -> object | None:
        op, nd = cat.POOL_FUNCTIONS[name]
        names = ["kernel_size", "stride", "padding", "dilation", "ceil_mode"] if op == "max" else \
            ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"]
        if len(pos) - 1 > len(names) or set(kw) - set(names) or not pos:
            return None
        given = dict(zip(names, pos[1:]))
        given.update(kw)
        if "kernel_size" not in given:
            return None
        parts = ", ".join(f"{k}={self.py(v, 'a pool setting')}" for k, v in given.items())
        return self.add(Pool(op, self.as_value(pos[0]), nd, f"_stark_pool_config({nd}, '{op}', {parts})"))

    # -- norms -----------------------------------------------------------------
    def norm(self, kind: str, m: ModuleRef, x: Value) -> Value:
        s = self.shape(x)
        nd = f"len({s})"
        if kind == "layer":
            dims = f"('last', len({m.expr}.normalized_shape))"
            moments = self.add(Reduction("moments", x, dims, "True", eps=f"{m.expr}.eps"))
            mean, var = self.add(Part(moments, "mean")), self.add(Part(moments, "var"))
            w, b = Py(f"_stark_or({m.expr}.weight, 1.0)"), Py(f"_stark_or({m.expr}.bias, 0.0)")
        elif kind == "rms":
            dims = f"('last', len({m.expr}.normalized_shape))"
            ms = self.add(Reduction("sum", self.pw("mul", x, x), dims, "True", "mean"))
            eps = Py(f"_stark_rms_eps({m.expr})")
            y = self.pw("mul", x, self.pw("rsqrt", self.pw("add", ms, eps)))
            return self.pw("mul", y, Py(f"_stark_or({m.expr}.weight, 1.0)"))
        else:
            if kind == "group":
                moments = self.add(Reduction("moments", x, "'group'", "True", groups=f"{m.expr}.num_groups",
                                             eps=f"{m.expr}.eps"))
                stats: Value = moments
            else:
                dims = "'bn'" if kind == "batch" else "'spatial'"
                moments = self.add(Reduction("moments", x, dims, "True", eps=f"{m.expr}.eps"))
                stats = self.add(NormStats(moments, m.expr, "batch" if kind == "batch" else "instance",
                                           track=True))
            mean, var = self.add(Part(stats, "mean")), self.add(Part(stats, "var"))
            w = Py(f"_stark_channel({m.expr}.weight, {nd}, 1.0)")
            b = Py(f"_stark_channel({m.expr}.bias, {nd}, 0.0)")
        eps = Py(f"{m.expr}.eps")
        y = self.pw("mul", self.pw("sub", x, mean), self.pw("rsqrt", self.pw("add", var, eps)))
        return self.pw("add", self.pw("mul", y, w), b)

    # -- losses ----------------------------------------------------------------
    def loss(self, name: str, pos: list, kw: dict) -> object | None:
        def reduced(v: Value, reduction: str, batch_of: Value | None = None) -> object | None:
            if reduction == "mean":
                return self.reduce("mean", v, "None", "False")
            if reduction == "sum":
                return self.reduce("sum", v, "None", "False")
            if reduction == "none":
                return v
            if reduction == "batchmean" and batch_of is not None:
                total = self.reduce("sum", v, "None", "False")
                return self.pw("div", total, Py(f"_stark_batch({self.shape(batch_of)})"))
            return None

        def reduction_of(default: str = "mean") -> str | None:
            r = kw.pop("reduction", Py(repr(default)))
            return r.text.strip("'\"") if isinstance(r, Py) and r.text[:1] in "'\"" else None

        if name in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss") and len(pos) == 2:
            red = reduction_of()
            beta = kw.pop("beta" if name == "smooth_l1_loss" else "delta", Py("1.0", 1.0))
            if red is None or kw or not isinstance(beta, Py):
                return None
            d = self.pw("sub", pos[0], pos[1])
            if name == "mse_loss":
                return reduced(self.pw("mul", d, d), red)
            n = self.pw("abs", d)
            if name == "l1_loss" or beta.num == 0.0 and name == "smooth_l1_loss":
                return reduced(n, red)
            small = self.pw("mul", self.pw("mul", n, n), Py(f"(0.5 / {beta.text})") if name == "smooth_l1_loss"
                            else Py("0.5", 0.5))
            if name == "smooth_l1_loss":
                large = self.pw("sub", n, Py(f"(0.5 * {beta.text})"))
            else:
                large = self.pw("mul", self.pw("sub", n, Py(f"(0.5 * {beta.text})")), beta)
            return reduced(self.pw("where", self.pw("lt", n, beta), small, large), red)
        if name == "kl_div" and len(pos) == 2:
            red = reduction_of()
            log_target = kw.pop("log_target", Py("False"))
            if red is None or kw or not isinstance(log_target, Py) or log_target.text not in ("False", "True"):
                return None
            inp, tgt = pos
            if log_target.text == "True":
                v = self.pw("mul", self.pw("exp", tgt), self.pw("sub", tgt, inp))
            else:
                v = self.pw("sub", self.pw("xlogy", tgt, tgt), self.pw("mul", tgt, inp))
            return reduced(v, red, batch_of=self.as_value(inp))
        if name == "cosine_similarity" and len(pos) >= 2:
            dim = kw.pop("dim", pos[2] if len(pos) > 2 else Py("1", 1.0))
            eps = kw.pop("eps", pos[3] if len(pos) > 3 else Py("1e-08", 1e-8))
            if kw or len(pos) > 4:
                return None
            d = self.py(dim, "the dim")
            x1, x2 = self.as_value(pos[0]), self.as_value(pos[1])
            n1 = self.pw("clamp_min", self.add(Reduction("sum", self.pw("mul", x1, x1), d, "True", "sqrt")), eps)
            n2 = self.pw("clamp_min", self.add(Reduction("sum", self.pw("mul", x2, x2), d, "True", "sqrt")), eps)
            prod = self.pw("mul", self.pw("div", x1, n1), self.pw("div", x2, n2))
            return self.add(Reduction("sum", prod, d, "False", "sum"))
        if name == "normalize" and pos:
            p = kw.pop("p", pos[1] if len(pos) > 1 else Py("2.0", 2.0))
            dim = kw.pop("dim", pos[2] if len(pos) > 2 else Py("1", 1.0))
            eps = kw.pop("eps", pos[3] if len(pos) > 3 else Py("1e-12", 1e-12))
            if kw or not isinstance(p, Py) or p.num != 2.0:
                return None
            x = self.as_value(pos[0])
            n = self.add(Reduction("sum", self.pw("mul", x, x), self.py(dim, "the dim"), "True", "sqrt"))
            return self.pw("div", x, self.pw("clamp_min", n, eps))
        return None


def _literal(x: Py) -> bool:
    try:
        ast.literal_eval(x.text)
        return True
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def _tensorish(x: object) -> bool:
    return isinstance(x, (Value, Flipped)) or isinstance(x, Py) and x.tensorish


def _same_dim(a: str, b: str) -> bool:
    return a.replace(" ", "").strip("()[],") == b.replace(" ", "").strip("()[],")


def _call_name(func: ast.expr, default: str) -> str:
    name = dotted(func)
    return name or default


def _keyword_const(call: ast.Call | None, name: str, position: int) -> object:
    if call is None:
        return None
    for k in call.keywords:
        if k.arg == name:
            return k.value.value if isinstance(k.value, ast.Constant) else "?"
    if len(call.args) > position:
        a = call.args[position]
        return a.value if isinstance(a, ast.Constant) else "?"
    return None


def _keyword_literal_true(call: ast.Call | None, name: str) -> bool:
    """The constructor sets ``name=True`` literally (other values are checked at run time)."""
    if call is None:
        return False
    return any(k.arg == name and isinstance(k.value, ast.Constant) and k.value.value is True for k in call.keywords)


def _is_one(node: ast.expr | None) -> bool:
    if isinstance(node, ast.Constant):
        return node.value == 1
    if isinstance(node, (ast.Tuple, ast.List)):
        return bool(node.elts) and all(_is_one(e) for e in node.elts)
    return False


def _output_is_one(call: ast.Call | None) -> bool:
    if call is None:
        return False
    node = next((k.value for k in call.keywords if k.arg == "output_size"), call.args[0] if call.args else None)
    return _is_one(node)


def _py_is_one(x: object) -> bool:
    if isinstance(x, Py):
        return x.num == 1.0
    if isinstance(x, Seq):
        return bool(x.items) and all(_py_is_one(i) for i in x.items)
    return False


def _self_attr(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _attr_kind(value: ast.expr) -> str:
    """tensor (a Parameter, a torch.<lowercase> call, None), module (an nn class) or other."""
    if isinstance(value, ast.Constant) and value.value is None:
        return "tensor"
    if isinstance(value, ast.Call):
        ctor = dotted(value.func)
        last = ctor.rpartition(".")[2]
        if last == "Parameter" or ctor.split(".")[0] == "torch" and last[:1].islower():
            return "tensor"
        if last[:1].isupper():
            return "module"
    return "other"


def _init_attrs(init: ast.FunctionDef | None) -> dict:
    """self.<name> = <value> assignments of __init__ (and register_buffer names under '__buffers__').
    '__unsure__': name -> tensor | module | other for an attribute set more than one way (``if`` in
    __init__), or changed after it is built (``self.layers.append(...)``, ``self.net[0] = ...``): its
    constructor says nothing sure about what forward finds there."""
    out: dict = {"__unsure__": {}, "__buffers__": []}
    buffers: list[str] = []
    if init is None:
        return out
    assigned: dict[str, list[ast.expr]] = {}
    changed: set[str] = set()
    for stmt in ast.walk(init):
        if isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                name = _self_attr(t)
                if name is not None:
                    assigned.setdefault(name, []).append(stmt.value if len(stmt.targets) == 1 else stmt)
                if isinstance(t, ast.Subscript) and _self_attr(t.value):
                    changed.add(_self_attr(t.value))  # type: ignore[arg-type]
        if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and _self_attr(stmt.target):
            assigned.setdefault(_self_attr(stmt.target), []).append(stmt)  # type: ignore[arg-type]
        if isinstance(stmt, ast.Call) and isinstance(stmt.func, ast.Attribute) and _self_attr(stmt.func.value):
            changed.add(_self_attr(stmt.func.value))  # type: ignore[arg-type]
    for name, values in assigned.items():
        out[name] = max(values, key=lambda v: (v.lineno, v.col_offset))
        if len({ast.dump(v) for v in values}) > 1 or name in changed:
            kinds = {_attr_kind(v) for v in values}
            out["__unsure__"][name] = "module" if "module" in kinds else "tensor" if kinds == {"tensor"} else "other"
    for stmt in ast.walk(init):
        if isinstance(stmt, ast.Call) and isinstance(stmt.func, ast.Attribute) and \
                stmt.func.attr in ("register_buffer", "register_parameter") and stmt.args and \
                isinstance(stmt.args[0], ast.Constant) and isinstance(stmt.args[0].value, str):
            buffers.append(stmt.args[0].value)
    out["__buffers__"] = buffers
    return out


def read_forward(source: str) -> Variant | Branch:
    """Every way through ``Model.forward`` (``control``): one ``Variant`` when it takes none of its
    branches on host values, else a ``Branch`` per condition, at most MAX_VARIANTS readings."""
    count = [0]

    def explore(assume: dict[str, bool]) -> Variant | Branch:
        r = Reader(source, assume)
        try:
            graph = r.read()
        except Fork as f:
            return Branch(f.key, explore({**assume, f.key: True}), explore({**assume, f.key: False}))
        count[0] += 1
        if count[0] > MAX_VARIANTS:
            raise NotRecognized(f"forward branches on too many host conditions (over {MAX_VARIANTS} ways "
                                f"through it)")
        return Variant(graph, r.values)

    return explore({})


def read_model(source: str) -> tuple[Graph, list[Value]]:
    """The graph of ``Model.forward`` and every value by number (for the shape tokens), for a forward
    with one way through it (``read_forward`` for any)."""
    read = read_forward(source)
    if isinstance(read, Branch):
        raise NotRecognized(f"forward branches on {read.condition} (more than one graph)")
    return read.graph, read.values
