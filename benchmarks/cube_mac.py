"""Throughput of the CPU Ascend C API's cube multiply-accumulate (fusedsl_cpu/cube_mac.h): the portable
four-row loop (`AccumulatePart`, what Mmad and the Matmul API ran before the blocked kernels) against
`AccumulateRows` (8 x 32 AVX-512 / 4 x 16 AVX2 register blocks where the CPU has them), on float tiles
of the shapes the cube samples use, checking that both give the same bits.

    python benchmarks/cube_mac.py [--repeats 9] [--force plain|avx2]

One g++ -O1 build (as the ASC driver builds sample trees); each repeat times both loops back to back on
the same inputs (a shared, loaded machine: both see the same load); the table gives the medians of CPU
seconds (clock()) as GFLOP/s and their ratio.  `--force` sets FUSEDSL_CPU_MAC for the blocked side.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from fusedsl.backend_ascendc.cpu import include_dir  # noqa: E402

# (tm, k, tn): a Matmul base tile over a long K (matmul_high_performance's 128 x 8192 x 256 cut to K 2048),
# an Mmad of one L0 ping-pong buffer (matmul_basic_api_high_performance), a tile with row and column tails
SHAPES = [(128, 2048, 256), (128, 64, 256), (100, 96, 200)]

PROGRAM = r"""
#include "fusedsl_cpu/cube_mac.h"
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>
int main(int argc, char** argv) {
    const long m = std::atol(argv[1]), k = std::atol(argv[2]), n = std::atol(argv[3]), reps = std::atol(argv[4]);
    std::vector<float> a(m * k), b(k * n), c0(m * n), c1(m * n);
    unsigned s = 7;
    for (auto* v : {&a, &b}) {
        for (float& x : *v) {
            s = s * 1103515245u + 12345u;
            x = static_cast<float>(static_cast<int>(s >> 8) % 2001 - 1000) / 997.0f;
        }
    }
    std::clock_t t0 = std::clock();
    for (long r = 0; r < reps; ++r) fusedsl_cpu::AccumulatePart(c0.data(), a.data(), b.data(), 0, m, 0, n, k, n);
    std::clock_t t1 = std::clock();
    for (long r = 0; r < reps; ++r) fusedsl_cpu::AccumulateRows(c1.data(), a.data(), b.data(), m, k, n);
    std::clock_t t2 = std::clock();
    std::printf("%d %.6f %.6f %d\n", fusedsl_cpu::MacLevel(), double(t1 - t0) / CLOCKS_PER_SEC,
                double(t2 - t1) / CLOCKS_PER_SEC, c0 == c1);
}
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--force", default="", help="FUSEDSL_CPU_MAC for the run (plain, avx2)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fusedsl-mac-") as tmp:
        src, exe = os.path.join(tmp, "mac.cpp"), os.path.join(tmp, "mac")
        with open(src, "w") as f:
            f.write(PROGRAM)
        subprocess.run(["g++", "-std=c++17", "-O1", f"-I{include_dir()}", src, "-o", exe], check=True)
        env = dict(os.environ, FUSEDSL_CPU_MAC=args.force)
        print(f"{'tm x k x tn':>18}  {'level':>5}  {'plain GFLOP/s':>13}  {'blocked GFLOP/s':>15}  {'ratio':>5}  same bits")
        for m, k, n in SHAPES:
            reps = max(1, int(4e8 // (m * k * n)))
            plain, blocked, same, level = [], [], True, 0
            for _ in range(args.repeats):
                out = subprocess.run([exe, str(m), str(k), str(n), str(reps)], env=env, capture_output=True,
                                     text=True, check=True).stdout.split()
                level, same = int(out[0]), same and out[3] == "1"
                plain.append(float(out[1]))
                blocked.append(float(out[2]))
            flops = 2.0 * m * k * n * reps
            p, b = statistics.median(plain), statistics.median(blocked)
            print(f"{f'{m} x {k} x {n}':>18}  {level:>5}  {flops / p / 1e9:>13.1f}  {flops / b / 1e9:>15.1f}  "
                  f"{p / b:>5.2f}  {same}")


if __name__ == "__main__":
    main()
