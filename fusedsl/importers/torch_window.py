"""Window ops of PyTorch written with fusedsl's primitives: pooling and convolution variants.

fusedsl has one window op, `fs.conv2d` (NCHW, stride and symmetric padding).  Until the
vocabulary has more, the importer composes the others from it and from slices, exactly:
  * pooling (max/avg, 1-D/2-D/3-D, stride, padding, dilation, ceil_mode, count_include_pad,
    divisor_override; adaptive average pooling when the input divides into equal windows) is
    the maximum / sum of the strided slices of the padded input, one per kernel tap;
  * conv1d is conv2d on a height-1 image;
  * dilation zero-inserts the weight (a weight-sized op), then conv2d;
  * groups make the weight block-diagonal (zeros outside each group's channels): one conv2d;
  * transposed convolution zero-inserts the input by the stride, pads it by
    dilation * (kernel - 1) - padding (+ output_padding at the end; negative pads crop), and
    convolves with the flipped weight, in- and out-channels swapped;
  * conv3d is one conv2d per depth tap of the kernel over all depths at once (depth joined
    to the batch), the taps' results summed at the strided output depths.
Each rule takes the ATen op's own arguments.
"""
from __future__ import annotations

import math

from ..frontend import api as fs
from .torch_ops import Missing, Unsupported, filled


def _tuple(v, n):
    if isinstance(v, int):
        return (v,) * n
    v = tuple(v)
    return v * n if len(v) == 1 else v


def _pad(x, axis, before, after, value):
    """x padded along `axis` with `value` (negative amounts crop)."""
    if before < 0 or after < 0:
        index = [slice(None)] * x.ndim
        index[axis] = slice(max(-before, 0), x.shape[axis] - max(-after, 0))
        x = x[tuple(index)]
        before, after = max(before, 0), max(after, 0)
    parts = []
    for amount in (before, after):
        shape = list(x.shape)
        shape[axis] = amount
        parts.append(filled(x.trace, tuple(shape), value, x.dtype.name) if amount else None)
    pieces = [p for p in (parts[0], x, parts[1]) if p is not None]
    return fs.concatenate(pieces, axis=axis) if len(pieces) > 1 else x


def _zero_insert(x, axis, s):
    """s - 1 zeros between neighbours along `axis`: (n - 1) * s + 1 elements."""
    if s == 1:
        return x
    n = x.shape[axis]
    shape = x.shape[:axis + 1] + (1,) + x.shape[axis + 1:]
    spread = fs.reshape(x, shape)
    zeros_shape = list(shape)
    zeros_shape[axis + 1] = s - 1
    spread = fs.concatenate([spread, filled(x.trace, tuple(zeros_shape), 0, x.dtype.name)], axis=axis + 1)
    merged = fs.reshape(spread, x.shape[:axis] + (n * s,) + x.shape[axis + 1:])
    index = [slice(None)] * x.ndim
    index[axis] = slice(0, (n - 1) * s + 1)
    return merged[tuple(index)]


def _flip(x, axis):
    """x reversed along a short axis (a kernel's taps): its one-element slices concatenated."""
    n = x.shape[axis]
    if n == 1:
        return x
    parts = []
    for i in reversed(range(n)):
        index = [slice(None)] * x.ndim
        index[axis] = slice(i, i + 1)
        parts.append(x[tuple(index)])
    return fs.concatenate(parts, axis=axis)


