"""The reductions benchmark (benchmarks/reductions.py, ``bin/benchmark reductions``): it runs
end to end on small subjects, each lever off in a fresh process of its own, writes its report
(JSON and Markdown together), and refuses an unknown subject with exit 2. The figures it
measures are not asserted; what is: a lever turned off never drops states, and with it off the
verdicts, shortest lengths, outcomes and events are the same (what the levers must keep)."""

import json

from benchmarks import reductions as R

SUBJECTS = "others:mor-snapshot-3w1op-r1,examples:backfill-add-files-retried.yaml"


def test_reductions_benchmark_runs_end_to_end(tmp_path):
    assert R.main(["--subjects", SUBJECTS, "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "reductions.json").read_text())
    assert doc["levers"] == ["doomed_swaps", "failed_records", "lost_attempts", "lost_races",
                             "loss_counts"]
    assert [r["subject"] for r in doc["subjects"]] == SUBJECTS.split(",")
    for row in doc["subjects"]:
        assert row["on"]["complete"] and row["on"]["off"] is None
        for lever, c in row["levers"].items():
            assert c["off"]["off"] == lever
            assert c["states"][0] >= c["states"][1] == row["on"]["states"]
            assert c["same"] and not c["differ"]
    # every lever drops states on one of the two (measured here, not pinned: tests/
    # test_state_counts.py pins the counts): the first three on the small configuration with
    # a retry, the merged lost races on the example whose backfill retries (with one retry,
    # a writer that lost once can lose no more only when nothing else is left to commit)
    mor, backfill = (row["levers"] for row in doc["subjects"])
    assert all(mor[k]["states"][0] > mor[k]["states"][1]
               for k in ("doomed_swaps", "failed_records", "lost_attempts"))
    assert backfill["lost_races"]["states"][0] > backfill["lost_races"]["states"][1]
    md = (tmp_path / "reductions.md").read_text()
    assert md.count("| others:mor-snapshot-3w1op-r1 | ") == 5
    assert "## Doomed swaps explored alone" in md and "| yes |" in md
    # --markdown-only writes the same Markdown from the JSON
    (tmp_path / "reductions.md").write_text("")
    assert R.main(["--markdown-only", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "reductions.md").read_text() == md


def test_an_unknown_subject_exits_2(tmp_path, capsys):
    assert R.main(["--subjects", "examples:nope.yaml", "--out", str(tmp_path)]) == 2
    assert "--subjects: unknown subject 'examples:nope.yaml'" in capsys.readouterr().err
    assert not (tmp_path / "reductions.json").exists()


def test_the_groups_name_every_subject():
    names = R.subjects(R.GROUPS)
    assert "canonical:spark-3.5-mor-serializable" in names
    assert "examples:no-cas-catalog.yaml" in names and "realistic:spark-only.yaml" in names
    for name in names:
        R.config_of(name)          # each names a configuration


def test_an_unknown_lever_exits_2(tmp_path, capsys):
    assert R.main(["--levers", "lost_races,nope", "--out", str(tmp_path)]) == 2
    assert "--levers: unknown lever 'nope'" in capsys.readouterr().err


def test_keep_merges_the_levers_not_run_again():
    """``--keep``: a run of one lever keeps the other levers' rows of the report it updates,
    for the subjects both runs have, and says which run each lever's rows come from."""
    old = {"date": "old", "levers": ["a", "b"], "subjects": [
        {"subject": "s1", "on": {}, "levers": {"a": {"x": 1}, "b": {"x": 2}}},
        {"subject": "s2", "on": {}, "levers": {"a": {"x": 3}, "b": {"x": 4}}}]}
    new = {"date": "new", "levers": ["b"], "subjects": [
        {"subject": "s1", "on": {}, "levers": {"b": {"x": 5}}}]}
    doc = R.kept(new, old)
    assert doc["levers"] == ["a", "b"] and doc["runs"] == {"a": "old", "b": "new"}
    assert doc["subjects"] == [{"subject": "s1", "on": {},
                                "levers": {"a": {"x": 1}, "b": {"x": 5}}}]
