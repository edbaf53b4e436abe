"""The CPU's own tiling words for a TileKernel (the runner's choice; the kernel reads any words).

The chip's words size tiles for its UB (192 KB on 910B) and split the work over its 20-48 cores.
The host runs the same kernel from one arena per thread, with no UB to fit, and pays per tile for
the stage code and for every DMA that is not one contiguous run (a staging copy: llvm_kernel.py
aliases only contiguous copies to GM).  So where a kind's words allow it, the CPU takes tiles
whose copies are contiguous:

- column kernels: a tile of every column (bn = B, the rows then contiguous in GM: the elem
  inputs' buffers are the GM rows themselves, no copy) and chunks of K of about CHUNK_BYTES
  (the fold loops walk a chunk once per 64 columns: it stays in L2); a resident kernel (every row
  of K in one DMA, later walks reading UB) keeps its K.  Rows wider than ROW_BYTES keep the
  chip's tiles (the accumulators would leave the caches; a host schedule's tiles of outputs, with
  chunks of K).  The kernel is the kind's host schedule (`column_schedule`: strides as words, so one
  kernel for every shape; it also takes integer and bool reductions, in int32 accumulators, symbolic
  sizes, tiled per launch, and no rows of K);
- vector kernels: the vector tiling (tile/tiling.compute_tiling) for a UB of VECTOR_UB bytes and
  VECTOR_BLOCKS cores (blocks: enough for the launcher's threads to share the work): a 1 MB
  elementwise chain runs 256 tiles of 1024 elements instead of 410 of 640 (fewer blocks than the
  chip's 48 cores, enough for two threads to balance on a shared host); a kernel with a hoisted
  row (a broadcast input's row, computed once per block into a tile-sized buffer the Compute step
  reads every tile) takes no more rows per tile than keep that buffer, the streamed inputs and the
  outputs of one tile within L1_BYTES (`hoisted_rows_in_l1`): else each tile's streams evict the
  hoisted lines before the next tile reads them (relu(abs(a[1024]) + b[1024, 1024]) f32 on one
  thread: 4-row tiles 141-155 us, 3 rows 137-149, 2 rows 106-126, 1 row 113-125; 19faa6c's
  executor, one hoisted row beside each row, 112-119).  Small tiles grow (`host_tiles`): each tile
  costs the kernel ~50 cycles of stage code (its geometry, the copies' alias checks, the Compute
  loop's set-up) where the chip's cost model weighs a tile for its cores and double buffering, which a
  serial launch -- run as one block -- does not have: a tile with a hoisted row takes as many rows as
  fill HOISTED_L1_SHARE of L1 (relu(abs(a[128]) + b[192, 128]) f32: the chip's 4-row tiles 3.2 us a
  call, 8 rows 2.9, 12 rows 2.75, 16 rows 2.8, 20 rows 3.3, 24 rows 3.4), any other at least
  MIN_TILE_ELEMS elements (relu(a + b) on [192, 128] f32, one row of 24576: tiles of 256 elements
  3.9 us, 1024 3.5, 4096 3.3, 24576 3.25).  `cpu_words` applies it to any vector tiling it is given
  (the chip's too: a bound call on the chip's words runs the CPU's tiles);
- matmul kernels (the cube kind): cores split M only, each block whole rows of C over all of N
  (singleCoreN = N), so each block is ONE sgemm with A and B read where they lie in GM (a
  float32 operand: llvm_kernel.py passes its rows and leading dimension to sgemm); a product of
  PARALLEL_MACS multiply-adds or more whose C is larger than one epilogue tile is two blocks per
  launcher thread (one when B is 16-bit: each block widens all of it), each a multiple of 64 rows (BLAS runs rows in tiles of its kernel's height
  from each call's first row: blocks on that grid keep every row's sums those of one call over
  all rows), a smaller one is one block on the caller's thread (cube.py's rule: a 256 x 1024 @
  1024 x 256 product took 1.33 ms on one thread, 1.45-2.4 ms as four blocks on two threads when
  the host's other vCPU was busy).
  The epilogue's tiles are whole rows of the block (baseN = N rounded up to 16, as the chip's:
  when N is a multiple of 8 each tile is contiguous in the block of C, so GetTensorC hands the
  block's rows over without a copy, and one contiguous run of the output, computed in place) of
  about EPILOGUE_BYTES (read back from L2 right after);
- row kernels (softmax, the norms, last-axis reductions): the row kind's schedule lowered for a
  UB of ROW_UB bytes (`row_schedule`: rows of up to tens of thousands of elements take the
  single-read plan, where the chip's 192 KB makes a long row several passes over x in GM) with
  folds of `row_fold_lanes` lanes: 64 for rows of up to 2048 elements -- the CPU keeps the 64
  lanes in four vector registers and walks the row once, where the chip's wider folds
  (fold_width: fewer vector calls per row on the chip) made the CPU store and reload 512 lanes
  per row and halve them (1 MB softmax 0.153 -> 0.139 ms, 64 MB 1.80x -> 1.05x llvm_row's time)
  -- and LONG_SUM_LANES (eight vector registers, a pass one walk over 128 consecutive elements)
  for longer rows, whose float sums llvm_kernel adds with Kahan's compensation every 16 passes
  (`compensated_row_sums`, ScheduleCpu(compensated_folds=True)): a lane then never adds more
  than 16 elements in sequence before its compensated total (a sum's error grows with that
  count: numpy's pairwise sum adds 16 per accumulator; 2**25 float32 0.1s within 1.5e-7 of
  float64, as llvm_row.py's compensated chunks of 1024 were).  Until this, rows over 2048 took
  up to 1024 plain lanes (at most ROW_LANE_ADDS adds a lane), which the CPU walked slower
  (softmax / layer_norm [16, 16384]: 1.31x / 1.27x llvm_row's time, 128 compensated lanes
  1.08-1.14x / 0.96-1.03x).  Float sums over rows longer than ROW_SUM_MAX (or of a symbolic
  length: `long_row_sums`) are scheduled on a UB of LONG_ROW_UB bytes so rows of up to millions
  of elements are single-read (a symbolic row is tiled per call: with 1 MB a row
  over ~100K elements could not run natively) and their other folds (softmax's online sum, the
  moments of layer_norm: not compensated) only run on rows bigger than that.  The words are that
  schedule's tiling (`row_tiling`);
- view kernels (slice / concatenate / take): the chip's boxes in tiles of up to VIEW_TILE_ELEMS
  elements of whole rows (`view_tiling`); llvm_kernel reads the sources' rows in place and
  computes into the output rows, strided or not, one Step per row.  Boxes whose rows take a DMA
  each (a broadcast row copied in UB, overlapping rows, gathered rows) one row per tile when
  their rows have VIEW_ROW_BYTES or more (a one-row copy is read in place, a gathered row too),
  except gathered rows under GATHER_ROW_BYTES: GATHER_TILE_ROWS per tile (a tile's fixed work --
  its box, queues, the bias row it copies -- cost more than copying 256-byte rows into UB, and
  consecutive copies overlap their misses: relu(take(table [50000, 64], 8192 ids) + bias) 0.25 ->
  0.19 ms, one row per tile still faster from 512-byte rows on: 0.30 vs 0.34 ms);
- transposes (the transpose kind's transpose mode): tiles of TRANSPOSE_BAND register tiles (T x T,
  T a 64-byte line of elements) along the input's rows, T rows high, or as many rows of T as
  make that many elements when the rows are shorter; llvm_kernel moves them from GM to GM, T input
  lines in, T output lines out per register tile (`transpose_tiling`);
- attention kernels (`attention_schedule`): the attention kind's schedule with the CPU's blocks --
  Q blocks of ATTENTION_Q_ROWS rows (causal: ATTENTION_CAUSAL_Q_ROWS, as a block's products run to
  its last row's diagonal), KV blocks of up to ATTENTION_KV_COLS keys (the chip's are at most 128 x
  128, sized by its L0C and UB; a KV block is one Iterate per product, whose fixed work -- K^T
  transposed for llvm_kernel's register-tiled product, the softmax's per-row calls -- larger blocks
  amortise, while the score block's passes stay in L2), never a multiple of 1024 floats wide (rows
  4 KB apart fall in one L1 set: the product's eight rows of P and of C would evict each other),
  one item per block (the launcher's threads take items as they finish them), Q read where it lies
  in GM (no NZ copy) and P handed to the P V product in UB (the coupled core's form, 310P's
  `p_in_ub`: no round trip through a workspace);
- every other kind: the chip's words.
"""
from __future__ import annotations

