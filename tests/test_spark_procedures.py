"""Spark procedures as commands (models/commands.py): rewrite_position_delete_files planned as
Spark plans it, refused where the model does not follow it (v3), and nothing to rewrite is no
commit. Their real-Spark runs are in tests/conformance/test_spark_target.py."""

import pytest

from icecheck.scenarios.format import load_scenario
from icecheck.scenarios.runner import run_scenario


def test_rewrite_position_deletes_refuses_v3_and_skips_nothing_to_do(tmp_path):
    from icecheck.scenarios.errors import InputError as _IE
    p = tmp_path / "v3.yaml"
    p.write_text("version: 1\nid: x\nprofile: spark-3.5-mor-serializable\n"
                 "table: {schema: {id: int, v: string}, format_version: 3}\n"
                 "files:\n  d1: {rows: [[1, a]]}\nsteps:\n  - commit: {op: append, add: [d1]}\n"
                 "  - begin: w1\n    command: {sql: REWRITE_POSITION_DELETES}\n")
    with pytest.raises(_IE, match="rewrites v2 position deletes into deletion vectors"):
        run_scenario(load_scenario(str(p)))
    p.write_text(p.read_text().replace("format_version: 3", "format_version: 2")
                 + "  - commit: w1\n    expect: {outcome: noop}\n")
    v = run_scenario(load_scenario(str(p)))
    assert not v.failures, v.failures
