"""`fusedsl fuse model.onnx -o DIR --target T --opt-level N`: a model in, fused artefacts out.

DIR receives
  <name>.fused.onnx       the fused model: each kernel a model-local function in the
                          `fusedsl` domain (onnxruntime runs it; compare with the original)
  projects/<kernel>/      one CANN kernel-launch project per kernel fusedsl can print
  fusion_report.txt/.json ops, candidate merges, kernels with reason codes, GM bytes and
                          launches saved, modelled NPU time before/after (a model)
Every file is written like `k.save` writes a project: to a fresh temporary name in DIR
(created exclusively, so a planted symlink is never followed), mode 0644, then renamed over
the target (a rename replaces a link, it does not write through it).  DIR must be new, empty,
or one this command wrote before: its manifest `.fusedsl-fuse` lists every file written with
its sha256, and a rerun replaces only files that still hold what it wrote (a plain marker file,
an edited file, a symlink or a foreign file in one of its names is refused).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time

import ml_dtypes
import numpy as np

from ..errors import ArgumentError, FusedslError

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


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_manifest(path: str) -> dict[str, str] | None:
    """The files (name -> sha256) a previous run wrote into `path`, or None if `path` does not
    hold a manifest of this command (a plain file of the name, a symlink, other JSON)."""
    full = os.path.join(path, MARKER)
    if os.path.islink(full) or not os.path.isfile(full):
        return None
    try:
        with open(full, encoding="utf-8") as f:
            data = json.load(f)
        files = data["files"]
        if data.get("written_by") == "fusedsl fuse" and isinstance(files, dict) and \
                all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
            return files
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return None


def _check_output_dir(path: str) -> dict[str, str]:
    """The previous manifest of DIR ({} when DIR is new or empty); refuses anything else."""
    if os.path.lexists(path) and not os.path.isdir(path):
        raise ArgumentError(f"{path} exists and is not a directory")
    if not os.path.isdir(path) or not os.listdir(path):
        return {}
    old = _read_manifest(path)
    if old is None:
        raise ArgumentError(f"{path} is not empty and was not written by `fusedsl fuse`; "
                            "choose a new directory (fusedsl never overwrites files it did not write)")
    return old


class OutputDir:
    """DIR's files: each written to an exclusive temporary and renamed, each checked against the
    previous manifest before it is replaced; the manifest is rewritten last."""

    def __init__(self, path: str, previous: dict[str, str]):
        self.path, self.previous, self.written = path, previous, {}

    def write(self, name: str, data: bytes) -> None:
        target = os.path.join(self.path, name)
        if os.path.lexists(target):
            if os.path.islink(target) or not os.path.isfile(target):
                raise ArgumentError(f"{target} is a link or not a file; `fusedsl fuse` does not write through it",
                                    hint="remove it, or choose a new output directory")
            with open(target, "rb") as f:
                if self.previous.get(name) != _digest(f.read()):
                    raise ArgumentError(f"{target} was not written by `fusedsl fuse` (or was edited since); "
                                        "it is not replaced", hint="move it away, or choose a new output directory")
        # mkstemp opens O_CREAT|O_EXCL under a random name: it never follows or reuses a planted path
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=".fusedsl-tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, 0o644)
            os.replace(tmp, target)
        except BaseException:
            if os.path.lexists(tmp):
                os.unlink(tmp)
            raise
        self.written[name] = _digest(data)

    def finish(self) -> None:
        files = {**{k: v for k, v in self.previous.items() if k not in self.written}, **self.written}
        text = json.dumps({"written_by": "fusedsl fuse", "files": files}, indent=1) + "\n"
        target = os.path.join(self.path, MARKER)
        if os.path.islink(target):
            raise ArgumentError(f"{target} is a link; `fusedsl fuse` does not write through it")
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=".fusedsl-tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8"))
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)


# example data bigger than this is refused before it is allocated
MAX_EXAMPLE_BYTES = 1 << 30


def _example_inputs(model):
    """Random inputs of the graph inputs' static shapes and dtypes (indices within their
    tables' range are not known here, so integer inputs are zeros)."""
    rng = np.random.default_rng(0)
    floats = {1: np.float32, 10: np.float16, 16: ml_dtypes.bfloat16}
    ints = {7: np.int64, 6: np.int32, 3: np.int8, 2: np.uint8, 9: bool}
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
        if elem not in floats and elem not in ints:
            raise ArgumentError(f"input {vi.name!r} has ONNX element type {elem} "
                                f"({'float64' if elem == 11 else 'unsupported'}); fusedsl computes float32, "
                                "float16, bfloat16 and 8/32-bit integers",
                                hint="convert the model's inputs (e.g. float64 -> float32) first")
        dtype = np.dtype(floats.get(elem) or ints[elem])
        size = int(np.prod(shape, dtype=object)) if shape else 1
        if size * dtype.itemsize > MAX_EXAMPLE_BYTES:
            raise ArgumentError(f"input {vi.name!r} of shape {shape} holds {size * dtype.itemsize} bytes; "
                                f"`fusedsl fuse` makes example data of each input's shape and stops at "
                                f"{MAX_EXAMPLE_BYTES} bytes", hint="export the model with smaller static shapes")
        if elem in floats:
            arrays.append(rng.standard_normal(shape).astype(np.float32).astype(dtype))
        else:
            arrays.append(np.zeros(shape, dtype))
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
    from .onnx_import import import_onnx
    start = time.perf_counter()
    out_dir = os.path.abspath(out_dir)
    previous = _check_output_dir(out_dir)
    # protobuf's own error for a malformed file reaches the CLI, which reports it as a usage
    # error of the MODEL argument (fs.from_onnx turns it into an ArgumentError instead)
    model, label = onnx.load(model_path), os.path.basename(model_path)
    kernel = import_onnx(model, target, {"opt_level": opt_level}, guards=False)
    inputs = _example_inputs(model)
    compiled = kernel.compile(*inputs)
    rep = compiled.report()
    bar = Progress(len(compiled.kernels) + 3, progress if progress is not None else sys.stderr.isatty())
    bar.step("compiled")
    os.makedirs(out_dir, exist_ok=True)
    files = OutputDir(out_dir, previous)

    main = compiled.module.main
    n_inputs = len(kernel.input_names)
    weights = {p.value.name: w for p, w in zip(main.params[n_inputs:], kernel.weights)}
    fused = export_fused(compiled, weights, model)
    stem = os.path.splitext(os.path.basename(label))[0]
    fused_path = os.path.join(out_dir, f"{stem}.fused.onnx")
    files.write(os.path.basename(fused_path), fused.SerializeToString())
    bar.step("fused model")

    # the fused model must compute what the original does (onnxruntime on both)
    feeds = {vi.name: x for vi, x in zip([i for i in model.graph.input
                                          if i.name not in {t.name for t in model.graph.initializer}], inputs)}
    sess = dict(providers=["CPUExecutionProvider"])
    try:
        want = ort.InferenceSession(model.SerializeToString(), **sess).run(None, feeds)
        got = ort.InferenceSession(fused.SerializeToString(), **sess).run(None, feeds)
        max_diff = max(float(np.max(np.abs(np.asarray(g, np.float64) - np.asarray(w, np.float64))))
                       if np.size(w) else 0.0 for g, w in zip(got, want))
        check_note = None
    except Exception as exc:   # noqa: BLE001 (onnxruntime lacks a kernel, e.g. bfloat16 ops on the CPU)
        max_diff = None
        check_note = f"not checked: onnxruntime cannot run it ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"

    if os.path.islink(os.path.join(out_dir, "projects")):
        raise ArgumentError(f"{os.path.join(out_dir, 'projects')} is a link; `fusedsl fuse` does not write through it",
                            hint="remove it, or choose a new output directory")
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
        "fused_vs_original_note": check_note,
        "seconds": round(time.perf_counter() - start, 3),
    }
    files.write("fusion_report.json", (json.dumps(report, indent=2) + "\n").encode("utf-8"))
    files.write("fusion_report.txt", format_report(report, rep).encode("utf-8"))
    files.finish()
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
             f"fused ONNX           {report['fused_onnx']} " + (
                 f"(max |fused - original| = {report['fused_vs_original_max_abs_diff']:.3g} in onnxruntime)"
                 if report["fused_vs_original_max_abs_diff"] is not None else f"({report['fused_vs_original_note']})"),
             "",
             "kernels:"]
    for k in report["kernels"]:
        t = "-" if k["model_time_us"] is None else f"{k['model_time_us']:.2f} us"
        lines.append(f"  {k['name']:<28} {t:>10}  {', '.join(k['ops'])[:60]}")
        lines.append(f"      {k['reason_code']} {k['reason']}")
        lines.append(f"      project: {k['project']}")
    lines += ["", str(rep)]
    return "\n".join(lines) + "\n"
