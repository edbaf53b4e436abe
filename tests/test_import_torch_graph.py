"""fs.from_torch on what torch.export hands over besides plain ops (issue 18 item 7, issue 20
item 5): metadata asserts around casts, in-place ops, bfloat16/bool tensors, optional None
inputs; and the refusals: data-dependent control flow, data-dependent result sizes, random ops,
in-place writes to inputs, a missing op (named, located, with the nearest supported op).
Every value is compared with eager PyTorch."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fusedsl as fs

torch.manual_seed(0)


def line_of(marker: str) -> int:
    return next(i for i, text in enumerate(open(__file__), 1) if marker in text and "line_of" not in text)


def same(kernel, model, *args, rtol=1e-6, atol=1e-6):
    got = kernel(*args)
    with torch.no_grad():
        want = model(*args)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = w.float().numpy() if w.dtype == torch.bfloat16 else w.numpy()
        g = np.asarray(g)
        assert g.shape == w.shape
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol)


# ---- casts: torch.export's _assert_tensor_metadata is dropped --------------------------------
class Casts(nn.Module):
    def forward(self, x):
        a = x.half().float() * 3
        b = x.to(torch.bfloat16).to(torch.float32)
        c = x.to(dtype=torch.float16)
        return a + b, c, (x > 0).to(torch.int32) + 1


def test_casts_import_and_match_torch():
    x = torch.randn(5, 7)
    same(fs.from_torch(Casts(), x), Casts(), x, rtol=1e-3, atol=1e-3)


# ---- in-place ops are functionalized ---------------------------------------------------------
class InPlace(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x, y):
        z = self.act(self.lin(x))
        z += y
        z.add_(1.5)
        z.mul_(2)
        return torch.sigmoid_(z)


def test_inplace_ops_are_functionalized():
    x, y = torch.randn(3, 6), torch.randn(3, 6)
    model = InPlace().eval()
    same(fs.from_torch(model, x, y), model, x, y, rtol=1e-5, atol=1e-6)


def test_writing_into_an_input_is_refused_at_its_line():
    def f(x):
        x.add_(1)   # writes the input
        return x * 2
    with pytest.raises(fs.UnsupportedOpError, match="writes into its input") as info:
        fs.from_torch(f, torch.randn(4))
    assert f"{__file__}:{line_of('# writes the input')}" in str(info.value)


# ---- dtypes ----------------------------------------------------------------------------------
def test_bfloat16_and_bool_inputs():
    def f(x, m, w):
        return torch.where(m, x * 2, w.float())
    x, m, w = torch.randn(4, 9), torch.rand(4, 9) > 0.5, torch.randn(4, 9).bfloat16()
    same(fs.from_torch(f, x, m, w), f, x, m, w)
    g = lambda x: x * x + 1   # noqa: E731  (bfloat16 in, bfloat16 out)
    xb = torch.randn(3, 5).bfloat16()
    got = fs.from_torch(g, xb)(xb)
    assert got.dtype == fs.bfloat16
    np.testing.assert_array_equal(np.asarray(got, np.float32), g(xb).float().numpy())


# ---- optional None inputs --------------------------------------------------------------------
class Optional(nn.Module):
    def forward(self, x, bias=None, scale=None):
        y = x * 2
        if bias is not None:
            y = y + bias
        return y if scale is None else y * scale


def test_optional_none_inputs():
    x, s = torch.randn(3, 4), torch.randn(4)
    m = Optional()
    k = fs.from_torch(m, x, None, s)
    same(k, m, x, None, s)
    with pytest.raises(fs.ArgumentError, match=r"argument 2 of .* was None when the model was imported"):
        k(x, s, s)
    with pytest.raises(fs.ArgumentError, match="takes 3 input"):
        k(x, s)


# ---- refusals --------------------------------------------------------------------------------
class Branchy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:   # data-dependent branch
            return x + 1
        return x - 1


def test_data_dependent_control_flow_is_located(capfd):
    with pytest.raises(fs.UnsupportedOpError) as info:
        fs.from_torch(Branchy(), torch.randn(4))
    msg = str(info.value)
    assert f"{__file__}:{line_of('# data-dependent branch')}" in msg
    assert "data-dependent control flow" in msg and "torch.where" in msg
    assert "GuardOnDataDependentSymNode" not in msg
    err = capfd.readouterr()
    assert "def forward" not in err.err + err.out   # no graph dump


@pytest.mark.parametrize("body, op", [
    (lambda x: torch.masked_select(x, x > 0), "masked_select"),
    (lambda x: torch.nonzero(x), "nonzero"),
])
def test_data_dependent_sizes_are_refused(body, op):
    with pytest.raises(fs.UnsupportedOpError, match=rf"aten.{op}.*size depends on the data"):
        fs.from_torch(body, torch.randn(6))


def test_random_ops_are_refused_at_their_line():
    def f(x):
        return x + torch.rand_like(x)   # random
    with pytest.raises(fs.UnsupportedOpError, match="aten.rand_like.* random op") as info:
        fs.from_torch(f, torch.randn(4))
    assert f"{__file__}:{line_of('# random')}" in str(info.value)
    with pytest.raises(fs.UnsupportedOpError, match="random op"):
        fs.from_torch(lambda x: x * torch.randn(4), torch.randn(4))


def test_missing_op_names_op_line_and_nearest_supported_op():
    class Cum(nn.Module):
        def forward(self, x):
            return torch.logcumsumexp(x, 0) * 2   # no fusedsl op
    with pytest.raises(fs.UnsupportedOpError) as info:
        fs.from_torch(Cum(), torch.randn(4))
    msg = str(info.value)
    assert "aten.logcumsumexp" in msg and "not supported" in msg
    assert "nearest supported op is aten.logsumexp" in msg
    assert f"{__file__}:{line_of('# no fusedsl op')}" in msg


# ---- fs.torch_backend against eager ----------------------------------------------------------
def test_torch_backend_shapes_dtypes_and_grad():
    def f(x, i):
        return x.sum(), (i * 3).sum(dim=0), x.amax(dim=1)
    x, i = torch.randn(5, 4), torch.arange(20, dtype=torch.int64).reshape(5, 4)
    compiled = torch.compile(f, backend=fs.torch_backend())
    with torch.no_grad():
        got, want = compiled(x, i), f(x, i)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        torch.testing.assert_close(g, w)
    torch._dynamo.reset()
    # tensors that require grad: eager PyTorch runs the graph (with a warning), gradients flow
    xg = torch.randn(5, 4, requires_grad=True)
    compiled = torch.compile(lambda v: (v * v).sum(), backend=fs.torch_backend())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = compiled(xg)
    assert any("require grad" in str(w.message) for w in caught)
    y.backward()
    torch.testing.assert_close(xg.grad, 2 * xg.detach())
    torch._dynamo.reset()


# ---- creation ops become constants -----------------------------------------------------------
class Creation(nn.Module):
    def forward(self, x):
        n = x.shape[-1]
        a = x + torch.zeros(n) + torch.ones_like(x) * 2 + torch.full((1, n), 0.5)
        b = a * torch.arange(n, dtype=torch.float32) + torch.linspace(-1, 1, n)
        c = torch.empty_like(x).fill_(3.0) + torch.full_like(x, -1.0) + x.new_zeros(x.shape)
        return b + c + torch.zeros_like(x) + torch.ones(x.shape[0], 1)


def test_creation_ops_are_constants():
    x = torch.randn(3, 7)
    k = fs.from_torch(Creation(), x)
    same(k, Creation(), x, rtol=1e-6, atol=1e-6)
    ir = k.compile(x).ir
    main = ir[ir.index("func @main"):] if "func @main" in ir else ir
    params = main.split("{", 1)[0]
    # arange and linspace are arrays of distinct values: bound as weights; every fill is a 0-d
    # constant broadcast in the kernel, never an array
    assert len(k.weights) == 2 and sorted(w.shape for w in k.weights) == [(7,), (7,)]
    assert len(re.findall(r"%\w+:", params)) == 3, params


@pytest.mark.parametrize("case", ["split", "chunk", "unbind", "T", "repeat", "stack", "narrow"])
def test_shape_ops_match_torch(case):
    x = torch.randn(4, 6, 5)
    bodies = {
        "split": lambda v: torch.split(v, 4, dim=1)[1] * 2,
        "chunk": lambda v: v.chunk(3, dim=-1)[2] + v.chunk(3, dim=-1)[0][..., :1],
        "unbind": lambda v: sum(torch.unbind(v, 0)),
        "T": lambda v: v[0].T @ v[1],
        "repeat": lambda v: v[:, :2, :].repeat(2, 1, 3),
        "stack": lambda v: torch.stack([v[0], v[1] * 2], dim=-1),
        "narrow": lambda v: v.narrow(1, 2, 3).permute(2, 0, 1).unsqueeze(1).squeeze(1).expand(5, 4, 3),
    }
    same(fs.from_torch(bodies[case], x), bodies[case], x, rtol=1e-5, atol=1e-5)


def test_index_with_one_tensor_is_a_take():
    x, i = torch.randn(4, 6), torch.tensor([5, 0, 2, 2])
    for body in (lambda v, j: v[:, j] * 2, lambda v, j: v[j.clamp(0, 3)] + 1):
        same(fs.from_torch(body, x, i), body, x, i)


def test_item_and_boolean_masks_are_refused():
    with pytest.raises(fs.UnsupportedOpError, match=r"aten.item.*reads a tensor's value into Python"):
        fs.from_torch(lambda v: v * v.max().item(), torch.randn(4))
    with pytest.raises(fs.UnsupportedOpError, match="size depends on the data"):
        fs.from_torch(lambda v: v[v > 0], torch.randn(4))


def test_repeated_calls_take_the_runner_and_follow_the_weights():
    """ImportedKernel's runner per argument shapes (importers/common.py): the second call with
    numpy arrays goes straight to the compiled runner; new weight arrays, new shapes and
    errors still go through the checked paths."""
    lin = nn.Linear(5, 3)
    x = torch.randn(4, 5)
    k = fs.from_torch(lin, x)

    def want(a):
        with torch.no_grad():
            return lin(torch.from_numpy(a)).numpy()
    xn = x.numpy().copy()
    for _ in range(2):
        np.testing.assert_allclose(k(xn), want(xn), rtol=1e-5, atol=1e-5)
    assert len(k._runners) == 1
    xn[0] += 1.0                                     # the same array, new values
    np.testing.assert_allclose(k(xn), want(xn), rtol=1e-5, atol=1e-5)
    xn2 = np.ascontiguousarray(xn[:2] * 3)           # new shape: compiled again, remembered too
    for _ in range(2):
        np.testing.assert_allclose(k(xn2), want(xn2), rtol=1e-5, atol=1e-5)
    assert len(k._runners) == 2
    # new weight arrays (not the ones the runner was found with): followed
    k.weights = [(w * -2.0 if w.ndim == 2 else w + 1.0).astype(np.float32) for w in k.weights]
    w2 = next(w for w in k.weights if w.ndim == 2)
    b1 = next(w for w in k.weights if w.ndim == 1)
    ref = xn @ (w2.T if w2.shape == (3, 5) else w2) + b1
    np.testing.assert_allclose(k(xn), ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(fs.FusedslError, match="takes 1 input"):
        k(xn, xn)
