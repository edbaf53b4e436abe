"""The LLVM CPU backend and the tile interpreter against the numpy reference.

Kernels are built through the public path (trace -> canonicalize -> fuse -> schedule ->
tiling) and every vector kernel runs three ways: `fusedsl.reference` (the oracle), the
tile interpreter (the executable spec of the schedule) and the compiled LLVM code (the
executor `k(*arrays)` runs it with: kernel_cpu.ScheduleCpu, the kernel's TileKernel through
llvm_kernel on the CPU's tiling words).
The generated-graph properties live in test_backend_cpu_fuzz.py and reuse the helpers
here.
"""
from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest

import fusedsl as fs
from conftest import TOLERANCE, assert_close
from fusedsl.backend_cpu import jit, kernel_cpu
from fusedsl.backend_cpu.kernel_cpu import ScheduleCpu
from fusedsl.backend_cpu.kernel_interp import run_kernel
from fusedsl.lower.kinds import kernel_ir, kernel_words
from fusedsl.errors import ScheduleError
from fusedsl.passes.fuse import Fuse
from fusedsl.passes.pipeline import canonicalize
from fusedsl.reference import run_function
from fusedsl.lower.vector import compute_tiling, schedule_vector_kernel
from fusedsl.targets import get_target

BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.fixture(autouse=True, scope="module")
def _private_cache(tmp_path_factory):
    """Compiled kernels go to a temporary cache, not the user's ~/.cache."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FUSEDSL_CACHE_DIR", str(tmp_path_factory.mktemp("fusedsl-cache")))
        yield


# ---- helpers shared with the fuzz tests -------------------------------------------------------
def vector_kernels(kernel, *specs):
    """(module, fn) for every vector kernel of `kernel` traced on `specs`."""
    module = canonicalize(kernel.trace(*specs))
    fuse = Fuse()
    module = fuse.run(module)
    return module, [fn for fn in module.functions[:-1] if fuse.infos[fn.name].kind == "vector"]


def tilings(fn, sizes, configs=(("ascend910b", 1.0),)):
    """(sched, tiling) per (target, UB fraction) config that schedules."""
    found = []
    for target_name, fraction in configs:
        target = get_target(target_name)
        try:
            sched = schedule_vector_kernel(fn, target, fraction)
            found.append((sched, compute_tiling(sched, sizes, target), target))
        except ScheduleError:
            continue
    return found


def run_llvm(sched, tiling, target, args, launch=None):
    """The compiled kernel's outputs.  launch: None (the default choices), "parallel"
    (blocks on the thread pool however small the kernel) or "stream" (non-temporal
    stores however small the outputs, plus the pool)."""
    outs = _fresh_outputs(sched, tiling)
    args = _declared_scalars(sched, args)
    kernel = ScheduleCpu(sched)     # (its compile verifies the IR: jit._optimised)
    with pytest.MonkeyPatch.context() as mp:
        if launch in ("parallel", "stream"):
            mp.setattr(kernel_cpu, "PARALLEL_MIN_BYTES", 0)
        if launch == "stream":
            mp.setattr(kernel_cpu, "STREAM_MIN_BYTES", 0)
        kernel.bind(args, outs, tiling)()
    return outs


def hoist_violations(sched):
    """Stmts the schedule marks hoisted (once per block on the NPU) that read per-tile data: a
    hoisted stmt may read only row inputs, constant scratch slots and earlier hoisted results
    (otherwise the Ascend C kernel would read an uninitialised buffer)."""
    ready = {inp.slot for inp in sched.inputs if inp.kind == "row"}
    ready |= {name for name in getattr(sched, "prefill", {})
              if sched.slots.get(name) is not None and sched.slots[name].role == "scratch"}
    bad = []
    for st in sched.stmts:
        if st.hoisted and all(s in ready for s in st.srcs):
            ready.add(st.dst)
        else:
            if st.hoisted:
                bad.append(st)
            ready.discard(st.dst)
    return bad


def run_interp(sched, tiling, args):
    """The TileKernel interpreter (the spec); a runtime scalar is given in its declared dtype (a
    bfloat16 1.7 is 1.703125)."""
    outs = _fresh_outputs(sched, tiling)
    run_kernel(kernel_ir(sched), _declared_scalars(sched, args), outs, kernel_words(sched, tiling))
    return outs


def _declared_scalars(sched, args):
    """The arguments with each runtime scalar in its declared dtype, as the compiler's call path
    and the printed host code give it to every executor."""
    args = list(args)
    for inp in sched.inputs:
        if inp.kind == "runtime_scalar":
            args[inp.index] = np.asarray(args[inp.index]).astype(inp.gm_dtype.np).item()
    return args


def _fresh_outputs(sched, tiling):
    """Flat output arrays filled with a value no kernel computes here (NaN, 0x3C)."""
    return [np.full(tiling.R * tiling.C, np.nan if o.gm_dtype.is_float else 0x3C, o.gm_dtype.np)
            for o in sched.outputs]


def check_kernel(kernel, specs, args, sizes=None, configs=(("ascend910b", 1.0),), scale=1.0,
                 executors=("interp", "llvm"), launch=None):
    """Every vector kernel of `kernel` agrees with the reference on every config.

    `scale` widens atol for chains whose intermediates are large (an ulp of the
    largest intermediate is the error floor of any executor that rounds per op).
    """
    module, fns = vector_kernels(kernel, *specs)
    assert fns, "no vector kernel was formed"
    checked = 0
    for fn in fns:
        fn_args = _kernel_args(module, fn, args)
        want = run_function(module, fn, fn_args)
        for sched, tiling, target in tilings(fn, sizes or {}, configs):
            results = {}
            for executor in executors:
                if executor == "interp" and hoist_violations(sched):
                    continue     # a known schedule bug, see test_hoisted_stmt_reading_a_body_slot
                got = run_llvm(sched, tiling, target, fn_args, launch) if executor == "llvm" else \
                    run_interp(sched, tiling, fn_args)
                for g, w in zip(got, want):
                    _close(g.reshape(w.shape), w, scale, f"{executor} {target.name} {tiling}")
                results[executor] = got
            if len(results) == 2 and not any(st.op in ("exp", "ln") for st in sched.stmts):
                # Both run the same stmts with the same rounding; only exp/ln are implemented
                # differently (polynomial vs numpy), so without them they agree bit for bit.
                for g, i in zip(results["llvm"], results["interp"]):
                    assert np.array_equal(g, i, equal_nan=g.dtype.kind == "f" or g.dtype == BF16), \
                        f"llvm != interp ({target.name} {tiling})"
            checked += 1
    assert checked, "no config scheduled"


def _close(got, want, scale, context):
    """Within TOLERANCE[dtype] (atol times `scale`); NaN and infinities must match exactly.

    (conftest.assert_close flags equal infinities as different: inf - inf is NaN.)
    """
    assert got.dtype == want.dtype and got.shape == want.shape, context
    rtol, atol = TOLERANCE[want.dtype]
    if rtol == 0 and atol == 0:
        bad = got != want
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        assert np.array_equal(np.isnan(g), np.isnan(w)), f"NaN positions differ ({context})"
        with np.errstate(invalid="ignore"):
            bad = ~(np.isnan(w) | (g == w) | (np.abs(g - w) <= atol * scale + rtol * np.abs(w)))
            bad |= np.isinf(w) & (g != w)
    if np.any(bad):
        idx = tuple(np.argwhere(bad)[0])
        raise AssertionError(f"{int(np.sum(bad))} of {bad.size} elements differ ({context}); first at {idx}: "
                             f"got {got[idx]!r}, want {want[idx]!r} (rtol={rtol}, atol={atol}*{scale})")


def _kernel_args(module, fn, args):
    """The arguments of kernel `fn` when it is the only kernel (its params are main's)."""
    main = module.main
    by_name = {p.value.name: a for p, a in zip(main.params, args)}
    return [by_name[p.value.name] for p in fn.params]


def rand(rng, shape, dtype, lo=-2.0, hi=2.0):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(int(lo), info.min), min(int(hi), info.max) + 1, size=shape).astype(dtype)
    return rng.uniform(lo, hi, size=shape).astype(np.float32).astype(dtype)


