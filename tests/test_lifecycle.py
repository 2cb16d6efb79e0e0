"""Streaming sinks that fail and restart (models/lifecycle.py): what each engine commits again,
skips or loses, found by exhaustive searches of small configurations, and the pipeline
surface (``sink:``) with its errors."""

import os

import pytest
from _search_util import walk
from click.testing import CliRunner

from icecheck.cli.main import main
from icecheck.engines.config import ExploreConfig
from icecheck.engines.explicit import search
from icecheck.models import lifecycle as life
from icecheck.models.system import Action, digest
from icecheck.properties import evaluate, reached
from icecheck.traces.execute import model_for

SPARK = "spark-3.5-cow-serializable"
FLINK = "flink-1.20-upsert"


def d(**k):
    return tuple(sorted(k.items()))


def _cfg(profile, kinds=("checkpoint",), batches=1, expire=True, other=True, restarts=1,
         faults=False):
    sink = tuple((d(sql="INSERT", rows=((10 + b, "s"),)),) for b in range(batches))
    writers = [sink]
    if other:
        writers.append(((d(sql="INSERT", rows=((20, "o"),)),),))
    if expire:
        writers.append(((d(sql="EXPIRE", retain_last=1),),))
    return ExploreConfig(profile=profile, writers=tuple(writers), initial_rows=((1, "v0"),),
                         writer_profiles=("",) + (SPARK,) * (len(writers) - 1),
                         sinks=((1, restarts, tuple(kinds)),), faults=faults, name="sink")


def _states(cfg, limit=100_000):
    """Every reachable state of ``cfg`` (tests/_search_util.walk), with its model."""
    ex, out = walk(cfg, limit)
    assert len(out) < limit
    return ex.model, out


def _run(m, actions):
    s = m.initial()
    for a in actions:
        s = m.step(s, Action.parse(a))
    return s


def test_a_restart_without_expiry_never_commits_twice():
    """Both engines find their last commit along main and skip it: no duplicate, no lost
    batch, in any interleaving of a restart with another writer's commit."""
    for profile in (SPARK, FLINK):
        res = search(_cfg(profile, batches=2, expire=False))
        assert res.complete and not res.violations and not res.allowed, profile
        assert res.reached["sink_restart"] > 0


def test_spark_reruns_a_committed_epoch_and_skips_it():
    """A crash after the sink's commit and before Spark's commit log: the restart runs the batch
    again and BaseStreamingWrite.commit finds its epoch in the table's summary and skips it."""
    m = model_for(_cfg(SPARK, expire=False, other=False))
    s = _run(m, ["w1.begin", "w1.refresh", "w1.cas", "w1.crash#1", "w1.restart", "w1.begin",
                 "w1.refresh"])
    w = s.writer("w1")
    assert w.history[-1].outcome == "noop"
    assert w.history[-1].message == ("Skipping epoch 1 for query w1-query-1 as it was already "
                                     "committed")
    assert w.phase == "done" and not evaluate(m, s)
    summary = dict(s.metadata.current.summary)
    assert summary[life.SPARK_QUERY_ID] == "w1-query-1" and summary[life.SPARK_EPOCH_ID] == "1"


def test_spark_commits_an_epoch_again_once_expiry_cut_the_walk():
    res = search(_cfg(SPARK))
    assert set(res.violations) == {"duplicate_keys"}
    v = res.violations["duplicate_keys"]
    assert "w1.crash#1" in v.actions and "w1.restart" in v.actions
    assert "findLastCommittedEpochId" in v.trace["explanation"]


def test_flink_restore_after_expiry_fails_instead_of_duplicating():
    """A clean commit deleted its checkpoint's temporary manifest (IcebergFilesCommitter:280):
    the restore that cannot find the commit fails reading it, and keeps failing."""
    m = model_for(_cfg(FLINK, restarts=2))
    s = _run(m, ["w1.begin", "w1.refresh", "w1.cas", "w1.crash", "w2.begin", "w2.refresh",
                 "w2.cas", "w3.begin", "w3.refresh", "w3.cas", "w1.restart"])
    w = s.writer("w1")
    assert w.phase == "crashed" and len(w.sink.restarts[-1]) == 6
    assert "sink_restore_failed" in reached(m, s)
    again = m.step(s, Action.parse("w1.restart"))
    assert again.writer("w1").phase == "crashed"          # the same failure again
    assert not evaluate(m, again)
    res = search(_cfg(FLINK))
    assert res.complete and "duplicate_keys" not in res.violations


