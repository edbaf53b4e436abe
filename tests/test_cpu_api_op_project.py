"""A hand-written op project (op_host with BEGIN_TILING_DATA_DEF and OP_ADD, op_kernel with
GET_TILING_DATA) builds with g++ against `fusedsl include-dir` and runs: the op's registered tiling
function through fusedsl_cpu::RunOpTiling, then its kernel through ICPU_RUN_KF."""
import os
import subprocess

import pytest

from fusedsl.backend_ascendc.cpu import include_dir

OP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ascendc_kernels", "op_add_custom")
FLAGS = ["g++", "-std=c++17", "-O1", "-Wall", "-Werror", "-DASCENDC_CPU_DEBUG", "-D__NPU_ARCH__=2201"]


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    out = tmp_path_factory.mktemp("op_add_custom")
    inc = f"-I{include_dir()}"
    jobs = {
        "kernel": FLAGS + [inc, "-include", os.path.join(OP, "op_host", "add_custom_tiling.h"), "-c",
                           os.path.join(OP, "op_kernel", "add_custom.cpp"), "-o", str(out / "kernel.o")],
        "host": FLAGS + [inc, "-c", os.path.join(OP, "op_host", "add_custom.cpp"), "-o", str(out / "host.o")],
        "bad_host": FLAGS + [inc, "-DFORGET_BLOCK_DIM", "-c", os.path.join(OP, "op_host", "add_custom.cpp"),
                             "-o", str(out / "bad_host.o")],
        "main": FLAGS + [inc, "-c", os.path.join(OP, "main.cpp"), "-o", str(out / "main.o")],
    }
    procs = {k: subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for k, cmd in jobs.items()}
    for k, p in procs.items():
        log = p.communicate()[0]
        assert p.returncode == 0, f"{k}: {log}"
    exes = {}
    for name, host in (("good", "host.o"), ("bad", "bad_host.o")):
        exe = str(out / name)
        subprocess.run(["g++", str(out / "main.o"), str(out / host), str(out / "kernel.o"), "-o", exe], check=True)
        exes[name] = exe
    return exes


def _run(exe):
    env = {k: v for k, v in os.environ.items() if k != "FUSEDSL_TARGET"}
    return subprocess.run([exe], capture_output=True, text=True, env=env, timeout=60)


def test_op_project_runs_its_tiling_function_and_kernel(programs):
    r = _run(programs["good"])
    assert r.returncode == 0 and "[SUCCESS] blockDim 8, 8 tiling bytes" in r.stdout, r.stdout + r.stderr


def test_a_tiling_function_without_block_dim_is_reported(programs):
    r = _run(programs["bad"])
    assert r.returncode == 1
    assert "fusedsl CPU op host (AddCustom): the tiling function never called SetBlockDim" in r.stderr, r.stderr
