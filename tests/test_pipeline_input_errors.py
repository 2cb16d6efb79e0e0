"""Issue 45, item 6: inputs users gave that ended in a traceback, a wrong exit code or were
silently accepted. Each is now one line naming the file and line (or the option), exit 2.

Pipeline files (pipelines/load.py), traces shown by ``trace show`` (traces/format.py,
traces/timeline.py), ``sweep --out``/``--scaling-out`` (sweep/driver.py), ``init``
(cli/commands_pipelines.py), a scenario's ``null_counts`` (scenarios/format.py) and sweep
spaces (sweep/space.py). Each test runs the command as a user does (click's runner: the
exit code and what is printed) and is cheap: the inputs are refused before any search.
"""

from __future__ import annotations

import copy
import json
import os
import re

import pytest
from click.testing import CliRunner

from icecheck.cli.main import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PIPELINE = """\
name: two writers
table:
  schema: {id: int, day: string, v: string}
  format_version: 2
domain:
  keys: [1]
initial_rows: [[1, d1, v0]]
jobs:
  - name: spark-update
    profile: spark-3.5-mor-serializable
    program:
      - {sql: UPDATE, where: "id = {key}", set: {v: "{job}"}}
  - name: pyiceberg-delete
    profile: pyiceberg-0.12-serializable
    program:
      - {sql: DELETE, where: "id = {key}"}
bounds: {max_states: 100}
"""


def invoke(args: list[str]):
    return CliRunner().invoke(main, args)


def refused(result, where: str, fragment: str) -> None:
    """Exit 2, one line ``error: WHERE: ...FRAGMENT...``, no traceback."""
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: {where}: "), lines[0]
    assert fragment in lines[0], lines[0]


def check_pipeline(tmp_path, text: str):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    return str(path), invoke(["check", str(path), "--reports", str(tmp_path / "reports")])


def test_the_base_pipeline_is_valid(tmp_path):
    """Every case below is this file with one change: the file itself passes."""
    path, r = check_pipeline(tmp_path, PIPELINE)
    assert r.exit_code == 0, r.output


def _with(old: str, new: str) -> str:
    assert PIPELINE.count(old) == 1, old
    return PIPELINE.replace(old, new)


PROPS = "  format_version: 2\n"

