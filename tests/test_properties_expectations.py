"""The expectation table (expectations.yaml) and the reachability events."""

import pytest

from _props_util import explore, model_of, run

from icecheck.properties import (EVENTS, PROPERTIES, SITUATIONS, Expectation, Violation,
                                 expectation, reached, split_expected)
from icecheck.properties.expectations import load_rules


def v(prop, severity="violation", **details):
    return Violation(prop, "m", severity, details)


def test_table_is_well_formed():
    rules = load_rules()
    assert rules and all(r["reason"] for r in rules)
    assert set(SITUATIONS) == set(PROPERTIES)
    assert all(e in EVENTS for evs in SITUATIONS.values() for e in evs)


@pytest.mark.parametrize("profile", ["spark-3.5-cow-serializable", "spark-3.5-mor-serializable",
                                     "pyiceberg-0.12-serializable"])
def test_serializable_profiles_allow_no_cycle(profile):
    for anomaly in ("G0", "G1c", "G-single", "G2-item"):
        e = expectation(profile, "cas", 2, v("isolation", anomaly=anomaly, on_absent_keys=True))
        assert e.status == "must_hold"


def test_snapshot_profiles():
    p = "spark-3.5-mor-snapshot"
    assert expectation(p, "cas", 2, v("isolation", anomaly="G2-item")).status == "allowed"
    # G-single whose anti-dependency points at a concurrent insert: Iceberg SI's documented
    # blind spot (it never validates concurrently added data files)
    assert expectation(p, "cas", 2, v("isolation", anomaly="G-single", on_absent_keys=True,
                                      rw_into_concurrent_insert=True)).status == "allowed"
    assert expectation(p, "cas", 2, v("isolation", anomaly="G-single", on_absent_keys=False,
                                      rw_into_concurrent_insert=True)).status == "allowed"
    # the Vanlightly undelete: G-single on an existing key, and an undelete: never allowed;
    # on v2 it is a recorded known finding (still reported as a violation), on v3 it must hold
    g_single = v("isolation", anomaly="G-single", on_absent_keys=False, equivalent_writes=False)
    assert expectation(p, "cas", 2, g_single).status == "known_finding"
    assert expectation(p, "cas", 2, v("undelete")).status == "known_finding"
    assert expectation(p, "cas", 3, v("undelete")).status == "must_hold"
    assert expectation(p, "cas", 3, g_single).status == "must_hold"
    unexpected, allowed = split_expected(p, "cas", 2, [v("undelete")])
    assert [x.property for x in unexpected] == ["undelete"] and not allowed
    e = expectation(p, "cas", 2, v("duplicate_keys", inserted_concurrently=True,
                                   involves_concurrent_insert=True))
    assert e.status == "allowed" and "no primary keys" in e.reason
    assert expectation(p, "cas", 2, v("duplicate_keys", inserted_concurrently=False,
                                      involves_concurrent_insert=False)).status == "must_hold"


def test_catalog_and_format_rules():
    e = expectation("spark-3.5-cow-serializable", "last_writer_wins", 2,
                    v("lost_write", level="catalog"))
    assert e == Expectation("allowed", e.reason) and "not a compare-and-swap" in e.reason
    assert expectation("spark-3.5-cow-serializable", "cas", 2,
                       v("lost_write", level="catalog")).status == "must_hold"
    assert expectation("spark-3.5-mor-snapshot", "cas", 2,
                       v("dangling_deletes", "finding", content="position_deletes",
                         classification="harmless")).status == "allowed"
    assert expectation("no-validation", "cas", 3,
                       v("dangling_deletes", content="dv", classification="dv")).status == "must_hold"
    assert expectation("no-validation", "cas", 2, v("undelete")).status == "allowed"
    assert expectation("no-validation", "cas", 2, v("metadata_integrity")).status == "must_hold"
    assert expectation("no-validation", "cas", 2, v("isolation", anomaly="G1c")).status == "must_hold"


