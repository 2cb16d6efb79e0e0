"""``icecheck audit`` on histories real Spark 3.5 + Iceberg 1.10.2 wrote, alone and beside
real PyIceberg 0.12, into one SQLite catalog (docs/conformance-mixed.md's shared catalog: the
table created from PyIceberg, Spark's JdbcCatalog with ``jdbc.init-catalog-tables=false``).

* a Spark merge-on-read DELETE writes a position delete, then a PyIceberg delete drops its data
  file: the delete is left behind (a v2 finding; its row stays deleted);
* reproducers/mixed_spark_mor_delete_after_pyiceberg_delete.py's interleaving: the Spark DELETE
  is held after its scan while PyIceberg removes the file, then commits its position delete
  against it: added after its data file was removed (a violation);
* the same on format v3 with Spark alone (a metadata-only DELETE removes the file while a
  merge-on-read DELETE is held): a dangling deletion vector (traces/dangling-deletes-v3-spark-
  dv-after-metadata-delete.json);
* reproducers/compaction_drops_equality_delete_undelete.py: a rewrite commit (Iceberg's API,
  as rewrite_data_files makes it) drops an equality delete its rewritten file still needs:
  the deleted row is read live again (proven from data files);
* two Spark Structured Streaming queries (a file source, trigger availableNow, as
  reproducers/spark_streaming_sink_recommits_after_expiry.py runs one) beside a batch writer,
  then expire_snapshots: the first query's commits are gone from main's walk (proven), the
  second's is one commit back and the table's settings would expire it (possible); the draft
  pipeline has the sink job and the expiry, and ``icecheck check`` runs it; the first query,
  restarted as after a crash before its commit log, commits its batch again, as the finding says.

Skipped, with the reason, without Java, PySpark, PyIceberg or the SQLite JDBC driver.
"""

import itertools
import json
import os
import threading
import time
import uuid
import warnings

import pytest
from click.testing import CliRunner

_names = itertools.count(1)


@pytest.fixture(scope="module")
def spark(mixed_target):
    from icecheck.conformance.spark_session import get_spark
    return get_spark()


class Shared:
    """One SQLite catalog in tmp_path, seen by PyIceberg and by Spark sessions."""

    def __init__(self, spark, tmp_path):
        from pyiceberg.catalog.sql import SqlCatalog

        self.spark, self.name, self.dir = spark, f"aud{next(_names)}", tmp_path
        db, wh = tmp_path / "cat.db", f"file://{tmp_path}/wh"
        self.uri = f"sqlite:///{db}"
        self.py = SqlCatalog(self.name, uri=self.uri, warehouse=wh)
        self.py.create_namespace("db")
        prefix = f"spark.sql.catalog.{self.name}"
        self.conf = {prefix: "org.apache.iceberg.spark.SparkCatalog",
                     prefix + ".catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
                     prefix + ".uri": f"jdbc:sqlite:{db}", prefix + ".warehouse": wh,
                     prefix + ".jdbc.init-catalog-tables": "false",
                     prefix + ".cache-enabled": "false"}

    def session(self):
        from icecheck.conformance.spark_session import writer_session
        s = writer_session(self.spark)
        for k, v in self.conf.items():
            s.conf.set(k, v)
        return s

    def create(self, fv: int, **props):
        """db.t (id int, v string), merge-on-read, serializable; v2 from PyIceberg, v3 from
        Spark (PyIceberg 0.12 cannot write v3 metadata)."""
        from pyiceberg.schema import Schema
        from pyiceberg.types import IntegerType, NestedField, StringType

        props = {"format-version": str(fv), "write.delete.mode": "merge-on-read",
                 "write.update.mode": "merge-on-read",
                 "write.delete.isolation-level": "serializable",
                 "write.update.isolation-level": "serializable",
                 "commit.retry.min-wait-ms": "1", **props}
        if fv >= 3:
            tbl = ", ".join(f"'{k}'='{v}'" for k, v in props.items())
            self.session().sql(f"CREATE TABLE {self.name}.db.t (id int, v string) USING iceberg "
                               f"TBLPROPERTIES ({tbl})")
        else:
            self.py.create_table("db.t", Schema(
                NestedField(1, "id", IntegerType(), required=False),
                NestedField(2, "v", StringType(), required=False)), properties=props)
        return f"{self.name}.db.t"

    def insert(self, *rows):
        """One data file holding ``rows``."""
        values = ", ".join(f"({i}, '{v}')" for i, v in rows)
        self.session().sql(f"INSERT INTO {self.name}.db.t SELECT /*+ COALESCE(1) */ * FROM "
                           f"VALUES {values} AS s(id, v)").collect()

    def audit(self, *args):
        from icecheck.cli.main import main
        r = CliRunner().invoke(main, ["audit", "db.t", "--catalog", self.uri, "--json", *args])
        assert r.exit_code in (0, 1), r.output
        return r.exit_code, json.loads(r.stdout)

    def held(self, sql: str, meanwhile) -> str:
        """Run ``sql`` (its condition calls icecheck_gate(TOKEN, id)) up to its gate, run
        ``meanwhile``, release it; how it ended."""
        from icecheck.conformance.spark_session import gate_dir

        token = uuid.uuid4().hex
        sql = sql.replace("TOKEN", token)
        outcome = {}

        def body():
            try:
                self.session().sql(sql).collect()
                outcome["spark"] = "committed"
            except Exception as e:  # noqa: BLE001 - returned
                outcome["spark"] = f"failed: {str(e)[:300]}"

        th = threading.Thread(target=body)
        th.start()
        started = os.path.join(gate_dir(), f"{token}.started")
        for _ in range(6000):                     # the statement reaches its gate
            if os.path.exists(started) or not th.is_alive():
                break
            time.sleep(0.02)
        assert os.path.exists(started), outcome
        meanwhile()
        open(os.path.join(gate_dir(), f"{token}.go"), "w").close()
        th.join()
        return outcome["spark"]


