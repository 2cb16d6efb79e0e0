"""One audit: open nothing, write nothing; walk a loaded table and collect its findings.

``audit(table, ...)`` runs the file-level checks during the bounded-memory walk
(``walk.py``, ``checks.py``), then the lineage checks (``history.py``), and returns an
``AuditReport``: the findings (violations first), what was read (snapshots, manifests read,
cache hits, existence checks, data files read), the most live sets held at once, and the
table's write settings (for the report and for ``--pipeline``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .checks import FileChecks
from .findings import FINDING, VIOLATION, Finding, sort_key
from .history import Lineage
from .manifests import MetadataReader
from .orphans import lost_commits
from .rows import RowReader
from .sinks import Expiry, expiry_evidence, sink_findings
from .walk import Walk

#: table properties the report shows (write modes, isolation levels, format, retries)
SETTINGS = ("format-version", "write.delete.mode", "write.update.mode", "write.merge.mode",
            "write.delete.isolation-level", "write.update.isolation-level",
            "write.merge.isolation-level", "commit.retry.num-retries",
            "write.metadata.delete-after-commit.enabled")


@dataclass
class AuditReport:
    table: str
    catalog: str
    metadata_location: str
    format_version: int
    snapshots: int
    refs: dict
    settings: dict
    findings: list[Finding]
    stats: dict = field(default_factory=dict)
    seconds: float = 0.0
    #: snapshot -> data files it added outside the table's location (add_files; --pipeline)
    external: dict = field(default_factory=dict, repr=False)
    #: what shows that snapshots were expired (audit/sinks.py; --pipeline adds an EXPIRE job)
    expiry: Expiry = field(default_factory=Expiry, repr=False)
    #: each streaming sink's identity and where a restart's walk finds its last commit
    sinks: dict = field(default_factory=dict)

    @property
    def violations(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == VIOLATION]

    def failed(self, strict: bool = False) -> bool:
        return bool(self.violations) or (strict and any(f.severity == FINDING
                                                        for f in self.findings))

    def as_json(self) -> dict:
        return {"table": self.table, "catalog": self.catalog,
                "metadata_location": self.metadata_location,
                "format_version": self.format_version, "snapshots": self.snapshots,
                "refs": self.refs, "settings": self.settings,
                "violations": len(self.violations),
                "findings": [f.as_json() for f in self.findings],
                "sinks": self.sinks, "expiry": self.expiry.as_json(),
                "stats": self.stats}


def audit(table, identifier: str = "", catalog: str = "", check_files: str = "heads",
          read_data: bool = True, max_data_files: int = 100, progress=None,
          cache_entries: int = 500_000, now_ms: int | None = None) -> AuditReport:
    """Audit ``table`` (a loaded ``pyiceberg.table.Table``); read only. ``now_ms``: the time
    an expiry is judged at (the sink checks; default: now)."""
    t0 = time.perf_counter()
    meta = table.metadata
    reader = MetadataReader(table.io, cache_entries=cache_entries)
    rows = RowReader(table.io, max_data_files) if read_data else None
    checks = FileChecks(table, reader, rows, check_files=check_files)
    walk = Walk(meta.snapshots, reader, checks.on_snapshot, progress=progress)
    walk.run()
    checks.check_metadata_log()
    findings = checks.finish()
    findings += Lineage(meta).findings(checks.head_live, checks.added)
    extra: dict = {}
    main = meta.refs.get("main")
    findings += lost_commits(table, reader, checks.head_live.get(
        main.snapshot_id if main is not None else None), extra)
    expiry = expiry_evidence(table)
    sink_out, sinks = sink_findings(table, expiry, int(time.time() * 1000)
                                    if now_ms is None else now_ms)
    findings += sink_out
    extra["metadata_log_files_read"] = expiry.log_files_read
    findings.sort(key=sort_key)
    props = dict(meta.properties)
    settings = {k: props[k] for k in SETTINGS if k in props}
    settings.setdefault("format-version", str(meta.format_version))
    stats = dict(reader.stats)
    stats.update(extra)
    stats.update(snapshots_walked=checks.visited, files_tracked=len(reader.files),
                 max_live_sets=walk.max_live_sets,
                 data_files_read=rows.files_read if rows is not None else 0)
    location = (meta.location or "").rstrip("/") + "/"
    external = {sid: [p for p in paths if not _under(p, location)]
                for sid, paths in checks.added.items()}
    seconds = time.perf_counter() - t0
    stats["seconds"] = round(seconds, 3)
    return AuditReport(
        external={k: v for k, v in external.items() if v}, expiry=expiry, sinks=sinks,
        table=identifier, catalog=catalog, metadata_location=table.metadata_location,
        format_version=int(meta.format_version), snapshots=len(meta.snapshots),
        refs={n: r.snapshot_id for n, r in sorted(meta.refs.items())}, settings=settings,
        findings=findings, stats=stats, seconds=seconds)


def _under(path: str, location: str) -> bool:
    """Whether ``path`` lies under the table's ``location`` (``file:/x`` and ``file:///x``
    name one place)."""
    def norm(p):
        return "file:/" + p[len("file:"):].lstrip("/") if p.startswith("file:") else p
    return norm(path).startswith(norm(location))
