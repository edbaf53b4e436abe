"""A cube kernel of several matmuls that read the same A (the q, k and v projections of one
normalised x), as one launch: fusion (`passes/fuse._merge_same_a`) merged them, each part is
the cube kernel it would have been alone (`lower.cube.schedule_cube_kernel` on the part's
own function), `lower/cube_tile.cube_group_tile_kernel` makes one TileKernel holding the parts'
kernels, and printer_kernel.py prints the parts' classes and one entry that runs them in turn (one Matmul object each, registered together; the UB plan is
reset between parts). What it saves is launches: every part reads A, as separate kernels do.
The CPU runs the parts in turn too (`backend_cpu/kernel_cpu.PartsCpu`, each part on llvm_kernel).
"""
from __future__ import annotations

import struct

from ..errors import ScheduleError
from ..ir.core import Function
from .cube import CubeLaunch, CubeSchedule, cores_phrase, schedule_cube_kernel
from .row import RowParam
from ..targets import Target
from ..record import record


def cube_parts(fn: Function) -> list[Function] | None:
    """`fn` split per matmul: each part has its matmul, the ops that depend on it, and the
    matmul-free ops those read (a constant, a reshaped bias; recomputed per part); None when
    `fn` has at most one matmul, or when an op or result depends on no matmul or on two."""
    mms = [op for op in fn.ops if op.name == "matmul"]
    if len(mms) < 2:
        return None
    producer = {id(r): op for op in fn.ops for r in op.results}
    depends: dict[int, frozenset] = {}
    for op in fn.ops:
        if op.name == "matmul":
            depends[id(op)] = frozenset([id(op)])
            continue
        got = frozenset()
        for v in op.operands:
            p = producer.get(id(v))
            if p is not None:
                got |= depends[id(p)]
        depends[id(op)] = got
    if any(len(d) > 1 for d in depends.values()):
        return None
    if any(id(v) not in producer or not depends[id(producer[id(v)])] for v in fn.results):
        return None
    parts = []
    for i, mm in enumerate(mms):
        need = {id(op) for op in fn.ops if depends[id(op)] == {id(mm)}}
        stack = [op for op in fn.ops if id(op) in need]
        while stack:   # the matmul-free ops this part reads
            for v in stack.pop().operands:
                p = producer.get(id(v))
                if p is not None and id(p) not in need:
                    need.add(id(p))
                    stack.append(p)
        ops = tuple(op for op in fn.ops if id(op) in need)
        read = {id(v) for op in ops for v in op.operands}
        results = tuple(v for v in fn.results if id(producer[id(v)]) in need)
        params = tuple(p for p in fn.params if id(p.value) in read or any(p.value is v for v in results))
        parts.append(Function(f"{fn.name}_p{i}", params, ops, results, fn.loc))
    return parts


@record(frozen=False)
class CubeGroupSchedule:
    """The parts' cube schedules, run in turn by one kernel."""
    fn: Function
    target: Target
    parts: list            # CubeSchedule per part (each on its part's function)
    part_fns: list         # the parts' functions
    params: list           # RowParam per kernel parameter (the kind a part gave it)
    ub_budget: int
    plan_note: str
    symbols = ()

    @property
    def inputs(self):
        return self.params

    @property
    def workspace_bytes(self) -> int:
        return max(p.workspace_bytes for p in self.parts)

    @property
    def words(self) -> list[int]:
        return [w for p in self.parts for w in p.words]

    def tiling(self, sizes, target) -> CubeLaunch:
        launches = [p.tiling(sizes, target) for p in self.parts]
        first = launches[0]
        return CubeLaunch(self.words, max(x.block_dim for x in launches), sum(x.total_tiles for x in launches),
                          first.tile_rows, first.C, sum(x.tiles_per_core for x in launches))

    def adopt_kernel(self, k) -> str:
        """The kernel pass `tiling` chose each part's tiling among its candidates (tile/kernel_passes.py):
        the parts take them, and the plan line (returned: the kernel's note) names them."""
        for part, pk in zip(self.parts, k.parts):
            part.adopt_kernel(pk)
            if pk.choice is not None:
                part.tiling_choice = pk.choice
        self.plan_note = _group_note(self.parts)
        return self.plan_note

    def pack_words(self) -> bytes:
        return struct.pack(f"<{len(self.words)}i", *self.words)


def schedule_cube_group(fn: Function, target: Target, ub_fraction: float = 1.0,
                        l1_headroom: float = 0.8, memo: dict | None = None) -> CubeGroupSchedule:
    """The printable form of a kernel of several same-A matmuls, or a located ScheduleError.
    `memo`: the parts' (schedule_cube_kernel's)."""
    parts = cube_parts(fn)
    first = next(op for op in fn.ops if op.name == "matmul")
    if parts is None:
        raise ScheduleError(f"the Ascend C backend prints a kernel of several matmuls only when every op and result "
                            f"belongs to one of them ({fn.name})", loc=first.loc,
                            hint="this kernel still runs on the CPU executors (kernel(*arrays))")
    # the parts run in turn with their Matmul objects registered together: two per AI core, A from GM
    scheds = [schedule_cube_kernel(p, target, ub_fraction, l1_headroom, layouts=((2, False),), memo=memo)
              for p in parts]
    for s in scheds:
        if any(p.kind == "runtime_scalar" for p in s.params):
            raise ScheduleError(f"a runtime scalar in a kernel of several matmuls is not printed yet ({fn.name})",
                                loc=s.mm.loc, hint="this kernel still runs on the CPU executors (kernel(*arrays))")
    kinds: dict[int, str] = {}
    for part, s in zip(parts, scheds):
        for p in s.params:
            kinds.setdefault(id(part.params[p.index].value), p.kind)
    params = [RowParam(i, p.value.name, p.value.dtype, kinds[id(p.value)]) for i, p in enumerate(fn.params)]
    return CubeGroupSchedule(fn, scheds[0].target, scheds, parts, params, scheds[0].ub_budget, _group_note(scheds))


def _group_note(scheds) -> str:
    used = max(s.tiling_fields.used_core_num for s in scheds)
    notes = [s.plan_note for s in scheds]
    return (f"{len(scheds)} matmuls of the same A in one launch on {cores_phrase(used, scheds[0].target)}, in turn "
            "(one Matmul object each, the UB plan reset between them); " +
            (f"each: {notes[0]}" if len(set(notes)) == 1 else "; ".join(f"part {i}: {n}" for i, n in enumerate(notes))))


__all__ = ["CubeGroupSchedule", "cube_parts", "schedule_cube_group", "CubeSchedule"]
