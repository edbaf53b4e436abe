"""Hand-written Ascend C kernels (tests/ascendc_kernels) on fusedsl's CPU API implementation:
as CPU-mode programs built with plain g++ from two translation units, and through the
Python runner against numpy."""
import os
import subprocess

import numpy as np
import pytest
from conftest import ASCENDC_KERNELS

from fusedsl.backend_ascendc import cpu_runner
from fusedsl.backend_ascendc.cpu import include_dir
from fusedsl.errors import AscendCCheckError

KERNELS = ASCENDC_KERNELS


pytestmark = pytest.mark.usefixtures("private_cache_dir")


def _source(name):
    with open(os.path.join(KERNELS, name), encoding="utf-8") as f:
        return f.read()


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """Both sample kernels, each linked with its main.cpp: kernel and main are separate TUs."""
    out = tmp_path_factory.mktemp("programs")
    procs = {}
    for name in ("add_custom", "leaky_relu_custom"):
        exe = out / name
        cmd = ["g++", "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-DASCENDC_CPU_DEBUG",
               f"-I{include_dir()}", f"-I{KERNELS}", os.path.join(KERNELS, f"{name}.cpp"),
               os.path.join(KERNELS, f"{name}_main.cpp"), "-o", str(exe)]
        procs[name] = (exe, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    built = {}
    for name, (exe, proc) in procs.items():
        log, _ = proc.communicate()
        assert proc.returncode == 0, log
        built[name] = str(exe)
    return built


def _run(exe, **env):
    full_env = {k: v for k, v in os.environ.items() if k != "FUSEDSL_TARGET"}
    full_env.update(env)
    return subprocess.run([exe], capture_output=True, text=True, env=full_env, timeout=60)


@pytest.mark.parametrize("name", ["add_custom", "leaky_relu_custom"])
def test_cpu_mode_program_runs(programs, name):
    proc = _run(programs[name])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"[SUCCESS] {name} matches" in proc.stdout


def _line_of(kernel: str, text: str) -> int:
    """The line of tests/ascendc_kernels/<kernel> holding `text` (the call a check names)."""
    with open(os.path.join(ASCENDC_KERNELS, kernel), encoding="utf-8") as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def test_cpu_mode_program_reports_a_broken_rule_and_exits_1(programs):
    # The LeakyRelu kernel moves its tail with DataCopyPad, which 310P does not have.
    proc = _run(programs["leaky_relu_custom"], FUSEDSL_TARGET="ascend310p")
    assert proc.returncode == 1
    line = _line_of("leaky_relu_custom.cpp", "AscendC::DataCopyPad(xLocal")
    path = os.path.join(ASCENDC_KERNELS, "leaky_relu_custom.cpp")
    assert f"[ERROR] fusedsl CPU check (ascend310p, block 0): {path}:{line}: DataCopyPad is not available on " \
        "ascend310p" in proc.stderr, proc.stderr


def test_an_unknown_fusedsl_target_is_a_warning_like_the_others(programs):
    # a program built without __NPU_ARCH__ reads FUSEDSL_TARGET; an unknown name falls back to ascend910b
    # with one warning in the format of every other warning of a program (Warn: stderr, once)
    proc = _run(programs["add_custom"], FUSEDSL_TARGET="ascend999")
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "FUSEDSL_TARGET" in line]
    assert warnings == ["[WARNING] fusedsl CPU (ascend910b, block 0): FUSEDSL_TARGET=ascend999 is not a known "
                        "target (ascend910b, ascend910b4, ascend310p, ascend910); using ascend910b"], proc.stderr
    assert "[SUCCESS] add_custom matches" in proc.stdout


def test_cpu_mode_program_on_910a_rejects_leaky_relu(programs):
    proc = _run(programs["leaky_relu_custom"], FUSEDSL_TARGET="ascend910")
    assert proc.returncode == 1
    assert "LeakyRelu is not available on ascend910" in proc.stderr


@pytest.fixture(scope="module")
def add_lib():
    return cpu_runner.build(_source("add_custom.cpp"), name="add_custom", extra_flags=[f"-I{KERNELS}"])


