"""Verifier corrupt-and-check tests: each rule of fusedsl/ir/verifier.py fires with its message.

A valid module is built with the Builder, then one record is replaced by a corrupted
copy (the records are immutable, so corruption is `dataclasses.replace`).
"""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

import fusedsl as fs
from fusedsl import dtypes as dt
from fusedsl.errors import Loc
from fusedsl.ir import Builder, Function, Module, Op, Param, TensorType, Value, verify_module
from fusedsl.ir import verifier
from fusedsl.ir.ops import REGISTRY, infer_types
from fusedsl.passes.base import PassManager
from fusedsl.passes.fusion_model import fusion_options
from fusedsl.passes.pipeline import compile_passes
from fusedsl.targets import get_target

from conftest import kernel_corpus

F32_3 = TensorType((3,), dt.float32)
LOC = Loc("user.py", 7)


def valid_function(name="f") -> Function:
    """f(a, b) = exp(a) + b, built the ordinary way."""
    b = Builder(name, Loc("user.py", 1))
    x = b.param(F32_3, "a")
    y = b.param(F32_3, "b")
    e = b.op1("exp", [x], loc=LOC)
    s = b.op1("add", [e, y], loc=Loc("user.py", 8))
    return b.finish([s])


def with_ops(fn: Function, ops) -> Function:
    return dataclasses.replace(fn, ops=tuple(ops))


def verify_fails(module_or_fn, rule: str, detail: str) -> fs.VerifyError:
    module = module_or_fn if isinstance(module_or_fn, Module) else Module((module_or_fn,))
    with pytest.raises(fs.VerifyError) as excinfo:
        verify_module(module)
    text = str(excinfo.value)
    assert text.startswith(rule + ":") or f": {rule}:" in text, text
    assert re.search(detail, text), text
    return excinfo.value


def test_every_rule_in_the_docstring_has_a_test_here():
    rules = re.findall(r"^  ([a-z-]+)\s{2,}", verifier.__doc__, re.M)
    assert rules == ["unknown-op", "use-before-def", "redefinition", "type-mismatch", "bad-return",
                     "bad-call", "duplicate-func"]
    tested = {name[len("test_"):].replace("_", "-").split("--")[0] for name in globals()
              if name.startswith("test_")}
    for rule in rules:
        assert any(t.startswith(rule) for t in tested), f"no test for verifier rule {rule}"


def test_valid_module_passes():
    module = Module((valid_function(),))
    assert verify_module(module) is module


def test_unknown_op():
    fn = valid_function()
    bad = dataclasses.replace(fn.ops[0], name="frobnicate")
    exc = verify_fails(with_ops(fn, [bad, fn.ops[1]]), "unknown-op",
                       r"in @f, op #0 \(frobnicate\): 'frobnicate' is not a registered op")
    assert exc.loc == LOC and "user.py:7" in str(exc)


def test_use_before_def():
    fn = valid_function()
    exc = verify_fails(with_ops(fn, reversed(fn.ops)), "use-before-def",
                       r"in @f, op #0 \(add\): operand 0 is used before it is defined")
    assert exc.loc.line == 8


def test_use_before_def_of_a_value_from_another_function():
    fn = valid_function()
    stranger = Value(F32_3)
    bad = dataclasses.replace(fn.ops[0], operands=(stranger,))
    verify_fails(with_ops(fn, [bad, fn.ops[1]]), "use-before-def", r"op #0 \(exp\): operand 0")


def test_redefinition_of_a_parameter():
    fn = valid_function()
    twice = dataclasses.replace(fn, params=(fn.params[0], fn.params[0], fn.params[1]))
    verify_fails(twice, "redefinition", r"parameter a of @f is listed twice")


def test_redefinition_of_a_result():
    fn = valid_function()
    a = fn.params[0].value
    bad = dataclasses.replace(fn.ops[0], results=(a,))   # exp(a) "defines" a again
    verify_fails(with_ops(fn, [bad, fn.ops[1]]), "redefinition",
                 r"op #0 \(exp\): a result value is already defined")


