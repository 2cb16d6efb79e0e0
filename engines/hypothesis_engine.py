"""Hypothesis exploration: a ``RuleBasedStateMachine`` over the model's own actions and ``step``.

There is no second model: one rule draws an index into ``model.actions(state)`` and applies
``model.step``; an invariant evaluates the properties on every state (``properties.evaluate``)
and splits them with the expectation table (``properties.split_expected``): an unexpected
(must-hold) violation fails the run, an allowed one is recorded. A run at a final state (no
enabled action) can only take the ``idle`` rule, so Hypothesis shrinks those steps away.

On a failure, Hypothesis's shrunk action list is canonicalized and minimized again
(``traces.canonical``) and turned into a trace (``traces.format``).

Settings profiles (registered on import): ``icecheck-ci`` (derandomized, no deadline, no
example database, no blob, quiet; the CLI default) and ``icecheck-dev`` (random, with the
local example database). They are namespaced so they never replace Hypothesis's own ``ci``
profile, which Hypothesis loads by itself on CI machines. The CLI calls them ``ci`` and ``dev``.
"""

from __future__ import annotations

import builtins
import time
from dataclasses import dataclass, field
from typing import Callable

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import strategies as st
from hypothesis.reporting import with_reporter
from hypothesis.stateful import (RuleBasedStateMachine, invariant, precondition, rule,
                                 run_state_machine_as_test)

from icecheck.engines.config import ExploreConfig
from icecheck.models.system import Action, Model, State

def _no_local_constants() -> None:
    """Make generation depend on the seed alone, not on where icecheck is installed.

    Hypothesis (6.131+) mixes into integer draws, with probability 0.05, the constants it
    finds in the source of every "local" module imported so far (not under site-packages).
    So the same seed explored differently from a checkout (editable install: our modules are
    local) and from a wheel (site-packages), and after any module with a new constant was
    imported: measured, 225 vs 157 runs of one default exploration. We draw action indexes
    only; constants from our source are no better guesses than any other index. Hypothesis
    offers no setting for this, so the private hook is replaced (pinned version,
    pyproject.toml; ``tests/test_explore.py`` checks the hook still exists).
    """
    from hypothesis.internal.conjecture import providers
    from hypothesis.internal.constants_ast import Constants

    empty = Constants()
    providers._get_local_constants = lambda: empty


_no_local_constants()

PROFILE_CI = "icecheck-ci"
PROFILE_DEV = "icecheck-dev"
PROFILES = {"ci": PROFILE_CI, "dev": PROFILE_DEV}
DEFAULT_MAX_EXAMPLES = 500

settings.register_profile(
    PROFILE_CI, derandomize=True, deadline=None, database=None, print_blob=False,
    max_examples=DEFAULT_MAX_EXAMPLES, suppress_health_check=list(HealthCheck),
    verbosity=Verbosity.quiet, report_multiple_bugs=True,
    phases=(Phase.explicit, Phase.generate, Phase.shrink))
settings.register_profile(
    PROFILE_DEV, derandomize=False, deadline=None, print_blob=True,
    max_examples=DEFAULT_MAX_EXAMPLES, suppress_health_check=list(HealthCheck),
    verbosity=Verbosity.quiet, report_multiple_bugs=True)


class BudgetSpent(KeyboardInterrupt):
    """The time budget ran out: ends a Hypothesis run between (or inside) examples.

    A ``KeyboardInterrupt`` because that is the one exception Hypothesis treats as "the run
    was stopped": it neither shrinks it as a failure nor records the interrupted example in
    its data tree (any other exception would be recorded, and the next run over the same
    choices would look flaky). ``explore`` catches it before anything else can and reports
    the examples completed before it.
    """


class PropertyViolated(AssertionError):
    """Raised by the invariant: an unexpected (or hunted) violation."""


_EXCEPTIONS: dict[str, type[PropertyViolated]] = {}


