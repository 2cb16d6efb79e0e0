"""PyIceberg's upsert as the model plans it (``commands._pyiceberg_upsert``): unchanged matches
left alone, and the conflict filter built from the updated keys as
``upsert_util.create_match_filter`` builds it. Agreement with real PyIceberg 0.12:
scenarios/builtin/pyiceberg/serializable-upsert-retry-validates-its-match-filter.yaml
(tests/conformance/test_pyiceberg_target.py runs every PyIceberg builtin)."""

from __future__ import annotations

from icecheck.models.commands import _changes, _pyiceberg_upsert
from icecheck.models.commands_spec import MERGE, Command
from icecheck.models.filters import And, Cmp, In, Or
from icecheck.models.reads import RowVersion
from icecheck.models.table import Schema, TableConfig
from icecheck.models.transforms import PartitionSpec

TABLE = TableConfig(Schema((("id", "int"), ("k", "int"), ("v", "string"))), PartitionSpec(()))
ROWS = [RowVersion((1, 1, "a"), "d1", 0, 1), RowVersion((2, 1, "b"), "d1", 1, 1),
        RowVersion((3, 2, "c"), "d2", 0, 1)]


def _plan(on, source):
    cmd = Command(MERGE, rows=tuple(source), on=tuple(on))
    changed, inserts = _changes(TABLE, cmd, ROWS)
    return _pyiceberg_upsert(TABLE, cmd, ROWS, changed), inserts


def test_one_join_column_filters_by_in_of_the_updated_keys():
    (changed, where), inserts = _plan(["id"], [(2, 1, "x"), (1, 1, "a"), (9, 9, "n")])
    assert changed == {("d1", 1): (2, 1, "x")}      # (1, 1, 'a') is already there as given
    assert where == In("id", (2,))
    assert inserts == [(9, 9, "n")]                 # a matched key is never inserted


def test_several_join_columns_filter_by_an_or_of_ands():
    (changed, where), _ = _plan(["id", "k"], [(3, 2, "y"), (1, 1, "z")])
    assert set(changed) == {("d1", 0), ("d2", 0)}
    assert where == Or(And(Cmp("=", "id", 1), Cmp("=", "k", 1)),
                       And(Cmp("=", "id", 3), Cmp("=", "k", 2)))


def test_nothing_updated_has_no_filter():
    (changed, where), inserts = _plan(["id"], [(1, 1, "a")])
    assert changed == {} and where is None and inserts == []


def test_separate_rewrites_write_kept_and_new_rows_apart():
    """``separate_rewrites`` (the PyIceberg profiles): d1 keeps (1, 1, 'a') in a file of its
    own, the updated row and the inserted one get files of their own; Java's layout (Spark
    profiles) writes one file per partition with the kept and the updated rows."""
    from icecheck.models.commands import _Names, _separate_rewrites
    from icecheck.models.profiles import get_profile
    assert get_profile("pyiceberg-0.12-serializable").separate_rewrites
    assert not get_profile("spark-3.5-cow-serializable").separate_rewrites
    (changed, _), inserts = _plan(["id"], [(2, 1, "x"), (9, 9, "n")])
    by_file = {"d1": ROWS[:2], "d2": ROWS[2:]}
    files = _separate_rewrites(TABLE, ["d1"], by_file, changed, inserts, _Names("w1", 1))
    assert [(f.path, f.rows) for f in files] == [("w1-1-d1", ((1, 1, "a"),)),
                                                 ("w1-1-d2", ((2, 1, "x"),)),
                                                 ("w1-1-d3", ((9, 9, "n"),))]
