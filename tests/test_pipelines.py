"""Pipeline files: every shipped example runs (bounded by its own state/example counts) with
the verdict docs/pipelines.md documents, and a malformed file names its line and exits 2."""

import json
import os
import re
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from icecheck.cli.main import main
from icecheck.pipelines.check import EXHAUSTIVE, explore
from icecheck.pipelines.load import load_pipeline
from icecheck.properties.violation import PROPERTIES
from icecheck.traces.replay import replay_doc
from icecheck.scenarios.errors import InputError

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")

# example -> (exit code, {property: (gate verdict, judgement)}, fixes that make it pass) as
# documented in docs/pipelines.md. What readers see fails whatever allowed it (the catalog
# without CAS), a known upstream bug too; a dangling delete file readers skip is allowed.
VERDICTS = {
    "spark-and-pyiceberg.yaml": (0, {}, set()),
    "no-cas-catalog.yaml": (1, {"lost_write": ("fail", "must_hold")},
                            {"use a catalog with compare-and-swap (catalog kind cas)",
                             "never run `ingest-a` and `ingest-b` at the same time (schedule: "
                             "never_overlap: [ingest-a, ingest-b])"}),
    "streaming-ingest-backfill.yaml": (0, {}, set()),
    "cdc-upserts-compaction.yaml": (0, {"dangling_deletes": ("allowed", "allowed")}, set()),
    "gdpr-deletes-compaction.yaml": (0, {"dangling_deletes": ("allowed", "allowed")}, set()),
    "merge-partition-scoped.yaml": (0, {}, set()),
    "flink-cdc-append-compaction.yaml": (
        1, {"undelete": ("fail", "known_finding")},
        {"compact with use-starting-sequence-number=false in `hourly-compaction`",
         "never run `flink-cdc` and `hourly-compaction` at the same time (schedule: "
         "never_overlap: [flink-cdc, hourly-compaction])"}),
    "partial-progress-compaction.yaml": (0, {}, set()),
    "retention-delete-null-days.yaml": (1, {"lost_write": ("fail", "known_finding")}, set()),
    "pyiceberg-file-patch-beside-spark-deletes.yaml": (
        1, {"undelete": ("fail", "known_finding"),
            "dangling_deletes": ("fail", "known_finding")},
        {"run `pyiceberg-patch` at serializable isolation (pyiceberg-0.12-serializable)",
         "run `spark-gdpr-delete` on pyiceberg-0.12-snapshot",
         "never run `pyiceberg-patch` and `spark-gdpr-delete` at the same time (schedule: "
         "never_overlap: [pyiceberg-patch, spark-gdpr-delete])"}),
    "nightly-dedup-beside-streaming-append.yaml": (
        1, {"lost_write": ("fail", "must_hold"), "undelete": ("fail", "must_hold")},
        {"give `nightly-dedup`'s OVERWRITE_PARTITIONS the write options isolation-level "
         "serializable and validate-from-snapshot-id read"}),
    "backfill-add-files-retried.yaml": (
        1, {"duplicate_keys": ("fail", "known_finding")},
        {"never run `backfill-attempt-1` and `backfill-attempt-2` at the same time (schedule: "
         "never_overlap: [backfill-attempt-1, backfill-attempt-2])"}),
    "spark-streaming-sink-expiry.yaml": (
        1, {"duplicate_keys": ("fail", "known_finding")},
        {"keep the last 2 snapshots in `expire-snapshots` (retain_last: 2), more than the other "
         "jobs commit while `events-stream` is down: its restart still finds its last commit"}),
    "slow-backfill-orphan-cleanup.yaml": (
        1, {"readable": ("fail", "must_hold")},
        {"remove orphan files older than 2 ticks in `orphan-cleanup` (older_than: 2, the "
         "clock's bound: longer than any job runs)",
         "never run `orphan-cleanup` and `slow-backfill` at the same time (schedule: "
         "never_overlap: [orphan-cleanup, slow-backfill])"}),
}


def _doc_rows() -> dict[str, str]:
    """docs/pipelines.md's examples table: file name -> its row (the docs' claims)."""
    with open(os.path.join(EXAMPLES, "..", "docs", "pipelines.md"), encoding="utf-8") as f:
        return {m.group(1): line for line in f
                for m in [re.match(r"\| `examples/([^`]+)` \|", line)] if m}


DOC_ROWS = _doc_rows()


