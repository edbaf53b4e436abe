"""The int64 range check of an ONNX graph (int_range.RangeCheck over its nodes).

The element type and shape of every value come from ONNX shape inference; each node with
an integer output becomes a Step with the interval rule of its op type (`RULES`).  A value
inference leaves untyped is not tracked (an int64 one is then not checked).  Constants
(initializers, Constant nodes) are fixed ranges; a step error is reported at the user's
call with the node named (a model file has no source line).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from . import int_range as ir
from .int_range import Ref, Span, Step

# TensorProto element type -> the dtype names int_range knows
_ELEM = {7: "int64", 6: "int32", 5: "int16", 3: "int8", 2: "uint8", 9: "bool",
         1: "float32", 10: "float16", 16: "bfloat16", 11: "float64"}


class Meta:
    """What a rule reads besides ranges: attributes, constant inputs and input shapes."""

    def __init__(self, node, attrs: dict, consts: dict, shapes: dict):
        self.node, self.attrs, self.consts, self.shapes = node, attrs, consts, shapes

    def shape(self, i: int):
        return self.shapes.get(self.node.input[i]) if i < len(self.node.input) else None

    def numel(self, i: int) -> int:
        return math.prod(self.shape(i))

    def const(self, i: int):
        name = self.node.input[i] if i < len(self.node.input) else ""
        return self.consts.get(name) if name else None

    def ints(self, i: int):
        value = self.const(i)
        return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


def _first(m, x, *rest):
    return x


def _reduced(m):
    axes = m.ints(1) if m.const(1) is not None else m.attrs.get("axes")
    shape = m.shape(0)
    if axes is None or len(axes) == 0:
        return math.prod(shape) if not m.attrs.get("noop_with_empty_axes", 0) else 1
    return math.prod(shape[a % len(shape)] for a in axes)


def _matmul(m, a, b, *rest):
    return ir.times(m.shape(0)[-1], ir.mul(a, b))


def _gemm(m, a, b, c=None):
    k = m.shape(0)[0 if m.attrs.get("transA", 0) else -1]
    y = ir.mul(ir.times(k, ir.mul(a, b)), int(m.attrs.get("alpha", 1.0)))
    if m.attrs.get("alpha", 1.0) != int(m.attrs.get("alpha", 1.0)):
        return None
    return y if c is None else ir.add(y, ir.mul(c, int(m.attrs.get("beta", 1.0))))


def _pow(m, x, p):
    ints = m.ints(1)
    return ir.power(x, ints[0]) if ints and len(ints) == 1 else None


def _clip(m, x, lo=None, hi=None):
    return ir.clamp(x, lo, hi)


def _variadic(fn):
    def rule(m, *xs):
        y = xs[0]
        for x in xs[1:]:
            y = fn(y, x)
        return y
    return rule


def _cumsum(m, x, axis):
    return ir.prefix_sums(m.shape(0)[m.ints(1)[0]], x)


def _positions(m, *args):
    return ir.index_range(m.numel(0))


def _topk(m, x, *rest):
    return x, ir.index_range(m.numel(0))


def _const_of_shape(m, *args):
    value = m.attrs.get("value")
    if value is None:
        return Span(0, 0)
    from onnx import numpy_helper   # the caller imported onnx (this module runs only for an ONNX model)
    return ir.span_of(numpy_helper.to_array(value).reshape(-1)[0].item())


RULES = {
    "Add": lambda m, a, b: ir.add(a, b), "Sub": lambda m, a, b: ir.sub(a, b),
    "Mul": lambda m, a, b: ir.mul(a, b), "Div": lambda m, a, b: ir.quotient(a, b),
    "Mod": lambda m, a, b: ir.remainder(a, b), "Neg": lambda m, a: ir.neg(a),
    "Abs": lambda m, a: None if ir.magnitude(a) is None else Span(0, ir.magnitude(a)),
    "Pow": _pow, "Relu": lambda m, x: ir.maximum(x, 0), "Sign": lambda m, x: Span(-1, 1),
    "Max": _variadic(ir.maximum), "Min": _variadic(ir.minimum), "Sum": _variadic(ir.add), "Clip": _clip,
    "Where": lambda m, c, a, b: ir.hull(a, b),
    "MatMul": _matmul, "Gemm": _gemm,
    "ReduceSum": lambda m, x, *rest: ir.times(_reduced(m), x),
    "ReduceProd": lambda m, x, *rest: ir.products(_reduced(m), x),
    "ReduceMax": _first, "ReduceMin": _first, "CumSum": _cumsum,
    "ArgMax": _positions, "ArgMin": _positions, "TopK": _topk,
    "Trilu": lambda m, x, *rest: ir.hull(x, 0), "OneHot": lambda m, x, depth, values: values,
    "ConstantOfShape": _const_of_shape,
    "ScatterElements": lambda m, x, index, upd: ir.hull(x, upd) if m.attrs.get("reduction", "none") in
    ("none", "max", "min") else None,
    "BitwiseAnd": lambda m, a, b: ir.bitwise("and", a, b), "BitwiseOr": lambda m, a, b: ir.bitwise("or", a, b),
    "BitwiseXor": lambda m, a, b: ir.bitwise("xor", a, b), "BitwiseNot": lambda m, a: ir.bitwise("not", a),
}
RULES.update({op: _first for op in ("Identity", "Dropout", "Reshape", "Flatten", "Transpose", "Squeeze",
                                    "Unsqueeze", "Expand", "Tile", "Split", "Slice", "Gather", "GatherElements",
                                    "Cast", "Floor", "Ceil", "Round")})
RULES["Concat"] = lambda m, *xs: ir.hull(*xs)
# the rules that hold over real intervals (int_range.Step.floats): float results are tracked through them
FLOAT_RULES = frozenset({"Add", "Sub", "Mul", "Neg", "Abs", "Relu", "Max", "Min", "Clip", "Where", "Concat",
                         "Identity", "Dropout", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze",
                         "Expand", "Tile", "Split", "Slice", "Gather", "GatherElements", "Cast", "Floor", "Ceil",
                         "Round", "ReduceMax", "ReduceMin"})


def _types(model) -> tuple[dict, dict]:
    """(value name -> dtype name, value name -> static shape) from ONNX shape inference."""
    from onnx import shape_inference   # the caller imported onnx
    try:
        inferred = shape_inference.infer_shapes(model)
    except Exception:   # noqa: BLE001 (a model inference cannot read: no types, nothing checked)
        inferred = model
    graph = inferred.graph
    dtypes, shapes = {}, {}
    for info in list(graph.input) + list(graph.value_info) + list(graph.output):
        t = info.type.tensor_type
        dtypes[info.name] = _ELEM.get(t.elem_type)
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        if t.HasField("shape") and None not in dims:
            shapes[info.name] = tuple(dims)
    return dtypes, shapes


def range_check(model, label: str, inputs: list[str], consts: dict, attrs_of) -> ir.RangeCheck:
    """The RangeCheck of an ONNX model: inputs are the user inputs' names (in call order),
    consts the initializers' and Constant nodes' values (by value name)."""
    dtypes, shapes = _types(model)
    for name, value in consts.items():
        dtypes.setdefault(name, _ELEM.get({np.dtype(np.int64): 7, np.dtype(np.int32): 6, np.dtype(np.int16): 5,
                                           np.dtype(np.int8): 3, np.dtype(np.uint8): 2, np.dtype(bool): 9,
                                           np.dtype(np.float32): 1, np.dtype(np.float16): 10,
                                           np.dtype(np.float64): 11}.get(np.asarray(value).dtype)))
        shapes.setdefault(name, tuple(np.shape(value)))
    fixed = {}
    for name, value in consts.items():
        if dtypes.get(name) is not None:
            fixed[name] = ir.array_span(np.asarray(value))
    steps = []
    for index, node in enumerate(model.graph.node):
        if node.op_type == "Constant" or node.domain not in ("", "ai.onnx"):
            continue
        out_types = tuple(dtypes.get(o) for o in node.output)
        floats = node.op_type in FLOAT_RULES
        if all(t is None or (t in ir.FLOATS and not floats) for t in out_types):
            continue   # no result, or a float one no rule bounds: unbounded, as an absent step is
        casts = node.op_type == "Cast" and bool(node.input) and dtypes.get(node.input[0]) in ir.FLOATS
        rule = RULES.get(node.op_type)
        named = f" {node.name!r}" if node.name else ""
        label_of = f"ONNX node {index + 1} ({node.op_type}{named}) of {label}"
        meta = Meta(node, attrs_of(node), consts, shapes)
        args = tuple(Ref(n) if n else None for n in node.input)
        steps.append(Step(node.output[0], functools.partial(rule, meta) if rule else None, args, {}, out_types,
                          label_of, None, outs=tuple(node.output), floats=floats, casts=casts))
    return ir.RangeCheck("onnxruntime", [(n, n, i, dtypes.get(n)) for i, n in enumerate(inputs)], fixed, steps)
