"""An interactive session over the model: a configuration, a path of actions and a cursor.

The same class serves notebooks and the web page (``server.py`` rebuilds a ``Session`` from the
URL on every request), so both drive the one model through the one code path::

    from icecheck.explorer import Session
    s = Session.from_trace("traces/undelete-v2-mor-snapshot.json")   # at step 6: undelete shows
    s.goto(0); s.redo(); s.redo() # from the start, forward along the loaded path
    s.actions()                   # ['w1.cas', 'w2.begin', 'w2.begin#1', 'w2.begin#2']
    s.step("w1.cas")              # take an action (drops the steps ahead unless it is the next one)
    s.undo()                      # back one step (the step stays ahead: redo() takes it again)
    s.properties()                # every property: holds / violated, with the expectation
    s.find_path(property="undelete")   # BFS to the nearest violation, and load that path
    s.save_trace("/tmp/my.json")  # the path as a trace in the corpus format
    s                             # in Jupyter: the state as HTML (``_repr_html_``)

A path is a list of action strings (``"w1.begin#1"``); ``path`` is the part up to the cursor,
``ahead`` the part after it (what ``redo`` replays). Step ``k`` is the k-th action (1-based) and
state ``k`` the state after it, as in traces (state 0 is the initial state).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from icecheck.engines.config import ExploreConfig, build_model_config
from icecheck.models.system import Action, Model, State, StepError
from icecheck.scenarios.errors import InputError

from .errors import SessionError




@dataclass(frozen=True)
class ViolationView:
    property: str
    message: str
    severity: str
    status: str            # must_hold | allowed | known_finding
    reason: str
    details: dict = field(default_factory=dict)

    @property
    def unexpected(self) -> bool:
        return self.status != "allowed"


@dataclass(frozen=True)
class PropertyStatus:
    name: str
    violations: tuple[ViolationView, ...] = ()

    @property
    def violated(self) -> bool:
        return bool(self.violations)

    @property
    def status(self) -> str:
        """'holds', or the strongest expectation status of its violations."""
        if not self.violations:
            return "holds"
        for s in ("must_hold", "known_finding", "allowed"):
            if any(v.status == s for v in self.violations):
                return s
        return self.violations[0].status

    def __str__(self) -> str:
        if not self.violations:
            return f"{self.name}: holds"
        return "\n".join(f"{self.name}: VIOLATED [{v.status}] {v.message}"
                         for v in self.violations)


@dataclass(frozen=True)
class RowMark:
    """A row an anomaly of the current state is about, from its violation's ``details``: a row
    that came back (undelete), one of a key's rows (duplicate_keys), or a committed row the
    table no longer shows (lost_write; ``present`` False). The table view marks the present
    ones and lists the missing ones under it, so the page points at the data, not only at a
    sentence about it."""

    property: str
    status: str            # must_hold | allowed | known_finding
    row: tuple             # the row's values
    present: bool          # is it in the current table?
    note: str              # what the anomaly says of it, in words


@dataclass
class FindResult:
    """What ``find_path`` found: the actions from the state it started at (loaded when found)."""

    found: bool
    goal: str
    actions: list[str]
    explored: int
    message: str

    def __bool__(self) -> bool:
        return self.found

    def __str__(self) -> str:
        return self.message


def parse_path(actions: Iterable[str | Action]) -> list[Action]:
    out = []
    for k, a in enumerate(actions, 1):
        if isinstance(a, Action):
            out.append(a)
            continue
        try:
            out.append(Action.parse(str(a).strip()))
        except ValueError as e:
            raise SessionError(f"unknown action at step {k}: {e}") from None
    return out


def _reason(action: Action, e: StepError) -> str:
    """The model's StepError without the action it repeats ('w1.cas is not enabled: ...')."""
    text = str(e)
    for prefix in (f"{action} is not enabled: ", f"{action}: "):
        if text.startswith(prefix):
            return text[len(prefix):]
    return text


