#!/usr/bin/env python3
"""Standalone reproducer: Iceberg's Flink sink (FlinkSink, IcebergFilesCommitter) restored from a
checkpoint whose files it had committed commits them again when the snapshot carrying its
``flink.max-committed-checkpoint-id`` was expired meanwhile; the table holds those rows twice.
It needs the committer's temporary manifest of that checkpoint to still exist, which is what a
job that died after its Iceberg commit and before deleting that manifest leaves; when the
manifest was deleted (the normal case) the restore fails instead (``--manifest-cleaned``).

Needs PyFlink 1.20 and the Iceberg Flink runtime with Hadoop on the classpath (no icecheck):
    pip install apache-flink==1.20.*
    ICEBERG_FLINK_JARS=iceberg-flink-runtime-1.20-1.10.2.jar,hadoop-client-api-3.3.4.jar,\\
        hadoop-client-runtime-3.3.4.jar,commons-logging-1.1.3.jar \\
        python reproducers/flink_sink_recommits_after_expiry.py
(here, without Maven Central, reproducers/build_iceberg_flink_from_source.sh builds the
connector from apache/iceberg's 1.10.2 source, run against Iceberg 1.10.2 as the Spark runtime
jar ships it; tests/conformance/test_reproducers_run.py assembles the list.)
Exit 0 when it reproduces. ``--manifest-cleaned``: the same without putting the manifest back:
the restore fails with NotFoundException (exit 0 when it does). ``--control``: the manifest
back, no expiry: the restored checkpoint is skipped, rows once ("CONTROL OK").

What happens: on restore, ``IcebergFilesCommitter.initializeState`` (1.10.2 flink/v1.20,
lines 166-199) reads the last committed checkpoint id with ``SinkUtil.getMaxCommittedCheckpointId``
(SinkUtil.java:83-105): from the branch head back along ``table.snapshot(parentId)`` to the
first snapshot of the restored job id and operator that has ``flink.max-committed-checkpoint-id``;
the walk ends at the first expired parent, and then answers -1. Every restored checkpoint above
it is committed again (``commitUpToCheckpoint``) from the temporary manifests the state names.
The committer deletes those manifests only after its Iceberg commit (line 280), so a job that
died in between restores a checkpoint whose manifest still exists.

The job: Flink SQL ``INSERT INTO`` an Iceberg table of a Hadoop catalog from a bounded
``datagen`` source (ids 1-5; a union with an idle unbounded one keeps the job running),
checkpoints every 5 s retained on cancellation. Job 1 commits checkpoint 1 (the 5 rows) and is
cancelled. Its temporary manifest is kept by a hard link taken while it existed (the table's
``flink.manifests.location`` points at a folder of their own) and put back: the files a job that
died between its commit and the manifest's deletion leaves. Another writer (a Flink batch
INSERT) commits, ``expireSnapshots().expireOlderThan(now).retainLast(1)`` (Iceberg's Java API)
expires job 1's snapshot, and job 2 is started from job 1's ``chk-1``
(``execution.savepoint.path``).

icecheck: the streaming-sink lifecycle model (models/lifecycle.py: a Flink sink that restores a
checkpoint after an expiry of the snapshot recording its last committed checkpoint).
"""

import os
import shutil
import sys
import tempfile
import threading
import time

INTERVAL = "5 s"
JOB = [
    "CREATE TEMPORARY TABLE src (id INT) WITH ('connector'='datagen', 'fields.id.kind'='sequence',"
    " 'fields.id.start'='1', 'fields.id.end'='5')",
    "CREATE TEMPORARY TABLE idle (id INT) WITH ('connector'='datagen', 'rows-per-second'='1',"
    " 'fields.id.min'='0', 'fields.id.max'='9')",
]
INSERT = ("INSERT INTO ice.db.events SELECT id, 'flink job' FROM src "
          "UNION ALL SELECT id, 'never' FROM idle WHERE id < 0")
ENDED = ("FAILED", "FINISHED", "CANCELED")


