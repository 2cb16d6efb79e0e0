"""Consistent read: every committed version (each snapshot of the current lineage) equals the
committed operations applied in commit order, each computed from what it read at its own base.

Mismatches that are undeletes, row-level lost writes or duplicate keys are reported under those
names; this reports the rest (rows no committed operation wrote, or an unclassified difference).
"""

from __future__ import annotations

from .analysis import Analysis
from .common import jsonable, rows_text
from .violation import VIOLATION, Violation


def check(a: Analysis) -> list[Violation]:
    out = []
    for m in a.oracle.mismatches:
        if m.kind != "consistent_read":
            continue
        twice = a.files_added_twice(m.position, m.actual)
        out.append(Violation(
            "consistent_read",
            f"At seq {a.seq(m.position)} {a.key_text(m.key)} reads {rows_text(m.actual)}, but the "
            f"committed operations applied in commit order give {rows_text(m.expected)}."
            + (" " + twice[0] if twice else ""),
            VIOLATION,
            {"key": jsonable(m.key), "expected": jsonable(m.expected),
             "actual": jsonable(m.actual), "last_writer": m.responsible,
             "first_sequence_number": a.seq(m.position),
             "sequence_numbers": [a.seq(p) for p in m.positions],
             "based_on_lost_commit": bool({m.responsible} & a.oracle.stale_ops),
             "file_added_twice": bool(twice)}))
    return out
