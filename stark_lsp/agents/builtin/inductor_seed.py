"""A ``ModelNew`` written out from what torch.compile's Inductor generated for the model.

The torch.compile baseline's process keeps Inductor's output module for the task's model, what
each of its graph's inputs is, and the launch configuration its autotuner chose for each Triton
kernel (``evaluate/candidate/compiled_capture.py``). ``write_seed`` turns that into plain code
the search can tune, the text that replaces ``class ModelNew(Model): pass``:

* each Triton kernel as a plain ``@triton.jit`` function (Inductor's own body, without its
  autotuning decorator);
* ``_inductor_call(args)``: Inductor's ``call`` with every ``kernel.run(...)`` turned into an
  explicit launch, ``kernel[grid](..., XBLOCK=..., num_warps=4, num_stages=1)``, at the
  configuration Inductor chose. The block sizes are module constants (``BLOCK_X_0 = 1024``) and
  ``num_warps`` / ``num_stages`` launch keywords: the forms the built-in Plan agent tunes. A
  dimension whose masks Inductor left out (its size a multiple of every block it considered) gets
  its block through ``_fit``, so that no tuned value can run past the end; a persistent
  reduction's whole-row block is marked ``# stark: fixed`` and never tuned;
* ``ModelNew(Model)``, whose ``forward`` passes the model's own parameters and buffers and its
  inputs in the order of Inductor's graph;
* a switch, ``CUDA_GRAPH = False``, which the search may turn on: ``_inductor_call`` is then captured
  once in a CUDA graph and replayed, the call's inputs copied into the graph's and its outputs copied
  out (``_Graph``, ``cuda_graph_text``), so that a model whose kernels are shorter than their launches pays
  one launch.

Library calls Inductor makes (``extern_kernels.mm``, ``convolution``...) stay library calls.
Anything this cannot write out faithfully (several graphs, kernels other than pointwise and
reductions, grids other than 1-D and 2-D (y may overflow into z), an unexpected launch) raises ``NotRecognized`` with the
reason: the other starting points remain. The result is checked only for syntax here; the judge
verifies and times it like any candidate.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from stark_lsp.agents.builtin.cuda_graph_text import GRAPH as _GRAPH
from stark_lsp.agents.builtin.inductor_imports import Imports, without_inductor
from stark_lsp.agents.builtin.kb_ast import NotRecognized, model_methods
from stark_lsp.agents.builtin.tunables_triton import switch_lines

DESCRIPTION = "torch.compile's code"  # in the plan's instruction and the node's summary
KINDS = ("pointwise", "reduction", "persistent_reduction")
GRIDS = ("Grid1D", "Grid2D", "Grid2DWithYZOverflow")
_KERNEL_START = re.compile(r"^(?P<var>\w+) = async_compile\.triton\('(?P<name>\w+)', '''", re.M)
_KERNEL_END = "''', device_str='cuda')"
MAX_KERNELS = 500
_DECORATOR = re.compile(r"^@triton_heuristics\.(?P<kind>\w+)\(", re.M)
_GRID_TYPE = re.compile(r"'grid_type':\s*'(?P<grid>\w+)'")
_SIGNATURE = re.compile(r"'signature':\s*\{(?P<body>[^{}]*)\}")
_PAIR = re.compile(r"'(?P<name>\w+)':\s*'(?P<type>[^']*)'")
_RUN = re.compile(r"^(?P<indent>\s*)(?P<name>\w+)\.run\((?P<args>.*)\)\s*$")
_CONSTEXPR_LINE = re.compile(r"^(\s*\w+\s*:\s*tl\.constexpr\s*=\s*\d+)\s*$")
_DIMS = (("x", 0), ("y", 1), ("z", 2))
_BLOCK_PARAM = re.compile(r"^(?:[XYZ]BLOCK|R\d_BLOCK)$")
MAX_GRID_Y = 65535  # CUDA's limit on a grid's y and z
_SKIPPED_HEADER = {"AsyncCompile", "async_compile", "get_raw_stream", "start_graph", "end_graph"}


@dataclass
class _Kernel:
    name: str
    kind: str
    grid: str
    params: list[str]  # in order, constexprs included
    constexprs: list[str]
    body: str  # "@triton.jit\ndef ...": Inductor's kernel without its decorator
    unmasked: set[str]  # dimensions whose masks Inductor left out ("x", "y", "r0_")


def _found_kernels(code: str) -> list[tuple[str, str, str, int, int]]:
    """(variable, name, source, start, end) of each ``async_compile.triton`` in ``code``, in one pass:
    each kernel's end is looked for once, from its start (an unterminated one ends the reading)."""
    out, pos = [], 0
    while True:
        m = _KERNEL_START.search(code, pos)
        if m is None:
            return out
        end = code.find(_KERNEL_END, m.end())
        if end < 0:
            raise NotRecognized(f"the kernel {m.group('name')} has no end")
        out.append((m.group("var"), m.group("name"), code[m.end():end], m.start(), end + len(_KERNEL_END)))
        if len(out) > MAX_KERNELS:
            raise NotRecognized(f"more than {MAX_KERNELS} kernels")
        pos = end + len(_KERNEL_END)


