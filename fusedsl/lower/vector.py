"""Vector-kernel scheduling: graph ops of one fused kernel -> a tile program.

The tile program is what every backend executes: the Ascend C printer prints it, the
LLVM backend compiles it, and the tiling functions (Python here, C++ printed) size it.

Iteration space.  A vector kernel evaluates every op in the shape S of its outputs.
Dimensions of S are merged when every input has the same broadcast pattern on them,
giving collapsed dims D0..Dk-1; C = Dk-1 is the row length, R = D0*...*Dk-2 the row
count.  Each input is classified by its pattern:
  full     every collapsed dim is present: contiguous rows
  row      only the last dim is present: one row, loaded once per core and replicated
           over the tile's rows (the `a[128]` of `a + b[192,128]`)
  scalar   no dim present (a one-element tensor): read once per core into a register
  general  anything else: rows are addressed one by one from the row index
Runtime scalars (`fs.scalar`) travel in the tiling struct.

Tiles.  A tile is `rows` consecutive rows of C elements (row stride Cpad, C rounded up
to 32 bytes of the narrowest dtype) or, when a row does not fit or R == 1, a chunk of
one row.  Tiles are split evenly over cores in contiguous ranges, so no two cores
touch the same output bytes.  Ops that depend only on `row`/`scalar` inputs and
constants are hoisted: computed once per core, then reused by every tile.

Tile ops are the primitives below; composites (sigmoid, gelu, ...) are expanded here,
with the target's API table deciding fallbacks (e.g. no Maxs on ascend910 -> Duplicate
+ Max).  Each op works on `count` elements of whole UB slots (`dst`, `srcs`), with an
optional scalar operand.
"""
from __future__ import annotations

from .. import dtypes as dt
from ..errors import ScheduleError
from ..ir.core import Function, Value
from ..ir.ops import COMPARISON, CONSTANT, get_opdef, has_trait
from ..ops.recipe import Recipe, prims_of
from ..targets import Target
# the tile IR's records, re-exported: backends import them from here
from ..tile.ir import (CMP_SLACK, TILE_APIS, Slot, Stmt, TileInput, TileOutput, Tiling,  # noqa: F401
                      VectorSchedule)
from ..tile.pipeline import run_tile_passes
from ..tile.int32_cast import HALF_EXACT as _HALF_EXACT, ROUND_F32 as _ROUND_F32, TOP as _TOP
from ..tile.int32_cast import TENSOR_FORM as _TENSOR_FORM
from ..tile.int32_cast import exact_int32_chain
from ..tile.prims import available as prim_available
from ..views import has_views
from ..views import ViewError, normalize, plan_views, queued_loads, view_roots
from ..views import VIEW_OPS

# the tiling pass and its limits (tile/tiling.py), re-exported: backends import them from here
from ..tile.tiling import (MAX_BLOCK_COUNT, MAX_ELEMS, MIN_CORE_BYTES, VIEW_BOX_HEAD, VIEW_LOAD_WORDS,  # noqa: F401
                          _max_tile_elems, _round_up,
                          compute_tiling, resolve_dims)


def compute_dtype(d: dt.DType) -> dt.DType:
    """The dtype a value is computed in on the vector unit (see module doc).

    bool is computed as float16 0/1: Compare/Select produce and consume it through bit masks."""
    if d == dt.bool_:
        return dt.float16
    if d == dt.bfloat16:
        return dt.float32
    if d in (dt.int8, dt.uint8):
        return dt.float16
    return d


# ---- schedule construction ------------------------------------------------------------
class _Builder:
    def __init__(self, fn: Function, target: Target):
        self.fn = fn
        self.target = target
        self.slots: dict[str, Slot] = {}
        self.stmts: list[Stmt] = []
        self.value_slot: dict[int, str] = {}
        self.value_scalar: dict[int, tuple] = {}
        self.hoistable: set[int] = set()
        self.counter = 0
        self.allow_hoist = True
        self.prefill: dict[str, object] = {}
        self.producer = {id(r): op for op in fn.ops for r in op.results}   # _int_bound reads it

    def new_slot(self, dtype: dt.DType, role: str, base: str = "t") -> str:
        name = f"{base}{self.counter}"
        self.counter += 1
        self.slots[name] = Slot(name, dtype, role)
        return name

    def emit(self, op, dst, srcs, dtype, loc, scalar=None, hoisted=False, **kw):
        self.stmts.append(Stmt(op, dst, tuple(srcs), dtype, scalar, hoisted=hoisted, loc=loc, **kw))


def schedule_vector_kernel(fn: Function, target: Target, ub_fraction: float = 1.0,
                           snapshots: list | None = None) -> VectorSchedule:
    """Build the tile program of a fused vector kernel (see module doc).

    Hoisting needs whole rows in UB, so it is used only when the row length is static
    and a tile of one row fits; otherwise every input is reloaded per tile.  A kernel that
    reads its inputs through slice/concatenate/take is a view kernel (`_schedule_views`).
    """
    if has_views(fn):
        return _schedule_views(fn, target, ub_fraction, snapshots)
    sched = _schedule(fn, target, ub_fraction, allow_hoist=True, snapshots=snapshots)
    if sched.hoisted or any(s.role == "inv" for s in sched.slots.values()):
        row = 1
        for d in sched.dims[-1]:
            size = sched.iter_shape[d]
            row = row * size if isinstance(size, int) and isinstance(row, int) else None
        if row is None or _round_up(row, sched.block_elems) > _max_tile_elems(sched):
            if snapshots is not None:
                snapshots.clear()   # the hoisting attempt is not the program that runs
            sched = _schedule(fn, target, ub_fraction, allow_hoist=False, snapshots=snapshots)
    return sched


