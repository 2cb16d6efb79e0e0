"""Streaming sinks in a real table's history, and whether a restart would still find its last
commit (issue 41 applied to docs/pipelines.md "Streaming jobs that fail and restart").

A streaming sink decides what to commit again after a restart from what it stamped on its own
commits: it walks from the branch head back along parent ids to its last commit, and the walk
stops at the first parent the table no longer has (an expired snapshot). Each engine's walk:

* **Spark Structured Streaming** (Iceberg 1.10.2, spark/v3.5/spark/src/main/java/org/apache/
  iceberg/spark/source/SparkWrite.java:558-578): every commit is stamped
  ``spark.sql.streaming.queryId`` and ``spark.sql.streaming.epochId``; ``commit(epochId)``
  walks from ``table.currentSnapshot()`` along ``parentId`` while ``table.snapshot(parentId)``
  finds the parent, to the first snapshot of its query id, and skips the epoch only when that
  snapshot's epoch is at least this one (lines 542-551). A query id lives in the checkpoint
  location, so it identifies the job across restarts.
* **Flink's FlinkSink** (flink/v1.20/flink/src/main/java/org/apache/iceberg/flink/sink/
  SinkUtil.java:83-105 at 1.10.2): commits carry ``flink.job-id``, ``flink.operator-id`` and
  ``flink.max-committed-checkpoint-id``; a restore walks from ``table.snapshot(branch)`` along
  parents for the restored job id with a matching (or absent) operator id. The job id changes
  when a job is redeployed from a savepoint; the operator id does not, so one operator id is one
  sink across its jobs.
* **Kafka Connect's Iceberg sink** (kafka-connect/kafka-connect/src/main/java/org/apache/
  iceberg/connect/channel/Coordinator.java at 1.11.0): commits carry
  ``kafka.connect.offsets.<control topic>.<group>`` (lines 99-101) and
  ``kafka.connect.commit-id``; the coordinator reads its committed offsets from the first
  snapshot with that key along ``SnapshotUtil.ancestorsOf(head, table::snapshot)`` (lines
  356-376) and leaves out the events below them (lines 231-246).

``sink_findings`` reports, for each identity found in the snapshots (and in the older metadata
files the metadata log names, which keep snapshots an expiry removed):

* ``sink_ancestry_broken`` (proven from metadata): the walk from the branch head along parent
  ids reaches no commit of the identity, although the table has one elsewhere (off the walk,
  past a removed snapshot) or had one (an older metadata file): a restart would not find it.
* ``sink_expiry_risk`` (possible): the walk finds the identity's last commit ``d >= 1`` commits
  back; how old it is, and whether ``expire_snapshots`` run now with the table's settings would
  already remove it. Iceberg keeps a branch's newest ancestors while fewer than
  ``min-snapshots-to-keep`` are kept or while they are younger than ``now -
  max-snapshot-age-ms``, and stops at the first it does not keep (RemoveSnapshots.java:299-312
  at 1.10.2), with the branch's own settings first and the table's properties
  (``history.expire.min-snapshots-to-keep``, default 1; ``history.expire.max-snapshot-age-ms``,
  default 5 days: TableProperties.java:349-353) otherwise (RemoveSnapshots.java:90-98, 282-297).
  A sink whose last commit is the head is not reported: an expiry always keeps the head.

``expiry_evidence`` says whether the table shows snapshot expiry (the ``history.expire.*``
properties, a snapshot whose parent the table no longer has, sequence numbers below the oldest
snapshot's that no snapshot holds, snapshots the older metadata files hold and the table does
not); ``audit/pipeline.py`` adds an EXPIRE job to the draft when it does. The metadata log's
files are read only when the current metadata already shows a removed snapshot (a cheap test,
so that a table never expired costs nothing), at most ``MAX_LOG_FILES`` of them, newest first;
only small records of the snapshots the table no longer has are kept.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import json
from dataclasses import dataclass, field

from .findings import FINDING, POSSIBLE, PROVEN_METADATA, Finding

SPARK, FLINK, KAFKA_CONNECT = "spark", "flink", "kafka-connect"
SPARK_QUERY_ID = "spark.sql.streaming.queryId"
SPARK_EPOCH_ID = "spark.sql.streaming.epochId"
FLINK_JOB_ID = "flink.job-id"
FLINK_OPERATOR_ID = "flink.operator-id"
FLINK_MAX_COMMITTED = "flink.max-committed-checkpoint-id"
KC_OFFSETS_PREFIX = "kafka.connect.offsets."

#: TableProperties.java:349-356 at 1.10.2
MAX_SNAPSHOT_AGE_MS = "history.expire.max-snapshot-age-ms"
MAX_SNAPSHOT_AGE_MS_DEFAULT = 5 * 24 * 60 * 60 * 1000
MIN_SNAPSHOTS_TO_KEEP = "history.expire.min-snapshots-to-keep"
MIN_SNAPSHOTS_TO_KEEP_DEFAULT = 1
MAX_REF_AGE_MS = "history.expire.max-ref-age-ms"
EXPIRE_PROPERTIES = (MIN_SNAPSHOTS_TO_KEEP, MAX_SNAPSHOT_AGE_MS, MAX_REF_AGE_MS)
#: TableProperties.GC_ENABLED; RemoveSnapshots refuses to run without it (lines 86-88)
GC_ENABLED = "gc.enabled"

#: at most this many metadata-log files read for expired snapshots (Iceberg keeps 100 by
#: default: write.metadata.previous-versions-max)
MAX_LOG_FILES = 100

ENGINE_TEXT = {SPARK: "Spark Structured Streaming", FLINK: "Flink (FlinkSink)",
               KAFKA_CONNECT: "Kafka Connect (Iceberg sink)"}
DOC = 'docs/pipelines.md "Streaming jobs that fail and restart"'


def identity(summary: dict) -> tuple[str, str] | None:
    """``(engine, key)`` of the streaming sink that stamped a snapshot summary, or None."""
    if summary.get(SPARK_QUERY_ID):
        return SPARK, summary[SPARK_QUERY_ID]
    if summary.get(FLINK_JOB_ID) and FLINK_MAX_COMMITTED in summary:
        op = summary.get(FLINK_OPERATOR_ID)
        return FLINK, (f"operator {op}" if op else f"job {summary[FLINK_JOB_ID]}")
    for k in summary:
        if k.startswith(KC_OFFSETS_PREFIX):
            return KAFKA_CONNECT, k[len(KC_OFFSETS_PREFIX):]
    return None


def describe_identity(engine: str, key: str) -> str:
    if engine == SPARK:
        return f"the Spark Structured Streaming query {key}"
    if engine == FLINK:
        return f"the Flink sink ({key})"
    return f"the Kafka Connect sink (offsets key {KC_OFFSETS_PREFIX}{key})"


def position(engine: str, summary: dict) -> str:
    """What the commit says about the sink's progress: its epoch, checkpoint or commit id."""
    if engine == SPARK:
        return f"epoch {summary.get(SPARK_EPOCH_ID, '?')}"
    if engine == FLINK:
        return (f"checkpoint {summary.get(FLINK_MAX_COMMITTED, '?')} of job "
                f"{summary.get(FLINK_JOB_ID, '?')}")
    cid = summary.get("kafka.connect.commit-id")
    return f"commit {cid}" if cid else "a coordinator commit"


