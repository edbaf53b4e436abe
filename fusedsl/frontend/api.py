"""The user-facing ops (`fs.exp`, `fs.softmax`, ...).  Names follow numpy.

Each function takes traced Tensors and Python scalars and appends IR through the
active trace.  Promotion and implicit casts happen here so that the IR's
primitive ops see operands of one dtype (see dtypes.py for the rules).  Called on
plain numpy arrays outside a kernel, an op runs eagerly on the reference
interpreter, which is handy in a notebook.
"""
from __future__ import annotations

import builtins
import functools
import inspect
import math
import operator

import numpy as np

from .. import dtypes as dt
from ..errors import ArgumentError, DTypeError, ShapeError, TraceError, user_facing, user_frame
from ..ir.builder import Builder
from ..ir.core import Module, TensorType
from ..ir.ops import FLOAT_ONLY, get_opdef
from ..ops.composite import COMPOSITES
from .. import ops as _ops  # noqa: F401  (registers the op definitions)
from ..ops import index as _index
from ..ops import window as _window
from ..ir.shapes import fmt_shape, normalize_axes
from ..reference import run_module
from . import tracing as _tracing
from .tracing import Tensor, Trace, find_trace, is_python_scalar, python_scalar


# ---- eager mode ----------------------------------------------------------------
def _op(fn):
    """Run `fn` in the active trace, or eagerly on numpy inputs when there is none.

    Each op is a public entry point: an error leaves it without fusedsl's frames.
    """
    _tracing.FS_OPS.add(fn.__name__)   # for the hints of refused numpy functions
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if find_trace(*args, *kwargs.values()) is not None:
            return fn(*args, **kwargs)
        return _eager(fn, args, kwargs)
    return user_facing(wrapper)


def _eager(fn, args, kwargs):
    builder = Builder(fn.__name__, user_frame())
    trace = Trace(builder)
    inputs = []

    def wrap(x):
        # Only arrays become kernel inputs: a tuple of ints is a shape or axes
        # argument (fs.reshape(a, (2, 3)), fs.sum(a, axis=(0, 1))), not data.
        if isinstance(x, (list, tuple)):
            return type(x)(wrap(v) for v in x)
        if isinstance(x, np.ndarray):
            arr = x
            dtype = to_dtype(arr.dtype)
            inputs.append(arr)
            return Tensor(builder.param(TensorType(arr.shape, dtype), f"x{len(inputs)}"), trace)
        return x

    token = _tracing.ACTIVE.set(trace)
    try:
        out = fn(*[wrap(a) for a in args], **{k: wrap(v) for k, v in kwargs.items()})
    finally:
        _tracing.ACTIVE.reset(token)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    module = Module((builder.finish([o.value for o in outs]),))
    results = run_module(module, inputs)
    if isinstance(out, list):      # fs.split and friends return lists
        return list(results)
    return results if isinstance(out, tuple) else results[0]


# ---- dtype helpers -------------------------------------------------------------
def to_dtype(x) -> dt.DType:
    try:
        return dt.to_dtype(x)
    except KeyError:
        try:
            name = np.dtype(x).name   # np.float64 (a class) reads as "float64", not "<class ...>"
        except TypeError:
            name = str(x)
        wider = {"float64": "float32", "int64": "int32", "uint64": "int32", "int16": "int32",
                 "uint16": "int32", "uint32": "int32"}   # numpy's defaults and the ints fusedsl lacks
        hint = f"convert with .astype(np.{wider[name]})" if name in wider else None
        raise DTypeError(f"dtype {name} is not supported; fusedsl supports {dt.supported_names()}",
                         loc=user_frame(), hint=hint) from None


def _trace_of(*args) -> Trace:
    trace = find_trace(*args)
    if trace is None:
        raise ArgumentError("this op needs at least one traced tensor", loc=user_frame())
    return trace


def _check_operand(x, what="operand"):
    if isinstance(x, Tensor) or is_python_scalar(x):
        return
    if isinstance(x, np.ndarray):
        raise TraceError("a numpy array from outside the kernel was used inside it",
                         loc=user_frame(), hint="pass the array as an argument of the kernel")
    raise ArgumentError(f"{what} of type {type(x).__name__} is not a tensor or a Python number",
                        loc=user_frame())


@_op
def cast(x, dtype) -> Tensor:
    """`x.astype(dtype)`: float->int truncates toward zero; anything->bool is `x != 0`."""
    dtype = to_dtype(dtype)
    if x.dtype == dtype:
        return x
    return x.trace.emit("cast", [x], {"dtype": dtype.name})


