"""A conv kernel on the CPU: the conv kind's TileKernel through llvm_kernel, its product a library call.

On the chip a conv kernel builds an im2col panel per core and image and multiplies the weights
by it through the Matmul API (lower/conv.py, conv_tile.py).  On the CPU, as a float matmul's
product is cblas_sgemm's, a conv's product is conv_product.py's (structural zeros skipped,
per-tap sgemms without the im2col matrix, im2col where that moves fewer bytes: one panel and one
sgemm per core was 1.2-2.7x slower on this host), written into a kept [N, K, P, Q] buffer before
the launch; the kernel itself runs in llvm_kernel's host-product mode (llvm_kernel._HostProduct):
its Iterate hands each core's block of that product to GetTensorC and the epilogue -- bias,
activation, casts, stores -- is the kernel's own vector code, on the CPU's words
(cpu_tiling.conv_words: a core is a block of output channels over whole images).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..lower.kinds import host_kernel_ir, kernel_words
from .blas import one_blas_thread
from .conv_product import ConvProduct
from .cpu_tiling import conv_words
from .kernel_cpu import TileKernelCpu, same_call

__all__ = ["ConvCpu"]


def _nothing() -> None:
    """The launch of a lone conv2d whose product is its output (`ConvCpu.plain`)."""


class ConvCpu:
    """A conv kind's schedule (lower/conv.ConvSchedule) run on the CPU (module doc), with the call
    paths' interface (kernel_cpu.ScheduleCpu's): `run(inputs, outputs)`, `bind`, `bound_outputs`.
    `masks`: per kernel parameter its structural-zero mask or None (backend_cpu/zeros.py), static
    for the kernel; the product then skips what they make zero."""

    def __init__(self, sched, tiling, masks=None, *, use_disk_cache: bool = True):
        self.sched, self.tiling = sched, tiling
        self.kernel = TileKernelCpu(host_kernel_ir(sched), use_disk_cache=use_disk_cache, host_product=True)
        conv, fn = sched.mm, sched.fn
        x, w = conv.operands
        index = {id(p.value): i for i, p in enumerate(fn.params)}
        self.positions = (index[id(x)], index[id(w)])
        self.dtypes = (x.dtype.np, w.dtype.np)
        self.integer = sched.c_dtype == dt.int32
        self.out_shape = tuple(conv.result.shape)
        self.product = ConvProduct(x.shape, w.shape, self.out_shape, conv.attr("stride"), conv.attr("padding"),
                                   self.integer)
        # an operand that nothing else in the kernel reads may be read from the parameter it copies
        others = {id(v) for op in fn.ops if op is not conv for v in op.operands}
        self.readable = [id(v) not in others for v in (x, w)]
        self.masks = masks
        # a lone conv2d (no epilogue op, its float32 product the result): the product goes straight
        # into the output, as cube.py's did -- the kernel would only copy it there (a pass over the
        # result: 1.5x the whole call for KernelBench 81's transposed conv)
        self.plain = (all(op is conv or not op.operands for op in fn.ops) and tuple(fn.results) == (conv.result,)
                      and conv.result.dtype == dt.float32 and not self.integer)
        n, k, p, q = self.out_shape
        self.words = conv_words(kernel_words(sched, tiling), p * q, k, 4 * n * k * p * q)
        self._scalars = frozenset(i.index for i in sched.inputs if i.kind == "runtime_scalar")
        self._last = None   # (inputs, call)

    def operand_masks(self, masks=None) -> list:
        """The conv operands' masks, from per-parameter `masks` (or the kernel's own)."""
        masks = self.masks if masks is None else masks
        return [None if masks is None else masks[i] for i in self.positions]

    def sourced(self, masks, sources) -> dict[int, np.ndarray]:
        """{kernel parameter position: index array} of the conv operands `bind` can read from the
        parameter they copy (zeros.copy_sources: `sources[i]`, per kernel parameter, None or an
        index array into that parameter's array): the sparse product skips their zeros and reads
        nothing else of them, and nothing else in the kernel reads them.  Empty when the product
        would run dense (or is an integer one)."""
        if masks is None or sources is None or any(d != np.float32 for d in self.dtypes):
            return {}
        if not self.product.sourced(self.operand_masks(masks)):
            return {}
        return {i: sources[i] for i, ok in zip(self.positions, self.readable) if ok and sources[i] is not None}

    def bind(self, inputs, outputs, tiling=None, masks=None, sources=None):
        """A call running the kernel on exactly these arrays (the product into a buffer kept with
        it), or None when the product cannot read an operand from its source (`sourced`); then
        the caller materialises the operands and binds again without sources."""
        inputs = list(inputs)
        operands = []
        for i, d in zip(self.positions, self.dtypes):
            a = inputs[i]
            if sources and i in sources:
                operands.append(np.asarray(a))   # the parameter the operand copies
                continue
            a = np.ascontiguousarray(a, dtype=d)
            inputs[i] = a
            operands.append(a)
        at = [None if not sources else sources.get(i) for i in self.positions]
        out = outputs[0] if len(outputs) == 1 else None
        direct = (self.plain and type(out) is np.ndarray and out.dtype == np.float32 and out.shape == self.out_shape
                  and out.flags.c_contiguous and out.flags.writeable)
        product = out if direct else np.empty(self.out_shape, np.int32 if self.integer else np.float32)
        fill = self.product.bind(operands[0], operands[1], product, self.operand_masks(masks), at)
        if fill is None:
            return None
        launch = _nothing if direct else self.kernel.bind(inputs, outputs, self.words, product=product)
        guard = one_blas_thread()   # the product's sgemms on this thread (blas.py)

        def call() -> None:
            with guard:
                fill()
            launch()
        call.keep = (fill, launch, product)
        call.outputs = tuple(outputs)
        return call

    def run(self, inputs, outputs, tiling=None) -> None:
        """Run on these arrays, repeating the last bound call when they are the same ones."""
        last = self._last
        if last is None or not self._matches(last, inputs, outputs):
            self._last = None   # its outputs are no longer held while binding
            last = self._last = (tuple(inputs), self.bind(inputs, outputs))
        last[1]()

    def _matches(self, last, inputs, outputs) -> bool:
        ins, call = last
        return same_call(ins, call, inputs, outputs, self._scalars)

    def bound_outputs(self) -> tuple:
        """The outputs the remembered call keeps alive, each referenced once (OutputPool.take)."""
        return () if self._last is None else self._last[1].outputs
