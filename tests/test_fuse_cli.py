"""`fusedsl fuse model.onnx -o DIR`: fused ONNX (checked with onnxruntime), projects, report."""
from __future__ import annotations

import json
import os

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from fusedsl.cli import main
from onnx_models import MODELS


def run(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


@pytest.mark.parametrize("name", ["resnet", "recommender"])
def test_fuse_writes_fused_onnx_projects_and_report(tmp_path, name, capsys):
    model, feeds = MODELS[name]()
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    out = tmp_path / "out"
    assert main(["fuse", str(path), "-o", str(out), "--target", "ascend910b", "--opt-level", "2"]) == 0
    assert "kernel(s)" in capsys.readouterr().out

    fused = onnx.load(str(out / f"{name}.fused.onnx"))
    assert fused.functions and all(f.domain == "fusedsl" for f in fused.functions)
    assert any(n.domain == "fusedsl" for n in fused.graph.node)
    for got, want in zip(run(fused, feeds), run(model, feeds)):   # fresh inputs, not the examples
        np.testing.assert_allclose(got, want, rtol=3e-5, atol=3e-5)

    report = json.loads((out / "fusion_report.json").read_text())
    for key in ("ops", "candidates", "kernels", "gm_bytes_saved", "launches_saved",
                "model_time_us_unfused", "model_time_us_fused"):
        assert key in report
    assert report["launches_saved"] == report["kernels_unfused"] - report["kernels_fused"] > 0
    assert report["gm_bytes_saved"] > 0 and report["model_time_us_fused"] < report["model_time_us_unfused"]
    assert all(k["reason_code"].startswith("FS") for k in report["kernels"])
    # one set of figures: each kernel's blockDim, tile, GM bytes and time are the text report's
    text = (out / "fusion_report.txt").read_text()
    assert report["gm_bytes_fused"] == sum(k["gm_bytes_model"] for k in report["kernels"])
    for k in report["kernels"]:
        assert {"block_dim", "tile", "loops_per_core", "gm_bytes_model", "model_time_us"} <= set(k)
        if k["model_time_us"] is not None:
            assert f" us, {k['gm_bytes_model']} GM bytes" in text
    assert "est. time" not in text
    projects = [k["project"] for k in report["kernels"] if k["project"].startswith("projects/")]
    # kernels without a project (ops the Ascend C backend does not print) say why
    others = [k["project"] for k in report["kernels"] if not k["project"].startswith("projects/")]
    assert all(p.startswith("no project: ") and len(p) > 20 for p in others), others
    assert projects or name == "recommender"
    if name == "resnet":   # conv kernels print too (im2col + the Matmul API): a project for every kernel
        assert len(projects) == len(report["kernels"]) and not others, others
    for p in projects:
        assert any(f.endswith("_kernel.cpp") for f in os.listdir(out / p))
    text = (out / "fusion_report.txt").read_text()
    assert "modelled NPU time" in text and "a model, not a measurement" in text

    # a second run may reuse its own output directory
    assert main(["fuse", str(path), "-o", str(out)]) == 0


def test_fuse_refuses_a_foreign_directory(tmp_path, capsys):
    model, _ = MODELS["resnet"]()
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    assert main(["fuse", str(path), "-o", str(foreign)]) == 2
    assert "not written by `fusedsl fuse`" in capsys.readouterr().err
    assert (foreign / "notes.txt").read_text() == "keep me"
    assert main(["fuse", str(tmp_path / "missing.onnx"), "-o", str(tmp_path / "o")]) == 2


def _relu_model(elem=onnx.TensorProto.FLOAT, shape=(2, 8)):
    from onnx import helper
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Neg", ["t"], ["y"])], "m",
                              [helper.make_tensor_value_info("x", elem, list(shape))],
                              [helper.make_tensor_value_info("y", elem, list(shape))])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 9
    return m


def test_fuse_never_writes_through_a_planted_link(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(_relu_model(), str(path))
    out = tmp_path / "out"
    assert main(["fuse", str(path), "-o", str(out)]) == 0
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    # a link at the temporary name fuse used to write first (onnx.save follows links)
    os.symlink(victim, out / "m.fused.onnx.tmp")
    assert main(["fuse", str(path), "-o", str(out)]) == 0
    assert victim.read_text() == "precious"
    # a link where the fused model goes
    (out / "m.fused.onnx").unlink()
    os.symlink(victim, out / "m.fused.onnx")
    assert main(["fuse", str(path), "-o", str(out)]) == 1
    assert "is a link" in capsys.readouterr().err
    assert victim.read_text() == "precious"


def test_fuse_does_not_trust_a_plain_marker_or_an_edited_file(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(_relu_model(), str(path))
    forged = tmp_path / "forged"
    forged.mkdir()
    (forged / ".fusedsl-fuse").write_text("written by `fusedsl fuse`\n")   # anyone can create this
    (forged / "fusion_report.txt").write_text("mine")
    assert main(["fuse", str(path), "-o", str(forged)]) == 1
    assert "not written by `fusedsl fuse`" in capsys.readouterr().err
    assert (forged / "fusion_report.txt").read_text() == "mine"
    out = tmp_path / "out"
    assert main(["fuse", str(path), "-o", str(out)]) == 0
    (out / "fusion_report.txt").write_text("edited by the user")
    assert main(["fuse", str(path), "-o", str(out)]) == 1
    assert "was not written by `fusedsl fuse` (or was edited since)" in capsys.readouterr().err
    assert (out / "fusion_report.txt").read_text() == "edited by the user"


def test_fuse_files_share_one_mode(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_relu_model(), str(path))
    out = tmp_path / "out"
    assert main(["fuse", str(path), "-o", str(out)]) == 0
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in out.iterdir() if p.is_file()}
    assert set(modes.values()) == {"0o644"}, modes


def test_fuse_refuses_float64_and_huge_inputs_and_handles_bfloat16(tmp_path, capsys):
    for name, model, message in [
            ("d", _relu_model(onnx.TensorProto.DOUBLE), "input 'x' has ONNX element type 11 (float64)"),
            ("h", _relu_model(shape=(1 << 20, 1 << 20)), "`fusedsl fuse` makes example data of each input's shape")]:
        path = tmp_path / f"{name}.onnx"
        onnx.save(model, str(path))
        assert main(["fuse", str(path), "-o", str(tmp_path / f"out_{name}")]) == 1
        assert message in capsys.readouterr().err
    path = tmp_path / "b.onnx"
    onnx.save(_relu_model(onnx.TensorProto.BFLOAT16), str(path))
    assert main(["fuse", str(path), "-o", str(tmp_path / "out_b")]) == 0
    report = json.loads((tmp_path / "out_b" / "fusion_report.json").read_text())
    # onnxruntime's CPU provider may lack bfloat16 kernels: then the report says the check did not run
    assert report["fused_vs_original_max_abs_diff"] == 0.0 or \
        report["fused_vs_original_note"].startswith("not checked: onnxruntime cannot run it")
