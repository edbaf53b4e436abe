"""Sort32, MrgSort and Transpose on the CPU (tests/ascendc_kernels/sort_kernels.cpp, written from the
asc-devkit docs) against numpy, and their per-chip availability and checks."""
import os

import numpy as np
import pytest
from conftest import ASCENDC_KERNELS, fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

from fusedsl.backend_ascendc import cpu_runner
from fusedsl.errors import AscendCCheckError

pytestmark = pytest.mark.usefixtures("private_cache_dir")


@pytest.fixture(scope="module")
def lib():
    with open(os.path.join(ASCENDC_KERNELS, "sort_kernels.cpp"), encoding="utf-8") as f:
        return cpu_runner.build(f.read(), name="sort_kernels")


def _sort(lib, scores, target="ascend910b"):
    idx = np.arange(128, dtype=np.uint32)[::-1].copy()
    out = np.zeros(256, np.float32)
    lib.launch("sort128", 1, [("x", scores), ("idx", idx), ("out", out)], target=target)
    return idx, out


@fuzz_settings(0.2)
@given(st.lists(st.integers(-8, 8), min_size=128, max_size=128))
def test_sort32_then_mrgsort_sorts_descending_with_ties_in_input_order(lib, values):
    scores = np.array(values, np.float32) * np.float32(0.5)   # few distinct values: many ties
    idx, out = _sort(lib, scores)
    got_scores = out[0::2]
    got_index = out[1::2].view(np.uint32)
    order = np.argsort(-scores, kind="stable")   # ties: Sort32 keeps position order, MrgSort list order
    np.testing.assert_array_equal(got_scores, scores[order])
    np.testing.assert_array_equal(got_index, idx[order])


def test_sort32_is_not_on_310p(lib):
    with pytest.raises(AscendCCheckError, match=r"Sort32 is not available on ascend310p \(A2/A3 products only\)"):
        _sort(lib, np.zeros(128, np.float32), target="ascend310p")


def test_mrgsort_valid_bits(lib):
    with pytest.raises(AscendCCheckError, match=r"MrgSort: validBit = 5; it must be 0b0011, 0b0111 or 0b1111"):
        lib.launch("mrgsort_bad_validbit", 1, [("x", np.zeros(8, np.float32)), ("y", np.zeros(8, np.float32)),
                                               ("z", np.zeros(8, np.float32))])


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_transpose_16x16_and_nchw_to_nhwc(lib, target):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 16)).astype(np.float16)
    out = np.zeros((16, 16), np.float16)
    lib.launch("transpose16", 1, [("x", x), ("y", np.zeros(1, np.float16)), ("out", out)], target=target)
    np.testing.assert_array_equal(out, x.T)
    x = rng.standard_normal((2, 3, 4, 8)).astype(np.float16)
    out = np.zeros((2, 4, 8, 3), np.float16)
    lib.launch("nchw2nhwc", 1, [("x", x), ("y", np.zeros(1, np.float16)), ("out", out)], target=target)
    np.testing.assert_array_equal(out, x.transpose(0, 2, 3, 1))


def test_cast_half_to_int4_packs_two_per_byte(lib):
    x = np.random.default_rng(1).uniform(-12, 12, 256).astype(np.float16)
    out = np.zeros(128, np.int8)
    lib.launch("cast_int4", 1, [("x", x), ("y", np.zeros(1, np.float16)), ("out", out)])
    q = np.clip(np.floor(x.astype(np.float32)), -8, 7).astype(np.int8) & 0xF
    np.testing.assert_array_equal(out.view(np.uint8), (q[0::2] | (q[1::2] << 4)).astype(np.uint8))
    with pytest.raises(AscendCCheckError, match=r"int4b_t is not supported on ascend310p"):
        lib.launch("cast_int4", 1, [("x", x), ("y", np.zeros(1, np.float16)), ("out", out)], target="ascend310p")


@pytest.mark.parametrize("entry,dtype,target", [("proposals_half", np.float16, "ascend310p"),
                                                ("proposals_float", np.float32, "ascend310p"),
                                                ("proposals_half", np.float16, "ascend910")])
def test_region_proposals_concat_sort_merge_extract(lib, entry, dtype, target):
    # ProposalConcat -> RpSort16 -> MrgSort4 -> ProposalExtract: scores descending, ties in input order, each
    # proposal's label travelling with its score
    rng = np.random.default_rng(4)
    scores = (rng.integers(-6, 6, 64) * 0.5).astype(dtype)   # few values: many ties
    labels = np.arange(64).astype(dtype)
    out = np.zeros(128, dtype)
    lib.launch(entry, 1, [("x", scores), ("lab", labels), ("out", out)], target=target)
    order = np.argsort(-scores.astype(np.float32), kind="stable")
    np.testing.assert_array_equal(out[:64], scores[order])
    np.testing.assert_array_equal(out[64:], labels[order])


def test_region_proposal_checks(lib):
    z = np.zeros(128, np.float16)
    with open(os.path.join(ASCENDC_KERNELS, "sort_kernels.cpp"), encoding="utf-8") as f:
        line = next(i for i, text in enumerate(f, 1) if "LINE:extract_overrun" in text)
    with pytest.raises(AscendCCheckError, match=rf"sort_kernels\.cpp:{line}: ProposalExtract: srcLocal needs 8192 "
                                                r"bytes but the LocalTensor has only 1024"):
        lib.launch("proposals_overrun", 1, [("x", z), ("lab", z), ("out", z)], target="ascend310p")
    with pytest.raises(AscendCCheckError, match=r"ProposalConcat is not available on ascend910b \(Atlas 训练系列 / "
                                                r"推理系列 AI Core only"):
        lib.launch("proposals_half", 1, [("x", z), ("lab", z), ("out", z)], target="ascend910b")
    with pytest.raises(AscendCCheckError, match=r"ProposalConcat: float region proposals are not supported on ascend910"):
        lib.launch("proposals_float", 1, [("x", z), ("lab", z), ("out", z.astype(np.float32))], target="ascend910")