astype = cast


def _as_tensor(x, like: dt.DType, trace: Trace) -> Tensor:
    if isinstance(x, Tensor):
        return x
    value = python_scalar(x)
    return trace.constant(value, dt.scalar_dtype(value, like))


def _promote_pair(a, b, float_only=False):
    """Two operands as Tensors of one dtype (weak Python scalars take the tensor's dtype)."""
    _check_operand(a)
    _check_operand(b)
    trace = _trace_of(a, b)
    if not isinstance(a, Tensor):
        a = _as_tensor(a, b.dtype if not float_only or b.dtype.is_float else dt.float32, trace)
    if not isinstance(b, Tensor):
        b = _as_tensor(b, a.dtype if not float_only or a.dtype.is_float else dt.float32, trace)
    common = dt.promote(a.dtype, b.dtype)
    if float_only and not common.is_float:
        common = dt.float32
    return cast(a, common), cast(b, common), trace


def _binary(name, float_only=False):
    def op(a, b):
        a, b, trace = _promote_pair(a, b, float_only)
        if name in _NUMERIC_ONLY and a.dtype == dt.bool_:
            raise DTypeError(f"{_PUBLIC[name]} is not defined on bool tensors", loc=user_frame(),
                             hint="cast first, e.g. x.astype(fs.int32)")
        return trace.emit(name, [a, b])
    op.__name__ = _PUBLIC[name]
    return _op(op)


_PUBLIC = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "maximum": "maximum",
           "minimum": "minimum", "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
           "eq": "equal", "ne": "not_equal"}
_NUMERIC_ONLY = {"add", "sub", "mul", "maximum", "minimum"}

add = _binary("add")
subtract = _binary("sub")
multiply = _binary("mul")
divide = _binary("div", float_only=True)
true_divide = divide
maximum = _binary("maximum")
minimum = _binary("minimum")
less = _binary("lt")
less_equal = _binary("le")
greater = _binary("gt")
greater_equal = _binary("ge")
equal = _binary("eq")
not_equal = _binary("ne")


def _unary(name, float_only=False, public=None):
    def op(x):
        _check_operand(x)
        if not isinstance(x, Tensor):
            raise ArgumentError(f"fs.{public or name} needs a tensor, got a Python number", loc=user_frame())
        if float_only and not x.dtype.is_float:
            x = cast(x, dt.float32)
        if not float_only and x.dtype == dt.bool_:
            raise DTypeError(f"fs.{public or name} is not defined on bool tensors", loc=user_frame(),
                             hint="cast first, e.g. x.astype(fs.int32)")
        return x.trace.emit(name, [x])
    op.__name__ = public or name
    return _op(op)


def op_function(name: str):
    """The fs function of a unary elementwise op definition registered after import (a toy op
    defined with fusedsl.ops.elementwise.define, say)."""
    return _from_definition(name)


def _from_definition(name: str, public: str | None = None):
    """fs.<public> of a unary op definition (fusedsl/ops/): float-only ops cast ints to float32."""
    opdef = get_opdef(name)
    return _unary(name, FLOAT_ONLY in opdef.traits, public or opdef.public[0])


abs = _from_definition("abs")
absolute = abs
negative = _from_definition("neg")
square = _from_definition("square")
relu = _from_definition("relu")
exp = _from_definition("exp")
log = _from_definition("log")
sqrt = _from_definition("sqrt")
rsqrt = _from_definition("rsqrt")
reciprocal = _from_definition("reciprocal")
sigmoid = _from_definition("sigmoid")
tanh = _from_definition("tanh")
silu = _from_definition("silu")
gelu = _from_definition("gelu")   # the tanh form; fs.gelu_erf is the exact (erf) one


@_op
def leaky_relu(x, alpha=0.01):
    """max(x, 0) + alpha * min(x, 0).  A Python alpha is baked in; a traced one is an input."""
    _check_operand(x)
    if not x.dtype.is_float:
        x = cast(x, dt.float32)
    if isinstance(alpha, Tensor):
        return where(x >= 0, x, x * alpha)
    if not is_python_scalar(alpha):
        raise ArgumentError(f"leaky_relu alpha must be a number or fs.scalar, got {type(alpha).__name__}",
                            loc=user_frame())
    # alpha is a weak scalar like any Python number next to x: it takes x's dtype (numpy 2).
    # float32 rounding happens in every executor anyway; 16-bit dtypes round it here.
    alpha = float(python_scalar(alpha))
    if x.dtype.itemsize == 2:
        alpha = float(np.asarray(alpha, x.dtype.np))
    return x.trace.emit("leaky_relu", [x], {"alpha": alpha})


