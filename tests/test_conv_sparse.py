"""Imported convolution variants skip their structural zeros on the CPU (backend_cpu/zeros.py,
conv_sparse.py, gather.py): dilated, grouped / depthwise and transposed convolutions, composed
by the importer as a plain conv2d over zero-inserted or block-diagonal operands, agree with
torch.nn.functional and the numpy reference, through a bound program and through main's walk
(out=), with inf / NaN inputs (the dense conv then runs: 0 * inf is NaN there), for float32 and
float16; the sparse plan is asserted to be the path taken."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

import fusedsl as fs
from fusedsl.backend_cpu import conv_sparse
from fusedsl.backend_cpu.conv_cpu import ConvCpu
from fusedsl.backend_cpu.conv_direct import direct_list
from fusedsl.backend_cpu.gather import copy_list
from fusedsl.backend_cpu.zeros import copy_sources, structural_zeros

from conftest import fuzz_settings

torch = pytest.importorskip("torch")
from fusedsl.importers.torch_window import convolution  # noqa: E402  (imports torch's rules)


@pytest.fixture(autouse=True)
def _small_convs_take_the_plan(monkeypatch):
    """The shapes here are small: let every plan that skips work run (conv_sparse.MIN_SAVED_MACS
    keeps small convs dense outside the tests, where the plan's fixed cost would dominate)."""
    monkeypatch.setattr(conv_sparse, "MIN_SAVED_MACS", 0)


def _kernel(stride, padding, dilation, transposed, output_padding, groups):
    def conv(x, w):
        return convolution(x, w, None, stride, padding, dilation, transposed, output_padding, groups)
    return fs.fused_kernel(conv)


def _torch(x, w, stride, padding, dilation, transposed, output_padding, groups):
    tx, tw = torch.from_numpy(x.astype(np.float32)), torch.from_numpy(w.astype(np.float32))
    if transposed:
        y = torch.nn.functional.conv_transpose2d(tx, tw, None, stride, padding, output_padding, groups, dilation)
    else:
        y = torch.nn.functional.conv2d(tx, tw, None, stride, padding, dilation, groups)
    return y.numpy()


def _sparse_plans(compiled):
    """The conv kernels' sparse plans (None where the dense conv runs): the product of each conv
    kernel's executor, llvm_kernel's conv (backend_cpu/conv_cpu.py, conv_product.py)."""
    plans = []
    for p in compiled.kernels:
        if any(op.name == "conv2d" for op in p.function.ops):
            conv = compiled._conv_kernel(p)
            assert isinstance(conv, ConvCpu) and compiled.executor(p) == "cube", p.name
            plans.append(conv.product.sparse_plan)
    return plans


def _case(n, c, k, h, w_, kh, kw, stride, padding, dilation, transposed, output_padding, groups, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w_)).astype(dtype)
    wshape = (c, k // groups, kh, kw) if transposed else (k, c // groups, kh, kw)
    w = rng.standard_normal(wshape).astype(dtype)
    kern = _kernel(stride, padding, dilation, transposed, output_padding, groups)
    return x, w, kern


def _check(x, w, kern, cfg, dtype):
    want = _torch(x, w, *cfg)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=2e-2, atol=2e-2)
    got = kern(x, w)
    assert got.shape == want.shape and got.dtype == dtype
    np.testing.assert_allclose(got.astype(np.float32), want, **tol)
    out = np.empty_like(got)                     # main's walk: the conv kernel with the masks
    kern(x, w, out=out)
    np.testing.assert_allclose(out.astype(np.float32), want, **tol)
    return kern.compile(x, w)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_the_imported_variants_take_the_sparse_conv_and_agree_with_torch(dtype):
    # (n, c, k, h, w, kh, kw), (stride, padding, dilation, transposed, output_padding, groups)
    cases = [((2, 4, 6, 9, 8, 3, 3), ((1, 1), (2, 1), (2, 3), False, (0, 0), 1)),   # dilated
             ((1, 6, 6, 7, 9, 3, 2), ((2, 1), (1, 0), (1, 1), False, (0, 0), 6)),   # depthwise, strided
             ((2, 4, 6, 5, 6, 3, 3), ((1, 1), (0, 1), (1, 1), False, (0, 0), 2)),   # grouped
             ((2, 4, 3, 5, 4, 3, 2), ((2, 3), (1, 0), (1, 1), True, (1, 2), 1)),    # transposed, strided
             ((1, 4, 4, 4, 5, 3, 3), ((3, 2), (1, 2), (2, 1), True, (0, 1), 2))]    # all of them
    for shape, cfg in cases:
        x, w, kern = _case(*shape, *cfg, dtype)
        compiled = _check(x, w, kern, cfg, dtype)
        plans = _sparse_plans(compiled)
        assert plans and all(p is not None and p.macs < p.dense_macs for p in plans), (shape, cfg)


