"""A float32 block product in register tiles, for the attention kind's Matmul objects.

llvm_kernel.py multiplies a Matmul object's block with cblas_sgemm.  The attention kind's two
products are each skinny on one side -- S = Q K^T sums over the head size (64, 128), O += P V has the
head size as N -- and sgemm packs both operands into its own panels on every call (one per KV block):
on [1, 8, 2730, 64] float32 the sgemm calls alone, one thread, took 1.3x the per-kind attention
executor's whole kernel (attention.py, since removed, whose register tiles were the same shape as these).  Here the
product reads A where it lies and B in rows, or -- a B read transposed, attention's K -- in panels
of NR columns that `pack_function` transposes it into (16 x 16 register tiles: k x n elements for an
m x k x n product; each panel's k rows contiguous, where rows of B 2 KB apart fell in a few L1 sets),
once per launch and thread: `packed_function` keeps the packed blocks (every Q block of a head
multiplies the same blocks of K):

    for each panel of NR columns of C:
        for each pass of KC rows of B:       (the panel's KC x NR floats stay in L1)
            for each tile of MR rows:        acc[MR][NR / 16] = 0, or C's partial sums after the first pass
                for p in the pass:           b[t] = B[p, panel + 16 t]   (masked past n)
                                             acc[r][t] += splat(A[row r, p]) * b[t]   (fma)
                C[rows, panel] = acc         (masked past n)

MR x NR (`tile_shape`) = 4 x 64 with AVX-512, 3 x 32 without.  The last tile's rows past m read and
write row m - 1 (the same values again) instead of a scalar tail.  Each C element is one fused
multiply-add chain in p order (passes carry it through C exactly): the sums are not sgemm's (the
attention tests' tolerances hold; the interpreter, kernel_interp.py, keeps sgemm).  The Q K^T
product of a plain attention kernel (attention_softmax.fused_top) also scales S and keeps its rows'
maxima as it stores the last pass (mode ROW_MAX): the softmax's first pass over S is gone.
"""
from __future__ import annotations

from llvmlite import ir

from . import jit
from .irgen import I1, I64, PTR, VOID, branch_values, carried_loop
from .mathlib import VectorConsts
from .register_transpose import network, network_columns
from .stmts import F16, F32, I32, LANES

__all__ = ["ACCUMULATE", "KC", "PACK", "PACK_HALF", "PACKED", "PANELS", "PRODUCT", "ROW_MAX", "WIDEN", "pack_function",
           "pack_slots", "packed_function", "product_function", "shared_pack", "tile_shape", "widen_function"]

PRODUCT = "fusedsl_tiled_product"
PANELS, ACCUMULATE, ROW_MAX = 1, 2, 4   # the product's `mode` bits
PACK = "fusedsl_transpose_pack"
PACK_HALF = "fusedsl_transpose_pack_half"
WIDEN = "fusedsl_widen_rows"
PACKED = "fusedsl_packed_block"
# A thread keeps up to PACK_SLOTS packed blocks of K^T, PACK_CACHE_BYTES at most (`packed_function`):
# every KV block of a head at [1, 8, 10922, 64] float32 (22 blocks of 512 keys, 2.8 MB)
PACK_SLOTS = 32
PACK_CACHE_BYTES = 8 << 20
KC = 128   # B rows per pass over C: a panel's 128 x 64 floats (32 KB) stay in L1 while the tiles use them


def tile_shape(wide: bool) -> tuple[int, int]:
    """(rows, columns) of a register tile, the columns also a B panel's: with AVX-512 4 x 64 (16
    accumulators, 4 B vectors, a broadcast: 21 of 32 registers; 4 loads and 4 broadcasts per 16
    fma -- [128 x 64] @ [64 x 512], one thread: 4 x 64 107 GFLOP/s, 5 x 64 103, 8 x 32 101, 6 x 64
    101, 12 x 32 95, 2 x 128 97), else 3 x 32 (a <16 x float> is two of AVX2's 16 ymm registers)."""
    return (4, 4 * LANES) if wide else (3, 2 * LANES)


def _c(x) -> ir.Constant:
    return ir.Constant(I64, int(x))


def _lanes_mask(b, start, limit):
    """<16 x i1>: start + lane < limit."""
    iota = ir.Constant(ir.VectorType(I64, LANES), [ir.Constant(I64, j) for j in range(LANES)])
    vt = ir.VectorType(I64, LANES)
    undef = ir.Constant(vt, ir.Undefined)
    zeros = ir.Constant(ir.VectorType(I32, LANES), [0] * LANES)

    def splat(x):
        return b.shuffle_vector(b.insert_element(undef, x, ir.Constant(I32, 0)), undef, zeros)
    return b.icmp_signed("<", b.add(splat(start), iota), splat(limit))


