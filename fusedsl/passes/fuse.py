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
- Row fusion: a last-axis reduction (sum/mean/max/min) joins the vector kernel that
  produces its operand and the vector kernels that read its result and have the
  reduction's input shape (they broadcast it back over the row), so softmax, layer_norm
  and rms_norm become one "row" kernel (FS112), at the default opt_level 2
  (disable_passes=['row-fusion'] splits them).  A merge that would close a cycle through
  another kernel is not made.  Row kernels run natively on the LLVM backend
  (the row kind's tile IR through backend_cpu/llvm_kernel.py) and print as Ascend C (lower/row_tile.py).
- Column fusion: a reduction over a range of axes before the last joins its elementwise
  producer and the vector kernels reading its result (FS116, lower/column_plan.py), when
  the whole group makes one column kernel (_column_group_ok); `sum(x * x, 0)`, `var(x, 0)`.
- Cube epilogue: a matmul or conv2d kernel merges with the vector kernels that read its result and
  have its shape (bias, activation, residual add, cast): one "cube" kernel (FS113).
- Views: slice, concatenate and take (axis 0 of a 2-D table) join the vector kernels that
  read them, and a slice of a vector kernel's result joins that kernel: they become CopyIn /
  CopyOut addressing (fusedsl/views.py); a view that cannot keeps its kernel (FS114).
- Every other op (other reductions, matmul, conv2d, transpose) is a kernel of its own.
- `single_kernel=True` turns any boundary into a ScheduleError naming the op.
"""
from __future__ import annotations

import heapq

from ..record import record
from ..errors import ScheduleError
from ..ir.shapes import column_param, fmt_shape
from ..ir.core import Function, Module, Op, Param, TensorType, Value
from ..ir.ops import BROADCAST, CALL, CONSTANT, CUBE, ELEMENTWISE, HOST, SHAPE, has_trait
from ..ir.verifier import note_copy
from .base import Pass
from .fusion_model import (FusionOptions, GroupStats, input_limit, merge_verdict, sibling_surely_refused,
                           split_reason)
from .fusion_reach import GroupGraph, bits, closure_masks, through_masks, topological_positions


def is_vector_op(op: Op) -> bool:
    return has_trait(op, ELEMENTWISE) or (has_trait(op, BROADCAST) and has_trait(op, SHAPE))


def is_view_op(op: Op) -> bool:
    """Ops that stay in main between kernels: reshape views and host-computed inputs (arange)."""
    return op.name == "reshape" or has_trait(op, HOST)


@record
class KernelInfo:
    name: str
    kind: str       # "vector" | "row" | "cube" | "single"
    reason: str     # why this kernel is separate from its neighbours, with its figures
    code: str = "FS101"   # stable reason code (passes/fusion_model.py REASONS, docs/FUSION.md)


class Fuse(Pass):
    """Partition into kernels.  `infos` maps kernel name -> KernelInfo after `run`."""

    name = "fuse"

    def __init__(self, single_kernel: bool = False, max_queues: int | None = None,
                 fusion: FusionOptions | None = None, notes: dict[int, str] | None = None):
        self.single_kernel = single_kernel
        # value id -> "FS1xx why": an earlier pass's word on the kernel computing that value
        # (attention-fusion: why softmax(q @ k^T) @ v did not become one attention op)
        self.notes = notes if notes is not None else {}
        self.max_queues = max_queues   # queue buffers one position may hold (the target's limit)
        self.fusion = fusion or FusionOptions()
        self.infos: dict[str, KernelInfo] = {}
        self._refusals: dict[int, tuple[str, str]] = {}   # op index -> (code, figures) of a refused merge
        # merges tried in every phase / kept, and nodes cycle checks walked: the pass's work, counted
        # (k.fuse_stats, `fusedsl fuse`'s report; tests/test_cost_fusion.py bounds its growth)
        self.stats = {"candidates": 0, "merges": 0, "visits": 0}

    def run(self, module: Module) -> Module:
        fn = module.main
        self._refusals = {}
        self.stats = {"candidates": 0, "merges": 0, "visits": 0}
        groups = self._group(fn)
        kernels = self._split_by_shape(fn, groups)
        cube = self.fusion.fuse or self.single_kernel
        if self.fusion.rows or cube:
            kernels = _row_fuse(fn, kernels, rows=self.fusion.rows, cube=cube, target=self.fusion.target,
                                ub_share=self.fusion.ub_headroom, work=self.stats)
        if self.fusion.views or self.single_kernel:
            kernels = self._absorb_views(fn, kernels)
        kernels = _drop_dead(fn, kernels)
        if self.single_kernel and len(kernels) > 1:
            self._refuse(fn, kernels)
        return self._build(module, fn, kernels)

    # ---- views: slice / concatenate / take as addressing ------------------------------------
    def _absorb_views(self, fn: Function, kernels) -> list[tuple]:
        """A slice, concatenate or take kernel joins the vector kernels that read its result
        (input side: the view becomes their CopyIn addressing), and a slice of a vector
        kernel's result read by nobody else joins that kernel (output side: the scheduler
        moves it onto the inputs).  Merging saves the view's write and read back (2x its
        bytes) and a launch, and costs nothing: kept whenever `views.check_fusible` accepts
        the merged kernel (FS114 otherwise) and the merged kernel's view loads, one VECIN queue
        each, stay within the chip's queue limit (FS105 otherwise: x read through four slices
        is four loads); a refused view keeps its kernel with that reason."""
        from ..views import VIEW_OPS, fusible_loads
        if not any(fn.ops[k[0][0]].name in VIEW_OPS for k in kernels if k[1] == "single"):
            return kernels
        producer = {id(r): i for i, op in enumerate(fn.ops) for r in op.results}
        producer2 = {id(r): (i, op) for i, op in enumerate(fn.ops) for r in op.results}
        consumers: dict[int, list[int]] = {}
        for i, op in enumerate(fn.ops):
            for v in op.operands:
                consumers.setdefault(id(v), []).append(i)
        returned = {id(v) for v in fn.results}
        kernels = [list(k) for k in kernels]
        alive = [True] * len(kernels)
        where: dict[int, set[int]] = {}
        for k, (ops_idx, _, _, _) in enumerate(kernels):
            for i in ops_idx:
                where.setdefault(i, set()).add(k)

        def fits(ops_idx, roots) -> tuple[str, str] | None:
            """None when the merged kernel prints, else (code, why)."""
            self.stats["candidates"] += 1   # a merge tried (what the pass's work grows with)
            inputs = self._inputs(fn, ops_idx, producer2)
            outputs = [fn.ops[i].result for i in sorted(roots)]
            cand = self._kernel_function(fn, "candidate", ops_idx, inputs, outputs, producer2)
            why, loads = fusible_loads(cand)
            if why:
                return "FS114", why
            if self.max_queues is not None and loads > self.max_queues:
                chip = self.fusion.target.name if self.fusion.target is not None else "the chip"
                return "FS105", (f"queue limit: the merged kernel would read {loads} view loads, one VECIN queue "
                                 f"each; {chip} allows {self.max_queues}")
            return None

        single_of = {k_[0][0]: n for n, k_ in enumerate(kernels) if k_[1] == "single" and len(k_[0]) == 1}
        for o, (ops_idx, kind, _, roots) in enumerate(kernels):
            # output side, all roots at once: every output of a vector kernel is read only by a
            # slice, and the slices agree on their shape (one iteration shape per kernel)
            if kind != "vector" or len(roots) < 2:
                continue
            slices = []
            for r in roots:
                users = consumers.get(id(fn.ops[r].result), [])
                if (len(users) != 1 or id(fn.ops[r].result) in returned or fn.ops[users[0]].name != "slice"
                        or users[0] not in single_of):
                    break
                slices.append(users[0])
            else:
                if len({fn.ops[i].result.shape for i in slices}) == 1 and not fits(
                        sorted(set(ops_idx) | set(slices)), slices):
                    kernels[o][0], kernels[o][3] = sorted(set(ops_idx) | set(slices)), list(slices)
                    for i in slices:
                        alive[single_of[i]] = False
                        where[i] = {o}
                        self.stats["merges"] += 1
        changed = True
        while changed:
            changed = False
            for k, (ops_idx, kind, reason, roots) in enumerate(kernels):
                if not alive[k] or kind != "single" or fn.ops[ops_idx[0]].name not in VIEW_OPS:
                    continue
                i = ops_idx[0]
                op = fn.ops[i]
                users = consumers.get(id(op.result), [])
                owners = set().union(*(where.get(u, set()) for u in users)) if users else set()
                new_ops = {}
                why = None
                if users and id(op.result) not in returned and all(
                        kernels[o][1] == "vector" and alive[o] for o in owners) and all(u in where for u in users):
                    for o in owners:   # input side: into every vector kernel that reads it
                        why = fits(sorted(set(kernels[o][0]) | {i}), kernels[o][3])
                        if why:
                            break
                        new_ops[o] = (sorted(set(kernels[o][0]) | {i}), kernels[o][3])
                elif op.name == "slice" and producer.get(id(op.operands[0])) is not None:
                    p = producer[id(op.operands[0])]
                    homes = where.get(p, set())
                    if (len(homes) == 1 and consumers.get(id(op.operands[0])) == [i]
                            and id(op.operands[0]) not in returned):
                        (o,) = homes
                        if kernels[o][1] == "vector" and alive[o] and p in kernels[o][3]:
                            roots2 = [r for r in kernels[o][3] if r != p] + [i]
                            sizes = {fn.ops[r].result.shape for r in roots2}
                            if len(sizes) == 1:   # one iteration shape per kernel
                                why = fits(sorted(set(kernels[o][0]) | {i}), roots2)
                                if not why:
                                    new_ops[o] = (sorted(set(kernels[o][0]) | {i}), roots2)
                if why:
                    code, text = why
                    kernels[k][2] = f"{code} {op.name} stays a kernel: {text}"
                    continue
                if not new_ops:
                    continue
                for o, (ops2, roots2) in new_ops.items():
                    kernels[o][0], kernels[o][3] = ops2, roots2
                    where.setdefault(i, set()).add(o)
                where[i].discard(k)
                alive[k] = False
                self.stats["merges"] += 1
                changed = True
        # a vector kernel read only through the views of another vector kernel joins it
        # (`exp(x)[:, 2:] + 1`: the slice moves onto x, nothing is written in between)
        changed = True
        while changed:
            changed = False
            for k2, (ops2, kind2, _, roots2) in enumerate(kernels):
                if not alive[k2] or kind2 != "vector":
                    continue
                for i in ops2:
                    if fn.ops[i].name not in VIEW_OPS:
                        continue
                    for v in fn.ops[i].operands:
                        p = producer.get(id(v))
                        homes = [o for o in where.get(p, set()) if alive[o] and o != k2]
                        if p is None or p in ops2 or len(homes) != 1:
                            continue
                        (k1,) = homes
                        ops1, kind1, _, roots1 = kernels[k1]
                        if kind1 != "vector" or any(id(fn.ops[r].result) in returned for r in roots1):
                            continue
                        member = set(ops1) | set(ops2)
                        readers = [u for r in roots1 for u in consumers.get(id(fn.ops[r].result), [])]
                        if not all(u in member for u in readers):
                            continue
                        # a view the input side copied into several kernels reads k1's results in
                        # each of them: k1 joining one would leave the others without their input
                        if any(alive[o] and o not in (k1, k2) for u in readers for o in where.get(u, ())):
                            continue
                        why = fits(sorted(member), roots2)
                        if why:
                            if why[0] == "FS105":   # the producer stays a kernel for the queues' sake
                                kernels[k1][2] = f"FS105 {why[1]}"
                            continue
                        kernels[k2][0] = sorted(member)
                        alive[k1] = False
                        for j in ops1:
                            where[j] = (where.get(j, set()) - {k1}) | {k2}
                        self.stats["merges"] += 1
                        changed = True
                        break
                    if changed:
                        break
                if changed:
                    break
        out = [tuple(k) for k, a in zip(kernels, alive) if a]
        if len(out) == 1:
            ops_idx, kind, _, roots = out[0]
            out[0] = (ops_idx, kind, "FS100 the whole graph is one kernel", roots)
        return out

    # ---- grouping -------------------------------------------------------------------
    # Compile cost must grow linearly with the graph (a 1000-op model compiles in well under
    # a second): groups are union-find sets, legality is two bitset ANDs over precomputed
    # ancestor/descendant masks (fusion_reach), and sibling candidates come from an input ->
    # groups index instead of all pairs (_merge_siblings says why that is not enough alone).
    def _group(self, fn: Function) -> list[list[int]]:
        producer = {id(r): i for i, op in enumerate(fn.ops) for r in op.results}
        preds, succs = _op_edges(fn, producer)
        ancestors = closure_masks(range(len(fn.ops)), preds.__getitem__)
        descendants = closure_masks(range(len(fn.ops) - 1, -1, -1), succs.__getitem__)
        parent: dict[int, int] = {}   # union-find over vector ops; the root names the group
        members: dict[int, int] = {}  # root -> bitmask of member ops
        reach: dict[int, int] = {}    # root -> descendants of the group's members
        above: dict[int, int] = {}    # root -> ancestors of the group's members
        stats: dict[int, GroupStats] = {}
        consumers: dict[int, list[int]] = {}
        for i, op in enumerate(fn.ops):
            for v in op.operands:
                consumers.setdefault(id(v), []).append(i)
        returned = {id(v) for v in fn.results}
        fusing = self.fusion.fuse or self.single_kernel
        grouped = 0   # the vector ops taken so far (each is in a group)

        def find(i):
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        def group_cycle(other: int, union: int, cur_above: int, done: int) -> int | None:
            """An op outside `union` on a path from group `other` into the current group when
            groups count as one node, or None.  The op-level test (_legal) misses a path that
            enters a group merged earlier at one op and leaves it at another (x -> y1 in G, y2 in
            G -> z): the merged kernel would then need G's kernel before and after it, a cycle
            between kernels (found by a fusion search: add(exp(r), x0 + x2) took exp(r) and
            add(r', r') in one group with max_kernel_ops=3, mul(x0 + x2, r') joined x0 + x2, and
            later passes failed with a KeyError).  Only ops before the current one (`done`) can
            lie on such a path; the groups are followed with their members and descendants."""
            walk = reach[other] & done & ~union
            todo = walk & grouped
            if not todo or not cur_above & grouped & ~union:
                return None   # no group on a path from other, or none into the current group
            seen = union
            while todo:
                g = find((todo & -todo).bit_length() - 1)
                seen |= members[g]
                walk |= members[g] | (reach[g] & done)
                self.stats["visits"] += 1
                todo = walk & grouped & ~seen
            hit = walk & cur_above & ~union
            return (hit & -hit).bit_length() - 1 if hit else None

        for i, op in enumerate(fn.ops):
            if not is_vector_op(op):
                continue
            parent[i] = i
            grouped |= 1 << i
            cur, cur_reach, cur_above = 1 << i, descendants[i], ancestors[i]
            cur_stats = GroupStats(op, self._external(fn, op, producer))
            for v in op.operands:
                p = producer.get(id(v))
                if p is None or p not in parent:
                    continue
                other = find(p)
                if other == i:
                    continue
                self.stats["candidates"] += 1
                if not fusing:
                    self._refuse_merge(i, other, "FS109", "fusion disabled (opt_level=0 or disable_passes)")
                    continue
                if not _legal(members[other], reach[other], cur, cur_above):
                    between = cur_above & reach[other] & ~(cur | members[other])
                    via = fn.ops[(between & -between).bit_length() - 1].name
                    self._refuse_merge(i, other, "FS106", f"merging {fn.ops[p].name} with {op.name} would "
                                                          f"create a cycle through {via} (outside the kernel)")
                    continue
                union = cur | members[other]
                internal = {vid for vid in cur_stats.inputs
                            if producer.get(vid) is not None and (members[other] >> producer[vid]) & 1}
                merged = cur_stats.merged(stats[other], internal)
                if not self.single_kernel:
                    saved = self._saved_bytes(fn, internal, producer, consumers, union, returned)
                    ok, code, text = merge_verdict(stats[other], cur_stats, merged, saved, self.fusion)
                    if not ok:
                        self._refuse_merge(i, other, code, text)
                        continue
                # last, for a merge that would be made (it walks groups; a refusal above keeps its reason)
                via = group_cycle(other, union, cur_above, (1 << i) - 1)
                if via is not None:
                    self._refuse_merge(i, other, "FS106", f"merging {fn.ops[p].name} with {op.name} would "
                                                          f"create a cycle through {fn.ops[via].name} (in another "
                                                          f"kernel)")
                    continue
                self.stats["merges"] += 1
                cur |= members.pop(other)
                cur_reach |= reach.pop(other)
                cur_above |= above.pop(other)
                stats.pop(other)
                cur_stats = merged
                parent[other] = i
            members[i] = cur
            reach[i] = cur_reach
            above[i] = cur_above
            stats[i] = cur_stats
        if not (self.fusion.horizontal or self.single_kernel):
            return [list(bits(members[r])) for r in sorted(members)]
        shape, inputs = _shapes_and_inputs(fn, members, producer)
        if not self._any_partners(shape, inputs):
            # what _merge_siblings would return: every group's turn finds no partner (most
            # kernels: one group, or groups of different shapes or inputs), and its index, masks
            # and group graph cost more than the rest of the grouping
            return [list(bits(members[r])) for r in sorted(members)]
        # an op outside every group (a matmul, a reduction, a view) never joins one: a path
        # through it keeps two groups apart for good
        fixed = {i for i in range(len(fn.ops)) if i not in parent}
        masks = (through_masks(range(len(fn.ops)), preds.__getitem__, fixed, ancestors),
                 through_masks(range(len(fn.ops) - 1, -1, -1), succs.__getitem__, fixed, descendants))
        return self._merge_siblings(fn, members, reach, above, producer, stats, masks, shape, inputs)

    def _any_partners(self, shape: dict[int, tuple], inputs: dict[int, set[int]]) -> bool:
        """Two groups share a key of _merge_siblings' partner index: (iteration shape, an input
        both read), or with single_kernel, the shape alone.  Without such a pair no group has a
        partner to try (_partners lists only the groups under its own keys)."""
        keys = set()
        for r in sorted(shape):
            for key in ([None] if self.single_kernel else inputs[r]):
                if (shape[r], key) in keys:
                    return True
                keys.add((shape[r], key))
        return False

    def _refuse_merge(self, i: int, other: int, code: str, text: str) -> None:
        self._refusals.setdefault(i, (code, text))
        self._refusals.setdefault(other, (code, text))

    @staticmethod
    def _external(fn, op, producer) -> dict[int, int]:
        """GM inputs a lone op would read: non-constant tensor operands (value id -> itemsize)."""
        ins = {}
        for v in op.operands:
            p = producer.get(id(v))
            if p is not None and has_trait(fn.ops[p], CONSTANT):
                continue
            if v.shape == ():
                continue
            ins[id(v)] = v.dtype.itemsize
        return ins

    @staticmethod
    def _saved_bytes(fn, internal, producer, consumers, union, returned) -> int:
        """GM bytes a producer-consumer merge saves: an intermediate read by nobody outside is
        neither written nor read back; one still needed outside is at least not re-read."""
        saved = 0
        for vid in internal:
            v = fn.ops[producer[vid]].result
            n = 1
            for d in v.shape:
                n *= 1024 if isinstance(d, str) else d
            inside = vid not in returned and all((union >> c) & 1 for c in consumers.get(vid, ()))
            saved += n * v.dtype.itemsize * (2 if inside else 1)
        return saved

    def _merge_siblings(self, fn, members, reach, above, producer, stats, masks, shape, inputs) -> list[list[int]]:
        """Horizontal fusion: independent groups with one iteration shape that read a common
        input share its loads (or, with single_kernel, are asked to be one kernel).

        Groups are taken in order; each tries its partners (live groups of its shape reading one
        of its inputs) until a round merges nothing, since a merge can make an earlier-rejected
        partner legal.  Why this costs about the graph's size: partners come from an index
        (shape, input) -> groups; a partner joined to the group by a path through an op outside
        every group (the matmuls between two transformer blocks that read the same layer-norm
        weights) can never merge with it, and is left out of the index's answer by one bitset
        operation (fusion_reach.through_masks) instead of being tried, and tried again after
        every merge; and the cycle check walks only the groups ordered between the two.

        One value read by many independent groups (a shared row or bias) lists every group as a
        partner of every other, none blocked: once a group is full (the queue or input cap), every
        further partner was tried for one more model refusal.  Such a pair is skipped when the
        refusal is sure and would record nothing (_settled); a turn walks such a list a group at a
        time, and takes what is left of it, once the group is full, from masks of the groups that
        could still merge or still lack a recorded refusal (_PartnerIndex.still_open)."""
        roots = sorted(members)
        # a group's inputs are a set of value ids: its partners are listed input by input in the
        # order of the values in the function, not in the set's order (which follows memory
        # addresses and made the kernels differ from one process to the next)
        self._rank = {id(p.value): n for n, p in enumerate(fn.params)}
        for op in fn.ops:
            for r in op.results:
                self._rank[id(r)] = len(self._rank)
        index = _PartnerIndex(members, masks)
        for r in roots:
            for key in ([None] if self.single_kernel else inputs[r]):
                index.add((shape[r], key), r)
        if not self.single_kernel:
            index.track_refusals(stats, self._refusals)
        sizes = {}   # value id -> bytes, for the GM inputs groups may share
        for st in stats.values():
            for vid in st.inputs:
                sizes[vid] = 0
        for v in [p.value for p in fn.params] + [op.result for op in fn.ops]:
            if id(v) in sizes:
                n = 1
                for d in v.shape:
                    n *= 1024 if isinstance(d, str) else d
                sizes[id(v)] = n * v.dtype.itemsize
        graph = _group_graph(fn, members, producer)
        order: dict[int, None] = {}   # groups whose turn is over, in turn order
        for a in roots:
            if a not in index.alive:
                continue
            pending = self._partners_in_turn(a, shape, inputs, index, stats)
            progress = True
            while pending and progress:   # a merge can make an earlier-rejected partner legal
                progress, failed = False, []
                for b in pending:
                    if b not in index.alive or index.blocked(a, b):
                        continue   # merged away, or joined to a through an op outside every group
                    if self._settled(a, b, stats):
                        continue   # refused whatever a merges next, and both refusals are recorded
                    ga, gb = members[a], members[b]
                    self.stats["candidates"] += 1
                    if not (_legal(ga, reach[a], gb, above[b]) and _legal(gb, reach[b], ga, above[a])
                            and graph.acyclic_union(a, b)):
                        failed.append(b)
                        continue
                    merged = stats[a].merged(stats[b], set())
                    if not self.single_kernel:
                        shared = stats[a].inputs.keys() & stats[b].inputs.keys()
                        saved = sum(sizes.get(vid, 0) for vid in shared)   # each shared input read once
                        ok, code, text = merge_verdict(stats[a], stats[b], merged, saved, self.fusion,
                                                       need_bytes=False)
                        if not ok:
                            self._refuse_merge(a, b, code, text)
                            index.recorded(a)
                            index.recorded(b)
                            continue
                    stats[a] = merged
                    self.stats["merges"] += 1
                    # b may have had its turn already: the model's benefit is not monotone as groups
                    # grow (tiling loss in whole tiles), so b may have refused a part of a that a, grown,
                    # now takes (test_cost_fusion: p refused q, then t + q takes p).  b leaves the order
                    # (it stayed there, its ops computed again by a second kernel)
                    order.pop(b, None)
                    members[a] = ga | gb
                    graph.merge(a, b)
                    reach[a] |= reach[b]
                    above[a] |= above[b]
                    index.merge(a, b)
                    new_inputs = inputs[b] - inputs[a]
                    inputs[a] |= new_inputs
                    for k in new_inputs:
                        index.add((shape[a], k), a)
                    failed.extend(self._partners(a, shape, inputs, index, stats, keys=new_inputs))
                    progress = True
                pending = list(dict.fromkeys(failed))
            order[a] = None
        self.stats["visits"] += graph.visits
        return [list(bits(members[r])) for r in order]

    def _partners(self, a, shape, inputs, index, stats, keys=None) -> list[int]:
        """Live groups of a's shape that read one of `keys` (default: all of a's inputs), in the
        order the index lists them, leaving out those that can never merge with a, and, once a
        is full (_settled), most of those it would only refuse again."""
        only = None
        if self.single_kernel:
            keys = [None]
        else:
            keys = sorted(inputs[a] if keys is None else keys, key=self._rank.__getitem__)
            if a in self._refusals:
                only = index.still_open(stats[a], self.fusion)
        found: dict[int, None] = {}
        for key in keys:
            for b in index.readers((shape[a], key), a, only):
                found[b] = None
        return list(found)

    def _partners_in_turn(self, a, shape, inputs, index, stats):
        """The partners `_partners(a)` lists, in its order, found while they are tried: a key whose
        list holds many groups that may merge (one value read by every group) is walked a group
        at a time until a is full, and the rest of it is then taken from the masks (`still_open`)
        instead of listing every group for a turn that will only skip them.  What is left out
        against _partners is only what the loop would skip when it comes to it (merged away,
        blocked, settled), each for good: the groups tried, and their order, are the same."""
        if self.single_kernel:
            yield from self._partners(a, shape, inputs, index, stats)
            return
        seen: set[int] = set()
        for key in sorted(inputs[a], key=self._rank.__getitem__):   # as _partners takes them
            k = (shape[a], key)
            places = index.lists.get(k)
            if not places:
                continue
            only = index.still_open(stats[a], self.fusion) if a in self._refusals else None
            listed = list(places) if only is None and index.answer(k, a, None) > _WALK_FROM else ()
            found = [] if listed else index.readers(k, a, only)
            for n, b in enumerate(listed):
                if b in seen or b == a or b not in index.alive or index.blocked(a, b):
                    continue
                if a in self._refusals and index.still_open(stats[a], self.fusion) is not None:
                    # a is full now: the rest of this list from the masks, in its order
                    after = places[b] - 1
                    found = [r for r in index.readers(k, a, index.still_open(stats[a], self.fusion))
                             if places[r] > after]
                    break
                seen.add(b)
                yield b
            for b in found:
                if b not in seen:
                    seen.add(b)
                    yield b

    def _settled(self, a: int, b: int, stats) -> bool:
        """Trying a with b would change nothing: the model refuses it for a cap whatever a takes in
        next (fusion_model.sibling_surely_refused, monotone as a grows), and the refusal would be
        recorded for neither (a group's first refusal is its report's reason: both have one).
        Why this matters: one value read by many independent groups of one shape (a shared row,
        a bias) lists each group as a partner of every other; once a group is full, the others
        would each be refused again, a model verdict per pair (quadratic in the groups)."""
        return (not self.single_kernel and a in self._refusals and b in self._refusals
                and sibling_surely_refused(stats[a], stats[b], self.fusion))

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
        consumers: dict[int, list[int]] = {}
        for i, op in enumerate(fn.ops):
            for v in op.operands:
                consumers.setdefault(id(v), []).append(i)
        for g, ops in enumerate(groups):
            outs = [i for i in ops if used_outside.get(i) or any(id(r) in returned for r in fn.ops[i].results)]
            outs = [i for i in outs if not has_trait(fn.ops[i], CONSTANT)]
            shapes: dict[tuple, list[int]] = {}
            for i in outs:
                shapes.setdefault(fn.ops[i].result.shape, []).append(i)
            parts = []
            for shape, roots in shapes.items():
                chunks = self._chunk_by_queues(fn, roots, set(ops), producer)
                for chunk in chunks:
                    closure = self._ancestors_within(fn, chunk, set(ops), producer)
                    if len(chunks) > 1:
                        reason = (f"FS105 queue limit: split so that no queue position needs more than "
                                  f"{self.max_queues} buffers (the chip's limit)")
                    elif len(shapes) > 1:
                        reason = f"FS103 outputs of shape {fmt_shape(shape)} split from the rest of their group"
                    else:
                        reason = self._group_reason(fn, ops, producer, consumers)
                    parts.append((closure, reason, chunk))
            if len(parts) > 1 and not self.single_kernel:
                parts = self._recompute_or_store(fn, parts, consumers, used_outside, returned)
            for closure, reason, chunk in parts:
                kernels.append((sorted(closure), "vector", reason, chunk))
                covered.update(closure)
        for i, op in enumerate(fn.ops):
            if i in covered or is_vector_op(op) or is_view_op(op) or has_trait(op, CONSTANT):
                continue
            kernels.append(([i], "single", f"FS101 {op.name} is a kernel of its own (no vector op fuses with it)",
                            [i]))
        if len(kernels) == 1:
            ops_idx, kind, _, roots = kernels[0]
            kernels[0] = (ops_idx, kind, "FS100 the whole graph is one kernel", roots)
        return kernels

    def _recompute_or_store(self, fn, parts, consumers, used_outside, returned):
        """The recompute-or-store rule for values several kernels of one group need: each
        kernel recomputes them in its own iteration space (vector cycles, more when that
        space is larger than the value), or one kernel stores them to GM and the others read
        them back (a write, a read per reader and a launch).  The cheaper one wins, by the
        cost model."""
        from .. import cost
        from .fusion_model import SYMBOLIC_GUESS
        count: dict[int, int] = {}
        for closure, _, _ in parts:
            for i in closure:
                count[i] = count.get(i, 0) + 1
        dup = {i for i, c in count.items() if c > 1}
        if not dup:
            return parts

        def elems(v):
            n = 1
            for d in v.shape:
                n *= SYMBOLIC_GUESS if isinstance(d, str) else d
            return n

        ops_by_res = {id(fn.ops[i].result): fn.ops[i] for i in dup}
        recompute = 0.0
        for closure, _, chunk in parts:
            n_iter = elems(fn.ops[chunk[0]].result)
            recompute += sum(cost.op_vector_cycles(fn.ops[i], n_iter, ops_by_res, self.fusion.target)
                             for i in dup & closure)
        frontier = sorted(i for i in dup if used_outside.get(i) or id(fn.ops[i].result) in returned
                          or any(c not in dup and any(c in cl for cl, _, _ in parts)
                                 for c in consumers.get(id(fn.ops[i].result), ())))
        store = sum(cost.op_vector_cycles(fn.ops[i], elems(fn.ops[i].result), ops_by_res, self.fusion.target)
                    for i in dup)
        for i in frontier:
            nbytes = elems(fn.ops[i].result) * fn.ops[i].result.dtype.itemsize
            readers = sum(1 for cl, _, _ in parts if any(c in cl and c not in dup
                                                         for c in consumers.get(id(fn.ops[i].result), ())))
            store += cost.store_cycles(nbytes, 1) + readers * cost.load_cycles(nbytes, 1)
        target = self.fusion.target
        store += cost.LAUNCH_US * (target.clock_mhz if target is not None else 1800)
        figures = (f"{len(dup)} shared op(s): recomputing costs {recompute:.0f} cycles, "
                   f"storing {store:.0f} (model)")
        if recompute <= store:
            return [(cl, f"{reason}; recomputes {figures}", chunk) for cl, reason, chunk in parts]
        kept = [(cl - dup, reason + f"; reads values stored by another kernel ({figures})",
                 [r for r in chunk if r not in dup]) for cl, reason, chunk in parts]
        kept = [(cl, reason, chunk) for cl, reason, chunk in kept if chunk]
        stored = (dup, f"FS111 stored once for several kernels: {figures}", frontier)
        return [stored] + kept

    def _group_reason(self, fn, ops, producer, consumers) -> str:
        """Why this group of vector ops is a kernel of its own: a refused merge (with its
        figures), a neighbour that does not fuse, or no shared bytes with the others."""
        order = ("FS109", "FS104", "FS107", "FS108", "FS106", "FS102")
        found = [self._refusals[i] for i in ops if i in self._refusals]
        if found:
            code, text = min(found, key=lambda r: order.index(r[0]) if r[0] in order else len(order))
            return f"{code} {text}"
        member = set(ops)
        neighbours, operand_of = set(), set()
        for i in ops:
            for v in fn.ops[i].operands:
                p = producer.get(id(v))
                if p is not None and p not in member and not is_vector_op(fn.ops[p]) \
                        and not is_view_op(fn.ops[p]) and not has_trait(fn.ops[p], CONSTANT):
                    neighbours.add(fn.ops[p].name)
            for j in consumers.get(id(fn.ops[i].result), ()):
                if j in member or is_vector_op(fn.ops[j]) or is_view_op(fn.ops[j]):
                    continue
                # a cube op reads its operands (weights, images) from GM: only its result's
                # elementwise epilogue fuses with it (e.g. a folded batch norm's weight scaling)
                (operand_of if has_trait(fn.ops[j], CUBE) else neighbours).add(fn.ops[j].name)
        if operand_of and not neighbours:
            return (f"FS101 computes an operand of {', '.join(sorted(operand_of))} (a cube op reads its operands "
                    "from GM; only the elementwise ops after it fuse with it)")
        neighbours |= operand_of
        if neighbours:
            return f"FS101 borders {', '.join(sorted(neighbours))} (not fused with vector ops)"
        return "FS102 no shared bytes with the other kernels"

    def _chunk_by_queues(self, fn, roots, allowed, producer) -> list[list[int]]:
        """Group outputs so each kernel has at most `max_queues` GM inputs and outputs
        (each takes a queue on VECIN/VECOUT); shared inputs keep outputs together."""
        if self.max_queues is None:
            return [roots]
        if len(roots) == 1:
            return [list(roots)]   # one output: one chunk, whatever its inputs (_chunks' first append)
        return self._chunks(fn, roots, allowed, producer)

    def _chunks(self, fn, roots, allowed, producer) -> list[list[int]]:
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
                            f"{split_reason(first_single[2])[1]}", loc=op.loc,
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
        readers: dict[int, list[tuple[int, Op]]] = {}   # value id -> (index, op) of the ops reading it
        for i, op in enumerate(fn.ops):
            for v in op.operands:
                readers.setdefault(id(v), []).append((i, op))
        for n, k in enumerate(order):
            ops_idx, kind, reason, inputs, outputs = parts[k]
            name = f"{fn.name}_k{n}" if multi else f"{fn.name}_kernel"
            built.append((self._kernel_function(fn, name, ops_idx, inputs, outputs, producer), inputs, outputs))
            note = next((self.notes[id(fn.ops[i].result)] for i in ops_idx if id(fn.ops[i].result) in self.notes),
                        None)
            code, text = split_reason(note or reason)
            self.infos[name] = KernelInfo(name, kind, text + _operand_boundary(ops_idx, outputs, readers), code)
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
        """Kernel indices in an order where every input is ready (views are free): the
        lowest-numbered ready kernel first (Kahn's algorithm with a heap, linear in the
        graph rather than kernels x kernels)."""
        made_by: dict[int, int] = {}   # value id -> kernel producing it
        for k, part in enumerate(parts):
            for v in part[4]:
                made_by[id(v)] = k
        needs: dict[int, set[int]] = {}   # value id -> kernels it waits for (views see through)
        for op in fn.ops:
            if is_view_op(op) or has_trait(op, CONSTANT):
                deps: set[int] = set()
                for v in op.operands:
                    deps |= needs.get(id(v), {made_by[id(v)]} if id(v) in made_by else set())
                needs[id(op.result)] = deps
        waiting = [0] * len(parts)
        users: list[list[int]] = [[] for _ in parts]
        for k, part in enumerate(parts):
            deps = set()
            for v in part[3]:
                deps |= needs.get(id(v), {made_by[id(v)]} if id(v) in made_by else set())
            deps.discard(k)
            waiting[k] = len(deps)
            for d in deps:
                users[d].append(k)
        ready = [k for k in range(len(parts)) if waiting[k] == 0]
        heapq.heapify(ready)
        order: list[int] = []
        while ready:
            k = heapq.heappop(ready)
            order.append(k)
            for u in users[k]:
                waiting[u] -= 1
                if waiting[u] == 0:
                    heapq.heappush(ready, u)
        if len(order) != len(parts):
            raise AssertionError("fusion produced a cyclic kernel order")
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
                    ops.append(_copy(c, (), (new,)))
                    remap[id(v)] = new
            new_results = tuple(Value(r.type) for r in op.results)
            for old, new in zip(op.results, new_results):
                remap[id(old)] = new
            ops.append(_copy(op, tuple(remap[id(v)] for v in op.operands), new_results))
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

        # views wait for their operands; a heap releases them in program order as soon as
        # the last operand exists (linear, where re-scanning every view per call was not)
        missing = [sum(1 for v in op.operands if id(v) not in available) for op in views]
        waiting_on: dict[int, list[int]] = {}
        for n, op in enumerate(views):
            for v in op.operands:
                if id(v) not in available:
                    waiting_on.setdefault(id(v), []).append(n)
        ready = [n for n, m in enumerate(missing) if m == 0]
        heapq.heapify(ready)

        def make_available(v_id):
            if v_id in available:
                return
            available.add(v_id)
            for n in waiting_on.get(v_id, ()):
                missing[n] -= 1
                if missing[n] == 0:
                    heapq.heappush(ready, n)

        def emit_ready_views():
            while ready:
                op = views[heapq.heappop(ready)]
                if id(op.result) in available:
                    continue
                new = Value(op.result.type)
                ops.append(_copy(op, tuple(get(v) for v in op.operands), (new,)))
                remap[id(op.result)] = new
                make_available(id(op.result))

        for kernel_fn, inputs, outputs in built:
            emit_ready_views()
            new_results = tuple(Value(v.type) for v in outputs)
            ops.append(Op("call", tuple(get(v) for v in inputs), new_results,
                          (("callee", kernel_fn.name),), kernel_fn.loc))
            for old, new in zip(outputs, new_results):
                remap[id(old)] = new
                make_available(id(old))
        emit_ready_views()
        used = {id(v) for op in ops for v in op.operands} | {id(get(v)) for v in fn.results}
        ops = [op for op in ops if has_trait(op, CALL) or any(id(r) in used for r in op.results)]
        return Function(fn.name, fn.params, tuple(ops), tuple(get(v) for v in fn.results), fn.loc)

def _copy(op: Op, operands, results) -> Op:
    """`op` over other values of the same types (a kernel function's or main's copy of it); the
    verifier after this pass need not run the type rule it passed again (ir/verifier.note_copy)."""
    new = Op(op.name, operands, results, op.attrs, op.loc)
    note_copy(new, op)
    return new


_WALK_FROM = 64   # ops a key's partners may hold before they are walked rather than listed at once


def _shapes_and_inputs(fn: Function, members: dict[int, int], producer: dict[int, int]):
    """Per group root: its iteration shape (its longest result shape) and the ids of the values
    it reads from outside the group, the keys sibling fusion lists the group under."""
    shape: dict[int, tuple] = {}
    inputs: dict[int, set[int]] = {}
    for r in sorted(members):
        m = members[r]
        shape[r] = max((fn.ops[i].result.shape for i in bits(m)), key=len)
        ids = set()
        for i in bits(m):
            for v in fn.ops[i].operands:
                p = producer.get(id(v))
                if p is None or not (m >> p) & 1:
                    ids.add(id(v))
        inputs[r] = ids
    return shape, inputs


class _PartnerIndex:
    """(shape, input) -> the groups reading it, in the order they were listed, for sibling fusion.

    Each entry also keeps the bitmask of its groups' ops, so the groups a given group could still
    merge with are found by masking out the ops it can never merge with (`blocked`: ops joined
    to it by a path through an op outside every group, fusion_reach.through_masks) and mapping
    the ops left to their groups: the cost follows the answer, not the length of the list (a
    weight every block reads lists every block)."""

    def __init__(self, members: dict[int, int], masks):
        above, below = masks      # per op: ops reaching it / reached from it through an outside op
        self.members = members
        self.alive = set(members)
        self.lists: dict[tuple, dict[int, int]] = {}   # key -> {group root: place in the list}
        self.ops: dict[tuple, int] = {}                # key -> ops of the groups listed
        self.owner = {i: r for r, m in members.items() for i in bits(m)}
        self.into: dict[int, int] = {}                 # merged group root -> the root it joined
        self.far: dict[int, int] = {}                  # root -> ops it can never merge with
        self.listed: dict[tuple, int] = {}             # key -> places handed out (the next place)
        self.keys_of: dict[int, list] = {}             # live root -> the keys it is listed under
        for r, m in members.items():
            f = 0
            for i in bits(m):
                f |= above[i] | below[i]
            self.far[r] = f

    def add(self, key, root: int) -> None:
        places = self.lists.setdefault(key, {})
        if root not in places:
            places[root] = self.listed.get(key, 0)
            self.listed[key] = places[root] + 1
            self.keys_of.setdefault(root, []).append(key)
        self.ops[key] = self.ops.get(key, 0) | self.members[root]

    def merge(self, a: int, b: int) -> None:
        self.alive.discard(b)
        self.into[b] = a
        self.far[a] |= self.far[b]
        for key in self.keys_of.pop(b, ()):   # a took b's inputs and is listed under them
            del self.lists[key][b]

    def blocked(self, a: int, b: int) -> bool:
        """a and b are joined by a path through an op outside every group: never mergeable."""
        return bool(self.members[b] & self.far[a])

    def track_refusals(self, stats: dict, refusals: dict) -> None:
        """Keep the masks `still_open` answers from: the ops of groups with no refusal recorded
        yet (`open`), of groups whose merge adds no input (`loose`), and per input the ops of the
        groups `tag`ged with it (each group with one of its inputs, the one fewest groups read).
        The masks may hold more ops than they name (a merged group keeps its parts' bits): they
        only narrow the groups that _Fuse._settled then tests one by one."""
        count: dict[int, int] = {}
        for r in self.members:
            for vid in stats[r].inputs:
                count[vid] = count.get(vid, 0) + 1
        self.open = 0
        self.loose = 0
        self.tagged: dict[int, int] = {}
        for r, m in self.members.items():
            if r not in refusals:
                self.open |= m
            ins = stats[r].inputs
            if not ins:
                self.loose |= m
                continue
            tag = min(ins, key=lambda vid: (count[vid], vid))
            self.tagged[tag] = self.tagged.get(tag, 0) | m

    def recorded(self, root: int) -> None:
        """`root`'s group has its refusal recorded."""
        self.open &= ~self.members[root]

    def still_open(self, st: GroupStats, opts: FusionOptions) -> int | None:
        """Ops of the groups a group with stats `st` (and a recorded refusal) may still have to try:
        None (all) unless it is full.  Full of ops: any merge is refused, so only the groups
        with no refusal recorded.  Full of inputs: a group adding an input is refused, so only
        those and the groups whose inputs are all among st's (such a group's tag is one of them)."""
        if st.ops >= opts.max_ops:
            return self.open
        if len(st.inputs) < input_limit(opts):
            return None
        only = self.open | self.loose
        for vid in st.inputs:
            only |= self.tagged.get(vid, 0)
        return only

    def answer(self, key, a: int, only: int | None) -> int:
        """How many ops `readers(key, a, only)` would map to their groups (a bound on its work)."""
        mask = self.ops.get(key, 0) & ~self.far[a] & ~self.members[a]
        return (mask if only is None else mask & only).bit_count()

    def readers(self, key, a: int, only: int | None = None) -> list[int]:
        """Live groups listed under `key`, other than a and those blocked from a, in list order;
        with `only`, just those with an op in that mask."""
        places = self.lists.get(key)
        if not places:
            return []
        found = []
        mask = self.ops[key] & ~self.far[a] & ~self.members[a]
        if only is not None:
            mask &= only
        while mask:   # a group at a time: its other ops are taken off the mask with it
            r = self._root(self.owner[(mask & -mask).bit_length() - 1])
            mask &= ~self.members[r]
            if not self.blocked(a, r):
                found.append(r)
        # a live group whose ops are listed here reads the key (a group that took in a reader
        # took its inputs and was listed under them): its place is in `places`
        return sorted(found, key=places.__getitem__)

    def _root(self, r: int) -> int:
        while r in self.into:
            r = self.into[r]
        return r


def _group_graph(fn: Function, members: dict[int, int], producer: dict[int, int]) -> GroupGraph:
    """The data-flow graph between the groups and the ops outside every group (node -1 - op)."""
    node = {i: r for r, m in members.items() for i in bits(m)}
    succ: dict[int, set[int]] = {}
    pred: dict[int, set[int]] = {}
    nodes = set(members)
    for j, op in enumerate(fn.ops):
        nj = node.get(j, -1 - j)
        nodes.add(nj)
        for v in op.operands:
            p = producer.get(id(v))
            if p is None:
                continue
            np_ = node.get(p, -1 - p)
            if np_ != nj:
                succ.setdefault(np_, set()).add(nj)
                pred.setdefault(nj, set()).add(np_)
    pos = topological_positions(nodes, succ, key=lambda n: n if n >= 0 else -1 - n)
    return GroupGraph(succ, pred, pos)


def _legal(g: int, g_reach: int, cur: int, cur_above: int) -> bool:
    """No op outside g|cur lies on a path from g to cur (merging would make a cycle):
    the ops reachable from g (`g_reach`) that are ancestors of cur (`cur_above`) must all
    be inside the union."""
    return not (cur_above & g_reach & ~(g | cur))


def _op_edges(fn: Function, producer) -> tuple[list[list[int]], list[list[int]]]:
    """Per op: the ops producing its operands, and the ops reading its results."""
    preds = [sorted({producer[id(v)] for v in op.operands if id(v) in producer}) for op in fn.ops]
    succs: list[list[int]] = [[] for _ in fn.ops]
    for i, ps in enumerate(preds):
        for p in ps:
            succs[p].append(i)
    return preds, succs


__all__ = ["Fuse", "KernelInfo", "is_vector_op", "is_view_op", "TensorType"]


ROW_REDUCTIONS = ("sum", "mean", "max", "min")


def _is_row_reduction(op: Op) -> bool:
    """A reduction over the last axis only: one row of its operand makes one result."""
    if op.name not in ROW_REDUCTIONS:
        return False
    rank = len(op.operands[0].type.shape)
    return rank >= 1 and tuple(op.attr("axes")) == (rank - 1,)


def _is_column_reduction(op: Op) -> bool:
    """A reduction over one contiguous range of axes that ends before the last axis."""
    if op.name not in ROW_REDUCTIONS:
        return False
    rank = len(op.operands[0].type.shape)
    axes = tuple(op.attr("axes"))
    return bool(axes) and axes == tuple(range(axes[0], axes[-1] + 1)) and axes[-1] < rank - 1


def _column_shapes(red: Op) -> set:
    """The shapes a column kernel computes: its domain and one value per output (either layout)."""
    domain = tuple(red.operands[0].shape)
    axes = tuple(dict(red.attrs)["axes"])
    first, last = axes[0], axes[-1]
    return {domain, domain[:first] + domain[last + 1:], domain[:first] + (1,) * len(axes) + domain[last + 1:]}


def _column_compatible(fn: Function, kernels, group: set[int], red: Op) -> bool:
    """A group may take `red`'s column kernel: no row reduction, no cube op and no column
    reduction of another domain or range of axes in it."""
    domain, axes = tuple(red.operands[0].shape), tuple(dict(red.attrs)["axes"])
    for k in group:
        for i in kernels[k][0]:
            op = fn.ops[i]
            if has_trait(op, CUBE) or _is_row_reduction(op):
                return False
            if op.name in ROW_REDUCTIONS and (tuple(op.operands[0].shape) != domain or
                                              tuple(dict(op.attrs)["axes"]) != axes):
                return False
    return True


def _group_inputs(fn: Function, ops_in: set[int], producer: dict) -> set[int]:
    """Ids of the values ops `ops_in` read from outside them (constants are immediates)."""
    return {id(v) for i in ops_in for v in fn.ops[i].operands if producer.get(id(v)) not in ops_in
            and not (producer.get(id(v)) is not None and has_trait(fn.ops[producer[id(v)]], CONSTANT))}


def _column_group_ok(fn: Function, kernels, ks, readers: dict, returned: set) -> bool:
    """Whether merged kernels `ks` make one column kernel (lower/column_plan's rules, checked
    on shapes): every value leaving the group is one value per output column, and every input
    is addressed by one stride per group of axes of [A, K, B]."""
    member = {i for k in ks for i in kernels[k][0]}
    red = next(fn.ops[i] for i in member if _is_column_reduction(fn.ops[i]))
    shapes = _column_shapes(red)
    domain = tuple(red.operands[0].shape)
    axes = tuple(dict(red.attrs)["axes"])
    produced = {id(fn.ops[i].result) for i in member}
    for i in member:
        op = fn.ops[i]
        if has_trait(op, CONSTANT):
            continue
        leaves = id(op.result) in returned or any(j not in member for j in readers.get(i, ()))
        if leaves and tuple(op.result.shape) == domain:
            return False
        out_layout = op.name not in ROW_REDUCTIONS and len(op.result.shape) < len(domain)
        for v in op.operands:
            if id(v) not in produced and column_param(v.shape, domain, axes[0], axes[-1], out_layout) is None:
                return False
    return all(tuple(fn.ops[i].result.shape) in shapes or has_trait(fn.ops[i], CONSTANT) for i in member)


def _row_epilogue_fits(fn: Function, kernels, group: set[int], n, target, ub_share: float, producer: dict,
                       readers: dict, returned: set) -> str | None:
    """None when a matmul's epilogue with row reductions (the kernels in `group`) can take whole
    rows of its [M, N] result per tile, else the reason with its figures. The printed kernel keeps
    at least 16 rows of C (float32), of every tile input and output, and a few one-row buffers in
    UB (lower.cube.cube_tiling with whole_rows), and the 16 rows in L0C. `producer` (value id ->
    op index), `readers` (op index -> reading op indices) and `returned` (value ids) are the
    caller's, so a call costs the group's size, not the graph's."""
    if target is None or not isinstance(n, int):
        return None
    member = {i for k in group for i in kernels[k][0]}
    leaving = [i for i in member if id(fn.ops[i].result) in returned
               or any(j not in member for j in readers.get(i, ()))]
    per_elem = 4   # the C tile (float32), then an output tile per value leaving the group
    per_elem += sum(fn.ops[i].result.dtype.itemsize for i in leaving if fn.ops[i].result.shape[-1:] == (n,))
    residuals = {}   # [.., N] tensors the epilogue reads from GM, a tile each
    for i in member:
        for v in fn.ops[i].operands:
            p = producer.get(id(v))
            if len(v.shape) < 2 or v.shape[-1] != n or p in member:
                continue
            if p is None or not has_trait(fn.ops[p], CUBE):   # not the C tile itself
                residuals[id(v)] = v.dtype.itemsize
    per_elem += sum(residuals.values())
    pad = -(-n // 32) * 32
    need_ub = 16 * pad * per_elem + 6 * pad * 4 + 4096   # + about six one-row float buffers, lanes
    allowed = int(target.ub_bytes * ub_share)
    if 16 * pad * 4 > target.l0c_bytes:
        return (f"FS110 L0C: 16 whole rows of {n} of the matmul result need {16 * pad * 4} B of "
                f"{target.l0c_bytes} B; the row reductions read the matmul result from GM")
    if need_ub > allowed:
        return (f"FS104 UB: 16 whole rows of {n} of the matmul result with their epilogue need about {need_ub} B "
                f"of {allowed} B; the row reductions read the matmul result from GM")
    return None


def _row_values_only(fn: Function, ops_idx, row_shape) -> bool:
    """Every value the ops compute is a row ([*outer, C]) or one value per row ([*outer] or
    [*outer, 1]): what a row kernel computes (lower/row_plan's rule). A value of another shape,
    e.g. `sum(y, 0) * 0.01` of shape [C] computed beside `y + ...`, stays out of the row kernel,
    which could not print it."""
    outer = tuple(row_shape[:-1])
    shapes = {tuple(row_shape), outer, outer + (1,)}
    return all(has_trait(fn.ops[i], CONSTANT) or tuple(fn.ops[i].result.shape) in shapes for i in ops_idx)


def _per_row_consumer(fn: Function, ops_idx, group_ops: set[int], producer: dict, row_shape=None) -> bool:
    """A vector kernel of one value per row (`sum(x, -1) * 1.5`, `sqrt(mean + eps)`) that reads
    only the row group's values, constants and one-element tensors: the row kernel computes it
    once per row and writes it beside its other per-row outputs.  A per-row tensor parameter
    ([R] beside [R, C]) would not be told apart from a last-axis vector, so it keeps the kernel
    out.  When rows have one element (C == 1, or C symbolic) a one-element tensor reads like a
    row of the row kernel, which does not load it for a per-row op (a KeyError in the row lowering:
    where(sum(b, 1) > 0, a[:, 0], b[:, 0]) on [1, 1]; sum(x, -1) * 1.5 + t[0] on [4, 1]), so
    then only the group's values and constants qualify."""
    inside = set(ops_idx) | group_ops
    last = row_shape[-1] if row_shape else None
    one_row = row_shape is not None and not (isinstance(last, int) and last > 1)
    for i in ops_idx:
        for v in fn.ops[i].operands:
            p = producer.get(id(v))
            if p in inside or (p is not None and has_trait(fn.ops[p], CONSTANT)):
                continue
            n = 1
            for d in v.shape:
                n = n * d if isinstance(d, int) else 2
            if n != 1 or one_row:   # one_row: rows of one element (docstring)
                return False
    return True


def _drop_dead(fn: Function, kernels: list[tuple]) -> list[tuple]:
    """Kernels none of whose outputs is read any more, and outputs nobody reads.  A small shared
    producer split off by shape is recomputed by its readers and kept as a kernel of its own for a
    reader outside them (_split_by_shape); when row or cube fusion later takes that reader in,
    the kernel of its own computed a value nobody read and its producer wrote GM outputs only it
    read (logsumexp(x): [max, ..., log, add] plus a dead [abs, eq, where] and 3 extra outputs).
    Views and constants in main pass values on; a kernel is live when a result, a live kernel or
    a needed view reads one of its outputs, to a fixpoint."""
    producer = {id(r): i for i, op in enumerate(fn.ops) for r in op.results}
    main_ops = [op for op in fn.ops if is_view_op(op) or has_trait(op, CONSTANT)]

    def reads(ops_idx) -> set[int]:
        member = set(ops_idx)
        return {id(v) for i in ops_idx for v in fn.ops[i].operands if producer.get(id(v)) not in member}

    live = list(range(len(kernels)))
    inputs = [reads(k[0]) for k in kernels]
    while True:
        needed = {id(v) for v in fn.results}
        for k in live:
            needed |= inputs[k]
        for op in reversed(main_ops):   # a needed view needs what it reads
            if any(id(r) in needed for r in op.results):
                needed |= {id(v) for v in op.operands}
        keep = [k for k in live if any(id(fn.ops[i].result) in needed for i in kernels[k][3])]
        if keep == live:
            break
        live = keep
    if len(live) == len(kernels) and all(id(fn.ops[i].result) in needed for k in kernels for i in k[3]):
        return kernels
    return [(ops_idx, kind, reason, [i for i in roots if id(fn.ops[i].result) in needed])
            for ops_idx, kind, reason, roots in (kernels[k] for k in live)]


def _operand_boundary(ops_idx, outputs, readers: dict) -> str:
    """Why the kernel's results leave it when a cube or attention op reads them as an operand (the
    Matmul API takes its operands from GM, so that boundary stays): '' otherwise. Reshapes between
    kernels are views, followed. `readers` (value id -> (index, op) of its readers) is built once
    for all kernels: building it per kernel made this kernels x ops."""
    member = set(ops_idx)
    names, stack, seen = set(), [v for v in outputs], set()
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        for i, op in readers.get(id(v), ()):
            if i in member:
                continue
            if is_view_op(op):
                stack.append(op.result)
            elif has_trait(op, CUBE) or op.name == "attention":
                names.add(op.name)
    if not names:
        return ""
    what = "a result of it" if len(outputs) > 1 else "its result"
    return (f"; {what} is an operand of the {' and '.join(sorted(names))} after it, which the Matmul API reads "
            "from GM, so it is written there")


MAX_MATMULS = 4   # Matmul objects one kernel may register (REGIST_MATMUL_OBJ, ASCENDC.md 3.1)


def _merge_same_a(fn: Function, kernels, producer, find, members, try_merge) -> None:
    """Cube kernels whose matmuls read the same A (the q, k and v projections of one normalised
    x) merge into one launch: the products run in turn in one kernel (a kernel of parts), so
    the launches, not the bytes, are saved. Only independent kernels merge (no part reads
    another's values; try_merge keeps the kernel graph acyclic), at most MAX_MATMULS, each an
    elementwise epilogue (a row epilogue keeps its kernel: whole rows of C per tile)."""
    by_a: dict[tuple, list[int]] = {}
    for k, (ops_idx, kind, _, _) in enumerate(kernels):
        if kind != "single" or len(ops_idx) != 1 or fn.ops[ops_idx[0]].name != "matmul":
            continue
        mm = fn.ops[ops_idx[0]]
        a, b = mm.operands
        key = (id(a), bool(mm.attr("transpose_a", False)), bool(mm.attr("transpose_b", False)),
               tuple(mm.result.shape), b.dtype, tuple(b.shape))
        by_a.setdefault(key, []).append(k)
    for ks in by_a.values():
        if len(ks) < 2:
            continue
        taken: list[int] = []
        for k in ks:
            group = members(find(k))
            ops_k = {i for g in group for i in kernels[g][0]}
            if any(_is_row_reduction(fn.ops[i]) for i in ops_k):
                continue
            if taken:
                mine = {i for g in members(find(taken[0])) for i in kernels[g][0]}
                own, theirs = ops_k - mine, mine - ops_k
                # a part reading another part's value would make one product wait for the other
                if any(producer.get(id(v)) in theirs for i in own for v in fn.ops[i].operands) or any(
                        producer.get(id(v)) in own for i in theirs for v in fn.ops[i].operands):
                    continue
                if len(taken) >= MAX_MATMULS:
                    break
                try_merge(taken[0], k)
                if find(k) != find(taken[0]):
                    continue   # the merge would close a cycle through another kernel
            taken.append(k)


def _merge_seed(op: Op, rows: bool, cube: bool) -> bool:
    """A kernel of this one op is where _row_fuse's merges start: a reduction (row or column
    fusion) or a matmul / conv2d (cube epilogue, matmuls of one A)."""
    return (rows and op.name in ROW_REDUCTIONS) or (cube and op.name in ("matmul", "conv2d"))


def _row_fuse(fn: Function, kernels: list[tuple], rows: bool = True, cube: bool = True, target=None,
              ub_share: float = 1.0, work: dict | None = None) -> list[tuple]:
    """Merge each last-axis reduction kernel with its row-shaped vector producer and consumers.

    Kernels are merged as whole units (union-find over kernel indices); a merge is kept only
    when no path leaves the merged set and comes back into it (that would be a cycle).  `work`
    counts the merges tried ("candidates") and the kernels cycle checks walked ("visits")."""
    work = work if work is not None else {"candidates": 0, "visits": 0}
    if not any(kind == "single" and len(ops_idx) == 1 and _merge_seed(fn.ops[ops_idx[0]], rows, cube)
               for ops_idx, kind, _, _ in kernels):
        return kernels   # every merge below starts at such a kernel: none is tried (a vector kernel alone)
    producer = {id(r): i for i, op in enumerate(fn.ops) for r in op.results}
    owner = {i: k for k, kern in enumerate(kernels) for i in kern[0]}
    succ: dict[int, set[int]] = {k: set() for k in range(len(kernels))}
    for i, op in enumerate(fn.ops):
        for v in op.operands:
            p = producer.get(id(v))
            if p is not None and p in owner and i in owner and owner[p] != owner[i]:
                succ[owner[p]].add(owner[i])
    # views (reshape) in main pass values between kernels: follow them for edges too
    view_src: dict[int, int] = {}
    for i, op in enumerate(fn.ops):
        if is_view_op(op) and op.operands:
            p = producer.get(id(op.operands[0]))
            src = view_src.get(p, owner.get(p)) if p is not None else None
            if src is not None:
                view_src[i] = src
    for i, op in enumerate(fn.ops):
        for v in op.operands:
            p = producer.get(id(v))
            if p in view_src and i in owner and view_src[p] != owner[i]:
                succ[view_src[p]].add(owner[i])
    parent = list(range(len(kernels)))
    member_sets = {k: {k} for k in range(len(kernels))}   # root -> its kernels (no O(K) scan per merge)

    def find(k):
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    def members(root):
        return member_sets[root]

    # a topological order of the kernel graph: a kernel after every member of a group cannot lead
    # back into it, so the cycle search below stays within the group's window of the order
    # (without this bound each merge walked everything downstream: quadratic at model scale)
    indeg = {k: 0 for k in succ}
    for k in succ:
        for t in succ[k]:
            indeg[t] += 1
    ready = [k for k in succ if indeg[k] == 0]
    topo: dict[int, int] = {}
    while ready:
        k = ready.pop()
        topo[k] = len(topo)
        for t in succ[k]:
            indeg[t] -= 1
            if indeg[t] == 0:
                ready.append(t)

    def acyclic(group: set[int]) -> bool:
        # from the group's successors outside it, the group must not be reachable again
        hi = max(topo.get(k, len(topo)) for k in group)
        stack = [s for k in group for s in succ[k] if s not in group]
        seen = set()
        while stack:
            k = stack.pop()
            if k in group:
                return False
            if k in seen or topo.get(k, -1) > hi:
                continue
            seen.add(k)
            work["visits"] += 1
            stack.extend(succ[k])
        return True

    returned = {id(v) for v in fn.results}
    readers: dict[int, list[int]] = {}
    for j, o in enumerate(fn.ops):
        for v in o.operands:
            p = producer.get(id(v))
            if p is not None:
                readers.setdefault(p, []).append(j)
    limit = getattr(target, "max_queue_buffers_per_position", None) if target is not None else None

    def fits_queues(group: set[int]) -> bool:
        """A row kernel reads each GM input through a VECIN queue and writes each output through a
        VECOUT queue: at most the chip's queue buffers per position (FS105, as vector kernels)."""
        if limit is None:
            return True
        ops_in = {i for k in group for i in kernels[k][0]}
        outs = sum(1 for i in ops_in if any(id(r) in returned for r in fn.ops[i].results)
                   or any(j not in ops_in for j in readers.get(i, ())))
        return len(_group_inputs(fn, ops_in, producer)) <= limit and outs <= limit

    # root -> the operand shapes of its last-axis reductions (kept per root: no scan per merge)
    row_shapes = {k: {tuple(fn.ops[i].operands[0].shape) for i in kern[0] if _is_row_reduction(fn.ops[i])}
                  for k, kern in enumerate(kernels)}

    def try_merge(a: int, b: int, queues: bool = False) -> None:
        ra, rb = find(a), find(b)
        if ra == rb:
            return
        work["candidates"] += 1
        group = members(ra) | members(rb)
        if queues and not fits_queues(group):
            return
        shapes = row_shapes[ra] | row_shapes[rb]
        if len(shapes) > 1:   # one row kernel walks rows of one shape (lower/row_plan):
            return            # mean(sqrt(sum(d * d, -1))) keeps the mean's kernel
        if acyclic(group):
            parent[rb] = ra
            member_sets[ra] = group
            row_shapes[ra] = shapes
            del member_sets[rb]

    def ops_of(root: int) -> set[int]:
        return {i for g in members(root) for i in kernels[g][0]}

    # Sibling merges (kernels of one row shape, or one column domain, that read a common input)
    # try each pair in order.  A weight every block reads (the layer norm's gamma) makes every
    # pair of blocks share an input, but a path through a kernel that joins neither side (the
    # matmuls between the blocks) keeps them apart whatever merges: such pairs are left out by
    # bitset masks over the kernel graph (fusion_reach.through_masks) instead of being tried.
    # the kernel graph's order and masks, made by the first merge_sharing with two kernels (most
    # kernels have no sibling reductions: one reduction, or reductions of different shapes)
    kernel_graph: list[tuple] = []

    def sharing_graph() -> tuple:
        if kernel_graph:
            return kernel_graph[0]
        by_topo = sorted(range(len(kernels)), key=lambda k: topo.get(k, len(topo)))
        pred: dict[int, set[int]] = {k: set() for k in range(len(kernels))}
        for k, ts in succ.items():
            for t in ts:
                pred[t].add(k)
        kernel_above = closure_masks(by_topo, pred.__getitem__)
        kernel_below = closure_masks(by_topo[::-1], succ.__getitem__)
        reads: dict[int, int] = {}   # value id -> bitmask of the kernels reading it
        for k, kern in enumerate(kernels):
            for i in kern[0]:
                for v in fn.ops[i].operands:
                    reads[id(v)] = reads.get(id(v), 0) | (1 << k)
        kernel_graph.append((by_topo, pred, kernel_above, kernel_below, reads))
        return kernel_graph[0]

    def merge_sharing(ks: list[int], queues: bool) -> None:
        """try_merge(a, b) for each a before b in ks whose groups read a common input, in that
        order (what a loop over all pairs does), trying only pairs that can still merge."""
        sides = {find(k) for k in ks}   # only groups holding a kernel of ks merge below
        if len(sides) < 2:
            return   # one group holds them all already (a softmax's max and sum): no pair to try
        by_topo, pred, kernel_above, kernel_below, reads = sharing_graph()
        fixed = {k for k in range(len(kernels)) if find(k) not in sides}
        into = through_masks(by_topo, pred.__getitem__, fixed, kernel_above)
        out = through_masks(by_topo[::-1], succ.__getitem__, fixed, kernel_below)
        place = {k: n for n, k in enumerate(ks)}

        def partners(a: int, start: int) -> list[int]:
            """Places (>= start) in ks of the kernels whose group shares an input with a's and is
            not kept from it by a path through a fixed kernel."""
            ra = find(a)
            mine, far = 0, 0
            for g in members(ra):
                mine |= 1 << g
                far |= into[g] | out[g]
            ins = _group_inputs(fn, ops_of(ra), producer)
            found = {find(k) for v in ins for k in bits(reads.get(v, 0) & ~far & ~mine)}
            places = []
            for r in found:
                if any((far >> g) & 1 for g in members(r)) or not ins & _group_inputs(fn, ops_of(r), producer):
                    continue
                places += [place[k] for k in members(r) if place.get(k, -1) >= start]
            return sorted(places)

        for n, a in enumerate(ks):
            todo, at, failed = partners(a, n + 1), 0, set()
            while at < len(todo):
                b = ks[todo[at]]
                at += 1
                if find(b) in failed:
                    continue   # the same two groups failed just now: nothing changed since
                try_merge(a, b, queues=queues)
                if find(a) == find(b):   # a's group grew: which later kernels share an input changes
                    todo, at, failed = partners(a, todo[at - 1] + 1), 0, set()
                else:
                    failed.add(find(b))

    row_roots: dict[tuple, list[int]] = {}   # row shape -> its row reduction kernels
    for k, (ops_idx, kind, _, _) in enumerate(kernels):
        if not rows or kind != "single" or len(ops_idx) != 1 or not _is_row_reduction(fn.ops[ops_idx[0]]):
            continue
        red = fn.ops[ops_idx[0]]
        row_shape = red.operands[0].type.shape
        row_roots.setdefault(tuple(row_shape), []).append(k)
        p = producer.get(id(red.operands[0]))
        # only an elementwise producer joins: a reduction's result is one value per row, and
        # reducing it again (sum(sum(x, keepdims=True))) walks other rows than the kernel's
        if (p in owner and kernels[owner[p]][1] == "vector" and fn.ops[p].result.shape == row_shape
                and _row_values_only(fn, kernels[owner[p]][0], row_shape)):
            try_merge(owner[p], k, queues=True)
        for c in succ[k]:
            kind_c = kernels[c][1]
            shapes = {fn.ops[i].result.shape for i in kernels[c][3]}
            if kind_c != "vector" or not _row_values_only(fn, kernels[c][0], row_shape):
                continue
            if shapes == {row_shape} or _per_row_consumer(fn, kernels[c][0], ops_of(find(k)), producer, row_shape):
                try_merge(k, c, queues=True)
    # Column fusion (FS116): a reduction over axes before the last joins its elementwise
    # producer and the vector kernels reading its result, as a row reduction does; the group
    # is checked whole at the end (_column_group_ok) and split again when it cannot be one
    # column kernel.
    column_roots: set[int] = set()
    for k, (ops_idx, kind, _, _) in enumerate(kernels):
        if not rows or kind != "single" or len(ops_idx) != 1 or not _is_column_reduction(fn.ops[ops_idx[0]]):
            continue
        red = fn.ops[ops_idx[0]]
        shapes = _column_shapes(red)

        def joins(c):
            return (kernels[c][1] == "vector" and all(has_trait(fn.ops[i], CONSTANT) or
                                                      tuple(fn.ops[i].result.shape) in shapes
                                                      for i in kernels[c][0])
                    and _column_compatible(fn, kernels, members(find(c)), red))
        if not _column_compatible(fn, kernels, members(find(k)), red):
            continue
        p = producer.get(id(red.operands[0]))
        if p in owner and joins(owner[p]):
            try_merge(owner[p], k)
        for c in sorted(succ[k]):   # groups compatible with red stay so when merged
            if joins(c):
                try_merge(k, c)
        column_roots.add(k)
    # batch statistics: column groups over one domain and range of axes that read a common
    # input (mean(x, 0) and var(x, 0)) become one kernel, so x is read by one walk
    by_domain: dict[tuple, list[int]] = {}
    for k in sorted(column_roots):
        red = fn.ops[kernels[k][0][0]]
        by_domain.setdefault((tuple(red.operands[0].shape), tuple(dict(red.attrs)["axes"])), []).append(k)
    for ks in by_domain.values():
        merge_sharing(ks, queues=False)
    # sibling row kernels: row groups over rows of one shape that read a common input
    # (max(x, -1) and mean(x, -1)) become one row kernel, so x is read once per row, not once per
    # reduction (the row kernel computes each reduction in its phase)
    for ks in row_roots.values():
        merge_sharing(ks, queues=True)
    refused: dict[int, str] = {}   # kernel of a row group -> why the group did not join the matmul before it
    # Cube epilogue (issue 8): a matmul or conv2d kernel merges with the vector kernels that read its
    # result and iterate over its shape (bias add, activation, residual add, cast), so C is
    # consumed tile by tile from UB instead of being written to GM and read back.
    for k, (ops_idx, kind, _, _) in enumerate(kernels):
        if not cube or kind != "single" or len(ops_idx) != 1 or fn.ops[ops_idx[0]].name not in ("matmul", "conv2d"):
            continue
        mm = fn.ops[ops_idx[0]]
        mm_shape = mm.result.shape
        for c in sorted(succ[k]):
            shapes = {fn.ops[i].result.shape for i in kernels[c][3]}
            # a last-axis reduction of the result itself (sum(x @ w, -1)) is a row epilogue too
            lone_row = (kernels[c][1] == "single" and len(kernels[c][0]) == 1
                        and _is_row_reduction(fn.ops[kernels[c][0][0]])
                        and fn.ops[kernels[c][0][0]].operands[0] is mm.result)
            if not lone_row and (kernels[c][1] != "vector" or shapes != {mm_shape}):
                continue
            # a row reduction in c's group needs whole rows of the result per tile: only if they fit
            group = members(find(c))
            if any(_is_column_reduction(fn.ops[i]) for g in group for i in kernels[g][0]):
                continue   # a column kernel's producer stays out of the cube epilogue
            if any(_is_row_reduction(fn.ops[i]) for g in group for i in kernels[g][0]):
                why = _row_epilogue_fits(fn, kernels, group, mm_shape[-1], target, ub_share, producer,
                                         readers, returned)
                if why is not None:   # the boundary's reason, on both sides of it
                    refused[c] = refused[k] = why
                    continue
            try_merge(k, c)
    if cube:
        _merge_same_a(fn, kernels, producer, find, members, try_merge)
    groups: dict[int, list[int]] = {}
    for k in range(len(kernels)):
        groups.setdefault(find(k), []).append(k)
    for root in list(groups):   # a column group that is not one column kernel splits again
        ks = groups[root]
        if len(ks) > 1 and any(_is_column_reduction(fn.ops[i]) for k in ks for i in kernels[k][0]) and \
                not _column_group_ok(fn, kernels, ks, readers, returned):
            del groups[root]
            for k in ks:
                groups[k] = [k]
    if all(len(g) == 1 for g in groups.values()) and not refused:
        return kernels
    # an op may sit in several kernels (a small shared producer recomputed by each reader), so a
    # value must leave the merged kernel when any reader lies in a kernel outside the merge, even
    # if a copy of that reader was merged (fuzz-found: exp(sum(exp(x))) read by a row kernel's
    # add and by a kernel of its own lost the sum it reads)
    kernels_of: dict[int, set[int]] = {}
    for k, kern in enumerate(kernels):
        for i in kern[0]:
            kernels_of.setdefault(i, set()).add(k)
    out = []
    for root in sorted(groups, key=lambda r: min(groups[r])):
        ks = groups[root]
        if len(ks) == 1:
            ops_one, kind_one, reason_one, roots_one = kernels[ks[0]]
            out.append((ops_one, kind_one, refused.get(ks[0], reason_one), roots_one))
            continue
        ops_idx = sorted({i for k in ks for i in kernels[k][0]})
        member, kset = set(ops_idx), set(ks)
        roots = []
        for i in ops_idx:
            res = fn.ops[i].results
            used = any(id(r) in returned for r in res) or any(
                j not in member or not kernels_of.get(j, set()) <= kset for j in readers.get(i, ()))
            if used and not has_trait(fn.ops[i], CONSTANT):
                roots.append(i)
        cube_op = next((fn.ops[i].name for i in ops_idx if fn.ops[i].name in ("matmul", "conv2d")), None)
        n_mm = sum(1 for i in ops_idx if fn.ops[i].name == "matmul")
        if n_mm > 1:
            out.append((ops_idx, "cube", f"FS113 cube kernel: {n_mm} matmuls of the same A, each with its elementwise "
                        "epilogue, in one launch (the products run in turn, A is read by each)", roots))
            continue
        if cube_op is not None:
            out.append((ops_idx, "cube", f"FS113 cube kernel: {cube_op} with its elementwise epilogue "
                        "(consumed from UB tile by tile)", roots))
            continue
        columns = [fn.ops[i] for i in ops_idx if _is_column_reduction(fn.ops[i])]
        if columns:
            names = ", ".join(sorted({op.name for op in columns}))
            axes = list(columns[0].attr("axes"))
            out.append((ops_idx, "column", f"FS116 column kernel: {names} over axes {axes} fused with its "
                        "elementwise producers and consumers", roots))
            continue
        names = sorted({fn.ops[i].name for i in ops_idx if _is_row_reduction(fn.ops[i])})
        why = next((refused[k] for k in ks if k in refused), None)
        out.append((ops_idx, "row", why or f"FS112 row kernel: last-axis {', '.join(names)} fused with "
                    f"its elementwise producers and broadcast-back consumers", roots))
    if len(out) == 1:
        ops_idx, kind, _, roots = out[0]
        out[0] = (ops_idx, kind, "FS100 the whole graph is one kernel", roots)
    return out
