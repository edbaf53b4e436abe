"""int32 runtime scalars keep their exact value on the way to the printed kernel: the tiling
struct carries them as int32_t (a float holds integers exactly only up to 2**24), simulate packs
them so, and the saved projects' main.cpp and op attrs (Int()) pass them exactly."""
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import fuzz_settings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIG = 2 ** 24 + 1


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p", "ascend910"])
def test_x_plus_a_big_int_scalar_is_exact_under_simulate(target):
    k = fs.fused_kernel(lambda x, s: x + s, target=target).compile(fs.spec((37,), "int32"), fs.scalar("s", "int32"))
    x = np.arange(37, dtype=np.int32)
    np.testing.assert_array_equal(k.simulate(x, BIG), x + np.int32(BIG))
    np.testing.assert_array_equal(k(x, BIG), x + np.int32(BIG))


def test_multiplying_by_two_to_the_30_plus_one_wraps_like_numpy():
    k = fs.fused_kernel(lambda x, s: x * s).compile(fs.spec((16,), "int32"), fs.scalar("s", "int32"))
    x = np.arange(-8, 8, dtype=np.int32)
    s = 2 ** 30 + 1
    with np.errstate(over="ignore"):
        want = x * np.int32(s)
    np.testing.assert_array_equal(k.simulate(x, s), want)


@fuzz_settings(scale=0.006)
@given(s=st.integers(-2 ** 31, 2 ** 31 - 1), n=st.sampled_from([1, 45]), target=st.sampled_from(["ascend910b", "ascend310p"]))
def test_generated_int_scalars_above_two_to_the_24_are_exact(s, n, target):
    k = fs.fused_kernel(lambda x, s: fs.maximum(x, s) - 1, target=target).compile(
        fs.spec((n,), "int32"), fs.scalar("s", "int32"))
    x = np.random.default_rng(n).integers(-2 ** 31 + 1, 2 ** 31 - 1, n).astype(np.int32)
    with np.errstate(over="ignore"):
        want = np.maximum(x, np.int32(s)) - np.int32(1)
    np.testing.assert_array_equal(k.simulate(x, s), want)


@pytest.mark.parametrize("target", ["ascend910b", "ascend910"])
def test_a_one_element_int_tensor_broadcast_is_read_exactly(target):
    # a (1,)-shaped input is read once per core with GetValue(0); it went through float,
    # so odd values above 2**24 came back rounded
    x = np.array([-115153665], np.int32)
    y = np.arange(-3, 5, dtype=np.int32) * np.int32(2 ** 28 + 3)
    k = fs.fused_kernel(lambda x, y: fs.maximum(x, y) - 1, target=target).compile(x, y)
    with np.errstate(over="ignore"):
        want = np.maximum(x, y) - np.int32(1)
    np.testing.assert_array_equal(k.simulate(x, y), want)
    np.testing.assert_array_equal(k(x, y), want)


def test_the_tiling_struct_declares_an_int_scalar_as_int32():
    k = fs.fused_kernel(lambda x, s, f: x * s + f).compile(fs.spec((8,), "int32"), fs.scalar("s", "int32"),
                                                         fs.scalar("f", "float32"))
    fields = [line.split("//")[0].split() for line in k.source.splitlines() if "// runtime scalar" in line]
    assert fields == [["int32_t", "s1;"], ["float", "s2;"]]   # named by parameter index


def _env():
    env = {k: v for k, v in os.environ.items() if k not in ("ASCEND_HOME_PATH", "FUSEDSL_TARGET")}
    env["PYTHON"] = sys.executable
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.mark.parametrize("layout", ["kernel", "op"])
def test_saved_projects_pass_a_big_int_scalar_exactly(tmp_path, layout):
    k = fs.fused_kernel(lambda x, s: x + s).compile(fs.spec(("N", 32), "int32"), fs.scalar("s", "int32"))
    path = k.save(str(tmp_path / layout), layout=layout, sizes={"N": 3}, scalars={"s": BIG})
    main = open(os.path.join(path, "main.cpp" if layout == "kernel" else "cpu_test/main.cpp"), encoding="utf-8").read()
    assert f"int32_t scalar_s = {BIG};" in main
    run = subprocess.run(["bash", "run.sh", "-r", "cpu", "-v", "Ascend910B2"], cwd=path, env=_env(),
                         capture_output=True, text=True, timeout=300)
    assert "test pass" in run.stdout, run.stdout + run.stderr
    x = np.fromfile(os.path.join(path, "input", "input_x.bin"), np.int32).reshape(3, 32)
    y = np.fromfile(os.path.join(path, "output", "output_0.bin"), np.int32).reshape(3, 32)
    np.testing.assert_array_equal(y, x + np.int32(BIG))