def test_type_mismatch_result_type():
    fn = valid_function()
    wrong = Value(TensorType((3,), dt.float16))
    bad = dataclasses.replace(fn.ops[0], results=(wrong,))
    fixed_add = dataclasses.replace(fn.ops[1], operands=(wrong, fn.params[1].value))
    verify_fails(with_ops(fn, [bad, fixed_add]), "type-mismatch",
                 r"op #0 \(exp\): results are f16\[3\] but the type rule gives f32\[3\]")


def test_type_mismatch_after_the_op_was_verified_under_an_older_type_rule(monkeypatch):
    """An op checked once is not re-inferred on the next verify (every pass verifies), unless
    its definition was replaced since: the new rule applies to the same op object."""
    fn = valid_function()
    verify_module(Module((fn,)))
    verify_module(Module((fn,)))
    old = REGISTRY["exp"]
    monkeypatch.setitem(REGISTRY, "exp", dataclasses.replace(
        old, infer=lambda types, attrs: (TensorType(types[0].shape, dt.float16),)))
    verify_fails(fn, "type-mismatch", r"op #0 \(exp\): results are f32\[3\] but the type rule gives f16\[3\]")


def test_type_mismatch_rule_refuses_operands():
    fn = valid_function()
    short = Value(TensorType((4,), dt.float32))
    params = fn.params + (Param(short),)
    bad = dataclasses.replace(fn.ops[1], operands=(fn.ops[0].result, short))
    verify_fails(dataclasses.replace(fn, params=params, ops=(fn.ops[0], bad)), "type-mismatch",
                 r"op #1 \(add\): shapes \(3,\), \(4,\) cannot be broadcast together")


def test_type_mismatch_wrong_arity():
    fn = valid_function()
    bad = dataclasses.replace(fn.ops[0], operands=(fn.params[0].value, fn.params[1].value))
    verify_fails(with_ops(fn, [bad, fn.ops[1]]), "type-mismatch", r"exp takes 1 operand\(s\), got 2")


def test_type_mismatch_missing_attribute():
    fn = valid_function()
    bad = Op("sum", (fn.params[0].value,), (Value(TensorType((), dt.float32)),), (("axes", (0,)),), LOC)
    verify_fails(dataclasses.replace(fn, ops=(bad,), results=bad.results), "type-mismatch",
                 r"sum needs attribute\(s\) keepdims")


def test_type_mismatch_malformed_attribute():
    fn = valid_function()
    bad = Op("cast", (fn.params[0].value,), (Value(F32_3),), (("dtype", "float64"),), LOC)
    verify_fails(dataclasses.replace(fn, ops=(bad,), results=bad.results), "type-mismatch",
                 r"op #0 \(cast\): bad attributes")


def test_bad_return():
    fn = valid_function()
    exc = verify_fails(dataclasses.replace(fn, results=(Value(F32_3),)), "bad-return",
                       r"@f returns a value that is never defined")
    assert exc.loc == fn.loc


def call_module(callee_name="k", operand_type=F32_3):
    kernel = valid_function("k")
    b = Builder("main")
    x = b.param(operand_type, "x")
    y = b.param(operand_type, "y")
    out = b.op("call", [x, y], {"callee": callee_name}, result_types=(F32_3,))
    return Module((kernel, b.finish(out)))


def test_bad_call_to_an_undefined_function():
    verify_module(call_module())   # the uncorrupted module is fine
    verify_fails(call_module("nowhere"), "bad-call", r"@nowhere is not defined before @main")


def test_bad_call_to_a_later_function():
    module = call_module()
    verify_fails(Module(tuple(reversed(module.functions))), "bad-call", r"@k is not defined before @main")


def test_bad_call_operand_types():
    verify_fails(call_module(operand_type=TensorType((3,), dt.int32)), "bad-call",
                 r"operand types do not match @k's parameters")


def test_bad_call_result_types():
    module = call_module()
    main = module.main
    call = dataclasses.replace(main.ops[0], results=(Value(TensorType((3,), dt.float16)),))
    bad_main = dataclasses.replace(main, ops=(call,), results=call.results)
    verify_fails(Module((module.functions[0], bad_main)), "type-mismatch",
                 r"results are f16\[3\] but the type rule gives f32\[3\]")


def test_duplicate_func():
    verify_fails(Module((valid_function("g"), valid_function("g"))), "duplicate-func",
                 r"function @g is defined twice")


