"""Deterministic text form of the IR (parsed back by parser.py).

    func @f(%a: f32[128], %b: f32[M,128]) -> (f32[M,128]) loc("k.py":3) {
      %0 = abs(%a) : f32[128] loc("k.py":4)
      %1 = leaky_relu(%0) {alpha = 0.1} : f32[128] loc("k.py":4)
      return %1
    }

Parameters keep their (sanitised, unique) names; op results are numbered in order.
"""
from __future__ import annotations

import json
import math
import re

from ..errors import Loc
from .core import Function, Module, Op, Value


def print_module(module: Module) -> str:
    return "\n".join(print_function(fn) for fn in module.functions)


def format_attr(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(format_attr(v) for v in value) + "]"
    raise TypeError(f"attribute value {value!r} has no text form")


def format_loc(loc: Loc) -> str:
    return f"loc({json.dumps(loc.file)}:{loc.line})"


class _Namer:
    def __init__(self):
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.counter = 0

    def param(self, v: Value) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", v.name or "arg")
        if not base or base[0].isdigit():
            base = "a" + base
        name, n = base, 1
        while name in self.used:
            name, n = f"{base}_{n}", n + 1
        return self._bind(v, name)

    def result(self, v: Value) -> str:
        name = str(self.counter)
        self.counter += 1
        return self._bind(v, name)

    def _bind(self, v: Value, name: str) -> str:
        self.used.add(name)
        self.names[id(v)] = "%" + name
        return "%" + name

    def __getitem__(self, v: Value) -> str:
        return self.names.get(id(v), "%<undefined>")


def print_function(fn: Function) -> str:
    namer = _Namer()
    params = []
    for p in fn.params:
        suffix = " scalar" if p.kind == "scalar" else ""
        params.append(f"{namer.param(p.value)}: {p.value.type}{suffix}")
    results = ", ".join(str(v.type) for v in fn.results)
    lines = [f"func @{fn.name}({', '.join(params)}) -> ({results}) {format_loc(fn.loc)} {{"]
    for op in fn.ops:
        lines.append("  " + print_op(op, namer))
    lines.append("  return " + ", ".join(namer[v] for v in fn.results))
    lines.append("}")
    return "\n".join(lines) + "\n"


def print_op(op: Op, namer) -> str:
    lhs = ", ".join(namer.result(v) for v in op.results)
    args = ", ".join(namer[v] for v in op.operands)
    attrs = ""
    if op.attrs:
        attrs = " {" + ", ".join(f"{k} = {format_attr(v)}" for k, v in op.attrs) + "}"
    types = ", ".join(str(v.type) for v in op.results)
    return f"{lhs} = {op.name}({args}){attrs} : {types} {format_loc(op.loc)}"


# str(module) is the text form.  Installed from here so the data model (core.py) never imports
# its printer; the package's __init__ imports this module, so any `fusedsl.ir.*` import has it.
Module.__str__ = print_module
