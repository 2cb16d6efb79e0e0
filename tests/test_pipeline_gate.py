"""The pipeline gate protects the team's table (issue 45): what readers would see fails whatever
allowed it, a risk passes only when the file accepts it (and stale or expired acceptances are
reported), a schedule constraint is part of the runs explored, a search cut short is
INCONCLUSIVE, and every verdict names jobs, not writers. Bounded by the examples' state counts."""

import datetime
import json

import pytest
from click.testing import CliRunner

from icecheck.cli.main import main
from icecheck.engines.explicit import Bounds, search
from icecheck.models.system import Model
from icecheck.engines.config import build_model_config
from icecheck.pipelines.check import ACCEPTED, FAIL, explore, stale_acceptances
from icecheck.pipelines.explain import job_text
from icecheck.pipelines.load import load_pipeline
from icecheck.scenarios.errors import InputError

NO_CAS = """name: appends through a catalog without compare-and-swap
table:
  schema: {id: int, v: string}
catalog: {kind: last_writer_wins}
initial_rows: [[1, "v0"]]
jobs:
  - name: ingest-a
    profile: spark-3.5-cow-serializable
    program:
      - {sql: INSERT, rows: [[10, "{job}"]]}
  - name: ingest-b
    profile: spark-3.5-cow-serializable
    program:
      - {sql: INSERT, rows: [[20, "{job}"]]}
"""


def _file(tmp_path, text: str, name: str = "p.yaml"):
    f = tmp_path / name
    f.write_text(text)
    return str(f)


def _check(path: str, *args: str):
    return CliRunner().invoke(main, ["check", path, "--reports", path + ".reports", *args])


def test_an_allowed_lost_write_fails_the_gate_and_names_the_jobs(tmp_path):
    """A catalog without CAS is allowed to lose a write by the expectation table; the team's
    gate fails on it, and says which jobs, in their names."""
    path = _file(tmp_path, NO_CAS)
    out = explore(load_pipeline(path), details=False)
    (a,) = out.anomalies
    assert (a.property, a.verdict, a.jobs) == ("lost_write", FAIL, ("ingest-a", "ingest-b"))
    assert "the job `ingest-b`" in a.message and "w1" not in a.explanation
    assert "a pipeline's gate never allows it" in a.reason
    r = _check(path, "--no-fix")
    assert r.exit_code == 1 and "FAIL: lost_write (jobs: ingest-a, ingest-b)" in r.output


def test_an_accepted_risk_passes_and_an_expired_or_stale_one_is_reported(tmp_path):
    accept = ("accept:\n  - anomaly: lost_write\n    jobs: [ingest-a, ingest-b]\n"
              "    reason: nightly reconciliation re-inserts what a blind swap drops\n"
              "    until: 2027-03-31\n")
    path = _file(tmp_path, NO_CAS + accept)
    p = load_pipeline(path, today=datetime.date(2026, 12, 1))
    out = explore(p, details=False)
    (a,) = out.anomalies
    assert a.verdict == ACCEPTED and a.status == "allowed"
    assert a.reason == "nightly reconciliation re-inserts what a blind swap drops"
    assert out.passed and stale_acceptances(p, out) == []
    # after its date the acceptance takes nothing: the anomaly fails again
    late = load_pipeline(path, today=datetime.date(2027, 4, 1))
    assert late.acceptances[0].expired
    assert [x.verdict for x in explore(late, details=False).anomalies] == [FAIL]
    # an acceptance that matches no anomaly any more is stale (reported; --strict fails)
    stale = _file(tmp_path, NO_CAS.replace("last_writer_wins", "cas") + accept.replace(
        "    until: 2027-03-31\n", ""), "stale.yaml")
    r = _check(stale)
    assert r.exit_code == 0 and "STALE ACCEPTANCE: lost_write on ingest-a, ingest-b" in r.output
    assert _check(stale, "--strict").exit_code == 1


