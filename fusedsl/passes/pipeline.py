"""The pass pipeline: one ordered list, one reason per step."""
from __future__ import annotations

from .base import PassManager
from .canonicalize import CSE, DCE, Algebra, ConstantFold
from .fuse import Fuse


def canonicalize_passes():
    return [
        ConstantFold(),   # first: turns constant subexpressions into constants the algebra rules can see
        Algebra(),        # removes identities (x*1, x-0, ...) exposed by folding
        CSE(),            # merges repeated subexpressions (composites often recompute the same value)
        DCE(),            # last: drops ops orphaned by the rewrites above
    ]


def canonicalize(module, verify: bool = True):
    return PassManager(canonicalize_passes(), verify=verify).run(module)


def compile_passes(single_kernel: bool, max_queues: int | None):
    """Everything from traced graph to kernels; `Fuse` (the last pass) records why each
    kernel boundary exists."""
    return canonicalize_passes() + [
        Fuse(single_kernel, max_queues),  # after canonicalisation: it partitions the simplified graph
    ]
