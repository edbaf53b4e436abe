"""ONNX -> fusedsl: `fs.from_onnx(path_or_ModelProto)` for opset 13 and later.

Graph inputs become kernel inputs; initializers and Constant nodes used as data become
bound weights (size-1 ones are baked in as numbers); those used as shapes, axes or slice
bounds are read at import time.  Each node is replayed with the fusedsl op of the same
meaning and located at "<model>[<node name>]:<node index>".  Imported only when used.
"""
from __future__ import annotations

import difflib
import os

import numpy as np

from ..errors import ArgumentError, Loc, ShapeError, UnsupportedOpError, at_user_location, user_facing, user_frame
from ..frontend import api as fs
from . import onnx_range, torch_ops, torch_window
from .common import ImportedKernel, as_array, guard_magnitude, make_function, sanitize
from .torch_ops import Missing, Unsupported   # one exception: the shared rules raise it too

MIN_OPSET = 13
SUPPORTED = ("Add Sub Mul Div Pow Relu LeakyRelu PRelu ThresholdedRelu Sigmoid Tanh Exp Log Sqrt Abs Neg Reciprocal "
             "Erf Sign Gelu HardSwish HardSigmoid Elu Selu Celu Softplus Softsign Mish Max Min Sum Mean Clip Where "
             "Equal Less Greater LessOrEqual GreaterOrEqual Cast Identity Dropout MatMul Gemm Conv ConvTranspose "
             "MaxPool AveragePool GlobalAveragePool GlobalMaxPool BatchNormalization InstanceNormalization Softmax "
             "LogSoftmax LayerNormalization ReduceSum/Mean/Max/Min/L1/L2/LogSumExp/SumSquare Reshape Flatten "
             "Transpose Squeeze Unsqueeze Expand Tile Concat Split Slice Gather ConstantOfShape "
             "NegativeLogLikelihoodLoss SoftmaxCrossEntropyLoss")

# ONNX TensorProto element types -> fusedsl dtypes (int64 runs as int32: onnx_range checks it fits)
_ELEM = {1: "float32", 10: "float16", 16: "bfloat16", 6: "int32", 7: "int32", 3: "int8", 2: "uint8", 9: "bool"}
# inputs read at import time (shapes, axes, bounds), per op type
_STATIC_INPUTS = {"Reshape": {1}, "Slice": {1, 2, 3, 4}, "Squeeze": {1}, "Unsqueeze": {1}, "Expand": {1},
                  "ReduceSum": {1}, "ReduceMean": {1}, "ReduceMax": {1}, "ReduceMin": {1}, "Clip": {1, 2},
                  "Pow": {1}, "ReduceLogSumExp": {1}, "ReduceL1": {1}, "ReduceL2": {1}, "ReduceSumSquare": {1},
                  "Split": {1}, "Tile": {1}, "ConstantOfShape": {0}, "ReduceProd": {1}, "CumSum": {1},
                  "Trilu": {1}, "OneHot": {1, 2}, "TopK": {1}}


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ArgumentError("fs.from_onnx needs onnx: pip install 'fusedsl[onnx]'", loc=user_frame()) from None
    return onnx


def _attrs(node) -> dict:
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _text(v):
    return v.decode() if isinstance(v, bytes) else v


# ---- op rules: (inputs, attrs, static) -> output(s) ---------------------------------------------
def _binary(fn):
    return lambda xs, at, st: fn(xs[0], xs[1])


def _unary(fn):
    return lambda xs, at, st: fn(xs[0])


def _variadic(fn):
    def rule(xs, at, st):
        y = xs[0]
        for x in xs[1:]:
            y = fn(y, x)
        return y
    return rule


def _pow(xs, at, st):
    p = st.get(1)
    if p is None or np.size(p) != 1:
        raise Unsupported("Pow needs a constant scalar exponent")
    p = float(np.asarray(p).reshape(()))
    table = {2.0: fs.square, 1.0: lambda v: v, 0.5: fs.sqrt, -1.0: fs.reciprocal, -0.5: fs.rsqrt}
    if p not in table:
        raise Unsupported(f"Pow with exponent {p} is not supported (2, 1, 0.5, -1, -0.5 are)")
    return table[p](xs[0])


def _gelu(xs, at, st):
    return torch_ops.gelu(xs[0], _text(at.get("approximate", "none")))


def _clip(xs, at, st):
    y = xs[0]
    lo, hi = st.get(1), st.get(2)
    if lo is not None:
        y = fs.maximum(y, float(np.asarray(lo).reshape(())))
    if hi is not None:
        y = fs.minimum(y, float(np.asarray(hi).reshape(())))
    return y