def test_every_example_has_a_pinned_verdict():
    shipped = sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".yaml"))
    assert shipped == sorted(VERDICTS) == sorted(DOC_ROWS)
    for name, (code, _, _) in VERDICTS.items():
        assert ("FAILS:" if code else "passes:") in DOC_ROWS[name], name


@pytest.mark.parametrize("name", sorted(VERDICTS))
def test_example_verdict(name, tmp_path):
    """The gate's verdict, the fixes it proves (each edit of the file re-checked), and the
    reports: pipeline.json (each anomaly with its trace, which replays), pipeline.md and a
    JUnit file with one test case per property."""
    code, statuses, fixes = VERDICTS[name]
    path = os.path.join(EXAMPLES, name)
    outcome = explore(load_pipeline(path), details=False)
    assert outcome.how.startswith(EXHAUSTIVE) and outcome.complete
    assert f"{outcome.states:,} states" in DOC_ROWS[name], (outcome.states, DOC_ROWS[name])
    assert {a.property: (a.verdict, a.status) for a in outcome.anomalies} == statuses
    r = CliRunner().invoke(main, ["check", path, "--reports", str(tmp_path), "--json"])
    assert r.exit_code == code, r.output
    doc = json.loads((tmp_path / "pipeline.json").read_text())
    assert doc["passed"] == (code == 0)
    for a in doc["anomalies"]:
        if a["verdict"] == "fail":
            assert {f["title"] for f in a["fixes"]} == fixes, a["fixes"]
        assert a["jobs"] and not any(re.search(r"\bw\d+(?![\w-])", x) for x in
                                     (a["message"], a["explanation"]))
        replayed = replay_doc(a["trace"])
        assert replayed.ok, replayed.message
    assert (tmp_path / "pipeline.md").exists()
    cases = ET.parse(tmp_path / "junit.xml").getroot().findall(".//testcase")
    assert sorted(c.get("name") for c in cases) == sorted(PROPERTIES)
    failed = {c.get("name") for c in cases if c.find("failure") is not None}
    assert failed == {p for p, (v, _) in statuses.items() if v == "fail"}


def test_mixed_jobs_become_writer_profiles():
    p = load_pipeline(os.path.join(EXAMPLES, "spark-and-pyiceberg.yaml"))
    assert p.config.mixed and p.config.profile_of(2) == "pyiceberg-0.12-serializable"


def _check_jobs(tmp_path, table: str, jobs: list[str]):
    """``icecheck check`` on a pipeline of ``table`` (its YAML flow mapping), one row
    [1, v0], and ``jobs`` (profile, program: flow sequences): (the file, the result)."""
    f = tmp_path / "p.yaml"
    f.write_text(f"table: {table}\ninitial_rows: [[1, v0]]\njobs:\n"
                 + "".join(f"  - {{profile: {p}, program: {prog}}}\n" for p, prog in jobs))
    return f, CliRunner().invoke(main, ["check", str(f), "--reports", str(tmp_path / "r")])


def test_a_naive_job_beside_spark_fails_the_check(tmp_path):
    update = "[{sql: UPDATE, where: 'id = {key}', set: {v: '{job}'}}]"
    _, r = _check_jobs(tmp_path, "{schema: {id: int, v: string}}",
                       [("spark-3.5-cow-serializable", update), ("no-validation", update)])
    assert r.exit_code == 1, r.output
    assert "FAIL:" in r.output