@dataclass
class Snap:
    """What the sink checks keep of a snapshot (one the table has, or one an older metadata
    file held)."""
    sid: int
    parent: int | None
    ts: int
    seq: int | None
    summary: dict
    metadata_file: str = ""        # for a snapshot the table no longer has: where it was seen


@dataclass
class Expiry:
    """Evidence that snapshots were expired, and the table's expiry settings."""
    evidence: list[str] = field(default_factory=list)
    expired: dict = field(default_factory=dict)         # sid -> Snap (from older metadata)
    log_files_read: int = 0

    def as_json(self) -> dict:
        return {"evidence": list(self.evidence), "expired_snapshots_seen": len(self.expired),
                "metadata_log_files_read": self.log_files_read}


def _summary(s) -> dict:
    summ = s.summary
    if summ is None:
        return {}
    out = dict(getattr(summ, "additional_properties", {}) or {})
    op = getattr(summ, "operation", None)
    if op is not None:
        out.setdefault("operation", getattr(op, "value", op))
    return out


def _when(ms: int) -> str:
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime(
        "%Y-%m-%d %H:%M:%S UTC")


def span(ms: float) -> str:
    s = abs(ms) / 1000
    if s < 1:
        return f"{abs(ms):.0f} ms"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if s >= size:
            return f"{s / size:.1f} {unit}s"
    return f"{s:.1f} s"