def _splat64(b, x):
    vt = ir.VectorType(I64, LANES)
    one = b.insert_element(ir.Constant(vt, ir.Undefined), x, ir.Constant(I32, 0))
    return b.shuffle_vector(one, ir.Constant(vt, ir.Undefined), ir.Constant(ir.VectorType(I32, LANES), [0] * LANES))


def _max_of(b, valid, x, y):
    """x where it is valid and x > y, else y: one masked compare and a blend (vmaxps' rule: a NaN x
    is passed over -- numpy's NaN-propagating maximum took four instructions a vector, 2 % of a
    Q K^T block's time; a NaN in a row of S makes the row's P, its sum and its output NaN anyway)."""
    return b.select(b.and_(valid, b.fcmp_ordered(">", x, y)), x, y)


def product_function(module: ir.Module, kc: VectorConsts, wide: bool) -> ir.Function:
    """`void fusedsl_tiled_product(i64 m, i64 n, i64 k, ptr a, i64 lda, ptr b, i64 ldb, ptr c, i64 mode,
    float scale, ptr top, i64 diag)`: C[m x n] (rows n apart) = A[m x k] (rows lda apart) @ B[k x n],
    float32 (module doc); `mode` a sum of
    - PANELS: B in `tile_shape` column panels, as `pack_function` leaves it (else rows ldb apart);
    - ACCUMULATE: C += A @ B, C's elements starting the fma chains (attention's O += P V into O);
    - ROW_MAX: C = scale * (A @ B) -- the same bits as multiplying the stored C -- and -inf where
      column j - row i >= diag (the causal keys of an attention block: diag = its first query + 1 -
      its first key; none for a large diag), and top[16 r .. 16 r + 16] the lanes of row r's maximum
      (max over them is max C[r, :] of the elements that are not NaN; -inf where a lane saw no column).
    One function for every form (each is a branch per panel or tile): a module compiles one.
    Defined once per module."""
    existing = module.globals.get(PRODUCT)
    if existing is not None:
        return existing
    fn = ir.Function(module, ir.FunctionType(VOID, [I64, I64, I64, PTR, I64, PTR, I64, PTR, I64, F32, PTR, I64]),
                     PRODUCT)
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")
    m, n, k, a, lda, bp, ldb, c, mode, scale, top, diag = fn.args
    for p in (a, bp, c, top):
        p.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    def flag(bit):
        return b.icmp_unsigned("!=", b.and_(mode, _c(bit)), _c(0))
    panels, accumulate, row_max = flag(PANELS), flag(ACCUMULATE), flag(ROW_MAX)
    mr, nr = tile_shape(wide)
    nv = nr // LANES   # vectors per tile row
    vf = kc.f
    masked_load = kc.intrinsic("llvm.masked.load.v16f32.p0", vf, [PTR, I32, ir.VectorType(I1, LANES), vf])
    masked_store = kc.intrinsic("llvm.masked.store.v16f32.p0", VOID, [vf, PTR, I32, ir.VectorType(I1, LANES)])
    zero = kc.fc(0.0)
    ninf = kc.fc(float("-inf"))
    last = b.sub(m, _c(1))

    def clear(r, _):
        b.store(ninf, b.gep(top, [b.mul(r, _c(LANES))], source_etype=F32), align=4)
        return []
    with b.if_then(row_max):
        carried_loop(b, _c(0), m, 1, [], clear, "tp.top")

    def splat(x):
        undef = ir.Constant(vf, ir.Undefined)
        one = b.insert_element(undef, x, ir.Constant(I32, 0))
        return b.shuffle_vector(one, undef, ir.Constant(ir.VectorType(I32, LANES), [0] * LANES))

    def panel(j0, _):
        masks = [_lanes_mask(b, b.add(j0, _c(LANES * t)), n) for t in range(nv)]
        # in panels: the panel's k rows of min(nr, n - j0) elements, contiguous from j0 * k
        width = b.sub(n, j0)
        width = b.select(b.icmp_signed("<", width, _c(nr)), width, _c(nr))
        base = b.select(panels, b.gep(bp, [b.mul(j0, k)], source_etype=F32), b.gep(bp, [j0], source_etype=F32))
        stride = b.select(panels, width, ldb)

        def chunk(p0, _):
            p1 = b.add(p0, _c(KC))
            p1 = b.select(b.icmp_signed("<", p1, k), p1, k)
            fresh = b.and_(b.icmp_signed("==", p0, _c(0)), b.not_(accumulate))   # C's sums start at 0
            done = b.and_(b.icmp_signed("==", p1, k), row_max)

            def tile(i0, _):
                rows = [b.add(i0, _c(r)) for r in range(mr)]
                rows = [b.select(b.icmp_signed("<", r, m), r, last) for r in rows]
                a_rows = [b.gep(a, [b.mul(r, lda)], source_etype=F32) for r in rows]
                c_at = [[b.gep(c, [b.add(b.add(b.mul(r, n), j0), _c(LANES * t))], source_etype=F32) for t in range(nv)]
                        for r in rows]

                def partial():   # C's elements: the chunks after the first go on from C's partial sums
                    return [b.call(masked_load, [c_at[r][t], ir.Constant(I32, 4), masks[t], zero])
                            for r in range(mr) for t in range(nv)]
                init = branch_values(b, fresh, lambda: [zero] * (nv * mr), partial)

                def step(p, acc):
                    brow = b.gep(base, [b.mul(p, stride)], source_etype=F32)
                    bv = [b.call(masked_load, [b.gep(brow, [_c(LANES * t)], source_etype=F32), ir.Constant(I32, 4),
                                               masks[t], zero]) for t in range(nv)]
                    new = []
                    for r in range(mr):
                        x = splat(b.load(b.gep(a_rows[r], [p], source_etype=F32), typ=F32, align=4))
                        new += [kc.fma(b, x, bv[t], acc[nv * r + t]) for t in range(nv)]
                    return new
                _, acc = carried_loop(b, p0, p1, 1, init, step, "tp.k")

                def epilogue():   # ROW_MAX's last chunk: scaled, the diagonal cut
                    factor = splat(scale)
                    scaled = [b.fmul(x, factor) for x in acc]
                    iota = ir.Constant(ir.VectorType(I64, LANES), [ir.Constant(I64, j) for j in range(LANES)])

                    def cut():   # -inf from column - row >= diag
                        def col_minus_row(r, t):
                            return b.add(_splat64(b, b.sub(b.add(j0, _c(LANES * t)), rows[r])), iota)
                        return [b.select(b.icmp_signed(">=", col_minus_row(r, t), _splat64(b, diag)), ninf,
                                         scaled[nv * r + t]) for r in range(mr) for t in range(nv)]
                    # (the tile's largest column - row is j0 + nr - 1 - i0: below diag, nothing to cut)
                    crosses = b.icmp_signed(">=", b.sub(b.add(j0, _c(nr - 1)), i0), diag)
                    return branch_values(b, crosses, cut, lambda: scaled)
                acc = branch_values(b, done, epilogue, lambda: acc)
                for r in range(mr):
                    for t in range(nv):
                        b.call(masked_store, [acc[nv * r + t], c_at[r][t], ir.Constant(I32, 4), masks[t]])
                with b.if_then(done):
                    for r in range(mr):
                        at = b.gep(top, [b.mul(rows[r], _c(LANES))], source_etype=F32)
                        best = b.load(at, typ=vf, align=4)
                        for t in range(nv):
                            best = _max_of(b, masks[t], acc[nv * r + t], best)
                        b.store(best, at, align=4)
                return []
            carried_loop(b, _c(0), m, mr, [], tile, "tp.m")
            return []
        carried_loop(b, _c(0), k, KC, [], chunk, "tp.kc")
        return []
    carried_loop(b, _c(0), n, nr, [], panel, "tp.n")
    b.ret_void()
    return fn



