"""Triton kernel text for the four kinds of fused kernel: elementwise, reduction (with the second
kernel of a split reduction), scan and pool. Each takes the kernel's ``Tree`` (statements over the
operands ``x<i>``) and the index slots the runtime packers (``runtime._stark_pointwise``,
``_stark_reduce``, ``_stark_scan``, ``_stark_pool``) fill in, argument for argument.

Operand i arrives as ``a<i>`` (a pointer, or a number when its mode ``M<i>`` is 0) with one stride
per slot (``a<i>_s<k>``); arithmetic is in ``CDT`` (fp32, or fp64 for fp64 outputs).
"""

from __future__ import annotations

from .trees import Tree

INDENT = "    "


def _indent(lines: list[str], depth: int) -> str:
    pad = INDENT * depth
    return "".join(f"{pad}{line}\n" for line in lines)


def _op_params(n: int, slots: int) -> str:
    return "".join(f"a{i}, " + "".join(f"a{i}_s{k}, " for k in range(slots)) for i in range(n))


def _sizes(names: str) -> str:
    """Sizes are never specialized (a size of 1 would become a constant and change the arithmetic's types).
    What the compiler loses by that, that a vector's size is a multiple of 16, comes back through
    ``_aligned``."""
    return ", ".join(repr(n) for n in names.split())


def _aligned(size: str, align: str) -> str:
    """``size`` rewritten as a visible multiple of the constexpr ``align`` (the runtime's ``_stark_align``:
    a power of two that divides it, so the value is unchanged). Triton's analysis then knows a mask
    ``i < size`` over a contiguous ``i`` is constant over ``align`` elements, and loads and stores that
    many elements as one vector; without it every masked access is one element."""
    return f"{size} = {size} // {align} * {align}"


def _modes(n: int) -> str:
    return "".join(f"M{i}: tl.constexpr, " for i in range(n))


def _loads(tree: Tree, offset: str, mask: str) -> list[str]:
    """Load every operand: ``offset`` is a format with {i} for the operand's offset expression."""
    out = []
    for i in range(len(tree.operands)):
        out.append(f"if M{i} == 1:")
        out.append(f"    x{i} = tl.load(a{i} + ({offset.format(i=i)}), mask={mask}, other=0).to(CDT)")
        out.append("else:")
        out.append(f"    x{i} = a{i}")
    return out


def _result(tree: Tree, zero: str) -> str:
    """The root value as a full tile (a tree of numbers alone would be a scalar)."""
    return f"({tree.result}) + {zero}"


# -- elementwise ------------------------------------------------------------------------------
def pointwise_kernel(name: str, tree: Tree, doc: str) -> str:
    n = len(tree.operands)
    body = _loads(tree, "i0 * a{i}_s0 + i1 * a{i}_s1 + i2 * a{i}_s2 + i3 * a{i}_s3", "mask") + tree.lines
    store = "y != 0.0" if tree.boolean else "y.to(y_ptr.dtype.element_ty)"
    return f'''
@triton.jit(do_not_specialize=["G0", "G1", "G2", "G3", "N"])
def {name}(y_ptr, {_op_params(n, 4)}G0, G1, G2, G3, N, {_modes(n)}CDT: tl.constexpr, FLAT: tl.constexpr,
           BLOCK: tl.constexpr, ALIGN: tl.constexpr):
    # {doc}
    {_aligned("G3", "ALIGN")}
    {_aligned("N", "ALIGN")}
    pid = tl.program_id(0).to(tl.int64)
    if FLAT:  # one vector over every element
        f = pid * BLOCK + tl.arange(0, BLOCK)
        mask = f < N
        i3 = f % G3
        t = f // G3
        i2 = t % G2
        t = t // G2
        i1 = t % G1
        i0 = t // G1
        yoff = f
    else:  # the outer groups are scalars of this program, the last group a vector
        nb = tl.cdiv(G3, BLOCK)
        o = pid // nb
        i3 = (pid % nb) * BLOCK + tl.arange(0, BLOCK)
        mask = i3 < G3
        i2 = o % G2
        i1 = (o // G2) % G1
        i0 = o // (G2 * G1)
        yoff = o * G3 + i3
{_indent(body, 1)}    y = {_result(tree, "tl.zeros([BLOCK], CDT)")}
    tl.store(y_ptr + yoff, {store}, mask=mask)
'''


