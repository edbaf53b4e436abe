"""The API surface CANN's vector samples use (issue 11 item 2), against numpy: event_t and
TPipe::FetchEventID(HardEvent), LocalTensor operator expressions, GlobalTensor::address_,
Copy (count and mask/repeat forms), InitGlobalMemory, level-0 Compare with Select mode 0,
DumpTensor, printf and ASSERT (tests/ascendc_kernels/api_surface_kernels.cpp, one build)."""
import os

import numpy as np
import pytest
from conftest import ASCENDC_KERNELS

from fusedsl.backend_ascendc import cpu_runner
from fusedsl.errors import AscendCCheckError

pytestmark = pytest.mark.usefixtures("private_cache_dir")
M = 256


@pytest.fixture(scope="module")
def lib():
    with open(os.path.join(ASCENDC_KERNELS, "api_surface_kernels.cpp"), encoding="utf-8") as f:
        return cpu_runner.build(f.read(), name="api_surface_kernels")


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_surface_against_numpy(lib, capfd, target):
    blocks = 2
    rng = np.random.default_rng(7)
    x = rng.standard_normal(blocks * M).astype(np.float32)
    y = rng.standard_normal(blocks * M).astype(np.float32)
    out = np.zeros(blocks * 6 * M, np.float32)
    init = np.zeros(blocks * 16, np.float32)
    lib.launch("surface", blocks, [("x", x), ("y", y), ("out", out), ("init", init)], target=target)
    np.testing.assert_array_equal(init, 2.5)
    for blk in range(blocks):
        a, b = x[blk * M:(blk + 1) * M], y[blk * M:(blk + 1) * M]
        o = out[blk * 6 * M:(blk + 1) * 6 * M].reshape(6, M)
        np.testing.assert_array_equal(o[0], a * b)
        np.testing.assert_array_equal(o[1], a - b)
        np.testing.assert_array_equal(o[2], a)
        want3 = np.zeros(M, np.float32)
        want3[0:32], want3[128:160] = b[0:32], b[64:96]     # src repeats 256 B apart, dst 512 B
        np.testing.assert_array_equal(o[3], want3)
        lanes = np.arange(M) % 64                           # mode 0: repeat r reuses bits 0..63
        np.testing.assert_array_equal(o[4], np.where(a[lanes] < b[lanes], a, b))
        bits = np.packbits(a > b, bitorder="little")
        np.testing.assert_array_equal(o[5].view(np.uint8)[:M // 8], bits)
    printed = capfd.readouterr().out
    a1 = x[M:M + 4]
    assert printed.startswith("DumpTensor: desc=7, addr=0, data_type=float, position=UB\n[" +
                              ", ".join(f"{v:f}" for v in a1) + "]\n")
    assert f"block 1 sum0 {np.float32(a1[0] * y[M]) + np.float32(a1[0] - y[M]):f}" in printed


def test_assert_reports_the_expression_and_place(lib):
    x = np.zeros(16, np.int32)
    with pytest.raises(AscendCCheckError, match=r"ASSERT\(g.GetValue\(0\) == 7 && \"the first word must be 7\"\) "
                                                r"failed at .*api_surface_kernels.cpp:\d+"):
        lib.launch("assert_fails", 1, [("x", x)])
    x[0] = 7
    lib.launch("assert_fails", 1, [("x", x)])


def test_select_mode_rules_per_chip(lib):
    x = np.zeros(2 * M, np.float32)
    args = [("x", x), ("y", x.copy()), ("out", np.zeros(12 * M, np.float32)), ("init", np.zeros(32, np.float32))]
    lib.launch("surface", 2, args, target="ascend910")   # mode 0 is the one 910A has
    lib.launch("select_mode2", 1, [("x", x)], target="ascend310p")
    with pytest.raises(AscendCCheckError, match="Select: SELMODE::VSEL_TENSOR_TENSOR_MODE is not supported on "
                                                "ascend910, which has mode 0"):
        lib.launch("select_mode2", 1, [("x", x)], target="ascend910")


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_gather_mask(lib, target):
    x = np.arange(128, dtype=np.float32) + 0.5
    out = np.zeros(3 * 128, np.float32)
    cnt = np.zeros(8, np.uint64)
    lib.launch("gather_mask", 1, [("x", x), ("out", out), ("cnt", cnt)], target=target)
    o = out.reshape(3, 128)
    odd = x[1::2]
    np.testing.assert_array_equal(o[0, :64], odd)
    user = x[(np.arange(128) % 4 == 0) | (np.arange(128) % 4 == 3)]
    np.testing.assert_array_equal(o[1, :64], user)
    # counter mode: 2201 takes the first 40 lanes of each of the 2 repeats, 2002 40 elements in all
    counted = (np.r_[x[:40], x[64:104]] if target == "ascend910b" else x[:40])[::2]
    np.testing.assert_array_equal(o[2, :counted.size], counted)
    assert cnt[:3].tolist() == [64, 64, counted.size]


def test_gather_mask_rules(lib):
    args = [("x", np.zeros(128, np.float32)), ("out", np.zeros(384, np.float32)), ("cnt", np.zeros(8, np.uint64))]
    with pytest.raises(AscendCCheckError, match="GatherMask is not available on ascend910"):
        lib.launch("gather_mask", 1, args, target="ascend910")


def test_list_tensor_desc_add_n(lib):
    rng = np.random.default_rng(9)
    xs = [rng.standard_normal(M).astype(np.float32) for _ in range(3)]
    words = [8 * (1 + 2 * len(xs))]
    for i in range(len(xs)):
        words += [1 | (i << 32), M]
    words += [x.ctypes.data for x in xs]
    lst = np.array(words, np.uint64)
    out = np.zeros(M, np.float32)
    lib.launch("add_n", 1, [("list", lst), ("out", out)] + [(f"x{i}", x) for i, x in enumerate(xs)])
    want = np.zeros(M, np.float32)
    for x in xs:
        want = want + x
    np.testing.assert_array_equal(out, want)
    lst[0] = 8 * 9              # the pointer array moved past the end of the list
    with pytest.raises(AscendCCheckError, match="ListTensorDesc::Init"):
        lib.launch("add_n", 1, [("list", lst), ("out", out)] + [(f"x{i}", x) for i, x in enumerate(xs)])


def _pad_tiling(lib, h, w, ori, stack, unpad):
    import ctypes
    words = np.zeros(32, np.uint32)
    maxmin = np.zeros(2, np.uint32)
    fn = lib._lib.fusedsl_pad_tiling
    fn.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint32, ctypes.c_uint32,
                   ctypes.c_void_p, ctypes.c_void_p]
    fn(h, w, ori, stack, int(unpad), words.ctypes.data, maxmin.ctypes.data)
    return words, maxmin


def _pad_run(lib, x, words, unpad, left, right, value, scratch):
    params = np.array([int(unpad), left, right, value, scratch, 0, 0, 0], np.int32)
    out = np.zeros(1024, np.float32)
    lib.launch("pad_case", 1, [("params", params), ("x", x), ("out", out), ("tiling", words)])
    return out


def test_pad_unpad_with_host_tiling(lib):
    rng = np.random.default_rng(11)
    # case 1: 8 x 15 floats (60-byte rows) padded to 8 x 16 with one column on the left
    x = rng.standard_normal(8 * 15).astype(np.float32)
    words, (mx, mn) = _pad_tiling(lib, 8, 15, 15, 1024, False)
    assert (mn, mx) == (64, 8 * 64) and words[:3].tolist() == [8, 15, 15]
    got = _pad_run(lib, x, words, False, 1, 0, 7, int(mn))[:8 * 16].reshape(8, 16)
    np.testing.assert_array_equal(got, np.pad(x.reshape(8, 15), ((0, 0), (1, 0)), constant_values=7))
    # case 2: 8 x 16 with 13 valid columns: the 3 redundant ones take the pad value
    y = rng.standard_normal(8 * 16).astype(np.float32)
    words, _ = _pad_tiling(lib, 8, 16, 13, 1024, False)
    got = _pad_run(lib, y, words, False, 0, 3, -2, 0)[:128].reshape(8, 16)
    want = y.reshape(8, 16).copy()
    want[:, 13:] = -2
    np.testing.assert_array_equal(got, want)
    # UnPad: 8 x 16 -> 8 x 13, rows packed
    words, (mx, mn) = _pad_tiling(lib, 8, 16, 16, 1024, True)
    got = _pad_run(lib, y, words, True, 0, 3, 0, int(mn))
    np.testing.assert_array_equal(got[:8 * 13], y.reshape(8, 16)[:, :13].ravel())
    assert (got[8 * 13:] == -1).all()


def test_pad_rules(lib):
    x = np.zeros(8 * 16, np.float32)
    words, _ = _pad_tiling(lib, 8, 15, 15, 1024, False)
    with pytest.raises(AscendCCheckError, match=r"Pad: width 15 \+ leftPad 0 \+ rightPad 2 = 17 columns of float "
                                                "is not a whole number of 32-byte blocks"):
        _pad_run(lib, x, words, False, 0, 2, 0, 0)
    with pytest.raises(AscendCCheckError, match="Pad: sharedTmpBuffer has 32 bytes; at least 64 are needed"):
        _pad_run(lib, x, words, False, 1, 0, 0, 32)
    words, _ = _pad_tiling(lib, 8, 16, 16, 1024, False)
    with pytest.raises(AscendCCheckError, match="only redundant columns past srcOriWidth 16 can be padded"):
        _pad_run(lib, x, words, False, 0, 1, 0, 0)
    words, _ = _pad_tiling(lib, 8, 16, 16, 1024, True)
    with pytest.raises(AscendCCheckError, match="UnPad: rightPad = 8; it must be at least 1 and take under 32 bytes"):
        _pad_run(lib, x, words, True, 0, 8, 0, 0)


def test_select_mask_repeat_form(lib):
    rng = np.random.default_rng(13)
    a, b = rng.standard_normal(128).astype(np.float32), rng.standard_normal(128).astype(np.float32)
    out = np.zeros(256, np.float32)
    lib.launch("select_l0", 1, [("x", a), ("y", b), ("out", out)])
    lane = np.arange(128) % 64 < 32
    np.testing.assert_array_equal(out[:128], np.where(lane, np.where(a < b, a, b), -1))
    np.testing.assert_array_equal(out[128:], np.where(lane, np.where(a < b, a, 5), -1))
    with pytest.raises(AscendCCheckError, match="VSEL_TENSOR_TENSOR_MODE is not supported on ascend910"):
        lib.launch("select_l0", 1, [("x", a), ("y", b), ("out", out)], target="ascend910")


def test_composites_shifts_index_and_the_compare_register(lib):
    rng = np.random.default_rng(17)
    x, y = (rng.standard_normal(64).astype(np.float32) for _ in range(2))
    h = rng.standard_normal(64).astype(np.float16)
    si = rng.integers(-3000, 3000, 128).astype(np.int16)
    f = np.zeros(5 * 64, np.float32)
    s = np.zeros(4 * 128, np.int16)
    m = np.zeros(32, np.uint8)
    args = [("x", x), ("y", y), ("h", h), ("si", si), ("f", f), ("s", s), ("m", m)]
    lib.launch("more_ops", 1, args)
    f = f.reshape(5, 64)
    np.testing.assert_array_equal(f[0], np.maximum(x + y, 0))
    np.testing.assert_array_equal(f[1], np.maximum(x - y, 0))
    np.testing.assert_array_equal(f[2], np.float32(1) + np.float32(0.5) * x)
    np.testing.assert_array_equal(f[3], np.float32(1) + np.float32(2) * h.astype(np.float32))
    np.testing.assert_array_equal(f[4], np.where(x > y, x, y))
    s = s.reshape(4, 128)
    np.testing.assert_array_equal(s[0], (si.astype(np.int32) << 3).astype(np.int16))
    np.testing.assert_array_equal(s[1], si >> 2)
    np.testing.assert_array_equal(s[2], ((si.astype(np.int32) + 2) >> 2).astype(np.int16))
    np.testing.assert_array_equal(s[3], np.arange(5, 133, dtype=np.int16))
    np.testing.assert_array_equal(m[:8], np.packbits(x > y, bitorder="little"))
    for target, api in (("ascend310p", "ShiftLeft"), ("ascend910", "AddRelu")):
        with pytest.raises(AscendCCheckError, match=f"{api} is not available on {target}"):
            lib.launch("more_ops", 1, args, target=target)


def test_gather_and_gatherb(lib):
    rng = np.random.default_rng(19)
    x = rng.integers(0, 2**31, 128).astype(np.uint32)
    idx = rng.integers(0, 128, 64)
    offs = (idx * 4).astype(np.uint32)
    blocks = rng.permutation(16)[:8]
    boffs = (blocks * 32).astype(np.uint32)
    g = np.zeros(64, np.uint32)
    b = np.zeros(64, np.uint32)
    lib.launch("gathers", 1, [("x", x), ("offs", offs), ("boffs", boffs), ("g", g), ("b", b)])
    np.testing.assert_array_equal(g, x[idx])
    np.testing.assert_array_equal(b, x.reshape(16, 8)[blocks].ravel())
    bad = boffs.copy()
    bad[3] = 4                                    # not a whole block
    with pytest.raises(AscendCCheckError, match=r"Gatherb: offset\[3\] = 4 bytes"):
        lib.launch("gathers", 1, [("x", x), ("offs", offs), ("boffs", bad), ("g", g), ("b", b)])
    with pytest.raises(AscendCCheckError, match="Gatherb is not available on ascend310p"):
        lib.launch("gathers", 1, [("x", x), ("offs", offs), ("boffs", boffs), ("g", g), ("b", b)],
                   target="ascend310p")


def test_asc_dump_gm_and_ubuf(lib, capfd):
    x = np.arange(16, dtype=np.float32) + 0.5
    lib.launch("asc_dumps", 1, [("x", x), ("n", np.zeros(8, np.uint32))])
    out = capfd.readouterr().out
    assert "DumpTensor: desc=7" in out and "position=GM" in out
    assert "DumpTensor: desc=8, addr=0, data_type=float, position=UB\n[0.500000, 1.500000, 2.500000, 3.500000]" in out
    with pytest.raises(AscendCCheckError, match=r"asc_dump_ubuf: 100000 elements from UB offset 0 run past the end "
                                                r"of UB"):
        lib.launch("asc_dumps", 1, [("x", x), ("n", np.full(8, 100000, np.uint32))])


def test_slice_data_copy(lib):
    x = np.arange(3 * 87, dtype=np.float32).reshape(3, 87)
    out = np.zeros(96, np.float32)
    lib.launch("slice_copy", 1, [("x", x), ("out", out), ("bad", np.zeros(8, np.uint32))])
    want = np.concatenate([x[[0, 2], 16:40], x[[0, 2], 47:71]], axis=1)
    np.testing.assert_array_equal(out.reshape(2, 48), want)
    with pytest.raises(AscendCCheckError, match=r"DataCopy\(GM->UB, SliceInfo\): srcSliceInfo\[0\] = \{16, 69, 7, 3, "
                                                r"87\}: endIndex - startIndex \+ 1 must be \(N - 1\) \* stride"):
        lib.launch("slice_copy", 1, [("x", x), ("out", out), ("bad", np.ones(8, np.uint32))])


def test_coord_and_layout_offsets(lib):
    out = np.full(8, -1, np.int32)
    lib.launch("layout_offsets", 1, [("out", out)])
    assert list(out[:4]) == [1 * 5 + 2, 3 * 5, 1 + 2 * 4, 10 + 5 + 2]


def test_trans_data_ncdhw_to_ndc1hwc0_and_back(lib):
    x = np.arange(2 * 20 * 15).astype(np.float16).reshape(2, 20, 1, 3, 5)
    y = np.full((2, 1, 2, 3, 5, 16), -1, np.float16)
    back = np.zeros_like(x)
    lib.launch("trans_data", 1, [("x", x), ("y", y), ("back", back)], target="ascend910b")
    padded = np.pad(x, ((0, 0), (0, 12), (0, 0), (0, 0), (0, 0)))   # C to 2 x 16, zeros
    want = padded.reshape(2, 2, 16, 1, 3, 5).transpose(0, 3, 1, 4, 5, 2)
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(back, x)
