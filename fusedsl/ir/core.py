"""The IR data model: small immutable records, no logic.

A Module holds Functions; a Function is a straight-line SSA list of Ops over
whole tensors (graph level).  Values are compared by identity: two ops producing
equal-looking values still define two values.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from ..dtypes import DType
from ..errors import UNKNOWN_LOC, Loc, VerifyError

Dim = Union[int, str]  # a static size or a symbolic dimension name such as "M"


@dataclass(frozen=True)
class TensorType:
    shape: tuple[Dim, ...]
    dtype: DType

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    def __str__(self) -> str:
        return f"{self.dtype.ir}[{','.join(str(d) for d in self.shape)}]"


@dataclass(frozen=True, eq=False)
class Value:
    """An SSA value.  `name` is a printing hint (parameter names); identity is equality."""

    type: TensorType
    name: str | None = None

    @property
    def shape(self) -> tuple[Dim, ...]:
        return self.type.shape

    @property
    def dtype(self) -> DType:
        return self.type.dtype


@dataclass(frozen=True, eq=False)
class Op:
    name: str
    operands: tuple[Value, ...]
    results: tuple[Value, ...]
    attrs: tuple[tuple[str, object], ...] = ()   # sorted by key; values are hashable
    loc: Loc = UNKNOWN_LOC

    def attr(self, key: str, default=None):
        for k, v in self.attrs:
            if k == key:
                return v
        return default

    @property
    def result(self) -> Value:
        return self.results[0]


@dataclass(frozen=True, eq=False)
class Param:
    """A function parameter: a tensor in GM, or a runtime scalar (`fs.scalar`)."""

    value: Value
    kind: str = "tensor"  # "tensor" | "scalar"


@dataclass(frozen=True, eq=False)
class Function:
    name: str
    params: tuple[Param, ...]
    ops: tuple[Op, ...]
    results: tuple[Value, ...]
    loc: Loc = UNKNOWN_LOC


@dataclass(frozen=True, eq=False)
class Module:
    functions: tuple[Function, ...] = field(default_factory=tuple)

    @property
    def main(self) -> Function:
        """The entry function: the last one (kernels it calls are printed first)."""
        if not self.functions:
            raise VerifyError("the module has no function (was the IR text empty?)")
        return self.functions[-1]

    def function(self, name: str) -> Function | None:
        for fn in self.functions:
            if fn.name == name:
                return fn
        return None


def freeze_attrs(attrs: dict) -> tuple[tuple[str, object], ...]:
    """Attributes as a sorted tuple of pairs, lists turned into tuples."""
    return tuple(sorted((k, _freeze(v)) for k, v in attrs.items() if v is not None))


def _freeze(v):
    # at module level: a nested recursive function is a cycle (the function, its closure cell)
    # that only the cyclic collector frees -- three objects of garbage per op a trace builds
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    return v
