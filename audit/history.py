"""The lineage checks: what the table metadata alone says about its commits.

* **stale_parent** (lost_write): main's snapshot log moved from snapshot Q to a snapshot S that
  does not descend from Q, and S is a new commit (it was never current before and does not come
  from another branch): S was committed on a parent older than the current snapshot, so the
  snapshots between that parent and Q left main's history, and the data files they added are
  not in main unless something re-added them. A violation, proven from metadata (which files
  are missing from main is read from the walk's live sets).
* **main_moved_back** (lost_write): main moved from Q back to one of Q's ancestors (a
  rollback), or to a snapshot another branch made: deliberate, or Java's retry after a commit
  the catalog applied but reported as failed. A finding, possible.
* **sequence_number** (metadata_integrity): a snapshot whose sequence number is not above its
  parent's, two snapshots with one sequence number (two commits from one table version), a
  ``last-sequence-number`` below a snapshot's (violations, proven from metadata); numbers
  missing between a main snapshot and its parent that no snapshot in the metadata holds (a
  finding, possible: expired, or a commit that was lost).
* **unreachable_snapshot** (lost_write): a snapshot no branch or tag reaches, not staged by
  write-audit-publish (``wap.id`` in its summary) and not already named by the checks above. A
  finding, possible: a rollback, a discarded stage, or a lost commit.

Format v1 tables have no sequence numbers; their sequence checks are skipped.
"""

from __future__ import annotations

from collections import defaultdict

from .checks import _summary, describe, short
from .findings import FINDING, POSSIBLE, PROVEN_METADATA, VIOLATION, Finding


