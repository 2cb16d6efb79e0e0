"""Running an action list on the model, judging the result, and building a trace document.

Everything here drives the one model (``models.system.Model``): traces are never interpreted
by a second implementation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from icecheck.engines.config import ExploreConfig, build_model_config
from icecheck.models.reads import read_rows
from icecheck.models.system import Action, Model, State, StepError, digest

from . import format as fmt


def model_for(cfg: ExploreConfig, path: str = "<config>") -> Model:
    return Model(build_model_config(cfg, path))


@dataclass
class Run:
    """An executed action list: ``states[i]`` is the state before ``actions[i]``."""

    model: Model
    actions: list[Action]
    states: list[State]
    stopped: int | None = None        # index of the first action that was not enabled
    stop_reason: str | None = None

    @property
    def final(self) -> State:
        return self.states[-1]


def parse_actions(actions: Iterable[Any]) -> list[Action]:
    return [a if isinstance(a, Action) else Action.parse(a) for a in actions]


def run_actions(model: Model, actions: Iterable[Any]) -> Run:
    """Run ``actions`` from the initial state; stop at the first one that is not enabled."""
    acts = parse_actions(actions)
    state = model.initial()
    run = Run(model, [], [state])
    for i, a in enumerate(acts):
        try:
            state = model.step(state, a)
        except StepError as e:
            run.stopped, run.stop_reason = i, str(e)
            break
        run.actions.append(a)
        run.states.append(state)
    return run


# -- judging ----------------------------------------------------------------------------------
def evaluate(model: Model, state: State, key: str = "id", memo=None) -> list:
    from icecheck.properties import evaluate as _evaluate
    return list(_evaluate(model, state, key=key, memo=memo))


def commit_order(model: Model, state: State, key: str = "id", memo=None) -> dict[str, int]:
    from icecheck.properties import commit_order as _commit_order
    return _commit_order(model, state, key=key, memo=memo)


def reached(model: Model, state: State, key: str = "id", memo=None) -> set[str]:
    from icecheck.properties import reached as _reached
    return set(_reached(model, state, key=key, memo=memo))


def split(cfg: ExploreConfig, violations: list, expect=None) -> tuple[list, list]:
    """(unexpected violations, [(violation, expectation)]) for this configuration.
    ``expect``: see ``properties.split_expected``."""
    from icecheck.properties import split_expected
    if expect is None:
        from icecheck.properties.expectations import expectation_for

        def expect(v):
            return expectation_for(cfg, v)
    unexpected, expected = split_expected(cfg.judged_profiles, cfg.catalog, cfg.format_version,
                                          violations, expect)
    return list(unexpected), list(expected)


def violated(model: Model, state: State, key: str = "id") -> set[str]:
    return {v.property for v in evaluate(model, state, key)}


def outcomes(state: State) -> dict[str, list[str]]:
    """Every writer's finished operations' outcomes, in program order."""
    return {w.name: [h.outcome for h in w.history] for w in state.writers}


def rows_of(model: Model, state: State) -> list[list]:
    meta = state.metadata
    rows = read_rows(state.store.archive(), meta.current, model.table.schema.names)
    return sorted((list(r.values) for r in rows), key=repr)


def itf_state(model: Model, state: State, index: int, action: Action | None) -> dict:
    """One ITF state: ``#meta`` plus our fields (no nulls: ITF has none)."""
    meta = state.metadata
    return {
        "#meta": {"index": index},
        "action": str(action) if action is not None else "init",
        "digest": digest(state),
        "pointer": state.catalog.pointer,
        "snapshot": meta.current_snapshot_id if meta.current_snapshot_id is not None else 0,
        "seq": meta.last_sequence_number,
        "rows": rows_of(model, state),
        "phases": {w.name: w.phase for w in state.writers},
    }


