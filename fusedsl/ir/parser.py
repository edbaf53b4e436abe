"""Text IR -> Module.  Errors point at line:column of the text with a caret.

The parser checks SSA and re-runs every op's type rule as it reads, so a
malformed module is reported at the token that breaks it; `verify_module` then
runs over the whole result (calls between functions).
"""
from __future__ import annotations

import functools
import json
import os
import re

import lark

from .. import dtypes as dt
from ..errors import IRParseError, Loc, VerifyError, caret_snippet, user_facing
from .core import Function, Module, Op, Param, TensorType, Value, freeze_attrs
from .ops import CALL, CONSTANT, REGISTRY, infer_types
from .shapes import TypeRuleError
from .verifier import verify_module


@functools.lru_cache(maxsize=1)
def _parser() -> lark.Lark:
    path = os.path.join(os.path.dirname(__file__), "grammar.lark")
    with open(path, encoding="utf-8") as f:
        return lark.Lark(f.read(), parser="lalr", propagate_positions=True, maybe_placeholders=True)


@user_facing  # a malformed text is the user's mistake: no parser frames in the traceback
def parse_ir(text: str) -> Module:
    """Parse text IR into a verified Module (raises IRParseError on any mistake)."""
    if not isinstance(text, str):
        raise IRParseError(f"parse_ir needs a str of IR text, got {type(text).__name__}")
    _check_nesting(text)
    try:
        tree = _parser().parse(text)
    except lark.UnexpectedInput as exc:
        raise _error(text, exc.line, exc.column, _describe(exc)) from None
    reader = _Reader(text)
    try:
        module = Module(tuple(reader.function(f) for f in tree.children))
    except RecursionError:   # a safety net: _check_nesting bounds every nesting the grammar has
        raise _error(text, 1, 1, "the text nests too deeply") from None
    try:
        return verify_module(module)
    except VerifyError as exc:
        raise IRParseError(exc.message) from None


MAX_NESTING = 64   # list attributes nest a few levels; deeper text would exhaust the stack


