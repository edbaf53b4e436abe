"""The basic cube API on the CPU (tests/ascendc_kernels/cube_basic_kernels.cpp, written from the
asc-devkit docs): Nd2Nz DataCopy into L1, LoadData2D into L0A/L0B, Mmad into L0C, Fixpipe to GM,
static LocalTensor(TPosition, addr, len) and LocalMemAllocator<L1/L0*>, checked against numpy."""
import os
import re
import subprocess
import warnings

import numpy as np
import pytest
from conftest import ASCENDC_KERNELS

from fusedsl.backend_ascendc import cpu_runner
from fusedsl.backend_ascendc.cpu import include_dir as cpu_include_dir
from fusedsl.errors import AscendCCheckError, AscendCWarning

pytestmark = pytest.mark.usefixtures("private_cache_dir")


@pytest.fixture(scope="module")
def lib():
    with open(os.path.join(ASCENDC_KERNELS, "cube_basic_kernels.cpp"), encoding="utf-8") as f:
        return cpu_runner.build(f.read(), name="cube_basic_kernels")


def _run(lib, entry, m, k, n, blocks, out_dtype, target="ascend910b", seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), out_dtype)
    dims = np.array([m, k, n, 0, 0, 0, 0, 0], np.uint32)
    lib.launch(entry, blocks, [("a", a), ("b", b), ("c", c), ("dims", dims)], target=target)
    return a.astype(np.float32) @ b.astype(np.float32), c


@pytest.mark.parametrize("m,k,n,blocks", [(32, 16, 16, 1), (64, 48, 32, 2), (96, 32, 80, 3)])
@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_nd2nz_loaddata_mmad_fixpipe_f16_matches_numpy(lib, m, k, n, blocks, target):
    want, c = _run(lib, "cube_half", m, k, n, blocks, np.float16, target)
    np.testing.assert_allclose(c.astype(np.float32), want.astype(np.float16).astype(np.float32), rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_tque_on_a1_b1_a2_b2_co1_plans_the_cube_memories(lib, target):
    # TPipe::InitBuffer of TQue<A1/B1/A2/B2/CO1> (CANN's MmadInvocation) plans L1, L0A, L0B and L0C; the same
    # product as the LocalMemAllocator kernel, with the queues' AllocTensor/EnQue/DeQue/FreeTensor between stages
    want, c = _run(lib, "cube_half_queues", 64, 48, 32, 2, np.float16, target, seed=3)
    np.testing.assert_allclose(c.astype(np.float32), want.astype(np.float16).astype(np.float32), rtol=1e-3, atol=1e-2)
    with open(os.path.join(ASCENDC_KERNELS, "cube_basic_kernels.cpp"), encoding="utf-8") as f:
        line = next(i for i, text in enumerate(f, 1) if "LINE:queue_overflow" in text)
    with pytest.raises(AscendCCheckError) as info:
        _run(lib, "cube_queue_overflow", 16, 16, 16, 1, np.float32, target)
    assert re.search(rf"cube_basic_kernels\.cpp:{line}: InitBuffer: TQue<A2> plan of L0A needs 81920 bytes, "
                     rf"{target} has 65536", str(info.value)), str(info.value)


def test_static_tensors_accumulate_and_relu_in_float(lib):
    want, c = _run(lib, "cube_float_relu_static", 64, 32, 48, 2, np.float32, seed=1)
    np.testing.assert_allclose(c, np.maximum(2 * want, 0), rtol=1e-5, atol=1e-4)


def _fails(lib, entry, match):
    with pytest.raises(AscendCCheckError, match=match) as info:
        _run(lib, entry, 16, 16, 16, 1, np.float32)
    # located at the kernel's call (a static LocalTensor's constructor included)
    assert re.match(r"fusedsl CPU check \([^)]*\): cube_basic_kernels\.cpp:\d+: ", str(info.value)), str(info.value)


def test_mmad_reading_an_unloaded_l0b_is_refused(lib):
    _fails(lib, "cube_unloaded_b", r"Mmad: b reads L0B offset 0, which was never written")


def test_static_tensor_address_must_be_32_byte_aligned(lib):
    _fails(lib, "cube_misaligned", r"LocalTensor\(TPosition, addr, tileSize\): address 48 of A1 is not 32-byte aligned")


def test_the_vector_cores_of_910b_have_no_cube_unit(lib):
    _fails(lib, "cube_half_in_aiv", r"DataCopy\(GM->L1, Nd2NzParams\): a vector-only kernel \(AIV_MODE, __vector__\) "
                                    r"runs on ascend910b's vector cores, which have no cube unit")


@pytest.mark.parametrize("k,n", [(256, 32), (512, 48)])
def test_mmad_with_m_1_is_gemv_on_a_contiguous_row(lib, k, n):
    want, c = _run(lib, "cube_gemv", 1, k, n, 1, np.float32, seed=k)
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-3)


