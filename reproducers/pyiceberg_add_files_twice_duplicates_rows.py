#!/usr/bin/env python3
"""Standalone reproducer: two overlapping PyIceberg ``add_files`` of one Parquet file both
commit it, although ``check_duplicate_files`` is on; the table then reads its rows twice.

Needs only PyIceberg (no icecheck):  pip install 'pyiceberg[sql-sqlite,pyarrow]==0.12.0'
Run:  python reproducers/pyiceberg_add_files_twice_duplicates_rows.py      (exit 0: reproduced)
      ... --control     the same two calls one after the other: the second is refused

What happens: a backfill job writes ``backfill.parquet`` (one row, id 2) outside the table and
registers it with ``Transaction.add_files([path])``; an orchestrator retry (or a second run of
the job) does the same while the first is still committing. ``add_files`` first refuses a file
the table already references (``check_duplicate_files=True``, the default:
``_find_referenced_data_files`` reads the data manifests of the snapshot the transaction
began at), then stages a fast append. Both transactions begin on the same snapshot, so both
checks pass. The first commits; the second loses the swap, and its retry
(``Transaction._rebuild_snapshot_updates``) re-runs only the snapshot producer, never the
duplicate check, and the fast append validates nothing (``_FastAppendFiles.
_validate_concurrency`` is a no-op). Both commit: the table's manifests list the file twice,
every scan returns its row twice, and a later ``add_files`` of the file is refused naming it
twice. Run one after the other (``--control``), the second call is refused with
"Cannot add files that are already referenced by table, files: ...".

Spark's ``CALL system.add_files`` checks the same way, once, before its
``newAppend().commit()`` (SparkTableUtil.importSparkPartitions, Iceberg 1.10); icecheck's
model of it commits twice too, but that is not confirmed on Spark here.

icecheck: traces/duplicate-keys-pyiceberg-add-files-twice.json,
scenarios/builtin/pyiceberg/add-files-twice-concurrently-duplicates-rows.yaml.
"""

import os
import shutil
import sys
import tempfile
import warnings

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import IntegerType, NestedField, StringType


def main(control: bool = False) -> int:
    tmp = tempfile.mkdtemp(prefix="add-files-twice-")
    try:
        catalog = SqlCatalog("repro", uri=f"sqlite:///{tmp}/catalog.db",
                             warehouse=f"file://{tmp}/warehouse")
        catalog.create_namespace("db")
        schema = Schema(NestedField(1, "id", IntegerType(), required=False),
                        NestedField(2, "category", StringType(), required=False))
        table = catalog.create_table("db.t", schema)
        arrow = pa.schema([pa.field("id", pa.int32()), pa.field("category", pa.string())])

        def rows(*r):
            return pa.Table.from_pylist([{"id": i, "category": c} for i, c in r], schema=arrow)

        table.append(rows((1, "a")))
        os.makedirs(f"{tmp}/ext")
        path = f"{tmp}/ext/backfill.parquet"
        pq.write_table(rows((2, "b")), path)
        uri = f"file://{path}"

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if control:
                catalog.load_table("db.t").add_files([uri])
                try:
                    catalog.load_table("db.t").add_files([uri])
                except ValueError as e:
                    print("second add_files refused:", e)
                    return 0
                print("CONTROL FAILED: the second add_files was not refused")
                return 1
            # Two jobs start from the same snapshot and stage add_files of the same file.
            tx1 = catalog.load_table("db.t").transaction()
            tx2 = catalog.load_table("db.t").transaction()
            tx1.add_files([uri])              # checks: not referenced
            tx2.add_files([uri])              # checks: not referenced
            tx1.commit_transaction()
            tx2.commit_transaction()          # loses the swap, retries, checks nothing

        t = catalog.load_table("db.t")
        final = sorted((r["id"], r["category"]) for r in t.scan().to_arrow().to_pylist())
        listed = [e.data_file.file_path for m in t.current_snapshot().manifests(t.io)
                  for e in m.fetch_manifest_entry(t.io, discard_deleted=True)
                  if e.data_file.file_path == uri]
        print("final rows:", final)
        print(f"live manifest entries for {uri}: {len(listed)}")
        if final.count((2, "b")) == 2 and len(listed) == 2:
            print("REPRODUCED: the file is listed twice and its row is read twice")
            return 0
        print("NOT REPRODUCED")
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(control="--control" in sys.argv[1:]))
