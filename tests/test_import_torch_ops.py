"""The ATen ops fs.from_torch maps to fusedsl ops or decomposes into them (issue 20 items 2-4,
importer side), each against eager PyTorch on hypothesis-drawn shapes (odd sizes, size 1) and
values (NaN/inf where the op defines them)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from hypothesis import given, strategies as st

import fusedsl as fs
from conftest import fuzz_settings

# op -> (torch function of x, rtol/atol); each imported with fs.from_torch and compared with eager
UNARY = {
    "hardswish": (F.hardswish, 1e-6), "hardsigmoid": (F.hardsigmoid, 1e-6), "relu6": (F.relu6, 0),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 2.0), 0), "elu": (lambda x: F.elu(x, 0.7), 1e-6),
    "selu": (F.selu, 2e-6), "celu": (lambda x: F.celu(x, 1.3), 1e-6), "softplus": (F.softplus, 1e-6),
    "softplus_beta": (lambda x: F.softplus(x, beta=2.0, threshold=5.0), 1e-6),
    "softsign": (F.softsign, 1e-6), "mish": (F.mish, 2e-6), "logsigmoid": (F.logsigmoid, 1e-6),
    "gelu": (F.gelu, 1e-6), "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), 1e-6),
    "erf": (torch.erf, 1e-6), "sign": (torch.sign, 0), "clamp": (lambda x: torch.clamp(x, -0.25, 0.5), 0),
    "clamp_min": (lambda x: x.clamp(min=0.1), 0), "leaky": (lambda x: F.leaky_relu(x, 0.2), 1e-7),
    "log_softmax": (lambda x: F.log_softmax(x, dim=-1), 2e-6),
    "log_softmax0": (lambda x: F.log_softmax(x, dim=0), 2e-6),
    "logsumexp": (lambda x: torch.logsumexp(x, dim=-1), 2e-6),
    "var": (lambda x: torch.var(x, dim=-1), 2e-5), "var0": (lambda x: x.var(dim=0, unbiased=False, keepdim=True), 2e-5),
    "std": (lambda x: torch.std(x, dim=-1, keepdim=True), 2e-5), "var_all": (lambda x: x.var(), 2e-5),
    "std_corr": (lambda x: torch.std(x, dim=(0, 1), correction=0), 2e-5),
    "max_dim": (lambda x: torch.max(x, dim=-1).values, 0), "min_dim": (lambda x: x.min(dim=0, keepdim=True)[0], 0),
    "norm2": (lambda x: torch.linalg.vector_norm(x, dim=-1), 2e-6), "norm1": (lambda x: x.norm(p=1, dim=-1), 2e-6),
    "fro": (lambda x: torch.norm(x, p="fro"), 2e-6), "norm_inf": (lambda x: torch.linalg.vector_norm(x, math.inf), 0),
    "addcmul": (lambda x: torch.addcmul(x, x, x * 2, value=0.5), 1e-6),
    "lerp": (lambda x: torch.lerp(x, x * 3, 0.25), 1e-6),
    "pow3": (lambda x: x ** 3, 1e-6),
}


SHAPES = [(1, 1), (3, 37), (5, 1), (2, 8)]
# each op on one of the shapes, in turn; the ops of a shape are the outputs of ONE imported model
# (torch.export and a compile per op and shape cost seconds each; each output is still its op's
# ATen call imported and checked against eager PyTorch on the same drawn values)
ON_SHAPE = {shape: [n for i, n in enumerate(sorted(UNARY)) if SHAPES[i % len(SHAPES)] == shape] for shape in SHAPES}
_KERNELS: dict = {}


def _imported(shape):
    """One import per shape (torch.export is the slow part); hypothesis draws values."""
    if shape not in _KERNELS:
        names = ON_SHAPE[shape]
        _KERNELS[shape] = fs.from_torch(lambda x: tuple(UNARY[n][0](x) for n in names), torch.zeros(shape))
    return _KERNELS[shape]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@given(seed=st.integers(0, 2 ** 16), scale=st.sampled_from([0.1, 3.0, 40.0]))
@fuzz_settings(0.01)
def test_unary_matches_torch(shape, seed, scale):
    x = torch.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * scale)
    got = _imported(shape)(x)
    assert len(got) == len(ON_SHAPE[shape])
    for name, g in zip(ON_SHAPE[shape], got):
        fn, tol = UNARY[name]
        with np.errstate(all="ignore"):
            want = fn(x).numpy()
        np.testing.assert_allclose(np.asarray(g), want, rtol=tol, atol=tol * max(1.0, scale), err_msg=name)


def test_special_values():
    x = torch.tensor([[float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 30.0, -30.0, 1e-30]])
    # (not gelu: torch's erf form gives nan at +inf, fusedsl inf)
    for name in ("hardswish", "relu6", "elu", "softplus", "softsign", "sign", "clamp"):
        fn = UNARY[name][0]
        got, want = np.asarray(fs.from_torch(fn, x)(x)), fn(x).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=name)


class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.gn, self.inorm = nn.GroupNorm(3, 6), nn.InstanceNorm2d(6, affine=True)
        self.ln = nn.LayerNorm((5, 7))
        for p in self.parameters():
            nn.init.uniform_(p, 0.5, 1.5)

    def forward(self, x):
        return self.gn(x) + self.inorm(x) * 2 + self.ln(x)


def test_group_instance_and_multi_axis_layer_norm():
    x = torch.randn(2, 6, 5, 7)
    model = Norms().eval()
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(fs.from_torch(model, x)(x), want, rtol=2e-5, atol=2e-5)


def test_max_dim_indices_need_an_argmax():
    if hasattr(fs, "argmax"):
        x = torch.randn(4, 9)
        np.testing.assert_array_equal(fs.from_torch(lambda v: torch.max(v, dim=1).indices, x)(x),
                                      torch.max(x, dim=1).indices.numpy())
        return
    with pytest.raises(fs.UnsupportedOpError, match="indices of max.*fs.argmax"):
        fs.from_torch(lambda v: torch.max(v, dim=1).indices, torch.randn(4, 9))


# ATen ops mapped to the vocabulary's fs ops (sin, floor, isnan, logical/bitwise, floor_divide, ...)
_X, _Y = torch.randn(3, 7) * 3, torch.randn(3, 7) * 2 + 0.1
_XI, _YI = torch.randint(-9, 9, (3, 7)), torch.randint(1, 5, (3, 7))
VOCAB = {
    "trig": (lambda a, b: torch.sin(a) + torch.cos(b) * torch.atan2(a, b) + torch.tanh(torch.asin(b / 9)), (_X, _Y)),
    "rounding": (lambda a, b: torch.floor(a) + torch.ceil(b) + torch.trunc(a * b) + torch.round(a), (_X, _Y)),
    "logs": (lambda a, b: torch.log2(a.abs() + 1) + torch.log1p(b.abs()) + torch.expm1(a / 4), (_X, _Y)),
    "isnan_isinf": (lambda a, b: torch.where(torch.isnan(a / b) | torch.isinf(b), 0.0, a), (_X, _Y)),
    "div_modes": (lambda a, b: torch.div(a, b, rounding_mode="floor") + torch.div(a, b, rounding_mode="trunc"),
                  (_X, _Y)),
    "int_div_mod": (lambda a, b: torch.div(a, b, rounding_mode="floor") + torch.remainder(a, b) + a // b, (_XI, _YI)),
    "pow_tensor": (lambda a, b: torch.pow(a.abs() + 0.5, b), (_X, _Y)),
    "logical": (lambda a, b: torch.logical_and(a > 0, b > 0) | torch.logical_not(a > 1), (_X, _Y)),
    "bitwise": (lambda a, b: (a & b) ^ (a | 3), (_XI.int(), _YI.int())),
}


@pytest.mark.parametrize("name", sorted(VOCAB))
def test_vocabulary_ops_match_torch(name):
    fn, args = VOCAB[name]
    got, want = np.asarray(fs.from_torch(fn, *args)(*args)), fn(*args).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5, atol=1e-5)


# ---- nll_loss / cross_entropy (aten.nll_loss_forward: the target's log-probability per row) ----
class CrossEntropy(nn.Module):
    def __init__(self, c, reduction, weighted, ignore_index, log_softmax=True):
        super().__init__()
        self.reduction, self.ignore_index, self.log_softmax = reduction, ignore_index, log_softmax
        w = torch.linspace(0.5, 2.0, c) if weighted else None
        self.register_buffer("w", w)

    def forward(self, x, t):
        if self.log_softmax:
            return F.cross_entropy(x, t, weight=self.w, reduction=self.reduction, ignore_index=self.ignore_index)
        return F.nll_loss(x, t, weight=self.w, reduction=self.reduction, ignore_index=self.ignore_index)


def _reference_call(k, *args):
    saved = fs.config.executor
    fs.config.executor = "reference"
    try:
        return k(*args)
    finally:
        fs.config.executor = saved


@given(n=st.integers(1, 9), c=st.integers(1, 37), reduction=st.sampled_from(["none", "mean", "sum"]),
       weighted=st.booleans(), ignore=st.sampled_from([-100, 0, 2]), seed=st.integers(0, 2 ** 16),
       log_softmax=st.booleans(), spatial=st.booleans())
@fuzz_settings(0.006)   # each draw is a torch.export (seconds)
def test_nll_loss_and_cross_entropy_match_torch(n, c, reduction, weighted, ignore, seed, log_softmax, spatial):
    rng = np.random.default_rng(seed)
    shape = (n, c, 3) if spatial else (n, c)   # [N, C, d] with targets [N, d]: nll_loss2d's layout
    x = torch.from_numpy(rng.standard_normal(shape).astype(np.float32) * 3)
    t = torch.from_numpy(rng.integers(0, c, (n, 3) if spatial else (n,)))
    if ignore < c:   # some rows ignored (an ignore_index past the classes leaves every target a class:
        t[rng.random(t.shape) < 0.3] = ignore   # torch refuses -100 unless it is the ignore_index)
    model = CrossEntropy(c, reduction, weighted, ignore, log_softmax)
    want = model(x, t).numpy()
    k = fs.from_torch(model, x, t)
    for got in (k(x, t), _reference_call(k, x, t)):
        assert np.asarray(got).shape == want.shape
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-5, equal_nan=True)


def test_cross_entropy_prints():
    """KernelBench level 1 95_CrossEntropyLoss stopped at aten.nll_loss_forward; a weighted mean
    with an ignored class in range prints every kernel, and a 1-D input with a 0-d target."""
    rng = np.random.default_rng(7)
    x = torch.from_numpy(rng.standard_normal((6, 37)).astype(np.float32))
    t = torch.tensor([0, 5, 2, 36, 2, 1])
    model = CrossEntropy(37, "mean", True, 2)
    xs, ts = x.numpy(), t.numpy().astype(np.int32)
    imp = fs.from_torch(model, x, t)
    k = imp.compile(xs, ts, target="ascend910b")
    k.check_ascendc()   # every kernel prints
    want = model(x, t).numpy()
    np.testing.assert_allclose(imp(xs, ts), want, rtol=2e-5)   # (simulate of fs.cross_entropy: test_losses.py)
    one = CrossEntropy(5, "sum", False, -100)
    x1, t1 = torch.randn(5), torch.tensor(3)
    np.testing.assert_allclose(fs.from_torch(one, x1, t1)(x1, t1), one(x1, t1).numpy(), rtol=2e-5)


def test_cross_entropy_with_probability_targets():
    x, p = torch.randn(3, 4), torch.rand(3, 4)
    got = fs.from_torch(lambda a, b: F.cross_entropy(a, b), x, p)(x, p)   # soft targets: log_softmax * p
    np.testing.assert_allclose(got, F.cross_entropy(x, p).numpy(), rtol=2e-5)
