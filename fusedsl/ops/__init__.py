"""The op definitions: one per op, registered in the IR registry when this package is imported.

`elementwise` holds the ops that are graph ops of their own (a recipe of tile instructions);
`composite` the ops written as a decomposition into other fs ops (the frontend exposes both).
`by_aten` / `by_onnx` find the fs function of an ATen overload or ONNX operator (for importers).
"""
from . import elementwise  # noqa: F401  (registers the elementwise ops)
from . import creation  # noqa: F401  (arange / linspace: host ops the composites build on)
from . import composite  # noqa: F401  (the composites' definitions)
from ..ir.ops import REGISTRY
from .composite import COMPOSITES


def by_aten(name: str) -> list[str]:
    """The fs names whose definitions declare ATen overload `name` ("aten.sin.default")."""
    return _lookup(name, "aten")


def by_onnx(name: str) -> list[str]:
    """The fs names whose definitions declare ONNX operator `name` ("Sin")."""
    return _lookup(name, "onnx")


def _lookup(name: str, field: str) -> list[str]:
    found = [d.public[0] for d in REGISTRY.values() if d.public and name in getattr(d, field)]
    return found + [c.public[0] for c in COMPOSITES.values() if name in getattr(c, field)]