@pytest.fixture
def shared(spark, tmp_path):
    warnings.simplefilter("ignore")
    return Shared(spark, tmp_path)


def _live(shared):
    t = shared.py.load_table("db.t")
    return t, {task.file.file_path for task in t.scan().plan_files()}


def test_position_delete_left_behind_by_pyiceberg_delete(shared):
    shared.create(2)
    shared.insert((1, "a"), (2, "b"))
    shared.insert((3, "c"))
    shared.session().sql(f"DELETE FROM {shared.name}.db.t WHERE id = 1").collect()
    t, _ = _live(shared)
    [pos] = [f for f in t.inspect.delete_files().to_pylist()]
    shared.py.load_table("db.t").delete("id = 2")     # drops the file; the delete stays
    code, doc = shared.audit()
    assert code == 0
    [f] = doc["findings"]
    assert (f["check"], f["severity"], f["certainty"]) == ("dangling_delete", "finding",
                                                           "proven from metadata")
    assert f["files"][0] == pos["file_path"]
    assert f["details"]["added_after_data_file_removed"] is False
    assert f["details"]["still_dangling_in"] == ["main"]
    assert f["rows"] == [{"id": 1, "v": "a"}]
    assert shared.audit("--strict")[0] == 1


def test_spark_mor_delete_after_pyiceberg_delete_dangles(shared):
    """The mixed reproducer's race: the position delete is added after PyIceberg removed its
    data file (a violation naming both snapshots)."""
    t = shared.create(2)
    shared.insert((0, "v0"), (2, "v0"))
    shared.insert((1, "v0"))
    _, before = _live(shared)
    result = shared.held(f"DELETE FROM {t} WHERE id = 1 AND icecheck_gate('TOKEN', id)",
                         lambda: shared.py.load_table("db.t").delete("id = 1"))
    assert result == "committed"
    snaps = shared.py.load_table("db.t").metadata.snapshots
    py_delete, spark_delete = snaps[-2], snaps[-1]
    code, doc = shared.audit()
    assert code == 1
    [f] = doc["findings"]
    assert (f["check"], f["severity"]) == ("dangling_delete", "violation")
    assert f["details"]["added_after_data_file_removed"] is True
    assert f["details"]["removed_by"] == py_delete.snapshot_id
    assert f["details"]["dangling_from"] == spark_delete.snapshot_id
    assert f["files"][1] in before
    assert f["rows"] == [{"id": 1, "v": "v0"}]
    # the draft pipeline: Spark's jobs by their summaries' engine-name, PyIceberg's by none;
    # profiles from the table's merge-on-read and serializable properties
    import yaml

    from icecheck.cli.main import main
    out = shared.dir / "p.yaml"
    r = CliRunner().invoke(main, ["audit", "db.t", "--catalog", shared.uri, "--pipeline",
                                  str(out)])
    assert r.exit_code == 1, r.output
    jobs = {j["name"]: (j["profile"], j["program"][0]) for j in
            yaml.safe_load(out.read_text())["jobs"]}
    assert jobs["spark-delete"] == ("spark-3.5-mor-serializable",
                                    {"sql": "DELETE", "where": "id = {key}"})
    assert jobs["pyiceberg-delete"][0] == "pyiceberg-0.12-serializable"
    assert jobs["spark-insert"][1]["sql"] == "INSERT"
    r = CliRunner().invoke(main, ["check", str(out), "--reports", str(shared.dir / "check")])
    assert r.exit_code in (0, 1) and "icecheck check" in r.stdout, r.output


