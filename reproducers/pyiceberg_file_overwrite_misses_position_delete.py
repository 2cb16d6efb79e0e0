#!/usr/bin/env python3
"""Standalone reproducer: a PyIceberg script that swaps a data file with the file-level API
brings back a row a Spark merge-on-read DELETE removed, when any other commit lands after the
DELETE and before the script commits.

Needs PySpark 3.5 with the Iceberg Spark runtime, PyIceberg 0.12 with SQLite support, and the
SQLite JDBC driver (no icecheck):
    pip install pyspark==3.5.* 'pyiceberg[sql-sqlite,pyarrow]==0.12.0'
    apt-get install libxerial-sqlite-jdbc-java      # /usr/share/java/sqlite-jdbc.jar
    python reproducers/pyiceberg_file_overwrite_misses_position_delete.py   # fetches
        org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0 from Maven Central
    ICEBERG_SPARK_JARS=/path/a.jar,/path/b.jar python reproducers/pyiceberg_file_overwrite_misses_position_delete.py
Run with SQLITE_JDBC_JAR=/path/sqlite-jdbc.jar if the driver lives elsewhere. Exit 0 when it
reproduces. ``--control`` leaves out step 3 (the later commit): PyIceberg then refuses the
script ("Cannot commit, found new delete for replace data file ..."), and the exit is 0 when it
does.

One shared catalog: PyIceberg's SqlCatalog and Iceberg's JdbcCatalog (inside Spark) use the
same SQLite database and the same file:// warehouse.

icecheck: scenarios/builtin/commands/mixed-pyiceberg-file-overwrite-misses-position-delete-followed-by-commit.yaml
(and its control, mixed-pyiceberg-file-overwrite-fails-on-position-delete-at-head.yaml).

Sequence:
0. the table (format v2, write.delete.mode=merge-on-read) holds file A = {(1,a,v0), (2,a,v0)}
   and file B = {(3,b,v0)};
1. the PyIceberg script reads file A, writes a copy A' with id 1 updated, and stages the swap
   in a transaction: tx.update_snapshot().overwrite(), delete_data_file(A), append_data_file(A');
2. a Spark job runs DELETE FROM t WHERE id = 2: a position delete file for A (sequence 4);
3. a Spark job runs DELETE FROM t WHERE id = 3 (any commit will do; sequence 5);
4. the script calls tx.commit_transaction(): the swap loses the race, PyIceberg refreshes,
   validates and commits.
Step 4's validation, _validate_no_new_deletes_for_data_files, should find step 2's delete for
A. Its caller, _SnapshotProducer._validate_concurrency (pyiceberg/table/update/snapshot.py),
passes the catalog head as the function's ``starting_snapshot``, and the function takes the
sequence number deletes must reach from it: the head's (5), not the script's base (3), so the
delete (4) does not count. A and its rows go, A' brings id 2 back, and the delete file stays
in the table pointing at a file that is gone. Java's validateNoNewDeletesForDataFiles uses the
starting snapshot's sequence number; without step 3, PyIceberg refuses the script too.
"""

import logging
import os
import shutil
import sys
import tempfile
import warnings

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.io.pyarrow import _dataframe_to_data_files
from pyiceberg.schema import Schema
from pyiceberg.types import IntegerType, NestedField, StringType
from pyspark.sql import SparkSession

CATALOG = "demo"
SQLITE_JDBC = os.environ.get("SQLITE_JDBC_JAR", "/usr/share/java/sqlite-jdbc.jar")


def arrow(rows):
    schema = pa.schema([pa.field("id", pa.int32()), pa.field("cat", pa.string()),
                        pa.field("v", pa.string())])
    return pa.table({"id": pa.array([r[0] for r in rows], pa.int32()),
                     "cat": pa.array([r[1] for r in rows], pa.string()),
                     "v": pa.array([r[2] for r in rows], pa.string())}, schema=schema)


def spark_session(db: str, warehouse: str) -> SparkSession:
    b = (SparkSession.builder.master("local[2]").appName("iceberg-mixed-engines")
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


def main(control: bool) -> int:
    root = tempfile.mkdtemp(prefix="mixed-")
    db, warehouse = os.path.join(root, "catalog.db"), "file://" + os.path.join(root, "wh")
    catalog = SqlCatalog(CATALOG, uri=f"sqlite:///{db}", warehouse=warehouse)
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.events",
        schema=Schema(NestedField(1, "id", IntegerType(), required=False),
                      NestedField(2, "cat", StringType(), required=False),
                      NestedField(3, "v", StringType(), required=False)),
        properties={"format-version": "2", "write.delete.mode": "merge-on-read",
                    "write.update.mode": "merge-on-read", "write.merge.mode": "merge-on-read",
                    "commit.retry.min-wait-ms": "1"})
    table.append(arrow([(1, "a", "v0"), (2, "a", "v0")]))    # file A
    table.append(arrow([(3, "b", "v0")]))                    # file B
    spark = spark_session(db, warehouse)
    logging.getLogger("pyiceberg").setLevel(logging.ERROR)   # "Commit failed, retrying" is expected
    t = f"{CATALOG}.db.events"
    try:
        # 1. the script: read A, write A' with id 1 updated, stage the swap
        table = catalog.load_table("db.events")
        tx = table.transaction()
        (task,) = table.scan(row_filter="id = 1").plan_files()
        with table.io.new_input(task.file.file_path).open() as f:
            rows = [(r["id"], r["cat"], "py" if r["id"] == 1 else r["v"])
                    for r in pq.read_table(f).to_pylist()]
        with tx.update_snapshot().overwrite() as o:
            o.delete_data_file(task.file)
            for df in _dataframe_to_data_files(tx.table_metadata, arrow(rows), table.io):
                o.append_data_file(df)
        # 2. Spark deletes id 2 (merge-on-read: a position delete file for A)
        spark.sql(f"DELETE FROM {t} WHERE id = 2").collect()
        # 3. any later commit
        if not control:
            spark.sql(f"DELETE FROM {t} WHERE id = 3").collect()
        # 4. the script commits: lost swap, refresh, validate, retry
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tx.commit_transaction()
            script = "committed"
        except Exception as e:  # noqa: BLE001 - reported
            script = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
        spark_rows = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect())
        data = [os.path.basename(r[0]) for r in
                spark.sql(f"SELECT file_path FROM {t}.data_files").collect()]
        deletes = [(os.path.basename(r[0]), sorted({os.path.basename(p) for p in r[1]}))
                   for r in spark.sql(f"SELECT d.file_path, collect_set(p.file_path) FROM "
                                      f"{t}.delete_files d JOIN {t}.position_deletes p ON "
                                      f"p.delete_file_path = d.file_path GROUP BY d.file_path")
                   .collect()]
        print(f"PyIceberg file swap {script}; rows {spark_rows}; live data files {data}; "
              f"live delete files (and the data files they name) {deletes}")
        if control:
            if script.startswith("failed: ValidationException: Cannot commit, found new "
                                 "delete for replace data file"):
                print("CONTROL: with the delete at the head, PyIceberg refuses the swap")
                return 0
            print("CONTROL NOT AS EXPECTED")
            return 1
        if script == "committed" and (2, "a", "v0") in spark_rows:
            print("REPRODUCED: id 2, deleted by a committed Spark DELETE, is back; the delete "
                  "file names a data file that is no longer in the table")
            return 0
        print("NOT REPRODUCED")
        return 1
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main("--control" in sys.argv[1:]))
