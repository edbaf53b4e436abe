"""The user-facing frontend: the fs.* ops (api.py), the tracer (tracing.py) and @fused_kernel (kernel.py)."""