def _read_json(io, path: str):
    with io.new_input(path).open() as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def expiry_evidence(table, max_files: int = MAX_LOG_FILES) -> Expiry:
    """What shows that snapshots were expired from ``table`` (a loaded PyIceberg table)."""
    meta = table.metadata
    props = dict(meta.properties)
    snaps = {s.snapshot_id: s for s in meta.snapshots}
    out = Expiry()
    set_props = [f"{k}={props[k]}" for k in EXPIRE_PROPERTIES if k in props]
    if set_props:
        out.evidence.append("the table sets " + ", ".join(set_props))
    orphans = [s for s in meta.snapshots
               if s.parent_snapshot_id is not None and s.parent_snapshot_id not in snaps]
    removed = bool(orphans)
    if orphans:
        s = min(orphans, key=lambda s: s.sequence_number or 0)
        out.evidence.append(f"snapshot {s.snapshot_id}'s parent {s.parent_snapshot_id} is no "
                            "longer in the table" + (f" ({len(orphans) - 1} more like it)"
                                                      if len(orphans) > 1 else ""))
    roots = sorted((s for s in meta.snapshots if s.parent_snapshot_id is None),
                   key=lambda s: (s.sequence_number or 0, s.timestamp_ms))
    if len(roots) > 1:
        # PyIceberg's expiry clears the parent id of a removed snapshot's child (its
        # RemoveSnapshotsUpdate handler, pyiceberg/table/update/__init__.py:515-528 in
        # 0.12.0); Java keeps it
        removed = True
        out.evidence.append(f"snapshot {roots[1].snapshot_id} names no parent though older "
                            f"snapshots exist: its parent was removed (or the table was "
                            f"replaced)")
    if int(meta.format_version) >= 2 and meta.snapshots:
        oldest = min(s.sequence_number or 0 for s in meta.snapshots)
        if oldest > 1:
            removed = True
            out.evidence.append(f"the oldest snapshot has sequence number {oldest}: no snapshot "
                                f"of the table holds {'1' if oldest == 2 else f'1-{oldest - 1}'}")
    if not removed:
        return out
    seen_in = {}
    for entry in list(reversed(meta.metadata_log))[:max_files]:
        try:
            doc = _read_json(table.io, entry.metadata_file)
        except Exception:  # noqa: BLE001 - a missing or unreadable file is missing_file's
            continue
        out.log_files_read += 1
        for d in doc.get("snapshots", []) or []:
            sid = d.get("snapshot-id")
            if sid is None or sid in snaps or sid in out.expired:
                continue
            summ = {k: str(v) for k, v in (d.get("summary") or {}).items()}
            out.expired[sid] = Snap(sid, d.get("parent-snapshot-id"), d.get("timestamp-ms", 0),
                                    d.get("sequence-number"), summ, entry.metadata_file)
            seen_in[sid] = entry.metadata_file
    if out.expired:
        name = min(seen_in.values(), key=lambda p: p)
        out.evidence.append(f"{len(out.expired)} snapshot(s) that older metadata files hold are "
                            f"no longer in the table (e.g. {name.rsplit('/', 1)[-1]})")
    return out


