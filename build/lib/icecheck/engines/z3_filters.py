"""z3 proofs that conflict-filter pruning never skips a file that could hold a matching row
(``icecheck z3 prove-filters``).

Java prunes a concurrently added file from a conflict check when the file's *metrics* say no row
can match (``InclusiveMetricsEvaluator``, ``models.filters.might_match_bounds``) or when its
*partition* cannot hold a matching row (inclusive projection evaluated with Java's nulls-first
``Evaluator``, ``models.filters.might_match_partition``). A wrong "cannot match" hides a real
conflict. For every expression *shape* up to a depth we ask z3 for

    a row r, a file consistent with r (stats) / its partition, literals:
        eval_row(expr, r) is TRUE  and  might_match_*(expr, ...) is False

and expect UNSAT.

Shapes. A shape is a tree of ``and``/``or``/``not`` (depth = nesting of connectives; depth 0 is a
single atom) whose leaves are *symbolic atoms*: the predicate kind (=, !=, <, <=, >, >=, in (2
values), not in (2 values), is null, not null, true, false), the column (int ``a``, int ``b``,
string ``s``) and the literals are all z3 variables, so one query covers every assignment of
kinds, columns and literals to the leaves (including leaves that share a column). Reported:
the number of trees and the number of concrete (kind, column) leaf assignments they cover.

What is re-encoded (option (a) of the design: the rules are restated in z3 and *cross-checked*
against the Python functions on random concrete samples, ``cross_check_bounds`` and
``cross_check_partition``, so the proof is about the real code's rules):

* ``eval_row`` (SQL three-valued logic, a row matches only when TRUE) as (is-true, is-false)
  pairs;
* ``rewrite_not`` (push ``not`` to the leaves, flipping each predicate), then
  ``InclusiveMetricsEvaluator`` rule by rule (record count 0 / unknown, nulls-only columns,
  missing bounds, != and not in always might match, ``in`` candidates);
* the inclusive projection through identity, truncate[W] (int, W symbolic >= 1, Euclidean
  ``v - (v mod W)``) and bucket[N] (an uninterpreted function: equal inputs, equal buckets;
  only = and in project) and Java's nulls-first ``Evaluator`` on the partition tuple.

A file's stats are symbolic and each may be unknown: per column lower/upper bound, null count,
and the record count. "Consistent with r": r is one of its records (the record count, when
known, is >= 1; a null value needs a null count >= 1; a non-null one lies within the bounds
and leaves the null count <= record count - 1). Bounds need not be tight (a stronger claim).

Strings: the filter language only compares strings (no string transform is proved here), so
the string column is modelled by an order-preserving embedding into the integers; counter
examples map back with a fixed-width decimal encoding, and the cross-check maps random strings
to their ranks.
"""

from __future__ import annotations

import itertools
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import z3

from icecheck.models.filters import (And, Cmp, Expr, FalseExpr, In, IsNull, Not, Or,
                                     TrueExpr, eval_row, might_match_bounds,
                                     might_match_partition)
from icecheck.models.transforms import PartitionField, PartitionSpec, Transform

COLUMNS = ("a", "b", "s")            # a, b: int; s: string (order-embedded)
STRING_COLUMNS = frozenset({"s"})
EQ, NE, LT, LE, GT, GE, IN, NOT_IN, IS_NULL, NOT_NULL, TRUE, FALSE = range(12)
KIND_NAMES = ("=", "!=", "<", "<=", ">", ">=", "in", "not in", "is null", "not null", "true",
              "false")
NEGATED = {EQ: NE, NE: EQ, LT: GE, GE: LT, LE: GT, GT: LE, IN: NOT_IN, NOT_IN: IN,
           IS_NULL: NOT_NULL, NOT_NULL: IS_NULL, TRUE: FALSE, FALSE: TRUE}
N_KINDS = len(KIND_NAMES)


class FilterEncodingError(AssertionError):
    """z3 and the Python rules disagree: a bug in this encoding (never a finding)."""


# --------------------------------------------------------------------------------------------
# Shapes


@dataclass(frozen=True)
class Leaf:
    index: int


@dataclass(frozen=True)
class Node:
    op: str                      # "and" | "or" | "not"
    children: tuple


def shapes(depth: int) -> list:
    """Every connective tree of nesting depth <= ``depth`` (leaves numbered left to right)."""
    levels = [["A"]]
    for _ in range(depth):
        prev = levels[-1]
        nxt = ["A"] + [("not", x) for x in prev] + [(op, x, y) for op in ("and", "or")
                                                    for x in prev for y in prev]
        levels.append(nxt)
    out = []
    for raw in levels[-1]:
        counter = itertools.count()
        out.append(_number(raw, counter))
    return out


