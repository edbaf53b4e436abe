"""What a whole kernel costs, read from its tile IR (tile/kernel.py): the GM bytes it moves and the
modelled cycles of its pipes, the report's figures for every kind without Matmul objects, so the
report, the model and simulate's measured count read one source.

Why not the graph-level model (cost.py): it counts each kernel input and output once and prices
the graph's ops, but the kernel the printer prints may do more -- a broadcast input is read again
for every tile or row that needs it, a row longer than UB is read once per pass, a scalar
parameter once per core, a transpose moves its tile element by element through the scalar unit.
Those depend on the tiling and the lowering, which only the tile IR knows.

The walk runs the kernel's control flow the way `backend_cpu/kernel_interp.py` runs it (every
core of the launch, its tiles, loops and branches) with no data, and tallies per node:
  GM bytes  a DMA (CopyIn / CopyOut) rows x cols elements, a gathered row its index element and
            its row, a GM element read by an expression (`load`: a scalar member's init in each
            core's Init, a Dup's value) its element;
  MTE2      each CopyIn, gathered row and GM element read by an expression: cost.load_cycles of
            its bytes on the launch's cores;
  MTE3      each CopyOut: cost.store_cycles;
  vector    each vector API call (Vec, Dup, UbCopy, a Step's statements): cost.py's k*n + b of
            that API and dtype; each scalar access of UB (GetValue / SetValue: Move, Put, a
            typed expression's `get`) cost.SCALAR_ACCESS_CYCLES, on the vector pipe's account
            because the scalar unit issues the vector instructions and waits for them.
The values GM or UB elements would have are taken as 0: no lowering lets them steer the control
flow or a copy's size (a gathered row's index only picks the row; an index outside the table would
have been refused before the launch).  A loop whose body does the same work every pass (the sizes
do not depend on the loop's variable or anything the body sets) is walked once and multiplied,
so a kernel of many rows costs a walk of its tiles, not of its rows; a loop whose passes depend on
its variable only through the lets at the top of its body (`let cn = min(chunk, C - c0)`: a long
row's chunks, the last one shorter) is walked once per distinct value of what they read.  The walks
of one kernel (the tiling pass walks it with every candidate's words) share those passes' and the
per-tile stages' tallies where what they read had the same values; within a walk, tiles -- and
cores -- whose tiles' variables (row0, nrows) give their stages the same values are walked once.
A launch of a kernel with Matmul objects (its Process body, on every vector instance) takes an
instance whose work reads the same values as one walked before (a full block of C, an edge block)
from that one, and walks only what the addresses of its blocks depend on: the distinct blocks
read (the HBM's share) are every instance's own.  Each instance's tallies are its own sum from 0,
so an instance taken from another is bit-identical to one walked.

Time: each core runs its prologue (the once stages) then its tiles, double-buffered: a tile costs
its slowest pipe, plus one tile of the other pipes to fill and drain (cost.py's assumption for
every kernel); the launch takes its busiest core, plus the pipe heads (cost.heads, by the
largest input the launch reads) and the launch overhead.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .. import cost
from ..lru import Lru
from .. import dtypes as dt
from .kernel import (Alloc, Barrier, Call, CopyIn, CopyNz, CopyOut, Decl, DeQue, Dup, EnQue, For, Free, GatherRow, If,
                     Let, MmEnd, MmGetC, MmIterate, MmSet, MmTail, Move, Put, Reset, Return, RunPart, Scalar, Set, Step,
                     Sync, TileKernel, UbCopy, Var, Vec, assign, evaluate)
from .tile_keys import compile_tile_keys
from .tiling_cost import FIX, stmt_coeffs
from ..record import record

GM, MTE2, VEC, MTE3, CUBE, MMLOAD = range(6)   # the tallies: GM bytes, each pipe's cycles, the cube's
# cycles and the bytes the Matmul API loads into L1 (a kernel with Matmul objects: process_work)

# a Ref viewing its bytes as another type (tile/kernel.VIEWS) costs in the column of that width
_VIEW_COLUMN = {"int16": dt.float16, "uint32": dt.float32}


class _Counter:
    """A GM tensor read by expressions: every element read counts its bytes, and a load of them on
    MTE2 (as the vector kind's tiling formula prices a scalar input), in the walk's tallies of the
    moment; its value is 0."""

    def __init__(self, itemsize: int, walk: "_Walk", block_dim: int):
        self.itemsize = itemsize
        self.walk = walk
        self.load = cost.load_cycles(itemsize, block_dim)

    def __getitem__(self, index):
        tally = self.walk.tally
        tally[GM] += self.itemsize
        tally[MTE2] += self.load
        return 0


class _Return(Exception):
    pass


def _hashable(v):
    return tuple(v) if isinstance(v, (list, np.ndarray)) else v


def _names(e, out: set) -> set:
    if isinstance(e, str):
        out.add(e)
    elif isinstance(e, tuple):
        for x in e[1:]:
            _names(x, out)
    return out


def _shape_names(body, local: set | None = None) -> tuple[set, bool]:
    """(the names a body's control flow, copy sizes and vector call counts read, whether it sets a
    variable that lives on after a pass -- one the body did not declare -- or calls a stage): a
    local the body defines (let, var, val) reads what its expression reads."""
    names: set = set()
    effects = False
    defined: dict = {}
    local = set() if local is None else local
    for node in body:
        if isinstance(node, (CopyIn, CopyOut)):
            _names(node.rows, names), _names(node.cols, names)
        elif isinstance(node, GatherRow):
            _names(node.cols, names)
        elif isinstance(node, (Vec, Dup, UbCopy)):
            _names(node.count, names)
        elif isinstance(node, Step):
            _names("n" if node.count is None else node.count, names)
        elif isinstance(node, For):
            for e in (node.start, node.end, node.step):
                _names(e, names)
            inner, fx = _shape_names(node.body, local | {node.var})
            names |= inner - {node.var}
            effects |= fx
        elif isinstance(node, If):
            _names(node.cond, names)
            for b in (node.then, node.orelse):
                inner, fx = _shape_names(b, local)
                names |= inner
                effects |= fx
        elif isinstance(node, (Let, Var, Scalar)):
            defined.setdefault(node.var, set()).update(_names(node.expr, set()))
            local.add(node.var)
        elif isinstance(node, Set):
            if node.var not in local:
                effects = True
            defined.setdefault(node.var, set()).update(_names(node.expr, set()))
        elif isinstance(node, (Call, Return)):
            effects = True
    for _ in range(len(defined)):   # a local the sizes read reads what it was defined from
        grown = names.union(*(defined[v] for v in names if v in defined))
        if grown == names:
            break
        names = grown
    return names, effects


# nodes whose tallies depend on the launch's blockDim (a copy's MTE2 cycles, cost.load_cycles) or on
# more than the body's sizes (a stage called, a Matmul's state)
_PER_BLOCK = frozenset({CopyIn, CopyOut, GatherRow, CopyNz, Call, Return, MmSet, MmTail, MmIterate})


def _reads_gm(e) -> bool:
    if isinstance(e, tuple):
        return bool(e) and (e[0] == "load" or any(_reads_gm(x) for x in e[1:]))
    return False


def _block_free(body) -> bool:
    """Whether a body's tallies are the same for every blockDim: no copy (its MTE2 cycles are
    cost.load_cycles on the launch's cores), no GM element read by an expression (the same), no
    stage called."""
    for node in body:
        kind = type(node)
        if kind in _PER_BLOCK:
            return False
        names = _FIELD_NAMES.get(kind)
        if names is None:
            names = _FIELD_NAMES[kind] = tuple(f.name for f in dataclasses.fields(node))
        for name in names:
            v = getattr(node, name)
            if name in ("body", "then", "orelse"):
                if not _block_free(v):
                    return False
            elif _reads_gm(v):
                return False
    return True


_FIELD_NAMES: dict = {}   # node type -> its fields' names


# queue bookkeeping and synchronisation: no copy, no vector call, nothing the model counts
_NOTHING_TO_COUNT = frozenset({EnQue, Free, Barrier, Sync, MmGetC, MmEnd})


class _Walk:
    def __init__(self, k: TileKernel, env: dict, tally: list, block_dim: int, target=None, memo: bool = False):
        self.k = k
        self.memo = memo          # take a loop's passes from earlier walks of the kernel (kernel_work's walks:
        # a Process walk also collects the distinct blocks read and prices Matmuls by the target)
        self.target = target
        self.unique: dict = {}    # distinct blocks read (the Matmul operands' blocks, copies): the HBM's share
        # per-tile stage -> the names its work depends on (None: walk it each time); id(For) -> None
        # when its passes differ, else the names its body's work depends on and whether the
        # launch's blockDim is among them; and (id(For), those names' values) -> one pass's tally
        # delta: facts of the kernel's text, kept for every walk of it -- the tiling pass walks one
        # kernel with many candidates' words, whose tiles hold different numbers of rows but whose
        # rows (a uniform loop's pass) are alike
        shapes = k.__dict__.setdefault("_shape_facts", ({}, {}, {}))
        self.stage_sig, self.uniform, self.loop_memo = shapes
        self.stage_memo: dict = {}  # (stage, those names' values) -> (tally delta, GM reads delta)
        self.env = env
        self.tally = tally
        self.block_dim = block_dim
        self.stages = {st.name: st for st in k.stages}
        self.gm_dtype = {g.name: g.dtype for g in k.gms}
        self.queue_dtype = {q.name: q.dtype for q in k.queues}
        self.dtype: dict = {}     # UB tensor -> its queue's element type (as the walk meets Alloc / DeQue / Decl)
        self.read: dict = {}      # GM input -> bytes the launch copies in (the MTE2 head is picked by the largest)
        self.mms = {mm.name: mm for mm in k.matmuls}
        self.mm_state: dict = {}  # Matmul object -> {"A": GM source or None, "B": ..., "tail": (m, n, k)}
        self.needed = frozenset()   # the ids of the nodes `addresses` walks
        self.pruned: dict = {}      # `addresses`: id of a body -> its needed nodes
        self.bodies = None          # `addresses`' Iterates: id -> the names their bodies' needed nodes read
        self.walked_bodies: set = set()   # (Iterate, tile sizes, those names' values) `addresses` walked

    def ev(self, e):
        return evaluate(e, self.env)

    def mark(self) -> tuple:
        """The tallies and GM reads so far (`since` gives what was added after)."""
        return list(self.tally), dict(self.read)

    def since(self, mark: tuple) -> tuple:
        """(tally delta, GM reads delta) since `mark`: a walked piece's figures, to add again."""
        before, read = mark
        return ([a - b for a, b in zip(self.tally, before)],
                {g: n - read.get(g, 0) for g, n in self.read.items() if n != read.get(g, 0)})

    def add(self, delta: list, reads: dict, times: int = 1) -> None:
        """A piece's figures (`since`'s) added `times` more times, as if walked again."""
        tally = self.tally
        for i, d in enumerate(delta):
            tally[i] += d * times
        for g, n in reads.items():
            self.read[g] = self.read.get(g, 0) + n * times

    def stage(self, st) -> None:
        """A per-tile stage: walked, or -- a stage that sets nothing living past it and calls
        nothing -- its tallies taken from an earlier tile whose copy sizes, counts and control flow
        read the same values (most tiles of a kernel are alike: the tiling pass walks many)."""
        sig = self.stage_sig.get(st.name, False)
        if sig is False:
            names, effects = _shape_names(st.body)
            sig = self.stage_sig[st.name] = None if effects else tuple(sorted(names))
        if sig is None:
            self.run(st.body)
            return
        key = (st.name, *(_hashable(self.env.get(n)) for n in sig))
        hit = self.stage_memo.get(key)
        if hit is None:
            mark = self.mark()
            self.run(st.body)
            self.stage_memo[key] = self.since(mark)
            return
        self.add(*hit)

    def run(self, body) -> None:
        # one method per node type (_NODE: a record type is final, so its type is its kind); a type
        # the walk does not know counts nothing
        node_of = _NODE.get
        for node in body:
            node_of(type(node), _Walk.nothing)(self, node)

    def addresses(self, body, needed: frozenset, bodies: dict, pruned: dict) -> None:
        """`body` (its needed nodes) walked for the addresses of the blocks it reads (`unique`) only:
        the `needed` nodes (_process_plan: those that read a block, set what its address reads, hold
        them; `pruned`: each body of the kernel as the tuple of its needed nodes), what they tally
        (a loop pass, a GM element an expression reads) dropped -- the caller adds the figures of a
        walk alike (_run_instance).  An Iterate's body is walked only when its tiles' sizes or the
        names its needed nodes read (`bodies`) have values no such walk of the launch had: the
        blocks it reads then are in `unique` already (its keys are what those read)."""
        tally, read = self.tally, self.read
        self.tally, self.read, self.needed, self.bodies, self.pruned = _tallies(), {}, needed, bodies, pruned
        self.run = self._address_run
        try:
            self.run(body)
        finally:
            del self.run
            self.tally, self.read, self.bodies = tally, read, None

    def _address_run(self, body) -> None:
        nodes = self.pruned.get(id(body))
        if nodes is None:   # (a slice of a body: a loop pass after its lets)
            nodes = [n for n in body if id(n) in self.needed]
        for node in nodes:
            _NODE.get(type(node), _Walk.nothing)(self, node)

    def ub_get(self, tensor, index):
        """A typed expression's `get` of a UB element (GetValue): a scalar access, value 0."""
        self.tally[VEC] += cost.SCALAR_ACCESS_CYCLES
        return np.float32(0)

    def ref_dtype(self, r):
        return _VIEW_COLUMN[r.view] if r.view is not None else self.dtype[r.tensor]

    def nothing(self, node) -> None:
        pass

    def step(self, node: Step) -> None:
        env = self.env
        n = env["n"] if node.count is None else evaluate(node.count, env)
        evaluate(node.offset, env)
        tally = self.tally
        for st in node.stmts:
            k, b = stmt_coeffs(st)
            tally[VEC] += (k * n + b) / FIX

    def let(self, node) -> None:
        self.env[node.var] = evaluate(node.expr, self.env)

    def set_var(self, node: Set) -> None:
        v = evaluate(node.expr, self.env)
        if v or node.op != "/=":   # (the interpreter refuses a division by zero; nothing to count)
            assign(self.env, node, v)

    def loop(self, node: For) -> None:
        env = self.env
        start, end, step = evaluate(node.start, env), evaluate(node.end, env), evaluate(node.step, env)
        passes = range(start, end, step) if not node.down else range(end - 1, start - 1, -1)
        if not passes:
            return
        facts = self._loop_facts(node)
        if facts is None:
            for i in passes:
                env[node.var] = i
                self.run(node.body)
        elif not facts[0]:   # every pass does what the first does
            self.uniform_loop(node, passes, facts)
        else:   # a pass's work depends on the loop's variable only through its first lets
            self.alike_passes(node, passes, facts)

    def branch(self, node: If) -> None:
        self.run(node.then if evaluate(node.cond, self.env) else node.orelse)

    def typed(self, node) -> None:   # Alloc, DeQue, Decl: the UB tensor's element type
        self.dtype[node.tensor] = self.queue_dtype[node.queue]

    def copy(self, node) -> None:   # CopyIn, CopyOut
        env, tally = self.env, self.tally
        rows, cols = evaluate(node.rows, env), evaluate(node.cols, env)
        offset = evaluate(node.offset, env)   # (a GM element read for an address counts too)
        nbytes = rows * cols * self.gm_dtype[node.gm].itemsize
        tally[GM] += nbytes
        if type(node) is CopyIn:
            tally[MTE2] += cost.load_cycles(nbytes, self.block_dim)
            self.read[node.gm] = self.read.get(node.gm, 0) + nbytes
            self.unique[("copy", node.gm, offset, rows, cols)] = nbytes
        else:
            tally[MTE3] += cost.store_cycles(nbytes, self.block_dim)

    def gather(self, node: GatherRow) -> None:
        tally = self.tally
        self.ev(node.pos)
        row = self.ev(node.cols) * self.gm_dtype[node.table].itemsize
        tally[GM] += self.gm_dtype[node.index].itemsize + row
        tally[VEC] += cost.SCALAR_ACCESS_CYCLES   # the index, read by the scalar unit
        tally[MTE2] += cost.load_cycles(row, self.block_dim)
        self.read[node.table] = self.read.get(node.table, 0) + row

    def call(self, node: Call) -> None:
        st = self.stages[node.stage]
        if st.param:
            self.env[st.param] = self.ev(node.arg)
        self.run(st.body)

    def leave(self, node: Return) -> None:
        raise _Return()

    def scalar(self, node) -> None:   # Scalar, Put
        with np.errstate(all="ignore"):
            try:
                value = self.ev(node.expr)
                if type(node) is Put:
                    self.ev(node.index)
            except (ZeroDivisionError, ValueError, OverflowError):
                value = 0
        if type(node) is Scalar:
            self.env[node.var] = value
        else:
            self.tally[VEC] += cost.SCALAR_ACCESS_CYCLES   # SetValue

    def move(self, node: Move) -> None:
        self.tally[VEC] += 2 * cost.SCALAR_ACCESS_CYCLES   # GetValue, SetValue

    def dup(self, node: Dup) -> None:
        if not isinstance(node.value, (float, bool)):
            self.ev(node.value)
        self.tally[VEC] += cost.vector_call_cycles("Duplicate", self.ref_dtype(node.dst), self.ev(node.count))

    def ub_copy(self, node: UbCopy) -> None:
        self.tally[VEC] += cost.vector_call_cycles("Copy", self.dtype[node.dst], self.ev(node.count))

    def vec(self, node: Vec) -> None:
        src = self.ref_dtype(node.srcs[0]) if node.srcs and node.api == "Cast" else None
        self.tally[VEC] += cost.vector_call_cycles(node.api, self.ref_dtype(node.dst), self.ev(node.count), src)

    def mm_set(self, node: MmSet) -> None:
        offset = self.ev(node.offset)
        # a GM source is read by the Matmul API tile by tile; an L1 (CopyNz'd) or UB one is not
        state = self.mm_state.setdefault(node.mm, {})
        state[node.which] = node.src if node.src in self.gm_dtype else None
        state[node.which + "@"] = offset

    def mm_tail(self, node: MmTail) -> None:
        self.mm_state.setdefault(node.mm, {})["tail"] = (self.ev(node.m), self.ev(node.n),
                                                         None if node.k is None else self.ev(node.k))

    def copy_nz(self, node: CopyNz) -> None:   # into L1: the AI core's MTE2, as the Matmul API's loads
        tally = self.tally
        offset = self.ev(node.offset)
        nbytes = self.ev(node.rows) * self.ev(node.cols) * self.gm_dtype[node.gm].itemsize
        tally[GM] += nbytes
        tally[MMLOAD] += nbytes
        self.read[node.gm] = self.read.get(node.gm, 0) + nbytes
        self.unique[("nz", node.gm, offset)] = nbytes

    def iterate(self, node: MmIterate) -> None:
        """`while (mm.Iterate())`: every baseM x baseN tile of the core's block of C reads its rows
        of A and its columns of B over K from GM (the Matmul API's iteration; the CPU Ascend C
        implementation counts the same), then the body runs once per tile, M-first."""
        mm = self.mms[node.mm]
        f = (lambda name: self.env[f"t.{mm.tiling}_{name}" if mm.tiling else f"t.{name}"])
        state = self.mm_state.setdefault(node.mm, {})
        m, n, kk = state.get("tail", (f("singleCoreM"), f("singleCoreN"), None))
        kk = f("Ka") if kk is None else kk
        bm, bn = f("baseM"), f("baseN")
        round_m, round_n = -(-m // bm), -(-n // bn)
        for which, item, nbytes, block in (("A", mm.a.dtype.itemsize, round_n * m * kk, m * kk),
                                           ("B", mm.b.dtype.itemsize, round_m * kk * n, kk * n)):
            if state.get(which):
                self.tally[GM] += nbytes * item
                self.tally[MMLOAD] += nbytes * item
                self.read[state[which]] = self.read.get(state[which], 0) + nbytes * item
                key = (which, state[which], state.get(which + "@"))
                self.unique[key] = max(self.unique.get(key, 0), block * item)
        # the cube computes each base tile in 16 x 16 fractals: a tail tile's rows and columns round up
        frac_m = sum(-(-min(bm, m - i * bm) // 16) * 16 for i in range(round_m))
        frac_n = sum(-(-min(bn, n - j * bn) // 16) * 16 for j in range(round_n))
        self.tally[CUBE] += frac_m * frac_n * kk / self.cube_rate(mm)
        names = None if self.bodies is None else self.bodies.get(id(node))
        if names is not None:   # (addresses: a body walked before with these values adds no block)
            key = (id(node), m, n, kk, bm, bn, *(_hashable(self.env.get(x)) for x in names))
            if key in self.walked_bodies:
                return
            self.walked_bodies.add(key)
        for _ in range(round_m * round_n):
            self.run(node.body)

    def cube_rate(self, mm) -> float:
        """MACs per cycle of the AI core's cube for this Matmul's operands (cost.py's rates)."""
        rate = self.target.cube_macs_per_cycle if self.target is not None else 4096
        return rate * (cost.FLOAT32_CUBE_RATE if max(mm.a.dtype.itemsize, mm.b.dtype.itemsize) == 4 else 1.0)

    def _loop_facts(self, node: For) -> tuple | None:
        """None for a loop whose passes' work differs in other ways (or sets what lives past a
        pass), else (the number of lets at the top of its body through which alone a pass's work
        depends on the loop's variable -- 0: every pass does the same work --, the names the rest
        reads, whether the launch's blockDim is among what it depends on)."""
        known = self.uniform.get(id(node), False)
        if known is False:
            known = None
            names, effects = _shape_names(node.body)
            if not effects:
                lets = 0
                if node.var in names:   # `let cn = min(chunk, C - c0)`: the passes before the tail are alike
                    while lets < len(node.body) and isinstance(node.body[lets], Let):
                        lets += 1
                    names, _ = _shape_names(node.body[lets:])
                if node.var not in names:
                    known = (lets, tuple(sorted(names)), not _block_free(node.body))
            self.uniform[id(node)] = known
        return known

    def _pass(self, node: For, facts: tuple) -> tuple[tuple, bool]:
        """One pass's (tally delta, GM reads, UB tensor types it allocates), and whether it was walked
        now (its tallies are in) -- or taken from an earlier walk of the kernel where the names its
        work reads had the same values (what a pass defines is local to the loop: nothing after it
        reads it)."""
        lets, names, per_block = facts
        env = self.env
        key = None
        if self.memo:
            key = (id(node), self.block_dim if per_block else None, *(_hashable(env.get(n)) for n in names))
            hit = self.loop_memo.get(key)
            if hit is not None:
                if hit[2] is not None:   # the UB tensors a pass allocates, for what follows the loop
                    self.dtype.update(hit[2])
                return hit, False
        mark, typed = self.mark(), len(self.dtype)
        self.run(node.body[lets:] if lets else node.body)
        done = (*self.since(mark), dict(self.dtype) if len(self.dtype) != typed else None)
        if key is not None:
            self.loop_memo[key] = done
        return done, True

    def uniform_loop(self, node: For, passes: range, facts: tuple) -> None:
        """A loop whose passes do the same work: one pass, times the passes."""
        self.env[node.var] = passes[0]
        done, walked = self._pass(node, facts)
        self.add(done[0], done[1], len(passes) - walked)

    def alike_passes(self, node: For, passes: range, facts: tuple) -> None:
        """A loop whose passes' work depends on its variable only through the lets at the top of its
        body (a chunk's size, the last one shorter): each pass's lets, then its tallies -- walked
        once per distinct value of what they read."""
        env = self.env
        lets = node.body[:facts[0]]
        for i in passes:
            env[node.var] = i
            for let in lets:
                env[let.var] = evaluate(let.expr, env)
            done, walked = self._pass(node, facts)
            if not walked:
                self.add(done[0], done[1])


_NODE = {Step: _Walk.step, Let: _Walk.let, Var: _Walk.let, Set: _Walk.set_var, For: _Walk.loop, If: _Walk.branch,
         Alloc: _Walk.typed, DeQue: _Walk.typed, Decl: _Walk.typed, CopyIn: _Walk.copy, CopyOut: _Walk.copy,
         GatherRow: _Walk.gather, Call: _Walk.call, Return: _Walk.leave, Scalar: _Walk.scalar, Put: _Walk.scalar,
         Move: _Walk.move, Dup: _Walk.dup, UbCopy: _Walk.ub_copy, Vec: _Walk.vec, MmSet: _Walk.mm_set,
         MmTail: _Walk.mm_tail, MmIterate: _Walk.iterate, CopyNz: _Walk.copy_nz}
_NODE.update(dict.fromkeys(_NOTHING_TO_COUNT, _Walk.nothing))


@record
class KernelWork:
    """One launch's modelled work, walked from its tile IR (cycles are modelled, not measured)."""
    gm_bytes: int          # every core's GM reads and writes
    block_dim: int
    mte2: float            # the busiest core's cycles per pipe
    vec: float
    mte3: float
    head: float            # the pipe heads (cost.heads)
    cycles: float          # the busiest core: its prologue, its tiles double-buffered, plus the heads
    cube: float = 0.0      # a kernel with Matmul objects: the busiest AI core's cube cycles

    def time_us(self, target) -> float:
        return self.cycles / target.clock_mhz + cost.LAUNCH_US


def kernel_work(k: TileKernel, words=None, above: float | None = None) -> KernelWork | None:
    """The work of one launch of `k` with these tiling words (None: its own), or None for a kernel
    with Matmul objects (the Matmul API's own traffic and cube work are not in the IR), of parts,
    or a synthetic one with unnamed tensors (the report's one-op baselines).  With `above` (cycles),
    also None as soon as one core's cycles pass it: the tiling pass's candidates that cannot win
    stop after their first, busiest core."""
    if k.matmuls or k.parts or k.process is not None:
        return None
    if any(g.name is None for g in k.gms):
        return None
    words = list(k.words if words is None else words)
    if len(words) != k.word_count:
        return None
    memo = k.__dict__.setdefault("_work", {})   # a report asked again (a notebook display)
    if tuple(words) not in memo:
        work = _walk_kernel(k, words, above)
        if work is None:   # stopped past `above`: not a result to remember
            return None
        memo[tuple(words)] = work
    return memo[tuple(words)]


def kernel_gm_bytes(k: TileKernel, words=None, instances=None) -> int | None:
    """Bytes the kernel reads from and writes to GM in one launch: kernel_work's, and for a kernel
    with Matmul objects (cube, conv, attention; its parts for a kernel of several matmuls) the walk
    of its Process body on every core, the Matmul API's reads of A and B counted per base tile of
    C, the workspace's round trips as the copies the IR makes.  None for a synthetic kernel."""
    if k.parts:
        total = 0
        for node in k.process:
            if isinstance(node, RunPart):
                part = kernel_gm_bytes(k.parts[node.part], None, None if instances is None else instances[node.part])
                if part is None:
                    return None
                total += part
            elif not isinstance(node, Reset):
                return None
        return total
    if k.process is None:
        work = kernel_work(k, words)
        return None if work is None else work.gm_bytes
    if any(g.name is None for g in k.gms):
        return None
    words = list(k.words if words is None else words)
    if len(words) != k.word_count:
        return None
    memo = k.__dict__.setdefault("_gm_bytes", {})
    if (tuple(words), instances) not in memo:
        memo[(tuple(words), instances)] = _walk_process(k, words, instances)
    return memo[(tuple(words), instances)]


def process_work(k: TileKernel, target, block_dim: int, words=None, above: float | None = None) -> KernelWork | None:
    """The work of one launch of a kernel whose Process body drives Matmul objects (cube, conv,
    attention; a kernel of parts runs its parts one after another), on `block_dim` AI cores, walked
    as the chip runs it: each AI core starts GetTaskRatio() vector instances (two on a chip whose
    AI core is a cube core and two vector cores, KERNEL_TYPE_MIX_AIC_1_2; one elsewhere), instance
    b is GetBlockIdx() b, subblock b % ratio of AI core b // ratio.

    Per AI core: the cube's cycles (each base tile of every Iterate in 16 x 16 fractals over K, at
    cost.py's rate for its operands), its MTE2 (the Matmul API's loads of A and B per base tile, and
    CopyNz into L1, for every object the core serves: its vector instances only send it requests,
    ASCENDC.md 3.1) and, per vector instance, the copies and vector calls the walk tallies for every
    kernel.  A core costs max(cube, MTE2, MTE3) + a tenth of min(cube, MTE2) (the Matmul API's
    own double buffering overlaps its loads with the cube; cost.matmul_split_cycles' assumption)
    plus its vector work: Iterate is synchronous, so the epilogue of a C tile and the cube's next
    tile do not overlap.  The chip's HBM bounds the loads (cost.hbm_cycles: the distinct blocks
    read against every read).  None for a synthetic kernel or words of another struct.  With
    `above` (cycles), also None as soon as the launch provably costs more (_walk_process_time):
    the tiling pass's candidates that cannot win stop there."""
    if k.parts:
        works = []
        for node in k.process:
            if isinstance(node, RunPart):
                part = process_work(k.parts[node.part], target, block_dim)
                if part is None:
                    return None
                works.append(part)
            elif not isinstance(node, Reset):
                return None
        total = [sum(getattr(w, f) for w in works) for f in ("mte2", "vec", "mte3", "cube", "cycles")]
        head = max((w.head for w in works), default=0.0)
        return KernelWork(sum(w.gm_bytes for w in works), block_dim, total[0], total[1], total[2], head,
                          total[4] - sum(w.head for w in works) + head, total[3])
    if k.process is None or any(g.name is None for g in k.gms):
        return None
    words = list(k.words if words is None else words)
    if len(words) != k.word_count:
        return None
    return _process_work(k, target, block_dim, words, above)


def _process_work(k: TileKernel, target, block_dim: int, words: list, above: float | None,
                  env0: dict | None = None) -> KernelWork | None:
    """process_work of a kernel without parts and words of its struct (`env0`: _fields of them, when
    the caller has it)."""
    memo = k.__dict__.setdefault("_process_work", {})
    key = (tuple(words), target.name, block_dim)
    if key not in memo:
        work = _walk_process_time(k, words, target, max(1, block_dim), above, env0)
        if work is None:   # stopped past `above`: not a result to remember
            return None
        memo[key] = work
    return memo[key]


def launch_work(k: TileKernel, target, words=None, above: float | None = None) -> KernelWork | None:
    """The walk of one launch of `k` with these words (None: its own), the figures the report prints
    for it: kernel_work (`above`: its early stop), or for a kernel with Matmul objects process_work
    on the blockDim the kernel says its launch takes (`TileKernel.block_dim`).  None where neither
    walk applies."""
    if k.parts:
        return None
    if k.process is None:
        return kernel_work(k, words, above)
    if k.block_dim is None:
        return None
    w = list(k.words if words is None else words)
    if len(w) != k.word_count or any(g.name is None for g in k.gms):
        return None
    env0 = _fields(k, w)
    return _process_work(k, target, int(evaluate(k.block_dim, env0)), w, above, env0)


ALIKE_INSTANCES = 8


def _tallies() -> list:
    return [0, 0.0, 0.0, 0.0, 0.0, 0]


# _walk_process_time's early stop: the launch must cost this much more than `above` (relative) before
# a candidate is dropped, far beyond the rounding of the figures the tiling pass compares (~1e-16),
# so a dropped candidate is provably slower than the slack the pass keeps
_ABOVE_MARGIN = 1e-9


def _walk_process_time(k: TileKernel, words: list, target, block_dim: int,
                       above: float | None = None, env0: dict | None = None) -> KernelWork | None:
    """process_work's walk (`env0`: _fields(k, words), which it takes over).  With `above` (cycles),
    None as soon as one AI core's figures so far (each only grows with the instances still to walk,
    and the HBM's bound only raises MTE2) and the smallest pipe heads the launch can still have
    (_least_heads) exceed it: its cycles could only be more."""
    env0 = _fields(k, words) if env0 is None else env0
    tally = _tallies()
    ratio = 2 if target.separated else 1
    _share_shape_facts(k)
    walk = _Walk(k, env0, tally, block_dim, target)
    for g in k.gms:
        env0["gm:" + g.name] = _Counter(g.dtype.itemsize, walk, block_dim)
    cores: dict = {}   # AI core -> [MTE2 bytes it loads for its objects, cube, max over its instances of (MTE2, VEC, MTE3)]
    # what an instance's work reads -> its figures (_run_instance): a launch of a few instances
    # walks them all (finding what they read costs about a walk of two)
    alike = {} if block_dim * ratio >= ALIKE_INSTANCES else None
    if above is not None:
        above = above * (1 + _ABOVE_MARGIN) + _ABOVE_MARGIN
    try:
        for b in range(block_dim * ratio):
            own = _run_instance(walk, k, env0, b, b % ratio, ratio, alike)
            for i, v in enumerate(own):
                tally[i] += v
            core = cores.setdefault(b // ratio, [0, 0.0, 0.0, 0.0, 0.0])
            core[0] += own[MMLOAD]
            core[1] += own[CUBE]
            for i, p in enumerate((MTE2, VEC, MTE3)):
                core[2 + i] = max(core[2 + i], own[p])
            if above is not None and _core_cycles(core, cost.load_cycles(core[0], block_dim) + core[2]) + \
                    _least_heads(block_dim, max(walk.read.values(), default=0)) > above:
                return None
    finally:
        _drop_env(walk)
    reads = sum(walk.read.values())
    hbm = cost.hbm_cycles(target, sum(walk.unique.values()), reads)
    busiest = (0.0, 0.0, 0.0, 0.0, 0.0)   # (cycles, mte2, vec, mte3, cube)
    for core in cores.values():
        load, cube, mte2, vec, mte3 = core
        mte2 = max(cost.load_cycles(load, block_dim) + mte2, hbm)
        cycles = _core_cycles(core, mte2)
        if cycles > busiest[0]:
            busiest = (cycles, mte2, vec, mte3, cube)
    head = cost.heads(block_dim, max(walk.read.values(), default=0))
    return KernelWork(int(tally[GM]), block_dim, busiest[1], busiest[2], busiest[3], head, busiest[0] + head,
                      busiest[4])


def _share_shape_facts(k: TileKernel) -> None:
    """A Process kernel's shape facts (_Walk: each stage's and loop's facts, keyed by the id of the
    node; facts of the nodes alone) taken from a kernel of the same Process and stages, by identity
    as _process_plan's: the candidate kernels of one layout (lower/cube_tile.py) share those and
    would each work out the same facts again (_Walk._loop_facts: a walk of the loop's body for its
    names and for GM reads).  The third of the triple, the loop passes' tallies, is the kernel's
    own (a Process walk does not fill it)."""
    if "_shape_facts" in k.__dict__:
        return
    key = (id(k.process), id(k.stages))
    same = _SHAPES.get(key)
    if same is None or same[0] is not k.process or same[1] is not k.stages:
        same = (k.process, k.stages, {}, {})
        _SHAPES.put(key, same)
    k.__dict__["_shape_facts"] = (same[2], same[3], {})


_SHAPES = Lru(16)   # (id(process), id(stages)) -> (those, the stage facts, the loop facts): _share_shape_facts


def _least_heads(block_dim: int, largest: float) -> float:
    """The smallest pipe heads (cost.heads, by the largest input the launch reads) a launch can have
    when the largest it has read so far is `largest` (reads only grow): its heads once past
    cost.MTE2_HEAD_THRESHOLD, else the smaller of the two."""
    if largest >= cost.MTE2_HEAD_THRESHOLD:
        return cost.heads(block_dim, largest)
    return min(cost.heads(block_dim, 0), cost.heads(block_dim, cost.MTE2_HEAD_THRESHOLD))


def _core_cycles(core: list, mte2: float) -> float:
    """An AI core's cycles from its [MTE2 bytes loaded for its objects, cube, MTE2, VEC, MTE3] and its
    MTE2 cycles in all: the Matmul API's loads overlap the cube, the epilogue does not (process_work).
    Never smaller for larger figures (the early stop of _walk_process_time relies on it)."""
    cube, vec, mte3 = core[1], core[3], core[4]
    return max(cube, mte2, mte3) + 0.1 * min(cube, mte2) + vec


def _drop_env(walk: _Walk) -> None:
    """The end of a Process walk: its last instance's env (GM counters and `ub`, which refer to the
    walk) let go, so the walk and what it holds are freed when the caller drops them, not left as
    cycles for the collector -- a compile pauses it and collects at its end (gcpause), walking all
    that garbage: each of the tiling pass's walks left its instances' envs and counters, and kept the
    candidate kernel it walked (and its expressions) alive until then (the 60 cube programs of
    row_compile_time.py: 35,335 -> 6,648 unreachable objects at the compiles' ends)."""
    walk.env = None


def _fields(k: TileKernel, words: list) -> dict:
    env0 = {}
    for name, (w, n) in k.field_offsets().items():
        env0["t." + name] = words[w] if n == 0 else words[w:w + n]
    for f in k.fields:
        if f.ctype != "uint32_t":
            env0["t." + f.name] = 0   # a runtime scalar: its value steers nothing counted
    return env0


def _run_instance(walk: _Walk, k: TileKernel, env0: dict, block: int, subblock: int, ratio: int,
                  alike: dict | None = None) -> list:
    """One vector instance of a Process kernel: Init (its scalar members) and Process, walked; its
    tallies (its own, counted from 0: what an instance does is one sum, whichever walked before).
    With `alike` (a dict the walk of one launch owns), an instance whose work reads the same values
    as one walked before in this launch takes that one's figures (_process_plan) and walks only the
    addresses of the blocks it reads (the HBM's share: _Walk.addresses)."""
    launch = walk.tally
    walk.tally = first = _tallies()
    rest = None
    env = dict(env0, block=block, subblock=subblock, ratio=ratio)
    env["ub"] = walk.ub_get
    for m in k.members:
        env[m.name] = 0 if m.init is None else evaluate(m.init, env)
    walk.env = env
    walk.mm_state = {}
    plan = None if alike is None else _process_plan(k)
    try:
        if plan is None:
            walk.run(k.process)
        else:
            prefix, names, needed, bodies, pruned = plan
            walk.run(k.process[:prefix])   # the instance's block: lets and sets (an idle one returns here)
            key = tuple(_hashable(env.get(n)) for n in names)
            hit = alike.get(key)
            if hit is not None:
                walk.addresses(pruned[None], needed, bodies, pruned)
                rest, reads = hit
                walk.add((), reads)
            else:
                walk.tally = rest = _tallies()
                mark = walk.mark()
                try:
                    walk.run(k.process[prefix:])
                finally:
                    alike[key] = (rest, walk.since(mark)[1])
    except _Return:
        pass
    finally:
        walk.tally = launch
    return first if rest is None else [a + b for a, b in zip(first, rest)]


def _process_plan(k: TileKernel) -> tuple | None:
    """(the leading Process nodes every vector instance runs first -- lets and sets of its block, an
    idle instance's return --, the names the rest's work reads, the ids of the rest's nodes the
    addresses of its blocks depend on), or None when nothing follows the leading nodes.

    Two instances of one launch whose values of those names agree after the leading nodes do the
    same work -- the same tallies and GM reads: the names are everything the walk (_NODE) reads for them
    (copy sizes, vector call counts, a Matmul's tail and its tiling's fields, control flow, each
    expression that reads GM or UB elements) and every variable those are computed from, through
    the stages called -- and differ only in the addresses of what they read (the distinct blocks:
    _Walk.unique), which _Walk.addresses walks: the nodes that read a block or end the walk, those
    that set a variable their addresses (or a loop's bounds, a branch's condition, a call's
    argument around them) read, and the loops, branches and calls that hold any of them."""
    plan = k.__dict__.get("_process_plan", False)
    if plan is False:
        # the plan reads the Process body, the stages and the Matmul objects only: the candidate
        # kernels of one layout share them (lower/cube_tile.py) -- by identity, the entry holding
        # them (so no id is reused while it lives); a TileKernel is not changed once built
        key = (id(k.process), id(k.stages), id(k.matmuls))
        same = _PLANS.get(key)
        if same is not None and same[0] is k.process and same[1] is k.stages and same[2] is k.matmuls:
            k.__dict__["_process_plan"] = same[3]
            return same[3]
        prefix = 0
        while prefix < len(k.process) and _pure(k.process[prefix]):
            prefix += 1
        plan = None
        if prefix < len(k.process):
            a = _Facts({st.name: st for st in k.stages}, {mm.name: mm for mm in k.matmuls})
            a.body(k.process[prefix:], (), frozenset(), frozenset())
            needed, bodies = a.needed()
            plan = (prefix, tuple(sorted(_closure(a.reads, a.defs))), needed, bodies,
                    _pruned(k.process[prefix:], k.stages, needed))
        k.__dict__["_process_plan"] = plan
        _PLANS.put(key, (k.process, k.stages, k.matmuls, plan))
    return plan


_PLANS = Lru(16)   # (id(process), id(stages), id(matmuls)) -> (those, the plan): _process_plan


def _pruned(rest: tuple, stages, needed: frozenset) -> dict:
    """id of each body of the kernel (the stages', the loops', branches' and Iterates' in them) -> the
    tuple of its needed nodes; None -> the rest of Process's."""
    out: dict = {}
    for st in stages:
        _prune(st.body, needed, out)
    _prune(rest, needed, out)
    out[None] = out.pop(id(rest))
    return out


def _prune(body, needed: frozenset, out: dict) -> None:
    """_pruned of `body` and the bodies inside it (a function of the module, not a closure calling
    itself: that would be a cycle left for the collector at the end of a compile)."""
    if id(body) in out:
        return
    out[id(body)] = tuple(n for n in body if id(n) in needed)
    for n in body:
        for inner in (getattr(n, "body", None), getattr(n, "then", None), getattr(n, "orelse", None)):
            if type(inner) is tuple:
                _prune(inner, needed, out)


def _pure(node) -> bool:
    """A node that only sets variables (or leaves Process): what an instance runs to find its block."""
    if isinstance(node, (Let, Var, Set)):
        return True
    if isinstance(node, If):
        return all(isinstance(n, (Return, Let, Var, Set)) for n in node.then + node.orelse)
    return False


def _closure(names: set, defs: dict) -> set:
    """`names` and what the variables among them are computed from, and so on."""
    for _ in range(len(defs) + 1):
        grown = names.union(*(defs[v] for v in names if v in defs))
        if grown == names:
            break
        names = grown
    return names


# the expressions the walk (_NODE) evaluates, per node type
_EVALUATED = {Step: ("count", "offset"), Let: ("expr",), Var: ("expr",), Set: ("expr",), For: ("start", "end", "step"),
              If: ("cond",), CopyIn: ("offset", "rows", "cols"), CopyOut: ("offset", "rows", "cols"),
              GatherRow: ("pos", "cols"), Call: ("arg",), Scalar: ("expr",), Put: ("expr", "index"),
              Dup: ("value", "count"), UbCopy: ("count",), Vec: ("count",), MmSet: ("offset",),
              MmTail: ("m", "n", "k"), CopyNz: ("offset", "rows", "cols")}
# the nodes that add to the distinct blocks read (_Walk.unique) -- the expressions their keys read --
# or end an instance's walk
_ADDRESSED = {CopyIn: ("offset", "rows", "cols"), CopyNz: ("offset", "rows", "cols"), MmSet: ("offset",),
              MmTail: ("m", "n", "k"), MmIterate: (), Return: ()}


def _loads(e) -> bool:
    """Whether evaluating `e` tallies something (a GM or UB element read)."""
    if type(e) is tuple:
        return bool(e) and (e[0] in ("load", "get") or any(_loads(x) for x in e[1:]))
    return False


def _iterate_fields(mm) -> tuple:
    """The tiling fields _Walk.iterate reads for Matmul object `mm`."""
    return tuple(f"t.{mm.tiling}_{f}" if mm.tiling else f"t.{f}" for f in ("singleCoreM", "singleCoreN", "Ka", "baseM",
                                                                          "baseN"))


class _Facts:
    """One pass over a Process body's nodes (and the stages they call) for _process_plan."""

    def __init__(self, stages: dict, mms: dict):
        self.stages, self.mms = stages, mms
        self.reads: set = set()      # the names the work's tallies and GM reads depend on
        self.defs: dict = {}         # variable -> the names its definitions read (a compound Set: itself too)
        self.addressed: list = []    # (the node and the nodes holding it, the names their evaluation reads)
        self.sites: dict = {}        # variable -> [(its defining node and those holding it, the names read)]
        self.iterates: set = set()   # the ids of the MmIterate nodes
        self.whole: set = set()      # ... of those whose body holds a Matmul node or a Return (walked whole)

    def define(self, var: str, exprs, path: tuple, ctrl: frozenset) -> None:
        names = self.defs.setdefault(var, set())
        for e in exprs:
            _names(e, names)
        self.sites.setdefault(var, []).append((path, ctrl | names))

    def body(self, body, path: tuple, ctrl: frozenset, calling: frozenset) -> None:
        """`path`: the ids of the loops, branches, calls and Iterates holding `body`; `ctrl`: the
        names their bounds, conditions and arguments read."""
        reads = self.reads
        for node in body:
            kind = type(node)
            here = path + (id(node),)
            if kind in (MmSet, MmTail, MmIterate, Return):
                self.whole.update(i for i in path if i in self.iterates)
            for name in _EVALUATED.get(kind, ()):
                e = getattr(node, name)
                if _loads(e):   # (a `sel` may skip an element read: the names it reads count)
                    _names(e, reads)
            if kind in _ADDRESSED:
                names = set(ctrl)
                for name in _ADDRESSED[kind]:
                    _names(getattr(node, name), names)
                if kind is MmIterate:
                    names.update(_iterate_fields(self.mms[node.mm]))
                self.addressed.append((here, names))
            if kind in (CopyIn, CopyOut, CopyNz):
                _names(node.rows, reads), _names(node.cols, reads)
            elif kind is GatherRow:
                _names(node.cols, reads)
            elif kind in (Vec, Dup, UbCopy):
                _names(node.count, reads)
            elif kind is Step:
                _names("n" if node.count is None else node.count, reads)
            elif kind in (Let, Var, Scalar):
                self.define(node.var, (node.expr,), here, ctrl)
            elif kind is Set:
                self.define(node.var, (node.expr,) + (() if node.op == "=" else (node.var,)), here, ctrl)
            elif kind is For:
                bounds = (node.start, node.end, node.step)
                for e in bounds:
                    _names(e, reads)
                inner = set(ctrl)
                for e in bounds:
                    _names(e, inner)
                for let in node.body:   # (the lets a pass of alike passes evaluates first, as the walk does)
                    if type(let) is not Let:
                        break
                    _names(let.expr, inner)
                self.define(node.var, bounds, here, ctrl)
                self.body(node.body, here, frozenset(inner), calling)
            elif kind is If:
                _names(node.cond, reads)
                inner = frozenset(_names(node.cond, set(ctrl)))
                self.body(node.then, here, inner, calling)
                self.body(node.orelse, here, inner, calling)
            elif kind is Call:
                st = self.stages[node.stage]
                inner = frozenset(_names(node.arg, set(ctrl)))
                if st.param:
                    self.define(st.param, (node.arg,), here, ctrl)
                if node.stage not in calling:
                    self.body(st.body, here, inner, calling | {node.stage})
                else:   # (a stage calling itself: walked whole)
                    self.addressed.append((here, set(inner)))
            elif kind is MmTail:
                for e in (node.m, node.n, node.k):
                    _names(e, reads)
            elif kind is MmIterate:   # the block's sizes (a tail's, else the tiling's) and base tile
                reads.update(_iterate_fields(self.mms[node.mm]))
                self.iterates.add(id(node))
                self.body(node.body, here, ctrl, calling)

    def needed(self) -> tuple[frozenset, dict]:
        """The ids of the nodes the addresses depend on, and per Iterate (but those walked whole)
        the names its body's needed nodes read (_process_plan)."""
        names: set = set()
        ids: set = set()
        inside: dict = {i: set() for i in self.iterates - self.whole}

        def take(path, read):
            nonlocal names
            ids.update(path)
            names |= read
            for i in path[:-1]:   # (the node itself: not inside)
                if i in inside:
                    inside[i] |= read
        for path, read in self.addressed:
            take(path, read)
        done: set = set()
        while True:
            new = [v for v in names if v in self.sites and v not in done]
            if not new:
                return frozenset(ids), {i: tuple(sorted(n)) for i, n in inside.items()}
            for v in new:
                done.add(v)
                for path, read in self.sites[v]:
                    take(path, read)


def _walk_process(k: TileKernel, words: list, instances: int | None = None) -> int:
    """GM bytes of a kernel whose Process body drives Matmul objects, over its vector instances
    (the interpreter's: each `block`, subblock 0, ratio 1), plus the Init of idle instances."""
    env0 = _fields(k, words)
    tally = _tallies()
    cores = evaluate(k.cores, env0)
    walk = _Walk(k, env0, tally, max(1, cores))
    for g in k.gms:
        env0["gm:" + g.name] = _Counter(g.dtype.itemsize, walk, max(1, cores))
    try:
        for b in range(cores):
            tally[GM] += _run_instance(walk, k, env0, b, 0, 1)[GM]
    finally:
        _drop_env(walk)
    for b in range(cores, instances or 0):   # launched, idle: Init reads the scalar members
        env = dict(env0, block=b, subblock=0, ratio=1)
        for m in k.members:
            env[m.name] = 0 if m.init is None else evaluate(m.init, env)
    return int(tally[GM])


def _defined(body, out: set) -> set:
    """The variables a body sets or defines (its own locals too)."""
    for node in body:
        if isinstance(node, (Let, Var, Scalar, Set)):
            out.add(node.var)
        elif isinstance(node, For):
            out.add(node.var)
            _defined(node.body, out)
        elif isinstance(node, If):
            _defined(node.then, out)
            _defined(node.orelse, out)
    return out


def _sets_only(body) -> bool:
    """Whether a body only sets variables (sets, lets, and branches of them on conditions that read
    no GM or UB element): walked, it counts nothing."""
    for n in body:
        kind = type(n)
        if kind is If:
            if _loads(n.cond) or not _sets_only(n.then) or not _sets_only(n.orelse):
                return False
        elif kind is not Set and kind is not Let:
            return False
    return True


def _tile_plan(k: TileKernel, walk: _Walk) -> list | None:
    """The per-tile stages as a core's key reads them: (stage, None) for a stage that only sets
    variables from the tile (`set row0 = tile * t.tileRows`: nothing counted), (stage, the names
    among those its memoised tallies read (_Walk.stage) that such a stage sets or that hold the
    tile) for the others.  None -- no core is taken for another -- when a stage is neither, or one
    reads what another of them defines (a value the key would not see change)."""
    plan = k.__dict__.get("_tile_plan", False)
    if plan is False:
        per_tile = [st for st in k.stages if not st.once]
        pure = [st for st in per_tile if _sets_only(st.body)]
        varying = {st.param for st in per_tile if st.param} | _defined([n for st in pure for n in st.body], set())
        plan = []
        for st in per_tile:
            if st in pure:
                plan.append((st, None))
                continue
            sig = walk.stage_sig.get(st.name, False)
            if sig is False:
                names, effects = _shape_names(st.body)
                sig = walk.stage_sig[st.name] = None if effects else tuple(sorted(names))
            others = set().union(*(_defined(o.body, set()) for o in per_tile if o is not st and o not in pure))
            if sig is None or others & set(sig):
                plan = None
                break
            plan.append((st, tuple(n for n in sig if n in varying)))
        k.__dict__["_tile_plan"] = plan
        # the plan's keys as generated code (tile/tile_keys.py), None where it does not compile
        k.__dict__["_tile_keys_code"] = None if plan is None else compile_tile_keys(plan)
    return plan


def _tile_keys(walk: _Walk, plan: list, env: dict, tiles: range) -> tuple:
    """What each tile's work depends on beyond what every core of the launch shares: the values of
    the tile's variables its memoised stages read, after the stages that set them ran (a core's
    tiles from the prologue's values: `env` is the core's own copy)."""
    code = walk.k.__dict__.get("_tile_keys_code")
    if code is not None:   # the same keys from the stages compiled to Python (tile/tile_keys.py)
        try:
            keys = code(env, tiles.start, tiles.stop)
        except (ArithmeticError, IndexError):   # (the walk meets it again, as before)
            keys = None
        if keys is not None:
            return tuple(keys)
    keys = []
    was, walk.env = walk.env, env
    for tile in tiles:
        key = []
        for st, names in plan:
            if st.param:
                env[st.param] = tile
            if names is None:
                walk.run(st.body)
            elif names:
                key.append(tuple(_hashable(env.get(n)) for n in names))
        keys.append(tuple(key))
    walk.env = was
    return tuple(keys)


def _every_key(k: TileKernel, prologue: dict, tiles: int) -> list | None:
    """Every tile's key (`_tile_keys`') in one call of the kernel's compiled key code, where a
    tile's key depends on the tile alone (each core computes its tiles' keys from the prologue's
    values: that is the same only when no tile reads what an earlier tile set); else None."""
    code = k.__dict__.get("_tile_keys_code")
    if code is None or not code.stateless:
        return None
    try:
        return code(prologue, 0, tiles)
    except (ArithmeticError, IndexError):   # (the core that meets it raises it, as before)
        return None


def _walk_kernel(k: TileKernel, words: list, above: float | None = None) -> KernelWork | None:
    env0 = _fields(k, words)
    tally = _tallies()
    tiles, per_core = env0.get("t.totalTiles", 0), env0.get("t.tilesPerCore", 0)
    blocks = -(-tiles // per_core) if per_core else 0
    walk = _Walk(k, env0, tally, max(1, blocks), memo=True)
    for g in k.gms:
        env0["gm:" + g.name] = _Counter(g.dtype.itemsize, walk, max(1, blocks))
    # Every core starts alike (Init and the prologue read the launch's fields, not the core), and a
    # tile's work depends on the tile only through the variables its first stages set from it
    # (row0, nrows): tiles whose memoised stages read the same values of those do the same work, and
    # so do cores whose tiles do (most of a launch: all but the tail) -- each walked once and its
    # figures reused; the keys cost the tile's variables, a few names' values.
    plan = _tile_plan(k, walk)
    prologue = None     # the env after a core's Init and prologue: every core's
    every = None        # each tile's key, when one pass over the launch's tiles gives them (_every_key)
    cores: dict = {}    # the tiles' keys -> (cycles, tally delta, GM reads delta) of a core
    done: dict = {}     # a tile's key -> (tally delta, GM reads delta, its pipes) of a tile
    busiest = (0.0, 0.0, 0.0, 0.0)   # (cycles, mte2, vec, mte3) of the slowest core
    for b in range(blocks):
        span = range(b * per_core, min(tiles, (b + 1) * per_core))
        keys = hit = None
        if prologue is not None:
            keys = tuple(every[span.start:span.stop]) if every is not None else \
                _tile_keys(walk, plan, dict(prologue), span)
            hit = cores.get(keys)
        if hit is not None:
            core, delta, reads = hit
            walk.add(delta, reads)
        else:
            env = dict(env0)
            env["ub"] = walk.ub_get
            start = walk.mark()
            for m in k.members:   # Init: a scalar member's GM element is read once per core
                env[m.name] = 0 if m.init is None else evaluate(m.init, env)
            walk.env = env
            core = 0.0
            first = None
            returned = False
            try:
                for st in k.stages:
                    if st.once:
                        walk.run(st.body)
                core += sum(tally[p] - start[0][p] for p in (MTE2, VEC, MTE3))   # the prologue, in turn
                if plan is not None and prologue is None:
                    prologue = dict(env)
                    every = _every_key(k, prologue, tiles)
                    keys = tuple(every[span.start:span.stop]) if every is not None else \
                        _tile_keys(walk, plan, dict(prologue), span)
                for n, tile in enumerate(span):
                    same = None if keys is None else done.get(keys[n])
                    if same is not None:
                        walk.add(same[0], same[1])
                        pipes = same[2]
                    else:
                        mark = walk.mark()
                        for st in k.stages:
                            if st.once:
                                continue
                            if st.param:
                                env[st.param] = tile
                            walk.stage(st)
                        delta, reads = walk.since(mark)
                        pipes = [delta[p] for p in (MTE2, VEC, MTE3)]
                        if keys is not None:
                            done[keys[n]] = (delta, reads, pipes)
                    core += max(pipes)
                    if first is None:   # the pipes' fill and drain: one tile of the other pipes
                        first = sum(pipes) - max(pipes)
                        core += first
            except _Return:
                returned = True
            delta, reads = walk.since(start)
            if keys is not None and not returned:
                cores[keys] = (core, delta, reads)
        if core > busiest[0]:
            busiest = (core, delta[MTE2], delta[VEC], delta[MTE3])
            if above is not None and core > above:   # the launch costs at least this core's cycles
                return None
    head = cost.heads(max(1, blocks), max(walk.read.values(), default=0)) if blocks else 0.0
    return KernelWork(int(tally[GM]), blocks, busiest[1], busiest[2], busiest[3], head, busiest[0] + head)