_WRITTEN: dict[str, str | NotRecognized] = {}  # the last few write_seed results (a plan asks several times)


def write_seed(compiled: dict[str, Any], source: str) -> str:
    """The text that replaces the ``ModelNew`` stub of ``source``, or NotRecognized saying why
    (whatever is wrong with ``compiled``: it is the baseline process's word, checked but not trusted)."""
    try:
        key = hashlib.sha256(json.dumps([compiled, source], sort_keys=True, default=str).encode()).hexdigest()
    except (TypeError, ValueError, RecursionError) as e:
        raise NotRecognized(f"torch.compile's code is malformed: {type(e).__name__}") from None
    got = _WRITTEN.get(key)
    if got is None:
        try:
            got = _write_seed(compiled, source)
        except NotRecognized as e:
            got = e
        except Exception as e:  # noqa: BLE001 - malformed input of any kind is a refusal, never a crash
            got = NotRecognized(f"torch.compile's code could not be read: {type(e).__name__}: {str(e)[:200]}")
        if len(_WRITTEN) >= 16:
            _WRITTEN.pop(next(iter(_WRITTEN)))
        _WRITTEN[key] = got
    if isinstance(got, NotRecognized):
        raise NotRecognized(str(got))
    return got


def _write_seed(compiled: dict[str, Any], source: str) -> str:
    code = compiled.get("code")
    if not isinstance(code, str) or not code:
        raise NotRecognized(str(compiled.get("error") or "torch.compile's code is not available"))
    params, signature = _forward_params(source)
    kernels = {k.name: k for k in _kernels(code)}
    if not kernels:
        raise NotRecognized("torch.compile wrote no Triton kernel for this model (only library calls): "
                            "nothing of its own to tune")
    call_lines, outputs = _call_body(code)
    configs = compiled.get("configs") or {}
    if not isinstance(configs, dict):
        raise NotRecognized("the kernels' configurations are not a mapping")
    blocks: list[str] = []
    body: list[str] = []
    order = {name: i for i, name in enumerate(kernels)}
    for line in call_lines:
        m = _RUN.match(line)
        if not m or m.group("name") not in kernels:
            if ".run(" in line:
                raise NotRecognized(f"a launch this cannot write out: {line.strip()[:120]}")
            if re.match(r"^\s*stream\d+ = get_raw_stream\(\d+\)\s*$", line):
                continue  # Triton launches on the current stream
            body.append(line)
            continue
        k = kernels[m.group("name")]
        cfg = configs.get(k.name)
        if not isinstance(cfg, dict):
            raise NotRecognized(f"no launch configuration for {k.name}")
        launch, consts = _launch(k, order[k.name], _split_args(m.group("args")), cfg)
        for c in consts:
            if c not in blocks:
                blocks.append(c)
        body.append(m.group("indent") + launch)
    inputs = [_input_expr(s, params) for s in compiled.get("inputs") or []]
    used = "\n".join(line.split("#", 1)[0] for line in [*(k.body for k in kernels.values()), *body])
    imports = without_inductor(compiled, [k.body for k in kernels.values()], body, _header(code, used))
    text = _render(compiled, imports, blocks, body, inputs, signature, outputs, source)
    try:
        ast.parse(text)
    except SyntaxError as e:
        raise NotRecognized(f"the code written from torch.compile's does not parse: {e}") from e
    return text


