"""User strings printed into C++ are escaped; any Python parameter name works (issue 10).

One g++ build covers everything: a kernel whose source file is named with a newline and a
`#define`, whose parameters are named like C++ keywords and printer-internal names, with
FUSEDSL_DEBUG=1 and a source line that ends in a backslash.
"""
from __future__ import annotations

import linecache

import numpy as np
import pytest

import fusedsl as fs
from fusedsl.backend_ascendc import cnames

NAMES = ["int", "float", "this", "tiling", "workspace", "pipe", "y0", "t"]
SOURCE = '''import fusedsl as fs


@fs.fused_kernel
def weird(int, float, this, tiling, workspace, pipe, y0, t):
    s = int * 1.0 + float * 2.0 + this * 3.0 + tiling * 4.0 \\
        + workspace * 5.0 + pipe * 6.0 + y0 * 7.0 + t * 8.0
    return fs.relu(s)
'''


@pytest.fixture(scope="module")
def weird_kernel():
    # such a name cannot exist on disk ("/"): linecache serves the source to FUSEDSL_DEBUG
    path = "k.py\n#define Relu Abs //"
    linecache.cache[path] = (len(SOURCE), None, SOURCE.splitlines(True), path)
    ns: dict = {}
    exec(compile(SOURCE, path, "exec"), ns)
    mp = pytest.MonkeyPatch()
    mp.setenv("FUSEDSL_DEBUG", "1")
    try:
        args = [np.linspace(-4, 4, 96, dtype=np.float32).reshape(3, 32) * (k + 1) for k in range(8)]
        k = ns["weird"].compile(*args, target="ascend910b")
        source = k.source            # printed while FUSEDSL_DEBUG=1
    finally:
        mp.undo()
    return k, source, args


def test_file_name_with_newline_cannot_inject_code(weird_kernel):
    k, source, args = weird_kernel
    assert not any(line.lstrip().startswith("#define") for line in source.splitlines())
    assert "k.py\\x0a#define Relu Abs //" in source        # shown, escaped, inside a comment
    want = np.maximum(sum(a * w for a, w in zip(args, range(1, 9))), 0)
    np.testing.assert_allclose(k.simulate(*args), want, rtol=1e-5, atol=1e-5)


def test_debug_source_line_ending_in_backslash_does_not_swallow_the_next(weird_kernel):
    _, source, _ = weird_kernel
    commented = [line for line in source.splitlines() if "// " in line and "tiling * 4.0" in line]
    assert commented, "FUSEDSL_DEBUG=1 should show the source line"
    assert all(not line.rstrip().endswith("\\") for line in source.splitlines())


def test_parameter_names_are_renamed(weird_kernel):
    _, source, _ = weird_kernel
    for name in NAMES:
        assert f"GM_ADDR {cnames.param(name)}" in source


def test_cnames_helpers():
    assert cnames.comment("a\nb\r\\") == "a\\x0ab\\x0d\\x5c"
    assert cnames.comment("??/") == "?\\x3f/"
    assert cnames.comment("é") == "\\xe9"
    # injective, ASCII, no reserved double underscore
    names = ["a", "_a", "a_", "a__b", "U", "U0055_", "é", "é_", "x_y", "xU0079"]
    out = [cnames.param(n) for n in names]
    assert len(set(out)) == len(out)
    assert all(o.isascii() and "__" not in o and o.isidentifier() for o in out)
