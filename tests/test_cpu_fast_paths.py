"""CPU fast paths (issue 21 item 7): pure reshapes return numpy views, transposes run natively (the
transpose kind's TileKernel on llvm_kernel: blocked register transposes, GM to GM), 16-bit matmuls on
float32 BLAS; all against numpy."""
import contextlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import fuzz_settings


@pytest.mark.parametrize("shape,new", [((1024, 64), (64, 1024)), ((1, 16, 1, 8), (16, 8)), ((16, 8), (1, 16, 1, 8)),
                                       ((6,), (2, 3)), ((0, 4), (4, 0))])
def test_reshape_returns_a_view_like_numpy(shape, new):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    k = fs.fused_kernel(lambda a: fs.reshape(a, new))
    y = k(x)
    want = x.reshape(new)
    assert y.shape == want.shape and np.array_equal(y, want)
    if x.size:
        assert np.shares_memory(y, x) and y.base is not None   # a view, as numpy's reshape is
    if x.size:
        assert np.shares_memory(k(x), x)


def test_reshape_of_a_reshape_and_several_results_are_views():
    x = np.arange(24, dtype=np.float32)
    k = fs.fused_kernel(lambda a, b: (fs.reshape(fs.reshape(a, (4, 6)), (2, 12)), fs.reshape(b, (3, 8))))
    p, q = k(x, x + 1)
    assert np.shares_memory(p, x) and p.shape == (2, 12) and np.array_equal(p, x.reshape(2, 12))
    assert q.shape == (3, 8) and np.array_equal(q, (x + 1).reshape(3, 8))
    xs = x[::2]   # a non-contiguous argument: its contiguous copy is viewed (it cannot be viewed itself)
    assert np.array_equal(fs.fused_kernel(lambda a: fs.reshape(a, (3, 4)))(xs), xs.reshape(3, 4))


def test_reshape_view_aliasing_rules():
    """A value returned twice is copied the second time; a reshape of a kernel result is that result."""
    x = np.ones((4, 8), np.float32)
    both = fs.fused_kernel(lambda a: (fs.reshape(a, (8, 4)), fs.reshape(a, (8, 4))))
    y1, y2 = both(x)
    assert np.shares_memory(y1, x) and not np.shares_memory(y2, x) and np.array_equal(y1, y2)
    k = fs.fused_kernel(lambda a: fs.reshape(fs.relu(a), (32,)))
    y = k(x)
    assert not np.shares_memory(y, x) and np.array_equal(y, np.ones(32, np.float32))
    out = np.empty((8, 4), np.float32)
    r = fs.fused_kernel(lambda a: fs.reshape(a, (8, 4)))(x, out=out)   # out= still gets the values
    assert r is out and np.array_equal(out, x.reshape(8, 4))


DTYPES = ["float32", "float16", "bfloat16", "int32", "int8", "uint8", "bool"]


def _array(rng, shape, dtype):
    from fusedsl.dtypes import to_dtype
    np_dtype = to_dtype(dtype).np
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in ("int32", "int8", "uint8"):
        return rng.integers(0, 100, shape).astype(np_dtype)
    return rng.standard_normal(shape).astype(np.float32).astype(np_dtype)


@fuzz_settings(0.5)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=4), st.randoms(use_true_random=False),
       st.sampled_from(DTYPES))
def test_transpose_matches_numpy(shape, rnd, dtype):
    """The native transpose (full 16x16 / 32x32 / 64x64 tiles and edge tiles, merged axes, size-1
    axes) moves exactly numpy's elements for every dtype width."""
    perm = list(range(len(shape)))
    rnd.shuffle(perm)
    x = _array(np.random.default_rng(rnd.randint(0, 1 << 30)), tuple(shape), dtype)
    k = fs.fused_kernel(lambda a: fs.transpose(a, perm))
    y = k(x)
    want = np.transpose(x, perm)
    assert y.shape == want.shape and y.dtype == want.dtype and np.array_equal(y, want)
    assert y.flags.c_contiguous and not np.shares_memory(y, x)


@pytest.mark.parametrize("shape,perm", [((1024, 4096), (1, 0)), ((3, 70, 130), (2, 0, 1)), ((2, 5, 33, 17), (0, 3, 2, 1)),
                                        ((64, 1, 48), (2, 1, 0)), ((8, 16, 32), (0, 2, 1))])
