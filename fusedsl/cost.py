"""Modelled NPU time: a MODEL of how long kernels would take on the chip, not a measurement.

Nobody here has an NPU, so fusion decisions and `k.report()` use this analytic model.  Its
form and coefficients follow the tiling cost model of CANN's AutoFuse (the "ATT" model):
- a vector API call on n elements costs  k*n + b  cycles (k, b per API and dtype);
- a GM->UB copy (MTE2) of B bytes costs  B / (a + b/blockDim) + h  cycles per core, and a
  UB->GM copy (MTE3) the same with its own a, b, h;
- each pipe has a start-up ("head") cost per kernel; the kernel has a fixed head cost.
The coefficients below are the published figures of AutoFuse's v1 performance table,
measured on Atlas A2 (mirror-cann/graph-autofusion:
autofuse/att/gen_model_info/api_perf_register/v1/perf_param_v1.cpp; the load/store formula
is in att's api_perf_register sources).  They are cited per line; the code is fusedsl's own.

fusedsl adds what that table leaves out, each marked as an assumption:
- a per-kernel launch overhead (host dispatch and device start), LAUNCH_US;
- cube throughput from the target table (16x16x16 MACs per cycle per AI core for 16-bit
  inputs; float32 at a quarter of that rate);
- double buffering overlaps the three pipes, so the steady state costs the slowest pipe per
  tile, plus one tile of the others (fill and drain).
Calibration (tests/test_cost.py): the seed kernel abs(a[128]) + b[192,128] -> relu in
float32 is published as 15.56 us unfused (3 kernels) and 6.04 us fused on an Atlas 800I A2;
this model gives both within 30 %.

The model works on graph ops (a fused kernel's function), so it does not depend on how the
schedule is represented; a kernel's real tiling (block_dim, tile size) is used when known.
"""
from __future__ import annotations

import math

from .dtypes import bfloat16, bool_, float16, float32, int32
from .ir.core import Function, Op, Param, TensorType, Value
from .ir.ops import attention_operands, attention_views
from .ir.ops import (BINARY, BROADCAST, COMPARISON, CONSTANT, CUBE, ELEMENTWISE, HOST, REDUCTION, REGISTRY, SHAPE,
                     has_trait)
from .ops.recipe import prims_of
from .tile.int32_cast import HALF_EXACT, TENSOR_FORM, exact_int32_chain
from .tile.prims import PRIMS
from .tile.prims import available as prim_available
from .ir.shapes import num_elements
from .views import ViewError, has_views, normalize, plan_views, view_roots
from .record import record

# ---- published coefficients (AutoFuse ATT perf table v1, Atlas A2) --------------------------
# Vector APIs: cycles = k * n + b for one call on n elements.  {api: {dtype: (k, b)}}
VECTOR_API: dict[str, dict[str, tuple[float, float]]] = {
    "Abs": {"float16": (0.0077, 20.0153), "float32": (0.0147, 20.0592)},
    "Adds": {"float16": (0.0071, 22.0938), "float32": (0.0141, 22.0936)},
    "Add": {"float16": (0.0103, 22.2173), "float32": (0.0206, 23.2225)},
    "Sub": {"float16": (0.0107, 22.1226), "float32": (0.0213, 22.1254)},
    "Mul": {"float16": (0.0110, 23.1243), "float32": (0.0206, 23.2291)},
    "Muls": {"float16": (0.0071, 23.1006), "float32": (0.0142, 23.0966), "int32": (0.0180, 20.7457)},
    "Div": {"float16": (0.0460, 29.1233), "float32": (0.0454, 29.0892)},
    "Max": {"float16": (0.0111, 20.1200), "float32": (0.0215, 20.1333)},
    "Min": {"float16": (0.0111, 20.1104), "float32": (0.0215, 20.1271)},
    "Maxs": {"float16": (0.0071, 20.0912), "float32": (0.0141, 20.0887)},
    "Mins": {"float16": (0.0071, 20.0896), "float32": (0.0142, 20.0876)},
    "Exp": {"float16": (0.0311, 28.0144), "float32": (0.0307, 28.0376)},
    "Sqrt": {"float16": (0.0312, 29.0056), "float32": (0.0313, 28.9961)},
    "Rsqrt": {"float16": (0.0071, 21.0970), "float32": (0.0143, 21.0979)},
    "Reciprocal": {"float16": (0.0078, 21.0076), "float32": (0.0146, 21.0639)},
    "Relu": {"float16": (0.0077, 20.0173), "float32": (0.0154, 20.0189)},
    "Sigmoid": {"float16": (0.1011, 116.0436), "float32": (0.1256, 115.9747)},
    "Tanh": {"float16": (0.1976, 181.6919), "float32": (0.1570, 153.9298)},
    "Select": {"float16": (0.0118, 45.9656), "float32": (0.0229, 43.9906)},
    "Compare": {"float16": (0.0155, 21.0340), "float32": (0.0310, 21.0316)},   # CompareEQAligned
    "Duplicate": {"float16": (0.0078, 16.9993), "float32": (0.0156, 16.9965)},
    "Copy": {"float16": (0.0078, 13.0049), "float32": (0.0157, 12.9966)},
    "Brcb": {"float16": (0.0074, 13.0572), "float32": (0.0146, 13.0732)},
    "Gather": {"float16": (0.1873, 17.0248), "float32": (0.1875, 15.0000)},
    "WholeReduceSum": {"float16": (0.0547, 35.0021), "float32": (0.1094, 32.0029)},
    "WholeReduceMax": {"float16": (0.0547, 21.0027), "float32": (0.1094, 20.0051)},
    "WholeReduceMin": {"float16": (0.0547, 21.0056), "float32": (0.1094, 20.0068)},
}
# APIs the table lacks, costed as one it has (fusedsl's assumption): a bitwise And on 16-bit lanes
# like Add; CANN 9.1's ReduceRepeat* are the WholeReduce* calls under a new name
API_LIKE = {"And": "Add", "Or": "Add", "ReduceRepeatSum": "WholeReduceSum", "ReduceRepeatMax": "WholeReduceMax",
            "ReduceRepeatMin": "WholeReduceMin"}
# Cast: per (source, destination); same-width casts to and from float in the table.
CAST_API: dict[tuple[str, str], tuple[float, float]] = {
    ("float16", "float32"): (0.0147, 20.1204),
    ("float32", "float16"): (0.0087, 20.4393),
    ("float16", "uint8"): (0.0083, 19.9408),
    ("uint8", "float16"): (0.0102, 46.512),
}
DEFAULT_CAST = (0.0147, 20.1204)   # casts the table lacks cost like f16 -> f32 (assumption)

# DMA (LoadStoreFunc): cycles = bytes / (a + b / blockDim) + h per copy.
LOAD = (9.9074, 15.8960, 27.01)    # "Load": a, b, h
STORE = (9.96, 3.79, 12.09)        # "Store": a, b, h
# Pipe heads (cycles per kernel): MTE2 = blockDim * K + B, with (K, B) for a largest load
# below / at or above 25000 bytes; MTE3 and vector pipes a constant; plus the op head.
MTE2_HEAD_SMALL = (15.89, 882.09)
MTE2_HEAD_NORMAL = (32.72, 1575.03)
MTE2_HEAD_THRESHOLD = 25000
MTE3_HEAD = 497.36
VEC_HEAD = 37.37
OP_HEAD = 300.0

# ---- fusedsl's assumptions (not in the published table) ------------------------------------
# Host dispatch + device start per kernel launch.  Chosen (with the published seed figures:
# 3 small kernels 15.56 us, 1 fused 6.04 us) as the fixed cost no instruction accounts for.
LAUNCH_US = 3.0
# The narrowest DMA row a column kernel tiles with (lower/column.py): a row under 256 bytes wastes
# most of a burst, so tiles stay at least this wide (passes/split_reductions.SplitColumns plans by it)
DMA_MIN_ROW_BYTES = 256
MIN_CORE_BYTES = 16384          # cores of a kernel with no tiling yet: the 16 KiB-per-core rule (tile/tiling.py's baseline)
# A scalar access of UB (GetValue / SetValue, what a transpose tile kernel moves elements with): the
# scalar unit waits for the pipe that wrote the element and issues one load or store; no published
# figure, so a round number of cycles per access, on the vector pipe's account (tile/kernel_cost.py)
SCALAR_ACCESS_CYCLES = 4.0
UB_SHARE = 0.5                  # tiles of an unscheduled kernel use half of UB (double buffering)
FLOAT32_CUBE_RATE = 0.25        # float32 matmul runs at a quarter of the 16-bit cube rate
CUBE_BASE_M, CUBE_BASE_N = 128, 256   # output block one AI core computes at a time