def _check_nesting(text: str) -> None:
    """Reject `[[[[...` deeper than MAX_NESTING before parsing (the reader recurses per level)."""
    depth, line, col, in_string, escape = 0, 1, 0, False, False
    for ch in text:
        col += 1
        if ch == "\n":
            line, col, in_string = line + 1, 0, False
        elif in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{(":
            depth += 1
            if depth > MAX_NESTING:
                raise _error(text, line, col, f"brackets nest deeper than {MAX_NESTING} levels")
        elif ch in "]})":
            depth = max(0, depth - 1)


def _describe(exc: lark.UnexpectedInput) -> str:
    if isinstance(exc, lark.UnexpectedCharacters):
        return f"unexpected character {exc.char!r}"
    if isinstance(exc, lark.UnexpectedToken):
        tok = exc.token
        if tok.type == "$END":
            return "unexpected end of input"
        expected = sorted(exc.expected)[:6]
        return f"unexpected {tok.value!r}; expected one of {', '.join(expected)}"
    return "malformed IR"


def _error(text: str, line: int, column: int, message: str) -> IRParseError:
    snippet = caret_snippet(text, line, column)
    return IRParseError(f"<ir>:{line}:{column}: {message}\n{snippet}",
                        hint="compare with the output of print(k.ir)")


def parse_type(text: str) -> TensorType:
    m = re.fullmatch(r"(\w+)\[([^\]]*)\]", text.strip())
    if not m:
        raise ValueError(f"bad type {text!r}")
    dtype = dt.to_dtype(m.group(1))
    dims = []
    for part in m.group(2).split(","):
        part = part.strip()
        if not part:
            continue
        if re.fullmatch(r"\d+", part):
            dims.append(int(part))
        elif re.fullmatch(r"[^\W\d]\w*", part):
            dims.append(part)
        else:
            raise ValueError(f"bad dimension {part!r}")
    if m.group(2).strip() and len(dims) != len(m.group(2).split(",")):
        raise ValueError(f"bad shape in {text!r}")
    return TensorType(tuple(dims), dtype)


# The kind of value each attribute takes: the type rules and the interpreter trust these, so a
# string where a number belongs would only fail later, far from the text.
_NUMBER = {"alpha", "value", "axis", "keepdims"}
_STRING = {"callee", "dtype"}
_INT_LIST = {"axes", "perm", "steps"}
_SIZE_LIST = {"shape", "starts", "stops"}      # a slice of a symbolic dim may stop at "M"
_INT_OR_LIST = {"stride", "padding"}


def _attr_problem(key: str, value) -> str | None:
    """Why `value` cannot be attribute `key`, or None."""
    def ints(v):
        return isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
    if key in _NUMBER and isinstance(value, (str, list)):
        return "must be a number or true/false"
    if key in _STRING and not isinstance(value, str):
        return "must be a string"
    if key in _INT_LIST and not ints(value):
        return "must be a list of integers"
    if key in _INT_OR_LIST and not (ints(value) or (isinstance(value, int) and not isinstance(value, bool))):
        return "must be an integer or a list of integers"
    if key in _SIZE_LIST and not (isinstance(value, list) and all(
            isinstance(x, str) or (isinstance(x, int) and not isinstance(x, bool)) for x in value)):
        return "must be a list of sizes (integers or dimension names)"
    return None


class _Reader:
    def __init__(self, text: str):
        self.text = text
        self.functions: dict[str, Function] = {}

    def fail(self, node, message: str):
        line = getattr(node, "line", None) or getattr(getattr(node, "meta", None), "line", 1)
        column = getattr(node, "column", None) or getattr(getattr(node, "meta", None), "column", 1)
        raise _error(self.text, line, column, message)

    def type(self, tok) -> TensorType:
        try:
            return parse_type(str(tok))
        except (ValueError, KeyError) as exc:
            self.fail(tok, str(exc))

    def function(self, tree) -> Function:
        name_tok, *rest = tree.children
        params_nodes = [c for c in rest if isinstance(c, lark.Tree) and c.data == "param"]
        type_toks = [c for c in rest if isinstance(c, lark.Token) and c.type == "TYPE"]
        loc_node = next(c for c in rest if isinstance(c, lark.Tree) and c.data == "loc")
        ops_nodes = [c for c in rest if isinstance(c, lark.Tree) and c.data == "op"]
        ret_node = next(c for c in rest if isinstance(c, lark.Tree) and c.data == "ret")
        name = str(name_tok)[1:]
        if name in self.functions:
            self.fail(name_tok, f"function @{name} is defined twice")
        scope: dict[str, Value] = {}
        params = []
        for p in params_nodes:
            vtok, ttok, scalar = p.children
            self.define(scope, vtok, None)
            value = Value(self.type(ttok), str(vtok)[1:])
            if scalar and value.type.shape:
                self.fail(ttok, f"scalar parameter {vtok} must have shape [], not {value.type}")
            scope[str(vtok)] = value
            params.append(Param(value, "scalar" if scalar else "tensor"))
        ops = tuple(self.op(o, scope) for o in ops_nodes)
        results = tuple(self.use(scope, v) for v in ret_node.children)
        declared = tuple(self.type(t) for t in type_toks)
        if declared != tuple(v.type for v in results):
            self.fail(ret_node, f"@{name} declares results ({', '.join(map(str, declared))}) but returns "
                                f"({', '.join(str(v.type) for v in results)})")
        fn = Function(name, tuple(params), ops, results, self.loc(loc_node))
        self.functions[name] = fn
        return fn

    def define(self, scope, tok, value):
        if str(tok) in scope:
            self.fail(tok, f"{tok} is defined twice")
        scope[str(tok)] = value

    def use(self, scope, tok) -> Value:
        if str(tok) not in scope:
            self.fail(tok, f"{tok} is used before it is defined")
        return scope[str(tok)]

    def loc(self, node) -> Loc:
        file_tok, line_tok = node.children
        return Loc(self.string(file_tok), self.int(line_tok))

    def string(self, tok) -> str:
        try:
            return json.loads(str(tok))
        except ValueError as exc:   # a bad escape such as "\q"
            self.fail(tok, f"bad string {str(tok)[:40]}: {exc}")

    def int(self, tok) -> int:
        try:
            return int(tok)
        except ValueError:          # more digits than Python converts (4300)
            self.fail(tok, f"integer with {len(str(tok))} digits is too long")

    def op(self, node, scope) -> Op:
        children = node.children
        name_idx = next(i for i, c in enumerate(children) if isinstance(c, lark.Token) and c.type == "NAME")
        result_toks = children[:name_idx]
        name_tok = children[name_idx]
        operand_toks = [c for c in children[name_idx + 1:] if isinstance(c, lark.Token) and c.type == "VALUE"]
        attrs_node = next((c for c in children if isinstance(c, lark.Tree) and c.data == "attrs"), None)
        type_toks = [c for c in children if isinstance(c, lark.Token) and c.type == "TYPE"]
        loc_node = next(c for c in children if isinstance(c, lark.Tree) and c.data == "loc")
        name = str(name_tok)
        if name not in REGISTRY:
            self.fail(name_tok, f"unknown op '{name}'")
        operands = tuple(self.use(scope, t) for t in operand_toks)
        attrs = self.attrs(attrs_node) if attrs_node is not None else {}
        for key, value in attrs.items():
            problem = _attr_problem(key, value)
            if problem:
                self.fail(name_tok, f"attribute {key} of {name} {problem}, got {value!r:.40}")
        declared = tuple(self.type(t) for t in type_toks)
        if len(declared) != len(result_toks):
            self.fail(name_tok, f"{len(result_toks)} result(s) but {len(declared)} type(s)")
        self.check_types(name_tok, name, operands, attrs, declared)
        results = tuple(Value(t) for t in declared)
        for tok, v in zip(result_toks, results):
            self.define(scope, tok, v)
        return Op(name, operands, results, freeze_attrs(attrs), self.loc(loc_node))

    def check_types(self, tok, name, operands, attrs, declared):
        if CALL in REGISTRY[name].traits:
            if not isinstance(attrs.get("callee"), str):
                self.fail(tok, f"call needs callee = \"<function name>\", got {attrs.get('callee')!r:.40}")
            callee = self.functions.get(attrs.get("callee"))
            if callee is None:
                self.fail(tok, f"call to @{attrs.get('callee')}, which is not defined above")
            expected = tuple(v.type for v in callee.results)
        else:
            try:
                expected = infer_types(name, tuple(v.type for v in operands), dict(freeze_attrs(attrs)))
            except TypeRuleError as exc:
                self.fail(tok, exc.message)
            except (KeyError, TypeError, ValueError) as exc:
                self.fail(tok, f"bad attributes for {name}: {exc}")
        if expected != declared:
            self.fail(tok, f"{name} gives {', '.join(map(str, expected))}, "
                           f"but the text declares {', '.join(map(str, declared))}")

    def attrs(self, node) -> dict:
        out = {}
        for attr in node.children:
            if attr is None:
                continue
            key, value = attr.children
            if str(key) in out:
                self.fail(key, f"attribute {key} is given twice")
            out[str(key)] = self.value(value)
        return out

    def value(self, node):
        if isinstance(node, lark.Token):
            raise AssertionError(node)
        kind = node.data
        if kind == "list":
            return [self.value(c) for c in node.children if c is not None]
        if kind in ("true", "false"):
            return kind == "true"
        if kind == "inf":
            return float("inf")
        if kind == "neg_inf":
            return float("-inf")
        if kind == "nan":
            return float("nan")
        (tok,) = node.children
        if kind == "int":
            return self.int(tok)
        if kind == "float":
            return float(tok)
        return self.string(tok)
