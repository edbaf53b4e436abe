"""Ascend C for a column kernel: reductions over axes before the last with their elementwise
producers and consumers (lower.column.ColumnSchedule, the [A, K, B] view).

A tile is `bn` consecutive outputs out[a, b0 : b0+bn].  Per tile: the col inputs' rows are
read once; per phase of the plan, its col ops run on [bn] rows, then (when the phase has
reductions) its float32 accumulators are set to their identities and k walks 0..K-1 in
groups of `kt` rows, each group one strided CopyIn per elem input (rows B elements apart in
GM, bn apart in UB); per row the phase's elem ops and reduction folds run in program order
(Add/Max/Min; 16-bit rows cast to float32 first); mean divides by K and a result is rounded
once to its dtype.  When one group holds all of K (`resident`) every walk reads the inputs
already in UB.  CopyOut writes each output row.  Cores take contiguous tile ranges and never
split K: no partial results exist.

Each elementwise op is the tile stmts the vector scheduler gives it (row_plan.op_schedule),
renamed onto this kernel's row buffers (emit.rename_stmt), as the row printer does.
"""
from __future__ import annotations


from .. import dtypes as dt
from ..lower.vector import compute_dtype
from ..lower.column import ColumnSchedule, column_values
from . import cnames
from .emit import camel, gm_scalar_load, literal, name_temporaries, rename_stmt, scalar_ctype
from .frame import KernelFrame
from .printer_row import _BINARY, _IDENTITY   # identities and fold ops of the four reductions