def _schedule(fn: Function, target: Target, ub_fraction: float, allow_hoist: bool,
              snapshots: list | None = None) -> VectorSchedule:
    out_shape = fn.results[0].shape
    for v in fn.results:
        if v.shape != out_shape:
            raise ScheduleError(f"kernel {fn.name} has outputs of different shapes", loc=fn.loc)
    dims, bits_of = _collapse(fn, out_shape)
    b = _Builder(fn, target)
    b.allow_hoist = allow_hoist
    inputs = _classify_inputs(fn, b, bits_of)
    _lower_ops(fn, b, inputs)
    outputs = _bind_outputs(fn, b)
    sched = VectorSchedule(fn, out_shape, dims, inputs, outputs, b.slots, b.stmts)
    return _finish(sched, b, target, ub_fraction, snapshots)


def _schedule_views(fn: Function, target: Target, ub_fraction: float,
                    snapshots: list | None = None) -> VectorSchedule:
    """A view kernel (fusedsl/views.py): parameters are GM tensors ("gm"), read per tile by
    loads ("view"/"gather" inputs appended after them) whose addresses come from the box
    table; one-element parameters read directly stay "scalar"; nothing is hoisted."""
    try:
        norm = normalize(fn)
    except ViewError as exc:
        raise ScheduleError(f"kernel {fn.name}: {exc}", loc=fn.loc) from None
    S = tuple(norm.results[0].shape)
    for v in norm.results:
        if tuple(v.shape) != S:
            raise ScheduleError(f"kernel {fn.name} has outputs of different shapes", loc=fn.loc)
    b = _Builder(norm, target)
    b.allow_hoist = False
    inputs: list[TileInput] = []
    rank = max(1, len(S))
    roots = view_roots(norm)
    root_ids = {id(v) for v in roots}
    for i, p in enumerate(norm.params):
        v = p.value
        if p.kind == "scalar":
            var = f"s_{v.name}"
            inputs.append(TileInput(i, v.name, v.dtype, "runtime_scalar", (), None, var))
            b.value_scalar[id(v)] = ("var", var)
            continue
        n = 1
        for d in v.shape:
            n *= d
        if n == 1 and id(v) in root_ids:
            var = f"s_{v.name}"
            inputs.append(TileInput(i, v.name, v.dtype, "scalar", (False,) * rank, None, var))
            b.value_scalar[id(v)] = ("var", var)
        else:
            inputs.append(TileInput(i, v.name, v.dtype, "gm", (), None, None))
    loads = queued_loads(norm, roots)   # the one-element parameters above are scalars, the rest queues
    try:
        plan = plan_views(norm, loads)
    except ViewError as exc:
        raise ScheduleError(f"kernel {fn.name}: {exc}", loc=fn.loc) from None
    for j, ld in enumerate(plan.loads):
        if not ld.sources:   # every piece is empty: e.g. a transposed conv's padding crops all of its input
            raise ScheduleError(f"kernel {fn.name}: a view reads no element of any input (an empty slice); "
                                "the view kernels' box tables address input elements", loc=ld.loc or fn.loc,
                                hint="its result is empty: it needs no kernel (it still runs on the CPU executors)")
        slot = b.new_slot(ld.value.dtype, "in", base=f"in_v{j}_")
        kind = "gather" if ld.gather else "view"
        inputs.append(TileInput(ld.sources[0], f"v{j}", ld.value.dtype, kind, (True,) * rank, slot, None))
        b.value_slot[id(ld.value)] = slot
    _lower_ops(norm, b, inputs)
    outputs = _bind_outputs(norm, b)
    dims = (tuple(range(len(S) - 1)), (len(S) - 1,)) if len(S) > 1 else ((0,),) if S else ((),)
    sched = VectorSchedule(norm, S, dims, inputs, outputs, b.slots, b.stmts)
    sched.views = plan
    return _finish(sched, b, target, ub_fraction, snapshots)


def _finish(sched: VectorSchedule, b: _Builder, target: Target, ub_fraction: float,
            snapshots: list | None = None) -> VectorSchedule:
    """The lowered program through the tile passes (tile/pipeline.py), verified after each."""
    sched.prefill.update(b.prefill)   # constant tensors the lowering asked for
    sched.target = target
    run_tile_passes(sched, target, ub_fraction, snapshots)
    return sched


def _collapse(fn: Function, shape):
    """Merge iteration dims with equal broadcast patterns across inputs (module doc)."""
    rank = len(shape)
    patterns = []
    for p in fn.params:
        if p.kind == "scalar":
            continue
        s = p.value.shape
        padded = (1,) * (rank - len(s)) + tuple(s)
        patterns.append(tuple(not (padded[d] == 1 and shape[d] != 1) for d in range(rank)))
    keep = [d for d in range(rank) if shape[d] != 1]
    groups: list[list[int]] = []
    for d in keep:
        if groups and all(pat[groups[-1][-1]] == pat[d] for pat in patterns):
            groups[-1].append(d)
        else:
            groups.append([d])
    if not groups:
        groups = [[]]
    dims = tuple(tuple(g) for g in groups)

    def bits_of(value_shape) -> tuple[bool, ...]:
        padded = (1,) * (rank - len(value_shape)) + tuple(value_shape)
        return tuple(bool(g) and all(not (padded[d] == 1 and shape[d] != 1) for d in g) for g in dims)

    return dims, bits_of


