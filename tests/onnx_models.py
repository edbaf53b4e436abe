"""Small real-world ONNX graphs built with onnx.helper (no exporter needed): a transformer
block, a recommender block and a ResNet block, each with random weights."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 20)]


class Graph:
    def __init__(self, name, seed=0):
        self.name, self.nodes, self.inits, self.rng, self.n = name, [], [], np.random.default_rng(seed), 0

    def w(self, shape, scale=0.2, dtype=np.float32, low=None):
        self.n += 1
        name = f"w{self.n}"
        value = (self.rng.uniform(low, 1, shape) if low is not None else self.rng.standard_normal(shape) * scale)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    def const(self, values, dtype=np.int64):
        self.n += 1
        name = f"c{self.n}"
        self.inits.append(numpy_helper.from_array(np.asarray(values, dtype), name))
        return name

    def op(self, op_type, inputs, **attrs):
        self.n += 1
        out = f"t{self.n}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=f"{op_type}_{self.n}", **attrs))
        return out

    def model(self, inputs, outputs):
        g = helper.make_graph(self.nodes, self.name, inputs, outputs, self.inits)
        m = helper.make_model(g, opset_imports=OPSET)
        m.ir_version = 9
        return m


def value(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def transformer(b=2, t=8, d=32, h=4):
    g = Graph("transformer")
    dh = d // h

    def linear(x, i, o):
        return g.op("Add", [g.op("MatMul", [x, g.w((i, o))]), g.w((o,))])

    def heads(x):
        return g.op("Transpose", [g.op("Reshape", [x, g.const([b, t, h, dh])])], perm=[0, 2, 1, 3])

    y = g.op("LayerNormalization", ["x", g.w((d,), low=0.5), g.w((d,))], axis=-1, epsilon=1e-5)
    q, k, v = (heads(linear(y, d, d)) for _ in range(3))
    s = g.op("Mul", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])]),
                     g.const(np.float32(dh ** -0.5), np.float32)])
    a = g.op("MatMul", [g.op("Softmax", [s], axis=-1), v])
    a = g.op("Reshape", [g.op("Transpose", [a], perm=[0, 2, 1, 3]), g.const([b, t, d])])
    x1 = g.op("Add", ["x", linear(a, d, d)])
    y2 = g.op("LayerNormalization", [x1, g.w((d,), low=0.5), g.w((d,))], axis=-1, epsilon=1e-5)
    f = g.op("Gelu", [linear(y2, d, 4 * d)], approximate="tanh")
    out = g.op("Add", [x1, linear(f, 4 * d, d)])
    g.nodes[-1].output[0] = "y"
    m = g.model([value("x", TensorProto.FLOAT, [b, t, d])], [value("y", TensorProto.FLOAT, [b, t, d])])
    _ = out
    return m, {"x": np.random.default_rng(1).standard_normal((b, t, d)).astype(np.float32)}


def recommender(batch=16):
    g = Graph("recommender", seed=2)
    e1 = g.op("Gather", [g.w((100, 16)), "user"], axis=0)
    e2 = g.op("Gather", [g.w((50, 16)), "item"], axis=0)
    x = g.op("Concat", [e1, e2, "dense"], axis=1)
    hdn = g.op("Relu", [g.op("Gemm", [x, g.w((64, 40)), g.w((64,))], transB=1)])
    hdn = g.op("Relu", [g.op("Gemm", [hdn, g.w((32, 64)), g.w((32,))], transB=1)])
    g.op("Sigmoid", [g.op("Gemm", [hdn, g.w((1, 32)), g.w((1,))], transB=1)])
    g.nodes[-1].output[0] = "score"
    m = g.model([value("user", TensorProto.INT64, [batch]), value("item", TensorProto.INT64, [batch]),
                 value("dense", TensorProto.FLOAT, [batch, 8])], [value("score", TensorProto.FLOAT, [batch, 1])])
    rng = np.random.default_rng(3)
    return m, {"user": rng.integers(0, 100, batch).astype(np.int64),
               "item": rng.integers(0, 50, batch).astype(np.int64),
               "dense": rng.standard_normal((batch, 8)).astype(np.float32)}


def resnet(n=2, c=8, hw=8):
    g = Graph("resnet", seed=4)

    def conv_bn(x):
        y = g.op("Conv", [x, g.w((c, c, 3, 3))], pads=[1, 1, 1, 1], strides=[1, 1])
        return g.op("BatchNormalization", [y, g.w((c,), low=0.5), g.w((c,)), g.w((c,)), g.w((c,), low=0.5)],
                    epsilon=1e-5)

    y = g.op("Relu", [conv_bn("x")])
    g.op("Relu", [g.op("Add", ["x", conv_bn(y)])])
    g.nodes[-1].output[0] = "y"
    m = g.model([value("x", TensorProto.FLOAT, [n, c, hw, hw])], [value("y", TensorProto.FLOAT, [n, c, hw, hw])])
    return m, {"x": np.random.default_rng(5).standard_normal((n, c, hw, hw)).astype(np.float32)}


MODELS = {"transformer": transformer, "recommender": recommender, "resnet": resnet}


def single_op(op_type, inputs, attrs=None, consts=None, out_elem=TensorProto.FLOAT, opset=18, n_out=1):
    """A one-node model: `inputs` is a list of (name, numpy array) graph inputs, `consts` of
    (name, numpy array) initializers read by the node in order after the inputs (a name of ""
    leaves an optional input out).  Returns (model, feeds)."""
    consts = consts or []
    names = [n for n, _ in inputs] + [n for n, _ in consts]
    outs = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op_type, names, outs, name=f"{op_type}_0", **(attrs or {}))
    elem = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
            np.dtype(np.int64): TensorProto.INT64, np.dtype(np.int32): TensorProto.INT32,
            np.dtype(bool): TensorProto.BOOL}
    graph = helper.make_graph(
        [node], op_type.lower(), [helper.make_tensor_value_info(n, elem[a.dtype], list(a.shape)) for n, a in inputs],
        [helper.make_tensor_value_info(o, out_elem, None) for o in outs],
        [numpy_helper.from_array(a, n) for n, a in consts if n])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 9
    return m, dict(inputs)
