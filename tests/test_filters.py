"""Conflict-detection filters: parsing, Java rendering, row semantics and Iceberg's file pruning."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from icecheck.models.filters import (
    CMP_OPS,
    And,
    Cmp,
    Expr,
    FalseExpr,
    FilterSyntaxError,
    In,
    IsNull,
    Not,
    Or,
    TrueExpr,
    and_,
    check_columns,
    column_names,
    eval_java,
    eval_row,
    eval_row3,
    might_match_bounds,
    might_match_file,
    might_match_partition,
    must_match_file,
    not_,
    or_,
    parse_filter,
    project_inclusive,
    residual_for,
    rewrite_not,
    rows_might_match_file,
    to_filter_text,
)
from icecheck.models.transforms import (
    PartitionField,
    PartitionSpec,
    Transform,
    parse_partition_spec,
)

PROPERTY_SETTINGS = settings(max_examples=300, deadline=None, derandomize=True, database=None)

# --- parsing -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id = 5", Cmp("=", "id", 5)),
        ("id != -5", Cmp("!=", "id", -5)),
        ("id <> 5", Cmp("!=", "id", 5)),
        ("id<5", Cmp("<", "id", 5)),
        ("id <= 5", Cmp("<=", "id", 5)),
        ("id > 5", Cmp(">", "id", 5)),
        ("id >= 5", Cmp(">=", "id", 5)),
        ("category = 'a'", Cmp("=", "category", "a")),
        ("s = 'it''s'", Cmp("=", "s", "it's")),
        ("s = ''", Cmp("=", "s", "")),
        ("id in (1, 2)", In("id", (1, 2))),
        ("id NOT IN (3)", In("id", (3,), negated=True)),
        ("s in ('a', 'b')", In("s", ("a", "b"))),
        ("x is null", IsNull("x")),
        ("x IS NOT NULL", IsNull("x", negated=True)),
        ("true", TrueExpr()),
        ("FALSE", FalseExpr()),
        ("not id = 1", Not(Cmp("=", "id", 1))),
        ("a = 1 and b = 2", And(Cmp("=", "a", 1), Cmp("=", "b", 2))),
        ("a = 1 or b = 2", Or(Cmp("=", "a", 1), Cmp("=", "b", 2))),
        # names that start with keywords are still names
        ("android = 1 or nulls is null", Or(Cmp("=", "android", 1), IsNull("nulls"))),
    ],
)
def test_parse(text: str, expected: Expr) -> None:
    assert parse_filter(text) == expected


def test_precedence_not_over_and_over_or() -> None:
    a, b, c = Cmp("=", "a", 1), Cmp("=", "b", 2), Cmp("=", "c", 3)
    assert parse_filter("not a = 1 and b = 2 or c = 3") == Or(And(Not(a), b), c)
    assert parse_filter("a = 1 or b = 2 and c = 3") == Or(a, And(b, c))
    assert parse_filter("(a = 1 or b = 2) and c = 3") == And(Or(a, b), c)
    assert parse_filter("a = 1 and b = 2 and c = 3") == And(And(a, b), c)


def test_parser_folds_like_java_expressions() -> None:
    assert parse_filter("id = 1 and true") == Cmp("=", "id", 1)
    assert parse_filter("id = 1 and false") == FalseExpr()
    assert parse_filter("id = 1 or true") == TrueExpr()
    assert parse_filter("not not id = 1") == Cmp("=", "id", 1)
    assert parse_filter("not true") == FalseExpr()


def test_docs_example() -> None:
    expr = parse_filter("category = 'a' and (id < 10 or id in (20, 21)) and not name is null")
    assert str(expr) == (
        '((ref(name="category") == "a" and (ref(name="id") < 10 or ref(name="id") in (20, 21)))'
        ' and not(is_null(ref(name="name"))))'
    )
    assert column_names(expr) == ("category", "id", "name")


@pytest.mark.parametrize(
    ("text", "java"),
    [
        ("id = 5", 'ref(name="id") == 5'),
        ("category = 'a'", 'ref(name="category") == "a"'),
        ("id != 5", 'ref(name="id") != 5'),
        ("id < 5", 'ref(name="id") < 5'),
        ("id <= 5", 'ref(name="id") <= 5'),
        ("id > 5", 'ref(name="id") > 5'),
        ("id >= 5", 'ref(name="id") >= 5'),
        ("id in (1, 2)", 'ref(name="id") in (1, 2)'),
        ("id not in (1, 2)", 'ref(name="id") not in (1, 2)'),
        ("x is null", 'is_null(ref(name="x"))'),
        ("x is not null", 'not_null(ref(name="x"))'),
        ("a = 1 and b = 2", '(ref(name="a") == 1 and ref(name="b") == 2)'),
        ("a = 1 or b = 2", '(ref(name="a") == 1 or ref(name="b") == 2)'),
        ("not a = 1", 'not(ref(name="a") == 1)'),
        ("true", "true"),
        ("false", "false"),
    ],
)
def test_str_renders_like_java(text: str, java: str) -> None:
    assert str(parse_filter(text)) == java


@pytest.mark.parametrize(
    ("text", "column", "fragment"),
    [
        ("id = ", 6, "expected an integer or a 'quoted string', found end of input"),
        ("id === 3", 5, "found '='"),
        ("id in ()", 8, "expected an integer or a 'quoted string', found ')'"),
        ("", 1, "expected a column name, 'not', 'true', 'false' or '(', found end of input"),
        ("(id = 1", 8, "expected 'and', 'or' or ')', found end of input"),
        ("id = 1)", 7, "found ')'"),
        ("id = 1 id", 8, "expected 'and', 'or' or end of input, found 'id'"),
        ("id in (1,)", 10, "found ')'"),
        ("id in (1 2)", 10, "expected ',' or ')', found '2'"),
        ("and", 1, "found 'and'"),
        ("in = 5", 1, "found 'in'"),
        ("id = true", 6, "found 'true'"),
        ("id is 3", 7, "expected 'not' or 'null'"),
        ("id @ 3", 4, "unexpected character '@'"),
        ("s = 'abc", 5, "unterminated string literal"),
        ("id\n=", 5, "found end of input"),
        ("id == 3", 5, "found '='"),
    ],
)
def test_syntax_errors_are_one_clear_line(text: str, column: int, fragment: str) -> None:
    with pytest.raises(FilterSyntaxError) as info:
        parse_filter(text)
    message = str(info.value)
    assert f"at column {column}:" in message
    assert fragment in message
    assert "\n" not in message
    assert "lark" not in message.lower() and "Token(" not in message
    assert isinstance(info.value, ValueError)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_expressions_are_immutable_and_hashable() -> None:
    expr = parse_filter("a = 1 and (b in (1, 2) or not s is null)")
    assert expr == parse_filter("a = 1 and (b in (1, 2) or not s is null)")
    assert len({expr, parse_filter("a = 1 and (b in (1, 2) or not s is null)")}) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        expr.left = TrueExpr()  # type: ignore[misc, union-attr]
    assert In("a", [1, 2]).values == (1, 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        In("a", ())
    with pytest.raises(ValueError):
        Cmp("==", "a", 1)
    with pytest.raises(TypeError):
        Cmp("=", "a", True)


def test_check_columns() -> None:
    schema = {"id": "int", "big": "long", "category": "string"}
    check_columns(parse_filter("id = 1 and category in ('a') and big > 3000000000"), schema)
    with pytest.raises(
        FilterSyntaxError, match="unknown column 'nme'.*known columns: id, big, category"
    ):
        check_columns(parse_filter("id = 1 or nme is null"), schema)
    with pytest.raises(FilterSyntaxError, match="column 'id' is int but literal 'a' is a string"):
        check_columns(parse_filter("id = 'a'"), schema)
    with pytest.raises(FilterSyntaxError, match="column 'category' is string but literal 1"):
        check_columns(parse_filter("category in ('a', 1)"), schema)
    with pytest.raises(FilterSyntaxError, match="out of range for int"):
        check_columns(parse_filter("id < 3000000000"), schema)
    with pytest.raises(ValueError, match="unsupported column type"):
        check_columns(TrueExpr(), {"d": "double"})


# --- row semantics -----------------------------------------------------------------------------


def test_eval_row_basics() -> None:
    row = {"id": 3, "category": "a", "name": None}
    assert eval_row(parse_filter("id = 3 and category in ('a', 'b')"), row)
    assert not eval_row(parse_filter("id > 3 or category != 'a'"), row)
    assert eval_row(parse_filter("name is null and id not in (1, 2)"), row)
    assert eval_row(parse_filter("true"), row) and not eval_row(parse_filter("false"), row)


@pytest.mark.parametrize(
    ("text", "sql", "java"),
    [
        # SQL: any comparison with null is UNKNOWN (no match), and so is its negation.
        # Java's Evaluator: two-valued, null sorts first (Comparators.nullsFirst()).
        ("x < 5", None, True),
        ("x <= 5", None, True),
        ("x = 5", None, False),
        ("x > 5", None, False),
        ("x >= 5", None, False),
        ("x != 5", None, True),
        ("x in (1, 2)", None, False),
        ("x not in (1, 2)", None, True),
        ("not x < 5", None, False),
        ("not x = 5", None, True),
        ("x is null", True, True),
        ("x is not null", False, False),
        ("x < 5 or x is null", True, True),
        ("x < 5 and x is null", None, True),
        ("x < 5 and false", False, False),
    ],
)
def test_null_semantics(text: str, sql: bool | None, java: bool) -> None:
    expr = parse_filter(text)
    assert eval_row3(expr, {"x": None}) is sql
    assert eval_row(expr, {"x": None}) is (sql is True)
    assert eval_java(expr, {"x": None}) is java
    # a column missing from the row reads as null
    assert eval_row3(expr, {}) is sql


# --- InclusiveMetricsEvaluator -----------------------------------------------------------------


def _bounds(
    text: str,
    lower: Mapping[str, Any],
    upper: Mapping[str, Any],
    nulls: Mapping[str, int],
    count: int = 10,
) -> bool:
    return might_match_bounds(parse_filter(text), lower, upper, nulls, count)


def test_bounds_ranges() -> None:
    lower, upper, nulls = {"id": 5}, {"id": 9}, {"id": 0}
    assert not _bounds("id < 5", lower, upper, nulls)
    assert _bounds("id < 6", lower, upper, nulls)
    assert not _bounds("id <= 4", lower, upper, nulls)
    assert _bounds("id <= 5", lower, upper, nulls)
    assert not _bounds("id > 9", lower, upper, nulls)
    assert _bounds("id > 8", lower, upper, nulls)
    assert not _bounds("id >= 10", lower, upper, nulls)
    assert _bounds("id >= 9", lower, upper, nulls)
    assert not _bounds("id = 4", lower, upper, nulls)
    assert not _bounds("id = 10", lower, upper, nulls)
    assert _bounds("id = 7", lower, upper, nulls)
    # bounds are not values in the file, so != and not in can never be ruled out
    assert _bounds("id != 5", {"id": 5}, {"id": 5}, nulls)
    assert _bounds("id not in (5)", {"id": 5}, {"id": 5}, nulls)


def test_bounds_in() -> None:
    lower, upper, nulls = {"id": 2}, {"id": 9}, {}
    assert not _bounds("id in (0, 1)", lower, upper, nulls)
    assert not _bounds("id in (10, 11)", lower, upper, nulls)
    assert not _bounds("id in (1, 10)", lower, upper, nulls)  # straddles the range, none inside
    assert _bounds("id in (1, 5)", lower, upper, nulls)
    many = "id in (" + ", ".join(str(v) for v in range(100, 301)) + ")"
    assert _bounds(many, lower, upper, nulls)  # over IN_PREDICATE_LIMIT: not checked


def test_bounds_nulls() -> None:
    all_null = {"id": 10}
    assert not _bounds("id = 1", {}, {}, all_null)
    assert not _bounds("id < 1", {}, {}, all_null)
    assert not _bounds("id in (1, 2)", {}, {}, all_null)
    assert not _bounds("id is not null", {}, {}, all_null)
    assert _bounds("id is null", {}, {}, all_null)
    assert _bounds("id != 1", {}, {}, all_null)
    assert not _bounds("id is null", {"id": 1}, {"id": 2}, {"id": 0})
    assert _bounds("id is null", {"id": 1}, {"id": 2}, {})  # unknown null count


def test_bounds_unknown_and_counts() -> None:
    assert _bounds("id < 0", {}, {}, {})
    assert _bounds("id > 100", {"id": 1}, {}, {})
    assert not _bounds("id = 1", {}, {}, {}, count=0)
    assert not _bounds("true", {}, {}, {}, count=0)
    assert _bounds("id = 1", {"id": 5}, {"id": 6}, {}, count=-1)  # unknown count (imported Avro)
    assert not _bounds("false", {}, {}, {})


def test_bounds_push_not_down_first() -> None:
    # not(id < 5) is id >= 5: rows 6..9 match. Negating the "might match" of id < 5 would say no.
    assert _bounds("not id < 5", {"id": 1}, {"id": 9}, {"id": 0})
    assert not _bounds("not id < 5", {"id": 1}, {"id": 4}, {"id": 0})
    assert not _bounds("not (id >= 0 or category is null)", {"id": 1}, {"id": 4}, {"id": 0})


def test_bounds_strings() -> None:
    lower, upper = {"category": "b"}, {"category": "d"}
    assert not _bounds("category = 'a'", lower, upper, {})
    assert _bounds("category = 'c'", lower, upper, {})
    assert not _bounds("category > 'd'", lower, upper, {})
    assert _bounds("category >= 'd'", lower, upper, {})
    assert not _bounds("category < 'b'", lower, upper, {})


# --- inclusive projection ----------------------------------------------------------------------

TRUNC10 = parse_partition_spec(["truncate(10, id)"])
BUCKET16 = parse_partition_spec(["bucket(16, id)"])
IDENTITY = parse_partition_spec(["identity(id)", "identity(category)"])
TRUNC3_S = parse_partition_spec(["truncate(3, category)"])


@pytest.mark.parametrize(
    ("spec", "text", "projected"),
    [
        (TRUNC10, "id < 10", 'ref(name="id_trunc") <= 0'),
        (TRUNC10, "id <= 10", 'ref(name="id_trunc") <= 10'),
        (TRUNC10, "id > 9", 'ref(name="id_trunc") >= 10'),
        (TRUNC10, "id >= 9", 'ref(name="id_trunc") >= 0'),
        (TRUNC10, "id = 15", 'ref(name="id_trunc") == 10'),
        (TRUNC10, "id < -10", 'ref(name="id_trunc") <= -20'),
        (TRUNC10, "id != 15", "true"),
        (TRUNC10, "id in (1, 15, 3)", 'ref(name="id_trunc") in (0, 10)'),
        (TRUNC10, "id not in (1)", "true"),
        (TRUNC10, "id is null", 'is_null(ref(name="id_trunc"))'),
        (TRUNC10, "not id is null", 'not_null(ref(name="id_trunc"))'),
        (TRUNC10, "not id < 10", 'ref(name="id_trunc") >= 10'),
        (TRUNC3_S, "category < 'abcd'", 'ref(name="category_trunc") <= "abc"'),
        (TRUNC3_S, "category > 'ab'", 'ref(name="category_trunc") >= "ab"'),
        (TRUNC3_S, "category = 'abcd'", 'ref(name="category_trunc") == "abc"'),
        (TRUNC3_S, "category in ('abcd', 'abce')", 'ref(name="category_trunc") in ("abc")'),
        (TRUNC3_S, "category != 'abcd'", "true"),
        (BUCKET16, "id = 34", 'ref(name="id_bucket") == 3'),
        (BUCKET16, "id in (34, 34)", 'ref(name="id_bucket") in (3)'),
        (BUCKET16, "id < 34", "true"),
        (BUCKET16, "id != 34", "true"),
        (BUCKET16, "id not in (34)", "true"),
        (BUCKET16, "id is not null", 'not_null(ref(name="id_bucket"))'),
        (
            IDENTITY,
            "not (id = 1 and category in ('a'))",
            '(ref(name="id") != 1 or ref(name="category") not in ("a"))',
        ),
        (IDENTITY, "other = 1", "true"),
        (IDENTITY, "other = 1 and id > 2", 'ref(name="id") > 2'),
        (IDENTITY, "other = 1 or id > 2", "true"),
        (PartitionSpec(()), "id = 1", "true"),
        (
            parse_partition_spec(["bucket(16, id)", "truncate(10, id)"]),
            "id = 34",
            '(ref(name="id_bucket") == 3 and ref(name="id_trunc") == 30)',
        ),
    ],
)
def test_inclusive_projection(spec: PartitionSpec, text: str, projected: str) -> None:
    assert str(project_inclusive(parse_filter(text), spec)) == projected


def test_might_match_partition() -> None:
    assert might_match_partition(parse_filter("id < 10"), TRUNC10, (0,))
    assert not might_match_partition(parse_filter("id < 10"), TRUNC10, (10,))
    assert not might_match_partition(parse_filter("category = 'a'"), IDENTITY, (1, "b"))
    assert might_match_partition(parse_filter("category = 'a'"), IDENTITY, (1, "a"))
    assert might_match_partition(parse_filter("category = 'a'"), PartitionSpec(()), ())
    assert not might_match_partition(parse_filter("id = 34"), BUCKET16, (4,))
    # Java's Evaluator on a null partition value: nulls sort first.
    assert might_match_partition(parse_filter("id < 10"), TRUNC10, (None,))
    assert not might_match_partition(parse_filter("id > 10"), TRUNC10, (None,))
    assert might_match_partition(parse_filter("id is null"), TRUNC10, (None,))
    with pytest.raises(ValueError, match="has 2 values"):
        might_match_partition(parse_filter("id = 1"), TRUNC10, (1, 2))


def test_might_match_file_needs_both() -> None:
    expr = parse_filter("category = 'a' and id > 5")
    assert might_match_file(expr, IDENTITY, (7, "a"), {"id": 7}, {"id": 7}, {"id": 0}, 1)
    assert not might_match_file(expr, IDENTITY, (7, "b"), {"id": 7}, {"id": 7}, {"id": 0}, 1)
    assert not might_match_file(expr, TRUNC10, (0,), {"id": 1}, {"id": 5}, {"id": 0}, 3)


# --- Hypothesis: round trips and soundness -----------------------------------------------------

INT_COLUMNS = ("a", "b")
STR_COLUMN = "s"
COLUMNS = (*INT_COLUMNS, STR_COLUMN)
SCHEMA = {"a": "int", "b": "long", "s": "string"}

# Small domains shared by literals and row values, so equalities, bound ties and values that
# share a truncate[3] block ("abcd"/"abce", 3/5) come up often.
STRINGS = ("", "a", "ab", "abc", "abcd", "abce", "b", "b'c")
int_literals = st.integers(-3, 3)
str_literals = st.sampled_from(STRINGS)
int_values = st.none() | st.integers(-3, 3)
str_values = st.none() | st.sampled_from(STRINGS)


def _predicates_on(
    columns: st.SearchStrategy[str], literals: st.SearchStrategy[Any]
) -> st.SearchStrategy[Expr]:
    return st.one_of(
        st.builds(Cmp, st.sampled_from(CMP_OPS), columns, literals),
        st.builds(
            In, columns, st.lists(literals, min_size=1, max_size=3).map(tuple), st.booleans()
        ),
    )


leaves = st.one_of(
    _predicates_on(st.sampled_from(INT_COLUMNS), int_literals),
    _predicates_on(st.just(STR_COLUMN), str_literals),
    st.builds(IsNull, st.sampled_from(COLUMNS), st.booleans()),
    st.just(TrueExpr()),
    st.just(FalseExpr()),
)
exprs = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.builds(And, children, children),
        st.builds(Or, children, children),
        st.builds(Not, children),
    ),
    max_leaves=6,
)
rows = st.fixed_dictionaries({"a": int_values, "b": int_values, "s": str_values})
row_sets = st.lists(rows, min_size=1, max_size=5)

TRANSFORMS = (Transform("identity"), Transform("bucket", 4), Transform("truncate", 3))


def _spec_from_choices(choices: tuple[tuple[int, ...], ...]) -> PartitionSpec:
    fields = [
        PartitionField(column, transform)
        for column, picked in zip(COLUMNS, choices, strict=True)
        for index, transform in enumerate(TRANSFORMS)
        if index in picked
    ]
    return PartitionSpec(tuple(fields))


# For each column: no field, or some of identity / bucket[4] / truncate[3] on it.
specs = st.tuples(*[st.sets(st.integers(0, 2), max_size=2).map(tuple) for _ in COLUMNS]).map(
    _spec_from_choices
)


def _java_folded(expr: Expr) -> Expr:
    """Rebuild ``expr`` with Java's ``Expressions`` folding, as ``parse_filter`` builds it."""
    if isinstance(expr, And):
        return and_(_java_folded(expr.left), _java_folded(expr.right))
    if isinstance(expr, Or):
        return or_(_java_folded(expr.left), _java_folded(expr.right))
    if isinstance(expr, Not):
        return not_(_java_folded(expr.child))
    return expr