PIPELINE_CASES = {
    # domain.keys / domain.partitions given as a number or null: a TypeError before
    "keys-int": (_with("  keys: [1]\n", "  keys: 3\n"), 6,
                 "domain.keys must be a list of integers or strings, not an integer"),
    "keys-null": (_with("  keys: [1]\n", "  keys:\n"), 6,
                  "domain.keys must be a list of integers or strings, not nothing"),
    "partitions-int": (_with("  keys: [1]\n", "  keys: [1]\n  partitions: 5\n"), 7,
                       "domain.partitions must be a list of integers or strings, not an integer"),
    "partitions-null": (_with("  keys: [1]\n", "  keys: [1]\n  partitions: null\n"), 7,
                        "domain.partitions must be a list of integers or strings, not nothing"),
    "key-a-list": (_with("  keys: [1]\n", "  keys: [[1]]\n"), 6,
                   "domain.keys[0] must be an integer or a string, not a list"),
    # table.properties with an int key beside string ones: sorted() raised a TypeError
    "property-int-key": (_with(PROPS, PROPS + "  properties: {write.delete.mode: "
                                              "merge-on-read, 3: x}\n"), 5,
                         "table.properties: property names are strings, not 3"),
    # column types: a type the model has no values for failed in models/filters.py later
    "schema-blob": (_with("v: string}", "v: blob}"), 3,
                    "table.schema: column 'v' has unknown type 'blob'; expected one of int, "
                    "long, string"),
    "schema-list": (_with("v: string}", "v: [string]}"), 3,
                    "table.schema: column 'v' has unknown type a list"),
    # a partition field on a column the schema lacks: a ValueError in models/transforms.py
    "spec-unknown-column": (_with(PROPS, PROPS + "  partition_spec: [identity(zz)]\n"), 5,
                            "table.partition_spec: 'identity(zz)' partitions by 'zz', which is "
                            "not a column of table.schema"),
    "spec-twice": (_with(PROPS, PROPS + "  partition_spec: [identity(day), identity(day)]\n"), 5,
                   "cannot use partition name more than once: day"),
    # names that are no strings were shown as str() of a number or a list
    "name-int": (_with("name: two writers", "name: 5"), 1, "name must be a string, not an integer"),
    "name-list": (_with("name: two writers", "name: [a]"), 1, "name must be a string, not a list"),
    "job-name-mapping": (_with("  - name: spark-update", "  - name: {a: 1}"), 9,
                         "jobs[0].name must be a string, not a mapping"),
    "job-name-int": (_with("  - name: pyiceberg-delete", "  - name: 7"), 13,
                     "jobs[1].name must be a string, not an integer"),
    # `any:` beside `sql:` silently dropped the sql command
    "any-beside-sql": (_with('      - {sql: DELETE, where: "id = {key}"}',
                             '      - {sql: DELETE, where: "id = {key}", any: '
                             '[{sql: INSERT, rows: [[5, d1, x]]}]}'), 16,
                       "a command is either 'any: [...]' (alternatives) or one command, not "
                       "both ('any' beside sql, where)"),
    # property values no engine accepts; PyIceberg reads no mode, so nothing caught this one
    "delete-mode-sideways": (_with(PROPS, PROPS + "  properties: {write.delete.mode: sideways}\n"),
                             5, "table.properties: write.delete.mode must be copy-on-write or "
                                "merge-on-read, not 'sideways'"),
    "merge-mode-int": (_with(PROPS, PROPS + "  properties: {write.merge.mode: 1}\n"), 5,
                       "write.merge.mode must be copy-on-write or merge-on-read, not 1"),
    "isolation-sideways": (_with(PROPS, PROPS + "  properties:\n"
                                               "    write.update.isolation-level: sideways\n"), 6,
                           "write.update.isolation-level must be serializable or snapshot, not "
                           "'sideways'"),
    "isolation-upper-case": (_with(PROPS, PROPS + "  properties:\n"
                                                 "    write.delete.isolation-level: SNAPSHOT\n"),
                             6, "must be serializable or snapshot, not 'SNAPSHOT'"),
}


@pytest.mark.parametrize("name", sorted(PIPELINE_CASES))
def test_bad_pipeline_names_its_line(tmp_path, name):
    text, line, fragment = PIPELINE_CASES[name]
    path, r = check_pipeline(tmp_path, text)
    refused(r, f"{path}:{line}", fragment)


def test_table_properties_iceberg_accepts_pass(tmp_path):
    """The values Iceberg accepts are kept, and still checked against the jobs' profiles."""
    path, r = check_pipeline(tmp_path, _with(PROPS, PROPS + "  properties:\n"
                                             "    write.update.mode: merge-on-read\n"
                                             "    write.delete.isolation-level: serializable\n"))
    assert r.exit_code == 0, r.output


def test_a_scenario_refuses_a_property_value_iceberg_does_not_accept(tmp_path):
    """The check lives in models/table.property_error: scenarios and traces get it too."""
    path = tmp_path / "s.yaml"
    path.write_text("version: 1\nid: x\ntable:\n  schema: {id: int}\n  properties:\n"
                    "    write.update.mode: sideways\nsteps: []\n")
    refused(invoke(["scenario", "run", str(path)]), f"{path}:6",
            "write.update.mode must be copy-on-write or merge-on-read, not 'sideways'")


# -- trace show ---------------------------------------------------------------------------------
def _trace(tmp_path, change) -> str:
    with open(os.path.join(ROOT, "traces", "undelete-v2-mor-snapshot.json"),
              encoding="utf-8") as f:
        doc = json.load(f)
    doc = copy.deepcopy(doc)
    change(doc)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc, indent=2))
    return str(path)


