"""A logical clock: time for maintenance that depends on it (issue 43, item 2).

Spark's ``remove_orphan_files(older_than => ts)`` deletes files the table does not reference
whose modification time is before ``ts``, and ``expire_snapshots(older_than => ts)`` expires
snapshots whose ``timestamp-ms`` is before ``ts``. Real clocks are milliseconds; the model has
ticks: ``ModelConfig.ticks`` bounds how many times the clock may advance, and the scheduler
interleaves each tick (the action ``clock.tick``) with every writer's steps, so a search
explores every way the jobs' steps fall into the ticks. With ``ticks: 0`` (the default) the
clock never moves and every search is what it was.

Where "now" lives: in the object store (``ObjectStore.now``), the filesystem's clock. Every
object records the tick it was written at (``ObjectStore.mtime``: Hadoop's
``FileStatus.getModificationTime``, which DeleteOrphanFilesSparkAction.listedFileDS compares,
spark/v3.5/.../actions/DeleteOrphanFilesSparkAction.java:326, 1.10.2). A snapshot's
``timestamp-ms`` is the tick of its manifest list: SnapshotProducer.apply() writes the manifest
list and builds the snapshot with ``System.currentTimeMillis()`` in the same call
(core/.../SnapshotProducer.java:253-319: the ManifestListWriter at 265, the BaseSnapshot with
``System.currentTimeMillis()`` at 315-319), the model's ``write_metadata`` step. So the clock is
part of the state (compared, hashed, fingerprinted with the store), nothing is read from a
real clock, and the model stays deterministic.

What a tick stands for: hours or days, the scale of ``older_than`` (Spark's
remove_orphan_files refuses less than 24 hours: RemoveOrphanFilesProcedure.validateInterval).
A job's tasks may write its files long before its commit; but one commit attempt
(SnapshotProducer.commit: ``apply()`` writes the manifests and the manifest list, then
``ops.commit()`` writes the metadata file and swaps, SnapshotProducer.java:424-440, and
BaseMetastoreTableOperations.commit) runs back to back, in seconds. So the clock never
advances while a writer is inside an attempt (from its refresh to its swap: ``Model.
action_parts``); it does between a job's files and its commit, and between the attempts of a
commit that retries.

A procedure reads the clock once, when it is called: Spark computes ``older_than`` before
calling the action, and ``RemoveSnapshots`` takes ``now`` in its constructor
(core/.../RemoveSnapshots.java:94). The model records that tick in the operation when the
writer begins (``at_begin``: ``Operation.began_at``); the cut-off is ``began_at - older_than``,
and "older than the cut-off" is strictly before it, as both Java comparisons are
(``getModificationTime() < olderThanTimestamp``; ``timestampMillis() >= expireOlderThan``
retains). So ``older_than: N`` reads: written more than N ticks before the procedure started.

The step memo (``Model._step_key``) keys a step on what it reads: every step that writes an
object stamps it with ``now``, so ``now`` is in every key once the clock has moved, and the
steps that compare times add what they compare (``memo_key``).
"""

from __future__ import annotations

from typing import Any

from .values import replace

#: the clock's action: ``Action("clock", "tick")``, labelled ``clock.tick`` in traces
CLOCK = "clock"
TICK = "tick"


def now(store) -> int:
    """The current tick."""
    return store.now


def advance(store):
    """The store one tick later."""
    return store.tick()


def snapshot_timestamp(store, snapshot) -> int:
    """A snapshot's ``timestamp-ms``, in ticks: the tick its manifest list was written at
    (read from the store's record of it, which a deleted object keeps)."""
    return store.mtime(snapshot.manifest_list)


def at_begin(operation, store):
    """The operation as the writer begins it: a procedure that compares times records the
    tick it was called at (``Operation.began_at``); any other is returned as it is."""
    if operation.older_than is None or operation.began_at is not None:
        return operation
    return replace(operation, began_at=store.now)


def cutoff(operation) -> int | None:
    """The tick before which an object or snapshot is old enough for the operation
    (``older_than`` ticks before it began), or None when it takes no ``older_than``."""
    if operation is None or operation.older_than is None or operation.began_at is None:
        return None
    return operation.began_at - operation.older_than


def is_older(tick: int, cut: int) -> bool:
    """Java's ``t < olderThanTimestamp``: strictly before the cut-off."""
    return tick < cut


def expiry(operation, store) -> dict:
    """The keyword arguments of ``expire.expire`` for an expiry by age (its cut-off and the
    snapshots' timestamps in ``store``); {} for any other (count-based EXPIRE, explicit
    ids: unchanged)."""
    cut = cutoff(operation)
    if cut is None:
        return {}
    return {"cut": cut, "timestamp": lambda snapshot: snapshot_timestamp(store, snapshot)}


def memo_key(store, w, action, metas: tuple) -> tuple:
    """What a step reads of the clock besides ``now`` (``Model._step_key`` adds both once the
    clock has moved): the listing of a ``remove_orphan_files`` that deletes at this step (the
    paths old enough to be deleted, ``orphans.listing``), and the snapshot timestamps an
    expiry by age compares (those of every metadata file the step reads, ``metas``)."""
    op = w.whole or w.operation
    if op is None or op.older_than is None:
        return ()
    from .operations import EXPIRE_SNAPSHOTS, REMOVE_ORPHAN_FILES
    if op.kind == REMOVE_ORPHAN_FILES:
        from .orphans import listing
        return (listing(store, cutoff(op)),)
    if op.kind == EXPIRE_SNAPSHOTS:
        return tuple(None if m is None else
                     tuple(snapshot_timestamp(store, s) for s in m.snapshots) for m in metas)
    return ()


def tick_digest(store, encode: Any) -> tuple:
    """The clock's part of a store, in a canonical order: (now, ((path, tick), ...)) with each
    path through ``encode`` (a fingerprinter renames writers' tokens in paths); None while the
    clock stands at 0 (nothing of it is kept then: ``ObjectStore``)."""
    if not store.now:
        return None
    return store.now, tuple(sorted((encode(p), t) for p, t in store.mtimes.items()))
