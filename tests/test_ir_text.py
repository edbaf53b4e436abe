"""The text form of the IR: the printer's exact output, print -> parse -> print, parse errors."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

import fusedsl as fs
from fusedsl import dtypes as dt
from fusedsl.errors import Loc
from fusedsl.ir import Builder, Module, TensorType, parse_type, print_module
from fusedsl.reference import run_module

EXAMPLE = '''\
func @f(%a: f32[128], %b: f32[M,128]) -> (f32[M,128]) loc("k.py":3) {
  %0 = abs(%a) : f32[128] loc("k.py":4)
  %1 = add(%0, %b) : f32[M,128] loc("k.py":4)
  %2 = leaky_relu(%1) {alpha = 0.1} : f32[M,128] loc("k.py":5)
  return %2
}
'''


def build_example() -> Module:
    b = Builder("f", Loc("k.py", 3))
    a = b.param(TensorType((128,), dt.float32), "a")
    m = b.param(TensorType(("M", 128), dt.float32), "b")
    x = b.op1("abs", [a], loc=Loc("k.py", 4))
    x = b.op1("add", [x, m], loc=Loc("k.py", 4))
    x = b.op1("leaky_relu", [x], {"alpha": 0.1}, loc=Loc("k.py", 5))
    return Module((b.finish([x]),))


def round_trip(text: str) -> str:
    again = str(fs.parse_ir(text))
    assert str(fs.parse_ir(again)) == again
    return again


def test_printer_output_is_exact():
    assert str(build_example()) == EXAMPLE
    assert print_module(build_example()) == EXAMPLE


def test_parse_then_print_gives_the_same_text():
    assert round_trip(EXAMPLE) == EXAMPLE


def test_printing_is_deterministic():
    assert str(build_example()) == str(build_example())


def test_traced_kernel_prints_its_source_lines():
    @fs.fused_kernel
    def abs_add_relu(a, b):
        return fs.relu(fs.abs(a) + b)
    text = str(abs_add_relu.trace(fs.spec((128,), "float32"), fs.spec(("M", 128), "float32")))
    line = abs_add_relu.fn.__code__.co_firstlineno   # the decorator's line
    assert text == (
        f'func @abs_add_relu(%a: f32[128], %b: f32[M,128]) -> (f32[M,128]) loc("{__file__}":{line}) {{\n'
        f'  %0 = abs(%a) : f32[128] loc("{__file__}":{line + 2})\n'
        f'  %1 = add(%0, %b) : f32[M,128] loc("{__file__}":{line + 2})\n'
        f'  %2 = relu(%1) : f32[M,128] loc("{__file__}":{line + 2})\n'
        f'  return %2\n'
        f'}}\n')
    assert round_trip(text) == text


def test_every_attribute_kind_round_trips():
    text = '''\
func @attrs(%x: f32[2,3]) -> (f32[2,3], f32[3,2], f32[1,3], f32[2,3], f32[2,3], f32[2,3], f32[2,3], f32[2,3]) loc("a.py":1) {
  %0 = constant() {dtype = "float32", value = -1.5e-07} : f32[] loc("a.py":2)
  %1 = constant() {dtype = "float32", value = inf} : f32[] loc("a.py":2)
  %2 = constant() {dtype = "float32", value = -inf} : f32[] loc("a.py":2)
  %3 = constant() {dtype = "float32", value = nan} : f32[] loc("a.py":2)
  %4 = constant() {dtype = "float32", value = -0.0} : f32[] loc("a.py":2)
  %5 = transpose(%x) {perm = [1, 0]} : f32[3,2] loc("a.py":3)
  %6 = sum(%x) {axes = [0], keepdims = true} : f32[1,3] loc("a.py":4)
  %7 = add(%x, %0) : f32[2,3] loc("a.py":5)
  %8 = mul(%x, %1) : f32[2,3] loc("a.py":5)
  %9 = mul(%x, %2) : f32[2,3] loc("a.py":5)
  %10 = add(%x, %3) : f32[2,3] loc("a.py":5)
  %11 = mul(%x, %4) : f32[2,3] loc("a.py":5)
  return %x, %5, %6, %7, %8, %9, %10, %11
}
'''
    module = fs.parse_ir(text)   # returning a parameter (%x) is allowed
    assert str(module) == text
    constants = [op.attr("value") for op in module.main.ops if op.name == "constant"]
    assert constants[0] == -1.5e-07 and constants[1] == math.inf and constants[2] == -math.inf
    assert math.isnan(constants[3]) and math.copysign(1, constants[4]) == -1


def test_int_bool_and_list_attributes_round_trip():
    text = '''\
func @g(%x: i8[4,6], %c: i1[4,6]) -> (i8[2,6], i8[4,6], f32[4,6], i8[6,4], i8[4,6,1]) loc("g.py":1) {
  %0 = slice(%x) {starts = [0, 0], steps = [2, 1], stops = [4, 6]} : i8[2,6] loc("g.py":2)
  %1 = constant() {dtype = "int8", value = -3} : i8[] loc("g.py":3)
  %2 = where(%c, %x, %1) : i8[4,6] loc("g.py":3)
  %3 = constant() {dtype = "bool", value = true} : i1[] loc("g.py":4)
  %4 = cast(%x) {dtype = "float32"} : f32[4,6] loc("g.py":5)
  %5 = transpose(%2) {perm = [1, 0]} : i8[6,4] loc("g.py":6)
  %6 = reshape(%x) {shape = [4, 6, 1]} : i8[4,6,1] loc("g.py":7)
  return %0, %2, %4, %5, %6
}
'''
    assert round_trip(text) == text


def test_symbolic_dims_scalars_multiple_functions_and_calls_round_trip():
    text = '''\
func @k(%x: f32[M,8]) -> (f32[M,8]) loc("k.py":1) {
  %0 = exp(%x) : f32[M,8] loc("k.py":2)
  return %0
}

func @main(%a: f32[M,8], %alpha: f32[] scalar) -> (f32[M,8], f32[M,8]) loc("k.py":5) {
  %0 = call(%a) {callee = "k"} : f32[M,8] loc("k.py":6)
  %1 = mul(%0, %alpha) : f32[M,8] loc("k.py":7)
  %2 = reshape(%1) {shape = ["M", 2, 4]} : f32[M,2,4] loc("k.py":8)
  %3 = reshape(%2) {shape = ["M", 8]} : f32[M,8] loc("k.py":8)
  return %3, %0
}
'''
    module = fs.parse_ir(text)
    assert str(module) == text
    assert module.main.params[1].kind == "scalar"
    assert module.main.params[0].value.shape == ("M", 8)
    out, called = run_module(module, [np.ones((3, 8), np.float32), np.float32(2)])
    np.testing.assert_allclose(out, 2 * np.e, rtol=1e-6)
    np.testing.assert_allclose(called, np.e, rtol=1e-6)


def test_locations_with_quotes_backslashes_and_unicode_round_trip():
    b = Builder("f", Loc('C:\\dir "x"\\é.py', 1))
    x = b.param(TensorType((2,), dt.float32), "x")
    module = Module((b.finish([b.op1("exp", [x], loc=Loc("tab\there.py", 2))]),))
    text = str(module)
    parsed = fs.parse_ir(text)
    assert str(parsed) == text
    assert parsed.main.loc == Loc('C:\\dir "x"\\é.py', 1)
    assert parsed.main.ops[0].loc == Loc("tab\there.py", 2)


def test_parameter_names_are_sanitised_and_unique():
    b = Builder("f")
    p1 = b.param(TensorType((2,), dt.float32), "my-arg")
    p2 = b.param(TensorType((2,), dt.float32), "my_arg")
    p3 = b.param(TensorType((2,), dt.float32), "0")
    text = str(Module((b.finish([b.op1("add", [b.op1("add", [p1, p2]), p3])]),)))
    assert text.startswith("func @f(%my_arg: f32[2], %my_arg_1: f32[2], %a0: f32[2])")
    assert round_trip(text) == text


def fünf(a):
    return a * 5


def test_kernel_names_become_ascii_identifiers():
    import functools
    for fn, name in ((lambda a: a + 1, "lambda"), (fünf, "f_nf"),
                     (functools.partial(lambda a, b: a * b, b=2.0), "partial")):
        text = str(fs.fused_kernel(fn).trace(np.ones(2, np.float32)))
        assert text.startswith(f"func @{name}(")
        assert round_trip(text) == text


def test_comments_and_blank_lines_are_ignored():
    commented = "// a comment\n\n" + EXAMPLE.replace("  return %2", "  // the end\n  return %2")
    assert str(fs.parse_ir(commented)) == EXAMPLE


def test_parse_type():
    assert parse_type("f32[M, 128]") == TensorType(("M", 128), dt.float32)
    assert parse_type("bf16[]") == TensorType((), dt.bfloat16)
    assert parse_type("i1[1,2,3]") == TensorType((1, 2, 3), dt.bool_)
    for bad in ("f32[1,,2]", "f32[-1]", "f64[2]", "f32"):
        with pytest.raises((ValueError, KeyError)):
            parse_type(bad)


# ---- malformed text: line:column, a caret and the reason ---------------------------------------
def parse_error(text: str) -> str:
    with pytest.raises(fs.IRParseError) as excinfo:
        fs.parse_ir(text)
    return str(excinfo.value)


@pytest.mark.parametrize("old, new, where, message", [
    ("abs(%a)", "abs(%a", "2:15", "unexpected ':'"),
    ("abs(%a)", "abz(%a)", "2:8", "unknown op 'abz'"),
    ("abs(%a)", "abs(%q)", "2:12", "%q is used before it is defined"),
    ("%1 = add", "%0 = add", "3:3", "%0 is defined twice"),
    (": f32[128] loc(\"k.py\":4)\n  %1", ": f16[128] loc(\"k.py\":4)\n  %1", "2:8",
     "abs gives f32\\[128\\], but the text declares f16\\[128\\]"),
    ("-> (f32[M,128])", "-> (f16[M,128])", "5:3", "declares results \\(f16\\[M,128\\]\\) but returns"),
    ("{alpha = 0.1}", "{alpha = 0.1, alpha = 0.2}", "4:37", "attribute alpha is given twice"),
    ("{alpha = 0.1}", "", "4:8", "leaky_relu needs attribute\\(s\\) alpha"),
    ("%b: f32[M,128]", "%b: f32[M,,128]", "1:27", "bad shape"),
    ("%b: f32[M,128]", "%b: f64[M,128]", "1:27", "unexpected 'f64'"),
    ("%b: f32[M,128]", "%a: f32[M,128]", "1:23", "%a is defined twice"),
    ("add(%0, %b)", "add(%0, %0, %b)", "3:8", "add takes 2 operand\\(s\\), got 3"),
    ("  return %2\n}", "  return %2\n", "5:10", "unexpected end of input"),
    ("loc(\"k.py\":5)", "loc(\"k.py\")", "4:60", "unexpected .\\)'; expected one of COLON"),
    ("%2 = leaky", "%2 = £leaky", "4:8", "unexpected character '£'"),
])
def test_parse_errors_point_at_line_and_column(old, new, where, message):
    assert old in EXAMPLE
    text = EXAMPLE.replace(old, new, 1)
    error = parse_error(text)
    assert re.search(rf"<ir>:{where}: .*{message}", error), error
    line, column = map(int, where.split(":"))
    lines = error.splitlines()
    src = text.splitlines()[line - 1]
    at = lines.index("  " + src)
    assert lines[at + 1] == "  " + " " * (column - 1) + "^", error
    assert "hint: compare with the output of print(k.ir)" in error


def test_parse_errors_on_functions():
    assert "<ir>:8:6: function @f is defined twice" in parse_error(EXAMPLE + "\n" + EXAMPLE)
    call = EXAMPLE.replace("abs(%a)", 'call(%a) {callee = "g"}')
    assert "call to @g, which is not defined above" in parse_error(call)


def test_parse_ir_needs_text():
    with pytest.raises(fs.IRParseError, match="parse_ir needs a str of IR text, got bytes"):
        fs.parse_ir(EXAMPLE.encode())


def test_empty_text_is_an_empty_module():
    assert fs.parse_ir("").functions == ()
    with pytest.raises(fs.VerifyError, match="no function"):
        fs.parse_ir("").main