# -- reductions --------------------------------------------------------------------------------
# per accumulator: the states it keeps, their workspace dtype, and the code
STATES = {"sum": ["s"], "prod": ["s"], "max": ["s"], "min": ["s"], "lse": ["m", "s"],
          "moments": ["s1", "s2", "c"], "argmax": ["m", "i"], "argmin": ["m", "i"]}
STATE_DTYPES = {("argmax", "i"): "torch.int64", ("argmin", "i"): "torch.int64"}
OUTPUTS = {"moments": ["mean", "var"]}  # every other accumulator: one output


def _init(acc: str) -> list[str]:
    tile = "[BLOCK_R, BLOCK_K]"
    return {
        "sum": [f"acc = tl.zeros({tile}, CDT)"],
        "prod": [f"acc = tl.full({tile}, 1.0, CDT)"],
        "max": [f"acc = tl.full({tile}, float('-inf'), CDT)"],
        "min": [f"acc = tl.full({tile}, float('inf'), CDT)"],
        "lse": [f"acc_m = tl.full({tile}, float('-inf'), CDT)", f"acc_s = tl.zeros({tile}, CDT)"],
        "moments": [f"acc_1 = tl.zeros({tile}, CDT)", f"acc_2 = tl.zeros({tile}, CDT)"],
        "argmax": [f"acc_m = tl.full({tile}, float('-inf'), CDT)", f"acc_i = tl.zeros({tile}, tl.int64)"],
        "argmin": [f"acc_m = tl.full({tile}, float('inf'), CDT)", f"acc_i = tl.zeros({tile}, tl.int64)"],
    }[acc]


def _update(acc: str, v: str) -> list[str]:
    return {
        "sum": [f"acc += tl.where(m, {v}, 0.0)"],
        "prod": [f"acc *= tl.where(m, {v}, 1.0)"],
        "max": [f"acc = tl.maximum(acc, tl.where(m, {v}, float('-inf')))"],
        "min": [f"acc = tl.minimum(acc, tl.where(m, {v}, float('inf')))"],
        "lse": [f"vv = tl.where(m, {v}, float('-inf'))",
                "mn = tl.maximum(acc_m, vv)",
                "acc_s = tl.where(mn == float('-inf'), 0.0, acc_s * tl.exp(acc_m - mn) + tl.exp(vv - mn))",
                "acc_m = mn"],
        "moments": [f"dv = tl.where(m, {v} - c[None, :], 0.0)", "acc_1 += dv", "acc_2 += dv * dv"],
        "argmax": [f"vv = tl.where(m, {v}, float('-inf'))", "better = vv > acc_m",
                   "acc_m = tl.where(better, vv, acc_m)",
                   "acc_i = tl.where(better, ((r0 * R1 + r1) * RV + rv)[:, None] + tl.zeros([BLOCK_R, BLOCK_K], tl.int64), acc_i)"],
        "argmin": [f"vv = tl.where(m, {v}, float('inf'))", "better = vv < acc_m",
                   "acc_m = tl.where(better, vv, acc_m)",
                   "acc_i = tl.where(better, ((r0 * R1 + r1) * RV + rv)[:, None] + tl.zeros([BLOCK_R, BLOCK_K], tl.int64), acc_i)"],
    }[acc]


