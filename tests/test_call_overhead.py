"""The lean call path: recycled result buffers never alias a live result; import stays fast."""
import subprocess
import sys
import time

import numpy as np

import fusedsl as fs


@fs.fused_kernel
def abs_add_relu(a, b):
    return fs.relu(fs.abs(a) + b)


def _args():
    rng = np.random.default_rng(0)
    return rng.standard_normal(128).astype(np.float32), rng.standard_normal((192, 128)).astype(np.float32)


def _expected(a, b):
    return np.maximum(np.abs(a) + b, 0)


def test_results_held_by_the_caller_are_never_reused():
    a, b = _args()
    held = [abs_add_relu(a, b) for _ in range(8)]          # more than the pool keeps
    assert len({r.ctypes.data for r in held}) == len(held)
    for r in held:
        np.testing.assert_array_equal(r, _expected(a, b))
    view = abs_add_relu(a, b)[3:5]                          # a view keeps its buffer alive
    other = abs_add_relu(a, -b)
    assert not np.shares_memory(view, other)
    np.testing.assert_array_equal(view, _expected(a, b)[3:5])
    np.testing.assert_array_equal(other, _expected(a, -b))


def test_a_result_passed_back_as_input_is_not_overwritten():
    a, b = _args()
    y = abs_add_relu(a, b)
    before = y.copy()
    z = abs_add_relu(a, y)
    assert not np.shares_memory(y, z)
    np.testing.assert_array_equal(y, before)
    np.testing.assert_array_equal(z, _expected(a, before))
    w = abs_add_relu(a, abs_add_relu(a, b))                # a temporary input
    np.testing.assert_array_equal(w, _expected(a, _expected(a, b)))


def test_concurrent_callers_get_their_own_buffers():
    from concurrent.futures import ThreadPoolExecutor
    a, b = _args()

    def work(i):
        bi = b + i
        return all(np.array_equal(abs_add_relu(a, bi), _expected(a, bi)) for _ in range(50))
    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(8)))


def test_dropped_results_are_recycled_and_calls_stay_lean():
    a, b = _args()
    first = abs_add_relu(a, b)
    address = first.ctypes.data
    del first
    assert abs_add_relu(a, b).ctypes.data == address       # no fresh, page-faulting buffer
    y = np.empty((192, 128), np.float32)

    def best(fn, n=200):
        times = []
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(n):
                fn()
            times.append(time.perf_counter() - t)
        return min(times) / n

    alloc = best(lambda: abs_add_relu(a, b))
    into = best(lambda: abs_add_relu(a, b, out=y))
    # the bar is 1.3x (measured ~1.1x); slack for a loaded shared machine
    assert alloc <= 1.6 * into, (alloc * 1e6, into * 1e6)


def test_import_is_fast_and_lazy():
    code = ("import time, sys; t = time.perf_counter(); import fusedsl; "
            "print(time.perf_counter() - t); print(int('lark' in sys.modules), int('fusedsl.compiler' in sys.modules))")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
            for _ in range(3)]
    assert min(float(r[0]) for r in runs) < 0.6     # 0.3 s target on an idle machine; CI is shared
    assert runs[0][1:] == ["0", "0"]                # parser and compiler load on first use
    assert callable(fs.parse_ir) and fs.config.executor in ("llvm", "reference")
    assert "CompiledKernel" in dir(fs)
