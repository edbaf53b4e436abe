"""One test per user mistake: the message, the user's file:line, and a clean traceback.

The mistakes live in tests/user_code/mistakes.py on lines marked `# LINE-MARK <name>`.
Every check also asserts that no fusedsl path appears in the message and that the
traceback holds at most one fusedsl frame (the public entry point) and the user's line.
"""
from __future__ import annotations

import linecache
import os
import re
import traceback

import numpy as np
import pytest

import fusedsl as fs
from conftest import PACKAGE_DIR, PACKAGE_FILES, check_user_error, marked_line
from user_code import mistakes

USER_FILE = mistakes.__file__
F32 = np.float32


def raises_at(mark: str, error, message: str, call, hint: str | None = None):
    """Run `call`, expect `error` located at the LINE-MARK `mark` of the user file."""
    line = marked_line(USER_FILE, mark)
    with pytest.raises(error) as excinfo:
        call()
    check_user_error(excinfo, file=USER_FILE, line=line, message=message)
    text = str(excinfo.value)
    source = linecache.getline(USER_FILE, line).strip()
    assert source in text, f"the user's line is not shown:\n{text}"
    if hint is not None:
        assert re.search(r"hint: .*" + hint, text), f"no hint {hint!r} in:\n{text}"
    return excinfo.value


# ---- the mistakes the issue lists ---------------------------------------------------------
def test_broadcast_mismatch():
    exc = raises_at("broadcast", fs.ShapeError,
                    r"shapes \(3,\), \(4,\) cannot be broadcast together \(axis -1 has sizes 3 and 4\)",
                    lambda: mistakes.add(np.zeros(3, F32), np.zeros(4, F32)), hint="numpy broadcasting")
    assert isinstance(exc, fs.TraceError) and isinstance(exc, fs.FusedslError)


def test_matmul_inner_dimension_mismatch():
    raises_at("matmul", fs.ShapeError, r"matmul inner dimensions differ: \(2, 3\) @ \(4, 5\) \(3 != 4\)",
              lambda: mistakes.matmul(np.zeros((2, 3), F32), np.zeros((4, 5), F32)),
              hint="last axis of the left operand")


def test_unsupported_dtype_float64_array():
    raises_at("float64", fs.DTypeError,
              r"dtype float64 is not supported; fusedsl supports float16, bfloat16, float32, int32, "
              r"int8, uint8, bool", mistakes.call_with_float64, hint=r"\.astype\(np\.float32\)")


def test_python_if_on_traced_tensor():
    raises_at("if", fs.ControlFlowError,
              r"Python control flow \(if/while/and/or/bool\(\)\) needs the value of a traced tensor",
              lambda: mistakes.branch_on_value(np.ones(3, F32)), hint=r"fs\.where\(cond, a, b\)")


def test_bool_of_traced_tensor():
    raises_at("bool", fs.ControlFlowError, r"needs the value of a traced tensor",
              lambda: mistakes.bool_of_tensor(np.ones(3, F32)), hint=r"fs\.where")


@pytest.mark.parametrize("mark, call, got", [
    ("too-few", mistakes.call_with_too_few, 1),
    ("too-many", mistakes.call_with_too_many, 3),
    ("keyword", mistakes.call_with_unknown_keyword, 2),
])
def test_wrong_number_of_arguments(mark, call, got):
    exc = raises_at(mark, fs.ArgumentError, rf"add\(a, b\) takes 2 argument\(s\), got {got}", call,
                    hint="defined at")
    # the hint points at the kernel's definition, in the user's file
    assert f"{USER_FILE}:{mistakes.add.def_loc.line}" in str(exc)