def test_non_finite_inputs_run_the_dense_conv_like_the_reference():
    cfg = ((1, 1), (1, 1), (2, 2), False, (0, 0), 2)   # dilated and grouped: zeros meet the inf
    x, w, kern = _case(1, 4, 4, 7, 7, 3, 3, *cfg, np.float32)
    x[0, 1, 3, 3] = np.inf
    x[0, 2, 0, 5] = np.nan
    got = kern(x, w)
    fs.config.executor = "reference"
    try:
        want = kern(x, w)
    finally:
        fs.config.executor = "llvm"
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got).sum() > np.isnan(_torch(x, w, *cfg)).sum()   # the dense sum's 0 * inf
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-4, atol=1e-4)
    x[0, 1, 3, 3] = x[0, 2, 0, 5] = 0.5             # finite again: the sparse plan, the same call
    np.testing.assert_allclose(kern(x, w), _torch(x, w, *cfg), rtol=1e-4, atol=1e-4)


@fuzz_settings(scale=0.014)
@given(n=st.integers(1, 2), cg=st.integers(1, 3), kg=st.integers(1, 3), groups=st.integers(1, 3),
       h=st.integers(1, 8), w_=st.integers(1, 8), kh=st.integers(1, 3), kw=st.integers(1, 3),
       stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       padding=st.tuples(st.integers(0, 2), st.integers(0, 2)),
       dilation=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       transposed=st.booleans(), opad=st.tuples(st.integers(0, 2), st.integers(0, 2)),
       seed=st.integers(0, 2 ** 16), direct=st.booleans())
def test_drawn_convolution_variants_agree_with_torch(n, cg, kg, groups, h, w_, kh, kw, stride, padding,
                                                     dilation, transposed, opad, seed, direct):
    c, k = cg * groups, kg * groups
    if transposed:
        assume(all(o < max(s, d) for o, s, d in zip(opad, stride, dilation)))
        # a padding above dilation * (kernel - 1) crops the zero-inserted input; where that
        # leaves an empty intermediate the scheduler fails (IndexError in lower/kinds.py), a
        # separate bug: not drawn here
        assume(all(d * (q - 1) >= p for d, q, p in zip(dilation, (kh, kw), padding)))
        size = [(i - 1) * s - 2 * p + d * (q - 1) + o + 1
                for i, s, p, d, q, o in zip((h, w_), stride, padding, dilation, (kh, kw), opad)]
    else:
        opad = (0, 0)
        size = [(i + 2 * p - d * (q - 1) - 1) // s + 1
                for i, s, p, d, q in zip((h, w_), stride, padding, dilation, (kh, kw))]
    assume(min(size) >= 1)
    cfg = (stride, padding, dilation, transposed, opad, groups)
    x, w, kern = _case(n, c, k, h, w_, kh, kw, *cfg, np.float32, seed)
    with pytest.MonkeyPatch.context() as mp:   # the direct kernel (conv_direct.py), or windows and products
        mp.setattr(conv_sparse, "DIRECT_MAX_KG", 32 if direct else 0)
        mp.setattr(conv_sparse, "DIRECT_NARROW_KG", 2 if direct else 0)
        mp.setattr(conv_sparse, "DIRECT_MAX_KC", 16 if direct else 0)
        mp.setattr(conv_sparse, "DIRECT_MIN_EFFICIENCY", 0.0)
        mp.setattr(conv_sparse, "BAND_BYTES", 1 + seed % 300)   # bands of one or a few output rows
        compiled = _check(x, w, kern, cfg, np.float32)
        assert all(p is None or p.empty or p.direct == direct for p in _sparse_plans(compiled))


@fuzz_settings(scale=0.04)
@given(rows=st.integers(1, 6), cols=st.integers(1, 40), terms=st.integers(1, 7), ics=st.integers(1, 3),
       ocs=st.integers(1, 3), jobs=st.integers(1, 3), seed=st.integers(0, 2 ** 16))
