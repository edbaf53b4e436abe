"""Run a CompiledKernel's printed Ascend C on the CPU implementation of the API.

Each kernel call of main becomes one launch of the compiled source with GM buffers
for its inputs, outputs, a workspace and the tiling struct.  The tiling struct is
packed in Python and checked word for word against the printed C++ host tiling
function, so the two implementations cannot drift apart.
"""
from __future__ import annotations

import ctypes
import struct

import numpy as np

from ..errors import AscendCCheckError
from .cpu_runner import build
from .emit import pack_scalar
from .printers import printer_for_plan


def gm_inputs(pairs):
    """The input arrays as the device's GM buffers: C-contiguous, each in memory of its own and
    aligned to its element size.  numpy hands out views that share memory (`x` and `x[0]` start at
    the same address, and the CPU API keys GM buffers by start address) and arrays at odd byte
    offsets (a float32 view of a bytes buffer); device allocations are neither, so such inputs are
    copied instead of tripping a GM check meant for kernels."""
    out, seen = [], []
    for name, x in pairs:
        a = np.ascontiguousarray(x)
        if not a.flags.aligned or a.ctypes.data % max(a.itemsize, 1) != 0 or any(
                np.shares_memory(a, b) for b in seen):
            a = np.array(a, copy=True, order="C")
        seen.append(a)
        out.append((name, a))
    return out


def library(compiled):
    if compiled._library is None:
        compiled._library = build(compiled.source, target=compiled.target.name, name=compiled.name)
    return compiled._library


def _check_host_tiling(lib, plan, packed: bytes, sizes: dict[str, int], target) -> None:
    cdll = getattr(lib, "cdll", None) or lib._lib
    size_fn = getattr(cdll, f"fusedsl_tiling_size_{plan.name}")
    size_fn.restype = ctypes.c_uint32
    n = size_fn()
    buf = (ctypes.c_uint8 * n)()
    symbols = sorted({d for d in plan.schedule.iter_shape if isinstance(d, str)})
    arr = (ctypes.c_int64 * max(1, len(symbols)))(*[sizes[s] for s in symbols])
    fn = getattr(cdll, f"fusedsl_tiling_{plan.name}")
    fn.restype = ctypes.c_int
    if fn(arr, ctypes.c_uint32(target.vector_cores), ctypes.c_uint32(plan.schedule.ub_budget), buf) != 0:
        raise AscendCCheckError(f"kernel {plan.name}: the printed host tiling refused sizes {sizes} "
                                "(2**32 elements or more), but the Python tiling accepted them (internal error)")
    host = bytes(buf)
    scalar_bytes = 4 * sum(1 for i in plan.schedule.inputs if i.kind == "runtime_scalar")
    if n != len(packed) or host[:n - scalar_bytes] != packed[:n - scalar_bytes]:
        raise AscendCCheckError(f"kernel {plan.name}: the printed host tiling disagrees with the Python "
                                "tiling (internal error; please report it with the IR)")


def simulate(compiled, arrays, sizes):
    lib = library(compiled)
    measured = [0]

    def run_kernel(plan, inputs, targets, sizes):   # targets unused: GM buffers are fresh
        if plan.error is not None:   # e.g. sizes that need 64-bit offsets: a clear ScheduleError
            raise plan.error
        if plan.schedule is None:    # a row kernel (printer_row)
            outs, stats = _run_row(lib, compiled, plan, inputs, sizes)
            if stats is not None:
                measured[0] += stats.gm_bytes_read + stats.gm_bytes_written
            return outs
        sched = plan.schedule
        scalars = {i.name: np.asarray(x).item() for i, x in zip(sched.inputs, inputs)
                   if i.kind == "runtime_scalar"}
        if sched.views is not None:   # take: indices are checked before launching (the
            from ..views import gather_indices   # device guard would give zero rows)
            for load in sched.views.loads:
                if load.gather is not None:
                    gather_indices(load, inputs[load.gather[0]])
        packed = pack_tiling(plan, scalars)
        _check_host_tiling(lib, plan, packed, sizes, compiled.target)
        buffers = gm_inputs([(i.name, x) for i, x in zip(sched.inputs, inputs) if i.kind != "runtime_scalar"])
        outs = []
        for v in plan.function.results:
            shape = tuple(sizes[d] if isinstance(d, str) else d for d in v.shape)
            outs.append(np.zeros(shape, v.dtype.np))
        if plan.tiling.total_tiles == 0:   # empty tensors: the host launches nothing
            return tuple(outs)
        buffers += [(f"y{k}", o) for k, o in enumerate(outs)]
        buffers.append(("workspace", np.zeros(32, np.uint8)))
        buffers.append(("tiling", np.frombuffer(packed, np.uint8).copy()))
        stats = lib.launch(plan.name, plan.tiling.block_dim, buffers, target=compiled.target.name)
        measured[0] += stats.gm_bytes_read + stats.gm_bytes_written
        return tuple(outs)

    results = compiled._run_main(arrays, run_kernel)
    return results, measured[0]


