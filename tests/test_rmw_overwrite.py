"""Issue 43, item 5: writes computed from their own read (``INSERT OVERWRITE t SELECT ... FROM
t``: OVERWRITE / OVERWRITE_PARTITIONS with ``select``) and per-job write options
(``isolation-level``, ``validate-from-snapshot-id``, ``snapshot-property.<k>``).

Planning: the rows an overwrite writes derive from the rows of the snapshot it began at.
Judgement: read-modify-write, as a MERGE; a concurrent append the overwrite drops unseen is a
lost write, a concurrent delete it writes back an undelete, each allowed or not by the level
the command ran at (Spark: its write option, none by default). Searches are exhaustive and
bounded by state counts. Option errors: one line naming the file and line, exit 2.
"""

from __future__ import annotations

import os
import textwrap

import pytest
from click.testing import CliRunner

from icecheck.cli.main import main
from icecheck.models.rmw import Select, derived_rows
from icecheck.pipelines.check import explore
from icecheck.pipelines.load import load_pipeline
from icecheck.scenarios.format import load_scenario
from icecheck.scenarios.runner import run_scenario

NAMES = ("id", "day", "v")


# -- planning -------------------------------------------------------------------------------

def test_dedup_keeps_the_greatest_row_per_key_and_set_rewrites_a_column():
    rows = [(1, "d1", "a"), (2, "d1", None), (1, "d1", "c"), (2, "d1", "b"), (3, "d2", "x")]
    out = derived_rows(Select(dedup=("id",), order_by=("v",)), NAMES, rows)
    assert sorted(out) == [(1, "d1", "c"), (2, "d1", "b"), (3, "d2", "x")]
    # one row per key, each one of the rows read (a dedup invents nothing)
    assert len({r[0] for r in out}) == len(out) and set(out) <= set(rows)
    # nulls last under DESC: the null v loses to any value
    assert (2, "d1", None) not in out
    # set alone rewrites every row read, keeping the others' columns
    assert derived_rows(Select(set=(("v", "x"),)), NAMES, rows) == [
        (r[0], r[1], "x") for r in rows]
    # dedup then set
    both = derived_rows(Select(dedup=("id",), set=(("v", "z"),)), NAMES, rows)
    assert sorted(both) == [(1, "d1", "z"), (2, "d1", "z"), (3, "d2", "z")]


SCENARIO = """\
version: 1
id: rmw-{name}
profile: spark-3.5-cow-serializable
table:
  schema: {{id: int, day: string, v: string}}
  partition_spec: [identity(day)]
files:
  d1: {{rows: [[1, d1, a], [1, d1, b], [2, d1, v0]]}}
  d2: {{rows: [[5, d2, v0]]}}
steps:
  - commit: {{op: append, add: [d1, d2]}}
  - begin: w1
    command: {command}
{between}  - commit: w1
"""


def _run(tmp_path, command: str, between: str = "", name: str = "x"):
    path = tmp_path / f"{name}.yaml"
    path.write_text(SCENARIO.format(name=name, command=command, between=between))
    return run_scenario(load_scenario(str(path)))


def _props(verdict) -> dict:
    return {p["property"]: p["status"] for p in verdict.properties}


def test_rows_derive_from_the_snapshot_the_command_read(tmp_path):
    """A static dedup of the whole table; a dynamic one scoped by its WHERE replaces only the
    partitions it writes; a transform of one partition by a static overwrite of it."""
    v = _run(tmp_path, "{sql: OVERWRITE, select: {dedup: [id], order_by: [v]}}")
    assert v.outcome == "committed" and v.steps[-1].operation == "overwrite"
    assert v.rows == [[1, "d1", "b"], [2, "d1", "v0"], [5, "d2", "v0"]]
    v = _run(tmp_path, "{sql: OVERWRITE_PARTITIONS, where: \"id = 1\", select: {dedup: [id]}}")
    # dynamic: partition d1 is replaced by what was read of it (id 1 only): id 2 goes, d2 stays
    assert v.rows == [[1, "d1", "b"], [5, "d2", "v0"]]
    v = _run(tmp_path, "{sql: OVERWRITE, where: \"day = 'd2'\", select: {set: {v: w1}}}")
    assert v.rows == [[1, "d1", "a"], [1, "d1", "b"], [2, "d1", "v0"], [5, "d2", "w1"]]
    assert v.properties == []
    # a dynamic overwrite that writes nothing commits nothing (SparkWrite.DynamicOverwrite)
    v = _run(tmp_path, "{sql: OVERWRITE_PARTITIONS, where: \"id = 9\", select: {dedup: [id]}}")
    assert v.outcome == "noop"
    # a static one still deletes what its filter selects
    v = _run(tmp_path, "{sql: OVERWRITE, where: \"day = 'd2' and id = 9\", select: {dedup: [id]}}")
    assert v.outcome == "committed"