def _int_prop(props: dict, key: str, default: int) -> tuple[int, str]:
    """A property's value and where it comes from (``table`` or ``default``)."""
    if key not in props:
        return default, "Iceberg's default"
    try:
        return int(props[key]), "the table's property"
    except ValueError:
        return default, f"the table's property {props[key]!r} is not a number: Iceberg's default"


def retention(meta, ref) -> dict:
    """The settings ``expire_snapshots`` would use for branch ``ref`` with no arguments
    (RemoveSnapshots.java:90-98 and 284-292 at 1.10.2)."""
    props = dict(meta.properties)
    keep, keep_from = _int_prop(props, MIN_SNAPSHOTS_TO_KEEP, MIN_SNAPSHOTS_TO_KEEP_DEFAULT)
    age, age_from = _int_prop(props, MAX_SNAPSHOT_AGE_MS, MAX_SNAPSHOT_AGE_MS_DEFAULT)
    if ref is not None and getattr(ref, "min_snapshots_to_keep", None):
        keep, keep_from = ref.min_snapshots_to_keep, "the branch's own setting"
    if ref is not None and getattr(ref, "max_snapshot_age_ms", None):
        age, age_from = ref.max_snapshot_age_ms, "the branch's own setting"
    gc = str(props.get(GC_ENABLED, "true")).lower() != "false"
    return {"min_snapshots_to_keep": keep, "min_from": keep_from, "max_snapshot_age_ms": age,
            "age_from": age_from, "gc_enabled": gc}


def retained(chain: list, snaps: dict, keep: int, older_than: int) -> int:
    """How many of ``chain`` (a branch's ancestors, newest first) an expiry keeps: while fewer
    than ``keep`` are kept or the snapshot is not older than ``older_than``, stopping at the
    first it does not keep (RemoveSnapshots.computeBranchSnapshotsToRetain, lines 299-312)."""
    n = 0
    for sid in chain:
        if n < keep or snaps[sid].timestamp_ms >= older_than:
            n += 1
        else:
            break
    return n


def _walk(snaps: dict, head) -> list[int]:
    """The engines' walk: from ``head`` along parent ids while the table has the parent."""
    out, seen, sid = [], set(), head
    while sid is not None and sid in snaps and sid not in seen:
        out.append(sid)
        seen.add(sid)
        sid = snaps[sid].parent_snapshot_id
    return out


def consequence(engine: str) -> tuple[str, str]:
    """What a restart that cannot find the sink's last commit does, in a data engineer's words,
    and the code that does it."""
    if engine == SPARK:
        return ("a restarted query that runs its last micro-batch again (it failed after its "
                "table commit, before Spark wrote the batch to its checkpoint's commit log) "
                "finds no commit of its query id and commits that batch again: its rows twice",
                "SparkWrite.BaseStreamingWrite.commit")
    if engine == KAFKA_CONNECT:
        return ("a coordinator that fails between its table commit and its consumer-offset "
                "commit reads the same events again and, finding no committed offsets along "
                "the branch, commits them again: their rows twice", "Coordinator.commitToTable")
    return ("a restore from its last checkpoint finds no committed checkpoint for its job and "
            "commits the restored checkpoint's files again: the restore fails reading the "
            "temporary manifest its committer deleted after committing (apache/iceberg#5846), "
            "so the job stays down, or, when its last commit's outcome was unknown and the "
            "manifest stayed, the rows land twice", "SinkUtil.getMaxCommittedCheckpointId")


def _then(engine: str) -> str:
    text, source = consequence(engine)
    return f"{text} ({source}; {DOC})"


