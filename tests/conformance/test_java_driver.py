"""The real-Iceberg (Java) driver against Iceberg's Java core, through one py4j JVM.

Skipped, with the reason, when Java or the jars cannot be had (``ensure_jars`` raises
``JavaSetupError``); otherwise every test commits real Iceberg metadata in a temp warehouse.
"""

from __future__ import annotations

import time

import pytest

from icecheck.conformance.java_setup import JavaSetupError, ensure_jars
from icecheck.models.files import DV, EQUALITY_DELETES, POSITION_DELETES, DataFile, DeleteFile
from icecheck.models.filters import parse_filter
from icecheck.models.operations import Operation, Validations
from icecheck.models.table import Schema, TableConfig
from icecheck.models.transforms import parse_partition_spec


@pytest.fixture(scope="session")
def jvm_ready():
    try:
        ensure_jars()
    except JavaSetupError as exc:
        pytest.skip(f"real Iceberg (Java) unavailable: {exc}")
    from icecheck.conformance import java_gateway
    try:
        java_gateway.get_gateway()
    except JavaSetupError as exc:
        pytest.skip(f"real Iceberg (Java) unavailable: {exc}")
    yield java_gateway
    java_gateway.shutdown_gateway()


def make_config(spec=("identity(category)",), fmt=2, props=(), schema=None) -> TableConfig:
    schema = schema or (("id", "int"), ("category", "string"))
    return TableConfig(Schema(tuple(schema)), parse_partition_spec(list(spec)), fmt,
                       tuple(sorted(props)))


@pytest.fixture
def open_table(jvm_ready):
    from icecheck.conformance.java_driver import JavaTable
    tables = []

    def _open(config: TableConfig | None = None, catalog: str = "hadoop", **kw) -> JavaTable:
        t = JavaTable(config or make_config(), catalog, **kw)
        tables.append(t)
        return t

    yield _open
    for t in tables:
        t.close()


def pos_delete(name, partition, *positions) -> DeleteFile:
    return DeleteFile(name, POSITION_DELETES, partition, positions=tuple(positions))


def dv(name, partition, *positions) -> DeleteFile:
    return DeleteFile(name, DV, partition, positions=tuple(positions))


def run(table, name: str, op: Operation):
    """An anonymous writer that begins and commits at once."""
    w = table.writer(name)
    w.begin(op)
    return w.commit()


def begun(table, name: str, op: Operation):
    w = table.writer(name)
    w.begin(op)
    return w


def mor_validations(**extra) -> Validations:
    """What Spark sets on a merge-on-read RowDelta (snapshot isolation, DELETE)."""
    switches = dict(from_snapshot=True, filter=parse_filter("category = 'a'"),
                    data_files_exist=("d1",))
    switches.update(extra)
    return Validations(**switches)


CFG = make_config()
D1 = CFG.data_file("d1", ((1, "a"), (2, "a")))
D2 = CFG.data_file("d2", ((1, "a"), (2, "a")))
D3 = CFG.data_file("d3", ((3, "b"), (4, "b")))
D4 = CFG.data_file("d4", ((10, "a"),))


# ----------------------------------------------------------------------------- (a) .. (g)

@pytest.mark.parametrize("catalog", ["hadoop", "jdbc"])
def test_two_concurrent_appends_both_commit(open_table, catalog):
    t = open_table(catalog=catalog)
    w1 = begun(t, "w1", Operation("append", add_data=(D1,)))
    w2 = begun(t, "w2", Operation("fast_append", add_data=(D3,)))
    assert w1.commit() == ("committed", None)
    assert w2.commit() == ("committed", None)  # refreshed at commit, appended on top of w1
    assert t.live_files() == (["d1", "d3"], [])
    snaps = t.snapshots()
    assert [s["sequence_number"] for s in snaps] == [1, 2]
    assert [s["operation"] for s in snaps] == ["append", "append"]
    assert snaps[1]["parent_id"] == snaps[0]["snapshot_id"] and snaps[0]["parent_id"] is None