def _line_of(path: str, key: str) -> int:
    with open(path, encoding="utf-8") as f:
        return next(i for i, line in enumerate(f, 1) if f'"{key}":' in line)


@pytest.mark.parametrize("key,value,fragment", [
    ("title", 5, "field 'title' must be a string"),
    ("title", ["a"], "field 'title' must be a string"),
    ("id", 5, "field 'id' must be a string"),
    ("expectation", [1], "field 'expectation' must be null or an object"),
    ("expectation", "known_finding", "field 'expectation' must be null or an object"),
    ("expectation", {"status": 1}, "field 'expectation' must be null or an object"),
])
def test_trace_show_refuses_a_field_of_the_wrong_type(tmp_path, key, value, fragment):
    path = _trace(tmp_path, lambda d: d.__setitem__(key, value))
    refused(invoke(["trace", "show", path]), f"{path}:{_line_of(path, key)}", fragment)


def test_trace_show_refuses_a_violation_without_a_message(tmp_path):
    path = _trace(tmp_path, lambda d: d["verdict"]["violations"][0].pop("message"))
    refused(invoke(["trace", "show", path]), f"{path}:{_line_of(path, 'violations')}",
            "each 'message' must be a string")


@pytest.mark.parametrize("change,fragment", [
    (lambda c: c.__setitem__("key", [1]), "field 'config': malformed configuration: key [1] "
                                          "is not a column"),
    (lambda c: c["table"].__setitem__("partition_spec", ["identity(zz)"]),
     "malformed trace: ValueError: row has no value for partition source column 'zz'"),
    (lambda c: c["table"].__setitem__("properties", {"write.delete.mode": "sideways"}),
     "write.delete.mode must be copy-on-write or merge-on-read"),
])
def test_trace_show_names_the_file_not_config(tmp_path, change, fragment):
    """Its configuration's errors name the trace file (they named ``<config>``)."""
    path = _trace(tmp_path, lambda d: change(d["config"]))
    r = invoke(["trace", "show", path])
    refused(r, path, fragment)
    assert "<config>" not in r.output


# -- sweep --out ----------------------------------------------------------------------------
@pytest.mark.parametrize("args,option", [
    (["--executor", "serial", "--out"], "--out"),
    (["--scaling", "--scaling-out"], "--scaling-out"),
])
def test_sweep_out_naming_a_file(tmp_path, args, option):
    """A file where the results' folder belongs: exit 2 naming the option, before any cell
    runs (it was a FileExistsError traceback; the scaling run's came after both masters)."""
    f = tmp_path / "results"
    f.write_text("mine\n")
    r = invoke(["sweep", *args, str(f), "--catalog", "cas", "--format", "2",
                "--profile", "spark-3.5-cow-serializable", "--commands", "DELETE+UPDATE"])
    refused(r, option, f"{str(f)!r} is a file, not a folder")
    assert f.read_text() == "mine\n"


def test_sweep_out_with_a_file_where_its_cells_go(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "cells").write_text("")
    r = invoke(["sweep", "--executor", "serial", "--out", str(tmp_path / "out"), "--catalog",
                "cas", "--format", "2", "--profile", "spark-3.5-cow-serializable",
                "--commands", "DELETE+UPDATE"])
    refused(r, "--out", "cells' is a file, not a folder")


# -- init -----------------------------------------------------------------------------------
def test_init_prints_a_path_with_markup_characters(tmp_path, monkeypatch):
    """``a[/]b.yaml`` is a closing tag to rich: the file was written, then printing it failed
    with a MarkupError (exit 1)."""
    monkeypatch.chdir(tmp_path)
    r = invoke(["init", "a[/]b.yaml"])
    assert r.exit_code == 0, r.output
    assert r.output.strip() == "wrote a[/]b.yaml; check it with: icecheck check 'a[/]b.yaml'"
    assert (tmp_path / "a[" / "]b.yaml").read_text().startswith("# An icecheck pipeline")


