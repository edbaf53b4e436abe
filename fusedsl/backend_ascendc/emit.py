"""Tile statements as Ascend C text, and the C++ spellings every kernel printer shares.

`emit_stmt` prints one tile statement (tile/ir.py) from its primitive's call form
(tile/prims.py); the per-kind printers place those statements in their loops, renaming UB
slots onto their own buffers (`rename_stmt`, `name_temporaries`).  Literals, runtime-scalar
fields and one-element GM reads are spelled here once, so every kind prints them alike.
"""
from __future__ import annotations

import functools
import linecache
import math
import struct

from .. import dtypes as dt
from ..lower.vector import Stmt
from ..tile.kernel import name_temporaries  # noqa: F401  (the printers place a step's temporaries with it)
from ..tile.prims import PRIMS


@functools.lru_cache(maxsize=1024)   # a pure function of the name, asked ~4 times per kernel printed
def camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_") if p)


def literal(value, dtype: dt.DType) -> str:
    """A C++ expression of `value` converted to the element type."""
    t = dtype.ascendc
    if dtype.is_float:
        v = float(value)
        if math.isnan(v):
            text = '__builtin_nanf("")'
        elif math.isinf(v):
            text = "__builtin_inff()" if v > 0 else "-__builtin_inff()"
        else:
            r = repr(v)
            text = r + "f" if "e" in r or "." in r else r + ".0f"
        return text if t == "float" else f"static_cast<{t}>({text})"
    return f"static_cast<{t}>({int(value)})"


def _scalar(stmt: Stmt) -> str:
    kind, value = stmt.scalar
    if kind == "imm":
        return literal(value, stmt.dtype)
    return f"static_cast<{stmt.dtype.ascendc}>({value})"


# ---- the emit table: tile op -> printed statement (o = segment offset, n = count) -------------
def _bin(api):
    return lambda s: f"AscendC::{api}({s.dst}[o], {s.srcs[0]}[o], {s.srcs[1]}[o], n);"


def _un(api):
    return lambda s: f"AscendC::{api}({s.dst}[o], {s.srcs[0]}[o], n);"


def _sc(api):
    return lambda s: f"AscendC::{api}({s.dst}[o], {s.srcs[0]}[o], {_scalar(s)}, n);"


def _bitwise(api, lanes_as):
    """Bit ops on 16-bit lanes: every operand reinterpreted, the count scaled by the widths."""
    def emit(s):
        ratio = s.dtype.itemsize // 2
        views = ", ".join(f"{x}[o].ReinterpretCast<{lanes_as}>()" for x in (s.dst, *s.srcs))
        return f"AscendC::{api}({views}, n * {ratio});" if ratio != 1 else f"AscendC::{api}({views}, n);"
    return emit


# the simple call forms; the primitive's record (tile/prims.py) names its API and form
_FORMS = {"unary": _un, "binary": _bin, "scalar": _sc}

_SPECIAL = {
    # x * 1 copies every float exactly (x + 0 would turn -0.0 into +0.0); ints use Max(x, x),
    # which every chip has for int32
    "copy": lambda s: (f"AscendC::Muls({s.dst}[o], {s.srcs[0]}[o], {literal(1, s.dtype)}, n);" if s.dtype.is_float
                       else f"AscendC::Max({s.dst}[o], {s.srcs[0]}[o], {s.srcs[0]}[o], n);"),
    "dup": lambda s: f"AscendC::Duplicate({s.dst}[o], {_scalar(s)}, n);",
    "cast": lambda s: (f"AscendC::Cast({s.dst}[o], {s.srcs[0]}[o], AscendC::RoundMode::{s.round_mode}, n);"),
    "cmp": lambda s: _emit_cmp(s),
    "select": lambda s: _emit_select(s),
}


def emit_stmt(st: Stmt) -> str:
    """One tile statement as Ascend C (o = segment offset, n = count), by its primitive's form."""
    prim, emit = _EMIT.get(st.op, (None, None))
    if emit is None or prim is not PRIMS.get(st.op):   # first use, or the op registered again
        prim, emit = _EMIT[st.op] = (PRIMS.get(st.op), _emitter(st.op))
    return emit(st)


def _emitter(op: str):
    """The function printing a statement of `op` (made once per op: `_EMIT`)."""
    special = _SPECIAL.get(op)
    if special is not None:
        return special
    p = PRIMS[op]
    if p.form == "bitwise":
        return _bitwise(p.api, p.lanes_as)
    if p.form == "round":
        return lambda st: f"AscendC::Cast({st.dst}[o], {st.srcs[0]}[o], AscendC::RoundMode::{p.mode}, n);"
    return _FORMS[p.form](p.api)


