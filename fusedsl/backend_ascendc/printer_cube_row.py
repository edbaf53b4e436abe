"""Ascend C for a matmul whose epilogue reduces over the rows of C (softmax, layer_norm, rms_norm
of x @ w + b): the cube printer's kernel with whole rows of C per tile (lower/cube.py with
`whole_rows`: baseN covers N, the cores split M only) and the row printer's per-row body.

Each row of a C tile goes through the epilogue the way a row kernel's row does (printer_row.py):
elementwise ops are their vector tile stmts, a reduction folds the row into 64 float32 lanes and
finishes with WholeReduce/ReduceRepeat, and its result is a scalar of the ops after it. The
epilogue is scheduled as a row kernel whose first parameter is the matmul's value
(lower.cube._row_epilogue); here its parameters are bound to the cube kernel's UB rows: the
C row (rounded to the matmul's dtype), residual tiles, [N] columns, [M, 1] values per row.
"""
from __future__ import annotations

from .. import dtypes as dt
from ..lower.row import FOLD_LANES, allocate_row_values, rs_slots, temp_pool
from .printer_cube import CubePrinter, _ld
from .printer_row import RowPrinter


class _EpilogueRows(RowPrinter):
    """The row printer with its parameters bound to the cube kernel's buffers."""

    def __init__(self, row, target, name, slots: dict, scalars: dict):
        super().__init__(row, target, name)
        self.bound_slots, self.bound_scalars = slots, scalars

    def _param_setup(self, L: list[str]) -> None:
        self._slot.update(self.bound_slots)
        self._scal.update(self.bound_scalars)
        # a row of one element: the cube kernel holds an [N] = [1] input as a scalar, the row ops
        # read it from a UB slot
        for p in self.s.params:
            v = self.s.fn.params[p.index].value
            if p.kind in ("full", "general", "lastonly") and id(v) not in self._slot and id(v) in self._scal:
                L.append("VectorToScalar();   // the last row's ops have read the slot")
                self._slot_of(v, L)


class CubeRowPrinter(CubePrinter):
    def __init__(self, sched, target, name: str, debug: bool | None = None):
        self.row = sched.row_epilogue
        super().__init__(sched, target, name, debug)
        self.slack = self.row.slack

    # ---- hooks of the cube printer ---------------------------------------------------------
    def steps_list(self):
        return list(self.row.steps.values())   # row_plan.OpSteps: `.sched` like the cube printer's

    def _row_buffers(self) -> list[tuple]:
        row = self.row
        self._assign, counts = allocate_row_values(row.fn, row.kinds)
        self._pool = temp_pool(row.steps.values())
        rows = [(d, f"rv_{d.name}_{i}") for d, n in sorted(counts.items(), key=lambda x: x[0].name) for i in range(n)]
        rows += [(d, f"tmp_{d.name}_{i}") for d, n in sorted(self._pool.items(), key=lambda x: x[0].name)
                 for i in range(n)]
        if row.needs_wide:
            rows.append((dt.float32, "wide"))   # a 16-bit row as float32 for its reductions
        self._rows = list(rows)   # kernel() appends its own buffers to the list it gets
        return rows

    def _extra_members(self) -> list[str]:
        return ["    AscendC::TBuf<AscendC::TPosition::VECCALC> b_lanes;  // the fold's 64 float32 lanes",
                "    AscendC::TBuf<AscendC::TPosition::VECCALC> b_red;    // a reduction's result",
                "    AscendC::TBuf<AscendC::TPosition::VECCALC> b_rs;     // per-row values, 32 B each"]

    def _extra_init(self) -> list[str]:
        return [f"        pipe->InitBuffer(b_lanes, {FOLD_LANES * 4});",
                "        pipe->InitBuffer(b_red, 32);",
                f"        pipe->InitBuffer(b_rs, {32 * rs_slots(self.row.fn)});"]

    def _extra_methods(self) -> list[str]:
        rp = RowPrinter(self.row, self.t, self.name)
        return rp._sync() + rp._reduce_fn()

    def _epilogue_body(self, slot: dict, scal: dict) -> list[str]:
        row, s = self.row, self.s
        sub_params = [p.value for p in row.fn.params]
        mm_param = sub_params[0]
        bound_slots, bound_scalars = {id(mm_param): slot[id(s.mm.result)]}, {}
        for v in sub_params[1:]:   # the kernel's own parameters, bound where the cube printer put them
            if id(v) in slot:
                bound_slots[id(v)] = slot[id(v)]
            elif id(v) in scal:
                bound_scalars[id(v)] = scal[id(v)]
        rp = _EpilogueRows(row, self.t, self.name, bound_slots, bound_scalars)
        rp._assign, rp._pool = self._assign, self._pool
        body = [f"AscendC::LocalTensor<{d.ascendc}> {nm} = b_{nm}.Get<{d.ascendc}>();" for d, nm in self._rows]
        text = "\n".join(rp._row_body())
        # the row printer addresses a tile with its tiling's Cpad: here an output row is padded to
        # 32 bytes of its own dtype (as CopyOut moves it), a temporary holds baseN (>= N) elements
        for i, v in enumerate(s.fn.results):
            text = text.replace(f"out_y{i}[r * tiling.Cpad]", f"out_y{i}[r * {_ld('curN', v.dtype)}]")
        text = text.replace("tiling.Cpad", "tiling.baseN").replace("tiling.C", "curN")
        return body + text.splitlines()
