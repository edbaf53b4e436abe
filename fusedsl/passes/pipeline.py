"""The pass pipeline: one ordered list, one reason per step."""
from __future__ import annotations

from .base import PassManager
from .canonicalize import CSE, DCE, Algebra, ConstantFold
from .fold_batch_norm import FoldBatchNorm
from .fold_transpose import FoldTranspose
from .fuse_attention import FoldAttentionHeads, FoldAttentionLayout, FoldAttentionRope, FuseAttention
from .fuse import Fuse
from .split_reductions import SplitColumns, SplitReductions
from .fusion_model import FusionOptions


def canonicalize_passes():
    return [
        FoldBatchNorm(),  # first: conv/matmul + batch norm becomes conv/matmul + bias before anything splits it
        ConstantFold(),   # then: turns constant subexpressions into constants the algebra rules can see
        Algebra(),        # removes identities (x*1, x-0, ...) exposed by folding
        CSE(),            # merges repeated subexpressions (composites often recompute the same value)
        FoldTranspose(),  # after BN folding (which scales the transposed weight): x @ w.T reads w transposed
        FuseAttention(),  # after fold-transpose (q @ k^T is one matmul then): softmax(q k^T s + m) v -> attention
        FoldAttentionRope(),    # then: fs.rope / rotate-half of q and k becomes the attention op's rotation
        FoldAttentionLayout(),  # then: the heads transposes around an attention op become its [B, S, H, D] layout
        FoldAttentionHeads(),   # then: q, k, v sliced from one linear layer's output are read where they lie
        SplitReductions(),  # a reduction over separated axes: one per run of adjacent axes (what prints)
        DCE(),            # last: drops ops orphaned by the rewrites above
    ]


def canonicalize(module, verify: bool = True):
    return PassManager(canonicalize_passes(), verify=verify).run(module)


def compile_passes(single_kernel: bool, max_queues: int | None, fusion: FusionOptions | None = None):
    """Everything from traced graph to kernels; `Fuse` (the last pass) records why each
    kernel boundary exists.  Passes named in `fusion.disabled` (disable_passes=[...],
    FUSEDSL_DISABLE_PASSES) are left out; "fuse" cannot be left out (main must be calls),
    so disabling it makes every op a kernel of its own."""
    fusion = fusion or FusionOptions()
    passes = [p for p in canonicalize_passes() if p.name not in fusion.disabled
              and (p.name not in ("attention-fusion", "attention-rope", "attention-layout", "attention-heads") or fusion.fuse or single_kernel)]
    notes = next((p.misses for p in passes if isinstance(p, FuseAttention)), {})
    # the chip's cores: a column reduction on too few tiles in two stages (opt-in: split_columns=True)
    columns = [SplitColumns(fusion.target)] if fusion.split_columns and "split-columns" not in fusion.disabled else []
    return passes + columns + [
        Fuse(single_kernel, max_queues, fusion, notes),  # after canonicalisation: it partitions the simplified graph
    ]