def describe(compiled: dict[str, Any]) -> str:
    """One phrase for the plan: how many Triton kernels and library calls Inductor's code has."""
    code = str(compiled.get("code") or "")
    kernels = len(_KERNEL_START.findall(code))
    library = len(re.findall(r"\bextern_kernels\.\w+\(", code))
    parts = [f"{kernels} Triton kernel{'s' if kernels != 1 else ''}"]
    if library:
        parts.append(f"{library} library call{'s' if library != 1 else ''}")
    return f"{DESCRIPTION} (Inductor, torch {compiled.get('torch') or '?'}: {', '.join(parts)})"


# -- reading Inductor's module -------------------------------------------------------------------
def _forward_params(source: str) -> tuple[list[str], str]:
    """Model.forward's parameters after ``self``, and its signature as written (defaults kept)."""
    fwd = model_methods(source)["forward"]
    a = fwd.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or not a.args:
        raise NotRecognized("Model.forward takes *args, **kwargs or keyword-only arguments")
    rest = ast.arguments(posonlyargs=[], args=a.args[1:], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                         defaults=list(a.defaults))
    for x in rest.args:
        x.annotation = None
    return [x.arg for x in rest.args], ast.unparse(rest)


def _kernels(code: str) -> list[_Kernel]:
    others = [m.group(0) for m in re.finditer(r"async_compile\.(?!triton\(|wait\()\w+\(", code)]
    if others:
        raise NotRecognized(f"Inductor's code compiles kernels this cannot write out ({others[0]}...)")
    out = []
    for var, name, src, _, _ in _found_kernels(code):
        if var != name:
            raise NotRecognized(f"a kernel bound to another name ({var})")
        out.append(_kernel(name, src))
    if not out and ".run(" in code:
        raise NotRecognized("Inductor's kernels are not in a form this reads")
    return out


def _kernel(name: str, src: str) -> _Kernel:
    d = _DECORATOR.search(src)
    if d is None:
        raise NotRecognized(f"{name}: no Inductor heuristics decorator")
    kind = d.group("kind")
    if kind not in KINDS:
        raise NotRecognized(f"{name}: a {kind} kernel (only {', '.join(KINDS)} are written out)")
    end = _closing(src, d.end() - 1)
    decorator = src[d.start():end + 1]
    g = _GRID_TYPE.search(decorator)
    if g is None or g.group("grid") not in GRIDS:
        raise NotRecognized(f"{name}: grid {g.group('grid') if g else 'unknown'} (only {', '.join(GRIDS)})")
    sig = _SIGNATURE.search(decorator)
    if sig is None:
        raise NotRecognized(f"{name}: no signature")
    pairs = [(p.group("name"), p.group("type")) for p in _PAIR.finditer(sig.group("body"))]
    body = src[end + 1:].lstrip("\n")
    if not body.startswith("@triton.jit\ndef " + name + "("):
        raise NotRecognized(f"{name}: the decorator is not followed by the kernel")
    body = "\n".join(_CONSTEXPR_LINE.sub(r"\1  # stark: fixed", line) for line in body.rstrip().splitlines())
    unmasked = {p for p in ("x", "y", "r0_") if re.search(rf"^\s*{p}mask = tl\.full\(", body, re.M)}
    grid = g.group("grid")
    for dim, axis in _DIMS:
        if f"{dim}numel" in (n for n, _ in pairs):
            want = rf"^\s*{dim}offset = tl\.program_id\({axis}\) \* {dim.upper()}BLOCK\s*$"
            if grid == "Grid2DWithYZOverflow" and dim == "y":  # y's blocks spread over grid axes 1 and 2
                want = (r"^\s*yoffset = \(tl\.program_id\(1\) \+ tl\.program_id\(2\) \* tl\.num_programs\(1\)\) "
                        r"\* YBLOCK\s*$")
                if "y" in unmasked:
                    raise NotRecognized(f"{name}: its y blocks overflow into grid axis 2 without a mask")
            if not re.search(want, body, re.M):
                raise NotRecognized(f"{name}: its {dim} blocks are not laid out on grid axis {axis}")
    # the blocks are the launch configuration's; any other constexpr (a size of 1, say) is an argument
    # Inductor passes to run() like the rest
    blocks = [n for n, t in pairs if t == "constexpr" and _BLOCK_PARAM.match(n)]
    return _Kernel(name, kind, g.group("grid"), [n for n, _ in pairs], blocks, body, unmasked)