def _classify_inputs(fn: Function, b: _Builder, bits_of) -> list[TileInput]:
    inputs = []
    for i, p in enumerate(fn.params):
        v = p.value
        if p.kind == "scalar":
            var = f"s_{v.name}"
            inputs.append(TileInput(i, v.name, v.dtype, "runtime_scalar", (), None, var))
            b.value_scalar[id(v)] = ("var", var)
            b.hoistable.add(id(v))
            continue
        bits = bits_of(v.shape)
        if not any(bits):
            kind = "scalar"
        elif all(bits):
            kind = "full"
        elif bits[-1] and not any(bits[:-1]):
            kind = "row"
        else:
            kind = "general"
        if kind == "scalar":
            var = f"s_{v.name}"
            inputs.append(TileInput(i, v.name, v.dtype, kind, bits, None, var))
            b.value_scalar[id(v)] = ("var", var)
            b.hoistable.add(id(v))
            continue
        if kind == "row" and not b.allow_hoist:
            kind = "general"
        role = "inv" if kind == "row" else "in"
        slot = b.new_slot(v.dtype, role, base=f"in_{v.name}_")
        inputs.append(TileInput(i, v.name, v.dtype, kind, bits, slot, None))
        if kind == "row":
            b.hoistable.add(id(v))
        b.value_slot[id(v)] = slot
    return inputs


def _is_hoisted(b: _Builder, operands) -> bool:
    return all(id(v) in b.hoistable for v in operands)


def _to_compute(b: _Builder, v: Value, loc, hoisted) -> str:
    """The slot holding v in its compute dtype (casting from its storage dtype if needed)."""
    slot = b.value_slot[id(v)]
    want = compute_dtype(v.dtype)
    if b.slots[slot].dtype == want:
        return slot
    # one cached cast for hoisted users (once per core) and one for per-tile users; a
    # per-tile user may read the hoisted cast, but never the other way round
    hoisted_key, body_key = (id(v), "compute", True), (id(v), "compute", False)
    if hoisted_key in b.value_slot:
        return b.value_slot[hoisted_key]
    if not hoisted and body_key in b.value_slot:
        return b.value_slot[body_key]
    dst = b.new_slot(want, "inv" if hoisted else "tmp")
    _emit_cast(b, dst, slot, b.slots[slot].dtype, want, loc, hoisted)
    b.value_slot[hoisted_key if hoisted else body_key] = dst
    return dst


def _cast_path(target: Target, src: dt.DType, dst: dt.DType):
    """Legal Cast steps src -> dst (with round modes); numpy semantics: trunc to ints, RNE to floats."""
    def mode(a: dt.DType, c: dt.DType):
        options = target.cast_modes.get((a.ascendc, c.ascendc), frozenset())
        prefs = ("CAST_TRUNC",) if c.is_int else ("CAST_RINT", "CAST_NONE")
        if not c.is_int and a.itemsize < c.itemsize or (a.is_int and c.is_float and a.itemsize <= 2):
            prefs = ("CAST_NONE", "CAST_RINT")
        if dst.is_int and a.is_float and c.is_float:
            # a float hop on the way to an integer truncates too (2.9999 must not become 3).
            # 310P/910A narrow float -> half only with NONE or ODD: round-to-odd never lands on
            # an integer when inexact, so the final TRUNC is exact for |x| < 1024 (half spacing
            # <= 0.5); in [1024, 2048) it can be 1 too far from zero, beyond that half rounds.
            prefs = ("CAST_TRUNC", "CAST_ODD") + prefs
        for m in prefs:
            if m in options:
                return m
        return None

    direct = mode(src, dst)
    if direct:
        return [(src, dst, direct)]
    for mid in (dt.float32, dt.float16, dt.int32):
        if mid in (src, dst):
            continue
        m1, m2 = mode(src, mid), mode(mid, dst)
        if m1 and m2:
            return [(src, mid, m1), (mid, dst, m2)]
    return None


def _emit_cast(b: _Builder, dst: str, src: str, src_dtype, dst_dtype, loc, hoisted, bound=None):
    """Cast slot src to dst (numpy's semantics: trunc to ints, RNE to floats).  `bound`: max |v|
    when the value is known to be an integer (`_int_bound`), else None."""
    path = _cast_path(b.target, src_dtype, dst_dtype)
    if path is None and dt.bfloat16 in (src_dtype, dst_dtype):
        raise ScheduleError(f"bfloat16 is not supported on {b.target.name}", loc=loc,
                            hint="use float16 or float32, or target ascend910b")
    if path is None and src_dtype == dt.int32 and dst_dtype in (dt.int8, dt.uint8):
        _wrapping_8bit_cast(b, dst, src, dst_dtype, loc, hoisted, bound)
        return
    if path is None:
        raise ScheduleError(f"{b.target.name} has no Cast from {src_dtype} to {dst_dtype}", loc=loc,
                            hint="cast through float32 in the kernel, or choose another target")
    if _through_half(path, src_dtype, dst_dtype) and (bound is None or bound > _HALF_EXACT):
        _exact_int32_cast(b, dst, src, path, loc, hoisted)
        return
    _emit_path(b, dst, src, path, loc, hoisted)


def _emit_path(b: _Builder, dst: str, src: str, path, loc, hoisted) -> None:
    cur = src
    for n, (a, c, m) in enumerate(path):
        out = dst if n == len(path) - 1 else b.new_slot(c, "inv" if hoisted else "tmp")
        b.emit("cast", out, [cur], c, loc, hoisted=hoisted, src_dtype=a, round_mode=m)
        cur = out


