#!/usr/bin/env python3
"""Standalone reproducer: a Spark merge-on-read DELETE commits a position delete against a data
file a PyIceberg delete removed while the DELETE ran, under serializable isolation; both report
deleting the row.

Needs PySpark 3.5 with the Iceberg Spark runtime, PyIceberg 0.12 with SQLite support, and the
SQLite JDBC driver (no icecheck):
    pip install pyspark==3.5.* 'pyiceberg[sql-sqlite,pyarrow]==0.12.0'
    apt-get install libxerial-sqlite-jdbc-java      # /usr/share/java/sqlite-jdbc.jar
    python reproducers/mixed_spark_mor_delete_after_pyiceberg_delete.py   # fetches
        org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0 from Maven Central
    ICEBERG_SPARK_JARS=/path/a.jar,/path/b.jar python reproducers/mixed_spark_mor_delete_after_pyiceberg_delete.py
    ... --control      # the same race with a Spark UPDATE instead: refused, as it should be
Run with SQLITE_JDBC_JAR=/path/sqlite-jdbc.jar if the driver lives elsewhere. Exit 0 when it
reproduces (with --control: when the UPDATE is refused).

One shared catalog, as in mixed_spark_merge_pyiceberg_upsert_duplicate.py: PyIceberg's
SqlCatalog and Iceberg's JdbcCatalog (inside Spark) on one SQLite database and warehouse.

Sequence (icecheck's scenario, below):
1. the table holds two data files, d1 = (0, 2) and d2 = (1);
2. the Spark job runs DELETE FROM t WHERE id = 1 (merge-on-read, serializable); a Python UDF in
   its condition holds it after its scan (its snapshot is pinned), as a long job would be;
3. a PyIceberg script runs tbl.delete("id = 1"): d2 holds only id 1, so it drops d2 whole and
   commits a "delete" snapshot;
4. the Spark DELETE resumes: its RowDelta validates (validateFromSnapshot, the conflict filter,
   validateDataFilesExist([d2]), validateNoConflictingDataFiles) and commits a position delete
   against d2.
validateDataFilesExist did not see d2 go: Spark enables validateDeletedFiles() only for UPDATE
and MERGE (SparkPositionDeltaWrite.java, 1.10.x, lines 246-256), so MergingSnapshotProducer
looks only at the window's "overwrite" and "replace" snapshots, not the "delete" PyIceberg
committed. Both commands report deleting row 1 (PyIceberg's snapshot: deleted-records 1;
Spark's: added-position-deletes 1), which no serial order allows (a lost update, G-single);
the table ends as a serial order would leave it, with a position delete naming a file that is
no longer in the table. The same as two concurrent Spark merge-on-read DELETEs of one row
(spark_mor_delete_races.py, part 2), across engines. --control runs the race with
UPDATE t SET v = 'spark' WHERE id = 1: its validateDeletedFiles() sees d2 removed and Spark
refuses it ("Cannot commit, missing data files").

icecheck: traces/isolation-mixed-spark-mor-delete-pyiceberg-delete.json (found by a mixed BFS:
--profile spark-3.5-mor-serializable --writer-profile w2=pyiceberg-0.12-serializable
--writers 2 --ops 2 --mix delete,update), scenarios/builtin/commands/mixed-spark-mor-delete-
after-pyiceberg-delete-removed-its-file.yaml and its control mixed-spark-mor-update-after-
pyiceberg-delete-removed-its-file-refused.yaml.
"""

import logging
import os
import shutil
import sys
import tempfile
import threading
import time
import warnings

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import IntegerType, NestedField, StringType
from pyspark.sql import SparkSession
from pyspark.sql.types import BooleanType

CATALOG = "demo"
SQLITE_JDBC = os.environ.get("SQLITE_JDBC_JAR", "/usr/share/java/sqlite-jdbc.jar")
GATE_DIR = tempfile.mkdtemp(prefix="gate-")


def gate(token, _value):
    """Block the statement (in its Python worker) until the driver writes TOKEN.go."""
    open(os.path.join(GATE_DIR, f"{token}.started"), "w").close()
    deadline = time.time() + 120
    while not os.path.exists(os.path.join(GATE_DIR, f"{token}.go")):
        if time.time() > deadline:
            raise RuntimeError("gate never opened")
        time.sleep(0.02)
    return True


def arrow(rows):
    schema = pa.schema([pa.field("id", pa.int32()), pa.field("v", pa.string())])
    return pa.table({"id": pa.array([r[0] for r in rows], pa.int32()),
                     "v": pa.array([r[1] for r in rows], pa.string())}, schema=schema)


