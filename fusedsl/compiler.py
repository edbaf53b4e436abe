"""From traced graph IR to a CompiledKernel: runs the pipeline, schedules, picks executors.

    graph --canonicalize--> --fuse--> module (kernels + main)
    each vector kernel --schedule--> VectorSchedule --print--> Ascend C
Executors: the numpy reference (default, the oracle), the LLVM CPU backend, and
`simulate` (the printed Ascend C on fusedsl's CPU implementation of the API).
"""
from __future__ import annotations

import difflib
import hashlib
import operator
import os
import sys
import threading
import warnings
from itertools import repeat

import numpy as np

from . import buffers
from . import dtypes as dt
from .errors import (ArgumentError, FusedslError, SaturationWarning, ScheduleError, TargetError, user_facing,
                     user_frame)
from .ir.core import Function, Module
from .ir.ops import CALL, CONSTANT, REDUCTION, has_trait
from .ir.printer import print_module
from .gcpause import gc_paused
from .passes.base import PassManager, write_atomic
from .passes.fusion_model import fusion_options
from .passes.pipeline import compile_passes
from .reference import run_function, run_module
from .lower.errors import LoweringError
from .lower.kinds import Kind, LowerOptions, kernel_ir, lower_kernel, tile_programs
from .lower.column import ColumnSchedule
from .lower.column_plan import is_column_kernel, lone_row_reduction, rows_function
from .lower.conv import ConvSchedule, schedule_conv_kernel
from .lower.cube import CubeSchedule, schedule_cube_kernel
from .lower.cube_group import CubeGroupSchedule, schedule_cube_group
from .lower.row import RowSchedule
from .lower.row_plan import has_row_reduction
from .lower.transpose import TransposeSchedule, lone_transpose, simplify
from .lower.vector import VectorSchedule, compute_tiling, schedule_vector_kernel
from .targets import DEFAULT_TARGET, get_target, host_casts, with_cann_version
from .tile.kernel import print_kernel
from .tile.text import print_tile


_UNSET = object()


EXECUTORS = ("llvm", "reference")
# the chip whose cube schedule the CPU runs a matmul kernel from when the target has no Matmul API
# for it (compiler._matmul_schedule): the CPU's tiling words replace its words anyway
MATMUL_CPU_TARGET = "ascend910b"


class Config:
    """Process-wide settings.  `executor` is "llvm" (the LLVM CPU backend, default) or
    "reference" (the numpy interpreter, the test oracle).  An unknown value (from
    FUSEDSL_EXECUTOR or an assignment) raises an ArgumentError naming the nearest executor
    when a kernel is compiled or run, instead of silently running on numpy."""

    def __init__(self):
        self._executor = os.environ.get("FUSEDSL_EXECUTOR", "llvm")
        self._from_env = "FUSEDSL_EXECUTOR" in os.environ

    @property
    def executor(self) -> str:
        if self._executor not in EXECUTORS:
            close = difflib.get_close_matches(self._executor, EXECUTORS, n=1)
            where = "FUSEDSL_EXECUTOR" if self._from_env else "fs.config.executor"
            raise ArgumentError(f"{where}={self._executor!r} is not an executor",
                                loc=user_frame(),
                                hint=f"{'did you mean ' + repr(close[0]) + '? ' if close else ''}"
                                     f"the executors are {', '.join(EXECUTORS)}")
        return self._executor

    @executor.setter
    def executor(self, value: str) -> None:
        previous = self._executor, self._from_env
        self._executor, self._from_env = value, False
        try:
            self.executor   # noqa: B018 - validates now, at the user's assignment
        except ArgumentError:
            self._executor, self._from_env = previous   # a refused value leaves the setting as it was
            raise


config = Config()


class KernelPlan:
    """One fused kernel: its ops, why it is separate, its schedule and (once sizes are known) tiling."""

    def __init__(self, fn: Function, kind: str, reason: str, lowering: Kind | None, lowered,
                 error: FusedslError | None):
        self.function = fn
        self.name = fn.name
        self.kind = kind             # fusion's group kind: "vector" | "row" | "cube" | "single"
        self.reason = reason
        self.lowering = lowering     # the kernel kind that schedules it (lower/kinds.py), or None
        self.lowered = lowered       # that kind's schedule, which the printers read; None when refused
        self.error = error
        self.size_error: FusedslError | None = None   # `error` when it came from the current sizes
        # the launch's tiling once sizes are known, from the kind (lower/kinds.py Kind.tiling): a
        # vector kernel's Tiling or another kind's record (RowTiling, ColumnTiling, CubeLaunch...)
        self.tiling = None

    @property
    def printable(self) -> bool:
        """Whether this kernel prints as Ascend C for the compile's target (known at compile
        time; for symbolic sizes, a size that does not fit is found when the sizes are set)."""
        return self.lowered is not None and self.error is None

    @property
    def kernel_kind(self) -> str | None:
        """"vector", "conv", "cube", "row" or "column": the kind that schedules this kernel."""
        return self.lowering.name if self.lowering is not None else None

    @property
    def schedule(self) -> VectorSchedule | None:
        """A vector (or view) kernel's tile program."""
        return self.lowered if self.kernel_kind == "vector" else None

    @property
    def row(self):
        """Another kind's schedule: a RowSchedule, ColumnSchedule, CubeSchedule or ConvSchedule."""
        return self.lowered if self.kernel_kind not in (None, "vector") else None

    @property
    def ops(self) -> list[str]:
        return [op.name for op in self.function.ops if not has_trait(op, CONSTANT)]

    @property
    def ub_plan(self) -> list[tuple[str, str, int, int]]:
        if self.lowered is None or self.tiling is None:
            return []
        return self.lowering.ub_plan(self.lowered, self.tiling)

    @property
    def tile_ir(self) -> str | None:
        """The allocated tile programs as text (tile/text.py; `tile.parse.parse_tiles` reads it back): a
        vector kernel's one program, with the tiling once sizes are known; another kind's
        per-op programs in the order it runs them (lower/kinds.tile_programs); a kind lowered to
        the loop-level tile IR (every other kind) its whole kernel, a kernel of several matmuls
        with its parts (tile/kernel.py `print_kernel`, tile/parse.py `parse_kernel` reads it back); None when
        the kernel has none (not printable)."""
        if self.schedule is not None:
            return print_tile(self.schedule, self.tiling)
        whole = kernel_ir(self.lowered)
        if whole is not None:   # a kind lowered to the loop-level tile IR (tile/kernel.py): the kernel (with its parts)
            return print_kernel(whole)
        programs = tile_programs(self.lowered)
        return "".join(print_tile(prog) for _, prog in programs) if programs else None

    @property
    def ub_bytes(self) -> int:
        return sum(nbytes * num for _, _, nbytes, num in self.ub_plan)

    def __repr__(self) -> str:
        return f"<kernel {self.name}: {', '.join(self.ops)}>"

    def _repr_html_(self) -> str:
        from .display import plan_html
        return plan_html(self)


