"""Run a CompiledKernel's printed Ascend C on the CPU implementation of the API.

Each kernel call of main becomes one launch of the compiled source with GM buffers
for its inputs, outputs, a workspace and the tiling struct.  The tiling struct is
packed in Python and checked word for word against the printed C++ host tiling
function, so the two implementations cannot drift apart.
"""
from __future__ import annotations

import ctypes

import numpy as np

from ..errors import AscendCCheckError
from .cpu_runner import build
from ..views import gather_indices
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


def simulate(compiled, arrays, sizes):
    lib = library(compiled)
    measured = [0]

    def run_kernel(plan, inputs, targets, sizes):   # targets unused: GM buffers are fresh
        if plan.error is not None:   # e.g. sizes that need 64-bit offsets: a clear ScheduleError
            raise plan.error
        outs, stats = _launch(lib, compiled, plan, inputs, sizes)
        if stats is not None:
            measured[0] += stats.gm_bytes_read + stats.gm_bytes_written
        return outs

    results = compiled._run_main(arrays, run_kernel)
    return results, measured[0]


def _launch(lib, compiled, plan, inputs, sizes):
    """One launch of a kernel of any kind: the tiling struct its printer packs (checked against
    the printed host tiling), GM buffers for the tensors and results, the workspace."""
    printer = printer_for_plan(plan, compiled.target)
    tiling = plan.tiling
    params = printer.launch_params()
    views = getattr(plan.lowered, "views", None)
    if views is not None:   # take: indices are checked before launching (the device guard would
        for load in views.loads:   # give zero rows)
            if load.gather is not None:
                gather_indices(load, inputs[load.gather[0]])
    scalars = {p.name: np.asarray(x).item() for p, x in zip(params, inputs) if p.kind == "runtime_scalar"}
    packed = printer.pack(tiling, scalars)
    _check_host_tiling(lib, plan, printer, packed, sizes, compiled.target)
    outs = []
    for v in plan.function.results:
        shape = tuple(sizes[d] if isinstance(d, str) else d for d in v.shape)
        outs.append(np.zeros(shape, v.dtype.np))
    if tiling.total_tiles == 0:   # empty tensors: the host launches nothing
        return tuple(outs), None
    buffers = gm_inputs([(p.name, x) for p, x in zip(params, inputs) if p.kind != "runtime_scalar"])
    buffers += [(f"y{k}", o) for k, o in enumerate(outs)]
    buffers.append(("workspace", np.zeros(printer.workspace_bytes(), np.uint8)))
    buffers.append(("tiling", np.frombuffer(packed, np.uint8).copy()))
    stats = lib.launch(plan.name, tiling.block_dim, buffers, target=compiled.target.name)
    return tuple(outs), stats


def _check_host_tiling(lib, plan, printer, packed: bytes, sizes, target) -> None:
    """The printed C++ host tiling, called with the same sizes, must fill the struct the Python
    tiling packed, word for word (runtime scalars aside: the host does not know them)."""
    cdll = getattr(lib, "cdll", None) or lib._lib
    size_fn = getattr(cdll, f"fusedsl_tiling_size_{plan.name}")
    size_fn.restype = ctypes.c_uint32
    n = size_fn()
    buf = (ctypes.c_uint8 * n)()
    symbols = list(printer.symbols)
    arr = (ctypes.c_int64 * max(1, len(symbols)))(*[sizes[s] for s in symbols])
    fn = getattr(cdll, f"fusedsl_tiling_{plan.name}")
    fn.restype = ctypes.c_int
    if fn(arr, ctypes.c_uint32(target.vector_cores), ctypes.c_uint32(plan.lowered.ub_budget), buf) != 0:
        raise AscendCCheckError(f"kernel {plan.name}: the printed host tiling refused sizes {sizes} "
                                "(2**32 elements or more), but the Python tiling accepted them (internal error)")
    scalar_bytes = 4 * sum(1 for p in printer.launch_params() if p.kind == "runtime_scalar")
    if n != len(packed) or bytes(buf)[:n - scalar_bytes] != packed[:n - scalar_bytes]:
        raise AscendCCheckError(f"kernel {plan.name}: the printed host tiling disagrees with the Python "
                                "tiling (internal error; please report it with the IR)")