def _cast(xs, at, st):
    to = at["to"]
    if to not in _ELEM:
        raise Unsupported(f"Cast to ONNX element type {to} is not supported")
    return fs.cast(xs[0], _ELEM[to])


def _div(xs, at, st):
    a, b = xs
    if a.dtype.is_float or b.dtype.is_float:
        return fs.divide(a, b)
    # integer Div truncates toward zero; fs.divide is a float division
    floor_divide = getattr(fs, "floor_divide", None)
    if floor_divide is None:
        raise Unsupported("integer Div is not supported yet (fusedsl has no integer division op); "
                          "Cast to float first if the values allow")
    q = floor_divide(a, b)
    inexact = fs.not_equal(a - q * b, 0)
    signs_differ = fs.not_equal(fs.less(a, 0), fs.less(b, 0))
    return fs.where(fs.where(inexact, signs_differ, inexact), q + 1, q)


def _matmul(xs, at, st):
    a, b = xs
    if a.ndim == 1 and b.ndim == 1:   # a dot product: a 0-d result
        if a.shape != b.shape:
            raise ShapeError(f"MatMul of vectors of lengths {a.shape[0]} and {b.shape[0]}", loc=user_frame())
        return fs.sum(a * b)
    if a.ndim == 1:
        return fs.reshape(_matmul([fs.reshape(a, (1, a.shape[0])), b], at, st), b.shape[:-2] + (b.shape[-1],))
    if b.ndim == 1:
        y = fs.matmul(a, fs.reshape(b, (b.shape[0], 1)))
        return fs.reshape(y, y.shape[:-1])
    return fs.matmul(a, b)


def _gemm(xs, at, st):
    a, b = xs[0], xs[1]
    if at.get("transA", 0):
        a = fs.transpose(a)
    if at.get("transB", 0):
        b = fs.transpose(b)
    y = fs.matmul(a, b)
    alpha, beta = at.get("alpha", 1.0), at.get("beta", 1.0)
    if alpha != 1.0:
        y = y * alpha
    if len(xs) > 2 and xs[2] is not None:
        y = y + (xs[2] * beta if beta != 1.0 else xs[2])
    return y


def _pads(at, nd, what):
    """ONNX pads [b1.., e1..] as one symmetric amount per axis (fusedsl's windows pad alike)."""
    if _text(at.get("auto_pad", "NOTSET")) not in ("NOTSET", "VALID"):
        raise Unsupported(f"{what} auto_pad SAME_* is not supported; give explicit pads")
    pads = list(at.get("pads", [0] * (2 * nd)))
    if pads[:nd] != pads[nd:]:
        raise Unsupported(f"{what} with asymmetric pads {pads} is not supported")
    return pads[:nd]


def _conv_any(xs, at, st):
    x, w = xs[0], xs[1]
    b = xs[2] if len(xs) > 2 else None
    nd = x.ndim - 2
    return torch_window.convolution(x, w, b, list(at.get("strides", [1] * nd)), _pads(at, nd, "Conv"),
                                    list(at.get("dilations", [1] * nd)), False, 0, at.get("group", 1))


def _conv_transpose(xs, at, st):
    x, w = xs[0], xs[1]
    b = xs[2] if len(xs) > 2 else None
    nd = x.ndim - 2
    if "output_shape" in at:
        raise Unsupported("ConvTranspose with output_shape is not supported; give pads and output_padding")
    return torch_window.convolution(x, w, b, list(at.get("strides", [1] * nd)), _pads(at, nd, "ConvTranspose"),
                                    list(at.get("dilations", [1] * nd)), True,
                                    list(at.get("output_padding", [0] * nd)), at.get("group", 1))


def _max_pool(xs, at, st):
    x = xs[0]
    nd = x.ndim - 2
    if at.get("storage_order", 0):
        raise Unsupported("MaxPool with storage_order=1 is not supported")
    y = torch_window.max_pool(nd)(x, list(at["kernel_shape"]), list(at.get("strides", [1] * nd)),
                                  _pads(at, nd, "MaxPool"), list(at.get("dilations", [1] * nd)),
                                  bool(at.get("ceil_mode", 0)))
    return y, Missing("MaxPool's Indices output")


def _average_pool(xs, at, st):
    x = xs[0]
    nd = x.ndim - 2
    if any(d != 1 for d in at.get("dilations", [1] * nd)):
        raise Unsupported("AveragePool with dilations is not supported")
    return torch_window.avg_pool(nd)(x, list(at["kernel_shape"]), list(at.get("strides", [1] * nd)),
                                     _pads(at, nd, "AveragePool"), bool(at.get("ceil_mode", 0)),
                                     bool(at.get("count_include_pad", 0)))


