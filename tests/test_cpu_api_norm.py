"""The LayerNorm family of the CPU Ascend C API (LayerNorm over [B, S, H] and over [A, R],
LayerNormGrad, LayerNormGradBeta, Normalize, WelfordUpdate, WelfordFinalize) against numpy, with the
scratch check's failure path; kernels in tests/ascendc_kernels/norm_kernels.cpp (one build)."""
import os
import re

import numpy as np
import pytest
from conftest import ASCENDC_KERNELS

from fusedsl.backend_ascendc import cpu_runner
from fusedsl.errors import AscendCCheckError

pytestmark = pytest.mark.usefixtures("private_cache_dir")
SOURCE = os.path.join(ASCENDC_KERNELS, "norm_kernels.cpp")
EPS = 1e-5


@pytest.fixture(scope="module")
def lib():
    with open(SOURCE, encoding="utf-8") as f:
        return cpu_runner.build(f.read(), name="norm_kernels")


def _line(marker):
    with open(SOURCE, encoding="utf-8") as f:
        for i, text in enumerate(f, 1):
            if f"LINE:{marker}" in text:
                return i
    raise AssertionError(marker)


def _run(lib, x, dy, gamma, beta, ori, tmp):
    rows, h = x.shape
    n = rows * h
    out = np.zeros(9 * n + 2 * h + 80, np.float32)
    buf = np.concatenate([x.ravel(), dy.ravel(), gamma, beta]).astype(np.float32)
    lib.launch("norm_f32", 1, [("x", buf), ("y", np.zeros(8, np.float32)),
                               ("p", np.array([rows, h, ori, tmp], np.int32)), ("out", out)])
    return out


@pytest.mark.parametrize("rows,h,ori", [(3, 16, 16), (5, 24, 20), (1, 8, 8)])
def test_layernorm_family_matches_numpy(lib, rows, h, ori):
    rng = np.random.default_rng(rows * 100 + h)
    x, dy = rng.uniform(-3, 3, (2, rows, h)).astype(np.float32)
    gamma, beta = rng.uniform(0.5, 1.5, (2, h)).astype(np.float32)
    out = _run(lib, x, dy, gamma, beta, ori, 0)
    n = rows * h
    xd, dyd, g, b = (a.astype(np.float64) for a in (x, dy, gamma, beta))
    xs = xd[:, :ori]
    mu = xs.mean(axis=1, keepdims=True)
    var = ((xs - mu) ** 2).mean(axis=1, keepdims=True)
    rstd = 1 / np.sqrt(var + EPS)
    y = g * (xd - mu) * rstd + b
    close = dict(rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(out[:n].reshape(rows, h), y, **close)
    np.testing.assert_allclose(out[n:n + rows], mu.ravel(), **close)
    np.testing.assert_allclose(out[n + 8:n + 8 + rows], var.ravel(), **close)
    # LayerNormGrad: the page's pd_var, pd_mean, pd_x steps over the original H
    pd_xl = dyd * g
    xm = xd - mu
    pd_var = (-0.5 * pd_xl[:, :ori] * xm[:, :ori] * (var + EPS) ** -1.5).sum(axis=1, keepdims=True)
    pd_mean = (-pd_xl[:, :ori] * rstd).sum(axis=1, keepdims=True) + pd_var / ori * (-2 * xm[:, :ori]).sum(
        axis=1, keepdims=True)
    pd_x = pd_mean / ori + pd_var * 2 / ori * xm + pd_xl * rstd
    np.testing.assert_allclose(out[n + 16:2 * n + 16].reshape(rows, h), pd_x, rtol=1e-4, atol=1e-4)
    res = xm * rstd
    np.testing.assert_allclose(out[2 * n + 16:2 * n + h + 16], (dyd * res).sum(axis=0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out[2 * n + h + 16:2 * n + 2 * h + 16], dyd.sum(axis=0), **close)
    # LayerNorm [A, R] with R = ori valid of H per row, and Normalize from its mean and variance
    b2 = 2 * n + 2 * h + 16
    got = out[b2:b2 + n].reshape(rows, h)[:, :ori]
    np.testing.assert_allclose(got, (g * (xd - mu) * rstd + b)[:, :ori], **close)
    np.testing.assert_allclose(out[b2 + n:b2 + n + rows], mu.ravel(), **close)
    np.testing.assert_allclose(out[b2 + n + 8:b2 + n + 8 + rows], rstd.ravel(), rtol=1e-4)
    np.testing.assert_allclose(out[b2 + n + 16:b2 + 2 * n + 16].reshape(rows, h)[:, :ori], got, rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(out[b2 + 2 * n + 16:b2 + 2 * n + 16 + rows], rstd.ravel(), rtol=1e-4)
    # WelfordUpdate in float steps on the first `ori` of each row; the rest copied (isInplace)
    m0, v0 = dy, y.astype(np.float32)
    d = x - m0
    m1 = m0 + d * np.float32(0.25)
    v1 = v0 + d * (x - m1)
    m1[:, ori:], v1[:, ori:] = m0[:, ori:], v0[:, ori:]
    w_mean = out[b2 + 2 * n + 24:b2 + 3 * n + 24].reshape(rows, h)
    w_m = out[b2 + 3 * n + 24:b2 + 4 * n + 24].reshape(rows, h)
    np.testing.assert_allclose(w_mean, m1, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(w_m, v1, rtol=1e-5, atol=1e-5)
    # WelfordFinalize of the first 8: mean = rRec * sum(c m), var = rRec * (sum(M) + sum(c (m - mean)^2))
    c = np.arange(1, 9, dtype=np.float64)
    fm, fv = w_mean.ravel()[:8].astype(np.float64), w_m.ravel()[:8].astype(np.float64)
    mean_f = (c * fm).sum() / 16
    np.testing.assert_allclose(out[b2 + 4 * n + 24], mean_f, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[b2 + 4 * n + 32], (fv.sum() + (c * (fm - mean_f) ** 2).sum()) / 16, rtol=1e-5)


def test_layernorm_grad_scratch_minimum(lib):
    x = np.ones((4, 16), np.float32)
    _run(lib, x, x, x[0], x[0], 16, 512)   # 5 float rows of 16 (5 x 64) + 2 x 32 bytes = 384
    with pytest.raises(AscendCCheckError) as info:
        _run(lib, x, x, x[0], x[0], 16, 256)
    assert re.search(rf"norm_kernels\.cpp:{_line('grad_call')}: LayerNormGrad: sharedTmpBuffer has 256 bytes, but "
                     r"this call needs at least 384 \(the minValue of GetLayerNormGradMaxMinTmpSize",
                     str(info.value)), str(info.value)
