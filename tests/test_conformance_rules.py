"""How conformance compares messages (no real Iceberg needed)."""

from icecheck.conformance.compare import message_key, split_message


def test_key_is_the_text_before_the_first_unquoted_colon():
    key, detail = split_message('Found conflicting files that can contain records matching '
                                'ref(name="id") == "a:b": [d1]')
    assert key == 'Found conflicting files that can contain records matching ref(name="id") == "a:b"'
    assert detail == "[d1]"


def test_snapshot_ids_are_masked():
    assert message_key("Cannot determine history between starting snapshot 1001 and the last "
                       "known ancestor 2002") == message_key(
        "Cannot determine history between starting snapshot 7 and the last known ancestor 8")


def test_partition_sets_compare_as_sets():
    model = "Found conflicting files that can contain records matching partitions [id_bucket=null, id_bucket=0]: [d2]"
    java = "Found conflicting files that can contain records matching partitions [id_bucket=0, id_bucket=null]: [d2]"
    assert split_message(model)[0] == split_message(java)[0]
    other = "Found conflicting files that can contain records matching partitions [id_bucket=1]: [d2]"
    assert split_message(model)[0] != split_message(other)[0]


def test_messages_are_compared_whole():
    """Conformance compares whole messages: only Java's file descriptions (physical layout),
    locations, ids and the order of a joined hash set are normalised."""
    from icecheck.conformance.compare import normalize_detail

    assert normalize_detail("a2,a1") == normalize_detail("a1,a2")
    assert normalize_detail("[a1, a2]") != normalize_detail("a1,a2")      # Java: no brackets
    assert normalize_detail("[d4, d2]") == normalize_detail("[d2, d4]")   # manifest-scan order
    assert normalize_detail("[d4, d2]") != normalize_detail("[d2, d5]")
    assert normalize_detail(
        "DV{location=w1-1-dv1, offset=4, length=8, referencedDataFile=d1}") == "w1-1-dv1"
    assert normalize_detail("GenericDataFile{content=data, file_path=a1, file_format=PARQUET, "
                            "partition=PartitionData{category=a}, value_counts={1=2, 2=2}, "
                            "record_count=2}") == "a1"
    assert normalize_detail("file:/tmp/wh/db/t/data/w1-1-d1.parquet") == "w1-1-d1"
    assert normalize_detail("ref(name=\"id\") == 1") != normalize_detail("ref(name=\"id\") == 2")
