"""The loop-level tile IR of a conv2d kernel (lower/conv.py `ConvSchedule`): the cube kernel of
lower/cube_tile.py with im2col inside it (why im2col happens in the kernel: lower/conv.py).

The differences from a matmul kernel:
- before each image, the stage `BuildPanel` writes the core's columns of col(x[n]) into its panel
  in the user workspace (a GM tensor of role "work": this core's slice of the workspace after
  the Matmul API's system part), in the canonical CopyIn -> Compute -> CopyOut form per (chunk,
  channel): the input rows the chunk reads go to UB in one DMA (plus a 32-byte block of zeros,
  which every padding tap reads), one `Gather` with a per-chunk table of byte offsets picks every
  tap of every pixel (rows (c, r, s) in KCRS order, so the weights are A as they lie in GM), and
  one strided DMA puts the R*S rows into the panel; int8 x has no Gather: its rows are cast to
  half, gathered in half and the panel rows cast back to int8 (exact both ways);
- A is the weights at the core's first channel, B the panel (the core's own matmul problem:
  N = the panel's row length);
- C tiles are rows of output channels over pixels, so GM addressing is NCHW: row stride P*Q, an
  image of K*P*Q elements; a per-channel bias is one value per tile row (kind rowvec).

The geometry is static: it is the kernel's constant members (kInC, kPix, ... computed in Init),
the offset table's arithmetic uint32 (a tap's row and column are kept shifted by the padding,
so no value is negative).
"""
from __future__ import annotations

from .. import dtypes as dt
from ..tile.kernel import (Alloc, Barrier, Call, CopyIn, CopyOut, DeQue, Dup, EnQue, For, Free, Gm, If, Let, Member,
                           MmSet, Put, Queue, Ref, Set, Stage, TileKernel, Vec, add)
from .conv import ConvSchedule
from .cube_tile import _CubeLowering


_PANELS: dict = {}   # build_panel's stages: (x name, via_half, dtype, id(target)) -> (target, Stage)


