"""The fs functions generated from composite definitions show their definition's parameters
(help(), the API site and `mkdocs build --strict` compare a docstring's Args with them)."""
import inspect
import re

import fusedsl as fs
from fusedsl.frontend import api


def test_generated_functions_have_the_definitions_parameters():
    assert list(inspect.signature(fs.lerp).parameters) == ["a", "b", "w"]
    assert list(inspect.signature(fs.sin).parameters) == ["x"]
    for name in api.GENERATED:
        fn = getattr(api, name)
        params = set(inspect.signature(fn).parameters)
        doc = inspect.getdoc(fn) or ""
        args = doc.split("Args:")[1].split("\n\n")[0] if "Args:" in doc else ""
        documented = set(re.findall(r"^\s{4}(\w+)(?: \(.*?\))?:", args, flags=re.M))
        assert documented <= params, (name, documented - params)