def _instance_norm(xs, at, st):
    x, scale, bias = xs
    return fs.instance_norm(x, None, None, scale, bias, eps=at.get("epsilon", 1e-5))


def _reduce_composite(fn):
    """ReduceL1/L2/LogSumExp/SumSquare: the axes as the other reductions take them."""
    def rule(xs, at, st):
        x = xs[0]
        axes = at.get("axes")
        if axes is None and st.get(1) is not None:
            axes = [int(a) for a in np.asarray(st[1]).reshape(-1)]
        if not axes:
            if at.get("noop_with_empty_axes", 0):
                return x
            axes = list(range(x.ndim))
        return fn(x, tuple(int(a) % x.ndim for a in axes), bool(at.get("keepdims", 1)))
    return rule


def _log_sum_exp(x, axes, keep):
    return torch_ops.logsumexp(x, axes, keep)


def _split(xs, at, st, n_out):
    x = xs[0]
    axis = at.get("axis", 0) % x.ndim
    sizes = st.get(1)
    if sizes is None and "split" in at:
        sizes = at["split"]
    if sizes is None:
        n = at.get("num_outputs", n_out)
        size = -(-x.shape[axis] // n)
        sizes = [min(size, x.shape[axis] - i * size) for i in range(n)]
    return tuple(torch_ops.split_with_sizes(x, [int(v) for v in np.asarray(sizes).reshape(-1)], axis))


def _tile(xs, at, st):
    return torch_ops.repeat(xs[0], [int(v) for v in np.asarray(st[1]).reshape(-1)])


def _constant_of_shape(xs, at, st, trace):
    shape = tuple(int(v) for v in np.asarray(st[0]).reshape(-1))
    value = at.get("value")
    from_onnx = np.asarray(0.0, np.float32) if value is None else _tensor_value(value)
    dtype = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16", np.dtype(np.int64): "int32",
             np.dtype(np.int32): "int32", np.dtype(bool): "bool"}.get(from_onnx.dtype)
    if dtype is None:
        raise Unsupported(f"ConstantOfShape of dtype {from_onnx.dtype} is not supported")
    return torch_ops.filled(trace, shape, from_onnx.reshape(-1)[0].item(), dtype)


def _tensor_value(tensor):
    from onnx import numpy_helper
    return numpy_helper.to_array(tensor)


# ONNX ops that are compositions of fusedsl ops, shared with the torch importer's composites
_COMPOSITE_RULES = {
    "HardSwish": _unary(torch_ops.hardswish),
    "HardSigmoid": lambda xs, at, st: fs.minimum(fs.maximum(xs[0] * at.get("alpha", 0.2) + at.get("beta", 0.5),
                                                            0.0), 1.0),
    "Elu": lambda xs, at, st: torch_ops.elu(xs[0], at.get("alpha", 1.0)),
    "Selu": lambda xs, at, st: torch_ops.elu(xs[0], at.get("alpha", 1.6732632423543772),
                                             at.get("gamma", 1.0507009873554805)),
    "Celu": lambda xs, at, st: torch_ops.elu(xs[0], at.get("alpha", 1.0), 1.0, 1.0 / at.get("alpha", 1.0)),
    "Softplus": _unary(torch_ops.softplus), "Softsign": _unary(lambda x: x / (1.0 + fs.abs(x))),
    "Mish": _unary(lambda x: x * fs.tanh(torch_ops.softplus(x))),
    "Erf": _unary(torch_ops.erf), "Sign": _unary(torch_ops.sign),
    "ThresholdedRelu": lambda xs, at, st: fs.where(xs[0] > at.get("alpha", 1.0), xs[0], 0.0),
    "PRelu": lambda xs, at, st: fs.where(xs[0] < 0, xs[0] * xs[1], xs[0]),
    "LogSoftmax": lambda xs, at, st: torch_ops.log_softmax(xs[0], at.get("axis", -1)),
    "ReduceLogSumExp": _reduce_composite(_log_sum_exp),
    "ReduceL1": _reduce_composite(lambda x, a, k: fs.sum(fs.abs(x), axis=a, keepdims=k)),
    "ReduceL2": _reduce_composite(lambda x, a, k: fs.sqrt(fs.sum(fs.square(x), axis=a, keepdims=k))),
    "ReduceSumSquare": _reduce_composite(lambda x, a, k: fs.sum(fs.square(x), axis=a, keepdims=k)),
    "InstanceNormalization": _instance_norm,
    "MaxPool": _max_pool, "AveragePool": _average_pool,
    "GlobalMaxPool": lambda xs, at, st: fs.max(xs[0], axis=tuple(range(2, xs[0].ndim)), keepdims=True),
    "ConvTranspose": _conv_transpose,
    "Tile": _tile,
    "Sum": _variadic(fs.add),
    "Mean": lambda xs, at, st: _variadic(fs.add)(xs, at, st) * (1.0 / len(xs)),
}


