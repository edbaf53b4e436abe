"""Every public name of fusedsl/__init__.py has a reference docstring (issue 22): parameters,
returns, raises and an example for functions; a description and an example for classes.  Every
example runs here as a doctest, so the documentation cannot drift from the code.
"""
from __future__ import annotations

import doctest
import inspect
import types

import pytest

import fusedsl as fs

PUBLIC = sorted(n for n in dir(fs) if not n.startswith("_") and not isinstance(getattr(fs, n), types.ModuleType))


def _doc(obj) -> str:
    if isinstance(obj, type) or callable(obj):
        return inspect.getdoc(obj) or ""
    return inspect.getdoc(type(obj)) or ""   # fs.float16, fs.config: their class documents them


def _takes_parameters(obj) -> bool:
    try:
        params = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return False
    return bool(params)


@pytest.mark.parametrize("name", PUBLIC)
def test_public_name_has_a_reference_docstring(name):
    obj = getattr(fs, name)
    doc = _doc(obj)
    assert len(doc) >= 80, f"fs.{name} has no reference docstring"
    assert "Example:" in doc, f"fs.{name}'s docstring has no Example section"
    if isinstance(obj, type):
        return
    if callable(obj):
        if _takes_parameters(obj):
            assert "Args:" in doc, f"fs.{name}'s docstring does not list its parameters (Args:)"
        assert "Returns:" in doc, f"fs.{name}'s docstring does not say what it returns (Returns:)"
        assert "Raises:" in doc, f"fs.{name}'s docstring does not say what it raises (Raises:)"


def test_fused_kernel_lists_every_compile_option():
    from fusedsl.frontend.kernel import COMPILE_OPTIONS
    doc = inspect.getdoc(fs.fused_kernel)
    assert [o for o in COMPILE_OPTIONS if f"`{o}`" not in doc] == []


def test_compiled_kernel_report_documents_the_reports_fields():
    k = fs.fused_kernel(lambda x: fs.relu(x)).compile(fs.spec((64,)))
    doc = inspect.getdoc(fs.CompiledKernel.report)
    rep = k.report()
    for field in vars(rep):
        assert f"`{field}`" in doc, f"Report.{field} is not described in CompiledKernel.report's docstring"
    for field in vars(rep.kernels[0]):
        if field not in ("model", "tiling_choice", "tile_length"):   # internals of the model lines
            assert f"`{field}`" in doc, f"a kernel row's {field} is not described"


def _examples():
    finder = doctest.DocTestFinder(recurse=False)
    seen, tests = set(), []
    for name in PUBLIC:
        obj = getattr(fs, name)
        owner = obj if (isinstance(obj, type) or callable(obj)) else type(obj)
        if id(owner) in seen:
            continue
        seen.add(id(owner))
        tests += [t for t in finder.find(owner, f"fs.{name}", globs={}) if t.examples]
    for member in ("report", "simulate", "save"):
        tests += [t for t in finder.find(getattr(fs.CompiledKernel, member), f"CompiledKernel.{member}", globs={})
                  if t.examples]
    return tests


@pytest.mark.parametrize("test", _examples(), ids=lambda t: t.name)
def test_docstring_example_runs(test):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0, f"the example of {test.name} fails (run it with python -m doctest)"


def test_lazy_names_do_not_shadow_each_other():
    # importing fusedsl.benchmark for fs.Benchmark bound the submodule over the function fs.benchmark
    import subprocess
    import sys
    code = "import fusedsl as fs; fs.Benchmark; assert callable(fs.benchmark), fs.benchmark"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