def _rows_function(module: ir.Module, name: str):
    """A new `void name(ptr src, i64 ld, i64 rows, i64 cols, ptr dst)` (nounwind, noinline: one copy
    per module, src and dst not aliased) and a builder at its entry."""
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, I64, I64, I64, PTR]), name)
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")
    fn.args[0].add_attribute("noalias")
    fn.args[4].add_attribute("noalias")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))

def pack_function(module: ir.Module, wide: bool, half: bool = False, name: str | None = None) -> ir.Function:
    """`void fusedsl_transpose_pack(ptr src, i64 ld, i64 rows, i64 cols, ptr dst)`: B = K^T for the
    panel product: src's `rows` rows of `cols` floats (ld apart; `half`, `fusedsl_transpose_pack_half`:
    float16 elements, widened) transposed into `tile_shape` column panels --
    element (r, c) of src is B's (c, r), at dst[r0 * cols + c * w + r - r0] for the panel of rows
    r0 = r - r % nr, w = min(nr, rows - r0) wide -- in 16 x 16 register tiles
    (register_transpose.network), the edges element by element.  A panel's k rows are contiguous:
    rows of B 2 KB apart (512 keys) fell in a few L1 sets and the product read them from L2.
    Defined once per module (named `name`: the shared copy's, `shared_pack`)."""
    name = name or (PACK_HALF if half else PACK)
    if name in module.globals:
        return module.globals[name]
    fn, b = _rows_function(module, name)
    src, ld, rows, cols, dst = fn.args
    nr = tile_shape(wide)[1]
    T = LANES
    vt = ir.VectorType(F32, T)
    stages, order = network(4), network_columns(4)
    t64 = _c(T)
    full_r = b.mul(b.udiv(rows, t64), t64)
    full_c = b.mul(b.udiv(cols, t64), t64)

    def panel_of(r):
        """(address of B row 0 of r's panel + r's place in it, the panel's width)"""
        r0 = b.sub(r, b.urem(r, _c(nr)))
        w = b.sub(rows, r0)
        w = b.select(b.icmp_signed("<", w, _c(nr)), w, _c(nr))
        return b.gep(dst, [b.add(b.mul(r0, cols), b.sub(r, r0))], source_etype=F32), w

    et, size = (F16, 2) if half else (F32, 4)

    def element(r, c):
        v = b.load(b.gep(src, [b.add(b.mul(r, ld), c)], source_etype=et), typ=et, align=size)
        v = b.fpext(v, F32) if half else v
        at, w = panel_of(r)
        b.store(v, b.gep(at, [b.mul(c, w)], source_etype=F32), align=4)

    def band(r0, _):
        at, w = panel_of(r0)

        def tile(c0, _):
            regs = [b.load(b.gep(src, [b.add(b.mul(b.add(r0, _c(i)), ld), c0)], source_etype=et),
                           typ=ir.VectorType(et, T), align=size) for i in range(T)]
            if half:
                regs = [b.fpext(x, vt) for x in regs]
            for step, lo, hi in stages:
                nxt = list(regs)
                for i in range(T):
                    if i & step:
                        continue
                    nxt[i] = b.shuffle_vector(regs[i], regs[i + step], ir.Constant(ir.VectorType(I32, T), lo))
                    nxt[i + step] = b.shuffle_vector(regs[i], regs[i + step], ir.Constant(ir.VectorType(I32, T), hi))
                regs = nxt
            for j, col in enumerate(order):
                b.store(regs[j], b.gep(at, [b.mul(b.add(c0, _c(col)), w)], source_etype=F32), align=4)
            return []
        carried_loop(b, _c(0), full_c, T, [], tile, "pk.c")

        def edge(r, _):
            carried_loop(b, full_c, cols, 1, [], lambda c, _: element(r, c) or [], "pk.ce")
            return []
        carried_loop(b, r0, b.add(r0, t64), 1, [], edge, "pk.re")
        return []
    carried_loop(b, _c(0), full_r, T, [], band, "pk.r")

    def tail(r, _):
        carried_loop(b, _c(0), cols, 1, [], lambda c, _: element(r, c) or [], "pk.te")
        return []
    carried_loop(b, full_r, rows, 1, [], tail, "pk.tr")
    b.ret_void()
    return fn


