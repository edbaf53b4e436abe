"""The tile IR's text forms read back: a tile program (`tile/text.py` print_tile) and a whole
kernel (`tile/kernel.py` print_kernel).

Tests and bug reports start from the text (`print_tile(parse_tile(t).sched) == t`,
`print_kernel(parse_kernel(t)) == t`); the compiler never parses, so a kernel's first call does
not import this module (its regular expressions alone cost about 3 ms to compile).

A parsed tile program's kernel is a name only (its graph ops are not part of the text), and a
view load's loaded value is its type (`ViewLoad.value` is None).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .. import dtypes as dt
from ..errors import IRParseError, Loc
from ..ir.core import Function
from ..views import Box, BoxSrc, ViewLoad, ViewPlan
from .ir import Slot, Stmt, TileInput, TileOutput, VectorSchedule
from .kernel import (BINARY, VIEWS, Alloc, Barrier, Call, CopyIn, CopyNz, CopyOut, Decl, DeQue, Dup, EnQue, Expr,
                     Field, For, Free, GatherRow, Gm, If, Let, Matmul, Member, MmEnd, MmGetC, MmIterate, MmSet,
                     MmTail, Move, Operand, Put, Queue, Ref, Reset, Return, RunPart, Scalar, Set, Stage, Step,
                     Sync, TileKernel, UbCopy, Var, Vec)
from .text import _ROLE


# ---- a tile program (print_tile) ---------------------------------------------------------------
@dataclass
class ParsedTile:
    sched: VectorSchedule
    tiling: dict | None       # the tiling line's figures (R, C, Cpad, tile, ..., blockDim) when present


class TileParseError(IRParseError):
    """The tile text does not follow print_tile's form (the message names the line)."""


_HEADER = re.compile(r"tile @(\S+) iter \[([^\]]*)\] dims ?(.*?) block (\d+) granule (\d+) slack (\d+) "
                     r"budget (-?\d+)$")
_BUFFER = re.compile(r"  (\w+): (\w+) (.+?) x(\d+)(?: (\d+) B)?(?: holds (\d+))?(?: prefill (.+))?$")
_COPYIN = re.compile(r"  (\S+) <- (\w+)#(\d+) (\w+) (\w+) \[([01]*)\]$")
_COPYOUT = re.compile(r"  (\w+)#(\d+) <- (\w+) (\w+)$")
_STMT = re.compile(r"  (\w+) = (\w+)(?:\.(\w+))?\((.*?)\) : (\w+)(?: from (\w+) (\w+))?(?: aux\(([^)]*)\))?"
                   r"(?:  # (.*):(-?\d+))?$")
_LOAD = re.compile(r"  load (\d+) <- \[([\d,]*)\](?: gather ([\d,]+))?$")
_BOX = re.compile(r"  box (\d+)x(\d+) out (-?\d+) rs (-?\d+): ?(.*)$")


def _dtype(name: str, lineno: int) -> dt.DType:
    try:
        return dt.to_dtype(name)
    except Exception:
        raise TileParseError(f"tile text line {lineno}: unknown dtype {name!r}") from None


def _literal(tok: str):
    """A printed scalar immediate (repr of an int, float or bool), or None when `tok` is a slot."""
    if tok in ("True", "False"):
        return tok == "True"
    if tok in ("inf", "-inf", "nan"):
        return float(tok)
    try:
        return int(tok)
    except ValueError:
        pass
    try:
        return float(tok)
    except ValueError:
        return None


def _dim(tok: str):
    return int(tok) if re.fullmatch(r"-?\d+", tok) else tok


def _tuple_ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x)


