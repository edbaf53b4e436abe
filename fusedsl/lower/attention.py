"""Schedule of an attention kernel (lowered to the tile IR by lower/attention_tile.py).

The flash-attention shape, one MIX kernel: every vector instance (two per AI core on 910B, one
on 310P) takes work items (batch x head, Q block of BQ rows) in turn; per item it walks the
KV axis in blocks of BK keys:

    Q_blk -> L1 (910B)         once per item into a TSCM buffer (NZ): the Q block is read from
                               GM once, not once per KV block (_l1_plan; 310P: Q stays in GM)
    S  = Q_blk K_blk^T         Matmul object qk: A = the Q block (TSCM, or Q rows in GM), B = K
                               rows read transposed, C into UB (GetTensorC); one base block
                               covers the whole S block
    online softmax             float32 on the vector unit: scale, causal diagonal, running max,
                               exp, running sum, rescale of the accumulator
    P  -> workspace            910B: P in the input dtype to this instance's GM workspace (the
                               AIC reads operands from GM: CANN's FlashAttentionScore does the
                               same); 310P: P stays in UB (p_in_ub)
    O += P V_blk               Matmul object pv: A = P (workspace, or UB as a VECOUT A on 310P),
                               B = V rows, C into UB
    out = O / l                once, after the last block; causal items stop at the diagonal

Block sizes: BK <= 128 keys, BQ query rows as large as UB (S, P, O, P V tiles, row statistics),
L0C (S block and P V block, float32) and L1 allow (cost.attention_blocks' rule, counted here
exactly for the buffers the printer allocates); on 310P, to make room for the Q block in UB, base
blocks half as wide as the products (a smaller C workspace, _c_cols_310p) or else a smaller BQ when
that reads fewer GM bytes (_q_block_310p).  Static shapes only.  A mask is read one row of
the S block at a time through its broadcast strides (a mask broadcasting over the keys does not
print); a bool mask becomes 0 / -3e38 on the vector unit (a block row whose maximum is below
-1e38 counts as fully masked, so a fully masked row still gives 0, as torch does).
"""
from __future__ import annotations


from ..record import record
from .. import dtypes as dt
from ..cost import attention_blocks, attention_ub_buffers
from ..errors import ScheduleError, TargetError
from ..ir.ops import attention_operands, attention_views
from ..ir.shapes import num_elements
from .cube import TCUBE_FIELDS, CubeTiling, cube_block_dim, cube_tiling
from .row import RowParam
from ..targets import Target