@pytest.mark.parametrize("text, line, message", [
    ("table: {}\njobs:\n  - profile: nope\n    program: [{sql: INSERT, rows: [[1, a]]}]\n",
     3, "unknown profile 'nope'"),
    ("table: {}\njobs:\n  - profile: no-validation\n    program:\n      - {sql: DELETE, "
     "where: 'zz = 1'}\n", 5, ""),
    ("table: {}\nextra: 1\njobs: []\n", 2, "unknown key 'extra'"),
    # Spark reads a DELETE's mode and an UPDATE's level from the table: a job's profile that
    # says otherwise is refused, naming the profiles that agree
    ("table: {properties: {write.delete.mode: merge-on-read}}\njobs:\n  - name: cleanup\n"
     "    profile: spark-3.5-cow-serializable\n    program:\n      - {sql: DELETE, "
     "where: 'id = 1'}\n", 6, "jobs[0] (cleanup): profile spark-3.5-cow-serializable runs "
     "DELETE with mode copy-on-write, but table.properties sets write.delete.mode: "
     "merge-on-read (the engine reads it from the table); use spark-3.5-mor-serializable or "
     "spark-3.5-mor-snapshot"),
    ("table: {properties: {write.update.isolation-level: snapshot}}\njobs:\n"
     "  - profile: pyiceberg-0.12-serializable\n    program:\n      - {sql: DELETE, where: "
     "'id = 1'}\n      - any: [{sql: UPDATE, where: 'id = 1', set: {v: x}}]\n", 6,
     "profile pyiceberg-0.12-serializable runs UPDATE with isolation-level serializable, but "
     "table.properties sets write.update.isolation-level: snapshot"),
    ("table: {}\njobs:\n  - profile: no-validation\n    program:\n      - {sql: DELETE, "
     "where: 'id = {partition}'}\n", 5, "domain.partitions is empty"),
    # one external file, two contents: refused at the second (the store crashed on it)
    ("table: {}\njobs:\n  - {name: a, profile: pyiceberg-0.12-serializable, program: [{sql: "
     "ADD_FILES, file: f.parquet, rows: [[2, a]]}]}\n  - {name: b, profile: "
     "pyiceberg-0.12-serializable, program: [{sql: ADD_FILES, file: f.parquet, rows: "
     "[[3, b]]}]}\n", 4, "ADD_FILES names file 'f.parquet' with other rows than at line 3"),
])
def test_errors_name_the_line(tmp_path, text, line, message):
    f = tmp_path / "p.yaml"
    f.write_text(text)
    with pytest.raises(InputError) as e:
        load_pipeline(str(f))
    assert e.value.line == line and message in str(e.value)
    r = CliRunner().invoke(main, ["check", str(f), "--reports", str(tmp_path / "r")])
    assert r.exit_code == 2 and f"p.yaml:{line}" in r.output.replace("\n", "")


def test_a_job_its_engine_refuses_names_the_file(tmp_path):
    """PyIceberg's dynamic_partition_overwrite on a bucket-partitioned table: refused as the
    job begins (models/commands.py), so no run of the pipeline can go on: exit 2, one line
    naming the file (it used to stop the search with a traceback)."""
    f, r = _check_jobs(tmp_path, "{schema: {id: int, v: string}, partition_spec: ['bucket(2, id)']}",
                       [("pyiceberg-0.12-serializable",
                         "[{sql: OVERWRITE_PARTITIONS, rows: [[2, '{job}']]}]"),
                        ("spark-3.5-cow-serializable", "[{sql: INSERT, rows: [[3, '{job}']]}]")])
    assert r.exit_code == 2, r.output
    out = " ".join(r.output.split())
    assert f"{f}: a command of this configuration cannot run: dynamic partition overwrite: " \
           "only identity partition transforms are supported" in out, r.output
    assert "Traceback" not in r.output


def test_init_writes_a_starter_that_checks_and_never_overwrites(tmp_path):
    path = tmp_path / "pipeline.yaml"
    r = CliRunner().invoke(main, ["init", str(path)])
    assert r.exit_code == 0 and path.read_text().startswith("# An icecheck pipeline")
    outcome = explore(load_pipeline(str(path)))
    assert outcome.how.startswith(EXHAUSTIVE) and outcome.passed
    r = CliRunner().invoke(main, ["init", str(path)])
    assert r.exit_code == 2 and "never overwrites" in r.output


def test_unquoted_on_is_the_key_on_and_a_number_key_names_the_line(tmp_path):
    """A bare ``on`` (YAML 1.1's boolean) is the key "on"; a key that is no name is refused,
    naming the line."""
    f = tmp_path / "p.yaml"
    f.write_text("table: {}\njobs:\n  - profile: no-validation\n    program:\n"
                 "      - {sql: MERGE, on: [id], rows: [[1, a]]}\n")
    load_pipeline(str(f))
    f.write_text("table: {}\njobs:\n  - profile: no-validation\n    program:\n"
                 "      - {sql: MERGE, 7: [id], rows: [[1, a]]}\n")
    with pytest.raises(InputError, match="command key 7 is not a name") as e:
        load_pipeline(str(f))
    assert e.value.line == 5