def test_the_rows_are_those_read_not_those_at_commit(tmp_path):
    """The concurrent INSERT's row is not in what the overwrite wrote: it read snapshot 1."""
    between = ("  - begin: w2\n    command: {sql: INSERT, rows: [[3, d1, new]]}\n"
               "  - commit: w2\n")
    v = _run(tmp_path, "{sql: OVERWRITE_PARTITIONS, select: {dedup: [id]}}", between)
    assert v.outcome == "committed"
    assert [3, "d1", "new"] not in v.rows
    assert _props(v) == {"lost_write": "allowed"}


def test_snapshot_property_is_recorded_in_the_summary(tmp_path):
    v = _run(tmp_path, "{sql: OVERWRITE_PARTITIONS, select: {dedup: [id]}, write_options: "
                       "{snapshot-property.job: nightly-dedup, snapshot-property.run: 7}}")
    assert v.steps[-1].summary["job"] == "nightly-dedup"
    assert v.steps[-1].summary["run"] == "7"


# -- the write options' validations, against concurrent writes (as observed on Spark) ----------

INSERT3 = "  - begin: w2\n    command: {sql: INSERT, rows: [[3, d1, new]]}\n  - commit: w2\n"
DELETE2 = "  - begin: w2\n    command: {sql: DELETE, where: \"id = 2\"}\n  - commit: w2\n"


@pytest.mark.parametrize("kind", ["OVERWRITE", "OVERWRITE_PARTITIONS"])
@pytest.mark.parametrize("options, between, outcome, message, props", [
    ("", INSERT3, "committed", None, {"lost_write": "allowed"}),
    ("", DELETE2, "committed", None, {"undelete": "allowed"}),
    ("isolation-level: snapshot, validate-from-snapshot-id: read", INSERT3, "committed", None,
     {"lost_write": "allowed"}),
    ("isolation-level: snapshot, validate-from-snapshot-id: read", DELETE2,
     "validation_failed", "Found conflicting deleted files", {}),
    ("isolation-level: serializable, validate-from-snapshot-id: read", INSERT3,
     "validation_failed", "Found conflicting files", {}),
    ("isolation-level: serializable, validate-from-snapshot-id: read", "", "committed", None,
     {}),
    # no validate-from-snapshot-id: validated from the table's first snapshot, so it fails on
    # the set-up's own files with nothing concurrent (observed on Spark)
    ("isolation-level: serializable", "", "validation_failed", "Found conflicting files", {}),
    ("validate-from-snapshot-id: read", DELETE2, "committed", None, {"undelete": "allowed"}),
])
def test_write_options_validate_as_spark(tmp_path, kind, options, between, outcome, message,
                                         props):
    opts = f", write_options: {{{options}}}" if options else ""
    v = _run(tmp_path, f"{{sql: {kind}, select: {{dedup: [id]}}{opts}}}", between)
    assert v.outcome == outcome, (v.outcome, v.message)
    if message:
        assert v.message.startswith(message), v.message
    assert _props(v) == props


