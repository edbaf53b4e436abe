"""CPU backend benchmark: fusedsl's LLVM code against numpy, numexpr and numba, in one run.

    python benchmarks/cpu.py            # print the table
    python benchmarks/cpu.py --write    # ... and put it in benchmarks/RESULTS.md (## CPU backend)
    python benchmarks/cpu.py --quick    # fewer repetitions, smaller DRAM cases (a smoke test)

Rows (medians; GB/s counts each input and output array once, no write-allocate):
- triad a = b + s*c at the DRAM size of the seed: the bandwidth ceiling, from fusedsl's
  own LLVM code and from a numba parallel loop; the larger of the two is the ceiling;
- the seed relu(abs(a) + b), a[N] over b[M, N], at 192x128 f32 (a per-call case) and
  8192x8192 f32 and f16;
- the 6-op chain leaky_relu((x*s + t) * sigmoid(x) - x, 0.1) at 2^24 float32;
- per-call overhead at 192x128 and first-call latency (trace + schedule + JIT) of the chain.

Variants: `fusedsl` calls the kernel's executor (kernel_cpu.ScheduleCpu: its TileKernel through
llvm_kernel) directly with preallocated outputs (the backend alone), `fusedsl kernel()` goes through `kernel(*arrays, out=...)` with the llvm
executor (the user's path), `numpy` is eager numpy, `numexpr` and `numba` (a hand-fused
`@njit(parallel=True, fastmath=True)` loop with the same polynomial exp, on its
workqueue threading layer) are the references.
numexpr and numba have no float16 arithmetic, so those cells are empty.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

import llvmlite.binding as llvm
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import fusedsl as fs  # noqa: E402
from optimised_code import wait_for_optimised_code  # noqa: E402
from fusedsl.backend_cpu.kernel_cpu import ScheduleCpu  # noqa: E402
from fusedsl.backend_cpu.launch import host_threads  # noqa: E402
from fusedsl.passes.fuse import Fuse  # noqa: E402
from fusedsl.passes.pipeline import canonicalize  # noqa: E402
from fusedsl.lower.vector import compute_tiling, schedule_vector_kernel  # noqa: E402
from fusedsl.targets import get_target  # noqa: E402

try:
    import numexpr
except ImportError:      # the `bench` extra is optional
    numexpr = None
# numba's default OpenMP layer makes every parallel call here take ~8 ms (its idle
# workers sleep through a scheduler tick on this VM); the workqueue layer is its best.
os.environ.setdefault("NUMBA_THREADING_LAYER", "workqueue")
try:
    import numba
except ImportError:
    numba = None


# ---- kernels ------------------------------------------------------------------------------------
@fs.fused_kernel
def seed(a, b):
    return fs.relu(fs.abs(a) + b)


@fs.fused_kernel
def chain(x, s, t):
    return fs.leaky_relu((x * s + t) * fs.sigmoid(x) - x, 0.1)


@fs.fused_kernel
def triad(b, c, s):
    return b + c * s


class Backend:
    """The backend alone: the (single) vector kernel traced, fused, scheduled, tiled, compiled."""

    def __init__(self, kernel, *specs):
        module = Fuse().run(canonicalize(kernel.trace(*specs)))
        fn = module.functions[0]
        target = get_target("ascend910b")
        sched = schedule_vector_kernel(fn, target)
        self.kernel = ScheduleCpu(sched)
        self.tiling = compute_tiling(sched, {}, target)
        names = [p.value.name for p in module.main.params]
        self.order = [names.index(p.value.name) for p in fn.params]   # kernel params follow first use

    def bind(self, args, outs):
        return self.kernel.bind([args[i] for i in self.order], outs, self.tiling)

    def run_same(self, args, outs):
        """ScheduleCpu.run with the same arrays every call (its remembered binding)."""
        ordered = [args[i] for i in self.order]
        return lambda: self.kernel.run(ordered, outs, self.tiling)


# ---- numba references ------------------------------------------------------------------------------
def numba_kernels():
    if numba is None:
        return None
    from llvmlite import ir
    from numba import njit, prange
    from numba.core import types
    from numba.extending import intrinsic

    @intrinsic
    def as_float(typingctx, bits):
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.FloatType())
        return types.float32(types.int32), codegen

    f32, i32 = np.float32, np.int32

    @njit(inline="always", fastmath=True)
    def exp_poly(x):
        # the same Cephes polynomial and two-step scaling as fusedsl's inline exp
        x = min(max(x, f32(-104.0)), f32(89.0))
        n = np.rint(x * f32(1.4426950408889634))
        r = x - n * f32(0.693359375) - n * f32(-2.12194440e-4)
        p = f32(1.9875691500e-4)
        p = p * r + f32(1.3981999507e-3)
        p = p * r + f32(8.3334519073e-3)
        p = p * r + f32(4.1665795894e-2)
        p = p * r + f32(1.6666665459e-1)
        p = p * r + f32(5.0000001201e-1)
        p = p * (r * r) + r + f32(1.0)
        k = i32(n)
        k1 = k >> 1
        return p * as_float((k1 + 127) << 23) * as_float((k - k1 + 127) << 23)

    @njit(parallel=True, fastmath=True)
    def chain_nb(x, s, t, out):
        for i in prange(x.size):
            v = x[i]
            y = (v * s + t) * (f32(1.0) / (f32(1.0) + exp_poly(-v))) - v
            out[i] = y if y >= 0 else y * f32(0.1)

    @njit(parallel=True, fastmath=True)
    def seed_nb(a, b, out):
        rows, cols = b.shape
        for r in prange(rows):
            for c in range(cols):
                out[r, c] = max(abs(a[c]) + b[r, c], f32(0.0))

    @njit(parallel=True, fastmath=True)
    def triad_nb(b, c, s, out):
        for i in prange(b.size):
            out[i] = b[i] + c[i] * s

    return {"chain": chain_nb, "seed": seed_nb, "triad": triad_nb}


# ---- measurement -----------------------------------------------------------------------------------
def median_time(fn, repeat: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    wait_for_optimised_code()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


class Group:
    """Variants timed round-robin (one call of each per round), so that drift of a shared
    machine hits them alike and their ratios stay meaningful."""

    def __init__(self):
        self.entries = []      # (case, variant, fn, nbytes)

    def add(self, case, variant, fn, nbytes=None):
        fn()                   # warm up: first-touch pages, compile, bind
        self.entries.append((case, variant, fn, nbytes))

    def run(self, rounds: int) -> dict:
        wait_for_optimised_code()
        times = {(c, v): [] for c, v, _, _ in self.entries}
        for _ in range(rounds):
            for case, variant, fn, _ in self.entries:
                t0 = time.perf_counter()
                fn()
                times[(case, variant)].append(time.perf_counter() - t0)
        return {key: statistics.median(ts) for key, ts in times.items()}


class Table:
    def __init__(self):
        self.rows = []

    def add_group(self, group: Group, medians: dict, notes: dict | None = None):
        numpy_time = {c: medians[(c, v)] for c, v, _, _ in group.entries if v == "numpy eager"}
        for case, variant, _, nbytes in group.entries:
            seconds = medians[(case, variant)]
            self.add(case, variant, seconds, nbytes, numpy_time.get(case), (notes or {}).get((case, variant), ""))

    def seconds(self, case, variant) -> float:
        return next(r[2] for r in self.rows if r[0] == case and r[1] == variant)

    def add(self, case, variant, seconds, nbytes, numpy_seconds=None, note=""):
        gbs = nbytes / seconds / 1e9 if seconds and nbytes else None
        speedup = numpy_seconds / seconds if numpy_seconds and seconds else None
        self.rows.append((case, variant, seconds, gbs, speedup, note))
        print(self._line(self.rows[-1]), flush=True)

    @staticmethod
    def _line(row):
        case, variant, seconds, gbs, speedup, note = row
        t = "—" if seconds is None else (f"{seconds * 1e6:.1f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms")
        g = "" if gbs is None else f"{gbs:.1f}"
        sp = "" if speedup is None else f"{speedup:.1f}x"
        return f"| {case} | {variant} | {t} | {g} | {sp} | {note} |"

    def markdown(self) -> str:
        head = "| case | variant | median | GB/s | vs numpy | note |\n|---|---|---|---|---|---|\n"
        return head + "\n".join(self._line(r) for r in self.rows)


FS_BOUND = "fusedsl (ScheduleCpu, bound call)"
FS_USER = "fusedsl kernel(*arrays, out=)"


def user_call(kernel, args, out):
    """kernel(*args, out=out) through the llvm executor."""
    fs.config.executor = "llvm"
    return lambda: kernel(*args, out=out)


def seed_variants(group, nb, a, b, out, case):
    group.add(case, "numpy eager", lambda: np.maximum(np.abs(a) + b, 0, out=out), a.nbytes + b.nbytes + out.nbytes)
    nbytes = a.nbytes + b.nbytes + out.nbytes
    group.add(case, FS_BOUND, Backend(seed, a, b).bind([a, b], [out]), nbytes)
    group.add(case, FS_USER, user_call(seed, (a, b), out), nbytes)
    if numexpr is not None and out.dtype == np.float32:
        env = {"a": a, "b": b}
        group.add(case, "numexpr", lambda: numexpr.evaluate("where(abs(a) + b > 0, abs(a) + b, 0)",
                                                            local_dict=env, out=out), nbytes)
    if nb is not None and out.dtype == np.float32:
        group.add(case, "numba parallel", lambda: nb["seed"](a, b, out), nbytes)


def bench_dram(table, nb, big, rounds):
    """Triad and the DRAM-sized seeds in one round-robin, so '% of triad' compares like with like."""
    rng = np.random.default_rng(0)
    b = rng.standard_normal((big, big), dtype=np.float32)
    c = rng.standard_normal((big, big), dtype=np.float32)
    out = np.empty_like(b)
    a = rng.standard_normal(big, dtype=np.float32)
    b16, out16, a16 = b.astype(np.float16), np.empty(b.shape, np.float16), a.astype(np.float16)
    group = Group()
    tcase = f"triad {big}x{big} f32"
    flat_b, flat_c, flat_out = b.reshape(-1), c.reshape(-1), out.reshape(-1)
    group.add(tcase, "fusedsl (LLVM)", Backend(triad, flat_b, flat_c, fs.scalar("s")).bind(
        [flat_b, flat_c, 3.0], [flat_out]), 3 * b.nbytes)
    if nb is not None:
        group.add(tcase, "numba parallel", lambda: nb["triad"](flat_b, flat_c, np.float32(3.0), flat_out),
                  3 * b.nbytes)
    seed_variants(group, nb, a, b, out, f"seed {big}x{big} float32")
    seed_variants(group, nb, a16, b16, out16, f"seed {big}x{big} float16")
    medians = group.run(rounds)
    ceiling = max(3 * b.nbytes / medians[(tcase, v)] for v in ("fusedsl (LLVM)", "numba parallel")
                  if (tcase, v) in medians)
    notes = {(tcase, "fusedsl (LLVM)"): "ceiling = the faster triad"}
    for dtype, bb, aa, oo in (("float32", b, a, out), ("float16", b16, a16, out16)):
        case = f"seed {big}x{big} {dtype}"
        gbs = (aa.nbytes + bb.nbytes + oo.nbytes) / medians[(case, FS_BOUND)]
        notes[(case, FS_BOUND)] = f"{100 * gbs / ceiling:.0f} % of triad"
    np_f16 = medians[(f"seed {big}x{big} float16", "numpy eager")] / medians[(f"seed {big}x{big} float16", FS_BOUND)]
    notes[(f"seed {big}x{big} float16", FS_BOUND)] += f"; {np_f16:.0f}x numpy f16"
    table.add_group(group, medians, notes)
    return 100 * (b.nbytes * 2 + a.nbytes) / medians[(f"seed {big}x{big} float32", FS_BOUND)] / ceiling, np_f16


def bench_small_seed(table, nb, rounds):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(128, dtype=np.float32)
    b = rng.standard_normal((192, 128), dtype=np.float32)
    out = np.empty_like(b)
    group = Group()
    case = "seed 192x128 float32"
    seed_variants(group, nb, a, b, out, case)
    backend = Backend(seed, a, b)
    group.add(case, "fusedsl ScheduleCpu.run (same arrays)", backend.run_same([a, b], [out]))
    group.add(case, "numpy eager, allocating", lambda: np.maximum(np.abs(a) + b, 0))
    table.add_group(group, group.run(rounds), {(case, FS_BOUND): "per-call overhead: this row"})


def bench_chain(table, nb, n, rounds):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(n, dtype=np.float32) * 3
    out = np.empty_like(x)
    s, t = 1.5, -0.25
    nbytes = 2 * x.nbytes
    case = f"6-op chain 2^{n.bit_length() - 1} f32"

    def eager():
        v = (x * np.float32(s) + np.float32(t)) * (np.float32(1) / (np.float32(1) + np.exp(-x))) - x
        return np.where(v >= 0, v, v * np.float32(0.1))

    group = Group()
    group.add(case, "numpy eager", eager, nbytes)
    group.add(case, FS_BOUND, Backend(chain, x, fs.scalar("s"), fs.scalar("t")).bind([x, s, t], [out]), nbytes)
    group.add(case, FS_USER, user_call(chain, (x, s, t), out), nbytes)
    if numexpr is not None:
        env = {"x": x, "s": np.float32(s), "t": np.float32(t)}

        def ne():
            env["v"] = numexpr.evaluate("(x * s + t) * (1 / (1 + exp(-x))) - x", local_dict=env)
            numexpr.evaluate("where(v >= 0, v, v * 0.1)", local_dict=env, out=out)
        group.add(case, "numexpr", ne, nbytes)
    nb_variant = "numba parallel (hand-fused, poly exp)"
    if nb is not None:
        group.add(case, nb_variant, lambda: nb["chain"](x, np.float32(s), np.float32(t), out), nbytes)
    medians = group.run(rounds)
    notes = {}
    if nb is not None:
        notes[(case, FS_BOUND)] = f"fusedsl / numba = {medians[(case, FS_BOUND)] / medians[(case, nb_variant)]:.2f}"
    table.add_group(group, medians, notes)


FIRST_CALL = textwrap.dedent("""
    import time, numpy as np
    import fusedsl as fs
    fs.config.executor = "llvm"
    x = np.ones(4096, np.float32)
    t0 = time.perf_counter()
    @fs.fused_kernel
    def chain(x, s, t):
        return fs.leaky_relu((x * s + t) * fs.sigmoid(x) - x, 0.1)
    chain(x, 1.5, -0.25)
    print(time.perf_counter() - t0)