def _stats(file_rows: list[dict[str, Any]], hidden: set[str]) -> tuple[dict, dict, dict]:
    """Bounds of the non-null values and null counts, as a writer records them; columns in
    ``hidden`` have no stats at all (unknown)."""
    lower: dict[str, Any] = {}
    upper: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for column in COLUMNS:
        if column in hidden:
            continue
        values = [row[column] for row in file_rows if row[column] is not None]
        nulls[column] = len(file_rows) - len(values)
        if values:
            lower[column], upper[column] = min(values), max(values)
    return lower, upper, nulls


@PROPERTY_SETTINGS
@given(exprs)
def test_round_trip_through_filter_text(expr: Expr) -> None:
    parsed = parse_filter(to_filter_text(expr))
    assert parsed == _java_folded(expr)
    assert str(parsed) == str(_java_folded(expr))
    check_columns(parsed, SCHEMA)


@PROPERTY_SETTINGS
@given(st.text())
def test_any_string_literal_round_trips(text: str) -> None:
    expr = In("s", (text, "x"), negated=True)
    assert parse_filter(to_filter_text(expr)) == expr


@PROPERTY_SETTINGS
@given(exprs, rows)
def test_rewrite_not_preserves_both_semantics(expr: Expr, row: dict[str, Any]) -> None:
    rewritten = rewrite_not(expr)
    assert "Not(" not in repr(rewritten)
    assert eval_row3(rewritten, row) is eval_row3(expr, row)
    assert eval_java(rewritten, row) is eval_java(expr, row)
    # SQL TRUE implies Java true (Kleene logic is monotone in its UNKNOWNs).
    if eval_row(expr, row):
        assert eval_java(expr, row)


