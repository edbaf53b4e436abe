"""Ascend C for a conv2d kernel: im2col per core and image, then the Matmul API and the epilogue
of the cube printer (lower.conv.ConvSchedule; why im2col happens here: lower/conv.py).

The kernel is the cube kernel of printer_cube.py with three differences:
- before each image, `BuildPanel` writes the core's columns of col(x[n]) into its panel in the
  user workspace, in the canonical CopyIn -> Compute -> CopyOut form per (chunk, channel): the
  input rows the chunk reads go to UB in one DMA (plus a 32-byte block of zeros, which every
  padding tap reads), one `Gather` with a per-chunk table of byte offsets picks every tap of
  every pixel (rows (c, r, s) in KCRS order, so the weights are A as they lie in GM), and one
  strided DMA puts the R*S rows into the panel; int8 x has no Gather: its rows are cast to half,
  gathered in half and the panel rows cast back to int8 (exact both ways);
- A is the weights at the core's first channel, B the panel (the core's own matmul problem:
  N = the panel's row length);
- C tiles are rows of output channels over pixels, so GM addressing is NCHW: row stride P*Q,
  an image of K*P*Q elements; a per-channel bias is one value per tile row (kind rowvec).
"""
from __future__ import annotations

from ..lower.conv import ConvSchedule
from .printer_cube import CubePrinter


