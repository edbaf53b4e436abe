"""Column reductions on too few tiles for the chip's cores run in two stages with
`split_columns=True` (passes/split_reductions.SplitColumns): [A, K, B] -> [A, S, K/S, B] reduced over K/S, then over S.
The printed Ascend C and the CPU call agree with numpy; the split is taken only where it pays."""
import numpy as np
import pytest

import fusedsl as fs

rng = np.random.default_rng(11)


def _kernels(k):
    return [(p.ops, r.block_dim, r.model_time_us) for p, r in zip(k.kernels, k.report().kernels)]


@pytest.mark.parametrize("target,shape", [("ascend910b", (2048, 512)), ("ascend310p", (4096, 128))])
def test_long_column_sum_splits_and_agrees(target, shape):
    """910B: 8 tiles of 64 outputs for 48 cores; 310P: 2 for 8."""
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    k = fs.fused_kernel(lambda x: fs.sum(x, axis=0)).compile(x, target=target, split_columns=True)
    one = fs.fused_kernel(lambda x: fs.sum(x, axis=0)).compile(x, target=target)
    assert len(k.kernels) == 2 and len(one.kernels) == 1
    assert k.kernels[0].tiling.block_dim > one.kernels[0].tiling.block_dim
    assert k.report().model_time_us_fused < 0.6 * one.report().model_time_us_fused
    want = x.astype(np.float64).sum(0)
    np.testing.assert_allclose(k.simulate(x), want, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(k(x), want, rtol=1e-5, atol=1e-4)


def test_half_mean_accumulates_in_float32_across_stages():
    """The partials of a float16 mean are float32 (one rounding at the end, as one kernel does)."""
    x = rng.uniform(0, 1, (4096, 256)).astype(np.float16)
    k = fs.fused_kernel(lambda x: fs.mean(x, axis=0)).compile(x, target="ascend910b", split_columns=True)
    assert len(k.kernels) == 2 and "cast" in k.kernels[0].ops
    got = k.simulate(x)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), x.astype(np.float64).mean(0), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(k(x).astype(np.float64), x.astype(np.float64).mean(0), rtol=1e-3, atol=1e-3)


def test_max_over_a_middle_axis_is_exact():
    x = rng.standard_normal((8, 2048, 64)).astype(np.float32)
    k = fs.fused_kernel(lambda x: fs.max(x, axis=1)).compile(x, target="ascend910b", split_columns=True)
    assert len(k.kernels) == 2
    np.testing.assert_array_equal(k.simulate(x), x.max(1))
    np.testing.assert_array_equal(k(x), x.max(1))


@pytest.mark.parametrize("shape,axis", [((7, 33), 0),           # small: the cores are not needed
                                         ((4001, 512), 0),      # K prime: no even split
                                         ((64, 4096), 1),       # the last axis: a row kernel
                                         ((512, 2048), 0)])     # already enough tiles for the cores
def test_no_split_where_it_does_not_pay(shape, axis):
    x = np.ones(shape, np.float32)
    k = fs.fused_kernel(lambda x: fs.sum(x, axis=axis)).compile(x, target="ascend910b", split_columns=True)
    assert len(k.kernels) == 1


def test_symbolic_sizes_are_not_split():
    k = fs.fused_kernel(lambda x: fs.sum(x, axis=0)).compile(fs.spec(("K", 1024)), target="ascend910b", split_columns=True)
    assert len(k.kernels) == 1


def test_off_by_default_and_no_reshape_between_a_reduction_and_its_consumer():
    """Off by default (the CPU executors are slower on the split form). With it on, a reduction of
    an elementwise product stays whole (its producer fuses into it), and the split leaves no
    reshape between a reduction and the consumer fusion joins to it: (sum(x*x, 1) * 0.5, max(x,
    1)) failed to compile with use-before-def when it did."""
    x = rng.uniform(-1, 1, (4096, 1024)).astype(np.float32)
    assert len(fs.fused_kernel(lambda x: fs.sum(x, axis=0)).compile(x, target="ascend910b").kernels) == 1
    y = rng.uniform(-1, 1, (4, 1500, 200)).astype(np.float32)
    f = lambda x: (fs.sum(x * x, 1) * 0.5, fs.max(x, 1))   # noqa: E731
    k = fs.fused_kernel(f).compile(y, target="ascend910b", split_columns=True)
    got = k(y)
    np.testing.assert_allclose(got[0], (y.astype(np.float64) ** 2).sum(1) * 0.5, rtol=1e-5)
    np.testing.assert_array_equal(got[1], y.max(1))
