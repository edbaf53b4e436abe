"""Elementwise ops: ONE definition each (type rule, numpy reference, recipe, cost, names, docs).

Each `define(...)` call registers the op in the IR registry (ir/ops.py) with everything every layer
reads: the frontend makes `fs.<public>` from it, the scheduler runs its recipe (ops/recipe.py) to
emit tile instructions (checking the target has them in the op's dtype, else computing in float32),
the cost model costs it, the reference interpreter runs its numpy function, the importers map its
ATen / ONNX names to it (importers/torch_ops.definition_rules, where their tables have no rule)
and docs/OPS.md is generated from it (`python -m fusedsl.ops_table`).

A recipe emits primitives (tile/prims.py) only, so the printers, the LLVM backend and the tile
interpreter need nothing per op.  Composites are written as the instruction sequences the numpy
reference evaluates, so float32 results agree to the rounding of each instruction.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.core import TensorType
from ..ir.ops import (BINARY, BROADCAST, COMMUTATIVE, COMPARISON, ELEMENTWISE, FLOAT_ONLY, UNARY,
                      _binary_rule, _errstate, _unary_rule, register)
from ..ir.shapes import TypeRuleError, broadcast_shapes


def define(name, arity, ref, recipe=None, *, float_only=False, traits=(), attrs=(), infer=None,
           public=None, **fields):
    """Register an elementwise op.  `ref` takes the numpy operands (and, for ops with
    attributes, the attribute dict as `attrs=`); see OpDef for `fields`."""
    kind = [UNARY] if arity == 1 else [BINARY, BROADCAST] if arity == 2 else []
    all_traits = [ELEMENTWISE, *kind, *traits] + ([FLOAT_ONLY] if float_only else [])
    if infer is None:
        infer = (_unary_rule(name, float_only) if arity == 1
                 else _binary_rule(name, float_only, COMPARISON in traits))
    if attrs:
        wrapped = (lambda f: lambda args, a: _errstate(lambda *xs: f(*xs, attrs=a))(*args))(ref)
    else:
        wrapped = (lambda f: lambda args, a: _errstate(f)(*args))(ref)
    return register(name, arity=arity, traits=all_traits, attrs=attrs, infer=infer, ref=wrapped,
                    recipe=recipe, public=tuple(public if public is not None else (name,)), **fields)


def unary(body):
    """A recipe over one tile operand (a one-element input is broadcast first)."""
    def recipe(c, dst, operands):
        body(c, dst, c.slot(operands[0]))
    recipe.__doc__ = body.__doc__
    return recipe


def single(prim):
    """The recipe of an op that is one primitive."""
    return unary(lambda c, dst, x: c(prim, dst, [x]))


# ---- numpy references -------------------------------------------------------------------------
def np_sigmoid(x):
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-x))).astype(x.dtype)


def np_gelu_tanh(x):
    # the tanh approximation, as Ascend's Gelu: 0.5 x (1 + tanh(u)), u = c (x + 0.044715 x^3),
    # evaluated as x * sigmoid(2u) (the same function) so the negative tail does not cancel to 0
    c = np.asarray(2.0 * math.sqrt(2.0 / math.pi), x.dtype)
    u = c * (x + np.asarray(0.044715, x.dtype) * x * x * x)
    return (x * np_sigmoid(u)).astype(x.dtype)


# ---- recipes ----------------------------------------------------------------------------------
def sigmoid_into(c, dst, x):
    """1 / (1 + exp(-x)), the reference's formula."""
    c("muls", dst, [x], c.imm(-1.0))
    c("exp", dst, [dst])
    c("adds", dst, [dst], c.imm(1.0))
    c("reciprocal", dst, [dst])


@unary
def _abs(c, dst, x):
    if c.work.name == "int32":   # Abs has no int32 form: |x| = max(x, 0 - x), exact (wraps like numpy)
        zero = c.dup(c.imm(0))
        t = c.tmp()
        c("sub", t, [zero, x])
        c("max", dst, [x, t])
    else:
        c("abs", dst, [x])


@unary
def _neg(c, dst, x):
    if c.supports("muls"):
        c("muls", dst, [x], c.imm(-1))
    else:   # no Muls for this dtype (int32 on ascend910): 0 - x
        c("sub", dst, [c.dup(c.imm(0)), x])


