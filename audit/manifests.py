"""Reading a table's manifest lists and manifests, once each, into small records.

The audit walks every snapshot, and consecutive snapshots share most of their manifests; it
reads a manifest when it enters a snapshot's list and again when it leaves it (``walk.py``), so
a manifest is read at most twice per branch it lives on, whatever the number of snapshots that
list it. What is kept of a manifest is a tuple of ``(status, snapshot_id, path)`` per entry,
in a cache bounded by its number of entries (``cache_entries``); what is kept of a file is one
``FileInfo`` per distinct path, shared by every entry and snapshot that names it.

Entries are read with PyIceberg's Avro reader and the format-v3 read schema, which is a
superset of v1 and v2 (absent fields read as null): PyIceberg's own ``fetch_manifest_entry``
reads the v2 schema and so drops a deletion vector's ``referenced_data_file``. Sequence numbers
and snapshot ids are inherited from the manifest as the spec says (an ADDED entry's null
sequence number is the manifest's).
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from dataclasses import dataclass, field

DATA, POSITION_DELETES, EQUALITY_DELETES = 0, 1, 2
EXISTING, ADDED, DELETED = 0, 1, 2
#: the reserved field id of a position delete file's ``file_path`` column (its bounds name the
#: one data file a file-scoped position delete refers to)
POS_FILE_PATH = 2147483546


@dataclass(slots=True)
class FileInfo:
    """A data or delete file as its first manifest entry describes it."""
    path: str
    content: int                 # DATA, POSITION_DELETES (files and DVs), EQUALITY_DELETES
    fmt: str                     # PARQUET, AVRO, ORC, PUFFIN
    record_count: int
    size: int
    seq: int | None              # data sequence number
    spec_id: int
    partition: tuple
    referenced: str | None       # the one data file a position delete / DV refers to
    equality_ids: tuple | None
    manifest: str                # the manifest that listed it first
    content_offset: int | None = None
    content_size: int | None = None
    added_by: list = field(default_factory=list)     # snapshots that made an entry of it live
    removed_by: list = field(default_factory=list)   # snapshots after which none was live
    exists: bool | None = None   # checked through the FileIO, when asked

    @property
    def kind(self) -> str:
        if self.content == DATA:
            return "data file"
        if self.content == EQUALITY_DELETES:
            return "equality delete file"
        return "deletion vector" if self.fmt == "PUFFIN" else "position delete file"


@dataclass(frozen=True, slots=True)
class ManifestRef:
    """One line of a manifest list."""
    path: str
    content: int                 # 0 data manifest, 1 delete manifest
    added_snapshot_id: int | None
    sequence_number: int
    spec_id: int


class Unreadable(Exception):
    """A manifest list or manifest that is missing or cannot be parsed."""

    def __init__(self, path: str, missing: bool, reason: str):
        super().__init__(reason)
        self.path, self.missing, self.reason = path, missing, reason


class MetadataReader:
    """Reads manifest lists and manifests through the table's FileIO, counting its reads."""

    def __init__(self, io, cache_entries: int = 500_000):
        self.io = io
        self.files: dict[str, FileInfo] = {}
        self.cache_entries = cache_entries
        self._cache: OrderedDict[str, tuple] = OrderedDict()
        self._cached = 0
        self._unreadable: dict[str, Unreadable] = {}
        self._exists: dict[str, bool] = {}
        self.stats: Counter = Counter()
        self._schema = None

    # -- existence -------------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        """Whether ``path`` exists, asked once per path (the table's FileIO)."""
        hit = self._exists.get(path)
        if hit is None:
            self.stats["existence_checks"] += 1
            try:
                hit = bool(self.io.new_input(path).exists())
            except Exception:  # noqa: BLE001 - a store that cannot answer: treat as absent
                hit = False
            self._exists[path] = hit
        return hit

    def _fail(self, path: str, e: BaseException) -> Unreadable:
        if path not in self._unreadable:
            missing = not self.exists(path)
            reason = "does not exist" if missing else \
                f"cannot be read ({' '.join(str(e).split())[:200] or type(e).__name__})"
            self._unreadable[path] = Unreadable(path, missing, reason)
        return self._unreadable[path]

    # -- manifest lists --------------------------------------------------------------------
    def manifest_list(self, path: str) -> list[ManifestRef]:
        """The manifests a snapshot's manifest list names (raises ``Unreadable``)."""
        if path in self._unreadable:
            raise self._unreadable[path]
        from pyiceberg.manifest import read_manifest_list

        self.stats["manifest_lists"] += 1
        try:
            refs = [ManifestRef(m.manifest_path, int(m.content), m.added_snapshot_id,
                                int(m.sequence_number or 0), int(m.partition_spec_id or 0))
                    for m in read_manifest_list(self.io.new_input(path))]
        except Exception as e:  # noqa: BLE001 - reported as a finding
            raise self._fail(path, e) from None
        return refs

    # -- manifests -------------------------------------------------------------------------
    def entries(self, m: ManifestRef) -> tuple:
        """``((status, snapshot_id, path), ...)`` of the manifest (raises ``Unreadable``)."""
        hit = self._cache.get(m.path)
        if hit is not None:
            self._cache.move_to_end(m.path)
            self.stats["manifest_cache_hits"] += 1
            return hit
        if m.path in self._unreadable:
            raise self._unreadable[m.path]
        try:
            out = tuple(self._read(m))
        except Exception as e:  # noqa: BLE001 - reported as a finding
            raise self._fail(m.path, e) from None
        self.stats["manifests_read"] += 1
        self.stats["entries_read"] += len(out)
        self._cache[m.path] = out
        self._cached += len(out)
        while self._cached > self.cache_entries and len(self._cache) > 1:
            _, old = self._cache.popitem(last=False)
            self._cached -= len(old)
        return out

    def _read(self, m: ManifestRef):
        from pyiceberg.avro.file import AvroFile
        from pyiceberg.manifest import (MANIFEST_ENTRY_SCHEMAS, DataFile, DataFileContent,
                                        FileFormat, ManifestEntry, ManifestEntryStatus)

        schema = MANIFEST_ENTRY_SCHEMAS[max(MANIFEST_ENTRY_SCHEMAS)]
        if self._schema is None:
            from pyiceberg.manifest import DATA_FILE_TYPE
            names = [f.name for f in DATA_FILE_TYPE[max(DATA_FILE_TYPE)].fields]
            self._schema = {n: i for i, n in enumerate(names)}
        pos = self._schema
        with AvroFile[ManifestEntry](
                self.io.new_input(m.path), schema,
                read_types={-1: ManifestEntry, 2: DataFile},
                read_enums={0: ManifestEntryStatus, 101: FileFormat, 134: DataFileContent}) as r:
            for e in r:
                status, sid, seq, df = int(e[0]), e[1], e[2], e[4]
                if sid is None:
                    sid = m.added_snapshot_id
                if seq is None and (m.sequence_number == 0 or status == ADDED):
                    seq = m.sequence_number
                path = df[pos["file_path"]]
                info = self.files.get(path)
                if info is None:
                    info = self._info(df, pos, seq, m)
                    self.files[path] = info
                elif info.seq is None and seq is not None:
                    info.seq = seq
                yield status, sid, info.path

    @staticmethod
    def _info(df, pos, seq, m: ManifestRef) -> FileInfo:
        content = int(df[pos["content"]] or 0)
        fmt = df[pos["file_format"]]
        fmt = getattr(fmt, "name", str(fmt)).upper()
        referenced = df[pos["referenced_data_file"]] if "referenced_data_file" in pos else None
        if content == POSITION_DELETES and referenced is None:
            lo = (df[pos["lower_bounds"]] or {}).get(POS_FILE_PATH)
            hi = (df[pos["upper_bounds"]] or {}).get(POS_FILE_PATH)
            if lo is not None and lo == hi:
                referenced = bytes(lo).decode("utf-8", "replace")
        part = df[pos["partition"]]
        partition = tuple(part[i] for i in range(len(part))) if part is not None else ()
        eq = df[pos["equality_ids"]]
        return FileInfo(
            path=df[pos["file_path"]], content=content, fmt=fmt,
            record_count=int(df[pos["record_count"]] or 0),
            size=int(df[pos["file_size_in_bytes"]] or 0), seq=seq, spec_id=m.spec_id,
            partition=partition, referenced=referenced,
            equality_ids=tuple(eq) if eq else None, manifest=m.path,
            content_offset=df[pos["content_offset"]] if "content_offset" in pos else None,
            content_size=df[pos["content_size_in_bytes"]] if "content_size_in_bytes" in pos
            else None)

    def unreadable(self) -> dict[str, Unreadable]:
        return dict(self._unreadable)
