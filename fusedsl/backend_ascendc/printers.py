"""Which printer prints a kernel: one entry per kernel kind (lower/kinds.py), keyed by its name.

A new kind adds its printer here; the compiler, `save` and `simulate` ask `printer_for_plan`.
"""
from __future__ import annotations

from .frame import KernelFrame
from .printer_kernel import KernelPrinter


PRINTERS = {
    "vector": KernelPrinter,  # elementwise and view kernels: their loop-level tile IR (lower/vector_tile.py)
    "conv": KernelPrinter,    # im2col per core and image, then the Matmul API (lower/conv_tile.py)
    "cube": KernelPrinter,    # the Matmul API with the epilogue on each C tile in UB (lower/cube_tile.py)
    "cube_group": KernelPrinter,   # several matmuls of the same A, in turn, in one launch (a kernel of parts)
    "row": KernelPrinter,     # tiles of whole rows, or passes over chunks of a long row (lower/row_tile.py)
    "column": KernelPrinter,  # reductions over other axes (its loop-level tile IR, lower/column_tile.py)
    "attention": KernelPrinter,   # flash attention: Q K^T, online softmax, P V per Q block (lower/attention_tile.py)
    "transpose": KernelPrinter,   # a lone transpose / permute: its loop-level tile IR (tile/kernel.py)
}


def printer_for_plan(plan, target) -> KernelFrame:
    """The printer of one printable kernel plan (KernelPlan.printable)."""
    return PRINTERS[plan.kernel_kind](plan.lowered, target, plan.name)