@unary
def _relu(c, dst, x):
    if c.supports("relu"):
        c("relu", dst, [x])
    else:   # max(0, x): the tie -0.0 / +0.0 gives the second operand, so -0.0 stays (torch.relu)
        c("max", dst, [c.dup(c.imm(0)), x])


@unary
def _leaky_relu(c, dst, x):
    alpha = c.imm(c.attr("alpha"))
    if c.supports("leaky_relu"):
        c("leaky_relu", dst, [x], alpha)
    else:   # max(x, 0) + alpha * min(x, 0)
        zero = c.dup(c.imm(0))
        pos = c.tmp()
        c("max", pos, [x, zero])
        c("min", dst, [x, zero])
        c("muls", dst, [dst], alpha)
        c("add", dst, [dst, pos])


@unary
def _sigmoid(c, dst, x):
    sigmoid_into(c, dst, x)


@unary
def _silu(c, dst, x):
    t = c.tmp()
    sigmoid_into(c, t, x)
    c("mul", dst, [x, t])


@unary
def _tanh(c, dst, x):
    # tanh(x) = 1 - 2 / (exp(2x) + 1): the small term is exact near +-1, where a
    # cast to an integer would amplify any error (2*sigmoid(2x) - 1 rounds to 1.0 early)
    c("muls", dst, [x], c.imm(2.0))
    c("exp", dst, [dst])
    c("adds", dst, [dst], c.imm(1.0))
    c("reciprocal", dst, [dst])
    c("muls", dst, [dst], c.imm(-2.0))
    c("adds", dst, [dst], c.imm(1.0))


@unary
def _gelu(c, dst, x):
    # 0.5 x (1 + tanh(u)) == x * sigmoid(2u), u = c (x + 0.044715 x^3), c = sqrt(2/pi):
    # the sigmoid form keeps the tiny negative tail that 1 + tanh(u) cancels away
    k = math.sqrt(2.0 / math.pi)
    t = c.tmp()
    c("mul", t, [x, x])
    c("mul", t, [t, x])
    c("muls", t, [t], c.imm(0.044715))
    c("add", t, [t, x])
    c("muls", t, [t], c.imm(2.0 * k))
    sigmoid_into(c, t, t)
    c("mul", dst, [x, t])


def binary_recipe(tensor_prim, scalar_prim=None):
    """tensor (op) tensor with `tensor_prim`; with a one-element operand, the scalar form
    `scalar_prim` when the target has it, else the scalar broadcast into a tile."""
    def recipe(c, dst, operands):
        (ka, a), (kb, bb) = operands
        if ka == "scalar" and kb == "scalar":   # two one-element inputs: broadcast one of them
            ka, a = "slot", c.dup(a)
        if ka == "slot" and kb == "slot":
            c(tensor_prim, dst, [a, bb])
            return
        tensor, scalar, scalar_first = (a, bb, False) if ka == "slot" else (bb, a, True)
        # Maxs(x, s) answers a tie (-0.0 vs +0.0) with s, maximum(s, x) with x (the second
        # operand, numpy's float32 rule): with the scalar first, only a nonzero constant can
        # never tie on a zero and may use the scalar form
        tie = tensor_prim in ("max", "min") and scalar_first and not (scalar[0] == "imm" and scalar[1] != 0)
        if scalar_prim is not None and c.supports(scalar_prim) and not tie:
            c(scalar_prim, dst, [tensor], scalar)
            return
        if tensor_prim == "sub" and scalar[0] == "imm" and not scalar_first and c.supports("adds"):
            c("adds", dst, [tensor], c.imm(-scalar[1]))   # x - s == x + (-s) exactly
            return
        if tensor_prim == "sub" and scalar_first and c.supports("adds") and c.supports("muls"):
            # s - x == (-x) + s exactly
            c("muls", dst, [tensor], c.imm(-1))
            c("adds", dst, [dst], scalar)
            return
        s_slot = c.dup(scalar)
        c(tensor_prim, dst, [s_slot, tensor] if scalar_first else [tensor, s_slot])
    return recipe


