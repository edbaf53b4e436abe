"""The ATen table: each ATen op torch.export can produce, replayed with fusedsl ops.

`aten_table()` maps an ATen overload to a rule `rule(*args, **kwargs)` over fusedsl
tensors and Python values (the node's own arguments).  A rule raises `Unsupported` for
an argument combination fusedsl lacks; the importer turns that into an
UnsupportedOpError at the model's line.  Ops fusedsl has no primitive for but that are
exact compositions of primitives it has (hardswish = x * clip(x + 3, 0, 6) / 6, ...) are
decomposed here, in `_COMPOSITES`, one line each; an op the vocabulary gains later
replaces its composite.  Creation ops of a static shape and one value (zeros, full,
*_like) become a 0-d constant broadcast to the shape: no GM buffer for a fill.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from .. import dtypes as dt
from .. import ops
from ..frontend import api as fs

TORCH_DTYPES = {"torch.float32": "float32", "torch.float16": "float16", "torch.bfloat16": "bfloat16",
                "torch.int32": "int32", "torch.int64": "int32", "torch.int16": "int32", "torch.int8": "int8",
                "torch.uint8": "uint8", "torch.bool": "bool", "torch.float64": "float32"}

# torch.export inserts these checks of a tensor's dtype/device/shape; they compute nothing
METADATA_ASSERTS = {"_assert_tensor_metadata", "_assert_scalar", "_assert_async", "_functional_assert_async",
                    "_functional_assert_scalar", "sym_constrain_range", "sym_constrain_range_for_size",
                    "_functional_sym_constrain_range", "_functional_sym_constrain_range_for_size",
                    "_print", "_make_dep_token"}
# ops whose result size depends on the data: fusedsl kernels have static shapes
DATA_DEPENDENT = {"masked_select", "nonzero", "nonzero_numpy", "argwhere", "unique", "unique_dim",
                  "unique_consecutive", "_unique", "_unique2", "item", "_local_scalar_dense",
                  "repeat_interleave", "masked_scatter", "index_put_with_bool_mask", "sym_size", "sym_numel",
                  "sym_storage_offset", "sym_stride"}
# random ops: a fused kernel is a pure function of its inputs
RANDOM = {"rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "bernoulli", "multinomial",
          "normal", "uniform", "randperm", "native_dropout", "exponential", "poisson", "rrelu_with_noise",
          "rrelu", "cauchy", "geometric", "log_normal", "random", "_fused_dropout", "feature_dropout",
          "alpha_dropout", "feature_alpha_dropout"}


class Unsupported(Exception):
    """A mapped op with an argument combination fusedsl lacks (the message says which)."""


class Missing:
    """A result fusedsl cannot compute (e.g. the indices of max.dim without an argmax op);
    harmless unless a later op or the output uses it, which raises `Unsupported(why)`."""

    def __init__(self, why: str):
        self.why = why


def base_name(target) -> str:
    """`aten.add.Tensor` -> `add` (the packet name, without overload or trailing `_`)."""
    name = getattr(target, "__name__", None) or str(target)
    packet = getattr(target, "_overloadpacket", None)
    if packet is not None:
        name = packet.__name__
    name = name.split(".")[0]
    return name.rstrip("_") if not name.startswith("_") else "_" + name[1:].rstrip("_")


def _dims_of(x, dims):
    if dims is None:
        return None
    dims = [dims] if isinstance(dims, int) else list(dims)
    return tuple(d % max(x.ndim, 1) for d in dims)


def _fs_dtype(dtype):
    if dtype is None:
        return None
    if str(dtype) not in TORCH_DTYPES:
        raise Unsupported(f"dtype {dtype} is not supported")
    return TORCH_DTYPES[str(dtype)]


def _reduce(fn):
    def rule(x, dim=None, keepdim=False, *rest, dtype=None, **kw):
        if dtype is not None:
            x = fs.cast(x, _fs_dtype(dtype))
        axes = _dims_of(x, dim)
        if axes == ():
            axes = None
        if x.ndim == 0:
            return x
        return fn(x, axis=axes, keepdims=keepdim)
    return rule


def _count(x, axes) -> int:
    n = 1
    for a in (range(x.ndim) if axes is None else axes):
        n *= x.shape[a]
    return n


def _var(x, dim=None, *, correction=None, keepdim=False, unbiased=None):
    """var over `dim` with torch's correction (default 1): sum((x - mean)^2) / (N - correction)."""
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    axes = _dims_of(x, dim)
    axes = None if axes == () else axes
    if not x.dtype.is_float:
        x = fs.cast(x, "float32")
    d = x - fs.mean(x, axis=axes, keepdims=True)
    n = _count(x, axes) - correction
    s = fs.sum(d * d, axis=axes, keepdims=keepdim)
    return s / n if n > 0 else s * math.inf   # torch: inf (or nan) when N <= correction