import dataclasses
from types import MappingProxyType

from .. import dtypes as dt
from ..lower.attention import AttentionSchedule, schedule_attention_kernel
from ..lower.column import ColumnSchedule, ColumnTiling, schedule_reduce_kernel
from ..lower.cube import TCUBE_FIELDS, CubeSchedule
from ..lower.kinds import kernel_words
from ..lower.row import (FOLD_LANES, FOLD_MAX_LANES, RowSchedule, RowTiling, compute_row_tiling,
                         schedule_row_kernel)
from ..lower.transpose import TransposeSchedule, TransposeTiling
from ..lower.vector import compute_tiling
from ..tile.ir import VectorSchedule
from ..targets import Target, get_target, host_casts
from ..tile.tiling import VIEW_BOX_HEAD, VIEW_LOAD_WORDS
from .launch import host_threads
from .register_transpose import tile_side

__all__ = ["attention_schedule", "column_schedule", "compensated_row_sums", "conv_words", "cpu_words", "cube_words",
           "host_tiles", "long_row_sums", "row_schedule", "row_tiling", "transpose_tiling", "vector_tiling", "view_tiling"]

VECTOR_UB = 1 << 20
VECTOR_BLOCKS = 32
L1_BYTES = 32 << 10   # a core's L1 data cache (32 KB on every x86 core since 2006; 48 KB on some newer)
HOISTED_L1_SHARE = 0.75   # a hoisted row's tiles grow to fill this much of L1 (the stack, args and arena heads share it)
MIN_TILE_ELEMS = 4096     # other vector tiles grow to this many elements (the CPU's tiles of a 1 MB chain already have it)