def widen_function(module: ir.Module, kc: VectorConsts) -> ir.Function:
    """`void fusedsl_widen_rows(ptr src, i64 ld, i64 rows, i64 cols, ptr dst)`: dst[r * cols + c] =
    float32(src[r * ld + c]) for float16 src: a 16-bit operand's block as the products' float32
    rows, a vector of 16 at a time.  Defined once per module."""
    if WIDEN in module.globals:
        return module.globals[WIDEN]
    fn, b = _rows_function(module, WIDEN)
    src, ld, rows, cols, dst = fn.args
    vh, vf = ir.VectorType(F16, LANES), ir.VectorType(F32, LANES)
    i1v = ir.VectorType(I1, LANES)
    load = kc.intrinsic("llvm.masked.load.v16f16.p0", vh, [PTR, I32, i1v, vh])
    store = kc.intrinsic("llvm.masked.store.v16f32.p0", VOID, [vf, PTR, I32, i1v])

    def row(r, _):
        s_row = b.gep(src, [b.mul(r, ld)], source_etype=F16)
        d_row = b.gep(dst, [b.mul(r, cols)], source_etype=F32)

        def part(c, _):
            mask = _lanes_mask(b, c, cols)
            x = b.call(load, [b.gep(s_row, [c], source_etype=F16), ir.Constant(I32, 2), mask, ir.Constant(vh, None)])
            b.call(store, [b.fpext(x, vf), b.gep(d_row, [c], source_etype=F32), ir.Constant(I32, 4), mask])
            return []
        carried_loop(b, _c(0), cols, LANES, [], part, "wd.c")
        return []
    carried_loop(b, _c(0), rows, 1, [], row, "wd.r")
    b.ret_void()
    return fn


