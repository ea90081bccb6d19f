"""Run-time helpers of a fused ModelNew (this module's text is copied into every candidate).

The generated forward knows no shapes in advance. For each kernel it builds
every operand as a view of the kernel's iteration space with torch's own
rules (``expand`` for broadcasting, ``unsqueeze``/``squeeze``), then these
helpers merge adjacent dims that every operand can walk with one stride,
and give each kernel a few *groups* (size and one stride per operand) to
index with: scalar coordinates per program for the outer groups, a vector
for the innermost one. An operand that would need more groups than the
kernel has is copied to a contiguous tensor first (correct, only slower).
Python numbers stay numbers: they are passed by value (mode 0).
"""

import math

import torch
import triton


# -- shapes -------------------------------------------------------------------
def _stark_shape(v):
    return tuple(v.shape) if isinstance(v, torch.Tensor) else ()


def _stark_bshape(*shapes):
    """torch's broadcasting of shapes (in Python: torch.broadcast_shapes costs ~30 us a call)."""
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for s in shapes:
        for i, d in enumerate(s, n - len(s)):
            if d != 1:
                if out[i] != 1 and out[i] != d:
                    raise RuntimeError(f"shapes {[tuple(x) for x in shapes]} do not broadcast")
                out[i] = d
    return tuple(out)


def _stark_ex(v, shape):
    """A tensor broadcast to ``shape`` (a view); a number stays a number."""
    if not isinstance(v, torch.Tensor):
        return v
    return v if tuple(v.shape) == tuple(shape) else v.expand(shape)


def _stark_vw(v, method, *args):
    return getattr(v, method)(*args) if isinstance(v, torch.Tensor) else v


def _stark_vshape(shape, method, *args):
    return tuple(getattr(torch.empty(shape, device="meta"), method)(*args).shape)


def _stark_or(v, default):
    return default if v is None else v


def _stark_channel(v, ndim, default):
    """A per-channel parameter (C,) as (C, 1, ..., 1) for an (N, C, *) input."""
    if v is None:
        return default
    return v.reshape((v.shape[0],) + (1,) * max(ndim - 2, 0))


def _stark_rms_eps(m):
    return m.eps if m.eps is not None else torch.finfo(torch.float32).eps


def _stark_batch(shape):
    return shape[0] if len(shape) else 1


def _stark_find_device(module, *inputs):
    for v in inputs:
        if isinstance(v, torch.Tensor):
            return v.device
    for p in module.parameters():
        return p.device
    return torch.device("cpu")


def _stark_dims(shape, dims):
    """Reduced dims, sorted and non-negative: an int, a sequence, None (all), 'bn' (all but 1),
    'spatial' (2 and after), ('last', k)."""
    n = len(shape)
    if dims is None:
        return tuple(range(n))
    if dims == "bn":
        return (0,) + tuple(range(2, n))
    if dims == "spatial":
        return tuple(range(2, n))
    if isinstance(dims, tuple) and len(dims) == 2 and dims[0] == "last":
        return tuple(range(n - dims[1], n))
    if isinstance(dims, int):
        dims = (dims,)
    out = sorted({d % n if n else 0 for d in dims})
    return tuple(out)


def _stark_rshape(shape, dims, keepdim):
    dims = _stark_dims(shape, dims)
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _stark_dtype(*vals):
    """torch's result dtype of an elementwise expression over these operands."""
    tensors = [v for v in vals if isinstance(v, torch.Tensor)]
    dims = [t for t in tensors if t.dim() > 0] or tensors
    dtype = None
    for t in dims:
        dtype = t.dtype if dtype is None else torch.promote_types(dtype, t.dtype)
    if dtype is None:
        dtype = torch.get_default_dtype()
    if not (dtype.is_floating_point or dtype.is_complex) and any(
            isinstance(v, float) or isinstance(v, torch.Tensor) and v.dtype.is_floating_point for v in vals):
        dtype = torch.get_default_dtype()
    if not dtype.is_floating_point:
        dtype = torch.get_default_dtype()
    return dtype


