"""Signed zeros: abs(-0.0) is +0.0 in every executor (numpy and torch agree); the printed
kernel's Abs went through `a < 0 ? -a : a` in the CPU API, which keeps -0.0.

maximum / minimum / relu with signed zeros and NaN: one rule on every executor.

The rule (docs/guide/dtypes.md): `fs.maximum` / `fs.minimum` are numpy's float32
np.maximum / np.minimum -- NaN in either operand gives NaN, and a tie of -0.0 with +0.0 gives
the SECOND operand (np.maximum(-0.0, 0.0) is +0.0, np.maximum(0.0, -0.0) is -0.0; numpy's
float16 loop answers with the first, so half results follow the float32 rule, not numpy's
float16 one); `fs.relu` is torch.relu: -0.0 stays -0.0, NaN stays NaN.

Before, the LLVM executor answered a tie with the first operand, the tile interpreter's relu
gave +0.0 for -0.0, and the printed Maxs / Mins took the scalar as the second operand for
`fs.maximum(0.0, x)` (12 of 32 bits wrong under simulate on 910B / 310P, on the LLVM executor
for 910A)."""
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import fuzz_settings
from fusedsl.backend_cpu.kernel_interp import run_kernel
from fusedsl.lower.kinds import kernel_ir, kernel_words
from fusedsl.reference import run_module


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_abs_of_negative_zero_is_positive_zero_everywhere(dtype):
    x = np.array([-0.0, 0.0, -1.5, 2.0, -0.0], dtype)
    k = fs.fused_kernel(lambda x: fs.abs(x) * 1.0).compile(x)
    want = np.abs(x)
    assert not np.signbit(want).any()
    for name, got in (("llvm", k(x)), ("simulate", k.simulate(x))):
        np.testing.assert_array_equal(got, want)
        assert not np.signbit(got).any(), (name, got)


def test_relu_keeps_negative_zero_like_torch_in_every_executor(monkeypatch):
    """relu(-0.0) is -0.0 (torch.relu's, and the device's Relu); the reference interpreter
    used np.maximum, which gives +0.0, so it disagreed with the LLVM call and simulate."""
    x = np.array([-0.0, 0.0, -1.0, np.nan, 3.0], np.float32)
    want = torch.relu(torch.from_numpy(x)).numpy()
    k = fs.fused_kernel(lambda x: fs.relu(x) * 1.0).compile(x)
    outs = {"llvm": k(x), "simulate": k.simulate(x)}
    monkeypatch.setattr(fs.config, "executor", "reference")
    outs["reference"] = fs.fused_kernel(lambda x: fs.relu(x) * 1.0)(x)
    for name, got in outs.items():
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=name)


TARGETS = ("ascend910b", "ascend310p", "ascend910")
N = 64
EDGES = [0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, -1.0, 2.5]


def _edges(a, b):   # two kernels of at most 4 outputs: one kernel each on every target
    return fs.maximum(a, b), fs.minimum(a, b), fs.relu(a), fs.maximum(a, 0.0)


def _edges_with_scalars(a, b):
    return fs.maximum(0.0, a), fs.minimum(-0.0, a), fs.minimum(a, -0.0)


def _want(a, b):
    """numpy's float32 maximum / minimum, torch's relu, cast back to the inputs' dtype."""
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    z, nz = np.float32(0.0), np.float32(-0.0)
    relu = torch.relu(torch.from_numpy(a32)).numpy()
    outs = (np.maximum(a32, b32), np.minimum(a32, b32), relu, np.maximum(a32, z), np.maximum(z, a32),
            np.minimum(nz, a32), np.minimum(a32, nz))
    outs = [o.astype(a.dtype) for o in outs]
    return outs[:4], outs[4:]


def _bits(v):
    v = np.asarray(v)
    return v.view(np.uint16 if v.dtype.itemsize == 2 else np.uint32)


def _tile_interp(k, a, b):
    """The kernel's tile IR run by the kernel interpreter (the numpy side of the tile IR)."""
    (plan,) = k.kernels
    outs = [np.full(N, 7, a.dtype) for _ in k.graph.main.results]
    run_kernel(kernel_ir(plan.lowered), [a, b], outs, kernel_words(plan.lowered, plan.tiling))
    return outs


def _check(kernels, a, b):
    for k, want in zip(kernels, _want(a, b)):
        _check_one(k, a, b, want)


def _check_one(k, a, b, want):
    runs = {"llvm": k(a, b), "simulate": k.simulate(a, b), "reference": run_module(k.graph, [a, b]),
            "tile interpreter": _tile_interp(k, a, b)}
    for name, got in runs.items():
        for n, (g, w) in enumerate(zip(got, want)):
            bad = np.flatnonzero(_bits(g) != _bits(w))
            assert bad.size == 0, (f"{name} output {n}: {bad.size} of {N} differ, first a={a[bad[0]]} "
                                   f"b={b[bad[0]]}: got {g[bad[0]]}, want {w[bad[0]]}")


@pytest.fixture(scope="module", params=[(t, d) for t in TARGETS for d in ("float32", "float16")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def edge_kernel(request):
    target, dtype = request.param
    spec = fs.spec((N,), dtype)
    kernels = [fs.fused_kernel(f).compile(spec, spec, target=target) for f in (_edges, _edges_with_scalars)]
    assert [len(k.kernels) for k in kernels] == [1, 1]
    return kernels, np.dtype(dtype)


def test_every_pair_of_edge_values(edge_kernel):
    k, dtype = edge_kernel
    pairs = [(x, y) for x in EDGES for y in EDGES]
    a = np.array([x for x, _ in pairs], dtype)
    b = np.array([y for _, y in pairs], dtype)
    _check(k, a, b)


@fuzz_settings(scale=0.1)
@given(data=st.data())
def test_generated_values_with_signed_zeros_and_nan(edge_kernel, data):
    k, dtype = edge_kernel
    value = st.one_of(st.sampled_from(EDGES), st.floats(-1e4, 1e4, width=16 if dtype.itemsize == 2 else 32))
    a = np.array(data.draw(st.lists(value, min_size=N, max_size=N)), dtype)
    b = np.array(data.draw(st.lists(value, min_size=N, max_size=N)), dtype)
    _check(k, a, b)
