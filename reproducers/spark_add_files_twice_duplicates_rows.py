#!/usr/bin/env python3
"""Standalone reproducer: Spark's ``add_files`` procedure registers one Parquet file twice when
two calls overlap, although ``check_duplicate_files`` is on; the table reads its rows twice.

Needs only PySpark 3.5 and the Iceberg Spark runtime (no icecheck):
    pip install pyspark==3.5.*
    python reproducers/spark_add_files_twice_duplicates_rows.py   # fetches
        org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0 from Maven Central
    ICEBERG_SPARK_JARS=/path/a.jar,/path/b.jar python reproducers/spark_add_files_twice_duplicates_rows.py
Exit 0 when it reproduces; ``--control`` runs the two calls one after the other (the second
is refused).

What happens: ``CALL system.add_files(table => ..., source_table => '`parquet`.`<dir>`')``
loads the table when it starts (AddFilesProcedure), then SparkTableUtil.importSparkPartitions
checks the table's ENTRIES metadata table for the files (``check_duplicate_files``, on by
default), read from the table *as it loaded it* (``new SparkTable(metadataTable, false)``: no
refresh), and commits ``targetTable.newAppend()``, which validates nothing and re-applies on
the latest metadata. A second call that loaded the table before the first committed checks a
table without the file and appends it again.

How the overlap is made deterministic: a procedure call cannot be paused, so the second call
is the procedure's own code path driven through the JVM: the table is loaded
(``Spark3Util.loadIcebergTable``, as the procedure loads it) before the first call commits, and
``SparkTableUtil.importSparkPartitions(spark, [the folder], table, spec, staging, true)``, what
the procedure runs for a path-based source, is called with it afterwards.

icecheck: ``icecheck explore --engine bfs --profile spark-3.5-cow-serializable --mix add_files``
(the same anomaly as traces/duplicate-keys-pyiceberg-add-files-twice.json, on Spark's
profile); scenarios/builtin/commands/spark-add-files-twice-second-refused.yaml (the serial
calls, agreed on Spark).
"""

import os
import shutil
import sys
import tempfile

from pyspark.sql import SparkSession


def main(control: bool = False) -> int:
    warehouse = tempfile.mkdtemp(prefix="wh-")
    ext = tempfile.mkdtemp(prefix="ext-")
    b = (SparkSession.builder.master("local[2]").appName("iceberg-add-files-twice")
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
    folder = os.path.join(ext, "backfill")
    call = (f"CALL demo.system.add_files(table => 'db.events', "
            f"source_table => '`parquet`.`{folder}`')")
    try:
        spark.sql("CREATE NAMESPACE IF NOT EXISTS demo.db")
        spark.sql(f"CREATE TABLE {t} (id int, v string) USING iceberg "
                  "TBLPROPERTIES ('format-version'='2')")
        spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
        # the backfill job's output: one Parquet file outside the table
        spark.sql("SELECT 2 AS id, 'b' AS v").coalesce(1).write.parquet(folder)
        if control:
            spark.sql(call).collect()
            try:
                spark.sql(call).collect()
            except Exception as e:  # noqa: BLE001 - reported
                why = [ln for ln in str(e).splitlines() if "Cannot complete import" in ln]
                print("second add_files refused:", (why or str(e).splitlines())[0][:300])
                return 0
            print("CONTROL FAILED: the second add_files was not refused")
            return 1
        jvm = spark.sparkContext._jvm
        # call 2 starts: it loads the table (AddFilesProcedure's loadSparkTable)
        table2 = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
            spark._jsparkSession, t)
        # call 1 runs whole and commits the file
        spark.sql(call).collect()
        # call 2 goes on: its duplicate check reads the table it loaded, then it appends
        partition = getattr(jvm.org.apache.iceberg.spark, "SparkTableUtil$SparkPartition")(
            jvm.java.util.HashMap(), "file:" + folder, "parquet")
        parts = jvm.java.util.ArrayList()
        parts.add(partition)
        staging = tempfile.mkdtemp(prefix="staging-")
        jvm.org.apache.iceberg.spark.SparkTableUtil.importSparkPartitions(
            spark._jsparkSession, parts, table2, table2.spec(), staging, True)
        rows = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect())
        entries = spark.sql(f"SELECT count(*) FROM {t}.entries WHERE status != 2 AND "
                            f"data_file.file_path LIKE '%/backfill/%'").collect()[0][0]
        print(f"rows: {rows}; live entries of the backfill file: {entries}")
        if rows.count((2, "b")) == 2 and entries == 2:
            print("REPRODUCED: both add_files calls committed the file; its row is read twice")
            return 0
        print("NOT REPRODUCED")
        return 1
    finally:
        spark.stop()
        shutil.rmtree(warehouse, ignore_errors=True)
        shutil.rmtree(ext, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(control="--control" in sys.argv[1:]))