def _closing(text: str, open_at: int) -> int:
    """The index of the parenthesis that closes the one at ``open_at`` (quoted text skipped)."""
    depth, i, quote = 0, open_at, ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise NotRecognized("an unbalanced decorator")


def _call_body(code: str) -> tuple[list[str], int]:
    """Inductor's ``call(args)`` body, dedented to one level, and how many values it returns."""
    tree = ast.parse(code)
    fn = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            fn = node
            break
    if fn is None:
        raise NotRecognized("Inductor's code has no call()")
    lines = code.splitlines()
    first, last = fn.body[0].lineno, fn.end_lineno or fn.body[-1].lineno
    body = lines[first - 1:last]
    indent = min(len(l) - len(l.lstrip()) for l in body if l.strip())
    ret = fn.body[-1]
    if not isinstance(ret, ast.Return) or not isinstance(ret.value, ast.Tuple):
        raise NotRecognized("Inductor's call() does not end by returning a tuple")
    return ["    " + l[indent:] if l.strip() else "" for l in body], len(ret.value.elts)


def _split_args(text: str) -> list[str]:
    out, depth, cur, quote = [], 0, "", ""
    for c in text:
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


def _launch(k: _Kernel, index: int, args: list[str], cfg: dict[str, Any]) -> tuple[str, list[str]]:
    """The explicit launch of ``k`` (for Inductor's ``k.run(args)``) and the module constants it uses."""
    positional = [a for a in args if not re.match(r"^\w+\s*=", a)]
    keywords = [a for a in args if re.match(r"^\w+\s*=", a)]
    if any(not a.replace(" ", "").startswith("stream=") for a in keywords):
        raise NotRecognized(f"{k.name}: a launch keyword this does not know ({keywords})")
    runtime = [p for p in k.params if p not in k.constexprs]
    if len(positional) != len(runtime):
        raise NotRecognized(f"{k.name}: {len(positional)} launch arguments for {len(runtime)} parameters")
    value = dict(zip(runtime, positional))
    kwargs = cfg.get("kwargs") or {}
    consts, launch_kw = [], []
    for c in k.constexprs:
        if c not in kwargs:
            raise NotRecognized(f"{k.name}: the chosen configuration has no {c}")
        dim = c[:-len("BLOCK")].lower() if c.endswith("BLOCK") else ""
        const = f"BLOCK_{dim.upper().rstrip('_') or c}_{index}"
        consts.append(f"{const} = {int(kwargs[c])}")
        numel = value.get(f"{dim}numel") if dim else None
        if dim in k.unmasked and numel is not None:
            launch_kw.append(f"{c}=_fit({const}, {numel})")
        else:
            launch_kw.append(f"{c}={const}")
    grid = []
    for dim, _ in _DIMS:
        numel = value.get(f"{dim}numel")
        if numel is None:
            continue
        block = f"{dim.upper()}BLOCK"
        if block not in k.constexprs:
            raise NotRecognized(f"{k.name}: {dim}numel without a {block}")
        grid.append(f"triton.cdiv({numel}, {next(a for a in launch_kw if a.startswith(block + '=')).split('=', 1)[1]})")
    if not grid:
        raise NotRecognized(f"{k.name}: no grid dimension")
    if k.grid == "Grid2DWithYZOverflow":  # more y blocks than one grid axis holds: the rest on axis 2
        if len(grid) != 2:
            raise NotRecognized(f"{k.name}: an overflowing 2-D grid without both x and y")
        grid = [grid[0], *_overflow(grid[1])]
    launch = (f"{k.name}[({', '.join(grid)},)]({', '.join(positional + launch_kw)}, "
              f"num_warps={int(cfg.get('num_warps', 4))}, num_stages={int(cfg.get('num_stages', 1))})")
    return launch, consts


