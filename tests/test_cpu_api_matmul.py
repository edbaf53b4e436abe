"""The Matmul high-level API on fusedsl's CPU implementation of Ascend C: a kernel in the
style of CANN's MatmulLeakyRelu kernel-launch sample (host tiling via MultiCoreMatmulTiling)
built with plain g++ as a CPU-mode program and through the runner against numpy, the
mixed-launch block indices, and one failure test per Matmul rule."""
import ctypes
import os
import re
import subprocess

import numpy as np
import pytest
from conftest import ASCENDC_KERNELS

from fusedsl.backend_ascendc import cpu_runner
from fusedsl.backend_ascendc.cpu import include_dir
from fusedsl.errors import AscendCCheckError, AscendCWarning

KERNELS = ASCENDC_KERNELS
TILING_WORDS = 50
SYS_WORKSPACE = {"ascend910b": 16 << 20, "ascend310p": 2 << 20}

pytestmark = pytest.mark.usefixtures("private_cache_dir")


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """The sample as a CPU-mode program: kernel, host tiling and main.cpp as three TUs."""
    exe = tmp_path_factory.mktemp("mm") / "matmul_leakyrelu_custom"
    srcs = [os.path.join(KERNELS, f"matmul_leakyrelu_custom{s}.cpp") for s in ("", "_tiling", "_main")]
    cmd = ["g++", "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-DASCENDC_CPU_DEBUG",
           f"-I{include_dir()}", f"-I{KERNELS}", *srcs, "-o", str(exe)]
    return exe, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def lib(program):
    with open(os.path.join(KERNELS, "matmul_kernels.cpp"), encoding="utf-8") as f:
        source = f.read()
    built = cpu_runner.build(source, name="matmul_kernels", extra_flags=[f"-I{KERNELS}"])
    fn = built._lib.GenerateTiling
    fn.argtypes = [ctypes.c_char_p] + [ctypes.c_int32] * 7 + [ctypes.c_void_p, ctypes.c_uint32]
    fn.restype = ctypes.c_int64
    return built


def _tiling(lib, soc, m, n, k, dim, base_m, base_n, fp32=False):
    buf = np.zeros(TILING_WORDS, np.int32)
    size = lib._lib.GenerateTiling(soc.encode(), m, n, k, dim, base_m, base_n, int(fp32), buf.ctypes.data, buf.nbytes)
    assert size == buf.nbytes, "GenerateTiling failed"
    return buf


FIELDS = ("usedCoreNum M N Ka Kb singleCoreM singleCoreN singleCoreK baseM baseN baseK depthA1 depthB1 stepM "
          "stepN isBias transLength iterateOrder shareMode shareL1Size shareL0CSize shareUbSize batchM batchN "
          "singleBatchM singleBatchN stepKa stepKb").split()


def _field(tiling, name):
    return int(tiling[FIELDS.index(name)])


def _operands(m, n, k, dtype, seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (m, k)).astype(dtype)
    b = rng.uniform(-1, 1, (k, n)).astype(dtype)
    bias = rng.uniform(-1, 1, n).astype(np.float32)
    return a, b, bias


def _launch(lib, entry, block_dim, a, b, bias, c, tiling, target, workspace=None):
    ws = np.zeros(SYS_WORKSPACE.get(target, 1 << 20), np.uint8) if workspace is None else workspace
    return lib.launch(entry, block_dim, [("a", a), ("b", b), ("bias", bias), ("c", c), ("workspace", ws),
                                         ("tiling", tiling)], target=target)


def _want(a, b, bias):
    y = a.astype(np.float32) @ b.astype(np.float32) + bias
    return np.where(y < 0, y * np.float32(0.1), y)


def test_sample_program_runs_on_910b_and_310p(program):
    exe, proc = program
    log, _ = proc.communicate()
    assert proc.returncode == 0, log
    env = {k: v for k, v in os.environ.items() if k != "FUSEDSL_TARGET"}
    for soc, target in (("Ascend910B2", "ascend910b"), ("Ascend310P3", "ascend310p")):
        run = subprocess.run([str(exe), soc], capture_output=True, text=True, timeout=60,
                             env={**env, "FUSEDSL_TARGET": target})
        assert run.returncode == 0, run.stdout + run.stderr
        assert f"[SUCCESS] matmul_leakyrelu_custom matches on {soc}" in run.stdout


def test_host_tiling_of_the_sample_shape_fits_910b(lib):
    t = _tiling(lib, "Ascend910B2", 1024, 640, 256, 2, 256, 128)
    assert [_field(t, f) for f in ("usedCoreNum", "M", "N", "Ka", "singleCoreM", "singleCoreN", "singleCoreK",
                                   "baseM", "baseN", "isBias", "stepM", "stepN")] == \
        [2, 1024, 640, 256, 512, 640, 256, 256, 128, 1, 1, 1]
    base_k = _field(t, "baseK")
    # L0A double-buffered: 2 * 256 * baseK * 2 B <= 64 KB; L0C holds one 256 x 128 float tile.
    assert base_k == 64 and t[FIELDS.index("shareL0CSize")] == 256 * 128 * 4
    l1 = _field(t, "depthA1") * 256 * base_k * 2 + _field(t, "depthB1") * 128 * base_k * 2 + 128 * 4
    assert l1 == _field(t, "shareL1Size") <= 512 * 1024 - 256


