"""A small bounded breadth-first search over ``model.actions`` / ``model.step`` (for "Find a
path to..."): the nearest state (fewest actions) that satisfies a goal, states deduplicated by
``models.system.digest``."""

from __future__ import annotations

import time
from collections import deque
from typing import Callable

from icecheck.models.system import VALIDATION_FAILED, Action, Model, State, digest

# The ``check`` names of ``ValidationFailed`` (models/validation.py, models/producer.py).
VALIDATIONS = ("history", "no_conflicting_data", "no_conflicting_deletes",
               "no_conflicting_delete_files", "no_new_deletes_for_data_files", "added_dvs",
               "data_files_exist", "missing_delete_paths")
ANY = "any"


def find(model: Model, start: State, goal: Callable[[State], bool], *, max_states: int = 20000,
         max_depth: int = 60, time_budget: float | None = 30.0
         ) -> tuple[list[Action] | None, int, bool]:
    """(the shortest action list from ``start`` to a goal state or None, states explored,
    whether a bound cut the search)."""
    if goal(start):
        return [], 1, False
    deadline = time.monotonic() + time_budget if time_budget else None
    parents: dict[str, tuple[str | None, Action | None]] = {digest(start): (None, None)}
    queue: deque[tuple[State, str, int]] = deque([(start, digest(start), 0)])
    capped = False
    while queue:
        state, key, depth = queue.popleft()
        if depth >= max_depth:
            capped = True
            continue
        for a in model.actions(state):
            nxt = model.step(state, a)
            k = digest(nxt)
            if k in parents:
                continue
            parents[k] = (key, a)
            if goal(nxt):
                path: list[Action] = []
                while k is not None:
                    k, act = parents[k]
                    if act is not None:
                        path.append(act)
                path.reverse()
                return path, len(parents), False
            if len(parents) >= max_states or (deadline and time.monotonic() > deadline):
                return None, len(parents), True
            queue.append((nxt, k, depth + 1))
    return None, len(parents), capped


def property_goal(session, prop: str) -> tuple[Callable[[State], bool], str]:
    from icecheck.properties import PROPERTIES, evaluate

    from .errors import SessionError

    if prop != ANY and prop not in PROPERTIES:
        raise SessionError(f"unknown property {prop!r}: expected one of "
                           f"{', '.join(PROPERTIES)} or {ANY}")
    model, key = session.model, session.config.key

    def goal(state: State) -> bool:
        return any(prop in (ANY, v.property) for v in evaluate(model, state, key=key))

    return goal, (f"a violation of {prop}" if prop != ANY else "a violation of any property")


def _failed(state: State, check: str) -> int:
    return sum(1 for w in state.writers for r in w.history
               if r.outcome == VALIDATION_FAILED and check in (ANY, r.check))


def validation_goal(session, check: str) -> tuple[Callable[[State], bool], str]:
    from .errors import SessionError

    if check != ANY and check not in VALIDATIONS:
        raise SessionError(f"unknown validation {check!r}: expected one of "
                           f"{', '.join(VALIDATIONS)} or {ANY}")
    before = _failed(session.state, check)

    def goal(state: State) -> bool:
        return _failed(state, check) > before

    return goal, (f"a failed {check} validation" if check != ANY else "a failed validation")