@pytest.mark.parametrize("target", ["nowhere.yaml", "exists.yaml"])
def test_init_never_replaces_or_follows_a_symbolic_link(tmp_path, target):
    """A dangling link was replaced by the starter; a link is refused, dangling or not, and
    neither it nor what it points at changes."""
    (tmp_path / "exists.yaml").write_text("mine\n")
    link = tmp_path / "pipeline.yaml"
    link.symlink_to(tmp_path / target)
    refused(invoke(["init", str(link)]), str(link), "is a symbolic link; icecheck init never "
                                                    "overwrites a file or follows a link")
    assert link.is_symlink() and os.readlink(link) == str(tmp_path / target)
    assert not (tmp_path / "nowhere.yaml").exists()
    assert (tmp_path / "exists.yaml").read_text() == "mine\n"


def test_init_under_a_file_or_into_a_folder(tmp_path):
    (tmp_path / "f").write_text("")
    refused(invoke(["init", str(tmp_path / "f" / "p.yaml")]), str(tmp_path / "f" / "p.yaml"),
            "is not a folder")
    refused(invoke(["init", str(tmp_path) + "/"]), "PATH", "names no file")
    refused(invoke(["init", str(tmp_path)]), str(tmp_path), "already exists")


# -- a scenario's null_counts ---------------------------------------------------------------
NULL_COUNTS = """\
version: 1
id: nc
table:
  schema: {id: int, v: string}
files:
  d1:
    record_count: 2
    bounds: {id: [1, 2]}
    null_counts: %s
steps:
  - commit: {op: append, add: [d1]}
"""


@pytest.mark.parametrize("value,fragment", [
    ("{v: -1}", "null_counts of v must be an integer from 0 to the record_count 2, not -1"),
    ("{v: 3}", "null_counts of v must be an integer from 0 to the record_count 2, not 3"),
    ("{v: x}", "not 'x'"),
    ("{v: true}", "not True"),
    ("{v: 1.5}", "not 1.5"),
    ("{zz: 1}", "null_counts column 'zz' is not in the schema"),
    ("[1]", "file d1: null_counts must be a mapping, got a list"),
    ("5", "file d1: null_counts must be a mapping, got an integer"),
])
def test_null_counts_are_checked(tmp_path, value, fragment):
    path = tmp_path / "s.yaml"
    path.write_text(NULL_COUNTS % value)
    refused(invoke(["scenario", "run", str(path)]), f"{path}:9", fragment)


