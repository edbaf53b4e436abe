"""Conv kernels on the one LLVM lowering (backend_cpu/conv_cpu.py): the conv kind's TileKernel
through llvm_kernel in host-product mode, the conv2d's product conv_product.py's, the epilogue the
kernel's own.  kernel(*arrays) takes that path for conv1d / conv2d with stride, padding,
dilation, groups (depthwise too), float32 / float16 / int8, bias with relu / leaky_relu, and
agrees with torch (float32: bit for bit the product cube.py ran before, then the same epilogue),
non-finite inputs included; the lowering itself is checked on its IR."""
from __future__ import annotations

import numpy as np
import pytest

import fusedsl as fs
from fusedsl.backend_cpu import blas, conv_product
from fusedsl.backend_cpu.conv_cpu import ConvCpu
from fusedsl.backend_cpu.llvm_kernel import LoweringError, lower_kernel
from fusedsl.lower.kinds import kernel_ir

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _conv_plans(comp):
    return [p for p in comp.kernels if any(op.name == "conv2d" for op in p.function.ops)]


def _on_llvm_kernel(comp) -> None:
    plans = _conv_plans(comp)
    assert plans
    for p in plans:
        assert isinstance(comp._conv_kernel(p), ConvCpu) and comp.executor(p) == "cube", p.name


@pytest.mark.parametrize("stride,padding,dilation,groups,dtype,act", [
    (1, 1, 1, 1, np.float32, "relu"), (2, 0, 1, 1, np.float16, "leaky_relu"), (1, 2, 2, 1, np.float32, "leaky_relu"),
    (2, 1, 1, 2, np.float16, "relu"), (1, 1, 1, 6, np.float32, "leaky_relu"), (1, 1, 1, 6, np.float16, "relu")])
def test_conv2d_bias_activation_agrees_with_torch(stride, padding, dilation, groups, dtype, act):
    rng = np.random.default_rng(stride * 100 + padding * 10 + groups)
    x = rng.standard_normal((2, 6, 9, 11)).astype(dtype)
    w = (rng.standard_normal((6, 6 // groups, 3, 3)) * 0.3).astype(dtype)
    b = rng.standard_normal(6).astype(dtype)

    def f(x, w, b):
        y = fs.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
        return fs.relu(y) if act == "relu" else fs.leaky_relu(y, 0.1)
    kern = fs.fused_kernel(f)
    got = kern(x, w, b)
    y = F.conv2d(torch.from_numpy(x.astype(np.float32)), torch.from_numpy(w.astype(np.float32)),
                 torch.from_numpy(b.astype(np.float32)), stride, padding, dilation, groups)
    want = (F.relu(y) if act == "relu" else F.leaky_relu(y, 0.1)).numpy()
    tol = 1e-5 if dtype == np.float32 else 2e-2
    assert got.dtype == dtype
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=tol, atol=tol)
    out = np.empty_like(got)   # main's walk (out=): the same executor
    kern(x, w, b, out=out)
    np.testing.assert_array_equal(out, got)
    _on_llvm_kernel(kern.compile(x, w, b))


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 1, 1, 1), (2, 2, 2, 4)])
def test_conv1d_runs_as_a_height_one_conv2d(stride, padding, dilation, groups):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4, 40)).astype(np.float32)
    w = rng.standard_normal((8, 4 // groups, 5)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    kern = fs.fused_kernel(lambda x, w, b: fs.relu(fs.conv1d(x, w, b, stride, padding, dilation, groups)))
    want = F.relu(F.conv1d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), stride, padding,
                           dilation, groups)).numpy()
    np.testing.assert_allclose(kern(x, w, b), want, rtol=1e-5, atol=1e-5)
    _on_llvm_kernel(kern.compile(x, w, b))


@pytest.mark.parametrize("shape,wshape,stride,padding", [((2, 16, 12, 12), (8, 16, 3, 3), 1, 1),    # per tap
                                                         ((2, 3, 14, 14), (8, 3, 5, 5), 2, 0),      # im2col
                                                         ((2, 8, 6, 6), (12, 8, 1, 1), 1, 0),       # pointwise
                                                         ((1, 2, 9, 9), (2, 2, 3, 3), 1, 1)])       # direct
def test_float32_results_are_the_split_kernels_bit_for_bit(shape, wshape, stride, padding):
    """The product is the routine cube.py ran (conv_product.py), the epilogue the same IEEE ops:
    k(*arrays) equals the same kernel function split at its product (backend_cpu/cube_split.py: the
    product on the host, the epilogue a vector kernel of its own, as cube.py ran it) exactly."""
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(wshape).astype(np.float32)
    b = rng.standard_normal(wshape[0]).astype(np.float32)
    kern = fs.fused_kernel(lambda x, w, b: fs.leaky_relu(fs.conv2d(x, w, b, stride=stride, padding=padding), 0.2))
    got = kern(x, w, b)
    comp = kern.compile(x, w, b)
    _on_llvm_kernel(comp)
    (plan,) = comp.kernels
    ins = {"x": x, "w": w}
    args = [ins.get(p.value.name, b.reshape(1, -1, 1, 1)) for p in plan.function.params]
    want = np.empty_like(got)
    comp._split_kernel(plan).bind(args, [want])()
    np.testing.assert_array_equal(got, want)


