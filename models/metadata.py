"""Iceberg's metadata tree: metadata files, snapshots, manifest lists, manifests, entries.

Everything is immutable and addressed by path in the object store (``store.py``), exactly as
in the Iceberg spec: a metadata file lists every snapshot and the snapshot log; a snapshot
points at a manifest list; a manifest list names manifests; a manifest holds entries of one
content type (data or deletes), each with a status relative to the snapshot that wrote the
manifest (``added_snapshot_id``).

Logical-manifest read rule (Java's ManifestReader): an entry is *live* when its status is ADDED
or EXISTING. DELETED entries only mean something to the snapshot that wrote the manifest; when a
later commit rewrites the manifest they are dropped, and the other entries become EXISTING.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from .files import ContentFile, Pairs

ADDED = "ADDED"
EXISTING = "EXISTING"
DELETED = "DELETED"

# Snapshot operation names, as in org.apache.iceberg.DataOperations.
APPEND = "append"
REPLACE = "replace"
OVERWRITE = "overwrite"
DELETE = "delete"

MAIN_BRANCH = "main"   # SnapshotRef.MAIN_BRANCH: the current snapshot, kept in current_snapshot_id
BRANCH = "branch"
TAG = "tag"

DATA_MANIFEST = "data"
DELETE_MANIFEST = "deletes"


@dataclass(frozen=True)
class ManifestEntry:
    status: str
    snapshot_id: int
    data_sequence_number: int
    file_sequence_number: int
    file: ContentFile

    @property
    def is_live(self) -> bool:
        return self.status != DELETED


@dataclass(frozen=True)
class Manifest:
    path: str
    content: str
    added_snapshot_id: int
    sequence_number: int
    entries: tuple[ManifestEntry, ...]

    def live_entries(self) -> tuple[ManifestEntry, ...]:
        return tuple(e for e in self.entries if e.is_live)

    @property
    def has_added_or_existing(self) -> bool:
        return any(e.is_live for e in self.entries)


@dataclass(frozen=True)
class ManifestList:
    path: str
    snapshot_id: int
    manifests: tuple[str, ...]


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: int
    parent_id: int | None
    sequence_number: int
    operation: str
    manifest_list: str
    summary: Pairs = ()
    writer: str = ""
    # summary source-snapshot-id: the snapshot a cherry-pick re-applied (models/cherrypick.py)
    source_snapshot_id: int | None = field(default=None, metadata={"digest_omit_default": True})
    # summary replace-partitions=true: committed by ReplacePartitions
    replace_partitions: bool = field(default=False, metadata={"digest_omit_default": True})

    def summary_dict(self) -> dict:
        return dict(self.summary)


@dataclass(frozen=True)
class TableMetadata:
    """One metadata file: the whole table state at one version."""

    path: str
    version: int
    format_version: int
    last_sequence_number: int
    current_snapshot_id: int | None
    snapshots: tuple[Snapshot, ...]
    snapshot_log: tuple[int, ...]
    # refs other than main, sorted by name: (name, BRANCH | TAG, snapshot id). ``main`` is
    # ``current_snapshot_id``, as Java's TableMetadata keeps it. Left out of digests while empty,
    # so traces recorded before branches existed keep their digests.
    refs: tuple[tuple[str, str, int], ...] = field(default=(),
                                                   metadata={"digest_omit_default": True})

    def ref(self, name: str) -> tuple[str, int] | None:
        """(kind, snapshot id) of ref ``name`` (Java ``TableMetadata.ref``), None if absent."""
        if name == MAIN_BRANCH:
            return (BRANCH, self.current_snapshot_id) if self.current_snapshot_id else None
        for n, kind, sid in self.refs:
            if n == name:
                return kind, sid
        return None

    def with_ref(self, name: str, kind: str, snapshot_id: int) -> tuple:
        """The refs with ``name`` set (not main)."""
        return tuple(sorted([r for r in self.refs if r[0] != name] + [(name, kind, snapshot_id)]))

    def latest_snapshot(self, branch: str | None) -> "Snapshot | None":
        """Java ``SnapshotUtil.latestSnapshot(metadata, branch)`` (util/SnapshotUtil.java:527):
        main (or no branch) is the current snapshot, and so is a branch that does not exist yet
        (the commit then creates it from main's head)."""
        if branch is None or branch == MAIN_BRANCH:
            return self.current
        ref = self.ref(branch)
        if ref is None:
            return self.current
        return self.snapshot(ref[1])

    def refs_for(self, snapshot_id: int) -> list[str]:
        """Names of the refs pointing at ``snapshot_id`` (main first, then by name)."""
        out = [MAIN_BRANCH] if snapshot_id == self.current_snapshot_id else []
        return out + [n for n, _, sid in self.refs if sid == snapshot_id]

    def snapshot(self, snapshot_id: int | None) -> Snapshot | None:
        if snapshot_id is None:
            return None
        return self._by_id.get(snapshot_id)

    @cached_property
    def _by_id(self) -> dict[int, Snapshot]:
        # cached on the instance (not a field: equality, hashing and digests are unchanged);
        # the first snapshot of an id wins, as the linear search it replaces did
        out: dict[int, Snapshot] = {}
        for snap in self.snapshots:
            out.setdefault(snap.snapshot_id, snap)
        return out

    @property
    def current(self) -> Snapshot | None:
        return self.snapshot(self.current_snapshot_id)

    def ancestors(self, snapshot_id: int | None):
        """Snapshots from ``snapshot_id`` back along parent pointers (Java SnapshotUtil.ancestorsOf)."""
        snap = self.snapshot(snapshot_id)
        while snap is not None:
            yield snap
            snap = self.snapshot(snap.parent_id)


def snapshot_files_key(snapshot: Snapshot, get, content) -> tuple:
    """The content of what a reader of ``snapshot`` opens through it: its manifest list and
    each manifest it names (their entries carry the files, rows included), by ``content``
    (a key of a model object), in order; ``get`` finds an object by path (None for one it does
    not find, if it returns None rather than raising). The key the checker's memos use for a
    snapshot's rows (``History.rows_key``) and a step's reach (``Model._reach_key``)."""
    mlist = get(snapshot.manifest_list)
    if mlist is None:
        return (None,)
    out = [content(mlist)]
    for path in mlist.manifests:
        m = get(path)
        out.append(None if m is None else content(m))
    return tuple(out)


def attempt_prefix(snapshot_id: int, tag: str = "") -> str:
    """What the manifest list and new manifests of one commit attempt of snapshot
    ``snapshot_id`` are named after: ``snap-<id>-<tag>``, the tag telling the attempt from the
    snapshot's other attempts (``Model._attempt_names``: the version of the metadata file it
    writes, ``v3``); ``snap-<id>`` without one (the set-up commits). A snapshot keeps its id
    across its attempts (Java's SnapshotProducer caches ``snapshotId()``; PyIceberg's
    ``_refresh_for_retry`` keeps ``_snapshot_id``), and each attempt writes new files: Java
    names the manifest list ``snap-<id>-<attempt>-<commit uuid>.avro``
    (SnapshotProducer.manifestListPath)."""
    return f"snap-{snapshot_id}-{tag}" if tag else f"snap-{snapshot_id}"


def snapshots_by_id(objects) -> dict[int, Snapshot]:
    """Every snapshot any metadata file of ``objects`` (a store's objects, in the order they
    were written) lists, by id, for the lookups of a snapshot the current metadata no longer
    lists (expired, or a commit the lineage lost). Where several files list one id, the one
    written last wins: a snapshot keeps its id across its commit attempts (``attempt_prefix``),
    so the metadata file of an attempt that lost its race lists another version of it
    (another parent, sequence number and manifest list). Every attempt of a snapshot is
    written before the one that commits it, and every file written after that copies the
    committed version, so the last copy is the committed one when it committed at all."""
    index: dict[int, Snapshot] = {}
    for obj in objects.values():
        if isinstance(obj, TableMetadata):
            for s in obj.snapshots:
                index[s.snapshot_id] = s
    return index
