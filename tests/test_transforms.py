"""Partition transforms against the Iceberg spec (Appendix B hash vectors, truncate examples)."""

from __future__ import annotations

import uuid

import pytest
from icecheck.models.transforms import (
    PartitionField,
    PartitionSpec,
    Transform,
    bucket_hash,
    murmur3_32,
    parse_partition_spec,
    parse_transform,
    transform_from_string,
)

# --- Appendix B: 32-bit hash requirements ------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (34, 2017239379),  # int 34
        (34, 2017239379),  # long 34L: same 8-byte serialization as int
        (17486, -653330422),  # date 2017-11-16 (days from epoch, an int)
        (81068000000, -662762989),  # time 22:31:08 (micros, a long)
        (1510871468000000, -2047944441),  # timestamp 2017-11-16T22:31:08 (micros)
        ("iceberg", 1210000089),  # string
    ],
)
def test_spec_hash_vectors(value: int | str, expected: int) -> None:
    assert bucket_hash(value) == expected


def test_spec_hash_vectors_for_raw_bytes() -> None:
    # binary/fixed 00 01 02 03 and uuid: exercise murmur3 on plain byte strings.
    assert murmur3_32(bytes([0, 1, 2, 3])) == -188683207
    assert murmur3_32(uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7").bytes) == 1488055340


@pytest.mark.parametrize(
    ("data", "seed", "expected_unsigned"),
    [
        # Published MurmurHash3_x86_32 verification values (SMHasher), covering every tail length.
        (b"", 0, 0),
        (b"", 1, 0x514E28B7),
        (b"", 0xFFFFFFFF, 0x81F16F39),
        (b"\x00\x00\x00\x00", 0, 0x2362F9DE),
        (b"\xff\xff\xff\xff", 0, 0x76293B50),
        (b"\x21\x43\x65\x87", 0, 0xF55B516B),
        (b"\x21\x43\x65", 0, 0x7E4A8634),
        (b"\x21\x43", 0, 0xA0F7B07A),
        (b"\x21", 0, 0x72661CF4),
    ],
)
def test_murmur3_reference_values(data: bytes, seed: int, expected_unsigned: int) -> None:
    result = murmur3_32(data, seed)
    assert -(1 << 31) <= result < (1 << 31)  # signed, like Java's HashCode.asInt()
    assert result & 0xFFFFFFFF == expected_unsigned


def test_bucket_is_masked_hash_mod_n() -> None:
    assert Transform("bucket", 16).apply(34) == 2017239379 % 16
    assert Transform("bucket", 16).apply("iceberg") == 1210000089 % 16
    # A negative hash is masked with Integer.MAX_VALUE, not negated.
    assert Transform("bucket", 10).apply(17486) == (-653330422 & 0x7FFFFFFF) % 10


def test_unicode_strings_hash_as_utf8() -> None:
    text = "caf\u00e9 \U0001f600"
    assert bucket_hash(text) == murmur3_32(text.encode("utf-8"))


# --- truncate and identity ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("width", "value", "expected"),
    [
        (10, 1, 0),
        (10, -1, -10),
        (10, 0, 0),
        (10, 10, 10),
        (10, -10, -10),
        (10, -11, -20),
        (3, 7, 6),
    ],
)
def test_truncate_integers_round_towards_negative_infinity(
    width: int, value: int, expected: int
) -> None:
    assert Transform("truncate", width).apply(value) == expected


def test_truncate_long_extremes() -> None:
    assert (
        Transform("truncate", 10).apply(-(1 << 63)) == -(1 << 63) - 2
    )  # spec formula, no overflow check
    assert Transform("truncate", 10).apply((1 << 63) - 1) == (1 << 63) - 8


def test_truncate_strings_by_code_points() -> None:
    assert Transform("truncate", 3).apply("iceberg") == "ice"
    assert Transform("truncate", 3).apply("ab") == "ab"
    # a surrogate pair in Java is one code point here
    assert Transform("truncate", 1).apply("\U0001f600ab") == "\U0001f600"


@pytest.mark.parametrize(
    "transform", [Transform("identity"), Transform("bucket", 4), Transform("truncate", 2)]
)
def test_null_maps_to_null(transform: Transform) -> None:
    assert transform.apply(None) is None


def test_identity_returns_value() -> None:
    assert Transform("identity").apply("a") == "a"
    assert Transform("identity").apply(-3) == -3