@pytest.mark.parametrize("target,soc,m,n,k,dim,base,block_dim,dtype", [
    # Tails in M and K (not multiples of 16), two AIVs of one mixed block on 910B.
    ("ascend910b", "Ascend910B2", 200, 176, 72, 2, (64, 64), 1, np.float16),
    # Four vector cores, N split too, float inputs.
    ("ascend910b", "Ascend910B2", 96, 128, 40, 4, (32, 32), 2, np.float32),
    # 310P: coupled cores (blockDim = cores), SetLocalWorkspace via tiling key 2.
    ("ascend310p", "Ascend310P3", 130, 96, 50, 2, (64, 32), 2, np.float16),
])
def test_matmul_leaky_relu_matches_numpy(lib, target, soc, m, n, k, dim, base, block_dim, dtype):
    a, b, bias = _operands(m, n, k, dtype, seed=m)
    c = np.full((m, n), np.nan, np.float32)
    tiling = _tiling(lib, soc, m, n, k, dim, *base, fp32=dtype == np.float32)
    entry = "matmul_leakyrelu_f32" if dtype == np.float32 else "matmul_leakyrelu_custom"
    stats = _launch(lib, entry, block_dim, a, b, bias, c, tiling, target)
    np.testing.assert_allclose(c, _want(a, b, bias), rtol=1e-5, atol=1e-5)
    assert stats.gm_bytes_written == m * n * 4
    # One LeakyRelu per tile, over a whole baseM x baseN buffer.
    used = _field(tiling, "usedCoreNum")
    assert used == dim
    assert stats.vector_instructions >= -(-m // base[0]) * -(-n // base[1])


def test_transposed_b_with_iterate_all_to_gm(lib):
    # The tiling is computed for C in VECIN; only its shapes and base blocks matter here.
    m, n, k = 70, 48, 40
    a, bt, bias = _operands(m, n, k, np.float16, seed=5)
    b = np.ascontiguousarray(bt.T)                       # stored N x K
    c = np.full((m, n), np.nan, np.float32)
    tiling = _tiling(lib, "Ascend910B2", m, n, k, 2, 32, 16)
    stats = _launch(lib, "matmul_trans_b_iterate_all", 1, a, b, bias, c, tiling, "ascend910b")
    want = a.astype(np.float32) @ b.astype(np.float32).T + bias
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    assert stats.gm_bytes_written == m * n * 4


def test_matmul_config_surface_relu_in_a_cube_only_kernel(lib):
    # a __cube__-style launch (AIC_MODE): ASCEND_IS_AIV is false there, so the kernel body runs
    m, n, k = 64, 64, 32
    a, b, bias = _operands(m, n, k, np.float16, seed=8)
    c = np.full(m * n, np.nan, np.float32)
    tiling = _tiling(lib, "Ascend910B2", m, n, k, 1, 32, 32)
    _launch(lib, "matmul_cfg_relu", 1, a, b, bias, c, tiling, "ascend910b")
    want = np.maximum(a.astype(np.float32) @ b.astype(np.float32) + bias, 0)
    np.testing.assert_allclose(c.reshape(m, n), want, rtol=1e-5, atol=1e-5)


def test_partial_output_gives_each_k_step_and_refuses_iterate_all(lib):
    # isPartialOutput: a 32 x 32 x 1024 block with baseK 512 comes out as two K steps, bias in the first;
    # IterateAll with it is CANN's assert "IterateAll is not supported for PartialOutput"
    m, n, k = 32, 32, 1024
    a, b, bias = _operands(m, n, k, np.float16, seed=11)
    tiling = _tiling(lib, "Ascend910B2", m, n, k, 1, 32, 32)
    base_k = _field(tiling, "baseK")
    assert base_k == 512
    c = np.zeros((2, m, n), np.float32)
    _launch(lib, "matmul_partial", 1, a, b, bias, c, tiling, "ascend910b")
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    np.testing.assert_allclose(c[0], a32[:, :512] @ b32[:512] + bias, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(c[1], a32[:, 512:] @ b32[512:], rtol=1e-5, atol=1e-4)
    with open(os.path.join(KERNELS, "matmul_kernels.cpp"), encoding="utf-8") as f:
        line = next(i for i, text in enumerate(f, 1) if "LINE:relu_iterate_all" in text)
    with pytest.raises(AscendCCheckError) as info:
        _launch(lib, "matmul_cfg_partial", 1, a, b, bias, np.zeros(m * n, np.float32), tiling, "ascend910b")
    assert re.search(rf"matmul_kernels\.cpp:{line}: Matmul::IterateAll\(GlobalTensor\): IterateAll is not supported "
                     r"for PartialOutput", str(info.value)), str(info.value)


def test_constant_tiling_with_a_null_tcubetiling_and_a_smaller_runtime_shape(lib):
    m, n, k = 48, 64, 32
    a, b, bias = _operands(m, n, k, np.float16, seed=9)
    c = np.full(m * n, np.nan, np.float32)
    words = np.zeros(TILING_WORDS, np.int32)
    words[0] = m
    _launch(lib, "matmul_static_tiling", 1, a, b, bias, c, words, "ascend910b")
    np.testing.assert_allclose(c.reshape(m, n), a.astype(np.float32) @ b.astype(np.float32) + bias, rtol=1e-5,
                               atol=1e-5)
    words[1] = m + 16   # a tail past the original shape: refused when the Matmul runs
    with pytest.raises(AscendCCheckError, match=r"Matmul::SetTail: single shape 64 x 64 x 32 does not fit the "
                                                r"original shape M 48, N 64, Ka 32, Kb 32"):
        _launch(lib, "matmul_static_tiling", 1, a, b, bias, c, words, "ascend910b")


def test_get_tensor_c_in_nz_format(lib):
    m, n, k = 64, 64, 32
    a, b, bias = _operands(m, n, k, np.float16, seed=6)
    c = np.full(m * n, np.nan, np.float32)
    tiling = _tiling(lib, "Ascend910B2", m, n, k, 1, 32, 32)
    _launch(lib, "matmul_nz_tile", 1, a, b, bias, c, tiling, "ascend910b")
    tile = (a.astype(np.float32) @ b.astype(np.float32) + bias)[:32, :32]
    # NZ: column blocks of 16, each 32 rows x 16 elements
    nz = c[:32 * 32].reshape(2, 32, 16)
    np.testing.assert_allclose(np.concatenate([nz[0], nz[1]], axis=1), tile, rtol=1e-5, atol=1e-5)


def test_mixed_launch_runs_two_vector_cores_per_block_on_910b_and_one_core_per_block_on_310p(lib):
    nothing = np.zeros(1, np.float32)
    tiling = np.zeros(TILING_WORDS, np.int32)
    out = np.full(16 * 6, -1, np.float32)
    _launch(lib, "block_info", 3, nothing, nothing, nothing, out, tiling, "ascend910b")
    assert out.reshape(6, 16)[:, :3].tolist() == [[i, 3, i % 2] for i in range(6)]
    out[:] = -1
    _launch(lib, "block_info", 3, nothing, nothing, nothing, out, tiling, "ascend310p")
    assert out.reshape(6, 16)[:3, :3].tolist() == [[i, 3, 0] for i in range(3)] and np.all(out[48:] == -1)
    with pytest.raises(AscendCCheckError, match=r"blockDim = 25 in a mixed launch \(__mix__\(1, 2\)\); a mixed "
                                                r"kernel's blockDim counts cube cores \(1 AIC \+ 2 AIV each\) and "
                                                r"ascend910b has 24"):
        _launch(lib, "block_info", 25, nothing, nothing, nothing, np.zeros(16 * 50, np.float32), tiling, "ascend910b")


# ---- failure paths ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small(lib):
    """A 64 x 64 x 32 half problem and its 910B tiling (one core, 32 x 32 tiles)."""
    a, b, bias = _operands(64, 64, 32, np.float16, seed=1)
    return a, b, bias, _tiling(lib, "Ascend910B2", 64, 64, 32, 1, 32, 32)


def _fails(lib, entry, small, match, *, target="ascend910b", tiling=None, workspace=None, block_dim=1):
    a, b, bias, t = small
    c = np.zeros((64, 64), np.float32)
    with pytest.raises(AscendCCheckError, match=match) as info:
        _launch(lib, entry, block_dim, a, b, bias, c, t if tiling is None else tiling, target, workspace)
    # located at the kernel's call (the Matmul object's Set*/GetTensorC included), or about the launch
    assert re.match(r"fusedsl CPU check \([^)]*\): (\S+\.cpp:\d+: |blockDim)", str(info.value)), \
        str(info.value)


def test_regist_matmul_obj_after_init_buffer_warns_on_910b(lib, small):
    # the REGIST_MATMUL_OBJ page's order rule; CANN's CPU debug mode accepts it and CANN's MatmulLeakyRelu
    # kernel-launch samples break it, so it is a warning (once per launch, an AscendCWarning), not an error
    a, b, bias, t = small
    with pytest.warns(AscendCWarning) as record:
        _launch(lib, "regist_after_init_buffer", 2, a, b, bias, np.zeros((64, 64), np.float32), t, "ascend910b")
    texts = [str(w.message) for w in record if issubclass(w.category, AscendCWarning)]
    assert len(texts) == 1 and ("REGIST_MATMUL_OBJ: called after TPipe::InitBuffer (1 buffer(s) already planned); "
                                "the REGIST_MATMUL_OBJ page asks for it before any InitBuffer") in texts[0], texts


def test_a_tpipe_plan_over_the_matmul_message_area_is_refused_at_the_call(lib, small):
    # On 910B the vector core's Matmul client writes each message to the cube core into the last 128 bytes of
    # UB (asc-devkit dav_c220/kfc/kfc_comm_client.h): a plan of the whole 192 KB would be overwritten by the
    # Iterate; 192 KB - 128 leaves room and the tile comes out right.
    a, b, bias, t = small
    with pytest.raises(AscendCCheckError) as info:
        _launch(lib, "ub_into_message_area", 1, a, b, bias, np.zeros((64, 64), np.float32), t, "ascend910b")
    with open(os.path.join(KERNELS, "matmul_kernels.cpp"), encoding="utf-8") as f:
        line = next(i for i, text in enumerate(f, 1) if "LINE:msg_area" in text)
    assert re.search(rf"matmul_kernels\.cpp:{line}: Matmul::Iterate: the TPipe plans UB up to byte 196608, into the "
                     r"last 128 bytes of UB \[196480, 196608\) where the Matmul API writes each message to the cube "
                     r"core .* plan at most 196480 bytes", str(info.value)), str(info.value)
    c = np.zeros((64, 64), np.float32)
    _launch(lib, "ub_leaves_message_area", 1, a, b, bias, c, t, "ascend910b")
    want = a.astype(np.float32) @ b.astype(np.float32) + bias
    np.testing.assert_allclose(c[:32, :32], want[:32, :32], rtol=1e-5, atol=1e-5)


def test_the_matmul_l1_buffers_may_reach_the_kfc_message_area_of_l1_but_not_enter_it(lib, small):
    # On 910B a mixed kernel's cube core keeps the top 128 bytes of L1 for the Matmul messages (asc-devkit
    # kernel_utils_constants.h: TOTAL_L1_SIZE = 512 KB - KFC_L1_RESERVER_SIZE = 128): the object's own L1
    # buffers may end at byte 524160 (the tile comes out right), not 32 bytes past it
    a, b, bias, t = small
    c = np.zeros((64, 64), np.float32)
    _launch(lib, "l1_to_the_top", 1, a, b, bias, c, t, "ascend910b")
    want = a.astype(np.float32) @ b.astype(np.float32) + bias
    np.testing.assert_allclose(c[:32, :32], want[:32, :32], rtol=1e-5, atol=1e-5)
    with pytest.raises(AscendCCheckError) as info:
        _launch(lib, "l1_past_the_top", 1, a, b, bias, np.zeros((64, 64), np.float32), t, "ascend910b")
    with open(os.path.join(KERNELS, "matmul_kernels.cpp"), encoding="utf-8") as f:
        line = next(i for i, text in enumerate(f, 1) if "LINE:l1_top" in text)
    assert re.search(rf"matmul_kernels\.cpp:{line}: REGIST_MATMUL_OBJ: the Matmul object's own L1 buffers \(A1/B1 "
                     r"queues\) need L1 bytes \[\d+, 524192\) and ascend910b has 524160 \(they start after the "
                     r"TPipe's plan", str(info.value)), str(info.value)


def test_tied_core_splits_follow_the_splits_canns_samples_document(lib):
    # matmul_leakyrelu_advanced_api: 512 x 128 x 128, SetDim(2), base 128 x 64 -> N split in two;
    # matmul_advanced_api: 512 x 512 x 128, SetDim(2) -> M split in two
    t = _tiling(lib, "Ascend910B2", 512, 128, 128, 2, 128, 64)
    assert [_field(t, f) for f in ("usedCoreNum", "singleCoreM", "singleCoreN")] == [2, 512, 64]
    t = _tiling(lib, "Ascend910B2", 512, 512, 128, 2, 128, 128)
    assert [_field(t, f) for f in ("usedCoreNum", "singleCoreM", "singleCoreN")] == [2, 256, 512]


def test_iterate_all_to_gm_with_c_declared_in_ub_and_asynchronous(lib, small):
    # the IterateAll page puts no condition on C_TYPE's position for a GM destination, and its
    # asynchronous form needs no SetWorkspace (CANN's matmul_fused_manual / matmul_async_iterate_all); both
    # vector cores of the one block write the same C, the same bytes with the same values (matmul_ibshareAB)
    a, b, bias, t = small
    c = np.zeros((64, 64), np.float32)
    _launch(lib, "iterate_all_async_c_in_ub", 1, a, b, bias, c, t, "ascend910b")
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32) + bias, rtol=1e-5, atol=1e-5)