# ---- int32 -> int8 / uint8: no chip has the Cast (ASCENDC.md 2.4) -------------------------------
_F32_EXACT = 2 ** 24        # int32 values below it in magnitude are exact in float32


def _wrapping_8bit_cast(b: _Builder, dst: str, src: str, d: dt.DType, loc, hoisted, bound) -> None:
    """numpy's int32 -> int8 / uint8 cast, which wraps mod 256 (the 8-bit results of sign,
    bitwise ops and shifts come back from int32 this way).  v below 2**24 in magnitude is exact
    in float32: cast it, wrap it into the 8-bit range there (_wrap8) and narrow through half
    (exact for |w| <= 256): 1 + 10 + 2 instructions (3 for an int8 already in range).  A v of
    unknown size (`bound`: max |v| from _int_bound) is first cut to its low 16 bits, v & 0xFFFF
    (the same value mod 256), by And on int16 lanes (+ the Duplicate of the mask): ascend910b and
    ascend310p have it, ascend910 does not and refuses such a cast."""
    i32, f32 = dt.int32, dt.float32
    role = "inv" if hoisted else "tmp"
    if bound is None or bound >= _F32_EXACT:
        if not _supports(b, "and", i32):
            raise ScheduleError(
                f"{b.target.name} has no Cast from int32 to {d} and no bitwise And to wrap an int32 of any size "
                f"into {d}'s range (numpy wraps mod 256)", loc=loc,
                hint=f"keep the int32 values below 2**24 in a way fusedsl can see (casts of 8-bit inputs, "
                     f"constants, +, -, *, where), or wrap them yourself in float32 (x - 256 * floor(x / 256)), "
                     f"or target ascend910b / ascend310p")
        low = b.new_slot(i32, role)
        b.emit("and", low, [src, _dup(b, ("imm", 0xFFFF), i32, loc, hoisted)], i32, loc, hoisted=hoisted)
        src = low
    f = b.new_slot(f32, role)
    _emit_path(b, f, src, _cast_path(b.target, i32, f32), loc, hoisted)
    in_range = d == dt.int8 and bound is not None and bound <= 127   # sign's -1 / 0 / 1: nothing to wrap
    _emit_path(b, dst, f if in_range else _wrap8(b, f, d, loc, hoisted), _cast_path(b.target, f32, d), loc, hoisted)


# ---- float32 -> int32 where the chip has no such Cast (310P, 910A) ---------------------------
# Their Cast goes float32 -> half -> int32: exact for integers up to 2048 (_HALF_EXACT) and, the
# half step rounding to odd, for any value below 1024 in magnitude (round-to-odd never lands on an
# integer when inexact, and half's spacing there is <= 0.5); beyond, half rounds and saturates
# (5000.7 -> 5004, 1e6 -> 65504).  _exact_int32_cast casts only such values.


def _through_half(path, src_dtype, dst_dtype) -> bool:
    """Whether a float32 -> int32 Cast path detours through half (exact to 2048 only)."""
    return (src_dtype == dt.float32 and dst_dtype == dt.int32 and len(path) == 2
            and path[0][1] == dt.float16)


def _int_bound(b: _Builder, v: Value, depth: int = 0):
    """max |v| when every element of v is an integer, known from the ops that made it inside this
    kernel (constants, casts of bool / int8 / uint8, where, add / sub / mul / neg / abs and
    broadcasts of such values), else None.  A float32 -> int32 cast of a value bounded by 2048
    (the 0 / 1 flags composites build with where; a composite's own bound travels on the cast,
    ops/composite.small_int32) keeps the two-Cast path through half."""
    if id(v) in b.value_scalar and b.value_scalar[id(v)][0] == "imm":
        x = b.value_scalar[id(v)][1]
        return abs(x) if isinstance(x, (bool, int)) or float(x).is_integer() else None
    op = b.producer.get(id(v))
    if op is None or depth > 32:
        return None   # a kernel input or a deep chain: unknown
    if op.name == "cast":
        small = {dt.bool_: 1, dt.int8: 128, dt.uint8: 255}.get(op.operands[0].dtype)
        if small is not None or not op.operands[0].dtype.is_float:
            return small
        return _int_bound(b, op.operands[0], depth + 1)   # a float widening keeps the value
    if op.name in ("where", "add", "sub", "mul", "neg", "abs", "broadcast_to", "reshape"):
        args = op.operands[1:] if op.name == "where" else op.operands
        bounds = [_int_bound(b, a, depth + 1) for a in args]
        if any(x is None for x in bounds):
            return None
        if op.name in ("add", "sub"):
            return bounds[0] + bounds[1]
        return bounds[0] * bounds[1] if op.name == "mul" else max(bounds)
    if op.name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        # |v| <= B fits k + 1 bits signed (k = B.bit_length()); so does a bitwise op of such values
        bounds = [_int_bound(b, a, depth + 1) for a in op.operands]
        return None if any(x is None for x in bounds) else 1 << max(bounds).bit_length()
    return None


def _casts_float_to_int32(b: _Builder, op) -> bool:
    """A cast of a float to int32 on a chip whose float32 -> int32 Cast goes through half: it may
    print _exact_int32_cast, whose NaN Select runs per tile."""
    if op.name != "cast" or op.result.dtype != dt.int32 or not op.operands[0].dtype.is_float:
        return False
    path = _cast_path(b.target, dt.float32, dt.int32)
    return path is not None and _through_half(path, dt.float32, dt.int32)


