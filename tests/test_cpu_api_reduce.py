"""Reductions of the CPU Ascend C API against numpy models of the hardware: ReduceSum/Max/Min
(count and mask/repeat forms, calIndex, scratch size), WholeReduce*/ReduceRepeat,
BlockReduce*/ReduceDataBlock and Brcb, with the fp16 pairwise-tree order and the per-chip
rules.  One build (tests/ascendc_kernels/reduce_kernels.cpp) drives every case."""
import os

import numpy as np
import pytest
from conftest import ASCENDC_KERNELS

from fusedsl.backend_ascendc import cpu_runner
from fusedsl.errors import AscendCCheckError

pytestmark = pytest.mark.usefixtures("private_cache_dir")

SRC_BYTES, DST_BYTES = 65536, 4096
OPS = ["REDUCE_SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_SUM_L0", "REDUCE_MAX_L0", "REDUCE_MIN_L0",
       "WHOLE_SUM", "WHOLE_MAX", "WHOLE_MIN", "BLOCK_SUM", "BLOCK_MAX", "BLOCK_MIN",
       "REPEAT_SUM", "REPEAT_MAX", "REPEAT_MIN", "DATABLOCK_SUM", "DATABLOCK_MAX", "DATABLOCK_MIN", "BRCB",
       "PAIR_SUM", "PAIR_SUM_OLD", "WHOLE_SUM_COUNTER", "REDUCE_SUM_SPR"]
ORDERS = {"VALUE_INDEX": 0, "INDEX_VALUE": 1, "ONLY_VALUE": 2, "ONLY_INDEX": 3}


@pytest.fixture(scope="module")
def lib():
    with open(os.path.join(ASCENDC_KERNELS, "reduce_kernels.cpp"), encoding="utf-8") as f:
        return cpu_runner.build(f.read(), name="reduce_kernels")