def test_set_tensor_b_transposed_without_istrans(lib, small):
    # the SetTensorB page: for half inputs a precision warning on the device (CANN's matmul_high_performance
    # does it), for others ISTRANS must match the flag
    a, b, bias, t = small
    c = np.zeros((64, 64), np.float32)
    with pytest.warns(AscendCWarning) as record:
        _launch(lib, "trans_b_without_istrans", 1, a, np.ascontiguousarray(b.T), bias, c, t, "ascend910b")
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32) + bias, rtol=1e-5, atol=1e-5)
    texts = [str(w.message) for w in record if issubclass(w.category, AscendCWarning)]
    assert sum("Matmul::SetTensorB(gm, true) with the MatmulType's ISTRANS false" in t for t in texts) == 1, texts
    _fails(lib, "trans_b_float_without_istrans", small, r"Matmul::SetTensorB\(gm, true\): B is transposed, so its "
           r"MatmulType needs ISTRANS = true \(the SetTensorB page: with ISTRANS false, isTransposeB may only be false\)")


def test_nd_align_c_pads_each_row_to_32_bytes(lib):
    # 矩阵乘输出的N方向对齐: N = 20 floats per row of C, written with a row stride of 24
    a, b, bias = _operands(32, 20, 32, np.float16, seed=4)
    t = _tiling(lib, "Ascend910B2", 32, 20, 32, 1, 32, 32)
    c = np.full((32, 24), -7.0, np.float32)
    _launch(lib, "nd_align_c", 1, a, b, bias, c, t, "ascend910b")
    np.testing.assert_allclose(c[:, :20], a.astype(np.float32) @ b.astype(np.float32) + bias, rtol=1e-5, atol=1e-5)
    assert np.all(c[:, 20:] == -7.0)   # the padding holds "invalid data" on the device; fusedsl leaves it as it was


