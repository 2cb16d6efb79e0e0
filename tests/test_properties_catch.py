"""Each property catches a planted bug (and the real anomalies the model reproduces)."""

import dataclasses

from _props_util import by_property, model_of, planted, run

from icecheck.models import operations as ops
from icecheck.models.commands_spec import DELETE, INSERT
from icecheck.models.system import WriterProgram
from icecheck.properties import PROPERTIES, Violation, evaluate, split_expected

RACE = ["w1.begin#{a}", "w2.begin#{b}", "w1.refresh", "w1.cas", "w2.refresh", "w2.cas"]


def race(a, b):
    return [x.format(a=a, b=b) for x in RACE]


def test_violation_shape():
    cfg, m = model_of("spark-3.5-mor-snapshot")
    vs = evaluate(m, run(m, race(1, 0)))
    assert vs and all(isinstance(v, Violation) and v.property in PROPERTIES for v in vs)
    assert all(v.severity in ("violation", "finding") for v in vs)
    import json
    json.dumps([v.details for v in vs])  # JSON-able


# -- lost write ---------------------------------------------------------------------------------
def test_lost_write_catalog_last_writer_wins():
    cfg, m = model_of("spark-3.5-cow-serializable", catalog="last_writer_wins")
    # both INSERT (choice 2), both prepared on the same head; both swaps "succeed"
    s = run(m, ["w1.begin#2", "w2.begin#2", "w1.refresh", "w2.refresh", "w1.cas", "w2.cas"])
    lost = by_property(evaluate(m, s), "lost_write")
    assert len(lost) == 1 and lost[0].details["level"] == "catalog"
    assert lost[0].details["op"] == "w1.1" and lost[0].details["discarded_by"] == "w2.1"
    assert "w1" in lost[0].message and "seq 2" in lost[0].message
    un, allowed = split_expected(cfg.profile, cfg.catalog, cfg.format_version, evaluate(m, s))
    assert not un and allowed[0][1].reason.startswith("A plain PUT is not a compare-and-swap")
    # The same race on a real CAS: w2 loses the swap, retries and both inserts survive.
    cfg2, m2 = model_of("spark-3.5-cow-serializable")
    s2 = run(m2, ["w1.begin#2", "w2.begin#2", "w1.refresh", "w2.refresh", "w1.cas", "w2.cas",
                  "w2.refresh", "w2.cas"])
    assert evaluate(m2, s2) == []


def test_lost_write_row_level_stale_file_delete():
    """Planted bug: a job deletes a data file by path from a stale listing (it never read it)."""
    cfg, m = model_of("spark-3.5-cow-serializable", writers=1, mix=("update",))
    table = m.table
    doomed = table.data_file("w1-1-d1", ())
    bad = WriterProgram("w2", ((ops.Operation(ops.DELETE_FILES, delete_data=(doomed,)),),))
    m = type(m)(dataclasses.replace(m.config, writers=m.config.writers + (bad,)))
    s = run(m, ["w2.begin", "w1.begin", "w1.refresh", "w1.cas", "w2.refresh", "w2.cas"])
    lost = {v.details["op"]: v for v in by_property(evaluate(m, s), "lost_write")}
    # w1's updated row, and the bystander row 0 w1 rewrote into the same file
    assert sorted(lost) == ["setup.1", "w1.1"] and all(v.details["level"] == "row"
                                                     for v in lost.values())
    assert lost["w1.1"].details["lost_rows"] == [[1, "w1.1"]]
    un, _ = split_expected(cfg.profile, cfg.catalog, cfg.format_version, evaluate(m, s))
    assert {v.property for v in un} == {"lost_write"}
    # Had the job listed after w1's commit, deleting the file would be its own legitimate delete.
    s = run(m, ["w1.begin", "w1.refresh", "w1.cas", "w2.begin", "w2.refresh", "w2.cas"])
    assert by_property(evaluate(m, s), "lost_write") == []


# -- undelete -----------------------------------------------------------------------------------
def test_undelete_known_anomaly_mor_snapshot_v2():
    cfg, m = model_of("spark-3.5-mor-snapshot")
    s = run(m, race(1, 0))  # w1 UPDATE id=1 commits, then w2 DELETE id=1 commits
    vs = evaluate(m, s)
    und = by_property(vs, "undelete")
    assert len(und) == 1
    d = und[0].details
    assert d["deleted_by"] == "w2.1" and d["rows"] == [[1, "w1.1"]] and d["written_concurrently"]
    assert "w2" in und[0].message and "seq 3" in und[0].message
    iso = by_property(vs, "isolation")
    assert [v.details["anomaly"] for v in iso] == ["G-single"]
    assert iso[0].details["level_violated"] == "snapshot-isolation"
    assert not iso[0].details["on_absent_keys"]
    # Snapshot isolation does not allow it: both are unexpected.
    un, allowed = split_expected(cfg.profile, cfg.catalog, cfg.format_version, vs)
    assert sorted(v.property for v in un) == ["isolation", "undelete"] and not allowed