@dataclass
class Judgement:
    violations: list
    unexpected: list
    expected: list                     # [(violation, expectation)]
    names: set[str] = field(default_factory=set)
    known: list = field(default_factory=list)   # [(violation, expectation)]: known findings

    def expectation_of(self, prop: str):
        for v, e in self.expected + self.known:
            if v.property == prop:
                return e
        return None

    def known_finding(self, prop: str) -> bool:
        """Is every unexpected violation of ``prop`` a recorded known finding?"""
        return prop in self.known_findings()

    def known_findings(self) -> set[str]:
        """The properties every unexpected violation of which is a recorded known finding
        (one pass; a history with many dependency cycles has many violations)."""
        known = {id(v) for v, _ in self.known}
        props: dict[str, bool] = {}
        for v in self.unexpected:
            props[v.property] = props.get(v.property, True) and id(v) in known
        return {p for p, all_known in props.items() if all_known}


def judge(cfg: ExploreConfig, model: Model, state: State, memo=None) -> Judgement:
    """``memo``: a ``properties.EvalMemo`` shared between the judgements of one search (it also
    keeps each violation's expectation: the lineage checks' violations are shared objects)."""
    from icecheck.properties.expectations import KNOWN_FINDING, expectation_for, last_committer
    profile, catalog, fv = cfg.judged_profiles, cfg.catalog, cfg.format_version
    violations = evaluate(model, state, cfg.key, memo)
    # a mixed run judges a violation by the writer that committed last (expectations.py)
    order = commit_order(model, state, cfg.key, memo) if cfg.mixed and violations else None

    def expect(v):
        if memo is None:
            return expectation_for(cfg, v, order)
        key = (id(v), profile, catalog, fv, last_committer(v, order), cfg.protect_readers)
        got = memo.expectations.get(key)
        if got is None or got[0] is not v:
            got = memo.expectations[key] = (v, expectation_for(cfg, v, order))
        return got[1]

    unexpected, expected = split(cfg, violations, expect)
    known = []
    for v in unexpected:
        e = expect(v)
        if e.status == KNOWN_FINDING:
            known.append((v, e))
    return Judgement(violations, unexpected, expected, {v.property for v in violations}, known)


def build_trace(cfg: ExploreConfig, actions: Iterable[Any], *, property: str | None,
                trace_id: str = "", title: str = "", found_by: dict | None = None) -> dict:
    """Run ``actions`` on ``cfg``'s model and build the trace document.

    ``property`` is the property the trace shows violated (it must be violated in the final
    state), or None for a rejected trace (then no violation may be unexpected... nor the
    interleaving's anomaly present: the caller chooses the interleaving).
    """
    from .explain import explain

    model = model_for(cfg)
    run = run_actions(model, actions)
    j = judge(cfg, model, run.final)
    if property is None:
        kind = fmt.KIND_REJECTED
    elif property not in j.names:
        raise ValueError(f"the actions do not violate {property!r} "
                         f"(violated: {sorted(j.names) or 'nothing'})")
    elif any(v.property == property for v in j.unexpected):
        kind = fmt.KIND_VIOLATION
    else:
        kind = fmt.KIND_ALLOWED
    expectation = j.expectation_of(property) if property else None
    doc: dict = {
        "format": fmt.FORMAT,
        "version": fmt.VERSION,
        "#meta": {
            "format": "ITF",
            "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html",
            "source": "icecheck",
            "description": title or cfg.name,
        },
        "id": trace_id,
        "title": title,
        "kind": kind,
        "property": property,
        "expectation": ({"status": getattr(expectation, "status", None),
                         "reason": getattr(expectation, "reason", None),
                         **({"trace": expectation.trace}
                            if getattr(expectation, "trace", "") else {}),
                         **({"accepted_from": expectation.accepted_from}
                            if getattr(expectation, "accepted_from", "") else {}),
                         # a known finding's upstream status (expectations.upstream_text);
                         # absent otherwise, so traces of other verdicts keep their form
                         **({"upstream": expectation.upstream}
                            if getattr(expectation, "upstream", "") else {})}
                        if expectation is not None else None),
        "config": cfg.as_json(),
        "actions": [str(a) for a in run.actions],
        "verdict": {"violations": [fmt.violation_json(v) for v in j.violations],
                    "outcomes": outcomes(run.final)},
        "explanation": explain(cfg, model, run, j, property),
        "vars": list(fmt.STATE_VARS),
        "states": [itf_state(model, s, i, run.actions[i - 1] if i else None)
                   for i, s in enumerate(run.states)],
    }
    if found_by:
        doc["found_by"] = found_by
    fmt.check_trace(doc)
    return doc
