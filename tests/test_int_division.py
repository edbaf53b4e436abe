"""fusedsl's integer division and remainder of int32 (fs.floor_divide, fs.remainder, fs.fmod,
fs.div(rounding_mode="trunc")) are exact over all of int32 on every executor and in the printed
Ascend C of every target (310P / 910A have no float32 -> int32 Cast: only integers up to 2048
are cast there): numpy's int32 answers, including INT_MIN // -1 = INT_MIN (numpy wraps it) and
x // 0 = x % 0 = 0 (ops/composite._int32_division); int8 / uint8 likewise (through float32,
int8's -128 // -1 wrapped)."""
import dataclasses
import inspect

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import fuzz_settings
from fusedsl.ir.ops import REGISTRY
from fusedsl.reference import run_module

I = np.iinfo(np.int32)
EDGES = np.array([I.min, I.min + 1, -2 ** 24 - 1, -2 ** 24, -7, -1, 0, 1, 2, 7, 2 ** 24 + 1, 123456789,
                  I.max - 1, I.max], np.int32)
N = 48


def divisions(a, b):
    return (fs.floor_divide(a, b), fs.remainder(a, b), fs.fmod(a, b), fs.div(a, b, rounding_mode="trunc"),
            fs.floor_divide(a, -7), fs.remainder(a, 2 ** 30 + 3))


