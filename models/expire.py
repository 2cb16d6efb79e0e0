"""ExpireSnapshots (Java ``RemoveSnapshots``) with explicit snapshot ids, and the files it deletes.

Java rules followed (Iceberg 1.10.2, core/src/main/java/org/apache/iceberg/):

* ``RemoveSnapshots.commit()`` runs ``internalApply()`` inside the commit-retry loop: each attempt
  refreshes the table (``this.base = ops.refresh()``) and removes the requested ids from *that*
  metadata, so an expiry that loses its swap re-applies on the new head (retried only on
  CommitFailedException, like every other commit).
* ``internalApply()`` refuses an id that a retained ref points at: ``Preconditions.checkArgument(
  refsForId == null, "Cannot expire %s. Still referenced by refs: %s", ...)`` (an
  IllegalArgumentException, never retried): the current snapshot (main), a branch head or a
  tagged snapshot (models/refs.py). An id that is not (or no longer) in the table is ignored
  (``TableMetadata.Builder.rewriteSnapshotsInternal``) - unless such ids outnumber the snapshots
  left: that method sizes its list as ``snapshots.size() - idsToRemove.size()`` and throws
  "arraySize cannot be negative but was: -N" (an IllegalArgumentException, never retried).
* With explicit ids Java always cleans up with ``ReachableFileCleanup`` (``cleanExpiredSnapshots``:
  ``incrementalCleanup = !specifiedSnapshotId && ...``), after the commit, comparing the metadata
  the successful attempt started from with a fresh ``ops.refresh()``:
  manifest lists of expired snapshots are deleted; manifests of expired snapshots that no retained
  snapshot lists are deleted; and the files of those manifests' live entries (ADDED or EXISTING,
  ``ManifestFiles.readPaths`` reads ``liveEntries()``; delete manifests too, since the manifest
  projection has no content column and they are read as data manifests) that no live entry of a
  retained manifest names are deleted. Metadata files are never deleted by expiry.

* ``expireOlderThan(t).retainLast(N)`` with ``t`` a tick (the procedure's ``older_than``
  given in ticks, models/clock.py): what ``retained_by_age`` says, by the snapshots'
  timestamps.

* ``expireOlderThan(now).retainLast(N)`` (Spark's ``expire_snapshots`` procedure with
  ``older_than`` now and ``retain_last`` N; ``retain_last``): ``internalApply`` retains every
  retained ref's snapshot (refs have no max age by default: ``computeRetainedRefs``), the last N
  ancestors of every branch (``computeBranchSnapshotsToRetain``: ``minSnapshotsToKeep``), and no
  unreferenced snapshot (all are older than now: ``unreferencedSnapshotsToRetain``); every other
  snapshot is removed. The refs check applies to explicit ids only, so nothing is refused. Spark's
  ExpireSnapshotsSparkAction commits with ``cleanExpiredFiles(false)`` and deletes the files
  reachable before the commit and not after it, which is ``files_to_delete`` below.

What the model does not (yet) do: core's own ``IncrementalFileCleanup`` (chosen by
``RemoveSnapshots`` without explicit ids), and the refresh between the commit and the clean-up
(the model cleans up atomically with its swap, against the metadata it just committed).
"""

from __future__ import annotations

from typing import Mapping

from .metadata import Manifest, ManifestList, TableMetadata
from .validation import ValidationFailed


def resolve(base: TableMetadata, ordinals: tuple[int, ...]) -> tuple[int, ...]:
    """Snapshot ids of the ``ordinals`` (1 = the first snapshot committed) in ``base``'s log.

    The model's snapshot log keeps every committed snapshot in commit order, expired ones too,
    so positions never shift; an ordinal beyond the log names no snapshot and is ignored, as Java
    ignores an unknown id.
    """
    log = base.snapshot_log
    return tuple(log[k - 1] for k in ordinals if 1 <= k <= len(log))


def retained_by_age(base: TableMetadata, retain_last: int, cut: int | None = None,
                    timestamp=None) -> tuple[int, ...]:
    """The ids ``expireOlderThan(t).retainLast(retain_last)`` removes from ``base``.

    ``cut`` None: ``t`` is now, every snapshot is older (the SQL command EXPIRE without
    ``older_than``). Otherwise ``t`` is the tick ``cut`` and ``timestamp(snapshot)`` its
    ``timestamp-ms`` in ticks (models/clock.py), as RemoveSnapshots.internalApply decides
    (core/.../RemoveSnapshots.java, 1.10.2): every ref is retained (no max-ref-age-ms is set:
    ``computeRetainedRefs``, 257-280) with its snapshot; each branch keeps its ancestors while
    it has kept fewer than ``retain_last`` or the ancestor is not older than ``t``, and stops
    at the first that is neither (``computeBranchSnapshotsToRetain``, 299-312); a snapshot no
    branch reaches and no tag names is kept when it is not older than ``t``
    (``unreferencedSnapshotsToRetain``, 314-335)."""
    from .metadata import BRANCH
    refs = [(BRANCH, base.current_snapshot_id)] if base.current_snapshot_id else []
    refs += [(kind, sid) for _, kind, sid in base.refs]

    def old(snapshot) -> bool:
        return cut is None or timestamp(snapshot) < cut

    keep, referenced = set(), set()
    for kind, sid in refs:
        keep.add(sid)
        if kind != BRANCH:
            referenced.add(sid)
            continue
        kept, stopped = 0, False
        for s in base.ancestors(sid):
            referenced.add(s.snapshot_id)
            if not stopped and (kept < retain_last or not old(s)):
                keep.add(s.snapshot_id)
                kept += 1
            else:
                stopped = True
    if cut is not None:
        keep.update(s.snapshot_id for s in base.snapshots
                    if s.snapshot_id not in referenced and not old(s))
    return tuple(s.snapshot_id for s in base.snapshots if s.snapshot_id not in keep)