def parse_stmt(text: str, lineno: int, hoisted: bool = False) -> Stmt | None:
    """One stmt in format_stmt's form (with its `  # file:line`), or None when `text` is not one."""
    s = _STMT.match("  " + text)
    if s is None:
        return None
    dst, op, cmp_mode, args, dtype, src_dtype, round_mode, aux, lfile, lline = s.groups()
    srcs, scalar = [], None
    for tok in (a.strip() for a in args.split(",") if a.strip()):
        if tok.startswith("$"):
            scalar = ("var", tok[1:])
        elif (value := _literal(tok)) is not None:
            scalar = ("imm", value)
        else:
            srcs.append(tok)
    return Stmt(op, dst, tuple(srcs), _dtype(dtype, lineno), scalar,
                _dtype(src_dtype, lineno) if src_dtype else None, round_mode,
                hoisted, Loc(lfile, int(lline)) if lfile else None,
                cmp_mode, tuple(a.strip() for a in aux.split(",")) if aux else ())


def parse_tile(text: str) -> ParsedTile:
    """Read print_tile's text back into a tile program (module doc)."""
    lines = text.rstrip("\n").split("\n")
    m = _HEADER.match(lines[0]) if lines else None
    if m is None:
        raise TileParseError("tile text line 1: expected 'tile @<kernel> iter [...] dims ... budget N'")
    name, shape, dims, block, gran, slack, budget = m.groups()
    sched = VectorSchedule(kernel=Function(name, (), (), ()),
                           iter_shape=tuple(_dim(d) for d in shape.split(",") if d),
                           dims=tuple(_tuple_ints(g) for g in re.findall(r"\(([^)]*)\)", dims)),
                           inputs=[], outputs=[], slots={}, stmts=[], slack_elems=int(slack),
                           block_elems=int(block), gran_elems=int(gran), ub_budget=int(budget))
    section, tiling, loads, boxes, S = None, None, [], [], None
    for lineno, line in enumerate(lines[1:], start=2):
        if line in ("buffers:", "copyin:", "hoisted:", "compute:", "copyout:"):
            section = line[:-1]
            continue
        if line.startswith("views: S ["):
            section, S = "views", _tuple_ints(line[len("views: S ["):-1])
            continue
        if line.startswith("tiling: "):
            nums = re.findall(r"(-?\d+)", line)
            tiling = {"text": line, "R": int(nums[0]), "C": int(nums[1]), "blockDim": int(nums[-1])}
            continue
        bad = TileParseError(f"tile text line {lineno}: {line!r} is not a {section or 'section'} line")
        if section == "buffers":
            b = _BUFFER.match(line)
            if b is None:
                raise bad
            slot, dtype, obj, num, _, held, prefill = b.groups()
            sched.slots[slot] = Slot(slot, _dtype(dtype, lineno), _ROLE.get(obj, obj), int(num))
            if held:
                sched.values_per_slot[slot] = int(held)
            if prefill is not None:
                value = _literal(prefill)
                sched.prefill[slot] = value if value is not None else prefill
        elif section == "copyin":
            c = _COPYIN.match(line)
            if c is None:
                raise bad
            where, pname, index, dtype, kind, bits = c.groups()
            slot = where if where[0] not in "$-" else None
            var = where[1:] if where.startswith("$") else None
            sched.inputs.append(TileInput(int(index), pname, _dtype(dtype, lineno), kind,
                                          tuple(ch == "1" for ch in bits), slot, var))
        elif section == "views":
            ld, bx = _LOAD.match(line), _BOX.match(line)
            if ld is not None:
                g = ld.group(3)
                loads.append(ViewLoad(None, _tuple_ints(ld.group(2)), _tuple_ints(g) if g else None))
            elif bx is not None:
                srcs = tuple(BoxSrc(*(int(x) for x in s.split()))
                             for s in re.findall(r"\(([^)]*)\)", bx.group(5)))
                boxes.append(Box(int(bx.group(1)), int(bx.group(2)), int(bx.group(3)), int(bx.group(4)), srcs))
            else:
                raise bad
        elif section in ("hoisted", "compute"):
            st = parse_stmt(line[2:], lineno, hoisted=section == "hoisted")
            if st is None:
                raise bad
            sched.stmts.append(st)
        elif section == "copyout":
            o = _COPYOUT.match(line)
            if o is None:
                raise bad
            oname, index, slot, dtype = o.groups()
            sched.outputs.append(TileOutput(int(index), oname, _dtype(dtype, lineno), slot))
        else:
            raise bad
    if S is not None:
        sched.views = ViewPlan(S, tuple(loads), tuple(boxes))
    return ParsedTile(sched, tiling)


