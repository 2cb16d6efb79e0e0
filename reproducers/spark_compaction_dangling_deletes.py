#!/usr/bin/env python3
"""Standalone check: after a merge-on-read DELETE (or MERGE) on Spark 3.5 + Iceberg (format v2),
``CALL system.rewrite_data_files`` rewrites the data file but leaves the position delete file
that pointed at it live: a dangling delete. The table's rows stay right (the rewrite applied the
delete); the delete file is dead weight until a later cleanup. This is the anomaly that the
example pipelines examples/cdc-upserts-compaction.yaml and examples/gdpr-deletes-compaction.yaml
report as ALLOWED (dangling_deletes, harmless); this script shows the real library does it.

Needs only PySpark 3.5 and the Iceberg Spark runtime (no icecheck):
    pip install pyspark==3.5.*
    python reproducers/spark_compaction_dangling_deletes.py   # fetches
        org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0 from Maven Central
    ICEBERG_SPARK_JARS=/path/a.jar,/path/b.jar python reproducers/spark_compaction_dangling_deletes.py
Exit 0 when it reproduces.

Iceberg's RewriteDataFiles drops such delete files only with the option
``remove-dangling-deletes`` (default false), which the script also shows.

icecheck: the dangling_deletes trace of `icecheck check examples/gdpr-deletes-compaction.yaml`
(traces/dangling-deletes-gdpr-delete-compaction-mor-snapshot.json).
"""

import os
import shutil
import sys
import tempfile

from pyspark.sql import SparkSession


def main() -> int:
    warehouse = tempfile.mkdtemp(prefix="wh-")
    b = (SparkSession.builder.master("local[2]").appName("iceberg-dangling-deletes")
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
                  "'format-version'='2', 'write.delete.mode'='merge-on-read', "
                  "'write.delete.granularity'='file')")
        spark.sql(f"INSERT INTO {t} SELECT /*+ REPARTITION(1) */ * FROM VALUES "
                  f"(1, 'v0'), (2, 'v0') AS s(id, v)")
        spark.sql(f"DELETE FROM {t} WHERE id = 1")           # the GDPR delete: a position delete

        def files():
            data = {r[0] for r in spark.sql(f"SELECT file_path FROM {t}.data_files").collect()}
            deletes = [(r[0], r[1]) for r in spark.sql(
                f"SELECT file_path, referenced_data_file FROM {t}.delete_files").collect()]
            return data, deletes

        data_before, deletes_before = files()
        spark.sql("CALL demo.system.rewrite_data_files(table => 'db.events', "
                  "options => map('rewrite-all', 'true'))").collect()
        data_after, deletes_after = files()
        rows = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect())
        dangling = [d for d, ref in deletes_after if ref is None or ref not in data_after]
        print(f"before compaction: {len(data_before)} data file(s), {len(deletes_before)} "
              f"position delete file(s); after: {len(data_after)} data file(s) "
              f"({'rewritten' if not data_after & data_before else 'not rewritten'}), "
              f"{len(deletes_after)} delete file(s), {len(dangling)} pointing at a removed "
              f"data file; rows {rows}")
        spark.sql("CALL demo.system.rewrite_data_files(table => 'db.events', "
                  "options => map('rewrite-all', 'true', 'remove-dangling-deletes', 'true'))"
                  ).collect()
        _, deletes_cleaned = files()
        print(f"with remove-dangling-deletes=true: {len(deletes_cleaned)} delete file(s) left")
        if deletes_before and dangling and rows == [(2, "v0")] and not data_after & data_before:
            print("REPRODUCED: the compaction left the position delete live after removing its "
                  "data file (dangling delete; rows unaffected)")
            return 0
        print("NOT REPRODUCED")
        return 1
    finally:
        spark.stop()
        shutil.rmtree(warehouse, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
