"""caseSensitive(false) (issue 11 item 5): filters bind their column names case-insensitively
on DeleteFiles, OverwriteFiles and RowDelta; messages print them as written. Java agreement:
scenarios/builtin/filters/case-insensitive-filters.yaml (tests/conformance)."""

from __future__ import annotations

import os

import pytest

from icecheck.models.filters import parse_filter, rename_columns, resolve_columns
from icecheck.scenarios import BUILTIN_DIR
from icecheck.scenarios.errors import InputError
from icecheck.scenarios.format import load_scenario, parse_scenario
from icecheck.scenarios.runner import execute_scenario, model_config
from icecheck.scenarios.yamlload import load_yaml

HEAD = ("version: 1\ntable:\n  schema: {id: int, category: string}\nfiles:\n"
        "  a: {rows: [[1, x]]}\nsteps:\n  - commit: {op: append, add: [a]}\n")


def _parse(step):
    return parse_scenario(load_yaml(HEAD + f"  - commit: {step}\n", "x.yaml"), "x.yaml")


def test_builtin_scenario_passes():
    sc = load_scenario(os.path.join(BUILTIN_DIR, "filters", "case-insensitive-filters.yaml"))
    verdict, _ = execute_scenario(sc, model_config(sc))
    assert verdict.passed, verdict.failures


def test_resolve_and_rename_round_trip():
    expr, written = resolve_columns(parse_filter("ID = 1 and not Category is null"),
                                    ["id", "category"])
    assert str(expr) == str(parse_filter("id = 1 and not category is null"))
    assert written == {"id": "ID", "category": "Category"}
    assert str(rename_columns(expr, written)) == str(parse_filter("ID = 1 and not Category is null"))


def test_operation_records_the_written_names():
    sc = _parse("{op: delete_files, row_filter: \"ID = 1\", case_sensitive: false}")
    op = sc.steps[-1].operation
    assert not op.case_sensitive and op.written_names == (("id", "ID"),)
    assert str(op.row_filter) == str(parse_filter("id = 1"))


@pytest.mark.parametrize("step, message", [
    ("{op: delete_files, row_filter: \"ID = 1\"}", "ID"),          # case-sensitive by default
    ("{op: append, add: [a], case_sensitive: false}", "append takes no case_sensitive"),
    ("{op: delete_files, row_filter: \"id = 1\", case_sensitive: 'no'}",
     "case_sensitive must be true or false"),
    ("{op: overwrite, row_filter: \"ID = 1\", case_sensitive: false, "
     "validate: {filter: \"Id = 1\"}}", "written both"),
])
def test_bad_case_input_names_the_line(step, message):
    with pytest.raises(InputError) as e:
        _parse(step)
    assert message in str(e.value) and "x.yaml:" in str(e.value)


def test_row_delta_data_files_exist_binds_case_sensitively():
    """validateDataFilesExist's manifest scan ignores caseSensitive(false) (Java 1.10.2,
    MergingSnapshotProducer.java:800-811): the builtin scenario is Java-agreed."""
    sc = load_scenario(os.path.join(BUILTIN_DIR, "filters",
                                    "case-insensitive-row-delta-data-files-exist.yaml"))
    verdict, _ = execute_scenario(sc, model_config(sc))
    assert verdict.passed, verdict.failures


@pytest.mark.parametrize("text, named", [
    ("CATEGORY = 'b'", "CATEGORY"),
    ("category = 'b' and ID = 1", "ID"),          # the first predicate binds: the second fails
    ("ID = 1 and Category = 'b'", "ID"),
    ("id = 1 or Id = 2 or ID = 3", "Id"),          # the first spelling Java cannot find
])
def test_case_sensitive_binding_names_the_first_failing_predicate(text, named):
    from icecheck.models.table import Schema, TableConfig
    from icecheck.models.transforms import PartitionSpec
    from icecheck.models.validation import ValidationFailed, _bind_case_sensitive
    table = TableConfig(Schema((("id", "int"), ("category", "string"))), PartitionSpec(()))
    expr, written = resolve_columns(parse_filter(text), table.schema.names)
    with pytest.raises(ValidationFailed) as e:
        _bind_case_sensitive(table, expr, written)
    assert e.value.check == "data_files_exist"
    assert str(e.value) == (f"Cannot find field '{named}' in struct: "
                            f"struct<1: id: optional int, 2: category: optional string>")


def test_case_sensitive_binding_accepts_names_as_in_the_schema():
    from icecheck.models.table import Schema, TableConfig
    from icecheck.models.transforms import PartitionSpec
    from icecheck.models.validation import _bind_case_sensitive
    table = TableConfig(Schema((("id", "int"), ("category", "string"))), PartitionSpec(()))
    expr, written = resolve_columns(parse_filter("id = 1 and category = 'b'"), table.schema.names)
    assert written == {}
    _bind_case_sensitive(table, expr, written)      # nothing to fail on