# ---- definitions ------------------------------------------------------------------------------
def _t(name):
    return (f"aten.{name}.default",)


define("abs", 1, np.abs, _abs, public=("abs", "absolute"), cost=("Abs",), aten=_t("abs"), onnx=("Abs",),
       doc="|x|; int32 wraps at INT_MIN like numpy")
define("neg", 1, np.negative, _neg, public=("negative",), cost=("Muls",), aten=_t("neg"), onnx=("Neg",),
       doc="-x")
define("square", 1, np.square, unary(lambda c, dst, x: c("mul", dst, [x, x])), cost=("Mul",),
       narrow_in_f32=True, aten=_t("square"), doc="x * x")
define("relu", 1, lambda x: np.where(x < 0, np.zeros((), x.dtype), x), _relu, cost=("Relu",), aten=_t("relu"),
       onnx=("Relu",), doc="max(x, 0); NaN stays NaN, -0.0 stays -0.0")
define("exp", 1, np.exp, single("exp"), float_only=True, cost=("Exp",), aten=_t("exp"), onnx=("Exp",),
       doc="e**x")
define("log", 1, np.log, single("ln"), float_only=True, cost=("Exp",), aten=_t("log"), onnx=("Log",),
       doc="natural logarithm")
define("sqrt", 1, np.sqrt, single("sqrt"), float_only=True, cost=("Sqrt",), aten=_t("sqrt"),
       onnx=("Sqrt",), doc="square root")
define("rsqrt", 1, lambda x: 1.0 / np.sqrt(x), single("rsqrt"), float_only=True, cost=("Rsqrt",),
       aten=_t("rsqrt"), doc="1 / sqrt(x)")
define("reciprocal", 1, lambda x: 1.0 / x, single("reciprocal"), float_only=True, cost=("Reciprocal",),
       aten=_t("reciprocal"), onnx=("Reciprocal",), doc="1 / x")
define("sigmoid", 1, np_sigmoid, _sigmoid, float_only=True, half_in_f32=True,
       cost=("Muls", "Exp", "Adds", "Reciprocal"), aten=_t("sigmoid"), onnx=("Sigmoid",),
       doc="1 / (1 + exp(-x))")
define("tanh", 1, np.tanh, _tanh, float_only=True, half_in_f32=True,
       cost=("Muls", "Exp", "Adds", "Reciprocal", "Muls", "Adds"), aten=_t("tanh"), onnx=("Tanh",),
       doc="hyperbolic tangent, as 1 - 2 / (exp(2x) + 1)")
define("gelu", 1, np_gelu_tanh, _gelu, float_only=True, half_in_f32=True,
       cost=("Mul", "Mul", "Muls", "Add", "Muls", "Exp", "Adds", "Div"),
       aten=("aten.gelu.default[approximate=tanh]",), onnx=("Gelu[approximate=tanh]", "FastGelu"),
       doc="GELU, tanh approximation (Ascend's Gelu): x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)); "
           "fs.gelu_erf is the exact erf form (PyTorch's default)")
define("silu", 1, lambda x: x * np_sigmoid(x), _silu, float_only=True, half_in_f32=True,
       cost=("Muls", "Exp", "Adds", "Div"), aten=_t("silu"), doc="x * sigmoid(x) (swish)")
define("leaky_relu", 1, lambda x, attrs: np.where(x >= 0, x, x * np.asarray(attrs["alpha"], x.dtype)),
       _leaky_relu, float_only=True, attrs=("alpha",), public=(), cost=("Muls", "Max"),
       aten=_t("leaky_relu"), onnx=("LeakyRelu",), doc="x if x >= 0 else alpha * x")

