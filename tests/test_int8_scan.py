"""8-bit cumsum / cumprod / prod wrap like numpy on every executor (ops/composite `_scan8`,
`_wrap8`): the scan and the pairwise product run in float32 with every step's value wrapped
into the 8-bit range, so each step is exact and the final cast to int8 / uint8 is of a value in
range.  Before, the float32 result was cast once at the end, which saturates on the chip (970
of 1200 int8 cumsum results wrong under simulate on every target) and rounds through exp/log
for products on every executor (24 of 1200 int8 cumprod results wrong even on the CPU)."""
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import fuzz_settings
from fusedsl.reference import run_module

TARGETS = ("ascend910b", "ascend310p", "ascend910")


def _scans(x, u):
    return (fs.cumsum(x, axis=1), fs.cumprod(x, axis=1), fs.cumsum(u, axis=0), fs.cumprod(u, axis=0),
            fs.prod(x, axis=1), fs.prod(u, axis=0))


def _numpy_scans(x, u):
    return (np.cumsum(x, axis=1, dtype=np.int8), np.cumprod(x, axis=1, dtype=np.int8),
            np.cumsum(u, axis=0, dtype=np.uint8), np.cumprod(u, axis=0, dtype=np.uint8),
            np.prod(x, axis=1, dtype=np.int8), np.prod(u, axis=0, dtype=np.uint8))


def _inputs(rng, rows=4, n=300):
    x = rng.integers(-128, 128, (rows, n)).astype(np.int8)
    x[0] = 3                    # odd products: 3**k mod 256 never reaches 0
    x[1, ::2], x[1, 1::2] = -1, 127
    x[2, :4] = (-128, -128, -1, 1)
    u = rng.integers(0, 256, (n // 100 + 1, rows * 50)).astype(np.uint8)
    u[:, 0] = 255
    u[:, 1] = 7
    return x, u


def _check(got, want):
    for n, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, n
        bad = np.flatnonzero(g != w)
        assert bad.size == 0, f"output {n}: {bad.size} of {g.size} wrong, first got {g.flat[bad[0]]}, " \
                              f"numpy {w.flat[bad[0]]}"


@pytest.mark.parametrize("target", TARGETS)
def test_8bit_scans_and_products_wrap_like_numpy_in_the_printed_ascendc(target):
    """simulate (the printed Ascend C), kernel(*arrays) and the reference equal numpy's wrapped
    int8 / uint8 answers, and simulate warns of no saturation."""
    x, u = _inputs(np.random.default_rng(0))
    k = fs.fused_kernel(_scans).compile(x, u, target=target)
    with warnings.catch_warnings():
        warnings.simplefilter("error", fs.SaturationWarning)
        sim = k.simulate(x, u)
    want = _numpy_scans(x, u)
    for run in (sim, k(x, u), run_module(k.graph, [x, u])):
        _check(run, want)


@pytest.fixture(scope="module")
def scan_kernel():
    spec_x, spec_u = fs.spec((3, 37), fs.int8), fs.spec((5, 9), fs.uint8)
    return fs.fused_kernel(_scans).compile(spec_x, spec_u, target="ascend310p")


@fuzz_settings(scale=0.3)
@given(st.data())
def test_8bit_scans_wrap_like_numpy_for_any_values(scan_kernel, data):
    """Hypothesis over int8 / uint8 values (the extremes weighted in): the printed Ascend C of
    310P under simulate, the LLVM executor and the reference equal numpy."""
    i8 = st.one_of(st.integers(-128, 127), st.sampled_from([-128, -127, -1, 0, 1, 2, 127]))
    u8 = st.one_of(st.integers(0, 255), st.sampled_from([0, 1, 2, 128, 255]))
    x = np.array(data.draw(st.lists(i8, min_size=3 * 37, max_size=3 * 37)), np.int8).reshape(3, 37)
    u = np.array(data.draw(st.lists(u8, min_size=45, max_size=45)), np.uint8).reshape(5, 9)
    want = _numpy_scans(x, u)
    for run in (scan_kernel.simulate(x, u), scan_kernel(x, u), run_module(scan_kernel.graph, [x, u])):
        _check(run, want)


def test_an_8bit_scan_longer_than_float32s_exact_sums_stays_exact():
    """int8 cumsum over 140000 elements of about 127: the plain float32 sum passes 2**24 (17.7e6,
    exact no more); the per-step wrap keeps every value below 256, so it equals numpy's wrap."""
    x = np.full((1, 140000), 127, np.int8)
    x[0, ::1000] = -128
    k = fs.fused_kernel(lambda x: fs.cumsum(x, axis=1)).compile(x)
    want = np.cumsum(x, axis=1, dtype=np.int8)
    for got in (k(x), run_module(k.graph, [x])[0]):
        np.testing.assert_array_equal(got, want)
