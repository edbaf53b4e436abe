"""PyTorch (torch.export, torch.compile) and ONNX importers against the frameworks' own output.

torch is imported once for the module (it is slow to import); the three model blocks are
small real-world shapes: a transformer block, a recommender block and a ResNet block.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import fusedsl as fs

import torch  # noqa: E402  (a required test extra: CI installs .[test,torch,onnx])
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from onnx_models import MODELS  # noqa: E402

torch.manual_seed(0)


class Block(nn.Module):
    """Pre-norm transformer block: attention as matmul-softmax-matmul, FFN with gelu."""

    def __init__(self, d=32, h=4):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.f1, self.f2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        y = self.ln1(x)
        q, k, v = (m(y).view(b, t, self.h, d // self.h).transpose(1, 2) for m in (self.q, self.k, self.v))
        a = torch.softmax(q @ k.transpose(-2, -1) * (d // self.h) ** -0.5, dim=-1) @ v
        x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
        return x + self.f2(F.gelu(self.f1(self.ln2(x)), approximate="tanh"))


class Recommender(nn.Module):
    def __init__(self):
        super().__init__()
        self.users, self.items = nn.Embedding(100, 16), nn.Embedding(50, 16)
        self.m1, self.m2, self.head = nn.Linear(40, 64), nn.Linear(64, 32), nn.Linear(32, 1)

    def forward(self, user, item, dense):
        x = torch.cat([self.users(user), self.items(item), dense], dim=1)
        return torch.sigmoid(self.head(torch.relu(self.m2(torch.relu(self.m1(x))))))


class ResBlock(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b1, self.b2 = nn.BatchNorm2d(c), nn.BatchNorm2d(c)
        for bn in (self.b1, self.b2):
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        return torch.relu(x + self.b2(self.c2(y)))


def torch_cases():
    return {
        "transformer": (Block(), (torch.randn(2, 8, 32),)),
        "recommender": (Recommender(), (torch.randint(0, 100, (16,)), torch.randint(0, 50, (16,)),
                                        torch.randn(16, 8))),
        "resnet": (ResBlock(), (torch.randn(2, 8, 8, 8),)),
    }


@pytest.fixture(scope="module")
def imported():
    out = {}
    for name, (model, args) in torch_cases().items():
        model.eval()
        with torch.no_grad():
            want = model(*args).numpy()
        out[name] = (model, args, fs.from_torch(model, *args), want)
    return out


@pytest.mark.parametrize("name", ["transformer", "recommender", "resnet"])
def test_from_torch_matches_pytorch(imported, name):
    model, args, kernel, want = imported[name]
    got = kernel(*args)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    compiled = kernel.compile(*args)
    rep = compiled.report()
    assert all(row.reason_code and row.reason_code.startswith("FS") for row in rep.kernels)
    assert rep.model_time_us_fused < rep.model_time_us_unfused
    assert len(compiled.kernels) < rep.model_kernels_unfused


def test_torch_ir_points_at_the_model_source(imported):
    _, args, kernel, _ = imported["resnet"]
    ir = kernel.compile(*args).ir
    assert f'"{__file__}"' in ir   # ops are located at ResBlock.forward's lines, not in fusedsl


def test_resnet_block_kernels_and_codes(imported):
    _, args, kernel, _ = imported["resnet"]
    rows = kernel.compile(*args).report().kernels
    ops = [r.ops for r in rows]
    convs = [i for i, o in enumerate(ops) if o[0] == "conv2d"]
    assert len(convs) == 2 and all(r.reason_code.startswith("FS1") for r in rows)
    # batch norm folded into one per-channel scale and shift of each conv's result: the whole
    # model is two cube kernels, each conv with its epilogue (scale/shift, residual add, relu); no
    # kernel of its own rescales the weights any more
    assert len(rows) == 2 and [o[0] for o in ops] == ["conv2d", "conv2d"], ops
    assert all(o[-1] == "relu" and "rsqrt" in o for o in ops) and ops[1].count("add") == ops[0].count("add") + 1
    assert all(r.reason_code == "FS113" for r in rows)
    # every kernel, the convs included, prints as Ascend C now
    assert all(p.error is None for p in kernel.compile(*args).kernels)


def test_unsupported_aten_op_names_op_and_source_line():
    class Bessel(nn.Module):
        def forward(self, x):
            return torch.special.bessel_j0(x) + 1   # the line the error must point at

    with pytest.raises(fs.FusedslError) as info:
        fs.from_torch(Bessel(), torch.randn(4))
    msg = str(info.value)
    assert "aten.special_bessel_j0" in msg and "not supported" in msg
    line = next(i for i, text in enumerate(open(__file__), 1) if "the line the error must point at" in text)
    assert f"{__file__}:{line}" in msg


def test_gelu_erf_form_matches_torch():
    x = torch.linspace(-6, 6, 301)
    np.testing.assert_allclose(fs.from_torch(lambda v: F.gelu(v), x)(x), F.gelu(x).numpy(), rtol=1e-6, atol=1e-6)


def test_torch_compile_backend_zero_copy():
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8), nn.Sigmoid()).eval()
    x = torch.randn(4, 16)
    with torch.no_grad():
        want = model(x)
        backend = fs.torch_backend(target="ascend910b")
        graphs = []

        def counting(gm, inputs):
            graphs.append(gm)
            return backend(gm, inputs)
        compiled = torch.compile(model, backend=counting)
        got = compiled(x)
        assert len(graphs) == 1   # the whole model ran through fusedsl's kernels
        for batch in (8, 12):     # a shape change makes dynamo trace a dynamic graph: still fused
            xb = torch.randn(batch, 16)
            torch.testing.assert_close(compiled(xb), model(xb), rtol=2e-5, atol=2e-5)
    torch.testing.assert_close(got, want, rtol=2e-5, atol=2e-5)
    from fusedsl.importers.common import as_array
    view = as_array(x, "x")
    assert np.shares_memory(view, x.numpy())   # inputs cross without a copy


@pytest.mark.parametrize("name", ["transformer", "recommender", "resnet"])
def test_from_onnx_matches_onnxruntime(name):
    model, feeds = MODELS[name]()
    onnx.checker.check_model(model)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    kernel = fs.from_onnx(model)
    np.testing.assert_allclose(kernel(*feeds.values()), want, rtol=3e-5, atol=3e-5)
    rep = kernel.compile(*feeds.values()).report()
    assert rep.model_time_us_fused < rep.model_time_us_unfused


def test_onnx_from_path_and_unsupported_node(tmp_path):
    from onnx import TensorProto, helper
    node = helper.make_node("Hardmax", ["x"], ["y"], name="my_erf")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    path = tmp_path / "erf.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    # located at this call (the user's file), the node named in the message (issue 22 item 8)
    with pytest.raises(fs.FusedslError, match=r"erf.onnx node 1 \(Hardmax 'my_erf'\): ONNX op Hardmax is not supported") as info:
        fs.from_onnx(str(path))   # the line of the error
    line = next(i for i, text in enumerate(open(__file__), 1) if "fs.from_onnx(str(path))   # the line of" in text)
    assert str(info.value).startswith(f"{__file__}:{line}: erf.onnx node 1")
    old = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    with pytest.raises(fs.FusedslError, match="opset 11; fusedsl imports opset 13"):
        fs.from_onnx(old)
    with pytest.raises(fs.FusedslError, match="no ONNX model at"):
        fs.from_onnx(str(tmp_path / "missing.onnx"))


def test_import_fusedsl_does_not_import_extras():
    code = "import sys, fusedsl; print(sorted(m for m in ('torch', 'onnx', 'onnxruntime') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_from_torch_more_ops():
    def f(x, w, y):
        a = F.silu(torch.rms_norm(x, (16,), w, 1e-6))
        b = torch.bmm(a.view(2, 4, 16), y).flatten(1)        # (2, 4*8)
        c = torch.clamp(b[:, 3:19], -1.0, 1.0).unsqueeze(0).squeeze(0)
        return torch.where(c > 0, c.exp(), c * 0.5).mean(dim=-1, keepdim=True)
    args = (torch.randn(8, 16), torch.rand(16) + 0.5, torch.randn(2, 16, 8))
    kernel = fs.from_torch(f, *args)
    np.testing.assert_allclose(kernel(*args), f(*args).numpy(), rtol=2e-5, atol=2e-5)


def test_from_onnx_more_ops():
    from onnx import TensorProto, helper, numpy_helper
    c = lambda name, v: numpy_helper.from_array(np.asarray(v, np.int64), name)  # noqa: E731
    nodes = [
        helper.make_node("Slice", ["x", "st", "en", "ax"], ["s"]),                  # (2, 4, 4, 6)
        helper.make_node("GlobalAveragePool", ["s"], ["g"]),                         # (2, 4, 1, 1)
        helper.make_node("Flatten", ["g"], ["f"], axis=1),                           # (2, 4)
        helper.make_node("Unsqueeze", ["f", "ax0"], ["u"]),                          # (1, 2, 4)
        helper.make_node("Expand", ["u", "shp"], ["e"]),                             # (3, 2, 4)
        helper.make_node("ReduceMax", ["e", "ax2"], ["r"], keepdims=0),             # (3, 2)
        helper.make_node("Clip", ["r", "lo", "hi"], ["cl"]),
        helper.make_node("Squeeze", ["u", "ax0"], ["sq"]),                           # (2, 4)
        helper.make_node("Softmax", ["sq"], ["sm"], axis=1),
        helper.make_node("Sqrt", ["sm"], ["y2"]),
        helper.make_node("Cast", ["cl"], ["y1"], to=TensorProto.FLOAT16),
    ]
    inits = [c("st", [1, 2]), c("en", [5, 8]), c("ax", [2, 3]), c("ax0", [0]), c("shp", [3, 2, 4]),
             c("ax2", [2]), numpy_helper.from_array(np.float32(-0.1), "lo"),
             numpy_helper.from_array(np.float32(0.2), "hi")]
    graph = helper.make_graph(nodes, "misc", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 6, 9])],
                              [helper.make_tensor_value_info("y1", TensorProto.FLOAT16, [3, 2]),
                               helper.make_tensor_value_info("y2", TensorProto.FLOAT, [2, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(model)
    x = np.random.default_rng(0).standard_normal((2, 4, 6, 9)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    got = fs.from_onnx(model)(x)
    np.testing.assert_allclose(got[0].astype(np.float32), want[0].astype(np.float32), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)


def test_int64_index_inputs_take_the_call_fast_path_and_out_of_range_raises():
    """An imported model's int64 index input (the framework's index type) is narrowed to int32
    on the call fast path when every value fits (same result as torch, for new index arrays on
    every call); a value outside int32 still raises the checked call's ArgumentError."""
    class Pick(nn.Module):
        def forward(self, x, idx):
            return torch.relu(x[idx]) * 2.0

    x = torch.randn(7, 5)
    idx = torch.tensor([3, 0, 6, 3], dtype=torch.int64)
    k = fs.from_torch(Pick(), x, idx)
    xn = x.numpy()
    for shift in range(4):   # a new int64 array per call
        i64 = (idx.numpy() + shift) % 7
        np.testing.assert_allclose(k(xn, i64), (torch.relu(x[torch.from_numpy(i64)]) * 2.0).numpy(), rtol=1e-6)
    bad = np.array([0, 1, 2, 1 << 40], np.int64)
    with pytest.raises(fs.ArgumentError, match="outside the int32 range") as info:
        k(xn, bad)
    assert info.value.loc is not None and info.value.loc.file.endswith("test_importers.py")
