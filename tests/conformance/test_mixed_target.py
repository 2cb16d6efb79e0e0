"""The mixed target: real Spark and real PyIceberg writing one table on a shared catalog."""

import os

import pytest

from icecheck.conformance.compare import AGREE, SKIPPED
from icecheck.conformance.targets import TargetUnavailable, get_target
from icecheck.scenarios import BUILTIN_DIR
from icecheck.scenarios.format import load_scenario

CMDS = os.path.join(BUILTIN_DIR, "commands")
MIXED = sorted(f for f in os.listdir(CMDS) if f.startswith("mixed-"))


@pytest.fixture(scope="module")
def mixed(mixed_target):
    return mixed_target


def test_there_are_mixed_scenarios():
    assert len(MIXED) >= 2
    for name in MIXED:
        assert load_scenario(os.path.join(CMDS, name)).writer_profiles


@pytest.mark.parametrize("name", MIXED)
def test_mixed_scenarios_agree(mixed, name):
    c = mixed.compare_scenario(load_scenario(os.path.join(CMDS, name)))
    assert c.status == AGREE, (c.reason, c.differences)
    engines = {o.label.split("[")[-1].rstrip("]") for o in c.ops if "[" in o.label}
    assert engines == {"spark", "pyiceberg"}


def test_one_engine_scenarios_are_left_to_their_target(mixed):
    c = mixed.compare_scenario(load_scenario(os.path.join(CMDS, "spark-mor-si-undelete.yaml")))
    assert c.status == SKIPPED and "writer_profiles" in c.reason


def test_one_engine_targets_skip_mixed_scenarios():
    sc = load_scenario(os.path.join(CMDS, MIXED[0]))
    for name in ("spark", "pyiceberg"):
        try:
            target = get_target(name)
            target.ready()
        except TargetUnavailable:
            continue
        c = target.compare_scenario(sc)
        assert c.status == SKIPPED and "--target mixed" in c.reason, (name, c.reason)


TRACES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))), "traces")
MIXED_TRACES = ("duplicate-keys-mixed-spark-merge-pyiceberg-upsert.json",
                "undelete-mixed-spark-mor-delete-pyiceberg-file-overwrite.json",
                "duplicate-keys-mixed-spark-mor-update-pyiceberg-file-overwrite.json",
                "isolation-mixed-spark-mor-merge-pyiceberg-file-overwrite.json",
                "isolation-mixed-spark-mor-delete-pyiceberg-delete.json")


@pytest.mark.parametrize("name", MIXED_TRACES)
def test_mixed_corpus_traces_agree(mixed, name):
    """The corpus's mixed-engine findings replay on real Spark + PyIceberg: every outcome and
    the final rows (the duplicated key, the row that came back) agree with the model."""
    c = mixed.compare_trace(os.path.join(TRACES, name))
    assert c.status == AGREE, (c.reason, c.differences)
    assert c.model_rows == c.real_rows


def test_an_operation_the_model_ends_early_is_run_on_the_real_engines(mixed):
    """The PyIceberg append of mixed-pyiceberg-append-retry-starting-snapshot-expired used to
    end read_failed in the model (it read an expired manifest list at its commit), and the
    target, which did not run it, filled in the model's own outcome: "agree". Now every
    operation the model begins is run, and one the real engines did not run is "not run",
    never the model's outcome: here PyIceberg's own message comes back."""
    c = mixed.compare_scenario(load_scenario(os.path.join(
        CMDS, "mixed-pyiceberg-append-retry-starting-snapshot-expired.yaml")))
    assert c.status == AGREE, (c.reason, c.differences)
    w1 = [o for o in c.ops if o.writer == "w1"][0]
    assert w1.java_outcome == "validation_failed"
    assert w1.java_message.startswith("Cannot find starting snapshot ")
    assert w1.java_message != w1.model_message          # PyIceberg's random snapshot id