@record
class KernelCost:
    """Modelled cost of one kernel launch (all figures modelled, not measured)."""

    name: str
    kind: str                  # "vector" | "reduce" | "cube" | "move"
    block_dim: int
    mte2_cycles: float
    vec_cycles: float          # vector pipe (or cube pipe for kind "cube")
    mte3_cycles: float
    head_cycles: float
    time_us: float             # total, launch overhead included
    gm_bytes: int

    @property
    def bound(self) -> str:
        pipes = {"MTE2 (GM->UB)": self.mte2_cycles, "compute": self.vec_cycles, "MTE3 (UB->GM)": self.mte3_cycles}
        return max(pipes, key=pipes.get)


def _dkey(dtype) -> str:
    """Coefficient column for a dtype: 16-bit floats use float16, everything else float32
    (int32 and 8-bit values run on 32-/16-bit lanes in the kernels fusedsl prints)."""
    if dtype.itemsize == 2:
        return "float16"
    if dtype.name == "int32":
        return "int32"
    return "float32"


def api_cycles(api: str, dtype, n: int) -> float:
    table = VECTOR_API[api]
    k, b = table.get(_dkey(dtype)) or table.get("float32") or next(iter(table.values()))
    return k * n + b


def column_tile_width(A: int, B: int, min_item: int, cores: int) -> int:
    """Outputs per tile of a column kernel ([A, K, B] -> [A, B], lower/column.py) before UB has
    its say: enough tiles for every core when the outputs allow it, at most 1024 outputs and at
    least DMA_MIN_ROW_BYTES of the narrowest dtype (passes/split_reductions plans by it too)."""
    least = max(32, DMA_MIN_ROW_BYTES // min_item)
    bn = min(max(32, -(-B // 32) * 32), 1024)   # (an empty B: one 32-wide tile that no core takes)
    while bn > least and A * -(-B // bn) < cores:
        bn = max(least, -(-(bn // 2) // 32) * 32)
    return bn


def vector_call_cycles(api: str, dtype, n: int, src_dtype=None) -> float:
    """One vector API call of the tile IR (tile/kernel.py `Vec` / `Dup` / `UbCopy`) on n elements of
    dtype; a Cast from src_dtype.  An API neither in the table nor in API_LIKE is a KeyError: a
    new API gets its cost here, not a silent guess."""
    if api == "Cast":
        if src_dtype == dtype:
            return 0.0
        k, b = CAST_API.get((src_dtype.name, dtype.name), DEFAULT_CAST)
        return k * n + b
    return api_cycles(API_LIKE.get(api, api), dtype, n)


def load_cycles(nbytes: float, block_dim: int) -> float:
    a, b, h = LOAD
    return nbytes / (a + b / block_dim) + h if nbytes > 0 else 0.0


def store_cycles(nbytes: float, block_dim: int) -> float:
    a, b, h = STORE
    return nbytes / (a + b / block_dim) + h if nbytes > 0 else 0.0


def heads(block_dim: int, largest_load: float) -> float:
    k, b = MTE2_HEAD_NORMAL if largest_load >= MTE2_HEAD_THRESHOLD else MTE2_HEAD_SMALL
    return block_dim * k + b + MTE3_HEAD + VEC_HEAD + OP_HEAD


_REDUCE_APIS = {"sum": "WholeReduceSum", "mean": "WholeReduceSum", "max": "WholeReduceMax",
                "min": "WholeReduceMin"}


def recipe_apis(opdef, op, dtype, scalar: bool) -> list[str]:
    """The vector APIs of the primitives an op's recipe emits (every primitive assumed present)."""
    kinds = [("scalar", ("imm", 1)) if scalar and i else ("slot", "x") for i in range(len(op.operands))]
    used = prims_of(opdef, op, dtype, kinds, lambda p, d: True)
    return [api for p in used for api in PRIMS[p].costs if api in VECTOR_API]


def _nelem(value, sizes) -> int:
    shape = tuple(sizes.get(d, 1) if isinstance(d, str) else d for d in value.shape)
    return num_elements(shape)


def _is_scalar_operand(v, producers) -> bool:
    p = producers.get(id(v))
    return v.shape == () or (p is not None and has_trait(p, CONSTANT) and num_elements(v.shape) == 1)


class _ChainCost:
    """tile/int32_cast.exact_int32_chain priced per vector call on n elements for `target`: the
    instructions the lowering prints for it (a scalar form the chip lacks is a Duplicate and the
    tensor form, as lower/vector.py's emitter picks it)."""

    def __init__(self, target, n: int):
        self.target, self.n, self.cycles = target, n, 0.0

    def step(self, prim, srcs, scalar=None, dtype=float32):
        if scalar is not None and not prim_available(self.target, prim, dtype.ascendc):
            self.cycles += api_cycles("Duplicate", dtype, self.n)
            prim = TENSOR_FORM[prim]
        self.cycles += sum(vector_call_cycles(api, dtype, self.n) for api in PRIMS[prim].costs)

    def nan_to_int_min(self, x):
        self.step("select", [x])   # a compare-select: one Compare, one Select

    def cast(self, x):
        self.cycles += vector_call_cycles("Cast", float16, self.n, float32)
        self.cycles += vector_call_cycles("Cast", int32, self.n, float16)

    def finish(self, prim, srcs, dtype):
        self.step(prim, srcs, None, dtype)


def _cast_cycles(op: Op, n: int, target) -> float:
    """A cast's vector cycles: one Cast, or on a chip whose float32 -> int32 Cast goes through half
    (ascend310p, ascend910) the exact chain the lowering prints for a float -> int32 (28 calls; a
    composite's cast of integers it bounds by 2048, attribute `bound`, keeps the two Casts)."""
    src, dst = op.operands[0].dtype, op.result.dtype
    if src == dst:
        return 0.0
    through_half = (target is not None and src in (float32, bfloat16) and dst == int32
                    and not target.cast_supported("float", "int32_t"))
    if through_half and (op.attr("bound") is None or op.attr("bound") > HALF_EXACT):
        chain = _ChainCost(target, n)
        exact_int32_chain(chain, None)
        return chain.cycles
    k, b = CAST_API.get((src.name, dst.name), DEFAULT_CAST)
    return k * n + b


def op_vector_cycles(op: Op, n: int, producers, target=None) -> float:
    """Vector-pipe cycles of one elementwise graph op on n elements (`target`: for the casts
    whose printed form depends on the chip; None prices them as one Cast)."""
    if op.name == "cast":
        return _cast_cycles(op, n, target)
    dtype = op.result.dtype if op.name != "where" else op.operands[1].dtype
    opdef = REGISTRY.get(op.name)
    if opdef is not None and has_trait(op, COMPARISON):
        return sum(api_cycles(a, op.operands[0].dtype, n) for a in opdef.cost or ("Compare",))
    if opdef is not None and opdef.recipe is not None:
        # the op's definition (fusedsl/ops/) states its API calls, or its recipe's primitives do
        scalar = any(_is_scalar_operand(v, producers) for v in op.operands)
        if opdef.cost is not None and has_trait(op, BINARY):
            tensor_api, scalar_api = opdef.cost
            return api_cycles(scalar_api if scalar else tensor_api, dtype, n)
        apis = opdef.cost if opdef.cost is not None else recipe_apis(opdef, op, dtype, scalar)
        return sum(api_cycles(a, dtype, n) for a in apis)
    if op.name == "where":
        return api_cycles("Select", dtype, n)
    if op.name == "broadcast_to":
        return 0.0   # broadcast happens when the operand is loaded
    return api_cycles("Copy", dtype, n)   # an op the table does not know: one pass over the data


# ---- kernels --------------------------------------------------------------------------------
@record
class Launch:
    """How a kernel launches, read from its own tiling (the one the printed host code computes):
    the report's table, plan line and model line all take their figures from this."""

    block_dim: int
    tile_rows: int
    tile_cols: int
    tiles_per_core: int

    @property
    def tile_elems(self) -> int:
        return max(1, self.tile_rows * self.tile_cols)


def launch_of(tiling) -> Launch | None:
    """The Launch of a vector Tiling, a RowTiling, a ColumnTiling or a CubeLaunch (None: none yet)."""
    if tiling is None:
        return None
    if isinstance(tiling, Launch):
        return tiling
    if hasattr(tiling, "tile_cols"):                  # vector / view kernels (tile/ir.py Tiling)
        rows, cols = tiling.tile_rows, tiling.tile_cols
    elif hasattr(tiling, "bn"):                       # column reductions: bn outputs per tile, kt rows per DMA
        rows, cols = tiling.kt, tiling.bn
    elif hasattr(tiling, "Cpad"):                     # row kernels: whole rows (multi-pass: chunks of Cpad)
        rows, cols = tiling.tile_rows, min(tiling.C, tiling.Cpad)
    else:                                             # cube kernels: one baseM x baseN tile of C
        rows, cols = tiling.tile_rows, tiling.C
    return Launch(max(0, tiling.block_dim), rows, cols, tiling.tiles_per_core)


def _cores_for(out_bytes: int, cores: int) -> int:
    return max(1, min(cores, math.ceil(out_bytes / MIN_CORE_BYTES)))


def vector_kernel_cost(fn: Function, target, sizes=None, tiling=None, name: str | None = None) -> KernelCost:
    """A kernel of elementwise/broadcast ops: inputs of the output's size stream in per tile,
    smaller (broadcast) inputs are loaded once per core, outputs stream out per tile."""
    sizes = sizes or {}
    producers = {id(r): op for op in fn.ops for r in op.results}
    n_out = max((_nelem(v, sizes) for v in fn.results), default=0)
    out_bytes = sum(_nelem(v, sizes) * v.dtype.itemsize for v in fn.results)
    if tiling is not None:
        block_dim = max(1, tiling.block_dim)
        tile = max(1, tiling.tile_rows * tiling.tile_cols)
        tiles = max(1, tiling.tiles_per_core)
    else:
        block_dim = _cores_for(out_bytes, target.vector_cores)
        per_core = math.ceil(n_out / block_dim) if n_out else 0
        bytes_per_elem = (sum(p.value.dtype.itemsize for p in fn.params if p.kind == "tensor")
                          + sum(v.dtype.itemsize for v in fn.results)
                          + sum(op.result.dtype.itemsize for op in fn.ops if not has_trait(op, CONSTANT)))
        cap = max(256, int(target.ub_bytes * UB_SHARE / max(1, 2 * bytes_per_elem)))
        tile = max(1, min(per_core, cap))
        tiles = max(1, math.ceil(per_core / tile)) if per_core else 1
    per_tile_load, once_load, largest = 0.0, 0.0, 0
    viewed = _view_loads(fn)
    if viewed is not None:   # slice / concatenate / take: only the elements the loads need move
        gm = out_bytes
        for n_in, item in viewed:
            largest = max(largest, n_in * item)
            per_tile_load += load_cycles(tile * item * n_in / max(1, n_out), block_dim)
            gm += n_in * item
        per_tile_store = sum(store_cycles(tile * v.dtype.itemsize, block_dim) for v in fn.results)
        per_tile_vec = sum(op_vector_cycles(op, tile, producers, target) for op in fn.ops
                           if has_trait(op, ELEMENTWISE) or has_trait(op, BROADCAST))
        cycles = _pipelined(tiles, per_tile_load, per_tile_vec, per_tile_store)
        return _finish(name or fn.name, "vector", block_dim, tiles * per_tile_load, tiles * per_tile_vec,
                       tiles * per_tile_store, heads(block_dim, largest), cycles, target, gm)
    gm = out_bytes
    for p in fn.params:
        if p.kind != "tensor":
            continue
        n_in, item = _nelem(p.value, sizes), p.value.dtype.itemsize
        largest = max(largest, n_in * item)
        gm += n_in * item
        if n_in >= n_out:
            per_tile_load += load_cycles(tile * item, block_dim)
        elif n_in <= tile:
            once_load += load_cycles(n_in * item, block_dim)   # a row or scalar: once per core
            gm += n_in * item * (block_dim - 1)                # ... so every core reads it
        else:
            per_tile_load += load_cycles(tile * item * n_in / max(1, n_out), block_dim)
    per_tile_store = sum(store_cycles(tile * v.dtype.itemsize, block_dim) for v in fn.results)
    per_tile_vec = sum(op_vector_cycles(op, tile, producers, target) for op in fn.ops
                       if has_trait(op, ELEMENTWISE) or has_trait(op, BROADCAST))
    cycles = _pipelined(tiles, per_tile_load, per_tile_vec, per_tile_store) + once_load
    head = heads(block_dim, largest)
    return _finish(name or fn.name, "vector", block_dim, tiles * per_tile_load + once_load, tiles * per_tile_vec,
                   tiles * per_tile_store, head, cycles, target, gm)


def _view_loads(fn: Function):
    """(elements read, itemsize) per GM read of a kernel with views (fusedsl/views.py), or None
    when it has none or they cannot be planned (then its parameters count whole)."""
    if not has_views(fn):
        return None
    try:
        norm = normalize(fn)
        plan = plan_views(norm, view_roots(norm))
    except (ViewError, KeyError, ValueError):
        return None
    out = []
    for j, load in enumerate(plan.loads):
        # a row broadcast over the box (row stride 0) is read once per tile: counted once
        n = sum((bx.rows if bx.srcs[j].rs or load.gather else 1) * (bx.cols if bx.srcs[j].cs else 1)
                for bx in plan.boxes)
        out.append((n, load.value.dtype.itemsize))
        if load.gather is not None:   # the indices, one per gathered row
            rows = sum(bx.rows for bx in plan.boxes)
            out.append((rows, norm.params[load.gather[0]].value.dtype.itemsize))
    return out


def _pipelined(tiles: int, load: float, vec: float, store: float) -> float:
    """Double-buffered pipes: the slowest stage per tile, plus one tile of the others."""
    slowest = max(load, vec, store)
    return tiles * slowest + (load + vec + store - slowest)


def _finish(name, kind, block_dim, mte2, vec, mte3, head, cycles, target, gm) -> KernelCost:
    time_us = (cycles + head) / target.clock_mhz + LAUNCH_US
    return KernelCost(name, kind, block_dim, mte2, vec, mte3, head, time_us, int(gm))


def reduce_kernel_cost(op: Op, target, sizes=None, name: str | None = None, launch: Launch | None = None) -> KernelCost:
    """A reduction: stream the input through UB, one WholeReduce per row segment.  With the
    kernel's `launch` (its RowTiling / ColumnTiling) its cores and tiles are the kernel's."""
    sizes = sizes or {}
    x = op.operands[0]
    n_in, n_out = _nelem(x, sizes), _nelem(op.result, sizes)
    item = x.dtype.itemsize
    row = max(1, n_in // max(1, n_out))
    if launch is not None and launch.block_dim:
        block_dim, tile, tiles = launch.block_dim, launch.tile_elems, max(1, launch.tiles_per_core)
    else:
        block_dim = _cores_for(n_in * item, target.vector_cores)
        per_core = math.ceil(n_in / block_dim)
        tile = max(row, min(per_core, int(target.ub_bytes * UB_SHARE / (2 * item))))
        tiles = max(1, math.ceil(per_core / tile))
    load = load_cycles(tile * item, block_dim)
    rows = max(1, tile // row)
    api = _REDUCE_APIS.get(op.name, "WholeReduceSum")
    vec = rows * api_cycles(api, x.dtype, row) + (api_cycles("Muls", x.dtype, rows) if op.name == "mean" else 0)
    store = store_cycles(rows * op.result.dtype.itemsize, block_dim)
    cycles = _pipelined(tiles, load, vec, store)
    gm = n_in * item + n_out * op.result.dtype.itemsize
    return _finish(name or op.name, "reduce", block_dim, tiles * load, tiles * vec, tiles * store,
                   heads(block_dim, n_in * item), cycles, target, gm)


def batch_conv_panel_bytes(op: Op, sizes=None) -> int:
    """Bytes of the im2col matrices of every image of a conv2d: N x C*R*S x P*Q elements."""
    x, w = op.operands
    n_img, _, p, q = op.result.shape
    _, c, r, s = w.shape
    dims = [(sizes or {}).get(d, 1) if isinstance(d, str) else d for d in (n_img, c, r, s, p, q)]
    return math.prod(dims) * x.dtype.itemsize


def cube_kernel_cost(op: Op, target, sizes=None, name: str | None = None, launch: Launch | None = None,
                     schedule=None) -> KernelCost:
    """matmul / conv2d (as im2col GEMM) on the AI cores: MACs at the cube rate, A and B read
    once per output block row/column, C written once.  With the kernel's schedule
    (lower.cube.CubeSchedule / lower.conv.ConvSchedule) and launch, the cores and the A/B
    re-reads are the kernel's own (`cube_schedule_reads`)."""
    if schedule is not None and getattr(schedule, "tiling_fields", None) is not None and launch is not None:
        return _scheduled_cube_cost(op, target, sizes or {}, name, launch, schedule)
    sizes = sizes or {}
    a, b = op.operands[0], op.operands[1]
    out = op.result
    item = a.dtype.itemsize
    if op.name == "conv2d":
        n_out = _nelem(out, sizes)
        cout = out.shape[1] if not isinstance(out.shape[1], str) else sizes.get(out.shape[1], 1)
        m, n = n_out // max(1, cout), cout
        k = _nelem(b, sizes) // max(1, cout)
        batch = 1
    else:
        shape = [sizes.get(d, 1) if isinstance(d, str) else d for d in out.shape]
        m, n = (shape[-2] if len(shape) >= 2 else 1), (shape[-1] if shape else 1)
        ka = a.shape[-2] if op.attr("transpose_a", False) else a.shape[-1]
        k = ka if not isinstance(ka, str) else sizes.get(ka, 1)
        batch = max(1, num_elements(tuple(shape[:-2])))
    blocks_m, blocks_n = math.ceil(m / CUBE_BASE_M), math.ceil(n / CUBE_BASE_N)
    block_dim = max(1, min(target.aic_cores, batch * blocks_m * blocks_n))
    rate = target.cube_macs_per_cycle * (FLOAT32_CUBE_RATE if item == 4 else 1.0)
    macs = batch * m * n * k
    cube = macs / block_dim / rate
    a_bytes, b_bytes = _nelem(a, sizes) * item, _nelem(b, sizes) * b.dtype.itemsize
    c_bytes = _nelem(out, sizes) * out.dtype.itemsize
    # a conv's im2col panel (C*R*S x P*Q per image) is written to GM and read back by the cube
    # (lower/conv.py says why it is built in GM), whether or not the epilogue is fused
    panel = batch_conv_panel_bytes(op, sizes) if op.name == "conv2d" else 0
    mte2 = load_cycles((a_bytes * blocks_n + b_bytes * blocks_m + panel) / block_dim, block_dim)
    mte3 = store_cycles((c_bytes + panel) / block_dim, block_dim)
    cycles = max(cube, mte2, mte3) + min(cube, mte2) * 0.1   # pipes overlap; a little fill
    gm = a_bytes + b_bytes + c_bytes + 2 * panel
    return _finish(name or op.name, "cube", block_dim, mte2, cube, mte3,
                   heads(block_dim, max(a_bytes, b_bytes)), cycles, target, gm)


def cube_schedule_reads(schedule) -> tuple[int, int, int, int]:
    """(A, B, other reads, other writes) GM bytes of a printed cube kernel besides its results,
    from its tiling: every core reads the
    rows of A and the columns of B of its singleCoreM x singleCoreN block of C (so A is read
    once per column of core blocks, B once per row of them); a [N] epilogue vector is read per
    C tile (its curN columns), an [M, 1] one per C tile (its curM rows), an [M, N] one once.
    A conv's A is the weights (every core, every image) and its B the im2col panel the cube
    reads back; the vector cores read x's rows and write the panel (whole chunks)."""
    t = schedule.tiling_fields
    conv = getattr(schedule, "conv", None)
    if conv is not None:
        g, it = conv, conv.itemsize
        used = t.used_core_num
        w_bytes = g.K * g.crs * schedule.mm.operands[1].dtype.itemsize
        # per core and image: its pixels' columns of the panel (padded to whole chunks), written
        # by the gather and read by the cube, and the rows of x those pixels need; as for a
        # matmul, every C tile reads its rows of A (the weights) and columns of B (the panel)
        a, written, read, rows = 0, 0, 0, 0
        tiles_m = -(-g.K // t.base_m)
        for i in range(used):
            n0 = i * t.single_core_n
            tail = min(t.single_core_n, g.pix - n0)
            a += g.images * w_bytes * -(-tail // t.base_n)
            read += g.crs * tail * it * tiles_m             # the cube reads the core's pixels
            for pix0 in range(n0, n0 + tail, g.chunk):      # a Gather per chunk (conv_tile: BuildPanel)
                width = min(g.chunk, n0 + tail - pix0)
                written += g.crs * g.chunk * it             # whole chunks of R*S panel rows
                lo = (pix0 // g.Q) * g.sh - g.ph
                hi = ((pix0 + width - 1) // g.Q) * g.sh - g.ph + g.R
                rows += max(0, min(hi, g.H) - max(lo, 0)) * g.C * g.W * it
        eps = 0
        for p in schedule.params:   # the epilogue's inputs, per image and C tile of each core
            for i in range(used):
                tail = min(t.single_core_n, g.pix - i * t.single_core_n)
                tiles_m, tiles_n = -(-g.K // t.base_m), -(-tail // t.base_n)
                if p.kind == "rowvec":      # one value per channel: curM of them per tile
                    eps += tiles_n * g.K * p.dtype.itemsize
                elif p.kind == "colvec":    # one per pixel: curN per tile
                    eps += tiles_m * tail * p.dtype.itemsize
                elif p.kind in ("full", "fullshared"):
                    eps += g.K * tail * p.dtype.itemsize
        return a, read, g.images * (rows + eps), g.images * written
    a_item, b_item = (v.dtype.itemsize for v in schedule.mm.operands)
    eps = [(p.kind, p.dtype.itemsize) for p in schedule.params]
    a, b, other = matmul_reads(t, a_item, b_item, max(1, schedule.batch), eps, cube_instances(schedule.target, t))
    return a, b, other, 0


def _tile_counts(t) -> tuple[int, int]:
    """C tiles down one column of the grid (over every core row) and along one row of it: the
    whole blocks' tiles, then the edge block's."""
    return _tiles_along(t.M, t.single_core_m, t.base_m), _tiles_along(t.N, t.single_core_n, t.base_n)


def _tiles_along(size: int, block: int, base: int) -> int:
    edge = size % block
    return size // block * -(-block // base) + (-(-edge // base) if edge else 0)


def matmul_reads(t, a_item: int, b_item: int, batch: int = 1, epilogue=(), instances: int = 0) -> tuple[int, int, int]:
    """(A, B, epilogue inputs) GM bytes a matmul tiling `t` (lower.cube.CubeTiling's M, N, K,
    single_core_*, base_*) reads: every baseM x baseN tile of C reads its rows of A and its
    columns of B over K (the Matmul API's iteration; the CPU implementation counts the same),
    so A is read once per tile column of the whole grid and B once per tile row -- unless the
    tiling holds each core's A panel in L1 (`t.a_l1_bytes`, a TSCM buffer the kernel fills once
    per batch matrix: A is then read once per column of core blocks).  `epilogue` is (kind,
    itemsize) per epilogue input: a [N] vector ("colvec") is read per tile (its curN columns),
    an [M, 1] one ("rowvec") per tile (its curM rows), an [M, N] one once, a one-element
    "scalar" once by each of the `instances` vector instances the launch starts (Init reads it,
    idle ones too)."""
    return _reads(t.M, t.N, t.K, t.single_core_m, t.single_core_n, t.base_m, t.base_n, getattr(t, "a_l1_bytes", 0),
                  a_item, b_item, batch, epilogue, instances)


def _reads(m, n, k, single_m, single_n, base_m, base_n, a_l1_bytes, a_item, b_item, batch, epilogue, instances):
    """matmul_reads of a tiling given by its numbers."""
    tm, tn = _tiles_along(m, single_m, base_m), _tiles_along(n, single_n, base_n)
    other = 0
    for kind, item in epilogue:
        if kind == "scalar":
            other += instances * item
        elif kind == "colvec":
            other += batch * tm * n * item
        elif kind == "rowvec":
            other += batch * tn * m * item
        elif kind in ("full", "fullshared"):
            other += batch * m * n * item
    a_reads = -(-n // single_n) if a_l1_bytes else tn
    return batch * m * k * a_item * a_reads, batch * k * n * b_item * tm, other


def hbm_cycles(target, unique: int, reads: int) -> float:
    """Cycles the chip's HBM needs for a kernel's reads: the bytes first touched (`unique`) when
    they fit L2, where the other reads (one core re-reading what another read) are served;
    every read when they do not (or the target's L2 is not known). 0 where the HBM bandwidth
    is not known. An assumption (targets.py cites the secondary figures), not AutoFuse's table."""
    gbps = getattr(target, "hbm_gbps", 0)
    if not gbps:
        return 0.0
    l2 = getattr(target, "l2_bytes", 0)
    return (unique if l2 and unique <= l2 else reads) / (gbps * 1e3 / target.clock_mhz)


def cube_instances(target, t) -> int:
    """Vector instances a matmul kernel on tiling `t` launches: blockDim AI cores with two each
    on 910B (KERNEL_TYPE_MIX_AIC_1_2), blockDim cores elsewhere."""
    per = objects_per_core(target, t)
    return -(-max(1, t.used_core_num) // per) * (2 if target.separated else 1)


def objects_per_core(target, t) -> int:
    """Matmul objects sharing one AI core in tiling `t`: two on 910B unless the tiling says one
    (lower.cube: KERNEL_TYPE_MIX_AIC_1_2 runs two vector instances per AI core, each may drive
    an object), one on chips whose AI core is one core."""
    return getattr(t, "objects_per_core", 0) or (2 if target.separated else 1)


def matmul_split_cycles(target, t, a_item: int, b_item: int, batch: int, epilogue, c_bytes: int,
                        block_dim: int) -> tuple[float, float, float, float, float, int]:
    """(MTE2, cube, MTE3, pipelined, head cycles, GM bytes) of a matmul kernel on tiling `t`:
    the slowest AI core (the first: its blocks are whole) computes the singleCoreM x
    singleCoreN x K block of each Matmul object it serves, for every batch matrix, and loads
    their tiles' A rows and B columns (the A panel once when it is held in L1) at the per-core
    DMA rate. On 910B the two Matmul objects of an AI core share its cube AND its MTE2: the
    Matmul API's GM -> L1 copies are the AI core's (the vector instances only send it requests,
    ASCENDC.md 3.1), so an AI core serving two objects loads both blocks' operands. The chip's
    HBM bounds the loads too (hbm_cycles). One formula for the report and for lower/cube.py's
    choice of split, base block and layout (split_model)."""
    return split_model(target, t.M, t.N, t.K, a_item, b_item, batch, epilogue, c_bytes)(
        t.single_core_m, t.single_core_n, t.used_core_num, t.base_m, t.base_n, getattr(t, "objects_per_core", 0),
        getattr(t, "a_l1_bytes", 0), block_dim)


def split_model(target, m: int, n: int, k: int, a_item: int, b_item: int, batch: int, epilogue, c_bytes: int):
    """matmul_split_cycles of one M x N x K matmul as a function of (singleCoreM, singleCoreN, cores,
    baseM, baseN, Matmul objects per AI core -- 0: the target's --, TSCM bytes, blockDim): what no
    split changes worked out once (the tiling search prices hundreds of splits of one matmul:
    lower/cube._cheapest_split)."""
    item = max(a_item, b_item)
    rate = target.cube_macs_per_cycle * (FLOAT32_CUBE_RATE if item == 4 else 1.0)
    unique = batch * k * (m * a_item + n * b_item) + sum(
        (batch * (n if kind == "colvec" else m if kind == "rowvec" else m * n) if kind != "scalar" else 1) * i
        for kind, i in epilogue if kind in ("colvec", "rowvec", "full", "fullshared", "scalar"))
    own = 2 if target.separated else 1   # (objects_per_core's default; cube_instances' vector instances per AI core)

    def figures(single_m, single_n, used, base_m, base_n, per_core, a_l1_bytes, block_dim):
        cores = max(1, used)
        per = per_core or own
        per_aic = min(per, cores)
        aics = -(-cores // per_aic)
        sm, sn = min(single_m, m), min(single_n, n)
        cube = batch * per_aic * (-(-sm // 16) * 16) * (-(-sn // 16) * 16) * k / rate
        a, b, other = _reads(m, n, k, single_m, single_n, base_m, base_n, a_l1_bytes, a_item, b_item, batch, epilogue,
                             -(-max(1, used) // per) * own)
        a_times = 1 if a_l1_bytes else -(-sn // base_n)
        core = batch * k * (sm * a_item * a_times + sn * b_item * -(-sm // base_m)) + other / cores
        reads = a + b + other
        mte2 = max(load_cycles(per_aic * core, aics), hbm_cycles(target, unique, reads))
        mte3 = store_cycles(c_bytes / cores, cores)
        cycles = max(cube, mte2, mte3) + min(cube, mte2) * 0.1   # pipes overlap; a little fill
        return mte2, cube, mte3, cycles, heads(block_dim, max(a, b)), reads + c_bytes
    return figures


def _scheduled_cube_cost(op: Op, target, sizes, name, launch: Launch, schedule) -> KernelCost:
    t = schedule.tiling_fields
    conv = getattr(schedule, "conv", None)
    if conv is None:
        a_item, b_item = (v.dtype.itemsize for v in schedule.mm.operands)
        c_bytes = sum(_nelem(v, sizes) * v.dtype.itemsize for v in schedule.fn.results)
        eps = [(p.kind, p.dtype.itemsize) for p in schedule.params]
        mte2, cube, mte3, cycles, head, gm = matmul_split_cycles(
            target, t, a_item, b_item, max(1, schedule.batch), eps, c_bytes, max(1, launch.block_dim))
        return _finish(name or op.name, "cube", max(1, launch.block_dim), mte2, cube, mte3, head, cycles, target, gm)
    item = op.operands[0].dtype.itemsize
    block_dim = max(1, launch.block_dim)
    cores = max(1, t.used_core_num)
    if conv is not None:
        macs = conv.images * conv.K * conv.pix * conv.crs
    else:
        macs = max(1, schedule.batch) * t.M * t.N * t.K
    rate = target.cube_macs_per_cycle * (FLOAT32_CUBE_RATE if item == 4 else 1.0)
    cube = macs / block_dim / rate            # a block (AI core) has one cube unit
    a, b, other, panel_out = cube_schedule_reads(schedule)
    c_bytes = sum(_nelem(v, sizes) * v.dtype.itemsize for v in schedule.fn.results)
    reads = a + (b * conv.images if conv is not None else b) + other
    # on 910B an AI core's MTE2 serves both its Matmul objects (matmul_split_cycles says why)
    per_aic = min(objects_per_core(target, t), cores)
    mte2 = load_cycles(per_aic * reads / cores, -(-cores // per_aic))
    mte3 = store_cycles((c_bytes + panel_out) / cores, cores)
    cycles = max(cube, mte2, mte3) + min(cube, mte2) * 0.1   # pipes overlap; a little fill
    gm = reads + c_bytes + panel_out
    return _finish(name or op.name, "cube", block_dim, mte2, cube, mte3, heads(block_dim, max(a, b)), cycles,
                   target, gm)


def row_schedule_gm(schedule, launch: Launch, sizes=None) -> int:
    """GM bytes of a printed row kernel (lower.row.RowSchedule) or column reduction
    (lower.column.ColumnSchedule), from its parameters' kinds and its launch: rows read once
    per pass that needs them, a row every core needs ("lastonly": gamma, beta) once per core."""
    sizes = sizes or {}
    if hasattr(schedule, "bn"):   # a column kernel: elem inputs once per walk that reads them
        fn = schedule.fn           # (once when resident), col inputs once per tile, outputs once
        gm = 0
        for p in schedule.params:
            if p.kind == "elem":
                gm += schedule.elem_reads(p) * schedule.A * schedule.K * schedule.B * p.dtype.itemsize
            elif p.kind == "col":
                gm += schedule.A * schedule.B * p.dtype.itemsize
            elif p.kind == "scalar":
                gm += max(1, launch.block_dim) * p.dtype.itemsize
        return gm + sum(_nelem(v, sizes) * v.dtype.itemsize for v in fn.results)
    fn = schedule.fn
    shape = [sizes.get(d, 1) if isinstance(d, str) else d for d in schedule.row_shape]
    C = shape[-1] if shape else 1
    R = max(1, math.prod(shape[:-1])) if len(shape) > 1 else 1
    passes = schedule.passes
    gm = 0
    for p in schedule.params:
        item = p.dtype.itemsize
        if p.kind in ("full", "general"):
            reads = 1 if passes is None else max(1, sum(1 for ps in passes if p.index in ps.params))
            gm += reads * R * C * item
        elif p.kind == "lastonly":
            gm += max(1, launch.block_dim) * C * item
        elif p.kind == "perrow":
            gm += R * item
        elif p.kind == "scalar":
            gm += _nelem(fn.params[p.index].value, sizes) * item
    for o in schedule.outputs:
        gm += (R * C if o.kind == "row" else R) * o.dtype.itemsize
    return gm


def _dims(value, sizes) -> list[int]:
    return [sizes.get(d, 1) if isinstance(d, str) else d for d in value.shape]


def attention_ub_buffers(target, bq: int, bk: int, head_v: int, item: int,
                         mask_item: int = 0, rope_head: int = 0, c_cols: int = 0) -> list[tuple[str, str, int]]:
    """(name, position, bytes) of the UB buffers of the printed attention kernel
    (lower/attention_tile.py): the S-then-P-V tile from GetTensorC (float32 rows
    padded to 32 bytes; S is consumed before P V arrives), the P-then-output tile in the input
    dtype, the float32 accumulator O, the running max and sum, reduction scratch; on 310P the
    Matmul API's UB workspace for C, one base block (`c_cols` columns when the products' base
    blocks are narrower than their blocks, else the whole S or P V block)."""
    def up(a, b):
        return -(-a // b) * b
    ld_s, ld_o = up(bk, 8), up(head_v, 8)
    bufs = [("q_c", "VECIN", bq * max(ld_s, ld_o) * 4),
            ("b_p", "VECCALC", bq * max(bk, up(head_v, 32 // item)) * item),
            ("b_o", "VECCALC", bq * ld_o * 4),
            ("b_stat", "VECCALC", 2 * up(bq, 8) * 4),
            ("b_lanes", "VECCALC", 64 * 4), ("b_red", "VECCALC", 32),
            ("b_one", "VECCALC", up(bq, 8) * 4)]   # each row's m_old - m_new, then exp of it
    if mask_item:   # one mask row as stored (bool: uint8, widened through half), and as float32
        bufs.append(("b_m", "VECCALC", up(bk * mask_item, 32)))
        if mask_item == 1:
            bufs.append(("b_mh", "VECCALC", up(bk, 16) * 2))
        bufs.append(("b_mf", "VECCALC", up(bk, 8) * 4))
    if rope_head:   # rope: a q/k row and its cos, sin rows as stored, and x | cos | sin | out in float32
        row = up(rope_head * item, 32)
        bufs += [("b_rx", "VECCALC", row), ("b_rt", "VECCALC", 2 * row), ("b_rf", "VECCALC", 4 * up(rope_head, 8) * 4)]
    if not target.separated:   # a whole base block of C: baseM x baseN (N rounded up to 16)
        bufs.append(("b_mmws", "VECCALC", bq * (c_cols or max(up(bk, 16), up(head_v, 16))) * 4))
    return bufs


def attention_blocks(target, q_len: int, kv_len: int, head: int, head_v: int, item: int,
                     ub_share: float = 1.0, mask_item: int = 0, rope_head: int = 0) -> tuple[int, int]:
    """(BQ, BK) of the flash-attention kernel on `target`: BQ query rows first (K and V are read
    once per Q block), at most 128 (the cube's base M), then BK keys (fewer Matmul calls; where the
    Q block is not held on chip it is read once per KV block), such that UB holds attention_ub_buffers and L0C the S and P V blocks in float32.
    The printed kernel (lower/attention.py) and the cost model use the same choice."""
    def up(a, b):
        return -(-a // b) * b
    for bq in (128, 64, 32, 16):
        for bk in (128, 64, 32, 16):
            bq_, bk_ = min(bq, up(max(1, q_len), 16)), min(bk, up(max(1, kv_len), 16))
            ub = sum(n for _, _, n in attention_ub_buffers(target, bq_, bk_, head_v, item, mask_item, rope_head))
            l0c = max(bq_ * up(bk_, 16), bq_ * up(head_v, 16)) * 4
            if ub <= target.ub_bytes * ub_share and l0c <= target.l0c_bytes:
                return bq_, bk_
    return 16, 16


def _bhsd(op: Op, dims):
    """An attention operand's dims as [..., H, S, D] (layout bshd stores [B, S, H, D])."""
    dims = tuple(dims)
    if op.attr("layout", "bhsd") == "bshd" and len(dims) == 4:
        return dims[:-3] + (dims[-2], dims[-3], dims[-1])
    return dims


def attention_gm_model(op: Op, target, sizes=None) -> int:
    """GM bytes of the flash-attention traffic model: Q and O once, K and V once per Q block (of
    attention_blocks' BQ rows) up to the block's last key (causal: its diagonal), the mask's and
    the rope tables' rows per item (the rotated rows through the workspace), and
    on chips whose cube and vector cores are separate (910B) each P block through the workspace
    (written by the vector unit, read by the cube).  The report reads the kernel's own figure from
    its tile IR (tile/kernel_cost.kernel_gm_bytes); this one prices the kernel before it exists."""
    sizes = sizes or {}
    q, k, v = attention_views(op)
    qd, kd, vd = (_bhsd(op, _dims(x, sizes)) for x in (q, k, v))
    item = q.dtype.itemsize
    L, S = qd[-2], kd[-2]
    bq, _ = attention_blocks(target, L, S, qd[-1], vd[-1], item)
    n_heads = num_elements(tuple(qd[:-2]))
    keys, scores = 0, 0   # per head: K / V rows read over the Q blocks, P elements
    for r0 in range(0, L, bq):
        rows = min(bq, L - r0)
        end = min(S, r0 + rows) if op.attr("causal") else S
        keys += end
        scores += rows * end
    _, _, _, m, cos, sin = attention_operands(op)
    # the mask's rows of each item's scores (a [L, S] mask broadcast over heads is read per head)
    extra = n_heads * scores * m.dtype.itemsize if m is not None else 0
    if cos is not None:   # rope: each Q block and K block rotated into the workspace as it is read
        rows = n_heads * (L + keys)
        extra += rows * _dims(cos, sizes)[-1] * 2 * item + 2 * rows * qd[-1] * item
    p_trip = 2 * n_heads * scores * item if target.separated else 0
    return (_nelem(q, sizes) * item + _nelem(op.result, sizes) * item + extra + p_trip
            + n_heads * keys * (kd[-1] + vd[-1]) * item)


def attention_kernel_cost(op: Op, target, sizes=None, name: str | None = None, launch: Launch | None = None) -> KernelCost:
    """The attention op in the flash-attention shape on the AI cores (a model): per (batch, head,
    Q block) Q K^T and P V on the cube, the online softmax on the vector unit (per score: a
    subtract, an exp, a max and a sum pass, the cast of P; per block row: the rescale of O),
    GM traffic as attention_gm_model; causal halves the work."""
    sizes = sizes or {}
    q, k, v = attention_views(op)
    qd, kd, vd = (_bhsd(op, _dims(x, sizes)) for x in (q, k, v))
    item = q.dtype.itemsize
    bq, bk = attention_blocks(target, qd[-2], kd[-2], qd[-1], vd[-1], item)
    n_heads = num_elements(tuple(qd[:-2]))
    items = n_heads * math.ceil(qd[-2] / bq)
    # the kernel's own launch (lower/attention.py: its AI cores for its vector workers) when known
    block_dim = launch.block_dim if launch is not None and launch.block_dim else max(1, min(target.aic_cores, items))
    frac = 0.5 if op.attr("causal") else 1.0
    scores = n_heads * qd[-2] * kd[-2] * frac
    rate = target.cube_macs_per_cycle * (FLOAT32_CUBE_RATE if item == 4 else 1.0)
    cube = scores * (qd[-1] + vd[-1]) / block_dim / rate
    # the vector side runs on the AIVs of the used cores (2 per AIC on separated chips)
    aiv = max(1, block_dim * max(1, target.vector_cores // max(1, target.aic_cores)))
    per_aiv = scores / aiv
    vec = sum(api_cycles(api, float32, int(per_aiv)) for api in ("Adds", "Exp", "WholeReduceMax", "WholeReduceSum"))
    vec += CAST_API[("float32", "float16")][0] * per_aiv if item == 2 else 0.0
    gm = attention_gm_model(op, target, sizes)
    out_bytes = _nelem(op.result, sizes) * item
    mte2 = load_cycles((gm - out_bytes) / block_dim, block_dim)
    mte3 = store_cycles(out_bytes / block_dim, block_dim)
    cycles = max(cube, vec, mte2, mte3) + 0.1 * min(cube, vec)   # cube and vector pipes overlap
    return _finish(name or op.name, "attention", block_dim, mte2, max(cube, vec), mte3,
                   heads(block_dim, gm), cycles, target, gm)


def move_kernel_cost(op: Op, target, sizes=None, name: str | None = None) -> KernelCost:
    """Data movement (transpose, slice, concatenate, gather, broadcast): read and write once."""
    sizes = sizes or {}
    in_bytes = sum(_nelem(v, sizes) * v.dtype.itemsize for v in op.operands)
    if op.name in ("slice", "take"):
        in_bytes = _nelem(op.result, sizes) * op.result.dtype.itemsize * (1 + (op.name == "take"))
    out_bytes = _nelem(op.result, sizes) * op.result.dtype.itemsize
    block_dim = _cores_for(out_bytes, target.vector_cores)
    per_core_out = out_bytes / block_dim
    tile_bytes = target.ub_bytes * UB_SHARE / 2
    tiles = max(1, math.ceil(per_core_out / tile_bytes))
    load = load_cycles(in_bytes / block_dim / tiles, block_dim)
    store = store_cycles(per_core_out / tiles, block_dim)
    vec = api_cycles("Gather" if op.name == "take" else "Copy", op.result.dtype,
                     int(per_core_out / tiles / op.result.dtype.itemsize)) if op.name in ("transpose", "take") else 0.0
    cycles = _pipelined(tiles, load, vec, store)
    return _finish(name or op.name, "move", block_dim, tiles * load, tiles * vec, tiles * store,
                   heads(block_dim, in_bytes), cycles, target, in_bytes + out_bytes)


def function_cost(fn: Function, target, sizes=None, tiling=None, name: str | None = None,
                  schedule=None) -> KernelCost:
    """The cost of one kernel function, whatever its kind.  `tiling` is the kernel's own (a vector
    Tiling, RowTiling, ColumnTiling or CubeLaunch) and `schedule` its printable schedule for
    row/column/cube kernels: the model then uses the kernel's blockDim, tiles and GM reads."""
    parts = getattr(schedule, "parts", None)
    if parts:   # several matmuls of the same A run in turn in one launch (lower/cube_group)
        costs = [function_cost(p.fn, target, sizes, p.tiling(sizes or {}, target), name or fn.name, p)
                 for p in parts]
        return KernelCost(name or fn.name, "cube", max(c.block_dim for c in costs),
                          sum(c.mte2_cycles for c in costs), sum(c.vec_cycles for c in costs),
                          sum(c.mte3_cycles for c in costs), sum(c.head_cycles for c in costs),
                          sum(c.time_us for c in costs) - (len(costs) - 1) * LAUNCH_US,
                          sum(c.gm_bytes for c in costs))
    ops = [op for op in fn.ops if not has_trait(op, CONSTANT)]
    main = [op for op in ops if not (has_trait(op, ELEMENTWISE) or has_trait(op, BROADCAST))]
    if not main or (len(ops) > len(main) and all(op.name in ("slice", "concatenate", "take") for op in main)
                    and _view_loads(fn) is not None):   # views as addressing of a vector kernel
        return vector_kernel_cost(fn, target, sizes, tiling, name)
    launch = launch_of(tiling)
    if launch is not None and not launch.block_dim:
        launch = None   # an empty launch (no elements): the graph model's figures
    anchor = main[0]
    if anchor.name == "attention":
        return attention_kernel_cost(anchor, target, sizes, name or fn.name, launch)
    if has_trait(anchor, CUBE):
        base = cube_kernel_cost(anchor, target, sizes, name or fn.name, launch, schedule)
        if launch is not None and schedule is not None and getattr(schedule, "tiling_fields", None) is not None:
            # a matmul's epilogue runs row by row on each C tile (a conv's is modelled whole, lower/conv.py)
            per_row = anchor.name == "matmul" and getattr(schedule, "conv", None) is None
            return _with_epilogue(base, fn, anchor, target, sizes, ops, base.gm_bytes, launch, per_row)
    elif has_trait(anchor, REDUCTION):
        base = reduce_kernel_cost(anchor, target, sizes, name or fn.name, launch)
        if launch is not None and schedule is not None and hasattr(schedule, "params"):
            return _with_epilogue(base, fn, anchor, target, sizes, ops, row_schedule_gm(schedule, launch, sizes), launch)
    else:
        base = move_kernel_cost(anchor, target, sizes, name or fn.name)
    return _with_epilogue(base, fn, anchor, target, sizes, ops, None, launch)


def epilogue_cycles(fn, anchor, target, sizes, ops, block_dim: int, launch=None, per_row: bool = False) -> float:
    """Vector cycles of a kernel's ops besides its anchor on `block_dim` cores (`launch`: the
    kernel's tiles, for reductions); lower/cube.py weighs its candidate splits with this too.
    `per_row`: the ops run row by row on each of a core's `launch` tiles (a matmul's epilogue,
    cube_tile's Compute: one API call per op, row and tile), so each call's fixed cost counts
    per row -- what makes thin C tiles costly."""
    return epilogue_model(fn, anchor, target, sizes, ops, per_row)(block_dim, launch)


def epilogue_model(fn, anchor, target, sizes, ops, per_row: bool = False):
    """epilogue_cycles of one kernel as a function of (block_dim, launch), the same values:
    the producers are looked up once and each op's cycles per tile row length remembered (a
    cube kernel's tiling search reads it at many launches that share few row lengths)."""
    producers = {id(r): op for op in fn.ops for r in op.results}
    kinds = [(op, "reduce" if has_trait(op, REDUCTION) else
              "vector" if has_trait(op, ELEMENTWISE) or has_trait(op, BROADCAST) else None)
             for op in ops if op is not anchor]
    row_cycles = {}   # (op index, tile_cols) -> op_vector_cycles on one row

    def cycles(block_dim: int, launch=None) -> float:
        extra = 0.0
        for i, (op, kind) in enumerate(kinds):
            if kind == "reduce":
                extra += reduce_kernel_cost(op, target, sizes, launch=launch).vec_cycles
            elif kind == "vector" and per_row and launch is not None:
                row = row_cycles.get((i, launch.tile_cols))
                if row is None:
                    row = row_cycles[i, launch.tile_cols] = op_vector_cycles(op, launch.tile_cols, producers, target)
                extra += launch.tiles_per_core * launch.tile_rows * row
            elif kind == "vector":
                extra += op_vector_cycles(op, _nelem(op.result, sizes), producers, target) / max(1, block_dim)
        return extra
    return cycles


def _with_epilogue(base: KernelCost, fn, anchor, target, sizes, ops, gm_bytes, launch=None,
                   per_row: bool = False) -> KernelCost:
    """`base` (the anchor op's kernel) plus the other ops of the kernel: their vector time on
    the anchor's output on the kernel's cores, added to the compute pipe; `gm_bytes` the
    kernel's GM traffic when its schedule says (else estimated from its parameters)."""
    extra = epilogue_cycles(fn, anchor, target, sizes, ops, base.block_dim, launch, per_row)
    if gm_bytes is not None:
        gm = gm_bytes
    elif not extra:
        return base
    else:
        gm = base.gm_bytes
    if gm_bytes is None and (has_trait(anchor, REDUCTION) or has_trait(anchor, CUBE)):
        # a row kernel reads each of its tensor inputs once and writes each output once
        # (rows fit UB), not just the anchor reduction's operand and result; a cube kernel
        # reads its epilogue's inputs (bias, residual) too and writes only the epilogue's outputs
        gm = sum(_nelem(p.value, sizes or {}) * p.value.dtype.itemsize for p in fn.params if p.kind == "tensor") \
            + sum(_nelem(v, sizes or {}) * v.dtype.itemsize for v in fn.results)
        if anchor.name == "conv2d":   # its im2col panel: written and read back
            gm += 2 * batch_conv_panel_bytes(anchor, sizes)
    return KernelCost(base.name, base.kind, base.block_dim, base.mte2_cycles, base.vec_cycles + extra,
                      base.mte3_cycles, base.head_cycles, base.time_us + extra / target.clock_mhz, int(gm))


def attention_chain(op: Op) -> Function:
    """The attention op spelled as the ops it replaces -- q @ k^T, the scale, the mask (or the
    causal mask as a bool input), softmax's max/sub/exp/sum/div, P @ v -- for the unfused
    baseline.  Grouped KV heads are counted as if expanded to the query heads."""
    q, k, v = attention_views(op)
    heads = tuple(q.shape[:-2])
    kx = Value(TensorType(heads + tuple(k.shape[-2:]), k.dtype), "k")
    vx = Value(TensorType(heads + tuple(v.shape[-2:]), v.dtype), "v")
    scores = TensorType(heads + (q.shape[-2], k.shape[-2]), q.dtype)
    rows = TensorType(heads + (q.shape[-2], 1), q.dtype)
    axis = (("axes", (len(scores.shape) - 1,)), ("keepdims", True))
    params = [Param(q), Param(kx), Param(vx)]

    def new(name, operands, typ, attrs=()):
        return Op(name, tuple(operands), (Value(typ),), attrs, op.loc)

    _, _, _, mask, cos, sin = attention_operands(op)
    ops = []
    if cos is not None:   # the rotations of q and k as fs.rope's ops (the [..., S, D] view)
        params += [Param(cos), Param(sin)]
        rotated = []
        for x in (q, kx):
            d, n, half = x.shape[-1], x.type.rank, x.shape[-1] // 2
            ht = TensorType(tuple(x.shape[:-1]) + (half,), x.dtype)

            def cut(lo, hi, x=x, n=n, ht=ht):
                return new("slice", (x,), ht, (("starts", (0,) * (n - 1) + (lo,)),
                                                ("steps", (1,) * n), ("stops", tuple(x.shape[:-1]) + (hi,))))
            ops += [new("mul", (x, cos), x.type), cut(half, d), cut(0, half)]
            ops.append(new("neg", (ops[-2].result,), ht))
            ops.append(new("concatenate", (ops[-1].result, ops[-2].result), x.type, (("axis", n - 1),)))
            ops.append(new("mul", (ops[-1].result, sin), x.type))
            ops.append(new("add", (ops[-6].result, ops[-1].result), x.type))
            rotated.append(ops[-1].result)
        q, kx = rotated
    ops += [new("matmul", (q, kx), scores, (("transpose_b", True),)),
           new("constant", (), TensorType((), q.dtype), (("dtype", q.dtype.name), ("value", op.attr("scale"))))]
    ops.append(new("mul", (ops[-2].result, ops[-1].result), scores))
    if op.attr("causal") and mask is None:
        mask = Value(TensorType(scores.shape[-2:], bool_), "causal")
    if mask is not None:
        params.append(Param(mask))
        ops.append(new("add", (ops[-1].result, mask), scores))
    x = ops[-1].result
    ops.append(new("max", (x,), rows, axis))
    ops.append(new("sub", (x, ops[-1].result), scores))
    ops.append(new("exp", (ops[-1].result,), scores))
    e = ops[-1].result
    ops.append(new("sum", (e,), rows, axis))
    ops.append(new("div", (e, ops[-1].result), scores))
    ops.append(Op("matmul", (ops[-1].result, vx), op.results, (), op.loc))
    return Function("attention_chain", tuple(params), tuple(ops), op.results, op.loc)


def unfused_cost(fn: Function, target, sizes=None, kernel_cost=None) -> list[KernelCost]:
    """Every op of a graph function as its own kernel (reshape is a free view; constants
    are baked in): the baseline the fused figures are compared with.  `kernel_cost(single)`,
    when given, returns the cost of a one-op kernel modelled on its own schedule and launch as
    it would be printed (or None: then the graph model's figures), so an unfused kernel is
    modelled exactly like a fused one (k.report() passes it)."""
    sizes = sizes or {}
    producers = {id(r): op for op in fn.ops for r in op.results}
    costs = []
    for op in fn.ops:
        if has_trait(op, CONSTANT) or has_trait(op, HOST) or op.name == "reshape" or op.name == "call":
            continue
        if op.name == "attention":   # unfused, attention is its chain: S and P cross GM
            costs.extend(unfused_cost(attention_chain(op), target, sizes, kernel_cost))
            continue
        params, seen = [], set()
        for v in op.operands:
            p = producers.get(id(v))
            if p is not None and has_trait(p, CONSTANT):
                continue
            if id(v) not in seen:
                seen.add(id(v))
                params.append(Param(v, "tensor"))
        consts = tuple(producers[id(v)] for v in op.operands
                       if id(v) in producers and has_trait(producers[id(v)], CONSTANT))
        single = Function(op.name, tuple(params), consts + (op,), op.results, op.loc)
        scheduled = kernel_cost(single) if kernel_cost is not None else None
        if scheduled is not None:
            costs.append(scheduled)
        elif has_trait(op, ELEMENTWISE) or (has_trait(op, BROADCAST) and has_trait(op, SHAPE)):
            costs.append(vector_kernel_cost(single, target, sizes, None, op.name))
        else:
            costs.append(function_cost(Function(op.name, (), (op,), op.results, op.loc), target, sizes, None,
                                       op.name))
    return costs


__all__ = ["KernelCost", "VECTOR_API", "LAUNCH_US", "api_cycles", "load_cycles", "store_cycles",
           "vector_kernel_cost", "reduce_kernel_cost", "cube_kernel_cost", "move_kernel_cost",
           "matmul_reads", "matmul_split_cycles", "objects_per_core", "hbm_cycles", "epilogue_cycles", "epilogue_model",
           "function_cost", "unfused_cost", "attention_blocks", "attention_ub_buffers", "attention_gm_model",
           "attention_kernel_cost", "attention_chain"]
