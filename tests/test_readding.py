"""Adding a path that is already in the table (issue 11 item 5): Java lists it twice and its
rows are read twice; one commit adds a path once. Java agreement: the built-in scenario
appends/re-adding-an-existing-path-duplicates-rows (tests/conformance/test_conform_java.py)."""

from icecheck.scenarios.format import parse_scenario
from icecheck.scenarios.runner import execute_scenario, model_config
from icecheck.scenarios.yamlload import load_yaml

HEAD = ("version: 1\ntable:\n  schema: {id: int}\nfiles:\n  a: {rows: [[1], [2]]}\n"
        "steps:\n  - commit: {op: append, add: [a]}\n")


def _run(text):
    sc = parse_scenario(load_yaml(text, "x.yaml"), "x.yaml")
    return execute_scenario(sc, model_config(sc))


def test_readding_a_path_lists_it_twice_and_duplicates_its_rows():
    verdict, state = _run(HEAD + "  - commit: {op: fast_append, add: [a]}\n")
    assert verdict.live_data_files == ["a", "a"]
    assert sorted(map(tuple, verdict.rows)) == [(1,), (1,), (2,), (2,)]


def test_one_commit_adds_a_path_once():
    verdict, state = _run(HEAD.replace("add: [a]", "add: [a, a]"))
    assert verdict.live_data_files == ["a"]
    assert dict(state.metadata.snapshots[-1].summary)["added-data-files"] == 1
