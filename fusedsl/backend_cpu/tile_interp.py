"""A numpy interpreter of a VectorSchedule: the executable spec of the tile program.

It follows the Ascend C execution model literally: `block_dim` blocks, each with its own
UB slots (numpy arrays of `tile_elems` elements, filled with garbage so that a read of
an unwritten slot shows up as a wrong result), a per-block init (scalar inputs,
replicated row inputs, hoisted stmts), then per tile CopyIn -> Compute -> CopyOut.
Speed does not matter here; obviousness does.  The LLVM backend must agree with it.

Arithmetic rules shared with the LLVM backend (and the reference, see fusedsl.dtypes):
- a float16 stmt computes in float32 and rounds to half once; its immediate scalar is
  first converted to half (the Ascend C API takes a `half` scalar);
- float -> int casts truncate (or round per the cast's mode) and wrap, like the
  reference (the NPU leaves out-of-range values undefined, so any result is allowed);
  int8/uint8 are computed in float16 by the schedule: the final wrap agrees with
  numpy's per-op wrapping for + - * while values stay exact in half (|x| <= 2048),
  and for max/min/abs only while no intermediate leaves the int8/uint8 range;
- max/min propagate NaN like numpy.
"""
from __future__ import annotations
from ..lower.vector import VIEW_BOX_HEAD, VIEW_LOAD_WORDS

import numpy as np

from .. import dtypes as dt
from ..lower.vector import Stmt, Tiling, VectorSchedule, compute_dtype
from ..tile.prims import PRIMS


def rows_mode(sched: VectorSchedule, tiling: Tiling) -> bool:
    """Whether a tile is whole rows (True) or a chunk of one row (False)."""
    decided = getattr(tiling, "rows_mode", None)   # compute_tiling records its choice
    if decided is not None:
        return bool(decided)
    has_inv = any(s.role == "inv" for s in sched.slots.values())
    return tiling.tile_cols == tiling.C and tiling.col_tiles == 1 and (tiling.R > 1 or has_inv)


def run_schedule(sched: VectorSchedule, inputs, outputs, tiling: Tiling) -> None:
    """Execute the tile program: `inputs` in kernel-parameter order (runtime scalars as
    numbers), `outputs` preallocated C-contiguous arrays that receive the results."""
    if sched.views is not None:
        _run_views(sched, inputs, outputs, tiling)
        return
    gm_in = {inp.index: _gm(inputs[inp.index], inp) for inp in sched.inputs}
    gm_out = [o.reshape(-1) for o in outputs]
    for block in range(tiling.block_dim):
        _run_block(sched, tiling, block, gm_in, gm_out)


def _gm(value, inp):
    if inp.kind == "runtime_scalar":
        return value
    return np.ascontiguousarray(value).reshape(-1)


class _Block:
    """The UB of one core: slots and scalar variables."""

    def __init__(self, sched: VectorSchedule, tiling: Tiling):
        self.rows = rows_mode(sched, tiling)
        self.tiling = tiling
        self.roles = {name: s.role for name, s in sched.slots.items()}
        size = max(tiling.tile_elems, tiling.tile_rows * tiling.Cpad if self.rows else tiling.tile_cols)
        # An "inv" slot holds whole rows, also in the chunk-mode fallback where a
        # row is longer than a tile.
        self.slots = {name: _garbage(max(size, tiling.Cpad) if s.role == "inv" else size, s.dtype)
                      for name, s in sched.slots.items()}
        self.vars: dict[str, np.generic] = {}

    def view(self, name: str, nrows: int, ncols: int, col0: int = 0) -> np.ndarray:
        """The tile's elements of a slot: (nrows, C) at row stride Cpad, or one chunk."""
        flat = self.slots[name]
        if self.rows:
            t = self.tiling
            return flat[: t.tile_rows * t.Cpad].reshape(t.tile_rows, t.Cpad)[:nrows, :ncols]
        if self.roles[name] == "inv":   # a row read in chunk mode: the chunk's columns
            return flat[col0:col0 + ncols]
        return flat[:ncols]


def _garbage(n: int, dtype: dt.DType) -> np.ndarray:
    if dtype.is_float:
        return np.full(n, np.nan, dtype.np)
    return np.full(n, 0x5A, dtype.np)   # an unlikely value, reproducible


