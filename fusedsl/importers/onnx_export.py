"""Fused module -> ONNX: each fused kernel becomes a model-local function in the `fusedsl`
domain, called from the main graph, so onnxruntime (which inlines local functions) still
runs the fused model and it can be checked against the original.

Each fusedsl op maps to standard ONNX ops (opset 20: Gelu with approximate="tanh",
reductions with axes as an input).  Graph inputs keep the original model's element types;
where fusedsl computes in another type (int64 indices as int32) a Cast is inserted.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..ir.ops import attention_operands, attention_views

OPSET = 20
DOMAIN = "fusedsl"

_ONNX_TYPES = {"float32": 1, "float16": 10, "bfloat16": 16, "int32": 6, "int8": 3, "uint8": 2, "bool": 9}


def _onnx():
    import onnx
    return onnx


class _Emitter:
    """Appends ONNX nodes for fusedsl ops; names values uniquely."""

    def __init__(self, prefix: str):
        self.nodes = []
        self.names: dict[int, str] = {}
        self.prefix = prefix
        self.count = 0

    def fresh(self, hint="t") -> str:
        self.count += 1
        return f"{self.prefix}{hint}{self.count}"

    def name(self, v) -> str:
        return self.names[id(v)]

    def node(self, op_type, inputs, outputs=None, **attrs):
        from onnx import helper
        outputs = outputs or [self.fresh()]
        self.nodes.append(helper.make_node(op_type, inputs, outputs, **attrs))
        return outputs[0]

    def const(self, array, hint="c") -> str:
        from onnx import numpy_helper
        out = self.fresh(hint)
        return self.node("Constant", [], [out], value=numpy_helper.from_array(np.asarray(array), out))

    def ints(self, values) -> str:
        return self.const(np.asarray(values, np.int64))

    def emit(self, op, out: str) -> None:
        """Nodes computing `op` into the value name `out`."""
        x = [self.name(v) for v in op.operands]
        a = dict(op.attrs)
        simple = {"abs": "Abs", "neg": "Neg", "relu": "Relu", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
                  "reciprocal": "Reciprocal", "sigmoid": "Sigmoid", "tanh": "Tanh", "add": "Add", "sub": "Sub",
                  "mul": "Mul", "div": "Div", "maximum": "Max", "minimum": "Min", "lt": "Less",
                  "le": "LessOrEqual", "gt": "Greater", "ge": "GreaterOrEqual", "eq": "Equal", "where": "Where",
                  "matmul": "MatMul", "concatenate": "Concat"}
        name = op.name
        if name == "matmul":   # a transposed operand (fold-transpose) is a Transpose of its last two axes
            for i, key in ((0, "transpose_a"), (1, "transpose_b")):
                if a.get(key, False):
                    n = op.operands[i].type.rank
                    x[i] = self.node("Transpose", [x[i]], perm=list(range(n - 2)) + [n - 1, n - 2])
        if name in simple:
            extra = {"axis": a["axis"]} if name == "concatenate" else {}
            self.node(simple[name], x, [out], **extra)
        elif name == "square":
            self.node("Mul", [x[0], x[0]], [out])
        elif name == "rsqrt":
            self.node("Reciprocal", [self.node("Sqrt", x)], [out])
        elif name == "silu":
            self.node("Mul", [x[0], self.node("Sigmoid", x)], [out])
        elif name == "gelu":
            self.node("Gelu", x, [out], approximate="tanh")
        elif name == "leaky_relu":
            self.node("LeakyRelu", x, [out], alpha=float(a["alpha"]))
        elif name == "ne":
            self.node("Not", [self.node("Equal", x)], [out])
        elif name == "cast":
            self.node("Cast", x, [out], to=_ONNX_TYPES[a["dtype"]])
        elif name == "constant":
            from .. import dtypes as dt
            dtype = dt.to_dtype(a["dtype"])
            value = np.asarray(a["value"], dtype.np if dtype.name != "bfloat16" else np.float32)
            self.node("Constant", [], [out], value=_tensor(value, out, dtype.name))
        elif name in ("sum", "mean", "max", "min"):
            onnx_op = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin"}[name]
            self.node(onnx_op, [x[0], self.ints(a["axes"])], [out], keepdims=int(bool(a["keepdims"])))
        elif name == "reshape":
            self.node("Reshape", [x[0], self.ints(a["shape"])], [out])
        elif name == "broadcast_to":
            self.node("Expand", [x[0], self.ints(a["shape"])], [out])
        elif name == "transpose":
            self.node("Transpose", x, [out], perm=list(a["perm"]))
        elif name == "slice":
            n = len(a["starts"])
            self.node("Slice", [x[0], self.ints(a["starts"]), self.ints(a["stops"]), self.ints(range(n)),
                                self.ints(a["steps"])], [out])
        elif name == "take":
            self.node("Gather", x, [out], axis=int(a["axis"]))
        elif name == "conv2d":
            ph, pw = a["padding"]
            self.node("Conv", x, [out], strides=list(a["stride"]), pads=[ph, pw, ph, pw])
        elif name == "attention":
            self._attention(op, x, out)
        else:
            raise NotImplementedError(f"no ONNX form for fusedsl op {name}")

    def _attention(self, op, x, out) -> None:
        """attention as standard ONNX: MatMul, Mul, Where/Add (mask, causal), Softmax, MatMul;
        grouped KV heads are expanded, and a fully masked row (Softmax of all -inf is NaN) is 0."""
        q, k, v, mask, cos, _ = attention_operands(op)
        qn, kn, vn = x[:3]
        rank, dtype = q.type.rank, q.dtype
        bshd = op.attr("layout", "bhsd") == "bshd"
        heads = [op.attr(f"{n}_heads") for n in "qkv"]   # bshd: the heads each reads of one tensor
        qn, kn, vn = (n if h is None else self.node("Slice", [n, self.ints([h[0]]), self.ints([h[1]]), self.ints([2])])
                      for n, h in zip((qn, kn, vn), heads))
        q, k, v = attention_views(op)
        if bshd:   # [B, S, H, D] operands and result: transposed to [B, H, S, D] around the math
            qn, kn, vn = (self.node("Transpose", [n], perm=[0, 2, 1, 3]) for n in (qn, kn, vn))
            q, k, v = (SimpleNamespace(shape=(t.shape[0], t.shape[2], t.shape[1], t.shape[3])) for t in (q, k, v))
        if cos is not None:   # q and k rotated first: x * cos + concat(-x2, x1) * sin (the [..., S, D] view)
            half, d = q.shape[-1] // 2, q.shape[-1]

            def rope(n):
                x1 = self.node("Slice", [n, self.ints([0]), self.ints([half]), self.ints([-1])])
                x2 = self.node("Slice", [n, self.ints([half]), self.ints([d]), self.ints([-1])])
                rot = self.node("Concat", [self.node("Neg", [x2]), x1], axis=-1)
                return self.node("Add", [self.node("Mul", [n, x[-2]]), self.node("Mul", [rot, x[-1]])])
            qn, kn = rope(qn), rope(kn)
        if rank >= 3 and k.shape[-3] != q.shape[-3]:
            group = q.shape[-3] // k.shape[-3]

            def expand(name, t):
                lead, (hkv, s, d) = list(t.shape[:-3]), t.shape[-3:]
                five = self.node("Reshape", [name, self.ints(lead + [hkv, 1, s, d])])
                wide = self.node("Expand", [five, self.ints(lead + [hkv, group, s, d])])
                return self.node("Reshape", [wide, self.ints(lead + [hkv * group, s, d])])
            kn, vn = expand(kn, k), expand(vn, v)
        kt = self.node("Transpose", [kn], perm=list(range(rank - 2)) + [rank - 1, rank - 2])
        scale = np.asarray(op.attr("scale"), dtype.np if dtype.name != "bfloat16" else np.float32)
        s = self.node("Mul", [self.node("MatMul", [qn, kt]), self.const(scale)])
        ninf = self.const(np.asarray(-np.inf, scale.dtype))
        if mask is not None:
            s = self.node("Where", [x[3], s, ninf]) if mask.dtype.name == "bool" else self.node("Add", [s, x[3]])
        if op.attr("causal"):
            s = self.node("Where", [self.const(np.tri(q.shape[-2], k.shape[-2], dtype=bool)), s, ninf])
        p = self.node("Softmax", [s], axis=-1)
        p = self.node("Where", [self.node("IsNaN", [p]), self.const(np.zeros((), scale.dtype)), p])
        if bshd:
            self.node("Transpose", [self.node("MatMul", [p, vn])], [out], perm=[0, 2, 1, 3])
        else:
            self.node("MatMul", [p, vn], [out])



def _tensor(value, name, dtype_name):
    from onnx import helper, numpy_helper
    if dtype_name == "bfloat16":
        return helper.make_tensor(name, 16, value.shape, value.astype(np.float32).reshape(-1).tolist())
    return numpy_helper.from_array(value, name)


def _value_info(name, dtype_name, shape):
    from onnx import helper
    return helper.make_tensor_value_info(name, _ONNX_TYPES[dtype_name], list(shape))


def export_fused(compiled, weights: dict, original=None):
    """An onnx.ModelProto of the fused module `compiled.module` (static shapes).

    `weights` maps main parameter names to arrays (initializers); `original` is the
    imported ModelProto, whose input/output names and element types the result keeps."""
    onnx = _onnx()
    from onnx import helper
    from ..ir.ops import CALL, has_trait
    module = compiled.module
    main = module.main
    functions = []
    for fn in module.functions[:-1]:
        em = _Emitter("")
        for i, p in enumerate(fn.params):
            em.names[id(p.value)] = f"in{i}"
        for op in fn.ops:
            out = em.fresh("v")
            em.emit(op, out)
            em.names[id(op.result)] = out
        outputs = []
        for j, v in enumerate(fn.results):
            outputs.append(em.node("Identity", [em.name(v)], [f"out{j}"]))
        functions.append(helper.make_function(
            DOMAIN, fn.name, [f"in{i}" for i in range(len(fn.params))], outputs, em.nodes,
            [helper.make_opsetid("", OPSET)]))
    em = _Emitter("m_")
    inputs, initializers = [], []
    orig_inputs = {i.name: i for i in original.graph.input} if original is not None else {}
    for p in main.params:
        pname = p.value.name
        if pname in weights:
            arr = np.asarray(weights[pname])
            initializers.append(_tensor(arr, pname, p.value.dtype.name))
            em.names[id(p.value)] = pname
            continue
        source = _original_name(pname, orig_inputs)
        if source is not None and source.type.tensor_type.elem_type != _ONNX_TYPES[p.value.dtype.name]:
            inputs.append(source)
            em.names[id(p.value)] = em.node("Cast", [source.name], to=_ONNX_TYPES[p.value.dtype.name])
        else:
            inputs.append(source if source is not None else _value_info(pname, p.value.dtype.name, p.value.shape))
            em.names[id(p.value)] = inputs[-1].name
    for op in main.ops:
        if has_trait(op, CALL):
            outs = [em.fresh("k") for _ in op.results]
            em.node(op.attr("callee"), [em.name(v) for v in op.operands], outs, domain=DOMAIN)
            for v, o in zip(op.results, outs):
                em.names[id(v)] = o
        else:
            out = em.fresh("v")
            em.emit(op, out)
            em.names[id(op.result)] = out
    outputs = []
    orig_outputs = list(original.graph.output) if original is not None else []
    for j, v in enumerate(main.results):
        oname = orig_outputs[j].name if j < len(orig_outputs) else f"output{j}"
        em.node("Identity", [em.name(v)], [oname])
        outputs.append(_value_info(oname, v.dtype.name, v.shape))
    graph = helper.make_graph(em.nodes, main.name, inputs, outputs, initializers)
    model = helper.make_model(graph, functions=functions,
                              opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(DOMAIN, 1)],
                              producer_name="fusedsl")
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model


def _original_name(pname, orig_inputs):
    """The original graph input a main parameter came from (names are sanitized on import)."""
    from .common import sanitize
    for name, vi in orig_inputs.items():
        if name == pname or sanitize(name) == pname:
            return vi
    return None
