"""Deterministic text form of a tile program (FUSEDSL_DUMP_IR dumps, `plan.tile_ir`, tests),
and its parser.

One section per stage: the buffers (UB slot, dtype, Ascend C object, buffer count), CopyIn
(inputs, with their kernel parameter index, and how each reaches UB), the view kernels'
loads and boxes (the GM addressing of slices / concatenations / takes), the hoisted part
(once per core), Compute (per tile), CopyOut, and the tiling when sizes are known.  Stmts read
`dst = op(srcs) scalar : dtype`.

`parse_tile(text)` reads the program back (the tiling line, a runtime figure, is returned
apart): `print_tile(parse_tile(t).sched) == t` for every program the lowering makes, so a test
or a bug report can start from the text, and the verifier runs on a parsed program.  The kernel
of a parsed program is a name only (its graph ops are not part of the text), and a view load's
loaded value is its type (`ViewLoad.value` is None).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .. import dtypes as dt
from ..errors import IRParseError, Loc
from ..ir.core import Function
from ..views import Box, BoxSrc, ViewLoad, ViewPlan
from .ir import Slot, Stmt, TileInput, TileOutput, Tiling, VectorSchedule

_OBJECT = {"in": "TQue<VECIN, depth 1>", "out": "TQue<VECOUT, depth 1>", "tmp": "TBuf<VECCALC>",
           "inv": "TBuf<VECCALC> per core", "scratch": "TBuf<VECCALC> scratch"}
_ROLE = {text: role for role, text in _OBJECT.items()}


def _scalar(s) -> str:
    kind, value = s
    return repr(value) if kind == "imm" else f"${value}"


def format_stmt(st: Stmt, locs: bool = False) -> str:
    op = st.op + (f".{st.cmp_mode}" if st.cmp_mode else "")
    args = list(st.srcs) + ([_scalar(st.scalar)] if st.scalar is not None else [])
    text = f"{st.dst} = {op}({', '.join(args)}) : {st.dtype.name}"
    if st.op == "cast":
        text += f" from {st.src_dtype.name} {st.round_mode}"
    if st.aux:
        text += f" aux({', '.join(st.aux)})"
    if locs and st.loc is not None:
        text += f"  # {st.loc}"
    return text


def _ints(xs) -> str:
    return ",".join(str(x) for x in xs)


def _views_lines(plan) -> list[str]:
    L = [f"views: S [{_ints(plan.S)}]"]
    for j, ld in enumerate(plan.loads):
        g = "" if ld.gather is None else f" gather {_ints(ld.gather)}"
        L.append(f"  load {j} <- [{_ints(ld.sources)}]{g}")
    for b in plan.boxes:
        srcs = " ".join(f"({s.sel} {s.off} {s.rs} {s.cs} {s.ioff} {s.irs})" for s in b.srcs)
        L.append(f"  box {b.rows}x{b.cols} out {b.out_off} rs {b.out_rs}: {srcs}")
    return L


def print_tile(sched: VectorSchedule, tiling: Tiling | None = None, locs: bool = False) -> str:
    shape = ",".join(str(d) for d in sched.iter_shape)
    dims = " ".join("(" + ",".join(str(d) for d in g) + ")" for g in sched.dims)
    L = [f"tile @{sched.kernel.name} iter [{shape}] dims {dims} block {sched.block_elems} "
         f"granule {sched.gran_elems} slack {sched.slack_elems} budget {sched.ub_budget}"]
    L.append("buffers:")
    for name, s in sched.slots.items():
        held = sched.values_per_slot.get(name, 1)
        extra = f" holds {held}" if held > 1 else ""
        if name in sched.prefill:
            extra += f" prefill {sched.prefill[name]!r}"
        size = ""
        if tiling is not None:
            nbytes = -(-(tiling.tile_elems + sched.slack_elems) * s.dtype.itemsize // 32) * 32
            size = f" {nbytes} B"
        L.append(f"  {name}: {s.dtype.name} {_OBJECT.get(s.role, s.role)} x{s.num}{size}{extra}")
    L.append("copyin:")
    for i in sched.inputs:
        where = i.slot if i.slot else (f"${i.var}" if i.var else "-")
        bits = "".join("1" if b else "0" for b in i.bits)
        L.append(f"  {where} <- {i.name}#{i.index} {i.gm_dtype.name} {i.kind} [{bits}]")
    if sched.views is not None:
        L += _views_lines(sched.views)
    L.append("hoisted:")
    L += [f"  {format_stmt(st, locs)}" for st in sched.hoisted]
    L.append("compute:")
    L += [f"  {format_stmt(st, locs)}" for st in sched.body]
    L.append("copyout:")
    L += [f"  {o.name}#{o.index} <- {o.slot} {o.gm_dtype.name}" for o in sched.outputs]
    if tiling is not None:
        t = tiling
        L.append(f"tiling: R {t.R} C {t.C} Cpad {t.Cpad} tile {t.tile_rows}x{t.tile_cols} ({t.tile_elems} elems) "
                 f"{'rows' if t.rows_mode else 'chunks'} tiles {t.total_tiles} per-core {t.tiles_per_core} "
                 f"blockDim {t.block_dim}")
    return "\n".join(L) + "\n"


# ---- parser -----------------------------------------------------------------------------------

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


__all__ = ["format_stmt", "parse_stmt", "print_tile", "parse_tile", "parse_tiles", "ParsedTile", "TileParseError"]
