"""Cube tiling (fusedsl/schedule_cube.py): fits every buffer of the target, clear errors."""
import pytest

from fusedsl.errors import ScheduleError, TargetError
from fusedsl.schedule_cube import cube_tiling
from fusedsl.targets import get_target


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
@pytest.mark.parametrize("mnk", [(17, 33, 19), (1000, 777, 333), (4096, 4096, 4096), (1, 1, 1)])
def test_tiling_fits_buffers(target, mnk):
    m, n, k = mnk
    t = get_target(target)
    c = cube_tiling(target, m, n, k, bias_dtype="float32", ub_bytes_per_c_elem=8)
    assert c.base_m % 16 == 0 and c.base_n % 16 == 0 and c.base_k % 16 == 0
    assert c.l1_bytes <= t.l1_bytes and c.l0a_bytes <= t.l0a_bytes
    assert c.l0b_bytes <= t.l0b_bytes and c.l0c_bytes <= t.l0c_bytes
    assert c.ub_tile_bytes <= t.ub_bytes
    assert 1 <= c.used_core_num <= t.aic_cores
    # every output element is covered by the per-core blocks
    assert c.single_core_m * -(-m // c.single_core_m) >= m
    assert c.single_core_n * -(-n // c.single_core_n) >= n


def test_epilogue_ub_shrinks_base_block():
    small = cube_tiling("ascend910b", 512, 512, 64)
    big = cube_tiling("ascend910b", 512, 512, 64, ub_bytes_per_c_elem=64)
    assert big.base_m * big.base_n < small.base_m * small.base_n
    assert big.ub_tile_bytes <= get_target("ascend910b").ub_bytes


def test_epilogue_too_big_for_ub_names_bytes():
    with pytest.raises(ScheduleError, match=r"FS110: the epilogue .* needs \d+ bytes of UB"):
        cube_tiling("ascend910b", 64, 64, 64, ub_bytes_per_c_elem=10**6)


def test_ascend910_has_no_matmul_api():
    with pytest.raises(TargetError, match="ascend910 has no Matmul high-level API"):
        cube_tiling("ascend910", 64, 64, 64)
