"""The LLVM CPU backend: a scheduled vector kernel compiled to native code and run on arrays.

    kernel = CpuKernel(sched, target)           # lower -> verify -> O3 -> JIT (cached)
    kernel.run(inputs, outputs, tiling)         # inputs in parameter order, outputs preallocated
    call = kernel.bind(inputs, outputs, tiling) # the lean path: everything prepared once
    call()                                      # ... then one ctypes call per launch

`run` remembers the last binding and reuses it when it is called again with the same
array objects, scalars and tiling, so a loop calling `run` pays for argument
preparation once; with new arrays it rebinds from a per-tiling template (checks and
one pointer read per array).  A BoundCall owns its argument block, so bindings can be
called from several threads at once; `run` itself keeps one binding per kernel.
The TileKernel interpreter (kernel_interp.py) is the executable spec the compiled code is tested against.
"""
from __future__ import annotations

from operator import is_

import numpy as np

from ..lower.vector import Tiling, VectorSchedule, compute_dtype
from . import jit
from .launch import KERNEL_PROTO, host_threads, pool, run_blocks
from .llvm import SCRATCH_ALIGN, ArgLayout, lower, scratch_slots, split_stmts
from ..tile.tiling import rows_mode

__all__ = ["CpuKernel", "BoundCall", "lower"]

SYMBOL = "fusedsl_kernel"
# Below this much work (bytes moved, transcendental ops weighted up) a launch runs on
# the caller's thread.  Waking a pool thread costs 12-40 µs here, and on this shared
# 2-vCPU host the second vCPU often delivers well under a full core; measured, the pool
# loses below ~4 MB and wins up to 1.5x from ~16 MB when the other vCPU is free.
PARALLEL_MIN_WORK = 16 << 20
# Outputs larger than this are written with non-temporal stores: they will not be read
# back from cache, and skipping the read-for-ownership saves a third of the traffic.
STREAM_MIN_BYTES = 32 << 20
_TRANSCENDENTAL_WEIGHT = 16     # exp/ln cost about this many bytes of traffic per element
_MAX_PLANS = 64


