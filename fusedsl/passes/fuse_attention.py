"""Pass `attention-fusion`: `softmax(q @ k^T * s + mask) @ v` becomes one `attention` op.

Before (what `fs.softmax(q @ fs.transpose(k, ...) * s + mask) @ v` traces to, after
fold-transpose):

    %s = matmul(%q, %k) {transpose_b = true}      scores
    %x = mul(%s, 0.125)                           or div(%s, 8), or the scale on q: mul(%q, c)
    %y = add(%x, %mask)                           or where(%m, %x, -inf), where(%m, -inf, %x)
    %e = exp(sub(%y, max(%y) {axes = [last], keepdims}))
    %p = div(%e, sum(%e) {axes = [last], keepdims})
    %o = matmul(%p, %v)

After: `%o = attention(%q, %k, %v[, %mask]) {scale, causal = false}`, the same value (%o keeps
its identity, so its readers are untouched); the pattern's other ops are left for DCE.  The
scale is folded when it is a constant (a Python number); a boolean mask filled with -inf on
its True side is inverted (`eq(%m, false)`).  The rewrite changes rounding only: the
attention op keeps float32 softmax statistics where the unfused chain rounds each op to
its dtype.

A chain that is softmax(...) @ v but cannot be the attention op is left alone, and the
reason is recorded in `misses` (value id of the P @ V product -> "FS115 ..."): fuse gives
it to the kernel holding that product, so the report says why (the scores or weights are
read elsewhere, a finite mask fill, a tensor scale, the shapes SDPA does not take).  A
softmax of `x @ w` with w not read transposed is a layer of weights, not attention: no note.
"""
from __future__ import annotations

import math

from ..ir.core import Function, Module, Op, Value, TensorType, freeze_attrs
from ..ir.ops import infer_types
from ..ir.shapes import TypeRuleError
from .. import dtypes as dt
from .base import Pass

MISS = "FS115"


class _Miss(Exception):
    """The chain is softmax(...) @ v but not an attention op; the message says why."""


class FuseAttention(Pass):
    name = "attention-fusion"

    def __init__(self):
        self.misses: dict[int, str] = {}   # id(P @ V result) -> "FS115 <why>"

    def run_on_function(self, fn: Function, module: Module) -> Function:
        producer = {id(r): op for op in fn.ops for r in op.results}
        users: dict[int, list[Op]] = {}
        for op in fn.ops:
            for v in op.operands:
                users.setdefault(id(v), []).append(op)
        returned = {id(v) for v in fn.results}
        matcher = _Matcher(producer, users, returned)
        replaced: dict[int, list[Op]] = {}
        for op in fn.ops:
            if op.name != "matmul":
                continue
            try:
                new_ops = matcher.match(op)
            except _Miss as miss:
                self.misses[id(op.result)] = f"{MISS} softmax(q @ k^T) @ v is not one attention op: {miss}"
                continue
            if new_ops is not None:
                replaced[id(op)] = new_ops
        if not replaced:
            return fn
        ops = []
        for op in fn.ops:
            ops.extend(replaced.get(id(op), [op]))
        return Function(fn.name, fn.params, tuple(ops), fn.results, fn.loc)


