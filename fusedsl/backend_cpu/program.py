"""A whole program (main: kernel calls and reshape views) as a list of bound native calls.

Walking main per call costs Python per kernel: a dict of values, a fresh array per result,
each kernel's argument checks and pointer reads.  For a program of 97 small kernels (a
depthwise convolution as imported: the block-diagonal weight is built by slices and
concatenations) that was ~150 us per kernel, far more than the kernels compute.  A Program
is built once per CompiledKernel (static sizes only) and keeps:

  * one persistent buffer per value a kernel produces (not reallocated per call: no page
    faults, and the addresses stay the same so every kernel stays bound);
  * per kernel a *bound call*: a callable with every argument prepared (for the native
    kernels, one foreign call on a prepared argument block);
  * kernels that read no parameter (constant fills such as the zeros around a grouped
    weight) run once, when the program is built; their buffers are never written again.

A call compares the argument arrays (identity) and the result buffers (free when only the
program refers to them, by a measured reference count) with the last call's; what changed is
rebound (only the kernels that touch those values), then the calls run in program order, each
run of consecutive serial kernel calls as ONE foreign call (calls.py: ~0.5 us saved per kernel).
Results are handed out as the result buffers themselves: a result the caller still holds is
never written again, the program takes a new buffer for it.

What a Program does not take (the compiler walks main as before): symbolic sizes, results
that are parameters, constants or a value returned twice, main ops other than calls and
reshapes that read parameters, and programs whose persistent buffers would exceed
MAX_BYTES (a program that big is bound by its kernels, not by the calls).
"""
from __future__ import annotations

import sys
from operator import is_

import numpy as np

from ..buffers import empty as aligned_empty
from . import calls

MAX_BYTES = 64 << 20   # intermediate buffers a Program keeps between calls (per compiled kernel)
# A small parameter the caller passes as a new array on every call (an int64 index converted
# to int32 per call, a tensor rebuilt per step) is copied into a kept buffer instead: rebinding
# the steps that read it cost ~25 us per call (cross entropy's targets), a copy ~1 us.  A
# parameter is staged once its array changed STAGE_AFTER times (an array the caller keeps is
# read in place, with no copy).
STAGE_BYTES = 1 << 14
STAGE_AFTER = 2


class Unsupported(Exception):
    """This main is not run as a Program (the caller walks main instead)."""


class _Step:
    __slots__ = ("bind", "ins", "outs", "call", "key", "volatile")

    def __init__(self, bind, ins, outs, volatile):
        self.bind = bind            # (input arrays, output arrays) -> zero-argument callable
        self.ins = ins              # slot per kernel input
        self.outs = outs            # slot per kernel output
        self.call = None
        self.key = None             # the arrays the call is bound to (compared by identity)
        self.volatile = volatile    # rebound on every call (reads a parameter's value)