def _exception_for(prop: str) -> type[PropertyViolated]:
    """One exception class per property, so Hypothesis treats each violated property as a
    distinct bug and shrinks each on its own (``report_multiple_bugs``)."""
    if prop not in _EXCEPTIONS:
        _EXCEPTIONS[prop] = type(f"{prop.title().replace('_', '')}Violated",
                                 (PropertyViolated,), {"property": prop})
    return _EXCEPTIONS[prop]


@dataclass
class Finding:
    property: str
    unexpected: bool
    hypothesis_actions: list[str]
    trace: dict | None = None

    @builtins.property
    def known(self) -> bool:
        """A recorded known finding (expectations.yaml): still a violation, tolerated by the gate."""
        return bool(self.trace) and (self.trace.get("expectation") or {}).get("status") == "known_finding"

    def as_json(self) -> dict:
        return {"property": self.property, "unexpected": self.unexpected, "known_finding": self.known,
                "hypothesis_actions": self.hypothesis_actions,
                "trace_id": self.trace["id"] if self.trace else None,
                "trace_actions": self.trace["actions"] if self.trace else None,
                "explanation": self.trace["explanation"] if self.trace else None}


@dataclass
class ExploreResult:
    config: ExploreConfig
    hypothesis_profile: str
    seed: int
    max_examples: int
    examples: int = 0
    states: int = 0
    elapsed: float = 0.0
    timed_out: bool = False
    findings: list[Finding] = field(default_factory=list)   # one per violated property
    allowed: dict[str, int] = field(default_factory=dict)         # property -> states seen
    allowed_examples: dict[str, list[str]] = field(default_factory=dict)
    reached: set[str] = field(default_factory=set)
    unexpected_seen: dict[str, int] = field(default_factory=dict)

    @builtins.property
    def failed(self) -> bool:
        """Did a property that must hold fail?"""
        return any(f.unexpected for f in self.findings)

    @builtins.property
    def failed_new(self) -> bool:
        """Did a must-hold property fail that is not a recorded known finding?"""
        return any(f.unexpected and not f.known for f in self.findings)

    @builtins.property
    def finding(self) -> Finding | None:
        """The primary finding: unexpected first, then in the order of PROPERTIES."""
        return self.findings[0] if self.findings else None

    @builtins.property
    def property(self) -> str | None:
        return self.finding.property if self.finding else None

    @builtins.property
    def trace(self) -> dict | None:
        return self.finding.trace if self.finding else None

    def as_json(self) -> dict:
        return {
            "config": self.config.name, "profile": self.config.profile,
            "catalog": self.config.catalog, "format_version": self.config.format_version,
            "hypothesis_profile": self.hypothesis_profile, "seed": self.seed,
            "max_examples": self.max_examples, "examples": self.examples,
            "states": self.states, "elapsed_s": round(self.elapsed, 3),
            "timed_out": self.timed_out, "failed": self.failed, "failed_new": self.failed_new,
            "findings": [f.as_json() for f in self.findings],
            "allowed": dict(sorted(self.allowed.items())),
            "unexpected_outside_hunt": dict(sorted(self.unexpected_seen.items())),
            "reached": sorted(self.reached),
        }