def _up(a: int, b: int) -> int:
    return -(-a // b) * b


@record
class AttentionLaunch:
    words: list
    block_dim: int
    total_tiles: int     # work items (the report's "tiles")
    tile_rows: int = 0   # BQ
    C: int = 0           # BK
    tiles_per_core: int = 0


@record(frozen=False)
class AttentionSchedule:
    fn: object
    target: Target
    op: object
    params: list          # RowParam per kernel parameter (q, k, v: the op's operands name them)
    heads: int            # batch x query heads
    group: int            # query heads per KV head (GQA)
    L: int
    S: int
    E: int
    Dv: int
    bq: int
    bk: int
    scale: float
    causal: bool
    qk: CubeTiling
    pv: CubeTiling
    ub_budget: int
    ub_bytes: int
    plan_note: str
    symbols = ()
    mask_lead = ()        # (size, element stride) per leading axis of the scores, for the mask
    mask_row = 0          # the mask's stride between query rows (0: broadcast)
    heads_per_batch = 1   # H (query heads) and Hkv: a flat head index splits into (batch, head)
    kv_heads = 1
    q_st = k_st = v_st = o_st = (0, 0, 0)   # (batch, head, row) element strides of q, k, v, the output
    offsets = {}          # element offset of q, k, v's first head in their tensor (q_heads, ...)
    rope = False          # q and k rotated (the op's rope): each Q block and K block into the workspace
    rope_row = 0          # the cos / sin tables' stride between positions (0: one row for all)
    q_l1_bytes = 0        # > 0: the Q block is held in L1 (a TSCM buffer of this size, NZ) per item
    q_ub_bytes = 0        # > 0 (310P): the Q block is held in UB, qk's A a VECOUT tensor, rows E apart
    c_cols = 0            # > 0 (310P): the products' base blocks are this many columns wide, several per block

    @property
    def inputs(self):
        return self.params

    @property
    def dtype(self) -> dt.DType:
        return self.op.operands[0].dtype

    @property
    def q_blocks(self) -> int:
        return -(-self.L // self.bq)

    @property
    def items(self) -> int:
        return self.heads * self.q_blocks

    @property
    def workers(self) -> int:
        """Vector instances that take items: two per AI core on 910B (MIX), one on 310P.  Without
        DataCopyPad a row's tail is written element by element through the core's data cache:
        unless every item's output starts on a 64-byte line, one instance writes them all."""
        edge = self.Dv * self.dtype.itemsize
        interleaved = self.o_st[2] != self.Dv   # bshd: rows of different heads alternate in GM
        if not self.target.has_datacopypad and (self.L * edge % 64 or self.bq * edge % 64
                                                or (interleaved and edge % 64)):
            return 1
        return min(self.items, self.target.aic_cores * (2 if self.target.separated else 1))

    @property
    def block_dim(self) -> int:
        return cube_block_dim(self.workers, self.target)

    @property
    def p_in_ub(self) -> bool:
        """310P's coupled core: the pv Matmul takes P as a VECOUT A straight from UB (the API copies
        it UB -> L1 on the core); on 910B a VECOUT A crosses GM anyway, so P goes through the
        workspace there."""
        return not self.target.separated

    @property
    def p_bytes(self) -> int:
        """One instance's P block in the GM workspace, padded to 512 bytes (none on 310P)."""
        return 0 if self.p_in_ub else _up(self.bq * self.bk * self.dtype.itemsize, 512)

    @property
    def rope_bytes(self) -> tuple[int, int]:
        """One instance's rotated Q block and K block in the GM workspace (rope), padded to 512 bytes."""
        if not self.rope:
            return 0, 0
        return _up(self.bq * self.E * self.dtype.itemsize, 512), _up(self.bk * self.E * self.dtype.itemsize, 512)

    @property
    def instance_bytes(self) -> int:
        """One vector instance's share of the user workspace: P, then the rotated Q and K blocks."""
        return self.p_bytes + sum(self.rope_bytes)

    @property
    def workspace_bytes(self) -> int:
        """The Matmul API's system workspace, then one P block (and rotated Q, K blocks) per vector instance."""
        system = 16 * 1024 * 1024 if self.target.separated else 2 * 1024 * 1024
        return system + self.block_dim * (2 if self.target.separated else 1) * self.instance_bytes

    def cube_words(self, t: CubeTiling) -> list[int]:
        """The TCubeTiling words of one product.  Its org shape is the GM row stride: in the
        bshd layout Q and K rows are H*E apart (Ka = Kb) and V rows Hkv*Dv (N), while the
        block sizes (single-core K and N) stay E and Dv."""
        w = dict.fromkeys(TCUBE_FIELDS, 0)
        ka = (self.E if self.rope else self.q_st[2]) if t is self.qk else t.K   # rotated rows: E apart
        n = self.v_st[2] if t is self.pv else t.N
        w.update(usedCoreNum=t.used_core_num, M=t.M, N=n, Ka=ka, Kb=ka, singleCoreM=t.single_core_m,
                 singleCoreN=t.single_core_n, singleCoreK=t.K, baseM=t.base_m, baseN=t.base_n, baseK=t.base_k,
                 depthA1=t.depth_a1, depthB1=t.depth_b1, stepM=1, stepN=1, isBias=0, iterateOrder=0,
                 stepKa=t.step_k, stepKb=t.step_k, dbL0A=2, dbL0B=2, dbL0C=t.db_l0c, batchM=1, batchN=1,
                 singleBatchM=1, singleBatchN=1, BatchNum=1)
        return [w[f] for f in TCUBE_FIELDS]

    @property
    def words(self) -> list[int]:
        return self.cube_words(self.qk) + self.cube_words(self.pv)

    def tiling(self, sizes, target) -> AttentionLaunch:
        per = -(-self.items // self.workers)
        return AttentionLaunch(self.words, self.block_dim, self.items, self.bq, self.bk, per)

    def buffers(self) -> list[tuple[str, str, int]]:
        """(name, position, bytes) of every UB buffer the printer allocates."""
        mask = attention_operands(self.op)[3]
        bufs = attention_ub_buffers(self.target, self.bq, self.bk, self.Dv, self.dtype.itemsize,
                                    mask.dtype.itemsize if mask is not None else 0, self.E if self.rope else 0,
                                    self.c_cols)
        return bufs + ([("b_q", "VECOUT", self.q_ub_bytes)] if self.q_ub_bytes else [])


def schedule_attention_kernel(fn, target: Target, ub_fraction: float = 1.0) -> AttentionSchedule:
    ops = [op for op in fn.ops if op.name != "constant"]
    op = ops[0]
    if len(ops) != 1 or op.name != "attention":
        raise ScheduleError("an attention kernel holds the attention op alone", loc=op.loc)
    if not target.matmul_dtypes:
        raise TargetError(f"{target.name} has no Matmul high-level API (ASCENDC.md §3.1): the attention "
                          "kernel's Q K^T and P V cannot be printed for it", loc=op.loc,
                          hint="compile for ascend910b or ascend310p; the kernel still runs on the CPU executors")
    _, _, _, mask, cos, _ = attention_operands(op)
    q, k, v = attention_views(op)   # the heads each reads when q, k, v are one tensor's (q_heads, ...)
    if not all(isinstance(d, int) for t in op.operands for d in t.shape):
        raise ScheduleError("attention prints for static shapes only", loc=op.loc)
    if q.dtype not in (dt.float16, dt.float32) or not any(m[0] == q.dtype.ascendc for m in target.matmul_dtypes):
        takes = sorted({m[0] for m in target.matmul_dtypes} & {"half", "float"})
        raise ScheduleError(f"attention in {q.dtype} does not print for {target.name} (its cube takes "
                            f"{' and '.join('float16' if x == 'half' else 'float32' for x in takes)} here)",
                            loc=op.loc, hint="cast q, k and v, or run the kernel on the CPU executors")
    bshd = op.attr("layout", "bhsd") == "bshd"
    qs, ks, vs = (tuple(t.shape) for t in (q, k, v))
    if bshd:   # [B, S, H, D]: rows H * D apart; the plan is the same with heads and rows swapped
        qs, ks, vs = ((*x[:-3], x[-2], x[-3], x[-1]) for x in (qs, ks, vs))
        if ks[-3] != qs[-3]:
            raise ScheduleError("attention in the [B, S, H, D] layout with fewer KV heads does not print "
                                "(the Matmul API reads Q and K rows with one stride)", loc=op.loc)
    L, E = qs[-2:]
    S, Dv = ks[-2], vs[-1]
    heads = num_elements(tuple(qs[:-2]))
    h_q = qs[-3] if len(qs) >= 3 else 1
    h_kv = ks[-3] if len(ks) >= 3 else 1
    group = h_q // h_kv

    def strides(h, rows, width, x=None):   # x: the operand, whose heads axis may hold more heads than it reads
        h = x.shape[-2] if bshd and x is not None else h
        return (rows * h * width, width, h * width) if bshd else (h * rows * width, rows * width, width)
    item = q.dtype.itemsize
    mask_item, mask_lead, mask_row = 0, (), 0
    if mask is not None:
        mask_item = mask.dtype.itemsize
        mask_lead, mask_row = _mask_strides(mask, tuple(qs[:-2]), L, S, op)
    rope_head, rope_row = 0, 0
    if cos is not None:
        rope_head, rope_row = E, _rope_row(cos, tuple(qs[:-2]), L, S, E, op)
    budget = int(target.ub_bytes * ub_fraction)
    bq, bk = attention_blocks(target, L, S, E, Dv, item, ub_fraction, mask_item, rope_head)
    q_rows_e = cos is not None or strides(h_q, L, E, op.operands[0])[2] == E   # Q rows can sit E apart in UB
    c_cols = 0   # > 0 (310P): C's UB workspace holds base blocks of this many columns, not the whole block
    if not target.separated and E * item % 32 == 0 and q_rows_e:
        c_cols = _c_cols_310p(bq, bk, E, Dv, item, budget, target, mask_item, rope_head)
        if c_cols:   # only if both products really split into base blocks of bq rows, c_cols columns at most
            try:
                tilings = _l1_plan(target, bq, bk, E, Dv, q.dtype, E, cos is not None, c_cols)[:2]
            except ScheduleError:
                tilings = ()
            if not tilings or any(t.base_m < bq or t.base_n > c_cols or t.base_n % 16 for t in tilings):
                c_cols = 0
        if not c_cols:
            bq = _q_block_310p(bq, bk, L, S, E, Dv, item, budget, target, mask_item, rope_head)
    ub = sum(n for _, _, n in attention_ub_buffers(target, bq, bk, Dv, item, mask_item, rope_head, c_cols))
    if ub > budget:
        raise ScheduleError(f"FS110: attention with head size {Dv} needs {ub} B of UB for 16 x 16 blocks, "
                            f"{target.name} allows {budget} B", loc=op.loc)
    # one base block covers each product: the S block (BQ x BK) and the P V block (BQ x Dv); on
    # 910B the Q block is held in L1 (TSCM) when it and both objects' buffers fit (_l1_plan)
    qk, pv, q_l1 = _l1_plan(target, bq, bk, E, Dv, q.dtype, strides(h_q, L, E, op.operands[0])[2],
                            cos is not None, c_cols)
    for t, what in ((qk, "Q K^T"), (pv, "P V")):
        if t.base_m < bq or (t.base_n < t.N and not c_cols) or t.base_n > (c_cols or t.base_n):
            raise ScheduleError(f"FS110: the {what} block {bq} x {t.N} does not fit one base block on "
                                f"{target.name}", loc=op.loc)
    params = [RowParam(i, p.value.name or f"x{i}", p.value.dtype, "full") for i, p in enumerate(fn.params)]
    note = (f"flash attention: {heads} heads x {-(-L // bq)} Q blocks of {bq} rows, KV blocks of {bk}, "
            "S and P V blocks through the Matmul API, " +
            (f"P through a {bq * bk * item} B GM workspace per instance" if target.separated else
             "P from UB (a VECOUT A: the core copies it to L1)"))
    note += (f"; the Q block read once into L1 (TSCM, {q_l1} B per instance)" if q_l1 else
             "; the Q block read from GM by every Q K^T")
    sched = AttentionSchedule(fn, target, op, params, heads, group, L, S, E, Dv, bq, bk, float(op.attr("scale")),
                              bool(op.attr("causal")), qk, pv, budget, ub, note)
    sched.mask_lead, sched.mask_row = mask_lead, mask_row
    sched.q_l1_bytes = q_l1
    sched.c_cols = c_cols
    if c_cols:
        sched.plan_note += f"; C in base blocks of {bq} x {c_cols} (each written to its place in the UB tile)"
    # 310P: the Q block in UB (a VECOUT A, copied UB -> L1 by the core) when UB has room left over
    # at these block sizes (the blocks are not shrunk for it: K and V reads would grow more) and
    # its rows can sit E apart, 32-byte aligned, as qk's org Ka
    q_ub = bq * E * item
    if not target.separated and E * item % 32 == 0 and ub + q_ub <= budget and q_rows_e:
        sched.q_ub_bytes = q_ub
        sched.ub_bytes = ub + q_ub
        sched.plan_note = sched.plan_note.replace("the Q block read from GM by every Q K^T",
                                                  f"the Q block read once into UB ({q_ub} B)")
    sched.rope, sched.rope_row = cos is not None, rope_row
    if sched.rope:
        sched.plan_note += (f"; q and k rotated (rope) as they are read: each Q block and K block through a "
                            f"{sum(sched.rope_bytes)} B GM workspace per instance")
    sched.heads_per_batch, sched.kv_heads = h_q, h_kv
    q_in, k_in, v_in = op.operands[:3]
    sched.q_st, sched.k_st = strides(h_q, L, E, q_in), strides(h_kv, S, E, k_in)
    sched.v_st, sched.o_st = strides(h_kv, S, Dv, v_in), strides(h_q, L, Dv)
    # the element offset of each operand's first head (q_heads, ...: q, k, v of one tensor)
    sched.offsets = {n: (op.attr(f"{n}_heads")[0] * w if op.attr(f"{n}_heads") is not None else 0)
                     for n, w in (("q", E), ("k", E), ("v", Dv))}
    if sched.k_st[2] != sched.q_st[2] and not sched.rope:
        raise ScheduleError("attention whose q and k rows lie at different strides does not print (the Matmul API "
                            "reads them with one org Ka)", loc=op.loc,
                            hint="this kernel still runs on the CPU executors (kernel(*arrays))")
    return sched


def _c_cols_310p(bq: int, bk: int, E: int, Dv: int, item: int, budget: int, target, mask_item: int,
                 rope_head: int) -> int:
    """310P: 0 when the Q block fits UB beside the tiles at these block sizes (or nothing is gained),
    else the base block width (half the widest product) whose smaller C workspace makes room for it.  The Matmul API
    moves C from L0C into UB through a workspace of one base block; with base blocks half as wide
    as the S and P V blocks (two Iterates per product, each GetTensorC writing its block at its
    place in the tile, enSequentialWrite false) that workspace halves and the Q block fits: D = 128,
    float16, BQ = BK = 128: 32768 B freed, Q needs 32768 B, 31424 B were left."""
    def room(c_cols):
        ub = sum(n for _, _, n in attention_ub_buffers(target, bq, bk, Dv, item, mask_item, rope_head, c_cols))
        return ub + bq * E * item <= budget
    widest = max(_up(bk, 16), _up(Dv, 16))
    half = widest // 2
    # each product's block is either one base block or exactly two (cube_tiling halves its width once)
    if room(0) or half % 16 or half < 16 or not room(half) or \
            any(half < _up(n, 16) < widest for n in (bk, Dv)):
        return 0
    return half


def _q_block_310p(bq: int, bk: int, L: int, S: int, E: int, Dv: int, item: int, budget: int, target,
                  mask_item: int, rope_head: int) -> int:
    """310P's BQ: attention_blocks' BQ (the largest the S, P, O tiles leave UB room for), or a smaller
    multiple of 16 that leaves room for the Q block in UB too, whichever reads fewer GM bytes per head:
    with Q in GM every KV block after the first reads the whole Q again ((S / BK - 1) x L x E), with
    a smaller BQ K and V are read once per Q block more often (L / BQ x S x (E + Dv)).  E.g. D = 128,
    float16, L = S = 1024: BQ 128 leaves 31424 B of UB, the Q block needs 32768; BQ 112 holds it and
    reads 5.5 MB against 6.25 MB."""
    def fits_q(b):
        ub = sum(n for _, _, n in attention_ub_buffers(target, b, bk, Dv, item, mask_item, rope_head))
        return ub + b * E * item <= budget

    def gm(b, q_in_ub):
        kv_reads = -(-L // b) * S * (E + Dv)
        return kv_reads + (0 if q_in_ub else (-(-S // bk) - 1) * L * E)
    if fits_q(bq):
        return bq
    best, best_bytes = bq, gm(bq, False)
    for b in range(bq - 16, 0, -16):
        if fits_q(b):
            if gm(b, True) < best_bytes:
                best = b
            break
    return best


def _l1_plan(target: Target, bq: int, bk: int, E: int, Dv: int, dtype: dt.DType, q_row: int, rope: bool,
             c_cols: int = 0):
    """(qk tiling, pv tiling, TSCM bytes of the Q block or 0).  On 910B one AI core's L1 holds,
    for each of its two vector instances, its own copy of both Matmul objects' A1/B1 buffers (the
    API's server keeps one object per sub-block) and its TSCM slice, so each instance gets half of
    L1.  The Q block goes to TSCM (NZ, read from GM once per item instead of once per KV block;
    SetTensorA of a TSCM tensor does no GM -> L1 copy) when that fits with both objects' buffers
    capped to what is left; else Q stays in GM.  310P's Matmul takes A from GM or VECOUT only."""
    name, item = dtype.name, dtype.itemsize

    def tilings(budget):
        kw = dict(a_dtype=name, b_dtype=name, cores=1, whole_rows=True, l1_budget=budget)
        return cube_tiling(target, bq, bk, E, **kw), cube_tiling(target, bq, Dv, bk, **kw)
    if not target.separated:
        if c_cols:   # base blocks of at most bq x c_cols (cube_tiling halves the longer side to fit)
            kw = dict(a_dtype=name, b_dtype=name, cores=1, ub_bytes=bq * c_cols * 4, ub_bytes_per_c_elem=4)
            return cube_tiling(target, bq, bk, E, **kw), cube_tiling(target, bq, Dv, bk, **kw), 0
        return (*tilings(None), 0)
    per_instance = target.l1_bytes // 2
    c0 = 32 // item
    q_l1 = _up(bq, 16) * _up(E, c0) * item
    if q_row <= 65535 or rope:   # Nd2NzParams' source row stride is 16 bits
        try:
            qk, pv = tilings((per_instance - q_l1) // 2)
        except ScheduleError:
            qk = None
        if qk is not None:
            own = qk.l1_bytes - qk.depth_a1 * qk.base_m * qk.base_k * item + pv.l1_bytes   # qk: no A1 buffer
            if q_l1 + own <= per_instance and qk.base_m >= bq and pv.base_m >= bq:
                return qk, pv, q_l1
    return (*tilings(per_instance // 2), 0)


def _rope_row(cos, lead_shape, L, S, E, op) -> int:
    """The rotary tables' stride between positions: they must be one row per position (or one row
    for all) shared by every batch and head, and E a multiple of 16 (the halves of a float32 row
    start on 32-byte boundaries in UB)."""
    shape = (1,) * (len(lead_shape) + 2 - cos.type.rank) + tuple(cos.shape)
    if any(d != 1 for d in shape[:-2]) or shape[-1] != E:
        raise ScheduleError(f"rope tables of shape {tuple(cos.shape)} vary over batch or heads; the attention "
                            "kernel prints tables of one row per position ([S, D])", loc=op.loc,
                            hint="this kernel still runs on the CPU executors (kernel(*arrays))")
    if E % 16:
        raise ScheduleError(f"rope in the attention kernel prints for head sizes that are multiples of 16, got {E}",
                            loc=op.loc, hint="this kernel still runs on the CPU executors (kernel(*arrays))")
    return E if shape[-2] > 1 else 0


def _mask_strides(mask, lead_shape, L, S, op):
    """((size, element stride) per leading axis of the scores, the row stride) of the mask
    broadcast to the scores [*lead, L, S]; 0 where it broadcasts.  Its keys must be contiguous."""
    shape = (1,) * (len(lead_shape) + 2 - mask.type.rank) + tuple(mask.shape)
    if shape[-1] != S and S != 1:
        raise ScheduleError(f"an attention mask of shape {tuple(mask.shape)} broadcasts over the keys; it does "
                            "not print as Ascend C", loc=op.loc,
                            hint="give the mask its key axis (np.broadcast_to it), or run on the CPU executors")
    strides, step = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = step if shape[i] != 1 else 0
        step *= shape[i]
    lead = tuple(zip(lead_shape, strides[:-2]))
    return lead, (strides[-2] if L > 1 else 0)
