"""Row predicates for Iceberg conflict-detection filters, and how Iceberg prunes files with them.

A writer's ``conflictDetectionFilter(expr)`` decides which concurrently added files count as
conflicts. Java never reads rows for this: ``ManifestReader`` keeps a file when

* the *inclusive projection* of the filter through the partition spec
  (``Projections.inclusive(spec).project(filter)``) evaluates true on ``file.partition()`` with
  the row ``Evaluator``, and
* the ``InclusiveMetricsEvaluator`` says the file's column bounds and null counts allow a match.

This module gives the model the same two tests (``might_match_partition``,
``might_match_bounds``, combined in ``might_match_file``), a parser for the scenario filter
language (``parse_filter``), Java's ``Expression.toString()`` rendering (``str(expr)``, which
appears in validation messages), and the ground truth of which rows a filter selects
(``eval_row``).

Null semantics (checked against ``Evaluator.java`` and ``Literals.java``):

* Java's row ``Evaluator`` is two-valued and compares with the literal's comparator, which is
  ``Comparators.nullsFirst()``: null sorts below every value. So in Java ``null < 5`` and
  ``null <= 5`` are *true*, ``null = 5``, ``null > 5``, ``null >= 5`` are false, ``null != 5``
  is true, ``null in (...)`` is false and ``null not in (...)`` is true. ``eval_java``
  reproduces this exactly; the model uses it where Java uses ``Evaluator``: on partition
  tuples, whose values can be null.
* ``InclusiveMetricsEvaluator`` assumes the opposite for rows: "all terms are null preserving",
  so ``col < 5`` cannot match a file whose ``col`` is all null. Under Java's row ``Evaluator``
  that would be unsound; under SQL semantics it is exact. The engines that produce conflict
  filters (Spark's DELETE/UPDATE/MERGE) select rows with SQL's three-valued logic, so
  ``eval_row`` -- "does this row match" for the model's ground truth -- uses SQL semantics: a
  comparison or ``in``/``not in`` with a null operand is UNKNOWN, ``not UNKNOWN`` is UNKNOWN,
  and a row matches only when the whole predicate is TRUE. With that choice both file-level
  tests are sound: they return False only when no row can match (see the Hypothesis tests).
  ``eval_row3`` exposes the three-valued result.
"""

from __future__ import annotations

import re

import functools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from lark import Lark, Token, Transformer, Tree
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

from .transforms import PartitionField, PartitionSpec

__all__ = [
    "And",
    "Cmp",
    "CMP_OPS",
    "Expr",
    "FalseExpr",
    "FilterSyntaxError",
    "In",
    "IsNull",
    "Not",
    "Or",
    "Predicate",
    "TrueExpr",
    "and_",
    "check_columns",
    "column_names",
    "eval_java",
    "eval_row",
    "eval_row3",
    "might_match_bounds",
    "might_match_file",
    "might_match_partition",
    "must_match_bounds",
    "must_match_file",
    "must_match_strict_projection",
    "negate",
    "not_",
    "or_",
    "parse_filter",
    "project_inclusive",
    "project_strict",
    "residual_for",
    "rewrite_not",
    "rows_might_match_file",
    "to_filter_text",
]

LiteralValue = int | str

CMP_OPS = ("=", "!=", "<", "<=", ">", ">=")
_JAVA_OPS = {"=": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_NEGATED_OPS = {"=": "!=", "!=": "=", "<": ">=", ">=": "<", "<=": ">", ">": "<="}

# InclusiveMetricsEvaluator.IN_PREDICATE_LIMIT: larger IN lists are not checked against bounds.
IN_PREDICATE_LIMIT = 200

_COLUMN_TYPES = ("int", "long", "string")
_INT_RANGES = {"int": (-(1 << 31), (1 << 31) - 1), "long": (-(1 << 63), (1 << 63) - 1)}


class FilterSyntaxError(ValueError):
    """A filter that cannot be parsed or does not fit the table schema; the message is one line."""


# --------------------------------------------------------------------------------------------
# Expressions


def _check_literal(value: Any) -> None:
    # bool is an int subclass; the language has no boolean literals, only true/false predicates.
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"filter literals are int or str, not {type(value).__name__}: {value!r}")


def _java_literal(value: LiteralValue) -> str:
    """``Literal.toString()``: strings in double quotes (unescaped, as Java prints them)."""
    return f'"{value}"' if isinstance(value, str) else str(value)


def _java_ref(column: str) -> str:
    """``NamedReference.toString()``."""
    return f'ref(name="{column}")'


@dataclass(frozen=True)
class TrueExpr:
    """``Expressions.alwaysTrue()``."""

    def __str__(self) -> str:
        return "true"


@dataclass(frozen=True)
class FalseExpr:
    """``Expressions.alwaysFalse()``."""

    def __str__(self) -> str:
        return "false"


@dataclass(frozen=True)
class Cmp:
    """``column op value`` with op one of ``=, !=, <, <=, >, >=``."""

    op: str
    column: str
    value: LiteralValue

    def __post_init__(self) -> None:
        if self.op not in CMP_OPS:
            raise ValueError(f"unknown comparison operator {self.op!r}; expected one of {CMP_OPS}")
        _check_literal(self.value)

    def __str__(self) -> str:
        return f"{_java_ref(self.column)} {_JAVA_OPS[self.op]} {_java_literal(self.value)}"


@dataclass(frozen=True)
class In:
    """``column in (values)``, or ``column not in (values)`` when ``negated``."""

    column: str
    values: tuple[LiteralValue, ...]
    negated: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", tuple(self.values))
        if not self.values:
            raise ValueError("an in/not in predicate needs at least one value")
        for value in self.values:
            _check_literal(value)

    def __str__(self) -> str:
        keyword = "not in" if self.negated else "in"
        values = ", ".join(_java_literal(value) for value in self.values)
        return f"{_java_ref(self.column)} {keyword} ({values})"


@dataclass(frozen=True)
class IsNull:
    """``column is null``, or ``column is not null`` when ``negated``."""

    column: str
    negated: bool = False

    def __str__(self) -> str:
        name = "not_null" if self.negated else "is_null"
        return f"{name}({_java_ref(self.column)})"


@dataclass(frozen=True)
class And:
    left: Expr
    right: Expr

    def __str__(self) -> str:
        return f"({self.left} and {self.right})"


@dataclass(frozen=True)
class Or:
    left: Expr
    right: Expr

    def __str__(self) -> str:
        return f"({self.left} or {self.right})"


@dataclass(frozen=True)
class Not:
    child: Expr

    def __str__(self) -> str:
        return f"not({self.child})"


Predicate = Cmp | In | IsNull
Expr = TrueExpr | FalseExpr | Cmp | In | IsNull | And | Or | Not

_TRUE = TrueExpr()
_FALSE = FalseExpr()


