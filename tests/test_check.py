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


def test_check_tiny_budget_passes_and_writes_reports(tmp_path):
    reports = tmp_path / "reports"
    proc = icecheck("check", "--time-budget", "0.01", "--reports", str(reports))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "corpus: 7 passed" in proc.stdout or "corpus:" in proc.stdout
    root = ET.parse(reports / "junit.xml").getroot()
    suites = {s.get("name"): s for s in root}
    assert set(suites) == {"scenarios", "corpus", "explorations"}
    assert int(suites["corpus"].get("tests")) >= 7
    assert "# icecheck check" in (reports / "report.md").read_text()
    assert not [p for p in os.listdir(reports) if p.endswith(".tmp")]


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
