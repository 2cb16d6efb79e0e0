"""Branches and tags in the model (models/refs.py): toBranch commits, ManageSnapshots ref updates,
expiry's refusal of referenced snapshots, and their scenario input.

The Java agreement of the built-in branch scenarios is tested by
tests/conformance/test_conform_java.py (every built-in scenario).
"""

from __future__ import annotations

import glob
import os

import pytest

from icecheck.models.expire import java_hash_order
from icecheck.models.metadata import BRANCH, TAG
from icecheck.scenarios import BUILTIN_DIR
from icecheck.scenarios.errors import InputError
from icecheck.scenarios.format import load_scenario, parse_scenario
from icecheck.scenarios.runner import execute_scenario, model_config
from icecheck.scenarios.yamlload import load_yaml

BRANCHES = os.path.join(BUILTIN_DIR, "branches")
HEAD = ("version: 1\ntable:\n  schema: {id: int}\nfiles:\n  a: {rows: [[1]]}\n"
        "  b: {rows: [[2]]}\nsteps:\n  - commit: {op: append, add: [a]}\n")


def _run_text(text):
    sc = parse_scenario(load_yaml(text, "x.yaml"), "x.yaml")
    return execute_scenario(sc, model_config(sc))


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(BRANCHES, "*.yaml"))))
def test_builtin_branch_scenarios_pass(path):
    sc = load_scenario(path)
    verdict, _ = execute_scenario(sc, model_config(sc))
    assert verdict.passed, verdict.failures


def test_commit_to_branch_leaves_main_and_sets_the_ref():
    verdict, state = _run_text(HEAD + "  - commit: {op: append, add: [b], branch: dev}\n")
    meta = state.metadata
    assert verdict.live_data_files == ["a"]          # main unchanged
    (name, kind, sid), = meta.refs
    assert (name, kind) == ("dev", BRANCH) and sid != meta.current_snapshot_id
    assert meta.snapshot(sid).parent_id == meta.current_snapshot_id
    assert not [p for p in verdict.properties if p.get("property") == "lost_write"]


def test_tag_then_fast_forward_main_to_branch_moves_current():
    verdict, state = _run_text(HEAD + "  - commit: {op: create_tag, name: t}\n"
                               "  - commit: {op: append, add: [b], branch: dev}\n"
                               "  - commit: {op: fast_forward, name: main, to: dev}\n")
    meta = state.metadata
    assert verdict.live_data_files == ["a", "b"]
    kinds = {n: (k, s) for n, k, s in meta.refs}
    assert kinds["t"][0] == TAG and kinds["dev"] == (BRANCH, meta.current_snapshot_id)


def test_fast_forward_to_the_same_head_commits_nothing():
    verdict, state = _run_text(HEAD + "  - commit: {op: create_branch, name: dev}\n"
                               "  - commit: {op: fast_forward, name: main, to: dev}\n"
                               "    expect: {outcome: committed}\n")
    assert verdict.passed, verdict.failures
    assert state.catalog.version == 2   # the append and the branch; the no-op swapped nothing


def test_ref_already_exists_is_refused_when_built():
    verdict, _ = _run_text(HEAD + "  - commit: {op: create_branch, name: dev}\n"
                           "  - commit: {op: create_tag, name: dev}\n"
                           "    expect: {outcome: validation_failed, message: 'Ref dev already "
                           "exists'}\n")
    assert verdict.passed, verdict.failures


def test_java_hash_order_of_refs():
    # java.lang.String.hashCode spread over 16 buckets, as a small HashMap iterates
    assert java_hash_order(["main", "audit"]) == java_hash_order(["audit", "main"])
    assert sorted(java_hash_order(["main", "v1", "dev"])) == ["dev", "main", "v1"]


@pytest.mark.parametrize("step, message", [
    ("{op: create_branch}", "create_branch needs name"),
    ("{op: create_tag, name: t, snapshot: 0}", "is not a snapshot number"),
    ("{op: fast_forward, name: main}", "fast_forward needs to:"),
    ("{op: expire_snapshots, snapshots: [1], branch: dev}", "does not take 'branch'"),
    ("{op: append, add: [b], branch: 'a b'}", "is not a ref name"),
    ("{op: create_branch, name: dev, add: [b]}", "create_branch does not take 'add'"),
])
def test_bad_ref_input_names_the_line(step, message):
    with pytest.raises(InputError) as e:
        parse_scenario(load_yaml(HEAD + f"  - commit: {step}\n", "x.yaml"), "x.yaml")
    assert message in str(e.value) and "x.yaml:" in str(e.value)
