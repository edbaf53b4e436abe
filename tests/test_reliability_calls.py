"""Silent wrong answers on the call path (issue 10): out= overlapping an input, runtime
scalars of the wrong kind, ragged lists, concurrent calls with different symbolic sizes."""
from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import fusedsl as fs
from fusedsl.errors import ArgumentError


@fs.fused_kernel
def inc(x):
    return x + 1


@fs.fused_kernel
def two(x):
    return x * 2, fs.maximum(x, -1.0)


def test_out_overlapping_the_input_is_computed_through_a_temporary():
    n = 1 << 20
    buf = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    want = buf.copy()
    want[1:] = want[:-1] + 1
    for _ in range(2):                    # the first call (slow path) and the cached fast path
        b = buf.copy()
        inc(b[:-1], out=b[1:])
        np.testing.assert_array_equal(b, want)
    b = buf.copy()                        # CompiledKernel.__call__ (bind_args path)
    k = inc.compile(b[:-1])
    k(b[:-1], out=b[1:])
    np.testing.assert_array_equal(b, want)


def test_out_tuple_aliasing_the_input():
    x = np.linspace(-3, 3, 1 << 20, dtype=np.float32)
    x0 = x.copy()
    m = np.empty_like(x)
    got = two(x, out=(x, m))
    assert got[0] is x and got[1] is m
    np.testing.assert_array_equal(x, x0 * 2)
    np.testing.assert_array_equal(m, np.maximum(x0, -1))


def test_out_without_overlap_still_writes_in_place():
    x = np.ones(1024, np.float32)
    y = np.empty_like(x)
    assert inc(x, out=y) is y
    np.testing.assert_array_equal(y, 2)


@pytest.fixture(scope="module")
def scaled_int8():
    return fs.fused_kernel(lambda q, s: q * s).compile(fs.spec((16,), "int8"), fs.scalar("s", "int8"))


@pytest.mark.parametrize("bad, message", [
    (None, "runtime scalar 's' must be a number, got NoneType"),
    ("1.5", "runtime scalar 's' must be a number, got str"),
    (np.int32(300), r"runtime scalar 's' = 300 is out of range for int8 \[-128, 127\]"),
    (300, r"runtime scalar 's' = 300 is out of range for int8"),
    (1.5, "runtime scalar 's' is int8, got the non-integer 1.5"),
    ([1, 2], "runtime scalar 's' must be a number, got list"),
])
def test_runtime_scalars_are_validated(scaled_int8, bad, message):
    q = np.arange(16, dtype=np.int8)
    with pytest.raises(ArgumentError, match=message):
        scaled_int8(q, bad)


def test_valid_runtime_scalars_run(scaled_int8):
    q = np.arange(16, dtype=np.int8)
    for s in (3, np.int8(3), np.int32(3), 3.0, np.array(3)):
        np.testing.assert_array_equal(scaled_int8(q, s), q * np.int8(3))
    f = fs.fused_kernel(lambda x, a: x + a).compile(fs.spec((4,), "float32"), fs.scalar("a", "float32"))
    with pytest.raises(ArgumentError, match="must be a number, got str"):
        f(np.zeros(4, np.float32), "1.5")


def test_ragged_list_input_is_an_argument_error():
    with pytest.raises(ArgumentError, match="argument 'x' is not a rectangular array"):
        inc([[1.0, 2.0], [3.0]])
    k = inc.compile(fs.spec(("N", 2), "float32"))
    with pytest.raises(ArgumentError, match="argument 'x' is not a rectangular array"):
        k([[1.0, 2.0], [3.0]])


THREADS, CALLS = 4, 25


def _hammer(call, shapes):
    """THREADS threads, each CALLS calls with its own rows; returns (calls, wrong, errors)."""
    tally = {"calls": 0, "wrong": 0, "errors": []}
    lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def worker(t):
        start.wait()
        for c in range(CALLS):
            rows = shapes[(t + c) % len(shapes)]
            a = np.full((rows, 64), float(t), np.float32) + np.arange(rows, dtype=np.float32)[:, None]
            try:
                got = call(a)
                ok = got.shape == a.shape and np.array_equal(got, np.abs(a) * 2 + 1)
            except Exception as exc:   # noqa: BLE001 - counted and reported
                with lock:
                    tally["errors"].append(repr(exc)[:200])
                ok = False
            with lock:
                tally["calls"] += 1
                tally["wrong"] += not ok

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)   # switch threads as often as possible: races show up in few calls
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(switch)
    return tally