def _number(raw, counter):
    if raw == "A":
        return Leaf(next(counter))
    return Node(raw[0], tuple(_number(c, counter) for c in raw[1:]))


def leaves(tree) -> int:
    if isinstance(tree, Leaf):
        return 1
    return sum(leaves(c) for c in tree.children)


def shape_text(tree) -> str:
    if isinstance(tree, Leaf):
        return f"p{tree.index}"
    if tree.op == "not":
        return f"not {shape_text(tree.children[0])}"
    return "(" + f" {tree.op} ".join(shape_text(c) for c in tree.children) + ")"


# --------------------------------------------------------------------------------------------
# Symbolic atoms, rows, stats


@dataclass
class ZAtom:
    kind: Any
    col: Any
    l1: Any
    l2: Any


def _sel(col, values: list):
    """values[col] for a symbolic column index."""
    out = values[-1]
    for i in range(len(values) - 2, -1, -1):
        out = z3.If(col == i, values[i], out)
    return out


def _kind_case(kind, cases: dict, default):
    out = default
    for k, v in cases.items():
        out = z3.If(kind == k, v, out)
    return out


def _neg_kind(kind):
    return _kind_case(kind, {k: z3.IntVal(v) for k, v in NEGATED.items()}, kind)


def _cmp(op: int, x, y):
    return {EQ: x == y, NE: x != y, LT: x < y, LE: x <= y, GT: x > y, GE: x >= y}[op]


@dataclass
class ZRow:
    null: list   # z3 Bool per column
    val: list    # z3 Int per column


@dataclass
class ZStats:
    has_lo: list
    lo: list
    has_up: list
    up: list
    has_nulls: list
    nulls: list
    records: Any


def row_vars(prefix: str = "r") -> ZRow:
    return ZRow([z3.Bool(f"{prefix}_{c}_null") for c in COLUMNS],
                [z3.Int(f"{prefix}_{c}") for c in COLUMNS])


def stats_vars(prefix: str = "f") -> ZStats:
    return ZStats([z3.Bool(f"{prefix}_{c}_has_lower") for c in COLUMNS],
                  [z3.Int(f"{prefix}_{c}_lower") for c in COLUMNS],
                  [z3.Bool(f"{prefix}_{c}_has_upper") for c in COLUMNS],
                  [z3.Int(f"{prefix}_{c}_upper") for c in COLUMNS],
                  [z3.Bool(f"{prefix}_{c}_has_null_count") for c in COLUMNS],
                  [z3.Int(f"{prefix}_{c}_null_count") for c in COLUMNS],
                  z3.Int(f"{prefix}_record_count"))


def atom_vars(i: int) -> ZAtom:
    return ZAtom(z3.Int(f"p{i}_kind"), z3.Int(f"p{i}_col"), z3.Int(f"p{i}_lit1"),
                 z3.Int(f"p{i}_lit2"))


def atom_domain(a: ZAtom) -> list:
    return [0 <= a.kind, a.kind < N_KINDS, 0 <= a.col, a.col < len(COLUMNS)]


# --------------------------------------------------------------------------------------------
# eval_row (SQL three-valued): (is TRUE, is FALSE)


def _row_atom(a: ZAtom, row: ZRow):
    null = _sel(a.col, row.null)
    v = _sel(a.col, row.val)
    cases = {}
    for k in (EQ, NE, LT, LE, GT, GE):
        t = _cmp(k, v, a.l1)
        cases[k] = (z3.And(z3.Not(null), t), z3.And(z3.Not(null), z3.Not(t)))
    member = z3.Or(v == a.l1, v == a.l2)
    cases[IN] = (z3.And(z3.Not(null), member), z3.And(z3.Not(null), z3.Not(member)))
    cases[NOT_IN] = (z3.And(z3.Not(null), z3.Not(member)), z3.And(z3.Not(null), member))
    cases[IS_NULL] = (null, z3.Not(null))
    cases[NOT_NULL] = (z3.Not(null), null)
    cases[TRUE] = (z3.BoolVal(True), z3.BoolVal(False))
    cases[FALSE] = (z3.BoolVal(False), z3.BoolVal(True))
    t = _kind_case(a.kind, {k: v[0] for k, v in cases.items()}, z3.BoolVal(False))
    f = _kind_case(a.kind, {k: v[1] for k, v in cases.items()}, z3.BoolVal(False))
    return t, f