def test_an_acceptance_covers_only_its_jobs(tmp_path):
    """Accepting the lost write between two jobs does not hide one that a third job causes:
    the search judges acceptances as it goes, so it keeps looking past the accepted pair."""
    third = ("  - name: ingest-c\n    profile: spark-3.5-cow-serializable\n    program:\n"
             "      - {sql: INSERT, rows: [[30, \"{job}\"]]}\n")
    accept = ("accept:\n  - {anomaly: lost_write, jobs: [ingest-a, ingest-b], "
              "reason: reconciled}\n")
    out = explore(load_pipeline(_file(tmp_path, NO_CAS + third + accept)), details=False)
    verdicts = {(a.verdict, a.jobs) for a in out.anomalies if a.property == "lost_write"}
    assert (FAIL, ("ingest-a", "ingest-c")) in verdicts or \
        any(v == FAIL and "ingest-c" in jobs for v, jobs in verdicts), verdicts


def test_a_schedule_removes_the_race_it_forbids(tmp_path):
    sched = "schedule:\n  - never_overlap: [ingest-a, ingest-b]\n"
    out = explore(load_pipeline(_file(tmp_path, NO_CAS + sched)), details=False)
    assert out.complete and out.passed and not out.anomalies
    seq = "schedule:\n  - sequence: [ingest-b, ingest-a]\n"
    out = explore(load_pipeline(_file(tmp_path, NO_CAS + seq, "seq.yaml")), details=False)
    assert out.complete and out.passed


def test_a_never_overlap_schedule_holds_in_every_reachable_state(tmp_path):
    """The model's enabled actions, not a filter on verdicts: in every state of the search,
    at most one of the two jobs is between its first begin and its end."""
    from icecheck.models.schedule import ended, started
    p = load_pipeline(_file(tmp_path, NO_CAS + "schedule:\n  - never_overlap: [ingest-a, "
                                               "ingest-b]\n"))
    model = Model(build_model_config(p.config))
    seen, todo = set(), [model.initial()]
    while todo:
        s = todo.pop()
        running = [w.name for w in s.writers if started(w) and not ended(w)]
        assert len(running) <= 1, running
        for a in model.actions(s):
            s2 = model.step(s, a)
            key = repr(s2.writers) + s2.catalog.pointer
            if key not in seen:
                seen.add(key)
                todo.append(s2)
    assert 10 < len(seen) < 5000


@pytest.mark.parametrize("extra, line, message", [
    ("schedule:\n  - never_overlap: [ingest-a, nope]\n", 16, "no job is named 'nope'"),
    ("schedule:\n  - sequence: [ingest-a, ingest-b]\n  - sequence: [ingest-b, ingest-a]\n", 17,
     "cycle"),
    ("schedule:\n  - {sometimes: [ingest-a, ingest-b]}\n", 16, "a schedule entry is one of"),
    ("accept:\n  - {anomaly: lost_write}\n", 16, "needs a reason"),
    ("accept:\n  - {anomaly: lost_rows, reason: x}\n", 16, "accept[0].anomaly must be one of"),
    ("accept:\n  - {anomaly: lost_write, reason: x, until: soon}\n", 16, "must be a date"),
    ("bounds: {search: quick}\n", 15, "bounds.search must be one of"),
])
def test_malformed_gate_sections_name_the_line(tmp_path, extra, line, message):
    path = _file(tmp_path, NO_CAS + extra)
    with pytest.raises(InputError) as e:
        load_pipeline(path)
    assert message in str(e.value) and e.value.line == line, (str(e.value), e.value.line)
    r = _check(path)
    assert r.exit_code == 2 and "Traceback" not in r.output


def test_a_cut_search_is_inconclusive_unless_sampling_was_asked_for(tmp_path):
    cut = _file(tmp_path, NO_CAS.replace("last_writer_wins", "cas")
                + "bounds: {max_states: 5, max_examples: 20}\n")
    r = _check(cut)
    assert r.exit_code == 1 and "INCONCLUSIVE" in r.output
    doc = json.loads(open(cut + ".reports/pipeline.json").read())
    assert doc["inconclusive"] and not doc["passed"]
    sampled = _file(tmp_path, NO_CAS.replace("last_writer_wins", "cas")
                    + "bounds: {search: sample, max_examples: 20}\n", "s.yaml")
    r = _check(sampled)
    assert r.exit_code == 0 and "sampled (Hypothesis)" in r.output