def pack_slots(slot_floats: int) -> int:
    """The packed blocks a thread keeps (`packed_function`) when a block takes `slot_floats` floats:
    PACK_SLOTS, fewer when they would take more than PACK_CACHE_BYTES, at least one."""
    return max(1, min(PACK_SLOTS, PACK_CACHE_BYTES // max(1, 4 * slot_floats)))


def shared_pack(module: ir.Module, wide: bool, half: bool = False) -> ir.Function:
    """`pack_function` declared in `module`, defined once per process (jit.share): its fully unrolled
    16 x 16 register transposes took 0.41 of the 0.57 s that O3 and the code generator spent on a
    whole attention kernel, once per kernel; an attention kernel's module now only calls it."""
    name = _shared_name(wide, half)
    if name in module.globals:
        return module.globals[name]
    return ir.Function(module, ir.FunctionType(VOID, [PTR, I64, I64, I64, PTR]), name)


def _shared_name(wide: bool, half: bool) -> str:
    """The shared pack's symbol: its element type and panel width (a kernel's products read its panels)."""
    return f"{PACK_HALF if half else PACK}_nr{tile_shape(wide)[1]}"


def _shared_module(wide: bool, half: bool):
    def make_ir() -> str:
        module = ir.Module(name="shared_pack")
        pack_function(module, wide, half, _shared_name(wide, half))
        return str(module)
    return make_ir


for _wide in (True, False):
    for _half in (False, True):
        jit.share(_shared_name(_wide, _half), _shared_module(_wide, _half))


def packed_function(module: ir.Module, wide: bool, half: bool = False, shared: bool = False) -> ir.Function:
    """`ptr fusedsl_packed_block(ptr src, i64 ld, i64 rows, i64 cols, ptr cache, i64 slots, i64 slot_floats,
    i64 block_bytes)` (`..._half`: float16 src): the address of src's block packed in panels as
    `pack_function` leaves it, packed only when the thread's cache does not hold it yet.

    Attention's Q K^T product reads K transposed, and every Q block of a head multiplies the same
    K blocks: packed once per block of the Q block, K^T was ~6 % of the kernel's time ([1, 8, 2730,
    64] float32, one thread).  The cache is `slots` blocks of `slot_floats` floats, then a tag of
    two i64 per slot (src's address; rows | cols << 32); a block of `block_bytes` bytes of src (a
    whole block's rows x ld elements) goes to slot (address / block_bytes) mod slots -- consecutive
    blocks of a head take consecutive slots.  The caller zeroes the tags before its first call (the
    kernel's entry: an input may change between launches) and passes only src that nothing writes
    while the kernel runs (an input GM tensor).  `shared`: it calls `shared_pack`, else a
    `pack_function` of the module.  Defined once per module."""
    name = PACKED + ("_half" if half else "")
    if name in module.globals:
        return module.globals[name]
    pack = shared_pack(module, wide, half) if shared else pack_function(module, wide, half)
    fn = ir.Function(module, ir.FunctionType(PTR, [PTR, I64, I64, I64, PTR, I64, I64, I64]), name)
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")
    src, ld, rows, cols, cache, slots, slot_floats, block_bytes = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    address = b.ptrtoint(src, I64)
    slot = b.urem(b.udiv(address, block_bytes), slots)
    dst = b.gep(cache, [b.mul(slot, slot_floats)], source_etype=F32)
    tags = b.gep(cache, [b.mul(slots, slot_floats)], source_etype=F32)
    tag_at = [b.gep(tags, [b.add(b.mul(slot, _c(2)), _c(j))], source_etype=I64) for j in range(2)]
    shape = b.or_(rows, b.shl(cols, _c(32)))
    held = b.and_(b.icmp_unsigned("==", b.load(tag_at[0], typ=I64), address),
                  b.icmp_unsigned("==", b.load(tag_at[1], typ=I64), shape))
    with b.if_then(b.not_(held)):
        b.call(pack, [src, ld, rows, cols, dst])
        b.store(address, tag_at[0])
        b.store(shape, tag_at[1])
    b.ret(dst)
    return fn
