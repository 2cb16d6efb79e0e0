#!/usr/bin/env python3
"""Standalone reproducer: a Spark MERGE job and a PyIceberg upsert script on ONE table both
insert the same key, although the table asks for serializable isolation and the Spark MERGE
validates.

Needs PySpark 3.5 with the Iceberg Spark runtime, PyIceberg 0.12 with SQLite support, and the
SQLite JDBC driver (no icecheck):
    pip install pyspark==3.5.* 'pyiceberg[sql-sqlite,pyarrow]==0.12.0'
    apt-get install libxerial-sqlite-jdbc-java      # /usr/share/java/sqlite-jdbc.jar
    python reproducers/mixed_spark_merge_pyiceberg_upsert_duplicate.py   # fetches
        org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0 from Maven Central
    ICEBERG_SPARK_JARS=/path/a.jar,/path/b.jar python reproducers/mixed_spark_merge_pyiceberg_upsert_duplicate.py
Run with SQLITE_JDBC_JAR=/path/sqlite-jdbc.jar if the driver lives elsewhere. Exit 0 when it
reproduces.

One shared catalog: PyIceberg's SqlCatalog and Iceberg's JdbcCatalog (inside Spark) use the
same SQLite database and the same file:// warehouse; the namespace and table are created from
PyIceberg first, and Spark's catalog runs with jdbc.init-catalog-tables=false.

Sequence (the model's minimal trace):
1. the PyIceberg script stages tx.upsert([(2, 'pyiceberg')], join_cols=['id']) in a
   Transaction: it scans the table, finds id 2 absent, and stages a plain fast append;
2. the Spark job runs MERGE INTO t USING (id 2) ON t.id = s.id WHEN MATCHED THEN UPDATE SET *
   WHEN NOT MATCHED THEN INSERT *, which inserts id 2 and commits (its serializable validation
   passes: nothing was committed since its scan);
3. the script calls tx.commit_transaction(): the swap loses the race, PyIceberg refreshes and
   retries its fast append, which validates nothing, and commits.
The table ends with two rows for id 2, which no serial order of the two jobs allows (whichever
ran second would have found the key and updated it). In the other order Spark's MERGE, the
validating side, rejects its commit ("Found conflicting files"), so the guarantee depends on
which engine commits last.

icecheck: traces/duplicate-keys-mixed-spark-merge-pyiceberg-upsert.json (found by the sweep's
mixed row spark-3.5-cow-serializable+pyiceberg-0.12-serializable, MERGE+MERGE).
"""

import logging
import os
import shutil
import sys
import tempfile
import warnings

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import IntegerType, NestedField, StringType
from pyspark.sql import SparkSession

CATALOG = "demo"
SQLITE_JDBC = os.environ.get("SQLITE_JDBC_JAR", "/usr/share/java/sqlite-jdbc.jar")


def arrow(rows):
    schema = pa.schema([pa.field("id", pa.int32()), pa.field("v", pa.string())])
    return pa.table({"id": pa.array([r[0] for r in rows], pa.int32()),
                     "v": pa.array([r[1] for r in rows], pa.string())}, schema=schema)


def main() -> int:
    root = tempfile.mkdtemp(prefix="mixed-")
    db, warehouse = os.path.join(root, "catalog.db"), "file://" + os.path.join(root, "wh")
    catalog = SqlCatalog(CATALOG, uri=f"sqlite:///{db}", warehouse=warehouse)
    catalog.create_namespace("db")
    table = catalog.create_table(
        "db.events",
        schema=Schema(NestedField(1, "id", IntegerType(), required=False),
                      NestedField(2, "v", StringType(), required=False)),
        properties={"format-version": "2", "write.merge.isolation-level": "serializable",
                    "write.update.isolation-level": "serializable",
                    "write.delete.isolation-level": "serializable",
                    "commit.retry.min-wait-ms": "1"})
    table.append(arrow([(0, "v0"), (1, "v0")]))

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
    logging.getLogger("pyiceberg").setLevel(logging.ERROR)   # "Commit failed, retrying" is expected
    t = f"{CATALOG}.db.events"
    try:
        # 1. the PyIceberg script stages its upsert (scan: id 2 absent; a fast append staged)
        tx = catalog.load_table("db.events").transaction()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tx.upsert(arrow([(2, "pyiceberg")]), join_cols=["id"])
        # 2. the Spark job's MERGE inserts id 2 and commits
        spark.sql(f"MERGE INTO {t} t USING (SELECT 2 AS id, 'spark' AS v) s ON t.id = s.id "
                  f"WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *").collect()
        # 3. the script commits: lost swap, refresh, retry, commit
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tx.commit_transaction()
            script = "committed"
        except Exception as e:  # noqa: BLE001 - reported
            script = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
        spark_rows = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect())
        py_rows = sorted((r["id"], r["v"]) for r in
                         catalog.load_table("db.events").scan().to_arrow().to_pylist())
        ops = [r[0] for r in spark.sql(f"SELECT operation FROM {t}.snapshots "
                                       f"ORDER BY committed_at").collect()]
        print(f"Spark MERGE committed, PyIceberg upsert {script}; rows seen by Spark {spark_rows}; "
              f"by PyIceberg {py_rows}; snapshot operations {ops}")
        if script == "committed" and sum(1 for r in spark_rows if r[0] == 2) == 2 \
                and spark_rows == py_rows:
            print("REPRODUCED: the Spark MERGE and the PyIceberg upsert both inserted id 2 "
                  "under serializable isolation")
            return 0
        print("NOT REPRODUCED")
        return 1
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
