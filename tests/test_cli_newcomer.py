"""Issue 22, a newcomer's first hour: each defect found there has its failure-path test here.

Item 1 (a user's project living under a folder named like a library), items 2, 3 and 8 (errors
raised while tracing point at the user's line and say what to do), item 7 (notebooks and examples
leave nothing behind).  The CLI's own failure paths are in tests/test_cli_errors.py.
"""
from __future__ import annotations

import importlib.util
import os
import textwrap

import numpy as np
import pytest

import fusedsl as fs


def _load_module(path):
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("folder", ["fusedsl", "torch"])
def test_model_under_a_folder_named_like_a_library_is_located_at_its_line(tmp_path, folder):
    # GitHub's default clone folder is `fusedsl`: frames are the library's when they are in the
    # package's own directory, not when a path merely contains "/fusedsl/" or "/torch/"
    torch = pytest.importorskip("torch")
    model_dir = tmp_path / folder
    model_dir.mkdir()
    path = model_dir / "bessel_model.py"
    path.write_text(textwrap.dedent("""\
        import torch

        class Bessel(torch.nn.Module):
            def forward(self, x):
                return torch.special.bessel_j0(x) + 1
        """))
    model = _load_module(str(path)).Bessel()
    with pytest.raises(fs.UnsupportedOpError) as info:
        fs.from_torch(model, torch.randn(4))
    assert f"{path}:5: aten.special_bessel_j0" in str(info.value)


# ---- item 2 and 8: numpy functions inside a kernel are refused at the user's line -------------
def _line_of(mark: str) -> int:
    with open(__file__, encoding="utf-8") as f:
        return next(i for i, text in enumerate(f, 1) if f"# LINE-MARK {mark}" in text)


def test_np_cumsum_is_located_at_the_users_line_not_in_numpy():
    def k(x):
        return np.cumsum(x, axis=1)   # LINE-MARK cumsum
    with pytest.raises(fs.TraceError) as info:
        fs.fused_kernel(k)(np.ones((2, 3), np.float32))
    msg = str(info.value)
    assert msg.startswith(f"{__file__}:{_line_of('cumsum')}: numpy.cumsum cannot run on a traced tensor"), msg
    assert "fromnumeric" not in msg and "use fs.cumsum" in msg   # fs.cumsum exists since issue 20


def test_np_median_says_fusedsl_has_no_such_op():
    def k(x):
        return np.median(x, axis=1)   # LINE-MARK median
    with pytest.raises(fs.TraceError) as info:
        fs.fused_kernel(k)(np.ones((2, 3), np.float32))
    msg = str(info.value)
    assert msg.startswith(f"{__file__}:{_line_of('median')}: numpy.median cannot run on a traced tensor"), msg
    assert "has no median op" in msg


def test_np_sin_hint_says_there_is_no_fs_op_and_np_where_names_fs_where():
    def k(x):
        return np.cbrt(x)   # LINE-MARK sin
    with pytest.raises(fs.TraceError) as info:
        fs.fused_kernel(k)(np.ones(4, np.float32))
    msg = str(info.value)
    assert f"{__file__}:{_line_of('sin')}: numpy.cbrt" in msg   # np.sin traces fs.sin now (issue 20)
    assert "has no cbrt op" in msg and "matching fs" not in msg

    def w(x):
        return np.where(x > 0, x, 0)   # LINE-MARK where
    with pytest.raises(fs.TraceError) as info:
        fs.fused_kernel(w)(np.ones(4, np.float32))
    assert f"{__file__}:{_line_of('where')}: numpy.where" in str(info.value)
    assert "use fs.where" in str(info.value)


def test_numpy_functions_that_map_to_methods_still_trace():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    k = fs.fused_kernel(lambda x: np.sum(x, axis=1) + np.max(x) + np.exp(x).mean(axis=1))
    np.testing.assert_allclose(k(x), x.sum(1) + x.max() + np.exp(x).mean(1), rtol=1e-6)
    # the op is located at the user's line, not inside numpy's fromnumeric.py
    assert "fromnumeric" not in fs.fused_kernel(lambda x: np.sum(x, axis=1)).trace(x).__str__()


