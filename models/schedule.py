"""Schedule constraints between jobs: how teams keep two jobs from racing without any help from
Iceberg (an orchestrator's dependency, a lock, a cron window).

A pipeline file's ``schedule`` says which jobs may not overlap and which run in sequence; the
model then never enables a job's first command where its schedule forbids it. Two kinds:

``never_overlap`` (a, b)
    neither job starts while the other is running: once one has begun its first command, the
    other begins only after the first has ended (finished its program, or crashed).
``after`` (a, b)
    job a starts only after job b has ended (an orchestrator's dependency: b >> a).

A job "has begun" once it left its first command's idle phase, and "has ended" once it has no
command left to run (``DONE``) or crashed. Only a job's *first* command is gated: once running,
a job runs as it would (its own commands are sequential anyway).

Why here and not in the search engines: the constraint is part of what the pipeline *is* (the
runs the team's orchestrator allows), so every engine (BFS, Hypothesis, the explorer, replays)
must see the same enabled actions; ``Model.action_parts`` is the one place they all read them.
It makes one writer's enabledness depend on another's state, which the partial-order reduction
assumes never happens: ``engines.explicit.search`` turns that reduction off for a scheduled
configuration, and symmetry keeps scheduled writers apart (``engines.symmetry``).
"""

from __future__ import annotations

from typing import Any

NEVER_OVERLAP = "never_overlap"
AFTER = "after"
KINDS = (NEVER_OVERLAP, AFTER)


def schedule_error(schedule: Any, writers: int) -> str | None:
    """Why ``schedule`` (a configuration's JSON form: ``[[kind, i, j], ...]``, writer indexes
    1-based) is malformed for ``writers`` writers, or None. An ``after`` cycle would leave the
    jobs on it waiting for each other forever: refused."""
    if not isinstance(schedule, (list, tuple)):
        return f"schedule must be a list of [kind, writer, writer], not {schedule!r}"
    after: dict[int, set[int]] = {}
    for c in schedule:
        if not isinstance(c, (list, tuple)) or len(c) != 3 or c[0] not in KINDS:
            return (f"schedule entry {c!r} must be [kind, writer, writer] with kind one of "
                    f"{', '.join(KINDS)}")
        for i in c[1:]:
            if isinstance(i, bool) or not isinstance(i, int) or not 1 <= i <= writers:
                return f"schedule entry {list(c)!r} names writer {i!r}; there are {writers}"
        if c[1] == c[2]:
            return f"schedule entry {list(c)!r} relates a job to itself"
        if c[0] == AFTER:
            after.setdefault(c[1], set()).add(c[2])
    cycle = _cycle(after)
    if cycle:
        return ("schedule: the 'after' constraints form a cycle ("
                + " after ".join(f"w{i}" for i in cycle) + "): those jobs could never start")
    return None


def _cycle(edges: dict[int, set[int]]) -> list[int] | None:
    """A cycle of ``edges`` (a -> b: a runs after b) as [a, b, ..., a], or None."""
    state: dict[int, int] = {}

    def visit(n: int, path: list[int]) -> list[int] | None:
        state[n] = 1
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                return path[path.index(m):] + [m]
            if m not in state:
                got = visit(m, path + [m])
                if got:
                    return got
        state[n] = 2
        return None

    for n in sorted(edges):
        if n not in state:
            got = visit(n, [n])
            if got:
                return got
    return None


def started(w) -> bool:
    """Has the writer begun its first command?"""
    return w.op_index > 0 or w.phase != "idle"


def ended(w) -> bool:
    """Has the writer no command left to run (its program done, or it crashed)?"""
    return w.phase in ("done", "crashed")


def blocked(schedule: tuple, writers: tuple, position: dict) -> frozenset[str]:
    """The writers whose first command the schedule holds back in a state whose writers are
    ``writers`` (``position``: writer name -> index in ``writers``). ``schedule`` is the model
    configuration's ``((kind, a, b), ...)`` with writer names."""
    out = set()
    for kind, a, b in schedule:
        wa, wb = writers[position[a]], writers[position[b]]
        if kind == AFTER:
            if not started(wa) and not ended(wb):
                out.add(a)
        else:   # never_overlap: a job that has begun and not ended holds the other back
            if not started(wa) and started(wb) and not ended(wb):
                out.add(a)
            if not started(wb) and started(wa) and not ended(wa):
                out.add(b)
    return frozenset(out)


def describe(kind: str, a: str, b: str) -> str:
    """The constraint in a sentence, with the jobs' names."""
    if kind == AFTER:
        return f"{a} starts only after {b} has ended"
    return f"{a} and {b} never overlap"
