"""Model importers (optional extras): PyTorch through torch.export, and ONNX.

`import fusedsl` never imports torch or onnx; these functions import them on first use.
"""
from __future__ import annotations


def from_torch(module_or_fn, *example_inputs, target=None, **options):
    from .torch_import import from_torch as impl
    return impl(module_or_fn, *example_inputs, target=target, **options)


def torch_backend(target=None, **options):
    from .torch_import import torch_backend as impl
    return impl(target=target, **options)


def from_onnx(path_or_model, target=None, **options):
    from .onnx_import import from_onnx as impl
    return impl(path_or_model, target=target, **options)


__all__ = ["from_torch", "torch_backend", "from_onnx"]