class ConvPrinter(CubePrinter):
    KIND_NOTE = "a conv2d kernel"

    def __init__(self, sched: ConvSchedule, target, name: str, debug: bool | None = None):
        self.g = g = sched.conv
        super().__init__(sched, target, name, debug)
        self.mn = (g.K, g.pix)
        self.gm_ld = str(g.pix)
        self.batch_elems = str(g.K * g.pix)
        self.ty = sched.mm.operands[0].dtype.ascendc
        names = {p.kind: self.cn[p.index] for p in sched.params if p.kind in ("a", "b")}
        self.x_name, self.w_name = names["b"], names["a"]

    def host_tiling(self) -> str:
        g = self.g
        return (f"// {self.name}: conv2d {g.images}x{g.C}x{g.H}x{g.W} * {g.K}x{g.C}x{g.R}x{g.S}, stride "
                f"{g.sh}x{g.sw}, padding {g.ph}x{g.pw}: each core's Matmul multiplies W[{g.K}, {g.crs}] by its "
                f"im2col panel [{g.crs}, {g.panel_n}]\n" + super().host_tiling())

    # ---- hooks of the cube printer ---------------------------------------------------------
    def _operand_lines(self, aname: str, bname: str, ta: bool, tb: bool) -> list[str]:
        return ["            BuildPanel();   // im2col of this image for this core's pixels, in its GM panel",
                f"            mm.SetTensorA(gm_{self.w_name}[offA]);   // the weights as a [K, C*R*S] matrix",
                "            mm.SetTensorB(gm_panel);"]

    def _calc_offset_lines(self, ta: bool, tb: bool) -> list[str]:
        return [
            "    // Core blockIdx owns channels [m0, m0 + singleCoreM) and pixels [n0, n0 + singleCoreN) of every image.",
            "    __aicore__ inline bool CalcOffset(uint32_t blockIdx)",
            "    {",
            "        const uint32_t mBlocks = (kOutC + tiling.singleCoreM - 1) / tiling.singleCoreM;",
            "        const uint32_t nBlocks = (kPix + tiling.singleCoreN - 1) / tiling.singleCoreN;",
            "        if (blockIdx >= mBlocks * nBlocks) return false;",
            "        m0 = (blockIdx % mBlocks) * tiling.singleCoreM;",
            "        n0 = (blockIdx / mBlocks) * tiling.singleCoreN;",
            "        offA = m0 * tiling.Ka;",
            "        offB = 0;   // the panel holds this core's pixels only",
            "        tailM = MinU32(tiling.singleCoreM, kOutC - m0);",
            "        tailN = MinU32(tiling.singleCoreN, kPix - n0);",
            "        return true;",
            "    }",
            ""]

    def _init_lines(self) -> list[str]:
        ty = self.ty
        return ["        // this core's im2col panel: the user workspace after the Matmul API's system workspace",
                f"        gm_panel.SetGlobalBuffer(reinterpret_cast<__gm__ {ty}*>(AscendC::GetUserWorkspace(workspace) + "
                f"AscendC::GetBlockIdx() * kPanelBytes), kCRS * kPanelN);"]

    def _extra_members(self) -> list[str]:
        g, ty = self.g, self.ty
        consts = dict(kImages=g.images, kInC=g.C, kInH=g.H, kInW=g.W, kOutC=g.K, kR=g.R, kS=g.S, kSH=g.sh,
                      kSW=g.sw, kPH=g.ph, kPW=g.pw, kQ=g.Q, kPix=g.pix, kTaps=g.R * g.S, kCRS=g.crs,
                      kChunk=g.chunk, kPanelN=g.panel_n, kPanelBytes=g.panel_bytes, kZero=g.x_elems - 32 // g.itemsize,
                      kBlock=32 // g.itemsize)
        L = [f"    static constexpr uint32_t {k} = {v};" for k, v in consts.items()]
        L += [f"    AscendC::GlobalTensor<{ty}> gm_panel;   // [C*R*S, kPanelN]: col(x) for this core's pixels",
              "    AscendC::TQue<AscendC::QuePosition::VECIN, 2> q_xrows;   // input rows of one channel",
              "    AscendC::TQue<AscendC::QuePosition::VECOUT, 2> q_panel;  // R*S panel rows of one chunk",
              "    AscendC::TBuf<AscendC::TPosition::VECCALC> b_offs;      // Gather byte offsets of a chunk"]
        if g.via_half:
            L += ["    AscendC::TBuf<AscendC::TPosition::VECCALC> b_xh;     // the input rows as half (Gather has no int8)",
                  "    AscendC::TBuf<AscendC::TPosition::VECCALC> b_panh;   // the gathered panel rows as half"]
        return L

    def _extra_init(self) -> list[str]:
        g, ty = self.g, self.ty
        L = [f"        pipe->InitBuffer(q_xrows, 2, {g.x_elems} * sizeof({ty}));",
             f"        pipe->InitBuffer(q_panel, 2, kTaps * kChunk * sizeof({ty}));",
             "        pipe->InitBuffer(b_offs, kTaps * kChunk * sizeof(uint32_t));"]
        if g.via_half:
            L += [f"        pipe->InitBuffer(b_xh, {g.x_elems} * sizeof(half));",
                  "        pipe->InitBuffer(b_panh, kTaps * kChunk * sizeof(half));"]
        return L

    def _gather_lines(self) -> list[str]:
        """Compute of one chunk and channel: the Gather of every tap into `pan` from `xr`; int8
        through half (Gather has no int8 form; int8 -> half -> int8 is exact), the half -> int8
        cast in a mode the target has (every mode is exact on integers)."""
        ty = self.ty
        if not self.g.via_half:
            return ["                AscendC::Gather(pan, xr, offs, 0, kTaps * kChunk);"]
        modes = self.t.cast_modes.get(("half", ty), frozenset())
        mode = "CAST_NONE" if "CAST_NONE" in modes else sorted(modes)[0]
        return ["                AscendC::LocalTensor<half> xh = b_xh.Get<half>();",
                "                AscendC::LocalTensor<half> panh = b_panh.Get<half>();",
                "                if (rows > 0) {   // the rows copied in (the taps read no other x element)",
                "                    AscendC::Cast(xh, xr, AscendC::RoundMode::CAST_NONE, rows * kInW);",
                "                }",
                "                AscendC::Duplicate(xh[kZero], half(0), kBlock);   // what the padding taps read",
                "                AscendC::PipeBarrier<PIPE_V>();",
                "                AscendC::Gather(panh, xh, offs, 0, kTaps * kChunk);",
                "                AscendC::PipeBarrier<PIPE_V>();",
                f"                AscendC::Cast(pan, panh, AscendC::RoundMode::{mode}, kTaps * kChunk);"]

    def _extra_methods(self) -> list[str]:
        ty = self.ty
        x = f"gm_{self.x_name}"
        return [
            "    // im2col: pixels [n0, n0 + tailN) of image `batch` as the columns of rows (c, r, s) of the panel,",
            "    // kChunk pixels at a time (CopyIn the rows they read, Compute one Gather, CopyOut R*S panel rows).",
            "    __aicore__ inline void BuildPanel()",
            "    {",
            "        AscendC::LocalTensor<uint32_t> offs = b_offs.Get<uint32_t>();",
            "        const uint32_t chunks = (tailN + kChunk - 1) / kChunk;",
            "        for (uint32_t j = 0; j < chunks; ++j) {",
            "            const uint32_t pix0 = n0 + j * kChunk;",
            "            const uint32_t width = MinU32(kChunk, n0 + tailN - pix0);",
            "            const int32_t pLo = pix0 / kQ, pHi = (pix0 + width - 1) / kQ;",
            "            const int32_t lo = pLo * int32_t(kSH) - int32_t(kPH);",
            "            const int32_t hi = pHi * int32_t(kSH) - int32_t(kPH) + int32_t(kR);",
            "            const uint32_t rowLo = lo < 0 ? 0 : lo;",
            "            const uint32_t rowHi = hi > int32_t(kInH) ? kInH : hi;",
            "            const uint32_t rows = rowHi > rowLo ? rowHi - rowLo : 0;",
            "            AscendC::PipeBarrier<PIPE_ALL>();   // the last chunk's Gathers have read the table",
            "            Offsets(offs, pix0, width, rowLo);",
            "            AscendC::PipeBarrier<PIPE_ALL>();   // the table (scalar writes) reaches the vector unit",
            "            for (uint32_t ch = 0; ch < kInC; ++ch) {",
            f"                AscendC::LocalTensor<{ty}> xr = q_xrows.AllocTensor<{ty}>();",
            *([] if self.g.via_half else
              [f"                AscendC::Duplicate(xr[kZero], {ty}(0), kBlock);   // what the padding taps read"]),
            "                if (rows > 0) {",
            f"                    CopyRowsIn(xr, {x}[((batch * kInC + ch) * kInH + rowLo) * kInW], 1, rows * kInW, "
            "rows * kInW, rows * kInW);",
            "                }",
            "                q_xrows.EnQue(xr);",
            f"                xr = q_xrows.DeQue<{ty}>();",
            f"                AscendC::LocalTensor<{ty}> pan = q_panel.AllocTensor<{ty}>();",
            *self._gather_lines(),
            "                q_panel.EnQue(pan);",
            "                q_xrows.FreeTensor(xr);",
            f"                pan = q_panel.DeQue<{ty}>();",
            *self._panel_rows_out(),
            "                q_panel.FreeTensor(pan);",
            "            }",
            "        }",
            "        AscendC::PipeBarrier<PIPE_ALL>();   // the panel is in GM before the cube reads it",
            "    }",
            "",
            "    // Byte offsets into the x rows of every tap (r, s) of pixels [pix0, pix0 + width); a tap in the",
            "    // padding, or a pixel past the block, reads the zero block at kZero.",
            "    __aicore__ inline void Offsets(const AscendC::LocalTensor<uint32_t>& offs, uint32_t pix0, uint32_t width,",
            "                                   uint32_t rowLo)",
            "    {",
            "        for (uint32_t jj = 0; jj < kChunk; ++jj) {",
            "            const int32_t p = (pix0 + jj) / kQ, q = (pix0 + jj) % kQ;",
            "            for (uint32_t t = 0; t < kTaps; ++t) {",
            "                const int32_t ih = p * int32_t(kSH) + int32_t(t / kS) - int32_t(kPH);",
            "                const int32_t iw = q * int32_t(kSW) + int32_t(t % kS) - int32_t(kPW);",
            "                const bool inside = jj < width && ih >= 0 && ih < int32_t(kInH) && iw >= 0 && iw < int32_t(kInW);",
            "                const uint32_t at = inside ? (uint32_t(ih) - rowLo) * kInW + uint32_t(iw) : kZero;",
            f"                offs.SetValue(t * kChunk + jj, at * sizeof({'half' if self.g.via_half else ty}));",
            "            }",
            "        }",
            "    }",
            ""]

    def _panel_rows_out(self) -> list[str]:
        """CopyOut of one chunk's R*S panel rows: one strided DataCopy when its fields fit
        DataCopyParams (blockCount <= 4095, lengths and gaps in 32-byte blocks <= 65535), else one
        DataCopy per row."""
        g, ty = self.g, self.ty
        gap = (g.panel_n - g.chunk) * g.itemsize // 32
        if g.R * g.S <= 4095 and gap <= 65535 and g.chunk * g.itemsize // 32 <= 65535:
            return [f"                const AscendC::DataCopyParams rowsOut{{static_cast<uint16_t>(kTaps), "
                    f"static_cast<uint16_t>(kChunk * sizeof({ty}) / 32), 0, "
                    f"static_cast<uint16_t>((kPanelN - kChunk) * sizeof({ty}) / 32)}};",
                    "                AscendC::DataCopy(gm_panel[ch * kTaps * kPanelN + j * kChunk], pan, rowsOut);"]
        return ["                for (uint32_t t = 0; t < kTaps; ++t) {   // rows too far apart for one strided DMA",
                "                    AscendC::DataCopy(gm_panel[(ch * kTaps + t) * kPanelN + j * kChunk], pan[t * kChunk], "
                "kChunk);",
                "                }"]