@_op
def power(x, p):
    """x ** p: the exponents the hardware has a direct op for (2, 3, 0.5, -1, -0.5) map onto it;
    any other exponent, a tensor one included, is exp(p log|x|) with numpy's signs (pow_tensor)."""
    if isinstance(p, Tensor) or not isinstance(x, Tensor):
        return pow_tensor(x, p)
    if not is_python_scalar(p):
        raise ArgumentError(f"x ** p needs a number or a tensor exponent, got {type(p).__name__}",
                            loc=user_frame())
    p = python_scalar(p)
    table = {2: square, 1: lambda v: v, 0.5: sqrt, -1: reciprocal, -0.5: rsqrt}
    if p == 3:
        return square(x) * x
    if p not in table:
        return pow_tensor(x, p)
    return table[p](x)


@_op
def where(cond, a, b):
    """numpy.where: elements of a where cond is true, else of b (cond is x != 0 if not bool)."""
    for v in (cond, a, b):
        _check_operand(v)
    trace = _trace_of(cond, a, b)
    if not isinstance(cond, Tensor):
        cond = trace.constant(bool(python_scalar(cond)), dt.bool_)
    if cond.dtype != dt.bool_:
        cond = not_equal(cond, 0)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = trace.constant(python_scalar(a), dt.default_scalar_dtype(python_scalar(a)))
    a, b, _ = _promote_pair(a, b)
    return trace.emit("where", [cond, a, b])


# ---- reductions ----------------------------------------------------------------
def _reduce(name):
    def op(x, axis=None, keepdims=False):
        _check_operand(x)
        if not isinstance(x, Tensor):
            raise ArgumentError(f"fs.{name} needs a tensor", loc=user_frame())
        if isinstance(axis, Tensor):
            hint = f"fs.{name}imum(a, b) is the elementwise {name}" if name in ("max", "min") else None
            raise ArgumentError(f"fs.{name} axis must be None, an int or a tuple of ints, got a tensor",
                                loc=user_frame(), hint=hint)
        try:
            axes = normalize_axes(axis, x.ndim)
        except Exception as exc:
            raise ArgumentError(getattr(exc, "message", str(exc)), loc=user_frame()) from None
        if name == "mean" and not x.dtype.is_float:
            x = cast(x, dt.float32)
        if name == "sum" and x.dtype == dt.bool_:
            x = cast(x, dt.int32)
        if not axes:
            # nothing to reduce (a 0-d tensor or axis=()), but the result dtype is still
            # the reduction's: sum of an integer tensor is int32
            return cast(x, dt.int32) if name == "sum" and not x.dtype.is_float else x
        return x.trace.emit(name, [x], {"axes": list(axes), "keepdims": bool(keepdims)})
    op.__name__ = name
    return _op(op)


sum = _reduce("sum")
mean = _reduce("mean")
max = _reduce("max")
min = _reduce("min")
amax = max
amin = min


# ---- shape ops ------------------------------------------------------------------
def _dims(shape, what) -> list:
    """A shape argument as a list of Python ints and symbolic names.

    numpy integers (e.g. from `a.shape` of an array) become ints: attributes must
    print as text IR, and np.int64 would otherwise slip into the IR types.
    """
    if isinstance(shape, (int, np.integer, str)):
        shape = (shape,)
    dims = []
    for d in shape:
        if isinstance(d, str):
            dims.append(d)
            continue
        try:
            dims.append(operator.index(d))
        except TypeError:
            raise ArgumentError(f"{what} sizes must be ints, got {d!r}", loc=user_frame()) from None
    return dims


@_op
def reshape(x, shape):
    shape = _dims(shape, "reshape")
    unknown = [i for i, d in enumerate(shape) if isinstance(d, int) and d == -1]
    if len(unknown) > 1:
        raise ShapeError("reshape: only one dimension can be -1", loc=user_frame())
    if unknown:
        total, known = x.size, 1
        for d in shape:
            if d != -1:
                known *= d
        if known == 0 or total % known:
            raise ShapeError(f"cannot reshape {fmt_shape(x.shape)} into {fmt_shape(tuple(shape))}",
                             loc=user_frame(), hint="the product of the new shape must equal the old one")
        shape[unknown[0]] = total // known
    if tuple(shape) == x.shape:
        return x
    return x.trace.emit("reshape", [x], {"shape": shape})


@_op
def broadcast_to(x, shape):
    shape = tuple(_dims(shape, "broadcast_to"))
    if shape == x.shape:
        return x
    return x.trace.emit("broadcast_to", [x], {"shape": list(shape)})


