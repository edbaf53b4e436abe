"""fs.from_onnx against onnxruntime, one model per supported ONNX op and attribute variant
(negative axes, defaults, integer inputs, optional inputs left out), and the import errors a
malformed model gets instead of a raw exception (issue 18 items 8, 9 and 12)."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import fusedsl as fs
from onnx_models import single_op

R = np.random.default_rng(0)


def f32(*shape, low=None):
    return (R.uniform(low, 2.0, shape) if low is not None else R.standard_normal(shape)).astype(np.float32)


def i64(*values):
    return np.asarray(values, np.int64)


def case(op, inputs, attrs=None, consts=None, out=TensorProto.FLOAT, opset=18):
    return lambda: single_op(op, inputs, attrs, consts, out, opset)


CASES = {
    "Add_broadcast": case("Add", [("a", f32(3, 1, 5)), ("b", f32(4, 1))]),
    "Sub": case("Sub", [("a", f32(2, 7)), ("b", f32(7))]),
    "Mul_int": case("Mul", [("a", i64(1, -2, 3).astype(np.int32)), ("b", i64(4, 5, -6).astype(np.int32))],
                    out=TensorProto.INT32),
    "Div": case("Div", [("a", f32(4, 3)), ("b", f32(4, 3, low=0.5))]),
    "Pow_2": case("Pow", [("a", f32(5))], consts=[("p", np.float32(2.0))]),
    "Pow_sqrt": case("Pow", [("a", f32(5, low=0.1))], consts=[("p", np.float32(0.5))]),
    "Relu": case("Relu", [("a", f32(3, 4))]),
    "LeakyRelu_default": case("LeakyRelu", [("a", f32(9))]),
    "LeakyRelu_alpha": case("LeakyRelu", [("a", f32(9))], {"alpha": 0.3}),
    "Sigmoid": case("Sigmoid", [("a", f32(9))]), "Tanh": case("Tanh", [("a", f32(9))]),
    "Exp": case("Exp", [("a", f32(9))]), "Log": case("Log", [("a", f32(9, low=0.1))]),
    "Sqrt": case("Sqrt", [("a", f32(9, low=0.0))]), "Abs": case("Abs", [("a", f32(9))]),
    "Neg": case("Neg", [("a", f32(9))]), "Reciprocal": case("Reciprocal", [("a", f32(9, low=0.5))]),
    "Gelu_tanh": case("Gelu", [("a", f32(9))], {"approximate": "tanh"}, opset=20),
    "Max_variadic": case("Max", [("a", f32(3, 4)), ("b", f32(4)), ("c", f32(3, 1))]),
    "Min": case("Min", [("a", f32(3, 4)), ("b", f32(3, 4))]),
    "Clip_both": case("Clip", [("a", f32(12))], consts=[("lo", np.float32(-0.5)), ("hi", np.float32(0.7))]),
    "Clip_max_only": case("Clip", [("a", f32(12))], consts=[("", None), ("hi", np.float32(0.2))]),
    "Clip_none": case("Clip", [("a", f32(12))]),
    "Where": case("Where", [("c", f32(3, 4) > 0), ("a", f32(3, 4)), ("b", f32(4))]),
    "Equal_int": case("Equal", [("a", i64(1, 2, 3)), ("b", i64(1, 0, 3))], out=TensorProto.BOOL),
    "Less": case("Less", [("a", f32(6)), ("b", f32(6))], out=TensorProto.BOOL),
    "Greater": case("Greater", [("a", f32(6)), ("b", f32(6))], out=TensorProto.BOOL),
    "LessOrEqual": case("LessOrEqual", [("a", f32(6)), ("b", f32(6))], out=TensorProto.BOOL),
    "GreaterOrEqual": case("GreaterOrEqual", [("a", f32(6)), ("b", f32(6))], out=TensorProto.BOOL),
    "Cast_f16": case("Cast", [("a", f32(6))], {"to": TensorProto.FLOAT16}, out=TensorProto.FLOAT16),
    "Cast_int": case("Cast", [("a", f32(6) * 4)], {"to": TensorProto.INT32}, out=TensorProto.INT32),
    "Identity": case("Identity", [("a", f32(6))]), "Dropout": case("Dropout", [("a", f32(6))]),
    "MatMul_2d": case("MatMul", [("a", f32(3, 5)), ("b", f32(5, 4))]),
    "MatMul_batched": case("MatMul", [("a", f32(2, 3, 5)), ("b", f32(5, 4))]),
    "MatMul_vec_mat": case("MatMul", [("a", f32(5)), ("b", f32(5, 4))]),
    "MatMul_mat_vec": case("MatMul", [("a", f32(3, 5)), ("b", f32(5))]),
    "MatMul_vec_vec": case("MatMul", [("a", f32(5)), ("b", f32(5))]),
    "Gemm_default": case("Gemm", [("a", f32(3, 5)), ("b", f32(5, 4))]),
    "Gemm_trans_alpha_beta": case("Gemm", [("a", f32(5, 3)), ("b", f32(4, 5)), ("c", f32(4))],
                                  {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}),
    "Conv_pads_strides": case("Conv", [("x", f32(1, 3, 7, 7)), ("w", f32(4, 3, 3, 3)), ("b", f32(4))],
                              {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    "Conv_default": case("Conv", [("x", f32(2, 2, 5, 6)), ("w", f32(3, 2, 2, 3))]),
    "BatchNormalization": case("BatchNormalization", [("x", f32(2, 3, 4, 4)), ("s", f32(3)), ("b", f32(3)),
                                                      ("m", f32(3)), ("v", f32(3, low=0.5))], {"epsilon": 1e-3}),
    "Softmax_default": case("Softmax", [("a", f32(3, 7))]),
    "Softmax_axis0": case("Softmax", [("a", f32(3, 7))], {"axis": 0}),
    "LayerNormalization": case("LayerNormalization", [("a", f32(3, 8)), ("g", f32(8)), ("b", f32(8))],
                               {"axis": -1, "epsilon": 1e-4}),
    "ReduceSum_axes_input": case("ReduceSum", [("a", f32(3, 4, 5))], {"keepdims": 0}, consts=[("ax", i64(-1, 0))]),
    "ReduceSum_all": case("ReduceSum", [("a", f32(3, 4))]),
    "ReduceMean_attr_opset17": case("ReduceMean", [("a", f32(3, 4, 5))], {"axes": [1]}, opset=17),
    "ReduceMax_keep": case("ReduceMax", [("a", f32(3, 4))], consts=[("ax", i64(1))]),
    "ReduceMin_neg": case("ReduceMin", [("a", f32(3, 4))], {"keepdims": 0}, consts=[("ax", i64(-2))]),
    "GlobalAveragePool": case("GlobalAveragePool", [("a", f32(2, 3, 4, 5))]),
    "Reshape_zero_minus1": case("Reshape", [("a", f32(2, 3, 4))], consts=[("s", i64(0, -1))]),
    "Flatten_default": case("Flatten", [("a", f32(3, 4, 5))]),
    "Flatten_neg": case("Flatten", [("a", f32(3, 4, 5))], {"axis": -1}),
    "Flatten_0": case("Flatten", [("a", f32(3, 4, 5))], {"axis": 0}),
    "Transpose_perm": case("Transpose", [("a", f32(2, 3, 4))], {"perm": [2, 0, 1]}),
    "Transpose_default": case("Transpose", [("a", f32(2, 3, 4))]),
    "Squeeze_axes": case("Squeeze", [("a", f32(1, 3, 1, 4))], consts=[("ax", i64(-2))]),
    "Squeeze_all": case("Squeeze", [("a", f32(1, 3, 1, 4))]),
    "Unsqueeze_neg": case("Unsqueeze", [("a", f32(3, 4))], consts=[("ax", i64(-1, 0))]),
    "Expand": case("Expand", [("a", f32(3, 1))], consts=[("s", i64(2, 1, 4))]),
    "Concat_neg": case("Concat", [("a", f32(2, 3)), ("b", f32(2, 5))], {"axis": -1}),
    "Slice_neg_steps": case("Slice", [("a", f32(6, 9))], consts=[("s", i64(1, -7)), ("e", i64(5, 100)),
                                                                ("ax", i64(0, -1)), ("st", i64(2, 3))]),
    "Slice_default_axes": case("Slice", [("a", f32(6, 9))], consts=[("s", i64(2)), ("e", i64(-1))]),
    "Gather_axis1": case("Gather", [("a", f32(3, 7)), ("i", i64(6, 0, 2, 2))], {"axis": 1}),
    "Gather_neg_index": case("Gather", [("a", f32(5, 3)), ("i", i64(-1, 0))]),
    # compositions of fusedsl ops
    "HardSwish": case("HardSwish", [("a", f32(17) * 4)]),
    "HardSigmoid": case("HardSigmoid", [("a", f32(17) * 4)], {"alpha": 0.3, "beta": 0.4}),
    "Elu": case("Elu", [("a", f32(17))], {"alpha": 0.5}), "Selu": case("Selu", [("a", f32(17))]),
    "Celu": case("Celu", [("a", f32(17))], {"alpha": 1.5}), "Softplus": case("Softplus", [("a", f32(17) * 5)]),
    "Softsign": case("Softsign", [("a", f32(17))]), "Mish": case("Mish", [("a", f32(17) * 3)]),
    "Erf": case("Erf", [("a", f32(17))]), "Sign": case("Sign", [("a", f32(17))]),
    "Gelu_exact": case("Gelu", [("a", f32(17) * 3)], opset=20),
    "ThresholdedRelu": case("ThresholdedRelu", [("a", f32(17))], {"alpha": 0.5}),
    "PRelu": case("PRelu", [("a", f32(2, 3, 4)), ("s", f32(3, 1))]),
    "LogSoftmax": case("LogSoftmax", [("a", f32(3, 7))]), "LogSoftmax_axis0": case("LogSoftmax", [("a", f32(3, 7))],
                                                                                   {"axis": 0}),
    "ReduceLogSumExp": case("ReduceLogSumExp", [("a", f32(3, 4))], consts=[("ax", i64(-1))]),
    "ReduceL1_all": case("ReduceL1", [("a", f32(3, 4))], {"keepdims": 0}),
    "ReduceL2": case("ReduceL2", [("a", f32(3, 4, 2))], consts=[("ax", i64(0, 2))]),
    "ReduceSumSquare": case("ReduceSumSquare", [("a", f32(3, 4))], {"keepdims": 0}, consts=[("ax", i64(1))]),
    "InstanceNormalization": case("InstanceNormalization", [("x", f32(2, 3, 4, 5)), ("s", f32(3)), ("b", f32(3))]),
    "MaxPool_pads_strides": case("MaxPool", [("x", f32(1, 2, 7, 8))], {"kernel_shape": [3, 3], "strides": [2, 2],
                                                                      "pads": [1, 1, 1, 1]}),
    "MaxPool_1d_ceil": case("MaxPool", [("x", f32(1, 2, 10))], {"kernel_shape": [3], "strides": [2], "ceil_mode": 1}),
    "AveragePool_exclude_pad": case("AveragePool", [("x", f32(1, 2, 7, 7))], {"kernel_shape": [3, 3],
                                                                             "pads": [1, 1, 1, 1]}),
    "AveragePool_include_pad": case("AveragePool", [("x", f32(1, 2, 7, 7))], {"kernel_shape": [2, 2], "strides": [2, 2],
                                                                             "count_include_pad": 1}),
    "GlobalMaxPool": case("GlobalMaxPool", [("x", f32(2, 3, 4, 5))]),
    "Conv_group_dilation": case("Conv", [("x", f32(1, 4, 9, 9)), ("w", f32(6, 2, 3, 3))],
                                {"group": 2, "dilations": [2, 2], "pads": [2, 2, 2, 2]}),
    "Conv_1d": case("Conv", [("x", f32(2, 3, 11)), ("w", f32(4, 3, 3))], {"strides": [2]}),
    # the losses (torch_ops.nll_loss: a row sum of where(target == class, x, 0))
    "NLLLoss_mean": case("NegativeLogLikelihoodLoss", [("x", f32(5, 7)), ("t", i64(0, 6, 3, 3, 1))]),
    "NLLLoss_weight_ignore_sum": case("NegativeLogLikelihoodLoss", [("x", f32(5, 7)), ("t", i64(0, 6, 3, 3, 1))],
                                      {"reduction": "sum", "ignore_index": 3}, consts=[("w", f32(7, low=0.1))]),
    "NLLLoss_spatial_none": case("NegativeLogLikelihoodLoss", [("x", f32(2, 4, 3)), ("t", i64(0, 3, 1, 2, 2, 0)
                                                                                         .reshape(2, 3))],
                                 {"reduction": "none"}),
    "SoftmaxCrossEntropyLoss_weight_ignore": case(
        "SoftmaxCrossEntropyLoss", [("x", f32(4, 6)), ("t", i64(5, 0, 2, 2))], {"ignore_index": 2},
        consts=[("w", f32(6, low=0.1))]),
    "SoftmaxCrossEntropyLoss_sum": case("SoftmaxCrossEntropyLoss", [("x", f32(3, 9)), ("t", i64(8, 0, 4))],
                                        {"reduction": "sum"}),
    "ConvTranspose": case("ConvTranspose", [("x", f32(1, 3, 4, 5)), ("w", f32(3, 2, 3, 3)), ("b", f32(2))],
                          {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 0]}),
    "Tile": case("Tile", [("a", f32(2, 3))], consts=[("r", i64(2, 3))]),
    "Sum_variadic": case("Sum", [("a", f32(2, 3)), ("b", f32(3)), ("c", f32(2, 1))]),
    "Mean_variadic": case("Mean", [("a", f32(2, 3)), ("b", f32(2, 3))]),
    "GatherElements": case("GatherElements", [("a", f32(3, 5)), ("i", i64(4, 0, -1, 2, 2, 1).reshape(3, 2))],
                           {"axis": 1}),
    "ScatterElements_add": case("ScatterElements", [("a", f32(3, 5)), ("i", i64(1, 1, 0, 2, 2, 2).reshape(2, 3)),
                                                    ("u", f32(2, 3))], {"axis": 0, "reduction": "add"}),
    "ScatterElements_max": case("ScatterElements", [("a", f32(3, 5)), ("i", i64(4, 4, 0, 4, 1, 1).reshape(3, 2)),
                                                    ("u", f32(3, 2))], {"axis": 1, "reduction": "max"}),
}


def _same(model, feeds, rtol=2e-5, atol=2e-5):
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = fs.from_onnx(model)(*feeds.values())
    got = got if isinstance(got, tuple) else (got,)
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.shape == w.shape, (g.shape, w.shape)
        if w.dtype.kind in "biu":
            np.testing.assert_array_equal(g.astype(np.int64), w.astype(np.int64))
        else:
            np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_onnxruntime(name):
    model, feeds = CASES[name]()
    _same(model, feeds, *((2e-3, 2e-3) if "f16" in name else ()))


_B = lambda *shape: f32(*shape) > 0   # noqa: E731
_I = lambda *shape: R.integers(-20, 20, shape).astype(np.int32)   # noqa: E731
VOCAB = {
    "Sin": case("Sin", [("a", f32(9))]), "Cos": case("Cos", [("a", f32(9))]), "Tan": case("Tan", [("a", f32(9))]),
    "Asin": case("Asin", [("a", f32(9) * 0.3)]), "Acos": case("Acos", [("a", f32(9) * 0.3)]),
    "Atan": case("Atan", [("a", f32(9) * 3)]), "Sinh": case("Sinh", [("a", f32(9))]),
    "Cosh": case("Cosh", [("a", f32(9))]), "Floor": case("Floor", [("a", f32(9) * 4)]),
    "Ceil": case("Ceil", [("a", f32(9) * 4)]),
    "Round_half_even": case("Round", [("a", np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6], np.float32))]),
    "IsNaN": case("IsNaN", [("a", np.array([0.0, np.nan, np.inf], np.float32))], out=TensorProto.BOOL),
    "IsInf": case("IsInf", [("a", np.array([0.0, np.nan, np.inf, -np.inf], np.float32))], out=TensorProto.BOOL),
    "IsInf_negative": case("IsInf", [("a", np.array([0.0, np.nan, np.inf, -np.inf], np.float32))],
                           {"detect_positive": 0}, out=TensorProto.BOOL),
    "Not": case("Not", [("a", _B(6))], out=TensorProto.BOOL),
    "And": case("And", [("a", _B(6)), ("b", _B(6))], out=TensorProto.BOOL),
    "Or": case("Or", [("a", _B(6)), ("b", _B(6))], out=TensorProto.BOOL),
    "Xor": case("Xor", [("a", _B(6)), ("b", _B(6))], out=TensorProto.BOOL),
    "BitwiseAnd": case("BitwiseAnd", [("a", _I(6)), ("b", _I(6))], out=TensorProto.INT32),
    "BitwiseXor": case("BitwiseXor", [("a", _I(6)), ("b", _I(6))], out=TensorProto.INT32),
    "Mod_int": case("Mod", [("a", _I(8)), ("b", np.array([3, -3, 5, 7, -2, 4, 3, 9], np.int32))],
                    out=TensorProto.INT32),
    "Mod_fmod": case("Mod", [("a", f32(8) * 5), ("b", f32(8, low=0.5))], {"fmod": 1}),
}


@pytest.mark.parametrize("name", sorted(VOCAB))
def test_vocabulary_op_matches_onnxruntime(name):
    model, feeds = VOCAB[name]()
    _same(model, feeds, 1e-5, 1e-5)


def test_split_and_constant_of_shape():
    x = f32(4, 10)
    for attrs, consts, n in [({"axis": 1}, [("s", i64(3, 7))], 2), ({"axis": -1, "num_outputs": 3}, [], 3)]:
        model, feeds = single_op("Split", [("x", x)], attrs, consts, n_out=n)
        _same(model, feeds)
    graph = helper.make_graph(
        [helper.make_node("ConstantOfShape", ["shp"], ["c"], value=numpy_helper.from_array(np.array([2.5], np.float32))),
         helper.make_node("Add", ["x", "c"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 10])], [numpy_helper.from_array(i64(4, 10), "shp")])
    _same(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), {"x": x})


def test_unsupported_onnx_op_names_the_nearest_supported_op():
    model, _ = single_op("ReduceLogSum", [("a", f32(3, 4))])   # ReduceProd imports since issue 20
    with pytest.raises(fs.UnsupportedOpError, match="ONNX op ReduceLogSum is not supported.*nearest supported op is Reduce"):
        fs.from_onnx(model)


def test_integer_div_truncates_or_is_refused():
    a, b = np.array([7, -7, 7, -7, 6, 0], np.int32), np.array([2, 2, -2, -2, 3, 5], np.int32)
    model, feeds = single_op("Div", [("a", a), ("b", b)], out_elem=TensorProto.INT32)
    if hasattr(fs, "floor_divide"):
        _same(model, feeds)
    else:   # never the float quotient (3.5 -> 3 is right only by luck of truncation)
        with pytest.raises(fs.UnsupportedOpError, match=r"\[Div_0\]:1: .*integer Div"):
            fs.from_onnx(model)(a, b)


def test_squeeze_of_a_non_1_axis_is_an_error():
    model, _ = single_op("Squeeze", [("a", f32(1, 3, 4))], consts=[("ax", i64(1))])
    with pytest.raises(fs.ShapeError, match=r"\[Squeeze_0\]:1: Squeeze of axis 1 whose size is 3"):
        fs.from_onnx(model)(f32(1, 3, 4))


def test_initializer_as_output():
    w = f32(3, 4)
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4]),
                               helper.make_tensor_value_info("w", TensorProto.FLOAT, [3, 4]),
                               helper.make_tensor_value_info("one", TensorProto.FLOAT, [])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.float32(1.5), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    x = f32(3, 4)
    _same(model, {"x": x})


# ---- malformed models ------------------------------------------------------------------------
def _graph(nodes, inputs=("x",), outputs=("y",), inits=()):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in inputs],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in outputs], list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def test_truncated_file_and_directory(tmp_path):
    model, _ = CASES["Relu"]()
    data = model.SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(fs.ArgumentError, match=r"cut.onnx' is not a valid ONNX model \(truncated"):
        fs.from_onnx(str(path))
    with pytest.raises(fs.ArgumentError, match="is a directory, not an ONNX model file"):
        fs.from_onnx(str(tmp_path))


def test_unsorted_cyclic_and_undefined_graphs():
    unsorted = _graph([helper.make_node("Relu", ["t"], ["y"], name="late"),
                       helper.make_node("Neg", ["x"], ["t"], name="first")])
    with pytest.raises(fs.ArgumentError, match=r"\[late\]:1: Relu reads 't', which node 2 computes later"):
        fs.from_onnx(unsorted)
    cyclic = _graph([helper.make_node("Add", ["x", "b"], ["a"], name="n1"),
                     helper.make_node("Relu", ["a"], ["b"], name="n2"),
                     helper.make_node("Identity", ["b"], ["y"], name="n3")])
    with pytest.raises(fs.ArgumentError, match="not topologically sorted .or has a cycle."):
        fs.from_onnx(cyclic)
    undefined = _graph([helper.make_node("Add", ["x", "ghost"], ["y"], name="add")])
    with pytest.raises(fs.ArgumentError, match=r"\[add\]:1: Add reads 'ghost', which no graph input"):
        fs.from_onnx(undefined)
    no_output = _graph([helper.make_node("Relu", ["x"], ["z"])])
    with pytest.raises(fs.ArgumentError, match="graph output 'y' is not computed"):
        fs.from_onnx(no_output)
