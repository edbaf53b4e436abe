"""A lone transpose / permute for the Ascend C backend.

Fusion keeps `transpose(x, perm)` a kernel of its own (kind "single") unless a matmul folds it
(passes/fold_transpose.py).  Its data movement is first simplified (`simplify`: size-1 axes
dropped, input axes that stay adjacent and in order in the output merged), which leaves one of
two shapes of work, each a batch (the "outer" axes) of 2-D blocks:

    copy       the input's last axis stays last: every output row is a contiguous run of the
               input.  A tile is `ta` rows (input axis A = the output's second-to-last axis,
               rows sA apart in GM) of `tc` columns: one strided DMA in, one UB->UB copy into
               the output queue, one strided DMA out (rows oA apart).
    transpose  the output's last axis is input axis A (rows sA apart in the input), the
               input's last axis C becomes rows oC apart in the output.  A tile is `ta` x `tc`
               elements read by one strided DMA, transposed in UB element by element
               (GetValue/SetValue: the vector units' transposes -- Transpose,
               TransDataTo5HD -- take 16 x 16 blocks of 2-byte types only, and fusedsl's CPU
               implementation of the API has neither yet), written as `tc` rows of `ta`.

    gather     a lone slice with a step on the last axis (max/avg pooling taps), which views.py
               cannot make DMA addressing: a tile reads the contiguous span of each of its `ta`
               rows that holds its `tc` columns (rows sA apart, from the slice's first element
               `in0`), picks every cC-th element in UB (GetValue/SetValue) and writes `tc`
               columns per row (rows oA apart).

The outer axes (at most MAX_OUTER after simplification) are decoded from the tile index in
the kernel (sizes and both strides in the tiling struct).  Cores take contiguous ranges of
tiles; on chips without DataCopyPad the unaligned tails are written with SetValue, and cores
must not share a 64-byte GM line, so the kernel runs on one core there.  Shapes are static.
"""
from __future__ import annotations


from ..record import record
from ..errors import ScheduleError
from ..ir.core import Function, Op
from ..ir.ops import CONSTANT, has_trait
from .vector import MIN_CORE_BYTES
from .row import MAX_ELEMS, RowParam
from ..targets import Target
from ..tile.kernel import (Alloc, Barrier, CopyIn, CopyOut, DeQue, EnQue, Field, For, Free, Gm, If, Let, Member,
                           Move, Queue, Set, Stage, TileKernel, UbCopy, Var, add, mul, output_names, pad)

MAX_OUTER = 6
MAX_ROWS = 4095          # DataCopy(Pad) blockCount


def simplify(shape: tuple, perm: tuple) -> tuple[tuple, tuple]:
    """(shape, perm) with size-1 axes dropped and input axes that stay adjacent and in order in
    the output merged: the same data movement on fewer axes."""
    keep = [a for a in range(len(shape)) if shape[a] != 1]
    perm = [a for a in perm if shape[a] != 1]
    renum = {a: i for i, a in enumerate(keep)}
    shape = [shape[a] for a in keep]
    perm = [renum[a] for a in perm]
    groups = []                 # runs of consecutive input axes, in output order
    for a in perm:
        if groups and groups[-1][-1] + 1 == a:
            groups[-1].append(a)
        else:
            groups.append([a])
    order = sorted(range(len(groups)), key=lambda g: groups[g][0])   # the groups in input order
    new_shape = []
    for g in order:
        n = 1
        for a in groups[g]:
            n *= shape[a]
        new_shape.append(n)
    rank = {g: i for i, g in enumerate(order)}
    return tuple(new_shape), tuple(rank[g] for g in range(len(groups)))


def lone_transpose(fn: Function) -> Op | None:
    """The transpose op when fn is one transpose of its parameter returned as its result."""
    ops = [op for op in fn.ops if not has_trait(op, CONSTANT)]
    if len(ops) != 1 or ops[0].name != "transpose" or len(fn.params) != 1 or len(fn.results) != 1:
        return None
    op = ops[0]
    if op.operands[0] is not fn.params[0].value or op.result is not fn.results[0]:
        return None
    return op