class CompiledKernel:
    """A kernel specialised for one set of argument shapes/dtypes/constants."""

    def __init__(self, graph: Module, canonical: Module, module: Module, plans: list[KernelPlan],
                 infos, target, options):
        self.graph = graph            # as traced
        self.canonical = canonical    # after canonicalisation, before fusion
        self.module = module          # fused: kernels + main
        self.kernels = plans
        self.infos = tuple(infos)
        self.target = get_target(target or DEFAULT_TARGET)
        self.options = dict(options)
        self.runtime_infos = tuple(i for i in self.infos if i.kind != "const")
        self._plans_by_name = {p.name: p for p in plans}
        self._single = _UNSET   # the single-call fast plan, computed on first use
        self._single_row = _UNSET   # the same for a lone row kernel
        self._views = _UNSET        # main is reshapes of its parameters only: (param, shape) per result
        self._program = _UNSET      # main as bound native calls (backend_cpu/program.py), static sizes
        self._zeros = None          # structural-zero masks of main's values (backend_cpu/zeros.py)
        self._outputs = OutputPool()   # recycled result buffers for calls without out=
        self._source: str | None = None
        self._library = None
        self._last_measured: int | None = None
        self._last_sizes: dict[str, int] | None = None
        self._cpu = {}
        self._cpu_tiling = {}
        # sizes, tilings and lazily built kernels are per-CompiledKernel state: calls that may
        # change them (symbolic sizes, simulate) run one at a time
        self._lock = threading.RLock()
        # run first by every public call (`__call__`, `simulate`) on its runtime arguments, which
        # it returns (converted) or refuses: an imported model's int64 range check
        # (importers/common.ImportedKernel.compile); None for a kernel of fusedsl's own
        self.prepare_args = None
        # run last by the same calls on (their runtime arguments, the results): an imported
        # graph's guarded casts (int_range.RangeCheck.guard) checked and their extra results dropped
        self.finish_results = None
        # comment lines saying which of main's results are not the kernel's own and why (an
        # imported graph's guarded casts: importers/common.ImportedKernel.compile); `ir` and
        # `source` print them first, so the extra results are explained where they are seen
        self.result_notes: tuple[str, ...] = ()
        static = {d for i in self.runtime_infos if i.type for d in i.type.shape if isinstance(d, str)}
        if not static:
            self._set_sizes({})

    @property
    def ir(self) -> str:
        return _comments(self.result_notes) + print_module(self.module)

    @property
    def name(self) -> str:
        return self.module.main.name

    def __repr__(self) -> str:
        args = ", ".join(f"{i.type.dtype.name}{list(i.type.shape)}" if i.type is not None else repr(i.value)
                         for i in self.infos)
        return (f"<CompiledKernel {self.name}({args}) for {self.target.name}: {len(self.kernels)} kernel(s): "
                f"{'; '.join(', '.join(p.ops) for p in self.kernels)}>")

    def _repr_html_(self) -> str:
        """Jupyter display: report tables and bars, the IR and the Ascend C (collapsed)."""
        from .display import compiled_html
        return compiled_html(self)

    # ---- Ascend C ---------------------------------------------------------------------------
    @user_facing
    def check_ascendc(self) -> None:
        """Raise the first reason a kernel cannot be printed as Ascend C."""
        for plan in self.kernels:
            if plan.error is not None:
                raise plan.error
            if plan.lowered is None:
                op = next(o for o in plan.function.ops if not has_trait(o, CONSTANT))
                raise ScheduleError(f"the Ascend C backend does not print {plan.kind} kernels yet "
                                    f"({op.name} in {plan.name})", loc=op.loc,
                                    hint="this kernel still runs on the CPU executors (kernel(*arrays))")

    @property
    @user_facing
    def source(self) -> str:
        if self._source is None:
            from .backend_ascendc.printer import print_plans
            self.check_ascendc()
            self._source = print_plans(self.kernels, self.target)
        return _comments(self.result_notes) + self._source

    @user_facing
    def save(self, path: str, *, layout: str = "kernel", overwrite: bool = False,
             sizes: dict | None = None, scalars: dict | None = None) -> str:
        """Write a CANN project for this kernel into directory `path`.

        layout="kernel": a kernel-launch sample (run.sh -r cpu|sim|npu, main.cpp, data scripts);
        layout="op": an op project (op_host with the tiling data and OpDef, op_kernel).
        `sizes` fixes the symbolic dimensions (default: the last call's, else 64 each) and
        `scalars` the runtime scalars' values used by main.cpp and the data scripts.
        `path` must be new or empty; a previous fusedsl project there is replaced only with
        `overwrite=True` (and only fusedsl's own, unedited files).  Nothing else is touched.
        """
        from .backend_ascendc.save import write_project
        return write_project(self, path, layout=layout, overwrite=overwrite, sizes=sizes, scalars=scalars)

    # ---- arguments --------------------------------------------------------------------------
    def bind_args(self, args) -> tuple[list[np.ndarray], dict[str, int]]:
        """Runtime arguments checked against the specialisation; returns (arrays, symbol sizes)."""
        if len(args) == len(self.infos) and len(self.infos) != len(self.runtime_infos):
            args = [a for a, i in zip(args, self.infos) if i.kind != "const"]
        if len(args) != len(self.runtime_infos):
            names = ", ".join(i.name for i in self.runtime_infos)
            raise ArgumentError(f"{self.name} takes {len(self.runtime_infos)} runtime argument(s) ({names}), "
                                f"got {len(args)}", loc=user_frame())
        symbols: dict[str, int] = {}
        arrays = []
        for arg, info in zip(args, self.runtime_infos):
            want = info.type
            if info.kind == "scalar":
                arg = _runtime_scalar(arg, info)   # a runtime scalar takes its declared dtype
            try:
                arr = np.asarray(arg)
            except ValueError as exc:   # a ragged nested list
                raise ArgumentError(f"argument {info.name!r} is not a rectangular array: {exc}",
                                    loc=user_frame()) from None
            if arr.dtype != want.dtype.np:
                raise ArgumentError(f"argument {info.name!r} has dtype {arr.dtype}, the kernel was compiled "
                                    f"for {want.dtype}", loc=user_frame(),
                                    hint=f"convert with .astype(np.{want.dtype.np.name}) or compile again")
            if arr.ndim != len(want.shape):
                raise ArgumentError(f"argument {info.name!r} has shape {arr.shape}, the kernel was compiled "
                                    f"for {want.shape}", loc=user_frame())
            for got, dim in zip(arr.shape, want.shape):
                if isinstance(dim, str):
                    if symbols.setdefault(dim, got) != got:
                        raise ArgumentError(f"symbolic dimension {dim} is {symbols[dim]} in one argument and "
                                            f"{got} in {info.name!r}", loc=user_frame())
                elif dim != got:
                    raise ArgumentError(f"argument {info.name!r} has shape {arr.shape}, the kernel was "
                                        f"compiled for {want.shape}", loc=user_frame())
            arrays.append(np.asarray(arr, order="C"))   # keeps 0-d arrays 0-d
        return arrays, symbols

    def check_out(self, out, results_meta):
        outs = out if isinstance(out, tuple) else (out,)
        if len(outs) != len(results_meta):
            raise ArgumentError(f"out= needs {len(results_meta)} array(s), got {len(outs)}", loc=user_frame())
        for o, (shape, dtype) in zip(outs, results_meta):
            if not isinstance(o, np.ndarray) or o.shape != shape or o.dtype != dtype:
                got = f"{o.shape} {o.dtype}" if isinstance(o, np.ndarray) else type(o).__name__
                raise ArgumentError(f"out= array must be {shape} {dtype}, got {got}", loc=user_frame())
            if not o.flags.c_contiguous or not o.flags.writeable:
                raise ArgumentError("out= arrays must be writeable and C-contiguous", loc=user_frame())
        return outs

    def _set_sizes(self, sizes: dict[str, int]) -> None:
        if self._last_sizes == sizes:
            return
        self._last_sizes = dict(sizes)
        self._cpu_tiling.clear()
        for plan in self.kernels:
            if plan.lowered is not None and (plan.error is None or plan.error is plan.size_error):
                try:
                    plan.tiling = plan.lowering.tiling(plan.lowered, sizes, self.target)
                    plan.error = plan.size_error = None
                except ScheduleError as exc:   # e.g. one tile or row does not fit UB, 2**32 elements
                    plan.error = plan.size_error = exc

    # ---- execution --------------------------------------------------------------------------
    @user_facing
    def __call__(self, *args, out=None):
        """Run on the CPU executor (`fs.config.executor`) with these runtime arguments."""
        if self.prepare_args is not None:
            args = self.prepare_args(args)
        if self.finish_results is not None:
            return deliver(self.finish_results(args, self.run(args)), out)
        return self.run(args, out=out)

    def run(self, args, out=None):
        arrays, sizes = self.bind_args(args)
        return self._execute(arrays, sizes, out)

    def run_trusted(self, runtime_args, out=None):
        """`run` for arguments already matched to this specialisation (the call fast path):
        only contiguity is fixed up."""
        arrays = [a if type(a) is np.ndarray and a.flags.c_contiguous else np.asarray(a, order="C")
                  for a in runtime_args]
        if out is None and self._views is not None and config.executor == "llvm":   # reshapes only: views
            views = self._views if self._views is not _UNSET else self._view_plan()
            if views is not None:
                results = tuple(arrays[i].reshape(shape) for i, shape in views)
                return results[0] if len(results) == 1 else results
        fast = self._single_call_plan() if config.executor == "llvm" else None
        if fast is None:
            row = self._single_row_plan() if config.executor == "llvm" else None
            if row is not None and out is None:
                kernel, order, meta = row
                outs = self._outputs.take(meta, kernel.bound_outputs())
                with self._lock:   # the kernel's scratch rows are per CompiledKernel
                    kernel.run([arrays[i] for i in order], outs)
                return outs[0] if len(outs) == 1 else tuple(outs)
            return self._execute(arrays, {}, out)
        kernel, order, meta, tiling = fast
        if out is None:
            outs = self._outputs.take(meta, kernel.bound_outputs())
        elif type(out) is np.ndarray and len(meta) == 1 and out.shape == meta[0][0] and \
                out.dtype == meta[0][1] and out.flags.c_contiguous and out.flags.writeable:
            outs = [out]
        else:
            outs = list(self.check_out(out, meta))
        if out is not None and _overlaps(outs, arrays):
            return _copy_into(outs, self.run_trusted(runtime_args))
        kernel.run([arrays[i] for i in order], outs, tiling)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def fast_runner(self, positions):
        """The call fast path's runner for these positional-argument positions: a function
        (args, out) -> results. For a lone row, column or transpose kernel on llvm_kernel (reductions
        over [16] and the like, where the Python around the native call is most of its cost) it
        repeats the kernel's last bound call when the arguments are the same arrays and the caller
        dropped the last result (the output pool's refcount rule): one identity test and the native
        call (`_schedule_runner`); a program of bound calls runs through `_program_runner`;
        everything else goes through run_trusted."""
        def slow(args, out):
            return self.run_trusted([args[i] for i in positions], out)
        row = self._single_row_plan() if config.executor == "llvm" else None
        from .backend_cpu.kernel_cpu import ScheduleCpu
        if row is not None and len(row[2]) == 1 and isinstance(row[0], ScheduleCpu) and not row[0]._scalars:
            return self._schedule_runner(row, positions, slow)   # a row or column kind's kernel on llvm_kernel
        if config.executor == "llvm":
            program = self._program_runner(positions)
            if program is not None:
                return program
        return slow

    def _schedule_runner(self, row, positions, slow):
        """fast_runner's path for a lone row, column, transpose or attention kernel on a ScheduleCpu (one result, no
        runtime scalar): its remembered call (`_last` = (tiling, inputs, call), the outputs in
        call.outputs) repeated when the arguments are the same arrays and the caller dropped the
        last result, as for the per-kind kernels."""
        kernel, order, _ = row
        take = [positions[i] for i in order]
        first = take[0]
        lock, pool, getrefcount, is_ = self._lock, self._outputs, sys.getrefcount, operator.is_
        free = _POOLED_ONLY + 1   # the pool's list and the remembered call's outputs tuple

        if len(take) == 1:
            def same_inputs(args, ins):
                return args[first] is ins[0]
        else:
            def same_inputs(args, ins):
                return all(map(is_, [args[i] for i in take], ins))

        def run(args, out):
            last = kernel._last
            if out is not None or last is None or config._executor != "llvm" or not same_inputs(args, last[1]):
                return slow(args, out)
            call = last[2]
            outs = call.outputs   # (no local names the result: it would count as a reference)
            with lock, pool.lock:   # the test and the hand-out in one step, as in OutputPool.take
                mine = pool.buffers[0] if pool.buffers else ()
                if kernel._last is last and any(map(is_, mine, repeat(outs[0], len(mine)))) and \
                        getrefcount(outs[0]) <= free:
                    call()
                    return outs[0]
            return slow(args, out)
        return run

    def _program_runner(self, positions):
        """The call fast path of a program (backend_cpu/program.py): C-contiguous arrays go
        straight to the Program, anything else (out=, another executor) to run_trusted."""
        views = self._views if self._views is not _UNSET else self._view_plan()
        if views is not None:
            return None
        program = self._program if self._program is not _UNSET else self._program_plan()
        if program is None:
            return None
        lock, single, run_trusted = self._lock, len(self.module.main.results) == 1, self.run_trusted
        every = list(positions) == list(range(len(positions)))

        def run(args, out):
            arrays = args if every and len(args) == len(positions) else [args[i] for i in positions]
            if out is not None or config._executor != "llvm":
                return run_trusted(arrays, out)   # (not through fast_runner's `slow`: a frame per out= call)
            with lock:
                results = program(arrays)
            return results[0] if single else results
        return run

    def _sole_call(self):
        """(call, plan, main's parameter values) when main is exactly one kernel call on its
        parameters returning its results, with static sizes -- the shape both single-call
        fast paths need; else None."""
        main = self.module.main
        if len(main.ops) != 1 or not has_trait(main.ops[0], CALL) or self._last_sizes != {}:
            return None
        call = main.ops[0]
        params = [p.value for p in main.params]
        if tuple(call.results) != tuple(main.results) or any(v not in params for v in call.operands):
            return None
        return call, self._plans_by_name[call.attr("callee")], params

    def _view_plan(self):
        """[(parameter index, result shape)] when main only reshapes its parameters (static
        sizes) and returns each reshape once: the call is numpy's reshape of the arguments."""
        self._views = None
        main = self.module.main
        if self._last_sizes != {} or not main.ops or any(op.name != "reshape" for op in main.ops):
            return None
        params = {id(p.value): i for i, p in enumerate(main.params)}
        source = {}
        for op in main.ops:
            v = op.operands[0]
            src = params.get(id(v), source.get(id(v)))
            if src is None:
                return None
            source[id(op.results[0])] = src
        if len({id(v) for v in main.results}) != len(main.results) or any(id(v) not in source for v in main.results):
            return None
        self._views = [(source[id(v)], tuple(v.shape)) for v in main.results]
        return self._views

    def _single_row_plan(self):
        """(kernel, input order, result meta) when main is one call of a natively run row kernel
        (the row kind's ScheduleCpu), column kernel, lone transpose or lone attention op on
        its parameters returning exactly its results, with static shapes."""
        if self._single_row is not _UNSET:
            return self._single_row
        self._single_row = None
        sole = self._sole_call()
        if sole is None:
            return None
        call, plan, params = sole
        if plan.schedule is not None:
            return None
        kernel = self._row_kernel(plan)
        if kernel is None:   # a lone transpose or attention op runs the same way (recycled outputs, no main walk)
            kernel = self._transpose_kernel(plan) or self._attention_kernel(plan)
        if kernel is None:
            return None
        self._single_row = (kernel, [params.index(v) for v in call.operands], self._result_meta({}))
        return self._single_row

    def _program_plan(self):
        """main as a Program of bound native calls (static sizes), or None (main is walked)."""
        self._program = None
        if self._last_sizes != {} or not any(has_trait(op, CALL) for op in self.module.main.ops):
            return None
        from .backend_cpu.program import Program, Unsupported
        try:
            self._program = Program(self.module.main, self._step_binder, self._host_op)
        except Unsupported:
            pass
        return self._program

    def _host_op(self, op, inputs):
        return run_function(self.module, Function("op", (), (op,), op.results), inputs)

    def _step_binder(self, op):
        """(bind, volatile) for one call of main: bind(inputs, outputs) -> a callable running
        the kernel on those arrays, by the executor `_run_llvm_kernel` would pick; volatile
        when the bound call holds values read from its inputs (rebound before every call);
        bind is "view" for a kernel whose result is its input's bytes reshaped.  A third item,
        {operand position: main value}, names operands the bound call reads from another value
        (a conv2d reading the parameter its operand copies: zeros.copy_sources)."""
        plan = self._plans_by_name[op.attr("callee")]
        kernel = self._cpu_kernel(plan)
        if kernel is not None:
            tiling = self._cpu_tiling.get(plan.name, plan.tiling)
            if tiling.total_tiles == 0:
                return (lambda ins, outs: _nothing), False
            scalars = {k for k, inp in enumerate(self._cpu_inputs(plan)) if inp.kind == "runtime_scalar"}

            def bind_vector(ins, outs):
                args = [x.item() if k in scalars else x for k, x in enumerate(ins)]
                return kernel.bind(args, outs, tiling)
            return bind_vector, bool(scalars)
        if plan.schedule is None:
            row = self._row_kernel(plan)
            if isinstance(getattr(row, "sched", None), RowSchedule):   # static sizes: its tiling is kept
                return row.bind, bool(row._scalars)
            if row is not None:
                return row.bind, any(p.kind in ("scalar", "runtime_scalar") for p in getattr(row.plan, "params", ()))
        matmul = self._matmul_kernel(plan)
        if matmul is not None:
            return matmul.bind, any(i.kind == "runtime_scalar" for i in matmul.sched.inputs)
        conv = self._conv_kernel(plan)
        if conv is not None:
            return self._conv_binder(conv, op)
        from .backend_cpu.blas import one_blas_thread

        def bind_other(ins, outs):   # the numpy reference
            def call():
                with one_blas_thread():   # a product in the reference: see blas.py
                    results = self._run_llvm_kernel(plan, ins, outs, {})
                for o, r in zip(outs, results):
                    if o is not r:
                        np.copyto(o, r)
            return call
        if _moves_size_one_axes(plan.function):
            return "view", False   # a transpose moving size-1 axes only: a reshape view
        split = self._split_kernel(plan)
        if split is not None:   # a cube kernel the kinds refuse: its product on the host, the rest on llvm_kernel
            masks = None
            if any(op.name == "conv2d" for op in plan.function.ops):   # imported conv variants: skip their zeros
                zeros = self._structural_zeros()
                masks = [zeros.get(id(v)) for v in op.operands]
            volatile = any(p.kind == "scalar" for p in plan.function.params)
            return (lambda ins, outs: split.bind(ins, outs, masks)), volatile
        other = self._transpose_kernel(plan)
        if other is not None:   # a lone transpose / stepped slice
            return (lambda ins, outs: other.bind(ins, outs)), False
        attention = self._attention_kernel(plan)
        if attention is not None:   # a lone attention op
            return (lambda ins, outs: attention.bind(ins, outs)), False
        return bind_other, False

    def _structural_zeros(self):
        """backend_cpu.zeros.structural_zeros of this module, computed once."""
        if self._zeros is None:
            from .backend_cpu.zeros import structural_zeros
            self._zeros = structural_zeros(self.module)
        return self._zeros

    def _copy_sources(self):
        """backend_cpu.zeros.copy_sources of this module, computed once."""
        if getattr(self, "_copies", None) is None:
            from .backend_cpu.zeros import copy_sources
            self._copies = copy_sources(self.module)
        return self._copies

    def _callee_zeros(self, plan):
        """The structural-zero masks of a conv kernel's operands when main calls it once with
        static sizes (the walk of main passes no op), else None."""
        if self._last_sizes or not any(op.name == "conv2d" for op in plan.function.ops):
            return None
        calls = [op for op in self.module.main.ops if op.name == "call" and op.attr("callee") == plan.name]
        if len(calls) != 1:
            return None
        masks = self._structural_zeros()
        return [masks.get(id(v)) for v in calls[0].operands]

    def _single_call_plan(self):
        """(the kernel's executor, input order, result meta, tiling) when main is one call of a compiled
        vector kernel on its parameters returning exactly its results; else None."""
        if self._single is not _UNSET:
            return self._single
        self._single = None
        sole = self._sole_call()
        if sole is None:
            return None
        call, plan, params = sole
        if (plan.schedule is None or plan.error is not None
                or plan.tiling is None or plan.tiling.total_tiles == 0
                or any(i.kind == "runtime_scalar" for i in plan.schedule.inputs)):
            return None
        kernel = self._cpu_kernel(plan)
        if kernel is None:
            return None
        order = [params.index(v) for v in call.operands]
        self._single = (kernel, order, self._result_meta({}), self._cpu_tiling.get(plan.name, plan.tiling))
        return self._single

    def _execute(self, arrays, sizes, out):
        if config.executor != "llvm":
            return self._deliver(run_module(self.module, arrays), out)
        with self._lock:
            self._set_sizes(sizes)
            if out is None and not sizes:
                program = self._program if self._program is not _UNSET else self._program_plan()
                if program is not None:
                    results = program(arrays)
                    return results[0] if len(results) == 1 else results
            outs = None if out is None else self.check_out(out, self._result_meta(sizes))
            if outs is not None and _overlaps(outs, arrays):
                results = self._run_main(arrays, self._run_llvm_kernel)   # through temporaries
                return _copy_into(outs, results[0] if len(results) == 1 else results)
            results = self._run_main(arrays, self._run_llvm_kernel, outs)
        return results[0] if len(results) == 1 else tuple(results)

    def _result_meta(self, sizes):
        return [(t.shape, t.dtype.np) for t in _concrete(self.module.main.results, sizes)]

    def _deliver(self, results, out):
        if out is not None:
            outs = self.check_out(out, [(r.shape, r.dtype) for r in results])
            for o, r in zip(outs, results):
                np.copyto(o, r)
            results = outs
        return results[0] if len(results) == 1 else tuple(results)

    def _run_main(self, arrays, run_kernel, outs=None) -> tuple[np.ndarray, ...]:
        """Walk main: views and constants on the host, each call through
        `run_kernel(plan, inputs, targets, sizes)`.  `targets` are `out=` arrays a kernel may
        write main's results into directly (None where it must allocate)."""
        main = self.module.main
        sizes = self._last_sizes or {}
        env = {id(p.value): a for p, a in zip(main.params, arrays)}
        direct = {}
        if outs is not None:
            for v, o in zip(main.results, outs):
                direct.setdefault(id(v), o)   # a value returned twice is copied for the second
        fresh, views = set(), set()
        for op in main.ops:
            inputs = [env[id(v)] for v in op.operands]
            if has_trait(op, CALL):
                targets = [direct.pop(id(v), None) for v in op.results]
                results = run_kernel(self._plans_by_name[op.attr("callee")], inputs, targets, sizes)
                fresh.update(id(r) for r in results)
            elif op.name == "reshape":   # a free view of a contiguous tensor
                results = (inputs[0].reshape(_concrete(op.results, sizes)[0].shape),)
                views.add(id(op.results[0]))
            else:
                results = run_function(self.module, Function("op", (), (op,), op.results), [])
            for v, o in zip(op.results, results):
                env[id(v)] = o
        results = tuple(env[id(v)] for v in main.results)
        if outs is None:
            # a reshape is a view of its input, as numpy's (and torch's) is; a returned parameter
            # or a value returned twice must not alias anything
            seen, owned = set(), []
            for v, r in zip(main.results, results):
                own = (id(r) in fresh or id(v) in views) and id(r) not in seen
                owned.append(r if own else np.array(r, copy=True))
                seen.add(id(r))
            return tuple(owned)
        for o, r in zip(outs, results):
            if o is not r:
                np.copyto(o, r)
        return tuple(outs)

    def _cpu_schedule(self, plan: KernelPlan) -> VectorSchedule | None:
        """The vector tile program the LLVM backend runs for a plan, or None (not a vector
        kernel, or one whose tiling fails at the current sizes).  8-bit integers: the chip's
        casts detour through float16; the host casts directly, so these kernels wrap exactly like
        numpy.  A vector kernel the chip's schedule refused (a Cast pair or mode the target
        lacks, e.g. int32 -> int8 on ascend910b) is scheduled with the host's casts too: the
        chip not printing it is no reason to run it on numpy (tiling stays the chip's)."""
        if plan.schedule is not None and plan.error is not None:
            return None   # a size error (UB, 2**32 elements): the CPU tiling would fail the same way
        if plan.schedule is not None and not _has_narrow_ints(plan.function):
            return plan.schedule
        if plan.schedule is None and plan.kernel_kind != "vector":
            return None
        try:
            return schedule_vector_kernel(plan.function, host_casts(self.target),
                                          float(self.options.get("ub_headroom", 1.0)))
        except FusedslError:   # refused for a reason other than casts: the reference runs it
            return None

    def _cpu_kernel(self, plan: KernelPlan):
        """The compiled executor of a vector plan (ScheduleCpu / ViewScheduleCpu), or
        None when the LLVM backend cannot lower it (that kernel then runs on another executor:
        `executor`).  Its tiling for the current sizes is `_cpu_tiling`'s when there is one."""
        from .backend_cpu.cpu_tiling import vector_tiling
        from .backend_cpu.kernel_cpu import ScheduleCpu
        if plan.name not in self._cpu:
            sched = self._cpu_schedule(plan)
            try:
                if sched is None:
                    self._cpu[plan.name] = None
                elif sched.views is not None:   # slice / concatenate / take as addressing
                    self._cpu[plan.name] = (self._view_kernel(sched), sched)
                else:
                    self._cpu[plan.name] = (self._vector_kernel(sched), sched)
            except LoweringError:
                self._cpu[plan.name] = None
        entry = self._cpu[plan.name]
        if entry is None:
            return None
        kernel, sched = entry
        if plan.name not in self._cpu_tiling and self._last_sizes is not None:
            if isinstance(kernel, ScheduleCpu):   # llvm_kernel's: the CPU's tiles (cpu_tiling.py)
                self._cpu_tiling[plan.name] = vector_tiling(sched, self._last_sizes, self.target)
            elif sched is not plan.schedule:
                self._cpu_tiling[plan.name] = compute_tiling(sched, self._last_sizes, self.target)
        return kernel

    def _vector_kernel(self, sched: VectorSchedule):
        """An elementwise kernel's CPU executor: its TileKernel through the one LLVM lowering of
        the tile IR (backend_cpu/kernel_cpu.ScheduleCpu).  A LoweringError when llvm_kernel does
        not lower it or the kernel passes refuse it (`_cpu_kernel`: another executor or the numpy
        reference runs it); other errors (a cache limit that is not a size) reach the caller."""
        from .backend_cpu.kernel_cpu import ScheduleCpu
        try:
            return ScheduleCpu(sched)
        except (ScheduleError, TargetError) as exc:
            raise LoweringError(str(exc)) from exc

    def _view_kernel(self, sched: VectorSchedule):
        """A view kernel's CPU executor: its TileKernel through the one LLVM lowering of the tile IR
        (backend_cpu/kernel_cpu.ViewScheduleCpu, on the CPU's tiling words: cpu_tiling.view_tiling),
        a take's indices checked before each call."""
        from .backend_cpu.kernel_cpu import ViewScheduleCpu
        try:
            return ViewScheduleCpu(sched)
        except FusedslError as exc:   # not lowered by llvm_kernel: the kernel runs elsewhere
            raise LoweringError(str(exc)) from exc

    def _cpu_inputs(self, plan: KernelPlan):
        """The tile program inputs of the vector kernel `_cpu_kernel` compiled for a plan."""
        return self._cpu[plan.name][1].inputs

    def _row_kernel(self, plan: KernelPlan):
        """The CPU executor of a kernel with last-axis reductions (`_row_cpu_kernel`), of a column
        kernel (reductions over a contiguous range of axes, with their producers and consumers) or
        of a lone reduction over trailing axes (`_column_kernel`); None otherwise (the kernel then
        runs on the numpy reference, e.g. a reduction over axes (0, 2))."""
        key = ("row", plan.name)
        if key not in self._cpu:
            self._cpu[key] = None
            fn = plan.function
            target = host_casts(self.target) if _has_narrow_ints(fn) else self.target
            try:
                if plan.kind in ("row", "single") and has_row_reduction(fn):
                    self._cpu[key] = self._row_cpu_kernel(plan, target)
                elif plan.kind in ("single", "column") and (is_column_kernel(fn) or lone_row_reduction(fn)):
                    self._cpu[key] = self._column_kernel(plan, target)
            except LoweringError:
                pass
        return self._cpu[key]

    def _row_cpu_kernel(self, plan: KernelPlan, target):
        """A row kernel's CPU executor: the row kind's TileKernel,
        scheduled for the CPU (backend_cpu/cpu_tiling.row_schedule: a larger UB, 64-lane folds; float
        sums over rows longer than cpu_tiling.ROW_SUM_MAX or of a symbolic length with 128 lanes that
        llvm_kernel adds with Kahan's compensation: `long_row_sums`; integer and bool rows in int32
        lanes), through the one LLVM lowering (backend_cpu/kernel_cpu.ScheduleCpu; its tiling per
        launch: `_row_tiling`); None -- the numpy reference -- for what the row kind refuses (more
        inputs than a queue position takes, a per-row value of shape [1] broadcast along the row)
        and static sizes it cannot tile (rows of 0 elements reduced: no work, numpy's identities;
        2**32 elements)."""
        try:
            return self._row_schedule_cpu(plan.function, target)
        except FusedslError:
            return None

    @staticmethod
    def _row_schedule_cpu(fn: Function, target, compensated: bool = False):
        """The row kind's kernel of `fn` on the CPU (`_row_cpu_kernel`); the kind's FusedslError when it
        refuses the kernel or cannot tile its static sizes.  `compensated`: float sums fold with
        Kahan's compensation whatever the row's length (a lone reduction over trailing axes: as
        accurate as llvm_reduce.py's compensated chunks of 1024 were)."""
        from .backend_cpu.cpu_tiling import compensated_row_sums, row_schedule, row_tiling
        from .backend_cpu.kernel_cpu import ScheduleCpu
        sched = row_schedule(fn, target)
        static = None if sched.symbols else row_tiling(sched, {}, target)
        return ScheduleCpu(sched, static, compensated_folds=compensated or compensated_row_sums(fn))

    def _row_tiling(self, plan: KernelPlan, row, sizes):
        """The tiling of a row or column ScheduleCpu (`_row_cpu_kernel`, `_column_kernel`) for these
        sizes, None for another executor; a ScheduleError when the kind cannot tile them (a symbolic
        row too long for one read, rows of 0 elements reduced, 2**32 elements: the call then runs on
        numpy)."""
        sched = getattr(row, "sched", None)
        if not isinstance(sched, (RowSchedule, ColumnSchedule)):
            return None
        if row.tiling is not None:
            return row.tiling
        key = ("row", plan.name)
        if key not in self._cpu_tiling:
            from .backend_cpu.cpu_tiling import row_tiling
            try:
                self._cpu_tiling[key] = row_tiling(sched, sizes, sched.target) if isinstance(sched, RowSchedule) \
                    else sched.tiling(sizes, sched.target)
            except ScheduleError as exc:
                self._cpu_tiling[key] = exc
        return self._cpu_tiling[key]

    def _column_kernel(self, plan: KernelPlan, target):
        """A column kernel's CPU executor: a lone reduction over trailing axes as the row kind's
        [A, K] -> [A] kernel on the CPU (`_trailing_rows`: integer and bool ones too; None -- the
        numpy reference -- when the row kind cannot take it: K = 0, a product of several symbolic
        sizes); else the column kind's host schedule (cpu_tiling.column_schedule: the chip's kernel
        with its strides as tiling words -- one compiled kernel for every shape of a function -- and
        what the chip's schedule refuses: integer reductions and bool results in int32 accumulators,
        symbolic sizes tiled per launch (`_row_tiling`), no rows to reduce, more queues than a chip
        has), through the one LLVM lowering (backend_cpu/kernel_cpu.ScheduleCpu, on the CPU's tiling
        words), as the row kind runs its CPU schedule; None -- the numpy reference -- when the host
        schedule refuses it too (a parameter one stride per group of axes cannot address, 2**31
        elements)."""
        from .backend_cpu.cpu_tiling import column_schedule
        from .backend_cpu.kernel_cpu import ScheduleCpu
        if lone_row_reduction(plan.function) is not None:   # the row kind's rows on the CPU
            rows = self._trailing_rows(plan)
            try:
                return self._row_schedule_cpu(rows, target, compensated=True) if rows is not None else None
            except FusedslError:
                return None
        try:
            sched = column_schedule(plan.function, target)
            return ScheduleCpu(sched, None if sched.symbols else sched.tiling({}, sched.target))
        except FusedslError:
            return None

    @staticmethod
    def _trailing_rows(plan: KernelPlan) -> Function | None:
        """The row kernel [A, K] -> [A] of a lone reduction over trailing axes (lower/column_plan.rows_function:
        the chip's kinds print it so too), for the CPU row schedule, which also takes integer and bool
        rows; None for another kernel, or when A or K is a product of several symbolic sizes."""
        found = lone_row_reduction(plan.function)
        if found is None:
            return None
        op, first, last = found
        shape = tuple(op.operands[0].shape)
        A, K = _one_size(shape[:first]), _one_size(shape[first:last + 1])
        if A is None or K is None:
            return None
        return rows_function(op, A, K, plan.function.name, plan.function.loc)

    def _matmul_kernel(self, plan: KernelPlan):
        """A matmul kernel's CPU executor (the cube kind: one matmul, batched or not, of float or
        int8 operands with an elementwise epilogue): its TileKernel through the one LLVM lowering
        (backend_cpu/kernel_cpu.ScheduleCpu on the CPU's words, cpu_tiling.cube_words: one sgemm
        per block of rows, A and B read in place; int8 in exact float32 chunks of K); a cube_group
        kernel's parts each so, in turn (kernel_cpu.PartsCpu); None for every other kernel.  A row
        epilogue (softmax / layer_norm / row sums of the product) runs as the row kind's folds on
        each tile of the block's rows; products of one row or one column call the BLAS routine
        numpy's matmul calls for them (cblas_sgemv / cblas_sdot: kernel_cpu.matmul_products).
        An epilogue reading A or B (which the kind refuses: an operand is a Matmul API input) runs
        with that operand passed again as a parameter of its own (kernel_cpu.operand_aliases /
        AliasedCpu: read in place).  A row epilogue of a 16-bit product is split at the product
        instead (`_split_kernel`), its rows run op by op with numpy's rounding, bit for bit (the
        folds' float32 sums, in another order, round to another float16 now and then: layer_norm of
        a [300, 260] float16 product, 4 of its 78000 elements one float16 ulp apart), and so is what
        the kind refuses on every chip otherwise (`_matmul_schedule`: integer products other than
        int8, an operand whose batch axes broadcast in part, a row reduction after an int8 or a
        batched product, ...); symbolic sizes run on numpy."""
        key = ("matmul", plan.name)
        if key not in self._cpu:
            from .backend_cpu.kernel_cpu import AliasedCpu, PartsCpu, ScheduleCpu
            if plan.lowered is not None and plan.tiling is None:   # no sizes yet (`executor` before a call)
                return None
            self._cpu[key] = None
            sched, tiling = self._matmul_schedule(plan)
            order = None
            if sched is None:
                sched, tiling, order = self._aliased_matmul_schedule(plan)
            if sched is None:
                return None
            group = isinstance(sched, CubeGroupSchedule)   # several matmuls of one A: each part in turn
            parts = sched.parts if group else [sched]
            if any(s.c_dtype not in (dt.float32, dt.int32) for s in parts):
                return None
            if any(s.row_epilogue is not None and s.mm.result.dtype != dt.float32 for s in parts):
                return None   # split: its 16-bit row epilogue rounded op by op as numpy does (`_rest_binder`)
            if group and len({id(v) for v in sched.fn.results}) != len(sched.fn.results):
                return None   # a value returned twice: the parts write each once
            try:
                cpus = [ScheduleCpu(s, tiling if not group else s.tiling({}, s.target)) for s in parts]
                self._cpu[key] = PartsCpu(sched, cpus) if group else cpus[0] if order is None else \
                    AliasedCpu(cpus[0], order)
            except FusedslError:   # not lowered by llvm_kernel: split at the product (`_split_kernel`)
                pass
        return self._cpu[key]

    def _matmul_schedule(self, plan: KernelPlan):
        """(CubeSchedule or CubeGroupSchedule, its launch) of a matmul kernel for the CPU: the plan's, or -- when the
        target refused the kernel for want of a Matmul API or of its operands' form (ascend910;
        float32 on ascend310p) -- the kind's schedule for MATMUL_CPU_TARGET: the chip not printing
        it is no reason to run it elsewhere on the CPU (its words are the CPU's anyway); either
        with the host's casts when the chip would emulate one of the kernel's casts; (None, None)
        otherwise."""
        kinds = {CubeSchedule: schedule_cube_kernel, CubeGroupSchedule: schedule_cube_group}
        if plan.lowered is not None and (type(plan.lowered) not in kinds or plan.error is not None):
            return None, None
        emulated = _emulated_casts(plan.function, self.target)
        if plan.lowered is not None and not emulated:
            return plan.lowered, plan.tiling
        if plan.lowered is None and (plan.lowering is None or plan.lowering.name not in ("cube", "cube_group")
                                     or not isinstance(plan.error, (TargetError, ScheduleError))):
            return None, None
        # a cast the chip emulates (float -> int32 without CAST_TRUNC on 310P: 28 vector steps) is one
        # direct Cast on the host, as in vector kernels (`_cpu_schedule`); the chip's chain gives the
        # same INT_MIN for NaN / inf on llvm_kernel too since its Steps run their prefills
        t = self.target if plan.lowered is not None else get_target(MATMUL_CPU_TARGET)
        t = host_casts(t) if emulated else t
        schedule = schedule_cube_group if plan.lowering.name == "cube_group" else schedule_cube_kernel
        try:
            sched = schedule(plan.function, t)
            if type(sched) not in kinds:
                return None, None
            return sched, plan.lowering.tiling(sched, {}, t)   # the tiling the kernel pass `tiling` kept
        except FusedslError:   # refused for another reason (an epilogue reading A, symbolic sizes)
            return None, None

    def _aliased_matmul_schedule(self, plan: KernelPlan):
        """(CubeSchedule, its launch, input order) of a matmul kernel the cube kind refused because
        its epilogue reads the matmul's operand A or B, scheduled with the epilogue reading that
        operand through a parameter of its own (kernel_cpu.operand_aliases; the order says which
        input each of its parameters is), for this target or MATMUL_CPU_TARGET as `_matmul_schedule`
        picks; (None, None, None) when that is not why or the kind refuses it anyway."""
        from .backend_cpu.kernel_cpu import operand_aliases
        if plan.lowered is not None or plan.lowering is None or plan.lowering.name != "cube" \
                or not isinstance(plan.error, (TargetError, ScheduleError)):
            return None, None, None
        aliased = operand_aliases(plan.function)
        if aliased is None:
            return None, None, None
        fn, order = aliased
        emulated = _emulated_casts(plan.function, self.target)
        for t in (self.target, get_target(MATMUL_CPU_TARGET)):
            t = host_casts(t) if emulated else t
            try:
                sched = schedule_cube_kernel(fn, t)
                launch = plan.lowering.tiling(sched, {}, t)   # the tiling the kernel pass `tiling` kept
            except FusedslError:
                continue
            return sched, launch, order
        return None, None, None

    def _conv_kernel(self, plan: KernelPlan):
        """A conv kernel's CPU executor (the conv kind: one conv2d with an elementwise epilogue):
        its TileKernel through the one LLVM lowering in host-product mode (backend_cpu/conv_cpu.ConvCpu:
        the conv2d's product by conv_product.py -- structural zeros skipped, per-tap sgemms, im2col
        -- the epilogue the kernel's own, on the CPU's words, cpu_tiling.conv_words); None for
        every other kernel and where the kind refuses it on every chip (`_conv_schedule`)."""
        key = ("conv", plan.name)
        if key not in self._cpu:
            from .backend_cpu.conv_cpu import ConvCpu
            if plan.lowered is not None and plan.tiling is None:   # no sizes yet
                return None
            self._cpu[key] = None
            sched, tiling = self._conv_schedule(plan)
            if sched is None:
                return None
            try:
                self._cpu[key] = ConvCpu(sched, tiling, self._callee_zeros(plan))
            except FusedslError:   # not lowered by llvm_kernel: split at the product (`_split_kernel`)
                pass
        return self._cpu[key]

    def _conv_schedule(self, plan: KernelPlan):
        """(ConvSchedule, its launch) of a conv kernel for the CPU: the plan's, or -- when the target
        refused it for want of a Matmul API, of its operands' form or of UB (ascend910; float32 on
        ascend310p) -- the kind's schedule for MATMUL_CPU_TARGET (the CPU's words replace its
        words); either with the host's casts when the chip would emulate one of the kernel's casts
        (as `_matmul_schedule`); (None, None) otherwise."""
        if plan.lowered is not None and (type(plan.lowered) is not ConvSchedule or plan.error is not None):
            return None, None
        emulated = _emulated_casts(plan.function, self.target)
        if plan.lowered is not None and not emulated:
            return plan.lowered, plan.tiling
        if plan.lowered is None and (plan.lowering is None or plan.lowering.name != "conv"
                                     or not isinstance(plan.error, (TargetError, ScheduleError))):
            return None, None
        t = self.target if plan.lowered is not None else get_target(MATMUL_CPU_TARGET)
        t = host_casts(t) if emulated else t
        try:
            sched = schedule_conv_kernel(plan.function, t)
            return sched, sched.tiling({}, t)
        except FusedslError:   # refused for another reason (an epilogue input of another shape, integer operands)
            return None, None

    def _conv_binder(self, conv, op):
        """(bind, volatile[, sourced operands]) of a conv kernel's call `op` in the bound program
        (`_step_binder`): its operands' structural zeros skipped (imported grouped / dilated /
        transposed convs), and operands that copy a parameter (a block-diagonal or dilated weight, a
        zero-inserted input: zeros.copy_sources) read there, when the sparse product takes them --
        the kernels building them may then go."""
        from .backend_cpu import conv_sparse
        masks = self._structural_zeros()
        zeros = [masks.get(id(v)) for v in op.operands]
        volatile = any(i.kind == "runtime_scalar" for i in conv.sched.inputs)
        copies = self._copy_sources()
        found = [copies.get(id(v)) for v in op.operands]
        used = conv.sourced(zeros, [None if f is None else f[1] for f in found])
        if not used:
            return (lambda ins, outs: conv.bind(ins, outs, masks=zeros)), volatile
        params = self.module.main.params
        reads = {i: params[found[i][0]].value for i in used}
        shapes = [tuple(v.shape) for v in op.operands]

        def bind_sourced(ins, outs):
            call = conv.bind(ins, outs, masks=zeros, sources=used)
            if call is not None:
                return call
            # not bound natively after all: the operands made from their sources on every call
            made = {i: np.empty(shapes[i], np.float32) for i in used}
            inner = conv.bind([made.get(i, a) for i, a in enumerate(ins)], outs, masks=zeros)

            def run():
                for i, buf in made.items():
                    conv_sparse.take_zeros(ins[i].reshape(-1), used[i], buf)
                inner()
            return run
        return bind_sourced, volatile, reads

    def _split_kernel(self, plan: KernelPlan):
        """A cube kernel the cube and conv kinds refuse (integer products other than int8, operands
        whose batch axes broadcast in part, a row reduction after an int8 or a batched product, a
        16-bit product's row epilogue, a conv2d with epilogue inputs of other shapes), split at its
        product (backend_cpu/cube_split.py): the product by a host routine (exact for integers),
        the rest of the kernel lowered as a kernel of its own (`_rest_binder`: a vector or row kind's
        kernel on llvm_kernel); a kernel of several matmuls of one A part by part.  None for every
        other kernel (no cube op, symbolic or empty sizes, an operand made inside the kernel)."""
        key = ("split", plan.name)
        if key not in self._cpu:
            from .backend_cpu.cube_split import SplitCpu, split_kernel
            self._cpu[key] = None
            parts = split_kernel(plan.function)
            if parts is None:
                return None
            rests = []
            for _, split in parts:
                sixteen = split.cube.result.dtype in (dt.float16, dt.bfloat16)
                rests.append(None if split.rest is None else self._rest_binder(split.rest, exact_rows=sixteen))
            self._cpu[key] = SplitCpu(plan.function, parts, rests, self._callee_zeros(plan))
        return self._cpu[key]

    def _rest_binder(self, fn: Function, exact_rows: bool):
        """bind(inputs, outputs) -> call of the rest of a split cube kernel (`_split_kernel`), lowered
        like any fused kernel: a vector kind's kernel (`_cpu_kernel`), a row or column kind's
        (`_row_kernel`), else the numpy reference.  `exact_rows`: a 16-bit product's row epilogue
        runs on the numpy reference, each op rounded to its dtype as numpy rounds it (the row kind's
        float32 folds sum in another order: layer_norm of a [300, 260] float16 product had 4 of
        its 78000 elements one float16 ulp apart), by blocks of rows where it can (cube_split.RowBlocks)."""
        rows = any(has_trait(op, REDUCTION) for op in fn.ops)
        if not (rows and exact_rows):
            group = "single" if rows else "vector"
            options = LowerOptions(float(self.options.get("ub_headroom", 1.0)),
                                   fusion_options(self.options, self.target).l1_headroom)
            kind, lowered, error = lower_kernel(fn, group, self.target, options)
            sub = KernelPlan(fn, group, "the rest of a split cube kernel", kind, lowered, error)
            if lowered is not None and error is None:
                try:
                    sub.tiling = kind.tiling(lowered, {}, self.target)
                except ScheduleError as exc:
                    sub.error = sub.size_error = exc
            kernel = self._cpu_kernel(sub)
            if kernel is not None:
                tiling = self._cpu_tiling.get(sub.name, sub.tiling)
                if tiling.total_tiles == 0:
                    return lambda ins, outs: _nothing
                scalars = {k for k, inp in enumerate(self._cpu_inputs(sub)) if inp.kind == "runtime_scalar"}

                def bind_vector(ins, outs):
                    return kernel.bind([x.item() if k in scalars else x for k, x in enumerate(ins)], outs, tiling)
                return bind_vector
            row = self._row_kernel(sub) if sub.schedule is None else None
            if row is not None:
                return row.bind

        from .backend_cpu.cube_split import RowBlocks
        if RowBlocks.takes(fn):   # by blocks of rows while they are in cache
            return RowBlocks(fn).bind

        def bind_reference(ins, outs):
            def call():
                for o, r in zip(outs, run_function(self.module, fn, ins)):
                    np.copyto(o, r, casting="unsafe")
            return call
        return bind_reference

    def _transpose_kernel(self, plan: KernelPlan):
        """A lone transpose / permute or stepped slice (the transpose kind)'s CPU executor: its
        TileKernel through the one LLVM lowering (backend_cpu/kernel_cpu.ScheduleCpu, on the CPU's
        tiling words: cpu_tiling.transpose_tiling), or None (another kind, or the kind refused it:
        the numpy reference runs it)."""
        key = ("transpose", plan.name)
        if key not in self._cpu:
            self._cpu[key] = None
            if isinstance(plan.lowered, TransposeSchedule) and plan.error is None and plan.tiling is not None:
                from .backend_cpu.kernel_cpu import ScheduleCpu
                try:
                    self._cpu[key] = ScheduleCpu(plan.lowered, plan.tiling)
                except (FusedslError, LoweringError):
                    pass
        return self._cpu[key]

    def _attention_kernel(self, plan: KernelPlan):
        """A lone attention op's CPU executor: the attention kind's TileKernel on the CPU's blocks
        through the one LLVM lowering (backend_cpu/attention_cpu.py: bfloat16 operands widened and
        a mask broadcast over the keys given its key axis on the host, symbolic sizes scheduled per
        call's shapes), or None (another kernel, or the kind refuses it: the numpy reference runs it)."""
        key = ("attention", plan.name)
        if key not in self._cpu:
            from .backend_cpu.attention_cpu import attention_cpu
            self._cpu[key] = attention_cpu(plan.function, self.target,
                                           lambda ins: run_function(self.module, plan.function, ins))
        return self._cpu[key]

    def executor(self, plan: KernelPlan | str) -> str:
        """Which CPU executor `kernel(*arrays)` runs a kernel on (config.executor "llvm"):
        "vector" (its tile program in LLVM), "view" (a gather / slice / concatenate as
        addressing), "row" / "column" (LLVM row or column kernel), "cube" (a matmul / conv kind's
        kernel, or one split at its product: `_split_kernel`), "transpose" (the transpose kind's TileKernel: blocked register transposes), "attention"
        (the attention kind's TileKernel on the CPU's blocks), or
        "reference": no native executor takes it and it runs on the numpy interpreter (what
        tests/test_ops_native.py rules out for the op vocabulary).  `_run_llvm_kernel` and the
        bound program dispatch by the same tests in the same order."""
        plan = self._plans_by_name[plan] if isinstance(plan, str) else plan
        kernel = self._cpu_kernel(plan)
        if kernel is not None:
            return "view" if self._cpu[plan.name][1].views is not None else "vector"
        if plan.schedule is None:
            row = self._row_kernel(plan)
            if row is not None:
                return "row" if isinstance(getattr(row, "sched", None), RowSchedule) else "column"
        if self._matmul_kernel(plan) is not None or self._conv_kernel(plan) is not None \
                or self._split_kernel(plan) is not None:
            return "cube"
        if self._transpose_kernel(plan) is not None:
            return "transpose"
        if self._attention_kernel(plan) is not None:
            return "attention"
        return "reference"

    def _run_llvm_kernel(self, plan: KernelPlan, inputs, targets, sizes):
        kernel = self._cpu_kernel(plan)
        if kernel is None and plan.schedule is None:
            row = self._row_kernel(plan)
            tiling = self._row_tiling(plan, row, sizes) if row is not None else None
            if isinstance(tiling, ScheduleError):   # sizes the row kind cannot tile: numpy
                return run_function(self.module, plan.function, inputs)
            if row is not None:   # a row kernel (or a lone last-axis reduction), natively
                outs = [target if target is not None else buffers.empty(t.shape, t.dtype.np)
                        for t, target in zip(_concrete(plan.function.results, sizes), targets)]
                if tiling is not None:
                    row.run(inputs, outs, tiling)
                else:
                    row.run(inputs, outs)
                return tuple(outs)
        if kernel is None:
            # in `executor`'s order: llvm_kernel's Matmul object on sgemm, its conv (the product
            # conv_product.py's), a product on the host with the rest on llvm_kernel, a lone transpose
            # / stepped slice, the attention kind's TileKernel; else numpy
            for other in (self._matmul_kernel, self._conv_kernel, self._split_kernel, self._transpose_kernel,
                          self._attention_kernel):
                runner = other(plan)
                if runner is not None:
                    outs = [target if target is not None else buffers.empty(t.shape, t.dtype.np)
                            for t, target in zip(_concrete(plan.function.results, sizes), targets)]
                    runner.run(inputs, outs)
                    return tuple(outs)
            return run_function(self.module, plan.function, inputs)
        outs = [target if target is not None else buffers.empty(t.shape, t.dtype.np)
                for t, target in zip(_concrete(plan.function.results, sizes), targets)]
        tiling = self._cpu_tiling.get(plan.name, plan.tiling)
        if tiling.total_tiles == 0:   # empty tensors: nothing to compute
            return tuple(outs)
        args = [x.item() if inp.kind == "runtime_scalar" else x for x, inp in zip(inputs, self._cpu_inputs(plan))]
        kernel.run(args, outs, tiling)
        return tuple(outs)

    @user_facing
    def simulate(self, *args):
        """Compile `source` with g++ against the CPU Ascend C API and run it; numpy outputs."""
        from .backend_ascendc import simulate as sim
        if self.prepare_args is not None:
            args = self.prepare_args(args)
        arrays, sizes = self.bind_args(args)
        with self._lock:
            self._set_sizes(sizes)
            results, measured = sim.simulate(self, arrays, sizes)
            self._last_measured = measured
        self._warn_if_saturated(arrays, results)
        if self.finish_results is not None:
            return self.finish_results(args, tuple(results))
        return results[0] if len(results) == 1 else tuple(results)

    def _warn_if_saturated(self, arrays, results) -> None:
        """8-bit integer results of the printed code saturate where numpy wraps: say so when it
        happened (the reference runs only for kernels with int8/uint8 results)."""
        if not any(r.dtype in (np.int8, np.uint8) for r in results):
            return
        wrapped = run_module(self.graph, arrays)
        differ = sum(int(np.count_nonzero(r != w)) for r, w in zip(results, wrapped) if r.dtype in (np.int8, np.uint8))
        if differ:
            total = sum(r.size for r in results if r.dtype in (np.int8, np.uint8))
            loc = user_frame()
            warnings.warn_explicit(
                f"{self.name}: {differ} of {total} int8/uint8 result element(s) of the simulated Ascend C differ from "
                "numpy's: the NPU's casts to 8-bit integers saturate where numpy and kernel(*arrays) wrap "
                "around; keep the values in range or compute in int32",
                SaturationWarning, loc.file, loc.line)

    def report(self):
        from .report import Report
        return Report(self)