def and_(left: Expr, right: Expr) -> Expr:
    """``Expressions.and``: folds ``false`` and drops ``true`` operands, as Java does."""
    if isinstance(left, FalseExpr) or isinstance(right, FalseExpr):
        return _FALSE
    if isinstance(left, TrueExpr):
        return right
    if isinstance(right, TrueExpr):
        return left
    return And(left, right)


def or_(left: Expr, right: Expr) -> Expr:
    """``Expressions.or``: folds ``true`` and drops ``false`` operands, as Java does."""
    if isinstance(left, TrueExpr) or isinstance(right, TrueExpr):
        return _TRUE
    if isinstance(left, FalseExpr):
        return right
    if isinstance(right, FalseExpr):
        return left
    return Or(left, right)


def not_(child: Expr) -> Expr:
    """``Expressions.not``: negates constants and removes double negation, as Java does."""
    if isinstance(child, TrueExpr):
        return _FALSE
    if isinstance(child, FalseExpr):
        return _TRUE
    if isinstance(child, Not):
        return child.child
    return Not(child)


def _predicates(expr: Expr) -> Iterator[Predicate]:
    """The leaf predicates of ``expr``, left to right."""
    if isinstance(expr, (And, Or)):
        yield from _predicates(expr.left)
        yield from _predicates(expr.right)
    elif isinstance(expr, Not):
        yield from _predicates(expr.child)
    elif isinstance(expr, (Cmp, In, IsNull)):
        yield expr


def rename_columns(expr: Expr, names: Mapping[str, str]) -> Expr:
    """``expr`` with each column renamed by ``names`` (others unchanged)."""
    if isinstance(expr, (And, Or)):
        return type(expr)(rename_columns(expr.left, names), rename_columns(expr.right, names))
    if isinstance(expr, Not):
        return Not(rename_columns(expr.child, names))
    if isinstance(expr, (Cmp, In, IsNull)):
        return replace(expr, column=names.get(expr.column, expr.column))
    return expr


def resolve_columns(expr: Expr, schema_columns: Iterable[str]) -> tuple[Expr, dict[str, str]]:
    """Bind ``expr``'s column names case-insensitively (Java's ``caseSensitive(false)``:
    ``Schema.caseInsensitiveFindField``): the expression with the schema's names, and
    ``{schema name: name as written}`` for the names written otherwise (the first such
    spelling, left to right, when one filter spells a column in several ways: the one a
    case-sensitive binding fails on first, ``validation._bind_case_sensitive``). A name matching
    no column is left as it is (``check_columns`` reports it)."""
    lower = {c.lower(): c for c in schema_columns}
    written: dict[str, str] = {}
    mapping: dict[str, str] = {}
    for name in column_names(expr):
        col = lower.get(name.lower())
        if col is not None and col != name:
            mapping[name] = col
            written.setdefault(col, name)
    return rename_columns(expr, mapping), written


def predicates(expr: Expr) -> tuple[Predicate, ...]:
    """The leaf predicates of ``expr``, left to right (the order Java binds them in)."""
    return tuple(_predicates(expr))


def column_names(expr: Expr) -> tuple[str, ...]:
    """The columns ``expr`` refers to, in order of first appearance, without repeats."""
    return tuple(dict.fromkeys(pred.column for pred in _predicates(expr)))


def negate(expr: Expr) -> Expr:
    """``Expression.negate()``: the logical complement with no ``Not`` at the top.

    Predicates flip their operation (``<`` to ``>=``, ``in`` to ``not in``, ``is null`` to
    ``not null``), and/or use De Morgan. Exact under SQL's three-valued logic as well: a
    predicate is FALSE exactly when its negation is TRUE.
    """
    if isinstance(expr, TrueExpr):
        return _FALSE
    if isinstance(expr, FalseExpr):
        return _TRUE
    if isinstance(expr, Cmp):
        return Cmp(_NEGATED_OPS[expr.op], expr.column, expr.value)
    if isinstance(expr, In):
        return In(expr.column, expr.values, not expr.negated)
    if isinstance(expr, IsNull):
        return IsNull(expr.column, not expr.negated)
    if isinstance(expr, And):
        return or_(negate(expr.left), negate(expr.right))
    if isinstance(expr, Or):
        return and_(negate(expr.left), negate(expr.right))
    if isinstance(expr, Not):
        return expr.child
    raise TypeError(f"not a filter expression: {expr!r}")


def rewrite_not(expr: Expr) -> Expr:
    """``Expressions.rewriteNot`` (the ``RewriteNot`` visitor): push every ``not`` into the leaves.

    Iceberg's metrics evaluators and projections run on the rewritten tree because a predicate
    they cannot decide defaults to "might match", and ``not(might match)`` would be wrong.
    """
    if isinstance(expr, And):
        return and_(rewrite_not(expr.left), rewrite_not(expr.right))
    if isinstance(expr, Or):
        return or_(rewrite_not(expr.left), rewrite_not(expr.right))
    if isinstance(expr, Not):
        return negate(rewrite_not(expr.child))
    return expr


# --------------------------------------------------------------------------------------------
# Our own filter syntax (the inverse of parse_filter)


def _filter_literal(value: LiteralValue) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


def to_filter_text(expr: Expr) -> str:
    """Render ``expr`` in the scenario filter language, fully parenthesised.

    ``parse_filter(to_filter_text(e))`` gives back ``e`` up to the constant folding and
    double-negation removal that ``parse_filter`` applies (as Java's ``Expressions`` does).
    """
    if isinstance(expr, TrueExpr):
        return "true"
    if isinstance(expr, FalseExpr):
        return "false"
    if isinstance(expr, Cmp):
        return f"{expr.column} {expr.op} {_filter_literal(expr.value)}"
    if isinstance(expr, In):
        values = ", ".join(_filter_literal(value) for value in expr.values)
        return f"{expr.column} {'not in' if expr.negated else 'in'} ({values})"
    if isinstance(expr, IsNull):
        return f"{expr.column} is {'not null' if expr.negated else 'null'}"
    if isinstance(expr, And):
        return f"({to_filter_text(expr.left)} and {to_filter_text(expr.right)})"
    if isinstance(expr, Or):
        return f"({to_filter_text(expr.left)} or {to_filter_text(expr.right)})"
    if isinstance(expr, Not):
        return f"not ({to_filter_text(expr.child)})"
    raise TypeError(f"not a filter expression: {expr!r}")


# --------------------------------------------------------------------------------------------
# Parsing (lark, LALR). Lark only builds the tree; everything after that is ours.

