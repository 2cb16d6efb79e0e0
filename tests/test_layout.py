"""The layout shows the architecture: no import cycles between icecheck's modules.

Every ``import``/``from ... import`` in the package's source, at module level or inside a
function (a function-level import hides a cycle, it does not remove it), is an edge of the
module graph; the graph must be acyclic.
"""

import ast
import os

import networkx as nx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = {"icecheck": "icecheck", "models": "icecheck.models", "scenarios": "icecheck.scenarios",
           "cli": "icecheck.cli", "conformance": "icecheck.conformance",
           "engines": "icecheck.engines", "properties": "icecheck.properties",
           "traces": "icecheck.traces", "explorer": "icecheck.explorer",
           "sweep": "icecheck.sweep", "pipelines": "icecheck.pipelines",
           "audit": "icecheck.audit"}


def modules():
    for folder, package in FOLDERS.items():
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            if name.endswith(".py"):
                mod = package if name == "__init__.py" else f"{package}.{name[:-3]}"
                yield mod, os.path.join(ROOT, folder, name), package


def import_graph() -> nx.DiGraph:
    g = nx.DiGraph()
    known = {m for m, _, _ in modules()}
    for mod, path, package in modules():
        g.add_node(mod)
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = (package if mod != package else package).split(".")
                    parts = parts[:len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            for t in targets:
                while t and t not in known:
                    t = t.rpartition(".")[0]
                if t and t != mod and not mod.startswith(t + ".") and t != package:
                    g.add_edge(mod, t)
    return g


def test_no_import_cycles():
    cycles = list(nx.simple_cycles(import_graph()))
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c + [c[0]]) for c in cycles[:5])


def test_test_file_names_are_unique():
    """pytest imports test modules by basename (no __init__.py in tests/): two files with one
    name in different folders stop the whole run at collection."""
    import collections
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    names = collections.Counter(f for _, _, fs in os.walk(here) for f in fs
                                if f.startswith("test_") and f.endswith(".py"))
    assert [n for n, k in names.items() if k > 1] == []


def test_install_hints_say_what_works_where_icecheck_is_installed(tmp_path, monkeypatch):
    """A checkout installs an extra from its root; a wheel has no `.` to install from (issue
    42, item 8: `conform` told wheel users to run `pip install -e '.[conformance]'`)."""
    from icecheck import install_hint as hint
    assert hint.in_checkout() and hint.install_hint("conformance") == \
        f"pip install -e '{ROOT}[conformance]'"
    monkeypatch.setattr(hint, "_ROOT", str(tmp_path))
    assert not hint.in_checkout()
    assert hint.install_hint("conformance") == "pip install 'icecheck[conformance]'"
