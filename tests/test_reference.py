"""The numpy reference interpreter: the oracle every executor is compared with."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import fusedsl as fs
from fusedsl.ir import REGISTRY
from fusedsl.reference import run_function, run_module

F32, F16, BF16 = np.float32, np.float16, ml_dtypes.bfloat16


def run(text: str, *args):
    return run_module(fs.parse_ir(text), list(args))


def unary_ir(op: str, t: str, attrs: str = "") -> str:
    return (f'func @f(%x: {t}) -> ({t}) loc("r.py":1) {{\n'
            f'  %0 = {op}(%x){attrs} : {t} loc("r.py":2)\n'
            f'  return %0\n}}\n')


X = np.array([-3.5, -1.0, -0.0, 0.0, 0.25, 1.0, 2.5, 7.0], F32)
POS = np.abs(X) + 0.5
UNARY = {
    # op: (numpy in float64, input)
    "abs": (np.abs, X), "neg": (np.negative, X), "square": (np.square, X),
    "relu": (lambda v: np.maximum(v, 0), X), "exp": (np.exp, X), "log": (np.log, POS),
    "sqrt": (np.sqrt, POS), "rsqrt": (lambda v: 1 / np.sqrt(v), POS), "reciprocal": (lambda v: 1 / v, POS),
    "sigmoid": (lambda v: 1 / (1 + np.exp(-v)), X), "tanh": (np.tanh, X),
    "gelu": (lambda v: v / (1 + np.exp(-2 * math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3))), X),
    "silu": (lambda v: v / (1 + np.exp(-v)), X),
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_reference_float32(op):
    fn, x = UNARY[op]
    got, = run(unary_ir(op, "f32[8]"), x)
    assert got.dtype == F32
    np.testing.assert_allclose(got, fn(x.astype(np.float64)), rtol=2e-7, atol=1e-7)


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("dtype, t", [(F16, "f16[8]"), (BF16, "bf16[8]")])
def test_16_bit_floats_compute_in_float32_and_round_once(op, dtype, t):
    fn, x = UNARY[op]
    x = x.astype(dtype)
    got, = run(unary_ir(op, t), x)
    assert got.dtype == dtype
    # the exact result rounded once to the dtype; float32 computing is at most 1 ulp away
    exact = fn(x.astype(np.float64)).astype(dtype)
    ulp = np.abs(np.spacing(exact.astype(np.float64).astype(dtype).astype(np.float32)))
    assert np.all(np.abs(got.astype(np.float64) - exact.astype(np.float64)) <= ulp.astype(np.float64))


def test_leaky_relu_and_cast():
    got, = run(unary_ir("leaky_relu", "f32[8]", " {alpha = 0.1}"), X)
    np.testing.assert_array_equal(got, np.where(X >= 0, X, X * F32(0.1)))
    text = ('func @f(%x: f32[8]) -> (i8[8], u8[8], i1[8]) loc("r.py":1) {\n'
            '  %0 = cast(%x) {dtype = "int8"} : i8[8] loc("r.py":2)\n'
            '  %1 = abs(%x) : f32[8] loc("r.py":3)\n'
            '  %2 = cast(%1) {dtype = "uint8"} : u8[8] loc("r.py":3)\n'
            '  %3 = cast(%x) {dtype = "bool"} : i1[8] loc("r.py":4)\n'
            '  return %0, %2, %3\n}\n')
    i8, u8, b = run(text, X)
    np.testing.assert_array_equal(i8, [-3, -1, 0, 0, 0, 1, 2, 7])     # truncation toward zero
    np.testing.assert_array_equal(u8, [3, 1, 0, 0, 0, 1, 2, 7])
    np.testing.assert_array_equal(b, X != 0)


def test_reductions_accumulate_in_float32_for_16_bit_floats():
    x = np.full(4096, 0.1, F16)
    text = ('func @f(%x: f16[4096]) -> (f16[]) loc("r.py":1) {\n'
            '  %0 = sum(%x) {axes = [0], keepdims = false} : f16[] loc("r.py":2)\n'
            '  return %0\n}\n')
    got, = run(text, x)
    assert got.dtype == F16
    assert got == np.float16(np.float32(np.float16(0.1)) * 4096)   # 409.5, not float16's stuck sum


def test_integer_results_wrap():
    text = ('func @f(%x: i8[3], %y: u8[3]) -> (i8[3], u8[3], i32[]) loc("r.py":1) {\n'
            '  %0 = add(%x, %x) : i8[3] loc("r.py":2)\n'
            '  %1 = sub(%y, %y) : u8[3] loc("r.py":3)\n'
            '  %2 = constant() {dtype = "uint8", value = 1} : u8[] loc("r.py":4)\n'
            '  %3 = sub(%1, %2) : u8[3] loc("r.py":4)\n'
            '  %4 = sum(%x) {axes = [0], keepdims = false} : i32[] loc("r.py":5)\n'
            '  return %0, %3, %4\n}\n')
    a, b, s = run(text, np.array([100, -100, 5], np.int8), np.array([1, 2, 3], np.uint8))
    np.testing.assert_array_equal(a, np.array([-56, 56, 10], np.int8))
    np.testing.assert_array_equal(b, np.array([255, 255, 255], np.uint8))
    assert s.dtype == np.int32 and s == 5


def test_matmul_of_int8_wraps_like_numpy():
    a = np.full((1, 64), 100, np.int8)
    text = ('func @f(%a: i8[1,64], %b: i8[64,1]) -> (i8[1,1]) loc("r.py":1) {\n'
            '  %0 = matmul(%a, %b) : i8[1,1] loc("r.py":2)\n'
            '  return %0\n}\n')
    got, = run(text, a, a.T.copy())
    assert got.dtype == np.int8 and got[0, 0] == np.matmul(a, a.T)[0, 0] == np.int8(640000 % 256)


def test_calls_run_the_callee():
    text = ('func @k(%x: f32[2]) -> (f32[2]) loc("r.py":1) {\n'
            '  %0 = exp(%x) : f32[2] loc("r.py":2)\n'
            '  return %0\n}\n\n'
            'func @main(%a: f32[2]) -> (f32[2]) loc("r.py":4) {\n'
            '  %0 = call(%a) {callee = "k"} : f32[2] loc("r.py":5)\n'
            '  %1 = call(%0) {callee = "k"} : f32[2] loc("r.py":6)\n'
            '  return %1\n}\n')
    got, = run(text, np.array([0.0, 1.0], F32))
    np.testing.assert_allclose(got, np.exp(np.exp([0.0, 1.0])), rtol=1e-6)


def test_symbolic_dims_are_bound_from_the_arguments():
    text = ('func @f(%x: f32[M,4], %k: f32[] scalar) -> (f32[2,M,2], f32[M,2]) loc("r.py":1) {\n'
            '  %0 = reshape(%x) {shape = ["M", 2, 2]} : f32[M,2,2] loc("r.py":2)\n'
            '  %1 = transpose(%0) {perm = [1, 0, 2]} : f32[2,M,2] loc("r.py":3)\n'
            '  %2 = slice(%x) {starts = [0, 1], steps = [1, 2], stops = ["M", 4]} : f32[M,2] loc("r.py":4)\n'
            '  %3 = mul(%2, %k) : f32[M,2] loc("r.py":4)\n'
            '  return %1, %3\n}\n')
    x = np.arange(12, dtype=F32).reshape(3, 4)
    t, s = run(text, x, F32(2))
    np.testing.assert_array_equal(t, x.reshape(3, 2, 2).transpose(1, 0, 2))
    np.testing.assert_array_equal(s, x[:, 1::2] * 2)


def test_zero_d_argument_given_as_one_element():
    module = fs.parse_ir('func @f(%x: f32[]) -> (f32[]) loc("r.py":1) {\n'
                         '  %0 = exp(%x) : f32[] loc("r.py":2)\n  return %0\n}\n')
    got, = run_function(module, module.main, [np.array([1.0], F32)])
    assert got.shape == () and np.isclose(got, np.e)


def test_results_are_fresh_arrays():
    module = fs.parse_ir('func @f(%x: f32[2,2]) -> (f32[2,2], f32[2,2], f32[4]) loc("r.py":1) {\n'
                         '  %0 = transpose(%x) {perm = [1, 0]} : f32[2,2] loc("r.py":2)\n'
                         '  %1 = reshape(%x) {shape = [4]} : f32[4] loc("r.py":3)\n'
                         '  return %x, %0, %1\n}\n')
    x = np.arange(4, dtype=F32).reshape(2, 2)
    outs = run_module(module, [x])
    for o in outs:
        assert not np.shares_memory(o, x) and o.flags.c_contiguous


def test_every_registered_op_has_a_reference():
    assert {name for name, d in REGISTRY.items() if d.ref is None} == {"call"}
