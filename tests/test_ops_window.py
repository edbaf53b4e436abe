"""Window ops and per-group norms as fs ops (fusedsl/ops/window.py): fs.max_pool1d/2d,
fs.avg_pool1d/2d, fs.adaptive_avg_pool1d/2d, fs.conv1d, fs.conv2d with dilation / groups,
fs.conv_transpose1d/2d, fs.group_norm, fs.instance_norm, fs.index_select -- against torch on the
reference interpreter (eager fs.<op>) and the LLVM backend, and located errors for bad
arguments.  The PyTorch importer calls the same definitions: tests/test_import_torch_window.py
runs the printed Ascend C of max / avg pooling under simulate, docs/OPS.md lists per target
what prints."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as tF
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import check_user_error, fuzz_settings, marked_line

TOL = {"float32": (1e-5, 2e-6), "float16": (2e-3, 2e-3)}


def _close(got, want, dtype):
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=rtol, atol=atol)


def _both(fn, *arrays):
    """fn on the reference interpreter (eager) and compiled on the LLVM backend."""
    eager = fn(*arrays)
    llvm = fs.fused_kernel(fn)(*arrays)
    return eager, llvm


def _torch_ref(fn, *arrays):
    """torch in float32 on the float32 values, rounded to the input dtype (torch's float16 CPU
    kernels are not all there; fusedsl computes 16-bit windows in their dtype or float32)."""
    out = fn(*[torch.from_numpy(np.asarray(a, np.float32)) for a in arrays])
    return out.numpy().astype(arrays[0].dtype)


@st.composite
def pool_case(draw):
    nd = draw(st.sampled_from([1, 2]))
    k = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    s = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    p = tuple(draw(st.integers(0, ki // 2)) for ki in k)
    d = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    spatial = tuple(draw(st.integers(max(1, d[i] * (k[i] - 1) + 1 - 2 * p[i]), 7)) for i in range(nd))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3))) + spatial
    return nd, shape, k, s, p, d, draw(st.booleans()), draw(st.booleans()), draw(st.sampled_from(["float32",
                                                                                                    "float16"]))


@given(case=pool_case(), seed=st.integers(0, 2 ** 16))
@fuzz_settings(0.02)
def test_pooling_matches_torch(case, seed):
    nd, shape, k, s, p, d, ceil_mode, include_pad, dtype = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype)
    if seed % 2:   # NaN and +-inf propagate through the windows that hold them (torch's max keeps NaN)
        flat = x.reshape(-1)
        flat[rng.integers(0, flat.size, 2)] = rng.choice([np.nan, np.inf, -np.inf], 2)
    mx, av = (fs.max_pool1d, fs.avg_pool1d) if nd == 1 else (fs.max_pool2d, fs.avg_pool2d)
    tmx, tav = (tF.max_pool1d, tF.avg_pool1d) if nd == 1 else (tF.max_pool2d, tF.avg_pool2d)
    for got in _both(lambda a: mx(a, k, s, p, d, ceil_mode), x):
        _close(got, _torch_ref(lambda t: tmx(t, k, s, p, d, ceil_mode), x), dtype)
    for got in _both(lambda a: av(a, k, s, p, ceil_mode, include_pad), x):
        _close(got, _torch_ref(lambda t: tav(t, k, s, p, ceil_mode, include_pad), x), dtype)


@given(n=st.integers(1, 2), c=st.integers(1, 3), h=st.integers(1, 8), w=st.integers(1, 8),
       oh=st.integers(1, 3), ow=st.integers(1, 3), divides=st.booleans())
@fuzz_settings(0.01)
def test_adaptive_avg_pool_matches_torch(n, c, h, w, oh, ow, divides):
    """Equal windows (the output size divides the input's) and PyTorch's unequal adaptive windows
    (a gather of the widest window's taps, masked), with NaN / inf in some windows."""
    shape = (n, c, h * oh, w * ow) if divides else (n, c, h + oh - 1, w + ow - 1)
    x = np.random.default_rng(h * 10 + w).standard_normal(shape).astype(np.float32)
    x.reshape(-1)[::7] = np.nan if h % 2 else np.inf
    for got in _both(lambda a: fs.adaptive_avg_pool2d(a, (oh, ow)), x):
        _close(got, tF.adaptive_avg_pool2d(torch.from_numpy(x), (oh, ow)).numpy(), "float32")
    got = fs.adaptive_avg_pool1d(x[:, :, 0], ow)
    _close(got, tF.adaptive_avg_pool1d(torch.from_numpy(x[:, :, 0]), ow).numpy(), "float32")


@st.composite
def conv_case(draw):
    nd = draw(st.sampled_from([1, 2]))
    transposed = draw(st.booleans())
    groups = draw(st.sampled_from([1, 2]))
    cin, cout = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    k = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    s = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    d = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    p = tuple(draw(st.integers(0, 1)) for _ in range(nd))
    op = tuple(draw(st.integers(0, max(s[i], d[i]) - 1)) for i in range(nd)) if transposed else None
    spatial = tuple(draw(st.integers(max(1, d[i] * (k[i] - 1) + 1 - 2 * p[i]), 6)) for i in range(nd))
    if transposed and any((spatial[i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 < 1 for i in range(nd)):
        p = (0,) * nd   # torch has no empty output
    return nd, transposed, groups, cin, cout, k, s, d, p, op, spatial, draw(st.booleans())


@given(case=conv_case(), seed=st.integers(0, 2 ** 16))
@fuzz_settings(0.03)
def test_convolutions_match_torch(case, seed):
    nd, transposed, groups, cin, cout, k, s, d, p, op, spatial, with_bias = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, cin) + spatial).astype(np.float32)
    wshape = (cin, cout // groups) + k if transposed else (cout, cin // groups) + k
    w = rng.standard_normal(wshape).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32) if with_bias else None
    t = [torch.from_numpy(v) if v is not None else None for v in (x, w, b)]
    if transposed:
        f = fs.conv_transpose1d if nd == 1 else fs.conv_transpose2d
        want = (tF.conv_transpose1d if nd == 1 else tF.conv_transpose2d)(*t, s, p, op, groups, d).numpy()
        fn = (lambda a, v, c: f(a, v, c, s, p, op, groups, d)) if with_bias else (
            lambda a, v: f(a, v, None, s, p, op, groups, d))
    else:
        f = fs.conv1d if nd == 1 else fs.conv2d
        want = (tF.conv1d if nd == 1 else tF.conv2d)(*t, s, p, d, groups).numpy()
        fn = (lambda a, v, c: f(a, v, c, s, p, d, groups)) if with_bias else (
            lambda a, v: f(a, v, None, s, p, d, groups))
    args = (x, w, b) if with_bias else (x, w)
    for got in _both(fn, *args):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@given(n=st.integers(1, 2), groups=st.integers(1, 3), per=st.integers(1, 2), hw=st.integers(1, 9),
       affine=st.booleans(), dtype=st.sampled_from(["float32", "float16"]))
@fuzz_settings(0.02)
def test_group_and_instance_norm_match_torch(n, groups, per, hw, affine, dtype):
    c = groups * per
    rng = np.random.default_rng(c * 100 + hw)
    x = (rng.standard_normal((n, c, hw)) * 3 + 1).astype(dtype)
    w = rng.standard_normal(c).astype(dtype) if affine else None
    b = rng.standard_normal(c).astype(dtype) if affine else None
    x32 = x.astype(np.float32)

    def norm(g):   # numpy's group norm (torch refuses groups of one element)
        v = x32.reshape(n, g, -1)
        y = ((v - v.mean(-1, keepdims=True)) / np.sqrt(v.var(-1, keepdims=True) + np.float32(1e-5))).reshape(x.shape)
        return (y * w.astype(np.float32)[:, None] + b.astype(np.float32)[:, None] if affine else y).astype(dtype)

    if hw * per > 1:   # torch agrees with that reference where it computes
        tw, tb = (torch.from_numpy(w.astype(np.float32)), torch.from_numpy(b.astype(np.float32))) if affine else (None, None)
        _close(norm(groups), tF.group_norm(torch.from_numpy(x32), groups, tw, tb).numpy().astype(dtype), dtype)
    args = (x, w, b) if affine else (x,)
    gn = (lambda a, v, e: fs.group_norm(a, groups, v, e)) if affine else (lambda a: fs.group_norm(a, groups))
    for got in _both(gn, *args):
        _close(got, norm(groups), dtype if hw * per > 1 else "float32")
    inn = (lambda a, v, e: fs.instance_norm(a, weight=v, bias=e)) if affine else (lambda a: fs.instance_norm(a))
    for got in _both(inn, *args):
        _close(got, norm(c), dtype if hw > 1 else "float32")


@given(rows=st.integers(1, 6), cols=st.integers(1, 5), m=st.integers(1, 7), dim=st.integers(-2, 1),
       dtype=st.sampled_from(["float32", "float16", "int32", "int8"]))
@fuzz_settings(0.02)
def test_index_select_matches_torch(rows, cols, m, dim, dtype):
    rng = np.random.default_rng(rows * 31 + cols * 7 + m)
    x = (rng.standard_normal((rows, cols)) * 50).astype(dtype)
    n = x.shape[dim]
    idx = rng.integers(-n, n, m).astype(np.int32)
    want = torch.index_select(torch.from_numpy(x), dim, torch.from_numpy(idx % n).long()).numpy()
    for got in _both(lambda a, i: fs.index_select(a, dim, i), x, idx):
        np.testing.assert_array_equal(got, want)


def test_bad_window_arguments_name_the_users_line():
    x = np.ones((1, 2, 5, 5), np.float32)
    with pytest.raises(fs.ArgumentError) as info:
        fs.max_pool2d(x, 2, padding=2)  # LINE-MARK pool-pad
    check_user_error(info, file=__file__, line=marked_line(__file__, "pool-pad"),
                     message="padding 2 is more than half the kernel size 2")
    with pytest.raises(fs.ShapeError) as info:
        fs.conv2d(x, np.ones((4, 3, 3, 3), np.float32), groups=2)  # LINE-MARK conv-groups
    check_user_error(info, file=__file__, line=marked_line(__file__, "conv-groups"),
                     message=r"weight of shape \(4, 3, 3, 3\) does not fit an input of 2 channels with groups=2")
    with pytest.raises(fs.ArgumentError) as info:
        fs.group_norm(x, 3)  # LINE-MARK gn-groups
    check_user_error(info, file=__file__, line=marked_line(__file__, "gn-groups"),
                     message="num_groups 3 must divide the 2 channels")
    with pytest.raises(fs.DTypeError) as info:
        fs.index_select(x, 1, np.zeros(2, np.float32))  # LINE-MARK index-dtype
    check_user_error(info, file=__file__, line=marked_line(__file__, "index-dtype"),
                     message="index_select indices must be integers")


def test_padded_strided_pooling_is_few_native_kernels():
    """avg_pool2d with padding and stride: the H taps fuse with the padding into one kernel, the
    W axis is split by the stride and transposed once so its taps fuse too, and the divisor map
    (count_include_pad=False) is arithmetic on arange that fuses with the last pass: 7 kernels
    (three of them the constant padding pieces; 15-18 with a strided slice per tap), none on
    the numpy reference."""
    x = np.random.default_rng(3).standard_normal((2, 3, 9, 11)).astype(np.float32)
    x[0, 0, 0, 0] = np.inf   # a window with inf is inf; the others stay finite (no 0 * inf)
    x[1, 2, 4, 5] = np.nan
    for args, most in (((3, 2, 1, False, False), 7), ((3, 2, 1), 7), ((2, 3, 1, True), 7)):
        c = fs.fused_kernel(lambda a: fs.avg_pool2d(a, *args)).compile(x)
        assert len(c.kernels) <= most, (args, [p.ops for p in c.kernels])
        assert "reference" not in [c.executor(p) for p in c.kernels]
        want = tF.avg_pool2d(torch.from_numpy(x), *args).numpy()
        np.testing.assert_allclose(c(x), want, rtol=1e-6, atol=1e-6)
    c = fs.fused_kernel(lambda a: fs.max_pool2d(a, 3, 2, 1, 2, True)).compile(x)
    assert len(c.kernels) <= 7 and "reference" not in [c.executor(p) for p in c.kernels]
    np.testing.assert_array_equal(c(x), tF.max_pool2d(torch.from_numpy(x), 3, 2, 1, 2, True).numpy())