def eval_row_z(tree, atoms: list[ZAtom], row: ZRow):
    if isinstance(tree, Leaf):
        return _row_atom(atoms[tree.index], row)
    if tree.op == "not":
        t, f = eval_row_z(tree.children[0], atoms, row)
        return f, t
    parts = [eval_row_z(c, atoms, row) for c in tree.children]
    if tree.op == "and":
        return z3.And([p[0] for p in parts]), z3.Or([p[1] for p in parts])
    return z3.Or([p[0] for p in parts]), z3.And([p[1] for p in parts])


# --------------------------------------------------------------------------------------------
# rewrite_not on the shape: leaves carry their polarity


def push_not(tree, negated: bool = False):
    """(tree with no "not", {leaf index: negated?}) as ``rewrite_not`` computes it."""
    if isinstance(tree, Leaf):
        return ("leaf", tree.index, negated)
    if tree.op == "not":
        return push_not(tree.children[0], not negated)
    op = tree.op
    if negated:
        op = "or" if op == "and" else "and"
    return (op, tuple(push_not(c, negated) for c in tree.children))


def _pushed_atom(atoms, node) -> ZAtom:
    _, i, neg = node
    a = atoms[i]
    return ZAtom(_neg_kind(a.kind), a.col, a.l1, a.l2) if neg else a


def _fold(pushed, atoms, leaf_fn):
    if pushed[0] == "leaf":
        return leaf_fn(_pushed_atom(atoms, pushed))
    parts = [_fold(c, atoms, leaf_fn) for c in pushed[1]]
    return z3.And(parts) if pushed[0] == "and" else z3.Or(parts)


# --------------------------------------------------------------------------------------------
# InclusiveMetricsEvaluator


def _metrics_atom(a: ZAtom, st: ZStats):
    col = a.col
    has_lo, lo = _sel(col, st.has_lo), _sel(col, st.lo)
    has_up, up = _sel(col, st.has_up), _sel(col, st.up)
    has_n, n = _sel(col, st.has_nulls), _sel(col, st.nulls)
    nulls_only = z3.And(has_n, st.records - n == 0)
    may_null = z3.Or(z3.Not(has_n), n != 0)
    lit = a.l1
    cases = {
        NE: z3.BoolVal(True),
        LT: z3.And(z3.Not(nulls_only), z3.Or(z3.Not(has_lo), lo < lit)),
        LE: z3.And(z3.Not(nulls_only), z3.Or(z3.Not(has_lo), lo <= lit)),
        GT: z3.And(z3.Not(nulls_only), z3.Or(z3.Not(has_up), up > lit)),
        GE: z3.And(z3.Not(nulls_only), z3.Or(z3.Not(has_up), up >= lit)),
        EQ: z3.And(z3.Not(nulls_only), z3.Not(z3.And(has_lo, lo > lit)),
                   z3.Or(z3.Not(has_up), up >= lit)),
        IN: z3.And(z3.Not(nulls_only),
                   z3.Or(z3.Not(has_lo),
                         z3.And(z3.Or(lo <= a.l1, lo <= a.l2),
                                z3.Or(z3.Not(has_up),
                                      z3.And(lo <= a.l1, a.l1 <= up),
                                      z3.And(lo <= a.l2, a.l2 <= up))))),
        NOT_IN: z3.BoolVal(True),
        IS_NULL: may_null,
        NOT_NULL: z3.Not(nulls_only),
        TRUE: z3.BoolVal(True),
        FALSE: z3.BoolVal(False),
    }
    return _kind_case(a.kind, cases, z3.BoolVal(True))


def might_match_bounds_z(tree, atoms: list[ZAtom], st: ZStats):
    body = _fold(push_not(tree), atoms, lambda a: _metrics_atom(a, st))
    return z3.If(st.records == 0, z3.BoolVal(False),
                 z3.If(st.records < 0, z3.BoolVal(True), body))