""")


def bench_first_call(table):
    """A fresh process per measurement (llvmlite's import included): an empty disk cache, then a warm one."""
    env = dict(os.environ, FUSEDSL_EXECUTOR="llvm",
               PYTHONPATH=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    case = "first call, 6-op chain (trace+schedule+JIT+run 4096)"
    with tempfile.TemporaryDirectory() as cache:
        env["FUSEDSL_CACHE_DIR"] = cache
        for label, warm in (("cold: empty disk cache", False), ("warm disk cache, new process", True)):
            times = []
            for _ in range(3):
                if not warm:
                    for root, _, files in os.walk(cache):
                        for f in files:
                            os.unlink(os.path.join(root, f))
                proc = subprocess.run([sys.executable, "-c", FIRST_CALL], env=env, capture_output=True, text=True)
                if proc.returncode != 0:
                    raise RuntimeError(proc.stderr)
                times.append(float(proc.stdout.strip().splitlines()[-1]))
            table.add(case, label, statistics.median(times), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="write the table into benchmarks/RESULTS.md")
    parser.add_argument("--quick", action="store_true", help="small sizes, few repetitions")
    opts = parser.parse_args()
    rounds = 5 if opts.quick else 15
    big = 2048 if opts.quick else 8192
    chain_n = 1 << (20 if opts.quick else 24)

    print(f"host: {host_threads()} threads, numpy {np.__version__}, numexpr "
          f"{getattr(numexpr, '__version__', 'missing')}, numba {getattr(numba, '__version__', 'missing')}")
    table = Table()
    nb = numba_kernels()
    seed_pct, f16_speedup = bench_dram(table, nb, big, rounds)
    bench_chain(table, nb, chain_n, rounds)
    bench_small_seed(table, nb, 2001 if opts.quick else 20001)
    bench_first_call(table)
    goals = goal_lines(table, nb is not None, chain_n, seed_pct, f16_speedup)
    print("\n".join(goals))

    if opts.write:
        command = "python benchmarks/cpu.py --write" + (" --quick" if opts.quick else "")
        write_results(table.markdown() + "\n\nGoals of issue 4, from this run:\n\n" + "\n".join(goals), command)


def goal_lines(table: Table, have_numba: bool, chain_n: int, seed_pct: float, f16_speedup: float) -> list[str]:
    chain_case = f"6-op chain 2^{chain_n.bit_length() - 1} f32"
    t_chain = table.seconds(chain_case, FS_BOUND)
    small = "seed 192x128 float32"
    first = table.seconds("first call, 6-op chain (trace+schedule+JIT+run 4096)", "cold: empty disk cache")
    checks = [
        (f"6-op chain >= 25x numpy eager: {table.seconds(chain_case, 'numpy eager') / t_chain:.1f}x",
         table.seconds(chain_case, "numpy eager") / t_chain >= 25),
        (f"DRAM seed f32 >= 80 % of triad GB/s: {seed_pct:.0f} %", seed_pct >= 80),
        (f"seed f16 >= 50x numpy f16: {f16_speedup:.0f}x", f16_speedup >= 50),
        (f"per call at 192x128 < 10 µs: bound call {table.seconds(small, FS_BOUND) * 1e6:.1f} µs, "
         f"ScheduleCpu.run {table.seconds(small, 'fusedsl ScheduleCpu.run (same arrays)') * 1e6:.1f} µs",
         table.seconds(small, "fusedsl ScheduleCpu.run (same arrays)") < 10e-6),
        (f"per call through kernel(*arrays, out=) < 10 µs: {table.seconds(small, FS_USER) * 1e6:.1f} µs",
         table.seconds(small, FS_USER) < 10e-6),
        (f"first call < 150 ms: {first * 1e3:.0f} ms", first < 0.150),
    ]
    if have_numba:
        ratio = t_chain / table.seconds(chain_case, "numba parallel (hand-fused, poly exp)")
        checks.insert(1, (f"6-op chain within 1.2x of hand-fused numba: {ratio:.2f}x its time", ratio <= 1.2))
    return [f"- {'met' if ok else 'NOT met'}: {text}" for text, ok in checks]


def write_results(markdown: str, command: str) -> None:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md")
    text = open(path, encoding="utf-8").read() if os.path.exists(path) else "# Benchmark results\n"
    host = (f"host CPU {llvm.get_host_cpu_name()}, {host_threads()} threads; numpy {np.__version__}, numexpr "
            f"{getattr(numexpr, '__version__', '-')}, numba {getattr(numba, '__version__', '-')} (workqueue layer)")
    section = (f"## CPU backend\n\nCommand: `{command}` ({host}; medians of one run on a shared machine: "
               f"compare ratios within the table).\n\n{markdown}\n")
    pattern = re.compile(r"## CPU backend\n.*?(?=\n## |\Z)", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: section.rstrip("\n") + "\n", text)
        text = text.rstrip("\n") + "\n"
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
