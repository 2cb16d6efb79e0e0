"""Catalog clients per writer (models/clients.py): a job's own client decides its swap and the
faults that reach it; Hive jobs that take the metastore lock beside jobs that do not swap in
two steps, and lose only what a no-lock commit slips between a locking writer's check and its
write."""

import os

import pytest
from _search_util import walk
from click.testing import CliRunner

from icecheck.cli.main import main
from icecheck.engines.config import ExploreConfig
from icecheck.engines.explicit import search
from icecheck.models.system import LOCKED, Action
from icecheck.pipelines.load import load_pipeline
from icecheck.traces.execute import model_for

SPARK = "spark-3.5-cow-serializable"


def d(**k):
    return tuple(sorted(k.items()))


def _cfg(clients, writers=2):
    progs = tuple(((d(sql="INSERT", rows=((10 + i, "w"),)),),) for i in range(writers))
    return ExploreConfig(profile=SPARK, writers=progs, initial_rows=((1, "v0"),),
                         clients=clients, name="clients")


def test_locking_writers_exclude_each_other():
    """Two writers that take the lock never lose a commit: while one holds it (checked, not yet
    written), the other's check is not enabled."""
    cfg = _cfg(((1, "hms_lock", False, False, "hive"), (2, "hms_lock", False, False, "hive")))
    res = search(cfg)
    assert res.complete and not res.violations and not res.allowed
    m = model_for(cfg)
    s = m.initial()
    for a in ("w1.begin", "w2.begin", "w1.refresh", "w2.refresh", "w1.cas"):
        s = m.step(s, Action.parse(a))
    assert s.writer("w1").phase == LOCKED
    assert Action.parse("w2.cas") not in m.actions(s)
    s = m.step(s, Action.parse("w1.cas"))
    assert Action.parse("w2.cas") in m.actions(s)


def test_a_no_lock_commit_between_check_and_write_is_lost():
    cfg = _cfg(((1, "hms_lock", False, False, "hive"), (2, "cas", False, False, "hive-no-lock")))
    res = search(cfg)
    assert set(res.violations) == {"lost_write"}
    assert res.violations["lost_write"].actions[-2:] == ["w2.cas", "w1.cas"]
    # without a client, both writers compare-and-swap: nothing is lost
    assert not search(_cfg(())).violations


def test_faults_reach_only_the_writers_whose_client_sees_them():
    cfg = _cfg(((1, "cas", True, False, "rest"), (2, "cas", False, False, "rest")))
    ex, states = walk(cfg, 100_000)
    kinds = {str(a) for s in states for a in ex.model.actions(s)}
    assert "w1.cas_reply_lost" in kinds and "w1.cas_not_applied" in kinds
    assert not any(k.startswith("w2.cas_") for k in kinds)


def _pipeline(tmp_path, catalog, client, profile=SPARK):
    path = tmp_path / "p.yaml"
    path.write_text(f"""table:
  schema: {{id: int, v: string}}
catalog: {catalog}
jobs:
  - name: a
    profile: {SPARK}
    program:
      - {{sql: INSERT, rows: [[10, a]]}}
  - name: b
    profile: {profile}
    client: {client}
    program:
      - {{sql: INSERT, rows: [[20, b]]}}
""")
    return str(path)


def test_a_pipeline_mixing_lock_settings_fails_and_is_fixed(tmp_path):
    path = _pipeline(tmp_path, "hive", "hive-no-lock")
    cfg = load_pipeline(path).config
    assert cfg.clients == ((1, "hms_lock", False, False, "hive"),
                           (2, "cas", False, False, "hive-no-lock"))
    r = CliRunner().invoke(main, ["check", path, "--reports", str(tmp_path / "r")])
    assert r.exit_code == 1, r.output
    assert "FAIL: lost_write" in r.output and "took the Hive metastore lock" in r.output
    assert "FIX (checked: the pipeline passes with it): commit `b` with the metastore lock, as " \
           "the other jobs do (client: hive)" in r.output
    # every job locking: the lock is a compare-and-swap among them
    assert load_pipeline(_pipeline(tmp_path, "hive", "hive")).config.clients == (
        (1, "cas", False, False, "hive"), (2, "cas", False, False, "hive"))


def test_a_job_client_takes_only_the_faults_its_library_can_see(tmp_path):
    cfg = load_pipeline(_pipeline(tmp_path, "{name: rest}", "{faults: true}")).config
    assert cfg.clients == ((1, "cas", False, False, "rest"), (2, "cas", True, True, "rest"))
    assert ExploreConfig.from_json(cfg.as_json()).clients == cfg.clients


@pytest.mark.parametrize("catalog, client, profile, says", [
    ("cas", "hive", SPARK, "needs the pipeline's catalog by name"),
    ("hive", "nosuch", SPARK, "unknown catalog 'nosuch'"),
    ("hive", "glue", SPARK, "a glue client cannot commit to the pipeline's hive catalog"),
    ("hive", "hive-no-lock", "pyiceberg-0.12-serializable", "commits through pyiceberg"),
    ("hive", "{name: hive, lock: false}", SPARK, "unknown key 'lock'"),
    ("hive", "{faults: 1}", SPARK, "faults must be true or false"),
])
def test_a_bad_client_names_its_line(tmp_path, catalog, client, profile, says):
    path = _pipeline(tmp_path, catalog, client, profile)
    r = CliRunner().invoke(main, ["check", path, "--reports", str(tmp_path / "r")])
    assert r.exit_code == 2, r.output
    assert says in r.output and "Traceback" not in r.output, r.output
    assert f"{os.path.basename(path)}:" in r.output
