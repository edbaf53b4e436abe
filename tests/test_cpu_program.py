"""A multi-kernel program run as bound native calls over kept buffers (backend_cpu/program.py):
the same results as the numpy reference on every call, whatever the caller does between calls
(new arrays, the same arrays with new values, results held or dropped, runtime scalars)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, strategies as st

import fusedsl as fs
from fusedsl.backend_cpu.program import Program

from conftest import fuzz_settings


def _prog(x, w, c):
    y = fs.relu(x @ w)                          # a cube kernel
    t = fs.transpose(y, (1, 0))                 # a lone transpose [12, 6]
    pad = fs.zeros_like(t[:2]) + fs.arange(6)   # reads no parameter: computed once
    z = fs.concatenate([t, pad], axis=0)        # a view kernel [14, 6]
    s = fs.sum(z * c, axis=1)                   # a row kernel with a runtime scalar
    t1 = fs.transpose(fs.reshape(s, (14, 1)), (1, 0))   # moves a size-1 axis only: a view
    return fs.reshape(z * 2.0, (-1,)), s, fs.reshape(s, (2, 7)), t1 + 1.0


def _want(x, w, c):
    t = np.maximum(x @ w, 0).T
    z = np.concatenate([t, np.broadcast_to(np.arange(6, dtype=np.float32), (2, 6))], axis=0)
    s = (z * np.float32(c)).sum(axis=1)
    return (z * 2).reshape(-1), s, s.reshape(2, 7), s.reshape(1, 14) + 1


def _check(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-5)


def test_program_calls_against_numpy_and_the_reference():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 10)).astype(np.float32)
    w = rng.standard_normal((10, 12)).astype(np.float32)
    k = fs.fused_kernel(_prog).compile(x, w, fs.scalar("c"))
    assert len(k.kernels) >= 4
    first = k(x, w, 1.5)
    assert isinstance(k._program, Program)          # the multi-kernel program runs bound
    _check(first, _want(x, w, 1.5))
    fs.config.executor = "reference"
    try:
        ref = k(x, w, 1.5)
    finally:
        fs.config.executor = "llvm"
    for g, r in zip(first, ref):
        np.testing.assert_allclose(g, r, rtol=1e-6, atol=1e-6)
    held = k(x, w, 2.5)                             # a new scalar: the row kernel reads it
    _check(held, _want(x, w, 2.5))
    _check(first, _want(x, w, 1.5))                 # held results are never written again
    assert held[1].ctypes.data != first[1].ctypes.data
    x[0, :] += 3.0                                  # the same arrays, new values
    _check(k(x, w, 2.5), _want(x, w, 2.5))
    x2, w2 = x.copy() * -1, w[:, ::-1].copy()       # new arrays
    _check(k(x2, w2, 0.5), _want(x2, w2, 0.5))
    del first, held
    a = k(x, w, 1.0)
    address = a[0].ctypes.data
    _check(a, _want(x, w, 1.0))
    del a
    b = k(x, w, 1.0)                                # dropped: the buffer is reused
    assert b[0].ctypes.data == address
    _check(b, _want(x, w, 1.0))
    views = b[1], b[2]                              # two results viewing one kernel result
    assert np.shares_memory(*views)
    out = tuple(np.empty(r.shape, np.float32) for r in b)
    got = k(x, w, 1.0, out=out)                     # out= still goes through main's walk
    assert all(g is o for g, o in zip(got, out))
    _check(got, _want(x, w, 1.0))


def test_program_errors_leave_it_usable():
    @fs.fused_kernel
    def f(t, i):
        return fs.take(fs.relu(t) * 2.0, i, axis=0) + 1.0

    table = np.arange(12, dtype=np.float32).reshape(4, 3) - 5
    good = np.array([3, 0], np.int32)
    np.testing.assert_array_equal(f(table, good), np.maximum(table, 0)[good] * 2 + 1)
    bad = np.array([4, 0], np.int32)
    try:
        f(table, bad)
    except fs.FusedslError as exc:
        assert "4" in str(exc)
    else:
        raise AssertionError("an index out of range was not refused")
    good[0] = 1                                     # the same array, a new index
    np.testing.assert_array_equal(f(table, good), np.maximum(table, 0)[good] * 2 + 1)


def test_bound_cube_kernels_match_the_reference():
    """Cube kernels in a program: the product into kept buffers (a conv's sgemms in one native
    call, per tap or gathered), the elementwise epilogue as one vector kernel; plain products
    straight into the result."""
    from fusedsl.ir.ops import conv2d_reference
    rng = np.random.default_rng(3)
    for (n, c, h, w_, k, stride, pad) in [(2, 6, 9, 11, 4, 1, 1),    # C >= K: one sgemm per tap
                                          (2, 3, 9, 11, 5, 1, 0),    # C < K: gathered windows
                                          (1, 4, 10, 7, 6, 2, 1)]:   # strided
        x = rng.standard_normal((n, c, h, w_)).astype(np.float32)
        w = rng.standard_normal((k, c, 3, 3)).astype(np.float32)
        b = rng.standard_normal(k).astype(np.float32)
        y = conv2d_reference(x.astype(np.float64), w.astype(np.float64), (stride,) * 2, (pad,) * 2)
        plain = fs.fused_kernel(lambda x, w: fs.conv2d(x, w, stride=stride, padding=pad))
        act = fs.fused_kernel(lambda x, w, b: fs.gelu_erf(fs.conv2d(x, w, b, stride=stride, padding=pad) * 0.5))
        for _ in range(2):   # bound once, called again
            np.testing.assert_allclose(plain(x, w), y, rtol=1e-4, atol=1e-4)
            z = (y + b[None, :, None, None]) * 0.5
            want = 0.5 * z * (1 + np.vectorize(__import__("math").erf)(z / np.sqrt(2)))
            np.testing.assert_allclose(act(x, w, b), want, rtol=1e-4, atol=1e-4)
            x *= -1
            y = -y
    a = rng.standard_normal((3, 5, 7)).astype(np.float32)
    m = rng.standard_normal((7, 4)).astype(np.float32)
    mm = fs.fused_kernel(lambda a, m: fs.relu(a @ m) - 1.0)
    for _ in range(2):
        np.testing.assert_allclose(mm(a, m), np.maximum(a @ m, 0) - 1, rtol=1e-5, atol=1e-5)
        a += 1.0


def test_a_refused_index_while_binding_leaves_the_program_rebindable():
    @fs.fused_kernel
    def f(t, i, u):
        return fs.take(fs.relu(t) * 2.0, i, axis=0) + fs.sum(u, axis=1, keepdims=True)

    table = np.arange(12, dtype=np.float32).reshape(4, 3) - 5
    u = np.ones((2, 3), np.float32)
    bad = np.array([4, 0], np.int32)
    for _ in range(2):   # refused while the program binds its steps the first time, then again
        try:
            f(table, bad, u)
        except fs.FusedslError as exc:
            assert "out of range" in str(exc)
        else:
            raise AssertionError("an index out of range was not refused")
    good = np.array([3, 0], np.int32)
    np.testing.assert_array_equal(f(table, good, u), np.maximum(table, 0)[good] * 2 + 3)
    bad[0] = 2   # the refused array, now in range: looked up again
    np.testing.assert_array_equal(f(table, bad, u), np.maximum(table, 0)[bad] * 2 + 3)


def test_results_the_caller_holds_are_never_handed_out_again():
    """The last kernel writes the result buffer: a held result keeps its values."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((8, 5)).astype(np.float32)
    w = rng.standard_normal((5, 6)).astype(np.float32)
    k = fs.fused_kernel(lambda x, w: fs.sum(fs.transpose(fs.relu(x @ w), (1, 0)), axis=0))
    held = []
    for i in range(6):
        held.append(k(x + i, w))
    assert isinstance(next(iter(k._cache.values()))._program, Program)
    assert len({r.ctypes.data for r in held}) == len(held)
    for i, r in enumerate(held):
        np.testing.assert_allclose(r, np.maximum((x + i) @ w, 0).T.sum(axis=0), rtol=1e-5, atol=1e-5)


