"""One LLVM lowering for every kernel kind: a TileKernel (tile/kernel.py) walked node by node.

The per-kind CPU lowerings (llvm.py, llvm_view.py, transpose.py, llvm_row.py, cube.py, attention.py and
llvm_reduce.py are all gone) each re-derived a kernel from its schedule; this module reads the loop-level tile IR that every
kind already lowers to (`lower.kinds.kernel_ir`) and the Ascend C printer prints, so the CPU runs
what the chip runs: the same stages, tiles, DMA copies and vector calls.  Its executable spec is
`kernel_interp.run_kernel`; results are bit-identical to it wherever both use IEEE arithmetic
(everything but exp / ln, which are mathlib's polynomials here and numpy's there).

One module per kernel (sizes arrive at run time), one exported function in launch.py's
convention

    void @fusedsl_tile_kernel(i64 block_begin, i64 block_end, ptr args, ptr arena)

that runs blocks (cores) [block_begin, block_end) as the interpreter does: per block the
members (Init), the `once` stages (a prologue), then the tiles [b * tilesPerCore,
min(totalTiles, (b + 1) * tilesPerCore)) through the other stages.  `args` is an int64 block:

    the tiling words | the typed fields (runtime scalars: float as a double, ints as int64) |
    a pointer per GM tensor (kernel order; a work tensor: its offset in the arena) | per queue its byte offset in the arena and the
    bytes of one buffer | stream (1: the outputs are large, CopyOut writes whole lines with
    non-temporal stores) | a cube kernel's cblas_sgemm address, then per Matmul object the arena
    offsets of its A, B and C blocks | when `products` names a Matmul object (below), the addresses
    of cblas_sgemv and cblas_sdot

`arena` is the thread's UB: every queue's `depth` buffers at fixed offsets (64-byte aligned), then
the work GM slices and the Matmul objects' blocks (`arena_layout`).

What each node becomes:
- scalar work (Let / Var / Set, members, stage parameters, loop variables): an alloca per name
  (SROA turns them into registers), uint32 arithmetic on i32 exactly as `tile.kernel.evaluate`
  (wrapping + - *, unsigned / % and compares); typed scalars (`val`, typed members, `get`, `load`,
  casts, float literals) carry their numpy dtype and follow numpy's promotion (a Python int is
  weak), float16 / bfloat16 held in float32 registers and rounded once per operation;
- the queue protocol: a state per buffer and a buffer index per tensor name, as the interpreter
  keeps them (AllocTensor takes the first free buffer, DeQue the first queued one), so two
  tensors of one queue held at once are two buffers; VECCALC tensors are buffer 0;
- DMA (CopyIn / CopyOut rows, GatherRow, UbCopy): memcpy / memmove per row (one call when the
  rows are contiguous on both sides; CopyOut of a streaming launch: non-temporal line stores);
  a VECIN queue that CopyIn at the buffer's start writes is *aliased*: a contiguous copy into it
  is skipped and its buffer points at the GM rows (what a staging copy would hold), else at its
  arena buffer.  When other per-tile writers also write it (a view kernel's other branches: a
  Dup, a broadcast row copied in UB, rows copied one by one, a gather) it is *guarded*: its
  buffer goes home at AllocTensor, an aliasing copy re-points it only while nothing was written
  since, and any other write first copies the GM rows it stands for home (`in_guard`), so GM is
  never written.  A VECOUT queue copied out by one CopyOut whose addressing is known at
  AllocTensor is *computed in place*: when that CopyOut is contiguous the buffer is the GM rows
  and the copy is skipped (a write past the rows first moves what was computed to the arena
  buffer).  Where only Steps, the blocked transposes / picks below and UB copies to another queue
  read an aliased VECIN queue (or write a computed-in-place VECOUT one), its buffer may also stand
  for *strided* GM rows (`_strided`: a UB row stride, a GM row stride, rows, columns per buffer):
  a Step's run that lies within one row is addressed there (a segment loop `for seg: step at
  seg * stride` is checked once before the loop, each ref whose rows the passes do not fit moved
  home then, `_home_unfit`; else each run, `strided_offset`), one that does not first moves the
  rows home (`strided_home`); so a view kernel's slices and
  concatenations and an elementwise kernel's padded UB rows move GM to GM, one pass;
  Move / Put / Dup / get are element loads and stores, but for the transpose kind's loops:
  `for r: for c: move y[c * P + r] <- x[r * Q + c]` is a blocked transpose (`transpose`: T x T
  register tiles, T one 64-byte line of elements, register_transpose.network; non-temporal
  stores of whole aligned lines in a streaming launch; each input line prefetched two bands
  ahead) and `for r: for c in S .. C: move y[r * P + c] <- x[r * Q + c * K]` row copies or picks
  (`pick`), both between strided GM rows when the queues stand for them;
- Vec: a 16-lane loop with a masked tail, with numpy's semantics (NaN propagates; maximum /
  minimum of -0.0 and 0.0 give the second operand for float32 arrays, the first for float16); WholeReduce / ReduceRepeat fold one repeat in
  numpy's pairwise order (8 accumulators, the same split as np.sum; int32 lanes in any order, the
  same bits); a fold loop `for k: vec Add|Max|Min acc <- acc, src[.. k ..]` (float32 lanes, or
  int32 lanes of an integer / bool source, widened) keeps its accumulator in registers strip by
  strip, a wide one walking its passes in blocks of FOLD_BLOCK (every lane adds the same elements
  in the same order as the loop); with `compensated_folds` (the CPU's row schedule of long float
  sums) a float sum's blocks are summed from zero and added with Kahan's compensation, which is
  then not the interpreter's sequential bits;
- Step: the tile stmts through `stmts.StmtEmitter` (the primitives' own LLVM lowering), fused
  into one 16-lane loop when every UB tensor the step writes is addressed at one offset in it
  (lanes then never meet: the values stay in registers from stmt to stmt, written back once),
  otherwise one loop per stmt; a VECCALC temporary no other node reads, written before the step
  reads it, stays in registers (its stores are dropped).
- a cube kernel (conv and attention too) runs its Process body once per core (Call inlines a
  stage, Return leaves the core); a Matmul object's Iterate multiplies the core's m x k block of A
  and k x n block of B with one cblas_sgemm (numpy's OpenBLAS, whose address arrives in `args`) --
  a float32 operand in GM or a UB tensor read where SetTensorA / SetTensorB put it (its rows, or
  read transposed its columns, and their leading dimension), a 16-bit one or an L1 tensor in NZ
  that CopyNz filled gathered as float32 first (a float16 block of whole rows by tiled_product's 16-lane
  widening loop: the quick tier has no loop vectoriser) -- and runs the body per base tile, M-first;
  GetTensorC copies the tile (rounded to C's dtype) into UB, or, for a VECIN queue nothing else
  writes and a float32 C, points the buffer at the tile in the block of C when its rows are whole
  32-byte rows of the block; int8 operands into an int32 C multiply in int32 (a plain loop: numpy's
  int32 matmul wraps the same).  `lower_kernel`'s `products` names the Matmul objects whose every
  matrix is one row and / or one column (the runner knows the graph's shapes; the tile IR does not):
  numpy multiplies those with cblas_sgemv / cblas_sdot, whose sums differ from sgemm's, so they
  make the same calls with numpy's layouts (`_numpy_product`; blas.numpy_product).  Work GM tensors are the core's slice in the arena, zeroed per core.
  The attention kind's products (skinny: the head size is their K or N) run in register tiles instead of sgemm
  (tiled_product.py: no packing per call; K read transposed is transposed into panels once per launch and
  thread: the object's B block holds the blocks packed so far, `packs_b_once`), and its softmax works on S in
  the block of C where GetTensorC hands it over (`_c_written_in_place`), not in a copy: the statements of its
  online softmax (scale, mask, max, exp, sum, rescale, P) run as two passes per row of S
  (attention_softmax.py), P written over S where the P V product reads it (`attn_p`), P V accumulated into O
  (`mm_iterate` `into`), and the Q K^T product of a kernel without a mask scales S, cuts its causal keys and
  takes its rows' maxima as it stores it (`attn_top`); float16 operands are widened by vector loops
  (`_widened`).
"""
from __future__ import annotations

import dataclasses

import numpy as np
from llvmlite import ir

from .. import dtypes as dt
from ..tile.kernel import (CORE_NAMES, Alloc, Barrier, Call, CopyIn, CopyNz, CopyOut, Decl, DeQue, Dup, EnQue, For,
                           Free, GatherRow, If, Let, MmEnd, MmGetC, MmIterate, MmSet, MmTail, Move, Put, Ref, Return,
                           Scalar, Set, Step, Sync, TileKernel, UbCopy, Var, Vec, add, evaluate, map_steps,
                           member_values, walk_nodes)
from .irgen import I1, I64, PTR, VOID, branch_values, carried_loop, kernel_function, no_runtime_unrolling, vname
from .mathlib import VectorConsts
from . import attention_softmax, tiled_product
from .register_transpose import LINE, network, network_columns
from .stmts import F16, F32, I8, I16, I32, LANES, LoweringError, StmtEmitter, mem_type, reg_type, vec

F64 = ir.DoubleType()
SYMBOL = "fusedsl_tile_kernel"
ARENA_ALIGN = 64
STREAM_RUN_BYTES = 64 << 10   # a step's run in GM this long streams even when it starts inside a line
# A blocked transpose prefetches each input line this many bands (T rows) ahead (measured for the
# same register tiles in the per-kind transpose: [64, 256, 256] perm (0, 2, 1) 2.07 / 1.61 / 1.47 ms
# with 0 / 1 / 2 bands, [1024, 4096] unchanged)
PREFETCH_TILES = 2

__all__ = ["lower_kernel", "arena_layout", "calls_blas", "LoweringError", "SYMBOL", "ARENA_ALIGN"]

# numpy's dtype of a typed scalar; None is the IR's uint32 (a Python int: weak in numpy's rules),
# PYFLOAT a Python float (a runtime scalar's typed field, weak too)
PYFLOAT = "pyfloat"
_F64 = np.dtype(np.float64)
_BY_NP = {d.np: d for d in dt.ALL}
_VIEW_TYPES = {"int16": (I16, 2), "uint32": (I32, 4)}


def _kind_dtype(kind) -> dt.DType | None:
    """The fusedsl dtype of a typed scalar kind (None for uint32, Python floats and float64)."""
    return _BY_NP.get(kind) if isinstance(kind, np.dtype) else None


def _reg(kind):
    """The LLVM type a scalar of this kind lives in."""
    if kind is None:
        return I32
    if kind is PYFLOAT or kind == _F64:
        return F64
    d = _kind_dtype(kind)
    if d is None:
        raise LoweringError(f"no scalar of numpy type {kind}")
    return reg_type(d)


def _promote(a, b):
    """numpy 2's result type of a binary op on these kinds (a Python int or float is weak)."""
    if a is None or a is PYFLOAT:
        a, b = b, a
    if a is None:
        return PYFLOAT if b is PYFLOAT else None
    if a is PYFLOAT:
        return PYFLOAT
    if b is None:
        return a
    if b is PYFLOAT:
        return a if a.kind == "f" or a == dt.bfloat16.np else _F64
    return np.result_type(a, b)