def _moves_size_one_axes(fn: Function) -> bool:
    """Whether fn is a lone transpose that moves size-1 axes only: its result is its input's
    bytes in the same order (a program reads it as a reshape view instead of running a kernel)."""
    op = lone_transpose(fn)
    if op is None or not all(isinstance(d, int) for d in op.operands[0].shape):
        return False
    _, perm = simplify(tuple(op.operands[0].shape), tuple(op.attr("perm")))
    return perm == tuple(range(len(perm)))


def _comments(lines) -> str:
    """Lines as `//` comments, which the text IR and C++ both skip."""
    return "".join(f"// {line}\n" for line in lines)


def _nothing() -> None:
    """The bound call of a kernel with nothing to compute."""


def _runtime_scalar(arg, info):
    """A runtime scalar argument as a 0-d array of its declared dtype, checked like a constant:
    a real number (not None, not a string), integral and in range for integer dtypes."""
    dtype = info.type.dtype.np
    if isinstance(arg, np.ndarray) and arg.ndim == 0 and arg.dtype.kind in "biuf":
        arg = arg[()]
    if isinstance(arg, np.ndarray) and arg.ndim == 0:   # 0-d of some other dtype: rejected below
        arg = arg[()]
    if not isinstance(arg, (bool, int, float, np.bool_, np.integer, np.floating)):
        raise ArgumentError(f"runtime scalar {info.name!r} must be a number, got {type(arg).__name__} "
                            f"{arg!r:.40}", loc=user_frame(), hint=f"pass a Python or numpy number ({info.type.dtype})")
    value = arg.item() if isinstance(arg, np.generic) else arg
    if dtype.kind in "iu":
        if isinstance(value, float) and not value.is_integer():
            raise ArgumentError(f"runtime scalar {info.name!r} is {info.type.dtype}, got the non-integer "
                                f"{value!r}", loc=user_frame())
        lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
        if not lo <= value <= hi:
            raise ArgumentError(f"runtime scalar {info.name!r} = {value!r} is out of range for "
                                f"{info.type.dtype} [{lo}, {hi}]", loc=user_frame())
        value = int(value)
    return np.asarray(value, dtype=dtype)


