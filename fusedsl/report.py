"""`k.report()`: fused groups, tiles, UB plans and GM traffic, as a table and as attributes."""
from __future__ import annotations

import dataclasses

from . import cost
from .cost import launch_of
from .display import report_html, report_markdown
from .errors import FusedslError
from .ir.ops import BROADCAST, ELEMENTWISE, has_trait
from .ir.shapes import num_elements
from .lower.kinds import LowerOptions, kernel_ir, kernel_words, lower_kernel
from .tile.kernel_cost import kernel_gm_bytes, kernel_work, process_work
from .tile.tiling_cost import FIX


def _bytes(value, sizes) -> int | None:
    shape = tuple(sizes.get(d) if isinstance(d, str) else d for d in value.shape)
    n = num_elements(shape) if None not in shape else None
    return None if n is None else n * value.dtype.itemsize


def _model(compiled, sizes):
    """Per-kernel modelled costs of the fused program and the unfused baseline (None where
    a symbolic size is unknown)."""
    main = compiled.canonical.main
    symbolic = {d for p in main.params for d in p.value.shape if isinstance(d, str)}
    if symbolic - set(sizes):
        return None, None
    fused = [_walked(_chosen(cost.function_cost(p.function, compiled.target, sizes, launch_tiling(p), p.name, p.row),
                             p.tiling, compiled.target), p.lowered, p.tiling) for p in compiled.kernels]
    memo = {}   # a block repeated 80 times has 14 distinct ops: schedule each once

    def single(fn):
        key = tuple((op.name, repr(sorted(op.attrs.items()) if hasattr(op.attrs, "items") else op.attrs),
                     tuple((tuple(v.shape), v.dtype.name) for v in op.operands)) for op in fn.ops)
        if key not in memo:
            memo[key] = _single_op_cost(fn, compiled, sizes)
        return memo[key]
    return fused, cost.unfused_cost(main, compiled.target, sizes, single)


def _single_op_cost(fn, compiled, sizes):
    """The modelled cost of a one-op kernel on the schedule and launch the compiler would give
    it (opt_level=0 makes exactly these kernels: the kind registry lowers it), with the figures
    of its tile IR where it has one (`_walked`), so the unfused baseline and the fused kernels
    are priced alike; the graph model's figures when no kind schedules it."""
    target = compiled.target
    op = next(o for o in fn.ops if o.name != "constant")
    group = "vector" if has_trait(op, ELEMENTWISE) or has_trait(op, BROADCAST) else "single"
    kind, sched, error = lower_kernel(fn, group, target, LowerOptions())
    if sched is None:   # not schedulable as its own kernel (e.g. a shape the printers do not take)
        return None
    try:
        tiling = kind.tiling(sched, sizes, target)
    except FusedslError:
        return None
    if kind.name == "vector":
        model = _chosen(cost.function_cost(fn, target, sizes, tiling, op.name), tiling, target)
    else:
        model = cost.function_cost(fn, target, sizes, tiling, op.name, sched)
    return _walked(model, sched, tiling)


def launch_tiling(plan):
    """The kernel's own tiling, the one source of its blockDim, tile and loops in the table, the
    plan line and the model: `plan.tiling` for every kind (None until sizes are known, or when
    the kernel is not printable)."""
    return plan.tiling


