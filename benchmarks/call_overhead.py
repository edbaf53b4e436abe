"""Per-call overhead of small kernels: kernel(*arrays) (allocating) vs kernel(*arrays, out=y) vs numpy,
then calls on tiny reductions vs torch eager (issue 21 item 7: cost <= 1.5x torch eager's).

    python benchmarks/call_overhead.py [--tiny-only]

Medians of repeats measured in one run; each repeat times a loop of calls. The tiny-call table
interleaves the two libraries (fusedsl, then torch, per round) and gives best and median of the
rounds: on a shared host the best is the call's own cost, the median what the load left of it.
"""
import os
import statistics
import sys
import timeit

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import fusedsl as fs  # noqa: E402
from optimised_code import wait_for_optimised_code  # noqa: E402


@fs.fused_kernel
def abs_add_relu(a, b):
    return fs.relu(fs.abs(a) + b)


def median_us(fn, number=500, repeat=15) -> float:
    fn()
    wait_for_optimised_code()
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def tiny_calls(rounds=9, number=300):
    try:
        import torch
    except ImportError:
        print("torch not installed: no tiny-call table")
        return
    torch.set_num_threads(1)   # its 2-thread pool waits multi-ms on a loaded host
    rng = np.random.default_rng(0)
    print("| tiny call (f32) | fusedsl best / median | torch eager best / median | cost vs torch (median) |")
    print("|---|---|---|---|")
    for shape, axis in (((16,), -1), ((16, 16), -1), ((16, 16), 0), ((256, 512), -1)):
        x = rng.standard_normal(shape).astype(np.float32)
        k = fs.fused_kernel(lambda a: fs.sum(a, axis=-1)) if axis == -1 else fs.fused_kernel(lambda a: fs.sum(a, axis=0))
        tx = torch.from_numpy(x)
        k(x)
        tx.sum(axis)
        wait_for_optimised_code()
        ours, theirs = [], []
        for _ in range(rounds):
            ours.append(timeit.timeit(lambda: k(x), number=number) / number * 1e6)
            theirs.append(timeit.timeit(lambda: tx.sum(axis), number=number) / number * 1e6)
        mo, mt = statistics.median(ours), statistics.median(theirs)
        print(f"| sum {list(shape)} axis {axis} | {min(ours):.2f} / {mo:.2f} us | {min(theirs):.2f} / {mt:.2f} us | "
              f"{mo / mt:.2f}x |")


def main():
    if "--tiny-only" in sys.argv[1:]:
        return tiny_calls()
    tiny_calls()
    print()
    print("| case | fusedsl kernel(*arrays) | fusedsl kernel(*arrays, out=y) | allocating / out= | numpy eager |")
    print("|---|---|---|---|---|")
    for rows, cols in ((192, 128), (1024, 1024)):
        rng = np.random.default_rng(0)
        a = rng.standard_normal(cols).astype(np.float32)
        b = rng.standard_normal((rows, cols)).astype(np.float32)
        y = abs_add_relu(a, b)
        number = 500 if rows * cols < 1 << 16 else 50
        alloc = median_us(lambda: abs_add_relu(a, b), number)
        into = median_us(lambda: abs_add_relu(a, b, out=y), number)
        ref = median_us(lambda: np.maximum(np.abs(a) + b, 0), number)
        print(f"| seed {rows}x{cols} f32 | {alloc:.1f} µs | {into:.1f} µs | {alloc / into:.2f}x | {ref:.1f} µs |")


if __name__ == "__main__":
    main()
