"""int32 -> int8 / uint8 casts in the printed Ascend C wrap like numpy (lower/vector.py
`_wrapping_8bit_cast`).  No chip has that Cast (ASCENDC.md 2.4), and 8-bit sign, bitwise ops
and shifts compute in int32 and cast back, so all of them were refused on every target
("has no Cast from int32 to int8").  A value below 2**24 is cast to float32, wrapped there and
narrowed through half; one of unknown size is first cut to its low 16 bits with And (ascend910b,
ascend310p).  ascend910 has no And: a cast of an unbounded int32 and the bitwise ops stay refused
there, at the user's line, saying what to do."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import fuzz_settings

TARGETS = ("ascend910b", "ascend310p", "ascend910")
N = 200


def _any_chip(x, y):
    return fs.sign(x), fs.left_shift(x, 3), fs.left_shift(y, 5), fs.negative(fs.sign(y))


def _numpy_any_chip(x, y):
    return np.sign(x), np.left_shift(x, np.int8(3)), np.left_shift(y, np.uint8(5)), -np.sign(y)


def _with_and(x, y, w):
    return (fs.bitwise_xor(x, fs.right_shift(x, 1)), fs.bitwise_and(x, 85), fs.bitwise_or(y, 6), fs.invert(x),
            fs.right_shift(x, 3), w.astype(fs.int8), w.astype(fs.uint8))


def _numpy_with_and(x, y, w):
    return (x ^ (x >> 1), x & 85, y | 6, ~x, x >> 3, w.astype(np.int8), w.astype(np.uint8))


def _inputs(rng):
    x = rng.integers(-128, 128, N).astype(np.int8)
    x[:6] = (-128, 127, -1, 0, 1, -127)
    y = rng.integers(0, 256, N).astype(np.uint8)
    y[:3] = (0, 255, 128)
    w = rng.integers(-2 ** 31, 2 ** 31, N, dtype=np.int64).astype(np.int32)
    w[:8] = (-2 ** 31, 2 ** 31 - 1, -129, 128, 255, 256, -1, 2 ** 24 + 129)
    return x, y, w


def _check(got, want):
    for n, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, n
        bad = np.flatnonzero(g != w)
        assert bad.size == 0, f"output {n}: {bad.size} of {g.size} wrong, first got {g[bad[0]]}, numpy {w[bad[0]]}"


@pytest.mark.parametrize("target", TARGETS)
def test_8bit_sign_and_shifts_print_and_wrap_like_numpy(target):
    x, y, _ = _inputs(np.random.default_rng(1))
    k = fs.fused_kernel(_any_chip).compile(x, y, target=target)
    k.check_ascendc()
    want = _numpy_any_chip(x, y)
    _check(k.simulate(x, y), want)
    _check(k(x, y), want)


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_8bit_bitwise_ops_and_any_int32_cast_print_where_the_chip_has_and(target):
    x, y, w = _inputs(np.random.default_rng(2))
    k = fs.fused_kernel(_with_and).compile(x, y, w, target=target)
    k.check_ascendc()
    want = _numpy_with_and(x, y, w)
    _check(k.simulate(x, y, w), want)
    _check(k(x, y, w), want)


@pytest.fixture(scope="module")
def with_and_310p():
    return fs.fused_kernel(_with_and).compile(fs.spec((N,), fs.int8), fs.spec((N,), fs.uint8),
                                              fs.spec((N,), fs.int32), target="ascend310p")


@fuzz_settings(scale=0.1)
@given(data=st.data())
def test_generated_values_wrap_like_numpy(with_and_310p, data):
    i8 = st.one_of(st.integers(-128, 127), st.sampled_from([-128, -1, 0, 127]))
    u8 = st.one_of(st.integers(0, 255), st.sampled_from([0, 128, 255]))
    i32 = st.one_of(st.integers(-2 ** 31, 2 ** 31 - 1), st.integers(-300, 300),
                    st.sampled_from([-2 ** 31, 2 ** 31 - 1, 2 ** 24, -2 ** 24 - 1]))
    x = np.array(data.draw(st.lists(i8, min_size=N, max_size=N)), np.int8)
    y = np.array(data.draw(st.lists(u8, min_size=N, max_size=N)), np.uint8)
    w = np.array(data.draw(st.lists(i32, min_size=N, max_size=N)), np.int32)
    want = _numpy_with_and(x, y, w)
    _check(with_and_310p.simulate(x, y, w), want)
    _check(with_and_310p(x, y, w), want)


def test_ascend910_refuses_an_unbounded_int32_to_int8_cast_at_the_users_line():
    w = np.arange(N, dtype=np.int32)

    def narrow(w):
        return w.astype(fs.int8)   # LINE-MARK narrow

    k = fs.fused_kernel(narrow).compile(w, target="ascend910")
    np.testing.assert_array_equal(k(w), w.astype(np.int8))   # the CPU executors still run it
    with pytest.raises(fs.ScheduleError) as info:
        k.check_ascendc()
    text = str(info.value)
    assert f"test_int8_from_int32.py:{narrow.__code__.co_firstlineno + 1}" in text
    assert "ascend910 has no Cast from int32 to int8 and no bitwise And" in text
    assert "target ascend910b / ascend310p" in text
    assert "fusedsl/" not in text


def test_ascend910_refuses_8bit_xor_saying_what_to_do():
    x = np.arange(N, dtype=np.int32).astype(np.int8)

    def xor(x, y):
        return fs.bitwise_xor(x, y)

    k = fs.fused_kernel(xor).compile(x, x, target="ascend910")
    with pytest.raises(fs.ScheduleError) as info:
        k.check_ascendc()
    text = str(info.value)
    assert f"test_int8_from_int32.py:{xor.__code__.co_firstlineno + 1}" in text
    assert "bitwise_xor on int32 is not available on ascend910" in text
    assert "still runs on the CPU executors" in text
