"""Lowering: from a fused kernel's graph IR to what the backends consume.

`kinds` is the registry of kernel kinds (how each is recognised and scheduled); `row_plan`
assigns a row kernel's ops to phases over a cached row. Nothing here imports a backend.
"""