def test_transpose_runs_natively(shape, perm):
    """A lone transpose runs natively (the transpose kind's kernel on llvm_kernel, not the numpy
    reference), results in recycled or out= arrays alike."""
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    k = fs.fused_kernel(lambda a: fs.transpose(a, perm))
    c = k.compile(x)
    assert c.executor(c.kernels[0]) == "transpose"
    np.testing.assert_array_equal(k(x), np.transpose(x, perm))
    out = np.empty(np.transpose(x, perm).shape, np.float32)
    assert k(x, out=out) is out
    np.testing.assert_array_equal(out, np.transpose(x, perm))
    # inside a larger program (not the single-kernel fast path) too
    k2 = fs.fused_kernel(lambda a: (fs.transpose(a, perm), fs.relu(a)))
    t, r = k2(x)
    np.testing.assert_array_equal(t, np.transpose(x, perm))


@fuzz_settings(0.5)
@given(st.integers(1, 70), st.integers(1, 70), st.integers(1, 70), st.sampled_from(["float16", "bfloat16"]),
       st.booleans(), st.integers(0, 1 << 30))
def test_16bit_matmul_matches_the_reference(m, k, n, dtype, epilogue, seed):
    """16-bit matmuls (operands widened natively once, float32 BLAS on row blocks, the product
    rounded natively) give the reference interpreter's bits, with and without an epilogue."""
    rng = np.random.default_rng(seed)
    a, b, bias = _array(rng, (m, k), dtype), _array(rng, (k, n), dtype), _array(rng, (n,), dtype)
    fn = (lambda p, q, r: fs.relu(p @ q + r)) if epilogue else (lambda p, q, r: p @ q)
    got = fs.fused_kernel(fn)(a, b, bias)
    old = fs.config.executor
    fs.config.executor = "reference"
    try:
        want = fs.fused_kernel(fn)(a, b, bias)
    finally:
        fs.config.executor = old
    assert got.dtype == want.dtype and np.array_equal(got.astype(np.float32), want.astype(np.float32), equal_nan=True)


def test_native_casts_round_like_numpy():
    from fusedsl import dtypes as dt
    from fusedsl.backend_cpu import casts
    rng = np.random.default_rng(3)
    with np.errstate(all="ignore"):
        x = (rng.standard_normal(5003) * np.float32(10.0) ** rng.integers(-45, 39, 5003)).astype(np.float32)
    x[:12] = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 65504, 65520, 6e-8, 2.98e-8, 1e-45, 2.5]
    for d in (dt.float16, dt.bfloat16):
        with np.errstate(all="ignore"):
            want = x.astype(d.np)
        r = x.copy()
        casts.round_in_place(r, d)
        assert np.array_equal(r, want.astype(np.float32), equal_nan=True)
        o = np.empty(x.shape, d.np)
        assert casts.narrow_into(o, r) and np.array_equal(o.view(np.uint16)[12:], want.view(np.uint16)[12:])
        assert np.array_equal(casts.widen(want), want.astype(np.float32), equal_nan=True)


def test_large_matmul_runs_on_row_blocks():
    """A product above PARALLEL_MACS splits into single-threaded sgemm row blocks: same values."""
    from fusedsl.backend_cpu import blas
    rng = np.random.default_rng(4)
    a = rng.standard_normal((300, 257)).astype(np.float32)
    b = rng.standard_normal((257, 301)).astype(np.float32)
    old = blas.PARALLEL_MACS
    blas.PARALLEL_MACS = 1
    try:
        out = np.empty((300, 301), np.float32)
        blas.matmul_rows(a, b, out)
    finally:
        blas.PARALLEL_MACS = old
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-3)


def test_lone_reduction_rebinds_for_new_arrays():
    """A lone column reduction remembers its last arrays (identity): new arrays, new results."""
    k = fs.fused_kernel(lambda a: fs.sum(a, axis=0))
    x = np.arange(48, dtype=np.float32).reshape(3, 16)
    y1 = k(x)
    np.testing.assert_array_equal(y1, x.sum(0))
    x[:] = 1
    np.testing.assert_array_equal(k(x), np.full(16, 3, np.float32))   # same array, new values
    x2 = np.full((3, 16), 2, np.float32)
    np.testing.assert_array_equal(k(x2), np.full(16, 6, np.float32))  # a new array
    kept = [k(x) for _ in range(6)]                                    # results held: never shared
    assert all(not np.shares_memory(a, b) for i, a in enumerate(kept) for b in kept[i + 1:])


