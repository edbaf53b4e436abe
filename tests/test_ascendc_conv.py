"""conv2d kernels printed as Ascend C (im2col per core and image into a GM panel, the Matmul API,
the epilogue on each C tile in UB) and run on the CPU implementation of the API: results
against an independent numpy conv on 910B and 310P, strides 1 and 2, padding 0 and 1, sizes
that are not multiples of 16; kernel(*arrays) on the same kernels; the errors at the user's line."""
import os
import traceback

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import PACKAGE_DIR, covering, fuzz_settings


def numpy_conv(x, w, stride, pad):
    """NCHW x KCRS in float64 by explicit im2col (independent of fusedsl)."""
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    p, q = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - s) // stride + 1
    cols = np.empty((n, c, r, s, p, q))
    for i in range(r):
        for j in range(s):
            cols[:, :, i, j] = xp[:, :, i:i + stride * p:stride, j:j + stride * q:stride]
    return np.einsum("ncrspq,kcrs->nkpq", cols, w.astype(np.float64))


def leaky(y, alpha=0.1):
    return np.where(y >= 0, y, alpha * y)


def _close(got, want, tol):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    err = np.abs(got - want).max() if got.size else 0.0
    assert err <= tol * (1 + np.abs(want).max()), err


TOL = {"float16": 4e-3, "bfloat16": 3e-2, "float32": 1e-5}


def _conv_bias_leaky(target, stride, pad):
    @fs.fused_kernel(target=target, single_kernel=True)
    def conv_bias_leaky(x, w, b):
        return fs.leaky_relu(fs.conv2d(x, w, b, stride=stride, padding=pad), 0.1)
    return conv_bias_leaky


@pytest.mark.parametrize("target,dtype,stride,pad", covering(
    [("ascend910b", "float16"), ("ascend310p", "float16"), ("ascend910b", "float32"), ("ascend910b", "bfloat16")],
    [(1, 1), (2, 0), (2, 1), (1, 0)]) + [("ascend310p", "float16", 1, 0), ("ascend910b", "float16", 2, 1)])
def test_conv_bias_leaky_relu_is_one_printed_kernel(target, dtype, stride, pad):
    f = _conv_bias_leaky(target, stride, pad)
    rng = np.random.default_rng(stride * 10 + pad)
    dt = fs.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    x = rng.standard_normal((2, 5, 13, 10)).astype(dt)
    w = (rng.standard_normal((19, 5, 3, 3)) * 0.3).astype(dt)
    b = rng.standard_normal(19).astype(dt)
    c = f.compile(x, w, b)
    assert [p.kind for p in c.kernels] == ["cube"]
    src = c.source
    assert src.index("REGIST_MATMUL_OBJ") < src.index("op.Process(&pipe)")
    assert "AscendC::Gather(pan, xr, offs" in src and "BuildPanel();" in src and "GetUserWorkspace" in src
    assert ("KERNEL_TYPE_MIX_AIC_1_2" in src) == (target == "ascend910b")
    want = leaky(numpy_conv(x, w, stride, pad) + b.astype(np.float64)[None, :, None, None])
    got = c.simulate(x, w, b)
    _close(got, want, TOL[dtype])
    _close(c(x, w, b), want, TOL[dtype])
    rep = c.report()
    assert "im2col inside the kernel" in str(rep) and rep.gm_bytes_measured > rep.gm_bytes_min


@given(n=st.integers(1, 2), c=st.integers(1, 6), h=st.integers(3, 12), wd=st.integers(3, 21),
       k=st.integers(1, 20), r=st.integers(1, 3), s=st.integers(1, 3), stride=st.integers(1, 2),
       pad=st.integers(0, 1), target=st.sampled_from(["ascend910b", "ascend310p"]), data=st.data())