def _stark_compute(*dtypes):
    """fp64 arithmetic when an output is fp64, else fp32."""
    import triton.language as tl

    return tl.float64 if torch.float64 in dtypes else tl.float32


# -- pools --------------------------------------------------------------------
def _stark_tuple(v, nd):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * nd


def _stark_pool_config(nd, op, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                       count_include_pad=True, divisor_override=None):
    k = _stark_tuple(kernel_size, nd)
    s = _stark_tuple(stride if stride not in (None, [], ()) else kernel_size, nd)
    return (op, nd, k, s, _stark_tuple(padding, nd), _stark_tuple(dilation, nd), bool(ceil_mode),
            bool(count_include_pad), divisor_override)


def _stark_pool_module(m, nd):
    op = "max" if "Max" in type(m).__name__ else "avg"
    if getattr(m, "return_indices", False):
        raise NotImplementedError("this kernel does not return pooling indices")
    return _stark_pool_config(nd, op, m.kernel_size, m.stride, m.padding, getattr(m, "dilation", 1), m.ceil_mode,
                              getattr(m, "count_include_pad", True), getattr(m, "divisor_override", None))


def _stark_pool_out(size, k, s, p, d, ceil):
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= size + p:
        out -= 1
    return out


def _stark_pshape(shape, cfg):
    _, nd, k, s, p, d, ceil, _, _ = cfg
    lead, sp = tuple(shape[:-nd]), shape[-nd:]
    return lead + tuple(_stark_pool_out(sp[i], k[i], s[i], p[i], d[i], ceil) for i in range(nd))


# -- groups -------------------------------------------------------------------
def _stark_strides(v, shape):
    if isinstance(v, torch.Tensor):
        assert tuple(v.shape) == tuple(shape), (tuple(v.shape), tuple(shape))
        return tuple(v.stride())
    return (0,) * len(shape)


def _stark_merge(shape, roles, strides):
    """Groups of adjacent dims with one role that every operand walks with one stride
    (size-1 dims dropped): [(role, size, [stride per operand])]."""
    groups = []
    for i, size in enumerate(shape):
        if size == 1:
            continue
        st = [s[i] for s in strides]
        if groups and groups[-1][0] == roles[i] and all(
                g == s * size for g, s in zip(groups[-1][2], st)):
            role, gsize, _ = groups[-1]
            groups[-1] = (role, gsize * size, st)
        else:
            groups.append((roles[i], size, st))
    return groups


def _stark_breaks(shape, roles, strides):
    """For each operand, how many merges of same-role neighbours it prevents."""
    out = [0] * len(strides)
    dims = [i for i, s in enumerate(shape) if s != 1]
    for a, b in zip(dims, dims[1:]):
        if roles[a] != roles[b]:
            continue
        for j, s in enumerate(strides):
            if s[a] != s[b] * shape[b]:
                out[j] += 1
    return out


def _stark_fit(shape, roles, ops, fits):
    """Merge groups; while ``fits(groups)`` is False, make the operand that breaks most merges
    contiguous. ``ops``: operand tensors (views of ``shape``) or numbers; returns (groups, ops)."""
    ops = list(ops)
    while True:
        strides = [_stark_strides(v, shape) for v in ops]
        groups = _stark_merge(shape, roles, strides)
        if fits(groups):
            return groups, ops
        breaks = _stark_breaks(shape, roles, strides)
        j = max(range(len(ops)), key=lambda i: breaks[i]) if ops else None
        if j is None or breaks[j] == 0:
            raise NotImplementedError(f"this kernel cannot index a space of shape {tuple(shape)} "
                                      f"with dims {''.join(roles)}")
        ops[j] = ops[j].contiguous()