def _run_block(sched, tiling, block, gm_in, gm_out) -> None:
    ub = _Block(sched, tiling)
    t = tiling
    for name, value in getattr(sched, "prefill", {}).items():   # constants, Compare's slack
        ub.slots[name][...] = np.asarray(value).astype(ub.slots[name].dtype)
    for inp in sched.inputs:
        if inp.kind == "runtime_scalar":
            # the argument takes its declared dtype first (as the reference binds it)
            value = np.asarray(gm_in[inp.index]).astype(inp.gm_dtype.np)
            ub.vars[inp.var] = _convert(value.reshape(1), inp.gm_dtype, compute_dtype(inp.gm_dtype))[0]
        elif inp.kind == "scalar":
            ub.vars[inp.var] = _convert(gm_in[inp.index][:1], inp.gm_dtype, compute_dtype(inp.gm_dtype))[0]
        elif inp.kind == "row":
            ub.view(inp.slot, t.tile_rows if ub.rows else 1, t.C)[...] = gm_in[inp.index][: t.C]
    for stmt in sched.hoisted:
        _exec(stmt, ub, t.tile_rows if ub.rows else 1, t.C, 0)
    first = block * t.tiles_per_core
    last = min(t.total_tiles, (block + 1) * t.tiles_per_core)
    for tile in range(first, last):
        if ub.rows:
            r0 = tile * t.tile_rows
            nrows = min(t.R, r0 + t.tile_rows) - r0
            _tile(sched, ub, gm_in, gm_out, list(range(r0, r0 + nrows)), 0, t.C)
        else:
            row = tile // t.col_tiles
            col0 = (tile % t.col_tiles) * t.tile_cols
            _tile(sched, ub, gm_in, gm_out, [row], col0, min(t.tile_cols, t.C - col0))


def _outer_offset(t: Tiling, strides, g: int) -> int:
    """Element offset of row g for an input with these strides (row-major over dims[:-1])."""
    off = 0
    for j in range(len(t.dims) - 2, -1, -1):
        g, idx = divmod(g, t.dims[j])
        off += idx * strides[j]
    return off


def _tile(sched, ub: _Block, gm_in, gm_out, rows, col0, ncols) -> None:
    t = ub.tiling
    nrows = len(rows)
    # CopyIn
    for pos, inp in enumerate(sched.inputs):
        if inp.kind not in ("full", "general"):
            continue
        dst = ub.view(inp.slot, nrows, ncols)
        src = gm_in[inp.index]
        for i, g in enumerate(rows):
            target = dst[i] if ub.rows else dst
            if inp.kind == "full":
                base = g * t.C + col0
                target[...] = src[base: base + ncols]
            elif inp.bits[-1]:
                base = _outer_offset(t, t.strides[pos], g) + col0
                target[...] = src[base: base + ncols]
            else:
                target[...] = src[_outer_offset(t, t.strides[pos], g)]
    # Compute
    for stmt in sched.body:
        _exec(stmt, ub, nrows, ncols, col0)
    # CopyOut
    for out in sched.outputs:
        src = ub.view(out.slot, nrows, ncols)
        for i, g in enumerate(rows):
            base = g * t.C + col0
            gm_out[out.index][base: base + ncols] = src[i] if ub.rows else src


def _run_views(sched: VectorSchedule, inputs, outputs, t: Tiling) -> None:
    """A view kernel (fusedsl/views.py): per tile, find its box in the tiling's box table,
    read each load's rows from the parameter the box names (a gather reads table row
    idx[...] instead; an index outside [-V, V) reads nothing and gives a zero row, the
    device kernel's guard), compute, and write the rows at the box's output addresses."""
    plan = sched.views
    params = {inp.index: _gm(inputs[inp.index], inp) for inp in sched.inputs if inp.kind in ("gm", "scalar")}
    gm_out = [o.reshape(-1) for o in outputs]
    loads = [inp for inp in sched.inputs if inp.kind in ("view", "gather")]
    firsts = [w[0] for w in t.boxes]
    for block in range(t.block_dim):
        ub = _Block(sched, t)
        for name, value in sched.prefill.items():
            ub.slots[name][...] = np.asarray(value).astype(ub.slots[name].dtype)
        for inp in sched.inputs:
            if inp.kind == "runtime_scalar":
                value = np.asarray(inputs[inp.index]).astype(inp.gm_dtype.np)
                ub.vars[inp.var] = _convert(value.reshape(1), inp.gm_dtype, compute_dtype(inp.gm_dtype))[0]
            elif inp.kind == "scalar":
                ub.vars[inp.var] = _convert(params[inp.index][:1], inp.gm_dtype, compute_dtype(inp.gm_dtype))[0]
        for tile in range(block * t.tiles_per_core, min(t.total_tiles, (block + 1) * t.tiles_per_core)):
            b = max(i for i, f in enumerate(firsts) if f <= tile)
            first, rows, cols, tr, out_off, out_rs = t.boxes[b][:VIEW_BOX_HEAD]
            r0 = (tile - first) * tr
            nrows = min(tr, rows - r0)
            for j, inp in enumerate(loads):
                w = VIEW_BOX_HEAD + j * VIEW_LOAD_WORDS
                sel, off, rs, cs, ioff, irs = t.boxes[b][w:w + VIEW_LOAD_WORDS]
                load = plan.loads[j]
                src = params[load.sources[sel]]
                dst = ub.view(inp.slot, nrows, cols)
                for r in range(nrows):
                    if load.gather is not None:
                        idx_param, V, D = load.gather
                        k = int(params[idx_param][ioff + (r0 + r) * irs])
                        k = k + V if k < 0 else k
                        if not 0 <= k < V:
                            dst[r] = 0
                            continue
                        base = k * D + off
                    else:
                        base = off + (r0 + r) * rs
                    dst[r] = src[base:base + cols] if cs else src[base]
            for stmt in sched.body:
                _exec(stmt, ub, nrows, cols, 0)
            for out in sched.outputs:
                res = ub.view(out.slot, nrows, cols)
                for r in range(nrows):
                    base = out_off + (r0 + r) * out_rs
                    gm_out[out.index][base:base + cols] = res[r]