_GRAMMAR = r"""
?start: disjunction

?disjunction: conjunction
            | disjunction _OR conjunction                   -> or_expr
?conjunction: negation
            | conjunction _AND negation                     -> and_expr
?negation: _NOT negation                                    -> not_expr
         | atom
?atom: _LPAR disjunction _RPAR                              -> paren
     | _TRUE                                                -> true_expr
     | _FALSE                                               -> false_expr
     | NAME cmp_op literal                                  -> cmp_expr
     | NAME _IN _LPAR literal_list _RPAR                    -> in_expr
     | NAME _NOT _IN _LPAR literal_list _RPAR               -> not_in_expr
     | NAME _IS _NULL                                       -> is_null_expr
     | NAME _IS _NOT _NULL                                  -> not_null_expr

literal_list: literal (_COMMA literal)*
?literal: INT | STRING
?cmp_op: EQ | NE | LT | LE | GT | GE

_OR: "or"i
_AND: "and"i
_NOT: "not"i
_IN: "in"i
_IS: "is"i
_NULL: "null"i
_TRUE: "true"i
_FALSE: "false"i
_LPAR: "("
_RPAR: ")"
_COMMA: ","
EQ: "="
NE: "!=" | "<>"
LT: "<"
LE: "<="
GT: ">"
GE: ">="
NAME: /(?!(?:or|and|not|in|is|null|true|false)\b)[a-z_][a-z0-9_]*/i
INT: /-?[0-9]+/
STRING: /'(?:[^']|'')*'/

%import common.WS
%ignore WS
"""

_CMP_TERMINALS = ("EQ", "NE", "LT", "LE", "GT", "GE")
_CMP_TOKEN_OPS = {"EQ": "=", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}

# How each terminal is named in error messages, in the order they are listed.
_TERMINAL_TEXT = {
    "NAME": "a column name",
    "_NOT": "'not'",
    "_TRUE": "'true'",
    "_FALSE": "'false'",
    "_LPAR": "'('",
    "CMP": "a comparison operator (=, !=, <>, <, <=, >, >=)",
    "_IN": "'in'",
    "_IS": "'is'",
    "_NULL": "'null'",
    "INT": "an integer",
    "STRING": "a 'quoted string'",
    "_AND": "'and'",
    "_OR": "'or'",
    "_COMMA": "','",
    "_RPAR": "')'",
    "$END": "end of input",
}


@functools.cache
def _parser() -> Lark:
    """The LALR parser, built once (grammar compilation is the slow part)."""
    return Lark(_GRAMMAR, parser="lalr", lexer="contextual", propagate_positions=False)


def _string_value(token: Token) -> str:
    return str(token)[1:-1].replace("''", "'")


def _literal_value(token: Token) -> LiteralValue:
    return int(token) if token.type == "INT" else _string_value(token)


class _ToExpr(Transformer):
    """Turns lark's parse tree into our expressions (with Java's ``Expressions`` folding)."""

    def or_expr(self, children: list) -> Expr:
        return or_(children[0], children[1])

    def and_expr(self, children: list) -> Expr:
        return and_(children[0], children[1])

    def not_expr(self, children: list) -> Expr:
        return not_(children[0])

    def paren(self, children: list) -> Expr:
        # parentheses only group (kept in the tree for PyIceberg's rendering, pyiceberg_str)
        return children[0]

    def true_expr(self, children: list) -> Expr:
        return _TRUE

    def false_expr(self, children: list) -> Expr:
        return _FALSE

    def cmp_expr(self, children: list) -> Expr:
        name, op, literal = children
        return Cmp(_CMP_TOKEN_OPS[op.type], str(name), _literal_value(literal))

    def in_expr(self, children: list) -> Expr:
        name, values = children
        return In(str(name), values, False)

    def not_in_expr(self, children: list) -> Expr:
        name, values = children
        return In(str(name), values, True)

    def is_null_expr(self, children: list) -> Expr:
        return IsNull(str(children[0]), False)

    def not_null_expr(self, children: list) -> Expr:
        return IsNull(str(children[0]), True)

    def literal_list(self, children: list) -> tuple[LiteralValue, ...]:
        return tuple(_literal_value(token) for token in children)


def _message(text: str, column: int, expected: str, found: str) -> str:
    # repr() keeps the message on one line even when the filter text has newlines.
    return f"invalid filter {text!r} at column {column}: expected {expected}, found {found}"


def _join_alternatives(items: list[str]) -> str:
    if len(items) <= 1:
        return items[0] if items else "nothing"
    return ", ".join(items[:-1]) + " or " + items[-1]


def _describe_expected(terminals: Any) -> str:
    names = set(terminals or ())
    if names & set(_CMP_TERMINALS):
        names = (names - set(_CMP_TERMINALS)) | {"CMP"}
    known = [text for name, text in _TERMINAL_TEXT.items() if name in names]
    unknown = sorted(name for name in names if name not in _TERMINAL_TEXT)
    return _join_alternatives(known + unknown)


def _found_text(token: Token) -> str:
    if token.type == "$END":
        return "end of input"
    if token.type == "STRING":
        return str(token)
    return "'" + str(token) + "'"


def _accepted_before(text: str, position: int) -> set[str]:
    """The terminals the grammar accepts at 0-based ``position``, where a bad token starts.

    Lark's own expected set belongs to the state reached *after* the reductions the bad token
    triggered, which can be narrower than the truth (for ``(id = 1`` it lists only ')' and
    'or'). Replaying the tokens before ``position`` and asking the interactive parser, which
    tries each terminal on a copy of that state, gives the full set.
    """
    interactive = _parser().parse_interactive(text)
    try:
        for token in interactive.iter_parse():
            if token.start_pos is not None and token.start_pos >= position:
                break
    except UnexpectedInput:
        pass
    return set(interactive.accepts())


def _syntax_error(text: str, error: UnexpectedInput) -> FilterSyntaxError:
    """One-line message with the 1-based character offset and what the grammar expected there."""
    if isinstance(error, UnexpectedToken):
        token = error.token
        at_end = token.type == "$END"
        column = len(text) + 1 if at_end else (token.start_pos or 0) + 1
        position = len(text) if at_end else column - 1
        expected = _describe_expected(_accepted_before(text, position) or error.expected)
        return FilterSyntaxError(_message(text, column, expected, _found_text(token)))
    if isinstance(error, UnexpectedCharacters):
        column = error.pos_in_stream + 1
        if error.char == "'":
            return FilterSyntaxError(
                f"invalid filter {text!r} at column {column}: unterminated string literal "
                "(strings are single-quoted; write '' for a quote inside one)"
            )
        expected = _describe_expected(_accepted_before(text, error.pos_in_stream) or error.allowed)
        return FilterSyntaxError(
            _message(text, column, expected, f"unexpected character {error.char!r}")
        )
    if isinstance(error, UnexpectedEOF):
        expected = _describe_expected(error.expected)
        return FilterSyntaxError(_message(text, len(text) + 1, expected, "end of input"))
    return FilterSyntaxError(f"invalid filter {text!r}: {error.__class__.__name__}")


MAX_FILTER_TERMS = 200
_CONNECTIVES = re.compile(r"\b(?:and|or|not)\b", re.IGNORECASE)