def _stark_operands(ops):
    """Kernel arguments and modes: a tensor is passed as itself (mode 1), a number by value (mode 0)."""
    args, modes = [], {}
    for i, v in enumerate(ops):
        if isinstance(v, torch.Tensor):
            args.append(v)
            modes[f"M{i}"] = 1
        else:
            args.append(float(v))
            modes[f"M{i}"] = 0
    return args, modes


_STARK_SMS = {}


def _stark_sms(device):
    if device.type != "cuda":
        return 4
    key = device.index if device.index is not None else torch.cuda.current_device()
    if key not in _STARK_SMS:
        _STARK_SMS[key] = torch.cuda.get_device_properties(key).multi_processor_count
    return _STARK_SMS[key]


def _stark_align(*sizes):
    """The largest power of two up to 16 that divides every size: a kernel may take its vector's size
    as a multiple of it (``kernels._aligned``) and move that many elements at once."""
    a = 16
    for s in sizes:
        while a > 1 and s % a:
            a //= 2
    return a


class _StarkLaunch:
    """What one kernel launch needs: ``grid``, positional ``args`` and constexpr ``meta``."""

    def __init__(self, grid, args, meta, **extra):
        self.grid, self.args, self.meta = grid, args, meta
        self.__dict__.update(extra)


# -- memory order -------------------------------------------------------------------
_STARK_LAYOUT = {"follow": False}  # the CHANNELS_LAST switch on: elementwise results keep their operands' order


def _stark_channels_last(model):
    """The CHANNELS_LAST switch on: every convolution's weight of ``model`` in channels-last order (once),
    so cuDNN runs the convolutions channels-last (NHWC, its tensor cores' layout) and their outputs are so;
    from then on an elementwise kernel writes its result in the order of an operand laid out that way
    (``_stark_order``), reading and writing along the channels, and a reduction that keeps the channels walks such
    an operand in that order. Values never change, only memory order."""
    _STARK_LAYOUT["follow"] = True
    if getattr(model, "_stark_channels_last_done", False):
        return
    formats = {4: torch.channels_last, 5: torch.channels_last_3d}
    with torch.no_grad():
        for m in model.modules():
            w = getattr(m, "weight", None)
            if isinstance(m, torch.nn.modules.conv._ConvNd) and isinstance(w, torch.Tensor) and w.dim() in formats:
                w.data = w.data.contiguous(memory_format=formats[w.dim()])
    model._stark_channels_last_done = True


def _stark_order(shape, ops):
    """Dims of ``shape`` from the outermost in memory to the innermost: those of the first tensor operand that
    covers ``shape`` densely in another order than the logical one, while ``_STARK_LAYOUT`` follows; None
    (the logical order) otherwise."""
    if not _STARK_LAYOUT["follow"]:
        return None
    shape = tuple(shape)
    for v in ops:
        if not isinstance(v, torch.Tensor) or tuple(v.shape) != shape or v.dim() < 2 or v.is_contiguous():
            continue
        st = v.stride()
        order = sorted(range(v.dim()), key=lambda d: (-st[d], d))
        step = 1
        for d in reversed(order):  # dense: each dim's stride the product of the sizes inside it
            if shape[d] != 1 and st[d] != step:
                break
            step *= shape[d]
        else:
            return tuple(order)
    return None


def _stark_out(shape, ops, dtype, device):
    """An elementwise kernel's result: in ``_stark_order``'s memory order (which ``_stark_pointwise``
    walks), else contiguous."""
    order = _stark_order(shape, ops)
    if order is None:
        return torch.empty(shape, device=device, dtype=dtype)
    return torch.empty_permuted(shape, order, device=device, dtype=dtype)