def _var_unbiased(x, unbiased=True):
    return _var(x, None, correction=1 if unbiased else 0)


def _var_dim(x, dim=None, unbiased=True, keepdim=False):
    return _var(x, dim, correction=1 if unbiased else 0, keepdim=keepdim)


def _std(*args, **kw):
    return fs.sqrt(_var(*args, **kw))


def _var_mean(x, dim=None, *, correction=None, keepdim=False):
    axes = _dims_of(x, dim)
    axes = None if axes == () else axes
    return _var(x, dim, correction=correction, keepdim=keepdim), fs.mean(x, axis=axes, keepdims=keepdim)


def _minmax_dim(fn, arg):
    def rule(x, dim, keepdim=False):
        values = fn(x, axis=dim % max(x.ndim, 1), keepdims=keepdim)
        fn_idx = getattr(fs, arg, None)
        if fn_idx is None:
            return values, Missing(f"the indices of {fn.__name__}(x, dim) need fs.{arg}, which fusedsl does not "
                                   f"have yet; use amax/amin for the values only")
        return values, fn_idx(x, axis=dim % max(x.ndim, 1), keepdims=keepdim)
    return rule


def _pow(x, p):
    if not isinstance(p, (int, float)):
        raise Unsupported("pow with a tensor exponent is not supported")
    if p == 3:
        return fs.square(x) * x
    table = {2: fs.square, 1: lambda v: v, 0.5: fs.sqrt, -1: fs.reciprocal, -0.5: fs.rsqrt,
             0: lambda v: _zeros_like(v, 1)}
    if p not in table:
        if x.dtype.is_float:   # x ** p = exp(p * log(x)) is only right for x > 0
            raise Unsupported(f"pow with exponent {p} is not supported (0, 0.5, -0.5, -1, 1, 2 and 3 are)")
        raise Unsupported(f"pow with exponent {p} is not supported")
    return table[p](x)


def _erf(x):
    """erf as Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7, about 2 float32 ulps near 1) until
    the vocabulary has fs.erf."""
    if hasattr(fs, "erf"):
        return fs.erf(x)
    a = fs.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    y = 1.0 - poly * fs.exp(-(a * a))
    return fs.where(x < 0, -y, y)


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        return fs.gelu(x)
    return x * 0.5 * (1.0 + _erf(x * (1.0 / math.sqrt(2.0))))


def _layer_norm(x, shape, weight=None, bias=None, eps=1e-5, *rest):
    if len(shape) == 1:
        return fs.layer_norm(x, weight, bias, eps)
    # over the last len(shape) axes: flatten them into one row, normalise, restore
    lead = x.shape[:x.ndim - len(shape)]
    y = fs.layer_norm(fs.reshape(x, lead + (-1,)), None, None, eps)
    y = fs.reshape(y, x.shape)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def _native_layer_norm(x, shape, weight, bias, eps):
    return (_layer_norm(x, shape, weight, bias, eps), Missing("native_layer_norm's mean output"),
            Missing("native_layer_norm's rstd output"))


def _rms_norm(x, shape, weight=None, eps=None):
    if eps is None:
        eps = float(np.finfo(x.dtype.np if x.dtype.name != "bfloat16" else np.float32).eps)
    if len(shape) == 1:
        return fs.rms_norm(x, weight, eps)
    lead = x.shape[:x.ndim - len(shape)]
    y = fs.reshape(fs.rms_norm(fs.reshape(x, lead + (-1,)), None, eps), x.shape)
    return y if weight is None else y * weight


def _group_norm(x, groups, weight=None, bias=None, eps=1e-5, *rest):
    return fs.group_norm(x, groups, weight, bias, eps)


def _native_group_norm(x, weight, bias, n, c, hw, groups, eps):
    return (fs.group_norm(x, groups, weight, bias, eps), Missing("native_group_norm's mean output"),
            Missing("native_group_norm's rstd output"))


def _instance_norm(x, weight=None, bias=None, mean=None, var=None, use_input_stats=True, momentum=0.1,
                   eps=1e-5, *rest):
    return fs.instance_norm(x, mean, var, weight, bias, use_input_stats, momentum, eps)


def _linear(x, w, b=None):
    y = fs.matmul(x, fs.transpose(w))
    return y if b is None else y + b


def _batch_norm(x, weight, bias, mean, var, training=False, momentum=0.1, eps=1e-5, *rest):
    if training:
        raise Unsupported("batch_norm in training mode is not supported; call model.eval() first")
    return fs.batch_norm(x, mean, var, weight, bias, eps)


