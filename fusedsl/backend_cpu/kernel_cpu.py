"""Running a TileKernel on the host: llvm_kernel.py's function, JIT-compiled, launched per block.

    cpu = TileKernelCpu(kernel)                  # lower to LLVM IR
    cpu.run(inputs, outputs, words)              # kernel_interp.run_kernel's signature; JIT on first use

The LLVM IR is compiled (O3, jit.py) at the kernel's first launch.  Lowering the same TileKernel
again in one process reuses the IR (`_lowered`); a later process reads it from the disk cache
(jit.lowered_ir).  "The same" is `lowering_text`: the kernel's text without its name, note, words
and source lines, after its stmts' constants became runtime scalars (lift_immediates): kernels
that differ only in those are one lowering and one compile.  A shorter LLVM
pipeline for small launches (SROA, instcombine, simplifycfg) compiled a bitonic sort's kernels
2-4x faster but changed float16 maximum / minimum of -0.0 and 0.0 (test_signed_zero): not used.

`run` lays out the argument block (the tiling words, the typed fields, a pointer per GM tensor,
the queues' places in the arena) and one UB arena per thread, then runs the blocks (cores) on
the launcher's threads above a work threshold and serially below it (launch.py: blocks write
disjoint outputs) -- as ONE block where the kind's tiles do not depend on their block
(ONE_BLOCK_KINDS: each block would start its queues and run its Prologue again).  Unlike the interpreter it writes the outputs in place: a kernel writes every
element of its outputs, so none are zeroed first.
"""
from __future__ import annotations

import dataclasses
import functools
import time
from operator import is_

import numpy as np

from ..errors import FusedslError
from ..ir.core import Function, Op, Param, Value
from ..lower.cube import CubeSchedule
from ..lower.row import RowSchedule
from ..lower.kinds import host_kernel_ir
from ..tile.kernel import Step, TileKernel, evaluate, member_values, print_kernel
from ..tile.kernel_passes import lift_immediates
from ..tile.verify import TileVerifyError
from ..views import gather_indices
from . import jit
from .cpu_tiling import compensated_row_sums, cpu_words
from .blas import (BLAS_LOCAL_THREADS, numpy_product, one_blas_thread, sgemm_address, single_threaded_blas,
                   vector_addresses)
from .launch import KERNEL_PROTO, host_threads, kernel_args, pool, run_blocks
from .host import host_features
from .llvm_kernel import ARENA_ALIGN, SYMBOL, arena_layout, calls_blas, lower_kernel, typed_fields

__all__ = ["AliasedCpu", "TileKernelCpu", "ScheduleCpu", "ViewScheduleCpu", "PartsCpu", "matmul_products",
           "operand_aliases", "same_arrays", "same_call"]

# Below this many GM bytes a launch runs on the caller's thread (measured for the vector kernels: waking a
# pool thread costs 12-40 µs here, and the pool loses below ~4 MB on this shared 2-vCPU host).
PARALLEL_MIN_BYTES = 16 << 20
# A cube kernel's cores (each one sgemm) go to the host threads from this many GM bytes.
CUBE_PARALLEL_MIN_BYTES = 256 << 10
# Outputs of this many bytes and more are written with non-temporal stores (they will not be read back from
# cache; skipping the read-for-ownership saves a third of the traffic).
STREAM_MIN_BYTES = 32 << 20
# An exp / ln costs about this many bytes of traffic per element: a 4 MB softmax is 24 MB of work, on
# two threads (0.31 ms against 0.64 on one).
TRANSCENDENTAL_WEIGHT = 16
# A transpose's own thresholds (measured for transpose.py's tiles, the same register tiles): its
# stores scatter over many lines, so streaming pays from 8 MB of output; and it is bound by the
# memory latency per line, which a second thread of this shared host does not add below 64 MB moved.
TRANSPOSE_STREAM_MIN_BYTES = 8 << 20
TRANSPOSE_PARALLEL_MIN_BYTES = 64 << 20
# The transpose kind's row copies and picks (a permute that keeps the last axis, a stepped slice)
# stay on the caller's thread: the numpy copies they replace were single-threaded, and two threads
# measured 1.2-1.56x slower at 64 MB on this shared host ([256, 1024, 64] perm (1, 0, 2))
SERIAL_MODES = ("copy", "gather")
# Kinds whose tiles do not depend on the block that runs them (a tile's stages start from its
# Geometry; the once stages only fill buffers the tiles read, the same in every block): a launch on
# the caller's thread runs their tiles as ONE block (`one_block`), the chip's words for one core.
# Per block the kernel starts its members and queues and runs its Prologue again: the 192 x 128
# seed's 6 blocks of 8 tiles cost 0.3 us of its 3.0 (a broadcast row copied and its abs computed 6 times)
ONE_BLOCK_KINDS = frozenset({"vector", "view", "row", "column", "transpose"})
# TileKernel text (and lowering options) -> its LLVM IR, for the kernels lowered again in one process
# (a program compiled for a second function that shares kernels with the first: topk after sort);
# across processes jit.lowered_ir's disk cache keeps it
_lowered: dict[tuple, str] = {}
_LOWERED_MAX = 512