# ---- pooling ---------------------------------------------------------------------------------
def _out_size(n, k, s, p, d, ceil_mode):
    span = d * (k - 1) + 1
    if ceil_mode:
        out = -(-(n + 2 * p - span) // s) + 1
        if (out - 1) * s >= n + p:   # the last window must start inside the input or the left padding
            out -= 1
    else:
        out = (n + 2 * p - span) // s + 1
    return out


def _windows(x, nd, kernel, stride, padding, dilation, ceil_mode, pad_value, extra_value=None):
    """The strided slices of x (padded on its last nd axes), one per kernel tap, each of the
    output's shape."""
    outs = []
    for i in range(nd):
        axis = x.ndim - nd + i
        n = x.shape[axis]
        out = _out_size(n, kernel[i], stride[i], padding[i], dilation[i], ceil_mode)
        if out <= 0:
            raise Unsupported(f"the pooling window is larger than the padded input ({n} + 2 * {padding[i]})")
        need = (out - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1
        extra = max(0, need - (n + 2 * padding[i]))
        x = _pad(x, axis, padding[i], padding[i], pad_value)
        if extra:
            x = _pad(x, axis, 0, extra, pad_value if extra_value is None else extra_value)
        outs.append(out)
    taps = [()]
    for i in range(nd):
        taps = [t + (j,) for t in taps for j in range(kernel[i])]
    for tap in taps:
        index = [slice(None)] * (x.ndim - nd)
        for i, j in enumerate(tap):
            start = j * dilation[i]
            index.append(slice(start, start + (outs[i] - 1) * stride[i] + 1, stride[i]))
        yield x[tuple(index)]


def _pool_args(x, nd, kernel, stride, padding, dilation=1):
    if x.ndim < nd + 1:
        raise Unsupported(f"pooling needs {nd + 1} or more axes")
    kernel = _tuple(kernel, nd)
    stride = _tuple(stride, nd) if stride not in (None, [], ()) else kernel
    return kernel, stride, _tuple(padding, nd), _tuple(dilation, nd)


def _tiled(x, nd, kernel, stride, padding, dilation, ceil_mode):
    """x with each of its last nd axes split into (windows, kernel) when the windows tile the
    input (stride == kernel, no padding or dilation; a remainder that fits no window is
    cropped): pooling is then one reduction over the kernel axes instead of a slice per tap."""
    if any(p for p in padding) or any(d != 1 for d in dilation) or tuple(stride) != tuple(kernel):
        return None
    lead = x.shape[:x.ndim - nd]
    outs = [_out_size(n, k, k, 0, 1, ceil_mode) for n, k in zip(x.shape[x.ndim - nd:], kernel)]
    if any(o * k > n for o, k, n in zip(outs, kernel, x.shape[x.ndim - nd:])):
        return None   # ceil_mode's partial last window
    index = [slice(None)] * len(lead) + [slice(0, o * k) for o, k in zip(outs, kernel)]
    x = x[tuple(index)]
    shape = lead + tuple(v for o, k in zip(outs, kernel) for v in (o, k))
    axes = tuple(len(lead) + 2 * i + 1 for i in range(nd))
    return fs.reshape(x, shape), axes


def _reduce_each(fn, x, axes):
    """fn over the kernel axes one axis at a time, the last first: each is a reduction over one
    axis (a row kernel for the last, a column kernel for the others), which print as Ascend C,
    where one reduction over the separated axes (3, 5) of [N, C, Ho, kh, Wo, kw] does not."""
    for a in sorted(axes, reverse=True):
        x = fn(x, axis=a)
    return x


def _max_pool(nd):
    def rule(x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        kernel, stride, padding, dilation = _pool_args(x, nd, kernel_size, stride, padding, dilation)
        tiled = _tiled(x, nd, kernel, stride, padding, dilation, ceil_mode)
        if tiled is not None:
            return _reduce_each(fs.max, *tiled)
        low = -math.inf if x.dtype.is_float else int(-(2 ** 31)) if x.dtype.name == "int32" else -128
        y = None
        for w in _windows(x, nd, kernel, stride, padding, dilation, ceil_mode, low):
            y = w if y is None else fs.maximum(y, w)
        return y
    return rule


def _max_pool_with_indices(nd):
    values = _max_pool(nd)

    def rule(*args, **kw):
        return values(*args, **kw), Missing("the indices of max pooling (fusedsl has no argmax over windows)")
    return rule


def _avg_pool(nd):
    def rule(x, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
        kernel, stride, padding, _ = _pool_args(x, nd, kernel_size, stride, padding)
        ones = (1,) * nd
        tiled = _tiled(x, nd, kernel, stride, padding, ones, ceil_mode)
        if tiled is not None:
            y = _reduce_each(fs.sum, *tiled)
            return y * (1.0 / (divisor_override or math.prod(kernel)))
        total = None
        for w in _windows(x, nd, kernel, stride, padding, ones, ceil_mode, 0.0):
            total = w if total is None else total + w
        if divisor_override:
            return total * (1.0 / divisor_override)
        full = all(_out_size(x.shape[x.ndim - nd + i], kernel[i], stride[i], padding[i], 1, ceil_mode)
                   == _out_size(x.shape[x.ndim - nd + i], kernel[i], stride[i], padding[i], 1, False)
                   and (count_include_pad or padding[i] == 0) for i in range(nd))
        if full:   # every window counts kernel-many elements
            return total * (1.0 / math.prod(kernel))
        # the divisor per window: the same windows summed over ones (padding counts when
        # count_include_pad, the ceil_mode overhang never does)
        spatial = x.shape[x.ndim - nd:]
        one = filled(x.trace, spatial, 1.0, "float32" if not x.dtype.is_float else x.dtype.name)
        count = None
        for w in _windows(one, nd, kernel, stride, padding, ones, ceil_mode,
                          1.0 if count_include_pad else 0.0, extra_value=0.0):
            count = w if count is None else count + w
        return total / count
    return rule


def _adaptive_avg_pool(nd):
    def rule(x, output_size):
        output_size = _tuple(output_size, nd)
        spatial = x.shape[x.ndim - nd:]
        if any(o is None for o in output_size):
            output_size = tuple(n if o is None else o for n, o in zip(spatial, output_size))
        if all(o == 1 for o in output_size):
            return fs.mean(x, axis=tuple(range(x.ndim - nd, x.ndim)), keepdims=True)
        if any(n % o for n, o in zip(spatial, output_size)):
            raise Unsupported(f"adaptive pooling of {tuple(spatial)} to {output_size} has windows of unequal "
                              "sizes; fusedsl imports it when the output size divides the input size")
        kernel = tuple(n // o for n, o in zip(spatial, output_size))
        return _avg_pool(nd)(x, kernel, kernel)
    return rule


# ---- convolution -----------------------------------------------------------------------------
def _dilate_weight(w, dilation):
    for i, d in enumerate(dilation):
        w = _zero_insert(w, 2 + i, d)
    return w


def _block_diagonal(w, groups):
    """A grouped weight [K, C/g, kh, kw] as the dense [K, C, kh, kw] with zeros outside each
    group's block: one conv2d (g times the multiply-adds) instead of g small ones."""
    k, cg = w.shape[0], w.shape[1]
    kg = k // groups
    rows = []
    for g in range(groups):
        block = w[g * kg:(g + 1) * kg]
        rows.append(_pad(block, 1, g * cg, (groups - 1 - g) * cg, 0.0))
    return fs.concatenate(rows, axis=0)


def _conv2d(x, w, b, stride, padding, dilation, groups):
    if groups > 1:
        w = _block_diagonal(w, groups)
    w = _dilate_weight(w, dilation)
    return fs.conv2d(x, w, b, stride=list(stride), padding=list(padding))


def _conv3d(x, w, b, stride, padding, dilation, groups):
    """conv3d as kd conv2d's: the depth axis joins the batch, each depth tap of the kernel is a
    conv2d over every depth, and the output depth d sums tap i's result at depth d * s + i * dil."""
    if groups > 1:
        w = _block_diagonal(w, groups)
    n, c = x.shape[:2]
    k, kd, kh, kw = w.shape[0], w.shape[2], w.shape[3], w.shape[4]
    x = _pad(x, 2, padding[0], padding[0], 0.0)
    dp = x.shape[2]
    do = (dp - dilation[0] * (kd - 1) - 1) // stride[0] + 1
    if do <= 0:
        raise Unsupported("the convolution kernel is deeper than the padded input")
    planes = fs.reshape(fs.transpose(x, (0, 2, 1, 3, 4)), (n * dp, c) + x.shape[3:])
    y = None
    for i in range(kd):
        wi = fs.reshape(w[:, :, i:i + 1], (k, w.shape[1], kh, kw))
        z = _conv2d(planes, wi, None, stride[1:], padding[1:], dilation[1:], 1)
        z = fs.reshape(z, (n, dp) + z.shape[1:])
        start = i * dilation[0]
        zi = z[:, start:start + (do - 1) * stride[0] + 1:stride[0]]
        y = zi if y is None else y + zi
    y = fs.transpose(y, (0, 2, 1, 3, 4))
    return y if b is None else y + fs.reshape(b, (b.shape[0], 1, 1, 1))


def _conv_transpose(x, w, b, stride, padding, dilation, output_padding, groups):
    nd = x.ndim - 2
    if groups > 1:
        w = _block_diagonal_transposed(w, groups)
    for i in range(nd):
        x = _zero_insert(x, 2 + i, stride[i])
        before = dilation[i] * (w.shape[2 + i] - 1) - padding[i]
        x = _pad(x, 2 + i, before, before + output_padding[i], 0.0)
    for i in range(nd):
        w = _flip(w, 2 + i)
    wt = fs.transpose(w, (1, 0) + tuple(range(2, 2 + nd)))   # [Cout, Cin, k...], taps reversed
    if nd == 3:
        return _conv3d(x, wt, b, (1, 1, 1), (0, 0, 0), dilation, 1)
    return fs.conv2d(x, _dilate_weight(wt, dilation), b, stride=1, padding=0)


def _block_diagonal_transposed(w, groups):
    """A grouped transposed-convolution weight [Cin, Cout/g, kh, kw] as the dense
    [Cin, Cout, kh, kw] with zeros outside each group's block."""
    cin, og = w.shape[0], w.shape[1]
    ig = cin // groups
    rows = []
    for g in range(groups):
        rows.append(_pad(w[g * ig:(g + 1) * ig], 1, g * og, (groups - 1 - g) * og, 0.0))
    return fs.concatenate(rows, axis=0)


def convolution(x, w, b=None, stride=1, padding=0, dilation=1, transposed=False, output_padding=0, groups=1):
    """aten.convolution (and conv1d/2d/3d, conv_transpose*): any groups, dilation, stride, padding."""
    nd = x.ndim - 2
    if nd not in (1, 2, 3):
        raise Unsupported(f"{nd}-D convolution is not supported")
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        elif padding == "same" and not transposed:
            ks = _tuple(dilation, nd)
            total = [ks[i] * (w.shape[2 + i] - 1) for i in range(nd)]
            if any(t % 2 for t in total):
                raise Unsupported("padding='same' with an even kernel span needs asymmetric padding")
            padding = [t // 2 for t in total]
        else:
            raise Unsupported(f"convolution padding={padding!r} is not supported")
    stride, padding, dilation = _tuple(stride, nd), _tuple(padding, nd), _tuple(dilation, nd)
    output_padding = _tuple(output_padding, nd)
    if nd == 1:   # a height-1 image
        x2 = fs.reshape(x, (x.shape[0], x.shape[1], 1, x.shape[2]))
        w2 = fs.reshape(w, (w.shape[0], w.shape[1], 1, w.shape[2]))
        y = convolution(x2, w2, b, (1,) + stride, (0,) + padding, (1,) + dilation, transposed,
                        (0,) + output_padding, groups)
        return fs.reshape(y, (y.shape[0], y.shape[1], y.shape[3]))
    if transposed:
        return _conv_transpose(x, w, b, stride, padding, dilation, output_padding, groups)
    if nd == 3:
        return _conv3d(x, w, b, stride, padding, dilation, groups)
    return _conv2d(x, w, b, stride, padding, dilation, groups)


def conv_nd(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    return convolution(x, w, b, stride, padding, dilation, False, 0, groups)


def conv_transpose_nd(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return convolution(x, w, b, stride, padding, dilation, True, output_padding, groups)


def window_table(aten) -> dict:
    t = {
        aten.convolution.default: convolution,
        aten.conv1d.default: conv_nd, aten.conv2d.default: conv_nd, aten.conv3d.default: conv_nd,
        aten.conv_transpose1d.default: conv_transpose_nd, aten.conv_transpose2d.input: conv_transpose_nd,
        aten.conv_transpose3d.input: conv_transpose_nd,
        aten.max_pool1d.default: _max_pool(1), aten.max_pool2d.default: _max_pool(2),
        aten.max_pool3d.default: _max_pool(3),
        aten.max_pool2d_with_indices.default: _max_pool_with_indices(2),
        aten.max_pool3d_with_indices.default: _max_pool_with_indices(3),
        aten.avg_pool1d.default: _avg_pool(1), aten.avg_pool2d.default: _avg_pool(2),
        aten.avg_pool3d.default: _avg_pool(3),
        aten.adaptive_avg_pool1d.default: _adaptive_avg_pool(1),
        aten.adaptive_avg_pool2d.default: _adaptive_avg_pool(2),
        aten._adaptive_avg_pool2d.default: _adaptive_avg_pool(2),
        aten.adaptive_avg_pool3d.default: _adaptive_avg_pool(3),
        aten._adaptive_avg_pool3d.default: _adaptive_avg_pool(3),
    }
    return t


# shared with the ONNX importer (MaxPool, AveragePool)
max_pool, avg_pool = _max_pool, _avg_pool