def test_options_of_the_built_in_gate_are_refused_with_a_pipeline(tmp_path):
    path = _file(tmp_path, NO_CAS)
    for opt in (["--explorations", path], ["--corpus", str(tmp_path)]):
        r = _check(path, *opt)
        assert r.exit_code == 2 and opt[0] in r.output


def test_fixes_are_checked_edits_of_the_file(tmp_path):
    """Each fix is a diff of the file itself, and the file with it applied passes."""
    path = _file(tmp_path, NO_CAS)
    r = _check(path, "--json")
    doc = json.loads(open(path + ".reports/pipeline.json").read())
    (a,) = doc["anomalies"]
    titles = [f["title"] for f in a["fixes"]]
    assert "use a catalog with compare-and-swap (catalog kind cas)" in titles
    diff = a["fixes"][titles.index("use a catalog with compare-and-swap (catalog kind cas)")]
    assert "-catalog: {kind: last_writer_wins}" in diff["diff"]
    assert "+catalog: {kind: cas}" in diff["diff"]
    fixed = _file(tmp_path, NO_CAS.replace("{kind: last_writer_wins}", "{kind: cas}"), "f.yaml")
    assert _check(fixed).exit_code == 0
    assert r.exit_code == 1


def test_job_text_names_jobs_tags_and_actions():
    names = {"w1": "ingest", "w2": "gdpr-delete"}
    assert job_text("w2 began DELETE; v = 'w1.1'; w2.cas; w12; file w2-1-p1", names) == \
        "the job `gdpr-delete` began DELETE; v = 'ingest#1'; gdpr-delete.cas; w12; file w2-1-p1"


def test_search_counts_are_unchanged_without_a_schedule(tmp_path):
    """The gate's judgement changes verdicts, not the states explored: the same pipeline with
    and without protect_readers explores the same states."""
    from dataclasses import replace
    p = load_pipeline(_file(tmp_path, NO_CAS))
    a = search(p.config, bounds=Bounds(max_states=10_000), traces=False)
    b = search(replace(p.config, protect_readers=False, accepted=()),
               bounds=Bounds(max_states=10_000), traces=False)
    assert a.states == b.states and a.complete and b.complete
    assert set(a.violations) == {"lost_write"} and set(b.allowed) >= {"lost_write"}


def test_a_known_finding_fails_with_its_upstream_status():
    """Being a known upstream defect changes nothing for the gate; its upstream status (the
    expectation table's ``upstream``) is shown beside it, and the rule's reason names jobs."""
    import os
    path = os.path.join(os.path.dirname(__file__), "..", "examples",
                        "flink-cdc-append-compaction.yaml")
    (a,) = explore(load_pipeline(path), details=False).anomalies
    assert (a.property, a.verdict, a.status) == ("undelete", FAIL, "known_finding")
    assert a.upstream.startswith("reported upstream: apache/iceberg#10312")
    assert "traces/undelete-flink-cdc-delete-append-compaction.json" in a.upstream
    assert "the job `hourly-compaction`" in a.reason and "(w2)" not in a.reason


def test_the_docs_example_pipeline_checks_as_the_docs_say(tmp_path):
    """docs/pipelines.md's example file, written from the docs alone, loads and checks as the
    paragraph after it says: passes, exhaustively, one ALLOWED dangling delete, a STALE
    acceptance."""
    import os
    import re
    with open(os.path.join(os.path.dirname(__file__), "..", "docs", "pipelines.md"),
              encoding="utf-8") as f:
        doc = f.read()
    text = re.search(r"```yaml\n(name: my table.*?)```", doc, re.S).group(1)
    path = _file(tmp_path, text)
    p = load_pipeline(path, today=datetime.date(2026, 12, 1))
    out = explore(p, details=False)
    assert out.complete and out.passed
    assert f"exhaustive, {out.states:,} states" in doc
    assert [(a.property, a.verdict) for a in out.anomalies] == [("dangling_deletes", "allowed")]
    assert [a.anomaly for a in stale_acceptances(p, out)] == ["undelete"]
