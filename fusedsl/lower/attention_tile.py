"""The loop-level tile IR of an attention kernel (lower/attention.py `AttentionSchedule`): flash
attention as one MIX kernel, what printer_kernel.py prints and kernel_interp.py runs.

Two Matmul objects (qk: S = Q K^T with K read transposed, pv: P V), both with C in UB, each with
its own TCubeTiling (the members qk and pv of the kernel's tiling struct).  On 910B the Q block
is copied once per item into a TSCM queue (user-managed L1, NZ) and qk takes A from there, so Q
is read from GM once per Q block (lower.attention._l1_plan says when it fits); on 310P the Q
block may sit in a VECOUT TBuf instead, and pv takes P as a VECOUT A straight from UB, so P never
reaches GM there.  Each vector instance takes work items (head, Q block) in turn (Process:
`it = block, block + workers, ...`); per KV block of an item (stage Item):

    Q K^T        SetTensorA/B (the rotated K block first, with rope), SetTail(rows, cols, E),
                 Iterate / GetTensorC into a VECIN queue
    softmax      row by row in float32: Muls by the scale, the mask row added (read through its
                 broadcast strides; a bool mask as 0 / -3e38), the causal diagonal set to -inf,
                 the row max folded into 64 lanes and WholeReduceMax, Adds / Exp, the row sum,
                 the rescale factor exp(m_old - m_new) on the vector unit (device code has no
                 libm), m and l kept per row (SetValue / GetValue), O rescaled, P cast to the input
                 dtype (and on 910B copied to this instance's GM workspace)
    P V          Iterate / GetTensorC, O += P V

After the last block O / l is cast and written once.  Causal items stop at their diagonal block.
With rope, q and k are rotated (x cos + [-x2, x1] sin, in float32) into this instance's
workspace as they are read (stages RotateQ / RotateK).
"""
from __future__ import annotations

from .. import dtypes as dt
from ..ir.ops import attention_operands
from ..tile.kernel import (Alloc, Barrier, Call, CopyIn, CopyNz, CopyOut, DeQue, Dup, EnQue, Field, For, Free, Gm, If,
                           Let, Matmul, Member, MmEnd, MmGetC, MmIterate, MmSet, MmTail, Operand, Put, Queue, Ref,
                           Return, Scalar, Set, Stage, Sync, TileKernel, Vec, add, mul, output_names)
from .attention import AttentionSchedule, _up
from .cube import TCUBE_FIELDS

_INF = float("inf")
_CHUNK = 8192   # a vector call covers at most 255 repeats: O is cleared / accumulated in chunks


