"""The command line: compile / explain / include-dir, via `python -m fusedsl`."""
from __future__ import annotations

import os
import subprocess
import sys

KERNELS = os.path.join(os.path.dirname(__file__), "user_code", "cli_kernels.py")


def run(*args):
    return subprocess.run([sys.executable, "-m", "fusedsl", *args], capture_output=True, text=True, timeout=120)


def test_compile_writes_a_project(tmp_path):
    out = tmp_path / "proj"
    r = run("compile", f"{KERNELS}::abs_add_relu", "--arg", "a=128xfloat32", "--arg", "b=Mx128xfloat32",
            "--target", "ascend310p", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "1 kernel(s) for ascend310p" in r.stdout
    assert {"CMakeLists.txt", "run.sh", "main.cpp", "abs_add_relu_kernel.cpp", "abs_add_relu_tiling.h",
            "data_utils.h", "scripts", "cmake"} <= set(os.listdir(out))
    again = run("compile", f"{KERNELS}::abs_add_relu", "--arg", "a=128xfloat32", "--arg", "b=Mx128xfloat32",
                "--target", "ascend310p", "-o", str(out))
    assert again.returncode == 2 and "already holds a fusedsl project; pass --overwrite" in again.stderr
    again = run("compile", f"{KERNELS}::abs_add_relu", "--arg", "a=128xfloat32", "--arg", "b=Mx128xfloat32",
                "--target", "ascend310p", "-o", str(out), "--overwrite")
    assert again.returncode == 0, again.stderr
    op = run("compile", f"{KERNELS}::abs_add_relu", "--arg", "a=128xfloat32", "--arg", "b=Mx128xfloat32",
             "--layout", "op", "--size", "M=7", "-o", str(tmp_path / "op"))
    assert op.returncode == 0, op.stderr
    assert "op_kernel" in os.listdir(tmp_path / "op") and "op_host" in os.listdir(tmp_path / "op")
    assert "(7, 128)" in (tmp_path / "op" / "scripts" / "gen_data.py").read_text().replace("[7, 128]", "(7, 128)")


def test_explain_accepts_plain_functions_and_runtime_scalars():
    r = run("explain", f"{KERNELS}::plain_chain", "--arg", "x=1000xfloat16", "--arg", "alpha=scalar:float32")
    assert r.returncode == 0, r.stderr
    assert "%alpha: f32[] scalar" in r.stdout and "plain_chain_kernel" in r.stdout


def test_include_dir_has_the_headers():
    r = run("include-dir")
    path = r.stdout.strip()
    for header in ("kernel_operator.h", "tikicpulib.h", os.path.join("acl", "acl.h")):
        assert os.path.exists(os.path.join(path, header))


def test_bad_input_is_a_clear_error_not_a_traceback(tmp_path):
    r = run("compile", f"{KERNELS}::nope", "--arg", "a=4xfloat32", "-o", str(tmp_path / "x"))
    assert r.returncode == 2 and "has no function 'nope'" in r.stderr and "Traceback" not in r.stderr
    r = run("compile", f"{KERNELS}::abs_add_relu", "--arg", "a=4xfloat64", "--arg", "b=4xfloat32",
            "-o", str(tmp_path / "y"))
    assert r.returncode == 2 and "float64" in r.stderr and "Traceback" not in r.stderr
    assert not os.path.exists(tmp_path / "y")


def test_simulate_runs_the_printed_kernel_against_the_reference():
    r = run("simulate", f"{KERNELS}::abs_add_relu", "--arg", "a=128xfloat16", "--arg", "b=Mx128xfloat16",
            "--size", "M=37", "--target", "ascend910")
    assert r.returncode == 0, r.stderr
    assert "max |simulated Ascend C - numpy reference| = 0 over 1 output(s)" in r.stdout
    assert "agrees with the numpy reference (4736 element(s))" in r.stdout
    assert "GM bytes: minimum" in r.stdout
    r = run("simulate", f"{KERNELS}::abs_add_relu", "--arg", "a=128xfloat16", "--arg", "b=Mx128xfloat16")
    assert r.returncode == 2 and "--size M=N" in r.stderr
