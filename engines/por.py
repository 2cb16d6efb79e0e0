"""Partial-order reduction: which actions commute, and which successors need not be explored.

Independence (static, over action labels; valid for ``fuse_local_steps=True``, which the
exploration configurations always use). With fused steps a writer's actions touch:

    begin            reads the catalog pointer and immutable objects; adds its own files
                     (``w1-1-d1``: the writer's name and op number make them unique)
    refresh          reads the pointer (or, PyIceberg's first attempt, only its own base);
                     validation reads immutable objects; metadata writes add objects under the
                     writer's own names (``v3-w1-2.metadata.json``, ``snap-1002*.avro``)
    cas              reads and writes the pointer (cas, cas_reply_lost, cas_applied_failed)
    write            (only where a writer may expire snapshots; fused into begin otherwise)
                     reads which files were deleted, which an expiry's cas changes; adds its
                     own files
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

The reduction is a sleep set (Godefroid's, with state caching). Actions are compared in an
order that depends on the state (``order_key``): the acting writer's *rank* at the state where
the action is taken (``Fingerprinter.writer_ranks``: its symmetry class, then its signature's
place in the class), then the action's kind and choice. After the edge ``p --c--> x`` the sleep
set of ``x`` holds the actions of ``x`` independent of ``c`` that come before ``c`` in ``p``'s
order (``p --b--> --c-->`` reaches ``x.b`` at the same depth, along a smaller path), and those
of ``p``'s own sleep set independent of ``c`` (``sleep_after``); ``x`` does not explore them. A
state reached by several edges (all in the same BFS level: every path to a state has the same
length, since each writer's action count is a function of its own ``WriterState``; "Lost
races" below for states merged across levels) sleeps only
on what *every* incoming edge puts to sleep; with symmetry, an edge whose concrete successor is
not the stored representative of its orbit puts nothing to sleep.

Why every orbit is still reached: order paths by their sequences of ranks (compared
lexicographically). The least path to a state has no action ``c`` that could move before an
earlier ``b`` it is independent of (together with everything between them) with ``c`` before
``b`` in the order: that move gives a smaller path to the same state. An action asleep after a
path is exactly such an action. So, by induction on depth, the last edge of a least path to a
state is never asleep at its (representative) source. Symmetry needs the order to be invariant:
a writer's rank in a state equals its image's rank in the renamed state, so the renaming of a
least path is a least path, and the representative's sleep set is that of a least path. (With a
fixed order by writer name that step fails; ``tests/test_explicit.py`` checks the invariance and
that every reduced search keeps every state.) Interchangeable writers in equal states tie on
rank: their actions compare by kind and choice alone, so an action and its renaming tie and
neither puts the other to sleep. The depth-first search keeps the one-edge part only (nothing
inherited): a revisit there re-expands only what the new edge does not put to sleep.

Doomed swaps (a persistent set, on top of the sleep sets). A writer whose one enabled step is a
plain ``cas`` that fails now against a catalog already past the version it refreshed
(``Model.doomed_swap``: it has retries left, no fault or crash can reach it, its catalog is
the configuration's) loses that race whatever the others do first: an applied swap only raises
the catalog's version, so none can make its swap apply, and its step changes nothing but its
own phase and attempt (back to ``written``, to refresh and try again). The step is independent
of every other writer's action now and in the future, and it is invisible: no history record,
no file, no pointer, so no property's verdict, changes with it. So ``{that cas}`` is a
persistent set, and the search explores it alone at such a state (``Expander._doomed``), the
first such writer in slot order. A state where other writers move on while the loser has
not yet noticed its loss is reached instead with the loss taken first, one step apart on the
loser's side only; the state graph is acyclic (each step advances its writer), so no cycle
proviso is needed. The successor's sleep set is what was asleep and is independent of the
swap: nothing else was explored at the state to put to sleep. What this keeps, measured on
every configuration of ``tests/test_explicit.py`` against the unreduced search: the same
violated and allowed properties, the same shortest counterexample lengths, the same final
outcomes; it drops states (the pipelines of ``benchmarks/pipelines/``: about a third of a
BFS level at depth 11), not behaviours. ``DOOMED_SWAPS`` turns it off for a measurement of
the sleep sets alone (benchmarks/pipelines.py); ``--no-por`` turns both off.

Lost races (``Model.fingerprint_writers``, ``symmetry.MERGE_LOSSES``). Fingerprints leave out
how many races a writer lost where that can no longer change what happens, so states reached
by paths of different lengths (each lost race is two more steps) can share one. The argument
above then reads: order paths to a fingerprint by length first, then by their rank sequences.
The breadth-first search meets a fingerprint first at its shortest paths and keeps that
state; its sleep set is what every edge of that level into it puts to sleep, the last edge of
a least path among them. A prefix of a least path is a least path of its own fingerprint (a
shorter path to the prefix's fingerprint would, with the same last actions, give a shorter
path to the whole). Merged states have the same enabled actions and verdicts, and their
futures are the same up to the names the writer gives what it writes next, so the induction
goes through with "reached" read as "a state of the same verdicts reached". What no longer
holds is that the states counted are independent of the order of the search: which of two
merged states is kept decides which renamed copy of their future is searched. The
breadth-first search keeps the first of the shallowest, in its own order (the same in every
run, with any number of workers, and on Spark: each keeps the first edge in frontier order);
a depth-first search may keep another one and count other states (with a depth bound it does
not merge: it could meet the deeper one first and cut it at the bound).
"""

