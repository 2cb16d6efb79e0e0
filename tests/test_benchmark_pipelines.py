"""The realistic-pipeline benchmark (benchmarks/pipelines.py, ``--sections realistic``): its
pipeline files have the size issue 44 asks for and load, and the section runs end to end on a
tiny bound of states and writes its report. Counts only: the figures it measures are never
asserted."""

import glob
import json
import os

import pytest
import yaml

from benchmarks import pipelines as P
from benchmarks import run
from icecheck.pipelines.load import load_pipeline

FILES = P.pipeline_files()
TINY = 200


def test_there_is_one_pipeline_per_engine_mix():
    engines = {}
    for path in FILES:
        p = load_pipeline(path)
        engines[os.path.basename(path)] = (
            {prof.split("-")[0] for _, prof in p.jobs}, bool(p.schedule))
    mixes = {(frozenset(e), sched) for e, sched in engines.values()}
    assert (frozenset({"spark"}), False) in mixes
    assert (frozenset({"spark", "pyiceberg"}), False) in mixes
    assert (frozenset({"spark", "flink"}), False) in mixes
    assert any(sched for _, sched in mixes), "no pipeline has a schedule constraint"


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_benchmark_pipeline_loads_and_has_a_realistic_size(path):
    p = load_pipeline(path)
    with open(path) as f:
        doc = yaml.safe_load(f)
    assert 4 <= len(p.jobs) <= 6
    for job in doc["jobs"]:
        assert 1 <= len(job["program"]) <= 3, job["name"]
    assert len(doc["domain"]["keys"]) == 2 and len(doc["domain"]["partitions"]) == 2
    assert len(p.config.writers) == len(p.jobs)


