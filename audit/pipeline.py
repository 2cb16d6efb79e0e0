"""Infer a draft pipeline file (docs/pipelines.md) from an audited table's history.

``icecheck audit TABLE --pipeline out.yaml`` writes the draft; ``icecheck check out.yaml``
explores it. It is a draft for a person to review: what the metadata says is used, the rest is
a plain default, and each guess is named in a comment.

* **Jobs.** Each snapshot is classified by the engine its summary names (``engine-name``:
  Spark, Flink, Trino; a Java ``iceberg-version`` with no engine: a Java application, modelled
  as Spark; no Java summary at all: PyIceberg or another non-Java writer, modelled as
  PyIceberg) and by the command its operation and counts suggest (append -> INSERT, or
  ADD_FILES when its data files lie outside the table's location; delete -> DELETE; overwrite
  -> DELETE, UPDATE or a Flink UPSERT by what it added and removed; replace -> COMPACT,
  REWRITE_MANIFESTS or REWRITE_POSITION_DELETES). Snapshots of one engine and command form a
  job; its comment names the snapshots, the applications (``app-id``, ``spark.app.id``,
  ``flink.job-id``), the time span and the cadence. When an audit finding names two snapshots
  of one job (two overlapping runs: the add_files duplicate, a delete committed after another
  removed its file), the job is written twice, so that the check explores the two runs
  overlapping. At most 9 jobs (the pipeline's limit): the largest.
* **Profiles** from the table's properties: a Spark command's write mode
  (``write.<command>.mode``) and isolation level (``write.<command>.isolation-level``, default
  serializable), PyIceberg's isolation level; the same properties go into the draft's
  ``table.properties`` (``models.profiles.MODE_PROPERTIES``, ``ISOLATION_PROPERTIES``).
* **Table.** The current schema (int, long and string columns as they are; other types as
  string, said in a comment), the default partition spec (identity, bucket, truncate; a time
  transform becomes identity on its column, said), the format version (v1 as 2, said).
  ``domain`` holds one key and one partition, ``initial_rows`` one row: a small search to
  start from (widen ``domain.keys`` to explore more).
* **Catalog** by PyIceberg's catalog class (SQL -> jdbc, REST, Hive, Glue, DynamoDB), else a
  compare-and-swap catalog.
* **Streaming sinks.** The snapshots one streaming sink stamped (``audit/sinks.py``: a Spark
  query id, a Flink operator id across its job ids, a Kafka Connect offsets key) form one job
  with ``sink:`` (it may fail once and restart from its checkpoint, docs/pipelines.md
  "Streaming jobs that fail and restart") on its engine's profile (Spark: the table's Spark
  INSERT profile; Flink: flink-1.20-upsert; Kafka Connect: kafka-connect-1.11), its program two
  INSERT batches: a third multiplies the states (with three, the search of
  examples/spark-streaming-sink-expiry.yaml outgrew the default bound of 200,000 states here)
  without adding a way to fail. A sink whose commits are not all appends (an upsert sink)
  stays a job of its commands: the model's sinks append.
* **Snapshot expiry.** When the audit saw evidence of expiry (``sinks.expiry_evidence``: the
  ``history.expire.*`` properties, a snapshot whose parent is gone, older metadata files
  holding snapshots the table lost), an ``expire-snapshots`` job (Spark's expire_snapshots)
  with ``retain_last`` from ``history.expire.min-snapshots-to-keep`` (else Iceberg's default,
  1): a guess the team must set, said in its comment; so the check explores a sink restarted
  after an expiry.
"""

from __future__ import annotations

import datetime as _dt
import re
import statistics
from collections import defaultdict

from .checks import _op, _summary, short
from .sinks import (FLINK, KAFKA_CONNECT, KC_OFFSETS_PREFIX, MIN_SNAPSHOTS_TO_KEEP, SPARK,
                    describe_identity, identity, position)

MAX_JOBS = 9
ROW_COMMANDS = ("DELETE", "UPDATE", "MERGE")
_CATALOGS = {"SqlCatalog": "jdbc", "RestCatalog": "rest", "HiveCatalog": "hive",
             "GlueCatalog": "glue", "DynamoDbCatalog": "dynamodb"}


def _int(summary: dict, key: str) -> int:
    try:
        return int(summary.get(key, 0) or 0)
    except ValueError:
        return 0