def _lanes(acc: str) -> list[str]:
    """The tile reduced over its rows: one state vector per kept lane (st_<state>)."""
    return {
        "sum": ["st_s = tl.sum(acc, axis=0)"],
        "prod": ["st_s = tl.reduce(acc, 0, _stark_mul)"],
        "max": ["st_s = tl.max(acc, axis=0)"],
        "min": ["st_s = tl.min(acc, axis=0)"],
        "lse": ["st_m = tl.max(acc_m, axis=0)",
                "st_s = tl.sum(tl.where(acc_m == float('-inf'), 0.0, acc_s * tl.exp(acc_m - st_m[None, :])), axis=0)"],
        "moments": ["st_s1 = tl.sum(acc_1, axis=0)", "st_s2 = tl.sum(acc_2, axis=0)", "st_c = c"],
        "argmax": ["st_m = tl.max(acc_m, axis=0)",
                   "st_i = tl.min(tl.where(acc_m == st_m[None, :], acc_i, 9223372036854775807), axis=0)"],
        "argmin": ["st_m = tl.min(acc_m, axis=0)",
                   "st_i = tl.min(tl.where(acc_m == st_m[None, :], acc_i, 9223372036854775807), axis=0)"],
    }[acc]


def _combine(acc: str) -> list[str]:
    """Fold one split's states (w_<state>) into the running ones (st_<state>)."""
    return {
        "sum": ["st_s += w_s"],
        "prod": ["st_s *= w_s"],
        "max": ["st_s = tl.maximum(st_s, w_s)"],
        "min": ["st_s = tl.minimum(st_s, w_s)"],
        "lse": ["mn = tl.maximum(st_m, w_m)",
                "st_s = tl.where(mn == float('-inf'), 0.0, st_s * tl.exp(st_m - mn) + w_s * tl.exp(w_m - mn))",
                "st_m = mn"],
        "moments": ["st_s1 += w_s1", "st_s2 += w_s2"],
        "argmax": ["better = (w_m > st_m) | ((w_m == st_m) & (w_i < st_i))",
                   "st_m = tl.where(better, w_m, st_m)", "st_i = tl.where(better, w_i, st_i)"],
        "argmin": ["better = (w_m < st_m) | ((w_m == st_m) & (w_i < st_i))",
                   "st_m = tl.where(better, w_m, st_m)", "st_i = tl.where(better, w_i, st_i)"],
    }[acc]


def _finish(acc: str, finish: str) -> list[str]:
    """The outputs (out_0, out_1, ...) from the states; NR is the number of reduced elements."""
    if acc == "moments":
        return ["mean_part = st_s1 / NR", "out_0 = st_c + mean_part",
                "out_1 = tl.maximum(st_s2 / NR - mean_part * mean_part, 0.0)"]
    if acc in ("argmax", "argmin"):
        return ["out_0 = st_i"]
    if acc == "lse":
        return ["out_0 = tl.where(st_m == float('-inf'), st_m, st_m + tl.log(st_s))"]
    return {"sum": ["out_0 = st_s"], "mean": ["out_0 = st_s / NR"], "sqrt": ["out_0 = tl.sqrt(st_s)"],
            "max": ["out_0 = st_s"], "min": ["out_0 = st_s"], "prod": ["out_0 = st_s"]}[finish]


def _stores(n_out: int, offset: str, mask: str) -> list[str]:
    out = ["for rep in range(REPEAT):"]
    for j in range(n_out):
        out.append(f"    tl.store(o{j} + ({offset.format(j=j)}) + rep * REP_STRIDE, "
                   f"out_{j}.to(o{j}.dtype.element_ty), mask={mask})")
    return out


