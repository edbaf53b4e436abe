"""Epilogues of cube kernels printed as Ascend C (issue 8, item 2): compares and `where`, bool
masks, runtime scalars and matmuls with several batch axes, run with `simulate` (the printed
C++ on fusedsl's CPU implementation of the Ascend C API) and through `kernel(*arrays)`, both
against numpy on 910B and 310P; what is still not printed says so at the user's line."""
import os
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from fusedsl.reference import run_module

from conftest import covering, fuzz_settings, marked_line

HERE = os.path.basename(__file__)
TARGETS = ["ascend910b", "ascend310p"]
# 310P's Matmul API has no float32 x float32 form: f32 inputs run on 910B only
TARGET_DTYPES = [("ascend910b", np.float32), ("ascend910b", np.float16), ("ascend310p", np.float16)]


def _close(got, want, tol):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    if want.dtype == np.bool_:   # the data make every product exact, so compares agree bit for bit
        assert np.array_equal(got, want), f"{int(np.sum(got != want))} of {want.size} mask bits differ"
        return
    got, want = got.astype(np.float64), want.astype(np.float64)
    assert np.abs(got - want).max() <= tol * (1 + np.abs(want).max())


def _check(c, args, want, tol):
    """simulate and kernel(*arrays) both agree with `want` (numpy)."""
    assert [p.kind for p in c.kernels] == ["cube"]
    for got in (c.simulate(*args), c(*args)):
        got = got if isinstance(got, (tuple, list)) else (got,)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w, tol)


def _tol(dtype):
    return 4e-3 if dtype == np.float16 else 1e-4


