"""Readable: the current metadata and every object it references still exist in the object store.

A reader of the table (or of any snapshot still in its metadata, by time travel) opens the
current metadata file, each snapshot's manifest list, each manifest it names, and the data and
delete files of the live (ADDED or EXISTING) entries. Every one of them must still be in the store.
Objects disappear only through deletions the model performs (ExpireSnapshots' file clean-up,
``models/expire.py``, SnapshotProducer.cleanAll after a commit that applied although the
catalog reported it failed, ``models/system.py``, and remove_orphan_files, ``models/orphans.py``); ``metadata_integrity`` cannot see them, since the history analysis reads
deleted objects from the store's archive.

Position deletes' referenced data files are not required: Iceberg never opens a data file
because a delete names it.
"""

from __future__ import annotations

from icecheck.models.expire import missing_objects
from icecheck.models.system import COMMITTED

from .analysis import Analysis
from .violation import VIOLATION, Violation


def check(a: Analysis) -> list[Violation]:
    out = []
    for what, path, sid in _missing(a.history):
        where = f" of snapshot {sid}" if sid is not None else ""
        # the snapshot's own writer was told its commit failed although the catalog applied
        # it (a phantom failure): Java's SnapshotProducer.cleanAll then deletes what that
        # attempt wrote, the current manifest list included (docs/findings.md)
        op = a.history.by_snapshot.get(_writer_snapshot(a, what, path, sid))
        phantom = bool(op is not None and op.record is not None and op.record.applied
                       and op.outcome != COMMITTED)
        orphan = None if phantom else _orphaned(a, path, op)
        out.append(Violation(
            "readable",
            f"The current table metadata references {what} {path}{where}, which no longer exists "
            + (f"(deleted by {a.who(op.label)}'s clean-up: the catalog applied its commit but "
               f"answered that it failed): reading the table fails." if phantom else
               (orphan[0] if orphan else
                "(deleted by snapshot expiry or a commit's clean-up): reading the table fails.")),
            VIOLATION, {"object": what, "path": path, "snapshot_id": sid,
                        "applied_but_told_failed": phantom, **(orphan[1] if orphan else {})}))
    return out


def _orphaned(a: Analysis, path: str, writer_op) -> tuple[str, dict] | None:
    """(why, details) when a remove_orphan_files deleted ``path`` (models/orphans.py): it was
    not in the metadata that procedure loaded, and older than its cut-off. The details name
    that operation and the one whose snapshot references the file (``writer_op``), so the
    verdict names both jobs."""
    from icecheck.models.orphans import reported
    for op in a.history.ops:
        rec = op.record
        if rec is not None and rec.operation is not None \
                and rec.operation.kind == "remove_orphan_files" and path in reported(rec.message):
            details = {"deleted_by": op.label}
            if writer_op is not None and writer_op.writer != "setup":
                details["written_by"] = writer_op.label
            return (f"(deleted by {a.who(op.label)} as an orphan: older than its cut-off and "
                    f"not referenced by the metadata it loaded): reading the table fails.",
                    details)
    return None


def _writer_snapshot(a: Analysis, what: str, path: str, sid: int | None) -> int | None:
    """The snapshot whose commit wrote the missing object: a manifest list's own, a manifest's
    ``added_snapshot_id`` (read from the store's archive, which keeps deleted objects), else
    the snapshot that reads it. A snapshot built on a phantom one reads the manifest the
    phantom attempt wrote, which cleanAll deleted: that clean-up is the phantom writer's, not
    the reader's (issue 45, tests/test_fault_combinations.py)."""
    obj = a.history.state.store.archive().get(path)
    if what == "manifest" and obj is not None:
        return getattr(obj, "added_snapshot_id", sid)
    if what == "manifest list" and obj is not None:
        return getattr(obj, "snapshot_id", sid)
    return sid


def _missing(h) -> list:
    """``missing_objects`` of the history's state, cached on the metadata object by the
    store's deleted paths: an object the metadata reaches is in every store that holds that
    metadata object unless it was deleted (it enters a store with the objects written with
    it, and objects leave a store only by deletion; ``Model._step_key``)."""
    meta, store = h.meta, h.state.store
    cache = meta.__dict__.get("_icecheck_missing")
    if cache is None:
        cache = {}
        object.__setattr__(meta, "_icecheck_missing", cache)
    deleted = store.deleted
    got = cache.get(deleted)
    if got is None:
        if len(cache) >= 16:
            cache.clear()
        got = cache[deleted] = missing_objects(h.state)
    return got
