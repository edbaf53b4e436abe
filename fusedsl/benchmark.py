"""`fs.benchmark(kernel, *args, against=None)`: time a kernel in a notebook cell.

Medians over repeats (each repeat runs enough calls to last a few milliseconds, so the
timer's resolution does not matter) with their spread (min..max and the interquartile range),
the bytes the call actually moves (each distinct input array read once, each result written
once; a result that is a view of an input moves nothing), GB/s, and that rate as a fraction of
this machine's peak for the same working set: the best rate of a streaming copy of as many
bytes (numpy's and a fusedsl kernel's), measured once per size and process.  Arguments that
fit in cache are compared with a copy that fits in cache too, so the fraction stays a fraction
(a call faster than every copy measured raises the peak to its own rate: the fraction is then
100 %).  With `against=` a second callable (the numpy version) is timed on the same arguments
and its results are compared.
"""
from __future__ import annotations

import statistics
import time
from html import escape

import numpy as np

from .backend_cpu.jit import wait_for_upgrades
from .errors import ArgumentError, user_facing, user_frame

_PEAK_GBPS: dict[int, float] = {}     # working-set bytes (rounded up to a power of two) -> GB/s
_DRAM_BYTES = 128 << 20               # 64 MB read + 64 MB written: well past any cache here


def machine_bandwidth_gbps(nbytes: int | None = None) -> float:
    """The best rate (bytes read + written per second, GB/s) this machine moves `nbytes` of
    working set at (default: 128 MB, main memory), measured on first use per size and cached
    for the process: a numpy copy and a fusedsl streaming kernel (|x| on all cores with
    non-temporal stores for large arrays, which numpy's single-threaded copy cannot reach)."""
    size = _DRAM_BYTES if nbytes is None else max(1 << 12, 1 << (max(1, int(nbytes)) - 1).bit_length())
    if size not in _PEAK_GBPS:
        from .frontend.api import abs as fs_abs
        from .frontend.kernel import fused_kernel
        src = np.ones(size // 8, np.float32)   # half the working set read, half written
        dst = np.empty_like(src)
        stream = fused_kernel(lambda x: fs_abs(x))
        stream(src, out=dst)                   # compile and fault the pages in
        np.copyto(dst, src)
        number = max(1, min(10_000, (16 << 20) // size))   # short copies: a loop per timing
        best = float("inf")
        for _ in range(5):
            for run in (lambda: np.copyto(dst, src), lambda: stream(src, out=dst)):
                t = time.perf_counter()
                for _ in range(number):
                    run()
                best = min(best, (time.perf_counter() - t) / number)
        _PEAK_GBPS[size] = 2 * src.nbytes / best / 1e9
    return _PEAK_GBPS[size]


def _time(fn, args, repeat: int, min_repeat_s: float) -> list[float]:
    """Seconds per call for each of `repeat` repeats."""
    fn(*args)   # warm up: compiles, binds, faults the pages in
    wait_for_upgrades(60)   # time the optimised code, not the quick tier a first call runs (jit.py)
    number, t = 1, 0.0
    while True:   # calls per repeat so one repeat lasts about min_repeat_s
        start = time.perf_counter()
        for _ in range(number):
            fn(*args)
        t = time.perf_counter() - start
        if t >= min_repeat_s or number >= 1 << 20:
            break
        number *= max(2, min(10, int(min_repeat_s / max(t, 1e-9)) + 1))
    times = [t / number]
    for _ in range(repeat - 1):
        start = time.perf_counter()
        for _ in range(number):
            fn(*args)
        times.append((time.perf_counter() - start) / number)
    return times


def _moved_bytes(args, result) -> int:
    """Bytes a call moves: each distinct input array once, each result that is not a view of an
    input once (a view moves nothing, and its input need not be read for it)."""
    inputs = [a for a in args if isinstance(a, np.ndarray)]
    results = [r for r in (result if isinstance(result, tuple) else (result,)) if isinstance(r, np.ndarray)]
    fresh = [r for r in results if not any(np.shares_memory(r, a) for a in inputs)]
    if results and not fresh:
        return 0
    seen, total = [], 0
    for a in inputs:
        if not any(a is b or (a.shape == b.shape and np.shares_memory(a, b)) for b in seen):
            seen.append(a)
            total += a.nbytes
    return total + sum(r.nbytes for r in fresh)


class Benchmark:
    """Timing of one kernel call (and of `against`, when given): medians and their spread."""

    def __init__(self, name, times, nbytes, against_name=None, against_times=None, max_abs_diff=None):
        self.name = name
        self.times_s = times
        self.median_s = statistics.median(times)
        self.median_us = self.median_s * 1e6
        self.min_us, self.max_us = min(times) * 1e6, max(times) * 1e6
        self.iqr_us = _iqr(times) * 1e6
        self.spread = (max(times) - min(times)) / self.median_s if self.median_s else 0.0   # (max-min)/median
        self.bytes = nbytes                      # bytes the call moves (module docstring)
        self.gbps = nbytes / self.median_s / 1e9 if nbytes else None
        # the peak for this working set: never below a rate this call reached (then 100 %)
        peak = machine_bandwidth_gbps(nbytes) if nbytes else None
        if peak is not None and self.gbps is not None:
            peak = max(peak, nbytes / min(times) / 1e9)
        self.machine_gbps = peak
        self.fraction_of_machine = None if peak is None else self.gbps / peak
        self.against_name = against_name
        self.against_times_s = against_times
        self.against_median_us = None if against_times is None else statistics.median(against_times) * 1e6
        self.against_gbps = None if against_times is None or not nbytes else \
            nbytes / statistics.median(against_times) / 1e9
        if self.against_gbps is not None:
            self.machine_gbps = max(self.machine_gbps, nbytes / min(against_times) / 1e9)
            self.fraction_of_machine = self.gbps / self.machine_gbps
        # > 1: the kernel is faster than `against`
        self.speedup = None if against_times is None else self.against_median_us / self.median_us
        self.max_abs_diff = max_abs_diff

    def rows(self) -> list[tuple[str, ...]]:
        def row(name, times, gbps):
            med = statistics.median(times) * 1e6
            return (name, f"{med:,.1f}", f"{min(times) * 1e6:,.1f}..{max(times) * 1e6:,.1f}",
                    "-" if gbps is None else f"{gbps:,.2f}",
                    "-" if gbps is None else f"{gbps / self.machine_gbps:.1%}")
        rows = [row(self.name, self.times_s, self.gbps)]
        if self.against_times_s is not None:
            rows.append(row(self.against_name, self.against_times_s, self.against_gbps))
        return rows

    def _footer(self) -> str:
        if self.bytes:
            text = (f"{len(self.times_s)} repeats, {self.bytes:,} bytes moved per call, peak {self.machine_gbps:.1f} "
                    "GB/s for this working set (the best streaming copy of as many bytes, measured)")
        else:
            text = f"{len(self.times_s)} repeats; the result is a view of an input: no bytes move"
        if self.speedup is not None:
            text += f"; {self.name} is {self.speedup:.2f}x {self.against_name}"
        if self.max_abs_diff is not None:
            text += f"; max |difference| {self.max_abs_diff:.3g}"
        return text

    _HEADER = ("callable", "median us", "min..max us", "GB/s", "of peak")

    def __str__(self) -> str:
        rows = [self._HEADER] + self.rows()
        widths = [max(len(r[i]) for r in rows) for i in range(len(self._HEADER))]
        lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                 for r in rows]
        lines.insert(1, "-" * len(lines[0]))
        return "\n".join(lines + [self._footer()])

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{escape(h)}</th>" for h in self._HEADER)
        body = "".join("<tr><td>" + escape(r[0]) + "</td>" + "".join(
            f'<td style="text-align:right">{escape(c)}</td>' for c in r[1:]) + "</tr>" for r in self.rows())
        return (f'<div class="fsd"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
                f"<p>{escape(self._footer())}</p></div>")

    def plot(self, ax=None):
        """A bar chart of the medians with the spread of the repeats (needs matplotlib)."""
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            raise ArgumentError("Benchmark.plot needs matplotlib", loc=user_frame(),
                                hint="pip install 'fusedsl[notebook]' (or matplotlib)") from None
        if ax is None:
            _, ax = plt.subplots(figsize=(5, 1.2 + 0.4 * (1 + (self.against_times_s is not None))))
        names = [self.name] + ([self.against_name] if self.against_times_s is not None else [])
        series = [self.times_s] + ([self.against_times_s] if self.against_times_s is not None else [])
        medians = [statistics.median(s) * 1e6 for s in series]
        errs = [[m - min(s) * 1e6 for m, s in zip(medians, series)],
                [max(s) * 1e6 - m for m, s in zip(medians, series)]]
        ax.barh(names, medians, xerr=errs, color=["#3b7dd8", "#d8643b"][:len(names)])
        ax.set_xlabel("median time per call (us), whiskers: min..max of repeats")
        ax.invert_yaxis()
        return ax


def _iqr(times) -> float:
    if len(times) < 4:
        return max(times) - min(times)
    q = statistics.quantiles(times, n=4)
    return q[2] - q[0]


def _label(fn) -> str:
    return getattr(fn, "name", None) or getattr(fn, "__name__", None) or type(fn).__name__


@user_facing
def benchmark(kernel, *args, against=None, repeat: int = 7, min_repeat_s: float = 0.005) -> Benchmark:
    """Time `kernel(*args)`: the median over `repeat` repeats and its spread, GB/s of the bytes
    the call moves, the fraction of this machine's measured peak for that working set and,
    with `against=fn`, `fn(*args)` timed and compared too."""
    if not callable(kernel):
        raise ArgumentError(f"fs.benchmark needs a kernel or callable, got {type(kernel).__name__}",
                            loc=user_frame())
    if against is not None and not callable(against):
        raise ArgumentError(f"against= must be a callable such as a numpy function, got {type(against).__name__}",
                            loc=user_frame())
    if repeat < 1:
        raise ArgumentError(f"repeat={repeat} must be at least 1", loc=user_frame())
    result = kernel(*args)
    nbytes = _moved_bytes(tuple(args), result)
    times = _time(kernel, args, repeat, min_repeat_s)
    if against is None:
        return Benchmark(_label(kernel), times, nbytes)
    expected = against(*args)
    got = result if isinstance(result, tuple) else (result,)
    want = expected if isinstance(expected, tuple) else (expected,)
    if len(got) != len(want) or any(np.shape(g) != np.shape(w) for g, w in zip(got, want)):
        raise ArgumentError(f"{_label(against)} returns a different number or shape of results than "
                            f"{_label(kernel)}", loc=user_frame(), hint="against= must compute the same thing")
    diff = max((float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(w, np.float64))))
                if np.size(g) else 0.0) for g, w in zip(got, want))
    return Benchmark(_label(kernel), times, nbytes, _label(against), _time(against, args, repeat, min_repeat_s),
                     diff)
