"""Shared test helpers: the per-dtype tolerance table, fuzz settings, error checks.

Other test files import from here (`from conftest import TOLERANCE, assert_close`).
"""
from __future__ import annotations

import functools
import importlib.util
import os
import re
import traceback

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import fusedsl
from fusedsl import cachedir
from fusedsl.backend_ascendc import cpu_runner

# ---- tolerances --------------------------------------------------------------------
# (rtol, atol) per result dtype, checked as |got - want| <= atol + rtol * |want|.
# Every fusedsl op rounds once to its result dtype, so an independent numpy
# implementation that rounds the same way differs only where a formula is spelled
# differently (gelu, mean, a reduction's summation order): a few ulps of the dtype.
TOLERANCE = {
    np.dtype(np.float32): (1e-5, 1e-6),
    np.dtype(np.float16): (4e-3, 1e-3),          # f16 ulp is 2**-10 ~ 1e-3 relative
    np.dtype(ml_dtypes.bfloat16): (3e-2, 1e-2),  # bf16 ulp is 2**-7 ~ 8e-3 relative
    np.dtype(np.int32): (0, 0),
    np.dtype(np.int8): (0, 0),
    np.dtype(np.uint8): (0, 0),
    np.dtype(np.bool_): (0, 0),
}


def assert_close(got, want, context: str = "", scale: float = 0.0) -> None:
    """`got` equals `want` in dtype and shape, and in value within TOLERANCE[dtype].

    NaN positions must match; infinities must match exactly.  `scale` is the magnitude of
    the values the result was computed from: a sum or matmul that cancels is only accurate
    relative to its terms, so the absolute tolerance grows to rtol * scale.
    """
    got, want = np.asarray(got), np.asarray(want)
    where = f" ({context})" if context else ""
    assert got.dtype == want.dtype, f"dtype {got.dtype} != {want.dtype}{where}"
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}{where}"
    rtol, atol = TOLERANCE[want.dtype]
    atol = max(atol, rtol * float(scale))
    if rtol == 0 and atol == 0:
        bad = got != want
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        nan_g, nan_w = np.isnan(g), np.isnan(w)
        assert np.array_equal(nan_g, nan_w), f"NaN positions differ{where}:\n{got}\n{want}"
        with np.errstate(invalid="ignore"):
            bad = ~nan_w & ~((g == w) | (np.abs(g - w) <= atol + rtol * np.abs(w)))   # inf == inf
            bad |= np.isinf(w) & (g != w)
    if np.any(bad):
        idx = tuple(np.argwhere(bad)[0])
        raise AssertionError(f"{int(np.sum(bad))} of {bad.size} elements differ{where}; first at {idx}: "
                             f"got {got[idx]!r}, want {want[idx]!r} (rtol={rtol}, atol={atol})")


# ---- hypothesis ----------------------------------------------------------------------
# FUSEDSL_FUZZ_EXAMPLES scales every property test; the default keeps the whole
# suite well under a minute and a half on two cores.
FUZZ_EXAMPLES = int(os.environ.get("FUSEDSL_FUZZ_EXAMPLES", "500"))


def covering(a: list, b: list) -> list[tuple]:
    """Pairs of a and b in which every element of each list appears at least once (cyclic:
    max(len(a), len(b)) pairs), for parametrized tests whose every case is a g++ build: the full
    product costs seconds per pair, and the property tests of the same kernels draw the rest."""
    n = max(len(a), len(b))
    flat = lambda x: x if isinstance(x, tuple) else (x,)   # noqa: E731
    return [flat(a[i % len(a)]) + flat(b[i % len(b)]) for i in range(n)]


def fuzz_settings(scale: float = 1.0):
    """@settings for a property test: FUZZ_EXAMPLES * scale examples, no deadline."""
    return settings(max_examples=max(1, int(FUZZ_EXAMPLES * scale)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


# ---- errors that must point at the user's code ------------------------------------------
PACKAGE_DIR = os.path.dirname(os.path.abspath(fusedsl.__file__))
USER_CODE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "user_code")
# "fusedsl/frontend/kernel.py", ...: wherever fusedsl is installed, these must not show up
PACKAGE_FILES = sorted(
    "fusedsl/" + os.path.relpath(os.path.join(root, name), PACKAGE_DIR).replace(os.sep, "/")
    for root, _, names in os.walk(PACKAGE_DIR) for name in names if name.endswith(".py"))


@functools.lru_cache(maxsize=None)
def kernel_corpus():
    """tools/kernel_corpus.py as a module (tools/ is not a package), loaded once per process."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "kernel_corpus.py")
    spec = importlib.util.spec_from_file_location("kernel_corpus", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def marked_line(path: str, mark: str) -> int:
    """The 1-based line of `path` that carries the comment `# LINE-MARK <mark>`."""
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, start=1):
            if re.search(rf"# LINE-MARK {re.escape(mark)}\b", text):
                return number
    raise LookupError(f"no '# LINE-MARK {mark}' in {path}")


def check_user_error(excinfo, *, file: str, line: int, message: str) -> None:
    """The error names file:line, says `message` (a regex), leaks no fusedsl path,
    and its traceback has the user's line and at most one fusedsl frame."""
    exc = excinfo.value
    text = str(exc)
    assert re.search(message, text), f"{message!r} not in:\n{text}"
    assert f"{file}:{line}" in text, f"{file}:{line} not in:\n{text}"
    assert PACKAGE_DIR not in text, f"a fusedsl path leaks into the message:\n{text}"
    leaked = [f for f in PACKAGE_FILES if f in text.replace(os.sep, "/")]
    assert not leaked, f"fusedsl files {leaked} named in the message:\n{text}"
    frames = traceback.extract_tb(exc.__traceback__)
    internal = [f for f in frames if os.path.abspath(f.filename).startswith(PACKAGE_DIR + os.sep)]
    assert len(internal) <= 1, "fusedsl frames in the traceback:\n" + "".join(traceback.format_list(internal))
    assert any(os.path.abspath(f.filename) == os.path.abspath(file) and f.lineno == line for f in frames), \
        f"{file}:{line} is not in the traceback:\n" + "".join(traceback.format_list(frames))


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


# ---- Ascend C CPU API tests ------------------------------------------------------------
ASCENDC_KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ascendc_kernels")


@pytest.fixture(scope="module")
def private_cache_dir(tmp_path_factory):
    """A fresh FUSEDSL_CACHE_DIR for one test module (its builds must not be cache hits).

    Only the precompiled CPU API header (ascendc/pch: not a build of the module's sources) is
    the session cache's: building it costs more than one build saves, and most of these modules
    build one kernel file."""
    shared_pch = os.path.join(cpu_runner.cache_dir(), "pch")
    cachedir.make_private(shared_pch)
    old = os.environ.get("FUSEDSL_CACHE_DIR")
    fresh = tmp_path_factory.mktemp("fusedsl-cache")
    cachedir.make_private(str(fresh / "ascendc"))
    os.symlink(shared_pch, fresh / "ascendc" / "pch")
    os.environ["FUSEDSL_CACHE_DIR"] = str(fresh)
    yield
    if old is None:
        del os.environ["FUSEDSL_CACHE_DIR"]
    else:
        os.environ["FUSEDSL_CACHE_DIR"] = old
