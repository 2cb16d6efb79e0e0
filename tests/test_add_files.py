"""ADD_FILES: registering an external Parquet file (PyIceberg's ``add_files``, Spark's
``add_files`` procedure), its once-only duplicate check, and what the properties say when two
overlapping calls both commit the file (docs/findings.md)."""

import subprocess
import sys
import textwrap

import pytest
from _props_util import model_of, run

from icecheck.models.commands import PY_ALREADY_REFERENCED, SPARK_DUPLICATE_FILES
from icecheck.properties import evaluate, split_expected
from icecheck.properties.expectations import is_known_finding

SERIAL = ["w1.begin", "w1.refresh", "w1.cas", "w2.begin"]
# the shortest overlaps the explorer finds (traces/duplicate-keys-*-add-files-twice.json):
# PyIceberg's first attempt swaps without a refresh, loses, and its retry commits
OVERLAP = {"pyiceberg": ["w1.begin", "w1.refresh", "w2.begin", "w2.refresh", "w1.cas", "w2.cas",
                         "w2.refresh", "w2.cas"],
           "spark": ["w1.begin", "w2.begin", "w1.refresh", "w1.cas", "w2.refresh", "w2.cas"]}


@pytest.mark.parametrize("profile", ["pyiceberg-0.12-serializable", "spark-3.5-cow-serializable",
                                     "spark-3.5-mor-snapshot"])
def test_overlapping_add_files_both_commit_and_rows_are_read_twice(profile):
    from icecheck.models.reads import live_data_entries

    cfg, m = model_of(profile, mix=("add_files",))
    s = run(m, OVERLAP[profile.split("-")[0]])
    assert [w.history[-1].outcome for w in s.writers] == ["committed", "committed"]
    live = [e.file.path for e in live_data_entries(s.store, s.metadata.current)]
    assert live.count("ext/backfill") == 2
    unexpected, allowed = split_expected(cfg.profile, cfg.catalog, 2, evaluate(m, s))
    assert allowed == []
    assert [v.property for v in unexpected] == ["duplicate_keys"]   # a violation, reported
    dup = unexpected[0]
    assert dup.details["file_added_twice"] is True
    assert is_known_finding(cfg.profile, cfg.catalog, 2, dup)        # confirmed on the library
    assert "lists the external file ext/backfill twice: w1, w2" in dup.message


@pytest.mark.parametrize("profile,message", [
    ("pyiceberg-0.12-serializable", PY_ALREADY_REFERENCED + "ext/backfill"),
    ("spark-3.5-cow-serializable", SPARK_DUPLICATE_FILES.format("ext/backfill")),
])
def test_a_later_add_files_is_refused_as_it_begins_in_its_engine_words(profile, message):
    cfg, m = model_of(profile, mix=("add_files",))
    s = run(m, SERIAL)
    rec = s.writer("w2").history[-1]
    assert (rec.outcome, rec.check, rec.message) == ("validation_failed", "duplicate_files",
                                                     message)
    assert rec.operation is None                 # nothing written, nothing committed
    assert split_expected(cfg.profile, cfg.catalog, 2, evaluate(m, s)) == ([], [])


def test_without_the_check_a_second_add_files_is_what_the_user_asked_for(tmp_path):
    """check_duplicate_files false: the file is registered again, its rows are read twice,
    and no property calls that an anomaly (the commit-order oracle appends both)."""
    from icecheck.scenarios.format import load_scenario
    from icecheck.scenarios.runner import run_scenario

    p = tmp_path / "s.yaml"
    p.write_text(textwrap.dedent("""\
        version: 1
        profile: pyiceberg-0.12-serializable
        table: {schema: {id: int, v: string}}
        files: {d1: {rows: [[1, a]]}}
        steps:
          - commit: {op: append, add: [d1]}
          - begin: w1
            command: {sql: ADD_FILES, file: f, rows: [[2, b]], check_duplicate_files: false}
          - begin: w2
            command: {sql: ADD_FILES, file: f, rows: [[2, b]], check_duplicate_files: false}
          - commit: w1
          - commit: w2
        expect: {rows: [[1, a], [2, b], [2, b]]}
        """))
    verdict = run_scenario(load_scenario(str(p)))
    assert verdict.passed, verdict.failures
    assert verdict.rows == [[1, "a"], [2, "b"], [2, "b"]]
    assert verdict.properties == []


BAD = """\
version: 1
profile: pyiceberg-0.12-serializable
table:
  schema: {id: int, v: string}
  partition_spec: [identity(v)]
steps:
  - begin: w1
    command: {sql: ADD_FILES, %s}
"""


@pytest.mark.parametrize("command,fragment", [
    ("file: 'a/b', rows: [[1, x]]", "ADD_FILES file must be a file name"),
    ("rows: [[1, x]]", "ADD_FILES file must be a file name"),
    ("file: f", "ADD_FILES needs rows"),
    ("file: f, rows: [[1, x]], check_duplicate_files: 'yes'",
     "check_duplicate_files must be true or false, got a string"),
    ("file: f, rows: [[1, x], [2, y]]", "the file's rows must all fall in one partition"),
    ("file: f, rows: [[1, x]], where: 'id = 1'", "unknown key 'where'"),
])
def test_bad_add_files_exits_2_naming_file_and_line(tmp_path, command, fragment):
    p = tmp_path / "bad.yaml"
    p.write_text(BAD % command)
    r = subprocess.run([sys.executable, "-m", "icecheck", "scenario", "run", str(p)],
                       capture_output=True, text=True)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{p}:8" in r.stderr and fragment in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_flink_has_no_add_files_rule():
    from icecheck.models.profiles import get_profile
    assert "ADD_FILES" not in get_profile("flink-1.20-upsert").commands