def parse_filter(text: str) -> Expr:
    """Parse a conflict-detection filter such as ``category = 'a' and (id < 10 or id in (20))``.

    Keywords are case-insensitive; precedence is ``not`` > ``and`` > ``or``; ``<>`` is ``!=``.
    ``and``/``or``/``not`` are built with Java's ``Expressions`` folding (``x and true`` is
    ``x``, ``not not x`` is ``x``) so ``str()`` matches what Java would print. Column names
    are not checked here (see ``check_columns``). Raises ``FilterSyntaxError`` (one line,
    with the 1-based column and what was expected) on bad input.
    """
    if not isinstance(text, str):
        raise FilterSyntaxError(f"a filter must be a string, not {type(text).__name__}")
    # Parsing, folding and evaluating are recursive over the expression; a filter of
    # hundreds of terms would exhaust Python's stack. Real conflict filters are a few terms.
    terms = len(_CONNECTIVES.findall(text)) + text.count("(")
    if terms > MAX_FILTER_TERMS:
        raise FilterSyntaxError(f"filter too large: {terms} connectives and parentheses, at "
                                f"most {MAX_FILTER_TERMS}")
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as error:
        raise _syntax_error(text, error) from None
    except RecursionError:
        raise FilterSyntaxError("filter nested too deeply") from None
    try:
        result = _ToExpr().transform(tree)
    except VisitError as error:
        raise error.orig_exc from None
    except RecursionError:
        raise FilterSyntaxError("filter nested too deeply") from None
    assert not isinstance(result, (Tree, Token)), result
    return result


# --------------------------------------------------------------------------------------------
# PyIceberg's rendering of a filter


_PY_CMP = {"=": "EqualTo", "!=": "NotEqualTo", "<": "LessThan", "<=": "LessThanOrEqual",
           ">": "GreaterThan", ">=": "GreaterThanOrEqual"}
_PY_TRUE, _PY_FALSE = "AlwaysTrue()", "AlwaysFalse()"


def _py_literal(value: LiteralValue) -> str:
    """``repr`` of PyIceberg's literal: ``LongLiteral(1)`` for an int (its parser and
    ``literal(int)`` make longs), ``literal('a')`` for a string (``StringLiteral.__repr__``)."""
    return f"literal({value!r})" if isinstance(value, str) else f"LongLiteral({value})"


def _py_ref(column: str) -> str:
    return f"Reference(name={column!r})"


def _py_junction(name: str, absorbing: str, neutral: str, left: str, right: str) -> str:
    """``And``/``Or``'s folding (pyiceberg/expressions/__init__.py, ``And.__new__``,
    ``Or.__new__``): the absorbing constant wins, the neutral one drops out."""
    if absorbing in (left, right):
        return absorbing
    if left == neutral:
        return right
    if right == neutral:
        return left
    return f"{name}(left={left}, right={right})"


def _py_and(left: str, right: str) -> str:
    return _py_junction("And", _PY_FALSE, _PY_TRUE, left, right)


def _py_or(left: str, right: str) -> str:
    return _py_junction("Or", _PY_TRUE, _PY_FALSE, left, right)


def _py_balanced(op, items: list[str]) -> str:
    """``_build_balanced_tree``: ``And(a, b, c, ...)`` splits its operands in halves."""
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return op(items[0], items[1])
    mid = len(items) // 2
    return op(_py_balanced(op, items[:mid]), _py_balanced(op, items[mid:]))


def _py_not(child: tuple) -> tuple:
    """``Not(child)``'s folding (``Not.__new__``) on a rendered node ``(str, its child's node
    when it is a Not)``: constants flip, a double negation is its operand."""
    text, inner = child
    if text == _PY_TRUE:
        return _PY_FALSE, None
    if text == _PY_FALSE:
        return _PY_TRUE, None
    if inner is not None:
        return inner
    return f"Not(child={text})", child


def _py_set(column: str, values: Iterable[LiteralValue], negated: bool) -> str:
    """``In``/``NotIn``: one value is ``EqualTo``/``NotEqualTo`` (``In.__new__``); more print
    as a set of the literals' ``str``, sorted as strings (``SetPredicate.__str__``)."""
    distinct = list(dict.fromkeys(values))
    if len(distinct) == 1:
        return (f"{'NotEqualTo' if negated else 'EqualTo'}(term={_py_ref(column)}, "
                f"literal={_py_literal(distinct[0])})")
    shown = ", ".join(sorted(str(v) for v in distinct))
    return f"{'NotIn' if negated else 'In'}({_py_ref(column)}, {{{shown}}})"


def _py_predicate(pred: Predicate) -> str:
    if isinstance(pred, Cmp):
        return f"{_PY_CMP[pred.op]}(term={_py_ref(pred.column)}, literal={_py_literal(pred.value)})"
    if isinstance(pred, In):
        return _py_set(pred.column, pred.values, pred.negated)
    return f"{'NotNull' if pred.negated else 'IsNull'}(term={_py_ref(pred.column)})"


def _py_tree(tree: Any) -> tuple:
    """PyIceberg's rendering of the parse ``tree``: (its str, the node it negates when it is a
    ``Not``). An and/or chain written without parentheses is one n-ary node in PyIceberg's
    parser (pyparsing's ``infix_notation``), built as a balanced tree; parentheses end one."""
    if isinstance(tree, Tree):
        kind = tree.data
        if kind == "paren":
            return _py_tree(tree.children[0])
        if kind in ("and_expr", "or_expr"):
            chain, todo = [], [tree]
            while todo:                           # the chain's operands, left to right
                node = todo.pop()
                if isinstance(node, Tree) and node.data == kind:
                    todo.extend(reversed(node.children))
                else:
                    chain.append(_py_tree(node)[0])
            op = _py_and if kind == "and_expr" else _py_or
            return _py_balanced(op, chain), None
        if kind == "not_expr":
            return _py_not(_py_tree(tree.children[0]))
    expr = _ToExpr().transform(tree)
    if isinstance(expr, TrueExpr):
        return _PY_TRUE, None
    if isinstance(expr, FalseExpr):
        return _PY_FALSE, None
    return _py_predicate(expr), None


@functools.lru_cache(maxsize=4096)
def pyiceberg_str(text: str) -> str:
    """``str()`` of PyIceberg 0.12's parse of filter ``text`` (``pyiceberg.expressions.parser
    .parse``): what PyIceberg prints in "Found new conflicting delete files that can apply to
    records matching {data_filter}: [...]" (``models/validation.py``). Its shape follows the
    text as written (a chain ``a and b and c`` is balanced, ``(a and b) and c`` is not), so it
    is rendered from the parse tree, not from the folded ``Expr``. tests/conformance/
    test_pyiceberg_target.py compares it with PyIceberg's own ``str`` on many filters.
    Memoised: every plan of a PyIceberg command asks for it (``commands._validations``), and a
    search plans one command at many bases."""
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as error:
        raise _syntax_error(text, error) from None
    return _py_tree(tree)[0]