def _nan_to_int_min(b: _Builder, src: str, loc, hoisted) -> str:
    """src with NaN replaced by -2**31 (x == x ? x : -2**31; one Compare + Select), so that
    _exact_int32_cast gives numpy's INT32_MIN for NaN on every executor: the pieces of a NaN
    would each be cast on their own, to 0 by the chip's Cast and to INT32_MIN by the x86 one."""
    if hoisted:
        # Compare / Select run per tile (their scratch and the lanes read past the count): a
        # cast of a float is never hoisted (_lower_ops); a hoisted one is of an int32 op computed
        # in float32 from int32 operands, which holds no NaN
        return src
    f32 = dt.float32
    x = _readable_tmp(b, src, f32, loc)
    out = b.new_slot(f32, "tmp")
    b.emit("select", out, [x, x, x, _scratch_const(b, f32, -_TOP)], f32, loc, cmp_mode="EQ", aux=(_mask_slot(b),))
    return out


def _exact_int32_cast(b: _Builder, dst: str, src: str, path, loc, hoisted) -> None:
    """numpy's float32 -> int32 (trunc toward zero) from casts of values below 1024 only: the chain
    of tile/int32_cast.py (why it is exact there), emitted as slots and stmts; the fusion cost
    model prices the same chain.  28 vector instructions (910A: 34) instead of 2, and the
    Compare's slack on every buffer."""
    if path[0][2] not in ("CAST_TRUNC", "CAST_ODD"):
        raise ScheduleError(f"{b.target.name}: float32 -> half rounds with {path[0][2]}, which can carry a "
                            "fraction to the next integer", loc=loc, hint="cast through another dtype")
    exact_int32_chain(_ChainEmitter(b, dst, path, loc, hoisted), src)


class _ChainEmitter:
    """tile/int32_cast.exact_int32_chain's instructions as slots and stmts of builder b."""

    def __init__(self, b: _Builder, dst: str, path, loc, hoisted):
        self.b, self.dst, self.path, self.loc, self.hoisted = b, dst, path, loc, hoisted
        self.role = "inv" if hoisted else "tmp"

    def step(self, prim, srcs, scalar=None, dtype=dt.float32):
        b, loc, hoisted = self.b, self.loc, self.hoisted
        out = b.new_slot(dtype, self.role)
        if scalar is not None and not _supports(b, prim, dtype):   # 910A: no Maxs / Mins, no int32 Muls
            b.emit(_TENSOR_FORM[prim], out, [*srcs, _dup(b, ("imm", scalar), dtype, loc, hoisted)], dtype, loc,
                   hoisted=hoisted)
        else:
            b.emit(prim, out, srcs, dtype, loc, scalar=None if scalar is None else ("imm", scalar), hoisted=hoisted)
        return out

    def nan_to_int_min(self, x):
        return _nan_to_int_min(self.b, x, self.loc, self.hoisted)

    def cast(self, x):
        out = self.b.new_slot(dt.int32, self.role)
        _emit_path(self.b, out, x, self.path, self.loc, self.hoisted)
        return out

    def finish(self, prim, srcs, dtype):
        self.b.emit(prim, self.dst, srcs, dtype, self.loc, hoisted=self.hoisted)


def _lower_ops(fn: Function, b: _Builder, inputs) -> None:
    for op in fn.ops:
        if op.name in VIEW_OPS:
            continue   # view kernels: views are addressing, their loads are already bound
        if has_trait(op, CONSTANT):
            b.value_scalar[id(op.result)] = ("imm", op.attr("value"))
            b.hoistable.add(id(op.result))
            continue
        hoisted = _is_hoisted(b, op.operands) and bool(op.operands) and any(
            id(v) not in b.value_scalar for v in op.operands)  # pure-scalar ops are folded earlier
        if _is_mask_op(op) or _casts_float_to_int32(b, op):
            hoisted = False   # compare/select keep their scratch per tile (a float -> int32 cast may select)
        if hoisted:
            b.hoistable.add(id(op.result))
        _lower_one(b, op, hoisted)


def _operand(b: _Builder, v: Value, loc, hoisted):
    """('slot', name) or ('scalar', (kind, value)) for an op operand in compute dtype."""
    if id(v) in b.value_scalar:
        return ("scalar", b.value_scalar[id(v)])
    return ("slot", _to_compute(b, v, loc, hoisted))


def _dup(b: _Builder, scalar, dtype, loc, hoisted) -> str:
    slot = b.new_slot(dtype, "inv" if hoisted else "tmp")
    b.emit("dup", slot, [], dtype, loc, scalar=scalar, hoisted=hoisted)
    return slot


def _as_slot(b, operand, dtype, loc, hoisted) -> str:
    kind, x = operand
    return x if kind == "slot" else _dup(b, x, dtype, loc, hoisted)


def _supports(b: _Builder, tile_op: str, dtype: dt.DType) -> bool:
    return prim_available(b.target, tile_op, dtype.ascendc)