def test_builder_and_verifier_share_the_type_rule():
    """A type error found while building is the same one the verifier reports."""
    b = Builder("f")
    x = b.param(F32_3, "x")
    y = b.param(TensorType((4,), dt.float32), "y")
    with pytest.raises(fs.ir.TypeRuleError, match=r"cannot be broadcast together"):
        b.op1("add", [x, y])


# ---- what the verifier need not check again ----------------------------------------------------
def test_ops_the_builder_typed_are_not_inferred_again_and_a_new_rule_still_applies(monkeypatch):
    """The Builder ran the op's type rule to make its results (verifier.note_typed): the first
    verify does not run it again; a re-registered op is checked under its new rule."""
    calls = []
    old = REGISTRY["exp"]
    monkeypatch.setitem(REGISTRY, "exp", dataclasses.replace(
        old, infer=lambda types, attrs: calls.append(types) or old.infer(types, attrs)))
    fn = valid_function()
    assert len(calls) == 1   # the builder's
    verify_module(Module((fn,)))
    assert len(calls) == 1
    monkeypatch.setitem(REGISTRY, "exp", dataclasses.replace(
        old, infer=lambda types, attrs: (TensorType(types[0].shape, dt.float16),)))
    verify_fails(fn, "type-mismatch", r"op #0 \(exp\): results are f32\[3\] but the type rule gives f16\[3\]")


def test_a_copy_is_taken_as_typed_only_over_the_same_type_objects():
    """note_copy (fusion's kernel functions copy each op they take): a copy over values of the
    very same types passes as its original did; one with another result type, equal-looking
    type objects or other attributes is checked by the rule."""
    fn = valid_function()
    exp_op = fn.ops[0]
    x = fn.params[0].value
    same = Op("exp", (x,), (Value(exp_op.result.type),), exp_op.attrs, LOC)
    verifier.note_copy(same, exp_op)
    assert verifier._typed.get(same) is REGISTRY["exp"]
    wrong = Op("exp", (x,), (Value(TensorType((3,), dt.float16)),), exp_op.attrs, LOC)
    verifier.note_copy(wrong, exp_op)
    assert verifier._typed.get(wrong) is None
    verify_fails(dataclasses.replace(fn, ops=(wrong,), results=wrong.results), "type-mismatch",
                 r"op #0 \(exp\): results are f16\[3\] but the type rule gives f32\[3\]")
    equal = Op("exp", (x,), (Value(TensorType((3,), dt.float32)),), exp_op.attrs, LOC)   # equal, not the same
    verifier.note_copy(equal, exp_op)
    assert verifier._typed.get(equal) is None
    other_attrs = Op("exp", (x,), (Value(exp_op.result.type),), (("k", 1),), LOC)
    verifier.note_copy(other_attrs, exp_op)
    assert verifier._typed.get(other_attrs) is None


def test_every_op_taken_as_typed_passes_its_type_rule_over_the_corpus():
    """The memo against a fresh computation: over every program of
    tools/kernel_corpus.py (each shape and dtype), traced and run through the compile pipeline (the builder's ops, each
    pass's, fusion's copies), every op the verifier takes as typed gets its result types from the
    type rule run now."""
    corpus = kernel_corpus()
    target = get_target("ascend910b")
    seen, checked = set(), 0
    for key, fn, specs, _ in corpus.configs():
        if (key, repr(specs)) in seen:   # one target of each program, shapes and dtypes
            continue
        seen.add((key, repr(specs)))
        args = [np.ones(s[0], s[1]) for s in specs]
        try:
            graph = fs.fused_kernel(fn).trace(*args)
        except fs.FusedslError:
            continue
        manager = PassManager(compile_passes(False, target.max_queue_buffers_per_position, fusion_options({}, target)))
        manager.run(graph)
        for module in [graph] + [m for _, m in manager.history]:
            for f in module.functions:
                for op in f.ops:
                    if verifier._typed.get(op) is not REGISTRY[op.name]:
                        continue
                    expected = infer_types(op.name, tuple(v.type for v in op.operands), dict(op.attrs))
                    assert expected == tuple(v.type for v in op.results), (key, op)
                    checked += 1
    assert len(seen) > 500 and checked > 10000, (len(seen), checked)
