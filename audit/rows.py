"""Reading rows from a table's data and delete files, within a budget of files.

A finding is proven from data files when the rows it names were read: the positions a position
delete or deletion vector holds, the rows at those positions in its data file, the keys an
equality delete holds and the live rows that match them. Reading is optional
(``--no-read-data``) and bounded (``max_files`` files per audit; each file is read once and its
rows kept only as long as a question needs them): past the budget a finding keeps the
certainty its metadata gives it.

Files are opened through the table's FileIO; Parquet with pyarrow, position deletes and
deletion vectors (Puffin) through PyIceberg's own delete reader
(``pyiceberg.io.pyarrow._read_deletes``, the function its scans use).
"""

from __future__ import annotations

from types import SimpleNamespace

from .manifests import FileInfo

SHOWN = 10          # rows listed per finding


class RowReader:
    def __init__(self, io, max_files: int = 100):
        self.io = io
        self.max_files = max_files
        self.files_read = 0
        self.failed: dict[str, str] = {}
        self._tables: dict[str, object] = {}
        self._deletes: dict[str, dict] = {}

    def _budget(self, path: str) -> bool:
        if path in self.failed:
            return False
        if self.files_read >= self.max_files:
            return False
        self.files_read += 1
        return True

    def table(self, path: str):
        """The file's rows as a pyarrow Table, or None (budget, missing, unreadable)."""
        if path in self._tables:
            return self._tables[path]
        if not self._budget(path):
            return None
        try:
            import pyarrow.parquet as pq
            with self.io.new_input(path).open() as f:
                t = pq.read_table(f)
        except Exception as e:  # noqa: BLE001 - a file that cannot be read keeps metadata's word
            self.failed[path] = " ".join(str(e).split())[:200] or type(e).__name__
            return None
        self._tables[path] = t
        return t

    def positions(self, delete: FileInfo, data_path: str) -> list[int] | None:
        """The row positions of ``data_path`` that the position delete / DV deletes."""
        got = self._deletes.get(delete.path)
        if got is None:
            if not self._budget(delete.path):
                return None
            try:
                from pyiceberg.io.pyarrow import _read_deletes
                from pyiceberg.manifest import FileFormat
                got = _read_deletes(self.io, SimpleNamespace(
                    file_path=delete.path, file_format=FileFormat[delete.fmt]))
            except Exception as e:  # noqa: BLE001
                self.failed[delete.path] = " ".join(str(e).split())[:200] or type(e).__name__
                return None
            self._deletes[delete.path] = got
        col = got.get(data_path)
        return sorted(int(x) for x in col.to_pylist()) if col is not None else []

    def rows_at(self, data_path: str, positions: list[int]) -> list[dict] | None:
        t = self.table(data_path)
        if t is None:
            return None
        rows = t.to_pylist()
        return [rows[p] for p in positions if 0 <= p < len(rows)]

    def rows(self, data_path: str) -> list[dict] | None:
        t = self.table(data_path)
        return None if t is None else t.to_pylist()


def row_key(row: dict, columns) -> tuple:
    return tuple(_hashable(row.get(c)) for c in columns)


def _hashable(v):
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    return v


def jsonable(rows: list[dict] | None) -> list[dict] | None:
    """Rows as JSON can hold them (dates, decimals and bytes as strings), at most SHOWN."""
    if rows is None:
        return None
    out = []
    for r in rows[:SHOWN]:
        out.append({k: v if isinstance(v, (int, float, str, bool, type(None))) else str(v)
                    for k, v in r.items()})
    return out