@pytest.fixture(scope="module")
def leaky_lib():
    return cpu_runner.build(_source("leaky_relu_custom.cpp"), name="leaky_relu_custom", extra_flags=[f"-I{KERNELS}"])


def test_add_custom_through_runner(add_lib):
    rng = np.random.default_rng(0)
    n = 8 * 2048
    x = rng.standard_normal(n).astype(np.float16)
    y = rng.standard_normal(n).astype(np.float16)
    z = np.zeros(n, np.float16)
    stats = add_lib.launch("add_custom", 8, [("x", x), ("y", y), ("z", z)])
    np.testing.assert_array_equal(z, (x.astype(np.float32) + y.astype(np.float32)).astype(np.float16))
    # 8 blocks x 16 tiles of 128 halves: one Add each, one 256-byte repeat each.
    assert stats.gm_bytes_read == 2 * n * 2
    assert stats.gm_bytes_written == n * 2
    assert stats.vector_instructions == 8 * 16
    assert stats.vector_repeats == 8 * 16
    assert stats.scalar_gm_accesses == 0
    assert stats.ub_high_water == 3 * 2 * 128 * 2


def test_add_custom_with_too_few_blocks_leaves_output_untouched_and_too_many_reads_out_of_bounds(add_lib):
    n = 8 * 2048
    x = np.ones(n, np.float16)
    z = np.zeros(n, np.float16)
    # 16 blocks split the fixed 16384-element tiling into 1024-element blocks: fine.
    add_lib.launch("add_custom", 16, [("x", x), ("y", x.copy()), ("z", z)])
    assert np.all(z == 2)
    # Buffers half the size the tiling assumes: the second half of the blocks read past 'x'.
    small = np.ones(n // 2, np.float16)
    line = _line_of("add_custom.cpp", "AscendC::DataCopy(xLocal, xGm[progress * tileLength]")
    with pytest.raises(AscendCCheckError, match=rf"block 4\): add_custom\.cpp:{line}: DataCopy\(GM->UB\): .*'x'"):
        add_lib.launch("add_custom", 8, [("x", small), ("y", small.copy()), ("z", small.copy())])


def test_leaky_relu_through_runner_with_tails(leaky_lib):
    rng = np.random.default_rng(1)
    blocks, per_block = 8, 1001
    n = blocks * per_block
    x = (rng.standard_normal(n) * 10).astype(np.float32)
    y = np.full(n, np.nan, np.float32)
    tiling = np.zeros(3, np.uint32)
    tiling[:2] = (n, 256)
    tiling.view(np.float32)[2] = 0.1
    stats = leaky_lib.launch("leaky_relu_custom", blocks, [("x", x), ("y", y), ("tiling", tiling)])
    np.testing.assert_array_equal(y, np.where(x < 0, x * np.float32(0.1), x))
    assert stats.gm_bytes_read == n * 4 and stats.gm_bytes_written == n * 4
    # 4 tiles per block (3 x 256 + 233, rounded up to 240 lanes): one LeakyRelu each.
    assert stats.vector_instructions == blocks * 4
    assert stats.vector_repeats == blocks * (3 * 4 + 4)


def test_leaky_relu_on_310p_fails_in_library_mode_without_exiting(leaky_lib):
    x = np.ones(8 * 1001, np.float32)
    tiling = np.array([8 * 1001, 256, 0], np.uint32)
    line = _line_of("leaky_relu_custom.cpp", "AscendC::DataCopyPad(xLocal")
    with pytest.raises(AscendCCheckError, match=rf"^fusedsl CPU check \(ascend310p, block 0\): leaky_relu_custom\.cpp:"
                                                rf"{line}: DataCopyPad is not available on ascend310p"):
        leaky_lib.launch("leaky_relu_custom", 8, [("x", x), ("y", x.copy()), ("tiling", tiling)],
                         target="ascend310p")
    # The library is still usable afterwards, on the default target.
    y = np.zeros_like(x)
    tiling = np.zeros(3, np.uint32)
    tiling[:2] = (8 * 1001, 256)
    leaky_lib.launch("leaky_relu_custom", 8, [("x", x), ("y", y), ("tiling", tiling)], target="ascend910b")
    assert np.all(y == 1)
