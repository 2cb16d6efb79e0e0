"""Metadata integrity of the current metadata file:

* the snapshots form one linear chain: the first has no parent, the parent of each is the
  previous one, and the snapshot log lists them in that order (snapshots ExpireSnapshots
  removed stay in the model's log and are read from the metadata file that listed them);
* sequence numbers increase by exactly one along the current lineage, from 1;
* ``last-sequence-number`` equals the current snapshot's sequence number (0 when empty), and
  the catalog's version equals the metadata file's;
* each writer's committed snapshot appears exactly once, with the sequence number the writer
  was told; and every snapshot of the lineage belongs to a commit someone made (setup, or a
  writer whose swap applied). A committed snapshot that is absent is a lost write (lost_write).

With branches (``toBranch``, models/refs.py) the snapshots form a tree, main can be
fast-forwarded, and sequence numbers are table-wide, so the chain, current-is-last and
sequence checks apply only while the table has no branch but main.
"""

from __future__ import annotations

from collections import Counter

from icecheck.models.metadata import BRANCH

from .analysis import Analysis
from .violation import VIOLATION, Violation


def _violation(rollback: bool, kind: str, msg: str, **details) -> Violation:
    return Violation("metadata_integrity", msg, VIOLATION,
                     {"check": kind, **details, "after_rollback": rollback})


def check(a: Analysis) -> list[Violation]:
    h = a.history
    meta = h.meta
    # a snapshot id logged twice: a retry re-committed its own applied snapshot and Java's
    # rollback branch set main back to it (explore --phantom-failures); the chain breaks are
    # that rollback's doing, marked so the expectation table can name the finding
    rollback = len(set(meta.snapshot_log)) != len(meta.snapshot_log)
    out = list(_of_metadata(h, rollback))

    def bad(kind, msg, **details):
        out.append(_violation(rollback, kind, msg, **details))

    ids = [s.snapshot_id for s in meta.snapshots]
    if h.state.catalog.version != meta.version:
        bad("catalog_version", f"The catalog records version {h.state.catalog.version} for "
            f"{meta.path}, whose version is {meta.version}.",
            catalog_version=h.state.catalog.version, metadata_version=meta.version)
    counts = Counter(ids)
    for op in h.ops:
        if op.record is None or op.snapshot_id is None or not op.record.applied:
            continue
        n = counts.get(op.snapshot_id, 0)
        if n > 1:
            bad("once", f"{a.who(op.label)}'s snapshot {op.snapshot_id} appears {n} times in the "
                f"table metadata.", op=op.label, snapshot_id=op.snapshot_id, count=n)
        snap = h.meta.snapshot(op.snapshot_id)
        if n and op.record.sequence_number is not None and snap is not None and \
                snap.sequence_number != op.record.sequence_number:
            bad("told_sequence", f"{op.writer} was told sequence number "
                f"{op.record.sequence_number} but its snapshot {op.snapshot_id} has "
                f"{snap.sequence_number}.", op=op.label, snapshot_id=op.snapshot_id)
    # a snapshot the catalog applied while answering CommitFailedException, whose writer is
    # still retrying (it will re-commit that very snapshot id or clean it up): not yet an orphan
    in_flight = {w.phantom_id for w in h.state.writers if w.active and w.phantom_id is not None}
    # the commits a partial-progress compaction already made while it makes the others: its
    # record (with every snapshot) is written when its last commit ends
    in_flight |= {sid for w in h.state.writers if w.active for sid, _ in w.group_ids}
    for snap, op in zip(h.lineage, h.lineage_ops):
        if op is None and snap.snapshot_id not in in_flight:
            bad("orphan", f"Snapshot {snap.snapshot_id} (seq {snap.sequence_number}, writer "
                f"{snap.writer}) is in the table's history, but no commit of {snap.writer} "
                f"applied it.", snapshot_id=snap.snapshot_id, writer=snap.writer)
    return out


def _of_metadata(h, rollback: bool) -> tuple[Violation, ...]:
    """The checks that read only the metadata file (and the snapshots it no longer lists, read
    from the metadata files that did): cached on the metadata object when it lists every
    snapshot they read (issue 13: thousands of evaluations share a metadata file)."""
    meta = h.meta
    got = meta.__dict__.get("_icecheck_integrity")
    if got is not None:
        return got
    # the lineage is walked from the current snapshot through the metadata, so whether every
    # snapshot read is in it is a function of the metadata alone
    local = all(meta.snapshot(sid) is not None for sid in meta.snapshot_log) and \
        all(meta.snapshot(s.snapshot_id) is s for s in h.lineage)
    out: list[Violation] = []

    def bad(kind, msg, **details):
        out.append(_violation(rollback, kind, msg, **details))

    # The snapshot log lists every snapshot committed, in commit order; ExpireSnapshots removes
    # snapshots from the metadata but not from the model's log, so the chain is checked along
    # the log (an expired snapshot is read from the metadata file that listed it).
    kept = [s.snapshot_id for s in meta.snapshots]
    log = list(meta.snapshot_log)
    logged = [h.snapshot(sid) for sid in log]
    branched = any(kind == BRANCH for _, kind, _ in meta.refs)
    for i, s in enumerate([] if branched else logged):
        expected_parent = log[i - 1] if i else None
        if s is not None and s.parent_id != expected_parent:
            bad("linear", f"Snapshot {s.snapshot_id} (seq {s.sequence_number}, by "
                f"{s.writer}) has parent {s.parent_id}, expected {expected_parent}: the table's "
                f"history is not one linear chain.", snapshot_id=s.snapshot_id,
                parent_id=s.parent_id, expected_parent_id=expected_parent)
    it = iter(log)
    if not all(sid in it for sid in kept):
        bad("snapshot_log", f"The snapshot log {log} does not list the snapshots {kept} in "
            f"commit order.", snapshot_log=log, snapshots=kept)
    snaps = list(meta.snapshots)
    ids = kept
    if snaps and meta.current_snapshot_id != ids[-1] and not branched:
        bad("current", f"The current snapshot {meta.current_snapshot_id} is not the last "
            f"committed one ({ids[-1]}).", current=meta.current_snapshot_id, last=ids[-1])
    for i, s in enumerate([] if branched else h.lineage):
        if s.sequence_number != i + 1:
            bad("sequence", f"Snapshot {s.snapshot_id} (by {s.writer}) has sequence number "
                f"{s.sequence_number}, but it is commit {i + 1} of the lineage: sequence numbers "
                f"must increase by one without gaps.", snapshot_id=s.snapshot_id,
                sequence_number=s.sequence_number, expected=i + 1)
            break
    head_seq = h.lineage[-1].sequence_number if h.lineage else 0
    if meta.last_sequence_number != head_seq and not branched:
        bad("last_sequence_number", f"last-sequence-number is {meta.last_sequence_number} but "
            f"the current snapshot's sequence number is {head_seq}.",
            last_sequence_number=meta.last_sequence_number, current=head_seq)
    got = tuple(out)
    if local:
        object.__setattr__(meta, "_icecheck_integrity", got)
    return got
