"""Reachability ("sometimes") events: what a run must show it reached, so that a silent property
is evidence, not an artefact of a run that never got anywhere.

``EVENTS`` names and explains every event; ``SITUATIONS`` names, for each property, the events
that make it non-vacuous (the situation the property guards).
"""

from __future__ import annotations

from icecheck.models.commands_spec import DELETE, Command
from icecheck.models.lifecycle import SinkCommit, restore_failed
from icecheck.models.system import (COMMIT_FAILED, COMMIT_UNKNOWN, COMMITTED, CRASHED, NOOP,
                                    VALIDATION_FAILED)

from .analysis import Analysis

_NONE: frozenset = frozenset()

EVENTS: dict[str, str] = {
    "commit": "an operation committed",
    "lost_race": "a cas failed (the metadata pointer had moved) and the writer retried",
    "retry_committed": "an operation committed after at least one retry",
    "validation_conflict": "an operation aborted on a validation conflict",
    "abort": "an operation aborted (validation conflict or retries exhausted)",
    "commit_failed": "an operation gave up after exhausting its retries",
    "noop": "a command changed no row, so nothing was committed",
    "unknown_outcome": "a commit's outcome was unknown to its writer",
    "crash": "a writer crashed mid-commit",
    "concurrent_committed_writes": "two committed operations were concurrent (one committed "
                                   "after the other's base, before it)",
    "commit_from_stale_base": "a committed operation's base was not its parent (it was "
                              "re-applied on a newer head)",
    "shared_base": "two committed writers shared a base snapshot",
    "concurrent_writes_same_key": "two concurrent committed operations wrote the same key",
    "concurrent_inserts_same_key": "two concurrent committed operations inserted the same key",
    "delete_concurrent_with_committed_write": "a DELETE committed while another writer had a "
                                              "concurrent committed write",
    "delete_concurrent_same_key": "a DELETE committed concurrently with a committed write of "
                                  "the same key",
    "live_delete_file": "a live delete file existed",
    "data_file_with_deletes_removed": "a data file with a live delete file was removed",
    "dv_live": "a live deletion vector existed (format v3)",
    "multi_commit_lineage": "the lineage holds at least two writers' commits",
    "rw_edge": "the dependency graph has an anti-dependency (rw) edge",
    "dependency_cycle": "the dependency graph has a cycle",
    "off_lineage_commit": "an acknowledged commit is missing from the current lineage",
    "files_deleted": "snapshot expiry deleted objects from the object store",
    "sink_restart": "a streaming sink failed and was restarted",
    "sink_skipped_committed": "a streaming sink found a batch already committed and skipped it",
    "sink_restore_failed": "a streaming sink could not restart: its checkpoint needed a file "
                           "its committer had deleted",
}

SITUATIONS: dict[str, tuple[str, ...]] = {
    "lost_write": ("concurrent_committed_writes", "lost_race"),
    "undelete": ("delete_concurrent_with_committed_write", "delete_concurrent_same_key"),
    "dangling_deletes": ("live_delete_file", "data_file_with_deletes_removed"),
    "duplicate_keys": ("concurrent_writes_same_key", "concurrent_inserts_same_key"),
    "metadata_integrity": ("multi_commit_lineage", "retry_committed"),
    "consistent_read": ("commit_from_stale_base", "concurrent_writes_same_key"),
    "isolation": ("shared_base", "rw_edge"),
    "readable": ("files_deleted",),
}


def reached(a: Analysis) -> set[str]:
    h = a.history
    ev: set[str] = set()
    for op in h.ops:
        r = op.record
        if r is None:
            continue
        if r.outcome == COMMITTED:
            ev.add("commit")
            if r.attempts > 1:
                ev.add("retry_committed")
        if r.attempts > 1:
            ev.add("lost_race")
        if r.outcome == VALIDATION_FAILED:
            ev |= {"validation_conflict", "abort"}
        if r.outcome == COMMIT_FAILED:
            ev |= {"commit_failed", "abort"}
        if r.outcome == NOOP:
            ev.add("noop")
        if r.outcome == COMMIT_UNKNOWN:
            ev.add("unknown_outcome")
        if r.outcome == CRASHED:
            ev.add("crash")
        if r.outcome == NOOP and isinstance(op.intent, SinkCommit):
            ev.add("sink_skipped_committed")
    for w in h.state.writers:
        if w.attempt > 0:
            ev.add("lost_race")
        if w.sink is not None and w.sink.restarts:
            ev.add("sink_restart")
            if any(restore_failed(r) for r in w.sink.restarts):
                ev.add("sink_restore_failed")
    if h.state.store.deleted:
        ev.add("files_deleted")
    lineage_ids = {s.snapshot_id for s in h.lineage}
    if any(op.acknowledged and op.record is not None and op.snapshot_id not in lineage_ids
           for op in h.ops):
        ev.add("off_lineage_commit")
    return ev | a.shared("lineage_events", _lineage_events)


def _lineage_events(a: Analysis) -> frozenset[str]:
    """The events of the committed history: the lineage, its operations, their effects and
    the dependency graph (shared between evaluations, ``Analysis.shared``)."""
    h = a.history
    ev: set[str] = set()
    ops = [op for op in h.committed_ops if op.record is not None]
    if len(ops) >= 2:
        ev.add("multi_commit_lineage")
    pos_of = {s.snapshot_id: i for i, s in enumerate(h.lineage)}
    effects, writes = a.oracle.effects, a.oracle.writes
    bases: dict = {}
    for op in ops:
        bases.setdefault(op.base_snapshot_id, []).append(op)
        parent = h.lineage[op.position - 1].snapshot_id if op.position else None
        if op.base_snapshot_id != parent:
            ev.add("commit_from_stale_base")
    if any(len(v) > 1 for v in bases.values()):
        ev.add("shared_base")
    for i, x in enumerate(ops):
        for y in ops[i + 1:]:
            # y committed after x; concurrent when y's base does not include x
            yb = pos_of.get(y.base_snapshot_id, -1)
            if yb >= x.position:
                continue
            ev.add("concurrent_committed_writes")
            ex, ey = effects.get(x.label), effects.get(y.label)
            kx = writes.get(x.label) or _NONE     # never modified here
            ky = writes.get(y.label) or _NONE
            same = kx & ky
            if same:
                ev.add("concurrent_writes_same_key")
                if ex and ey and any((k in ex.inserted or k in ex.appends) and
                                     (k in ey.inserted or k in ey.appends) for k in same):
                    ev.add("concurrent_inserts_same_key")
            for d, other, ks in ((x, y, ky), (y, x, kx)):
                if isinstance(d.intent, Command) and d.intent.kind == DELETE and ks:
                    ev.add("delete_concurrent_with_committed_write")
                    if same:
                        ev.add("delete_concurrent_same_key")
    prev_deleted_targets: frozenset = _NONE
    for snap in h.lineage:
        live, deletes, dv, targets = h.file_facts(snap)
        if prev_deleted_targets - live:
            ev.add("data_file_with_deletes_removed")
        if deletes:
            ev.add("live_delete_file")
            if dv:
                ev.add("dv_live")
        prev_deleted_targets = targets
    if a.has_rw:
        ev.add("rw_edge")
    if a.cycles:
        ev.add("dependency_cycle")
    return frozenset(ev)