def lowering_text(k: TileKernel) -> str:
    """The kernel's text without what its LLVM IR does not depend on: its name and note, its tiling
    words (the function reads them at run time) and its stmts' source lines.  Kernels equal but for
    these -- a bitonic sort's stages, one kernel compiled for several shapes, a test's lambdas --
    share one lowering and one compile."""
    def bare(t: TileKernel) -> TileKernel:
        return dataclasses.replace(t, name="kernel", note="", words=(), candidates=(),
                                   parts=tuple(bare(p) for p in t.parts))
    return print_kernel(bare(k), locs=False)


def _lower(k: TileKernel, products=None, compensated_folds: bool = False, host_product: bool = False,
           streaming: bool = False) -> str:
    # numpy's vector routines, compensated folds, a host product, the streamed stores: other IR
    key = (lowering_text(k), tuple(sorted((products or {}).items())), compensated_folds, host_product, streaming)
    ir_text = _lowered.get(key)
    if ir_text is None:
        if len(_lowered) >= _LOWERED_MAX:
            _lowered.clear()
        description = "\0".join(map(str, (*key, sorted(host_features()))))
        ir_text = _lowered[key] = jit.lowered_ir(
            description, lambda: lower_kernel(k, host_features(), products, compensated_folds, host_product,
                                              streaming))
    return ir_text