class CpuKernel:
    """One vector kernel compiled for this host."""

    def __init__(self, sched: VectorSchedule, target=None, *, use_disk_cache: bool = True):
        self.sched = sched
        self.target = target
        self.layout = lay = ArgLayout.of(sched)
        self.ir = lower(sched, SYMBOL)
        self._compiled = jit.compile_ir(self.ir, SYMBOL, use_disk=use_disk_cache)   # keeps the code alive
        self._cfunc = KERNEL_PROTO(self._compiled.address)
        self._scratch_itemsizes = [sched.slots[s].dtype.itemsize for s in scratch_slots(sched)]
        self._bytes_per_elem = sum(i.gm_dtype.itemsize for i in sched.inputs if i.kind in ("full", "general")) \
            + sum(o.gm_dtype.itemsize for o in sched.outputs)
        _, body = split_stmts(sched)
        self._weight = _TRANSCENDENTAL_WEIGHT * sum(1 for s in body if s.op in ("exp", "ln"))
        # (parameter index, args slot, numpy dtype) per GM array, and per runtime scalar
        self._tensor_slots = [(sched.inputs[p].index, lay.input_ptr(p), sched.inputs[p].gm_dtype.np)
                              for p in lay.tensors]
        self._output_slots = [(o.index, lay.output_ptr(k), o.gm_dtype.np) for k, o in enumerate(sched.outputs)]
        self._scalar_slots = [(sched.inputs[p].index, lay.scalar(p), sched.inputs[p].gm_dtype,
                               compute_dtype(sched.inputs[p].gm_dtype)) for p in lay.scalars]
        self._plans: dict[Tiling, _Plan] = {}
        self._last_plan: tuple | None = None
        self._last: BoundCall | None = None

    @property
    def from_disk_cache(self) -> bool:
        return self._compiled.from_disk

    def run(self, inputs, outputs, tiling: Tiling) -> None:
        last = self._last
        if last is None or not last.matches(inputs, outputs, tiling):
            last = self._last = self.bind(inputs, outputs, tiling)
        last()

    def bound_outputs(self) -> tuple:
        """The output arrays the last bound call keeps alive (the output pool discounts them)."""
        return () if self._last is None else self._last._keep[3]

    def bind(self, inputs, outputs, tiling: Tiling) -> "BoundCall":
        """Check the arrays against the schedule and tiling once; the result runs the kernel."""
        plan = self._plan_for(tiling)
        args = plan.template.copy()
        converted = []
        for index, slot, dtype in self._tensor_slots:
            arr = inputs[index]
            if not isinstance(arr, np.ndarray) and plan.sizes[index] == 1:
                arr = np.asarray(arr, dtype)       # a one-element tensor handed over as a number
                converted.append(arr)
            args[slot] = _address(arr, dtype, plan.sizes[index], self.sched, index)
        if len(outputs) != len(self._output_slots):
            raise ValueError(f"{len(self._output_slots)} output array(s) needed, got {len(outputs)}")
        for index, slot, dtype in self._output_slots:
            out = outputs[index]
            if not (isinstance(out, np.ndarray) and out.dtype == dtype and out.flags.c_contiguous
                    and out.flags.writeable and out.size == plan.out_size):
                raise ValueError(f"output {index} must be a writeable C-contiguous {dtype} array of "
                                 f"{plan.out_size} elements")
            args[slot] = out.ctypes.data
        if self._scalar_slots:
            self._fill_scalars(args, inputs)
        scratch = [_scratch(plan.scratch_bytes) for _ in range(plan.threads)]
        keep = (args, scratch, tuple(inputs), tuple(outputs), converted)
        return BoundCall(self._cfunc, tiling.block_dim, args.ctypes.data,
                         [_aligned_address(s) for s in scratch], tiling, keep, plan.scalar_positions)

    # ---- preparation -----------------------------------------------------------------------------
    def _plan_for(self, tiling: Tiling) -> "_Plan":
        last = self._last_plan
        if last is not None and last[0] is tiling:
            return last[1]
        plan = self._plans.get(tiling)
        if plan is None:
            if len(self._plans) >= _MAX_PLANS:    # many symbolic sizes: forget the old ones
                self._plans.clear()
            plan = self._plans[tiling] = self._plan(tiling)
        self._last_plan = (tiling, plan)
        return plan

    def _plan(self, t: Tiling) -> "_Plan":
        """Everything that depends on the tiling only: checked once per tiling."""
        sched, lay = self.sched, self.layout
        if len(t.dims) != len(sched.dims):
            raise ValueError(f"tiling has {len(t.dims)} dims, the schedule {len(sched.dims)}")
        template = np.zeros(lay.size, np.int64)
        fixed = {"R": t.R, "C": t.C, "tile_rows": t.tile_rows, "tile_cols": t.tile_cols,
                 "col_tiles": t.col_tiles, "total_tiles": t.total_tiles, "tiles_per_core": t.tiles_per_core,
                 "rows_mode": int(rows_mode(sched, t)), "stream": int(self._stream(t))}
        for name, value in fixed.items():
            template[lay.fixed(name)] = value
        for j in range(lay.n_outer):
            template[lay.dim(j)] = t.dims[j]
        for pos in lay.general:
            for j in range(lay.n_outer):
                template[lay.stride(pos, j)] = t.strides[pos][j]
        sizes = {inp.index: _expected_size(inp, t) for inp in sched.inputs if inp.kind != "runtime_scalar"}
        scratch_bytes = sum(_round_up(t.C * size, SCRATCH_ALIGN) for size in self._scratch_itemsizes)
        scalars = tuple(index for index, _, _, _ in self._scalar_slots)
        return _Plan(template, sizes, t.R * t.C, self._threads_for(t), scratch_bytes, scalars)

    def _threads_for(self, tiling: Tiling) -> int:
        work = tiling.R * tiling.C * (self._bytes_per_elem + self._weight)
        if tiling.block_dim <= 1 or work < PARALLEL_MIN_WORK:
            return 1
        return min(host_threads(), pool().workers + 1, tiling.block_dim)

    def _stream(self, t: Tiling) -> bool:
        out_bytes = t.R * t.C * sum(o.gm_dtype.itemsize for o in self.sched.outputs)
        return out_bytes >= STREAM_MIN_BYTES

    def _fill_scalars(self, args: np.ndarray, inputs) -> None:
        """Runtime scalars, rounded to their compute dtype here (the kernel reads them as is)."""
        as_double = args.view(np.float64)
        for index, slot, gm_dtype, cd in self._scalar_slots:
            with np.errstate(all="ignore"):
                value = np.asarray(inputs[index]).astype(gm_dtype.np).astype(cd.np)
            if cd.is_float:
                as_double[slot] = float(value)
            else:
                args[slot] = int(value)


