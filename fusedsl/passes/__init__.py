"""Passes over the IR; `pipeline.py` lists them in order."""
from .base import Pass, PassManager, Rewriter, write_atomic
from .canonicalize import CSE, DCE, Algebra, ConstantFold
from .fold_batch_norm import FoldBatchNorm

__all__ = ["Pass", "PassManager", "Rewriter", "write_atomic", "CSE", "DCE", "Algebra", "ConstantFold", "FoldBatchNorm"]
