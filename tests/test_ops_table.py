"""One op, one definition: docs/OPS.md is generated from the definitions, and a toy op added
through one `define(...)` call prints Ascend C, lowers to LLVM, runs on the reference and is
imported from a PyTorch model and an ONNX graph by the names it declares -- with no other table
edited."""
import os

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper

import fusedsl as fs
from fusedsl import ops
from fusedsl.frontend.api import op_function
from fusedsl.ir.ops import REGISTRY
from fusedsl.ops.elementwise import define, unary
from fusedsl.ops_table import render

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_ops_md_is_generated_from_the_definitions():
    with open(os.path.join(ROOT, "docs", "OPS.md"), encoding="utf-8") as f:
        checked_in = f.read()
    assert render() == checked_in, "docs/OPS.md is stale: run `python -m fusedsl.ops_table > docs/OPS.md`"
    assert "| sin | fs.sin |" in checked_in and "| gelu | fs.gelu |" in checked_in


@unary
def _toy_recipe(c, dst, x):
    """x * x * x + 1.5"""
    c("mul", dst, [x, x])
    c("mul", dst, [dst, x])
    c("adds", dst, [dst], c.imm(1.5))


def _torch_toy_op():
    """The toy op as a PyTorch custom op (torch.ops.fusedsl_toy.toy_cube), so a model that calls
    it exports with the op as one node, as an ATen op would; defined once per process."""
    if not hasattr(torch.ops.fusedsl_toy, "toy_cube"):
        @torch.library.custom_op("fusedsl_toy::toy_cube", mutates_args=())
        def toy_cube(x: torch.Tensor) -> torch.Tensor:
            return x * x * x + 1.5

        @toy_cube.register_fake
        def _(x):
            return torch.empty_like(x)
    return torch.ops.fusedsl_toy.toy_cube


@pytest.fixture
def toy_op():
    define("toy_cube", 1, lambda x: x * x * x + np.asarray(1.5, x.dtype), _toy_recipe, float_only=True,
           aten=("aten.toy_cube.default", "fusedsl_toy.toy_cube.default"), onnx=("ToyCube",),
           doc="x**3 + 1.5 (a test op)")
    yield op_function("toy_cube")
    del REGISTRY["toy_cube"]


def test_a_toy_op_through_one_definition_prints_lowers_and_imports(toy_op):
    x = np.linspace(-2, 2, 75, dtype=np.float32).reshape(3, 25)
    want = x * x * x + np.float32(1.5)
    np.testing.assert_array_equal(toy_op(x), want)                       # reference (eager)

    @fs.fused_kernel(target="ascend910b")
    def k(a):
        return fs.relu(toy_op(a)) * 2.0

    c = k.compile(x)
    assert len(c.kernels) == 1                                           # fuses like its family
    src = c.source
    assert "AscendC::Mul(" in src and "AscendC::Adds(" in src and "1.5f" in src
    assert "toy_cube" in str(c.ir)
    np.testing.assert_array_equal(c(x), np.maximum(want, 0) * 2)          # LLVM
    np.testing.assert_array_equal(c.simulate(x), np.maximum(want, 0) * 2)  # printed Ascend C
    assert ops.by_aten("aten.toy_cube.default") == ["toy_cube"]          # importers find it by name
    assert ops.by_onnx("ToyCube") == ["toy_cube"]
    # ... and import it: a PyTorch model calling the op (its node is torch.ops.fusedsl_toy.toy_cube)
    toy = _torch_toy_op()
    model = lambda a: torch.relu(toy(a)) * 2.0   # noqa: E731
    imported = fs.from_torch(model, torch.from_numpy(x))
    assert "toy_cube" in str(imported.trace(x))
    np.testing.assert_array_equal(imported(x), model(torch.from_numpy(x)).numpy())
    # an ONNX graph with a ToyCube node
    node = helper.make_node("ToyCube", ["a"], ["y"])
    graph = helper.make_graph([node], "toy", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [3, 25])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 25])])
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    np.testing.assert_array_equal(fs.from_onnx(onnx_model)(x), want)
    # a float16 kernel: the recipe's primitives exist in half on 910B, so it runs in half
    h = fs.fused_kernel(lambda a: toy_op(a), target="ascend910b").compile(x.astype(np.float16))
    np.testing.assert_allclose(h(x.astype(np.float16)).astype(np.float32), want, rtol=2e-3, atol=2e-3)


def test_the_definitions_carry_names_for_the_importers():
    assert ops.by_aten("aten.sin.default") == ["sin"]
    assert ops.by_onnx("Erf") == ["erf"]
    assert ops.by_aten("aten.sigmoid.default") == ["sigmoid"]
    assert "clip" in ops.by_aten("aten.clamp.default")