def _exec(stmt: Stmt, ub: _Block, nrows, ncols, col0) -> None:
    srcs = [ub.view(s, nrows, ncols, col0) for s in stmt.srcs]
    scalar = None
    if stmt.scalar is not None and stmt.op != "cast":
        kind, value = stmt.scalar
        raw = ub.vars[value] if kind == "var" else value
        scalar = np.asarray(raw).astype(stmt.dtype.np)
    result = apply_stmt(stmt, srcs, scalar, shape=(nrows, ncols) if ub.rows else (ncols,))
    ub.view(stmt.dst, nrows, ncols, col0)[...] = result


# ---- stmt semantics -------------------------------------------------------------------------
def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32) if x.dtype in (np.float16, dt.bfloat16.np) else x


def apply_stmt(stmt: Stmt, srcs, scalar, shape) -> np.ndarray:
    """dst of one stmt from its source arrays (see module doc for the rounding rule)."""
    if stmt.op == "cast":
        return _convert(srcs[0], stmt.src_dtype, stmt.dtype, stmt.round_mode)
    if stmt.op == "dup":
        return np.broadcast_to(scalar, shape)
    if stmt.op == "cmp":      # operands in stmt.dtype; the result is a half 0/1
        other = srcs[1] if len(srcs) > 1 else scalar
        with np.errstate(all="ignore"):
            return _COMPARE[stmt.cmp_mode](srcs[0], other).astype(np.float16)
    if stmt.op == "select" and stmt.cmp_mode is not None:   # srcs: a, b compared, then the two values
        with np.errstate(all="ignore"):
            return np.where(_COMPARE[stmt.cmp_mode](srcs[0], srcs[1]), srcs[2], srcs[3])
    if stmt.op == "select":   # srcs: the half 0/1 condition, then the two values
        return np.where(srcs[0] != 0, srcs[1], srcs[2])
    xs = [_wide(s) for s in srcs]
    s = None if scalar is None else _wide(np.asarray(scalar))
    with np.errstate(all="ignore"):
        result = PRIMS[stmt.op].ref(xs, s)   # the primitive's record (tile/prims.py)
        return np.asarray(result).astype(stmt.dtype.np)


_COMPARE = {"LT": np.less, "LE": np.less_equal, "GT": np.greater, "GE": np.greater_equal,
            "EQ": np.equal, "NE": np.not_equal}

_INT_ROUNDING = {
    "CAST_TRUNC": np.trunc,
    "CAST_RINT": np.rint,
    "CAST_NONE": np.rint,
    "CAST_FLOOR": np.floor,
    "CAST_CEIL": np.ceil,
    "CAST_ROUND": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),   # half away from zero
}


def _convert(x: np.ndarray, src: dt.DType, dst: dt.DType, mode: str | None = None) -> np.ndarray:
    """Cast semantics: to int truncates (or rounds per mode) and wraps; to float is RNE;
    to bool is numpy's (nonzero is True)."""
    with np.errstate(all="ignore"):
        if dst == dt.bool_:
            return x != 0
        if dst.is_int and src.is_float:
            rounded = _INT_ROUNDING[mode or "CAST_TRUNC"](x.astype(np.float32))
            return rounded.astype(np.int64).astype(dst.np)
        if dst.is_int:
            return x.astype(np.int64).astype(dst.np)
        if mode not in (None, "CAST_NONE", "CAST_RINT", "CAST_TRUNC") and not (
                mode == "CAST_ODD" and dst == dt.float16):
            raise NotImplementedError(f"float cast {src}->{dst} with {mode}")
        if src == dt.float16 and dst == dt.bfloat16 or src == dt.bfloat16 and dst == dt.float16:
            x = x.astype(np.float32)    # exact; then one rounding
        nearest = x.astype(dst.np)
        if mode not in ("CAST_TRUNC", "CAST_ODD") or dst.itemsize >= src.itemsize:
            return nearest
        # toward zero: nearest is at most one ulp off, step back where it went away from zero
        # (sign-magnitude bits: one less is one ulp closer to zero; inf becomes the largest finite)
        away = np.abs(nearest.astype(np.float64)) > np.abs(x.astype(np.float64))
        bits = nearest.view(np.uint16).copy()
        bits[away] -= 1
        if mode == "CAST_ODD":
            # round to odd: the truncation with its last bit set when it is inexact
            inexact = bits.view(dst.np).astype(np.float64) != x.astype(np.float64)
            bits[inexact & ~np.isnan(x)] |= 1
        return bits.view(dst.np)
