"""The examples run and say what they promise (examples/seed.py runs in CI as command 1)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_conv_bias_leaky_relu_example_is_one_kernel_and_matches_numpy():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "conv_bias_leaky_relu.py")],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.startswith("1 kernel: cube (conv2d, add, leaky_relu)")
    assert "matches numpy" in text
    fused, unfused = (int(x) for x in text.split("GM bytes, fused vs the three unfused kernels (model): ")[1]
                      .split(" (")[0].split(" vs "))
    assert fused * 3 < unfused   # the conv result never goes to GM and back
    assert "Ascend C:" in text and "conv2d" in text.split("Ascend C:")[1]