@PROPERTY_SETTINGS
@given(exprs, row_sets, st.sets(st.sampled_from(COLUMNS)))
def test_bounds_are_sound(expr: Expr, file_rows: list[dict[str, Any]], hidden: set[str]) -> None:
    lower, upper, nulls = _stats(file_rows, hidden)
    if any(eval_row(expr, row) for row in file_rows):
        assert might_match_bounds(expr, lower, upper, nulls, len(file_rows))


@PROPERTY_SETTINGS
@given(exprs, row_sets, specs)
def test_partition_projection_is_sound(
    expr: Expr, file_rows: list[dict[str, Any]], spec: PartitionSpec
) -> None:
    projected = str(project_inclusive(expr, spec))
    for row in file_rows:
        if eval_row(expr, row):
            assert might_match_partition(expr, spec, spec.partition_of(row)), projected


@PROPERTY_SETTINGS
@given(exprs, rows)
def test_identity_projection_is_exact(expr: Expr, row: dict[str, Any]) -> None:
    spec = parse_partition_spec(["identity(a)", "identity(b)", "identity(s)"])
    assert might_match_partition(expr, spec, spec.partition_of(row)) is eval_java(expr, row)


def _files(all_rows: list[dict[str, Any]], spec: PartitionSpec, hidden: set[str]):
    """A data file holds rows of one partition: the rows grouped into files by partition, each
    as (partition, rows, its stats)."""
    files: dict[tuple, list[dict[str, Any]]] = {}
    for row in all_rows:
        files.setdefault(spec.partition_of(row), []).append(row)
    return [(partition, file_rows, _stats(file_rows, hidden))
            for partition, file_rows in files.items()]


