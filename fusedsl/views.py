"""Views in vector kernels: slice, concatenate and take become CopyIn/CopyOut addressing.

A vector kernel may read its parameters through static views: `x[a:b, c:d:s]`,
`concatenate([a, b], axis)`, and `take(table, indices)` (a gather of table rows, axis 0 of a
2-D table).  No view is ever materialised: each tile input is read straight from the
parameter(s) it views, and only the elements the kernel needs are moved.

`normalize(fn)` first moves slices that follow elementwise ops onto the ops' operands
(`relu(x)[:, 8:40] == relu(x[:, 8:40])`; a broadcast operand is sliced only on the axes it
has), so that afterwards every view op reads parameters or other view ops and every
elementwise op runs in the kernel's output shape S.

`plan_views(fn)` then describes how each "load" (a value read by elementwise ops: a view
root or a plain parameter) is addressed over S.  Concatenation makes the address map
piecewise, so S is cut into boxes (the common refinement of every load's pieces, then cut
further until every box is a 2-D [rows, cols] block whose rows are equally spaced in every
tensor it touches).  In a box, load j reads element (r, c) at

    off + r * rs + c * cs        of parameter `src`     (cs: 1 contiguous, 0 one value per row)

and a gather load reads table row idx[idx_off + r * idx_rs] at column off + c.  The output
is written at out_off + r * out_rs + c.  Everything is static (shapes of view kernels are
static), so the box table is data: the printed kernel carries it in its tiling struct, the
LLVM backend turns it into a row table, the tile interpreter walks it.

What does not fuse (`ViewError`, reason code FS114 on the boundary): symbolic shapes, a
step on the last axis (DMA moves contiguous runs of whole elements: a step > 1 there would
be one copy per element), a concatenate or slice of computed values that cannot be moved
onto parameters, take along another axis or of a table that is not 2-D, and plans of more
than MAX_BOXES boxes.
"""
from __future__ import annotations


import numpy as np

from .record import record
from .errors import IndexRangeError
from .ir.core import Function, Op, TensorType, Value, freeze_attrs
from .ir.ops import BROADCAST, CONSTANT, ELEMENTWISE, SHAPE, has_trait, take_range_message

VIEW_OPS = ("slice", "concatenate", "take")
MAX_BOXES = 256


class ViewError(Exception):
    """A view that cannot become addressing (the message is the boundary's reason)."""


def has_views(fn: Function) -> bool:
    return any(op.name in VIEW_OPS for op in fn.ops)


def _contig(shape) -> tuple[int, ...]:
    st, acc = [], 1
    for d in reversed(shape):
        st.append(acc)
        acc *= d
    return tuple(reversed(st))


# ---- normalisation: slices move onto parameters -----------------------------------------------
def _is_pointwise(op: Op) -> bool:
    return has_trait(op, ELEMENTWISE) or (op.name == "broadcast_to" and has_trait(op, BROADCAST)
                                          and has_trait(op, SHAPE))


def _slice_op(x: Value, starts, stops, steps, loc) -> Op:
    from .ir.ops import infer_types
    attrs = freeze_attrs({"starts": list(starts), "stops": list(stops), "steps": list(steps)})
    (t,) = infer_types("slice", (x.type,), dict(attrs))
    return Op("slice", (x,), (Value(t),), attrs, loc)


