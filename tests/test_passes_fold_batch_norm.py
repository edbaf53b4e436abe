"""FoldBatchNorm: before/after text, what it leaves alone, and numeric equivalence of
conv/matmul + inference batch norm against numpy."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_close
from test_passes_canonicalize import check, ir, run

import fusedsl as fs
from fusedsl.ir.ops import REGISTRY
from fusedsl.passes.fold_batch_norm import FoldBatchNorm

CONV_BN = """
    func @f(%x: f32[2,3,8,8], %w: f32[4,3,3,3], %cb: f32[4], %m: f32[4], %s: f32[4], %b: f32[4]) -> (f32[2,4,8,8]) {
      %0 = conv2d(%x, %w) {padding = [1, 1], stride = [1, 1]} : f32[2,4,8,8]
      %1 = reshape(%cb) {shape = [1, 4, 1, 1]} : f32[1,4,1,1]
      %2 = add(%0, %1) : f32[2,4,8,8]
      %3 = reshape(%m) {shape = [1, 4, 1, 1]} : f32[1,4,1,1]
      %4 = sub(%2, %3) : f32[2,4,8,8]
      %5 = reshape(%s) {shape = [1, 4, 1, 1]} : f32[1,4,1,1]
      %6 = mul(%4, %5) : f32[2,4,8,8]
      %7 = reshape(%b) {shape = [1, 4, 1, 1]} : f32[1,4,1,1]
      %8 = add(%6, %7) : f32[2,4,8,8]
      %9 = relu(%8) : f32[2,4,8,8]
      return %9
    }
"""


def test_conv_bias_batch_norm_becomes_one_scale_and_one_shift_of_the_conv():
    # the weights are untouched (scaling them would be a kernel of its own); the shift and the
    # scale are per-channel values the conv kernel's epilogue computes
    check([FoldBatchNorm()], CONV_BN, """
    func @f(%x: f32[2,3,8,8], %w: f32[4,3,3,3], %cb: f32[4], %m: f32[4], %s: f32[4], %b: f32[4]) -> (f32[2,4,8,8]) {
      %0 = conv2d(%x, %w) {padding = [1, 1], stride = [1, 1]} : f32[2,4,8,8]
      %1 = reshape(%cb) {shape = [1, 4, 1, 1]} : f32[1,4,1,1]
      %2 = reshape(%m) {shape = [1, 4, 1, 1]} : f32[1,4,1,1]
      %3 = reshape(%s) {shape = [1, 4, 1, 1]} : f32[1,4,1,1]
      %4 = reshape(%b) {shape = [1, 4, 1, 1]} : f32[1,4,1,1]
      %5 = sub(%1, %2) : f32[1,4,1,1]
      %6 = mul(%5, %3) : f32[1,4,1,1]
      %7 = add(%6, %4) : f32[1,4,1,1]
      %8 = mul(%0, %3) : f32[2,4,8,8]
      %9 = add(%8, %7) : f32[2,4,8,8]
      %10 = relu(%9) : f32[2,4,8,8]
      return %10
    }
""")

def test_matmul_scale_without_shift_and_a_scalar_factor():
    check([FoldBatchNorm()], """
    func @f(%a: f32[64,16], %w: f32[16,32], %s: f32[32]) -> (f32[64,32]) {
      %0 = matmul(%a, %w) : f32[64,32]
      %1 = mul(%0, %s) : f32[64,32]
      %2 = constant() {dtype = "float32", value = 2.0} : f32[]
      %3 = mul(%2, %1) : f32[64,32]
      return %3
    }
    """, """
    func @f(%a: f32[64,16], %w: f32[16,32], %s: f32[32]) -> (f32[64,32]) {
      %0 = matmul(%a, %w) : f32[64,32]
      %1 = constant() {dtype = "float32", value = 2.0} : f32[]
      %2 = mul(%s, %1) : f32[32]
      %3 = reshape(%2) {shape = [1, 32]} : f32[1,32]
      %4 = mul(%0, %3) : f32[64,32]
      return %4
    }
""")


@pytest.mark.parametrize("n,body", [
    # the conv result is used twice: folding would compute the conv twice
    (4, """%0 = conv2d(%x, %w) {padding = [0, 0], stride = [1, 1]} : f32[4,2,3,3]
      %1 = mul(%0, %s) : f32[4,2,3,3]
      %2 = add(%1, %0) : f32[4,2,3,3]
      return %2"""),
    # no multiplication: already a bias add
    (4, """%0 = conv2d(%x, %w) {padding = [0, 0], stride = [1, 1]} : f32[4,2,3,3]
      %1 = add(%0, %s) : f32[4,2,3,3]
      return %1"""),
    # s - y negates y: not folded
    (4, """%0 = conv2d(%x, %w) {padding = [0, 0], stride = [1, 1]} : f32[4,2,3,3]
      %1 = sub(%s, %0) : f32[4,2,3,3]
      %2 = mul(%1, %s) : f32[4,2,3,3]
      return %2"""),
    # a scale that varies along the spatial axes is not per-channel
    (4, """%0 = conv2d(%x, %w) {padding = [0, 0], stride = [1, 1]} : f32[4,2,3,3]
      %1 = mul(%0, %t) : f32[4,2,3,3]
      return %1"""),
    # weights (2 x 3 x 3 x 3 = 54 elements) larger than the output (1 x 2 x 3 x 3 = 18)
    (1, """%0 = conv2d(%x, %w) {padding = [0, 0], stride = [1, 1]} : f32[1,2,3,3]
      %1 = mul(%0, %s) : f32[1,2,3,3]
      return %1"""),
])
def test_left_alone(n, body):
    text = f"""
    func @f(%x: f32[{n},3,5,5], %w: f32[2,3,3,3], %s: f32[2,1,1], %t: f32[3]) -> (f32[{n},2,3,3]) {{
      {body}
    }}