def session(db: str, warehouse: str) -> SparkSession:
    b = (SparkSession.builder.master("local[2]").appName("iceberg-mixed-deletes")
         .config("spark.driver.bindAddress", "127.0.0.1")  # listen on loopback only
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.sql.extensions",
                 "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config(f"spark.sql.catalog.{CATALOG}", "org.apache.iceberg.spark.SparkCatalog")
         .config(f"spark.sql.catalog.{CATALOG}.catalog-impl",
                 "org.apache.iceberg.jdbc.JdbcCatalog")
         .config(f"spark.sql.catalog.{CATALOG}.uri", f"jdbc:sqlite:{db}")
         .config(f"spark.sql.catalog.{CATALOG}.warehouse", warehouse)
         .config(f"spark.sql.catalog.{CATALOG}.jdbc.init-catalog-tables", "false")
         .config(f"spark.sql.catalog.{CATALOG}.cache-enabled", "false")
         .config("spark.driver.extraClassPath", SQLITE_JDBC)
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "1"))
    jars = os.environ.get("ICEBERG_SPARK_JARS")
    b = (b.config("spark.jars", jars) if jars else
         b.config("spark.jars.packages", "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0"))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def held(spark, sql: str, token: str, meanwhile) -> str:
    """Run ``sql`` (whose condition calls gate(token, ...)) up to its gate, run ``meanwhile``,
    release the statement and return how it ended."""
    outcome = {}

    def body():
        s = spark.newSession()                 # the Spark job: its own session
        s.udf.register("gate", gate, BooleanType())
        try:
            s.sql(sql).collect()
            outcome["spark"] = "committed"
        except Exception as e:  # noqa: BLE001 - reported
            # py4j's first line names only the call: keep Iceberg's own message
            text = str(e)
            cause = [ln for ln in text.splitlines() if "Exception:" in ln]
            outcome["spark"] = f"failed: {(cause[0] if cause else text.splitlines()[0])[:300]}"

    th = threading.Thread(target=body)
    th.start()
    while not os.path.exists(os.path.join(GATE_DIR, f"{token}.started")):
        if not th.is_alive():
            raise RuntimeError(f"statement ended before its gate: {outcome}")
        time.sleep(0.02)
    meanwhile()
    open(os.path.join(GATE_DIR, f"{token}.go"), "w").close()
    th.join()
    return outcome["spark"]


def main(control: bool) -> int:
    root = tempfile.mkdtemp(prefix="mixed-")
    db, warehouse = os.path.join(root, "catalog.db"), "file://" + os.path.join(root, "wh")
    catalog = SqlCatalog(CATALOG, uri=f"sqlite:///{db}", warehouse=warehouse)
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.events",
        schema=Schema(NestedField(1, "id", IntegerType(), required=False),
                      NestedField(2, "v", StringType(), required=False)),
        properties={"format-version": "2", "write.delete.mode": "merge-on-read",
                    "write.update.mode": "merge-on-read",
                    "write.delete.isolation-level": "serializable",
                    "write.update.isolation-level": "serializable",
                    "commit.retry.min-wait-ms": "1"})
    table.append(arrow([(0, "v0"), (2, "v0")]))      # d1
    table.append(arrow([(1, "v0")]))                 # d2: only id 1
    spark = session(db, warehouse)
    logging.getLogger("pyiceberg").setLevel(logging.ERROR)
    t = f"{CATALOG}.db.events"
    script = {}

    def pyiceberg_delete():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                catalog.load_table("db.events").delete("id = 1")
            script["outcome"] = "committed"
        except Exception as e:  # noqa: BLE001 - reported
            script["outcome"] = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}"

    try:
        d2 = [r[0] for r in spark.sql(f"SELECT file_path FROM {t}.files WHERE "
                                      f"record_count = 1").collect()]
        if control:
            sql = f"UPDATE {t} SET v = 'spark' WHERE id = 1 AND gate('c', id)"
            spark_outcome = held(spark, sql, "c", pyiceberg_delete)
        else:
            sql = f"DELETE FROM {t} WHERE id = 1 AND gate('d', id)"
            spark_outcome = held(spark, sql, "d", pyiceberg_delete)
        rows = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect())
        snaps = spark.sql(f"SELECT operation, summary FROM {t}.snapshots "
                          f"ORDER BY committed_at").collect()
        live = {r[0] for r in spark.sql(f"SELECT file_path FROM {t}.files").collect()}
        targets = sorted({r[0] for r in spark.sql(
            f"SELECT file_path FROM {t}.position_deletes").collect()})
        print(f"PyIceberg delete {script.get('outcome')}; Spark {sql.split()[0]} {spark_outcome}")
        print(f"rows {rows}; snapshot operations {[s[0] for s in snaps]}")
        for op, summary in snaps[2:]:
            print(f"  {op}: deleted-records {summary.get('deleted-records')}, "
                  f"added-position-deletes {summary.get('added-position-deletes')}")
        print(f"position deletes target {targets}; d2 {d2}; d2 still in the table: "
              f"{bool(set(d2) & live)}")
        if control:
            if (script.get("outcome") == "committed" and spark_outcome.startswith("failed")
                    and "Cannot commit, missing data files" in spark_outcome):
                print("CONTROL OK: the UPDATE, which validates deleted files, was refused")
                return 0
            print("CONTROL NOT AS EXPECTED")
            return 1
        # PyIceberg's snapshot, then Spark's (a RowDelta of deletes only: also "delete")
        py_summary, spark_summary = (snaps[2][1], snaps[3][1]) if len(snaps) == 4 else ({}, {})
        if (script.get("outcome") == "committed" and spark_outcome == "committed"
                and py_summary.get("deleted-records") == "1"
                and spark_summary.get("added-position-deletes") == "1"
                and targets == d2 and not set(d2) & live and rows == [(0, "v0"), (2, "v0")]):
            print("REPRODUCED: both the PyIceberg delete and the Spark DELETE committed the "
                  "deletion of id 1 under serializable isolation; Spark's position delete names "
                  "a file PyIceberg had removed")
            return 0
        print("NOT REPRODUCED")
        return 1
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(GATE_DIR, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main("--control" in sys.argv[1:]))