def test_mixed_rules_name_the_engines_of_a_mixed_run(tmp_path):
    """A ``mixed:`` rule judges only a run on those engines together (before the strictest of
    the writers' own expectations); it never applies to one engine alone."""
    dup = v("duplicate_keys", inserted_concurrently=True, involves_concurrent_insert=True,
            insert_only_merge=False)
    spark, py = "spark-3.5-cow-serializable", "pyiceberg-0.12-serializable"
    e = expectation((py, spark), "cas", 2, dup)
    assert e.status == "known_finding" and "mixed-spark-merge-pyiceberg" in e.trace
    # insert-only MERGEs on both sides: Spark's own known finding, not the mixed one
    only = v("duplicate_keys", inserted_concurrently=True, involves_concurrent_insert=True,
             insert_only_merge=True)
    assert "mixed" not in expectation((py, spark), "cas", 2, only).trace
    assert expectation(spark, "cas", 2, dup).status == "must_hold"      # Spark alone validates
    # other pairs: the strictest of the writers' expectations, as before
    assert expectation((spark, "no-validation"), "cas", 2, dup).status == "must_hold"
    assert expectation((py, spark), "cas", 2, v("undelete")).status == "must_hold"
    bad = tmp_path / "t.yaml"
    bad.write_text("rules:\n  - property: undelete\n    mixed: [spark-*]\n"
                   "    status: allowed\n    reason: r\n")
    from icecheck.scenarios.errors import InputError
    with pytest.raises(InputError, match="'mixed' lists 2 or more"):
        load_rules(str(bad))


def test_split_expected():
    vs = [v("undelete"), v("isolation", anomaly="G2-item")]
    un, allowed = split_expected("spark-3.5-cow-snapshot", "cas", 2, vs)
    assert un == [vs[0]] and allowed[0][0] == vs[1] and allowed[0][1].status == "allowed"


def test_every_sometimes_event_is_reached():
    events = set()
    configs = [
        dict(profile="spark-3.5-mor-snapshot", writers=2,
             mix=("delete", "update", "insert", "merge", "compact"), faults=True, crashes=True),
        dict(profile="spark-3.5-mor-serializable", writers=2, mix=("delete", "update"),
             format_version=3),
        dict(profile="spark-3.5-cow-snapshot", writers=3, mix=("delete", "merge")),
        dict(profile="spark-3.5-cow-serializable", writers=2, mix=("insert",),
             catalog="last_writer_wins"),
        dict(profile="spark-3.5-cow-serializable", writers=2, mix=("insert",),
             properties={"commit.retry.num-retries": 0}),
        # a PyIceberg DELETE matching no row ends noop at its commit (Spark commits an empty
        # snapshot instead)
        dict(profile="pyiceberg-0.12-serializable", writers=2, mix=("delete", "insert")),
    ]
    for kw in configs:
        profile = kw.pop("profile")
        cfg, m = model_of(profile, **kw)
        for s, _ in explore(cfg, m):
            events |= reached(m, s)
    # Snapshot expiry is not an exploration command (yet): its event is reached by the
    # built-in expiry scenarios.
    import glob
    import os

    from icecheck.scenarios import BUILTIN_DIR
    from icecheck.scenarios.format import load_scenario
    from icecheck.scenarios.runner import execute_scenario, model_config
    from icecheck.models.system import Model
    for path in sorted(glob.glob(os.path.join(BUILTIN_DIR, "expiry", "*.yaml"))):
        sc = load_scenario(path)
        cfg = model_config(sc)
        _, s = execute_scenario(sc, cfg)
        events |= reached(Model(cfg), s)
    # streaming sinks that restart (models/lifecycle.py): a Flink sink restored after an
    # expiry (its restore fails), and a Spark sink re-running a committed epoch (skipped)
    from icecheck.engines.config import ExploreConfig

    def d(**k):
        return tuple(sorted(k.items()))
    batch = ((d(sql="INSERT", rows=((10, "s"),)),),)
    for prof, others in (("flink-1.20-upsert", (((d(sql="INSERT", rows=((20, "o"),)),),),
                                                ((d(sql="EXPIRE", retain_last=1),),))),
                         ("spark-3.5-cow-serializable", ())):
        scfg = ExploreConfig(profile=prof, writers=(batch,) + others, initial_rows=((1, "v0"),),
                             writer_profiles=("",) + ("spark-3.5-cow-serializable",) * len(others),
                             sinks=((1, 1, ("checkpoint",)),))
        from _search_util import walk
        ex, states = walk(scfg, 100_000)
        for s in states:
            events |= reached(ex.model, s)
    assert set(EVENTS) - events == set()


