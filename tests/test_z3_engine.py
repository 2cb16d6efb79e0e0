"""The z3 bounded checker: it finds the known undelete, proves a fixed configuration clean,
its traces replay on the executable model, and a trace that does not replay fails loudly."""

import pytest
from click.testing import CliRunner

from icecheck.cli.main import main
from icecheck.engines.config import mix_config
from icecheck.engines.z3_engine import (LineageTables, Z3ReplayError, Z3Unsupported, cross_check,
                                        replay, z3_search)
from icecheck.traces.execute import judge, model_for, run_actions

MOR_SI = mix_config("spark-3.5-mor-snapshot", 2, 1, ("delete", "update"), 1)
MOR_SER_V3 = mix_config("spark-3.5-mor-serializable", 2, 1, ("delete", "update"), 1,
                        format_version=3)


def test_finds_v2_mor_snapshot_undelete_and_it_replays():
    r = z3_search(MOR_SI, 8)
    assert "undelete" in r.violations and "undelete" in r.unexpected
    assert not r.unsat_within_bounds
    actions = r.traces["undelete"]["actions"]
    assert actions == r.actions["undelete"] and len(actions) == 6
    model = model_for(MOR_SI)
    run = run_actions(model, actions)
    assert run.stopped is None
    assert "undelete" in judge(MOR_SI, model, run.final).names
    assert r.traces["undelete"]["kind"] == "violation"
    assert r.traces["undelete"]["found_by"]["engine"] == "z3"


def test_mor_serializable_v3_is_clean_within_bounds():
    r = z3_search(MOR_SER_V3, 10)
    assert r.violations == set() and r.unsat_within_bounds and r.unexpected_unsat
    assert not r.failed


def test_a_trace_that_does_not_replay_raises():
    tables = LineageTables(MOR_SI)
    with pytest.raises(Z3ReplayError):
        replay(tables, ["w1.begin", "w1.refresh", "w1.cas"], None, "undelete")
    with pytest.raises(Z3ReplayError):
        replay(tables, ["w1.cas"], None, "undelete")
    # A corrupted property table makes z3 return a run the model does not confirm.
    for node in tables.prop:
        tables.prop[node] = tables.prop[node] | {"lost_write"}
        tables.prop_unexpected[node] = tables.prop_unexpected[node] | {"lost_write"}
    with pytest.raises(Z3ReplayError):
        z3_search(MOR_SI, 6, ["lost_write"], tables=tables)


def test_a_wrong_validation_table_is_caught():
    tables = LineageTables(MOR_SER_V3)
    for k in tables.val0:           # pretend every validation fails
        tables.val0[k] = False
    with pytest.raises(Z3ReplayError):
        cross_check(MOR_SER_V3, 10, tables=tables)


def test_encoding_agrees_with_the_model_on_random_runs():
    assert cross_check(MOR_SI, 15, seed=3) == 15
    py = mix_config("pyiceberg-0.12-serializable", 2, 1, ("delete", "update"), 1)
    assert cross_check(py, 10, seed=4) == 10


def test_unsupported_configurations():
    with pytest.raises(Z3Unsupported):
        z3_search(mix_config("spark-3.5-mor-snapshot", 2, 1, ("delete",), 1,
                             catalog="last_writer_wins"), 4)
    with pytest.raises(Z3Unsupported):
        z3_search(mix_config("spark-3.5-mor-snapshot", 2, 2, ("delete",), 1), 4)


def test_cli_search_exit_codes():
    runner = CliRunner()
    r = runner.invoke(main, ["z3", "search", "--profile", "spark-3.5-mor-serializable",
                             "--format", "3", "--mix", "delete,update", "--depth", "8"])
    assert r.exit_code == 0, r.output
    assert "no violation within bounds" in r.output
    r = runner.invoke(main, ["z3", "search", "--profile", "spark-3.5-mor-snapshot",
                             "--mix", "delete,update", "--depth", "8", "--json"])
    assert r.exit_code == 0, r.output      # the undelete is a recorded known finding
    assert "undelete" in r.output and '"failed_new": false' in r.output
    r = runner.invoke(main, ["z3", "search", "--profile", "spark-3.5-mor-snapshot",
                             "--mix", "delete,update", "--depth", "8", "--strict"])
    assert r.exit_code == 1, r.output
    r = runner.invoke(main, ["z3", "search", "--profile", "spark-3.5-mor-snapshot",
                             "--catalog", "last_writer_wins"])
    assert r.exit_code == 2
