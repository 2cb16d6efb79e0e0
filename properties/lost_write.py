"""Lost write: an acknowledged commit whose effects vanish from later committed versions, with
no later committed operation that legitimately overwrote them.

* catalog level: an operation told ``committed`` whose snapshot is not in the current
  snapshot's ancestry (a catalog with no coordination let a stale writer swap over it);
* row level: a committed operation's write of a key (a row value it inserted or updated) that a
  later committed version of the table no longer shows, although the oracle (``oracle.py``:
  every committed operation applied in commit order, computed from its base) still expects it.
"""

from __future__ import annotations

from icecheck.models.filters import TrueExpr, residual_for, to_filter_text

from .analysis import Analysis
from .common import jsonable, rows_text
from .violation import VIOLATION, Violation


def check(a: Analysis) -> list[Violation]:
    return check_catalog(a) + check_rows(a)


def check_catalog(a: Analysis) -> list[Violation]:
    """The catalog-level lost writes: they read every writer's finished operations."""
    h = a.history
    out: list[Violation] = []
    lineage_ids = {s.snapshot_id for s in h.lineage}
    head = h.lineage[-1] if h.lineage else None
    # a commit to another branch (toBranch) lives on that branch, not on main's lineage: it is
    # lost only when no ref reaches it any more (models/refs.py)
    on_refs = {s.snapshot_id for _, _, sid in h.meta.refs for s in h.meta.ancestors(sid)}
    for op in h.ops:
        if not op.acknowledged or op.record is None or op.snapshot_id in lineage_ids:
            continue
        if op.snapshot_id in on_refs:
            continue
        if op.snapshot_id is None:  # a commit that adds no snapshot (ExpireSnapshots)
            continue
        snap = h.snapshot(op.snapshot_id)
        sibling = next((s for s in h.lineage if snap is not None and s.parent_id == snap.parent_id
                        and s.snapshot_id != snap.snapshot_id), None)
        by = h.by_snapshot.get(sibling.snapshot_id) if sibling else None
        by_text = (f"{a.who(by.label)} swapped the table pointer from the same parent and "
                   f"discarded it") if by else "a later swap discarded it"
        rolled_back_by = None
        if by is None and snap is not None and snap.parent_id in lineage_ids:
            # the table was set back to an ancestor of the lost snapshot: a writer whose commit
            # the catalog applied but answered CommitFailedException retried with the same
            # snapshot id, and SnapshotProducer.commit's "this is a rollback operation" branch
            # (base.snapshot(id) != null -> setBranchSnapshot) moved main back to it
            back = h.by_snapshot.get(snap.parent_id)
            back_label = back.label if back is not None and back.writer != op.writer else None
            if back is None:
                # the retrying writer may still be at it (its record not written yet): the
                # snapshot the catalog applied for it is its phantom
                back_label = next((f"{w.name}.{w.op_index + 1}" for w in h.state.writers
                                   if w.phantom_id == snap.parent_id and w.name != op.writer),
                                  None)
            if back_label is not None:
                rolled_back_by = back_label
                by_text = (f"{a.who(back_label)}, retrying a commit the catalog had applied but "
                           f"answered CommitFailedException, re-committed the same snapshot id; "
                           f"Java's SnapshotProducer.commit treats that as a rollback and set "
                           f"main back to snapshot {snap.parent_id}, discarding it")
        out.append(Violation(
            "lost_write",
            f"{a.who(op.label)} was told its commit succeeded (snapshot {op.snapshot_id}, "
            f"seq {op.sequence_number}), but that snapshot is not in the current table's history "
            f"(head seq {head.sequence_number if head else 0}): {by_text}.",
            VIOLATION,
            {"level": "catalog", "op": op.label, "writer": op.writer,
             "snapshot_id": op.snapshot_id, "sequence_number": op.sequence_number,
             "discarded_by": by.label if by else rolled_back_by,
             "rolled_back": rolled_back_by is not None,
             "catalog": h.model.config.catalog}))
    return out


def check_rows(a: Analysis) -> list[Violation]:
    """The row-level lost writes: a function of the committed lineage (the oracle)."""
    out: list[Violation] = []
    for m in a.oracle.mismatches:
        if m.kind != "lost_write":
            continue
        missing = [r for r in m.expected if r not in m.actual]
        writers = sorted({m.origins.get(r) or "?" for r in missing})
        stale = bool(set(writers) & a.oracle.stale_ops)
        details = {"level": "row", "key": jsonable(m.key), "op": m.responsible,
                   "writers": writers, "lost_rows": jsonable(missing),
                   "expected": jsonable(m.expected), "actual": jsonable(m.actual),
                   "first_sequence_number": a.seq(m.position),
                   "sequence_numbers": [a.seq(p) for p in m.positions],
                   "based_on_lost_commit": stale}
        why = "and no later committed operation overwrote it."
        removed = a.filter_removed(m.position, missing)
        if removed is not None:
            # the commit that removed it dropped whole files by metadata, although its filter
            # does not select the row: with a null in the filter's columns, a real Iceberg bug
            expr, how, on_null = removed
            text = to_filter_text(expr)
            details["removed_by_row_filter"] = text
            details["filter_unknown_on_null"] = on_null
            remover = a.history.lineage_ops[m.position]
            hint = ""
            if on_null:
                table = a.history.model.config.table
                row = dict(zip(table.schema.names, missing[0]))
                by_residual = how == "row_filter" and isinstance(
                    residual_for(expr, table.spec, table.spec.partition_of(row)), TrueExpr)
                hint = (" (a null compared with a value is not true in SQL); Iceberg decided from "
                        + ("the file's partition that every row matched: its partition residual "
                           "sorts a null below every value" if by_residual else
                           "the file's column metrics that every row matched: a column holding "
                           "only nulls is taken to match != and not in"))
            why = (f"and no committed operation overwrote it: {a.who(remover.label)} removed "
                   f"its data file whole by the filter {text}, which does not select it{hint}.")
        out.append(Violation(
            "lost_write",
            f"{a.who(m.responsible)} committed {a.key_text(m.key)} as {rows_text(missing)}, but "
            f"from seq {a.seq(m.position)} the table shows {rows_text(m.actual)} for that key, "
            f"{why}",
            VIOLATION, details))
    return out