def row_in_file(row: ZRow, st: ZStats) -> list:
    out = [z3.Or(st.records >= 1, st.records < 0)]
    for c in range(len(COLUMNS)):
        out.append(z3.Implies(st.has_nulls[c], st.nulls[c] >= 0))
        out.append(z3.Implies(z3.And(st.has_nulls[c], st.records >= 0),
                              st.nulls[c] <= st.records))
        out.append(z3.Implies(row.null[c], z3.Or(z3.Not(st.has_nulls[c]), st.nulls[c] >= 1)))
        out.append(z3.Implies(z3.Not(row.null[c]), z3.And(
            z3.Or(z3.Not(st.has_lo[c]), st.lo[c] <= row.val[c]),
            z3.Or(z3.Not(st.has_up[c]), row.val[c] <= st.up[c]),
            z3.Or(z3.Not(st.has_nulls[c]), st.records < 0, st.nulls[c] <= st.records - 1))))
    return out


# --------------------------------------------------------------------------------------------
# Partition projection + Java's Evaluator


@dataclass
class ZField:
    source: int                  # column index
    kind: str                    # identity | truncate | bucket
    apply: Callable              # z3 term -> z3 term (non-null values)


def _java_pred(kind: int, pnull, pval, v1, v2):
    """Java's nulls-first Evaluator on one projected predicate (kind of the projection)."""
    if kind == IS_NULL:
        return pnull
    if kind == NOT_NULL:
        return z3.Not(pnull)
    if kind == IN:
        return z3.And(z3.Not(pnull), z3.Or(pval == v1, pval == v2))
    if kind == NOT_IN:
        return z3.Or(pnull, z3.And(pval != v1, pval != v2))
    if kind in (NE, LT, LE):          # null sorts first: null != v, null < v, null <= v
        return z3.Or(pnull, _cmp(kind, pval, v1))
    return z3.And(z3.Not(pnull), _cmp(kind, pval, v1))   # =, >, >=


def _project_field_z(a: ZAtom, f: ZField, pnull, pval):
    """Evaluate ``Transform.project(pred)`` of one field on the partition value (True when
    the predicate does not project)."""
    ap = f.apply
    cases = {IS_NULL: _java_pred(IS_NULL, pnull, pval, None, None),
             NOT_NULL: _java_pred(NOT_NULL, pnull, pval, None, None),
             TRUE: z3.BoolVal(True), FALSE: z3.BoolVal(False)}
    if f.kind == "identity":
        for k in (EQ, NE, LT, LE, GT, GE, IN, NOT_IN):
            cases[k] = _java_pred(k, pnull, pval, a.l1, a.l2)
    elif f.kind == "bucket":
        cases[EQ] = _java_pred(EQ, pnull, pval, ap(a.l1), None)
        cases[IN] = _java_pred(IN, pnull, pval, ap(a.l1), ap(a.l2))
        for k in (NE, LT, LE, GT, GE, NOT_IN):
            cases[k] = z3.BoolVal(True)
    elif f.kind == "truncate":
        cases[LT] = _java_pred(LE, pnull, pval, ap(a.l1 - 1), None)
        cases[GT] = _java_pred(GE, pnull, pval, ap(a.l1 + 1), None)
        for k in (LE, GE, EQ):
            cases[k] = _java_pred(k, pnull, pval, ap(a.l1), None)
        cases[IN] = _java_pred(IN, pnull, pval, ap(a.l1), ap(a.l2))
        cases[NE] = z3.BoolVal(True)
        cases[NOT_IN] = z3.BoolVal(True)
    else:
        raise ValueError(f.kind)
    return _kind_case(a.kind, cases, z3.BoolVal(True))


def might_match_partition_z(tree, atoms: list[ZAtom], fields: list[ZField], row: ZRow):
    def leaf(a: ZAtom):
        # AND over the fields whose source is the atom's column; true/false pass through.
        conj = []
        for f in fields:
            pnull = row.null[f.source]
            pval = f.apply(row.val[f.source])
            conj.append(z3.Implies(a.col == f.source, _project_field_z(a, f, pnull, pval)))
        const = _kind_case(a.kind, {TRUE: z3.BoolVal(True), FALSE: z3.BoolVal(False)},
                           z3.And(conj) if conj else z3.BoolVal(True))
        return const
    return _fold(push_not(tree), atoms, leaf)


def trunc_z(width):
    return lambda v: v - (v % width)


# Partition specs proved: name -> (python spec builder for counterexamples, z3 fields builder)
SPEC_NAMES = ("identity(a)", "truncate[W](a)", "bucket[N](a)", "identity(s)",
              "identity(a)+truncate[W](b)+bucket[N](b)")


