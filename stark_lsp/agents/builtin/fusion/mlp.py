"""MLPs whose layers are known only at run time: each Linear and its activation as one GEMM launch.

KernelBench's level-3 MLPs build their layers in a loop (``nn.Sequential(*layers)``, a ``ModuleList``
appended to) and call them from a forward the reader cannot see into: ``return self.network(x)``, or
``for layer in self.layers: x = F.relu(layer(x))``. ``read_mlp(source)`` recognizes a forward made of
such calls only: statements ``x = <chain>`` and one final ``return <chain>`` on its one input, where a
chain applies, innermost first, layers of the model (``self.net``, ``self.layers[-1]``, a loop's
variable) and library functions of the running value with constant settings (``F.relu(x)``,
``F.gelu(x, approximate='tanh')``, ``x.tanh()``), and loops ``for layer in self.layers[...]`` of such
statements; at least one container (Sequential / ModuleList) must be one whose layers the reader does
not know (else the fused kernels of ``fusion`` read them one by one).

``render_mlp(source)`` writes a ``ModelNew`` whose forward lists the layers it would call at run
time and runs them by a plan made once per list of layers (``mlp_runtime``): each plain ``nn.Linear``
and the elementwise activation after it is one launch of ``gemm_epilogue``'s GEMM kernel with the bias
and the activation applied before its store (an ``ACT`` switch over ReLU, GELU, Tanh, Sigmoid, SiLU,
LeakyReLU), anything else a PyTorch call. Its tile sizes are module constants and the launch's warps
and stages literals, so the search tunes them (``STARTS``).
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field
from pathlib import Path

from stark_lsp.agents.builtin.kb_ast import library_function, model_methods

from . import ops
from .gemm_epilogue import _kernel
from .loops import CONTAINERS, container_items, module_ref
from .reader import _init_attrs

DESCRIPTION = "layers planned at run time"
RUNTIME_FILE = Path(__file__).with_name("mlp_runtime.py")  # copied into the candidate
# starting points: the defaults (a 64x64x32 tile, 4 warps, 3 stages), a short tile for a batch of a few rows,
# a wide one for large batches, a narrow one
STARTS: list[dict[str, int]] = [
    {}, {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 128, "num_warps": 4, "num_stages": 3},
    {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "num_warps": 8, "num_stages": 3},
    {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 64, "num_warps": 2, "num_stages": 4}]
# the kernel's ACT codes (mlp_runtime._stark_act_of gives the same for the modules)
ACT_CODES = {"relu": 1, "gelu": 2, "gelu_tanh": 3, "tanh": 4, "sigmoid": 5, "silu": 6, "leaky_relu": 7}
_METHODS = ("relu", "tanh", "sigmoid")  # x.relu() ...


class _NotMlp(Exception):
    pass


@dataclass
class MlpForward:
    param: str
    lines: list[str] = field(default_factory=list)  # forward's body
    acts: list[str] = field(default_factory=list)  # module-level _StarkAct definitions
    containers: list[str] = field(default_factory=list)  # the layers' attributes, in order
    unseen: bool = False  # a container whose layers the reader does not know

    def describe(self) -> str:
        names = ", ".join(dict.fromkeys(self.containers))
        return (f"{DESCRIPTION} ({names}): each nn.Linear with the activation after it one Triton GEMM launch, "
                f"bias and activation fused, other layers in PyTorch")


def is_mlp_instruction(instruction: str, prefix: str) -> bool:
    return instruction.strip().startswith(f"{prefix}: {DESCRIPTION}")


def _const(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def _self_root(node: ast.expr) -> str | None:
    """'net' for self.net, self.net[-1], self.net[1:3] (constant subscripts only), else None."""
    while isinstance(node, ast.Subscript):
        if not _const(node.slice) and not (isinstance(node.slice, ast.Slice) and all(
                p is None or _const(p) for p in (node.slice.lower, node.slice.upper, node.slice.step))):
            return None
        node = node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


class _Reader:
    def __init__(self, param: str, attrs: dict):
        self.form = MlpForward(param)
        self.attrs = attrs

    def layer(self, node: ast.expr, loop_vars: tuple[str, ...]) -> str:
        if isinstance(node, ast.Name) and node.id in loop_vars:
            return node.id
        root = _self_root(node)
        if root is None or root not in self.attrs:  # a method, or an attribute __init__ does not set
            raise _NotMlp
        self.form.containers.append(f"self.{root}")
        self.note(root)
        return ast.unparse(node)

    def note(self, root: str) -> None:
        """Mark the form unseen when ``self.<root>`` is a container whose layers the reader does not know."""
        if root in self.attrs["__unsure__"] or not isinstance(self.attrs.get(root), ast.Call):
            self.form.unseen = True
            return
        ref = module_ref(f"self.{root}", self.attrs[root])
        if ref.cls in CONTAINERS and container_items(ref) is None:
            self.form.unseen = True

    def act(self, call: ast.Call, inner: ast.expr) -> str:
        """The name of a module-level _StarkAct for this call of the running value."""
        name = library_function(call.func)
        method = isinstance(call.func, ast.Attribute) and call.func.value is inner
        if method:
            if call.func.attr not in _METHODS or call.args or call.keywords:
                raise _NotMlp
            name = call.func.attr
            fn = copy.copy(call)
            fn.func = ast.Attribute(ast.Name("_v"), call.func.attr)
        else:
            if not name or not call.args or call.args[0] is not inner or \
                    not all(_const(a) for a in call.args[1:]) or not all(_const(k.value) for k in call.keywords):
                raise _NotMlp
            fn = copy.copy(call)
            fn.args = [ast.Name("_v")] + list(call.args[1:])
        code, slope = self.code(name, call, method)
        var = f"_STARK_ACT{len(self.form.acts)}"
        self.form.acts.append(f"{var} = _StarkAct({code}, {slope!r}, lambda _v: {ast.unparse(fn)})")
        return var

    @staticmethod
    def code(name: str, call: ast.Call, method: bool) -> tuple[int | None, float]:
        """The kernel's ACT code and slope of a library function (None: called as PyTorch)."""
        if method:
            return ACT_CODES[name], 0.0
        kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
        pos = [ast.literal_eval(a) for a in call.args[1:]]
        if name == "gelu":
            approx = kw.get("approximate", pos[0] if pos else "none")
            return {"none": ACT_CODES["gelu"], "tanh": ACT_CODES["gelu_tanh"]}.get(approx), 0.0
        if name == "leaky_relu":
            slope = kw.get("negative_slope", pos[0] if pos else 0.01)
            return (ACT_CODES[name], float(slope)) if isinstance(slope, (int, float)) else (None, 0.0)
        if name in ("relu", "tanh", "sigmoid", "silu") and not pos and set(kw) <= {"inplace"}:
            return ACT_CODES[name], 0.0
        return None, 0.0

    def chain(self, e: ast.expr, loop_vars: tuple[str, ...]) -> list[str]:
        """forward lines that add what ``e`` applies to the running value, innermost first."""
        if isinstance(e, ast.Name) and e.id == self.form.param:
            return []
        if not isinstance(e, ast.Call):
            raise _NotMlp
        if library_function(e.func):
            if not e.args:
                raise _NotMlp
            return self.chain(e.args[0], loop_vars) + [f"_stark_items.append({self.act(e, e.args[0])})"]
        if isinstance(e.func, ast.Attribute) and isinstance(e.func.value, (ast.Call, ast.Name)) and \
                e.func.attr in _METHODS and _self_root(e.func) is None:
            return self.chain(e.func.value, loop_vars) + [f"_stark_items.append({self.act(e, e.func.value)})"]
        if len(e.args) != 1 or e.keywords:
            raise _NotMlp
        layer = self.layer(e.func, loop_vars)
        return self.chain(e.args[0], loop_vars) + [f"_stark_items += _stark_open({layer})"]

    def statements(self, body: list[ast.stmt], loop_vars: tuple[str, ...], top: bool) -> list[str]:
        lines: list[str] = []
        for i, s in enumerate(body):
            if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and i == 0:
                continue  # a docstring
            if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name) \
                    and s.targets[0].id == self.form.param:
                lines += self.chain(s.value, loop_vars)
            elif isinstance(s, ast.Return) and top and i == len(body) - 1 and s.value is not None:
                lines += self.chain(s.value, loop_vars)
                lines.append(f"return _stark_mlp(self, _stark_items, {self.form.param})")
            elif isinstance(s, ast.For) and not s.orelse and isinstance(s.target, ast.Name) \
                    and s.target.id != self.form.param and _self_root(s.iter) in self.attrs:
                self.form.containers.append(f"self.{_self_root(s.iter)}")
                self.note(_self_root(s.iter))  # type: ignore[arg-type]
                inner = self.statements(s.body, loop_vars + (s.target.id,), False)
                lines += [f"for {s.target.id} in {ast.unparse(s.iter)}:"] + ["    " + x for x in inner or ["pass"]]
            else:
                raise _NotMlp
        if top and not (lines and lines[-1].startswith("return ")):
            raise _NotMlp
        return lines


