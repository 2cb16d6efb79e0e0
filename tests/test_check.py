"""`icecheck check`: scenarios, corpus replay, explorations; reports; exit codes."""

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def icecheck(*args, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "icecheck", *args], capture_output=True,
                          text=True, cwd=ROOT, env=env)


def test_check_tiny_budget_is_inconclusive_and_fails(tmp_path):
    """A budget too small to explore is not a pass: the explorations are inconclusive (exit 1),
    and the reports of the run still appear, together, with one run id."""
    reports = tmp_path / "reports"
    proc = icecheck("check", "--time-budget", "0.01", "--reports", str(reports), "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["counts"]["scenarios"]["passed"] >= 100 and doc["counts"]["corpus"]["passed"] >= 7
    assert {f["kind"] for f in doc["failed"]} == {"inconclusive"}
    root = ET.parse(reports / "junit.xml").getroot()
    suites = {s.get("name"): s for s in root}
    assert set(suites) == {"scenarios", "corpus", "explorations"}
    assert int(suites["corpus"].get("tests")) >= 7
    assert suites["explorations"].get("failures") == str(len(doc["failed"]))
    run_ids = {p.get("value") for p in root.iter("property") if p.get("name") == "icecheck.run_id"}
    assert run_ids == {doc["run_id"]}
    assert f"run `{doc['run_id']}`" in (reports / "report.md").read_text()
    assert not [p for p in os.listdir(reports) if p.endswith(".tmp")]


def _check_junit_schema(root):
    """The rules of the common JUnit schema (Jenkins xunit-plugin junit-10.xsd) that CI tools
    enforce: required attributes, numeric counts that add up, failure type and message."""
    import re

    assert root.tag == "testsuites"
    for suite in root:
        assert suite.tag == "testsuite"
        for attr in ("name", "tests", "failures", "errors"):
            assert suite.get(attr) is not None, f"testsuite lacks {attr}"
        assert re.fullmatch(r"[0-9]*(\.[0-9]*)?", suite.get("time"))
        cases = [c for c in suite if c.tag == "testcase"]
        assert {c.tag for c in suite} <= {"testcase", "properties", "system-out", "system-err"}
        assert int(suite.get("tests")) == len(cases)
        assert int(suite.get("failures")) == sum(1 for c in cases if c.find("failure") is not None)
        assert int(suite.get("skipped")) == sum(1 for c in cases if c.find("skipped") is not None)
        for c in cases:
            assert c.get("name")
            assert {x.tag for x in c} <= {"skipped", "error", "failure", "system-out", "system-err"}
            for f in c.findall("failure"):
                assert f.get("type") and f.get("message") is not None
        for prop in suite.iter("property"):
            assert prop.get("name") and prop.get("value") is not None


def test_check_junit_follows_the_schema_and_shows_known_findings(tmp_path):
    explorations = tmp_path / "x.yaml"
    explorations.write_text(KNOWN)
    reports = tmp_path / "r"
    proc = icecheck("check", "--time-budget", "60", "--explorations", str(explorations),
                    "--reports", str(reports))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    root = ET.parse(reports / "junit.xml").getroot()
    _check_junit_schema(root)
    skipped = [s.get("message") for s in root.iter("skipped")]
    assert any(m.startswith("KNOWN FINDING") for m in skipped), skipped
    assert "KNOWN FINDING" in proc.stdout


def test_check_nothing_to_check_is_an_input_error(tmp_path):
    empty = tmp_path / "corpus"
    empty.mkdir()
    proc = icecheck("check", "--corpus", str(empty), "--reports", str(tmp_path / "r"))
    assert proc.returncode == 2 and "nothing to check" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    x = tmp_path / "x.yaml"
    x.write_text("explorations: []\n")
    proc = icecheck("check", "--explorations", str(x), "--reports", str(tmp_path / "r"))
    assert proc.returncode == 2 and f"{x}: nothing to check" in proc.stderr


def test_check_rejects_nonsense_budgets_and_unwritable_reports(tmp_path):
    for budget in ("nan", "inf", "0", "-1", "soon"):
        proc = icecheck("check", "--time-budget", budget, "--reports", str(tmp_path / "r"))
        assert proc.returncode == 2, budget
        assert "--time-budget" in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    blocker = tmp_path / "file"
    blocker.write_text("x")
    proc = icecheck("check", "--reports", str(blocker / "sub"))
    assert proc.returncode == 2 and "--reports" in proc.stderr
    assert "[scenario" not in proc.stderr          # refused before any work


def test_stale_temporary_reports_are_cleaned(tmp_path):
    from icecheck.traces.format import write_together

    stale = tmp_path / ".junit.xml.abc123.tmp"
    stale.write_text("half")
    os.utime(stale, (1, 1))                # left by a run killed long ago
    write_together({str(tmp_path / "junit.xml"): "<a/>", str(tmp_path / "report.md"): "# r"})
    assert sorted(os.listdir(tmp_path)) == ["junit.xml", "report.md"]


def test_check_drifted_corpus_exits_1(tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(os.path.join(ROOT, "traces"), corpus,
                    ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    path = corpus / "undelete-v2-mor-snapshot.json"
    doc = json.loads(path.read_text())
    doc["states"][-1]["digest"] = "f" * 24
    path.write_text(json.dumps(doc))
    proc = icecheck("check", "--time-budget", "0.01", "--corpus", str(corpus),
                    "--reports", str(tmp_path / "r"))
    assert proc.returncode == 1
    assert "undelete-v2-mor-snapshot" in proc.stdout
    assert 'failures="1"' in (tmp_path / "r" / "junit.xml").read_text()


PLANTED_PROFILE = """\
profiles:
  planted-serializable-without-checks:
    description: a planted bug - claims serializable isolation but enables no validation
    engine: planted
    isolation: serializable
    commands:
      INSERT: {operation: append}
      DELETE: {mode: merge-on-read, operation: row_delta}
      UPDATE: {mode: merge-on-read, operation: row_delta}
"""


def test_check_unexpected_violation_exits_1(tmp_path):
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "planted.yaml").write_text(PLANTED_PROFILE)
    explorations = tmp_path / "x.yaml"
    explorations.write_text(
        "explorations:\n"
        "  - id: planted\n"
        "    profile: planted-serializable-without-checks\n"
        "    mix: [delete, update]\n"
        "    max_examples: 100\n")
    proc = icecheck("check", "--time-budget", "60", "--explorations", str(explorations),
                    "--reports", str(tmp_path / "r"), "--json",
                    env_extra={"ICECHECK_PROFILES": str(profiles)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["failed"][0]["suite"] == "explorations"
    assert "Failures" in (tmp_path / "r" / "report.md").read_text()


KNOWN = ("explorations:\n"
         "  - id: mor-snapshot\n"
         "    profile: spark-3.5-mor-snapshot\n"
         "    mix: [delete, update]\n"
         "    max_examples: 100\n")


def test_check_reports_known_findings_and_passes(tmp_path):
    explorations = tmp_path / "x.yaml"
    explorations.write_text(KNOWN)
    proc = icecheck("check", "--time-budget", "60", "--explorations", str(explorations),
                    "--reports", str(tmp_path / "r"), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["known_findings"]
    assert any("undelete" in k["message"] or "isolation" in k["message"]
               for k in doc["known_findings"])
    assert "KNOWN FINDING" in (tmp_path / "r" / "report.md").read_text()


def test_check_strict_fails_on_known_findings(tmp_path):
    explorations = tmp_path / "x.yaml"
    explorations.write_text(KNOWN)
    proc = icecheck("check", "--time-budget", "60", "--explorations", str(explorations),
                    "--reports", str(tmp_path / "r"), "--strict")
    assert proc.returncode == 1, proc.stdout + proc.stderr


def test_check_allowed_anomaly_passes(tmp_path):
    explorations = tmp_path / "x.yaml"
    explorations.write_text(
        "explorations:\n"
        "  - id: lww\n"
        "    profile: spark-3.5-cow-serializable\n"
        "    mix: [insert]\n"
        "    catalog: last_writer_wins\n"
        "    max_examples: 50\n"
        "    expect: {allowed: [lost_write]}\n")
    proc = icecheck("check", "--time-budget", "60", "--explorations", str(explorations),
                    "--reports", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_check_bad_exploration_file_exits_2(tmp_path):
    explorations = tmp_path / "x.yaml"
    explorations.write_text("explorations:\n  - id: a\n    profile: spark-3.5-mor-snapshot\n"
                            "    writerz: 2\n")
    proc = icecheck("check", "--explorations", str(explorations), "--reports",
                    str(tmp_path / "r"))
    assert proc.returncode == 2
    assert f"{explorations}:" in proc.stderr.replace("\n", "") and "writerz" in proc.stderr
