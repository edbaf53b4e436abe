"""Column fusion (FS116): a reduction over axes before the last (sum(x * x, 0), batch
statistics mean/var over axis 0) is one kernel with its elementwise producers and consumers.
The LLVM call, the reference and the printed Ascend C (simulate) agree with numpy, and the
printed kernel moves the GM bytes its report models (at most 1.05x the minimum here)."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import assert_close, fuzz_settings

rng = np.random.default_rng(11)


def kinds(k):
    return [(p.kind, p.reason_code) for p in k.kernels]


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def sum_sq_scaled(x, w):
    return fs.sum(x * x, axis=0) * w + 1.0


def test_sum_of_squares_with_a_consumer_is_one_column_kernel():
    x, w = f32(37, 70), f32(70)
    k = fs.fused_kernel(sum_sq_scaled).compile(x, w)
    assert kinds(k) == [("column", "FS100")]
    np.testing.assert_allclose(k(x, w), (x * x).sum(0) * w + 1.0, rtol=1e-5, atol=1e-5)


def test_var_over_the_batch_is_one_kernel_with_its_mean():
    x = f32(200, 48)
    k = fs.fused_kernel(lambda x: fs.var(x, axis=0, ddof=1)).compile(x)
    assert [p.kind for p in k.kernels] == ["column"]
    np.testing.assert_allclose(k(x), x.var(0, ddof=1), rtol=1e-5, atol=1e-6)
    k = fs.fused_kernel(lambda x: fs.var(x, axis=0) + x[0]).compile(x)   # x[0] is a kernel of its own
    assert "FS116" in [p.reason_code for p in k.kernels], kinds(k)


def test_a_domain_shaped_value_leaving_the_kernel_keeps_the_kernels_apart():
    """x * x is also returned: a column kernel writes only reduced values, so the square
    stays a vector kernel (no unprintable fused kernel)."""
    x = f32(20, 30)
    k = fs.fused_kernel(lambda x: (x * x, fs.sum(x * x, axis=0))).compile(x)
    assert len(k.kernels) == 2 and all(p.printable for p in k.kernels)
    a, b = k(x)
    np.testing.assert_allclose(b, (x * x).sum(0), rtol=1e-5)


def test_an_input_broadcast_within_the_kept_axes_keeps_the_kernels_apart():
    """w [40] over [300, 5, 40] reduced on axis 0: the kept axes (5, 40) are partly
    broadcast, which one stride cannot address: fusion leaves the kernels apart."""
    x, w = f32(30, 5, 40), f32(40)
    k = fs.fused_kernel(lambda x, w: fs.sum(x * w, axis=0)).compile(x, w)
    assert "column" not in [p.kind for p in k.kernels]
    np.testing.assert_allclose(k(x, w), (x * w).sum(0), rtol=1e-5, atol=1e-5)


def test_disabling_row_fusion_disables_column_fusion():
    x, w = f32(37, 70), f32(70)
    k = fs.fused_kernel(sum_sq_scaled, disable_passes=["row-fusion"]).compile(x, w)
    assert "column" not in [p.kind for p in k.kernels]


PRODUCERS = {
    "square": lambda x, c, s: x * x,
    "scaled": lambda x, c, s: fs.abs(x) * c + s,
    "exp": lambda x, c, s: fs.exp(x * 0.25),
    "where": lambda x, c, s: fs.where(x > c, x, c * 2.0),
}
CONSUMERS = {
    "none": lambda r, c: r,
    "affine": lambda r, c: r * c + 1.0,
    "sqrt": lambda r, c: fs.sqrt(fs.abs(r)),
}
NP_PRODUCERS = {
    "square": lambda x, c, s: x * x,
    "scaled": lambda x, c, s: np.abs(x) * c + s,
    "exp": lambda x, c, s: np.exp(x * x.dtype.type(0.25)),
    "where": lambda x, c, s: np.where(x > c, x, c * x.dtype.type(2.0)),
}
NP_CONSUMERS = {
    "none": lambda r, c: r,
    "affine": lambda r, c: r * c + r.dtype.type(1.0),
    "sqrt": lambda r, c: np.sqrt(np.abs(r)),
}
NP_RED = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}


@st.composite
def programs(draw):
    a = draw(st.lists(st.sampled_from([1, 2, 3]), max_size=1))
    k = draw(st.lists(st.sampled_from([1, 2, 5, 17, 64]), min_size=1, max_size=2))
    b = draw(st.sampled_from([1, 3, 8, 33, 70, 129]))
    return (tuple(a), tuple(k), b, draw(st.sampled_from(sorted(PRODUCERS))), draw(st.sampled_from(sorted(NP_RED))),
            draw(st.sampled_from(sorted(CONSUMERS))), draw(st.sampled_from(["float32", "float16"])),
            draw(st.integers(0, 2 ** 16)))


def _program(a, k, b, prod, red, cons):
    axes = tuple(range(len(a), len(a) + len(k)))

    def f(x, c, s):
        r = getattr(fs, red)(PRODUCERS[prod](x, c, s), axis=axes)
        return CONSUMERS[cons](r, fs.reshape(c, a + (b,)))
    return f, axes


def _numpy(x, c, s, a, b, prod, red, cons, axes):
    """numpy with fusedsl's rounding: each elementwise op in the tensor dtype (numpy rounds
    float16 ops once each, as fusedsl does), the reduction accumulated in float32 and
    rounded once to the dtype."""
    p = NP_PRODUCERS[prod](x, c, s)
    r = NP_RED[red](p.astype(np.float32), axis=axes).astype(x.dtype)
    return NP_CONSUMERS[cons](r, c.reshape(a + (b,))), np.abs(p.astype(np.float32)).sum(axis=axes)


@fuzz_settings(scale=0.1)
@given(programs())
def test_generated_column_kernels_agree_with_numpy(prog):
    a, k, b, prod, red, cons, dtype, seed = prog
    g = np.random.default_rng(seed)
    x = g.standard_normal(a + k + (b,)).astype(dtype)
    c = g.standard_normal(a + (1,) * len(k) + (b,)).astype(dtype)   # one value per output column
    s = np.array([0.5], dtype)
    f, axes = _program(a, k, b, prod, red, cons)
    kern = fs.fused_kernel(f).compile(x, c, s)
    if b > 1:   # with b == 1, c varies along A alone: one stride cannot address it (kernels apart)
        assert [p.kind for p in kern.kernels] == ["column"], kinds(kern)
    want, scale = _numpy(x, c, s, a, b, prod, red, cons, axes)
    got = kern(x, c, s)
    scale = float(np.max(scale)) if scale.size else 0.0
    assert_close(got, want, f"{prog}", scale=scale if red in ("sum", "mean") else 0.0)


@pytest.mark.parametrize("target,dtype,shape", [
    ("ascend910b", "float32", (37, 70)),     # one walk, a tail of 6 columns
    ("ascend310p", "float16", (130, 45)),    # 16-bit rows cast to float32 for the sums
    ("ascend910", "float32", (9, 3, 77)),    # no DataCopyPad: SetValue tails, cores on 64-B lines
])
def test_printed_column_kernels_simulate_like_numpy(target, dtype, shape):
    g = np.random.default_rng(3)
    x = g.standard_normal(shape).astype(dtype)
    w = g.standard_normal(shape[-1]).astype(dtype)
    axis = len(shape) - 2
    k = fs.fused_kernel(lambda x, w: fs.sum(fs.abs(x) * w, axis=axis) * 0.5 + w, target=target).compile(x, w)
    assert [p.kind for p in k.kernels] == ["column"] and k.kernels[0].printable
    x32, w32 = x.astype(np.float32), w.astype(np.float32)
    want = ((np.abs(x32) * w32).sum(axis) * 0.5 + w32).astype(dtype)
    got = k.simulate(x, w)
    assert_close(got, want, scale=float(np.abs(x32 * w32).sum(axis).max()))
    np.testing.assert_array_equal(got, k(x, w)) if dtype == "float32" else None
    rep = k.report()
    assert rep.gm_bytes_measured == rep.gm_bytes_fused


def test_var_reads_x_once_when_one_dma_holds_the_batch():
    """Two walks over K (mean, then the squares about it) read x from UB the second time:
    the measured GM bytes are the minimum (x once, the result once)."""
    x = rng.standard_normal((200, 96)).astype(np.float16)
    k = fs.fused_kernel(lambda x: fs.var(x, axis=0)).compile(x, target="ascend910b")
    assert k.kernels[0].lowered.resident and k.kernels[0].lowered.walks == 2
    got = k.simulate(x)
    assert_close(got, x.astype(np.float32).var(0).astype(np.float16))
    rep = k.report()
    assert rep.gm_bytes_measured == rep.gm_bytes_fused == x.nbytes + 96 * 2


def test_var_over_a_batch_bigger_than_ub_walks_twice():
    """K rows of 64 columns do not fit UB: the second walk reads x again (2x, modelled so)."""
    x = rng.standard_normal((2000, 64)).astype(np.float32)
    k = fs.fused_kernel(lambda x: fs.var(x, axis=0), target="ascend910b").compile(x)
    sched = k.kernels[0].lowered
    assert not sched.resident and sched.kt < 2000
    got = k.simulate(x)
    np.testing.assert_allclose(got, x.var(0), rtol=1e-4, atol=1e-6)
    rep = k.report()
    assert rep.gm_bytes_measured == rep.gm_bytes_fused == 2 * x.nbytes + 64 * 4


def test_batch_statistics_are_one_kernel_reading_x_once():
    """mean(x, 0) and var(x, 0) (two column groups over one input) merge into one kernel:
    on 910B it moves the minimum GM bytes (x once, both results once)."""
    # [512, 96] f32 rows of 96 would not fit UB whole (512 x 96 x 4 x 2 buffers): the tiles
    # narrow to 64 columns in one buffer so the second walk reads x from UB
    x = rng.standard_normal((512, 96)).astype(np.float32)
    k = fs.fused_kernel(lambda x: (fs.mean(x, axis=0), fs.var(x, axis=0)), target="ascend910b").compile(x)
    assert [p.kind for p in k.kernels] == ["column"]
    assert k.kernels[0].lowered.resident and k.kernels[0].lowered.bn == 64
    m, v = k.simulate(x)
    np.testing.assert_allclose(m, x.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v, x.var(0), rtol=1e-5, atol=1e-6)
    rep = k.report()
    assert rep.gm_bytes_measured == rep.gm_bytes_fused == rep.gm_bytes_min == x.nbytes + 2 * 96 * 4


@fuzz_settings(scale=0.004)
@given(programs(), st.sampled_from(["ascend910b", "ascend310p", "ascend910"]))
def test_generated_column_kernels_print_and_simulate_like_numpy(prog, target):
    a, k, b, prod, red, cons, dtype, seed = prog
    if b == 1 or (target == "ascend910" and dtype == "float16" and prod == "exp"):
        b = 9   # one value per output column must vary along B to be addressed by one stride
    g = np.random.default_rng(seed)
    x = g.standard_normal(a + k + (b,)).astype(dtype)
    c = g.standard_normal(a + (1,) * len(k) + (b,)).astype(dtype)
    s = np.array([0.5], dtype)
    f, axes = _program(a, k, b, prod, red, cons)
    kern = fs.fused_kernel(f, target=target).compile(x, c, s)
    assert [p.kind for p in kern.kernels] == ["column"] and kern.kernels[0].printable, kinds(kern)
    want, scale = _numpy(x, c, s, a, b, prod, red, cons, axes)
    got = kern.simulate(x, c, s)
    scale = float(np.max(scale)) if scale.size else 0.0
    assert_close(got, want, f"{prog} {target}", scale=scale if red in ("sum", "mean") else 0.0)
    rep = kern.report()
    assert rep.gm_bytes_measured == rep.gm_bytes_fused


def test_a_select_in_a_column_kernel_leaves_its_library_scratch_free():
    """where() prints as Select, whose library scratch is the top 8 KB of UB on 910B: a column
    kernel that would otherwise fill UB (long K) plans around it (the CPU API refused the run:
    'the UB plan already uses 195136 bytes (keep it at most 188160)'; hypothesis found it)."""
    g = np.random.default_rng(0)
    x = g.standard_normal((64, 17, 9)).astype(np.float32)
    c = g.standard_normal((1, 1, 9)).astype(np.float32)
    k = fs.fused_kernel(lambda x, c: fs.max(fs.where(x > c, x, c * 2.0), axis=(0, 1)) * fs.reshape(c, (9,)) + 1.0,
                        target="ascend910b").compile(x, c)
    sched = k.kernels[0].lowered
    assert sched.ub_budget <= 192 * 1024 - 8192
    want = np.where(x > c, x, c * np.float32(2)).max((0, 1)) * c.reshape(9) + np.float32(1)
    np.testing.assert_allclose(k.simulate(x, c), want, rtol=1e-6)


def test_inputs_beyond_the_queue_limit_are_single_buffered():
    """K = 1: c ([1, B]) has x's shape, so it is a second double-buffered input beside its
    [B] column copy (5 queue buffers). ascend910 has 4 per position: the input queues go single
    buffered and the kernel prints (it was left to the CPU executors; a hypothesis draw found it)."""
    a, k, b = (), (1,), 9
    g = np.random.default_rng(0)
    x = g.standard_normal(a + k + (b,)).astype(np.float32)
    c = g.standard_normal(a + (1,) * len(k) + (b,)).astype(np.float32)
    s = np.array([0.5], np.float32)
    f, axes = _program(a, k, b, "scaled", "max", "affine")
    kern = fs.fused_kernel(f, target="ascend910").compile(x, c, s)
    assert [p.kind for p in kern.kernels] == ["column"] and kern.kernels[0].printable, kinds(kern)
    assert kern.kernels[0].lowered.depth == 1
    want, _ = _numpy(x, c, s, a, b, "scaled", "max", "affine", axes)
    np.testing.assert_array_equal(kern.simulate(x, c, s), want)


@pytest.mark.parametrize("shape,axis", [((3, 0), 0), ((2, 3, 0), 1)])
def test_column_sum_over_an_empty_last_axis(shape, axis):
    """B = 0: the column kernel's tile width was 0 and compute_column_tiling divided by it
    (ZeroDivisionError at compile time); now an empty launch, the empty result numpy gives."""
    x = np.ones(shape, np.float32)
    k = fs.fused_kernel(lambda x: fs.sum(x, axis=axis)).compile(x, target="ascend910b")
    assert k(x).shape == x.sum(axis).shape
    assert k.simulate(x).shape == x.sum(axis).shape


def test_column_sum_over_zero_rows_is_refused_at_the_users_line():
    """K = 0: the printed kernel had no row to reduce and wrote nothing (simulate's zero-filled
    output looked right; a chip's GM would keep what it held, and a mean's NaN was 0). The CPU
    call answers; the Ascend C is refused, naming the op's line."""
    x = np.ones((4, 0, 3), np.float32)
    k = fs.fused_kernel(lambda x: fs.sum(x, axis=1)).compile(x, target="ascend910b")
    np.testing.assert_array_equal(k(x), np.zeros((4, 3), np.float32))
    with pytest.raises(fs.FusedslError) as err:
        k.source
    assert "empty axis" in str(err.value) and "test_column_fusion.py" in str(err.value)


def test_row_reduction_over_an_empty_last_axis_is_refused():
    """The row kernel of sum(x, -1) + 1 over [4, 0] wrote nothing: simulate answered 0 where the
    result is 1 (and 0 for a mean, which is NaN). Refused, at the line; x - sum(x) over [3, 0]
    (an empty output, nothing to write) still prints."""
    x = np.ones((4, 0), np.float32)
    k = fs.fused_kernel(lambda x: fs.sum(x, axis=-1) + 1.0).compile(x, target="ascend910b")
    np.testing.assert_array_equal(k(x), np.ones(4, np.float32))
    with pytest.raises(fs.FusedslError) as err:
        k.simulate(x)
    assert "rows of 0 elements" in str(err.value) and "test_column_fusion.py" in str(err.value)
    e = np.ones((3, 0), np.float32)
    s = fs.fused_kernel(lambda x: x - fs.sum(x, axis=-1, keepdims=True)).compile(e, target="ascend910b")
    assert s.simulate(e).shape == (3, 0)
