"""Integer matmul / batched matmul / conv2d: numpy's semantics (the operands' dtype, wrapping),
run natively, split at the product (backend_cpu/cube_split.py; int_product.py: exact BLAS products
mod 2**32; int8 matmuls on llvm_kernel in exact float32 chunks of K),
bit for bit numpy's, never on the reference; what does not print says so at the user's line."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import check_user_error, fuzz_settings, marked_line
from fusedsl.backend_cpu import int_product

INTS = (np.int8, np.uint8, np.int32)


def _full_range(rng, shape, dtype, small=False):
    info = np.iinfo(dtype)
    lo, hi = (max(info.min, -3), min(info.max, 3)) if small else (info.min, info.max)
    return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)


def _conv_numpy(x, w, stride, padding):
    """An exact conv2d in int64 with explicit loops over the taps (independent of im2col),
    wrapped to the operands' dtype as torch's integer conv2d is."""
    (sh, sw), (ph, pw) = stride, padding
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    k, _, r, s = w.shape
    ho, wo = (xp.shape[2] - r) // sh + 1, (xp.shape[3] - s) // sw + 1
    out = np.zeros((x.shape[0], k, ho, wo), np.int64)
    for i in range(r):
        for j in range(s):
            win = xp[:, :, i:i + sh * ho:sh, j:j + sw * wo:sw]
            out += np.einsum("nchw,kc->nkhw", win, w[:, :, i, j].astype(np.int64))
    return out.astype(x.dtype)


def _on_cube(kernel, *arrays):
    ck = kernel.compile(*arrays)
    assert [ck.executor(p) for p in ck.kernels] == ["cube"], [ck.executor(p) for p in ck.kernels]
    return ck


# ---- the dtype rule ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", INTS)
def test_integer_matmul_keeps_numpy_dtype_and_wraps(dtype):
    a = np.arange(12).astype(dtype).reshape(3, 4) * dtype(50)
    b = np.full((4, 5), 7, dtype)
    k = fs.fused_kernel(lambda a, b: fs.matmul(a, b))
    got = k(a, b)
    want = np.matmul(a, b)
    assert got.dtype == want.dtype == dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(fs.matmul(a, b), want)   # eager: the reference, same rule
    _on_cube(k, a, b)


# ---- differential: matmul and batched matmul ----------------------------------------------

@st.composite
def _matmul_case(draw):
    dtype = draw(st.sampled_from(INTS))
    m, k, n = (draw(st.sampled_from([1, 2, 3, 5, 7, 17, 33])) for _ in range(3))
    batch_a = draw(st.sampled_from([(), (1,), (2,), (3, 1), (1, 2)]))
    batch_b = draw(st.sampled_from([(), (1,), (2,), (1, 2)]))
    try:
        np.broadcast_shapes(batch_a, batch_b)
    except ValueError:
        batch_b = ()
    small = draw(st.booleans())
    return dtype, batch_a + (m, k), batch_b + (k, n), small, draw(st.integers(0, 2 ** 31))


@given(_matmul_case())
@fuzz_settings(0.06)
def test_integer_matmul_is_numpys_bit_for_bit(case):
    dtype, sa, sb, small, seed = case
    rng = np.random.default_rng(seed)
    a, b = _full_range(rng, sa, dtype, small), _full_range(rng, sb, dtype, small)
    k = fs.fused_kernel(lambda a, b: a @ b)
    _on_cube(k, a, b)
    got = k(a, b)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, np.matmul(a, b))


@given(st.sampled_from(INTS), st.sampled_from([1, 3, 8]), st.sampled_from([1, 2, 5]), st.integers(0, 2 ** 31))
@fuzz_settings(0.03)
def test_integer_matmul_epilogue_and_transposed_operand(dtype, m, n, seed):
    """relu(x @ w.T + bias) - r: the transposed operand (fold-transpose), a bias row, a residual,
    each op wrapping in the dtype as numpy's does."""
    rng = np.random.default_rng(seed)
    x, w = _full_range(rng, (m, 9), dtype), _full_range(rng, (n, 9), dtype)
    bias, r = _full_range(rng, (n,), dtype), _full_range(rng, (m, n), dtype)
    k = fs.fused_kernel(lambda x, w, bias, r: fs.relu(x @ w.T + bias) - r)
    _on_cube(k, x, w, bias, r)
    with np.errstate(over="ignore"):
        want = np.maximum(np.matmul(x, w.T) + bias, 0).astype(dtype) - r
    np.testing.assert_array_equal(k(x, w, bias, r), want)