def test_flink_duplicates_a_commit_whose_outcome_was_unknown():
    """CommitStateUnknownException skips the manifest clean-up: a restore that cannot find the
    (applied) commit commits the checkpoint again."""
    res = search(_cfg(FLINK, faults=True))
    v = res.violations["duplicate_keys"]
    assert "w1.cas_reply_lost" in v.actions and "w1.restart" in v.actions
    assert "getMaxCommittedCheckpointId" in v.trace["explanation"]


def test_flink_restore_commits_what_the_table_does_not_show():
    """A crash after the checkpoint, before the commit: the restore commits the checkpoint's
    files, stamped with the restored job id; a second restore finds it and commits nothing."""
    m = model_for(_cfg(FLINK, expire=False, other=False, restarts=2))
    s = _run(m, ["w1.begin", "w1.crash", "w1.restart", "w1.refresh", "w1.cas"])
    w = s.writer("w1")
    assert w.history[-1].outcome == "committed" and w.history[-1].intent.restored
    summary = dict(s.metadata.current.summary)
    assert summary[life.FLINK_MAX_COMMITTED] == "1" and summary[life.FLINK_JOB_ID] == "w1-job-1"
    s = _run(m, ["w1.begin", "w1.crash", "w1.restart", "w1.refresh", "w1.cas", "w1.crash",
                 "w1.restart"])
    assert s.writer("w1").phase == "done" and s.writer("w1").sink.restarts[-1][3] == 1
    assert not evaluate(m, s)


def test_flink_redeploy_without_state_loses_the_pending_checkpoint():
    res = search(_cfg(FLINK, kinds=("no-state",), batches=2, expire=False, other=False))
    assert set(res.allowed) == {"lost_write"} and not res.violations
    assert "never reached the table" in res.allowed["lost_write"].trace["explanation"]


def test_flink_savepoint_rewind_delivers_again():
    # the old job committed batches 1 and 2; rewound to checkpoint 1, the new job skips its
    # checkpoint 2 (not above the 2 the old job committed) but keeps its files pending, and
    # commits them with checkpoint 3
    res = search(_cfg(FLINK, kinds=("savepoint",), batches=3, expire=False, other=False))
    assert "duplicate_keys" in res.allowed and not res.violations


def test_every_state_of_a_sink_search_replays_its_sink_fields():
    """The sink's state is part of the writer (digests tell its runs apart): a failed run and
    a clean one of equal tables are distinct states."""
    m, states = _states(_cfg(SPARK, expire=False, other=False, batches=2))
    done = [s for s in states if s.writer("w1").phase == "done"]
    assert len({digest(s) for s in done}) > 1
    assert all(not evaluate(m, s) for s in done)


def _pipeline(tmp_path, profile, sink, sql="INSERT"):
    path = tmp_path / "p.yaml"
    path.write_text(f"""table:
  schema: {{id: int, v: string}}
jobs:
  - name: s
    profile: {profile}
    sink: {sink}
    program:
      - {{sql: {sql}, rows: [[1, x]]}}
""")
    return str(path)


@pytest.mark.parametrize("profile, sink, sql, says, line", [
    ("pyiceberg-0.12-serializable", "{}", "INSERT", "runs no streaming sink", 6),
    (SPARK, "{restart: [savepoint]}", "INSERT", "checkpoint for a spark-streaming sink", 6),
    (SPARK, "{restarts: 9}", "INSERT", "restarts must be an integer in [0, 3]", 6),
    (SPARK, "{often: 2}", "INSERT", "often", 6),
    (FLINK, "{}", "UPSERT", "each program entry is one batch", 8),
])
def test_a_bad_sink_names_its_line(tmp_path, profile, sink, sql, says, line):
    path = _pipeline(tmp_path, profile, sink, sql)
    r = CliRunner().invoke(main, ["check", path, "--reports", str(tmp_path / "r")])
    assert r.exit_code == 2, r.output
    assert f"{os.path.basename(path)}:{line}" in r.output and says in r.output, r.output
    assert "Traceback" not in r.output


def test_a_sink_pipeline_round_trips_its_configuration(tmp_path):
    from icecheck.pipelines.load import load_pipeline
    cfg = load_pipeline(_pipeline(tmp_path, FLINK, "{restarts: 2, restart: [checkpoint, "
                                                   "no-state]}")).config
    assert cfg.sinks == ((1, 2, ("checkpoint", "no-state")),)
    assert ExploreConfig.from_json(cfg.as_json()).sinks == cfg.sinks


