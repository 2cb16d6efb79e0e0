"""The standalone reproducers (reproducers/) stay standalone: they parse, import no icecheck,
and say how to run them. Running them on the real libraries is tests/conformance/
test_reproducers_run.py."""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPRO = os.path.join(ROOT, "reproducers")
SCRIPTS = sorted(f for f in os.listdir(REPRO) if f.endswith(".py"))


def test_there_are_reproducers():
    assert len(SCRIPTS) >= 2


@pytest.mark.parametrize("name", SCRIPTS)
def test_reproducer_is_standalone(name):
    path = os.path.join(REPRO, name)
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert "icecheck" not in imported, f"{name} imports icecheck"
    doc = ast.get_docstring(tree) or ""
    assert "Run" in doc or "python reproducers/" in doc, f"{name}: say how to run it"
    assert "icecheck:" in doc, f"{name}: name the icecheck trace or scenario it reproduces"
    assert any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body)
