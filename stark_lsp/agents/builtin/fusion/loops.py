"""``for`` loops of a forward, and the layers of ``nn.Sequential`` / ``nn.ModuleList``.

A loop whose items are known when the code is written is unrolled: a
``ModuleList`` / ``Sequential`` built from a literal list of layers (and not
changed after), ``range`` of literal numbers, a tuple written out; each turn
reads the body again with the loop's variables bound (``self.layers[2]``, a
literal index), so activations fuse across layers as in a straight forward.

Any other loop (``for layer in self.layers`` over a comprehension or a list
built by appends, ``range(self.n)``) stays a host loop: its body is read as a
graph of its own (a ``Loop`` value) whose parameters are the loop's
variables, the tensors the body updates (carried from turn to turn) and the
tensors of the forward it reads; the generated forward defines the body as a
nested function and calls it once per turn. A loop over a tensor, ``while``,
``break`` / ``continue`` and ``return`` inside a loop are refused.
"""

from __future__ import annotations

import ast

from stark_lsp.agents.builtin.kb_ast import NotRecognized, dotted

from .control import assigned_names
from .graph import Carried, Graph, Loop
from .reader import SHAPE_TOKEN, Flipped, Gone, ModuleRef, Outer, Py, Reader, Seq, _tensorish

UNROLL_LIMIT = 32  # longer known loops stay host loops
CONTAINERS = ("ModuleList", "Sequential")


def module_ref(expr: str, ctor: ast.expr) -> ModuleRef:
    """The layer at ``expr`` built by ``ctor`` (an expression of __init__)."""
    if isinstance(ctor, ast.Call):
        last = dotted(ctor.func).rpartition(".")[2]
        if last[:1].isupper():
            return ModuleRef(expr, last, ctor)
    return ModuleRef(expr, "", None)


def container_items(m: ModuleRef) -> list[ModuleRef] | None:
    """The layers of a ModuleList / Sequential written out in its constructor, else None."""
    if m.ctor is None or m.cls not in CONTAINERS or m.ctor.keywords:
        return None
    args = m.ctor.args
    if m.cls == "ModuleList":
        if not args:
            return []
        if len(args) != 1 or not isinstance(args[0], (ast.List, ast.Tuple)):
            return None
        args = args[0].elts
    if any(isinstance(a, ast.Starred) for a in args) or \
            len(args) == 1 and isinstance(args[0], ast.Call) and dotted(args[0].func).endswith("OrderedDict"):
        return None
    return [module_ref(f"{m.expr}[{i}]", a) for i, a in enumerate(args)]


def element_ref(m: ModuleRef, name: str) -> ModuleRef | None:
    """What each item of a container built by a comprehension is (``name`` holding it), else None."""
    if m.ctor is None or m.cls not in CONTAINERS or m.ctor.keywords or len(m.ctor.args) != 1:
        return None
    arg = m.ctor.args[0]
    if isinstance(arg, ast.Starred):
        arg = arg.value
    if isinstance(arg, (ast.ListComp, ast.GeneratorExp)) and isinstance(arg.elt, ast.Call):
        ref = module_ref(name, arg.elt)
        return ref if ref.cls else None
    return None


def _names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in target.elts):
        return [e.id for e in target.elts]  # type: ignore[attr-defined]
    raise NotRecognized(f"a for loop over {ast.unparse(target)[:40]}: only names are followed as its variables")


def _known_items(r: Reader, it: ast.expr) -> list | None:
    """The items of a loop known when the code is written (unrolled), else None."""
    if isinstance(it, ast.Call) and dotted(it.func) == "range" and not it.keywords:
        bounds = [r.ev(a) for a in it.args]
        if bounds and all(isinstance(b, Py) and b.num is not None and float(b.num).is_integer() for b in bounds):
            ints = [int(b.num) for b in bounds]  # type: ignore[union-attr, arg-type]
            if len(ints) <= 3 and (len(ints) < 3 or ints[2] != 0):
                return [Py(repr(i), float(i)) for i in range(*ints)]
        return None
    value = r.ev(it)
    if isinstance(value, ModuleRef):
        return container_items(value)
    if isinstance(value, Seq):
        return list(value.items)
    return None


