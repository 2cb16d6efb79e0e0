"""Findings: violations the properties report where the expectation table says they must hold.
They are reported, never allowed away (see the report for the discussion)."""

from _props_util import model_of, run

from icecheck.properties import evaluate, split_expected


def test_mor_serializable_v2_concurrent_deletes_of_one_row_both_commit():
    """Spark merge-on-read DELETE enables no delete-file check even under serializable, so two
    DELETEs of the same row both commit (format v2): a G-single (lost update) cycle. The table
    is the same as a serial order's (the row is gone), but the second DELETE reported deleting a
    row that was already deleted."""
    cfg, m = model_of("spark-3.5-mor-serializable", mix=("delete",))
    s = run(m, ["w1.begin", "w2.begin", "w1.refresh", "w1.cas", "w2.refresh", "w2.cas"])
    assert [r.outcome for w in s.writers for r in w.history] == ["committed", "committed"]
    un, _ = split_expected(cfg.profile, cfg.catalog, 2, evaluate(m, s))
    assert [(x.property, x.details["anomaly"], x.details["equivalent_writes"]) for x in un] == [
        ("isolation", "G-single", True)]
    # format v3: the concurrent DV is detected, the second DELETE aborts
    cfg, m = model_of("spark-3.5-mor-serializable", mix=("delete",), format_version=3)
    s = run(m, ["w1.begin", "w2.begin", "w1.refresh", "w1.cas", "w2.refresh"])
    assert s.writer("w2").history[-1].outcome == "validation_failed"


def test_partition_scoped_merges_are_not_an_anomaly():
    """Regression (issue: a false positive): two concurrent MERGEs of key 1, one restricted to
    partition dt='d1', the other to dt='d2', rewrite different rows; real Spark commits both
    (scenarios/builtin/regressions/merge-partition-scoped-where.yaml, agreed by
    `icecheck conform --target spark`). No interleaving may report a violation, and the
    unscoped twin (both MERGEs of one partition's row) still conflicts."""
    from icecheck.engines.config import ExploreConfig, _freeze
    from icecheck.engines.explicit import search

    def merge(w, dt, where=True):
        c = {"sql": "MERGE", "on": ["id"], "rows": [[1, dt, f"w{w}.1"]]}
        if where:
            c["where"] = f"dt = '{dt}'"
        return (_freeze(c),)

    def cfg(*writers):
        return ExploreConfig(profile="spark-3.5-mor-serializable",
                             schema=(("id", "int"), ("dt", "string"), ("v", "string")),
                             partition_spec=("identity(dt)",),
                             initial_rows=((1, "d1", "a"), (1, "d2", "a")),
                             writers=tuple((w,) for w in writers), name="merge-scoped")

    r = search(cfg(merge(1, "d1"), merge(2, "d2")), engine="bfs", symmetry=False, workers=1)
    assert r.complete and not r.violations and not r.allowed
    assert r.reached["concurrent_committed_writes"] > 0
    same = search(cfg(merge(1, "d1"), merge(2, "d1")), engine="bfs", symmetry=False, workers=1)
    assert same.complete and "validation_conflict" in same.reached



