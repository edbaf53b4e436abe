"""fusedsl IR: data model, op registry, builder, verifier, printer and parser."""
from .builder import Builder
from .core import Function, Module, Op, Param, TensorType, Value
from .ops import REGISTRY, get_opdef, has_trait
from .printer import print_function, print_module
from .shapes import TypeRuleError
from .verifier import verify_function, verify_module

__all__ = ["Builder", "Function", "Module", "Op", "Param", "TensorType", "Value", "REGISTRY",
           "get_opdef", "has_trait", "parse_ir", "parse_type", "print_function", "print_module",
           "TypeRuleError", "verify_function", "verify_module"]


def __getattr__(name):
    # The parser pulls in lark (~50 ms); `import fusedsl` stays fast by loading it on first use.
    if name in ("parse_ir", "parse_type"):
        from . import parser
        return getattr(parser, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
