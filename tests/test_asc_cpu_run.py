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
    assert "::fusedsl_cpu::AscLaunch(::KernelMode::MIX_MODE, -1, k, n, nullptr, s)(a, b);" in rest
    assert "::fusedsl_cpu::AscLaunch(::KernelMode::AIV_MODE, -1, ns::kern<float, 4>, NUM_BLOCKS,\n  0)(x);" in rest
    assert "std::pair<int, int>>> v;" in rest   # a template's >>> is no launch


def test_translate_reads_qualifiers_written_before_global():
    # CANN's matmul samples write `__cube__ __global__ __aicore__ void k(...)`: still a cube-only launch
    src = ("__cube__ __global__ __aicore__ void mm(GM_ADDR a, GM_ADDR workspace);\n"
           "__global__ __vector__ void v(GM_ADDR a);\n"
           "mm<<<1, nullptr, s>>>(a, w);\nv<<<2, nullptr, s>>>(a);\n")
    out = asc.translate(src, "k.asc")
    assert "::fusedsl_cpu::AscLaunch(::KernelMode::AIC_MODE, 1, mm, 1, nullptr, s)(a, w);" in out
    assert "::fusedsl_cpu::AscLaunch(::KernelMode::AIV_MODE, -1, v, 2, nullptr, s)(a);" in out
    # a kernel picked at compile time through another name: the file's kernels are all __cube__
    src = ("__global__ __cube__ void k1(GM_ADDR a, GM_ADDR workspace);\n"
           "__global__ __cube__ void k2(GM_ADDR a, GM_ADDR workspace);\n"
           "constexpr auto pick = k1;\npick<<<1, nullptr, s>>>(a, w);\n")
    assert "::fusedsl_cpu::AscLaunch(::KernelMode::AIC_MODE, 1, pick, 1, nullptr, s)(a, w);" in asc.translate(src, "k.asc")


def test_translate_reads_qualifiers_chosen_by_the_preprocessor():
    # CANN's quant_group_matmul_high_performance picks __mix__(1, 1) or __mix__(1, 2) with #if between
    # __global__ and the definition: still a mixed launch (it was run in AIV_MODE and hung at its
    # CrossCoreWaitFlag, its cube cores never started), its workspace parameter still found
    src = ("template <int N>\n#if SCENARIO == 0\n__global__ __mix__(1, 1)\n#else\n__global__ __mix__(1, 2)\n"
           "#endif\n    void qgm(GM_ADDR x, __kfc_workspace__ GM_ADDR workspace)\n{\n}\n"
           "qgm<\n    4><<<8, 0, s>>>(x, w);\n")   # template arguments over two lines, as the sample's
    out = asc.translate(src, "k.asc")
    # the mode is what the build's -D options select: a function with the same conditionals, declared
    # ahead of the #line directive and defined after the last line
    assert "::fusedsl_cpu::AscLaunch(fusedsl_cpu_mode_qgm(), 1, qgm<\n    4>, 8, 0, s)(x, w);" in out
    ahead, rest = out.split('#line 1 "k.asc"\n')
    assert ahead == "enum class KernelMode;\n::KernelMode fusedsl_cpu_mode_qgm();\n"
    body, resolver = rest.split("\n::KernelMode fusedsl_cpu_mode_qgm() {\n")
    assert body.count("\n") == src.count("\n")   # no line moved
    assert resolver.startswith("#if SCENARIO == 0\nreturn ::KernelMode::MIX_AIC_1_1;\n#else\n"
                               "return ::KernelMode::MIX_MODE;\n#endif\n")
    # an #endif closing an earlier block right before __global__ chooses nothing
    src = "#ifdef X\nint a;\n#endif\n__global__ __mix__(1, 1) void k(GM_ADDR x)\n{\n}\nk<<<2, 0, s>>>(x);\n"
    assert "AscLaunch(::KernelMode::MIX_AIC_1_1, -1, k, 2, 0, s)(x);" in asc.translate(src, "k.asc")


@pytest.mark.parametrize("qualifier,mode", [("__mix__(1, 2)", "MIX_MODE"), ("__mix__(1,1)", "MIX_AIC_1_1"),
                                            ("__mix__(1, 0)", "AIC_MODE"), ("__mix__(0, 1)", "AIV_MODE")])
def test_translate_maps_each_mix_ratio_to_cpudebugs_mode(qualifier, mode):
    # cpudebug's kernel_elf_parser.h: (aic, aiv) ratio (1, 2) MIX_MODE, (1, 1) MIX_AIC_1_1, (1, 0) AIC_MODE, (0, 1) AIV
    src = f"__global__ {qualifier} void k(GM_ADDR x)\n{{\n}}\nk<<<2, 0, s>>>(x);\n"
    assert f"AscLaunch(::KernelMode::{mode}, -1, k, 2, 0, s)(x);" in asc.translate(src, "k.asc")


