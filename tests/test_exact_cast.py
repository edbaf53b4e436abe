"""float32 -> int32 casts (x.astype("int32"), fs.cast, and every int32 result an op computes in
float32) are numpy's truncation toward zero over all of int32 in the printed Ascend C of
ascend310p and ascend910 too.  Those chips have no float32 -> int32 Cast; the two Casts through
half were exact only below 1024 (5000.7 -> 5004, -70000.3 -> -65504, 1e6 -> 65504, no warning);
the vector lowering now casts three pieces of at most 1024 each (lower/vector._exact_int32_cast).
Under simulate and on the LLVM executor (which runs the chip's tile program), in vector, row and
cube-epilogue kernels.  Past int32, +-inf and NaN they give INT_MIN like the reference (NaN gave
0 under simulate and INT_MIN on the LLVM call before a Compare + Select took it out first)."""
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import fuzz_settings
from fusedsl.backend_cpu.kernel_cpu import TileKernelCpu
from fusedsl.backend_cpu.kernel_interp import run_kernel
from fusedsl.frontend.api import _F
from fusedsl.lower.kinds import kernel_ir, kernel_words
from fusedsl.ops.composite import exact_int32
from fusedsl.reference import run_module
from fusedsl.tile.kernel import Step

CHIPS = ("ascend310p", "ascend910")   # the targets whose float32 -> int32 Cast goes through half
TOP = 2.0 ** 31
P24 = 2.0 ** 24
EDGES = np.array([0.5, -0.5, 0.0, -0.0, 1023.9, -1023.9, 1023.5, 1024.0, -1024.0, 1024.5, -1024.5, 2047.5,
                  -2047.5, 2048.0, 2048.5, -2049.5, 5000.7, -70000.3, 1e6, 2e9, -2e9, P24 - 1, P24, P24 + 2,
                  -(P24 - 1), -P24, -(P24 + 2), 2 ** 23 - 0.5, -(2 ** 23 - 0.5), TOP - 128, -(TOP - 128),
                  -TOP, 2 ** 21 - 0.25, -(2 ** 21 + 0.5), 2 ** 20 + 0.5, -(2 ** 20) - 0.75, 511.5, -511.5,
                  512.25, -512.25, -0.3, -1.5, -1e-30, 1e-30, 1535.75, -1536.25, 3.0 * 2 ** 29],
                 np.float32)
N = 64


def _in_range(v):
    return v[(v >= -TOP) & (v < TOP)]


def _cast(x):
    return x.astype("int32")


@pytest.fixture(scope="module", params=CHIPS)
def chip_cast(request):
    """x.astype("int32") printed for a chip without a float32 -> int32 Cast (one build each)."""
    return fs.fused_kernel(_cast).compile(fs.spec((N,), fs.float32), target=request.param)


def _wrong(got, x):
    """How many elements differ from numpy's float32 -> int32 (x in int32's range)."""
    return int(np.count_nonzero(got != x.astype(np.int32)))


def test_edges_everywhere(chip_cast):
    x = np.resize(EDGES, N)
    assert _wrong(chip_cast.simulate(x), x) == 0
    assert _wrong(chip_cast(x), x) == 0
    assert _wrong(run_module(chip_cast.graph, [x])[0], x) == 0


_FLOAT = st.floats(-TOP, TOP, width=32, exclude_max=True, allow_nan=False)
_NEAR = st.builds(lambda k, f: np.float32(k + f), st.integers(-2 ** 25, 2 ** 25), st.sampled_from(
    [0.0, 0.5, -0.5, 0.25, 0.75, -0.999, 0.999]))


@fuzz_settings(scale=0.4)
@given(st.lists(st.one_of(_FLOAT, _NEAR, st.sampled_from(EDGES.tolist())), min_size=N, max_size=N))
def test_numpy_truncation_over_int32(chip_cast, values):
    """Under simulate on 310P / 910A, the LLVM executor and the reference: numpy's int32."""
    x = _in_range(np.array(values, np.float32))
    x = np.resize(x, N) if x.size else np.zeros(N, np.float32)
    for got in (chip_cast.simulate(x), chip_cast(x), run_module(chip_cast.graph, [x])[0]):
        np.testing.assert_array_equal(got, x.astype(np.int32))