@_op
def transpose(x, axes=None):
    perm = list(range(x.ndim))[::-1] if axes is None else [int(a) % builtins.max(x.ndim, 1) for a in axes]
    if perm == list(range(x.ndim)):
        return x
    return x.trace.emit("transpose", [x], {"perm": perm})


def permute_dims(x, axes=None):
    return transpose(x, axes)


@_op
def concatenate(xs, axis=0):
    xs = list(xs)
    if not xs:
        raise ArgumentError("concatenate needs at least one tensor", loc=user_frame())
    for v in xs:
        if not isinstance(v, Tensor):
            raise ArgumentError("concatenate takes a sequence of tensors", loc=user_frame())
    common = xs[0].dtype
    for v in xs[1:]:
        common = dt.promote(common, v.dtype)
    xs = [cast(v, common) for v in xs]
    rank = xs[0].ndim
    axis = _dims(axis, "concatenate axis")[0]
    if not -rank <= axis < rank:
        raise ArgumentError(f"concatenate axis {axis} is out of range for rank {rank}", loc=user_frame())
    if len(xs) == 1:
        return xs[0]
    return xs[0].trace.emit("concatenate", xs, {"axis": axis % rank})


@_op
def take(table, indices, axis=0):
    """`np.take(table, indices, axis)`: gather slices of `table` along `axis` at integer
    `indices` (an embedding lookup is `fs.take(weights, ids)`).  Negative indices count
    from the end; an index outside [-size, size) raises when the kernel runs."""
    if not isinstance(table, Tensor) or not isinstance(indices, Tensor):
        raise ArgumentError("take needs a traced table and traced indices", loc=user_frame(),
                            hint="pass both as kernel arguments")
    axis = _dims(axis, "take axis")[0]
    if not -table.ndim <= axis < table.ndim:
        raise ArgumentError(f"take axis {axis} is out of range for a table of rank {table.ndim}",
                            loc=user_frame())
    if not indices.dtype.is_int:
        raise DTypeError(f"take indices must be integers, got {indices.dtype}", loc=user_frame(),
                         hint="cast them with .astype(fs.int32)")
    axis %= table.ndim
    static = builtins.all(isinstance(d, int) for d in tuple(table.shape) + tuple(indices.shape))
    if static and (axis != 0 or table.ndim != 2):   # [n, rest] tables along axis 0 gather directly
        # one take along axis 0 of the table seen as [lead * n, rest] with a 1-D index (the gather
        # the view kernels read natively and print), then numpy's result shape
        rows = table if table.ndim == 2 and axis == 0 else reshape(
            table, tuple(table.shape[:axis + 1]) + (math.prod(table.shape[axis + 1:]),))
        flat = _index.take_axis(_F, rows, reshape(indices, (-1,)), axis, f"take along axis {axis}")
        return reshape(flat, tuple(table.shape[:axis]) + tuple(indices.shape) + tuple(table.shape[axis + 1:]))
    return table.trace.emit("take", [table, indices], {"axis": axis})


def getitem(x: Tensor, index) -> Tensor:
    """Static basic indexing: ints, slices with positive steps, Ellipsis and None."""
    if not isinstance(index, tuple):
        index = (index,)
    if builtins.any(isinstance(i, (Tensor, np.ndarray, list)) for i in index):
        raise TraceError("only static indexing (ints, slices, ..., None) is supported", loc=user_frame(),
                         hint="use fs.where for masks")
    n_ell = builtins.sum(1 for i in index if i is Ellipsis)
    if n_ell > 1:
        raise ArgumentError("an index can only have a single ellipsis", loc=user_frame())
    used = builtins.sum(1 for i in index if i is not None and i is not Ellipsis)
    if used > x.ndim:
        raise ShapeError(f"too many indices ({used}) for a tensor of rank {x.ndim}", loc=user_frame())
    expanded = []
    for i in index:
        if i is Ellipsis:
            expanded.extend([slice(None)] * (x.ndim - used))
        else:
            expanded.append(i)
    if not n_ell:
        expanded.extend([slice(None)] * (x.ndim - used))
    starts, stops, steps, out_shape = [], [], [], []
    axis = 0
    for i in expanded:
        if i is None:
            out_shape.append(1)
            continue
        size = x.shape[axis]
        if isinstance(i, slice):
            if not isinstance(size, int):
                if i != slice(None):
                    raise ShapeError(f"symbolic axis {size} can only be taken whole", loc=user_frame())
                starts.append(0), stops.append(size), steps.append(1), out_shape.append(size)
            else:
                lo, hi, st = i.indices(size)
                if st <= 0:
                    raise ShapeError("negative slice steps are not supported", loc=user_frame())
                hi = builtins.max(hi, lo)
                starts.append(lo), stops.append(hi), steps.append(st)
                out_shape.append(len(range(lo, hi, st)))
        else:
            if not isinstance(i, (int, np.integer)):
                raise ArgumentError(f"index of type {type(i).__name__} is not supported", loc=user_frame())
            if not isinstance(size, int):
                raise ShapeError(f"cannot index symbolic axis {size} with an integer", loc=user_frame())
            if not -size <= i < size:
                raise ShapeError(f"index {i} is out of bounds for axis {axis} with size {size}",
                                 loc=user_frame())
            i = int(i) % size
            starts.append(i), stops.append(i + 1), steps.append(1)
        axis += 1
    result = x
    if (starts, stops, steps) != ([0] * x.ndim, list(x.shape), [1] * x.ndim):
        result = x.trace.emit("slice", [x], {"starts": starts, "stops": stops, "steps": steps})
    return reshape(result, tuple(out_shape))