def _data(seed, dtype, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _exact(seed, dtype, *shapes):
    """Multiples of 0.5 in [-2, 2]: every product and sum (K < 100) is exact in f16 and f32, so a
    compare sees the same value in every executor and ties (y == threshold) really occur."""
    rng = np.random.default_rng(seed)
    return [(rng.integers(-4, 5, s) * 0.5).astype(dtype) for s in shapes]


# ---- compares and where ------------------------------------------------------------------

@pytest.mark.parametrize("target,dtype,m,n,k", covering(TARGET_DTYPES, [(33, 40, 19), (1, 1, 1), (17, 1, 5),
                                                                          (130, 70, 45)]))
def test_where_leaky_and_a_bool_mask(target, dtype, m, n, k):
    @fs.fused_kernel(target=target)
    def f(x, w, b):
        y = x @ w + b
        return fs.where(y > 0, y, y * 0.1), y >= 0.5

    x, w, b = _exact(m * n + k, dtype, (m, k), (k, n), (n,))
    c = f.compile(x, w, b)
    assert "AscendC::Compares(" in c.source and "AscendC::Select(" in c.source
    y = (x.astype(np.float64) @ w.astype(np.float64)).astype(dtype).astype(np.float64) + b
    _check(c, (x, w, b), [np.where(y > 0, y, 0.1 * y).astype(dtype), y >= 0.5], _tol(dtype))


@pytest.mark.parametrize("target", TARGETS)
def test_compare_with_a_residual_and_a_mask_input(target):
    """Both sides of the compare vary (a residual tensor); a bool [M, N] input picks values."""
    @fs.fused_kernel(target=target)
    def f(x, w, r, keep):
        y = x @ w
        z = fs.where(y < r, r, y)           # max(y, r) through a compare
        return fs.where(keep, z, 0.0), fs.cast(y != r, "float16")

    x, w, r = _exact(7, np.float16, (45, 30), (30, 50), (45, 50))
    keep = np.random.default_rng(8).random((45, 50)) > 0.3
    c = f.compile(x, w, r, keep)
    want = run_module(c.graph, [x, w, r, keep])
    _check(c, (x, w, r, keep), want, 4e-3)


@fuzz_settings(0.006)
@given(m=st.integers(1, 70), n=st.integers(1, 70), k=st.integers(1, 40), target_dtype=st.sampled_from(TARGET_DTYPES),
       cmp=st.sampled_from(["lt", "le", "gt", "ge", "eq", "ne"]), seed=st.integers(0, 2**16))
def test_compares_in_the_epilogue_fuzz(m, n, k, target_dtype, cmp, seed):
    target, dtype = target_dtype

    @fs.fused_kernel(target=target)
    def f(x, w, b):
        y = x @ w + b
        t = {"lt": y < 0.5, "le": y <= 0.5, "gt": y > 0.5, "ge": y >= 0.5, "eq": y == 0.5, "ne": y != 0.5}[cmp]
        return fs.where(t, y * 2.0, -y), t

    x, w, b = _exact(seed, dtype, (m, k), (k, n), (n,))
    c = f.compile(x, w, b)
    _check(c, (x, w, b), run_module(c.graph, [x, w, b]), _tol(dtype))


# ---- runtime scalars ---------------------------------------------------------------------

@pytest.mark.parametrize("target,dtype,m,n,k", covering(TARGET_DTYPES, [(33, 40, 19), (1, 17, 3), (70, 1, 16)]))
def test_leaky_relu_with_a_runtime_alpha(target, dtype, m, n, k):
    """leaky_relu(x @ w + b, alpha): alpha travels in the tiling data after the TCubeTiling words."""
    @fs.fused_kernel(target=target)
    def f(x, w, b, alpha):
        return fs.leaky_relu(x @ w + b, alpha)

    name = np.dtype(dtype).name
    c = f.compile(fs.spec((m, k), name), fs.spec((k, n), name), fs.spec((n,), name), fs.scalar("alpha", "float32"))
    assert "float s3;   // runtime scalar" in c.source
    x, w, b = _data(m + n * k, dtype, (m, k), (k, n), (n,))
    for alpha in (0.2, -1.5):
        y = (x.astype(np.float64) @ w.astype(np.float64)).astype(dtype).astype(np.float64) + b
        _check(c, (x, w, b, alpha), [np.where(y >= 0, y, alpha * y).astype(np.float32)], _tol(dtype))


@pytest.mark.parametrize("target", TARGETS)
def test_two_runtime_scalars_and_a_compare(target):
    @fs.fused_kernel(target=target)
    def f(x, w, lo, scale):
        y = x @ w
        return fs.where(y < lo, lo, y) * scale

    c = f.compile(fs.spec((50, 20), "float16"), fs.spec((20, 30), "float16"), fs.scalar("lo", "float32"),
                  fs.scalar("scale", "float32"))
    x, w = _exact(5, np.float16, (50, 20), (20, 30))
    for lo, scale in ((0.5, 2.0), (-3.0, -0.25)):
        _check(c, (x, w, lo, scale), run_module(c.graph, [x, w, np.float32(lo), np.float32(scale)]), 1e-6)


def test_a_runtime_scalar_cube_project_runs_with_run_sh(tmp_path):
    """The kernel-launch project: main.cpp sets the scalar in the wrapping tiling struct by name."""
    import subprocess
    import sys

    @fs.fused_kernel(target="ascend310p")
    def lin_alpha(x, w, b, alpha):
        return fs.leaky_relu(x @ w + b, alpha)

    c = lin_alpha.compile(fs.spec((40, 24), "float16"), fs.spec((24, 36), "float16"), fs.spec((36,), "float16"),
                          fs.scalar("alpha", "float32"))
    path = c.save(str(tmp_path / "p"), scalars={"alpha": -0.75})
    main = open(os.path.join(path, "main.cpp"), encoding="utf-8").read()
    assert "LinAlphaKernelCubeTiling tiling_lin_alpha_kernel{};" in main
    assert "tiling_lin_alpha_kernel.s3 = scalar_alpha;" in main
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {k: v for k, v in os.environ.items() if k not in ("ASCEND_HOME_PATH", "FUSEDSL_TARGET")}
    env.update(PYTHON=sys.executable, PYTHONPATH=root + os.pathsep + env.get("PYTHONPATH", ""))
    run = subprocess.run(["bash", "run.sh", "-r", "cpu", "-v", "Ascend310P3"], cwd=path, env=env,
                         capture_output=True, text=True, timeout=600)
    log = run.stdout + run.stderr
    assert run.returncode == 0 and "test pass" in log, log
    x = np.fromfile(os.path.join(path, "input", "input_x.bin"), np.float16).reshape(40, 24)
    w = np.fromfile(os.path.join(path, "input", "input_w.bin"), np.float16).reshape(24, 36)
    b = np.fromfile(os.path.join(path, "input", "input_b.bin"), np.float16)
    got = np.fromfile(os.path.join(path, "output", "output_0.bin"), np.float32).reshape(40, 36)
    want = run_module(c.graph, [x, w, b, np.float32(-0.75)])[0]
    _close(got, want, 4e-3)


# ---- several batch axes ------------------------------------------------------------------

@pytest.mark.parametrize("target,dtype,a_shape,b_shape,r_shape", covering(TARGET_DTYPES, [
    ((2, 3, 33, 19), (2, 3, 19, 40), (2, 3, 33, 40)),    # both batched, a residual per matrix
    ((2, 3, 33, 19), (19, 40), (33, 40)),                # B shared, one residual for every matrix
    ((17, 5), (2, 1, 3, 5, 24), (2, 1, 3, 17, 24)),      # A shared, three axes (one of size 1)
    ((1, 1, 9, 7), (2, 2, 7, 1), (2, 2, 9, 1)),          # size-1 batch axes broadcast, N = 1
]))
def test_batch_axes_flatten_into_one(target, dtype, a_shape, b_shape, r_shape):
    @fs.fused_kernel(target=target)
    def f(x, w, r):
        return fs.silu(x @ w) + r

    x, w, r = _data(len(a_shape) * 7 + len(b_shape), dtype, a_shape, b_shape, r_shape)
    c = f.compile(x, w, r)
    note = c.kernels[0].row.plan_note
    axes = np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    assert f"{int(np.prod(axes))} batch matrices ({' x '.join(map(str, axes))} flattened)" in note
    _check(c, (x, w, r), run_module(c.graph, [x, w, r]), _tol(dtype))


@fuzz_settings(0.006)
@given(batch=st.lists(st.integers(1, 3), min_size=2, max_size=3), m=st.integers(1, 40), n=st.integers(1, 40),
       k=st.integers(1, 24), shared=st.sampled_from(["none", "a", "b"]), target_dtype=st.sampled_from(TARGET_DTYPES),
       seed=st.integers(0, 2**16))
def test_batch_axes_fuzz(batch, m, n, k, shared, target_dtype, seed):
    target, dtype = target_dtype

    @fs.fused_kernel(target=target)
    def f(x, w, b):
        y = x @ w + b
        return fs.where(y > 0, y, y * 0.2)

    a_shape = (m, k) if shared == "a" else (*batch, m, k)
    b_shape = (k, n) if shared == "b" else (*batch, k, n)
    x, w, b = _exact(seed, dtype, a_shape, b_shape, (n,))
    c = f.compile(x, w, b)
    _check(c, (x, w, b), run_module(c.graph, [x, w, b]), _tol(dtype))


def test_a_broadcast_batch_axis_names_the_users_line():
    @fs.fused_kernel(target="ascend910b")
    def f(x, w):
        return fs.relu(x @ w)   # LINE-MARK bcast-batch

    x = np.ones((2, 1, 16, 8), np.float16)
    w = np.ones((1, 3, 8, 16), np.float16)
    c = f.compile(x, w)
    with pytest.raises(fs.ScheduleError) as info:
        c.source
    text = str(info.value)
    assert f"{HERE}:{marked_line(__file__, 'bcast-batch')}" in text, text
    assert re.search(r"flattens a matmul's batch axes only when each operand has all of them or none "
                     r"\(matmul of \[2, 1, 16, 8\] @ \[1, 3, 8, 16\].*x's batch axes \[2, 1\] broadcast "
                     r"against \[2, 3\]\)", text), text
    np.testing.assert_allclose(c(x, w), np.maximum(x.astype(np.float32) @ w, 0), rtol=2e-3)