def test_undelete_prevented_by_serializable_and_by_v3():
    for profile, fv in (("spark-3.5-mor-serializable", 2), ("spark-3.5-mor-snapshot", 3)):
        cfg, m = model_of(profile, format_version=fv)
        s = run(m, race(1, 0)[:-1])  # w2's refresh validates, and fails
        assert s.writer("w2").history[-1].outcome == "validation_failed"
        assert evaluate(m, s) == []


# -- dangling deletes ---------------------------------------------------------------------------
def test_dangling_v2_harmless_is_an_allowed_finding():
    cfg, m = model_of("spark-3.5-mor-snapshot", mix=("update", "compact"))
    s = run(m, ["w1.begin#0", "w1.refresh", "w1.cas", "w2.begin#1", "w2.refresh", "w2.cas"])
    vs = evaluate(m, s)
    assert [v.property for v in vs] == ["dangling_deletes"]
    v = vs[0]
    assert v.severity == "finding" and v.details["classification"] == "harmless"
    assert v.details["data_file"] == "s-d1" and v.details["data_file_removed_by"] == "w2.1"
    assert "Harmless" in v.message
    un, allowed = split_expected(cfg.profile, cfg.catalog, cfg.format_version, vs)
    assert not un and len(allowed) == 1


def _no_data_files_exist(cmd, op, kw):
    """Planted bug: DELETE no longer checks that the data files it deletes from still exist."""
    if cmd.kind == DELETE:
        return op.with_validations(data_files_exist=None)
    return op


def test_dangling_dv_v3_planted_bug_is_a_violation():
    cfg, m = planted("spark-3.5-mor-snapshot", _no_data_files_exist, mix=("delete", "compact"),
                     format_version=3)
    # w1 compacts (removes s-d1) and commits; w2's DV on s-d1 then commits anyway
    s = run(m, ["w1.begin#1", "w2.begin#0", "w1.refresh", "w1.cas", "w2.refresh", "w2.cas"])
    vs = evaluate(m, s)
    dang = by_property(vs, "dangling_deletes")
    assert len(dang) == 1 and dang[0].severity == "violation"
    assert dang[0].details["content"] == "dv" and dang[0].details["data_file"] == "s-d1"
    assert by_property(vs, "undelete")  # the compacted copy of row 1 survives the DELETE
    un, _ = split_expected(cfg.profile, cfg.catalog, 3, vs)
    assert {"dangling_deletes", "undelete"} <= {v.property for v in un}
    # Without the planted bug the DELETE fails validation.
    cfg, m = model_of("spark-3.5-mor-snapshot", mix=("delete", "compact"), format_version=3)
    s = run(m, ["w1.begin#1", "w2.begin#0", "w1.refresh", "w1.cas", "w2.refresh"])
    assert s.writer("w2").history[-1].outcome == "validation_failed"
    assert evaluate(m, s) == []


def test_dangling_v2_planted_bug_resurrects_rows():
    cfg, m = planted("spark-3.5-mor-snapshot", _no_data_files_exist, mix=("delete", "compact"))
    s = run(m, ["w1.begin#1", "w2.begin#0", "w1.refresh", "w1.cas", "w2.refresh", "w2.cas"])
    vs = evaluate(m, s)
    dang = by_property(vs, "dangling_deletes")
    assert len(dang) == 1 and dang[0].severity == "finding"
    assert dang[0].details["classification"] == "resurrected"
    un, _ = split_expected(cfg.profile, cfg.catalog, 2, vs)
    assert {"dangling_deletes", "undelete"} <= {v.property for v in un}


# -- duplicate keys -----------------------------------------------------------------------------
def test_duplicate_keys_no_validation():
    cfg, m = model_of("no-validation", mix=("update",), keys=2)
    s = run(m, race(0, 1))  # UPDATE id=1 and UPDATE id=2 both rewrite the one data file
    vs = evaluate(m, s)
    dups = by_property(vs, "duplicate_keys")
    assert sorted(v.details["key"] for v in dups) == [0, 1, 2]   # 0: the bystander row
    assert not any(v.details["inserted_concurrently"] for v in dups)
    un, allowed = split_expected("no-validation", "cas", 2, vs)
    assert not un and allowed
    # The same violation in a profile where it must hold is unexpected.
    un, _ = split_expected("spark-3.5-cow-serializable", "cas", 2, dups)
    assert un == dups