def test_integer_matmul_is_exact_where_float32_is_not():
    """Sums past 2**24 (float32's last exact integer) and past 2**31 (int32's wraparound), long K
    (several exact float chunks), int32 values too large for float64 (the 16-bit halves)."""
    rng = np.random.default_rng(7)
    k = fs.fused_kernel(lambda a, b: a @ b)
    cases = [(np.int8, (4, 3001), (3001, 6)), (np.uint8, (5, 700), (700, 3)), (np.int32, (3, 40), (40, 4)),
             (np.int32, (2, 1), (1, 2))]
    for dtype, sa, sb in cases:
        a, b = _full_range(rng, sa, dtype), _full_range(rng, sb, dtype)
        np.testing.assert_array_equal(k(a, b), np.matmul(a, b), err_msg=str((dtype, sa)))
    # int32 whose sum passes 2**31: wraps as numpy's
    a = np.full((2, 400), 2 ** 21, np.int32)
    b = np.full((400, 2), 3, np.int32)
    np.testing.assert_array_equal(k(a, b), np.matmul(a, b))
    assert int(k(a, b)[0, 0]) == 400 * 3 * 2 ** 21 - 2 ** 32


def test_integer_product_module_matches_numpy_on_views():
    """int_product.matmul_2d on strided views and into a strided output."""
    rng = np.random.default_rng(3)
    a = _full_range(rng, (6, 10), np.int32)[:, ::2]
    b = _full_range(rng, (10, 8), np.int32)[::2, 1::2]
    out = np.zeros((6, 8), np.int32)[:, ::2]
    int_product.matmul_2d(a, b, out)
    np.testing.assert_array_equal(out, np.matmul(a, b))


def test_integer_matmul_in_a_program_and_with_out():
    """Called twice with the same arrays (the bound program) and with out=: same results."""
    rng = np.random.default_rng(5)
    a, b = _full_range(rng, (4, 6), np.int8), _full_range(rng, (6, 3), np.int8)
    k = fs.fused_kernel(lambda a, b: (a @ b) * a[:, :3])
    want = np.matmul(a, b) * a[:, :3]
    np.testing.assert_array_equal(k(a, b), want)
    a[0, 0] += 1
    want = np.matmul(a, b) * a[:, :3]
    np.testing.assert_array_equal(k(a, b), want)
    out = np.empty((4, 3), np.int8)
    k(a, b, out=out)
    np.testing.assert_array_equal(out, want)


# ---- differential: conv2d ------------------------------------------------------------

@given(st.sampled_from(INTS), st.sampled_from([1, 2]), st.sampled_from([1, 3]), st.sampled_from([1, 2, 5]),
       st.sampled_from([(1, 1), (3, 3), (2, 3)]), st.sampled_from([(1, 1), (2, 1)]), st.sampled_from([(0, 0), (1, 2)]),
       st.integers(0, 2 ** 31))
@fuzz_settings(0.04)
def test_integer_conv2d_with_bias_is_exact(dtype, n, c, kout, rs, stride, padding, seed):
    rng = np.random.default_rng(seed)
    x = _full_range(rng, (n, c, 6, 7), dtype)
    w = _full_range(rng, (kout, c) + rs, dtype)
    bias = _full_range(rng, (kout, 1, 1), dtype)
    k = fs.fused_kernel(lambda x, w, bias: fs.conv2d(x, w, stride=stride, padding=padding) + bias)
    _on_cube(k, x, w, bias)
    with np.errstate(over="ignore"):
        want = _conv_numpy(x, w, stride, padding) + bias
    np.testing.assert_array_equal(k(x, w, bias), want)


# ---- dtypes fusedsl does not have -------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int16, np.int64])
def test_int16_and_int64_operands_are_refused_at_the_call(dtype):
    a = np.ones((2, 3), dtype)
    k = fs.fused_kernel(lambda a, b: a @ b)
    with pytest.raises(fs.FusedslError) as info:
        k(a, a.T.copy())   # LINE-MARK call
    check_user_error(info, file=__file__, line=_line("call"), message=f"dtype {np.dtype(dtype).name} is not supported")


def _line(mark):
    return marked_line(__file__, mark)


# ---- Ascend C: what the cube cannot print says so at the user's line -------------------------

def _int8_matmul(a, b):
    return fs.matmul(a, b)   # LINE-MARK int8-matmul


def _int_conv(x, w):
    return fs.conv2d(x, w, padding=1)   # LINE-MARK int-conv


