"""Benchmark: ``icecheck audit`` on a long real history. ``python -m benchmarks.audit_history
[--quick] [--snapshots N] [--files-per-append K] [--regenerate]`` (also ``bin/benchmark
audit-history [...]``).

Why: the audit's memory and read counts are pinned by tests on small tables (docs/audit.md,
"Bounded memory and what is read"); what a history of thousands of snapshots costs is not, and
that is where a quadratic walk or an unbounded cache would show. So this builds, once, a real
table with PyIceberg 0.12 in a SQLite catalog (cached under ``.cache/audit-history/``, which
git ignores; a killed build resumes where it stopped) and times ``icecheck audit`` on it.

The history (``Plan``): appends of many small Parquet files into an identity-partitioned table
(a new partition value every ``partition_every`` commits; merge-append with PyIceberg's
default merge settings, so manifest lists stay short as a real table's do), a retention
DELETE of the oldest partition every ``delete_every`` commits, an OVERWRITE that replaces
``overwrite_files`` small files of the newest partition with one holding their rows every
``overwrite_every`` commits, and ``expiries`` expire_snapshots runs that each remove the
oldest ``expire_each`` snapshots; the table keeps ``snapshots`` snapshots in the end. Every
snapshot carries ``icecheck.bench.commit`` (its commit number), so a resumed build knows
where it stopped. Full: 10,000 snapshots, 10 files per append (about 100,000 data files);
``--quick``: 500 snapshots, 4 files per append.

PyIceberg's own commit path does two things whose cost grows with the history and that do not
change a byte it writes, and the build turns them off for itself (``_fast_pyiceberg``):
``Transaction.table_metadata`` deep-copies the whole table metadata on every call (about 16
per commit; the models are frozen pydantic models, so a shallow copy is as safe), and the SQL
catalog parses back the metadata file the same process has just written before each commit
(the object just written is handed back instead). Without them a commit took 0.56 s here at 500
snapshots and grew linearly (10,000 snapshots: hours); with them 0.07 s at 1,000, and the full
build of 10,300 commits took 27.5 minutes.

What is measured, each in a fresh process (its wall time and its peak RSS from ``os.wait4``):

* the baseline: plain PyIceberg loading the table and listing every snapshot's manifests
  (``Snapshot.manifests``: every manifest list read once), the least any audit of the whole
  history must read; run before and after the audit, and the mean is the baseline;
* ``icecheck audit TABLE --catalog URI --json`` (the command as a user runs it, default
  options: existence checks of the heads' files, rows read for findings), its progress read
  from its own progress bar (``TTY_COMPATIBLE=1`` makes rich draw it into the pipe).

Figures: time per snapshot and per manifest, peak RSS, the audit's own stats (manifest lists
and manifests read, cache hits, the most live sets held), and the ratio of the audit's wall
time to the baseline's: a ratio, measured in the same run on the same table, not an absolute
claim. Written to reports/audit-history.json and reports/audit-history.md (one entry per
size, ``full`` and ``quick``; a run keeps the other size's entry).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(ROOT, ".cache", "audit-history")
REPORT_JSON = os.path.join(ROOT, "reports", "audit-history.json")
REPORT_MD = os.path.join(ROOT, "reports", "audit-history.md")
#: bump when the history a Plan builds changes (a cached table of another version is not reused)
GEN_VERSION = 1
TABLE = "db.events"
COMMIT_KEY = "icecheck.bench.commit"


@dataclass(frozen=True)
class Plan:
    name: str                    # "full" or "quick": the report's entry
    snapshots: int               # snapshots the table keeps in the end
    files_per_append: int
    expire_each: int             # snapshots one expiry removes
    expiries: int = 3
    rows_per_file: int = 3
    partition_every: int = 20    # commits per partition value
    delete_every: int = 100      # a retention DELETE of the oldest partition
    overwrite_every: int = 25    # an OVERWRITE of the newest partition's small files
    overwrite_files: int = 5

    @property
    def commits(self) -> int:
        return self.snapshots + self.expiries * self.expire_each

    def kind(self, i: int) -> str:
        """What commit ``i`` (0-based) does."""
        if i % self.delete_every == self.delete_every - 1:
            return "delete"
        if i % self.overwrite_every == self.overwrite_every - 1:
            return "overwrite"
        return "append"

    def expiry_points(self) -> list[int]:
        """The commit numbers an expiry runs just before."""
        return [self.commits * k // (self.expiries + 1) for k in range(1, self.expiries + 1)]

    def folder(self, cache: str = CACHE) -> str:
        return os.path.join(cache, f"{self.snapshots}s-{self.files_per_append}f-g{GEN_VERSION}")


FULL = Plan("full", snapshots=10_000, files_per_append=10, expire_each=100)
QUICK = Plan("quick", snapshots=500, files_per_append=4, expire_each=10)


# -- progress -------------------------------------------------------------------------------
class Progress:
    """Progress lines on stderr, at most one per ``every`` seconds (and the last), with an
    estimate of the time left. ``growing``: the cost of one step grows with the step number
    (a commit rewrites the whole table metadata, which grows by one snapshot per commit), so
    the estimate fits cost(i) = a + b*i to the last two windows instead of assuming a rate."""

    def __init__(self, what: str, total: int, unit: str, growing: bool = False,
                 every: float = 10.0, start: int = 0):
        self.what, self.total, self.unit, self.growing, self.every = \
            what, total, unit, growing, every
        self.t0 = self.last = time.perf_counter()
        self.start = start
        self.marks = [(start, self.t0)]

    def estimate(self, done: int, now: float) -> float | None:
        left = self.total - done
        if done <= self.start or left <= 0:
            return 0.0 if left <= 0 else None
        if self.growing and len(self.marks) >= 3:
            # two halves of what was done so far (short windows are noisy: a manifest merge
            # every hundred commits, other jobs on the machine)
            half = (self.start + done) / 2
            mid = min(self.marks[1:-1], key=lambda m: abs(m[0] - half))
            (i0, t0), (i1, t1), (i2, t2) = self.marks[0], mid, self.marks[-1]
            if i1 > i0 and i2 > i1:
                c1, c2 = (t1 - t0) / (i1 - i0), (t2 - t1) / (i2 - i1)
                m1, m2 = (i0 + i1) / 2, (i1 + i2) / 2
                b = max(0.0, (c2 - c1) / (m2 - m1))
                a = c2 - b * m2
                return max(0.0, a * left + b * (self.total ** 2 - done ** 2) / 2)
        return (now - self.t0) / (done - self.start) * left

    def update(self, done: int, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self.last < self.every:
            return
        self.last = now
        if done > self.marks[-1][0]:
            self.marks.append((done, now))
        eta = self.estimate(done, now)
        rate = (done - self.start) / max(now - self.t0, 1e-9)
        left = f", ~{_duration(eta)} left" if eta is not None else ""
        print(f"  {self.what}: {done:,}/{self.total:,} {self.unit} "
              f"({100 * done / max(self.total, 1):.0f}%), {rate:.1f}/s, "
              f"{_duration(now - self.t0)} so far{left}", file=sys.stderr, flush=True)


def _duration(s: float) -> str:
    s = int(round(s))
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


# -- building the table ---------------------------------------------------------------------
def _fast_pyiceberg() -> None:
    """Turn off two costs of PyIceberg's commit path that grow with the history and change no
    byte written (see the module's docstring): the deep copy of the frozen table metadata on
    every ``Transaction.table_metadata``, and the catalog's parse of the metadata file this
    process has just written."""
    from pyiceberg.serializers import FromInputFile, ToOutputFile
    from pyiceberg.table.metadata import TableMetadataCommonFields

    if getattr(TableMetadataCommonFields, "_icecheck_fast", False):
        return
    copy = TableMetadataCommonFields.model_copy

    def shallow(self, *, update=None, deep=False):
        return copy(self, update=update, deep=False)

    written: dict = {}
    write, read = ToOutputFile.table_metadata, FromInputFile.table_metadata

    def write_kept(metadata, output_file, overwrite=False):
        write(metadata, output_file, overwrite)
        written.clear()
        written[output_file.location] = metadata

    def read_kept(input_file, encoding="utf-8"):
        hit = written.get(input_file.location)
        return hit if hit is not None else read(input_file, encoding)

    TableMetadataCommonFields.model_copy = shallow
    TableMetadataCommonFields._icecheck_fast = True
    ToOutputFile.table_metadata = staticmethod(write_kept)
    FromInputFile.table_metadata = staticmethod(read_kept)


def catalog_uri(folder: str) -> str:
    return f"sqlite:///{os.path.join(folder, 'cat.db')}"


def _catalog(folder: str, create: bool):
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog("bench", uri=catalog_uri(folder),
                      warehouse=f"file://{os.path.join(folder, 'wh')}",
                      init_catalog_tables="true" if create else "false")


def _schema():
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import IntegerType, LongType, NestedField, StringType

    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "batch", IntegerType(), required=False),
                    NestedField(3, "payload", StringType(), required=False))
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000,
                                        transform=IdentityTransform(), name="batch"))
    return schema, spec


def _commit_of(snapshot) -> int:
    summ = snapshot.summary
    props = dict(getattr(summ, "additional_properties", {}) or {}) if summ is not None else {}
    return int(props.get(COMMIT_KEY, -1))


def _write(table, batch: int, row_sets: list[list[dict]]):
    """One Parquet file per row set, in partition ``batch``, through PyIceberg's writer
    (its statistics in the manifest entries, as a PyIceberg append writes them)."""
    import pyarrow as pa
    from pyiceberg.io.pyarrow import write_file
    from pyiceberg.partitioning import PartitionFieldValue, PartitionKey
    from pyiceberg.table import WriteTask

    schema, spec = table.schema(), table.spec()
    arrow = schema.as_arrow()
    key = PartitionKey([PartitionFieldValue(spec.fields[0], batch)], spec, schema)
    wu = uuid.uuid4()
    tasks = [WriteTask(write_uuid=wu, task_id=n, schema=schema, partition_key=key,
                       record_batches=[pa.RecordBatch.from_pylist(r, schema=arrow)])
             for n, r in enumerate(row_sets)]
    return list(write_file(table.io, table.metadata, iter(tasks)))


def _one_commit(plan: Plan, table, i: int) -> str:
    """Commit number ``i`` of the plan; returns what it did."""
    import pyarrow.parquet as pq
    from pyiceberg.expressions import EqualTo

    props = {COMMIT_KEY: str(i)}
    kind = plan.kind(i)
    batch = i // plan.partition_every
    tx = table.transaction()
    if kind == "delete":
        with tx.update_snapshot(snapshot_properties=props).delete() as d:
            d.delete_by_predicate(EqualTo("batch", i // plan.delete_every))
    elif kind == "overwrite":
        old = [t.file for t in table.scan(row_filter=EqualTo("batch", batch)).plan_files()]
        old = sorted(old, key=lambda f: f.file_path)[:plan.overwrite_files]
        rows = [r for f in old for r in pq.read_table(f.file_path.removeprefix("file://"))
                .to_pylist()]
        if len(old) < 2:
            kind = "append"
        else:
            new = _write(table, batch, [rows])
            with tx.update_snapshot(snapshot_properties=props).overwrite() as ow:
                for f in old:
                    ow.delete_data_file(f)
                for f in new:
                    ow.append_data_file(f)
    if kind == "append":
        base = i * 1000
        sets = [[{"id": base + j * plan.rows_per_file + r, "batch": batch,
                  "payload": f"event {base + j * plan.rows_per_file + r}"}
                 for r in range(plan.rows_per_file)] for j in range(plan.files_per_append)]
        files = _write(table, batch, sets)
        with tx.update_snapshot(snapshot_properties=props).merge_append() as a:
            for f in files:
                a.append_data_file(f)
    tx.commit_transaction()
    return kind


def _expire(plan: Plan, catalog) -> None:
    """Expire the oldest ``expire_each`` snapshots (not main's head)."""
    table = catalog.load_table(TABLE)
    head = table.current_snapshot().snapshot_id
    old = sorted((s for s in table.metadata.snapshots if s.snapshot_id != head),
                 key=lambda s: (s.sequence_number or 0, s.timestamp_ms))[:plan.expire_each]
    table.maintenance.expire_snapshots().by_ids([s.snapshot_id for s in old]).commit()


def generate(plan: Plan, regenerate: bool = False, cache: str = CACHE) -> dict:
    """The plan's table, built once (cached in ``plan.folder(cache)``; a build that was
    stopped resumes after its last commit). Returns what the build recorded."""
    import warnings

    folder = plan.folder(cache)
    done_file = os.path.join(folder, "complete.json")
    if regenerate and os.path.isdir(folder):
        shutil.rmtree(folder)
    if os.path.exists(done_file):
        with open(done_file, encoding="utf-8") as f:
            info = json.load(f)
        print(f"table: cached in {os.path.relpath(folder, ROOT)} (built in "
              f"{_duration(info['seconds'])})", file=sys.stderr)
        return info
    warnings.simplefilter("ignore")
    _fast_pyiceberg()
    os.makedirs(folder, exist_ok=True)
    fresh = not os.path.exists(os.path.join(folder, "cat.db"))
    catalog = _catalog(folder, create=fresh)
    seconds_before = 0.0
    state_file = os.path.join(folder, "building.json")
    if fresh:
        schema, spec = _schema()
        catalog.create_namespace("db")
        catalog.create_table(TABLE, schema, partition_spec=spec, properties={
            # merge small manifests as Java does by default (PyIceberg's default is off)
            "commit.manifest-merge.enabled": "true",
            # keep 100 metadata files (the default), not one per commit
            "write.metadata.delete-after-commit.enabled": "true"})
        start = 0
    else:
        table = catalog.load_table(TABLE)
        snaps = table.metadata.snapshots
        start = max((_commit_of(s) for s in snaps), default=-1) + 1
        if os.path.exists(state_file):
            with open(state_file, encoding="utf-8") as f:
                seconds_before = json.load(f).get("seconds", 0.0)
    table = catalog.load_table(TABLE)
    points = plan.expiry_points()
    print(f"table: building {plan.commits:,} commits ({plan.snapshots:,} snapshots kept, "
          f"{plan.files_per_append} files per append) in {os.path.relpath(folder, ROOT)}"
          + (f", resuming at commit {start:,}" if start else ""), file=sys.stderr, flush=True)
    bar = Progress("build", plan.commits, "commits", growing=True, start=start)
    t0 = time.perf_counter()
    kinds: dict[str, int] = {}
    for i in range(start, plan.commits):
        if i in points:
            # expiries done so far = (commits made - snapshots kept) / expire_each: an expiry
            # that ran before a stop is not run twice
            ran = (i - len(table.metadata.snapshots)) // plan.expire_each
            if ran < points.index(i) + 1:
                _expire(plan, catalog)
                table = catalog.load_table(TABLE)
        kind = _one_commit(plan, table, i)
        kinds[kind] = kinds.get(kind, 0) + 1
        bar.update(i + 1)
        if i % 10 == 9:
            with open(state_file, "w", encoding="utf-8") as f:
                json.dump({"seconds": seconds_before + time.perf_counter() - t0}, f)
    bar.update(plan.commits, force=True)
    table = catalog.load_table(TABLE)
    info = {"plan": asdict(plan), "gen_version": GEN_VERSION,
            "seconds": round(seconds_before + time.perf_counter() - t0, 1),
            "resumed_at_commit": start or None, "commits_this_run": kinds,
            "snapshots": len(table.metadata.snapshots),
            "built": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    with open(done_file, "w", encoding="utf-8") as f:
        json.dump(info, f, indent=2)
    return info


# -- measuring ------------------------------------------------------------------------------
def _baseline_child(folder: str) -> None:
    """In a fresh process: plain PyIceberg loads the table and lists every snapshot's manifests
    (each manifest list read once). Prints its counts and times as JSON."""
    import warnings

    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    table = _catalog(folder, create=False).load_table(TABLE)
    t1 = time.perf_counter()
    manifests: set = set()
    entries = 0
    for s in table.metadata.snapshots:
        for m in s.manifests(table.io):
            manifests.add(m.manifest_path)
            entries += 1
    t2 = time.perf_counter()
    live = table.current_snapshot().summary
    print(json.dumps({"load_seconds": round(t1 - t0, 3), "list_seconds": round(t2 - t1, 3),
                      "snapshots": len(table.metadata.snapshots),
                      "manifest_lists": len(table.metadata.snapshots),
                      "distinct_manifests": len(manifests), "manifest_list_entries": entries,
                      "live_data_files": int(live["total-data-files"]),
                      "metadata_file_bytes": os.path.getsize(
                          table.metadata_location.removeprefix("file://"))}))


def _run_child(cmd: list[str], env: dict | None = None, on_err=None) -> dict:
    """Run ``cmd``; its wall time, exit code, stdout, and its own peak RSS (``os.wait4``)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=ROOT)
    out: list[bytes] = []
    err: list[bytes] = []

    def pump(stream, into, hook):
        while True:
            chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
            if not chunk:
                return
            into.append(chunk)
            if hook:
                hook(chunk)

    threads = [threading.Thread(target=pump, args=(proc.stdout, out, None), daemon=True),
               threading.Thread(target=pump, args=(proc.stderr, err, on_err), daemon=True)]
    for t in threads:
        t.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    for t in threads:
        t.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = b"".join(err).decode("utf-8", "replace")
    return {"seconds": round(wall, 3), "exit": proc.returncode,
            "stdout": b"".join(out).decode("utf-8", "replace"),
            "stderr": re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", stderr)[-2000:],
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}


def baseline(folder: str) -> dict:
    r = _run_child([sys.executable, "-m", "benchmarks.audit_history", "--baseline-child",
                    folder])
    if r["exit"] != 0:
        raise SystemExit(f"the baseline failed (exit {r['exit']}): {r['stderr']}")
    doc = json.loads(r["stdout"])
    doc.update(seconds=r["seconds"], peak_rss_mb=r["peak_rss_mb"])
    return doc


def _icecheck() -> str:
    here = os.path.join(os.path.dirname(sys.executable), "icecheck")
    return here if os.path.exists(here) else (shutil.which("icecheck") or "icecheck")


def audit(folder: str, snapshots: int) -> dict:
    """``icecheck audit TABLE --catalog URI --json`` in a fresh process, its progress read
    from its own progress bar (rich draws it into the pipe with ``TTY_COMPATIBLE=1``)."""
    bar = Progress("audit", snapshots, "snapshots")
    seen = [0]

    def on_err(chunk: bytes):
        found = re.findall(rb"(\d+)/(\d+)", chunk)
        if found:
            done = int(found[-1][0])
            if done > seen[0]:
                seen[0] = done
                bar.update(done)

    env = dict(os.environ, TTY_COMPATIBLE="1", COLUMNS="100")
    r = _run_child([_icecheck(), "audit", TABLE, "--catalog", catalog_uri(folder), "--json"],
                   env=env, on_err=on_err)
    if r["exit"] not in (0, 1):
        raise SystemExit(f"icecheck audit failed (exit {r['exit']}): {r['stderr']}")
    doc = json.loads(r["stdout"])
    bar.update(snapshots, force=True)
    return {"seconds": r["seconds"], "exit": r["exit"], "peak_rss_mb": r["peak_rss_mb"],
            "stats": doc["stats"], "violations": doc["violations"],
            "findings": [{"check": f["check"], "severity": f["severity"],
                          "certainty": f["certainty"], "message": f["message"][:300]}
                         for f in doc["findings"]]}


def _machine() -> dict:
    try:
        with open("/proc/loadavg", encoding="utf-8") as f:
            load = [float(x) for x in f.read().split()[:3]]
    except OSError:
        load = list(os.getloadavg())
    import pyiceberg

    return {"cpus": os.cpu_count(), "load_average_1_5_15": load,
            "python": platform.python_version(), "pyiceberg": pyiceberg.__version__,
            "platform": platform.platform()}


def measure(plan: Plan, built: dict, cache: str = CACHE) -> dict:
    folder = plan.folder(cache)
    load_before = _machine()["load_average_1_5_15"]
    print("baseline: plain PyIceberg lists every snapshot's manifests ...", file=sys.stderr,
          flush=True)
    b1 = baseline(folder)
    print(f"  {b1['seconds']:.1f} s", file=sys.stderr)
    print("icecheck audit ...", file=sys.stderr, flush=True)
    a = audit(folder, b1["snapshots"])
    print(f"  {a['seconds']:.1f} s", file=sys.stderr)
    print("baseline again ...", file=sys.stderr, flush=True)
    b2 = baseline(folder)
    print(f"  {b2['seconds']:.1f} s", file=sys.stderr)
    base = (b1["seconds"] + b2["seconds"]) / 2
    s = a["stats"]
    n, m = b1["snapshots"], b1["distinct_manifests"]
    machine = _machine()
    machine["load_average_before"] = load_before
    return {
        "plan": asdict(plan), "built": built, "machine": machine,
        "when": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "table": {k: b1[k] for k in ("snapshots", "distinct_manifests", "manifest_list_entries",
                                     "live_data_files", "metadata_file_bytes")}
        | {"files_tracked": s.get("files_tracked")},
        "baseline": {"runs": [b1, b2], "seconds": round(base, 3)},
        "audit": a,
        "per_snapshot_ms": round(1000 * a["seconds"] / n, 3),
        "per_manifest_ms": round(1000 * a["seconds"] / max(m, 1), 3),
        "walk_per_snapshot_ms": round(1000 * s.get("seconds", 0) / n, 3),
        "ratio_to_baseline": round(a["seconds"] / base, 2),
    }


# -- the report -----------------------------------------------------------------------------
def markdown(doc: dict) -> str:
    lines = ["# `icecheck audit` on a long history", "",
             "Generated by `python -m benchmarks.audit_history` (`--quick` for the small size); "
             "see the module's docstring for the table it builds and what it measures. The "
             "ratio is the audit's wall time over the baseline's (plain PyIceberg loading the "
             "table and reading every snapshot's manifest list), both fresh processes in the "
             "same run.", ""]
    for name in ("full", "quick"):
        r = doc.get(name)
        if not r:
            continue
        t, a, s, p = r["table"], r["audit"], r["audit"]["stats"], r["plan"]
        b = r["built"]
        lines += [f"## {name}: {t['snapshots']:,} snapshots", "",
                  f"Measured {r['when']}; {r['machine']['cpus']} CPUs, load average "
                  f"{' '.join(str(x) for x in r['machine']['load_average_before'])} before, "
                  f"{' '.join(str(x) for x in r['machine']['load_average_1_5_15'])} after; "
                  f"Python {r['machine']['python']}, PyIceberg {r['machine']['pyiceberg']}.", "",
                  f"The table: {p['snapshots'] + p['expiries'] * p['expire_each']:,} commits, "
                  f"{t['snapshots']:,} snapshots after {p['expiries']} expiries of "
                  f"{p['expire_each']} each, {p['files_per_append']} files per append, "
                  f"{t['live_data_files']:,} live data files, {t['files_tracked']:,} distinct "
                  f"files in its history, {t['distinct_manifests']:,} distinct manifests, "
                  f"{t['manifest_list_entries']:,} manifest list entries, a "
                  f"{t['metadata_file_bytes'] / 1e6:.1f} MB metadata file; built in "
                  f"{_duration(b['seconds'])}.", "",
                  "| measure | value |", "|---|---|",
                  f"| `icecheck audit` wall time | {a['seconds']:.1f} s (exit {a['exit']}) |",
                  f"| of which the audit itself (`stats.seconds`) | {s.get('seconds', 0):.1f} s |",
                  f"| baseline wall time (mean of 2) | {r['baseline']['seconds']:.1f} s |",
                  f"| **ratio audit / baseline** | **{r['ratio_to_baseline']:.2f}** |",
                  f"| per snapshot | {r['per_snapshot_ms']:.2f} ms |",
                  f"| per distinct manifest | {r['per_manifest_ms']:.2f} ms |",
                  f"| peak RSS, audit | {a['peak_rss_mb']:.0f} MB |",
                  f"| peak RSS, baseline | {r['baseline']['runs'][0]['peak_rss_mb']:.0f} MB |",
                  f"| manifest lists read | {s.get('manifest_lists', 0):,} |",
                  f"| manifests read | {s.get('manifests_read', 0):,} |",
                  f"| manifest cache hits | {s.get('manifest_cache_hits', 0):,} |",
                  f"| entries read | {s.get('entries_read', 0):,} |",
                  f"| existence checks | {s.get('existence_checks', 0):,} |",
                  f"| most live sets held at once | {s.get('max_live_sets', 0)} |",
                  f"| metadata log files read | {s.get('metadata_log_files_read', 0)} |",
                  f"| findings | {len(a['findings'])} ({a['violations']} violations) |", ""]
        for f in a["findings"][:5]:
            lines.append(f"- {f['check']} ({f['severity']}, {f['certainty']}): "
                         f"{f['message'][:200]}")
        if len(a["findings"]) > 5:
            lines.append(f"- ... {len(a['findings']) - 5} more")
        lines.append("")
    return "\n".join(lines) + "\n"


def write_report(name: str, result: dict) -> None:
    from icecheck.traces.format import write_together

    doc: dict = {}
    if os.path.exists(REPORT_JSON):
        try:
            with open(REPORT_JSON, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            doc = {}
    doc[name] = result
    write_together({REPORT_JSON: json.dumps(doc, indent=2) + "\n", REPORT_MD: markdown(doc)})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.audit_history",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK.snapshots} snapshots, {QUICK.files_per_append} files per "
                         "append (the full size: "
                         f"{FULL.snapshots:,} snapshots, {FULL.files_per_append} files)")
    ap.add_argument("--snapshots", type=int, metavar="N",
                    help="snapshots the table keeps (another cached table per size)")
    ap.add_argument("--files-per-append", type=int, metavar="K")
    ap.add_argument("--build-only", action="store_true", help="build the table, measure nothing")
    ap.add_argument("--regenerate", action="store_true", help="build the table again")
    ap.add_argument("--cache", metavar="DIR", default=CACHE,
                    help="where the built tables are kept (default: .cache/audit-history)")
    ap.add_argument("--baseline-child", metavar="FOLDER", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.baseline_child:
        _baseline_child(args.baseline_child)
        return 0
    plan = QUICK if args.quick else FULL
    if args.snapshots is not None or args.files_per_append is not None:
        n = args.snapshots if args.snapshots is not None else plan.snapshots
        k = args.files_per_append if args.files_per_append is not None else \
            plan.files_per_append
        if n < 50 or k < 1:
            ap.error("--snapshots must be at least 50 and --files-per-append at least 1")
        plan = Plan(plan.name if (n, k) == (plan.snapshots, plan.files_per_append) else
                    f"{n}s-{k}f", snapshots=n, files_per_append=k, expire_each=max(1, n // 100))
    import importlib.util

    if importlib.util.find_spec("pyiceberg") is None:
        print("PyIceberg is not installed: pip install -e '.[audit]'", file=sys.stderr)
        return 2
    built = generate(plan, args.regenerate, args.cache)
    if args.build_only:
        return 0
    result = measure(plan, built, args.cache)
    write_report(plan.name, result)
    print(markdown({plan.name: result}))
    print(f"wrote {os.path.relpath(REPORT_JSON, ROOT)} and {os.path.relpath(REPORT_MD, ROOT)}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
