"""`fs.benchmark(kernel, *args, against=None)`: time a kernel in a notebook cell.

Medians over repeats (each repeat runs enough calls to last a few milliseconds, so the
timer's resolution does not matter), the bytes the call must move (inputs read once, outputs
written once), GB/s, and that rate as a fraction of this machine's memory bandwidth, which is
measured once per process with a large numpy copy.  With `against=` a second callable (the
numpy version) is timed on the same arguments and its results are compared.
"""
from __future__ import annotations

import statistics
import time
from html import escape

import numpy as np

from .errors import ArgumentError, user_facing, user_frame

_MACHINE_GBPS: float | None = None


def machine_bandwidth_gbps() -> float:
    """This machine's memory bandwidth in GB/s, measured on first use and cached for the process:
    the best rate (bytes read + written) of a 64 MB numpy copy and of a fusedsl streaming kernel
    (|x| on all cores with non-temporal stores, which numpy's single-threaded copy cannot reach)."""
    global _MACHINE_GBPS
    if _MACHINE_GBPS is None:
        from .frontend.api import abs as fs_abs
        from .frontend.kernel import fused_kernel
        src = np.ones(16 << 20, np.float32)   # 64 MB: well past any last-level cache here
        dst = np.empty_like(src)
        stream = fused_kernel(lambda x: fs_abs(x))
        stream(src, out=dst)                   # compile and fault the pages in
        best = float("inf")
        for _ in range(5):
            for run in (lambda: np.copyto(dst, src), lambda: stream(src, out=dst)):
                t = time.perf_counter()
                run()
                best = min(best, time.perf_counter() - t)
        _MACHINE_GBPS = 2 * src.nbytes / best / 1e9
    return _MACHINE_GBPS


def _time(fn, args, repeat: int, min_repeat_s: float) -> list[float]:
    """Seconds per call for each of `repeat` repeats."""
    fn(*args)   # warm up: compiles, binds, faults the pages in
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


def _nbytes(values) -> int:
    values = values if isinstance(values, tuple) else (values,)
    return sum(np.asarray(v).nbytes for v in values if isinstance(v, (np.ndarray, np.generic)))


class Benchmark:
    """Timing of one kernel call (and of `against`, when given).  All times are medians."""

    def __init__(self, name, times, nbytes, against_name=None, against_times=None, max_abs_diff=None):
        self.name = name
        self.times_s = times
        self.median_s = statistics.median(times)
        self.median_us = self.median_s * 1e6
        self.bytes = nbytes                                  # inputs read + outputs written, once each
        self.gbps = nbytes / self.median_s / 1e9
        self.machine_gbps = machine_bandwidth_gbps()
        self.fraction_of_machine = self.gbps / self.machine_gbps
        self.against_name = against_name
        self.against_times_s = against_times
        self.against_median_us = None if against_times is None else statistics.median(against_times) * 1e6
        self.against_gbps = None if against_times is None else nbytes / statistics.median(against_times) / 1e9
        # > 1: the kernel is faster than `against`
        self.speedup = None if against_times is None else self.against_median_us / self.median_us
        self.max_abs_diff = max_abs_diff

    def rows(self) -> list[tuple[str, str, str, str]]:
        rows = [(self.name, f"{self.median_us:,.1f}", f"{self.gbps:,.2f}", f"{self.fraction_of_machine:.1%}")]
        if self.against_median_us is not None:
            rows.append((self.against_name, f"{self.against_median_us:,.1f}", f"{self.against_gbps:,.2f}",
                         f"{self.against_gbps / self.machine_gbps:.1%}"))
        return rows

    def _footer(self) -> str:
        text = (f"{len(self.times_s)} repeats, {self.bytes:,} bytes of arguments and results per call, "
                f"machine memory bandwidth {self.machine_gbps:.1f} GB/s (measured, best streaming copy)")
        if self.speedup is not None:
            text += f"; {self.name} is {self.speedup:.2f}x {self.against_name}"
        if self.max_abs_diff is not None:
            text += f"; max |difference| {self.max_abs_diff:.3g}"
        return text

    _HEADER = ("callable", "median us", "GB/s", "of machine bandwidth")

    def __str__(self) -> str:
        rows = [self._HEADER] + self.rows()
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
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


def _label(fn) -> str:
    return getattr(fn, "name", None) or getattr(fn, "__name__", None) or type(fn).__name__


@user_facing
def benchmark(kernel, *args, against=None, repeat: int = 7, min_repeat_s: float = 0.005) -> Benchmark:
    """Time `kernel(*args)`: medians over `repeat` repeats, GB/s, the fraction of this machine's
    measured memory bandwidth and, with `against=fn`, `fn(*args)` timed and compared too."""
    if not callable(kernel):
        raise ArgumentError(f"fs.benchmark needs a kernel or callable, got {type(kernel).__name__}",
                            loc=user_frame())
    if against is not None and not callable(against):
        raise ArgumentError(f"against= must be a callable such as a numpy function, got {type(against).__name__}",
                            loc=user_frame())
    if repeat < 1:
        raise ArgumentError(f"repeat={repeat} must be at least 1", loc=user_frame())
    result = kernel(*args)
    nbytes = _nbytes(tuple(args)) + _nbytes(result)
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
