"""`k.save(path, layout="op")` of cube kernels (the Matmul API) builds and runs like CANN's
MatmulLeakyRelu op: op_host's tiling data carries the TCubeTiling as a struct field, its
TilingFunc fills it with the tiling fusedsl computed and sets blockDim and the workspace,
op_kernel reads it with GET_TILING_DATA, and `run.sh -r cpu` runs the registered tiling
function and the mixed kernel on fusedsl's CPU implementation of the API."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import fusedsl as fs
from fusedsl.backend_ascendc.cpu import include_dir
from fusedsl.errors import ProjectError
from fusedsl.lower.cube import TCUBE_FIELDS, CubeSchedule

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = {"linear_910b": "Ascend910B2", "linear_310p": "Ascend310P3", "conv_910b": "Ascend910B2",
        "alpha_310p": "Ascend310P3"}


@fs.fused_kernel
def linear_leaky(x, w, b):
    return fs.leaky_relu(x @ w.T + b, 0.1)


@fs.fused_kernel
def conv_leaky(x, w, b):
    return fs.leaky_relu(fs.conv2d(x, w, b, stride=2, padding=1), 0.1)


@fs.fused_kernel
def linear_leaky_alpha(x, w, b, alpha):
    return fs.leaky_relu(x @ w.T + b, alpha)


@fs.fused_kernel
def sliced(a, b):
    return fs.relu(a[1:, :] + b)


def project_env():
    env = {k: v for k, v in os.environ.items() if k not in ("ASCEND_HOME_PATH", "FUSEDSL_TARGET")}
    env["PYTHON"] = sys.executable
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _linear(target):
    # M, N, K = 40, 36, 24: none a multiple of 16 (edge blocks, SetTail, padded C rows)
    return linear_leaky.compile(fs.spec((40, 24), "float16"), fs.spec((36, 24), "float16"),
                                fs.spec((36,), "float16"), target=target)


@pytest.fixture(scope="module")
def projects(tmp_path_factory):
    """The three op projects saved and run (two builds at a time: a 2-core machine)."""
    base = tmp_path_factory.mktemp("op_cube")
    compiled = {"linear_910b": _linear("ascend910b"), "linear_310p": _linear("ascend310p"),
                "conv_910b": conv_leaky.compile(fs.spec((2, 3, 11, 9), "float16"), fs.spec((5, 3, 3, 3), "float16"),
                                                fs.spec((5,), "float16")),
                "alpha_310p": linear_leaky_alpha.compile(fs.spec((40, 24), "float16"), fs.spec((36, 24), "float16"),
                                                         fs.spec((36,), "float16"), fs.scalar("alpha"),
                                                         target="ascend310p")}
    paths = {k: c.save(str(base / k), layout="op", scalars={"alpha": 0.3} if k.startswith("alpha") else None)
             for k, c in compiled.items()}
    logs = {}
    names = list(RUNS)
    for i in range(0, len(names), 2):
        procs = {k: subprocess.Popen(["bash", "run.sh", "-r", "cpu", "-v", RUNS[k]], cwd=paths[k], env=project_env(),
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for k in names[i:i + 2]}
        for k, p in procs.items():
            logs[k] = p.communicate(timeout=600)[0] + f"\n(exit {p.returncode})"
    return paths, logs, compiled


def _read(path, rel):
    with open(os.path.join(path, rel), encoding="utf-8") as f:
        return f.read()


def _info(log, op):
    m = re.search(rf"\[INFO\] {op}: blockDim (\d+), (\d+) tiling bytes, workspace (\d+) bytes", log)
    assert m, log
    return tuple(int(g) for g in m.groups())


def _check_run(paths, logs, compiled, key):
    log = logs[key]
    assert "test pass" in log and log.endswith("(exit 0)"), log
    plan = compiled[key].kernels[0]
    sched = plan.row
    assert isinstance(sched, CubeSchedule)
    op = "".join(w.capitalize() for w in plan.name.split("_"))
    block_dim, tiling_bytes, workspace = _info(log, op)
    # the registered tiling function decided what the simulate path launches with
    assert block_dim == sched.tiling({}, compiled[key].target).block_dim
    runtime_scalars = [p for p in sched.params if p.kind == "runtime_scalar"]
    assert tiling_bytes == 4 * len(TCUBE_FIELDS) + 4 * len(runtime_scalars)
    assert workspace == sched.workspace_bytes
    return paths[key], sched


PROBE = r"""
#include <cstdio>
#include <cstring>

#include "kernel_operator.h"   // notes __NPU_ARCH__: the platform the tiling function asks about
#include "register/op_def_registry.h"