# ---- cube ops ------------------------------------------------------------------
@_op
def matmul(a, b):
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise ArgumentError("matmul needs two tensors", loc=user_frame())
    common = dt.promote(a.dtype, b.dtype)
    return a.trace.emit("matmul", [cast(a, common), cast(b, common)])


def _pair(v, what):
    v = _dims(v, f"conv2d {what}")
    if len(v) == 1:
        v = v * 2
    if len(v) != 2 or not builtins.all(isinstance(i, int) for i in v):
        raise ArgumentError(f"conv2d {what} must be an int or a pair of ints, got {v}", loc=user_frame())
    return v


@_op
def conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """NCHW convolution with KCRS weights; bias of shape (K,) is added per channel.

    dilation, groups (depthwise: groups = C) and padding 'same' / 'valid' follow
    torch.nn.functional.conv2d; they are the window composites' (ops/window.py: a dilated,
    block-diagonal weight for the one conv2d graph op)."""
    if not isinstance(x, Tensor) or not isinstance(w, Tensor):
        raise ArgumentError("conv2d needs tensors x and w", loc=user_frame())
    if dilation not in (1, (1, 1), [1, 1]) or groups != 1 or isinstance(padding, str):
        if x.ndim != 4:
            raise ShapeError(f"conv2d needs an NCHW input, got shape {fmt_shape(x.shape)}", loc=user_frame())
        return _window.convolution(_F, x, w, bias, stride, padding, dilation, False, 0, groups, "conv2d")
    common = dt.promote(x.dtype, w.dtype)
    y = x.trace.emit("conv2d", [cast(x, common), cast(w, common)],
                     {"stride": _pair(stride, "stride"), "padding": _pair(padding, "padding")})
    if bias is not None:
        if bias.ndim != 1 or bias.shape[0] != y.shape[1]:
            raise ShapeError(f"conv2d bias must have shape ({y.shape[1]},), got {fmt_shape(bias.shape)}",
                             loc=user_frame())
        y = y + reshape(bias, (1, y.shape[1], 1, 1))
    return y