SCENARIO = """version: 1
profile: {profile}
table:
  schema: {{id: int, v: string}}
sinks:
  w1: {sink}
steps:
  - begin: w1
    command: {{sql: INSERT, rows: [[10, s]]}}
  - commit: w1
  - crash: w1
  - {restart}
"""


@pytest.mark.parametrize("profile, sink, restart, says, line", [
    ("pyiceberg-0.12-serializable", "{}", "restart: w1", "runs no streaming sink", 6),
    (SPARK, "{restart: [no-state]}", "restart: w1", "checkpoint for a spark-streaming sink", 6),
    (FLINK, "{restart: [checkpoint]}", "restart: w2", "w2 is not a streaming sink", 12),
    (FLINK, "{restart: [checkpoint]}", "{restart: w1, from: savepoint}",
     "w1 restarts checkpoint", 12),
])
def test_a_bad_sink_scenario_names_its_line(tmp_path, profile, sink, restart, says, line):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(profile=profile, sink=sink, restart=restart))
    r = CliRunner().invoke(main, ["scenario", "run", str(path)])
    assert r.exit_code == 2, r.output
    assert f"s.yaml:{line}" in r.output and says in r.output and "Traceback" not in r.output, \
        r.output


def test_the_starters_streaming_job_client_and_profile_check_once_uncommented(tmp_path):
    """icecheck init's commented examples of a sink, a job's own client and a profile of the
    file's own are valid as written."""
    from icecheck.pipelines.load import load_pipeline
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(here, "pipelines", "starter.yaml"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if "name: events-stream" in line)
    end = next(i for i, line in enumerate(lines) if line.startswith("# How your orchestrator"))
    out = []
    for i, line in enumerate(lines):
        if start <= i < end and not line.startswith("# Engines"):
            line = line.replace("# ", "", 1)
        out.append(line)
    text = "\n".join(out).replace("name: rest ", "name: rest\n  ", 1)
    path = tmp_path / "p.yaml"
    path.write_text(text)
    cfg = load_pipeline(str(path)).config
    assert cfg.sinks and cfg.clients and "our-spark-fork" in cfg.inline_profiles
    from icecheck.models import profiles
    profiles._INLINE.pop("our-spark-fork", None)


def test_kafka_connect_leaves_out_what_its_offsets_say_is_committed():
    """The coordinator reads the control topic again after a failure before its consumer-offset
    commit: its commit leaves out events below the offsets it finds along the branch, unless an
    expiry removed the snapshot that carried them."""
    kc = "kafka-connect-1.11"
    m = model_for(_cfg(kc, expire=False, other=False))
    s = _run(m, ["w1.begin", "w1.refresh", "w1.cas", "w1.crash#1", "w1.restart", "w1.begin",
                 "w1.refresh"])
    assert s.writer("w1").history[-1].outcome == "noop"
    assert "found nothing to commit" in s.writer("w1").history[-1].message
    assert dict(s.metadata.current.summary)["kafka.connect.offsets.w1-connect"] == '{"0":1}'
    res = search(_cfg(kc))
    assert set(res.violations) == {"duplicate_keys"}
    assert "lastCommittedOffsetsForTable" in res.violations["duplicate_keys"].trace["explanation"]


def test_the_z3_search_refuses_what_it_does_not_model():
    """A sink, a writer's own client or a clock would be silently ignored by the z3 encoding:
    it refuses them instead."""
    from dataclasses import replace

    from icecheck.engines.z3_engine import LineageTables, Z3Unsupported
    plain = _cfg(SPARK, expire=False, other=False)
    for cfg in (plain, replace(plain, sinks=(), clients=((1, "cas", False, False, "rest"),)),
                replace(plain, sinks=(), ticks=1)):
        with pytest.raises(Z3Unsupported, match="does not model streaming sinks"):
            LineageTables(cfg)
    LineageTables(replace(plain, sinks=()))


def test_conform_skips_a_sinks_trace_saying_why():
    from icecheck.cli.commands_conform import _not_driven
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trace = os.path.join(here, "traces", "duplicate-keys-spark-streaming-sink-after-expiry.json")
    assert "streaming sink" in _not_driven("trace", trace, None)
    plain = os.path.join(here, "traces", "undelete-v2-mor-snapshot.json")
    assert _not_driven("trace", plain, None) is None