class _AttentionLowering:
    def __init__(self, sched: AttentionSchedule):
        self.s = s = sched
        self.t = sched.target
        self.ty = s.dtype
        q, k, v, self.mask, cos, sin = attention_operands(s.op)
        pvals = [p.value for p in s.fn.params]
        name = {id(pvals[p.index]): p.name for p in s.params}
        self.q, self.k, self.v = (name[id(x)] for x in (q, k, v))
        self.cos, self.sin = (name[id(x)] if x is not None else None for x in (cos, sin))
        self.m = name[id(self.mask)] if self.mask is not None else None
        self.out = output_names(s.params, 1)[0]
        self.ldq = _up(s.bq, 8)   # l's offset in the stat buffer (m at [0, BQ))
        self.bufs = {n: nbytes for n, _, nbytes in s.buffers()}
        self.modes = self.t.cast_modes.get(("float", self.ty.ascendc), frozenset())

    def mode(self) -> str:
        return "CAST_RINT" if "CAST_RINT" in self.modes else "CAST_NONE"

    # ---- the kernel ---------------------------------------------------------------------------
    def kernel(self) -> TileKernel:
        s, ty = self.s, self.ty
        fields = [Field(f"{part}_{f}") for part in ("qk", "pv") for f in TCUBE_FIELDS]
        gms = [Gm(p.name, p.dtype, "in", p.index) for p in s.params]
        gms.append(Gm(self.out, ty, "out", 0))
        item = ty.itemsize
        # this instance's slice of the workspace: its P block (910B), then the rotated Q and K blocks
        if not s.p_in_ub:
            gms.append(Gm("p", ty, "work", s.instance_bytes, 0, s.p_bytes // item))
        if self.cos is not None:
            qb, kb = s.rope_bytes
            gms += [Gm("qr", ty, "work", s.instance_bytes, s.p_bytes, qb // item),
                    Gm("kr", ty, "work", s.instance_bytes, s.p_bytes + qb, kb // item)]
        queues = self.queues()
        members = [Member(n) for n in ("head", "r0", "rows", "kvHead", "kb", "cols", "rsrc", "rrows", "rld", "rpos")]
        q_a = (Operand("TSCM", "NZ", ty) if s.q_l1_bytes else Operand("VECOUT", "ND", ty) if s.q_ub_bytes
               else Operand("GM", "ND", ty))
        ws = "" if self.t.separated else "b_mmws"
        c = Operand("VECIN", "ND", dt.float32)
        mms = (Matmul("qk", q_a, Operand("GM", "ND", ty, True), c, ws, "qk"),
               Matmul("pv", Operand("VECOUT" if s.p_in_ub else "GM", "ND", ty), Operand("GM", "ND", ty), c, ws, "pv"))
        stages = [self.item()]
        if self.cos is not None:
            stages += [self.rotate("RotateQ", "qr", self.q), self.rotate("RotateK", "kr", self.k)]
        workers = s.workers
        if s.causal:
            # a causal item's work grows with its Q block (it stops at the diagonal) and items are
            # numbered head by head, so `it = block + i * workers` can hand one instance the last
            # Q block of two heads: odd rounds run the other way (serpentine), pairing long with short
            rounds = -(-s.items // workers)
            it = ("sel", ("==", ("%", "round", 2), 0), ("+", ("*", "round", workers), "block"),
                  ("-", ("*", ("+", "round", 1), workers), ("+", "block", 1)))
            take = (Let("it", it), If(("<", "it", s.items), (Call("Item", "it"),)))
            loop = For("round", 0, rounds, take)
        else:
            loop = For("it", "block", s.items, (Call("Item", "it"),), step=workers)
        process = (If((">=", "block", workers), (Return(),)),   # instances past the items' workers idle
                   loop, MmEnd("qk"), MmEnd("pv"))
        words = tuple(s.cube_words(s.qk)) + tuple(s.cube_words(s.pv))
        return TileKernel(s.fn.name, "attention", s.plan_note, fields, gms, queues, members, stages, words, mms,
                          "TCubeTiling", process, workers)

    def queues(self) -> list:
        s, ty, b = self.s, self.ty, self.bufs
        f32 = dt.float32

        def q(name, position, dtype, depth=1):
            return Queue(name, position, depth, dtype, b[name] // dtype.itemsize)
        L = []
        if not self.t.separated:
            L.append(q("b_mmws", "VECCALC", f32))
        L += [q("q_c", "VECIN", f32), q("b_p", "TBUF_VECOUT" if s.p_in_ub else "VECCALC", ty), q("b_o", "VECCALC", f32),
              q("b_stat", "VECCALC", f32), q("b_lanes", "VECCALC", f32), q("b_red", "VECCALC", f32),
              q("b_one", "VECCALC", f32)]
        if self.mask is not None:
            L += [q("b_m", "VECCALC", self.mask.dtype), q("b_mf", "VECCALC", f32)]
            if self.mask.dtype == dt.bool_:
                L.append(q("b_mh", "VECCALC", dt.float16))
        if self.cos is not None:
            L += [q("b_rx", "VECCALC", ty), q("b_rt", "VECCALC", ty), q("b_rf", "VECCALC", f32)]
        if s.q_l1_bytes:
            L.append(Queue("q_l1", "TSCM", 1, ty, s.q_l1_bytes // ty.itemsize))
        elif s.q_ub_bytes:
            L.append(Queue("b_q", "TBUF_VECOUT", 1, ty, s.q_ub_bytes // ty.itemsize))
        return L

    def at(self, which: str, head, row):
        """The element offset of `row` of flat head `head` in q, k, v or the output: the flat index
        splits into (batch, head) and each part has its stride (layout bhsd or bshd)."""
        s = self.s
        per = s.heads_per_batch if which in ("q", "o") else s.kv_heads
        bs, hs, rs = {"q": s.q_st, "k": s.k_st, "v": s.v_st, "o": s.o_st}[which]
        return add(s.offsets.get(which, 0), mul(("/", head, per), bs), mul(("%", head, per), hs), mul(row, rs))

    # ---- one work item ------------------------------------------------------------------------
    def item(self) -> Stage:
        s = self.s
        qb = s.q_blocks
        bq_ld = ("*", s.bq, _up(s.Dv, 8))
        L: list = [Set("head", ("/", "it", qb)), Set("r0", ("*", ("%", "it", qb), s.bq)),
                   Set("rows", ("min", s.bq, ("-", s.L, "r0"))), Set("kvHead", ("/", "head", s.group)),
                   Let("kvEnd", ("min", s.S, ("+", "r0", "rows")) if s.causal else s.S),
                   Alloc("o", "b_o"), Alloc("stat", "b_stat"),
                   For("i", 0, bq_ld, (Dup(Ref("o", "i"), 0.0, ("min", _CHUNK, ("-", bq_ld, "i"))),), step=_CHUNK),
                   Barrier(),
                   For("r", 0, "rows", (Put("stat", "r", -_INF), Put("stat", ("+", self.ldq, "r"), 0.0))),
                   Sync("S_V")]
        if self.cos is not None:   # the Q block, rotated once per item
            L += [Set("rsrc", self.at("q", "head", "r0")), Set("rrows", "rows"), Set("rld", s.q_st[2]),
                  Set("rpos", "r0"), Call("RotateQ")]
        src, ld = ("qr", s.E) if self.cos is not None else (self.q, s.q_st[2])
        src_off = 0 if self.cos is not None else self.at("q", "head", "r0")
        if s.q_ub_bytes:   # 310P: into UB once; the core copies it UB -> L1 for each Q K^T
            L += [Alloc("qU", "b_q"), Barrier(), CopyIn("qU", src, src_off, "rows", s.E, ld, s.E), Barrier()]
        elif s.q_l1_bytes:   # into L1 once: every Q K^T of this item reads it there
            L += [Alloc("qL1", "q_l1"), CopyNz("qL1", src, src_off, "rows", s.E, ld), EnQue("q_l1", "qL1"),
                  DeQue("qL1", "q_l1")]
        body = [Set("kb", "kb0"), Set("cols", ("min", s.bk, ("-", "kvEnd", "kb0")))]
        body += self.scores() + self.softmax() + self.accumulate()
        L.append(For("kb0", 0, "kvEnd", tuple(body), step=s.bk))
        if s.q_l1_bytes:
            L.append(Free("q_l1", "qL1"))
        L += self.finish()
        return Stage("Item", "it", tuple(L))

    def scores(self) -> list:
        """S = Q_blk K_blk^T into UB."""
        s = self.s
        L: list = []
        if self.cos is not None:   # this K block, rotated
            L += [Set("rsrc", self.at("k", "kvHead", "kb")), Set("rrows", "cols"), Set("rld", s.k_st[2]),
                  Set("rpos", "kb"), Call("RotateK")]
        a = ("qL1", 0) if s.q_l1_bytes else ("qU", 0) if s.q_ub_bytes else \
            ("qr", 0) if self.cos is not None else (self.q, self.at("q", "head", "r0"))
        b = ("kr", 0) if self.cos is not None else (self.k, self.at("k", "kvHead", "kb"))
        placed = bool(s.c_cols)   # 310P with base blocks narrower than the S block: each at its place
        return L + [MmSet("qk", "A", *a), MmSet("qk", "B", *b), MmTail("qk", "rows", "cols", s.E),
                    Alloc("sc", "q_c"), MmIterate("qk", (MmGetC("qk", "sc", placed),)), EnQue("q_c", "sc")]

    def softmax(self) -> list:
        """The online softmax of the S block: P (into the workspace on 910B), O rescaled.  What
        needs one value per row (the max, the sum, the rescale factor: the vector unit has no
        per-row broadcast here) runs row by row; what does not -- the scale, Exp, P's cast when
        its rows are S's rows -- runs once over the block, and exp(m_old - m_new) of every row in
        one call: per-row calls cost their fixed overhead per row (tile/kernel_cost.py)."""
        s = self.s
        srow = lambda off=0: Ref("sc", add(("*", "r", "ld"), off))   # noqa: E731
        block = ("*", "rows", "ld")
        first: list = self.mask_lines(srow())
        if s.causal:   # keys past the row's own position (top-left alignment) are -inf
            pos = ("+", ("+", "r0", "r"), 1)
            # (the scalar unit up to the first 32-byte boundary, one Duplicate from there: a vector
            # call's address must be 32-byte aligned, and S's rows are)
            first.append(If((">", ("+", "kb", "cols"), pos), (
                Barrier(), Let("first", ("-", pos, ("min", "kb", pos))),
                Let("aligned", ("min", "cols", ("pad", "first", 8))),
                For("j", "first", "aligned", (Put("sc", ("+", ("*", "r", "ld"), "j"), -_INF),)), Sync("S_V"),
                If((">", "cols", "aligned"),
                   (Dup(Ref("sc", ("+", ("*", "r", "ld"), "aligned")), -_INF, ("-", "cols", "aligned")),)))))
        m_old, top, m_new, m_use = "mOld", "top", "mNew", "mUse"
        first.append(Scalar(m_old, dt.float32, ("get", "stat", "r")))
        first += self.fold("Max", srow(), top)
        if self.mask is not None and self.mask.dtype == dt.bool_:
            # a block row with every key masked (all near -3e38) counts as -inf: nothing to attend to
            raw, top = top, "topOrInf"
            first.append(Scalar(top, dt.float32, ("sel", ("<", raw, -1.0e38), -_INF, raw)))
        first += [Scalar(m_new, dt.float32, ("fmax", m_old, top)),
                  # a row with nothing to attend to yet keeps m at -inf and subtracts 0
                  Scalar(m_use, dt.float32, ("sel", ("==", m_new, -_INF), 0.0, m_new)),
                  Vec("Adds", srow(), (srow(),), "cols", scalar=("neg", m_use)),
                  Put("stat", "r", m_new), Put("one", "r", ("-", m_old, m_use))]
        total, corr = "total", "corr"
        second = self.fold("Sum", srow(), total)
        second += [Scalar(corr, dt.float32, ("get", "one", "r")),
                   Put("stat", ("+", self.ldq, "r"), ("+", ("*", ("get", "stat", ("+", self.ldq, "r")), corr), total)),
                   Sync("S_V"),
                   Vec("Muls", Ref("o", ("*", "r", _up(s.Dv, 8))), (Ref("o", ("*", "r", _up(s.Dv, 8))),), s.Dv,
                       scalar=corr)]
        cast_row = self.to_input_dtype(Ref("p", ("*", "r", s.bk)), srow(), "cols")
        return [DeQue("sc", "q_c"), Alloc("p", "b_p"), Alloc("one", "b_one"),
                Let("ld", ("pad", "cols", 8)),   # GetTensorC's rows: 32 bytes
                *self.mask_alloc(),
                self.chunks(block, lambda n: Vec("Muls", Ref("sc", "i"), (Ref("sc", "i"),), n, scalar=float(s.scale))),
                For("r", 0, "rows", tuple(first)), Sync("S_V"),   # m_old - m_new reach the vector unit
                self.chunks(block, lambda n: Vec("Exp", Ref("sc", "i"), (Ref("sc", "i"),), n)),
                Vec("Exp", Ref("one"), (Ref("one"),), "rows"), Sync("V_S"),
                For("r", 0, "rows", tuple(second)),
                # P's rows are S's when S's rows are bk wide: one cast of the block
                If(("==", "ld", s.bk), (self.chunks(block, lambda n: self.to_input_dtype(Ref("p", "i"), Ref("sc", "i"), n)),),
                   (For("r", 0, "rows", (cast_row,)),)),
                Free("q_c", "sc"), Barrier(),
                *([] if s.p_in_ub else   # the cube reads P from GM
                  [CopyOut("p", 0, "p", "rows", "cols", s.bk, s.bk), Barrier()])]

    def to_input_dtype(self, dst: Ref, src: Ref, n) -> Vec:
        """float32 `src` into `dst` in the input dtype: a copy (Muls by 1) for float32, else a Cast."""
        if self.ty == dt.float32:
            return Vec("Muls", dst, (src,), n, scalar=1.0)
        return Vec("Cast", dst, (src,), n, mode=self.mode())

    @staticmethod
    def chunks(n, call) -> For:
        """`call(count)` over the first `n` elements of a block in calls of at most _CHUNK (a
        vector call covers at most 255 repeats)."""
        return For("i", 0, n, (call(("min", _CHUNK, ("-", n, "i"))),), step=_CHUNK)

    def fold(self, kind: str, src: Ref, result: str) -> list:
        """max / sum over `cols` float32 elements of src: fold into 64 lanes, then one WholeReduce.
        From 128 columns the first two strips fold into the lanes in one call (no fill of the
        lanes first: the same values, max(-inf, x) = x and 0 + x = x for the sums of Exp's
        results, which are never -0)."""
        api = "Max" if kind == "Max" else "Add"
        k = ("+", src.offset, "k")
        strip = ("min", 64, ("-", "cols", "k"))
        filled = [Dup(Ref("lanes"), -_INF if kind == "Max" else 0.0, 64),
                  For("k", 0, "cols", (Vec(api, Ref("lanes"), (Ref("lanes"), Ref(src.tensor, k)), strip),),
                      step=64)]
        paired = [Vec(api, Ref("lanes"), (Ref(src.tensor, src.offset), Ref(src.tensor, ("+", src.offset, 64))), 64),
                  For("k", 128, "cols", (Vec(api, Ref("lanes"), (Ref("lanes"), Ref(src.tensor, k)), strip),),
                      step=64)]
        return [Alloc("lanes", "b_lanes"), Alloc("red", "b_red"),
                If((">=", "cols", 128), tuple(paired), tuple(filled)),
                Vec(f"WholeReduce{kind}", Ref("red"), (Ref("lanes"),), 64), Sync("V_S"),
                Scalar(result, dt.float32, ("get", "red", 0)), Barrier()]

    def mask_alloc(self) -> list:
        if self.mask is None:
            return []
        L = [Alloc("mrow", "b_m"), Alloc("mf", "b_mf")]
        return L + ([Alloc("mh", "b_mh")] if self.mask.dtype == dt.bool_ else [])

    def mask_offset(self):
        """The offset of the mask's row for query row r0 + r of `head` (broadcast axes: 0)."""
        s = self.s
        terms, inner = [], 1
        for size, stride in reversed(s.mask_lead):
            if stride:
                terms.append(mul(("%", ("/", "head", inner), size), stride))
            inner *= size
        if s.mask_row:
            terms.append(mul(("+", "r0", "r"), s.mask_row))
        return add(*terms, "kb")

    def mask_lines(self, srow: Ref) -> list:
        if self.mask is None:
            return []
        m = self.mask.dtype
        L = [Barrier(), CopyIn("mrow", self.m, self.mask_offset(), 1, "cols", "cols", _up(self.s.bk, 32 // m.itemsize)),
             Barrier()]
        if m == dt.bool_:   # 1 -> 0, 0 -> -3e38: added to the scores
            L += [Vec("Cast", Ref("mh"), (Ref("mrow"),), "cols", mode="CAST_NONE"),
                  Vec("Cast", Ref("mf"), (Ref("mh"),), "cols", mode="CAST_NONE"),
                  Vec("Adds", Ref("mf"), (Ref("mf"),), "cols", scalar=-1.0),
                  Vec("Muls", Ref("mf"), (Ref("mf"),), "cols", scalar=3.0e38)]
        elif m == dt.float16:
            L.append(Vec("Cast", Ref("mf"), (Ref("mrow"),), "cols", mode="CAST_NONE"))
        else:
            L.append(Vec("Muls", Ref("mf"), (Ref("mrow"),), "cols", scalar=1.0))
        return L + [Vec("Add", srow, (srow, Ref("mf")), "cols")]

    def accumulate(self) -> list:
        """O += P V_blk."""
        s = self.s
        a = ("p", 0)
        lim = ("*", "rows", _up(s.Dv, 8))
        return [MmSet("pv", "A", *a), MmSet("pv", "B", self.v, self.at("v", "kvHead", "kb")),
                MmTail("pv", "rows", s.Dv, "cols"),
                Alloc("acc", "q_c"), MmIterate("pv", (MmGetC("pv", "acc", bool(s.c_cols)),)), EnQue("q_c", "acc"),
                DeQue("acc", "q_c"),
                For("i", 0, lim, (Vec("Add", Ref("o", "i"), (Ref("o", "i"), Ref("acc", "i")), ("min", _CHUNK, ("-", lim, "i"))),),
                    step=_CHUNK),
                Free("q_c", "acc")]

    def finish(self) -> list:
        """out = O / l (0 where no key was attended to), cast, written once."""
        s, ty = self.s, self.ty
        ld_o, ld_out = _up(s.Dv, 8), _up(s.Dv, 32 // ty.itemsize)
        total, inv = "total", "inv"
        orow, out = Ref("o", ("*", "r", ld_o)), Ref("out", ("*", "r", ld_out))
        row = [Scalar(total, dt.float32, ("get", "stat", ("+", self.ldq, "r"))),
               Scalar(inv, dt.float32, ("sel", (">", total, 0.0), ("/", 1.0, total), 0.0)),
               Sync("S_V"),
               Vec("Muls", orow, (orow,), s.Dv, scalar=inv),
               self.to_input_dtype(out, orow, s.Dv)]
        return [Alloc("out", "b_p"),   # P is not needed any more
                Barrier(), For("r", 0, "rows", tuple(row)),
                Barrier("the vector unit's writes reach the copy"),
                CopyOut(self.out, self.at("o", "head", "r0"), "out", "rows", s.Dv, s.o_st[2], ld_out),
                Barrier("P reuses the tile next")]

    # ---- rope -------------------------------------------------------------------------------
    def rotate(self, name: str, dst: str, src: str) -> Stage:
        """`rrows` rows of src (from rsrc, rld apart) rotated with the tables' rows at positions
        rpos.., written E apart to dst: out = x * cos + [-x2, x1] * sin, in float32."""
        s, ty = self.s, self.ty
        e, h = s.E, s.E // 2
        ei = _up(e, 32 // ty.itemsize)   # a row as stored, padded to 32 bytes
        f = lambda off=0: Ref("f", off)   # noqa: E731   x | cos | sin | out, E floats each

        def to_f(d, x):
            return (Vec("Muls", d, (x,), e, scalar=1.0) if ty == dt.float32 else
                    Vec("Cast", d, (x,), e, mode="CAST_NONE"))
        back = self.to_input_dtype(Ref("xr"), f(3 * e), e)
        pos = ("*", ("+", "rpos", "r"), s.rope_row)
        row = (Barrier(),
               CopyIn("xr", src, ("+", "rsrc", ("*", "r", "rld")), 1, e, e, ei),
               CopyIn("tr", self.cos, pos, 1, e, e, ei),
               CopyIn("tr", self.sin, pos, 1, e, e, ei, ub_off=ei),
               Barrier(),
               to_f(f(), Ref("xr")), to_f(f(e), Ref("tr")), to_f(f(2 * e), Ref("tr", ei)),
               Vec("Mul", f(3 * e), (f(), f(e)), e),                 # x * cos
               Vec("Mul", f(e), (f(h), f(2 * e)), h),                # x2 * sin1 (cos is read)
               Vec("Mul", f(e + h), (f(), f(2 * e + h)), h),         # x1 * sin2
               Vec("Sub", f(3 * e), (f(3 * e), f(e)), h),
               Vec("Add", f(3 * e + h), (f(3 * e + h), f(e + h)), h),
               back, Barrier(),
               CopyOut(dst, ("*", "r", e), "xr", 1, e, e, ei))
        return Stage(name, None, (Alloc("xr", "b_rx"), Alloc("tr", "b_rt"), Alloc("f", "b_rf"),
                                  For("r", 0, "rrows", row),
                                  Barrier("the rotated rows reach GM before the cube reads them")))


def attention_tile_kernel(sched: AttentionSchedule) -> TileKernel:
    return _AttentionLowering(sched).kernel()