class _Plan:
    __slots__ = ("template", "sizes", "out_size", "threads", "scratch_bytes", "scalar_positions")

    def __init__(self, template, sizes, out_size, threads, scratch_bytes, scalar_positions):
        self.template = template
        self.sizes = sizes
        self.out_size = out_size
        self.threads = threads
        self.scratch_bytes = scratch_bytes
        self.scalar_positions = scalar_positions


class BoundCall:
    """A kernel launch with every argument prepared: calling it runs the kernel."""

    __slots__ = ("_fn", "_blocks", "_args", "_scratch", "_tiling", "_keep", "_serial", "_scalars")

    def __init__(self, fn, block_dim: int, args_ptr: int, scratch: list[int], tiling, keep, scalars=()):
        self._fn = fn
        self._blocks = block_dim
        self._args = args_ptr
        self._scratch = scratch
        self._tiling = tiling
        self._keep = keep          # the arrays whose addresses are in the args block
        self._scalars = scalars    # parameter positions holding runtime scalars (compared by value)
        self._serial = (0, block_dim, args_ptr, scratch[0]) if len(scratch) == 1 else None

    @property
    def native(self):
        """(cfunc, *arguments) when a call is that one serial kernel call (calls.py)."""
        return None if self._serial is None else (self._fn, *self._serial)

    def __call__(self) -> None:
        serial = self._serial
        if serial is not None:
            self._fn(*serial)
        else:
            run_blocks(self._fn, self._blocks, self._args, self._scratch)

    def matches(self, inputs, outputs, tiling) -> bool:
        """Would binding these arguments give this call again?"""
        _, _, ins, outs, _ = self._keep
        if tiling is not self._tiling or len(inputs) != len(ins) or len(outputs) != len(outs):
            return False
        if not all(map(is_, outputs, outs)):
            return False
        if not self._scalars:
            return all(map(is_, inputs, ins))
        for i, (a, b) in enumerate(zip(inputs, ins)):
            if a is not b and not (i in self._scalars and type(a) is type(b) and a == b):
                return False
        return True


def _address(arr, dtype, size: int, sched: VectorSchedule, index: int) -> int:
    if not (isinstance(arr, np.ndarray) and arr.dtype == dtype and arr.flags.c_contiguous and arr.size == size):
        name = next(i.name for i in sched.inputs if i.index == index)
        got = f"{arr.dtype} array of {arr.size} elements" if isinstance(arr, np.ndarray) else type(arr).__name__
        raise ValueError(f"input {name!r} must be a C-contiguous {dtype} array of {size} elements, got {got}")
    return arr.ctypes.data


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def _scratch(nbytes: int):
    return np.empty(nbytes + SCRATCH_ALIGN, np.uint8) if nbytes else None


def _aligned_address(buf) -> int:
    if buf is None:
        return 0
    return _round_up(buf.ctypes.data, SCRATCH_ALIGN)


def _expected_size(inp, t: Tiling) -> int:
    n = 1
    for present, size in zip(inp.bits, t.dims):
        if present:
            n *= size
    return n