class Program:
    """main as bound calls over persistent buffers (module docstring)."""

    def __init__(self, main, binder, host_op):
        """`binder(call_op)` -> (bind, volatile[, reads]): bind(inputs, outputs) returns a
        callable running that kernel on those arrays; volatile when the callable reads parameter
        values at bind time (runtime scalars); `reads` {operand position: value of main} when
        the call reads another value in place of an operand (a conv2d reading the parameter its
        weight copies).  Kernels whose results nothing reads then are not run at all.
        `host_op(op, inputs)` evaluates a main op other than a call or reshape (a constant) and
        returns its results."""
        slot_of: dict[int, int] = {}
        kinds: list = []          # per slot: ("param", i) | ("buffer",) | ("result", j) | ("view", base, shape)
        values: list = []         # per slot: the array (fixed slots) or None (per call)
        shapes: list = []

        def new_slot(v, kind, array=None):
            slot_of[id(v)] = len(kinds)
            kinds.append(kind)
            values.append(array)
            shapes.append(tuple(v.shape))
            return slot_of[id(v)]

        if any(not all(isinstance(d, int) for d in v.shape) for op in main.ops for v in op.results):
            raise Unsupported("symbolic sizes")
        for i, p in enumerate(main.params):
            new_slot(p.value, ("param", i))
        # results: each must be a kernel's result or a reshape chain of one (its "root"),
        # all distinct; the root is written straight into the result buffer
        producer = {}
        binds = {}
        for op in main.ops:
            for v in op.results:
                producer[id(v)] = op
            if op.name == "call":
                got = binder(op)
                binds[id(op)] = (got[0], got[1], got[2] if len(got) > 2 else {})

        def is_view(op):
            return op.name == "reshape" or (op.name == "call" and binds[id(op)][0] == "view")
        roots = []
        for v in main.results:
            root = v
            while id(root) in producer and is_view(producer[id(root)]):
                root = producer[id(root)].operands[0]
            op = producer.get(id(root))
            if op is None or op.name != "call":
                raise Unsupported("a result that is not a kernel's")
            roots.append(root)
        if len({id(v) for v in main.results}) != len(main.results):
            raise Unsupported("a value returned twice")
        root_index: dict[int, int] = {}
        for r in roots:   # results that are views of one kernel result share its buffer (numpy's views)
            root_index.setdefault(id(r), len(root_index))
        result_root = [root_index[id(r)] for r in roots]
        roots = list({id(r): r for r in roots}.values())
        reads_param = set()      # value ids that depend on a parameter
        for p in main.params:
            reads_param.add(id(p.value))
        steps: list[_Step] = []
        constant_steps: list[_Step] = []
        persistent = 0
        alias: dict[int, int] = {}   # a view's slot -> the slot whose bytes it views
        for op in main.ops:
            operands = list(op.operands)
            if op.name == "call":
                for i, v in binds[id(op)][2].items():
                    operands[i] = v
            dynamic = any(id(v) in reads_param for v in operands)
            if op.name == "reshape":
                base = slot_of[id(op.operands[0])]
                shape = tuple(op.results[0].shape)
                if kinds[base][0] in ("param", "result", "view"):
                    new_slot(op.results[0], ("view", base, shape))   # of this call's array: per call
                else:   # a view of a buffer that stays: made once
                    new_slot(op.results[0], ("buffer",), values[base].reshape(shape))
                alias[len(kinds) - 1] = base
                if dynamic:
                    reads_param.add(id(op.results[0]))
                continue
            if op.name != "call":
                if dynamic:
                    raise Unsupported(f"a host op ({op.name}) on parameters")
                arrays = host_op(op, [values[slot_of[id(v)]] for v in op.operands])
                for v, a in zip(op.results, arrays):
                    new_slot(v, ("buffer",), np.asarray(a))
                continue
            bind, volatile, _ = binds[id(op)]
            if bind == "view":   # the result is the operand's bytes: a reshape view, as above
                base = slot_of[id(op.operands[0])]
                shape = tuple(op.results[0].shape)
                if kinds[base][0] in ("param", "result", "view"):
                    new_slot(op.results[0], ("view", base, shape))
                else:
                    new_slot(op.results[0], ("buffer",), values[base].reshape(shape))
                alias[len(kinds) - 1] = base
                if dynamic:
                    reads_param.add(id(op.results[0]))
                continue
            outs = []
            for v in op.results:
                if id(v) in root_index:
                    outs.append(new_slot(v, ("result", root_index[id(v)])))
                    dynamic = True   # its buffer may change between calls
                else:
                    arr = aligned_empty(v.shape, v.dtype.np)
                    persistent += arr.nbytes
                    outs.append(new_slot(v, ("buffer",), arr))
            if persistent > MAX_BYTES:
                raise Unsupported("intermediates too large to keep")
            step = _Step(bind, [slot_of[id(v)] for v in operands], outs, volatile)
            if dynamic:
                for v in op.results:
                    reads_param.add(id(v))
                steps.append(step)
            else:
                constant_steps.append(step)
        steps = _live(steps, kinds, alias)
        self._kinds, self._values, self._shapes = kinds, values, shapes
        # parameters that may be staged (module docstring of STAGE_BYTES): tensors of a few KB
        self._stageable = {i: (tuple(p.value.shape), p.value.dtype.np) for i, p in enumerate(main.params)
                           if p.kind == "tensor" and int(np.prod(p.value.shape)) * p.value.dtype.itemsize <= STAGE_BYTES}
        self._new_arrays = [0] * len(main.params)
        self._staged: dict[int, np.ndarray] = {}
        self._watched = list(range(len(main.params)))   # parameters compared by identity
        self._steps = steps
        self._params = None                   # the last call's argument arrays
        self._dirty = True                    # some step is not bound to the current arrays
        self._n_params = len(main.params)
        self._result_slots = [slot_of[id(r)] for r in roots]
        self._result_views = [(j, tuple(v.shape)) for j, v in zip(result_root, main.results)]
        self._result_meta = [(tuple(r.shape), r.dtype.np) for r in roots]   # per result buffer
        self._buffers: list = [None] * len(roots)
        self._free_refs: list[int] = [0] * len(roots)
        # per-call view slots: (slot, base slot, shape), in program order
        self._views = [(s, k[1], k[2]) for s, k in enumerate(kinds) if k[0] == "view"]
        self._volatile = any(step.volatile for step in steps)
        self._calls: list = []
        self._plain = [j for j, _ in self._result_views] == list(range(len(roots))) and \
            all(shape == meta[0] for (_, shape), meta in zip(self._result_views, self._result_meta))
        self._view_cache: dict[int, tuple] = {}
        for step in constant_steps:   # values that read no parameter: once, now
            _bind(step, values)
            step.call()

    def __call__(self, arrays) -> tuple:
        """Run on these argument arrays (main's parameters, any array-likes); the results."""
        values = self._values
        changed = False
        params = self._params
        staged = self._staged
        if params is None or len(arrays) != self._n_params or not (
                all(map(is_, arrays, params)) if not staged else all(arrays[i] is params[i] for i in self._watched)):
            if params is not None and len(arrays) == self._n_params:
                self._count_new(arrays, params)
            self._params = list(arrays)   # compared by identity next time
            for i, a in enumerate(arrays):
                if i not in staged:
                    values[i] = a if type(a) is np.ndarray and a.flags.c_contiguous else np.asarray(a, order="C")
            changed = True
        for i, buf in staged.items():   # copied on every call: the caller may change its values
            np.copyto(buf, arrays[i])
        buffers = self._buffers
        getrefcount = sys.getrefcount
        for j in range(len(buffers)):
            # free when nothing but the program refers to it (the count measured when it was
            # bound, through the same expression); else the caller still holds it
            if buffers[j] is None or getrefcount(buffers[j]) > self._free_refs[j]:
                shape, dtype = self._result_meta[j]
                buffers[j] = aligned_empty(shape, dtype)   # line-aligned (fusedsl/buffers.py)
                values[self._result_slots[j]] = buffers[j]
                changed = True
        if changed or self._dirty:
            self._dirty = True   # until every step is bound again (a bind may raise: a bad take index)
            self._rebind()
            self._dirty = False
            # what a free buffer's count is: measured here, where no local variable of this
            # frame or a finished callee names a result buffer, as at the test above
            for j in range(len(buffers)):
                self._free_refs[j] = getrefcount(buffers[j])
        if self._volatile:
            for step in self._steps:
                if step.volatile:
                    _bind(step, values)
                step.call()
        else:
            for call in self._calls:
                call()
        if self._plain:   # each result is its buffer, unreshaped
            return tuple(buffers)
        out = []
        for j, shape in self._result_views:
            b = buffers[j]
            out.append(b if b.shape == shape else b.reshape(shape))
        return tuple(out)

    def _count_new(self, arrays, params) -> None:
        """Count the small parameters that came as new arrays; stage those that did so often."""
        for i in self._stageable:
            if i not in self._staged and arrays[i] is not params[i]:
                self._new_arrays[i] += 1
                if self._new_arrays[i] >= STAGE_AFTER:
                    shape, dtype = self._stageable[i]
                    self._staged[i] = self._values[i] = np.empty(shape, dtype)
                    self._watched = [j for j in range(self._n_params) if j not in self._staged]

    def _rebind(self) -> None:
        values = self._values
        cache = self._view_cache
        for slot, base, shape in self._views:
            b = values[base]
            got = cache.get(slot)
            if got is None or got[0] is not b:   # the same base keeps the same view object
                got = cache[slot] = (b, b.reshape(shape))
            values[slot] = got[1]
        for step in self._steps:
            arrays = [values[s] for s in step.ins] + [values[s] for s in step.outs]
            if step.key is None or not all(map(is_, arrays, step.key)):
                _bind(step, values)
        # consecutive serial kernel calls: one foreign call (calls.py); a volatile program binds
        # its volatile steps again on every call and runs the steps' own calls, so it keeps no
        # grouped calls (they would hold the replaced calls, and a bound call that keeps its
        # output arrays would then count against the result buffers' free test)
        self._calls = calls.group([step.call for step in self._steps]) if not self._volatile else []


def _live(steps: list[_Step], kinds, alias) -> list[_Step]:
    """The steps whose results are main's or read by a later live step (a kernel whose
    result another kernel reads elsewhere, through `reads`, need not run)."""
    needed: set[int] = set()
    keep = []
    for step in reversed(steps):
        if not any(kinds[s][0] == "result" or s in needed for s in step.outs):
            continue
        keep.append(step)
        for s in step.ins:
            while s is not None and s not in needed:
                needed.add(s)
                s = alias.get(s)
    return keep[::-1]


def _bind(step: _Step, values) -> None:
    ins = [values[s] for s in step.ins]
    outs = [values[s] for s in step.outs]
    step.call = step.bind(ins, outs)
    step.key = ins + outs
