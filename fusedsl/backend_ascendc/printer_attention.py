"""Ascend C for an attention kernel: flash attention as one MIX kernel (lower/attention.py).

Two Matmul objects (qk: S = Q K^T with K read transposed, pv: P V), both with C in UB, are
registered before any InitBuffer.  On 910B the Q block is copied once per item into a TSCM
buffer (user-managed L1, NZ, DataCopy with Nd2NzParams) and qk takes A from there, so Q is
read from GM once per Q block (lower.attention._l1_plan says when it fits).  On 310P
(coupled core) pv takes P as a VECOUT A straight from UB, so P never reaches GM there.  Each vector instance takes work items (head, Q block) in
turn; per KV block: Iterate/GetTensorC the S block into a VECIN queue, the online softmax row
by row in float32 (Muls by the scale, the mask row added (read through its broadcast strides; a
bool mask as 0 / -3e38), the causal diagonal set to -inf, the row max folded into
64 lanes and WholeReduceMax, Adds/Exp, the row sum, the rescale factor exp(m_old - m_new) on
the vector unit), P cast to the input dtype and copied to this instance's GM workspace (910B), then
Iterate/GetTensorC P V and O = O * corr + P V.  After the last block O / l is cast and written
once.  Causal items stop at their diagonal block.
"""
from __future__ import annotations


from .. import dtypes as dt
from ..lower.attention import AttentionSchedule, _up
from ..ir.ops import attention_operands
from ..lower.cube import TCUBE_FIELDS
from . import cnames
from .emit import camel
from .frame import KernelFrame


