#!/usr/bin/env python3
"""Standalone reproducer: two concurrent insert-only MERGEs on Spark 3.5 + Iceberg both insert
the same key, even with write.merge.isolation-level = serializable.

Needs only PySpark 3.5 and the Iceberg Spark runtime (no icecheck):
    pip install pyspark==3.5.*
    python reproducers/spark_insert_only_merge_duplicates.py   # fetches
        org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0 from Maven Central
    ICEBERG_SPARK_JARS=/path/a.jar,/path/b.jar python reproducers/spark_insert_only_merge_duplicates.py
Exit 0 when it reproduces.

The dedup insert "MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *" has no
WHEN MATCHED clause, so Spark's RewriteMergeIntoTable plans it as an append of an anti-join
(AppendData), not as a row-level operation: Iceberg commits it with newAppend(), which
validates nothing, whatever the table's isolation level. Two jobs that both find id 2 absent
both append it; the table ends with two rows for id 2, which no serial order of the two MERGEs
allows (the second would have found the key). Adding a WHEN MATCHED clause makes the MERGE a
row-level operation that serializable isolation validates.

Ordering: the first MERGE's source carries a Python UDF that blocks on a file until the second
MERGE has committed; by then the first has planned its scan of the table (its snapshot pinned).

icecheck: traces/duplicate-keys-insert-only-merge-cow-serializable.json,
scenarios/builtin/commands/spark-insert-only-merge-duplicates.yaml.
"""

import os
import shutil
import sys
import tempfile
import threading
import time

from pyspark.sql import SparkSession
from pyspark.sql.types import BooleanType

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


def main() -> int:
    warehouse = tempfile.mkdtemp(prefix="wh-")
    b = (SparkSession.builder.master("local[2]").appName("iceberg-insert-only-merge")
         .config("spark.driver.bindAddress", "127.0.0.1")  # listen on loopback only
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.sql.extensions",
                 "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.sql.catalog.demo", "org.apache.iceberg.spark.SparkCatalog")
         .config("spark.sql.catalog.demo.type", "hadoop")
         .config("spark.sql.catalog.demo.warehouse", "file://" + warehouse)
         .config("spark.sql.catalog.demo.cache-enabled", "false")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "1"))
    jars = os.environ.get("ICEBERG_SPARK_JARS")
    b = (b.config("spark.jars", jars) if jars else
         b.config("spark.jars.packages", "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0"))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    t = "demo.db.events"
    try:
        spark.sql("CREATE NAMESPACE IF NOT EXISTS demo.db")
        spark.sql(f"CREATE TABLE {t} (id int, v string) USING iceberg TBLPROPERTIES ("
                  "'format-version'='2', 'write.merge.isolation-level'='serializable')")
        spark.sql(f"INSERT INTO {t} VALUES (0, 'v0'), (1, 'v0')")
        merge = (f"MERGE INTO {t} t USING ({{src}}) s ON t.id = s.id "
                 f"WHEN NOT MATCHED THEN INSERT *")
        result = {}

        def first():
            s = spark.newSession()
            s.udf.register("gate", gate, BooleanType())
            try:
                s.sql(merge.format(src="SELECT * FROM VALUES (2, 'job1') AS v(id, v) "
                                       "WHERE gate('m', id)")).collect()
                result["job1"] = "committed"
            except Exception as e:  # noqa: BLE001 - reported
                result["job1"] = f"failed: {str(e).splitlines()[0][:200]}"

        th = threading.Thread(target=first)
        th.start()
        while not os.path.exists(os.path.join(GATE_DIR, "m.started")):
            if not th.is_alive():
                raise RuntimeError(f"job1 ended before its gate: {result}")
            time.sleep(0.02)
        spark.newSession().sql(merge.format(src="SELECT 2 AS id, 'job2' AS v")).collect()
        open(os.path.join(GATE_DIR, "m.go"), "w").close()
        th.join()
        rows = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect())
        ops = [r[0] for r in spark.sql(f"SELECT operation FROM {t}.snapshots").collect()]
        print(f"job2 committed, job1 {result['job1']}; rows {rows}; snapshot operations {ops}")
        if result["job1"] == "committed" and sum(1 for r in rows if r[0] == 2) == 2:
            print("REPRODUCED: both insert-only MERGEs inserted id 2 under serializable isolation")
            return 0
        print("NOT REPRODUCED")
        return 1
    finally:
        spark.stop()
        shutil.rmtree(warehouse, ignore_errors=True)
        shutil.rmtree(GATE_DIR, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
