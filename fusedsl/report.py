"""`k.report()`: fused groups, tiles, UB plans and GM traffic, as a table and as attributes."""
from __future__ import annotations

import dataclasses

from .ir.ops import CONSTANT, has_trait
from .ir.shapes import num_elements

# Rough HBM bandwidth of a 910B-class chip (secondary source, ASCENDC.md section 4.2);
# only used to turn bytes into an order-of-magnitude time estimate.
HBM_BYTES_PER_S = 1.6e12


def _bytes(value, sizes) -> int | None:
    shape = tuple(sizes.get(d) if isinstance(d, str) else d for d in value.shape)
    n = num_elements(shape) if None not in shape else None
    return None if n is None else n * value.dtype.itemsize


def _model(compiled, sizes):
    """Per-kernel modelled costs of the fused program and the unfused baseline (None where
    a symbolic size is unknown)."""
    from . import cost
    main = compiled.canonical.main
    symbolic = {d for p in main.params for d in p.value.shape if isinstance(d, str)}
    if symbolic - set(sizes):
        return None, None
    fused = [_chosen(cost.function_cost(p.function, compiled.target, sizes, p.tiling, p.name), p.tiling,
                     compiled.target) for p in compiled.kernels]
    return fused, cost.unfused_cost(main, compiled.target, sizes)


def _chosen(model, tiling, target):
    """A vector kernel whose tiling the cost model chose is reported with the figures of that
    choice (tile/tiling_cost.py: the schedule's own statements and copies), so the report's
    time is the one the tiling was picked by; its GM bytes stay the graph model's."""
    choice = getattr(tiling, "choice", None)
    if choice is None:
        return model
    from .tile.tiling_cost import FIX
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
        self.block_dim = t.block_dim if t else None
        self.tile_rows = t.tile_rows if t else None
        self.tile_cols = t.tile_cols if t else None
        self.tile_length = t.tile_rows * t.tile_cols if t else None
        self.loops_per_core = t.tiles_per_core if t else None
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
        # row kernels: which Ascend C plan and why (schedule_row), or why none prints
        self.plan = None
        row, rt = getattr(plan, "row", None), getattr(plan, "row_tiling", None)
        if row is not None:
            self.plan = row.plan_note
            if rt is not None and rt.total_tiles:
                rows, cols = (1, rt.bn) if hasattr(rt, "bn") else (rt.tile_rows, rt.C)   # column / row tiles
                self.block_dim, self.tile_rows, self.tile_cols = rt.block_dim, rows, cols
                self.tile_length, self.loops_per_core = rows * cols, rt.tiles_per_core
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
        self.gm_bytes_unfused = self._unfused(main, sizes)
        self.gm_bytes_measured = compiled._last_measured
        basis = self.gm_bytes_measured or self.gm_bytes_min
        self.est_time_us = None if basis is None else basis / HBM_BYTES_PER_S * 1e6

    @staticmethod
    def _unfused(fn, sizes):
        """Bytes moved if every op were its own kernel (reshape stays a free view)."""
        producer = {id(r): op for op in fn.ops for r in op.results}
        total = 0
        for op in fn.ops:
            if has_trait(op, CONSTANT) or op.name == "reshape":
                continue
            for v in list(op.operands) + list(op.results):
                prod = producer.get(id(v))
                if prod is not None and has_trait(prod, CONSTANT):
                    continue
                b = _bytes(v, sizes)
                if b is None:
                    return None
                total += b
            if op.name == "conv2d":   # the im2col panel a conv kernel writes and reads back (cost.py)
                from .cost import batch_conv_panel_bytes
                total += 2 * batch_conv_panel_bytes(op, sizes)
        return total

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
            if k.model is not None:
                lines.append(f"    model: {k.model.time_us:.2f} us ({k.model.kind}, blockDim {k.model.block_dim}, "
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
        if self.est_time_us is not None:
            lines.append(f"est. time: {self.est_time_us:.2f} us at {HBM_BYTES_PER_S / 1e12:.1f} TB/s HBM "
                         "(memory-bound estimate)")
        return "\n".join(lines)

    __repr__ = __str__

    # Jupyter displays (fusedsl.display): kernels table, UB bars against the budget, GM bars
    def _repr_html_(self) -> str:
        from .display import report_html
        return report_html(self)

    def _repr_markdown_(self) -> str:
        from .display import report_markdown
        return report_markdown(self)