@pytest.mark.parametrize("catalog", ["hadoop", "jdbc"])
def test_row_delta_after_concurrent_rewrite_misses_data_file(open_table, catalog):
    t = open_table(catalog=catalog)
    assert run(t, "setup", Operation("append", add_data=(D1,)))[0] == "committed"
    p1 = pos_delete("p1", ("a",), ("d1", 0))
    w1 = begun(t, "w1", Operation("row_delta", add_deletes=(p1,), validations=mor_validations()))
    rewrite = Operation("rewrite", delete_data=(D1,), add_data=(D2,),
                        validations=Validations(from_snapshot=True))
    assert run(t, "compaction", rewrite) == ("committed", None)
    outcome, message = w1.commit()
    assert outcome == "validation_failed"
    assert message.startswith("Cannot commit, missing data files"), message
    assert "d1" in message  # real paths are shown as model names
    assert t.live_files() == (["d2"], [])
    assert [s["operation"] for s in t.snapshots()] == ["append", "replace"]


def test_cow_overwrites_deleting_same_file(open_table):
    t = open_table()
    run(t, "setup", Operation("append", add_data=(D1,)))
    v = Validations(from_snapshot=True, filter=parse_filter("category = 'a'"),
                    no_conflicting_deletes=True)
    w1 = begun(t, "w1", Operation("overwrite", delete_data=(D1,), add_data=(D2,), validations=v))
    w2 = begun(t, "w2", Operation("overwrite", delete_data=(D1,), add_data=(D4,), validations=v))
    assert w1.commit() == ("committed", None)
    outcome, message = w2.commit()
    assert outcome == "validation_failed"
    assert message.startswith("Missing required files to delete"), message
    assert t.live_files() == (["d2"], [])


@pytest.mark.parametrize("delete_check, expected", [
    (False, ("committed", None)),
    (True, ("validation_failed", "Found new conflicting delete files")),
])
@pytest.mark.parametrize("catalog", ["hadoop", "jdbc"])
def test_snapshot_isolation_mor_undelete(open_table, catalog, delete_check, expected):
    """Jack Vanlightly's anomaly: a merge-on-read DELETE passes after a concurrent UPDATE."""
    t = open_table(catalog=catalog)
    run(t, "setup", Operation("append", add_data=(D1,)))
    updated = CFG.data_file("d1u", ((1, "a"),))
    p_upd = pos_delete("p-upd", ("a",), ("d1", 0))
    p_del = pos_delete("p-del", ("a",), ("d1", 0))
    update = Operation("row_delta", add_data=(updated,), add_deletes=(p_upd,),
                       validations=mor_validations(deleted_files=True,
                                                   no_conflicting_delete_files=True))
    delete = Operation("row_delta", add_deletes=(p_del,),
                       validations=mor_validations(no_conflicting_delete_files=delete_check))
    w_up = begun(t, "update", update)
    w_del = begun(t, "delete", delete)
    assert w_up.commit() == ("committed", None)
    outcome, message = w_del.commit()
    assert outcome == expected[0]
    if expected[1] is None:
        assert message is None
        assert t.live_files() == (["d1", "d1u"], ["p-del", "p-upd"])
        assert [s["operation"] for s in t.snapshots()] == ["append", "overwrite", "delete"]
    else:
        assert message.startswith(expected[1]), message
        assert t.live_files() == (["d1", "d1u"], ["p-upd"])


@pytest.mark.parametrize("filter_text, expected", [
    ("category = 'a'", "committed"),
    ("category in ('a', 'b')", "validation_failed"),
])
def test_overwrite_no_conflicting_data_filter(open_table, filter_text, expected):
    t = open_table()
    run(t, "setup", Operation("append", add_data=(D1,)))
    v = Validations(from_snapshot=True, filter=parse_filter(filter_text), no_conflicting_data=True,
                    no_conflicting_deletes=True)
    w1 = begun(t, "w1", Operation("overwrite", delete_data=(D1,), add_data=(D2,), validations=v))
    assert run(t, "other", Operation("append", add_data=(D3,))) == ("committed", None)
    outcome, message = w1.commit()
    assert outcome == expected
    if expected == "committed":
        assert t.live_files() == (["d2", "d3"], [])
    else:
        assert message.startswith("Found conflicting files that can contain records matching"), \
            message
        assert "d3" in message
        assert t.live_files() == (["d1", "d3"], [])


