"""The op registry: ONE entry per op with its type rule, traits and numpy reference.

Passes and backends ask traits (`has_trait(op, ELEMENTWISE)`) instead of testing op
names.  Type rules take the operand types and the attribute dict and return the
result types, raising `TypeRuleError` for a mistake; the builder runs them when an
op is created and the verifier re-runs the same rule.

Reference semantics (the oracle for every executor): the interpreter hands 16-bit
floats to `ref` as float32 and rounds each result to the result dtype, so every op
rounds once.  Reductions therefore accumulate in float32.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import dtypes as dt
from ..errors import IndexRangeError
from .core import Op, TensorType, Value
from .shapes import (TypeRuleError, broadcast_shapes, fmt_shape, normalize_axes,
                     symbolic_factor)

# ---- traits -----------------------------------------------------------------
ELEMENTWISE = "elementwise"    # result[i] depends only on operand[i] (after broadcast)
UNARY = "unary"
BINARY = "binary"
BROADCAST = "broadcast"        # operands broadcast numpy-style to the result shape
COMPARISON = "comparison"      # result is bool
COMMUTATIVE = "commutative"
FLOAT_ONLY = "float_only"      # operands must be floats (the tracer casts ints)
REDUCTION = "reduction"
SHAPE = "shape"                # moves data without arithmetic
CUBE = "cube"                  # runs on the cube unit (matmul, conv)
GATHER = "gather"              # reads operand rows picked by an index tensor (take)
CONSTANT = "constant"
CALL = "call"
HOST = "host"                  # computed by the host between kernels (arange): kernels read it as an input
ATTENTION = "attention"        # softmax(q k^T * scale + mask) v as one op (its own kernel kind)


@dataclass(frozen=True)
class OpDef:
    name: str
    infer: Callable[[tuple[TensorType, ...], dict], tuple[TensorType, ...]] | None
    ref: Callable | None           # (list of np arrays, attrs) -> array or tuple of arrays
    traits: frozenset[str]
    arity: int | None              # None = variadic
    attr_names: tuple[str, ...] = ()
    # Elementwise ops' definitions (fusedsl/ops/) carry everything the layers read:
    recipe: Callable | None = None  # (ops.recipe.Recipe, dst slot, operands) -> emits tile instructions
    cost: tuple | None = None      # vector APIs per call (binary: (tensor form, scalar form));
                                   # None = the APIs of the recipe's primitives
    half_in_f32: bool = False      # a 16-bit float result is computed in float32 and rounded once
    narrow_in_f32: bool = False    # int8/uint8 results are computed in float32 (products beyond half)
    public: tuple[str, ...] = ()   # fs.<name> functions that emit it
    aten: tuple[str, ...] = ()     # PyTorch ATen overloads it implements ("aten.exp.default")
    onnx: tuple[str, ...] = ()     # ONNX operator types it implements
    doc: str = ""


REGISTRY: dict[str, OpDef] = {}


def register(name, *, arity, traits=(), attrs=(), infer=None, ref=None, **definition) -> OpDef:
    """Add (or replace) an op.  `definition` holds the optional OpDef fields (recipe, cost, ...)."""
    opdef = OpDef(name, infer, ref, frozenset(traits), arity, tuple(attrs), **definition)
    REGISTRY[name] = opdef
    return opdef


def get_opdef(name: str) -> OpDef:
    return REGISTRY[name]


def has_trait(op: Op, trait: str) -> bool:
    opdef = REGISTRY.get(op.name)
    return opdef is not None and trait in opdef.traits


def infer_types(name: str, types: tuple[TensorType, ...], attrs: dict) -> tuple[TensorType, ...]:
    opdef = REGISTRY[name]
    if opdef.arity is not None and len(types) != opdef.arity:
        raise TypeRuleError(f"{name} takes {opdef.arity} operand(s), got {len(types)}", kind="arg")
    missing = [a for a in opdef.attr_names if a not in attrs]
    if missing:
        raise TypeRuleError(f"{name} needs attribute(s) {', '.join(missing)}", kind="arg")
    return opdef.infer(types, attrs)


# ---- type rules ----------------------------------------------------------------
def _require_float(name, t: TensorType):
    if not t.dtype.is_float:
        raise TypeRuleError(f"{name} needs a floating-point operand, got {t.dtype}",
                            "cast first with x.astype(fs.float32)", kind="dtype")


def _require_numeric(name, t: TensorType):
    if t.dtype == dt.bool_:
        raise TypeRuleError(f"{name} is not defined on bool tensors",
                            "cast first with x.astype(fs.int32) or x.astype(fs.float32)", kind="dtype")


def _unary_rule(name, float_only):
    def infer(types, attrs):
        (t,) = types
        if float_only:
            _require_float(name, t)
        else:
            _require_numeric(name, t)
        return (t,)
    return infer


def _binary_rule(name, float_only, comparison):
    def infer(types, attrs):
        a, b = types
        if a.dtype != b.dtype:
            raise TypeRuleError(f"{name} operands have different dtypes {a.dtype} and {b.dtype}",
                                "the tracer promotes operands; insert a cast", kind="dtype")
        if float_only:
            _require_float(name, a)
        elif not comparison:
            _require_numeric(name, a)
        shape = broadcast_shapes(a.shape, b.shape)
        return (TensorType(shape, dt.bool_ if comparison else a.dtype),)
    return infer


def _errstate(fn):
    def wrapped(*a):
        with np.errstate(all="ignore"):
            return fn(*a)
    return wrapped


def _cast_infer(types, attrs):
    (t,) = types
    return (TensorType(t.shape, dt.to_dtype(attrs["dtype"])),)


def _cast_ref(args, attrs):
    target = dt.to_dtype(attrs["dtype"])
    x = args[0]
    if target.is_int and x.dtype.kind == "f":
        # float -> int truncates toward zero, as numpy does. NaN, +-inf and values outside int32
        # give INT32_MIN, then wrap to a narrower int: numpy's answer on x86 (cvttss2si), which
        # the LLVM executor gives too. The NPU's Cast saturates instead (NaN -> 0), and simulate
        # runs the printed Cast (docs/guide: dtypes).
        with np.errstate(invalid="ignore"):
            t = np.trunc(x.astype(np.float64))
            bad = ~((t >= -2.0 ** 31) & (t < 2.0 ** 31))
            i32 = np.where(bad, -2 ** 31, t).astype(np.int64).astype(np.int32)
            return i32.astype(target.np)
    return x.astype(target.np)


register("cast", arity=1, traits=[ELEMENTWISE, UNARY], attrs=("dtype",), infer=_cast_infer, ref=_cast_ref)


def _where_infer(types, attrs):
    c, a, b = types
    if c.dtype != dt.bool_:
        raise TypeRuleError(f"where needs a bool condition, got {c.dtype}",
                            "compare first, e.g. fs.where(x > 0, a, b)", kind="dtype")
    if a.dtype != b.dtype:
        raise TypeRuleError(f"where branches have different dtypes {a.dtype} and {b.dtype}",
                            "the tracer promotes operands; insert a cast", kind="dtype")
    return (TensorType(broadcast_shapes(c.shape, a.shape, b.shape), a.dtype),)


register("where", arity=3, traits=[ELEMENTWISE, BROADCAST], infer=_where_infer,
         ref=lambda args, attrs: np.where(args[0], args[1], args[2]))


def _constant_infer(types, attrs):
    return (TensorType((), dt.to_dtype(attrs["dtype"])),)


register("constant", arity=0, traits=[CONSTANT], attrs=("value", "dtype"), infer=_constant_infer,
         ref=lambda args, attrs: np.asarray(attrs["value"]))


# ---- reductions ----------------------------------------------------------------
def _reduce_rule(name):
    def infer(types, attrs):
        (t,) = types
        axes = normalize_axes(attrs["axes"], t.rank)
        if tuple(attrs["axes"]) != axes:
            raise TypeRuleError(f"{name} axes must be sorted non-negative, got {attrs['axes']}", kind="arg")
        keep = bool(attrs["keepdims"])
        shape = tuple((1 if i in axes else d) for i, d in enumerate(t.shape) if keep or i not in axes)
        dtype = t.dtype
        if name == "sum" and not dtype.is_float:
            dtype = dt.int32
        if name == "mean":
            _require_float(name, t)
        if name in ("max", "min") and any(t.shape[i] == 0 for i in axes):
            # numpy raises at run time ("zero-size array ... has no identity"); say it here
            raise TypeRuleError(f"{name} over an empty axis of shape {fmt_shape(t.shape)} has no value",
                                "reduce over axes whose size is not 0", kind="shape")
        return (TensorType(shape, dtype),)
    return infer


_REDUCE = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}
for _name, _fn in _REDUCE.items():
    register(_name, arity=1, traits=[REDUCTION], attrs=("axes", "keepdims"), infer=_reduce_rule(_name),
             ref=(lambda f: lambda args, attrs: np.asarray(
                 f(args[0], axis=tuple(attrs["axes"]), keepdims=bool(attrs["keepdims"]))))(_fn))


# ---- shape ops -------------------------------------------------------------------
def _reshape_infer(types, attrs):
    (t,) = types
    shape = tuple(attrs["shape"])
    if any(isinstance(d, int) and d < 0 for d in shape):
        raise TypeRuleError(f"reshape target {fmt_shape(shape)} has a negative size", kind="shape")
    if symbolic_factor(t.shape) != symbolic_factor(shape):
        raise TypeRuleError(f"cannot reshape {fmt_shape(t.shape)} into {fmt_shape(shape)}: "
                            "the element counts differ",
                            "the product of the new shape must equal the old one", kind="shape")
    return (TensorType(shape, t.dtype),)


register("reshape", arity=1, traits=[SHAPE], attrs=("shape",), infer=_reshape_infer,
         ref=lambda args, attrs: args[0].reshape(tuple(attrs["shape"])))


def _broadcast_to_infer(types, attrs):
    (t,) = types
    shape = tuple(attrs["shape"])
    try:
        fits = len(shape) >= t.rank and broadcast_shapes(t.shape, shape) == shape
    except TypeRuleError:  # say "broadcast_to", not the generic two-operand message
        fits = False
    if not fits:
        raise TypeRuleError(f"cannot broadcast {fmt_shape(t.shape)} to {fmt_shape(shape)}",
                            "each size must match or be 1 in the source", kind="shape")
    return (TensorType(shape, t.dtype),)


register("broadcast_to", arity=1, traits=[SHAPE, BROADCAST], attrs=("shape",), infer=_broadcast_to_infer,
         ref=lambda args, attrs: np.broadcast_to(args[0], tuple(attrs["shape"])))


def _transpose_infer(types, attrs):
    (t,) = types
    perm = tuple(attrs["perm"])
    if sorted(perm) != list(range(t.rank)):
        raise TypeRuleError(f"transpose axes {perm} are not a permutation of {tuple(range(t.rank))}",
                            kind="arg")
    return (TensorType(tuple(t.shape[p] for p in perm), t.dtype),)


register("transpose", arity=1, traits=[SHAPE], attrs=("perm",), infer=_transpose_infer,
         ref=lambda args, attrs: np.transpose(args[0], tuple(attrs["perm"])))


def _slice_infer(types, attrs):
    (t,) = types
    starts, stops, steps = attrs["starts"], attrs["stops"], attrs["steps"]
    if not len(starts) == len(stops) == len(steps) == t.rank:
        raise TypeRuleError("slice needs one start/stop/step per axis", kind="arg")
    shape = []
    for d, lo, hi, st in zip(t.shape, starts, stops, steps):
        if st <= 0:
            raise TypeRuleError(f"slice step must be positive, got {st}", kind="arg")
        if not isinstance(d, int):
            if (lo, hi, st) != (0, d, 1):
                raise TypeRuleError(f"symbolic axis {d} can only be taken whole in a slice", kind="shape")
            shape.append(d)
            continue
        if not 0 <= lo <= hi <= d:
            raise TypeRuleError(f"slice bounds {lo}:{hi} are outside an axis of size {d}", kind="shape")
        shape.append(max(0, -(-(hi - lo) // st)))
    return (TensorType(tuple(shape), t.dtype),)


def _slice_ref(args, attrs):
    idx = tuple(slice(lo, hi, st) for lo, hi, st in zip(attrs["starts"], attrs["stops"], attrs["steps"]))
    return args[0][idx]


register("slice", arity=1, traits=[SHAPE], attrs=("starts", "stops", "steps"), infer=_slice_infer,
         ref=_slice_ref)


def _concat_infer(types, attrs):
    if not types:
        raise TypeRuleError("concatenate needs at least one tensor", kind="arg")
    first = types[0]
    axis = attrs["axis"]
    if not 0 <= axis < first.rank:
        raise TypeRuleError(f"concatenate axis {axis} is out of range for rank {first.rank}", kind="arg")
    total = 0
    for t in types:
        if t.rank != first.rank or t.dtype != first.dtype:
            raise TypeRuleError("concatenate needs tensors of one rank and dtype, got "
                                + ", ".join(str(x) for x in types), kind="shape")
        for i, (a, b) in enumerate(zip(t.shape, first.shape)):
            if i != axis and a != b:
                raise TypeRuleError(f"concatenate: shapes {fmt_shape(first.shape)} and {fmt_shape(t.shape)} "
                                    f"differ on axis {i}", "all axes but the joined one must match",
                                    kind="shape")
        if not isinstance(t.shape[axis], int) or total is None:
            total = None
        else:
            total += t.shape[axis]
    if total is None:
        raise TypeRuleError("concatenate along a symbolic axis is not supported", kind="shape")
    shape = list(first.shape)
    shape[axis] = total
    return (TensorType(tuple(shape), first.dtype),)


register("concatenate", arity=None, traits=[SHAPE], attrs=("axis",), infer=_concat_infer,
         ref=lambda args, attrs: np.concatenate(args, axis=attrs["axis"]))


# ---- gather -------------------------------------------------------------------------
def _take_infer(types, attrs):
    table, indices = types
    axis = attrs["axis"]
    if not 0 <= axis < table.rank:
        raise TypeRuleError(f"take axis {axis} is out of range for a table of rank {table.rank}", kind="arg")
    if indices.dtype not in (dt.int32, dt.int8, dt.uint8):
        raise TypeRuleError(f"take indices must be integers, got {indices.dtype}",
                            "cast the indices with .astype(fs.int32)", kind="dtype")
    shape = table.shape[:axis] + indices.shape + table.shape[axis + 1:]
    return (TensorType(shape, table.dtype),)


def _take_ref(args, attrs):
    table, indices = args
    axis = attrs["axis"]
    size = table.shape[axis]
    idx = np.asarray(indices).astype(np.int64)
    bad = (idx < -size) | (idx >= size)
    if bad.any():
        raise IndexRangeError(take_range_message(attrs, int(idx[bad].flat[0]), size, int(np.flatnonzero(bad)[0]), axis),
                              hint=f"indices must lie in [-{size}, {size}); fusedsl never reads outside the table")
    return np.take(table, idx, axis=axis)


def take_range_message(attrs, index: int, size: int, position: int, axis: int = 0) -> str:
    """What an out-of-range take index says: the user's op when a composite named it (the
    optional `origin` attribute, e.g. "gather: an index along dim 1 (size 6)"), else the take."""
    origin = dict(attrs).get("origin")
    if origin:
        return f"{origin} is out of range"
    return f"take: index {index} is out of range for axis {axis} of size {size} (position {position} of the indices)"


# take(table, indices) {axis}: rows of `table` picked by integer `indices` (an embedding
# lookup); negative indices count from the end, like numpy.  An optional `origin` string names
# the user's op a composite built the take for (gather, scatter...), for the range error; the
# reference raises without a location and the interpreter adds the take's (reference.py).
register("take", arity=2, traits=[GATHER], attrs=("axis",), infer=_take_infer, ref=_take_ref)


# ---- cube ops ----------------------------------------------------------------------
def _matmul_dtype(a, b):
    if a.dtype != b.dtype:
        raise TypeRuleError(f"matmul operands have different dtypes {a.dtype} and {b.dtype}",
                            "the tracer promotes operands; insert a cast", kind="dtype")
    if a.dtype == dt.bool_:
        raise TypeRuleError("matmul is not defined on bool tensors", kind="dtype")
    # numpy's and torch's rule: the operands' dtype, integers wrapping (int8 @ int8 is int8);
    # the executors accumulate exactly (mod 2**32) and round once to it
    return a.dtype


def _swap_last(shape):
    return tuple(shape[:-2]) + (shape[-1], shape[-2])


def _matmul_infer(types, attrs):
    a, b = types
    if a.rank < 2 or b.rank < 2:
        raise TypeRuleError(f"matmul needs operands of rank >= 2, got {fmt_shape(a.shape)} and {fmt_shape(b.shape)}",
                            "reshape a vector v to (1, n) or (n, 1)", kind="shape")
    # transpose_a / transpose_b (optional, from the fold-transpose pass): the operand is read
    # with its last two axes swapped, as a Matmul API operand declared isTrans is
    sa = _swap_last(a.shape) if attrs.get("transpose_a", False) else tuple(a.shape)
    sb = _swap_last(b.shape) if attrs.get("transpose_b", False) else tuple(b.shape)
    if sa[-1] != sb[-2]:
        raise TypeRuleError(f"matmul inner dimensions differ: {fmt_shape(sa)} @ {fmt_shape(sb)} "
                            f"({sa[-1]} != {sb[-2]})",
                            "the last axis of the left operand must equal the second-to-last of the right",
                            kind="shape")
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    return (TensorType(batch + (sa[-2], sb[-1]), _matmul_dtype(a, b)),)


def _matmul_ref(args, attrs):
    a, b = args
    if attrs.get("transpose_a", False):
        a = np.swapaxes(a, -1, -2)
    if attrs.get("transpose_b", False):
        b = np.swapaxes(b, -1, -2)
    if a.dtype.kind in "iub":   # exact in int64 (wrapping mod 2**64 only past it); _round wraps
        return np.matmul(a.astype(np.int64), b.astype(np.int64))
    return np.matmul(a, b)


register("matmul", arity=2, traits=[CUBE], infer=_matmul_infer, ref=_matmul_ref)


def _conv_out(size, k, stride, pad):
    return (size + 2 * pad - k) // stride + 1


def _conv2d_infer(types, attrs):
    x, w = types
    if x.rank != 4 or w.rank != 4:
        raise TypeRuleError(f"conv2d needs x in NCHW and w in KCRS (rank 4), got {fmt_shape(x.shape)} and "
                            f"{fmt_shape(w.shape)}", kind="shape")
    sh, sw = attrs["stride"]
    ph, pw = attrs["padding"]
    if sh <= 0 or sw <= 0 or ph < 0 or pw < 0:
        raise TypeRuleError(f"conv2d stride must be positive and padding non-negative, got stride "
                            f"{attrs['stride']}, padding {attrs['padding']}", kind="arg")
    n, c, h, wd = x.shape
    k, c2, r, s = w.shape
    if c != c2:
        raise TypeRuleError(f"conv2d channels differ: x has C={c}, w has C={c2}",
                            "w must be laid out as (K, C, R, S)", kind="shape")
    if not all(isinstance(d, int) for d in (h, wd, r, s)):
        raise TypeRuleError("conv2d needs static spatial sizes", kind="shape")
    ho, wo = _conv_out(h, r, sh, ph), _conv_out(wd, s, sw, pw)
    if ho <= 0 or wo <= 0:
        raise TypeRuleError(f"conv2d output would be empty: input {h}x{wd}, kernel {r}x{s}", kind="shape")
    return (TensorType((n, k, ho, wo), _matmul_dtype(x, w)),)


def conv2d_reference(x, w, stride, padding):
    """Direct NCHW convolution via im2col in numpy (also used by tests)."""
    sh, sw = stride
    ph, pw = padding
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    ho, wo = _conv_out(h, r, sh, ph), _conv_out(wd, s, sw, pw)
    cols = np.empty((n, c, r, s, ho, wo), dtype=x.dtype)
    for i in range(r):
        for j in range(s):
            cols[:, :, i, j] = xp[:, :, i:i + sh * ho:sh, j:j + sw * wo:sw]
    acc = np.int64 if x.dtype.kind in "iub" else x.dtype
    out = np.tensordot(w.astype(acc), cols.astype(acc), axes=([1, 2, 3], [1, 2, 3]))  # k, n, ho, wo
    return np.ascontiguousarray(out.transpose(1, 0, 2, 3))


register("conv2d", arity=2, traits=[CUBE], attrs=("stride", "padding"), infer=_conv2d_infer,
         ref=lambda args, attrs: conv2d_reference(args[0], args[1], attrs["stride"], attrs["padding"]))

# A call to another function of the module (a fused kernel).  Result types are given
# by the callee; the verifier checks them at module level.
register("call", arity=None, traits=[CALL], attrs=("callee",), infer=None, ref=None)


# ---- attention ---------------------------------------------------------------------
# attention(q, k, v[, mask]) {scale, causal}: PyTorch's scaled_dot_product_attention.
#   q [..., H, L, E], k [..., Hkv, S, E], v [..., Hkv, S, Ev] -> [..., H, L, Ev]
# Leading axes match exactly; H a multiple of Hkv is grouped-query attention (query head h
# reads KV head h // (H // Hkv), torch's enable_gqa).  The mask is boolean (True = attend)
# or additive in q's dtype and broadcasts to [..., H, L, S].  `causal` keeps key j for query
# i when j <= i: top-left aligned, as torch 2.13's is_causal when L != S (torch's
# causal_lower_right is a mask).  Softmax statistics are float32 for every dtype; a row
# with no key to attend to is 0 (torch gives 0 too, not NaN).
def _swap_heads(t: TensorType) -> TensorType:
    """[B, S, H, D] read as [B, H, S, D] (the attention op's layout "bshd")."""
    shape = tuple(t.shape)
    return TensorType(shape[:-3] + (shape[-2], shape[-3], shape[-1]), t.dtype)


def _head_view(t: TensorType, heads) -> TensorType:
    """An operand of a bshd attention with `{q,k,v}_heads = [start, stop]`: the op reads heads
    start..stop of [B, S, H, D] (one linear layer's q, k and v heads side by side)."""
    if heads is None:
        return t
    lo, hi = heads
    if not (isinstance(t.shape[-2], int) and 0 <= lo < hi <= t.shape[-2]):
        raise TypeRuleError(f"attention heads {lo}..{hi} are not within {fmt_shape(t.shape)}", kind="shape")
    return TensorType(tuple(t.shape[:-2]) + (hi - lo, t.shape[-1]), t.dtype)


def attention_views(op) -> tuple:
    """The q, k, v an attention op reads: its operands, or Values of the heads it reads of them
    (`{q,k,v}_heads`, layout bshd) -- for the cost model's element counts."""
    return tuple(v if op.attr(f"{n}_heads") is None else Value(_head_view(v.type, op.attr(f"{n}_heads")), v.name)
                 for v, n in zip(op.operands[:3], "qkv"))


def _attention_infer(types, attrs):
    layout = attrs.get("layout", "bhsd")
    if layout not in ("bhsd", "bshd"):
        raise TypeRuleError(f"attention layout must be bhsd or bshd, got {layout!r}", kind="arg")
    if layout == "bshd":
        # q, k, v and the result are [B, S, H, D]: the same attention with heads and sequence swapped
        if len(types) < 3 or any(t.rank != 4 for t in types[:3]):
            raise TypeRuleError("attention layout bshd needs q, k, v of rank 4", kind="shape")
        types = tuple(_head_view(t, attrs.get(f"{n}_heads")) for t, n in zip(types[:3], "qkv")) + tuple(types[3:])
        plain = {a: x for a, x in attrs.items() if not a.endswith("_heads")}
        plain["layout"] = "bhsd"
        (out,) = _attention_infer(tuple(_swap_heads(t) for t in types[:3]) + tuple(types[3:]), plain)
        return (_swap_heads(out),)
    rope = types[len(types) - 2:] if attrs.get("rope", False) else ()
    types = types[:len(types) - len(rope)]
    if len(types) not in (3, 4):
        raise TypeRuleError(f"attention takes q, k, v, an optional mask{' and cos, sin' if rope else ''}, got "
                            f"{len(types) + len(rope)} operand(s)", kind="arg")
    q, k, v = types[:3]
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not t.dtype.is_float:
            raise TypeRuleError(f"attention {name} must be a floating-point tensor, got {t.dtype}",
                                "cast it with .astype(fs.float32)", kind="dtype")
        if t.rank < 2:
            raise TypeRuleError(f"attention {name} needs rank >= 2 ([..., S, D]), got {fmt_shape(t.shape)}",
                                kind="shape")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeRuleError(f"attention q, k, v have different dtypes {q.dtype}, {k.dtype}, {v.dtype}",
                            "cast them to one dtype", kind="dtype")
    if not q.rank == k.rank == v.rank:
        raise TypeRuleError(f"attention q, k, v have different ranks: {fmt_shape(q.shape)}, "
                            f"{fmt_shape(k.shape)}, {fmt_shape(v.shape)}", kind="shape")
    if k.shape[-1] != q.shape[-1]:
        raise TypeRuleError(f"attention q and k have different head sizes: {fmt_shape(q.shape)} and "
                            f"{fmt_shape(k.shape)}", "the last axes of q and k must match", kind="shape")
    if v.shape[-2] != k.shape[-2]:
        raise TypeRuleError(f"attention k and v have different sequence lengths: {fmt_shape(k.shape)} and "
                            f"{fmt_shape(v.shape)}", "axis -2 of k and v must match", kind="shape")
    if k.shape[:-2] != v.shape[:-2]:
        raise TypeRuleError(f"attention k and v have different batch/head axes: {fmt_shape(k.shape)} and "
                            f"{fmt_shape(v.shape)}", kind="shape")
    if q.shape[:-3] != k.shape[:-3]:
        raise TypeRuleError(f"attention q and k have different batch axes: {fmt_shape(q.shape)} and "
                            f"{fmt_shape(k.shape)}", "q, k and v share every axis before the heads", kind="shape")
    if q.rank >= 3:
        h, hkv = q.shape[-3], k.shape[-3]
        if h != hkv and not (isinstance(h, int) and isinstance(hkv, int) and hkv > 0 and h % hkv == 0):
            raise TypeRuleError(f"attention has {h} query heads and {hkv} key/value heads "
                                f"({fmt_shape(q.shape)} and {fmt_shape(k.shape)})",
                                "grouped-query attention needs the query heads to be a multiple of the "
                                "key/value heads", kind="shape")
    out = TensorType(tuple(q.shape[:-1]) + (v.shape[-1],), q.dtype)
    if len(types) == 4:
        mask = types[3]
        if mask.dtype != dt.bool_ and mask.dtype != q.dtype:
            raise TypeRuleError(f"attention mask must be bool or {q.dtype} like q, got {mask.dtype}",
                                "a bool mask keeps True positions; a float mask is added to the scores",
                                kind="dtype")
        scores = tuple(q.shape[:-1]) + (k.shape[-2],)
        try:
            fits = mask.rank <= len(scores) and broadcast_shapes(mask.shape, scores) == scores
        except TypeRuleError:
            fits = False
        if not fits:
            raise TypeRuleError(f"attention mask {fmt_shape(mask.shape)} does not broadcast to the scores "
                                f"{fmt_shape(scores)}", "the mask's axes must match the scores' or be 1",
                                kind="shape")
    for name, t in zip(("cos", "sin"), rope):   # rotary tables, read against q's and k's [..., S, D] rows
        if t.dtype != q.dtype:
            raise TypeRuleError(f"attention rope {name} must be {q.dtype} like q, got {t.dtype}", kind="dtype")
        even = isinstance(q.shape[-1], int) and q.shape[-1] % 2 == 0
        for x in (q, k):
            try:
                fits = even and t.rank <= x.rank and broadcast_shapes(t.shape, x.shape) == tuple(x.shape)
            except TypeRuleError:
                fits = False
            if not fits:
                raise TypeRuleError(f"attention rope {name} {fmt_shape(t.shape)} does not broadcast to q and k "
                                    f"{fmt_shape(q.shape)}, {fmt_shape(k.shape)} (an even head size)", kind="shape")
    if not isinstance(attrs["scale"], (int, float)) or isinstance(attrs["scale"], bool):
        raise TypeRuleError(f"attention scale must be a number, got {attrs['scale']!r}", kind="arg")
    if not isinstance(attrs["causal"], bool):
        raise TypeRuleError(f"attention causal must be true or false, got {attrs['causal']!r}", kind="arg")
    return (out,)


def attention_reference(q, k, v, mask=None, scale=1.0, causal=False):
    """Scaled dot-product attention in numpy at q's precision (float32 for the 16-bit
    dtypes, which the interpreter widens): the oracle of every executor."""
    if q.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        group = q.shape[-3] // k.shape[-3]
        k = np.repeat(k, group, axis=-3)
        v = np.repeat(v, group, axis=-3)
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * np.asarray(scale, q.dtype)
    neg_inf = np.asarray(-np.inf, scores.dtype)
    if mask is not None:
        scores = np.where(mask, scores, neg_inf) if mask.dtype == np.bool_ else scores + mask
    if causal:
        length, keys = scores.shape[-2], scores.shape[-1]
        scores = np.where(np.tri(length, keys, dtype=np.bool_), scores, neg_inf)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        top = np.max(scores, axis=-1, keepdims=True) if scores.shape[-1] else \
            np.full(scores.shape[:-1] + (1,), -np.inf, scores.dtype)
        top = np.where(top == neg_inf, np.zeros((), scores.dtype), top)   # fully masked row: p = 0
        p = np.exp(scores - top)
        total = np.sum(p, axis=-1, keepdims=True)
        out = np.matmul(p, v) / total
        return np.where(total > 0, out, np.zeros((), out.dtype)).astype(q.dtype)


def attention_operands(op) -> tuple:
    """(q, k, v, mask or None, cos or None, sin or None) of an attention op: with `rope` the
    last two operands are the rotary tables."""
    args = tuple(op.operands)
    rope = args[len(args) - 2:] if op.attr("rope", False) else (None, None)
    core = args[:len(args) - 2] if op.attr("rope", False) else args
    return core[0], core[1], core[2], (core[3] if len(core) > 3 else None), rope[0], rope[1]


def rope_reference(x, cos, sin):
    """x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1] (x's halves on the last axis)."""
    half = x.shape[-1] // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return (x * cos + rotated * sin).astype(x.dtype)


def _attention_ref(args, attrs):
    rope = args[len(args) - 2:] if attrs.get("rope", False) else None
    args = args[:len(args) - 2] if rope else args
    q, k, v = (x if attrs.get(f"{n}_heads") is None else x[..., slice(*attrs[f"{n}_heads"]), :]
               for x, n in zip(args[:3], "qkv"))
    mask = args[3] if len(args) > 3 else None
    bshd = attrs.get("layout", "bhsd") == "bshd"
    if bshd:   # [B, S, H, D] in and out
        q, k, v = (np.swapaxes(x, -3, -2) for x in (q, k, v))
    if rope:   # q and k rotated first, at their precision (the tables are read against [..., S, D])
        q, k = rope_reference(q, *rope), rope_reference(k, *rope)
    if bshd:
        return np.ascontiguousarray(np.swapaxes(attention_reference(q, k, v, mask, attrs["scale"], attrs["causal"]),
                                                -3, -2))
    return attention_reference(q, k, v, mask, attrs["scale"], attrs["causal"])


# attrs: scale, causal, and layout "bshd" (optional) when q, k, v and the result are [B, S, H, D]
# (the heads transposes of a model, folded by passes/fuse_attention.py); rope (optional): the last
# two operands are cos, sin and q, k are rotated first (rope_reference; passes/fuse_attention.py
# FoldAttentionRope folds fs.rope / the rotate-half pattern of q and k into the op)
register("attention", arity=None, traits=[ATTENTION], attrs=("scale", "causal"), infer=_attention_infer,
         ref=_attention_ref)
