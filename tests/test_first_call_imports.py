"""What `import fusedsl` plus a kernel's first call on the CPU imports.

The first call imports the compiler stack (a user pays it inside that call), so what it does not
need stays out: the Ascend C printers and the project writer (`.source`, `save`), the tile IR's
text parsers (tests, bug reports), the graph IR's parser (lark), the model importers, the report
and its display, the numpy tile interpreter and the benchmark helper.  Checked in a fresh process
(sys.modules), on an elementwise kernel and a row kernel.
"""
import json
import os
import subprocess
import sys

import fusedsl

_CHILD = r"""
import json, sys
import numpy as np
import fusedsl as fs
x = np.linspace(-2.0, 2.0, 48, dtype=np.float32).reshape(6, 8)
y = fs.fused_kernel(lambda a, b: fs.tanh(a) * b + 1.0)(x, x)
z = fs.fused_kernel(lambda a: fs.softmax(a, axis=-1))(x)
e = np.exp(x - x.max(-1, keepdims=True))
ok = np.allclose(y, np.tanh(x) * x + 1.0, rtol=1e-5, atol=1e-6) and np.allclose(z, e / e.sum(-1, keepdims=True), rtol=1e-5)
print(json.dumps({"ok": bool(ok), "modules": sorted(sys.modules)}))
"""

NOT_ON_THE_CALL_PATH = ("fusedsl.backend_ascendc", "fusedsl.tile.parse", "fusedsl.ir.parser", "lark",
                        "fusedsl.importers.", "onnx", "torch", "fusedsl.report", "fusedsl.display",
                        "fusedsl.benchmark", "fusedsl.backend_cpu.kernel_interp")


def test_a_cpu_first_call_imports_no_printer_parser_importer_or_report(tmp_path):
    root = os.path.dirname(os.path.dirname(fusedsl.__file__))
    env = dict(os.environ, FUSEDSL_CACHE_DIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    child = json.loads(out.stdout.strip().splitlines()[-1])
    modules = set(child["modules"])
    assert child["ok"]
    assert {"fusedsl.compiler", "fusedsl.backend_cpu.llvm_kernel", "fusedsl.tile.kernel"} <= modules   # it compiled
    assert sorted(m for m in modules if m.startswith(NOT_ON_THE_CALL_PATH)) == []
