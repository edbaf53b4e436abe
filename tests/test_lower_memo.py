"""The process's memo of lowered kernels (lower/kinds._LOWERED, keyed by ir/key.function_key):
a twin of a kernel lowered before takes its schedule; anything a consumer could tell apart --
an attribute's Python type or sign, a name, a source line, the target, the headroom -- is a
different key; a remembered lowering equals a fresh one, and the memo is bounded."""
from __future__ import annotations

import numpy as np

import fusedsl as fs
from fusedsl.dtypes import to_dtype
from fusedsl.errors import Loc
from fusedsl.ir.core import Function, Op, Param, TensorType, Value
from fusedsl.ir.key import function_key
from fusedsl.lower import kinds
from fusedsl.lru import Lru
from fusedsl.tile.kernel import print_kernel


def _fn(value=1.0, *, name="k", pname="x", line=3, dtype="float32") -> Function:
    t = TensorType((4, 8), to_dtype(dtype))
    x = Value(t, pname)
    c = Value(TensorType((), to_dtype(dtype)))
    y = Value(t)
    ops = (Op("constant", (), (c,), (("dtype", to_dtype(dtype)), ("value", value)), Loc("m.py", line)),
           Op("mul", (x, c), (y,), (), Loc("m.py", line + 1)))
    return Function(name, (Param(x),), ops, (y,), Loc("m.py", 1))


def test_function_key_tells_apart_what_a_consumer_could():
    base = function_key(_fn())
    assert base == function_key(_fn())   # a twin: new Value / Op objects, same content
    assert hash(base) == hash(function_key(_fn()))
    others = [_fn(1), _fn(True), _fn(-0.0), _fn(2.0), _fn(name="j"), _fn(pname="y"), _fn(line=4),
              _fn(dtype="float16")]
    keys = [function_key(f) for f in others]
    assert base not in keys and len(set(keys)) == len(keys)
    assert function_key(_fn(0.0)) != function_key(_fn(-0.0))
    assert function_key(_fn(float("nan"))) == function_key(_fn(float("nan")))   # its bits, not ==
    assert function_key(_fn(np.float32(1.0))) is None   # a type the key does not know: never shared


def _softmax(x):
    return fs.softmax(x * 2.0, axis=-1)


def test_a_twin_kernel_takes_the_remembered_lowering_which_equals_a_fresh_one():
    x = np.random.default_rng(0).standard_normal((40, 300)).astype(np.float32)
    kinds._LOWERED.clear()
    first = fs.fused_kernel(_softmax, target="ascend910b").compile(x)
    again = fs.fused_kernel(_softmax, target="ascend910b").compile(x)
    assert first.kernels[0].lowered is again.kernels[0].lowered   # remembered
    assert again.kernels[0].function is not first.kernels[0].function   # traced afresh
    other = fs.fused_kernel(_softmax, target="ascend310p").compile(x)   # another target: lowered again
    assert other.kernels[0].lowered is not first.kernels[0].lowered
    roomier = fs.fused_kernel(_softmax, target="ascend910b", ub_headroom=0.5).compile(x)
    assert roomier.kernels[0].lowered is not first.kernels[0].lowered
    kinds._LOWERED.clear()
    fresh = fs.fused_kernel(_softmax, target="ascend910b").compile(x)
    assert fresh.kernels[0].lowered is not first.kernels[0].lowered
    assert print_kernel(kinds.kernel_ir(fresh.kernels[0].lowered)) == print_kernel(kinds.kernel_ir(again.kernels[0].lowered))
    assert again.source == fresh.source
    ref = x * 2.0
    ref = np.exp(ref - ref.max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)
    for k in (again, fresh):
        np.testing.assert_allclose(k(x), ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(k.simulate(x), ref, rtol=1e-5, atol=1e-6)


def test_the_memo_is_bounded(monkeypatch):
    monkeypatch.setattr(kinds, "_LOWERED", Lru(2))
    x = np.ones((4, 8), np.float32)
    for scale in (2.0, 3.0, 4.0):
        fs.fused_kernel(lambda a, s=scale: fs.relu(a * s), target="ascend910b").compile(x)
    assert len(kinds._LOWERED) == 2
