"""Canonicalisation passes: CSE, DCE, constant folding and simple algebra.

Algebra rules and why each is safe (IEEE semantics, NaN/inf/-0.0 preserved):
  x * 1 -> x, x / 1 -> x      exact for every float (NaN, inf, -0.0) and int
  x - 0.0 -> x, x + (-0.0) -> x  exact for every float; for ints any zero
  x + 0.0, x - (-0.0)         NOT folded for floats: -0.0 + 0.0 = +0.0 changes the sign
  x - x                       NOT folded: for floats inf - inf and NaN - NaN are NaN
  neg(neg(x)) -> x            exact
A rule fires only when the result type equals x's type (no hidden broadcast or cast).
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.core import Function, Module, Op, Value
from ..ir.ops import CONSTANT, ELEMENTWISE, REGISTRY, has_trait
from ..reference import _round, _widen
from .base import Pass, Rewriter


class CSE(Pass):
    """Common-subexpression elimination.  Before: any valid IR.  After: no two ops with the
    same name, operands and attributes (all fusedsl ops are pure)."""

    name = "cse"

    def run_on_function(self, fn: Function, module: Module) -> Function:
        rw = Rewriter()
        seen: dict[tuple, Op] = {}
        for op in fn.ops:
            operands = tuple(rw.get(v) for v in op.operands)
            key = (op.name, tuple(id(v) for v in operands), _attrs_key(op.attrs),
                   tuple(v.type for v in op.results))
            try:
                prior = seen.get(key)
            except TypeError:  # unhashable attribute: never merged
                prior, key = None, None
            if prior is not None:
                for old, new in zip(op.results, prior.results):
                    rw.replace(old, new)
                continue
            emitted = rw.emit(op)
            if key is not None:
                seen[key] = emitted
        return rw.function(fn)


def _attrs_key(attrs):
    """Attributes compared by their text: 0.0 == -0.0 in Python, but a constant
    -0.0 must not merge with 0.0 (the sign is observable), while two NaNs may."""
    return tuple((k, repr(v) if isinstance(v, float) else v) for k, v in attrs)


class DCE(Pass):
    """Dead-code elimination.  After: every op's result is used or returned."""

    name = "dce"

    def run_on_function(self, fn: Function, module: Module) -> Function:
        live = {id(v) for v in fn.results}
        kept = []
        for op in reversed(fn.ops):
            if any(id(v) in live for v in op.results):
                kept.append(op)
                live.update(id(v) for v in op.operands)
        if len(kept) == len(fn.ops):
            return fn   # nothing dead: the function itself (Pass.run returns the module unchanged)
        kept.reverse()
        return Function(fn.name, fn.params, tuple(kept), fn.results, fn.loc)


def _constant_value(v: Value, producers: dict[int, Op]):
    op = producers.get(id(v))
    if op is not None and has_trait(op, CONSTANT):
        return op.attr("value")
    return None


class LocalRewrite(Pass):
    """A pass that looks at one op at a time, with its operands already rewritten.

    `rewrite(op, operands, producers)` returns None (keep the op), a Value (the op's result
    is that existing value) or an Op (a replacement producing the result's value)."""

    def run_on_function(self, fn: Function, module: Module) -> Function:
        rw = Rewriter()
        producers: dict[int, Op] = {}
        for op in fn.ops:
            operands = [rw.get(v) for v in op.operands]
            new = self.rewrite(op, operands, producers)
            if isinstance(new, Value):
                rw.replace(op.result, new)
                continue
            if isinstance(new, Op):
                rw.replace(op.result, new.result)
                rw.ops.append(new)
                producers[id(new.result)] = new
                continue
            emitted = rw.emit(op)
            for r in emitted.results:
                producers[id(r)] = emitted
        return rw.function(fn)

    def rewrite(self, op: Op, operands, producers):
        return None


class ConstantFold(LocalRewrite):
    """Elementwise ops whose operands are all 0-d constants become constants.
    Before/after: valid IR; folded values are computed by the reference rules."""

    name = "constant-fold"

    def rewrite(self, op: Op, operands, producers):
        if not (has_trait(op, ELEMENTWISE) and operands and op.result.type.shape == ()):
            return None
        values = [_constant_value(v, producers) for v in operands]
        if all(v is not None for v in values):
            return self._fold(op, operands, values)
        return None

    @staticmethod
    def _fold(op: Op, operands, values):
        arrays = [_widen(np.asarray(v, dtype=o.dtype.np)) for v, o in zip(values, operands)]
        out = _round(np.asarray(REGISTRY[op.name].ref(arrays, dict(op.attrs))), op.result.dtype)
        value = out.item()
        if isinstance(value, float) and op.result.dtype.is_float:
            value = float(value)
        result = Value(op.result.type)
        return Op("constant", (), (result,),
                  (("dtype", op.result.dtype.name), ("value", value)), op.loc)


class Algebra(LocalRewrite):
    """Identity rewrites listed in the module docstring.  After: valid IR, same values."""

    name = "algebra"

    def rewrite(self, op: Op, operands, producers):
        return self._simplify(op, operands, producers)

    @staticmethod
    def _simplify(op: Op, operands, producers) -> Value | None:
        if op.name not in _ALGEBRA_OPS:
            return None

        def const(i):
            return _constant_value(operands[i], producers)

        def keep(x):
            return x if x.type == op.result.type else None

        if op.name == "mul":
            for i in (0, 1):
                if _is(const(i), 1):
                    return keep(operands[1 - i])
        if op.name == "div" and _is(const(1), 1):
            return keep(operands[0])
        is_int = not op.result.dtype.is_float
        if op.name == "sub" and _is_zero(const(1), is_int, sign=+1):
            return keep(operands[0])
        if op.name == "add":
            for i in (0, 1):
                if _is_zero(const(i), is_int, sign=-1):
                    return keep(operands[1 - i])
        if op.name == "neg":
            inner = producers.get(id(operands[0]))
            if inner is not None and inner.name == "neg":
                return keep(inner.operands[0])
        return None


_ALGEBRA_OPS = frozenset({"mul", "div", "sub", "add", "neg"})   # the ops Algebra's rules rewrite


def _is_zero(value, is_int: bool, sign: int) -> bool:
    """Any zero for ints; for floats only the zero of the given sign (see docstring)."""
    if value is None or isinstance(value, bool) or value != 0:
        return False
    return is_int or math.copysign(1, value) == sign


def _is(value, target) -> bool:
    return value is not None and not isinstance(value, bool) and value == target