# -- elementwise ----------------------------------------------------------------
def _stark_pointwise(shape, ops, block):
    """An elementwise kernel over ``shape``: up to 4 groups (3 scalar per program, the last a vector);
    FLAT: one vector over every element (used when the last group is short). The result is written in
    ``_stark_order``'s order (the logical one unless the CHANNELS_LAST switch is on)."""
    shape = tuple(shape)
    order = _stark_order(shape, ops)
    if order is not None:  # the result is laid out in this order (_stark_out): walk the space in it
        shape = tuple(shape[d] for d in order)
        ops = [v.permute(order) if isinstance(v, torch.Tensor) else v for v in ops]
    groups, ops = _stark_fit(shape, "k" * len(shape), ops, lambda g: len(g) <= 4)
    groups = [("k", 1, [0] * len(ops))] * (4 - len(groups)) + groups
    sizes = [g[1] for g in groups]
    total = math.prod(shape)
    last = sizes[3]
    block = max(16, min(block, triton.next_power_of_2(max(total, 1))))
    flat = last < block // 2 and total > last
    grid = (triton.cdiv(total, block),) if flat else (math.prod(sizes[:3]) * triton.cdiv(last, block),)
    args, meta = _stark_operands(ops)
    flat_args = []
    for i, v in enumerate(args):
        flat_args.append(v)
        flat_args.extend(g[2][i] for g in groups)
    meta.update(FLAT=flat, BLOCK=block, ALIGN=_stark_align(last))  # total is a multiple of last
    return _StarkLaunch(grid, flat_args + sizes + [total], meta)


