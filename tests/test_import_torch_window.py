"""Pooling and convolution variants through fs.from_torch (importers/torch_window.py: composed
of conv2d and strided slices), against eager PyTorch: stride, padding, dilation, ceil_mode,
count_include_pad, groups (depthwise), transposed with output_padding, 1-D, 3-D pooling."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn

import fusedsl as fs

CASES = {
    "maxpool2d": (lambda: nn.MaxPool2d(3, 2, 1), (2, 3, 9, 8)),
    "maxpool2d_ceil_dilation": (lambda: nn.MaxPool2d(3, 2, 1, dilation=2, ceil_mode=True), (2, 3, 11, 10)),
    "maxpool1d": (lambda: nn.MaxPool1d(4, 3, 1), (2, 3, 17)),
    "maxpool2d_tiles_remainder": (lambda: nn.MaxPool2d(3), (1, 2, 8, 7)),
    "avgpool2d_tiles_ceil": (lambda: nn.AvgPool2d(3, ceil_mode=True), (1, 2, 8, 9)),
    "maxpool3d": (lambda: nn.MaxPool3d(2, 2), (1, 2, 6, 6, 5)),
    "avgpool2d": (lambda: nn.AvgPool2d(3, 2, 1), (2, 3, 9, 8)),
    "avgpool2d_exclude_pad_ceil": (lambda: nn.AvgPool2d(3, 2, 1, count_include_pad=False, ceil_mode=True),
                                   (2, 3, 10, 9)),
    "avgpool2d_divisor": (lambda: nn.AvgPool2d(2, divisor_override=3), (1, 2, 6, 6)),
    "avgpool1d": (lambda: nn.AvgPool1d(4, 2, 1), (2, 3, 17)),
    "avgpool3d": (lambda: nn.AvgPool3d(2, 2, 1), (1, 2, 6, 6, 5)),
    "adaptive_avg": (lambda: nn.AdaptiveAvgPool2d((2, 3)), (2, 3, 8, 9)),
    "global_avg": (lambda: nn.AdaptiveAvgPool2d(1), (2, 3, 8, 9)),
    "conv1d": (lambda: nn.Conv1d(3, 4, 3, stride=2, padding=1, dilation=2), (2, 3, 17)),
    "conv2d_groups": (lambda: nn.Conv2d(4, 6, 3, padding=1, groups=2), (2, 4, 7, 7)),
    "conv2d_depthwise": (lambda: nn.Conv2d(4, 4, (3, 5), stride=2, padding=(1, 2), groups=4), (2, 4, 9, 9)),
    "conv2d_dilation": (lambda: nn.Conv2d(3, 4, 3, padding=2, dilation=2), (2, 3, 9, 9)),
    "conv2d_same": (lambda: nn.Conv2d(3, 4, 3, padding="same"), (2, 3, 7, 7)),
    "conv_transpose2d": (lambda: nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), (2, 3, 5, 6)),
    "conv_transpose2d_groups_dilation": (lambda: nn.ConvTranspose2d(4, 6, (3, 2), stride=(2, 3), padding=(2, 1),
                                                                    dilation=2, groups=2), (1, 4, 5, 4)),
    "conv_transpose1d": (lambda: nn.ConvTranspose1d(3, 2, 4, stride=3, padding=1, dilation=2), (2, 3, 7)),
    "conv3d": (lambda: nn.Conv3d(4, 6, (3, 2, 3), stride=(2, 1, 2), padding=(1, 1, 0), dilation=(1, 2, 1),
                                 groups=2), (2, 4, 7, 6, 8)),
    "conv_transpose3d": (lambda: nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1, output_padding=(1, 0, 1)),
                         (1, 2, 4, 3, 5)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_window_op_matches_torch(name):
    make, shape = CASES[name]
    torch.manual_seed(1)
    model = make().eval()
    x = torch.randn(shape)
    with torch.no_grad():
        want = model(x).numpy()
    got = np.asarray(fs.from_torch(model, x)(x))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6)


def test_pool_indices_are_refused_clearly():
    with pytest.raises(fs.UnsupportedOpError, match="indices of max pooling"):
        fs.from_torch(nn.MaxPool2d(2, return_indices=True), torch.randn(1, 2, 4, 4))


def test_tiled_pooling_prints_and_simulates():
    """Windows that tile the input (stride == kernel) reduce one kernel axis at a time: a row
    kernel then a column kernel, both printed (one reduction over axes (3, 5) did not print)."""
    class Pools(nn.Module):
        def forward(self, x):
            return nn.functional.max_pool2d(x, 2), nn.functional.avg_pool2d(x, (2, 3)), nn.functional.max_pool3d(
                x.reshape(1, 2, 3, 4, 12), 2)

    x = torch.randn(1, 6, 4, 12)
    k = fs.from_torch(Pools(), x).compile(x.numpy(), target="ascend910b")
    k.check_ascendc()
    with torch.no_grad():
        want = Pools()(x)
    for got, w in zip(k.simulate(x.numpy()), want):
        np.testing.assert_allclose(got, w.numpy(), rtol=1e-5, atol=1e-6)