CONFIGS = (("ascend910b", 1.0), ("ascend910b", 0.02), ("ascend310p", 0.05), ("ascend910", 0.01))


# ---- fixed kernels -----------------------------------------------------------------------------
@fs.fused_kernel
def abs_add_relu(a, b):
    return fs.relu(fs.abs(a) + b)


@fs.fused_kernel
def six_op_chain(x, s, t):
    return fs.leaky_relu((x * s + t) * fs.sigmoid(x) - x, 0.1)


@fs.fused_kernel
def activations(x, y):
    return fs.gelu(x) + fs.silu(y) * fs.tanh(x - y)


@fs.fused_kernel
def two_outputs(a, b):
    return fs.exp(a) * b, fs.maximum(a, b) - 1.0


@fs.fused_kernel
def logs(x):
    return fs.log(fs.abs(x) + 0.5) + fs.sqrt(fs.abs(x)) * fs.rsqrt(fs.abs(x) + 1.0) / (x * x + 1.0)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape_a,shape_b", [
    ((128,), (192, 128)),      # the seed: a row vector hoisted
    ((13,), (37, 13)),         # odd row, padded in UB
    ((37, 1), (37, 13)),       # column vector: a general input broadcast along rows
    ((1, 5, 1), (3, 5, 7)),    # 3-D general
    ((3, 1, 7), (1, 5, 7)),    # two general inputs
    ((1,), (1000,)),           # one-element tensor: a scalar input
    ((1, 1), (4, 1)),          # size-1 dims everywhere
    ((2000,), (2000,)),        # R == 1: chunk mode
    ((3, 1), (3, 5000)),       # a column broadcast into chunks of long rows
    ((1, 7, 1), (5, 7, 300)),  # general input broadcast along rows and the leading dim
])
def test_seed_patterns(dtype, shape_a, shape_b):
    rng = np.random.default_rng(7)
    npd = np.dtype(dtype) if dtype != "bfloat16" else BF16
    a, b = rand(rng, shape_a, npd), rand(rng, shape_b, npd)
    check_kernel(abs_add_relu, (a, b), (a, b), configs=CONFIGS)
    check_kernel(abs_add_relu, (a, b), (a, b), configs=CONFIGS, executors=("llvm",), launch="stream")


