"""The examples run and say what they promise (examples/seed.py runs in CI as command 1)."""
import os
import re
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
    assert "Ascend C on the CPU API: matches numpy" in text
    m = re.search(r"GM bytes measured by simulate: one kernel (\d+), the 3 unfused kernels (\d+)", text)
    fused, unfused = int(m.group(1)), int(m.group(2))
    assert fused < 0.85 * unfused   # the conv result never goes to GM and back: measured, not modelled
    assert "im2col inside the kernel" in text and "Ascend C: " in text and " lines" in text.split("Ascend C: ")[1]