_EMIT: dict = {}   # op -> (its PRIMS record when made, its printing function)


def _repeat_count(dtype: dt.DType) -> str:
    # Compare's count must cover whole 256-byte repeats; lanes past n hold pre-filled values
    k = 256 // dtype.itemsize
    return f"(n + {k - 1}) / {k} * {k}"


def _emit_cmp(s: Stmt) -> str:
    mask, ones = s.aux
    if s.scalar is not None:
        compare = (f"AscendC::Compares({mask}, {s.srcs[0]}[o], {_scalar(s)}, AscendC::CMPMODE::{s.cmp_mode}, "
                   f"{_repeat_count(s.dtype)});")
    else:
        other = f"{s.srcs[1]}[o]"
        compare = (f"AscendC::Compare({mask}, {s.srcs[0]}[o], {other}, AscendC::CMPMODE::{s.cmp_mode}, "
                   f"{_repeat_count(s.dtype)});")
    return (compare + " AscendC::PipeBarrier<PIPE_V>(); "
            f"AscendC::Select({s.dst}[o], {mask}, {ones}, static_cast<half>(0), "
            "AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, n);  // 1 where true, else 0")


def _emit_select(s: Stmt) -> str:
    if s.cmp_mode is not None:   # (a OP b) ? x : y: the Compare's mask feeds the Select
        a, b, x, y = s.srcs
        views = [f"{v}[o]" for v in (s.dst, x, y)]
        return (f"AscendC::Compare({s.aux[0]}, {a}[o], {b}[o], AscendC::CMPMODE::{s.cmp_mode}, "
                f"{_repeat_count(s.dtype)}); AscendC::PipeBarrier<PIPE_V>(); "
                f"AscendC::Select({views[0]}, {s.aux[0]}, {views[1]}, {views[2]}, "
                "AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE, n);")
    cond, a, b = s.srcs
    mask = s.aux[0]
    if len(s.aux) > 1:
        test = (f"AscendC::Compare({mask}, {cond}[o], {s.aux[1]}[o], AscendC::CMPMODE::NE, "
                f"{_repeat_count(dt.float16)});")
    else:
        test = (f"AscendC::Compares({mask}, {cond}[o], static_cast<half>(0), AscendC::CMPMODE::NE, "
                f"{_repeat_count(dt.float16)});")
    if s.dtype.is_float:
        views = [f"{x}[o]" for x in (s.dst, a, b)]
    else:   # Select moves bits: int32 lanes go through as float bit patterns, unchanged
        views = [f"{x}[o].ReinterpretCast<float>()" for x in (s.dst, a, b)]
    return (test + " AscendC::PipeBarrier<PIPE_V>(); "
            f"AscendC::Select({views[0]}, {mask}, {views[1]}, {views[2]}, "
            "AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE, n);")


# 910A (Atlas 训练系列) has Select mode 0 only (VSEL_CMPMASK_SPR, Select.md): src1 is a tensor
# and every repeat reuses the first 256/sizeof(T) bits of selMask.  So the printed code goes
# one repeat at a time: a level-0 Compare (its mask argument is ignored there: it compares a
# whole 256-byte repeat) writes that repeat's bits, then Select uses them.

def emit_cmp_mode0(s: Stmt) -> str:
    mask, ones = s.aux
    k = 256 // s.dtype.itemsize     # compare lanes per repeat; the half result takes as many
    return (f"AscendC::Duplicate({s.dst}[o], static_cast<half>(0), n); AscendC::PipeBarrier<PIPE_V>(); "
            f"for (uint32_t sel_c = 0; sel_c < n; sel_c += {k}) {{ "
            f"AscendC::Compare({mask}, {s.srcs[0]}[o + sel_c], {s.srcs[1]}[o + sel_c], "
            f"AscendC::CMPMODE::{s.cmp_mode}, {k}, 1, AscendC::BinaryRepeatParams{{}}); "
            "AscendC::PipeBarrier<PIPE_V>(); "
            f"AscendC::Select({s.dst}[o + sel_c], {mask}, {ones}[sel_c], {s.dst}[o + sel_c], "
            f"AscendC::SELMODE::VSEL_CMPMASK_SPR, n - sel_c < {k} ? n - sel_c : {k}); "
            "AscendC::PipeBarrier<PIPE_V>(); }  // 1 where true, else 0")


