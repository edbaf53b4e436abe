"""The documentation site's generated pages and its coverage (issue 22).  `mkdocs build --strict`
itself runs in CI (.ci/run) after the tests; these checks need no mkdocs."""
from __future__ import annotations

import glob
import importlib.util
import os
import re

import fusedsl as fs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _pages():
    spec = importlib.util.spec_from_file_location("fusedsl_docs_pages", os.path.join(ROOT, "docs", "hooks", "pages.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pages = _pages()


def test_troubleshooting_lists_every_error_class_and_reason_code_with_what_to_change():
    from fusedsl.passes.fusion_model import REASONS
    text = pages.troubleshooting_page()
    assert "no advice written yet" not in text, "an error class or reason code lacks its 'what to change'"
    for name in dir(fs):
        obj = getattr(fs, name)
        if isinstance(obj, type) and issubclass(obj, (fs.FusedslError, Warning)):
            assert f"### {name}\n" in text, name
    for code in REASONS:
        assert code in pages.REASON_ADVICE, f"{code} has no advice in docs/hooks/pages.py REASON_ADVICE"
        assert f"| {code} |" in text


def test_cli_page_is_generated_from_argparse():
    text = pages.cli_page()
    for cmd in ("compile", "explain", "simulate", "include-dir", "cpu-run", "fuse", "cache"):
        assert f"## fusedsl {cmd}\n" in text
    assert "FILE.py::FUNCTION" in text and "--timeout SECONDS" in text and "**Exit status:**" in text


def test_ops_page_lists_every_registry_op_and_probes_printing():
    from fusedsl.ir.ops import REGISTRY
    text = pages.ops_page()
    for op in REGISTRY:
        if op not in ("constant", "call"):
            assert f"| `{op}` |" in text, op
    row = next(line for line in text.splitlines() if line.startswith("| `relu` |"))
    assert row.count("float32") == 4   # relu prints in float32 on every target
    row = next(line for line in text.splitlines() if line.startswith("| `matmul` |"))
    assert row.endswith("| no |")      # ascend910 has no Matmul API


def test_api_page_documents_every_public_name():
    with open(os.path.join(ROOT, "docs", "api.md"), encoding="utf-8") as f:
        text = f.read()
    assert pages.undocumented_public_names(pages.api_markdown(text)) == []
    # a name the page does not place itself is rendered in "More ops" (and found by the check)
    trimmed = text.replace("::: fusedsl.frontend.api.silu\n", "")
    # (ops added since docs/api.md was written are also rendered there by api_markdown)
    assert sorted(set(pages.undocumented_public_names(trimmed)) - set(pages.undocumented_public_names(text))) == ["silu"]
    assert "::: fusedsl.frontend.api.silu" in pages.api_markdown(trimmed)


def test_nav_pages_exist():
    with open(os.path.join(ROOT, "mkdocs.yml"), encoding="utf-8") as f:
        nav = re.findall(r":\s+([\w/.-]+\.(?:md|ipynb))\s*$", f.read(), flags=re.M)
    assert nav
    for page in nav:
        assert page in pages.PAGES or os.path.exists(os.path.join(ROOT, "docs", page)), page
    notebooks = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))
    assert [n for n in notebooks if n not in nav] == [], "a notebook is missing from the site's nav"


def test_readme_links_docs_notebooks_and_changelog():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    for nb in glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")):
        assert f"(notebooks/{os.path.basename(nb)})" in readme, nb
    assert "(CHANGELOG.md)" in readme and "(docs/index.md)" in readme
    for link in re.findall(r"\]\(((?!https?:)[^)#]+)", readme):
        assert os.path.exists(os.path.join(ROOT, link)), f"README links {link}, which does not exist"


def test_readme_table_is_generated_and_current():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    assert pages.readme_with_table(readme) == readme, \
        "README.md's Ascend C table is stale: run `python docs/hooks/pages.py readme`"


def test_readme_example_runs(tmp_path, monkeypatch):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        block = re.search(r"## Example\n\n```python\n(.*?)```", f.read(), flags=re.S).group(1)
    assert len(block.strip().splitlines()) <= 15
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md", "exec"), {})
    assert os.path.exists(tmp_path / "out" / "abs_add_relu" / "run.sh")