def test_direct_conv_jobs_match_numpy(rows, cols, terms, ics, ocs, jobs, seed):
    """conv_direct.direct_list: out[r, c] = sum_t w[t] * base[first + off[t] + r * irs + c * ics]
    for strided inputs and outputs, column tails of every length, nothing written outside."""
    rng = np.random.default_rng(seed)
    irs = cols * ics + 5
    base = rng.standard_normal(rows * irs + 64).astype(np.float32)
    cases, wants = [], []
    for _ in range(jobs):
        w = rng.standard_normal(terms).astype(np.float32)
        off = rng.integers(0, 50, terms).astype(np.int64)
        first = int(rng.integers(0, 10))
        big = np.zeros((rows, cols * ocs + 2), np.float32)
        out = big[:, :cols * ocs:ocs]
        idx = first + off[:, None, None] + irs * np.arange(rows)[:, None] + ics * np.arange(cols)
        cases.append((out, (base, first, irs, ics), w, off))
        wants.append((big, out, (w[:, None, None].astype(np.float64) * base[idx]).sum(axis=0)))
    direct_list(cases)()
    for big, out, want in wants:
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
        rest = big.copy()
        rest[:, :cols * ocs:ocs] = 0
        assert not rest.any()


@fuzz_settings(scale=0.04)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), data=st.data())
def test_copy_list_matches_numpy_copyto(shape, data):
    rng = np.random.default_rng(0)
    pairs, wants = [], []
    for _ in range(data.draw(st.integers(1, 3))):
        steps = [data.draw(st.integers(1, 3)) for _ in shape]
        flips = [data.draw(st.booleans()) for _ in shape]
        base = rng.standard_normal([s * t for s, t in zip(shape, steps)]).astype(np.float32)
        src = base[tuple(slice(None, None, -t if f else t) for t, f in zip(steps, flips))][tuple(slice(0, s) for s in shape)]
        big = np.zeros([s + 2 for s in shape], np.int32).view(np.float32)
        dst = big[tuple(slice(1, s + 1) for s in shape)]
        pairs.append((dst, src))
        wants.append((big, src.copy(), tuple(slice(1, s + 1) for s in shape)))
    copy_list(pairs)()
    for (big, want, inner), (dst, _) in zip(wants, pairs):
        np.testing.assert_array_equal(dst, want)
        outside = big.copy()
        outside[inner] = 0
        assert not outside.any()   # nothing written outside the destination view


def test_structural_zero_masks_follow_data_movement_only():
    def f(x, w):
        z = fs.concatenate([x, fs.zeros_like(x)], axis=1)      # a zero half
        y = fs.concatenate([x * 0.0, x], axis=1)                # x * 0 is not structural (inf * 0)
        return fs.transpose(z, (1, 0)) + 1.0, y, w
    x = np.ones((3, 2), np.float32)
    compiled = fs.fused_kernel(f).compile(x, x)
    masks = structural_zeros(compiled.module)
    main = compiled.module.main
    found = [m for v, m in ((v, masks.get(id(v))) for op in main.ops for v in op.results) if m is not None]
    halves = [m for m in found if m.shape in ((3, 4), (4, 3))]
    assert halves and all(m.sum() == 6 for m in halves)     # z: x's half may be nonzero
    assert all(m.shape == (3, 2) and not m.any() for m in found if m.shape == (3, 2))   # zeros_like
    assert all(id(v) not in masks for v in main.results)   # z + 1, y (x * 0.0 is not a zero), w
    assert all(id(p.value) not in masks for p in main.params)


def test_copy_sources_index_the_parameter_through_data_movement():
    """zeros.copy_sources: a value built by slices, concatenations (with zeros), transposes,
    reshapes and broadcasts of one parameter is that parameter's elements at its indices (-1:
    zero); a value mixing two parameters or computing anything has no entry."""
    def f(x, y):
        flipped = fs.concatenate([x[:, 2:3], x[:, 1:2], x[:, 0:1]], axis=1)
        padded = fs.concatenate([fs.zeros_like(x[:1]), flipped, fs.zeros_like(x[:2])], axis=0)
        moved = fs.reshape(fs.transpose(padded, (1, 0)), (-1,))
        mixed = fs.concatenate([x, y], axis=0)
        return moved * 1.0, padded + 0.0, mixed, x * 2.0
    x = np.arange(12, dtype=np.float32).reshape(4, 3) + 1
    y = -x
    compiled = fs.fused_kernel(f, opt_level=0).compile(x, y)
    sources = copy_sources(compiled.module)
    main = compiled.module.main
    values = {id(v): v for op in main.ops for v in op.results}
    found = [(values[i], got) for i, got in sources.items() if i in values]
    assert len(found) >= 3
    for v, (param, at) in found:
        assert param == 0 and at.shape == tuple(v.shape) and (at >= -1).all()
    padded = np.concatenate([np.zeros((1, 3)), x[:, ::-1], np.zeros((2, 3))], axis=0)
    cands = [got for got in sources.values() if got[1].shape == (7, 3)]
    assert any(np.array_equal(np.where(at >= 0, x.reshape(-1)[np.maximum(at, 0)], 0.0), padded) for _, at in cands)
    mixed_ids = {id(v) for op in main.ops for v in op.results if tuple(v.shape) == (8, 3)}
    assert not mixed_ids & set(sources)


