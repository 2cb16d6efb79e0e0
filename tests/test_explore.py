"""Hypothesis exploration over the model's own actions: finds and shrinks the undelete."""

import json
import os
import subprocess
import sys

from icecheck.engines.config import mix_config
from icecheck.engines.hypothesis_engine import explore
from icecheck.traces.replay import replay_doc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def icecheck(*args):
    return subprocess.run([sys.executable, "-m", "icecheck", *args], capture_output=True,
                          text=True, cwd=ROOT)


def test_hypothesis_finds_and_shrinks_the_undelete():
    cfg = mix_config("spark-3.5-mor-snapshot", 2, 1, ("delete", "update", "insert"), 1)
    r = explore(cfg, max_examples=300, seed=0, time_budget=30)
    assert r.failed
    found = {f.property: f for f in r.findings}
    assert "undelete" in found
    f = found["undelete"]
    assert f.unexpected and len(f.hypothesis_actions) <= 10
    assert len(f.trace["actions"]) <= 10 and len(f.trace["actions"]) == 6
    assert f.trace["actions"][0].startswith("w1.begin")          # canonical names
    assert f.trace["kind"] == "violation" and f.trace["property"] == "undelete"
    assert replay_doc(f.trace).ok
    assert r.reached                                              # not vacuous
    # same seed -> same result
    again = explore(cfg, max_examples=300, seed=0, time_budget=30)
    assert [(x.property, x.hypothesis_actions, x.trace["actions"]) for x in again.findings] == \
        [(x.property, x.hypothesis_actions, x.trace["actions"]) for x in r.findings]


def test_hunting_an_allowed_anomaly():
    cfg = mix_config("spark-3.5-cow-serializable", 2, 1, ("insert",), 1,
                     catalog="last_writer_wins")
    r = explore(cfg, max_examples=100, seed=0, properties=("lost_write",))
    assert not r.failed and r.property == "lost_write"
    assert r.trace["kind"] == "allowed" and r.trace["expectation"]["status"] == "allowed"
    plain = explore(cfg, max_examples=100, seed=0)
    assert not plain.findings and plain.allowed.get("lost_write")


def test_explore_cli_exit_1_and_saves_trace(tmp_path):
    proc = icecheck("explore", "--engine", "hypothesis", "--profile", "spark-3.5-mor-snapshot",
                    "--writers", "2", "--mix", "delete,update,insert", "--keys", "1",
                    "--max-examples", "300", "--save-trace", str(tmp_path), "--json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["failed"] and "undelete" in doc["saved_traces"]
    assert icecheck("replay", doc["saved_traces"]["undelete"]).returncode == 0


def test_explore_cli_exit_0_reports_reached():
    proc = icecheck("explore", "--profile", "spark-3.5-cow-serializable", "--mix", "insert",
                    "--catalog", "last_writer_wins", "--max-examples", "50")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sometimes-events reached:" in proc.stdout and "lost_write" in proc.stdout


def test_explore_cli_bad_arguments_exit_2():
    assert icecheck("explore", "--profile", "spark-9").returncode == 2
    assert icecheck("explore", "--profile", "spark-3.5-mor-snapshot", "--mix", "upsert").returncode == 2
    assert icecheck("explore", "--profile", "spark-3.5-mor-snapshot", "--catalog", "nfs").returncode == 2
    assert icecheck("explore", "--profile", "spark-3.5-mor-snapshot",
                    "--property", "nope").returncode == 2
