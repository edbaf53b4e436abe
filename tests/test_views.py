"""slice / concatenate / take fused into CopyIn/CopyOut addressing (fusedsl/views.py).

One traced function holds every case, so each target needs one g++ build of the printed
Ascend C (all kernels in one translation unit); the LLVM executor and the tile interpreter
run the same kernels.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import fuzz_settings

import fusedsl as fs
from fusedsl.backend_cpu.kernel_interp import run_kernel
from fusedsl.lower.kinds import kernel_ir, kernel_words

rng = np.random.default_rng(7)
A = rng.standard_normal((5, 24)).astype(np.float32)
B = rng.standard_normal((5, 40)).astype(np.float32)
C3 = rng.standard_normal((5, 7)).astype(np.float32)
X3 = rng.standard_normal((3, 4, 11)).astype(np.float32)
Y3 = rng.standard_normal((3, 4, 5)).astype(np.float32)
Z0 = rng.standard_normal((2, 24)).astype(np.float32)
TABLE = rng.standard_normal((13, 19)).astype(np.float32)
IDS = np.array([[4, 4, 0], [12, -1, 4]], np.int32)
BIAS = rng.standard_normal(19).astype(np.float32)
ROW = rng.standard_normal(33).astype(np.float32)
H = rng.standard_normal((6, 50)).astype(np.float16)
XI = rng.integers(-50, 50, (10, 7)).astype(np.int32)
COLI = rng.integers(-5, 5, (10, 1)).astype(np.int32)
T16 = rng.standard_normal((6, 33)).astype(np.float16)
I8 = rng.integers(0, 6, (2, 2, 3)).astype(np.uint8)


@fs.fused_kernel
def views(a, b, c3, x3, y3, z0, table, ids, bias, row, h, xi, coli, t16, i8):
    s = fs.concatenate([a, c3], 1)
    return (
        fs.relu(fs.concatenate([a, b], 1))[:, 8:40],                 # the headline: concat + slice
        fs.concatenate([a, z0, a], 0) * 2.0,                         # axis 0, three inputs
        fs.exp(fs.concatenate([a, c3, b], 1)),                       # last axis, odd widths
        fs.concatenate([x3, y3], 2) - 1.0,                           # last axis of 3-D
        fs.concatenate([x3, x3[:, :2]], 1) + 0.5,                    # middle axis of 3-D (pieces)
        b[1:-1:2, -33:] + row,                                       # outer step, negative bounds, tail
        b[3:4, 7:8] * 3.0,                                           # size-1 slice
        fs.relu(fs.take(table, ids) + bias),                         # gather + bias + relu
        (h[::2, 3:] * 2).astype(fs.float32),                         # float16, odd start
        fs.relu(s)[:, 2:], fs.exp(s)[:, 2:],                         # two outputs, both sliced
        (xi[::3] + coli[::3]) * 3,                                   # int32, a broadcast column
        fs.sigmoid(fs.take(t16, i8)),                                # float16 rows, uint8 3-D indices
    )


ARGS = (A, B, C3, X3, Y3, Z0, TABLE, IDS, BIAS, ROW, H, XI, COLI, T16, I8)
NAMES = "a b c3 x3 y3 z0 table ids bias row h xi coli t16 i8".split()


def expected():
    return (
        np.maximum(np.concatenate([A, B], 1), 0)[:, 8:40],
        np.concatenate([A, Z0, A], 0) * np.float32(2.0),
        np.exp(np.concatenate([A, C3, B], 1)),
        np.concatenate([X3, Y3], 2) - np.float32(1.0),
        np.concatenate([X3, X3[:, :2]], 1) + np.float32(0.5),
        B[1:-1:2, -33:] + ROW,
        B[3:4, 7:8] * np.float32(3.0),
        np.maximum(TABLE[IDS] + BIAS, 0),
        (H[::2, 3:] * np.float16(2)).astype(np.float32),
        np.maximum(np.concatenate([A, C3], 1), 0)[:, 2:], np.exp(np.concatenate([A, C3], 1))[:, 2:],
        (XI[::3] + COLI[::3]) * 3,
        (1 / (1 + np.exp(-T16[I8].astype(np.float32)))).astype(np.float16),
    )


def _check(outs, rtol=0):
    for n, (got, want) in enumerate(zip(outs, expected())):
        assert got.shape == want.shape and got.dtype == want.dtype, n
        if rtol:
            tol = 1e-3 if want.dtype == np.float16 else rtol
            np.testing.assert_allclose(got, want, rtol=tol, err_msg=f"output {n}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"output {n}")


@pytest.fixture(scope="module")
def k910():
    return views.compile(*ARGS, target="ascend910b")


def test_every_view_is_fused_into_its_consumer(k910):
    rows = k910.report().kernels
    assert len(rows) == 12   # one kernel per output shape; no slice/concatenate/take kernel of its own
    for r in rows:
        assert r.ops[-1] not in ("slice", "concatenate", "take") or len(r.ops) > 1
    assert all(p.schedule is not None and p.schedule.views is not None for p in k910.kernels)


def test_llvm_and_tile_interpreter_agree_with_numpy(k910):
    _check(views(*ARGS), rtol=1e-6)
    results = dict(zip([id(v) for v in k910.module.main.results], expected()))
    for p, call in zip(k910.kernels, [op for op in k910.module.main.ops if op.name == "call"]):
        wants = [results[id(v)] for v in call.results]
        outs = [np.zeros(w.shape, w.dtype) for w in wants]
        ins = [ARGS[NAMES.index(q.value.name)] for q in p.function.params]
        run_kernel(kernel_ir(p.schedule), ins, outs, kernel_words(p.schedule, p.tiling))
        for out, want in zip(outs, wants):
            np.testing.assert_allclose(out, want, rtol=1e-3 if want.dtype == np.float16 else 1e-6)


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_printed_ascendc_agrees_with_numpy(target, k910):
    k = k910 if target == "ascend910b" else views.compile(*ARGS, target=target)
    _check(k.simulate(*ARGS), rtol=1e-6)
    src = k.source
    # the box table in the tiling struct; gathered rows read their index from GM, one row each
    assert "tiling.box[bx + " in src and "int64_t k = static_cast<int64_t>(gm_p_" in src
    if target == "ascend310p":   # no DataCopyPad there: the bad index check happens on the host too
        with pytest.raises(fs.FusedslError, match=r"test_views.py:\d+: take: index 13 is out of range"):
            k.simulate(*ARGS[:7], np.array([[0, 13, 1], [0, 0, 0]], np.int32), *ARGS[8:])


def test_headline_reads_only_the_columns_it_needs():
    @fs.fused_kernel
    def f(a, b):
        return fs.relu(fs.concatenate([a, b], 1))[:, 8:40]
    a = rng.standard_normal((64, 24)).astype(np.float32)
    b = rng.standard_normal((64, 40)).astype(np.float32)
    k = f.compile(a, b)
    assert len(k.kernels) == 1 and k.kernels[0].reason_code == "FS100"
    np.testing.assert_array_equal(f(a, b), np.maximum(np.concatenate([a, b], 1), 0)[:, 8:40])
    # minimum traffic: a[:, 8:24] and b[:, 0:16] read, [64, 32] written
    assert k.kernels[0].tiling.boxes[0][:6] == (0, 64, 16, 64, 0, 32)


def test_out_of_range_index_names_the_take_line():
    with pytest.raises(fs.FusedslError, match=r"test_views.py:\d+: take: index -14 is out of range for axis 0 "
                                              r"of size 13 \(position 4 of the indices\)"):
        views(*ARGS[:7], np.array([[0, 1, 2], [3, -14, 0]], np.int32), *ARGS[8:])


def test_step_on_the_last_axis_stays_a_kernel_with_fs114():
    @fs.fused_kernel
    def f(x):
        return fs.relu(x[:, ::2])
    x = rng.standard_normal((4, 10)).astype(np.float32)
    k = f.compile(x)
    np.testing.assert_array_equal(f(x), np.maximum(x[:, ::2], 0))
    codes = [r.reason_code for r in k.report().kernels]
    assert "FS114" in codes and len(codes) == 2
    assert "step of 2 on the last axis" in next(r.reason for r in k.report().kernels if r.reason_code == "FS114")


def test_wide_rows_are_cut_into_aligned_column_chunks():
    @fs.fused_kernel
    def f(a, b):
        return fs.concatenate([a, b], 1)[:, 3:] * 2.0
    a = rng.standard_normal((2, 70001)).astype(np.float32)
    b = rng.standard_normal((2, 9)).astype(np.float32)
    k = f.compile(a, b)
    p = k.kernels[0]
    assert len(p.tiling.boxes) > 2   # the first box is wider than a tile
    want = np.concatenate([a, b], 1)[:, 3:] * np.float32(2)
    np.testing.assert_array_equal(f(a, b), want)
    out = np.zeros_like(want)
    run_kernel(kernel_ir(p.schedule), [a, b], [out], kernel_words(p.schedule, p.tiling))
    np.testing.assert_array_equal(out, want)


def test_disable_passes_views_keeps_views_as_kernels():
    k = views.compile(*ARGS, disable_passes=["views"])
    ops = [r.ops for r in k.report().kernels]
    assert ["concatenate"] in ops and ["take"] in ops
    _check(k(*ARGS), rtol=1e-6)


def test_symbolic_shapes_keep_the_view_a_kernel():
    @fs.fused_kernel
    def f(x, y):
        return fs.relu(fs.concatenate([x, y], 1))
    k = f.compile(fs.spec(("M", 4), "float32"), fs.spec(("M", 3), "float32"))
    codes = [r.reason_code for r in k.report().kernels]
    assert codes.count("FS114") == 1 and "static shapes" in k.report().kernels[0].reason
    x, y = rng.standard_normal((5, 4)).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_array_equal(f(x, y), np.maximum(np.concatenate([x, y], 1), 0))


@st.composite
def _view_graphs(draw):
    rank = draw(st.integers(1, 3))
    axis = draw(st.integers(0, rank - 1))
    base = [draw(st.integers(1, 6)) for _ in range(rank)]
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        shape = list(base)
        shape[axis] = draw(st.integers(1, 9))
        parts.append(shape)
    joined = list(base)
    joined[axis] = sum(p[axis] for p in parts)
    index = []
    for d, n in enumerate(joined):
        lo = draw(st.integers(-n, n - 1))
        hi = draw(st.one_of(st.none(), st.integers(-n, n)))
        step = 1 if d == rank - 1 else draw(st.integers(1, 3))
        index.append(slice(lo, hi, step))
    if len(range(*slice(*index[-1].indices(joined[-1])).indices(joined[-1]))) == 0:
        index[-1] = slice(None)
    where = draw(st.sampled_from(["before", "after"]))
    return parts, axis, tuple(index), where


@fuzz_settings(0.1)
@given(_view_graphs())
def test_random_concat_slice_chains_match_numpy(g):
    parts, axis, index, where = g
    xs = [rng.standard_normal(p).astype(np.float32) for p in parts]
    want_full = np.concatenate(xs, axis)
    if 0 in want_full[index].shape:
        return

    def tail(ts):
        c = fs.concatenate(list(ts), axis)
        return fs.relu(c)[index] * 2.0 if where == "after" else fs.relu(c[index]) * 2.0

    bodies = {1: lambda a: tail([a]), 2: lambda a, b: tail([a, b]), 3: lambda a, b, c: tail([a, b, c])}
    f = fs.fused_kernel(bodies[len(xs)])
    want = np.maximum(want_full, 0)[index] * np.float32(2)
    np.testing.assert_array_equal(f(*xs), want)
    k = f.compile(*xs)
    p = k.kernels[-1]
    if p.schedule is not None and p.schedule.views is not None and len(k.kernels) == 1:
        out = np.zeros(want.shape, want.dtype)
        run_kernel(kernel_ir(p.schedule), xs, [out], kernel_words(p.schedule, p.tiling))
        np.testing.assert_array_equal(out, want)


def test_op_project_of_a_view_kernel_says_to_use_the_kernel_layout(k910, tmp_path):
    with pytest.raises(fs.FusedslError, match=r"slice/concatenate/take views.*\n(.*\n)*.*layout='kernel'"):
        k910.save(str(tmp_path / "op"), layout="op")


def _depthwise_taps(x, w):
    """A hand-written depthwise 3x3 convolution: zero padding by concatenation, nine shifted
    slices times their per-channel weights."""
    zr = fs.zeros_like(x[:, :, :1, :])
    xp = fs.concatenate([zr, x, zr], axis=2)
    zc = fs.zeros_like(xp[:, :, :, :1])
    xp = fs.concatenate([zc, xp, zc], axis=3)
    h, wd = x.shape[2], x.shape[3]
    y = None
    for i in range(3):
        for j in range(3):
            t = xp[:, :, i:i + h, j:j + wd] * w[:, :, i:i + 1, j:j + 1]
            y = t if y is None else y + t
    return y


@pytest.mark.parametrize("target", ["ascend910b", "ascend910"])
def test_view_copied_into_several_kernels_keeps_its_inputs(target):
    """The padded input's concatenation is copied into each of the kernels the queue limit
    splits the taps into; the zeros it reads stayed a kernel of their own, but joined one of
    those kernels ("a vector kernel read only through the views of another"), leaving the
    others to read a value no kernel wrote: the compile failed with use-before-def in main."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 16, 21, 19)).astype(np.float32)
    w = rng.standard_normal((1, 16, 3, 3)).astype(np.float32)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = sum(xp[:, :, i:i + 21, j:j + 19] * w[:, :, i:i + 1, j:j + 1] for i in range(3) for j in range(3))
    k = fs.fused_kernel(_depthwise_taps).compile(x, w, target=target)
    assert len(k.kernels) > 1   # the case: the taps do not fit one kernel's queues
    np.testing.assert_allclose(k(x, w), want, rtol=1e-5, atol=1e-5)
    if target == "ascend910b":
        np.testing.assert_allclose(k.simulate(x, w), want, rtol=1e-5, atol=1e-5)
