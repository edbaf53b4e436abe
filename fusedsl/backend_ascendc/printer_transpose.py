"""Ascend C for a lone transpose / permute or stepped slice (lower.transpose.TransposeSchedule).

A tile is `ta` rows (input axis A) by `tc` columns (the input's last axis C) of one outer
block; the outer block's offsets are decoded from the tile index with the outer axes' sizes
and strides in the tiling struct.  Per tile: one strided CopyIn (rows sA apart in GM), then

- copy mode (the last axis stays last): one UB->UB DataCopy into the output queue and one
  strided CopyOut (rows oA apart);
- transpose mode: element (r, c) of the input tile becomes element (c, r) of the output tile
  (LocalTensor GetValue/SetValue between two barriers: lower/transpose.py says why no vector
  transpose), then `tc` rows of `ta` elements go out, rows oC apart;
- gather mode (a slice with a step cC on the last axis): each row's span of (tc - 1) * cC + 1
  elements comes in, every cC-th is picked into the output tile, `ta` rows of `tc` go out.

The host tiling function returns the words fusedsl computed (shapes are static); `simulate`
checks them word for word like every kernel's.
"""
from __future__ import annotations

from ..lower.transpose import MAX_OUTER, TransposeSchedule
from . import cnames
from .emit import camel
from .frame import KernelFrame