def _batch_norm(xs, at, st):
    if at.get("training_mode", 0):
        raise Unsupported("BatchNormalization in training mode is not supported")
    x, scale, bias, mean, var = xs[:5]
    return fs.batch_norm(x, mean, var, scale, bias, at.get("epsilon", 1e-5))


def _softmax(xs, at, st):
    return fs.softmax(xs[0], axis=at.get("axis", -1))


def _layer_norm(xs, at, st):
    x = xs[0]
    axis = at.get("axis", -1) % x.ndim
    if axis != x.ndim - 1:
        raise Unsupported("LayerNormalization over more than the last axis is not supported")
    return fs.layer_norm(x, xs[1] if len(xs) > 1 else None, xs[2] if len(xs) > 2 else None,
                         at.get("epsilon", 1e-5))


def _reduce(fn):
    def rule(xs, at, st):
        x = xs[0]
        axes = at.get("axes")
        if axes is None and st.get(1) is not None:
            axes = [int(a) for a in np.asarray(st[1]).reshape(-1)]
        if not axes:
            if at.get("noop_with_empty_axes", 0):
                return x
            axes = None
        else:
            axes = tuple(int(a) % x.ndim for a in axes)
        return fn(x, axis=axes, keepdims=bool(at.get("keepdims", 1)))
    return rule


def _reshape(xs, at, st):
    x, shape = xs[0], [int(d) for d in np.asarray(st[1]).reshape(-1)]
    if at.get("allowzero", 0) and 0 in shape:
        raise Unsupported("Reshape with allowzero=1 and a 0 in the shape is not supported")
    shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return fs.reshape(x, tuple(shape))


def _flatten(xs, at, st):
    x = xs[0]
    axis = at.get("axis", 1)
    if not -x.ndim <= axis <= x.ndim:
        raise ShapeError(f"Flatten axis {axis} is out of range for rank {x.ndim}", loc=user_frame())
    axis = axis + x.ndim if axis < 0 else axis   # ONNX: a negative axis counts from the back (rank + axis)
    outer = 1
    for d in x.shape[:axis]:
        outer *= d
    return fs.reshape(x, (outer, -1))


def _axes(xs, at, st):
    axes = at.get("axes")
    if axes is None and st.get(1) is not None:
        axes = [int(a) for a in np.asarray(st[1]).reshape(-1)]
    return axes


def _squeeze(xs, at, st):
    x = xs[0]
    axes = _axes(xs, at, st)
    drop = set(range(x.ndim)) if axes is None else {a % x.ndim for a in axes}
    for a in sorted(drop):
        if axes is not None and x.shape[a] != 1:   # ONNX makes this an error (onnxruntime refuses it)
            raise ShapeError(f"Squeeze of axis {a} whose size is {x.shape[a]}, not 1", loc=user_frame())
    return fs.reshape(x, tuple(d for i, d in enumerate(x.shape) if not (i in drop and d == 1)))


def _unsqueeze(xs, at, st):
    x = xs[0]
    axes = _axes(xs, at, st)
    rank = x.ndim + len(axes)
    axes = sorted(a % rank for a in axes)
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return fs.reshape(x, tuple(shape))


def _expand(xs, at, st):
    x, shape = xs[0], [int(d) for d in np.asarray(st[1]).reshape(-1)]
    full = np.broadcast_shapes(tuple(x.shape), tuple(shape))
    return fs.broadcast_to(x, tuple(int(d) for d in full))


def _slice(xs, at, st):
    x = xs[0]
    starts = np.asarray(st[1]).reshape(-1)
    ends = np.asarray(st[2]).reshape(-1)
    axes = np.asarray(st[3]).reshape(-1) if st.get(3) is not None else np.arange(len(starts))
    steps = np.asarray(st[4]).reshape(-1) if st.get(4) is not None else np.ones(len(starts), np.int64)
    index = [slice(None)] * x.ndim
    for s, e, a, k in zip(starts, ends, axes, steps):
        if k <= 0:
            raise Unsupported("Slice with non-positive steps is not supported")
        size = x.shape[int(a) % x.ndim]
        s, e = int(max(min(s, size), -size)), int(max(min(e, size), -size - 1))
        index[int(a) % x.ndim] = slice(s, e, int(k))
    return x[tuple(index)]


def _gather(xs, at, st):
    table, idx = xs
    if not hasattr(idx, "trace"):
        raise Unsupported("Gather needs tensor indices")
    return fs.take(table, idx, axis=at.get("axis", 0))