class _ConvLowering(_CubeLowering):
    KIND = "conv"

    def __init__(self, sched: ConvSchedule):
        super().__init__(sched)
        self.g = sched.conv
        self.M, self.N, self.ld, self.batch_elems = "kOutC", "kPix", "kPix", ("*", "kOutC", "kPix")
        self.dtype = sched.mm.operands[0].dtype
        names = {p.kind: p.name for p in sched.params if p.kind in ("a", "b")}
        self.x_name, self.w_name = names["b"], names["a"]

    def offsets(self, ta: bool, tb: bool) -> list:
        return [Set("offA", ("*", "m0", "t.Ka")), Set("offB", 0)]   # the panel holds this core's pixels only

    def operands(self, a, b, a_l1: bool) -> list:
        return [Call("BuildPanel"), MmSet("mm", "A", self.w_name, "offA"), MmSet("mm", "B", "panel", 0)]

    def extend(self, gms, queues, members, stages):
        g, d = self.g, self.dtype
        consts = dict(kImages=g.images, kInC=g.C, kInH=g.H, kInW=g.W, kOutC=g.K, kR=g.R, kS=g.S, kSH=g.sh,
                      kSW=g.sw, kPH=g.ph, kPW=g.pw, kQ=g.Q, kPix=g.pix, kTaps=g.R * g.S, kCRS=g.crs,
                      kChunk=g.chunk, kPanelN=g.panel_n, kZero=g.x_elems - 32 // g.itemsize,
                      kBlock=32 // g.itemsize)
        members = [Member(k, v) for k, v in consts.items()] + members
        # this core's im2col panel [C*R*S, kPanelN]: its slice of the user workspace
        gms = gms + [Gm("panel", d, "work", g.panel_bytes)]
        taps = ("*", "kTaps", "kChunk")
        queues = queues + [Queue("q_xrows", "VECIN", 2, d, g.x_elems), Queue("q_panel", "VECOUT", 2, d, taps),
                           Queue("b_offs", "VECCALC", 1, dt.int32, taps)]
        if g.via_half:
            queues += [Queue("b_xh", "VECCALC", 1, dt.float16, g.x_elems), Queue("b_panh", "VECCALC", 1, dt.float16, taps)]
        return gms, queues, members, stages + [self.build_panel()]

    def build_panel(self) -> Stage:
        """The BuildPanel stage (_panel), one object per x name, via_half, dtype and target: it reads
        nothing else (the geometry is the kernel's members), so the conv kernels of one layout share
        it and the Ascend C printer keeps its text by the object (printer_kernel._STAGE_TEXT)."""
        key = (self.x_name, self.g.via_half, self.dtype, id(self.t))
        hit = _PANELS.get(key)
        if hit is None or hit[0] is not self.t:   # (the entry holds its target: an id is not reused)
            if len(_PANELS) >= 64:
                _PANELS.clear()
            hit = _PANELS[key] = (self.t, self._panel())
        return hit[1]

    def _panel(self) -> Stage:
        """im2col: pixels [n0, n0 + tailN) of image `batch` as the columns of rows (c, r, s) of the
        panel, kChunk pixels at a time (CopyIn the rows they read, Compute one Gather, CopyOut R*S
        panel rows).  The offset table is kTaps x kChunk SetValues of the scalar unit: when the
        core's pixels are one chunk it is built once, for image 0."""
        g, x = self.g, self.x_name
        # the rows of x the chunk's taps read: [pLo * kSH - kPH, pHi * kSH - kPH + kR) within [0, kInH)
        lo = ("*", "pLo", "kSH")
        hi = ("+", ("*", "pHi", "kSH"), "kR")
        chunk_head = [
            Let("pix0", ("+", "n0", ("*", "j", "kChunk"))),
            Let("width", ("min", "kChunk", ("-", ("+", "n0", "tailN"), "pix0"))),
            Let("pLo", ("/", "pix0", "kQ")), Let("pHi", ("/", ("-", ("+", "pix0", "width"), 1), "kQ")),
            Let("rowLo", ("-", lo, ("min", "kPH", lo))),
            Let("rowHi", ("min", "kInH", ("-", hi, ("min", "kPH", hi)))),
            Let("rows", ("-", "rowHi", ("min", "rowLo", "rowHi"))),
            Barrier("the last chunk's Gathers have read the table"),
            # a core whose pixels are one chunk gathers every image through the same table (its
            # offsets are within an image's rows): built for the first image only, the TBuf keeps it
            If(("||", ("==", "batch", 0), (">", "chunks", 1)), (self.offsets_table(),)),
            Barrier("the table (scalar writes) reaches the vector unit")]
        per_channel = [Alloc("xr", "q_xrows")]
        if not g.via_half:
            per_channel.append(Dup(Ref("xr", "kZero"), 0, "kBlock"))   # what the padding taps read
        per_channel += [
            If((">", "rows", 0), (CopyIn("xr", x, ("*", ("+", ("*", ("+", ("*", "batch", "kInC"), "ch"), "kInH"), "rowLo"),
                                                   "kInW"), 1, ("*", "rows", "kInW"), ("*", "rows", "kInW"),
                                          ("*", "rows", "kInW")),)),
            EnQue("q_xrows", "xr"), DeQue("xr", "q_xrows"), Alloc("pan", "q_panel"),
            *self.gather(),
            EnQue("q_panel", "pan"), Free("q_xrows", "xr"), DeQue("pan", "q_panel"),
            CopyOut("panel", add(("*", ("*", "ch", "kTaps"), "kPanelN"), ("*", "j", "kChunk")), "pan", "kTaps", "kChunk",
                    "kPanelN", "kChunk"),
            Free("q_panel", "pan")]
        body = [Alloc("offs", "b_offs"),
                Let("chunks", ("/", ("+", "tailN", ("-", "kChunk", 1)), "kChunk")),
                For("j", 0, "chunks",
                    (*chunk_head, For("ch", 0, "kInC", tuple(per_channel)))),
                Barrier("the panel is in GM before the cube reads it")]
        return Stage("BuildPanel", None, tuple(body))

    def offsets_table(self):
        """Byte offsets into the x rows of every tap (r, s) of pixels [pix0, pix0 + width); a tap in
        the padding, or a pixel past the block, reads the zero block at kZero.  A tap's row and
        column are kept shifted by the padding (ih + kPH, iw + kPW): no value is negative."""
        size = self.dtype.itemsize if not self.g.via_half else 2
        ihp = ("+", ("*", "p", "kSH"), ("/", "t", "kS"))
        iwp = ("+", ("*", "q", "kSW"), ("%", "t", "kS"))
        inside = ("&&", ("&&", ("<", "jj", "width"), ("&&", (">=", ihp, "kPH"), ("<", ihp, ("+", "kInH", "kPH")))),
                  ("&&", (">=", iwp, "kPW"), ("<", iwp, ("+", "kInW", "kPW"))))
        at = ("+", ("*", ("-", ("-", ihp, "kPH"), "rowLo"), "kInW"), ("-", iwp, "kPW"))
        slot = ("+", ("*", "t", "kChunk"), "jj")
        return For("jj", 0, "kChunk", (
            Let("p", ("/", ("+", "pix0", "jj"), "kQ")), Let("q", ("%", ("+", "pix0", "jj"), "kQ")),
            For("t", 0, "kTaps", (If(inside, (Put("offs", slot, ("*", at, size)),),
                                     (Put("offs", slot, ("*", "kZero", size)),)),))))

    def gather(self) -> list:
        """Compute of one chunk and channel: the Gather of every tap into `pan` from `xr`; int8
        through half (Gather has no int8 form; int8 -> half -> int8 is exact), the half -> int8
        cast in a mode the target has (every mode is exact on integers)."""
        taps = ("*", "kTaps", "kChunk")
        offs = Ref("offs", 0, "uint32")
        if not self.g.via_half:
            return [Vec("Gather", Ref("pan"), (Ref("xr"), offs), taps)]
        modes = self.t.cast_modes.get(("half", self.dtype.ascendc), frozenset())
        mode = "CAST_NONE" if "CAST_NONE" in modes else sorted(modes)[0]
        return [Alloc("xh", "b_xh"), Alloc("panh", "b_panh"),
                If((">", "rows", 0), (Vec("Cast", Ref("xh"), (Ref("xr"),), ("*", "rows", "kInW"), mode="CAST_NONE"),)),
                Dup(Ref("xh", "kZero"), 0.0, "kBlock"),   # what the padding taps read
                Vec("Gather", Ref("panh"), (Ref("xh"), offs), taps),
                Vec("Cast", Ref("pan"), (Ref("panh"),), taps, mode=mode)]


def conv_tile_kernel(sched: ConvSchedule) -> TileKernel:
    return _ConvLowering(sched).kernel()
