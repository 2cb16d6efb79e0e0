#!/usr/bin/env python3
"""Standalone reproducer: a Spark Structured Streaming query writing to Iceberg commits a
re-run micro-batch a second time when the snapshot of its first commit was expired meanwhile;
the table then holds that batch's rows twice.

Needs only PySpark 3.5 and the Iceberg Spark runtime (no icecheck):
    pip install pyspark==3.5.*
    python reproducers/spark_streaming_sink_recommits_after_expiry.py   # fetches
        org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0 from Maven Central
    ICEBERG_SPARK_JARS=/path/a.jar,/path/b.jar python reproducers/spark_streaming_sink_recommits_after_expiry.py
Exit 0 when it reproduces; ``--control`` runs the same without the expiry (the re-run epoch
is skipped, the rows are there once; it ends "CONTROL OK").

What happens: Iceberg's streaming sink (``SparkWrite.BaseStreamingWrite.commit``, 1.10.2
spark/v3.5/.../SparkWrite.java:542-578) makes a re-run micro-batch idempotent by walking from
the table's current snapshot back along parent ids (``table.snapshot(parentId)``) to the
first snapshot whose summary carries its ``spark.sql.streaming.queryId``, and skips the epoch
when that snapshot's ``spark.sql.streaming.epochId`` is >= the epoch. The walk ends at the
first parent that is no longer in the table's metadata. Spark writes a batch's entry in the
checkpoint's commit log (``<checkpoint>/commits/<batch>``) only after the sink's commit
returned (``MicroBatchExecution.runBatch``: ``commitLog.add`` after ``addBatch``), and on a
restart re-runs the last batch of the offset log that has no commit-log entry with the same
batch id, i.e. the same epoch (``populateStartOffsets``). So a query that died between the
two, restarted after another writer committed and ``expire_snapshots`` removed the sink's
snapshot, finds no snapshot of its query and commits the batch again.

The crash between the sink's commit and the commit log is made by stopping the query after
batch 0 and deleting ``commits/0`` (what a driver killed at that moment leaves: the offsets
of batch 0 written, its commit log entry not). The source is a folder of JSON files read with
``readStream``: a replayable source, batch 0 re-reads the same files from the checkpoint.

icecheck: the streaming-sink lifecycle model (models/lifecycle.py: a sink that crashes after
its table commit and before its checkpoint, restarted after an expiry of its snapshot).
"""

import datetime
import os
import shutil
import sys
import tempfile
import time

from pyspark.sql import SparkSession

LOG4J = """\
status = error
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %c{1}: %m%n
rootLogger.level = error
rootLogger.appenderRef.console.ref = console
logger.sink.name = org.apache.iceberg.spark.source.SparkWrite
logger.sink.level = info
logger.sink.additivity = false
logger.sink.appenderRef.file.ref = file
logger.mbe.name = org.apache.spark.sql.execution.streaming.MicroBatchExecution
logger.mbe.level = info
logger.mbe.additivity = false
logger.mbe.appenderRef.file.ref = file
"""