@PROPERTY_SETTINGS
@given(exprs, row_sets, specs, st.sets(st.sampled_from(COLUMNS)))
def test_file_pruning_is_sound(
    expr: Expr, all_rows: list[dict[str, Any]], spec: PartitionSpec, hidden: set[str]
) -> None:
    for partition, file_rows, (lower, upper, nulls) in _files(all_rows, spec, hidden):
        if any(eval_row(expr, row) for row in file_rows):
            assert might_match_file(expr, spec, partition, lower, upper, nulls, len(file_rows))


row_sets_without_nulls = st.lists(
    st.fixed_dictionaries({"a": int_literals, "b": int_literals, "s": st.sampled_from(STRINGS)}),
    min_size=1, max_size=5)


@PROPERTY_SETTINGS
@given(exprs, row_sets_without_nulls, specs, st.sets(st.sampled_from(COLUMNS)))
def test_row_filter_delete_is_sound_without_nulls(
    expr: Expr, all_rows: list[dict[str, Any]], spec: PartitionSpec, hidden: set[str]
) -> None:
    # deleteFromRowFilter's per-file decision (the partition residual, then the metrics
    # evaluators): with no null anywhere, a file it removes holds only rows the filter selects,
    # and a file holding a selected row is never skipped.
    for partition, file_rows, (lower, upper, nulls) in _files(all_rows, spec, hidden):
        args = (spec, partition, lower, upper, nulls, len(file_rows))
        if must_match_file(expr, *args):
            assert all(eval_row(expr, row) for row in file_rows), str(residual_for(expr, spec, partition))
        if any(eval_row(expr, row) for row in file_rows):
            assert rows_might_match_file(expr, *args)