@pytest.mark.parametrize("target", CHIPS)
def test_out_of_range_and_nan(target):
    """Past int32, +-inf and NaN: INT_MIN on every executor (the reference's, numpy's answer on
    x86).  NaN was 0 under simulate (each piece's Cast of NaN on the chip), INT_MIN elsewhere."""
    x = np.array([TOP, -TOP * 2, 3e9, -3e9, 1e30, np.inf, -np.inf, np.nan, 7.5, -7.5], np.float32)
    k = fs.fused_kernel(_cast).compile(x, target=target)
    imin = -2 ** 31
    want = np.array([imin] * 8 + [7, -7], np.int32)
    np.testing.assert_array_equal(run_module(k.graph, [x])[0], want)
    np.testing.assert_array_equal(k(x), want)
    np.testing.assert_array_equal(k.simulate(x), want)
    (plan,) = k.kernels   # the tile interpreter, which runs the compare-select of the NaN too
    assert any(st.op == "select" and st.cmp_mode == "EQ" for st in plan.lowered.stmts)
    out = np.zeros_like(want)
    run_kernel(kernel_ir(plan.lowered), [x], [out], kernel_words(plan.lowered, plan.tiling))
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("target", CHIPS)
def test_nan_is_int_min_in_row_and_cube_epilogue_kernels_and_broadcast_rows(target):
    """NaN in a row kernel's cast, in the cast of a broadcast row (such casts are not hoisted:
    the Compare's scratch is per tile) and, on 310P, in a cube epilogue: numpy's INT_MIN under
    simulate and on the LLVM call."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((6, 64)) * 1e5).astype(np.float32)
    x[::2, ::5] = np.nan
    row = rng.uniform(-1e6, 1e6, (1, 64)).astype(np.float32)
    row[0, ::3] = np.nan
    ints = rng.integers(-9, 9, (32, 64)).astype(np.int32)
    progs = [(lambda x: (x - fs.max(x, axis=-1, keepdims=True)).astype("int32"), (x,)),
             (lambda r, i: r.astype("int32") + i, (row, ints))]
    if target == "ascend310p":
        a = rng.uniform(-30, 30, (16, 32)).astype(np.float16)
        a[0, 0], a[3, :] = np.nan, np.inf
        b = rng.uniform(-30, 30, (32, 16)).astype(np.float16)
        progs.append((lambda a, b: (a @ b).astype(fs.float32).astype("int32"), (a, b)))
    for fn, args in progs:
        k = fs.fused_kernel(fn).compile(*args, target=target)
        want = run_module(k.graph, list(args))[0]
        assert (want == -2 ** 31).any()
        for got in (k.simulate(*args), k(*args)):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", CHIPS)
def test_row_kernel_cast(target):
    """A cast after a row reduction (a row kernel): differences up to 7e7 with fractions."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((6, 300)) * 1e7).astype(np.float32)
    row = fs.fused_kernel(lambda x: (x - fs.max(x, axis=-1, keepdims=True)).astype("int32")).compile(x, target=target)
    assert "row" in [p.kernel_kind for p in row.kernels]
    want = run_module(row.graph, [x])[0]
    assert np.abs(want).max() > 1e6
    for got in (row.simulate(x), row(x)):
        np.testing.assert_array_equal(got, want)