CHUNK_BYTES = 256 << 10
ROW_BYTES = 1 << 20
MAX_ROWS = 4095   # the words stay ones the chip's DMA could take (DataCopyPad's blockCount)

PARALLEL_MACS = 1 << 24       # a product this large runs as blocks on the launcher's threads
EPILOGUE_BYTES = 256 << 10    # one epilogue tile of C: stays in L2 across the whole chain
CONV_SPLIT_BYTES = 4 << 20    # a conv's product this large: its epilogue on the launcher's threads
BLAS_ROWS = 64                # blocks of rows start on this grid (module doc)
TRANSPOSE_BAND = 32           # register tiles per transpose tile along the input's rows
VIEW_TILE_ELEMS = 16 << 10   # elements per tile of a view box of contiguous rows (or of narrow rows)
VIEW_ROW_BYTES = 256         # a strided box's rows from this many bytes on: one row per tile
GATHER_ROW_BYTES = 512       # gathered rows of VIEW_ROW_BYTES up to this: GATHER_TILE_ROWS per tile
GATHER_TILE_ROWS = 16

# Attention blocks on the CPU (module doc).  [1, 8, 2730, 64] float32 on two threads, llvm_kernel /
# attention.py (the per-kind executor then), interleaved, load ~6: Q x KV blocks of 256 x 1008 1.22, 128 x 512 1.16, 64 x 512 1.17,
# 128 x 256 1.16 (the chip's 128 x 128, before the CPU's schedule: 1.3-1.6)
ATTENTION_Q_ROWS = 128     # query rows per attention item on the CPU
ATTENTION_CAUSAL_Q_ROWS = 128   # causal: a block's product runs to its last row's diagonal (the rest masked)
ATTENTION_KV_COLS = 512    # keys per KV block at most (a 128 x 512 float32 score block: 256 KB, in L2)

ROW_UB = 1 << 20   # a row kernel's UB on the CPU: a core's L2
ROW_LANE_ADDS = 32   # elements a fold's lane adds in sequence at most (a float sum's accuracy)
ROW_SUM_MAX = FOLD_MAX_LANES * ROW_LANE_ADDS   # the longest row a float sum folds plainly on the CPU
LONG_SUM_LANES = 128   # a long float sum's fold lanes (module doc)
INT_ROW_UB = 1 << 30   # an integer row reduction's UB (row_ub): the multi-pass plan folds float32 lanes only
LONG_ROW_UB = 64 << 20   # a long float sum's UB (module doc): the arena a thread takes is the tiles'