def parse_tiles(text: str) -> list[ParsedTile]:
    """Several programs printed one after another (`plan.tile_ir` of a row, column or cube
    kernel: one per op), each starting at its `tile @` line."""
    starts = [i for i, line in enumerate(text.split("\n")) if line.startswith("tile @")]
    lines = text.split("\n")
    if not starts or starts[0] != 0:
        raise TileParseError("tile text line 1: expected 'tile @<kernel> iter [...] dims ... budget N'")
    bounds = starts + [len(lines)]
    return [parse_tile("\n".join(lines[a:b]).rstrip("\n") + "\n") for a, b in zip(bounds, bounds[1:])]


# ---- a whole kernel (print_kernel) --------------------------------------------------------------
_DTYPES = {d.name: d for d in dt.ALL}   # a cast's spelling: float32(e)

_TOKEN = re.compile(r"\s*(?:(\d+)|(#[^\s,()\[\]]+)|([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)|"
                    r"(==|!=|<=|>=|&&|\|\||[-+*/%<>()\[\],]))")


def parse_expr(text: str) -> Expr:
    toks = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"bad expression {text!r} at {text[pos:]!r}")
        if m.group(2):
            v = _literal(m.group(2)[1:])
            if not isinstance(v, float):
                raise ValueError(f"bad number {m.group(2)!r} in {text!r}")
            toks.append(("#", v))
        else:
            toks.append(int(m.group(1)) if m.group(1) else (m.group(3) or m.group(4)))
        pos = m.end()
    i = 0

    def peek():
        return toks[i] if i < len(toks) else None

    def take(want=None):
        nonlocal i
        tok = peek()
        if want is not None and tok != want:
            raise ValueError(f"expected {want!r} in {text!r}")
        i += 1
        return tok

    def primary():
        tok = take()
        if tok == "(":
            e = binary(0)
            take(")")
            return e
        if isinstance(tok, int):
            return tok
        if isinstance(tok, tuple):   # a float literal
            return tok[1]
        if tok in ("get", "neg") and peek() == "(":
            take("(")
            a = binary(0) if tok == "neg" else take()
            if tok == "neg":
                take(")")
                return ("neg", a)
            take(",")
            idx = binary(0)
            take(")")
            return ("get", a, idx)
        if isinstance(tok, str) and tok in _DTYPES and peek() == "(":
            take("(")
            a = binary(0)
            take(")")
            return ("cast", _DTYPES[tok], a)
        if tok == "load" and peek() == "(":
            take("(")
            name = take()
            if peek() == ",":
                take(",")
                idx = binary(0)
                take(")")
                return ("load", name, idx)
            take(")")
            return ("load", name)
        if tok == "sel" and peek() == "(":
            take("(")
            c = binary(0)
            take(",")
            a = binary(0)
            take(",")
            b = binary(0)
            take(")")
            return ("sel", c, a, b)
        if tok in ("min", "pad", "fmax", "fmin") and peek() == "(":
            take("(")
            a = binary(0)
            take(",")
            b = binary(0)
            take(")")
            return (tok, a, b)
        if isinstance(tok, str) and re.match(r"[A-Za-z_]", tok):
            if peek() == "[":
                take("[")
                idx = binary(0)
                take("]")
                return ("[]", tok, idx)
            return tok
        raise ValueError(f"unexpected {tok!r} in {text!r}")

    def binary(min_prec):
        left = primary()
        while isinstance(peek(), str) and peek() in BINARY and BINARY[peek()] >= min_prec:
            op = take()
            right = binary(BINARY[op] + 1)
            left = (op, left, right)
        return left

    e = binary(0)
    if i != len(toks):
        raise ValueError(f"trailing text in {text!r}")
    return e