def test_a_delete_whose_where_misses_the_moved_row_is_no_undelete():
    """A MERGE moved id 1 from day d1 to d2 while a row-level DELETE ... WHERE day = 'd1' ran:
    the row left, (1, d2), is what "the MERGE, then the DELETE" leaves, so no undelete (it used
    to be one, must-hold); the isolation check reports the pair's reports, with
    delete_where_misses_new_version (a known Spark finding). Real Spark agrees
    (scenarios/builtin/commands/spark-mor-delete-vs-merge-moving-the-row-out-of-its-where.yaml)."""
    from icecheck.engines.config import ExploreConfig, _freeze
    from icecheck.properties import evaluate
    from icecheck.traces.execute import model_for, run_actions

    def cfg(delete_where, profile="spark-3.5-mor-serializable"):
        merge = {"sql": "MERGE", "on": ["id"], "rows": [[1, "d2", "w1.1"]]}
        delete = {"sql": "DELETE", "where": delete_where}
        return ExploreConfig(profile=profile,
                             schema=(("id", "int"), ("day", "string"), ("v", "string")),
                             partition_spec=("bucket(2, id)",),
                             initial_rows=((1, "d1", "v0"), (2, "d2", "v0")),
                             writers=(((_freeze(merge),),), ((_freeze(delete),),)), name="moved")

    def found(c):
        m = model_for(c)
        s = run_actions(m, ["w1.begin", "w2.begin", "w1.refresh", "w1.cas", "w2.refresh",
                            "w2.cas"]).final
        assert [r.outcome for w in s.writers for r in w.history] == ["committed", "committed"]
        return {v.property: v for v in evaluate(m, s)}

    got = found(cfg("day = 'd1'"))
    assert "undelete" not in got
    iso = got["isolation"].details
    assert iso["delete_where_misses_new_version"] and not iso["equivalent_writes"]
    assert "that write, then the DELETE" in got["isolation"].message
    # a DELETE of id = 1 (its WHERE selects the moved row; serializable refuses it on the
    # MERGE's new row): under snapshot isolation, an undelete still
    assert "undelete" in found(cfg("id = 1", "spark-3.5-mor-snapshot"))


def _judged(name):
    import os
    from icecheck.scenarios import BUILTIN_DIR
    from icecheck.scenarios.format import load_scenario
    from icecheck.scenarios.runner import run_scenario
    v = run_scenario(load_scenario(os.path.join(BUILTIN_DIR, *(
        name.split("/") if "/" in name else ("commands", name)))))
    assert not v.failures, v.failures
    return {p["property"]: p["status"] for p in v.properties}


def test_pyiceberg_dynamic_overwrite_keeps_a_concurrent_insert_without_an_anomaly():
    """PyIceberg's dynamic_partition_overwrite deletes the files it read (frozen at its base):
    a row Spark appended to the partition meanwhile stays, as in the serial order "overwrite,
    then append" (real PyIceberg agrees). The oracle used Spark's blind ReplacePartitions
    semantics for every engine and called it an undelete, must-hold."""
    assert _judged("mixed-pyiceberg-dynamic-overwrite-keeps-concurrent-spark-insert.yaml") == {}


def test_a_metadata_only_delete_and_a_row_level_delete_of_one_row_left_it_the_same():
    """Spark's double DELETE with one side metadata-only (a whole partition): the blind delete's
    rows are read off the lineage, so both left the key absent (equivalent writes): the known
    finding, not a must-hold violation (real Spark agrees)."""
    assert _judged("spark-mor-delete-after-metadata-delete-removed-its-file.yaml") == {
        "isolation": "known_finding", "dangling_deletes": "allowed"}


def test_a_delete_missing_a_concurrent_insert_of_its_key_is_no_undelete():
    """PyIceberg, snapshot isolation: w2's DELETE of id 1 (it read w2's own upserted row) misses
    w1's upsert, which found id 1 absent (before w2's first upsert committed) and inserted it
    meanwhile. The serial order w1.1, w2.1, w2.2 (the DELETE), w1.2 (the insert) explains what
    each read and the table, so nothing came back; the oracle's commit order called it an
    undelete (must-hold). The UPDATE undelete, whose writer read the row, stays one."""
    from icecheck.engines.config import mix_config
    from icecheck.properties import evaluate
    from icecheck.traces.execute import model_for, run_actions
    cfg = mix_config("pyiceberg-0.12-snapshot", 2, 2, ("merge", "delete"))
    m = model_for(cfg)
    s = run_actions(m, "w1.begin#1 w1.refresh w1.cas w2.begin w2.refresh w1.begin w1.refresh "
                       "w2.cas w1.cas w2.begin#1 w1.refresh w1.cas w2.refresh w2.cas w2.refresh "
                       "w2.cas".split()).final
    assert [r.outcome for w in s.writers for r in w.history] == ["committed"] * 4
    assert "undelete" not in {v.property for v in evaluate(m, s)}
    cfg, m = model_of("spark-3.5-mor-snapshot", mix=("delete", "update"))
    s = run(m, ["w1.begin", "w2.begin#1", "w2.refresh", "w2.cas", "w1.refresh", "w1.cas"])
    assert "undelete" in {v.property for v in evaluate(m, s)}