def test_malformed_text_ir_shows_line_column_and_caret():
    line = marked_line(USER_FILE, "parse")
    with pytest.raises(fs.IRParseError) as excinfo:
        mistakes.parse_bad_ir()
    text = str(excinfo.value)
    assert "<ir>:2:15: unexpected ':'; expected one of COMMA, RPAR" in text
    # the offending IR line, then a caret under column 15
    lines = text.splitlines()
    at = lines.index('    %0 = abs(%a : f32[3] loc("k.py":2)')
    assert lines[at + 1] == "  " + " " * 14 + "^"
    _check_clean(excinfo, line)


def test_ir_semantic_error_points_at_the_token():
    line = marked_line(USER_FILE, "parse-unknown")
    with pytest.raises(fs.IRParseError) as excinfo:
        mistakes.parse_unknown_op()
    text = str(excinfo.value)
    assert "<ir>:3:8: unknown op 'frobnicate'" in text
    assert "         ^" in text.splitlines()[2]
    _check_clean(excinfo, line)


def _check_clean(excinfo, user_line: int):
    text = str(excinfo.value)
    assert PACKAGE_DIR not in text
    assert not [f for f in PACKAGE_FILES if f in text]
    frames = traceback.extract_tb(excinfo.value.__traceback__)
    internal = [f for f in frames if f.filename.startswith(PACKAGE_DIR + os.sep)]
    assert len(internal) <= 1, traceback.format_list(internal)
    assert any(f.filename == USER_FILE and f.lineno == user_line for f in frames)


# ---- more mistakes, same promises ------------------------------------------------------------
def test_error_inside_a_composite_points_at_the_users_call():
    raises_at("composite", fs.ShapeError, r"cannot be broadcast together",
              lambda: mistakes.nested_composite(np.ones((2, 4), F32), np.ones(3, F32)))


def test_op_on_a_dtype_it_does_not_take():
    raises_at("bool-op", fs.DTypeError, r"fs\.abs is not defined on bool tensors",
              lambda: mistakes.abs_of_bool(np.ones(3, F32)), hint=r"astype\(fs\.int32\)")


def test_python_int_that_does_not_fit_the_tensor_dtype():
    raises_at("scalar-fit", fs.DTypeError, r"the Python integer 300 does not fit in uint8 \(range 0\.\.255\)",
              lambda: mistakes.uint8_minus_one(np.ones(3, np.uint8)), hint="cast the tensor first")


def test_reshape_to_a_different_size():
    raises_at("reshape", fs.ShapeError, r"cannot reshape \(6,\) into \(5, 5\): the element counts differ",
              lambda: mistakes.bad_reshape(np.ones(6, F32)))


def test_axis_out_of_range():
    raises_at("axis", fs.ArgumentError, r"axis 3 is out of range for a tensor of rank 2",
              lambda: mistakes.bad_axis(np.ones((2, 3), F32)))


def test_numpy_function_on_traced_tensor():
    raises_at("numpy", fs.TraceError, r"numpy\.cbrt cannot run on a traced tensor",
              lambda: mistakes.numpy_function(np.ones(3, F32)), hint=r"fs\.\* op")


def test_eager_op_outside_a_kernel():
    raises_at("eager", fs.ShapeError, r"shapes \(3,\), \(4,\) cannot be broadcast together",
              mistakes.eager_broadcast)


def test_unsupported_dtype_in_a_spec():
    raises_at("spec-dtype", fs.DTypeError, r"dtype float64 is not supported", mistakes.spec_with_bad_dtype)


def test_errors_form_one_tree():
    for cls in (fs.TraceError, fs.ShapeError, fs.DTypeError, fs.ControlFlowError, fs.ArgumentError,
                fs.IRParseError, fs.VerifyError, fs.ScheduleError, fs.TargetError):
        assert issubclass(cls, fs.FusedslError)
    for cls in (fs.ShapeError, fs.DTypeError, fs.ControlFlowError, fs.ArgumentError):
        assert issubclass(cls, fs.TraceError)


def test_error_message_without_location_is_plain():
    exc = fs.FusedslError("something is wrong", hint="do this")
    assert str(exc) == "something is wrong\n  hint: do this"
