"""Cherry-pick (``table.manageSnapshots().cherrypick(id)``, Java ``CherryPickOperation``): publish a
snapshot that is not on main (write-audit-publish: a commit staged on a branch), on the metadata
each attempt applies to.

Java rules followed (Iceberg 1.10.2, core/src/main/java/org/apache/iceberg/CherryPickOperation.java):

* an unknown id fails: "Cannot cherry-pick unknown snapshot ID: %s" (a ValidationException);
* when the picked snapshot's parent is main's current snapshot, the pick is a fast-forward:
  main is set to the picked snapshot itself, no new snapshot (``apply()``: ``isFastForward``);
* otherwise an ``append`` snapshot is re-applied as a new snapshot on main holding the data files
  it added (``add(addedFile)``), after ``validateNonAncestor``: a picked snapshot that is already
  an ancestor of main fails "Cannot cherrypick snapshot %s: already an ancestor", one an ancestor
  was already picked from (its ``source-snapshot-id``) fails "Cannot cherrypick snapshot %s:
  already picked to create ancestor %s" (CherrypickAncestorCommitException);
* any other snapshot must fast-forward: "Cannot cherry-pick snapshot %s: not append, dynamic
  overwrite, or fast-forward". Picking a ReplacePartitions snapshot (the dynamic-overwrite case,
  with its partition checks) is not modelled: an error naming it, not a silently different model.

The pick goes through ManageSnapshots' transaction, whose retry re-applies the operation on the
refreshed metadata (``BaseTransaction.applyUpdates``), so every decision above is taken again on
each attempt.
"""

from __future__ import annotations

from typing import Mapping

from .metadata import Snapshot, TableMetadata
from .validation import ValidationFailed

FAST_FORWARD = "fast_forward"
REAPPLY = "reapply"


def resolve_pick(base: TableMetadata, ordinal: int) -> Snapshot:
    """The picked snapshot (``ordinal``: its position in commit order), or the unknown-id
    failure."""
    log = base.snapshot_log
    sid = log[ordinal - 1] if 1 <= ordinal <= len(log) else -1
    snap = base.snapshot(sid)
    if snap is None:
        raise ValidationFailed("cherry_pick_unknown", f"Cannot cherry-pick unknown snapshot ID: {sid}")
    return snap


def plan_pick(store: Mapping, base: TableMetadata, ordinal: int):
    """(FAST_FORWARD, picked snapshot) or (REAPPLY, (picked snapshot, its added data files))."""
    picked = resolve_pick(base, ordinal)
    if picked.parent_id == base.current_snapshot_id:
        return FAST_FORWARD, picked
    if picked.operation == "append":
        ancestors = list(base.ancestors(base.current_snapshot_id))
        if any(s.snapshot_id == picked.snapshot_id for s in ancestors):
            raise ValidationFailed("cherry_pick_ancestor", f"Cannot cherrypick snapshot "
                                                           f"{picked.snapshot_id}: already an ancestor")
        for s in ancestors:
            if s.source_snapshot_id == picked.snapshot_id:
                raise ValidationFailed(
                    "cherry_pick_ancestor", f"Cannot cherrypick snapshot {picked.snapshot_id}: "
                                            f"already picked to create ancestor {s.snapshot_id}")
        return REAPPLY, (picked, added_data_files(store, picked))
    if picked.replace_partitions:
        raise NotModelled(f"cherry-picking snapshot {picked.snapshot_id}, a ReplacePartitions "
                          f"commit (a dynamic overwrite with partition checks), is not modelled")
    raise ValidationFailed("cherry_pick_kind", f"Cannot cherry-pick snapshot {picked.snapshot_id}: "
                                               f"not append, dynamic overwrite, or fast-forward")


def added_data_files(store: Mapping, snap: Snapshot) -> tuple:
    """``Snapshot.addedDataFiles``: the data files ADDED by ``snap``, in manifest order."""
    from .metadata import ADDED, DATA_MANIFEST
    out = []
    for mp in store[snap.manifest_list].manifests:
        m = store[mp]
        if m.content != DATA_MANIFEST:
            continue
        out += [e.file for e in m.entries if e.status == ADDED and e.snapshot_id == snap.snapshot_id]
    return tuple(out)


class NotModelled(ValueError):
    """A cherry-pick the model does not follow (see the module docstring)."""