class TransposePrinter(KernelFrame):
    def __init__(self, sched: TransposeSchedule, target, name: str, debug: bool | None = None):
        super().__init__(sched, target, name, debug)
        self.symbols = []
        self.x = cnames.param(sched.params[0].name)

    def _gm_args(self) -> list[str]:
        return [self.x, "y0"]

    FIELDS = ("A", "C", "sA", "oA", "oC", "ta", "tc", "tilesA", "tilesC", "totalTiles", "tilesPerCore",
              "blockDim", "nOuter", "in0", "cC")

    def tiling_header(self) -> str:
        lines = [f"// Tiling data of {self.name} (a transpose: tiles of [ta, tc] of [A, C] blocks per outer block).",
                 f"struct {self.tiling} {{"]
        lines += [f"    uint32_t {f};" for f in self.FIELDS]
        lines += [f"    uint32_t outerSize[{MAX_OUTER}];   // outer axes, outermost first (unused: size 1)",
                  f"    uint32_t outerIn[{MAX_OUTER}];     // their input strides (elements)",
                  f"    uint32_t outerOut[{MAX_OUTER}];    // their output strides", "};"]
        return "\n".join(lines) + "\n"

    def host_tiling(self) -> str:
        words = self.s.tiling({}, self.t).words
        body = ", ".join(f"{w}u" for w in words)
        return "\n".join([
            f"// Host tiling for {self.name} on {self.t.name}: static shapes, so the tiling is constants",
            f"// computed by fusedsl for {self.t.vector_cores} vector cores and a UB budget of {self.s.ub_budget} bytes.",
            f"inline bool {camel(self.name)}Tiling(const int64_t* sizes, uint32_t vectorCores, uint32_t ubBudget,",
            f"                          {self.tiling}* t)",
            "{",
            "    (void)sizes; (void)vectorCores; (void)ubBudget;",
            f"    static const uint32_t kWords[{len(words)}] = {{{body}}};",
            "    uint32_t* dst = reinterpret_cast<uint32_t*>(t);",
            f"    for (uint32_t i = 0; i < {len(words)}; ++i) dst[i] = kWords[i];",
            "    return true;",
            "}"]) + "\n"

    def kernel(self) -> str:
        return self._class() + "\n" + self.entry([self.x, "y0", "t"])

    def _class(self) -> str:
        """The kernel class (the op project's op_kernel templates it on its tiling type)."""
        s = self.s
        x = self.x
        ty = s.op.result.dtype.ascendc
        copy = s.mode == "copy"
        gather = s.mode == "gather"
        out_elems = "t.tc * taPad" if s.mode == "transpose" else "t.ta * tcPad"
        in_elems = "t.ta * spanPad" if gather else "t.ta * tcPad"
        load = ("CopyRowsIn(in, gm_x[tiling.in0 + inOff + a0 * tiling.sA + c0 * tiling.cC], na, "
                "(nc - 1) * tiling.cC + 1, na > 1 ? tiling.sA : (nc - 1) * tiling.cC + 1, spanPad);" if gather else
                "CopyRowsIn(in, gm_x[tiling.in0 + inOff + a0 * tiling.sA + c0], na, nc, na > 1 ? tiling.sA : nc, "
                "tcPad);")
        if gather:   # every cC-th element of each row's span
            compute = ["        AscendC::PipeBarrier<PIPE_ALL>();   // the DMA's tile is read by scalar loads",
                       "        for (uint32_t r = 0; r < na; ++r)",
                       "            for (uint32_t c = 0; c < nc; ++c)",
                       "                out.SetValue(r * tcPad + c, in.GetValue(r * spanPad + c * tiling.cC));",
                       "        AscendC::PipeBarrier<PIPE_ALL>();   // scalar stores land before the DMA out"]
            store = ["        CopyRowsOut(gm_y[outOff + a0 * tiling.oA + c0], out, na, nc, tiling.oA, tcPad);"]
        elif copy:
            # only the rows' elements were written (DataCopyPad pads nothing it is not asked to):
            # whole 32-byte blocks by DMA, each row's tail element by element
            compute = [f"        constexpr uint32_t kBlock = 32 / sizeof({ty});",
                       "        const uint32_t body = nc / kBlock * kBlock;",
                       "        if (body == tcPad) {",
                       "            AscendC::DataCopy(out, in, na * tcPad);",
                       "        } else {",
                       "            for (uint32_t r = 0; r < na && body > 0; ++r) AscendC::DataCopy(out[r * tcPad], in[r * tcPad], body);",
                       "            AscendC::PipeBarrier<PIPE_ALL>();",
                       "            for (uint32_t r = 0; r < na; ++r)",
                       "                for (uint32_t c = body; c < nc; ++c) out.SetValue(r * tcPad + c, in.GetValue(r * tcPad + c));",
                       "            AscendC::PipeBarrier<PIPE_ALL>();",
                       "        }"]
            store = ["        CopyRowsOut(gm_y[outOff + a0 * tiling.oA + c0], out, na, nc, tiling.oA, tcPad);"]
        else:
            compute = ["        AscendC::PipeBarrier<PIPE_ALL>();   // the DMA's tile is read by scalar loads",
                       "        for (uint32_t r = 0; r < na; ++r)",
                       "            for (uint32_t c = 0; c < nc; ++c) out.SetValue(c * taPad + r, in.GetValue(r * tcPad + c));",
                       "        AscendC::PipeBarrier<PIPE_ALL>();   // scalar stores land before the DMA out"]
            store = ["        CopyRowsOut(gm_y[outOff + c0 * tiling.oC + a0], out, nc, na, tiling.oC, taPad);"]
        L = [f"// {self.name}: {cnames.comment(s.plan_note)}",
             *self.class_open([f"GM_ADDR {x}", "GM_ADDR y0"]),
             f"        tcPad = (t.tc * sizeof({ty}) + 31) / 32 * 32 / sizeof({ty});",
             f"        taPad = (t.ta * sizeof({ty}) + 31) / 32 * 32 / sizeof({ty});",
             f"        spanPad = ((t.tc - 1) * t.cC + 1 + 32 / sizeof({ty}) - 1) / (32 / sizeof({ty})) * (32 / sizeof({ty}));",
             f"        gm_x.SetGlobalBuffer((__gm__ {ty}*){x});",
             f"        gm_y.SetGlobalBuffer((__gm__ {ty}*)y0);",
             f"        pipe.InitBuffer(q_x, 2, {in_elems} * sizeof({ty}));",
             f"        pipe.InitBuffer(q_y, 2, {out_elems} * sizeof({ty}));",
             "    }",
             "",
             "    __aicore__ inline void Process()",
             "    {",
             *self.core_tiles(),
             "        for (uint32_t tile = first; tile < last; ++tile) {",
             "            Geometry(tile);",
             "            CopyIn();",
             "            Compute();",
             "            CopyOut();",
             "        }",
             "    }",
             "",
             "private:",
             "    // the tile's outer block (decoded from the tile index), rows a0.. and columns c0..",
             "    __aicore__ inline void Geometry(uint32_t tile)",
             "    {",
             "        const uint32_t ic = tile % tiling.tilesC;",
             "        uint32_t rest = tile / tiling.tilesC;",
             "        const uint32_t ia = rest % tiling.tilesA;",
             "        rest /= tiling.tilesA;",
             "        inOff = 0;",
             "        outOff = 0;",
             "        for (uint32_t k = tiling.nOuter; k-- > 0;) {",
             "            const uint32_t i = rest % tiling.outerSize[k];",
             "            rest /= tiling.outerSize[k];",
             "            inOff += i * tiling.outerIn[k];",
             "            outOff += i * tiling.outerOut[k];",
             "        }",
             "        a0 = ia * tiling.ta;",
             "        c0 = ic * tiling.tc;",
             "        na = MinU32(tiling.ta, tiling.A - a0);",
             "        nc = MinU32(tiling.tc, tiling.C - c0);",
             "    }",
             "    __aicore__ inline void CopyIn()",
             "    {",
             f"        AscendC::LocalTensor<{ty}> in = q_x.AllocTensor<{ty}>();",
             f"        {load}",
             "        q_x.EnQue(in);",
             "    }",
             "    __aicore__ inline void Compute()",
             "    {",
             f"        AscendC::LocalTensor<{ty}> in = q_x.DeQue<{ty}>();",
             f"        AscendC::LocalTensor<{ty}> out = q_y.AllocTensor<{ty}>();",
             *compute,
             "        q_y.EnQue(out);",
             "        q_x.FreeTensor(in);",
             "    }",
             "    __aicore__ inline void CopyOut()",
             "    {",
             f"        AscendC::LocalTensor<{ty}> out = q_y.DeQue<{ty}>();",
             *store,
             "        q_y.FreeTensor(out);",
             "    }",
             "",
             "    AscendC::TPipe pipe;",
             "    AscendC::TQue<AscendC::QuePosition::VECIN, 1> q_x;",
             "    AscendC::TQue<AscendC::QuePosition::VECOUT, 1> q_y;",
             f"    AscendC::GlobalTensor<{ty}> gm_x;",
             f"    AscendC::GlobalTensor<{ty}> gm_y;",
             f"    {self.tiling} tiling;",
             "    uint32_t tcPad = 0, taPad = 0, spanPad = 0, inOff = 0, outOff = 0, a0 = 0, c0 = 0, na = 0, nc = 0;",
             "};", ""]
        return "\n".join(L)

    def heading(self) -> list[str]:
        return [f"// ---- {self.name}: a transpose from {cnames.comment(self.s.fn.loc)} ----"]