@pytest.mark.parametrize("ratio", [1, 2])
def test_a_mix_kernel_runs_its_ratio_of_vector_cores(tmp_path, ratio):
    # __mix__(1, 1): one vector core per block (GetBlockIdx in [0, 3), GetTaskRatio / GetSubBlockNum 1);
    # __mix__(1, 2): two (GetBlockIdx in [0, 6)); GetBlockNum is the launch's 3 either way (asc-devkit
    # GetBlockIdx.md / GetBlockNum.md / GetTaskRatio.md; cpudebug's g_taskRation)
    exe = asc.build(os.path.join(HERE, "asc", "mix_ratio.asc"), str(tmp_path),
                    defines=("RATIO_1_1",) if ratio == 1 else ())
    r = subprocess.run([exe], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    seen = sorted(line for line in r.stdout.splitlines() if line.startswith("core "))
    assert seen == sorted(f"core {v} of 3 sub {v % ratio} of {ratio} ratio {ratio}" for v in range(3 * ratio))


def test_the_cc_driver_optimises_unless_told_otherwise(tmp_path, monkeypatch):
    # CANN's sample CMakeLists set no build type: -O1 as `fusedsl cpu-run` builds; an explicit level is kept
    src = tmp_path / "k.asc"
    src.write_text("__global__ __vector__ void k(GM_ADDR x) {}\n")
    seen = []
    monkeypatch.setattr(asc.subprocess, "run", lambda cmd, **kw: seen.append(cmd) or subprocess.CompletedProcess(cmd, 0))
    for flags in ([], ["-O0", "-g"]):
        assert asc.compile_object([*flags, "--npu-arch=dav-2201", "-o", str(tmp_path / "k.o"), "-c", str(src)]) == 0
    assert [a for a in seen[0] if a.startswith("-O")] == ["-O1"]
    assert [a for a in seen[1] if a.startswith("-O")] == ["-O0"]


def test_compile_errors_point_at_the_asc_line(tmp_path):
    bad = tmp_path / "bad.asc"
    bad.write_text('#include "kernel_operator.h"\n\n__global__ __vector__ void k(GM_ADDR x)\n{\n'
                   '    AscendC::NoSuchApi(x);\n}\nint main() { k<<<1, 0>>>(nullptr); return 0; }\n')
    with pytest.raises(AscendCCompileError) as info:
        asc.build(str(bad), str(tmp_path))
    assert "bad.asc:5" in str(info.value) and "NoSuchApi" in str(info.value)


def test_translate_passes_the_workspace_parameter_index():
    # GetSysWorkSpacePtr() returns the argument bound to the kernel's `workspace` parameter
    src = ("__global__ __cube__ void mm(GM_ADDR a, GM_ADDR b, __gm__ uint8_t* workspace, GM_ADDR tiling);\n"
           "template <typename T, int N>\n__global__ __vector__ void v(GM_ADDR x, Foo<T, N> f);\n"
           "mm<<<2, nullptr, s>>>(a, b, w, t);\nv<float, 2><<<1, 0>>>(x, f);\n")
    out = asc.translate(src, "k.asc")
    assert "AscLaunch(::KernelMode::AIC_MODE, 2, mm, 2, nullptr, s)(a, b, w, t);" in out
    assert "AscLaunch(::KernelMode::AIV_MODE, -1, v<float, 2>, 1, 0)(x, f);" in out


# ---- CANN sample trees built with their own CMakeLists.txt (cpu/include/cmake/asc-config.cmake) ----

CUBE_PROJECT = os.path.join(HERE, "asc", "cube_matmul")


def _cmake_env():
    from fusedsl.backend_ascendc.cpu import include_dir
    env = dict(os.environ, CMAKE_PREFIX_PATH=include_dir(), FUSEDSL_PYTHON=sys.executable)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _cmake_build(src, build, *options):
    env = _cmake_env()
    cfg = subprocess.run(["cmake", *options, src], cwd=build, env=env, capture_output=True, text=True, timeout=120)
    assert cfg.returncode == 0, cfg.stdout + cfg.stderr
    return subprocess.run(["make"], cwd=build, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not __import__("shutil").which("cmake"), reason="cmake is not installed")
def test_sample_tree_builds_with_its_cmakelists_and_runs_a_cube_only_matmul(tmp_path):
    # find_package(ASC) + LANGUAGES ASC: the .asc goes through fusedsl's driver; the __cube__ kernel runs in
    # AIC_MODE and GetSysWorkSpacePtr() is its `workspace` argument without SetSysWorkspace
    made = _cmake_build(CUBE_PROJECT, tmp_path, "-DCMAKE_ASC_RUN_MODE=cpu", "-DCMAKE_ASC_ARCHITECTURES=dav-2201")
    assert made.returncode == 0, made.stdout + made.stderr
    rng = np.random.default_rng(3)
    a = rng.standard_normal((96, 48)).astype(np.float16)
    b = rng.standard_normal((48, 64)).astype(np.float16)
    bias = rng.standard_normal(64).astype(np.float32)
    os.makedirs(tmp_path / "input")
    os.makedirs(tmp_path / "output")
    a.tofile(tmp_path / "input" / "a.bin")
    b.tofile(tmp_path / "input" / "b.bin")
    bias.tofile(tmp_path / "input" / "bias.bin")
    r = subprocess.run(["./demo"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "done" in r.stdout, r.stdout + r.stderr
    c = np.fromfile(tmp_path / "output" / "c.bin", np.float32).reshape(96, 64)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32) + bias, rtol=1e-5, atol=1e-4)


@pytest.mark.skipif(not __import__("shutil").which("cmake"), reason="cmake is not installed")
def test_a_sample_built_for_ascend_950_stops_with_one_located_target_error(tmp_path):
    made = _cmake_build(CUBE_PROJECT, tmp_path, "-DCMAKE_ASC_RUN_MODE=cpu", "-DCMAKE_ASC_ARCHITECTURES=dav-3510")
    out = made.stdout + made.stderr
    assert made.returncode != 0
    assert out.count("TargetError") == 1, out
    kernel_line = next(i for i, line in enumerate(open(os.path.join(CUBE_PROJECT, "cube_matmul.asc")), 1)
                       if "__global__" in line)
    assert f"cube_matmul.asc:{kernel_line}: this source is built for Ascend 950" in out, out
    assert "dav-3510" in out and "error:" in out and "g++" not in out.split("TargetError")[0][-200:]


def test_a_cube_only_kernel_has_no_ub_on_910b(tmp_path):
    src = tmp_path / "aic_ub.asc"
    src.write_text('#include "kernel_operator.h"\n'
                   "__global__ __cube__ void k(GM_ADDR x) {\n"
                   "    AscendC::TPipe pipe;\n"
                   "    AscendC::TBuf<AscendC::TPosition::VECCALC> buf;\n"
                   "    pipe.InitBuffer(buf, 256);\n"
                   "}\n"
                   "int main() { uint8_t* x = nullptr; aclrtMalloc((void**)&x, 64, ACL_MEM_MALLOC_HUGE_FIRST);\n"
                   "  k<<<1, nullptr>>>(x); return 0; }\n")
    r = asc.run(str(src), capture=True, cwd=str(tmp_path))
    assert r.returncode == 1
    assert ("InitBuffer: this is a cube-only kernel (AIC_MODE, __cube__) and the cube core of ascend910b has no UB"
            in r.stderr), r.stderr
    r = asc.run(str(src), capture=True, cwd=str(tmp_path), target="ascend310p")   # coupled: the AI core has UB
    assert r.returncode == 0, r.stderr


# ---- simulate's GM buffers (issue 18 item 11) -------------------------------------------------

def test_simulate_accepts_inputs_that_share_memory_or_are_misaligned():
    import fusedsl as fs
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    k = fs.fused_kernel(lambda a, b: a + b).compile(x, x[0])
    np.testing.assert_array_equal(k.simulate(x, x[0]), x + x[0])   # x and x[0] start at one address
    raw = np.zeros(24 * 4 + 1, np.uint8)
    odd = np.frombuffer(raw.data, dtype=np.float32, count=24, offset=1).reshape(4, 6)
    odd_vals = odd.copy()
    assert not odd.flags.aligned
    np.testing.assert_array_equal(k.simulate(odd, x[0]), odd_vals + x[0])


def test_a_kernel_with_a_kfc_workspace_and_no_qualifier_is_mixed():
    src = ("__global__ __aicore__ void mm(GM_ADDR a, __kfc_workspace__ __gm__ uint8_t* workspace, GM_ADDR t);\n"
           "__global__ __aicore__ void v(GM_ADDR a, GM_ADDR workspace);\n"
           "mm<<<1, nullptr, s>>>(a, w, t);\nv<<<4, nullptr, s>>>(a, w);\n")
    out = asc.translate(src, "k.asc")
    assert "AscLaunch(::KernelMode::MIX_MODE, 1, mm, 1, nullptr, s)(a, w, t);" in out
    assert "AscLaunch(::KernelMode::AIV_MODE, 1, v, 4, nullptr, s)(a, w);" in out


def test_icpu_run_kf_takes_the_kernels_mode_when_the_program_sets_none():
    src = ("__global__ __aicore__ void mm(GM_ADDR a, __kfc_workspace__ __gm__ uint8_t* workspace, GM_ADDR t);\n"
           "__global__ __aicore__ void v(GM_ADDR a);\n"
           "ICPU_RUN_KF(mm, 1, a, w, t);\nICPU_RUN_KF(v, 4, a);\n")
    out = asc.translate(src, "k.asc").splitlines()
    assert out[3] == "ICPU_RUN_KF((::AscendC::SetKernelMode(::KernelMode::MIX_MODE), mm), 1, a, w, t);"
    assert out[4] == "ICPU_RUN_KF(v, 4, a);"
    # a program that picks its kernel mode itself keeps it
    src2 = src + "AscendC::SetKernelMode(KernelMode::AIC_MODE);\n"
    assert "ICPU_RUN_KF(mm, 1, a, w, t);" in asc.translate(src2, "k.asc")