// Runs the registered LinearLeakyKernel tiling function (x one row longer with any argument).
int main(int argc, char** argv)
{
    (void)argv;
    const int64_t rows = argc > 1 ? 41 : 40;
    const fusedsl_cpu::OpTilingResult r = fusedsl_cpu::RunOpTiling(
        "LinearLeakyKernel", {gert::Shape{rows, 24}, gert::Shape{36, 24}, gert::Shape{36}});
    for (size_t i = 0; i + 4 <= r.tiling.size(); i += 4) {
        int32_t word;
        std::memcpy(&word, r.tiling.data() + i, 4);
        std::printf("%d ", word);
    }
    std::printf("\n%u %zu\n", r.blockDim, r.workspaceBytes);
    return 0;
}
"""


@pytest.fixture(scope="module")
def probe(projects, tmp_path_factory):
    """A host program linking the 910B linear op's op_host object (built by run.sh)."""
    paths, _, compiled = projects
    out = tmp_path_factory.mktemp("probe")
    (out / "probe.cpp").write_text(PROBE, encoding="utf-8")
    host = os.path.join(paths["linear_910b"], "build", f"{compiled['linear_910b'].kernels[0].name}_host.o")
    exe = str(out / "probe")
    subprocess.run(["g++", "-std=c++17", "-O0", "-Wall", "-Werror", "-DASCENDC_CPU_DEBUG", "-D__NPU_ARCH__=2201",
                    f"-I{include_dir()}", str(out / "probe.cpp"), host, "-o", exe], check=True)
    return exe


def test_op_project_layout_carries_the_cube_tiling(projects):
    paths, _, compiled = projects
    path = paths["linear_910b"]
    name = compiled["linear_910b"].kernels[0].name
    tiling_h = _read(path, f"op_host/{name}_tiling.h")
    assert "TILING_DATA_FIELD_DEF_STRUCT(TCubeTiling, cubeTilingData);" in tiling_h
    assert '#include "tiling/tiling_api.h"' in tiling_h
    host = _read(path, f"op_host/{name}.cpp")
    assert "GetLibApiWorkSpaceSize()" in host and "context->SetBlockDim(blockDim);" in host
    assert "MultiCoreMatmulTiling" in host   # how CANN's tiling API reaches the same split
    kernel = _read(path, f"op_kernel/{name}.cpp")
    assert "GET_TILING_DATA(tilingData, tiling);" in kernel
    assert "tilingData.cubeTilingData" in kernel and "KERNEL_TYPE_MIX_AIC_1_2" in kernel
    assert "REGIST_MATMUL_OBJ" in kernel and kernel.count('extern "C" __global__ __aicore__') == 1
    # the kernel-launch entry (tiling words copied from GM) is not in the op form
    assert "reinterpret_cast<const __gm__ uint32_t*>(tiling)" not in kernel
    main = _read(path, "cpu_test/main.cpp")
    assert "SetKernelMode(KernelMode::MIX_MODE)" in main


def _linear_reference(path, alpha=0.1):
    x = np.fromfile(os.path.join(path, "input", "input_x.bin"), np.float16).reshape(40, 24)
    w = np.fromfile(os.path.join(path, "input", "input_w.bin"), np.float16).reshape(36, 24)
    b = np.fromfile(os.path.join(path, "input", "input_b.bin"), np.float16)
    y = x.astype(np.float32) @ w.astype(np.float32).T
    y = y.astype(np.float16).astype(np.float32) + b.astype(np.float32)
    y = y.astype(np.float16).astype(np.float32)
    return np.where(y >= 0, y, np.float32(alpha) * y)


@pytest.mark.parametrize("key", ["linear_910b", "linear_310p"])
def test_linear_leaky_relu_op_runs_and_matches_numpy(projects, key):
    paths, logs, compiled = projects
    path, sched = _check_run(paths, logs, compiled, key)
    got = np.fromfile(os.path.join(path, "output", "output_0.bin"), np.float16).reshape(40, 36)
    np.testing.assert_allclose(got.astype(np.float32), _linear_reference(path), rtol=2e-2, atol=2e-2)
    assert sched.workspace_bytes == (16 if key.endswith("910b") else 2) * 1024 * 1024