# ---- item 3: item assignment ------------------------------------------------------------------
def test_item_assignment_is_a_located_trace_error():
    def k(x):
        x[0] = 0   # LINE-MARK setitem
        return x
    with pytest.raises(fs.TraceError) as info:
        fs.fused_kernel(k)(np.ones((2, 3), np.float32))
    msg = str(info.value)
    assert msg.startswith(f"{__file__}:{_line_of('setitem')}: a traced tensor cannot be assigned to"), msg
    assert "fs.where" in msg


# ---- issue 18 item 12: unknown options and executors ------------------------------------------
def test_unknown_compile_option_names_the_nearest_one():
    with pytest.raises(fs.ArgumentError) as info:
        fs.fused_kernel(ub_headrom=0.5)(lambda x: x + 1)   # LINE-MARK option
    msg = str(info.value)
    assert msg.startswith(f"{__file__}:{_line_of('option')}: unknown compile option ub_headrom="), msg
    assert "did you mean ub_headroom=?" in msg
    k = fs.fused_kernel(lambda x: x + 1)
    with pytest.raises(fs.ArgumentError, match=r"unknown compile option single_kernal=(.|\n)*single_kernel="):
        k.compile(np.ones(3, np.float32), single_kernal=True)


def test_unknown_executor_is_refused_with_the_nearest_name(monkeypatch):
    with pytest.raises(fs.ArgumentError, match=r"fs.config.executor='llmv' is not an executor(.|\n)*'llvm'"):
        monkeypatch.setattr(fs.config, "executor", "llmv")
    # from the environment: refused when a kernel runs, at the user's line
    monkeypatch.setattr(fs.config, "_executor", "refrence")
    monkeypatch.setattr(fs.config, "_from_env", True)
    k = fs.fused_kernel(lambda x: x + 1)
    with pytest.raises(fs.ArgumentError) as info:
        k(np.ones(3, np.float32))   # LINE-MARK executor
    msg = str(info.value)
    assert msg.startswith(f"{__file__}:{_line_of('executor')}: FUSEDSL_EXECUTOR='refrence' is not an executor")
    assert "did you mean 'reference'?" in msg


# ---- item 7: examples leave nothing behind (the notebooks: tests/test_notebooks.py) ---------------
def test_seed_example_leaves_nothing_in_the_temp_dir(tmp_path):
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp),
               PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    r = subprocess.run([sys.executable, os.path.join(root, "examples", "seed.py")], capture_output=True,
                       text=True, timeout=300, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "removed at exit" in r.stdout and "simulated Ascend C" in r.stdout
    assert os.listdir(tmp) == [] and sorted(os.listdir(tmp_path)) == ["tmp"]


# ---- item 8: int8 saturation is said at run time ------------------------------------------------
def test_int8_simulate_warns_when_it_saturates_where_numpy_wraps():
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, 2048).astype(np.int8)
    b = rng.integers(-128, 128, 2048).astype(np.int8)
    # a float -> int8 cast out of range (8-bit add / mul wrap like numpy on the NPU too)
    k = fs.fused_kernel(lambda a, b: fs.relu((a.astype(fs.float32) * b).astype(fs.int8))).compile(a, b)
    with pytest.warns(fs.SaturationWarning) as record:
        got = k.simulate(a, b)   # LINE-MARK saturate
    wraps = k(a, b)
    differ = int(np.count_nonzero(got != wraps))
    assert differ > 0 and f"{differ} of 2048 int8/uint8 result element(s)" in str(record[0].message)
    assert record[0].filename == __file__ and record[0].lineno == _line_of("saturate")
    # in range: no warning
    small = (a // 16, b // 16)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", fs.SaturationWarning)
        np.testing.assert_array_equal(k.simulate(*small), k(*small))


def test_unsupported_onnx_op_is_located_at_the_users_call(tmp_path):
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    # an op fusedsl does not have (Sin imports now): Det
    node = helper.make_node("Det", ["x"], ["y"])
    graph = helper.make_graph([node], "det_graph", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(fs.UnsupportedOpError) as info:
        fs.from_onnx(model)   # LINE-MARK onnx
    msg = str(info.value)
    assert msg.startswith(f"{__file__}:{_line_of('onnx')}: det_graph.onnx node 1 (Det): ONNX op Det is not supported"), msg
    assert "[Det]" not in msg
