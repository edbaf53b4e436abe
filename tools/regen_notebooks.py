"""Re-execute the notebooks and save their outputs, and tell when committed outputs are stale.

    python tools/regen_notebooks.py [notebooks/03_autofusion.ipynb ...]   # default: all of them

Each notebook runs in a fresh kernel on this checkout (tests/test_notebooks.execute: a
throwaway kernelspec, a temporary working directory, nothing left behind) and is written back
with its new outputs.  `figures(nb)` is what a reader takes from the outputs: every text
output (streams, the text form of results, errors), with the traced cell's temporary file
names made neutral and, in `fs.benchmark` tables (wall-clock times on whatever machine ran
the notebook), every number masked.  tests/test_notebooks.py compares the committed
notebook's figures with a fresh run's: a notebook whose outputs say 10 kernels when the code
now makes 3 fails until this script is run again.
"""
from __future__ import annotations

import difflib
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK_DIR = os.path.join(ROOT, "notebooks")

_CELL_FILE = re.compile(r"[^\s\"']*ipykernel_\d+/\d+\.py")   # a cell's file, wherever the kernel's tmp is
_TMP_PATH = re.compile(r"/tmp/[\w./+-]*")
_NUMBER = re.compile(r"\d[\d,]*(\.\d+)?(e[-+]?\d+)?%?")


def _timing(text: str) -> bool:
    """An fs.benchmark display (or a table of wall-clock times): its numbers differ run to run."""
    return " repeats, " in text and "median us" in text


def _text(output: dict) -> str | None:
    kind = output.get("output_type")
    if kind == "stream":
        text = output.get("text", "")
    elif kind in ("execute_result", "display_data"):
        text = output.get("data", {}).get("text/plain")
        if text is None:
            return None
    elif kind == "error":
        return f"error: {output.get('ename')}: {output.get('evalue')}"
    else:
        return None
    text = "".join(text) if isinstance(text, list) else text
    return text


def _normalise(text: str) -> str:
    text = _TMP_PATH.sub("<tmp>", _CELL_FILE.sub("<cell>", text))
    if _timing(text):   # numbers masked; column widths and rules follow the numbers' widths
        text = re.sub(r"-{3,}", "---", re.sub(r"[ \t]+", " ", _NUMBER.sub("#", text)))
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def figures(nb) -> list[tuple[int, str]]:
    """(code cell number, normalised text) per code cell: its text outputs in order, streams
    joined (how a kernel splits stdout into messages varies run to run)."""
    out, n = [], 0
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        n += 1
        texts = [t for t in (_text(o) for o in cell.get("outputs", [])) if t is not None]
        if texts:
            out.append((n, _normalise("".join(t if t.endswith("\n") else t + "\n" for t in texts))))
    return out


def stale(committed, fresh) -> str:
    """A diff of the committed notebook's figures against a fresh run's ('' when they agree)."""
    a = [f"[cell {n}] {line}" for n, text in figures(committed) for line in text.splitlines()]
    b = [f"[cell {n}] {line}" for n, text in figures(fresh) for line in text.splitlines()]
    if a == b:
        return ""
    return "\n".join(difflib.unified_diff(a, b, "committed", "fresh run", lineterm="", n=1))


def notebooks() -> list[str]:
    return sorted(os.path.join(NOTEBOOK_DIR, n) for n in os.listdir(NOTEBOOK_DIR) if n.endswith(".ipynb"))


def main(argv=None) -> int:
    import nbformat
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from test_notebooks import execute
    for path in (argv if argv else notebooks()):
        before = nbformat.read(path, as_version=4)
        nb = execute(path)
        diff = stale(before, nb)
        nbformat.write(nb, path)
        print(f"executed {os.path.relpath(path, ROOT)}: " + ("figures unchanged" if not diff else "figures changed"))
        if diff:
            print(diff)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
