"""`icecheck check`: scenarios, corpus replay, explorations; reports; exit codes."""

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def icecheck(*args):
    return subprocess.run([sys.executable, "-m", "icecheck", *args], capture_output=True,
                          text=True, cwd=ROOT)


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


def test_check_unexpected_violation_exits_1(tmp_path):
    explorations = tmp_path / "x.yaml"
    explorations.write_text(
        "explorations:\n"
        "  - id: mor-snapshot\n"
        "    profile: spark-3.5-mor-snapshot\n"
        "    mix: [delete, update]\n"
        "    max_examples: 100\n")
    proc = icecheck("check", "--time-budget", "60", "--explorations", str(explorations),
                    "--reports", str(tmp_path / "r"), "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["failed"][0]["suite"] == "explorations"
    assert "Failures" in (tmp_path / "r" / "report.md").read_text()


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