def test_residual_keeps_what_the_partition_cannot_decide() -> None:
    spec = parse_partition_spec(["identity(a)"])
    expr = parse_filter("a < 4 and s = 'x'")
    assert residual_for(expr, spec, (0,)) == Cmp("=", "s", "x")
    assert isinstance(residual_for(expr, spec, (7,)), FalseExpr)
    assert residual_for(expr, parse_partition_spec([]), ()) == expr  # unpartitioned


def test_null_partition_file_is_removed_by_an_ordered_filter() -> None:
    # Java 1.10.2 (scenario filters/null-partition-row-filter-delete): the residual of a < 4 on
    # a null partition value is true, so deleteFromRowFilter removes the file whole; the scan's
    # test (might_match_file) says no row of it can match.
    spec = parse_partition_spec(["identity(a)"])
    args = (spec, (None,), {}, {}, {"a": 1}, 1)
    assert isinstance(residual_for(Cmp("<", "a", 4), spec, (None,)), TrueExpr)
    assert must_match_file(Cmp("<", "a", 4), *args) and rows_might_match_file(Cmp("<", "a", 4), *args)
    assert not might_match_file(Cmp("<", "a", 4), *args)
    assert not rows_might_match_file(Cmp(">", "a", 4), *args)
    # unpartitioned, the metrics decide: a file of nulls cannot match a < 4
    flat = parse_partition_spec([])
    assert not rows_might_match_file(Cmp("<", "a", 4), flat, (), {}, {}, {"a": 1}, 1)