class _Collector:
    """Shared by every machine instance of one run: caches, budget, what was seen."""

    def __init__(self, cfg: ExploreConfig, model: Model, hunt: frozenset[str],
                 deadline: float | None, progress: Callable[[int], None] | None,
                 clock: Callable[[], float] = time.monotonic):
        from icecheck.traces.execute import judge, reached

        self.cfg, self.model, self.hunt = cfg, model, hunt
        self.deadline = deadline
        self.clock = clock
        self.progress = progress
        self._judge, self._reached = judge, reached
        self.nodes: dict[tuple[str, ...], tuple[State, list[Action]]] = {}
        self.verdicts: dict[tuple[str, ...], tuple[list, set[str]]] = {}
        init = model.initial()
        self.nodes[()] = (init, model.actions(init))
        # property -> (path, unexpected?) of the last failing run (Hypothesis replays each
        # distinct bug's shrunk example last, so this ends as the shrunk one)
        self.failures: dict[str, tuple[list[str], bool]] = {}
        self.allowed: dict[str, int] = {}
        self.allowed_examples: dict[str, list[str]] = {}
        self.unexpected_seen: dict[str, int] = {}   # unexpected, but outside --property
        self.reached: set[str] = set()
        self.examples = 0
        self.timed_out = False
        self.states_reported: int | None = None   # set by a cut: states before the cut example
        self._snapshot: tuple | None = None

    def begin_example(self) -> None:
        """A new example starts: cut the run here if the time budget is spent.

        The cut is never a flaky precondition (Hypothesis would see the same data take another
        path, ``FlakyStrategyDefinition``): ``BudgetSpent`` ends the whole run, and what the
        run reports is what it had *before* this example, so the result depends only on the
        seed and the number of examples completed, never on the machine's speed.
        """
        self.check_budget()
        self.examples += 1
        self._snapshot = (len(self.nodes), dict(self.allowed),
                          {k: list(v) for k, v in self.allowed_examples.items()},
                          dict(self.unexpected_seen), set(self.reached), self.examples - 1)
        if self.progress is not None:
            self.progress(self.examples)

    def check_budget(self) -> None:
        """Raise ``BudgetSpent`` once the deadline has passed, unless a failure was found:
        then Hypothesis's shrinking (bounded by its own count of shrink steps, so
        deterministic) finishes, because a counterexample must be minimal, and a cut
        mid-shrink would leave one that is only locally minimal."""
        if self.failures:
            return
        if self.deadline is not None and self.clock() >= self.deadline:
            self.timed_out = True
            raise BudgetSpent()

    def rollback(self) -> None:
        """Forget the example the cut interrupted (its states and events are not reported)."""
        if self._snapshot is None:
            return
        (self.states_reported, self.allowed, self.allowed_examples, self.unexpected_seen,
         self.reached, self.examples) = self._snapshot

    def node(self, path: tuple[str, ...]) -> tuple[State, list[Action]]:
        got = self.nodes.get(path)
        if got is None:
            state, _ = self.node(path[:-1])
            state = self.model.step(state, Action.parse(path[-1]))
            got = (state, self.model.actions(state))
            self.nodes[path] = got
        return got

    def check(self, path: tuple[str, ...]) -> None:
        verdict = self.verdicts.get(path)
        if verdict is None:
            state, _ = self.node(path)
            j = self._judge(self.cfg, self.model, state)
            self.reached |= self._reached(self.model, state, self.cfg.key)
            unexpected = {v.property for v in j.unexpected}
            if self.hunt:
                failing = [v for v in j.violations if v.property in self.hunt]
                for p in unexpected - self.hunt:
                    self.unexpected_seen[p] = self.unexpected_seen.get(p, 0) + 1
            else:
                failing = list(j.unexpected)
            for v, _ in j.expected:
                self.allowed[v.property] = self.allowed.get(v.property, 0) + 1
                self.allowed_examples.setdefault(v.property, list(path))
            verdict = (failing, unexpected)
            self.verdicts[path] = verdict
        failing, unexpected = verdict
        if failing:
            first = min(failing, key=lambda v: (v.property not in unexpected, _order(v.property)))
            self.failures[first.property] = (list(path), first.property in unexpected)
            raise _exception_for(first.property)(
                "; ".join(f"{v.property}: {v.message}" for v in failing))


def _order(prop: str) -> int:
    from icecheck.properties import PROPERTIES
    return PROPERTIES.index(prop) if prop in PROPERTIES else len(PROPERTIES)


def _machine(col: _Collector) -> type[RuleBasedStateMachine]:
    class IcecheckMachine(RuleBasedStateMachine):
        """The model, one action per step; the properties as an invariant."""

        def __init__(self) -> None:
            super().__init__()
            self.path: tuple[str, ...] = ()
            col.begin_example()

        def _enabled(self) -> list[Action]:
            return col.node(self.path)[1]

        @precondition(lambda self: bool(self._enabled()))
        @rule(data=st.data())
        def step(self, data) -> None:
            col.check_budget()
            actions = self._enabled()
            i = data.draw(st.integers(0, len(actions) - 1), label="action")
            self.path = self.path + (str(actions[i]),)

        @precondition(lambda self: not self._enabled())
        @rule()
        def idle(self) -> None:
            """A final state: nothing to do."""

        @invariant()
        def properties_hold(self) -> None:
            col.check(self.path)

    return IcecheckMachine


