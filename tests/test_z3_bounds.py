"""The z3 search's bounds and progress (issue 45): ``explore --engine z3`` refuses the options it
cannot honour (``--max-memory``, ``--checkpoint``, ``--resume``, ...) instead of ignoring them, takes
``--max-depth`` up to ``MAX_DEPTH`` (exit 2 beyond), encodes no more steps than the longest run
of the configuration (``--max-depth 100000`` ran for minutes and, on 3 writers, took 17 GB at
depth 200), and reports each step and depth it works on (a terminal's progress line).
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from icecheck.cli.main import main
from icecheck.engines.config import mix_config
from icecheck.engines.explicit import with_retries
from icecheck.engines.z3_engine import MAX_DEPTH, LineageTables, z3_search

CFG = mix_config("spark-3.5-mor-snapshot", 2, 1, ("delete", "update"), 1)
Z3 = ["explore", "--engine", "z3", "--profile", "spark-3.5-mor-snapshot", "--mix",
      "delete,update"]


@pytest.mark.parametrize("extra,option", [
    (["--max-memory", "100"], "--max-memory"),
    (["--checkpoint", "ck"], "--checkpoint"),
    (["--checkpoint", "ck", "--resume"], "--checkpoint"),
    (["--max-states", "10"], "--max-states"),
    (["--workers", "2"], "--workers"),
    (["--time-budget", "5"], "--time-budget"),
    (["--no-por"], "--no-por"),
    (["--seed", "3"], "--seed"),
    (["--max-examples", "3"], "--max-examples"),
    (["--max-depth", str(MAX_DEPTH + 1)], "--max-depth"),
    (["--max-depth", "100000"], "--max-depth"),
])
def test_z3_refuses_what_it_cannot_honour(extra, option, tmp_path):
    with CliRunner().isolated_filesystem(temp_dir=tmp_path):
        r = CliRunner().invoke(main, Z3 + extra)
        lines = r.output.strip().splitlines()
        assert r.exit_code == 2 and len(lines) == 1, r.output
        assert lines[0].startswith(f"error: {option}: "), lines
        assert not (tmp_path / "ck").exists()


def test_z3_honours_retries_and_a_deep_bound():
    """--retries reaches the z3 search (its longest run depends on it), and a bound past the
    longest run encodes only that run's steps, with the verdicts of that bound."""
    tables = LineageTables(with_retries(CFG, 0))
    assert tables.longest_run == 2 * (1 + 2 * 1)
    r = CliRunner().invoke(main, Z3 + ["--retries", "0", "--max-depth", str(MAX_DEPTH),
                                       "--json"])
    assert r.exit_code in (0, 1), r.output
    assert '"encoded_depth": 6' in r.output and f'"depth": {MAX_DEPTH}' in r.output
    deep = z3_search(CFG, MAX_DEPTH)
    exact = z3_search(CFG, LineageTables(CFG).longest_run)
    assert deep.encoded_depth == exact.encoded_depth == exact.depth < deep.depth
    assert (deep.violations, deep.unexpected, deep.unsat_within_bounds) == \
        (exact.violations, exact.unexpected, exact.unsat_within_bounds)
    assert {p: len(a) for p, a in deep.actions.items()} == \
        {p: len(a) for p, a in exact.actions.items()}
    with pytest.raises(ValueError, match="depth must be from 0 to"):
        z3_search(CFG, MAX_DEPTH + 1)


def test_z3_reports_each_step_and_depth():
    """Each encoded step, then per property: the search for any run up to the bound, and
    each depth tried for the shortest one (the undelete: 6 actions, docs/z3.md)."""
    calls = []
    res = z3_search(CFG, 8, ["undelete"], progress=lambda *a: calls.append(a))
    assert [c for c in calls if c[0] == "encoding"] == [("encoding", t, 8) for t in range(1, 9)]
    solving = [d for stage, d, total in calls if stage == "undelete" and total == 8]
    found = len(res.actions["undelete"])
    assert found == 6 and solving[0] == 8
    assert solving[-(found + 1):] == list(range(found + 1))
