#!/usr/bin/env python3
"""Standalone reproducer: Spark's ``remove_orphan_files`` deletes the data files of a job that
has written them but not committed yet when they are older than ``older_than``; the job then
commits, and the table references files that no longer exist (reading it fails).

Iceberg documents the risk (DeleteOrphanFilesSparkAction's Javadoc: "It is dangerous to call
this action with a short retention interval as it might corrupt the state of the table if
another operation is writing at the same time"; the procedure refuses an ``older_than`` less
than 24 hours ago). It is not a defect: a job that runs longer than ``older_than`` (a backfill
over days, a commit that keeps retrying) meets it.

Needs only PySpark 3.5 and the Iceberg Spark runtime (no icecheck):
    pip install pyspark==3.5.*
    python reproducers/spark_remove_orphan_files_deletes_uncommitted_job_files.py   # fetches
        org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0 from Maven Central
    ICEBERG_SPARK_JARS=/path/a.jar,/path/b.jar python reproducers/spark_remove_orphan_files_deletes_uncommitted_job_files.py
Exit 0 when it reproduces ("REPRODUCED"); ``--control`` runs the clean-up with an
``older_than`` before the job started (its file is kept, the table reads; "CONTROL OK").

How the slow job is made: its task output is a Parquet file written into the table's data
folder, dated three days back (``os.utime``: the modification time the action compares), and
its driver's commit is what Spark's BatchAppend commits, ``table.newAppend().appendFile(...)
.commit()`` with that file, driven through the JVM after the clean-up. The clean-up is the
real procedure, ``CALL system.remove_orphan_files(table => ..., older_than => now - 2 days)``.

icecheck: examples/slow-backfill-orphan-cleanup.yaml (``icecheck check`` fails ``readable``);
the scenario in docs/scenario-format.md, "Time".
"""

import glob
import os
import shutil
import sys
import tempfile
import time
from urllib.parse import urlparse

from pyspark.sql import SparkSession

DAY = 24 * 3600


def main(control: bool = False) -> int:
    warehouse = tempfile.mkdtemp(prefix="wh-")
    staging = tempfile.mkdtemp(prefix="task-")
    b = (SparkSession.builder.master("local[2]").appName("iceberg-orphans-slow-job")
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
        spark.sql(f"CREATE TABLE {t} (id int, v string) USING iceberg "
                  "TBLPROPERTIES ('format-version'='2')")
        spark.sql(f"INSERT INTO {t} VALUES (1, 'a')")
        jvm = spark.sparkContext._jvm
        # the slow job starts: it loads the table, and its task writes a data file into the
        # table's data folder, three days ago
        table = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, t)
        location = urlparse(table.location()).path
        spark.createDataFrame([(2, "b")], "id int, v string").coalesce(1) \
            .write.mode("overwrite").parquet(staging)
        part = glob.glob(os.path.join(staging, "part-*.parquet"))[0]
        path = os.path.join(location, "data", "00000-0-slow-backfill-00001.parquet")
        shutil.copyfile(part, path)
        started = time.time() - 3 * DAY
        os.utime(path, (started, started))
        # the nightly clean-up: files older than two days (before the job's start for the
        # control) that no snapshot references
        days = 4 if control else 2
        cutoff = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() - days * DAY))
        removed = [r[0] for r in spark.sql(
            f"CALL demo.system.remove_orphan_files(table => 'db.events', "
            f"older_than => TIMESTAMP '{cutoff}')").collect()]
        print(f"remove_orphan_files(older_than => now - {days} days) deleted: {removed}")
        # the slow job's driver commits what its task wrote (SparkWrite.BatchAppend.commit)
        data_file = (jvm.org.apache.iceberg.DataFiles.builder(table.spec())
                     .withPath("file:" + path).withFormat(jvm.org.apache.iceberg.FileFormat.PARQUET)
                     .withFileSizeInBytes(os.path.getsize(part)).withRecordCount(1).build())
        table.newAppend().appendFile(data_file).commit()
        print(f"the slow job committed {os.path.basename(path)}; the file exists: "
              f"{os.path.exists(path)}")
        try:
            rows = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect())
        except Exception as e:  # noqa: BLE001 - reported
            text = str(e)
            at = text.find("NotFoundException: ")
            why = text[at:].splitlines()[0] if at >= 0 else text.splitlines()[0][:300]
            print("reading the table failed:", why)
            if not control and any(urlparse(r).path == path for r in removed):
                print("REPRODUCED: the clean-up deleted the job's file before it committed; "
                      "the table references a file that no longer exists")
                return 0
            print("NOT REPRODUCED" if not control else "CONTROL FAILED: the table is unreadable")
            return 1
        print(f"rows: {rows}")
        if control and rows == [(1, "a"), (2, "b")] and not removed:  # nothing was orphaned
            print("CONTROL OK: the job's file was younger than older_than and was kept")
            return 0
        print("NOT REPRODUCED" if not control else "CONTROL FAILED")
        return 1
    finally:
        spark.stop()
        shutil.rmtree(warehouse, ignore_errors=True)
        shutil.rmtree(staging, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(control="--control" in sys.argv[1:]))