# -- reductions -------------------------------------------------------------------
def _stark_group_split(shape, groups):
    """GroupNorm: dim 1 split into (groups, channels per group)."""
    n, c = shape[0], shape[1]
    if c % groups:
        raise ValueError(f"{c} channels do not split into {groups} groups")
    return (n, groups, c // groups) + tuple(shape[2:])


def _stark_reduce(shape, dims, ops, outs, block_r, block_k, split_groups=None):
    """A reduction over ``dims`` of ``shape``. ``ops``: operands (views of ``shape``); ``outs``:
    output tensors (their keepdim shape, or (N, C, 1...) for a GroupNorm's per-channel statistics).

    Slots: 3 scalar kept groups + 1 vector kept group (COLS: the last dim is kept) and 2 scalar
    reduced groups + 1 vector reduced group, in ``_stark_order``'s order where it keeps the innermost dim
    (the CHANNELS_LAST switch on: a channels-last operand's, the kept vector along the channels). With few kept programs the reduced range is split
    over SPLIT programs whose partial states a second kernel combines."""
    shape = tuple(shape)
    if split_groups is not None:
        space = _stark_group_split(shape, split_groups)
        roles = "kk" + "r" * (len(space) - 2)
        ops = [v.reshape(space) if isinstance(v, torch.Tensor) else v for v in ops]
        views = [o.reshape((shape[0], split_groups, shape[1] // split_groups) + (1,) * (len(shape) - 2))
                 .expand(space) for o in outs]
    else:
        space = shape
        rd = _stark_dims(shape, dims)
        roles = "".join("r" if i in rd else "k" for i in range(len(shape)))
        views = [o.reshape(tuple(1 if r == "r" else s for r, s in zip(roles, space))).expand(space) for o in outs]
    order = _stark_order(space, ops)
    if order is not None and not _stark_kept_inside(tuple(space[d] for d in order), "".join(roles[d] for d in order)):
        order = None  # the channels reduced (a GroupNorm, a softmax over them): the logical order's tile of kept
        # columns reads them too, with a program for many pixels instead of one each
    if order is not None:  # walk the space in an operand's memory order: the vector slots along its inner dims
        space, roles = tuple(space[d] for d in order), "".join(roles[d] for d in order)
        ops = [v.permute(order) if isinstance(v, torch.Tensor) else v for v in ops]
        views = [v.permute(order) for v in views]
    n_in = len(ops)

    def fits(groups):
        kept = [g for g in groups if g[0] == "k"]
        red = [g for g in groups if g[0] == "r"]
        cols = bool(groups) and groups[-1][0] == "k"
        return len(kept) <= (4 if cols else 3) and len(red) <= 3

    groups, all_ops = _stark_fit(space, roles, list(ops) + views, fits)
    ops = all_ops[:n_in]
    cols = bool(groups) and groups[-1][0] == "k"
    kept = [g for g in groups if g[0] == "k"]
    red = [g for g in groups if g[0] == "r"]
    zero = ("k", 1, [0] * len(all_ops))
    kv = kept.pop() if cols else zero
    ks = [zero] * (3 - len(kept)) + kept
    rv = red.pop() if red else ("r", 1, [0] * len(all_ops))
    rs = [("r", 1, [0] * len(all_ops))] * (2 - len(red)) + red
    slots = ks + [kv] + rs + [rv]  # K0 K1 K2 KV R0 R1 RV
    # an output with a stride on a reduced group repeats each result along it (GroupNorm statistics)
    repeat, rep_stride = 1, 0
    for j in range(n_in, len(all_ops)):
        for g in rs + [rv]:
            if g[2][j] != 0:
                if repeat != 1 and (repeat, rep_stride) != (g[1], g[2][j]):
                    raise NotImplementedError("outputs repeated along two groups")
                repeat, rep_stride = g[1], g[2][j]
    if repeat != 1:  # that group is not reduced over any more than the others: it must be alone
        if sum(1 for g in rs + [rv] if g[1] != 1) > 3:
            raise NotImplementedError("too many reduced groups")
    sizes = [g[1] for g in slots]
    RV = sizes[6]
    block_r = max(1, min(block_r, triton.next_power_of_2(max(RV, 1))))
    if cols:
        block_k = max(1, min(block_k, triton.next_power_of_2(sizes[3])))
        block_r = max(1, min(block_r, max(1, 2048 // block_k)))
    else:
        block_k = 1
    kept_programs = sizes[0] * sizes[1] * sizes[2] * triton.cdiv(sizes[3], block_k)
    tiles = sizes[4] * sizes[5] * triton.cdiv(RV, block_r)
    device = next((o.device for o in outs), torch.device("cpu"))
    target = 4 * _stark_sms(device)
    split = 1
    if kept_programs < target and tiles >= 8:
        split = max(1, min(triton.cdiv(target, kept_programs), tiles // 4, 1024))
    args, meta = _stark_operands(ops)
    flat = []
    for i, v in enumerate(args):
        flat.append(v)
        flat.extend(g[2][i] for g in slots)
    for j, o in enumerate(outs):
        flat.append(o)
        flat.extend(slots[s][2][n_in + j] for s in range(4))
    kept_total = kept_programs // triton.cdiv(sizes[3], block_k) * sizes[3]
    # the hint only where an operand (or an output) is contiguous along that slot: it makes loads vectors
    # there, and along a strided slot it only changed the code Triton chose (a column sum 11 % slower)
    meta.update(BLOCK_R=block_r, BLOCK_K=block_k, SPLIT=split,
                ALIGN_K=_stark_align(sizes[3]) if 1 in slots[3][2] else 1,
                ALIGN_R=_stark_align(RV) if 1 in slots[6][2][:n_in] else 1)
    return _StarkLaunch((kept_programs * split,), None, meta, head=flat, tail=sizes + [repeat, rep_stride],
                        split=split, kept=kept_total, sizes=sizes, block_k=block_k,
                        out_strides=[[slots[s][2][n_in + j] for s in range(4)] for j in range(len(outs))],
                        repeat=repeat, rep_stride=rep_stride, device=device)


def _stark_kept_inside(space, roles):
    """Whether the innermost dim of this order (size 1 aside) is kept: a tile of kept columns (COLS) runs along it."""
    dims = [role for size, role in zip(space, roles) if size != 1]
    return bool(dims) and dims[-1] == "k"


def _stark_workspace(launch, names, dtypes=None):
    """Partial states of a split reduction: one (SPLIT, kept) buffer per state."""
    dtypes = dtypes or {}
    return [torch.empty((launch.split, launch.kept), device=launch.device, dtype=dtypes.get(n, torch.float32))
            for n in names]


def _stark_combine(launch, outs, block):
    """The second kernel of a split reduction: one program per block of kept outputs."""
    block = max(16, min(block, triton.next_power_of_2(max(launch.kept, 1))))
    flat = []
    for o, st in zip(outs, launch.out_strides):
        flat.append(o)
        flat.extend(st)
    nr = float(launch.sizes[4] * launch.sizes[5] * launch.sizes[6])
    return _StarkLaunch((triton.cdiv(launch.kept, block),), None, {"BLOCK": block}, head=flat,
                        tail=launch.sizes[:4] + [launch.kept, launch.split, launch.repeat, launch.rep_stride, nr])


# -- norms ----------------------------------------------------------------------
def _stark_use_batch_stats(m):
    return m.training or not getattr(m, "track_running_stats", False) or m.running_mean is None


def _stark_running(m, ndim, kind):
    """The running mean and variance, shaped to broadcast against the input."""
    mean, var = m.running_mean, m.running_var
    return _stark_channel(mean, ndim, 0.0), _stark_channel(var, ndim, 1.0)


def _stark_track(m, mean, var, count, kind):
    """Training mode: update a module's running statistics as torch does (unbiased variance)."""
    if not (m.training and getattr(m, "track_running_stats", False) and m.running_mean is not None):
        return
    with torch.no_grad():
        bm, bv = mean.detach(), var.detach()
        if kind == "instance":
            bm, bv = bm.mean(0), bv.mean(0)
        bm, bv = bm.reshape(-1), bv.reshape(-1)
        bv = bv * (count / max(count - 1, 1))
        if kind == "instance":  # F.instance_norm: no batch counter, momentum None means 0
            momentum = m.momentum if m.momentum is not None else 0.0
        else:
            if m.num_batches_tracked is not None:
                m.num_batches_tracked.add_(1)
            momentum = m.momentum
            if momentum is None:
                momentum = 1.0 / float(m.num_batches_tracked)
        m.running_mean.mul_(1 - momentum).add_(bm.to(m.running_mean.dtype), alpha=momentum)
        m.running_var.mul_(1 - momentum).add_(bv.to(m.running_var.dtype), alpha=momentum)


# -- scans --------------------------------------------------------------------------
def _stark_scan(shape, dim, ops, out, block, block_k):
    """A scan along ``dim``: the scanned dim alone is the vector (ROWS, when it is the last group)
    or a sequential loop over a vector of kept columns (COLS)."""
    shape = tuple(shape)
    d = dim % len(shape)
    roles = "".join("r" if i == d else "k" for i in range(len(shape)))

    def fits(groups):
        kept = [g for g in groups if g[0] == "k"]
        cols = bool(groups) and groups[-1][0] == "k"
        return len(kept) <= (4 if cols else 3)

    groups, all_ops = _stark_fit(shape, roles, list(ops) + [out], fits)
    ops = all_ops[:-1]
    n = len(all_ops)
    cols = bool(groups) and groups[-1][0] == "k"
    kept = [g for g in groups if g[0] == "k"]
    red = [g for g in groups if g[0] == "r"]
    zero = ("k", 1, [0] * n)
    kv = kept.pop() if cols else zero
    ks = [zero] * (3 - len(kept)) + kept
    rv = red[0] if red else ("r", 1, [0] * n)
    slots = ks + [kv, rv]
    sizes = [g[1] for g in slots]
    if cols:
        block_k = max(1, min(block_k, triton.next_power_of_2(sizes[3])))
        block = 1
    else:
        block_k = 1
        block = max(16, min(block, triton.next_power_of_2(max(sizes[4], 1))))
    args, meta = _stark_operands(ops)
    flat = []
    for i, v in enumerate(args + [out]):
        flat.append(v)
        flat.extend(g[2][i] for g in slots)
    grid = (sizes[0] * sizes[1] * sizes[2] * triton.cdiv(sizes[3], block_k),)
    meta.update(BLOCK=block, BLOCK_K=block_k, COLS=cols)
    return _StarkLaunch(grid, flat + sizes, meta)


# -- pools --------------------------------------------------------------------------
def _stark_pool(shape, cfg, ops, out, block):
    """Pooling over the last nd dims: planes (the leading dims, at most 2 groups) are scalar per
    program, output positions a vector, the window a loop."""
    op, nd, k, s, p, d, ceil, include_pad, divisor = cfg
    shape = tuple(shape)
    lead = len(shape) - nd
    oshape = _stark_pshape(shape, cfg)
    roles = "p" * lead
    ins = list(ops)
    lead_shape = shape[:lead]
    strides_in = [(_stark_strides(v, shape)[:lead] if isinstance(v, torch.Tensor) else (0,) * lead) for v in ins]
    out_strides = tuple(out.stride()[:lead])
    groups = _stark_merge(lead_shape, roles, strides_in + [out_strides])
    while len(groups) > 2:
        breaks = _stark_breaks(lead_shape, roles, strides_in + [out_strides])[:-1]
        j = max(range(len(ins)), key=lambda i: breaks[i])
        if breaks[j] == 0:
            raise NotImplementedError("too many plane groups")
        ins[j] = ins[j].contiguous()
        strides_in[j] = _stark_strides(ins[j], shape)[:lead]
        groups = _stark_merge(lead_shape, roles, strides_in + [out_strides])
    groups = [("p", 1, [0] * (len(ins) + 1))] * (2 - len(groups)) + groups
    pad = 3 - nd
    sp_in = (1,) * pad + shape[lead:]
    sp_out = (1,) * pad + oshape[lead:]
    kk = (1,) * pad + k
    ss = (1,) * pad + s
    pp = (0,) * pad + p
    dd = (1,) * pad + d
    args, meta = _stark_operands(ins)
    flat = []
    for i, v in enumerate(args):
        flat.append(v)
        flat.extend([groups[0][2][i], groups[1][2][i]])
        full = _stark_strides(ins[i], shape) if isinstance(ins[i], torch.Tensor) else (0,) * len(shape)
        flat.extend((0,) * pad + tuple(full[lead:]))
    ost = out.stride()
    flat.extend([out, groups[0][2][-1], groups[1][2][-1]] + list((0,) * pad + tuple(ost[lead:])))
    planes = groups[0][1] * groups[1][1]
    n_out = math.prod(sp_out)
    block = max(16, min(block, triton.next_power_of_2(max(n_out, 1))))
    grid = (planes * triton.cdiv(n_out, block),)
    div = 0 if divisor is None else int(divisor)
    meta.update(KD=kk[0], KH=kk[1], KW=kk[2], IS_MAX=op == "max", INCLUDE_PAD=bool(include_pad), BLOCK=block)
    return _StarkLaunch(grid, flat + [groups[0][1], groups[1][1]] + list(sp_in) + list(sp_out) + list(ss) + list(pp)
                        + list(dd) + [div], meta)


# -- a matmul's epilogue ----------------------------------------------------------------
def _stark_rows_cols(ops, M, N):
    """Operands of a matmul epilogue as (M, N) views: arguments (two strides each) and modes."""
    flat, modes = [], {}
    for i, v in enumerate(ops):
        if isinstance(v, torch.Tensor):
            v = v.reshape(M, N)
            flat += [v, v.stride(0), v.stride(1)]
            modes[f"M{i}"] = 1
        else:
            flat += [float(v), 0, 0]
            modes[f"M{i}"] = 0
    return flat, modes
