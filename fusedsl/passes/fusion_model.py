"""The fusion benefit model and the reason codes of kernel boundaries.

Every candidate merge of two groups of vector ops is scored with the cost model
(`fusedsl.cost`): the GM bytes it saves (an intermediate no longer written and read back,
or a shared input read once), the launch it saves, and the tiling loss (a merged kernel
keeps more values in UB per element, so its tiles are smaller and it runs more of them,
each paying the per-call costs again).  A merge is kept only when the modelled benefit is
positive, the kernel's minimal tile fits the UB budget (`ub_headroom`, default 80 % of UB,
the "leave 20 %" rule) and it stays within the caps (`max_kernel_ops`,
`max_kernel_inputs`).  Each refusal becomes the reason code of the boundary it leaves.

Reason codes are stable: tools and tests match on them.  The one table is REASONS below,
printed in docs/FUSION.md.
"""
from __future__ import annotations

import math
import os

from ..record import record
from .. import cost

# code -> short title.  Keep codes stable; add new ones at the end.
REASONS = {
    "FS100": "whole graph is one kernel (no boundary)",
    "FS101": "op kind does not fuse with its neighbours (own kernel)",
    "FS102": "no shared bytes with a neighbouring kernel (merging saves no traffic)",
    "FS103": "outputs of a different iteration shape",
    "FS104": ("UB capacity: the merged kernel's minimal tile does not fit the budget (also: whole rows of a "
              "matmul result for the row reductions after it)"),
    "FS105": "queue limit: more GM inputs/outputs (view loads) than queue buffers on one position",
    "FS106": "merging would create a cycle through an op outside the kernel",
    "FS107": "cap reached: ops or inputs per kernel",
    "FS108": "modelled benefit not positive (tiling loss >= bytes and launch saved)",
    "FS109": "fusion disabled (opt_level 0 or disable_passes)",
    "FS110": "cube buffer capacity: L1 / L0A / L0B / L0C (e.g. 16 whole rows of a matmul result in L0C)",
    "FS111": "a value several kernels need is stored once (cheaper than recomputing it in each)",
    "FS112": "row kernel: a last-axis reduction fused with its row producers and broadcast-back consumers",
    "FS113": ("cube kernel: a matmul or conv2d fused with its elementwise (or row) epilogue; several matmuls of "
              "the same A, each with its epilogue, in one launch"),
    "FS114": "a slice / concatenate / take that cannot become CopyIn addressing (e.g. a step on the last axis)",
    "FS115": "softmax(q @ k^T * s + mask) @ v that cannot become one attention op (the reason names the difference)",
    "FS116": ("column kernel: a reduction over axes before the last (sum(x * x, 0), mean/var over the batch) fused "
              "with its elementwise producers and consumers"),
}

DEFAULT_UB_HEADROOM = 0.8      # the "use at most 80 %" rule, as the default
DEFAULT_L1_HEADROOM = 0.8
DEFAULT_MAX_OPS = 256
DEFAULT_MAX_INPUTS = 32
MIN_TILE_BYTES = 256           # the schedule's tile granule: 256 bytes of the narrowest dtype
SYMBOLIC_GUESS = 1024          # size assumed for a symbolic dimension when scoring


@record
class FusionOptions:
    opt_level: int = 2                 # 0: no fusion, 1: producer-consumer chains, 2/3: + horizontal
    ub_headroom: float = DEFAULT_UB_HEADROOM
    l1_headroom: float = DEFAULT_L1_HEADROOM
    max_ops: int = DEFAULT_MAX_OPS
    max_inputs: int = DEFAULT_MAX_INPUTS
    disabled: frozenset = frozenset()  # pass names (and "horizontal" for sibling merging)
    target: object = None
    split_columns: bool = False        # opt in to the split-columns pass (passes/split_reductions.py says why)

    @property
    def fuse(self) -> bool:
        return self.opt_level > 0 and "fuse" not in self.disabled

    @property
    def rows(self) -> bool:
        # on by default since row kernels run natively on the LLVM backend (one pass over
        # each cached row, benchmarks/row.py); disable_passes=['row-fusion'] splits them
        return self.opt_level >= 2 and "row-fusion" not in self.disabled

    @property
    def horizontal(self) -> bool:
        return self.opt_level >= 2 and "horizontal" not in self.disabled

    @property
    def views(self) -> bool:
        # slice / concatenate / take as CopyIn/CopyOut addressing of their vector kernels
        return self.fuse and "views" not in self.disabled


