"""Every built-in scenario (scenarios/builtin/) passes on the model (each asserts what Java does)."""

import os

import pytest

from icecheck.scenarios.format import load_scenario
from icecheck.scenarios.runner import run_scenario

from icecheck.scenarios import BUILTIN_DIR, builtin_scenario_files

HERE = BUILTIN_DIR
FILES = builtin_scenario_files()


@pytest.mark.parametrize("path", FILES, ids=[os.path.relpath(f, HERE) for f in FILES])
def test_scenario(path):
    verdict = run_scenario(load_scenario(path))
    assert verdict.passed, "\n".join(verdict.failures)


def test_suite_is_large_enough():
    assert len(FILES) >= 40, f"only {len(FILES)} scenarios"


def test_scenario_ids_are_unique():
    ids = [load_scenario(p).id for p in FILES]
    dupes = {i for i in ids if ids.count(i) > 1}
    assert not dupes
