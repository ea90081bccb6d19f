"""Write the fused ModelNew: which values a kernel writes, and the forward that launches them.

Schedule (``plan_kernels``): elementwise values and size-1 views are *virtual*:
computed inside whichever kernel reads them, never written, unless they are
an output of the model or an argument of a PyTorch call. Every reduction,
scan and pool is one kernel whose prologue is the virtual tree under it
(a softmax is a logsumexp reduction, then an elementwise ``exp(x - lse)``
that the next kernel computes; a norm is a mean/variance reduction, then
elementwise arithmetic). So an epilogue of elementwise operations costs no
kernel of its own: it is the prologue of what comes next, or the kernel
that writes the output.

The forward computes every value's shape in Python as it goes (``s<n>``),
launches each kernel through the runtime's packers, and keeps PyTorch calls
(convolutions, linear layers, views that move data) as they were written.
A host loop's body is a nested function of forward with a forward of its own
(``loop``); a forward read once per host condition (``reader.read_forward``)
tests the conditions first and runs one straight-line program
(``assemble_read``). Kernels of every part are numbered in one sequence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from . import kernels
from .graph import (Branch, Carried, Graph, Leaf, Lib, Loop, NormStats, Part, Pointwise, Pool, Reduction, Scan,
                    Value, Variant, View)
from .reader import SHAPE_TOKEN
from .trees import Tree, TreeWriter
from ..tunables_triton import switch_lines

RUNTIME_FILE = Path(__file__).with_name("runtime.py")  # copied into every fused candidate
HEADER = "import math\n\nimport torch\nimport triton\nimport triton.language as tl\n"
DEFAULTS = {"BLOCK": 1024, "BLOCK_R": 1024, "BLOCK_K": 64, "num_warps": 4}
_ACC_NAMES = {"sum": "sum", "mean": "mean", "max": "max", "min": "min", "prod": "prod", "lse": "logsumexp",
              "sqrt": "norm", "index": "arg"}


@dataclass
class Kernel:
    name: str
    kind: str  # pointwise | reduce | scan | pool
    value: Value
    tree: Tree
    text: str
    doc: str


@dataclass
class Program:
    """The generated ModelNew: kernels (text), the forward body, what it does in words."""

    kernels: list[Kernel] = field(default_factory=list)
    forward: list[str] = field(default_factory=list)
    libs: list[str] = field(default_factory=list)
    convolution: bool = False  # a library convolution runs: the CUDNN_BENCHMARK switch is written
    conditions: list[str] = field(default_factory=list)  # host conditions that choose the program run
    loops: int = 0  # host loops (a nested function each)

    def describe(self) -> str:
        parts = []
        if self.conditions:
            parts.append(f"{len(self.conditions) + 1} programs chosen on the host ({', '.join(self.conditions)})")
        if self.loops:
            parts.append(f"{self.loops} host loop{'s' if self.loops != 1 else ''}")
        if self.libs:
            parts.append(", ".join(dict.fromkeys(self.libs)) + " in PyTorch")
        n = len(self.kernels)
        docs = "; ".join(k.doc for k in self.kernels)
        parts.append(f"{n} fused Triton kernel{'s' if n != 1 else ''} ({docs})")
        text = ", then ".join(parts)
        return text if len(text) <= 200 else text[:197] + "..."


def _ops_in(tree_root: Value, virtual) -> list[str]:
    names: list[str] = []
    stack = [tree_root]
    seen: set[int] = set()
    while stack:
        v = stack.pop()
        if id(v) in seen or not virtual(v):
            continue
        seen.add(id(v))
        if isinstance(v, Pointwise):
            names.append(v.op)
            stack.extend(v.args)
        elif isinstance(v, View):
            stack.append(v.x)
    return list(dict.fromkeys(reversed(names)))


class Assembler:
    def __init__(self, graph: Graph, values: list[Value], defaults: dict[str, int] | None = None,
                 program: Program | None = None):
        self.graph = graph
        self.values = values
        self.number = {id(v): i for i, v in enumerate(values)}
        self.defaults = {**DEFAULTS, **(defaults or {})}
        self.consumers = graph.consumers()
        self.outputs = {id(o) for o in graph.outputs}
        self.names: dict[int, str] = {}
        self.program = program if program is not None else Program()
        self.lines: list[str] = []

    # -- naming ------------------------------------------------------------------------
    def n(self, v: Value) -> int:
        if id(v) not in self.number:
            self.number[id(v)] = len(self.values)
            self.values.append(v)
        return self.number[id(v)]

    def shape(self, v: Value) -> str:
        return f"s{self.n(v)}"

    def subst(self, text: str) -> str:
        return SHAPE_TOKEN.sub(lambda m: f"s{m.group(1)}", text)

    def python(self, v: Value) -> str:
        if isinstance(v, Leaf):
            return self.subst(v.expr)
        if id(v) not in self.names:
            raise RuntimeError(f"{type(v).__name__} #{self.n(v)} read before it is computed")
        return self.names[id(v)]

    def virtual(self, v: Value) -> bool:
        return isinstance(v, (Pointwise, View)) and id(v) not in self.names

    def needs_write(self, v: Value) -> bool:
        if not isinstance(v, (Pointwise, View)):
            return False
        if id(v) in self.outputs:
            return True
        return any(isinstance(c, (Lib, Loop)) for c in self.consumers.get(id(v), []))

    # -- kernels ---------------------------------------------------------------------------
    def tree(self, root: Value, space: str) -> Tree:
        writer = TreeWriter(self.virtual, self.python, self.shape, lambda op: f"_stark_ex({op}, {space})")
        return writer.write(root)

    def emit(self, line: str = "") -> None:
        self.lines.append(line)

    def kernel(self, kind: str, value: Value, tree: Tree, text_of, doc: str) -> Kernel:
        k = Kernel(f"_stark_k{len(self.program.kernels) + 1}", kind, value, tree, "", doc)
        k.text = text_of(k.name)
        self.program.kernels.append(k)
        return k

    def operands(self, tree: Tree) -> str:
        return "[" + ", ".join(o.python for o in tree.operands) + "]"

    def warps(self) -> int:
        return int(self.defaults["num_warps"])

    def write_pointwise(self, v: Value) -> None:
        space = self.shape(v)
        tree = self.tree(v, space)
        ops = _ops_in(v, self.virtual)
        k = self.kernel("pointwise", v, tree, lambda name: kernels.pointwise_kernel(name, tree, " ".join(ops)),
                        ", ".join(ops) or "copy")
        i, t = k.name.removeprefix("_stark_k"), f"t{self.n(v)}"
        dtype = "torch.bool" if tree.boolean else "_stark_dtype(*ops)"
        self.emit(f"# kernel {i}: {k.doc}")
        self.emit(f"ops = {self.operands(tree)}")
        self.emit(f"{t} = _stark_out({space}, ops, {dtype}, _stark_device)")
        self.emit(f"BLOCK_{i} = {self.defaults['BLOCK']}")
        self.emit(f"L = _stark_pointwise({space}, ops, BLOCK_{i})")
        self.emit(f"{k.name}[L.grid]({t}, *L.args, **L.meta, CDT=_stark_compute({t}.dtype), "
                  f"num_warps={self.warps()})")
        self.names[id(v)] = t

    def write_reduction(self, r: Reduction, outs: list[str], out_dtype: str, doc: str) -> Kernel:
        """Launch the reduction kernel of ``r`` into the (already named) keepdim-shaped ``outs``."""
        space = self.shape(r.x)
        tree = self.tree(r.x, space)
        k = self.kernel("reduce", r, tree, lambda name: kernels.reduce_kernel(name, tree, r.acc, r.finish, doc)
                        + kernels.combine_kernel(name + "_combine", r.acc, r.finish), doc)
        i = k.name.removeprefix("_stark_k")
        states = kernels.STATES[r.acc]
        dtypes = {s: kernels.STATE_DTYPES[(r.acc, s)] for s in states if (r.acc, s) in kernels.STATE_DTYPES}
        dims = self.subst(r.dims)
        keep_shape = f"_stark_rshape({space}, {dims}, True)" if not r.groups else \
            f"({space}[0], {space}[1]) + (1,) * (len({space}) - 2)"
        self.emit(f"# kernel {i}: {doc}")
        self.emit(f"ops = {self.operands(tree)}")
        for o in outs:
            self.emit(f"{o} = torch.empty({keep_shape}, device=_stark_device, dtype={out_dtype})")
        self.emit(f"BLOCK_R_{i} = {self.defaults['BLOCK_R']}")
        self.emit(f"BLOCK_K_{i} = {self.defaults['BLOCK_K']}")
        groups = f", split_groups={self.subst(r.groups)}" if r.groups else ""
        self.emit(f"R = _stark_reduce({space}, {dims}, ops, [{', '.join(outs)}], BLOCK_R_{i}, BLOCK_K_{i}{groups})")
        ws_dtypes = "{" + ", ".join(f"{s!r}: {d}" for s, d in dtypes.items()) + "}"
        self.emit(f"W = _stark_workspace(R, {states!r}, {ws_dtypes}) if R.split > 1 else [{outs[0]}] * {len(states)}")
        self.emit(f"CDT = _stark_compute(*[t.dtype for t in ops if isinstance(t, torch.Tensor)], {outs[0]}.dtype)")
        self.emit(f"{k.name}[R.grid](*R.head, *W, *R.tail, **R.meta, CDT=CDT, num_warps={self.warps()})")
        self.emit("if R.split > 1:")
        self.emit(f"    C = _stark_combine(R, [{', '.join(outs)}], 256)")
        self.emit(f"    {k.name}_combine[C.grid](*C.head, *W, *C.tail, **C.meta)")
        return k

    def reduction(self, r: Reduction) -> None:
        n = self.n(r)
        name = _ACC_NAMES.get(r.finish, r.finish)
        ops = _ops_in(r.x, self.virtual)
        doc = f"{name} over {r.dims}" + (f" of ({', '.join(ops)})" if ops else "")
        if r.acc == "moments":
            outs = [f"t{n}_mean", f"t{n}_var"]
            self.write_reduction(r, outs, "torch.float32", f"mean and variance over {r.dims}" +
                                 (f" of ({', '.join(ops)})" if ops else ""))
            return
        t = f"t{n}"
        if r.acc in ("argmax", "argmin"):
            dtype = "torch.int64"
        else:
            dtype = "_stark_dtype(*ops)"
        self.write_reduction(r, [t], dtype, doc)
        self.emit(f"{t} = {t}.reshape({self.shape(r)})")
        self.names[id(r)] = t

    def norm_stats(self, st: NormStats) -> None:
        r = st.moments
        n = self.n(st)
        mean, var = f"t{n}_mean", f"t{n}_var"
        space = self.shape(r.x)
        self.emit(f"if _stark_use_batch_stats({st.module}):")
        saved = self.lines
        self.lines = []
        ops = _ops_in(r.x, self.virtual)
        self.write_reduction(r, [mean, var], "torch.float32",
                             f"{st.kind} norm statistics" + (f" of ({', '.join(ops)})" if ops else ""))
        self.emit(f"_stark_track({st.module}, {mean}, {var}, math.prod({space}) // {mean}.numel(), {st.kind!r})")
        block, self.lines = self.lines, saved
        self.lines.extend("    " + line for line in block)
        self.emit("else:")
        self.emit(f"    {mean}, {var} = _stark_running({st.module}, len({space}), {st.kind!r})")
        self.names[id(st)] = f"t{n}"

    def part(self, p: Part) -> None:
        src = p.of
        base = f"t{self.n(src)}"
        self.names[id(p)] = f"{base}_{p.name}"
        self.emit(f"{self.shape(p)} = _stark_shape({base}_{p.name})")

    def scan(self, s: Scan) -> None:
        space = self.shape(s.x)
        tree = self.tree(s.x, space)
        ops = _ops_in(s.x, self.virtual)
        doc = f"cum{s.op}{' (reversed)' if s.reverse else ''} over dim {s.dim}" + (f" of ({', '.join(ops)})" if ops else "")
        k = self.kernel("scan", s, tree, lambda name: kernels.scan_kernel(name, tree, s.op, s.reverse, doc), doc)
        i, t = k.name.removeprefix("_stark_k"), f"t{self.n(s)}"
        self.emit(f"# kernel {i}: {doc}")
        self.emit(f"ops = {self.operands(tree)}")
        self.emit(f"{t} = torch.empty({space}, device=_stark_device, dtype=_stark_dtype(*ops))")
        self.emit(f"BLOCK_{i} = {self.defaults['BLOCK']}")
        self.emit(f"BLOCK_K_{i} = {self.defaults['BLOCK_K']}")
        self.emit(f"L = _stark_scan({space}, {self.subst(s.dim)}, ops, {t}, BLOCK_{i}, BLOCK_K_{i})")
        self.emit(f"{k.name}[L.grid](*L.args, **L.meta, CDT=_stark_compute({t}.dtype), num_warps={self.warps()})")
        self.names[id(s)] = t

    def pool(self, p: Pool) -> None:
        space = self.shape(p.x)
        tree = self.tree(p.x, space)
        ops = _ops_in(p.x, self.virtual)
        doc = f"{p.op} pool {p.nd}-d" + (f" of ({', '.join(ops)})" if ops else "")
        k = self.kernel("pool", p, tree, lambda name: kernels.pool_kernel(name, tree, doc), doc)
        i, t, n = k.name.removeprefix("_stark_k"), f"t{self.n(p)}", self.n(p)
        self.emit(f"# kernel {i}: {doc}")
        self.emit(f"ops = {self.operands(tree)}")
        self.emit(f"{t} = torch.empty({self.shape(p)}, device=_stark_device, dtype=_stark_dtype(*ops))")
        self.emit(f"BLOCK_{i} = {self.defaults['BLOCK'] // 4}")
        self.emit(f"L = _stark_pool({space}, c{n}, ops, {t}, BLOCK_{i})")
        self.emit(f"{k.name}[L.grid](*L.args, **L.meta, CDT=_stark_compute({t}.dtype), num_warps={self.warps()})")
        self.names[id(p)] = t

    def lib(self, v: Lib) -> None:
        t = f"t{self.n(v)}"
        code = self.subst(v.code).format(*[self.python(a) for a in v.args])
        self.emit(f"{t} = {code}")
        self.emit(f"{self.shape(v)} = _stark_shape({t})")
        self.names[id(v)] = t
        self.program.libs.append(v.what)
        if v.module_class.startswith("Conv") or "conv" in v.what.lower():
            self.program.convolution = True

    def loop(self, v: Loop) -> None:
        """The body as a nested function (its own names), called once per turn on the carried values."""
        n = self.n(v)
        body = Assembler(v.body, list(v.body_values), self.defaults, self.program)
        body.build()
        self.program.loops += 1
        params = v.body.params
        targets = params[:len(params) - len(v.args)]
        self.emit(f"def _stark_loop{n}({', '.join(params)}):")
        self.lines.extend("    " + line if line else "" for line in body.lines)
        carried = [f"t{n}_{i}" for i in range(v.carried)]
        for c, a in zip(carried, v.args):
            self.emit(f"{c} = {self.python(a)}")
        free = [self.python(a) for a in v.args[v.carried:]]
        self.emit(f"for {v.target} in {self.subst(v.iterable)}:")
        self.emit(f"    {', '.join(carried)} = _stark_loop{n}({', '.join(targets + carried + free)})")

    # -- the forward -------------------------------------------------------------------------
    def shape_line(self, v: Value) -> None:
        s = self.shape(v)
        if isinstance(v, Leaf):
            self.emit(f"{s} = ()" if v.const is not None else f"{s} = _stark_shape({self.subst(v.expr)})")
        elif isinstance(v, Pointwise):
            shapes = list(dict.fromkeys(self.shape(a) for a in v.args if not (isinstance(a, Leaf) and a.const is not None)))
            if len(shapes) <= 1:
                self.emit(f"{s} = {shapes[0] if shapes else '()'}")
            else:
                self.emit(f"{s} = _stark_bshape({', '.join(shapes)})")
        elif isinstance(v, View):
            args = f", {self.subst(v.args)}" if v.args else ""
            self.emit(f"{s} = _stark_vshape({self.shape(v.x)}, {v.method!r}{args})")
        elif isinstance(v, Reduction) and v.acc != "moments":
            self.emit(f"{s} = _stark_rshape({self.shape(v.x)}, {self.subst(v.dims)}, {self.subst(v.keepdim)})")
        elif isinstance(v, Scan):
            self.emit(f"{s} = {self.shape(v.x)}")
        elif isinstance(v, Pool):
            n = self.n(v)
            self.emit(f"c{n} = {self.subst(v.cfg)}")
            self.emit(f"{s} = _stark_pshape({self.shape(v.x)}, c{n})")

    def build(self) -> Program:
        g = self.graph
        live = g.live()
        extra = [s.after for s in g.statements if s.after is not None]
        live_ids = {id(v) for v in live}
        for v in extra:
            if id(v) not in live_ids:
                live.append(v)
                live_ids.add(id(v))
        live.sort(key=lambda v: self.n(v))
        after: dict[int, list] = {}
        for s in g.statements:
            after.setdefault(id(s.after) if s.after is not None else 0, []).append(s)
        params = ", ".join(g.params)
        self.emit(f"_stark_device = _stark_find_device(self, {params})" if params else
                  "_stark_device = _stark_find_device(self)")
        for s in after.get(0, []):
            self.emit(f"{s.target} = {self.subst(s.expr)}")
        owned = {id(v.moments) for v in live if isinstance(v, NormStats)}  # launched by their NormStats
        for v in live:
            if id(v) in owned:
                continue
            self.shape_line(v)
            if isinstance(v, Lib):
                self.lib(v)
            elif isinstance(v, Reduction):
                self.reduction(v)
            elif isinstance(v, NormStats):
                self.norm_stats(v)
            elif isinstance(v, Part):
                self.part(v)
            elif isinstance(v, Scan):
                self.scan(v)
            elif isinstance(v, Pool):
                self.pool(v)
            elif isinstance(v, Loop):
                self.loop(v)
            elif isinstance(v, Carried):
                self.names[id(v)] = f"t{self.n(v.of)}_{v.index}"
                self.emit(f"{self.shape(v)} = _stark_shape({self.names[id(v)]})")
            elif self.needs_write(v):
                self.write_pointwise(v)
            for s in after.get(id(v), []):
                self.emit(f"{s.target} = {self.subst(s.expr)}")
        outs = []
        for o in g.outputs:
            if isinstance(o, Leaf):
                outs.append(f"_stark_copy({self.python(o)})")
            else:
                outs.append(self.python(o))
        if g.tuple_output:
            self.emit(f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
        else:
            self.emit(f"return {outs[0]}")
        self.program.forward = self.lines
        return self.program


def runtime_text() -> str:
    """The runtime helpers' source, without its module docstring and imports: the file's text, read as
    text (the team never imports it: it runs only inside candidates)."""
    text = RUNTIME_FILE.read_text()
    body = text.split("\nimport triton\n", 1)[1]
    return body.strip("\n") + "\n\n\ndef _stark_copy(v):\n    return v.clone() if isinstance(v, torch.Tensor) else v\n"


_VIEWED = re.compile(r"(?<![\w.])t\d+(?:_\w+)?\.view\(|_stark_vw\(t\d+(?:_\w+)?, 'view'")  # a result of the forward viewed


def channels_last_fits(program: Program) -> bool:
    """Whether the CHANNELS_LAST switch is written: a library convolution runs, and the forward views none of
    its own results as another shape (one laid out channels-last cannot be: a reshape copies, a view fails;
    the inputs and parameters keep PyTorch's order)."""
    return program.convolution and not any(_VIEWED.search(line) for line in program.forward)


def render_program(program: Program, params: list[str], doc: str) -> str:
    kernel_text = "".join(k.text for k in program.kernels)
    forward = program.forward
    switch = "\n" + "\n".join(switch_lines("CUDNN_BENCHMARK")) + "\n" if program.convolution else ""
    if channels_last_fits(program):
        switch += "\n" + "\n".join(switch_lines("CHANNELS_LAST")) + "\n"
        forward = ["if CHANNELS_LAST:", "    _stark_channels_last(self)", *forward]
    body = "".join(f"        {line}\n" if line else "\n" for line in forward)
    return (HEADER + switch + "\n\n# Helpers of the fused ModelNew, written by the STARK built-in team.\n" + runtime_text()
            + kernels.HELPERS + kernel_text + f'''

class ModelNew(Model):
    """{doc}"""

    def forward(self, {", ".join(params)}):
{body}''')


def assemble(graph: Graph, values: list[Value], defaults: dict[str, int] | None = None) -> Program:
    return Assembler(graph, list(values), defaults).build()


def assemble_read(read: Variant | Branch, defaults: dict[str, int] | None = None) -> Program:
    """The program of every way through forward: the host conditions first, then one straight line."""
    program = Program()

    def lines(node: Variant | Branch) -> list[str]:
        if isinstance(node, Variant):
            asm = Assembler(node.graph, list(node.values), defaults, program)
            asm.build()
            return asm.lines
        program.conditions.append(node.condition)
        then, other = lines(node.then), lines(node.other)
        return ([f"if {node.condition}:"] + ["    " + x if x else "" for x in then] + ["else:"]
                + ["    " + x if x else "" for x in other])

    program.forward = lines(read)
    return program