def read_for(r: Reader, stmt: ast.For) -> None:
    src = f"for {ast.unparse(stmt.target)} in {ast.unparse(stmt.iter)}"[:60]
    if stmt.orelse:
        raise NotRecognized(f"a for ... else loop ({src})")
    names = _names(stmt.target)
    it, enum = stmt.iter, False
    if isinstance(it, ast.Call) and dotted(it.func) == "enumerate" and len(it.args) == 1 and not it.keywords:
        if len(names) != 2:
            raise NotRecognized(f"enumerate into other than two names ({src})")
        it, enum = it.args[0], True
    items = _known_items(r, it)
    if items is not None and len(items) <= UNROLL_LIMIT:
        for i, item in enumerate(items):
            if enum:
                r.env[names[0]], r.env[names[1]] = Py(repr(i), float(i)), item
            elif len(names) == 1:
                r.env[names[0]] = item
            else:
                raise NotRecognized(f"unpacking a loop's items into several names ({src})")
            for n in names:
                r.local_defs.pop(n, None)
            if r.block(stmt.body) is not None:
                raise NotRecognized(f"a return inside a loop ({src})")
        return
    host_loop(r, stmt, names, it, enum, src)


def host_loop(r: Reader, stmt: ast.For, names: list[str], it: ast.expr, enum: bool, src: str) -> None:
    container = r.ev(it)
    if _tensorish(container) or isinstance(container, Flipped):
        raise NotRecognized(f"a loop over a tensor ({src}): only loops over layers and ranges are followed")
    iterable = r.py(container, "the loop's items")
    if enum:
        iterable = f"enumerate({iterable})"
    if SHAPE_TOKEN.search(iterable):  # range(x.shape[0]): a statement after the shape it reads
        name = f"_stark_items{len(r.values)}"
        r.py_statement(name, iterable)
        iterable = name
    assigned = assigned_names(stmt.body)
    body = r.child()
    # the tensors of forward, and the numbers the body updates (acc = 0; acc = acc + layer(x)): carried
    tensors = [n for n, v in r.env.items() if _tensorish(v) or isinstance(v, (Flipped, Outer))
               or isinstance(v, Py) and v.num is not None and n in assigned]
    for n, v in r.env.items():
        if n in names:
            continue
        if n in tensors:
            body.env[n] = Outer(n)
        elif isinstance(v, Py) and n in assigned:
            raise NotRecognized(f"a loop that updates the Python value {n} ({src})")
        elif isinstance(v, (Py, ModuleRef, Gone)):
            body.env[n] = v  # read by name: the body is a nested function of forward
        else:
            body.env[n] = Gone(n, "read inside a loop, and neither a tensor nor a Python value")
    for n in names:
        body.env[n] = Py(n)
    item = names[-1] if enum or len(names) == 1 else None
    if item is not None and isinstance(container, ModuleRef):
        ref = element_ref(container, item)
        if ref is not None:
            body.env[item] = ref
    if body.block(stmt.body) is not None:
        raise NotRecognized(f"a return inside a loop ({src})")
    carried = [n for n in tensors if n in assigned and n not in names]
    if not carried:
        raise NotRecognized(f"a loop that updates no tensor of forward ({src})")
    outs = [body.as_value(body.ev(ast.Name(n, ast.Load()))) for n in carried]
    free = [n for n in tensors if n not in carried and n in body.leaves and n not in names]
    args = tuple(r.as_value(r.ev(ast.Name(n, ast.Load()))) for n in carried + free)
    graph = Graph(names + carried + free, outs, len(carried) > 1, body.statements)
    loop = r.add(Loop(", ".join(names), iterable, args, graph, body.values, len(carried)))
    for i, n in enumerate(carried):
        r.env[n] = r.add(Carried(loop, i))  # type: ignore[arg-type]
    for n in assigned | set(names):
        if n not in carried:
            r.env[n] = Gone(n)
            r.local_defs.pop(n, None)
