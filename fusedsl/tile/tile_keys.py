"""The per-tile keys of a kernel walk (tile/kernel_cost.py `_walk_kernel`), computed by Python code
generated once per kernel instead of by walking the per-tile stages that only set variables.

Why: the walk prices a kernel by walking one core and taking every core whose tiles do the same
work from it; to know which cores those are it computes, for every tile of the launch, the values
its stages' work reads (`row0`, `nrows`: the "key").  That was two-thirds of the evaluations of a
row kernel's tiling pass -- `set nrows = min(t.tileRows, t.R - row0)` walked as nested tuples for
every tile of every candidate tiling (15 candidates for a [40, 300] softmax).  The stages that
compute the keys hold nothing but `set` and `let` of integer expressions, so they compile to a
straight Python loop over the tiles, as fast as the arithmetic itself.

The generated code computes exactly what `evaluate` / `assign` / the walk's `set_var` compute for
Python ints (tile/kernel._INT_BINARY: 32-bit wrapping `+ - *`, floor `/ %`, `min`, `pad`, the
comparisons and logic ops evaluating both operands, `sel`, `neg`, a field array's `[]`).  It is
used only where that holds: each expression of the stages is one of those forms (else no code is
generated), and each name the loop reads before it sets it holds an int at the call (a field
array: a list or tuple of ints; a name only keyed: an int or absent); otherwise, and when the code
raises, the caller walks the stages as before (`None`).
"""
from __future__ import annotations

from .kernel import If, Let, Set

_M32 = 0xFFFFFFFF

# op -> the Python expression of two int operands A and B (left evaluated first, both always)
_BINARY = {"+": "(({a} + {b}) & 4294967295)", "-": "(({a} - {b}) & 4294967295)", "*": "(({a} * {b}) & 4294967295)",
           "/": "({a} // {b})", "%": "({a} % {b})", "min": "_min({a}, {b})", "pad": "_pad({a}, {b})",
           "fmax": "_fmax({a}, {b})", "fmin": "_fmin({a}, {b})", "==": "int({a} == {b})", "!=": "int({a} != {b})",
           "<": "int({a} < {b})", "<=": "int({a} <= {b})", ">": "int({a} > {b})", ">=": "int({a} >= {b})",
           "&&": "_and({a}, {b})", "||": "_or({a}, {b})"}


