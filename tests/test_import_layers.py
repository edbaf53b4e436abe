"""No import circles inside fusedsl, counting lazy (function-level) imports too.

A lower layer never needs a higher one: the data model does not import its printer, the tracer
does not import the op library, a backend does not import the compiler that drives it.  This
walks every `import` / `from ... import` in the package's source (not only the top-level ones,
which Python would already refuse to run in a circle) and fails naming the modules of a cycle.
"""
import ast
import os

import fusedsl

ROOT = os.path.dirname(fusedsl.__file__)


def _modules() -> dict[str, str]:
    mods = {}
    for folder, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(folder, f)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                mods[rel.removesuffix(".__init__")] = path
    return mods


def _import_graph() -> dict[str, set[str]]:
    mods = _modules()
    graph = {m: set() for m in mods}
    for m, path in mods.items():
        package = m if path.endswith("__init__.py") else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                for alias in node.names:   # `from . import x` names a module; else the module itself
                    target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in graph else base
                    if target in graph and target != m:
                        graph[m].add(target)
            elif isinstance(node, ast.Import):
                graph[m].update(a.name for a in node.names if a.name in graph and a.name != m)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_import_graph_has_no_cycles():
    cycles = _cycles(_import_graph())
    assert not cycles, "import cycles (lazy imports included): " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


# The package's layers, lowest first (docs/ARCHITECTURE.md's picture). A module may import its
# own layer and the ones below, never one above — lazy imports included, so no layer is dodged
# by importing inside a function. A new top-level module or package must be placed here.
LAYERS = [
    ("base", {"version", "dtypes", "errors", "targets", "cachedir", "cachesize", "scratch", "buffers", "record",
              "gcpause", "lru"}),
    ("graph IR", {"ir", "reference", "ops"}),
    ("graph passes and models", {"views", "cost", "tile", "passes"}),
    ("lowering to schedules", {"lower"}),
    ("backends", {"backend_cpu", "backend_ascendc"}),
    ("driver", {"compiler", "report", "display"}),
    ("user surface", {"frontend", "importers", "benchmark", "cli", "docstrings", "ops_table", "__main__", ""}),
]


def _layer_of(module: str) -> int:
    top = module.split(".")[1] if "." in module else ""
    for i, (_, names) in enumerate(LAYERS):
        if top in names:
            return i
    raise AssertionError(f"fusedsl module {module} is in no layer of tests/test_import_layers.py's LAYERS: place it")


def _upward_imports(graph) -> list[str]:
    bad = []
    for m, targets in graph.items():
        if ".templates." in m:   # files a saved project runs, not modules of the library
            continue
        for t in targets:
            if _layer_of(t) > _layer_of(m):
                bad.append(f"{m} ({LAYERS[_layer_of(m)][0]}) imports {t} ({LAYERS[_layer_of(t)][0]})")
    return sorted(bad)


def test_no_module_imports_a_higher_layer():
    bad = _upward_imports(_import_graph())
    assert not bad, "imports up the layers (lazy imports included):\n" + "\n".join(bad)


def test_the_layer_check_finds_a_planted_upward_import():
    graph = {"fusedsl.lower.row": {"fusedsl.backend_cpu.stmts"}, "fusedsl.backend_cpu.stmts": set()}
    assert _upward_imports(graph) == ["fusedsl.lower.row (lowering to schedules) imports "
                                      "fusedsl.backend_cpu.stmts (backends)"]