def deliver(results, out):
    """Results computed without `out=` handed out in it (a guarded graph's own results: the
    compiled graph has more outputs than the caller's `out` holds), or as they are."""
    if out is None:
        return results
    got = results if isinstance(results, tuple) else (results,)
    outs = out if isinstance(out, tuple) else (out,)
    if len(outs) != len(got):
        raise ArgumentError(f"out= needs {len(got)} array(s), got {len(outs)}", loc=user_frame())
    for o, r in zip(outs, got):
        if not isinstance(o, np.ndarray) or o.shape != r.shape or o.dtype != r.dtype or not o.flags.writeable:
            what = f"{o.shape} {o.dtype}" if isinstance(o, np.ndarray) else type(o).__name__
            raise ArgumentError(f"out= array must be a writeable {r.shape} {r.dtype} array, got {what}",
                                loc=user_frame())
        np.copyto(o, r)
    return out


# numpy's bounds test without its __array_function__ dispatch (~0.2 us a pair, a call with out= makes
# one per input: most of the Python around a small kernel's native call)
_may_share_memory = getattr(np.may_share_memory, "_implementation", np.may_share_memory)


def _overlaps(outs, arrays) -> bool:
    """Whether an out= array may share memory with an input or another out= array (numpy's
    bounds test: cheap, and a false alarm only costs a temporary)."""
    for k, o in enumerate(outs):
        for a in arrays:
            if type(a) is np.ndarray and _may_share_memory(o, a):
                return True
        for other in outs[k + 1:]:
            if _may_share_memory(o, other):
                return True
    return False