def normalize(fn: Function) -> Function:
    """The same function with every slice of an elementwise result moved onto its operands
    (see module doc).  Raises ViewError when a slice reads something else computed."""
    if not any(op.name == "slice" for op in fn.ops):
        return fn
    producer = {id(r): op for op in fn.ops for r in op.results}
    new_ops: list[Op] = []
    remap: dict[int, Value] = {}
    made: dict[tuple, Value] = {}

    def sliced(v: Value, starts, stops, steps, loc) -> Value:
        """v[starts:stops:steps] as a value built from parameters (ops appended to new_ops)."""
        if tuple(starts) == (0,) * len(starts) and tuple(stops) == tuple(v.shape) and set(steps) <= {1}:
            return get(v)
        key = (id(v), tuple(starts), tuple(stops), tuple(steps))
        if key in made:
            return made[key]
        op = producer.get(id(v))
        if op is None or op.name in VIEW_OPS:
            out = _slice_op(get(v), starts, stops, steps, loc)
            new_ops.append(out)
            res = out.result
        elif has_trait(op, CONSTANT):
            res = get(v)   # 0-d constants broadcast: nothing to slice
        elif _is_pointwise(op):
            rank = len(v.shape)
            operands = []
            for x in op.operands:
                lead = rank - len(x.shape)
                s, e, p = [], [], []
                for d, size in enumerate(x.shape):
                    if size == 1 and v.shape[d + lead] != 1:
                        s.append(0), e.append(1), p.append(1)    # broadcast axis: nothing to cut
                    else:
                        s.append(starts[d + lead]), e.append(stops[d + lead]), p.append(steps[d + lead])
                operands.append(sliced(x, s, e, p, loc) if x.shape else get(x))
            attrs = dict(op.attrs)
            if op.name == "broadcast_to":
                attrs["shape"] = [len(range(a, b, c)) for a, b, c in zip(starts, stops, steps)]
            from .ir.ops import infer_types
            frozen = freeze_attrs(attrs)
            types = infer_types(op.name, tuple(o.type for o in operands), dict(frozen))
            new = Op(op.name, tuple(operands), tuple(Value(t) for t in types), frozen, op.loc)
            new_ops.append(new)
            res = new.result
        else:
            raise ViewError(f"a slice of {op.name} cannot move onto the kernel's inputs")
        made[key] = res
        return res

    def get(v: Value) -> Value:
        return remap.get(id(v), v)

    for op in fn.ops:
        if op.name == "slice" and producer.get(id(op.operands[0])) is not None \
                and producer[id(op.operands[0])].name not in VIEW_OPS:
            remap[id(op.result)] = sliced(op.operands[0], op.attr("starts"), op.attr("stops"),
                                          op.attr("steps"), op.loc)
            continue
        new = Op(op.name, tuple(get(v) for v in op.operands), op.results, op.attrs, op.loc)
        new_ops.append(new)
    results = tuple(get(v) for v in fn.results)
    # drop ops nobody reads any more (the unsliced elementwise ops)
    live: set[int] = {id(v) for v in results}
    kept: list[Op] = []
    for op in reversed(new_ops):
        if any(id(r) in live for r in op.results):
            kept.append(op)
            live.update(id(v) for v in op.operands)
    return Function(fn.name, fn.params, tuple(reversed(kept)), results, fn.loc)


# ---- address maps -------------------------------------------------------------------------------
@record
class _Map:
    """Address of element i (coordinates of some value): param `src` at off + sum(st[d] * i[d]).
    A gather map reads table `src` row idx[ioff + sum(ist[d] * i[d])] (d over all but the last
    axis), column off + i[-1]; D is the table's row length."""

    src: int
    off: int
    st: tuple[int, ...]
    gather: tuple | None = None   # (idx param, ioff, ist, D)

    def shift(self, axis: int, by: int) -> "_Map":
        """The map in coordinates shifted by `by` on `axis` (i' = i + by)."""
        if self.gather is None or axis == len(self.st) - 1:
            return _Map(self.src, self.off + self.st[axis] * by, self.st, self.gather)
        ip, ioff, ist, D = self.gather
        return _Map(self.src, self.off, self.st, (ip, ioff + ist[axis] * by, ist, D))


