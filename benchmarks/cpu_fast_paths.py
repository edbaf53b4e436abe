"""CPU fast paths (issue 21 item 7): transposes, views, 16-bit matmuls and tiny calls vs torch.

    python benchmarks/cpu_fast_paths.py [--repeat N] [--no-compile] [--only transpose,views,matmul,tiny]
    python benchmarks/cpu_fast_paths.py --interleaved [--rounds N] [--only transpose,matmul]

Everything in one run on this machine, each figure the median of `repeat` repeats (each repeat
times a loop of calls long enough for the timer), with the spread (min..max of the repeats).
Columns: fusedsl's public call `kernel(*arrays)`, torch eager, torch.compile (inductor, where
it applies) and, for the transpose, a plain memory copy of the same bytes (np.copyto), the
bandwidth reference the goal is stated in.  Ratios are speeds: > 1 means fusedsl is faster.

--interleaved: on a shared host the table's columns are timed minutes apart; this mode
alternates the compared calls round by round in one process and reports medians of the
rounds: for the transposes fusedsl and the memory copy, by CPU time (this process's, every
thread's: what the call costs, whatever else holds the cores) and wall time; for the 16-bit
matmuls fusedsl and torch eager, by wall time (both may use every core).

Goals (issue 21 item 7):
  - transpose / permute: >= 0.8x a memory copy's bandwidth at [1024, 4096] f32;
  - reshape / squeeze / unsqueeze: a numpy view, like numpy (and torch eager) return;
  - float16 / bfloat16 matmul: >= 0.8x torch eager's speed;
  - calls on tiny inputs: cost <= 1.5x torch eager's (speed >= 0.67x).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import fusedsl as fs  # noqa: E402
from fusedsl.dtypes import to_dtype  # noqa: E402

try:
    import torch
except ImportError:   # the table then has fusedsl and numpy only
    torch = None


def timed(fn, repeat: int, min_s: float = 0.02) -> list[float]:
    """Seconds per call for each repeat; one repeat runs enough calls to last `min_s`."""
    fn()
    number = 1
    while True:
        t = time.perf_counter()
        for _ in range(number):
            fn()
        dt = time.perf_counter() - t
        if dt >= min_s or number >= 1 << 18:
            break
        number *= max(2, min(10, int(min_s / max(dt, 1e-9)) + 1))
    out = [dt / number]
    for _ in range(repeat - 1):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        out.append((time.perf_counter() - t) / number)
    return out


def fmt(times) -> str:
    med = statistics.median(times)
    unit, scale = ("ms", 1e3) if med >= 1e-3 else ("us", 1e6)
    return f"{med * scale:.3g} {unit} ({min(times) * scale:.3g}..{max(times) * scale:.3g})"


def bind(f, extra):
    """f(a, extra) as a one-argument function (fused_kernel traces every parameter)."""
    def kernel(a):
        return f(a, extra)
    return kernel


def compiled(fn):
    """torch.compile(fn) warmed up, or None when inductor cannot build here."""
    if torch is None:
        return None
    try:
        c = torch.compile(fn)
        return c
    except Exception:   # noqa: BLE001 -- a missing C++ toolchain must not stop the table
        return None


class Table:
    def __init__(self, repeat: int, use_compile: bool):
        self.repeat, self.use_compile = repeat, use_compile
        self.rows = []

    def case(self, name, fused, eager=None, tcompile=None, copy=None, goal="", view=None, met=None):
        """fused/eager/tcompile/copy: zero-argument callables (None: not applicable)."""
        r = {"case": name, "goal": goal}
        r["fused"] = timed(fused, self.repeat)
        r["eager"] = timed(eager, self.repeat) if eager is not None else None
        tc = None
        if tcompile is not None and self.use_compile:
            try:
                tcompile()
                tc = timed(tcompile, self.repeat)
            except Exception as exc:   # noqa: BLE001
                print(f"  torch.compile failed on {name}: {type(exc).__name__}", file=sys.stderr)
        r["compile"] = tc
        r["copy"] = timed(copy, self.repeat) if copy is not None else None
        r["view"] = view
        r["met"] = met(r) if met is not None else None
        self.rows.append(r)
        print(self.line(r), flush=True)

    @staticmethod
    def ratio(base, times):
        return "" if base is None else f"{statistics.median(base) / statistics.median(times):.2f}x"

    def line(self, r) -> str:
        cells = [r["case"], fmt(r["fused"]), fmt(r["eager"]) if r["eager"] else "-",
                 self.ratio(r["eager"], r["fused"]) or "-",
                 fmt(r["compile"]) if r["compile"] else "-", self.ratio(r["compile"], r["fused"]) or "-",
                 self.ratio(r["copy"], r["fused"]) or "-",
                 "-" if r["view"] is None else ("yes" if r["view"] else "no"),
                 r["goal"] + ("" if r["met"] is None else (": met" if r["met"] else ": NOT met"))]
        return "| " + " | ".join(cells) + " |"

    HEADER = ("| case | fusedsl kernel(*arrays) | torch eager | vs eager | torch.compile | vs compile | "
              "vs memory copy | view | goal |\n|---|---|---|---|---|---|---|---|---|")


def speed(r, base) -> float:
    """base's median / fusedsl's median (> 1: fusedsl faster)."""
    return statistics.median(r[base]) / statistics.median(r["fused"]) if r[base] else float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile column")
    ap.add_argument("--only", default="transpose,views,matmul,tiny", help="sections, comma-separated")
    ap.add_argument("--interleaved", action="store_true", help="alternate fusedsl and the reference per round")
    ap.add_argument("--rounds", type=int, default=9, help="rounds of --interleaved")
    args = ap.parse_args(argv)
    only = set(args.only.split(","))
    if args.interleaved:
        interleaved(only, args.rounds)
        return
    rng = np.random.default_rng(0)
    tab = Table(args.repeat, not args.no_compile and torch is not None)
    print(f"torch {torch.__version__ if torch else '-'}, {torch.get_num_threads() if torch else '-'} threads; "
          f"numpy {np.__version__}; medians of {args.repeat} (min..max)")
    print(Table.HEADER)

    # ---- transposes / permutes ----------------------------------------------------------
    for shape, perm in TRANSPOSES if "transpose" in only else ():
        x = rng.standard_normal(shape).astype(np.float32)
        k = fs.fused_kernel(bind(lambda a, perm: fs.transpose(a, perm), perm))
        ok = np.array_equal(k(x), np.transpose(x, perm))
        dst = np.empty_like(x)
        tx = torch.from_numpy(x) if torch else None
        fn_c = compiled(lambda t, perm=perm: t.permute(*perm).contiguous()) if torch else None
        tab.case(f"transpose {list(shape)} perm {list(perm)} f32" + ("" if ok else " WRONG"), lambda: k(x),
                 (lambda: tx.permute(*perm).contiguous()) if torch else None,
                 (lambda: fn_c(tx)) if fn_c else None, lambda: np.copyto(dst, x),
                 goal=">= 0.8x memory copy", met=lambda r: speed(r, "copy") >= 0.8)

    if "views" in only:
        views(tab, rng)
    if "matmul" in only:
        matmuls(tab, rng)
    if "tiny" in only:
        tiny(tab, rng)


TRANSPOSES = (((1024, 4096), (1, 0)), ((64, 256, 256), (0, 2, 1)), ((32, 64, 512), (2, 0, 1)))


def loop_time(fn, number: int, clock) -> float:
    t = clock()
    for _ in range(number):
        fn()
    return (clock() - t) / number


def interleaved(only, rounds: int):
    """Round by round: fusedsl, then the reference (module docstring); medians of the rounds."""
    rng = np.random.default_rng(0)
    print(f"interleaved, medians of {rounds} rounds; load average {os.getloadavg()[0]:.1f}")
    if "transpose" in only:
        print("| case | fusedsl (CPU) | copy (CPU) | vs copy (CPU) | fusedsl (wall) | copy (wall) | vs copy (wall) |\n"
              "|---|---|---|---|---|---|---|")
        for shape, perm in TRANSPOSES:
            x = rng.standard_normal(shape).astype(np.float32)
            k = fs.fused_kernel(bind(lambda a, perm: fs.transpose(a, perm), perm))
            assert np.array_equal(k(x), np.transpose(x, perm))
            dst = np.empty_like(x)
            pair = (lambda: k(x), lambda: np.copyto(dst, x))
            number = max(3, int(0.03 / max(loop_time(pair[1], 3, time.perf_counter), 1e-7)))
            cells = []
            for clock in (time.process_time, time.perf_counter):
                got = [[], []]
                for _ in range(rounds):
                    for i, fn in enumerate(pair):
                        got[i].append(loop_time(fn, number, clock))
                f, c = statistics.median(got[0]), statistics.median(got[1])
                cells += [fmt(got[0]), fmt(got[1]), f"{c / f:.2f}x"]
            print(f"| transpose {list(shape)} perm {list(perm)} f32 | " + " | ".join(cells) + " |", flush=True)
    if "matmul" in only and torch is not None:
        print("| case | fusedsl (wall) | torch eager (wall) | vs eager |\n|---|---|---|---|")
        for dtype in ("bfloat16", "float16"):
            for m_, k_, n_ in ((512, 512, 512), (1024, 1024, 1024), (256, 4096, 256)):
                if dtype == "float16" and m_ * n_ * k_ > 1 << 28:
                    continue   # torch eager's float16 GEMM takes seconds here
                npdt = to_dtype(dtype).np
                a = rng.standard_normal((m_, k_)).astype(np.float32).astype(npdt)
                b = rng.standard_normal((k_, n_)).astype(np.float32).astype(npdt)
                kern = fs.fused_kernel(lambda p, q: p @ q)
                ta = torch.from_numpy(a.view(np.int16)).view(getattr(torch, dtype))
                tb = torch.from_numpy(b.view(np.int16)).view(getattr(torch, dtype))
                pair = (lambda: kern(a, b), lambda: ta @ tb)
                for fn in pair:
                    fn()
                number = max(1, int(0.05 / max(loop_time(pair[1], 1, time.perf_counter), 1e-7)))
                got = [[], []]
                for _ in range(rounds):
                    for i, fn in enumerate(pair):
                        got[i].append(loop_time(fn, number, time.perf_counter))
                print(f"| matmul {m_}x{k_} @ {k_}x{n_} {dtype} | {fmt(got[0])} | {fmt(got[1])} | "
                      f"{statistics.median(got[1]) / statistics.median(got[0]):.2f}x |", flush=True)
        blas_threads(rounds)


def blas_threads(rounds: int, size: int = 1024):
    """The float32 product under a 16-bit matmul, size^3, by every way of running it here:
    one sgemm on one thread, OpenBLAS's own threads, fusedsl's pool row blocks, beside torch's
    bfloat16 and float32 products; wall and CPU time per call, interleaved rounds."""
    from fusedsl.backend_cpu import blas
    from fusedsl.backend_cpu.launch import host_threads
    rng = np.random.default_rng(1)
    a = rng.standard_normal((size, size)).astype(np.float32).astype(to_dtype("bfloat16").np)
    b = rng.standard_normal((size, size)).astype(np.float32).astype(to_dtype("bfloat16").np)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    out = np.empty((size, size), np.float32)
    get, set_ = blas.THREAD_COUNT

    def one_thread():
        with blas.one_blas_thread():
            np.matmul(a32, b32, out=out)

    def openblas_threads():   # the process-wide count and this thread's own setting
        prev, prev_local = get(), blas.BLAS_LOCAL_THREADS(host_threads())
        set_(host_threads())
        try:
            np.matmul(a32, b32, out=out)
        finally:
            set_(prev)
            blas.BLAS_LOCAL_THREADS(prev_local)
    ta = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    tb = torch.from_numpy(b.view(np.int16)).view(torch.bfloat16)
    ta32, tb32 = torch.from_numpy(a32), torch.from_numpy(b32)
    kern = fs.fused_kernel(lambda p, q: p @ q)
    ways = {"sgemm, 1 thread": one_thread, f"sgemm, OpenBLAS's {host_threads()} threads": openblas_threads,
            "sgemm, fusedsl pool row blocks (blas.matmul_rows)": lambda: blas.matmul_rows(a32, b32, out),
            "fusedsl bfloat16 kernel(a, b)": lambda: kern(a, b),
            "torch bfloat16 a @ b": lambda: ta @ tb, "torch float32 a @ b": lambda: ta32 @ tb32}
    for fn in ways.values():
        fn()
    got = {k: ([], []) for k in ways}
    for _ in range(rounds):
        for k, fn in ways.items():
            # OpenBLAS's and torch's worker threads spin for a while after a call: a pause, so
            # that the next way's CPU time does not count their spinning
            time.sleep(0.2)
            w, c = time.perf_counter(), time.process_time()
            fn()
            got[k][0].append(time.perf_counter() - w)
            got[k][1].append(time.process_time() - c)
    flops = 2.0 * size ** 3
    print(f"\n{size}^3 product, {torch.get_num_threads()} torch threads, medians of {rounds} interleaved rounds\n"
          "| way | wall | CPU time | GFLOP/s (wall) | GFLOP per CPU-second |\n|---|---|---|---|---|")
    for k, (wall, cpu) in got.items():
        print(f"| {k} | {fmt(wall)} | {fmt(cpu)} | {flops / statistics.median(wall) / 1e9:.0f} | "
              f"{flops / statistics.median(cpu) / 1e9:.0f} |", flush=True)


def views(tab, rng):
    x = rng.standard_normal((1024, 4096)).astype(np.float32)
    tx = torch.from_numpy(x) if torch else None
    for name, f, tf in (("reshape [1024,4096] -> [4096,1024]", lambda a: fs.reshape(a, (4096, 1024)),
                         lambda t: t.reshape(4096, 1024)),
                        ("unsqueeze [1024,4096] -> [1,1024,4096]", lambda a: fs.reshape(a, (1, 1024, 4096)),
                         lambda t: t.unsqueeze(0))):
        k = fs.fused_kernel(f)
        y = k(x)
        view = bool(np.shares_memory(y, x))
        tab.case(name + " f32", lambda: k(x), (lambda: tf(tx)) if torch else None, view=view,
                 goal="a view, like numpy", met=lambda r, view=view: view)
    xs = rng.standard_normal((1, 1024, 1, 64)).astype(np.float32)
    k = fs.fused_kernel(lambda a: fs.reshape(a, (1024, 64)))
    tab.case("squeeze [1,1024,1,64] -> [1024,64] f32", lambda: k(xs),
             (lambda: torch.from_numpy(xs).squeeze()) if torch else None,
             view=bool(np.shares_memory(k(xs), xs)), goal="a view, like numpy",
             met=lambda r: bool(np.shares_memory(k(xs), xs)))
    if torch is not None:
        class Squeeze(torch.nn.Module):
            def forward(self, t):
                return t.squeeze(2).unsqueeze(0)
        m = fs.from_torch(Squeeze(), torch.from_numpy(xs))
        tab.case("from_torch squeeze(2).unsqueeze(0) [1,1024,1,64]", lambda: m(xs),
                 lambda: torch.from_numpy(xs).squeeze(2).unsqueeze(0),
                 view=bool(np.shares_memory(m(xs), xs)), goal="a view, like numpy",
                 met=lambda r: bool(np.shares_memory(m(xs), xs)))



def matmuls(tab, rng):
    for dtype in ("float16", "bfloat16"):
        for m_, k_, n_ in ((64, 64, 64), (128, 128, 128), (512, 512, 512), (1024, 1024, 1024), (256, 4096, 256)):
            npdt = to_dtype(dtype).np
            a = rng.standard_normal((m_, k_)).astype(np.float32).astype(npdt)
            b = rng.standard_normal((k_, n_)).astype(np.float32).astype(npdt)
            kern = fs.fused_kernel(lambda p, q: p @ q)
            kern(a, b)
            if torch:
                ta = torch.from_numpy(a.view(np.int16)).view(getattr(torch, dtype))
                tb = torch.from_numpy(b.view(np.int16)).view(getattr(torch, dtype))
            tab.case(f"matmul {m_}x{k_} @ {k_}x{n_} {dtype}", lambda: kern(a, b),
                     (lambda: ta @ tb) if torch else None, goal=">= 0.8x eager",
                     met=(lambda r: speed(r, "eager") >= 0.8) if torch else None)



def tiny(tab, rng):
    for shape, axis in (((16,), -1), ((16, 16), -1), ((256, 512), -1), ((16, 16), 0)):
        x = rng.standard_normal(shape).astype(np.float32)
        k = fs.fused_kernel(bind(lambda a, axis: fs.sum(a, axis=axis), axis))
        tx = torch.from_numpy(x) if torch else None
        tab.case(f"sum {list(shape)} axis {axis} f32", lambda: k(x),
                 (lambda: tx.sum(dim=axis)) if torch else None, goal="cost <= 1.5x eager (>= 0.67x)",
                 met=(lambda r: speed(r, "eager") >= 1 / 1.5) if torch else None)
    a = rng.standard_normal(16).astype(np.float32)
    b = rng.standard_normal((16, 16)).astype(np.float32)
    k = fs.fused_kernel(lambda p, q: fs.relu(fs.abs(p) + q))
    ta, tb = (torch.from_numpy(a), torch.from_numpy(b)) if torch else (None, None)
    tab.case("relu(abs(a)+b) [16] / [16,16] f32", lambda: k(a, b),
             (lambda: torch.relu(ta.abs() + tb)) if torch else None, goal="cost <= 1.5x eager (>= 0.67x)",
                 met=(lambda r: speed(r, "eager") >= 1 / 1.5) if torch else None)
    x = rng.standard_normal((16, 64)).astype(np.float32)
    k = fs.fused_kernel(lambda p: fs.softmax(p, axis=-1))
    tx = torch.from_numpy(x) if torch else None
    tab.case("softmax [16,64] f32", lambda: k(x), (lambda: torch.softmax(tx, -1)) if torch else None,
             goal="cost <= 1.5x eager (>= 0.67x)",
                 met=(lambda r: speed(r, "eager") >= 1 / 1.5) if torch else None)


if __name__ == "__main__":
    main()
