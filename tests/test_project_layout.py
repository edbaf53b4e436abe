"""A saved project builds, runs and verifies like CANN's kernel-launch samples: `bash run.sh -r cpu`
on this CANN-less machine (fusedsl's CPU implementation of the API), golden from the reference."""
import os
import subprocess
import sys

import numpy as np
import pytest

import fusedsl as fs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@fs.fused_kernel
def abs_add_relu(a, b):
    return fs.relu(fs.abs(a) + b)


@fs.fused_kernel
def scaled_and_rowsum(a, b, alpha):
    return fs.relu(fs.abs(a) + b) * alpha, fs.exp(a) - 1.0


@fs.fused_kernel
def linear_leaky(x, w, b):
    return fs.leaky_relu(x @ w.T + b, 0.1)


@fs.fused_kernel
def conv_leaky(x, w, b):
    return fs.leaky_relu(fs.conv2d(x, w, b, stride=2, padding=1), 0.1)


@fs.fused_kernel
def scaled(a, b, alpha):
    return fs.relu(fs.abs(a) + b) * alpha


def project_env():
    env = {k: v for k, v in os.environ.items() if k not in ("ASCEND_HOME_PATH", "FUSEDSL_TARGET")}
    env["PYTHON"] = sys.executable
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def start_run_sh(path, soc):
    return subprocess.Popen(["bash", "run.sh", "-r", "cpu", "-v", soc], cwd=path, env=project_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def projects(tmp_path_factory):
    """Both projects saved and run (in parallel: two g++ builds)."""
    base = tmp_path_factory.mktemp("projects")
    seed = abs_add_relu.compile(fs.spec((128,), "float32"), fs.spec(("M", 128), "float32"))
    two = scaled_and_rowsum.compile(fs.spec((96,), "float16"), fs.spec(("M", 96), "float16"), fs.scalar("alpha"),
                                    target="ascend310p")
    op = scaled.compile(fs.spec((64,), "float32"), fs.spec(("N", 64), "float32"), fs.scalar("alpha"))
    cube = linear_leaky.compile(fs.spec((40, 24), "float16"), fs.spec((36, 24), "float16"), fs.spec((36,), "float16"),
                                target="ascend310p")
    conv = conv_leaky.compile(fs.spec((2, 3, 11, 9), "float16"), fs.spec((5, 3, 3, 3), "float16"),
                              fs.spec((5,), "float16"))
    paths = {"seed": seed.save(str(base / "seed"), sizes={"M": 37}),
             "two": two.save(str(base / "two"), sizes={"M": 19}, scalars={"alpha": -1.25}),
             "op": op.save(str(base / "op"), layout="op", sizes={"N": 23}, scalars={"alpha": 3.0}),
             "cube": cube.save(str(base / "cube")), "conv": conv.save(str(base / "conv"))}
    procs = {"seed": start_run_sh(paths["seed"], "Ascend910B2"), "two": start_run_sh(paths["two"], "Ascend310P3"),
             "op": start_run_sh(paths["op"], "Ascend910B2"), "cube": start_run_sh(paths["cube"], "Ascend310P3"),
             "conv": start_run_sh(paths["conv"], "Ascend910B2")}
    logs = {k: p.communicate(timeout=300)[0] + f"\n(exit {p.returncode})" for k, p in procs.items()}
    return paths, logs, {"seed": seed, "two": two, "op": op, "cube": cube, "conv": conv}


def test_cube_project_launches_the_mixed_kernel_with_the_matmul_workspace(projects):
    """x @ w.T + b |> leaky_relu on 310P: main.cpp runs the Matmul API kernel in MIX mode."""
    paths, logs, _ = projects
    assert "[SUCCESS] linear_leaky ran" in logs["cube"] and "test pass" in logs["cube"], logs["cube"]
    main = open(os.path.join(paths["cube"], "main.cpp"), encoding="utf-8").read()
    assert "SetKernelMode(KernelMode::MIX_MODE)" in main and "DeviceAlloc(2097152)" in main


def test_conv_project_builds_im2col_panels_in_the_user_workspace(projects):
    """conv2d + bias + leaky_relu (stride 2) on 910B: the workspace holds the Matmul API's
    system part and one im2col panel per core, and run.sh verifies against the reference."""
    paths, logs, compiled = projects
    assert "[SUCCESS] conv_leaky ran" in logs["conv"] and "test pass" in logs["conv"], logs["conv"]
    sched = compiled["conv"].kernels[0].row
    main = open(os.path.join(paths["conv"], "main.cpp"), encoding="utf-8").read()
    assert f"DeviceAlloc({sched.workspace_bytes})" in main
    assert sched.workspace_bytes == 16 * 1024 * 1024 + sched.used_cores * sched.conv.panel_bytes


def test_seed_project_runs_and_verifies_with_run_sh(projects):
    paths, logs, _ = projects
    assert "[SUCCESS] abs_add_relu ran" in logs["seed"] and "test pass" in logs["seed"], logs["seed"]
    assert logs["seed"].endswith("(exit 0)")
    p = paths["seed"]
    a = np.fromfile(os.path.join(p, "input", "input_a.bin"), np.float32)
    b = np.fromfile(os.path.join(p, "input", "input_b.bin"), np.float32).reshape(37, 128)
    got = np.fromfile(os.path.join(p, "output", "output_0.bin"), np.float32).reshape(37, 128)
    np.testing.assert_allclose(got, np.maximum(np.abs(a) + b, 0), rtol=2e-5, atol=2e-5)


def test_layout_matches_the_kernel_launch_samples(projects):
    paths, _, compiled = projects
    p = paths["seed"]
    for rel in ("CMakeLists.txt", "cmake/cpu_lib.cmake", "cmake/npu_lib.cmake", "run.sh", "main.cpp",
                "data_utils.h", "scripts/gen_data.py", "scripts/verify_result.py", "abs_add_relu_kernel.cpp",
                "abs_add_relu_tiling.h"):
        assert os.path.isfile(os.path.join(p, rel)), rel
    assert os.access(os.path.join(p, "run.sh"), os.X_OK)
    read = lambda rel: open(os.path.join(p, rel), encoding="utf-8").read()  # noqa: E731
    kernel, main, tiling = read("abs_add_relu_kernel.cpp"), read("main.cpp"), read("abs_add_relu_tiling.h")
    # device code only: no CPU-debug block, no simulate glue, no host tiling function
    assert "ASCENDC_CPU_DEBUG" not in kernel and "fusedsl_launch" not in kernel and "fusedsl_tiling" not in kernel
    assert "__global__ __aicore__" in kernel
    tiling_fn = "inline bool AbsAddReluKernelTiling("
    assert sum(read(f).count(tiling_fn) for f in ("abs_add_relu_kernel.cpp", "main.cpp", "abs_add_relu_tiling.h")) == 1
    assert tiling_fn in tiling
    assert "ICPU_RUN_KF" in main and "ACLRT_LAUNCH_KERNEL" in main and "aclrtMemcpy" in main
    cmake = read("CMakeLists.txt")
    assert "RUN_MODE" in cmake and "cpu_lib.cmake" in cmake and "npu_lib.cmake" in cmake
    assert compiled["seed"].target.soc_version in read("run.sh")


def test_multi_kernel_project_with_runtime_scalar(projects):
    paths, logs, compiled = projects
    assert "test pass" in logs["two"] and logs["two"].endswith("(exit 0)"), logs["two"]
    assert len(compiled["two"].kernels) == 2
    p = paths["two"]
    a = np.fromfile(os.path.join(p, "input", "input_a.bin"), np.float16)
    b = np.fromfile(os.path.join(p, "input", "input_b.bin"), np.float16).reshape(19, 96)
    dt0 = compiled["two"].module.main.results[0].type.dtype.np   # f16 tensor * f32 scalar
    y0 = np.fromfile(os.path.join(p, "output", "output_0.bin"), dt0).reshape(19, 96)
    y1 = np.fromfile(os.path.join(p, "output", "output_1.bin"), np.float16)
    want0 = np.maximum(np.abs(a.astype(np.float32)) + b, 0) * -1.25
    np.testing.assert_allclose(y0.astype(np.float32), want0, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(y1.astype(np.float32), np.exp(a.astype(np.float32)) - 1, rtol=2e-2, atol=2e-2)


def test_op_project_builds_and_runs_on_the_cpu(projects):
    paths, logs, compiled = projects
    assert "test pass" in logs["op"] and logs["op"].endswith("(exit 0)"), logs["op"]
    p = paths["op"]
    read = lambda rel: open(os.path.join(p, rel), encoding="utf-8").read()  # noqa: E731
    kernel = compiled["op"].kernels[0].name
    tiling_h, host, dev = (read(f"op_host/{kernel}_tiling.h"), read(f"op_host/{kernel}.cpp"),
                           read(f"op_kernel/{kernel}.cpp"))
    assert "BEGIN_TILING_DATA_DEF(" in tiling_h and "TILING_DATA_FIELD_DEF(uint32_t, blockDim)" in tiling_h
    assert "REGISTER_TILING_DATA_CLASS(" in tiling_h
    assert "gert::TilingContext* context" in host and "OP_ADD(" in host and 'Attr("alpha").Float()' in host
    assert "GET_TILING_DATA(tilingData, tiling)" in dev and "TilingData tiling;" in dev
    a = np.fromfile(os.path.join(p, "input", "input_a.bin"), np.float32)
    b = np.fromfile(os.path.join(p, "input", "input_b.bin"), np.float32).reshape(23, 64)
    y = np.fromfile(os.path.join(p, "output", "output_0.bin"), np.float32).reshape(23, 64)
    np.testing.assert_allclose(y, np.maximum(np.abs(a) + b, 0) * 3.0, rtol=2e-5, atol=2e-5)


def test_verify_result_fails_on_a_wrong_output(projects):
    paths, _, _ = projects
    p = paths["seed"]
    golden = os.path.join(p, "output", "golden_0.bin")
    good = np.fromfile(golden, np.float32)
    try:
        bad = good.copy()
        bad[5] += 1.0
        bad.tofile(golden)
        r = subprocess.run([sys.executable, "scripts/verify_result.py"], cwd=p, capture_output=True, text=True)
        assert r.returncode == 1 and "output 0[5]" in r.stdout and "1 of 4736 elements differ" in r.stdout, r.stdout
    finally:
        good.tofile(golden)


def test_save_rejects_bad_sizes_and_layouts(tmp_path):
    k = abs_add_relu.compile(fs.spec((128,), "float32"), fs.spec(("M", 128), "float32"))
    with pytest.raises(fs.ProjectError) as info:
        k.save(str(tmp_path / "p"), sizes={"N": 3})
    assert "not dimensions of abs_add_relu" in str(info.value) and "test_project_layout.py:" in str(info.value)
    with pytest.raises(fs.ProjectError) as info:
        k.save(str(tmp_path / "p"), layout="sample")
    assert "layout='op'" in str(info.value)
    assert not (tmp_path / "p").exists()
