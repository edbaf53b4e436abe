"""Inter-core synchronisation on the CPU (tests/ascendc_kernels/sync_kernels.cpp, written from the
asc-devkit docs): SyncAll, IBSet/IBWait and a GM flag polled with GetValue make progress although
blocks run one at a time; blocks that wait for each other forever are reported."""
import os
import re

import numpy as np
import pytest
from conftest import ASCENDC_KERNELS

from fusedsl.backend_ascendc import cpu_runner
from fusedsl.errors import AscendCCheckError

pytestmark = pytest.mark.usefixtures("private_cache_dir")
W = 16


@pytest.fixture(scope="module")
def lib():
    with open(os.path.join(ASCENDC_KERNELS, "sync_kernels.cpp"), encoding="utf-8") as f:
        return cpu_runner.build(f.read(), name="sync_kernels")


def _run(lib, entry, blocks, target="ascend910b"):
    x = np.arange(blocks * W, dtype=np.int32).reshape(blocks, W) * 3 + 1
    ws = np.zeros(blocks * 16 + 64, np.int32)
    out = np.zeros((blocks, W), np.int32)
    lib.launch(entry, blocks, [("x", x), ("ws", ws), ("out", out)], target=target)
    return x, out


@pytest.mark.parametrize("blocks", [1, 3, 8])
def test_sync_all_lets_every_block_see_every_row(lib, blocks):
    x, out = _run(lib, "sync_all_sum", blocks)
    np.testing.assert_array_equal(out, np.broadcast_to(x.sum(axis=0), x.shape))


@pytest.mark.parametrize("blocks", [2, 5])
def test_ib_set_wait_chain_is_a_prefix_sum(lib, blocks):
    x, out = _run(lib, "ib_chain", blocks)
    np.testing.assert_array_equal(out, np.cumsum(x, axis=0))


def test_polling_a_gm_flag_makes_progress(lib):
    x, out = _run(lib, "poll_flag", 4)
    assert out[0, 0] == 2 * x[1:].sum()
    np.testing.assert_array_equal(out[1:], 2 * x[1:])


def _line(marker):
    with open(os.path.join(ASCENDC_KERNELS, "sync_kernels.cpp"), encoding="utf-8") as f:
        return next(i for i, text in enumerate(f, 1) if f"LINE:{marker}" in text)


def test_blocks_waiting_forever_are_reported(lib):
    # a hang is never what the user sees: the waiting line, the cores parked there and who finished
    with pytest.raises(AscendCCheckError) as info:
        _run(lib, "sync_all_missing", 3)
    msg = str(info.value)
    assert re.search(rf"sync_kernels\.cpp:{_line('sync_all_missing')}: SyncAll\(\) never returns on block 1, block 2 "
                     r"— the cores wait for each other forever \(1 of 3 cores finished", msg), msg
    assert "a SyncAll every core" in msg and "would hang" in msg


@pytest.mark.parametrize("blocks", [1, 3])
def test_polling_a_flag_nobody_sets_is_reported_at_the_polling_line(lib, blocks):
    # one block: nobody else can write GM, so re-reading the flag with nothing else happening is a hang;
    # several: the others finish and the poller is the last core waiting
    with pytest.raises(AscendCCheckError) as info:
        _run(lib, "poll_unset", blocks)
    msg = str(info.value)
    line = _line("poll_unset")
    if blocks == 1:
        assert re.search(rf"sync_kernels\.cpp:{line}: GlobalTensor::GetValue re-read the same GM bytes \d+ times with "
                         r"no GM write and no vector instruction between: the launch has only 1 block", msg), msg
    else:
        assert re.search(rf"sync_kernels\.cpp:{line}: GlobalTensor::GetValue \(polling a GM value\) never returns on "
                         r"block 0 — the cores wait for each other forever \(2 of 3 cores finished", msg), msg
    assert "would hang" in msg
    assert "fusedsl_cpu" not in msg and "launch.h" not in msg and "tensor.h" not in msg


def test_rereading_a_gm_value_between_vector_work_is_not_a_poll(lib):
    x = np.full(W, 3, np.int32)
    out = np.zeros(W, np.int32)
    lib.launch("param_reread", 1, [("x", x), ("ws", np.zeros(8, np.int32)), ("out", out)])
    assert out[0] == 3 * (1 << 22)


def test_atomic_max_keeps_the_largest_row_value(lib):
    rng = np.random.default_rng(2)
    x = rng.integers(-1000, 1000, (5, W)).astype(np.int32)
    out = np.full(W, -5000, np.int32)
    lib.launch("atomic_max_rows", 5, [("x", x), ("ws", np.zeros(8, np.int32)), ("out", out)])
    np.testing.assert_array_equal(out, x.max(axis=0))
    with pytest.raises(AscendCCheckError, match=r"SetAtomicMax is not available on ascend310p \(A2/A3 products only\)"):
        lib.launch("atomic_max_rows", 5, [("x", x), ("ws", np.zeros(8, np.int32)), ("out", out)], target="ascend310p")


def test_gm_access_bypassing_the_data_cache_polls_to_completion(lib):
    x, out = _run(lib, "bypass_poll", 4)
    assert out[0, 0] == 2 * x[1:, 0].sum()
    np.testing.assert_array_equal(out[1:, 0], 2 * x[1:, 0])


def _xcore(lib, entry, blocks):
    out = np.zeros(blocks * 8, np.float32)
    nothing = np.zeros(8, np.int32)
    lib.launch(entry, blocks, [("x", nothing), ("ws", nothing), ("out", out)])
    return out