class ColumnPrinter(KernelFrame):
    def __init__(self, sched: ColumnSchedule, target, name: str, debug: bool | None = None):
        super().__init__(sched, target, name, debug)
        self.symbols = []
        self.cn = {p.index: cnames.param(p.name) for p in sched.params}
        self.elem = [p for p in sched.params if p.kind == "elem"]
        self.cols = [p for p in sched.params if p.kind == "col"]
        self.reds = [op for ph in sched.plan.phases for op in ph.reductions]
        self.wide = any(op.operands[0].dtype != dt.float32 or op.name == "mean" for op in self.reds)
        self.colbuf = {id(v): f"col{j}" for j, v in enumerate(column_values(sched))}
        self.form = {p.index: p for p in sched.plan.params}

    # ---- the kind's parts of the frame (frame.KernelFrame) ----------------------------------
    def _gm_args(self) -> list[str]:
        return [self.cn[p.index] for p in self.s.params if p.kind != "runtime_scalar"] + \
            [f"y{i}" for i in range(len(self.s.fn.results))]

    def tiling_header(self) -> str:
        fields = ["A", "K", "B", "bn", "kt", "colTiles", "totalTiles", "tilesPerCore", "blockDim"]
        scal = [f"    {scalar_ctype(p.dtype)} s_{self.cn[p.index]};   // runtime scalar"
                for p in self.s.params if p.kind == "runtime_scalar"]
        return "\n".join([f"// Tiling data of {self.name} (a column kernel over an [A, K, B] view).",
                          f"struct {self.tiling} {{"] + [f"    uint32_t {f};" for f in fields] + scal + ["};"]) + "\n"

    def host_tiling(self) -> str:
        s, t = self.s, self.t
        items = sorted({v.dtype.itemsize for v in s.fn.results})
        line = []
        if not t.has_datacopypad:   # SetValue tails: no two cores may share a 64-byte GM line
            cond = " || ".join(f"(s / colTiles * B + s % colTiles * bn) * {i} % 64 != 0" for i in items)
            line = ["    for (bool shared = true; shared && perCore < total;) {",
                    "        shared = false;",
                    "        for (uint64_t s = perCore; s < total && !shared; s += perCore)",
                    f"            shared = {cond};",
                    "        if (shared) ++perCore;",
                    "    }"]
        return "\n".join([
            f"// Host tiling for {self.name} on {t.name}: sizes are fixed at compile time.",
            f"inline bool {camel(self.name)}Tiling(const int64_t* sizes, uint32_t vectorCores, uint32_t ubBudget,",
            f"                          {self.tiling}* t)",
            "{",
            "    (void)sizes; (void)ubBudget;",
            f"    const uint64_t A = {s.A}, K = {s.K}, B = {s.B}, bn = {s.bn}, kt = {s.kt};",
            "    if (A * K * B >= (uint64_t(1) << 32)) return false;  // 32-bit offsets",
            "    const uint64_t colTiles = (B + bn - 1) / bn, total = A * colTiles;",
            "    *t = {};",
            "    t->A = uint32_t(A); t->K = uint32_t(K); t->B = uint32_t(B); t->bn = uint32_t(bn); t->kt = uint32_t(kt);",
            "    t->colTiles = uint32_t(colTiles);",
            "    if (total == 0 || K == 0) return true;",
            f"    uint64_t want = (A * K * B * {s.elem_bytes} + {16383}) / 16384;",
            "    want = std::max<uint64_t>(1, std::min<uint64_t>({uint64_t(vectorCores), want, total}));",
            "    uint64_t perCore = (total + want - 1) / want;",
            *line,
            "    t->totalTiles = uint32_t(total); t->tilesPerCore = uint32_t(perCore);",
            "    t->blockDim = uint32_t((total + perCore - 1) / perCore);",
            "    return true;",
            "}"]) + "\n"

    def heading(self) -> list[str]:
        return [f"// ---- {self.name}: a column kernel from {cnames.comment(self.s.fn.loc)} ----"]

    # ---- the kernel -------------------------------------------------------------------------
    def kernel(self) -> str:
        s = self.s
        gm = self._gm_args()
        L = [f"// {self.name}: {cnames.comment(s.plan_note)}", *self.class_open(["GM_ADDR " + a for a in gm])]
        for p in s.params:
            if p.kind != "runtime_scalar":
                L.append(f"        gm_{self.cn[p.index]}.SetGlobalBuffer((__gm__ {p.dtype.ascendc}*){self.cn[p.index]});")
        for i, v in enumerate(s.fn.results):
            L.append(f"        gm_y{i}.SetGlobalBuffer((__gm__ {v.dtype.ascendc}*)y{i});")
        row = f"(t.bn + {s.slack})"
        for p in self.elem:
            L.append(f"        pipe.InitBuffer(q_{self.cn[p.index]}, {s.depth}, t.kt * t.bn * sizeof({p.dtype.ascendc}));")
        for p in self.cols:
            L.append(f"        pipe.InitBuffer(q_{self.cn[p.index]}, 1, t.bn * sizeof({p.dtype.ascendc}));")
        for i, v in enumerate(s.fn.results):
            L.append(f"        pipe.InitBuffer(q_y{i}, 2, t.bn * sizeof({v.dtype.ascendc}));")
        for r in range(len(self.reds)):
            L.append(f"        pipe.InitBuffer(b_acc{r}, t.bn * sizeof(float));")
        if self.wide:
            L.append("        pipe.InitBuffer(b_wide, t.bn * sizeof(float));")
        for v in column_values(s):
            L.append(f"        pipe.InitBuffer(b_{self.colbuf[id(v)]}, {row} * sizeof({v.dtype.ascendc}));")
        for kind, counts in (("e", s.row_counts), ("t", s.temps)):
            for d, n in counts.items():
                L += [f"        pipe.InitBuffer(b_{d.name}_{kind}{i}, {row} * sizeof({d.ascendc}));" for i in range(n)]
        for p in s.params:
            nm = self.cn[p.index]
            if p.kind == "runtime_scalar":
                L.append(f"        v_{nm} = static_cast<{compute_dtype(p.dtype).ascendc}>(t.s_{nm});")
            elif p.kind == "scalar":
                L.append(f"        v_{nm} = {gm_scalar_load('gm_' + nm, p.dtype, compute_dtype(p.dtype))};")
        L += ["    }", "", *self._process(), "", "private:", *self._members(), "};", ""]
        L.append(self.entry(gm + ["t"]))
        return "\n".join(L)

    def _members(self) -> list[str]:
        s = self.s
        L = ["    AscendC::TPipe pipe;"]
        L += [f"    AscendC::TQue<AscendC::QuePosition::VECIN, 1> q_{self.cn[p.index]};" for p in self.elem + self.cols]
        L += [f"    AscendC::TQue<AscendC::QuePosition::VECOUT, 1> q_y{i};" for i in range(len(s.fn.results))]
        bufs = [f"acc{r}" for r in range(len(self.reds))] + (["wide"] if self.wide else [])
        bufs += [self.colbuf[id(v)] for v in column_values(s)]
        bufs += [f"{d.name}_e{i}" for d, n in s.row_counts.items() for i in range(n)]
        bufs += [f"{d.name}_t{i}" for d, n in s.temps.items() for i in range(n)]
        L += [f"    AscendC::TBuf<AscendC::TPosition::VECCALC> b_{b};" for b in bufs]
        for p in s.params:
            if p.kind != "runtime_scalar":
                L.append(f"    AscendC::GlobalTensor<{p.dtype.ascendc}> gm_{self.cn[p.index]};")
            if p.kind in ("runtime_scalar", "scalar"):
                L.append(f"    {compute_dtype(p.dtype).ascendc} v_{self.cn[p.index]};")
        L += [f"    AscendC::GlobalTensor<{v.dtype.ascendc}> gm_y{i};" for i, v in enumerate(s.fn.results)]
        L += [f"    {self.tiling} tiling;"]
        return L

    def _process(self) -> list[str]:
        s, plan = self.s, self.s.plan
        L = ["    __aicore__ inline void Process()",
             "    {",
             *self.core_tiles()]
        for r in range(len(self.reds)):
            L.append(f"        AscendC::LocalTensor<float> acc{r} = b_acc{r}.Get<float>();")
        if self.wide:
            L.append("        AscendC::LocalTensor<float> wide = b_wide.Get<float>();")
        for v in column_values(s):
            L.append(f"        AscendC::LocalTensor<{v.dtype.ascendc}> {self.colbuf[id(v)]} = "
                     f"b_{self.colbuf[id(v)]}.Get<{v.dtype.ascendc}>();")
        for d, n in s.row_counts.items():
            L += [f"        AscendC::LocalTensor<{d.ascendc}> {d.name}_e{i} = b_{d.name}_e{i}.Get<{d.ascendc}>();"
                  for i in range(n)]
        for d, n in s.temps.items():
            L += [f"        AscendC::LocalTensor<{d.ascendc}> {d.name}_t{i} = b_{d.name}_t{i}.Get<{d.ascendc}>();"
                  for i in range(n)]
        for p in self.elem:   # a DMA group of rows (held across walks when resident)
            L.append(f"        AscendC::LocalTensor<{p.dtype.ascendc}> e_{self.cn[p.index]};")
        L += ["        for (uint32_t tile = first; tile < last; ++tile) {",
              "            const uint32_t a = tile / tiling.colTiles;",
              "            const uint32_t b0 = (tile % tiling.colTiles) * tiling.bn;",
              "            const uint32_t n = MinU32(tiling.bn, tiling.B - b0);"]
        for p in self.cols:   # one row of B values of slice a, read once per tile
            nm, ty = self.cn[p.index], p.dtype.ascendc
            sa = self.form[p.index].sa
            L += [f"            AscendC::LocalTensor<{ty}> c_{nm} = q_{nm}.AllocTensor<{ty}>();",
                  f"            CopyRowsIn(c_{nm}, gm_{nm}[a * {sa} + b0], 1, n, n, tiling.bn);",
                  f"            q_{nm}.EnQue(c_{nm});",
                  f"            c_{nm} = q_{nm}.DeQue<{ty}>();"]
        held = set()
        walks = [ph for ph in plan.phases if ph.walks]
        for ph in plan.phases:
            for st in ph.col_ops:
                L += self._step(st, "n", 12)
            if not ph.walks:
                continue
            L += self._walk(ph, held, ph is walks[-1])
        for i, v in enumerate(s.fn.results):
            ty = v.dtype.ascendc
            src = self._col(v)
            copy = (f"AscendC::Muls(y{i}, {src}, static_cast<{ty}>(1), n);" if v.dtype.is_float
                    else f"AscendC::Adds(y{i}, {src}, static_cast<{ty}>(0), n);")
            L += [f"            AscendC::LocalTensor<{ty}> y{i} = q_y{i}.AllocTensor<{ty}>();",
                  f"            {copy}   // an exact copy into the output queue",
                  f"            q_y{i}.EnQue(y{i});",
                  f"            y{i} = q_y{i}.DeQue<{ty}>();",
                  f"            CopyRowsOut(gm_y{i}[a * tiling.B + b0], y{i}, 1, n, n, n);",
                  f"            q_y{i}.FreeTensor(y{i});"]
        for p in self.cols:
            L.append(f"            q_{self.cn[p.index]}.FreeTensor(c_{self.cn[p.index]});")
        L += ["        }", "    }"]
        return L

    def _walk(self, ph, held: set, last_walk: bool) -> list[str]:
        """One walk over K: the phase's elem ops and reduction folds, row by row."""
        s, plan = self.s, self.s.plan
        L = []
        for op in ph.reductions:
            r = self.reds.index(op)
            L += [f"            AscendC::Duplicate(acc{r}, {literal(_IDENTITY[op.name], dt.float32)}, n);",
                  "            AscendC::PipeBarrier<PIPE_V>();"]
        need = [p for p in self.elem if any(q.index == p.index for q in plan.elem_params(ph))]
        resident = s.resident
        loads = [p for p in (self.elem if resident else need) if p.index not in held]
        frees = [p for p in (self.elem if resident else need)] if (last_walk or not resident) else []
        L += ["            for (uint32_t k0 = 0; k0 < tiling.K; k0 += tiling.kt) {",
              "                const uint32_t rows = MinU32(tiling.kt, tiling.K - k0);"]
        for p in loads:
            nm, ty = self.cn[p.index], p.dtype.ascendc
            f = self.form[p.index]
            L += [f"                e_{nm} = q_{nm}.AllocTensor<{ty}>();",
                  f"                CopyRowsIn(e_{nm}, gm_{nm}[a * {f.sa} + k0 * {f.sk} + b0], rows, n, {f.sk}, tiling.bn);",
                  f"                q_{nm}.EnQue(e_{nm});",
                  f"                e_{nm} = q_{nm}.DeQue<{ty}>();"]
        if resident:
            held |= {p.index for p in loads}
        L.append("                for (uint32_t r = 0; r < rows; ++r) {")
        steps = {id(st.op): st for st in ph.elem_ops}
        for op in plan.fn.ops:
            if id(op) in steps:
                L += self._step(steps[id(op)], "n", 20)
            elif op in ph.reductions:
                L += self._fold(op, 20)
        L.append("                }")
        for p in frees:
            L.append(f"                q_{self.cn[p.index]}.FreeTensor(e_{self.cn[p.index]});")
        L.append("            }")
        for op in ph.reductions:
            L += self._finish(op)
        return L

    def _fold(self, op, ind: int) -> list[str]:
        pad = " " * ind
        r = self.reds.index(op)
        x = op.operands[0]
        src = self._elem(x)
        L = []
        if x.dtype != dt.float32:   # 16-bit rows accumulate in float32
            L += [f"{pad}AscendC::Cast(wide, {src}, AscendC::RoundMode::CAST_NONE, n);",
                  f"{pad}AscendC::PipeBarrier<PIPE_V>();"]
            src = "wide"
        L += [f"{pad}AscendC::{_BINARY[op.name]}(acc{r}, acc{r}, {src}, n);",
              f"{pad}AscendC::PipeBarrier<PIPE_V>();"]
        return L

    def _finish(self, op) -> list[str]:
        """mean's division by K and the rounding to the result dtype, after the walk."""
        r = self.reds.index(op)
        L = []
        if op.name == "mean":
            L += ["            AscendC::Duplicate(wide, static_cast<float>(tiling.K), n);",
                  "            AscendC::PipeBarrier<PIPE_V>();",
                  f"            AscendC::Div(acc{r}, acc{r}, wide, n);",
                  "            AscendC::PipeBarrier<PIPE_V>();"]
        yt = op.result.dtype
        if yt != dt.float32:   # rounded once to the result dtype, as the vector scheduler casts
            modes = self.t.cast_modes.get(("float", yt.ascendc), frozenset())
            mode = "CAST_RINT" if "CAST_RINT" in modes else "CAST_NONE"
            L += [f"            AscendC::Cast({self.colbuf[id(op.result)]}, acc{r}, AscendC::RoundMode::{mode}, n);",
                  "            AscendC::PipeBarrier<PIPE_V>();"]
        return L

    # ---- values -----------------------------------------------------------------------------
    def _col(self, v) -> str:
        """The UB row holding per-column value v."""
        p = self.s.plan.param_of(v)
        if p is not None:
            return f"c_{self.cn[p.index]}"
        if id(v) in self.colbuf:
            return self.colbuf[id(v)]
        return next(f"acc{r}" for r, op in enumerate(self.reds) if op.result is v)   # a float32 result

    def _elem(self, v) -> str:
        """This row (r) of elem value v: a row of an input's DMA group, or its row buffer."""
        p = self.s.plan.param_of(v)
        if p is not None:
            return f"e_{self.cn[p.index]}[r * tiling.bn]"
        d, i = self.s.row_assign[id(v)]
        return f"{d.name}_e{i}"

    def _step(self, step, count: str, ind: int) -> list[str]:
        """One elementwise op: its tile stmts renamed onto this kernel's buffers."""
        plan = self.s.plan
        sched = step.sched
        names: dict[str, str] = {}
        scalars: dict[str, str] = {}
        for inp in sched.inputs:
            src = step.sources[inp.index]
            p = plan.param_of(src)
            if inp.var:   # a size-1 tensor or a runtime scalar
                scalars[inp.var] = f"v_{self.cn[p.index]}"
            elif inp.slot:
                kind = plan.kinds[id(src)] if p is None else p.kind
                names[inp.slot] = self._elem(src) if kind == "elem" else self._col(src)
        res = step.op.result
        names[sched.outputs[0].slot] = self._elem(res) if step.kind == "elem" else self._col(res)
        prefill = name_temporaries(sched, names, lambda d, i: f"{d.name}_t{i}")
        pad = " " * ind
        L = [f"{pad}{{  // {step.op.name} ({cnames.comment(step.op.loc)})",
             f"{pad}    const uint32_t o = 0;"]
        for buf, value, d in prefill:   # lanes Compare may read past the count
            L += [f"{pad}    AscendC::Duplicate({buf}, {literal(value, d)}, tiling.bn + {self.s.slack});",
                  f"{pad}    AscendC::PipeBarrier<PIPE_V>();"]
        for st in sched.stmts:
            L += self._stmt(rename_stmt(st, names, scalars), ind + 4)
        L.append(f"{pad}}}")
        return L
