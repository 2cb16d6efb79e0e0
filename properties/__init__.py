"""Properties of committed histories: what must hold, what was reached, and what is allowed.

    evaluate(model, state, key="id") -> [Violation]         (deterministic order)
    reached(model, state, key="id") -> {event}              ("sometimes" events)
    commit_order(model, state, key="id") -> {op label: lineage position}
    dependency_graph(model, state, key="id") -> networkx.MultiDiGraph
    expectation(profile, catalog, format_version, violation) -> Expectation
    split_expected(profile, catalog, format_version, violations) -> (unexpected, allowed)

Properties (``PROPERTIES``): lost_write, undelete, dangling_deletes, duplicate_keys,
metadata_integrity, consistent_read, isolation, readable. See each module's docstring for its definition.
"""

from __future__ import annotations

import networkx as nx

from icecheck.models.system import Model, State

from . import (consistent, dangling, delivery, duplicates, integrity, isolation, lost_write,
               reachability, readable, undelete)
from .analysis import EvalMemo, analyze
from .expectations import Expectation, expectation, split_expected
from .reachability import EVENTS, SITUATIONS
from .violation import FINDING, PROPERTIES, VIOLATION, Violation

__all__ = ["EvalMemo", "Violation", "PROPERTIES", "evaluate", "reached", "commit_order",
           "dependency_graph", "Expectation",
           "expectation", "split_expected", "EVENTS", "SITUATIONS", "VIOLATION", "FINDING"]

#: The checks, in the order of PROPERTIES. Each is (property, function of the analysis,
#: reads only the committed lineage). A lineage check reads the lineage, its operations'
#: records, their effects and the dependency graph, all functions of the oracle's key and the
#: lineage's sequence numbers when the history is self-contained: its violations are shared
#: between evaluations (``Analysis.shared``; issue 13: 2,308 lineages for 3,126 histories on
#: mor-serializable-3w2op-delete). The others read what the lineage does not say: every
#: writer's finished operations (lost_write's catalog level, metadata_integrity), the catalog
#: entry and the deleted objects (metadata_integrity, readable).
_CHECKS = (
    ("lost_write", lost_write.check_catalog, False),
    ("lost_write", lost_write.check_rows, True),
    ("lost_write", delivery.check, False),
    ("undelete", undelete.check, True),
    ("dangling_deletes", dangling.check, True),
    ("duplicate_keys", duplicates.check, True),
    ("metadata_integrity", integrity.check, False),
    ("consistent_read", consistent.check, True),
    ("isolation", isolation.check, True),
    ("readable", readable.check, False),
)


def _lineage_checks(a) -> tuple:
    """The violations of the lineage checks, one tuple per check of ``_CHECKS`` (in order)."""
    from .command_level import annotate   # a commit at its own isolation level
    return tuple(tuple(annotate(a, check(a))) for _, check, lineage in _CHECKS if lineage)


def evaluate(model: Model, state: State, key: str = "id",
             memo: EvalMemo | None = None) -> list[Violation]:
    """Every property violation (and finding) of the state's committed history, in the order of
    PROPERTIES, then by first occurrence. ``memo``: shared pure pieces (``EvalMemo``)."""
    a = analyze(model, state, key, memo)
    shared = iter(a.shared("lineage_checks", _lineage_checks))
    out: list[Violation] = []
    for _, check, lineage in _CHECKS:
        out.extend(next(shared) if lineage else check(a))
    return out


def commit_order(model: Model, state: State, key: str = "id",
                 memo: EvalMemo | None = None) -> dict[str, int]:
    """Each committed operation on the table's lineage (its label, ``w2.1``) -> its position
    there: the order the expectation table needs to judge a mixed run's violation by the
    writer that committed last (``expectations.expectation``)."""
    return {op.label: op.position for op in analyze(model, state, key, memo).history.ops
            if op.position is not None}


def reached(model: Model, state: State, key: str = "id",
            memo: EvalMemo | None = None) -> set[str]:
    """The "sometimes" events this state shows (see ``EVENTS``)."""
    return reachability.reached(analyze(model, state, key, memo))


def dependency_graph(model: Model, state: State, key: str = "id") -> nx.MultiDiGraph:
    """The dependency graph of the committed operations (a fresh copy).

    Nodes: op labels ("w1.1": writer w1's 1st operation; "setup.1"), with attributes writer,
    op_index, command, snapshot_id, sequence_number, base_snapshot_id. Edges carry ``type``
    (ww | wr | rw | co; co = commit order, display only) and ``row_key`` (the key value, None
    for co); the multigraph key is "type:repr(key)".
    """
    return analyze(model, state, key).graph.copy()