class Session:
    """A configuration, a path through its model, and a cursor on that path."""

    def __init__(self, config: ExploreConfig, path: Sequence[str | Action] = (),
                 at: int | None = None, *, title: str = "", source: str = ""):
        if not isinstance(config, ExploreConfig):
            raise SessionError(f"bad config: expected an ExploreConfig, got {type(config).__name__}")
        try:
            self.model = Model(build_model_config(config, source or "<config>"))
        except InputError as e:
            raise SessionError(f"bad config: {e}") from None
        self.config = config
        self.title = title or config.name
        self.source = source
        self._actions: list[Action] = []
        self._states: list[State] = [self.model.initial()]
        for k, a in enumerate(parse_path(path), 1):
            self._append(a, k)
        n = len(self._actions)
        if at is None:
            at = n
        if not isinstance(at, int) or not 0 <= at <= n:
            raise SessionError(f"bad step {at!r}: the path has {n} step(s), so the step must be "
                               f"between 0 and {n}")
        self._at = at
        self.last_find: FindResult | None = None
        self.trace_property: str | None = None   # the property a loaded trace is about

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_config(cls, config: ExploreConfig, path: Sequence[str] = (),
                    at: int | None = None) -> "Session":
        """A session on ``config`` (e.g. ``engines.config.mix_config(...)``), at the end of
        ``path`` (or at step ``at``)."""
        return cls(config, path, at)

    @classmethod
    def from_trace(cls, path: str, at: int | str | None = "anomaly") -> "Session":
        """A session on a trace file's configuration with its whole path loaded; the cursor
        starts at step ``at``: "anomaly" (the default), the first state where the trace's
        property is violated, since that is what a counterexample is opened to see (a rejected
        trace, which violates nothing, opens at 0); 0 the initial state; None the end."""
        from icecheck.traces import format as fmt

        try:
            doc = fmt.load_trace(path)
            cfg = ExploreConfig.from_json(doc["config"], f"{path}: field 'config'")
        except InputError as e:
            raise SessionError(f"bad trace: {e}") from None
        s = cls(cfg, doc["actions"], 0, title=doc.get("title") or fmt.trace_id(doc, path),
                source=path)
        s.trace_property = doc.get("property") or None
        if at == "anomaly":
            first = s.first_violation(s.trace_property) if s.trace_property else None
            at = first if first is not None else 0
        return s.goto(len(s._actions) if at is None else at)

    def copy(self) -> "Session":
        s = Session.__new__(Session)
        s.__dict__.update(self.__dict__)
        s._actions, s._states = list(self._actions), list(self._states)
        return s

    # -- the path -----------------------------------------------------------------------------
    def _append(self, action: Action, k: int) -> None:
        try:
            state = self.model.step(self._states[-1], action)
        except StepError as e:
            raise SessionError(f"action {action} is not enabled at step {k}: "
                               f"{_reason(action, e)}") from None
        self._actions.append(action)
        self._states.append(state)

    @property
    def at(self) -> int:
        """The cursor: the number of actions taken (the current state is state ``at``)."""
        return self._at

    @property
    def path(self) -> list[str]:
        """The actions up to the current state."""
        return [str(a) for a in self._actions[:self._at]]

    @property
    def full_path(self) -> list[str]:
        """Every action of the path, including those ahead of the cursor."""
        return [str(a) for a in self._actions]

    @property
    def ahead(self) -> list[str]:
        return [str(a) for a in self._actions[self._at:]]

    @property
    def state(self) -> State:
        return self._states[self._at]

    @property
    def previous(self) -> State | None:
        return self._states[self._at - 1] if self._at else None

    @property
    def last_action(self) -> Action | None:
        return self._actions[self._at - 1] if self._at else None

    def state_at(self, k: int) -> State:
        return self._states[k]

    def actions(self) -> list[str]:
        """The enabled actions at the current state (``model.actions``)."""
        return [str(a) for a in self.model.actions(self.state)]

    def describe_action(self, action: str | Action) -> str:
        """A short description: the command a ``begin`` picks, or the phase it runs."""
        a = action if isinstance(action, Action) else Action.parse(action)
        try:
            w = self.state.writer(a.writer)
        except KeyError:
            return str(a)
        if a.kind == "begin":
            entries = self.model.programs[w.name].entries
            if w.op_index < len(entries) and a.choice < len(entries[w.op_index]):
                return str(entries[w.op_index][a.choice])
        return {"refresh": "refresh, validate, write metadata", "write": "write files",
                "validate": "validate", "write_metadata": "write manifests + metadata",
                "cas": "swap the catalog pointer", "cas_reply_lost": "swap; reply lost",
                "cas_not_applied": "swap not applied; no reply",
                "crash": "crash"}.get(a.kind, a.kind)

    def step(self, action: str | Action) -> "Session":
        """Take ``action`` at the current state. If it is the next step ahead, keep the rest of
        the path; otherwise the steps ahead are dropped. Returns the session."""
        a = parse_path([action])[0] if not isinstance(action, Action) else action
        if self._at < len(self._actions) and self._actions[self._at] == a:
            self._at += 1
            return self
        enabled = self.model.actions(self.state)
        if a not in enabled:
            try:
                self.model.step(self.state, a)
                reason = "not enabled"
            except StepError as e:
                reason = _reason(a, e)
            raise SessionError(f"action {a} is not enabled at step {self._at + 1}: {reason} "
                               f"(enabled: {', '.join(map(str, enabled)) or 'none'})")
        del self._actions[self._at:]
        del self._states[self._at + 1:]
        self._append(a, self._at + 1)
        self._at += 1
        return self

    def run(self, actions: Iterable[str]) -> "Session":
        for a in actions:
            self.step(a)
        return self

    def undo(self) -> "Session":
        """Back one step (it stays ahead, for ``redo``)."""
        if self._at == 0:
            raise SessionError("nothing to undo: at the initial state")
        self._at -= 1
        return self

    def redo(self) -> "Session":
        """Forward one step along the path."""
        if self._at >= len(self._actions):
            raise SessionError("nothing to redo: at the end of the path")
        self._at += 1
        return self

    def goto(self, k: int) -> "Session":
        """Move the cursor to step ``k`` (negative: from the end)."""
        n = len(self._actions)
        if not isinstance(k, int) or isinstance(k, bool):
            raise SessionError(f"bad step {k!r}: a whole number of steps, 0 to {n}")
        if k < 0:
            k += n + 1
        if not 0 <= k <= n:
            raise SessionError(f"bad step {k}: the path has {n} step(s)")
        self._at = k
        return self

    # -- judging ------------------------------------------------------------------------------
    def violations(self, state: State | None = None) -> list:
        from icecheck.properties import evaluate
        return list(evaluate(self.model, state or self.state, key=self.config.key))

    def properties(self) -> list[PropertyStatus]:
        """Every property (in ``properties.PROPERTIES`` order), with its violations at the
        current state, each with its expectation (must_hold / allowed / known_finding)."""
        from icecheck.properties import PROPERTIES, commit_order
        from icecheck.properties.expectations import expectation_for

        cfg = self.config
        by: dict[str, list[ViolationView]] = {p: [] for p in PROPERTIES}
        violations = self.violations()
        order = commit_order(self.model, self.state, cfg.key) if cfg.mixed and violations \
            else None
        for v in violations:
            e = expectation_for(cfg, v, order)
            by.setdefault(v.property, []).append(ViolationView(
                v.property, v.message, v.severity, e.status, e.reason, dict(v.details)))
        return [PropertyStatus(p, tuple(vs)) for p, vs in by.items()]

    def anomaly_property(self) -> str | None:
        """The property the path's anomaly is about, judged at the end of the whole path: a
        loaded trace's own property while the end still violates it (the user may have
        branched off), else the first unexpected violation there, else the first allowed one
        (as ``trace`` picks it); None when the end violates nothing."""
        end = self.copy().goto(len(self._actions)).properties()
        violated = [p for p in end if p.violated]
        if self.trace_property in {p.name for p in violated}:
            return self.trace_property
        unexpected = [p for p in violated if p.status != "allowed"]
        chosen = unexpected or violated
        return chosen[0].name if chosen else None

    def first_violation(self, property: str | None = None) -> int | None:
        """The first state of the whole path (0 = initial) where ``property`` (default:
        ``anomaly_property()``) is violated: where the anomaly shows. None if it never is."""
        from icecheck.traces.execute import violated

        prop = property or self.anomaly_property()
        if prop is None:
            return None
        return next((k for k, st in enumerate(self._states)
                     if prop in violated(self.model, st, self.config.key)), None)

    def row_marks(self) -> list[RowMark]:
        """The rows the current state's anomalies are about (``RowMark``), from each
        violation's details: the rows an undelete brought back, the rows of a duplicated key,
        and a lost write's missing rows (row level: its ``lost_rows``; catalog level: the rows
        of the discarded snapshot the table no longer has), with the rows the table shows for
        that key instead."""
        from collections import Counter

        from icecheck.models.reads import read_rows
        from icecheck.properties.common import jsonable
        from icecheck.properties.oracle import KeyFn, identity_partition_columns

        names = self.model.table.schema.names
        current = [tuple(r.values) for r in read_rows(self.state.store.archive(),
                                                      self.state.metadata.current, names)]
        have = Counter(repr(jsonable(list(r))) for r in current)
        by_json = {repr(jsonable(list(r))): r for r in current}
        # a key as the violation messages name it: id=1, or id=2 (day=None) when the table is
        # partitioned by identity (a key lives in one partition: properties/oracle.py KeyFn)
        key_text = KeyFn(names, self.config.key,
                         identity_partition_columns(self.model.table)).text
        out: list[RowMark] = []

        def mark(v, row, note):
            j = repr(jsonable(list(row)))
            out.append(RowMark(v.property, v.status, tuple(by_json.get(j, row)), have[j] > 0,
                               note))

        for p in self.properties():
            for v in p.violations:
                d = v.details or {}
                k = d.get("key")
                if v.property == "undelete":
                    for row in d.get("rows", ()):
                        by = (d.get("row_origins") or {}).get(repr(tuple(row)))
                        mark(v, row, f"came back: {d.get('deleted_by')} deleted {key_text(k)}, "
                                     f"and it shows again from seq "
                                     f"{d.get('first_sequence_number')}"
                                     + (f" (written by {by})" if by else ""))
                elif v.property == "duplicate_keys":
                    rows = d.get("rows", ())
                    seen: set = set()
                    for row in rows:
                        if repr(row) in seen:      # identical copies: the table shows each
                            continue
                        seen.add(repr(row))
                        mark(v, row, f"{key_text(k)} has {len(rows)} live rows from seq "
                                     f"{d.get('first_sequence_number')}; the commits in order "
                                     f"leave {len(d.get('expected', ()))}")
                elif v.property == "lost_write" and d.get("level") == "row":
                    for row in d.get("lost_rows", ()):
                        mark(v, row, f"lost: {d.get('op')} committed it; from seq "
                                     f"{d.get('first_sequence_number')} the table no longer "
                                     f"shows it")
                    for row in d.get("actual", ()):
                        mark(v, row, f"shown instead of the lost row of {key_text(k)}")
                elif v.property == "lost_write" and d.get("level") == "catalog":
                    for row in self._lost_snapshot_rows(d.get("snapshot_id"), current):
                        mark(v, row, f"lost: in {d.get('op')}'s snapshot {d.get('snapshot_id')}, "
                                     f"which {d.get('discarded_by') or 'a later swap'} "
                                     f"discarded; the table no longer has it")
        return out

    def _lost_snapshot_rows(self, snapshot_id, current: list[tuple]) -> list[tuple]:
        """The rows of snapshot ``snapshot_id`` (off the table's history: found in any
        metadata file ever written) that the current table lacks (as a multiset)."""
        from collections import Counter

        from icecheck.models.metadata import snapshots_by_id
        from icecheck.models.reads import read_rows

        store = self.state.store.archive()
        snap = snapshots_by_id(store).get(snapshot_id)
        if snap is None:
            return []
        try:
            rows = [tuple(r.values) for r in read_rows(store, snap, self.model.table.schema.names)]
        except Exception:  # noqa: BLE001 - a snapshot whose files are gone: nothing to list
            return []
        left = Counter(current)
        out = []
        for r in rows:
            if left[r]:
                left[r] -= 1
            else:
                out.append(r)
        return out

    def writer_profiles(self) -> dict[str, str]:
        """Each writer's engine profile (``ExploreConfig.profile_of``): a mixed-engine
        configuration runs, e.g., a Spark job and a PyIceberg script on one table, and what
        each commit validates depends on whose it is."""
        return {w.name: self.config.profile_of(w.slot) for w in self.state.writers}

    def dependency_graph(self):
        """(networkx MultiDiGraph of the committed operations, [(anomaly, cycle edges)])."""
        from icecheck.properties import dependency_graph
        from icecheck.properties.isolation import find_cycles

        g = dependency_graph(self.model, self.state, key=self.config.key)
        return g, find_cycles(g)

    # -- search -------------------------------------------------------------------------------
    def find_path(self, property: str | None = None, validation: str | None = None, *,
                  max_states: int = 20000, max_depth: int = 60,
                  time_budget: float | None = 30.0) -> FindResult:
        """Breadth-first search from the current state to the nearest state where ``property``
        is violated ("any": any property), or where a ``validation`` fails (an operation ends
        ``validation_failed`` with that ``OpRecord.check``; "any": any check). When found, the
        path is loaded (the steps ahead are replaced) and the cursor moves to its end."""
        from icecheck.engines.explicit import shortest_path

        from .goals import property_goal, validation_goal

        if (property is None) == (validation is None):
            raise SessionError("find_path needs exactly one of property=... or validation=...")
        if property is not None:
            goal, what = property_goal(self, property)
        else:
            goal, what = validation_goal(self, validation)
        r = shortest_path(self.model, self.state, goal, max_states=max_states,
                          max_depth=max_depth, time_budget=time_budget)
        found, explored, capped = r.found, r.explored, r.capped
        if found is None:
            limit = " (search cut by its bounds)" if capped else " (every reachable state seen)"
            result = FindResult(False, what, [], explored,
                                f"no path from step {self._at} to {what}: {explored} states "
                                f"explored{limit}")
        else:
            acts = [str(a) for a in found]
            start = self._at
            del self._actions[self._at:]
            del self._states[self._at + 1:]
            for a in found:
                self._append(a, len(self._actions) + 1)
            self._at = len(self._actions)
            result = FindResult(True, what, acts, explored,
                                (f"{what}: found {len(acts)} step(s) from step {start} "
                                 f"({' '.join(acts) or 'already there'}), {explored} states "
                                 f"explored"))
        self.last_find = result
        return result

    def inevitable(self, property: str | None = None, *, max_states: int = 5000):
        """(property, ``traces.inevitable.Inevitable``) for the whole path (including the steps
        ahead): the earliest step after which every completion violates ``property`` (default:
        ``anomaly_property()``), or None when the end violates nothing."""
        from icecheck.traces.execute import Run
        from icecheck.traces.inevitable import inevitable_step

        if property is None:
            property = self.anomaly_property()
            if property is None:
                return None
        run = Run(self.model, list(self._actions), list(self._states))
        return property, inevitable_step(self.model, run, property, self.config.key,
                                         max_states=max_states)

    # -- traces -------------------------------------------------------------------------------
    def trace(self, property: str | None = "auto", trace_id: str = "", title: str = "") -> dict:
        """The path up to the cursor as a trace document (``traces.execute.build_trace``).

        ``property`` "auto" picks the first unexpected violation (else the first allowed one;
        None, a rejected trace, when nothing is violated)."""
        from icecheck.traces.execute import build_trace

        if property == "auto":
            props = [p for p in self.properties() if p.violated]
            unexpected = [p for p in props if p.status != "allowed"]
            property = (unexpected or props)[0].name if props else None
        try:
            return build_trace(self.config, self.path, property=property,
                               trace_id=trace_id or "explorer", title=title or self.title,
                               found_by={"engine": "explorer", "steps": len(self.path)})
        except (ValueError, InputError) as e:
            raise SessionError(f"cannot build a trace: {e}") from None

    def save_trace(self, path: str, property: str | None = "auto", title: str = "") -> dict:
        """Write the path up to the cursor as a trace file (atomically); returns the document."""
        from icecheck.traces.format import write_trace

        trace_id = os.path.splitext(os.path.basename(path))[0]
        doc = self.trace(property, trace_id=trace_id, title=title)
        write_trace(path, doc)
        return doc

    # -- display ------------------------------------------------------------------------------
    def render(self, format: str = "html") -> str:
        """The state as a self-contained HTML fragment (``format="html"``), or as an SVG diagram
        of its metadata tree and writers drawn by Graphviz (``format="svg"``)."""
        from . import render
        if format == "html":
            return render.notebook_html(self)
        if format == "svg":
            return render.state_svg(self)
        raise ValueError(f"unknown format {format!r}: expected 'html' or 'svg'")

    def _repr_html_(self) -> str:
        return self.render("html")

    def _repr_svg_(self) -> str | None:
        try:
            return self.render("svg")
        except Exception:  # noqa: BLE001 - no Graphviz: Jupyter falls back to the HTML
            return None

    def __repr__(self) -> str:
        return (f"<Session {self.title!r}: step {self._at} of {len(self._actions)}, "
                f"path {' '.join(self.path) or '(initial state)'}>")