class MonotoneTruncate:
    """truncate[W] for the proofs: an uninterpreted function constrained to be monotone
    (x <= y implies t(x) <= t(y)) on every pair of arguments the formula applies it to.

    Every real truncate[W] (``v - (v mod W)``, W >= 1) is monotone, so UNSAT under this
    abstraction proves the claim for every width at once, with linear arithmetic only (the
    exact, non-linear ``v mod W`` with a symbolic W is what the cross-check runs)."""

    def __init__(self, name: str = "trunc"):
        self.f = z3.Function(name, z3.IntSort(), z3.IntSort())
        self.args: list = []

    def __call__(self, v):
        self.args.append(v)
        return self.f(v)

    def axioms(self) -> list:
        args = list({a.get_id(): a for a in self.args}.values())
        return [z3.Implies(x <= y, self.f(x) <= self.f(y)) for x in args for y in args
                if x.get_id() != y.get_id()]


def z_fields(name: str, trunc=None, bucket=None) -> list[ZField]:
    """The z3 fields of a spec. ``trunc``: a callable term -> term (default: exact with a
    symbolic width); ``bucket``: a callable (default: an uninterpreted function)."""
    trunc = trunc if trunc is not None else trunc_z(z3.Int("W"))
    bucket = bucket if bucket is not None else z3.Function("bucket", z3.IntSort(), z3.IntSort())
    ident = lambda v: v  # noqa: E731
    a, b, s = 0, 1, 2
    return {
        "identity(a)": [ZField(a, "identity", ident)],
        "truncate[W](a)": [ZField(a, "truncate", trunc)],
        "bucket[N](a)": [ZField(a, "bucket", bucket)],
        "identity(s)": [ZField(s, "identity", ident)],
        "identity(a)+truncate[W](b)+bucket[N](b)": [ZField(a, "identity", ident),
                                                    ZField(b, "truncate", trunc),
                                                    ZField(b, "bucket", bucket)],
    }[name]


def py_spec(name: str, width: int, buckets: int) -> PartitionSpec:
    t = {"identity": Transform("identity"), "truncate": Transform("truncate", width),
         "bucket": Transform("bucket", buckets)}
    parts = {
        "identity(a)": [("a", "identity")],
        "truncate[W](a)": [("a", "truncate")],
        "bucket[N](a)": [("a", "bucket")],
        "identity(s)": [("s", "identity")],
        "identity(a)+truncate[W](b)+bucket[N](b)": [("a", "identity"), ("b", "truncate"),
                                                    ("b", "bucket")],
    }[name]
    return PartitionSpec(tuple(PartitionField(c, t[k]) for c, k in parts))


# --------------------------------------------------------------------------------------------
# Concrete <-> symbolic


def s_text(v: int) -> str:
    """An order-preserving string for an int (fixed-width decimal)."""
    return f"s{v + 10**12:013d}"


def to_python_expr(tree, kinds, cols, lits) -> Expr:
    if isinstance(tree, Leaf):
        i = tree.index
        k, c = kinds[i], COLUMNS[cols[i]]
        conv = s_text if c in STRING_COLUMNS else (lambda v: v)
        l1, l2 = conv(lits[i][0]), conv(lits[i][1])
        if k <= GE:
            return Cmp(KIND_NAMES[k], c, l1)
        if k in (IN, NOT_IN):
            return In(c, (l1, l2), k == NOT_IN)
        if k in (IS_NULL, NOT_NULL):
            return IsNull(c, k == NOT_NULL)
        return TrueExpr() if k == TRUE else FalseExpr()
    kids = [to_python_expr(ch, kinds, cols, lits) for ch in tree.children]
    if tree.op == "not":
        return Not(kids[0])
    return And(*kids) if tree.op == "and" else Or(*kids)


def from_python_expr(expr: Expr, ranks: Callable[[Any], int]):
    """(tree, concrete ZAtoms) for a Python expression (for the cross-checks)."""
    atoms: list[ZAtom] = []

    def go(e):
        if isinstance(e, (And, Or)):
            return Node("and" if isinstance(e, And) else "or", (go(e.left), go(e.right)))
        if isinstance(e, Not):
            return Node("not", (go(e.child),))
        i = len(atoms)
        if isinstance(e, Cmp):
            k, c, vals = KIND_NAMES.index(e.op), e.column, (e.value, e.value)
        elif isinstance(e, In):
            vals = tuple(e.values) if len(e.values) == 2 else (e.values[0], e.values[0])
            k, c = (NOT_IN if e.negated else IN), e.column
        elif isinstance(e, IsNull):
            k, c, vals = (NOT_NULL if e.negated else IS_NULL), e.column, (0, 0)
        else:
            k, c, vals = (TRUE if isinstance(e, TrueExpr) else FALSE), "a", (0, 0)
        atoms.append(ZAtom(z3.IntVal(k), z3.IntVal(COLUMNS.index(c)),
                           z3.IntVal(ranks(vals[0])), z3.IntVal(ranks(vals[1]))))
        return Leaf(i)

    return go(expr), atoms


