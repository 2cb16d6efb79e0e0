"""Iceberg partition transforms (identity, bucket[N], truncate[W]) for int, long and string.

The model must put every row in exactly the partition real Iceberg would, because conflict
detection in Java first prunes files by partition (``ManifestReader`` evaluates the inclusive
projection of the row filter on ``file.partition()``). A transform that is off by one bucket
would make the model report conflicts that Java never sees, or miss ones it does. So the
transforms here follow the Iceberg table spec, "Partition Transforms" and "Appendix B:
32-bit Hash Requirements", bit for bit:

* ``bucket[N]``: ``(murmur3_x86_32(serialize(v)) & Integer.MAX_VALUE) % N`` with seed 0, where
  int *and* long are serialized as an 8-byte little-endian long (so ``bucket(34)`` is the same
  for both) and a string is serialized as its UTF-8 bytes (``BucketUtil.hash``).
* ``truncate[W]`` on int/long: ``v - (((v % W) + W) % W)`` (``TruncateUtil.truncateInt``), i.e.
  rounding down towards negative infinity; on strings: the first W unicode code points
  (``UnicodeUtil.truncateString``), never splitting a surrogate pair.
* every transform maps null to null.

Names of partition fields follow ``PartitionSpec.Builder`` (what ``CREATE TABLE ...
PARTITIONED BY`` produces): ``col``, ``col_bucket``, ``col_trunc``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "TRANSFORM_KINDS",
    "PartitionField",
    "PartitionSpec",
    "Transform",
    "bucket_hash",
    "murmur3_32",
    "parse_partition_spec",
    "parse_transform",
    "transform_from_string",
]

TRANSFORM_KINDS = ("identity", "bucket", "truncate")

_MASK32 = 0xFFFFFFFF
_INT_MAX = 0x7FFFFFFF
_C1 = 0xCC9E2D51
_C2 = 0x1B873593

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_IDENT_RE = re.compile(rf"^{_IDENT}$")
_CALL_RE = re.compile(
    rf"^\s*(?P<kind>{_IDENT})\s*\(\s*(?P<args>[^()]*?)\s*\)\s*$",
)
_SPEC_STRING_RE = re.compile(r"^\s*(?P<kind>[a-z]+)\s*(?:\[\s*(?P<param>-?\d+)\s*\])?\s*$")
_USAGE = "expected identity(col), bucket(N, col) or truncate(W, col)"


def _rotl32(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK32


def _to_signed32(value: int) -> int:
    return value - (1 << 32) if value & 0x80000000 else value


def _fmix32(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK32
    h ^= h >> 16
    return h


def _mix_k(k: int) -> int:
    k = (k * _C1) & _MASK32
    k = _rotl32(k, 15)
    return (k * _C2) & _MASK32


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """Murmur3 x86 32-bit of ``data``, as a *signed* 32-bit int like Java's ``HashCode.asInt()``.

    Iceberg uses Guava's ``Hashing.murmur3_32_fixed()`` (seed 0); the spec's test vectors are
    quoted as signed ints, so this returns the same representation.
    """
    h = seed & _MASK32
    n_blocks = len(data) // 4
    for i in range(n_blocks):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        h ^= _mix_k(k)
        h = _rotl32(h, 13)
        h = (h * 5 + 0xE6546B64) & _MASK32
    tail = data[4 * n_blocks :]
    if tail:
        k = 0
        for index, byte in enumerate(tail):
            k |= byte << (8 * index)
        h ^= _mix_k(k)
    h ^= len(data)
    return _to_signed32(_fmix32(h))


def _check_value_type(value: Any) -> None:
    # bool is an int subclass in Python, but Iceberg never treats a boolean as an int/long.
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(
            f"partition transforms support int, long and string values, not {type(value).__name__}"
        )


def _serialize_for_hash(value: int | str) -> bytes:
    """The spec's hash serialization: int and long as 8-byte little-endian long, string as UTF-8.

    Java's ``String.getBytes(UTF_8)`` replaces an unpaired surrogate with '?', and so does
    Python's ``errors="replace"`` when encoding, so even malformed strings hash identically.
    """
    if isinstance(value, str):
        return value.encode("utf-8", errors="replace")
    if not -(1 << 63) <= value < (1 << 63):
        raise ValueError(f"value {value} does not fit in an Iceberg long")
    return value.to_bytes(8, "little", signed=True)


def bucket_hash(value: int | str) -> int:
    """The signed 32-bit hash Iceberg buckets ``value`` by (``BucketUtil.hash``)."""
    _check_value_type(value)
    return murmur3_32(_serialize_for_hash(value))


def _truncate_int(value: int, width: int) -> int:
    # Python's % already rounds towards -inf, so this equals Java's
    # value - (((value % width) + width) % width) for every int and long.
    return value - (((value % width) + width) % width)


def _truncate_str(value: str, width: int) -> str:
    # Python strings are sequences of code points, exactly the unit Iceberg truncates by.
    return value[:width]


@dataclass(frozen=True)
class Transform:
    """One Iceberg partition transform: ``kind`` is identity, bucket or truncate.

    ``param`` is the bucket count N or the truncate width W (> 0, as ``Bucket.get`` and
    ``Truncate.get`` require), and None for identity.
    """

    kind: str
    param: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in TRANSFORM_KINDS:
            raise ValueError(f"unknown partition transform {self.kind!r}; {_USAGE}")
        if self.kind == "identity":
            if self.param is not None:
                raise ValueError("identity takes no parameter")
            return
        what = "number of buckets" if self.kind == "bucket" else "truncate width"
        if isinstance(self.param, bool) or not isinstance(self.param, int):
            raise ValueError(f"{self.kind} needs an integer {what}, got {self.param!r}")
        if self.param <= 0:
            raise ValueError(f"invalid {what}: {self.param} (must be > 0)")

    def apply(self, value: Any) -> Any:
        """Transform one source value; None (null) always maps to None."""
        if value is None:
            return None
        _check_value_type(value)
        if self.kind == "identity":
            return value
        if self.kind == "bucket":
            assert self.param is not None
            return (bucket_hash(value) & _INT_MAX) % self.param
        assert self.param is not None
        if isinstance(value, str):
            return _truncate_str(value, self.param)
        return _truncate_int(value, self.param)

    @property
    def name_suffix(self) -> str:
        """The suffix ``PartitionSpec.Builder`` appends to the source name for this transform."""
        return {"identity": "", "bucket": "_bucket", "truncate": "_trunc"}[self.kind]

    def call_text(self, column: str) -> str:
        """This transform applied to ``column`` in the scenario syntax, e.g. ``bucket(16, id)``."""
        if self.param is None:
            return f"{self.kind}({column})"
        return f"{self.kind}({self.param}, {column})"

    def __str__(self) -> str:
        """Java's ``Transform.toString()``: ``identity``, ``bucket[16]``, ``truncate[4]``."""
        if self.param is None:
            return self.kind
        return f"{self.kind}[{self.param}]"


