"""Builds Functions op by op, inferring each result type from the registry rule."""
from __future__ import annotations

from ..errors import UNKNOWN_LOC, Loc
from .core import Function, Op, Param, TensorType, Value, freeze_attrs
from .ops import get_opdef, infer_types
from .verifier import note_typed


class Builder:
    """Appends ops to a function under construction.

    `op()` runs the op's type rule; a `TypeRuleError` propagates to the caller,
    which knows the user's location and turns it into a located error.
    """

    def __init__(self, name: str, loc: Loc = UNKNOWN_LOC):
        self.name = name
        self.loc = loc
        self.params: list[Param] = []
        self.ops: list[Op] = []

    def param(self, type: TensorType, name: str, kind: str = "tensor") -> Value:
        value = Value(type, name)
        self.params.append(Param(value, kind))
        return value

    def op(self, name: str, operands, attrs: dict | None = None, loc: Loc = UNKNOWN_LOC,
           result_types: tuple[TensorType, ...] | None = None) -> tuple[Value, ...]:
        attrs = attrs or {}
        frozen = freeze_attrs(attrs)
        inferred = result_types is None
        if inferred:
            result_types = infer_types(name, tuple(v.type for v in operands), dict(frozen))
        results = tuple(Value(t) for t in result_types)
        op = Op(name, tuple(operands), results, frozen, loc)
        if inferred:   # the type rule the verifier runs has run: it need not run again for this op
            note_typed(op, get_opdef(name))
        self.ops.append(op)
        return results

    def op1(self, name: str, operands, attrs: dict | None = None, loc: Loc = UNKNOWN_LOC) -> Value:
        return self.op(name, operands, attrs, loc)[0]

    def finish(self, results) -> Function:
        return Function(self.name, tuple(self.params), tuple(self.ops), tuple(results), self.loc)