def expire(base: TableMetadata, ordinals: tuple[int, ...], path: str,
           retain_last: int | None = None, cut: int | None = None,
           timestamp=None) -> TableMetadata:
    """RemoveSnapshots.internalApply on ``base``: the metadata without the expired snapshots
    (``cut``/``timestamp``: an expiry by age, ``retained_by_age``)."""
    if retain_last is not None:
        gone = set(retained_by_age(base, retain_last, cut, timestamp))
        kept = tuple(s for s in base.snapshots if s.snapshot_id not in gone)
        return TableMetadata(path, base.version + 1, base.format_version,
                             base.last_sequence_number, base.current_snapshot_id, kept,
                             base.snapshot_log, base.refs)
    ids = resolve(base, ordinals)
    for sid in ids:
        refs = base.refs_for(sid)
        if refs:
            # RemoveSnapshots.java:199: every retained ref (main, branches, tags), listed in the
            # order of Java's HashMap of refs by snapshot id
            raise ValidationFailed("expire_refs", f"Cannot expire {sid}. Still referenced by "
                                                  f"refs: [{', '.join(java_hash_order(refs))}]")
    gone = set(ids)
    if len(base.snapshots) < len(gone):
        # TableMetadata.Builder.rewriteSnapshotsInternal: Lists.newArrayListWithExpectedSize(
        # snapshots.size() - idsToRemove.size()), and idsToRemove still holds requested ids that
        # are no longer in the table: an IllegalArgumentException when they outnumber the
        # snapshots left (differential mode, seed 3; scenario expiry/expire-gone-ids-outnumber-...)
        raise ValidationFailed("expire_array_size", "arraySize cannot be negative but was: "
                                                    f"{len(base.snapshots) - len(gone)}")
    kept = tuple(s for s in base.snapshots if s.snapshot_id not in gone)
    return TableMetadata(path, base.version + 1, base.format_version, base.last_sequence_number,
                         base.current_snapshot_id, kept, base.snapshot_log, base.refs)


def java_hash_order(names: list[str]) -> list[str]:
    """``names`` in the iteration order of a small Java HashMap<String, ...> (16 buckets): the
    order in which RemoveSnapshots lists "Still referenced by refs: [...]"."""
    def bucket(name: str) -> int:
        h = 0
        for ch in name:
            h = (31 * h + ord(ch)) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & 15
    return sorted(names, key=lambda n: (bucket(n), n))


def _manifests(store: Mapping, snapshots) -> dict[str, Manifest]:
    out: dict[str, Manifest] = {}
    for snap in snapshots:
        mlist: ManifestList = store[snap.manifest_list]
        for path in mlist.manifests:
            out.setdefault(path, store[path])
    return out


def files_to_delete(store: Mapping, before: TableMetadata, after: TableMetadata) -> list[str]:
    """ReachableFileCleanup.cleanFiles(before, after): the paths expiry deletes, sorted."""
    after_ids = {s.snapshot_id for s in after.snapshots}
    expired = [s for s in before.snapshots if s.snapshot_id not in after_ids]
    if not expired:
        return []
    out = {s.manifest_list for s in expired}
    candidates = _manifests(store, expired)
    current = _manifests(store, after.snapshots)
    doomed = [m for path, m in candidates.items() if path not in current]
    if doomed:
        paths = {e.file.path for m in doomed for e in m.entries if e.is_live}
        for m in current.values():
            for e in m.entries:
                if e.is_live:
                    paths.discard(e.file.path)
        out |= paths
        out |= {m.path for m in doomed}
    return sorted(out)


def missing_objects(state) -> list[tuple[str, str, int | None]]:
    """(what, path, snapshot id) of each object the current metadata needs that is gone.

    A reader (or a time-travel query of any snapshot still in the metadata) opens the metadata
    file, each snapshot's manifest list, its manifests, and the files of their live entries.
    Position deletes' referenced data files are not needed: nothing opens a data file because a
    delete names it. Used by the ``readable`` property and the scenario runner."""
    store = state.store
    out: list[tuple[str, str, int | None]] = []
    path = state.catalog.pointer
    if path not in store:
        return [("metadata file", path, None)]
    meta: TableMetadata = store[path]
    seen: set[str] = set()
    for snap in meta.snapshots:
        if snap.manifest_list not in store:
            out.append(("manifest list", snap.manifest_list, snap.snapshot_id))
            continue
        mlist: ManifestList = store[snap.manifest_list]
        for mpath in mlist.manifests:
            if mpath in seen:
                continue
            seen.add(mpath)
            if mpath not in store:
                out.append(("manifest", mpath, snap.snapshot_id))
                continue
            m: Manifest = store[mpath]
            for e in m.entries:
                if e.is_live and e.file.path not in seen:
                    seen.add(e.file.path)
                    if e.file.path not in store:
                        out.append(("data file" if m.content == "data" else "delete file",
                                    e.file.path, snap.snapshot_id))
    return out