class Lineage:
    def __init__(self, metadata):
        self.meta = metadata
        self.snaps = {s.snapshot_id: s for s in metadata.snapshots}
        self.format_version = int(metadata.format_version)

    def parent(self, sid):
        s = self.snaps.get(sid)
        return s.parent_snapshot_id if s is not None else None

    def ancestry(self, sid) -> list[int]:
        """``sid`` and its ancestors still in the metadata, newest first."""
        return list(self.iter_ancestry(sid))

    def iter_ancestry(self, sid):
        seen = set()
        while sid is not None and sid in self.snaps and sid not in seen:
            yield sid
            seen.add(sid)
            sid = self.parent(sid)

    def is_ancestor(self, a, b) -> bool:
        """Whether ``a`` is ``b`` or one of its ancestors."""
        seq_a = self.snaps[a].sequence_number if a in self.snaps else None
        for x in self.iter_ancestry(b):
            if x == a:
                return True
            s = self.snaps[x]
            if self.format_version >= 2 and seq_a is not None and \
                    (s.sequence_number or 0) < seq_a:
                return False
        return False

    def reachable(self) -> set:
        out = set()
        for ref in self.meta.refs.values():
            for x in self.iter_ancestry(ref.snapshot_id):
                if x in out:
                    break
                out.add(x)
        return out

    # ----------------------------------------------------------------------------------------
    def findings(self, head_live: dict, added: dict) -> list[Finding]:
        """All lineage findings; ``head_live`` (ref head -> live paths) and ``added``
        (snapshot -> data files it made live) come from the walk."""
        out: list[Finding] = []
        named: set = set()
        out += self._log(head_live, added, named)
        out += self._sequence()
        out += self._unreachable(head_live, added, named)
        return out

    def _main_head(self):
        ref = self.meta.refs.get("main")
        return ref.snapshot_id if ref is not None else None

    def _log(self, head_live, added, named) -> list[Finding]:
        out = []
        log = [e for e in self.meta.snapshot_log if e.snapshot_id in self.snaps]
        head = self._main_head()
        in_main = set(self.ancestry(head)) if head is not None else set()
        other_refs = {r.snapshot_id for n, r in self.meta.refs.items() if n != "main"}
        seen = set()
        for prev, cur in zip(log, log[1:]):
            seen.add(prev.snapshot_id)
            q, s = prev.snapshot_id, cur.snapshot_id
            if q == s or self.parent(s) == q or self.is_ancestor(q, s):
                continue
            if self.parent(s) is None and self._expired_between(q, s):
                continue          # its parent was expired (PyIceberg clears the parent id)
            s_line = set(self.iter_ancestry(s))
            dropped = []
            for x in self.iter_ancestry(q):      # back to the common ancestor
                if x in s_line:
                    break
                if x not in in_main:
                    dropped.append(x)
            if not dropped:
                continue                  # main came back to them later
            named.update(dropped)
            lost = self._lost_files(dropped, head_live.get(head), added)
            back = self.is_ancestor(s, q)
            snap = self.snaps[s]
            source = _summary(snap).get("source-snapshot-id") or _summary(snap).get(
                "published-wap-id")
            new_commit = not back and s not in seen and s not in other_refs and not source
            names = ", ".join(describe(self.snaps[x]) for x in dropped[:5]) + (
                f" and {len(dropped) - 5} more" if len(dropped) > 5 else "")
            lost_text = (f"; {len(lost)} data file(s) they added are not in main "
                         f"({', '.join(short(p) for p in lost[:5])})" if lost else
                         "; the data files they added are all still in main")
            if new_commit:
                p = self.snaps[s].parent_snapshot_id
                msg = (f"{describe(snap)} was committed on parent {p} while main was at "
                       f"{describe(self.snaps[q])}: a commit from a stale parent (a catalog or "
                       f"writer that skipped the compare-and-swap), so {names} left main's "
                       f"history{lost_text}.")
                out.append(Finding("stale_parent", VIOLATION, PROVEN_METADATA, msg,
                                   snapshots=[s, q] + dropped, files=lost[:20],
                                   details={"parent": p, "previous_current": q,
                                            "dropped": dropped, "lost_data_files": len(lost)}))
            else:
                how = ("back to its ancestor" if back else
                       "to a snapshot that does not descend from it")
                msg = (f"main moved from {describe(self.snaps[q])} {how} {describe(snap)} "
                       f"(a rollback, or a retry after a commit the catalog applied but "
                       f"reported as failed): {names} left main's history{lost_text}.")
                out.append(Finding("main_moved_back", FINDING, POSSIBLE, msg,
                                   snapshots=[s, q] + dropped, files=lost[:20],
                                   details={"previous_current": q, "dropped": dropped,
                                            "lost_data_files": len(lost)}))
        return out

    def _expired_between(self, q, s) -> bool:
        """Whether the commits between log entries ``q`` and ``s`` (which names no parent)
        were expired: PyIceberg 0.12's expiry clears a removed snapshot's child's parent id and
        drops the removed snapshot's log entry (its RemoveSnapshotsUpdate handler,
        pyiceberg/table/update/__init__.py:515-533), so ``s`` follows ``q`` in the log as if
        main had moved to a new line. On v2 and later the sequence numbers between them belong
        to no snapshot the table has; a replace (a new line with no parent) takes the next
        number."""
        if self.format_version < 2:
            return False
        qs, ss = self.snaps[q].sequence_number or 0, self.snaps[s].sequence_number or 0
        used = {x.sequence_number for x in self.snaps.values()}
        return ss > qs + 1 and not any(n in used for n in range(qs + 1, ss))

    def _lost_files(self, dropped, live_main, added) -> list[str]:
        if live_main is None:
            return []
        out = []
        for x in dropped:
            out += [p for p in added.get(x, []) if p not in live_main]
        return sorted(set(out))

    def _sequence(self) -> list[Finding]:
        if self.format_version < 2:
            return []
        out = []
        by_seq = defaultdict(list)
        for s in self.snaps.values():
            by_seq[s.sequence_number].append(s.snapshot_id)
            p = self.snaps.get(s.parent_snapshot_id) if s.parent_snapshot_id else None
            if p is not None and (s.sequence_number or 0) <= (p.sequence_number or 0):
                out.append(Finding(
                    "sequence_number", VIOLATION, PROVEN_METADATA,
                    f"{describe(s)} has a sequence number not above its parent's "
                    f"({describe(p)}): deletes and data are ordered by these numbers, so "
                    f"which rows its deletes apply to is wrong.",
                    snapshots=[s.snapshot_id, p.snapshot_id],
                    details={"check": "not_increasing"}))
        for seq, ids in sorted(by_seq.items()):
            if len(ids) > 1:
                out.append(Finding(
                    "sequence_number", VIOLATION, PROVEN_METADATA,
                    f"{len(ids)} snapshots share sequence number {seq} "
                    f"({', '.join(describe(self.snaps[i]) for i in ids)}): each was committed "
                    f"from the same table version without seeing the other (concurrent writers "
                    f"past the catalog's compare-and-swap).",
                    snapshots=sorted(ids), details={"check": "duplicate", "sequence": seq}))
        top = max((s.sequence_number or 0 for s in self.snaps.values()), default=0)
        last = getattr(self.meta, "last_sequence_number", None)
        if last is not None and last < top:
            out.append(Finding(
                "sequence_number", VIOLATION, PROVEN_METADATA,
                f"The table's last-sequence-number {last} is below snapshot sequence number "
                f"{top}: the next commit reuses a sequence number.",
                snapshots=by_seq[top], details={"check": "last_sequence_number"}))
        head = self._main_head()
        used = set(by_seq)
        for sid in self.iter_ancestry(head) if head is not None else []:
            s = self.snaps[sid]
            p = self.snaps.get(s.parent_snapshot_id) if s.parent_snapshot_id else None
            if p is None:
                continue
            gap = [n for n in range((p.sequence_number or 0) + 1, s.sequence_number or 0)
                   if n not in used]
            if gap:
                out.append(Finding(
                    "sequence_number", FINDING, POSSIBLE,
                    f"Sequence number(s) {_ranges(gap)} between {describe(p)} and its child "
                    f"{describe(s)} belong to no snapshot in the metadata: those commits "
                    f"were expired, or lost.",
                    snapshots=[p.snapshot_id, sid], details={"check": "gap", "missing": gap[:50]}))
        return out

    def _unreachable(self, head_live, added, named) -> list[Finding]:
        reach = self.reachable()
        live_main = head_live.get(self._main_head())
        out = []
        for s in sorted(self.snaps.values(), key=lambda s: (s.sequence_number or 0,
                                                            s.timestamp_ms)):
            sid = s.snapshot_id
            if sid in reach or sid in named or "wap.id" in _summary(s):
                continue
            lost = self._lost_files([sid], live_main, added)
            msg = (f"{describe(s)} is reached by no branch or tag (a rollback, a discarded "
                   f"stage, or a lost commit)"
                   + (f": {len(lost)} data file(s) it added are not in main "
                      f"({', '.join(short(p) for p in lost[:5])})." if lost else "."))
            out.append(Finding("unreachable_snapshot", FINDING, POSSIBLE, msg, snapshots=[sid],
                               files=lost[:20], details={"lost_data_files": len(lost)}))
        return out


def _ranges(ns: list[int]) -> str:
    out, start, prev = [], None, None
    for n in ns:
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = n
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ", ".join(out)