def _walked(model, lowered, tiling):
    """The model with the figures the kernel's tile IR gives (tile/kernel_cost.py): the GM bytes it
    moves (a broadcast input read again per tile or row, a long row once per pass, a scalar once
    per core, a matmul's operands once per base tile; simulate measures the same figure), its
    cores, and each pipe's cycles priced per vector call, copy and cube tile of the printed
    program, so the time is that of the program the report describes.  A kernel with Matmul
    objects reports its cube's cycles and its vector work together as the compute pipe."""
    if model is None or lowered is None or tiling is None:
        return model
    whole = kernel_ir(lowered)
    if whole is None:
        return model
    words = kernel_words(lowered, tiling)
    work = kernel_work(whole, words)
    if work is None and (whole.process is not None or whole.parts):   # Matmul objects
        instances = _instances(lowered)
        work = process_work(whole, lowered.target, tiling.block_dim, words)
        moved = kernel_gm_bytes(whole, words, instances)
        if work is None or moved is None:
            return model if moved is None else dataclasses.replace(model, gm_bytes=moved)
        work = dataclasses.replace(work, gm_bytes=moved)   # idle instances' Init reads too
    if work is None:
        return model
    if not work.block_dim:
        return dataclasses.replace(model, gm_bytes=work.gm_bytes)
    return dataclasses.replace(model, gm_bytes=work.gm_bytes, block_dim=work.block_dim, mte2_cycles=work.mte2,
                               vec_cycles=work.vec + work.cube, mte3_cycles=work.mte3, head_cycles=work.head,
                               time_us=work.time_us(lowered.target))


def _instances(lowered):
    """The vector instances a matmul / conv launch starts (cost.cube_instances: idle ones read
    their scalar members too), per part for a kernel of several matmuls; None otherwise."""
    parts = getattr(lowered, "parts", None)
    if parts:
        return [_instances(p) for p in parts]
    fields = getattr(lowered, "tiling_fields", None)
    return None if fields is None else cost.cube_instances(lowered.target, fields)


def _chosen(model, tiling, target):
    """A vector kernel whose tiling the cost model chose is reported with the figures of that
    choice (tile/tiling_cost.py: the schedule's own statements and copies), so the report's
    time is the one the tiling was picked by; its GM bytes stay the graph model's."""
    choice = getattr(tiling, "choice", None)
    if choice is None:
        return model
    c = choice.cycles
    return dataclasses.replace(model, block_dim=tiling.block_dim, mte2_cycles=c.mte2 / FIX, vec_cycles=c.vec / FIX,
                               mte3_cycles=c.mte3 / FIX, head_cycles=c.head / FIX, time_us=c.time_us(target))


class KernelRow:
    def __init__(self, plan, model=None, target=None):
        self.name = plan.name
        self.ops = plan.ops
        self.reason = plan.reason
        self.reason_code = getattr(plan, "reason_code", None)
        self.model = model                      # fusedsl.cost.KernelCost (a model, not a measurement)
        self.model_time_us = None if model is None else model.time_us
        t = plan.tiling
        launch = launch_of(launch_tiling(plan))
        self.block_dim = launch.block_dim if launch else None
        self.tile_rows = launch.tile_rows if launch else None
        self.tile_cols = launch.tile_cols if launch else None
        self.tile_length = launch.tile_rows * launch.tile_cols if launch else None
        self.loops_per_core = launch.tiles_per_core if launch else None
        self.gm_bytes = None if model is None else model.gm_bytes   # modelled, from the same launch
        # how the cost model chose the tiling (vector kernels): the chosen candidate's modelled
        # time and the baseline's (the largest tile on the 16 KiB-per-core rule's cores)
        self.tiling_choice = None
        choice = getattr(t, "choice", None)
        if choice is not None and target is not None:
            b = choice.baseline
            self.tiling_choice = {"candidates": choice.candidates, "time_us": choice.cycles.time_us(target),
                                  "baseline_time_us": choice.baseline_cycles.time_us(target),
                                  "baseline_block_dim": b.block_dim, "baseline_tile": (b.tile_rows, b.tile_cols),
                                  "changed": (b.block_dim, b.tile_rows, b.tile_cols) != (t.block_dim, t.tile_rows,
                                                                                        t.tile_cols)}
        # a kernel whose tiling the kernel pass `tiling` chose by the walk of its candidates (row, cube
        # kinds: tile/kernel_passes.TilingChoice): how many were weighed and why this one won
        # (a kernel of several matmuls: each part's, labelled)
        lowered = getattr(plan, "lowered", None)
        self.walk_choices = [("", getattr(lowered, "tiling_choice", None))]
        self.walk_choices += [(f" (part {i})", getattr(part, "tiling_choice", None))
                              for i, part in enumerate(getattr(lowered, "parts", None) or ())]
        self.walk_choices = [(label, c) for label, c in self.walk_choices if c is not None and c.weighed > 1]
        # row kernels: which Ascend C plan and why (lower/row), or why none prints
        self.plan = None
        row = getattr(plan, "row", None)
        if row is not None:
            self.plan = row.plan_note
        elif plan.kind == "row" and plan.error is not None:
            self.plan = f"not printed as Ascend C: {plan.error.message}"
        shared = plan.schedule.values_per_slot if plan.schedule is not None else {}
        self.ub_plan = [{"buffer": n, "position": pos, "bytes": b, "num": num,
                         "reuse": f"holds {shared[n]} values in turn" if shared.get(n, 1) > 1 else ""}
                        for n, pos, b, num in plan.ub_plan]
        self.ub_bytes = plan.ub_bytes