@contextlib.contextmanager
def _streaming(on: bool = True):
    """Non-temporal stores from the first byte of output (kernel_cpu.TRANSPOSE_STREAM_MIN_BYTES 0)
    while the kernel is bound and run: the path on small odd shapes."""
    from fusedsl.backend_cpu import kernel_cpu
    saved = kernel_cpu.TRANSPOSE_STREAM_MIN_BYTES
    kernel_cpu.TRANSPOSE_STREAM_MIN_BYTES = 0 if on else saved
    try:
        yield
    finally:
        kernel_cpu.TRANSPOSE_STREAM_MIN_BYTES = saved


def _transpose_kernel(x, perm):
    """The lone transpose's CPU executor (kernel_cpu.ScheduleCpu on cpu_tiling's words), or None when
    the permutation moves size-1 axes only (no kernel: a reshape, checked through the public call)."""
    from fusedsl.backend_cpu.kernel_cpu import ScheduleCpu
    k = fs.fused_kernel(lambda a: fs.transpose(a, perm))
    comp = k.compile(x)
    if not comp.kernels:
        assert np.array_equal(k(x), np.transpose(x, perm))
        return None
    (plan,) = comp.kernels
    return ScheduleCpu(plan.lowered, plan.tiling, use_disk_cache=False)


def _run_at(kernel, x, want, shift):
    """Run into an output starting `shift` bytes into a cache line (zeros around it); the bytes
    before and after the output must stay zero."""
    base = np.zeros(want.nbytes + 192, np.uint8)
    if kernel is None:
        return
    start = (-base.ctypes.data) % 64 + 64 + shift - shift % x.itemsize
    out = base[start:start + want.nbytes].view(x.dtype).reshape(want.shape)
    kernel.run([x], [out])
    assert np.array_equal(out, want), shift
    assert not base[:start].any() and not base[start + want.nbytes:].any()   # nothing outside


@fuzz_settings(0.06)
@given(st.lists(st.integers(1, 70), min_size=2, max_size=3), st.randoms(use_true_random=False),
       st.sampled_from(["float32", "float16", "int8"]), st.integers(0, 63))
def test_streamed_transpose_matches_numpy_at_every_output_alignment(shape, rnd, dtype, shift):
    """Large transposes store a register tile whose output rows are whole aligned 64-byte lines with
    non-temporal stores (kernel_cpu.TRANSPOSE_STREAM_MIN_BYTES set to 0 here to reach the path on
    small odd shapes), the other tiles with ordinary stores; outputs that start anywhere in a cache
    line, every width."""
    perm = list(range(len(shape)))
    rnd.shuffle(perm)
    x = _array(np.random.default_rng(rnd.randint(0, 1 << 30)), tuple(shape), dtype)
    with _streaming():
        _run_at(_transpose_kernel(x, tuple(perm)), x, np.transpose(x, perm), shift)


@pytest.mark.parametrize("shape,perm,dtype", [((48, 37), (1, 0), "float32"), ((3, 64, 45), (0, 2, 1), "float16"),
                                              ((128, 7), (1, 0), "int8"), ((64, 64), (1, 0), "float32")])
def test_streamed_transpose_fixed_cases(shape, perm, dtype):
    x = _array(np.random.default_rng(1), shape, dtype)
    with _streaming():
        kernel = _transpose_kernel(x, perm)
        for shift in range(0, 64, x.itemsize):
            _run_at(kernel, x, np.transpose(x, perm), shift)


@fuzz_settings(0.1)
@given(st.lists(st.integers(1, 45), min_size=2, max_size=3), st.randoms(use_true_random=False),
       st.sampled_from(["uint8", "float16", "int32"]), st.integers(0, 63), st.booleans())
def test_transpose_edge_tiles_every_width(shape, rnd, dtype, shift, streamed):
    """Edge tiles (odd tails, size-1 axes) move element by element beside the register tiles:
    exact for every element width the kernels have (the bits move as integers), outputs starting
    anywhere in a line, nothing written outside the output."""
    perm = list(range(len(shape)))
    rnd.shuffle(perm)
    x = np.random.default_rng(rnd.randint(0, 1 << 30)).integers(1, 250, shape).astype(dtype)
    with _streaming(streamed):
        _run_at(_transpose_kernel(x, tuple(perm)), x, np.transpose(x, perm), shift)