"""
    assert run([FoldBatchNorm()], text) == ir(text)


def test_a_single_scale_or_a_scale_by_one_number_is_left_alone():
    for body in ["%1 = mul(%0, %s) : f32[4,2,3,3]", "%1 = mul(%0, %c) : f32[4,2,3,3]"]:
        text = f"""
    func @f(%x: f32[4,3,5,5], %w: f32[2,3,3,3], %s: f32[2,1,1], %c: f32[]) -> (f32[4,2,3,3]) {{
      %0 = conv2d(%x, %w) {{padding = [0, 0], stride = [1, 1]}} : f32[4,2,3,3]
      {body}
      return %1
    }}
"""
        assert run([FoldBatchNorm()], text) == ir(text)

def _conv_ref(x, w, stride, padding):
    return REGISTRY["conv2d"].ref([x, w], {"stride": [stride] * 2, "padding": [padding] * 2})


def _bn_params(rng, c, dtype):
    mean, gamma, beta = (rng.standard_normal(c).astype(dtype) for _ in range(3))
    var = (rng.uniform(0.5, 2.0, c)).astype(dtype)
    return mean, var, gamma, beta


@pytest.mark.parametrize("stride,padding,dtype", [(1, 1, np.float32), (2, 0, np.float32), (1, 1, np.float16)])
def test_conv_batch_norm_relu_matches_numpy(stride, padding, dtype):
    @fs.fused_kernel
    def f(x, w, cb, mean, var, gamma, beta):
        return fs.relu(fs.batch_norm(fs.conv2d(x, w, cb, stride=stride, padding=padding), mean, var, gamma, beta))

    rng = np.random.default_rng(stride + padding)
    x = rng.standard_normal((2, 5, 17, 17)).astype(dtype)
    w = (rng.standard_normal((6, 5, 3, 3)) * 0.3).astype(dtype)
    cb = rng.standard_normal(6).astype(dtype)
    mean, var, gamma, beta = _bn_params(rng, 6, dtype)
    got = f(x, w, cb, mean, var, gamma, beta)
    c = lambda v: v.astype(np.float64).reshape(1, -1, 1, 1)  # noqa: E731
    y = _conv_ref(x.astype(np.float64), w.astype(np.float64), stride, padding) + c(cb)
    want = np.maximum((y - c(mean)) / np.sqrt(c(var) + 1e-5) * c(gamma) + c(beta), 0).astype(dtype)
    assert_close(got, want, scale=float(np.abs(y).max()) * 2)
    k = f.compile(x, w, cb, mean, var, gamma, beta)
    assert "conv2d(%x, %w)" in str(k.canonical)   # the weights are not rescaled
    assert [p.kernel_kind for p in k.kernels] == ["conv"]


def test_matmul_batch_norm_matches_numpy_and_disabling_the_pass_keeps_it():
    def f(a, w, mean, var):
        return fs.batch_norm(a @ w, mean, var)

    rng = np.random.default_rng(3)
    a = rng.standard_normal((96, 40)).astype(np.float32)
    w = rng.standard_normal((40, 12)).astype(np.float32)
    mean, var, _, _ = _bn_params(rng, 12, np.float32)
    want = ((a.astype(np.float64) @ w - mean) / np.sqrt(var.astype(np.float64) + 1e-5)).astype(np.float32)
    folded = fs.fused_kernel(f)
    assert_close(folded(a, w, mean, var), want, scale=40.0)
    plain = fs.fused_kernel(disable_passes=["fold-batch-norm"])(f)
    assert_close(plain(a, w, mean, var), want, scale=40.0)
    after = str(folded.compile(a, w, mean, var).canonical).split("matmul(%a, %w)")[1]
    before = str(plain.compile(a, w, mean, var).canonical).split("matmul(%a, %w)")[1]
    # folded: the product sees one multiply and one add (the statistics' ops are per column)
    assert "sub(%0" not in after and "sub(%0" in before


def test_conv_batch_norm_relu_compiles_to_one_conv_kernel_like_conv_bias_relu():
    specs = [fs.spec(s, "float32") for s in [(2, 3, 8, 8), (4, 3, 3, 3), (4,), (4,), (4,), (4,), (4,)]]
    bn = fs.fused_kernel(lambda x, w, cb, m, v, g, b: fs.relu(fs.batch_norm(fs.conv2d(x, w, cb, padding=1),
                                                                             m, v, g, b))).compile(*specs)
    plain = fs.fused_kernel(lambda x, w, cb: fs.relu(fs.conv2d(x, w, cb, padding=1))).compile(*specs[:3])
    assert [p.kernel_kind for p in bn.kernels] == [p.kernel_kind for p in plain.kernels] == ["conv"]
    assert all(p.printable for p in bn.kernels)