def pyiceberg_str_of(expr: Expr) -> str | None:
    """PyIceberg's ``str`` of a filter built by code rather than parsed from text: one
    predicate (an upsert's ``In(key, keys)``, ``upsert_util.create_match_filter``); None for
    anything else, whose PyIceberg form the model does not know (the order of an Or PyIceberg
    builds from a set of partitions, or from pyarrow's group_by). ``true`` is an overwrite's
    default filter (``overwrite(df)``: ``ALWAYS_TRUE``)."""
    if isinstance(expr, TrueExpr):
        return _PY_TRUE
    if isinstance(expr, (Cmp, In, IsNull)):
        return _py_predicate(expr)
    return None


# --------------------------------------------------------------------------------------------
# Schema check


def _literal_fits(value: LiteralValue, column_type: str) -> bool:
    if column_type == "string":
        return isinstance(value, str)
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    low, high = _INT_RANGES[column_type]
    return low <= value <= high


def _literal_kind(value: LiteralValue) -> str:
    return "a string" if isinstance(value, str) else "an integer"


def check_columns(expr: Expr, schema_columns: Mapping[str, str]) -> None:
    """Reject unknown columns and literals that do not fit the column type (int, long, string).

    Java would fail binding (``Binder.bind``) with "Cannot find field" or fail to convert the
    literal; out-of-range integers are rejected here rather than folded to aboveMax/belowMin.
    """
    for column, column_type in schema_columns.items():
        # a schema read from a file may hold anything here (a list is not even hashable):
        # a FilterSyntaxError, which the input readers turn into a message at the filter's line
        if not isinstance(column_type, str) or column_type not in _COLUMN_TYPES:
            raise FilterSyntaxError(
                f"unsupported column type {column_type!r} (column {column!r}); expected one of "
                f"{_COLUMN_TYPES}"
            )
    known = ", ".join(schema_columns) or "(none)"
    for pred in _predicates(expr):
        if pred.column not in schema_columns:
            raise FilterSyntaxError(
                f"unknown column {pred.column!r} in filter {to_filter_text(expr)!r}; "
                f"known columns: {known}"
            )
        column_type = schema_columns[pred.column]
        values = (
            pred.values if isinstance(pred, In) else (pred.value,) if isinstance(pred, Cmp) else ()
        )
        for value in values:
            if not _literal_fits(value, column_type):
                detail = (
                    "out of range for"
                    if isinstance(value, int) and column_type != "string"
                    else "not"
                )
                raise FilterSyntaxError(
                    f"type mismatch in filter {to_filter_text(expr)!r}: column {pred.column!r} is "
                    f"{column_type} but literal {_filter_literal(value)} is {_literal_kind(value)} "
                    f"({detail} {column_type})"
                )


# --------------------------------------------------------------------------------------------
# Row evaluation


def _compare(op: str, left: Any, right: Any) -> bool:
    if op == "=":
        return left == right
    if op == "!=":
        return left != right
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    return left >= right


def _and3(left: bool | None, right: bool | None) -> bool | None:
    if left is False or right is False:
        return False
    if left is None or right is None:
        return None
    return True


def _or3(left: bool | None, right: bool | None) -> bool | None:
    if left is True or right is True:
        return True
    if left is None or right is None:
        return None
    return False


def eval_row3(expr: Expr, row: Mapping[str, Any]) -> bool | None:
    """SQL three-valued result: True, False or None (UNKNOWN).

    A column missing from ``row`` reads as null, as Iceberg reads a column a file lacks.
    """
    if isinstance(expr, TrueExpr):
        return True
    if isinstance(expr, FalseExpr):
        return False
    if isinstance(expr, IsNull):
        is_null = row.get(expr.column) is None
        return not is_null if expr.negated else is_null
    if isinstance(expr, Cmp):
        value = row.get(expr.column)
        return None if value is None else _compare(expr.op, value, expr.value)
    if isinstance(expr, In):
        value = row.get(expr.column)
        if value is None:
            return None
        return (value not in expr.values) if expr.negated else (value in expr.values)
    if isinstance(expr, Not):
        result = eval_row3(expr.child, row)
        return None if result is None else not result
    if isinstance(expr, And):
        return _and3(eval_row3(expr.left, row), eval_row3(expr.right, row))
    if isinstance(expr, Or):
        return _or3(eval_row3(expr.left, row), eval_row3(expr.right, row))
    raise TypeError(f"not a filter expression: {expr!r}")


def eval_row(expr: Expr, row: Mapping[str, Any]) -> bool:
    """Whether ``row`` matches ``expr`` under SQL semantics (the predicate is TRUE).

    This is the rows an engine's DELETE/UPDATE ... WHERE would select; see the module
    docstring for why this, not Java's nulls-first ``Evaluator`` (``eval_java``), is the
    model's ground truth.
    """
    return eval_row3(expr, row) is True


def _java_cmp(value: Any, literal: LiteralValue) -> int:
    """``Comparators.nullsFirst().thenComparing(naturalOrder())`` from ``Literals``."""
    if value is None:
        return -1
    return (value > literal) - (value < literal)


def _java_predicate(pred: Predicate, struct: Mapping[str, Any]) -> bool:
    value = struct.get(pred.column)
    if isinstance(pred, IsNull):
        return (value is not None) if pred.negated else (value is None)
    if isinstance(pred, In):
        found = value is not None and value in pred.values
        return not found if pred.negated else found
    order = _java_cmp(value, pred.value)
    return {
        "=": order == 0,
        "!=": order != 0,
        "<": order < 0,
        "<=": order <= 0,
        ">": order > 0,
        ">=": order >= 0,
    }[pred.op]


def eval_java(expr: Expr, struct: Mapping[str, Any]) -> bool:
    """Exactly Java's ``Evaluator``: two-valued, null sorts first (``null < 5`` is true).

    Used on partition tuples, where Java's ``ManifestReader`` uses this evaluator.
    """
    if isinstance(expr, TrueExpr):
        return True
    if isinstance(expr, FalseExpr):
        return False
    if isinstance(expr, (Cmp, In, IsNull)):
        return _java_predicate(expr, struct)
    if isinstance(expr, Not):
        return not eval_java(expr.child, struct)
    if isinstance(expr, And):
        return eval_java(expr.left, struct) and eval_java(expr.right, struct)
    if isinstance(expr, Or):
        return eval_java(expr.left, struct) or eval_java(expr.right, struct)
    raise TypeError(f"not a filter expression: {expr!r}")


# --------------------------------------------------------------------------------------------
# InclusiveMetricsEvaluator


@dataclass(frozen=True)
class _FileStats:
    lower: Mapping[str, Any]
    upper: Mapping[str, Any]
    null_counts: Mapping[str, int]
    record_count: int

    def contains_nulls_only(self, column: str) -> bool:
        # Java: valueCount - nullCount == 0. Every column of a flat schema has one value per
        # record, so the value count is the record count.
        nulls = self.null_counts.get(column)
        return nulls is not None and self.record_count - nulls == 0

    def may_contain_null(self, column: str) -> bool:
        nulls = self.null_counts.get(column)
        return nulls is None or nulls != 0


