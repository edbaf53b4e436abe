"""`fusedsl fuse model.onnx -o DIR --target T --opt-level N`: a model in, fused artefacts out.

DIR receives
  <name>.fused.onnx       the fused model: each kernel a model-local function in the
                          `fusedsl` domain (onnxruntime runs it; compare with the original)
  projects/<kernel>/      one CANN kernel-launch project per kernel fusedsl can print
  fusion_report.txt/.json ops, candidate merges, kernels with reason codes, GM bytes and
                          launches saved, modelled NPU time before/after (a model)
Files are written to temporaries and renamed; DIR must be new, empty, or one this command
wrote before (it holds the marker `.fusedsl-fuse`), so nothing else is ever overwritten.
"""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from ..errors import ArgumentError, FusedslError
from ..passes.base import write_atomic

MARKER = ".fusedsl-fuse"


class Progress:
    """A one-line progress bar on stderr (only when it is a terminal, or when asked)."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.enabled = max(1, total), 0, enabled

    def step(self, what: str) -> None:
        self.done += 1
        if not self.enabled:
            return
        width = 30
        filled = int(width * self.done / self.total)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {what[:40]:<40}")
        if self.done >= self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _check_output_dir(path: str) -> None:
    if os.path.exists(path) and not os.path.isdir(path):
        raise ArgumentError(f"{path} exists and is not a directory")
    if os.path.isdir(path) and os.listdir(path) and not os.path.exists(os.path.join(path, MARKER)):
        raise ArgumentError(f"{path} is not empty and was not written by `fusedsl fuse`; "
                            "choose a new directory (fusedsl never overwrites files it did not write)")


def _example_inputs(model):
    """Random inputs of the graph inputs' static shapes (indices within their tables' range
    are not known here, so integer inputs are zeros)."""
    rng = np.random.default_rng(0)
    from .onnx_import import _ELEM
    arrays = []
    init = {i.name for i in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in init:
            continue
        tt = vi.type.tensor_type
        shape = []
        for d in tt.shape.dim:
            if not d.HasField("dim_value"):
                raise ArgumentError(f"input {vi.name!r} has a symbolic dimension {d.dim_param or '?'}; "
                                    "`fusedsl fuse` needs static shapes")
            shape.append(d.dim_value)
        elem = tt.elem_type
        if elem == 7:
            arrays.append(np.zeros(shape, np.int64))
        elif _ELEM.get(elem, "float32").startswith(("int", "uint")):
            arrays.append(np.zeros(shape, np.dtype(_ELEM[elem])))
        elif elem == 9:
            arrays.append(np.zeros(shape, bool))
        else:
            arrays.append(rng.standard_normal(shape).astype(np.float32 if elem == 1 else np.float16))
    return arrays


def _kernel_projects(compiled, target, options, out_dir, progress) -> dict[str, str]:
    """One CANN project per kernel: each kernel function compiled as its own entry."""
    from ..compiler import compile_module
    from ..frontend.kernel import describe_arg, spec
    from ..ir.core import Module
    written = {}
    for plan in compiled.kernels:
        progress.step(f"project {plan.name}")
        infos = tuple(describe_arg(p.value.name, spec(p.value.shape, p.value.dtype.name))
                      for p in plan.function.params)
        try:
            single = compile_module(Module((plan.function,)), infos, target=target, options=options)
            single.check_ascendc()
            path = single.save(os.path.join(out_dir, "projects", plan.name), overwrite=True)
            written[plan.name] = os.path.relpath(path, out_dir)
        except FusedslError as exc:
            written[plan.name] = f"no project: {exc.message}"
    return written


def fuse_onnx(model_path: str, out_dir: str, target: str = "ascend910b", opt_level: int = 2,
              progress: bool | None = None) -> dict:
    """Run the whole `fusedsl fuse` flow; returns the JSON report (also written to DIR)."""
    import onnx
    import onnxruntime as ort
    from .onnx_export import export_fused
    from .onnx_import import from_onnx, load_model
    start = time.perf_counter()
    out_dir = os.path.abspath(out_dir)
    _check_output_dir(out_dir)
    model, label = load_model(model_path)
    kernel = from_onnx(model, target=target, opt_level=opt_level)
    inputs = _example_inputs(model)
    compiled = kernel.compile(*inputs)
    rep = compiled.report()
    bar = Progress(len(compiled.kernels) + 3, progress if progress is not None else sys.stderr.isatty())
    bar.step("compiled")
    os.makedirs(out_dir, exist_ok=True)
    write_atomic(os.path.join(out_dir, MARKER), "written by `fusedsl fuse`\n")

    main = compiled.module.main
    n_inputs = len(kernel.input_names)
    weights = {p.value.name: w for p, w in zip(main.params[n_inputs:], kernel.weights)}
    fused = export_fused(compiled, weights, model)
    stem = os.path.splitext(os.path.basename(label))[0]
    fused_path = os.path.join(out_dir, f"{stem}.fused.onnx")
    tmp = fused_path + ".tmp"
    onnx.save(fused, tmp)
    os.replace(tmp, fused_path)
    bar.step("fused model")

    # the fused model must compute what the original does (onnxruntime on both)
    feeds = {vi.name: x for vi, x in zip([i for i in model.graph.input
                                          if i.name not in {t.name for t in model.graph.initializer}], inputs)}
    sess = dict(providers=["CPUExecutionProvider"])
    want = ort.InferenceSession(model.SerializeToString(), **sess).run(None, feeds)
    got = ort.InferenceSession(fused.SerializeToString(), **sess).run(None, feeds)
    max_diff = max(float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(w, np.float64))))
                   if np.size(w) else 0.0 for g, w in zip(got, want))

    projects = _kernel_projects(compiled, target, {"opt_level": opt_level}, out_dir, bar)
    # every figure below is the report's (fusedsl/report.py): one source for the table, the
    # text report and this JSON
    figures = rep.as_dict()
    gm_fused, gm_unfused = rep.gm_bytes_fused, rep.gm_bytes_unfused
    fuse_pass = compiled.fuse_stats if hasattr(compiled, "fuse_stats") else {}
    report = {
        "model": label, "target": compiled.target.name, "opt_level": opt_level,
        "ops": sum(1 for op in compiled.canonical.main.ops if op.name not in ("constant",)),
        "onnx_nodes": len(model.graph.node),
        "candidates": fuse_pass.get("candidates"),
        "merges": fuse_pass.get("merges"),
        "kernels": [dict(k, project=projects.get(k["name"])) for k in figures["kernels"]],
        "kernels_fused": len(rep.kernels),
        "kernels_unfused": rep.model_kernels_unfused,
        "launches_saved": rep.model_kernels_unfused - len(rep.kernels),
        "gm_bytes_unfused": gm_unfused,
        "gm_bytes_fused": gm_fused,
        "gm_bytes_saved": gm_unfused - gm_fused,
        "model_time_us_unfused": figures["model_time_us_unfused"],
        "model_time_us_fused": figures["model_time_us_fused"],
        "model_note": "modelled NPU time (fusedsl/cost.py, AutoFuse's published coefficients): a model, "
                      "not a measurement",
        "fused_onnx": os.path.basename(fused_path),
        "fused_vs_original_max_abs_diff": max_diff,
        "seconds": round(time.perf_counter() - start, 3),
    }
    write_atomic(os.path.join(out_dir, "fusion_report.json"), json.dumps(report, indent=2) + "\n")
    write_atomic(os.path.join(out_dir, "fusion_report.txt"), format_report(report, rep))
    bar.step("report")
    return report


def format_report(report: dict, rep) -> str:
    lines = [f"fusedsl fuse: {report['model']} on {report['target']} (opt_level {report['opt_level']})", "",
             f"graph ops            {report['ops']} (from {report['onnx_nodes']} ONNX nodes)",
             f"candidate merges     {report['candidates']} considered, {report['merges']} kept",
             f"kernels              {report['kernels_fused']} fused (unfused: {report['kernels_unfused']}), "
             f"launches saved {report['launches_saved']}",
             f"GM bytes             {report['gm_bytes_unfused']} unfused -> {report['gm_bytes_fused']} fused "
             f"(saved {report['gm_bytes_saved']})",
             f"modelled NPU time    {report['model_time_us_unfused']:.2f} us unfused -> "
             f"{report['model_time_us_fused']:.2f} us fused (a model, not a measurement)",
             f"fused ONNX           {report['fused_onnx']} (max |fused - original| = "
             f"{report['fused_vs_original_max_abs_diff']:.3g} in onnxruntime)", "",
             "kernels:"]
    for k in report["kernels"]:
        t = "-" if k["model_time_us"] is None else f"{k['model_time_us']:.2f} us"
        lines.append(f"  {k['name']:<28} {t:>10}  {', '.join(k['ops'])[:60]}")
        lines.append(f"      {k['reason_code']} {k['reason']}")
        lines.append(f"      project: {k['project']}")
    lines += ["", str(rep)]
    return "\n".join(lines) + "\n"