class _Matcher:
    def __init__(self, producer, users, returned):
        self.producer = producer
        self.users = users
        self.returned = returned

    def _op(self, v: Value, name: str) -> Op | None:
        op = self.producer.get(id(v))
        return op if op is not None and op.name == name else None

    def _constant(self, v: Value):
        op = self._op(v, "constant")
        return op.attr("value") if op is not None and v.shape == () else None

    def _private(self, v: Value, inside: tuple[str, ...], what: str) -> None:
        """`v` is read only by the pattern's ops (named `inside`) and not returned."""
        if id(v) in self.returned:
            raise _Miss(f"the {what} are returned, so they are written to GM anyway")
        found = [o.name for o in self.users.get(id(v), [])]
        if len(found) != len(inside):
            extra = list(found)
            for name in inside:
                if name in extra:
                    extra.remove(name)
            raise _Miss(f"the {what} are also read by {', '.join(sorted(set(extra)))} outside the pattern")

    def _last_axis_reduce(self, v: Value, name: str, of: Value) -> bool:
        op = self._op(v, name)
        return (op is not None and op.operands[0] is of and bool(op.attr("keepdims"))
                and tuple(op.attr("axes")) == (of.type.rank - 1,))

    def match(self, pv: Op) -> list[Op] | None:
        """The ops replacing `pv` (the last one the attention op), None when `pv` is not
        softmax(q @ k^T ...) @ v; raises _Miss when it is, but cannot be the attention op."""
        p, v = pv.operands
        div = self._op(p, "div")
        if div is None or pv.attr("transpose_a", False):
            return None
        e, total = div.operands
        exp = self._op(e, "exp")
        sub = self._op(exp.operands[0], "sub") if exp is not None else None
        if sub is None or self._op(total, "sum") is None or self._op(sub.operands[1], "max") is None:
            return None
        x, top = sub.operands
        scores, mask, fill = self._mask(x)
        found = self._scale(scores)
        if found is None:
            return None   # a softmax, but not of q @ k^T: not attention
        qk, scale, scale_op = found
        k_scaled = self._scaled_transposed_k(qk)
        if qk.attr("transpose_a", False) or (not qk.attr("transpose_b", False) and k_scaled is None):
            # softmax(x @ w) @ u with w not a transposed operand: the same algebra, but a
            # layer of weights, not keys; it stays a matmul kernel without a note
            return None
        # from here on it is attention-shaped: every refusal says why
        if not (self._last_axis_reduce(top, "max", x) and self._last_axis_reduce(total, "sum", e)):
            raise _Miss("the softmax is not over the last (key) axis")
        if pv.attr("transpose_b", False):
            raise _Miss("v is read transposed (p @ v.T); attention takes v as [..., S, Dv]")
        if fill is not None and not (isinstance(fill, float) and math.isinf(fill) and fill < 0):
            raise _Miss(f"the masked scores are filled with {fill}, not -inf: only a -inf fill "
                        "(or an additive mask) is attention's mask")
        if scale is None:
            raise _Miss("the scores are scaled by a tensor, not a constant (the attention op's scale is a number)")
        masking = self.producer[id(x)].name if scores is not x else None
        self._private(p, ("matmul",), "attention weights (softmax result)")
        self._private(e, ("sum", "div"), "exponentials of the scores")
        self._private(top, ("sub",), "row maxima of the scores")
        self._private(total, ("div",), "row sums of the exponentials")
        self._private(sub.result, ("exp",), "shifted scores")
        self._private(x, ("max", "sub"), "scores")
        if scores is not x:
            self._private(scores, (masking,), "scaled scores")
        if scale_op is not None:
            self._private(qk.result, (scale_op.name,), "raw scores q @ k^T")
        new_ops: list[Op] = []
        if fill is not None and mask is not None and mask[1]:   # where(m, -inf, s): attend where m is False
            false = Value(TensorType((), dt.bool_))
            inverted = Value(TensorType(mask[0].shape, dt.bool_))
            new_ops.append(Op("constant", (), (false,), freeze_attrs({"value": False, "dtype": "bool"}), pv.loc))
            new_ops.append(Op("eq", (mask[0], false), (inverted,), (), pv.loc))
            mask = (inverted, False)
        q, k = qk.operands
        if k_scaled is not None:   # fold-batch-norm moved the scale onto k^T: q @ (k^T * c)
            k, c = k_scaled
            scale = scale * c
        scaled_q = self._op(q, "mul")
        if scaled_q is not None and len(self.users.get(id(q), [])) == 1 and id(q) not in self.returned:
            for i in (0, 1):   # the scale folded into q: (q * c) @ k^T
                c = self._number(scaled_q.operands[i])
                if c is not None:
                    q, scale = scaled_q.operands[1 - i], scale * c
                    break
        operands = [q, k, v] + ([mask[0]] if mask is not None else [])
        attrs = {"scale": float(scale), "causal": False}
        try:
            (out,) = infer_types("attention", tuple(o.type for o in operands), attrs)
        except TypeRuleError as exc:
            raise _Miss(exc.message) from None
        if out != pv.result.type:
            raise _Miss(f"the attention result would be {out}, the product is {pv.result.type}")
        new_ops.append(Op("attention", tuple(operands), pv.results, freeze_attrs(attrs), pv.loc))
        return new_ops

    def _number(self, v: Value) -> float | None:
        """The value of a 0-d constant, also seen through a broadcast_to."""
        spread = self._op(v, "broadcast_to")
        c = self._constant(spread.operands[0] if spread is not None else v)
        return float(c) if isinstance(c, (int, float)) and not isinstance(c, bool) else None

    def _scaled_transposed_k(self, qk: Op):
        """(k, c) when the scores are q @ (transpose(k) * c): fold-batch-norm folds a constant
        scale of a matmul result into its right operand, before fold-transpose sees it."""
        if qk.attr("transpose_b", False) or qk.attr("transpose_a", False):
            return None
        mul = self._op(qk.operands[1], "mul")
        if mul is None or len(self.users.get(id(mul.result), [])) != 1:
            return None
        for i in (0, 1):
            t, c = self._op(mul.operands[i], "transpose"), self._number(mul.operands[1 - i])
            if t is None or c is None:
                continue
            perm, n = tuple(t.attr("perm")), t.result.type.rank
            if n >= 2 and perm == tuple(range(n - 2)) + (n - 1, n - 2):
                return t.operands[0], c
        return None

    def _mask(self, x: Value):
        """(the scores before masking, (mask, inverted) or None, the where's fill or None)."""
        add = self._op(x, "add")
        if add is not None:
            for i in (0, 1):
                if self._scores_like(add.operands[i]):
                    return add.operands[i], (add.operands[1 - i], False), None
            return x, None, None
        where = self._op(x, "where")
        if where is None:
            return x, None, None
        cond, a, b = where.operands
        for inverted, scores, fill in ((False, a, b), (True, b, a)):
            if self._scores_like(scores):
                value = self._constant(fill)
                return scores, (cond, inverted), (value if value is not None else "a tensor")
        return x, None, None

    def _scores_like(self, v: Value) -> bool:
        """`v` is q @ k^T, possibly times / over something."""
        for name in ("mul", "div"):
            op = self._op(v, name)
            if op is not None:
                return any(self._op(o, "matmul") is not None for o in op.operands)
        return self._op(v, "matmul") is not None

    def _scale(self, scores: Value):
        """(the q @ k^T matmul, its constant scale or None for a tensor scale, the scaling op
        or None), or None when the softmax input is not a matmul's result."""
        qk = self._op(scores, "matmul")
        if qk is not None:
            return qk, 1.0, None
        for name in ("mul", "div"):
            op = self._op(scores, name)
            if op is None:
                continue
            for i in ((0, 1) if name == "mul" else (0,)):
                qk = self._op(op.operands[i], "matmul")
                if qk is None:
                    continue
                c = self._number(op.operands[1 - i])
                if c is None or (name == "div" and c == 0):
                    return qk, None, op
                return qk, (c if name == "mul" else 1.0 / c), op
        return None