def _bn_no_training(x, weight, bias, mean, var, momentum, eps):
    return (fs.batch_norm(x, mean, var, weight, bias, eps), Missing("batch_norm's saved mean"),
            Missing("batch_norm's saved invstd"))


def _softmax(x, dim, half_to_float=False, *rest, dtype=None, **kw):
    if dtype is not None:
        x = fs.cast(x, _fs_dtype(dtype))
    return fs.softmax(x, axis=dim)


def _log_softmax(x, dim, half_to_float=False, *rest, dtype=None, **kw):
    if dtype is not None:
        x = fs.cast(x, _fs_dtype(dtype))
    if not x.dtype.is_float:
        x = fs.cast(x, "float32")
    s = x - fs.max(x, axis=dim, keepdims=True)
    return s - fs.log(fs.sum(fs.exp(s), axis=dim, keepdims=True))


def _logsumexp(x, dim, keepdim=False):
    axes = _dims_of(x, dim) or None
    m = fs.max(x, axis=axes, keepdims=True)
    y = fs.log(fs.sum(fs.exp(x - m), axis=axes, keepdims=True)) + m
    return y if keepdim else fs.reshape(y, tuple(d for i, d in enumerate(x.shape) if axes is not None and i not in axes))


def _vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        x = fs.cast(x, _fs_dtype(dtype))
    axes = _dims_of(x, dim)
    axes = None if axes == () else axes
    if ord == 2:
        return fs.sqrt(fs.sum(fs.square(x), axis=axes, keepdims=keepdim))
    if ord == 1:
        return fs.sum(fs.abs(x), axis=axes, keepdims=keepdim)
    if ord == math.inf:
        return fs.max(fs.abs(x), axis=axes, keepdims=keepdim)
    if ord == -math.inf:
        return fs.min(fs.abs(x), axis=axes, keepdims=keepdim)
    raise Unsupported(f"vector norm of order {ord} is not supported (1, 2 and +-inf are)")


def _view(x, shape):
    return fs.reshape(x, tuple(shape))


def _flatten(x, start=0, end=-1):
    if x.ndim == 0:
        return fs.reshape(x, (1,))
    start, end = start % x.ndim, end % x.ndim
    shape = x.shape[:start] + (-1,) + x.shape[end + 1:]
    return fs.reshape(x, shape)


def _unsqueeze(x, dim):
    dim = dim % (x.ndim + 1)
    return fs.reshape(x, x.shape[:dim] + (1,) + x.shape[dim:])


def _squeeze(x, dim=None):
    dims = set(range(x.ndim)) if dim is None else set(_dims_of(x, dim))
    return fs.reshape(x, tuple(d for i, d in enumerate(x.shape) if not (i in dims and d == 1)))


def _transpose(x, a, b):
    if x.ndim < 2:
        return x
    perm = list(range(x.ndim))
    a, b = a % x.ndim, b % x.ndim
    perm[a], perm[b] = perm[b], perm[a]
    return fs.transpose(x, perm)


def _numpy_t(x):
    return fs.transpose(x, list(range(x.ndim))[::-1]) if x.ndim >= 2 else x


def _expand(x, shape, *rest, **kw):
    shape = list(shape)
    lead = len(shape) - x.ndim
    for i in range(x.ndim):
        if shape[lead + i] == -1:
            shape[lead + i] = x.shape[i]
    return fs.broadcast_to(x, tuple(shape))


def _repeat(x, repeats):
    """torch.repeat (numpy's tile): broadcast each axis to (r, d) and merge."""
    repeats = list(repeats)
    shape = (1,) * (len(repeats) - x.ndim) + tuple(x.shape)
    x = fs.reshape(x, shape)
    inter, final = [], []
    for r, d in zip(repeats, shape):
        inter += [r, d]
        final.append(r * d)
    expanded = fs.broadcast_to(fs.reshape(x, tuple(v for d in shape for v in (1, d))), tuple(inter))
    return fs.reshape(expanded, tuple(final))


def _slice(x, dim=0, start=None, end=None, step=1):
    index = [slice(None)] * x.ndim
    index[dim] = slice(start, end, step)
    return x[tuple(index)]


def _narrow(x, dim, start, length):
    return _slice(x, dim, start % x.shape[dim] if start < 0 else start, (start % x.shape[dim]) + length)


def _select(x, dim, i):
    index = [slice(None)] * x.ndim
    index[dim] = i
    return x[tuple(index)]


def _split(x, size, dim=0):
    dim = dim % x.ndim
    n = x.shape[dim]
    return tuple(_slice(x, dim, s, min(s + size, n)) for s in range(0, n, size)) if size else (x,)