@fuzz_settings(scale=0.04)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), data=st.data())
def test_affine_view_reads_the_indexed_elements(shape, data):
    steps = [data.draw(st.integers(1, 3)) * (-1 if data.draw(st.booleans()) else 1) for _ in shape]
    base = np.arange(int(np.prod([s * abs(t) + 1 for s, t in zip(shape, steps)])), dtype=np.float32)
    base = base.reshape([s * abs(t) + 1 for s, t in zip(shape, steps)])
    at = np.arange(base.size).reshape(base.shape)
    pick = tuple(slice(None, None, t) for t in steps)
    at = at[pick][tuple(slice(0, s) for s in shape)]
    if data.draw(st.booleans()) and at.ndim > 1:
        at = at.transpose(list(range(at.ndim))[::-1])
    view = conv_sparse.affine_view(base, np.ascontiguousarray(at))
    assert view is not None and np.shares_memory(view, base)
    np.testing.assert_array_equal(view, base.reshape(-1)[at])
    if at.shape[-1] >= 3:   # two neighbours swapped: not affine; a zero (-1): not a view
        swapped = at.copy()
        swapped[..., [0, 1]] = swapped[..., [1, 0]]
        assert conv_sparse.affine_view(base, swapped) is None
        zero = at.copy()
        zero.reshape(-1)[0] = -1
        assert conv_sparse.affine_view(base, zero) is None


@pytest.mark.parametrize("returns_weight", [False, True])
def test_operands_read_from_their_sources_drop_the_kernels_building_them(returns_weight):
    """A depthwise conv's block-diagonal weight and a transposed conv's zero-inserted input are
    read from the parameters they copy: the program runs the conv kernel alone, unless the built
    operand is also a result (then its kernels stay), and agrees with torch either way."""
    cases = [((2, 6, 6, 7, 9, 3, 2), ((1, 1), (1, 0), (1, 1), False, (0, 0), 6)),   # depthwise
             ((2, 4, 3, 5, 4, 3, 2), ((2, 3), (1, 0), (2, 1), True, (1, 2), 1))]    # transposed
    for shape, cfg in cases:
        x, w, kern = _case(*shape, *cfg, np.float32)
        if returns_weight:
            inner = kern

            def both(a, b):
                return inner.fn(a, b), fs.concatenate([b, b], axis=0)
            kern = fs.fused_kernel(both)
        for _ in range(2):
            got = kern(x, w)
            y = got[0] if returns_weight else got
            np.testing.assert_allclose(y, _torch(x, w, *cfg), rtol=1e-4, atol=1e-4)
            if returns_weight:
                np.testing.assert_array_equal(got[1], np.concatenate([w, w], axis=0))
            x *= -1.5                                   # the same arrays, new values
            w += 0.25
        program = list(kern._cache.values())[-1]._program
        assert program is not None
        if not returns_weight:
            assert len(program._steps) == 1, shape      # the conv kernel alone


def test_dense_convs_choose_direct_by_its_efficiency():
    """conv_sparse.direct_efficiency: many terms over full rows run direct (KernelBench 56:
    32 channels x 35 taps, 28 x 26 outputs), few terms (59: 3 x 3) or a few output columns in
    one row (76, a 1-D conv of 8 outputs) take the windows and sgemms; depthwise is direct."""
    def plan(x, w, out, stride=(1, 1), padding=(0, 0)):
        return conv_sparse.SparseConv(x, w, out, stride, padding, None, None)
    assert plan((2, 32, 32, 32), (32, 32, 5, 7), (2, 32, 28, 26)).direct
    assert not plan((64, 3, 32, 10), (32, 3, 3, 1), (64, 32, 30, 10)).direct
    assert not plan((2, 32, 1, 32), (32, 32, 1, 3), (2, 32, 1, 8), stride=(1, 3)).direct
    dw = np.zeros((32, 32, 3, 3), bool)
    dw[np.arange(32), np.arange(32)] = True                 # block-diagonal: depthwise
    assert conv_sparse.SparseConv((2, 32, 32, 32), (32, 32, 3, 3), (2, 32, 30, 30), (1, 1), (0, 0),
                                  None, dw).direct