def test_duplicate_keys_concurrent_merge_inserts_allowed_under_snapshot():
    # w3 deletes id=1; then w2 and w1 both MERGE id=1 (not found: insert) concurrently
    for profile in ("spark-3.5-cow-snapshot", "spark-3.5-cow-serializable"):
        cfg, m = model_of(profile, writers=3, mix=("delete", "merge"))
        actions = ["w3.begin#0", "w3.refresh", "w3.cas", "w2.begin#1", "w2.refresh",
                   "w1.begin#1", "w2.cas", "w1.refresh", "w1.cas"]
        if profile.endswith("serializable"):
            actions = actions[:-1]  # w1's refresh validates, and fails
        s = run(m, actions)
        vs = evaluate(m, s)
        if profile.endswith("snapshot"):
            dups = by_property(vs, "duplicate_keys")
            assert len(dups) == 1 and dups[0].details["inserted_concurrently"]
            iso = by_property(vs, "isolation")
            assert iso and all(v.details["on_absent_keys"] for v in iso)
            un, allowed = split_expected(profile, "cas", 2, vs)
            assert not un and len(allowed) == len(vs)
            assert "no primary keys" in allowed[0][1].reason
        else:
            assert s.writer("w1").history[-1].outcome == "validation_failed"
            assert vs == []


# -- consistent read ----------------------------------------------------------------------------
def test_consistent_read_catches_a_ghost_row():
    def ghost(cmd, op, kw):
        if cmd.kind == INSERT:
            w = kw["writer"]
            extra = kw["table"].data_file(f"{w.name}-{w.op_index + 1}-ghost", ((999, "ghost"),))
            return dataclasses.replace(op, add_data=op.add_data + (extra,))
        return op

    cfg, m = planted("spark-3.5-cow-serializable", ghost, writers=1, mix=("insert",))
    s = run(m, ["w1.begin", "w1.refresh", "w1.cas"])
    vs = evaluate(m, s)
    assert [v.property for v in vs] == ["consistent_read"]
    assert vs[0].details["key"] == 999 and vs[0].details["actual"] == [[999, "ghost"]]


def test_consistent_read_checks_every_version_not_only_the_head():
    cfg, m = model_of("spark-3.5-mor-snapshot", writers=3, mix=("delete", "update"))
    s = run(m, race(1, 0) + ["w3.begin#0", "w3.refresh", "w3.cas"])  # w3 deletes it again
    vs = evaluate(m, s)
    und = by_property(vs, "undelete")
    assert und and und[0].details["sequence_numbers"] == [3]  # visible at seq 3 only


# -- metadata integrity -------------------------------------------------------------------------
def _corrupt(model, state, **changes):
    from icecheck.models.catalog import CatalogState
    from icecheck.models.system import State
    meta = dataclasses.replace(state.metadata, path="corrupt.metadata.json", **changes)
    return State(CatalogState(meta.path, meta.version), state.store.put_all({meta.path: meta}),
                 state.writers)


def test_metadata_integrity_catches_corruption():
    cfg, m = model_of("spark-3.5-cow-serializable")
    s = run(m, ["w1.begin#2", "w1.refresh", "w1.cas", "w2.begin#2", "w2.refresh", "w2.cas"])
    assert evaluate(m, s) == []
    meta = s.metadata
    checks = lambda st: sorted({v.details["check"] for v in by_property(evaluate(m, st), "metadata_integrity")})
    assert checks(_corrupt(m, s, last_sequence_number=meta.last_sequence_number + 1)) == ["last_sequence_number"]
    last = meta.snapshots[-1]
    gap = dataclasses.replace(last, sequence_number=last.sequence_number + 1)
    assert "sequence" in checks(_corrupt(m, s, snapshots=meta.snapshots[:-1] + (gap,),
                                         last_sequence_number=gap.sequence_number))
    fork = dataclasses.replace(last, parent_id=meta.snapshots[0].snapshot_id)
    assert "linear" in checks(_corrupt(m, s, snapshots=meta.snapshots[:-1] + (fork,)))
    assert "once" in checks(_corrupt(m, s, snapshots=meta.snapshots + (last,)))
    un, _ = split_expected("no-validation", "last_writer_wins", 2,
                           evaluate(m, _corrupt(m, s, last_sequence_number=99)))
    assert un  # metadata integrity must hold everywhere
