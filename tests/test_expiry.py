"""ExpireSnapshots in the model: metadata, clean-up, the object store, readability, scenario input.

The Java agreement of the built-in expiry scenarios is tested by
tests/conformance/test_conform_java.py (every built-in scenario).
"""

from __future__ import annotations

import glob
import os

import pytest

from icecheck.models.expire import files_to_delete, missing_objects
from icecheck.models.store import ObjectStore
from icecheck.models.system import Model
from icecheck.properties import evaluate, expectation
from icecheck.scenarios import BUILTIN_DIR
from icecheck.scenarios.errors import InputError
from icecheck.scenarios.format import load_scenario, parse_scenario
from icecheck.scenarios.runner import execute_scenario, model_config
from icecheck.scenarios.yamlload import load_yaml

EXPIRY = os.path.join(BUILTIN_DIR, "expiry")


def _run(name):
    sc = load_scenario(os.path.join(EXPIRY, name))
    cfg = model_config(sc)
    verdict, state = execute_scenario(sc, cfg)
    return sc, cfg, verdict, state


def test_store_delete_hides_objects_but_archive_keeps_them():
    s = ObjectStore({"a": 1, "b": 2})
    d = s.delete_all(["a", "nope"])
    assert "a" not in d and "b" in d and len(d) == 1 and list(d) == ["b"]
    with pytest.raises(KeyError):
        d["a"]
    assert d.archive()["a"] == 1
    assert d != s and hash(d) != hash(s)
    assert d.delete_all(["a"]) is d          # deleting again changes nothing
    assert d.put_all({"c": 3}).deleted == frozenset({"a"})


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(EXPIRY, "*.yaml"))))
def test_expiry_scenarios_pass(path):
    sc = load_scenario(path)
    verdict, _ = execute_scenario(sc, model_config(sc))
    assert verdict.passed, verdict.failures


def test_inside_window_is_history_failure_edge_is_not():
    _, _, v, _ = _run("expire-inside-window-cannot-determine-history.yaml")
    assert v.steps[-1].check == "history"
    assert v.steps[-1].message.startswith("Cannot determine history between starting snapshot")
    _, _, v, _ = _run("expire-starting-snapshot-window-still-known.yaml")
    assert v.steps[-1].outcome == "committed"
    _, _, v, _ = _run("rowdelta-starting-snapshot-expired-not-ancestor.yaml")
    assert v.steps[-1].check == "starting_ancestor"


def test_cleanup_keeps_what_a_retained_snapshot_lists():
    _, _, v, state = _run("expire-while-pending-reapplies-on-new-head.yaml")
    assert v.deleted_files == []
    # only snapshot 1's manifest list went
    assert sorted(state.store.deleted) == ["snap-1001-v1.avro"]
    _, _, v, state = _run("expire-deletes-file-pending-delete-references.yaml")
    assert v.deleted_files == ["a1"]
    assert not missing_objects(state)


def test_files_to_delete_is_empty_without_expired_snapshots():
    _, _, _, state = _run("expire-current-snapshot-refused.yaml")
    meta = state.metadata
    assert files_to_delete(state.store, meta, meta) == []


def test_readable_property_catches_stale_writer_on_lww():
    _, cfg, v, state = _run("stale-writer-after-expiry-unreadable-lww.yaml")
    assert v.readable is False
    found = [x for x in evaluate(Model(cfg), state) if x.property == "readable"]
    assert {x.details["object"] for x in found} == {"manifest list", "manifest"}
    # allowed only because the catalog is last-writer-wins; must hold for a CAS catalog
    assert expectation(None, "last_writer_wins", 2, found[0]).status == "allowed"
    assert expectation(None, "cas", 2, found[0]).status == "must_hold"


def test_expiry_leaves_no_false_violation():
    for name in ("expire-inside-window-cannot-determine-history.yaml",
                 "expire-starting-snapshot-window-still-known.yaml",
                 "expire-while-pending-reapplies-on-new-head.yaml"):
        _, cfg, _, state = _run(name)
        assert evaluate(Model(cfg), state) == [], name


