"""Ascend C for view kernels: slice / concatenate / take as CopyIn / CopyOut addressing.

A view kernel (fusedsl/views.py) has static shapes and a box table (schedule._view_tiling):
per box its first tile, rows, columns, rows per tile, the output's offset and row stride,
and per load the source parameter, offset, row stride, column stride (1, or 0 for one value
per row) and, for a gather, the indices' offset and stride.  The table travels in the
tiling struct (`box[NB][W]`, all uint32 words), so the kernel code is the usual
TPipe/TQue CopyIn -> Compute -> CopyOut skeleton with three changes:

- Geometry(tile) finds the tile's box and its rows;
- CopyIn reads each load with one strided DataCopyPad per tile (`LoadView`: blockCount =
  rows, srcStride = the box's row stride minus the columns, in bytes), a broadcast row
  once plus copies in UB, a broadcast column with Duplicate per row; a gather
  (`GatherRows`) reads each index from GM with GetValue and moves that table row with one
  DataCopy(Pad); an index outside [-V, V) is not read: its row is filled with 0 (the host
  executors check the indices first and raise; see docs/FUSION.md);
- CopyOut writes the tile with one strided DataCopyPad at the box's output offset.

The host tiling function returns the words fusedsl computed (shapes are static); `simulate`
checks them word for word like every kernel's.
"""
from __future__ import annotations
from ..lower.vector import compute_tiling

from ..lower.vector import VIEW_BOX_HEAD, VIEW_LOAD_WORDS
from .emit import camel
from .printer import AscendCPrinter