def step_bound(cfg: ExploreConfig, model: Model) -> int:
    """An upper bound on the number of actions of one run (fused local steps)."""
    retries = model.table.max_retries
    per_op = 1 + 2 * (retries + 1) + (1 if cfg.crashes else 0)
    return max(1, sum(len(prog) for prog in cfg.writers) * per_op)


def explore(cfg: ExploreConfig, *, hypothesis_profile: str = "ci",
            max_examples: int = DEFAULT_MAX_EXAMPLES, seed: int = 0,
            time_budget: float | None = None, properties: tuple[str, ...] = (),
            progress: Callable[[int], None] | None = None,
            shrink: bool = True, clock: Callable[[], float] = time.monotonic) -> ExploreResult:
    """Explore ``cfg`` with Hypothesis; return a canonical minimal trace per violated property.

    Without ``properties``, a run fails on any unexpected (must-hold) violation. With them, it
    hunts those properties only: it fails on any violation of them, allowed or not (so an
    allowed anomaly can be shrunk into a trace), and counts the other unexpected ones.

    ``time_budget`` (seconds of ``clock``) cuts the run cleanly between or inside examples
    (``BudgetSpent``); the result then holds the examples completed before the cut, so it
    depends only on the seed and how many examples were reached. Tests pass a counting
    ``clock`` to cut at a chosen point, independent of the machine's speed.
    """
    from icecheck.traces.canonical import shrink as shrink_trace, writer_of
    from icecheck.traces.execute import build_trace, model_for

    name = PROFILES.get(hypothesis_profile, hypothesis_profile)
    model = model_for(cfg)
    start = time.monotonic()
    deadline = clock() + time_budget if time_budget is not None else None
    col = _Collector(cfg, model, frozenset(properties), deadline, progress, clock)
    machine = _machine(col)
    machine._hypothesis_internal_use_seed = seed      # what @seed(...) sets
    run_settings = settings(settings.get_profile(name), max_examples=max_examples,
                            stateful_step_count=step_bound(cfg, model))
    result = ExploreResult(cfg, hypothesis_profile, seed, max_examples)
    try:
        with with_reporter(lambda _msg: None):
            run_state_machine_as_test(machine, settings=run_settings)
    except BudgetSpent:
        col.rollback()
    except Exception:
        if not col.failures:
            raise
    result.examples = col.examples
    result.states = col.states_reported if col.states_reported is not None else len(col.nodes)
    result.timed_out = col.timed_out
    result.allowed, result.allowed_examples = col.allowed, col.allowed_examples
    result.unexpected_seen = col.unexpected_seen
    result.reached = col.reached
    for prop, (actions, unexpected) in sorted(
            col.failures.items(), key=lambda kv: (not kv[1][1], _order(kv[0]))):
        finding = Finding(prop, unexpected, actions)
        renamed: dict[str, str] = {}
        if shrink:
            s_cfg, s_actions = shrink_trace(cfg, actions, prop, renamed=renamed)
        else:
            s_cfg, s_actions = cfg, actions
        finding.trace = build_trace(
            s_cfg, s_actions, property=prop, trace_id=trace_name(s_cfg, prop),
            title=f"{prop} under {s_cfg.profile_label} ({cfg.catalog}, v{cfg.format_version})",
            found_by={"engine": "hypothesis", "hypothesis_profile": hypothesis_profile,
                      "seed": seed, "max_examples": max_examples,
                      "explored_config": cfg.name, "hypothesis_actions": actions,
                      "writer_of": writer_of(renamed, s_cfg)})
        result.findings.append(finding)
    result.elapsed = time.monotonic() - start
    return result


def trace_name(cfg: ExploreConfig, prop: str) -> str:
    profile = cfg.profile.replace("spark-3.5-", "").replace(".", "_")
    return f"{prop}-v{cfg.format_version}-{profile}-{cfg.catalog}".replace("_", "-")
