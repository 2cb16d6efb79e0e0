"""Conformance on real Spark 3.5 + Iceberg 1.10.2 (SQL level): the undelete anomaly and its
preventions, the double DELETE and the duplicate MERGE insert, each agreeing with the model.

One SparkSession for the whole test session (``spark_session.get_spark`` is a process
singleton); each comparison uses a fresh table. Skipped, with the reason, when pyspark, Java or
the Iceberg jars are unavailable. ~20-30 s on 2 cores (Spark start ~4 s, ~1-5 s a comparison).
"""

from __future__ import annotations

import os

import pytest

from icecheck.conformance.compare import AGREE, SKIPPED

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CMDS = os.path.join(ROOT, "scenarios", "builtin", "commands")
TRACES = os.path.join(ROOT, "traces")


def _scenario(target, name):
    from icecheck.scenarios.format import load_scenario

    return target.compare_scenario(load_scenario(os.path.join(CMDS, name)))


def _outcomes(c):
    return [(o.writer, o.java_outcome) for o in c.ops]


def _assert_agrees(c):
    assert c.status == AGREE, (c.status, c.reason, c.differences)
    assert c.real_rows == c.model_rows


def test_v2_snapshot_mor_undelete_reproduced(spark_target):
    """UPDATE id=1 commits; the DELETE of id=1 scanned before it also commits; the row survives."""
    c = _scenario(spark_target, "spark-mor-si-undelete.yaml")
    _assert_agrees(c)
    assert _outcomes(c)[-2:] == [("w1", "committed"), ("w2", "committed")]
    assert c.real_rows == [[1, "banana"], [2, "pear"]]


def test_serializable_prevents_undelete(spark_target):
    c = _scenario(spark_target, "spark-mor-serializable-prevents-undelete.yaml")
    _assert_agrees(c)
    last = c.ops[-1]
    assert last.java_outcome == "validation_failed"
    assert last.java_message.startswith("Found conflicting files that can contain records "
                                        "matching")


def test_v3_prevents_undelete(spark_target):
    c = _scenario(spark_target, "spark-mor-v3-prevents-undelete.yaml")
    _assert_agrees(c)
    last = c.ops[-1]
    assert last.java_outcome == "validation_failed"
    assert last.java_message.startswith("Found concurrently added DV for d1")


@pytest.mark.parametrize("name, rows", [
    ("spark-insert-overwrite-dynamic-replaces-concurrent-insert.yaml", [[3, "b"], [9, "a"]]),
    ("spark-insert-overwrite-static-partition.yaml", [[7, "c"]]),
])
def test_insert_overwrite_commits_unvalidated(spark_target, name, rows):
    """INSERT OVERWRITE (dynamic: ReplacePartitions; static: overwriteByRowFilter) validates
    nothing from SQL and replaces what the partition holds at commit, a concurrent INSERT too."""
    c = _scenario(spark_target, name)
    _assert_agrees(c)
    assert all(outcome == "committed" for _, outcome in _outcomes(c))
    assert c.real_rows == rows


# Row 0 is the bystander every generic exploration table starts with (engines/config.py).
@pytest.mark.parametrize("trace, outcomes, rows", [
    ("undelete-v2-mor-snapshot.json",
     [("w1", "committed"), ("w2", "committed")], [[0, "v0"], [1, "w1.1"]]),
    ("undelete-v2-mor-serializable-rejected.json",
     [("w1", "committed"), ("w2", "validation_failed")], [[0, "v0"], [1, "w1.1"]]),
    ("undelete-v3-mor-snapshot-rejected.json",
     [("w1", "committed"), ("w2", "validation_failed")], [[0, "v0"], [1, "w1.1"]]),
    # The finding: under serializable MOR v2 both DELETEs of the same row commit on Spark too.
    ("double-delete-v2-mor-serializable.json",
     [("w1", "committed"), ("w2", "committed")], [[0, "v0"]]),
    # Both MERGEs find key 2 absent and both insert it (snapshot isolation, no data check).
    ("lost-update-merge-mor-snapshot.json",
     [("w1", "committed"), ("w2", "committed")], [[1, "v0"], [2, "w1.1"], [2, "w2.1"]]),
])
def test_traces(spark_target, trace, outcomes, rows):
    c = spark_target.compare_trace(os.path.join(TRACES, trace))
    _assert_agrees(c)
    assert _outcomes(c) == outcomes
    assert c.real_rows == rows


def test_non_sql_inputs_are_skipped(spark_target):
    c = spark_target.compare_trace(os.path.join(TRACES, "lost-write-last-writer-wins.json"))
    assert c.status == SKIPPED and "last_writer_wins" in c.reason


