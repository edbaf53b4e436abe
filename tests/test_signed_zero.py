"""Signed zeros: abs(-0.0) is +0.0 in every executor (numpy and torch agree); the printed
kernel's Abs went through `a < 0 ? -a : a` in the CPU API, which keeps -0.0."""
import numpy as np
import pytest

import fusedsl as fs


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_abs_of_negative_zero_is_positive_zero_everywhere(dtype):
    x = np.array([-0.0, 0.0, -1.5, 2.0, -0.0], dtype)
    k = fs.fused_kernel(lambda x: fs.abs(x) * 1.0).compile(x)
    want = np.abs(x)
    assert not np.signbit(want).any()
    for name, got in (("llvm", k(x)), ("simulate", k.simulate(x))):
        np.testing.assert_array_equal(got, want)
        assert not np.signbit(got).any(), (name, got)


def test_relu_keeps_negative_zero_like_torch_in_every_executor(monkeypatch):
    """relu(-0.0) is -0.0 (torch.relu's, and the device's Relu); the reference interpreter
    used np.maximum, which gives +0.0, so it disagreed with the LLVM call and simulate."""
    import torch   # the test extra installs it; fusedsl itself never imports it
    x = np.array([-0.0, 0.0, -1.0, np.nan, 3.0], np.float32)
    want = torch.relu(torch.from_numpy(x)).numpy()
    k = fs.fused_kernel(lambda x: fs.relu(x) * 1.0).compile(x)
    outs = {"llvm": k(x), "simulate": k.simulate(x)}
    monkeypatch.setattr(fs.config, "executor", "reference")
    outs["reference"] = fs.fused_kernel(lambda x: fs.relu(x) * 1.0)(x)
    for name, got in outs.items():
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=name)