def test_realistic_section_runs_end_to_end_on_a_tiny_bound(tmp_path):
    assert run.main(["--sections", "realistic", "--realistic-max-states", str(TINY),
                     "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "pipelines.json").read_text())
    assert doc["bounds"]["max_states"] == TINY
    rows = doc["pipelines"]
    assert [r["pipeline"] for r in rows] == [os.path.relpath(f, P.ROOT) for f in FILES]
    for r in rows:
        assert set(P.FIELDS) <= set(r), set(P.FIELDS) - set(r)
        # every one of these is far larger than the bound: cut by it, and said so
        assert 0 < r["states"] <= TINY and not r["complete"] and r["stopped"] == "max states"
        assert sum(r["level_sizes"]) == r["states"] and r["level_sizes"][0] == 1
        at = r["stopped_at"]
        assert at["depth"] == r["max_depth"] == len(r["level_sizes"]) - 1
        assert at["level_expanded"] == at["level_states"] == r["level_sizes"][-1]
        assert r["states"] + at["next_level_new_states"] > TINY
        failing = [a for a in r["anomalies"] if a["status"] != "allowed"]
        assert r["verdict"] == (P.FAIL if failing else P.INCONCLUSIVE)
        assert r["transitions"] >= r["states"] - 1
        assert r["peak_rss_mb"] > 0 and r["baseline_states_per_s"] > 0 and r["ratio"] > 0
        # the same search with the sleep sets alone, compared level by level
        lv = r["levers"]
        off = lv["sleep_sets_alone"]
        assert 0 < off["states"] <= TINY and sum(off["level_sizes"]) == off["states"]
        assert lv["depth"] == min(len(off["level_sizes"]), len(r["level_sizes"])) - 1
        assert lv["states_through_depth"] == [sum(off["level_sizes"][:lv["depth"] + 1]),
                                              sum(r["level_sizes"][:lv["depth"] + 1])]
        assert lv["states_through_depth"][1] <= lv["states_through_depth"][0]
    # benchmarks.json carries the section as every other one; the Markdown shows a row each
    assert json.loads((tmp_path / "benchmarks.json").read_text())["realistic"] == doc
    md = (tmp_path / "benchmarks.md").read_text()
    assert "## Pipelines of realistic size" in md
    for r in rows:
        assert f"| {os.path.basename(r['pipeline'])} | {r['jobs']} (" in md
    assert md.count("**no**: cut by max states") == len(rows)
    assert "sleep sets alone" in md
    assert all(r["data_symmetries"] == [] for r in rows)
    assert f"none of these {len(rows)} files admits one" in md
    for r in rows:
        lv = r["levers"]
        assert (f"| {os.path.basename(r['pipeline'])} | {lv['depth']} | "
                f"{lv['states_through_depth'][0]:,} | {lv['states_through_depth'][1]:,} | ") in md


def test_levers_compare_through_the_deepest_level_both_reached():
    off = {"states": 16, "transitions": 20, "complete": False, "seconds": 1.0,
           "level_sizes": [1, 3, 12], "peak_rss_mb": 1.0, "verdict": P.INCONCLUSIVE}
    on = {"level_sizes": [1, 3, 8, 20]}
    lv = P.levers(off, on)
    assert lv["depth"] == 2 and lv["states_through_depth"] == [16, 12] and lv["ratio"] == 0.75
    assert lv["sleep_sets_alone"]["level_sizes"] == [1, 3, 12]


def test_verdicts_and_where_a_search_stopped_render():
    assert P.verdict(True, 0) == P.PASS and P.verdict(False, 0) == P.INCONCLUSIVE
    assert P.verdict(False, 1) == P.FAIL and P.verdict(True, 2) == P.FAIL
    row = {"pipeline": "benchmarks/pipelines/x.yaml", "jobs": 5, "engines": ["a", "b"],
           "states": 1234, "transitions": 5678, "complete": False, "stopped": "time budget",
           "stopped_at": {"depth": 9, "level_states": 400, "level_expanded": 150},
           "seconds": 150.0, "first_anomaly": {"property": "dangling_deletes",
                                               "states_before": 99, "seconds": 1.5},
           "first_failure": None, "peak_rss_mb": 2048.0, "states_per_s": 8,
           "ratio": 0.05, "verdict": P.INCONCLUSIVE}
    done = dict(row, pipeline="y.yaml", complete=True, stopped=None, stopped_at=None,
                verdict=P.PASS)
    doc = {"bounds": P.FULL, "workers": 1, "date": "d", "mode": "full",
           "pipelines": [row, done]}
    md = "\n".join(P.render_lines(doc))
    assert ("| x.yaml | 5 (a, b) | 1,234 | 5,678 | **no**: cut by time budget in depth 9: 150 "
            "of its 400 states expanded | 150.0 | dangling_deletes: 99 states / 1.5 s | none | "
            "2,048 MB | 8 | 0.05 | **INCONCLUSIVE** |") in md
    assert "| y.yaml | 5 (a, b) | 1,234 | 5,678 | yes |" in md and "**PASS**" in md


def test_realistic_bounds_are_checked(tmp_path):
    with pytest.raises(SystemExit) as e:
        run.main(["--sections", "realistic", "--realistic-max-states", "0",
                  "--out", str(tmp_path)])
    assert e.value.code == 2


def test_data_symmetries_finds_a_renaming_only_where_the_file_allows_one(tmp_path):
    """Data symmetry (issue 44, item 2) can pay only on a file some renaming of its domain
    maps onto itself: found on a file whose two keys play the same part, not once a job names
    one of them, and on none of the benchmark's files (their constants tell keys apart)."""
    base = {"table": {"schema": {"id": "int", "day": "string", "v": "string"}},
            "catalog": {"kind": "cas"}, "domain": {"keys": [1, 2], "partitions": ["d1", "d2"]},
            "initial_rows": [[1, "d1", "v0"], [2, "d2", "v0"]], "key": "id",
            "jobs": [{"name": "a", "profile": "spark-3.5-mor-serializable",
                      "program": [{"sql": "DELETE", "where": "id = 1"}]},
                     {"name": "b", "profile": "spark-3.5-mor-serializable",
                      "program": [{"sql": "DELETE", "where": "id = 2"}]}]}
    f = tmp_path / "p.yaml"
    f.write_text(yaml.safe_dump(base))
    assert P.data_symmetries(str(f)) == ["1->2, 2->1, d1->d2, d2->d1"]
    base["jobs"][1]["program"] = [{"sql": "UPDATE", "where": "day = 'd2'", "set": {"v": "x"}}]
    f.write_text(yaml.safe_dump(base))
    assert P.data_symmetries(str(f)) == []
    examples = sorted(glob.glob(os.path.join(P.ROOT, "examples", "*.yaml")))
    assert examples
    for path in FILES + examples:
        assert P.data_symmetries(path) == [], path
