"""End to end: trace -> fuse -> schedule -> print Ascend C -> g++ against the CPU API -> run.

Every generated kernel must equal the numpy reference within the dtype tolerance on
all four targets, with the CPU API's hardware checks reporting nothing.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fusedsl as fs
from fusedsl.reference import run_module

from conftest import PACKAGE_FILES, covering

TARGETS = ["ascend910b", "ascend910b4", "ascend310p", "ascend910"]
TOL = {"float32": (2e-5, 2e-5), "float16": (2e-2, 2e-2), "bfloat16": (3e-2, 3e-2),
       "int32": (0, 0), "int8": (0, 0), "uint8": (0, 0), "bool": (0, 0)}
# each example builds a kernel with g++: a hundredth of the suite-wide property-test budget
EXAMPLES = max(4, int(os.environ.get("FUSEDSL_FUZZ_EXAMPLES", "500")) // 100)


def close(got, want, dtype):
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol)


@fs.fused_kernel
def abs_add_relu(a, b):
    return fs.relu(fs.abs(a) + b)


def test_seed_case_is_one_kernel_and_matches_numpy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal(128).astype(np.float32)
    b = rng.standard_normal((192, 128)).astype(np.float32)
    k = abs_add_relu.compile(a, b, target="ascend910b")
    assert len(k.kernels) == 1
    assert 'extern "C" __global__ __aicore__ void abs_add_relu_kernel(' in k.source
    assert "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY)" in k.source
    y = k.simulate(a, b)
    np.testing.assert_array_equal(y, np.maximum(np.abs(a) + b, 0))
    rep = k.report()
    assert rep.gm_bytes_min == 128 * 4 + 2 * 192 * 128 * 4
    # the row vector is read once per core, nothing else is re-read
    assert rep.gm_bytes_measured <= rep.gm_bytes_min * 1.02
    assert rep.gm_bytes_unfused > rep.gm_bytes_min
    assert "abs_add_relu_kernel" in str(rep)


def test_symbolic_rows_use_the_host_tiling():
    k = abs_add_relu.compile(fs.spec((128,), "float32"), fs.spec(("M", 128), "float32"))
    for m in (1, 7, 300):
        a = np.linspace(-1, 1, 128, dtype=np.float32)
        b = np.linspace(-3, 3, m * 128, dtype=np.float32).reshape(m, 128)
        np.testing.assert_array_equal(k.simulate(a, b), np.maximum(np.abs(a) + b, 0))


@fs.fused_kernel
def chain6(x, s, t):
    return fs.leaky_relu((x * s + t) * fs.sigmoid(x) - x, 0.1)


@pytest.mark.parametrize("target", TARGETS)
def test_six_op_chain_with_tail(target):
    x = np.linspace(-6, 6, 5000 + 3, dtype=np.float32)
    k = chain6.compile(x, fs.scalar("s"), fs.scalar("t"), target=target)
    got = k.simulate(x, 1.5, 0.25)
    want = chain6(x, 1.5, 0.25)
    close(got, want, "float32")
    # runtime scalars travel in the tiling struct (fields s<parameter index>), read once per core
    assert "float s1;   // runtime scalar" in k.source and "float s2;   // runtime scalar" in k.source
    assert "v1 = static_cast<float>(tiling.s1);" in k.source


def test_save_writes_a_project(tmp_path):
    k = abs_add_relu.compile(fs.spec((128,), "float16"), fs.spec(("M", 128), "float16"), target="ascend310p")
    out = k.save(str(tmp_path / "proj"))
    names = set(os.listdir(out))
    assert {"CMakeLists.txt", "README.md", "abs_add_relu_kernel.cpp", "abs_add_relu_tiling.h", "main.cpp"} <= names
    assert "Ascend310P" in open(os.path.join(out, "CMakeLists.txt")).read()
    assert "AscendC::DataCopyPad(" not in open(os.path.join(out, "abs_add_relu_kernel.cpp")).read()


def test_single_kernel_that_cannot_fit_names_op_and_bytes():
    @fs.fused_kernel(single_kernel=True, ub_headroom=0.002)
    def tight(x, y):
        return fs.exp(x) * y + x  # LINE-MARK
    x = np.ones((64, 64), np.float32)
    with pytest.raises(fs.ScheduleError) as info:
        tight.compile(x, x)
    msg = str(info.value)
    assert "bytes of UB" in msg and "exp" in msg and "test_ascendc_e2e.py" in msg
    # no fusedsl source file is named (a clone folder called fusedsl/ may appear in the user's path)
    assert not [f for f in PACKAGE_FILES if f in msg], msg


def test_bfloat16_on_a_chip_without_it_is_a_clear_error():
    with pytest.raises(fs.ScheduleError, match="bfloat16 is not supported on ascend310p"):
        k = abs_add_relu.compile(fs.spec((8,), "bfloat16"), fs.spec((4, 8), "bfloat16"), target="ascend310p")
        k.source


def test_debug_annotates_source_lines(monkeypatch):
    monkeypatch.setenv("FUSEDSL_DEBUG", "1")
    k = abs_add_relu.compile(fs.spec((16,), "float32"), fs.spec((4, 16), "float32"), target="ascend910b")
    assert "return fs.relu(fs.abs(a) + b)" in k.source


# ---- generated graphs ---------------------------------------------------------------------
UNARY = ["abs", "neg", "relu", "exp", "sigmoid", "tanh", "silu", "gelu", "square", "leaky"]
BINARY = ["add", "sub", "mul", "max", "min"]


def _apply_unary(name, x, xp):
    if name == "neg":
        return -x
    if name == "square":
        return x * x
    if name == "leaky":
        return fs.leaky_relu(x, 0.2) if xp is fs else np.where(x >= 0, x, x * x.dtype.type(0.2))
    if name == "exp":
        return xp.exp(xp.minimum(x, 3)) if xp is np else fs.exp(fs.minimum(x, 3))
    if xp is fs:
        return getattr(fs, name)(x)
    f32 = x.astype(np.float32)
    sig = 1 / (1 + np.exp(-f32))
    out = {"abs": np.abs(f32), "relu": np.maximum(f32, 0), "sigmoid": sig, "tanh": np.tanh(f32),
           "silu": f32 * sig,
           "gelu": f32 / (1 + np.exp(-2 * np.sqrt(2 / np.pi) * (f32 + 0.044715 * f32 ** 3)))}[name]
    return out.astype(x.dtype)


def _apply_binary(name, a, b, xp):
    if name == "where":   # a comparison and a select: exercises bool masks inside the kernel
        return xp.where(a > b, a, b - a)
    if name == "max":
        return xp.maximum(a, b)
    if name == "min":
        return xp.minimum(a, b)
    return {"add": a + b, "sub": a - b, "mul": a * b}[name]


INT8_UNARY = ["abs", "relu"]
INT8_BINARY = ["add", "max", "min"]


@st.composite
def graphs(draw):
    dtype = draw(st.sampled_from(["float32", "float16", "bfloat16", "int32", "int8", "uint8"]))
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from([1, 2, 3, 5, 8, 16, 33, 64, 100, 130])) for _ in range(ndim))
    n_inputs = draw(st.integers(1, 3))
    shapes = []
    for _ in range(n_inputs):
        keep = draw(st.lists(st.booleans(), min_size=ndim, max_size=ndim))
        s = tuple(d if k else 1 for d, k in zip(shape, keep))
        drop = draw(st.integers(0, ndim - 1))
        shapes.append(s[drop:] if all(x == 1 for x in s[:drop]) else s)
    shapes[0] = shape
    unary = {"int32": ["abs", "neg", "relu", "square"], "int8": INT8_UNARY, "uint8": ["relu"]}.get(dtype, UNARY)
    binary = INT8_BINARY if dtype in ("int8", "uint8") else BINARY + ["where"]
    consts = [None, 2] if dtype in ("int8", "uint8") else [None, 2, 0.5, -1]
    steps = draw(st.lists(st.tuples(st.sampled_from(unary), st.sampled_from(binary), st.integers(0, 10),
                                    st.sampled_from(consts)), min_size=1, max_size=4))
    target = draw(st.sampled_from(TARGETS))
    symbolic = draw(st.booleans())
    return dtype, shapes, steps, target, symbolic


def _build(steps, xp):
    def f(*xs):
        acc = xs[0]
        for k, (u, bname, pick, const) in enumerate(steps):
            acc = _apply_unary(u, acc, xp)
            other = xs[pick % len(xs)]
            acc = _apply_binary(bname, acc, other, xp)
            if const is not None:
                c = const if xp is fs else acc.dtype.type(const)
                if isinstance(const, float) and "int" in str(acc.dtype):
                    c = 2 if xp is fs else acc.dtype.type(2)
                acc = _apply_binary(bname, acc, c, xp)
        return acc
    return f


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(graphs(), st.integers(0, 2 ** 31 - 1))
def test_generated_elementwise_graphs_match_numpy(case, seed):
    dtype, shapes, steps, target, symbolic = case
    if dtype == "bfloat16" and target in ("ascend310p", "ascend910"):
        target = "ascend910b"
    rng = np.random.default_rng(seed)
    npdt = getattr(fs, dtype).np
    if dtype == "int32":
        arrays = [rng.integers(-20, 20, s).astype(npdt) for s in shapes]
    elif dtype in ("int8", "uint8"):
        # 8-bit arithmetic runs in half on the vector unit: values stay in range (no wrap-around)
        arrays = [rng.integers(0 if dtype == "uint8" else -6, 6, s).astype(npdt) for s in shapes]
    else:
        arrays = [rng.uniform(-2, 2, s).astype(npdt) for s in shapes]
    body = _build(steps, fs)
    fixed = {1: lambda a: body(a), 2: lambda a, b: body(a, b), 3: lambda a, b, c: body(a, b, c)}
    kernel = fs.fused_kernel(fixed[len(arrays)])
    specs = arrays
    if symbolic and len(shapes[0]) > 0 and shapes[0][0] > 1:
        rank, lead = len(shapes[0]), shapes[0][0]
        specs = []
        for a in arrays:
            dims = list(a.shape)
            if len(dims) == rank and dims[0] == lead:
                dims[0] = "M"   # the outermost size is only known when the kernel runs
            specs.append(fs.spec(tuple(dims), dtype))
    k = kernel.compile(*specs, target=target)
    got = k.simulate(*arrays)
    want = run_module(k.graph, arrays)   # the numpy reference interpreter, the oracle
    want = want[0] if len(want) == 1 else want
    if dtype in ("int32", "int8", "uint8"):
        np.testing.assert_array_equal(got, want)
    else:
        close(got, want, dtype)
    assert k.report().gm_bytes_measured is not None


@fs.fused_kernel
def masks(x, y, c):
    return fs.where(x > y, x * 2, y - 1), x < 0.5, fs.where(c, x, 0.0), (x != y).astype(fs.float32) + c


@pytest.mark.parametrize("target,dtype", covering(TARGETS, ["float32", "float16", "int32", "int8"])
                         + covering(TARGETS, ["float16", "int8", "float32", "int32"]))
def test_comparisons_where_and_bool_io(target, dtype):
    rng = np.random.default_rng(7)
    npdt = getattr(fs, dtype).np
    x = (rng.standard_normal((5, 33)) * 4).astype(npdt)
    y = (rng.standard_normal((5, 33)) * 4).astype(npdt)
    c = rng.standard_normal((5, 33)) > 0
    k = masks.compile(x, y, c, target=target)
    got, want = k.simulate(x, y, c), masks(x, y, c)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_in_place_reuse_keeps_the_six_op_chain_in_two_temporaries():
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    k = chain6.compile(x, 1.5, 0.5)
    plan = k.kernels[0].ub_plan
    assert [row[1] for row in plan].count("VECCALC") == 2
    in_place = [s for s in k.kernels[0].schedule.stmts if s.dst in s.srcs]
    assert in_place, "unary steps of the chain should run in place"


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_empty_tensors_launch_nothing(target):
    a = np.ones(0, np.float32)
    b = np.ones((3, 0), np.float32)
    k = abs_add_relu.compile(a, b, target=target)
    assert k.simulate(a, b).shape == (3, 0)
    assert abs_add_relu(a, b).shape == (3, 0)
    k2 = abs_add_relu.compile(fs.spec((4,), "float32"), fs.spec(("M", 4), "float32"), target=target)
    assert k2.simulate(np.ones(4, np.float32), np.ones((0, 4), np.float32)).shape == (0, 4)


def test_hoisted_rows_only_when_a_row_fits_a_tile():
    # a tight UB budget: the row no longer fits, so nothing is hoisted and the kernel still runs
    @fs.fused_kernel(ub_headroom=0.05)
    def seed_tight(a, b):
        return fs.relu(fs.abs(a) + b)
    a = np.linspace(-1, 1, 2000, dtype=np.float32)
    b = np.linspace(-2, 2, 5 * 2000, dtype=np.float32).reshape(5, 2000)
    k = seed_tight.compile(a, b)
    assert not any(s.role == "inv" for s in k.kernels[0].schedule.slots.values())
    np.testing.assert_array_equal(k.simulate(a, b), np.maximum(np.abs(a) + b, 0))
    np.testing.assert_array_equal(seed_tight(a, b), np.maximum(np.abs(a) + b, 0))
