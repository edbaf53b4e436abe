"""Index ops as composites of fs ops (numpy / PyTorch names and argument conventions; ONE
definition each, which `fs.*` and the importers call).

  index_select   torch.index_select: fs.take of a 1-D index along `dim` (a gather view: the
                 kernel reads the rows it names; negative indices count from the end)
  take_along_axis / gather   one take of the flattened array at row offset + index
  isin           a compare against every test element, then any (O(N T))
  scatter family a [..., n, m] hit mask per row (O(n m)), its values reduced; the last duplicate
                 wins for plain scatter
  sort family    a bitonic network on (value, index) pairs (O(n log^2 n) per row, one kernel per
                 stage; see "sorting along the last axis"), stable, NaN last (first when
                 descending)
Everything is compares, selects, sums and takes: LLVM kernels, printed wherever those print.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from .composite import composite, exact_int32


def _fail(F, message, hint=None, kind="ArgumentError"):
    raise getattr(F, kind)(message, loc=F.user_frame(), hint=hint)


def _int_index(F, index, name):
    if not isinstance(index, F.Tensor):
        _fail(F, f"{name} needs a tensor of indices, got {type(index).__name__}", hint="pass an integer array")
    if index.dtype.is_float or index.dtype == dt.bool_:
        _fail(F, f"{name} indices must be integers, got {index.dtype}", kind="DTypeError",
              hint="cast them with .astype(fs.int32)")
    return index if index.dtype == dt.int32 else F.cast(index, dt.int32)


@composite("index_select", "index", dtypes="any", aten=("aten.index_select.default",),
           doc="the slices of x at a 1-D integer `index` along `dim` (torch.index_select; np.take with a 1-D "
               "index): a gather view, every dtype exact",
           example="fs.index_select(x, 0, idx)")
def index_select(F, x, dim, index):
    if not isinstance(x, F.Tensor):
        _fail(F, f"index_select needs a tensor, got {type(x).__name__}")
    index = _int_index(F, index, "index_select")
    if index.ndim != 1:
        _fail(F, f"index_select needs a 1-D index, got shape {tuple(index.shape)}", kind="ShapeError",
              hint="use fs.take for an index of any shape")
    if not isinstance(dim, int) or not -max(x.ndim, 1) <= dim < max(x.ndim, 1):
        _fail(F, f"index_select dim {dim!r} is out of range for a tensor of rank {x.ndim}")
    if x.ndim == 0:
        return F.take(x, index, axis=0)
    return take_axis(F, x, index, dim % x.ndim, f"index_select: an index along dim {dim % x.ndim}")


def take_axis(F, x, index, axis, origin, checked=True):
    """numpy.take(x, index, axis) for a 1-D index, as one take along axis 0 (the kind of gather
    the view kernels read natively and print): along axis 0 directly, along another axis of x
    seen as [lead * n, rest] at row offsets lead_row * n + index.  An index outside [-n, n) is
    sent past the end of the table so the take raises, naming `origin` and the size n
    (checked=False: indices the caller built in [0, n), used as they are)."""
    n, m = x.shape[axis], index.shape[0]
    named = f"{origin} (size {n})"
    if axis == 0:
        return x.trace.emit("take", [x, index], {"axis": 0, "origin": named})
    lead = math.prod(x.shape[:axis])
    rest = math.prod(x.shape[axis + 1:])
    rows = F.reshape(x.trace.emit("arange", [], {"start": 0, "stop": lead * n, "step": max(n, 1), "dtype": "int32"}),
                     (lead, 1))
    if checked:
        inside = F.logical_and(index >= -n, index < n)
        i = F.reshape(F.where(index < 0, index + n, index), (1, m))
        flat = F.where(F.reshape(inside, (1, m)), i + rows, lead * n)
    else:
        flat = F.reshape(index, (1, m)) + rows
    got = x.trace.emit("take", [F.reshape(x, (lead * n, rest)), F.reshape(flat, (-1,))],
                       {"axis": 0, "origin": named})
    return F.reshape(got, tuple(x.shape[:axis]) + (m,) + tuple(x.shape[axis + 1:]))


# ---- gathers along an axis -------------------------------------------------------------------------
def _axis(F, x, axis, name):
    if not isinstance(axis, int) or not -max(x.ndim, 1) <= axis < max(x.ndim, 1):
        _fail(F, f"{name} axis {axis!r} is out of range for a tensor of rank {x.ndim}")
    return axis % max(x.ndim, 1)


def _to_last(F, x, axis):
    """x with `axis` moved last, and the permutation that moves it back."""
    if axis == x.ndim - 1:
        return x, None
    perm = [d for d in range(x.ndim) if d != axis] + [axis]
    return F.transpose(x, perm), [perm.index(d) for d in range(x.ndim)]


def _back(F, y, inv):
    return y if inv is None else F.transpose(y, inv)


def _rows(F, x, n):
    """0, n, 2n, ... per row of x's leading axes, shaped [..., 1] (the offset of each row in
    x flattened)."""
    lead = x.shape[:-1]
    r = 1
    for d in lead:
        r *= d
    off = x.trace.emit("arange", [], {"start": 0, "stop": r * n, "step": max(n, 1), "dtype": "int32"})
    return F.reshape(off, tuple(lead) + (1,))


def gather_last(F, x, idx, origin):
    """out[..., j] = x[..., idx[..., j]] for x [..., n] and idx [..., m] of the same leading
    shape: one take of the flattened x at row offset + index (a gather view; every dtype
    exact).  Indices in [-n, n) (negatives count from the end); any other is sent past the end
    of the flattened table, so the take's range check raises at the user's line, naming
    `origin` (the user's op and dim, e.g. "gather: an index along dim 1") and n."""
    n = x.shape[-1]
    total = 1
    for d in x.shape:
        total *= d
    inside = F.logical_and(idx >= -n, idx < n)
    flat = F.where(idx < 0, idx + n, idx) + _rows(F, idx, n)
    flat = F.where(inside, flat, total)
    got = x.trace.emit("take", [F.reshape(x, (total, 1)), F.reshape(flat, (-1,))],
                       {"axis": 0, "origin": f"{origin} (size {n})"})
    return F.reshape(got, idx.shape)


@composite("take_along_axis", "index", dtypes="any", aten=(),
           doc="numpy.take_along_axis: out[..., j, ...] = arr[..., indices[..., j, ...], ...] along `axis`, "
               "the other axes broadcast (None: arr flattened); one take of the flattened array, every dtype "
               "exact; an index outside [-n, n) raises when the kernel runs",
           example="fs.take_along_axis(x, fs.broadcast_to(fs.reshape(idx, (1, 3)), (3, 3)), 1)")
def take_along_axis(F, arr, indices, axis=-1):
    return _take_along(F, arr, indices, axis, "take_along_axis")


def _take_along(F, arr, indices, axis, name):
    if not isinstance(arr, F.Tensor):
        _fail(F, f"{name} needs a tensor, got {type(arr).__name__}")
    indices = _int_index(F, indices, name)
    if axis is None:
        arr, axis = F.reshape(arr, (-1,)), 0
        if indices.ndim != 1:
            _fail(F, f"take_along_axis with axis=None needs 1-D indices, got shape {tuple(indices.shape)}",
                  kind="ShapeError")
    if indices.ndim != arr.ndim:
        _fail(F, f"take_along_axis needs indices of the array's rank {arr.ndim}, got shape {tuple(indices.shape)}",
              kind="ShapeError", hint="add the missing axes with fs.expand_dims")
    axis = _axis(F, arr, axis, "take_along_axis")
    lead = []
    for d in range(arr.ndim):
        if d == axis:
            continue
        a, b = arr.shape[d], indices.shape[d]
        if a != b and 1 not in (a, b):
            _fail(F, f"take_along_axis: axis {d} of the array ({a}) and of the indices ({b}) do not broadcast",
                  kind="ShapeError")
        lead.append(max(a, b))
    x, inv = _to_last(F, arr, axis)
    i, _ = _to_last(F, indices, axis)
    x = F.broadcast_to(x, tuple(lead) + (x.shape[-1],))
    i = F.broadcast_to(i, tuple(lead) + (i.shape[-1],))
    return _back(F, gather_last(F, x, i, f"{name}: an index along {'dim' if name == 'gather' else 'axis'} {axis}"),
                 inv)


@composite("gather", "index", dtypes="any", aten=("aten.gather.default",), onnx=("GatherElements",),
           doc="torch.gather: `out[i][j] = input[i][index[i][j]]` along `dim` (index no larger than input on "
               "the other axes), as take_along_axis of the input cut to the index's extent",
           example="fs.gather(x, 1, fs.broadcast_to(fs.reshape(idx, (1, 3)), (3, 3)))")
def gather(F, input, dim, index, sparse_grad=False):
    if not isinstance(input, F.Tensor):
        _fail(F, f"gather needs a tensor, got {type(input).__name__}")
    index = _int_index(F, index, "gather")
    dim = _axis(F, input, dim, "gather")
    if index.ndim != input.ndim or any(index.shape[d] > input.shape[d] for d in range(input.ndim) if d != dim):
        _fail(F, f"gather: index of shape {tuple(index.shape)} must have the input's rank and be no larger than "
              f"the input {tuple(input.shape)} on every axis but {dim}", kind="ShapeError")
    cut = tuple(slice(None) if d == dim else slice(0, index.shape[d]) for d in range(input.ndim))
    return _take_along(F, input[cut], index, dim, "gather")


@composite("isin", "index", dtypes="any", aten=("aten.isin.Tensor_Tensor", "aten.isin.Tensor_Scalar"),
           doc="numpy.isin / torch.isin: whether each element equals one of test_elements (NaN never does); "
               "a compare against all T test elements and an any (O(N T))",
           example="fs.isin(x, y[0, :5])")
def isin(F, element, test_elements, assume_unique=False, invert=False):
    if not isinstance(element, F.Tensor):
        _fail(F, f"isin needs a tensor of elements, got {type(element).__name__}")
    if isinstance(test_elements, F.Tensor):
        tests = F.reshape(test_elements, (-1,))
        hit = F.any(F.reshape(element, tuple(element.shape) + (1,)) == tests, axis=-1)
    else:
        values = test_elements if isinstance(test_elements, (list, tuple)) else [test_elements]
        if not values or not all(isinstance(v, (int, float, bool)) for v in values):
            _fail(F, f"isin test_elements must be a tensor or numbers, got {test_elements!r}")
        hit = None
        for v in values:
            h = element == v
            hit = h if hit is None else F.logical_or(hit, h)
    return F.logical_not(hit) if invert else hit


# ---- scatters along an axis ------------------------------------------------------------------------
REDUCES = ("sum", "prod", "amax", "amin", "mean")


def _float_iota(F, x, n, shape):
    return F.reshape(F.cast(x.trace.emit("arange", [], {"start": 0, "stop": n, "step": 1, "dtype": "int32"}),
                            dt.float32), shape)


def _const(F, x, value):
    return F.cast(x.trace.constant(value, x.dtype), x.dtype)


def _identity(F, x, reduce):
    if reduce in ("sum", "mean"):
        return _const(F, x, 0)
    if reduce == "prod":
        return _const(F, x, 1)
    if x.dtype.is_float:
        return _const(F, x, -math.inf if reduce == "amax" else math.inf)
    if x.dtype == dt.bool_:
        return _const(F, x, reduce != "amax")
    info = np.iinfo(x.dtype.np)
    return _const(F, x, int(info.min if reduce == "amax" else info.max))


def scatter_last(F, x, idx, src, reduce, include_self, origin):
    """x [..., n] with the values src [..., m] (or a number) combined in at positions idx [..., m]
    along the last axis (idx, src and x of one leading shape).  Each output position k compares
    against all m indices (hits [..., n, m]: a row kernel, O(n m) per row):
      reduce None: the last j with idx[j] == k wins (numpy's put_along_axis; torch leaves
                   duplicates unspecified); a position nobody names keeps x;
      sum / prod / amax / amin / mean: the hits' values reduced, then combined with x
                   (include_self) or replacing it; a position nobody names keeps x.
    Indices in [-n, n); any other makes the kernel raise (a take reads past its table)."""
    n, m = x.shape[-1], idx.shape[-1]
    bad = F.logical_or(idx < -n, idx >= n)
    i = F.where(bad, -1.0, F.cast(F.where(idx < 0, idx + n, idx), dt.float32))
    hit = F.reshape(i, tuple(idx.shape[:-1]) + (1, m)) == _float_iota(F, x, n, (1,) * (x.ndim - 1) + (n, 1))
    count = F.sum(F.cast(hit, dt.float32), axis=-1)                        # [..., n]
    named = count > 0.0
    if reduce is None:
        j = _float_iota(F, x, m, (1,) * (x.ndim - 1) + (1, m))
        last = exact_int32(F, F.max(F.where(hit, j, -1.0), axis=-1), m)    # [..., n]: -1 where none
        if isinstance(src, F.Tensor):
            value = F.cast(gather_last(F, F.cast(src, x.dtype), F.maximum(last, 0), origin), x.dtype)
        else:
            value = _const(F, x, src)
        r = F.where(named, value, x)
    else:
        s = src if isinstance(src, F.Tensor) else _const(F, x, src)
        s = F.reshape(F.broadcast_to(F.cast(s, x.dtype), tuple(idx.shape)), tuple(idx.shape[:-1]) + (1, m))
        vals = F.where(hit, s, _identity(F, x, reduce))
        if reduce in ("sum", "mean"):
            r = F.sum(vals, axis=-1)
            r = r + x if include_self else r
            if reduce == "mean":
                r = r / F.where(named, count + 1.0 if include_self else count, 1.0)
        elif reduce == "prod":
            r = F.prod(vals, axis=-1)
            r = r * x if include_self else r
        else:
            r = (F.max if reduce == "amax" else F.min)(vals, axis=-1)
            r = (F.maximum if reduce == "amax" else F.minimum)(r, x) if include_self else r
        r = F.where(named, F.cast(r, x.dtype), x)
    # the range check: a take of `count` (>= 0) at 0, or past its end for an index outside
    # [-n, n); the take raises at the user's line when the kernel runs, before any result is seen
    probe = gather_last(F, count, F.where(bad, n, 0), origin)
    return F.where(F.min(probe, axis=-1, keepdims=True) >= 0.0, r, x)


def _scatter(F, name, input, dim, index, src, reduce=None, include_self=True):
    """torch's scatter family along `dim`: index no larger than src on every axis and than input
    on the others; input outside the index's extent on the other axes is kept."""
    if not isinstance(input, F.Tensor):
        _fail(F, f"{name} needs a tensor, got {type(input).__name__}")
    index = _int_index(F, index, name)
    dim = _axis(F, input, dim, name)
    if reduce is not None and reduce not in REDUCES:
        _fail(F, f"{name} reduce must be one of {', '.join(REDUCES)}, got {reduce!r}")
    if reduce == "mean" and not input.dtype.is_float:
        _fail(F, f"{name} reduce='mean' needs a float input, got {input.dtype}", kind="DTypeError",
              hint="cast the input to float32 first")
    if index.ndim != input.ndim or any(index.shape[d] > input.shape[d] for d in range(input.ndim) if d != dim):
        _fail(F, f"{name}: index of shape {tuple(index.shape)} must have the input's rank and be no larger than "
              f"the input {tuple(input.shape)} on every axis but {dim}", kind="ShapeError")
    if isinstance(src, F.Tensor):
        if src.ndim != index.ndim or any(index.shape[d] > src.shape[d] for d in range(src.ndim)):
            _fail(F, f"{name}: src of shape {tuple(src.shape)} must have the index's rank and be no smaller "
                  f"than the index {tuple(index.shape)} on every axis", kind="ShapeError")
        src = src[tuple(slice(0, e) for e in index.shape)]
    elif not isinstance(src, (int, float, bool)):
        _fail(F, f"{name} needs a tensor or a number of values, got {type(src).__name__}")
    extent = tuple(input.shape[d] if d == dim else index.shape[d] for d in range(input.ndim))
    core = input[tuple(slice(0, e) for e in extent)]
    x, inv = _to_last(F, core, dim)
    i, _ = _to_last(F, index, dim)
    s = _to_last(F, src, dim)[0] if isinstance(src, F.Tensor) else src
    out = _back(F, scatter_last(F, x, i, s, reduce, include_self, f"{name}: an index along dim {dim}"), inv)
    for d in range(input.ndim):   # the input beyond the index's extent, unchanged
        if extent[d] < input.shape[d]:
            rest = tuple(slice(None) if e < d else slice(extent[d], None) if e == d else slice(0, extent[e])
                         for e in range(input.ndim))
            out = F.concatenate([out, input[rest]], axis=d)
    return out


@composite("scatter", "index", dtypes="any", aten=("aten.scatter.src", "aten.scatter.value"),
           onnx=("ScatterElements",),
           doc="torch.scatter: input with `out[i][index[i][j]] = src[i][j]` along `dim` (src a tensor or a "
               "number); duplicate indices: the last one wins (torch leaves it unspecified); reduce "
               "'sum' / 'prod' / 'amax' / 'amin' / 'mean' as scatter_reduce; O(n m) compares per row",
           example="fs.scatter(x, 1, fs.broadcast_to(fs.reshape(idx, (1, 3)), (3, 3)), y)")
def scatter(F, input, dim, index, src, reduce=None):
    return _scatter(F, "scatter", input, dim, index, src, {"add": "sum", "multiply": "prod"}.get(reduce, reduce))


@composite("scatter_add", "index", dtypes="numeric", aten=("aten.scatter_add.default",),
           doc="torch.scatter_add: input with `src[i][j]` added at `out[i][index[i][j]]` along `dim`, every "
               "duplicate counted",
           example="fs.scatter_add(x, 1, fs.broadcast_to(fs.reshape(idx, (1, 3)), (3, 3)), y)")
def scatter_add(F, input, dim, index, src):
    return _scatter(F, "scatter_add", input, dim, index, src, "sum")


@composite("scatter_reduce", "index", dtypes="numeric", aten=("aten.scatter_reduce.two",),
           doc="torch.scatter_reduce: the src values landing on each position reduced by 'sum', 'prod', "
               "'amax', 'amin' or 'mean' (floats), with the input's own value when include_self; a position "
               "nobody names keeps the input",
           example="fs.scatter_reduce(x, 1, fs.broadcast_to(fs.reshape(idx, (1, 3)), (3, 3)), y, 'amax')")
def scatter_reduce(F, input, dim, index, src, reduce, include_self=True):
    if reduce not in REDUCES:
        _fail(F, f"scatter_reduce reduce must be one of {', '.join(REDUCES)}, got {reduce!r}")
    return _scatter(F, "scatter_reduce", input, dim, index, src, reduce, include_self)


@composite("put_along_axis", "index", dtypes="any",
           doc="numpy.put_along_axis as a function: arr with values put at indices along `axis` (values "
               "broadcast to the indices; the last duplicate wins); returns the new array",
           example="fs.put_along_axis(x, fs.broadcast_to(fs.reshape(idx, (1, 3)), (3, 3)), 0.5, 1)")
def put_along_axis(F, arr, indices, values, axis):
    indices = _int_index(F, indices, "put_along_axis")
    if isinstance(values, F.Tensor):
        values = F.broadcast_to(values, tuple(indices.shape))
    return _scatter(F, "put_along_axis", arr, axis, indices, values)


@composite("index_put", "index", dtypes="any", aten=("aten.index_put.default",),
           doc="torch.index_put / x[idx] = values with ONE integer index tensor (the other entries None: "
               "whole axes): the slices at idx replaced by values (broadcast), or added to with "
               "accumulate=True (every duplicate counted); without accumulate the last duplicate wins",
           example="fs.index_put(x, (idx,), y[0])")
def index_put(F, input, indices, values, accumulate=False):
    if not isinstance(input, F.Tensor):
        _fail(F, f"index_put needs a tensor, got {type(input).__name__}")
    indices = tuple(indices) if isinstance(indices, (list, tuple)) else (indices,)
    used = [(a, i) for a, i in enumerate(indices) if i is not None]
    if len(used) != 1 or len(indices) > input.ndim:
        _fail(F, "index_put takes exactly one index tensor (the other entries None), got "
              f"{len(used)} of {len(indices)}", hint="index one axis at a time")
    axis, idx = used[0]
    idx = _int_index(F, idx, "index_put")
    if idx.ndim != 1:
        _fail(F, f"index_put needs a 1-D index, got shape {tuple(idx.shape)}", kind="ShapeError")
    # values broadcast to the selected slices: input's shape with `axis` of the index's length
    target = tuple(idx.shape[0] if d == axis else input.shape[d] for d in range(input.ndim))
    if isinstance(values, F.Tensor):
        values = F.broadcast_to(F.cast(values, input.dtype), target)
    shape = [1] * input.ndim
    shape[axis] = idx.shape[0]
    full = F.broadcast_to(F.reshape(idx, tuple(shape)), target)
    return _scatter(F, "index_put", input, axis, full, values, "sum" if accumulate else None)


# ---- sorting along the last axis ----------------------------------------------------------------------
# The recipe (docs: ops/index.py module doc).  Every element becomes a pair (key, tag):
#   key  the value as float32 (16-bit floats exactly; int32 / int8 / bool as int32), negated for
#        a descending sort (~x = -x - 1 for integers: no overflow), NaN replaced by the key that sorts
#        last (+inf; ascending) or first (-inf; descending)
#   tag  its index j, plus N for a NaN (ascending) / a non-NaN (descending) and 2 N for the
#        padding to N = 2**m elements (key +inf, or the int32 maximum), as float32 (exact
#        below 2**24)
# Pairs compare lexicographically, so every pair is distinct and the order is total: NaN after
# +inf (ties on the key broken by the tag), the padding after everything, equal keys (-0.0 ==
# 0.0 too) by index -- numpy's stable order, torch's stable descending order.  A bitonic network
# sorts the pairs: m (m + 1) / 2 compare-exchange stages, each a select of every element and
# its partner (its index with bit b flipped) by the pair order and the direction of its block
# (bit d of the index): vector ops on the whole array, one kernel per stage.  The partner is a
# slice of the array seen with bit b as an axis of 2 (the two slices swapped); a low bit would
# make those slices runs of a few elements (a gather per element), so the stages of the low
# T = m // 2 bits run on the array transposed to [2**T, 2**(m - T)] -- its low bits outermost
# -- and the array moves between the two layouts twice per merge of more than 2**T elements.
# The result's indices are the tags mod N; the values a take of x at them (exact, every dtype).
# O(n log^2 n) per row instead of the n**2 of counting ranks.


def _iota(F, x, n, dtype=dt.int32):
    return x.trace.emit("arange", [], {"start": 0, "stop": n, "step": 1, "dtype": dtype.name})


def _sort_keys(F, x, descending):
    """(key, tag) of x [..., n] (see above): float32 keys for floats, int32 for integers."""
    n = x.shape[-1]
    N = 1 << max(0, (n - 1).bit_length())
    j = F.cast(_iota(F, x, n), dt.float32)
    if x.dtype.is_float:
        v = F.cast(x, dt.float32)
        nan = v != v
        key = F.where(nan, -math.inf if descending else math.inf, -v if descending else v)
        tag = j + F.where(F.logical_not(nan) if descending else nan, float(N), 0.0)
        top = x.trace.constant(math.inf, dt.float32)
    else:
        v = F.cast(x, dt.int32)
        key = -v - 1 if descending else v   # ~v with wrap-around: order-reversing, no overflow
        tag = F.broadcast_to(j + (float(N) if descending else 0.0), tuple(x.shape))
        top = x.trace.constant(int(np.iinfo(np.int32).max), dt.int32)
    if N > n:
        lead = tuple(x.shape[:-1])
        pad_key = F.broadcast_to(top, lead + (N - n,))
        pad_tag = F.broadcast_to(F.cast(_iota(F, x, N - n), dt.float32) + float(2 * N + n), lead + (N - n,))
        key = F.concatenate([key, pad_key], axis=-1)
        tag = F.concatenate([tag, pad_tag], axis=-1)
    return key, tag, N


def _exchange(F, key, tag, lead, m, pair, direction, x):
    """One compare-exchange stage on key / tag stored as [..., 2**m]: storage bit `pair` flips to
    the partner, storage bit `direction` set marks a descending block (None: all ascending).
    The arrays are seen as [..., 2**(m - pair - 1), 2, 2**pair] (a reshape, free) and the
    partner is the two halves along the axis of 2 swapped: one kernel."""
    full = tuple(lead) + (1 << (m - pair - 1), 2, 1 << pair)
    k, t = F.reshape(key, full), F.reshape(tag, full)
    pos = len(lead) + 1

    def other(v):
        lo = [slice(None)] * len(full)
        hi = list(lo)
        lo[pos], hi[pos] = slice(0, 1), slice(1, 2)
        return F.concatenate([v[tuple(hi)], v[tuple(lo)]], axis=pos)

    pk, pt = other(k), other(t)
    partner_first = F.logical_or(pk < k, F.logical_and(pk == k, pt < t))
    # the storage position q of every element (a host arange seen in the stage's shape) gives
    # both masks; each (pair, direction) occurs in one stage only, so they fuse into its kernel
    q = F.reshape(_iota(F, x, 1 << m, dt.float32), full[len(lead):])

    def clear(bit):                                # bit `bit` of q is 0 (float32, exact)
        h = F.floor(q * (0.5 ** bit))
        return h == F.floor(h * 0.5) * 2.0

    low = clear(pair)                              # the pair's lower position
    if direction is not None:                      # a descending block: the lower takes the larger
        low = low == clear(direction)
    take = low == partner_first
    flat = tuple(lead) + (1 << m,)
    return F.reshape(F.where(take, pk, k), flat), F.reshape(F.where(take, pt, t), flat)


def _relayout(F, v, lead, m, T, to_low):
    """[..., 2**m] in the normal layout <-> its low T bits outermost ([2**T, 2**(m - T)])."""
    r = len(lead)
    shape = (1 << (m - T), 1 << T) if to_low else (1 << T, 1 << (m - T))
    moved = F.transpose(F.reshape(v, tuple(lead) + shape), tuple(range(r)) + (r + 1, r))
    return F.reshape(moved, tuple(lead) + (1 << m,))


def sort_last(F, x, descending, k=None):
    """(values, int32 indices) of the first k (default all) of x sorted along its last axis,
    stably, NaN last (first when descending): the bitonic recipe above."""
    n = x.shape[-1]
    k = n if k is None else k
    if n == 0:
        return x, F.cast(x, dt.int32)
    lead = tuple(x.shape[:-1])
    key, tag, N = _sort_keys(F, x, descending)
    m = N.bit_length() - 1
    T = m // 2
    # storage position of each index bit: normal (b) or low bits outermost
    where_bit = {False: lambda b: b, True: lambda b: b + (m - T) if b < T else b - T}
    low_layout = T > 0
    if low_layout:
        key, tag = (_relayout(F, v, lead, m, T, True) for v in (key, tag))
    size = 2
    while size <= N:
        d = size.bit_length() - 1                  # the direction bit of this merge
        for b in range(d - 1, -1, -1):             # pair bits high to low
            want_low = T > 0 and b < T
            if want_low != low_layout:
                key, tag = (_relayout(F, v, lead, m, T, want_low) for v in (key, tag))
                low_layout = want_low
            place = where_bit[low_layout]
            key, tag = _exchange(F, key, tag, lead, m, place(b), place(d) if d < m else None, x)
        size *= 2
    if low_layout:
        tag = _relayout(F, tag, lead, m, T, False)
    first = tag[tuple([slice(None)] * len(lead)) + (slice(0, k),)]
    index = exact_int32(F, first - F.floor(first / float(N)) * float(N), N)
    return gather_last(F, x, index, "sort"), index


def _sort_input(F, x, axis, name):
    if not isinstance(x, F.Tensor):
        _fail(F, f"{name} needs a tensor, got {type(x).__name__}")
    if x.ndim == 0:
        _fail(F, f"{name} needs a tensor of rank >= 1, got a 0-d tensor", kind="ShapeError")
    axis = _axis(F, x, axis, name)
    if not isinstance(x.shape[axis], int) or x.shape[axis] > SORT_MAX:
        _fail(F, f"{name} along an axis of {x.shape[axis]} elements: fusedsl sorts rows of at most {SORT_MAX} "
              "fixed elements (a bitonic network: its indices are exact in float32 below 2**24)",
              kind="ShapeError", hint="sort shorter rows")
    return axis


SORT_MAX = 1 << 20   # tags up to 3 N stay exact in float32


def _sorted(F, x, axis, descending, k, name):
    axis = _sort_input(F, x, axis, name)
    y, inv = _to_last(F, x, axis)
    values, index = sort_last(F, y, descending, k)
    return _back(F, values, inv), _back(F, index, inv)


@composite("sort", "index", dtypes="any",
           doc="numpy.sort: the values along `axis` in ascending order (descending=True: torch's descending), "
               "stable, NaN last (first when descending); a bitonic network of (value, index) pairs, "
               "log2(n) (log2(n) + 1) / 2 compare-exchange kernels",
           example="fs.sort(x[:, :7])")
def sort(F, a, axis=-1, descending=False, stable=True):
    return _sorted(F, a, axis, descending, None, "sort")[0]


@composite("argsort", "index", dtypes="any", aten=("aten.argsort.default", "aten.argsort.stable"),
           doc="numpy.argsort(kind='stable'): the int32 indices that sort `axis` (descending=True as torch); "
               "ties keep their order, NaN last",
           example="fs.argsort(x[:, :7])")
def argsort(F, a, axis=-1, descending=False, stable=True):
    return _sorted(F, a, axis, descending, None, "argsort")[1]


@composite("sort_with_indices", "index", dtypes="any", public=("sort_with_indices",),
           aten=("aten.sort.default", "aten.sort.stable"),
           doc="torch.sort: (values, int32 indices) along `dim`, stable, NaN last (first when descending)",
           example="fs.sort_with_indices(x[:, :7])[0]")
def sort_with_indices(F, input, dim=-1, descending=False, stable=True):
    return _sorted(F, input, dim, descending, None, "sort")


@composite("topk", "index", dtypes="any", aten=("aten.topk.default",), onnx=("TopK",),
           doc="torch.topk: (values, int32 indices) of the k largest (largest=False: smallest) along `dim`, "
               "in sorted order, ties by lower index first, NaN as the largest",
           example="fs.topk(x[:, :7], 2)[0]")
def topk(F, input, k, dim=-1, largest=True, sorted=True):
    axis = _sort_input(F, input, dim, "topk")
    n = input.shape[axis]
    if not isinstance(k, int) or not 0 <= k <= n:
        _fail(F, f"topk k={k!r} must be an int in [0, {n}] (the size of axis {axis})")
    if k == 0:
        _fail(F, "topk with k=0 has an empty result; fusedsl kernels have no empty outputs", kind="ShapeError")
    return _sorted(F, input, axis, bool(largest), k, "topk")