def _resolve(v: Value, lo, hi, producer, param_pos) -> list[tuple[tuple, tuple, _Map]]:
    """Pieces (lo, hi, map) covering the box [lo, hi) of value v, in v's coordinates."""
    if id(v) in param_pos:
        return [(tuple(lo), tuple(hi), _Map(param_pos[id(v)], 0, _contig(v.shape)))]
    op = producer[id(v)]
    if op.name == "slice":
        (x,) = op.operands
        starts, steps = op.attr("starts"), op.attr("steps")
        xlo = [a + s * l for a, s, l in zip(starts, steps, lo)]
        xhi = [a + s * (h - 1) + 1 for a, s, h in zip(starts, steps, hi)]
        out = []
        for plo, phi, m in _resolve(x, xlo, xhi, producer, param_pos):
            ilo = [max(l, -(-(p - a) // s)) for l, p, a, s in zip(lo, plo, starts, steps)]
            ihi = [min(h, -(-(p - a) // s)) for h, p, a, s in zip(hi, phi, starts, steps)]
            if any(a >= b for a, b in zip(ilo, ihi)):
                continue
            if m.gather is None:
                nm = _Map(m.src, m.off + sum(s * a for s, a in zip(m.st, starts)),
                          tuple(s * p for s, p in zip(m.st, steps)))
            else:
                if steps[-1] != 1:
                    raise ViewError("a step on the last axis of a take")
                ip, ioff, ist, D = m.gather
                nm = _Map(m.src, m.off + starts[-1], m.st,
                          (ip, ioff + sum(s * a for s, a in zip(ist, starts[:-1])),
                           tuple(s * p for s, p in zip(ist, steps[:-1])), D))
            out.append((tuple(ilo), tuple(ihi), nm))
        return out
    if op.name == "concatenate":
        axis = op.attr("axis")
        out, base = [], 0
        for x in op.operands:
            n = x.shape[axis]
            a, b = max(lo[axis], base), min(hi[axis], base + n)
            if a < b:
                xlo = list(lo)
                xhi = list(hi)
                xlo[axis], xhi[axis] = a - base, b - base
                for plo, phi, m in _resolve(x, xlo, xhi, producer, param_pos):
                    plo, phi = list(plo), list(phi)
                    plo[axis] += base
                    phi[axis] += base
                    out.append((tuple(plo), tuple(phi), m.shift(axis, -base)))
            base += n
        return out
    if op.name == "take":
        table, idx = op.operands
        if op.attr("axis") != 0 or len(table.shape) != 2:
            raise ViewError("take fuses along axis 0 of a 2-D table only")
        if id(table) not in param_pos or id(idx) not in param_pos:
            raise ViewError("take of a computed table or computed indices")
        D = table.shape[1]
        ist = _contig(idx.shape)
        m = _Map(param_pos[id(table)], 0, (0,) * len(idx.shape) + (1,),
                 (param_pos[id(idx)], 0, ist, D))
        return [(tuple(lo), tuple(hi), m)]
    raise ViewError(f"{op.name} computes its value: only slices, concatenations and takes of the "
                    "kernel's inputs become addressing")


@record
class BoxSrc:
    sel: int            # which of the load's sources (ViewLoad.sources) this box reads
    off: int
    rs: int
    cs: int             # 1: contiguous columns; 0: one value per row
    ioff: int = 0       # gather: element offset into the indices ...
    irs: int = 0        # ... and their stride per row


@record
class Box:
    rows: int
    cols: int
    out_off: int
    out_rs: int
    srcs: tuple[BoxSrc, ...]   # per load


@record
class ViewLoad:
    value: Value                # the loaded value (in the kernel after normalize)
    sources: tuple[int, ...]    # kernel parameter indices it reads (a table for a gather)
    gather: tuple | None        # (indices param index, table rows V, row length D) for a take
    loc: object = None          # the take's source line (out-of-range index errors name it)
    attrs: tuple = ()           # the take's attributes (its optional `origin`: the user's op)


@record
class ViewPlan:
    S: tuple[int, ...]
    loads: tuple[ViewLoad, ...]
    boxes: tuple[Box, ...]


def plan_views(fn: Function, loads: list[Value]) -> ViewPlan:
    """Boxes for the values `loads` read by the kernel's elementwise ops (module doc)."""
    S = tuple(fn.results[0].shape)
    if not all(isinstance(d, int) for d in S) or not all(
            isinstance(d, int) for p in fn.params for d in p.value.shape):
        raise ViewError("views need static shapes")
    if not S:
        S = (1,)
    rank = len(S)
    producer = {id(r): op for op in fn.ops for r in op.results}
    param_pos = {id(p.value): i for i, p in enumerate(fn.params)}
    per_load = []
    for v in loads:
        lead = rank - len(v.shape)
        bdims = [d for d in range(rank) if d < lead or (v.shape[d - lead] == 1 and S[d] != 1)]
        vlo = [0] * len(v.shape)
        vhi = list(v.shape)
        pieces = []
        for plo, phi, m in _resolve(v, vlo, vhi, producer, param_pos):
            slo, shi, st = [], [], []
            ist = [] if m.gather else None
            for d in range(rank):
                if d in bdims:
                    slo.append(0), shi.append(S[d]), st.append(0)
                    if m.gather and d < rank - 1:
                        ist.append(0)
                    continue
                k = d - lead
                slo.append(plo[k]), shi.append(phi[k]), st.append(m.st[k])
                if m.gather and d < rank - 1:
                    ist.append(m.gather[2][k] if k < len(m.gather[2]) else 0)
            gather = None if m.gather is None else (m.gather[0], m.gather[1], tuple(ist), m.gather[3])
            pieces.append((tuple(slo), tuple(shi), _Map(m.src, m.off, tuple(st), gather)))
        per_load.append(pieces)
    # the common refinement of every load's pieces
    cuts = [{0, S[d]} for d in range(rank)]
    for pieces in per_load:
        for plo, phi, _ in pieces:
            for d in range(rank):
                cuts[d].update((plo[d], phi[d]))
    cuts = [sorted(c) for c in cuts]
    cells = [((), ())]
    for d in range(rank):
        cells = [(lo + (a,), hi + (b,)) for lo, hi in cells for a, b in zip(cuts[d], cuts[d][1:])]
    out_st = _contig(S)
    sources = [[] for _ in loads]
    boxes: list[Box] = []
    work = list(cells)
    while work:
        lo, hi = work.pop(0)
        maps = []
        for j, pieces in enumerate(per_load):
            m = next(m for plo, phi, m in pieces
                     if all(a <= l and h <= b for a, b, l, h in zip(plo, phi, lo, hi)))
            maps.append(m)
        ext = [h - l for l, h in zip(lo, hi)]
        # trailing axes every tensor holds contiguously over the box join its columns (a lone
        # concatenation along a middle axis is one box per input, not one per outer index)
        first_col = rank - 1
        flat = [out_st] + [m.st for m in maps]
        if not any(m.gather for m in maps) and all(st[-1] == 1 for st in flat):
            while first_col > 0 and all(st[first_col - 1] == st[first_col] * ext[first_col] for st in flat):
                first_col -= 1
        row_dims = [d for d in range(first_col) if ext[d] > 1]
        strides = [out_st] + [m.st for m in maps] + [m.gather[2] for m in maps if m.gather]
        uniform = all(st[a] == st[b] * ext[b] for st in strides for a, b in zip(row_dims, row_dims[1:]))
        if not uniform:   # cut along the outermost row axis and try again
            d = row_dims[0]
            work[:0] = [(lo[:d] + (i,) + lo[d + 1:], hi[:d] + (i + 1,) + hi[d + 1:]) for i in range(lo[d], hi[d])]
            if len(boxes) + len(work) > MAX_BOXES:
                raise ViewError(f"the views need more than {MAX_BOXES} pieces")
            continue
        inner = row_dims[-1] if row_dims else None
        rows = 1
        for d in range(first_col):
            rows *= ext[d]
        cols = 1
        for d in range(first_col, rank):
            cols *= ext[d]
        srcs = []
        for j, m in enumerate(maps):
            # the column stride of a load is the same in every box (one code path per load
            # on the CPU); a stepped last axis is only harmless where a box has one column
            cs = m.st[-1] if m.st[-1] in (0, 1) or cols > 1 else 1
            if m.gather and cs != 1:
                raise ViewError("a take whose rows are broadcast")
            if cs not in (0, 1):
                raise ViewError(f"a step of {cs} on the last axis (DMA copies contiguous runs; "
                                "keep the step on an outer axis)")
            if m.src not in sources[j]:
                sources[j].append(m.src)
            off = m.off + sum(s * l for s, l in zip(m.st, lo))
            if m.gather:
                ip, ioff, ist, D = m.gather
                srcs.append(BoxSrc(sources[j].index(m.src), off, 0, cs,
                                   ioff + sum(s * l for s, l in zip(ist, lo[:-1])),
                                   ist[inner] if inner is not None else 0))
            else:
                srcs.append(BoxSrc(sources[j].index(m.src), off, m.st[inner] if inner is not None else 0, cs))
        boxes.append(Box(rows, cols, sum(s * l for s, l in zip(out_st, lo)),
                         out_st[inner] if inner is not None else 0, tuple(srcs)))
        if len(boxes) > MAX_BOXES:
            raise ViewError(f"the views need more than {MAX_BOXES} pieces")
    view_loads = []
    for j, v in enumerate(loads):
        gather, loc, attrs = None, None, ()
        g = [m.gather for _, _, m in per_load[j] if m.gather]
        if g and (len(g) != len(per_load[j]) or len({(m.src, m.gather[0]) for _, _, m in per_load[j]}) > 1):
            raise ViewError("a take joined with other tensors (concatenate the results instead)")
        if g:
            table = fn.params[per_load[j][0][2].src].value
            gather = (g[0][0], table.shape[0], table.shape[1])
            take = _find_take(v, producer)
            loc, attrs = take.loc, take.attrs
        view_loads.append(ViewLoad(v, tuple(sources[j]), gather, loc, attrs))
    return ViewPlan(S, tuple(view_loads), tuple(boxes))


def _find_take(v: Value, producer) -> Op:
    op = producer[id(v)]
    if op.name == "take":
        return op
    for x in op.operands:
        if id(x) in producer:
            found = _find_take(x, producer)
            if found is not None:
                return found
    return None


def check_fusible(fn: Function) -> str | None:
    """None when the views of kernel `fn` become addressing, else the reason (FS114 text)."""
    return fusible_loads(fn)[0]


def fusible_loads(fn: Function) -> tuple[str | None, int]:
    """(None, n) when the views of kernel `fn` become addressing, n being the loads that take a
    VECIN queue each in the printed kernel (`queued_loads`); else (the reason (FS114 text), 0).
    Fusion compares n with the chip's queue limit: one input read through four slices is four
    queues, not one."""
    try:
        norm = normalize(fn)
        roots = view_roots(norm)
        plan_views(norm, roots)
    except ViewError as exc:
        return str(exc), 0
    except Exception as exc:   # a plan this module does not handle: keep the view a kernel
        return f"the views could not be planned ({type(exc).__name__}: {exc})", 0
    return None, len(queued_loads(norm, roots))


def queued_loads(fn: Function, roots: list[Value] | None = None) -> list[Value]:
    """The view roots of normalized kernel `fn` that are loaded per tile through a VECIN queue:
    all but the one-element parameters, which the kernel reads once as a scalar
    (lower/vector.py's view lowering takes its loads from here)."""
    roots = view_roots(fn) if roots is None else roots
    scalars = set()
    for p in fn.params:
        n = 1
        for d in p.value.shape:
            n *= d
        if p.kind == "tensor" and n == 1:
            scalars.add(id(p.value))
    return [v for v in roots if id(v) not in scalars]


def view_roots(fn: Function) -> list[Value]:
    """Values elementwise ops (or the results) read that are view results or tensor parameters."""
    producer = {id(r): op for op in fn.ops for r in op.results}
    tensors = {id(p.value) for p in fn.params if p.kind == "tensor"}
    roots, seen = [], set()

    def visit(v):
        op = producer.get(id(v))
        is_root = (op is not None and op.name in VIEW_OPS) or (id(v) in tensors)
        if is_root and id(v) not in seen:
            seen.add(id(v))
            roots.append(v)

    for op in fn.ops:
        if op.name in VIEW_OPS:
            continue
        for v in op.operands:
            visit(v)
    for v in fn.results:
        visit(v)
    return roots


def gather_indices(load: ViewLoad, idx: np.ndarray) -> np.ndarray:
    """The load's indices as int64 row numbers in [0, V) (negatives count from the end, like
    numpy); an index outside [-V, V) is an IndexRangeError naming the take's line (and the
    user's op when a composite named it: the take's `origin`)."""
    _, V, _ = load.gather
    k = np.asarray(idx).reshape(-1).astype(np.int64)
    bad = (k < -V) | (k >= V)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise IndexRangeError(take_range_message(load.attrs, int(k[first]), V, first), loc=load.loc,
                              hint=f"indices must lie in [-{V}, {V}); fusedsl never reads outside the table")
    return np.where(k < 0, k + V, k)