class TileKernelCpu:
    """One TileKernel compiled for this host."""

    def __init__(self, k: TileKernel, *, use_disk_cache: bool = True, products=None, compensated_folds: bool = False,
                 host_product: bool = False):
        """`products`: {Matmul object: numpy's vector routine}; `compensated_folds`: long float folds
        added with Kahan's compensation (llvm_kernel.lower_kernel); `host_product`: a conv kernel
        reading its product from `bind`'s (llvm_kernel._HostProduct)."""
        self.k = k   # the kernel as the printer and the interpreter see it
        # lowered with its stmts' constants as runtime scalars (kernels equal but for them share
        # their IR): the typed fields `bind` packs are the lifted kernel's
        lifted, self._imms = lift_immediates(k)
        self.products = {name: form for name, form in (products or {}).items() if form is not None}
        self.host_product = host_product
        t0 = time.perf_counter()
        # two variants, each lowered and compiled when a launch first needs it: launches whose
        # outputs stream (STREAM_MIN_BYTES) store with non-temporal stores, the others never do and
        # run the variant without those loops (lower_kernel's `streaming`: a third of an
        # elementwise kernel's IR, its first call's compile)
        self._lowering = (lifted, self.products, compensated_folds, host_product)
        self._ir = {False: _lower(*self._lowering)}
        self._use_disk = use_disk_cache
        self._compiled = {}   # streaming -> jit.Compiled, once a launch compiled it (keeps the code alive)
        self._cfunc = {}
        self.serial = False   # every launch on the caller's thread (ScheduleCpu: SERIAL_MODES)
        self.compile_seconds = time.perf_counter() - t0   # lowering, plus each JIT compile
        self._offsets = k.field_offsets()
        self._word_count = k.word_count   # (a sum over the fields: read once, `bind` runs per call)
        self._layouts: dict[tuple, tuple] = {}   # tiling words -> arena_layout's answer (`bind`)
        self._typed = typed_fields(lifted)
        self._transcendental = transcendental_stmts(k)
        # a runtime scalar's field is converted to the dtype of the member it initialises (numpy's
        # astype of the Python number, as the interpreter does), so the kernel only widens it
        self._typed_dtype = {}
        for f in self._typed:
            users = {m.dtype for m in lifted.members if m.init == "t." + f.name and m.dtype is not None}
            self._typed_dtype[f.name] = users.pop() if len(users) == 1 else None

    @property
    def ir(self) -> str:
        """The LLVM IR of a launch that does not stream (`ir_for`)."""
        return self._ir[False]

    def ir_for(self, streaming: bool) -> str:
        """The LLVM IR of the variant whose stores stream (True) or not."""
        if streaming not in self._ir:
            t0 = time.perf_counter()
            self._ir[streaming] = _lower(*self._lowering, streaming=streaming)
            self.compile_seconds += time.perf_counter() - t0
        return self._ir[streaming]

    def function(self, streaming: bool = False):
        """The native function of that variant (compiled at the first launch that runs it)."""
        if streaming not in self._cfunc:
            text = self.ir_for(streaming)
            t0 = time.perf_counter()
            self._compiled[streaming] = jit.compile_tiered(text, SYMBOL, use_disk=self._use_disk)
            self._cfunc[streaming] = KERNEL_PROTO(self._compiled[streaming].address)
            self.compile_seconds += time.perf_counter() - t0
        return self._cfunc[streaming]

    def _word(self, words, name: str) -> int:
        return words[self._offsets[name][0]]

    def _arena_layout(self, words: list[int]):
        """llvm_kernel.arena_layout of these words, remembered: a call of a symbolic kernel (new
        outputs, so a new binding each time) walked the kernel for it (~10 us of a 1 MB column
        sum's 35)."""
        key = tuple(words)
        found = self._layouts.get(key)
        if found is None:
            if len(self._layouts) >= 64:
                self._layouts.clear()
            found = self._layouts[key] = arena_layout(self.k, words)
        return found

    def _one_block(self, args: np.ndarray, total: int) -> int:
        """A serial launch's words rewritten in its argument block for one core that runs every tile
        (ONE_BLOCK_KINDS): the blocks it replaces would run the same tiles, each block first
        repeating the members, queues and Prologue.  The launch's block count: 1."""
        args[self._offsets["tilesPerCore"][0]] = total
        if "blockDim" in self._offsets:   # (a kind's words name it; a hand-written kernel's may not)
            args[self._offsets["blockDim"][0]] = 1
        return 1

    def run(self, inputs, outputs: list[np.ndarray], words=None) -> None:
        """Run every block; `inputs` in kernel-parameter order (a runtime scalar a number), the
        outputs written in place (copied back when one is not a C-contiguous array of its dtype)."""
        self.bind(inputs, outputs, words)()

    def bind(self, inputs, outputs: list[np.ndarray], words=None, product: np.ndarray | None = None):
        """Everything `run` prepares (argument block, arenas, threads), once: the result is a
        call that runs the kernel on these arrays (it keeps them alive).  `product`: a host-product
        conv kernel's [N, K, P, Q] product, which the caller fills before each call."""
        k = self.k
        if self.host_product != (product is not None):
            raise FusedslError(f"kernel {k.name}: a host-product kernel is bound with its product, only it")
        words = list(k.words if words is None else words)
        count = self._word_count
        if len(words) != count:
            raise TileVerifyError(f"kernel {k.name}: {len(words)} tiling words for a struct of {count}")
        layout, arena_bytes = self._arena_layout(words)
        args = np.zeros(count + len(self._typed) + len(k.gms) + 2 * len(k.queues) + 1
                        + (1 + 3 * len(k.matmuls) if k.matmuls else 0) + (2 if self.products else 0)
                        + (product is not None), np.int64)
        args[:count] = words
        at = count
        for f in self._typed:
            value = self._imms[f.name] if f.name in self._imms else inputs[int(f.name[1:])]
            d = self._typed_dtype[f.name]
            with np.errstate(all="ignore"):
                if f.ctype == "float":
                    x = np.asarray(value).astype(d.np) if d is not None else np.asarray(value)
                    args[at:at + 1].view(np.float64)[0] = float(x)
                else:
                    args[at] = int(np.asarray(value).astype(np.int64))
            at += 1
        keep, back, moved, written, out_elems = [], [], 0, 0, 0
        for g in k.gms:
            if g.role == "work":   # the core's slice of the workspace, in its arena
                args[at] = layout[f"work.{g.name}"][0]
                at += 1
                continue
            if g.role == "in":
                arr = np.ascontiguousarray(inputs[g.index]).reshape(-1)
                if arr.dtype != g.dtype.np:
                    arr = arr.astype(g.dtype.np)
            else:
                out = outputs[g.index]
                if isinstance(out, np.ndarray) and out.dtype == g.dtype.np and out.flags.c_contiguous \
                        and out.flags.writeable:
                    arr = out   # kept once, in call.outputs (the output pool counts that reference)
                else:
                    arr = np.zeros(np.size(out), g.dtype.np)
                    back.append((out, arr))
                    keep.append(arr)
                written += arr.nbytes
                moved += arr.nbytes
                out_elems += arr.size
                args[at] = arr.ctypes.data
                at += 1
                continue
            keep.append(arr)
            moved += arr.nbytes
            args[at] = arr.ctypes.data
            at += 1
        for q in k.queues:
            args[at], args[at + 1] = layout[q.name]
            at += 2
        transpose = k.kind == "transpose"
        streaming = written >= (TRANSPOSE_STREAM_MIN_BYTES if transpose else STREAM_MIN_BYTES)
        args[at] = int(streaming)
        at += 1
        if k.matmuls:
            address = sgemm_address()
            if address is None:
                raise FusedslError(f"kernel {k.name}: numpy's OpenBLAS has no 64-bit cblas_sgemm for the Matmul objects")
            args[at] = address
            at += 1
            for mm in k.matmuls:
                for part in "ABC":
                    args[at] = layout[f"{mm.name}.{part}"][0]
                    at += 1
            if self.products:
                vector = vector_addresses()
                if vector is None:
                    raise FusedslError(f"kernel {k.name}: numpy's OpenBLAS has no 64-bit cblas_sgemv / cblas_sdot")
                args[at:at + 2] = vector
                at += 2
            if product is not None:
                args[at] = product.ctypes.data
                keep.append(product)
                moved += product.nbytes
                at += 1
        if k.process is not None:   # a cube kernel: Process once per core, cores on the host threads
            blocks = evaluate(k.cores, member_values(k, words))
            threads = 1 if blocks <= 1 or moved < CUBE_PARALLEL_MIN_BYTES else min(host_threads(), pool().workers + 1,
                                                                                   blocks)
        else:
            total, per_core = self._word(words, "totalTiles"), self._word(words, "tilesPerCore")
            blocks = -(-total // per_core) if per_core else 0
            work = moved + TRANSCENDENTAL_WEIGHT * self._transcendental * out_elems
            least = TRANSPOSE_PARALLEL_MIN_BYTES if transpose else PARALLEL_MIN_BYTES
            if self.serial:
                least = 1 << 62
            threads = 1 if blocks <= 1 or work < least else min(host_threads(), pool().workers + 1, blocks)
            if threads == 1 and blocks > 1 and k.kind in ONE_BLOCK_KINDS:
                blocks = self._one_block(args, total)
        arenas = [np.empty(arena_bytes + ARENA_ALIGN, np.uint8) for _ in range(threads)]
        addrs = [-(-a.ctypes.data // ARENA_ALIGN) * ARENA_ALIGN for a in arenas]
        fn, address = self.function(streaming), args.ctypes.data

        def launch() -> None:
            if blocks and threads == 1:
                fn(0, blocks, address, addrs[0])
            elif blocks:
                run_blocks(fn, blocks, address, addrs)

        blas = calls_blas(k, self.products)   # (the attention kind's register-tiled products call none)
        if blas and BLAS_LOCAL_THREADS is not None:
            # each core's sgemm on its own thread (blas.py): a thread-local setting on each thread
            # that runs blocks; the process-wide count (set and restored per call) wakes OpenBLAS's
            # idle threads, which then spin beside ours (1 MB matmul + relu: 1.5 vs 1.35 ms)
            native = fn

            def fn(b0, b1, a, arena):
                with one_blas_thread():
                    native(b0, b1, a, arena)
            guard = None
        else:
            guard = single_threaded_blas if blas else None

        def call() -> None:
            if guard is not None:
                with guard():
                    launch()
            else:
                launch()
            for out, arr in back:
                out.reshape(-1)[:] = arr
        if blocks and threads == 1 and not back and not blas:
            # one serial native call: made directly (a small kernel's call is mostly Python), its
            # arguments ctypes objects made once (launch.kernel_args), and calls.py may batch it
            # with its neighbours
            call = functools.partial(fn, *kernel_args(0, blocks, address, addrs[0]))
            call.native = (fn, 0, blocks, address, addrs[0])
        call.keep = (args, arenas, keep)
        call.outputs = tuple(outputs)
        return call


def same_call(ins, call, inputs, outputs, scalars) -> bool:
    """Whether a remembered bound `call` (made for inputs `ins`) runs these arrays: the same output
    and input objects, runtime scalars (the parameter positions `scalars`) equal by value."""
    return same_arrays(ins, call.outputs, inputs, outputs, scalars)


def same_arrays(ins, outs, inputs, outputs, scalars) -> bool:
    """`same_call` of a call made for inputs `ins` and outputs `outs`."""
    if len(inputs) != len(ins) or len(outputs) != len(outs) or not all(map(is_, outputs, outs)):
        return False
    if all(map(is_, inputs, ins)):
        return True
    if not scalars:
        return False
    # (a loop, not a generator over `scalars`: that would make every call -- the repeat too -- build a cell)
    for i, (a, b) in enumerate(zip(inputs, ins)):
        if a is not b and not (i in scalars and type(a) is type(b) and a == b):
            return False
    return True


def transcendental_stmts(k: TileKernel) -> int:
    """The exp / ln stmts of a kernel's Steps (each runs once per output element or so)."""
    def walk(body):
        for node in body:
            yield node
            for attr in ("body", "then", "orelse"):
                yield from walk(getattr(node, attr, ()) or ())
    nodes = [n for st in k.stages for n in walk(st.body)]
    return sum(1 for n in nodes if isinstance(n, Step) for st in n.stmts if st.op in ("exp", "ln"))


def matmul_products(sched, k: TileKernel) -> dict:
    """{Matmul object: "dot" | "vecmat" | "matvec"} of a matmul kernel (the cube kind) whose matrices
    are one row and / or one column -- numpy multiplies those with cblas_sdot / cblas_sgemv, not
    sgemm (blas.numpy_product), and the CPU makes the same calls; {} for every other kernel."""
    if type(sched) is not CubeSchedule or not k.matmuls:
        return {}
    mm = sched.mm
    *_, m, n = (int(d) for d in mm.result.shape)
    a = tuple(mm.operands[0].shape)
    depth = int(a[-2] if mm.attr("transpose_a", False) else a[-1])
    form = numpy_product(m, n, depth)
    return {} if form is None else {x.name: form for x in k.matmuls}


class ScheduleCpu:
    """A kind's schedule run from its TileKernel (`kinds.kernel_ir`) on the CPU's words
    (cpu_tiling.py), with the interface the compiler's call paths use:
    `run(inputs, outputs[, tiling])` repeats the last bound call when the arrays (and runtime
    scalars, by value) are the same, `bind` gives a bound call, `bound_outputs` the outputs that
    call keeps alive (referenced once: the output pool discounts them).  `tiling` is the launch's
    tiling record of the kind (a symbolic vector kernel's changes with the sizes; a static kind's
    is given once); its words are computed once per record.  `compensated_folds`: llvm_kernel adds
    long float folds with Kahan's compensation (lower_kernel); by default a row kernel's whose float
    sums cpu_tiling.compensated_row_sums names (the CPU's row schedule folds them into 128 lanes)."""

    def __init__(self, sched, tiling=None, *, use_disk_cache: bool = True, compensated_folds: bool | None = None):
        if compensated_folds is None:
            compensated_folds = isinstance(sched, RowSchedule) and compensated_row_sums(sched.fn)
        self.sched = sched
        self.tiling = tiling
        self.plan = getattr(sched, "plan", None)   # a column kernel's ColumnPlan (its params' kinds)
        k = host_kernel_ir(sched)
        self.kernel = TileKernelCpu(k, use_disk_cache=use_disk_cache, products=matmul_products(sched, k),
                                    compensated_folds=compensated_folds)
        self.kernel.serial = getattr(sched, "mode", None) in SERIAL_MODES and self.kernel.k.kind == "transpose"
        self._scalars = frozenset(i.index for i in sched.inputs if i.kind == "runtime_scalar")
        self._words: dict = {}
        # (tiling, inputs, call, call.outputs): the outputs kept apart -- an attribute of the call (a
        # partial) is a dict lookup after the type's, on every repeat
        self._last = None

    @property
    def from_disk_cache(self) -> bool:
        """Whether every variant compiled so far came from the disk cache (False before a launch)."""
        compiled = self.kernel._compiled.values()
        return bool(compiled) and all(c.from_disk for c in compiled)

    def words(self, tiling) -> list[int]:
        w = self._words.get(id(tiling))
        if w is None or w[0] is not tiling:
            if len(self._words) >= 64:   # many symbolic sizes: forget the old ones
                self._words.clear()
            w = self._words[id(tiling)] = (tiling, cpu_words(self.sched, tiling))
        return w[1]

    def bind(self, inputs, outputs, tiling=None):
        return self.kernel.bind(inputs, outputs, self.words(self.tiling if tiling is None else tiling))

    def run(self, inputs, outputs, tiling=None) -> None:
        tiling = self.tiling if tiling is None else tiling
        last = self._last
        # (the test inline: a small kernel's call is mostly this Python)
        if last is None or last[0] is not tiling or not same_arrays(last[1], last[3], inputs, outputs, self._scalars):
            self._last = None   # its outputs are no longer held while binding
            call = self.bind(inputs, outputs, tiling)
            last = self._last = (tiling, tuple(inputs), call, call.outputs)
        last[2]()

    def bound_outputs(self) -> tuple:
        """The outputs the remembered call keeps alive, each referenced once (OutputPool.take)."""
        return () if self._last is None else self._last[2].outputs


class ViewScheduleCpu(ScheduleCpu):
    """A view kernel (slice / concatenate / take as addressing) run from its TileKernel: a take's
    indices are checked before anything is read, on every call (they may be an earlier kernel's
    output): an index outside [-V, V) is views.gather_indices' IndexRangeError at the take's line
    (the kernel's GatherRow would read zeros)."""

    def __init__(self, sched, tiling=None, *, use_disk_cache: bool = True):
        super().__init__(sched, tiling, use_disk_cache=use_disk_cache)
        self._gathers = [load for load in sched.views.loads if load.gather is not None]

    def check(self, inputs) -> None:
        for load in self._gathers:
            idx = np.asarray(inputs[load.gather[0]])
            bound = load.gather[1]
            if idx.size and (idx.min() < -bound or idx.max() >= bound):
                gather_indices(load, idx)   # raises, naming the first index out of range

    def bind(self, inputs, outputs, tiling=None):
        call = super().bind(inputs, outputs, tiling)
        if not self._gathers:
            return call
        check = self.check

        def checked() -> None:
            check(inputs)
            call()
        checked.keep, checked.outputs = call, call.outputs
        return checked


class PartsCpu:
    """A kernel of several matmuls of one A (the cube_group kind: lower/cube_group.py), each part's
    cube schedule on its own ScheduleCpu, run in turn as the printed kernel runs them, on the
    group's arrays: `run` / `bind` take the group's inputs and outputs (`sched` is the group's)."""

    def __init__(self, group, parts: list):
        self.sched = group
        fn = group.fn
        index = {id(p.value): i for i, p in enumerate(fn.params)}
        slot = {id(v): i for i, v in enumerate(fn.results)}
        self.parts = [(cpu, [index[id(p.value)] for p in pf.params], [slot[id(v)] for v in pf.results])
                      for cpu, pf in zip(parts, group.part_fns)]

    def bind(self, inputs, outputs, tiling=None):
        calls = [cpu.bind([inputs[i] for i in ins], [outputs[j] for j in outs]) for cpu, ins, outs in self.parts]

        def call() -> None:
            for c in calls:
                c()
        call.keep = calls
        call.outputs = tuple(outputs)
        return call

    def run(self, inputs, outputs, tiling=None) -> None:
        for cpu, ins, outs in self.parts:
            cpu.run([inputs[i] for i in ins], [outputs[j] for j in outs])


def operand_aliases(fn: Function) -> tuple[Function, list[int]] | None:
    """`fn` (one matmul and its epilogue) with every epilogue op that reads the matmul's own
    operand A or B reading a parameter of its own instead, and for each parameter of the new
    function the position of the one of `fn` it stands for (an alias: the same array).  The cube
    kind takes an operand as a Matmul API input only, so it refuses an epilogue reading it (`a @ b
    + a`); with the alias the CPU runs that kernel too, the epilogue reading the operand in place
    (both GM tensors point at the caller's array).  None when no epilogue op reads an operand."""
    mms = [op for op in fn.ops if op.name == "matmul"]
    if len(mms) != 1:
        return None
    operands = {id(v): v for v in mms[0].operands}
    index = {id(p.value): i for i, p in enumerate(fn.params)}
    read = [v for op in fn.ops if op is not mms[0] for v in op.operands if id(v) in operands]
    if not read or any(id(v) not in index for v in read):
        return None
    alias = {}
    for v in read:
        alias.setdefault(id(v), Value(v.type, f"{v.name or 'operand'}_epilogue"))
    ops = tuple(op if op is mms[0] else Op(op.name, tuple(alias.get(id(v), v) for v in op.operands), op.results,
                                          op.attrs, op.loc) for op in fn.ops)
    params = fn.params + tuple(Param(a) for a in alias.values())
    order = list(range(len(fn.params))) + [index[key] for key in alias]
    return Function(fn.name, params, ops, fn.results, fn.loc), order


class AliasedCpu:
    """A kernel run on a function whose epilogue reads the matmul's operands through parameters of
    their own (`operand_aliases`): `run` / `bind` take the original function's inputs and pass each
    aliased operand's array twice."""

    def __init__(self, cpu, order: list[int]):
        self.cpu, self.order = cpu, order
        self.sched, self.kernel, self.tiling = cpu.sched, cpu.kernel, cpu.tiling

    def words(self, tiling) -> list[int]:
        return self.cpu.words(tiling)

    def bind(self, inputs, outputs, tiling=None):
        return self.cpu.bind([inputs[i] for i in self.order], outputs, tiling)

    def run(self, inputs, outputs, tiling=None) -> None:
        self.cpu.run([inputs[i] for i in self.order], outputs, tiling)

    def bound_outputs(self) -> tuple:
        return self.cpu.bound_outputs()
