"""Pass `fold-transpose`: a matmul operand that is a transpose of its last two axes is read
transposed instead (`transpose_a` / `transpose_b` on the matmul).

Before: `%t = transpose(%w) {perm = [1, 0]}; %y = matmul(%x, %t)` (the linear layer `x @ w.T`,
what the PyTorch and ONNX importers produce for nn.Linear / Gemm(transB=1)).
After: `%y = matmul(%x, %w) {transpose_b = true}`, the same values; the transpose is left for
its other readers and removed by DCE when it has none. The cube kernel then reads w in place
(the Matmul API's isTrans operand) instead of a transpose kernel writing w.T to GM first.
"""
from __future__ import annotations

from ..ir.core import Function, Module, Op, freeze_attrs
from .canonicalize import LocalRewrite


def _swaps_last_two(op: Op) -> bool:
    if op is None or op.name != "transpose":
        return False
    perm = tuple(op.attr("perm"))
    n = len(perm)
    return n >= 2 and perm == tuple(range(n - 2)) + (n - 1, n - 2)


class FoldTranspose(LocalRewrite):
    name = "fold-transpose"

    def run_on_function(self, fn: Function, module: Module) -> Function:
        if not any(op.name == "transpose" for op in fn.ops):
            return fn   # no matmul operand can be a transpose: nothing to fold
        return super().run_on_function(fn, module)

    def rewrite(self, op: Op, operands, producers):
        if op.name != "matmul":
            return None
        attrs = dict(op.attrs)
        new = list(operands)
        changed = False
        for i, key in ((0, "transpose_a"), (1, "transpose_b")):
            src = producers.get(id(operands[i]))
            if _swaps_last_two(src):
                new[i] = src.operands[0]
                attrs[key] = not attrs.get(key, False)
                changed = True
        if not changed:
            return None
        for key in ("transpose_a", "transpose_b"):
            if not attrs.get(key, True):
                del attrs[key]   # a flag folded twice is off again: keep the text form minimal
        return Op(op.name, tuple(new), op.results, freeze_attrs(attrs), op.loc)