def _line(nbytes: int) -> int:
    return -(-max(1, nbytes) // ARENA_ALIGN) * ARENA_ALIGN


def mm_field(mm, name: str) -> str:
    """The tiling field of a Matmul object's TCubeTiling member (its own struct's, `<tiling>_<f>`)."""
    return f"t.{mm.tiling}_{name}" if mm.tiling else f"t.{name}"


def work_elems(g) -> int:
    """A work GM tensor's elements (its own, or the whole slice: `index` bytes)."""
    return g.elems or g.index // g.dtype.itemsize


def arena_layout(k: TileKernel, words) -> tuple[dict[str, tuple[int, int]], int]:
    """name -> (byte offset, bytes per buffer) in a block's arena, and the arena's bytes: every
    queue's `depth` buffers of its elements at the tiling, then per Matmul object its core's
    block of A, of B (float32, gathered) and of C (float32), each on a 64-byte line.  A queue no
    tensor is taken from (the Matmul objects' UB workspace of a coupled core's plan, b_mmws: the
    CPU's products need none) has no bytes."""
    env = member_values(k, words)
    out, at = {}, 0
    taken = {n.queue for st in k.stages for n in walk_nodes(st.body) if isinstance(n, (Alloc, DeQue, Decl))}
    taken |= {n.queue for n in walk_nodes(k.process or ()) if isinstance(n, (Alloc, DeQue, Decl))}
    for q in k.queues:
        size = _line(evaluate(q.elems, env) * q.dtype.itemsize) if q.name in taken else 0
        out[q.name] = (at, size)
        at += size * q.depth
    for g in k.gms:   # a core's slice of the launch's workspace: zeros at the core's start
        if g.role == "work":
            out[f"work.{g.name}"] = (at, _line(work_elems(g) * g.dtype.itemsize))
            at += _line(work_elems(g) * g.dtype.itemsize)
    for mm in k.matmuls:
        m, n, ka = (env[mm_field(mm, f)] for f in ("singleCoreM", "singleCoreN", "Ka"))
        # an int32 C of 8-bit operands: a float32 chunk product follows it (`_int8_product`)
        c_elems = m * n * (2 if _exact_chunk(mm) else 1)
        b_elems = ka * n
        if packs_b_once(k, mm):   # the thread's packed blocks of K^T and their tags (tiled_product.packed_function)
            slots = tiled_product.pack_slots(ka * n)
            b_elems = slots * (ka * n + 4)
        for part, elems in (("A", m * ka), ("B", b_elems), ("C", c_elems)):
            out[f"{mm.name}.{part}"] = (at, _line(elems * 4))
            at += _line(elems * 4)
    return out, at


def packs_b_once(k: TileKernel, mm) -> bool:
    """Whether the attention kind's Matmul object `mm` reads B transposed from an input GM tensor
    only (Q K^T's K): each thread then keeps the blocks of B it packed (`arena_layout`'s B block is
    tiled_product.packed_function's cache) and packs a block once per launch, not once per Q block."""
    if k.kind != "attention" or not mm.b.transpose or mm.a.transpose or mm.b.dtype not in (dt.float32, dt.float16):
        return False
    gms = {g.name: g for g in k.gms}
    nodes = [n for st in k.stages for n in walk_nodes(st.body)] + list(walk_nodes(k.process or ()))
    sets = [n for n in nodes if isinstance(n, MmSet) and n.mm == mm.name and n.which == "B"]
    return bool(sets) and all(n.src in gms and gms[n.src].role == "in" for n in sets)


def calls_blas(k: TileKernel, products=None) -> bool:
    """Whether the lowered kernel may call OpenBLAS (sgemm, numpy's sgemv / sdot): a Matmul object
    that `_Lowering.mm_iterate` does not multiply in its own loops -- those are the int32 products
    without 8-bit chunks and the attention kind's float products whose A is not read transposed."""
    def own(mm):
        if mm.c.dtype == dt.int32:
            return not _exact_chunk(mm)
        return k.kind == "attention" and not mm.a.transpose and mm.name not in (products or {})
    return not all(map(own, k.matmuls))


def _exact_chunk(mm) -> int:
    """For an int32 C of 8-bit operands, the columns of K whose float32 sums are exact (every partial
    sum an integer below 2**24: K * max|a| * max|b| <= 2**24); else 0."""
    if mm.c.dtype != dt.int32 or {mm.a.dtype, mm.b.dtype} - {dt.int8, dt.uint8}:
        return 0
    bound = (255 if mm.a.dtype == dt.uint8 else 128) * (255 if mm.b.dtype == dt.uint8 else 128)
    return (1 << 24) // bound


def typed_fields(k: TileKernel) -> list:
    return [f for f in k.fields if f.ctype != "uint32_t"]


# The loops over elements O3 may still unroll by a runtime count (irgen.no_runtime_unrolling: the
# others -- tiles, blocks, rows of a copy, the tile IR's For, queue state -- are not, which cut a
# bitonic sort's compile time by a quarter; 1 MB kernels ran at 0.96-1.04x their time before): the
# stmts' vector loop, folds and strips, the register-tiled products and packs, transposes, gathers, and
# attention's softmax passes over a row of S (sm.exp unrolled: plain attention 16 MB 1.039 -> 1.031x the old executor's time).
UNROLLED_LOOPS = ("vec", "fold", "sfold", "wfold", "strip", "wstrip", "tp.top", "tp.n", "tp.m", "tp.kc", "tp.k",
                  "pk.tr", "pk.te", "pk.re", "pk.r", "pk.ce", "pk.c", "tr", "tre", "trl", "tc", "tce", "tle",
                  "gather", "iadd", "ichunk", "ireduce", "dot", "eight", "picks", "pick", "pick2t", "sm.exp", "sm.max")


def lower_kernel(k: TileKernel, features=frozenset(), products=None, compensated_folds: bool = False,
                 host_product: bool = False, streaming: bool = True) -> str:
    """The LLVM IR text of kernel `k` (module doc).  `products`: {Matmul object: "dot" | "vecmat" |
    "matvec"} for those whose matrices numpy multiplies by a vector routine (blas.numpy_product).
    `compensated_folds`: float sums folded over more than FOLD_BLOCK passes add each block's sums with
    Kahan's compensation (`_blocked_fold`; the CPU's row schedule: cpu_tiling.row_schedule), where the
    interpreter adds every pass in sequence.  `host_product`: a conv kernel whose product the caller
    computes (`_HostProduct`).  `streaming`: the kernel's stores may be non-temporal when its
    launch streams (the argument block's flag: large outputs); without it the flag is ignored and
    the streamed variants of its loops are not emitted -- a third of an elementwise kernel's IR
    (its math once in the plain loop instead of three times: peel, streamed and plain loops),
    which launches that never stream need not compile (kernel_cpu.TileKernelCpu)."""
    if host_product and k.kind != "conv":
        raise LoweringError(f"kernel {k.name}: a host product is a conv kernel's, not a {k.kind} kernel's")
    k = cpu_prefills(k)
    module = _Lowering(k, frozenset(features), dict(products or {}), compensated_folds, host_product,
                       streaming).build()
    return str(no_runtime_unrolling(module, keep=UNROLLED_LOOPS))


def read_prefills(step: Step) -> tuple:
    """The prefills of a Step its CPU lowering reads: those of a tensor a stmt reads (a src) before a
    stmt of the step wrote that place (a constant such as the -2**31 the NaN Select of the float32 ->
    int32 chain picks).  The others are the chip's: lanes a Compare reads past the count (the CPU
    reads `count` elements, masked), the ones tensor of a compare's Select (an aux slot: the CPU's
    compare makes its 1.0 / 0.0 itself).  A kept prefill is the Duplicate of its whole count per
    run, and keeps the step out of a group of steps (one loop, values in registers: a `sum(x > 0.5)`
    row's compare, casts and fold)."""
    read = _read_first(step)
    return tuple(p for p in step.prefill if p[0].tensor in read)


def _read_first(step: Step, written=None) -> set[str]:
    """The tensors a Step's stmts read (as srcs) at a place no earlier stmt of the step wrote (nor
    one of `written`: (tensor, offset, view) places earlier Steps of its group wrote, which the
    step's own writes are added to)."""
    refs = dict(step.names)
    written, read = (set() if written is None else written), set()
    for st in step.stmts:
        for src in st.srcs:
            r = refs[src]
            if (r.tensor, repr(r.offset), r.view) not in written:
                read.add(r.tensor)
        r = refs[st.dst]
        written.add((r.tensor, repr(r.offset), r.view))
    return read


def cpu_prefills(k: TileKernel) -> TileKernel:
    """k with each Step's prefills cut to what its CPU lowering reads (`read_prefills`)."""
    def cut(step: Step) -> Step:
        kept = read_prefills(step)
        return step if kept == step.prefill else dataclasses.replace(step, prefill=kept)
    return map_steps(k, cut)


class _HostProduct:
    """A conv kernel on the CPU in host-product mode: the product of the whole conv2d, [N, K, P*Q]
    (float32, or int32 for an int32 C), is computed before the launch by the CPU's conv routine
    (conv_product.py: the structural zeros skipped, per-tap sgemms without the im2col matrix, or
    im2col -- what beats one panel and one sgemm per core on a CPU) and its address is the last
    word of `args`.  The kernel's im2col stage (BUILD_STAGE: the panel in the core's workspace)
    is not run and the workspace not zeroed; Iterate hands GetTensorC the core's block of that
    product -- channels [m0, m0 + m) by pixels [n0, n0 + n) of image `batch`, rows kPix apart
    (lower/conv_tile.py's members) -- so the epilogue, bias and stores are the kernel's own."""

    BUILD_STAGE = "BuildPanel"

    @staticmethod
    def block(lw: "_Lowering", mm):
        """(address of the core's block of the product, its row stride in elements)."""
        b = lw.b
        batch, k_out, m0, pix, n0 = (b.zext(lw.ev_u32(name), I64) for name in ("batch", "kOutC", "m0", "kPix", "n0"))
        at = b.add(b.mul(b.add(b.mul(batch, k_out), m0), pix), n0)
        size = ir.Constant(I64, lw._acc(mm).itemsize)
        return b.gep(lw.product, [b.mul(at, size)], source_etype=I8), pix


# ---- name and tensor analysis ---------------------------------------------------------------------
def _expr_names(e) -> set:
    """The scalar names an expression reads (None stands for a UB / GM element it reads)."""
    if isinstance(e, str):
        return set() if e.startswith("t.") else {e}
    if not isinstance(e, tuple) or not e:
        return set()
    if e[0] in ("get", "load", "[]"):
        return {None} if e[0] != "[]" else _expr_names(e[2])
    out = set()
    for x in e[1:]:
        out |= _expr_names(x)
    return out


def _expr_gets(e, tensors) -> bool:
    """Whether an expression (or a tuple of them) reads an element of one of these tensors."""
    if isinstance(e, tuple):
        if len(e) > 1 and e[0] == "get" and e[1] in tensors:
            return True
        return any(_expr_gets(x, tensors) for x in e)
    return False


def _kernel_bodies(k: TileKernel):
    """Every node list of the kernel: each stage's body, the Process body, and the bodies nested in
    their loops and branches (For, MmIterate, If)."""
    def bodies(body):
        yield body
        for n in body:
            if isinstance(n, (For, MmIterate)):
                yield from bodies(n.body)
            elif isinstance(n, If):
                yield from bodies(n.then)
                yield from bodies(n.orelse)
    for body in [st.body for st in k.stages] + [k.process or ()]:
        yield from bodies(body)


def _same_elements(a: Step, b: Step) -> bool:
    """Whether two Steps run over the same elements (count and offset) and neither pre-fills lanes."""
    return (repr(a.count) == repr(b.count) and repr(a.offset) == repr(b.offset)
            and not a.prefill and not b.prefill)


def _assigns(n) -> set:
    """The scalar names a node sets (a loop its variable)."""
    if isinstance(n, (Let, Var, Set, Scalar, For)):
        return {n.var}
    return set()


def _row_major(e, i: str, j: str):
    """S when expression e is i * S + j (in either order of the sum and the product) with S free of
    i and j, else None."""
    if not (isinstance(e, tuple) and len(e) == 3 and e[0] == "+"):
        return None
    for prod, rest in ((e[1], e[2]), (e[2], e[1])):
        if rest != j or not (isinstance(prod, tuple) and len(prod) == 3 and prod[0] == "*"):
            continue
        for x, stride in ((prod[1], prod[2]), (prod[2], prod[1])):
            if x == i and not ({i, j, None} & _expr_names(stride)):
                return stride
    return None


def _transpose_loop(node):
    """(R, C, dst, P, src, Q) when node is `for r in 0 .. R: for c in 0 .. C: move dst[c * P + r] <-
    src[r * Q + c]` (R, C, P, Q free of r and c; the transpose kind's tile in UB), else None."""
    if not isinstance(node, For) or node.down or node.start != 0 or node.step != 1 or len(node.body) != 1:
        return None
    inner = node.body[0]
    if not isinstance(inner, For) or inner.down or inner.start != 0 or inner.step != 1 or len(inner.body) != 1:
        return None
    mv = inner.body[0]
    r, c = node.var, inner.var
    if not isinstance(mv, Move) or r == c or mv.dst == mv.src or {r, c, None} & _expr_names(inner.end):
        return None
    p, q = _row_major(mv.dst_index, c, r), _row_major(mv.src_index, r, c)
    if p is None or q is None:
        return None
    return node.end, inner.end, mv.dst, p, mv.src, q


def _picked(e, r: str, c: str):
    """(Q, K) when expression e is r * Q + c * K (or r * Q + c: K = 1) with Q and K free of r and c."""
    if not (isinstance(e, tuple) and len(e) == 3 and e[0] == "+"):
        return None
    for prod, rest in ((e[1], e[2]), (e[2], e[1])):
        if not (isinstance(prod, tuple) and len(prod) == 3 and prod[0] == "*"):
            continue
        for x, q in ((prod[1], prod[2]), (prod[2], prod[1])):
            if x != r or {r, c, None} & _expr_names(q):
                continue
            if rest == c:
                return q, 1
            if isinstance(rest, tuple) and len(rest) == 3 and rest[0] == "*":
                for y, k in ((rest[1], rest[2]), (rest[2], rest[1])):
                    if y == c and not ({r, c, None} & _expr_names(k)):
                        return q, k
    return None


def _pick_loop(node):
    """(R, S, C, dst, P, src, Q, K) when node is `for r in 0 .. R: for c in S .. C: move dst[r * P + c]
    <- src[r * Q + c * K]` (the transpose kind's copy-mode tails and gather mode: rows copied, or
    every K-th element picked), else None."""
    if not isinstance(node, For) or node.down or node.start != 0 or node.step != 1 or len(node.body) != 1:
        return None
    inner = node.body[0]
    if not isinstance(inner, For) or inner.down or inner.step != 1 or len(inner.body) != 1:
        return None
    mv = inner.body[0]
    r, c = node.var, inner.var
    if not isinstance(mv, Move) or r == c or mv.dst == mv.src or {r, c, None} & (
            _expr_names(inner.end) | _expr_names(inner.start)):
        return None
    dst, src = _picked(mv.dst_index, r, c), _picked(mv.src_index, r, c)
    if dst is None or src is None or dst[1] != 1:
        return None
    return node.end, inner.start, inner.end, mv.dst, dst[0], mv.src, src[0], src[1]


def _is_true(v) -> bool:
    return isinstance(v, ir.Constant) and v.type == I1 and bool(v.constant)


def _and1(b: ir.IRBuilder, x, y):
    """x && y for i1 values, folded when one is a constant (no instruction for the passes to delete)."""
    for c, other in ((x, y), (y, x)):
        if isinstance(c, ir.Constant):
            return other if c.constant else c
    return b.and_(x, y)


def _or1(b: ir.IRBuilder, x, y):
    for c, other in ((x, y), (y, x)):
        if isinstance(c, ir.Constant):
            return c if c.constant else other
    return b.or_(x, y)


def _select1(b: ir.IRBuilder, c, x, y):
    if isinstance(c, ir.Constant):
        return x if c.constant else y
    return b.select(c, x, y)


def _is_zero(v) -> bool:
    return isinstance(v, ir.Constant) and v.constant == 0


class _EntryValues:
    """name -> an LLVM value of the kernel's entry block, made by its function when first read (the
    argument block's words: the tiling words, typed fields, GM pointers and queue offsets a kernel
    reads -- first_call.py's view kernel loaded 22 up front and reads 11 -- not every one, for the
    quick tier's passes to delete).  The entry builder stays at the end of the entry block until
    `build` closes it, so a value made there dominates every use."""

    def __init__(self, makers: dict):
        self._makers = makers
        self._values = {}

    def __contains__(self, name) -> bool:
        return name in self._makers

    def __getitem__(self, name):
        v = self._values.get(name)
        if v is None:
            v = self._values[name] = self._makers[name]()
        return v


class _Lowering:
    def __init__(self, k: TileKernel, features: frozenset, products: dict | None = None,
                 compensated_folds: bool = False, host_product: bool = False, streaming: bool = True):
        self.k = k
        self.streaming = streaming
        self.products = {name: form for name, form in (products or {}).items() if form is not None}
        self.compensated_folds = compensated_folds
        self.comp_lanes: dict = {}   # a compensated fold's accumulator (tensor, offset) -> its lanes (`_comp_of`)
        self.host_product = host_product
        # not named after the kernel: kernels equal but for their names compile once (jit's key is the text)
        self.module = ir.Module(name="kernel")
        self.kc = VectorConsts(self.module, LANES, scalef="avx512f" in features)
        self.wide = "avx512f" in features
        # the attention kind's skinny products in register tiles, not sgemm (tiled_product.py)
        self.tiled_products = k.kind == "attention"
        self.queues = {q.name: q for q in k.queues}
        self.gms = {g.name: g for g in k.gms}
        self.offsets = k.field_offsets()
        self.typed = {f.name: f for f in typed_fields(k)}
        self.tensor_queue: dict[str, str] = {}
        self.mms = {mm.name: mm for mm in k.matmuls}
        self.stage_of = {st.name: st for st in k.stages}
        nodes = [n for st in k.stages for n in walk_nodes(st.body)] + list(walk_nodes(k.process or ()))
        self.nodes = nodes
        self.nz = sorted({n.tensor for n in nodes if isinstance(n, CopyNz)})   # L1 tensors in NZ
        for mm in k.matmuls:
            if mm.a.dtype.kind == "int" and mm.c.dtype != dt.int32:
                raise LoweringError(f"kernel {k.name}: a Matmul object of {mm.a.dtype} into {mm.c.dtype}")
        for n in nodes:
            if isinstance(n, (Alloc, DeQue, Decl)):
                if self.tensor_queue.setdefault(n.tensor, n.queue) != n.queue:
                    raise LoweringError(f"kernel {k.name}: tensor {n.tensor} is taken from two queues")
        self.types = self._infer_types(nodes)
        writers = self._writers(nodes)
        self.c_aliased = self._c_aliasable(writers)
        # the transpose loops run as blocked register transposes (`transpose`): For id -> pattern,
        # and the ids of their Moves (which may read / write buffers standing for strided GM rows)
        self.transposes = {}
        for n in nodes:
            t = _transpose_loop(n)
            if t is not None and self.tensor_dtype(t[2]) == self.tensor_dtype(t[4]) \
                    and self.tensor_queue[t[2]] != self.tensor_queue[t[4]]:
                self.transposes[id(n)] = t
        self.picks = {}
        for n in nodes:
            t = _pick_loop(n)
            if t is not None and id(n) not in self.transposes and self.tensor_dtype(t[3]) == self.tensor_dtype(t[5]) \
                    and self.tensor_queue[t[3]] != self.tensor_queue[t[5]]:
                self.picks[id(n)] = t
        self.transpose_moves = {id(n.body[0].body[0]) for n in nodes if id(n) in self.transposes or id(n) in self.picks}
        # UB copies between two queues: chunked row by row when a side stands for strided GM rows
        self.transpose_moves |= {id(n) for n in nodes if isinstance(n, UbCopy)
                                 and self.tensor_queue.get(n.dst) != self.tensor_queue.get(n.src)}
        self.aliased, self.in_guarded = self._in_aliasing(writers)
        self.out_aliased = self._out_aliasable(nodes)
        self.readers = self._readers(nodes)
        self.value_readers = self._readers(nodes, values=True)
        self.strided = self._strided(nodes)
        # the attention kind's Q K^T product scales S and takes its rows' maxima (attention_softmax)
        self.attn_top = self.tiled_products and attention_softmax.fused_top(self)
        self.attn_p_over_s = self.tiled_products and attention_softmax.p_in_place(self)
        self.attn_p = None   # (address, row stride) slots of P written over S (attention_softmax)

    def _readers(self, nodes, values: bool = False) -> dict[str, set[int]]:
        """queue -> the nodes (ids) that may read one of its tensors: a Step's temporary whose
        queue no other node reads, written before it is read in the step, is never stored.
        `values`: a Step counts only for the tensors it reads before it writes that place
        (`_read_first`: a step that duplicates its own scalar into a temporary does not read what
        another step left there)."""
        out: dict[str, set[int]] = {}

        def read(tensor, node):
            q = self.tensor_queue.get(tensor)
            if q is not None:
                out.setdefault(q, set()).add(id(node))

        def gets(e, node):
            if isinstance(e, tuple):
                if e and e[0] == "get":
                    read(e[1], node)
                for x in e:
                    gets(x, node)
        group = self._group_reads() if values else {}
        for n in nodes:
            if id(n) in group:
                for tensor in group[id(n)]:
                    read(tensor, n)
            elif isinstance(n, Vec):
                for r in n.srcs:
                    read(r.tensor, n)
            elif isinstance(n, Step):
                for tensor in _read_first(n) if values else [r.tensor for _, r in n.names]:
                    read(tensor, n)
            elif isinstance(n, CopyOut):
                read(n.tensor, n)
            elif isinstance(n, (UbCopy, Move)):
                read(n.src, n)
            elif isinstance(n, MmSet):
                read(n.src, n)
            for value in vars(n).values():
                gets(value, n)
        return out

    def _group_reads(self) -> dict[int, set[str]]:
        """id(Step) -> the tensors it reads at a place no earlier Step of its group wrote (`body`'s
        groups: consecutive Steps over the same elements, which `steps` runs as one loop when it
        can, else one after another, storing every value: either way a later step of the group
        reads what an earlier one left at that place, never an older value), and id(Vec) -> its
        accumulator for the fold a group runs in its loop (`_step_fold`: it reads only elements
        its steps wrote).  So a temporary each group writes before it reads is dead past its group
        (rms_norm's x * x, then x * rstd, in one row buffer: neither is stored, `steps`).  None for
        the attention kind, whose online softmax takes Steps out of `body`'s groups."""
        out: dict[int, set[str]] = {}
        if self.tiled_products:
            return out

        for nodes in _kernel_bodies(self.k):
            nodes = list(nodes)
            i = 0
            while i < len(nodes):
                if not isinstance(nodes[i], Step):
                    i += 1
                    continue
                j = i + 1
                while j < len(nodes) and isinstance(nodes[j], Step) and _same_elements(nodes[i], nodes[j]):
                    j += 1
                if j - i > 1 and self._fuses(nodes[i:j]):
                    written: set = set()
                    for n in nodes[i:j]:
                        out[id(n)] = _read_first(n, written)
                if self._fuses(nodes[i:j]):
                    fold = self._step_fold(nodes[i:j], nodes[j:j + 2])
                    if fold is not None:
                        out[id(fold[2])] = {fold[2].srcs[0].tensor}
                i = j
        return out

    def _tracked(self, q: str) -> bool:
        """Whether queue q's tensors pick one of its buffers at run time (`q_state`, `t_index`):
        more than one buffer, not a TBuf."""
        return self.queues[q].depth > 1 and self.queues[q].position not in ("VECCALC", "TBUF_VECOUT")

    def _buffers(self, refs: dict) -> dict:
        """slot -> the buffer its Ref addresses: its queue's (a tracked queue's buffer is the
        tensor's); two slots at the same place of one buffer are one value (in-place reuse)."""
        return {slot: (self.tensor_queue[r.tensor], r.tensor if self._tracked(self.tensor_queue[r.tensor]) else "")
                for slot, r in refs.items()}

    def _fuses(self, group: list) -> bool:
        """Whether `steps` runs these Steps in one loop: every buffer they write is addressed at
        one place in all of them (else each Step runs alone, as a group of its own)."""
        places: dict = {}
        written = set()
        for node in group:
            refs = dict(node.names)
            buffer = self._buffers(refs)
            for slot, r in refs.items():
                places.setdefault(buffer[slot], set()).add(buffer[slot] + (repr(r.offset), r.view))
            written |= {buffer[st.dst] for st in node.stmts}
        return all(len(places[w]) == 1 for w in written)

    def _dead_after(self, ids: set, r: Ref) -> bool:
        """Whether nothing but these steps (ids) reads r's buffer (a VECCALC temporary)."""
        q = self.tensor_queue[r.tensor]
        return self.queues[q].position == "VECCALC" and self.value_readers.get(q, set()) <= ids

    def _writers(self, nodes) -> dict[str, list]:
        """queue -> the nodes that write one of its tensors."""
        written: dict[str, list] = {}

        def wrote(tensor, node):
            q = self.tensor_queue.get(tensor)
            if q is not None:
                written.setdefault(q, []).append(node)
        for n in nodes:
            if isinstance(n, (CopyIn, MmGetC)):
                wrote(n.tensor, n)
            elif isinstance(n, (GatherRow, Dup, Vec)):
                wrote(n.dst.tensor, n)
            elif isinstance(n, (UbCopy, Move)):
                wrote(n.dst, n)
            elif isinstance(n, Put):
                wrote(n.tensor, n)
            elif isinstance(n, Step):
                outs = {st.dst for st in n.stmts}
                for slot, r in n.names:
                    if slot in outs:
                        wrote(r.tensor, n)
                for r, _, _ in n.prefill:
                    wrote(r.tensor, n)
        return written

    def _aliasable(self, writers) -> set[str]:
        """VECIN queues read in place: a contiguous CopyIn at the buffer's start (an *aliasing*
        copy) is skipped and the buffer is the GM rows themselves (a read-only staging copy of GM
        holds what GM holds).  Queues nothing else writes need nothing more; see `_in_aliasing`
        for the others."""
        return self._in_aliasing(writers)[0]

    def _in_aliasing(self, written) -> tuple[set[str], set[str]]:
        """(aliased VECIN queues -- and VECCALC ones nothing but aliasing copies write: read-only
        copies of GM, such as the row kind's shared rows copied once per core --, the ones among
        them also written by other per-tile writers: CopyIn at another place, GatherRow, Dup,
        UbCopy, Move, Put -- a view kernel's other branches, a broadcast row copied to every row
        of a tile -- or written by GatherRows only, whose first row of a tile is read in place,
        `gather_row`).  For those a buffer's state
        (`in_len`) says whether it stands for GM rows; AllocTensor points it home, and a write
        while it stands for GM rows first copies them home (`in_guard`), so GM is never
        written."""
        once = {id(n) for st in self.k.stages if st.once for n in walk_nodes(st.body)}
        aliased, guarded = set(), set()
        for q, ws in written.items():
            if self.queues[q].position not in ("VECIN", "VECCALC"):
                continue
            plain = [w for w in ws if self._aliasing_copy(w, q)]
            others = [w for w in ws if not self._aliasing_copy(w, q)]
            if self.queues[q].position == "VECIN" and self.k.process is None and ws and all(
                    isinstance(w, GatherRow) and id(w) not in once for w in ws):
                aliased.add(q)   # gathered rows only: each tile's first row read in place (`gather_row`)
                guarded.add(q)
                continue
            if not plain:
                continue
            if self.queues[q].position != "VECIN":
                if not others and self.k.process is None:   # a row every tile reads: rms_norm's w
                    aliased.add(q)
                continue
            if not others:
                aliased.add(q)
            elif self.k.process is None and all(
                    isinstance(w, (CopyIn, GatherRow, Dup, UbCopy, Move, Put)) and id(w) not in once for w in others):
                aliased.add(q)
                guarded.add(q)
        return aliased, guarded

    def _strided(self, nodes) -> set[str]:
        """Aliased queues whose buffers may stand for *strided* GM rows (module doc): every access
        other than the aliasing DMA and the queue protocol is a Step (an in queue: its readers; an
        out queue: its writers), whose runs `steps` checks lie within one row and addresses row by
        row (`strided_offset`).  A view kernel's loads and output, an elementwise kernel's
        inputs and outputs whose UB rows are padded."""
        steps = {id(n) for n in nodes if isinstance(n, Step)}
        viewed = {self.tensor_queue.get(r.tensor) for n in nodes if isinstance(n, Step)
                  for _, r in n.names if r.view is not None}   # offsets in another element size
        out = set()
        for q in self.aliased:
            # a guarded queue's UB copies within itself (a broadcast row copied to every row) move
            # its rows home before they read (`in_guard`)
            home = {id(n) for n in nodes if isinstance(n, (UbCopy, Move)) and q in self.in_guarded
                    and self.tensor_queue.get(n.dst) == q}
            if self.readers.get(q, set()) <= steps | home | self.transpose_moves and not any(
                    isinstance(n, Step) and any(self.tensor_queue.get(r.tensor) == q for r, _, _ in n.prefill)
                    for n in nodes):
                out.add(q)
        for q, co in self.out_aliased.items():
            tensors = {t for t, tq in self.tensor_queue.items() if tq == q}
            if all(n is co or isinstance(n, (Alloc, EnQue, DeQue, Free, Step)) or id(n) in self.transpose_moves
                   or not self._touches(n, tensors) for n in nodes):
                out.add(q)
        return out - viewed

    def _aliasing_copy(self, w, q: str) -> bool:
        """A CopyIn at the buffer's start (or, in a guarded queue, a GatherRow at offset 0) of the
        queue's dtype: what may leave the buffer standing for GM rows."""
        if isinstance(w, CopyIn):
            return w.ub_off == 0 and self.gms[w.gm].dtype == self.queues[q].dtype
        return False

    def _c_aliasable(self, writers) -> set[str]:
        """Queues whose buffers nothing but GetTensorC (not placed) of a float32 C writes: when the
        tile is contiguous in the core's block of C (whole rows of it, 32-byte rows) the buffer is
        that part of the block, not a copy of it (`mm_get_c`)."""
        def handed_over(w):
            return isinstance(w, MmGetC) and not w.placed and self.mms[w.mm].c.dtype == dt.float32 \
                and self._acc(self.mms[w.mm]) == dt.float32
        return {q for q, ws in writers.items()
                if self.queues[q].dtype == dt.float32 and any(map(handed_over, ws))
                and all(handed_over(w) or self._c_written_in_place(w) for w in ws)}

    def _c_written_in_place(self, w) -> bool:
        """The attention kind's softmax masks, scales, shifts and exponentiates S where GetTensorC
        put it (Vec / Dup / Put on the tile: within its `rows * ld` elements, so in the block of C
        it writes the tile's own part, which no later GetTensorC reads: one tile per Iterate)."""
        return self.k.kind == "attention" and isinstance(w, (Vec, Dup, Put))

    def _out_aliasable(self, nodes) -> dict[str, CopyOut]:
        """VECOUT queues computed straight into GM: queue -> its CopyOut.  One tensor, allocated
        at one place of the tile loop and copied out by one CopyOut whose addressing reads nothing
        set between the two (so it is known at AllocTensor); written only by Step / Vec / Dup
        (whose writes are checked against the GM rows' end at run time, `guard_out`) and read by
        nothing but the vector work and that CopyOut.  When the CopyOut is contiguous the buffer
        is the GM rows themselves and the CopyOut is skipped."""
        k = self.k
        flat, parent = [], {}   # the tile stages' nodes in program order; each node's body (id)

        def walk(body, owner):
            for n in body:
                if isinstance(n, Call):   # a stage called from Process: its nodes where it is called
                    st = self.stage_of[n.stage]
                    if st.param:
                        flat.append(Set(st.param, n.arg))
                        parent[id(flat[-1])] = owner
                    walk(st.body, owner)
                    continue
                flat.append(n)
                parent[id(n)] = owner
                if isinstance(n, (For, MmIterate)):
                    walk(n.body, id(n.body))
                elif isinstance(n, If):
                    walk(n.then, id(n.then))
                    walk(n.orelse, id(n.orelse))
        if k.process is not None:   # a cube kernel: Process calls the stages
            walk(k.process, "process")
        for st in k.stages:
            if not st.once and k.process is None:
                walk(st.body, "tile")   # the stages' top levels run one after the other per tile
        once = [n for st in k.stages if st.once for n in walk_nodes(st.body)]
        out = {}
        for q in k.queues:
            if q.position != "VECOUT":
                continue
            tensors = {t for t, tq in self.tensor_queue.items() if tq == q.name}
            allocs = [i for i, n in enumerate(flat) if isinstance(n, Alloc) and n.queue == q.name]
            copies = [i for i, n in enumerate(flat) if isinstance(n, CopyOut) and n.tensor in tensors]
            if len(tensors) != 1 or len(allocs) != 1 or len(copies) != 1 or allocs[0] > copies[0]:
                continue
            a, c = allocs[0], copies[0]
            co = flat[c]
            if parent[id(flat[a])] != parent[id(co)] or co.ub_off != 0 or self.gms[co.gm].dtype != q.dtype:
                continue
            if any(self._touches(n, tensors) for n in once) or not self._out_users_ok(flat, tensors, co):
                continue
            names = set()
            for e in (co.offset, co.rows, co.cols, co.gm_stride, co.ub_stride):
                names |= _expr_names(e)
            if None in names or any(_assigns(n) & names for n in flat[a:c] if not self._restates(n, flat[a:c])):
                continue
            out[q.name] = co
        return out

    def _restates(self, n, span) -> bool:
        """Whether node n (in `span`) leaves its name's value as it was: a Let of a name every
        assignment in the kernel gives the same expression (a view kernel's `bx = box * W`, in
        each stage), whose names nothing else in `span` assigns."""
        if not isinstance(n, Let):
            return False
        lets = self._let_exprs().get(n.var)
        if lets is None:
            return False
        names = _expr_names(n.expr)
        return None not in names and not any(_assigns(m) & names for m in span if m is not n)

    def _let_exprs(self) -> dict:
        """name -> repr of its expression, for names only ever assigned by Lets of one expression."""
        if getattr(self, "_lets", None) is None:
            seen: dict = {}
            nodes = [m for st in self.k.stages for m in walk_nodes(st.body)]
            for m in nodes:
                for var in _assigns(m):
                    seen.setdefault(var, set()).add(repr(m.expr) if isinstance(m, Let) else None)
            self._lets = {var: next(iter(r)) for var, r in seen.items() if len(r) == 1 and None not in r}
        return self._lets

    @staticmethod
    def _touches(n, tensors) -> bool:
        refs = [getattr(n, f, None) for f in ("tensor", "src", "dst")]
        refs = [r.tensor if isinstance(r, Ref) else r for r in refs]
        if isinstance(n, Vec):
            refs += [r.tensor for r in n.srcs]
        elif isinstance(n, Step):
            refs += [r.tensor for _, r in n.names]
        return any(r in tensors for r in refs if isinstance(r, str))

    def _out_users_ok(self, flat, tensors, co) -> bool:
        """Only Step (without prefill) / Vec / Dup write the tensor, the queue protocol and `co`
        name it otherwise, and no expression reads an element of it."""
        for n in flat:
            if any(_expr_gets(v, tensors) for v in vars(n).values()):
                return False
            if n is co or isinstance(n, (Alloc, EnQue, DeQue, Free)) or not self._touches(n, tensors):
                continue
            if isinstance(n, Step) and not any(r.tensor in tensors for r, _, _ in n.prefill):
                continue
            if isinstance(n, Dup) or (isinstance(n, Vec) and n.api != "Gather") or id(n) in self.transpose_moves:
                continue
            return False
        return True

    # -- typing ------------------------------------------------------------------------------------
    def _infer_types(self, nodes) -> dict:
        types = {}
        for m in self.k.members:
            types[m.name] = None if m.dtype is None else m.dtype.np
        for st in self.k.stages:
            if st.param:
                types[st.param] = None
        if self.k.process is not None:
            types.update({name: None for name in CORE_NAMES})
        for _ in range(3):   # a name read before the node that sets it (loops, later stages)
            for n in nodes:
                if isinstance(n, (Let, Var)):
                    types[n.var] = self.etype(n.expr, types)
                elif isinstance(n, For):
                    types[n.var] = None
                elif isinstance(n, Scalar):
                    types[n.var] = n.dtype.np
        return types

    def tensor_dtype(self, name: str) -> dt.DType:
        if name not in self.tensor_queue:
            raise LoweringError(f"kernel {self.k.name}: tensor {name} is never taken from a queue")
        return self.queues[self.tensor_queue[name]].dtype

    def etype(self, e, types=None):
        types = self.types if types is None else types
        if isinstance(e, bool):
            raise LoweringError("bool is not an expression")
        if isinstance(e, int):
            return None
        if isinstance(e, float):
            return np.dtype(np.float32)
        if isinstance(e, str):
            if e.startswith("t."):
                f = self.typed.get(e[2:])
                return None if f is None or f.ctype != "float" else PYFLOAT
            return types.get(e)
        op = e[0]
        if op == "[]":
            return None
        if op == "load":
            return self.gms[e[1]].dtype.np
        if op == "get":
            return self.tensor_dtype(e[1]).np
        if op == "cast":
            return e[1].np
        if op == "neg":
            return self.etype(e[1], types)
        if op == "sel":
            return _promote(self.etype(e[2], types), self.etype(e[3], types))
        a, b = self.etype(e[1], types), self.etype(e[2], types)
        typed = isinstance(a, np.dtype) or isinstance(b, np.dtype)
        if op in ("fmax", "fmin", "min") and (typed or a is PYFLOAT or b is PYFLOAT):
            return _promote(a, b)
        if typed and op in "+-*/":
            r = _promote(a, b)
            return _F64 if op == "/" and r.kind in "iub" else r
        return None

    # -- the module ---------------------------------------------------------------------------------
    def build(self) -> ir.Module:
        k = self.k
        fn, b = kernel_function(self.module, SYMBOL)
        self.fn = fn
        self.ab = b                     # the entry block: allocas and the arguments
        b0, b1, args, arena = fn.args
        self.args, self.arena = args, arena
        self._arena_bufs = {}   # (queue, constant buffer index) -> its address (`arena_buffer`)
        # the argument block's words, each loaded in the entry block when first read (`_EntryValues`):
        # a kernel reads a few of its tiling words, fields and queues' offsets
        self.words = _EntryValues({name: (lambda w=w: b.trunc(self._arg(b, w), I32))
                                   for name, (w, n) in self.offsets.items() if n == 0})
        nw = k.word_count

        def typed(j, f):
            raw = self._arg(b, nw + j)
            return b.bitcast(raw, F64) if f.ctype == "float" else b.trunc(raw, I32)
        self.typed_vals = _EntryValues({f.name: (lambda j=j, f=f: typed(j, f)) for j, f in enumerate(typed_fields(k))})
        at = nw + len(self.typed)

        def gm(at, g):   # a work tensor's word is its offset in the arena
            word = self._arg(b, at)
            return b.gep(arena, [word], source_etype=I8) if g.role == "work" else b.inttoptr(word, PTR)
        self.gm_ptr = _EntryValues({g.name: (lambda at=at + i, g=g: gm(at, g)) for i, g in enumerate(k.gms)})
        at += len(k.gms)
        self.q_off = _EntryValues({q.name: (lambda w=at + 2 * i: self._arg(b, w)) for i, q in enumerate(k.queues)})
        self.q_size = _EntryValues({q.name: (lambda w=at + 2 * i + 1: self._arg(b, w)) for i, q in enumerate(k.queues)})
        at += 2 * len(k.queues)
        # (a variant without streaming ignores the flag: its stores are plain, `lower_kernel`)
        self.stream = (b.icmp_unsigned("!=", self._arg(b, at), ir.Constant(I64, 0)) if self.streaming
                       else ir.Constant(I1, 0))
        at += 1
        if k.matmuls:
            sgemm_t = ir.FunctionType(VOID, [I32, I32, I32, I64, I64, I64, F32, PTR, I64, PTR, I64, F32, PTR, I64])
            self.sgemm = b.inttoptr(self._arg(b, at), sgemm_t.as_pointer())
            at += 1
            if self.tiled_products:
                if self.attn_p_over_s:
                    self.attn_p = (b.alloca(PTR, name="attn.p"), b.alloca(I64, name="attn.p.ld"))
                if self.attn_top:   # 16 lanes of each S row's maximum (a block's rows: qk's singleCoreM)
                    rows = b.zext(self.words[mm_field(self.mms["qk"], "singleCoreM")[2:]], I64)
                    self.top_buf = b.alloca(F32, size=b.mul(rows, ir.Constant(I64, LANES)), name="attn.top")
                    self.top_buf.align = 64
            self.mm_scratch = {}
            self.pack_cache = {}   # Matmul name -> (slots, slot floats) of its packed blocks of B (`packs_b_once`)
            for mm in k.matmuls:
                self.mm_scratch[mm.name] = [self._arg(b, at + j) for j in range(3)]
                at += 3
                if packs_b_once(k, mm) and self.tiled_products and mm.name not in self.products:
                    self._pack_cache(b, mm)
            if self.products:   # numpy's vector routines: cblas_sgemv, cblas_sdot
                gemv_t = ir.FunctionType(VOID, [I32, I32, I64, I64, F32, PTR, I64, PTR, I64, F32, PTR, I64])
                dot_t = ir.FunctionType(F32, [I64, PTR, I64, PTR, I64])
                self.sgemv = b.inttoptr(self._arg(b, at), gemv_t.as_pointer())
                self.sdot = b.inttoptr(self._arg(b, at + 1), dot_t.as_pointer())
                at += 2
            if self.host_product:
                self.product = b.inttoptr(self._arg(b, at), PTR)
                at += 1
        self.nt_md = self.module.add_metadata([ir.Constant(I32, 1)])
        self.slots = {}
        for name, kind in self.types.items():
            self.slots[name] = b.alloca(_reg(kind), name=f"v.{name}")
        for n in self.nodes if self.compensated_folds else ():   # every compensated sum's lanes, before any Dup
            v = self._fold(n) if isinstance(n, For) else None
            if v is not None and self._compensated(v) and self._fold_lanes(v) is not None:
                self._comp_of(v.dst, self._fold_lanes(v))
        self.q_state = {q.name: [b.alloca(I8, name=f"q.{q.name}.{i}") for i in range(q.depth)]
                        for q in k.queues if self._tracked(q.name)}
        self.t_index = {t: b.alloca(I32, name=f"t.{t}") for t, q in self.tensor_queue.items() if q in self.q_state}
        # an aliased queue's buffers are pointers: the arena's buffer, or the GM rows a CopyIn left there
        self.buf_ptr = {q: [b.alloca(PTR, name=f"p.{q}.{i}") for i in range(self.queues[q].depth)]
                        for q in sorted(self.aliased | self.c_aliased | set(self.out_aliased))}
        # a guarded aliased queue's buffers (`_in_aliasing`): the bytes of GM rows a buffer stands
        # for; 0: its arena buffer, nothing written since AllocTensor; -1: its arena buffer, written
        self.in_len = {q: [b.alloca(I64, name=f"l.{q}.{i}") for i in range(self.queues[q].depth)]
                       for q in sorted(self.in_guarded)}
        # a strided queue's buffers (`_strided`): UB row stride, GM row stride, rows, columns of the
        # strided GM rows a buffer stands for; a UB stride of 0: its arena buffer or contiguous GM rows
        self.geom = {q: [[b.alloca(I64, name=f"g.{q}.{i}.{f}") for f in "ugrc"] for i in range(self.queues[q].depth)]
                     for q in sorted(self.strided)}
        # an out-aliased queue's buffers: the address past the GM rows a buffer stands for (writes
        # beyond it move the buffer home first, `guard_out`); all ones for an arena buffer
        self.out_end = {q: [b.alloca(I64, name=f"e.{q}.{i}") for i in range(self.queues[q].depth)]
                        for q in sorted(self.out_aliased)}
        # per Matmul object: its operands' addresses, the block's m, n, k, the tile being handed out
        # and the block of C that Iterate filled (the arena's, or a host product's) with its row stride
        self.mm_vars = {mm.name: {v: b.alloca(PTR if v in ("A", "B", "C") else I64 if v == "ldc" else I32,
                                              name=f"mm.{mm.name}.{v}")
                                  for v in ("A", "B", "C", "Anz", "Bnz", "m", "n", "k", "mi", "ni", "ldc")}
                        for mm in k.matmuls}
        self.nz_rows = {t: b.alloca(I32, name=f"nz.{t}") for t in self.nz}   # the rows its last CopyNz held
        body = fn.append_basic_block("body")
        self.b = ir.IRBuilder(body)
        self._blocks(b0, b1)
        self.b.fence("seq_cst")   # the streaming stores reach memory before the caller reads it
        self.b.ret_void()
        self.ab.branch(body)
        return self.module

    def _arg(self, b, i: int):
        return b.load(b.gep(self.args, [ir.Constant(I64, i)], source_etype=I64), typ=I64, align=8)

    def _core_start(self) -> None:
        """Per block (core): the members (Init), every queue buffer free, aliased buffers home, the
        workspace slices zeroed."""
        k = self.k
        for g in k.gms:
            if g.role == "work" and not self.host_product:   # only the skipped im2col stage uses it
                f = self.kc.intrinsic("llvm.memset.p0.i64", VOID, [PTR, I8, I64, I1])
                self.b.call(f, [self.gm_ptr[g.name], ir.Constant(I8, 0),
                                ir.Constant(I64, work_elems(g) * g.dtype.itemsize), ir.Constant(I1, 0)])
        for m in k.members:
            if m.init is None:
                v = ir.Constant(_reg(self.types[m.name]), 0 if m.dtype is None or not m.dtype.is_float else 0.0)
                self.b.store(v, self.slots[m.name])
            else:
                self.assign(m.name, self.ev(m.init))
        for q, slots in self.buf_ptr.items():
            for i, slot in enumerate(slots):
                self.b.store(self.arena_buffer(q, ir.Constant(I64, i)), slot)
        for slots in self.out_end.values():
            for slot in slots:
                self.b.store(ir.Constant(I64, -1), slot)
        for slots in self.in_len.values():
            for slot in slots:
                self.b.store(ir.Constant(I64, 0), slot)
        for bufs in self.geom.values():
            for slots in bufs:
                self.b.store(ir.Constant(I64, 0), slots[0])
        for states in self.q_state.values():   # every buffer free (0) at the block's start
            for slot in states:
                self.b.store(ir.Constant(I8, 0), slot)
        for slot in self.nz_rows.values():
            self.b.store(ir.Constant(I32, 0), slot)
        for mm in k.matmuls:
            v = self.mm_vars[mm.name]
            for name in ("Anz", "Bnz"):
                self.b.store(ir.Constant(I32, 0), v[name])
            for name, field in (("m", "singleCoreM"), ("n", "singleCoreN"), ("k", "Ka")):
                self.b.store(self.ev(mm_field(mm, field))[0], v[name])

    def _blocks(self, b0, b1):
        k, b = self.k, self.b
        if k.process is not None:   # a cube kernel: Process once per core, Return leaves it
            def core(blk, _):
                self.b.store(self.b.trunc(blk, I32), self.slots["block"])
                self.b.store(ir.Constant(I32, 0), self.slots["subblock"])
                self.b.store(ir.Constant(I32, 1), self.slots["ratio"])
                self._core_start()
                self.core_end = self.fn.append_basic_block("core.end")
                self.body(k.process)
                self.b.branch(self.core_end)
                self.b.position_at_end(self.core_end)
                return []
            carried_loop(b, b0, b1, 1, [], core, "core")
            return
        total = b.zext(self.words["totalTiles"], I64)
        per_core = b.zext(self.words["tilesPerCore"], I64)

        def block(blk, _):
            self._core_start()
            for st in k.stages:
                if st.once:
                    self.body(st.body)
            t0 = self.b.mul(blk, per_core)
            t1 = self.b.add(t0, per_core)
            t1 = self.b.select(self.b.icmp_signed("<", t1, total), t1, total)

            def tile(t, _):
                for st in k.stages:
                    if st.once:
                        continue
                    if st.param:
                        self.b.store(self.b.trunc(t, I32), self.slots[st.param])
                    self.body(st.body)
                return []
            carried_loop(self.b, t0, t1, 1, [], tile, "tile")
            return []
        carried_loop(b, b0, b1, 1, [], block, "block")

    # -- scalars --------------------------------------------------------------------------------------
    def assign(self, name: str, val) -> None:
        v, kind = val
        self.b.store(self.convert(v, kind, self.types[name]), self.slots[name])

    def read(self, name: str):
        return self.b.load(self.slots[name]), self.types[name]

    def ev(self, e):
        """(LLVM value, kind) of an expression (module doc: uint32 on i32, typed as numpy)."""
        b = self.b
        if isinstance(e, int):
            return ir.Constant(I32, e & 0xFFFFFFFF), None
        if isinstance(e, float):
            return ir.Constant(F32, float(np.float32(e))), np.dtype(np.float32)
        if isinstance(e, str):
            if e.startswith("t."):
                name = e[2:]
                if name in self.typed:
                    f = self.typed[name]
                    return self.typed_vals[name], PYFLOAT if f.ctype == "float" else None
                if name not in self.words:
                    raise LoweringError(f"kernel {self.k.name}: {e} is not a tiling word")
                return self.words[name], None
            if e not in self.slots:
                raise LoweringError(f"kernel {self.k.name}: {e} is read but never set")
            return self.read(e)
        op = e[0]
        if op == "[]":
            w, n = self.offsets[e[1][2:]]
            i = b.add(ir.Constant(I64, w), b.zext(self.ev_u32(e[2]), I64))
            p = b.gep(self.args, [i], source_etype=I64)
            return b.trunc(b.load(p, typ=I64, align=8), I32), None
        if op == "load":
            g = self.gms[e[1]]
            i = ir.Constant(I64, 0) if len(e) == 2 else b.zext(self.ev_u32(e[2]), I64)
            return self.load_scalar(b.gep(self.gm_ptr[e[1]], [i], source_etype=mem_type(g.dtype)), g.dtype), g.dtype.np
        if op == "get":
            d = self.tensor_dtype(e[1])
            return self.load_scalar(self.element_ptr(e[1], b.zext(self.ev_u32(e[2]), I64), d), d), d.np
        if op == "cast":
            v, kind = self.ev(e[2])
            return self.convert(v, kind, e[1].np), e[1].np
        if op == "neg":
            v, kind = self.ev(e[1])
            if _reg(kind) in (F32, F64):
                return b.fneg(v), kind
            return b.sub(ir.Constant(v.type, 0), v), kind
        if op == "sel":
            c = self.truth(self.ev(e[1]))
            (x, kx), (y, ky) = self.ev(e[2]), self.ev(e[3])
            r = _promote(kx, ky)
            return b.select(c, self.convert(x, kx, r), self.convert(y, ky, r)), r
        (x, kx), (y, ky) = self.ev(e[1]), self.ev(e[2])
        typed = isinstance(kx, np.dtype) or isinstance(ky, np.dtype)
        if op in ("fmax", "fmin") or (op == "min" and (typed or PYFLOAT in (kx, ky))):
            r = _promote(kx, ky)
            x, y = self.convert(x, kx, r), self.convert(y, ky, r)
            cmp = {"fmax": ">", "fmin": "<", "min": ">"}[op]   # fmax: y if y > x; min: y if x > y
            pick_y = self.compare(cmp, y, x, r) if op != "min" else self.compare(">", x, y, r)
            return b.select(pick_y, y, x), r
        if typed and op in "+-*/":
            return self.typed_arith(op, x, kx, y, ky)
        if op in ("<", "<=", ">", ">=", "==", "!="):
            r = _promote(kx, ky)
            c = self.compare(op, self.convert(x, kx, r), self.convert(y, ky, r), r)
            return b.zext(c, I32), None
        if op in ("&&", "||"):
            tx, ty = self.truth((x, kx)), self.truth((y, ky))
            return b.zext(b.and_(tx, ty) if op == "&&" else b.or_(tx, ty), I32), None
        if kx is not None or ky is not None:
            raise LoweringError(f"kernel {self.k.name}: {op} of typed scalars")
        if op == "+":
            return b.add(x, y), None
        if op == "-":
            return b.sub(x, y), None
        if op == "*":
            return b.mul(x, y), None
        if op == "/":
            return b.udiv(x, y), None
        if op == "%":
            return b.urem(x, y), None
        if op == "min":
            return b.select(b.icmp_unsigned("<", y, x), y, x), None
        if op == "pad":
            return b.mul(b.udiv(b.add(x, b.sub(y, ir.Constant(I32, 1))), y), y), None
        raise LoweringError(f"kernel {self.k.name}: expression {e!r}")

    def ev_u32(self, e):
        v, kind = self.ev(e)
        return self.convert(v, kind, None) if kind is not None else v

    def ev_i64(self, e):
        v = self.ev_u32(e)
        if isinstance(v, ir.Constant) and v.type == I32 and isinstance(v.constant, int):
            return ir.Constant(I64, v.constant & 0xFFFFFFFF)   # (a literal offset or count: no zext)
        return self.b.zext(v, I64)

    def truth(self, val):
        v, kind = val
        if v.type in (F32, F64):
            return self.b.fcmp_unordered("!=", v, ir.Constant(v.type, 0.0))
        return self.b.icmp_unsigned("!=", v, ir.Constant(v.type, 0))

    def compare(self, op: str, x, y, kind):
        b = self.b
        if x.type in (F32, F64):
            return b.fcmp_unordered(op, x, y) if op == "!=" else b.fcmp_ordered(op, x, y)
        signed = isinstance(kind, np.dtype) and kind.kind == "i"
        return (b.icmp_signed if signed else b.icmp_unsigned)(op, x, y)

    def typed_arith(self, op, x, kx, y, ky):
        b = self.b
        r = _promote(kx, ky)
        if op == "/" and isinstance(r, np.dtype) and r.kind in "iub":
            r = _F64
        x, y = self.convert(x, kx, r), self.convert(y, ky, r)
        if x.type in (F32, F64):
            v = {"+": b.fadd, "-": b.fsub, "*": b.fmul, "/": b.fdiv}[op](x, y)
            d = _kind_dtype(r)
            return (self.round_scalar(v, d) if d in (dt.float16, dt.bfloat16) else v), r
        v = {"+": b.add, "-": b.sub, "*": b.mul}[op](x, y)
        return v, r

    def _splat_em(self) -> StmtEmitter:
        return StmtEmitter(self.kc, self.b, {})

    def round_scalar(self, v, d: dt.DType):
        em = self._splat_em()
        return self.b.extract_element(em.round_to(em.splat_value(v), d), ir.Constant(I32, 0))

    def convert(self, v, src, dst):
        """A scalar of kind src as kind dst (numpy's astype; module doc)."""
        b = self.b
        if src is dst or (isinstance(src, np.dtype) and isinstance(dst, np.dtype) and src == dst):
            return v
        if src is PYFLOAT:
            src = _F64
        if dst is PYFLOAT:
            dst = _F64
        if src == dst:
            return v
        if dst is None:     # to the uint32 of index arithmetic
            if v.type == F64 or v.type == F32:
                return b.fptoui(v, I32)
            return b.zext(v, I32) if v.type.width < 32 else v
        if dst == _F64:
            if src is None:
                return b.uitofp(v, F64)
            if v.type == F32:
                return b.fpext(v, F64)
            unsigned = src.kind in "ub"
            return (b.uitofp if unsigned else b.sitofp)(v, F64)
        d = _kind_dtype(dst)
        if d is None:
            raise LoweringError(f"no conversion to {dst}")
        if src is None or src == _F64:
            if src is None:
                wide = b.uitofp(v, F32) if d.is_float else v
                if not d.is_float:
                    return v if d == dt.int32 else self.convert(v, np.dtype(np.int32), dst)
            else:
                if not d.is_float:
                    return self.convert(b.fptosi(v, I32), np.dtype(np.int32), dst)
                wide = b.fptrunc(v, F32)
            return wide if d == dt.float32 else self.round_scalar(wide, d)
        em = self._splat_em()
        s = _kind_dtype(src)
        return b.extract_element(em.convert(em.splat_value(v), s, d, None), ir.Constant(I32, 0))

    # -- memory ---------------------------------------------------------------------------------------
    def load_scalar(self, ptr, d: dt.DType):
        b = self.b
        v = b.load(ptr, typ=mem_type(d), align=d.itemsize)
        if d == dt.float16:
            return b.fpext(v, F32)
        if d == dt.bfloat16:
            return b.bitcast(b.shl(b.zext(v, I32), ir.Constant(I32, 16)), F32)
        return v

    def store_scalar(self, v, ptr, d: dt.DType) -> None:
        b = self.b
        if d == dt.float16:
            v = b.fptrunc(v, F16)
        elif d == dt.bfloat16:
            v = b.trunc(b.lshr(b.bitcast(v, I32), ir.Constant(I32, 16)), I16)
        b.store(v, ptr, align=d.itemsize)

    def tensor_base(self, name: str):
        """The i8 address of the buffer tensor `name` holds now."""
        b = self.b
        q = self.tensor_queue.get(name)
        if q is None:
            raise LoweringError(f"kernel {self.k.name}: tensor {name} is never taken from a queue")
        idx = b.load(self.t_index[name]) if name in self.t_index else ir.Constant(I32, 0)
        if q in self.buf_ptr:
            slots = self.buf_ptr[q]
            ptr = b.load(slots[0], typ=PTR)
            for i in range(1, len(slots)):
                ptr = b.select(b.icmp_unsigned("==", idx, ir.Constant(I32, i)), b.load(slots[i], typ=PTR), ptr)
            return ptr
        return self.arena_buffer(q, idx)

    def arena_buffer(self, q: str, idx):
        """The address of queue q's buffer idx (an i32 or i64 value) in the arena.  A constant
        buffer's address is computed once, in the entry block: a queue's buffer 0 is addressed
        wherever a tensor of a one-buffer queue is (a softmax: 20 times, 3 instructions each)."""
        if isinstance(idx, ir.Constant):
            key = (q, int(idx.constant))
            ptr = self._arena_bufs.get(key)
            if ptr is None:
                a = self.ab
                off = self.q_off[q] if key[1] == 0 else \
                    a.add(self.q_off[q], a.mul(ir.Constant(I64, key[1]), self.q_size[q]))
                ptr = self._arena_bufs[key] = a.gep(self.arena, [off], source_etype=I8)
            return ptr
        b = self.b
        if idx.type != I64:
            idx = b.zext(idx, I64)
        return b.gep(self.arena, [b.add(self.q_off[q], b.mul(idx, self.q_size[q]))], source_etype=I8)

    def set_buffer(self, name: str, ptr) -> None:
        """The buffer tensor `name` holds is now at `ptr` (an aliased queue's)."""
        self._store_slot(name, self.buf_ptr[self.tensor_queue[name]], ptr, PTR)

    def _store_slot(self, name: str, slots, value, t) -> None:
        """Store `value` into the slot of the buffer tensor `name` holds now (one slot per buffer of
        its queue: the buffer index picks; a one-buffer queue's slot is stored directly, which keeps
        a large kernel's IR -- and its compile time -- down)."""
        b = self.b
        if len(slots) == 1:
            b.store(value, slots[0])
            return
        idx = b.load(self.t_index[name]) if name in self.t_index else ir.Constant(I32, 0)
        for i, slot in enumerate(slots):
            b.store(b.select(b.icmp_unsigned("==", idx, ir.Constant(I32, i)), value, b.load(slot, typ=t)), slot)

    def element_ptr(self, name: str, index, d: dt.DType):
        return self.b.gep(self.tensor_base(name), [index], source_etype=mem_type(d))

    def ref_ptr(self, r: Ref, extra=None, off=None):
        """(address of a Ref's first element, its element type, its element bytes, its dtype or None);
        `off`: the element offset in the buffer, when the caller computed it (`strided_offset`)."""
        b = self.b
        d = self.tensor_dtype(r.tensor)
        if off is None:
            off = self.ev_i64(r.offset)
            if extra is not None:
                at = extra if _is_zero(off) else b.add(off, extra)
                off = b.zext(b.trunc(at, I32), I64)   # uint32 like the interpreter's offset
            off = self._remap(r.tensor, off)
        base = self.tensor_base(r.tensor)
        if isinstance(off, ir.Constant):   # (a Ref at a literal offset: most are at 0)
            if off.constant:
                base = b.gep(base, [ir.Constant(I64, off.constant * d.itemsize)], source_etype=I8)
        else:
            base = b.gep(base, [b.mul(off, ir.Constant(I64, d.itemsize))], source_etype=I8)
        if r.view is not None:
            t, size = _VIEW_TYPES[r.view]
            return base, t, size, None
        return base, mem_type(d), d.itemsize, d

    def copy_rows(self, dst, src, dst_stride, src_stride, rows, row_bytes) -> None:
        """`rows` rows of `row_bytes` bytes, memcpy per row, row strides in bytes: a call of the
        module's one row-copy function (emitted once: a view kernel copies rows at dozens of
        places, and each inlined loop made its IR -- and its compile -- larger)."""
        fn = self.module.globals.get("copy.rows")
        if fn is None:
            saved = self.b
            fn = ir.Function(self.module, ir.FunctionType(VOID, [PTR, PTR, I64, I64, I64, I64]), "copy.rows")
            fn.linkage = "internal"
            fn.attributes.add("noinline")
            b = self.b = ir.IRBuilder(fn.append_basic_block("entry"))
            d_, s_, ds, ss, n, nb = fn.args

            def row(r, _):
                self.memcpy(b.gep(d_, [b.mul(r, ds)], source_etype=I8), b.gep(s_, [b.mul(r, ss)], source_etype=I8), nb)
                return []
            carried_loop(b, ir.Constant(I64, 0), n, 1, [], row, "rows")
            b.ret_void()
            self.b = saved
        self.b.call(fn, [dst, src, dst_stride, src_stride, rows, row_bytes])

    def memcpy(self, dst, src, nbytes, move=False) -> None:
        name = "llvm.memmove.p0.p0.i64" if move else "llvm.memcpy.p0.p0.i64"
        f = self.kc.intrinsic(name, VOID, [PTR, PTR, I64, I1])
        self.b.call(f, [dst, src, nbytes, ir.Constant(I1, 0)])

    # -- statements -------------------------------------------------------------------------------------
    def body(self, nodes) -> None:
        nodes = list(nodes)
        i = 0
        while i < len(nodes):
            blk = attention_softmax.match(self, nodes, i) if self.tiled_products else None
            if blk is not None:   # the attention kind's online softmax: two passes per row
                attention_softmax.emit(self, blk)
                i += blk.nodes
                continue
            into = attention_softmax.match_accumulate(self, nodes, i) if self.tiled_products else None
            if into is not None:   # O += P V: the product accumulates into O (no tile of C, no Add)
                self.mm_iterate(nodes[i], into=into)
                for n in (nodes[i + 1], nodes[i + 2], nodes[i + 4]):
                    self.node(n)
                i += 5
                continue
            done = self._register_fold(nodes[i:i + 4])   # Dup, fold, [halving,] WholeReduce: lanes in registers
            if done:
                i += done
                continue
            if not isinstance(nodes[i], Step):
                self.node(nodes[i])
                i += 1
                continue
            j = i + 1   # the Steps that follow over the same elements run as one group
            while j < len(nodes) and isinstance(nodes[j], Step) and _same_elements(nodes[i], nodes[j]):
                j += 1
            fold = self._step_fold(nodes[i:j], nodes[j:j + 2])
            self.prefill(nodes[i])   # a Step with prefills is alone in its group (_same_elements)
            red = self._lanes_reduction(nodes[j + 2:j + 4]) if fold is not None else None
            reduced = self.steps(nodes[i:j], fold, red)
            i = j + (2 if fold is not None else 0) + ((2 if red[0] is not None else 1) if reduced else 0)

    def node(self, node) -> None:
        b = self.b
        if isinstance(node, (Let, Var)):
            self.assign(node.var, self.ev(node.expr))
        elif isinstance(node, Set):
            v, kind = self.ev(node.expr)
            if node.op == "=":
                self.assign(node.var, (v, kind))
                return
            old, okind = self.read(node.var)
            if okind is not None or kind is not None:
                raise LoweringError(f"kernel {self.k.name}: {node.op} on a typed scalar")
            new = b.add(old, v) if node.op == "+=" else b.udiv(old, v)
            b.store(new, self.slots[node.var])
        elif isinstance(node, For):
            self.for_(node)
        elif isinstance(node, If):
            switch = self._copy_switch(node)
            if switch is not None:   # one CopyIn from the GM tensor the conditions pick
                conds, last, copy = switch
                ptr = self.gm_ptr[last]
                for cond, gm in reversed(conds):
                    ptr = b.select(self.truth(self.ev(cond)), self.gm_ptr[gm], ptr)
                self.copy(copy, gm_base=ptr)
                return
            c = self.truth(self.ev(node.cond))
            if node.orelse:
                with b.if_else(c) as (then, other):
                    with then:
                        self.body(node.then)
                    with other:
                        self.body(node.orelse)
            else:
                with b.if_then(c):
                    self.body(node.then)
        elif isinstance(node, (Alloc, EnQue, DeQue, Free, Decl)):
            self.queue_op(node)
        elif isinstance(node, (CopyIn, CopyOut)):
            self.copy(node)
        elif isinstance(node, GatherRow):
            self.gather_row(node)
        elif isinstance(node, UbCopy):
            self.in_guard(node.dst)
            dd, sd = self.tensor_dtype(node.dst), self.tensor_dtype(node.src)
            if dd != sd:
                raise LoweringError(f"kernel {self.k.name}: a UB copy from {sd} to {dd}")
            self.ub_copy(node)
        elif isinstance(node, Move):
            self.in_guard(node.dst)
            dd, sd = self.tensor_dtype(node.dst), self.tensor_dtype(node.src)
            v = self.load_scalar(self.element_ptr(node.src, self.ev_i64(node.src_index), sd), sd)
            v = self.convert(v, sd.np, dd.np)
            self.store_scalar(v, self.element_ptr(node.dst, self.ev_i64(node.dst_index), dd), dd)
        elif isinstance(node, (Barrier, Sync)):
            pass
        elif isinstance(node, Scalar):
            v, kind = self.ev(node.expr)
            b.store(self.convert(v, kind, node.dtype.np), self.slots[node.var])
        elif isinstance(node, Put):
            self.in_guard(node.tensor)
            d = self.tensor_dtype(node.tensor)
            v, kind = self.ev(node.expr)
            self.store_scalar(self.convert(v, kind, d.np), self.element_ptr(node.tensor, self.ev_i64(node.index), d), d)
        elif isinstance(node, Dup):
            self.dup(node)
        elif isinstance(node, Vec):
            self.vec_op(node)
        elif isinstance(node, Step):
            self.prefill(node)
            self.steps([node])
        elif isinstance(node, Call):
            if self.host_product and node.stage == _HostProduct.BUILD_STAGE:
                return
            st = self.stage_of[node.stage]
            if st.param:
                self.assign(st.param, self.ev(node.arg))
            self.body(st.body)
        elif isinstance(node, Return):
            b.branch(self.core_end)
            b.position_at_end(self.fn.append_basic_block("after.return"))   # unreachable
        elif isinstance(node, MmSet):
            v = self.mm_vars[node.mm]
            if node.src in self.gms:
                g = self.gms[node.src]
                p = b.gep(self.gm_ptr[node.src], [self.ev_i64(node.offset)], source_etype=mem_type(g.dtype))
                nz = ir.Constant(I32, 0)
            elif node.src in self.nz_rows:   # an L1 tensor in NZ (its number + 1): Iterate reads its rows
                p = self.tensor_base(node.src)
                nz = ir.Constant(I32, self.nz.index(node.src) + 1)
            else:                            # a UB tensor, rows as in GM
                p = self.ref_ptr(Ref(node.src, node.offset))[0]
                nz = ir.Constant(I32, 0)
            b.store(p, v[node.which])
            b.store(nz, v[node.which + "nz"])
        elif isinstance(node, CopyNz):
            self.copy_nz(node)
        elif isinstance(node, MmTail):
            v, mm = self.mm_vars[node.mm], self.mms[node.mm]
            b.store(self.ev_u32(node.m), v["m"])
            b.store(self.ev_u32(node.n), v["n"])
            b.store(self.ev_u32(mm_field(mm, "Ka") if node.k is None else node.k), v["k"])
        elif isinstance(node, MmIterate):
            self.mm_iterate(node)
        elif isinstance(node, MmGetC):
            self.mm_get_c(node)
        elif isinstance(node, MmEnd):
            pass
        else:
            raise LoweringError(f"kernel {self.k.name}: {type(node).__name__} nodes are not lowered to LLVM yet")

    # -- folds: a loop of one Vec accumulating into a UB tensor, the accumulator in registers --------------
    FOLD_STRIP = 4 * LANES   # elements of the accumulator carried in registers at once

    def _fold(self, node: For):
        """The Vec of a fold loop -- `for v: vec Add|Max|Min acc <- acc, src[f(v)] count c` on float32
        (or int32 lanes of an integer / bool src: the CPU row schedule's integer reductions) with
        acc's place and the bound of c independent of v (c itself loop-invariant, or min(W, ...)
        with W a number), src in another queue than acc, acc not standing for GM rows -- or None."""
        if node.down or len(node.body) != 1 or not isinstance(node.body[0], Vec):
            return None
        v = node.body[0]
        if v.api not in ("Add", "Max", "Min") or len(v.srcs) != 2 or v.srcs[0] != v.dst or v.dst.view or v.srcs[1].view:
            return None
        acc_q, src_q = self.tensor_queue.get(v.dst.tensor), self.tensor_queue.get(v.srcs[1].tensor)
        if acc_q is None or src_q is None or acc_q == src_q or acc_q in self.out_aliased or acc_q in self.aliased:
            return None
        acc_d, src_d = self.tensor_dtype(v.dst.tensor), self.tensor_dtype(v.srcs[1].tensor)
        if not (acc_d == src_d == dt.float32 or (acc_d == dt.int32 and src_d is not None and not src_d.is_float)):
            return None   # float32 lanes of float32, or int32 lanes of any integer / bool (widened)
        if node.var in _expr_names(v.dst.offset) or None in _expr_names(v.dst.offset) | _expr_names(v.count):
            return None
        if node.var in _expr_names(v.count):
            c = v.count
            if not (isinstance(c, tuple) and c[0] == "min" and isinstance(c[1], int)
                    and node.var not in _expr_names(c[1])):
                return None
        return v

    def _compensated(self, v: Vec) -> bool:
        """Whether a fold's Vec is a float sum llvm_kernel compensates (`compensated_folds`)."""
        return self.compensated_folds and v.api == "Add" and self.tensor_dtype(v.dst.tensor) == dt.float32

    def _fold_acc_type(self, v: Vec):
        """The LLVM element type of a fold's lanes: float32, or int32."""
        return F32 if self.tensor_dtype(v.dst.tensor) == dt.float32 else I32

    def _fold_src(self, v: Vec, ptr, off, mask):
        """A vector of a fold's source at `off`, in its lanes' form (8-bit integers and bools widened)."""
        d = self.tensor_dtype(v.srcs[1].tensor)
        x = self.vload(ptr, mem_type(d), d.itemsize, off, mask)
        if d in (dt.float32, dt.int32):
            return x
        return (self.b.sext if d == dt.int8 else self.b.zext)(x, vec(I32, LANES))

    def _fold_apply(self, v: Vec, acc, x):
        kind = v.api.lower()
        if kind == "add":
            return self.b.fadd(acc, x) if acc.type.element == F32 else self.b.add(acc, x)
        return self.np_max(acc, x, kind, dt.float32 if acc.type.element == F32 else dt.int32)

    def _fold_bounds(self, node: For, v: Vec):
        """A fold loop's (lanes bound, start, end, step, accumulator address): the bound never past
        the accumulator's buffer (a count bound larger than the tensor)."""
        b = self.b
        bound = self.ev_i64(v.count[1] if node.var in _expr_names(v.count) else v.count)
        q = self.tensor_queue[v.dst.tensor]
        room = b.sub(b.udiv(self.q_size[q], ir.Constant(I64, 4)), self.ev_i64(v.dst.offset))
        bound = b.select(b.icmp_unsigned("<", room, bound), room, bound)
        start, end = b.zext(self.ev_u32(node.start), I64), b.zext(self.ev_u32(node.end), I64)
        step = ir.Constant(I64, node.step) if isinstance(node.step, int) else b.zext(self.ev_u32(node.step), I64)
        return bound, start, end, step, self.ref_ptr(v.dst)[0]

    def fold(self, node: For, v: Vec) -> None:
        """The fold loop with the accumulator in registers, strip by strip of FOLD_STRIP elements: a
        strip's vectors loaded once, each pass of the loop applies the Vec's operation to the lanes
        below its count (the same operation on each lane in the same order: the same bits), stored
        once after the loop (lanes no pass reached are stored as they were loaded).  An accumulator
        wider than one strip, or a compensated sum (`compensated_folds`), runs in blocks of passes
        (`_blocked_fold`)."""
        b = self.b
        wide = isinstance(v.count, tuple) and isinstance(v.count[1], int) and v.count[1] > self.FOLD_STRIP
        # int32 lanes (exact in any order) of a row's consecutive elements: walked like a wide fold;
        # a column kernel's (every pass one row of the tile: `_fold_rows` is None) strip by strip
        walked = self._fold_acc_type(v) == I32 and self._fold_rows(node, v) is not None
        if wide or walked or (self._compensated(v) and self._fold_lanes(v) is not None):
            self._blocked_fold(node, v)
            return
        bound, start, end, step, acc = self._fold_bounds(node, v)
        t = self._fold_acc_type(v)
        rows = self._fold_stride(node, v)

        def strip(s0, _):
            offs, masks, whole_strip, init = self._fold_strip_load(acc, s0, bound, t)
            body = self._fold_pass(node, v, s0, offs) if rows is None else \
                self._strided_pass(v, rows, offs, masks, whole_strip)
            _, regs = carried_loop(b, start, end, step, init, body, "fold")
            self._fold_strip_store(acc, offs, masks, whole_strip, regs)
            return []
        with b.if_then(b.icmp_unsigned("<", start, end)):
            carried_loop(b, ir.Constant(I64, 0), bound, self.FOLD_STRIP, [], strip, "strip")

    def _fold_stride(self, node: For, v: Vec):
        """(the source's first row, its row stride in elements) when a fold's count is the same for
        every pass and each pass reads the source `S` elements further -- `for r: vec Op acc <- acc,
        src[r * S] count n` (a column kernel's walk over its tile's rows, S and n free of r) -- with
        the source's buffer read as it is (not standing for strided GM rows); else None.  Its passes
        (`_strided_pass`) then address rows from the first one and reuse the strip's lane masks:
        evaluated per pass (uint32 offsets, the count, the masks) they cost more than the adds
        (an int32 sum over [7, 1000, 33] axis 1: 1.22x llvm_reduce's time)."""
        src = v.srcs[1]
        off = src.offset
        if node.var in _expr_names(v.count) or self.tensor_queue.get(src.tensor) in self.strided:
            return None
        if not (isinstance(off, tuple) and len(off) == 3 and off[0] == "*" and node.var in off[1:]):
            return None
        stride = off[2] if off[1] == node.var else off[1]
        if node.var in _expr_names(stride) or None in _expr_names(stride):
            return None
        return self.ref_ptr(Ref(src.tensor, 0, src.view))[0], self.ev_i64(stride)

    def _strided_pass(self, v: Vec, rows, offs, masks, whole_strip):
        """A pass of `_fold_stride`'s fold: row i of the source at first + i * S, the strip's lanes
        below the count (its masks: the count is the strip's bound) -- the lanes `_fold_pass` takes,
        in the same order."""
        b = self.b
        first, stride = rows
        d = self.tensor_dtype(v.srcs[1].tensor)

        def pass_(i, regs):
            src = b.gep(first, [b.mul(i, stride)], source_etype=mem_type(d))

            def whole():
                return [self._fold_apply(v, r, self._fold_src(v, src, off, None)) for r, off in zip(regs, offs)]

            def part():
                return [b.select(m, self._fold_apply(v, r, self._fold_src(v, src, off, m)), r)
                        for r, off, m in zip(regs, offs, masks)]
            return branch_values(b, whole_strip, whole, part)
        return pass_

    # -- a column kernel's walk: Steps and folds over the rows of a tile, strip by strip of columns -----
    # rows per block of a column walk, each block strip by strip: one thread, [K, 1024] float32, count
    # `sum(x > 0.5, 0)` K = 256 / 4096: 8 rows 0.014 / 0.31 ms, 16 rows 0.021 / 0.49 ms; var(x, 0): 8 rows
    # 0.050 / 1.21-1.34 ms, 4 rows 0.048 / 1.47-1.55, 32 rows 0.055 / 1.76-1.94 (main's row-by-row
    # loops 0.067 / 1.17-1.42)
    WALK_BLOCK = 8

    def _walk_plan(self, node: For):
        """(the body's folds, {ref: its row stride or None}, the queues the body writes) when a loop's
        body is Steps and folds over
        the same `n` elements of every row -- `for r: step ...; [vec Cast w <- src;] vec Add|Max|Min acc
        <- acc, src count n` (the column kind's walk over K: a tile's rows r, the elem ops and reductions of each
        column) -- that may run strip by strip of columns, rows inside (`column_walk`); else None.
        Each lane then sees the same operations in the same order (the same bits): every node is
        elementwise over [0, n) at its refs' offsets, a buffer the body writes is addressed at one
        offset free of r (a row's values, the accumulators), every other ref at such an offset or at
        r * S (the rows of a DMA group; a queue standing for strided GM rows only so, or at 0);
        accumulators are nothing else's; no prefills (they write lanes past the count), views,
        guarded queues or outputs computed in GM."""
        if node.down or not any(isinstance(n, Vec) for n in node.body) or \
                not any(isinstance(n, Step) for n in node.body):
            return None
        folds, refs, written = [], [], set()
        for n in node.body:
            if isinstance(n, Step):
                if n.prefill or n.count is not None or n.offset != 0 or n.scalars and any(
                        _kind_dtype(self.types[m]) is None for _, m in n.scalars):
                    return None
                outs = {st.dst for st in n.stmts}
                refs += [r for _, r in n.names]
                written |= {self.tensor_queue.get(r.tensor) for slot, r in n.names if slot in outs}
            elif isinstance(n, Vec) and n.api == "Cast" and n.count == "n" and len(n.srcs) == 1:
                if self.tensor_dtype(n.dst.tensor) is None or self.tensor_dtype(n.srcs[0].tensor) is None:
                    return None
                refs += [n.srcs[0], n.dst]   # (a 16-bit row widened for a float32 fold)
                written.add(self.tensor_queue.get(n.dst.tensor))
            elif isinstance(n, Vec):
                if n.api not in ("Add", "Max", "Min") or len(n.srcs) != 2 or n.srcs[0] != n.dst or n.count != "n":
                    return None
                acc_d, src_d = self.tensor_dtype(n.dst.tensor), self.tensor_dtype(n.srcs[1].tensor)
                if not (acc_d == src_d == dt.float32 or (acc_d == dt.int32 and src_d is not None and not src_d.is_float)):
                    return None
                folds.append(n)
                refs.append(n.srcs[1])
            else:
                return None
        accs = [self.tensor_queue.get(v.dst.tensor) for v in folds]
        if len(set(accs)) != len(accs) or set(accs) & ({self.tensor_queue.get(r.tensor) for r in refs} | written):
            return None
        rows, places = {}, {}
        for r in refs + [v.dst for v in folds]:
            q = self.tensor_queue.get(r.tensor)
            if q is None or r.view is not None or q in self.in_guarded or q in self.out_aliased or \
                    (q in self.strided and r.offset != 0 and node.var not in _expr_names(r.offset)):
                return None
            names = _expr_names(r.offset)
            if None in names:
                return None
            stride = None
            if node.var in names:
                off = r.offset
                if not (isinstance(off, tuple) and len(off) == 3 and off[0] == "*" and node.var in off[1:]) or q in written:
                    return None
                stride = off[2] if off[1] == node.var else off[1]
                if node.var in _expr_names(stride) or None in _expr_names(stride):
                    return None
            places.setdefault(q, set()).add(repr(r.offset))
            rows[r] = stride
        if any(len(places[q]) > 1 for q in written | set(accs)):
            return None
        if "n" not in self.slots:   # (the count the Steps run on: the enclosing `n`)
            return None
        return folds, rows, written

    def _walk_stride(self, name: str, stride, n):
        """The element stride from row to row of tensor `name` read at r * stride in a column walk: its
        GM row stride while its buffer stands for strided GM rows (`_strided`: row r of the walk is
        row r of the DMA when the stride is the buffer's UB row stride and n fits a row; else the rows
        move home first, `strided_home`), else `stride`."""
        if self.tensor_queue.get(name) not in self.strided:
            return stride
        return self._fit_or_home(name, stride, cols=n)

    def column_walk(self, node: For, folds: list, rows: dict, written: set) -> None:
        """`_walk_plan`'s loop: per strip of FOLD_STRIP columns the accumulators in registers and, for
        every row, each node on the strip's vectors in program order -- a value a Step writes and a
        later node of the row reads stays in registers (stored only when something outside the loop
        reads its buffer, or the row reads it before writing it), a value no row writes loaded once
        per strip -- then the accumulators stored.
        llvm_reduce.py's column kernels walked so (their Steps and folds per row of the tile, one loop
        each, were 1.3x its time on a compare's count)."""
        b = self.b
        start, end = b.zext(self.ev_u32(node.start), I64), b.zext(self.ev_u32(node.end), I64)
        step = ir.Constant(I64, node.step) if isinstance(node.step, int) else b.zext(self.ev_u32(node.step), I64)
        n = self.ev_i64("n")
        ids = {id(x) for x in node.body}
        # the row strides first (one may move a tensor's rows home), then every ref's address: at row 0
        # or its fixed place
        strides = {r: self._walk_stride(r.tensor, self.ev_i64(stride), n) for r, stride in rows.items()
                   if stride is not None}
        at = {r: (self.ref_ptr(r if r not in strides else Ref(r.tensor, 0, r.view)), strides.get(r)) for r in rows}
        bound = n
        for v in folds:   # never past an accumulator's buffer (as `_fold_bounds`)
            room = b.udiv(self.q_size[self.tensor_queue[v.dst.tensor]], ir.Constant(I64, 4))
            bound = b.select(b.icmp_unsigned("<", room, bound), room, bound)
        scalars = {id(x): {var: self.read(m)[0] for var, m in x.scalars} for x in node.body if isinstance(x, Step)}
        types = {id(x): {var: _kind_dtype(self.types[m]) for var, m in x.scalars} for x in node.body
                 if isinstance(x, Step)}

        def key(r):
            q = self.tensor_queue[r.tensor]
            return (q, r.tensor if r.tensor in self.t_index else "", repr(r.offset))
        # a buffer the row writes before any node of it reads it, which nothing outside reads: registers only
        first_read, kept = set(), set()
        for x in node.body:
            if isinstance(x, Step):
                refs = dict(x.names)
                for st in x.stmts:
                    first_read |= {key(refs[s]) for s in st.srcs} - kept
                    kept.add(key(refs[st.dst]))
            else:
                first_read |= {key(x.srcs[-1])} - kept
                if x.api == "Cast":
                    kept.add(key(x.dst))
        stored = {k for k in kept if k in first_read}
        for x in node.body:
            written_refs = [r for _, r in x.names] if isinstance(x, Step) else [x.dst] if x.api == "Cast" else []
            stored |= {key(r) for r in written_refs if key(r) in kept and not self._dead_after(ids, r)}

        def place(r, i):
            (ptr, t, size, d), stride = at[r]
            return (ptr if stride is None else b.gep(ptr, [b.mul(i, stride)], source_etype=t)), t, size, d
        accs = [self.ref_ptr(v.dst)[0] for v in folds]
        fixed = {key(r): r for r, stride in rows.items()
                 if stride is None and self.tensor_queue[r.tensor] not in written and r not in [v.dst for v in folds]}

        def strip(s0, k0, k1):
            loaded = [self._fold_strip_load(acc, s0, bound, self._fold_acc_type(v)) for acc, v in zip(accs, folds)]
            offs, masks, whole_strip, _ = loaded[0]
            init = [reg for _, _, _, regs in loaded for reg in regs]
            parts = len(offs)
            # (masked: a whole strip's lanes are all below the bound)
            once = {k: [self.load_ref(at[r][0], off, m) for off, m in zip(offs, masks)] for k, r in fixed.items()}

            def pass_(i, regs):
                b.store(b.trunc(i, I32), self.slots[node.var])

                def row(masked):
                    out = list(regs)
                    for j, off in enumerate(offs):
                        mask = masks[j] if masked else None
                        values, dirty = {}, {}

                        def value(r):
                            k = key(r)
                            if k not in values:
                                values[k] = once[k][j] if k in once else self.load_ref(place(r, i), off, mask)
                            return values[k]
                        for x in node.body:
                            if isinstance(x, Step):
                                refs = dict(x.names)
                                step_em = StmtEmitter(self.kc, b, types[id(x)])
                                var_values = {v: step_em.splat_value(reg) for v, reg in scalars[id(x)].items()}
                                for st in x.stmts:
                                    srcs = [self.vconvert(*value(refs[src]), w)
                                            for src, w in zip(st.srcs, self._operand_dtypes(st))]
                                    scalar = step_em.scalar_operand(st, var_values) \
                                        if st.scalar is not None and st.op != "cast" else None
                                    res = step_em.stmt(st, srcs, scalar)
                                    md = self.tensor_dtype(refs[st.dst].tensor)
                                    values[key(refs[st.dst])] = (self.vconvert(res, dt.float16 if st.op == "cmp"
                                                                               else st.dtype, md), md)
                                    dirty[key(refs[st.dst])] = refs[st.dst]
                                continue
                            if x.api == "Cast":
                                xv, xd = value(x.srcs[0])
                                dd = self.tensor_dtype(x.dst.tensor)
                                values[key(x.dst)] = (self.vconvert(xv, xd, dd, x.mode), dd)
                                dirty[key(x.dst)] = x.dst
                                continue
                            a = folds.index(x) * parts + j
                            xv, xd = value(x.srcs[1])
                            if self._fold_acc_type(x) == I32 and xv.type.element != I32:   # widened, as numpy does
                                xv = (b.sext if xd == dt.int8 else b.zext)(xv, vec(I32, LANES))
                            new = self._fold_apply(x, out[a], xv)
                            out[a] = new if mask is None else b.select(mask, new, out[a])
                        for k, r in dirty.items():
                            if k in stored:
                                self.store_ref(place(r, i), values[k][0], off, mask)
                    return out
                return branch_values(b, whole_strip, lambda: row(False), lambda: row(True))
            _, regs = carried_loop(b, k0, k1, step, init, pass_, "cwalk")
            for a, acc in enumerate(accs):
                self._fold_strip_store(acc, offs, masks, whole_strip, regs[a * parts:(a + 1) * parts])
            return []

        def block(k0, _):   # WALK_BLOCK rows, strip by strip (`_blocked_fold`: the rows stay in the caches)
            k1 = b.add(k0, span)
            k1 = b.select(b.icmp_unsigned("<", k1, end), k1, end)
            carried_loop(b, ir.Constant(I64, 0), bound, self.FOLD_STRIP, [], lambda s0, _: strip(s0, k0, k1), "strip")
            return []
        span = b.mul(step, ir.Constant(I64, self.WALK_BLOCK))
        with b.if_then(b.icmp_unsigned("<", start, end)):
            carried_loop(b, start, end, span, [], block, "cblock")

    # passes of a wide fold per block (`_blocked_fold`): a block's rows of the source are walked strip
    # by strip while they are in L1 / L2 (strips over all passes at once touched a page per pass
    # and strip: a [4, 65536] float32 row sum 2.4x llvm_row's time), and a compensated sum adds
    # each block's sums into the total with Kahan's compensation: a lane adds at most this many
    # elements in sequence (cpu_tiling.ROW_LANE_ADDS)
    FOLD_BLOCK = 16
    WALK_LANES = 16 * LANES   # a walked fold's accumulator this wide stays in registers (16 of AVX-512's 32)

    def _fold_lanes(self, v: Vec):
        """The accumulator's lanes W of a fold whose count is min(W, ...) (W a number), else None."""
        c = v.count
        if isinstance(c, tuple) and c[0] == "min" and isinstance(c[1], int) and not isinstance(c[1], bool):
            return c[1]
        return None

    def _fold_strip_load(self, acc, s0, bound, t=F32):
        """(offsets, lane masks, whole-strip flag, registers) of the accumulator's strip at s0."""
        b = self.b
        em = self._splat_em()
        iota = ir.Constant(vec(I64, LANES), [ir.Constant(I64, i) for i in range(LANES)])
        offs = [b.add(s0, ir.Constant(I64, LANES * j)) for j in range(self.FOLD_STRIP // LANES)]
        masks = [b.icmp_signed("<", iota, em.splat_value(b.sub(bound, off))) for off in offs]
        # a whole strip is loaded and stored with plain vector moves: the Dup's stores before
        # it and the reduction's loads after it are then forwarded (a masked store is not)
        whole_strip = b.icmp_signed("<=", b.add(s0, ir.Constant(I64, self.FOLD_STRIP)), bound)
        init = branch_values(b, whole_strip, lambda: [self.vload(acc, t, 4, off, None) for off in offs],
                             lambda: [self.vload(acc, t, 4, off, m) for off, m in zip(offs, masks)])
        return offs, masks, whole_strip, init

    def _fold_strip_store(self, acc, offs, masks, whole_strip, regs) -> None:
        b = self.b
        with b.if_else(whole_strip) as (then, other):
            with then:
                for off, r in zip(offs, regs):
                    self.vstore(r, acc, r.type.element, 4, off, None)
            with other:
                for off, m, r in zip(offs, masks, regs):
                    self.vstore(r, acc, r.type.element, 4, off, m)

    def _fold_pass(self, node: For, v: Vec, s0, offs):
        """One pass of the fold loop over the strip at s0: the Vec's operation on the lanes below its count."""
        b = self.b
        em = self._splat_em()
        iota = ir.Constant(vec(I64, LANES), [ir.Constant(I64, i) for i in range(LANES)])

        def apply(acc, x):
            return self._fold_apply(v, acc, x)

        def pass_(i, regs):
            b.store(b.trunc(i, I32), self.slots[node.var])
            n = self.ev_i64(v.count)
            src = self.ref_ptr(v.srcs[1])[0]
            full = b.icmp_signed("<=", b.add(s0, ir.Constant(I64, self.FOLD_STRIP)), n)

            def whole():   # every lane of the strip: plain loads
                return [apply(r, self._fold_src(v, src, off, None)) for r, off in zip(regs, offs)]

            def part():    # the lanes below the count
                out = []
                for r, off in zip(regs, offs):
                    m = b.icmp_signed("<", iota, em.splat_value(b.sub(n, off)))
                    out.append(b.select(m, apply(r, self._fold_src(v, src, off, m)), r))
                return out
            return branch_values(b, full, whole, part)
        return pass_

    def _blocked_fold(self, node: For, v: Vec) -> None:
        """The fold loop in blocks of FOLD_BLOCK passes, each block strip by strip (`fold`'s strips: the
        same operation on each lane in the same order).  A compensated sum (`compensated_folds`: the
        CPU's row schedule) sums each block after the first into fresh lanes and adds them to the
        accumulator with Kahan's compensation (comp, per lane, in a stack buffer: the low-order bits
        the last add lost); the first block folds into the accumulator as the plain loop does, so a
        fold of at most FOLD_BLOCK passes keeps its bits.  A total that is no longer finite keeps no
        compensation (inf - inf would make it NaN)."""
        b = self.b
        base = self._fold_rows(node, v)
        if base is not None:
            self._walk_fold(node, v, base)
            return
        lanes = self._fold_lanes(v)
        compensated = self._compensated(v) and lanes is not None
        bound, start, end, step, acc = self._fold_bounds(node, v)
        comp = self._comp_of(v.dst, lanes) if compensated else None
        zero = self._splat_em().splat(0.0, F32)
        block = b.mul(step, ir.Constant(I64, self.FOLD_BLOCK))

        def one_block(k0, _):
            k1 = b.add(k0, block)
            k1 = b.select(b.icmp_unsigned("<", k1, end), k1, end)

            def strip(s0, _):
                offs, masks, whole_strip, tot = self._fold_strip_load(acc, s0, bound, self._fold_acc_type(v))
                init = [zero] * len(tot) if compensated else tot
                _, regs = carried_loop(b, k0, k1, step, init, self._fold_pass(node, v, s0, offs), "fold")
                if compensated:
                    regs = self._kahan(comp, offs, tot, regs)
                self._fold_strip_store(acc, offs, masks, whole_strip, regs)
                return []
            carried_loop(b, ir.Constant(I64, 0), bound, self.FOLD_STRIP, [], strip, "strip")
            return []
        with b.if_then(b.icmp_unsigned("<", start, end)):
            carried_loop(b, start, end, block, [], one_block, "fblock")

    def _fold_rows(self, node: For, v: Vec):
        """The base offset of src when the fold walks consecutive elements -- `for k in S .. n step W:
        vec Op acc <- acc, src[base + k] count min(W, n - k)`, W a multiple of FOLD_STRIP, base free of
        k (the row kind's folds) -- else None."""
        w = self._fold_lanes(v)
        if w is None or w % self.FOLD_STRIP or node.step != w or node.var in _expr_names(node.end):
            return None
        if repr(v.count) != repr(("min", w, ("-", node.end, node.var))):
            return None
        off = v.srcs[1].offset
        if off == node.var:
            return 0
        if isinstance(off, tuple) and len(off) == 3 and off[0] == "+" and off[2] == node.var \
                and node.var not in _expr_names(off[1]):
            return off[1]
        return None

    def _walk_fold(self, node: For, v: Vec, base, init=None):
        """`_fold_rows`' fold as a walk over the elements: P = ceil((n - S) / W) passes, the whole ones
        plain vector loads at a pointer that advances by W, the last one masked when n - S is not a
        multiple of W; in blocks of FOLD_BLOCK passes, each block strip by strip (every lane adds the
        same elements in the same order as the loop: the same bits), compensated as
        `_blocked_fold`'s.  `init`: the accumulator's registers (a fold `_register_fold` keeps in
        registers: neither loaded nor stored; the registers after it are returned)."""
        b = self.b
        w = v.count[1]
        compensated = self._compensated(v)
        start, end = b.zext(self.ev_u32(node.start), I64), b.zext(self.ev_u32(node.end), I64)
        acc = self.ref_ptr(v.dst)[0]
        src = self.ref_ptr(Ref(v.srcs[1].tensor, base, None))[0]
        src = b.gep(src, [start], source_etype=mem_type(self.tensor_dtype(v.srcs[1].tensor)))
        t = self._fold_acc_type(v)
        count = b.select(b.icmp_unsigned("<", start, end), b.sub(end, start), ir.Constant(I64, 0))
        W = ir.Constant(I64, w)
        full = b.udiv(count, W)
        rest = b.sub(count, b.mul(full, W))
        passes = b.add(full, b.zext(b.icmp_unsigned("!=", rest, ir.Constant(I64, 0)), I64))
        # (registers given: the compensations start at zero, as the Dup before the fold leaves them)
        comp = self._comp_of(v.dst, w) if compensated and init is None else None
        em = self._splat_em()
        zero = em.splat(0.0, F32)
        iota = ir.Constant(vec(I64, LANES), [ir.Constant(I64, i) for i in range(LANES)])
        # up to WALK_LANES lanes are one strip: each pass reads W consecutive elements into registers
        width = w if w <= self.WALK_LANES else self.FOLD_STRIP
        strip_offs = range(0, width, LANES)

        def apply(a, x):
            return self._fold_apply(v, a, x)

        def bounds(k0):   # the block's passes [k0, k1), the whole ones below whole_end
            k1 = b.add(k0, ir.Constant(I64, self.FOLD_BLOCK))
            k1 = b.select(b.icmp_unsigned("<", k1, passes), k1, passes)
            return k1, b.select(b.icmp_unsigned("<", k1, full), k1, full)

        def walk(s0, k0, k1, whole_end, init):
            """The strip at s0 through passes [k0, k1) from the registers init."""
            def pass_(k, regs):
                at = b.add(b.mul(k, W), s0)
                return [apply(r, self._fold_src(v, src, b.add(at, ir.Constant(I64, j)), None))
                        for r, j in zip(regs, strip_offs)]
            _, regs = carried_loop(b, k0, whole_end, 1, init, pass_, "wfold")

            def tail():   # the last pass: the lanes below n - S - full * W
                out = []
                at = b.add(b.mul(full, W), s0)
                for r, j in zip(regs, strip_offs):
                    m = b.icmp_signed("<", iota, em.splat_value(b.sub(rest, b.add(s0, ir.Constant(I64, j)))))
                    x = self._fold_src(v, src, b.add(at, ir.Constant(I64, j)), m)
                    out.append(b.select(m, apply(r, x), r))
                return out
            return branch_values(b, b.icmp_unsigned(">", k1, full), tail, lambda: list(regs))

        offs0 = [ir.Constant(I64, j) for j in strip_offs]
        if width == w:   # one strip: the totals (and compensations) in registers across the blocks
            tot = list(init) if init is not None else [self.vload(acc, t, 4, off, None) for off in offs0]
            comps = ([zero] * len(tot) if init is not None else [self.vload(comp, F32, 4, off, None) for off in offs0]) \
                if compensated else []
            n = len(tot)

            def one_block(k0, carried):
                k1, whole_end = bounds(k0)
                tot, comps = carried[:n], carried[n:]
                regs = walk(ir.Constant(I64, 0), k0, k1, whole_end, [zero] * n if compensated else tot)
                if not compensated:
                    return regs
                tot, comps = self._kahan_regs(tot, comps, regs)
                return tot + comps
            if init is not None and not compensated:   # (no blocks needed: one loop over the passes)
                return walk(ir.Constant(I64, 0), ir.Constant(I64, 0), passes, full, tot)
            _, carried = carried_loop(b, ir.Constant(I64, 0), passes, self.FOLD_BLOCK, tot + comps, one_block, "wblock")
            if init is not None:
                return carried[:n]
            for j, off in enumerate(offs0):
                self.vstore(carried[j], acc, t, 4, off, None)
                if compensated:
                    self.vstore(carried[n + j], comp, F32, 4, off, None)
            return

        def one_block(k0, _):   # strip by strip, the totals and compensations in memory
            k1, whole_end = bounds(k0)

            def strip(s0, _):
                offs = [b.add(s0, off) for off in offs0]
                tot = [self.vload(acc, t, 4, off, None) for off in offs]
                regs = walk(s0, k0, k1, whole_end, [zero] * len(tot) if compensated else tot)
                if compensated:
                    regs = self._kahan(comp, offs, tot, regs)
                for off, r in zip(offs, regs):
                    self.vstore(r, acc, t, 4, off, None)
                return []
            carried_loop(b, ir.Constant(I64, 0), W, width, [], strip, "wstrip")
            return []
        carried_loop(b, ir.Constant(I64, 0), passes, self.FOLD_BLOCK, [], one_block, "wblock")

    # -- lanes reduced in registers: `dup L <- v; fold into L; [halve L;] WholeReduce red <- L` -------------
    def _lanes_reduction(self, nodes):
        """(halving Vec or None, WholeReduce Vec) when `nodes` start with the reduction of a fold's lanes
        that may stay in registers (`_register_lanes`), else None."""
        found = self._register_lanes()
        if nodes and isinstance(nodes[0], Vec) and id(nodes[0]) in found:
            return None, nodes[0]
        if len(nodes) > 1 and isinstance(nodes[0], Vec) and nodes[0].api in ("Add", "Max", "Min") and \
                isinstance(nodes[1], Vec) and id(nodes[1]) in found:
            return nodes[0], nodes[1]
        return None

    @staticmethod
    def _halving(node: Vec, lanes: Ref, w: int) -> bool:
        """Whether node is `vec Add|Max|Min L <- L, L[w / 2] count w / 2` (wide lanes halved before
        their WholeReduce: lower/row_tile's 128-lane folds)."""
        return isinstance(node, Vec) and node.api in ("Add", "Max", "Min") and node.dst == lanes and \
            node.count == w // 2 and node.srcs == (lanes, Ref(lanes.tensor, w // 2, lanes.view)) and w % (2 * LANES) == 0

    def _register_lanes(self) -> set:
        """ids of the WholeReduce{Sum,Max,Min} Vecs right after a fold (`dup L <- v count W; for ...: vec
        Op L <- L, src ...; [vec Op L <- L, L[W / 2] count W / 2;] vec WholeReduce red <- L count W'`, alone
        or after the steps it runs in) whose lanes L need never be in memory: every node that reads
        L's queue is such a fold, halving or reduction (the row kind's per-row reductions: the next
        row's Dup rewrites the lanes).  The fold then starts from the Dup's value in registers (a
        compensated one from zero compensations, as the Dup leaves them), the halving and the
        reduction combine the registers (`reduce_lanes`) as the Vecs would the stored lanes: the
        same bits."""
        if self._lane_reduces is not None:
            return self._lane_reduces
        found: dict[str, set] = {}   # lanes queue -> ids of its folds, halvings and reductions
        reduces: dict[str, set] = {}

        for nodes in _kernel_bodies(self.k):
            for i in range(len(nodes) - 2):
                dup, loop = nodes[i], nodes[i + 1]
                if not (isinstance(dup, Dup) and isinstance(loop, For)):
                    continue
                v = self._fold(loop)
                w = dup.count
                if v is None or v.dst != dup.dst or dup.dst.offset != 0 or not isinstance(w, int) \
                        or isinstance(w, bool) or w % LANES or not 0 < w <= self.WALK_LANES:
                    continue
                halve = nodes[i + 2] if self._halving(nodes[i + 2], dup.dst, w) else None
                red = nodes[i + 3] if halve is not None and i + 3 < len(nodes) else nodes[i + 2]
                if not isinstance(red, Vec) or red.srcs != (dup.dst,) or \
                        red.api not in ("WholeReduceSum", "WholeReduceMax", "WholeReduceMin") or \
                        red.count != (w // 2 if halve is not None else w):
                    continue
                q = self.tensor_queue[dup.dst.tensor]
                found.setdefault(q, set()).update({id(v), id(red)} | ({id(halve)} if halve is not None else set()))
                reduces.setdefault(q, set()).add(id(red))
        self._lane_reduces = set()
        for q, ids in found.items():
            if self.queues[q].position == "VECCALC" and q not in self.aliased and q not in self.out_aliased \
                    and self.readers.get(q, set()) <= ids:
                self._lane_reduces |= reduces[q]
        return self._lane_reduces

    _lane_reduces = None

    def _register_fold(self, nodes) -> int:
        """`dup L; fold into L; [halve L;] WholeReduce red <- L` (`_register_lanes`) with the fold walking
        a row (`_fold_rows`): the lanes start as the Dup's value in registers, the walk keeps them
        there and `reduce_lanes` reduces them.  The number of nodes it ran (0: none, nothing emitted)."""
        if len(nodes) < 3 or not isinstance(nodes[0], Dup) or not isinstance(nodes[1], For):
            return 0
        after = self._lanes_reduction(nodes[2:4])
        if after is None:
            return 0
        dup, loop = nodes[0], nodes[1]
        v = self._fold(loop)
        base = self._fold_rows(loop, v)
        if base is None or isinstance(dup.value, bool) or \
                not isinstance(dup.value, int if self._fold_acc_type(v) == I32 else (int, float)):
            return 0
        em = self._splat_em()
        with np.errstate(all="ignore"):
            init = em.splat(int(dup.value), I32) if self._fold_acc_type(v) == I32 else \
                em.splat(float(np.float32(dup.value)), F32)
        self.reduce_lanes(after, self._walk_fold(loop, v, base, [init] * (dup.count // LANES)))
        return 4 if after[0] is not None else 3

    def reduce_lanes(self, after, regs) -> None:
        """The halving (if any) and `reduce` of `after` = (halving Vec or None, WholeReduce Vec) on lanes
        held in registers `regs` (LANES each, in order): the halving lane by lane as the Vec's
        operation (`_fold_apply`: vec_op's), int32 lanes reduced in any order (exact), float32 ones
        through `_reduce_vector`'s ops on the registers; where that needs the lanes in memory (another
        count, a float max / min's NaN or zero), they are stored there first."""
        b = self.b
        halve, node = after
        if halve is not None:
            h = len(regs) // 2
            regs = [self._fold_apply(halve, lo, hi) for lo, hi in zip(regs[:h], regs[h:])]
        kind = node.api.removeprefix("WholeReduce").lower()
        src, dst = self.ref_ptr(node.srcs[0]), self.ref_ptr(node.dst)
        count = len(regs) * LANES

        def stored():
            for j, r in enumerate(regs):
                self.vstore(r, src[0], r.type.element, 4, ir.Constant(I64, LANES * j), None)
        if src[3] == dst[3] == dt.int32:
            self.guard_out(node.dst, ir.Constant(I64, 1))
            acc = regs[0]
            for r in regs[1:]:
                acc = b.add(acc, r) if kind == "sum" else \
                    b.select(b.icmp_signed(">" if kind == "max" else "<", acc, r), acc, r)
            name = {"sum": "add", "max": "smax", "min": "smin"}[kind]
            vt = vec(I32, LANES)
            self.store_scalar(b.call(self.kc.intrinsic(f"llvm.vector.reduce.{name}.v{LANES}i32", I32, [vt]), [acc]),
                              dst[0], dt.int32)
            return
        if src[3] != dt.float32 or dst[3] != dt.float32 or \
                not (kind == "sum" and count <= 128 or kind in ("max", "min")):
            stored()
            self.reduce(node)
            return
        self.guard_out(node.dst, ir.Constant(I64, 1))
        r = self._reduce_vector(kind, src[0], count, lambda: self._reduce_fn(kind, dt.float32), regs, stored)
        self.store_scalar(r, dst[0], dt.float32)

    def _comp_of(self, acc: Ref, lanes: int):
        """The compensation lanes of a compensated fold's accumulator: a stack buffer (64-byte aligned,
        zeroed on entry and by every Duplicate into the accumulator, `dup`), so the low-order bits
        carry over from one fold of the accumulator to the next (a multi-pass row's chunks)."""
        key = (acc.tensor, repr(acc.offset))
        if key not in self.comp_lanes:
            n = -(-lanes // self.FOLD_STRIP) * self.FOLD_STRIP
            at = self.ab.alloca(ir.ArrayType(F32, n), name="fold.comp")
            at.align = 64
            ptr = self.ab.inttoptr(self.ab.ptrtoint(at, I64), PTR)   # (llvmlite types an alloca's pointer)
            self.ab.call(self.kc.intrinsic("llvm.memset.p0.i64", VOID, [PTR, I8, I64, I1]),
                         [ptr, ir.Constant(I8, 0), ir.Constant(I64, 4 * n), ir.Constant(I1, 0)])
            self.comp_lanes[key] = (ptr, n)
        return self.comp_lanes[key][0]

    def _kahan(self, comp, offs, tot, parts) -> list:
        """The totals after adding a block's sums `parts`, the compensations in `comp` updated."""
        comps = [self.vload(comp, F32, 4, off, None) for off in offs]
        tot, comps = self._kahan_regs(tot, comps, parts)
        for off, c in zip(offs, comps):
            self.vstore(c, comp, F32, 4, off, None)
        return tot

    def _kahan_regs(self, tot, comps, parts) -> tuple[list, list]:
        """(totals, compensations) after adding `parts` with Kahan's compensation: a compensation is
        the low-order bits the last add lost, negated; 0 once its total is not finite (inf - inf
        would make the next total NaN)."""
        b = self.b
        em = self._splat_em()
        zero, inf = em.splat(0.0, F32), em.splat(float("inf"), F32)
        out, lost_bits = [], []
        for t, c, x in zip(tot, comps, parts):
            y = b.fsub(x, c)
            s = b.fadd(t, y)
            lost = b.fsub(b.fsub(s, t), y)
            finite = b.fcmp_ordered("<", self.kc.unary(b, "fabs", s), inf)
            lost_bits.append(b.select(finite, lost, zero))
            out.append(s)
        return out, lost_bits

    def for_(self, node: For) -> None:
        b = self.b
        if id(node) in self.transposes:
            self.transpose(*self.transposes[id(node)])
            return
        if id(node) in self.picks:
            self.pick(*self.picks[id(node)])
            return
        folded = self._fold(node)
        if folded is not None:
            self.fold(node, folded)
            return
        walk = self._walk_plan(node)
        if walk is not None:
            self.column_walk(node, *walk)
            return
        start, end = b.zext(self.ev_u32(node.start), I64), b.zext(self.ev_u32(node.end), I64)
        if node.down:   # end-1 down to start
            one = ir.Constant(I64, 1)

            def down(i, _):
                b.store(b.trunc(b.sub(i, one), I32), self.slots[node.var])
                self.body(node.body)
                return []
            # i runs end .. start+1 (counting down): the loop helper counts up, so run j over
            # [0, end - start) and take i = end - j
            count = b.select(b.icmp_unsigned(">", end, start), b.sub(end, start), ir.Constant(I64, 0))
            carried_loop(b, ir.Constant(I64, 0), count, 1, [],
                         lambda j, c: down(b.sub(end, j), c), "down")
            return
        step = ir.Constant(I64, node.step) if isinstance(node.step, int) else b.zext(self.ev_u32(node.step), I64)

        def up(i, _):
            b.store(b.trunc(i, I32), self.slots[node.var])
            self.body(node.body)
            return []
        rows = self._segment_rows(node)
        if rows is None:
            carried_loop(b, start, end, step, [], up, "for")
            return
        # a segment loop over strided GM rows: checked once, then row `seg` of every strided ref is
        # `seg` (`steps` addresses it without a check).  A ref whose rows do not fit the loop's
        # passes moves home first (`strided_home`: its rows into its buffer), as a checked loop
        # would at its first pass across a row -- one loop, not a checked copy of it beside: the
        # loop's steps are most of an elementwise kernel's IR
        self._home_unfit(rows, start, end)
        self._fast_seg = node.var
        carried_loop(b, start, end, step, [], up, "seg")
        self._fast_seg = None

    _fast_seg = None

    def _segment_rows(self, node: For):
        """For a segment loop -- `for seg in S .. E: [let n = X;] step at seg * Y` (unit step), its
        steps' refs at 0 of strided queues, X and Y free of what the loop sets -- (refs, X, Y); else
        None."""
        body = list(node.body)
        if node.down or node.step != 1 or not body or not isinstance(body[-1], Step) or len(body) > 2:
            return None
        st = body[-1]
        count = st.count if st.count is not None else "n"
        if len(body) == 2:
            if not (isinstance(body[0], Let) and body[0].var == count):
                return None
            count = body[0].expr
        off = st.offset
        if not (isinstance(off, tuple) and len(off) == 3 and off[0] == "*" and off[1] == node.var):
            return None
        stride = off[2]
        if st.prefill or {node.var, None} & (_expr_names(stride) | _expr_names(count)):
            return None
        refs = [r for _, r in st.names if self.tensor_queue.get(r.tensor) in self.strided]
        if not refs or any(r.offset != 0 for r in refs):
            return None
        return refs, count, stride

    def _home_unfit(self, rows, start, end) -> None:
        """Before a segment loop (`_segment_rows`) that runs: each ref standing for strided GM rows
        that some pass would not find within one of its rows (another row stride, fewer rows or
        shorter ones) moves home (`strided_home`); then every pass of every ref lies within one row
        of its strided rows, or in its buffer."""
        refs, count, stride = rows
        n, y = self.ev_i64(count), self.ev_i64(stride)
        runs = self.b.icmp_unsigned("<", start, end)
        for r in dict.fromkeys(refs):
            self._fit_or_home(r.tensor, y, rows=end, cols=n, when=runs)

    def _fit_or_home(self, name: str, stride, rows=None, cols=None, when=None):
        """Tensor `name`, which may stand for strided GM rows (`_strided`), read or written as rows
        x cols elements at UB row stride `stride` (i64; None: not bounded): when its strided rows do
        not hold them (another row stride, fewer rows, shorter ones) they move home first
        (`strided_home`; only `when` that i1 holds, if given).  Returns the row stride to address it
        by: its GM row stride while it stands for strided rows, else `stride`."""
        b = self.b
        zero = ir.Constant(I64, 0)
        us, _, g_rows, g_cols = self._geom(name)
        fits = b.icmp_unsigned("==", us, stride)
        if rows is not None:
            fits = b.and_(fits, b.icmp_unsigned("<=", rows, g_rows))
        if cols is not None:
            fits = b.and_(fits, b.icmp_unsigned("<=", cols, g_cols))
        move = b.and_(b.icmp_unsigned("!=", us, zero), b.not_(fits))
        with b.if_then(move if when is None else b.and_(when, move)):
            self.strided_home(name)
        us, gs, _, _ = self._geom(name)
        return b.select(b.icmp_unsigned("!=", us, zero), gs, stride)

    # -- blocked transposes: the transpose kind's element moves --------------------------------------------
    def _transpose_side(self, name: str, stride_expr, rows, cols):
        """(address, row stride in elements) of tensor `name` as the transpose reads or writes it:
        rows x cols elements at UB row stride `stride_expr`.  When it stands for strided GM rows
        that hold them (the same UB row stride, enough rows and columns), the GM rows and their
        stride; otherwise (moved home first when strided) the buffer and the UB stride."""
        stride = self.ev_i64(stride_expr)
        if self.tensor_queue.get(name) not in self.strided:
            return self.tensor_base(name), stride
        stride = self._fit_or_home(name, stride, rows=rows, cols=cols)
        return self.tensor_base(name), stride

    def transpose(self, R, C, dst: str, P, src: str, Q) -> None:
        """dst[c * P + r] = src[r * Q + c] for r < R, c < C, the bits moved as integers: tiles of
        T x T (T = one 64-byte line of elements) loaded as T vectors, transposed in registers
        (register_transpose.network) and stored as T vectors; the edge tiles element by element.
        In a streaming launch a tile whose output lines are whole aligned 64-byte lines is stored
        with non-temporal stores.  Either side may be strided GM rows (`_transpose_side`): the
        kind's tile then moves from GM to GM."""
        b = self.b
        d = self.tensor_dtype(src)
        size = d.itemsize
        T = LINE // size
        it = ir.IntType(8 * size)
        vt = vec(it, T)
        rows, cols = self.ev_i64(R), self.ev_i64(C)
        s_ptr, s_st = self._transpose_side(src, Q, rows, cols)
        d_ptr, d_st = self._transpose_side(dst, P, cols, rows)
        stages, order = network(size), network_columns(size)
        t64 = ir.Constant(I64, T)
        full_r = b.mul(b.udiv(rows, t64), t64)
        full_c = b.mul(b.udiv(cols, t64), t64)
        # non-temporal stores: the launch streams and every output row of a tile starts a line
        lines = b.and_(self.stream, b.icmp_unsigned("==", b.urem(b.mul(d_st, ir.Constant(I64, size)),
                                                                  ir.Constant(I64, LINE)), ir.Constant(I64, 0)))

        def element(r, c):
            v = b.load(b.gep(s_ptr, [b.add(b.mul(r, s_st), c)], source_etype=it), typ=it, align=size)
            b.store(v, b.gep(d_ptr, [b.add(b.mul(c, d_st), r)], source_etype=it), align=size)

        prefetch = self.kc.intrinsic("llvm.prefetch.p0", VOID, [PTR, I32, I32, I32])
        ahead = b.mul(s_st, ir.Constant(I64, PREFETCH_TILES * T))

        def tile(r0, c0, nt):
            regs = []
            for i in range(T):
                at = b.add(b.mul(b.add(r0, ir.Constant(I64, i)), s_st), c0)
                regs.append(b.load(b.gep(s_ptr, [at], source_etype=it), typ=vt, align=size))
                # the same lines PREFETCH_TILES bands below, into L2: T short runs at a time are too
                # few for the hardware prefetchers when the rows are short (a prefetch never faults)
                b.call(prefetch, [b.gep(s_ptr, [b.add(at, ahead)], source_etype=it), ir.Constant(I32, 0),
                                  ir.Constant(I32, 2), ir.Constant(I32, 1)])
            for step, lo, hi in stages:
                nxt = list(regs)
                for i in range(T):
                    if i & step:
                        continue
                    nxt[i] = b.shuffle_vector(regs[i], regs[i + step], ir.Constant(vec(I32, T), lo))
                    nxt[i + step] = b.shuffle_vector(regs[i], regs[i + step], ir.Constant(vec(I32, T), hi))
                regs = nxt
            for j, col in enumerate(order):
                p = b.gep(d_ptr, [b.add(b.mul(b.add(c0, ir.Constant(I64, col)), d_st), r0)], source_etype=it)
                st = b.store(regs[j], p, align=LINE if nt else size)
                if nt:
                    st.set_metadata("nontemporal", self.nt_md)

        def band(r0, _):
            first = b.gep(d_ptr, [r0], source_etype=it)
            nt = b.and_(lines, b.icmp_unsigned("==", b.and_(b.ptrtoint(first, I64), ir.Constant(I64, LINE - 1)),
                                               ir.Constant(I64, 0)))

            def full(c0, _):
                with b.if_else(nt) as (yes, no):
                    with yes:
                        tile(r0, c0, True)
                    with no:
                        tile(r0, c0, False)
                return []
            carried_loop(b, ir.Constant(I64, 0), full_c, T, [], full, "tc")

            def edge_rows(r, _):   # the columns past the last whole tile
                carried_loop(b, full_c, cols, 1, [], lambda c, _: element(r, c) or [], "tce")
                return []
            carried_loop(b, r0, b.add(r0, t64), 1, [], edge_rows, "tre")
            return []
        carried_loop(b, ir.Constant(I64, 0), full_r, T, [], band, "tr")

        def last_rows(r, _):   # the rows past the last whole band
            carried_loop(b, ir.Constant(I64, 0), cols, 1, [], lambda c, _: element(r, c) or [], "tle")
            return []
        carried_loop(b, full_r, rows, 1, [], last_rows, "trl")

    def pick(self, R, S, C, dst: str, P, src: str, Q, K) -> None:
        """dst[r * P + c] = src[r * Q + c * K] for r < R, S <= c < C, the bits moved as integers;
        either side may be strided GM rows (`_transpose_side`): row copies or picks from GM to GM."""
        b = self.b
        d = self.tensor_dtype(src)
        it = ir.IntType(8 * d.itemsize)
        rows, start, end = self.ev_i64(R), self.ev_i64(S), self.ev_i64(C)
        k = self.ev_i64(K)
        span = b.select(b.icmp_unsigned(">", end, ir.Constant(I64, 0)),
                        b.add(b.mul(b.sub(end, ir.Constant(I64, 1)), k), ir.Constant(I64, 1)), ir.Constant(I64, 0))
        s_ptr, s_st = self._transpose_side(src, Q, rows, span)
        d_ptr, d_st = self._transpose_side(dst, P, rows, end)

        def row(r, _):
            s_row = b.gep(s_ptr, [b.mul(r, s_st)], source_etype=it)
            d_row = b.gep(d_ptr, [b.mul(r, d_st)], source_etype=it)

            def element(c, _):
                v = b.load(b.gep(s_row, [b.mul(c, k)], source_etype=it), typ=it, align=d.itemsize)
                b.store(v, b.gep(d_row, [c], source_etype=it), align=d.itemsize)
                return []
            def every_second():   # step 2 (pooling taps): 2 vectors in, their even lanes out
                vt = vec(it, LANES)
                evens = ir.Constant(vec(I32, LANES), [ir.Constant(I32, 2 * i) for i in range(LANES)])

                def whole(c, _):
                    src = b.gep(s_row, [b.mul(c, ir.Constant(I64, 2))], source_etype=it)
                    lo = b.load(src, typ=vt, align=d.itemsize)
                    hi = b.load(b.gep(src, [ir.Constant(I64, LANES)], source_etype=it), typ=vt, align=d.itemsize)
                    b.store(b.shuffle_vector(lo, hi, evens), b.gep(d_row, [c], source_etype=it), align=d.itemsize)
                    return []
                # whole vectors while their last load stays inside the row's span (2 * (end - 1) + 1)
                last = b.sub(end, ir.Constant(I64, 1))
                done, _ = carried_loop(b, start, b.select(b.icmp_unsigned(">", end, start), last, start), LANES, [],
                                       whole, "pick2", whole_steps=True)
                carried_loop(b, done, end, 1, [], element, "pick2t")
            with b.if_else(b.icmp_unsigned("==", k, ir.Constant(I64, 1))) as (run, stride):
                with run:
                    with b.if_then(b.icmp_unsigned("<", start, end)):
                        n = b.mul(b.sub(end, start), ir.Constant(I64, d.itemsize))
                        self.memcpy(b.gep(d_row, [start], source_etype=it), b.gep(s_row, [start], source_etype=it), n,
                                    move=True)
                with stride:
                    with b.if_else(b.icmp_unsigned("==", k, ir.Constant(I64, 2))) as (two, other):
                        with two:
                            every_second()
                        with other:
                            carried_loop(b, start, end, 1, [], element, "pick")
            return []
        carried_loop(b, ir.Constant(I64, 0), rows, 1, [], row, "picks")

    def ub_copy(self, node: UbCopy) -> None:
        """`count` elements from src[src_off] to dst[dst_off] (a memmove in UB).  When a side stands
        for strided GM rows, in chunks that stay within one UB row of each strided side, each
        chunk's elements inside the GM rows' columns moved (the UB row padding of a strided side
        has no GM behind it: what a chunk would read or write there is left as it is)."""
        b = self.b
        d = self.tensor_dtype(node.dst)
        size = ir.Constant(I64, d.itemsize)
        count = self.ev_i64(node.count)
        so, do = self.ev_i64(node.src_off), self.ev_i64(node.dst_off)
        sides = [name for name in (node.src, node.dst) if self.tensor_queue.get(name) in self.strided]
        if not sides:
            self.memcpy(self.ref_ptr(Ref(node.dst, node.dst_off))[0], self.ref_ptr(Ref(node.src, node.src_off))[0],
                        b.mul(count, size), move=True)
            return
        geoms = {name: self._geom(name) for name in sides}
        big = ir.Constant(I64, 1 << 62)
        zero, one = ir.Constant(I64, 0), ir.Constant(I64, 1)
        s_base, d_base = self.tensor_base(node.src), self.tensor_base(node.dst)
        # per strided side (row, col) of the chunk's first element, divided once, then carried
        names = [(side, name, start) for side, name, start in (("src", node.src, so), ("dst", node.dst, do))
                 if name in geoms]
        init = []
        for _, name, start in names:
            us = geoms[name][0]
            safe = b.trunc(b.select(b.icmp_unsigned("!=", us, zero), us, one), I32)
            off = b.trunc(start, I32)
            init += [b.zext(b.udiv(off, safe), I64), b.zext(b.urem(off, safe), I64)]
        fn = b.function
        head, body, done = (fn.append_basic_block(f"ubc.{t}") for t in ("head", "body", "done"))
        pre = b.block
        b.branch(head)
        b.position_at_end(head)
        left, at = b.phi(I64), b.phi(I64)
        left.add_incoming(count, pre)
        at.add_incoming(zero, pre)
        rc = []
        for v in init:
            phi = b.phi(I64)
            phi.add_incoming(v, pre)
            rc.append(phi)
        b.cbranch(b.icmp_unsigned(">", left, zero), body, done)
        b.position_at_end(body)

        def least(*xs):
            out = xs[0]
            for x in xs[1:]:
                out = b.select(b.icmp_unsigned("<", x, out), x, out)
            return out
        place = {}
        for j, (side, name, start) in enumerate(names):
            us, gs, rows, cols = geoms[name]
            row, col = rc[2 * j], rc[2 * j + 1]
            strided = b.icmp_unsigned("!=", us, zero)
            backed = b.select(b.and_(b.icmp_unsigned("<", row, rows), b.icmp_unsigned("<", col, cols)),
                              b.sub(cols, col), zero)
            place[side] = (b.select(strided, b.add(b.mul(row, gs), col), b.add(start, at)),
                           b.select(strided, b.sub(us, col), big), b.select(strided, backed, big))
        sp, s_room, s_backed = place.get("src", (b.add(so, at), big, big))
        dp, d_room, d_backed = place.get("dst", (b.add(do, at), big, big))
        chunk = least(left, s_room, d_room)
        n = least(chunk, s_backed, d_backed)
        with b.if_then(b.icmp_unsigned(">", n, zero)):
            self.memcpy(b.gep(d_base, [b.mul(dp, size)], source_etype=I8), b.gep(s_base, [b.mul(sp, size)], source_etype=I8),
                        b.mul(n, size), move=True)
        latch = b.block
        left.add_incoming(b.sub(left, chunk), latch)
        at.add_incoming(b.add(at, chunk), latch)
        for j, (_, name, _) in enumerate(names):   # the next chunk: the rest of this UB row, or the next row
            us = geoms[name][0]
            col = b.add(rc[2 * j + 1], chunk)
            wrap = b.and_(b.icmp_unsigned("!=", us, zero), b.icmp_unsigned(">=", col, us))
            rc[2 * j].add_incoming(b.select(wrap, b.add(rc[2 * j], one), rc[2 * j]), latch)
            rc[2 * j + 1].add_incoming(b.select(wrap, zero, col), latch)
        b.branch(head)
        b.position_at_end(done)

    def queue_op(self, node) -> None:
        self._queue_state(node)
        if isinstance(node, Alloc) and node.queue in self.out_aliased:
            self.alloc_out(node)
        if isinstance(node, Alloc) and node.queue in self.in_guarded:   # home, nothing written yet
            idx = self.b.load(self.t_index[node.tensor]) if node.tensor in self.t_index else ir.Constant(I32, 0)
            self.set_buffer(node.tensor, self.arena_buffer(node.queue, idx))
            self._set_in_len(node.tensor, ir.Constant(I64, 0))

    # -- guarded in-aliasing (`_in_aliasing`) ---------------------------------------------------------
    def _buffer_slot_value(self, name: str, slots, t):
        b = self.b
        idx = b.load(self.t_index[name]) if name in self.t_index else ir.Constant(I32, 0)
        v = b.load(slots[0], typ=t)
        for i in range(1, len(slots)):
            v = b.select(b.icmp_unsigned("==", idx, ir.Constant(I32, i)), b.load(slots[i], typ=t), v)
        return v

    def _in_len(self, name: str):
        return self._buffer_slot_value(name, self.in_len[self.tensor_queue[name]], I64)

    def _set_in_len(self, name: str, value) -> None:
        self._store_slot(name, self.in_len[self.tensor_queue[name]], value, I64)

    def in_guard(self, name: str) -> None:
        """Before a write into tensor `name` of a guarded aliased queue: when its buffer stands for
        GM rows, those rows are copied into its arena buffer, which it holds from then on; the
        buffer is marked written (an aliasing copy no longer re-points it)."""
        q = self.tensor_queue.get(name)
        if q not in self.in_guarded:
            return
        b = self.b
        self.strided_home(name)
        n = self._in_len(name)
        with b.if_then(b.icmp_signed(">", n, ir.Constant(I64, 0))):
            idx = b.load(self.t_index[name]) if name in self.t_index else ir.Constant(I32, 0)
            arena = self.arena_buffer(q, idx)
            self.memcpy(arena, self.tensor_base(name), n)
            self.set_buffer(name, arena)
        self._set_in_len(name, ir.Constant(I64, -1))

    # -- strided aliasing (`_strided`) -------------------------------------------------------------------
    def _geom(self, name: str):
        """(UB row stride, GM row stride, rows, cols) of the GM rows tensor `name`'s buffer stands
        for (a UB stride of 0: not strided GM rows)."""
        bufs = self.geom[self.tensor_queue[name]]
        return [self._buffer_slot_value(name, [buf[f] for buf in bufs], I64) for f in range(4)]

    def _set_geom(self, name: str, values) -> None:
        bufs = self.geom[self.tensor_queue[name]]
        for f, v in enumerate(values):
            self._store_slot(name, [buf[f] for buf in bufs], v, I64)

    def strided_home(self, name: str) -> None:
        """When tensor `name` stands for strided GM rows, they are copied (row by row) into its
        arena buffer at its UB row stride, which it holds from then on: an in tensor's staging copy
        made after all; an out tensor's rows computed so far, its CopyOut then copying as usual."""
        q = self.tensor_queue.get(name)
        if q not in self.strided:
            return
        b = self.b
        us, gs, rows, cols = self._geom(name)
        with b.if_then(b.icmp_unsigned("!=", us, ir.Constant(I64, 0))):
            d = self.tensor_dtype(name)
            size = ir.Constant(I64, d.itemsize)
            idx = b.load(self.t_index[name]) if name in self.t_index else ir.Constant(I32, 0)
            arena = self.arena_buffer(q, idx)
            base = self.tensor_base(name)
            self.copy_rows(arena, base, b.mul(us, size), b.mul(gs, size), rows, b.mul(cols, size))
            self.set_buffer(name, arena)
            self._set_geom(name, [ir.Constant(I64, 0)] * 4)
            if q in self.in_len:
                self._set_in_len(name, ir.Constant(I64, -1))

    def strided_offset(self, r: Ref, count, extra, hint=None):
        """Before a Step's run of `count` elements at r (+ extra): when r's tensor stands for
        strided GM rows and the run does not lie within one of their rows, they move home first
        (`strided_home`).  Returns the run's element offset in the buffer (row by row in the GM
        rows).  `hint` (value, stride) says extra = value * stride (a segment loop's offset): when
        the stride is the buffer's UB row stride and r is at 0, the row is `value` (no division)."""
        b = self.b
        us, gs, rows, cols = self._geom(r.tensor)
        strided = b.icmp_unsigned("!=", us, ir.Constant(I64, 0))
        off = b.zext(b.trunc(b.add(self.ev_i64(r.offset), extra), I32), I64)

        def divide():
            safe = b.trunc(b.select(strided, us, ir.Constant(I64, 1)), I32)
            o32 = b.trunc(off, I32)
            return [b.zext(b.udiv(o32, safe), I64), b.zext(b.urem(o32, safe), I64)]
        if hint is not None and r.offset == 0:
            row, col = branch_values(b, b.icmp_unsigned("==", hint[1], us),
                                     lambda: [hint[0], ir.Constant(I64, 0)], divide)
        else:
            row, col = divide()
        inside = b.and_(b.icmp_unsigned("<", row, rows), b.icmp_unsigned("<=", b.add(col, count), cols))
        with b.if_then(b.and_(strided, b.not_(inside))):
            self.strided_home(r.tensor)
        still = b.icmp_unsigned("!=", self._geom(r.tensor)[0], ir.Constant(I64, 0))
        return b.select(still, b.add(b.mul(row, gs), col), off)

    def _remap(self, name: str, off):
        """UB element offset -> the element offset in the buffer (row by row when it stands for
        strided GM rows; outside Steps only the queue's own DMA addresses it, at 0)."""
        if self.tensor_queue.get(name) not in self.strided:
            return off
        b = self.b
        us, gs, _, _ = self._geom(name)
        strided = b.icmp_unsigned("!=", us, ir.Constant(I64, 0))
        safe = b.select(strided, us, ir.Constant(I64, 1))
        moved = b.add(b.mul(b.udiv(off, safe), gs), b.urem(off, safe))
        return b.select(strided, moved, off)

    def _queue_state(self, node) -> None:
        b = self.b
        q = node.queue
        if q not in self.q_state:   # one buffer (a TBuf, or a queue of depth 1): nothing to track
            return
        state = self.q_state[q]
        depth = self.queues[q].depth

        def at(i):
            return state[i]

        def first(want: int, new: int):
            """The first buffer in state `want` (the interpreter's choice) becomes `new`."""
            idx = ir.Constant(I32, 0)
            found = ir.Constant(I1, 0)
            for i in range(depth - 1, -1, -1):   # the lowest index wins: chosen last
                hit = b.icmp_unsigned("==", b.load(at(i), typ=I8), ir.Constant(I8, want))
                idx = b.select(hit, ir.Constant(I32, i), idx)
                found = b.or_(found, hit)
            for i in range(depth):
                p = at(i)
                b.store(b.select(b.icmp_unsigned("==", idx, ir.Constant(I32, i)), ir.Constant(I8, new), b.load(p, typ=I8)), p)
            return idx
        FREE, ALLOC, QUEUED, DEQUEUED = 0, 1, 2, 3
        if isinstance(node, Alloc):
            b.store(first(FREE, ALLOC), self.t_index[node.tensor])
        elif isinstance(node, DeQue):
            b.store(first(QUEUED, DEQUEUED), self.t_index[node.tensor])
        elif isinstance(node, (EnQue, Free)):
            idx = b.load(self.t_index[node.tensor])
            new = QUEUED if isinstance(node, EnQue) else FREE
            for i in range(depth):
                p = at(i)
                b.store(b.select(b.icmp_unsigned("==", idx, ir.Constant(I32, i)), ir.Constant(I8, new), b.load(p, typ=I8)), p)

    _PURE_OPS = frozenset({"[]", "+", "-", "*", "min", "<", "<=", ">", ">=", "==", "!=", "&&", "||", "neg", "sel"})

    def _copy_switch(self, node: If):
        """`if c1: copyin T <- A[..] elif c2: copyin T <- B[..] ... else: copyin T <- Z[..]` (a view
        kernel's concatenation: the box's source) where the CopyIns differ only in their GM tensor (of
        one dtype) and the conditions only read words and scalars (no memory, no division: evaluated
        all, in order, they cannot fault): ([(condition, GM tensor)], the last GM tensor, the first
        CopyIn), else None.  Lowered as one CopyIn from the tensor the conditions pick (a select of
        GM pointers): the aliasing and copy code once, not once per source."""
        conds = []
        first = None
        while True:
            if not (isinstance(node, If) and len(node.then) == 1 and isinstance(node.then[0], CopyIn)
                    and len(node.orelse) == 1 and self._pure(node.cond)):
                return None
            copy = node.then[0]
            first = copy if first is None else first
            if not self._same_copy(first, copy):
                return None
            conds.append((node.cond, copy.gm))
            node = node.orelse[0]
            if isinstance(node, CopyIn):
                return (conds, node.gm, first) if self._same_copy(first, node) else None

    def _same_copy(self, a: CopyIn, c: CopyIn) -> bool:
        return (a.tensor, a.offset, a.rows, a.cols, a.gm_stride, a.ub_stride, a.ub_off) == \
            (c.tensor, c.offset, c.rows, c.cols, c.gm_stride, c.ub_stride, c.ub_off) \
            and self.gms[a.gm].dtype == self.gms[c.gm].dtype

    def _pure(self, e) -> bool:
        if isinstance(e, (int, str)) and not isinstance(e, bool):
            return True
        if isinstance(e, tuple) and e and e[0] in self._PURE_OPS:
            return all(self._pure(x) for x in e[1:])
        return False

    def copy(self, node, gm_base=None) -> None:
        """CopyIn / CopyOut: `rows` rows of `cols` elements, one memcpy when both sides are contiguous.
        `gm_base`: the GM tensor's address, when the caller chose it among tensors of node.gm's dtype
        (`_copy_switch`)."""
        b = self.b
        g = self.gms[node.gm]
        d = self.tensor_dtype(node.tensor)
        if d != g.dtype:
            raise LoweringError(f"kernel {self.k.name}: a DMA between GM {g.dtype} and UB {d}")
        size = ir.Constant(I64, d.itemsize)
        rows, cols = self.ev_i64(node.rows), self.ev_i64(node.cols)
        gs, us = self.ev_i64(node.gm_stride), self.ev_i64(node.ub_stride)
        gm0 = b.gep(self.gm_ptr[node.gm] if gm_base is None else gm_base, [self.ev_i64(node.offset)],
                    source_etype=mem_type(d))
        inward = isinstance(node, CopyIn)
        one = ir.Constant(I64, 1)
        whole = b.or_(b.icmp_unsigned("==", rows, one),
                      b.and_(b.icmp_unsigned("==", gs, cols), b.icmp_unsigned("==", us, cols)))
        empty = b.or_(b.icmp_unsigned("==", rows, ir.Constant(I64, 0)), b.icmp_unsigned("==", cols, ir.Constant(I64, 0)))
        q = self.tensor_queue[node.tensor]
        if inward and q in self.in_guarded and not self._aliasing_copy(node, q):
            self.in_guard(node.tensor)
        elif inward and q in self.aliased:
            # contiguous rows: the tensor is the GM rows themselves; otherwise its arena buffer
            # (a guarded queue's buffer only while nothing was written into it since AllocTensor)
            idx = b.load(self.t_index[node.tensor]) if node.tensor in self.t_index else ir.Constant(I32, 0)
            arena = self.arena_buffer(q, idx)
            # a strided queue's buffer stands for strided rows too (its Steps read them row by row)
            strided = q in self.strided
            alias = ir.Constant(I1, 1) if strided else whole
            if q in self.in_guarded:
                state = self._in_len(node.tensor)
                alias = _and1(b, alias, b.icmp_unsigned("==", state, ir.Constant(I64, 0)))
                with b.if_then(b.not_(alias)):
                    self.in_guard(node.tensor)
                n = b.select(whole, b.mul(b.mul(rows, cols), size), ir.Constant(I64, 1))
                self._set_in_len(node.tensor, _select1(b, alias, n, ir.Constant(I64, -1)))
                self.set_buffer(node.tensor, _select1(b, alias, gm0, self.tensor_base(node.tensor)))
            else:
                self.set_buffer(node.tensor, _select1(b, alias, gm0, arena))
            if strided:
                zero = ir.Constant(I64, 0)
                by_rows = _and1(b, alias, b.not_(whole))
                self._set_geom(node.tensor, [b.select(by_rows, v, zero) for v in (us, gs, rows, cols)])
            empty = _or1(b, empty, alias)          # aliased: nothing to copy
            whole = ir.Constant(I1, 0)             # else the rows one by one
        ub0 = self.ref_ptr(Ref(node.tensor, node.ub_off))[0]
        if not inward and self.tensor_queue[node.tensor] in self.out_aliased:   # computed in place
            empty = b.or_(empty, b.icmp_unsigned("==", b.ptrtoint(ub0, I64), b.ptrtoint(gm0, I64)))
        put = self.memcpy if inward else self.copy_out
        if _is_true(empty):   # (a strided queue's CopyIn always aliases: no copy to emit)
            return

        def contiguous():
            put(ub0 if inward else gm0, gm0 if inward else ub0, b.mul(b.mul(rows, cols), size))

        def by_rows():
            if inward:
                self.copy_rows(ub0, gm0, b.mul(us, size), b.mul(gs, size), rows, b.mul(cols, size))
            else:
                def row(r, _):
                    gp = b.gep(gm0, [b.mul(r, gs)], source_etype=mem_type(d))
                    up = b.gep(ub0, [b.mul(r, us)], source_etype=mem_type(d))
                    put(gp, up, b.mul(cols, size))
                    return []
                carried_loop(b, ir.Constant(I64, 0), rows, 1, [], row, "rows")
        with b.if_then(b.not_(empty)):
            if isinstance(whole, ir.Constant):   # (an aliased queue's copy is row by row: one branch)
                (contiguous if whole.constant else by_rows)()
            else:
                with b.if_else(whole) as (then, other):
                    with then:
                        contiguous()
                    with other:
                        by_rows()

    def _copy_extent(self, co: CopyOut):
        """(GM address of the CopyOut's first element, whether its rows are one contiguous run,
        its bytes)."""
        b = self.b
        d = self.gms[co.gm].dtype
        rows, cols = self.ev_i64(co.rows), self.ev_i64(co.cols)
        gs, us = self.ev_i64(co.gm_stride), self.ev_i64(co.ub_stride)
        gm0 = b.gep(self.gm_ptr[co.gm], [self.ev_i64(co.offset)], source_etype=mem_type(d))
        whole = b.or_(b.icmp_unsigned("==", rows, ir.Constant(I64, 1)),
                      b.and_(b.icmp_unsigned("==", gs, cols), b.icmp_unsigned("==", us, cols)))
        return gm0, whole, b.mul(b.mul(rows, cols), ir.Constant(I64, d.itemsize))

    def alloc_out(self, node: Alloc) -> None:
        """AllocTensor of an out-aliased queue: when its CopyOut will be one contiguous run, the
        buffer is those GM rows (computed in place), else its arena buffer."""
        b = self.b
        q = node.queue
        gm0, whole, nbytes = self._copy_extent(self.out_aliased[q])
        idx = b.load(self.t_index[node.tensor]) if node.tensor in self.t_index else ir.Constant(I32, 0)
        arena = self.arena_buffer(q, idx)
        whole = b.and_(whole, b.icmp_unsigned(">", nbytes, ir.Constant(I64, 0)))
        if q in self.strided:   # strided rows too: its Steps write them row by row (`strided_offset`)
            co = self.out_aliased[q]
            us, gs = self.ev_i64(co.ub_stride), self.ev_i64(co.gm_stride)
            rows, cols = self.ev_i64(co.rows), self.ev_i64(co.cols)
            by_rows = b.and_(b.not_(whole), b.icmp_unsigned(">", nbytes, ir.Constant(I64, 0)))
            zero = ir.Constant(I64, 0)
            self._set_geom(node.tensor, [b.select(by_rows, v, zero) for v in (us, gs, rows, cols)])
            self.set_buffer(node.tensor, b.select(b.or_(whole, by_rows), gm0, arena))
        else:
            self.set_buffer(node.tensor, b.select(whole, gm0, arena))
        end = b.select(whole, b.add(b.ptrtoint(gm0, I64), nbytes), ir.Constant(I64, -1))
        self._set_out_end(node.tensor, end)

    def _set_out_end(self, name: str, end) -> None:
        self._store_slot(name, self.out_end[self.tensor_queue[name]], end, I64)

    def guard_out(self, r: Ref, count, extra=None, off=None) -> None:
        """Before count elements are written at r: when r's tensor stands for GM rows and the
        write would pass their end, the rows computed so far move to the arena buffer, which the
        tensor holds from then on (its CopyOut then copies as usual)."""
        q = self.tensor_queue.get(r.tensor)
        if q not in self.out_aliased:
            return
        b = self.b
        ptr, _, size, _ = self.ref_ptr(r, extra, off)
        end_at = b.add(b.ptrtoint(ptr, I64), b.mul(count, ir.Constant(I64, size)))
        idx = b.load(self.t_index[r.tensor]) if r.tensor in self.t_index else ir.Constant(I32, 0)
        slots = self.out_end[q]
        end = b.load(slots[0], typ=I64)
        for i in range(1, len(slots)):
            end = b.select(b.icmp_unsigned("==", idx, ir.Constant(I32, i)), b.load(slots[i], typ=I64), end)
        with b.if_then(b.icmp_unsigned(">", end_at, end)):
            base = self.tensor_base(r.tensor)
            arena = self.arena_buffer(q, idx)
            self.memcpy(arena, base, b.sub(end, b.ptrtoint(base, I64)))
            self.set_buffer(r.tensor, arena)
            self._set_out_end(r.tensor, ir.Constant(I64, -1))

    def copy_out(self, dst, src, nbytes) -> None:
        """UB -> GM: a memcpy, or when the launch streams (large outputs) whole 64-byte lines with
        non-temporal stores: the output is not read back from cache, and no line is read first."""
        b = self.b
        if not self.streaming:
            self.memcpy(dst, src, nbytes)
            return
        big = b.and_(self.stream, b.icmp_unsigned(">=", nbytes, ir.Constant(I64, 256)))
        with b.if_else(big) as (then, other):
            with then:
                addr = b.ptrtoint(dst, I64)
                head = b.and_(b.sub(ir.Constant(I64, 0), addr), ir.Constant(I64, 63))
                self.memcpy(dst, src, head)
                lines = b.lshr(b.sub(nbytes, head), ir.Constant(I64, 6))
                vt = vec(I8, 64)

                def line(i, _):
                    at = b.add(head, b.shl(i, ir.Constant(I64, 6)))
                    v = b.load(b.gep(src, [at], source_etype=I8), typ=vt, align=1)
                    st = b.store(v, b.gep(dst, [at], source_etype=I8), align=64)
                    st.set_metadata("nontemporal", self.nt_md)
                    return []
                carried_loop(b, ir.Constant(I64, 0), lines, 1, [], line, "nt")
                done = b.add(head, b.shl(lines, ir.Constant(I64, 6)))
                self.memcpy(b.gep(dst, [done], source_etype=I8), b.gep(src, [done], source_etype=I8),
                            b.sub(nbytes, done))
            with other:
                self.memcpy(dst, src, nbytes)

    def gather_row(self, node: GatherRow) -> None:
        b = self.b
        idx_gm, table = self.gms[node.index], self.gms[node.table]
        d = self.tensor_dtype(node.dst.tensor)
        if d != table.dtype:
            raise LoweringError(f"kernel {self.k.name}: a gathered {table.dtype} row into UB {d}")
        q = self.tensor_queue[node.dst.tensor]
        if q not in self.in_guarded:
            self.in_guard(node.dst.tensor)
        pos = self.ev_i64(node.pos)
        iv = b.load(b.gep(self.gm_ptr[node.index], [pos], source_etype=mem_type(idx_gm.dtype)),
                    typ=mem_type(idx_gm.dtype), align=idx_gm.dtype.itemsize)
        kv = b.sext(iv, I64) if idx_gm.dtype.kind == "int" else b.zext(iv, I64)
        bound = ir.Constant(I64, node.bound)
        kv = b.select(b.icmp_signed("<", kv, ir.Constant(I64, 0)), b.add(kv, bound), kv)
        inside = b.and_(b.icmp_signed(">=", kv, ir.Constant(I64, 0)), b.icmp_signed("<", kv, bound))
        nbytes = b.mul(self.ev_i64(node.cols), ir.Constant(I64, d.itemsize))
        start = b.add(b.mul(kv, ir.Constant(I64, node.row_len)), self.ev_i64(node.col))
        row = b.gep(self.gm_ptr[node.table], [start], source_etype=mem_type(d))
        if q in self.in_guarded:
            # a guarded queue's buffer nothing was written into since AllocTensor stands for the
            # table row itself when the row lands at its start (the tile's first row: a view
            # kernel's one-row tiles read every gathered row in place, 19faa6c's llvm_view did);
            # any other write moves it home first (`in_guard`)
            alias = b.and_(b.and_(inside, b.icmp_unsigned("==", self.ev_i64(node.dst.offset), ir.Constant(I64, 0))),
                           b.icmp_unsigned("==", self._in_len(node.dst.tensor), ir.Constant(I64, 0)))
            with b.if_then(b.not_(alias)):
                self.in_guard(node.dst.tensor)
            self.set_buffer(node.dst.tensor, b.select(alias, row, self.tensor_base(node.dst.tensor)))
            self._set_in_len(node.dst.tensor, b.select(alias, b.select(b.icmp_unsigned(
                "==", nbytes, ir.Constant(I64, 0)), ir.Constant(I64, 1), nbytes), ir.Constant(I64, -1)))
            inside = b.and_(inside, b.not_(alias))
            dst = self.ref_ptr(node.dst)[0]
            with b.if_else(inside) as (then, other):
                with then:
                    self.memcpy(dst, row, nbytes)
                with other:
                    with b.if_then(b.not_(alias)):
                        f = self.kc.intrinsic("llvm.memset.p0.i64", VOID, [PTR, I8, I64, I1])
                        b.call(f, [dst, ir.Constant(I8, 0), nbytes, ir.Constant(I1, 0)])
            return
        dst = self.ref_ptr(node.dst)[0]
        with b.if_else(inside) as (then, other):
            with then:
                self.memcpy(dst, row, nbytes)
            with other:
                f = self.kc.intrinsic("llvm.memset.p0.i64", VOID, [PTR, I8, I64, I1])
                b.call(f, [dst, ir.Constant(I8, 0), nbytes, ir.Constant(I1, 0)])

    # -- vector loops ---------------------------------------------------------------------------------------
    def vloop(self, n, emit, start=None) -> None:
        """emit(offset, mask) over elements [start, n) (i64; start 0 by default): whole vectors of
        LANES, then one masked tail."""
        b = self.b
        lanes = ir.Constant(I64, LANES)
        start = ir.Constant(I64, 0) if start is None else start
        end, _ = carried_loop(b, start, n, lanes, [], lambda i, c: emit(i, None) or [], "vec", whole_steps=True)
        with b.if_then(b.icmp_signed("<", end, n)):
            iota = ir.Constant(vec(I64, LANES), [ir.Constant(I64, i) for i in range(LANES)])
            em = self._splat_em()
            mask = b.icmp_unsigned("<", iota, em.splat_value(b.sub(n, end)))
            emit(end, mask)

    def vload(self, ptr, t, size: int, offset, mask):
        b = self.b
        vt = vec(t, LANES)
        p = b.gep(ptr, [offset], source_etype=t)
        if mask is None:
            return b.load(p, typ=vt, align=size)
        f = self.kc.intrinsic(f"llvm.masked.load.{vname(vt)}.p0", vt, [PTR, I32, vec(I1, LANES), vt])
        return b.call(f, [p, ir.Constant(I32, size), mask, ir.Constant(vt, None)])

    def vstore(self, value, ptr, t, size: int, offset, mask) -> None:
        b = self.b
        vt = vec(t, LANES)
        p = b.gep(ptr, [offset], source_etype=t)
        if mask is None:
            b.store(value, p, align=size)
            return
        f = self.kc.intrinsic(f"llvm.masked.store.{vname(vt)}.p0", VOID, [vt, PTR, I32, vec(I1, LANES)])
        b.call(f, [value, p, ir.Constant(I32, size), mask])

    def load_ref(self, at, offset, mask):
        """LANES elements of a resolved Ref in register form, and their dtype (None: a raw view)."""
        ptr, t, size, d = at
        v = self.vload(ptr, t, size, offset, mask)
        if d is None:
            return v, None
        return self._splat_em().to_reg(v, d), d

    def store_ref(self, at, value, offset, mask, nontemporal=False) -> None:
        ptr, t, size, d = at
        if d is not None:
            value = self._splat_em().to_mem(value, d)
        if nontemporal and mask is None:   # a whole vector at a 64-byte line (steps: the peel)
            st = self.b.store(value, self.b.gep(ptr, [offset], source_etype=t), align=LANES * size)
            st.set_metadata("nontemporal", self.nt_md)
            return
        self.vstore(value, ptr, t, size, offset, mask)

    def vconvert(self, v, src, dst, mode=None):
        if src is None or dst is None or src == dst:
            return v
        return self._splat_em().convert(v, src, dst, mode)

    def dup(self, node: Dup) -> None:
        comp = self.comp_lanes.get((node.dst.tensor, repr(node.dst.offset)))
        if comp is not None:   # a compensated sum starts again: no low-order bits carried
            self.b.call(self.kc.intrinsic("llvm.memset.p0.i64", VOID, [PTR, I8, I64, I1]),
                        [comp[0], ir.Constant(I8, 0), ir.Constant(I64, 4 * comp[1]), ir.Constant(I1, 0)])
        self.in_guard(node.dst.tensor)
        self.guard_out(node.dst, self.ev_i64(node.count))
        at = self.ref_ptr(node.dst)
        d = at[3]
        if d is None:
            raise LoweringError(f"kernel {self.k.name}: Duplicate into a {node.dst.view} view")
        em = self._splat_em()
        if isinstance(node.value, (float, bool)):   # numpy converts the Python number itself
            with np.errstate(all="ignore"):
                x = np.asarray(node.value).astype(d.np)
            value = em.splat(float(np.float32(x)) if d.is_float else int(x), reg_type(d))
        else:
            v, kind = self.ev(node.value)
            value = em.splat_value(self.convert(v, kind, d.np))
        self.vloop(self.ev_i64(node.count), lambda off, mask: self.store_ref(at, value, off, mask))

    # -- Vec: one vector API call -------------------------------------------------------------------------
    def np_max(self, x, y, kind: str, d: dt.DType):
        """numpy's maximum / minimum of arrays of dtype d: x when x > y (x < y) or x is NaN, else y;
        on a tie (-0.0 against 0.0) float32's loop gives y, float16's x (numpy 2's own loops)."""
        b = self.b
        if x.type.element in (F32,):
            op = ">" if kind == "max" else "<"
            op += "=" if d == dt.float16 else ""
            keep = b.or_(b.fcmp_ordered(op, x, y), b.fcmp_unordered("uno", x, x))
        else:
            keep = b.icmp_signed(">" if kind == "max" else "<", x, y)
        return b.select(keep, x, y)

    def vec_scalar(self, node: Vec, d: dt.DType):
        """Muls / Adds / Maxs / Mins: the scalar as the destination's dtype, in register form."""
        em = self._splat_em()
        s = node.scalar
        if isinstance(s, (float, bool)):
            with np.errstate(all="ignore"):
                x = np.asarray(s).astype(d.np)
            return em.splat(float(np.float32(x)) if d.is_float else int(x), reg_type(d))
        v, kind = self.ev(s)
        return em.splat_value(self.convert(v, kind, d.np))

    def vec_op(self, node: Vec) -> None:
        b = self.b
        api = node.api
        if api.startswith(("WholeReduce", "ReduceRepeat")):
            self.reduce(node)
            return
        if api == "Gather":
            self.gather(node)
            return
        n = self.ev_i64(node.count)
        self.guard_out(node.dst, n)
        dst = self.ref_ptr(node.dst)
        srcs = [self.ref_ptr(r) for r in node.srcs]
        dd = dst[3]

        def emit(off, mask):
            vals = [self.load_ref(s, off, mask) for s in srcs]
            (x, xd) = vals[0]
            if api == "Cast":
                r, rd = self.vconvert(x, xd, dd, node.mode), dd
            elif api in ("Muls", "Adds", "Maxs", "Mins"):
                s = self.vec_scalar(node, dd)
                rd = dd if xd is None else dt.to_dtype(np.result_type(xd.np, dd.np))
                x, s = self.vconvert(x, xd, rd), self.vconvert(s, dd, rd)
                if api in ("Maxs", "Mins"):
                    r = self.np_max(x, s, api[:3].lower(), rd)
                else:
                    r = self.arith("*" if api == "Muls" else "+", x, s, rd)
            elif api == "Exp":
                r, rd = self._splat_em().exp(x), xd
                if xd in (dt.float16, dt.bfloat16):
                    r = self._splat_em().round_to(r, xd)
            else:
                (y, yd) = vals[1]
                if api == "And":
                    r, rd = b.and_(x, y), xd
                else:
                    rd = xd if yd is None or xd is None else dt.to_dtype(np.result_type(xd.np, yd.np))
                    x, y = self.vconvert(x, xd, rd), self.vconvert(y, yd, rd)
                    if api in ("Max", "Min"):
                        r = self.np_max(x, y, api.lower(), rd)
                    else:
                        op = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/"}.get(api)
                        if op is None:
                            raise LoweringError(f"kernel {self.k.name}: vector API {api} is not lowered to LLVM")
                        r = self.arith(op, x, y, rd)
            self.store_ref(dst, self.vconvert(r, rd, dd), off, mask)
        self.vloop(n, emit)

    def arith(self, op: str, x, y, d: dt.DType):
        """x op y in dtype d (numpy: a 16-bit float computed in float32 and rounded once)."""
        b = self.b
        if d.is_float:
            r = {"+": b.fadd, "-": b.fsub, "*": b.fmul, "/": b.fdiv}[op](x, y)
            return r if d == dt.float32 else self._splat_em().round_to(r, d)
        if op == "/":
            raise LoweringError(f"kernel {self.k.name}: integer Div")
        return {"+": b.add, "-": b.sub, "*": b.mul}[op](x, y)

    def reduce(self, node: Vec) -> None:
        """dst[0] = sum / max / min of n elements in numpy's order (np.sum: 0 + the pairwise sum
        with 8 accumulators over blocks of at most 128; max / min: a left fold)."""
        b = self.b
        kind = node.api.removeprefix("WholeReduce").removeprefix("ReduceRepeat").lower()
        self.guard_out(node.dst, ir.Constant(I64, 1))
        src = self.ref_ptr(node.srcs[0])
        dst = self.ref_ptr(node.dst)
        sd, dd = src[3], dst[3]
        if sd == dt.int32 and dd == dt.int32:
            self.store_scalar(self._int_reduce(kind, src[0], self.ev_i64(node.count)), dst[0], dd)
            return
        if sd is None or dd is None or not sd.is_float:
            raise LoweringError(f"kernel {self.k.name}: {node.api} of {sd}")
        n = self.ev_i64(node.count)
        fn = lambda: self._reduce_fn(kind, sd)   # noqa: E731 (emitted only when called: `_reduce_vector`)
        r = self._reduce_vector(kind, src[0], node.count, fn) if sd == dt.float32 else None
        if r is None:
            r = b.call(fn(), [src[0], n])
        # np.sum of a float16 array accumulates in float32 and rounds the result once
        if sd != dt.float32:
            r = self.round_scalar(r, sd)
        self.store_scalar(self.convert(r, sd.np, dd.np), dst[0], dd)

    def _int_reduce(self, kind: str, p, n):
        """The int32 sum (wrapping: any order gives the same bits) / max / min of n int32 elements
        (the CPU row schedule's integer lanes, lower/row_tile.int_reduction); n >= 1: whole vectors
        combined lane-wise, then across the lanes (llvm.vector.reduce.*), the rest one by one."""
        b = self.b
        vt = vec(I32, LANES)
        name = {"sum": "add", "max": "smax", "min": "smin"}[kind]

        def combine(x, y):
            if kind == "sum":
                return b.add(x, y)
            return b.select(b.icmp_signed(">" if kind == "max" else "<", x, y), x, y)
        whole = b.mul(b.udiv(n, ir.Constant(I64, LANES)), ir.Constant(I64, LANES))
        first = b.load(p, typ=I32, align=4)

        def vectors():
            start = b.load(p, typ=vt, align=4)
            _, (acc,) = carried_loop(b, ir.Constant(I64, LANES), whole, LANES,
                                     [start], lambda i, a: [combine(a[0], self.vload(p, I32, 4, i, None))], "ivreduce")
            return [b.call(self.kc.intrinsic(f"llvm.vector.reduce.{name}.v{LANES}i32", I32, [vt]), [acc])]
        (head,) = branch_values(b, b.icmp_unsigned(">=", n, ir.Constant(I64, LANES)), vectors, lambda: [first])
        rest = b.select(b.icmp_unsigned(">=", n, ir.Constant(I64, LANES)), whole, ir.Constant(I64, 1))

        def step(i, acc):
            return [combine(acc[0], b.load(b.gep(p, [i], source_etype=I32), typ=I32, align=4))]
        _, (acc,) = carried_loop(b, rest, n, 1, [head], step, "ireduce")
        return acc

    def _reduce_vector(self, kind: str, p, count, fn, regs=None, store=None):
        """The same reduction of a constant count of float32 elements in vector registers, or None
        (another count).  sum (8 <= n <= 128, n % 8 == 0): numpy's eight accumulators are the lanes of
        an <8 x float>, added chunk after chunk in the same order, then the same tree.  max / min (n %
        16 == 0): the left fold's value is the extreme value whenever it is not 0 and no element is
        NaN (all such elements have its bits); otherwise (a NaN, or which zero) the fold itself runs:
        `fn()` gives its function (asked for only then: a sum in registers emits no reduce.sum /
        pairwise helpers the kernel never calls -- a softmax's IR carried 130 such lines).
        `regs`: the elements are these 16-lane registers (`reduce_lanes`), not loaded; `store()` puts
        them at p before the fold runs."""
        b = self.b
        if not isinstance(count, int) or isinstance(count, bool):
            return None
        if kind == "sum" and 8 <= count <= 128 and count % 8 == 0:
            # whole 16-lane vectors loaded (as a fold stored them: a narrower load of a wider store
            # is not forwarded from the store buffer), halved into the <8 x float> chunks
            v8 = vec(F32, 8)
            chunks = []
            for c in range(0, count // 8, 2):
                at = b.gep(p, [ir.Constant(I64, 8 * c)], source_etype=F32)
                if c + 1 == count // 8:
                    chunks.append(b.load(at, typ=v8, align=4))
                    break
                v16 = regs[c // 2] if regs is not None else b.load(at, typ=vec(F32, LANES), align=4)
                for h in range(2):
                    chunks.append(b.shuffle_vector(v16, v16, ir.Constant(vec(I32, 8), [ir.Constant(I32, 8 * h + j)
                                                                                      for j in range(8)])))
            r = chunks[0]
            for chunk in chunks[1:]:
                r = b.fadd(r, chunk)
            x = [b.extract_element(r, ir.Constant(I32, j)) for j in range(8)]
            res = b.fadd(b.fadd(b.fadd(x[0], x[1]), b.fadd(x[2], x[3])), b.fadd(b.fadd(x[4], x[5]), b.fadd(x[6], x[7])))
            return b.fadd(ir.Constant(F32, 0.0), res)
        if kind not in ("max", "min") or count < LANES or count % LANES:
            return None
        op = ">" if kind == "max" else "<"
        vt = vec(F32, LANES)
        vs = list(regs) if regs is not None else \
            [b.load(b.gep(p, [ir.Constant(I64, LANES * i)], source_etype=F32), typ=vt, align=4)
             for i in range(count // LANES)]
        nan = b.fcmp_unordered("uno", vs[0], vs[0])
        m = vs[0]
        for v in vs[1:]:
            nan = b.or_(nan, b.fcmp_unordered("uno", v, v))
            m = b.select(b.fcmp_ordered(op, v, m), v, m)
        lanes = [b.extract_element(m, ir.Constant(I32, j)) for j in range(LANES)]
        while len(lanes) > 1:
            lanes = [b.select(b.fcmp_ordered(op, y, x), y, x) for x, y in zip(lanes[::2], lanes[1::2])]
        any_nan = b.icmp_unsigned("!=", b.bitcast(nan, ir.IntType(LANES)), ir.Constant(ir.IntType(LANES), 0))
        exact = b.and_(b.not_(any_nan), b.fcmp_ordered("one", lanes[0], ir.Constant(F32, 0.0)))
        def fold():
            if store is not None:
                store()
            return [b.call(fn(), [p, ir.Constant(I64, count)])]
        return branch_values(b, exact, lambda: [lanes[0]], fold)[0]

    def _elements_fn(self, name: str, d: dt.DType):
        """A new internal `float name(ptr p, i64 n)` over n elements of dtype d, with self.b at its
        entry (the caller restores it): (fn, builder, p, n, elem(i) -> element i as float32)."""
        fn = ir.Function(self.module, ir.FunctionType(F32, [PTR, I64]), name)
        fn.linkage = "internal"
        b = self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        p, n = fn.args

        def elem(i):
            return self.load_scalar(b.gep(p, [i], source_etype=mem_type(d)), d)
        return fn, b, p, n, elem

    def _cached_elements_fn(self, name: str, d: dt.DType, body) -> ir.Function:
        """The module's function `name` (float f(ptr p, i64 n)), emitted once by body(fn, b, p, n,
        elem); the caller's builder is kept."""
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        saved = self.b
        fn, b, p, n, elem = self._elements_fn(name, d)
        body(fn, b, p, n, elem)
        self.b = saved
        return fn

    def _reduce_fn(self, kind: str, d: dt.DType) -> ir.Function:
        """float f(ptr p, i64 n): numpy's reduction of n elements of dtype d, in float32."""
        return self._cached_elements_fn(f"reduce.{kind}.{d.name}", d, lambda *args: self._reduce_body(kind, d, *args))

    def _reduce_body(self, kind: str, d: dt.DType, fn, b, p, n, elem) -> None:
        zero64, one64 = ir.Constant(I64, 0), ir.Constant(I64, 1)
        if kind != "sum":
            def fold(i, acc):
                x = elem(i)
                keep = b.or_(b.fcmp_ordered(">" if kind == "max" else "<", acc[0], x),
                             b.fcmp_unordered("uno", acc[0], acc[0]))
                return [b.select(keep, acc[0], x)]
            first = elem(zero64)
            _, (acc,) = carried_loop(b, one64, n, 1, [first], fold, "fold")
            b.ret(acc)
        else:
            b.ret(b.fadd(ir.Constant(F32, 0.0), b.call(self._pairwise_fn(d), [p, n])))

    def _pairwise_fn(self, d: dt.DType) -> ir.Function:
        """numpy's pairwise_sum: n < 8 a plain sum, n <= 128 eight accumulators, else halves."""
        return self._cached_elements_fn(f"pairwise.{d.name}", d, lambda *args: self._pairwise_body(d, *args))

    def _pairwise_body(self, d: dt.DType, fn, b, p, n, elem) -> None:
        c = lambda v: ir.Constant(I64, v)   # noqa: E731
        small = fn.append_basic_block("small")
        not_small = fn.append_basic_block("not_small")
        block = fn.append_basic_block("block")
        split = fn.append_basic_block("split")
        b.cbranch(b.icmp_signed("<", n, c(8)), small, not_small)
        b.position_at_end(small)
        _, (acc,) = carried_loop(b, c(0), n, 1, [ir.Constant(F32, -0.0)],
                                 lambda i, a: [b.fadd(a[0], elem(i))], "small")
        b.ret(acc)
        b.position_at_end(not_small)
        b.cbranch(b.icmp_signed("<=", n, c(128)), block, split)
        b.position_at_end(block)
        init = [elem(c(j)) for j in range(8)]
        body_end = b.sub(n, b.srem(n, c(8)))

        def eight(i, r):
            return [b.fadd(r[j], elem(b.add(i, c(j)))) for j in range(8)]
        i, r = carried_loop(b, c(8), body_end, 8, init, eight, "eight")
        res = b.fadd(b.fadd(b.fadd(r[0], r[1]), b.fadd(r[2], r[3])), b.fadd(b.fadd(r[4], r[5]), b.fadd(r[6], r[7])))
        _, (res,) = carried_loop(b, i, n, 1, [res], lambda j, a: [b.fadd(a[0], elem(j))], "rest")
        b.ret(res)
        b.position_at_end(split)
        n2 = b.sdiv(n, c(2))
        n2 = b.sub(n2, b.srem(n2, c(8)))
        lo = b.call(fn, [p, n2])
        hi = b.call(fn, [b.gep(p, [n2], source_etype=mem_type(d)), b.sub(n, n2)])
        b.ret(b.fadd(lo, hi))

    def gather(self, node: Vec) -> None:
        """dst[i] = src[offset[i] / element bytes] (byte offsets into the source tensor)."""
        b = self.b
        dst, src, offs = self.ref_ptr(node.dst), self.ref_ptr(node.srcs[0]), self.ref_ptr(node.srcs[1])
        ptr_t, size = dst[1], dst[2]

        def one(i, _):
            o = b.load(b.gep(offs[0], [i], source_etype=offs[1]), typ=offs[1], align=offs[2])
            o = b.zext(o, I64) if o.type.width < 64 else o
            v = b.load(b.gep(src[0], [o], source_etype=I8), typ=ptr_t, align=size)
            b.store(v, b.gep(dst[0], [i], source_etype=ptr_t), align=size)
            return []
        carried_loop(b, ir.Constant(I64, 0), self.ev_i64(node.count), 1, [], one, "gather")

    # -- Matmul objects: the core's block on sgemm, handed out tile by tile ---------------------------------
    @staticmethod
    def _acc(mm) -> dt.DType:
        """The interpreter's product dtype: int32 for an int32 C (int8 operands), else float32."""
        return dt.int32 if mm.c.dtype == dt.int32 else dt.float32

    def mm_iterate(self, node: MmIterate, into: str | None = None) -> None:
        """The interpreter's Iterate: the core's m x k block of A and k x n of B gathered as float32
        (as SetTensorA / SetTensorB address them), C = A @ B by cblas_sgemm once, then the body once
        per base tile, M-first.  `into`: a float32 UB tensor whose rows are C's (the attention
        kind's O, `attention_softmax.match_accumulate`) gets C added in the register-tiled product
        itself, and the body is not run."""
        b = self.b
        mm, v = self.mms[node.mm], self.mm_vars[node.mm]
        m, n, kk = (b.zext(b.load(v[x], typ=I32), I64) for x in ("m", "n", "k"))
        f = {x: b.zext(self.ev_u32(mm_field(mm, x)), I64) for x in ("M", "Ka", "Kb", "N", "baseM", "baseN")}
        if self.host_product:   # the product is the caller's (`_HostProduct`)
            c_block, ldc = _HostProduct.block(self, mm)
            b.store(c_block, v["C"])
            b.store(ldc, v["ldc"])
            self._iterate_tiles(node, m, n, f)
            return
        a_buf, b_buf, c_buf = (b.gep(self.arena, [off], source_etype=I8) for off in self.mm_scratch[mm.name])
        b.store(c_buf, v["C"])
        b.store(n, v["ldc"])
        one = ir.Constant(I64, 1)
        # A [m, k]: element (i, j) at i * Ka + j, or (read transposed) j * M + i; B [k, n]: i * N + j or j * Kb + i
        acc = self._acc(mm)
        a_strides = (f["M"], one) if mm.a.transpose else (one, f["Ka"])
        b_strides = (f["Kb"], one) if mm.b.transpose else (one, f["N"])
        if acc == dt.int32 and _exact_chunk(mm):   # 8-bit operands: exact float32 chunks on sgemm
            self._operand(v, "A", mm.a, a_buf, m, kk, a_strides, dt.float32)
            self._operand(v, "B", mm.b, b_buf, kk, n, b_strides, dt.float32)
            self._int8_product(m, n, kk, a_buf, b_buf, c_buf, _exact_chunk(mm))
        elif acc == dt.int32:   # numpy's int32 matmul: exact products, the sums wrap
            self._operand(v, "A", mm.a, a_buf, m, kk, a_strides, acc)
            self._operand(v, "B", mm.b, b_buf, kk, n, b_strides, acc)
            self._int_product(m, n, kk, a_buf, b_buf, c_buf)
        else:
            if self.attn_p is not None and mm.name == "pv":   # P over S, float32 (attention_softmax)
                a_arg = (b.load(self.attn_p[0], typ=PTR), b.load(self.attn_p[1], typ=I64), ir.Constant(I32, 111))
            elif self._widened(mm.a):
                a_arg = self._widen(v["A"], a_strides[1], m, kk, a_buf)
            else:
                a_arg = self._sgemm_operand(v, "A", mm.a, a_buf, m, kk, a_strides)
            if self._widened(mm.b) and not mm.b.transpose:
                b_arg = self._widen(v["B"], b_strides[1], kk, n, b_buf)
            elif self._widened(mm.b):   # K in float16: widened as the pack transposes it (`_tiled_product`)
                b_arg = (b.load(v["B"], typ=PTR), b_strides[0], ir.Constant(I32, 113))
            else:
                b_arg = self._sgemm_operand(v, "B", mm.b, b_buf, kk, n, b_strides)
            with b.if_then(b.and_(b.icmp_unsigned(">", m, ir.Constant(I64, 0)),
                                  b.icmp_unsigned(">", n, ir.Constant(I64, 0)))):
                if mm.name in self.products:
                    self._numpy_product(self.products[mm.name], m, n, kk, a_arg, b_arg, c_buf, b_buf)
                elif into is not None:
                    (pa, lda, _), (pb, ldb, _) = a_arg, b_arg
                    o = b.gep(self.tensor_base(into), [ir.Constant(I64, 0)], source_etype=I8, name="attn.o")
                    self._product_call(tiled_product.ACCUMULATE, [m, n, kk, pa, lda, pb, ldb, o])
                elif self.tiled_products and not mm.a.transpose:
                    self._tiled_product(m, n, kk, a_arg, b_arg, b_buf, c_buf, mm)
                else:
                    self._sgemm(m, n, kk, a_arg, b_arg, c_buf)
        if into is None:
            self._iterate_tiles(node, m, n, f)

    def _iterate_tiles(self, node: MmIterate, m, n, f) -> None:
        """Iterate's body once per base tile of the m x n block, M-first."""
        b, v = self.b, self.mm_vars[node.mm]
        round_m = b.udiv(b.add(m, b.sub(f["baseM"], ir.Constant(I64, 1))), f["baseM"])
        round_n = b.udiv(b.add(n, b.sub(f["baseN"], ir.Constant(I64, 1))), f["baseN"])

        def tile(count, _):
            b.store(b.trunc(b.urem(count, round_m), I32), v["mi"])
            b.store(b.trunc(b.udiv(count, round_m), I32), v["ni"])
            self.body(node.body)
            return []
        carried_loop(b, ir.Constant(I64, 0), b.mul(round_m, round_n), 1, [], tile, "iterate")

    def _int8_product(self, m, n, kk, a, bb, c, chunk: int) -> None:
        """c = a @ b in int32 for 8-bit integer operands gathered as float32 rows (a [m, k], b [k, n]):
        K in chunks of `chunk` columns, each one sgemm into the float32 block after c (every partial
        sum an exact integer below 2**24), converted and added to c in int32 (numpy's int32 sums wrap
        the same; cube.py's int_product.py sums the same way)."""
        b = self.b
        zero = ir.Constant(I64, 0)
        mn = b.mul(m, n)
        self.memset(c, b.mul(mn, ir.Constant(I64, 4)))
        t = b.gep(c, [b.mul(mn, ir.Constant(I64, 4))], source_etype=I8)
        step = ir.Constant(I64, chunk)
        no_trans = ir.Constant(I32, 111)
        nonempty = b.and_(b.icmp_unsigned(">", m, zero), b.icmp_unsigned(">", n, zero))

        def part(c0, _):
            w = b.sub(kk, c0)
            w = b.select(b.icmp_unsigned("<", step, w), step, w)
            pa = b.gep(a, [c0], source_etype=F32)
            pb = b.gep(bb, [b.mul(c0, n)], source_etype=F32)
            self._sgemm(m, n, w, (pa, kk, no_trans), (pb, n, no_trans), t)

            def add(i, _):
                x = b.fptosi(b.load(b.gep(t, [i], source_etype=F32), typ=F32, align=4), I32)
                p = b.gep(c, [i], source_etype=I32)
                b.store(b.add(b.load(p, typ=I32, align=4), x), p, align=4)
                return []
            carried_loop(b, zero, mn, 1, [], add, "iadd")
            return []
        with b.if_then(nonempty):
            carried_loop(b, zero, kk, chunk, [], part, "ichunk")

    def memset(self, ptr, nbytes) -> None:
        f = self.kc.intrinsic("llvm.memset.p0.i64", VOID, [PTR, I8, I64, I1])
        self.b.call(f, [ptr, ir.Constant(I8, 0), nbytes, ir.Constant(I1, 0)])

    def _int_product(self, m, n, kk, a, bb, c) -> None:
        """c[i, j] = sum over p of a[i, p] * b[p, j] in int32 (wrapping), rows of k and n."""
        b = self.b
        zero = ir.Constant(I64, 0)

        def row(i, _):
            def col(j, _):
                def term(p, s):
                    x = b.load(b.gep(a, [b.add(b.mul(i, kk), p)], source_etype=I32), typ=I32, align=4)
                    y = b.load(b.gep(bb, [b.add(b.mul(p, n), j)], source_etype=I32), typ=I32, align=4)
                    return [b.add(s[0], b.mul(x, y))]
                _, (total,) = carried_loop(b, zero, kk, 1, [ir.Constant(I32, 0)], term, "dot")
                b.store(total, b.gep(c, [b.add(b.mul(i, n), j)], source_etype=I32), align=4)
                return []
            carried_loop(b, zero, n, 1, [], col, "icol")
            return []
        carried_loop(b, zero, m, 1, [], row, "irow")

    def _operand(self, v, which: str, op, dst, rows, cols, strides, acc) -> None:
        """The block of A or B as float32 rows: from GM / UB through its strides, or from an L1
        tensor in NZ (element (i, k) at (k / c0) * high * c0 + i * c0 + k % c0, high = its rows
        rounded up to 16, c0 = 32 bytes of elements)."""
        b = self.b
        src = b.load(v[which], typ=PTR)
        which_nz = b.load(v[which + "nz"], typ=I32)
        nz = ir.Constant(I64, 0)   # the rows of the NZ tensor's last CopyNz (at Iterate, as the interpreter)
        for j, t in enumerate(self.nz):
            rows_t = b.zext(b.load(self.nz_rows[t], typ=I32), I64)
            nz = b.select(b.icmp_unsigned("==", which_nz, ir.Constant(I32, j + 1)), rows_t, nz)
        zero = ir.Constant(I64, 0)
        with b.if_else(b.icmp_unsigned("==", which_nz, ir.Constant(I32, 0))) as (plain, blocked):
            with plain:
                self._gather(src, op, dst, rows, cols, strides, acc)
            with blocked:
                c0 = ir.Constant(I64, 32 // op.dtype.itemsize)
                high = b.mul(b.udiv(b.add(nz, ir.Constant(I64, 15)), ir.Constant(I64, 16)), ir.Constant(I64, 16))
                d = op.dtype

                def row(i, _):
                    def col(j, _):
                        at = b.add(b.add(b.mul(b.mul(b.udiv(j, c0), high), c0), b.mul(i, c0)), b.urem(j, c0))
                        x = self.load_scalar(b.gep(src, [at], source_etype=mem_type(d)), d)
                        b.store(self.convert(x, d.np, acc.np),
                                b.gep(dst, [b.add(b.mul(i, cols), j)], source_etype=reg_type(acc)), align=4)
                        return []
                    carried_loop(b, zero, cols, 1, [], col, "nzcol")
                    return []
                carried_loop(b, zero, rows, 1, [], row, "nzrow")

    def copy_nz(self, node: CopyNz) -> None:
        """rows x cols of a GM matrix into an L1 tensor in NZ: 32-byte column blocks, each `rows`
        rounded up to 16 high (what is not copied keeps its bytes, as in the interpreter)."""
        b = self.b
        g = self.gms[node.gm]
        d = self.tensor_dtype(node.tensor)
        if d != g.dtype:
            raise LoweringError(f"kernel {self.k.name}: CopyNz from GM {g.dtype} into {d}")
        rows, cols, gs = self.ev_i64(node.rows), self.ev_i64(node.cols), self.ev_i64(node.gm_stride)
        src0 = b.gep(self.gm_ptr[node.gm], [self.ev_i64(node.offset)], source_etype=mem_type(d))
        dst0 = self.tensor_base(node.tensor)
        c0 = ir.Constant(I64, 32 // d.itemsize)
        high = b.mul(b.udiv(b.add(rows, ir.Constant(I64, 15)), ir.Constant(I64, 16)), ir.Constant(I64, 16))
        blocks = b.udiv(b.add(cols, b.sub(c0, ir.Constant(I64, 1))), c0)
        size = ir.Constant(I64, d.itemsize)

        def row(i, _):
            def block(kb, _):
                k0 = b.mul(kb, c0)
                w = b.sub(cols, k0)
                w = b.select(b.icmp_unsigned("<", c0, w), c0, w)
                at = b.add(b.mul(b.mul(kb, high), c0), b.mul(i, c0))
                self.memcpy(b.gep(dst0, [at], source_etype=mem_type(d)),
                            b.gep(src0, [b.add(b.mul(i, gs), k0)], source_etype=mem_type(d)), b.mul(w, size))
                return []
            carried_loop(b, ir.Constant(I64, 0), blocks, 1, [], block, "nzblk")
            return []
        carried_loop(b, ir.Constant(I64, 0), rows, 1, [], row, "nzrows")
        b.store(b.trunc(rows, I32), self.nz_rows[node.tensor])

    def _sgemm_operand(self, v, which: str, op, scratch, rows, cols, strides):
        """(address, leading dimension, CBLAS transpose flag) of the block of A or B for sgemm: a float32
        operand in GM or UB is read where it lies (its rows, or read transposed its columns, have unit
        stride: `strides` is (column stride, row stride) with one of them 1); a 16-bit one, or one in an
        L1 tensor in NZ, is gathered as float32 rows into `scratch` first (`_operand`)."""
        b = self.b
        no_trans, trans = ir.Constant(I32, 111), ir.Constant(I32, 112)
        if op.dtype != dt.float32:
            self._operand(v, which, op, scratch, rows, cols, strides, dt.float32)
            return scratch, cols, no_trans
        plain = b.icmp_unsigned("==", b.load(v[which + "nz"], typ=I32), ir.Constant(I32, 0))
        with b.if_then(b.not_(plain)):
            self._operand(v, which, op, scratch, rows, cols, strides, dt.float32)
        # read transposed: the block's columns are the rows of the matrix in memory
        ld = strides[0] if op.transpose else strides[1]
        src = b.select(plain, b.load(v[which], typ=PTR), scratch)
        return src, b.select(plain, ld, cols), trans if op.transpose else no_trans

    def _tiled_fn(self, make, **options) -> ir.Function:
        """A tiled_product.py function of this module, defined at its first call (a module holds only
        the functions its kernel calls: each costs O3 time at the first launch)."""
        if make is tiled_product.widen_function:
            return make(self.module, self.kc)
        if make is tiled_product.pack_function:   # compiled once per process (jit.share), not per kernel
            return tiled_product.shared_pack(self.module, self.wide, **options)
        if make is tiled_product.packed_function:
            return make(self.module, self.wide, shared=True, **options)
        return make(self.module, self.kc, self.wide)

    def _widened(self, op) -> bool:
        """A float16 operand of the attention kind's register-tiled products, never in NZ: widened
        by vector loops (tiled_product's pack / widen), not `_operand`'s element-wise gather."""
        return self.tiled_products and op.dtype == dt.float16 and not self.nz

    def _widen(self, slot, ld, rows, cols, dst):
        """A float16 block's rows (ld apart, from the operand's address in `slot`) as float32 rows
        of `cols` in dst: `_sgemm_operand`'s triple."""
        self.b.call(self._tiled_fn(tiled_product.widen_function), [self.b.load(slot, typ=PTR), ld, rows, cols, dst])
        return dst, cols, ir.Constant(I32, 111)

    def _pack_cache(self, b, mm) -> None:
        """At the kernel's entry: the slots of `mm`'s packed blocks of B (tiled_product.pack_slots of
        the words' block, as `arena_layout` sized them) and their tags zeroed (an input may change
        between launches)."""
        n, ka = (b.zext(self.words[mm_field(mm, f)[2:]], I64) for f in ("singleCoreN", "Ka"))
        floats = b.mul(n, ka)
        slots = b.udiv(ir.Constant(I64, tiled_product.PACK_CACHE_BYTES), b.mul(floats, ir.Constant(I64, 4)))
        slots = b.select(b.icmp_unsigned("<", slots, ir.Constant(I64, tiled_product.PACK_SLOTS)), slots,
                         ir.Constant(I64, tiled_product.PACK_SLOTS))
        slots = b.select(b.icmp_unsigned("<", slots, ir.Constant(I64, 1)), ir.Constant(I64, 1), slots)
        tags = b.gep(self.arena, [b.add(self.mm_scratch[mm.name][1], b.mul(b.mul(slots, floats), ir.Constant(I64, 4)))],
                     source_etype=I8)
        memset = self.kc.intrinsic("llvm.memset.p0.i64", VOID, [PTR, I8, I64, I1])
        b.call(memset, [tags, ir.Constant(I8, 0), b.mul(slots, ir.Constant(I64, 16)), ir.Constant(I1, 0)])
        self.pack_cache[mm.name] = (slots, floats, n)

    def _tiled_product(self, m, n, kk, a, bb, scratch, c, mm=None) -> None:
        """c = a @ b in register tiles (tiled_product.py) instead of sgemm: `a` and `bb` are
        `_sgemm_operand`'s; a B read transposed (attention's K) is first transposed into `scratch`
        (the object's B block, k x n floats) in the panels the panel product reads -- or, for a
        Matmul object that `packs_b_once`, into the thread's cache of packed blocks, where it is
        packed only the first time."""
        b = self.b
        (pa, lda, _), (pb, ldb, tb) = a, bb
        if tb.constant in (112, 113) and mm is not None and mm.name in self.pack_cache:
            slots, floats, full_n = self.pack_cache[mm.name]
            block_bytes = b.mul(b.mul(full_n, ldb), ir.Constant(I64, mm.b.dtype.itemsize))
            scratch = b.call(self._tiled_fn(tiled_product.packed_function, half=tb.constant == 113),
                             [pb, ldb, n, kk, scratch, slots, floats, block_bytes])
        elif tb.constant in (112, 113):   # B[p, j] = src[j * ldb + p]: its n rows of k into scratch, in panels
            b.call(self._tiled_fn(tiled_product.pack_function, half=tb.constant == 113), [pb, ldb, n, kk, scratch])
        if tb.constant in (112, 113):
            if not self.attn_top:
                self._product_call(tiled_product.PANELS, [m, n, kk, pa, lda, scratch, n, c])
                return
            # S scaled and its causal keys cut as it is stored, its rows' maxima taken (attention_softmax)
            blk = attention_softmax.first_block(self)
            diag = ir.Constant(I64, 1 << 62)   # no causal keys
            if blk.diag is not None:   # key j of row i is masked from j - i >= first query + 1 - first key
                diag = b.sub(b.add(self.ev_i64(blk.diag[0]), ir.Constant(I64, 1)), self.ev_i64(blk.diag[1]))
            self._product_call(tiled_product.PANELS | tiled_product.ROW_MAX, [m, n, kk, pa, lda, scratch, n, c],
                               float(np.float32(blk.scale)), self.top_buf, diag)
            return
        self._product_call(0, [m, n, kk, pa, lda, pb, ldb, c])

    def _product_call(self, mode: int, args, scale: float = 0.0, top=None, diag=None) -> None:
        """tiled_product's product (its `mode`, the ROW_MAX arguments or none)."""
        fn = self._tiled_fn(tiled_product.product_function)
        top = ir.Constant(PTR, None) if top is None else top
        diag = ir.Constant(I64, 0) if diag is None else diag
        self.b.call(fn, list(args) + [ir.Constant(I64, mode), ir.Constant(F32, scale), top, diag])

    def _sgemm(self, m, n, kk, a, bb, c) -> None:
        """cblas_sgemm(RowMajor, ta, tb, m, n, k, 1, a, lda, b, ldb, 0, c, n) (64-bit ints): `a` and `bb`
        are `_sgemm_operand`'s (address, leading dimension, transpose flag)."""
        b = self.b
        one = ir.Constant(I64, 1)
        (pa, lda, ta), (pb, ldb, tb) = a, bb
        lda = b.select(b.icmp_unsigned(">", lda, one), lda, one)
        ldb = b.select(b.icmp_unsigned(">", ldb, one), ldb, one)
        ldc = b.select(b.icmp_unsigned(">", n, one), n, one)
        b.call(self.sgemm, [ir.Constant(I32, 101), ta, tb, m, n, kk,
                            ir.Constant(F32, 1.0), pa, lda, pb, ldb, ir.Constant(F32, 0.0), c, ldc])

    def _numpy_product(self, form: str, m, n, kk, a, bb, c, b_scratch) -> None:
        """The block's C = A @ B as np.matmul makes it for matrices of one row and / or one column
        (blas.numpy_product), with numpy's arguments: "matvec" (n = 1) one cblas_sgemv over the
        block's rows -- A C-ordered: ColMajor, Trans, lda its row stride; A read transposed
        (F-ordered): RowMajor, Trans -- "vecmat" (every matrix one row: the block's rows are
        matrices, m of them when the kind made A's batch one matrix) one cblas_sgemv per row with B
        as the matrix (B C-ordered: RowMajor, Trans; transposed: ColMajor, Trans), "dot" one
        cblas_sdot per row (numpy's float32 dot adds that one float to a double 0: the same float).
        `a` / `bb` are `_sgemm_operand`'s (address, leading dimension, transpose flag); the block's
        rows are whole matrices (cpu_tiling.cube_words keeps a matvec's rows in one block).
        A "vecmat" sgemv re-reads its y once per few rows of B: where y lies 0-256 bytes past B's
        rows modulo 4096 the loads and stores alias (4K aliasing: a [1, 1024] @ [1024, 4096] sgemv
        took 263-392 us by y's offset), so with B read in place y is staged in B's unused block of
        the arena (`b_scratch`), 2048 bytes from B's rows modulo 4096, and copied to C."""
        b = self.b
        (pa, lda, ta), (pb, ldb, tb) = a, bb
        one, zero = ir.Constant(I64, 1), ir.Constant(I64, 0)
        row_major, col_major, trans = ir.Constant(I32, 101), ir.Constant(I32, 102), ir.Constant(I32, 112)
        a_trans, b_trans = ta.constant == 112, tb.constant == 112
        # element (i, p) of A at i * lda + p (C-ordered) or p * lda + i; (p, j) of B at p * ldb + j or j * ldb + p
        a_row, a_inc = (one, lda) if a_trans else (lda, one)
        b_inc = one if b_trans else ldb   # down B's column
        f1, f0 = ir.Constant(F32, 1.0), ir.Constant(F32, 0.0)
        if form == "matvec":
            b.call(self.sgemv, [row_major if a_trans else col_major, trans, kk, m, f1, pa, lda, pb, b_inc,
                                f0, c, one])
            return

        if form == "vecmat":
            # staging: B read in place (its block is free) and large enough for y past the offset
            four, page = ir.Constant(I64, 4), ir.Constant(I64, 4096)
            room = b.icmp_unsigned(">=", b.mul(b.mul(kk, n), four), b.add(b.mul(n, four), page))
            staged = b.and_(b.icmp_unsigned("!=", pb, b_scratch), room)
            shift = b.and_(b.sub(b.add(b.ptrtoint(pb, I64), ir.Constant(I64, 2048)), b.ptrtoint(b_scratch, I64)),
                           ir.Constant(I64, 4095))
            y_staged = b.gep(b_scratch, [shift], source_etype=I8)

        def row(i, _):
            x = b.gep(pa, [b.mul(i, a_row)], source_etype=F32)
            if form == "vecmat":
                c_row = b.gep(c, [b.mul(i, n)], source_etype=F32)
                y = b.select(staged, y_staged, c_row)
                b.call(self.sgemv, [col_major if b_trans else row_major, trans, kk, n, f1, pb, ldb, x, a_inc,
                                    f0, y, one])
                with b.if_then(staged):
                    self.memcpy(c_row, y_staged, b.mul(n, ir.Constant(I64, 4)))
            else:
                dot = b.call(self.sdot, [kk, x, a_inc, pb, b_inc])
                b.store(dot, b.gep(c, [i], source_etype=F32), align=4)
            return []
        carried_loop(b, zero, m, 1, [], row, "vrow")

    def _gather(self, src, op, dst, rows, cols, strides, acc) -> None:
        """dst[i * cols + j] = src[i * strides[1] + j * strides[0]] in the product's dtype (float32:
        a 16-bit operand widened; int32: an int8 one)."""
        b = self.b
        d = op.dtype
        si, sj = strides[1], strides[0]

        def row(i, _):
            def col(j, _):
                x = self.load_scalar(b.gep(src, [b.add(b.mul(i, si), b.mul(j, sj))], source_etype=mem_type(d)), d)
                b.store(self.convert(x, d.np, acc.np),
                        b.gep(dst, [b.add(b.mul(i, cols), j)], source_etype=reg_type(acc)), align=4)
                return []
            carried_loop(b, ir.Constant(I64, 0), cols, 1, [], col, "gcol")
            return []
        if d != dt.float16 or acc != dt.float32:
            carried_loop(b, ir.Constant(I64, 0), rows, 1, [], row, "grow")
            return
        # a float16 block of whole rows: widened 16 at a time (tiled_product's loop), not left to O3's
        # vectoriser -- the quick tier has none (a float16 matmul ran 1.41x O3's time on it)
        with b.if_else(b.icmp_unsigned("==", sj, ir.Constant(I64, 1))) as (rows_in_place, strided):
            with rows_in_place:
                b.call(self._tiled_fn(tiled_product.widen_function), [src, si, rows, cols, dst])
            with strided:
                carried_loop(b, ir.Constant(I64, 0), rows, 1, [], row, "grow")

    def mm_get_c(self, node: MmGetC) -> None:
        """GetTensorC: the current tile of C (rounded to C's dtype) into a UB tensor, its rows 32 bytes
        apart; `placed`: at the tile's place in the block, rows padded to the block's width."""
        b = self.b
        mm, v = self.mms[node.mm], self.mm_vars[node.mm]
        m, n = (b.zext(b.load(v[x], typ=I32), I64) for x in ("m", "n"))
        mi, ni = (b.zext(b.load(v[x], typ=I32), I64) for x in ("mi", "ni"))
        bm, bn = (b.zext(self.ev_u32(mm_field(mm, x)), I64) for x in ("baseM", "baseN"))
        r0, c0 = b.mul(mi, bm), b.mul(ni, bn)
        rows = b.sub(m, r0)
        rows = b.select(b.icmp_unsigned("<", bm, rows), bm, rows)
        cols = b.sub(n, c0)
        cols = b.select(b.icmp_unsigned("<", bn, cols), bn, cols)
        d = self.tensor_dtype(node.tensor)
        per = ir.Constant(I64, 32 // d.itemsize)
        width = n if node.placed else cols
        ld = b.mul(b.udiv(b.add(width, b.sub(per, ir.Constant(I64, 1))), per), per)
        at_r, at_c = (r0, c0) if node.placed else (ir.Constant(I64, 0), ir.Constant(I64, 0))
        c_buf, ldc = b.load(v["C"], typ=PTR), b.load(v["ldc"], typ=I64)   # Iterate's block of C, its row stride
        copy = ir.Constant(I1, 1)
        if self.tensor_queue[node.tensor] in self.c_aliased:
            # the tile's rows lie in the block of C as GetTensorC would lay them out in UB (whole
            # rows of the block, 32-byte rows; or one row): the buffer is that part of the block
            contiguous = b.or_(b.icmp_unsigned("==", rows, ir.Constant(I64, 1)),
                               b.and_(b.and_(b.icmp_unsigned("==", cols, n), b.icmp_unsigned("==", ld, n)),
                                      b.icmp_unsigned("==", ldc, n)))
            q = self.tensor_queue[node.tensor]
            idx = b.load(self.t_index[node.tensor]) if node.tensor in self.t_index else ir.Constant(I32, 0)
            tile = b.gep(c_buf, [b.mul(b.add(b.mul(r0, ldc), c0), ir.Constant(I64, 4))], source_etype=I8)
            self.set_buffer(node.tensor, b.select(contiguous, tile, self.arena_buffer(q, idx)))
            copy = b.not_(contiguous)
        base = self.tensor_base(node.tensor)
        if self._acc(mm) == mm.c.dtype == d:   # no conversion: each row one memcpy (a conv's rows of
            # kPix pixels are not whole 32-byte rows when kPix % 8: the element loop cost ~1 ns each)
            size = ir.Constant(I64, d.itemsize)

            def row_copy(i, _):
                src = b.gep(c_buf, [b.mul(b.add(b.mul(b.add(r0, i), ldc), c0), size)], source_etype=I8)
                dst = b.gep(base, [b.add(b.mul(b.add(at_r, i), ld), at_c)], source_etype=mem_type(d))
                self.memcpy(dst, src, b.mul(cols, size))
                return []
            with b.if_then(copy):
                carried_loop(b, ir.Constant(I64, 0), rows, 1, [], row_copy, "crow")
            return

        def row(i, _):
            def col(j, _):
                acc = self._acc(mm)
                x = b.load(b.gep(c_buf, [b.add(b.mul(b.add(r0, i), ldc), b.add(c0, j))], source_etype=reg_type(acc)),
                           typ=reg_type(acc), align=4)
                x = self.convert(x, acc.np, mm.c.dtype.np)
                x = self.convert(x, mm.c.dtype.np, d.np)
                at = b.add(b.mul(b.add(at_r, i), ld), b.add(at_c, j))
                self.store_scalar(x, b.gep(base, [at], source_etype=mem_type(d)), d)
                return []
            carried_loop(b, ir.Constant(I64, 0), cols, 1, [], col, "ccol")
            return []
        with b.if_then(copy):
            carried_loop(b, ir.Constant(I64, 0), rows, 1, [], row, "crow")

    # -- Step: one graph op's tile stmts -------------------------------------------------------------------
    def _step_fold(self, group: list, after: list):
        """A fold that can run in the loop of the Steps before it, or None: `dup acc <- v count W`
        and `for k in 0 .. n step W: vec Add|Max|Min acc <- acc, T[base + k] count min(W, n - k)` right
        after Steps over elements [0, n) that write T at `base` (the row kind's reductions of a value
        it has just computed: softmax's sum of exp, layer_norm's sum of squares).  Returns (the Dup,
        the For, its Vec, the slot of T in the steps); W is at most MAX_STEP_FOLD lanes, kept in
        registers."""
        if len(after) != 2 or not isinstance(after[0], Dup) or not isinstance(after[1], For):
            return None
        dup, loop = after
        v = self._fold(loop)
        first = group[0]
        w = dup.count
        if v is None or not isinstance(w, int) or isinstance(w, bool) or w % LANES or not 0 < w <= self.MAX_STEP_FOLD:
            return None
        integer = self._fold_acc_type(v) == I32   # int32 lanes: an int identity (lower/row_tile.int_reduction)
        if not isinstance(dup.value, int if integer else float) or isinstance(dup.value, bool):
            return None
        if dup.dst != v.dst or dup.dst.offset != 0 or first.offset != 0:
            return None
        if loop.start != 0 or loop.step != w or repr(loop.end) != repr(first.count):
            return None
        if repr(v.count) != repr(("min", w, ("-", loop.end, loop.var))):
            return None
        src = v.srcs[1]
        for node in group:
            if any(self.tensor_queue[r.tensor] in self.out_aliased for _, r in node.names):
                return None   # an output computed in GM: its own (streaming) loop
        last = {}   # the slot each Step writes T at last
        for node in group:
            refs = dict(node.names)
            for st in node.stmts:
                r = refs[st.dst]
                if r.tensor == src.tensor:
                    last = {"slot": st.dst, "ref": r, "node": node}
        if not last or last["ref"].view is not None or repr(add(last["ref"].offset, loop.var)) != repr(src.offset):
            return None
        return dup, loop, v, last["node"], last["slot"]

    MAX_STEP_FOLD = 8 * LANES   # a step-fused fold's lanes (its accumulators are vector registers)

    def _fold_loop(self, n, run, fold, red=None) -> bool:
        """The steps' loop over [0, n) with the fold after them (`_step_fold`) in it: W lanes of
        accumulators in W / LANES vector registers, the steps' vectors i .. i + W per pass (lane l of
        accumulator j takes element i + j * LANES + l: every lane folds the same elements in the same
        order as the fold loop: the same bits); a masked tail pass; the lanes stored once."""
        b = self.b
        dup, loop, v, node, slot = fold
        w = dup.count
        parts = w // LANES
        at = self.ref_ptr(dup.dst)
        self.guard_out(dup.dst, ir.Constant(I64, w))
        em = self._splat_em()
        integer = self._fold_acc_type(v) == I32
        with np.errstate(all="ignore"):
            init = em.splat(int(dup.value), I32) if integer else em.splat(float(np.float32(dup.value)), F32)
        iota = ir.Constant(vec(I64, LANES), [ir.Constant(I64, i) for i in range(LANES)])
        src_d = self.tensor_dtype(v.srcs[1].tensor)

        def apply(acc, x):
            if integer and x.type.element != I32:   # an 8-bit / bool step value, widened as numpy does
                x = (b.sext if src_d == dt.int8 else b.zext)(x, vec(I32, LANES))
            return self._fold_apply(v, acc, x)

        def whole(i, regs):
            if len(regs) > 1:   # the steps' math once (`_rotated_strips`)
                return self._rotated_strips(i, regs, lambda off, acc: apply(acc, run(off, None)[(id(node), slot)]),
                                            "sfstrip")
            return [apply(regs[0], run(i, None)[(id(node), slot)])]
        if self._compensated(v):
            # blocks of FOLD_BLOCK passes summed from zero, each added with Kahan's compensation
            # (`_blocked_fold`); the tail pass and the compensation's last bits as the plain loop
            zero = em.splat(0.0, F32)
            span = ir.Constant(I64, w * self.FOLD_BLOCK)

            def block(k0, carried):
                k1 = b.add(k0, span)
                k1 = b.select(b.icmp_signed("<", k1, n), k1, n)
                end, part = carried_loop(b, k0, k1, w, [zero] * parts, whole, "sfold", whole_steps=True)
                tot, comps = self._kahan_regs(carried[:parts], carried[parts:2 * parts], part)
                return tot + comps + [end]
            blocks_end = b.mul(b.udiv(n, ir.Constant(I64, w)), ir.Constant(I64, w))
            _, carried = carried_loop(b, ir.Constant(I64, 0), blocks_end, span, [init] * parts + [zero] * parts
                                      + [ir.Constant(I64, 0)], block, "sblock")
            regs, end = carried[:parts], carried[2 * parts]
        else:
            end, regs = carried_loop(b, ir.Constant(I64, 0), n, w, [init] * parts, whole, "sfold", whole_steps=True)

        def strip(off, acc):
            mask = b.icmp_signed("<", iota, em.splat_value(b.sub(n, off)))
            values = run(off, mask)
            return b.select(mask, apply(acc, values[(id(node), slot)]), acc)

        def tail():
            if parts == 1:
                return [strip(end, regs[0])]
            return self._rotated_strips(end, regs, strip, "sftail")
        regs = branch_values(b, b.icmp_signed("<", end, n), tail, lambda: list(regs))
        if red is not None:   # the halving and WholeReduce after it, on the registers
            self.reduce_lanes(red, regs)
            return True
        for j, acc in enumerate(regs):
            self.store_ref(at, acc, ir.Constant(I64, LANES * j), None)
        return False

    def _rotated_strips(self, start, regs: list, strip, tag: str) -> list:
        """`regs[j] = strip(start + j * LANES, regs[j])` for every accumulator j, as a loop of
        len(regs) passes that emits `strip` once: each pass folds the first accumulator and moves it
        last, so after the last pass every accumulator is back in its place, having taken the same
        operations in the same order as the unrolled strips (the same bits).  A step-fused fold's
        whole passes and masked tail: its steps' math (a softmax's exp) once each instead of once per
        accumulator (a softmax [64, 1000]'s exp 8 copies -> 2, its quick compile 44 -> 39 ms; the
        quick code, which runs the loop, ~3 % slower); O3 unrolls the known trip count (the same
        object code)."""
        b = self.b

        def one(j, accs):
            off = b.add(start, b.mul(j, ir.Constant(I64, LANES)))
            return accs[1:] + [strip(off, accs[0])]
        _, out = carried_loop(b, ir.Constant(I64, 0), ir.Constant(I64, len(regs)), 1, list(regs), one, tag)
        return out

    def prefill(self, step: Step) -> None:
        """The Duplicates the printer puts before a Step's stmts (printer_kernel: the lanes Compare
        reads past the count, and constant tensors such as the -2**31 the NaN Select of the
        float32 -> int32 chain picks): without them a cube / row / column epilogue's Select read
        whatever the buffer held."""
        for r, value, count in step.prefill:
            self.dup(Dup(r, value, count))

    def steps(self, group: list, fold=None, red=None) -> bool:
        """Consecutive Steps over the same elements (one count, one offset), in one 16-lane loop when
        every UB buffer they write is addressed at one place in all of them (lanes never meet): a
        value one step writes and the next reads stays in registers, and a VECCALC temporary no node
        outside the group reads, written before it is read, is never stored.  Otherwise each step
        alone, and one loop per stmt when a step writes a buffer at two places."""
        b = self.b
        first = group[0]
        n = self.ev_i64(first.count if first.count is not None else "n")
        o = self.ev_i64(first.offset)
        # refs of tensors that may stand for strided GM rows: their runs' offsets, checked first
        hint = None
        off_expr = first.offset
        if isinstance(off_expr, tuple) and off_expr[0] == "*" and len(off_expr) == 3:
            hint = (self.ev_i64(off_expr[1]), self.ev_i64(off_expr[2]))
        strided = {}
        fast = self._fast_seg is not None and hint is not None and off_expr[1] == self._fast_seg
        for node in group:
            for _, r in node.names:
                if r in strided or self.tensor_queue.get(r.tensor) not in self.strided:
                    continue
                if fast and r.offset == 0:   # checked before the loop (`_home_unfit`): row = seg
                    us, gs, _, _ = self._geom(r.tensor)
                    strided[r] = b.select(b.icmp_unsigned("!=", us, ir.Constant(I64, 0)), b.mul(hint[0], gs), o)
                else:
                    strided[r] = self.strided_offset(r, n, o, hint)
        for node in group:
            refs = dict(node.names)
            for slot in dict.fromkeys(st.dst for st in node.stmts):
                self.guard_out(refs[slot], n, o, strided.get(refs[slot]))
        parts = []
        for node in group:
            refs = dict(node.names)
            at = {slot: self.ref_ptr(r, o, strided.get(r)) for slot, r in refs.items()}
            buffer = self._buffers(refs)
            key = {slot: buffer[slot] + (repr(r.offset), r.view) for slot, r in refs.items()}
            var_types = {var: _kind_dtype(self.types[member]) for var, member in node.scalars}
            if any(v is None for v in var_types.values()):
                raise LoweringError(f"kernel {self.k.name}: a step scalar is not a typed scalar")
            var_regs = {var: self.read(member)[0] for var, member in node.scalars}
            parts.append((node, refs, at, key, var_types, var_regs))
        fused = self._fuses(group)
        if not fused and len(group) > 1:
            for node in group:
                self.steps([node])
            self._fold_after(fold)
            return False
        ids = {id(node) for node in group}
        if fold is not None and fused:   # the fold's source is read by its Vec only: a temporary of the loop
            ids |= {id(fold[0]), id(fold[1]), id(fold[2])}

        def run(todo, off, mask, nt=None):
            """The steps on the vector at `off`; {(id(step), slot): its value} of every slot written."""
            values, dirty, loaded, slots = {}, {}, set(), {}
            for node, refs, at, key, var_types, var_regs, stmts in todo:
                em = StmtEmitter(self.kc, b, var_types)
                var_values = {v: em.splat_value(x) for v, x in var_regs.items()}
                for st in stmts:
                    srcs = []
                    want = self._operand_dtypes(st)
                    for src, w in zip(st.srcs, want):
                        if key[src] not in values:
                            values[key[src]] = self.load_ref(at[src], off, mask)
                            loaded.add(key[src])
                        v, d = values[key[src]]
                        srcs.append(self.vconvert(v, d, w))
                    scalar = em.scalar_operand(st, var_values) if st.scalar is not None and st.op != "cast" else None
                    r = em.stmt(st, srcs, scalar)
                    rd = dt.float16 if st.op == "cmp" else st.dtype
                    md = at[st.dst][3]
                    values[key[st.dst]] = (self.vconvert(r, rd, md), md)
                    slots[(id(node), st.dst)] = values[key[st.dst]][0]
                    dirty.setdefault(key[st.dst], (at[st.dst], refs[st.dst]))
            for place, (where, ref) in dirty.items():
                if fused and place not in loaded and self._dead_after(ids, ref):
                    continue   # a temporary of these steps only: it lives in registers
                self.store_ref(where, values[place][0], off, mask, nontemporal=place == nt)
            return slots

        if fused:
            todo = [part + (part[0].stmts,) for part in parts]
            outs = {key[st.dst]: (at[st.dst], refs[st.dst]) for node, refs, at, key, _, _ in parts
                    for st in node.stmts if self.tensor_queue[refs[st.dst].tensor] in self.out_aliased}
            if fold is not None:
                return self._fold_loop(n, lambda off, mask: run(todo, off, mask), fold, red)
            elif len(outs) == 1 and next(iter(outs.values()))[0][3] is not None:
                self._streamed_loop(n, next(iter(outs.items())), lambda off, mask, nt: run(todo, off, mask, nt))
            else:
                self.vloop(n, lambda off, mask: run(todo, off, mask))
        else:
            for st in first.stmts:
                self.vloop(n, lambda off, mask, st=st: run([parts[0] + ((st,),)], off, mask))
            self._fold_after(fold)
        return False

    def _fold_after(self, fold) -> None:
        """A step fold (`_step_fold`) the steps could not run in their loop: its Dup and fold loop on
        their own, after them."""
        if fold is not None:
            self.dup(fold[0])
            self.for_(fold[1])

    def _streamed_loop(self, n, out, emit) -> None:
        """The steps' loop when they store one output computed in GM (`out`: its place, (address,
        Ref)): in a streaming launch the vectors from the first 64-byte line of it on are stored
        with non-temporal stores (the lines are not read first, as llvm.py's vector kernels do),
        the elements before that line and the tail as usual; otherwise the plain loop."""
        b = self.b
        if not self.streaming:
            self.vloop(n, lambda off, mask: emit(off, mask, None))
            return
        place, (at, ref) = out
        q = self.tensor_queue[ref.tensor]
        idx = b.load(self.t_index[ref.tensor]) if ref.tensor in self.t_index else ir.Constant(I32, 0)
        slots = self.out_end[q]
        end = b.load(slots[0], typ=I64)
        for i in range(1, len(slots)):
            end = b.select(b.icmp_unsigned("==", idx, ir.Constant(I32, i)), b.load(slots[i], typ=I64), end)
        in_gm = b.icmp_unsigned("!=", end, ir.Constant(I64, -1))
        size = at[2]
        addr = b.ptrtoint(at[0], I64)
        aligned = b.icmp_unsigned("==", b.urem(addr, ir.Constant(I64, size)), ir.Constant(I64, 0))
        head = b.and_(b.sub(ir.Constant(I64, 0), addr), ir.Constant(I64, 63))
        # a short run (a row) that starts or ends inside a line would mix streaming and plain
        # stores on its first and last lines, each time: only whole lines, or long runs
        whole = b.icmp_unsigned("==", b.or_(head, b.and_(b.mul(n, ir.Constant(I64, size)), ir.Constant(I64, 63))),
                                ir.Constant(I64, 0))
        long = b.icmp_unsigned(">=", b.mul(n, ir.Constant(I64, size)), ir.Constant(I64, STREAM_RUN_BYTES))
        with b.if_else(b.and_(b.and_(b.and_(self.stream, in_gm), aligned), b.or_(whole, long))) as (then, other):
            with then:
                peel = b.udiv(head, ir.Constant(I64, size))
                peel = b.select(b.icmp_unsigned("<", peel, n), peel, n)
                self.vloop(peel, lambda off, mask: emit(off, mask, None))
                self.vloop(n, lambda off, mask: emit(off, mask, place), start=peel)
            with other:
                self.vloop(n, lambda off, mask: emit(off, mask, None))

    @staticmethod
    def _operand_dtypes(st) -> list:
        if st.op == "cast":
            return [st.src_dtype]
        if st.op == "select" and st.cmp_mode is None:
            return [dt.float16, st.dtype, st.dtype]
        return [st.dtype] * len(st.srcs)