def engine_of(s) -> str:
    summ = _summary(s)
    if any(k.startswith(KC_OFFSETS_PREFIX) for k in summ):
        return "kafka-connect"
    name = (summ.get("engine-name") or "").lower()
    if name.startswith("spark"):
        return "spark"
    if name.startswith("flink") or "flink.job-id" in summ:
        return "flink"
    if name.startswith("trino") or "trino_query_id" in summ:
        return "trino"
    if "iceberg-version" in summ:
        return "java"
    return "pyiceberg"


def command_of(s, external: bool) -> str:
    """The command a snapshot's operation and summary counts suggest."""
    op, summ = _op(s), _summary(s)
    if op == "append":
        return "ADD_FILES" if external else "INSERT"
    if op == "delete":
        return "DELETE"
    if op == "replace":
        if _int(summ, "added-data-files") == 0 and _int(summ, "deleted-data-files") == 0:
            if _int(summ, "added-position-delete-files") or _int(summ,
                                                                 "removed-position-delete-files"):
                return "REWRITE_POSITION_DELETES"
            return "REWRITE_MANIFESTS"
        return "COMPACT"
    if op == "overwrite":
        if _int(summ, "added-equality-delete-files") or _int(summ, "added-equality-deletes"):
            return "UPSERT"
        added, deleted = _int(summ, "added-records"), _int(summ, "deleted-records")
        if _int(summ, "added-position-deletes") or _int(summ, "added-dvs"):
            return "UPDATE" if added else "DELETE"
        if deleted and added < deleted:
            return "DELETE"
        return "UPDATE" if deleted else "INSERT"
    return "INSERT"


def _profile(engine: str, command: str, props: dict, names: list[str]) -> tuple[str, str]:
    """(profile, note) for a job of ``engine`` running ``command`` on a table with ``props``."""
    from icecheck.models.profiles import ISOLATION_PROPERTIES, MODE_PROPERTIES

    if engine == "flink":
        return "flink-1.20-upsert", ""
    if engine == "kafka-connect":
        return "kafka-connect-1.11", ""
    if engine == "pyiceberg":
        key = ISOLATION_PROPERTIES["pyiceberg"].get(command)
        level = props.get(key, "serializable") if key else "serializable"
        return f"pyiceberg-0.12-{level}", ("no engine recorded in its summaries: PyIceberg or "
                                           "another non-Java writer, modelled as PyIceberg 0.12")
    if engine == "trino":
        level = props.get("write.delete.isolation-level", "serializable")
        name = f"trino-483-{level}"
        if name in names:
            return name, ""
    mode_key = MODE_PROPERTIES["spark"].get(command, MODE_PROPERTIES["spark"]["DELETE"])
    level_key = ISOLATION_PROPERTIES["spark"].get(command, ISOLATION_PROPERTIES["spark"]["DELETE"])
    mode = "mor" if props.get(mode_key) == "merge-on-read" else "cow"
    level = props.get(level_key, "serializable")
    note = "a Java application with no engine-name, modelled as Spark 3.5" if engine == "java" \
        else ""
    return f"spark-3.5-{mode}-{level}", note


def _model_type(t) -> str:
    name = str(t).lower()
    return name if name in ("int", "long", "string") else "string"


_TRANSFORM = re.compile(r"^(bucket|truncate)\[(\d+)\]$")


