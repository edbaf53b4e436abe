"""`fusedsl cpu-run FILE.asc`: CANN 9 single-source programs (host main + <<<>>> launches) built with
g++ against the CPU implementation of the API and run with its checks, checked against numpy."""
import os
import subprocess
import sys

import numpy as np
import pytest

from fusedsl.backend_ascendc import asc
from fusedsl.errors import AscendCCompileError

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "asc", "two_kernels.asc")
ROOT = os.path.dirname(HERE)
N = 8 * 2048


def _workdir(path, seed=0):
    rng = np.random.default_rng(seed)
    os.makedirs(path / "input")
    os.makedirs(path / "output")
    x = rng.standard_normal(N).astype(np.float32)
    y = rng.standard_normal(N).astype(np.float32)
    x.tofile(path / "input" / "x.bin")
    y.tofile(path / "input" / "y.bin")
    return x, y


def _check_outputs(path, x, y):
    z = np.fromfile(path / "output" / "z.bin", np.float32)
    w = np.fromfile(path / "output" / "w.bin", np.float32)
    np.testing.assert_allclose(z, x + y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(w, np.where(x > 0, x, 0.125 * x) * -2.0, rtol=1e-6, atol=1e-6)


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    return asc.build(PROGRAM, str(tmp_path_factory.mktemp("asc_build")))


def test_cli_builds_and_runs_a_single_source_program(tmp_path):
    x, y = _workdir(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "FUSEDSL_TARGET"}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "fusedsl", "cpu-run", PROGRAM, "--", "8"], cwd=tmp_path,
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and "done" in r.stdout, r.stdout + r.stderr
    _check_outputs(tmp_path, x, y)


@pytest.mark.parametrize("blocks", ["4", "2"])
def test_other_block_counts_match_numpy(exe, tmp_path, blocks):
    x, y = _workdir(tmp_path, seed=int(blocks))
    r = subprocess.run([exe, blocks], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    _check_outputs(tmp_path, x, y)


def test_a_broken_hardware_rule_stops_the_program(exe, tmp_path):
    _workdir(tmp_path)
    r = subprocess.run([exe, "8", "unaligned"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert "[ERROR] fusedsl CPU check" in r.stderr and "DataCopy" in r.stderr, r.stderr
    assert "done" not in r.stdout


def test_acl_copy_from_host_memory_is_refused(exe, tmp_path):
    _workdir(tmp_path)
    r = subprocess.run([exe, "8", "badcopy"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "acl call failed" in r.stdout
    assert "aclrtMemcpy: the source" in r.stderr and "not inside device memory" in r.stderr, r.stderr


def test_translate_keeps_lines_and_handles_templates_and_configs():
    src = ("__global__ __mix__(1, 2) void k(GM_ADDR a, GM_ADDR b);\n"
           "k<<<n, nullptr, s>>>(a, b);\n"
           "ns::kern<float, 4><<<NUM_BLOCKS,\n  0>>>(x);\n"
           "std::vector<std::vector<std::pair<int, int>>> v;\n")
    out = asc.translate(src, 'dir/we"ird\n.asc')
    first, rest = out.split("\n", 1)
    assert first == '#line 1 "dir/we\\"ird\\012.asc"'
    assert rest.count("\n") == src.count("\n")
    assert "::fusedsl_cpu::AscLaunch(::KernelMode::MIX_MODE, k, n, nullptr, s)(a, b);" in rest
    assert "::fusedsl_cpu::AscLaunch(::KernelMode::AIV_MODE, ns::kern<float, 4>, NUM_BLOCKS,\n  0)(x);" in rest
    assert "std::pair<int, int>>> v;" in rest   # a template's >>> is no launch


def test_compile_errors_point_at_the_asc_line(tmp_path):
    bad = tmp_path / "bad.asc"
    bad.write_text('#include "kernel_operator.h"\n\n__global__ __vector__ void k(GM_ADDR x)\n{\n'
                   '    AscendC::NoSuchApi(x);\n}\nint main() { k<<<1, 0>>>(nullptr); return 0; }\n')
    with pytest.raises(AscendCCompileError) as info:
        asc.build(str(bad), str(tmp_path))
    assert "bad.asc:5" in str(info.value) and "NoSuchApi" in str(info.value)
