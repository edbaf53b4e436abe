"""The op definitions: one per op, registered in the IR registry when this package is imported.

`elementwise` holds the ops that are graph ops of their own (a recipe of tile instructions);
`composite` the ops written as a decomposition into other fs ops (the frontend exposes both).
`by_aten` / `by_onnx` find the fs function of an ATen overload or ONNX operator; `importable`
lists the names the importers map to fs calls when their own tables have no rule.
"""
import inspect

from . import elementwise  # noqa: F401  (registers the elementwise ops)
from . import creation  # noqa: F401  (arange / linspace: host ops the composites build on)
from . import composite  # noqa: F401  (the composites' definitions)
from . import index  # noqa: F401  (index_select, gather, scatter, isin, sort: composites)
from . import window  # noqa: F401  (pooling, convolution variants, group / instance norm: composites)
from ..ir.ops import ELEMENTWISE, REGISTRY
from .composite import COMPOSITES


def by_aten(name: str) -> list[str]:
    """The fs names whose definitions declare ATen overload `name` ("aten.sin.default")."""
    return _lookup(name, "aten")


def by_onnx(name: str) -> list[str]:
    """The fs names whose definitions declare ONNX operator `name` ("Sin")."""
    return _lookup(name, "onnx")


def importable(field: str) -> list[tuple[str, str, str, int]]:
    """(declared name, op name, fs name, arity) of the `field` ("aten" / "onnx") names of the ops
    an importer can call as fs.<name>(*operands) when its own table has no rule: elementwise
    graph ops without attributes and composites of one or two tensors and nothing else (ops with
    attributes or options have their own argument conventions; the tables map those). Names with
    an [attr=value] condition are left out."""
    found = [(n, d.name, d.public[0], d.arity) for d in REGISTRY.values()
             if d.public and not d.attr_names and d.arity in (1, 2) and ELEMENTWISE in d.traits
             for n in getattr(d, field)]
    for c in COMPOSITES.values():
        params = list(inspect.signature(c.fn).parameters.values())[1:]   # after the op namespace F
        if 1 <= len(params) <= 2 and all(p.default is p.empty and p.kind == p.POSITIONAL_OR_KEYWORD for p in params):
            found += [(n, c.name, c.public[0], len(params)) for n in getattr(c, field)]
    return [f for f in found if "[" not in f[0]]


def _lookup(name: str, field: str) -> list[str]:
    found = [d.public[0] for d in REGISTRY.values() if d.public and name in getattr(d, field)]
    return found + [c.public[0] for c in COMPOSITES.values() if name in getattr(c, field)]
