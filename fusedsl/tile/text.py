"""Deterministic text form of a tile program (FUSEDSL_DUMP_IR dumps, `plan.tile_ir`, tests).

One section per stage: the buffers (UB slot, dtype, Ascend C object, buffer count), CopyIn
(inputs, with their kernel parameter index, and how each reaches UB), the view kernels'
loads and boxes (the GM addressing of slices / concatenations / takes), the hoisted part
(once per core), Compute (per tile), CopyOut, and the tiling when sizes are known.  Stmts read
`dst = op(srcs) scalar : dtype`.

`tile/parse.py` `parse_tile(text)` reads the program back (the tiling line, a runtime figure, is
returned apart): `print_tile(parse_tile(t).sched) == t` for every program the lowering makes, so
a test or a bug report can start from the text, and the verifier runs on a parsed program.
"""
from __future__ import annotations

from .ir import Stmt, Tiling, VectorSchedule

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


__all__ = ["format_stmt", "print_tile"]