class ViewPrinter(AscendCPrinter):
    extra_state = ", box = 0"

    def __init__(self, sched, target, name, debug=None):
        super().__init__(sched, target, name, debug)
        self.tensor_inputs = [i for i in self.s.inputs if i.kind in ("gm", "scalar")]
        self.loads = [i for i in self.s.inputs if i.kind in ("view", "gather")]
        self.width = VIEW_BOX_HEAD + VIEW_LOAD_WORDS * len(self.loads)
        self.params = {i.index: i for i in self.tensor_inputs}

    def _nboxes(self, tiling) -> int:
        return len(tiling.boxes)

    # ---- tiling -------------------------------------------------------------------------
    def tiling_header(self) -> str:
        nb = len(self._plan_tiling().boxes)
        fields = ["R", "C", "Cpad", "tileRows", "tileCols", "colTiles", "totalTiles", "tilesPerCore",
                  "blockDim", "tileElems", "rowsMode"]
        lines = [f"// Tiling data of {self.name}: written by {camel(self.name)}Tiling() on the host,",
                 "// read by the kernel.  Every field is 32 bits wide so the kernel can copy it word by word.",
                 f"struct {self.tiling} {{"]
        lines += [f"    uint32_t {f};" for f in fields]
        lines.append(f"    uint32_t dims[{self.k}];        // [rows, row length] of the output")
        lines.append("    uint32_t nBoxes;")
        lines.append(f"    uint32_t box[{nb}][{self.width}];  // first tile, rows, cols, rows per tile, output "
                     "offset, output row stride; per load: source, offset, row stride, column stride, "
                     "indices offset, indices row stride")
        for inp in self.s.inputs:
            if inp.kind == "runtime_scalar":
                lines.append(f"    float {inp.var};   // runtime scalar {inp.name} ({inp.gm_dtype})")
        lines.append("};")
        return "\n".join(lines) + "\n"

    def _plan_tiling(self):
        if not hasattr(self, "_tiling"):
            self._tiling = compute_tiling(self.s, {}, self.t)
        return self._tiling

    def host_tiling(self) -> str:
        t = self._plan_tiling()
        words = [t.R, t.C, t.Cpad, t.tile_rows, t.tile_cols, t.col_tiles, t.total_tiles, t.tiles_per_core,
                 t.block_dim, t.tile_elems, int(t.rows_mode)] + list(t.dims) + [len(t.boxes)]
        for row in t.boxes:
            words += list(row)
        return self.static_host_tiling(words, [
            f"// Host tiling for {self.name} on {self.t.name}: static shapes (slice / concatenate / take",
            "// views), so the tiling and its box table are constants computed by fusedsl for",
            f"// {self.t.vector_cores} vector cores and a UB budget of {self.s.ub_budget} bytes."])

    # ---- kernel -------------------------------------------------------------------------
    def _geometry(self) -> list[str]:
        return [
            "    // The tile's box (the box table is in the tiling struct) and its rows.",
            "    __aicore__ inline void Geometry(uint32_t tile)",
            "    {",
            "        box = 0;",
            "        while (box + 1 < tiling.nBoxes && tiling.box[box + 1][0] <= tile) ++box;",
            "        const uint32_t* bx = tiling.box[box];",
            "        row0 = (tile - bx[0]) * bx[3];",
            "        nrows = MinU32(bx[3], bx[1] - row0);",
            "        col0 = 0;",
            "        ncols = bx[2];",
            "        const bool packed = tiling.Cpad == ncols || nrows == 1;",
            "        nSeg = packed ? 1 : nrows;",
            "        segLen = packed ? nrows * ncols : ncols;",
            "        segStride = packed ? 0 : tiling.Cpad;",
            "    }",
            ""]

    def _copy_in(self) -> list[str]:
        plan = self.s.views
        L = ["    __aicore__ inline void CopyIn()", "    {"]
        for j, inp in enumerate(self.loads):
            ty = inp.gm_dtype.ascendc
            load = plan.loads[j]
            w = VIEW_BOX_HEAD + j * VIEW_LOAD_WORDS
            L.append(f"        AscendC::LocalTensor<{ty}> {inp.slot} = q_{inp.slot}.AllocTensor<{ty}>();")
            L.append(f"        {{  // load {j}: " + ("gathered rows" if load.gather else "a view of "
                     + ", ".join(self.params[p].name for p in load.sources)))
            L.append(f"            const uint32_t* v = &tiling.box[box][{w}];")
            if load.gather is not None:
                idx_param, V, D = load.gather
                table = self.params[load.sources[0]].name
                idx = self.params[idx_param].name
                L.append(f"            GatherRows({inp.slot}, gm_{table}, gm_{idx}, v, row0, nrows, ncols, "
                         f"tiling.Cpad, {V}, {D}u);")
            elif len(load.sources) == 1:
                L.append(f"            LoadView({inp.slot}, gm_{self.params[load.sources[0]].name}, v, row0, nrows, "
                         "ncols, tiling.Cpad);")
            else:
                L.append("            switch (v[0]) {  // which input of the concatenation this box reads")
                for k, p in enumerate(load.sources):
                    L.append(f"            case {k}: LoadView({inp.slot}, gm_{self.params[p].name}, v, row0, nrows, "
                             "ncols, tiling.Cpad); break;")
                L.append("            default: break;")
                L.append("            }")
            L.append("        }")
            L.append(f"        q_{inp.slot}.EnQue({inp.slot});")
        L += ["    }", ""]
        return L

    def _copy_out(self) -> list[str]:
        L = ["    __aicore__ inline void CopyOut()", "    {",
             "        const uint32_t* bx = tiling.box[box];"]
        for o in self.s.outputs:
            ty = o.gm_dtype.ascendc
            L += [f"        AscendC::LocalTensor<{ty}> {o.slot} = q_{o.slot}.DeQue<{ty}>();",
                  "        // the box's rows: output row stride bx[5], one strided DMA",
                  f"        CopyRowsOut(gm_y{o.index}[bx[4] + row0 * bx[5]], {o.slot}, nrows, ncols, "
                  "nrows > 1 ? bx[5] : ncols, tiling.Cpad);",
                  f"        q_{o.slot}.FreeTensor({o.slot});"]
        L += ["    }", ""]
        return L

    def view_helpers(self) -> str:
        return """namespace {
// Rows 1..nrows-1 of a tile get row 0 (a row broadcast over the tile's rows).
template <typename T>
__aicore__ inline void ReplicateRow(const AscendC::LocalTensor<T>& dst, uint32_t nrows, uint32_t ncols,
                                    uint32_t ubStride)
{
    constexpr uint32_t kBlock = 32 / sizeof(T);
    const uint32_t body = ncols / kBlock * kBlock;
    for (uint32_t r = 1; r < nrows; ++r) {
        if (body > 0) AscendC::DataCopy(dst[r * ubStride], dst, body);
        for (uint32_t i = body; i < ncols; ++i) dst.SetValue(r * ubStride + i, dst.GetValue(i));
    }
    AscendC::PipeBarrier<PIPE_ALL>();
}

// A tile of a view: rows row0.. of a box, row r at v[1] + r * v[2] in src (v[3] = column
// stride: 1 contiguous, 0 one value per row).
template <typename T>
__aicore__ inline void LoadView(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>& src,
                                const uint32_t* v, uint32_t row0, uint32_t nrows, uint32_t ncols, uint32_t ubStride)
{
    const uint32_t off = v[1], rs = v[2];
    if (v[3] == 0) {   // a broadcast column: one value per row
        for (uint32_t r = 0; r < nrows; ++r) FillRow(dst[r * ubStride], src.GetValue(off + (row0 + r) * rs), ncols);
        return;
    }
    if (nrows > 1 && rs == 0) {   // one row for every row of the tile: read it once
        CopyRowsIn(dst, src[off], 1, ncols, ncols, ubStride);
        AscendC::PipeBarrier<PIPE_ALL>();
        ReplicateRow(dst, nrows, ncols, ubStride);
        return;
    }
    if (nrows > 1 && rs < ncols) {   // overlapping rows: one copy per row
        for (uint32_t r = 0; r < nrows; ++r)
            CopyRowsIn(dst[r * ubStride], src[off + (row0 + r) * rs], 1, ncols, ncols, ubStride);
        return;
    }
    CopyRowsIn(dst, src[off + row0 * rs], nrows, ncols, rs, ubStride);   // one strided DMA
}

// Gathered rows: tile row r is table row idx[v[4] + (row0 + r) * v[5]] (negative indices
// count from the end).  An index outside [-V, V) is never read: its row is 0.
template <typename T, typename I>
__aicore__ inline void GatherRows(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>& table,
                                  const AscendC::GlobalTensor<I>& idx, const uint32_t* v, uint32_t row0,
                                  uint32_t nrows, uint32_t ncols, uint32_t ubStride, int64_t V, uint32_t D)
{
    for (uint32_t r = 0; r < nrows; ++r) {
        int64_t k = static_cast<int64_t>(idx.GetValue(v[4] + (row0 + r) * v[5]));
        if (k < 0) k += V;
        if (k < 0 || k >= V) {
            FillRow(dst[r * ubStride], static_cast<T>(0), ncols);
            continue;
        }
        CopyRowsIn(dst[r * ubStride], table[static_cast<uint32_t>(k) * D + v[1]], 1, ncols, ncols, ubStride);
    }
}
}  // namespace
"""