def test_v3_deletion_vector_after_metadata_delete_dangles(shared):
    t = shared.create(3)
    shared.insert((0, "a"), (1, "b"), (2, "c"))
    shared.insert((5, "x"))
    other = shared.session()
    result = shared.held(f"DELETE FROM {t} WHERE id = 1 AND icecheck_gate('TOKEN', id)",
                         lambda: other.sql(f"DELETE FROM {t} WHERE id >= 0 AND id <= 2")
                         .collect())
    assert result == "committed", result
    code, doc = shared.audit()
    assert code == 1
    [f] = doc["findings"]
    assert (f["check"], f["severity"]) == ("dangling_delete", "violation")
    assert f["details"]["deletion_vector"] is True
    assert f["details"]["added_after_data_file_removed"] is True
    assert f["rows"] == [{"id": 1, "v": "b"}]


def test_compaction_dropping_an_equality_delete_is_an_undelete(shared):
    """reproducers/compaction_drops_equality_delete_undelete.py on the shared catalog."""
    t = shared.create(2)
    spark = shared.session()
    spark.sql(f"INSERT INTO {t} SELECT /*+ REPARTITION(1) */ * FROM VALUES (0, 'v0'), "
              f"(1, 'v0') AS s(id, v)").collect()
    jvm, gateway = spark._jvm, spark.sparkContext._gateway
    ice = jvm.org.apache.iceberg

    def table():
        return jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, t)

    def new_file(tbl, name):
        out = tbl.io().newOutputFile(f"{tbl.location()}/data/{name}-{uuid.uuid4()}.parquet")
        return ice.encryption.EncryptedFiles.plainAsEncryptedOutput(out)

    tbl = table()
    start = tbl.currentSnapshot()
    start_id, start_seq = start.snapshotId(), start.sequenceNumber()
    tasks = tbl.newScan().useSnapshot(start_id).planFiles().iterator()
    old_files = []
    while tasks.hasNext():
        old_files.append(tasks.next().file())
    schema = tbl.schema()
    writer = ice.data.GenericAppenderFactory(schema, tbl.spec()).newDataWriter(
        new_file(tbl, "rewrite"), ice.FileFormat.PARQUET, None)
    for rid in (0, 1):
        rec = ice.data.GenericRecord.create(schema)
        rec.setField("id", rid)
        rec.setField("v", "v0")
        writer.write(rec)
    writer.close()
    rewritten = writer.toDataFile()
    # the CDC job's equality delete of id 1
    tbl = table()
    eq_ids = gateway.new_array(gateway.jvm.int, 1)
    eq_ids[0] = schema.findField("id").fieldId()
    eq_schema = schema.select(["id"])
    eq_writer = ice.data.GenericAppenderFactory(schema, tbl.spec(), eq_ids, eq_schema, None) \
        .newEqDeleteWriter(new_file(tbl, "eq-delete"), ice.FileFormat.PARQUET, None)
    key = ice.data.GenericRecord.create(eq_schema)
    key.setField("id", 1)
    eq_writer.write(key)
    eq_writer.close()
    tbl.newRowDelta().addDeletes(eq_writer.toDeleteFile()).commit()
    spark.sql(f"INSERT INTO {t} VALUES (5, 'new')").collect()
    # the compaction commits as rewrite_data_files does (use-starting-sequence-number=true)
    rewrite = table().newRewrite().validateFromSnapshot(start_id)
    rewrite.dataSequenceNumber(start_seq)
    for f in old_files:
        rewrite.deleteFile(f)
    rewrite.addFile(rewritten)
    rewrite.commit()
    assert (1, "v0") in [tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect()]

    replace = shared.py.load_table("db.t").current_snapshot()
    code, doc = shared.audit()
    assert code == 1
    [f] = doc["findings"]
    assert (f["check"], f["property"], f["certainty"]) == (
        "dropped_equality_delete", "undelete", "proven from data files")
    assert f["snapshots"][-1] == replace.snapshot_id
    assert [{k: v for k, v in r.items() if k != "_file"} for r in f["rows"]] == [
        {"id": 1, "v": "v0"}]
    code, doc = shared.audit("--no-read-data")
    assert doc["findings"][0]["certainty"] == "possible"