def _copy_into(outs, results):
    """Results computed into temporaries, copied into the caller's out= arrays (like numpy)."""
    results = results if isinstance(results, tuple) else (results,)
    for o, r in zip(outs, results):
        np.copyto(o, r)
    return outs[0] if len(outs) == 1 else tuple(outs)


class OutputPool:
    """A few result buffers per kernel, recycled across calls without `out=`.

    A fresh np.empty per call is cheap to create but page-faults on first write, and a new
    address makes the CPU kernel bind its arguments again: for small arrays that costs more
    than the kernel.  A buffer is handed out again only when nothing but this pool (and the
    kernel's last bound call, which only remembers addresses) refers to it: the caller
    dropped the result and every view of it (numpy views keep their owning array alive, so
    they count).  Live results never share a buffer.
    """

    SIZE = 4   # buffers per output kept; a caller holding more results just gets new arrays

    def __init__(self):
        self.buffers: list[list[np.ndarray]] = []   # per output index
        # the refcount test and handing the buffer out must be one step for concurrent callers
        self.lock = threading.Lock()

    def take(self, meta, held=()) -> list[np.ndarray]:
        """Arrays for these (shape, dtype)s; `held` are arrays the kernel itself references."""
        getrefcount = sys.getrefcount
        with self.lock:
            if len(self.buffers) != len(meta):
                self.buffers = [[] for _ in meta]
            outs = []
            for pool, (shape, dtype) in zip(self.buffers, meta):
                # No local variable may name a pooled buffer before its test (it would count
                # as a reference): index everything.  Written flat: this runs on every call.
                for i in range(len(pool)):
                    own = _POOLED_ONLY
                    for j in range(len(held)):
                        if held[j] is pool[i]:
                            own += 1
                    if getrefcount(pool[i]) <= own:
                        outs.append(pool[i])
                        break
                else:
                    outs.append(buffers.empty(shape, dtype))   # line-aligned (buffers.py)
                    if len(pool) < OutputPool.SIZE:
                        pool.append(outs[-1])
            return outs