class AttentionPrinter(KernelFrame):
    TILING_SUFFIX = "AttentionTiling"
    WORD = "i"     # TCubeTiling's fields are int32
    MIX = True
    symbols = ()   # static shapes only: the host tiling takes no sizes

    def __init__(self, sched: AttentionSchedule, target, name: str, debug: bool | None = None):
        super().__init__(sched, target, name, debug)
        self.cn = {p.index: cnames.param(p.name) for p in sched.params}
        pvals = [p.value for p in sched.fn.params]
        q, k, v, self.mask, cos, sin = attention_operands(sched.op)
        self.q, self.k, self.v = (self.cn[pvals.index(x)] for x in (q, k, v))
        self.cos, self.sin = (self.cn[pvals.index(x)] if x is not None else None for x in (cos, sin))
        self.m = self.cn[pvals.index(self.mask)] if self.mask is not None else None

    # ---- interface shared with the other printers ----------------------------------------
    def _gm_args(self) -> list[str]:
        return [self.cn[p.index] for p in self.s.params] + ["y0"]

    def tiling_header(self) -> str:
        return (f"// {self.name} reads two TCubeTilings (CANN's kernel_tiling/kernel_tiling.h): Q K^T and P V\n"
                '#include "kernel_tiling/kernel_tiling.h"\n'
                f"struct {self.tiling} {{\n    TCubeTiling qk;\n    TCubeTiling pv;\n}};\n")

    def host_tiling(self) -> str:
        s = self.s
        sets = []
        for part, words in (("qk", s.cube_words(s.qk)), ("pv", s.cube_words(s.pv))):
            sets += [f"    out->{part}.{f} = {w};" for f, w in zip(TCUBE_FIELDS, words) if w]
        body = "\n".join(sets)
        return f"""// Host tiling for {self.name} on {self.t.name}: the two TCubeTilings fusedsl computed
// (lower/attention.py): Q blocks of {s.bq} rows, KV blocks of {s.bk} keys, one base block per product.
inline bool {camel(self.name)}Tiling(const int64_t* sizes, uint32_t vectorCores, uint32_t ubBudget, {self.tiling}* out)
{{
    (void)sizes; (void)vectorCores; (void)ubBudget;
    *out = {{}};
{body}
    return true;
}}
"""

    def heading(self) -> list[str]:
        return [f"// ---- {self.name}: attention from {cnames.comment(self.s.fn.loc)} ----",
                f"// {cnames.comment(self.s.plan_note)}"]

    # ---- the kernel ------------------------------------------------------------------------
    def kernel(self) -> str:
        s, t = self.s, self.t
        ty = s.dtype.ascendc
        item = s.dtype.itemsize
        ld_s, ld_o, ld_out = _up(s.bk, 8), _up(s.Dv, 8), _up(s.Dv, 32 // item)
        per_core = 2 if t.separated else 1
        bufs = {name: nbytes for name, _, nbytes in s.buffers()}
        gm = self._gm_args()
        args = ", ".join(f"GM_ADDR {x}" for x in gm)
        ws = []
        if not t.separated:
            ws = [f"        pipe->InitBuffer(b_mmws, {bufs['b_mmws']});",
                  "        qk.SetLocalWorkspace(b_mmws.Get<uint8_t>());",
                  "        pv.SetLocalWorkspace(b_mmws.Get<uint8_t>());"]
        cast_p = ("AscendC::Muls(prow, srow, 1.0f, cols);" if s.dtype == dt.float32 else
                  f"AscendC::Cast(prow, srow, AscendC::RoundMode::{self._mode()}, cols);")
        cast_o = ("AscendC::Muls(orow, orow2, 1.0f, Dv);" if s.dtype == dt.float32 else
                  f"AscendC::Cast(orow, orow2, AscendC::RoundMode::{self._mode()}, Dv);")
        mtype = f"AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, {ty}"
        atype = (f"AscendC::MatmulType<AscendC::TPosition::TSCM, CubeFormat::NZ, {ty}>" if s.q_l1_bytes
                 else f"AscendC::MatmulType<AscendC::TPosition::VECOUT, CubeFormat::ND, {ty}>" if s.q_ub_bytes
                 else f"{mtype}>")
        tscm_init = (f"\n        pipe->InitBuffer(q_l1, 1, {s.q_l1_bytes});   // the Q block in L1" if s.q_l1_bytes else
                     f"\n        pipe->InitBuffer(b_q, {s.q_ub_bytes});   // the Q block in UB" if s.q_ub_bytes else "")
        tscm_members = (f"\n    AscendC::TSCM<AscendC::TPosition::GM, 1> q_l1;   // user-managed L1: the Q block, NZ"
                        f"\n    AscendC::LocalTensor<{ty}> qL1;" if s.q_l1_bytes else
                        "\n    AscendC::TBuf<AscendC::TPosition::VECOUT> b_q;   // the Q block, rows E apart"
                        if s.q_ub_bytes else "")
        free_q = "\n        q_l1.FreeTensor(qL1);" if s.q_l1_bytes else ""
        # 310P: P is pv's A straight from UB (VECOUT); 910B: from this instance's GM workspace
        ptype = f"AscendC::MatmulType<AscendC::TPosition::VECOUT, CubeFormat::ND, {ty}>" if s.p_in_ub else f"{mtype}>"
        p_out = ("AscendC::PipeBarrier<PIPE_ALL>();   // P's vector writes reach the cube's UB -> L1 copy"
                 if s.p_in_ub else "AscendC::PipeBarrier<PIPE_ALL>();\n"
                 "        CopyRowsOut(gm_p, p, rows, cols, BK, BK);   // the cube reads P from GM\n"
                 "        AscendC::PipeBarrier<PIPE_ALL>();")
        p_a = f"b_p.Get<{ty}>()" if s.p_in_ub else "gm_p"
        p_pos = "VECOUT" if s.p_in_ub else "VECCALC"
        ctype = "AscendC::MatmulType<AscendC::TPosition::VECIN, CubeFormat::ND, float>"
        # one base block covers a product (written as it is), or (310P, c_cols) each base block is
        # written at its place in the tile, rows (cols + 7) / 8 * 8 apart either way
        seq = "false" if s.c_cols else "true"
        seq_note = (f"base blocks of {s.c_cols} columns, each at its place in the S block" if s.c_cols
                    else "one base block: the whole S block")
        return f"""#include "lib/matmul_intf.h"
class {self.cls} {{
public:
    __aicore__ inline {self.cls}() {{}}
    __aicore__ inline void Init({args}, GM_ADDR workspace, const {self.tiling}& t)
    {{
        tiling = t;
        gm_q.SetGlobalBuffer((__gm__ {ty}*){self.q});
        gm_k.SetGlobalBuffer((__gm__ {ty}*){self.k});
        gm_v.SetGlobalBuffer((__gm__ {ty}*){self.v});
        gm_y.SetGlobalBuffer((__gm__ {ty}*)y0);{self._mask_gm()}
        worker = AscendC::GetBlockIdx();
        workers = AscendC::GetBlockNum() * {per_core};
        AscendC::SetSysWorkspace(workspace);
        // this instance's P block: the user workspace after the Matmul API's system workspace
        gm_p.SetGlobalBuffer(reinterpret_cast<__gm__ {ty}*>(AscendC::GetUserWorkspace(workspace) +
                                                            worker * {s.instance_bytes}));{self._rope_gm()}
    }}

    // After REGIST_MATMUL_OBJ: the UB plan, then this instance's items.
    __aicore__ inline void Process(AscendC::TPipe* pipe)
    {{
{chr(10).join(ws)}
        pipe->InitBuffer(q_c, 1, {bufs['q_c']});
        pipe->InitBuffer(b_p, {bufs['b_p']});
        pipe->InitBuffer(b_o, {bufs['b_o']});
        pipe->InitBuffer(b_stat, {bufs['b_stat']});
        pipe->InitBuffer(b_lanes, {bufs['b_lanes']});
        pipe->InitBuffer(b_red, {bufs['b_red']});
        pipe->InitBuffer(b_one, {bufs['b_one']});{self._mask_init(bufs)}{self._rope_init(bufs)}{tscm_init}
        for (uint32_t it = worker; it < {s.items}u; it += workers) {{
            Item(it);
        }}
        qk.End();
        pv.End();
    }}

    AscendC::Matmul<{atype}, {mtype}, true>, {ctype}, {ctype}> qk;
    AscendC::Matmul<{ptype}, {mtype}>, {ctype}, {ctype}> pv;
    {self.tiling} tiling;

private:
    static constexpr uint32_t L = {s.L}, S = {s.S}, E = {s.E}, Dv = {s.Dv}, BQ = {s.bq}, BK = {s.bk};
    static constexpr uint32_t LDS = {ld_s}, LDO = {ld_o}, LDOUT = {ld_out};

    // A scalar read of a vector result, and a vector read of a scalar write, wait for the other pipe.
    __aicore__ inline void VectorToScalar()
    {{
        AscendC::SetFlag<AscendC::HardEvent::V_S>(EVENT_ID0);
        AscendC::WaitFlag<AscendC::HardEvent::V_S>(EVENT_ID0);
    }}
    __aicore__ inline void ScalarToVector()
    {{
        AscendC::SetFlag<AscendC::HardEvent::S_V>(EVENT_ID0);
        AscendC::WaitFlag<AscendC::HardEvent::S_V>(EVENT_ID0);
    }}
    // max / sum over n float32 elements: fold into 64 lanes, then one WholeReduce.
    __aicore__ inline float RowMax(const AscendC::LocalTensor<float>& src, uint32_t n)
    {{
        AscendC::LocalTensor<float> lanes = b_lanes.Get<float>();
        AscendC::LocalTensor<float> red = b_red.Get<float>();
        AscendC::Duplicate(lanes, -__builtin_inff(), 64);
        AscendC::PipeBarrier<PIPE_V>();
        for (uint32_t k = 0; k < n; k += 64) {{
            AscendC::Max(lanes, lanes, src[k], MinU32(64, n - k));
            AscendC::PipeBarrier<PIPE_V>();
        }}
        AscendC::WholeReduceMax<float>(red, lanes, 64, 1, 1, 1, 8);
        VectorToScalar();
        const float r = red.GetValue(0);
        AscendC::PipeBarrier<PIPE_ALL>();
        return r;
    }}
    __aicore__ inline float RowSum(const AscendC::LocalTensor<float>& src, uint32_t n)
    {{
        AscendC::LocalTensor<float> lanes = b_lanes.Get<float>();
        AscendC::LocalTensor<float> red = b_red.Get<float>();
        AscendC::Duplicate(lanes, 0.0f, 64);
        AscendC::PipeBarrier<PIPE_V>();
        for (uint32_t k = 0; k < n; k += 64) {{
            AscendC::Add(lanes, lanes, src[k], MinU32(64, n - k));
            AscendC::PipeBarrier<PIPE_V>();
        }}
        AscendC::WholeReduceSum<float>(red, lanes, 64, 1, 1, 1, 8);
        VectorToScalar();
        const float r = red.GetValue(0);
        AscendC::PipeBarrier<PIPE_ALL>();
        return r;
    }}
    // exp(x) of one float on the vector unit (device code has no libm)
    __aicore__ inline float ExpScalar(float x)
    {{
        AscendC::LocalTensor<float> one = b_one.Get<float>();
        AscendC::Duplicate(one, x, 8);
        AscendC::PipeBarrier<PIPE_V>();
        AscendC::Exp(one, one, 8);
        VectorToScalar();
        const float r = one.GetValue(0);
        AscendC::PipeBarrier<PIPE_ALL>();
        return r;
    }}

    // Work item `it`: head it / qBlocks, Q rows [r0, r0 + rows).
    __aicore__ inline void Item(uint32_t it)
    {{
        const uint32_t qBlocks = {s.q_blocks}u;
        const uint32_t head = it / qBlocks, r0 = (it % qBlocks) * BQ;
        const uint32_t rows = MinU32(BQ, L - r0);
        const uint32_t kvHead = head / {s.group}u;
        const uint32_t kvEnd = {"MinU32(S, r0 + rows)" if s.causal else "S"};   // causal: later blocks are skipped
        AscendC::LocalTensor<float> o = b_o.Get<float>();
        AscendC::LocalTensor<float> stat = b_stat.Get<float>();   // m at [0, BQ), l at [{_up(s.bq, 8)}, ...)
        for (uint32_t i = 0; i < BQ * LDO; i += 8192) {{   // a vector call covers at most 255 repeats
            AscendC::Duplicate(o[i], 0.0f, MinU32(8192, BQ * LDO - i));
        }}
        AscendC::PipeBarrier<PIPE_ALL>();
        for (uint32_t r = 0; r < rows; ++r) {{
            stat.SetValue(r, -__builtin_inff());
            stat.SetValue({_up(s.bq, 8)} + r, 0.0f);
        }}
        ScalarToVector();{self._rope_q()}{self._load_q()}
        for (uint32_t kb = 0; kb < kvEnd; kb += BK) {{
            const uint32_t cols = MinU32(BK, kvEnd - kb);
            Scores(head, kvHead, r0, rows, kb, cols);
            Softmax(head, r0, rows, kb, cols);
            Accumulate(kvHead, rows, kb, cols);
        }}{free_q}
        Finish(head, r0, rows);
    }}

{self._rotate_fn()}{self._load_q_fn()}
    // S = Q_blk K_blk^T into UB
    __aicore__ inline void Scores(uint32_t head, uint32_t kvHead, uint32_t r0, uint32_t rows, uint32_t kb,
                                  uint32_t cols)
    {{
{self._operands_qk()}
        qk.SetTail(rows, cols, E);
        AscendC::LocalTensor<float> sc = q_c.AllocTensor<float>();
        while (qk.template Iterate<true>()) {{
            qk.template GetTensorC<true>(sc, false, {seq});   // {seq_note}
        }}
        q_c.EnQue(sc);
    }}

    // The online softmax of the S block: P into the workspace, O rescaled.
    __aicore__ inline void Softmax(uint32_t head, uint32_t r0, uint32_t rows, uint32_t kb, uint32_t cols)
    {{
        AscendC::LocalTensor<float> sc = q_c.DeQue<float>();
        AscendC::LocalTensor<float> o = b_o.Get<float>();
        AscendC::LocalTensor<float> stat = b_stat.Get<float>();
        AscendC::LocalTensor<{ty}> p = b_p.Get<{ty}>();
        const uint32_t ld = (cols + 7) / 8 * 8;   // GetTensorC's row stride: 32 bytes
        for (uint32_t r = 0; r < rows; ++r) {{
            AscendC::LocalTensor<float> srow = sc[r * ld];
            AscendC::Muls(srow, srow, {self._f(s.scale)}, cols);
            AscendC::PipeBarrier<PIPE_V>();
{self._mask_lines()}{self._causal_lines()}
            const float mOld = stat.GetValue(r);
            const float top = {self._row_max()};
            const float mNew = top > mOld ? top : mOld;
            const float mUse = mNew == -__builtin_inff() ? 0.0f : mNew;   // a row with nothing to attend to yet
            AscendC::Adds(srow, srow, -mUse, cols);
            AscendC::PipeBarrier<PIPE_V>();
            AscendC::Exp(srow, srow, cols);
            AscendC::PipeBarrier<PIPE_V>();
            const float total = RowSum(srow, cols);
            const float corr = ExpScalar(mOld - mUse);
            stat.SetValue(r, mNew);
            stat.SetValue({_up(s.bq, 8)} + r, stat.GetValue({_up(s.bq, 8)} + r) * corr + total);
            ScalarToVector();
            AscendC::LocalTensor<float> orow = o[r * LDO];
            AscendC::Muls(orow, orow, corr, Dv);
            AscendC::LocalTensor<{ty}> prow = p[r * BK];
            {cast_p}
            AscendC::PipeBarrier<PIPE_V>();
        }}
        q_c.FreeTensor(sc);
        {p_out}
    }}

    // O += P V_blk
    __aicore__ inline void Accumulate(uint32_t kvHead, uint32_t rows, uint32_t kb, uint32_t cols)
    {{
        pv.SetTensorA({p_a});
        pv.SetTensorB(gm_v[{self._at("v", "kvHead", "kb")}]);
        pv.SetTail(rows, Dv, cols);
        AscendC::LocalTensor<float> acc = q_c.AllocTensor<float>();   // the S block's buffer, free again
        while (pv.template Iterate<true>()) {{
            pv.template GetTensorC<true>(acc, false, {seq});
        }}
        q_c.EnQue(acc);
        acc = q_c.DeQue<float>();
        AscendC::LocalTensor<float> o = b_o.Get<float>();
        for (uint32_t i = 0; i < rows * LDO; i += 8192) {{
            AscendC::Add(o[i], o[i], acc[i], MinU32(8192, rows * LDO - i));
        }}
        AscendC::PipeBarrier<PIPE_V>();
        q_c.FreeTensor(acc);
    }}

    // out = O / l (0 where no key was attended to), cast, written once
    __aicore__ inline void Finish(uint32_t head, uint32_t r0, uint32_t rows)
    {{
        AscendC::LocalTensor<float> o = b_o.Get<float>();
        AscendC::LocalTensor<float> stat = b_stat.Get<float>();
        AscendC::LocalTensor<{ty}> out = b_p.Get<{ty}>();   // P is not needed any more
        AscendC::PipeBarrier<PIPE_ALL>();
        for (uint32_t r = 0; r < rows; ++r) {{
            const float total = stat.GetValue({_up(s.bq, 8)} + r);
            const float inv = total > 0.0f ? 1.0f / total : 0.0f;
            ScalarToVector();
            AscendC::LocalTensor<float> orow2 = o[r * LDO];
            AscendC::Muls(orow2, orow2, inv, Dv);
            AscendC::PipeBarrier<PIPE_V>();
            AscendC::LocalTensor<{ty}> orow = out[r * LDOUT];
            {cast_o}
            AscendC::PipeBarrier<PIPE_V>();
        }}
        AscendC::PipeBarrier<PIPE_ALL>();   // the vector unit's writes reach the copy
        CopyRowsOut(gm_y[{self._at("o", "head", "r0")}], out, rows, Dv, {s.o_st[2]}, LDOUT);
        AscendC::PipeBarrier<PIPE_ALL>();   // P reuses the tile next
    }}

    AscendC::GlobalTensor<{ty}> gm_q, gm_k, gm_v, gm_y, gm_p;
    AscendC::TQue<AscendC::QuePosition::VECIN, 1> q_c;    // the S block, then the P V block, from GetTensorC
    AscendC::TBuf<AscendC::TPosition::{p_pos}> b_p;   // P, then the output rows
    AscendC::TBuf<AscendC::TPosition::VECCALC> b_o, b_stat, b_lanes, b_red, b_one;{self._mask_members()}{self._rope_members()}{tscm_members}
{"    AscendC::TBuf<AscendC::TPosition::VECCALC> b_mmws;   // 310P: C passes through UB" if not t.separated else ""}
    uint32_t worker = 0, workers = 1;
}};

{self._entry()}"""

    def _entry(self) -> str:
        return self.entry(self._gm_args() + ["workspace", "t"],
                          matmuls=["op.qk", "&op.tiling.qk", "op.pv", "&op.tiling.pv"])

    # ---- rope: each Q block and K block rotated into this instance's workspace --------------------
    def _rope_gm(self) -> str:
        if self.cos is None:
            return ""
        s, ty = self.s, self.s.dtype.ascendc
        qb, _ = s.rope_bytes
        return (f"\n        gm_cos.SetGlobalBuffer((__gm__ {ty}*){self.cos});"
                f"\n        gm_sin.SetGlobalBuffer((__gm__ {ty}*){self.sin});"
                "\n        // the rotated Q block and K block the cube reads (after this instance's P block)"
                f"\n        gm_qr.SetGlobalBuffer(reinterpret_cast<__gm__ {ty}*>(AscendC::GetUserWorkspace(workspace) +"
                f"\n                                                             worker * {s.instance_bytes} + {s.p_bytes}));"
                f"\n        gm_kr.SetGlobalBuffer(reinterpret_cast<__gm__ {ty}*>(AscendC::GetUserWorkspace(workspace) +"
                f"\n                                                             worker * {s.instance_bytes} + {s.p_bytes + qb}));")

    def _rope_init(self, bufs) -> str:
        if self.cos is None:
            return ""
        return "".join(f"\n        pipe->InitBuffer({n}, {bufs[n]});" for n in ("b_rx", "b_rt", "b_rf"))

    def _rope_members(self) -> str:
        if self.cos is None:
            return ""
        ty = self.s.dtype.ascendc
        return ("\n    AscendC::TBuf<AscendC::TPosition::VECCALC> b_rx, b_rt, b_rf;   // rope: a row, its cos and sin "
                f"rows, float32 work\n    AscendC::GlobalTensor<{ty}> gm_cos, gm_sin, gm_qr, gm_kr;")

    def _rope_q(self) -> str:
        if self.cos is None:
            return ""
        return (f"\n        Rotate(gm_qr, gm_q[{self._at('q', 'head', 'r0')}], rows, {self.s.q_st[2]}u, r0);"
                "   // Q block, rotated once per item")

    def _operands_qk(self) -> str:
        a = ("qL1" if self.s.q_l1_bytes else f"b_q.Get<{self.s.dtype.ascendc}>()" if self.s.q_ub_bytes
             else "gm_qr" if self.cos is not None else f'gm_q[{self._at("q", "head", "r0")}]')
        if self.cos is None:
            return (f'        qk.SetTensorA({a});\n'
                    f'        qk.SetTensorB(gm_k[{self._at("k", "kvHead", "kb")}], true);')
        return (f'        Rotate(gm_kr, gm_k[{self._at("k", "kvHead", "kb")}], cols, {self.s.k_st[2]}u, kb);'
                "   // this K block, rotated\n"
                f"        qk.SetTensorA({a});\n"
                "        qk.SetTensorB(gm_kr, true);")

    # ---- the Q block in L1 (TSCM): read from GM once per item ----------------------------------
    def _load_q(self) -> str:
        src, ld = (("gm_qr", "E") if self.cos is not None else
                   (f'gm_q[{self._at("q", "head", "r0")}]', f"{self.s.q_st[2]}u"))
        if self.s.q_ub_bytes:   # 310P: into UB once; the core copies it UB -> L1 for each Q K^T
            return ("\n        AscendC::PipeBarrier<PIPE_ALL>();"
                    f"\n        CopyRowsIn(b_q.Get<{self.s.dtype.ascendc}>(), {src}, rows, E, {ld}, E);"
                    "   // Q once into UB"
                    "\n        AscendC::PipeBarrier<PIPE_ALL>();")
        if not self.s.q_l1_bytes:
            return ""
        return f"\n        LoadQ({src}, rows, {ld});   // Q once into L1; every Q K^T of this item reads it there"

    def _load_q_fn(self) -> str:
        if not self.s.q_l1_bytes:
            return ""
        ty = self.s.dtype.ascendc
        return f"""
    // `rows` rows of Q (ld elements apart) into the TSCM buffer in NZ: column blocks of 32 bytes,
    // each (rows rounded up to 16) rows high, as the Matmul reads a TSCM A of singleCoreM = rows.
    // On 910B the AIC carries the copy out (one GM read) for this vector instance.
    __aicore__ inline void LoadQ(const AscendC::GlobalTensor<{ty}>& src, uint32_t rows, uint32_t ld)
    {{
        qL1 = q_l1.AllocTensor<{ty}>();
        AscendC::Nd2NzParams nd;
        nd.ndNum = 1;
        nd.nValue = rows;
        nd.dValue = E;
        nd.srcNdMatrixStride = 0;
        nd.srcDValue = ld;
        nd.dstNzC0Stride = (rows + 15) / 16 * 16;
        nd.dstNzNStride = 1;
        nd.dstNzMatrixStride = 0;
        AscendC::DataCopy(qL1, src, nd);
        q_l1.EnQue(qL1);
        qL1 = q_l1.DeQue<{ty}>();
    }}
"""

    def _rotate_fn(self) -> str:
        """Rotate(dst, src, rows, ld, pos0): rows of src (ld apart) rotated with the tables' rows at
        positions pos0.., written E apart to dst: out = x * cos + [-x2, x1] * sin, in float32."""
        if self.cos is None:
            return ""
        s, ty = self.s, self.s.dtype.ascendc
        e, h, item = s.E, s.E // 2, s.dtype.itemsize
        ei = _up(e, 32 // item)        # a row as stored, padded to 32 bytes
        to_f = ((lambda d, x: f"AscendC::Muls({d}, {x}, 1.0f, E);") if s.dtype == dt.float32 else
                (lambda d, x: f"AscendC::Cast({d}, {x}, AscendC::RoundMode::CAST_NONE, E);"))
        back = ("AscendC::Muls(xr, f[3 * E], 1.0f, E);" if s.dtype == dt.float32 else
                f"AscendC::Cast(xr, f[3 * E], AscendC::RoundMode::{self._mode()}, E);")
        return f"""    // rope of `rows` rows of q or k (ld apart) at positions pos0..: x * cos + [-x2, x1] * sin in float32,
    // written E apart to this instance's workspace, which the cube reads
    __aicore__ inline void Rotate(const AscendC::GlobalTensor<{ty}>& dst, const AscendC::GlobalTensor<{ty}>& src,
                                  uint32_t rows, uint32_t ld, uint32_t pos0)
    {{
        AscendC::LocalTensor<{ty}> xr = b_rx.Get<{ty}>();
        AscendC::LocalTensor<{ty}> tr = b_rt.Get<{ty}>();
        AscendC::LocalTensor<float> f = b_rf.Get<float>();   // x | cos | sin | out, E floats each
        for (uint32_t r = 0; r < rows; ++r) {{
            AscendC::PipeBarrier<PIPE_ALL>();
            CopyRowsIn(xr, src[r * ld], 1, E, E, {ei});
            CopyRowsIn(tr, gm_cos[(pos0 + r) * {s.rope_row}u], 1, E, E, {ei});
            CopyRowsIn(tr[{ei}], gm_sin[(pos0 + r) * {s.rope_row}u], 1, E, E, {ei});
            AscendC::PipeBarrier<PIPE_ALL>();
            {to_f("f", "xr")}
            {to_f("f[E]", "tr")}
            {to_f("f[2 * E]", f"tr[{ei}]")}
            AscendC::PipeBarrier<PIPE_V>();
            AscendC::Mul(f[3 * E], f, f[E], E);                  // x * cos
            AscendC::PipeBarrier<PIPE_V>();
            AscendC::Mul(f[E], f[{h}], f[2 * E], {h});            // x2 * sin1 (cos is read)
            AscendC::Mul(f[E + {h}], f, f[2 * E + {h}], {h});     // x1 * sin2
            AscendC::PipeBarrier<PIPE_V>();
            AscendC::Sub(f[3 * E], f[3 * E], f[E], {h});
            AscendC::Add(f[3 * E + {h}], f[3 * E + {h}], f[E + {h}], {h});
            AscendC::PipeBarrier<PIPE_V>();
            {back}
            AscendC::PipeBarrier<PIPE_ALL>();
            CopyRowsOut(dst[r * E], xr, 1, E, E, {ei});
        }}
        AscendC::PipeBarrier<PIPE_ALL>();   // the rotated rows reach GM before the cube reads them
    }}
"""

    # ---- the mask: one row of the S block at a time, through its broadcast strides ------------------
    def _mask_gm(self) -> str:
        if self.mask is None:
            return ""
        return f"\n        gm_m.SetGlobalBuffer((__gm__ {self.mask.dtype.ascendc}*){self.m});"

    def _mask_init(self, bufs) -> str:
        if self.mask is None:
            return ""
        names = ["b_m", "b_mf"] + (["b_mh"] if self.mask.dtype == dt.bool_ else [])
        return "".join(f"\n        pipe->InitBuffer({n}, {bufs[n]});" for n in names)

    def _mask_members(self) -> str:
        if self.mask is None:
            return ""
        extra = ", b_mh" if self.mask.dtype == dt.bool_ else ""
        return (f"\n    AscendC::TBuf<AscendC::TPosition::VECCALC> b_m, b_mf{extra};   // a mask row, as stored "
                f"and as float32\n    AscendC::GlobalTensor<{self.mask.dtype.ascendc}> gm_m;")

    def _mask_offset(self) -> str:
        """The C++ offset of the mask's row for query row r0 + r of `head` (broadcast axes: 0)."""
        terms, inner = [], 1
        for size, stride in reversed(self.s.mask_lead):
            if stride:
                terms.append(f"(head / {inner}u % {size}u) * {stride}u")
            inner *= size
        if self.s.mask_row:
            terms.append(f"(r0 + r) * {self.s.mask_row}u")
        return " + ".join(terms + ["kb"])

    def _mask_lines(self) -> str:
        if self.mask is None:
            return ""
        m = self.mask.dtype
        ld = _up(self.s.bk, 32 // m.itemsize)
        lines = [f"AscendC::LocalTensor<{m.ascendc}> mrow = b_m.Get<{m.ascendc}>();",
                 "AscendC::LocalTensor<float> mf = b_mf.Get<float>();",
                 "AscendC::PipeBarrier<PIPE_ALL>();",
                 f"CopyRowsIn(mrow, gm_m[{self._mask_offset()}], 1, cols, cols, {ld});",
                 "AscendC::PipeBarrier<PIPE_ALL>();"]
        if m == dt.bool_:   # 1 -> 0, 0 -> -3e38: added to the scores (see _row_max for whole rows)
            lines += ["AscendC::LocalTensor<half> mh = b_mh.Get<half>();",
                      "AscendC::Cast(mh, mrow, AscendC::RoundMode::CAST_NONE, cols);",
                      "AscendC::PipeBarrier<PIPE_V>();",
                      "AscendC::Cast(mf, mh, AscendC::RoundMode::CAST_NONE, cols);",
                      "AscendC::PipeBarrier<PIPE_V>();",
                      "AscendC::Adds(mf, mf, -1.0f, cols);",
                      "AscendC::PipeBarrier<PIPE_V>();",
                      "AscendC::Muls(mf, mf, 3.0e38f, cols);",
                      "AscendC::PipeBarrier<PIPE_V>();"]
        elif m == dt.float16:
            lines += ["AscendC::Cast(mf, mrow, AscendC::RoundMode::CAST_NONE, cols);",
                      "AscendC::PipeBarrier<PIPE_V>();"]
        else:
            lines += ["AscendC::Muls(mf, mrow, 1.0f, cols);", "AscendC::PipeBarrier<PIPE_V>();"]
        lines += ["AscendC::Add(srow, srow, mf, cols);", "AscendC::PipeBarrier<PIPE_V>();"]
        return "".join(f"            {x}\n" for x in lines)

    def _row_max(self) -> str:
        if self.mask is not None and self.mask.dtype == dt.bool_:
            # a block row with every key masked (all near -3e38) counts as -inf: nothing to attend to
            return "[&] { const float t = RowMax(srow, cols); return t < -1.0e38f ? -__builtin_inff() : t; }()"
        return "RowMax(srow, cols)"

    def _at(self, which: str, head: str, row: str) -> str:
        """The C++ element offset of `row` of flat head `head` in q, k, v or the output: the flat
        index splits into (batch, head) and each part has its stride (layout bhsd or bshd)."""
        s = self.s
        per = s.heads_per_batch if which in ("q", "o") else s.kv_heads
        bs, hs, rs = {"q": s.q_st, "k": s.k_st, "v": s.v_st, "o": s.o_st}[which]
        off = s.offsets.get(which, 0)
        return f"{off}u + " * bool(off) + f"({head} / {per}u) * {bs}u + ({head} % {per}u) * {hs}u + {row} * {rs}u"

    def _causal_lines(self) -> str:
        if not self.s.causal:
            return ""
        # keys past the row's own position (top-left alignment) are -inf; only the diagonal
        # block has any, set one by one (the start is not 32-byte aligned)
        return """            if (kb + cols > r0 + r + 1) {
                AscendC::PipeBarrier<PIPE_ALL>();
                const uint32_t first = r0 + r + 1 > kb ? r0 + r + 1 - kb : 0;
                for (uint32_t j = first; j < cols; ++j) srow.SetValue(j, -__builtin_inff());
                ScalarToVector();
            }"""

    def _mode(self) -> str:
        modes = self.t.cast_modes.get(("float", self.s.dtype.ascendc), frozenset())
        return "CAST_RINT" if "CAST_RINT" in modes else "CAST_NONE"

    @staticmethod
    def _f(x: float) -> str:
        return f"{float(x)!r}f" if "e" not in repr(float(x)) else f"{float(x):.9e}f"