def test_streaming_sink_after_expiry(shared):
    """Query A commits epoch 0, a batch INSERT follows, query B commits epoch 0, another INSERT,
    then expire_snapshots(retain_last => 2) with the table's history.expire.max-snapshot-age-ms
    of 1 ms: A's snapshot and the first INSERT go. The audit reports A's walk broken (its
    commit is only in an older metadata file) and B's commit one back along main, which the
    table's settings (keep 1, 1 ms) would already expire; the draft has B as a sink job with an
    expire-snapshots job, and ``icecheck check`` runs it. Then A is restarted as after a crash
    between its table commit and its commit log (reproducers/spark_streaming_sink_recommits_
    after_expiry.py): it commits its batch again, its row twice, as the finding says."""
    import yaml

    from icecheck.cli.main import main

    t = shared.create(2, **{"history.expire.max-snapshot-age-ms": "1"})
    spark = shared.session()
    spark.sql(f"SELECT * FROM {t}").collect()    # toTable resolves the catalog once it is used

    def stream(name: str, row: tuple) -> str:
        src = shared.dir / f"src-{name}"
        src.mkdir(exist_ok=True)
        (src / "part-1.json").write_text(json.dumps({"id": row[0], "v": row[1]}) + "\n")
        q = (spark.readStream.schema("id INT, v STRING").json(str(src)).writeStream
             .format("iceberg").outputMode("append")
             .option("checkpointLocation", str(shared.dir / f"ckpt-{name}"))
             .trigger(availableNow=True).toTable(t))
        q.awaitTermination()
        return str(q.id)

    qa = stream("a", (1, "a"))
    spark.sql(f"INSERT INTO {t} VALUES (100, 'batch')").collect()
    qb = stream("b", (2, "b"))
    spark.sql(f"INSERT INTO {t} VALUES (101, 'batch')").collect()
    snaps = shared.py.load_table("db.t").metadata.snapshots
    assert len(snaps) == 4
    a_snap, b_snap, head = snaps[0].snapshot_id, snaps[2].snapshot_id, snaps[3].snapshot_id
    spark.sql(f"CALL {shared.name}.system.expire_snapshots(table => 'db.t', "
              f"retain_last => 2)").collect()
    assert [s.snapshot_id for s in shared.py.load_table("db.t").metadata.snapshots] == [
        b_snap, head]

    code, doc = shared.audit()
    assert code == 0, doc["findings"]
    by = {f["check"]: f for f in doc["findings"]}
    assert set(by) == {"sink_ancestry_broken", "sink_expiry_risk"}, doc["findings"]
    broken, risk = by["sink_ancestry_broken"], by["sink_expiry_risk"]
    assert broken["certainty"] == "proven from metadata"
    assert (broken["details"]["identity"], broken["details"]["commits_in_table"],
            broken["details"]["commits_only_in_older_metadata"]) == (qa, 0, 1)
    assert a_snap in broken["snapshots"]
    assert f"(its parent {snaps[1].snapshot_id} is no longer in the table)" in broken["message"]
    assert "commits that batch again: its rows twice" in broken["message"]
    assert risk["certainty"] == "possible"
    assert (risk["details"]["identity"], risk["details"]["last_commit"],
            risk["details"]["commits_since"], risk["details"]["removable_now"]) == (
        qb, b_snap, 1, True)
    assert any("parent" in e and "no longer in the table" in e
               for e in doc["expiry"]["evidence"])

    out = shared.dir / "draft.yaml"
    r = CliRunner().invoke(main, ["audit", "db.t", "--catalog", shared.uri, "-q",
                                  "--pipeline", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    jobs = {j["name"]: j for j in yaml.safe_load(text)["jobs"]}
    assert list(jobs) == ["spark-stream", "spark-insert", "expire-snapshots"]
    assert jobs["spark-stream"]["profile"].startswith("spark-3.5-")
    assert jobs["spark-stream"]["sink"] == {"restarts": 1, "restart": ["checkpoint"]}
    assert [c["sql"] for c in jobs["spark-stream"]["program"]] == ["INSERT", "INSERT"]
    assert f"Spark Structured Streaming query {qb}: inferred from its stamp" in text
    assert jobs["expire-snapshots"]["program"] == [{"sql": "EXPIRE", "retain_last": 1}]
    r = CliRunner().invoke(main, ["check", str(out), "--no-fix",
                                  "--reports", str(shared.dir / "check")])
    assert r.exit_code in (0, 1), r.output
    assert "job `spark-stream`" in r.stdout

    # what the finding says, on the real sink: A restarted after a crash before its commit log
    for f in ("0", ".0.crc"):
        p = shared.dir / "ckpt-a" / "commits" / f
        if p.exists():
            p.unlink()
    assert stream("a", (1, "a")) == qa
    rows = [tuple(x) for x in spark.sql(f"SELECT * FROM {t} WHERE id = 1").collect()]
    assert rows == [(1, "a"), (1, "a")]