# What sys.getrefcount(pool[i]) reports for an array only a pool list refers to, measured
# rather than assumed (the interpreter's own temporaries differ between Python versions).
_PROBE = [np.empty(0)]                        # kept alive while measured, like a pool list
_POOLED_ONLY = sys.getrefcount(_PROBE[0])
del _PROBE


def _dump_stem(name: str) -> str:
    """A kernel's name as a dump file stem: names longer than 80 characters keep their first 64
    and a hash of the whole (file names may have 255 bytes, with the temp prefix and suffix)."""
    if len(name) <= 80:
        return name
    return f"{name[:64]}-{hashlib.sha256(name.encode()).hexdigest()[:12]}"


def _emulated_casts(fn: Function, target) -> bool:
    """Whether a cast of `fn` has no direct form on `target` (a float to an integer: no CAST_TRUNC),
    so the chip's schedule emulates it with other steps."""
    for op in fn.ops:
        if op.name != "cast":
            continue
        src, dst = op.operands[0].dtype, op.result.dtype
        if src == dst or dst.ascendc == "bool" or src.ascendc == "bool":
            continue
        mode = "CAST_TRUNC" if src.is_float and not dst.is_float else None
        if not target.cast_supported(src.ascendc, dst.ascendc, mode):
            return True
    return False