def _lower_one(b: _Builder, op, hoisted) -> None:
    loc = op.loc
    res = op.result
    cd = compute_dtype(res.dtype)
    if has_trait(op, COMPARISON) or (op.name == "cast" and res.dtype == dt.bool_):
        _lower_compare(b, op)
        return
    if op.name == "where":
        _lower_where(b, op)
        return
    if op.name == "broadcast_to":
        _alias_or_copy(b, op.operands[0], res, loc, hoisted)
        return
    if op.name == "cast":
        src = op.operands[0]
        if id(src) in b.value_scalar:
            if b.value_scalar[id(src)][0] != "var":
                raise ScheduleError("cast of a scalar inside a vector kernel should have been folded", loc=loc)
            # a one-element input read as a scalar (a kernel of one element: argmax over all axes)
            src_slot = _dup(b, b.value_scalar[id(src)], compute_dtype(src.dtype), loc, hoisted)
        else:
            src_slot = _to_compute(b, src, loc, hoisted)
        src_cd = b.slots[src_slot].dtype
        if res.dtype != cd:   # bf16/int8/uint8 results: one cast into their storage dtype
            narrow = b.new_slot(res.dtype, "inv" if hoisted else "tmp")
            _emit_cast(b, narrow, src_slot, src_cd, res.dtype, loc, hoisted, bound=_int_bound(b, src))
            b.value_slot[id(res)] = narrow
            return
        if src_cd == cd:
            b.value_slot[id(res)] = src_slot
            return
        dst = b.new_slot(cd, "inv" if hoisted else "tmp")
        bound = op.attr("bound")   # ops/composite.small_int32: the composite's own bound
        _emit_cast(b, dst, src_slot, src_cd, cd, loc, hoisted,
                   bound=bound if bound is not None else _int_bound(b, src))
        b.value_slot[id(res)] = dst
        return
    if cd.is_float is False and op.name in ("div",):
        raise ScheduleError("integer division reached the scheduler", loc=loc)
    opdef = get_opdef(op.name)
    if opdef.recipe is None:
        raise ScheduleError(f"{op.name} is not supported in vector kernels yet", loc=loc)
    operands = [_operand(b, v, loc, hoisted) for v in op.operands]
    work = _working_dtype(b, op, opdef, cd, operands)
    wraps = res.dtype in (dt.int8, dt.uint8) and op.name in WRAP8_OPS
    if wraps:
        # an 8-bit add / sub / mul / neg / abs is computed exactly in float32 (a product can
        # reach 65025, beyond float16's exact integers) and wrapped there (_wrap8): the chip's
        # narrowing casts saturate where numpy wraps
        work = dt.float32
    if work != cd:
        operands = [_recast(b, o, cd, work, loc, hoisted) for o in operands]
    dst = b.new_slot(work, "inv" if hoisted else "tmp")
    opdef.recipe(_Recipe(b, op, work, loc, hoisted), dst, operands)
    if wraps:
        dst = _wrap8(b, dst, res.dtype, loc, hoisted)
    if work != cd and res.dtype in (dt.int8, dt.uint8):
        narrow = b.new_slot(res.dtype, "inv" if hoisted else "tmp")
        _emit_cast(b, narrow, dst, work, res.dtype, loc, hoisted)
        b.value_slot[id(res)] = narrow
        return
    if work != cd:
        final = b.new_slot(cd, "inv" if hoisted else "tmp")
        _emit_cast(b, final, dst, work, cd, loc, hoisted)
        dst = final
    _store(b, res, dst, loc, hoisted)


# 8-bit integer ops whose exact result can leave the dtype's range: numpy wraps it (mod 256)
WRAP8_OPS = frozenset({"add", "sub", "mul", "square", "neg", "abs"})


def _wrap8(b: _Builder, v: str, d: dt.DType, loc, hoisted) -> str:
    """The exact integer V (|V| <= 65025) in the float32 slot v wrapped into int8's [-128, 127]
    or uint8's [0, 255] as numpy wraps, so the narrowing cast that follows is exact on every
    executor (the chip's casts saturate, the CPU's wrap).  W = V - 256 rint(V / 256) lies in
    [-128, 128] (V / 256 is exact; rint by adding and subtracting 1.5 * 2**23); then int8 maps
    128 to -128 (W - 256 [W >= 128]) and uint8 adds 256 to a negative W (W + 256 [W < 0]), each
    indicator an Adds / Maxs / Mins clamp of the integer W to 0 or 1.  Every value is an
    integer or a multiple of 1/256 below 2**17: exact in float32.  Plain vector APIs only, so
    no target lacks it; the cube epilogue's wraps (printer_cube) follow the same arithmetic."""
    f32 = dt.float32

    def step(prim, srcs, scalar=None):
        out = b.new_slot(f32, "inv" if hoisted else "tmp")
        if scalar is not None and not _supports(b, prim, f32):   # no Maxs on ascend910: Max of a constant
            b.emit(_TENSOR_FORM[prim], out, [*srcs, _scratch_const(b, f32, scalar)], f32, loc, hoisted=hoisted)
        else:
            b.emit(prim, out, srcs, f32, loc, scalar=None if scalar is None else ("imm", scalar), hoisted=hoisted)
        return out

    t = step("muls", [v], 1 / 256)
    t = step("adds", [t], _ROUND_F32)
    t = step("adds", [t], -_ROUND_F32)
    w = step("add", [v, step("muls", [t], -256.0)])
    if d == dt.int8:
        t = step("adds", [w], -127.0)      # >= 1 only at W = 128
        sign = -256.0
    else:
        t = step("muls", [w], -1.0)        # >= 1 where W < 0
        sign = 256.0
    t = step("mins", [step("maxs", [t], 0.0)], 1.0)
    return step("add", [w, step("muls", [t], sign)])


def _store(b: _Builder, res: Value, slot: str, loc, hoisted) -> None:
    """Bind an op's result.  Narrow storage dtypes (bfloat16, int8, uint8) are computed in a
    wider dtype and rounded here, once per op, as every executor does (dtypes.py rule)."""
    cd = compute_dtype(res.dtype)
    if res.dtype in (cd, dt.bool_):
        b.value_slot[id(res)] = slot
        return
    narrow = b.new_slot(res.dtype, "inv" if hoisted else "tmp")
    _emit_cast(b, narrow, slot, cd, res.dtype, loc, hoisted)
    b.value_slot[id(res)] = narrow