# every canonicalisation pass (passes/pipeline.py; tests/test_cost_fusion.py checks none is
# missing) and the fusion switches of this module
PASS_NAMES = ("fold-batch-norm", "constant-fold", "algebra", "cse", "fold-transpose", "attention-fusion",
              "attention-rope", "attention-layout", "attention-heads", "split-reductions", "dce", "split-columns",
              "horizontal", "row-fusion", "views", "fuse")


def disabled_passes(options: dict) -> frozenset:
    """`disable_passes=[...]` plus FUSEDSL_DISABLE_PASSES (comma separated)."""
    from ..errors import ArgumentError, user_frame
    given = options.get("disable_passes") or ()
    if isinstance(given, str):
        given = [given]
    names = set(given)
    env = os.environ.get("FUSEDSL_DISABLE_PASSES", "")
    names |= {n.strip() for n in env.split(",") if n.strip()}
    unknown = sorted(names - set(PASS_NAMES))
    if unknown:
        raise ArgumentError(f"unknown pass name(s) in disable_passes / FUSEDSL_DISABLE_PASSES: {', '.join(unknown)}",
                            loc=user_frame(), hint=f"passes: {', '.join(PASS_NAMES)}")
    return frozenset(names)


def fusion_options(options: dict, target) -> FusionOptions:
    from ..errors import ArgumentError, user_frame
    level = options.get("opt_level", 2)
    if level not in (0, 1, 2, 3):
        raise ArgumentError(f"opt_level must be 0, 1, 2 or 3, got {level!r}", loc=user_frame())
    for key in ("ub_headroom", "l1_headroom", "fuse_ub_headroom"):
        value = options.get(key)
        if value is not None and not (isinstance(value, (int, float)) and 0 < value <= 1):
            raise ArgumentError(f"{key} must be a fraction in (0, 1], got {value!r}", loc=user_frame())
    for key in ("max_kernel_ops", "max_kernel_inputs"):
        value = options.get(key)
        if value is not None and not (isinstance(value, int) and value >= 1):
            raise ArgumentError(f"{key} must be a positive int, got {value!r}", loc=user_frame())
    return FusionOptions(
        opt_level=int(options.get("opt_level", 2)),
        ub_headroom=float(options.get("fuse_ub_headroom", options.get("ub_headroom", DEFAULT_UB_HEADROOM))),
        l1_headroom=float(options.get("l1_headroom", DEFAULT_L1_HEADROOM)),
        max_ops=int(options.get("max_kernel_ops", DEFAULT_MAX_OPS)),
        max_inputs=int(options.get("max_kernel_inputs", DEFAULT_MAX_INPUTS)),
        disabled=disabled_passes(options),
        target=target,
        split_columns=bool(options.get("split_columns", False)),
    )


def _elems(value) -> int:
    n = 1
    for d in value.shape:
        n *= SYMBOLIC_GUESS if isinstance(d, str) else d
    return n


def _kb(nbytes: float) -> str:
    return f"{nbytes / 1024:.1f} KB" if nbytes < 10 * 1024 else f"{nbytes / 1024:.0f} KB"