def test_asynchronous_iterate_fetches_each_tile_in_turn(lib, small):
    # one Iterate<false>() then one GetTensorC<false> per 32 x 32 tile of the 64 x 64 block, M first
    a, b, bias, t = small
    c = np.zeros((64, 64), np.float32)
    _launch(lib, "async_tiles", 1, a, b, bias, c, t, "ascend910b")
    want = a.astype(np.float32) @ b.astype(np.float32) + bias
    tiles = c.reshape(4, 32, 32)
    for i in range(4):
        m0, n0 = 32 * (i % 2), 32 * (i // 2)
        np.testing.assert_allclose(tiles[i], want[m0:m0 + 32, n0:n0 + 32], rtol=1e-5, atol=1e-5)
    _fails(lib, "async_overfetch", small, r"Matmul::GetTensorC\(LocalTensor\)<false>: every tile of the asynchronous "
                                          r"Iterate was already fetched \(4\)")


def test_get_tensor_c_destination_too_small(lib, small):
    _fails(lib, "tensor_c_too_small", small,
           r"Matmul::GetTensorC\(LocalTensor\): the destination needs 4096 bytes but the LocalTensor has only 2048")


def test_get_tensor_c_destination_misaligned(lib, small):
    _fails(lib, "tensor_c_misaligned", small, r"the destination starts at UB offset 16, which is not 32-byte aligned")


def test_no_end_is_accepted_as_by_cann(lib, small):
    # the cube core's KFC server quits on the client's SERVICE_QUIT (sent by its destructor), not on End()
    a, b, bias, t = small
    c = np.zeros((64, 64), np.float32)
    _launch(lib, "no_end", 1, a, b, bias, c, t, "ascend910b")
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32) + bias, rtol=1e-5, atol=1e-5)