def test_reached_on_a_lost_race():
    cfg, m = model_of("spark-3.5-cow-serializable", mix=("insert",))
    s = run(m, ["w1.begin", "w2.begin", "w1.refresh", "w2.refresh", "w1.cas", "w2.cas",
                "w2.refresh", "w2.cas"])
    ev = reached(m, s)
    assert {"commit", "lost_race", "retry_committed", "shared_base",
            "concurrent_committed_writes", "commit_from_stale_base"} <= ev


def test_mixed_ties_take_the_reason_of_the_engine_that_promises_most():
    """Two Spark snapshot-isolation MERGEs duplicating a key beside a Flink sink: allowed by
    both profiles; the reason given is Spark's snapshot isolation, not the sink's lack of
    validation."""
    from icecheck.properties import expectation
    from icecheck.properties.violation import VIOLATION, Violation
    v = Violation("duplicate_keys", "x", VIOLATION,
                  {"inserted_concurrently": True, "involves_concurrent_insert": True,
                   "insert_only_merge": False})
    e = expectation(("flink-1.20-upsert", "spark-3.5-mor-snapshot"), "cas", 2, v)
    assert e.status == "allowed" and "snapshot isolation" in e.reason


def test_mixed_runs_judge_a_violation_by_the_writers_it_involves():
    """Two Spark merge-on-read DELETEs of one row beside a PyIceberg script that took no part:
    the Spark double delete (a known finding) stays one; judged by every writer's profile, the
    PyIceberg script's stricter expectation made it must-hold. A violation naming both engines'
    writers keeps the strictest of the two."""
    from icecheck.properties.expectations import involved_writers
    mixed = ("pyiceberg-0.12-serializable", "spark-3.5-mor-serializable")
    profiles = {"w1": "pyiceberg-0.12-serializable", "w2": "spark-3.5-mor-serializable",
                "w3": "spark-3.5-mor-serializable"}
    double = v("isolation", anomaly="G-single", equivalent_writes=True, on_absent_keys=False,
               ops=["w2.1", "w3.1"], cycle=[["w2.1", "w3.1", "ww", 1], ["w3.1", "w2.1", "rw", 1]])
    assert involved_writers(double) == {"w2", "w3"}
    # judged by the run's profiles as a whole, the mixed rule of a Spark DELETE and a PyIceberg
    # delete answers (before it, the PyIceberg script's stricter expectation: must-hold)
    whole = expectation(mixed, "cas", 2, double)
    assert whole.trace.endswith("isolation-mixed-spark-mor-delete-pyiceberg-delete.json")
    e = expectation(mixed, "cas", 2, double, profiles.get)
    assert e.status == "known_finding" and e.trace.endswith("double-delete-v2-mor-serializable.json")
    both = v("isolation", anomaly="G-single", equivalent_writes=False, on_absent_keys=False,
             ops=["w1.1", "w3.1"])
    assert expectation(mixed, "cas", 2, both, profiles.get).status == "must_hold"
    # ... unless a mixed rule names that pair: the Spark DELETE that committed after a
    # PyIceberg delete of the same row removed its file
    both_deleted = v("isolation", anomaly="G-single", equivalent_writes=True,
                     on_absent_keys=False, ops=["w1.1", "w3.1"])
    e = expectation(mixed, "cas", 2, both_deleted, profiles.get)
    assert e.status == "known_finding"
    assert e.trace.endswith("isolation-mixed-spark-mor-delete-pyiceberg-delete.json")
    # a violation naming no writer is judged by the run as a whole
    nobody = v("isolation", anomaly="G-single", equivalent_writes=False, on_absent_keys=False)
    assert expectation(mixed, "cas", 2, nobody, profiles.get).status == "must_hold"
    nobody = v("isolation", anomaly="G-single", equivalent_writes=True, on_absent_keys=False)
    assert expectation(mixed, "cas", 2, nobody, profiles.get) == whole


