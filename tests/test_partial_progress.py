"""rewrite_data_files with partial progress (COMPACT option partial-progress.enabled): one
RewriteFiles per file group batch, a failed commit skipped, the procedure failing only past
partial-progress.max-failed-commits. Java and Spark agreement: the built-in scenarios
commands/spark-compaction-partial-progress*.yaml (tests/conformance)."""

from __future__ import annotations

import glob
import os

import pytest

from icecheck.models.system import COMMITTED, VALIDATION_FAILED, Model
from icecheck.properties.history import build_history
from icecheck.scenarios import BUILTIN_DIR
from icecheck.scenarios.format import load_scenario, parse_scenario
from icecheck.scenarios.runner import execute_scenario, model_config
from icecheck.scenarios.yamlload import load_yaml

SCENARIO = """version: 1
profile: spark-3.5-cow-serializable
table:
  schema: {id: int, category: string}
  partition_spec: [identity(category)]
files:
  a1: {rows: [[1, a]]}
  a2: {rows: [[2, a]]}
  b1: {rows: [[3, b]]}
  b2: {rows: [[4, b]]}
steps:
  - commit: {op: append, add: [a1, b1]}
  - commit: {op: append, add: [a2, b2]}
  - begin: w1
    command: {sql: COMPACT, options: {partial-progress.enabled: true%s}}
  - begin: w2
    command: {sql: DELETE, where: "id = 1"}
  - commit: w2
  - commit: w1
"""


def _run(options=""):
    sc = parse_scenario(load_yaml(SCENARIO % options, "x.yaml"), "x.yaml")
    cfg = model_config(sc)
    verdict, state = execute_scenario(sc, cfg)
    return cfg, state


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(
    BUILTIN_DIR, "commands", "spark-compaction-partial-progress*.yaml"))))
def test_builtin_partial_progress_scenarios_pass(path):
    sc = load_scenario(path)
    verdict, _ = execute_scenario(sc, model_config(sc))
    assert verdict.passed, verdict.failures


def test_failed_group_is_skipped_and_the_other_commits():
    cfg, state = _run()
    rec = state.writer("w1").history[-1]
    assert rec.outcome == COMMITTED and len(rec.snapshot_ids) == 1
    assert "1 of 2 rewrite commits failed: Missing required files to delete: a1" in rec.message
    h = build_history(Model(cfg), state)
    assert not h.inner_ids and h.by_snapshot[rec.snapshot_id].label == "w1.1"


def test_more_failures_than_allowed_fail_the_procedure():
    _, state = _run(", partial-progress.max-failed-commits: 0")
    rec = state.writer("w1").history[-1]
    assert rec.outcome == VALIDATION_FAILED
    assert rec.message.startswith("partial-progress.enabled is true but 1 rewrite commits "
                                  "failed. This is more than the maximum allowed failures of 0.")
    assert rec.applied and len(rec.snapshot_ids) == 1   # partition b's commit stays


def test_one_commit_when_max_commits_is_one():
    # both groups in one commit, which fails; max-failed-commits defaults to max-commits (1),
    # so the procedure still succeeds, having committed nothing
    _, state = _run(", partial-progress.max-commits: 1")
    rec = state.writer("w1").history[-1]
    assert rec.outcome == COMMITTED and not rec.applied and rec.snapshot_ids == ()
    assert "1 of 1 rewrite commits failed" in rec.message


def test_a_crash_after_one_commit_keeps_that_commit_its_own():
    """A compaction crashing between its commits: the commit it made is in the table and its
    record (no orphan for metadata_integrity)."""
    text = (SCENARIO % "").split("  - begin: w2")[0] + (
        "  - write: w1\n  - refresh: w1\n  - validate: w1\n  - write_metadata: w1\n"
        "  - cas: w1\n  - crash: w1\n")
    sc = parse_scenario(load_yaml(text, "x.yaml"), "x.yaml")
    verdict, state = execute_scenario(sc, model_config(sc))
    rec = state.writer("w1").history[-1]
    assert rec.outcome == "crashed" and rec.applied and len(rec.snapshot_ids) == 1
    assert state.metadata.current_snapshot_id == rec.snapshot_id
    assert not [p for p in verdict.properties if p.get("property") == "metadata_integrity"]