def test_transpose_network_is_a_transpose():
    """The in-register network leaves every register one column of the tile, rows in order."""
    from fusedsl.backend_cpu import register_transpose
    for itemsize in (1, 2, 4, 8):
        cols = register_transpose.network_columns(itemsize)
        assert sorted(cols) == list(range(64 // itemsize))


def test_large_streamed_transpose_into_unaligned_out():
    """A transpose above STREAM_MIN_BYTES with odd tails, through the public call: a result
    fusedsl allocates starts on a cache line; a caller's out= 20 bytes into a line gets the
    same values (its register tiles' output rows then start inside a line: ordinary stores)."""
    from fusedsl.backend_cpu import kernel_cpu
    x = np.random.default_rng(5).standard_normal((1031, 2053)).astype(np.float32)
    assert x.nbytes >= kernel_cpu.TRANSPOSE_STREAM_MIN_BYTES
    k = fs.fused_kernel(lambda a: fs.transpose(a, (1, 0)))
    y = k(x)
    assert y.ctypes.data % 64 == 0 and np.array_equal(y, x.T)
    base = np.zeros(x.nbytes + 128, np.uint8)
    start = (-base.ctypes.data) % 64 + 20
    out = base[start:start + x.nbytes].view(np.float32).reshape(2053, 1031)
    assert k(x, out=out) is out and np.array_equal(out, x.T)
    assert not base[:start].any() and not base[start + x.nbytes:].any()


def test_results_are_line_aligned_and_views_keep_them():
    """Results of 64 KB and more start on a page, so on a cache line (fusedsl/buffers.py); a view of a result
    keeps the result itself alive, so the output pool never hands out a buffer a view still
    reads (numpy would collapse the view onto the hidden larger buffer otherwise)."""
    from fusedsl import buffers
    a = buffers.empty((300, 70), np.float32)
    assert a.ctypes.data % 4096 == 0 and a.shape == (300, 70) and a.flags.c_contiguous and a.flags.writeable
    assert a[1:].base is a and a.T.base is a and a.reshape(-1).base is a
    assert buffers.empty((3, 5), np.float16).shape == (3, 5)   # small: plain np.empty
    # the ctypes array types behind them (kept by ctypes forever) come in few lengths
    lengths = {len(buffers.empty((n,), np.uint8).base) for n in range(1 << 16, 1 << 17, 97)}
    assert len(lengths) <= 17   # 16 steps in [64 KB, 128 KB), and 128 KB itself
    x = np.random.default_rng(6).standard_normal((256, 128)).astype(np.float32)
    k = fs.fused_kernel(lambda p: fs.relu(p) * 2.0)
    y = k(x)
    assert y.ctypes.data % 64 == 0 and np.array_equal(y, np.maximum(x, 0) * 2)
    view = y[3:]
    del y
    results = [k(x + i) for i in range(6)]
    assert not any(np.shares_memory(view, r) for r in results)
    assert np.array_equal(view, (np.maximum(x, 0) * 2)[3:])


@fuzz_settings(0.15)
@given(st.integers(1, 90), st.integers(1, 40), st.integers(1, 90), st.sampled_from(["float16", "bfloat16"]),
       st.integers(0, 1 << 30))
def test_16bit_product_row_blocks_match_the_reference(m, k, n, dtype, seed):
    """A lone 16-bit matmul's bound call (the cube kind's kernel on llvm_kernel: blocks of rows on the
    launcher's threads, each widening its rows of A and rounding its rows of the product;
    cpu_tiling.PARALLEL_MACS forced to 1 so that small odd shapes split too, m or n of 1 included)
    gives the reference's bits, call after call on the same arrays with new values."""
    from fusedsl.backend_cpu import cpu_tiling
    rng = np.random.default_rng(seed)
    a, b = _array(rng, (m, k), dtype), _array(rng, (k, n), dtype)
    a.flat[0] = np.nan if m * k > 1 else a.flat[0]
    ref = fs.fused_kernel(lambda p, q: p @ q)
    old_executor, old_macs = fs.config.executor, cpu_tiling.PARALLEL_MACS
    cpu_tiling.PARALLEL_MACS = 1
    try:
        got = fs.fused_kernel(lambda p, q: p @ q)
        first = got(a, b).copy()
        a[...] = _array(rng, (m, k), dtype)   # same arrays, new values: widened again
        second = got(a, b)
        fs.config.executor = "reference"
        want = ref(a, b)
    finally:
        fs.config.executor, cpu_tiling.PARALLEL_MACS = old_executor, old_macs
    assert first.dtype == want.dtype and second.dtype == want.dtype
    assert np.array_equal(second.view(np.uint16), want.view(np.uint16))