def test_fixpipe_cfg_nz_writes_16_column_groups(lib):
    m, k, n = 64, 32, 48
    want, c = _run(lib, "cube_nz_out", m, k, n, 2, np.float32, seed=5)
    nz = want.reshape(m, n // 16, 16).transpose(1, 0, 2).reshape(m, n)   # group g: rows of 16, M rows
    np.testing.assert_allclose(c, nz, rtol=1e-5, atol=1e-4)


def _in_order_product(a, b):
    """a @ b with each element's K products summed in order in float32, as the cube model sums them
    (a half x half product is exact in float32)."""
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for kk in range(a.shape[1]):
        acc = acc + a32[:, kk:kk + 1] * b32[kk:kk + 1, :]
    return acc


@pytest.mark.parametrize("m,k,n", [(64, 256, 96), (96, 80, 80)])
def test_mmad_sums_each_element_in_k_order_bit_for_bit(lib, m, k, n):
    # the blocked multiply-accumulate (cube_mac.h: 8 x 32 blocks with AVX-512, 4 x 16 with AVX2, tails by the
    # plain loop) gives the in-order float sums exactly; n = 80 leaves a column tail (the program below has row tails)
    rng = np.random.default_rng(k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    lib.launch("cube_nz_out", 2, [("a", a), ("b", b), ("c", c), ("dims", np.array([m, k, n, 0, 0, 0, 0, 0], np.uint32))])
    want = _in_order_product(a, b)
    np.testing.assert_array_equal(c, want.reshape(m, n // 16, 16).transpose(1, 0, 2).reshape(m, n))


MAC_PROGRAM = r"""
#include "fusedsl_cpu/cube_mac.h"
#include <cstdio>
#include <vector>
int main() {
    // shapes with and without row / column tails; a checksum of every accumulator's bits
    const long shapes[][3] = {{64, 256, 96}, {21, 37, 53}, {128, 130, 64}, {3, 5, 7}, {8, 1, 32}};
    unsigned long long h = 1469598103934665603ull;
    unsigned state = 12345;
    for (const auto& s : shapes) {
        const long m = s[0], k = s[1], n = s[2];
        std::vector<float> a(m * k), b(k * n), c(m * n);
        for (auto* v : {&a, &b, &c}) {
            for (float& x : *v) {
                state = state * 1103515245u + 12345u;
                x = static_cast<float>(static_cast<int>(state >> 8) % 2001 - 1000) / 997.0f;
            }
        }
        fusedsl_cpu::AccumulateRows(c.data(), a.data(), b.data(), m, k, n);
        for (float x : c) {
            unsigned bits;
            std::memcpy(&bits, &x, 4);
            h = (h ^ bits) * 1099511628211ull;
        }
    }
    std::printf("%d %016llx\n", fusedsl_cpu::MacLevel(), h);
}
"""


def test_multiply_accumulate_is_the_same_at_every_vector_width(tmp_path):
    # the AVX-512, AVX2 and portable loops of cube_mac.h give the same bits (no fused multiply-add, K in order)
    src = tmp_path / "mac.cpp"
    src.write_text(MAC_PROGRAM)
    exe = tmp_path / "mac"
    subprocess.run(["g++", "-std=c++17", "-O1", f"-I{cpu_include_dir()}", str(src), "-o", str(exe)], check=True,
                   capture_output=True)
    runs = {}
    for force in ("plain", "avx2", ""):
        env = dict(os.environ, FUSEDSL_CPU_MAC=force)
        level, digest = subprocess.run([str(exe)], env=env, capture_output=True, text=True,
                                       check=True).stdout.split()
        runs[force] = (int(level), digest)
    assert runs["plain"][0] == 0
    assert len({d for _, d in runs.values()}) == 1, runs


def test_set_fix_pipe_config_is_a2_a3_only(lib):
    with pytest.raises(AscendCCheckError, match=r"SetFixPipeConfig is not available on ascend310p"):
        _run(lib, "cube_gemv", 1, 256, 32, 1, np.float32, target="ascend310p")


def test_fill_l1_and_data_copy_between_gm_and_l1(lib):
    k = 64
    a = np.arange(k, dtype=np.float16)
    c = np.zeros(2 * k, np.float16)
    dims = np.array([1, k, 16, 0, 0, 0, 0, 0], np.uint32)
    lib.launch("cube_l1_roundtrip", 1, [("a", a), ("b", a), ("c", c), ("dims", dims)])
    np.testing.assert_array_equal(c[:k], np.full(k, 3, np.float16))
    np.testing.assert_array_equal(c[k:], a)
    dims[3] = 1
    with pytest.raises(AscendCCheckError, match=r"Mmad: fmOffset, enSsparse and the Winograd "
                                                r"switches are not modelled"):
        lib.launch("cube_l1_roundtrip", 1, [("a", a), ("b", a), ("c", c), ("dims", dims)])


# ---- LoadData (卷积数据搬运) v2 --------------------------------------------------------------

def _unfold(fm, kh, kw, sh, sw, dh, dw, pads):
    """The page's image-to-column matrix of an NC1HWC0 map fm [C1, H, W, C0]: row = output pixel,
    column = (c1, kh, kw, c0); pixels outside the map (the padding) are 0."""
    c1n, h, w, c0 = fm.shape
    left, right, top, bottom = pads
    hout = (h + top + bottom - ((kh - 1) * dh + 1)) // sh + 1
    wout = (w + left + right - ((kw - 1) * dw + 1)) // sw + 1
    rows = []
    for oh in range(hout):
        for ow in range(wout):
            row = []
            for c1 in range(c1n):
                for fh in range(kh):
                    for fw in range(kw):
                        ih, iw = oh * sh + fh * dh - top, ow * sw + fw * dw - left
                        inside = 0 <= ih < h and 0 <= iw < w
                        row.append(fm[c1, ih, iw] if inside else np.zeros(c0, fm.dtype))
            rows.append(np.concatenate(row))
    return np.array(rows)


def _as_map(x, c0):
    """A K x N matrix as the [1 x K x N] NC1HWC0 map the 1 x 1 unfolding turns back into it."""
    k, n = x.shape
    return np.ascontiguousarray(x.reshape(k, n // c0, c0).transpose(1, 0, 2)).reshape(n // c0, 1, k, c0)


def _load3d(lib, dtype, mode, fm, conv, block, b, m, k, k_align=False):
    """conv = (kh, kw, sh, sw, dh, dw, pads), block = (mStart, kStart, mExt, kExt) of the A load."""
    c0 = 32 // np.dtype(dtype).itemsize
    kh, kw, sh, sw, dh, dw, pads = conv
    n = b.shape[1]
    dims = np.array([mode, fm.shape[0], fm.shape[1], fm.shape[2], kh, kw, sh, sw, dh, dw, *pads, *block, n, m, k,
                     int(k_align)], np.uint32)
    c = np.zeros((2 * m if mode == 4 else m, n), np.float32)
    entry = "cube_load3d_half" if dtype == np.float16 else "cube_load3d_float"
    lib.launch(entry, 1, [("a", fm), ("b", _as_map(b, c0)), ("c", c), ("dims", dims)], target="ascend910b")
    return c


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_load3d_v2_unfolds_a_padded_strided_dilated_map_into_l0a(lib, dtype):
    rng = np.random.default_rng(5)
    c0 = 32 // np.dtype(dtype).itemsize
    if dtype == np.float16:   # 2 x 3 filter, strides (1, 2), padding; rows 0..14 (the last), columns 32..127
        fm = rng.standard_normal((2, 5, 6, c0)).astype(dtype)
        conv, block = (2, 3, 1, 2, 1, 1, (1, 1, 1, 0)), (0, 32, 15, 96)
    else:                     # 3 x 3 filter dilated by 2, padding 2 all round; rows 0..15, columns 8..71
        fm = rng.standard_normal((3, 4, 4, c0)).astype(dtype)
        conv, block = (3, 3, 1, 1, 2, 2, (2, 2, 2, 2)), (0, 8, 16, 64)
    m0, k0, m, k = block
    a = _unfold(fm, *conv)[m0:m0 + m, k0:k0 + k]
    b = rng.standard_normal((k, 32)).astype(dtype)
    c = _load3d(lib, dtype, 0, fm, conv, block, b, m, k)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("dtype,m,k,n", [(np.float16, 32, 48, 16), (np.float32, 16, 40, 40)])
def test_load3d_v2_transposes_into_l0a(lib, dtype, m, k, n):
    # A^T (K x M) stored as a [1 x K x M] map; enTranspose puts A (M x K) into L0A.  float: K = 40 is held
    # aligned to 48 there, so the Mmad takes kDirectionAlign; B's L0B tensor (N = 40, a multiple of 8) is
    # shorter than the 16-row fractals of the float layout fill: one warning
    rng = np.random.default_rng(6)
    c0 = 32 // np.dtype(dtype).itemsize
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    fm = _as_map(np.ascontiguousarray(a.T), c0)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        c = _load3d(lib, dtype, 1, fm, (1, 1, 1, 1, 1, 1, (0, 0, 0, 0)), (0, 0, k, m), b, m, k, k_align=True)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-4, atol=1e-3)
    texts = [str(w.message) for w in record if issubclass(w.category, AscendCWarning)]
    assert len(texts) == (dtype == np.float32) and all("but dst's LocalTensor has" in t for t in texts), texts


def test_fixpipe_l0c_to_l1_writes_nz_half(lib):
    # Fixpipe(L0C->L1) with F322F16: NZ groups of 16 columns, m rows each (then DataCopy L1->GM)
    rng = np.random.default_rng(8)
    m, k, n = 16, 32, 32
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = _load3d(lib, np.float16, 3, _as_map(a, 16), (1, 1, 1, 1, 1, 1, (0, 0, 0, 0)), (0, 0, m, k), b, m, k)
    nz = c.reshape(-1).view(np.float16)[:m * n].reshape(n // 16, m, 16).transpose(1, 0, 2).reshape(m, n)
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(nz.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)


def test_fixpipe_nd_num_writes_several_matrices(lib):
    # ndNum = 2: the second NZ matrix srcNdStride fractals on in L0C, dstNdStride elements on in GM
    rng = np.random.default_rng(9)
    m, k, n = 20, 32, 48
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = _load3d(lib, np.float16, 4, _as_map(a, 16), (1, 1, 1, 1, 1, 1, (0, 0, 0, 0)), (0, 0, m, k), b, m, k)
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c, np.concatenate([want, want]), rtol=1e-4, atol=1e-3)


def test_load3d_v2_refusals(lib):
    rng = np.random.default_rng(7)
    fm = rng.standard_normal((2, 5, 6, 16)).astype(np.float16)
    b = np.zeros((96, 32), np.float16)
    with pytest.raises(AscendCCheckError, match=r"LoadData\(L1->L0, LoadData3DParamsV2\): rows \[16, 32\) of the "
                                                r"unfolded matrix, which has 15 \(5 x 3 output positions\)"):
        _load3d(lib, np.float16, 0, fm, (2, 3, 1, 2, 1, 1, (1, 1, 1, 0)), (16, 32, 16, 96), b, 16, 96)
    with pytest.raises(AscendCCheckError, match=r"int8_t into L0B is not supported \(the page: L1 Buffer->L0B Buffer "
                                                r"does not take b4/b8 data\)"):
        _run(lib, "cube_load3d_int8_l0b", 16, 16, 16, 1, np.float32)
    # unfolded L1 bytes nothing wrote stay unwritten in L0A: the Mmad reading them fails
    with pytest.raises(AscendCCheckError, match=r"Mmad: a reads L0A offset \d+, which was never written"):
        _load3d(lib, np.float16, 2, fm, (2, 3, 1, 2, 1, 1, (1, 1, 1, 0)), (0, 32, 15, 96), b, 15, 96)


def _transpose_line(marker):
    with open(os.path.join(ASCENDC_KERNELS, "cube_basic_kernels.cpp"), encoding="utf-8") as f:
        return next(i for i, text in enumerate(f, 1) if f"LINE:{marker}" in text)


@pytest.mark.parametrize("dtype,acc,bias_dtype", [(np.int8, np.int32, np.int32), (np.float16, np.float32, np.float16),
                                                  (np.float32, np.float32, np.float32)])
def test_load_data_with_transpose_and_the_bias_table(lib, dtype, acc, bias_dtype):
    # c = a_t^T b + bias: both operands reach L0 through LoadDataWithTranspose, the bias through
    # DataCopy L1 -> C2 (half widened to float), C initialised from the table (cmatrixSource, or the bias form)
    rng = np.random.default_rng(11)
    m, k, n = 32, 64, 32
    if dtype == np.int8:
        a_t, b = (rng.integers(-128, 128, (k, m)).astype(dtype), rng.integers(-128, 128, (k, n)).astype(dtype))
        bias = rng.integers(-1000, 1000, n).astype(bias_dtype)
    else:
        a_t, b = rng.standard_normal((k, m)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
        bias = rng.standard_normal(n).astype(bias_dtype)
    c = np.zeros((m, n), acc)
    entry = {np.int8: "cube_transpose_int8", np.float16: "cube_transpose_half", np.float32: "cube_transpose_float"}
    with warnings.catch_warnings():
        warnings.simplefilter("error", AscendCWarning)   # no warning at all
        lib.launch(entry[dtype], 1, [("a", a_t), ("b", b), ("bias", bias), ("c", c)])
    want = a_t.T.astype(np.float64) @ b.astype(np.float64) + bias.astype(np.float64)
    if dtype == np.int8:
        np.testing.assert_array_equal(c, want.astype(np.int64))
    else:
        np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)


def test_bias_less_mmad_initialises_c_from_bias_table_address_0(lib):
    # CANN's bias-less Mmad hands cmatrixSource to the instruction with no bias-table address (its conv3d keeps
    # its one C2 buffer at BT 0), and isBias clears cmatrixInitVal (asc-devkit dav_c220 kernel_operator_mm_impl.h)
    bias = np.arange(16, dtype=np.float32) - 4
    want = np.broadcast_to(bias + 16, (16, 16))
    for mode in (0, 2):
        c = np.zeros((16, 16), np.float32)
        lib.launch("cube_bias_table_mode", 1, [("bias", bias), ("b", bias), ("c", c),
                                               ("dims", np.array([0, 0, 0, mode], np.uint32))])
        np.testing.assert_array_equal(c, want)
    with pytest.raises(AscendCCheckError) as info:
        lib.launch("cube_bias_table_mode", 1, [("bias", bias), ("b", bias), ("c", np.zeros((16, 16), np.float32)),
                                               ("dims", np.array([0, 0, 0, 1], np.uint32))])
    assert re.search(rf"cube_basic_kernels\.cpp:{_transpose_line('bias_source')}: Mmad: cmatrixSource = true without "
                     r"a bias tensor initialises C from bias-table \(C2\) address 0, where nothing was written "
                     r"\(BT bytes \[0, 64\) for n = 16\)", str(info.value)), str(info.value)


def test_data_copy_l0c_to_gm_with_scalar_quant(lib):
    # DataCopy(L0C -> GM): DEQF16 x 0.5 after ReLU into ND half (NZ2ND), and REQ8 x 1/64 into NZ int8_t
    rng = np.random.default_rng(12)
    m, k, n = 32, 64, 32
    a_t, b = rng.integers(-12, 12, (k, m)).astype(np.int8), rng.integers(-12, 12, (k, n)).astype(np.int8)
    bias = rng.integers(-300, 300, n).astype(np.int32)
    acc = (a_t.T.astype(np.int64) @ b.astype(np.int64) + bias).astype(np.float32)
    h = np.zeros((m, n), np.float16)
    lib.launch("cube_l0c2gm_deq", 1, [("a", a_t), ("b", b), ("bias", bias), ("c", h)])
    np.testing.assert_array_equal(h, (np.maximum(acc, 0) * np.float32(0.5)).astype(np.float16))
    q = np.zeros((n // 32, m, 32), np.int8)
    lib.launch("cube_l0c2gm_req", 1, [("a", a_t), ("b", b), ("bias", bias), ("c", q)])
    want = np.clip(np.rint(acc * np.float32(1 / 64)), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(q.transpose(1, 0, 2).reshape(m, n), want)


def test_data_copy_l0c_to_gm_with_a_scale_per_column(lib):
    # the vector quant modes (the Fixpipe / DataCopy L0C -> GM pages' VDEQF16, VREQ8): what DEQF16 and REQ8 do,
    # with output column j's uint64_t parameter, the j-th of the Fixpipe Buffer table SetFixPipeConfig names
    # (filled from L1 by DataCopy(L1 -> Fixpipe Buffer)); scales of 10 mantissa bits, which the fixpipe keeps
    rng = np.random.default_rng(14)
    m, k, n = 32, 64, 32
    a_t, b = rng.integers(-12, 12, (k, m)).astype(np.int8), rng.integers(-12, 12, (k, n)).astype(np.int8)
    bias = rng.integers(-300, 300, n).astype(np.int32)
    acc = (a_t.T.astype(np.int64) @ b.astype(np.int64) + bias).astype(np.float32)

    def params(scales, signed):
        bits = scales.astype(np.float32).view(np.uint32).astype(np.uint64)
        return np.concatenate([bias.view(np.uint8), (bits | np.uint64(int(signed) << 46)).view(np.uint8)])

    scales = (np.arange(1, n + 1) / 16).astype(np.float32)
    h = np.zeros((m, n), np.float16)
    lib.launch("cube_l0c2gm_vdeq", 1, [("a", a_t), ("b", b), ("bias", params(scales, False)), ("c", h)])
    np.testing.assert_array_equal(h, (acc * scales).astype(np.float16))
    scales = (np.arange(n)[::-1] % 7 + 1) / np.float32(64)
    q = np.zeros((n // 32, m, 32), np.int8)
    lib.launch("cube_l0c2gm_vreq", 1, [("a", a_t), ("b", b), ("bias", params(scales, True)), ("c", q)])
    want = np.clip(np.rint(np.maximum(acc, 0) * scales.astype(np.float32)), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(q.transpose(1, 0, 2).reshape(m, n), want)


def test_vector_quant_needs_its_fixpipe_buffer_table(lib):
    # VDEQF16 with the table in the Fixpipe Buffer but never named by SetFixPipeConfig: refused at the DataCopy
    # line instead of reading whatever the Fixpipe Buffer holds
    z = np.zeros(96, np.int32)   # 32 biases, then 32 uint64_t parameters
    with pytest.raises(AscendCCheckError) as info:
        lib.launch("cube_l0c2gm_vdeq_unset", 1, [("a", np.zeros((64, 32), np.int8)), ("b", np.zeros((64, 32), np.int8)),
                                                 ("bias", z), ("c", np.zeros((32, 32), np.float16))])
    assert re.search(rf"cube_basic_kernels\.cpp:{_transpose_line('vquant')}: \S+: quantPre 4 is a vector quant mode, "
                     r"but no SetFixPipeConfig named the Fixpipe Buffer table of per-channel parameters",
                     str(info.value)), str(info.value)


def test_load_data_with_transpose_rules(lib):
    z = np.zeros(16, np.int32)
    with pytest.raises(AscendCCheckError) as info:
        lib.launch("cube_transpose_misuse", 1, [("a", z), ("b", z), ("bias", z), ("mode", np.array([0], np.int32))])
    assert re.search(rf"cube_basic_kernels\.cpp:{_transpose_line('overlap')}: LoadDataWithTranspose: dstGap = 0 and "
                     r"dstFracGap = 0 put fractal 0 of repeat 1 on a fractal an earlier one wrote", str(info.value))
    with pytest.raises(AscendCCheckError, match=r"DataCopy\(L1->BiasTable\): half -> int32_t; the bias table takes "
                                                r"half -> float, float -> float and int32_t -> int32_t"):
        lib.launch("cube_transpose_misuse", 1, [("a", z), ("b", z), ("bias", z), ("mode", np.array([1], np.int32))])
    with pytest.raises(AscendCCheckError, match=r"LoadDataWithTranspose is not available on ascend310p"):
        lib.launch("cube_transpose_misuse", 1, [("a", z), ("b", z), ("bias", z), ("mode", np.array([0], np.int32))],
                   target="ascend310p")


def test_broadcast_vec_to_mm_and_l0c_to_ub_on_310p(lib):
    x = np.random.default_rng(13).standard_normal(32).astype(np.float32)
    z = np.zeros(512, np.float16)
    args = [("x", x), ("y", x), ("c", x), ("z", z)]
    lib.launch("cube_broadcast_vec", 1, args, target="ascend310p")
    relu = np.maximum(x, 0).astype(np.float16)
    np.testing.assert_array_equal(z.reshape(2, 16, 16), np.broadcast_to(relu.reshape(2, 1, 16), (2, 16, 16)))
    with pytest.raises(AscendCCheckError) as info:
        lib.launch("cube_broadcast_vec", 1, args, target="ascend910b")
    assert re.search(rf"cube_basic_kernels\.cpp:{_transpose_line('broadcast')}: BroadCastVecToMM is not available on "
                     r"ascend910b \(the BroadCastVecToMM page: Atlas 推理系列 AI Core only\)", str(info.value)), info.value


# The 4:2 patterns of the sparse-index page: nonzero positions -> (index0, index1); an absent second
# value is stored as 0 in the dense B.
_SPARSE = {(2, 3): (2, 2), (1, 3): (1, 2), (0, 3): (0, 2), (1, 2): (1, 1), (0, 2): (0, 1), (0, 1): (0, 0),
           (3,): (0, 2), (2,): (2, 0), (1,): (1, 0), (0,): (0, 0), (): (0, 0)}


def _zn(x):
    # (K', N) -> fractals (K'/32, N/16), each 16 n-rows of 32 k values
    kd, n = x.shape
    return x.reshape(kd // 32, 32, n // 16, 16).transpose(0, 2, 3, 1).reshape(-1)


def test_mmad_with_sparse_selects_a_by_the_4_2_index(lib):
    rng = np.random.default_rng(14)
    m, k, n = 16, 64, 16
    a = rng.integers(-100, 100, (m, k)).astype(np.int8)
    b = np.zeros((k, n), np.int8)
    dense, index = np.zeros((k // 2, n), np.int8), np.zeros((k // 2, n), np.uint8)
    patterns = list(_SPARSE)
    for g in range(k // 4):
        for col in range(n):
            nz = patterns[(g * n + col) % len(patterns)]
            vals = rng.integers(1, 100, len(nz)) * rng.choice([-1, 1], len(nz))
            for pos, v in zip(nz, vals):
                b[4 * g + pos, col] = v
            dense[2 * g:2 * g + len(vals), col] = vals if nz != (3,) else [0]
            if nz == (3,):
                dense[2 * g + 1, col] = vals[0]
            index[2 * g:2 * g + 2, col] = _SPARSE[nz]
    e = _zn(index).astype(np.uint8).reshape(-1, 4)
    packed = (e[:, 0] | e[:, 1] << 2 | e[:, 2] << 4 | e[:, 3] << 6).astype(np.uint8)
    c = np.zeros((m, n), np.int32)
    lib.launch("cube_sparse", 1, [("a", a), ("b", _zn(dense)), ("idx", packed), ("c", c)])
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))
    with pytest.raises(AscendCCheckError) as info:
        lib.launch("cube_sparse", 1, [("a", a), ("b", _zn(dense)), ("idx", packed), ("c", c)], target="ascend310p")
    assert re.search(rf"cube_basic_kernels\.cpp:{_transpose_line('sparse_load')}: LoadDataWithSparse is not "
                     r"available on ascend310p", str(info.value)), info.value


def _cube_line(marker):
    with open(os.path.join(ASCENDC_KERNELS, "cube_basic_kernels.cpp"), encoding="utf-8") as f:
        return next(i for i, text in enumerate(f, 1) if f"LINE:{marker}" in text)


def test_load3d_registers_fmatrix_padding_and_the_l1_boundary(lib):
    # LoadData3DParamsV2Pro and a v2 load with IsResetLoad3dConfig{false, false} read SetFmatrix's feature map
    # and SetLoadDataPaddingValue's pad; SetLoadDataBoundary(1024) makes A's second 16 channels (L1 bytes
    # 1024-2047) come from L1 bytes 0-1023 again, as CANN's set_loaddata_boundary sample relies on
    rng = np.random.default_rng(5)
    a = rng.standard_normal((32, 32)).astype(np.float16)
    b = rng.standard_normal((32, 32)).astype(np.float16)
    wrapped = a.copy()
    wrapped[:, 16:] = a[:, :16]
    for mode, a_read in ((0, wrapped), (1, a)):
        c = np.zeros((32, 32), np.float32)
        lib.launch("cube_load3d_registers", 1, [("a", a), ("b", b), ("c", c),
                                                 ("dims", np.array([mode, 0, 0, 0], np.uint32))])
        np.testing.assert_allclose(c, a_read.astype(np.float32) @ b.astype(np.float32), rtol=1e-5, atol=1e-4)
    for mode, marker, pattern in (
            (2, "load3d_boundary", "SetLoadDataBoundary(512): a boundary is at least 1024 bytes"),
            (3, "load3d_no_fmatrix", "LoadData(L1->L0, LoadData3DParamsV2): IsResetLoad3dConfig::isSetFMatrix is "
                                     "false, so the feature map comes from SetFmatrix, which this core never called")):
        with pytest.raises(AscendCCheckError) as info:
            lib.launch("cube_load3d_registers", 1, [("a", a), ("b", b), ("c", np.zeros((32, 32), np.float32)),
                                                     ("dims", np.array([mode, 0, 0, 0], np.uint32))])
        assert f"cube_basic_kernels.cpp:{_cube_line(marker)}: {pattern}" in str(info.value), str(info.value)
