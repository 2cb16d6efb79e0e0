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
    # validateDeletedDataFiles / validateNoNewDeleteFiles print the set without "partitions"
    # (Java random differential, seed 777: the model's nulls-first order against Java's hash order)
    model = ("Found conflicting deleted files that can apply to records matching "
             "[id_bucket=null, id_bucket=0]")
    java = ("Found conflicting deleted files that can apply to records matching "
            "[id_bucket=0, id_bucket=null]")
    assert message_key(model) == message_key(java)
    assert message_key(model) != message_key(model.replace("id_bucket=0", "id_bucket=1"))


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


def test_manifest_paths_are_masked_and_parallel_filtering_names_any_conflict():
    """RewriteManifests names a manifest whose path differs by construction; validateAppendOnly
    (like a partially matching row filter) names whichever manifest's filter task throws first
    (Java 1.10.2 named id_bucket=0 four times and id_bucket=null twice in six runs here)."""
    from icecheck.conformance.compare import _agree
    from icecheck.conformance.java_runner import ModelOp
    from icecheck.models.operations import Operation

    assert split_message("Deleted manifest snap-4001-m1.avro could not be found in the latest "
                         "snapshot 6001") == split_message(
        "Deleted manifest file:/tmp/w/db/t/metadata/4f-m0.avro could not be found in the latest "
        "snapshot 88")
    op = ModelOp("w2", 0, Operation("replace_partitions"), "validation_failed",
                 "Cannot commit file that conflicts with existing partition: id_bucket=null",
                 "append_only", 1, 0, 1, 1)
    agree, note = _agree(op, "validation_failed",
                         "Cannot commit file that conflicts with existing partition: id_bucket=0")
    assert agree and "parallel manifest filtering" in note
    op.check = "conflict"
    assert not _agree(op, "validation_failed",
                      "Cannot commit file that conflicts with existing partition: id_bucket=0")[0]
