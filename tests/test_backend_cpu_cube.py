"""Cube kernels on the CPU: matmul / conv2d with a fused epilogue against numpy, through
kernel(*arrays) -- the cube and conv kinds' kernels on llvm_kernel, and what those kinds refuse split
at the product (backend_cpu/cube_split.py: the product on the host, the rest a kernel of its own)."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_close, fuzz_settings
from hypothesis import assume, given, strategies as st

import fusedsl as fs
from fusedsl.backend_cpu import conv_product, conv_sparse, kernel_cpu, tiled_product
from fusedsl.backend_cpu.cube_split import SplitCpu
from fusedsl.backend_cpu.kernel_cpu import ScheduleCpu
from fusedsl.ir.ops import conv2d_reference
from fusedsl.reference import run_function


def _fused_fn(kernel, *args):
    return kernel.compile(*args).canonical.main


def _check(kernel, args, want, scale):
    """kernel(*args) (on a native cube executor, not the numpy reference) matches `want`, bound in a
    program and walked (out=)."""
    comp = kernel.compile(*args)
    assert [comp.executor(p) for p in comp.kernels] == ["cube"]
    assert_close(kernel(*args), want, "kernel(*arrays)", scale=scale)
    out = np.empty(want.shape, want.dtype)
    kernel(*args, out=out)
    assert_close(out, want, "kernel(*arrays, out=)", scale=scale)
    # and the reference interpreter agrees on the same function
    fn = _fused_fn(kernel, *args)
    assert_close(run_function(None, fn, list(args))[0], want, "reference", scale=scale)


def test_matmul_bias_leaky_relu_f16_in_f32_accumulate_f16_out():
    @fs.fused_kernel
    def f(a, w, b):
        return fs.leaky_relu(a @ w + b, 0.1)

    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (200, 72)).astype(np.float16)       # M, K not multiples of 16
    w = rng.uniform(-1, 1, (72, 40)).astype(np.float16)
    b = rng.uniform(-1, 1, 40).astype(np.float16)
    y = (a.astype(np.float32) @ w.astype(np.float32)).astype(np.float16).astype(np.float32) + b
    y = y.astype(np.float16).astype(np.float32)
    want = np.where(y >= 0, y, (y * np.float32(0.1)).astype(np.float16).astype(np.float32)).astype(np.float16)
    kernel_cpu._lowered.clear()   # (the IR cache of the process's lowerings: this kernel's alone below)
    _check(f, (a, w, b), want, scale=10.0)
    # the float16 operands are widened 16 lanes at a time in the lowered IR itself, as the quick tier
    # runs it (which has no loop vectoriser), by the same loop as the attention kind's
    (ir_text,) = kernel_cpu._lowered.values()
    assert f'call void @"{tiled_product.WIDEN}"' in ir_text


def test_batched_matmul_gelu_residual():
    @fs.fused_kernel
    def f(a, w, r):
        return fs.gelu(fs.matmul(a, w)) + r

    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 33, 20)).astype(np.float32)
    w = rng.standard_normal((20, 24)).astype(np.float32)
    r = rng.standard_normal((3, 33, 24)).astype(np.float32)
    y = a @ w
    want = (0.5 * y * (1 + np.tanh(np.sqrt(2 / np.pi) * (y + 0.044715 * y ** 3))) + r).astype(np.float32)
    _check(f, (a, w, r), want, scale=float(np.abs(y).max()))


@pytest.mark.parametrize("stride,padding,shape,dtype", [
    (1, 1, (2, 5, 11, 13), np.float32),
    (2, 0, (3, 4, 17, 9), np.float32),
    (1, 0, (1, 6, 7, 7), np.float16),
    (2, 1, (2, 3, 10, 12), np.float16),
])
def test_conv2d_bias_leaky_relu(stride, padding, shape, dtype):
    @fs.fused_kernel
    def f(x, w, b):
        return fs.leaky_relu(fs.conv2d(x, w, b, stride=stride, padding=padding), 0.2)

    rng = np.random.default_rng(stride * 10 + padding)
    x = rng.standard_normal(shape).astype(dtype)
    w = (rng.standard_normal((7, shape[1], 3, 3)) * 0.3).astype(dtype)
    b = rng.standard_normal(7).astype(dtype)
    y = conv2d_reference(x.astype(np.float64), w.astype(np.float64), (stride,) * 2, (padding,) * 2)
    y = y + b.astype(np.float64)[None, :, None, None]
    want = np.where(y >= 0, y, 0.2 * y).astype(dtype)
    _check(f, (x, w, b), want, scale=float(np.abs(y).max()) * 2)


def test_kernel_call_runs_cube_kernels_on_the_executor_and_splits_what_the_kinds_refuse():
    @fs.fused_kernel
    def f(a, w):
        return a @ w

    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    w = np.ones((4, 5), np.float32)
    np.testing.assert_array_equal(f(a, w), a @ w)
    comp = f.compile(a, w)
    (plan,) = comp.kernels
    # a float matmul with an elementwise epilogue runs its TileKernel (llvm_kernel)
    assert isinstance(comp._matmul_kernel(plan), ScheduleCpu)
    # integer products the cube has no form for run exactly, split at the product (int_product.py)
    ai = np.arange(6, dtype=np.int32).reshape(2, 3)
    comp = f.compile(ai, ai.T.copy())
    (plan,) = comp.kernels
    assert comp._matmul_kernel(plan) is None and isinstance(comp._split_kernel(plan), SplitCpu)
    np.testing.assert_array_equal(f(ai, ai.T.copy()), ai @ ai.T)
    # a reduction over the product's columns: fusion gives it a column kernel of its own
    g = fs.fused_kernel(lambda a, w: fs.sum(a @ w, axis=0))
    comp = g.compile(a, w)
    assert [comp.executor(p) for p in comp.kernels] == ["cube", "column"]
    np.testing.assert_allclose(g(a, w), (a @ w).sum(axis=0))


@pytest.mark.parametrize("dtype,shape", [(np.float32, (300, 40, 70)), (np.float16, (33, 19, 5)),
                                         (np.float32, (1, 3, 1)), (np.float32, (5000, 8, 64))])
def test_row_epilogues_of_a_product(dtype, shape):
    """softmax / layer_norm / a row sum after a matmul: float32 within float tolerance of the
    reference (the row kind's folds); a float16 product's row epilogue split at the product and run
    with numpy's rounding of every op: the reference's bits."""
    m, k, n = shape
    rng = np.random.default_rng(m)
    x = rng.standard_normal((m, k)).astype(dtype)
    w = rng.standard_normal((k, n)).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)

    def softmax_ln(x, w, b):
        y = x @ w + b
        return fs.softmax(y), fs.gelu(fs.layer_norm(y, b, b)), fs.sum(y, axis=1), y - fs.mean(y, axis=-1, keepdims=True)

    kern = fs.fused_kernel(softmax_ln)
    comp = kern.compile(x, w, b)
    assert [comp.executor(p) for p in comp.kernels] == ["cube"]
    fn = _fused_fn(kern, x, w, b)
    for got, want in zip(kern(x, w, b), run_function(None, fn, [x, w, b])):
        if dtype == np.float16:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * (1 + np.abs(want).max()))


def test_a_row_epilogue_after_a_batched_product_runs_the_row_kinds_cpu_kernel():
    """A row epilogue the cube kind refuses (after a batched product) is split at the product: its
    rest runs as the row kind's kernel scheduled for the CPU (kernel_cpu.ScheduleCpu of
    cpu_tiling.row_schedule, what row kernels run on); numpy's result within float tolerance."""
    rng = np.random.default_rng(3)
    x, w = (rng.standard_normal(s).astype(np.float32) for s in ((2, 35, 30), (2, 30, 50)))
    kern = fs.fused_kernel(lambda x, w: (fs.softmax(x @ w), fs.sum(x @ w, axis=-1)))
    comp = kern.compile(x, w)
    (plan,) = comp.kernels
    split = comp._split_kernel(plan)
    assert comp._matmul_kernel(plan) is None and isinstance(split, SplitCpu)
    assert isinstance(split.rests[0].__self__, ScheduleCpu)
    got = kern(x, w)
    for g, want in zip(got, run_function(None, _fused_fn(kern, x, w), [x, w])):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_stride1_conv_per_tap_in_column_blocks(dtype):
    """A stride-1 conv with C >= K runs per tap in blocks of columns (conv_product.TAP_BLOCK_BYTES):
    here [C + K] = 160 rows give blocks of 384 columns over 2 x 27 x 29 padded positions (4
    blocks, the last partial), bound (the program) and walked (out=), against float64."""
    @fs.fused_kernel
    def f(x, w):
        return fs.relu(fs.conv2d(x, w, None, stride=1, padding=1))

    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 96, 25, 27)).astype(dtype)
    w = (rng.standard_normal((64, 96, 3, 3)) * 0.05).astype(dtype)
    block = max(256, conv_product.TAP_BLOCK_BYTES // (4 * (96 + 64)) // 64 * 64)
    assert 2 * 27 * 29 > 3 * block and (2 * 27 * 29) % block
    y = conv2d_reference(x.astype(np.float64), w.astype(np.float64), (1, 1), (1, 1))
    want = np.maximum(y, 0)
    tol = 1e-4 if dtype == np.float32 else 2e-2
    np.testing.assert_allclose(f(x, w).astype(np.float64), want, rtol=tol, atol=tol * np.abs(y).max())
    out = np.empty(want.shape, dtype)
    f(x, w, out=out)
    np.testing.assert_allclose(out.astype(np.float64), want, rtol=tol, atol=tol * np.abs(y).max())


@pytest.mark.parametrize("n,c,k,h,w_,epilogue", [(2, 5, 3, 7, 9, True), (1, 1, 4, 1, 1, False), (3, 8, 8, 4, 5, False)])
def test_pointwise_conv_is_one_product_per_image(n, c, k, h, w_, epilogue):
    """A 1x1 stride-1 conv without padding: [K, C] @ [C, H*W] per image straight into the
    output (conv_product.ConvProduct), with and without an epilogue, odd and unit sizes."""
    @fs.fused_kernel
    def f(x, w, b):
        y = fs.conv2d(x, w, None, stride=1, padding=0)
        return fs.relu(y + fs.reshape(b, (k, 1, 1))) if epilogue else y

    rng = np.random.default_rng(n * 100 + c)
    x = rng.standard_normal((n, c, h, w_)).astype(np.float32)
    w = rng.standard_normal((k, c, 1, 1)).astype(np.float32)
    b = rng.standard_normal(k).astype(np.float32)
    y = np.einsum("kc,nchw->nkhw", w[:, :, 0, 0].astype(np.float64), x.astype(np.float64))
    want = np.maximum(y + b[None, :, None, None], 0) if epilogue else y
    for _ in range(2):   # the bound program, twice (kept buffers)
        np.testing.assert_allclose(f(x, w, b), want, rtol=1e-5, atol=1e-5)
        x *= -1.0
        y, want = -y, (np.maximum(-y + b[None, :, None, None], 0) if epilogue else -y)


@fuzz_settings(scale=0.02)
@given(n=st.integers(1, 2), c=st.integers(1, 5), k=st.integers(1, 10), h=st.integers(1, 12), w_=st.integers(1, 12),
       r=st.integers(1, 4), s=st.integers(1, 4), stride=st.integers(1, 2), padding=st.integers(0, 2),
       seed=st.integers(0, 2 ** 16), band=st.sampled_from([1, 200, 1 << 18]))
def test_dense_convs_on_the_direct_kernel_match_float64(n, c, k, h, w_, r, s, stride, padding, seed, band):
    """A plain conv2d with up to conv_sparse.DIRECT_MAX_KG outputs runs on the direct kernel
    (4 output channels per job and single ones for the rest, rows merged into one when the
    columns are few, bands of output rows), bound in a program, against float64."""
    assume(h + 2 * padding >= r and w_ + 2 * padding >= s)

    def f(x, w):
        return fs.conv2d(x, w, None, stride=stride, padding=padding) * 2.0

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w_)).astype(np.float32)
    w = rng.standard_normal((k, c, r, s)).astype(np.float32)
    kern = fs.fused_kernel(f)
    want = 2 * conv2d_reference(x.astype(np.float64), w.astype(np.float64), (stride,) * 2, (padding,) * 2)
    with pytest.MonkeyPatch.context() as mp:   # small shapes fill few lanes: direct all the same
        mp.setattr(conv_sparse, "DIRECT_MIN_EFFICIENCY", 0.0)
        mp.setattr(conv_sparse, "BAND_BYTES", band)   # bands of 1 row, a few rows, the whole image
        np.testing.assert_allclose(kern(x, w), want, rtol=1e-5, atol=1e-5 * (1 + np.abs(want).max()))
        comp = kern.compile(x, w)
        plans = [comp._conv_kernel(p).product.sparse_plan
                 for p in comp.kernels if any(op.name == "conv2d" for op in p.function.ops)]
    pointwise = r == s == stride == 1 and padding == 0   # one sgemm per image instead
    assert plans and all((p is None) if pointwise else (p is not None and p.direct) for p in plans)
