"""Every notebook in notebooks/ runs from scratch without a cell raising.

The notebooks run in a fresh kernel on this venv's Python (a throwaway kernelspec pointing at
sys.executable, so a CI venv never picks up some other Jupyter installation's `python3`), with
this checkout first on PYTHONPATH, in a temporary working directory (their %%writefile and data
files land there, not in the repository).

`python tests/test_notebooks.py` re-executes them and saves the outputs into the .ipynb files.
"""
import glob
import json
import os
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))
KERNEL = "fusedsl-test-python"
sys.path.insert(0, os.path.join(ROOT, "tools"))
import regen_notebooks  # noqa: E402  (tools/ is not a package)


def _kernelspec(folder: str, tmpdir: str) -> None:
    spec_dir = os.path.join(folder, "kernels", KERNEL)
    os.makedirs(spec_dir)
    env = {"PYTHONPATH": os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p),
           "MPLBACKEND": "Agg", "TMPDIR": tmpdir}
    with open(os.path.join(spec_dir, "kernel.json"), "w") as f:
        json.dump({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                   "display_name": "fusedsl test", "language": "python", "env": env}, f)


def execute(path: str):
    """The notebook at `path`, executed top to bottom; raises CellExecutionError on a failing cell.

    It must leave nothing behind (issue 22): no file in its working directory (the folder a user
    opens it from, notebooks/) and none in the temporary directory."""
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="fusedsl-nb-") as tmp:
        kernel_tmp = os.path.join(tmp, "tmp")
        os.makedirs(kernel_tmp)
        _kernelspec(os.path.join(tmp, "jupyter"), kernel_tmp)
        work = os.path.join(tmp, "work")
        os.makedirs(work)
        old = os.environ.get("JUPYTER_PATH")
        os.environ["JUPYTER_PATH"] = os.path.join(tmp, "jupyter")
        try:
            NotebookClient(nb, timeout=300, kernel_name=KERNEL, resources={"metadata": {"path": work}}).execute()
        finally:
            if old is None:
                os.environ.pop("JUPYTER_PATH", None)
            else:
                os.environ["JUPYTER_PATH"] = old
        # torch.compile keeps its own cache there (one folder, reused by every run): not a leak
        left = sorted(os.listdir(work)) + sorted(n for n in os.listdir(kernel_tmp) if not n.startswith("torchinductor_"))
        assert not left, f"{os.path.basename(path)} leaves files behind: {left}"
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def test_there_are_notebooks():
    names = [os.path.basename(p) for p in NOTEBOOKS]
    assert "01_quickstart.ipynb" in names and "04_handwritten_ascendc.ipynb" in names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_runs(path):
    import nbformat
    nb = execute(path)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    assert all(c.get("execution_count") for c in nb.cells if c.cell_type == "code")
    # the committed outputs are what the code makes now (tools/regen_notebooks.py rewrites them)
    diff = regen_notebooks.stale(nbformat.read(path, as_version=4), nb)
    assert not diff, f"{os.path.basename(path)}: committed outputs are stale; run tools/regen_notebooks.py\n{diff}"


if __name__ == "__main__":   # the same as tools/regen_notebooks.py
    sys.exit(regen_notebooks.main(sys.argv[1:]))