def test_v3_concurrent_dvs_for_same_data_file(open_table):
    t = open_table(make_config(fmt=3))
    run(t, "setup", Operation("append", add_data=(D1,)))
    w1 = begun(t, "w1", Operation("row_delta", add_deletes=(dv("dv1", ("a",), ("d1", 0)),),
                                  validations=mor_validations()))
    w2 = begun(t, "w2", Operation("row_delta", add_deletes=(dv("dv2", ("a",), ("d1", 1)),),
                                  validations=mor_validations()))
    assert w1.commit() == ("committed", None)
    outcome, message = w2.commit()
    assert outcome == "validation_failed"
    assert message.startswith("Found concurrently added DV"), message
    assert t.live_files() == (["d1"], ["dv1"])


def test_jdbc_catalog_commits(open_table):
    t = open_table(catalog="jdbc")
    assert t.catalog_kind == "jdbc"
    assert run(t, "w", Operation("append", add_data=(D1,))) == ("committed", None)
    p1 = pos_delete("p1", ("a",), ("d1", 1))
    assert run(t, "w2", Operation("row_delta", add_deletes=(p1,),
                                  validations=mor_validations())) == ("committed", None)
    assert t.live_files() == (["d1"], ["p1"])
    assert [s["operation"] for s in t.snapshots()] == ["append", "delete"]


# ----------------------------------------------------------------------------- more mapping

@pytest.mark.parametrize("catalog", ["hadoop", "jdbc"])
def test_commit_refreshes_before_its_first_swap(open_table, catalog):
    """Java's commit() refreshes before its first attempt: a writer that began at an old
    snapshot does not lose a swap when commits are sequential, even with retries off."""
    t = open_table(make_config(props=(("commit.retry.num-retries", 0),)), catalog)
    w1 = begun(t, "w1", Operation("append", add_data=(D1,)))
    run(t, "other", Operation("append", add_data=(D3,)))
    w2 = begun(t, "w2", Operation("append", add_data=(D4,)))
    assert w2.commit() == ("committed", None)
    assert w1.commit() == ("committed", None)
    assert t.live_files() == (["d1", "d3", "d4"], [])
    assert [s["sequence_number"] for s in t.snapshots()] == [1, 2, 3]


def test_rewrite_with_starting_sequence_number(open_table):
    t = open_table()
    run(t, "setup", Operation("append", add_data=(D1,)))
    w = begun(t, "compaction", Operation("rewrite", delete_data=(D1,), add_data=(D2,),
                                         validations=Validations(from_snapshot=True,
                                                                 starting_sequence_number=True)))
    run(t, "other", Operation("append", add_data=(D3,)))
    assert w.commit() == ("committed", None)
    assert w.base_sequence_number == 1
    assert [s["sequence_number"] for s in t.snapshots()] == [1, 2, 3]
    assert t.live_files() == (["d2", "d3"], [])


def test_partitioned_long_bucket_truncate_and_equality_deletes(open_table):
    cfg = make_config(spec=("bucket(4, id)", "truncate(2, name)", "identity(ts)"),
                      schema=(("id", "long"), ("name", "string"), ("ts", "long")))
    t = open_table(cfg)
    big = 1 << 40
    same_bucket = next(big + k for k in range(1, 100)
                       if cfg.partition_of_row((big + k, "abd", big + 1))
                       == cfg.partition_of_row((big, "abc", big + 1)))
    d1 = cfg.data_file("d1", ((big, "abc", big + 1), (same_bucket, "abd", big + 1)))
    assert run(t, "w", Operation("append", add_data=(d1,))) == ("committed", None)
    eq = DeleteFile("e1", EQUALITY_DELETES, d1.partition, equality_columns=("id",),
                    equality_rows=((big,),))
    assert run(t, "w2", Operation("row_delta", add_deletes=(eq,))) == ("committed", None)
    assert t.live_files() == (["d1"], ["e1"])
    null_part = cfg.data_file("d2", ((7, None, None),))
    assert run(t, "w3", Operation("fast_append", add_data=(null_part,))) == ("committed", None)
    assert t.live_files() == (["d1", "d2"], ["e1"])


def test_delete_files_and_replace_partitions(open_table):
    t = open_table()
    run(t, "setup", Operation("append", add_data=(D1, D3)))
    w = begun(t, "del", Operation("delete_files", delete_data=(D1,),
                                  validations=Validations(files_exist=True)))
    run(t, "other", Operation("delete_files", row_filter=parse_filter("category = 'a'")))
    outcome, message = w.commit()
    assert outcome == "validation_failed"
    assert message.startswith("Missing required files to delete"), message
    assert t.live_files() == (["d3"], [])
    rp = Operation("replace_partitions", add_data=(D4,),
                   validations=Validations(from_snapshot=True, no_conflicting_data=True))
    assert run(t, "rp", rp) == ("committed", None)
    assert t.live_files() == (["d3", "d4"], [])
    assert [s["operation"] for s in t.snapshots()] == ["append", "delete", "overwrite"]


