"""The basic cube API on the CPU (tests/ascendc_kernels/cube_basic_kernels.cpp, written from the
asc-devkit docs): Nd2Nz DataCopy into L1, LoadData2D into L0A/L0B, Mmad into L0C, Fixpipe to GM,
static LocalTensor(TPosition, addr, len) and LocalMemAllocator<L1/L0*>, checked against numpy."""
import os

import numpy as np
import pytest
from conftest import ASCENDC_KERNELS

from fusedsl.backend_ascendc import cpu_runner
from fusedsl.errors import AscendCCheckError

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


def test_static_tensors_accumulate_and_relu_in_float(lib):
    want, c = _run(lib, "cube_float_relu_static", 64, 32, 48, 2, np.float32, seed=1)
    np.testing.assert_allclose(c, np.maximum(2 * want, 0), rtol=1e-5, atol=1e-4)


def _fails(lib, entry, match):
    with pytest.raises(AscendCCheckError, match=match):
        _run(lib, entry, 16, 16, 16, 1, np.float32)


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
    with pytest.raises(AscendCCheckError, match=r"Mmad: isBias, kDirectionAlign, fmOffset, enSsparse and the Winograd "
                                                r"switches are not modelled"):
        lib.launch("cube_l1_roundtrip", 1, [("a", a), ("b", a), ("c", c), ("dims", dims)])