def _gather_elements(xs, at, st):
    return fs.gather(xs[0], at.get("axis", 0), xs[1])


def _scatter_elements(xs, at, st):
    reduce = {"none": None, "add": "sum", "mul": "prod", "max": "amax", "min": "amin"}.get(
        _text(at.get("reduction", "none")), "?")
    if reduce == "?":
        raise Unsupported(f"ScatterElements reduction {_text(at.get('reduction'))!r} is not supported")
    x, index, updates = xs
    axis = at.get("axis", 0)
    if reduce is None:
        return fs.scatter(x, axis, index, updates)
    return fs.scatter_reduce(x, axis, index, updates, reduce, True)


def _topk(xs, at, st):
    if st.get(1) is None:
        raise Unsupported("TopK needs a constant K (the result's shape)")
    k = int(np.asarray(st[1]).reshape(-1)[0])
    return fs.topk(xs[0], k, at.get("axis", -1), bool(at.get("largest", 1)), True)


def _nll_loss(xs, at, st):
    """NegativeLogLikelihoodLoss(input [N, C, d...], target, weight?): fs.nll_loss."""
    return fs.nll_loss(xs[0], xs[1], xs[2] if len(xs) > 2 else None, _text(at.get("reduction", "mean")),
                       at.get("ignore_index"))


def _softmax_cross_entropy(xs, at, st):
    """SoftmaxCrossEntropyLoss: log_softmax over the class axis (1), then the NLL; its second
    output is the log-probabilities."""
    log_prob = fs.log_softmax(xs[0], 1 if xs[0].ndim > 1 else 0)
    return _nll_loss([log_prob] + list(xs[1:]), at, st), log_prob


def _global_avg_pool(xs, at, st):
    x = xs[0]
    return fs.mean(x, axis=tuple(range(2, x.ndim)), keepdims=True)


RULES = {
    "Add": _binary(fs.add), "Sub": _binary(fs.subtract), "Mul": _binary(fs.multiply), "Div": _div,
    "Pow": _pow, "Relu": _unary(fs.relu), "Sigmoid": _unary(fs.sigmoid), "Tanh": _unary(fs.tanh),
    "Exp": _unary(fs.exp), "Log": _unary(fs.log), "Sqrt": _unary(fs.sqrt), "Abs": _unary(fs.abs),
    "Neg": _unary(fs.negative), "Reciprocal": _unary(fs.reciprocal), "Gelu": _gelu,
    "LeakyRelu": lambda xs, at, st: fs.leaky_relu(xs[0], at.get("alpha", 0.01)),
    "Max": _variadic(fs.maximum), "Min": _variadic(fs.minimum), "Clip": _clip,
    "Where": lambda xs, at, st: fs.where(xs[0], xs[1], xs[2]),
    "Equal": _binary(fs.equal), "Less": _binary(fs.less), "Greater": _binary(fs.greater),
    "LessOrEqual": _binary(fs.less_equal), "GreaterOrEqual": _binary(fs.greater_equal),
    "Cast": _cast, "Identity": _unary(lambda x: x), "Dropout": lambda xs, at, st: xs[0],
    "MatMul": _matmul, "Gemm": _gemm, "BatchNormalization": _batch_norm,
    "Softmax": _softmax, "LayerNormalization": _layer_norm,
    "ReduceSum": _reduce(fs.sum), "ReduceMean": _reduce(fs.mean), "ReduceMax": _reduce(fs.max),
    "ReduceMin": _reduce(fs.min), "GlobalAveragePool": _global_avg_pool,
    "Reshape": _reshape, "Flatten": _flatten, "Transpose": lambda xs, at, st: fs.transpose(xs[0], at.get("perm")),
    "Squeeze": _squeeze, "Unsqueeze": _unsqueeze, "Expand": _expand,
    "Concat": lambda xs, at, st: fs.concatenate(list(xs), axis=at["axis"]),
    "Slice": _slice, "Gather": _gather, "GatherElements": _gather_elements, "ScatterElements": _scatter_elements,
    "TopK": _topk,
    "NegativeLogLikelihoodLoss": _nll_loss, "SoftmaxCrossEntropyLoss": _softmax_cross_entropy,
    **_COMPOSITE_RULES,
    "Conv": _conv_any,   # conv1d/2d with groups, dilation, auto_pad (ops/window.py)
}
# ONNX ops with an fs op of the same meaning in the vocabulary (where it has them)
for _op_type, _name, _arity in [("Sin", "sin", 1), ("Cos", "cos", 1), ("Tan", "tan", 1), ("Asin", "asin", 1),
                             ("Acos", "acos", 1), ("Atan", "atan", 1), ("Sinh", "sinh", 1), ("Cosh", "cosh", 1),
                             ("Floor", "floor", 1), ("Ceil", "ceil", 1), ("Round", "round", 1),
                             ("IsNaN", "isnan", 1), ("Not", "logical_not", 1), ("BitwiseNot", "bitwise_not", 1),
                             ("And", "logical_and", 2), ("Or", "logical_or", 2), ("Xor", "logical_xor", 2),
                             ("BitwiseAnd", "bitwise_and", 2), ("BitwiseOr", "bitwise_or", 2),
                             ("BitwiseXor", "bitwise_xor", 2)]:
    if hasattr(fs, _name):
        RULES[_op_type] = (_unary if _arity == 1 else _binary)(getattr(fs, _name))
