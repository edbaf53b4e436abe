"""A lone attention op on the CPU: the attention kind's TileKernel through the one LLVM lowering.

The attention kind (lower/attention.py, attention_tile.py) is scheduled with the CPU's blocks
(cpu_tiling.attention_schedule: Q blocks of 128 rows, KV blocks of up to 512 keys, P handed to
the P V product in UB) and run by kernel_cpu.ScheduleCpu; llvm_kernel.py multiplies in register
tiles (tiled_product.py: K^T packed once per launch and thread) and runs the online softmax as
two passes per row of S (attention_softmax.py).  This replaced a per-kind executor of its own
(backend_cpu/attention.py, removed: benchmarks/RESULTS.md "Round 6, attention").

Two operand forms the kind does not take are adapted on the host, as that executor did:
- bfloat16 operands (the kind schedules float16 / float32 products): the kernel is the float32
  one; q, k, v (a bfloat16 mask, the rope tables) are widened to float32 before each launch and
  the result rounded once to bfloat16 -- float32 softmax statistics, P in float32;
- a mask broadcast over the keys ([..., 1] for more than one key): the kernel reads a mask with
  its key axis, broadcast into a kept buffer before each launch.
A kernel of symbolic sizes is scheduled per call's shapes (`_PerShape`: the kind schedules static
shapes only).  What else the kind refuses ([B, S, H, D] with fewer KV heads, rope tables that vary
over batch or heads, ...) runs on the numpy reference: `attention_cpu` is None for it (`_PerShape`
calls the reference for shapes it refuses).
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import FusedslError
from ..ir.core import Function, Op, Param, TensorType, Value
from ..ir.ops import attention_operands
from ..lower.errors import LoweringError
from .cpu_tiling import attention_schedule
from .kernel_cpu import ScheduleCpu, same_call

__all__ = ["attention_cpu"]


def attention_cpu(fn: Function, target, reference=None):
    """The CPU kernel of `fn` when it is a lone attention op the attention kind takes (a
    kernel_cpu.ScheduleCpu, or `_OnHost` around one for the adapted forms; `_PerShape` for symbolic
    sizes, which runs `reference(inputs)` -> results for shapes the kind refuses), else None."""
    ops = [op for op in fn.ops if op.name != "constant"]
    if len(ops) != 1 or ops[0].name != "attention" or tuple(fn.results) != tuple(ops[0].results):
        return None
    params = {id(p.value) for p in fn.params}
    if any(id(v) not in params for v in ops[0].operands) or any(p.kind != "tensor" for p in fn.params):
        return None
    if not all(isinstance(d, int) for p in fn.params for d in p.value.shape):
        return None if reference is None else _PerShape(fn, target, reference)
    return _static(fn, ops[0], target)


def _static(fn: Function, op: Op, target):
    """`attention_cpu` of a kernel of static sizes."""
    host = _host_form(fn, op)
    try:
        sched = attention_schedule(host, target)
        cpu = ScheduleCpu(sched, sched.tiling({}, target))
    except (FusedslError, LoweringError):
        return None
    return cpu if host is fn else _OnHost(cpu, fn, host)


def _host_form(fn: Function, op: Op) -> Function:
    """`fn` with its bfloat16 operands and result float32 and a mask broadcast over the keys given
    its key axis (module doc); `fn` itself when neither applies."""
    _, k, _, mask, _, _ = attention_operands(op)
    keys = k.shape[-3] if op.attr("layout", "bhsd") == "bshd" else k.shape[-2]
    new: dict[int, Value] = {}
    for v in op.operands:
        shape, dtype = tuple(v.shape), v.dtype
        if v is mask and shape and shape[-1] == 1 and keys != 1:
            shape = shape[:-1] + (keys,)
        if dtype == dt.bfloat16:
            dtype = dt.float32
        if (shape, dtype) != (tuple(v.shape), v.dtype):
            new[id(v)] = Value(TensorType(shape, dtype), v.name)
    result = op.results[0]
    if result.dtype == dt.bfloat16:
        new[id(result)] = Value(TensorType(tuple(result.shape), dt.float32), result.name)
    if not new:
        return fn
    host_op = Op(op.name, tuple(new.get(id(v), v) for v in op.operands), (new.get(id(result), result),), op.attrs,
                 op.loc)
    params = tuple(Param(new[id(p.value)], p.kind) if id(p.value) in new else p for p in fn.params)
    ops = tuple(host_op if o is op else o for o in fn.ops)
    return Function(fn.name, params, ops, host_op.results, fn.loc)


def _with_shapes(fn: Function, shapes, out_shape) -> Function:
    """`fn` (a lone attention op on its parameters) with its parameters of `shapes` and its result of
    `out_shape`."""
    op = next(o for o in fn.ops if o.name == "attention")
    new = {id(p.value): Value(TensorType(tuple(shape), p.value.dtype), p.value.name)
           for p, shape in zip(fn.params, shapes)}
    result = Value(TensorType(tuple(out_shape), op.results[0].dtype), op.results[0].name)
    static = Op(op.name, tuple(new[id(v)] for v in op.operands), (result,), op.attrs, op.loc)
    params = tuple(Param(new[id(p.value)], p.kind) for p in fn.params)
    return Function(fn.name, params, tuple(static if o is op else o for o in fn.ops), (result,), fn.loc)


class _PerShape:
    """A kernel of symbolic sizes (kernel_cpu.ScheduleCpu's interface): each call's shapes scheduled
    and compiled once (the last MAX_SHAPES kept), the numpy reference for shapes the kind refuses."""

    MAX_SHAPES = 16

    def __init__(self, fn: Function, target, reference):
        self.fn, self.target, self.reference = fn, target, reference
        self.kernels: dict = {}

    def kernel(self, inputs, outputs):
        key = tuple(np.shape(x) for x in inputs) + (np.shape(outputs[0]),)
        if key not in self.kernels:
            if len(self.kernels) >= self.MAX_SHAPES:
                self.kernels.clear()
            static = _with_shapes(self.fn, key[:-1], key[-1])
            self.kernels[key] = _static(static, next(o for o in static.ops if o.name == "attention"), self.target)
        return self.kernels[key]

    def bind(self, inputs, outputs, tiling=None):
        cpu = self.kernel(inputs, outputs)
        if cpu is not None:
            return cpu.bind(inputs, outputs)
        target, reference = outputs[0], self.reference

        def call() -> None:
            np.copyto(target, reference(inputs)[0], casting="unsafe")
        call.outputs = tuple(outputs)
        return call

    def run(self, inputs, outputs, tiling=None) -> None:
        cpu = self.kernel(inputs, outputs)
        if cpu is None:
            self.bind(inputs, outputs)()
        else:
            cpu.run(inputs, outputs)

    def bound_outputs(self) -> tuple:
        return ()


class _OnHost:
    """A ScheduleCpu of `_host_form(fn)` run on `fn`'s arrays (kernel_cpu.ScheduleCpu's interface):
    each changed operand is converted into a kept buffer of its host form before every launch, a
    float32 result rounded into the output after it."""

    def __init__(self, cpu: ScheduleCpu, fn: Function, host: Function):
        self.cpu, self.sched, self.tiling = cpu, cpu.sched, cpu.tiling
        self.kernel = cpu.kernel
        self.host = [(p.value.shape, p.value.dtype.np) if p.value is not q.value else None
                     for p, q in zip(host.params, fn.params)]
        self.result = (tuple(host.results[0].shape), host.results[0].dtype.np) \
            if host.results[0] is not fn.results[0] else None
        self._last = None   # (inputs, call)

    def bind(self, inputs, outputs, tiling=None):
        bufs = [None if form is None else np.empty(*form) for form in self.host]
        out = outputs[0] if self.result is None else np.empty(*self.result)
        launch = self.cpu.bind([x if b is None else b for x, b in zip(inputs, bufs)], [out])
        pairs = [(b, x) for x, b in zip(inputs, bufs) if b is not None]
        target = outputs[0]

        def call() -> None:
            for b, x in pairs:   # widened / broadcast as numpy does
                np.copyto(b, np.broadcast_to(np.asarray(x), b.shape), casting="unsafe")
            launch()
            if out is not target:   # rounded once to the result dtype
                np.copyto(target, out, casting="unsafe")
        call.keep, call.outputs = (launch, bufs, out), tuple(outputs)
        return call

    def run(self, inputs, outputs, tiling=None) -> None:
        last = self._last
        if last is None or not same_call(last[0], last[1], inputs, outputs, frozenset()):
            self._last = None
            last = self._last = (tuple(inputs), self.bind(inputs, outputs))
        last[1]()

    def bound_outputs(self) -> tuple:
        return () if self._last is None else self._last[1].outputs