_BINARY = {
    # name: (numpy reference, float_only, commutative, tensor prim, scalar prim, cost, public, aten, onnx)
    "add": (np.add, False, True, "add", "adds", ("Add", "Adds"), ("add",), ("aten.add.Tensor",), ("Add",)),
    "sub": (np.subtract, False, False, "sub", None, ("Sub", "Adds"), ("subtract",), ("aten.sub.Tensor",),
            ("Sub",)),
    "mul": (np.multiply, False, True, "mul", "muls", ("Mul", "Muls"), ("multiply",), ("aten.mul.Tensor",),
            ("Mul",)),
    "div": (lambda a, b: a / b, True, False, "div", None, ("Div", "Muls"), ("divide", "true_divide"),
            ("aten.div.Tensor",), ("Div",)),
    "maximum": (np.maximum, False, True, "max", "maxs", ("Max", "Maxs"), ("maximum",),
                ("aten.maximum.default",), ("Max",)),
    "minimum": (np.minimum, False, True, "min", "mins", ("Min", "Mins"), ("minimum",),
                ("aten.minimum.default",), ("Min",)),
}
for _name, (_fn, _fo, _comm, _tp, _sp, _cost, _pub, _aten, _onnx) in _BINARY.items():
    define(_name, 2, _fn, binary_recipe(_tp, _sp), float_only=_fo, traits=[COMMUTATIVE] if _comm else [],
           cost=_cost, public=_pub, aten=_aten, onnx=_onnx, narrow_in_f32=_name == "mul",
           doc=f"numpy.{_pub[0]} (broadcasting)")

_COMPARE = {
    # name: (numpy reference, commutative, public, onnx)
    "lt": (np.less, False, "less", "Less"), "le": (np.less_equal, False, "less_equal", "LessOrEqual"),
    "gt": (np.greater, False, "greater", "Greater"), "ge": (np.greater_equal, False, "greater_equal", "GreaterOrEqual"),
    "eq": (np.equal, True, "equal", "Equal"), "ne": (np.not_equal, True, "not_equal", None),
}
for _name, (_fn, _comm, _pub, _onnx) in _COMPARE.items():
    # compares are lowered by the scheduler's Compare/Select path (masks), not by a recipe
    define(_name, 2, _fn, None, traits=[COMPARISON] + ([COMMUTATIVE] if _comm else []),
           cost=("Compare",), public=(_pub,), aten=(f"aten.{_name}.Tensor", f"aten.{_name}.Scalar"),
           onnx=(_onnx,) if _onnx else (), doc=f"numpy.{_pub}: a bool tensor; NaN compares unequal")


# ---- bitwise (int32; the frontend casts 8-bit ints to int32 and bools go to the logical ops) -----
def _int_rule(name, arity):
    def infer(types, attrs):
        if any(t.dtype.name != "int32" for t in types) or len({t.dtype for t in types}) != 1:
            raise TypeRuleError(f"{name} needs int32 operands, got {', '.join(str(t.dtype) for t in types)}",
                                "fs.bitwise_* cast 8-bit ints to int32 and use the logical ops on bools",
                                kind="dtype")
        return (TensorType(broadcast_shapes(*[t.shape for t in types]), types[0].dtype),)
    return infer


@unary
def _bitwise_not(c, dst, x):
    c("not", dst, [x])


def _xor(c, dst, operands):
    """(a | b) & ~(a & b)"""
    a, b = (c.slot(o) for o in operands)
    t = c.tmp()
    c("and", t, [a, b])
    c("not", t, [t])
    c("or", dst, [a, b])
    c("and", dst, [dst, t])


define("bitwise_and", 2, np.bitwise_and, binary_recipe("and"), traits=[COMMUTATIVE],
       infer=_int_rule("bitwise_and", 2), public=(), aten=("aten.bitwise_and.Tensor",), onnx=("BitwiseAnd",),
       doc="a & b on int32 (Ascend C And on the int16 halves)")
define("bitwise_or", 2, np.bitwise_or, binary_recipe("or"), traits=[COMMUTATIVE],
       infer=_int_rule("bitwise_or", 2), public=(), aten=("aten.bitwise_or.Tensor",), onnx=("BitwiseOr",),
       doc="a | b on int32")
define("bitwise_xor", 2, np.bitwise_xor, _xor, traits=[COMMUTATIVE],
       infer=_int_rule("bitwise_xor", 2), public=(), aten=("aten.bitwise_xor.Tensor",), onnx=("BitwiseXor",),
       doc="a ^ b on int32, as (a | b) & ~(a & b)")
define("bitwise_not", 1, np.bitwise_not, _bitwise_not, infer=_int_rule("bitwise_not", 1), public=(),
       aten=("aten.bitwise_not.default",), onnx=("BitwiseNot",), doc="~a on int32")


