"""Engine profiles a pipeline defines itself (``profiles:``, models/profiles.py
``register_inline``): its jobs name them, its traces carry them, and a malformed one is
refused at its line."""

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from icecheck.cli.main import main

PIPELINE = """name: a fork's DELETE without validation
table:
  schema: {{id: int, v: string}}
profiles:
  {name}:
    description: a fork of Spark 3.5 whose DELETE validates nothing
    engine: spark-3.5
    isolation: none
    commands:
      DELETE: {{mode: copy-on-write, operation: overwrite, validations: {validations}}}
initial_rows: [[1, v0]]
jobs:
  - name: gdpr-delete
    profile: {name}
    program:
      - {{sql: DELETE, where: "id = 1"}}
  - name: fixer
    profile: spark-3.5-cow-serializable
    program:
      - {{sql: UPDATE, where: "id = 1", set: {{v: "{{job}}"}}}}
"""


@pytest.fixture(autouse=True)
def _forget_inline_profiles():
    """Inline profiles registered here stay out of the other tests' profile lists."""
    from icecheck.models import profiles
    before = dict(profiles._INLINE)
    yield
    profiles._INLINE.clear()
    profiles._INLINE.update(before)


def _write(tmp_path, name="our-fork", validations="[]"):
    path = tmp_path / "p.yaml"
    path.write_text(PIPELINE.format(name=name, validations=validations))
    return str(path)


def test_a_job_runs_on_the_pipelines_own_profile_and_its_trace_carries_it(tmp_path):
    r = CliRunner().invoke(main, ["check", _write(tmp_path), "--reports", str(tmp_path / "r"),
                                  "--no-fix"])
    assert r.exit_code == 1, r.output
    assert "job `gdpr-delete` (our-fork)" in r.output and "FAIL: undelete" in r.output
    trace = tmp_path / "r" / "anomaly-1-undelete.json"
    assert "our-fork" in json.loads(trace.read_text())["config"]["profiles_yaml"]
    # a fresh process knows no inline profile: the trace alone must bring it
    out = subprocess.run([sys.executable, "-m", "icecheck", "replay", str(trace)],
                         capture_output=True, text=True, cwd=str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "undelete reproduces" in out.stdout


def test_the_same_pipeline_with_the_serializable_checks_passes(tmp_path):
    path = _write(tmp_path, "our-careful-fork",
                  "[from_snapshot, no_conflicting_data, no_conflicting_deletes]")
    r = CliRunner().invoke(main, ["check", path, "--reports", str(tmp_path / "r")])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("name, validations, says, line", [
    ("spark-3.5-cow-serializable", "[]", "is already defined", 5),
    ("our-fork", "[from_snapshot, bogus]", "bogus", 10),
])
def test_a_bad_inline_profile_names_its_line(tmp_path, name, validations, says, line):
    path = _write(tmp_path, name, validations)
    r = CliRunner().invoke(main, ["check", path, "--reports", str(tmp_path / "r")])
    assert r.exit_code == 2, r.output
    assert f"{os.path.basename(path)}:{line}" in r.output and says in r.output, r.output
    assert "Traceback" not in r.output
