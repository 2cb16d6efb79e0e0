"""A commit that applied although the catalog answered CommitFailedException, on real Java 1.10.2.

The Java driver cannot inject this fault into a scenario run (its catalogs swap and answer
truthfully), so these tests reproduce it with Java's own API: ``apply()`` the operation (its
snapshot id is then fixed, as in SnapshotProducer's first attempt), let the catalog apply that
snapshot (``TableOperations.commit``), then run the operation's ``commit()``, which is exactly
what SnapshotProducer does when its first attempt threw CommitFailedException: refresh,
re-apply with the same snapshot id, validate, swap. Each test checks that Java ends as the
model's built-in scenario (scenarios/builtin/catalog_faults/) says.
"""

from __future__ import annotations

import os

import pytest

from icecheck.scenarios import BUILTIN_DIR
from icecheck.scenarios.format import load_scenario
from icecheck.scenarios.runner import execute_scenario, model_config

FAULTS = os.path.join(BUILTIN_DIR, "catalog_faults")


def _model(name):
    sc = load_scenario(os.path.join(FAULTS, name))
    verdict, _ = execute_scenario(sc, model_config(sc))
    assert verdict.passed, verdict.failures
    return sc, verdict


def _phantom_apply(jt, update):
    """The catalog applies the operation's first attempt; the client is told it failed."""
    snap = update.apply()
    table = jt.load()
    ops = table.operations()
    base = ops.refresh()
    updated = jt.jvm.org.apache.iceberg.TableMetadata.buildFrom(base) \
        .setBranchSnapshot(snap, "main").build()
    ops.commit(base, updated)
    return snap


def test_retry_rolls_back_a_concurrent_commit(java):
    from icecheck.conformance.java_driver import JavaTable

    sc, verdict = _model("applied-but-failed-retry-rolls-back-concurrent-commit.yaml")
    f = sc.files
    with JavaTable(sc.table, "jdbc") as jt:
        jt.load().newFastAppend().appendFile(jt.java_file(f["a1"])).commit()
        w1 = jt.load().newFastAppend().appendFile(jt.java_file(f["b1"]))
        snap = _phantom_apply(jt, w1)
        jt.load().newFastAppend().appendFile(jt.java_file(f["c1"])).commit()
        other = jt.load().currentSnapshot().snapshotId()
        w1.commit()                                   # the retry after CommitFailedException
        current = jt.load().currentSnapshot()
        assert current.snapshotId() == snap.snapshotId() != other
        assert current.sequenceNumber() == verdict.steps[-1].sequence_number == 2
        assert list(jt.live_files()[0]) == verdict.live_data_files == ["a1", "b1"]


def test_self_conflict_clean_up_deletes_the_current_manifest_list(java):
    from py4j.protocol import Py4JJavaError

    from icecheck.conformance.java_driver import JavaTable

    sc, verdict = _model("applied-but-failed-self-conflict-deletes-current-manifest-list.yaml")
    assert verdict.readable is False
    f = sc.files
    with JavaTable(sc.table, "jdbc") as jt:
        jt.load().newFastAppend().appendFile(jt.java_file(f["a1"])).commit()
        t = jt.load()
        ex = jt.jvm.org.apache.iceberg.expressions.Expressions
        w1 = (t.newOverwrite().deleteFile(jt.java_file(f["a1"])).addFile(jt.java_file(f["b1"]))
              .validateFromSnapshot(t.currentSnapshot().snapshotId())
              .conflictDetectionFilter(ex.alwaysTrue())
              .validateNoConflictingData().validateNoConflictingDeletes())
        snap = _phantom_apply(jt, w1)
        manifest_list = snap.manifestListLocation().replace("file:", "")
        assert os.path.exists(manifest_list)
        with pytest.raises(Py4JJavaError) as e:
            w1.commit()
        jexc = e.value.java_exception
        assert jexc.getClass().getName() == "org.apache.iceberg.exceptions.ValidationException"
        message = jt.readable(jexc.getMessage())
        assert message == verdict.steps[-1].message
        assert jt.load().currentSnapshot().snapshotId() == snap.snapshotId()
        assert not os.path.exists(manifest_list)     # cleanAll deleted the current one
        with pytest.raises(Py4JJavaError):
            jt.live_files()                           # the table can no longer be read


def test_transaction_retry_rolls_back_a_concurrent_commit(java):
    """A transaction's commit the catalog applied while answering CommitFailedException:
    commitTransaction's retry re-commits each staged update, which rolls main back to its own
    (cached) snapshot, dropping a commit made on top in between (as the model's scenario)."""
    from icecheck.conformance.java_driver import JavaTable

    sc, verdict = _model("applied-but-failed-transaction-rolls-back-concurrent-commit.yaml")
    f = sc.files
    with JavaTable(sc.table, "jdbc") as jt:
        jt.load().newFastAppend().appendFile(jt.java_file(f["a1"])).commit()
        txn = jt.load().newTransaction()
        txn.newFastAppend().appendFile(jt.java_file(f["b1"])).commit()
        txn.newFastAppend().appendFile(jt.java_file(f["b2"])).commit()
        staged = txn.currentMetadata()
        ops = jt.load().operations()
        ops.commit(ops.refresh(), staged)     # applied; the client is told it failed
        jt.load().newFastAppend().appendFile(jt.java_file(f["c1"])).commit()
        other = jt.load().currentSnapshot().snapshotId()
        txn.commitTransaction()               # the retry after CommitFailedException
        current = jt.load().currentSnapshot()
        assert current.snapshotId() == staged.currentSnapshot().snapshotId() != other
        assert current.sequenceNumber() == verdict.steps[-1].sequence_number == 3
        assert sorted(jt.live_files()[0]) == verdict.live_data_files == ["a1", "b1", "b2"]