def infer(table, report, catalog=None, external: dict | None = None) -> str:
    """The draft pipeline's YAML text for ``table`` (a loaded PyIceberg table) and its audit
    ``report``; ``external``: snapshot -> data files it added outside the table's location."""
    import yaml

    from icecheck.models.profiles import load_profiles

    meta = table.metadata
    props = dict(meta.properties)
    names = list(load_profiles())
    external = external or {}
    notes: list[str] = []

    # -- table ---------------------------------------------------------------------------
    schema = table.schema()
    columns, approx = {}, []
    for f in schema.fields:
        columns[f.name] = _model_type(f.field_type)
        if columns[f.name] != str(f.field_type).lower():
            approx.append(f"{f.name} ({f.field_type})")
    if approx:
        notes.append("columns modelled as string: " + ", ".join(approx))
    ident = [schema.find_field(i).name for i in (schema.identifier_field_ids or [])]
    key = ident[0] if ident else next((c for c, t in columns.items() if t in ("int", "long")),
                                      next(iter(columns)))
    spec, part_cols = [], []
    for pf in table.spec().fields:
        col = schema.find_field(pf.source_id).name
        tr = str(pf.transform)
        m = _TRANSFORM.match(tr)
        if tr == "identity":
            spec.append(f"identity({col})")
        elif m:
            spec.append(f"{m.group(1)}({m.group(2)}, {col})")
        elif tr == "void":
            continue
        else:
            spec.append(f"identity({col})")
            notes.append(f"partition {tr}({col}) modelled as identity({col})")
        part_cols.append(col)
    fv = int(meta.format_version)
    if fv < 2:
        notes.append("format v1 modelled as v2 (the model has no v1)")
        fv = 2

    def value(col, role):
        t = columns[col]
        if col == key:
            return role
        if col in part_cols:
            return 1 if t in ("int", "long") else "p1"
        return 0 if t in ("int", "long") else "{job}"

    key_value = 1 if columns[key] in ("int", "long") else "k1"
    domain = {"keys": [key_value]}
    if part_cols:
        domain["partitions"] = [value(part_cols[0], None)]
    initial = [[value(c, key_value) if c != key else key_value for c in columns]]
    for row in initial:
        for i, c in enumerate(columns):
            if row[i] == "{job}":
                row[i] = "v0"
    settable = next((c for c in columns if c != key and c not in part_cols), None)

    # -- jobs ----------------------------------------------------------------------------
    ordered = sorted(meta.snapshots, key=lambda s: (s.sequence_number or 0, s.timestamp_ms))
    sink_of = _sinks(ordered, external)
    groups: dict[tuple, list] = defaultdict(list)
    for s in ordered:
        if s.snapshot_id in sink_of:
            groups[("sink",) + sink_of[s.snapshot_id]].append(s)
            continue
        eng = engine_of(s)
        groups[(eng, command_of(s, bool(external.get(s.snapshot_id))))].append(s)
    overlapping = _overlapping(groups, report)
    jobs_spec = []
    for k, snaps in groups.items():
        jobs_spec.append((k, snaps, ""))
        if k in overlapping:
            jobs_spec.append((k, snaps, overlapping[k]))
    expiry = getattr(report, "expiry", None)
    evidence = list(expiry.evidence) if expiry is not None else []
    room = MAX_JOBS - (1 if evidence else 0)
    jobs_spec.sort(key=lambda j: -len(j[1]))
    dropped = jobs_spec[room:]
    jobs_spec = sorted(jobs_spec[:room], key=lambda j: (j[1][0].sequence_number or 0,
                                                        bool(j[2])))
    settings = {}
    jobs, comments = [], []
    used = set()
    for k, snaps, overlap in jobs_spec:
        n = len(jobs) + 1
        if k[0] == "sink":
            job, comment = _sink_job(k[1], k[2], snaps, props, names, key, columns, value, n)
            name = job["name"]
            while name in used:
                name += "-2"
            used.add(name)
            jobs.append(dict(job, name=name))
            comments.append(comment)
            continue
        eng, cmd = k
        profile, note = _profile(eng, cmd, props, names)
        if cmd not in _profile_commands(profile):
            note = (note + "; " if note else "") + \
                f"{profile} has no {cmd}: modelled as INSERT"
            cmd = "INSERT"
        name = f"{eng}-{cmd.lower().replace('_', '-')}" + ("-overlapping" if overlap else "")
        while name in used:
            name += "-2"
        used.add(name)
        program = [_command(cmd, key, columns, part_cols, settable, value, external, snaps, n)]
        jobs.append({"name": name, "profile": profile, "program": program})
        comments.append(_job_comment(snaps, note, overlap))
        _settings(settings, profile, cmd, props)
    if evidence:
        job, comment = _expire_job(evidence, props)
        while job["name"] in used:
            job["name"] += "-2"
        jobs.append(job)
        comments.append(comment)
    catalog_entry = _catalog(catalog)
    doc = {"name": f"inferred from {report.table}",
           "table": {"schema": columns, **({"partition_spec": spec} if spec else {}),
                     "format_version": fv, **({"properties": settings} if settings else {})},
           "catalog": catalog_entry, "domain": domain, "initial_rows": initial, "key": key,
           "jobs": jobs}
    head = [f"# A draft pipeline inferred by `icecheck audit {report.table}` from "
            f"{report.snapshots} snapshot(s)",
            f"# (metadata {report.metadata_location}).",
            "# Review it before trusting its verdict: the jobs are the table's commits grouped "
            "by engine and",
            "# command (a streaming sink's by its identity); the rows and keys are small "
            "placeholders.",
            "# Then: icecheck check THIS_FILE"]
    head += [f"# note: {n}" for n in notes]
    if dropped:
        head.append("# left out (a pipeline has at most 9 jobs): " + ", ".join(
            f"{_group_text(k)} ({len(s)} snapshot(s))" for k, s, _ in dropped))
    if report.findings:
        head.append("# the audit's findings on this table:")
        head += [f"#   {f.severity} {f.check} ({f.property}): snapshots "
                 + ", ".join(str(x) for x in f.snapshots[:4]) for f in report.findings[:10]]
    text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100)
    return "\n".join(head) + "\n" + _comment_jobs(text, comments)


