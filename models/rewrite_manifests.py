"""Manifest rewrites: Spark's ``rewrite_manifests`` procedure and the RewriteManifests commit it
makes (Iceberg 1.10.2).

``RewriteManifestsSparkAction`` (spark/v3.5, ``doExecute``) plans on the table's current
snapshot, once, before it commits: for data manifests and then delete manifests, it takes every
manifest of that content (one partition spec here); with one manifest and one target manifest
(``targetNumManifests``: the manifests' bytes over ``commit.manifest.target-size-bytes``, 1 for
small tables) there is nothing to do; otherwise it writes the live entries (``status < 2``) of
all of them into new manifests as EXISTING entries, keeping their snapshot ids and data and file
sequence numbers. Nothing rewritten: no commit. Then it commits
``table.rewriteManifests().deleteManifest(m)...addManifest(new)`` (``replaceManifests``).

``BaseRewriteManifests.apply(base, snapshot)`` runs on every attempt's refreshed metadata:
``validateDeletedManifests`` throws ValidationException "Deleted manifest %s could not be found
in the latest snapshot %d" when a manifest it deletes is no longer listed by the current
snapshot (a concurrent commit rewrote or dropped it); otherwise the new snapshot (operation
``replace``) lists the new manifests first, then every current manifest it did not delete
(``keepActiveManifests``: a concurrent append's manifest is kept). No row changes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from .metadata import (DATA_MANIFEST, DELETE_MANIFEST, EXISTING, REPLACE, Manifest,
                       ManifestList, Snapshot, TableMetadata, attempt_prefix)
from .reads import manifests_of
from .validation import ValidationFailed


def plan_rewrite(store: Mapping, snapshot: Snapshot | None) -> tuple:
    """What the action rewrites at ``snapshot``: ``((content, deleted manifest paths, entries),
    ...)``, data first; () when there is nothing to rewrite."""
    groups = []
    for content in (DATA_MANIFEST, DELETE_MANIFEST):
        manifests = manifests_of(store, snapshot, content) if snapshot is not None else []
        if len(manifests) < 2:
            continue
        entries = tuple(replace(e, status=EXISTING) for m in manifests for e in m.entries
                        if e.is_live)
        # writePartitionedManifests sorts within the new manifest by partition
        entries = tuple(sorted(entries, key=lambda e: (repr(e.file.partition), e.file.path)))
        groups.append((content, tuple(m.path for m in manifests), entries))
    return tuple(groups)


def apply_rewrite(store: Mapping, base: TableMetadata, groups: tuple, *, snapshot_id: int,
                  writer_name: str, metadata_path: str, tag: str = ""
                  ) -> tuple[TableMetadata, dict]:
    """BaseRewriteManifests.apply on ``base``: the metadata and the new objects (manifests,
    manifest list, metadata file). Raises ValidationFailed as validateDeletedManifests does."""
    current = base.current
    listed = store[current.manifest_list].manifests if current is not None else ()
    deleted = [p for _, paths, _ in groups for p in paths]
    for path in deleted:
        if path not in listed:
            raise ValidationFailed(
                "deleted_manifest", f"Deleted manifest {path} could not be found in the latest "
                                    f"snapshot {current.snapshot_id if current else None}")
    seq = base.last_sequence_number + 1
    prefix = attempt_prefix(snapshot_id, tag)   # the attempt's files: new names each time
    objects: dict = {}
    new_paths = []
    for i, (content, _, entries) in enumerate(groups):
        if not entries:
            continue
        m = Manifest(f"{prefix}-rm{i}.avro", content, snapshot_id, seq, entries)
        objects[m.path] = m
        new_paths.append(m.path)
    gone = set(deleted)
    kept = [p for p in listed if p not in gone]
    mlist = ManifestList(f"{prefix}.avro", snapshot_id, tuple(new_paths + kept))
    objects[mlist.path] = mlist
    summary = (("added-data-files", 0), ("added-delete-files", 0), ("deleted-data-files", 0),
               ("removed-delete-files", 0))
    snap = Snapshot(snapshot_id, current.snapshot_id if current else None, seq, REPLACE,
                    mlist.path, summary, writer_name)
    meta = TableMetadata(metadata_path, base.version + 1, base.format_version, seq, snapshot_id,
                         base.snapshots + (snap,), base.snapshot_log + (snapshot_id,), base.refs)
    objects[metadata_path] = meta
    return meta, objects