def read_mlp(source: str) -> MlpForward | None:
    """The forward as a run-time plan of layers (module docstring), or None when it is not of that form
    or the reader knows every layer it calls."""
    try:
        methods = model_methods(source)
    except ValueError:
        return None
    fwd = methods["forward"].args
    if fwd.vararg or fwd.kwarg or fwd.kwonlyargs or fwd.defaults or len(fwd.args) != 2:
        return None
    r = _Reader(fwd.args[1].arg, _init_attrs(methods.get("__init__")))
    try:
        body = r.statements(methods["forward"].body, (), True)
    except _NotMlp:
        return None
    if not r.form.unseen:
        return None
    r.form.lines = ["_stark_items = []"] + body
    return r.form


def _act_lines() -> list[str]:
    """The kernel's epilogue: y0 = the activation ACT selects of the accumulator (plus bias)."""
    lines: list[str] = []
    for op, code in ACT_CODES.items():
        temps: list[str] = []

        def temp(expr: str, temps: list[str] = temps, code: int = code) -> str:
            temps.append(f"t{code}_{len(temps)} = {expr}")
            return temps[-1].split(" = ", 1)[0]

        out = ops.emit(op, ["acc"] + (["slope"] if op == "leaky_relu" else []), temp)
        lines += [f"{'if' if code == 1 else 'elif'} ACT == {code}:  # {op}"] + ["    " + t for t in temps]
        lines.append(f"    y0 = {out}")
    return lines + ["else:", "    y0 = acc"]


def runtime_text() -> str:
    """mlp_runtime's text without its module docstring (read as text: the team never imports it)."""
    return RUNTIME_FILE.read_text().split('"""', 2)[2].strip("\n") + "\n"


def render_mlp(source: str) -> str:
    """The text that replaces ``class ModelNew(Model): pass`` (``NotRecognized`` is the caller's to raise
    when ``read_mlp`` gives None)."""
    form = read_mlp(source)
    if form is None:
        from stark_lsp.agents.builtin.kb_ast import NotRecognized

        raise NotRecognized("forward is not a run of layers from a container (an MLP) the reader cannot see")
    kernel = _kernel(0, -1, _act_lines(), "y0", False, name="_stark_mlp_gemm", extra="slope, ACT: tl.constexpr, ")
    body = "".join(f"        {line}\n" for line in form.lines)
    acts = "".join(f"{a}\n" for a in form.acts)
    return ("# Helpers of the MLP ModelNew, written by the STARK built-in team.\n" + runtime_text() + kernel
            + ("\n\n" + acts if acts else "") + f'''

class ModelNew(Model):
    """{form.describe()} (written by the built-in team)"""

    def forward(self, {form.param}):
{body}''')