def test_non_finite_inputs_propagate_like_torch():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 4, 8, 8)).astype(np.float32)
    x[0, 1, 2, 3], x[1, 0, 5, 5], x[1, 3, 0, 0] = np.inf, np.nan, -np.inf
    w = rng.standard_normal((5, 4, 3, 3)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    kern = fs.fused_kernel(lambda x, w, b: fs.relu(fs.conv2d(x, w, b, padding=1)))
    got = kern(x, w, b)
    want = F.relu(F.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), padding=1)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-5)
    _on_llvm_kernel(kern.compile(x, w, b))


def test_int8_conv_wraps_like_numpy():
    """int8 operands: the exact int32 sum (int_product.py) handed to the kernel, which wraps it to
    int8 as the chip's kernel does (numpy's rule)."""
    rng = np.random.default_rng(11)
    x = rng.integers(-128, 128, (2, 5, 7, 7)).astype(np.int8)
    w = rng.integers(-128, 128, (6, 5, 3, 3)).astype(np.int8)
    kern = fs.fused_kernel(lambda x, w: fs.conv2d(x, w, None, stride=1, padding=1))
    got = kern(x, w)
    fs.config.executor = "reference"
    try:
        want = kern(x, w)
    finally:
        fs.config.executor = "llvm"
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, want)
    _on_llvm_kernel(kern.compile(x, w))


def test_host_product_mode_skips_the_panel_and_is_a_conv_kernels_only():
    """The IR in host-product mode reads C from the product (one more argument word), runs no
    im2col (no Gather) and calls no sgemm; any other kind refuses it."""
    x = np.ones((1, 3, 6, 6), np.float32)
    w = np.ones((4, 3, 3, 3), np.float32)
    comp = fs.fused_kernel(lambda x, w: fs.relu(fs.conv2d(x, w, None, padding=1))).compile(x, w)
    k = kernel_ir(comp.kernels[0].lowered)
    chip, host = lower_kernel(k), lower_kernel(k, host_product=True)
    assert "gather" in chip and "gather" not in host
    assert chip.count("call void %") > host.count("call void %")   # the sgemm through its address
    a = np.ones((4, 4), np.float32)
    mm = fs.fused_kernel(lambda a, b: a @ b).compile(a, a)
    with pytest.raises(LoweringError, match="host product is a conv kernel's"):
        lower_kernel(kernel_ir(mm.kernels[0].lowered), host_product=True)


def test_a_lone_conv_writes_its_product_into_the_output():
    """No epilogue: the product is the output (ConvCpu.plain, no launch); with an epilogue on
    an odd pixel count (30 x 30: rows are not whole 32-byte blocks) GetTensorC copies rows."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 6, 30, 30)).astype(np.float32)
    w = rng.standard_normal((4, 6, 3, 3)).astype(np.float32)
    want = F.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1).numpy()
    lone = fs.fused_kernel(lambda x, w: fs.conv2d(x, w, None, padding=1))
    np.testing.assert_allclose(lone(x, w), want, rtol=1e-5, atol=1e-5)
    comp = lone.compile(x, w)
    _on_llvm_kernel(comp)
    assert comp._conv_kernel(comp.kernels[0]).plain
    scaled = fs.fused_kernel(lambda x, w: fs.conv2d(x, w, None, padding=1) * 2.0)
    np.testing.assert_allclose(scaled(x, w), 2 * want, rtol=1e-5, atol=1e-5)
    assert not scaled.compile(x, w)._conv_kernel(scaled.compile(x, w).kernels[0]).plain


@pytest.mark.parametrize("case", ["taps", "pointwise"])
def test_a_large_conv_product_on_the_pool_is_the_one_thread_product_bit_for_bit(case, monkeypatch):
    """A large conv product's independent runs (a block of columns with every tap, a pointwise
    conv's image) go to the pool's threads (blas.gemm_runs): each run is the same sgemm calls in
    the same order, so the result is the one-thread call's, bit for bit -- and torch's within
    float32 rounding."""
    torch = pytest.importorskip("torch")
    g = np.random.default_rng(3)
    r = 3 if case == "taps" else 1
    x = g.standard_normal((4, 64, 40, 40)).astype(np.float32)
    w = g.standard_normal((64, 64, r, r)).astype(np.float32)
    b = g.standard_normal((1, 64, 1, 1)).astype(np.float32)

    def f(x, w, b):
        return fs.leaky_relu(fs.conv2d(x, w, padding=r // 2) + b, 0.01)
    calls = []
    real = blas.gemm_runs

    def counted(products, run):
        call = real(products, run)
        calls.append(getattr(call, "__name__", None) == "parallel")
        return call
    monkeypatch.setattr(conv_product, "gemm_runs", counted)
    monkeypatch.setenv("FUSEDSL_NUM_THREADS", "2")
    pooled = fs.fused_kernel(f)(x, w, b)
    assert calls == [True]   # (the product did run on the pool)
    monkeypatch.setenv("FUSEDSL_NUM_THREADS", "1")
    alone = fs.fused_kernel(f)(x, w, b)
    assert calls == [True, False]
    np.testing.assert_array_equal(pooled, alone)
    want = torch.nn.functional.leaky_relu(torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w),
                                                                     padding=r // 2) + torch.from_numpy(b), 0.01)
    np.testing.assert_allclose(pooled, want.numpy(), rtol=1e-4, atol=1e-3)