def test_a_no_op_update_then_a_compaction_leaves_a_harmless_delete_not_an_undelete():
    """An UPDATE that sets v to the value it had (merge-on-read: a position delete of the old
    row and a new row with the same values), then a compaction that rewrites the old file
    without it: the row visible is the UPDATE's. The dangling position delete is harmless; it
    used to be classified "resurrected" (must-hold) by comparing row values only."""
    from icecheck.engines.config import ExploreConfig, _freeze
    from icecheck.properties import evaluate
    from icecheck.traces.execute import model_for, run_actions
    update = {"sql": "UPDATE", "where": "id = 1", "set": {"v": "v0"}}
    cfg = ExploreConfig(profile="spark-3.5-mor-serializable",
                        initial_rows=((0, "v0"), (1, "v0")),
                        writers=(((_freeze(update),),), ((_freeze({"sql": "COMPACT"}),),)),
                        name="no-op update")
    m = model_for(cfg)
    s = run_actions(m, ["w1.begin", "w1.refresh", "w1.cas", "w2.begin", "w2.refresh",
                        "w2.cas"]).final
    found = {v.property: v for v in evaluate(m, s)}
    assert set(found) == {"dangling_deletes"}
    assert found["dangling_deletes"].details["classification"] == "harmless"
    assert found["dangling_deletes"].details["resurrected_rows"] == []


def test_a_v3_dv_added_after_its_file_was_removed_is_a_known_finding():
    """Format v3: a Spark row-level DELETE commits a DV for a file a concurrent metadata-only
    DELETE removed (real Spark does too): the dangling DV is the recorded finding (details
    added_after_removal), its G-single the known double DELETE; a DV left by a commit that
    removed its own file stays must-hold."""
    assert _judged("format_v3/spark-dv-added-after-metadata-delete-removed-its-file.yaml") == {
        "dangling_deletes": "known_finding", "isolation": "known_finding"}
    # the Java-level twin (raw operations, no engine profile): reported raw, as before
    assert _judged("format_v3/dv-vs-delete-files-dangling.yaml").get("dangling_deletes") == "raw"


def test_a_row_of_the_same_key_added_outside_a_delete_s_where_is_no_anti_dependency():
    """A DELETE ... WHERE day = 'd1' beside a concurrent INSERT of id 1 into day d2 (a table
    bucketed by id, key id): the INSERT changes nothing the DELETE read, so "INSERT, then
    DELETE" explains both; the isolation check used to draw an rw edge to it (a G-single,
    must-hold). An INSERT the DELETE's WHERE selects (id = 1) still is one (a phantom)."""
    from icecheck.engines.config import ExploreConfig, _freeze
    from icecheck.properties import evaluate
    from icecheck.traces.execute import model_for, run_actions

    def props(where, profile="spark-3.5-cow-serializable"):
        insert = {"sql": "INSERT", "rows": [[1, "d2", "w1.1"]]}
        delete = {"sql": "DELETE", "where": where}
        cfg = ExploreConfig(profile=profile,
                            schema=(("id", "int"), ("day", "string"), ("v", "string")),
                            partition_spec=("bucket(2, id)",),
                            initial_rows=((1, "d1", "v0"), (2, "d2", "v0")),
                            writers=(((_freeze(insert),),), ((_freeze(delete),),)), name="dup")
        m = model_for(cfg)
        s = run_actions(m, ["w1.begin", "w2.begin", "w1.refresh", "w1.cas", "w2.refresh",
                            "w2.cas"]).final
        assert [r.outcome for w in s.writers for r in w.history] == ["committed", "committed"]
        return {v.property: v for v in evaluate(m, s)}

    assert "isolation" not in props("day = 'd1'")
    phantom = props("id = 1", "spark-3.5-cow-snapshot")["isolation"]
    assert phantom.details["rw_into_concurrent_insert"]
