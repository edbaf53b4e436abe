"""Fold a chain of per-channel scales and shifts after a convolution or matmul into one scale
and one shift, applied in the cube kernel's epilogue.

Inference batch norm traces to `(y - mean) * (rsqrt(var + eps) * gamma) + beta` with every
operand except `y` a per-channel tensor.  When `y` is a conv2d (channels on axis 1) or a
2-D matmul (channels = columns) and the chain of per-channel add/sub/mul ops is its only
user, then

    ((y - mean) * s1 + b1) * s2 + ...  ==  y * s + t

with s and t per-channel vectors computed from the chain's operands: each element of the
cube's result sees one multiply and one add, and the ops computing s and t work on
per-channel values only (the cube kernel's epilogue computes them per tile row). The weights
are not touched: scaling them (conv(x, w * s)) would make a kernel of its own for `w * s`,
since weights are runtime tensors; this way conv + batch norm (+ ReLU) is ONE cube kernel.
The conv's own bias add is part of the chain and ends up in `t`.

Before: any valid IR.  After: valid IR computing the same values (up to the rounding of the
reassociated product).  A chain with no per-channel multiplication is left alone (it already
is a bias add, or a scale by one number the epilogue applies as it is), and so is a chain of
one op.
"""
from __future__ import annotations

from ..ir.core import Function, Module, Op, TensorType, Value, freeze_attrs
from ..ir.ops import infer_types
from .base import Pass, Rewriter, has_op

_AFFINE = ("add", "sub", "mul")


def _channel_axis(op: Op) -> int | None:
    """Axis of the cube op's result that indexes output channels, or None if not foldable."""
    if op.name == "conv2d":
        return 1
    if op.name == "matmul" and op.operands[0].type.rank == 2 and op.operands[1].type.rank == 2:
        return 1
    return None


def _per_channel(p: Value, out: TensorType, axis: int) -> bool:
    """`p` broadcasts against `out` along the channel axis only, without changing dtype."""
    if p.dtype != out.dtype or p.type.rank > out.rank:
        return False
    shape = (1,) * (out.rank - p.type.rank) + tuple(p.shape)
    channels = out.shape[axis]
    return all(d == 1 or (i == axis and d == channels) for i, d in enumerate(shape))


def _elements(shape) -> int | None:
    n = 1
    for d in shape:
        if not isinstance(d, int):
            return None
        n *= d
    return n


def _is_scalar(v: Value) -> bool:
    return all(d == 1 for d in v.shape)


def _uses(fn: Function) -> dict[int, list[Op]]:
    uses: dict[int, list[Op]] = {}
    for op in fn.ops:
        for v in op.operands:
            uses.setdefault(id(v), []).append(op)
    for v in fn.results:
        uses.setdefault(id(v), []).append(None)
    return uses


def _chain(cube: Op, uses: dict[int, list[Op]]) -> list[tuple[Op, Value]]:
    """The per-channel add/sub/mul ops applied to the cube op's result, each the single user
    of the previous value, as (op, per-channel operand) pairs."""
    axis = _channel_axis(cube)
    if axis is None:
        return []
    chain = []
    cur = cube.result
    while True:
        users = uses.get(id(cur), [])
        if len(users) != 1 or users[0] is None or users[0].name not in _AFFINE:
            return chain
        op = users[0]
        a, b = op.operands
        if op.name == "sub" and a is not cur:      # p - y flips the sign: not an affine step we fold
            return chain
        if a is b:
            return chain
        p = b if a is cur else a
        if op.result.type != cur.type or not _per_channel(p, cur.type, axis):
            return chain
        chain.append((op, p))
        cur = op.result


class FoldBatchNorm(Pass):
    """conv2d / 2-D matmul followed by per-channel scale and shift -> scaled weights + bias."""

    name = "fold-batch-norm"

    def run_on_function(self, fn: Function, module: Module) -> Function:
        if not has_op(fn, "conv2d", "matmul"):
            return fn   # every fold starts at a conv2d or matmul
        uses = _uses(fn)
        plans: dict[int, tuple[Op, list[tuple[Op, Value]]]] = {}   # id(last chain op) -> plan
        skipped: set[int] = set()
        for op in fn.ops:
            chain = _chain(op, uses) if op.name in ("conv2d", "matmul") else []
            # a scale by one number stays in the cube kernel's epilogue (a Muls per C tile row):
            # moving it onto the weights would cost a kernel (x @ w.T * 2.0, q @ k.T * 0.125)
            if not any(step.name == "mul" and not _is_scalar(p) for step, p in chain):
                continue
            if len(chain) < 2:   # one scale or shift is already the short form
                continue
            plans[id(chain[-1][0])] = (op, chain)
            skipped.update(id(step) for step, _ in chain[:-1])
        if not plans:
            return fn
        rw = Rewriter()
        for op in fn.ops:
            if id(op) in skipped:
                continue
            plan = plans.get(id(op))
            if plan is None:
                rw.emit(op)
                continue
            rw.replace(op.result, self._fold(rw, *plan))
        return rw.function(fn)

    @staticmethod
    def _fold(rw: Rewriter, cube: Op, chain: list[tuple[Op, Value]]) -> Value:
        # Emitted where the chain ends: every per-channel operand is defined by then.
        loc = chain[-1][0].loc

        def emit(name, operands, attrs=None, at=loc):
            operands = tuple(rw.get(v) for v in operands)
            frozen = freeze_attrs(attrs or {})
            types = infer_types(name, tuple(v.type for v in operands), dict(frozen))
            op = Op(name, operands, tuple(Value(t) for t in types), frozen, at)
            rw.ops.append(op)
            return op.result

        scale = shift = None
        for step, p in chain:
            if step.name == "mul":
                scale = p if scale is None else emit("mul", (scale, p), at=step.loc)
                shift = None if shift is None else emit("mul", (shift, p), at=step.loc)
            elif step.name == "add":
                shift = p if shift is None else emit("add", (shift, p), at=step.loc)
            else:
                shift = emit("neg", (p,), at=step.loc) if shift is None else emit("sub", (shift, p), at=step.loc)
        out = cube.result.type
        channels = out.shape[1]
        per_channel = (1, channels, 1, 1) if cube.name == "conv2d" else (1, channels)
        if tuple(rw.get(scale).shape) != per_channel:
            # a [C] scale is a reshape (a free view), a size-1 one a broadcast
            same = _elements(rw.get(scale).shape) == channels
            scale = emit("reshape" if same else "broadcast_to", (scale,), {"shape": list(per_channel)})
        # the cube op itself is kept (rw emitted it): its result is scaled and shifted once
        y = emit("mul", (cube.result, scale))
        return y if shift is None else emit("add", (y, shift))
