#!/usr/bin/env python3
"""Standalone reproducer: PyIceberg's ``delete("day != 0")`` deletes a row whose ``day`` is null
when that row's data file holds only nulls in ``day``, although the same filter does not select
it (``tbl.scan(row_filter="day != 0")`` does not return it).

Needs only PyIceberg (no icecheck):  pip install 'pyiceberg[sql-sqlite,pyarrow]==0.12.0'
Run:  python reproducers/pyiceberg_delete_not_equal_null_file.py      (exit 0: reproduced)

What happens: the rows (1, 0), (2, null), (3, 7) are appended once to a table partitioned by
``day`` (one data file per day, the null day's file holding only nulls in ``day``) and once to
an unpartitioned table (one file). ``delete("day != 0")`` then runs on both.
``Transaction.delete`` first drops whole, by metadata, every data file whose column metrics
prove that all its rows match the filter (``_DeleteFiles._compute_deletes`` with
``_StrictMetricsEvaluator``), and ``visit_not_equal`` answers ROWS_MUST_MATCH for a column
holding only nulls ("no row can have a value equal to the literal"), so the null day's file
goes. The files it rewrites instead are filtered with the complement of the filter, which keeps
nulls: in the unpartitioned table (2, null) survives. Same rows, same delete, different result
by file layout; ``NOT IN`` and ``NOT (day = 0)`` behave the same.

icecheck: traces/lost-write-pyiceberg-delete-not-equal-null-file.json,
scenarios/builtin/pyiceberg/serializable-delete-not-equal-drops-null-only-file.yaml and
serializable-delete-not-equal-keeps-null-in-shared-file.yaml; docs/findings.md.
"""

import shutil
import sys
import tempfile
import warnings

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import IntegerType, NestedField


def _rows(table) -> list:
    return sorted(((r["id"], r["day"]) for r in table.scan().to_arrow().to_pylist()),
                  key=repr)


def main() -> int:
    tmp = tempfile.mkdtemp(prefix="delete-null-")
    try:
        catalog = SqlCatalog("repro", uri=f"sqlite:///{tmp}/catalog.db", warehouse=f"file://{tmp}")
        catalog.create_namespace("db")
        schema = Schema(NestedField(1, "id", IntegerType(), required=False),
                        NestedField(2, "day", IntegerType(), required=False))
        by_day = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "day"))
        data = pa.table({"id": pa.array([1, 2, 3], pa.int32()),
                         "day": pa.array([0, None, 7], pa.int32())})
        results = {}
        for name, spec in (("partitioned", by_day), ("unpartitioned", PartitionSpec())):
            table = catalog.create_table(f"db.{name}", schema, partition_spec=spec)
            table.append(data)
            selected = sorted(((r["id"], r["day"]) for r in
                               table.scan(row_filter="day != 0").to_arrow().to_pylist()), key=repr)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                table.delete("day != 0")
            left = _rows(catalog.load_table(f"db.{name}"))
            results[name] = (selected, left)
            print(f"{name:13}: scan(row_filter='day != 0') returns {selected}; "
                  f"after delete('day != 0') the table holds {left}")
        lost = (results["partitioned"] == ([(3, 7)], [(1, 0)])
                and results["unpartitioned"] == ([(3, 7)], [(1, 0), (2, None)]))
        print(f"{'REPRODUCED' if lost else 'NOT REPRODUCED'}: (2, None) "
              f"{'was deleted only where its file held nothing but nulls in day' if lost else 'kept'}")
        return 0 if lost else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
