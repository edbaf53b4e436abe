"""Hand-broken versions of printed kernels must trip the CPU Ascend C API's checks.

Each test edits the source fusedsl printed for the seed kernel (one deliberate
mistake an operator developer could make), runs it through `simulate`, and asserts
the check's message names the API call and the rule.
"""
from __future__ import annotations

import numpy as np
import pytest

import fusedsl as fs


@fs.fused_kernel
def abs_add_relu(a, b):
    return fs.relu(fs.abs(a) + b)


def run_edited(target, a, b, old, new, count=1):
    abs_add_relu._cache.clear()   # each test edits its own copy of the compiled kernel
    k = abs_add_relu.compile(a, b, target=target)
    src = k.source
    assert src.count(old) >= count, f"pattern not in printed source: {old}"
    k._source = src.replace(old, new, count)
    k._library = None
    return k.simulate(a, b)


def arrays(cols=128, rows=192, dtype=np.float32):
    rng = np.random.default_rng(3)
    return rng.standard_normal(cols).astype(dtype), rng.standard_normal((rows, cols)).astype(dtype)


def check(match, *args, **kwargs):
    with pytest.raises(fs.AscendCCheckError, match=match) as info:
        run_edited(*args, **kwargs)
    return str(info.value)


def test_unedited_kernel_passes_every_check():
    a, b = arrays()
    np.testing.assert_array_equal(run_edited("ascend910b", a, b, "", ""), np.maximum(np.abs(a) + b, 0))


def test_ub_overflow():
    a, b = arrays()
    msg = check("InitBuffer", "ascend910b", a, b, "pipe.InitBuffer(q_in_b_1, 2, tiling.tileElems * sizeof(float));",
                "pipe.InitBuffer(q_in_b_1, 2, 100000);")
    assert "ascend910b has 196608" in msg   # the whole 192 KB a TPipe may plan


def test_leaked_tensor_is_reported():
    a, b = arrays()
    check("(?i)leak|never freed|FreeTensor", "ascend910b", a, b, "q_in_b_1.FreeTensor(in_b_1);", "")


def test_dequeue_of_empty_queue():
    a, b = arrays()
    check("DeQue", "ascend910b", a, b, "q_in_b_1.EnQue(in_b_1);", "")


def test_datacopy_length_not_multiple_of_32_bytes():
    a, b = arrays(cols=100, rows=3)
    check("DataCopy", "ascend910b", a, b, "if (n * sizeof(T) % 32 == 0) { AscendC::DataCopy(dst, src, n); return; }",
          "{ AscendC::DataCopy(dst, src, n); return; }")


def test_unaligned_local_tensor():
    a, b = arrays()
    check("(?i)align", "ascend910b", a, b, "const uint32_t o = seg * segStride;",
          "const uint32_t o = seg * segStride + 1;")


def test_two_cores_writing_the_same_bytes():
    a, b = arrays()
    # every tile written over the first rows: cores write different values to the same bytes (cores
    # writing the same values, as CANN's create_vec_index sample does, are accepted)
    msg = check("(?i)block|core", "ascend910b", a, b,
                "CopyRowsOut(gm_y0[row0 * tiling.C + col0]", "CopyRowsOut(gm_y0[col0]")
    assert "y0" in msg


def test_uninitialised_ub_read():
    a, b = arrays()
    check("(?i)never written|uninit", "ascend910b", a, b,
          "CopyRowsIn(in_b_1, gm_p_b[row0 * tiling.C + col0], nrows, ncols, tiling.C, tiling.Cpad);", "")


def test_gm_out_of_bounds():
    a, b = arrays()
    check("GM buffer .b., which has only 98304 bytes", "ascend910b", a, b,
          "CopyRowsIn(in_b_1, gm_p_b[row0 * tiling.C + col0]", "CopyRowsIn(in_b_1, gm_p_b[row0 * tiling.C + col0 + 64]")


def test_api_dtype_not_supported_on_target():
    a, b = arrays()
    # ascend910 has Relu on half only: the printer uses Max there; a hand edit to Relu<float> is caught
    msg = check("Relu", "ascend910", a, b, "AscendC::Max(out0_6[o], t5[o], t3[o], n);", "AscendC::Relu(out0_6[o], t3[o], n);")
    assert "ascend910" in msg


def test_datacopypad_not_available_on_310p():
    a, b = arrays(cols=100, rows=3)
    check("DataCopyPad", "ascend310p", a, b, "        for (uint32_t i = body; i < len; ++i) dst.SetValue(r * ubStride + i, src.GetValue(r * gmStride + i));",
          "        if (body < len) { AscendC::DataCopyExtParams p{1, static_cast<uint32_t>(len * sizeof(T)), 0, 0, 0}; "
          "AscendC::DataCopyPadExtParams<T> pad{false, 0, 0, T(0)}; AscendC::DataCopyPad(dst[r * ubStride], src[r * gmStride], p, pad); }")


def test_compile_error_is_reported_with_compiler_output():
    a, b = arrays()
    with pytest.raises(fs.AscendCCompileError, match="error"):
        run_edited("ascend910b", a, b, "op.Process();", "op.Process()")
