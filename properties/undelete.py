"""Undelete: a key that a committed operation deleted (a DELETE, or any commit that removed all
its rows) is visible again in a later committed version, with no later committed operation
writing it back.

Not an undelete, though the commit order says the key should be gone: rows a concurrent write
left that the DELETE's WHERE does not select (the row moved out of the predicate), and rows
added concurrently by writes that read no version of the key (an INSERT, a MERGE or upsert of
an absent key). A serial order with the DELETE first, or the write first, explains the table
and what each read; what the DELETE reported is the isolation check's concern."""

from __future__ import annotations

from .analysis import Analysis
from .common import jsonable, rows_text
from .violation import VIOLATION, Violation


def check(a: Analysis) -> list[Violation]:
    out = []
    h = a.history
    for m in a.oracle.mismatches:
        if m.kind != "undelete":
            continue
        if a.delete_where_misses(m.responsible, m.actual):
            # the key's rows are a version written concurrently that the DELETE's WHERE does
            # not select: "that write, then the DELETE" leaves the same table (what each
            # reported differs: the isolation check's G-single)
            continue
        deleter = a.op(m.responsible)
        base_rows = {rv.values for rv in h.rows(deleter.base_snapshot_id)} if deleter else set()
        concurrent = [r for r in m.actual if r not in base_rows]
        if concurrent and len(concurrent) == len(m.actual) and all(
                _inserted_blind(a, m.origins.get(r), m.key) for r in concurrent):
            # every row left was added, concurrently with the DELETE, by a write that read no
            # version of the key (an INSERT, or a MERGE or upsert that found it absent): the
            # serial order "the DELETE, then that write" leaves the same table and explains
            # what each read, so nothing came back (snapshot isolation lets a DELETE miss a
            # concurrent insert; serializable engines refuse it where they validate)
            continue
        origins = {repr(tuple(r)): m.origins.get(r) for r in m.actual}
        involved = {m.responsible, *origins.values()}
        extra = ""
        dropped = a.deletes_dropped_by_rewrite(m.position)
        if dropped:
            rewriter = h.lineage_ops[m.position]
            extra += (f" {a.who(rewriter.label)} rewrote the row's data file and in the same "
                      f"commit dropped the delete file(s) {', '.join(dropped)} that still applied "
                      f"to its new file.")
        left = a.deletes_left_dangling(m.position)
        if left:
            extra += " " + a.dangling_text(m.position, left)
        if concurrent:
            writers = sorted({m.origins.get(r) or "?" for r in concurrent})
            extra = (f" The surviving row was written by {', '.join(a.who(w) for w in writers)}, "
                     f"committed concurrently with the DELETE, which never saw it.")
        out.append(Violation(
            "undelete",
            f"{a.who(m.responsible)} deleted {a.key_text(m.key)}, but the table at seq "
            f"{a.seq(m.position)} shows it again: {rows_text(m.actual)}.{extra}",
            VIOLATION,
            {"key": jsonable(m.key), "deleted_by": m.responsible,
             "back_at_commit_of": a.committed_by(m.position), "rows": jsonable(m.actual),
             "row_origins": origins, "written_concurrently": bool(concurrent),
             "first_sequence_number": a.seq(m.position),
             "sequence_numbers": [a.seq(p) for p in m.positions],
             "based_on_lost_commit": bool(involved & a.oracle.stale_ops),
             "deletes_dropped_by_rewrite": bool(dropped),
             "deletes_left_dangling": bool(left)}))
    return out


def _inserted_blind(a: Analysis, label: str | None, key) -> bool:
    """The operation ``label`` wrote ``key`` without reading a version of it at its base."""
    eff = a.oracle.effects.get(label) if label is not None else None
    return eff is not None and eff.reads.get(key) is not True
