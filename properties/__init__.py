"""Properties of committed histories: what must hold, what was reached, and what is allowed.

    evaluate(model, state, key="id") -> [Violation]         (deterministic order)
    reached(model, state, key="id") -> {event}              ("sometimes" events)
    dependency_graph(model, state, key="id") -> networkx.MultiDiGraph
    expectation(profile, catalog, format_version, violation) -> Expectation
    split_expected(profile, catalog, format_version, violations) -> (unexpected, allowed)

Properties (``PROPERTIES``): lost_write, undelete, dangling_deletes, duplicate_keys,
metadata_integrity, consistent_read, isolation, readable. See each module's docstring for its definition.
"""

from __future__ import annotations

import networkx as nx

from icecheck.models.system import Model, State

from . import (consistent, dangling, duplicates, integrity, isolation, lost_write, reachability,
               readable, undelete)
from .analysis import EvalMemo, analyze
from .expectations import Expectation, expectation, split_expected
from .reachability import EVENTS, SITUATIONS
from .violation import FINDING, PROPERTIES, VIOLATION, Violation

__all__ = ["EvalMemo", "Violation", "PROPERTIES", "evaluate", "reached", "dependency_graph", "Expectation",
           "expectation", "split_expected", "EVENTS", "SITUATIONS", "VIOLATION", "FINDING"]

_CHECKS = (
    ("lost_write", lost_write.check),
    ("undelete", undelete.check),
    ("dangling_deletes", dangling.check),
    ("duplicate_keys", duplicates.check),
    ("metadata_integrity", integrity.check),
    ("consistent_read", consistent.check),
    ("isolation", isolation.check),
    ("readable", readable.check),
)


def evaluate(model: Model, state: State, key: str = "id",
             memo: EvalMemo | None = None) -> list[Violation]:
    """Every property violation (and finding) of the state's committed history, in the order of
    PROPERTIES, then by first occurrence. ``memo``: shared pure pieces (``EvalMemo``)."""
    a = analyze(model, state, key, memo)
    out: list[Violation] = []
    for _, check in _CHECKS:
        out.extend(check(a))
    return out


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