@pytest.mark.parametrize("n", [1, 15, 16, 17, 4099, 100_003])
def test_chain_tails(n):
    rng = np.random.default_rng(n)
    x = rand(rng, (n,), np.float32, -6, 6)
    specs = (x, fs.scalar("s"), fs.scalar("t"))
    check_kernel(six_op_chain, specs, (x, 1.5, -0.25), configs=CONFIGS)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_activations(dtype):
    rng = np.random.default_rng(3)
    npd = np.dtype(dtype) if dtype != "bfloat16" else BF16
    x, y = rand(rng, (33, 65), npd, -4, 4), rand(rng, (65,), npd, -4, 4)
    check_kernel(activations, (x, y), (x, y), configs=CONFIGS[:2], scale=8)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_two_outputs_and_logs(dtype):
    rng = np.random.default_rng(5)
    a, b = rand(rng, (9, 70), dtype), rand(rng, (9, 1), dtype)
    check_kernel(two_outputs, (a, b), (a, b), configs=CONFIGS)
    check_kernel(logs, (a,), (a,), configs=CONFIGS, scale=4)


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint8"])
def test_integers(dtype):
    @fs.fused_kernel
    def ints(a, b):
        return fs.maximum(a + b, b) * 3 + fs.abs(a) - fs.minimum(a, 2)

    rng = np.random.default_rng(11)
    lo = 0 if dtype == "uint8" else -10
    a, b = rand(rng, (17, 33), dtype, lo, 10), rand(rng, (33,), dtype, lo, 10)
    check_kernel(ints, (a, b), (a, b), configs=CONFIGS)