del _op_type, _name, _arity


def _mod(xs, at, st):
    """Mod: fmod=0 takes the divisor's sign (Python/numpy remainder), fmod=1 the dividend's."""
    fn = getattr(fs, "fmod" if at.get("fmod", 0) else "remainder", None)
    if fn is None:
        raise Unsupported("Mod is not supported yet")
    return fn(xs[0], xs[1])


def _is_inf(xs, at, st):
    x = xs[0]
    pos, neg = at.get("detect_positive", 1), at.get("detect_negative", 1)
    if pos and neg:
        return fs.isinf(x)
    if pos:
        return fs.equal(x, float("inf"))
    if neg:
        return fs.equal(x, float("-inf"))
    return fs.less(x, x)   # neither sign detected: all false (x < x is false, NaN included)


def _arg_reduce(fn, name):
    def rule(xs, at, st):
        if at.get("select_last_index", 0):
            raise Unsupported(f"{name} with select_last_index=1 is not supported (the first index on ties is)")
        x = xs[0]
        return fn(x, axis=int(at.get("axis", 0)) % max(x.ndim, 1), keepdims=bool(at.get("keepdims", 1)))
    return rule


def _cumsum(xs, at, st):
    if at.get("exclusive", 0) or at.get("reverse", 0):
        raise Unsupported("CumSum with exclusive=1 or reverse=1 is not supported (the inclusive forward scan is)")
    return fs.cumsum(xs[0], axis=int(np.asarray(st[1]).reshape(-1)[0]))


def _trilu(xs, at, st):
    k = int(np.asarray(st[1]).reshape(-1)[0]) if st.get(1) is not None else 0
    return (fs.triu if at.get("upper", 1) else fs.tril)(xs[0], k)


def _one_hot(xs, at, st):
    depth = int(np.asarray(st[1]).reshape(-1)[0])
    off, on = (float(v) for v in np.asarray(st[2]).reshape(-1)[:2])
    x = xs[0]
    if int(at.get("axis", -1)) not in (-1, x.ndim):
        raise Unsupported("OneHot along another axis than the last is not supported")
    # ONNX: negative indices count from the end of the depth
    idx = fs.where(x < 0, x + depth, x)
    return fs.where(fs.one_hot(idx, depth) == 1, on, off)


if hasattr(fs, "argmax"):
    RULES.update({"ArgMax": _arg_reduce(fs.argmax, "ArgMax"), "ArgMin": _arg_reduce(fs.argmin, "ArgMin"),
                  "ReduceProd": _reduce(fs.prod), "CumSum": _cumsum, "Trilu": _trilu, "OneHot": _one_hot})
if hasattr(fs, "remainder"):
    RULES["Mod"] = _mod
if hasattr(fs, "isinf"):
    RULES["IsInf"] = _is_inf
# rules that need the node's output count or the replay's trace
_SPLIT, _CONSTANT_OF_SHAPE = "Split", "ConstantOfShape"
RULES[_SPLIT] = None
RULES[_CONSTANT_OF_SHAPE] = None


def _definition_rules() -> dict:
    """ONNX op type -> rule for the elementwise op definitions that declare an ONNX name; such a
    rule knows no attributes, so a node with any is refused rather than half-read."""
    def onnx_rule(rule):
        def run(xs, at, st):
            if at:
                raise Unsupported(f"attributes {', '.join(sorted(at))} are not supported")
            return rule(*xs)
        return run
    return {name: onnx_rule(rule) for name, rule in torch_ops.definition_rules("onnx").items()}