def _split_with_sizes(x, sizes, dim=0):
    dim, out, s = dim % x.ndim, [], 0
    for size in sizes:
        out.append(_slice(x, dim, s, s + size))
        s += size
    return tuple(out)


def _chunk(x, chunks, dim=0):
    n = x.shape[dim % x.ndim]
    return _split(x, -(-n // chunks), dim)


def _unbind(x, dim=0):
    return tuple(_select(x, dim, i) for i in range(x.shape[dim % x.ndim]))


def _stack(xs, dim=0):
    dim = dim % (xs[0].ndim + 1)
    return fs.concatenate([_unsqueeze(x, dim) for x in xs], axis=dim)


def _embedding(weight, indices, padding_idx=-1, *rest):
    return fs.take(weight, fs.cast(indices, "int32") if indices.dtype.name != "int32" else indices, axis=0)


def _index_select(x, dim, index):
    return fs.index_select(x, dim, index)


def _sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    return fs.attention(q, k, v, attn_mask, scale, is_causal, dropout_p=dropout_p)


def _index(x, indices):
    """x[..., idx, ...] with one integer index tensor (the others whole axes): fs.take."""
    used = [(axis, i) for axis, i in enumerate(indices) if i is not None]
    if len(used) != 1:
        raise Unsupported("indexing with more than one index tensor is not supported (one is: x[:, idx])")
    axis, idx = used[0]
    if idx.dtype.name == "bool":
        raise Unsupported("indexing with a boolean mask: the result's size depends on the data; "
                          "use torch.where(mask, x, 0)")
    return fs.take(x, fs.cast(idx, "int32") if idx.dtype.name != "int32" else idx, axis=axis)


def _to(x, *args, dtype=None, **kw):
    for a in args:
        if str(a).startswith("torch.") and str(a) in TORCH_DTYPES:
            dtype = a
    if dtype is None or TORCH_DTYPES.get(str(dtype)) == x.dtype.name:
        return x
    return fs.cast(x, _fs_dtype(dtype))


def _widened(x, dtype=None):
    """The input of torch's prod / cumsum / cumprod: an 8-bit integer or bool tensor is widened
    as torch widens it (its result is int64: int32 here, which the range check watches)."""
    if dtype is None and not x.dtype.is_float and x.dtype.name != "int32":
        return fs.cast(x, "int32")
    return _to(x, dtype=dtype)


def _clamp(x, lo=None, hi=None):
    if lo is not None:
        x = fs.maximum(x, lo)
    if hi is not None:
        x = fs.minimum(x, hi)
    return x


def _identity(x, *rest, **kw):
    return x


def _div(a, b, rounding_mode=None):
    if rounding_mode is None:
        return fs.divide(a, b)
    ints = all(not (hasattr(v, "dtype") and v.dtype.is_float) and not isinstance(v, float) for v in (a, b))
    if rounding_mode == "floor" and hasattr(fs, "floor_divide"):
        return fs.floor_divide(a, b) if ints else fs.floor(fs.divide(a, b))
    if rounding_mode == "trunc" and hasattr(fs, "trunc") and not ints:
        return fs.trunc(fs.divide(a, b))
    if rounding_mode == "trunc" and ints:   # C division, exact over int32 (composite._int32_division)
        return fs.div(a, b, rounding_mode="trunc")
    raise Unsupported(f"div with rounding_mode={rounding_mode!r} is not supported for these dtypes")


_REDUCTIONS = ("none", "mean", "sum")   # ATen's reduction enum


def _nll_loss(x, target, weight=None, reduction=1, ignore_index=-100):
    """nll_loss_forward: (fs.nll_loss, the total weight); the total weight is what backward
    reads, no forward op uses it."""
    if reduction not in (0, 1, 2):
        raise Unsupported(f"nll_loss reduction {reduction!r} (0 none, 1 mean, 2 sum are)")
    if target.dtype.is_float or target.dtype.name == "bool":
        raise Unsupported(f"nll_loss with {target.dtype} targets (class indices are integers)")
    return (fs.nll_loss(x, target, weight, _REDUCTIONS[reduction], ignore_index),
            Missing("nll_loss's total weight (what backward reads)"))


def _nll_loss_out(*args, **kw):
    return _nll_loss(*args, **kw)[0]


def _where(c, a, b):
    return fs.where(c, a, b)


def _masked_fill(x, mask, value):
    return fs.where(mask, value, x)


def _addmm(bias, a, b, beta=1, alpha=1):
    y = fs.matmul(a, b)
    return (y * alpha if alpha != 1 else y) + (bias * beta if beta != 1 else bias)


def _baddbmm(bias, a, b, beta=1, alpha=1):
    return _addmm(bias, a, b, beta, alpha)


def _matmul(a, b):
    if a.ndim == 1 and b.ndim == 1:
        return fs.sum(a * b)
    if a.ndim == 1:
        y = fs.matmul(fs.reshape(a, (1, a.shape[0])), b)
        return fs.reshape(y, y.shape[:-2] + (y.shape[-1],))
    if b.ndim == 1:
        y = fs.matmul(a, fs.reshape(b, (b.shape[0], 1)))
        return fs.reshape(y, y.shape[:-1])
    return fs.matmul(a, b)


def _zeros_like(x, value=0):
    return filled(x.trace, x.shape, value, x.dtype.name)


def _sign(x):
    """torch.sign: 1, -1 or 0 (0 for NaN too)."""
    return fs.where(x > 0, _zeros_like(x, 1), fs.where(x < 0, _zeros_like(x, -1), _zeros_like(x)))


def _softplus(x, beta=1, threshold=20):
    bx = x * beta if beta != 1 else x
    soft = fs.log(1.0 + fs.exp(fs.minimum(bx, threshold))) * (1.0 / beta)
    return fs.where(bx > threshold, x, soft)


def _elu(x, alpha=1.0, scale=1.0, input_scale=1.0):
    neg = (fs.exp(fs.minimum(x, 0.0) * input_scale) - 1.0) * (alpha * scale)
    return fs.where(x > 0, x * scale, neg)


def _hardtanh(x, lo=-1.0, hi=1.0):
    return fs.minimum(fs.maximum(x, lo), hi)


def _creation(value_of):
    """A rule for a creation op of one value: a 0-d constant broadcast to the node's static
    shape and dtype (`_out`, from the export's metadata); the replay passes its trace."""
    def rule(*args, _trace=None, _out=None, **kw):
        shape, dtype_name = _out
        like = next((a for a in args if hasattr(a, "trace")), None)
        return filled(like.trace if like is not None else _trace, shape, value_of(args), dtype_name)
    rule.needs_trace = True
    return rule


def filled(trace, shape, value, dtype_name):
    """`value` of the given shape: a 0-d constant, broadcast (no array is ever stored)."""
    dtype = getattr(dt, dtype_name if dtype_name != "bool" else "bool_")
    c = trace.constant(value, dtype)
    return c if tuple(shape) == () else fs.broadcast_to(c, tuple(shape))


# ATen ops that are exact compositions of fusedsl primitives (see the module docstring)
_COMPOSITES = {
    "hardswish.default": lambda x: x * fs.minimum(fs.maximum(x + 3.0, 0.0), 6.0) * (1.0 / 6.0),
    "hardsigmoid.default": lambda x: fs.minimum(fs.maximum(x + 3.0, 0.0), 6.0) * (1.0 / 6.0),
    "relu6.default": lambda x: fs.minimum(fs.relu(x), 6.0),
    "hardtanh.default": _hardtanh,
    "elu.default": _elu,
    "selu.default": lambda x: _elu(x, 1.6732632423543772, 1.0507009873554805),
    "celu.default": lambda x, alpha=1.0: _elu(x, alpha, 1.0, 1.0 / alpha),
    "softplus.default": _softplus,
    "softsign.default": lambda x: x / (1.0 + fs.abs(x)),
    "mish.default": lambda x: x * fs.tanh(_softplus(x)),
    "log_sigmoid_forward.default": lambda x: (-_softplus(-x), Missing("log_sigmoid's buffer")),
    "logsigmoid.default": lambda x: -_softplus(-x),
    "sign.default": _sign,
    "sgn.default": _sign,
    "gelu.default": _gelu,
    "erf.default": _erf,
    "log_softmax.int": _log_softmax, "_log_softmax.default": _log_softmax,
    "logsumexp.default": _logsumexp,
    "var.correction": _var, "var.dim": _var_dim, "var.default": _var_unbiased,
    "std.correction": _std, "std.dim": lambda x, dim=None, unbiased=True, keepdim=False:
        fs.sqrt(_var_dim(x, dim, unbiased, keepdim)), "std.default": lambda x, unbiased=True:
        fs.sqrt(_var_unbiased(x, unbiased)),
    "var_mean.correction": _var_mean,
    "linalg_vector_norm.default": _vector_norm,
    "group_norm.default": _group_norm, "native_group_norm.default": _native_group_norm,
    "instance_norm.default": _instance_norm,
    "addcmul.default": lambda x, a, b, value=1: x + a * b * value,
    "addcdiv.default": lambda x, a, b, value=1: x + a / b * value,
    "lerp.Scalar": lambda a, b, w: a + (b - a) * w, "lerp.Tensor": lambda a, b, w: a + (b - a) * w,
    "xlogy.Tensor": lambda x, y: fs.where(x == 0, 0.0, x * fs.log(y)),
}


def definition_rules(field: str) -> dict:
    """Declared name -> rule for the elementwise op definitions (fusedsl/ops/) that name an ATen
    overload or ONNX operator (`field` "aten" / "onnx"): the rule calls fs.<name> on the node's
    operands. The importers add these after their own tables (which win: they know each op's
    arguments), so an op added by one definition imports with no importer edit. Read at import
    time, so a definition registered later (a user's, a test's toy op) is found too."""
    def rule_of(name, public, arity):
        fn = getattr(fs, public, None) or fs.op_function(name)

        def rule(*args, **kwargs):
            if kwargs or len(args) != arity:
                raise Unsupported(f"fs.{public} takes {arity} operand(s); the node passes {len(args)} "
                                  f"argument(s){' and ' + ', '.join(kwargs) if kwargs else ''}")
            return fn(*args)
        return rule
    return {declared: rule_of(name, public, arity) for declared, name, public, arity in ops.importable(field)}


def _resolve_aten(torch, name: str):
    """torch.ops.<ns>.<packet>.<overload> for "ns.packet.overload", or None when torch lacks it."""
    parts = name.split(".")
    if len(parts) != 3:
        return None
    try:
        return getattr(getattr(getattr(torch.ops, parts[0]), parts[1]), parts[2])
    except (AttributeError, RuntimeError):
        return None


def aten_table(torch) -> dict:
    aten = torch.ops.aten
    t = {
        aten.add.Tensor: lambda a, b, alpha=1: a + (b * alpha if alpha != 1 else b),
        aten.add.Scalar: lambda a, b, alpha=1: a + b * alpha,
        aten.sub.Tensor: lambda a, b, alpha=1: a - (b * alpha if alpha != 1 else b),
        aten.sub.Scalar: lambda a, b, alpha=1: a - b * alpha,
        aten.rsub.Scalar: lambda a, b, alpha=1: b - a * alpha,
        aten.rsub.Tensor: lambda a, b, alpha=1: b - a * alpha,
        aten.mul.Tensor: lambda a, b: a * b, aten.mul.Scalar: lambda a, b: a * b,
        aten.div.Tensor: _div, aten.div.Scalar: _div, aten.div.Tensor_mode: _div,
        aten.neg.default: fs.negative, aten.abs.default: fs.abs, aten.exp.default: fs.exp,
        aten.log.default: fs.log, aten.sqrt.default: fs.sqrt, aten.rsqrt.default: fs.rsqrt,
        aten.reciprocal.default: fs.reciprocal, aten.relu.default: fs.relu,
        aten.sigmoid.default: fs.sigmoid, aten.tanh.default: fs.tanh, aten.silu.default: fs.silu,
        aten.square.default: fs.square, aten.pow.Tensor_Scalar: _pow,
        aten.leaky_relu.default: lambda x, slope=0.01: fs.leaky_relu(x, slope),
        aten.maximum.default: fs.maximum, aten.minimum.default: fs.minimum,
        aten.clamp.default: _clamp, aten.clamp.Tensor: _clamp, aten.clamp_min.default: lambda x, lo: fs.maximum(x, lo),
        aten.clamp_max.default: lambda x, hi: fs.minimum(x, hi),
        aten.where.self: _where, aten.where.ScalarOther: _where, aten.where.ScalarSelf: _where,
        aten.where.Scalar: _where,
        aten.masked_fill.Scalar: _masked_fill, aten.masked_fill.Tensor: _masked_fill,
        aten.lt.Tensor: fs.less, aten.lt.Scalar: fs.less, aten.le.Tensor: fs.less_equal,
        aten.le.Scalar: fs.less_equal, aten.gt.Tensor: fs.greater, aten.gt.Scalar: fs.greater,
        aten.ge.Tensor: fs.greater_equal, aten.ge.Scalar: fs.greater_equal,
        aten.eq.Tensor: fs.equal, aten.eq.Scalar: fs.equal, aten.ne.Tensor: fs.not_equal,
        aten.ne.Scalar: fs.not_equal,
        aten._to_copy.default: _to, aten.to.dtype: _to, aten.to.dtype_layout: _to,
        aten.type_as.default: lambda x, other: _to(x, dtype=None) if x.dtype == other.dtype
        else fs.cast(x, other.dtype.name),
        aten.sum.dim_IntList: _reduce(fs.sum), aten.sum.default: lambda x, dtype=None: _reduce(fs.sum)(x, dtype=dtype),
        aten.mean.dim: _reduce(fs.mean), aten.mean.default: lambda x, dtype=None: _reduce(fs.mean)(x, dtype=dtype),
        aten.amax.default: _reduce(fs.max), aten.amin.default: _reduce(fs.min),
        aten.max.default: _reduce(fs.max), aten.min.default: _reduce(fs.min),
        aten.max.dim: _minmax_dim(fs.max, "argmax"), aten.min.dim: _minmax_dim(fs.min, "argmin"),
        aten.softmax.int: _softmax, aten._softmax.default: _softmax,
        aten.layer_norm.default: _layer_norm, aten.native_layer_norm.default: _native_layer_norm,
        aten.rms_norm.default: _rms_norm,
        aten.linear.default: _linear,
        aten.addmm.default: _addmm, aten.baddbmm.default: _baddbmm,
        aten.matmul.default: _matmul, aten.mm.default: fs.matmul, aten.bmm.default: fs.matmul,
        aten.mv.default: _matmul, aten.dot.default: _matmul,
        aten.t.default: lambda x: fs.transpose(x) if x.ndim == 2 else x,
        aten.numpy_T.default: _numpy_t,
        aten.batch_norm.default: _batch_norm,
        aten._native_batch_norm_legit_no_training.default: _bn_no_training,
        aten.view.default: _view, aten.reshape.default: _view, aten._unsafe_view.default: _view,
        aten.view_as.default: lambda x, other: fs.reshape(x, other.shape),
        aten.reshape_as.default: lambda x, other: fs.reshape(x, other.shape),
        aten.flatten.using_ints: _flatten, aten.unsqueeze.default: _unsqueeze,
        aten.squeeze.dim: _squeeze, aten.squeeze.dims: _squeeze, aten.squeeze.default: _squeeze,
        aten.permute.default: lambda x, perm: fs.transpose(x, [p % x.ndim for p in perm]),
        aten.transpose.int: _transpose, aten.swapaxes.default: _transpose, aten.expand.default: _expand,
        aten.expand_as.default: lambda x, other: fs.broadcast_to(x, other.shape),
        aten.repeat.default: _repeat,
        aten.contiguous.default: _identity, aten.clone.default: _identity, aten.alias.default: _identity,
        aten.detach.default: _identity, aten.lift_fresh_copy.default: _identity,
        aten.dropout.default: lambda x, p=0.5, train=False: x,
        aten.slice.Tensor: _slice, aten.select.int: _select, aten.narrow.default: _narrow,
        aten.split.Tensor: _split, aten.split_with_sizes.default: _split_with_sizes,
        aten.chunk.default: _chunk, aten.unbind.int: _unbind,
        aten.cat.default: lambda xs, dim=0: fs.concatenate(list(xs), axis=dim),
        aten.stack.default: _stack,
        aten.embedding.default: _embedding, aten.index_select.default: _index_select,
        aten.index.Tensor: _index,
        aten.scaled_dot_product_attention.default: _sdpa,
        aten.zeros.default: _creation(lambda a: 0), aten.ones.default: _creation(lambda a: 1),
        aten.empty.memory_format: _creation(lambda a: 0),
        aten.full.default: _creation(lambda a: a[1]),
        aten.zeros_like.default: _creation(lambda a: 0),
        aten.ones_like.default: _creation(lambda a: 1),
        aten.empty_like.default: _creation(lambda a: 0),
        aten.full_like.default: _creation(lambda a: a[1]),
        aten.fill.Scalar: _creation(lambda a: a[1]),
        aten.new_zeros.default: _creation(lambda a: 0),
        aten.new_ones.default: _creation(lambda a: 1),
        aten.new_empty.default: _creation(lambda a: 0),
        aten.new_full.default: _creation(lambda a: a[2]),
        aten.scalar_tensor.default: _creation(lambda a: a[0]),
        operator.getitem: lambda xs, i: xs[i],
        # index, scan and mask ops (fusedsl/ops/composite.py; int32 indices where torch gives int64)
        aten.argmax.default: lambda x, dim=None, keepdim=False: fs.argmax(x, axis=dim, keepdims=keepdim),
        aten.argmin.default: lambda x, dim=None, keepdim=False: fs.argmin(x, axis=dim, keepdims=keepdim),
        aten.prod.dim_int: lambda x, dim, keepdim=False, dtype=None: fs.prod(_widened(x, dtype), axis=dim,
                                                                           keepdims=keepdim),
        aten.prod.default: lambda x, dtype=None: fs.prod(_widened(x, dtype)),
        aten.cumsum.default: lambda x, dim, dtype=None: fs.cumsum(_widened(x, dtype), axis=dim),
        aten.cumprod.default: lambda x, dim, dtype=None: fs.cumprod(_widened(x, dtype), axis=dim),
        aten.flip.default: lambda x, dims: fs.flip(x, tuple(dims)),
        aten.tril.default: lambda x, diagonal=0: fs.tril(x, diagonal),
        aten.triu.default: lambda x, diagonal=0: fs.triu(x, diagonal),
        aten.one_hot.default: lambda x, num_classes=-1: fs.one_hot(x, num_classes),
        # gathers, scatters, sorts (fusedsl/ops/index.py)
        aten.gather.default: lambda x, dim, index, sparse_grad=False: fs.gather(x, dim, index),
        aten.scatter.src: lambda x, dim, index, src: fs.scatter(x, dim, index, src),
        aten.scatter.value: lambda x, dim, index, value: fs.scatter(x, dim, index, value),
        aten.scatter_add.default: fs.scatter_add,
        aten.scatter_reduce.two: lambda x, dim, index, src, reduce, include_self=True:
            fs.scatter_reduce(x, dim, index, src, reduce, include_self),
        aten.index_put.default: lambda x, indices, values, accumulate=False:
            fs.index_put(x, tuple(indices), values, accumulate),
        aten.isin.Tensor_Tensor: lambda e, t, assume_unique=False, invert=False: fs.isin(e, t, invert=invert),
        aten.isin.Tensor_Scalar: lambda e, t, assume_unique=False, invert=False: fs.isin(e, t, invert=invert),
        aten.sort.default: lambda x, dim=-1, descending=False: fs.sort_with_indices(x, dim, descending),
        aten.sort.stable: lambda x, stable=None, dim=-1, descending=False: fs.sort_with_indices(x, dim, descending),
        aten.argsort.default: lambda x, dim=-1, descending=False: fs.argsort(x, dim, descending),
        aten.argsort.stable: lambda x, stable=None, dim=-1, descending=False: fs.argsort(x, dim, descending),
        aten.topk.default: lambda x, k, dim=-1, largest=True, sorted=True: fs.topk(x, k, dim, largest, sorted),
        aten.nll_loss_forward.default: _nll_loss, aten.nll_loss2d_forward.default: _nll_loss,
        aten.nll_loss.default: _nll_loss_out, aten.nll_loss_nd.default: _nll_loss_out,
        aten.nll_loss2d.default: _nll_loss_out,
    }
    for packet, overload in (("bitwise_right_shift", "Tensor_Scalar"), ("__rshift__", "Scalar")):
        op = getattr(getattr(aten, packet, None), overload, None)
        if op is not None:
            t[op] = lambda x, k: fs.right_shift(x, int(k))
    # ATen ops with an fs op of the same meaning (the vocabulary's, where it has them)
    same_name = {"sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan",
                 "sinh": "sinh", "cosh": "cosh", "floor": "floor", "ceil": "ceil", "round": "round",
                 "trunc": "trunc", "log2": "log2", "log10": "log10", "log1p": "log1p", "expm1": "expm1",
                 "exp2": "exp2", "isnan": "isnan", "isinf": "isinf", "isfinite": "isfinite",
                 "logical_not": "logical_not", "bitwise_not": "bitwise_not", "erf": "erf"}
    for packet, name in same_name.items():
        op = getattr(getattr(aten, packet, None), "default", None)
        if op is not None and hasattr(fs, name):
            t[op] = getattr(fs, name)
    binary = {"atan2": "atan2", "logical_and": "logical_and", "logical_or": "logical_or",
              "logical_xor": "logical_xor", "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or",
              "bitwise_xor": "bitwise_xor", "floor_divide": "floor_divide", "remainder": "remainder",
              "fmod": "fmod"}
    for packet, name in binary.items():
        for overload in ("default", "Tensor", "Scalar"):
            op = getattr(getattr(aten, packet, None), overload, None)
            if op is not None and hasattr(fs, name):
                t[op] = getattr(fs, name)
    if hasattr(fs, "pow_tensor"):
        t[aten.pow.Tensor_Tensor] = fs.pow_tensor
    for name, rule in _COMPOSITES.items():
        packet, overload = name.rsplit(".", 1)
        op = getattr(getattr(aten, packet, None), overload, None)
        if op is not None:
            t[op] = rule
    for name, rule in definition_rules("aten").items():   # the definitions' names the table lacks
        op = _resolve_aten(torch, name)
        if op is not None and op not in t:
            t[op] = rule
    return t


# the composites the ONNX importer shares (same semantics, one definition)
hardswish = _COMPOSITES["hardswish.default"]
elu, softplus, erf, sign, gelu = _elu, _softplus, _erf, _sign, _gelu
log_softmax, logsumexp = _log_softmax, _logsumexp
split_with_sizes, repeat = _split_with_sizes, _repeat