# ---- attention ---------------------------------------------------------------------
@_op
def attention(q, k, v, mask=None, scale=None, causal=False, *, dropout_p=0.0):
    """Scaled dot-product attention with PyTorch's SDPA semantics, as ONE op (one kernel).

    q [..., H, L, E], k [..., Hkv, S, E], v [..., Hkv, S, Ev] -> [..., H, L, Ev]; H a
    multiple of Hkv is grouped-query attention.  `mask` is boolean (True = attend) or
    additive (q's dtype) and broadcasts to [..., H, L, S]; `scale` defaults to 1/sqrt(E);
    `causal=True` keeps key j for query i when j <= i (top-left, as torch's is_causal).
    Softmax statistics are float32 for every dtype; a fully masked row is 0, like torch.
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor):
            raise ArgumentError(f"attention {name} must be a tensor, got {type(t).__name__}", loc=user_frame())
    if not is_python_scalar(dropout_p) or float(python_scalar(dropout_p)) != 0.0:
        raise ArgumentError(f"attention does not do dropout (dropout_p={dropout_p!r})", loc=user_frame(),
                            hint="dropout is for training; pass dropout_p=0.0 (inference)")
    if not isinstance(causal, (bool, np.bool_)):
        raise ArgumentError(f"attention causal must be True or False, got {causal!r}", loc=user_frame())
    if scale is None:
        d = q.shape[-1] if q.ndim else None
        if not isinstance(d, int) or d <= 0:
            raise ShapeError(f"attention needs a static head size for the default scale, got q "
                             f"{fmt_shape(q.shape)}", loc=user_frame(), hint="pass scale=...")
        scale = 1.0 / float(np.sqrt(d))
    elif isinstance(scale, Tensor) or not is_python_scalar(scale):
        raise ArgumentError(f"attention scale must be a Python number, got {type(scale).__name__}",
                            loc=user_frame())
    operands = [q, k, v]
    if mask is not None:
        if not isinstance(mask, Tensor):
            raise ArgumentError(f"attention mask must be a tensor or None, got {type(mask).__name__}",
                                loc=user_frame())
        if mask.dtype != dt.bool_ and mask.dtype.is_float and q.dtype.is_float:
            mask = cast(mask, q.dtype)   # an additive mask in q's dtype, like torch's
        operands.append(mask)
    return q.trace.emit("attention", operands, {"scale": float(python_scalar(scale)), "causal": bool(causal)})


@_op
def rope(x, cos, sin):
    """Rotary position embedding, rotate-half form: x * cos + rotate_half(x) * sin, where
    rotate_half(x) = concatenate([-x2, x1]) of x's two halves on the last axis (Llama's,
    Hugging Face's `apply_rotary_pos_emb`).  cos and sin broadcast to x (e.g. [S, D])."""
    for name, t in (("x", x), ("cos", cos), ("sin", sin)):
        if not isinstance(t, Tensor):
            raise ArgumentError(f"rope {name} must be a tensor, got {type(t).__name__}", loc=user_frame())
    d = x.shape[-1] if x.ndim else None
    if not isinstance(d, int) or d % 2:
        raise ShapeError(f"rope needs an even, static last axis (the head size), got {fmt_shape(x.shape)}",
                         loc=user_frame())
    half = d // 2
    # rotate_half(x) * sin == swap_halves(x) * [-sin1, sin2]: the sign goes onto the (small)
    # sin table, so the halves of x are pure slices that the x kernel reads as addressing
    swapped = concatenate([x[..., half:], x[..., :half]], axis=-1)
    signed_sin = concatenate([negative(sin[..., :half]), sin[..., half:]], axis=-1)
    return x * cos + swapped * signed_sin


# ---- composites (expressed through primitives, fused later) ----------------------
@_op
def softmax(x, axis=-1):
    if not x.dtype.is_float:
        x = cast(x, dt.float32)
    shifted = x - max(x, axis=axis, keepdims=True)
    e = exp(shifted)
    return e / sum(e, axis=axis, keepdims=True)


@_op
def layer_norm(x, weight=None, bias=None, eps=1e-5):
    """Normalise over the last axis, then scale by weight and shift by bias (if given)."""
    x, out = _norm_input(x)
    centered = x - mean(x, axis=-1, keepdims=True)
    var = mean(square(centered), axis=-1, keepdims=True)
    y = centered * rsqrt(var + eps)
    if out is not None:
        y = cast(y, out)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def _norm_input(x):
    """A norm's statistics are computed in float32, as torch does for half inputs: a float16 mean
    subtracted from values close to it loses most of their difference (x = [2.336, 2.44] came out
    2 % off), and a float16 sum of squares overflows above |x| = 256. Integers normalise to
    float32; a 16-bit float input gets its normalised value cast back to its own dtype before the
    weight and bias, so those stay parameters a row kernel streams (a cast of them would be a
    computed per-column value, which row kernels do not take)."""
    if not x.dtype.is_float:
        return cast(x, dt.float32), None
    if x.dtype.itemsize < 4:
        return cast(x, dt.float32), x.dtype
    return x, None


@_op
def rms_norm(x, weight=None, eps=1e-6):
    x, out = _norm_input(x)
    y = x * rsqrt(mean(square(x), axis=-1, keepdims=True) + eps)
    if out is not None:
        y = cast(y, out)
    return y if weight is None else y * weight


@_op
def batch_norm(x, mean_, var, weight=None, bias=None, eps=1e-5):
    """Inference batch norm over axis 1 with running statistics of shape (C,)."""
    if x.ndim < 2:
        raise ShapeError("batch_norm needs a tensor of rank >= 2 (channels on axis 1)", loc=user_frame())
    c = x.shape[1]
    bshape = (1, c) + (1,) * (x.ndim - 2)

    def per_channel(v, what):
        if not isinstance(v, Tensor) or v.shape != (c,):
            got = fmt_shape(v.shape) if isinstance(v, Tensor) else type(v).__name__
            raise ShapeError(f"batch_norm {what} must have shape ({c},), got {got}", loc=user_frame())
        return reshape(v, bshape)

    scale = rsqrt(per_channel(var, "var") + eps)
    if weight is not None:
        scale = scale * per_channel(weight, "weight")
    y = (x - per_channel(mean_, "mean")) * scale
    if bias is not None:
        y = y + per_channel(bias, "bias")
    return y