def _one_size(dims):
    """The product of these sizes as one size: an int, or the one symbolic size among sizes of 1; else None."""
    symbols = [d for d in dims if not isinstance(d, int)]
    if not symbols:
        return int(np.prod(dims, dtype=np.int64))
    if len(symbols) == 1 and all(d == 1 for d in dims if isinstance(d, int)):
        return symbols[0]
    return None


def _has_narrow_ints(fn: Function) -> bool:
    from . import dtypes as dt
    return any(v.dtype in (dt.int8, dt.uint8) for op in fn.ops for v in op.results)


def _concrete(values, sizes):
    from .ir.core import TensorType
    out = []
    for v in values:
        shape = tuple(sizes[d] if isinstance(d, str) else d for d in v.shape)
        out.append(TensorType(shape, v.dtype))
    return out


def compile_module(graph: Module, infos, target=None, options=None) -> CompiledKernel:
    with gc_paused():   # passes and lowering: collections walking the heap were a fifth of it (base.py)
        return _compile_module(graph, infos, target, options)


def _compile_module(graph: Module, infos, target=None, options=None) -> CompiledKernel:
    options = dict(options or {})
    tgt = get_target(target or DEFAULT_TARGET)
    if options.get("cann_version") is not None:   # the API spelling the printed code uses
        tgt = with_cann_version(tgt, options["cann_version"])
    passes = compile_passes(bool(options.get("single_kernel", False)), tgt.max_queue_buffers_per_position,
                            fusion_options(options, tgt))
    manager = PassManager(passes)   # verifies after every pass; FUSEDSL_DUMP_IR writes each
    module = manager.run(graph)
    # the graph as fusion saw it (for unfused traffic and the unfused cost model)
    canonical = manager.history[-2][1] if len(manager.history) > 1 else graph
    fuse = passes[-1]
    headroom = float(options.get("ub_headroom", 1.0))
    plans = []
    lower_options = LowerOptions(headroom, fusion_options(options, tgt).l1_headroom)
    for fn in module.functions[:-1]:
        info = fuse.infos[fn.name]
        snapshots = [] if manager.dump_dir else None   # the tile text after each tile pass
        # the kind registry (lower/kinds.py) picks the schedule; an error (e.g. a symbolic row
        # too long for UB) leaves the kernel to the CPU executors and says why at k.source
        kind, lowered, error = lower_kernel(fn, info.kind, tgt, lower_options, snapshots)
        if manager.dump_dir and lowered is not None:   # the tile IR beside the graph IR dumps
            stem = _dump_stem(fn.name)
            for label, prog in tile_programs(lowered):   # a vector kernel's one program; each op's of other kinds
                name = f"tile-{stem}-{label}.tile" if label else f"tile-{stem}.tile"
                write_atomic(os.path.join(manager.dump_dir, name), print_tile(prog, locs=True))
            whole = kernel_ir(lowered)
            if whole is not None:   # the whole kernel (a kernel of several matmuls: with its parts) in the loop-level tile IR
                write_atomic(os.path.join(manager.dump_dir, f"tile-{stem}-kernel.tile"), print_kernel(whole))
            for i, (step, text) in enumerate(snapshots or []):
                write_atomic(os.path.join(manager.dump_dir, f"tile-{stem}-{i:02d}-{step}.tile"), text)
        plans.append(KernelPlan(fn, info.kind, info.reason, kind, lowered, error))
        plans[-1].reason_code = info.code   # stable code of the boundary (docs/FUSION.md)
        plans[-1].ub_budget = tgt.ub_bytes   # for the plan's display
    compiled = CompiledKernel(graph, canonical, module, plans, infos, tgt, options)
    compiled.fuse_stats = dict(fuse.stats)   # candidate merges considered / kept
    if options.get("single_kernel") or options.get("require_ascendc"):
        compiled.check_ascendc()   # the user asked for Ascend C: say now, at the op's line, if it cannot be
    return compiled
