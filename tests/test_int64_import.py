"""Imported int64 values: fusedsl runs them in int32, so a call whose int64 values (inputs, or
what the model computes from them) fit in int32 gives torch's / onnxruntime's answer and one
that could pass int32 raises IntRangeError at the model line (torch) or the call (ONNX),
never a wrapped answer.  One export per model (torch.export costs seconds)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import fuzz_settings
from fusedsl.ir.parser import parse_ir

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

I32 = 2 ** 31


class IntMath(torch.nn.Module):
    """int64 matmul, sum, cumsum and elementwise arithmetic; int32 input summed into int64."""

    def forward(self, a, b, c):
        y = a @ b                      # LINE: matmul
        s = y.sum(dim=1)               # LINE: sum
        z = (a * 3 - 7).cumsum(1)      # LINE: cumsum
        w = c.sum() + s.max()          # LINE: int32 sum
        return y, s, z, w


def _line(cls, mark):
    lines, first = inspect.getsourcelines(cls)
    return first + next(i for i, text in enumerate(lines) if f"# LINE: {mark}" in text)


@pytest.fixture(scope="module")
def intmath():
    rng = np.random.default_rng(0)
    a = torch.from_numpy(rng.integers(-50, 50, (3, 5)))
    b = torch.from_numpy(rng.integers(-50, 50, (5, 4)))
    c = torch.from_numpy(rng.integers(-100, 100, (6,)).astype(np.int32))
    return fs.from_torch(IntMath(), a, b, c)


def _equal_to_torch(k, *args):
    got = k(*args)
    want = IntMath()(*(torch.from_numpy(a) for a in args))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g).astype(np.int64), w.numpy())


def test_int64_arithmetic_that_fits_in_int32_equals_torch(intmath):
    rng = np.random.default_rng(1)
    # near the edge: |y| up to 5 * 9000**2, its row sums 20 * 9000**2 = 1.6e9, plus c.sum() 6 * 2**26 < 2**31
    a = rng.integers(-9000, 9000, (3, 5))
    b = rng.integers(-9000, 9000, (5, 4))
    c = rng.integers(-I32 // 32, I32 // 32, (6,)).astype(np.int32)
    _equal_to_torch(intmath, a, b, c)
    _equal_to_torch(intmath, torch.from_numpy(a).numpy(), b, np.zeros(6, np.int32))


def test_an_int64_matmul_past_int32_raises_at_the_model_line(intmath):
    a = np.full((3, 5), 100_000, np.int64)
    b = np.full((5, 4), 100_000, np.int64)
    want = IntMath()(torch.from_numpy(a), torch.from_numpy(b), torch.zeros(6, dtype=torch.int32))[0]
    assert int(want.max()) == 50_000_000_000   # what torch gives; int32 would wrap it
    with pytest.raises(fs.IntRangeError) as info:
        intmath(a, b, np.zeros(6, np.int32))
    err = info.value
    assert "the int64 result of aten.matmul" in err.message and "can reach 50000000000" in err.message
    assert "beyond int32" in err.message and "torch computes it in int64" in err.message
    assert "convert to float32 in the model" in err.hint
    assert err.loc.file == __file__ and err.loc.line == _line(IntMath, "matmul")
    assert isinstance(err, fs.ArgumentError)


def test_an_int32_sum_that_torch_widens_to_int64_is_checked(intmath):
    """torch sums int32 into int64; fusedsl's int32 sum would wrap past 2**31."""
    a, b = np.ones((3, 5), np.int64), np.ones((5, 4), np.int64)
    c = np.full(6, I32 // 4, np.int32)   # 6 * 2**29 > 2**31
    with pytest.raises(fs.IntRangeError, match=r"aten\.sum\.default can reach") as info:
        intmath(a, b, c)
    assert info.value.loc.line == _line(IntMath, "int32 sum")


def test_an_int64_input_past_int32_is_named_at_the_call(intmath):
    a = np.ones((3, 5), np.int64)
    a[1, 2] = 5_000_000_000
    with pytest.raises(fs.IntRangeError, match="int64 input 'a' holds 5000000000, outside the int32 range") as info:
        intmath(a, np.ones((5, 4), np.int64), np.zeros(6, np.int32))   # the call's line
    assert info.value.loc.file == __file__
    assert info.value.loc.line == inspect.currentframe().f_lineno - 2


@fuzz_settings(scale=0.2)
@given(st.integers(0, 40), st.integers(0, 40), st.integers(0, 31), st.integers(0, 2 ** 32))
def test_either_torch_s_answer_or_a_range_error(intmath, ea, eb, ec, seed):
    """Soundness: whenever torch's int64 answer leaves int32 the call raises, and whenever it
    returns, every result equals torch's (magnitudes from 1 to 2**40)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-(2 ** ea), 2 ** ea + 1, (3, 5))
    b = rng.integers(-(2 ** eb), 2 ** eb + 1, (5, 4))
    c = rng.integers(-(2 ** ec), 2 ** ec, (6,)).astype(np.int32)
    want = IntMath()(torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c))
    fits = all(int(w.min()) >= -I32 and int(w.max()) < I32 for w in want) and max(abs(a).max(), abs(b).max()) < I32
    ma, mb, mc = (int(abs(v.astype(np.int64)).max()) for v in (a, b, c))
    bound = max(20 * ma * mb, 5 * (3 * ma + 7), 6 * mc + 20 * ma * mb)   # interval bounds from |values|
    try:
        got = intmath(a, b, c)
    except fs.IntRangeError:
        assert not fits or bound >= I32   # refused: past int32, or its sound bound is
        return
    assert fits
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g).astype(np.int64), w.numpy())


def test_index_inputs_need_no_range_check_and_int64_buffers_past_int32_are_named():
    class Embed(torch.nn.Module):
        def __init__(self, offset=2):
            super().__init__()
            self.emb = torch.nn.Embedding(10, 3)
            self.register_buffer("offset", torch.tensor([0, 1, offset]))

        def forward(self, i):
            return self.emb(i) * 2.0 + self.offset[2]

    i = torch.tensor([1, 4, 9])
    m = Embed().eval()
    k = fs.from_torch(m, i)
    assert not k.range_check.active   # int64 indices only: as_array's int32 check is all
    np.testing.assert_allclose(k(np.array([0, 9, 3])), m(torch.tensor([0, 9, 3])).detach().numpy(), rtol=1e-6)
    with pytest.raises(fs.IntRangeError, match="int64 buffer 'offset' holds 5000000000") as info:
        fs.from_torch(Embed(5_000_000_000).eval(), i)
    assert info.value.loc.file == __file__ and info.value.loc.line == inspect.currentframe().f_lineno - 1


class Mixed(torch.nn.Module):
    """The other int64 rules: mul / sub / where / neg / abs / clamp / maximum / remainder / floor
    division / cat and index / prod / bitwise ops, and torch's int64 prod / cumsum / cumprod of int8."""

    def forward(self, a, b, idx, c):
        p = a * b - a
        q = torch.where(a > 0, p, -b).abs()
        r = torch.clamp(q, max=1000) + torch.maximum(a, b)
        s = torch.remainder(p, 7) + torch.div(p, 3, rounding_mode="floor")   # LINE: remainder
        t = (torch.cat([a, b], 1)[:, idx] * 3).prod(1)
        u = (a & 0xFF) | (b >> 2)
        return p, q, r, s, t, u, c.prod(1), c.cumsum(1), c.cumprod(1)


@pytest.fixture(scope="module")
def mixed():
    rng = np.random.default_rng(3)
    return fs.from_torch(Mixed(), torch.from_numpy(rng.integers(-9, 9, (4, 6))),
                         torch.from_numpy(rng.integers(-9, 9, (4, 6))), torch.tensor([1, 8]),
                         torch.from_numpy(rng.integers(-9, 9, (4, 5)).astype(np.int8)))


@fuzz_settings(scale=0.2)
@given(st.integers(0, 36), st.integers(0, 36), st.integers(0, 7), st.integers(0, 2 ** 32))
def test_every_rule_gives_torch_s_answer_or_a_range_error(mixed, ea, eb, ec, seed):
    """Soundness of the other rules: a call that returns equals torch's int64 results (the int8
    reductions included, widened to int32 as torch widens them to int64); small inputs never
    raise."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-(2 ** ea), 2 ** ea + 1, (4, 6))
    b = rng.integers(-(2 ** eb), 2 ** eb + 1, (4, 6))
    idx = rng.integers(0, 12, 2)
    c = rng.integers(-(2 ** ec), 2 ** ec, (4, 5)).astype(np.int8)
    want = Mixed()(*(torch.from_numpy(v) for v in (a, b, idx, c)))
    try:
        got = mixed(a, b, idx, c)
    except fs.IntRangeError:
        assert max(ea, eb) >= 7 or ec >= 5   # within these the bounds fit in int32
        return
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g).astype(np.int64), w.numpy())


class Division(torch.nn.Module):
    """Integer division and remainder of int64 values past 2**24 (fusedsl's are exact over int32)."""

    def forward(self, a, b):
        q = torch.div(a, b, rounding_mode="floor")   # LINE: floor
        return q, torch.remainder(a, b), torch.fmod(a, b), torch.div(a, b, rounding_mode="trunc"), \
            torch.remainder(a, -7)


@pytest.fixture(scope="module")
def division():
    return fs.from_torch(Division(), torch.tensor([7, -7, 9]), torch.tensor([2, 3, -4]))


_INT32 = st.one_of(st.integers(-I32, I32 - 1), st.sampled_from([-I32, -I32 + 1, -1, 1, 2 ** 24 + 1, I32 - 1]))


@fuzz_settings(scale=0.3)
@given(st.lists(_INT32, min_size=3, max_size=3), st.lists(_INT32.filter(lambda v: v != 0), min_size=3, max_size=3))
def test_int64_division_past_2_24_equals_torch(division, a, b):
    """Operands anywhere in int32 (torch raises on integer division by zero, so b != 0): torch's
    answer, or IntRangeError exactly where torch's quotient leaves int32 (INT_MIN // -1)."""
    a, b = np.array(a, np.int64), np.array(b, np.int64)
    want = Division()(torch.from_numpy(a), torch.from_numpy(b))
    try:
        got = division(a, b)
    except fs.IntRangeError:
        assert (a == -I32).any()   # the quotient's bound |a| reaches 2**31
        return
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g).astype(np.int64), w.numpy())