@dataclass
class Sink:
    engine: str
    key: str
    snapshots: list = field(default_factory=list)     # sids the table has, oldest first
    expired: list = field(default_factory=list)       # Snaps only older metadata held

    @property
    def name(self) -> str:
        return describe_identity(self.engine, self.key)


def find_sinks(meta, expired: dict | None = None) -> dict:
    """``(engine, key) -> Sink`` for every identity stamped on a snapshot the table has or
    (``expired``) an older metadata file held."""
    out: dict = {}
    for s in sorted(meta.snapshots, key=lambda s: (s.sequence_number or 0, s.timestamp_ms)):
        ident = identity(_summary(s))
        if ident is not None:
            out.setdefault(ident, Sink(*ident)).snapshots.append(s.snapshot_id)
    for s in sorted((expired or {}).values(), key=lambda s: (s.seq or 0, s.ts)):
        ident = identity(s.summary)
        if ident is not None:
            out.setdefault(ident, Sink(*ident)).expired.append(s)
    return out


def sink_findings(table, expiry: Expiry, now_ms: int) -> tuple[list[Finding], dict]:
    """The sink findings (see the module docstring) and, for the report, each sink's walk."""
    meta = table.metadata
    snaps = {s.snapshot_id: s for s in meta.snapshots}
    sinks = find_sinks(meta, expiry.expired)
    branches = {n: r for n, r in meta.refs.items()
                if str(getattr(r, "snapshot_ref_type", "branch")) == "branch"}
    walks = {n: _walk(snaps, r.snapshot_id) for n, r in branches.items()}
    walks = {n: w for n, w in walks.items() if w}       # a ref to a missing snapshot: no walk
    out: list[Finding] = []
    info: dict = {}
    for (engine, key), sink in sinks.items():
        mine = set(sink.snapshots)
        found = None      # (branch, depth): main's walk first, else a branch the sink writes
        for n in sorted(walks, key=lambda n: (n != "main", n)):
            d = next((i for i, x in enumerate(walks[n]) if x in mine), None)
            if d is not None:
                found = (n, d)
                break
        branch = found[0] if found else ("main" if "main" in walks else next(iter(walks), None))
        if branch is None:
            continue
        chain = walks[branch]
        head = snaps[chain[0]]
        entry = {"engine": engine, "identity": key, "branch": branch,
                 "snapshots": list(sink.snapshots),
                 "expired_snapshots": [s.sid for s in sink.expired]}
        info[f"{engine}:{key}"] = entry
        if found is None:
            out.append(_broken(sink, branch, chain, snaps, head))
            entry["found"] = None
            continue
        d = found[1]
        last = snaps[chain[d]]
        entry.update(found=last.snapshot_id, commits_since=d)
        if d == 0:
            continue                   # its last commit is the head: every expiry keeps it
        out.append(_risk(sink, branch, chain, d, snaps, meta, now_ms))
    return out, info


def _stop_text(chain: list, snaps: dict) -> str:
    end = snaps[chain[-1]]
    p = end.parent_snapshot_id
    if p is None:
        return (f"snapshot {end.snapshot_id}, which names no parent (the table's first "
                "snapshot, or one whose parent an expiry removed),")
    return f"snapshot {end.snapshot_id} (its parent {p} is no longer in the table)"


