"""Per-call overhead of small kernels: kernel(*arrays) (allocating) vs kernel(*arrays, out=y) vs numpy.

    python benchmarks/call_overhead.py

Medians of repeats measured in one run; each repeat times a loop of calls.
"""
import os
import statistics
import sys
import timeit

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import fusedsl as fs  # noqa: E402


@fs.fused_kernel
def abs_add_relu(a, b):
    return fs.relu(fs.abs(a) + b)


def median_us(fn, number=500, repeat=15) -> float:
    fn()
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main():
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
