"""The goals of the explorer's "Find a path to...": a violated property or a failed validation,
as predicates on states. The search itself is the engines' (``engines.explicit.shortest_path``),
so the explorer keeps no search loop of its own."""

from __future__ import annotations

from typing import Callable

from icecheck.models.system import VALIDATION_FAILED, State

# The ``check`` names of ``ValidationFailed`` (models/validation.py, models/producer.py).
VALIDATIONS = ("history", "no_conflicting_data", "no_conflicting_deletes",
               "no_conflicting_delete_files", "no_new_deletes_for_data_files", "added_dvs",
               "data_files_exist", "missing_delete_paths")
ANY = "any"


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