class GroupStats:
    """What the model needs to know about a group of vector ops, merged in O(small)."""

    __slots__ = ("ops", "tmp_bytes", "inputs", "elems", "min_item", "apis")

    def __init__(self, op, external_inputs):
        self.ops = 1
        self.tmp_bytes = op.result.dtype.itemsize           # one UB slot element per value
        self.inputs = dict(external_inputs)                  # value id -> itemsize
        self.elems = _elems(op.result)
        self.min_item = min([op.result.dtype.itemsize] + list(self.inputs.values()))
        self.apis = 1

    def merged(self, other, internal: set[int]) -> "GroupStats":
        g = GroupStats.__new__(GroupStats)
        g.ops = self.ops + other.ops
        g.tmp_bytes = self.tmp_bytes + other.tmp_bytes
        small, big = (self.inputs, other.inputs) if len(self.inputs) < len(other.inputs) else (other.inputs, self.inputs)
        g.inputs = dict(big)
        g.inputs.update(small)
        for vid in internal:
            g.inputs.pop(vid, None)
        g.elems = max(self.elems, other.elems)
        g.min_item = min(self.min_item, other.min_item)
        g.apis = self.apis + other.apis
        return g

    def ub_bytes_per_elem(self) -> int:
        # inputs and the output are double-buffered queues; every value a temporary slot
        return 2 * sum(self.inputs.values()) + 2 * 4 + self.tmp_bytes

    def min_tile_bytes(self) -> int:
        return self.ub_bytes_per_elem() * (MIN_TILE_BYTES // max(1, self.min_item))


def merge_verdict(a: GroupStats, b: GroupStats, merged: GroupStats, saved_bytes: int,
                  opts: FusionOptions, need_bytes: bool = True) -> tuple[bool, str, str]:
    """(keep?, code, figures) for merging groups a and b into `merged`.  Siblings that share
    only a constant (`need_bytes=False`) still save a launch."""
    target = opts.target
    if merged.ops > opts.max_ops:
        return False, "FS107", f"cap: {merged.ops} ops > max_kernel_ops={opts.max_ops}"
    if len(merged.inputs) > opts.max_inputs:
        return False, "FS107", f"cap: {len(merged.inputs)} inputs > max_kernel_inputs={opts.max_inputs}"
    if target is None:
        return True, "", ""
    # every GM tensor input takes at least one VECIN queue buffer in the printed kernel: a kernel
    # with more inputs than the chip's queue limit could not be printed
    if len(merged.inputs) > target.max_queue_buffers_per_position:
        return False, "FS105", (f"queue limit: {len(merged.inputs)} GM inputs > {target.max_queue_buffers_per_position} "
                                f"queue buffers on VECIN ({target.name})")
    budget = target.ub_bytes * opts.ub_headroom
    need = merged.min_tile_bytes()
    if need > budget:
        return False, "FS104", f"UB: needs {_kb(need)} of {_kb(budget)} ({opts.ub_headroom:.0%} of {_kb(target.ub_bytes)})"
    if saved_bytes <= 0 and need_bytes:
        return False, "FS102", "no shared bytes"
    benefit, loss = benefit_us(a, b, merged, saved_bytes, target, opts)
    if benefit <= 0:
        return False, "FS108", (f"modelled benefit {benefit:+.2f} us: saves {_kb(saved_bytes)} and a launch, "
                                f"tiling loss {loss:.2f} us")
    return True, "", ""


def input_limit(opts: FusionOptions) -> float:
    """The most GM inputs merge_verdict lets a merged group have (the input cap; on a target also
    its queue buffers per position)."""
    limit = opts.max_inputs
    if opts.target is not None:
        limit = min(limit, opts.target.max_queue_buffers_per_position)
    return limit


def sibling_surely_refused(a: GroupStats, b: GroupStats, opts: FusionOptions) -> bool:
    """Whether merge_verdict refuses the sibling merge of a and b (merged = a.merged(b, set()):
    the inputs are the union) for a cap: too many ops (FS107), inputs (FS107) or GM inputs for
    the queues (FS105).  Answered from the counts alone, and monotone: it stays true while a
    grows by further sibling merges (ops add up, inputs only join), which is what lets fusion
    skip such a pair for the rest of a's turn (passes/fuse.py _merge_siblings)."""
    if a.ops + b.ops > opts.max_ops:
        return True
    new = sum(1 for vid in b.inputs if vid not in a.inputs)
    return len(a.inputs) + new > input_limit(opts)


def _tiles(g: GroupStats, target, opts) -> int:
    per_core_bytes = g.elems * 4
    cores = max(1, min(target.vector_cores, math.ceil(per_core_bytes / cost.MIN_CORE_BYTES)))
    per_core = math.ceil(g.elems / cores)
    tile = max(1, int(target.ub_bytes * opts.ub_headroom / max(1, g.ub_bytes_per_elem())))
    return max(1, math.ceil(per_core / tile))


def benefit_us(a: GroupStats, b: GroupStats, merged: GroupStats, saved_bytes: int, target, opts):
    """Modelled time saved by one merge, and its tiling loss (both microseconds)."""
    bytes_per_us = cost.LOAD[0] * target.vector_cores * target.clock_mhz
    gain = cost.LAUNCH_US + saved_bytes / bytes_per_us
    extra_tiles = _tiles(merged, target, opts) - max(_tiles(a, target, opts), _tiles(b, target, opts))
    per_tile_fixed = merged.apis * 22.0 + (len(merged.inputs) + 1) * cost.LOAD[2]   # b terms + copy heads
    loss = max(0, extra_tiles) * per_tile_fixed / target.clock_mhz
    return gain - loss, loss


def split_reason(reason: str) -> tuple[str, str]:
    """'FS10x text' -> ('FS10x', 'text'); reasons without a code are FS101 by default."""
    head, _, rest = reason.partition(" ")
    if head in REASONS:
        return head, rest
    return "FS101", reason


def reasons_table() -> str:
    lines = ["| code | meaning |", "|---|---|"]
    lines += [f"| {code} | {text} |" for code, text in REASONS.items()]
    return "\n".join(lines)