def test_a_small_bound_matmul_keeps_its_result_buffer_alive():
    """A small matmul bound as one native sgemm call read its output's address once: when the
    caller dropped the result the program handed out, the buffer was freed and the next call
    wrote into freed memory (numpy's next allocation aborted the process). The bound call now
    holds its output like the np.matmul it replaced."""
    def f(x, w1, w2, w3):
        h = fs.relu(x @ w1)
        return x @ h, fs.softmax(x @ w3)

    x = np.eye(16, dtype=np.float32)
    w = [np.full((16, 16), 0.1, np.float32) for _ in range(3)]
    k = fs.fused_kernel(f).compile(x, *w)
    for i in range(20):
        y, p = k(x * (i + 1), *w)   # dropped at the next iteration
        np.testing.assert_allclose(y, (x * (i + 1)) @ np.maximum((x * (i + 1)) @ w[0], 0), rtol=1e-5)
        np.testing.assert_allclose(p.sum(axis=-1), np.ones(16), rtol=1e-5)
        _ = [np.ones(257, np.float32) * j for j in range(8)]   # reuse the freed memory


def test_small_parameters_passed_as_new_arrays_are_staged_and_stay_correct():
    """A small parameter that arrives as a new array on every call is copied into a kept buffer
    (program.STAGE_BYTES) instead of rebinding the steps that read it; results stay numpy's
    whatever the caller does next (new arrays, the staged array's last object changed in place,
    a large parameter that is never staged)."""
    from fusedsl.backend_cpu import program
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 10)).astype(np.float32)
    w = rng.standard_normal((10, 12)).astype(np.float32)

    def prog(a, b):
        y = fs.relu(a @ b)
        return fs.concatenate([y, fs.reshape(a, (5, 12))], axis=0), fs.sum(a * 2.0, axis=1)

    def want(a, b):
        return np.concatenate([np.maximum(a @ b, 0), a.reshape(5, 12)], axis=0), (a * 2).sum(axis=1)

    k = fs.fused_kernel(prog)
    compiled = k.compile(x, w)
    for step in range(4):
        x_new = (x + step).copy()                    # a new array every call
        _check(k(x_new, w), want(x_new, w))
    assert 0 in compiled._program._staged and 1 not in compiled._program._staged   # w is the same object
    rebinds = []
    original = compiled._program._rebind
    compiled._program._rebind = lambda: (rebinds.append(1), original())[1]
    x_new = x * 3
    _check(k(x_new, w), want(x_new, w))
    assert not rebinds                                # a staged parameter's new array: a copy only
    x_new[1, :] = -4.0                                # the same object, new values
    _check(k(x_new, w), want(x_new, w))
    w2 = w[:, ::-1].copy()                            # the unstaged parameter: rebound
    _check(k(x_new, w2), want(x_new, w2))
    assert rebinds
    big = rng.standard_normal((program.STAGE_BYTES // 4 + 1,)).astype(np.float32)
    kb = fs.fused_kernel(lambda a: fs.relu(a) * 2.0 + fs.sum(a))
    for step in range(4):
        arr = big - step
        np.testing.assert_allclose(kb(arr), np.maximum(arr, 0) * 2 + arr.sum(dtype=np.float32), rtol=1e-5, atol=1e-2)
    assert not kb.compile(big)._program._staged


@given(st.lists(st.sampled_from(["relu", "sum_rows", "transpose", "concat", "mul"]), min_size=2, max_size=7),
       st.integers(1, 5), st.integers(1, 9))
@fuzz_settings(0.04)
def test_consecutive_native_kernels_run_as_one_foreign_call(chain, rows, cols):
    """Unfused (opt_level=0) chains of vector, row, view and transpose kernels: runs of serial
    kernel calls become one native call list (calls.py), and every call agrees with numpy,
    also after the arguments' values change in place."""
    def build(lib, x, y):
        for name in chain:
            if name == "relu":
                x = lib.maximum(x, 0.0) if lib is np else fs.relu(x)
            elif name == "sum_rows":
                x = x + (x.sum(axis=1, keepdims=True) if lib is np else fs.sum(x, axis=1, keepdims=True))
            elif name == "transpose":
                x = (x.T if lib is np else fs.transpose(x, (1, 0))) * 1.0
                x = x.T if lib is np else fs.transpose(x, (1, 0))
            elif name == "concat":
                x = lib.concatenate([x[:, 1:], x[:, :1]], axis=1)
            else:
                x = x * y
        return x

    rng = np.random.default_rng(rows * 10 + cols)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    y = rng.standard_normal((rows, cols)).astype(np.float32)
    k = fs.fused_kernel(lambda a, b: build(fs, a, b), opt_level=0)
    for _ in range(2):
        got, want = k(x, y), build(np, x, y)
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-5 * (1 + np.abs(want).max()))
        x += 1.0                                   # the same arrays, new values
    compiled = list(k._cache.values())[-1]
    program = compiled._program
    if rows == 1 or cols == 1:   # size-1 transposes are views: main may be no program at all
        return
    assert isinstance(program, Program)
    lists = [c for c in program._calls if hasattr(c, "calls")]
    native = [s for s in program._steps if getattr(s.call, "native", None) is not None]
    grouped = sum(len(c.calls) for c in lists)
    assert grouped <= len(native) and len(program._calls) == len(program._steps) - grouped + len(lists)
    if len(native) == len(program._steps) >= 2:    # all serial kernels: one foreign call in all
        assert len(program._calls) == 1 and lists
