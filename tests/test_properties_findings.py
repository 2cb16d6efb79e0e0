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
