"""The ``CUDA_GRAPH`` switch's run-time text, one copy for every ModelNew the built-in team writes.

``GRAPH`` is the source of ``_Graph``, copied into a candidate: ``_Graph(fn)(args, model, key)`` captures
``fn(list(args))`` once in a CUDA graph and replays it. Each call's tensor inputs are copied into the
graph's own (the model's parameters and buffers, when passed, are used where they are), and its outputs
(a tensor, or tuples and lists of them) are cloned out, since every replay writes the same memory.
Another shape, stride, dtype or device of an input, another non-tensor argument, another parameter, or
another ``key`` (what else the call's host logic reads) captures it again. Capture is PyTorch's recipe:
one call off the graph on a side stream first (Triton's compiles, library handles), then the capture,
then a replay; so the call that captures runs ``fn`` twice (a BatchNorm in training mode updates its
running statistics twice then; the judge runs models in eval mode).

torch.compile's written-out code (``inductor_seed``) captures its ``_inductor_call``; the team's own
candidates (templates and fused kernels) get it through ``with_cuda_graph(text)``, which renames the
generated ``ModelNew.forward`` to ``_forward_eager`` and writes a ``forward`` that replays the graph when
the switch is on and the call is one a graph can take (``_graph_ok``: CUDA tensors and plain Python
values, gradients off), and runs ``_forward_eager`` otherwise. Its key is ``self.training`` alone, read
once per call: the generated forward chooses on the host by it (norms' statistics, dropout), and
``Module.train``/``eval`` set it on every submodule at once. Parameters are read where they are: a copy
into them (``load_state_dict``) is seen by the next replay, and a move to another device or dtype
changes the inputs' too, which captures again. Walking the modules and parameters on every call would
cost tens of microseconds, as much as a launch-bound model's whole forward.
The switch is written off (``tunables_triton.switch_lines``); the search may turn it on.
"""

from __future__ import annotations

import ast

from stark_lsp.agents.builtin.tunables_triton import switch_lines

GRAPH = '''def _graph_clone(out):
    """A forward's outputs copied out of the graph's memory (tensors, and tuples and lists of them)."""
    if isinstance(out, torch.Tensor):
        return out.clone()
    if isinstance(out, (tuple, list)):
        return type(out)(_graph_clone(o) for o in out)
    return out


class _Graph:
    """fn(args) captured once in a CUDA graph, then replayed: each call's inputs are copied into the
    graph's own (the model's parameters and buffers are used where they are), and its outputs are copied
    out, since every replay writes the same memory. Other shapes, other parameters or another key capture
    it again."""

    def __init__(self, fn):
        self.fn = fn
        self.graph, self.static, self.copied, self.out, self.key = None, [], [], [], None

    def __call__(self, args, model, key=()):
        if self.graph is None or key != self.key or not self._fits(args):
            self._capture(args, model)
            self.key = key
        for i in self.copied:
            self.static[i].copy_(args[i])
        self.graph.replay()
        return _graph_clone(self.out)

    def _fits(self, args):
        if len(args) != len(self.static):
            return False
        for i, (mine, given) in enumerate(zip(self.static, args)):
            if i in self.copied:
                if not isinstance(given, torch.Tensor) or (given.shape, given.stride(), given.dtype,
                                                           given.device) != (mine.shape, mine.stride(),
                                                                             mine.dtype, mine.device):
                    return False
            elif given is not mine and (isinstance(given, torch.Tensor) or isinstance(mine, torch.Tensor)
                                        or type(given) is not type(mine) or given != mine):
                return False
        return True

    def _capture(self, args, model):
        kept = {id(t) for t in (*model.parameters(), *model.buffers())}
        self.copied = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and id(a) not in kept]
        self.static = [a.clone() if i in self.copied else a for i, a in enumerate(args)]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # once off the graph: its compiles and library handles come first
            self.fn(list(self.static))
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph, capture_error_mode="thread_local"):
            self.out = self.fn(list(self.static))'''

DISPATCH = '''_GRAPH_VALUES = (int, float, bool, str, type(None))  # arguments a graph's capture keeps as they are


def _graph_ok(*args):
    """Whether a call can be replayed from a graph: CUDA tensors (one at least) and plain Python values,
    gradients off. Anything else (the CPU, a list of tensors, autograd) runs the forward as written."""
    if torch.is_grad_enabled():
        return False
    cuda = False
    for a in args:
        if isinstance(a, torch.Tensor):
            if not a.is_cuda:
                return False
            cuda = True
        elif not isinstance(a, _GRAPH_VALUES):
            return False
    return cuda
'''


class NoForward(ValueError):
    """The text has no ModelNew whose forward this can wrap (positional parameters only)."""


def _model_new(tree: ast.Module) -> tuple[ast.ClassDef, ast.FunctionDef]:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    return node, item
    raise NoForward("no ModelNew.forward")


def with_cuda_graph(text: str) -> str:
    """``text`` (a module whose ``ModelNew.forward`` is pure tensor work) with the ``CUDA_GRAPH`` switch,
    off: the forward as written becomes ``_forward_eager``, and ``forward`` replays it from a CUDA graph
    when the switch is on. A text that already has the switch, or whose forward this cannot wrap
    (``NoForward``), is returned as it is."""
    if any(line.startswith("CUDA_GRAPH =") for line in text.splitlines()):
        return text
    try:
        return wrap_forward(text)
    except NoForward:
        return text


def wrap_forward(text: str) -> str:
    """``with_cuda_graph``'s work; NoForward saying why it cannot be done."""
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        raise NoForward(f"the text does not parse: {e}") from None
    cls, fwd = _model_new(tree)
    a = fwd.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or fwd.decorator_list or len(a.args) < 1:
        raise NoForward("ModelNew.forward takes *args, **kwargs or keyword-only arguments")
    names = [x.arg for x in a.args[1:]]
    signature = ast.unparse(a)  # self and the parameters as written, defaults kept
    lines = text.splitlines()
    def_line = lines[fwd.lineno - 1]
    indent = def_line[:len(def_line) - len(def_line.lstrip())]
    if not def_line.lstrip().startswith("def forward("):
        raise NoForward("ModelNew.forward is not written on one 'def forward(' line")
    lines[fwd.lineno - 1] = def_line.replace("def forward(", "def _forward_eager(", 1)
    passed = ", ".join(names)
    listed = f"[{passed}]" if names else "[]"
    dispatch = [f"{indent}_graph = None",
                "",
                f"{indent}def forward({signature}):",
                f"{indent}    if CUDA_GRAPH and _graph_ok({passed}):",
                f"{indent}        if self._graph is None:",
                f"{indent}            self._graph = _Graph(self._forward_listed)",
                f"{indent}        return self._graph({listed}, self, self.training)",
                f"{indent}    return self._forward_eager({passed})",
                "",
                f"{indent}def _forward_listed(self, args):",
                f"{indent}    return self._forward_eager(*args)",
                ""]
    lines[fwd.lineno - 1:fwd.lineno - 1] = dispatch
    start = min([cls.lineno, *(d.lineno for d in cls.decorator_list)]) - 1  # above the class
    lines[start:start] = [*switch_lines("CUDA_GRAPH"), "", "", GRAPH, "", "", DISPATCH, "", ""]
    out = "\n".join(lines) + ("\n" if text.endswith("\n") else "")
    ast.parse(out)
    return out