_NUMPY_UFUNCS = {
    "add": add, "subtract": subtract, "multiply": multiply, "divide": divide, "true_divide": divide,
    "maximum": maximum, "minimum": minimum, "less": less, "less_equal": less_equal, "greater": greater,
    "greater_equal": greater_equal, "equal": equal, "not_equal": not_equal, "absolute": abs,
    "negative": negative, "exp": exp, "log": log, "sqrt": sqrt, "square": square, "tanh": tanh,
    "reciprocal": reciprocal, "matmul": matmul,
}


# ---- creation ops without a tensor operand (fusedsl/ops/creation.py) ------------------------------
def _creation_dtype(dtype, *values) -> dt.DType:
    if dtype is not None:
        return to_dtype(dtype)
    return dt.float32 if builtins.any(isinstance(v, float) for v in values) else dt.int32


def _number(name, what, v):
    if not is_python_scalar(v) or isinstance(v, bool):
        raise ArgumentError(f"fs.{name}: {what} must be a Python number, got {type(v).__name__}", loc=user_frame(),
                            hint="the values of arange / linspace are fixed when the kernel is traced")
    return python_scalar(v)


def _creation_op(fn):
    """An op without tensor operands: it appends to the trace running the user's function, or
    runs eagerly (a numpy array) outside one."""
    _tracing.FS_OPS.add(fn.__name__)
    eager = _op(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) if _tracing.ACTIVE.get() is not None else eager(*args, **kwargs)
    return user_facing(wrapper)


@_creation_op
def arange(start, stop=None, step=1, dtype=None):
    """numpy.arange: start, start + step, ... below stop (int32, or float32 when a bound is a float).

    Inside a kernel it is an input the host computes before the kernels run (a few bytes; the
    kernels broadcast it like any tensor), outside one a numpy array.

    Args:
        start: the first value (the stop when it is the only argument, starting at 0).
        stop: the end, excluded.
        step: the spacing, not 0.
        dtype: the result's dtype (default int32, float32 when a bound or the step is a float).

    Returns:
        A 1-D tensor of ceil((stop - start) / step) values.

    Raises:
        ArgumentError: a bound that is not a Python number, or step 0.

    Example:
        >>> import fusedsl as fs
        >>> fs.arange(3, 11, 2).tolist()
        [3, 5, 7, 9]
    """
    if stop is None:
        start, stop = 0, start
    start, stop, step = (_number("arange", w, v) for w, v in (("start", start), ("stop", stop), ("step", step)))
    if step == 0:
        raise ArgumentError("fs.arange: step must not be 0", loc=user_frame())
    d = _creation_dtype(dtype, start, stop, step)
    return _tracing.ACTIVE.get().emit("arange", [], {"start": start, "stop": stop, "step": step, "dtype": d.name})


@_creation_op
def linspace(start, stop, num=50, endpoint=True, dtype=None):
    """numpy.linspace: `num` evenly spaced values from start to stop (float32 unless dtype says).

    Inside a kernel it is an input the host computes before the kernels run, outside one a
    numpy array.

    Args:
        start: the first value.
        stop: the last value (excluded with endpoint=False).
        num: how many values, an int >= 0.
        endpoint: whether stop is the last value.
        dtype: the result's dtype (default float32).

    Returns:
        A 1-D tensor of `num` values.

    Raises:
        ArgumentError: a bound that is not a Python number, or num < 0.

    Example:
        >>> import fusedsl as fs
        >>> fs.linspace(0, 1, 5).tolist()
        [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    start, stop = _number("linspace", "start", start), _number("linspace", "stop", stop)
    num = _number("linspace", "num", num)
    if not isinstance(num, int) or num < 0:
        raise ArgumentError(f"fs.linspace: num must be an int >= 0, got {num!r}", loc=user_frame())
    d = to_dtype(dtype) if dtype is not None else dt.float32
    return _tracing.ACTIVE.get().emit("linspace", [], {"start": start, "stop": stop, "num": num,
                                                       "endpoint": bool(endpoint), "dtype": d.name})


# ---- composites from their definitions (fusedsl/ops/composite.py) -------------------------------
class _Namespace:
    """`F` of the composites: this module's fs ops, plus the helpers they need."""

    def __getattr__(self, name):
        extra = _F_EXTRA.get(name)
        return extra if extra is not None else globals()[name]


