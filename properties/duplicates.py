"""Duplicate keys (workloads with a key column, default ``id``): a committed version holds more
rows for a key than the committed operations applied in commit order leave for it.

``details["inserted_concurrently"]`` is true when every row of the key was inserted (an INSERT,
or a MERGE's not-matched branch) by an operation that did not find the key at its base: the case
Iceberg's snapshot isolation does not validate (it has no primary keys).
``details["involves_concurrent_insert"]`` is true when at least one of them was: the duplicate
then exists because a writer added a row for a key it found absent, which no snapshot-isolation
validation looks at (the other rows may be later versions of the concurrent one).
"""

from __future__ import annotations

from .analysis import Analysis
from .common import jsonable, rows_text
from .delivery import redelivery
from .violation import VIOLATION, Violation


def check(a: Analysis) -> list[Violation]:
    out = []
    if not a.oracle.keyfn.keyed:
        return out
    effects = a.oracle.effects
    for m in a.oracle.mismatches:
        if m.kind != "duplicate_keys":
            continue
        origins = [m.origins.get(r) for r in m.actual]
        by_insert = [o is not None and o in effects and
                     (m.key in effects[o].inserted or m.key in effects[o].appends)
                     for o in origins]
        # copies of one inserted row (two concurrent rewrites of its file each kept it) are not
        # concurrent inserts: those need a different inserting operation per row
        inserted = all(by_insert) and len(set(origins)) == len(origins)
        writers = sorted({o or "?" for o in origins})
        dropped = a.deletes_dropped_by_rewrite(m.position)
        why = ""
        if dropped:
            why = (f" {a.who(a.history.lineage_ops[m.position].label)} rewrote a data file and in "
                   f"the same commit dropped the delete file(s) {', '.join(dropped)} that still "
                   f"applied to its new file.")
        left = a.deletes_left_dangling(m.position)
        if left:
            why += " " + a.dangling_text(m.position, left)
        again = redelivery(a, m.position, m.actual)
        if again:
            why += again[0]
        twice = a.files_added_twice(m.position, m.actual)
        if twice:
            why += " " + twice[0]
            writers = sorted(set(writers) | set(twice[1]))
        out.append(Violation(
            "duplicate_keys",
            f"{a.key_text(m.key)} has {len(m.actual)} live rows at seq {a.seq(m.position)} "
            f"({rows_text(m.actual)}), written by {', '.join(a.who(w) for w in writers)}; the "
            f"committed operations in commit order leave {rows_text(m.expected)}.{why}",
            VIOLATION,
            {"key": jsonable(m.key), "rows": jsonable(m.actual),
             "duplicated_at_commit_of": a.committed_by(m.position),
             "expected": jsonable(m.expected),
             "row_origins": {repr(tuple(r)): m.origins.get(r) for r in m.actual},
             "inserted_concurrently": inserted,
             "involves_concurrent_insert": any(by_insert),
             "insert_only_merge": a.insert_only_merges({o for o in origins if o is not None}),
             "first_sequence_number": a.seq(m.position),
             "sequence_numbers": [a.seq(p) for p in m.positions],
             "based_on_lost_commit": bool(set(writers) & a.oracle.stale_ops),
             "deletes_dropped_by_rewrite": bool(dropped),
             "deletes_left_dangling": bool(left),
             "file_added_twice": bool(twice),
             # a streaming sink delivered a batch again after this kind of restart
             # (properties/delivery.py), or None
             "sink_redelivery": again[1] if again else None}))
    return out