class OnnxReplay:
    """Replays an ONNX graph on fusedsl tensors."""

    def __init__(self, graph, inputs: list[str], weights: list[str], consts: dict, scalars: dict, label: str):
        # the op definitions' ONNX names (fusedsl/ops/) after this module's rules, which win
        self.rules = {**_definition_rules(), **RULES}
        self.graph = graph
        self.inputs = inputs + weights
        self.consts = consts      # name -> numpy value (initializers and Constant outputs)
        self.scalars = scalars    # name -> Python number (size-1 data constants)
        self.label = label
        self.guards: set = set()  # Casts (by output) whose input's max |value| is an extra output (int_range guard)

    def loc(self, index, node) -> Loc:
        return Loc(f"{self.label}[{node.name or node.op_type}]", index + 1)

    def check(self) -> None:
        """Unsupported ops, located at the user's fs.from_onnx call (a model file has no source
        line to show) with the node named in the message."""
        for index, node in enumerate(self.graph.node):
            supported = node.domain in ("", "ai.onnx") and (node.op_type in self.rules or node.op_type == "Constant")
            if not supported:
                op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"
                named = f" {node.name!r}" if node.name else ""
                near = difflib.get_close_matches(node.op_type, sorted(self.rules), n=1, cutoff=0.6)
                nearest = f"; the nearest supported op is {near[0]}" if near else ""
                raise UnsupportedOpError(f"{self.label} node {index + 1} ({node.op_type}{named}): ONNX op {op} is "
                                         f"not supported by fusedsl's importer{nearest}", loc=user_frame(),
                                         hint=f"fusedsl imports: {SUPPORTED}")

    def _value(self, x, index, node):
        if isinstance(x, Missing):
            self._fail(index, node, f"ONNX op {node.op_type} uses {x.why}")
        return x

    @staticmethod
    def _trace(args):
        trace = next((a.trace for a in args if hasattr(a, "trace")), None)
        if trace is None:
            raise Unsupported("a model whose values depend on no tensor input is not supported")
        return trace

    def _fail(self, index, node, message):
        raise UnsupportedOpError(message, loc=self.loc(index, node), hint=f"fusedsl imports: {SUPPORTED}")

    def __call__(self, args):
        env = dict(zip(self.inputs, args))
        env.update(self.scalars)
        guarded = []
        for index, node in enumerate(self.graph.node):
            if node.op_type == "Constant":
                continue
            static = _STATIC_INPUTS.get(node.op_type, set())
            xs, st = [], {}
            for pos, name in enumerate(node.input):
                if pos in static:
                    st[pos] = self.consts.get(name) if name else None
                    if name and name not in self.consts:
                        self._fail(index, node, f"{node.op_type} input {pos} ({name}) must be a constant")
                    continue
                xs.append(env[name] if name else None)
            with at_user_location(self.loc(index, node)):
                try:
                    xs = [self._value(x, index, node) for x in xs]
                    if node.op_type == _SPLIT:
                        out = _split(xs, _attrs(node), st, len(node.output))
                    elif node.op_type == _CONSTANT_OF_SHAPE:
                        out = _constant_of_shape(xs, _attrs(node), st, self._trace(args))
                    else:
                        out = self.rules[node.op_type](xs, _attrs(node), st)
                    if node.output and node.output[0] in self.guards:
                        guarded.append(guard_magnitude(xs[0]))
                except Unsupported as exc:
                    self._fail(index, node, f"ONNX op {node.op_type}: {exc}")
            outs = out if isinstance(out, tuple) else (out,)
            for name, value in zip(node.output, outs):
                env[name] = value
        results = tuple(env[o.name] for o in self.graph.output)
        for r in results:
            if isinstance(r, Missing):
                raise UnsupportedOpError(f"a graph output is {r.why}", loc=Loc(self.label, 0))
        results += tuple(guarded)
        return results[0] if len(results) == 1 else results


def load_model(path_or_model):
    onnx = _onnx()
    if isinstance(path_or_model, (str, os.PathLike)):
        path = os.fspath(path_or_model)
        if not os.path.exists(path):
            raise ArgumentError(f"no ONNX model at {path!r}", loc=user_frame())
        if os.path.isdir(path):
            raise ArgumentError(f"{path!r} is a directory, not an ONNX model file", loc=user_frame(),
                                hint="pass the .onnx file inside it")
        try:
            model = onnx.load(path)
        except OSError as exc:
            raise ArgumentError(f"cannot read {path!r}: {exc.strerror or exc}", loc=user_frame()) from None
        except Exception as exc:   # noqa: BLE001 (protobuf's DecodeError and friends: not a model)
            raise ArgumentError(f"{path!r} is not a valid ONNX model (truncated or not ONNX: "
                                f"{type(exc).__name__}: {str(exc)[:200]})", loc=user_frame(),
                                hint="check the file was written completely (onnx.checker.check_model)") from None
        return model, os.path.basename(path)
    if isinstance(path_or_model, onnx.ModelProto):
        return path_or_model, (path_or_model.graph.name or "model") + ".onnx"
    raise ArgumentError(f"fs.from_onnx takes a path or an onnx.ModelProto, got {type(path_or_model).__name__}",
                        loc=user_frame())