def _overflow(y_blocks: str) -> list[str]:
    """Grid axes 1 and 2 for ``y_blocks`` blocks of y (the kernel reads its y block as
    ``program_id(1) + program_id(2) * num_programs(1)`` and masks what lies past the end)."""
    z = f"triton.cdiv({y_blocks}, {MAX_GRID_Y})"
    return [f"triton.cdiv({y_blocks}, {z})", z]


def _header(code: str, used_text: str) -> list[str]:
    """Inductor's module-level imports and aliases that the kept code uses."""
    first = _KERNEL_START.search(code)
    pre = code[:first.start()] if first else code[:code.find("class Runner")] if "class Runner" in code else ""
    keep = []
    for line in pre.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        names = _defined(s)
        if not names or names & _SKIPPED_HEADER:
            continue
        if any(re.search(rf"(?<![\w.]){re.escape(n)}\b", used_text) for n in names):
            keep.append(s)
    return keep


def _defined(stmt: str) -> set[str]:
    try:
        node = ast.parse(stmt).body[0]
    except (SyntaxError, IndexError):
        return set()
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    return set()


def _input_expr(what: str, params: list[str]) -> str:
    kind, _, name = what.partition(" ")
    if kind in ("param", "buffer"):
        expr = "self"
        for part in name.split("."):
            if part.isdigit():
                expr += f"[{part}]"
            elif part.isidentifier():
                expr += f".{part}"
            else:
                raise NotRecognized(f"an input of the compiled graph this cannot name ({what[:80]})")
        return expr
    if kind == "input" and name.isdigit() and int(name) < len(params):
        return params[int(name)]
    raise NotRecognized(f"an input of the compiled graph this cannot name ({what})")


# -- writing it out -----------------------------------------------------------------------------
_FIT = '''def _fit(block, n):
    """The block, halved until it divides n: Inductor left this dimension's masks out."""
    while block > 1 and n % block:
        block //= 2
    return block'''


def _render(compiled: dict[str, Any], imported: Imports, blocks: list[str],
            body: list[str], inputs: list[str], signature: str, outputs: int, source: str) -> str:
    single = _returns_single(source)
    if single and outputs != 1:
        raise NotRecognized(f"Inductor's call returns {outputs} values for a forward that returns one")
    imports = ["import torch", "import triton", "import triton.language as tl"]
    helpers = [h for h in imported.header if h not in imports]
    out = [f"# {describe(compiled)}, written out as plain Triton by the built-in team.",
           "# Inductor's kernels and launches at the configuration its autotuner chose; the search tunes it from here.",
           *imports, *imported.kernel_imports, *helpers, "", ""]
    if any("extern_kernels.convolution(" in line for line in body):
        out += [*switch_lines("CUDNN_BENCHMARK"), "", ""]
    for d in imported.definitions:  # in place of Inductor's imports (inductor_imports.py)
        out += [d, "", ""]
    for k in imported.kernels:
        out += [k, "", ""]
    if any("_fit(" in line for line in body):
        out += [_FIT, "", ""]
    out += ["# launch configuration (Inductor's choice): block sizes per kernel", *blocks, "", ""]
    out += ["def _inductor_call(args):", *body, "", ""]
    out += [*switch_lines("CUDA_GRAPH"), "", "", _GRAPH, "", ""]
    ret = "out[0]" if single else "tuple(out)"
    out += ["class ModelNew(Model):",
            '    """Model.forward as torch.compile (Inductor) wrote it, as plain Triton kernels and library calls."""',
            "",
            "    _graph = None",
            "",
            f"    def forward(self, {signature}):",
            f"        args = [{', '.join(inputs)}]",
            "        if CUDA_GRAPH:",
            "            if self._graph is None:",
            "                self._graph = _Graph(_inductor_call)",
            "            out = self._graph(args, self)",
            "        else:",
            "            out = _inductor_call(args)",
            f"        return {ret}", ""]
    return "\n".join(out)


def _returns_single(source: str) -> bool:
    """Whether Model.forward returns one value (not a literal tuple or list)."""
    fwd = model_methods(source)["forward"]
    returns = [n for n in ast.walk(fwd) if isinstance(n, ast.Return) and n.value is not None]
    return not any(isinstance(r.value, (ast.Tuple, ast.List)) for r in returns)