def reduce_kernel(name: str, tree: Tree, acc: str, finish: str, doc: str) -> str:
    """One reduction of the tree over the reduced slots (R0, R1 scalar, RV vector) for each kept
    index (K0-K2 scalar, KV vector); SPLIT > 1: partial states to the workspace ``w_<state>``."""
    n = len(tree.operands)
    states = STATES[acc]
    n_out = len(OUTPUTS.get(acc, ["out"]))
    outs = "".join(f"o{j}, o{j}_s0, o{j}_s1, o{j}_s2, o{j}_s3, " for j in range(n_out))
    ws = "".join(f"w_{s}_ptr, " for s in states)
    offset = "b{i} + r0 * a{i}_s4 + r1 * a{i}_s5 + rv[:, None] * a{i}_s6 + kv[None, :] * a{i}_s3"
    loads = _loads(tree, offset, "m")
    bases = [f"b{i} = k0 * a{i}_s0 + k1 * a{i}_s1 + k2 * a{i}_s2" for i in range(n)]
    shift: list[str] = []
    if acc == "moments":  # the first element of each kept lane: the shift of the shifted sums
        # (typed as in the loop below: Triton requires a loop-carried variable to keep its type)
        shift = ["r0 = tl.zeros([], tl.int64)", "r1 = tl.zeros([], tl.int64)", "rv = tl.zeros([BLOCK_R], tl.int64)",
                 "m = (tl.arange(0, BLOCK_R) == 0)[:, None] & kmask[None, :]"] + loads + tree.lines + \
                [f"first = {_result(tree, 'tl.zeros([BLOCK_R, BLOCK_K], CDT)')}",
                 "c = tl.sum(tl.where(m, first, 0.0), axis=0)"]
    loop = ["rb = t % nrb", "ro = t // nrb", "r1 = ro % R1", "r0 = ro // R1",
            "rv = rb * BLOCK_R + tl.arange(0, BLOCK_R)", "m = (rv < RV)[:, None] & kmask[None, :]"] + loads + \
        tree.lines + [f"v = {_result(tree, 'tl.zeros([BLOCK_R, BLOCK_K], CDT)')}"] + _update(acc, "v")
    out_offset = "k0 * o{j}_s0 + k1 * o{j}_s1 + k2 * o{j}_s2 + kv * o{j}_s3"
    finish_lines = _finish(acc, finish) + _stores(n_out, out_offset, "kmask")
    ws_store = [f"tl.store(w_{s}_ptr + sp * KEPT + kf * KV + kv, st_{s}, mask=kmask)" for s in states]
    return f'''
@triton.jit(do_not_specialize=[{_sizes("K0 K1 K2 KV R0 R1 RV REPEAT REP_STRIDE")}])
def {name}({_op_params(n, 7)}{outs}{ws}K0, K1, K2, KV, R0, R1, RV, REPEAT, REP_STRIDE, {_modes(n)}
           CDT: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT: tl.constexpr,
           ALIGN_K: tl.constexpr, ALIGN_R: tl.constexpr):
    # {doc}
    {_aligned("KV", "ALIGN_K")}
    {_aligned("RV", "ALIGN_R")}
    pid = tl.program_id(0).to(tl.int64)
    sp = pid % SPLIT
    q = pid // SPLIT
    nkb = tl.cdiv(KV, BLOCK_K)
    kf = q // nkb
    k2 = kf % K2
    k1 = (kf // K2) % K1
    k0 = kf // (K2 * K1)
    kv = (q % nkb) * BLOCK_K + tl.arange(0, BLOCK_K)
    kmask = kv < KV
    KEPT = K0 * K1 * K2 * KV
    NR = (R0 * R1 * RV).to(CDT)
{_indent(bases, 1)}{_indent(shift, 1)}{_indent(_init(acc), 1)}    nrb = tl.cdiv(RV, BLOCK_R)
    per = tl.cdiv(R0 * R1 * nrb, SPLIT)
    t_lo = sp * per
    t_hi = tl.minimum(R0 * R1 * nrb, t_lo + per)
    for t in range(t_lo, t_hi):
{_indent(loop, 2)}{_indent(_lanes(acc), 1)}    if SPLIT == 1:
{_indent(finish_lines, 2)}    else:
{_indent(ws_store, 2)}'''


