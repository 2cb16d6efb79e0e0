"""Partial-order reduction: which actions commute, and which successors need not be explored.

Independence (static, over action labels; valid for ``fuse_local_steps=True``, which the
exploration configurations always use). With fused steps a writer's actions touch:

    begin            reads the catalog pointer and immutable objects; adds its own files
                     (``w1-1-d1``: the writer's name and op number make them unique)
    refresh          reads the pointer (or, PyIceberg's first attempt, only its own base);
                     validation reads immutable objects; metadata writes add objects under the
                     writer's own names (``v3-w1-2.metadata.json``, ``snap-1002*.avro``)
    cas              reads and writes the pointer (cas, cas_reply_lost)
    cas_not_applied  writer-local (the swap never happened)
    crash            writer-local

and its own ``WriterState``. No action reads another writer's ``WriterState``, an object's content
never changes once written (``ObjectStore.put_all`` refuses to), and two writers never write the
same name. So two actions of *different* writers are independent unless one of them writes the
pointer (cas, cas_reply_lost) and the other reads or writes it (begin, refresh, cas,
cas_reply_lost): the store updates are unions of disjoint sets (they commute), the reads of
immutable objects see the same content in either order, and the writer states are disjoint.
Enabledness of a writer's actions depends only on its own ``WriterState``
(``Model.writer_actions``), so an action of one writer never enables or disables another's.
Actions of the same writer are always dependent. ``tests/test_explicit.py`` checks the diamond
``step(step(s,a),b) == step(step(s,b),a)`` on every independent pair of reachable states of small
configurations.

The reduction is a depth-1 sleep set: from a state ``x`` reached by the edge ``p --c--> x``,
an action ``b`` of ``x`` need not be explored when ``b`` is independent of ``c`` and ``b < c`` in a
fixed total order on labels: ``p --b--> --c-->`` reaches ``x.b`` at the same depth, and that path
is the lexicographically smaller one. A state reached by several edges (all in the same BFS level:
every path to a state has the same length, since each writer's action count is a function of its
own ``WriterState``) prunes only the actions pruned by *every* incoming edge. Then every state is
still reached (the lexicographically least path to any state has no adjacent independent pair
``c b`` with ``b < c``, and each of its prefixes is least for its own end, so by induction each of
its edges is explored), so the reachable states, their BFS depths and everything evaluated on
them are exactly those of the full search; only redundant transitions are skipped.
"""

from __future__ import annotations

from icecheck.models.system import (BEGIN, CAS, CAS_NOT_APPLIED, CAS_REPLY_LOST, CRASH, REFRESH,
                                    Action)

POINTER_WRITERS = frozenset({CAS, CAS_REPLY_LOST})
POINTER_READERS = frozenset({BEGIN, REFRESH, CAS, CAS_REPLY_LOST})
LOCAL = frozenset({CAS_NOT_APPLIED, CRASH})


def independent(a: Action, b: Action) -> bool:
    """Do ``a`` and ``b`` commute in every state where both are enabled?"""
    if a.writer == b.writer:
        return False
    if a.kind in POINTER_WRITERS and b.kind in POINTER_READERS:
        return False
    if b.kind in POINTER_WRITERS and a.kind in POINTER_READERS:
        return False
    return True


def order_key(a: Action) -> tuple:
    return (a.writer, a.kind, a.choice)


def pruned_after(last: Action, enabled: list[Action]) -> frozenset[str]:
    """Actions of ``enabled`` that need not be explored after the edge ``last``."""
    lk = order_key(last)
    return frozenset(str(b) for b in enabled if independent(b, last) and order_key(b) < lk)
