"""The documented public API (docs/api.md) imports, and the documentation lists all of it."""

import os

import icecheck

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_public_name_imports_and_is_documented():
    with open(os.path.join(ROOT, "docs", "api.md"), encoding="utf-8") as f:
        doc = f.read()
    for name in icecheck.__all__:
        if name == "__version__":
            continue
        assert getattr(icecheck, name) is not None
        assert f"`{name}" in doc, f"{name} is exported but not documented in docs/api.md"


def test_the_documented_example_runs():
    cfg = icecheck.mix_config("spark-3.5-mor-snapshot", writers=2, ops_per_writer=1,
                              mix=("delete", "update"))
    result = icecheck.search(cfg, engine="bfs")
    assert "undelete" in result.violations