# --------------------------------------------------------------------------------------------
# The proofs


@dataclass
class Counterexample:
    kind: str                 # "bounds" | partition spec name
    shape: str
    expr: str
    row: dict
    file: dict
    python_confirms: bool

    def as_json(self) -> dict:
        return self.__dict__.copy()


@dataclass
class FilterProof:
    depth: int
    trees: int = 0
    concrete_shapes: int = 0
    bounds_proven: int = 0
    partition_proven: dict = field(default_factory=dict)
    counterexamples: list = field(default_factory=list)
    unknown: list = field(default_factory=list)
    seconds: float = 0.0
    cross_checked_bounds: int = 0
    cross_checked_partition: int = 0

    @property
    def ok(self) -> bool:
        return not self.counterexamples and not self.unknown

    def as_json(self) -> dict:
        return {"depth": self.depth, "trees": self.trees,
                "concrete_leaf_assignments": self.concrete_shapes,
                "bounds_proven": self.bounds_proven,
                "partition_proven": dict(self.partition_proven),
                "counterexamples": [c.as_json() for c in self.counterexamples],
                "unknown": self.unknown, "ok": self.ok,
                "cross_checked_bounds": self.cross_checked_bounds,
                "cross_checked_partition": self.cross_checked_partition,
                "seconds": round(self.seconds, 3)}


def _ival(m, x) -> int:
    return m.eval(x, model_completion=True).as_long()


def _bval(m, x) -> bool:
    return z3.is_true(m.eval(x, model_completion=True))


def _concrete(m, tree, atoms, row: ZRow):
    n = leaves(tree)
    kinds = [_ival(m, atoms[i].kind) for i in range(n)]
    cols = [_ival(m, atoms[i].col) for i in range(n)]
    lits = [(_ival(m, atoms[i].l1), _ival(m, atoms[i].l2)) for i in range(n)]
    expr = to_python_expr(tree, kinds, cols, lits)
    pyrow = {}
    for c, name in enumerate(COLUMNS):
        if _bval(m, row.null[c]):
            pyrow[name] = None
        else:
            v = _ival(m, row.val[c])
            pyrow[name] = s_text(v) if name in STRING_COLUMNS else v
    return expr, pyrow


def prove_bounds(tree, timeout_ms: int = 60000):
    """UNSAT of: row in file, eval_row TRUE, might_match_bounds False. None when proven,
    else a Counterexample (or "unknown")."""
    n = leaves(tree)
    atoms = [atom_vars(i) for i in range(n)]
    row, st = row_vars(), stats_vars()
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    for a in atoms:
        s.add(atom_domain(a))
    s.add(row_in_file(row, st))
    s.add(eval_row_z(tree, atoms, row)[0])
    s.add(z3.Not(might_match_bounds_z(tree, atoms, st)))
    res = s.check()
    if res == z3.unsat:
        return None
    if res == z3.unknown:
        return "unknown"
    m = s.model()
    expr, pyrow = _concrete(m, tree, atoms, row)
    conv = lambda c, v: s_text(v) if c in STRING_COLUMNS else v  # noqa: E731
    lower = {c: conv(c, _ival(m, st.lo[i])) for i, c in enumerate(COLUMNS) if _bval(m, st.has_lo[i])}
    upper = {c: conv(c, _ival(m, st.up[i])) for i, c in enumerate(COLUMNS) if _bval(m, st.has_up[i])}
    nulls = {c: _ival(m, st.nulls[i]) for i, c in enumerate(COLUMNS) if _bval(m, st.has_nulls[i])}
    records = _ival(m, st.records)
    confirms = eval_row(expr, pyrow) and not might_match_bounds(expr, lower, upper, nulls, records)
    return Counterexample("bounds", shape_text(tree), str(expr), pyrow,
                          {"lower": lower, "upper": upper, "null_counts": nulls,
                           "record_count": records}, confirms)