def cpu_words(lowered, tiling) -> list[int]:
    """The tiling words the CPU runs a kernel with (the chip's `tiling` for these sizes given)."""
    if isinstance(lowered, ColumnSchedule):
        return column_tiling(lowered, tiling).words
    if type(lowered) is CubeSchedule:   # a matmul (conv's schedule reads its words otherwise)
        widened = lowered.mm.operands[1].dtype != dt.float32   # each block widens all of B first
        return cube_words(kernel_words(lowered, tiling), int(lowered.mm.result.shape[-2]), 1 if widened else 2,
                          whole=int(lowered.mm.result.shape[-1]) == 1)
    if isinstance(lowered, TransposeSchedule):
        return list(transpose_tiling(lowered, tiling).words)
    if isinstance(lowered, VectorSchedule) and lowered.views is None:
        return kernel_words(lowered, host_tiles(lowered, tiling))
    return kernel_words(lowered, tiling)


def cube_words(words: list[int], matrix_rows: int | None = None, per_thread: int = 2, whole: bool = False) -> list[int]:
    """A matmul kernel's TCubeTiling words for the CPU (module doc), from the chip's.  `matrix_rows`:
    the rows of one batch matrix of C; fewer than M when the kind made A's batch matrices one
    matrix of consecutive rows (a shared B): then every block lies in one batch matrix (a block
    over two would be one sgemm where numpy and cube.py make one per matrix, other sums).
    `per_thread`: blocks per launcher thread of a large product; one when every block widens all of
    a 16-bit B (each thread widens it once, while the other does: a lone 1024^3 float16 / bfloat16
    matmul, llvm_kernel / cube.py -- which widens B once -- 1.01-1.18 with two blocks per thread,
    0.93-1.02 with one; 512^3 0.96-1.00 -> 0.88-0.93; interleaved, 15 repeats, load 4.7).
    `whole`: each matrix one block (a product of one column: numpy's one cblas_sgemv over all its
    rows, whose sums for a row depend on where the call's rows start -- llvm_kernel makes that call)."""
    w = dict(zip(TCUBE_FIELDS, words))
    m, n, k = w["M"], w["N"], w["Ka"]
    if m == 0 or n == 0:
        return list(words)
    threads = host_threads()
    one = m if matrix_rows is None else min(m, matrix_rows)
    rows = one
    if threads > 1 and not whole and one * n * k >= PARALLEL_MACS and one >= 32 and 4 * one * n > EPILOGUE_BYTES:
        per = -(-one // (per_thread * threads))
        rows = min(one, -(-per // BLAS_ROWS) * BLAS_ROWS)
        if one < m and one % rows:   # blocks of whole matrices' parts: a multiple of 64 dividing them
            rows = next((r for r in range(rows, one, BLAS_ROWS) if one % r == 0), one)
    base_n = -(-n // 16) * 16   # as the chip's: GetTensorC pads each row of a tile to 32 bytes
    w.update(usedCoreNum=-(-m // rows), singleCoreM=rows, singleCoreN=n, baseN=base_n,
             baseM=max(1, min(rows, EPILOGUE_BYTES // (4 * base_n))))
    return [w[f] for f in TCUBE_FIELDS]


def column_tiling(sched: ColumnSchedule, t: ColumnTiling) -> ColumnTiling:
    """A column kernel's CPU tiling from the launch's (module doc): tiles of every column and chunks
    of K; rows wider than ROW_BYTES keep the launch's tiles of outputs (a host schedule's -- whose
    words the chip's UB did not size -- with chunks of K too)."""
    row = sum(p.dtype.itemsize for p in sched.params if p.kind == "elem")
    A, K, B = t.A, t.K, t.B
    if t.total_tiles == 0:
        return t
    wide = B * max(row, 4) > ROW_BYTES
    if wide and not sched.host:
        return t
    bn = t.bn if wide else B
    kt = t.kt if sched.resident else max(1, min(K, MAX_ROWS, CHUNK_BYTES // (bn * max(row, 1))))
    tiles = A * -(-B // bn)
    return ColumnTiling(A, K, B, bn, kt, -(-B // bn), tiles, 1, tiles, t.strides)


def column_schedule(fn, target: Target) -> ColumnSchedule:
    """The column kind's host schedule of `fn` (lower/column.schedule_reduce_kernel(host=True): integer
    and bool reductions in int32 accumulators, outputs of any dtype, symbolic sizes, no rows of K, its
    strides as words), what the CPU runs for every column kernel; the kind's located ScheduleError when
    it refuses the kernel on the host too.  Scheduled for `row_target` with ROW_UB (the words are column_tiling's)."""
    return schedule_reduce_kernel(fn, row_target(target), host=True)


def vector_tiling(sched, sizes: dict, target):
    """The Tiling a vector kernel runs with on the CPU (module doc): its words are the kernel's."""
    if sched.views is not None:
        return view_tiling(sched, compute_tiling(sched, sizes, target))
    cpu = dataclasses.replace(target, vector_cores=min(target.vector_cores, VECTOR_BLOCKS))
    t = compute_tiling(dataclasses.replace(sched, ub_budget=max(sched.ub_budget, VECTOR_UB)), sizes, cpu)
    return host_tiles(sched, t)


def host_tiles(sched, t):
    """`t` with the CPU's tile size (module doc): rows of a hoisted row's tiles as `hoisted_rows_in_l1`
    gives, any other tile grown to MIN_TILE_ELEMS elements (whole rows in rows mode, whole granules of
    the one row otherwise, at most its size).  Only the tile changes, never the work: the kernel reads
    any tiling words, and each element is computed alike in any tile.  Blocks: at most `t`'s (the
    launcher's threads share them as before; a serial launch runs them as one).  Idempotent:
    `vector_tiling`'s tiles pass `cpu_words` unchanged."""
    if t.total_tiles == 0:
        return t
    rows = hoisted_rows_in_l1(sched, t)
    if rows is not None:
        return _retiled(sched, t, rows, t.tile_cols) if rows != t.tile_rows else t
    if t.rows_mode:
        rows = min(t.R, MAX_ROWS, max(t.tile_rows, -(-MIN_TILE_ELEMS // t.Cpad)))
        return _retiled(sched, t, rows, t.tile_cols) if rows > t.tile_rows else t
    gran = sched.gran_elems
    cols = min(-(-t.C // gran) * gran, max(t.tile_cols, -(-MIN_TILE_ELEMS // gran) * gran))
    return _retiled(sched, t, 1, cols) if cols > t.tile_cols else t


def hoisted_rows_in_l1(sched, t) -> int | None:
    """The rows per tile of a kernel with hoisted rows (None for another): a hoisted value (a
    broadcast row, computed in the Prologue) fills every row of its tile-sized buffer, which the
    Compute step reads once per tile beside the tile's GM inputs and outputs; when those lines
    together pass L1_BYTES, the streams evict the hoisted lines before the next tile reads them
    again, so no more rows than fit L1_BYTES; fewer than fill HOISTED_L1_SHARE of it grow to that
    (module doc)."""
    body_reads = {src for s in sched.body for src in s.srcs}
    hoisted = [s for name, s in sched.slots.items() if s.role == "inv" and name in body_reads]
    if not t.rows_mode or not hoisted:
        return None
    streamed = sum(i.gm_dtype.itemsize for i in sched.inputs if i.kind in ("full", "general"))
    per_row = t.Cpad * (sum(s.dtype.itemsize for s in hoisted) + streamed
                        + sum(o.gm_dtype.itemsize for o in sched.outputs))
    most = max(1, L1_BYTES // per_row)
    if t.tile_rows > most:
        return most
    return min(t.R, MAX_ROWS, max(t.tile_rows, int(HOISTED_L1_SHARE * L1_BYTES) // per_row))


def _retiled(sched, t, rows: int, cols: int):
    """`t` in tiles of `rows` rows (rows mode) or `cols` columns of its row (otherwise), in at most
    its blocks."""
    if t.rows_mode:
        total = -(-t.R // rows)
        elems = -(-rows * t.Cpad // sched.gran_elems) * sched.gran_elems
        t = dataclasses.replace(t, tile_rows=rows, tile_elems=elems)
    else:
        col_tiles = -(-t.C // cols)
        total = t.R * col_tiles
        t = dataclasses.replace(t, tile_cols=cols, col_tiles=col_tiles, tile_elems=cols)
    per_core = -(-total // max(1, min(t.block_dim, total)))
    return dataclasses.replace(t, total_tiles=total, tiles_per_core=per_core, block_dim=-(-total // per_core))


def row_target(target: Target, ub: int = ROW_UB) -> Target:
    """The target a row kernel is scheduled and tiled for on the CPU: the chip's with ROW_UB of UB,
    the host's casts (targets.host_casts: direct conversions, numpy's NaN and overflow results
    instead of the chip's detours) and every vector API 910B has for a dtype (910A's detours --
    lanes finished on the scalar unit with fmax / fmin, which drop a NaN that numpy's max
    propagates; compares through float16 and a duplicated scalar -- are the chip's, not the host's)."""
    cpu = host_casts(target)
    apis = dict(cpu.api_dtypes)
    for api, dtypes in get_target("ascend910b").api_dtypes.items():
        apis[api] = frozenset(apis.get(api, frozenset())) | dtypes
    for api in ("WholeReduceSum", "WholeReduceMax", "WholeReduceMin"):   # the host reduces int32 lanes too
        apis[api] = apis[api] | {"int32_t"}
    return dataclasses.replace(cpu, ub_bytes=max(target.ub_bytes, ub), api_dtypes=MappingProxyType(apis))


def row_schedule(fn, target: Target) -> RowSchedule:
    """The row kind's schedule of `fn` as the CPU runs it (module doc); the row kind's located
    ScheduleError when it refuses the kernel (integer reductions, too many inputs for a queue
    position, ...).  `target` is the chip's (with the host's casts for 8-bit integers).  A kernel with
    `long_row_sums` runs with compensated folds (module doc)."""
    if long_row_sums(fn):
        sched = schedule_row_kernel(fn, row_target(target, LONG_ROW_UB))
        return dataclasses.replace(sched, fold_lanes=LONG_SUM_LANES, offer_tilings=False)
    sched = schedule_row_kernel(fn, row_target(target, row_ub(fn)))
    return dataclasses.replace(sched, fold_lanes=row_fold_lanes(sched.row_shape[-1]), offer_tilings=False)


def row_ub(fn) -> int:
    """The UB a row kernel is scheduled for on the CPU: ROW_UB, LONG_ROW_UB for long float sums,
    INT_ROW_UB for integer reductions (the multi-pass plan folds float32 lanes only: rows of up to
    2**28 int32 stay single-read; a thread's arena is its tile's buffers, not the UB)."""
    ints = any(op.name in ("sum", "max", "min") and not op.operands[0].dtype.is_float for op in fn.ops)
    return INT_ROW_UB if ints else LONG_ROW_UB if long_row_sums(fn) else ROW_UB


def row_fold_lanes(C) -> int:
    """The lanes a row of C elements is folded into on the CPU (module doc): 64 up to 64 *
    ROW_LANE_ADDS elements (and for a symbolic C), else LONG_SUM_LANES -- a float sum then folds
    compensated (`compensated_row_sums`): wider lanes walked the row slower (softmax / layer_norm
    [16, 16384]: 512 lanes 0.133 / 0.081 ms, 128 lanes 0.119 / 0.059, llvm_row 0.102 / 0.064)."""
    if isinstance(C, int) and C > FOLD_LANES * ROW_LANE_ADDS:
        return LONG_SUM_LANES
    return FOLD_LANES


def compensated_row_sums(fn) -> bool:
    """Whether a row kernel's float sums fold with Kahan's compensation on the CPU (module doc):
    sums (or means) of float rows longer than 64 * ROW_LANE_ADDS elements, or of a symbolic length."""
    for op in fn.ops:
        if op.name in ("sum", "mean") and op.operands[0].dtype.is_float:
            C = op.operands[0].shape[-1] if op.operands[0].shape else 1
            if not isinstance(C, int) or C > FOLD_LANES * ROW_LANE_ADDS:
                return True
    return False


def long_row_sums(fn) -> bool:
    """Whether a row kernel sums (or averages) float rows longer than ROW_SUM_MAX elements, or of
    a symbolic length: the CPU's folds would add more than ROW_LANE_ADDS elements per lane."""
    for op in fn.ops:
        if op.name in ("sum", "mean") and op.operands[0].dtype.is_float:
            C = op.operands[0].shape[-1] if op.operands[0].shape else 1
            if not isinstance(C, int) or C > ROW_SUM_MAX:
                return True
    return False


def row_tiling(sched: RowSchedule, sizes: dict, target: Target) -> RowTiling:
    """The tiling a `row_schedule` kernel runs with for these sizes (its words are the kernel's)."""
    # no cap on the cores for shared rows (gamma, beta: the chip's GM reads of them, 2 % of the
    # traffic at most): llvm_kernel reads them in place, so [8, 1048576] rms_norm is 8 blocks, not 1
    return compute_row_tiling(dataclasses.replace(sched, shared_row_bytes=0), sizes,
                              row_target(target, row_ub(sched.fn)))


def view_tiling(sched, chip):
    """A view kernel's CPU Tiling from the chip's (module doc): the same boxes (the kernel's box
    table has the chip's size; a box wider than the chip's tile stays cut into the chip's column
    chunks), other rows per tile, VECTOR_BLOCKS blocks."""
    if chip.total_tiles == 0 or not chip.boxes:
        return chip
    loads = [inp for inp in sched.inputs if inp.kind in ("view", "gather")]
    item = max([inp.gm_dtype.itemsize for inp in loads] + [o.gm_dtype.itemsize for o in sched.outputs])
    widest = max(box[2] for box in chip.boxes)
    shapes = []
    for box in chip.boxes:
        rows, cols = box[1], box[2]
        words = [box[VIEW_BOX_HEAD + j * VIEW_LOAD_WORDS:VIEW_BOX_HEAD + (j + 1) * VIEW_LOAD_WORDS]
                 for j in range(len(loads))]
        # a row read once and copied in UB, rows that overlap, gathered rows: a DMA per row
        per_row = any(inp.kind == "gather" or (w[3] != 0 and w[2] < cols) for inp, w in zip(loads, words))
        plain = not per_row and box[5] == cols and all(w[3] == 0 or w[2] == cols for w in words)
        wide = cols * item >= VIEW_ROW_BYTES
        gathered = any(inp.kind == "gather" for inp in loads)
        if gathered and wide and cols * item < GATHER_ROW_BYTES:   # (module doc)
            tr = max(1, min(rows, GATHER_TILE_ROWS))
        elif per_row and wide:
            tr = 1
        else:
            tr = max(1, min(rows, MAX_ROWS, VIEW_TILE_ELEMS // max(cols, 1)))
        shapes.append((tr, plain))
    # UB rows one longer than the widest box's when some box of several rows per tile is strided
    # in GM: its rows are then one run each, a Step per row (never one run over rows of the UB
    # tile that are not contiguous in GM)
    cpad = widest + (16 if any(tr > 1 and not plain for tr, plain in shapes) else 0)
    words, first = [], 0
    for box, (tr, _) in zip(chip.boxes, shapes):
        words.append((first,) + tuple(box[1:3]) + (tr,) + tuple(box[4:]))
        first += -(-box[1] // tr)
    tile_rows = max(tr for tr, _ in shapes)
    per_core = -(-first // VECTOR_BLOCKS)
    return dataclasses.replace(chip, Cpad=cpad, tile_rows=tile_rows, tile_cols=cpad, total_tiles=first,
                               tiles_per_core=per_core, block_dim=-(-first // per_core),
                               tile_elems=tile_rows * cpad, boxes=tuple(words), choice=None)


def transpose_tiling(sched: TransposeSchedule, t: TransposeTiling) -> TransposeTiling:
    """A transpose's CPU tiling (module doc): the chip's words with other tile sides, tile counts
    and VECTOR_BLOCKS blocks.  The copy and gather modes keep the chip's."""
    if sched.mode != "transpose" or t.total_tiles == 0:
        return t
    side = tile_side(sched.item)
    tc = min(sched.C, TRANSPOSE_BAND * side)
    ta = min(sched.A, MAX_ROWS, max(side, (TRANSPOSE_BAND * side * side // max(tc, 1)) // side * side))
    tiles_a, tiles_c = -(-sched.A // ta), -(-sched.C // tc)
    total = t.total_tiles // (t.tiles_a * t.tiles_c) * tiles_a * tiles_c
    per_core = -(-total // VECTOR_BLOCKS)
    words = list(t.words)
    words[5:12] = [ta, tc, tiles_a, tiles_c, total, per_core, -(-total // per_core)]
    return TransposeTiling(ta, tc, tiles_a, tiles_c, total, per_core, -(-total // per_core), tuple(words))


def attention_schedule(fn, target: Target) -> AttentionSchedule:
    """The attention kind's schedule of `fn` as the CPU runs it (module doc): planned for a 910B
    whose vector and cube units share a core (so P reaches the P V product in UB) and whose UB, L1
    and L0C hold the CPU's blocks; the kind's located ScheduleError when it refuses the kernel
    (bfloat16, symbolic shapes, masks broadcast over the keys, ...).  `target` is the chip's: the
    CPU's plan is the same for every chip."""
    del target   # the kernel's semantics do not depend on the chip (kernel_interp runs either plan)
    chip = get_target("ascend910b")
    cpu = dataclasses.replace(chip, separated=False, has_datacopypad=True, ub_bytes=1 << 30, l1_bytes=1 << 30,
                              l0c_bytes=1 << 30, aic_cores=1 << 20)
    sched = schedule_attention_kernel(fn, cpu)
    bq = min(ATTENTION_CAUSAL_Q_ROWS if sched.causal else ATTENTION_Q_ROWS, _up(max(1, sched.L), 8))
    bk = min(ATTENTION_KV_COLS, _up(max(1, sched.S), 16))
    if bk % 1024 == 0:   # rows 4 KB apart (module doc)
        bk -= 16
    out = dataclasses.replace(sched, bq=bq, bk=bk, qk=_one_block(sched.qk, bq, bk, sched.E),
                              pv=_one_block(sched.pv, bq, sched.Dv, bk))
    out.q_l1_bytes, out.q_ub_bytes, out.c_cols = 0, 0, 0   # Q read in GM; one base block per product
    out.mask_lead, out.mask_row = sched.mask_lead, sched.mask_row
    out.rope, out.rope_row = sched.rope, sched.rope_row
    out.heads_per_batch, out.kv_heads = sched.heads_per_batch, sched.kv_heads
    out.q_st, out.k_st, out.v_st, out.o_st = sched.q_st, sched.k_st, sched.v_st, sched.o_st
    out.offsets = sched.offsets
    out.plan_note = (f"flash attention on the CPU: {sched.heads} heads x {out.q_blocks} Q blocks of {bq} rows, "
                     f"KV blocks of {bk}")
    return out


def _one_block(t, m: int, n: int, k: int):
    """A product's tiling whose block (m x n over k) is one base block (GetTensorC hands out one tile)."""
    return dataclasses.replace(t, M=m, N=n, K=k, used_core_num=1, single_core_m=m, single_core_n=_up(n, 16),
                               base_m=m, base_n=_up(n, 16), base_k=k, step_k=1)


def _up(a: int, b: int) -> int:
    return -(-a // b) * b


def conv_words(words: list[int], pix: int, channels: int, product_bytes: int) -> list[int]:
    """A conv kernel's TCubeTiling words for the CPU, from the chip's, in host-product mode (the
    product of the whole conv2d is conv_product.py's; each core runs the epilogue on its block of
    it: conv_cpu.ConvCpu).  A core's block is every pixel of a block of output channels (its
    rows are whole images' rows: each tile of C is contiguous in the product and handed over
    without a copy, and its output rows are one run); one block on the caller's thread below
    CONV_SPLIT_BYTES of product, else two per launcher thread (an epilogue pass is memory-bound:
    a second thread helps only when there is enough of it).  Tiles: whole rows of ~EPILOGUE_BYTES."""
    w = dict(zip(TCUBE_FIELDS, words))
    threads = host_threads()
    blocks = 1 if product_bytes < CONV_SPLIT_BYTES or threads == 1 else min(channels, 2 * threads)
    rows = -(-channels // blocks)
    base_n = -(-pix // 16) * 16
    w.update(usedCoreNum=-(-channels // rows), singleCoreM=rows, singleCoreN=pix, baseN=base_n,
             baseM=max(1, min(rows, EPILOGUE_BYTES // (4 * base_n))))
    return [w[f] for f in TCUBE_FIELDS]