@fuzz_settings(0.006)
def test_generated_convs_with_epilogues_agree_with_numpy(n, c, h, wd, k, r, s, stride, pad, target, data):
    if h + 2 * pad < r or wd + 2 * pad < s:
        return
    epilogue = data.draw(st.sampled_from(["bias_relu", "residual_gelu", "pixel_scale_cast", "none"]))
    rng = np.random.default_rng(n * 1000 + c * 100 + h * 10 + wd)
    x = rng.standard_normal((n, c, h, wd)).astype(np.float16)
    w = (rng.standard_normal((k, c, r, s)) * 0.3).astype(np.float16)
    p, q = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - s) // stride + 1
    conv = numpy_conv(x, w, stride, pad)
    if epilogue == "bias_relu":
        def fn(x, w, b):
            return fs.relu(fs.conv2d(x, w, b, stride=stride, padding=pad))
        extra = [rng.standard_normal(k).astype(np.float16)]
        want = np.maximum(conv + extra[0].astype(np.float64)[None, :, None, None], 0)
    elif epilogue == "residual_gelu":
        def fn(x, w, res):
            return fs.gelu(fs.conv2d(x, w, stride=stride, padding=pad)) + res
        extra = [rng.standard_normal((n, k, p, q)).astype(np.float16)]
        g = conv.astype(np.float16).astype(np.float64)
        want = 0.5 * g * (1 + np.tanh(0.7978845608 * (g + 0.044715 * g ** 3))) + extra[0]
    elif epilogue == "pixel_scale_cast":
        def fn(x, w, sc):
            return fs.cast(fs.conv2d(x, w, stride=stride, padding=pad) * sc, "float32")
        extra = [rng.standard_normal((p, q)).astype(np.float16)]
        want = conv.astype(np.float16).astype(np.float64) * extra[0]
    else:
        def fn(x, w):
            return fs.conv2d(x, w, stride=stride, padding=pad)
        extra = []
        want = conv
    f = fs.fused_kernel(fn, target=target, single_kernel=True)
    ck = f.compile(x, w, *extra)
    _close(ck.simulate(x, w, *extra), want, 8e-3)
    _close(ck(x, w, *extra), want, 8e-3)


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_conv_epilogue_with_a_runtime_scalar(target):
    @fs.fused_kernel(target=target)
    def f(x, w, b, alpha):
        return fs.leaky_relu(fs.conv2d(x, w, b, stride=2, padding=1), alpha)

    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 9, 12)).astype(np.float16)
    w = (rng.standard_normal((6, 3, 3, 3)) * 0.3).astype(np.float16)
    b = rng.standard_normal(6).astype(np.float16)
    c = f.compile(x, w, b, fs.scalar("alpha", "float16"))
    assert [p.kind for p in c.kernels] == ["cube"]
    for alpha in (0.2, -1.5):
        y = numpy_conv(x, w, 2, 1) + b.astype(np.float64)[None, :, None, None]
        want = np.where(y >= 0, y, alpha * y)
        _close(c.simulate(x, w, b, alpha), want, 8e-3)
        _close(c(x, w, b, alpha), want, 8e-3)


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_conv_epilogue_with_where_and_a_bool_mask_output(target):
    @fs.fused_kernel(target=target)
    def f(x, w, b):
        y = fs.conv2d(x, w, b, stride=1, padding=1)
        return fs.where(y > 0, y, y * 0.1), y >= 0.5

    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 7, 9)).astype(np.float16)
    w = (rng.standard_normal((5, 3, 3, 3)) * 0.3).astype(np.float16)
    b = rng.standard_normal(5).astype(np.float16)
    c = f.compile(x, w, b)
    assert [p.kind for p in c.kernels] == ["cube"]
    got = c.simulate(x, w, b)
    y = (numpy_conv(x, w, 1, 1) + b.astype(np.float64)[None, :, None, None]).astype(np.float16)
    _close(got[0], np.where(y > 0, y, y * np.float16(0.1)), 8e-3)
    np.testing.assert_array_equal(got[1], c(x, w, b)[1])   # same float16 conv values on both executors
    assert got[1].dtype == np.bool_ and abs(int(got[1].sum()) - int((y >= 0.5).sum())) <= 2


def test_conv_panel_rows_too_far_apart_for_one_dma_go_row_by_row():
    """One core on 310P (P*Q*2 B is not a 64-byte multiple) with panel rows of 1102101 float16:
    the gap between a chunk's rows is more than 65535 32-byte blocks (DataCopyParams' limit), so
    the panel rows go out through CopyRowsOut, which moves each row by its own DMA on 310P."""
    @fs.fused_kernel(target="ascend310p")
    def f(x, w):
        return fs.relu(fs.conv2d(x, w))

    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 1, 1101, 1001)).astype(np.float16)
    w = rng.standard_normal((2, 1, 1, 2)).astype(np.float16)
    c = f.compile(x, w)
    assert "CopyRowsOut(gm_panel[ch * kTaps * kPanelN + j * kChunk], pan, kTaps, kChunk, kPanelN, kChunk);" in c.source
    _close(c.simulate(x, w), np.maximum(numpy_conv(x, w, 1, 0), 0), 4e-3)


def test_ascend910_conv_is_a_clear_error():
    f = _conv_bias_leaky("ascend910", 1, 1)
    x = np.ones((1, 2, 5, 5), np.float16)
    with pytest.raises(fs.TargetError) as info:
        f.compile(x, np.ones((3, 2, 3, 3), np.float16), np.ones(3, np.float16))
    msg = str(info.value)
    assert "ascend910 has no Matmul high-level API" in msg
    assert f"{os.path.basename(__file__)}:" in msg and "fs.conv2d(x, w, b" in msg


def test_310p_float32_conv_names_the_missing_form():
    f = _conv_bias_leaky("ascend310p", 1, 1)
    x = np.ones((1, 2, 5, 5), np.float32)
    with pytest.raises(fs.ScheduleError) as info:
        f.compile(x, np.ones((3, 2, 3, 3), np.float32), np.ones(3, np.float32))
    msg = str(info.value)
    assert "no float32 x float32 -> float32 form" in msg and "cast the operands to float16" in msg
    assert f"{os.path.basename(__file__)}:" in msg