def _pad(a, b):
    return -(-a // b) * b


def _fmax(a, b):
    return b if b > a else a


def _fmin(a, b):
    return b if b < a else a


def _and(a, b):
    return int(bool(a) and bool(b))


def _or(a, b):
    return int(bool(a) or bool(b))


class _NotCompiled(Exception):
    pass


class _Source:
    """The generated function's text and the names it reads from the env."""

    def __init__(self):
        self.local: dict = {}        # name -> Python identifier
        self.entry: set = set()      # names read before the loop sets them: ints at the call
        self.arrays: set = set()     # names indexed with `[]`: lists / tuples of ints at the call
        self.keyed: set = set()      # names keyed before the loop sets them: ints or absent at the call
        self.set: set = set()        # names surely set so far, in the loop's order (the first tile's)
        self.assigned: set = set()   # names set anywhere in the loop (a branch's too)

    def name(self, n: str) -> str:
        if n not in self.local:
            self.local[n] = f"v{len(self.local)}"
        return self.local[n]

    def read(self, n: str) -> str:
        if n not in self.set:
            self.entry.add(n)
        return self.name(n)

    def expr(self, e) -> str:
        kind = type(e)
        if kind is str:
            return self.read(e)
        if kind is int:
            return repr(e)
        if kind is not tuple or not e:
            raise _NotCompiled(e)
        op = e[0]
        if op in _BINARY and len(e) == 3:
            return _BINARY[op].format(a=self.expr(e[1]), b=self.expr(e[2]))
        if op == "[]" and len(e) == 3 and type(e[1]) is str:
            if e[1] in self.set:
                raise _NotCompiled(e)   # (an array the loop sets: not a field)
            self.arrays.add(e[1])
            return f"{self.name(e[1])}[{self.expr(e[2])}]"
        if op == "neg" and len(e) == 2:
            return f"(-{self.expr(e[1])})"
        if op == "sel" and len(e) == 4:   # only the branch taken is evaluated, as `evaluate` does
            c, a, b = self.expr(e[1]), self.expr(e[2]), self.expr(e[3])
            return f"({a} if {c} else {b})"
        raise _NotCompiled(e)


def _statements(src: _Source, body, lines: list, indent: str) -> None:
    """The Python statements of a stage body of sets, lets and branches of them (the walk's
    `set_var`, `let` and `branch`); a name set in one branch only is not surely set after it."""
    for node in body:
        kind = type(node)
        if kind is If:
            lines.append(f"{indent}if {src.expr(node.cond)}:")
            before = set(src.set)
            branches = []
            for i, branch in enumerate((node.then, node.orelse)):
                if i:
                    lines.append(f"{indent}else:")
                src.set = set(before)
                lines.append(f"{indent}    pass")
                _statements(src, branch, lines, indent + "    ")
                branches.append(src.set)
            src.set = branches[0] & branches[1]
            continue
        if kind is Let or (kind is Set and node.op == "="):
            value = src.expr(node.expr)
            lines.append(f"{indent}{src.name(node.var)} = {value}")
        elif kind is Set and node.op == "+=":
            value = src.expr(node.expr)
            lines.append(f"{indent}{src.name(node.var)} = ({src.read(node.var)} + {value}) & 4294967295")
        elif kind is Set and node.op == "/=":   # (the walk skips a division by 0)
            value = src.expr(node.expr)
            lines.append(f"{indent}_d = {value}")
            lines.append(f"{indent}if _d: {src.name(node.var)} = {src.read(node.var)} // _d")
        else:
            raise _NotCompiled(node)
        src.set.add(node.var)
        src.assigned.add(node.var)


def compile_tile_keys(plan: list):
    """For `_walk_kernel`'s tile plan ([(stage, None for a stage that only sets variables, else the
    names its key reads)]), a function (env, start, stop) -> [the key of each tile in range(start,
    stop)] (each key as `_tile_keys` builds it) or None where the env does not hold what the code
    assumes; or None when a stage's expressions are not all compilable.  The function's
    `stateless`: whether a tile's key depends on the tile alone (no tile reads what an earlier tile
    set), so that one call over a launch's tiles gives every core's."""
    src = _Source()
    lines: list = []
    try:
        for st, names in plan:
            if st.param:
                lines.append(f"{src.name(st.param)} = tile")
                src.set.add(st.param)
                src.assigned.add(st.param)
            if names is None:
                _statements(src, st.body, lines, "")
            elif names:
                for n in names:
                    if n not in src.set:
                        src.keyed.add(n)
                lines.append(f"key.append(({''.join(src.name(n) + ', ' for n in names)}))")
    except _NotCompiled:
        return None
    if src.arrays & (src.entry - src.arrays) or src.arrays & src.keyed:
        return None   # (a name both indexed and used as an int)
    head = ["def keys(env, start, stop):"]
    for n, v in src.local.items():
        head.append(f"    {v} = env.get({n!r})")
    for n in sorted(src.entry - src.arrays):
        head.append(f"    if type({src.local[n]}) is not int: return None")
    for n in sorted(src.arrays):
        v = src.local[n]
        head.append(f"    if type({v}) not in (list, tuple) or any(type(x) is not int for x in {v}): return None")
    for n in sorted(src.keyed - src.entry):
        v = src.local[n]
        head.append(f"    if {v} is not None and type({v}) is not int: return None")
    body = ["    out = []", "    for tile in range(start, stop):", "        key = []"]
    body += ["        " + line for line in lines]
    body += ["        out.append(tuple(key))", "    return out"]
    text = "\n".join(head + body)
    fn = _COMPILED.get(text)
    if fn is None:
        if len(_COMPILED) >= _COMPILED_MAX:
            _COMPILED.clear()
        scope = dict(_HELPERS)
        exec(compile(text, "<fusedsl tile keys>", "exec"), scope)   # noqa: S102 (our own text)
        fn = _COMPILED[text] = scope["keys"]
        # a tile's key depends on the tile alone when the loop reads nothing it sets before setting
        # it (nothing carries from one tile to the next): one call can give every tile's
        fn.stateless = not (src.entry & src.assigned) and not (src.keyed & src.assigned)
    return fn


_HELPERS = {"_min": min, "_pad": _pad, "_fmax": _fmax, "_fmin": _fmin, "_and": _and, "_or": _or}
# The functions compiled in this process, by their text: Python's compile costs ~0.2 ms, more than
# the keys of a small kernel's walks, and kernels of one kind share their per-tile stages' text (a
# row kernel's `row0` / `nrows`, whatever its ops).  Emptied when full (a process of many kinds).
_COMPILED: dict = {}
_COMPILED_MAX = 256
