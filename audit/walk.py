"""Walk a table's snapshots in bounded memory, knowing each one's live files.

The live files of a snapshot are the multiset of live (ADDED or EXISTING) entries of the
manifests its manifest list names: a path counts twice when two live entries name it (the
``add_files`` duplicate). Recomputing that per snapshot reads every manifest of every snapshot
(snapshots x files); instead each snapshot is derived from its parent's:

    live(S) = live(P) - live entries of the manifests P lists and S does not
                      + live entries of the manifests S lists and P does not

which is exact whatever the entries' statuses say (a manifest dropped from a list without its
files being deleted shows up as files leaving the table). Each manifest is thus read when it
enters a lineage and when it leaves it (``MetadataReader`` caches recent ones).

Snapshots are visited depth first from the oldest (a parent before its children, siblings by
sequence number), so a linear history keeps one live set, handed from parent to child; a
parent with several children (branches, or commits from one stale parent) keeps its set until
its last child is visited. A snapshot whose parent is not in the metadata (expired), or whose
parent's set is incomplete (an unreadable manifest or list), is computed from its own list.

Each visited snapshot is handed to ``on_snapshot(snapshot, live, delta)`` of the checks.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from .manifests import DELETED, MetadataReader, Unreadable


@dataclass(slots=True)
class Live:
    """The live files of one snapshot."""
    counts: dict            # path -> number of live entries naming it (data and delete files)
    manifests: dict         # the manifests its list names: path -> ManifestRef
    complete: bool          # every manifest (and the list) could be read

    def copy(self) -> "Live":
        return Live(dict(self.counts), dict(self.manifests), self.complete)


@dataclass
class Delta:
    """What one snapshot changed, relative to its parent."""
    changes: dict = field(default_factory=dict)      # path -> (count before, count after)
    deleted_here: set = field(default_factory=set)   # paths with a DELETED entry of this snapshot
    unreadable: list = field(default_factory=list)   # Unreadable (the list, or manifests)
    from_parent: bool = False                        # derived from the parent's live set
    parent_missing: bool = False                     # its parent is not in the metadata
    manifests_added: int = 0
    manifests_removed: int = 0

    def added(self):
        return [p for p, (b, a) in self.changes.items() if a > b]

    def removed(self):
        return [p for p, (b, a) in self.changes.items() if a == 0 and b > 0]


def order(snapshots) -> tuple[list, dict]:
    """``(roots, children)``: the snapshot forest, siblings by (sequence number, time, id)."""
    by_id = {s.snapshot_id: s for s in snapshots}
    children: dict = defaultdict(list)
    roots = []
    for s in snapshots:
        if s.parent_snapshot_id is not None and s.parent_snapshot_id in by_id:
            children[s.parent_snapshot_id].append(s)
        else:
            roots.append(s)

    def key(s):
        return (s.sequence_number or 0, s.timestamp_ms, s.snapshot_id)

    roots.sort(key=key)
    for v in children.values():
        v.sort(key=key)
    return roots, children


class Walk:
    def __init__(self, snapshots, reader: MetadataReader, on_snapshot, progress=None):
        self.snapshots = list(snapshots)
        self.reader = reader
        self.on_snapshot = on_snapshot
        self.progress = progress          # callable(done, total) or None
        self.max_live_sets = 0            # the most live sets held at once (memory bound)

    def run(self) -> None:
        by_id = {s.snapshot_id for s in self.snapshots}
        roots, children = order(self.snapshots)
        remaining = {sid: len(c) for sid, c in children.items()}
        held: dict[int, Live] = {}
        stack = list(reversed(roots))
        done = 0
        while stack:
            s = stack.pop()
            pid = s.parent_snapshot_id
            base = None
            if pid in held:
                remaining[pid] -= 1
                base = held[pid] if remaining[pid] > 0 else held.pop(pid)
                if remaining[pid] > 0:
                    base = base.copy()
            live, delta = self._advance(s, base)
            delta.parent_missing = pid is not None and pid not in by_id
            self.on_snapshot(s, live, delta)
            kids = children.get(s.snapshot_id)
            if kids and live is not None:
                held[s.snapshot_id] = live
                self.max_live_sets = max(self.max_live_sets, len(held))
            if kids:
                stack.extend(reversed(kids))
            done += 1
            if self.progress:
                self.progress(done, len(self.snapshots))

    def _entries(self, m, delta: Delta, live: Live):
        """A manifest's entries; an unreadable one is recorded and makes the live set
        incomplete (its files are then unknown, not absent)."""
        try:
            return self.reader.entries(m)
        except Unreadable as u:
            delta.unreadable.append(u)
            live.complete = False
            return ()

    @staticmethod
    def _count(counts: dict, changes: dict, p: str, step: int) -> None:
        """One more (or fewer) live entry of path ``p``; ``changes`` keeps its count before
        this snapshot and after."""
        before = changes[p][0] if p in changes else counts.get(p, 0)
        n = max(0, counts.get(p, 0) + step)
        if n:
            counts[p] = n
        else:
            counts.pop(p, None)
        changes[p] = (before, n)

    def _advance(self, s, base: Live | None) -> tuple[Live | None, Delta]:
        delta = Delta()
        try:
            refs = self.reader.manifest_list(s.manifest_list)
        except Unreadable as u:
            delta.unreadable.append(u)
            return None, delta
        paths = {m.path: m for m in refs}
        if base is not None and base.complete:
            live = base
            removed = [m for p, m in base.manifests.items() if p not in paths]
            added = [m for m in refs if m.path not in base.manifests]
            delta.from_parent = True
        else:
            live = Live({}, {}, True)
            removed, added = [], refs
        counts, changes = live.counts, delta.changes
        delta.manifests_added, delta.manifests_removed = len(added), len(removed)
        for m in removed:
            for status, _sid, p in self._entries(m, delta, live):
                if status != DELETED:
                    self._count(counts, changes, p, -1)
        for m in added:
            for status, sid, p in self._entries(m, delta, live):
                if status == DELETED:
                    if sid == s.snapshot_id:
                        delta.deleted_here.add(p)
                    continue
                self._count(counts, changes, p, +1)
        for p in [p for p, (b, a) in changes.items() if a == b]:
            del changes[p]
        live.manifests = paths
        return live, delta