def test_cross_core_flags_order_the_cube_and_vector_cores(lib):
    # mode 2 both ways between each block's cube core and its vector cores, mode 1 between the two vector
    # cores: the second core's write lands after the first's, which the GM write check accepts as ordered
    np.testing.assert_array_equal(_xcore(lib, "cross_core", 3), np.full(24, 2, np.float32))


def test_cross_core_unordered_writes_and_a_missing_set_are_reported(lib):
    with pytest.raises(AscendCCheckError, match=r"block 0 and block 1 both write byte \d+ of GM buffer 'out'.*"
                                                r"CrossCoreSetFlag/WaitFlag"):
        _xcore(lib, "cross_core_race", 1)
    # the vector cores wait for flag 5, which nobody sets; the cube core for their flag 2 behind it: each
    # waiting line named with its flag id and cores, and the flags set that nobody has waited for yet
    with pytest.raises(AscendCCheckError) as info:
        _xcore(lib, "cross_core_hang", 1)
    msg = str(info.value)
    assert re.search(rf"sync_kernels\.cpp:{_line('xcore_hang')}: CrossCoreWaitFlag\(5\) \(flag id 5\) never returns "
                     rf"on block 0, block 1; \S*sync_kernels\.cpp:{_line('xcore_aic_wait')}: CrossCoreWaitFlag\(2\) "
                     r"\(flag id 2\) never returns on cube core 0 — the cores wait for each other forever \(0 of 3 ", msg), msg
    assert "needs a CrossCoreSetFlag with the same flag id" in msg, msg
    # every other core has finished: the cube core's wait for flag 6 can never return; the second mode-2
    # set of its vector cores is still unclaimed
    with pytest.raises(AscendCCheckError) as info:
        _xcore(lib, "cross_core_orphan", 1)
    msg = str(info.value)
    assert re.search(rf"sync_kernels\.cpp:{_line('xcore_orphan')}: CrossCoreWaitFlag\(6\) \(flag id 6\) never returns "
                     r"on cube core 0 — the cores wait for each other forever \(2 of 3 cores finished", msg), msg
    assert "CrossCoreSetFlag'd and not yet waited: flag id 4 for cube core 0 (x1)" in msg, msg


@pytest.mark.parametrize("entry, marker, says", [
    ("cross_core_bad_pipe", "xcore_bad_pipe", "CrossCoreSetFlag: the pipe may not be PIPE_S or PIPE_ALL in modes 0-2"),
    ("cross_core_bad_flag", "xcore_bad_flag", "CrossCoreSetFlag: flagId = 16; modes 0-2 have flags 0-15")])
def test_cross_core_set_flag_rules_name_the_kernel_line(lib, entry, marker, says):
    with pytest.raises(AscendCCheckError) as info:
        _xcore(lib, entry, 1)
    msg = str(info.value)
    assert msg.startswith(f"fusedsl CPU check (ascend910b, block 0): sync_kernels.cpp:{_line(marker)}: {says}"), msg


@pytest.mark.parametrize("ratio", [2, 1])
def test_mixed_launch_runs_ratio_vector_cores_per_block(lib, ratio):
    # __mix__(1, 2) (KernelMode::MIX_MODE) runs 2 vector cores per block, __mix__(1, 1) (MIX_AIC_1_1) one:
    # GetBlockIdx over [0, ratio * n) on them, GetTaskRatio / GetSubBlockNum = ratio there and 1 on the cube
    # core (asc-devkit GetTaskRatio.md, GetSubBlockNum(ISASI).md; cpudebug's g_taskRation); the cube core's
    # mode-2 wait returns once all of its block's vector cores have set
    n = 3
    out = np.full((3 * n, 16), -1, np.int32)
    nothing = np.zeros(8, np.int32)
    lib.launch("mix_ids" if ratio == 2 else "mix_ids_1_1", n, [("x", nothing), ("ws", nothing), ("out", out)])
    vec = [[v, n, v % ratio, ratio, ratio, 0] for v in range(ratio * n)]
    np.testing.assert_array_equal(out[:ratio * n, :6], vec)
    np.testing.assert_array_equal(out[ratio * n:2 * n, :6], -1)   # no third vector core in 1:1
    np.testing.assert_array_equal(out[2 * n:, :6], [[b, n, 0, 1, 1, 1] for b in range(n)])


def test_group_barrier_orders_the_waiters_after_the_arrivers(lib):
    x, out = _run(lib, "group_barrier", 5)
    np.testing.assert_array_equal(out[3:], x[3:])
    np.testing.assert_array_equal(out[:3], np.broadcast_to(x[3] + x[4], (3, W)))
    with pytest.raises(AscendCCheckError, match=r"GroupBarrier::Wait\(3\): the index must be below waitSize = 3"):
        _run(lib, "group_barrier_bad", 5)
    with pytest.raises(AscendCCheckError, match=r"GroupBarrier is not available on ascend310p"):
        _run(lib, "group_barrier", 5, target="ascend310p")


def test_wait_pre_block_runs_the_blocks_in_order(lib):
    x, out = _run(lib, "in_order", 4)
    np.testing.assert_array_equal(out[0], np.full(W, ((1 * 3 + 2) * 3 + 3) * 3 + 4, np.int32))
    with pytest.raises(AscendCCheckError, match=r"NotifyNextBlock: call WaitPreBlock first"):
        _run(lib, "in_order_skip", 4)
