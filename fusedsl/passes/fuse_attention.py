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
from .base import Pass, has_op

MISS = "FS115"


class _Miss(Exception):
    """The chain is softmax(...) @ v but not an attention op; the message says why."""


class FuseAttention(Pass):
    name = "attention-fusion"

    def __init__(self):
        self.misses: dict[int, str] = {}   # id(P @ V result) -> "FS115 <why>"

    def run_on_function(self, fn: Function, module: Module) -> Function:
        if not has_op(fn, "matmul"):
            return fn   # the match starts at P @ V: nothing to fuse, no miss to record
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
        if not has_op(fn, "attention"):
            return fn   # it rewrites attention ops only
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


class FoldAttentionRope(Pass):
    """Pass `attention-rope`: attention(rope(xq, cos, sin), rope(xk, cos, sin), v, ...) with both
    rotations of the same tables becomes attention(xq, xk, v, ..., cos, sin) {rope = true}: the
    attention kernel rotates q and k as it reads them, so the rotary embedding is no kernel of its
    own (and its transposes fold into the layout next).  rope(x, c, s) is either form:
    fs.rope's `x * c + concatenate([x2, x1]) * concatenate([-s1, s2])` or the rotate-half of
    PyTorch models, `x * c + concatenate([-x2, x1]) * s` (x1, x2 the halves of x's last axis;
    mul and add in either operand order).  Only rotations read by nothing else fold.  Before:
    valid IR; after: valid IR, the same values up to rounding (the rotation is computed in float32
    inside the kernel where the chain rounds each op to its dtype)."""

    name = "attention-rope"

    def run_on_function(self, fn: Function, module: Module) -> Function:
        if not has_op(fn, "attention"):
            return fn   # it rewrites attention ops only
        producer = {id(r): op for op in fn.ops for r in op.results}
        users: dict[int, int] = {}
        for op in fn.ops:
            for v in op.operands:
                users[id(v)] = users.get(id(v), 0) + 1
        returned = {id(v) for v in fn.results}
        replace: dict[int, Op] = {}
        for op in fn.ops:
            if op.name != "attention" or op.attr("rope", False):
                continue
            found = [_rope_of(v, producer) for v in op.operands[:2]]
            if any(f is None for f in found) or any(users.get(id(v), 0) != 1 or id(v) in returned
                                                    for v in op.operands[:2]):
                continue
            (xq, cq, sq), (xk, ck, sk) = found
            if cq is not ck or sq is not sk:
                continue
            operands = (xq, xk) + tuple(op.operands[2:]) + (cq, sq)
            attrs = dict(op.attrs, rope=True)
            try:
                infer_types("attention", tuple(o.type for o in operands), attrs)
            except TypeRuleError:
                continue   # tables that do not broadcast to q and k as rows of positions
            replace[id(op)] = Op("attention", operands, op.results, freeze_attrs(attrs), op.loc)
        if not replace:
            return fn
        return Function(fn.name, fn.params, tuple(replace.get(id(op), op) for op in fn.ops), fn.results, fn.loc)