def test_a_lost_append_is_judged_at_the_commands_own_level(tmp_path):
    """The same lost write: allowed at snapshot (Spark's level checks concurrent deletes only)
    and with no level, must hold where the rule does not apply (a row the overwrite had read:
    a concurrent UPDATE it wrote back at snapshot is a ValidationException on Spark, so the
    model finds it only with no level)."""
    from icecheck.properties.expectations import MUST_HOLD, expectation
    from icecheck.properties.violation import Violation
    lost = {"level": "row", "unread_by_remover": True}
    for level, want in (("none", "allowed"), ("snapshot", "allowed"),
                        ("serializable", MUST_HOLD)):
        v = Violation("lost_write", "x", "violation", {**lost, "command_isolation": level})
        assert expectation("spark-3.5-cow-serializable", "cas", 2, v).status == want, level
    # a lost row the overwrite had read is not what snapshot isolation leaves unchecked
    v = Violation("lost_write", "x", "violation",
                  {"level": "row", "unread_by_remover": False, "command_isolation": "snapshot"})
    assert expectation("spark-3.5-cow-serializable", "cas", 2, v).status == MUST_HOLD
    # and without a command level, the profile's level decides as before
    v = Violation("lost_write", "x", "violation", {"level": "row"})
    assert expectation("spark-3.5-cow-serializable", "cas", 2, v).status == MUST_HOLD


# -- exhaustive searches: the lost append under snapshot isolation, not under serializable ----

PIPELINE = """\
name: dedup beside an append
table:
  schema: {{id: int, day: string, v: string}}
  partition_spec: [identity(day)]
domain:
  keys: [2]
initial_rows: [[1, d1, a], [1, d1, b], [2, d1, v0]]
key: id
jobs:
  - name: ingest
    profile: spark-3.5-cow-serializable
    program:
      - {{sql: INSERT, rows: [[3, d1, "{{job}}"]]}}
  - name: gdpr
    profile: spark-3.5-cow-serializable
    program:
      - {{sql: DELETE, where: "id = {{key}}"}}
  - name: dedup
    profile: spark-3.5-cow-serializable
{job_options}    program:
      - {{sql: {kind}, select: {{dedup: [id], order_by: [v]}}{options}}}
bounds: {{max_states: 20000}}
"""


def _explore(tmp_path, kind: str, options: str = "", job_options: str = ""):
    path = tmp_path / "p.yaml"
    path.write_text(PIPELINE.format(kind=kind, options=options, job_options=job_options))
    out = explore(load_pipeline(str(path)), details=False)
    assert out.complete
    return {a.property: (a.verdict, a.status, tuple(a.jobs)) for a in out.anomalies}


@pytest.mark.parametrize("kind", ["OVERWRITE", "OVERWRITE_PARTITIONS"])
def test_search_finds_lost_append_and_undelete_without_a_level(tmp_path, kind):
    got = _explore(tmp_path, kind)
    assert got["lost_write"][:2] == ("fail", "must_hold")
    assert set(got["lost_write"][2]) == {"ingest", "dedup"}
    assert got["undelete"][:2] == ("fail", "must_hold")
    assert set(got["undelete"][2]) == {"gdpr", "dedup"}


@pytest.mark.parametrize("kind", ["OVERWRITE", "OVERWRITE_PARTITIONS"])
def test_search_finds_the_lost_append_under_snapshot_not_under_serializable(tmp_path, kind):
    snap = _explore(tmp_path, kind, ", write_options: {isolation-level: snapshot, "
                                    "validate-from-snapshot-id: read}")
    # snapshot: the concurrent DELETE is refused, the concurrent append is dropped unseen
    assert set(snap) == {"lost_write"}
    assert snap["lost_write"][:2] == ("fail", "must_hold")   # the gate: readers would see it
    ser = _explore(tmp_path, kind, "", job_options="    write_options: {isolation-level: "
                                                   "serializable, validate-from-snapshot-id: "
                                                   "read}\n")
    assert ser == {}


