"""Reading a snapshot: its live files, and its rows with deletes applied.

Read rules (Iceberg spec, "Scan planning"):

* a data or delete file is live in a snapshot when an entry for it is ADDED or EXISTING in one of
  the manifests of the snapshot's manifest list;
* a position delete (or DV) removes row ``pos`` of data file ``f`` when
  ``data_seq(f) <= data_seq(delete)``;
* an equality delete removes a row whose equality columns equal one of its rows when
  ``data_seq(f) < data_seq(delete)`` and the delete is in the data file's partition (an
  unpartitioned equality delete is global).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from .files import EQUALITY_DELETES, DataFile, DeleteFile, Row
from .metadata import DATA_MANIFEST, DELETE_MANIFEST, Manifest, ManifestEntry, Snapshot, TableMetadata


def manifests_of(store: Mapping, snapshot: Snapshot | None, content: str | None = None) -> list[Manifest]:
    if snapshot is None:
        return []
    mlist = store[snapshot.manifest_list]
    out = [store[p] for p in mlist.manifests]
    return [m for m in out if content is None or m.content == content]


def manifest_counts(store: Mapping, snapshot: Snapshot | None) -> list[int]:
    """[data manifests, delete manifests] of ``snapshot``'s manifest list (what Java's
    ``Snapshot.dataManifests(io).size()`` / ``deleteManifests(io).size()`` count), so that
    manifest merging and dropped manifests can be compared with Java."""
    ms = manifests_of(store, snapshot)
    data = sum(1 for m in ms if m.content == DATA_MANIFEST)
    return [data, len(ms) - data]


def live_entries(store: Mapping, snapshot: Snapshot | None, content: str) -> list[ManifestEntry]:
    return [e for m in manifests_of(store, snapshot, content) for e in m.entries if e.is_live]


def live_data_entries(store: Mapping, snapshot: Snapshot | None) -> list[ManifestEntry]:
    return live_entries(store, snapshot, DATA_MANIFEST)


def live_delete_entries(store: Mapping, snapshot: Snapshot | None) -> list[ManifestEntry]:
    return live_entries(store, snapshot, DELETE_MANIFEST)


def live_file_paths(store: Mapping, snapshot: Snapshot | None) -> tuple[list[str], list[str]]:
    data = sorted(e.file.path for e in live_data_entries(store, snapshot))
    deletes = sorted(e.file.path for e in live_delete_entries(store, snapshot))
    return data, deletes


def position_delete_applies(data: ManifestEntry, delete: ManifestEntry, pos: int) -> bool:
    dfile: DeleteFile = delete.file
    return (data.data_sequence_number <= delete.data_sequence_number
            and (data.file.path, pos) in dfile.positions)


def equality_delete_applies(data: ManifestEntry, delete: ManifestEntry, row: Row,
                            column_index: Mapping[str, int]) -> bool:
    dfile: DeleteFile = delete.file
    if data.data_sequence_number >= delete.data_sequence_number:
        return False
    if dfile.partition and dfile.partition != data.file.partition:
        return False
    key = tuple(row[column_index[c]] for c in dfile.equality_columns)
    return key in dfile.equality_rows


@dataclass(frozen=True)
class RowVersion:
    """A row as read: its values and where it lives (file, position, data sequence number)."""

    values: Row
    path: str
    position: int
    data_sequence_number: int


def read_rows(store: Mapping, snapshot: Snapshot | None, column_names: Iterable[str]) -> list[RowVersion]:
    """All rows of ``snapshot`` with deletes applied. Metadata-only data files contribute none."""
    column_index = {name: i for i, name in enumerate(column_names)}
    deletes = live_delete_entries(store, snapshot)
    pos_deletes = [d for d in deletes if d.file.content != EQUALITY_DELETES]
    eq_deletes = [d for d in deletes if d.file.content == EQUALITY_DELETES]
    out: list[RowVersion] = []
    for entry in live_data_entries(store, snapshot):
        dfile: DataFile = entry.file
        if dfile.rows is None:
            continue
        for pos, row in enumerate(dfile.rows):
            if any(position_delete_applies(entry, d, pos) for d in pos_deletes):
                continue
            if any(equality_delete_applies(entry, d, row, column_index) for d in eq_deletes):
                continue
            out.append(RowVersion(row, dfile.path, pos, entry.data_sequence_number))
    return out


def current_snapshot(store: Mapping, metadata_path: str | None) -> Snapshot | None:
    if metadata_path is None:
        return None
    meta: TableMetadata = store[metadata_path]
    return meta.current