# ---- rounding to integers (float32): one Cast where the chip has float -> float with the round
# mode (A2/A3), else a sequence of primitives every chip has (no compares: clamp, the magic number,
# and a 0/1 step made of relu, three multiplications by 2**64 and a min with 1) ------------------
_MAGIC = 12582912.0        # 1.5 * 2**23: (c + M) - M rounds c to an integer for |c| <= 2**22
_BIG = 4194304.0           # 2**22: every float32 at least this large is an integer


def _scalar_op(c, prim, tensor_prim, dst, src, value):
    if c.supports(prim):
        c(prim, dst, [src], c.imm(value))
    else:
        c(tensor_prim, dst, [src, c.dup(c.imm(value))])


def _step(c, dst, d):
    """1 where d > 0 (any d > 0, subnormals included), else 0; d finite."""
    if c.supports("relu"):
        c("relu", dst, [d])
    else:
        c("max", dst, [d, c.dup(c.imm(0.0))])
    for _ in range(3):
        c("muls", dst, [dst], c.imm(2.0 ** 64))
    _scalar_op(c, "mins", "min", dst, dst, 1.0)


def _round_clamped(c, dst, cl, mode):
    """dst = the mode's rounding of cl, |cl| <= 2**22 (finite, or NaN)."""
    t = c.tmp()
    c("adds", dst, [cl], c.imm(_MAGIC))
    c("adds", dst, [dst], c.imm(-_MAGIC))                 # rint(cl)
    if mode in ("CAST_FLOOR", "CAST_TRUNC"):
        c("sub", t, [dst, cl])
        _step(c, t, t)
        c("sub", dst, [dst, t])                            # floor(cl)
    if mode == "CAST_CEIL":
        c("sub", t, [cl, dst])
        _step(c, t, t)
        c("add", dst, [dst, t])                            # ceil(cl)
    if mode == "CAST_TRUNC":
        u = c.tmp()
        c("sub", t, [cl, dst])
        _step(c, t, t)                                     # cl is not an integer
        c("muls", u, [cl], c.imm(-1.0))
        _step(c, u, u)                                     # cl < 0
        c("mul", t, [t, u])
        c("add", dst, [dst, t])                            # trunc = floor + 1 where negative and fractional


def _round_recipe(mode, prim):
    def body(c, dst, x):
        if c.work.name == "float32" and c.cast_supported("float", "float", mode):
            c(prim, dst, [x])
            return
        # x = c1 + c2 + rest with c1, c2 clamped to 2**22 (c1 = +-2**22, an even integer, whenever
        # c2 or rest is not 0) and rest an integer (|x| >= 2**23): round c1 and c2, add rest
        c1, c2, r1, r2 = c.tmp(), c.tmp(), c.tmp(), c.tmp()
        _scalar_op(c, "maxs", "max", c1, x, -_BIG)
        _scalar_op(c, "mins", "min", c1, c1, _BIG)
        c("sub", c2, [x, c1])                              # exact; inf stays inf
        _round_clamped(c, r1, c1, mode)
        _scalar_op(c, "maxs", "max", r2, c2, -_BIG)
        _scalar_op(c, "mins", "min", r2, r2, _BIG)
        c("sub", c2, [c2, r2])                             # rest
        _round_clamped(c, c1, r2, mode)
        c("add", r1, [r1, c1])
        c("add", dst, [r1, c2])
    return unary(body)


for _name, _mode, _prim, _fn in (("floor_f32", "CAST_FLOOR", "floor_cast", np.floor),
                                 ("ceil_f32", "CAST_CEIL", "ceil_cast", np.ceil),
                                 ("trunc_f32", "CAST_TRUNC", "trunc_cast", np.trunc),
                                 ("rint_f32", "CAST_RINT", "rint_cast", np.rint)):
    define(_name, 1, _fn, _round_recipe(_mode, _prim), float_only=True, public=(),
           doc=f"{_fn.__name__} of float32 values (fs.{_fn.__name__} casts to float32 and calls it): Cast "
               f"float -> float with {_mode} where the chip has it, else clamp / magic number / step primitives")
