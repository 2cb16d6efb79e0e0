"""The split-search benchmark (benchmarks/split.py, ``bin/benchmark split``): it runs end to end
on a tiny bound of states per part, writes its report (JSON and Markdown together), keeps the
rows of files not run with ``--keep``, and refuses bad options with exit 2. Counts only: the
figures it measures are never asserted."""

import json

import pytest

from benchmarks import split as S

TINY = 150


def _run(tmp_path, *args):
    return S.main(["--files", "scheduled.yaml", "--max-states", str(TINY), "--workers", "2",
                   "--out", str(tmp_path), *args])


def test_split_benchmark_runs_end_to_end_on_a_tiny_bound(tmp_path):
    assert _run(tmp_path) == 0
    doc = json.loads((tmp_path / "split.json").read_text())
    assert doc["bounds"]["max_states"] == TINY and doc["workers"] == 2
    (r,) = doc["pipelines"]
    assert r["pipeline"] == "benchmarks/pipelines/scheduled.yaml"
    assert r["parts"] == r["combinations"] == 8
    # every part is far larger than the bound: each is cut by it, and the file is unproven
    assert not r["complete"] and r["stopped"] == "max states"
    assert 0 < r["states"] <= TINY * r["parts"] and r["verdict"] == "INCONCLUSIVE"
    assert r["cpu_seconds"] > 0 and r["part_peak_rss_mb"] > 0 and r["ratio"] > 0
    md = (tmp_path / "split.md").read_text()
    assert f"| scheduled.yaml | 5 | 8 | {r['states']:,} | **no**: max states |" in md
    assert len(r["part_results"]) == 8 and sum(q["states"] for q in r["part_results"]) == \
        r["states"]
    assert "* scheduled.yaml: " in md
    # --markdown-only writes the same Markdown from the JSON
    (tmp_path / "split.md").write_text("")
    assert S.main(["--markdown-only", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "split.md").read_text() == md


def test_keep_keeps_the_rows_of_files_not_run(tmp_path):
    assert _run(tmp_path) == 0
    old = json.loads((tmp_path / "split.json").read_text())
    other = dict(old["pipelines"][0], pipeline="benchmarks/pipelines/spark-only.yaml", states=7)
    old.update(date="2026-01-01 00:00:00", pipelines=[other])
    (tmp_path / "split.json").write_text(json.dumps(old))
    assert _run(tmp_path, "--keep") == 0
    doc = json.loads((tmp_path / "split.json").read_text())
    assert [r["pipeline"] for r in doc["pipelines"]] == [
        "benchmarks/pipelines/scheduled.yaml", "benchmarks/pipelines/spark-only.yaml"]
    assert doc["pipelines"][1]["states"] == 7
    assert doc["kept_from"] == "2026-01-01 00:00:00"
    assert "kept from the run of 2026-01-01 00:00:00" in (tmp_path / "split.md").read_text()


@pytest.mark.parametrize("args", [["--files", "nope.yaml"], ["--workers", "0"],
                                  ["--budget", "0"]])
def test_bad_options_exit_2(args, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        S.main([*args, "--out", str(tmp_path)])
    assert e.value.code == 2
    assert args[0] in capsys.readouterr().err


def test_compiled_without_a_usable_build_exits_2(tmp_path, capsys, monkeypatch):
    """--compiled checks the build before any search (not a traceback from a child that
    refused it)."""
    monkeypatch.setenv("ICECHECK_COMPILED_DIR", str(tmp_path / "nothing-here"))
    with pytest.raises(SystemExit) as e:
        S.main(["--compiled", "--files", "scheduled.yaml", "--out", str(tmp_path)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--compiled: no compiled build in" in err and "bin/icecheck compile" in err
    assert not (tmp_path / "split.json").exists()


def test_keep_keeps_a_files_row_on_the_other_build(tmp_path):
    """A file's row on the compiled build and its row on the Python source are two rows: a run
    on one build with --keep replaces only that build's row."""
    assert _run(tmp_path) == 0
    old = json.loads((tmp_path / "split.json").read_text())
    compiled = dict(old["pipelines"][0], compiled=True, states=7)
    old["pipelines"].append(compiled)
    (tmp_path / "split.json").write_text(json.dumps(old))
    assert _run(tmp_path, "--keep") == 0
    doc = json.loads((tmp_path / "split.json").read_text())
    assert [(r["pipeline"], r["compiled"]) for r in doc["pipelines"]] == [
        ("benchmarks/pipelines/scheduled.yaml", False),
        ("benchmarks/pipelines/scheduled.yaml", True)]
    assert doc["pipelines"][1]["states"] == 7 and doc["pipelines"][0]["states"] != 7
    md = (tmp_path / "split.md").read_text()
    assert "| scheduled.yaml (compiled build) | 5 | 8 | 7 |" in md
    assert "* scheduled.yaml (compiled build): " in md
