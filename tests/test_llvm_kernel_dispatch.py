"""`k(*arrays)` runs elementwise and column kernels from their TileKernel through the one LLVM
lowering of the tile IR (backend_cpu/kernel_cpu.ScheduleCpu, on the CPU's tiling words of
backend_cpu/cpu_tiling.py), with what the per-kind executors did: out= arrays, recycled results,
broadcasts, runtime scalars, symbolic sizes, float16 / int / bool, multi-output kernels, tails and
size 1 -- all against numpy through the public API.  What the column kind does not lower (integer
sums, symbolic sizes, no rows to sum) stays on llvm_reduce.py."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import fuzz_settings

import fusedsl as fs
from fusedsl.backend_cpu.kernel_cpu import ScheduleCpu


def _executor_object(comp):
    (plan,) = comp.kernels
    vector = comp._cpu.get(plan.name)
    return vector[0] if vector else comp._row_kernel(plan)


@fuzz_settings(scale=0.1)
@given(r=st.integers(1, 70), c=st.integers(1, 700), dtype=st.sampled_from(["float32", "float16", "int32"]),
       bcast=st.sampled_from(["none", "row", "column", "scalar"]))
def test_elementwise_kernels_run_on_llvm_kernel_like_numpy(r, c, dtype, bcast):
    g = np.random.default_rng(r * 1000 + c)
    x = (g.standard_normal((r, c)) * 8).astype(dtype)
    shape = {"none": (r, c), "row": (c,), "column": (r, 1), "scalar": (1,)}[bcast]
    y = (g.standard_normal(shape) * 8).astype(dtype)
    k = fs.fused_kernel(lambda x, y: fs.maximum(x * y, x - y) + fs.abs(y))
    got = k(x, y)
    assert isinstance(_executor_object(k.compile(x, y)), ScheduleCpu)
    want = np.maximum(x * y, x - y) + np.abs(y)
    if dtype == "float16":
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=1e-2)
    else:
        np.testing.assert_array_equal(got, want)


def test_out_recycled_results_scalars_and_symbolic_sizes():
    g = np.random.default_rng(0)
    x = g.standard_normal((300, 257)).astype(np.float32)
    k = fs.fused_kernel(lambda x, s: fs.where(x > s, x * s, -x))
    comp = k.compile(fs.spec(("R", "C"), "float32"), fs.scalar("s"))
    for shape in ((300, 257), (5, 3), (1, 1), (1024, 1024)):   # one compile, the CPU tiling per size
        xs = g.standard_normal(shape).astype(np.float32)
        for s in (0.5, -2.0):
            np.testing.assert_array_equal(comp(xs, s), np.where(xs > np.float32(s), xs * np.float32(s), -xs))
    assert isinstance(_executor_object(comp), ScheduleCpu)
    out = np.empty_like(x)
    assert comp(x, 0.25, out=out) is out
    np.testing.assert_array_equal(out, np.where(x > 0.25, x * np.float32(0.25), -x))
    static = fs.fused_kernel(lambda a, b: a * b + 1.0)
    a = np.ones((64, 64), np.float32)
    static(a, a)
    addresses = {static(a, a).ctypes.data for _ in range(5)}   # dropped results: one buffer again
    assert len(addresses) == 1
    held = [static(a, a) for _ in range(6)]                     # live results never share one
    assert len({h.ctypes.data for h in held}) == 6


def test_bool_and_int8_and_two_outputs():
    g = np.random.default_rng(1)
    x = g.integers(-100, 100, (33, 65)).astype(np.int32)
    y = g.integers(-100, 100, (33, 65)).astype(np.int32)
    k = fs.fused_kernel(lambda x, y: ((x + y).astype("int8"), x > y))
    wrapped, bigger = k(x, y)
    np.testing.assert_array_equal(wrapped, (x + y).astype(np.int8))
    np.testing.assert_array_equal(bigger, x > y)
    assert isinstance(_executor_object(k.compile(x, y)), ScheduleCpu)


@pytest.mark.parametrize("shape,axis", [((300, 37, 5), 0), ((4, 1500, 200), 1), ((1, 1), 0), ((7, 33), 0)])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_column_kernels_run_on_llvm_kernel_like_numpy(shape, axis, dtype):
    x = np.random.default_rng(2).standard_normal(shape).astype(dtype)
    k = fs.fused_kernel(lambda x: (fs.sum(x * x, axis) * 0.5, fs.max(x, axis)))
    comp = k.compile(x)
    assert isinstance(_executor_object(comp), ScheduleCpu)
    assert comp.executor(comp.kernels[0]) == "column"
    half, top = k(x)
    wide = x.astype(np.float32)
    tol = 2e-3 if dtype == "float16" else 2e-5
    np.testing.assert_allclose(half.astype(np.float32), (wide * wide).sum(axis) * 0.5, rtol=tol, atol=tol)
    np.testing.assert_array_equal(top, x.max(axis))
    outs = (np.empty_like(half), np.empty_like(top))
    assert k(x, out=outs)[0] is outs[0]
    np.testing.assert_array_equal(outs[1], top)


@pytest.mark.parametrize("case", ["int32", "no rows", "symbolic"])
def test_what_the_column_kind_does_not_lower_stays_on_llvm_reduce(case):
    if case == "int32":
        x = np.arange(60, dtype=np.int32).reshape(6, 10)
        k, arg = fs.fused_kernel(lambda x: fs.sum(x, 0)), x
    elif case == "no rows":
        x = np.ones((0, 5), np.float32)
        k, arg = fs.fused_kernel(lambda x: fs.sum(x, 0) + 1.0), x
    else:
        x = np.ones((9, 4), np.float32)
        k, arg = fs.fused_kernel(lambda x: fs.sum(x, 0) + 1.0), fs.spec(("N", 4), "float32")
    comp = k.compile(arg)
    assert type(_executor_object(comp)).__name__ == "ColumnCpuKernel"
    want = x.sum(0) if case == "int32" else x.sum(0) + 1
    np.testing.assert_array_equal(comp(x), want)