def main(control: bool = False) -> int:
    work = tempfile.mkdtemp(prefix="stream-expiry-")
    warehouse, src, ckpt = (os.path.join(work, d) for d in ("wh", "src", "ckpt"))
    os.makedirs(src)
    log = os.path.join(work, "sink.log")
    with open(os.path.join(work, "log4j2.properties"), "w") as fh:
        fh.write(LOG4J.replace("{log}", log))
    b = (SparkSession.builder.master("local[2]").appName("iceberg-stream-sink-expiry")
         .config("spark.driver.bindAddress", "127.0.0.1")  # listen on loopback only
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.extraJavaOptions",
                 f"-Dlog4j.configurationFile=file:{work}/log4j2.properties")
         .config("spark.sql.extensions",
                 "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.sql.catalog.demo", "org.apache.iceberg.spark.SparkCatalog")
         .config("spark.sql.catalog.demo.type", "hadoop")
         .config("spark.sql.catalog.demo.warehouse", "file://" + warehouse)
         .config("spark.sql.catalog.demo.cache-enabled", "false")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "1"))
    jars = os.environ.get("ICEBERG_SPARK_JARS")
    b = (b.config("spark.jars", jars) if jars else
         b.config("spark.jars.packages", "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0"))
    spark = b.getOrCreate()
    t = "demo.db.events"

    def run_stream():
        """One run of the streaming query: every file in src, then stop (availableNow)."""
        q = (spark.readStream.schema("id INT, v STRING").json(src)
             .writeStream.format("iceberg").outputMode("append")
             .option("checkpointLocation", ckpt)
             .trigger(availableNow=True)
             .toTable(t))
        q.awaitTermination()
        return q.id

    def snapshots():
        return [(r[0], r[1], r[2].get("spark.sql.streaming.queryId"),
                 r[2].get("spark.sql.streaming.epochId"))
                for r in spark.sql(f"SELECT snapshot_id, operation, summary FROM {t}.snapshots "
                                   "ORDER BY committed_at").collect()]

    def rows():
        return sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect())

    def show_snapshots(when):
        print(f"{when}: snapshots (id, operation, streaming queryId, epochId):")
        for s in snapshots():
            print(f"    {s}")

    try:
        spark.sql("CREATE NAMESPACE IF NOT EXISTS demo.db")
        spark.sql(f"CREATE TABLE {t} (id int, v string) USING iceberg "
                  "TBLPROPERTIES ('format-version'='2')")
        with open(os.path.join(src, "part-1.json"), "w") as fh:
            fh.write('{"id": 1, "v": "a"}\n{"id": 2, "v": "b"}\n')

        # -- run 1: batch 0 (epoch 0) is committed to the table and to the commit log
        qid = run_stream()
        print(f"run 1: query id {qid}; rows {rows()}")
        show_snapshots("run 1")
        print(f"checkpoint commit log after run 1: "
              f"{sorted(os.listdir(os.path.join(ckpt, 'commits')))}")

        # -- the crash: the commit log entry of batch 0 was never written
        for f in ("0", ".0.crc"):
            if os.path.exists(os.path.join(ckpt, "commits", f)):
                os.remove(os.path.join(ckpt, "commits", f))
        print(f"crash simulated: commit log now {sorted(os.listdir(os.path.join(ckpt, 'commits')))}"
              f", offsets log {sorted(os.listdir(os.path.join(ckpt, 'offsets')))}")

        # -- meanwhile: another writer appends, and (unless --control) expire_snapshots runs
        spark.sql(f"INSERT INTO {t} VALUES (100, 'other writer')")
        if not control:
            time.sleep(1.0)
            now = (datetime.datetime.now(datetime.timezone.utc)
                   .strftime("%Y-%m-%d %H:%M:%S.%f")[:-3])
            res = spark.sql(f"CALL demo.system.expire_snapshots(table => 'db.events', "
                            f"older_than => TIMESTAMP '{now}', retain_last => 1)").collect()
            print(f"expire_snapshots(older_than => '{now}', retain_last => 1): "
                  f"{res[0].asDict()}")
        show_snapshots("before restart")
        before = rows()
        print(f"rows before restart: {before}")

        # -- run 2: the restart from the same checkpoint re-runs batch 0
        open(log, "w").close()
        qid2 = run_stream()
        with open(log) as fh:
            lines = [ln.strip() for ln in fh
                     if "Resuming at batch" in ln or "epoch" in ln.lower()]
        print(f"run 2: query id {qid2} (same as run 1: {qid2 == qid}); log:")
        for ln in lines:
            print(f"    {ln[:220]}")
        show_snapshots("after restart")
        after = rows()
        print(f"rows after restart: {after}")
        epochs0 = [s for s in snapshots() if s[2] == qid and s[3] == "0"]
        twice = after.count((1, "a")) == 2 and after.count((2, "b")) == 2
        skipped = any("Skipping epoch 0" in ln for ln in lines)
        if control:
            if not twice and after.count((1, "a")) == 1 and skipped:
                print("CONTROL OK: the re-run epoch 0 was skipped (its snapshot was found "
                      "along the parents); batch 0's rows are there once")
                return 0
            print("CONTROL FAILED")
            return 1
        if twice and not skipped:
            print(f"REPRODUCED: the restarted query found no snapshot of its query id (the "
                  f"sink's snapshot was expired) and committed epoch 0 again "
                  f"({len(epochs0)} live snapshot(s) of epoch 0 now); batch 0's rows are in "
                  f"the table twice")
            return 0
        print("NOT REPRODUCED")
        return 1
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(control="--control" in sys.argv[1:]))