def numpy_divisions(a, b):
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    safe = np.where(b64 == 0, 1, b64)
    trunc = np.where(b64 == 0, 0, np.sign(a64) * np.sign(safe) * (np.abs(a64) // np.abs(safe)))
    with np.errstate(all="ignore"):
        return (np.floor_divide(a, b), np.remainder(a, b), np.fmod(a, b), trunc.astype(np.int32),
                np.floor_divide(a, np.int32(-7)), np.remainder(a, np.int32(2 ** 30 + 3)))


def _equal(got, want):
    for n, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, n
        bad = np.flatnonzero(g != w)
        assert bad.size == 0, f"output {n}: {bad.size} wrong, first at {bad[0]}: got {g[bad[0]]}, numpy {w[bad[0]]}"


@pytest.fixture(scope="module")
def kernel():
    spec = fs.spec((N,), fs.int32)
    return fs.fused_kernel(divisions).compile(spec, spec)


_VALUE = st.one_of(st.integers(I.min, I.max), st.sampled_from(EDGES.tolist()), st.integers(-300, 300))


@fuzz_settings(scale=0.5)
@given(st.lists(_VALUE, min_size=N, max_size=N), st.lists(_VALUE, min_size=N, max_size=N))
def test_int32_division_is_numpys_over_all_of_int32(kernel, a, b):
    """The LLVM executor (kernel(*arrays)) and the numpy reference, negative divisors, 0 and the
    INT_MIN / -1 pair included."""
    a, b = np.array(a, np.int32), np.array(b, np.int32)
    a[:2], b[:2] = (I.min, 5), (-1, 0)
    want = numpy_divisions(a, b)
    _equal(kernel(a, b), want)
    _equal(run_module(kernel.graph, [a, b]), want)


@pytest.fixture(scope="module", params=("ascend310p", "ascend910"))
def chip_kernel(request):
    """The int32 divisions printed for a target without a float32 -> int32 Cast (one build)."""
    spec = fs.spec((N,), fs.int32)
    return fs.fused_kernel(divisions).compile(spec, spec, target=request.param)


@fuzz_settings(scale=0.5)
@given(st.lists(_VALUE, min_size=N, max_size=N), st.lists(_VALUE, min_size=N, max_size=N))
def test_int32_division_prints_exactly_for_chips_without_a_float_to_int32_cast(chip_kernel, a, b):
    """The simulated Ascend C of 310P / 910A (every int32 cast there is of an integer up to 2048,
    exact through half) equals numpy over all of int32."""
    a, b = np.array(a, np.int32), np.array(b, np.int32)
    a[:4], b[:4] = (I.min, 5, I.max, I.min), (-1, 0, 1, I.min)
    _equal(chip_kernel.simulate(a, b), numpy_divisions(a, b))


def test_every_int32_cast_of_the_division_is_of_a_small_integer(monkeypatch):
    """The property the exactness on 310P / 910A rests on, checked where it is used: every
    float32 -> int32 cast in the traced graph of the four divisions gets integers of at most 2048
    in magnitude (recorded by the reference interpreter's cast rule) -- a change to the digit
    steps that casts a larger value fails here, not only on a chip's simulate."""
    rng = np.random.default_rng(1)
    a = np.concatenate([np.repeat(EDGES, EDGES.size), rng.integers(I.min, I.max, 4000, endpoint=True)]).astype(np.int32)
    b = np.concatenate([np.tile(EDGES, EDGES.size), rng.integers(I.min, I.max, 2000, endpoint=True),
                        rng.integers(-3000, 3000, 2000)]).astype(np.int32)
    k = fs.fused_kernel(divisions).compile(a, b)
    cast = REGISTRY["cast"]
    seen = []

    def recording(args, attrs):
        if args[0].dtype == np.float32 and attrs["dtype"] == "int32":
            seen.append(args[0])
        return cast.ref(args, attrs)

    monkeypatch.setitem(REGISTRY, "cast", dataclasses.replace(cast, ref=recording))
    _equal(run_module(k.graph, [a, b]), numpy_divisions(a, b))
    assert len(seen) >= 4 * 4
    biggest = max(float(np.max(np.abs(x))) for x in seen)
    assert biggest <= 2048 and all(np.array_equal(x, np.rint(x)) for x in seen), biggest


def eight_bit(c, d, u, v):
    return fs.floor_divide(c, d), fs.remainder(c, d), fs.fmod(c, d), fs.div(c, d, rounding_mode="trunc"), \
        fs.floor_divide(u, v), fs.remainder(u, v)


def numpy_eight_bit(c, d, u, v):
    c64, d64 = c.astype(np.int64), d.astype(np.int64)
    safe = np.where(d64 == 0, 1, d64)
    trunc = np.where(d64 == 0, 0, np.sign(c64) * np.sign(safe) * (np.abs(c64) // np.abs(safe)))
    with np.errstate(all="ignore"):
        return (np.floor_divide(c, d), np.remainder(c, d), np.fmod(c, d), trunc.astype(np.int8),
                np.floor_divide(u, v), np.remainder(u, v))


TARGETS = ("ascend910b", "ascend310p", "ascend910")


@pytest.mark.parametrize("target", TARGETS)
def test_the_printed_ascendc_divides_int32_and_8bit_exactly(target):
    """Every pair of the int32 edge values and random int32 pairs, and every int8 / uint8 pair
    (-128 // -1 wraps to -128 as numpy's int8: the chip's narrowing cast would saturate), through
    the simulated Ascend C of each target (one build each; 310P and 910A cast float32 -> int32
    through half, so before the digit steps of _int32_division 3270 of the 7176 int32 results
    were wrong there), the LLVM executor and the reference."""
    rng = np.random.default_rng(0)
    a = np.concatenate([np.repeat(EDGES, EDGES.size), rng.integers(I.min, I.max, 1000, endpoint=True)]).astype(np.int32)
    b = np.concatenate([np.tile(EDGES, EDGES.size), rng.integers(I.min, I.max, 500, endpoint=True),
                        rng.integers(-300, 300, 500)]).astype(np.int32)
    i = np.arange(256)
    c, d = np.repeat(i - 128, 256).astype(np.int8), np.tile(i - 128, 256).astype(np.int8)
    u, v = np.repeat(i, 256).astype(np.uint8), np.tile(i, 256).astype(np.uint8)
    k = fs.fused_kernel(lambda a, b, c, d, u, v: (*divisions(a, b), *eight_bit(c, d, u, v))).compile(
        a, b, c, d, u, v, target=target)
    want = (*numpy_divisions(a, b), *numpy_eight_bit(c, d, u, v))
    for got in (k.simulate(a, b, c, d, u, v), k(a, b, c, d, u, v), run_module(k.graph, [a, b, c, d, u, v])):
        _equal(got, want)


def test_the_floor_division_operator_names_fs_floor_divide():
    x = np.arange(6, dtype=np.int32)
    with pytest.raises(fs.TraceError) as info:
        fs.fused_kernel(lambda a: a // 2)(x)
    line = inspect.currentframe().f_lineno - 1
    assert "floor division (//) is not supported" in info.value.message
    assert "fs.floor_divide(a, b)" in info.value.hint and info.value.loc.file == __file__
    assert info.value.loc.line == line
    with pytest.raises(fs.TraceError) as info:
        fs.fused_kernel(lambda a: a % 2)(x)
    assert "fs.remainder(a, b)" in info.value.hint and info.value.loc.line == inspect.currentframe().f_lineno - 1