def run(lib, dtype, src, op, *, count=0, repeat=0, dst_rep=1, src_blk=1, src_rep=8, opt=0, dst_off=0,
        tmp=4096, tmp_at=0, bits=None, target="ascend910b"):
    p = np.zeros(16, np.int32)
    p[:10] = [OPS.index(op), count, repeat, dst_rep, src_blk, src_rep, opt, dst_off, tmp, tmp_at]
    if bits is not None:
        p[10:14] = np.array(bits, np.uint64).view(np.uint32).view(np.int32)
        p[14] = 1
    s = np.zeros(SRC_BYTES // np.dtype(dtype).itemsize, dtype)
    s[:src.size] = src
    d = np.full(DST_BYTES // np.dtype(dtype).itemsize, 7, dtype)   # untouched results stay 7
    name = "half" if dtype == np.float16 else "float"
    lib.launch(f"reduce_{name}", 1, [("params", p), ("src", s), ("dst", d)], target=target)
    return d


def fails(lib, dtype, src, op, match, **kw):
    with pytest.raises(AscendCCheckError) as e:
        run(lib, dtype, src, op, **kw)
    assert match in str(e.value), str(e.value)
    return str(e.value)


# ---- numpy models of the hardware -------------------------------------------------------

def tree_sum(v, dtype):
    """Adjacent pairs added in a binary tree, every partial sum rounded to `dtype`."""
    v = [np.float64(x) for x in np.asarray(v, dtype)]
    while len(v) > 1:
        v = [np.float64(dtype(v[i] + v[i + 1])) if i + 1 < len(v) else v[i] for i in range(0, len(v), 2)]
    return dtype(v[0]) if v else dtype(0)


def lanes_of(dtype):
    return 256 // np.dtype(dtype).itemsize


def repeat_sums(x, dtype):
    """Per-repeat tree sums over whole repeats (the tail padded with 0)."""
    n = lanes_of(dtype)
    pad = np.zeros(-(-x.size // n) * n, dtype)
    pad[:x.size] = x
    return [tree_sum(pad[i:i + n], dtype) for i in range(0, pad.size, n)]


def sum_sequential(x, dtype):          # ReduceSum count form on 2201
    parts = repeat_sums(x, dtype)
    acc = parts[0]
    for p in parts[1:]:
        acc = dtype(np.float64(acc) + np.float64(p))
    return acc


def sum_tree_of_repeats(x, dtype):     # every other form/chip
    parts = np.array(repeat_sums(x, dtype), dtype)
    while parts.size > 1:
        parts = np.array(repeat_sums(parts, dtype), dtype)
    return parts[0]


def max_tmp_elements(count, dtype, cal_index):
    """ReduceMax/ReduceMin's sharedTmpBuffer formula from the API page, in elements."""
    epb, epr = 32 // np.dtype(dtype).itemsize, lanes_of(dtype)
    up = lambda a, b: -(-a // b)  # noqa: E731
    iter1 = up(count, epr) * 2
    need = up(iter1, epb) * epb
    if not cal_index:
        return need
    iter2 = up(iter1, epr) * 2
    end2 = up(iter2, epb) * epb
    if iter2 <= 2:
        return need + end2
    return need + end2 + up(up(iter2, epr) * 2, epb) * epb


def index_bits(v, dtype):
    return v.view(np.uint16 if dtype == np.float16 else np.uint32)


# ---- whole-tensor reductions ------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_reduce_sum_count_form_order_per_chip(lib, dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(3001) * 8).astype(dtype)
    got_a2 = run(lib, dtype, x, "REDUCE_SUM", count=x.size, tmp=8)     # 2201 never uses the scratch
    assert got_a2[0] == sum_sequential(x, dtype)
    got_310p = run(lib, dtype, x, "REDUCE_SUM", count=x.size, target="ascend310p")
    assert got_310p[0] == sum_tree_of_repeats(x, dtype)
    assert got_a2[1] == 7                                              # only one result written
    np.testing.assert_allclose(np.float64(got_a2[0]), x.astype(np.float64).sum(), rtol=5e-2 if dtype == np.float16
                               else 1e-5)
    if dtype == np.float16:
        # The tree is what the device does: a naive float32 accumulation rounds differently here.
        assert (sum_sequential(x, dtype), sum_tree_of_repeats(x, dtype)) != (dtype(x.astype(np.float32).sum()),) * 2


def test_reduce_sum_scratch_size_follows_the_page(lib):
    x = np.ones(4096, np.float16)                   # 32 repeats: 32 elements of scratch (64 B)
    assert run(lib, np.float16, x, "REDUCE_SUM", count=4096, tmp=32, target="ascend310p")[0] == 4096
    fails(lib, np.float16, x, "REDUCE_SUM", "ReduceSum: sharedTmpBuffer has 32 bytes but this call needs 64",
          count=4096, tmp=16, target="ascend310p")
    # dst may share the scratch, and the scratch may be src itself.
    assert run(lib, np.float16, x, "REDUCE_SUM", count=4096, tmp=32, tmp_at=2, target="ascend310p")[0] == 4096
    assert run(lib, np.float16, x, "REDUCE_SUM", count=4096, tmp=32, tmp_at=1, target="ascend310p")[0] == 4096


def test_fp16_sum_overflows_per_step_not_at_the_end(lib):
    x = np.full(256, 60000, np.float16)
    x[1::2] = -60000
    # pairs cancel inside the tree: exact 0 even though a running sum would pass 65504
    assert run(lib, np.float16, x, "REDUCE_SUM", count=256)[0] == 0
    y = np.full(4, 40000, np.float16)               # (40000 + 40000) overflows half in the first step
    assert np.isinf(run(lib, np.float16, y, "REDUCE_SUM", count=4)[0])


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_reduce_max_min_count_form_with_index(lib, dtype):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(2500).astype(dtype)
    x[1700] = x[2200] = 50                           # ties report the smallest index
    x[9] = -50
    ib = index_bits
    for op, want, at in (("REDUCE_MAX", 50, 1700), ("REDUCE_MIN", -50, 9)):
        d = run(lib, dtype, x, op, count=x.size, opt=1)
        assert d[0] == want and ib(d, dtype)[1] == at
        d = run(lib, dtype, x, op, count=x.size, opt=0)
        assert d[0] == want and d[1] == 7
    need, need_idx = max_tmp_elements(x.size, dtype, False), max_tmp_elements(x.size, dtype, True)
    assert (need, need_idx) == ((80, 96) if dtype == np.float32 else (48, 64))
    run(lib, dtype, x, "REDUCE_MAX", count=x.size, opt=1, tmp=need_idx)
    fails(lib, dtype, x, "REDUCE_MAX", "ReduceMax: sharedTmpBuffer has", count=x.size, opt=1, tmp=need_idx - 1)
    run(lib, dtype, x, "REDUCE_MIN", count=x.size, tmp=need)
    fails(lib, dtype, x, "REDUCE_MIN", "this call needs", count=x.size, tmp=need - 1)


def test_reduce_level0_forms(lib):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(64 * 16).astype(np.float32)
    # mask 40 of 64 lanes, 5 repeats 2 repeats apart (srcRepStride 16 blocks)
    rows = x.reshape(16, 64)[0:10:2, :40]
    d = run(lib, np.float32, x, "REDUCE_SUM_L0", count=40, repeat=5, src_rep=16, target="ascend910b")
    want = sum_tree_of_repeats(np.array([tree_sum(np.r_[r, np.zeros(24, np.float32)], np.float32) for r in rows],
                                        np.float32), np.float32)
    assert d[0] == want
    d = run(lib, np.float32, x, "REDUCE_MAX_L0", count=40, repeat=5, src_rep=16, opt=1)
    r, j = np.unravel_index(np.argmax(rows), rows.shape)
    assert d[0] == rows.max() and d.view(np.uint32)[1] == r * 64 + j
    # bitwise mask: odd lanes only
    bits = [0xAAAAAAAAAAAAAAAA, 0]
    d = run(lib, np.float32, x, "REDUCE_MIN_L0", repeat=3, src_rep=8, bits=bits, opt=1)
    sel = x.reshape(16, 64)[:3, 1::2]
    r, j = np.unravel_index(np.argmin(sel), sel.shape)
    assert d[0] == sel.min() and d.view(np.uint32)[1] == r * 64 + 2 * j + 1
    fails(lib, np.float32, x, "REDUCE_SUM_L0", "mask = 65 is out of range", count=65, repeat=1)


# ---- per repeat / per block -------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_whole_reduce_and_reduce_repeat(lib, dtype):
    n = lanes_of(dtype)
    rng = np.random.default_rng(4)
    x = rng.standard_normal(n * 8).astype(dtype)
    m = n * 3 // 4
    rows = x.reshape(8, n)[:, :m]
    sums = [tree_sum(np.r_[r, np.zeros(n - m, dtype)], dtype) for r in rows]
    for op in ("WHOLE_SUM", "REPEAT_SUM"):
        d = run(lib, dtype, x, op, count=m, repeat=8)
        np.testing.assert_array_equal(d[:8], np.array(sums, dtype))
        assert d[8] == 7
    ib = lambda a: index_bits(a, dtype)  # noqa: E731
    for op in ("WHOLE_MAX", "REPEAT_MAX"):
        d = run(lib, dtype, x, op, count=m, repeat=8, opt=ORDERS["VALUE_INDEX"])
        np.testing.assert_array_equal(d[0:16:2], rows.max(axis=1))
        np.testing.assert_array_equal(ib(d)[1:16:2], rows.argmax(axis=1))
        d = run(lib, dtype, x, op, count=m, repeat=8, opt=ORDERS["INDEX_VALUE"])
        np.testing.assert_array_equal(d[1:16:2], rows.max(axis=1))
    d = run(lib, dtype, x, "WHOLE_MIN", count=m, repeat=8, opt=ORDERS["ONLY_VALUE"], dst_rep=2)
    np.testing.assert_array_equal(d[0:16:2], rows.min(axis=1))
    assert (d[1:16:2] == 7).all()
    d = run(lib, dtype, x, "WHOLE_MIN", count=m, repeat=8, opt=ORDERS["ONLY_INDEX"])
    np.testing.assert_array_equal(d.view(np.uint32)[:8], rows.argmin(axis=1))   # uint32 on 2201
    # srcBlkStride 2: every other block of a 16-block row
    y = rng.standard_normal(n * 4).astype(dtype)
    d = run(lib, dtype, y, "WHOLE_MAX", count=n, repeat=2, src_blk=2, src_rep=16, opt=ORDERS["ONLY_VALUE"])
    blocks = y.reshape(2, 16, n // 8)[:, ::2, :].reshape(2, n)
    np.testing.assert_array_equal(d[:2], blocks.max(axis=1))
    # bitwise mask
    d = run(lib, dtype, x, "REPEAT_MAX", repeat=8, bits=[0x0F0F0F0F0F0F0F0F, 0xFF], opt=ORDERS["ONLY_VALUE"])
    lane = np.arange(n)
    sel = ((0x0F0F0F0F0F0F0F0F >> (lane % 64)) & 1).astype(bool) & (lane < 64)
    sel |= (lane >= 64) & (lane < 72)
    np.testing.assert_array_equal(d[:8], x.reshape(8, n)[:, sel].max(axis=1))


def test_whole_reduce_rules_per_chip(lib):
    x = np.ones(1024, np.float16)
    run(lib, np.float16, x, "WHOLE_MAX", count=128, repeat=2, opt=ORDERS["INDEX_VALUE"], target="ascend310p")
    fails(lib, np.float16, x, "WHOLE_MAX", "WholeReduceMax: ReduceOrder::ORDER_INDEX_VALUE is not supported on "
          "ascend910 (supported: ORDER_VALUE_INDEX)", count=128, repeat=2, opt=1, target="ascend910")
    fails(lib, np.float16, x, "WHOLE_MIN", "ORDER_ONLY_INDEX is not supported on ascend310p", count=128, repeat=2,
          opt=3, target="ascend310p")
    fails(lib, np.float32, x.astype(np.float32), "WHOLE_SUM",
          "WholeReduceSum<float> is not supported on ascend910 (supported: half)", count=64, repeat=1,
          target="ascend910")
    fails(lib, np.float32, x.astype(np.float32), "REDUCE_SUM",
          "ReduceSum<float> is not supported on ascend910 (supported: half)", count=64, target="ascend910")
    fails(lib, np.float16, x, "WHOLE_SUM", "dstRepStride = 0 is not supported on ascend910", count=128, repeat=2,
          dst_rep=0, target="ascend910")
    fails(lib, np.float16, x, "WHOLE_SUM", "repeatTime = 256 is outside [0, 255]", count=128, repeat=256)
    # value+index pairs of float need 8-byte aligned dst; a plain sum needs only 4
    fails(lib, np.float32, x.astype(np.float32), "WHOLE_MAX", "dst starts at UB offset 65540, which is not 8-byte",
          count=64, repeat=1, dst_off=1)
    assert run(lib, np.float32, x.astype(np.float32), "WHOLE_SUM", count=64, repeat=1, dst_off=1)[1] == 64
    # mask 0 / repeatTime 0 are a no-op on 2201
    assert (run(lib, np.float16, x, "WHOLE_SUM", count=0, repeat=2) == 7).all()
    fails(lib, np.float16, x, "WHOLE_SUM", "the mask selects no lane; ascend310p does not document", count=0,
          repeat=2, target="ascend310p")


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_block_reduce_and_reduce_data_block(lib, dtype):
    n = lanes_of(dtype)
    pb = n // 8
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(n * 4) * 100).astype(dtype)
    m = 2 * pb + pb // 2                                # two full blocks and half of the third
    blocks = x.reshape(4, 8, pb)
    for op, f in (("BLOCK_SUM", None), ("DATABLOCK_SUM", None), ("BLOCK_MAX", np.max), ("DATABLOCK_MIN", np.min)):
        d = run(lib, dtype, x, op, count=m, repeat=4, dst_rep=1).reshape(-1)[:32].reshape(4, 8)
        for r in range(4):
            for b in range(8):
                lanes = blocks[r, b, :max(0, min(pb, m - b * pb))]
                if lanes.size == 0:
                    assert d[r, b] == 7, (op, r, b)        # a block with no lane is not written
                elif f is None:
                    assert d[r, b] == tree_sum(np.r_[lanes, np.zeros(pb - lanes.size, dtype)], dtype), (op, r, b)
                else:
                    assert d[r, b] == f(lanes), (op, r, b)
    # dst aligned to one group of 8 results (16 B half, 32 B float)
    fails(lib, dtype, x, "BLOCK_SUM", "-byte aligned", count=n, repeat=1, dst_off=4)
    fails(lib, np.float32, x.astype(np.float32), "BLOCK_SUM", "BlockReduceSum<float> is not supported on ascend910",
          count=64, repeat=1, target="ascend910")


def test_brcb(lib):
    x = np.arange(32, dtype=np.float32)
    d = run(lib, np.float32, x, "BRCB", repeat=2, src_blk=1, dst_rep=8)
    np.testing.assert_array_equal(d[:128], np.repeat(x[:16], 8))
    d = run(lib, np.float16, x.astype(np.float16), "BRCB", repeat=1, src_blk=2, dst_rep=8)
    want = np.full(256, 7, np.float16)
    for k in range(8):
        want[k * 32: k * 32 + 16] = k
    np.testing.assert_array_equal(d[:256], want)
    fails(lib, np.float32, x, "BRCB", "Brcb is not available on ascend910", repeat=1, target="ascend910")


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_pair_reduce_counter_mode_and_sum_register(lib, dtype):
    n = lanes_of(dtype)
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(n * 4) * 10).astype(dtype)
    pairs = (x[0::2].astype(np.float64) + x[1::2]).astype(dtype)         # one rounding per pair
    for op in ("PAIR_SUM", "PAIR_SUM_OLD"):
        d = run(lib, dtype, x, op, count=n, repeat=4, dst_rep=1)
        np.testing.assert_array_equal(d[:2 * n], pairs)
    d = run(lib, dtype, x, "PAIR_SUM", count=6, repeat=1)                 # lanes 0..5: pairs 0..2
    np.testing.assert_array_equal(d[:3], pairs[:3])
    assert (d[3:n // 2] == 7).all()
    # counter mode: 2.5 repeats' worth of elements, one sum per repeat, repeatTime ignored
    cnt = n * 2 + n // 2
    d = run(lib, dtype, x, "WHOLE_SUM_COUNTER", count=cnt)
    want = [tree_sum(np.r_[x[r * n:min(cnt, (r + 1) * n)], np.zeros(max(0, (r + 1) * n - cnt), dtype)], dtype)
            for r in range(3)]
    np.testing.assert_array_equal(d[:3], np.array(want, dtype))
    assert d[3] == 7
    d = run(lib, dtype, x, "REDUCE_SUM_SPR", count=x.size)
    assert d[8] == d[0] == sum_sequential(x, dtype)