@fs.fused_kernel
def sym(a):
    return fs.abs(a) * 2 + 1


def test_concurrent_calls_with_different_symbolic_sizes():
    k = sym.compile(fs.spec(("M", 64), "float32"))
    tally = _hammer(k, [1, 3, 17, 64, 255, 1000])
    assert tally["calls"] == THREADS * CALLS
    assert tally["wrong"] == 0, tally


def test_concurrent_simulate_with_different_symbolic_sizes():
    k = sym.compile(fs.spec(("M", 64), "float32"), target="ascend910b")
    k.simulate(np.ones((2, 64), np.float32))   # build once
    global CALLS
    saved, CALLS = CALLS, 12
    try:
        tally = _hammer(k.simulate, [1, 7, 40, 130])
    finally:
        CALLS = saved
    assert tally["calls"] == THREADS * 12
    assert tally["wrong"] == 0, tally


def test_sizes_needing_64_bit_offsets_are_rejected_clearly():
    """2**32 elements or more: a ScheduleError from the Python tiling (no struct.error) and a
    refusal from the printed C++ host tiling (no silent truncation); smaller sizes still run."""
    import ctypes

    from fusedsl.backend_ascendc import simulate as sim
    from fusedsl.errors import ScheduleError
    k = sym.compile(fs.spec(("M", "N"), "float32"), target="ascend910b")
    plan = k.kernels[0]
    with pytest.raises(ScheduleError, match=r"4294967296 elements .* need 64-bit offsets"):
        fs.compiler.compute_tiling(plan.schedule, {"M": 1 << 16, "N": 1 << 16}, k.target)
    k._set_sizes({"M": 1 << 16, "N": 1 << 16})   # what simulate does before it allocates anything
    with pytest.raises(ScheduleError, match="need 64-bit offsets"):
        sim.simulate(k, [np.empty((0, 0), np.float32)], {"M": 1 << 16, "N": 1 << 16})
    a = np.linspace(-1, 1, 3 * 5, dtype=np.float32).reshape(3, 5)
    np.testing.assert_array_equal(k.simulate(a), np.abs(a) * 2 + 1)   # the size error is per size
    lib = sim.library(k)._lib
    fn = getattr(lib, f"fusedsl_tiling_{plan.name}")
    fn.restype = ctypes.c_int
    buf = (ctypes.c_uint8 * 4096)()
    for sizes, rc in (((1 << 16, 1 << 16), 1), ((1 << 20, 1 << 12), 1), ((3, 5), 0), ((1 << 15, 1 << 16), 0)):
        assert fn((ctypes.c_int64 * 2)(*sizes), ctypes.c_uint32(40), ctypes.c_uint32(plan.schedule.ub_budget),
                  buf) == rc, sizes


def test_float32_sum_error_does_not_grow_with_the_row():
    """A float32 sum of 2**22 elements on the LLVM backend stays within numpy's (pairwise)
    accuracy: chunk sums are added with Kahan's compensation.  Summed straight into 64 lanes,
    2**22 copies of 0.1 were 259 off (6e-4 relative), numpy is 0.06 off."""
    x = np.full(2 ** 22, 0.1, np.float32)
    want = float(np.sum(x.astype(np.float64)))
    for fn, scale in ((lambda v: fs.sum(v, axis=-1), 1.0), (lambda v: fs.sum(v), 1.0),
                      (lambda v: fs.mean(v, axis=-1), 1.0 / x.size)):
        got = float(fs.fused_kernel(fn).compile(x)(x))
        assert abs(got - want * scale) <= 2e-7 * want * scale, (got, want * scale)
    r = np.random.default_rng(0).standard_normal((3, 2 ** 21)).astype(np.float32) + 1
    got = fs.fused_kernel(lambda v: fs.sum(v * 2, axis=-1)).compile(r)(r)
    want = (r.astype(np.float64) * 2).sum(-1)
    np.testing.assert_allclose(got, want, rtol=2e-7)