def _broken(sink: Sink, branch: str, chain: list, snaps: dict, head) -> Finding:
    pos = [f"{position(sink.engine, _summary(snaps[x]))} in snapshot {x}"
           for x in sink.snapshots[-2:]]
    if sink.snapshots:
        where = (f"the table still has its commit(s) ({'; '.join(pos)}), off that walk: an "
                 "expiry removed a snapshot between them and the head, or the branch moved to "
                 "a line without them")
    else:
        last = sink.expired[-1]
        where = (f"the table had its commit ({position(sink.engine, last.summary)} in snapshot "
                 f"{last.sid}, {_when(last.ts)}, last held by "
                 f"{last.metadata_file.rsplit('/', 1)[-1]}), since expired")
    msg = (f"{sink.name[0].upper()}{sink.name[1:]} would not find its last commit: the walk a "
           f"restart makes from {branch}'s head (snapshot {head.snapshot_id}) along parent ids "
           f"ends at {_stop_text(chain, snaps)} without reaching any commit of it, though "
           f"{where}. If it is still running, or restarts from its checkpoint, "
           f"{_then(sink.engine)}.")
    return Finding("sink_ancestry_broken", FINDING, PROVEN_METADATA, msg,
                   snapshots=[head.snapshot_id, chain[-1]] + sink.snapshots[-2:]
                   + [s.sid for s in sink.expired[-1:]],
                   details={"engine": sink.engine, "identity": sink.key, "branch": branch,
                            "walk_length": len(chain), "walk_ends_at": chain[-1],
                            "missing_parent": snaps[chain[-1]].parent_snapshot_id,
                            "commits_in_table": len(sink.snapshots),
                            "commits_only_in_older_metadata": len(sink.expired)})


def _risk(sink: Sink, branch: str, chain: list, d: int, snaps: dict, meta, now_ms: int):
    last = snaps[chain[d]]
    head = snaps[chain[0]]
    ref = meta.refs.get(branch)
    r = retention(meta, ref)
    keep, age_ms = r["min_snapshots_to_keep"], r["max_snapshot_age_ms"]
    kept = retained(chain, snaps, keep, now_ms - age_ms)
    removable = d >= kept and r["gc_enabled"]
    behind = head.timestamp_ms - last.timestamp_ms
    age_now = now_ms - last.timestamp_ms
    settings = (f"{MIN_SNAPSHOTS_TO_KEEP}={keep} ({r['min_from']}), {MAX_SNAPSHOT_AGE_MS}="
                f"{age_ms} ({span(age_ms)}, {r['age_from']})")
    if not r["gc_enabled"]:
        verdict = (f"the table sets {GC_ENABLED}=false, so Iceberg refuses to expire snapshots "
                   f"(RemoveSnapshots) and it stays")
    elif removable:
        verdict = (f"expire_snapshots run now with the table's settings ({settings}) would "
                   f"already remove it")
    else:
        more = max(0, keep - d)
        left = max(0, age_ms - age_now)
        verdict = (f"expire_snapshots run now with the table's settings ({settings}) would keep "
                   f"it; it is removed once {keep} or more commits follow it on {branch}"
                   + (f" ({more} more)" if more else "") + f" and it is older than "
                   f"{span(age_ms)}" + (f" (in {span(left)})" if left else "")
                   + ", or by an expire_snapshots run with a smaller retain_last or a later "
                   "older_than")
    msg = (f"{sink.name[0].upper()}{sink.name[1:]} last committed "
           f"{position(sink.engine, _summary(last))} in snapshot {last.snapshot_id} "
           f"({_when(last.timestamp_ms)}), {d} commit(s) back along {branch} "
           f"({span(behind)} before the head, snapshot {head.snapshot_id}; {span(age_now)} "
           f"ago). A restart finds it by walking {branch}'s parents from the head, and the walk "
           f"stops at the first expired snapshot: {verdict}. Once it is gone, "
           f"{_then(sink.engine)}.")
    return Finding("sink_expiry_risk", FINDING, POSSIBLE, msg,
                   snapshots=[last.snapshot_id, head.snapshot_id],
                   details={"engine": sink.engine, "identity": sink.key, "branch": branch,
                            "last_commit": last.snapshot_id, "commits_since": d,
                            "behind_head_ms": behind, "age_ms": age_now,
                            "min_snapshots_to_keep": keep, "max_snapshot_age_ms": age_ms,
                            "kept_by_expiry_now": kept, "removable_now": removable,
                            "gc_enabled": r["gc_enabled"]})
