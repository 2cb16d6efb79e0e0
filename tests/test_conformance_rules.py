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


def test_pyiceberg_worded_failures_are_compared_whole():
    """The checks the model words as PyIceberg does are compared whole, snapshot ids masked
    (PyIceberg's are random); the others by kind of check, a difference only noted."""
    from types import SimpleNamespace

    from icecheck.conformance.pyiceberg_target import agree_on_failure, mask_snapshot_ids

    added = "Added data files were found matching the filter for snapshots {1003, 1004}!"
    real = ("Added data files were found matching the filter for snapshots "
            "{8123456789012345678, 12345678901234}!")
    assert mask_snapshot_ids(added) == mask_snapshot_ids(real)
    op = SimpleNamespace(message=added, check="no_conflicting_data")
    assert agree_on_failure(op, real) == (True, None)
    one = "Added data files were found matching the filter for snapshots {8123456789012345678}!"
    agree, note = agree_on_failure(op, one)                       # one id fewer: disagree
    assert not agree and "pyiceberg" in note
    empty = SimpleNamespace(message=added.replace("{1003, 1004}", "set()"), check="no_conflicting_data")
    assert agree_on_failure(empty, "Added data files were found matching the filter for snapshots "
                                   "set()!") == (True, None)
    deleted = "Deleted data files were found matching the filter for snapshots set()!"
    assert not agree_on_failure(empty, deleted)[0]                # another check, same shape
    # a check the model still words as Java does: the kind is compared, a difference noted
    java_worded = SimpleNamespace(message="Missing required files to delete: d1",
                                  check="missing_delete_paths")
    assert agree_on_failure(java_worded, "Data files were concurrently deleted: ['x']") == (True, None)
    agree, note = agree_on_failure(java_worded, deleted)
    assert agree and note.startswith("check differs")


def test_pyiceberg_file_checks_are_compared_whole_with_files_masked():
    """The data files checks of PyIceberg's file-level overwrite are worded as PyIceberg does and
    compared whole; PyIceberg names its own files (and prints a replaced file as its whole
    DataFile record), so files are masked and only how many there are counts."""
    from types import SimpleNamespace

    from icecheck.conformance.pyiceberg_target import agree_on_failure, mask_py_message

    gone = SimpleNamespace(message="Data files were concurrently deleted: ['d1']",
                           check="data_files_exist")
    real = ("Data files were concurrently deleted: ['file:///tmp/w/t/data/"
            "00000-0-5024f1bb-c751-4d7a-b17c-10a02d24b807.parquet']")
    assert mask_py_message(gone.message) == "Data files were concurrently deleted: ['<file>']"
    assert agree_on_failure(gone, real) == (True, None)
    agree, note = agree_on_failure(gone, real[:-1] + ", 'file:///tmp/b.parquet']")
    assert not agree and "pyiceberg" in note                      # two files, not one
    replaced = SimpleNamespace(message="Cannot commit, found new delete for replace data file d1",
                               check="no_new_deletes_for_data_files")
    record = ("Cannot commit, found new delete for replace data file DataFile[DataFileContent.DATA, "
              "file:///tmp/w/d1.parquet, FileFormat.PARQUET, Record[], 2, 952, <pyiceberg.utils."
              "lazydict.LazyDict object at 0x7efe1a415990>, {}, {1: b'\\x01'}, None, [4], None, 0]")
    assert agree_on_failure(replaced, record) == (True, None)
    # the Java wording of the same check is another message: whole comparison tells them apart
    java = "Cannot commit, found new delete for replaced data file: d1"
    assert not agree_on_failure(replaced, java)[0]


def test_pyiceberg_new_deletes_check_reaches_the_heads_sequence_number():
    """PyIceberg's _validate_no_new_deletes_for_data_files takes the sequence number deletes
    must reach from the catalog head (its caller passes the head as starting_snapshot): a
    delete for a replaced file counts only when no commit followed it. Java's counts from the
    base (scenarios/builtin/commands/mixed-pyiceberg-file-overwrite-*.yaml run both on real
    Spark + PyIceberg)."""
    from icecheck.models.files import POSITION_DELETES, DataFile, DeleteFile
    from icecheck.models.metadata import ADDED, ManifestEntry
    from icecheck.models.validation import _py_delete_applies

    d1 = DataFile("d1", (), 2)
    d2 = DataFile("d2", (), 1)
    scoped = ManifestEntry(ADDED, 2, 4, 4, DeleteFile("p1", POSITION_DELETES, (),
                                                     (("d1", 1),)))
    assert _py_delete_applies(scoped, d1, 4)                      # the delete is at the head
    assert not _py_delete_applies(scoped, d1, 5)                  # a later commit: missed
    assert not _py_delete_applies(scoped, d2, 4)                  # names another file
    spanning = ManifestEntry(ADDED, 2, 4, 4, DeleteFile("p2", POSITION_DELETES, (),
                                                       (("d0", 1), ("d2", 0))))
    assert _py_delete_applies(spanning, d1, 4)                    # d0 <= d1 <= d2: may apply
    assert not _py_delete_applies(spanning, DataFile("d3", (), 1), 4)


def test_model_words_pyiceberg_conflicts_as_pyiceberg_does(tmp_path):
    """PyIceberg's set misses the first conflicting entry (its generator was started by any()):
    set() for one conflicting file, the later ones' snapshots for more; Java's wording stays
    for the Spark profiles."""
    from icecheck.scenarios.format import load_scenario
    from icecheck.scenarios.runner import run_scenario

    def failure(profile, inserts):
        steps = ["  - begin: w1", "    command: {sql: DELETE, where: \"id = 1\"}"]
        for i in range(inserts):
            steps += [f"  - begin: i{i}", f"    command: {{sql: INSERT, rows: [[1, x{i}]]}}",
                      f"  - commit: i{i}"]
        steps += ["  - commit: w1"]
        text = "\n".join(["version: 1", "id: t", f"profile: {profile}",
                          "table: {schema: {id: int, v: string}}",
                          "files: {d1: {rows: [[1, a], [2, b]]}}", "steps:",
                          "  - commit: {op: append, add: [d1]}", *steps])
        path = tmp_path / f"{profile}-{inserts}.yaml"
        path.write_text(text + "\n", encoding="utf-8")
        result = run_scenario(load_scenario(str(path)))
        return [s for s in result.steps if s.writer == "w1" and s.outcome != "committed"][-1]

    one = failure("pyiceberg-0.12-serializable", 1)
    assert one.message == "Added data files were found matching the filter for snapshots set()!"
    two = failure("pyiceberg-0.12-serializable", 2)
    # the newest snapshot's file is met first; the set holds the older insert's snapshot
    assert two.message.startswith("Added data files were found matching the filter for snapshots {")
    assert two.message.count(",") == 0 and two.message != one.message
    spark = failure("spark-3.5-cow-serializable", 1)
    assert spark.message.startswith("Found conflicting files that can contain records matching")
