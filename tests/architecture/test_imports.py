"""Dependencies point one way: no import cycle in the package, counting imports made inside
functions, and the model core imports nothing from the layers above it.

The graph is read from the source (every ``import`` and ``from ... import`` statement, at any
depth), module to module; ``networkx`` finds the cycles.
"""
import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parents[2] / "multispin_sim"


def _module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _targets(node, module, is_package, files):
    """The package modules a statement imports (absolute names)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "multispin_sim"]
    if node.level:
        base = module.split(".")
        base = base[:len(base) - node.level + (1 if is_package else 0)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    elif node.module and node.module.split(".")[0] == "multispin_sim":
        prefix = node.module
    else:
        return []
    # "from .x import y": y is a submodule of x, or a name defined in x; either way x itself
    # is imported first (a submodule reached through its package depends on the package)
    return [prefix] + [f"{prefix}.{a.name}" for a in node.names if f"{prefix}.{a.name}" in files]


def import_graph():
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(files)
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(node, module, path.name == "__init__.py", files):
                    if target in files and target != module:
                        graph.add_edge(module, target)
                        graph.add_edges_from((module, p) for p in _packages(target, module, files))
    return graph


def _packages(target, module, files):
    """The packages that importing ``target`` initialises first, those above ``module`` aside
    (they are initialised before ``module`` runs): ``from .teaching.narrator import x`` in the
    package root runs teaching/__init__.py."""
    parts = target.split(".")
    for i in range(2, len(parts)):
        package = ".".join(parts[:i])
        if package in files and not module.startswith(package + ".") and package != module:
            yield package


def test_no_import_cycles():
    cycles = list(nx.simple_cycles(import_graph()))
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c + [c[0]]) for c in cycles)


def test_model_core_imports_only_the_model():
    graph = import_graph()
    bad = [(a, b) for a, b in graph.edges if a.startswith("multispin_sim.model")
           and not b.startswith("multispin_sim.model")]
    assert not bad, f"the model core imports from above it: {bad}"


def test_the_graph_sees_function_level_imports():
    """The reader is not blind to imports inside functions (the kind that hid cycles), nor to
    the package a submodule's import initialises."""
    graph = import_graph()
    assert graph.has_edge("multispin_sim.cli", "multispin_sim.engine")
    assert graph.has_edge("multispin_sim", "multispin_sim.teaching")   # via teaching.narrator
    assert graph.number_of_edges() > 100
