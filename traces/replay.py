"""Replay: re-execute a trace on the model and check it still means the same.

Every action must be enabled, every state digest must match, and the verdict must be the same:
the same set of violated properties and the same outcome for every writer's operations (so a
*rejected* trace checks that validation still rejects). Anything else is drift.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icecheck.engines.config import ExploreConfig
from icecheck.models.system import Action, StepError, digest
from icecheck.scenarios.errors import InputError

from . import format as fmt
from .execute import evaluate, model_for, outcomes


@dataclass
class ReplayResult:
    path: str
    id: str
    kind: str
    property: str | None
    steps: int
    drift: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.drift

    def as_json(self) -> dict:
        return {"path": self.path, "id": self.id, "kind": self.kind, "property": self.property,
                "steps": self.steps, "ok": self.ok, "drift": self.drift}


def replay_doc(doc: dict, path: str = "<trace>") -> ReplayResult:
    """Replay a checked trace document. Raises InputError if its configuration is malformed."""
    cfg = ExploreConfig.from_json(doc["config"], f"{path}: field 'config'")
    model = model_for(cfg, path)
    result = ReplayResult(path, fmt.trace_id(doc, path), doc["kind"], doc["property"],
                          len(doc["actions"]))
    state = model.initial()
    states = doc["states"]
    got = digest(state)
    if got != states[0]["digest"]:
        result.drift.append(f"initial state: digest {got} != recorded {states[0]['digest']}")
        return result
    for i, text in enumerate(doc["actions"], 1):
        action = Action.parse(text)
        if cfg.schedule and action not in model.actions(state):
            # ``step`` checks the writer's own phase; the schedule (models/schedule.py) is
            # checked where actions are enabled
            result.drift.append(f"step {i} ({text}): the schedule does not allow it here")
            return result
        try:
            state = model.step(state, action)
        except StepError as e:
            result.drift.append(f"step {i} ({text}): not enabled any more: {e}")
            return result
        got = digest(state)
        if got != states[i]["digest"]:
            result.drift.append(f"step {i} ({text}): digest {got} != recorded "
                                f"{states[i]['digest']}")
            return result
    now = sorted({v.property for v in evaluate(model, state, cfg.key)})
    recorded = sorted({v["property"] for v in doc["verdict"]["violations"]})
    if now != recorded:
        result.drift.append(f"verdict: violated properties {now or 'none'} != recorded "
                            f"{recorded or 'none'}")
    if doc["property"] is not None and doc["property"] not in now:
        result.drift.append(f"verdict: the trace's property {doc['property']!r} is no longer "
                            f"violated")
    got_outcomes = outcomes(state)
    if got_outcomes != doc["verdict"]["outcomes"]:
        diffs = [f"{w}: {got_outcomes.get(w)} != recorded {doc['verdict']['outcomes'].get(w)}"
                 for w in sorted(set(got_outcomes) | set(doc["verdict"]["outcomes"]))
                 if got_outcomes.get(w) != doc["verdict"]["outcomes"].get(w)]
        result.drift.append("verdict: outcomes differ: " + "; ".join(diffs))
    return result


def replay_file(path: str) -> ReplayResult:
    """Load (InputError if malformed) and replay one trace file."""
    doc = fmt.load_trace(path)
    try:
        return replay_doc(doc, path)
    except InputError:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"malformed trace: {type(e).__name__}: {e}", path) from None
