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
    assert doc["levers"] == ["doomed_swaps", "failed_records", "lost_attempts"]
    assert [r["subject"] for r in doc["subjects"]] == SUBJECTS.split(",")
    for row in doc["subjects"]:
        assert row["on"]["complete"] and row["on"]["off"] is None
        for lever, c in row["levers"].items():
            assert c["off"]["off"] == lever
            assert c["states"][0] >= c["states"][1] == row["on"]["states"]
            assert c["same"] and not c["differ"]
    # every lever drops states on the small configuration with a retry (measured here, not
    # pinned: tests/test_state_counts.py pins the counts)
    mor = doc["subjects"][0]["levers"]
    assert all(c["states"][0] > c["states"][1] for c in mor.values())
    md = (tmp_path / "reductions.md").read_text()
    assert md.count("| others:mor-snapshot-3w1op-r1 | ") == 3
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