def test_conv_op_asks_for_the_im2col_panels_and_matches_numpy(projects):
    paths, logs, compiled = projects
    path, sched = _check_run(paths, logs, compiled, "conv_910b")
    assert sched.workspace_bytes == 16 * 1024 * 1024 + sched.used_cores * sched.conv.panel_bytes
    x = np.fromfile(os.path.join(path, "input", "input_x.bin"), np.float16).reshape(2, 3, 11, 9).astype(np.float32)
    w = np.fromfile(os.path.join(path, "input", "input_w.bin"), np.float16).reshape(5, 3, 3, 3).astype(np.float32)
    b = np.fromfile(os.path.join(path, "input", "input_b.bin"), np.float16).astype(np.float32)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    P, Q = (11 + 2 - 3) // 2 + 1, (9 + 2 - 3) // 2 + 1
    y = np.zeros((2, 5, P, Q), np.float32)
    for r in range(3):
        for s in range(3):
            patch = xp[:, :, r:r + 2 * P:2, s:s + 2 * Q:2]          # [N, C, P, Q]
            y += np.einsum("ncpq,kc->nkpq", patch, w[:, :, r, s])
    y = y.astype(np.float16).astype(np.float32) + b[None, :, None, None]
    y = y.astype(np.float16).astype(np.float32)
    want = np.where(y >= 0, y, 0.1 * y)
    got = np.fromfile(os.path.join(path, "output", "output_0.bin"), np.float16).reshape(2, 5, P, Q)
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-2, atol=2e-2)


def test_the_tiling_function_gives_the_op_the_simulate_paths_tcubetiling(probe, projects):
    """Word for word the TCubeTiling `simulate` launches with (the printed host tiling, which
    simulate checks against lower/cube.py's words), blockDim in cube cores, 16 MB workspace."""
    _, _, compiled = projects
    r = subprocess.run([probe], capture_output=True, text=True, timeout=60, env=project_env())
    assert r.returncode == 0, r.stdout + r.stderr
    words, launch = r.stdout.strip().split("\n")
    sched = compiled["linear_910b"].kernels[0].row
    assert [int(w) for w in words.split()] == sched.words
    assert launch.split() == [str(sched.tiling({}, compiled["linear_910b"].target).block_dim),
                              str(sched.workspace_bytes)]
    # blockDim counts AI cores: usedCoreNum Matmul objects, one or two per AI core (lower/cube.py's layout)
    t = sched.tiling_fields
    assert sched.words[TCUBE_FIELDS.index("usedCoreNum")] == t.used_core_num > 1
    assert int(launch.split()[0]) == -(-t.used_core_num // t.objects_per_core)


def test_the_tiling_function_refuses_shapes_the_cube_tiling_is_not_for(probe):
    """A cube kernel's shapes are static (the TCubeTiling holds M, N, K): other shapes fail the
    tiling function, which the op host reports instead of running the kernel on wrong offsets."""
    r = subprocess.run([probe, "bad"], capture_output=True, text=True, timeout=60, env=project_env())
    assert r.returncode == 1
    assert "fusedsl CPU op host (LinearLeakyKernel): the tiling function returned a failure" in r.stderr, r.stderr


def test_view_kernels_are_still_refused_by_the_op_layout(tmp_path):
    """What the op layout still refuses: a view kernel's box table is no TILING_DATA_FIELD_DEF."""
    k = sliced.compile(fs.spec((9, 64), "float32"), fs.spec((8, 64), "float32"))
    with pytest.raises(ProjectError) as info:
        k.save(str(tmp_path / "op"), layout="op")
    msg = str(info.value)
    assert "reads its inputs through slice/concatenate/take views, whose box table the op-project tiling " \
           "(TILING_DATA_FIELD_DEF) does not carry yet" in msg, msg
    assert "layout='kernel'" in msg and "test_op_project_cube.py:" in msg
    assert not (tmp_path / "op").exists()


def test_a_runtime_alpha_travels_as_an_attr_into_the_tiling_data(projects):
    """leaky_relu(x @ w.T + b, alpha) with alpha a runtime scalar on 310P: the op declares the attr
    alpha, its tiling function stores it after the TCubeTiling (a float field), the kernel reads it."""
    paths, logs, compiled = projects
    path, _ = _check_run(paths, logs, compiled, "alpha_310p")
    name = compiled["alpha_310p"].kernels[0].name
    assert 'this->Attr("alpha").Float();' in _read(path, f"op_host/{name}.cpp")
    tiling_h = _read(path, f"op_host/{name}_tiling.h")
    assert tiling_h.index("TILING_DATA_FIELD_DEF_STRUCT(TCubeTiling, cubeTilingData);") < \
        tiling_h.index("TILING_DATA_FIELD_DEF(float, s3);")
    out_dtype = compiled["alpha_310p"].module.main.results[0].type.dtype.name   # the scalar's type promotes
    got = np.fromfile(os.path.join(path, "output", "output_0.bin"), out_dtype).reshape(40, 36)
    want = _linear_reference(path, alpha=0.3)
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-2, atol=2e-2)
    assert (want < 0).any()   # alpha matters
