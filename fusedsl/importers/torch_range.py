"""The int64 range check of an exported torch graph (int_range.RangeCheck over its ATen nodes).

Each call node whose result is an integer tensor becomes a Step with the interval rule of
its ATen op (`RULES`, by packet name: `add` for add.Tensor and add.Scalar alike), its
arguments with the graph's tensors as Refs, the dtypes of its results from the export's
metadata and the model line of the node.  An integer op without a rule has an unbounded
result (an int64 one is then not checked, unless it is cast from floats: `CASTS`); a float
result is tracked through the ops whose rule holds over real intervals (`FLOAT_RULES`).
"""
from __future__ import annotations

import functools
import math

from . import int_range as ir
from .int_range import Ref, Span, Step

_SAME = ("view", "reshape", "_unsafe_view", "view_as", "reshape_as", "flatten", "unsqueeze", "squeeze", "permute",
         "transpose", "swapaxes", "expand", "expand_as", "repeat", "contiguous", "clone", "alias", "detach",
         "lift_fresh_copy", "dropout", "slice", "select", "narrow", "split", "split_with_sizes", "chunk", "unbind",
         "t", "numpy_T", "flip", "_to_copy", "to", "type_as", "amax", "amin", "index_select", "floor", "ceil",
         "round", "trunc", "positive")


class Meta:
    """Shapes the rules need: of each positional argument's tensor and of the node's result (read
    from the export's metadata once: a fake tensor's .shape costs microseconds per read)."""

    def __init__(self, node):
        self.shapes = [self._shape(a) for a in node.args]
        self.out = self._shape(node)

    @staticmethod
    def _shape(value):
        val = value.meta.get("val") if hasattr(value, "meta") else None
        return tuple(int(d) for d in val.shape) if hasattr(val, "shape") else None

    def shape(self, i: int):
        return self.shapes[i]

    def numel(self, i: int) -> int:
        return math.prod(self.shapes[i])

    def out_numel(self) -> int:
        return math.prod(self.out)


def _first(m, x, *rest, **kw):
    return x


def _with_indices(m, x, *rest, **kw):
    """(values, positions): sort, topk, max.dim, min.dim."""
    return x, ir.index_range(m.numel(0))


def _positions(m, *args, **kw):
    return ir.index_range(m.numel(0))


def _reduced(m):
    """How many input elements one output element of a reduction sums."""
    out = m.out_numel()
    return m.numel(0) // out if out else 0


def _sum(m, x, *rest, **kw):
    return ir.times(_reduced(m), x)


def _prod(m, x, *rest, **kw):
    return ir.products(_reduced(m), x)


def _cumsum(m, x, dim, **kw):
    return ir.prefix_sums(m.shape(0)[dim], x)


def _cumprod(m, x, dim, **kw):
    return ir.products(m.shape(0)[dim], x)


def _contracted(m, a, b, k_arg=0):
    """The range of a matmul whose operands are args k_arg and k_arg + 1: K products summed."""
    return ir.times(m.shape(k_arg)[-1], ir.mul(a, b))


def _addmm(m, bias, a, b, beta=1, alpha=1):
    return ir.add(ir.mul(_contracted(m, a, b, 1), alpha), ir.mul(bias, beta))


def _linear(m, x, w, b=None):
    y = _contracted(m, x, w)
    return y if b is None else ir.add(y, b)


def _pow(m, x, p):
    return ir.power(x, p) if isinstance(p, int) else None


def _scatter_add(m, x, dim, index, src):
    n = m.numel(2)
    return ir.add(x, ir.hull(ir.times(n, src), 0))


def _scatter_reduce(m, x, dim, index, src, reduce, include_self=True):
    if reduce == "sum":
        return _scatter_add(m, x, dim, index, src)
    if reduce in ("amax", "amin", "mean"):
        return ir.hull(x, src)
    return None


def _index_put(m, x, indices, values, accumulate=False):
    if accumulate:
        return ir.add(x, ir.hull(ir.times(m.numel(2), values), 0))
    return ir.hull(x, values)


def _where(m, c, a, b):
    return ir.hull(a, b)


def _creation(pos):
    return lambda m, *args, **kw: ir.span_of(args[pos]) if pos is not None else Span(0, 0)