def test_single_kernel_conv_too_wide_for_ub_names_the_bytes():
    f = _conv_bias_leaky("ascend910b", 1, 0)
    x = np.ones((1, 64, 3, 40000), np.float16)   # one chunk's input rows exceed a third of UB
    with pytest.raises(fs.ScheduleError) as info:
        f.compile(x, np.ones((4, 64, 3, 3), np.float16), np.ones(4, np.float16))
    msg = str(info.value)
    assert "FS110: the im2col stage of the conv2d needs" in msg and "bytes of UB" in msg
    assert "of 196352 are allowed" in msg and f"{os.path.basename(__file__)}:" in msg


def test_conv_epilogue_with_an_unsupported_operand_shape_is_located():
    @fs.fused_kernel(target="ascend910b")
    def f(x, w, t):
        return fs.conv2d(x, w) + t   # t varies per image and pixel, not per channel

    x = np.ones((2, 3, 6, 6), np.float16)
    c = f.compile(x, np.ones((4, 3, 3, 3), np.float16), np.ones((2, 1, 4, 4), np.float16))
    with pytest.raises(fs.ScheduleError) as info:
        c.source
    msg = str(info.value)
    assert "is not printed yet" in msg and f"{os.path.basename(__file__)}:" in msg
    # k.source is a public entry point: fusedsl's frames are cut down to that one
    frames = traceback.extract_tb(info.value.__traceback__)
    assert len([f for f in frames if os.path.abspath(f.filename).startswith(PACKAGE_DIR + os.sep)]) <= 1


def test_conv_cores_split_pixels_not_channels():
    """Each core builds the panel of its own pixels once: channel blocks would rebuild it."""
    f = _conv_bias_leaky("ascend910b", 1, 1)
    x = np.zeros((1, 8, 20, 20), np.float16)
    c = f.compile(x, np.zeros((64, 8, 3, 3), np.float16), np.zeros(64, np.float16))
    sched = c.kernels[0].row
    assert sched.tiling_fields.single_core_m == 64 and sched.used_cores > 1
    assert sched.conv.panel_n % sched.conv.chunk == 0


def test_conv_kernels_share_their_panel_stage_and_its_text_equals_a_fresh_print(monkeypatch):
    """lower/conv_tile.build_panel hands the conv kernels of one layout (x's name, dtype, target) one
    BuildPanel Stage, and printer_kernel keeps that stage's text by the object (_STAGE_TEXT, from
    its second print): every kernel's text equals a print with the memos emptied, and the same
    stage under another context (a GM tensor's C++ name) prints afresh."""
    from fusedsl.backend_ascendc import printer_kernel as pk
    from fusedsl.backend_ascendc.printers import printer_for_plan
    from fusedsl.lower.kinds import kernel_ir

    def f(x, w):
        return fs.relu(fs.conv2d(x, w, padding=1))

    shapes = [((1, 3, 9, 9), (4, 3, 3, 3)), ((2, 3, 10, 7), (5, 3, 3, 3)), ((1, 4, 12, 12), (8, 4, 3, 3)),
              ((1, 2, 6, 6), (3, 2, 1, 1))]
    ks = [fs.fused_kernel(f, target="ascend910b").compile(np.ones(a, np.float32), np.ones(b, np.float32))
          for a, b in shapes]
    panels = [next(st for st in kernel_ir(k.kernels[0].lowered).stages if st.name == "BuildPanel") for k in ks]
    assert all(p is panels[0] for p in panels)   # one object for the layout
    half = fs.fused_kernel(f, target="ascend910b").compile(np.ones((1, 3, 9, 9), np.float16),
                                                            np.ones((4, 3, 3, 3), np.float16))
    assert next(st for st in kernel_ir(half.kernels[0].lowered).stages if st.name == "BuildPanel") is not panels[0]
    monkeypatch.setattr(pk, "_STAGE_TEXT", {})
    monkeypatch.setattr(pk, "_STAGE_SEEN", {})
    texts = [k.source for k in ks]
    assert any(hit[0] is panels[0] for hit in pk._STAGE_TEXT.values())   # kept from its second print
    for k, text in zip(ks, texts):   # each afresh: no kernel text, no stage text kept
        monkeypatch.setattr(pk, "KERNEL_TEXT", {})
        monkeypatch.setattr(pk, "_STAGE_TEXT", {})
        monkeypatch.setattr(pk, "_STAGE_SEEN", {})
        k._source = None
        assert k.source == text
    for k in ks[:3]:   # the kept stage text again, then the same stage under another GM name
        k._source = None
        assert k.source == texts[ks.index(k)]
    plan, target = ks[2].kernels[0], ks[2].target
    monkeypatch.setattr(pk, "KERNEL_TEXT", {})
    other = printer_for_plan(plan, target)
    other.gm_name = {**other.gm_name, "panel": "scratch"}
    text = other.kernel()
    assert "gm_scratch[" in text and "gm_panel[" not in text.split("BuildPanel()\n")[-1]