def test_partition_scoped_position_delete_uses_path_bounds(open_table):
    """A position delete naming two data files carries file_path bounds instead of a reference."""
    t = open_table()
    run(t, "setup", Operation("append", add_data=(D1, D2)))
    p = pos_delete("p12", ("a",), ("d1", 0), ("d2", 1))
    jf = t.java_file(p)
    assert jf.referencedDataFile() is None
    fid = t._ice.MetadataColumns.DELETE_FILE_PATH.fieldId()
    conv, stype = t._ice.types.Conversions, t._ice.types.Types.StringType.get()
    assert conv.fromByteBuffer(stype, jf.lowerBounds().get(fid)).toString() == t.real_path("d1")
    assert conv.fromByteBuffer(stype, jf.upperBounds().get(fid)).toString() == t.real_path("d2")
    single = t.java_file(pos_delete("p1", ("a",), ("d1", 0)))
    assert single.referencedDataFile() == t.real_path("d1")
    w = begun(t, "w", Operation("row_delta", add_deletes=(p,),
                                validations=mor_validations(data_files_exist=("d1", "d2"))))
    run(t, "compaction", Operation("rewrite", delete_data=(D2,), add_data=(D4,)))
    outcome, message = w.commit()
    assert outcome == "validation_failed" and "d2" in message, message


def test_unexpressible_operations_raise(open_table):
    from icecheck.conformance.java_driver import JavaDriverError
    t = open_table()
    w = t.writer("w")
    with pytest.raises(JavaDriverError, match="no Java call"):
        w.begin(Operation("append", add_data=(D1,),
                          validations=Validations(no_conflicting_data=True)))
    with pytest.raises(JavaDriverError, match="PyIceberg"):
        t.writer("w2").begin(Operation("overwrite", add_data=(D1,),
                                       validations=Validations(validate_on_first_attempt=False)))
    with pytest.raises(JavaDriverError):
        open_table(catalog="last_writer_wins")


def test_v3_refuses_plain_position_deletes(open_table):
    """addDeletes' format check (an IllegalArgumentException while the operation is built) is
    a refusal the model reports as validation_failed (models/producer.py, delete_version)."""
    t = open_table(make_config(fmt=3))
    run(t, "setup", Operation("append", add_data=(D1,)))
    outcome, message = run(t, "w", Operation("row_delta",
                                             add_deletes=(pos_delete("p1", ("a",), ("d1", 0)),)))
    assert outcome == "validation_failed"
    assert message == "Must use DVs for position deletes in V3: p1", message


def test_filter_conversion(jvm_ready):
    from icecheck.conformance.java_driver import to_java_expression
    jvm = jvm_ready.get_gateway().jvm
    expr = parse_filter("category = 'a' and (id < 10 or id in (20, 21)) and not name is null "
                        "and id not in (3) and id >= 1 and id != 2 and true")
    text = str(to_java_expression(expr, jvm))
    for part in ('ref(name="category") == "a"', 'ref(name="id") < 10', 'ref(name="id") in (20, 21)',
                 'ref(name="id") not in (3)', 'ref(name="id") >= 1', 'ref(name="id") != 2'):
        assert part in text, text
    assert "is_null" in text or "not_null" in text, text
    assert str(to_java_expression(parse_filter("false"), jvm)) == "false"
    assert str(to_java_expression(None, jvm)) == "true"


def test_timings(open_table, jvm_ready, capsys):
    """Report JVM start and per-commit times (see docs/conformance-java.md)."""
    t = open_table()
    times = []
    for i in range(10):
        f = CFG.data_file(f"t{i:02d}", ((i, "a"),))
        t0 = time.perf_counter()
        assert run(t, f"w{i}", Operation("append", add_data=(f,)))[0] == "committed"
        times.append(time.perf_counter() - t0)
    with capsys.disabled():
        print(f"\n[java driver] JVM start {jvm_ready.start_seconds:.2f} s; "
              f"append begin+commit median {sorted(times)[len(times) // 2] * 1000:.0f} ms")
    assert len(t.snapshots()) == 10