def prove_partition(tree, spec_name: str, timeout_ms: int = 60000):
    n = leaves(tree)
    atoms = [atom_vars(i) for i in range(n)]
    row = row_vars()
    trunc = MonotoneTruncate()
    bucket = z3.Function("bucket", z3.IntSort(), z3.IntSort())
    fields = z_fields(spec_name, trunc, bucket)
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    for a in atoms:
        s.add(atom_domain(a))
    s.add(eval_row_z(tree, atoms, row)[0])
    s.add(z3.Not(might_match_partition_z(tree, atoms, fields, row)))
    s.add(trunc.axioms())
    res = s.check()
    if res == z3.unsat:
        return None
    if res == z3.unknown:
        return "unknown"
    m = s.model()
    expr, pyrow = _concrete(m, tree, atoms, row)
    # truncate and bucket are abstract in z3: try the counterexample's expression and row on
    # a few real widths and bucket counts; it is a finding only if one of them confirms it.
    confirms, part, w = False, (), None
    if eval_row(expr, pyrow):
        for w in (1, 2, 3, 4, 5, 10, 16, 100):
            spec = py_spec(spec_name, w, w)
            part = spec.partition_of(pyrow)
            if not might_match_partition(expr, spec, part):
                confirms = True
                break
    return Counterexample(spec_name, shape_text(tree), str(expr), pyrow,
                          {"partition": list(part), "width_or_buckets": w}, confirms)


def prove_filters(depth: int = 2, specs: tuple[str, ...] = SPEC_NAMES, *,
                  cross_check_samples: int = 0, seed: int = 0) -> FilterProof:
    started = time.perf_counter()
    trees = shapes(depth)
    proof = FilterProof(depth, trees=len(trees))
    leaf_kinds = N_KINDS * len(COLUMNS)
    proof.concrete_shapes = sum(leaf_kinds ** leaves(t) for t in trees)
    proof.partition_proven = {s: 0 for s in specs}
    for tree in trees:
        r = prove_bounds(tree)
        if r is None:
            proof.bounds_proven += 1
        elif r == "unknown":
            proof.unknown.append(("bounds", shape_text(tree)))
        else:
            proof.counterexamples.append(r)
        for spec in specs:
            r = prove_partition(tree, spec)
            if r is None:
                proof.partition_proven[spec] += 1
            elif r == "unknown":
                proof.unknown.append((spec, shape_text(tree)))
            else:
                proof.counterexamples.append(r)
    if cross_check_samples:
        proof.cross_checked_bounds = cross_check_bounds(cross_check_samples, seed)
        proof.cross_checked_partition = cross_check_partition(cross_check_samples, seed)
    proof.seconds = time.perf_counter() - started
    return proof


# --------------------------------------------------------------------------------------------
# Cross-checks: the z3 encoding against the Python functions on concrete samples


def _random_atom(rng: random.Random) -> Expr:
    col = rng.choice(COLUMNS)
    lit = (lambda: rng.choice(["", "a", "ab", "b", "ba", "c", "zz"])) if col in STRING_COLUMNS \
        else (lambda: rng.randint(-12, 12))
    k = rng.randrange(N_KINDS)
    if k <= GE:
        return Cmp(KIND_NAMES[k], col, lit())
    if k in (IN, NOT_IN):
        return In(col, (lit(), lit()), k == NOT_IN)
    if k in (IS_NULL, NOT_NULL):
        return IsNull(col, k == NOT_NULL)
    return TrueExpr() if k == TRUE else FalseExpr()


def random_expr(rng: random.Random, depth: int) -> Expr:
    if depth == 0 or rng.random() < 0.3:
        return _random_atom(rng)
    op = rng.choice(("and", "or", "not"))
    if op == "not":
        return Not(random_expr(rng, depth - 1))
    x, y = random_expr(rng, depth - 1), random_expr(rng, depth - 1)
    return And(x, y) if op == "and" else Or(x, y)


def _random_value(rng, col):
    if rng.random() < 0.2:
        return None
    if col in STRING_COLUMNS:
        return rng.choice(["", "a", "ab", "b", "ba", "c", "zz", "abc"])
    return rng.randint(-12, 12)


def _collect_values(expr: Expr, extra) -> list:
    vals = list(extra)

    def go(e):
        if isinstance(e, (And, Or)):
            go(e.left)
            go(e.right)
        elif isinstance(e, Not):
            go(e.child)
        elif isinstance(e, Cmp):
            vals.append(e.value)
        elif isinstance(e, In):
            vals.extend(e.values)
    go(expr)
    return vals


def _ranker(values) -> Callable[[Any], int]:
    """Ints map to themselves; strings to an order-preserving rank (far from the ints)."""
    strings = sorted({v for v in values if isinstance(v, str)})
    table = {v: 10_000 + 2 * i for i, v in enumerate(strings)}
    return lambda v: table[v] if isinstance(v, str) else v