def _group_text(k: tuple) -> str:
    return describe_identity(k[1], k[2]) if k[0] == "sink" else f"{k[0]} {k[1]}"


def _sinks(ordered, external) -> dict:
    """snapshot id -> (engine, key) for the snapshots of a streaming sink whose commits are all
    appends (audit/sinks.py; an upsert sink stays a job of its commands)."""
    by: dict[tuple, list] = defaultdict(list)
    for s in ordered:
        ident = identity(_summary(s))
        if ident is not None:
            by[ident].append(s)
    return {s.snapshot_id: ident for ident, snaps in by.items()
            if all(command_of(s, bool(external.get(s.snapshot_id))) == "INSERT" for s in snaps)
            for s in snaps}


SINK_NAMES = {SPARK: "spark-stream", FLINK: "flink-sink", KAFKA_CONNECT: "kafka-connect-sink"}
#: the batches a drafted sink runs (see the module docstring for why two)
SINK_BATCHES = 2


def _sink_job(engine, ident, snaps, props, names, key, columns, value, n):
    """A streaming sink's job: ``sink:``, its engine's profile, INSERT batches; its comment.
    Each batch appends a key of its own (300 + 10 n + batch: two sinks never share one, which
    the check would read as a duplicate)."""
    profile, _ = _profile(engine, "INSERT", props, names)
    program = []
    for b in range(1, SINK_BATCHES + 1):
        k = 300 + 10 * n + b
        fresh = k if columns[key] in ("int", "long") else f"k{k}"
        program.append({"sql": "INSERT", "rows": [[value(c, fresh) for c in columns]]})
    job = {"name": SINK_NAMES[engine], "profile": profile,
           "sink": {"restarts": 1, "restart": ["checkpoint"]}, "program": program}
    summ = [_summary(s) for s in snaps]
    stamp = {SPARK: "spark.sql.streaming.queryId", FLINK: "flink.operator-id / flink.job-id",
             KAFKA_CONNECT: KC_OFFSETS_PREFIX + ident}[engine]
    comment = _job_comment(snaps, "", "")
    comment[0] = (f"a streaming sink, {describe_identity(engine, ident)}: "
                  + comment[0].replace("inferred from", f"inferred from its stamp ({stamp}) on"))
    where = [position(engine, x) for x in (summ[0], summ[-1])]
    text = where[0] if len(summ) == 1 else f"{where[0]} to {where[-1]}"
    if engine == FLINK:
        jobs = list(dict.fromkeys(x.get("flink.job-id") for x in summ if x.get("flink.job-id")))
        if len(jobs) > 1:
            text += f"; Flink jobs {', '.join(jobs[:4])}: one operator id, one sink"
    comment.insert(1, f"it committed {text}")
    comment.append(f"sink: it may fail once and restart from its checkpoint; {SINK_BATCHES} "
                   "batches stand for its micro-batches or checkpoints (docs/pipelines.md)")
    return job, comment


def _expire_job(evidence: list[str], props: dict):
    """An expire_snapshots job the audit's evidence of expiry calls for, and its comment."""
    try:
        keep = int(props[MIN_SNAPSHOTS_TO_KEEP])
        source = f"the table's {MIN_SNAPSHOTS_TO_KEEP}"
    except (KeyError, ValueError):
        keep, source = 1, f"Iceberg's default {MIN_SNAPSHOTS_TO_KEEP}"
    if not 1 <= keep <= 100:
        keep, source = 1, f"the model's smallest ({MIN_SNAPSHOTS_TO_KEEP} is out of range)"
    job = {"name": "expire-snapshots", "profile": "spark-3.5-cow-serializable",
           "program": [{"sql": "EXPIRE", "retain_last": keep}]}
    comment = ["snapshot expiry (modelled as Spark's expire_snapshots), inferred from:"]
    comment += [f"  - {e}" for e in evidence]
    comment.append(f"retain_last {keep} is a guess ({source}): set it to what your "
                   "expire_snapshots runs with")
    return job, comment