def _located(info, mark, message):
    """A compile-time refusal (require_ascendc): the message, at the op's line in this file, and
    no fusedsl file named (the traceback is the compile call's, checked elsewhere)."""
    text = str(info.value)
    assert re.search(message, text), text
    assert f"{__file__}:{marked_line(__file__, mark)}" in text, text
    assert "fusedsl/" not in text.replace(__file__, ""), text


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_int8_conv2d_prints_and_the_simulated_kernel_is_numpys(target):
    """The cube sums int8 x int8 in int32, the im2col gathers int8 through half (Gather has no int8
    form) and C is wrapped to int8 as numpy wraps: bit for bit, with padding, a stride on 910B and
    an int32 per-channel epilogue (a simulate build each)."""
    rng = np.random.default_rng(21)
    x, w = _full_range(rng, (2, 3, 7, 9), np.int8), _full_range(rng, (5, 3, 3, 3), np.int8)
    bias = _full_range(rng, (1, 5, 1, 1), np.int32, small=True)
    stride = 2 if target == "ascend910b" else 1

    @fs.fused_kernel(target=target, require_ascendc=True)
    def k(x, w, bias):
        y = fs.conv2d(x, w, stride=stride, padding=1)
        return y, fs.relu(y), y.astype(np.int32) * 3 + bias

    ck = k.compile(x, w, bias)
    plan, = ck.kernels
    assert plan.printable and ck.executor(plan) == "cube"
    assert "AscendC::Gather(panh, xh, offs" in ck.source
    y = _conv_numpy(x, w, (stride, stride), (1, 1))
    want = (y, np.maximum(y, 0), y.astype(np.int32) * 3 + bias)
    for got, sim, wv in zip(k(x, w, bias), ck.simulate(x, w, bias), want):
        np.testing.assert_array_equal(got, wv)
        np.testing.assert_array_equal(sim, wv)


def test_a_uint8_conv2d_is_refused_at_the_op_with_what_to_do():
    x, w = np.ones((1, 2, 5, 5), np.uint8), np.ones((3, 2, 3, 3), np.uint8)
    with pytest.raises(fs.ScheduleError) as info:
        fs.fused_kernel(_int_conv, target="ascend910b", require_ascendc=True).compile(x, w)
    _located(info, "int-conv", message=r"ascend910b's cube has no uint8 x uint8 form for this conv2d \(its integer "
                                       r"product is int8 x int8 into int32\)(.|\n)*use int8 operands when the values fit")


@pytest.mark.parametrize("dtype", [np.int32, np.uint8])
def test_integer_products_without_a_cube_form_are_refused_with_what_to_do(dtype):
    a = np.ones((3, 4), dtype)
    with pytest.raises(fs.ScheduleError) as info:
        fs.fused_kernel(_int8_matmul, target="ascend310p", require_ascendc=True).compile(a, a.T.copy())
    name = np.dtype(dtype).name
    _located(info, "int8-matmul",
                     message=rf"ascend310p's cube has no {name} x {name} form for this matmul \(its integer product "
                             r"is int8 x int8 into int32\)(.|\n)*use int8 operands when the values fit in \[-128, 127\]")


# ---- Ascend C: int8 x int8 on the cube, int32 C wrapped to int8 (a simulate build each) ------

def test_int8_matmul_prints_on_910b_and_the_simulated_kernel_is_numpys():
    """Batched A over a shared B; the matmul's value, relu of it, a dequantising float32 scale and an
    int32 epilogue: the cube sums in int32, the printer wraps C to int8 (And / Adds / casts), and
    every result equals numpy's bit for bit (the epilogue stays in range, so no 8-bit op saturates)."""
    rng = np.random.default_rng(11)
    a, b = _full_range(rng, (2, 37, 70), np.int8), _full_range(rng, (70, 45), np.int8)
    bias = _full_range(rng, (45,), np.int32, small=True)

    @fs.fused_kernel(target="ascend910b", require_ascendc=True)
    def k(a, b, bias, s):
        y = a @ b
        return y, fs.relu(y), y.astype(np.float32) * s, y.astype(np.int32) * 3 + bias

    ck = k.compile(a, b, bias, np.float32(0.5))
    plan, = ck.kernels
    assert plan.printable and ck.executor(plan) == "cube"
    src = ck.source
    assert "MatmulType<AscendC::TPosition::VECIN, CubeFormat::ND, int32_t>" in src and "ReinterpretCast<int16_t>" in src
    y = np.matmul(a, b)
    want = (y, np.maximum(y, 0), y.astype(np.float32) * np.float32(0.5), y.astype(np.int32) * 3 + bias)
    for got, sim, w in zip(k(a, b, bias, np.float32(0.5)), ck.simulate(a, b, bias, np.float32(0.5)), want):
        np.testing.assert_array_equal(got, w)
        np.testing.assert_array_equal(sim, w)