RULES = {
    "add": lambda m, a, b, alpha=1: ir.add(a, ir.mul(b, alpha)),
    "sub": lambda m, a, b, alpha=1: ir.sub(a, ir.mul(b, alpha)),
    "rsub": lambda m, a, b, alpha=1: ir.sub(b, ir.mul(a, alpha)),
    "mul": lambda m, a, b: ir.mul(a, b),
    "neg": lambda m, a: ir.neg(a),
    "abs": lambda m, a: None if ir.magnitude(a) is None else Span(0, ir.magnitude(a)),
    "square": lambda m, a: ir.power(a, 2),
    "pow": _pow,
    "div": lambda m, a, b, rounding_mode=None: ir.quotient(a, b),
    "floor_divide": lambda m, a, b: ir.quotient(a, b),
    "remainder": lambda m, a, b: ir.remainder(a, b), "fmod": lambda m, a, b: ir.remainder(a, b),
    "maximum": lambda m, a, b: ir.maximum(a, b), "minimum": lambda m, a, b: ir.minimum(a, b),
    "clamp": lambda m, x, lo=None, hi=None: ir.clamp(x, lo, hi),
    "clamp_min": lambda m, x, lo: ir.maximum(x, lo), "clamp_max": lambda m, x, hi: ir.minimum(x, hi),
    "relu": lambda m, x: ir.maximum(x, 0),
    "sign": lambda m, x: Span(-1, 1), "sgn": lambda m, x: Span(-1, 1),
    "where": _where, "masked_fill": lambda m, x, mask, value: ir.hull(x, value),
    "sum": _sum, "prod": _prod, "cumsum": _cumsum, "cumprod": _cumprod,
    "mm": lambda m, a, b: _contracted(m, a, b), "bmm": lambda m, a, b: _contracted(m, a, b),
    "matmul": lambda m, a, b: _contracted(m, a, b), "mv": lambda m, a, b: _contracted(m, a, b),
    "dot": lambda m, a, b: _contracted(m, a, b),
    "linear": _linear, "addmm": _addmm, "baddbmm": _addmm,
    "max": lambda m, x, *rest, **kw: _with_indices(m, x) if rest else x,
    "min": lambda m, x, *rest, **kw: _with_indices(m, x) if rest else x,
    "sort": _with_indices, "topk": _with_indices,
    "argmax": _positions, "argmin": _positions, "argsort": _positions,
    "gather": lambda m, x, *rest, **kw: x, "embedding": lambda m, w, *rest, **kw: w,
    "index": lambda m, x, *rest, **kw: x,
    "cat": lambda m, xs, *rest, **kw: ir.hull(*xs), "stack": lambda m, xs, *rest, **kw: ir.hull(*xs),
    "tril": lambda m, x, *rest, **kw: ir.hull(x, 0), "triu": lambda m, x, *rest, **kw: ir.hull(x, 0),
    "one_hot": lambda m, *args, **kw: Span(0, 1),
    "scatter": lambda m, x, dim, index, src: ir.hull(x, src),
    "scatter_add": _scatter_add, "scatter_reduce": _scatter_reduce, "index_put": _index_put,
    "bitwise_and": lambda m, a, b: ir.bitwise("and", a, b), "bitwise_or": lambda m, a, b: ir.bitwise("or", a, b),
    "bitwise_xor": lambda m, a, b: ir.bitwise("xor", a, b), "bitwise_not": lambda m, a: ir.bitwise("not", a),
    "bitwise_right_shift": lambda m, a, k: ir.shift_right(a, k), "__rshift__": lambda m, a, k: ir.shift_right(a, k),
    "zeros": _creation(None), "zeros_like": _creation(None), "new_zeros": _creation(None),
    "empty": _creation(None), "empty_like": _creation(None), "new_empty": _creation(None),
    "ones": lambda m, *a, **kw: Span(1, 1), "ones_like": lambda m, *a, **kw: Span(1, 1),
    "new_ones": lambda m, *a, **kw: Span(1, 1),
    "full": _creation(1), "full_like": _creation(1), "fill": _creation(1), "new_full": _creation(2),
    "scalar_tensor": _creation(0),
    "getitem": lambda m, xs, i: xs[i] if isinstance(xs, (tuple, list)) else xs,
}
RULES.update({name: _first for name in _SAME})
# the rules that hold over real intervals (int_range.Step.floats): float results are tracked through them
FLOAT_RULES = frozenset({*_SAME, "add", "sub", "rsub", "mul", "neg", "abs", "square", "maximum", "minimum", "clamp",
                         "clamp_min", "clamp_max", "relu", "where", "masked_fill", "cat", "stack", "index", "gather",
                         "embedding", "max", "min", "sort", "topk", "tril", "triu"})
# a float -> integer cast among them (int_range.Step.casts)
CASTS = frozenset({"_to_copy", "to", "type_as"})


def _dtype_names(node, dtype_name) -> tuple | None:
    """The framework dtype name of each result of a node (None for a non-tensor one), or None
    for a node with no tensor result."""
    val = node.meta.get("val")
    vals = val if isinstance(val, (tuple, list)) else (val,)
    names = tuple(dtype_name(getattr(v, "dtype", None)) for v in vals)
    return names if any(n is not None for n in names) else None


def torch_dtype_name(dtype) -> str | None:
    """'int64' for torch.int64, 'float32' for torch.float32 and so on; None for other dtypes and
    non-tensors."""
    name = str(dtype).removeprefix("torch.") if dtype is not None else None
    return name if name in ir.DTYPE_RANGES or name in ir.FLOATS else None


def range_check(graph, inputs: list, fixed: dict, skip: set, base_name, node_loc, op_name) -> ir.RangeCheck:
    """The RangeCheck of an exported graph.  inputs: (node name, user name, call position,
    dtype name) per user input; fixed: node name -> Span of weights and folded constants;
    skip: nodes computed at import."""
    steps = []

    def ref(a):
        if hasattr(a, "op") and hasattr(a, "name") and hasattr(a, "meta"):
            return Ref(a.name)
        if isinstance(a, (list, tuple)):
            return type(a)(ref(x) for x in a)
        return a

    for node in graph.nodes:
        if node.op != "call_function" or node.name in skip:
            continue
        dtypes = _dtype_names(node, torch_dtype_name)
        if dtypes is None:
            continue
        if node.meta.get("val") is not None and not isinstance(node.meta["val"], (tuple, list)):
            dtypes = dtypes[:1]
        base = base_name(node.target)
        rule = RULES.get(base)
        floats = base in FLOAT_RULES
        if not floats and all(d is None or d in ir.FLOATS for d in dtypes):
            continue   # a float result no rule bounds: unbounded, as an absent step is
        src = node.args[0].meta.get("val") if node.args and hasattr(node.args[0], "meta") else None
        casts = base in CASTS and torch_dtype_name(getattr(src, "dtype", None)) in ir.FLOATS
        steps.append(Step(node.name, functools.partial(rule, Meta(node)) if rule else None,
                          ref(tuple(node.args)), {k: ref(v) for k, v in node.kwargs.items()}, dtypes,
                          op_name(node.target), node_loc(node), floats=floats, casts=casts))
    return ir.RangeCheck("torch", inputs, fixed, steps)