class Report:
    def __init__(self, compiled):
        self.name = compiled.name
        self.target = compiled.target.name
        sizes = compiled._last_sizes or {}
        main = compiled.canonical.main
        fused, unfused = _model(compiled, sizes)
        self.kernels = [KernelRow(p, m, compiled.target) for p, m in zip(compiled.kernels, fused or [None] * len(compiled.kernels))]
        # Modelled NPU time (fusedsl.cost: AutoFuse's published per-API coefficients plus a
        # launch overhead) -- a MODEL for comparing fusion choices, not a measurement.
        self.model_time_us_fused = None if fused is None or None in fused else sum(m.time_us for m in fused)
        self.model_time_us_unfused = None if unfused is None else sum(m.time_us for m in unfused)
        self.model_kernels_unfused = None if unfused is None else len(unfused)
        # GM bytes the fused kernels move by the model (every kernel's inputs and outputs)
        self.gm_bytes_fused = None if fused is None or None in fused else sum(m.gm_bytes for m in fused)
        self.ub_budget = compiled.target.ub_bytes
        ins = [_bytes(p.value, sizes) for p in main.params if p.kind == "tensor"]
        outs = [_bytes(v, sizes) for v in main.results]
        self.gm_bytes_min = None if None in ins + outs else sum(ins) + sum(outs)
        # the unfused figure is the model's too (every op a kernel of its own), so fused and
        # unfused bytes and times compare like with like
        self.gm_bytes_unfused = None if unfused is None else sum(m.gm_bytes for m in unfused)
        # GM bytes simulate counted (after k.simulate(...)): the check of gm_bytes_fused
        self.gm_bytes_measured = compiled._last_measured

    def __str__(self) -> str:
        def fmt(x):
            return "-" if x is None else str(x)
        lines = [f"fusedsl report: {self.name} on {self.target}, {len(self.kernels)} kernel(s)", ""]
        header = f"{'kernel':<28} {'ops':<34} {'blockDim':>8} {'tile':>12} {'loops':>6} {'UB bytes':>9}"
        lines += [header, "-" * len(header)]
        for k in self.kernels:
            ops = ", ".join(k.ops)
            ops = ops if len(ops) <= 34 else ops[:31] + "..."
            tile = f"{fmt(k.tile_rows)}x{fmt(k.tile_cols)}"
            lines.append(f"{k.name:<28} {ops:<34} {fmt(k.block_dim):>8} {tile:>12} "
                         f"{fmt(k.loops_per_core):>6} {k.ub_bytes:>9}")
            code = f"{k.reason_code} " if k.reason_code else ""
            lines.append(f"    why a kernel: {code}{k.reason}")
            if k.plan:
                lines.append(f"    plan: {k.plan}")
            if k.model is not None:   # on the table's blockDim and tiles (the same launch)
                lines.append(f"    model: {k.model.time_us:.2f} us, {k.model.gm_bytes} GM bytes ({k.model.kind} kernel, "
                             f"{k.model.bound}-bound)")
            tc = k.tiling_choice
            if tc is not None and tc["changed"]:
                rows, cols = tc["baseline_tile"]
                lines.append(f"    tiling: chosen by the cost model from {tc['candidates']} candidates: "
                             f"{tc['time_us']:.2f} us vs {tc['baseline_time_us']:.2f} us for the largest tile "
                             f"{rows}x{cols} on blockDim {tc['baseline_block_dim']} (16 KiB per core)")
            elif tc is not None:
                lines.append(f"    tiling: chosen by the cost model from {tc['candidates']} candidates: the largest "
                             f"tile on the 16 KiB-per-core cores is the cheapest ({tc['time_us']:.2f} us)")
            for label, wc in k.walk_choices:
                own = "" if wc.index == 0 else (f"; the lowering's own tiling {wc.own_us:.2f} us, "
                                                f"{wc.own_gm} GM bytes")
                lines.append(f"    tiling{label}: chosen by the walk of its tile IR from {wc.weighed} candidates: "
                             f"{wc.time_us:.2f} us, {wc.gm_bytes} GM bytes, {wc.reason}{own}")
            for row in k.ub_plan:
                lines.append(f"    UB {row['buffer']:<14} {row['position']:<8} {row['bytes']:>8} B x {row['num']}"
                             + (f"  ({row['reuse']})" if row["reuse"] else ""))
        lines.append("")
        lines.append(f"GM bytes: minimum {fmt(self.gm_bytes_min)}, fused {fmt(self.gm_bytes_fused)}, unfused {fmt(self.gm_bytes_unfused)}, "
                     f"measured {fmt(self.gm_bytes_measured)}"
                     + ("" if not (self.gm_bytes_measured and self.gm_bytes_min) else
                        f" ({(self.gm_bytes_measured / self.gm_bytes_min - 1) * 100:+.1f} % vs minimum)"))
        if self.model_time_us_fused is not None and self.model_time_us_unfused is not None:
            lines.append(f"modelled NPU time (a model, not a measurement): fused {self.model_time_us_fused:.2f} us "
                         f"in {len(self.kernels)} kernel(s), unfused {self.model_time_us_unfused:.2f} us in "
                         f"{self.model_kernels_unfused} kernel(s) "
                         f"({self.model_time_us_unfused / max(self.model_time_us_fused, 1e-9):.2f}x)")
        return "\n".join(lines)

    __repr__ = __str__

    def as_dict(self) -> dict:
        """The report's figures as plain data (fusion_report.json): the same attributes the
        table, the plan and model lines and the HTML display print."""
        kernels = [{"name": k.name, "ops": list(k.ops), "reason_code": k.reason_code, "reason": k.reason,
                    "plan": k.plan, "block_dim": k.block_dim, "tile": [k.tile_rows, k.tile_cols],
                    "loops_per_core": k.loops_per_core, "ub_bytes": k.ub_bytes, "gm_bytes_model": k.gm_bytes,
                    "model_time_us": None if k.model_time_us is None else round(k.model_time_us, 3)}
                   for k in self.kernels]
        return {"name": self.name, "target": self.target, "kernels": kernels,
                "gm_bytes_min": self.gm_bytes_min, "gm_bytes_fused": self.gm_bytes_fused,
                "gm_bytes_unfused": self.gm_bytes_unfused, "gm_bytes_measured": self.gm_bytes_measured,
                "model_time_us_fused": None if self.model_time_us_fused is None else round(self.model_time_us_fused, 3),
                "model_time_us_unfused": None if self.model_time_us_unfused is None
                else round(self.model_time_us_unfused, 3),
                "model_kernels_unfused": self.model_kernels_unfused}

    # Jupyter displays (fusedsl.display): kernels table, UB bars against the budget, GM bars
    def _repr_html_(self) -> str:
        return report_html(self)

    def _repr_markdown_(self) -> str:
        return report_markdown(self)
