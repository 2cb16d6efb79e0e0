"""Data files and delete files: immutable, uniquely named objects in the object store.

Iceberg never rewrites a file in place, so a file is a frozen value. Data files carry what the
Java library keeps in a manifest entry's ``DataFile`` (partition tuple, record count, per-column
lower/upper bounds and null counts) plus, where a scenario gives them, the concrete rows, so that
reads can compute the exact rows of a snapshot and properties can judge them.

Delete files come in three kinds:

* ``position_deletes``: (data file path, row position) pairs (format v2). One that references a
  single data file records it as its *referenced data file*, as Spark's file-scoped deletes do;
  one that references several is partition-scoped and carries file-path bounds, which is what
  Java's ``DeleteFileIndex`` uses to decide which data files it may apply to.
* ``equality_deletes``: rows of values for ``equality_columns``; they apply by value.
* ``dv``: a v3 deletion vector, a position delete that always references exactly one data file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

DATA = "data"
POSITION_DELETES = "position_deletes"
EQUALITY_DELETES = "equality_deletes"
DV = "dv"
DELETE_CONTENTS = (POSITION_DELETES, EQUALITY_DELETES, DV)
CONTENTS = (DATA,) + DELETE_CONTENTS

Row = tuple
Pairs = tuple  # tuple of (key, value) pairs, sorted: a hashable stand-in for a small mapping


def pairs(mapping: Mapping[str, Any] | None) -> Pairs:
    """Freeze a small mapping into sorted (key, value) pairs, so it can live in a hashed state."""
    return tuple(sorted((mapping or {}).items()))


@dataclass(frozen=True)
class DataFile:
    """A data file as its manifest entry describes it, plus (optionally) its rows."""

    path: str
    partition: tuple
    record_count: int
    lower_bounds: Pairs = ()
    upper_bounds: Pairs = ()
    null_counts: Pairs = ()
    rows: tuple[Row, ...] | None = None

    content = DATA

    @property
    def is_delete(self) -> bool:
        return False

    def lower(self) -> dict[str, Any]:
        return dict(self.lower_bounds)

    def upper(self) -> dict[str, Any]:
        return dict(self.upper_bounds)

    def nulls(self) -> dict[str, int]:
        return dict(self.null_counts)


@dataclass(frozen=True)
class DeleteFile:
    """A position delete file, an equality delete file or a v3 deletion vector."""

    path: str
    content: str
    partition: tuple
    positions: tuple[tuple[str, int], ...] = ()
    equality_columns: tuple[str, ...] = ()
    equality_rows: tuple[Row, ...] = ()

    @property
    def is_delete(self) -> bool:
        return True

    @property
    def record_count(self) -> int:
        return len(self.positions) if self.content != EQUALITY_DELETES else len(self.equality_rows)

    @property
    def referenced_paths(self) -> tuple[str, ...]:
        """The distinct data files a position delete or DV names, in first-seen order."""
        seen: dict[str, None] = {}
        for path, _ in self.positions:
            seen.setdefault(path, None)
        return tuple(seen)

    @property
    def referenced_data_file(self) -> str | None:
        """Java's ``referencedDataFile()``: set for DVs and for file-scoped position deletes."""
        if self.content == EQUALITY_DELETES:
            return None
        refs = self.referenced_paths
        return refs[0] if len(refs) == 1 else None

    @property
    def path_bounds(self) -> tuple[str, str] | None:
        """Lower/upper bounds of the ``file_path`` column of a position delete file."""
        refs = self.referenced_paths
        if self.content == EQUALITY_DELETES or not refs:
            return None
        return (min(refs), max(refs))

    def deleted_positions(self, data_path: str) -> frozenset[int]:
        return frozenset(pos for path, pos in self.positions if path == data_path)


ContentFile = DataFile | DeleteFile


def bounds_of(columns: Iterable[str], rows: Iterable[Row]) -> tuple[Pairs, Pairs, Pairs]:
    """Per-column lower bounds, upper bounds and null counts, as a Parquet writer records them."""
    names = list(columns)
    lower: dict[str, Any] = {}
    upper: dict[str, Any] = {}
    nulls: dict[str, int] = {name: 0 for name in names}
    for row in rows:
        for name, value in zip(names, row):
            if value is None:
                nulls[name] += 1
                continue
            if name not in lower or value < lower[name]:
                lower[name] = value
            if name not in upper or value > upper[name]:
                upper[name] = value
    return pairs(lower), pairs(upper), pairs(nulls)