def _run_row(lib, compiled, plan, inputs, sizes):
    sched, tiling = plan.row, plan.row_tiling
    printer = printer_for_plan(plan, compiled.target)
    scalars = {p.name: np.asarray(x).item() for p, x in zip(sched.params, inputs) if p.kind == "runtime_scalar"}
    packed = printer.pack(tiling, scalars)
    _check_row_tiling(lib, plan, packed, sizes, compiled.target)
    outs = []
    for v in plan.function.results:
        shape = tuple(sizes[d] if isinstance(d, str) else d for d in v.shape)
        outs.append(np.zeros(shape, v.dtype.np))
    if tiling.total_tiles == 0:
        return tuple(outs), None
    buffers = gm_inputs([(p.name, x) for p, x in zip(sched.params, inputs) if p.kind != "runtime_scalar"])
    buffers += [(f"y{k}", o) for k, o in enumerate(outs)]
    buffers.append(("workspace", np.zeros(getattr(sched, "workspace_bytes", 32), np.uint8)))
    buffers.append(("tiling", np.frombuffer(packed, np.uint8).copy()))
    stats = lib.launch(plan.name, tiling.block_dim, buffers, target=compiled.target.name)
    return tuple(outs), stats


def _check_row_tiling(lib, plan, packed: bytes, sizes, target) -> None:
    cdll = getattr(lib, "cdll", None) or lib._lib
    size_fn = getattr(cdll, f"fusedsl_tiling_size_{plan.name}")
    size_fn.restype = ctypes.c_uint32
    n = size_fn()
    buf = (ctypes.c_uint8 * n)()
    symbols = list(plan.row.symbols)
    arr = (ctypes.c_int64 * max(1, len(symbols)))(*[sizes[s] for s in symbols])
    fn = getattr(cdll, f"fusedsl_tiling_{plan.name}")
    fn.restype = ctypes.c_int
    if fn(arr, ctypes.c_uint32(target.vector_cores), ctypes.c_uint32(plan.row.ub_budget), buf) != 0:
        raise AscendCCheckError(f"kernel {plan.name}: the printed host tiling refused sizes {sizes}, but the "
                                "Python tiling accepted them (internal error)")
    scalar_bytes = 4 * sum(1 for p in plan.row.params if p.kind == "runtime_scalar")
    if n != len(packed) or bytes(buf)[:n - scalar_bytes] != packed[:n - scalar_bytes]:
        raise AscendCCheckError(f"kernel {plan.name}: the printed host tiling disagrees with the Python "
                                "tiling (internal error; please report it with the IR)")


def pack_tiling(plan, scalars: dict[str, float]) -> bytes:
    """The tiling struct as the printed C++ lays it out (all 32-bit fields)."""
    t, sched = plan.tiling, plan.schedule
    words = [t.R, t.C, t.Cpad, t.tile_rows, t.tile_cols, t.col_tiles, t.total_tiles, t.tiles_per_core,
             t.block_dim, t.tile_elems, int(t.rows_mode)] + list(t.dims)
    data = struct.pack(f"<{len(words)}I", *words)
    for inp, strides in zip(sched.inputs, t.strides):
        if inp.kind != "runtime_scalar":
            data += struct.pack(f"<{len(strides)}I", *strides)
    if t.boxes:   # view kernels: the box table (schedule._view_tiling)
        data += struct.pack("<I", len(t.boxes))
        for row in t.boxes:
            data += struct.pack(f"<{len(row)}I", *row)
    for inp in sched.inputs:
        if inp.kind == "runtime_scalar":
            data += pack_scalar(inp.gm_dtype, scalars[inp.name])
    return data
