"""The forward of a KernelBench model as a graph of values (the fusion IR).

``reader.read_model`` builds it from the source with ``ast``; ``schedule``
decides which values a kernel writes; the ``emit_*`` modules write the code.
Nothing here knows shapes: every shape is computed by the generated forward
at run time, so one graph serves any input size.

Values, all identity-hashed (two equal-looking values are still two values):

* ``Leaf``: something the forward already holds: an input, an attribute
  (``self.bias``, ``self.scale``), a number, or an expression over them
  (``self.subtract.view(1, -1, 1, 1, 1)``). A tensor or a number at run time.
* ``Pointwise``: one elementwise operation with broadcasting.
* ``Reduction``: an accumulation over some dims (sum, max, logsumexp, the
  mean and variance of a norm, argmax, ...).
* ``Part``: one output of a reduction with several (a norm's mean or var).
* ``Scan``: cumulative sum or product along one dim.
* ``Pool``: max or average pooling over the last 1-3 dims.
* ``View``: ``unsqueeze`` / ``squeeze``: a change of size-1 dims only, so it
  can stay inside a kernel.
* ``Lib``: anything run as PyTorch (a convolution, a linear layer, a view
  that moves data, an operation the team does not write): its tensor
  arguments are materialized first.
* ``NormStats``: a norm module's mean and variance: from a reduction, or from
  the module's running statistics when it uses them (BatchNorm in eval mode).
* ``Loop``: a host ``for`` loop whose length is not known when the code is
  written (``for layer in self.layers`` over a ModuleList built by a
  comprehension or by appends): its body is a graph of its own, run once per
  iteration as a nested function; ``Carried`` is one value it updates.

A forward that branches on host values (``if self.use_bias:``) is read once
per outcome: ``Branch`` holds the condition and the two readings, ``Variant``
one straight-line reading; the generated forward tests the condition first.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(eq=False)
class Value:
    def operands(self) -> tuple["Value", ...]:
        return ()


@dataclass(eq=False)
class Leaf(Value):
    expr: str  # Python expression in forward
    const: float | None = None  # a literal number: written into the kernel as a literal

    @staticmethod
    def number(v: float) -> "Leaf":
        return Leaf(repr(float(v)), const=float(v))


@dataclass(eq=False)
class Pointwise(Value):
    op: str  # a name in ``ops.ARITY``
    args: tuple[Value, ...]

    def operands(self) -> tuple[Value, ...]:
        return self.args


@dataclass(eq=False)
class Reduction(Value):
    acc: str  # an accumulator: a key of ``kernels.STATES`` (sum, max, min, prod, lse, moments, argmax, argmin)
    x: Value
    dims: str  # Python expression: an int, a tuple/list of ints, None (all), or a runtime marker (see runtime)
    keepdim: str = "False"
    finish: str = ""  # sum|mean|max|min|prod|lse|sqrt|index; '' for moments (its Parts)
    groups: str = ""  # moments of a GroupNorm: the number of groups (dim 1 split into groups)
    eps: str = ""  # moments: added to the variance by the consumer (kept here for the description)

    def operands(self) -> tuple[Value, ...]:
        return (self.x,)


@dataclass(eq=False)
class Part(Value):
    of: Value  # a Reduction with acc == "moments", or a NormStats
    name: str  # mean | var

    def operands(self) -> tuple[Value, ...]:
        return (self.of,)


@dataclass(eq=False)
class NormStats(Value):
    """Mean and variance for a norm module: batch statistics (``moments``), or the
    module's running ones when ``running`` holds at run time (BatchNorm / InstanceNorm
    with running statistics, not training)."""

    moments: Reduction
    module: str  # "self.bn"
    kind: str  # batch | instance
    track: bool = False  # update the running statistics in training mode (BatchNorm)

    def operands(self) -> tuple[Value, ...]:
        return (self.moments,)


@dataclass(eq=False)
class Scan(Value):
    op: str  # sum | prod
    x: Value
    dim: str
    reverse: bool = False

    def operands(self) -> tuple[Value, ...]:
        return (self.x,)


@dataclass(eq=False)
class Pool(Value):
    op: str  # max | avg
    x: Value
    nd: int  # 1, 2 or 3 spatial dims
    cfg: str  # Python expression giving the runtime helper's pool configuration

    def operands(self) -> tuple[Value, ...]:
        return (self.x,)


@dataclass(eq=False)
class View(Value):
    x: Value
    method: str  # unsqueeze | squeeze
    args: str  # Python text of the arguments

    def operands(self) -> tuple[Value, ...]:
        return (self.x,)


@dataclass(eq=False)
class Lib(Value):
    code: str  # Python expression with {0}, {1}, ... for the tensor arguments
    args: tuple[Value, ...]
    what: str = ""  # a short name for descriptions: "self.conv", "torch.matmul"
    module_class: str = ""  # the nn module called ("Linear"), when it is a module call

    def operands(self) -> tuple[Value, ...]:
        return self.args


@dataclass(eq=False)
class Loop(Value):
    target: str  # the loop's target as Python ("layer", "i, layer")
    iterable: str  # Python expression ("self.layers", "enumerate(self.layers)")
    args: tuple[Value, ...]  # the carried values' values before the loop, then the outer values the body reads
    body: "Graph"  # params: the target names, then one per arg; outputs: the carried values after one turn
    body_values: list[Value]
    carried: int

    def operands(self) -> tuple[Value, ...]:
        return self.args


@dataclass(eq=False)
class Carried(Value):
    of: Loop
    index: int

    def operands(self) -> tuple[Value, ...]:
        return (self.of,)


@dataclass
class PyAssign:
    """A Python statement of forward that computes no tensor (``b, c, h, w = x.shape``):
    emitted as is, after the value whose shape it reads (``after``)."""

    target: str
    expr: str  # may hold {shape} for the shape of ``after``
    after: Value | None = None


@dataclass
class Graph:
    params: list[str]  # forward's parameters, in order
    outputs: list[Value]
    tuple_output: bool  # forward returns a tuple (or list) of values
    statements: list[PyAssign] = field(default_factory=list)

    def live(self) -> list[Value]:
        """Every value the outputs need, each after its operands (creation order kept)."""
        order: list[Value] = []
        seen: set[int] = set()
        for out in self.outputs:
            stack: list[tuple[Value, bool]] = [(out, False)]
            while stack:
                v, done = stack.pop()
                if done:
                    if id(v) not in seen:
                        seen.add(id(v))
                        order.append(v)
                    continue
                if id(v) in seen:
                    continue
                stack.append((v, True))
                for o in reversed(v.operands()):
                    if id(o) not in seen:
                        stack.append((o, False))
        return order

    def consumers(self) -> dict[int, list[Value]]:
        out: dict[int, list[Value]] = {}
        for v in self.live():
            for o in v.operands():
                out.setdefault(id(o), []).append(v)
        return out


@dataclass
class Variant:
    """One straight-line reading of forward (``values``: every value by number, for the shape tokens)."""

    graph: Graph
    values: list[Value]


@dataclass
class Branch:
    """``condition`` (Python over the model's attributes, globals and the inputs) chooses ``then`` or ``other``."""

    condition: str
    then: "Variant | Branch"
    other: "Variant | Branch"

    def variants(self) -> list[Variant]:
        out: list[Variant] = []
        for side in (self.then, self.other):
            out.extend(side.variants() if isinstance(side, Branch) else [side])
        return out