def combine_kernel(name: str, acc: str, finish: str) -> str:
    """The second kernel of a split reduction: fold the SPLIT partial states, finish, store."""
    states = STATES[acc]
    n_out = len(OUTPUTS.get(acc, ["out"]))
    outs = "".join(f"o{j}, o{j}_s0, o{j}_s1, o{j}_s2, o{j}_s3, " for j in range(n_out))
    ws = "".join(f"w_{s}_ptr, " for s in states)
    first = [f"st_{s} = tl.load(w_{s}_ptr + q, mask=kmask, other=0)" for s in states]
    fold = [f"w_{s} = tl.load(w_{s}_ptr + sp * KEPT + q, mask=kmask, other=0)" for s in states] + _combine(acc)
    out_offset = "k0 * o{j}_s0 + k1 * o{j}_s1 + k2 * o{j}_s2 + kv * o{j}_s3"
    return f'''
@triton.jit(do_not_specialize=[{_sizes("K0 K1 K2 KV KEPT NSPLIT REPEAT REP_STRIDE")}])
def {name}({outs}{ws}K0, K1, K2, KV, KEPT, NSPLIT, REPEAT, REP_STRIDE, NR, BLOCK: tl.constexpr):
    # the partial states of the SPLIT programs of each output, folded in order
    q = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    kmask = q < KEPT
    kv = q % KV
    kf = q // KV
    k2 = kf % K2
    k1 = (kf // K2) % K1
    k0 = kf // (K2 * K1)
{_indent(first, 1)}    for sp in range(1, NSPLIT):
{_indent(fold, 2)}{_indent(_finish(acc, finish) + _stores(n_out, out_offset, "kmask"), 1)}'''


# -- scans -------------------------------------------------------------------------------------
def scan_kernel(name: str, tree: Tree, op: str, reverse: bool, doc: str) -> str:
    """Slots: K0-K2 scalar, KV (COLS: a vector of columns walked in a sequential loop), RV the
    scanned dim (ROWS: chunks of BLOCK with tl.cumsum / tl.cumprod and a running carry)."""
    n = len(tree.operands)
    ident = "0.0" if op == "sum" else "1.0"
    cols_loads = _loads(tree, "b{i} + rr * a{i}_s4 + kv * a{i}_s3", "kmask")
    rows_loads = _loads(tree, "b{i} + rv * a{i}_s4", "rmask")
    bases = [f"b{i} = k0 * a{i}_s0 + k1 * a{i}_s1 + k2 * a{i}_s2" for i in range(n)]
    fold = "carry + v" if op == "sum" else "carry * v"
    scan = (f"tl.cumsum(vv, 0, reverse={reverse}) + carry" if op == "sum"
            else f"tl.cumprod(vv, 0, reverse={reverse}) * carry")
    total = "tl.sum(vv, axis=0)" if op == "sum" else "tl.reduce(vv, 0, _stark_mul)"
    combine = "carry + " + total if op == "sum" else "carry * " + total
    rr = "RV - 1 - r" if reverse else "r"
    start = "RV - (c + 1) * BLOCK" if reverse else "c * BLOCK"
    cols = [f"rr = {rr}"] + cols_loads + tree.lines + [
        f"v = {_result(tree, 'tl.zeros([BLOCK_K], CDT)')}",
        f"carry = {fold}",
        "tl.store(y + yb + rr * y_s4 + kv * y_s3, carry.to(y.dtype.element_ty), mask=kmask)"]
    rows = [f"rv = {start} + tl.arange(0, BLOCK)", "rmask = (rv >= 0) & (rv < RV)"] + rows_loads + tree.lines + [
        f"vv = tl.where(rmask, {_result(tree, 'tl.zeros([BLOCK], CDT)')}, {ident})",
        f"out = {scan}",
        "tl.store(y + yb + rv * y_s4, out.to(y.dtype.element_ty), mask=rmask)",
        f"carry = {combine}"]
    return f'''
@triton.jit(do_not_specialize=[{_sizes("K0 K1 K2 KV RV")}])
def {name}({_op_params(n, 5)}y, y_s0, y_s1, y_s2, y_s3, y_s4, K0, K1, K2, KV, RV, {_modes(n)}CDT: tl.constexpr,
           BLOCK: tl.constexpr, BLOCK_K: tl.constexpr, COLS: tl.constexpr):
    # {doc}
    pid = tl.program_id(0).to(tl.int64)
    nkb = tl.cdiv(KV, BLOCK_K)
    kf = pid // nkb
    k2 = kf % K2
    k1 = (kf // K2) % K1
    k0 = kf // (K2 * K1)
    kv = (pid % nkb) * BLOCK_K + tl.arange(0, BLOCK_K)
    kmask = kv < KV
{_indent(bases, 1)}    yb = k0 * y_s0 + k1 * y_s1 + k2 * y_s2
    if COLS:
        carry = tl.full([BLOCK_K], {ident}, CDT)
        for r in range(0, RV):
{_indent(cols, 3)}    else:
        carry = tl.full([], {ident}, CDT)
        for c in range(0, tl.cdiv(RV, BLOCK)):
{_indent(rows, 3)}'''


