"""The Violation record every property reports."""

from __future__ import annotations

from dataclasses import dataclass, field

VIOLATION = "violation"
FINDING = "finding"

PROPERTIES: tuple[str, ...] = ("lost_write", "undelete", "dangling_deletes", "duplicate_keys",
                               "metadata_integrity", "consistent_read", "isolation",
                               "readable")


@dataclass(frozen=True)
class Violation:
    property: str    # one of PROPERTIES
    message: str     # one or two sentences naming writers, keys/rows and snapshots by sequence number
    severity: str    # "violation" or "finding" (reported and classified, e.g. v2 dangling deletes)
    details: dict = field(default_factory=dict, compare=False, hash=False)  # JSON-able

    def as_json(self) -> dict:
        return {"property": self.property, "message": self.message, "severity": self.severity,
                "details": self.details}
