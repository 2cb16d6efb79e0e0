"""Branches and tags: ``toBranch`` commits and ManageSnapshots ref updates (Iceberg 1.10.2).

Java rules followed (core/src/main/java/org/apache/iceberg/):

* ``SnapshotProducer.targetBranch`` (SnapshotProducer.java:184) refuses a tag when the operation
  is built: "%s is a tag, not a branch. Tags cannot be targets for producing snapshots" (an
  IllegalArgumentException at ``toBranch``; the model ends the operation ``validation_failed``,
  check ``ref_precondition``, at its begin).
* ``SnapshotProducer.apply`` (SnapshotProducer.java:255) takes its parent from
  ``SnapshotUtil.latestSnapshot(base, targetBranch)`` (util/SnapshotUtil.java:527): the branch's
  head, or main's current snapshot when the branch does not exist yet (the commit creates the
  branch there). ``validate(base, parent)`` runs against that parent, so a commit to a branch
  validates its window along the branch's ancestry only (``TableMetadata.latest_snapshot``).
* ``table.manageSnapshots()`` is a ``SnapshotManager`` over a SIMPLE ``BaseTransaction`` built on
  ``ops.refresh()`` when the writer begins (SnapshotManager.java:31); ``createBranch``,
  ``createTag`` and ``fastForwardBranch`` check their preconditions against that metadata at
  once (UpdateSnapshotReferencesOperation.java:54-145: "Ref %s already exists", "Ref does not
  exist: %s", "Ref %s is a tag not a branch", "Cannot fast-forward: %s is not an ancestor of
  %s"; a ``from`` branch that does not exist is created at ``to``).
* Its ``commit()`` is ``BaseTransaction.commitSimpleTransaction`` (BaseTransaction.java:354): it
  commits nothing when nothing changed, and each attempt's ``applyUpdates`` (:461) re-commits the
  ref update when the refreshed metadata differs from the one it began on; that update still
  holds the metadata it was built on, so ``TransactionTableOperations.commit`` (:516) throws
  CommitFailedException("Table metadata refresh is required"), wrapped as
  PendingUpdateFailedException, which ends the retry loop. So a ref update fails
  (``commit_failed``) whenever any commit landed after it began, at its first refresh or after
  a lost swap; it is never re-applied on a new head.
"""

from __future__ import annotations

from . import operations as ops
from .expire import resolve
from .metadata import BRANCH, MAIN_BRANCH, TAG, TableMetadata
from .validation import ValidationFailed

REFRESH_REQUIRED = "Table metadata refresh is required"


def check_target_branch(base: TableMetadata, branch: str | None) -> None:
    """SnapshotProducer.targetBranch's precondition, at the moment the operation is built."""
    if branch is None:
        return
    ref = base.ref(branch)
    if ref is not None and ref[0] != BRANCH:
        raise ValidationFailed("ref_precondition", f"{branch} is a tag, not a branch. Tags "
                                                   f"cannot be targets for producing snapshots")


def _fail(message: str) -> ValidationFailed:
    return ValidationFailed("ref_precondition", message)


def update_refs(base: TableMetadata, op) -> tuple[int | None, tuple]:
    """The (main snapshot id, other refs) after ``op``'s ref update on ``base``; raises
    ValidationFailed with Java's IllegalArgumentException text on a refused update."""
    current, refs = base.current_snapshot_id, base.refs
    if op.kind in (ops.CREATE_BRANCH, ops.CREATE_TAG):
        name, ordinal = op.ref
        if base.ref(name) is not None:
            raise _fail(f"Ref {name} already exists")
        if ordinal:
            ids = resolve(base, (ordinal,))
            target = ids[0] if ids else None
        else:
            target = current
        if target is None or base.snapshot(target) is None:
            # TableMetadata.Builder.setRef: "Cannot set %s to unknown snapshot: %s"; an ordinal
            # naming no snapshot (or no current snapshot) is id -1, as the Java driver passes it
            raise _fail(f"Cannot set {name} to unknown snapshot: "
                        f"{-1 if target is None else target}")
        return current, base.with_ref(name, BRANCH if op.kind == ops.CREATE_BRANCH else TAG,
                                      target)
    if op.kind == ops.FAST_FORWARD:
        source, to = op.ref
        to_ref = base.ref(to)
        if to_ref is None:
            raise _fail(f"Ref does not exist: {to}")
        from_ref = base.ref(source)
        target = to_ref[1]
        if from_ref is not None:
            if from_ref[0] != BRANCH:
                raise _fail(f"Ref {source} is a tag not a branch")
            if from_ref[1] == target:
                return current, refs
            # SnapshotUtil.isAncestorOf(toRef.snapshotId(), branchToUpdate.snapshotId(), ...)
            if all(s.snapshot_id != from_ref[1] for s in base.ancestors(target)):
                raise _fail(f"Cannot fast-forward: {source} is not an ancestor of {to}")
        if source == MAIN_BRANCH:
            return target, refs
        return current, base.with_ref(source, BRANCH, target)
    raise ValueError(f"not a ref update: {op.kind}")


def apply_refs(base: TableMetadata, op, path: str) -> TableMetadata:
    current, refs = update_refs(base, op)
    return TableMetadata(path, base.version + 1, base.format_version, base.last_sequence_number,
                         current, base.snapshots, base.snapshot_log, refs)


def changes_nothing(base: TableMetadata, op) -> bool:
    current, refs = update_refs(base, op)
    return current == base.current_snapshot_id and refs == base.refs