def test_double_iterate_and_unregistered_object(lib, small):
    _fails(lib, "iterate_twice", small, r"the previous tile was never fetched; call GetTensorC after every Iterate")
    _fails(lib, "not_registered", small, r"Matmul::SetTensorA: the Matmul object was not registered in this kernel; "
                                         r"call REGIST_MATMUL_OBJ")


def test_matmul_needs_mix_mode_on_910b(lib, small):
    _fails(lib, "matmul_in_aiv_mode", small, r"REGIST_MATMUL_OBJ: on ascend910b a Matmul kernel runs on the cube "
                                             r"core; launch it as a mixed kernel .*MIX_MODE.* or a cube-only one "
                                             r".*AIC_MODE.*AIV_MODE, has no cube core")


def test_system_workspace_smaller_than_lib_api_workspace(lib, small):
    _fails(lib, "matmul_leakyrelu_custom", small, r"the system workspace has 1048576 bytes left in GM buffer "
                                                  r"'workspace'; the Matmul API needs GetLibApiWorkSpaceSize\(\) = "
                                                  r"16777216 bytes", workspace=np.zeros(1 << 20, np.uint8))


def test_dtype_combinations_per_chip(lib, small):
    a, b, bias, _ = small
    t = _tiling(lib, "Ascend310P3", 64, 64, 32, 1, 32, 32, fp32=True)
    with pytest.raises(AscendCCheckError, match=r"Matmul with A float, B float, Bias float -> C float is not "
                                                r"supported on ascend310p \(supported: \(half, half, float -> float\)"):
        _launch(lib, "matmul_leakyrelu_f32", 1, a.astype(np.float32), b.astype(np.float32), bias,
                np.zeros((64, 64), np.float32), t, "ascend310p")
    _fails(lib, "matmul_leakyrelu_custom", small, r"the Matmul high-level API is not available on ascend910",
           target="ascend910")


