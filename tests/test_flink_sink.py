"""Flink's upsert sink (models/profiles/flink.yaml, models/commands.py _plan_equality_upsert):
the files one checkpoint writes, the checks its job start makes, a blind write for the
properties, and mixed Flink + Spark explorations, including the compaction finding."""

import os
import re

import pytest
from click.testing import CliRunner

from icecheck.cli.main import main
from icecheck.engines.config import fit_mix_to_profiles, mix_config
from icecheck.engines.explicit import search
from icecheck.scenarios.errors import InputError
from icecheck.scenarios.format import load_scenario
from icecheck.scenarios.runner import execute_scenario, run_scenario

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLINK = "flink-1.20-upsert"
SPARK = "spark-3.5-cow-serializable"


def _scenario(tmp_path, steps, table="schema: {id: int, v: string}", extra=""):
    p = tmp_path / "s.yaml"
    p.write_text(f"""version: 1
id: t
profile: {FLINK}
{extra}
table:
  {table}
steps:
{steps}
""")
    return load_scenario(str(p))


def _live_deletes(state) -> dict:
    from icecheck.models.reads import live_delete_entries
    archive = state.store.archive()
    snap = archive[state.catalog.pointer].current
    return {e.file.path: e.file for e in live_delete_entries(archive, snap)}


def test_a_key_written_twice_in_one_checkpoint_is_a_position_delete(tmp_path):
    s = _scenario(tmp_path, """  - begin: w1
    command: {sql: UPSERT, "on": [id], rows: [[1, a], [2, b], [1, c], [1, d]]}
  - commit: w1""")
    verdict, state = execute_scenario(s)
    assert verdict.rows == [[1, "d"], [2, "b"]]
    files = _live_deletes(state)
    assert sorted(files) == ["w1-1-e1", "w1-1-p1"]
    assert files["w1-1-e1"].equality_rows == ((1,), (2,))     # each key once
    assert files["w1-1-p1"].positions == (("w1-1-d1", 0), ("w1-1-d1", 2))


def test_changelog_deletes_after_upserts_in_the_same_checkpoint(tmp_path):
    s = _scenario(tmp_path, """  - commit: {op: append, add: [d1]}
  - begin: w1
    command: {sql: UPSERT, "on": [id], rows: [[3, x]], deletes: [[3], [1]]}
  - commit: w1
    expect: {outcome: committed, operation: overwrite}""",
                  extra="files:\n  d1: {rows: [[1, a], [2, a]]}")
    v = run_scenario(s)
    assert not v.failures, v.failures
    assert v.rows == [[2, "a"]]


def test_upsert_requires_partition_columns_among_the_equality_fields(tmp_path):
    s = _scenario(tmp_path, """  - begin: w1
    command: {sql: UPSERT, "on": [id], rows: [[1, d1, a]]}""",
                  table="schema: {id: int, day: string, v: string}\n  partition_spec: [\"identity(day)\"]")
    with pytest.raises(InputError) as e:
        run_scenario(s)
    # FlinkSink.Builder.appendWriter's message, with Java's PartitionField.toString
    assert ("In UPSERT mode, source column 'day' of partition field '1000: day: identity(2)', "
            "should be included in equality fields: '[id]'") in str(e.value)


def test_upsert_is_blind_last_commit_wins_without_an_anomaly():
    v = run_scenario(load_scenario(os.path.join(
        ROOT, "scenarios", "builtin", "flink", "upsert-last-commit-wins.yaml")))
    assert not v.failures and v.properties == []


def test_flink_alone_finds_nothing_and_spark_profiles_refuse_upsert():
    res = search(mix_config(FLINK, 3, 1, ("upsert", "cdc_delete", "insert"), 1), engine="bfs",
                 traces=False)
    assert res.complete and not res.violations and not res.allowed
    with pytest.raises(InputError, match="no rule for UPSERT"):
        from icecheck.engines.config import build_model_config
        build_model_config(mix_config(SPARK, 2, 1, ("upsert",), 1))


def test_mixed_mix_keeps_each_writers_commands():
    from dataclasses import replace
    cfg = replace(mix_config(SPARK, 2, 1, ("compact", "upsert"), 1), writer_profiles=("", FLINK))
    fitted = fit_mix_to_profiles(cfg)
    kinds = [{dict(c)["sql"] for entry in prog for c in entry} for prog in fitted.writers]
    assert kinds == [{"COMPACT"}, {"UPSERT"}]
    # every writer on Flink: a Spark-only command in the mix is an error naming it
    with pytest.raises(InputError, match="no writer's profile supports UPDATE"):
        fit_mix_to_profiles(replace(mix_config(SPARK, 2, 1, ("upsert", "update"), 1),
                                    writer_profiles=(FLINK, FLINK)))


def test_explorer_finds_the_compaction_undelete_as_a_known_finding():
    args = ["explore", "--engine", "bfs", "--profile", SPARK, "--writer-profile", f"w2={FLINK}",
            "--writers", "3", "--mix", "compact,cdc_delete,insert"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert re.search(r"dropped the delete file\(s\) w\d-1-e1 that still applied", r.output)
    assert "KNOWN FINDING" in r.output


@pytest.mark.parametrize("name", ["commands/spark-metadata-delete-applies-at-commit.yaml"])
def test_metadata_only_delete_is_judged_at_its_commit(name):
    """Spark's metadata-only DELETE deletes by its filter at commit time, rows inserted
    concurrently included (real Spark agrees); a serial order explains it, so no lost write
    (the oracle used to judge it by the rows it read at its scan)."""
    v = run_scenario(load_scenario(os.path.join(ROOT, "scenarios", "builtin", name)))
    assert not v.failures and v.properties == []


def test_metadata_only_delete_after_a_flink_upsert_is_no_lost_write():
    from dataclasses import replace
    cfg = replace(mix_config("spark-3.5-cow-snapshot", 3, 1,
                             ("delete", "update", "upsert", "cdc_delete"), 1),
                  writer_profiles=("", FLINK))
    res = search(fit_mix_to_profiles(cfg), engine="bfs", traces=False)
    assert res.complete and "lost_write" not in res.violations


def test_spark_delete_and_flink_cdc_delete_of_one_row_is_the_double_delete():
    """A Spark merge-on-read DELETE and a Flink CDC delete of one row both commit (Spark's
    DELETE has no delete-file check): both left the key deleted, so it is the known double
    delete (equivalent writes), not an unexpected anomaly."""
    args = ["explore", "--engine", "bfs", "--profile", "spark-3.5-mor-serializable",
            "--writer-profile", f"w2={FLINK}", "--writers", "2", "--mix", "delete,cdc_delete"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0 and "UNEXPECTED" not in r.output, r.output
    assert "KNOWN FINDING (corpus traces/double-delete-v2-mor-serializable.json)" in r.output



@pytest.mark.parametrize("workers", [1, 2])
def test_a_search_whose_command_is_refused_at_begin_is_an_input_error(workers):
    """An exploration of an upsert sink on a table partitioned by a column that is not an
    equality field: the job could never start (FlinkSink.Builder.appendWriter). The search
    stops with one clear InputError, in process or from a worker process, not a traceback."""
    from dataclasses import replace
    cfg = mix_config(FLINK, 2, 1, ("upsert",), 1)
    cfg = replace(cfg, schema=(("id", "int"), ("v", "string")), partition_spec=("identity(v)",))
    with pytest.raises(InputError) as e:
        search(cfg, engine="bfs", workers=workers, traces=False)
    assert "a command of this configuration cannot run: In UPSERT mode, source column 'v'" \
        in str(e.value)
