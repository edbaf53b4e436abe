"""Index, scatter and sort ops (fusedsl/ops/index.py) against numpy / torch: the reference
interpreter (eager fs.<op>), the LLVM backend, and located errors for bad arguments."""
from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from onnx import TensorProto, helper

import fusedsl as fs
from conftest import check_user_error, fuzz_settings, marked_line


def test_a_take_of_computed_indices_runs_on_the_llvm_backend():
    """The view kernel looks a gather's indices up at its first call: bound earlier, it read an
    earlier kernel's output buffer before that kernel had run (an out-of-range index error)."""
    x = np.arange(35, dtype=np.float32).reshape(35, 1)
    i = np.array([0, 3, 6, 2], np.int32)
    c = fs.fused_kernel(lambda t, k: fs.take(t, k * 2 + 1, axis=0)).compile(x, i)
    np.testing.assert_array_equal(c(x, i), x[i * 2 + 1])
    np.testing.assert_array_equal(c(x, i + 5), x[(i + 5) * 2 + 1])


# ---- differential tests: reference (eager) and LLVM against numpy / torch -----------------------------

DTYPES = ["float32", "float16", "int32", "int8"]
SPECIAL = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, 1.0], np.float32)


def _both(fn, *arrays):
    """fn on the reference interpreter (eager) and compiled on the LLVM backend."""
    return fn(*arrays), fs.fused_kernel(fn)(*arrays)


def _data(rng, shape, dtype, specials=True):
    """Small values with ties; floats also NaN, +-inf and -0.0."""
    x = rng.integers(-4, 5, shape).astype(dtype)
    if specials and np.dtype(dtype).kind == "f" and x.size:
        flat = x.reshape(-1)
        pick = rng.random(flat.size) < 0.25
        flat[pick] = SPECIAL[rng.integers(0, len(SPECIAL), int(pick.sum()))].astype(dtype)
    return x


