"""``icecheck audit`` on streaming sinks: the restart-after-expiry risk (audit/sinks.py).

Each table is written by real PyIceberg 0.12 into a SQLite catalog in tmp_path; a sink's
commits are appends carrying the summary properties its engine stamps (PyIceberg's
``snapshot_properties``): Spark's ``spark.sql.streaming.queryId``/``epochId``, Flink's
``flink.job-id``/``flink.operator-id``/``flink.max-committed-checkpoint-id``, Kafka Connect's
``kafka.connect.offsets.<topic>.<group>``. Expiry is PyIceberg's ``expire_snapshots().by_id``.
The time an expiry is judged at is passed in (``now_ms``), so nothing depends on the clock.
A real Spark Structured Streaming table is audited in tests/conformance/test_audit_spark.py.
"""

import json
import warnings

import pytest

pytest.importorskip("pyiceberg.catalog.sql",
                    reason="PyIceberg is not installed (pip install -e '.[conformance]')")

import pyarrow as pa  # noqa: E402
import yaml  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.types import IntegerType, NestedField, StringType  # noqa: E402

from icecheck.audit import audit  # noqa: E402
from icecheck.cli.main import main  # noqa: E402

SCHEMA = Schema(NestedField(1, "id", IntegerType(), required=False),
                NestedField(2, "v", StringType(), required=False))
ARROW = pa.schema([pa.field("id", pa.int32()), pa.field("v", pa.string())])


def spark(query, epoch):
    return {"spark.sql.streaming.queryId": query, "spark.sql.streaming.epochId": str(epoch)}


def flink(job, checkpoint, operator="op-7"):
    return {"flink.job-id": job, "flink.operator-id": operator,
            "flink.max-committed-checkpoint-id": str(checkpoint)}


def kafka(offset, group="ctl.grp"):
    return {f"kafka.connect.offsets.{group}": json.dumps({"0": offset}),
            "kafka.connect.commit-id": f"commit-{offset}"}


class Cat:
    def __init__(self, tmp_path):
        warnings.simplefilter("ignore")
        self.dir = tmp_path
        self.uri = f"sqlite:///{tmp_path / 'cat.db'}"
        self.catalog = SqlCatalog("aud", uri=self.uri, warehouse=f"file://{tmp_path}/wh")
        self.catalog.create_namespace("db")
        self.n = 0

    def table(self, **props):
        return self.catalog.create_table("db.t", SCHEMA, properties=props)

    def load(self):
        return self.catalog.load_table("db.t")

    def append(self, props=None, branch="main"):
        """One commit of one row; its snapshot id."""
        self.n += 1
        t = self.load()
        t.append(pa.Table.from_pylist([{"id": self.n, "v": "x"}], schema=ARROW),
                 snapshot_properties=props or {}, branch=branch)
        t = self.load()
        return t.metadata.refs[branch].snapshot_id

    def expire(self, *ids):
        self.load().maintenance.expire_snapshots().by_ids(list(ids)).commit()

    def audit(self, now_ms=None):
        t = self.load()
        return audit(t, "db.t", now_ms=now_ms), t

    def cli(self, *args):
        return CliRunner().invoke(main, ["audit", "db.t", "--catalog", self.uri, *args])


@pytest.fixture
def cat(tmp_path):
    return Cat(tmp_path)


def _only(report, check):
    found = [f for f in report.findings if f.check == check]
    assert len(found) == 1, [(f.check, f.message) for f in report.findings]
    return found[0]


