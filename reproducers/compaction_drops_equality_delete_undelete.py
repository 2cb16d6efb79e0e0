#!/usr/bin/env python3
"""Standalone check: a row deleted by an equality delete comes back after a compaction.

The pipeline: a Flink CDC job (upsert mode) writes equality deletes; a streaming job appends;
an hourly Spark ``rewrite_data_files`` compacts, with its default
``use-starting-sequence-number=true``. When the compaction started before the CDC delete and
commits after it and after any later append:

1. ``RewriteDataFilesCommitManager.commitFileGroups`` (core, 1.10.2, lines 85-89) gives the
   rewritten file the data sequence number of the snapshot the compaction started from (1), so
   the newer equality delete (2) still applies to it: correct so far, and the reason the option
   exists (the rewrite does not conflict with a concurrent equality delete);
2. but the same commit cleans up old delete files: ``MergingSnapshotProducer.apply`` (lines
   948-957) computes the minimum data sequence number over the table's *existing* data
   manifests only (the rewritten manifests are left out as unassigned, and the files this
   commit adds are not counted), finds 3 (the append), and drops every delete file older than
   that: the equality delete (2) goes, although the file just added with sequence number 1
   still needs it.

So the deleted row is live again. Nothing fails; no validation is involved.

No Flink runtime is used: Flink's sink commits with plain Iceberg library calls
(``IcebergFilesCommitter.commitDeltaTxn``: ``table.newRowDelta().addDeletes(...)``, lines
344-365), which the script makes itself, writing a real Parquet equality delete file the way
Flink's writer does. The compaction's commit is made with the same calls Spark's
``rewrite_data_files`` makes (the lines above), because a real ``rewrite_data_files`` cannot be
paused between its planning and its commit; the rewritten file holds the rows Spark reads at
the starting snapshot. The append and every read are real Spark SQL.

Needs only PySpark 3.5 and the Iceberg Spark runtime (no icecheck):
    pip install pyspark==3.5.*
    python reproducers/compaction_drops_equality_delete_undelete.py   # fetches
        org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0 from Maven Central
    ICEBERG_SPARK_JARS=/path/a.jar,/path/b.jar python reproducers/compaction_drops_equality_delete_undelete.py
Exit 0 when it reproduces.

icecheck: scenarios/builtin/flink/compaction-drops-equality-delete.yaml (Java-agreed) and the
corpus trace traces/undelete-flink-cdc-delete-append-compaction.json.
"""

import os
import shutil
import sys
import tempfile
import uuid

from pyspark.sql import SparkSession


def main() -> int:
    warehouse = tempfile.mkdtemp(prefix="wh-")
    b = (SparkSession.builder.master("local[1]").appName("iceberg-eq-delete-undelete")
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
    jvm = spark._jvm
    gateway = spark.sparkContext._gateway
    ice = jvm.org.apache.iceberg
    t = "demo.db.events"

    def table():
        return jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, t)

    def rows(snapshot_id=None):
        reader = spark.read.format("iceberg")
        if snapshot_id is not None:
            reader = reader.option("snapshot-id", snapshot_id)
        return sorted(tuple(r) for r in reader.load(t).collect())

    def new_file(tbl, name):
        out = tbl.io().newOutputFile(f"{tbl.location()}/data/{name}-{uuid.uuid4()}.parquet")
        return ice.encryption.EncryptedFiles.plainAsEncryptedOutput(out)

    try:
        spark.sql("CREATE NAMESPACE IF NOT EXISTS demo.db")
        spark.sql(f"CREATE TABLE {t} (id int, v string) USING iceberg "
                  "TBLPROPERTIES ('format-version'='2')")
        spark.sql(f"INSERT INTO {t} SELECT /*+ REPARTITION(1) */ * FROM VALUES "
                  f"(0, 'v0'), (1, 'v0') AS s(id, v)")

        # -- the compaction starts: rewrite_data_files plans at the current snapshot and reads
        tbl = table()
        start = tbl.currentSnapshot()
        start_id, start_seq = start.snapshotId(), start.sequenceNumber()
        tasks = tbl.newScan().useSnapshot(start_id).planFiles().iterator()
        old_files = []
        while tasks.hasNext():
            old_files.append(tasks.next().file())
        compacted_rows = rows(start_id)
        schema = tbl.schema()
        factory = ice.data.GenericAppenderFactory(schema, tbl.spec())
        writer = factory.newDataWriter(new_file(tbl, "rewrite"), ice.FileFormat.PARQUET, None)
        for rid, v in compacted_rows:
            rec = ice.data.GenericRecord.create(schema)
            rec.setField("id", rid)
            rec.setField("v", v)
            writer.write(rec)
        writer.close()
        rewritten = writer.toDataFile()

        # -- the Flink CDC job deletes id 1: an equality delete on id, one unvalidated RowDelta
        tbl = table()
        id_field = schema.findField("id").fieldId()
        eq_ids = gateway.new_array(gateway.jvm.int, 1)
        eq_ids[0] = id_field
        eq_schema = schema.select(["id"])
        eq_factory = ice.data.GenericAppenderFactory(schema, tbl.spec(), eq_ids, eq_schema, None)
        eq_writer = eq_factory.newEqDeleteWriter(new_file(tbl, "eq-delete"),
                                                 ice.FileFormat.PARQUET, None)
        key = ice.data.GenericRecord.create(eq_schema)
        key.setField("id", 1)
        eq_writer.write(key)
        eq_writer.close()
        (tbl.newRowDelta().addDeletes(eq_writer.toDeleteFile())
         .set("flink.max-committed-checkpoint-id", "1").commit())
        after_delete = rows()

        # -- a streaming append of another key (real Spark SQL)
        spark.sql(f"INSERT INTO {t} VALUES (5, 'new')")

        # -- the compaction commits, as RewriteDataFilesCommitManager.commitFileGroups does
        tbl = table()
        rewrite = tbl.newRewrite().validateFromSnapshot(start_id)
        rewrite.dataSequenceNumber(start_seq)       # use-starting-sequence-number=true (default)
        for f in old_files:
            rewrite.deleteFile(f)
        rewrite.addFile(rewritten)
        rewrite.commit()

        final = rows()
        deletes_left = spark.sql(f"SELECT count(*) FROM {t}.delete_files").collect()[0][0]
        print(f"at the compaction's start: {compacted_rows}")
        print(f"after the CDC delete of id 1: {after_delete}")
        print(f"after the append and the compaction: {final} "
              f"({deletes_left} delete file(s) left)")
        if (1, "v0") not in after_delete and (1, "v0") in final:
            print("REPRODUCED: the compaction dropped the equality delete that its own rewritten "
                  "file still needed: the deleted row id 1 is back")
            return 0
        print("NOT REPRODUCED")
        return 1
    finally:
        spark.stop()
        shutil.rmtree(warehouse, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