@pytest.mark.parametrize("field,value,match", [
    ("baseM", 256, r"tiling needs 524288 bytes of L0C \(2 x baseM 256 x baseN 256 x 4 B accumulators\); ascend910b "
                   r"has 131072"),
    ("baseK", 1024, r"tiling needs 131072 bytes of L0A \(2 x baseM 32 x baseK 1024 x 2 B\); ascend910b has 65536"),
    ("depthA1", 4096, r"tiling needs \d+ bytes of L1 \(depthA1 4096 x 32 x 32 x 2 B"),
    ("baseN", 40, r"baseM and baseN must be positive multiples of 16"),
])
def test_tiling_outside_the_cube_buffers(lib, small, field, value, match):
    t = small[3].copy()
    t[FIELDS.index(field)] = value
    if field == "baseM":
        t[FIELDS.index("baseN")] = 256
    _fails(lib, "matmul_leakyrelu_custom", small, match, tiling=t)


def test_host_tiling_rejects_a_base_block_larger_than_l0c_on_910b_but_not_on_310p(lib, capfd):
    buf = np.zeros(TILING_WORDS, np.int32)
    args = (256, 256, 64, 1, 256, 256, 0, buf.ctypes.data, buf.nbytes)
    assert lib._lib.GenerateTiling(b"Ascend910B2", *args) == -1
    assert "baseM x baseN = 256 x 256 needs 262144 bytes of L0C, ascend910b has 131072" in capfd.readouterr().err
    assert lib._lib.GenerateTiling(b"Ascend310P3", *args) == buf.nbytes
    # 310P's L0C is 256 KB: one 256 x 256 float tile fits, without double buffering.
    assert _field(buf, "baseM") == 256 and _field(buf, "baseN") == 256 and buf[32] == 1   # dbL0C