def test_spark_sink_commits_back_and_the_table_settings_decide_the_risk(cat):
    """The query's last commit (epoch 1) is 2 commits back along main. With the table's
    history.expire.min-snapshots-to-keep=2 and max-snapshot-age-ms=60 s, an expiry 61 s after
    the head would already remove it (only the two newest are kept); at the head's time every
    snapshot is younger than 60 s and is kept."""
    cat.table(**{"history.expire.min-snapshots-to-keep": "2",
                 "history.expire.max-snapshot-age-ms": "60000"})
    cat.append(spark("q-1", 0))
    s1 = cat.append(spark("q-1", 1))
    cat.append()
    head = cat.append()
    head_ts = cat.load().current_snapshot().timestamp_ms
    rep, _ = cat.audit(now_ms=head_ts + 61_000)
    f = _only(rep, "sink_expiry_risk")
    assert (f.severity, f.certainty, f.property) == ("finding", "possible", "duplicate_keys")
    d = f.details
    assert (d["engine"], d["identity"], d["last_commit"], d["commits_since"]) == (
        "spark", "q-1", s1, 2)
    assert (d["min_snapshots_to_keep"], d["max_snapshot_age_ms"], d["kept_by_expiry_now"],
            d["removable_now"]) == (2, 60000, 2, True)
    assert f.snapshots == [s1, head]
    assert "epoch 1 in snapshot" in f.message and "would already remove it" in f.message
    assert "commits that batch again: its rows twice" in f.message
    assert 'docs/pipelines.md "Streaming jobs that fail and restart"' in f.message
    assert not [x for x in rep.findings if x.check == "sink_ancestry_broken"]
    assert rep.sinks["spark:q-1"]["commits_since"] == 2

    rep, _ = cat.audit(now_ms=head_ts)
    d = _only(rep, "sink_expiry_risk").details
    assert (d["kept_by_expiry_now"], d["removable_now"]) == (4, False)
    assert "would keep it" in _only(rep, "sink_expiry_risk").message


def test_default_settings_and_a_sink_at_the_head(cat):
    """Without expiry properties Iceberg's defaults apply (TableProperties.java:349-353:
    keep 1, 5 days): a commit one back and a minute old is kept. A sink whose last commit is
    the head is not reported (an expiry always keeps the head), but its walk is recorded."""
    cat.table()
    cat.append(spark("q-1", 0))
    head = cat.append(kafka(10))
    ts = cat.load().current_snapshot().timestamp_ms
    rep, _ = cat.audit(now_ms=ts + 60_000)
    f = _only(rep, "sink_expiry_risk")
    assert f.details["identity"] == "q-1"
    assert (f.details["min_snapshots_to_keep"], f.details["max_snapshot_age_ms"]) == (
        1, 5 * 24 * 3600 * 1000)
    assert f.details["removable_now"] is False
    assert "(Iceberg's default)" in f.message
    assert rep.sinks["kafka-connect:ctl.grp"] == {
        "engine": "kafka-connect", "identity": "ctl.grp", "branch": "main",
        "snapshots": [head], "expired_snapshots": [], "found": head, "commits_since": 0}
    assert rep.expiry.evidence == [] and rep.stats["metadata_log_files_read"] == 0


def test_gc_disabled_keeps_the_commit(cat):
    cat.table(**{"gc.enabled": "false", "history.expire.max-snapshot-age-ms": "1"})
    cat.append(spark("q-1", 0))
    cat.append()
    rep, t = cat.audit(now_ms=cat.load().current_snapshot().timestamp_ms + 10)
    f = _only(rep, "sink_expiry_risk")
    assert f.details["removable_now"] is False and f.details["gc_enabled"] is False
    assert "gc.enabled=false" in f.message


def test_walk_past_an_expired_snapshot_is_a_proven_broken_ancestry(cat):
    """Expiring the snapshot between the sink's commit and the head cuts the walk (PyIceberg
    clears the child's parent id; Java keeps the id of a parent it no longer has: both end the
    walk) while the sink's commit is still in the table."""
    cat.table()
    s0 = cat.append(flink("job-a", 3))
    mid = cat.append()
    head = cat.append()
    cat.expire(mid)
    rep, t = cat.audit()
    assert [s.snapshot_id for s in t.metadata.snapshots] == [s0, head]
    f = _only(rep, "sink_ancestry_broken")
    assert (f.severity, f.certainty) == ("finding", "proven from metadata")
    assert f.details["identity"] == "operator op-7" and f.details["walk_ends_at"] == head
    assert f.details["commits_in_table"] == 1 and s0 in f.snapshots
    assert "checkpoint 3 of job job-a in snapshot" in f.message
    assert "the restore fails" in f.message and "apache/iceberg#5846" in f.message
    assert not [x for x in rep.findings if x.check == "sink_expiry_risk"]
    # the evidence: a second snapshot without a parent, and the older metadata files
    assert any("names no parent" in e for e in rep.expiry.evidence)
    assert mid in rep.expiry.expired and rep.expiry.expired[mid].parent == s0
    assert 0 < rep.stats["metadata_log_files_read"] <= len(t.metadata.metadata_log)


