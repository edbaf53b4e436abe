"""`record`: a frozen dataclass that costs little to define.

The IR has dozens of small immutable node types, and a kernel's first call imports them all.
`dataclass(frozen=True)` compiles six methods per class from generated source at import
(__init__, __repr__, __eq__, __hash__, __setattr__, __delattr__) and parses every string
annotation: 18 ms for tile/kernel.py's 40 node types, a tenth of a small kernel's first call.
`record` gives the same class for about a twentieth of that:

    __init__    generated as dataclass does (the fields, in order, with their defaults), when the
                class's first instance is built: a node type a program never builds costs nothing
    equality    same class and equal field tuples (NotImplemented for another class)
    hashing     the hash of the field tuple, as a frozen dataclass's (memo keys and sets see the
                same values, so a set of nodes iterates in the same order)
    repr        `Name(field=value, ...)`, recursion shown as `...`
    assignment  FrozenInstanceError on setting or deleting any attribute (a record is final: no
                class derives from one)
    __doc__     `Name(field: 'type' = default, ...)` when the class has no docstring

A method the class body defines itself (`__hash__`, `__eq__`, `__repr__`, `__init__`) is kept, as
dataclass keeps it.

The four shared methods are functions of the class's field names, compiled once here.  The class
is a dataclass for `dataclasses.fields`, `replace` and `match` (its `__dataclass_params__` say
init / repr / eq False and frozen False, the methods being ours: no fusedsl code reads them).
A record's fields are plain annotations with defaults; a class that needs `field(...)` options
(a default factory, a field left out of equality) stays a dataclass.
"""
from __future__ import annotations

import dataclasses
from dataclasses import MISSING, FrozenInstanceError
from operator import attrgetter
from reprlib import recursive_repr

_set = object.__setattr__


def _eq(self, other):
    if other.__class__ is self.__class__:
        values = self.__class__._record_values
        return values(self) == values(other)
    return NotImplemented


def _hash(self):
    return hash(self.__class__._record_values(self))


@recursive_repr()
def _repr(self):
    return (f"{self.__class__.__qualname__}("
            + ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__class__._record_names) + ")")


def _setattr(self, name, value):
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _delattr(self, name):
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _values(names: tuple[str, ...]):
    """obj -> the tuple of its fields, as the dataclass methods build it."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        get = attrgetter(names[0])
        return lambda obj: (get(obj),)
    return lambda obj: ()


def _first_init(self, *args, **kwargs):
    cls = self.__class__
    if cls.__dict__.get("__init__") is _first_init:   # (two threads may both get here: each makes the same one)
        cls.__init__ = _make_init(cls)
    cls.__init__(self, *args, **kwargs)


def _make_init(cls):
    """The __init__ dataclass(frozen=True) generates: each field stored with object.__setattr__."""
    fields = dataclasses.fields(cls)
    params = "".join(f", {f.name}" if f.default is MISSING else f", {f.name}=_d_{f.name}" for f in fields)
    body = "".join(f"\n    _set(self, {f.name!r}, {f.name})" for f in fields) or "\n    pass"
    scope = {"_set": _set, **{f"_d_{f.name}": f.default for f in fields if f.default is not MISSING}}
    exec(f"def __init__(self{params}):{body}\n", scope)
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def record(cls):
    """`cls` as a frozen dataclass of its annotated fields (module doc)."""
    own_doc = cls.__dict__.get("__doc__")
    annotations = cls.__dict__.get("__annotations__", {})
    for name, kind in annotations.items():
        if "ClassVar" in str(kind) or "InitVar" in str(kind):
            raise TypeError(f"record {cls.__name__}: field {name} is a {kind}; make it a dataclass")
    # dataclass finds the fields in the annotations and parses each string annotation (`from
    # __future__ import annotations`) for ClassVar / InitVar: most of its cost, for records that
    # have neither.  It sees placeholders; the fields get the annotations back.
    cls.__annotations__ = dict.fromkeys(annotations, object)
    cls.__doc__ = own_doc or cls.__name__   # dataclass would build one from the signature (slow)
    try:
        dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
    finally:
        cls.__annotations__ = annotations
    fields = dataclasses.fields(cls)
    for f in fields:
        f.type = annotations.get(f.name, f.type)
        if f.default_factory is not MISSING or not (f.init and f.repr and f.compare) or f.hash is not None:
            raise TypeError(f"record {cls.__name__}: field {f.name} has options; make it a dataclass")
    cls._record_names = tuple(f.name for f in fields)
    cls._record_values = staticmethod(_values(cls._record_names))
    own = cls.__dict__
    if "__setattr__" in own or "__delattr__" in own:
        raise TypeError(f"record {cls.__name__} defines __setattr__ / __delattr__: a record is frozen")
    # a method the class writes itself stays (dataclass keeps them too: Target hashes its name)
    for name, method in (("__init__", _first_init), ("__eq__", _eq), ("__repr__", _repr),
                         ("__setattr__", _setattr), ("__delattr__", _delattr)):
        if name not in own:
            setattr(cls, name, method)
    if own.get("__hash__", None) is None:   # None: Python's, for a class body that defines __eq__
        cls.__hash__ = _hash
    if not own_doc:
        cls.__doc__ = cls.__name__ + "(" + ", ".join(
            f"{f.name}: {f.type!r}" + ("" if f.default is MISSING else f" = {f.default!r}") for f in fields) + ")"
    return cls