def _constants(model) -> dict:
    from onnx import numpy_helper
    consts = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant":
            at = _attrs(node)
            if "value" in at:
                consts[node.output[0]] = numpy_helper.to_array(at["value"])
            elif "value_float" in at:
                consts[node.output[0]] = np.float32(at["value_float"])
            elif "value_int" in at:
                consts[node.output[0]] = np.int64(at["value_int"])
            elif "value_floats" in at:
                consts[node.output[0]] = np.asarray(at["value_floats"], np.float32)
            elif "value_ints" in at:
                consts[node.output[0]] = np.asarray(at["value_ints"], np.int64)
    return consts


def _check_order(model, consts: set, label: str) -> None:
    """Every node input is a graph input, an initializer or the output of an earlier node (ONNX
    requires topological order; a cycle cannot be ordered), and every graph output is defined."""
    graph = model.graph
    defined = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    produced_at = {}
    for index, node in enumerate(graph.node):
        for name in node.output:
            produced_at.setdefault(name, index)
    for index, node in enumerate(graph.node):
        loc = Loc(f"{label}[{node.name or node.op_type}]", index + 1)
        for name in node.input:
            if not name or name in defined:
                continue
            if name in produced_at:
                raise ArgumentError(f"{node.op_type} reads {name!r}, which node {produced_at[name] + 1} computes "
                                    "later: the graph is not topologically sorted (or has a cycle)", loc=loc,
                                    hint="sort the nodes (onnx.utils / onnxruntime's optimizer) or break the cycle")
            raise ArgumentError(f"{node.op_type} reads {name!r}, which no graph input, initializer or node defines",
                                loc=loc)
        defined.update(n for n in node.output if n)
    for out in graph.output:
        if out.name not in defined:
            raise ArgumentError(f"graph output {out.name!r} is not computed by any node", loc=Loc(label, 0))


def replay_for(model, label: str):
    """(OnnxReplay, user input names, weight arrays) for a loaded model."""
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
    if opset < MIN_OPSET:
        raise UnsupportedOpError(f"{label} uses opset {opset}; fusedsl imports opset {MIN_OPSET} and later",
                                 loc=user_frame(), hint="convert it with onnx.version_converter")
    consts = _constants(model)
    _check_order(model, set(consts), label)
    init_names = set(consts)
    data_uses: set[str] = set()
    for node in model.graph.node:
        static = _STATIC_INPUTS.get(node.op_type, set())
        for pos, name in enumerate(node.input):
            if name and pos not in static:
                data_uses.add(name)
    returned = {o.name for o in model.graph.output}
    inputs = [i.name for i in model.graph.input if i.name not in init_names]
    weights, weight_arrays, scalars = [], [], {}
    for name in sorted((data_uses | returned) & init_names):
        value = consts[name]
        if value.size == 1 and value.dtype.kind == "f" and name not in returned:
            scalars[name] = float(value.reshape(()))   # baked into the kernel like a Python number
            continue
        weights.append(name)
        weight_arrays.append(as_array(value.astype(np.float32) if value.dtype == np.float64 else value, name))
    return OnnxReplay(model.graph, inputs, weights, consts, scalars, label), inputs, weights, weight_arrays


@user_facing
def from_onnx(path_or_model, target=None, **options) -> ImportedKernel:
    """Import an ONNX model (opset 13+) as a fused kernel over its graph inputs."""
    return import_onnx(path_or_model, target, options, guards=True)


def import_onnx(path_or_model, target, options: dict, guards: bool) -> ImportedKernel:
    """from_onnx; `guards`: casts from floats no rule bounds are checked after each run by their
    input's magnitude, an extra result of the graph (int_range.RangeCheck.guard); `fusedsl fuse`
    imports without them (its fused model runs in onnxruntime, in int64)."""
    model, label = load_model(path_or_model)
    replay, inputs, weights, arrays = replay_for(model, label)
    replay.check()
    fn = make_function(model.graph.name or "onnx_model", [sanitize(n) for n in inputs + weights], replay)
    if target is not None:
        options["target"] = target
    kernel = ImportedKernel(fn, options, inputs, arrays, Loc(label, 0))
    kernel.input_types = {i.name: i.type for i in model.graph.input}
    kernel.range_check = onnx_range.range_check(model, label, inputs, replay.consts, _attrs)
    opaque = kernel.range_check.opaque_casts() if guards else []
    if opaque:
        kernel.range_check.guard(opaque)
        replay.guards = {step.key for step in opaque}
    return kernel