@pytest.mark.parametrize("snapshots, message", [
    ("[]", "expire_snapshots needs snapshots"),
    ("[0]", "is not a snapshot number"),
    ("[x]", "is not a snapshot number"),
])
def test_bad_expire_input_names_the_line(snapshots, message):
    text = ("version: 1\ntable:\n  schema: {id: int}\nfiles:\n  a: {rows: [[1]]}\nsteps:\n"
            "  - commit: {op: append, add: [a]}\n"
            f"  - commit: {{op: expire_snapshots, snapshots: {snapshots}}}\n")
    with pytest.raises(InputError) as e:
        parse_scenario(load_yaml(text, "x.yaml"), "x.yaml")
    assert message in str(e.value) and "x.yaml:" in str(e.value)


def test_expire_takes_no_files():
    text = ("version: 1\ntable:\n  schema: {id: int}\nfiles:\n  a: {rows: [[1]]}\nsteps:\n"
            "  - commit: {op: expire_snapshots, snapshots: [1], add: [a]}\n")
    with pytest.raises(InputError) as e:
        parse_scenario(load_yaml(text, "x.yaml"), "x.yaml")
    assert "expire_snapshots does not take 'add'" in str(e.value)


# ---- what a step can assert about the snapshot it committed (issue 11, item 7)

_DETAILS = os.path.join(EXPIRY, "assert-snapshot-details.yaml")


def test_snapshot_details_pass_and_wrong_values_fail(tmp_path):
    sc = load_scenario(_DETAILS)
    verdict, _ = execute_scenario(sc, model_config(sc))
    assert verdict.passed, verdict.failures
    step = verdict.steps[2]
    assert (step.sequence_number, step.operation, step.data_files) == (3, "replace", ["a1", "c1"])
    assert step.summary["deleted-data-files"] == 1
    text = open(_DETAILS).read().replace(
        "{sequence_number: 3, operation: replace, summary: {added-data-files: 1, "
        "deleted-data-files: 1}, data_files: [a1, c1]}",
        "{sequence_number: 4, operation: delete, summary: {added-data-files: 2}, "
        "data_files: [a1], attempts: 2}")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    sc = load_scenario(str(bad))
    verdict, _ = execute_scenario(sc, model_config(sc))
    joined = "\n".join(verdict.failures)
    for want in ("expected sequence_number 4, got 3", "expected operation delete, got replace",
                 "expected summary added-data-files 2, got 1", "expected data_files ['a1']",
                 "expected attempts 2, got 1"):
        assert want in joined, joined


def test_attempts_count_a_lost_swap():
    text = ("version: 1\ntable:\n  schema: {id: int}\nfiles:\n  a: {rows: [[1]]}\n"
            "  b: {rows: [[2]]}\nsteps:\n"
            "  - begin: w1\n    op: fast_append\n    add: [a]\n"
            "  - write: w1\n  - refresh: w1\n"
            "  - commit: {op: fast_append, add: [b]}\n"
            "  - commit: w1\n    expect: {outcome: committed, attempts: 2, sequence_number: 2}\n")
    sc = parse_scenario(load_yaml(text, "x.yaml"), "x.yaml")
    verdict, _ = execute_scenario(sc, model_config(sc))
    assert verdict.passed, verdict.failures


@pytest.mark.parametrize("expect, message", [
    ("{sequence_number: 0}", "sequence_number must be a positive integer"),
    ("{operation: merge}", "unknown snapshot operation"),
    ("{summary: {total-records: 1}}", "unknown summary key"),
    ("{summary: {added-data-files: x}}", "must be a count"),
])
def test_bad_step_expect_names_the_line(expect, message):
    text = ("version: 1\ntable:\n  schema: {id: int}\nfiles:\n  a: {rows: [[1]]}\nsteps:\n"
            f"  - commit: {{op: append, add: [a]}}\n    expect: {expect}\n")
    with pytest.raises(InputError) as e:
        parse_scenario(load_yaml(text, "x.yaml"), "x.yaml")
    assert message in str(e.value) and "x.yaml:" in str(e.value)


# ---- the fault applied_failed (issue 11, item 6); Java: tests/conformance/test_java_phantom.py

def test_applied_failed_is_an_action_only_when_enabled():
    from icecheck.engines.config import build_model_config, mix_config
    from icecheck.models.system import CAS_APPLIED_FAILED, Model as M

    for flag in (False, True):
        cfg = build_model_config(mix_config("spark-3.5-cow-serializable", 1, 1, ("insert",),
                                            phantom_failures=flag), "<test>")
        m = M(cfg)
        s = m.initial()
        s = m.step(s, m.actions(s)[0])                  # begin (fused local steps)
        s = m.step(s, m.actions(s)[0])                  # refresh (+ validate, write metadata)
        kinds = {a.kind for a in m.actions(s)}
        assert (CAS_APPLIED_FAILED in kinds) == flag


