"""Integer matmul / conv2d on the CPU: fusedsl's exact BLAS products (backend_cpu/int_product.py)
against numpy's integer matmul (a plain loop) and torch's, all bit-identical (checked here).

    PYTHONPATH=. python benchmarks/int_cube.py [--quick]

Best of repeated calls, wall time (the host is shared: the best run is the one least disturbed
by other tenants; CPU time would count OpenBLAS's idle threads spinning).  torch runs single-threaded (torch.set_num_threads(1)) like fusedsl's cube kernels'
BLAS calls below the parallel threshold; numpy's integer matmul is single-threaded anyway.
"""
from __future__ import annotations

import sys
import time

import numpy as np

import fusedsl as fs

try:
    import torch
    torch.set_num_threads(1)
except ImportError:   # torch is an extra
    torch = None


def _time(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _values(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def matmul_cases(quick):
    sizes = [(64, 64, 64), (256, 256, 256), (512, 512, 512)] + ([] if quick else [(1024, 1024, 1024)])
    for dtype in (np.int8, np.uint8, np.int32):
        for m, k, n in sizes:
            yield f"matmul {np.dtype(dtype).name} {m}x{k}x{n}", dtype, (m, k), (k, n)


def conv_cases(quick):
    yield "conv2d int8 N4 C32 28x28 K32 3x3 pad 1", np.int8, (4, 32, 28, 28), (32, 32, 3, 3)
    if not quick:
        yield "conv2d int32 N4 C32 28x28 K32 3x3 pad 1", np.int32, (4, 32, 28, 28), (32, 32, 3, 3)


def main(quick=False):
    rng = np.random.default_rng(0)
    rows = []
    mm = fs.fused_kernel(lambda a, b: a @ b)
    for name, dtype, sa, sb in matmul_cases(quick):
        a, b = _values(rng, sa, dtype), _values(rng, sb, dtype)
        want = np.matmul(a, b)
        assert np.array_equal(mm(a, b), want), name
        repeat = 3 if sa[0] >= 512 else 10
        t_fs = _time(lambda: mm(a, b), repeat)
        t_np = _time(lambda: np.matmul(a, b), max(1, repeat // 3) if sa[0] >= 512 else repeat)
        t_th = None
        if torch is not None:
            ta, tb = torch.from_numpy(a), torch.from_numpy(b)
            assert np.array_equal((ta @ tb).numpy(), want), name
            t_th = _time(lambda: ta @ tb, max(1, repeat // 3) if sa[0] >= 512 else repeat)
        rows.append((name, t_fs, t_np, t_th))
    for name, dtype, sx, sw in conv_cases(quick):
        x, w = _values(rng, sx, dtype), _values(rng, sw, dtype)
        conv = fs.fused_kernel(lambda x, w: fs.conv2d(x, w, padding=1))
        got = conv(x, w)
        t_fs = _time(lambda: conv(x, w), 5)
        t_th = None
        if torch is not None:
            tx, tw = torch.from_numpy(x), torch.from_numpy(w)
            want = torch.nn.functional.conv2d(tx, tw, padding=1).numpy()
            assert np.array_equal(got, want), name
            t_th = _time(lambda: torch.nn.functional.conv2d(tx, tw, padding=1), 3)
        rows.append((name, t_fs, None, t_th))
    print("| workload | fusedsl | numpy | torch | vs numpy | vs torch |")
    print("|---|---|---|---|---|---|")
    for name, t_fs, t_np, t_th in rows:
        ms = lambda t: "-" if t is None else f"{t * 1e3:.2f} ms"   # noqa: E731
        ratio = lambda t: "-" if t is None else f"{t / t_fs:.1f}x"   # noqa: E731
        print(f"| {name} | {ms(t_fs)} | {ms(t_np)} | {ms(t_th)} | {ratio(t_np)} | {ratio(t_th)} |")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