def test_every_known_finding_says_where_it_stands_upstream():
    """Each known finding carries a valid ``upstream`` entry (shown beside it so a reader knows
    whether to report it, follow an issue or upgrade), and no other rule has one."""
    from icecheck.properties.expectations import (UPSTREAM_REF, UPSTREAM_STATUSES,
                                                  upstream_text)
    rules = load_rules()
    known = [r for r in rules if r["status"] == "known_finding"]
    assert len(known) >= 24
    assert not [r for r in rules if r["status"] != "known_finding" and "upstream" in r]
    heads = {"reported": "reported upstream: ", "not_reported": "not reported upstream",
             "published": "published", "fixed": "fixed "}
    for r in known:
        u = r["upstream"]
        assert set(u) <= {"status", "ref", "fixed_in", "note"} and u["status"] in UPSTREAM_STATUSES
        refs = u.get("ref", [])
        refs = refs if isinstance(refs, list) else [refs]
        assert all(isinstance(x, str) and UPSTREAM_REF.match(x) for x in refs)
        assert bool(refs) or u["status"] != "reported"
        assert "fixed_in" not in u or u["status"] == "fixed"
        assert all(isinstance(u[k], str) and u[k].strip() for k in ("note", "fixed_in") if k in u)
        text = upstream_text(r)
        assert text.startswith(heads[u["status"]]) and "\n" not in text
        assert all(x in text for x in refs)
    # the known upstream bug names its issue and the proposed fix
    compaction = [r for r in known if r.get("details") == {"deletes_dropped_by_rewrite": True}]
    assert [upstream_text(r) for r in compaction] == [
        "reported upstream: apache/iceberg#10312 (open); fix proposed in apache/iceberg#10962 "
        "(open); the code is unchanged on apache/iceberg main (fetched 2026-11-22)"]
    assert upstream_text({"upstream": {"status": "fixed", "ref": "apache/iceberg-python#1 (merged)",
                                       "fixed_in": "0.13.0"}}) == (
        "fixed in PyIceberg 0.13.0 (apache/iceberg-python#1 (merged))")
    assert upstream_text({"status": "must_hold", "reason": "r"}) == ""


def test_a_known_findings_expectation_carries_its_upstream_status():
    """``Expectation.upstream``: set from the rule that decides, kept through a mixed run's
    rule, the last committer's judgement and a team's acceptance; empty for other verdicts."""
    from icecheck.properties.expectations import (_responsible, accepted, for_readers,
                                                  upstream_text)
    si = "spark-3.5-mor-snapshot"
    e = expectation(si, "cas", 2, v("undelete"))
    assert e.status == "known_finding"
    assert e.upstream.startswith("published (Jack Vanlightly, 2024")
    assert e.upstream == upstream_text(next(r for r in load_rules()
                                            if r.get("trace") == e.trace
                                            and r["property"] == "undelete"))
    cdc = expectation("spark-3.5-cow-serializable", "cas", 2,
                      v("undelete", deletes_dropped_by_rewrite=True))
    assert cdc.upstream.startswith("reported upstream: apache/iceberg#10312 (open)")
    # a mixed rule
    dup = v("duplicate_keys", inserted_concurrently=True, involves_concurrent_insert=True,
            insert_only_merge=False)
    mixed = expectation(("pyiceberg-0.12-serializable", "spark-3.5-cow-serializable"), "cas", 2,
                        dup)
    assert mixed.status == "known_finding" and mixed.upstream.startswith("not reported upstream (")
    # judged under the last committer's profile
    r = _responsible(si, "w2", "cas", 2, v("undelete"))
    assert r.reason.startswith("Judged under") and r.upstream == e.upstream
    # a team's gate keeps a known finding as it is; an acceptance keeps its upstream status
    assert for_readers(e, v("undelete")) is e
    a = accepted(e, v("undelete", who="w1.1"), [("undelete", (), "we compact nightly")])
    assert (a.status, a.accepted_from, a.upstream) == ("allowed", "known_finding", e.upstream)
    # other verdicts have none
    assert expectation(si, "cas", 3, v("undelete")).upstream == ""
    assert expectation(si, "cas", 2, v("isolation", anomaly="G2-item")).upstream == ""
    readers = for_readers(expectation("no-validation", "cas", 2, v("undelete")), v("undelete"))
    assert readers.status == "must_hold" and readers.upstream == ""