def _half_slice(op: Op | None, x: Value, first: bool) -> bool:
    """`op` is x[..., :D/2] (first) or x[..., D/2:] on x's last axis."""
    if op is None or op.name != "slice" or op.operands[0] is not x:
        return False
    d, n = x.shape[-1], x.type.rank
    if not isinstance(d, int) or d % 2:
        return False
    starts, stops, steps = (tuple(op.attr(a)) for a in ("starts", "stops", "steps"))
    lo, hi = (0, d // 2) if first else (d // 2, d)
    full = all(starts[i] == 0 and stops[i] == x.shape[i] and steps[i] == 1 for i in range(n - 1))
    return full and (starts[-1], stops[-1], steps[-1]) == (lo, hi, 1)


def _rope_of(v: Value, producer) -> tuple | None:
    """(x, cos, sin) when `v` is rope(x, cos, sin) in one of FoldAttentionRope's two forms."""
    def op(u, name):
        o = producer.get(id(u))
        return o if o is not None and o.name == name else None

    def halves(cat, x, neg_first):
        """cat = concatenate([x2, x1]) on the last axis (with x2 negated when neg_first)."""
        if cat is None or len(cat.operands) != 2 or cat.attr("axis") not in (-1, cat.result.type.rank - 1):
            return False
        a, b = cat.operands
        if neg_first:
            n = op(a, "neg")
            if n is None:
                return False
            a = n.operands[0]
        return _half_slice(producer.get(id(a)), x, False) and _half_slice(producer.get(id(b)), x, True)

    add = op(v, "add")
    if add is None:
        return None
    for m1, m2 in ((add.operands[0], add.operands[1]), (add.operands[1], add.operands[0])):
        direct, rotated = op(m1, "mul"), op(m2, "mul")
        if direct is None or rotated is None:
            continue
        for x, cos in (direct.operands, direct.operands[::-1]):
            if x.type != v.type:
                continue
            for rot, sin in (rotated.operands, rotated.operands[::-1]):
                cat = op(rot, "concatenate")
                if halves(cat, x, neg_first=True):            # PyTorch: concatenate([-x2, x1]) * sin
                    return x, cos, sin
                if halves(cat, x, neg_first=False):           # fs.rope: ... * concatenate([-s1, s2])
                    signed = op(sin, "concatenate")
                    if signed is None or len(signed.operands) != 2:
                        continue
                    n = op(signed.operands[0], "neg")
                    table = producer.get(id(n.operands[0])) if n is not None else None
                    if table is None or table.name != "slice":
                        continue
                    s = table.operands[0]
                    if s.type.shape[-1] == x.shape[-1] and _half_slice(table, s, True) and \
                            _half_slice(producer.get(id(signed.operands[1])), s, False):
                        return x, cos, s
    return None


class FoldAttentionHeads(Pass):
    """Pass `attention-heads`: a bshd attention whose q, k and v are the three slices of one
    linear layer's output (`qkv.split(d, -1)` then `view(b, t, h, dh)`: reshape(slice(x)) on the
    last axis) reads them where they lie: its operands become x viewed as [B, S, 3H, dh] (a
    reshape of a contiguous tensor, a free view) with `q_heads`, `k_heads`, `v_heads` naming each
    one's heads, so the three slice kernels (copies) go.  All three must be views of the same x
    with one head size.  Before: valid IR; after: valid IR, the same values."""

    name = "attention-heads"

    def run_on_function(self, fn: Function, module: Module) -> Function:
        if not has_op(fn, "attention"):
            return fn   # it rewrites attention ops only
        producer = {id(r): op for op in fn.ops for r in op.results}
        before: dict[int, Op] = {}
        replace: dict[int, Op] = {}
        for op in fn.ops:
            if op.name != "attention" or op.attr("layout", "bhsd") != "bshd" or op.attr("q_heads") is not None:
                continue
            views = [_heads_of(v, producer) for v in op.operands[:3]]
            if any(w is None for w in views) or len({id(w[0]) for w in views}) != 1 or \
                    len({w[2] for w in views}) != 1:
                continue
            x, _, dh = views[0]
            total = x.shape[-1] // dh
            x4 = Value(TensorType(tuple(x.shape[:-1]) + (total, dh), x.dtype))
            reshape = Op("reshape", (x,), (x4,), freeze_attrs({"shape": list(x4.shape)}), op.loc)
            attrs = dict(op.attrs)
            for (_, h0, _), v, n in zip(views, op.operands[:3], "qkv"):
                attrs[f"{n}_heads"] = [h0, h0 + v.shape[-2]]
            operands = (x4, x4, x4) + tuple(op.operands[3:])
            try:
                (out,) = infer_types("attention", tuple(o.type for o in operands), attrs)
            except TypeRuleError:
                continue
            if out != op.result.type:
                continue
            before[id(op)] = reshape
            replace[id(op)] = Op("attention", operands, op.results, freeze_attrs(attrs), op.loc)
        if not replace:
            return fn
        ops = []
        for op in fn.ops:
            if id(op) in before:
                ops.append(before[id(op)])
            ops.append(replace.get(id(op), op))
        return Function(fn.name, fn.params, tuple(ops), fn.results, fn.loc)


def _heads_of(v: Value, producer) -> tuple | None:
    """(x, first head, head size) when v = reshape(slice(x)) takes whole heads of x's last axis:
    x [B, S, N], the slice columns [a, a + H * dh) with a a multiple of dh, v [B, S, H, dh]."""
    r = producer.get(id(v))
    if r is None or r.name != "reshape" or v.type.rank != 4:
        return None
    s = producer.get(id(r.operands[0]))
    if s is None or s.name != "slice":
        return None
    x = s.operands[0]
    b, t, h, dh = v.shape
    if x.type.rank != 3 or tuple(x.shape[:2]) != (b, t) or not all(isinstance(d, int) for d in x.shape):
        return None
    starts, stops, steps = (tuple(s.attr(a)) for a in ("starts", "stops", "steps"))
    if starts[:2] != (0, 0) or stops[:2] != (b, t) or set(steps) != {1}:
        return None
    if starts[2] % dh or stops[2] - starts[2] != h * dh or x.shape[2] % dh:
        return None
    return x, starts[2] // dh, dh