def _is_mask_op(op) -> bool:
    return has_trait(op, COMPARISON) or op.name == "where" or (op.name == "cast" and op.result.dtype == dt.bool_)


_FLIP = {"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE", "EQ": "EQ", "NE": "NE"}
_CMP_MODE = {"lt": "LT", "le": "LE", "gt": "GT", "ge": "GE", "eq": "EQ", "ne": "NE"}


def _mask_slot(b: _Builder) -> str:
    """The Compare / Select bit mask: written and read inside one cmp or select statement, so
    every compare of the kernel shares one buffer (arcsin's 29 compares took 29 buffers)."""
    key = ("mask",)
    if key not in b.value_slot:
        b.value_slot[key] = b.new_slot(dt.uint8, "scratch", base="mask")
    return b.value_slot[key]


def _scratch_const(b: _Builder, dtype: dt.DType, value) -> str:
    """A scratch tensor holding `value` in every lane, filled once per core."""
    key = ("const", dtype.name, value)
    if key not in b.value_slot:
        name = b.new_slot(dtype, "scratch", base="k")
        b.prefill[name] = value
        b.value_slot[key] = name
    return b.value_slot[key]


def _readable_tmp(b: _Builder, slot: str, dtype, loc) -> str:
    """Compare reads past the count: its tensor operands must live in pre-filled temporaries."""
    if b.slots[slot].role == "tmp":
        return slot
    t = b.new_slot(dtype, "tmp")
    b.emit("copy", t, [slot], dtype, loc)
    return t


def _cmp_work_dtype(b: _Builder, cd: dt.DType, mode: str, loc) -> dt.DType:
    if cd == dt.int32 and mode != "EQ":
        cd = dt.float32   # Compare on int32 has only EQ; float32 is exact for |x| < 2**24
    if b.target.supports("Compare", cd.ascendc):
        return cd
    if b.target.supports("Compare", "float"):
        return dt.float32
    raise ScheduleError(f"comparisons are not available on {b.target.name}", loc=loc)


def _lower_compare(b: _Builder, op) -> None:
    loc = op.loc
    if op.name == "cast":
        operands = [op.operands[0], None]
        mode = "NE"
    else:
        operands = list(op.operands)
        mode = _CMP_MODE[op.name]
    cd = compute_dtype(operands[0].dtype)
    work = _cmp_work_dtype(b, cd, mode, loc)
    ops = [("scalar", ("imm", 0)) if v is None else _operand(b, v, loc, False) for v in operands]
    if ops[0][0] == "scalar" and ops[1][0] == "slot":
        ops.reverse()
        mode = _FLIP[mode]
    ops = [_recast(b, o, cd, work, loc, False) if work != cd else o for o in ops]
    if ops[0][0] == "scalar":
        ops[0] = ("slot", _dup(b, ops[0][1], work, loc, False))
    a = _readable_tmp(b, ops[0][1], work, loc)
    dst = b.new_slot(dt.float16, "tmp")
    ones = _scratch_const(b, dt.float16, 1.0)
    mask = _mask_slot(b)
    if ops[1][0] == "scalar" and b.target.supports("Compares", work.ascendc):
        b.emit("cmp", dst, [a], work, loc, scalar=ops[1][1], cmp_mode=mode, aux=(mask, ones))
    else:
        if ops[1][0] == "slot":
            other = ops[1][1]
        elif ops[1][1][0] == "imm":
            other = _scratch_const(b, work, ops[1][1][1])
        else:   # a runtime scalar without Compares: broadcast it into a temporary
            other = _dup(b, ops[1][1], work, loc, False)
        other = _readable_tmp(b, other, work, loc) if b.slots[other].role != "scratch" else other
        b.emit("cmp", dst, [a, other], work, loc, cmp_mode=mode, aux=(mask, ones))
    b.value_slot[id(op.result)] = dst


def _lower_where(b: _Builder, op) -> None:
    loc = op.loc
    cond, x, y = op.operands
    cd = compute_dtype(op.result.dtype)
    work = cd if cd in (dt.float16, dt.float32, dt.int32) else dt.float32
    c = _operand(b, cond, loc, False)
    if c[0] == "scalar":
        c = ("slot", _dup(b, c[1], dt.float16, loc, False))
    c_slot = _readable_tmp(b, c[1], dt.float16, loc)
    srcs = []
    for v in (x, y):
        o = _operand(b, v, loc, False)
        if work != cd:
            o = _recast(b, o, cd, work, loc, False)
        srcs.append(_as_slot(b, o, work, loc, False))
    dst = b.new_slot(work, "tmp")
    zeros = None if b.target.supports("Compares", "half") else _scratch_const(b, dt.float16, 0.0)
    aux = (_mask_slot(b),) + ((zeros,) if zeros else ())
    b.emit("select", dst, [c_slot] + srcs, work, loc, aux=aux)
    if work != cd:
        final = b.new_slot(cd, "tmp")
        _emit_cast(b, final, dst, work, cd, loc, False)
        dst = final
    _store(b, op.result, dst, loc, False)