def test_the_json_schema_names_what_the_loader_reads():
    """The editor schema and the loader agree on every section and key (so neither drifts)."""
    from icecheck.models import catalog as cat
    from icecheck.pipelines import load
    with open(os.path.join(os.path.dirname(load.__file__), "schema.json"), encoding="utf-8") as f:
        schema = json.load(f)
    props = schema["properties"]
    assert set(props) == load.TOP_KEYS
    assert set(props["jobs"]["items"]["properties"]) == load.JOB_KEYS
    assert set(props["bounds"]["properties"]) == load.BOUND_KEYS
    assert set(props["bounds"]["properties"]["search"]["enum"]) == set(load.SEARCH_MODES)
    assert set(props["accept"]["items"]["properties"]) == load.ACCEPT_KEYS
    from icecheck.properties.violation import PROPERTIES
    assert props["accept"]["items"]["properties"]["anomaly"]["enum"] == list(PROPERTIES)
    assert set(props["catalog"]["oneOf"][0]["enum"]) == set(cat.KINDS)
    from icecheck.models.commands_spec import COMMANDS
    assert set(schema["$defs"]["command"]["properties"]["sql"]["enum"]) == set(COMMANDS)


def test_the_readme_quick_start_shows_what_its_example_prints():
    """The README's first command and the lines it quotes from its output (the states, the
    failing anomaly, its jobs, the fix) are what the example gives (docs' claims, tested)."""
    with open(os.path.join(EXAMPLES, "..", "README.md"), encoding="utf-8") as f:
        readme = f.read()
    first = re.search(r"```bash\n(bin/icecheck check (examples/\S+))", readme)
    assert first, "the README's first command checks an example pipeline"
    name = os.path.basename(first.group(2))
    outcome = explore(load_pipeline(os.path.join(EXAMPLES, name)), details=False)
    assert f"exhaustive (BFS): {outcome.states} states" in readme
    undelete = next(a for a in outcome.anomalies if a.property == "undelete")
    assert f"FAIL: undelete (jobs: {', '.join(undelete.jobs)})" in readme
    assert "run `pyiceberg-patch` at serializable isolation (pyiceberg-0.12-serializable)" \
        in readme and name in VERDICTS and VERDICTS[name][0] == 1


def test_a_cut_search_keeps_the_failures_it_found(tmp_path):
    """A search cut by ``bounds.max_states`` keeps what it found before it stopped: each is a
    real run (and the shortest one to its property), so the check fails on it instead of
    reporting only what sampling then happens to find. The Flink CDC example's undelete shows
    within its first 999 states, the bound stops the search there, and one sampled run does not
    find it again."""
    src = os.path.join(EXAMPLES, "flink-cdc-append-compaction.yaml")
    f = tmp_path / "p.yaml"
    f.write_text(open(src).read() + "\nbounds: {max_states: 1000, max_examples: 1, seed: 0}\n")
    o = explore(load_pipeline(str(f)), details=False)
    assert o.inconclusive and not o.complete and o.states == 999
    assert "(it had found undelete)" in o.how
    assert [(a.property, a.verdict) for a in o.failed] == [("undelete", "fail")]
    assert o.failed[0].trace is not None


def test_a_cut_search_s_allowed_anomaly_gives_way_to_a_failing_sampled_one(tmp_path,
                                                                            monkeypatch):
    """A property the cut search saw only as allowed, which sampling then shows failing,
    fails the check, as a complete search's violation of it would (a complete search reports a
    property's violation before, and instead of, its allowed occurrence). Here the PyIceberg
    file-patch example is cut at 111 states with an allowed dangling_deletes, and sampling is
    given the failing dangling_deletes run of the complete search."""
    import types

    from icecheck.engines import hypothesis_engine
    from icecheck.engines.explicit import search
    src = os.path.join(EXAMPLES, "pyiceberg-file-patch-beside-spark-deletes.yaml")
    failing = search(load_pipeline(src).config, engine="bfs").violations["dangling_deletes"]
    f = tmp_path / "p.yaml"
    f.write_text(open(src).read() + "\nbounds: {max_states: 150, max_examples: 1, seed: 0}\n")
    sampled = types.SimpleNamespace(findings=[failing], examples=1, timed_out=False)
    monkeypatch.setattr(hypothesis_engine, "explore", lambda *a, **k: sampled)
    o = explore(load_pipeline(str(f)), details=False)
    assert o.inconclusive and "(it had found dangling_deletes)" in o.how
    assert [(a.property, a.verdict) for a in o.anomalies] == [("dangling_deletes", "fail")]