def _eq(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind == "f":   # -0.0 and NaN exact
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(got, want)


@given(rows=st.integers(1, 4), n=st.integers(1, 9), m=st.integers(1, 6), axis=st.sampled_from([0, 1, -1]),
       dtype=st.sampled_from(DTYPES), seed=st.integers(0, 999))
@fuzz_settings(0.015)
def test_take_along_axis_and_gather_match_numpy_and_torch(rows, n, m, axis, dtype, seed):
    rng = np.random.default_rng(seed)
    x = _data(rng, (rows, n), dtype)
    size = x.shape[axis]
    shape = (rows, m) if axis % 2 else (m, n)
    idx = rng.integers(-size, size, shape).astype(np.int32)
    for got in _both(lambda a, i: fs.take_along_axis(a, i, axis), x, idx):
        _eq(got, np.take_along_axis(x, idx, axis))
    cut = idx[:rows] if axis % 2 else idx[:, :n]
    cut = cut % size
    want = torch.gather(torch.from_numpy(x), axis, torch.from_numpy(cut).long()).numpy()
    for got in _both(lambda a, i: fs.gather(a, axis, i), x, cut):
        _eq(got, want)


@given(n=st.integers(1, 9), t=st.integers(1, 6), dtype=st.sampled_from(DTYPES), invert=st.booleans(),
       seed=st.integers(0, 999))
@fuzz_settings(0.01)
def test_isin_matches_numpy(n, t, dtype, invert, seed):
    rng = np.random.default_rng(seed)
    x, tests = _data(rng, (2, n), dtype), _data(rng, (t,), dtype)
    for got in _both(lambda a, b: fs.isin(a, b, invert=invert), x, tests):
        _eq(got, np.isin(x, tests, invert=invert))


@given(rows=st.integers(1, 3), n=st.integers(1, 7), m=st.integers(1, 7), dim=st.sampled_from([0, 1]),
       reduce=st.sampled_from([None, "sum", "prod", "amax", "amin", "mean"]), include_self=st.booleans(),
       dtype=st.sampled_from(["float32", "int32"]), seed=st.integers(0, 999))
@fuzz_settings(0.015)
def test_scatter_family_matches_torch(rows, n, m, dim, reduce, include_self, dtype, seed):
    rng = np.random.default_rng(seed)
    if reduce == "mean" and dtype == "int32":
        dtype = "float32"
    x = _data(rng, (rows, n), dtype, specials=False)
    size = x.shape[dim]
    ishape = (rows, m) if dim == 1 else (m, n)
    if reduce is None:   # torch leaves duplicates unspecified: distinct indices per line
        m = min(m, size)
        ishape = (rows, m) if dim == 1 else (m, n)
        perm = np.argsort(rng.random((ishape[1 - dim], size)), axis=1)[:, :m]
        idx = (perm if dim == 1 else perm.T).astype(np.int32)
    else:
        idx = rng.integers(0, size, ishape).astype(np.int32)
    src = _data(rng, ishape, dtype, specials=False)
    tx, ti, ts = torch.from_numpy(x), torch.from_numpy(idx).long(), torch.from_numpy(src)
    if reduce is None:
        want, fn = torch.scatter(tx, dim, ti, ts).numpy(), (lambda a, i, s: fs.scatter(a, dim, i, s))
    else:
        want = torch.scatter_reduce(tx, dim, ti, ts, reduce, include_self=include_self).numpy()
        fn = (lambda a, i, s: fs.scatter_reduce(a, dim, i, s, reduce, include_self))
    for got in _both(fn, x, idx, src):
        if reduce in ("prod", "mean", "sum") and dtype == "float32":   # prod: exp(sum(log)); sums in any order
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        else:
            _eq(got, want)


def test_scatter_duplicates_index_put_and_put_along_axis():
    x = np.zeros((2, 5), np.float32)
    idx = np.array([[1, 1, 3], [0, 4, 0]], np.int32)
    src = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    # the last duplicate wins (numpy's put_along_axis), scatter_add counts every one
    want = x.copy()
    np.put_along_axis(want, idx, src, 1)
    for got in _both(lambda a, i, s: fs.scatter(a, 1, i, s), x, idx, src):
        _eq(got, want)
    for got in _both(lambda a, i, s: fs.put_along_axis(a, i, s, 1), x, idx, src):
        _eq(got, want)
    for got in _both(lambda a, i, s: fs.scatter_add(a, 1, i, s), x, idx, src):
        _eq(got, torch.scatter_add(torch.from_numpy(x), 1, torch.from_numpy(idx).long(), torch.from_numpy(src)))
    rows = np.array([2, 0, 2, -1], np.int32)
    v = np.arange(12, dtype=np.float32).reshape(4, 3)
    base = np.ones((3, 3), np.float32)
    want = torch.index_put(torch.from_numpy(base), (torch.from_numpy(rows).long(),), torch.from_numpy(v), True)
    for got in _both(lambda a, i, s: fs.index_put(a, (i,), s, accumulate=True), base, rows, v):
        _eq(got, want.numpy())
    want = base.copy()
    want[rows] = v   # numpy: the last write wins
    for got in _both(lambda a, i, s: fs.index_put(a, (i,), s), base, rows, v):
        _eq(got, want)


@given(rows=st.integers(1, 3), n=st.integers(1, 12), dtype=st.sampled_from(DTYPES), descending=st.booleans(),
       seed=st.integers(0, 999))
@fuzz_settings(0.01)
def test_sort_argsort_topk_match_numpy_and_torch(rows, n, dtype, descending, seed):
    rng = np.random.default_rng(seed)
    x = _data(rng, (rows, n), dtype)
    k = int(rng.integers(1, n + 1))
    tx = torch.from_numpy(x.astype(np.float32) if dtype == "float16" else x)
    tv, ti = torch.sort(tx, dim=0, descending=descending, stable=True)
    # topk's values: torch.topk's order among equal values is unspecified (-0.0 and 0.0 tie
    # but differ in sign); fusedsl's is the stable sort's (lower index first)
    kv = torch.sort(tx, dim=-1, descending=descending, stable=True)[0][:, :k]

    def all_of(a):
        return (fs.sort(a), fs.argsort(a)) + fs.sort_with_indices(a, 0, descending) + fs.topk(a, k, largest=descending)

    for got in _both(all_of, x):
        _eq(got[0], np.sort(x, kind="stable"))          # numpy: ascending, stable, NaN last
        _eq(got[1], np.argsort(x, kind="stable"))
        _eq(got[2], tv.numpy().astype(dtype))           # torch: stable descending puts NaN first
        _eq(got[3], ti.numpy())
        _eq(got[4], kv.numpy().astype(dtype))           # topk: the k first of the stable sort
        _eq(np.take_along_axis(x, got[5], 1), got[4])
        assert all(len(set(r)) == k for r in got[5].tolist())


def test_index_ops_import_from_torch_and_onnx():
    class M(torch.nn.Module):
        def forward(self, x, i):
            g = torch.gather(x, 1, i)
            return (*torch.topk(x, 3), g, x.scatter_reduce(1, i, g * 2, "amax", include_self=False),
                    x.index_put((i[0] % 4,), torch.ones(1), accumulate=True), torch.isin(x, x[0, :3]))

    torch.manual_seed(0)
    x, i = torch.randn(4, 6), torch.randint(0, 6, (4, 5))
    got = fs.from_torch(M(), x, i)(x.numpy(), i.numpy())
    for g, w in zip(got, M()(x, i)):
        np.testing.assert_allclose(np.asarray(g, np.float64), w.numpy().astype(np.float64), atol=1e-6)
    # ONNX TopK (K a constant input; GatherElements / ScatterElements: tests/test_import_onnx_ops.py)
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=0)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
                              [helper.make_tensor_value_info("v", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("i", TensorProto.INT64, None)],
                              [helper.make_tensor("k", TensorProto.INT64, [1], [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    values, index = fs.from_onnx(model)(x.numpy())
    tv, ti = torch.topk(x, 2, largest=False)
    _eq(values, tv.numpy())
    _eq(index, ti.numpy())


def test_sort_scatter_and_isin_print_and_simulate():
    """One printed kernel set (ascend910b, simulate): the compare-reduce scatter_add and isin are
    row kernels of compares, selects and sums (the sort's rank count is the same kind of kernel;
    docs/OPS.md lists what prints per op and target)."""
    rng = np.random.default_rng(5)
    x = _data(rng, (3, 8), "float32", specials=False)
    idx = rng.integers(0, 8, (3, 4)).astype(np.int32)
    src = rng.standard_normal((3, 4)).astype(np.float32)

    def k(a, i, s):
        return fs.scatter_add(a, 1, i, s), fs.isin(a, s[0])

    c = fs.fused_kernel(k, target="ascend910b").compile(x, idx, src)
    c.check_ascendc()
    want = (torch.scatter_add(torch.from_numpy(x), 1, torch.from_numpy(idx).long(), torch.from_numpy(src)).numpy(),
            np.isin(x, src[0]))
    for got, w in zip(c.simulate(x, idx, src), want):
        np.testing.assert_allclose(got, w, rtol=1e-6, atol=1e-6)


def test_bad_index_arguments_name_the_users_line():
    x = np.ones((3, 4), np.float32)
    i = np.zeros((3, 2), np.int32)
    with pytest.raises(fs.ShapeError) as info:
        fs.gather(x, 1, np.zeros((5, 2), np.int32))  # LINE-MARK gather-shape
    check_user_error(info, file=__file__, line=marked_line(__file__, "gather-shape"),
                     message=r"index of shape \(5, 2\) must have the input's rank and be no larger")
    with pytest.raises(fs.ArgumentError) as info:
        fs.scatter_reduce(x, 1, i, x, "median")  # LINE-MARK scatter-reduce
    check_user_error(info, file=__file__, line=marked_line(__file__, "scatter-reduce"),
                     message="reduce must be one of sum, prod, amax, amin, mean")
    with pytest.raises(fs.ArgumentError) as info:
        fs.topk(x, 5)  # LINE-MARK topk-k
    check_user_error(info, file=__file__, line=marked_line(__file__, "topk-k"),
                     message=r"topk k=5 must be an int in \[0, 4\]")
    with pytest.raises(fs.DTypeError) as info:
        fs.take_along_axis(x, i.astype(np.float32), 1)  # LINE-MARK tal-dtype
    check_user_error(info, file=__file__, line=marked_line(__file__, "tal-dtype"),
                     message="take_along_axis indices must be integers")
    k = fs.fused_kernel(lambda a, b: fs.take_along_axis(a, b, 1))  # LINE-MARK tal-op
    with pytest.raises(fs.IndexRangeError) as info:
        k(x, i + 4)
    assert "take_along_axis: an index along axis 1 (size 4) is out of range" in str(info.value)
    assert (info.value.loc.file, info.value.loc.line) == (__file__, marked_line(__file__, "tal-op"))


def _gather_1(a, b):
    return fs.gather(a, 1, b)  # LINE-MARK range-gather


def _scatter_1(a, b):
    return fs.scatter(a, 1, b, a[:, :2])  # LINE-MARK range-scatter


def _scatter_add_0(a, b):
    return fs.scatter_add(a, 0, b, a[:3, :2])  # LINE-MARK range-scatter-add


def _index_select_1(a, b):
    return fs.index_select(a, 1, b[0])  # LINE-MARK range-index-select


@pytest.mark.parametrize("executor", ["llvm", "reference"])
def test_out_of_range_indices_name_the_users_op_and_line(executor):
    """An index outside its axis raises IndexRangeError when the kernel runs (LLVM backend and
    reference alike; eagerly too), naming the user's op (not the take it is built of, nor the
    flattened table's size), the dim and its size, at the line of the op -- before any result."""
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    cases = [(_gather_1, np.array([[0, 1]] * 4, np.int32), 6, "gather: an index along dim 1 \\(size 6\\)", "range-gather"),
             (_scatter_1, np.array([[0, 1]] * 4, np.int32), -7, "scatter: an index along dim 1 \\(size 6\\)",
              "range-scatter"),
             (_scatter_add_0, np.array([[0, 1]] * 3, np.int32), 4,
              "scatter_add: an index along dim 0 \\(size 4\\)", "range-scatter-add"),
             (_index_select_1, np.array([[0, 1]], np.int32), 6,
              "index_select: an index along dim 1 \\(size 6\\)", "range-index-select")]
    previous = fs.config.executor
    fs.config.executor = executor
    try:
        for fn, idx, bad, message, mark in cases:
            k = fs.fused_kernel(fn)
            k(x, idx)   # in range: runs
            idx = idx.copy()
            idx.reshape(-1)[1] = bad
            with pytest.raises(fs.IndexRangeError) as info:
                k(x, idx)
            text = str(info.value)
            assert re.search(message + " is out of range", text), text
            assert f"{__file__}:{marked_line(__file__, mark)}" in text, text
            assert "take" not in text and "site-packages" not in text and "/fusedsl/" not in text, text
            with pytest.raises(fs.IndexRangeError) as info:
                fn(x, idx)   # eagerly: the same error at the same line
            assert re.search(message, str(info.value)) and info.value.loc.line == marked_line(__file__, mark)
    finally:
        fs.config.executor = previous


@given(n=st.integers(0, 20), lead=st.sampled_from([(1,), (3,), (2, 3)]),
       dtype=st.sampled_from(["float32", "float16", "bfloat16", "int32", "int8", "bool"]),
       descending=st.booleans(), seed=st.integers(0, 999))
@fuzz_settings(0.008)
def test_the_bitonic_sort_matches_numpy_and_torch_across_powers_of_two(n, lead, dtype, descending, seed):
    """The bitonic network pads to a power of two and moves between two layouts: row lengths
    around 2**k, size 0 and 1, every dtype, NaN / +-inf / -0.0 ties; the sort is stable (numpy's
    order ascending, torch's stable descending order), on the LLVM backend, no kernel on the
    reference."""
    rng = np.random.default_rng(seed)
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    x = _data(rng, lead + (n,), "float32" if dtype == "bfloat16" else dtype).astype(np_dtype)
    k = int(rng.integers(1, n + 1)) if n else 0
    c = fs.fused_kernel(lambda a: fs.sort_with_indices(a, -1, descending)).compile(x)
    assert "reference" not in [c.executor(p) for p in c.kernels]
    values, index = c(x)
    tx = torch.from_numpy(x.astype(np.float32) if x.dtype.kind == "f" or dtype == "bfloat16" else
                          x.astype(np.int32))
    tv, ti = torch.sort(tx, dim=-1, descending=descending, stable=True)
    np.testing.assert_array_equal(index, ti.numpy())
    _eq(values.astype(np.float32) if dtype == "bfloat16" else values, tv.numpy().astype(
        np.float32 if dtype == "bfloat16" else x.dtype))
    if not descending:
        np.testing.assert_array_equal(index, np.argsort(x.astype(np.float32), axis=-1, kind="stable"))
    if k:
        tk = fs.fused_kernel(lambda a: fs.topk(a, k, largest=descending)[1])(x)
        np.testing.assert_array_equal(tk, ti.numpy()[..., :k])


def test_take_along_any_axis_with_any_index_shape_runs_natively_and_prints():
    """fs.take(table, idx, axis) for every axis and a 1-/2-D index is one gather along axis 0 of
    the table seen as rows (a view kernel), never the numpy reference; like np.take, and an
    index out of range names the take and the axis size."""
    x3 = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    cases = [(x3, 1, np.array([3, 0, -1, 2], np.int32)), (x3, 0, np.array([[1, 0], [3, 2]], np.int32)),
             (x3, 2, np.array([[5, 0], [1, -2]], np.int32)), (np.arange(7, dtype=np.float32), 0,
                                                              np.array([6, 0, -7], np.int32))]
    for x, axis, idx in cases:
        k = fs.fused_kernel(lambda a, i: fs.take(a, i, axis=axis), target="ascend910b").compile(x, idx)
        assert "reference" not in [k.executor(p) for p in k.kernels] and all(p.printable for p in k.kernels)
        np.testing.assert_array_equal(k(x, idx), np.take(x, idx, axis=axis))
    bad = np.array([0, 7], np.int32)
    k = fs.fused_kernel(lambda a, i: fs.take(a, i, axis=1)).compile(x3, bad)
    with pytest.raises(fs.IndexRangeError, match=r"take along axis 1 \(size 5\)"):
        k(x3, bad)