_F_EXTRA = {
    "promote_float": lambda a, b: _promote_pair(a, b, True)[:2],
    "promote_pair_public": lambda a, b: _promote_pair(a, b)[:2],
    "emit": lambda name, *xs: xs[0].trace.emit(name, list(xs)),    # a graph op of its definition
    # arange in x's trace (composites: argmax, tril, one_hot, cumsum, flip)
    "arange_of": lambda x, n, dtype=dt.int32: x.trace.emit("arange", [], {"start": 0, "stop": int(n), "step": 1,
                                                                         "dtype": dtype.name}),
}
_F = _Namespace()
GENERATED: list[str] = []     # fs names made from composite definitions (fusedsl/__init__ exports them)


def _composite_doc(c, public: str) -> str:
    """The reference docstring of a composite's fs function, from its definition."""
    args = []
    for p in list(inspect.signature(c.fn).parameters.values())[1:]:
        if p.kind == p.VAR_POSITIONAL:
            args.append(f"    *{p.name}: ints (or one tuple of ints)")
        elif p.default is inspect.Parameter.empty:
            args.append(f"    {p.name}: a tensor (a Python number broadcasts where the op allows it)")
        else:
            args.append(f"    {p.name}: default {p.default!r}")
    names = ", ".join(f"fs.{n}" for n in c.public)
    refs = ", ".join(c.aten + c.onnx) or "none"
    return "\n".join([
        f"{c.doc[:1].upper()}{c.doc[1:]}.", "",
        f"A composite of fs ops ({names}; fusedsl/ops/composite.py, family {c.family}, dtypes {c.dtypes}):",
        "it prints, lowers and fuses wherever its parts do; 16-bit floats are computed in float32 and",
        f"rounded once. ATen / ONNX names it implements: {refs}.", "",
        "Args:", *args, "",
        "Returns:", "    Tensor (a list of tensors for the split family): the result.", "",
        "Raises:", "    ArgumentError: an argument of the wrong kind or value, named at your line.",
        "    DTypeError: a dtype the op does not take.", "",
        "Example:", "    >>> import numpy as np", "    >>> import fusedsl as fs",
        "    >>> x = np.linspace(-0.9, 0.9, 12, dtype=np.float32).reshape(3, 4)",
        "    >>> y = np.linspace(0.5, 2.0, 12, dtype=np.float32).reshape(3, 4)",
        "    >>> z = np.full((3, 4), 0.25, dtype=np.float32)",
        "    >>> idx = np.array([2, 0, 2], dtype=np.int32)",
        f"    >>> r = {c.call_text().replace('fs.' + c.public[0], 'fs.' + public, 1)}", ""])


def _composite_fn(c, public):
    def op(*args, **kwargs):
        return c.fn(_F, *args, **kwargs)
    op.__name__ = public
    op.__qualname__ = public
    op.__doc__ = _composite_doc(c, public)
    # the definition's own parameters (after the op namespace it receives), so help(), the
    # docs and signature checks show (x, t1, ...) rather than (*args, **kwargs)
    params = list(inspect.signature(c.fn).parameters.values())[1:]
    op.__signature__ = inspect.Signature(params)
    return _op(op)


for _c in COMPOSITES.values():
    for _pub in _c.public:
        if _pub not in globals():    # an fs function of its own (fs.power) keeps its name
            globals()[_pub] = _composite_fn(_c, _pub)
            GENERATED.append(_pub)
        _uf = getattr(np, _pub, None)
        if isinstance(_uf, np.ufunc) and _uf.__name__ not in _NUMPY_UFUNCS:
            _NUMPY_UFUNCS[_uf.__name__] = globals()[_pub]   # np.sin(tensor) traces fs.sin


# Tensor's operators and methods call these (tracing.py looks them up by name).
_tracing.OPS.update(add=add, subtract=subtract, multiply=multiply, divide=divide, power=power,
                    negative=negative, abs=abs, matmul=matmul, less=less, less_equal=less_equal,
                    greater=greater, greater_equal=greater_equal, equal=equal, not_equal=not_equal,
                    getitem=getitem, cast=cast, reshape=reshape, transpose=transpose, sum=sum,
                    mean=mean, max=max, min=min)
_tracing.NUMPY_UFUNCS.update(_NUMPY_UFUNCS)
NUMPY_UFUNCS = _tracing.NUMPY_UFUNCS