from __future__ import annotations

from typing import Callable, Mapping

from icecheck.models.system import (BEGIN, CAS, CAS_APPLIED_FAILED, CAS_NOT_APPLIED,
                                    CAS_REPLY_LOST, CRASH, REFRESH, RESTART, WRITE, Action)

# cas_applied_failed swaps the pointer too (the catalog applied the commit; only its answer
# was a failure): left out of both sets until issue 45, the reduced search put to sleep the
# interleavings where another writer commits around it and missed reachable states
POINTER_WRITERS = frozenset({CAS, CAS_REPLY_LOST, CAS_APPLIED_FAILED})
# ``write`` is a step of its own only where a writer may expire snapshots (``Model.
# _split_write``): it reads which files an expiry deleted, which an expiry's swap changes, so
# it is dependent on the swaps like a pointer reader
# a streaming sink's restart reads what it committed from the table's head (models/lifecycle.py)
POINTER_READERS = frozenset({BEGIN, REFRESH, CAS, CAS_REPLY_LOST, CAS_APPLIED_FAILED, WRITE,
                             RESTART})
LOCAL = frozenset({CAS_NOT_APPLIED, CRASH})
#: Explore a doomed swap alone (above). A constant, not a search option: a benchmark's fresh
#: process sets it to measure the sleep sets alone; every search otherwise has it on with POR.
DOOMED_SWAPS = True


def applies(cfg) -> bool:
    """Does the reduction apply to ``cfg``? Not with a schedule (models/schedule.py): there one
    job's start depends on another's progress (a job that ends enables the one that waits for
    it), against the independence above, which assumes a writer's enabled actions are a
    function of its own ``WriterState``. Nor with a clock (``ticks``, models/clock.py): a tick
    commutes with no step that writes a file (each file records the tick it was written at),
    and remove_orphan_files deletes what other writers wrote. Nor beside a Hive writer that
    takes the metastore lock (models/clients.py): while it holds it, no other locking writer
    may check."""
    return not getattr(cfg, "schedule", ()) and not getattr(cfg, "ticks", 0) and not any(
        c[1] == "hms_lock" for c in getattr(cfg, "clients", ()))


def independent(a: Action, b: Action) -> bool:
    """Do ``a`` and ``b`` commute in every state where both are enabled?"""
    if a.writer == b.writer:
        return False
    if a.kind in POINTER_WRITERS and b.kind in POINTER_READERS:
        return False
    if b.kind in POINTER_WRITERS and a.kind in POINTER_READERS:
        return False
    return True


def order_key(a: Action, ranks: Mapping[str, tuple]) -> tuple:
    """``a``'s place in the order the sleep sets compare actions by, at the state whose
    writers' ranks are ``ranks`` (``Fingerprinter.writer_ranks``): the writer's symmetry class
    and its signature's place in it, then the action's kind and choice. Interchangeable
    writers in equal states tie."""
    return (ranks[a.writer], a.kind, a.choice)


def sleep_after(last: Action, enabled: list[Action], ranks: Mapping[str, tuple],
                inherited: frozenset[str] = frozenset(),
                action_of: Callable[[str], Action | None] | None = None) -> frozenset[str]:
    """The sleep set after the edge ``last`` taken at a state whose writers rank ``ranks``
    and whose own sleep set is ``inherited`` (labels; ``action_of`` reads one back from the
    enabled actions, None when it is not one of them): the actions of ``enabled``
    independent of ``last`` that come before it in the order, and those of ``inherited``
    independent of ``last``."""
    lk = order_key(last, ranks)
    out = {str(b) for b in enabled if independent(b, last) and order_key(b, ranks) < lk}
    for label in inherited:
        # an action asleep before ``last`` and independent of it is of another writer, so
        # still enabled; one that is no longer enabled is of last's writer: it wakes up
        b = action_of(label)
        if b is not None and label not in out and independent(b, last):
            out.add(label)
    return frozenset(out)