def test_the_check_proposes_the_safe_write_options_and_proves_them(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(PIPELINE.format(kind="OVERWRITE_PARTITIONS", options="", job_options=""))
    r = CliRunner().invoke(main, ["check", str(path), "--reports", str(tmp_path / "r")])
    assert r.exit_code == 1, r.output
    assert ("FIX (checked: the pipeline passes with it): give `dedup`'s OVERWRITE_PARTITIONS "
            "the write options isolation-level serializable and validate-from-snapshot-id "
            "read") in r.output


# -- malformed options: file:line, exit 2 -----------------------------------------------------

def _refused(tmp_path, text: str, line: int, fragment: str):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    r = CliRunner().invoke(main, ["check", str(path), "--reports", str(tmp_path / "r")])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1, r.output
    assert lines[0].startswith(f"error: {path}:{line}: "), lines[0]
    assert fragment in lines[0], lines[0]


def _pipeline(command: str, job_options: str = "", profile="spark-3.5-cow-serializable"):
    return ("table:\n"
            "  schema: {id: int, day: string, v: string}\n"
            "  partition_spec: [identity(day)]\n"
            "initial_rows: [[1, d1, a]]\n"
            "jobs:\n"
            "  - name: j\n"
            f"    profile: {profile}\n"
            f"{job_options}"
            "    program:\n"
            f"      - {command}\n")


def test_unknown_option_lists_the_known_ones(tmp_path):
    _refused(tmp_path, _pipeline("{sql: OVERWRITE, select: {dedup: [id]}, write_options: "
                                 "{isolation_level: serializable}}"), 9,
             "unknown write option 'isolation_level'; the model follows isolation-level, "
             "validate-from-snapshot-id, snapshot-property.<key>")
    _refused(tmp_path, _pipeline("{sql: OVERWRITE, select: {dedup: [id]}}",
                                 "    write_options:\n      fanout-enabled: true\n"), 9,
             "unknown write option 'fanout-enabled'")


def test_bad_option_values(tmp_path):
    _refused(tmp_path, _pipeline("{sql: OVERWRITE, select: {dedup: [id]}, write_options: "
                                 "{isolation-level: repeatable}}"), 9,
             "isolation-level must be one of serializable, snapshot")
    _refused(tmp_path, _pipeline("{sql: OVERWRITE, select: {dedup: [id]}}",
                                 "    write_options: {validate-from-snapshot-id: 1001}\n"), 8,
             "validate-from-snapshot-id must be 'read'")
    _refused(tmp_path, _pipeline("{sql: OVERWRITE, select: {dedup: [id]}, write_options: "
                                 "{snapshot-property.: x}}"), 9, "names no summary key")


def test_an_option_the_engine_does_not_read_is_refused(tmp_path):
    # Spark reads a DELETE's level from the table, and no SQL DELETE takes write options
    _refused(tmp_path, _pipeline("{sql: DELETE, where: \"id = 1\", write_options: "
                                 "{isolation-level: snapshot}}"), 9,
             "does not read write option 'isolation-level' on DELETE")
    _refused(tmp_path, _pipeline("{sql: DELETE, where: \"id = 1\", write_options: "
                                 "{isolation-level: snapshot}}"), 9,
             "from the table property write.delete.isolation-level")
    # PyIceberg takes no write options
    _refused(tmp_path, _pipeline("{sql: OVERWRITE, select: {dedup: [id]}, write_options: "
                                 "{snapshot-property.k: v}}",
                                 profile="pyiceberg-0.12-serializable"), 9,
             "does not read write option 'snapshot-property.k' on OVERWRITE")
    # an append validates nothing: isolation-level on INSERT would be silently ignored
    _refused(tmp_path, _pipeline("{sql: INSERT, rows: [[2, d1, x]], write_options: "
                                 "{isolation-level: serializable}}"), 9,
             "does not read write option 'isolation-level' on INSERT")
    # a job-level option no command of the job reads
    _refused(tmp_path, _pipeline("{sql: INSERT, rows: [[2, d1, x]]}",
                                 "    write_options: {isolation-level: serializable}\n"), 8,
             "no command of the job reads 'isolation-level'")


def test_select_errors(tmp_path):
    _refused(tmp_path, _pipeline("{sql: OVERWRITE, rows: [[1, d1, x]], select: {dedup: [id]}}"),
             9, "rows or a select, not both")
    _refused(tmp_path, _pipeline("{sql: OVERWRITE, select: {dedup: [ids]}}"), 9,
             "select.dedup names 'ids', which is not a column")
    _refused(tmp_path, _pipeline("{sql: OVERWRITE, select: {order_by: [v]}}"), 9,
             "order_by chooses the row a dedup keeps")
    _refused(tmp_path, _pipeline("{sql: OVERWRITE_PARTITIONS, rows: [[1, d1, x]], "
                                 "where: \"id = 1\"}"), 9, "a where belongs to a select")
    _refused(tmp_path, _pipeline("{sql: OVERWRITE, select: {set: {id: x}}}"), 9,
             "column id: 'x' is not an integer")
