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