def test_a_sink_whose_commits_were_all_expired_is_found_in_older_metadata(cat):
    cat.table()
    s0 = cat.append(spark("q-old", 4))
    cat.append()
    cat.append()
    cat.expire(s0)
    rep, t = cat.audit()
    assert s0 not in {s.snapshot_id for s in t.metadata.snapshots}
    f = _only(rep, "sink_ancestry_broken")
    assert f.details["commits_in_table"] == 0 and f.details["commits_only_in_older_metadata"] == 1
    assert "the table had its commit (epoch 4 in snapshot" in f.message and "since expired" \
        in f.message
    assert s0 in f.snapshots
    assert rep.sinks["spark:q-old"]["expired_snapshots"] == [s0]
    code = cat.cli("-q").exit_code
    assert code == 0                      # a finding, not a violation
    assert cat.cli("-q", "--strict").exit_code == 1


def test_a_sink_on_its_own_branch_is_walked_there(cat):
    """A sink committing to a branch is walked from that branch's head, with the branch's own
    retention (RemoveSnapshots.java:284-292: a ref's min-snapshots-to-keep first)."""
    cat.table(**{"history.expire.max-snapshot-age-ms": "1"})
    base = cat.append()
    cat.load().manage_snapshots().create_branch(base, "stream").commit()
    s1 = cat.append(spark("q-b", 0), branch="stream")
    head = cat.append(branch="stream")
    cat.append()
    # PyIceberg's commits to a branch drop its retention settings: set them afterwards
    cat.load().manage_snapshots().remove_branch("stream").commit()
    cat.load().manage_snapshots().create_branch(head, "stream", min_snapshots_to_keep=5).commit()
    assert cat.load().metadata.refs["stream"].min_snapshots_to_keep == 5
    ts = cat.load().current_snapshot().timestamp_ms
    rep, _ = cat.audit(now_ms=ts + 1000)
    f = _only(rep, "sink_expiry_risk")
    assert (f.details["branch"], f.details["last_commit"], f.details["commits_since"]) == (
        "stream", s1, 1)
    assert f.details["min_snapshots_to_keep"] == 5 and f.details["removable_now"] is False
    assert "the branch's own setting" in f.message