def test_a_traces_expectation_shows_the_upstream_status_of_a_known_finding():
    """``build_trace`` adds ``expectation.upstream`` for a known finding only: a trace of any
    other verdict keeps its form (the corpus' allowed traces are rebuilt unchanged)."""
    import json
    import os

    from icecheck.engines.config import ExploreConfig
    from icecheck.traces.execute import build_trace

    root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "traces")

    def rebuilt(name):
        with open(os.path.join(root, name), encoding="utf-8") as f:
            doc = json.load(f)
        return doc, build_trace(ExploreConfig.from_json(doc["config"]), doc["actions"],
                                property=doc["property"], trace_id=doc["id"])

    doc, new = rebuilt("undelete-v2-mor-snapshot.json")
    e = expectation("spark-3.5-mor-snapshot", "cas", 2, v("undelete"))
    assert new["expectation"] == {"status": "known_finding", "reason": e.reason,
                                  "trace": e.trace, "upstream": e.upstream}
    doc, new = rebuilt("lost-write-last-writer-wins.json")
    assert new["kind"] == "allowed" and new["expectation"] == doc["expectation"]
    assert "upstream" not in new["expectation"]


UPSTREAM_RULE = ("rules:\n"                             # line 1
                 "  - property: undelete\n"             # 2
                 "    status: {status}\n"               # 3
                 "    trace: traces/t.json\n"           # 4
                 "    reason: r\n"                      # 5
                 "{upstream}")                          # 6...


@pytest.mark.parametrize("status, upstream, message, line", [
    ("allowed", "    upstream: {status: published, note: n}\n",
     "'upstream' belongs to known_finding rules only", 6),
    ("known_finding", "", "a known_finding rule needs 'upstream'", 2),
    ("known_finding", "    upstream: published\n", "'upstream' must be a mapping", 6),
    ("known_finding", "    upstream:\n      status: open\n", "upstream status must be one of", 7),
    ("known_finding", "    upstream:\n      status: reported\n      ref: iceberg 10312\n",
     "upstream ref must be an issue or pull request", 8),
    ("known_finding", "    upstream:\n      status: reported\n      ref: [apache/iceberg#1, 2]\n",
     "upstream ref must be an issue or pull request", 8),
    ("known_finding", "    upstream:\n      status: reported\n",
     "upstream status reported needs the issue", 7),
    ("known_finding", "    upstream:\n      status: reported\n      ref: apache/iceberg#1\n"
                      "      fixed_in: '1.11.0'\n", "upstream fixed_in is for status fixed", 9),
    ("known_finding", "    upstream:\n      status: fixed\n",
     "upstream status fixed needs the release", 7),
    ("known_finding", "    upstream:\n      status: not_reported\n",
     "upstream status not_reported needs a note", 7),
    ("known_finding", "    upstream:\n      status: not_reported\n      note: 5\n",
     "upstream note must be a non-empty string", 8),
    ("known_finding", "    upstream:\n      status: published\n      note: n\n      url: u\n",
     "unknown key 'url'", 9),
])
def test_a_malformed_upstream_entry_names_its_line(tmp_path, status, upstream, message, line):
    from icecheck.scenarios.errors import InputError
    bad = tmp_path / "t.yaml"
    bad.write_text(UPSTREAM_RULE.format(status=status, upstream=upstream))
    with pytest.raises(InputError, match=message) as err:
        load_rules(str(bad))
    assert err.value.path == str(bad) and err.value.line == line