def _parse_int_arg(text: str, source: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(
            f"invalid partition transform {source!r}: {text!r} is not an integer; {_USAGE}"
        ) from None


def _check_column(name: str, source: str) -> str:
    if not _IDENT_RE.match(name):
        raise ValueError(
            f"invalid partition transform {source!r}: {name!r} is not a column name; {_USAGE}"
        )
    return name


def parse_transform(text: str) -> tuple[Transform, str]:
    """Parse ``identity(col)``, ``bucket(N, col)`` or ``truncate(W, col)`` (Spark's DDL order).

    Returns ``(transform, column)``. Raises ValueError naming the bad text and the accepted forms.
    """
    if not isinstance(text, str):
        raise ValueError(f"invalid partition transform {text!r}: not a string; {_USAGE}")
    match = _CALL_RE.match(text)
    if match is None:
        hint = ""
        if "(" in text and ")" not in text:
            # YAML splits a flow list at its commas: [bucket(2, id)] is "bucket(2" and "id)"
            hint = (" (in a YAML [...] list a transform with a comma must be quoted: "
                    "['bucket(2, id)'])")
        raise ValueError(f"invalid partition transform {text!r}; {_USAGE}{hint}")
    kind = match.group("kind").lower()
    args = [arg.strip() for arg in match.group("args").split(",")] if match.group("args") else []
    if kind not in TRANSFORM_KINDS:
        raise ValueError(
            f"unknown partition transform {match.group('kind')!r} in {text!r}; {_USAGE}"
        )
    expected_args = 1 if kind == "identity" else 2
    if len(args) != expected_args:
        form = (
            "identity(col)"
            if kind == "identity"
            else f"{kind}({'N' if kind == 'bucket' else 'W'}, col)"
        )
        raise ValueError(
            f"invalid partition transform {text!r}: {kind} takes {expected_args} "
            f"argument{'s' if expected_args > 1 else ''}, as in {form}"
        )
    if kind == "identity":
        return Transform("identity"), _check_column(args[0], text)
    param = _parse_int_arg(args[0], text)
    column = _check_column(args[1], text)
    try:
        return Transform(kind, param), column
    except ValueError as exc:
        raise ValueError(f"invalid partition transform {text!r}: {exc}") from None


def transform_from_string(text: str) -> Transform:
    """Parse Java's ``Transform.toString()`` form (``identity``, ``bucket[16]``, ``truncate[4]``),
    the form table metadata JSON stores."""
    match = _SPEC_STRING_RE.match(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(
            f"invalid transform string {text!r}; expected identity, bucket[N] or truncate[W]"
        )
    param = match.group("param")
    try:
        return Transform(match.group("kind"), int(param) if param is not None else None)
    except ValueError as exc:
        raise ValueError(f"invalid transform string {text!r}: {exc}") from None


@dataclass(frozen=True)
class PartitionField:
    """A partition field: ``transform`` applied to the source column ``source``."""

    source: str
    transform: Transform

    @property
    def name(self) -> str:
        """The partition field name ``PartitionSpec.Builder`` gives it (``id``, ``id_bucket``,
        ``id_trunc``); projected conflict filters refer to it, e.g. ``ref(name="id_trunc")``."""
        return self.source + self.transform.name_suffix

    @property
    def call_text(self) -> str:
        """The field in scenario syntax, e.g. ``bucket(16, id)``; ``parse_transform`` reads it."""
        return self.transform.call_text(self.source)

    def __str__(self) -> str:
        """Like Java's ``PartitionField.toString()`` without ids: ``id_bucket: bucket[16](id)``."""
        return f"{self.name}: {self.transform}({self.source})"


@dataclass(frozen=True)
class PartitionSpec:
    """An ordered tuple of partition fields; empty means unpartitioned.

    Field names must be unique, as Java's ``PartitionSpec.Builder`` requires ("Cannot use
    partition name more than once").
    """

    fields: tuple[PartitionField, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        seen: set[str] = set()
        for field in self.fields:
            if not isinstance(field, PartitionField):
                raise TypeError(f"partition spec fields must be PartitionField, not {field!r}")
            if field.name in seen:
                raise ValueError(f"cannot use partition name more than once: {field.name}")
            seen.add(field.name)

    @property
    def is_unpartitioned(self) -> bool:
        return not self.fields

    @property
    def names(self) -> tuple[str, ...]:
        """Partition field names in field order: the positions of a partition tuple."""
        return tuple(field.name for field in self.fields)

    def partition_of(self, row: Mapping[str, Any]) -> tuple:
        """The partition tuple of ``row``: each field's transform of its source value, in order.

        A source column absent from ``row`` is an error (a missing key is almost always a
        scenario typo); pass an explicit None for a null value.
        """
        values = []
        for field in self.fields:
            if field.source not in row:
                raise ValueError(
                    f"row has no value for partition source column {field.source!r} "
                    f"(partition field {field.name!r})"
                )
            values.append(field.transform.apply(row[field.source]))
        return tuple(values)

    def __str__(self) -> str:
        """``[]`` when unpartitioned (as Java prints it), else ``[category: identity(category),
        id_bucket: bucket[16](id)]`` (Java's layout without field ids)."""
        return "[" + ", ".join(str(field) for field in self.fields) + "]"


def parse_partition_spec(texts: Iterable[str]) -> PartitionSpec:
    """Build a spec from scenario entries such as ``["identity(category)", "bucket(16, id)"]``."""
    fields = []
    for text in texts:
        transform, column = parse_transform(text)
        fields.append(PartitionField(column, transform))
    return PartitionSpec(tuple(fields))