def emit_select_mode0(s: Stmt) -> str:
    k = 256 // s.dtype.itemsize
    if s.cmp_mode is not None:   # (a OP b) ? x : y, float values: one Compare and one Select per repeat
        a, b, x, y = s.srcs
        return (f"for (uint32_t sel_c = 0; sel_c < n; sel_c += {k}) {{ "
                f"AscendC::Compare({s.aux[0]}, {a}[o + sel_c], {b}[o + sel_c], AscendC::CMPMODE::{s.cmp_mode}, "
                f"{k}, 1, AscendC::BinaryRepeatParams{{}}); AscendC::PipeBarrier<PIPE_V>(); "
                f"AscendC::Select({s.dst}[o + sel_c], {s.aux[0]}, {x}[o + sel_c], {y}[o + sel_c], "
                f"AscendC::SELMODE::VSEL_CMPMASK_SPR, n - sel_c < {k} ? n - sel_c : {k}); "
                "AscendC::PipeBarrier<PIPE_V>(); }")
    cond, a, b = s.srcs
    mask, zeros = s.aux
    view = (lambda x: x) if s.dtype.is_float else (lambda x: f"{x}.ReinterpretCast<float>()")
    if s.dtype.itemsize == 2:     # half values: compare the half condition repeat by repeat
        pre, test_src, other = "", f"{cond}[o + sel_c]", f"{zeros}[o + sel_c]"
    else:                         # 4-byte values: widen the condition into dst, compare 64 at a time
        pre = (f"AscendC::Cast({view(f'{s.dst}[o]')}, {cond}[o], AscendC::RoundMode::CAST_NONE, (n + 63) / 64 * 64); "
               "AscendC::PipeBarrier<PIPE_V>(); ")
        test_src, other = view(f"{s.dst}[o + sel_c]"), f"{zeros}.ReinterpretCast<float>()"
    return (pre + f"for (uint32_t sel_c = 0; sel_c < n; sel_c += {k}) {{ "
            f"AscendC::Compare({mask}, {test_src}, {other}, AscendC::CMPMODE::NE, {k}, 1, "
            "AscendC::BinaryRepeatParams{}); AscendC::PipeBarrier<PIPE_V>(); "
            f"AscendC::Select({view(f'{s.dst}[o + sel_c]')}, {mask}, {view(f'{a}[o + sel_c]')}, "
            f"{view(f'{b}[o + sel_c]')}, AscendC::SELMODE::VSEL_CMPMASK_SPR, n - sel_c < {k} ? n - sel_c : {k}); "
            "AscendC::PipeBarrier<PIPE_V>(); }")


def rename_stmt(st: Stmt, names: dict, scalars: dict) -> Stmt:
    """`st` with its UB slots renamed (`names`) and a scalar variable operand replaced by the
    C++ expression holding it (`scalars`): how the row and cube printers reuse the tile
    stmts the vector scheduler gives each op on buffers of their own."""
    scalar = st.scalar
    if scalar is not None and scalar[0] == "var":
        scalar = ("var", scalars[scalar[1]])
    # a copy of the frozen record with four fields replaced: dataclasses.replace re-reads the
    # class's fields and runs __init__ on each of the walk's stmts (Stmt has no __post_init__)
    new = object.__new__(type(st))
    fields = new.__dict__
    fields.update(st.__dict__)
    fields["dst"] = names[st.dst]
    fields["srcs"] = tuple(map(names.__getitem__, st.srcs))
    fields["aux"] = tuple(map(names.__getitem__, st.aux))
    fields["scalar"] = scalar
    return new


def source_line(loc) -> str:
    """The user's source line at loc (FUSEDSL_DEBUG comments)."""
    return linecache.getline(loc.file, loc.line).strip()


def scalar_ctype(dtype: dt.DType) -> str:
    """The tiling-struct field of a runtime scalar: a float scalar travels as float, an
    integer one as int32_t (a float holds integers exactly only up to 2**24)."""
    return "float" if dtype.is_float else "int32_t"


def gm_scalar_load(gm: str, src: dt.DType, dst: dt.DType) -> str:
    """The C++ expression that reads a one-element tensor `gm` (dtype src) as dst.
    Half and bfloat16 go through float (their GetValue types do not convert to every
    compute type); integers convert directly, since float holds them exactly only up
    to 2**24."""
    if src.is_float and src.itemsize < 4:
        return f"static_cast<{dst.ascendc}>(static_cast<float>({gm}.GetValue(0)))"
    return f"static_cast<{dst.ascendc}>({gm}.GetValue(0))"


def pack_scalar(dtype: dt.DType, value) -> bytes:
    """A runtime scalar's bytes in the tiling struct (scalar_ctype's layout)."""
    return struct.pack("<f", float(value)) if dtype.is_float else struct.pack("<i", int(value))