# --- exhaustive single predicates over the small domains ---------------------------------------
# Random trees rarely hit one comparison's edge (a bound equal to the literal, a value in the
# same truncate block as the literal), so every single predicate is also checked exhaustively.

DOMAINS: dict[str, tuple[Any, ...]] = {"a": tuple(range(-5, 6)), "s": STRINGS}


def _all_predicates(column: str) -> list[Expr]:
    domain = DOMAINS[column]
    preds: list[Expr] = [IsNull(column), IsNull(column, negated=True)]
    preds += [Cmp(op, column, value) for op in CMP_OPS for value in domain]
    pairs = [(x,) for x in domain] + [(x, y) for i, x in enumerate(domain) for y in domain[i + 1 :]]
    preds += [In(column, values, negated) for values in pairs for negated in (False, True)]
    return preds + [Not(pred) for pred in preds]


def _small_files(column: str) -> list[list[dict[str, Any]]]:
    values = (None, *DOMAINS[column])
    pairs = [(x,) for x in values] + [(x, y) for i, x in enumerate(values) for y in values[i + 1 :]]
    files = [[{column: value} for value in pair] for pair in pairs]
    return files + [file_rows + [{column: None}] for file_rows in files]


def _column_stats(column: str, file_rows: list[dict[str, Any]]) -> tuple[dict, dict, dict]:
    values = [row[column] for row in file_rows if row[column] is not None]
    nulls = {column: len(file_rows) - len(values)}
    if not values:
        return {}, {}, nulls
    return {column: min(values)}, {column: max(values)}, nulls