class TileKernelParseError(IRParseError):
    """The kernel text does not follow print_kernel's form (the message names the line)."""


def _unesc(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), s)


_RE = {
    "kernel": re.compile(r"kernel @(\S+) kind (\S+)$"),
    "note": re.compile(r'note "(.*)"$'),
    "field": re.compile(r"field (\w+)(?:\[(\d+)\])?(?: (float|int32_t))?$"),
    "gm": re.compile(r"gm (\w+) (\w+) (in|out|work) (\d+)(?: at (\d+) elems (\d+))?$"),
    "queue": re.compile(r"queue (\w+) (VECIN|VECOUT|VECCALC|TSCM|TBUF_VECOUT) depth (\d+) (\w+) elems (.+)$"),
    "member": re.compile(r"member (\w+)(?: ([a-z]\w*))?(?: = (.+))?$"),
    "stage": re.compile(r"stage (\w+)(?:\((\w+)\))?( once)?:$"),
    "let": re.compile(r"(let|var) (\w+) = (.+)$"),
    "set": re.compile(r"set (\w+) (=|\+=|/=) (.+)$"),
    "for": re.compile(r"for (\w+) in (.+) \.\. (.+?)(?: step (.+?))?( down)?:$"),
    "if": re.compile(r"if (.+):$"),
    "alloc": re.compile(r"(alloc|deque) (\w+) = (\w+)$"),
    "enque": re.compile(r"(enque|free) (\w+) (\w+)$"),
    "copyin": re.compile(r"copyin (\w+(?:\[.+\])?) <- (\w+)\[(.+)\] rows (.+) ; cols (.+) ; gm (.+) ; ub (.+)$"),
    "copyout": re.compile(r"copyout (\w+)\[(.+)\] <- (\w+(?:\[.+\])?) rows (.+) ; cols (.+) ; gm (.+) ; ub (.+)$"),
    "gatherrow": re.compile(r"gatherrow (.+?) <- (\w+)\[(\w+)\[(.+)\]\] bound (\d+) row (\d+) col (.+) count (.+)$"),
    "ubcopy": re.compile(r"ubcopy (\w+)\[(.+)\] <- (\w+)\[(.+)\] count (.+)$"),
    "move": re.compile(r"move (\w+)\[(.+)\] <- (\w+)\[(.+)\]$"),
    "barrier": re.compile(r'barrier(?: "(.*)")?$'),
    "decl": re.compile(r"decl (\w+) = (\w+)$"),
    "dup": re.compile(r"dup (.+?) <- (.+) count (.+)$"),
    "vec": re.compile(r"vec (\w+) (.+?) <- (.+?)(?: scalar (\S+))?(?: mode (\w+))? count (.+)$"),
    "step": re.compile(r'step "(.*)"(?: at (.+?))?(?: count (.+?))?:$'),
    "sync": re.compile(r"sync (V_S|S_V)$"),
    "val": re.compile(r"val (\w+) (\w+) = (.+)$"),
    "put": re.compile(r"put (\w+)\[(.+?)\] <- (.+)$"),
    "map": re.compile(r"map (\w+) -> (.+)$"),
    "scalar": re.compile(r"scalar (\w+) -> (\w+)$"),
    "prefill": re.compile(r"prefill (.+?) <- (\S+) count (.+)$"),
    "call": re.compile(r"call (\w+)(?:\((.+)\))?$"),
    "run": re.compile(r"run part (\d+) \((.*)\)$"),
    "part": re.compile(r"part (\d+):$"),
    "mmset": re.compile(r"mmset (\w+) (A|B) <- (\w+)\[(.+)\]$"),
    "mmtail": re.compile(r"mmtail (\w+) (.+?) ; (.+?)(?: ; (.+))?$"),
    "iterate": re.compile(r"iterate (\w+):$"),
    "getc": re.compile(r"getc (\w+) <- (\w+)( placed)?$"),
    "mmend": re.compile(r"mmend (\w+)$"),
    "copynz": re.compile(r"copynz (\w+) <- (\w+)\[(.+)\] rows (.+) ; cols (.+) ; gm (.+)$"),
    "matmul": re.compile(r"matmul (\w+) a (.+) ; b (.+) ; c (.+?)(?: ; workspace (\w+))?(?: ; tiling (\w+))?$"),
    "operand": re.compile(r"(GM|TSCM|VECIN|VECOUT) (ND|NZ) (\w+)( transposed)?$"),
}