def test_integer_wraparound():
    @fs.fused_kernel
    def wrap(a, b):
        return a * b + a

    big = np.array([2**31 - 1, -2**31, 65536, -3], np.int32)
    check_kernel(wrap, (big, big), (big, big))

    @fs.fused_kernel
    def wrap8(a, b):
        return a + b + a

    small = np.array([100, 120, -100, 7], np.int8)   # int8 is computed in half: exact up to 2048
    check_kernel(wrap8, (small, small), (small, small))


def test_casts():
    @fs.fused_kernel
    def casts(a, b, c):
        x = a.astype(fs.float32) * 0.75 + b.astype(fs.float32)
        # float32 -> int8 goes through half on the NPU (no direct Cast), so the value cast
        # here is exact in half: truncation then agrees with numpy's
        halves = (a.astype(fs.float32) * 0.5).astype(fs.int8)
        return x.astype(fs.int32), x.astype(fs.float16), halves, c.astype(fs.bfloat16)

    rng = np.random.default_rng(2)
    a = rand(rng, (6, 41), np.int8, -30, 30)
    b = rand(rng, (6, 41), np.float16, -40, 40)
    c = rand(rng, (41,), np.float32, -1e3, 1e3)
    # ascend310p/ascend910 have no float32 -> int32 Cast: lower/vector._exact_int32_cast casts
    # pieces below 1024 through half, so they match numpy's truncation too
    check_kernel(casts, (a, b, c), (a, b, c), configs=CONFIGS)


@pytest.mark.parametrize("dtype,value", [("float32", 0.1), ("float16", 0.3), ("int32", -7),
                                         ("bfloat16", 1.7)])
def test_runtime_scalars(dtype, value):
    @fs.fused_kernel
    def scaled(x, s):
        return fs.maximum(x * s, x + s)

    rng = np.random.default_rng(4)
    npd = np.dtype(dtype) if dtype != "bfloat16" else BF16
    x = rand(rng, (5, 300), npd, -50, 50)
    check_kernel(scaled, (x, fs.scalar("s", dtype)), (x, value), configs=CONFIGS)


def test_row_too_long_for_a_tile_is_not_hoisted():
    # With this UB budget a row of 200 floats does not fit a granule-rounded tile: the
    # scheduler must not hoist it (a hoisted slot holds one tile), and chunk mode reads the
    # row input at each chunk's columns instead.
    rng = np.random.default_rng(8)
    a, b = rand(rng, (200,), np.float32), rand(rng, (5, 200), np.float32)
    module, (fn,) = vector_kernels(abs_add_relu, a, b)
    ((sched, tiling, _),) = tilings(fn, {}, (("ascend910b", 0.2 / 7),))
    assert not tiling.rows_mode and not any(s.role == "inv" for s in sched.slots.values())
    check_kernel(abs_add_relu, (a, b), (a, b), configs=(("ascend910b", 0.2 / 7),))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "int8", "uint8"])
def test_comparisons_where_and_bool_io(dtype):
    @fs.fused_kernel
    def masks(x, y, m):
        keep = (x > y) != m
        return fs.where(keep, x, y), keep, (x == 3).astype(fs.float32) + (x <= y).astype(fs.float32)

    rng = np.random.default_rng(6)
    npd = np.dtype(dtype) if dtype != "bfloat16" else BF16
    lo = 0 if dtype == "uint8" else -4
    x, y = rand(rng, (7, 45), npd, lo, 4), rand(rng, (45,), npd, lo, 4)
    if npd.kind == "f" or npd == BF16:
        x[0, :5] = [np.nan, np.inf, -np.inf, 3, -0.0]
        y[:5] = [1, np.nan, -np.inf, 3, 0.0]
    m = rng.integers(0, 2, (7, 1)).astype(np.bool_)
    check_kernel(masks, (x, y, m), (x, y, m), configs=CONFIGS)


