"""Dangling delete files: a live position delete file or deletion vector (in some committed
version) references a data file that is not live in that version.

* a v3 deletion vector: a hard violation (v3 requires a data file's DV to be removed in the same
  commit that removes the file);
* a v2 position delete: a *finding*, classified:
  - ``harmless``: the data file is gone and none of the rows it deleted is visible; readers
    skip it; Java drops it once its sequence number falls below every live data file's;
  - ``resurrected``: the rows it deleted are visible again in another file (whoever removed
    the data file rewrote them without applying the delete): the harm is an undelete.
"""

from __future__ import annotations

from collections import Counter

from icecheck.models.files import DV, EQUALITY_DELETES

from .analysis import Analysis
from .violation import FINDING, VIOLATION, Violation


def _live(a: Analysis):
    """Per lineage position: (live data entries by path, live delete entries)."""
    return [a.history.live_files(s) for s in a.history.lineage]


def live_delete_files_exist(a: Analysis) -> bool:
    return any(dels for _, dels in _live(a))


def check(a: Analysis) -> list[Violation]:
    h = a.history
    out = []
    seen = set()
    live = _live(a)
    data_paths = [{e.file.path for e in data} for data, _ in live]
    for pos, (data, deletes) in enumerate(live):
        if not deletes:
            continue
        snap = h.lineage[pos]
        for d in deletes:
            f = d.file
            if f.content == EQUALITY_DELETES:
                continue
            for target in f.referenced_paths:
                if target in data_paths[pos] or (f.path, target) in seen:
                    continue
                seen.add((f.path, target))
                removed_at = next((p for p in range(pos, 0, -1)
                                   if target in data_paths[p - 1] and target not in data_paths[p]),
                                  None)
                remover = h.lineage_ops[removed_at] if removed_at is not None else None
                adder = h.by_snapshot.get(d.snapshot_id)
                deleted_rows = []
                dfile = h.store.get(target)
                if dfile is not None and dfile.rows is not None:
                    deleted_rows = [dfile.rows[p] for t, p in f.positions
                                    if t == target and p < len(dfile.rows)]
                back = _back(a, pos, snap, deleted_rows)
                min_seq = min((e.data_sequence_number for e in data), default=None)
                droppable = min_seq is not None and d.data_sequence_number < min_seq
                who_added = a.who(adder.label) if adder else "a commit"
                who_removed = (a.who(remover.label) if remover else
                               "a commit" if removed_at is not None else "no committed version")
                # the DV came in after its data file had left the table (a writer that did not
                # see the removal), not left behind by the commit that removed the file
                added_after = (adder is not None and adder.position is not None
                               and removed_at is not None and adder.position > removed_at)
                if f.content == DV:
                    severity, cls = VIOLATION, "dv"
                    text = (f"Deletion vector {f.path} (added by {who_added}) is live at seq "
                            f"{snap.sequence_number} but its data file {target} is not: removed "
                            f"by {who_removed}"
                            + (", before the DV was added (its writer did not see the file go)"
                               if added_after else "")
                            + "; format v3 requires a removed data file's DV to be removed in the "
                              "same commit: no DV may outlive its data file.")
                elif back:
                    severity, cls = FINDING, "resurrected"
                    text = (f"Position delete {f.path} (added by {who_added}) is live at seq "
                            f"{snap.sequence_number} but its data file {target} was removed by "
                            f"{who_removed}, which rewrote the deleted row(s) "
                            f"{', '.join(map(repr, back))} without the delete: they are visible "
                            f"again (an undelete).")
                else:
                    severity, cls = FINDING, "harmless"
                    text = (f"Position delete {f.path} (added by {who_added}) is live at seq "
                            f"{snap.sequence_number} but its data file {target} was removed by "
                            f"{who_removed}. Harmless: the data file is gone, readers skip it; it "
                            f"is cleaned up once its sequence number ({d.data_sequence_number}) "
                            f"falls below every live data file's"
                            + (" (already the case: the next commit drops it)." if droppable
                               else "."))
                out.append(Violation("dangling_deletes", text, severity, {
                    "delete_file": f.path, "content": f.content, "data_file": target,
                    "classification": cls, "added_by": adder.label if adder else None,
                    "data_file_removed_by": remover.label if remover else None,
                    "first_sequence_number": snap.sequence_number,
                    "delete_sequence_number": d.data_sequence_number,
                    "min_live_data_sequence_number": min_seq,
                    "dropped_by_next_commit": droppable,
                    "format_version": h.model.table.format_version,
                    "added_after_removal": added_after,
                    "resurrected_rows": [list(r) for r in back]}))
    return out


def _back(a: Analysis, pos: int, snap, deleted_rows: list) -> list:
    """The deleted rows visible again at lineage ``pos``: a row value is back only where the
    table shows more copies of it than the committed operations left (the oracle's expected
    rows of its key). A row equal to one the delete removed can be a new one: an UPDATE that
    set a column to the value it had writes a position delete and a new row with the same
    values, and a compaction that rewrites the old file without the deleted row leaves that
    new row, not the deleted one."""
    visible = Counter(rv.values for rv in a.history.rows(snap.snapshot_id))
    oracle = a.oracle
    expected = oracle.expected[pos] if pos < len(oracle.expected) else None
    if expected is None or oracle.keyfn is None:
        return [r for r in deleted_rows if visible[r]]
    kf = oracle.keyfn
    return [r for r in deleted_rows if visible[r] > expected.get(kf(r), ()).count(r)]
