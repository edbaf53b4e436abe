"""Window ops and per-group norms as composites of fs ops: pooling, convolution variants,
group_norm and instance_norm (PyTorch's names and argument conventions; ONE definition each,
which `fs.*`, the PyTorch importer and the ONNX importer all call).

fusedsl has one window graph op, conv2d (NCHW, stride, symmetric padding, the cube kind).  The
others are exact compositions of it and of slices, reshapes and concatenations:
  * pooling (max / avg, 1-D / 2-D / 3-D; kernel, stride, padding, dilation, ceil_mode,
    count_include_pad, divisor_override) is the maximum / sum of the slices of the padded input,
    one per kernel tap, one axis at a time (`_pool_axis`) -- also for windows that tile the input,
    where the taps (3 kernels) beat a reshape and a reduction per kernel axis (2 kernels) 3-6x:
    [8, 64, 56, 56] float32 max_pool2d(2) 27 -> 4.5 ms, avg_pool2d(2) 13 -> 3.7 ms,
    max_pool2d(3, 3) 19 -> 4.5 ms (torch eager: 107 / 9.6 / 12 ms);
  * adaptive average pooling is a mean when the output size divides the input size (equal windows),
    else, per axis, one gather of the widest window's taps of every window, masked and summed;
  * conv1d is conv2d on a height-1 image; dilation zero-inserts the weight (a weight-sized op);
    groups make the weight block-diagonal (zeros outside each group's channels: one conv2d);
  * transposed convolution zero-inserts the input by the stride, pads it by
    dilation * (kernel - 1) - padding (+ output_padding at the end; negative pads crop) and
    convolves with the flipped weight, in- and out-channels swapped;
  * conv3d (the importer's; no fs name) is one conv2d per depth tap over all depths at once;
  * group_norm is layer_norm over [N, groups, C / groups * spatial], then the per-channel affine;
    instance_norm is group_norm with one group per channel (or batch_norm on running statistics).
"""
from __future__ import annotations

import math

from .. import dtypes as dt
from .composite import composite, exact_int32
from .index import take_axis


def _fail(F, message, hint=None, kind="ArgumentError"):
    raise getattr(F, kind)(message, loc=F.user_frame(), hint=hint)


def _tensor(F, x, name, what, min_rank):
    if not isinstance(x, F.Tensor):
        _fail(F, f"{name} needs a tensor for {what}, got {type(x).__name__}", hint="pass an array")
    if x.ndim < min_rank or any(not isinstance(d, int) for d in x.shape):
        _fail(F, f"{name} needs {what} of rank >= {min_rank} with static sizes, got shape {tuple(x.shape)}",
              kind="ShapeError")
    return x


def _tuple(F, v, n, name, what, minimum=0):
    """An int or a sequence of n ints (one int repeats) as a tuple of n ints >= minimum."""
    t = (v,) * n if isinstance(v, int) else tuple(v) if isinstance(v, (list, tuple)) else None
    if t is not None and len(t) == 1:
        t = t * n
    if t is None or len(t) != n or not all(isinstance(i, int) and i >= minimum for i in t):
        _fail(F, f"{name} {what} must be an int or {n} ints >= {minimum}, got {v!r}")
    return t


def _filled(F, x, shape, value):
    c = x.trace.constant(value, x.dtype)
    return c if tuple(shape) == () else F.broadcast_to(c, tuple(shape))


def _pad(F, x, axis, before, after, value):
    """x padded along `axis` with `value` (negative amounts crop)."""
    if before < 0 or after < 0:
        index = [slice(None)] * x.ndim
        index[axis] = slice(max(-before, 0), x.shape[axis] - max(-after, 0))
        x = x[tuple(index)]
        before, after = max(before, 0), max(after, 0)
    pieces = []
    for amount in (before, None, after):
        if amount is None:
            pieces.append(x)
        elif amount:
            shape = list(x.shape)
            shape[axis] = amount
            pieces.append(_filled(F, x, shape, value))
    return F.concatenate(pieces, axis=axis) if len(pieces) > 1 else x