def test_draft_groups_each_sink_by_identity_and_adds_the_expiry(cat):
    """Two Flink jobs of one operator are one sink job; a Kafka Connect group another; a plain
    PyIceberg writer stays a job of its own (the broken walks name two of its commits, the head
    and where the walk ends, which is not two overlapping runs); the expiry the history shows
    becomes an EXPIRE job whose retain_last is the table's min-snapshots-to-keep, said to be a
    guess."""
    cat.table(**{"history.expire.min-snapshots-to-keep": "3"})
    f1 = cat.append(flink("job-a", 1))
    cat.append(kafka(5))
    f2 = cat.append(flink("job-b", 2))
    cat.append()
    cat.append(kafka(9))
    gone = cat.append()
    cat.append()
    cat.append()
    cat.expire(gone)
    out = cat.dir / "draft.yaml"
    r = cat.cli("-q", "--pipeline", str(out))
    assert r.exit_code == 0, r.output
    assert r.stdout.count("sink_ancestry_broken") == 2
    text = out.read_text()
    doc = yaml.safe_load(text)
    jobs = {j["name"]: j for j in doc["jobs"]}
    assert list(jobs) == ["flink-sink", "kafka-connect-sink", "pyiceberg-insert",
                          "expire-snapshots"]
    assert jobs["flink-sink"]["profile"] == "flink-1.20-upsert"
    assert jobs["kafka-connect-sink"]["profile"] == "kafka-connect-1.11"
    for name in ("flink-sink", "kafka-connect-sink"):
        assert jobs[name]["sink"] == {"restarts": 1, "restart": ["checkpoint"]}
        assert [c["sql"] for c in jobs[name]["program"]] == ["INSERT", "INSERT"]
    assert "sink" not in jobs["pyiceberg-insert"]
    keys = [[c["rows"][0][0] for c in jobs[n]["program"]] for n in ("flink-sink",
                                                                     "kafka-connect-sink")]
    assert len(set(keys[0] + keys[1])) == 4     # two sinks never append one key
    assert jobs["expire-snapshots"]["program"] == [{"sql": "EXPIRE", "retain_last": 3}]
    assert (f"# a streaming sink, the Flink sink (operator op-7): inferred from its stamp "
            f"(flink.operator-id / flink.job-id) on 2 snapshot(s): {f1}, {f2}") in text
    assert "# it committed checkpoint 1 of job job-a to checkpoint 2 of job job-b; Flink jobs " \
        "job-a, job-b: one operator id, one sink" in text
    assert "#   - the table sets history.expire.min-snapshots-to-keep=3" in text
    assert "#   - 1 snapshot(s) that older metadata files hold are no longer in the table" in text
    assert "# retain_last 3 is a guess (the table's history.expire.min-snapshots-to-keep)" in text


def test_no_expiry_evidence_no_expire_job(cat):
    cat.table()
    cat.append(spark("q-1", 0))
    cat.append()
    out = cat.dir / "draft.yaml"
    assert cat.cli("-q", "--pipeline", str(out)).exit_code == 0
    names = [j["name"] for j in yaml.safe_load(out.read_text())["jobs"]]
    assert names == ["spark-stream", "pyiceberg-insert"]


def test_an_upsert_sink_stays_a_job_of_its_commands(cat):
    """A Flink sink whose commits include an overwrite is not drafted as a sink (the model's
    sinks append); its appends and its overwrite go to the jobs of their commands."""
    cat.table()
    cat.append(flink("job-a", 1))
    t = cat.load()
    t.overwrite(pa.Table.from_pylist([{"id": 50, "v": "y"}], schema=ARROW),
                snapshot_properties=flink("job-a", 2))
    out = cat.dir / "draft.yaml"
    assert cat.cli("-q", "--pipeline", str(out)).exit_code == 0
    jobs = yaml.safe_load(out.read_text())["jobs"]
    assert all("sink" not in j for j in jobs)
    assert {j["profile"] for j in jobs} == {"flink-1.20-upsert"}


def test_kafka_connect_draft_after_expiry_is_checked(cat):
    """The draft of a Kafka Connect sink beside another writer, after an expiry: ``icecheck
    check`` runs it (exit 0 or 1, never 2) and explores the restart after the expiry."""
    cat.table()
    cat.append(kafka(3))
    mid = cat.append()
    cat.append(kafka(7))
    cat.append()
    cat.expire(mid)
    out = cat.dir / "draft.yaml"
    r = cat.cli("-q", "--pipeline", str(out))
    assert r.exit_code == 0, r.output
    assert "sink_ancestry_broken" not in r.stdout        # the sink's last commit is reachable
    # PyIceberg's expiry cleared the parent id of the removed snapshot's child: not a commit
    # from a stale parent (history.Lineage._expired_between)
    assert "stale_parent" not in r.stdout
    names = [j["name"] for j in yaml.safe_load(out.read_text())["jobs"]]
    assert names == ["kafka-connect-sink", "pyiceberg-insert", "expire-snapshots"]
    r = CliRunner().invoke(main, ["check", str(out), "--no-fix",
                                  "--reports", str(cat.dir / "check")])
    assert r.exit_code in (0, 1), r.output
    assert "job `kafka-connect-sink` (kafka-connect-1.11)" in r.stdout
    assert "FAIL: duplicate_keys (jobs: kafka-connect-sink)" in r.stdout