def _metrics_cmp(pred: Cmp, stats: _FileStats) -> bool:
    if pred.op == "!=":
        # Bounds need not be values in the column, so notEq can never be ruled out.
        return True
    if stats.contains_nulls_only(pred.column):
        return False
    lower = stats.lower.get(pred.column)
    upper = stats.upper.get(pred.column)
    literal = pred.value
    if pred.op == "<":
        return lower is None or lower < literal
    if pred.op == "<=":
        return lower is None or lower <= literal
    if pred.op == ">":
        return upper is None or upper > literal
    if pred.op == ">=":
        return upper is None or upper >= literal
    if lower is not None and lower > literal:
        return False
    return upper is None or upper >= literal


def _metrics_in(pred: In, stats: _FileStats) -> bool:
    if pred.negated:
        # Like notEq: bounds cannot prove that every value is in the list.
        return True
    if stats.contains_nulls_only(pred.column):
        return False
    if len(set(pred.values)) > IN_PREDICATE_LIMIT:
        return True
    lower = stats.lower.get(pred.column)
    if lower is None:
        return True
    candidates = [value for value in pred.values if lower <= value]
    if not candidates:
        return False
    upper = stats.upper.get(pred.column)
    if upper is None:
        return True
    return any(value <= upper for value in candidates)


def _metrics_eval(expr: Expr, stats: _FileStats) -> bool:
    if isinstance(expr, TrueExpr):
        return True
    if isinstance(expr, FalseExpr):
        return False
    if isinstance(expr, IsNull):
        if expr.negated:
            return not stats.contains_nulls_only(expr.column)
        return stats.may_contain_null(expr.column)
    if isinstance(expr, Cmp):
        return _metrics_cmp(expr, stats)
    if isinstance(expr, In):
        return _metrics_in(expr, stats)
    if isinstance(expr, And):
        return _metrics_eval(expr.left, stats) and _metrics_eval(expr.right, stats)
    if isinstance(expr, Or):
        return _metrics_eval(expr.left, stats) or _metrics_eval(expr.right, stats)
    if isinstance(expr, Not):
        # Unreachable after rewrite_not; Java's visitor has the same fallback.
        return not _metrics_eval(expr.child, stats)
    raise TypeError(f"not a filter expression: {expr!r}")


def might_match_bounds(
    expr: Expr,
    lower: Mapping[str, Any],
    upper: Mapping[str, Any],
    null_counts: Mapping[str, int],
    record_count: int,
) -> bool:
    """``InclusiveMetricsEvaluator.eval``: False only when no row of the file can match.

    ``lower``/``upper`` are per-column bounds of the non-null values and ``null_counts`` the
    per-column null counts; a column missing from a mapping (or mapped to None) is unknown
    and might match. As in Java, a file with ``record_count == 0`` cannot match and a negative
    count (unknown, from imported Avro files) might. ``not`` is pushed down first
    (``rewriteNot``), and ``!=``/``not in`` always might match.
    """
    if record_count == 0:
        return False
    if record_count < 0:
        return True
    stats = _FileStats(lower, upper, null_counts, record_count)
    return _metrics_eval(rewrite_not(expr), stats)


# --------------------------------------------------------------------------------------------
# StrictMetricsEvaluator and the partition residual: can every row of a file be proven to match?
# (ManifestFilterManager's PartitionAndMetricsEvaluator.rowsMustMatch, used when
# deleteFromRowFilter / overwriteByRowFilter decide which files a row filter removes.)


def _strict_cmp(pred: Cmp, stats: _FileStats) -> bool:
    column, literal = pred.column, pred.value
    lower, upper = stats.lower.get(column), stats.upper.get(column)
    if pred.op == "!=":
        # Java's Evaluator says null != x, so nulls do not spoil notEq.
        if stats.contains_nulls_only(column):
            return True
        return (lower is not None and lower > literal) or (upper is not None and upper < literal)
    if stats.may_contain_null(column):
        return False
    if pred.op == "<":
        return upper is not None and upper < literal
    if pred.op == "<=":
        return upper is not None and upper <= literal
    if pred.op == ">":
        return lower is not None and lower > literal
    if pred.op == ">=":
        return lower is not None and lower >= literal
    return lower is not None and upper is not None and lower == upper == literal


def _strict_in(pred: In, stats: _FileStats) -> bool:
    column = pred.column
    lower, upper = stats.lower.get(column), stats.upper.get(column)
    if pred.negated:
        if stats.contains_nulls_only(column):
            return True
        if lower is None or upper is None:
            return False
        return not any(lower <= v <= upper for v in pred.values)
    if stats.may_contain_null(column) or lower is None or upper is None:
        return False
    return lower == upper and lower in pred.values


def _strict_eval(expr: Expr, stats: _FileStats) -> bool:
    """``StrictMetricsEvaluator`` on a ``not``-free expression: every row provably matches."""
    if isinstance(expr, TrueExpr):
        return True
    if isinstance(expr, FalseExpr):
        return False
    if isinstance(expr, IsNull):
        nulls = stats.null_counts.get(expr.column)
        if expr.negated:
            return nulls == 0
        return stats.contains_nulls_only(expr.column)
    if isinstance(expr, Cmp):
        return _strict_cmp(expr, stats)
    if isinstance(expr, In):
        return _strict_in(expr, stats)
    if isinstance(expr, And):
        return _strict_eval(expr.left, stats) and _strict_eval(expr.right, stats)
    if isinstance(expr, Or):
        return _strict_eval(expr.left, stats) or _strict_eval(expr.right, stats)
    raise TypeError(f"not a filter expression: {expr!r}")


def _project_strict(pred: Predicate, field: "PartitionField") -> Predicate | None:
    """``Transform.projectStrict``: a predicate on the partition value that implies ``pred``
    for every row (None: no strict projection). Identity keeps the predicate; bucket projects
    only ``!=``/``not in``; integer truncate projects comparisons (ProjectionUtil's *Strict)."""
    kind, name = field.transform.kind, field.name
    if isinstance(pred, IsNull):
        return IsNull(name, pred.negated)
    if kind == "identity":
        return Cmp(pred.op, name, pred.value) if isinstance(pred, Cmp) else In(name, pred.values, pred.negated)
    apply = field.transform.apply
    if kind == "bucket":
        if isinstance(pred, Cmp) and pred.op == "!=":
            return Cmp("!=", name, apply(pred.value))
        if isinstance(pred, In) and pred.negated:
            return In(name, tuple(dict.fromkeys(apply(v) for v in pred.values)), True)
        return None
    if kind == "truncate" and isinstance(pred, Cmp) and isinstance(pred.value, int):
        v = pred.value
        return {"<": Cmp("<", name, apply(v)), "<=": Cmp("<", name, apply(v + 1)),
                ">": Cmp(">", name, apply(v)), ">=": Cmp(">", name, apply(v - 1)),
                "!=": Cmp("!=", name, apply(v))}.get(pred.op)
    return None