def test_null_counts_within_the_record_count_pass_and_beside_rows_are_refused(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(NULL_COUNTS % "{v: 2}")
    assert invoke(["scenario", "run", str(path)]).exit_code == 0
    path.write_text(NULL_COUNTS.replace("    record_count: 2\n    bounds: {id: [1, 2]}\n",
                                        "    rows: [[1, null]]\n") % "{v: 1}")
    refused(invoke(["scenario", "run", str(path)]), f"{path}:8",
            "null_counts is for a file given by record_count and bounds")


# -- sweep spaces ---------------------------------------------------------------------------
SPACE_CASES = {
    # shapes that slipped through: read letter by letter, an empty axis, a repeated entry
    "profiles-a-string": (r"^profiles:\n(  - .*\n)+", "profiles: spark-3.5-cow-serializable\n",
                          "profiles must be a list of profile names, not a string"),
    "profiles-empty": (r"^profiles:\n(  - .*\n)+", "profiles: []\n",
                       "profiles is empty; list one or more, or leave profiles out"),
    "profiles-repeated": (r"^profiles:\n(  - .*\n)+", "profiles: [no-validation, no-validation]\n",
                          "profiles[1] repeats 'no-validation'; each is listed once"),
    "catalogs-a-string": (r"^catalogs: .*$", "catalogs: cas",
                          "catalogs must be a list of catalog names, not a string"),
    "catalogs-null": (r"^catalogs: .*$", "catalogs:",
                      "catalogs must be a list of catalog names, not nothing"),
    "catalogs-empty": (r"^catalogs: .*$", "catalogs: []", "catalogs is empty"),
    "formats-a-number": (r"^format_versions: .*$", "format_versions: 2",
                         "format_versions must be a list of format versions (2, 3), not an "
                         "integer"),
    "formats-v1": (r"^format_versions: .*$", "format_versions: [1, 2]",
                   "format_versions must be between 2 and 3, not 1"),
    "formats-repeated": (r"^format_versions: .*$", "format_versions: [2, 2]",
                         "format_versions[1] repeats 2"),
    "combos-of-names": (r"^combos:\n(  - .*\n)+", "combos: [DELETE, UPDATE]\n",
                        "combos[0] must be a list, not a string"),
    "combos-empty": (r"^combos:\n(  - .*\n)+", "combos: []\n", "combos is empty"),
    "mixes-empty": (r"^mixes:\n", "mixes: []\nunused:\n", "mixes is empty"),
    # commands: an unknown sql (a traceback for a number), key or column, found by each
    # cell at run time (or taken for a command no profile has: not applicable)
    "command-sql-a-number": (r"^  COMPACT: .*$", "  COMPACT: {sql: 5}",
                             "command COMPACT: unknown command 5"),
    "command-unknown-sql": (r"^  COMPACT: .*$", "  COMPACT: {sql: NOPE}",
                            "command COMPACT: unknown command 'NOPE'"),
    "command-unknown-key": (r"^  COMPACT: .*$", "  COMPACT: {sql: COMPACT, wher: x}",
                            "command COMPACT: unknown key 'wher' in a COMPACT command"),
    "command-unknown-column": (r"^  DELETE: .*$", "  DELETE: {sql: DELETE, where: 'zz = 1'}",
                               "command DELETE: where: unknown column 'zz'"),
    "command-empty": (r"^  COMPACT: .*$", "  COMPACT: {}",
                      "command COMPACT: an empty mapping; a command needs sql"),
    "command-a-string": (r"^  COMPACT: .*$", "  COMPACT: compact",
                         "command COMPACT: a command is a mapping"),
    "commands-a-list": (r"^commands:\n", "commands: [DELETE]\nunused:\n",
                        "commands must be a mapping, not a list"),
    # initial rows that fail every cell at run time
    "rows-short": (r"^initial_rows: .*$", "initial_rows: [[1]]",
                   "initial_rows[0] must have 2 values (id, v), not [1]"),
    "rows-of-the-wrong-type": (r"^initial_rows: .*$", "initial_rows: [[a, b]]",
                               "initial_rows[0]: 'a' is not a value of column id (int)"),
    "rows-a-string": (r"^initial_rows: .*$", "initial_rows: abc",
                      "initial_rows must be a list of rows such as [1, v0], not a string"),
    "bounds-a-list": (r"^bounds:\n", "bounds: [1]\nunused:\n",
                      "bounds must be a mapping, not a list"),
}


@pytest.mark.parametrize("name", sorted(SPACE_CASES))
def test_bad_sweep_space_names_its_line(tmp_path, name):
    pattern, replacement, fragment = SPACE_CASES[name]
    with open(os.path.join(ROOT, "sweep", "space.yaml"), encoding="utf-8") as f:
        good = f.read()
    text, count = re.subn(pattern, replacement, good, count=1, flags=re.M)
    assert count == 1
    # a section replaced by a one-line value: its old body goes under a key dropped below
    text = re.sub(r"^unused:\n(?:(?:[ #].*)?\n)*", "", text, flags=re.M)
    line = next(i for i, (a, b) in enumerate(zip(good.splitlines(), text.splitlines()), 1)
                if a != b)
    path = tmp_path / "space.yaml"
    path.write_text(text)
    refused(invoke(["sweep", "--space", str(path), "--list"]), f"{path}:{line}", fragment)


def test_the_shipped_spaces_still_load():
    from icecheck.sweep.space import SCALING_PATH, SPACE_PATH, cells, load_space
    for path in (SPACE_PATH, SCALING_PATH):
        assert cells(load_space(path))[0]