def cross_check_bounds(samples: int = 500, seed: int = 0) -> int:
    """The z3 terms, evaluated on concrete values, equal ``might_match_bounds`` and
    ``eval_row`` on ``samples`` random (expression, file stats, row) triples."""
    rng = random.Random(seed)
    for i in range(samples):
        expr = random_expr(rng, rng.randint(0, 3))
        rows = [{c: _random_value(rng, c) for c in COLUMNS} for _ in range(rng.randint(1, 3))]
        lower, upper, nulls = {}, {}, {}
        for c in COLUMNS:
            vals = [r[c] for r in rows if r[c] is not None]
            if vals and rng.random() < 0.85:
                lower[c] = min(vals)
            if vals and rng.random() < 0.85:
                upper[c] = max(vals)
            if rng.random() < 0.85:
                nulls[c] = sum(r[c] is None for r in rows)
        records = rng.choice([len(rows)] * 8 + [0, -1])
        extra = [r[c] for r in rows for c in COLUMNS] + list(lower.values()) + list(upper.values())
        rank = _ranker(_collect_values(expr, [v for v in extra if v is not None]))
        tree, atoms = from_python_expr(expr, rank)
        st = ZStats([z3.BoolVal(c in lower) for c in COLUMNS],
                    [z3.IntVal(rank(lower.get(c, 0))) for c in COLUMNS],
                    [z3.BoolVal(c in upper) for c in COLUMNS],
                    [z3.IntVal(rank(upper.get(c, 0))) for c in COLUMNS],
                    [z3.BoolVal(c in nulls) for c in COLUMNS],
                    [z3.IntVal(nulls.get(c, 0)) for c in COLUMNS], z3.IntVal(records))
        want = might_match_bounds(expr, lower, upper, nulls, records)
        got = z3.is_true(z3.simplify(might_match_bounds_z(tree, atoms, st)))
        if got != want:
            raise FilterEncodingError(f"bounds sample {i}: z3 {got}, Python {want} for {expr} "
                                      f"lower={lower} upper={upper} nulls={nulls} n={records}")
        row = rows[0]
        zrow = ZRow([z3.BoolVal(row[c] is None) for c in COLUMNS],
                    [z3.IntVal(rank(row[c]) if row[c] is not None else 0) for c in COLUMNS])
        got_row = z3.is_true(z3.simplify(eval_row_z(tree, atoms, zrow)[0]))
        if got_row != eval_row(expr, row):
            raise FilterEncodingError(f"eval_row sample {i}: z3 {got_row} for {expr} on {row}")
    return samples


def cross_check_partition(samples: int = 500, seed: int = 0) -> int:
    """The z3 projection + Evaluator terms equal ``might_match_partition`` on random samples
    (bucket interpreted by the real murmur3 bucket function on the concrete values)."""
    rng = random.Random(seed + 1)
    for i in range(samples):
        name = rng.choice(SPEC_NAMES)
        width, nb = rng.choice([1, 2, 3, 5, 10]), rng.choice([1, 2, 4, 16])
        spec = py_spec(name, width, nb)
        expr = random_expr(rng, rng.randint(0, 3))
        row = {c: _random_value(rng, c) for c in COLUMNS}
        rank = _ranker(_collect_values(expr, [v for v in row.values() if v is not None]))
        unrank = {}
        for v in _collect_values(expr, [v for v in row.values() if v is not None]):
            unrank[rank(v)] = v
        btr = Transform("bucket", nb)

        def bucket(x, btr=btr, unrank=unrank):
            v = z3.simplify(x).as_long()
            return z3.IntVal(btr.apply(unrank.get(v, v)))

        fields = z_fields(name, trunc_z(z3.IntVal(width)), bucket)
        tree, atoms = from_python_expr(expr, rank)
        zrow = ZRow([z3.BoolVal(row[c] is None) for c in COLUMNS],
                    [z3.IntVal(rank(row[c]) if row[c] is not None else 0) for c in COLUMNS])
        want = might_match_partition(expr, spec, spec.partition_of(row))
        got = z3.is_true(z3.simplify(might_match_partition_z(tree, atoms, fields, zrow)))
        if got != want:
            raise FilterEncodingError(f"partition sample {i}: z3 {got}, Python {want} for "
                                      f"{expr} spec {spec} row {row}")
    return samples
