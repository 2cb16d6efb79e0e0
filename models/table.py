"""The table's fixed definition: schema, partition spec, format version and properties.

The definition never changes during a run (the model does not evolve schemas or specs), so it
lives outside the per-state data and is shared by every state of a run.
"""

from __future__ import annotations

import re

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping

from .files import DataFile, Pairs, Row, bounds_of, pairs
from .transforms import PartitionSpec

COLUMN_TYPES = ("int", "long", "string")

# Java defaults (TableProperties): commit.retry.num-retries=4.
DEFAULT_PROPERTIES = {
    "commit.retry.num-retries": 4,
    "commit.manifest.min-count-to-merge": 100,
    "commit.manifest-merge.enabled": True,
}
MANIFEST_TARGET_SIZE = "commit.manifest.target-size-bytes"
MANIFEST_TARGET_SIZE_DEFAULT = 8 * 1024 * 1024     # TableProperties.MANIFEST_TARGET_SIZE_BYTES
#: The largest retry count the model accepts: each retry is a step of every writer, so a bound
#: far above Java's default (4) only makes explorations explode.
MAX_RETRIES = 20
INT_RANGES = {"int": (-(1 << 31), (1 << 31) - 1), "long": (-(1 << 63), (1 << 63) - 1)}
#: Table properties whose values Iceberg parses into an enum (RowLevelOperationMode,
#: IsolationLevel): a row-level command's write mode and isolation level, per command kind.
ENUM_PROPERTIES = {
    **{f"write.{c}.mode": ("copy-on-write", "merge-on-read")
       for c in ("delete", "update", "merge")},
    **{f"write.{c}.isolation-level": ("serializable", "snapshot")
       for c in ("delete", "update", "merge")},
}


def property_error(key: Any, value: Any) -> str | None:
    """Why ``key: value`` is not a table property the model can use (None if it is).

    The properties the model reads must have their Java types (an integer, not ``'lots'``,
    ``2.0`` or ``true``; a boolean, not ``'no'``); others are kept as given, as Iceberg keeps
    properties it does not know.
    """
    if not isinstance(key, str):
        return f"property names are strings, not {key!r}"
    if key in ENUM_PROPERTIES:
        # The engines read these from the table (profiles.MODE_PROPERTIES,
        # ISOLATION_PROPERTIES); a value none of them accepts would otherwise be kept and
        # silently ignored for a job whose engine does not read it (PyIceberg and a mode).
        # Lower case only: PyIceberg's IsolationLevel enum takes nothing else, and
        # profiles.property_conflict compares the spelling exactly.
        allowed = ENUM_PROPERTIES[key]
        if value not in allowed:
            return f"{key} must be {' or '.join(allowed)}, not {value!r}"
        return None
    if key == MANIFEST_TARGET_SIZE:
        # ManifestMergeManager packs manifests into bins of this many bytes (ListPacker by
        # ManifestFile::length); the model has no byte sizes and keeps one bin, which is what
        # Java does while a table's manifests stay below the 8 MB default
        size = int(value) if isinstance(value, str) and value.strip().isdigit() else value
        if isinstance(size, bool) or not isinstance(size, int) \
                or size < MANIFEST_TARGET_SIZE_DEFAULT:
            return (f"{key} below {MANIFEST_TARGET_SIZE_DEFAULT} (Java's default) is not "
                    f"modelled: the model has no manifest byte sizes and merges a commit's "
                    f"manifests in one bin, as Java does below the target size, not {value!r}")
        return None
    if key not in DEFAULT_PROPERTIES:
        return None if isinstance(value, (str, int, float, bool)) else \
            f"{key}: {value!r} is not a scalar value"
    if isinstance(DEFAULT_PROPERTIES[key], bool):
        # Java stores every property as a string and parses it (PropertyUtil.propertyAsBoolean)
        ok = isinstance(value, bool) or (isinstance(value, str)
                                         and value.lower() in ("true", "false"))
        return None if ok else f"{key} must be true or false, not {value!r}"
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value.strip()):
        value = int(value)        # as Java's PropertyUtil.propertyAsInt parses it
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{key} must be an integer, not {value!r}"
    high = MAX_RETRIES if key == "commit.retry.num-retries" else 1_000_000
    if not 0 <= value <= high:
        return f"{key} must be between 0 and {high}, not {value}"
    return None


@dataclass(frozen=True)
class Schema:
    columns: tuple[tuple[str, str], ...]

    @cached_property
    def names(self) -> tuple[str, ...]:
        # cached on the instance (read for every row a property evaluation reads); not a field,
        # so equality, hashing and digests are unchanged
        return tuple(name for name, _ in self.columns)

    def types(self) -> dict[str, str]:
        return dict(self.columns)

    def index(self, name: str) -> int:
        return self.names.index(name)

    def as_dict(self, row: Row) -> dict[str, Any]:
        return dict(zip(self.names, row))

    def java_struct(self) -> str:
        """The schema as Java prints it in messages (``Types.StructType.toString``, 1.10.2
        Types.java:1087, each field ``NestedField.toString``, :964): the table the conformance
        drivers create has every column optional, with ids 1, 2, ... in schema order."""
        return "struct<" + ", ".join(f"{i}: {name}: optional {typ}"
                                     for i, (name, typ) in enumerate(self.columns, 1)) + ">"


@dataclass(frozen=True)
class TableConfig:
    """What ``CREATE TABLE`` fixed: schema, spec, format version (2, or 3 for DVs), properties."""

    schema: Schema
    spec: PartitionSpec
    format_version: int = 2
    properties: Pairs = field(default_factory=tuple)
    # Which Java library's rules to follow where they changed between releases (see
    # docs/model.md, "Versioned rules"). Conformance against the 1.10.2 jar uses (1, 10).
    iceberg_version: tuple[int, int] = (1, 11)

    def prop(self, key: str) -> Any:
        return dict(self.properties).get(key, DEFAULT_PROPERTIES.get(key))

    def prop_bool(self, key: str) -> bool:
        """A boolean property as Java reads it: ``"false"`` (a string, as Iceberg stores
        every property) is false."""
        v = self.prop(key)
        return v.strip().lower() == "true" if isinstance(v, str) else bool(v)

    @property
    def max_retries(self) -> int:
        return int(self.prop("commit.retry.num-retries"))

    def partition_of_row(self, row: Row) -> tuple:
        return self.spec.partition_of(self.schema.as_dict(row))

    def partition_from_values(self, values: Mapping[str, Any]) -> tuple:
        """Partition tuple from source-column values (transforms applied)."""
        return self.spec.partition_of(values)

    def data_file(self, path: str, rows: tuple[Row, ...]) -> DataFile:
        """A data file holding ``rows``, with the partition and metrics a writer would record.

        All rows must share one partition: Iceberg writers never mix partitions in a file.
        """
        parts = {self.partition_of_row(r) for r in rows}
        if len(parts) > 1:
            raise ValueError(f"data file {path} mixes partitions {sorted(map(str, parts))}")
        partition = parts.pop() if parts else tuple(None for _ in self.spec.fields)
        lower, upper, nulls = bounds_of(self.schema.names, rows)
        return DataFile(path, partition, len(rows), lower, upper, nulls, tuple(rows))

    def with_properties(self, extra: Mapping[str, Any]) -> "TableConfig":
        merged = dict(self.properties)
        merged.update(extra)
        return TableConfig(self.schema, self.spec, self.format_version, pairs(merged),
                           self.iceberg_version)
