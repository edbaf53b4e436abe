"""The public frontend: @fused_kernel, trace/compile/call, out=, specs, scalars, the
compile cache, eager ops on numpy arrays, indexing, and the composites against numpy."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import fusedsl as fs
from conftest import assert_close

F32 = np.float32


def rand(*shape, dtype=F32, seed=0):
    return np.random.default_rng(seed).uniform(-3, 3, shape).astype(dtype)


@fs.fused_kernel
def abs_add_relu(a, b):
    return fs.relu(fs.abs(a) + b)


# ---- calling a kernel ------------------------------------------------------------------------
def test_seed_kernel_matches_numpy():
    a, b = rand(128), rand(192, 128, seed=1)
    y = abs_add_relu(a, b)
    assert y.dtype == F32 and y.shape == (192, 128)
    np.testing.assert_array_equal(y, np.maximum(np.abs(a) + b, 0))


def test_decorator_with_options_and_keyword_arguments():
    @fs.fused_kernel(single_kernel=False)
    def scale(x, factor=2.0):
        return x * factor
    x = rand(5)
    np.testing.assert_array_equal(scale(x), x * F32(2))
    np.testing.assert_array_equal(scale(x, factor=3), x * F32(3))
    np.testing.assert_array_equal(scale(factor=0.5, x=x), x * F32(0.5))
    assert scale.__name__ == "scale" and "scale" in repr(scale)


def test_keyword_only_parameters():
    @fs.fused_kernel
    def k(x, *, alpha=0.5):
        return fs.leaky_relu(x, alpha)
    x = rand(6)
    np.testing.assert_array_equal(k(x, alpha=0.25), np.where(x >= 0, x, x * F32(0.25)))


def test_kernels_with_star_args_are_refused():
    @fs.fused_kernel
    def k(*xs):
        return xs[0]
    with pytest.raises(fs.ArgumentError, match=r"\*args or \*\*kwargs are not supported"):
        k(rand(2))


def test_several_outputs_are_a_tuple():
    @fs.fused_kernel
    def stats(x):
        return x.max(axis=-1), x.min(axis=-1), x.mean(axis=-1)
    x = rand(4, 7)
    mx, mn, mean = stats(x)
    np.testing.assert_array_equal(mx, x.max(-1))
    np.testing.assert_array_equal(mn, x.min(-1))
    np.testing.assert_allclose(mean, x.mean(-1), rtol=1e-6)


def test_outputs_never_alias_inputs_or_each_other():
    """Outputs are fresh arrays, except a reshape, which is a view of its input like numpy's
    (issue 21 item 7)."""
    @fs.fused_kernel
    def k(x):
        return x, x.reshape(-1), fs.broadcast_to(x, (2, 3)), x.T
    x = rand(1, 3)
    outs = k(x)
    for i, o in enumerate(outs):
        assert np.shares_memory(o, x) == (i == 1) and o.flags.c_contiguous and o.flags.writeable
    assert not np.shares_memory(outs[0], outs[1])


def test_out_single_array():
    a, b = rand(8), rand(3, 8)
    out = np.empty((3, 8), F32)
    assert abs_add_relu(a, b, out=out) is out
    np.testing.assert_array_equal(out, np.maximum(np.abs(a) + b, 0))


def test_out_tuple_of_arrays():
    @fs.fused_kernel
    def two(a, b):
        return a + b, a * b
    a, b = rand(2, 3), rand(3)
    o1, o2 = np.empty((2, 3), F32), np.empty((2, 3), F32)
    r1, r2 = two(a, b, out=(o1, o2))
    assert r1 is o1 and r2 is o2
    np.testing.assert_array_equal(o1, a + b)
    np.testing.assert_array_equal(o2, a * b)


@pytest.mark.parametrize("out, message", [
    (np.empty((3, 8), np.float16), r"out= array must be \(3, 8\) float32"),
    (np.empty((8, 3), F32), r"out= array must be \(3, 8\) float32"),
    ((np.empty((3, 8), F32), np.empty((3, 8), F32)), r"out= needs 1 array\(s\), got 2"),
    (np.empty((8, 3), F32).T, "C-contiguous"),
])
def test_out_mistakes(out, message):
    with pytest.raises(fs.ArgumentError, match=message):
        abs_add_relu(rand(8), rand(3, 8), out=out)


def test_python_numbers_are_baked_in():
    @fs.fused_kernel
    def k(x, alpha):
        return fs.leaky_relu(x, alpha)
    text = str(k.trace(rand(4), 0.2))
    assert "leaky_relu(%x) {alpha = 0.2}" in text and "alpha:" not in text.splitlines()[0]
    x = rand(4)
    np.testing.assert_array_equal(k(x, 0.2), np.where(x >= 0, x, x * F32(0.2)))


# ---- fs.spec, symbolic dimensions and fs.scalar ------------------------------------------------------
def test_trace_with_specs_and_symbolic_dims():
    m = abs_add_relu.trace(fs.spec((128,), "float32"), fs.spec(("M", 128), "float32"))
    text = str(m)
    assert text.splitlines()[0].startswith(
        "func @abs_add_relu(%a: f32[128], %b: f32[M,128]) -> (f32[M,128])")
    assert "add(%0, %b) : f32[M,128]" in text
    assert str(fs.parse_ir(text)) == text


def test_symbolic_kernel_runs_for_any_size_of_m():
    @fs.fused_kernel
    def k(x, b):
        return fs.softmax(x.reshape(x.shape[0], 2, 4) + b.reshape(2, 4), axis=-1)
    compiled = k.compile(fs.spec(("M", 8), "float32"), fs.spec((8,), "float32"))
    assert "f32[M,2,4]" in compiled.ir
    for m in (1, 5):
        x, b = rand(m, 8), rand(8, seed=2)
        got = compiled.run([x, b])
        z = x.reshape(m, 2, 4) + b.reshape(2, 4)
        e = np.exp(z - z.max(-1, keepdims=True))
        np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-5)


def test_spec_forms_and_mistakes():
    assert fs.spec(5) == fs.spec((5,), "float32")
    assert fs.spec(("M", np.int64(3)), fs.bfloat16) == fs.TensorSpec(("M", 3), fs.bfloat16)
    assert fs.spec("N", np.int8).dtype == fs.int8
    with pytest.raises(fs.ArgumentError, match="must be a non-negative int or a name"):
        fs.spec((-1, 3))
    with pytest.raises(fs.ArgumentError, match="must be a non-negative int or a name"):
        fs.spec(("not a name",))


def test_runtime_scalar_argument():
    @fs.fused_kernel
    def k(x, alpha):
        return fs.leaky_relu(x, alpha) * alpha
    compiled = k.compile(fs.spec((4,), "float32"), fs.scalar("alpha", "float32"))
    header = next(line for line in compiled.ir.splitlines() if line.startswith("func @k("))
    assert "%alpha: f32[] scalar" in header
    x = rand(4)
    for alpha in (0.1, 0.5):
        got = compiled.run([x, np.float32(alpha)])
        np.testing.assert_allclose(got, np.where(x >= 0, x, x * F32(alpha)) * F32(alpha), rtol=1e-6)


def test_scalar_spec_mistakes():
    assert fs.scalar("beta", "int32") == fs.ScalarSpec("beta", fs.int32)
    with pytest.raises(fs.ArgumentError, match="must be an identifier"):
        fs.scalar("not ok")


# ---- the compile cache -------------------------------------------------------------------------
def test_compile_cache_same_shapes_same_object():
    @fs.fused_kernel
    def k(x):
        return fs.exp(x)
    a = k.compile(rand(3, 4))
    assert k.compile(rand(3, 4, seed=9)) is a                 # same shapes/dtypes: cached
    assert k.compile(fs.spec((3, 4), "float32")) is a          # a spec is the same key
    assert k.compile(rand(3, 4, dtype=np.float16)) is not a    # new dtype: new compile
    assert k.compile(rand(4, 3)) is not a                      # new shape: new compile
    assert k.compile(rand(3, 4), target="ascend910b4") is not a  # new target: new compile


def test_call_traces_once_per_key(monkeypatch):
    calls = []

    @fs.fused_kernel
    def k(x, c):
        calls.append(1)
        return x * c
    x = rand(3)
    k(x, 2.0)
    k(x + 1, 2.0)
    assert len(calls) == 1
    k(x, 3.0)                        # a different baked-in constant is a new specialisation
    k(x.astype(np.float16), 2.0)     # so is a different dtype
    assert len(calls) == 3


# ---- eager ops on numpy arrays -------------------------------------------------------------------
def test_eager_ops_on_numpy_arrays():
    x, y = rand(2, 3), rand(3, seed=1)
    np.testing.assert_array_equal(fs.relu(x), np.maximum(x, 0))
    np.testing.assert_array_equal(fs.add(x, y), x + y)
    np.testing.assert_array_equal(fs.maximum(x, 0.5), np.maximum(x, F32(0.5)))
    np.testing.assert_array_equal(fs.where(x > 0, x, 0.0), np.where(x > 0, x, F32(0)))
    np.testing.assert_allclose(fs.softmax(x), np.exp(x) / np.exp(x).sum(-1, keepdims=True), rtol=1e-6)
    np.testing.assert_array_equal(fs.sum(x, axis=(0, 1)), np.sum(x, dtype=F32))
    np.testing.assert_array_equal(fs.reshape(x, (3, 2)), x.reshape(3, 2))
    np.testing.assert_array_equal(fs.transpose(x, (1, 0)), x.T)
    np.testing.assert_array_equal(fs.broadcast_to(y, (2, 3)), np.broadcast_to(y, (2, 3)))
    np.testing.assert_array_equal(fs.concatenate([x, x], axis=1), np.concatenate([x, x], 1))
    np.testing.assert_array_equal(fs.cast(x, "int32"), x.astype(np.int32))
    np.testing.assert_array_equal(fs.matmul(x, x.T), x @ x.T)
    assert fs.cast(x, fs.bfloat16).dtype == ml_dtypes.bfloat16


def test_eager_result_is_a_fresh_array():
    x = rand(3)
    y = fs.reshape(x, (3,))
    assert not np.shares_memory(x, y)


def test_eager_op_refuses_float64_with_a_hint():
    with pytest.raises(fs.DTypeError, match=r"float64 is not supported.*\n(.*\n)*.*astype\(np\.float32\)"):
        fs.exp(np.ones(3))


# ---- indexing -------------------------------------------------------------------------------------
INDICES = [
    np.s_[1], np.s_[-1], np.s_[1:4], np.s_[::2], np.s_[5:1], np.s_[-3:], np.s_[:, 2], np.s_[..., 1],
    np.s_[None], np.s_[:, None, 1:3], np.s_[1, ..., None], np.s_[2:, -2, ::3], np.s_[..., :1, 4:],
    np.s_[0:6:4, 1:5:2, :], np.s_[()], np.s_[-4, -1, -5], np.s_[1:100], np.s_[:, :, 1:5:3],
]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_static_indexing_matches_numpy(index):
    x = rand(4, 3, 5)

    @fs.fused_kernel
    def k(t):
        return t[index] * 1.5
    want = x[index] * F32(1.5)
    if want.size == 0:
        return   # an empty slice traces (shape 0) but is not worth a kernel
    got = k(x)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("index, error, message", [
    (np.s_[::-1], fs.ShapeError, "negative slice steps"),
    (np.s_[4], fs.ShapeError, "index 4 is out of bounds for axis 0 with size 4"),
    (np.s_[0, 0, 0, 0], fs.ShapeError, r"too many indices \(4\)"),
    (np.s_[..., ...], fs.ArgumentError, "single ellipsis"),
    (np.s_[[0, 1]], fs.TraceError, "only static indexing"),
    (np.s_[0.5], fs.ArgumentError, "index of type float"),
])
def test_indexing_mistakes(index, error, message):
    @fs.fused_kernel
    def k(t):
        return t[index]
    with pytest.raises(error, match=message):
        k(rand(4, 3, 5))


# ---- ops and composites not in the random graphs -----------------------------------------------------
def conv2d_numpy(x, w, stride, padding):
    """Direct convolution with explicit loops over the output (independent of im2col)."""
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    ho, wo = (h + 2 * padding - r) // stride + 1, (wd + 2 * padding - s) // stride + 1
    out = np.zeros((n, k, ho, wo))
    for i in range(ho):
        for j in range(wo):
            patch = xp[:, :, i * stride:i * stride + r, j * stride:j * stride + s]
            out[:, :, i, j] = np.einsum("ncrs,kcrs->nk", patch, w.astype(np.float64))
    return out


@pytest.mark.parametrize("stride, padding", [(1, 0), (2, 1), (3, 2)])
def test_conv2d_matches_numpy(stride, padding):
    x, w, b = rand(2, 3, 7, 6), rand(4, 3, 3, 2, seed=1), rand(4, seed=2)

    @fs.fused_kernel
    def k(x, w, b):
        return fs.conv2d(x, w, b, stride=stride, padding=padding)
    want = conv2d_numpy(x, w, stride, padding) + b.reshape(1, 4, 1, 1)
    np.testing.assert_allclose(k(x, w, b), want, rtol=1e-4, atol=1e-4)


def test_conv2d_integer_inputs_keep_their_dtype_and_wrap_like_torch():
    x = np.random.default_rng(0).integers(-128, 128, (1, 2, 5, 5)).astype(np.int8)
    w = np.random.default_rng(1).integers(-128, 128, (3, 2, 3, 3)).astype(np.int8)
    got = fs.fused_kernel(lambda x, w: fs.conv2d(x, w, padding=(1, 1)))(x, w)
    assert got.dtype == np.int8   # torch.nn.functional.conv2d of int8 tensors is int8 too
    want = conv2d_numpy(x, w, 1, 1).astype(np.int64).astype(np.int8)   # exact in float64, then wrapped
    np.testing.assert_array_equal(got, want)


def test_batch_norm_matches_numpy():
    x = rand(2, 3, 4, 5)
    mean, var, w, b = rand(3, seed=1), np.abs(rand(3, seed=2)) + 0.1, rand(3, seed=3), rand(3, seed=4)

    @fs.fused_kernel
    def k(x, mean, var, w, b):
        return fs.batch_norm(x, mean, var, w, b, eps=1e-3)
    shape = (1, 3, 1, 1)
    mean, var, w, b = (v.reshape(shape) for v in (mean, var, w, b))
    want = (x - mean) / np.sqrt(var + 1e-3) * w + b
    got = k(x, *(v.reshape(3) for v in (mean, var, w, b)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_layer_norm_and_rms_norm_match_numpy_in_float64():
    x, w, b = rand(3, 16), rand(16, seed=1), rand(16, seed=2)
    x64 = x.astype(np.float64)
    ln = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5) * w + b
    rms = x64 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + 1e-6) * w
    got_ln, got_rms = fs.fused_kernel(lambda x, w, b: (fs.layer_norm(x, w, b), fs.rms_norm(x, w)))(x, w, b)
    np.testing.assert_allclose(got_ln, ln, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_rms, rms, rtol=1e-4, atol=1e-5)


def test_gelu_is_the_tanh_approximation():
    x = np.linspace(-5, 5, 101).astype(F32)
    x64 = x.astype(np.float64)
    want = 0.5 * x64 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x64 + 0.044715 * x64 ** 3)))
    np.testing.assert_allclose(fs.fused_kernel(fs.gelu)(x), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("p, want", [(2, np.square), (0.5, np.sqrt), (-1, np.reciprocal),
                                     (-0.5, lambda v: 1 / np.sqrt(v)), (3, lambda v: v * v * v),
                                     (1, lambda v: v)])
def test_power_with_constant_exponents(p, want):
    x = np.abs(rand(6)) + 0.5
    np.testing.assert_allclose(fs.fused_kernel(lambda t: t ** p)(x), want(x), rtol=1e-6)


def test_power_mistakes():
    # any number or tensor exponent is x ** p now (fs.pow_tensor); a string is a mistake
    with pytest.raises(fs.ArgumentError, match=r"x \*\* p needs a number or a tensor exponent, got str"):
        fs.fused_kernel(lambda t: t ** "2")(rand(3))


def test_numpy_functions_on_traced_tensors():
    @fs.fused_kernel
    def k(x):
        return np.exp(x) + np.maximum(x, 0) + np.sum(x, axis=0) + np.max(x)
    x = rand(3, 4)
    want = np.exp(x) + np.maximum(x, 0) + np.sum(x, axis=0) + np.max(x)
    np.testing.assert_allclose(k(x), want, rtol=1e-6)


def test_tensor_methods_follow_numpy_signatures():
    @fs.fused_kernel
    def k(x):
        return x.sum(1, None, None, True), x.mean(axis=0), x.max(0, None, True), x.astype("int32").T
    x = rand(3, 4)
    s, m, mx, t = k(x)
    np.testing.assert_allclose(s, x.sum(1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(m, x.mean(0), rtol=1e-6)
    np.testing.assert_array_equal(mx, x.max(0, keepdims=True))
    np.testing.assert_array_equal(t, x.astype(np.int32).T)


def test_traced_tensor_metadata():
    seen = {}

    @fs.fused_kernel
    def k(x):
        seen.update(shape=x.shape, ndim=x.ndim, size=x.size, dtype=x.dtype, len=len(x), repr=repr(x))
        return x
    k(rand(3, 4).astype(np.float16))
    assert seen == {"shape": (3, 4), "ndim": 2, "size": 12, "dtype": fs.float16, "len": 3,
                    "repr": "Tensor(shape=(3, 4), dtype=float16)"}


def test_integer_overflow_wraps_like_numpy():
    x = np.array([100, -100, 127], np.int8)
    got = fs.fused_kernel(lambda t: t + t)(x)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, x + x)


def test_float16_rounds_once_per_op():
    x = np.array([0.1, 1000.0, 3.3], np.float16)
    got = fs.fused_kernel(lambda t: t * t + 1.0)(x)
    with np.errstate(over="ignore"):   # 1000 * 1000 overflows float16 to inf, as it should
        sq = (x.astype(F32) * x.astype(F32)).astype(np.float16)
    want = (sq.astype(F32) + F32(1)).astype(np.float16)
    assert np.isinf(want[1])
    np.testing.assert_array_equal(got, want)


def test_tolerance_table_covers_every_dtype():
    from conftest import TOLERANCE
    assert set(TOLERANCE) == {d.np for d in (fs.float16, fs.bfloat16, fs.float32, fs.int32, fs.int8,
                                              fs.uint8, fs.bool)}
    assert_close(np.array([1.0, np.nan], F32), np.array([1.0 + 1e-7, np.nan], F32))
    with pytest.raises(AssertionError, match="NaN positions differ"):
        assert_close(np.array([1.0, 2.0], F32), np.array([1.0, np.nan], F32))
    with pytest.raises(AssertionError, match="dtype"):
        assert_close(np.array([1], np.int8), np.array([1], np.int32))


@pytest.mark.parametrize("fn, args, error, message", [
    (lambda a: fs.max(a, a), [rand(3)], fs.ArgumentError, r"axis must be None.*got a tensor"),
    (lambda a: a.astype(np.float64), [rand(3)], fs.DTypeError, r"dtype float64 is not supported"),
    (lambda a: a // 2, [rand(3)], fs.TraceError, r"floor division \(//\) is not supported"),
    (lambda a: [v for v in a], [rand(3)], fs.TraceError, "iterating over a traced tensor"),
    (lambda a: float(a), [rand(3)], fs.ControlFlowError, r"float\(\) needs the value"),
    (lambda a: a + np.ones(3, F32), [rand(3)], fs.TraceError, "numpy array from outside the kernel"),
    (lambda a: fs.fused_kernel(lambda b: b)(a), [rand(3)], fs.ArgumentError, "inside another kernel"),
    (lambda a: a.reshape(-1), [fs.spec(("M", 3))], fs.TraceError, "symbolic shape"),
    (lambda a: fs.concatenate([a, a]), [fs.spec(("M", 3))], fs.ShapeError, "along a symbolic axis"),
    (lambda a: a[0], [fs.spec(("M", 3))], fs.ShapeError, "cannot index symbolic axis M"),
    (lambda a, b: a + b, [fs.spec(("M",)), fs.spec(("N",))], fs.ShapeError, "sizes M and N"),
    (lambda a: fs.leaky_relu(a, "x"), [rand(3)], fs.ArgumentError, "alpha must be a number"),
    (lambda a: None, [rand(3)], fs.TraceError, "returns a NoneType, not a tensor"),
    (lambda a: (), [rand(3)], fs.TraceError, "returns nothing"),
])
def test_more_mistakes(fn, args, error, message):
    with pytest.raises(error, match=message):
        fs.fused_kernel(fn).trace(*args)


@pytest.mark.parametrize("arg, error, message", [
    ("text", fs.ArgumentError, "of type str is not an array"),
    ([1, 2], fs.DTypeError, r"int64 is not supported(.*\n)*.*hint: convert with \.astype\(np\.int32\)"),
    (np.ones(3, np.complex64), fs.DTypeError, "complex64 is not supported"),
])
def test_argument_kinds_that_are_refused(arg, error, message):
    with pytest.raises(error, match=message):
        fs.fused_kernel(lambda a: a * 2)(arg)