def _residual(expr: Expr, spec: "PartitionSpec", struct: Mapping[str, Any]) -> Expr:
    if isinstance(expr, (TrueExpr, FalseExpr)):
        return expr
    if isinstance(expr, Not):
        return not_(_residual(expr.child, spec, struct))
    if isinstance(expr, And):
        return and_(_residual(expr.left, spec, struct), _residual(expr.right, spec, struct))
    if isinstance(expr, Or):
        return or_(_residual(expr.left, spec, struct), _residual(expr.right, spec, struct))
    # ResidualVisitor.predicate(BoundPredicate): per partition field of the column, in spec
    # order, a strict projection that holds makes the predicate true, an inclusive one that
    # fails makes it false; both are evaluated like Evaluator, nulls first.
    for field in spec.fields:
        if field.source != expr.column:
            continue
        strict = _project_strict(expr, field)
        if strict is not None and _java_predicate(strict, struct):
            return _TRUE
        inclusive = _project_field(expr, field)
        if inclusive is not None and not _java_predicate(inclusive, struct):
            return _FALSE
    return expr


def residual_for(expr: Expr, spec: "PartitionSpec", partition: tuple) -> Expr:
    """``ResidualEvaluator.of(spec, expr).residualFor(partition)``: what is left of ``expr`` to
    check against a file's rows once its partition tuple is known.

    Exactly Java's, surprises included: the projections are compared with the literal's
    ``Comparators.nullsFirst()``, so on a null partition value ``id < 4``, ``id <= 4`` and
    ``id != 4`` (identity) reduce to ``true``, although no row with a null ``id`` matches them
    under SQL or under Iceberg's metrics evaluators (ResidualEvaluator.java, ``lt`` and
    ``predicate``, 1.10.2 and main). ``deleteFromRowFilter`` then removes such a file whole:
    the finding in reproducers/null_partition_row_filter_delete.py.
    """
    if not spec.fields:
        return expr  # ResidualEvaluator.unpartitioned
    return _residual(expr, spec, dict(zip(spec.names, partition, strict=True)))


def must_match_file(expr: Expr, spec: "PartitionSpec", partition: tuple, lower: Mapping[str, Any],
                    upper: Mapping[str, Any], null_counts: Mapping[str, int],
                    record_count: int) -> bool:
    """True only when every row of the file provably matches ``expr`` (Java semantics).

    ``ManifestFilterManager.PartitionAndMetricsEvaluator.rowsMustMatch``: the
    ``StrictMetricsEvaluator`` of the file's partition residual (``residual_for``).
    """
    return must_match_bounds(residual_for(expr, spec, partition), lower, upper, null_counts,
                             record_count)


def must_match_bounds(expr: Expr, lower: Mapping[str, Any], upper: Mapping[str, Any],
                      null_counts: Mapping[str, int], record_count: int) -> bool:
    """``StrictMetricsEvaluator.eval``: True only when the bounds and null counts prove that
    every row matches (a file with no rows, or an unknown count, matches vacuously)."""
    if record_count <= 0:
        return True
    return _strict_eval(rewrite_not(expr), _FileStats(lower, upper, null_counts, record_count))


def rows_might_match_file(expr: Expr, spec: "PartitionSpec", partition: tuple,
                          lower: Mapping[str, Any], upper: Mapping[str, Any],
                          null_counts: Mapping[str, int], record_count: int) -> bool:
    """``PartitionAndMetricsEvaluator.rowsMightMatch``: the ``InclusiveMetricsEvaluator`` of
    the file's partition residual. Unlike ``might_match_file`` (a scan's partition filter and
    metrics on the whole filter), a residual of ``true`` lets any file through."""
    return might_match_bounds(residual_for(expr, spec, partition), lower, upper, null_counts,
                              record_count)


def must_match_strict_projection(expr: Expr, spec: "PartitionSpec", partition: tuple,
                                 lower: Mapping[str, Any], upper: Mapping[str, Any],
                                 null_counts: Mapping[str, int], record_count: int) -> bool:
    """Spark's per-file test in ``SparkTable.canDeleteUsingMetadata`` (spark/v3.5, 1.10.2
    lines 341-382): ``Evaluator(Projections.strict(spec).project(expr))`` on the partition
    tuple (nulls first), or ``StrictMetricsEvaluator(expr)`` on the whole filter."""
    if spec.fields and eval_java(project_strict(expr, spec),
                                 dict(zip(spec.names, partition, strict=True))):
        return True  # (unpartitioned, the strict projection is alwaysFalse)
    return must_match_bounds(expr, lower, upper, null_counts, record_count)


# --------------------------------------------------------------------------------------------
# Inclusive partition projection (Projections.inclusive + Identity/Bucket/Truncate.project)


def _project_truncate_cmp(pred: Cmp, field: PartitionField) -> Expr | None:
    """``ProjectionUtil.truncateInteger/truncateLong`` and ``truncateArray`` (strings)."""
    name, apply, value = field.name, field.transform.apply, pred.value
    if isinstance(value, str):
        # truncateArray: the truncated literal bounds the truncated value on the same side.
        ops = {"<": "<=", "<=": "<=", ">": ">=", ">=": ">=", "=": "="}
        return Cmp(ops[pred.op], name, apply(value)) if pred.op in ops else None
    if pred.op == "<":
        # adjust closed, then transform: x < v  =>  x <= v - 1  =>  trunc(x) <= trunc(v - 1)
        return Cmp("<=", name, apply(value - 1))
    if pred.op == ">":
        return Cmp(">=", name, apply(value + 1))
    if pred.op in ("<=", ">=", "="):
        return Cmp(pred.op, name, apply(value))
    return None


def _transform_set(pred: In, field: PartitionField) -> Expr:
    """``ProjectionUtil.transformSet``: the set of transformed values (duplicates collapse)."""
    values = tuple(dict.fromkeys(field.transform.apply(value) for value in pred.values))
    return In(field.name, values, False)


def _project_field(pred: Predicate, field: PartitionField) -> Expr | None:
    """One ``Transform.project(name, predicate)``; None means "cannot project" (true)."""
    kind = field.transform.kind
    if isinstance(pred, IsNull):
        # Every transform maps null, and only null, to null.
        return IsNull(field.name, pred.negated)
    if kind == "identity":
        if isinstance(pred, Cmp):
            return Cmp(pred.op, field.name, pred.value)
        return In(field.name, pred.values, pred.negated)
    if isinstance(pred, In):
        return None if pred.negated else _transform_set(pred, field)
    if kind == "bucket":
        # Only equality survives hashing; ranges and notEq cannot be projected.
        return Cmp("=", field.name, field.transform.apply(pred.value)) if pred.op == "=" else None
    return _project_truncate_cmp(pred, field)


def _project_predicate(pred: Predicate, spec: PartitionSpec) -> Expr:
    # InclusiveProjection.predicate: AND of every partition field on the predicate's column,
    # e.g. bucket(7, d) and bucket(5, d) both constrain d = x; no field at all means true.
    result: Expr = _TRUE
    for field in spec.fields:
        if field.source == pred.column:
            projected = _project_field(pred, field)
            if projected is not None:
                result = and_(result, projected)
    return result