def test_an_int64_quotient_past_int32_raises_at_the_model_line(division):
    a, b = np.array([-I32, 5, 6]), np.array([-1, 2, 3])
    assert int(Division()(torch.from_numpy(a), torch.from_numpy(b))[0][0]) == I32   # torch's int64; int32 wraps
    with pytest.raises(fs.IntRangeError) as info:
        division(a, b)
    assert "the int64 result of aten.div.Tensor_mode can reach 2147483648" in info.value.message
    assert info.value.loc.file == __file__ and info.value.loc.line == _line(Division, "floor")


def test_onnx_int64_div_and_mod_past_2_24_equal_onnxruntime():
    t = lambda n: helper.make_tensor_value_info(n, TensorProto.INT64, [64])  # noqa: E731
    nodes = [helper.make_node("Div", ["a", "b"], ["q"]), helper.make_node("Mod", ["a", "b"], ["m"]),
             helper.make_node("Mod", ["a", "b"], ["f"], fmod=1)]
    graph = helper.make_graph(nodes, "division", [t("a"), t("b")], [t("q"), t("m"), t("f")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    rng = np.random.default_rng(5)
    a = rng.integers(-I32 + 1, I32, 64)
    b = np.concatenate([rng.integers(-I32 + 1, I32, 32), rng.integers(-300, 300, 32)])
    b[b == 0] = 3
    k = fs.from_onnx(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for g, w in zip(k(a, b), sess.run(None, {"a": a, "b": b})):
        np.testing.assert_array_equal(np.asarray(g).astype(np.int64), w)


# ---- ONNX ------------------------------------------------------------------------------------
def _onnx_model():
    t = lambda n, s: helper.make_tensor_value_info(n, TensorProto.INT64, s)  # noqa: E731
    nodes = [helper.make_node("MatMul", ["a", "b"], ["y"]),
             helper.make_node("ReduceSum", ["y", "ax"], ["s"], keepdims=0),
             helper.make_node("Mul", ["a", "three"], ["a3"]),
             helper.make_node("CumSum", ["a3", "ax"], ["z"])]
    inits = [numpy_helper.from_array(np.array([1], np.int64), "ax"),
             numpy_helper.from_array(np.array(3, np.int64), "three")]
    graph = helper.make_graph(nodes, "intmath", [t("a", [3, 5]), t("b", [5, 4])],
                              [t("y", [3, 4]), t("s", [3]), t("z", [3, 5])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(model)
    return model


def test_onnx_int64_against_onnxruntime_inside_and_outside_int32():
    model = _onnx_model()
    k = fs.from_onnx(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(2)
    for bound in (3, 1000, 10000):   # row sums of y bounded by 20 * bound**2 < 2**31: onnxruntime's answer
        a, b = rng.integers(-bound, bound, (3, 5)), rng.integers(-bound, bound, (5, 4))
        for g, w in zip(k(a, b), sess.run(None, {"a": a, "b": b})):
            np.testing.assert_array_equal(np.asarray(g).astype(np.int64), w)
    a, b = np.full((3, 5), 100_000, np.int64), np.full((5, 4), 100_000, np.int64)
    assert sess.run(None, {"a": a, "b": b})[0].max() == 50_000_000_000
    with pytest.raises(fs.IntRangeError) as info:
        k(a, b)
    assert "the int64 result of ONNX node 1 (MatMul) of intmath.onnx can reach 50000000000" in info.value.message
    assert "onnxruntime computes it in int64" in info.value.message
    assert info.value.loc.file == __file__ and info.value.loc.line == inspect.currentframe().f_lineno - 3
    a[0, 0] = -(2 ** 40)
    with pytest.raises(fs.IntRangeError, match=r"int64 input 'a' holds -1099511627776"):
        k(a, b)


def test_an_int16_value_torch_would_wrap_is_refused_at_the_model_line():
    """fusedsl computes torch's int16 in int32: where torch wraps at 16 bits the call raises."""
    def model(x):
        return (x.short() * 1000).float() + 0.5   # LINE: int16

    k = fs.from_torch(model, torch.tensor([1, 2, 3], dtype=torch.int32))
    small = np.array([1, -32, 7], np.int32)
    np.testing.assert_array_equal(k(small), model(torch.from_numpy(small)).numpy())
    with pytest.raises(fs.IntRangeError) as info:
        k(np.array([100, 2, 3], np.int32))
    assert "the int16 result of aten.mul.Tensor can reach 100000" in info.value.message
    assert "torch wraps it there, fusedsl computes int16 in int32" in info.value.message
    assert info.value.loc.file == __file__ and info.value.loc.line == _line(model, "int16")


# ---- the compiled kernel of an imported model checks as the model's call does ---------------------
def test_a_compiled_imported_model_checks_every_call_and_simulate(intmath):
    rng = np.random.default_rng(4)
    a, b = rng.integers(-9000, 9000, (3, 5)), rng.integers(-9000, 9000, (5, 4))
    c = rng.integers(-1000, 1000, (6,)).astype(np.int32)
    k = intmath.compile(a, b, c)
    want = IntMath()(*(torch.from_numpy(v) for v in (a, b, c)))
    # int64 inputs narrowed as the model's call narrows them, torch tensors and int32 taken too
    for args in ((a, b, c), (torch.from_numpy(a), b, torch.from_numpy(c)), (a.astype(np.int32), b.astype(np.int32), c)):
        for g, w in zip(k(*args, *intmath.weights), want):
            np.testing.assert_array_equal(np.asarray(g).astype(np.int64), w.numpy())
    big = np.full((3, 5), 100_000, np.int32)   # int32 already: the compiled kernel would wrap a @ b
    for run in (k, k.simulate):
        with pytest.raises(fs.IntRangeError) as info:
            run(big, big.T.copy()[:5, :4], c)
        err = info.value
        assert "the int64 result of aten.matmul" in err.message and "can reach 50000000000" in err.message
        assert err.loc.file == __file__ and err.loc.line == _line(IntMath, "matmul")
    a[0, 0] = 5_000_000_000
    with pytest.raises(fs.IntRangeError, match="int64 input 'a' holds 5000000000") as info:
        k(a, b, c)
    assert info.value.loc.file == __file__ and info.value.loc.line == inspect.currentframe().f_lineno - 1


def test_a_compiled_imported_model_refuses_other_integer_weights():
    class Offset(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("off", torch.tensor([0, 7, -3]))

        def forward(self, i):
            return i * 1000 + self.off

    i = torch.tensor([1, 2, 3])
    m = fs.from_torch(Offset(), i)
    k = m.compile(i)
    np.testing.assert_array_equal(k(i, *m.weights), Offset()(i).numpy())
    with pytest.raises(fs.ArgumentError, match="differs from the imported model's integer weight") as info:
        k(i, np.array([0, 7, 2 ** 31 - 1], np.int32))
    assert info.value.loc.file == __file__ and info.value.loc.line == inspect.currentframe().f_lineno - 1


def test_a_compiled_onnx_model_checks_its_calls():
    model = _onnx_model()
    m = fs.from_onnx(model)
    a, b = np.full((3, 5), 100_000, np.int64), np.full((5, 4), 100_000, np.int64)
    small = (np.ones((3, 5), np.int64), np.ones((5, 4), np.int64))
    k = m.compile(*small)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for g, w in zip(k(*small, *m.weights), sess.run(None, dict(zip("ab", small)))):
        np.testing.assert_array_equal(np.asarray(g).astype(np.int64), w)
    with pytest.raises(fs.IntRangeError, match="the int64 result of ONNX node 1 \\(MatMul\\)") as info:
        k(a.astype(np.int32), b.astype(np.int32), *m.weights)
    assert info.value.loc.file == __file__ and info.value.loc.line == inspect.currentframe().f_lineno - 1


# ---- int64 made from floats ----------------------------------------------------------------------
class FromFloats(torch.nn.Module):
    """float -> int64 casts: of a float input (measured at the call), of a float computed from
    ints (bounded statically), of a float no rule bounds (true division: guarded, checked after the
    run; by 4, exact in both)."""

    def forward(self, x, i):
        a = (x * 100.0).long()                           # LINE: measured
        b = (i.float() * 0.5).long() + a
        c = (x / 4.0).long()                             # LINE: guarded
        return a, b, c * 3


@pytest.fixture(scope="module")
def from_floats():
    return fs.from_torch(FromFloats(), torch.randn(6), torch.arange(6))


@fuzz_settings(scale=0.3)
@given(st.integers(0, 36), st.integers(0, 31), st.integers(0, 2 ** 32))
def test_int64_from_floats_equals_torch_or_raises(from_floats, ex, ei, seed):
    """Soundness: a call that returns gives torch's int64 results (magnitudes 1 to 2**36); one
    whose float values cannot leave int32 does not raise."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(6) * 2.0 ** ex).astype(np.float32)
    i = rng.integers(-(2 ** ei), 2 ** ei, 6)
    want = FromFloats()(torch.from_numpy(x), torch.from_numpy(i))
    try:
        got = from_floats(x, i)
    except fs.IntRangeError:
        # refused: past int32, or the bound (|x| rounded out by up to 1/8) is; below these
        # (|x| < ~5 * 2**20: x * 100 < 2**29) every bound fits
        assert ex >= 21 or ei >= 29
        return
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g).astype(np.int64), w.numpy())


def test_casts_from_floats_past_int32_raise_at_the_model_line(from_floats):
    i = np.arange(6)
    k = from_floats.compile(np.ones(6, np.float32), i)
    assert len(from_floats.range_check.guards) == 1   # division has no float rule: its cast is guarded
    big = np.full(6, 3e7, np.float32)                   # x * 100 = 3e9
    with pytest.raises(fs.IntRangeError) as info:
        from_floats(big, i)
    assert "the int64 result of aten._to_copy.default can reach" in info.value.message
    assert "x.clamp(" in info.value.hint and info.value.loc.file == __file__
    assert info.value.loc.line == _line(FromFloats, "measured")
    nan = np.array([1.0, np.nan, 2, 3, 4, 5], np.float32)
    with pytest.raises(fs.IntRangeError, match="is cast from float values fusedsl cannot bound") as info:
        from_floats(nan, i)
    assert info.value.loc.line == _line(FromFloats, "measured")
    # x / 4 leaves int32 only where x * 100 is refused first, so the guarded cast's own check is
    # seen through a model whose only cast is guarded (below); here its result times 3 is checked
    # with its measured bound after the run, on every call path
    x = np.full(6, 300_000.0, np.float32)              # c = 75000, c * 3 fits; x * 100 = 3e7 fits
    for run in (from_floats, k, k.simulate):
        got = run(x, i)
        np.testing.assert_array_equal(got[2], FromFloats()(torch.from_numpy(x), torch.from_numpy(i))[2].numpy())


class Guarded(torch.nn.Module):
    def forward(self, x):
        return torch.exp(x).long() * 2                   # LINE: exp


def test_a_guarded_cast_is_checked_after_the_run_on_every_call_path():
    m = fs.from_torch(Guarded(), torch.zeros(4))
    x = np.array([0.5, 1.0, 2.0, 10.0], np.float32)
    np.testing.assert_array_equal(m(x), Guarded()(torch.from_numpy(x)).numpy())
    k = m.compile(x)
    out = np.zeros(4, np.int32)
    m(x, out=out)
    np.testing.assert_array_equal(out, Guarded()(torch.from_numpy(x)).numpy())
    for run, big, what in ((m, 25.0, "a value of magnitude 7.2"), (k, np.inf, "NaN or infinity"),
                           (m, 21.2, "int64 result of aten.mul.Tensor can reach")):   # 1.6e9 * 2
        with pytest.raises(fs.IntRangeError) as info:
            run(np.array([0.0, 1.0, big, 2.0], np.float32))
        assert what in info.value.message
        assert info.value.loc.file == __file__ and info.value.loc.line == _line(Guarded, "exp")


def test_onnx_casts_from_floats_against_onnxruntime():
    f = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [6])  # noqa: E731
    nodes = [helper.make_node("Sqrt", ["x"], ["s"]), helper.make_node("Cast", ["s"], ["c"], to=TensorProto.INT64),
             helper.make_node("Mul", ["x", "x"], ["m"]), helper.make_node("Cast", ["m"], ["d"], to=TensorProto.INT64),
             helper.make_node("Add", ["c", "d"], ["y"])]
    graph = helper.make_graph(nodes, "casts", [f("x")], [helper.make_tensor_value_info("y", TensorProto.INT64, [6])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    k = fs.from_onnx(model)
    assert [s.label for s in k.range_check.guards] == ["ONNX node 2 (Cast) of casts.onnx"]
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for x in (np.linspace(0, 5, 6), np.array([0, 1, 2, 3, 3e4, 9e3])):   # |x| <= 32768: x * x < 2**30
        x = x.astype(np.float32)
        np.testing.assert_array_equal(np.asarray(k(x)).astype(np.int64), sess.run(None, {"x": x})[0])
    with pytest.raises(fs.IntRangeError) as info:
        k(np.array([0, 1, 2, 3, 4, 5e4], np.float32))   # x * x = 2.5e9
    assert "the int64 result of ONNX node 4 (Cast) of casts.onnx can reach" in info.value.message
    assert info.value.loc.file == __file__ and info.value.loc.line == inspect.currentframe().f_lineno - 2
    with pytest.raises(fs.IntRangeError, match=r"the float input of ONNX node 2 \(Cast\) of casts.onnx holds NaN"):
        k(np.array([0, 1, 2, 3, 4, -1], np.float32))   # sqrt(-1): NaN


def test_a_clamped_nan_input_is_refused_before_its_cast():
    """clamp keeps NaN, whose cast torch and fusedsl answer differently: an unbounded (NaN / inf)
    input stays unbounded through clamp, and its cast is refused at the model line."""
    def model(x):
        return x.clamp(-10.0, 10.0).long()   # LINE: clamp

    m = fs.from_torch(model, torch.zeros(3))
    x = np.array([-50.0, 2.5, 7.9], np.float32)
    np.testing.assert_array_equal(m(x), model(torch.from_numpy(x)).numpy())
    with pytest.raises(fs.IntRangeError, match="is cast from float values fusedsl cannot bound") as info:
        m(np.array([1.0, np.nan, 2.0], np.float32))
    assert "pass finite float values" in info.value.hint
    assert info.value.loc.file == __file__ and info.value.loc.line == _line(model, "clamp")


def test_a_guarded_casts_extra_result_is_explained_where_it_is_seen():
    """The guard (max |exp(x)|) is a real result of the compiled graph and its kernel: k.ir and
    k.source show it, and say first, in comments the IR parser and C++ skip, which result and
    which kernel output it is and which cast it guards; calls and simulate return the model's
    result only.  A kernel without guards has no such comments."""
    m = fs.from_torch(Guarded(), torch.zeros(4))
    x = np.array([0.5, 1.0, 2.0, 10.0], np.float32)
    k = m.compile(x)
    main = k.module.main
    assert len(main.results) == 2 and main.results[1].dtype == fs.float32   # the model's, then the guard
    kernel = k.kernels[0].name
    lines = [f"// @{main.name} returns 1 model result(s), then 1 range guard(s)",
             f"// result 1 of @{main.name}, output y0 of kernel {kernel}: the guard of aten._to_copy.default "
             f"({__file__}:{_line(Guarded, 'exp')})"]
    for text in (k.ir, k.source):
        head = text.split("\n")[:3]
        assert head[0].startswith(lines[0]) and head[2] == lines[1], head
        assert "does not check them" in head[1]
    assert "GM_ADDR y0" in k.source and "// Generated by fusedsl" in k.source
    parse_ir(k.ir)   # the comments keep the text IR parseable
    want = Guarded()(torch.from_numpy(x)).numpy()
    for got in (k(x), k.simulate(x), m(x)):
        np.testing.assert_array_equal(got, want)   # one array: the guard is not handed out
    plain = fs.from_torch(torch.nn.Flatten(0), torch.zeros(2, 3)).compile(np.zeros((2, 3), np.float32))
    assert plain.result_notes == () and plain.ir.startswith("func ")
