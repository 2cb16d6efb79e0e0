"""Lost commits: metadata files in the table's folder that its history does not hold.

A catalog without compare-and-swap (or a writer that skips it) lets two commits build on one
table version; the one written last wins and the other's metadata file stays in the folder,
its snapshot in no version of the table. Readers never see that snapshot's rows, and the
writer was told it committed: a lost write, which the current metadata alone cannot show.

The check lists the table's ``metadata/`` folder through its FileIO (PyIceberg's pyarrow or
fsspec FileIO; with another FileIO it is skipped, said in the stats), ignores the files of the
metadata log and those older than the log's oldest entry (history trimmed by
``write.metadata.previous-versions-max``), and reads the rest: a snapshot of such a file that
the table does not have is reported when it added data files no snapshot of the table ever
listed, or removed files that are still live in main (a violation, possible: a commit whose
writer was told it failed and did not retry leaves the same trace; an attempt that was retried
under the same files is not reported).
"""

from __future__ import annotations

import os
import re

from .checks import describe, short
from .findings import POSSIBLE, VIOLATION, Finding
from .manifests import ADDED, DELETED, MetadataReader, Unreadable

_VERSION = re.compile(r"^v?(\d+)[-.]")


def _version(name: str) -> int | None:
    m = _VERSION.match(name)
    return int(m.group(1)) if m else None


def list_metadata_folder(io, folder: str) -> list[str] | None:
    """The file locations in ``folder``, or None when this FileIO cannot list."""
    try:
        from pyiceberg.io.pyarrow import PyArrowFileIO
        if isinstance(io, PyArrowFileIO):
            from pyarrow.fs import FileSelector, FileType
            scheme, netloc, path = io.parse_location(folder, io.properties)
            fs = io.fs_by_scheme(scheme, netloc)
            infos = fs.get_file_info(FileSelector(path, allow_not_found=True))
            return [folder.rstrip("/") + "/" + os.path.basename(i.path) for i in infos
                    if i.type == FileType.File]
    except Exception:  # noqa: BLE001 - a store we cannot list: the check is skipped
        return None
    try:
        from pyiceberg.io.fsspec import FsspecFileIO
        if isinstance(io, FsspecFileIO):
            from urllib.parse import urlparse
            fs = io.get_fs(urlparse(folder).scheme)
            return [folder.rstrip("/") + "/" + os.path.basename(p)
                    for p in fs.ls(folder, detail=False)]
    except Exception:  # noqa: BLE001
        return None
    return None


def lost_commits(table, reader: MetadataReader, main_live, stats: dict) -> list[Finding]:
    meta = table.metadata
    folder = (meta.location or "").rstrip("/") + "/metadata"
    files = list_metadata_folder(table.io, folder)
    stats["metadata_folder_listed"] = files is not None
    if files is None:
        return []
    chain = {os.path.basename(e.metadata_file) for e in meta.metadata_log}
    chain.add(os.path.basename(table.metadata_location))
    versions = [v for v in (_version(n) for n in chain) if v is not None]
    oldest = min(versions) if versions else 0
    known_snaps = {s.snapshot_id for s in meta.snapshots}
    tracked = set(reader.files)
    out: list[Finding] = []
    seen_snaps: set = set()
    for loc in sorted(files):
        name = os.path.basename(loc)
        if ".metadata.json" not in name or name in chain:
            continue
        v = _version(name)
        if v is None or v < oldest:
            continue
        stats["orphan_metadata_files"] = stats.get("orphan_metadata_files", 0) + 1
        try:
            from pyiceberg.serializers import FromInputFile
            other = FromInputFile.table_metadata(table.io.new_input(loc))
        except Exception:  # noqa: BLE001 - an unreadable stray file says nothing
            continue
        for s in other.snapshots:
            sid = s.snapshot_id
            if sid in known_snaps or sid in seen_snaps:
                continue
            seen_snaps.add(sid)
            added, removed = _changes(reader, s)
            lost = sorted(p for p in added if p not in tracked)
            undone = sorted(p for p in removed if main_live is not None and p in main_live)
            if not lost and not undone:
                continue
            parts = []
            if lost:
                parts.append(f"the {len(lost)} data file(s) it added are in no snapshot of the "
                             f"table ({', '.join(short(p) for p in lost[:5])})")
            if undone:
                parts.append(f"{len(undone)} file(s) it removed are still live in main "
                             f"({', '.join(short(p) for p in undone[:5])})")
            msg = (f"Metadata file {name} (version {v}) holds {describe(s)}, which is not in the "
                   f"table's history: {'; '.join(parts)}. Another commit replaced it without "
                   f"compare-and-swap (a lost write), or its writer was told the commit failed "
                   f"and did not retry.")
            out.append(Finding("lost_commit", VIOLATION, POSSIBLE, msg, snapshots=[sid],
                               files=[loc] + lost[:20] + undone[:20],
                               details={"metadata_file": loc, "version": v,
                                        "lost_data_files": len(lost),
                                        "removed_still_live": len(undone),
                                        "parent": s.parent_snapshot_id}))
    return out


def _changes(reader: MetadataReader, s) -> tuple[list[str], list[str]]:
    """The data files snapshot ``s`` added and the files it removed (its own manifests)."""
    try:
        refs = reader.manifest_list(s.manifest_list)
    except Unreadable:
        return [], []
    added, removed = [], []
    for m in refs:
        if m.added_snapshot_id != s.snapshot_id:
            continue
        try:
            entries = reader.entries(m)
        except Unreadable:
            continue
        for status, sid, p in entries:
            if sid != s.snapshot_id:
                continue
            if status == ADDED and reader.files[p].content == 0:
                added.append(p)
            elif status == DELETED:
                removed.append(p)
    return added, removed