def main(mode: str = "kept") -> int:
    jars = os.environ.get("ICEBERG_FLINK_JARS")
    if not jars:
        print("set ICEBERG_FLINK_JARS to the Iceberg Flink runtime and Hadoop client jars")
        return 2
    # PyFlink puts HADOOP_CLASSPATH on its JVM's classpath (pyflink_gateway_server.py)
    os.environ["HADOOP_CLASSPATH"] = ":".join(j for j in jars.split(",") if j)
    from pyflink.common import Configuration
    from pyflink.java_gateway import get_gateway
    from pyflink.table import EnvironmentSettings, TableEnvironment

    work = tempfile.mkdtemp(prefix="flink-expiry-")
    wh, ck, fm, kept = (os.path.join(work, d) for d in ("wh", "ck", "flink-manifests", "kept"))
    os.makedirs(fm)
    os.makedirs(kept)

    def tenv(streaming=True, restore=None):
        conf = Configuration()
        conf.set_string("parallelism.default", "1")
        conf.set_string("restart-strategy.type", "none")
        if streaming:
            conf.set_string("execution.checkpointing.interval", INTERVAL)
            conf.set_string("execution.checkpointing.dir", "file://" + ck)
            conf.set_string("execution.checkpointing.num-retained", "3")
            conf.set_string("execution.checkpointing.externalized-checkpoint-retention",
                            "RETAIN_ON_CANCELLATION")
        if restore:
            conf.set_string("execution.savepoint.path", restore)
        b = EnvironmentSettings.new_instance()
        b = b.in_streaming_mode() if streaming else b.in_batch_mode()
        t = TableEnvironment.create(b.with_configuration(conf).build())
        t.execute_sql("CREATE CATALOG ice WITH ('type'='iceberg', 'catalog-type'='hadoop', "
                      f"'warehouse'='file://{wh}', 'property-version'='1')")
        return t

    jvm = get_gateway().jvm

    def table():
        cat = jvm.org.apache.iceberg.hadoop.HadoopCatalog(
            jvm.org.apache.hadoop.conf.Configuration(), "file://" + wh)
        return cat.loadTable(jvm.org.apache.iceberg.catalog.TableIdentifier.parse("db.events"))

    def snapshots():
        out = []
        it = table().snapshots().iterator()
        while it.hasNext():
            s = it.next()
            m = s.summary()
            out.append((s.snapshotId(), s.parentId(), m.get("flink.job-id"),
                        m.get("flink.max-committed-checkpoint-id"), m.get("added-records")))
        return out

    def show_snapshots(when):
        print(f"{when}: snapshots (id, parent, flink.job-id, max-committed-checkpoint-id, "
              f"added records):")
        for s in snapshots():
            print(f"    {s}")

    def rows():
        t = tenv(streaming=False)
        return sorted(tuple(r) for r in t.execute_sql("SELECT * FROM ice.db.events").collect())

    stop = threading.Event()

    def keep_manifests():
        """Hard-link each temporary manifest the committer writes while it exists (a link
        shares the file, so it holds the whole manifest once the committer has written it)."""
        while not stop.is_set():
            for n in os.listdir(fm):
                if n.endswith(".avro") and not os.path.exists(os.path.join(kept, n)):
                    try:
                        os.link(os.path.join(fm, n), os.path.join(kept, n))
                    except (FileNotFoundError, FileExistsError):
                        pass
            time.sleep(0.002)

    def has_manifest(*folders):
        """Does any of ``folders`` hold a temporary manifest (or a hard link to one)?"""
        return any(n.endswith(".avro") for d in folders for n in os.listdir(d))

    def status(jc):
        try:
            return str(jc.get_job_status().result())
        except Exception:  # noqa: BLE001 - a failed job's local cluster is gone
            return "FAILED"

    try:
        t = tenv()
        t.execute_sql("CREATE DATABASE IF NOT EXISTS ice.db")
        t.execute_sql("CREATE TABLE ice.db.events (id INT, v STRING) WITH ("
                      f"'format-version'='2', 'flink.manifests.location'='file://{fm}')")
        for s in JOB:
            t.execute_sql(s)
        keeper = threading.Thread(target=keep_manifests, daemon=True)
        keeper.start()
        jc = t.execute_sql(INSERT).get_job_client()
        job1 = str(jc.get_job_id())
        deadline = time.time() + 120
        while table().currentSnapshot() is None:
            if status(jc) in ENDED or time.time() > deadline:
                print(f"NOT REPRODUCED: job 1 ended ({status(jc)}) or made no commit")
                return 1
            time.sleep(0.1)
        if mode == "manifest-cleaned":
            # the committer deletes the checkpoint's temporary manifest right after its Iceberg
            # commit (IcebergFilesCommitter.java:280): wait for that before cancelling, so the
            # cancel cannot come between the two (the case the default mode shows instead)
            deadline = time.time() + 60
            while has_manifest(fm) and status(jc) not in ENDED and time.time() < deadline:
                time.sleep(0.05)
        jc.cancel().result()
        stop.set()
        keeper.join()
        retained = sorted(n for n in os.listdir(os.path.join(ck, job1)) if n.startswith("chk-"))
        print(f"job 1 ({job1}) committed checkpoint 1 and was cancelled; retained checkpoints "
              f"{retained}")
        show_snapshots("after job 1")
        print(f"job 1's temporary manifests left in {os.path.basename(fm)}/: {os.listdir(fm)}; "
              f"kept by hard link: {len(os.listdir(kept))}")
        first = snapshots()
        if len(first) != 1 or first[0][3] != "1" or "chk-1" not in retained:
            print("NOT REPRODUCED (inconclusive): job 1 did not stop right after committing "
                  "checkpoint 1")
            return 1
        if mode == "manifest-cleaned" and has_manifest(fm):
            # the cancel came before the committer's clean-up (it deletes the manifest right
            # after the commit, IcebergFilesCommitter.java:280): not the case this mode shows
            print("NOT REPRODUCED (inconclusive): job 1 was cancelled before its committer "
                  "deleted the temporary manifest; run again")
            return 1
        if mode in ("kept", "control"):
            if not has_manifest(kept, fm):
                # the keeper thread never saw the manifest while it existed (a busy machine
                # starved it): nothing to put back, so not the case this mode shows
                print("NOT REPRODUCED (inconclusive): the temporary manifest was deleted before "
                      "it could be kept; run again")
                return 1
            for n in os.listdir(kept):
                # the cancel may have come before the committer deleted it: then it is there
                if not os.path.exists(os.path.join(fm, n)):
                    os.link(os.path.join(kept, n), os.path.join(fm, n))
            print("the crash after the commit, before the manifest's deletion: manifest put "
                  f"back: {os.listdir(fm)}")

        # -- meanwhile: another writer appends, and (unless --control) the expiry runs
        tenv(streaming=False).execute_sql(
            "INSERT INTO ice.db.events VALUES (100, 'other writer')").wait()
        if mode != "control":
            time.sleep(0.05)
            (table().expireSnapshots()
             .expireOlderThan(jvm.java.lang.System.currentTimeMillis())
             .retainLast(1).commit())
            print("expireSnapshots().expireOlderThan(now).retainLast(1) committed")
        show_snapshots("before the restore")
        print(f"rows before the restore: {rows()}")

        # -- job 2: the same job restored from job 1's checkpoint 1
        t2 = tenv(restore="file://" + os.path.join(ck, job1, "chk-1"))
        for s in JOB:
            t2.execute_sql(s)
        jc2 = t2.execute_sql(INSERT).get_job_client()
        job2 = str(jc2.get_job_id())
        failure = None
        deadline = time.time() + 120
        while True:
            st = status(jc2)
            if st in ENDED:
                try:
                    jc2.get_job_execution_result().result()
                    failure = f"job 2 ended {st}"
                except Exception as e:  # noqa: BLE001 - reported
                    causes = [ln.strip() for ln in str(e).splitlines()
                              if "Exception" in ln and not ln.strip().startswith("at ")]
                    failure = "\n    ".join(c[:260] for c in causes[-2:])
                break
            d = os.path.join(ck, job2)
            if os.path.isdir(d) and any(n.startswith("chk-") for n in os.listdir(d)):
                jc2.cancel().result()   # it restored and checkpointed since: enough
                break
            if time.time() > deadline:
                jc2.cancel().result()
                break
            time.sleep(0.2)
        print(f"job 2 ({job2}) restored from job 1's chk-1: "
              f"{'FAILED:' if failure else 'ran, checkpointed and was cancelled'}")
        if failure:
            print(f"    {failure}")
        show_snapshots("after the restore")
        after = rows()
        print(f"rows after the restore: {after}")
        twice = all(after.count((i, "flink job")) == 2 for i in range(1, 6))
        once = all(after.count((i, "flink job")) == 1 for i in range(1, 6))
        if mode == "control":
            if once and not failure:
                print("CONTROL OK: the restored checkpoint 1 was found committed (its snapshot "
                      "is a parent of the head) and skipped; rows once")
                return 0
            print("CONTROL FAILED")
            return 1
        if mode == "manifest-cleaned":
            if failure and "NotFoundException" in failure and once:
                print("REPRODUCED (the restore fails): the committer found no snapshot of job 1 "
                      "(expired), took checkpoint 1 as uncommitted and tried to commit it again "
                      "from its temporary manifest, deleted after the first commit: the job "
                      "cannot restore from this checkpoint; no row was duplicated")
                return 0
            print("NOT REPRODUCED")
            return 1
        if twice and not failure:
            print("REPRODUCED: the committer found no snapshot of job 1 (expired), took the "
                  "restored checkpoint 1 as uncommitted and committed its files again; ids 1-5 "
                  "are in the table twice")
            return 0
        print("NOT REPRODUCED")
        return 1
    finally:
        stop.set()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(main("control" if "--control" in args else
                  "manifest-cleaned" if "--manifest-cleaned" in args else "kept"))
