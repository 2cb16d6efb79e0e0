"""What an audit reports: findings about a real table's history, each saying how sure it is.

A finding names the snapshots and files it is about and, where the audit could read the data
files, the rows. Two scales, kept apart because a nightly job acts on them differently:

* ``severity`` is the model's (``properties.violation``): a ``violation`` is something Iceberg
  promises never happens (a file registered twice, a dangling deletion vector, a commit that
  dropped another's snapshots, a missing manifest); a ``finding`` is reported and classified
  but tolerated (a v2 position delete left behind whose rows stay deleted, a snapshot no ref
  reaches). ``icecheck audit`` exits 1 on a violation, and on a finding only with ``--strict``.
* ``certainty`` says what the claim rests on: ``proven from metadata`` (the table's own
  metadata, manifests and the store's answer to "does this file exist" show it),
  ``proven from data files`` (rows read from the data and delete files show it), or
  ``possible`` (the metadata allows it; what would prove it could not be read or is not
  recorded).

``property`` is the model's name for the kind of harm (``properties.violation.PROPERTIES``), so
an audit finding and a counterexample of ``icecheck explore`` speak one vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icecheck.properties.violation import FINDING, PROPERTIES, VIOLATION

PROVEN_METADATA = "proven from metadata"
PROVEN_DATA = "proven from data files"
POSSIBLE = "possible"
CERTAINTIES = (PROVEN_DATA, PROVEN_METADATA, POSSIBLE)

#: The checks, in report order, each with the model property it is about.
CHECKS: dict[str, str] = {
    "duplicate_file": "duplicate_keys",
    "dangling_delete": "dangling_deletes",
    "dropped_equality_delete": "undelete",
    "missing_file": "readable",
    "stale_parent": "lost_write",
    "lost_commit": "lost_write",
    "main_moved_back": "lost_write",
    "sequence_number": "metadata_integrity",
    "unreachable_snapshot": "lost_write",
    # a streaming sink's restart that cannot find its last commit commits a batch again
    # (audit/sinks.py; docs/pipelines.md "Streaming jobs that fail and restart")
    "sink_ancestry_broken": "duplicate_keys",
    "sink_expiry_risk": "duplicate_keys",
}
assert set(CHECKS.values()) <= set(PROPERTIES)

__all__ = ["Finding", "CHECKS", "CERTAINTIES", "PROVEN_METADATA", "PROVEN_DATA", "POSSIBLE",
           "VIOLATION", "FINDING"]


@dataclass
class Finding:
    check: str                      # a key of CHECKS
    severity: str                   # VIOLATION or FINDING
    certainty: str                  # one of CERTAINTIES
    message: str                    # one or two sentences naming snapshots and files
    snapshots: list[int] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    rows: list[dict] | None = None  # rows read from the files, when they could be read
    details: dict = field(default_factory=dict)     # JSON-able
    property: str = ""
    rows_note: str = ""             # what the rows are ("live again", "it deleted", ...)

    def __post_init__(self) -> None:
        if not self.property:
            self.property = CHECKS[self.check]
        assert self.severity in (VIOLATION, FINDING) and self.certainty in CERTAINTIES

    def as_json(self) -> dict:
        return {"check": self.check, "property": self.property, "severity": self.severity,
                "certainty": self.certainty, "message": self.message,
                "snapshots": list(self.snapshots), "files": list(self.files),
                "rows": self.rows, "rows_note": self.rows_note, "details": self.details}


def sort_key(f: Finding):
    """Violations first, then by check (CHECKS order), then by the first snapshot named."""
    order = list(CHECKS)
    return (f.severity != VIOLATION, order.index(f.check), f.snapshots[:1], f.files[:1])