def test_inferred_not_null_filter_is_detail_only():
    from icecheck.conformance.spark_target import inferred_not_null_only

    m = 'Found conflicting files that can contain records matching ref(name="id") == 1: [a]'
    s = ('Found conflicting files that can contain records matching (not_null(ref(name="id")) '
         'and ref(name="id") == 1): [a]')
    assert inferred_not_null_only(m, s)[0]
    assert not inferred_not_null_only(m.replace("== 1", "== 2"), s)[0]
    assert not inferred_not_null_only(m, s.replace("conflicting files", "other files"))[0]


def test_cli_spark_target(spark_target):
    from click.testing import CliRunner

    from icecheck.cli.main import main

    r = CliRunner().invoke(main, ["conform", "--target", "spark",
                                  os.path.join(TRACES, "undelete-v2-mor-snapshot.json")])
    assert r.exit_code == 0, r.output
    assert "real verdict (Spark)" in r.output and "--target spark" in r.output
    r = CliRunner().invoke(main, ["conform", "--target", "spark", "--random", "3"])
    assert r.exit_code == 2 and "only implemented for --target java" in r.output


def test_registry_unknown_target():
    from icecheck.conformance.targets import TargetUnavailable, get_target

    with pytest.raises(TargetUnavailable, match="not implemented"):
        get_target("nosuchengine")


def test_spark_procedures_agree(spark_target):
    """rewrite_position_delete_files (run whole) and expire_snapshots (deciding at its commit;
    a job whose data file it deleted fails reading it) on real Spark agree with the model."""
    from icecheck.scenarios.format import load_scenario
    c = _scenario(spark_target, "spark-rewrite-position-deletes-after-deletes.yaml")
    _assert_agrees(c)
    assert c.real_rows == [[0, "a"], [3, "a"]]
    c = spark_target.compare_scenario(load_scenario(os.path.join(
        ROOT, "scenarios", "builtin", "expiry", "spark-expire-retain-last-stale-writer.yaml")))
    _assert_agrees(c)
    assert c.ops[-1].java_outcome == "read_failed"


def test_merge_reads_its_whole_target_after_it_began_on_spark(spark_target):
    """A copy-on-write MERGE reads every file of its target after its source is computed, so
    one an expiry deleted after it began fails it though none of its rows matched ("File does
    not exist"); a merge-on-read MERGE in the same race fails on its expired starting snapshot
    instead (the mixed differential, seed 7, found the first: the model committed it)."""
    from icecheck.scenarios.format import load_scenario
    expiry = os.path.join(ROOT, "scenarios", "builtin", "expiry")
    c = spark_target.compare_scenario(load_scenario(os.path.join(
        expiry, "spark-merge-reads-a-file-expiry-deleted-after-it-began.yaml")))
    _assert_agrees(c)
    assert (c.ops[-1].java_outcome, c.ops[-1].java_message) == ("read_failed",
                                                                "File does not exist: d2")
    c = spark_target.compare_scenario(load_scenario(os.path.join(
        expiry, "spark-mor-merge-starting-snapshot-expired.yaml")))
    _assert_agrees(c)
    assert c.ops[-1].java_outcome == "validation_failed"
    assert "is not an ancestor of" in c.ops[-1].java_message


def test_compaction_file_selection_on_spark(spark_target):
    """rewrite_data_files with Spark's default selection (rewrite-all false): a partition with
    fewer than min-input-files small files is left alone unless its deletes are heavy enough;
    the model's "nothing to rewrite" (noop) is run on Spark too and commits no snapshot."""
    c = _scenario(spark_target, "spark-compaction-delete-thresholds.yaml")
    _assert_agrees(c)
    by_line = {op.label: (op.model_outcome, op.java_outcome) for op in c.ops}
    assert ("noop", "noop") in by_line.values()
    c = _scenario(spark_target, "spark-compaction-default-selection-skips-small-partitions.yaml")
    _assert_agrees(c)
    assert c.ops[-1].java_outcome == "committed"


def test_rewrite_manifests_on_spark(spark_target):
    """rewrite_manifests rewrites three data and two delete manifests into one each, then,
    run again, commits nothing (the model's noop, run on Spark too)."""
    c = _scenario(spark_target, "spark-rewrite-manifests.yaml")
    _assert_agrees(c)
    assert [op.java_outcome for op in c.ops][-2:] == ["committed", "noop"]


def test_add_files_procedure_refuses_a_listed_file_on_spark(spark_target):
    """Spark's add_files procedure, one call after the other: the second is refused with
    SparkTableUtil's message (compared whole, the real Parquet path named as the model's
    file), and with check_duplicate_files => false the file is registered again."""
    c = _scenario(spark_target, "spark-add-files-twice-second-refused.yaml")
    _assert_agrees(c)
    assert [op.java_outcome for op in c.ops][1:] == ["committed", "validation_failed",
                                                    "committed"]
    assert "Cannot complete import because data files to be imported already exist within " \
           "the target table: ext/backfill." in c.ops[2].java_message
    assert c.real_rows == [[1, "a"], [2, "b"], [2, "b"]]