def _project_strict_predicate(pred: Predicate, spec: PartitionSpec) -> Expr:
    # StrictProjection.predicate: OR of every partition field's strict projection of the
    # predicate; no field (or none that projects) means false.
    result: Expr = _FALSE
    for field in spec.fields:
        if field.source == pred.column:
            projected = _project_strict(pred, field)
            if projected is not None:
                result = or_(result, projected)
    return result


def _project(expr: Expr, spec: PartitionSpec, leaf=_project_predicate) -> Expr:
    """``BaseProjectionEvaluator``: project each predicate with ``leaf`` (the inclusive or the
    strict projection of one predicate) and keep the and/or structure, folding constants."""
    if isinstance(expr, (Cmp, In, IsNull)):
        return leaf(expr, spec)
    if isinstance(expr, And):
        return and_(_project(expr.left, spec, leaf), _project(expr.right, spec, leaf))
    if isinstance(expr, Or):
        return or_(_project(expr.left, spec, leaf), _project(expr.right, spec, leaf))
    if isinstance(expr, (TrueExpr, FalseExpr)):
        return expr
    raise TypeError(f"cannot project {expr!r}; rewrite_not must run first")


def project_inclusive(expr: Expr, spec: PartitionSpec) -> Expr:
    """``Projections.inclusive(spec).project(expr)``: a filter on partition field names that is
    true for every partition holding a row that matches ``expr``.

    E.g. ``id < 10`` with ``truncate[10]`` projects to ``ref(name="id_trunc") <= 0``.
    """
    return _project(rewrite_not(expr), spec)


def project_strict(expr: Expr, spec: PartitionSpec) -> Expr:
    """``Projections.strict(spec).project(expr)``: a filter on partition field names that holds
    only for partitions every row of which matches ``expr``."""
    return _project(rewrite_not(expr), spec, _project_strict_predicate)


def might_match_partition(expr: Expr, spec: PartitionSpec, partition: tuple) -> bool:
    """Java's partition filter in ``ManifestReader``: the inclusive projection of ``expr``
    evaluated with ``Evaluator`` on the file's partition tuple (values in spec field order).

    False only when provably no row of that partition can match.
    """
    if len(partition) != len(spec.fields):
        raise ValueError(
            f"partition {partition!r} has {len(partition)} values but spec {spec} has "
            f"{len(spec.fields)} fields"
        )
    return eval_java(project_inclusive(expr, spec), dict(zip(spec.names, partition, strict=True)))


def might_match_file(
    expr: Expr,
    spec: PartitionSpec,
    partition: tuple,
    lower: Mapping[str, Any],
    upper: Mapping[str, Any],
    null_counts: Mapping[str, int],
    record_count: int,
) -> bool:
    """What ``ManifestReader`` keeps for a row filter: partition projection AND file metrics."""
    return might_match_partition(expr, spec, partition) and might_match_bounds(
        expr, lower, upper, null_counts, record_count
    )


def might_match_manifest(expr: Expr, spec: PartitionSpec, partitions: Iterable[tuple]) -> bool:
    """Java's ``ManifestEvaluator.forRowFilter(expr, spec)`` on a manifest's partition summary
    (``ManifestFilterManager.canContainExpressionDeletes``): the inclusive projection of
    ``expr`` against each partition field's ``contains_null`` and lower/upper bounds over
    ``partitions`` (the partition tuples of every entry the manifest was written with).

    Unlike the per-file ``Evaluator`` (nulls sort first, so ``null < 4`` holds), a field whose
    values are all null cannot match a comparison: such a manifest is never opened for a row
    filter (found by the differential mode: a delete file of a null truncate partition survives
    ``deleteFromRowFilter(id < 4)`` on Java)."""
    parts = [tuple(p) for p in partitions]
    stats = {}
    for i, name in enumerate(spec.names):
        values = [p[i] for p in parts]
        present = [v for v in values if v is not None]
        stats[name] = (any(v is None for v in values), min(present) if present else None,
                       max(present) if present else None)
    return _manifest_eval(project_inclusive(expr, spec), stats)


def manifest_can_contain_any(partitions: Iterable[tuple], wanted: Iterable[tuple]) -> bool:
    """Java's ``ManifestFileUtil.canContainAny(manifest, partitions, ...)`` (Iceberg 1.10.2):
    might a manifest whose entries were written with ``partitions`` hold one of the ``wanted``
    partition tuples, judged by its partition summary alone (per field: ``contains_null`` and
    the lower/upper bounds, so a value between two present values "can" be there).
    ``ManifestFilterManager`` opens a manifest this way for dropped partitions
    (ReplacePartitions) and for the partitions of delete files removed by reference."""
    parts = [tuple(p or ()) for p in partitions]
    width = len(parts[0]) if parts else 0
    stats = []
    for i in range(width):
        values = [p[i] for p in parts]
        present = [v for v in values if v is not None]
        stats.append((any(v is None for v in values), min(present) if present else None,
                      max(present) if present else None))

    def field_can_contain(stat, value) -> bool:
        has_null, lower, upper = stat
        if value is None:
            return has_null
        if lower is None:               # no non-null value in the manifest
            return False
        return _java_cmp(value, lower) >= 0 and _java_cmp(value, upper) <= 0

    for w in wanted:
        w = tuple(w or ())
        if len(w) == width and all(field_can_contain(st, v) for st, v in zip(stats, w)):
            return True
    return False


def _manifest_eval(expr: Expr, stats: Mapping[str, tuple]) -> bool:
    if isinstance(expr, TrueExpr):
        return True
    if isinstance(expr, FalseExpr):
        return False
    if isinstance(expr, And):
        return _manifest_eval(expr.left, stats) and _manifest_eval(expr.right, stats)
    if isinstance(expr, Or):
        return _manifest_eval(expr.left, stats) or _manifest_eval(expr.right, stats)
    has_null, lower, upper = stats.get(expr.column, (True, None, None))
    if isinstance(expr, IsNull):
        return (lower is not None) if expr.negated else has_null
    if lower is None:                      # every value is null: no comparison can hold
        return isinstance(expr, In) and expr.negated or isinstance(expr, Cmp) and expr.op == "!="
    if isinstance(expr, In):
        if expr.negated:
            return True
        return any(_java_cmp(lower, v) <= 0 <= _java_cmp(upper, v) for v in expr.values)
    op, lit = expr.op, expr.value
    if op == "<":
        return _java_cmp(lower, lit) < 0
    if op == "<=":
        return _java_cmp(lower, lit) <= 0
    if op == ">":
        return _java_cmp(upper, lit) > 0
    if op == ">=":
        return _java_cmp(upper, lit) >= 0
    if op == "=":
        return _java_cmp(lower, lit) <= 0 <= _java_cmp(upper, lit)
    return True                            # != : bounds cannot rule it out
