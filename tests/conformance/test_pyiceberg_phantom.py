"""A commit the catalog applied although it answered CommitFailedException, on real PyIceberg 0.12.

No conformance target can inject this fault into a scenario run, so the test does it with
PyIceberg's own catalog: the first ``commit_table`` call of writer w1 commits for real, lets a
second writer's append land on top, and then raises CommitFailedException, which is what a
client sees when a resent request or a lost response hides an applied commit. PyIceberg's
``Transaction.commit_transaction`` retries; the test checks that it ends as the model's built-in
scenario (scenarios/builtin/catalog_faults/pyiceberg-applied-but-failed-is-idempotent.yaml)
says: w1 committed once, w2's append kept, no rollback, no duplicate rows.
"""

from __future__ import annotations

import os

from icecheck.scenarios import BUILTIN_DIR
from icecheck.scenarios.format import load_scenario
from icecheck.scenarios.runner import execute_scenario, model_config

from conftest import ready_target


def test_pyiceberg_retry_finds_its_applied_snapshot(tmp_path):
    ready_target("pyiceberg")
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.exceptions import CommitFailedException

    sc = load_scenario(os.path.join(BUILTIN_DIR, "catalog_faults",
                                    "pyiceberg-applied-but-failed-is-idempotent.yaml"))
    verdict, _ = execute_scenario(sc, model_config(sc))
    assert verdict.passed, verdict.failures

    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int32()), pa.field("v", pa.string())])
    table = catalog.create_table("db.t", schema=schema,
                                 properties={"commit.retry.min-wait-ms": "1"})

    def rows(values):
        return pa.Table.from_pylist([{"id": i, "v": v} for i, v in values], schema=schema)

    table.append(rows([(0, "v0")]))
    w1 = catalog.load_table("db.t")
    w2 = catalog.load_table("db.t")
    real_commit = catalog.commit_table
    calls = []

    def applied_but_failed(tbl, requirements, updates):
        response = real_commit(tbl, requirements, updates)
        calls.append(response)
        if len(calls) == 1:               # w1's first attempt: applied, then another append
            w2.append(rows([(2, "w2")]))
            raise CommitFailedException("the swap applied, but the client was told it failed")
        return response

    catalog.commit_table = applied_but_failed
    w1.append(rows([(1, "w1")]))          # retries once, and finds its snapshot in the table
    catalog.commit_table = real_commit

    final = catalog.load_table("db.t")
    got = sorted((r["id"], r["v"]) for r in final.scan().to_arrow().to_pylist())
    assert [list(r) for r in got] == verdict.rows == [[0, "v0"], [1, "w1"], [2, "w2"]]
    # w1's commit landed once (calls: its applied first attempt and w2's append, nothing more)
    assert len(calls) == 2
    assert len(final.metadata.snapshots) == 3
    assert final.metadata.current_snapshot_id == final.metadata.snapshots[-1].snapshot_id