def lone_strided_slice(fn: Function) -> Op | None:
    """The slice op when fn is one slice of its parameter, returned.  The vector kind takes the
    ones views.py plans as DMA addressing first; this kind the rest: a step on the last axis, or
    more than views.MAX_BOXES boxes (a crop of a 5-D tensor: one box per outer index)."""
    ops = [op for op in fn.ops if not has_trait(op, CONSTANT)]
    if len(ops) != 1 or ops[0].name != "slice" or len(fn.params) != 1 or len(fn.results) != 1:
        return None
    op = ops[0]
    if op.operands[0] is not fn.params[0].value or op.result is not fn.results[0] or not op.attr("steps"):
        return None
    return op


def _round_up(a: int, b: int) -> int:
    return -(-a // b) * b


@record(frozen=False)
class TransposeSchedule:
    fn: Function
    op: Op
    target: Target
    mode: str                # "copy" | "transpose" | "gather"
    A: int                   # rows of a block (input axis A)
    C: int                   # columns of a block (the input's last axis)
    sA: int                  # input stride of A (elements)
    oA: int                  # output stride of A
    oC: int                  # output stride of C
    outer: tuple[tuple[int, int, int], ...]   # (size, input stride, output stride) per outer axis
    ta: int                  # rows per tile
    tc: int                  # columns per tile
    params: list[RowParam]
    ub_budget: int
    plan_note: str
    in0: int = 0             # the input's first element (a slice's start)
    cC: int = 1              # input stride of the columns (a slice's last step; 1 otherwise)

    symbols = ()             # static sizes only

    @property
    def inputs(self):
        return self.params

    @property
    def item(self) -> int:
        return self.op.result.dtype.itemsize

    def pads(self) -> tuple[int, int]:
        """(tc, ta) rounded up to whole 32-byte blocks: the UB row lengths of the input tile
        and of the transposed tile."""
        block = max(1, 32 // self.item)
        return _round_up(self.tc, block), _round_up(self.ta, block)

    def span_pad(self) -> int:
        """The UB row length of a gather tile's input: the span of its tc columns, padded."""
        return _round_up((self.tc - 1) * self.cC + 1, max(1, 32 // self.item))

    def tiling(self, sizes, target) -> "TransposeTiling":
        return compute_transpose_tiling(self, target)


@record
class TransposeTiling:
    tile_rows: int
    tile_cols: int
    tiles_a: int
    tiles_c: int
    total_tiles: int
    tiles_per_core: int
    block_dim: int
    words: tuple[int, ...]    # the tiling struct, word by word (transpose_tile_kernel)


def schedule_transpose_kernel(fn: Function, target: Target, ub_fraction: float = 1.0) -> TransposeSchedule:
    if lone_strided_slice(fn) is not None:
        return _schedule_gather(fn, lone_strided_slice(fn), target, ub_fraction)
    op = lone_transpose(fn)
    if op is None:   # the kind claims only lone transposes and stepped slices (lower/kinds.py)
        raise ScheduleError(f"kernel {fn.name} is not one transpose of its input", loc=fn.loc)
    x = op.operands[0]
    shape = tuple(x.shape)
    if not all(isinstance(d, int) for d in shape):
        raise ScheduleError(f"transpose of a tensor with symbolic sizes {list(shape)} is not printed as Ascend C yet",
                            loc=op.loc, hint="give the tensor fixed sizes, or run on the CPU executors")
    s, p = simplify(shape, tuple(op.attr("perm")))
    n = len(s)
    in_st = [1] * n
    for a in range(n - 2, -1, -1):
        in_st[a] = in_st[a + 1] * s[a + 1]
    out_shape = [s[a] for a in p]
    out_st_i = [1] * n
    for i in range(n - 2, -1, -1):
        out_st_i[i] = out_st_i[i + 1] * out_shape[i + 1]
    out_st = {p[i]: out_st_i[i] for i in range(n)}   # input axis -> its output stride
    if n <= 1 or p[-1] == n - 1:
        mode = "copy"
        c_ax = n - 1 if n else None
        a_ax = p[-2] if n >= 2 else None
    else:
        mode = "transpose"
        c_ax, a_ax = n - 1, p[-1]
    C = s[c_ax] if c_ax is not None else 1
    A = s[a_ax] if a_ax is not None else 1
    sA = in_st[a_ax] if a_ax is not None else 0
    oA = out_st[a_ax] if a_ax is not None else 0
    oC = out_st[c_ax] if c_ax is not None else 1
    outer = tuple((s[a], in_st[a], out_st[a]) for a in range(n) if a not in (a_ax, c_ax))
    if len(outer) > MAX_OUTER:
        raise ScheduleError(f"transpose {list(op.attr('perm'))} moves {len(outer) + 2} separate axes; the printed "
                            f"kernel decodes at most {MAX_OUTER + 2}", loc=op.loc,
                            hint="this kernel still runs on the CPU executors (kernel(*arrays))")
    total = 1
    for d in shape:
        total *= d
    if total >= MAX_ELEMS:
        raise ScheduleError(f"transpose of {total} elements needs 64-bit offsets; the printed kernels use 32-bit "
                            "element offsets", loc=op.loc)
    item = x.dtype.itemsize
    block = max(1, 32 // item)
    budget = int(target.ub_bytes * ub_fraction)
    # both queues double-buffered: 2 * (ta * tcPad + out) * item bytes
    if mode == "copy":
        tc = min(C, 8192 // item)            # up to 8 KB per row piece
        tcp = _round_up(tc, block)
        ta = max(1, min(A, MAX_ROWS, budget // (4 * tcp * item)))
    else:
        side = next((t for t in (128, 64, 32, 16, 8) if t % block == 0 and 4 * t * t * item <= budget), block)
        tc = min(C, side)
        tcp = _round_up(tc, block)
        # square tiles; a narrow C (fewer columns than a tile side) takes more rows instead
        ta = min(A, MAX_ROWS, side if C >= side else max(side, budget // (2 * item * (tcp + tc + block))))
        while ta > 1 and 2 * (ta * tcp + tc * _round_up(ta, block)) * item > budget:
            ta = max(1, ta - block)
    if 2 * (ta * tcp + (ta * tcp if mode == "copy" else tc * _round_up(ta, block))) * item > budget:
        raise ScheduleError(f"transpose: a tile of {ta} x {tc} elements needs more than the {budget} bytes of UB",
                            loc=op.loc)
    cores = "one core (no DataCopyPad: unaligned tails are scalar GM writes)" if not target.has_datacopypad \
        else "cores take contiguous ranges of tiles"
    if mode == "copy":
        note = (f"a permutation of whole rows: {A} rows of {C} elements (input row stride {sA}, output {oA}) per "
                f"outer block, tiles of {ta} x {tc}; {cores}")
    else:
        note = (f"2-D transposes of [{A}, {C}] blocks (input row stride {sA}, output row stride {oC}), tiles of "
                f"{ta} x {tc} transposed element by element in UB; {cores}")
    return TransposeSchedule(fn, op, target, mode, A, C, sA, oA, oC, outer, ta, tc,
                             [RowParam(0, fn.params[0].value.name, x.dtype, "full")], budget, note)


def _schedule_gather(fn: Function, op: Op, target: Target, ub_fraction: float) -> TransposeSchedule:
    """A lone slice with a step on the last axis: rows of strided columns (module doc)."""
    x = op.operands[0]
    shape = tuple(x.shape)
    if not all(isinstance(d, int) for d in shape):
        raise ScheduleError(f"a stepped slice of a tensor with symbolic sizes {list(shape)} is not printed as "
                            "Ascend C yet", loc=op.loc, hint="give the tensor fixed sizes, or run on the CPU executors")
    out = tuple(op.result.shape)
    starts, steps = op.attr("starts"), op.attr("steps")
    r = len(shape)
    xs = [1] * r
    for d in range(r - 2, -1, -1):
        xs[d] = xs[d + 1] * shape[d + 1]
    os_ = [1] * r
    for d in range(r - 2, -1, -1):
        os_[d] = os_[d + 1] * out[d + 1]
    in0 = sum(a * st for a, st in zip(starts, xs))
    C, cC = out[-1], steps[-1]
    axes = [d for d in range(r - 1) if out[d] != 1]
    a_ax = axes[-1] if axes else None
    A = out[a_ax] if a_ax is not None else 1
    sA = xs[a_ax] * steps[a_ax] if a_ax is not None else 0
    oA = os_[a_ax] if a_ax is not None else 0
    outer = tuple((out[d], xs[d] * steps[d], os_[d]) for d in axes[:-1])
    if len(outer) > MAX_OUTER:
        raise ScheduleError(f"a stepped slice over {len(outer) + 2} axes; the printed kernel decodes at most "
                            f"{MAX_OUTER + 2}", loc=op.loc, hint="this kernel still runs on the CPU executors")
    total = 1
    for d in shape:
        total *= d
    if total >= MAX_ELEMS:
        raise ScheduleError(f"a slice of {total} elements needs 64-bit offsets; the printed kernels use 32-bit "
                            "element offsets", loc=op.loc)
    item = x.dtype.itemsize
    block = max(1, 32 // item)
    budget = int(target.ub_bytes * ub_fraction)
    tc = max(1, min(C, (4096 // item) // cC))   # a span of at most ~4 KB per row
    span = _round_up((tc - 1) * cC + 1, block) if cC > 1 else 0   # copy mode: the output tile is the input's
    tcp = _round_up(tc, block)
    ta = max(1, min(A, MAX_ROWS, budget // (2 * item * (max(span, tcp) + tcp))))
    if 2 * ta * (max(span, tcp) + tcp) * item > budget:
        raise ScheduleError(f"slice: a tile of {ta} x {tc} elements needs more than the {budget} bytes of UB", loc=op.loc)
    cores = "one core (no DataCopyPad: unaligned tails are scalar GM writes)" if not target.has_datacopypad \
        else "cores take contiguous ranges of tiles"
    pick = (f"read as spans of {(tc - 1) * cC + 1} and picked in UB" if cC > 1 else
            "strided row copies (more boxes than a view kernel takes)")
    note = (f"a slice (step {cC} on the last axis): {A} rows of {C} columns (input row stride {sA}, output {oA}) "
            f"per outer block, tiles of {ta} rows x {tc} columns {pick}; {cores}")
    mode = "gather" if cC > 1 else "copy"   # step 1 on the last axis: whole runs, no pick in UB
    return TransposeSchedule(fn, op, target, mode, A, C, sA, oA, 1, outer, ta, tc,
                             [RowParam(0, fn.params[0].value.name, x.dtype, "full")], budget, note, in0, cC)


def compute_transpose_tiling(sched: TransposeSchedule, target: Target) -> TransposeTiling:
    tiles_a = -(-sched.A // sched.ta)
    tiles_c = -(-sched.C // sched.tc)
    n_outer = 1
    for size, _, _ in sched.outer:
        n_outer *= size
    total = n_outer * tiles_a * tiles_c
    if total == 0:
        per_core, block_dim = 0, 0
    else:
        moved = 2 * n_outer * sched.A * sched.C * sched.item * (1 if sched.mode != "gather" else sched.cC)
        want = max(1, min(target.vector_cores, -(-moved // MIN_CORE_BYTES), total))
        if not target.has_datacopypad:
            want = 1
        per_core = -(-total // want)
        block_dim = -(-total // per_core)
    outer = list(sched.outer) + [(1, 0, 0)] * (MAX_OUTER - len(sched.outer))
    words = [sched.A, sched.C, sched.sA, sched.oA, sched.oC, sched.ta, sched.tc, tiles_a, tiles_c, total,
             per_core, block_dim, len(sched.outer), sched.in0, sched.cC]
    for k in range(3):
        words += [o[k] for o in outer]
    return TransposeTiling(sched.ta, sched.tc, tiles_a, tiles_c, total, per_core, block_dim, tuple(words))


FIELDS = ("A", "C", "sA", "oA", "oC", "ta", "tc", "tilesA", "tilesC", "totalTiles", "tilesPerCore",
          "blockDim", "nOuter", "in0", "cC")


def transpose_tile_kernel(sched: TransposeSchedule) -> TileKernel:
    """The transpose kind as a TileKernel (module doc): Geometry decodes the tile's outer block,
    rows a0.. and columns c0..; CopyIn reads the tile with one strided DMA; Compute moves it
    into the output tile (a UB copy, a transpose or a pick of every cC-th element); CopyOut
    writes it with one strided DMA."""
    d = sched.op.result.dtype
    block = max(1, 32 // d.itemsize)
    mode = sched.mode
    x = sched.params[0].name
    fields = [Field(f) for f in FIELDS] + [Field(f, MAX_OUTER) for f in ("outerSize", "outerIn", "outerOut")]
    span = add(mul(("-", "nc", 1), "t.cC"), 1)
    members = [Member("tcPad", pad("t.tc", block)), Member("taPad", pad("t.ta", block))]
    if mode == "gather":
        members.append(Member("spanPad", pad(add(mul(("-", "t.tc", 1), "t.cC"), 1), block)))
    members += [Member(m) for m in ("inOff", "outOff", "a0", "c0", "na", "nc")]
    in_row = "spanPad" if mode == "gather" else "tcPad"
    queues = [Queue("q_x", "VECIN", 2, d, mul("t.ta", in_row)),
              Queue("q_y", "VECOUT", 2, d, mul("t.tc", "taPad") if mode == "transpose" else mul("t.ta", "tcPad"))]
    geometry = (
        Let("ic", ("%", "tile", "t.tilesC")),
        Var("rest", ("/", "tile", "t.tilesC")),
        Let("ia", ("%", "rest", "t.tilesA")),
        Set("rest", "t.tilesA", "/="),
        Set("inOff", 0), Set("outOff", 0),
        For("k", 0, "t.nOuter", (
            Let("i", ("%", "rest", ("[]", "t.outerSize", "k"))),
            Set("rest", ("[]", "t.outerSize", "k"), "/="),
            Set("inOff", mul("i", ("[]", "t.outerIn", "k")), "+="),
            Set("outOff", mul("i", ("[]", "t.outerOut", "k")), "+="),
        ), down=True),
        Set("a0", mul("ia", "t.ta")), Set("c0", mul("ic", "t.tc")),
        Set("na", ("min", "t.ta", ("-", "t.A", "a0"))), Set("nc", ("min", "t.tc", ("-", "t.C", "c0"))),
    )
    src = add("t.in0", "inOff", mul("a0", "t.sA"), mul("c0", "t.cC") if mode == "gather" else "c0")
    copy_in = (Alloc("xt", "q_x"),
               CopyIn("xt", x, src, "na", span if mode == "gather" else "nc", "t.sA", in_row),
               EnQue("q_x", "xt"))
    if mode == "transpose":
        work = (Barrier("the DMA's tile is read by scalar loads"),
                For("r", 0, "na", (For("c", 0, "nc", (
                    Move("yt", add(mul("c", "taPad"), "r"), "xt", add(mul("r", "tcPad"), "c")),)),)),
                Barrier("scalar stores land before the DMA out"))
    elif mode == "gather":
        work = (Barrier("the DMA's tile is read by scalar loads"),
                For("r", 0, "na", (For("c", 0, "nc", (
                    Move("yt", add(mul("r", "tcPad"), "c"), "xt", add(mul("r", "spanPad"), mul("c", "t.cC"))),)),)),
                Barrier("scalar stores land before the DMA out"))
    else:
        # only the rows' elements were written (DataCopyPad pads nothing it is not asked to):
        # whole 32-byte blocks by DMA, each row's tail element by element
        work = (Let("body", mul(("/", "nc", block), block)),
                If(("==", "body", "tcPad"), (UbCopy("yt", 0, "xt", 0, mul("na", "tcPad")),), (
                    If((">", "body", 0), (For("r", 0, "na", (
                        UbCopy("yt", mul("r", "tcPad"), "xt", mul("r", "tcPad"), "body"),)),)),
                    Barrier("the DMA's rows land before the scalar tails"),
                    For("r", 0, "na", (For("c", "body", "nc", (
                        Move("yt", add(mul("r", "tcPad"), "c"), "xt", add(mul("r", "tcPad"), "c")),)),)),
                    Barrier("scalar stores land before the DMA out"))))
    compute = (DeQue("xt", "q_x"), Alloc("yt", "q_y"), *work, EnQue("q_y", "yt"), Free("q_x", "xt"))
    y = output_names(sched.params, 1)[0]
    if mode == "transpose":
        store = CopyOut(y, add("outOff", mul("c0", "t.oC"), "a0"), "yt", "nc", "na", "t.oC", "taPad")
    else:
        store = CopyOut(y, add("outOff", mul("a0", "t.oA"), "c0"), "yt", "na", "nc", "t.oA", "tcPad")
    copy_out = (DeQue("yt", "q_y"), store, Free("q_y", "yt"))
    stages = [Stage("Geometry", "tile", geometry), Stage("CopyIn", None, copy_in),
              Stage("Compute", None, compute), Stage("CopyOut", None, copy_out)]
    gms = [Gm(x, sched.params[0].dtype, "in", 0), Gm(y, d, "out", 0)]
    words = compute_transpose_tiling(sched, sched.target).words
    return TileKernel(sched.fn.name, "transpose", sched.plan_note, fields, gms, queues, members, stages, words)
