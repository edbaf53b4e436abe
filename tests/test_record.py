"""fusedsl/record.py: every record behaves as the frozen dataclass it replaces.

Each record class is compared with `dataclass(frozen=True)` built from the same annotations and
defaults: construction (positional and by name, defaults), equality, hashing (the same values:
sets of nodes iterate in the same order), repr, __doc__, match args, `dataclasses.fields` /
`replace`, and FrozenInstanceError on assignment and deletion.
"""
import ast
import dataclasses
import functools
import inspect
import os
import sys
from dataclasses import FrozenInstanceError

import pytest

import fusedsl
from fusedsl import cachesize, cost, targets, views
from fusedsl.backend_cpu import attention_softmax, jit
from fusedsl.lower import attention, column, column_plan, conv, cube, cube_group, kinds, row, row_plan, transpose
from fusedsl.passes import fuse, fusion_model
from fusedsl.record import record
from fusedsl.tile import ir, kernel, kernel_cost, kernel_passes, prims, tiling_cost

MODULES = (kernel, ir, prims, views, targets, cachesize, kinds, transpose, column, column_plan, attention, fuse,
           fusion_model, attention_softmax, cost, jit, conv, cube, cube_group, row, row_plan, kernel_cost, kernel_passes,
           tiling_cost)
RECORDS = [c for m in MODULES for c in vars(m).values()
           if inspect.isclass(c) and c.__module__ == m.__name__ and "_record_frozen" in c.__dict__]


def _reference(cls):
    """The dataclass `cls` was before it became a record (its fields' options, the methods it writes)."""
    fields = dataclasses.fields(cls)
    body = {"__annotations__": {f.name: f.type for f in fields}, "__qualname__": cls.__qualname__,
            "__module__": cls.__module__,
            **{f.name: dataclasses.field(default=f.default, default_factory=f.default_factory, compare=f.compare,
                                         repr=f.repr) for f in fields},
            **{k: v for k, v in cls.__dict__.items() if k in ("__hash__", "__eq__", "__repr__") and _written(cls, k)}}
    if cls.__dict__.get("__doc__") and not cls.__doc__.startswith(cls.__name__ + "("):
        body["__doc__"] = cls.__doc__
    return dataclasses.dataclass(frozen=cls._record_frozen)(type(cls.__name__, (), body))


@functools.cache
def _methods(module) -> dict[str, set[str]]:
    """class name -> the methods its body defines, read from the module's source."""
    tree = ast.parse(open(module.__file__, encoding="utf-8").read())
    return {c.name: {f.name for f in c.body if isinstance(f, ast.FunctionDef)}
            for c in tree.body if isinstance(c, ast.ClassDef)}


def _written(cls, name):
    """Whether the class body defines this method (record and dataclass keep it)."""
    return name in _methods(sys.modules[cls.__module__]).get(cls.__name__, ())


def _values(cls, salt):
    # a distinct hashable value per field (a nested tuple for some, as the IR's bodies are)
    return [(f"{f.name}{salt}", (i, salt)) if i % 2 else f"{f.name}{salt}" for i, f in enumerate(dataclasses.fields(cls))]


def test_every_record_is_checked_here():
    names = {c.__name__ for c in RECORDS}
    assert len(RECORDS) == 91 and {"Step", "For", "CopyIn", "Stmt", "Slot", "Return", "Target", "Kind", "TileKernel",
                                   "VectorSchedule", "Tiling", "LowerOptions"} <= names
    users = sorted(os.path.relpath(os.path.join(d, f), os.path.dirname(fusedsl.__file__))
                   for d, _, files in os.walk(os.path.dirname(fusedsl.__file__)) for f in files
                   if f.endswith(".py") and "\n@record" in open(os.path.join(d, f), encoding="utf-8").read())
    assert users == sorted(m.__file__.split("fusedsl" + os.sep, 1)[1] for m in MODULES)
    assert not dataclasses.fields(kernel.Return) and dataclasses.fields(kernel.Field)


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_a_record_behaves_as_its_dataclass(cls):
    ref = _reference(cls)
    a, b = _values(cls, 1), _values(cls, 2)
    x, rx = cls(*a), ref(*a)
    assert repr(x) == repr(rx) and cls.__doc__ == ref.__doc__ and cls.__match_args__ == ref.__match_args__
    if cls._record_frozen:
        assert hash(x) == hash(rx) and hash(cls(*a)) == hash(x)
    else:
        assert cls.__hash__ is None is ref.__hash__
    ignored = [f.name for f in dataclasses.fields(cls) if not f.compare]   # left out of equality (and hashing)
    if ignored:
        other, ref_other = (dataclasses.replace(v, **{name: "other" for name in ignored}) for v in (x, rx))
        assert other == x and ref_other == rx and repr(other) == repr(ref_other)
        assert not cls._record_frozen or hash(other) == hash(x)
    for name in ("__hash__", "__eq__", "__repr__"):   # a method the class writes is kept (Target's hash)
        assert not _written(cls, name) or cls.__dict__[name].__qualname__ == f"{cls.__qualname__}.{name}"
    assert x == cls(*a) and (x != cls(*b) or not a) and x != rx and (x == rx) is False
    kw = {f.name: v for f, v in zip(dataclasses.fields(cls), a)}
    assert cls(**kw) == x and [f.name for f in dataclasses.fields(cls)] == [f.name for f in dataclasses.fields(ref)]
    required = [f for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    assert repr(cls(*a[:len(required)])) == repr(ref(*a[:len(required)]))   # the defaults, factories called
    factories = [f.name for f in dataclasses.fields(cls) if f.default_factory is not dataclasses.MISSING]
    if factories:   # a new value per instance
        assert getattr(cls(*a[:len(required)]), factories[0]) is not getattr(cls(*a[:len(required)]), factories[0])
    if a:
        name = dataclasses.fields(cls)[0].name
        assert dataclasses.replace(x, **{name: b[0]}) == cls(b[0], *a[1:])
    if a and not cls._record_frozen:
        setattr(x, name, b[0])
        assert x == cls(b[0], *a[1:])
    elif a:
        with pytest.raises(FrozenInstanceError, match=f"cannot assign to field '{name}'"):
            setattr(x, name, b[0])
        with pytest.raises(FrozenInstanceError, match=f"cannot delete field '{name}'"):
            delattr(x, name)
    with pytest.raises(TypeError):
        cls(*a, "one too many")


def test_records_compare_and_hash_as_field_tuples_even_with_nan():
    nan = float("nan")
    s = ir.Stmt("adds", "y", ("x",), None, ("imm", nan))
    assert s == s and {s, s} == {s} and s != ir.Stmt("adds", "y", ("x",), None, ("imm", float("nan")))
    ref = _reference(ir.Stmt)
    assert hash(s) == hash(ref("adds", "y", ("x",), None, s.scalar))


def test_what_a_record_does_not_do_is_refused():
    class NoInit:
        x: int = dataclasses.field(default=0, init=False)

    class PostInit:
        x: int

        def __post_init__(self):
            pass
    with pytest.raises(TypeError, match="field x has init=False"):
        record(NoInit)
    with pytest.raises(TypeError, match="defines __post_init__"):
        record(frozen=False)(PostInit)
