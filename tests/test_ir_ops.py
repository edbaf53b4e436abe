"""The op registry (one entry per op), its type rules and traits, and the dtype table."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import fusedsl as fs
from fusedsl import dtypes as dt
from fusedsl.ir import REGISTRY, TensorType, TypeRuleError, get_opdef, has_trait
from fusedsl.ir import ops as O
from fusedsl.ir.ops import infer_types
from fusedsl.ir.shapes import broadcast_shapes, normalize_axes, symbolic_factor


def T(shape, dtype="float32"):
    return TensorType(tuple(shape), dt.to_dtype(dtype))


# ---- the public names DESIGN.md promises -------------------------------------------------------
PUBLIC_OPS = """abs negative exp log sqrt rsqrt reciprocal square relu leaky_relu sigmoid tanh gelu silu
cast astype add subtract multiply divide maximum minimum less less_equal greater greater_equal equal
not_equal where sum mean max min reshape broadcast_to transpose concatenate matmul conv2d softmax
layer_norm rms_norm batch_norm""".split()


@pytest.mark.parametrize("name", PUBLIC_OPS)
def test_public_op_exists(name):
    assert callable(getattr(fs, name))


def test_public_dtypes():
    assert [d.name for d in (fs.float16, fs.bfloat16, fs.float32, fs.int32, fs.int8, fs.uint8, fs.bool)] == \
        ["float16", "bfloat16", "float32", "int32", "int8", "uint8", "bool"]
    assert fs.bfloat16.np == np.dtype(ml_dtypes.bfloat16)
    assert np.zeros(2, fs.bfloat16).dtype == ml_dtypes.bfloat16   # numpy accepts fs dtypes


# ---- one registry entry per op --------------------------------------------------------------------
def test_every_op_has_a_type_rule_a_reference_and_traits():
    for name, opdef in REGISTRY.items():
        assert opdef.name == name
        if name == "call":
            assert O.CALL in opdef.traits
            continue
        assert opdef.infer is not None and opdef.ref is not None, name
        assert opdef.traits, name


TRAITS = {
    "abs": {O.ELEMENTWISE, O.UNARY}, "exp": {O.ELEMENTWISE, O.UNARY, O.FLOAT_ONLY},
    "leaky_relu": {O.ELEMENTWISE, O.UNARY, O.FLOAT_ONLY}, "cast": {O.ELEMENTWISE, O.UNARY},
    "add": {O.ELEMENTWISE, O.BINARY, O.BROADCAST, O.COMMUTATIVE},
    "sub": {O.ELEMENTWISE, O.BINARY, O.BROADCAST},
    "div": {O.ELEMENTWISE, O.BINARY, O.BROADCAST, O.FLOAT_ONLY},
    "lt": {O.ELEMENTWISE, O.BINARY, O.BROADCAST, O.COMPARISON},
    "eq": {O.ELEMENTWISE, O.BINARY, O.BROADCAST, O.COMPARISON, O.COMMUTATIVE},
    "where": {O.ELEMENTWISE, O.BROADCAST}, "sum": {O.REDUCTION}, "max": {O.REDUCTION},
    "reshape": {O.SHAPE}, "broadcast_to": {O.SHAPE, O.BROADCAST}, "slice": {O.SHAPE},
    "concatenate": {O.SHAPE}, "transpose": {O.SHAPE}, "matmul": {O.CUBE}, "conv2d": {O.CUBE},
    "constant": {O.CONSTANT},
}


@pytest.mark.parametrize("name", sorted(TRAITS))
def test_traits(name):
    assert get_opdef(name).traits == frozenset(TRAITS[name])


def test_has_trait_on_ops():
    m = fs.fused_kernel(lambda a, b: fs.sum(fs.exp(a) + b, axis=0)).trace(np.ones((2, 3), np.float32),
                                                                          np.ones(3, np.float32))
    exp, add, red = m.main.ops
    assert has_trait(exp, O.ELEMENTWISE) and not has_trait(exp, O.BROADCAST)
    assert has_trait(add, O.BROADCAST) and has_trait(red, O.REDUCTION)
    assert not has_trait(red, O.ELEMENTWISE)


# ---- type rules --------------------------------------------------------------------------------
@pytest.mark.parametrize("name, types, attrs, expected", [
    ("add", [T((3, 1)), T((1, 4))], {}, T((3, 4))),
    ("add", [T(("M", 1)), T((4,))], {}, T(("M", 4))),
    ("lt", [T((2,), "int8"), T((2,), "int8")], {}, T((2,), "bool")),
    ("where", [T((2, 1), "bool"), T((3,)), T(())], {}, T((2, 3))),
    ("cast", [T((2,))], {"dtype": "bfloat16"}, T((2,), "bfloat16")),
    ("sum", [T((2, 3, 4), "int8")], {"axes": (0, 2), "keepdims": False}, T((3,), "int32")),
    ("max", [T((2, 3), "uint8")], {"axes": (1,), "keepdims": True}, T((2, 1), "uint8")),
    ("mean", [T((2, 3), "float16")], {"axes": (0, 1), "keepdims": False}, T((), "float16")),
    ("reshape", [T(("M", 6))], {"shape": ("M", 2, 3)}, T(("M", 2, 3))),
    ("broadcast_to", [T((3, 1))], {"shape": (2, 3, 4)}, T((2, 3, 4))),
    ("transpose", [T((2, 3, 4))], {"perm": (2, 0, 1)}, T((4, 2, 3))),
    ("slice", [T((10, 4))], {"starts": (1, 0), "stops": (8, 4), "steps": (3, 1)}, T((3, 4))),
    ("concatenate", [T((2, 3)), T((5, 3))], {"axis": 0}, T((7, 3))),
    ("matmul", [T((5, 2, 3)), T((3, 4))], {}, T((5, 2, 4))),
    ("matmul", [T((2, 3), "int8"), T((3, 4), "int8")], {}, T((2, 4), "int8")),   # numpy's rule: wraps
    ("conv2d", [T((1, 3, 8, 8)), T((4, 3, 3, 3))], {"stride": (2, 2), "padding": (1, 1)}, T((1, 4, 4, 4))),
    ("constant", [], {"value": 1.5, "dtype": "float16"}, T((), "float16")),
])
def test_type_rule_infers(name, types, attrs, expected):
    assert infer_types(name, tuple(types), attrs) == (expected,)


@pytest.mark.parametrize("name, types, attrs, kind, message", [
    ("add", [T((3,)), T((4,))], {}, "shape", r"shapes \(3,\), \(4,\) cannot be broadcast"),
    ("add", [T(("M",)), T((4,))], {}, "shape", r"cannot be broadcast"),   # M is not provably 4
    ("add", [T((3,)), T((3,), "int32")], {}, "dtype", "different dtypes float32 and int32"),
    ("add", [T((3,), "bool"), T((3,), "bool")], {}, "dtype", "not defined on bool"),
    ("exp", [T((3,), "int32")], {}, "dtype", "needs a floating-point operand, got int32"),
    ("exp", [T((3,)), T((3,))], {}, "arg", r"exp takes 1 operand\(s\), got 2"),
    ("where", [T((3,)), T((3,)), T((3,))], {}, "dtype", "where needs a bool condition"),
    ("sum", [T((3,))], {"axes": (1,), "keepdims": False}, "arg", "axis 1 is out of range"),
    ("sum", [T((3, 2))], {"axes": (1, 0), "keepdims": False}, "arg", "axes must be sorted"),
    ("max", [T((0, 2))], {"axes": (0,), "keepdims": False}, "shape", "max over an empty axis"),
    ("mean", [T((3,), "int8")], {"axes": (0,), "keepdims": False}, "dtype", "floating-point"),
    ("reshape", [T((6,))], {"shape": (4, 2)}, "shape", "element counts differ"),
    ("reshape", [T(("M", 6))], {"shape": (6, 2)}, "shape", "element counts differ"),
    ("broadcast_to", [T((3,))], {"shape": (4,)}, "shape", r"cannot broadcast \(3,\) to \(4,\)"),
    ("transpose", [T((2, 3))], {"perm": (0, 0)}, "arg", "not a permutation"),
    ("slice", [T((4,))], {"starts": (0,), "stops": (5,), "steps": (1,)}, "shape",
     "outside an axis of size 4"),
    ("slice", [T(("M",))], {"starts": (1,), "stops": ("M",), "steps": (1,)}, "shape", "taken whole"),
    ("concatenate", [T((2, 3)), T((2, 4))], {"axis": 0}, "shape", "differ on axis 1"),
    ("concatenate", [T(("M", 3)), T((2, 3))], {"axis": 0}, "shape", "symbolic"),
    ("matmul", [T((2, 3)), T((4, 5))], {}, "shape", r"inner dimensions differ: \(2, 3\) @ \(4, 5\)"),
    ("matmul", [T((3,)), T((3, 2))], {}, "shape", "rank >= 2"),
    ("matmul", [T((2, 2), "bool"), T((2, 2), "bool")], {}, "dtype", "not defined on bool"),
    ("conv2d", [T((1, 3, 8, 8)), T((4, 2, 3, 3))], {"stride": (1, 1), "padding": (0, 0)}, "shape",
     "channels differ"),
    ("conv2d", [T((1, 3, 2, 2)), T((4, 3, 3, 3))], {"stride": (1, 1), "padding": (0, 0)}, "shape",
     "output would be empty"),
    ("leaky_relu", [T((3,))], {}, "arg", r"needs attribute\(s\) alpha"),
])
def test_type_rule_refuses(name, types, attrs, kind, message):
    with pytest.raises(TypeRuleError, match=message) as excinfo:
        infer_types(name, tuple(types), attrs)
    assert excinfo.value.kind == kind


# ---- shapes ------------------------------------------------------------------------------------
def test_broadcast_shapes():
    assert broadcast_shapes((3, 1), (4,), ()) == (3, 4)
    assert broadcast_shapes(("M", 1), (1, "N")) == ("M", "N")
    assert broadcast_shapes(("M",), ("M",)) == ("M",)
    with pytest.raises(TypeRuleError):
        broadcast_shapes(("M",), ("N",))


def test_normalize_axes():
    assert normalize_axes(None, 3) == (0, 1, 2)
    assert normalize_axes(-1, 3) == (2,)
    assert normalize_axes((2, -3, 0), 3) == (0, 2)
    assert normalize_axes(np.int64(1), 3) == (1,)
    with pytest.raises(TypeRuleError):
        normalize_axes(3, 3)


def test_symbolic_factor():
    assert symbolic_factor(("M", 4, "N", 2)) == (("M", "N"), 8)


# ---- dtypes and promotion ----------------------------------------------------------------------------
F16, BF16, F32, I32, I8, U8, B = dt.float16, dt.bfloat16, dt.float32, dt.int32, dt.int8, dt.uint8, dt.bool_


@pytest.mark.parametrize("a, b, expected", [
    (F32, F32, F32), (B, I8, I8), (U8, B, U8), (B, F16, F16),
    (I8, U8, I32), (I8, I32, I32), (U8, I32, I32),
    (F16, BF16, F32), (F16, F32, F32), (BF16, F32, F32),
    (I8, F16, F16), (U8, BF16, BF16), (I32, F16, F32), (I32, BF16, F32), (I32, F32, F32), (I8, F32, F32),
])
def test_promotion_rule(a, b, expected):
    assert dt.promote(a, b) == expected
    assert dt.promote(b, a) == expected


@pytest.mark.parametrize("value, tensor, expected", [
    (2, F16, F16), (2, I8, I8), (2, B, I32), (2.5, I8, F32), (2.5, BF16, BF16), (True, U8, U8),
])
def test_weak_scalar_dtype(value, tensor, expected):
    assert dt.scalar_dtype(value, tensor) == expected


def test_to_dtype_spellings():
    for spelling in ("float32", "f32", "float", np.float32, np.dtype("float32"), fs.float32):
        assert dt.to_dtype(spelling) == F32
    assert dt.to_dtype("bool") == dt.to_dtype(np.bool_) == dt.to_dtype("i1") == B
    assert dt.to_dtype(ml_dtypes.bfloat16) == BF16
    for bad in ("float64", np.int64, "complex64"):
        with pytest.raises(KeyError):
            dt.to_dtype(bad)