def _zero_insert(F, x, axis, s):
    """s - 1 zeros between neighbours along `axis`: (n - 1) * s + 1 elements.  A concatenation
    with a constant zeros piece (not a select): backend_cpu/zeros.py finds such copies of constant
    zeros and the CPU conv skips them."""
    if s == 1:
        return x
    n = x.shape[axis]
    shape = x.shape[:axis + 1] + (1,) + x.shape[axis + 1:]
    zeros = list(shape)
    zeros[axis + 1] = s - 1
    spread = F.concatenate([F.reshape(x, shape), _filled(F, x, zeros, 0)], axis=axis + 1)
    merged = F.reshape(spread, x.shape[:axis] + (n * s,) + x.shape[axis + 1:])
    index = [slice(None)] * x.ndim
    index[axis] = slice(0, (n - 1) * s + 1)
    return merged[tuple(index)]


def _flip_taps(F, x, axis):
    """x reversed along a short axis (a kernel's taps): its one-element slices concatenated."""
    n = x.shape[axis]
    if n == 1:
        return x
    parts = []
    for i in reversed(range(n)):
        index = [slice(None)] * x.ndim
        index[axis] = slice(i, i + 1)
        parts.append(x[tuple(index)])
    return F.concatenate(parts, axis=axis)


# ---- pooling -------------------------------------------------------------------------------------
def out_size(n, k, s, p, d, ceil_mode):
    """PyTorch's pooled length of n elements (kernel k, stride s, padding p, dilation d)."""
    span = d * (k - 1) + 1
    if ceil_mode:
        out = -(-(n + 2 * p - span) // s) + 1
        if (out - 1) * s >= n + p:   # the last window must start inside the input or the left padding
            out -= 1
    else:
        out = (n + 2 * p - span) // s + 1
    return out


def _pool_args(F, name, x, nd, kernel, stride, padding, dilation=1):
    _tensor(F, x, name, "its input", nd + 1)
    kernel = _tuple(F, kernel, nd, name, "kernel_size", 1)
    stride = kernel if stride is None or stride in ([], ()) else _tuple(F, stride, nd, name, "stride", 1)
    padding = _tuple(F, padding, nd, name, "padding")
    dilation = _tuple(F, dilation, nd, name, "dilation", 1)
    for i in range(nd):
        if 2 * padding[i] > kernel[i]:
            _fail(F, f"{name}: padding {padding[i]} is more than half the kernel size {kernel[i]}",
                  hint="PyTorch requires padding <= kernel_size / 2")
        n = x.shape[x.ndim - nd + i]
        if out_size(n, kernel[i], stride[i], padding[i], dilation[i], False) <= 0:
            _fail(F, f"{name}: the window ({kernel[i]} taps, dilation {dilation[i]}) is larger than the padded "
                  f"input ({n} + 2 * {padding[i]})", kind="ShapeError")
    return kernel, stride, padding, dilation


def _pool_axis(F, x, axis, k, s, p, d, ceil_mode, pad_value, combine):
    """x pooled along one axis: `combine` (maximum / add) of the k taps of every window
    (stride s, padding p with pad_value, dilation d), as PyTorch lays the windows out.

    Each tap is a slice of the padded x.  Along an axis other than the last (or with stride 1)
    the slices are strided views that fuse with the padding's concatenation and the combine:
    one kernel.  Along the last axis a strided slice is a gather of every s-th element, a kernel
    of its own per tap (and one no native CPU executor runs), so there the padded axis is split
    into (M, s) and transposed to (s, M) once: tap t reads row (t d) mod s from column (t d) // s
    on, a unit-step slice, and the taps fuse into one kernel again.  That result keeps the row
    axis (size 1) before the pooled one -- a reshape between the slices and the combine would
    end the kernel -- and the caller drops it at the very end.  A tap that reads only padding
    for every window adds the identity and is left out.  Returns (y, whether y has that
    extra axis)."""
    n = x.shape[axis]
    out = out_size(n, k, s, p, d, ceil_mode)
    taps = [t for t in range(k) if any(p <= o * s + t * d < p + n for o in range(out))] or [0]
    last = axis == x.ndim - 1 and s > 1 and out > 1
    blocks = out + (taps[-1] * d) // s if last else 0
    length = blocks * s if last else (out - 1) * s + taps[-1] * d + 1   # the padded extent read
    x = _pad(F, x, axis, p, length - n - p, pad_value)   # a negative amount crops what no tap reads
    if last:
        x = F.transpose(F.reshape(x, x.shape[:axis] + (blocks, s)), tuple(range(axis)) + (axis + 1, axis))
    y = None
    for t in taps:
        index = [slice(None)] * x.ndim
        if last:
            r, q = (t * d) % s, (t * d) // s
            index[axis], index[axis + 1] = slice(r, r + 1), slice(q, q + out)
        else:
            index[axis] = slice(t * d, t * d + (out - 1) * s + 1, s)
        w = x[tuple(index)]
        y = w if y is None else combine(y, w)
    return y, last


def _pooled(F, x, nd, kernel, stride, padding, dilation, ceil_mode, pad_value, combine):
    """x pooled over its last nd axes one axis at a time (max and sum are separable), the
    first axis first: it shrinks the data before the last axis's transpose.  Returns (y, the
    pooled shape, the position of each pooled axis in y): y may hold a size-1 axis before the
    last one (`_pool_axis`); the caller scales y in that layout and reshapes it to the pooled
    shape at the end, so the scaling fuses with the last pass."""
    lead = x.ndim - nd
    extra = False
    for i in range(nd):
        x, extra = _pool_axis(F, x, lead + i, kernel[i], stride[i], padding[i], dilation[i], ceil_mode,
                              pad_value, combine)
    positions = [lead + i for i in range(nd)]
    if extra:
        positions[-1] += 1
    shape = tuple(e for a, e in enumerate(x.shape) if not (extra and a == positions[-1] - 1))
    return x, shape, positions


def max_pool(F, nd, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, name="max_pool"):
    """Max pooling over the last nd axes (any nd; the fs names are 1-D and 2-D)."""
    kernel, stride, padding, dilation = _pool_args(F, name, x, nd, kernel_size, stride, padding, dilation)
    low = -math.inf if x.dtype.is_float else {"int32": -(2 ** 31), "int8": -128}.get(x.dtype.name, 0)
    y, shape, _ = _pooled(F, x, nd, kernel, stride, padding, dilation, ceil_mode, low, F.maximum)
    return F.reshape(y, shape)


def avg_pool(F, nd, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
             divisor_override=None, name="avg_pool"):
    """Average pooling over the last nd axes with PyTorch's divisor rules."""
    kernel, stride, padding, ones = _pool_args(F, name, x, nd, kernel_size, stride, padding)
    if divisor_override is not None and (not isinstance(divisor_override, int) or divisor_override <= 0):
        _fail(F, f"{name} divisor_override must be a positive int, got {divisor_override!r}")
    if not x.dtype.is_float:
        x = F.cast(x, dt.float32)
    total, shape, positions = _pooled(F, x, nd, kernel, stride, padding, ones, ceil_mode, 0.0, lambda a, b: a + b)
    spatial = x.shape[x.ndim - nd:]
    full = all(out_size(spatial[i], kernel[i], stride[i], padding[i], 1, ceil_mode)
               == out_size(spatial[i], kernel[i], stride[i], padding[i], 1, False)
               and (count_include_pad or padding[i] == 0) for i in range(nd))
    if divisor_override or full:   # one divisor for every window
        return F.reshape(total * (1.0 / (divisor_override or math.prod(kernel))), shape)
    # the divisor per window, separable over the axes: along axis i, window o covers
    # [o * s - p, o * s - p + k) clipped to the padded input [-p, n + p) (the ceil_mode overhang
    # never counts) and, without count_include_pad, to the input [0, n); an elementwise function
    # of arange (a host input) that fuses with the last pass, so no per-window constant array
    # is stored
    count = None
    for i in range(nd):
        n, k, s, p = spatial[i], kernel[i], stride[i], padding[i]
        out = total.shape[positions[i]]
        layout = [1] * total.ndim
        layout[positions[i]] = out
        # shaped before any arithmetic: a reshape of a computed value would end the kernel
        o = F.reshape(x.trace.emit("arange", [], {"start": 0, "stop": out, "step": 1, "dtype": "int32"}),
                      tuple(layout))
        start = F.cast(o, dt.float32) * float(s) - float(p)
        end = F.minimum(start + float(k), float(n + p))
        if not count_include_pad:
            start, end = F.maximum(start, 0.0), F.minimum(end, float(n))
        count = end - start if count is None else count * (end - start)
    return F.reshape(total / count, shape)


def adaptive_avg_pool(F, nd, x, output_size, name="adaptive_avg_pool"):
    _tensor(F, x, name, "its input", nd + 1)
    spatial = x.shape[x.ndim - nd:]
    if isinstance(output_size, (list, tuple)) and any(o is None for o in output_size):
        output_size = tuple(n if o is None else o for n, o in zip(spatial, output_size))
    output_size = _tuple(F, output_size, nd, name, "output_size", 1)
    if all(o == 1 for o in output_size):
        y = F.mean(x if x.dtype.is_float else F.cast(x, dt.float32),
                   axis=tuple(range(x.ndim - nd, x.ndim)), keepdims=True)
        return y
    if any(n % o for n, o in zip(spatial, output_size)):
        x = x if x.dtype.is_float else F.cast(x, dt.float32)
        for i, o in enumerate(output_size):
            x = _adaptive_axis(F, x, x.ndim - nd + i, o, name)
        return x
    kernel = tuple(n // o for n, o in zip(spatial, output_size))
    return avg_pool(F, nd, x, kernel, kernel, name=name)


def _adaptive_axis(F, x, axis, out, name):
    """x averaged along `axis` over PyTorch's adaptive windows [floor(o n / out),
    ceil((o + 1) n / out)) -- of unequal sizes when out does not divide n.  One gather of the K
    (the widest window) taps of every window, [..., out * K, ...] (indices from arange: a small
    kernel; a take along axis 0 of the flattened array), each tap times 1 / its window's size,
    the taps past a window's end masked to 0, a sum over K.  An axis that out divides is a
    reshape and a mean."""
    n = x.shape[axis]
    if n % out == 0:
        x = F.reshape(x, tuple(x.shape[:axis]) + (out, n // out) + tuple(x.shape[axis + 1:]))
        return F.mean(x, axis=axis + 1)
    widest = max(-(-((o + 1) * n) // out) - (o * n) // out for o in range(out))

    def iota(count, shape):
        return F.reshape(x.trace.emit("arange", [], {"start": 0, "stop": count, "step": 1, "dtype": "float32"}), shape)
    o, t = iota(out, (out, 1)), iota(widest, (1, widest))
    # floor(o n / out) and ceil((o + 1) n / out) in float32: exact while o n < 2**24 (a
    # quotient that is not an integer is at least 1 / out away from one)
    start = F.floor(o * float(n) / float(out))
    end = F.ceil((o + 1.0) * float(n) / float(out))
    at = start + t
    index = exact_int32(F, F.reshape(F.minimum(at, float(n - 1)), (out * widest,)), n)
    taps = take_axis(F, x, index, axis, f"{name}: a window along axis {axis}", checked=False)
    rest = (1,) * (x.ndim - axis - 1)
    taps = F.reshape(taps, tuple(x.shape[:axis]) + (out, widest) + tuple(x.shape[axis + 1:]))
    inside = F.reshape(at < end, (out, widest) + rest)
    share = F.reshape(F.cast(1.0 / (end - start), x.dtype), (out, 1) + rest)   # 1 / the window's size
    return F.sum(F.where(inside, taps * share, _filled(F, x, (), 0.0)), axis=axis + 1)


_POOL_EXAMPLE = "fs.{}(fs.reshape(x, (1, 1, 3, -1)), 2)"
composite("max_pool1d", "window", dtypes="numeric", aten=("aten.max_pool1d.default",),
          doc="max over windows of the last axis of [N, C, L] (torch.nn.functional.max_pool1d: kernel_size, "
              "stride (default kernel_size), padding, dilation, ceil_mode)",
          example="fs.max_pool1d(fs.reshape(x, (1, 3, -1)), 2)")(
    lambda F, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False:
    max_pool(F, 1, x, kernel_size, stride, padding, dilation, ceil_mode, "max_pool1d"))
composite("max_pool2d", "window", dtypes="numeric", aten=("aten.max_pool2d.default",),
          doc="max over windows of the last two axes of [N, C, H, W] (torch.nn.functional.max_pool2d)",
          example=_POOL_EXAMPLE.format("max_pool2d"))(
    lambda F, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False:
    max_pool(F, 2, x, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d"))
composite("avg_pool1d", "window", dtypes="numeric", aten=("aten.avg_pool1d.default",),
          doc="mean over windows of the last axis of [N, C, L] (torch.nn.functional.avg_pool1d: kernel_size, "
              "stride, padding, ceil_mode, count_include_pad); ints give float32",
          example="fs.avg_pool1d(fs.reshape(x, (1, 3, -1)), 2)")(
    lambda F, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True:
    avg_pool(F, 1, x, kernel_size, stride, padding, ceil_mode, count_include_pad, None, "avg_pool1d"))
composite("avg_pool2d", "window", dtypes="numeric", aten=("aten.avg_pool2d.default",),
          doc="mean over windows of the last two axes (torch.nn.functional.avg_pool2d, divisor_override "
              "included); ints give float32",
          example=_POOL_EXAMPLE.format("avg_pool2d"))(
    lambda F, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
    divisor_override=None:
    avg_pool(F, 2, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, "avg_pool2d"))
composite("adaptive_avg_pool1d", "window", dtypes="numeric",
          aten=("aten.adaptive_avg_pool1d.default",),
          doc="mean pooling to `output_size` along the last axis (PyTorch's adaptive windows, of unequal "
              "sizes when the output size does not divide the input's)",
          example="fs.adaptive_avg_pool1d(fs.reshape(x, (1, 3, -1)), 2)")(
    lambda F, x, output_size: adaptive_avg_pool(F, 1, x, output_size, "adaptive_avg_pool1d"))
composite("adaptive_avg_pool2d", "window", dtypes="numeric",
          aten=("aten.adaptive_avg_pool2d.default", "aten._adaptive_avg_pool2d.default"),
          doc="mean pooling to `output_size` over the last two axes (PyTorch's adaptive windows; 1 is "
              "global average pooling)",
          example="fs.adaptive_avg_pool2d(fs.reshape(x, (1, 1, 3, -1)), (1, 2))")(
    lambda F, x, output_size: adaptive_avg_pool(F, 2, x, output_size, "adaptive_avg_pool2d"))


# ---- convolution ---------------------------------------------------------------------------------
def _dilate_weight(F, w, dilation):
    for i, d in enumerate(dilation):
        w = _zero_insert(F, w, 2 + i, d)
    return w


def _block_diagonal(F, w, groups):
    """A grouped weight [K, C/g, k...] as the dense [K, C, k...] with zeros outside each group's
    block: one conv2d (g times the multiply-adds) instead of g small ones."""
    kg, cg = w.shape[0] // groups, w.shape[1]
    return F.concatenate([_pad(F, w[g * kg:(g + 1) * kg], 1, g * cg, (groups - 1 - g) * cg, 0.0)
                          for g in range(groups)], axis=0)


def _block_diagonal_transposed(F, w, groups):
    """A grouped transposed-convolution weight [Cin, Cout/g, k...] as the dense [Cin, Cout, k...]."""
    ig, og = w.shape[0] // groups, w.shape[1]
    return F.concatenate([_pad(F, w[g * ig:(g + 1) * ig], 1, g * og, (groups - 1 - g) * og, 0.0)
                          for g in range(groups)], axis=0)


def _conv3d(F, x, w, b, stride, padding, dilation, groups):
    """conv3d as kd conv2d's: the depth axis joins the batch, each depth tap of the kernel is a
    conv2d over every depth, and the output depth d sums tap i's result at depth d * s + i * dil."""
    if groups > 1:
        w = _block_diagonal(F, w, groups)
    n, c = x.shape[:2]
    k, kd, kh, kw = w.shape[0], w.shape[2], w.shape[3], w.shape[4]
    x = _pad(F, x, 2, padding[0], padding[0], 0.0)
    dp = x.shape[2]
    do = (dp - dilation[0] * (kd - 1) - 1) // stride[0] + 1
    planes = F.reshape(F.transpose(x, (0, 2, 1, 3, 4)), (n * dp, c) + x.shape[3:])
    y = None
    for i in range(kd):
        wi = F.reshape(w[:, :, i:i + 1], (k, w.shape[1], kh, kw))
        z = F.conv2d(planes, _dilate_weight(F, wi, dilation[1:]), None, stride=list(stride[1:]),
                     padding=list(padding[1:]))
        z = F.reshape(z, (n, dp) + z.shape[1:])
        start = i * dilation[0]
        zi = z[:, start:start + (do - 1) * stride[0] + 1:stride[0]]
        y = zi if y is None else y + zi
    y = F.transpose(y, (0, 2, 1, 3, 4))
    return y if b is None else y + F.reshape(b, (b.shape[0], 1, 1, 1))


def _conv_transpose(F, x, w, b, stride, padding, dilation, output_padding, groups):
    nd = x.ndim - 2
    if groups > 1:
        w = _block_diagonal_transposed(F, w, groups)
    for i in range(nd):
        x = _zero_insert(F, x, 2 + i, stride[i])
        before = dilation[i] * (w.shape[2 + i] - 1) - padding[i]
        x = _pad(F, x, 2 + i, before, before + output_padding[i], 0.0)
    for i in range(nd):
        w = _flip_taps(F, w, 2 + i)
    wt = F.transpose(w, (1, 0) + tuple(range(2, 2 + nd)))   # [Cout, Cin, k...], taps reversed
    if nd == 3:
        return _conv3d(F, x, wt, b, (1, 1, 1), (0, 0, 0), dilation, 1)
    return F.conv2d(x, _dilate_weight(F, wt, dilation), b, stride=1, padding=0)


def convolution(F, x, w, b=None, stride=1, padding=0, dilation=1, transposed=False, output_padding=0, groups=1,
                name="convolution"):
    """aten.convolution: N-D (1, 2, 3) convolution or transposed convolution with any stride,
    padding (ints, 'valid', 'same'), dilation, output_padding and groups."""
    x = _tensor(F, x, name, "its input", 3)
    w = _tensor(F, w, name, "its weight", 3)
    nd = x.ndim - 2
    if nd not in (1, 2, 3) or w.ndim != x.ndim:
        _fail(F, f"{name}: input of shape {tuple(x.shape)} and weight of shape {tuple(w.shape)} are not an "
              "N-D convolution's [N, C, spatial...] and [K, C / groups, kernel...] (N-D: 1, 2 or 3)",
              kind="ShapeError")
    if not isinstance(groups, int) or groups < 1:
        _fail(F, f"{name} groups must be an int >= 1, got {groups!r}")
    dilation = _tuple(F, dilation, nd, name, "dilation", 1)
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        elif padding == "same" and not transposed:
            total = [dilation[i] * (w.shape[2 + i] - 1) for i in range(nd)]
            if any(t % 2 for t in total):
                _fail(F, f"{name} padding='same' with an even kernel span needs asymmetric padding",
                      hint="pad the input yourself (fs.concatenate with zeros) and use padding=0")
            padding = [t // 2 for t in total]
        else:
            _fail(F, f"{name} padding={padding!r} is not supported", hint="use ints, 'valid' or 'same'")
    stride = _tuple(F, stride, nd, name, "stride", 1)
    padding = _tuple(F, padding, nd, name, "padding")
    output_padding = _tuple(F, output_padding, nd, name, "output_padding")
    # integers (torch's integer conv2d keeps the dtype and wraps, as fs.conv2d does) only as one
    # plain conv2d: the compositions below build their zero-inserted operands for floats
    plain = not transposed and nd in (1, 2) and groups == 1 and all(d == 1 for d in dilation)
    for t, what in ((x, "input"), (w, "weight")):
        if not t.dtype.is_float and not plain:
            _fail(F, f"{name} of integer tensors is supported as a plain convolution (no groups, dilation or "
                  f"transposition), got a {t.dtype} {what}", kind="DTypeError",
                  hint="cast the input and the weight to float32 (or float16) first")
    cin = x.shape[1]
    if transposed:
        ok = w.shape[0] == cin and cin % groups == 0
        want = f"[{cin}, C_out / groups, kernel...]"
    else:
        ok = cin % groups == 0 and w.shape[1] * groups == cin and w.shape[0] % groups == 0
        want = f"[K (a multiple of groups), {cin} / groups = {cin // groups if cin % groups == 0 else '?'}, kernel...]"
    if not ok:
        _fail(F, f"{name}: weight of shape {tuple(w.shape)} does not fit an input of {cin} channels with groups="
              f"{groups}; it must be {want}", kind="ShapeError")
    if b is not None:
        k = w.shape[1] * groups if transposed else w.shape[0]
        if not isinstance(b, F.Tensor) or tuple(b.shape) != (k,):
            _fail(F, f"{name} bias must have shape ({k},), got "
                  f"{tuple(b.shape) if isinstance(b, F.Tensor) else type(b).__name__}", kind="ShapeError")
    for i in range(nd):
        span = dilation[i] * (w.shape[2 + i] - 1) + 1
        if not transposed and x.shape[2 + i] + 2 * padding[i] < span:
            _fail(F, f"{name}: the kernel (span {span}) is larger than the padded input "
                  f"({x.shape[2 + i]} + 2 * {padding[i]}) along spatial axis {i}", kind="ShapeError")
        if transposed and output_padding[i] >= max(stride[i], dilation[i]):
            _fail(F, f"{name} output_padding {output_padding[i]} must be smaller than the stride or the dilation")
        if transposed and (x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + span + output_padding[i] < 1:
            _fail(F, f"{name}: padding {padding[i]} leaves no output along spatial axis {i}", kind="ShapeError")
    if nd == 1:   # a height-1 image
        x2 = F.reshape(x, (x.shape[0], x.shape[1], 1, x.shape[2]))
        w2 = F.reshape(w, (w.shape[0], w.shape[1], 1, w.shape[2]))
        y = convolution(F, x2, w2, b, (1,) + stride, (0,) + padding, (1,) + dilation, transposed,
                        (0,) + output_padding, groups, name)
        return F.reshape(y, (y.shape[0], y.shape[1], y.shape[3]))
    if transposed:
        return _conv_transpose(F, x, w, b, stride, padding, dilation, output_padding, groups)
    if nd == 3:
        return _conv3d(F, x, w, b, stride, padding, dilation, groups)
    if groups > 1:
        w = _block_diagonal(F, w, groups)
    return F.conv2d(x, _dilate_weight(F, w, dilation), b, stride=list(stride), padding=list(padding))


_CONV_EXAMPLE = "fs.{}(fs.reshape(x, (1, 3, -1)), fs.reshape(y[:, :2], ({})))"
composite("conv1d", "window", aten=("aten.conv1d.default",),
          doc="1-D convolution of [N, C, L] by [K, C / groups, k] (torch.nn.functional.conv1d: bias, stride, "
              "padding (ints, 'valid', 'same'), dilation, groups), as conv2d on a height-1 image",
          example=_CONV_EXAMPLE.format("conv1d", "1, 3, 2"))(
    lambda F, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1:
    convolution(F, x, weight, bias, stride, padding, dilation, False, 0, groups, "conv1d"))
composite("conv_transpose1d", "window", aten=("aten.conv_transpose1d.default",),
          doc="transposed 1-D convolution of [N, Cin, L] by [Cin, Cout / groups, k] "
              "(torch.nn.functional.conv_transpose1d: bias, stride, padding, output_padding, groups, dilation): "
              "the input zero-inserted by the stride, convolved with the flipped weight",
          example=_CONV_EXAMPLE.format("conv_transpose1d", "3, 1, 2"))(
    lambda F, x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1:
    convolution(F, x, weight, bias, stride, padding, dilation, True, output_padding, groups, "conv_transpose1d"))
composite("conv_transpose2d", "window", aten=("aten.conv_transpose2d.input",),
          doc="transposed 2-D convolution of [N, Cin, H, W] by [Cin, Cout / groups, kh, kw] "
              "(torch.nn.functional.conv_transpose2d)",
          example="fs.conv_transpose2d(fs.reshape(x, (1, 3, 2, -1)), fs.reshape(y[:, :2], (3, 1, 1, 2)))")(
    lambda F, x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1:
    convolution(F, x, weight, bias, stride, padding, dilation, True, output_padding, groups, "conv_transpose2d"))


# ---- per-group norms -----------------------------------------------------------------------------
def _per_channel(F, v, c, name, what, rank):
    if v is None:
        return None
    if not isinstance(v, F.Tensor) or tuple(v.shape) != (c,):
        got = tuple(v.shape) if isinstance(v, F.Tensor) else type(v).__name__
        _fail(F, f"{name} {what} must have shape ({c},), got {got}", kind="ShapeError")
    return F.reshape(v, (c,) + (1,) * (rank - 2))


@composite("group_norm", "window", aten=("aten.group_norm.default",),
           doc="[N, C, ...] normalised over each group of C / num_groups channels and the spatial axes, "
               "then weight * y + bias per channel (torch.nn.functional.group_norm)",
           example="fs.group_norm(fs.reshape(x, (1, 3, -1)), 3)")
def group_norm(F, x, num_groups, weight=None, bias=None, eps=1e-5, name="group_norm"):
    _tensor(F, x, name, "its input", 2)
    c = x.shape[1]
    if not isinstance(num_groups, int) or num_groups < 1 or c % num_groups:
        _fail(F, f"{name}: num_groups {num_groups!r} must divide the {c} channels")
    w = _per_channel(F, weight, c, name, "weight", x.ndim)
    b = _per_channel(F, bias, c, name, "bias", x.ndim)
    y = F.reshape(F.layer_norm(F.reshape(x, (x.shape[0], num_groups, -1)), None, None, eps), x.shape)
    if w is not None:
        y = y * w
    return y if b is None else y + b


@composite("instance_norm", "window", aten=("aten.instance_norm.default",), onnx=("InstanceNormalization",),
           doc="[N, C, ...] normalised per sample and channel over the spatial axes "
               "(torch.nn.functional.instance_norm; use_input_stats=False normalises by running_mean / "
               "running_var like batch_norm)",
           example="fs.instance_norm(fs.reshape(x, (1, 3, -1)))")
def instance_norm(F, x, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    _tensor(F, x, "instance_norm", "its input", 2)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            _fail(F, "instance_norm with use_input_stats=False needs running_mean and running_var")
        return F.batch_norm(x, running_mean, running_var, weight, bias, eps)
    return group_norm(F, x, x.shape[1], weight, bias, eps, "instance_norm")