def test_booleans_and_floats_are_rejected() -> None:
    with pytest.raises(TypeError):
        Transform("bucket", 4).apply(True)
    with pytest.raises(TypeError):
        Transform("truncate", 4).apply(1.5)


# --- construction, text forms ------------------------------------------------------------------


def test_str_matches_java() -> None:
    assert str(Transform("identity")) == "identity"
    assert str(Transform("bucket", 16)) == "bucket[16]"
    assert str(Transform("truncate", 4)) == "truncate[4]"


@pytest.mark.parametrize(
    ("kind", "param"),
    [
        ("day", None),
        ("bucket", None),
        ("bucket", 0),
        ("truncate", -1),
        ("identity", 3),
        ("bucket", True),
    ],
)
def test_invalid_transforms_raise(kind: str, param: int | None) -> None:
    with pytest.raises(ValueError):
        Transform(kind, param)


def test_parse_transform() -> None:
    assert parse_transform("identity(col)") == (Transform("identity"), "col")
    assert parse_transform("bucket(16, id)") == (Transform("bucket", 16), "id")
    assert parse_transform(" truncate( 4 ,name ) ") == (Transform("truncate", 4), "name")
    assert parse_transform("BUCKET(2, x)") == (Transform("bucket", 2), "x")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("bucket(id)", "bucket takes 2 arguments"),
        ("identity(3, x)", "identity takes 1 argument"),
        ("bucket(0, id)", "must be > 0"),
        ("bucket(x, 4)", "'x' is not an integer"),
        ("truncate(4, 1x)", "'1x' is not a column name"),
        ("day(ts)", "unknown partition transform 'day'"),
        ("identity", "expected identity(col)"),
        ("", "expected identity(col)"),
        # what YAML leaves of an unquoted [bucket(2, id)]
        ("bucket(2", "must be quoted: ['bucket(2, id)']"),
    ],
)
def test_parse_transform_errors_are_clear(text: str, fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_transform(text)
    message = str(info.value)
    assert fragment in message
    assert repr(text) in message
    assert "\n" not in message


def test_transform_from_string_round_trips() -> None:
    for transform in (Transform("identity"), Transform("bucket", 16), Transform("truncate", 4)):
        assert transform_from_string(str(transform)) == transform
    with pytest.raises(ValueError):
        transform_from_string("bucket[0]")
    with pytest.raises(ValueError):
        transform_from_string("hour")


# --- fields and specs --------------------------------------------------------------------------


def test_partition_field_names_follow_java_builder() -> None:
    assert PartitionField("category", Transform("identity")).name == "category"
    assert PartitionField("id", Transform("bucket", 16)).name == "id_bucket"
    assert PartitionField("name", Transform("truncate", 4)).name == "name_trunc"
    assert str(PartitionField("id", Transform("bucket", 16))) == "id_bucket: bucket[16](id)"
    assert PartitionField("id", Transform("bucket", 16)).call_text == "bucket(16, id)"


def test_partition_spec() -> None:
    spec = parse_partition_spec(["identity(category)", "bucket(16, id)", "truncate(2, category)"])
    assert spec.names == ("category", "id_bucket", "category_trunc")
    assert not spec.is_unpartitioned
    assert spec.partition_of({"id": 34, "category": "abc"}) == ("abc", 3, "ab")
    assert spec.partition_of({"id": None, "category": None}) == (None, None, None)
    assert str(spec) == (
        "[category: identity(category), id_bucket: bucket[16](id), "
        "category_trunc: truncate[2](category)]"
    )


def test_unpartitioned_spec() -> None:
    spec = PartitionSpec(())
    assert spec.is_unpartitioned
    assert spec.partition_of({"id": 1}) == ()
    assert str(spec) == "[]"


def test_partition_spec_rejects_duplicate_names_and_missing_columns() -> None:
    with pytest.raises(ValueError, match="more than once"):
        parse_partition_spec(["bucket(4, id)", "bucket(8, id)"])
    with pytest.raises(ValueError, match="partition source column 'id'"):
        parse_partition_spec(["bucket(4, id)"]).partition_of({"category": "a"})


def test_values_are_immutable_and_hashable() -> None:
    spec = parse_partition_spec(["identity(a)"])
    assert hash(spec) == hash(parse_partition_spec(["identity(a)"]))
    with pytest.raises(AttributeError):
        spec.fields = ()  # type: ignore[misc]
