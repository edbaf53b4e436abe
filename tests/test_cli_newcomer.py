"""Issue 22, a newcomer's first hour: each defect found there has its failure-path test here.

Item 1 (a user's project living under a folder named like a library), items 2, 3 and 8 (errors
raised while tracing point at the user's line and say what to do), item 7 (notebooks and examples
leave nothing behind).  The CLI's own failure paths are in tests/test_cli_errors.py.
"""
from __future__ import annotations

import importlib.util
import os
import textwrap

import pytest

import fusedsl as fs


def _load_module(path):
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("folder", ["fusedsl", "torch"])
def test_model_under_a_folder_named_like_a_library_is_located_at_its_line(tmp_path, folder):
    # GitHub's default clone folder is `fusedsl`: frames are the library's when they are in the
    # package's own directory, not when a path merely contains "/fusedsl/" or "/torch/"
    torch = pytest.importorskip("torch")
    model_dir = tmp_path / folder
    model_dir.mkdir()
    path = model_dir / "erf_model.py"
    path.write_text(textwrap.dedent("""\
        import torch

        class Erf(torch.nn.Module):
            def forward(self, x):
                return torch.special.erf(x) + 1
        """))
    model = _load_module(str(path)).Erf()
    with pytest.raises(fs.UnsupportedOpError) as info:
        fs.from_torch(model, torch.randn(4))
    assert f"{path}:5: aten.special_erf" in str(info.value)
