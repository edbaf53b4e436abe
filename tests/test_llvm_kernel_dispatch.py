"""`k(*arrays)` runs elementwise and column kernels from their TileKernel through the one LLVM
lowering of the tile IR (backend_cpu/kernel_cpu.ScheduleCpu, on the CPU's tiling words of
backend_cpu/cpu_tiling.py), with what the per-kind executors did: out= arrays, recycled results,
broadcasts, runtime scalars, symbolic sizes, float16 / int / bool, multi-output kernels, tails and
size 1 -- all against numpy through the public API.  A lone reduction over trailing axes runs as the
row kind's rows; what the chip's column schedule refuses (integer sums over other axes, symbolic
sizes, no rows to sum) runs on the column kind's host schedule."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import fuzz_settings

import fusedsl as fs
from fusedsl.backend_cpu.kernel_cpu import ScheduleCpu


def _on_reference(run):
    """run() with the numpy reference executor, then the LLVM one again."""
    fs.config.executor = "reference"
    try:
        return run()
    finally:
        fs.config.executor = "llvm"


def _executor_object(comp):
    (plan,) = comp.kernels
    vector = comp._cpu.get(plan.name)
    return vector[0] if vector else comp._row_kernel(plan)


@fuzz_settings(scale=0.1)
@given(r=st.integers(1, 70), c=st.integers(1, 700), dtype=st.sampled_from(["float32", "float16", "int32"]),
       bcast=st.sampled_from(["none", "row", "column", "scalar"]))
def test_elementwise_kernels_run_on_llvm_kernel_like_numpy(r, c, dtype, bcast):
    g = np.random.default_rng(r * 1000 + c)
    x = (g.standard_normal((r, c)) * 8).astype(dtype)
    shape = {"none": (r, c), "row": (c,), "column": (r, 1), "scalar": (1,)}[bcast]
    y = (g.standard_normal(shape) * 8).astype(dtype)
    k = fs.fused_kernel(lambda x, y: fs.maximum(x * y, x - y) + fs.abs(y))
    got = k(x, y)
    assert isinstance(_executor_object(k.compile(x, y)), ScheduleCpu)
    want = np.maximum(x * y, x - y) + np.abs(y)
    if dtype == "float16":
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=1e-2)
    else:
        np.testing.assert_array_equal(got, want)


def test_out_recycled_results_scalars_and_symbolic_sizes():
    g = np.random.default_rng(0)
    x = g.standard_normal((300, 257)).astype(np.float32)
    k = fs.fused_kernel(lambda x, s: fs.where(x > s, x * s, -x))
    comp = k.compile(fs.spec(("R", "C"), "float32"), fs.scalar("s"))
    for shape in ((300, 257), (5, 3), (1, 1), (1024, 1024)):   # one compile, the CPU tiling per size
        xs = g.standard_normal(shape).astype(np.float32)
        for s in (0.5, -2.0):
            np.testing.assert_array_equal(comp(xs, s), np.where(xs > np.float32(s), xs * np.float32(s), -xs))
    assert isinstance(_executor_object(comp), ScheduleCpu)
    out = np.empty_like(x)
    assert comp(x, 0.25, out=out) is out
    np.testing.assert_array_equal(out, np.where(x > 0.25, x * np.float32(0.25), -x))
    static = fs.fused_kernel(lambda a, b: a * b + 1.0)
    a = np.ones((64, 64), np.float32)
    static(a, a)
    addresses = {static(a, a).ctypes.data for _ in range(5)}   # dropped results: one buffer again
    assert len(addresses) == 1
    held = [static(a, a) for _ in range(6)]                     # live results never share one
    assert len({h.ctypes.data for h in held}) == 6


def test_bool_and_int8_and_two_outputs():
    g = np.random.default_rng(1)
    x = g.integers(-100, 100, (33, 65)).astype(np.int32)
    y = g.integers(-100, 100, (33, 65)).astype(np.int32)
    k = fs.fused_kernel(lambda x, y: ((x + y).astype("int8"), x > y))
    wrapped, bigger = k(x, y)
    np.testing.assert_array_equal(wrapped, (x + y).astype(np.int8))
    np.testing.assert_array_equal(bigger, x > y)
    assert isinstance(_executor_object(k.compile(x, y)), ScheduleCpu)


@pytest.mark.parametrize("shape,axis", [((300, 37, 5), 0), ((4, 1500, 200), 1), ((1, 1), 0), ((7, 33), 0)])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_column_kernels_run_on_llvm_kernel_like_numpy(shape, axis, dtype):
    x = np.random.default_rng(2).standard_normal(shape).astype(dtype)
    k = fs.fused_kernel(lambda x: (fs.sum(x * x, axis) * 0.5, fs.max(x, axis)))
    comp = k.compile(x)
    assert isinstance(_executor_object(comp), ScheduleCpu)
    assert comp.executor(comp.kernels[0]) == "column"
    half, top = k(x)
    wide = x.astype(np.float32)
    tol = 2e-3 if dtype == "float16" else 2e-5
    np.testing.assert_allclose(half.astype(np.float32), (wide * wide).sum(axis) * 0.5, rtol=tol, atol=tol)
    np.testing.assert_array_equal(top, x.max(axis))
    outs = (np.empty_like(half), np.empty_like(top))
    assert k(x, out=outs)[0] is outs[0]
    np.testing.assert_array_equal(outs[1], top)


def test_lone_reductions_over_trailing_axes_run_as_the_row_kind():
    """A lone reduction over trailing axes (B == 1: max over (1, 2), sum(x)) is the row kind's
    [A, K] -> [A] kernel on the CPU (compiler._trailing_rows; it was llvm_reduce.py's), integer ones
    too: numpy's values, int32 sums wrapping as numpy's int64 sum cast to int32."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5, 40)).astype(np.float32)
    k = fs.fused_kernel(lambda a: fs.max(a, axis=(1, 2)))
    comp = k.compile(x)
    assert isinstance(_executor_object(comp), ScheduleCpu) and comp.executor(comp.kernels[0]) == "row"
    for y in (x, x[::-1].copy()):
        np.testing.assert_array_equal(k(y), y.max((1, 2)))
    i = rng.integers(-2 ** 31, 2 ** 31, (3, 5, 40)).astype(np.int32)
    k = fs.fused_kernel(lambda a: fs.sum(a))
    comp = k.compile(i)
    assert isinstance(_executor_object(comp), ScheduleCpu)
    for y in (i, i // 3):
        np.testing.assert_array_equal(k(y), y.sum(dtype=np.int64).astype(np.int32))


@pytest.mark.parametrize("case", ["int32", "no rows", "symbolic"])
def test_what_the_chip_column_schedule_refuses_runs_on_the_host_schedule(case):
    """Integer sums over other axes than the last (`x.sum(dim=1)` of an int32 [64, 1000, 33]: int32
    accumulators, wrapping as numpy's int64 sum cast to int32), sums over no rows (numpy's identities)
    and symbolic sizes: the column kind's host schedule on llvm_kernel (cpu_tiling.column_schedule;
    they ran on llvm_reduce.py)."""
    if case == "int32":
        x = np.random.default_rng(4).integers(-2 ** 31, 2 ** 31, (64, 1000, 33)).astype(np.int32)
        k, arg = fs.fused_kernel(lambda x: fs.sum(x, 1)), x
    elif case == "no rows":
        x = np.ones((0, 5), np.float32)
        k, arg = fs.fused_kernel(lambda x: fs.sum(x, 0) + 1.0), x
    else:
        x = np.ones((9, 4), np.float32)
        k, arg = fs.fused_kernel(lambda x: fs.sum(x, 0) + 1.0), fs.spec(("N", 4), "float32")
    comp = k.compile(arg)
    want = x.sum(1, dtype=np.int64).astype(np.int32) if case == "int32" else x.sum(0) + 1
    np.testing.assert_array_equal(comp(x), want)
    cpu = _executor_object(comp)
    assert isinstance(cpu, ScheduleCpu) and cpu.sched.host and comp.executor(comp.kernels[0]) == "column"


# ---- matmul kernels (the cube kind): llvm_kernel's Matmul object on sgemm ----------------------------
def _matmul_executor(comp):
    (plan,) = comp.kernels
    return comp._matmul_kernel(plan)


def _cube_py(comp, args):
    """What backend_cpu/cube.py (the executor these kernels ran on before) gave for them: the kernel
    split at its product as cube.py ran it (backend_cpu/cube_split.py: the product by the same host
    routines, the epilogue a vector or row kernel of its own)."""
    (plan,) = comp.kernels
    outs = [np.empty(tuple(v.shape), v.dtype.np) for v in plan.function.results]
    comp._split_kernel(plan).bind(list(args), outs)()
    return outs


MATMULS = {   # name -> (function, operand shapes of (m, k, n))
    "relu_scale": (lambda a, b, c: fs.relu(a @ b) * 2.0, lambda m, k, n: [(m, k), (k, n), (1,)]),
    "bias_gelu": (lambda a, b, c: fs.gelu(a @ b + c), lambda m, k, n: [(m, k), (k, n), (n,)]),
    "residual": (lambda a, b, c: fs.sigmoid(a @ b) * c, lambda m, k, n: [(m, k), (k, n), (m, n)]),
    "a_transposed": (lambda a, b, c: fs.transpose(a) @ b - 1.0, lambda m, k, n: [(k, m), (k, n), (1,)]),
    "b_transposed": (lambda a, b, c: a @ fs.transpose(b) + c, lambda m, k, n: [(m, k), (n, k), (n,)]),
    "batched_a": (lambda a, b, c: fs.relu(a @ b), lambda m, k, n: [(3, m, k), (k, n), (1,)]),
    "batched_both": (lambda a, b, c: a @ b * 0.5, lambda m, k, n: [(2, m, k), (2, k, n), (1,)]),
}


@fuzz_settings(scale=0.1)
@given(name=st.sampled_from(sorted(MATMULS)), m=st.integers(2, 140), k=st.integers(1, 90), n=st.integers(2, 140),
       dtype=st.sampled_from(["float32", "float16"]))
def test_matmul_kernels_run_on_llvm_kernel_bit_for_bit_as_before(name, m, k, n, dtype):
    """A matmul with an elementwise epilogue runs its TileKernel (one sgemm per block of rows, A and B
    read where they lie, the epilogue on C's rows in place): bit for bit what cube.py gave (the same
    sgemm calls, the same epilogue statements; a 16-bit transcendental within an ulp), and numpy's
    result within float tolerance."""
    f, shapes = MATMULS[name]
    g = np.random.default_rng(m * 10000 + k * 100 + n)
    args = [g.standard_normal(s).astype(dtype) for s in shapes(m, k, n)]
    kern = fs.fused_kernel(f)
    got = kern(*args)
    comp = kern.compile(*args)
    assert isinstance(_matmul_executor(comp), ScheduleCpu) and comp.executor(comp.kernels[0]) == "cube"
    (before,) = _cube_py(comp, args)
    if dtype == "float16" and name in ("bias_gelu", "residual"):
        # cube.py ran a 16-bit epilogue op by op on numpy's gelu / sigmoid; llvm_kernel's are the LLVM
        # backend's (as every vector kernel's): an ulp of float16 apart at most
        np.testing.assert_allclose(got.astype(np.float32), before.astype(np.float32), rtol=2 ** -10, atol=2 ** -24)
    else:
        assert got.tobytes() == before.tobytes()
    want = _on_reference(lambda: kern(*args))
    tol = 2e-2 if dtype == "float16" else 1e-4
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=tol, atol=tol * max(1, k) ** 0.5)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_a_large_matmul_runs_as_blocks_of_rows_on_the_threads(dtype):
    """2**24 multiply-adds and more (C larger than one epilogue tile): the CPU's words split M only,
    in blocks of a multiple of 64 rows, two per thread (one for a 16-bit B, which every block widens);
    every row's sums are still those of one sgemm call over all rows (cube.py's blocks), in place into
    out= and into a recycled result."""
    from fusedsl.backend_cpu.cpu_tiling import cpu_words
    from fusedsl.backend_cpu.launch import host_threads
    from fusedsl.lower.cube import TCUBE_FIELDS
    g = np.random.default_rng(5)
    a = g.standard_normal((1000, 300)).astype(dtype)
    b = g.standard_normal((300, 300)).astype(dtype)
    kern = fs.fused_kernel(lambda a, b: fs.leaky_relu(a @ b, 0.1))
    comp = kern.compile(a, b)
    (plan,) = comp.kernels
    w = dict(zip(TCUBE_FIELDS, cpu_words(plan.lowered, plan.tiling)))
    per = -(-1000 // ((1 if dtype == "float16" else 2) * host_threads()))
    assert w["singleCoreN"] == 300 and w["baseN"] == 304 and w["singleCoreM"] == min(1000, -(-per // 64) * 64)
    assert w["usedCoreNum"] == -(-1000 // w["singleCoreM"])
    got = kern(a, b)
    (before,) = _cube_py(comp, [a, b])
    assert got.tobytes() == before.tobytes()
    out = np.full((1000, 300), np.nan, dtype)
    assert kern(a, b, out=out) is out
    assert out.tobytes() == before.tobytes()
    y = a.astype(np.float32) @ b.astype(np.float32)
    tol = 2e-2 if dtype == "float16" else 1e-4
    np.testing.assert_allclose(got.astype(np.float32), np.where(y >= 0, y, 0.1 * y), rtol=tol, atol=tol * 20)


def test_runtime_scalars_and_a_product_in_a_program():
    """A runtime scalar of the epilogue, and a matmul kernel between two other kernels of a program
    (the bound program's step)."""
    g = np.random.default_rng(6)
    a = g.standard_normal((70, 40)).astype(np.float32)
    b = g.standard_normal((40, 50)).astype(np.float32)
    kern = fs.fused_kernel(lambda a, b, s: (a @ b) * s)
    for s in (0.5, -3.0):
        np.testing.assert_allclose(kern(a, b, s), (a @ b) * np.float32(s), rtol=1e-5, atol=1e-5)
    assert isinstance(_matmul_executor(kern.compile(a, b, 0.5)), ScheduleCpu)
    chain = fs.fused_kernel(lambda a, b: fs.sum(fs.relu(fs.exp(a) @ b) * 2.0, axis=0))
    np.testing.assert_allclose(chain(a, b), (np.maximum(np.exp(a) @ b, 0) * 2).sum(0), rtol=1e-4)


@pytest.mark.parametrize("shapes", [((70, 40), (40, 50), (70, 50)), ((3, 33, 2000), (2000, 17), (3, 33, 17)),
                                    ((2, 20, 30), (2, 30, 40), (40,))])
def test_int8_matmuls_run_on_llvm_kernel_exactly(shapes):
    """int8 @ int8 (+ an int8 residual or row; numpy wraps every op): exact float32 chunks of K on
    sgemm (K = 2000: two chunks), added in int32, wrapped to int8 -- numpy's result and cube.py's
    (int_product.py) bit for bit."""
    g = np.random.default_rng(8)
    args = [g.integers(-128, 128, s).astype(np.int8) for s in shapes]
    kern = fs.fused_kernel(lambda a, b, r: a @ b + r)
    got = kern(*args)
    comp = kern.compile(*args)
    assert isinstance(_matmul_executor(comp), ScheduleCpu)
    want = (np.matmul(args[0].astype(np.int64), args[1].astype(np.int64)).astype(np.int8) + args[2])
    np.testing.assert_array_equal(got, want)
    assert got.tobytes() == _cube_py(comp, args)[0].tobytes()


VECTOR_PRODUCTS = {   # name -> (function, operand shapes, numpy's routine for it)
    "one row": (lambda a, b: fs.relu(a @ b), ((1, 300), (300, 70)), "vecmat"),
    "one column": (lambda a, b: fs.relu(a @ b), ((90, 300), (300, 1)), "matvec"),
    "one value": (lambda a, b: fs.relu(a @ b), ((1, 300), (300, 1)), "dot"),
    "one row, B transposed": (lambda a, b: a @ fs.transpose(b) * 2.0, ((1, 300), (70, 300)), "vecmat"),
    "one column, A transposed": (lambda a, b: fs.transpose(a) @ b - 1.0, ((300, 90), (300, 1)), "matvec"),
    "one value, both transposed": (lambda a, b: fs.transpose(a) @ fs.transpose(b), ((300, 1), (1, 300)), "dot"),
    "batched rows": (lambda a, b: a @ b * 0.5, ((3, 1, 300), (3, 300, 40)), "vecmat"),
    "rows of a shared B": (lambda a, b: fs.relu(a @ b), ((5, 1, 300), (300, 40)), "vecmat"),
    "batched columns": (lambda a, b: a @ b * 0.5, ((3, 40, 300), (3, 300, 1)), "matvec"),
    "batched values": (lambda a, b: a @ b + 1.0, ((4, 1, 300), (4, 300, 1)), "dot"),
    "one row, softmax": (lambda a, b: fs.softmax(a @ b), ((1, 300), (300, 70)), "vecmat"),
    "one row of two": (lambda a, b: fs.relu(a @ b), ((1, 2), (2, 70)), "vecmat"),   # y not staged: B is small
    "one row, float16": (lambda a, b: fs.relu(a @ b), ((1, 300), (300, 70)), "vecmat"),   # B gathered as float32
}


@pytest.mark.parametrize("case", sorted(VECTOR_PRODUCTS))
def test_products_of_one_row_or_column_call_numpys_blas_routine(case):
    """np.matmul multiplies a matrix of one row and / or one column with cblas_sgemv / cblas_sdot,
    whose sums differ from sgemm's in the last bits; llvm_kernel makes the same call with numpy's
    layouts (kernel_cpu.matmul_products), so the product is numpy's bit for bit (numpy on one
    OpenBLAS thread, as the kernel runs it: a threaded gemv may split a row's sum elsewhere; with
    16-bit operands on their float32 widening, as cube.py ran them).  A one-row product's y is
    staged apart from B's rows (llvm_kernel._numpy_product): the same sums."""
    from fusedsl.backend_cpu.blas import one_blas_thread
    f, shapes, form = VECTOR_PRODUCTS[case]
    g = np.random.default_rng(len(case))
    dtype = np.float16 if "float16" in case else np.float32
    args = [g.standard_normal(s).astype(dtype) for s in shapes]
    kern = fs.fused_kernel(f)
    got = kern(*args)
    comp = kern.compile(*args)
    cpu = _matmul_executor(comp)
    assert isinstance(cpu, ScheduleCpu) and comp.executor(comp.kernels[0]) == "cube"
    assert set(cpu.kernel.products.values()) == {form}
    if dtype == np.float16:   # cube.py: numpy's matmul of the widened operands, rounded
        assert got.tobytes() == _cube_py(comp, args)[0].tobytes()
        return
    fs.config.executor = "reference"
    try:
        with one_blas_thread():
            want = kern(*args)
    finally:
        fs.config.executor = "llvm"
    if "softmax" in case:   # the epilogue's exp is the LLVM backend's: the product is compared below
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
        f = lambda a, b: a @ b   # noqa: E731
        got, want = fs.fused_kernel(f)(*args), np.matmul(*args)
    assert got.tobytes() == want.tobytes()


ROW_EPILOGUES = {   # name -> (function, the epilogue on the float64 product)
    "softmax": (lambda a, b: fs.softmax(a @ b),
                lambda y: np.exp(y - y.max(-1, keepdims=True)) / np.exp(y - y.max(-1, keepdims=True)).sum(-1, keepdims=True)),
    "layer_norm": (lambda a, b: fs.layer_norm(a @ b),
                   lambda y: (y - y.mean(-1, keepdims=True)) / np.sqrt(y.var(-1, keepdims=True) + 1e-5)),
    "row sum": (lambda a, b: fs.sum(a @ b, axis=-1), lambda y: y.sum(-1)),
    "logsumexp": (lambda a, b: fs.logsumexp(a @ b, axis=-1),
                  lambda y: np.log(np.exp(y - y.max(-1, keepdims=True)).sum(-1)) + y.max(-1)),
}


@pytest.mark.parametrize("name", sorted(ROW_EPILOGUES))
@pytest.mark.parametrize("m, k, n", [(30, 20, 10), (200, 64, 256), (1, 100, 300), (3, 7, 1000)])
def test_row_epilogues_run_on_llvm_kernel(name, m, k, n):
    """A matmul followed by reductions over the rows of its result (softmax, layer_norm, row sums):
    the row kind's folds on each tile of the block's rows, after the block's sgemm, on llvm_kernel.
    The sums are folded in another order than numpy's pairwise sum (llvm_row's chunks, cube.py's
    executor before, were not numpy's either): the result is within a float32 evaluation's error of
    the epilogue evaluated in float64 on the same float32 product, as numpy's own.  A row too long
    for the chip's UB with its epilogue is two kernels (the matmul, then a row kernel)."""
    f, exact = ROW_EPILOGUES[name]
    g = np.random.default_rng(m + k + n)
    args = [g.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n))]
    kern = fs.fused_kernel(f)
    got = kern(*args)
    comp = kern.compile(*args)
    if n < 1000:
        assert isinstance(_matmul_executor(comp), ScheduleCpu) and comp.executor(comp.kernels[0]) == "cube"
    y = np.matmul(*args).astype(np.float64)
    want = exact(y)
    # the error a float32 evaluation makes (numpy's own is within these): an exp's is relative to
    # its argument, a sum's to the sum of its terms' magnitudes
    eps = np.finfo(np.float32).eps
    scale = {"softmax": lambda: np.abs(want) * (1 + np.abs(y - y.max(-1, keepdims=True))),
             "layer_norm": lambda: np.abs(want) + 1, "row sum": lambda: np.abs(y).sum(-1),
             "logsumexp": lambda: np.abs(y).max(-1) + np.abs(want)}[name]()
    np.testing.assert_array_less(np.abs(got - want), 4 * eps * scale + 1e-30)


def test_a_16bit_row_epilogue_stays_numpys_bit_for_bit():
    """A row epilogue of a float16 product is split at the product (backend_cpu/cube_split.py) and
    runs with every op rounded to float16 as numpy does, as cube.py ran it (the row kind's folds sum
    in float32 in another order, which now and then rounds a value to the next float16: 4 of this
    layer_norm's 78000 elements were one ulp off)."""
    g = np.random.default_rng(12)
    args = [g.uniform(0.1, 2.0, s).astype(np.float16) for s in ((300, 200), (200, 260), (260,))]
    kern = fs.fused_kernel(lambda x, w, r: fs.layer_norm(x @ w, r))
    got = kern(*args)
    comp = kern.compile(*args)
    assert _matmul_executor(comp) is None and comp.executor(comp.kernels[0]) == "cube"
    assert comp._split_kernel(comp.kernels[0]) is not None
    want = _on_reference(lambda: kern(*args))
    assert got.tobytes() == want.tobytes()


READING_OPERANDS = {   # name -> (function, operand shapes): epilogues reading A or B
    "plus A": (lambda a, b: a @ b + a, ((50, 40), (40, 40))),
    "times B": (lambda a, b: fs.relu(a @ b) * b, ((40, 40), (40, 30))),
    "A and B, batched": (lambda a, b: a @ b - a * 0.5 + b, ((2, 30, 30), (2, 30, 30))),
    "a row times it": (lambda a, b: fs.sigmoid(a @ b) * a, ((1, 40), (40, 40))),
    "softmax of the product plus A": (lambda a, b: fs.softmax(a @ b + a), ((50, 40), (40, 40))),
}


@pytest.mark.parametrize("case", sorted(READING_OPERANDS))
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_epilogues_reading_a_or_b_run_on_llvm_kernel(case, dtype):
    """The cube kind takes the matmul's operands as Matmul API inputs only and refuses an epilogue
    that reads one; the CPU runs it from the kind's schedule of the function with that operand read
    through a parameter of its own (kernel_cpu.operand_aliases), the caller's array passed twice and
    read in place: bit for bit what cube.py gave (its elementwise epilogue: the same statements; a
    row epilogue within float tolerance), numpy's within float tolerance."""
    from fusedsl.backend_cpu.kernel_cpu import AliasedCpu
    f, shapes = READING_OPERANDS[case]
    g = np.random.default_rng(len(case))
    args = [g.standard_normal(s).astype(dtype) for s in shapes]
    kern = fs.fused_kernel(f)
    got = kern(*args)
    comp = kern.compile(*args)
    (plan,) = comp.kernels
    assert plan.lowered is None and "reads the matmul's own operand" in str(plan.error)
    row16 = "softmax" in case and dtype == "float16"   # a 16-bit row epilogue: split, numpy's rounding
    assert isinstance(comp._matmul_kernel(plan), type(None) if row16 else AliasedCpu)
    assert comp.executor(plan) == "cube"
    if "softmax" not in case:
        (before,) = _cube_py(comp, args)
        if dtype == "float16":   # a 16-bit product's epilogue: cube.py's numpy ops, an ulp apart at most
            np.testing.assert_allclose(got.astype(np.float32), before.astype(np.float32), rtol=2 ** -10, atol=2 ** -14)
        else:
            assert got.tobytes() == before.tobytes()
    want = _on_reference(lambda: kern(*args))
    tol = 2e-2 if dtype == "float16" else 1e-5
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=tol, atol=tol)


@pytest.mark.parametrize("target, dtype", [("ascend910", "float16"), ("ascend310p", "float32")])
def test_matmuls_the_target_cannot_print_run_on_llvm_kernel(target, dtype):
    """ascend910 has no Matmul API and 310P no float32 form: the kernel does not print, and on the
    CPU it runs from the kind's schedule for MATMUL_CPU_TARGET (on the CPU's words either way), bit
    for bit what cube.py gave."""
    g = np.random.default_rng(9)
    args = [g.standard_normal(s).astype(dtype) for s in ((50, 30), (30, 70), (70,))]
    kern = fs.fused_kernel(lambda a, b, c: fs.relu(a @ b + c), target=target)
    got = kern(*args)
    comp = kern.compile(*args)
    (plan,) = comp.kernels
    assert plan.lowered is None and plan.error is not None   # not printed for this target
    assert isinstance(_matmul_executor(comp), ScheduleCpu)
    assert got.tobytes() == _cube_py(comp, args)[0].tobytes()
    want = np.maximum(args[0].astype(np.float32) @ args[1].astype(np.float32) + args[2], 0)
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-2, atol=1e-2)


def test_a_cast_the_chip_emulates_is_direct_on_the_cpu():
    """310P has no float -> int32 CAST_TRUNC: its cube epilogue emulates the cast with float steps
    whose NaN / inf handling is the chip's; the CPU runs the kernel from the kind's schedule with the
    host's casts (compiler._emulated_casts): numpy's INT_MIN for NaN and inf, as before (cube.py
    declined the integer epilogue; the numpy reference ran the kernel)."""
    rng = np.random.default_rng(5)
    a = rng.uniform(-30, 30, (16, 32)).astype(np.float16)
    a[0, 0], a[3, :] = np.nan, np.inf
    b = rng.uniform(-30, 30, (32, 16)).astype(np.float16)
    kern = fs.fused_kernel(lambda a, b: (a @ b).astype(fs.float32).astype("int32"), target="ascend310p")
    got = kern(a, b)
    comp = kern.compile(a, b)
    assert isinstance(_matmul_executor(comp), ScheduleCpu)
    assert _matmul_executor(comp).sched is not comp.kernels[0].lowered   # rescheduled with the host's casts
    with np.errstate(invalid="ignore"):
        want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16).astype(np.float32).astype(np.int32)
    assert (want == -2 ** 31).any()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_several_matmuls_of_one_a_run_their_parts_on_llvm_kernel(dtype):
    """q / k / v style projections of one x (the cube_group kind): each part's cube schedule on its
    own ScheduleCpu, in turn, on the group's arrays (kernel_cpu.PartsCpu); relu / add parts bit for
    bit cube.py's (which ran the parts one by one), a gelu part within an ulp of it (cube.py ran
    the epilogue on numpy's gelu, llvm_kernel on the LLVM backend's, as every vector kernel)."""
    from fusedsl.backend_cpu.kernel_cpu import PartsCpu
    g = np.random.default_rng(10)
    x, wq, wk, wv = (g.standard_normal(s).astype(dtype) for s in ((300, 64), (64, 48), (64, 48), (64, 48)))
    bias = g.standard_normal(48).astype(dtype)
    kern = fs.fused_kernel(lambda x, wq, wk, wv, b: (fs.relu(x @ wq), x @ wk * 0.5, fs.gelu(x @ wv + b)))
    got = kern(x, wq, wk, wv, bias)
    comp = kern.compile(x, wq, wk, wv, bias)
    assert [p.kernel_kind for p in comp.kernels] == ["cube_group"]
    assert isinstance(_matmul_executor(comp), PartsCpu) and comp.executor(comp.kernels[0]) == "cube"
    before = _cube_py(comp, [x, wq, wk, wv, bias])
    assert got[0].tobytes() == before[0].tobytes() and got[1].tobytes() == before[1].tobytes()
    np.testing.assert_allclose(got[2].astype(np.float32), before[2].astype(np.float32), rtol=2 ** -10, atol=1e-6)
    f32 = [v.astype(np.float32) for v in (x, wq, wk, wv, bias)]
    tol = 2e-2 if dtype == "float16" else 1e-4
    np.testing.assert_allclose(got[0].astype(np.float32), np.maximum(f32[0] @ f32[1], 0), rtol=tol, atol=tol * 8)
    np.testing.assert_allclose(got[1].astype(np.float32), f32[0] @ f32[2] * 0.5, rtol=tol, atol=tol * 8)
