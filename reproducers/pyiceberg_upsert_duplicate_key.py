#!/usr/bin/env python3
"""Standalone reproducer: two concurrent PyIceberg upserts of an absent key both insert it.

Needs only PyIceberg (no icecheck):  pip install 'pyiceberg[sql-sqlite,pyarrow]==0.12.0'
Run:  python reproducers/pyiceberg_upsert_duplicate_key.py      (exit 0: reproduced)

What happens: the table has ids 1 and 2. Two writers each open a transaction on the same
snapshot and upsert id 3 (join on id): each finds no row with id 3, so PyIceberg's upsert writes
the row with a plain fast append, which validates nothing, even with
write.*.isolation-level = serializable. Both commit (the second after a retry), and the table
ends with two rows for id 3. No serial order of the two upserts leaves two rows: the second
upsert would have found id 3 and updated it.

icecheck: traces/upsert-duplicate-pyiceberg-serializable.json,
scenarios/builtin/pyiceberg/serializable-upsert-vs-upsert-absent-key.yaml.
"""

import shutil
import sys
import tempfile
import warnings

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import IntegerType, NestedField, StringType


def main() -> int:
    tmp = tempfile.mkdtemp(prefix="upsert-dup-")
    try:
        catalog = SqlCatalog("repro", uri=f"sqlite:///{tmp}/catalog.db", warehouse=f"file://{tmp}")
        catalog.create_namespace("db")
        schema = Schema(NestedField(1, "id", IntegerType(), required=False),
                        NestedField(2, "category", StringType(), required=False))
        table = catalog.create_table(
            "db.t", schema,
            properties={f"write.{op}.isolation-level": "serializable"
                        for op in ("delete", "update", "merge")})
        arrow = pa.schema([pa.field("id", pa.int32()), pa.field("category", pa.string())])

        def rows(*r):
            return pa.Table.from_pylist([{"id": i, "category": c} for i, c in r], schema=arrow)

        table.append(rows((1, "a"), (2, "a")))

        # Two writers start from the same snapshot and stage their upserts.
        tx1 = catalog.load_table("db.t").transaction()
        tx2 = catalog.load_table("db.t").transaction()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tx1.upsert(rows((3, "x")), join_cols=["id"])
            tx2.upsert(rows((3, "y")), join_cols=["id"])
            tx1.commit_transaction()
            tx2.commit_transaction()          # loses the swap, retries, validates nothing

        final = sorted(catalog.load_table("db.t").scan().to_arrow().to_pylist(),
                       key=lambda r: (r["id"], r["category"]))
        print("final rows:", [(r["id"], r["category"]) for r in final])
        threes = [r for r in final if r["id"] == 3]
        if len(threes) == 2:
            print("REPRODUCED: id 3 has two rows (both upserts inserted it)")
            return 0
        print("NOT REPRODUCED: id 3 has", len(threes), "row(s)")
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