def test_add_files_of_a_file_expiry_deleted_commits_an_empty_append_on_spark(spark_target):
    """The procedure finds no Parquet file in the folder once an expiry deleted it: it commits
    an empty append, and the deleted row does not come back."""
    from icecheck.scenarios.format import load_scenario

    c = spark_target.compare_scenario(load_scenario(os.path.join(
        ROOT, "scenarios", "builtin", "expiry",
        "spark-add-files-after-expiry-deleted-the-file.yaml")))
    _assert_agrees(c)
    assert c.ops[-1].java_outcome == "committed"
    assert c.real_rows == [[1, "a"]]


def test_compaction_partial_progress_on_spark(spark_target):
    """rewrite_data_files with partial progress runs on Spark (unpaused) and agrees."""
    c = _scenario(spark_target, "spark-compaction-partial-progress-unpaused.yaml")
    _assert_agrees(c)
    assert [op.java_outcome for op in c.ops][-2:] == ["committed", "committed"]


@pytest.mark.skipif(not os.path.isdir("/proc/self/net"), reason="needs Linux's /proc")
def test_conformance_session_listens_on_loopback_only(spark_target):
    """The real-Spark session's driver binds to loopback, not to the host's address."""
    import sys
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if tests not in sys.path:       # tests/_net_util.py, when this folder runs alone
        sys.path.insert(0, tests)
    from _net_util import is_loopback, jvm_pid, listening

    from icecheck.conformance.spark_session import get_spark
    addrs = listening(jvm_pid(get_spark()))
    assert addrs and all(is_loopback(a) for a in addrs), addrs


def _split_trace(tmp_path, mix, writer_profiles, prop, actions=None):
    """A trace of a two-writer all-Spark run whose writers use their own profiles, written to
    ``tmp_path``: the BFS counterexample of ``prop``, or ``actions`` (violating nothing)."""
    import json
    from dataclasses import replace

    from icecheck.engines.config import mix_config
    from icecheck.engines.explicit import search
    from icecheck.traces.execute import build_trace

    cfg = replace(mix_config("spark-3.5-mor-snapshot", 2, 1, mix, keys=1),
                  writer_profiles=writer_profiles)
    if actions is None:
        doc = search(cfg, engine="bfs", traces=True).violations[prop].trace
    else:
        doc = build_trace(cfg, actions, property=None, trace_id="t")
    path = tmp_path / f"{prop or 'run'}.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_spark_writers_on_per_command_profiles_share_one_table(tmp_path):
    """A merge-on-read DELETE at snapshot isolation beside an UPDATE at serializable is one
    real table (write.delete.isolation-level snapshot, write.update.isolation-level
    serializable): the spark target creates it with each command's own profile's mode and
    level (it used the first writer's profile for every command). Two DELETEs in different
    modes cannot share a table: skipped, saying why."""
    from icecheck.conformance import spark_target as st
    from icecheck.conformance.compare import trace_on_model
    from icecheck.models.profiles import get_profile

    run = trace_on_model(_split_trace(tmp_path, ("delete", "update"),
                                      ("", "spark-3.5-mor-serializable"), "undelete"))
    intents, _ = st._replay(run.config, run.actions)
    settings, why = st.command_settings(run.config, intents, get_profile(run.profile))
    assert why is None
    assert settings == {"write.delete.isolation-level": "snapshot",
                        "write.delete.mode": "merge-on-read",
                        "write.update.isolation-level": "serializable",
                        "write.update.mode": "merge-on-read"}
    props = st.table_properties(run.config.table, get_profile(run.profile), settings)
    assert props["write.delete.isolation-level"] == "snapshot"
    assert props["write.update.isolation-level"] == "serializable"

    run = trace_on_model(_split_trace(tmp_path, ("delete",), ("", "spark-3.5-cow-snapshot"),
                                      None, ["w1.begin", "w2.begin", "w1.refresh", "w1.cas",
                                             "w2.refresh", "w2.cas"]))
    intents, _ = st._replay(run.config, run.actions)
    settings, why = st.command_settings(run.config, intents, get_profile(run.profile))
    assert settings == {}
    assert why == ("one table has one write.delete.mode, and the writers ask for copy-on-write "
                   "(w2 DELETE (spark-3.5-cow-snapshot)) and merge-on-read "
                   "(w1 DELETE (spark-3.5-mor-snapshot))")


def test_snapshot_delete_beside_serializable_update_on_spark(spark_target, tmp_path):
    """The per-command split on real Spark: the snapshot-isolation merge-on-read DELETE
    commits after the serializable UPDATE of its row, and the updated row survives (the
    Vanlightly anomaly, which the DELETE's own level lets through), as the model says."""
    c = spark_target.compare_trace(_split_trace(tmp_path, ("delete", "update"),
                                                ("", "spark-3.5-mor-serializable"), "undelete"))
    _assert_agrees(c)
    assert sorted(_outcomes(c)) == [("w1", "committed"), ("w2", "committed")]
    assert any("'write.update.isolation-level'='serializable'" in s for s in c.statements)