def test_reading_a_deleted_object_ends_the_operation():
    path = os.path.join(BUILTIN_DIR, "catalog_faults",
                        "applied-but-failed-self-conflict-deletes-current-manifest-list.yaml")
    text = open(path).read().replace(
        "expect:\n  live_data_files: [b1]",
        "  - commit: {op: append, add: [c1]}\n    expect: {outcome: read_failed, message: "
        "\"Failed to open input stream for file: snap-\"}\nexpect:\n  live_data_files: [b1]"
    ).replace("  b1: {rows: [[1, b]]}\n", "  b1: {rows: [[1, b]]}\n  c1: {rows: [[2, c]]}\n")
    sc = parse_scenario(load_yaml(text, "x.yaml"), "x.yaml")
    verdict, _ = execute_scenario(sc, model_config(sc))
    assert verdict.passed, verdict.failures


def test_retain_last_keeps_refs_and_each_branchs_last_ancestors():
    """expireOlderThan(now).retainLast(N) (Spark's expire_snapshots procedure): every ref's
    snapshot and the last N ancestors of each branch stay, everything else goes."""
    from icecheck.models.expire import retained_by_age
    from icecheck.models.metadata import BRANCH, TAG, Snapshot, TableMetadata

    def snap(i, parent):
        return Snapshot(i, parent, i, "append", f"ml-{i}")
    # main: 1 <- 2 <- 3 <- 4; branch b: 2 <- 5; tag t on 1
    snaps = (snap(1, None), snap(2, 1), snap(3, 2), snap(4, 3), snap(5, 2))
    meta = TableMetadata("v.json", 5, 2, 5, 4, snaps, (1, 2, 3, 4, 5),
                         (("b", BRANCH, 5), ("t", TAG, 1)))
    assert retained_by_age(meta, 1) == (2, 3)      # kept: 4 (main), 5 (b), 1 (t)
    assert retained_by_age(meta, 2) == ()          # + 3 (main's 2nd), 2 (b's 2nd)
    untagged = TableMetadata("v.json", 5, 2, 5, 4, snaps, (1, 2, 3, 4, 5), (("b", BRANCH, 5),))
    assert retained_by_age(untagged, 1) == (1, 2, 3)


def test_expire_command_input_errors(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("version: 1\nid: x\nprofile: spark-3.5-cow-serializable\n"
                 "table: {schema: {id: int}}\nsteps:\n  - begin: w1\n"
                 "    command: {sql: EXPIRE, retain_last: 0}\n")
    with pytest.raises(InputError, match="retain_last must be an integer from 1 to 100") as e:
        load_scenario(str(p))
    assert e.value.line == 7


def test_explorations_reach_a_read_failure_after_an_expiry():
    """Explorations fuse a job's planning and its reads into one step, except where a writer
    may expire snapshots: there a job that reads files while its tasks run keeps ``write`` as
    a step of its own, so an expiry committed in between fails it ("File does not exist"), as
    scenarios and Spark show; the timeline says so. Without an expiring writer, nothing
    changes (begin writes at once)."""
    from icecheck.engines.config import build_model_config, mix_config
    from icecheck.engines.explicit import with_retries
    from icecheck.traces.execute import run_actions
    from icecheck.traces.explain import step_events
    cfg = with_retries(mix_config("spark-3.5-cow-serializable", 3, 1,
                                  ("merge", "delete", "expire"), 1), 0)
    model = Model(build_model_config(cfg))
    run = run_actions(model, ["w1.begin", "w2.begin#1", "w2.write", "w2.refresh", "w2.cas",
                              "w3.begin#2", "w3.refresh", "w3.cas", "w1.write"])
    w1 = run.final.writer("w1").history[-1]
    assert (w1.outcome, w1.message.startswith("File does not exist: ")) == ("read_failed", True)
    event = step_events(model, cfg.key, run)[-1]
    assert event.short.startswith("write: READ FAILED (File does not exist: ")
    assert "an expiry had deleted since it began" in event.sentence
    plain = with_retries(mix_config("spark-3.5-cow-serializable", 2, 1, ("merge", "delete"), 1), 0)
    model = Model(build_model_config(plain))
    s = model.step(model.initial(), model.actions(model.initial())[0])
    assert all(a.kind != "write" for a in model.actions(s))
