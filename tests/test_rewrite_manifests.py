"""Manifest rewrites (models/rewrite_manifests.py): Spark's rewrite_manifests plan, the
RewriteManifests commit and its deleted-manifest validation, the scenario input.

Java agreement: scenarios/builtin/manifests/rewrite-manifests-* and
commands/spark-rewrite-manifests (tests/conformance/test_conform_java.py); Spark agreement:
tests/conformance/test_spark_target.py."""

from __future__ import annotations

import glob
import os

import pytest

from icecheck.models.metadata import DATA_MANIFEST, EXISTING
from icecheck.models.reads import manifests_of
from icecheck.models.rewrite_manifests import plan_rewrite
from icecheck.scenarios import BUILTIN_DIR
from icecheck.scenarios.errors import InputError
from icecheck.scenarios.format import load_scenario, parse_scenario
from icecheck.scenarios.runner import execute_scenario, model_config
from icecheck.scenarios.yamlload import load_yaml

HEAD = ("version: 1\ntable:\n  schema: {id: int}\nfiles:\n  a: {rows: [[1]]}\n"
        "  b: {rows: [[2]]}\nsteps:\n  - commit: {op: fast_append, add: [a]}\n")


def _run(text):
    sc = parse_scenario(load_yaml(text, "x.yaml"), "x.yaml")
    return execute_scenario(sc, model_config(sc))


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(BUILTIN_DIR, "manifests",
                                                               "rewrite-manifests-*.yaml")))
                         + [os.path.join(BUILTIN_DIR, "commands", "spark-rewrite-manifests.yaml")])
def test_builtin_rewrite_manifests_scenarios_pass(path):
    sc = load_scenario(path)
    verdict, _ = execute_scenario(sc, model_config(sc))
    assert verdict.passed, verdict.failures


def test_two_manifests_become_one_keeping_sequence_numbers():
    verdict, state = _run(HEAD + "  - commit: {op: fast_append, add: [b]}\n"
                          "  - commit: {op: rewrite_manifests}\n")
    assert verdict.passed, verdict.failures
    snap = state.metadata.current
    assert snap.operation == "replace"
    (m,) = manifests_of(state.store, snap, DATA_MANIFEST)
    assert [(e.status, e.file.path, e.data_sequence_number) for e in m.entries] == [
        (EXISTING, "a", 1), (EXISTING, "b", 2)]
    assert plan_rewrite(state.store, snap) == ()      # one manifest: nothing left to do


def test_one_manifest_is_a_noop():
    verdict, state = _run(HEAD + "  - commit: {op: rewrite_manifests}\n"
                          "    expect: {outcome: noop}\n")
    assert verdict.passed, verdict.failures
    assert len(state.metadata.snapshots) == 1


def test_rewrite_manifests_takes_no_validate():
    with pytest.raises(InputError) as e:
        parse_scenario(load_yaml(HEAD + "  - commit: {op: rewrite_manifests, validate: "
                                        "{from_snapshot: true}}\n", "x.yaml"), "x.yaml")
    assert "rewrite_manifests does not take 'validate'" in str(e.value)
    assert "x.yaml:" in str(e.value)