def _working_dtype(b: _Builder, op, opdef, cd: dt.DType, operands) -> dt.DType:
    """cd, or float32 when the target lacks a primitive the op's recipe needs in cd."""
    if opdef.half_in_f32 and cd == dt.float16:
        # composites expand to several instructions: run them in float32 so the result
        # rounds to half once, like every other op (dtypes.py rule)
        cd = dt.float32

    def available(work):
        used = prims_of(opdef, op, work, operands, lambda p, d: _supports(b, p, d), b.target.cast_supported)
        return all(_supports(b, p, work) for p in used)

    if available(cd):
        return cd
    if available(dt.float32):
        return dt.float32
    raise ScheduleError(f"{op.name} on {cd} is not available on {b.target.name}", loc=op.loc,
                        hint="the chip has no vector instruction for it in this dtype (docs/OPS.md lists what prints "
                             "where); the kernel still runs on the CPU executors (kernel(*arrays)), or choose "
                             "another target")


def _recast(b, operand, cd, work, loc, hoisted):
    kind, x = operand
    if kind == "scalar":
        return operand
    dst = b.new_slot(work, "inv" if hoisted else "tmp")
    _emit_cast(b, dst, x, cd, work, loc, hoisted)
    return ("slot", dst)


def _alias_or_copy(b, src, res, loc, hoisted):
    if id(src) in b.value_scalar:
        b.value_scalar[id(res)] = b.value_scalar[id(src)]
        return
    b.value_slot[id(res)] = _to_compute(b, src, loc, hoisted)
    if src.dtype != res.dtype:
        raise ScheduleError("broadcast_to changed dtype", loc=loc)


class _Recipe(Recipe):
    """The scheduler's side of an op recipe (ops/recipe.py): stmts into the kernel's builder."""

    def __init__(self, b: _Builder, op, work, loc, hoisted):
        super().__init__(op, work, loc, hoisted)
        self.b = b

    def __call__(self, prim, dst, srcs, scalar=None):
        self.b.emit(prim, dst, srcs, self.work, self.loc, scalar=scalar, hoisted=self.hoisted)

    def supports(self, prim, dtype=None):
        return _supports(self.b, prim, dtype or self.work)

    def cast_supported(self, src, dst, mode):
        return self.b.target.cast_supported(src, dst, mode)

    def tmp(self):
        return self.b.new_slot(self.work, "inv" if self.hoisted else "tmp")

    def dup(self, scalar):
        return _dup(self.b, scalar, self.work, self.loc, self.hoisted)


def _bind_outputs(fn: Function, b: _Builder) -> list[TileOutput]:
    """Make every output's final stmt write its VECOUT slot (casting to the GM dtype)."""
    outputs = []
    for i, v in enumerate(fn.results):
        out_slot = b.new_slot(v.dtype, "out", base=f"out{i}_")
        if id(v) in b.value_scalar:
            wide_dtype = compute_dtype(v.dtype)
            if wide_dtype == v.dtype:
                b.emit("dup", out_slot, [], v.dtype, fn.loc, scalar=b.value_scalar[id(v)])
            else:
                # narrow dtypes (bfloat16, int8, bool) have no Duplicate of their own: fill the
                # compute dtype (the constant is already a value of v's dtype) and cast it once
                wide = b.new_slot(wide_dtype, "tmp")
                b.emit("dup", wide, [], wide_dtype, fn.loc, scalar=b.value_scalar[id(v)])
                _emit_cast(b, out_slot, wide, wide_dtype, v.dtype, fn.loc, False)
        else:
            src = b.value_slot[id(v)]
            src_dtype = b.slots[src].dtype
            producer = _last_writer(b, src)
            if (src_dtype == v.dtype and producer is not None and not b.stmts[producer].hoisted
                    and _only_reader_after(b, src, producer) and b.slots[src].role == "tmp"):
                _rename_slot(b, src, out_slot, producer)   # compute straight into the output buffer
            elif src_dtype == v.dtype and compute_dtype(v.dtype) != v.dtype:
                # narrow dtypes have no vector arithmetic to copy with: widen and narrow again
                wide = b.new_slot(compute_dtype(v.dtype), "tmp")
                _emit_cast(b, wide, src, v.dtype, compute_dtype(v.dtype), fn.loc, False)
                _emit_cast(b, out_slot, wide, compute_dtype(v.dtype), v.dtype, fn.loc, False)
            elif src_dtype == v.dtype:
                b.emit("copy", out_slot, [src], v.dtype, fn.loc)
            else:
                _emit_cast(b, out_slot, src, src_dtype, v.dtype, fn.loc, False)
        outputs.append(TileOutput(i, f"y{i}", v.dtype, out_slot))
    return outputs


def _last_writer(b, slot):
    for i in range(len(b.stmts) - 1, -1, -1):
        if b.stmts[i].dst == slot:
            return i
    return None


def _only_reader_after(b, slot, producer) -> bool:
    # the value's slot must not be another output's source already renamed
    return not any(slot in s.srcs or s.dst == slot for s in b.stmts[producer + 1:])


def _rename_slot(b, old, new, upto):
    """Let every stmt that writes/reads `old` use `new` instead (a tmp becomes the output)."""
    for i, s in enumerate(b.stmts):
        if s.dst == old or old in s.srcs:
            b.stmts[i] = Stmt(s.op, new if s.dst == old else s.dst,
                              tuple(new if x == old else x for x in s.srcs), s.dtype, s.scalar,
                              s.src_dtype, s.round_mode, s.hoisted, s.loc, s.cmp_mode, s.aux)
    del b.slots[old]
    b.value_slot = {k: (new if v == old else v) for k, v in b.value_slot.items()}


# ---- tiling ---------------------------------------------------------------------------------
