"""The IR verifier: SSA discipline and the registry's type rules, re-run.

Rules (each has a corrupt-and-check test):
  unknown-op      every op name is in the registry
  use-before-def  every operand is a parameter or an earlier result
  redefinition    no value is defined twice (parameters included)
  type-mismatch   the op's result types equal what its type rule infers
  bad-return      every returned value is defined
  bad-call        a call names an earlier function and matches its signature
  duplicate-func  function names are unique
"""
from __future__ import annotations

import operator
import weakref

from ..errors import VerifyError
from .core import Function, Module, Op
from .ops import CALL, REGISTRY, has_trait, infer_types
from .shapes import TypeRuleError


def verify_module(module: Module) -> Module:
    seen: dict[str, Function] = {}
    for fn in module.functions:
        if fn.name in seen:
            raise VerifyError(f"duplicate-func: function @{fn.name} is defined twice")
        verify_function(fn, seen)
        seen[fn.name] = fn
    return module


def _fail(fn: Function, index: int, op: Op, rule: str, detail: str):
    raise VerifyError(f"{rule}: in @{fn.name}, op #{index} ({op.name}): {detail}", loc=op.loc)


def verify_function(fn: Function, functions: dict[str, Function] | None = None) -> None:
    functions = functions or {}
    defined: set[int] = set()
    for p in fn.params:
        if id(p.value) in defined:
            raise VerifyError(f"redefinition: parameter {p.value.name} of @{fn.name} is listed twice")
        defined.add(id(p.value))
    for index, op in enumerate(fn.ops):
        if op.name not in REGISTRY:
            _fail(fn, index, op, "unknown-op", f"'{op.name}' is not a registered op")
        for i, v in enumerate(op.operands):
            if id(v) not in defined:
                _fail(fn, index, op, "use-before-def", f"operand {i} is used before it is defined")
        opdef = REGISTRY[op.name]
        if _typed.get(op) is not opdef:
            expected = _expected_types(fn, index, op, functions)
            got = tuple(v.type for v in op.results)
            if expected != got:
                _fail(fn, index, op, "type-mismatch",
                      f"results are {', '.join(map(str, got))} but the type rule gives "
                      f"{', '.join(map(str, expected))}")
            if CALL not in opdef.traits:   # a call's types depend on the module's callee
                _typed[op] = opdef
        for v in op.results:
            if id(v) in defined:
                _fail(fn, index, op, "redefinition", "a result value is already defined")
            defined.add(id(v))
    for v in fn.results:
        if id(v) not in defined:
            raise VerifyError(f"bad-return: @{fn.name} returns a value that is never defined", loc=fn.loc)


# Ops whose result types matched their type rule, with the OpDef that checked them.  Ops,
# their operand values and types are immutable, so the check holds for the op's life: the
# PassManager verifies after every pass, and most ops pass through a pipeline unchanged
# (re-running the type rules was a fifth of a small kernel's compile).  Re-registering an
# op (a new OpDef) checks again.
_typed: "weakref.WeakKeyDictionary[Op, object]" = weakref.WeakKeyDictionary()


def note_typed(op: Op, opdef) -> None:
    """`op`'s result types are what `opdef`'s type rule gave for its operand types and attributes:
    its builder ran that rule to make them (ir/builder.py), so the verifier's first check of the
    op would only run it again.  Re-registering the op (a new OpDef) checks it again."""
    if CALL not in opdef.traits:
        _typed[op] = opdef


def note_copy(new: Op, old: Op) -> None:
    """`new` is `old` over other values of the very same type objects (fusion copies each op it
    takes into its kernel function): when `old` passed its type rule, `new` passes it too.  Types
    are compared by identity, not equality, so the two ops give the rule the same arguments."""
    opdef = _typed.get(old)
    if opdef is None or new.name != old.name or new.attrs is not old.attrs:
        return
    if _same_types(new.operands, old.operands) and _same_types(new.results, old.results):
        _typed[new] = opdef


def _same_types(a, b) -> bool:
    # map over operator.is_: no Python frame per value (fusion copies every op of every kernel)
    return len(a) == len(b) and all(map(operator.is_, map(_TYPE, a), map(_TYPE, b)))


_TYPE = operator.attrgetter("type")


def _expected_types(fn, index, op, functions):
    if has_trait(op, CALL):
        callee = functions.get(op.attr("callee"))
        if callee is None:
            _fail(fn, index, op, "bad-call", f"@{op.attr('callee')} is not defined before @{fn.name}")
        params = tuple(p.value.type for p in callee.params)
        if params != tuple(v.type for v in op.operands):
            _fail(fn, index, op, "bad-call", f"operand types do not match @{callee.name}'s parameters")
        return tuple(v.type for v in callee.results)
    try:
        return infer_types(op.name, tuple(v.type for v in op.operands), dict(op.attrs))
    except TypeRuleError as exc:
        _fail(fn, index, op, "type-mismatch", exc.message)
    except (KeyError, TypeError, ValueError) as exc:
        # a hand-built op with a malformed attribute (e.g. dtype "float64", axes=1)
        # must fail verification, not crash inside the type rule
        _fail(fn, index, op, "type-mismatch", f"bad attributes {dict(op.attrs)}: {exc!r}")