def test_symbolic_rows():
    rng = np.random.default_rng(9)
    a = rand(rng, (96,), np.float32)
    for m in (1, 7, 300):
        b = rand(rng, (m, 96), np.float32)
        check_kernel(abs_add_relu, (a, fs.spec(("M", 96), "float32")), (a, b), sizes={"M": m}, configs=CONFIGS)


def test_special_values_match_numpy():
    @fs.fused_kernel
    def specials(x, y):
        return fs.maximum(x, y), fs.minimum(x, y), fs.relu(x), fs.exp(x), fs.log(y), fs.leaky_relu(x, 0.2)

    vals = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 89.0, -104.0, 88.72, 3.0e38],
                    np.float32)
    x, y = np.repeat(vals, len(vals)), np.tile(vals, len(vals))
    check_kernel(specials, (x, y), (x, y))


def _hoist_bug_kernel():
    @fs.fused_kernel
    def shared_cast(x, row):
        # row's cast to the compute dtype is made for the body (x + row) and then reused
        # by the hoisted abs(row)
        return x + row + fs.abs(row)

    x, row = np.arange(8, dtype=np.uint8).reshape(4, 2), np.array([3, 4], np.uint8)
    return shared_cast, x, row


def test_hoisted_stmt_reading_a_body_slot_runs_per_tile_in_llvm():
    kernel, x, row = _hoist_bug_kernel()
    check_kernel(kernel, (x, row), (x, row), executors=("llvm",))


def test_hoisted_stmt_reading_a_body_slot():
    kernel, x, row = _hoist_bug_kernel()
    module, (fn,) = vector_kernels(kernel, x, row)
    sched = schedule_vector_kernel(fn, get_target("ascend910b"))
    assert not hoist_violations(sched)


# ---- math accuracy -------------------------------------------------------------------------------
def _ulp_error(got, exact):
    got = got.astype(np.float64)
    spacing = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return np.abs(got - exact) / spacing


def _unary_kernel(fn, x):
    module, (kfn,) = vector_kernels(fn, x)
    target = get_target("ascend910b")
    sched = schedule_vector_kernel(kfn, target)
    tiling = compute_tiling(sched, {}, target)
    return run_llvm(sched, tiling, target, [x])[0]


def test_exp_is_within_two_ulp():
    x = np.concatenate([np.linspace(-87.3, 88.7, 2_000_003, dtype=np.float32),
                        np.float32(np.random.default_rng(0).uniform(-10, 10, 100_000))])
    got = _unary_kernel(fs.fused_kernel(lambda x: fs.exp(x)), x)
    exact = np.exp(x.astype(np.float64))
    assert _ulp_error(got, exact).max() <= 2.0


def test_log_is_within_two_ulp():
    rng = np.random.default_rng(1)
    x = np.concatenate([np.float32(2.0) ** rng.uniform(-149, 127, 1_000_000).astype(np.float32),
                        np.linspace(0.5, 2.0, 100_001, dtype=np.float32)])
    got = _unary_kernel(fs.fused_kernel(lambda x: fs.log(x)), x)
    exact = np.log(x.astype(np.float64))
    ok = exact != 0
    assert _ulp_error(got[ok], exact[ok]).max() <= 2.0


# ---- launch paths --------------------------------------------------------------------------------
def _seed_kernel(shape_a, shape_b, dtype=np.float32, fraction=1.0):
    rng = np.random.default_rng(0)
    a, b = rand(rng, shape_a, dtype), rand(rng, shape_b, dtype)
    module, (fn,) = vector_kernels(abs_add_relu, a, b)
    target = get_target("ascend910b")
    sched = schedule_vector_kernel(fn, target, fraction)
    tiling = compute_tiling(sched, {}, target)
    want = run_function(module, fn, [a, b])[0]
    return ScheduleCpu(sched), tiling, a, b, want


