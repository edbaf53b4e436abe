"""Fusion: partition the entry function into kernels (one Function each) called from main.

Before: one entry function of graph ops.  After: a module whose last function (main)
holds only `call`s, `reshape` views and constants; every other function is a kernel.

Rules (why each boundary exists is recorded in `KernelInfo.reason`):
- Elementwise ops (including casts, comparisons, where) and broadcast_to fuse: an op
  joins the group of a producer unless that would create a cycle through an op outside
  the group.  Inside a group every value is evaluated in the group's iteration space;
  a smaller operand (a row vector, a scalar) is broadcast when it is loaded, because
  elementwise ops commute with broadcasting.
- A group's results used outside it are its outputs.  Outputs of different shapes
  become different kernels; each kernel takes the ancestors of its outputs inside
  the group (small shared producers are recomputed rather than written to GM).
- `reshape` of a contiguous tensor is a free view: it stays in main, between kernels.
- Every other op (reductions, matmul, conv2d, transpose, slice, concatenate) is a
  kernel of its own for now.
- `single_kernel=True` turns any boundary into a ScheduleError naming the op.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ScheduleError
from ..ir.core import Function, Module, Op, Param, TensorType, Value
from ..ir.ops import BROADCAST, CALL, CONSTANT, ELEMENTWISE, SHAPE, has_trait
from .base import Pass


def is_vector_op(op: Op) -> bool:
    return has_trait(op, ELEMENTWISE) or (has_trait(op, BROADCAST) and has_trait(op, SHAPE))


def is_view_op(op: Op) -> bool:
    return op.name == "reshape"


@dataclass(frozen=True)
class KernelInfo:
    name: str
    kind: str       # "vector" | "single"
    reason: str     # why this kernel is separate from its neighbours


class Fuse(Pass):
    """Partition into kernels.  `infos` maps kernel name -> KernelInfo after `run`."""

    name = "fuse"

    def __init__(self, single_kernel: bool = False, max_queues: int | None = None):
        self.single_kernel = single_kernel
        self.max_queues = max_queues   # queue buffers one position may hold (the target's limit)
        self.infos: dict[str, KernelInfo] = {}

    def run(self, module: Module) -> Module:
        fn = module.main
        groups = self._group(fn)
        kernels = self._split_by_shape(fn, groups)
        if self.single_kernel and len(kernels) > 1:
            self._refuse(fn, kernels)
        return self._build(module, fn, kernels)

    # ---- grouping -------------------------------------------------------------------
    def _group(self, fn: Function) -> list[list[int]]:
        producer = {id(r): i for i, op in enumerate(fn.ops) for r in op.results}
        ancestors: list[int] = []  # bitmask of ancestor op indices per op
        group_of: dict[int, int] = {}
        members: dict[int, int] = {}  # group id -> bitmask of member ops
        for i, op in enumerate(fn.ops):
            mask = 0
            for v in op.operands:
                p = producer.get(id(v))
                if p is not None:
                    mask |= ancestors[p] | (1 << p)
            ancestors.append(mask)
            if not is_vector_op(op):
                continue
            gid, cur = i, 1 << i
            for v in op.operands:
                p = producer.get(id(v))
                if p is None or p not in group_of or group_of[p] == gid:
                    continue
                other = group_of[p]
                if self._legal(members[other], cur, ancestors):
                    cur |= members.pop(other)
                    for j in _bits(cur):
                        group_of[j] = gid
            members[gid] = cur
            group_of[i] = gid
        return self._merge_siblings(fn, members, ancestors, producer)

    def _merge_siblings(self, fn, members, ancestors, producer) -> list[list[int]]:
        """Horizontal fusion: independent groups with one iteration shape that read a common
        input share its loads (or, with single_kernel, are asked to be one kernel)."""
        groups = [m for _, m in sorted(members.items())]

        def shape(m):
            return max((fn.ops[i].result.shape for i in _bits(m)), key=len)

        def inputs(m):
            ids = set()
            for i in _bits(m):
                for v in fn.ops[i].operands:
                    p = producer.get(id(v))
                    if p is None or not (m >> p) & 1:
                        ids.add(id(v))
            return ids

        merged = True
        while merged:
            merged = False
            for a in range(len(groups)):
                for b in range(a + 1, len(groups)):
                    ga, gb = groups[a], groups[b]
                    if shape(ga) != shape(gb):
                        continue
                    if not (self.single_kernel or inputs(ga) & inputs(gb)):
                        continue
                    if self._legal(ga, gb, ancestors) and self._legal(gb, ga, ancestors):
                        groups[a] = ga | gb
                        del groups[b]
                        merged = True
                        break
                if merged:
                    break
        return [list(_bits(m)) for m in groups]

    @staticmethod
    def _legal(g: int, cur: int, ancestors: list[int]) -> bool:
        """No op outside g|cur lies on a path from g to cur (that would be a cycle)."""
        union = g | cur
        between = 0
        for j in _bits(cur):
            between |= ancestors[j]
        for y in _bits(between & ~union):
            if ancestors[y] & g:
                return False
        return True

    def _split_by_shape(self, fn: Function, groups) -> list[tuple]:
        used_outside: dict[int, bool] = {}
        producer = {id(r): i for i, op in enumerate(fn.ops) for r in op.results}
        group_id = {i: g for g, ops in enumerate(groups) for i in ops}
        returned = {id(v) for v in fn.results}
        for i, op in enumerate(fn.ops):
            for v in op.operands:
                p = producer.get(id(v))
                if p is not None and group_id.get(p) != group_id.get(i):
                    used_outside[p] = True
        kernels: list[tuple] = []
        covered: set[int] = set()
        for g, ops in enumerate(groups):
            outs = [i for i in ops if used_outside.get(i) or any(id(r) in returned for r in fn.ops[i].results)]
            outs = [i for i in outs if not has_trait(fn.ops[i], CONSTANT)]
            shapes: dict[tuple, list[int]] = {}
            for i in outs:
                shapes.setdefault(fn.ops[i].result.shape, []).append(i)
            for shape, roots in shapes.items():
                chunks = self._chunk_by_queues(fn, roots, set(ops), producer)
                for chunk in chunks:
                    closure = self._ancestors_within(fn, chunk, set(ops), producer)
                    reason = "elementwise/broadcast chain fused into one vector kernel"
                    if len(shapes) > 1:
                        reason += f"; split from the rest of its group because its outputs have shape {shape}"
                    if len(chunks) > 1:
                        reason += (f"; split so that no queue position needs more than {self.max_queues} "
                                   "buffers (the chip's limit)")
                    kernels.append((sorted(closure), "vector", reason, chunk))
                    covered.update(closure)
        for i, op in enumerate(fn.ops):
            if i in covered or is_vector_op(op) or is_view_op(op) or has_trait(op, CONSTANT):
                continue
            kernels.append(([i], "single", f"{op.name} is not fused with vector ops yet (own kernel)", [i]))
        return kernels

    def _chunk_by_queues(self, fn, roots, allowed, producer) -> list[list[int]]:
        """Group outputs so each kernel has at most `max_queues` GM inputs and outputs
        (each takes a queue on VECIN/VECOUT); shared inputs keep outputs together."""
        if self.max_queues is None:
            return [roots]
        chunks: list[tuple[list[int], set[int]]] = []
        for r in roots:
            closure = self._ancestors_within(fn, [r], allowed, producer)
            ins = {id(v) for i in closure for v in fn.ops[i].operands
                   if producer.get(id(v)) not in closure and v.shape != ()
                   and not (producer.get(id(v)) is not None and has_trait(fn.ops[producer[id(v)]], CONSTANT))}
            for members, inputs in chunks:
                if len(members) < self.max_queues and len(inputs | ins) <= self.max_queues:
                    members.append(r)
                    inputs |= ins
                    break
            else:
                chunks.append(([r], ins))
        return [m for m, _ in chunks]

    @staticmethod
    def _ancestors_within(fn, roots, allowed, producer) -> set[int]:
        seen: set[int] = set()
        stack = list(roots)
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            for v in fn.ops[i].operands:
                p = producer.get(id(v))
                if p is not None and p in allowed:
                    stack.append(p)
        return seen

    def _refuse(self, fn: Function, kernels) -> None:
        first_single = next((k for k in kernels if k[1] == "single"), kernels[1])
        op = fn.ops[first_single[0][0]]
        raise ScheduleError(f"single_kernel=True, but the function needs {len(kernels)} kernels: "
                            f"{first_single[2]}", loc=op.loc,
                            hint="drop single_kernel=True, or restructure so that the ops fuse")

    # ---- building the module ---------------------------------------------------------
    def _build(self, module: Module, fn: Function, kernels) -> Module:
        producer = {id(r): (i, op) for i, op in enumerate(fn.ops) for r in op.results}
        parts = []
        for ops_idx, kind, reason, roots in kernels:
            outputs = [fn.ops[i].result for i in sorted(roots)]
            inputs = self._inputs(fn, ops_idx, producer)
            parts.append((ops_idx, kind, reason, inputs, outputs))
        order = self._call_order(fn, parts)
        multi = len(parts) > 1
        built = []
        for n, k in enumerate(order):
            ops_idx, kind, reason, inputs, outputs = parts[k]
            name = f"{fn.name}_k{n}" if multi else f"{fn.name}_kernel"
            built.append((self._kernel_function(fn, name, ops_idx, inputs, outputs, producer), inputs, outputs))
            self.infos[name] = KernelInfo(name, kind, reason)
        main = self._main(fn, built)
        others = tuple(f for f in module.functions if f is not fn)
        return Module(others + tuple(b[0] for b in built) + (main,))

    @staticmethod
    def _inputs(fn, ops_idx, producer) -> list[Value]:
        member = set(ops_idx)
        inputs: list[Value] = []
        seen: set[int] = set()
        for i in sorted(member):
            for v in fn.ops[i].operands:
                prod = producer.get(id(v))
                if prod is not None and (prod[0] in member or has_trait(prod[1], CONSTANT)):
                    continue
                if id(v) not in seen:
                    seen.add(id(v))
                    inputs.append(v)
        return inputs

    @staticmethod
    def _call_order(fn, parts) -> list[int]:
        """Kernel indices in an order where every input is ready (views are free)."""
        available = {id(p.value) for p in fn.params}
        views = [op for op in fn.ops if is_view_op(op) or has_trait(op, CONSTANT)]
        order: list[int] = []
        pending = list(range(len(parts)))
        while pending:
            progressed = True
            while progressed:
                progressed = False
                for op in views:
                    if all(id(v) in available for v in op.operands) and id(op.result) not in available:
                        available.add(id(op.result))
                        progressed = True
            k = next((k for k in pending if all(id(v) in available for v in parts[k][3])), None)
            if k is None:
                raise AssertionError("fusion produced a cyclic kernel order")
            pending.remove(k)
            order.append(k)
            available.update(id(v) for v in parts[k][4])
        return order

    @staticmethod
    def _kernel_function(fn, name, ops_idx, inputs, outputs, producer) -> Function:
        param_names = {id(p.value): (p.value.name, p.kind) for p in fn.params}
        remap: dict[int, Value] = {}
        params: list[Param] = []
        for v in inputs:
            pname, kind = param_names.get(id(v), (None, "tensor"))
            new = Value(v.type, pname or f"t{len(params)}")
            params.append(Param(new, kind))
            remap[id(v)] = new
        ops: list[Op] = []
        for i in sorted(ops_idx):
            op = fn.ops[i]
            for v in op.operands:
                prod = producer.get(id(v))
                if id(v) not in remap and prod is not None and has_trait(prod[1], CONSTANT):
                    c = prod[1]  # constants are cloned into each kernel that reads them
                    new = Value(c.result.type)
                    ops.append(Op(c.name, (), (new,), c.attrs, c.loc))
                    remap[id(v)] = new
            new_results = tuple(Value(r.type) for r in op.results)
            for old, new in zip(op.results, new_results):
                remap[id(old)] = new
            ops.append(Op(op.name, tuple(remap[id(v)] for v in op.operands), new_results, op.attrs, op.loc))
        results = tuple(remap[id(v)] for v in outputs)
        return Function(name, tuple(params), tuple(ops), results, fn.ops[min(ops_idx)].loc)

    @staticmethod
    def _main(fn: Function, built) -> Function:
        remap: dict[int, Value] = {}
        available = {id(p.value) for p in fn.params}
        ops: list[Op] = []
        views = [op for op in fn.ops if is_view_op(op) or has_trait(op, CONSTANT)]

        def get(v):
            return remap.get(id(v), v)

        def emit_ready_views():
            progressed = True
            while progressed:
                progressed = False
                for op in views:
                    if id(op.result) in available or not all(id(v) in available for v in op.operands):
                        continue
                    new = Value(op.result.type)
                    ops.append(Op(op.name, tuple(get(v) for v in op.operands), (new,), op.attrs, op.loc))
                    remap[id(op.result)] = new
                    available.add(id(op.result))
                    progressed = True

        for kernel_fn, inputs, outputs in built:
            emit_ready_views()
            new_results = tuple(Value(v.type) for v in outputs)
            ops.append(Op("call", tuple(get(v) for v in inputs), new_results,
                          (("callee", kernel_fn.name),), kernel_fn.loc))
            for old, new in zip(outputs, new_results):
                remap[id(old)] = new
                available.add(id(old))
        emit_ready_views()
        used = {id(v) for op in ops for v in op.operands} | {id(get(v)) for v in fn.results}
        ops = [op for op in ops if has_trait(op, CALL) or any(id(r) in used for r in op.results)]
        return Function(fn.name, fn.params, tuple(ops), tuple(get(v) for v in fn.results), fn.loc)

def _bits(mask: int):
    i = 0
    while mask:
        if mask & 1:
            yield i
        mask >>= 1
        i += 1


__all__ = ["Fuse", "KernelInfo", "is_vector_op", "is_view_op", "TensorType"]