@pytest.mark.parametrize("column", ["a", "s"])
def test_bounds_exhaustively_sound_for_single_predicates(column: str) -> None:
    files = [(file_rows, _column_stats(column, file_rows)) for file_rows in _small_files(column)]
    for pred in _all_predicates(column):
        for file_rows, (lower, upper, nulls) in files:
            if any(eval_row(pred, row) for row in file_rows):
                assert might_match_bounds(pred, lower, upper, nulls, len(file_rows)), (
                    pred,
                    file_rows,
                )


@pytest.mark.parametrize("column", ["a", "s"])
@pytest.mark.parametrize("transform", TRANSFORMS)
def test_projection_exhaustively_sound_for_single_predicates(
    column: str, transform: Transform
) -> None:
    spec = PartitionSpec((PartitionField(column, transform),))
    rows_and_partitions = [
        ({column: v}, spec.partition_of({column: v})) for v in (None, *DOMAINS[column])
    ]
    for pred in _all_predicates(column):
        projected = project_inclusive(pred, spec)
        for row, partition in rows_and_partitions:
            if eval_row(pred, row):
                assert might_match_partition(pred, spec, partition), (
                    str(pred),
                    str(projected),
                    row,
                )


def test_manifest_evaluator_on_partition_summaries():
    """ManifestEvaluator: an all-null partition field cannot satisfy a comparison (unlike the
    per-file Evaluator, which sorts null first); bounds decide the rest."""
    from icecheck.models.filters import might_match_manifest, might_match_partition
    from icecheck.models.transforms import parse_partition_spec
    spec = parse_partition_spec(["truncate(4, id)"])
    f = parse_filter("id < 4")
    assert might_match_partition(f, spec, (None,))          # Evaluator: null < ... holds
    assert not might_match_manifest(f, spec, [(None,)])      # ManifestEvaluator: it cannot
    assert might_match_manifest(f, spec, [(None,), (0,)])
    assert not might_match_manifest(f, spec, [(4,), (8,)])
    assert might_match_manifest(parse_filter("id is null"), spec, [(None,), (4,)])
    assert not might_match_manifest(parse_filter("id is null"), spec, [(4,)])
    assert might_match_manifest(parse_filter("id != 3"), spec, [(None,)])
    assert might_match_manifest(parse_filter("id in (5, 100)"), spec, [(4,), (8,)])
    assert not might_match_manifest(parse_filter("id in (1, 100)"), spec, [(4,), (8,)])


@pytest.mark.parametrize("column", sorted(DOMAINS))
def test_residual_on_a_null_identity_partition_is_nulls_first(column: str) -> None:
    # ResidualVisitor compares a null partition value with the literal's nulls-first comparator:
    # on identity(column) every single predicate reduces to Java's Evaluator on a null value
    # (null < x, null <= x, null != x, not in, is null: true; the rest false).
    spec = parse_partition_spec([f"identity({column})"])
    for pred in _all_predicates(column):
        expected = TrueExpr if eval_java(pred, {column: None}) else FalseExpr
        assert isinstance(residual_for(pred, spec, (None,)), expected), pred
