"""The baseline of the benchmarks: a trivial pure-Python BFS of the two-phase-commit model.

Why: a states/s figure alone says as much about the machine (and how many other jobs share it)
as about the checker. The benchmarks therefore run, in the same process and right beside each
icecheck search, this deliberately plain breadth-first search of a textbook model, and report
icecheck's distinct states/s as a *ratio* to it: a figure that stays put on a busy or a fast
machine (issue 13's target: at least 0.10).

The model is the two-phase commit of Lamport's TLA+ ``TwoPhase`` spec, as the Stateright model
checker ships it in its examples (``examples/2pc.rs``): one transaction manager (TM) and ``n``
resource managers (RMs), with the message set as a grow-only set.

* state: (rm_state per RM, tm_state, the RMs the TM has seen prepared, the messages sent);
* TM actions: receive an RM's Prepared message; commit once every RM is prepared; abort;
* RM actions: prepare (sends Prepared), choose to abort, receive Commit, receive Abort.

The search is the simplest faithful BFS: states are plain tuples deduplicated in a Python set
(Python's own hash), a deque for the frontier, and the safety invariant (no RM committed while
another aborted) checked at every distinct state. No symmetry, no reduction, no tricks: this is
the cost of a minimal pure-Python explicit-state search, which is what icecheck is held to.
It is *not* part of icecheck (models/ stays the one Iceberg model); it lives only here.

Known counts (TLA+ TwoPhase / Stateright): 288 distinct states with 3 RMs
(tests/test_benchmarks.py pins them).
"""

from __future__ import annotations

import time
from collections import deque

WORKING, PREPARED, COMMITTED, ABORTED = 0, 1, 2, 3
TM_INIT, TM_COMMITTED, TM_ABORTED = 0, 1, 2
# messages: ("P", rm) an RM's Prepared, ("C",) the TM's Commit, ("A",) the TM's Abort
COMMIT_MSG, ABORT_MSG = ("C",), ("A",)

State = tuple  # (rm_states: tuple[int, ...], tm_state: int, tm_prepared: frozenset, msgs: frozenset)


def initial(n: int) -> State:
    return ((WORKING,) * n, TM_INIT, frozenset(), frozenset())


def successors(s: State):
    """Every (action name, next state) enabled in ``s``."""
    rms, tm, prepared, msgs = s
    n = len(rms)
    if tm == TM_INIT:
        for rm in range(n):
            if rm not in prepared and ("P", rm) in msgs:
                yield f"tm_rcv_prepared({rm})", (rms, tm, prepared | {rm}, msgs)
        if len(prepared) == n:
            yield "tm_commit", (rms, TM_COMMITTED, prepared, msgs | {COMMIT_MSG})
        yield "tm_abort", (rms, TM_ABORTED, prepared, msgs | {ABORT_MSG})
    for rm in range(n):
        st = rms[rm]
        if st == WORKING:
            yield f"rm_prepare({rm})", (_set(rms, rm, PREPARED), tm, prepared,
                                        msgs | {("P", rm)})
            yield f"rm_choose_to_abort({rm})", (_set(rms, rm, ABORTED), tm, prepared, msgs)
        if COMMIT_MSG in msgs and st != COMMITTED:
            yield f"rm_rcv_commit({rm})", (_set(rms, rm, COMMITTED), tm, prepared, msgs)
        if ABORT_MSG in msgs and st != ABORTED:
            yield f"rm_rcv_abort({rm})", (_set(rms, rm, ABORTED), tm, prepared, msgs)


def _set(t: tuple, i: int, v: int) -> tuple:
    return t[:i] + (v,) + t[i + 1:]


def consistent(s: State) -> bool:
    """TwoPhase's TCConsistent: no RM committed while another aborted."""
    rms = s[0]
    return not (COMMITTED in rms and ABORTED in rms)


def bfs(n: int) -> dict:
    """Exhaust the model with ``n`` RMs; distinct states, transitions, seconds, states/s."""
    start, cpu = time.perf_counter(), time.process_time()
    s0 = initial(n)
    seen = {s0}
    frontier = deque([s0])
    transitions = 0
    violations = 0
    while frontier:
        s = frontier.popleft()
        if not consistent(s):
            violations += 1
        for _, s2 in successors(s):
            transitions += 1
            if s2 not in seen:
                seen.add(s2)
                frontier.append(s2)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"rms": n, "states": len(seen), "transitions": transitions,
            "violations": violations, "seconds": seconds, "cpu_seconds": cpu,
            "states_per_s": len(seen) / seconds if seconds > 0 else 0.0,
            "cpu_states_per_s": len(seen) / cpu if cpu > 0 else 0.0}


def rate(min_seconds: float = 1.0, n: int = 6) -> dict:
    """The baseline's distinct states/s: repeated runs of ``bfs(n)`` until ``min_seconds`` of
    search have been measured (the best run counts: the least disturbed by other jobs; by CPU
    time, ``cpu_states_per_s``)."""
    runs = []
    total = 0.0
    while total < min_seconds or not runs:
        r = bfs(n)
        runs.append(r)
        total += r["seconds"]
    best = max(runs, key=lambda r: r["cpu_states_per_s"])
    return dict(best, runs=len(runs))


if __name__ == "__main__":
    for k in (3, 4, 5, 6, 7):
        r = bfs(k)
        print(f"{k} RMs: {r['states']:,} states, {r['transitions']:,} transitions, "
              f"{r['seconds']:.3f}s, {r['states_per_s']:,.0f} states/s")