def test_int8_epilogue_arithmetic_wraps_like_numpy_on_the_chip():
    """int8 add / sub / neg / abs / mul after an int8 matmul: the vector unit computes them in half
    (add...: exact there) or float32 (mul: exact there, then rounded to half) and the printer wraps
    the exact value to int8 as numpy does before the saturating narrowing casts, also along a chain
    (relu(y + y) - c, y * c + c): simulate equals numpy bit for bit, no SaturationWarning."""
    rng = np.random.default_rng(13)
    a, b = _full_range(rng, (2, 19, 40), np.int8), _full_range(rng, (40, 33), np.int8)
    c = _full_range(rng, (19, 33), np.int8)

    @fs.fused_kernel(target="ascend910b", require_ascendc=True)
    def k(a, b, c):
        y = a @ b
        return y + c, y - c, -y, fs.abs(y), y + 100, fs.relu(y + y) - c, y * c, y * 3 + c

    ck = k.compile(a, b, c)
    src = ck.source
    assert src.count("wrapped to int8 like numpy (the chip's half -> int8 cast saturates)") == 8
    assert src.count("the exact product wrapped to int8 like numpy") == 2
    y = np.matmul(a, b)
    want = (y + c, y - c, -y, np.abs(y), y + np.int8(100), np.maximum(y + y, 0).astype(np.int8) - c, y * c,
            y * np.int8(3) + c)
    with warnings.catch_warnings():
        warnings.simplefilter("error", fs.SaturationWarning)
        sim = ck.simulate(a, b, c)
    for got, s, w in zip(k(a, b, c), sim, want):
        np.testing.assert_array_equal(got, w)
        np.testing.assert_array_equal(s, w)


def test_int8_matmul_with_a_transposed_operand_prints_on_310p():
    rng = np.random.default_rng(12)
    x, w = _full_range(rng, (20, 33), np.int8), _full_range(rng, (17, 33), np.int8)
    k = fs.fused_kernel(lambda x, w: x @ w.T, target="ascend310p", require_ascendc=True)
    ck = k.compile(x, w)
    np.testing.assert_array_equal(ck.simulate(x, w), np.matmul(x, w.T))


def test_imported_torch_integer_matmul_and_conv_wrap_like_torch():
    """torch's integer matmul and conv2d keep the operands' dtype and wrap, as fs.matmul / fs.conv2d
    now do: an imported model gives torch's values and dtypes, on the cube executor."""
    torch = pytest.importorskip("torch")

    class M(torch.nn.Module):
        def forward(self, a, b, x, w):
            return torch.relu(a @ b + 3), torch.nn.functional.conv2d(x, w, padding=1) * 2

    rng = np.random.default_rng(9)
    for dtype in (np.int8, np.uint8):   # each a torch.export (~4 s); int32 wraps the same way
        args = [_full_range(rng, s, dtype) for s in ((3, 70), (70, 5), (2, 3, 5, 6), (4, 3, 3, 3))]
        tensors = [torch.from_numpy(x) for x in args]
        m = fs.from_torch(M(), *tensors)
        for got, want in zip(m(*args), M()(*tensors)):
            assert got.dtype == want.numpy().dtype
            np.testing.assert_array_equal(got, want.numpy(), err_msg=np.dtype(dtype).name)
        ck = m.compile(*args)
        assert {ck.executor(p) for p in ck.kernels} == {"cube"}, [ck.executor(p) for p in ck.kernels]


def _grouped(x, w):
    return fs.conv2d(x, w, groups=2)   # LINE-MARK grouped


def test_grouped_integer_conv_is_refused_at_the_users_line():
    x, w = np.ones((1, 4, 5, 5), np.int8), np.ones((4, 2, 3, 3), np.int8)
    with pytest.raises(fs.DTypeError) as info:
        fs.fused_kernel(_grouped)(x, w)
    text = str(info.value)
    assert f"{__file__}:{marked_line(__file__, 'grouped')}" in text, text
    assert "conv2d of integer tensors is supported as a plain convolution (no groups, dilation or transposition), " \
           "got a int8 input" in text, text
    assert "cast the input and the weight to float32" in text


def test_a_product_big_enough_for_the_pool_is_exact():
    """2**24 multiply-adds and more: row blocks on the pool's threads (blas.row_blocks)."""
    rng = np.random.default_rng(4)
    a, b = _full_range(rng, (300, 256), np.int8), _full_range(rng, (256, 256), np.int8)
    np.testing.assert_array_equal(fs.fused_kernel(lambda a, b: a @ b)(a, b), np.matmul(a, b))