def _heads_swap(op: Op | None) -> bool:
    return op is not None and op.name == "transpose" and tuple(op.attr("perm")) == (0, 2, 1, 3)


class FoldAttentionLayout(Pass):
    """Pass `attention-layout`: attention(transpose(q), transpose(k), transpose(v)) whose result is
    only transposed back, every transpose swapping axes 1 and 2 of a rank-4 tensor (a model's
    `view(b, t, h, d).transpose(1, 2)` heads), reads q, k, v as [B, S, H, D] and writes its result
    so (`layout = "bshd"`): the four transpose kernels go, the attention kernel addresses the rows
    with the heads' stride.  Before: valid IR; after: valid IR, the same values (the back
    transpose's result is now the attention op's)."""

    name = "attention-layout"

    def run_on_function(self, fn: Function, module: Module) -> Function:
        producer = {id(r): op for op in fn.ops for r in op.results}
        users: dict[int, list[Op]] = {}
        for op in fn.ops:
            for v in op.operands:
                users.setdefault(id(v), []).append(op)
        returned = {id(v) for v in fn.results}
        replace: dict[int, Op | None] = {}
        for op in fn.ops:
            if op.name != "attention" or op.attr("layout", "bhsd") != "bhsd" or op.result.type.rank != 4:
                continue
            ins = [producer.get(id(v)) for v in op.operands[:3]]
            out_users = users.get(id(op.result), [])
            if not all(_heads_swap(p) for p in ins) or id(op.result) in returned or len(out_users) != 1 \
                    or not _heads_swap(out_users[0]):
                continue
            back = out_users[0]
            attrs = dict(op.attrs, layout="bshd")
            operands = tuple(p.operands[0] for p in ins) + tuple(op.operands[3:])
            replace[id(op)] = Op("attention", operands, back.results, freeze_attrs(attrs), op.loc)
            replace[id(back)] = None
        if not replace:
            return fn
        ops = [replace.get(id(op), op) for op in fn.ops]
        return Function(fn.name, fn.params, tuple(op for op in ops if op is not None), fn.results, fn.loc)
