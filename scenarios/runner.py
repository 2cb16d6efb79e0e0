"""Run a scenario on the model and judge it against its expectations.

The runner does not interpret Iceberg itself: it turns the scenario into writer programs and a
sequence of the model's own actions (``Model.step``), so a scenario is exactly a replayable run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icecheck.models import clock
from icecheck.models import system as sm
from icecheck.models.expire import missing_objects
from icecheck.models.reads import live_file_paths, manifest_counts, read_rows
from icecheck.models.clients import ClientSpec
from icecheck.models.system import Action, Model, ModelConfig, State, WriterProgram

from .errors import InputError
from .format import Scenario, Step, StepExpect


@dataclass
class StepVerdict:
    line: int
    writer: str
    outcome: str
    message: str | None
    check: str | None
    attempts: int = 1
    snapshot_id: int | None = None
    sequence_number: int | None = None
    # the snapshot it committed (None / empty when it committed none)
    operation: str | None = None
    summary: dict = field(default_factory=dict)
    data_files: list[str] = field(default_factory=list)
    delete_files: list[str] = field(default_factory=list)
    manifests: list[int] | None = None   # [data manifests, delete manifests] of its snapshot

    def as_json(self) -> dict:
        return {"line": self.line, "writer": self.writer, "outcome": self.outcome,
                "message": self.message, "check": self.check, "attempts": self.attempts,
                "snapshot_id": self.snapshot_id, "sequence_number": self.sequence_number,
                "operation": self.operation, "summary": self.summary,
                "data_files": self.data_files, "delete_files": self.delete_files,
                "manifests": self.manifests}


@dataclass
class Verdict:
    """What a run of a scenario produced, in the shape every driver (model or real) returns."""

    id: str
    path: str
    outcome: str | None
    message: str | None
    live_data_files: list[str]
    live_delete_files: list[str]
    rows: list[list] | None
    steps: list[StepVerdict]
    failures: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    # the properties violated by the final state: {property, status, message}, where status is
    # must_hold | known_finding | allowed (properties/expectations.yaml) or "raw" (a scenario
    # of raw operations, which no engine profile chose)
    properties: list[dict] = field(default_factory=list)
    deleted_files: list[str] = field(default_factory=list)
    readable: bool = True

    @property
    def passed(self) -> bool:
        return not self.failures

    def as_json(self) -> dict:
        return {
            "id": self.id, "file": self.path, "outcome": self.outcome, "message": self.message,
            "live_data_files": self.live_data_files, "live_delete_files": self.live_delete_files,
            "rows": self.rows, "steps": [s.as_json() for s in self.steps],
            "actions": self.actions, "passed": self.passed, "failures": self.failures,
            "properties": self.properties,
            "deleted_files": self.deleted_files, "readable": self.readable,
        }


def model_config(scenario: Scenario, planner=None) -> ModelConfig:
    """Writer programs in the order the scenario begins their operations."""
    programs: dict[str, list] = {}
    for step in scenario.steps:
        if step.kind in ("commit_now", "begin"):
            intent = step.operation if step.operation is not None else step.command
            if intent is None:      # a streaming sink's next batch: one already listed
                programs.setdefault(step.writer, [])
                continue
            programs.setdefault(step.writer, []).append((intent,))
    writers = tuple(WriterProgram(name, tuple(entries)) for name, entries in programs.items())
    if planner is None and any(s.command is not None for s in scenario.steps):
        from icecheck.models.commands import make_planner
        planner = make_planner(scenario.profile or next(iter(scenario.writer_profiles.values())),
                               scenario.writer_profiles)
    return ModelConfig(scenario.table, writers, scenario.catalog, faults=scenario.uses_faults,
                       crashes=scenario.uses_crashes, planner=planner,
                       phantom_failures=scenario.uses_phantom_failures,
                       ticks=scenario.ticks, sinks=_sinks(scenario),
                       clients=tuple(ClientSpec(w, swap, faults, applied)
                                     for w, (swap, faults, applied) in scenario.clients.items()))


def _sinks(scenario: Scenario) -> tuple:
    """The scenario's streaming sinks (models/lifecycle.py), each of its profile's engine."""
    from icecheck.models import lifecycle as life
    from icecheck.models.profiles import get_profile
    return tuple(life.SinkSpec(w, life.mode_of(get_profile(scenario.profile_of(w)).engine),
                               n, kinds) for w, (n, kinds) in scenario.sinks.items())


class _Run:
    def __init__(self, scenario: Scenario, config: ModelConfig | None = None):
        self.scenario = scenario
        self.model = Model(config or model_config(scenario))
        self.state: State = self.model.initial()
        self.actions: list[Action] = []
        self.verdicts: list[StepVerdict] = []
        self.failures: list[str] = []
        self.ended_at_begin: set[str] = set()

    def do(self, action: Action, step: Step) -> None:
        try:
            self.state = self.model.step(self.state, action)
        except sm.StepError as e:
            raise InputError(f"step cannot run: {e}", self.scenario.path, step.line) from None
        self.actions.append(action)

    def advance(self, step: Step, *, until_done: bool, stop_before: str | None = None) -> None:
        """Run ``step.writer`` through its phases (retrying lost races) until its op ends."""
        name = step.writer
        start = len(self.state.writer(name).history)
        while len(self.state.writer(name).history) == start:
            w = self.state.writer(name)
            if not w.active:
                raise InputError(f"writer {name} is {w.phase}, not running", self.scenario.path,
                                 step.line)
            kind = sm.NEXT_PHASE_ACTION[w.phase]
            if kind == stop_before:
                return
            self.do(Action(name, kind), step)
            if not until_done:
                return

    def finished(self, step: Step, start: int) -> None:
        w = self.state.writer(step.writer)
        if len(w.history) > start:
            rec = w.history[-1]
            v = StepVerdict(step.line, step.writer, rec.outcome, rec.message, rec.check, rec.attempts,
                            rec.snapshot_id, rec.sequence_number)
            snap = _snapshot(self.state, rec.snapshot_id)
            if snap is not None:
                archive = self.state.store.archive()
                data, deletes = live_file_paths(archive, snap)
                v.operation, v.summary = snap.operation, dict(snap.summary)
                v.data_files, v.delete_files = list(data), list(deletes)
                v.manifests = manifest_counts(archive, snap)
            self.verdicts.append(v)
            self.judge(step.expect, v, f"line {step.line} ({step.writer})")
        elif step.expect is not None and step.expect.outcome is not None:
            self.failures.append(f"line {step.line} ({step.writer}): expected outcome "
                                 f"{step.expect.outcome}, but the operation has not finished")

    def judge(self, expect: StepExpect | None, v: StepVerdict, where: str) -> None:
        if expect is None:
            return
        if expect.outcome is not None and v.outcome != expect.outcome:
            self.failures.append(f"{where}: expected {expect.outcome}, got {v.outcome}"
                                 + (f" ({v.message})" if v.message else ""))
        if expect.message is not None and not (v.message or "").startswith(expect.message):
            self.failures.append(f"{where}: expected a message starting {expect.message!r}, "
                                 f"got {v.message!r}")
        for key in ("attempts", "sequence_number", "operation"):
            want = getattr(expect, key, None)
            if want is not None and getattr(v, key) != want:
                self.failures.append(f"{where}: expected {key} {want}, got {getattr(v, key)}")
        if getattr(expect, "summary", None) is not None:
            for k, want in expect.summary:
                got = v.summary.get(k, 0) if v.operation is not None else None
                if got != want:
                    self.failures.append(f"{where}: expected summary {k} {want}, got {got}")
        if expect.manifests is not None and (v.manifests is None
                                             or tuple(v.manifests) != expect.manifests):
            self.failures.append(f"{where}: expected manifests (data, deletes) "
                                 f"{list(expect.manifests)}, got {v.manifests}")
        for key in ("data_files", "delete_files"):
            want = getattr(expect, key, None)
            if want is not None and (v.operation is None or tuple(getattr(v, key)) != want):
                got = getattr(v, key) if v.operation is not None else "no snapshot"
                self.failures.append(f"{where}: expected {key} {list(want)}, got {got}")

    def restart(self, step: Step) -> None:
        """A streaming sink's restart (models/lifecycle.py). Its ``expect: {message}`` is the
        error a restore that cannot read its checkpoint fails with; ``outcome: committed`` (or
        none) that it started."""
        from icecheck.models import lifecycle as life
        spec = self.model._sinks[step.writer]
        self.do(Action(step.writer, sm.RESTART, spec.kinds.index(step.fault)), step)
        w = self.state.writer(step.writer)
        failed = life.restore_failure(spec, w.sink.restarts[-1])
        if step.expect is not None and step.expect.message is not None and \
                not (failed or "").startswith(step.expect.message):
            self.failures.append(f"line {step.line} ({step.writer}): expected the restart to fail "
                                 f"with {step.expect.message!r}, got "
                                 f"{failed or 'a restart that succeeded'}")
        if step.expect is not None and step.expect.message is None and failed:
            self.failures.append(f"line {step.line} ({step.writer}): the restart failed: {failed}")

    def run_step(self, step: Step) -> None:
        if step.kind == "tick":
            # the clock advances one tick (models/clock.py)
            self.do(Action(clock.CLOCK, clock.TICK), step)
            return
        start = len(self.state.writer(step.writer).history)
        if step.kind == "commit_now":
            self.do(Action(step.writer, sm.BEGIN), step)
            if len(self.state.writer(step.writer).history) == start:
                self.advance(step, until_done=True)
        elif step.kind == "begin":
            self.do(Action(step.writer, sm.BEGIN), step)
            if len(self.state.writer(step.writer).history) > start:
                # refused while it was built (a ref precondition, models/refs.py): as the Java
                # driver does, its ``commit:`` step reports that outcome
                self.ended_at_begin.add(step.writer)
                return
        elif step.kind == "commit" and step.writer in self.ended_at_begin:
            self.ended_at_begin.discard(step.writer)
            start -= 1
        elif step.kind == "commit":
            self.advance(step, until_done=True)
        elif step.kind == "phase":
            w = self.state.writer(step.writer)
            expected = sm.NEXT_PHASE_ACTION.get(w.phase)
            if expected != step.phase:
                now = f"its next phase is {expected}" if expected else f"it is {w.phase}"
                raise InputError(f"{step.phase}: writer {step.writer} cannot {step.phase} now; "
                                 f"{now}", self.scenario.path, step.line)
            self.do(Action(step.writer, step.phase), step)
        elif step.kind == "fault":
            self.advance(step, until_done=True, stop_before=sm.CAS)
            if len(self.state.writer(step.writer).history) == start:
                kind = {"reply_lost": sm.CAS_REPLY_LOST, "not_applied": sm.CAS_NOT_APPLIED,
                        "applied_failed": sm.CAS_APPLIED_FAILED}[step.fault]
                self.do(Action(step.writer, kind), step)
        elif step.kind == "crash":
            from icecheck.models.lifecycle import CRASH_AFTER_LOG, CRASH_BEFORE_LOG
            self.do(Action(step.writer, sm.CRASH, CRASH_BEFORE_LOG
                           if step.fault == "before_commit_log" else CRASH_AFTER_LOG), step)
        elif step.kind == "restart":
            self.restart(step)
        self.finished(step, start)


def _snapshot(state: State, snapshot_id: int | None):
    """The snapshot ``snapshot_id`` as committed (also when expired or no longer current)."""
    if snapshot_id is None:
        return None
    snap = state.metadata.snapshot(snapshot_id)
    if snap is not None:
        return snap
    from icecheck.models.metadata import TableMetadata
    for obj in state.store.archive().values():
        if isinstance(obj, TableMetadata):
            snap = obj.snapshot(snapshot_id)
            if snap is not None:
                return snap
    return None


def run_scenario(scenario: Scenario, config: ModelConfig | None = None) -> Verdict:
    return execute_scenario(scenario, config)[0]


def execute_scenario(scenario: Scenario, config: ModelConfig | None = None) -> tuple[Verdict, State]:
    """Run ``scenario``; return its verdict and the model's final state (for tests and tools)."""
    run = _Run(scenario, config)
    for step in scenario.steps:
        run.run_step(step)
    state = run.state
    # what the metadata says, read through the archive so that a table whose files expiry
    # deleted can still be described; ``readable`` says whether a real reader could read it
    archive = state.store.archive()
    snap = archive[state.catalog.pointer].current
    data, deletes = live_file_paths(archive, snap)
    has_rows = all(f.rows is not None for f in scenario.files.values() if not f.is_delete)
    rows = sorted([list(r.values) for r in read_rows(archive, snap, scenario.table.schema.names)],
                  key=repr) if has_rows else None
    deleted = sorted(p for p in state.store.deleted if p in scenario.files)
    readable = not missing_objects(state)
    last = run.verdicts[-1] if run.verdicts else None
    verdict = Verdict(scenario.id, scenario.path, last.outcome if last else None,
                      last.message if last else None, data, deletes, rows, run.verdicts,
                      run.failures, [str(a) for a in run.actions], deleted_files=deleted,
                      readable=readable)
    exp = scenario.expect
    if last is not None:
        run.judge(StepExpect(exp.outcome, exp.message), last, "final outcome")
    elif exp.outcome is not None:
        verdict.failures.append("expected a final outcome, but no operation finished")
    if exp.live_data_files is not None and tuple(data) != exp.live_data_files:
        verdict.failures.append(f"live data files: expected {list(exp.live_data_files)}, got {data}")
    if exp.live_delete_files is not None and tuple(deletes) != exp.live_delete_files:
        verdict.failures.append(f"live delete files: expected {list(exp.live_delete_files)}, "
                                f"got {deletes}")
    if exp.deleted_files is not None and tuple(deleted) != exp.deleted_files:
        verdict.failures.append(f"deleted files: expected {list(exp.deleted_files)}, got {deleted}")
    if exp.readable is not None and readable != exp.readable:
        missing = ", ".join(f"{w} {p}" for w, p, _ in missing_objects(state))
        verdict.failures.append(f"readable: expected {exp.readable}, got {readable}"
                                + (f" (missing: {missing})" if missing else ""))
    if exp.rows is not None:
        want = sorted([list(r) for r in exp.rows], key=repr)
        if rows != want:
            verdict.failures.append(f"rows: expected {want}, got {rows}")
    if has_rows:
        verdict.properties = judge_properties(scenario, run.model, state)
    return verdict, state


def judge_properties(scenario: Scenario, model, state: State) -> list[dict]:
    """The properties the scenario's final state violates, each with its status under the
    scenario's profile, catalog and format (the same judgement as every exploration), so a
    user's own scenario reports an undelete, a lost write or a duplicate key in words."""
    from icecheck.properties import commit_order, evaluate, expectation

    key = "id" if "id" in scenario.table.schema.names else scenario.table.schema.names[0]
    out = []
    violations = evaluate(model, state, key)
    order = commit_order(model, state, key) if len(scenario.profiles) > 1 and violations \
        else None
    for v in violations:
        if not scenario.profiles:
            status, reason = "raw", "raw operations: no engine profile chose their validations"
        else:
            # several engines: the last committer's or the strictest expectation (docs/model.md)
            prof = scenario.profiles[0] if len(scenario.profiles) == 1 else scenario.profiles
            e = expectation(prof, scenario.catalog, scenario.table.format_version, v,
                            lambda w: scenario.profile_of(w) or scenario.profile, order)
            status, reason = e.status, e.reason
        out.append({"property": v.property, "status": status, "message": v.message,
                    "reason": reason})
    return out