def test_int8_matmul_dequantised_into_half_by_a_scalar_or_per_column(lib):
    # SetQuantScalar / SetQuantVector: C = half((A B + bias) * scale), the scale cut to its top 19 bits
    rng = np.random.default_rng(21)
    a = rng.integers(-10, 10, (32, 64)).astype(np.int8)
    b = rng.integers(-10, 10, (64, 64)).astype(np.int8)
    bias = rng.integers(-50, 50, 64).astype(np.int32)
    acc = (a.astype(np.int64) @ b.astype(np.int64) + bias).astype(np.float32)
    cut = lambda s: (np.asarray(s, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)  # noqa: E731
    buf = np.zeros(16 + 2 * 64, np.int32)   # word 0: the mode; byte 64 on: the per-column scales
    scales = rng.uniform(0.1, 2.0, 64).astype(np.float32)
    buf[16:].view(np.uint64)[:] = scales.view(np.uint32).astype(np.uint64)
    for mode, scale in ((0, cut(0.1)), (1, cut(scales))):
        buf[0] = mode
        c = np.full((32, 64), np.nan, np.float16)
        _launch(lib, "matmul_dequant", 1, a, b, bias, c, buf, "ascend910b")
        np.testing.assert_array_equal(c, (acc * scale).astype(np.float16))
    buf[0] = 2
    with pytest.raises(AscendCCheckError, match=r"Matmul::Iterate: an int8_t x int8_t product into half C is "
                                                r"dequantised on its way out; call SetQuantScalar or SetQuantVector"):
        _launch(lib, "matmul_dequant", 1, a, b, bias, np.zeros((32, 64), np.float16), buf, "ascend910b")


def test_sparse_b_matmul_puts_the_dense_values_back_by_the_index(lib):
    # SparseMatmulType: B (64 x 32, 2 nonzeros in every 4 K values of a column) given as its dense half,
    # transposed (N x K/2), with the 2-bit index in fractals of 16 N x 8 bytes (4 values a byte, low bits first)
    rng = np.random.default_rng(22)
    m, n, k = 32, 32, 64
    a = rng.integers(-20, 20, (m, k)).astype(np.int8)
    b = np.zeros((k, n), np.int8)
    dense, index = np.zeros((n, k // 2), np.int8), np.zeros((n, k // 2), np.uint8)
    pairs = {(0, 1): (0, 0), (0, 2): (0, 1), (0, 3): (0, 2), (1, 2): (1, 1), (1, 3): (1, 2), (2, 3): (2, 2)}
    for col in range(n):
        for g in range(k // 4):
            pos = sorted(rng.choice(4, 2, replace=False).tolist())
            vals = rng.integers(1, 20, 2) * rng.choice([-1, 1], 2)
            b[4 * g + pos[0], col], b[4 * g + pos[1], col] = vals
            dense[col, 2 * g:2 * g + 2] = vals
            index[col, 2 * g:2 * g + 2] = pairs[tuple(pos)]
    e = index.reshape(n, k // 8, 4)
    packed = (e[..., 0] | e[..., 1] << 2 | e[..., 2] << 4 | e[..., 3] << 6).astype(np.uint8)   # n x k/8 bytes
    nz = packed.reshape(n // 16, 16, k // 64, 8).transpose(2, 0, 1, 3).reshape(-1)
    buf = np.zeros(16 + nz.size // 4, np.int32)
    buf[16:].view(np.uint8)[:] = nz
    c = np.zeros((m, n), np.int32)
    _launch(lib, "matmul_sparse_b", 1, a, dense, np.zeros(n, np.int32), c, buf, "ascend910b")
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))
    buf[0] = 1
    with pytest.raises(AscendCCheckError, match=r"Matmul::Iterate \(sparse B\): call SetSparseIndex before "
                                                r"Iterate/IterateAll"):
        _launch(lib, "matmul_sparse_b", 1, a, dense, np.zeros(n, np.int32), c, buf, "ascend910b")


def test_multi_core_split_k_adds_partial_products_atomically(lib):
    # EnableMultiCoreSplitK: 16 x 32 x 512 on up to 8 cores; the tiling cuts K into equal chunks, each core
    # adds its chunk's product into C (IterateAll with AtomicAdd); the kernel's Fill(C, 0) runs on the cube
    # core, where CANN's does nothing, so C's initial 1.0 stays in the sum
    m, n, k = 16, 32, 512
    fn = lib._lib.SplitKTiling
    fn.argtypes = [ctypes.c_int32] * 4 + [ctypes.c_void_p, ctypes.c_uint32]
    fn.restype = ctypes.c_int64
    t = np.zeros(TILING_WORDS, np.int32)
    assert fn(m, n, k, 8, t.ctypes.data, t.nbytes) == t.nbytes
    # 2 N blocks x 4 equal K chunks of 128
    assert [_field(t, f) for f in ("singleCoreM", "singleCoreN", "singleCoreK", "usedCoreNum")] == [16, 16, 128, 8]
    a, b, _ = _operands(m, n, k, np.float16, seed=9)
    c = np.ones((m, n), np.float32)
    _launch(lib, "matmul_split_k", 8, a, b, np.zeros(n, np.float32), c, t, "ascend910b")
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32) + 1, rtol=1e-4, atol=1e-4)


def test_matmul_policies_triangular_and_nbuffer33(lib, small):
    # TrianUpper/TrianLowerMatmulPolicy write only the 32 x 32 tiles on and above / below the diagonal of the
    # single-core block (CANN's IsInTrianMatmul); the others keep C's old values.  NBuffer33MatmulPolicy is a
    # schedule: C as without it, from IterateAll only.
    a, b, bias, t = small
    want = a.astype(np.float32) @ b.astype(np.float32) + bias
    for entry, kept in (("matmul_trian_upper", (slice(32, 64), slice(0, 32))),
                        ("matmul_trian_lower", (slice(0, 32), slice(32, 64)))):
        c = np.full((64, 64), -7.0, np.float32)
        _launch(lib, entry, 1, a, b, bias, c, t, "ascend910b")
        expect = want.copy()
        expect[kept] = -7.0
        np.testing.assert_allclose(c, expect, rtol=1e-5, atol=1e-5, err_msg=entry)
    c = np.zeros((64, 64), np.float32)
    _launch(lib, "matmul_nbuffer33", 1, a, b, bias, c, t, "ascend910b")
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(AscendCCheckError) as info:
        _launch(lib, "matmul_nbuffer33_iterate", 1, a, b, bias, c, t, "ascend910b")
    with open(os.path.join(KERNELS, "matmul_kernels.cpp"), encoding="utf-8") as f:
        line = next(i for i, text in enumerate(f, 1) if "LINE:nbuffer33_iterate" in text)
    assert re.search(rf"matmul_kernels\.cpp:{line}: Matmul::Iterate: a Matmul with NBuffer33MatmulPolicy computes C "
                     r"with IterateAll only", str(info.value)), str(info.value)
    # 310P has no triangular Matmul
    with pytest.raises(AscendCCheckError, match=r"REGIST_MATMUL_OBJ: the triangular Matmul policies .* are not "
                                                r"supported on ascend310p"):
        _launch(lib, "matmul_trian_upper", 1, a, b, bias, c, _tiling(lib, "Ascend310P3", 64, 64, 32, 1, 32, 32),
                "ascend310p")


def test_matmul_into_a_user_managed_co1(lib, small):
    # C_TYPE in TPosition::CO1 (NZ, GetMmDstType<half>::Type = float): Iterate(enPartialSum, l0c) leaves each
    # tile in the kernel's L0C queue, Fixpipe moves it; a second pass with enPartialSum adds onto the first
    a, b, bias, t = small
    flag = np.zeros(64, np.int32)   # the word after the tiling: 1 passes an L1 tensor to Iterate
    c = np.zeros((64, 64), np.float32)
    _launch(lib, "matmul_co1", 1, a, b, bias, c, np.concatenate([t, flag]), "ascend910b")
    np.testing.assert_allclose(c, 2 * (a.astype(np.float32) @ b.astype(np.float32) + bias), rtol=1e-5, atol=1e-4)
    flag[0] = 1
    with pytest.raises(AscendCCheckError) as info:
        _launch(lib, "matmul_co1", 1, a, b, bias, c, np.concatenate([t, flag]), "ascend910b")
    with open(os.path.join(KERNELS, "matmul_kernels.cpp"), encoding="utf-8") as f:
        line = next(i for i, text in enumerate(f, 1) if "LINE:co1_in_l1" in text)
    assert re.search(rf"matmul_kernels\.cpp:{line}: Matmul::Iterate\(LocalTensor CO1\): localCmatrix must be a tensor "
                     r"in L0C, but it is in L1", str(info.value)), str(info.value)


def test_nz_c_in_gm_and_the_channel_split(lib, small):
    # an NZ C in GM: column groups of c0 = 16 (8 with isEnableChannelSplit) of all 64 rows, one after another
    a, b, bias, t = small
    want = a.astype(np.float32) @ b.astype(np.float32) + bias
    for entry, c0 in (("matmul_nz_gm", 16), ("matmul_nz_gm_split", 8)):
        c = np.zeros(64 * 64, np.float32)
        _launch(lib, entry, 1, a, b, bias, c, t, "ascend910b")
        nz = want.reshape(64, 64 // c0, c0).transpose(1, 0, 2).reshape(-1)
        np.testing.assert_allclose(c, nz, rtol=1e-5, atol=1e-5, err_msg=entry)
    with open(os.path.join(KERNELS, "matmul_kernels.cpp"), encoding="utf-8") as f:
        line = next(i for i, text in enumerate(f, 1) if "LINE:split_nd" in text)
    with pytest.raises(AscendCCheckError) as info:
        _launch(lib, "matmul_split_nd", 1, a, b, bias, np.zeros(64 * 64, np.float32), t, "ascend910b")
    assert re.search(rf"matmul_kernels\.cpp:{line}: REGIST_MATMUL_OBJ: MatmulConfig.isEnableChannelSplit needs C in "
                     r"GM, CubeFormat::NZ and float", str(info.value)), str(info.value)


def test_copy_callbacks_fill_the_l1_blocks(lib):
    # MatmulCallBackFunc<nullptr, CopyA1, CopyB1>: the kernel's own functions bring each A and B base block into
    # L1 (NZ); the product is the same as the Matmul's own copies.  K = 1024: two baseK = 512 blocks per tile
    a, b, bias = _operands(64, 64, 1024, np.float16, seed=12)
    t = _tiling(lib, "Ascend910B2", 64, 64, 1024, 1, 32, 32)
    assert _field(t, "baseK") == 512
    c = np.zeros((64, 64), np.float32)
    stats = _launch(lib, "matmul_callbacks", 1, a, b, bias, c, t, "ascend910b")
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32) + bias, rtol=1e-5, atol=1e-5)
    assert stats.gm_bytes_read > 0


def test_core_split_takes_one_core_for_a_mini_shape_and_whole_blocks_otherwise(lib):
    # CANN's PreProcessMiniShape: 64 x 64 x 64 on 20 cores (16 C blocks <= 20, all fits L0) is one core's work;
    # on 8 cores it is split, into whole 32 x 32 blocks
    t = _tiling(lib, "Ascend910B2", 64, 64, 64, 20, 32, 32)
    assert [_field(t, f) for f in ("usedCoreNum", "singleCoreM", "singleCoreN")] == [1, 64, 64]
    t = _tiling(lib, "Ascend910B2", 64, 64, 64, 8, 32, 32)
    assert [_field(t, f) for f in ("usedCoreNum", "singleCoreM", "singleCoreN")] == [4, 32, 32]
    # 256 x 512 on 24 cores: the even 8 x 2 split of 32 x 256 blocks, not a smaller ragged one (CANN's
    # matmul_nbuffer33 offsets its blocks without SetTail)
    t = _tiling(lib, "Ascend910B2", 256, 512, 192, 24, 32, 64)
    m, n, used = (_field(t, f) for f in ("singleCoreM", "singleCoreN", "usedCoreNum"))
    assert 256 % m == 0 and 512 % n == 0 and used == (256 // m) * (512 // n) <= 24