def test_threads_and_serial_agree(monkeypatch):
    kernel, tiling, a, b, want = _seed_kernel((257,), (301, 257), fraction=0.05)
    words = kernel.words(tiling)
    total, per_core = (words[kernel.kernel._offsets[n][0]] for n in ("totalTiles", "tilesPerCore"))
    assert -(-total // per_core) > 2
    for work in (0, 1 << 60):      # always parallel, never parallel
        monkeypatch.setattr(kernel_cpu, "PARALLEL_MIN_BYTES", work)
        out = np.empty_like(want)
        kernel.bind([a, b], [out], tiling)()
        assert_close(out, want)


@pytest.mark.parametrize("dtype, cols", [(np.float32, 1024), (np.float16, 2048)])
def test_hoisted_rows_stay_in_l1(monkeypatch, dtype, cols):
    """The CPU's tiles of a kernel with a hoisted broadcast row (cpu_tiling.hoisted_rows_in_l1): the
    row's tile-sized buffer, the streamed input and the output rows of one tile fit L1, in as many
    blocks as the chip's cost model chose (its tiles are 4 rows here)."""
    from fusedsl.backend_cpu import cpu_tiling
    _, (fn,) = vector_kernels(abs_add_relu, np.empty(cols, dtype), np.empty((1024, cols), dtype))
    target = get_target("ascend910b")
    sched = schedule_vector_kernel(fn, target)
    tiling = cpu_tiling.vector_tiling(sched, {}, target)
    assert 3 * np.dtype(dtype).itemsize * tiling.tile_rows * tiling.Cpad <= cpu_tiling.L1_BYTES
    monkeypatch.setattr(cpu_tiling, "host_tiles", lambda sched, t: t)
    wide = cpu_tiling.vector_tiling(sched, {}, target)
    assert (wide.tile_rows, tiling.tile_rows) == (4, 2) and tiling.block_dim == wide.block_dim
    assert tiling.tile_elems == 2 * cols and tiling.total_tiles == 512 and tiling.tiles_per_core == 16


def test_small_tiles_grow_on_the_cpu():
    """cpu_tiling.host_tiles: the chip's small tiles grow (a hoisted row's to 3/4 of L1, any other to
    MIN_TILE_ELEMS elements) in at most its blocks; the CPU's own tiling passes unchanged, so a bound call
    on the chip's words runs the tiles the compiler's path runs; the results are the chip tiles'."""
    from fusedsl.backend_cpu import cpu_tiling
    target = get_target("ascend910b")
    kernel, chip, a, b, want = _seed_kernel((128,), (192, 128))
    assert (chip.tile_rows, chip.total_tiles) == (4, 48)
    ours = cpu_tiling.host_tiles(kernel.sched, chip)
    assert (ours.tile_rows, ours.total_tiles, ours.block_dim, ours.tile_elems) == (16, 12, 6, 16 * 128)
    assert cpu_tiling.vector_tiling(kernel.sched, {}, target) == ours == cpu_tiling.host_tiles(kernel.sched, ours)
    assert kernel.words(chip) == kernel_words(kernel.sched, ours)
    out = np.empty_like(want)
    kernel.bind([a, b], [out], chip)()
    assert np.array_equal(out, want)
    module, (fn,) = vector_kernels(activations, np.empty((192, 128), np.float32), np.empty((192, 128), np.float32))
    sched = schedule_vector_kernel(fn, target)
    flat = compute_tiling(sched, {}, target)
    grown = cpu_tiling.host_tiles(sched, flat)
    assert not flat.rows_mode and flat.tile_cols < cpu_tiling.MIN_TILE_ELEMS
    assert (grown.tile_cols, grown.col_tiles, grown.total_tiles, grown.tile_elems) == (4096, 6, 6, 4096)
    assert grown.block_dim <= flat.block_dim and cpu_tiling.host_tiles(sched, grown) == grown


@pytest.mark.parametrize("offset", [0, 1, 3, 8])
def test_streaming_stores_with_misaligned_outputs(monkeypatch, offset):
    monkeypatch.setattr(kernel_cpu, "STREAM_MIN_BYTES", 0)
    module, (fn,) = vector_kernels(two_outputs, np.zeros((3, 1000), np.float16), np.zeros((3, 1), np.float16))
    target = get_target("ascend910b")
    sched = schedule_vector_kernel(fn, target, 0.2)
    tiling = compute_tiling(sched, {}, target)
    rng = np.random.default_rng(offset)
    a, b = rand(rng, (3, 1000), np.float16), rand(rng, (3, 1), np.float16)
    want = run_function(module, fn, [a, b])
    buf0 = np.empty(3000 + 64, np.float16)
    buf1 = np.empty(3000 + 64, np.float16)
    outs = [buf0[offset:offset + 3000].reshape(3, 1000), buf1[2 * offset + 1:2 * offset + 3001].reshape(3, 1000)]
    ScheduleCpu(sched).run([a, b], outs, tiling)
    for o, w in zip(outs, want):
        assert_close(o, w)


def test_run_reuses_the_binding_and_rebinds_on_new_arrays():
    kernel, tiling, a, b, want = _seed_kernel((128,), (192, 128))
    out = np.empty_like(want)
    kernel.run([a, b], [out], tiling)
    first = kernel._last
    kernel.run([a, b], [out], tiling)
    assert kernel._last is first
    b2 = b + 1
    kernel.run([a, b2], [out], tiling)
    assert kernel._last is not first and kernel.bound_outputs() == (out,)
    assert_close(out, np.maximum(np.abs(a) + b2, 0))


def test_one_element_tensor_may_come_as_a_number():
    @fs.fused_kernel
    def shift(x, c):
        return x - c

    x, c = np.arange(10, dtype=np.float32), np.array(2.5, np.float32)
    module, (fn,) = vector_kernels(shift, x, c)
    target = get_target("ascend910b")
    sched = schedule_vector_kernel(fn, target)
    assert [i.kind for i in sched.inputs] == ["full", "scalar"]
    out = np.empty(10, np.float32)
    ScheduleCpu(sched).run(_kernel_args(module, fn, [x, 2.5]), [out], compute_tiling(sched, {}, target))
    assert_close(out, x - np.float32(2.5))


def test_other_dtypes_and_strided_outputs_are_converted():
    # an input of another dtype is converted to the kernel's, a strided output written through a
    # contiguous copy (the compiler checks shapes before a kernel runs)
    kernel, tiling, a, b, want = _seed_kernel((128,), (192, 128))
    wide = np.full((192, 256), np.nan, np.float32)
    kernel.run([a.astype(np.float64), b], [wide[:, ::2]], tiling)
    assert_close(wide[:, ::2], want)
    assert np.isnan(wide[:, 1::2]).all()


# ---- the disk cache --------------------------------------------------------------------------------
def test_disk_cache_hit_and_corruption(monkeypatch, tmp_path):
    # the optimised object's entry (FUSEDSL_JIT_TIERS=0: compiled before the first call; the tiered
    # path's two entries: tests/test_jit_tiers.py)
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FUSEDSL_JIT_TIERS", "0")
    monkeypatch.setattr(jit, "_memory", {})
    kernel, tiling, a, b, want = _seed_kernel((64,), (10, 64))
    kernel.run([a, b], [np.empty_like(want)], tiling)    # compiled at its first launch
    assert not kernel.from_disk_cache
    key = jit.cache_key(kernel.kernel.ir)
    path = os.path.join(tmp_path, "llvm", key[:2], key + ".o")
    assert os.path.exists(path)
    assert not [f for f in os.listdir(os.path.dirname(path)) if f.startswith(".tmp")]

    monkeypatch.setattr(jit, "_memory", {})
    again = ScheduleCpu(kernel.sched)
    out = np.empty_like(want)
    again.run([a, b], [out], tiling)
    assert again.from_disk_cache
    assert_close(out, want)

    for damage in (lambda blob: blob[: len(blob) // 2],                      # truncated
                   lambda blob: blob[:-10] + bytes(10),                         # payload flipped
                   lambda blob: b"garbage"):                                    # not ours at all
        with open(path, "rb") as f:
            blob = f.read()
        with open(path, "wb") as f:
            f.write(damage(blob))
        monkeypatch.setattr(jit, "_memory", {})
        rebuilt = ScheduleCpu(kernel.sched)
        out = np.empty_like(want)
        rebuilt.run([a, b], [out], tiling)
        assert not rebuilt.from_disk_cache
        assert_close(out, want)
        assert jit.read_cached(key) is not None        # the rebuilt entry was written back


def test_cache_key_depends_on_ir_and_host():
    assert jit.cache_key("a") != jit.cache_key("b")
    assert jit.cache_key("a") == jit.cache_key("a")


# ---- through the user's path ---------------------------------------------------------------------
def test_kernel_call_with_the_llvm_executor(monkeypatch):
    @fs.fused_kernel
    def mixed(x, b):
        return fs.softmax(fs.gelu(x + b), axis=-1) * 2.0    # vector kernel, reduction, vector kernel

    rng = np.random.default_rng(12)
    x, b = rand(rng, (33, 70), np.float32), rand(rng, (70,), np.float32)
    a, y = rand(rng, (128,), np.float32), rand(rng, (192, 128), np.float32)
    monkeypatch.setattr(fs.config, "executor", "reference")
    want_mixed, want_seed = mixed(x, b), abs_add_relu(a, y)
    monkeypatch.setattr(fs.config, "executor", "llvm")
    _close(mixed(x, b), want_mixed, 1.0, "mixed")
    out = np.empty_like(want_seed)
    assert abs_add_relu(a, y, out=out) is out
    _close(out, want_seed, 1.0, "seed out=")


def test_round_to_odd_float_to_half():
    """CAST_ODD (the 310P/910A float->half hop before an integer truncation): exact values stay,
    inexact ones become whichever neighbouring half has an odd last bit."""
    from fusedsl import dtypes as dt
    from fusedsl.backend_cpu.stmt_eval import convert as _convert

    rng = np.random.default_rng(5)
    x = np.concatenate([rng.standard_normal(4000) * 3000, [0.0, -0.0, 1.0, 2.5, 1e6, -1e6, np.inf, np.nan],
                        np.arange(-2048, 2048, 0.25)]).astype(np.float32)
    got = _convert(x, dt.float32, dt.float16, "CAST_ODD")
    with np.errstate(over="ignore"):       # +-1e6 round to +-inf
        near = x.astype(np.float16)
    exact = near.astype(np.float64) == x.astype(np.float64)
    assert np.array_equal(got[exact], near[exact])
    finite = ~exact & ~np.isnan(x)
    assert np.all(got[finite].view(np.uint16) & 1)
    # the odd neighbour brackets x: |got - x| < one half ulp spacing at x
    with np.errstate(over="ignore"):       # 1e6 becomes the largest half, whose spacing overflows
        spacing = np.spacing(np.abs(got[finite]).astype(np.float16)).astype(np.float64)
    assert np.all(np.abs(got[finite].astype(np.float64) - x[finite]) <= spacing)
    assert np.isnan(got[np.isnan(x)]).all()
    # and the truncation after it is numpy's for |x| < 1024 (the documented exact range)
    small = np.abs(x) < 1024
    assert np.array_equal(np.trunc(got[small].astype(np.float32)), np.trunc(x[small]))
