"""Ascend C for a matmul whose epilogue reduces over the rows of C (softmax, layer_norm, rms_norm
of x @ w + b): the cube printer's kernel with whole rows of C per tile (lower/cube.py with
`whole_rows`: baseN covers N, the cores split M only) and a row kernel's per-row body.

Each row of a C tile goes through the epilogue the way a row kernel's row does: the body is the
row kind's own lowering (lower/row_tile.row_epilogue_body: elementwise ops are their vector tile
stmts, a reduction folds the row into 64 float32 lanes and finishes with WholeReduce /
ReduceRepeat, its result is a typed scalar of the ops after it), printed node by node by the
printer of the loop-level tile IR (printer_kernel.NodePrinting). The epilogue is scheduled as a
row kernel whose first parameter is the matmul's value (lower.cube._row_epilogue); here its
parameters are bound to the cube kernel's UB rows: the C row (rounded to the matmul's dtype),
residual tiles, [N] columns, [M, 1] values per row.
"""
from __future__ import annotations

import re

from .. import dtypes as dt
from ..lower.row import FOLD_LANES, allocate_row_values, temp_pool
from ..lower.row_tile import row_epilogue_body
from ..tile.kernel import Queue, Ref
from .printer_cube import CubePrinter, _ld
from .printer_kernel import NodePrinting


def _as_ref(text: str) -> Ref:
    """A UB row the cube printer names in C++ (`in_x[r * 72]`, `col_b`) as a tile-IR reference
    (its offset kept as C++ text, printed as it is)."""
    m = re.fullmatch(r"(\w+)(?:\[(.+)\])?", text)
    return Ref(m.group(1), f"({m.group(2)})" if m.group(2) else 0)


class CubeRowPrinter(NodePrinting, CubePrinter):
    def __init__(self, sched, target, name: str, debug: bool | None = None):
        self.row = sched.row_epilogue
        super().__init__(sched, target, name, debug)
        self.slack = self.row.slack
        self.float_reduce = "float" in target.api_dtypes.get("WholeReduceSum", frozenset())

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

    def _rs_dtypes(self) -> dict:
        """dtype -> 32-byte slots: at most one per value of that dtype the epilogue holds."""
        fn = self.row.fn
        count: dict = {}
        for v in [p.value for p in fn.params] + [op.result for op in fn.ops]:
            count[v.dtype] = count.get(v.dtype, 0) + 1
        return dict(sorted(count.items(), key=lambda x: x[0].name))

    def _extra_members(self) -> list[str]:
        L = ["    AscendC::TBuf<AscendC::TPosition::VECCALC> b_lanes;  // the fold's 64 float32 lanes",
             "    AscendC::TBuf<AscendC::TPosition::VECCALC> b_red;    // a reduction's result"]
        return L + [f"    AscendC::TBuf<AscendC::TPosition::VECCALC> b_rs_{d.name};   // per-row values, 32 B each"
                    for d in self._rs_dtypes()]

    def _extra_init(self) -> list[str]:
        L = [f"        pipe->InitBuffer(b_lanes, {FOLD_LANES * 4});",
             "        pipe->InitBuffer(b_red, 32);"]
        return L + [f"        pipe->InitBuffer(b_rs_{d.name}, {32 * n});" for d, n in self._rs_dtypes().items()]

    def _epilogue_body(self, slot: dict, scal: dict) -> list[str]:
        row, s = self.row, self.s
        sub_params = [p.value for p in row.fn.params]
        mm_param = sub_params[0]
        slots, scalars = {id(mm_param): _as_ref(slot[id(s.mm.result)])}, {}
        for v in sub_params[1:]:   # the kernel's own parameters, bound where the cube printer put them
            if id(v) in slot:
                slots[id(v)] = _as_ref(slot[id(v)])
            elif id(v) in scal:
                scalars[id(v)] = scal[id(v)]
        # an output row is padded to 32 bytes of its own dtype (as CopyOut moves it), a temporary
        # holds baseN (>= N) elements
        nodes, rs = row_epilogue_body(row, self._assign, slots, scalars, "curN", "t.baseN",
                                      lambda i, d: Ref(f"out_y{i}", f"(r * {_ld('curN', d)})"))
        tensors = {nm: d for d, nm in self._rows}
        tensors.update({"lanes": dt.float32, "red": dt.float32})
        tensors.update({f"out_y{i}": v.dtype for i, v in enumerate(s.fn.results)})
        tensors.update({f"rs_{d.name}": d for d in rs})
        for r in list(slots.values()):   # the cube kernel's rows: c, mmv, in_*, col_* (their dtypes)
            tensors.setdefault(r.tensor, self._tensor_dtype(r.tensor))
        self.queue = {nm: Queue(nm, "VECCALC", 1, d, 0) for nm, d in tensors.items()}
        self.scopes = [{nm: nm for nm in tensors}]
        body = [f"AscendC::LocalTensor<{d.ascendc}> {nm} = b_{nm}.Get<{d.ascendc}>();" for d, nm in self._rows]
        body.append("AscendC::LocalTensor<float> lanes = b_lanes.Get<float>();")
        if self.float_reduce:
            body.append("AscendC::LocalTensor<float> red = b_red.Get<float>();")
        body += [f"AscendC::LocalTensor<{d.ascendc}> rs_{d.name} = b_rs_{d.name}.Get<{d.ascendc}>();" for d in rs]
        return body + [x for n in nodes for x in self._node(n, 0)]

    def _tensor_dtype(self, name: str) -> dt.DType:
        """The element type of one of the cube kernel's own UB rows."""
        if name == "c":
            return getattr(self.s, "c_dtype", dt.float32)
        if name == "mmv":
            return self.s.mm.result.dtype
        nm = name.split("_", 1)[1] if name.startswith(("in_", "col_")) else None
        p = next((p for p in self.s.params if self.cn[p.index] == nm), None)
        if p is None:
            raise KeyError(f"the epilogue reads {name}, which the cube printer does not hold")
        return p.dtype
