"""PyTorch's window ops (pooling, convolution variants) mapped to their definitions.

The compositions themselves are the window composites of `fusedsl/ops/window.py` (one
definition each, also `fs.max_pool2d`, `fs.conv1d`, ...); this table only adapts each ATen
overload's arguments (aten.convolution's `transposed` flag, the 3-D variants that have no fs
name, max pooling's refused indices).
"""
from __future__ import annotations

from ..frontend import api as fs
from ..ops import window
from .torch_ops import Missing

F = fs._F   # the namespace the definitions are written against


def convolution(x, w, b=None, stride=1, padding=0, dilation=1, transposed=False, output_padding=0, groups=1):
    """aten.convolution (and conv1d/2d/3d, conv_transpose*): any groups, dilation, stride, padding."""
    return window.convolution(F, x, w, b, stride, padding, dilation, transposed, output_padding, groups)


def conv_nd(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    return window.convolution(F, x, w, b, stride, padding, dilation, False, 0, groups)


def conv_transpose_nd(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return window.convolution(F, x, w, b, stride, padding, dilation, True, output_padding, groups)


def max_pool(nd):
    def rule(x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        return window.max_pool(F, nd, x, kernel_size, stride, padding, dilation, ceil_mode, f"max_pool{nd}d")
    return rule


def _max_pool_with_indices(nd):
    values = max_pool(nd)

    def rule(*args, **kw):
        return values(*args, **kw), Missing("the indices of max pooling (fusedsl has no argmax over windows)")
    return rule


def avg_pool(nd):
    def rule(x, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
        return window.avg_pool(F, nd, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                               divisor_override, f"avg_pool{nd}d")
    return rule


def _adaptive_avg_pool(nd):
    return lambda x, output_size: window.adaptive_avg_pool(F, nd, x, output_size, f"adaptive_avg_pool{nd}d")


def window_table(aten) -> dict:
    return {
        aten.convolution.default: convolution,
        aten.conv1d.default: conv_nd, aten.conv2d.default: conv_nd, aten.conv3d.default: conv_nd,
        aten.conv_transpose1d.default: conv_transpose_nd, aten.conv_transpose2d.input: conv_transpose_nd,
        aten.conv_transpose3d.input: conv_transpose_nd,
        aten.max_pool1d.default: max_pool(1), aten.max_pool2d.default: max_pool(2),
        aten.max_pool3d.default: max_pool(3),
        aten.max_pool2d_with_indices.default: _max_pool_with_indices(2),
        aten.max_pool3d_with_indices.default: _max_pool_with_indices(3),
        aten.avg_pool1d.default: avg_pool(1), aten.avg_pool2d.default: avg_pool(2),
        aten.avg_pool3d.default: avg_pool(3),
        aten.adaptive_avg_pool1d.default: _adaptive_avg_pool(1),
        aten.adaptive_avg_pool2d.default: _adaptive_avg_pool(2),
        aten._adaptive_avg_pool2d.default: _adaptive_avg_pool(2),
        aten.adaptive_avg_pool3d.default: _adaptive_avg_pool(3),
        aten._adaptive_avg_pool3d.default: _adaptive_avg_pool(3),
    }