# -- pools -------------------------------------------------------------------------------------
def pool_kernel(name: str, tree: Tree, doc: str) -> str:
    """One program per (plane, block of output positions); the window is a loop; max pads with
    -inf, average divides as torch does (count_include_pad, divisor_override)."""
    n = len(tree.operands)
    loads = _loads(tree, "p0 * a{i}_s0 + p1 * a{i}_s1 + id_ * a{i}_s2 + ih * a{i}_s3 + iw * a{i}_s4", "valid")
    inner = ["id_ = od * SD - PD + kd * DD", "ih = oh * SH - PH + kh * DH", "iw = ow * SW - PW + kw * DW",
             "valid = qm & (id_ >= 0) & (id_ < D) & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)"] + loads + \
        tree.lines + [f"v = {_result(tree, 'tl.zeros([BLOCK], CDT)')}",
                      "if IS_MAX:",
                      "    acc = tl.maximum(acc, tl.where(valid, v, float('-inf')))",
                      "else:",
                      "    acc += tl.where(valid, v, 0.0)"]
    return f'''
@triton.jit(do_not_specialize=[{_sizes("P0 P1 D H W OD OH OW SD SH SW PD PH PW DD DH DW DIV")}])
def {name}({_op_params(n, 5)}y, y_s0, y_s1, y_s2, y_s3, y_s4, P0, P1, D, H, W, OD, OH, OW, SD, SH, SW, PD, PH, PW,
           DD, DH, DW, DIV, {_modes(n)}CDT: tl.constexpr, KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
           IS_MAX: tl.constexpr, INCLUDE_PAD: tl.constexpr, BLOCK: tl.constexpr):
    # {doc}
    pid = tl.program_id(0).to(tl.int64)
    nq = OD * OH * OW
    nb = tl.cdiv(nq, BLOCK)
    plane = pid // nb
    p1 = plane % P1
    p0 = plane // P1
    q = (pid % nb) * BLOCK + tl.arange(0, BLOCK)
    qm = q < nq
    ow = q % OW
    t = q // OW
    oh = t % OH
    od = t // OH
    if IS_MAX:
        acc = tl.full([BLOCK], float('-inf'), CDT)
    else:
        acc = tl.zeros([BLOCK], CDT)
    for kd in range(KD):
        for kh in range(KH):
            for kw in range(KW):
{_indent(inner, 4)}    if not IS_MAX:
        if DIV != 0:
            acc = acc / DIV
        else:
            d0 = od * SD - PD
            h0 = oh * SH - PH
            w0 = ow * SW - PW
            d1 = tl.minimum(d0 + KD, D + PD)
            h1 = tl.minimum(h0 + KH, H + PH)
            w1 = tl.minimum(w0 + KW, W + PW)
            if INCLUDE_PAD:
                count = (d1 - d0) * (h1 - h0) * (w1 - w0)
            else:
                count = (tl.minimum(d1, D) - tl.maximum(d0, 0)) * (tl.minimum(h1, H) - tl.maximum(h0, 0)) * \\
                    (tl.minimum(w1, W) - tl.maximum(w0, 0))
            acc = acc / count.to(CDT)
    tl.store(y + p0 * y_s0 + p1 * y_s1 + od * y_s2 + oh * y_s3 + ow * y_s4, acc.to(y.dtype.element_ty), mask=qm)
'''


HELPERS = '''
@triton.jit
def _stark_mul(a, b):
    return a * b
'''
