"""Ascend C for a column reduction: a lone sum/mean/max/min over axes other than the last
(schedule_reduce.ColumnSchedule, the [A, K, B] view with B > 1).

A tile is `bn` consecutive outputs out[a, b0 : b0+bn]. Per tile: the float32 accumulator is
set to the identity; k walks 0..K-1 in groups of `kt` rows, each group one strided CopyIn
(rows B elements apart in GM, bnPad apart in UB), each row added (Add/Max/Min; 16-bit rows
cast to float32 first) into the accumulator; mean divides by K; CopyOut rounds once to the
result dtype. Cores take contiguous tile ranges and never split K: no partial results exist.
"""
from __future__ import annotations

import os
import struct

from .. import dtypes as dt
from ..schedule_reduce import ColumnSchedule
from . import cnames
from .printer import AscendCPrinter, camel, literal
from .printer_row import _BINARY, _IDENTITY   # identities and fold ops of the four reductions



class ColumnPrinter:
    _helpers = AscendCPrinter._helpers
    _cpu_hooks = AscendCPrinter._cpu_hooks

    def __init__(self, sched: ColumnSchedule, target, name: str, debug: bool | None = None):
        self.s = sched
        self.t = target
        self.name = name
        self.cls = "Kernel" + camel(name)
        self.tiling = camel(name) + "TilingData"
        self.debug = os.environ.get("FUSEDSL_DEBUG") == "1" if debug is None else debug
        self.symbols = []
        self.x = cnames.param(sched.params[0].name)

    def _gm_args(self) -> list[str]:
        return [self.x, "y0"]

    def pack(self, tiling, scalars) -> bytes:
        words = tiling.words
        return struct.pack(f"<{len(words)}I", *words)

    def tiling_header(self) -> str:
        fields = ["A", "K", "B", "bn", "kt", "colTiles", "totalTiles", "tilesPerCore", "blockDim"]
        return "\n".join([f"// Tiling data of {self.name} (a column reduction of an [A, K, B] view).",
                          f"struct {self.tiling} {{"] + [f"    uint32_t {f};" for f in fields] + ["};"]) + "\n"

    def host_tiling(self) -> str:
        s, t = self.s, self.t
        item = s.op.result.dtype.itemsize
        line = []
        if not t.has_datacopypad:   # SetValue tails: no two cores may share a 64-byte GM line
            line = ["    for (bool shared = true; shared && perCore < total;) {",
                    "        shared = false;",
                    "        for (uint64_t s = perCore; s < total && !shared; s += perCore)",
                    f"            shared = (s / colTiles * B + s % colTiles * bn) * {item} % 64 != 0;",
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
            f"    uint64_t want = (A * K * B * {s.op.operands[0].dtype.itemsize} + {16383}) / 16384;",
            "    want = std::max<uint64_t>(1, std::min<uint64_t>({uint64_t(vectorCores), want, total}));",
            "    uint64_t perCore = (total + want - 1) / want;",
            *line,
            "    t->totalTiles = uint32_t(total); t->tilesPerCore = uint32_t(perCore);",
            "    t->blockDim = uint32_t((total + perCore - 1) / perCore);",
            "    return true;",
            "}"]) + "\n"

    def kernel(self) -> str:
        s = self.s
        x, xt = self.x, s.op.operands[0].dtype
        yt = s.op.result.dtype
        op = s.op.name
        wide = xt != dt.float32
        ident = literal(_IDENTITY[op], dt.float32)
        src = "wide" if wide else "in[r * bnPad]"
        cast_in = (["                AscendC::Cast(wide, in[r * bnPad], AscendC::RoundMode::CAST_NONE, n);",
                    "                AscendC::PipeBarrier<PIPE_V>();"] if wide else [])
        if yt == dt.float32:
            store = ["        AscendC::Muls(out, acc, 1.0f, n);   // an exact copy into the output queue"]
        else:   # rounded once to the result dtype
            modes = self.t.cast_modes.get(("float", yt.ascendc), frozenset())
            mode = "CAST_RINT" if "CAST_RINT" in modes else "CAST_NONE"   # as the vector scheduler picks
            store = [f"        AscendC::Cast(out, acc, AscendC::RoundMode::{mode}, n);"]
        mean = []
        if op == "mean":
            mean = ["        AscendC::Duplicate(wideK, static_cast<float>(tiling.K), n);",
                    "        AscendC::PipeBarrier<PIPE_V>();",
                    "        AscendC::Div(acc, acc, wideK, n);",
                    "        AscendC::PipeBarrier<PIPE_V>();"]
        L = [f"// {self.name}: {cnames.comment(s.plan_note)}",
             f"class {self.cls} {{",
             "public:",
             f"    __aicore__ inline {self.cls}() {{}}",
             f"    __aicore__ inline void Init(GM_ADDR {x}, GM_ADDR y0, const {self.tiling}& t)",
             "    {",
             "        tiling = t;",
             f"        bnPad = (t.bn * sizeof({xt.ascendc}) + 31) / 32 * 32 / sizeof({xt.ascendc});",
             f"        gm_x.SetGlobalBuffer((__gm__ {xt.ascendc}*){x});",
             f"        gm_y.SetGlobalBuffer((__gm__ {yt.ascendc}*)y0);",
             f"        pipe.InitBuffer(q_x, 2, t.kt * bnPad * sizeof({xt.ascendc}));",
             f"        pipe.InitBuffer(q_y, 2, t.bn * sizeof({yt.ascendc}));",
             "        pipe.InitBuffer(b_acc, t.bn * sizeof(float));",
             *(["        pipe.InitBuffer(b_wide, t.bn * sizeof(float));"] if wide or op == "mean" else []),
             "    }",
             "",
             "    __aicore__ inline void Process()",
             "    {",
             "        const uint32_t first = AscendC::GetBlockIdx() * tiling.tilesPerCore;",
             "        const uint32_t last = MinU32(tiling.totalTiles, first + tiling.tilesPerCore);",
             "        AscendC::LocalTensor<float> acc = b_acc.Get<float>();",
             *(["        AscendC::LocalTensor<float> wide = b_wide.Get<float>();"] if wide else []),
             *(["        AscendC::LocalTensor<float> wideK = b_wide.Get<float>();"] if op == "mean" else []),
             "        for (uint32_t tile = first; tile < last; ++tile) {",
             "            const uint32_t a = tile / tiling.colTiles;",
             "            const uint32_t b0 = (tile % tiling.colTiles) * tiling.bn;",
             "            const uint32_t n = MinU32(tiling.bn, tiling.B - b0);",
             f"            AscendC::Duplicate(acc, {ident}, n);",
             "            AscendC::PipeBarrier<PIPE_V>();",
             "            for (uint32_t k0 = 0; k0 < tiling.K; k0 += tiling.kt) {",
             "                const uint32_t rows = MinU32(tiling.kt, tiling.K - k0);",
             "                CopyIn(a, k0, b0, rows, n);",
             f"                AscendC::LocalTensor<{xt.ascendc}> in = q_x.DeQue<{xt.ascendc}>();",
             "                for (uint32_t r = 0; r < rows; ++r) {",
             *["    " + c for c in cast_in],
             f"                    AscendC::{_BINARY[op]}(acc, acc, {src}, n);",
             "                    AscendC::PipeBarrier<PIPE_V>();",
             "                }",
             "                q_x.FreeTensor(in);",
             "            }",
             *["    " + m for m in mean],
             f"            AscendC::LocalTensor<{yt.ascendc}> out = q_y.AllocTensor<{yt.ascendc}>();",
             *["    " + st for st in store],
             "            q_y.EnQue(out);",
             "            CopyOut(a, b0, n);",
             "        }",
             "    }",
             "",
             "private:",
             "    // rows k0 .. k0+rows of x[a, :, b0 : b0+n]: GM rows B elements apart, UB rows bnPad apart",
             "    __aicore__ inline void CopyIn(uint32_t a, uint32_t k0, uint32_t b0, uint32_t rows, uint32_t n)",
             "    {",
             f"        AscendC::LocalTensor<{xt.ascendc}> in = q_x.AllocTensor<{xt.ascendc}>();",
             "        CopyRowsIn(in, gm_x[(a * tiling.K + k0) * tiling.B + b0], rows, n, tiling.B, bnPad);",
             "        q_x.EnQue(in);",
             "    }",
             "    __aicore__ inline void CopyOut(uint32_t a, uint32_t b0, uint32_t n)",
             "    {",
             f"        AscendC::LocalTensor<{yt.ascendc}> out = q_y.DeQue<{yt.ascendc}>();",
             "        CopyRowsOut(gm_y[a * tiling.B + b0], out, 1, n, n, n);",
             "        q_y.FreeTensor(out);",
             "    }",
             "",
             "    AscendC::TPipe pipe;",
             "    AscendC::TQue<AscendC::QuePosition::VECIN, 1> q_x;",
             "    AscendC::TQue<AscendC::QuePosition::VECOUT, 1> q_y;",
             "    AscendC::TBuf<AscendC::TPosition::VECCALC> b_acc;",
             *(["    AscendC::TBuf<AscendC::TPosition::VECCALC> b_wide;"] if wide or op == "mean" else []),
             f"    AscendC::GlobalTensor<{xt.ascendc}> gm_x;",
             f"    AscendC::GlobalTensor<{yt.ascendc}> gm_y;",
             f"    {self.tiling} tiling;",
             "    uint32_t bnPad = 0;",
             "};", ""]
        macro = "    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);\n" if self.t.kernel_type_macro else ""
        L.append(f"""extern "C" __global__ __aicore__ void {self.name}(GM_ADDR {x}, GM_ADDR y0, GM_ADDR workspace, GM_ADDR tiling)
{{
{macro}    (void)workspace;
    {self.tiling} t;
    const __gm__ uint32_t* words = reinterpret_cast<const __gm__ uint32_t*>(tiling);
    uint32_t* dst = reinterpret_cast<uint32_t*>(&t);
    for (uint32_t i = 0; i < sizeof(t) / sizeof(uint32_t); ++i) dst[i] = words[i];
    {self.cls} op;
    op.Init({x}, y0, t);
    op.Process();
}}
""")
        return "\n".join(L)

    def body(self) -> str:
        return "\n".join([f"// ---- {self.name}: a column reduction from {cnames.comment(self.s.fn.loc)} ----",
                          self.tiling_header(), self.kernel(), "#ifndef __CCE_AICORE__  // host side",
                          self.host_tiling(), "#endif", self._cpu_hooks()])
