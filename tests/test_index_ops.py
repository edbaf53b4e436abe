"""arange / linspace (host inputs) and the ops built on them: argmax/argmin (torch.max(x, dim)
indices), prod, cumsum/cumprod, flip, tril/triu, one_hot, right_shift.

Each is one definition (fusedsl/ops/creation.py, fusedsl/ops/composite.py); the kernels they
make are the usual vector / row / column / cube / transpose kernels, so the checks are: numpy
agreement on the reference and the LLVM executors (hypothesis: odd sizes, size 1, NaN, +-inf,
ties), one simulate of the printed Ascend C per op group, and the torch importer's names.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import fuzz_settings

import fusedsl as fs

rng = np.random.default_rng(20)


def _special(shape, draw_mask):
    x = rng.standard_normal(shape).astype(np.float32).round(1)   # rounding makes ties common
    flat = x.reshape(-1)
    for i, kind in draw_mask:
        if flat.size:
            flat[i % flat.size] = {0: np.nan, 1: np.inf, 2: -np.inf, 3: 0.0, 4: flat[0]}[kind]
    return x


def _close(got, want, rtol=2e-5, atol=1e-5):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)


shapes = st.lists(st.integers(1, 9), min_size=1, max_size=3)
specials = st.lists(st.tuples(st.integers(0, 500), st.integers(0, 4)), max_size=4)


@fuzz_settings(scale=0.04)
@given(shape=shapes, sp=specials, data=st.data())
def test_arg_reductions_match_numpy(shape, sp, data):
    """First index on ties, the first NaN wins (numpy), any axis or all of them."""
    x = _special(shape, sp)
    axis = data.draw(st.sampled_from([None] + list(range(len(shape)))))
    keep = data.draw(st.booleans())
    got = fs.fused_kernel(lambda v: (fs.argmax(v, axis=axis, keepdims=keep),
                                     fs.argmin(v, axis=axis, keepdims=keep)))(x)
    _close(got[0], np.argmax(x, axis=axis, keepdims=keep))
    _close(got[1], np.argmin(x, axis=axis, keepdims=keep))


@fuzz_settings(scale=0.04)
@given(shape=shapes, sp=specials, data=st.data())
def test_scans_and_prod_match_numpy(shape, sp, data):
    x = _special(shape, sp)
    axis = data.draw(st.integers(0, len(shape) - 1))
    got = fs.fused_kernel(lambda v: (fs.cumsum(v, axis=axis), fs.cumprod(v, axis=axis), fs.prod(v, axis=axis)))(x)
    with np.errstate(all="ignore"):
        want = (np.cumsum(x, axis), np.cumprod(x, axis), np.prod(x, axis))
    _close(got[0], want[0], atol=1e-4)
    _close(got[1], want[1], rtol=1e-4, atol=1e-4)
    _close(got[2], want[2], rtol=1e-4, atol=1e-4)


@fuzz_settings(scale=0.04)
@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=3), data=st.data(), bits=st.integers(1, 31))
def test_int32_scans_and_products_are_exact_and_wrap_like_numpy(shape, data, bits):
    """int32 cumsum / cumprod / prod multiply and add in int32: numpy's int32 results bit for bit,
    wrapping included (they went through float32: 16777216 + 1 and 39 * 15 came out wrong)."""
    x = rng.integers(-(2 ** bits), 2 ** bits, shape).astype(np.int32)
    axis = data.draw(st.integers(0, len(shape) - 1))
    axes = data.draw(st.sampled_from([None, axis, tuple(range(len(shape)))]))
    keep = data.draw(st.booleans())
    got = fs.fused_kernel(lambda v: (fs.cumsum(v, axis=axis), fs.cumprod(v, axis=axis),
                                     fs.prod(v, axis=axes, keepdims=keep)))(x)
    want = (np.cumsum(x, axis).astype(np.int32), np.cumprod(x, axis).astype(np.int32),
            np.prod(x, axis=axes, keepdims=keep).astype(np.int32))
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.int32 and np.shape(g) == w.shape
        np.testing.assert_array_equal(g, w)


@fuzz_settings(scale=0.04)
@given(shape=st.lists(st.integers(1, 9), min_size=2, max_size=3), data=st.data(),
       dtype=st.sampled_from([np.float32, np.float16, np.int32, np.int8]))
def test_flip_tril_triu_exact_for_every_dtype(shape, data, dtype):
    x = (rng.standard_normal(shape) * 50).astype(dtype)
    axis = data.draw(st.sampled_from([None, 0, -1, (0, len(shape) - 1)]))
    k = data.draw(st.integers(-3, 3))
    got = fs.fused_kernel(lambda v: (fs.flip(v, axis), fs.tril(v, k), fs.triu(v, k)))(x)
    for g, w in zip(got, (np.flip(x, axis), np.tril(x, k), np.triu(x, k))):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@fuzz_settings(scale=0.04)
@given(shift=st.integers(0, 31), dtype=st.sampled_from([np.int32, np.int8, np.uint8]))
def test_right_shift_is_exact(shift, dtype):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, int(info.max) + 1, (3, 17), dtype=np.int64).astype(dtype)
    x.reshape(-1)[:2] = (info.min, info.max)
    got = fs.fused_kernel(lambda v: fs.right_shift(v, shift))(x)
    # floor(x / 2**k): numpy's >> below the width, and its limit (0 or -1) from the width up, as torch
    np.testing.assert_array_equal(got, np.floor_divide(x.astype(np.int64), 2 ** shift).astype(dtype))


def test_creation_ops_eager_and_traced():
    np.testing.assert_array_equal(fs.arange(3, 11, 2), np.arange(3, 11, 2))
    assert fs.arange(4).dtype == np.int32 and fs.arange(0.0, 1.0, 0.25).dtype == np.float32
    np.testing.assert_array_equal(fs.linspace(-1, 1, 7), np.linspace(-1, 1, 7).astype(np.float32))
    x = rng.standard_normal((4, 6)).astype(np.float32)
    k = fs.fused_kernel(lambda v: v * fs.arange(6).astype(fs.float32) + fs.linspace(0, 1, 4, endpoint=False)
                        .reshape(-1, 1)).compile(fs.spec(x.shape))
    assert len(k.kernels) == 1   # the host inputs fuse into the kernel's broadcasts
    _close(k(x), x * np.arange(6) + np.linspace(0, 1, 4, endpoint=False)[:, None])
    oh = fs.fused_kernel(lambda i: fs.one_hot(i, 4))(np.array([[0, 3], [5, -1]], np.int32))
    np.testing.assert_array_equal(oh, np.eye(4, dtype=np.int32)[[[0, 3], [0, 0]]] * [[[1], [1]], [[0], [0]]])


def test_user_mistakes_are_located():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(fs.ArgumentError) as exc:
        fs.fused_kernel(lambda v: fs.one_hot(v.astype(fs.int32), -1))(x)
    assert "num_classes" in str(exc.value) and "test_index_ops.py" in str(exc.value)
    with pytest.raises(fs.ArgumentError) as exc:
        fs.fused_kernel(lambda v: fs.right_shift(v.astype(fs.int32), 40))(x)
    assert "[0, 31]" in str(exc.value) and "test_index_ops.py" in str(exc.value)
    with pytest.raises(fs.ArgumentError) as exc:
        fs.fused_kernel(lambda v: v + fs.arange(3, 3, 0))(x)
    assert "step must not be 0" in str(exc.value) and "test_index_ops.py" in str(exc.value)


X = rng.standard_normal((5, 7)).astype(np.float32).round(1)
X[1, 3], X[2, 2], X[2, 5], X[3, 1], X[4, 0] = np.nan, 9.0, 9.0, np.inf, 0.0
XI = rng.integers(-2**31, 2**31 - 1, (5, 7), dtype=np.int64).astype(np.int32)


@fs.fused_kernel
def indexed(x, xi):
    return (fs.argmax(x, axis=1), fs.argmin(x, axis=0), fs.argmax(x), fs.prod(x, axis=1), fs.right_shift(xi, 3),
            fs.one_hot(fs.bitwise_and(xi, 3), 4), fs.cumsum(x, axis=1), fs.flip(x, 1), fs.tril(x, 1))


def test_printed_ascendc_agrees_under_simulate():
    """Every kernel prints for ascend910b (row fusion stops at the 8-queue limit, FS105: the row
    kernel reading x had 11 outputs before) and the printed Ascend C agrees (cumprod is cumsum's
    scan of other parts: the hypothesis test above checks it on the executors)."""
    with np.errstate(all="ignore"):
        want = (np.argmax(X, 1), np.argmin(X, 0), np.argmax(X), np.prod(X, 1), XI >> 3,
                np.eye(4, dtype=np.int32)[XI & 3], np.cumsum(X, 1), np.flip(X, 1), np.tril(X, 1))
    k = indexed.compile(fs.spec(X.shape), fs.spec(XI.shape, fs.int32), target="ascend910b")
    k.check_ascendc()
    for run in (k.simulate, k):
        for got, w in zip(run(X, XI), want):
            _close(got, w, rtol=1e-4, atol=1e-4)


def test_torch_names_import():
    torch = pytest.importorskip("torch")

    class M(torch.nn.Module):
        def forward(self, x, i):
            v, idx = torch.max(x, dim=1)
            return (torch.argmax(x, 1), torch.argmin(x, 0), v, idx, torch.prod(x, 1), torch.cumsum(x, 1),
                    torch.cumprod(x, 0), torch.flip(x, [1]), torch.tril(x), torch.triu(x, 1),
                    torch.nn.functional.one_hot(i, 5), i >> 2)

    x, i = torch.randn(4, 6), torch.randint(0, 5, (3, 4))
    got = fs.from_torch(M(), x, i)(x.numpy(), i.numpy())
    for g, w in zip(got, M()(x, i)):
        _close(g, w.numpy(), rtol=1e-4, atol=1e-5)


def test_onnx_names_import():
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper
    x = rng.standard_normal((4, 6)).astype(np.float32)
    nodes = [helper.make_node("ArgMax", ["x"], ["a"], axis=1, keepdims=0),
             helper.make_node("ArgMin", ["x"], ["b"], axis=0),
             helper.make_node("ReduceProd", ["x", "ax"], ["p"], keepdims=0),
             helper.make_node("CumSum", ["x", "cax"], ["c"]),
             helper.make_node("Trilu", ["x", "k"], ["t"], upper=0)]
    inits = [numpy_helper.from_array(np.array([1], np.int64), "ax"),
             numpy_helper.from_array(np.array(1, np.int32), "cax"), numpy_helper.from_array(np.array(1, np.int64), "k")]
    shapes = {"a": (TensorProto.INT64, [4]), "b": (TensorProto.INT64, [1, 6]), "p": (TensorProto.FLOAT, [4]),
              "c": (TensorProto.FLOAT, [4, 6]), "t": (TensorProto.FLOAT, [4, 6])}
    outs = [helper.make_tensor_value_info(n, t, s) for n, (t, s) in shapes.items()]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])], outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for got, w in zip(fs.from_onnx(model)(x), want):
        _close(got, w, rtol=1e-4, atol=1e-5)


def test_saved_project_fills_host_inputs(tmp_path):
    """save(): arange's values are constants of main.cpp copied to GM before the launches; the
    project's own CPU run (run.sh -r cpu) passes and writes numpy's results."""
    import os
    import subprocess
    import sys
    k = fs.fused_kernel(lambda x: (fs.argmax(x, axis=1), fs.tril(x))).compile(fs.spec((4, 6)), target="ascend910b")
    path = k.save(str(tmp_path / "p"))
    main = open(os.path.join(path, "main.cpp"), encoding="utf-8").read()
    assert "static const int32_t k_host_" in main and "CopyToDevice(host_" in main
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {k_: v for k_, v in os.environ.items() if k_ not in ("ASCEND_HOME_PATH", "FUSEDSL_TARGET")}
    env.update(PYTHON=sys.executable, PYTHONPATH=root + os.pathsep + env.get("PYTHONPATH", ""))
    run = subprocess.run(["bash", "run.sh", "-r", "cpu", "-v", "Ascend910B2"], cwd=path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert "test pass" in run.stdout, run.stdout + run.stderr
    x = np.fromfile(os.path.join(path, "input", "input_x.bin"), np.float32).reshape(4, 6)
    np.testing.assert_array_equal(np.fromfile(os.path.join(path, "output", "output_0.bin"), np.int32), np.argmax(x, 1))
    np.testing.assert_array_equal(np.fromfile(os.path.join(path, "output", "output_1.bin"), np.float32).reshape(4, 6),
                                  np.tril(x))


def test_a_long_scan_compiles_and_a_symbolic_one_is_a_located_shape_error():
    """cumsum scans in log2(n) shifted-add steps: n = 40000 (40 GB as the triangular-matrix matmul
    it was) compiles to a few dozen kernels; a symbolic n raised a raw TypeError, now a ShapeError
    at the user's line."""
    def k(x):
        return fs.cumsum(x, axis=1)   # LINE-MARK long-scan
    assert len(fs.fused_kernel(k).compile(fs.spec((2, 40000), "float32")).kernels) < 40
    with pytest.raises(fs.ShapeError) as info:
        fs.fused_kernel(k).compile(fs.spec((2, "N"), "float32"))
    line = next(i for i, t in enumerate(open(__file__, encoding="utf-8"), 1) if "# LINE-MARK long-scan" in t)
    assert str(info.value).startswith(f"{__file__}:{line}: cumsum along an axis of N elements")
    assert "fixed number of elements" in str(info.value)
