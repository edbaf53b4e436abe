"""`record`: a dataclass that costs little to define.

The IR has dozens of small immutable node types, and a kernel's first call imports them all.
`dataclass(frozen=True)` compiles six methods per class from generated source at import
(__init__, __repr__, __eq__, __hash__, __setattr__, __delattr__) and parses every string
annotation: 18 ms for tile/kernel.py's 40 node types, a tenth of a small kernel's first call.
`record` gives the same class for about a twentieth of that (`record(frozen=False)`: a plain
dataclass's, mutable and unhashable):

    __init__    generated as dataclass does (the fields, in order, with their defaults), when the
                class's first instance is built: a node type a program never builds costs nothing
    equality    same class and equal field tuples (NotImplemented for another class)
    hashing     the hash of the field tuple, as a frozen dataclass's (memo keys and sets see the
                same values, so a set of nodes iterates in the same order)
    repr        `Name(field=value, ...)`, recursion shown as `...`
    assignment  FrozenInstanceError on setting or deleting any attribute (a record is final: no
                class derives from one); a mutable record's are Python's
    __doc__     `Name(field: 'type' = default, ...)` when the class has no docstring

A method the class body defines itself (`__hash__`, `__eq__`, `__repr__`, `__init__`) is kept, as
dataclass keeps it.

The four shared methods are functions of the class's field names, compiled once here.  The class
is a dataclass for `dataclasses.fields`, `replace` and `match` (its `__dataclass_params__` say
init / repr / eq False and frozen False, the methods being ours: no fusedsl code reads them).
A field may be a `field(...)` with a default, a default factory, compare=False (left out of
equality and hashing) or repr=False, as in a dataclass; init=False, hash=, __post_init__, ClassVar
and InitVar fields are refused (no record needs them).
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
            + ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__class__._record_repr) + ")")


def _setattr(self, name, value):
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _delattr(self, name):
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _values(names: tuple[str, ...]):
    """obj -> the tuple of these fields, as the dataclass methods build it."""
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


class _Factory:
    """The default of a field with a default factory: the factory is called when it is passed."""

    def __repr__(self):
        return "<factory>"


_FACTORY = _Factory()


def _make_init(cls):
    """The __init__ dataclass generates: each field stored (frozen: with object.__setattr__), a
    default factory called when its field is not given."""
    fields = dataclasses.fields(cls)
    scope = {"_set": _set, "_FACTORY": _FACTORY}
    params, body = [], []
    for f in fields:
        value = f.name
        if f.default is not MISSING:
            params.append(f"{f.name}=_d_{f.name}")
            scope[f"_d_{f.name}"] = f.default
        elif f.default_factory is not MISSING:
            params.append(f"{f.name}=_FACTORY")
            scope[f"_f_{f.name}"] = f.default_factory
            value = f"_f_{f.name}() if {f.name} is _FACTORY else {f.name}"
        else:
            params.append(f.name)
        body.append(f"_set(self, {f.name!r}, {value})" if cls._record_frozen else f"self.{f.name} = {value}")
    text = "".join(f"\n    {line}" for line in body) or "\n    pass"
    exec(f"def __init__(self{''.join(', ' + p for p in params)}):{text}\n", scope)
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def record(cls=None, *, frozen: bool = True):
    """`cls` as a dataclass of its annotated fields, frozen unless frozen=False (module doc)."""
    if cls is None:
        return lambda c: record(c, frozen=frozen)
    own_doc = cls.__dict__.get("__doc__")
    annotations = cls.__dict__.get("__annotations__", {})
    for name, kind in annotations.items():
        if "ClassVar" in str(kind) or "InitVar" in str(kind):
            raise TypeError(f"record {cls.__name__}: field {name} is a {kind}; make it a dataclass")
    own = cls.__dict__
    if "__post_init__" in own or frozen and ("__setattr__" in own or "__delattr__" in own):
        raise TypeError(f"record {cls.__name__} defines __post_init__, __setattr__ or __delattr__; make it a dataclass")
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
        if not f.init or f.hash is not None:
            raise TypeError(f"record {cls.__name__}: field {f.name} has init=False or hash=; make it a dataclass")
    cls._record_frozen = frozen
    cls._record_repr = tuple(f.name for f in fields if f.repr)
    cls._record_values = staticmethod(_values(tuple(f.name for f in fields if f.compare)))
    # a method the class writes itself stays (dataclass keeps them too: Target hashes its name)
    methods = [("__init__", _first_init), ("__eq__", _eq), ("__repr__", _repr)]
    if frozen:
        methods += [("__setattr__", _setattr), ("__delattr__", _delattr)]
    for name, method in methods:
        if name not in own:
            setattr(cls, name, method)
    if own.get("__hash__", None) is None:   # None: Python's, for a class body that defines __eq__
        cls.__hash__ = _hash if frozen else None
    if not own_doc:
        cls.__doc__ = cls.__name__ + "(" + ", ".join(
            f"{f.name}: {f.type!r}" + ("" if f.default is MISSING and f.default_factory is MISSING
                                       else " = <factory>" if f.default is MISSING else f" = {f.default!r}")
            for f in fields) + ")"
    return cls