def _profile_commands(profile: str) -> set:
    from icecheck.models.profiles import get_profile
    return set(get_profile(profile).commands)


def _settings(settings: dict, profile: str, cmd: str, props: dict) -> None:
    """The write-mode and isolation properties the real table has for ``cmd``'s engine."""
    from icecheck.models.profiles import get_profile, isolation_property, mode_property

    p = get_profile(profile)
    for key in (mode_property(p, cmd), isolation_property(p, cmd)):
        if key and key in props:
            settings[key] = props[key]


def _catalog(catalog) -> dict:
    name = _CATALOGS.get(type(catalog).__name__) if catalog is not None else None
    return {"name": name} if name else {"kind": "cas"}


def _overlapping(groups, report) -> dict:
    """Groups two of whose snapshots one finding names (two runs of one job that overlapped)."""
    of = {s.snapshot_id: k for k, snaps in groups.items() for s in snaps}
    out = {}
    for i, f in enumerate(report.findings, 1):
        if f.check.startswith("sink_"):
            continue          # it names a sink's walk (its head and where it ends), not two runs
        keys = [of[x] for x in dict.fromkeys(f.snapshots) if x in of]
        for k in set(keys):
            if keys.count(k) > 1 and k not in out:
                out[k] = f"the audit's finding #{i} ({f.check}) names two of its commits"
    return out


def _command(cmd, key, columns, part_cols, settable, value, external, snaps, n) -> dict:
    fresh = 100 + n if columns[key] in ("int", "long") else f"k{100 + n}"
    row = [value(c, fresh) for c in columns]
    if cmd == "INSERT":
        return {"sql": "INSERT", "rows": [row]}
    if cmd == "ADD_FILES":
        # one file, one content: every job adding it adds the same rows (the model's object
        # store holds one version of a path)
        path = next((p for s in snaps for p in external.get(s.snapshot_id, [])), "external")
        name = re.sub(r"[^A-Za-z0-9._-]", "_", short(path)) or "external.parquet"
        fixed = 200 if columns[key] in ("int", "long") else "k200"
        return {"sql": "ADD_FILES", "file": name,
                "rows": [[v if v != "{job}" else "backfill" for v in
                          (value(c, fixed) for c in columns)]]}
    if cmd == "DELETE":
        return {"sql": "DELETE", "where": f"{key} = {{key}}"}
    if cmd == "UPDATE" and settable:
        v = "{job}" if columns[settable] == "string" else 1
        return {"sql": "UPDATE", "where": f"{key} = {{key}}", "set": {settable: v}}
    if cmd in ("UPDATE", "MERGE"):
        return {"sql": "MERGE", "on": key, "rows": [[value(c, "{key}") for c in columns]]}
    if cmd == "UPSERT":
        return {"sql": "UPSERT", "on": [key], "rows": [[value(c, "{key}") for c in columns]]}
    return {"sql": cmd}


def _job_comment(snaps, note: str, overlap: str) -> list[str]:
    ids = [str(s.snapshot_id) for s in snaps]
    apps = list(dict.fromkeys(a for s in snaps for a in [
        _summary(s).get("app-id") or _summary(s).get("spark.app.id")
        or _summary(s).get("flink.job-id")] if a))
    times = [s.timestamp_ms for s in snaps]
    when = (f"{_when(min(times))} to {_when(max(times))}" if len(times) > 1 else _when(times[0]))
    out = [f"inferred from {len(snaps)} snapshot(s): " + ", ".join(ids[:8])
           + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")]
    out.append(f"committed {when}" + (f", about every {_span(statistics.median(b - a for a, b in zip(times, times[1:])))}" if len(times) > 2 else "")
               + (f"; applications: {', '.join(apps[:4])}" if apps else ""))
    if note:
        out.append(note)
    if overlap:
        out.append(f"a second run of the job above: {overlap}")
    return out


def _when(ms: int) -> str:
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _span(ms: float) -> str:
    s = ms / 1000
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if s >= size:
            return f"{s / size:.1f} {unit}s"
    return f"{s:.1f} s"


def _comment_jobs(text: str, comments: list[list[str]]) -> str:
    """Put each job's comment lines above its ``- name:`` line in the YAML text."""
    out, i = [], 0
    in_jobs = False
    for line in text.splitlines():
        if line.startswith("jobs:"):
            in_jobs = True
        elif in_jobs and line.startswith("- name:") and i < len(comments):
            out += [f"# {c}" for c in comments[i]]
            i += 1
        out.append(line)
    return "\n".join(out) + "\n"