def _split_top(text: str) -> list[str]:
    """`text` split at the commas outside brackets and parentheses."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "[("
        depth -= ch in "])"
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + [cur.strip()] if cur.strip() else out


def _nested_kernel(lines: list[str], pos: int, into: list, what: str) -> int:
    """Parse the kernel indented by two spaces under line `pos` (a part, a candidate kernel) into
    `into`; returns the index of the line after it.  Its errors name it and where it starts (their
    line numbers are its own)."""
    first = end = pos + 1
    while end < len(lines) and lines[end].startswith("  "):
        end += 1
    try:
        into.append(parse_kernel("\n".join(x[2:] for x in lines[first:end]) + "\n"))
    except TileKernelParseError as exc:
        raise TileKernelParseError(f"{what} (from line {first + 1}): {exc}") from None
    return end


def parse_kernel(text: str) -> TileKernel:
    """A TileKernel from print_kernel's text; TileKernelParseError names the line it cannot read."""
    lines = text.rstrip("\n").split("\n")
    pos = 0
    cur = 0     # the line being read (pos may have moved past it into a nested block)

    def fail(msg):
        raise TileKernelParseError(f"tile kernel text line {cur + 1}: {msg}: {lines[min(cur, len(lines) - 1)]!r}")

    def expr(s):
        try:
            return parse_expr(s)
        except ValueError as exc:
            fail(str(exc))

    def ref(text_: str) -> Ref:
        m_ = re.fullmatch(r"(\w+)(?:\[(.+?)\])?(?: as (\w+))?", text_.strip())
        if m_ is None:
            fail(f"not a tensor reference: {text_!r}")
        if m_.group(3) is not None and m_.group(3) not in VIEWS:
            fail(f"unknown view {m_.group(3)!r}")
        return Ref(m_.group(1), expr(m_.group(2)) if m_.group(2) else 0, m_.group(3))

    def operand(text_: str) -> Operand:
        m_ = _RE["operand"].match(text_.strip())
        if m_ is None or m_.group(3) not in _DTYPES:
            fail(f"not a Matmul operand: {text_!r}")
        return Operand(m_.group(1), m_.group(2), _DTYPES[m_.group(3)], bool(m_.group(4)))

    def value(text_: str):
        if text_.startswith("#"):
            v = _literal(text_[1:])
            if v is None:
                fail(f"not a number: {text_!r}")
            return v
        return expr(text_)

    def step_body(label: str, ind: str, offset, count) -> Step:
        nonlocal pos, cur
        names, scalars, prefill, stmts = [], [], [], []
        while pos < len(lines) and lines[pos].startswith(ind) and not lines[pos].startswith(ind + " "):
            line = lines[pos][len(ind):]
            cur = pos
            pos += 1
            if m_ := _RE["map"].match(line):
                names.append((m_.group(1), ref(m_.group(2))))
            elif m_ := _RE["scalar"].match(line):
                scalars.append((m_.group(1), m_.group(2)))
            elif m_ := _RE["prefill"].match(line):
                prefill.append((ref(m_.group(1)), value(m_.group(2)), expr(m_.group(3))))
            elif line.startswith("do ") and (st := parse_stmt(line[3:], cur + 1)) is not None:
                stmts.append(st)
            else:
                fail("not a step line")
        return Step(label, tuple(stmts), tuple(names), tuple(scalars), tuple(prefill), offset, count)

    def block(depth: int) -> tuple:
        nonlocal pos, cur
        out = []
        ind = "  " * depth
        while pos < len(lines) and lines[pos].startswith(ind) and not lines[pos].startswith(ind + " "):
            line = lines[pos][len(ind):]
            cur = pos
            pos += 1
            if m := _RE["let"].match(line):
                out.append((Let if m.group(1) == "let" else Var)(m.group(2), expr(m.group(3))))
            elif m := _RE["set"].match(line):
                out.append(Set(m.group(1), expr(m.group(3)), m.group(2)))
            elif m := _RE["for"].match(line):
                start, end = expr(m.group(2)), expr(m.group(3))
                step = expr(m.group(4)) if m.group(4) else 1
                out.append(For(m.group(1), start, end, block(depth + 1), bool(m.group(5)), step))
            elif m := _RE["if"].match(line):
                cond = expr(m.group(1))
                then = block(depth + 1)
                orelse = ()
                if pos < len(lines) and lines[pos] == ind + "else:":
                    pos += 1
                    orelse = block(depth + 1)
                out.append(If(cond, then, orelse))
            elif m := _RE["alloc"].match(line):
                out.append((Alloc if m.group(1) == "alloc" else DeQue)(m.group(2), m.group(3)))
            elif m := _RE["enque"].match(line):
                out.append((EnQue if m.group(1) == "enque" else Free)(m.group(2), m.group(3)))
            elif m := _RE["copyin"].match(line):
                g = m.groups()
                r = ref(g[0])
                out.append(CopyIn(r.tensor, g[1], *(expr(x) for x in g[2:]), ub_off=r.offset))
            elif m := _RE["copyout"].match(line):
                g = m.groups()
                r = ref(g[2])
                out.append(CopyOut(g[0], expr(g[1]), r.tensor, *(expr(x) for x in g[3:]), ub_off=r.offset))
            elif m := _RE["gatherrow"].match(line):
                g = m.groups()
                out.append(GatherRow(ref(g[0]), g[1], g[2], expr(g[3]), int(g[4]), int(g[5]), expr(g[6]), expr(g[7])))
            elif m := _RE["ubcopy"].match(line):
                g = m.groups()
                out.append(UbCopy(g[0], expr(g[1]), g[2], expr(g[3]), expr(g[4])))
            elif m := _RE["move"].match(line):
                g = m.groups()
                out.append(Move(g[0], expr(g[1]), g[2], expr(g[3])))
            elif m := _RE["barrier"].match(line):
                out.append(Barrier(_unesc(m.group(1) or "")))
            elif m := _RE["decl"].match(line):
                out.append(Decl(m.group(1), m.group(2)))
            elif m := _RE["dup"].match(line):
                out.append(Dup(ref(m.group(1)), value(m.group(2)), expr(m.group(3))))
            elif m := _RE["vec"].match(line):
                api, dst, srcs, scal, mode, count = m.groups()
                out.append(Vec(api, ref(dst), tuple(ref(x) for x in _split_top(srcs)), expr(count),
                               None if scal is None else value(scal), mode))
            elif m := _RE["step"].match(line):
                out.append(step_body(_unesc(m.group(1)), ind + "  ", expr(m.group(2)) if m.group(2) else 0,
                                     expr(m.group(3)) if m.group(3) else None))
            elif m := _RE["sync"].match(line):
                out.append(Sync(m.group(1)))
            elif m := _RE["val"].match(line):
                if m.group(2) not in _DTYPES:
                    fail(f"unknown dtype {m.group(2)!r}")
                out.append(Scalar(m.group(1), _DTYPES[m.group(2)], expr(m.group(3))))
            elif m := _RE["put"].match(line):
                out.append(Put(m.group(1), expr(m.group(2)), expr(m.group(3))))
            elif m := _RE["call"].match(line):
                out.append(Call(m.group(1), expr(m.group(2)) if m.group(2) else None))
            elif line == "return":
                out.append(Return())
            elif m := _RE["run"].match(line):
                out.append(RunPart(int(m.group(1)), tuple(x.strip() for x in m.group(2).split(",") if x.strip())))
            elif line == "reset":
                out.append(Reset())
            elif m := _RE["mmset"].match(line):
                out.append(MmSet(m.group(1), m.group(2), m.group(3), expr(m.group(4))))
            elif m := _RE["mmtail"].match(line):
                out.append(MmTail(m.group(1), expr(m.group(2)), expr(m.group(3)), expr(m.group(4)) if m.group(4) else None))
            elif m := _RE["iterate"].match(line):
                out.append(MmIterate(m.group(1), block(depth + 1)))
            elif m := _RE["getc"].match(line):
                out.append(MmGetC(m.group(2), m.group(1), bool(m.group(3))))
            elif m := _RE["mmend"].match(line):
                out.append(MmEnd(m.group(1)))
            elif m := _RE["copynz"].match(line):
                g = m.groups()
                out.append(CopyNz(g[0], g[1], *(expr(x) for x in g[2:])))
            else:
                fail("not a statement")
        return tuple(out)

    m = _RE["kernel"].match(lines[0]) if lines else None
    if m is None:
        fail("expected 'kernel @<name> kind <kind>'")
    name, kind = m.groups()
    pos = 1
    note = ""
    fields, gms, queues, members, stages, words, candidates = [], [], [], [], [], (), []
    matmuls, tiling_struct, process, cores, parts, block_dim = [], "", None, "t.usedCoreNum", [], None
    while pos < len(lines):
        line = lines[pos]
        cur = pos
        if (m := _RE["note"].match(line)) and pos == 1:
            note = _unesc(m.group(1))
        elif m := _RE["field"].match(line):
            fields.append(Field(m.group(1), int(m.group(2) or 0), m.group(3) or "uint32_t"))
        elif m := _RE["gm"].match(line):
            gms.append(Gm(m.group(1), dt.to_dtype(m.group(2)), m.group(3), int(m.group(4)), int(m.group(5) or 0),
                          int(m.group(6) or 0)))
        elif m := _RE["queue"].match(line):
            queues.append(Queue(m.group(1), m.group(2), int(m.group(3)), dt.to_dtype(m.group(4)), expr(m.group(5))))
        elif m := _RE["member"].match(line):
            members.append(Member(m.group(1), None if m.group(3) is None else expr(m.group(3)),
                                  None if m.group(2) is None else dt.to_dtype(m.group(2))))
        elif m := _RE["stage"].match(line):
            pos += 1
            stages.append(Stage(m.group(1), m.group(2), block(1), bool(m.group(3))))
            continue
        elif line.startswith("tiling "):
            tiling_struct = line.split(" ", 1)[1]
        elif m := _RE["matmul"].match(line):
            matmuls.append(Matmul(m.group(1), operand(m.group(2)), operand(m.group(3)), operand(m.group(4)),
                                  m.group(5) or "", m.group(6) or ""))
        elif line.startswith("cores "):
            cores = expr(line[6:])
        elif line.startswith("blockdim "):
            block_dim = expr(line[9:])
        elif line == "process:":
            pos += 1
            process = block(1)
            continue
        elif m := _RE["part"].match(line):
            if int(m.group(1)) != len(parts):
                fail(f"part {len(parts)} expected")
            pos = _nested_kernel(lines, pos, parts, f"part {len(parts)}")
            continue
        elif line.startswith("words "):
            try:
                words = tuple(int(w) for w in line.split()[1:])
            except ValueError:
                fail("bad tiling words")
        elif line == "candidate kernel:":
            pos = _nested_kernel(lines, pos, candidates, "candidate kernel")
            continue
        elif line.startswith("candidate "):
            try:
                candidates.append(tuple(int(w) for w in line.split()[1:]))
            except ValueError:
                fail("bad candidate tiling words")
        else:
            fail("not a kernel line")
        pos += 1
    return TileKernel(name, kind, note, fields, gms, queues, members, stages, words, tuple(matmuls), tiling_struct,
                      process, cores, tuple(parts), tuple(candidates), block_dim)