def test_cube_epilogue_cast():
    """A cast in a matmul's epilogue on 310P (910A prints no Matmul): values up to 1.6e6, with
    fractions; the matmul of small integers is exact."""
    rng = np.random.default_rng(8)
    a = rng.integers(-5, 6, (32, 64)).astype(np.float16)   # |a @ b| <= 1600: exact in half
    b = rng.integers(-5, 6, (64, 48)).astype(np.float16)
    mm = fs.fused_kernel(lambda a, b: (fs.matmul(a, b).astype("float32") * 997.3 - 0.5).astype("int32")
                         ).compile(a, b, target="ascend310p")
    assert [p.kernel_kind for p in mm.kernels] == ["cube"]
    exact = a.astype(np.float32) @ b.astype(np.float32)
    want = (exact * np.float32(997.3) - np.float32(0.5)).astype(np.int32)
    assert np.abs(want).max() > 1e5
    for got in (mm.simulate(a, b), mm(a, b), run_module(mm.graph, [a, b])[0]):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", CHIPS)
def test_index_results_past_1024(target):
    """Composites that compute int32 results as float32 integers and cast them: argmax / argmin
    indices past 1024, argsort indices, adaptive pooling windows and right_shift (on 310P before:
    argmax 3 of 4 rows, argsort 952 of 6000, adaptive_avg_pool1d 3 of 7, right_shift by 3 256 of
    256 wrong)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5000)).astype(np.float32)
    x[1, 4321] = 9.0
    s = rng.standard_normal((2, 1500)).astype(np.float32)
    p = rng.standard_normal((1, 2, 3000)).astype(np.float32)
    # argsort's 2048-wide network prints ~280 kernels (5 MB of C++: ~25 s of g++ and simulate a
    # chip, cold): on 310P only -- both chips convert its indices by the same exact_int32
    sort = target == "ascend310p"
    k = fs.fused_kernel(lambda x, s, p: (fs.argmax(x, axis=1), fs.argmin(x, axis=1),
                                         fs.argsort(s, axis=1) if sort else fs.argmax(s, axis=1),
                                         fs.adaptive_avg_pool1d(p, 7))).compile(x, s, p, target=target)
    want = (np.argmax(x, axis=1).astype(np.int32), np.argmin(x, axis=1).astype(np.int32),
            (np.argsort(s, axis=1, kind="stable") if sort else np.argmax(s, axis=1)).astype(np.int32),
            torch.nn.functional.adaptive_avg_pool1d(torch.from_numpy(p), 7).numpy())
    for got in (k.simulate(x, s, p), k(x, s, p)):
        for g, w in zip(got[:3], want[:3]):
            np.testing.assert_array_equal(g, w)
        np.testing.assert_allclose(got[3], want[3], rtol=1e-5, atol=1e-6)
    if target == "ascend310p":   # 910A has no int32 And (bitwise_and refuses at the line)
        a = rng.integers(-2 ** 31, 2 ** 31, (2, 64)).astype(np.int32)
        k = fs.fused_kernel(lambda a: (fs.right_shift(a, 3), fs.right_shift(a, 20))).compile(a, target=target)
        for got, w in zip(k.simulate(a), (a >> 3, a >> 20)):
            np.testing.assert_array_equal(got, w)


def test_small_integer_casts_keep_two_casts():
    """A cast of a value the kernel's own ops bound by 2048 (a where of 0 / 1, the composites'
    flags) stays the two Casts through half; an unbounded one takes the exact sequence (6 Casts)."""
    spec = fs.spec((N,), fs.float32)
    flag = fs.fused_kernel(lambda x: fs.where(x > 0.0, 1.0, 0.0).astype("int32")).compile(spec, target="ascend310p")
    plain = fs.fused_kernel(_cast).compile(spec, target="ascend310p")
    assert flag.source.count("AscendC::Cast(") == 2
    assert plain.source.count("AscendC::Cast(") == 6
    x = np.linspace(-3, 3, N).astype(np.float32)
    np.testing.assert_array_equal(flag.simulate(x), (x > 0).astype(np.int32))
    # a composite's own bound travels on the cast (ops/composite.small_int32): exact_int32's
    # three pieces are two Casts each, not 26 instructions each
    pieces = fs.fused_kernel(lambda v: exact_int32(_F, v)).compile(spec, target="ascend310p")
    assert pieces.source.count("AscendC::Cast(") == 6


def _nan_inf_programs(target):
    """(fn, args) of every kind whose chip kernel runs the chain: a vector cast, a row kernel's,
    a broadcast row's, a column reduction's and (310P: 910A prints no Matmul) a cube epilogue's,
    with NaN, +-inf and values past int32."""
    rng = np.random.default_rng(11)
    edges = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 1e30, -TOP, 7.5, -7.5, 5000.7], np.float32)
    x = np.resize(edges, 40 * 64).reshape(40, 64)
    wide = (rng.standard_normal((6, 64)) * 1e5).astype(np.float32)
    wide[::2, ::5] = np.nan
    wide[1, ::7] = np.inf
    row = np.resize(edges, 64).reshape(1, 64)
    ints = rng.integers(-9, 9, (32, 64)).astype(np.int32)
    progs = [(lambda x: (x * 1.0).astype("int32"), (np.resize(edges, 4 * 8),)),
             (lambda x: (x - fs.max(x, axis=-1, keepdims=True)).astype("int32"), (wide,)),
             (lambda r, i: r.astype("int32") + i, (row, ints)),
             (lambda x: (fs.sum(x, axis=0) * 1e3).astype("int32"), (x,))]
    if target == "ascend310p":
        a = rng.uniform(-30, 30, (16, 32)).astype(np.float16)
        a[0, 0], a[3, :], a[5, :] = np.nan, np.inf, -np.inf
        b = rng.uniform(-30, 30, (32, 16)).astype(np.float16)
        progs.append((lambda a, b: (a @ b).astype(fs.float32).astype("int32"), (a, b)))
    return progs


@pytest.mark.parametrize("target", CHIPS)
def test_the_chips_kernel_gives_int_min_on_the_tile_executors(target):
    """The chain of the chip's own TileKernel (not the host-cast schedule k(*arrays) runs) on the
    tile IR's two CPU executors -- the interpreter (the spec) and llvm_kernel (TileKernelCpu), on the
    chip's tiling words -- gives numpy's INT_MIN for NaN, +-inf and values past int32, as simulate
    does.  A Step's `prefill` (the Duplicate the printer puts before its stmts: here the -2**31
    tensor the NaN Select picks) was run by neither executor: in row, column and cube epilogue
    kernels (vector kernels Duplicate theirs in the prologue) NaN gave 0 on the interpreter and
    whatever the buffer held on llvm_kernel."""
    kinds = set()
    for fn, args in _nan_inf_programs(target):
        k = fs.fused_kernel(fn).compile(*args, target=target)
        want = run_module(k.graph, list(args))[0]
        assert (want == -2 ** 31).any()
        np.testing.assert_array_equal(k.simulate(*args), want)
        (plan,) = k.kernels
        kinds.add(plan.kernel_kind)
        kernel = kernel_ir(plan.lowered)
        assert any(st.op == "select" and st.cmp_mode == "EQ" for n in _steps(kernel) for st in n.stmts)
        inputs = list(args)
        words = kernel_words(plan.lowered, plan.tiling)
        spec = np.full(want.shape, 7, np.int32)   # not zeroed: the kernel writes every element
        run_kernel(kernel, inputs, [spec], words)
        np.testing.assert_array_equal(spec, want)
        got = np.full(want.shape, 7, np.int32)
        TileKernelCpu(kernel, use_disk_cache=False).run(inputs, [got], words)
        np.testing.assert_array_equal(got, want)
    assert kinds == {"vector", "row", "column"} | ({"cube"} if target == "ascend310p" else set())


def _steps(kernel):
    """Every Step of a TileKernel (stages and Process, inside loops and branches)."""
    todo = [n for st in kernel.stages for n in st.body] + list(kernel.process or ())
    while todo:
        n = todo.pop()
        if isinstance(n, Step):
            yield n
        for field in ("body", "then", "orelse"):
            todo += list(getattr(n, field, ()) or ())
