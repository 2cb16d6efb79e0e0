"""Replaying a model run on real Iceberg (Java): the plan and its execution.

A model run is a configuration (``ModelConfig``) and the actions it took. ``build_plan`` re-runs
those actions on the model and turns them into a *Java timeline*:

* a writer **begins** on Java at the action where it began in the model (its Java base is the
  Java table's current snapshot then), with the ``Operation`` the model actually built for it
  (``OpRecord.operation``; for SQL-level ``command:`` steps, what the engine planner produced);
* it **commits** on Java at the point where the model's verdict was decided: the swap that
  committed it (its end), or, for ``validation_failed``, the last ``refresh`` before the failing
  validation (the head it was judged against; a failed validation changes nothing, so ordering
  it there moves no other commit). Java's ``commit()`` refreshes before its first attempt, so a
  model retry after a lost swap is one Java commit at the end;
* a ``noop`` (the planner found nothing to change) runs nothing on Java; a crashed writer is
  begun on Java and never committed (a writer that stops before its swap changes nothing).

Phase steps only change *when* these things happen. What Java cannot express makes the plan a
*skip* with the reason: ``last_writer_wins`` catalogs, faults (``commit_unknown``), and
``commit_failed`` (retries exhausted: a sequential Java driver never loses a swap; but a
ManageSnapshots ref update's "Table metadata refresh is required" is replayed, since Java fails
it at its first refresh once anything committed after it began).
``run_plan`` executes a plan on a fresh ``JavaTable`` and reports each operation's Java outcome
and the live files at the end.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable

from icecheck.models import catalog as cat
from icecheck.models import system as sm
from icecheck.models.files import DV, DataFile, DeleteFile
from icecheck.models.operations import REF_KINDS, Operation
from icecheck.models.reads import live_file_paths, manifest_counts
from icecheck.models.system import Action, Model, ModelConfig
from icecheck.models.table import TableConfig

# What the Java side reports for operations it did not commit on purpose.
NOT_RUN = "not_run"            # not run on the real library: a model noop, or never committed


@dataclass
class ModelOp:
    """One operation the model ran, and where it sits on the Java timeline."""

    writer: str
    index: int                     # the writer's program entry
    operation: Operation | None    # what the model committed (None: noop)
    outcome: str
    message: str | None
    check: str | None
    attempts: int
    begin_at: int                  # action index of its begin
    java_at: int                   # action index where it commits on Java
    end_at: int                    # action index where it ended in the model
    line: int | None = None        # scenario line of the step that ended it (scenarios only)
    # the snapshot it committed: {sequence_number, operation, summary} (None: none)
    snapshot: dict | None = None

    @property
    def label(self) -> str:
        where = f"L{self.line} " if self.line is not None else ""
        return f"{where}{self.writer}" + (f"#{self.index + 1}" if self.index else "")


@dataclass
class Plan:
    table: TableConfig
    setup: tuple[Operation, ...]
    ops: list[ModelOp]
    # Java events in order: ("begin" | "commit", op). Abandoned (crashed / unfinished) writers
    # only begin.
    events: list[tuple[str, ModelOp]]
    live_data_files: list[str]
    live_delete_files: list[str]
    skip: str | None = None
    model_seconds: float = 0.0
    # data and delete files the model's ExpireSnapshots clean-up deleted from the object store
    deleted_files: list[str] = field(default_factory=list)


@dataclass
class JavaOutcome:
    outcome: str
    message: str | None
    exception: str | None = None   # the Java exception class, when it failed
    snapshot: dict | None = None   # the snapshot it committed: sequence_number, operation, summary


@dataclass
class JavaRun:
    outcomes: dict[tuple[str, int], JavaOutcome] = field(default_factory=dict)
    live_data_files: list[str] = field(default_factory=list)
    live_delete_files: list[str] = field(default_factory=list)
    deleted_files: list[str] = field(default_factory=list)
    seconds: float = 0.0


def build_plan(config: ModelConfig, actions: Iterable[Action], *,
               run_read_failures: bool = False) -> Plan:
    """Re-run ``actions`` on the model and lay its operations out on a Java timeline.

    ``run_read_failures``: an operation the model ends ``read_failed`` while writing (an engine
    reading a data file that expiry deleted) still gets its commit event, so an engine target
    runs it and sees the read fail; the Java driver reads no data and leaves it out."""
    t0 = time.perf_counter()
    model = Model(config)
    state = model.initial()
    open_ops: dict[str, dict] = {}
    ops: list[ModelOp] = []
    skip: str | None = None
    if config.catalog == cat.LAST_WRITER_WINS:
        skip = "catalog last_writer_wins has no Java catalog (Java catalogs swap atomically)"
    for i, a in enumerate(actions):
        before = state.writer(a.writer)
        state = model.step(state, a)
        after = state.writer(a.writer)
        if a.kind == sm.BEGIN:
            open_ops[a.writer] = {"begin_at": i, "refresh_at": None}
        elif a.kind == sm.REFRESH and a.writer in open_ops:
            open_ops[a.writer]["refresh_at"] = i
        elif a.kind in (sm.CAS_REPLY_LOST, sm.CAS_NOT_APPLIED) and skip is None:
            skip = "fault steps (a lost or unapplied swap reply) cannot be driven on Java"
        elif a.kind == sm.CAS_APPLIED_FAILED and skip is None:
            skip = ("fault applied_failed cannot be injected into a Java scenario run; "
                    "tests/conformance/test_java_phantom.py reproduces it with Java's API")
        if len(after.history) > len(before.history):
            rec = after.history[-1]
            info = open_ops.pop(a.writer, {"begin_at": i, "refresh_at": None})
            java_at = i
            if rec.outcome == sm.VALIDATION_FAILED and info["refresh_at"] is not None:
                java_at = info["refresh_at"]
            ops.append(ModelOp(a.writer, rec.index, rec.operation, rec.outcome, rec.message,
                               rec.check, rec.attempts, info["begin_at"], java_at, i))
            snap = state.metadata.snapshot(rec.snapshot_id) if rec.applied else None
            if snap is not None:
                from .java_driver import _SUMMARY_KEYS as SUMMARY_KEYS
                ops[-1].snapshot = {"sequence_number": snap.sequence_number,
                                    "operation": snap.operation,
                                    # the counts (an engine's own summary properties,
                                    # Operation.summary_properties, are the model's)
                                    "summary": {k: v for k, v in snap.summary
                                                if v and k in SUMMARY_KEYS},
                                    "manifests": manifest_counts(state.store.archive(), snap)}
            # a ManageSnapshots ref update fails once anything committed after it began
            # (models/refs.py): the sequential driver commits it at that point and sees the same
            ref_update = rec.operation is not None and rec.operation.kind in REF_KINDS
            if skip is None and rec.outcome == sm.COMMIT_FAILED and not ref_update:
                skip = ("outcome commit_failed (retries exhausted): a sequential Java driver "
                        "never loses a swap")
            if skip is None and rec.outcome == sm.COMMIT_UNKNOWN:
                skip = "outcome commit_unknown (a fault) cannot be driven on Java"
    # Writers still running at the end: begun on Java, never committed.
    for name, info in open_ops.items():
        w = state.writer(name)
        ops.append(ModelOp(name, w.op_index, w.operation, w.phase, None, None, w.attempt + 1,
                           info["begin_at"], -1, -1))
    timed: list[tuple[int, int, str, ModelOp]] = []
    for op in ops:
        if op.operation is None:
            continue                     # noop: the engine committed nothing
        timed.append((op.begin_at, 0, "begin", op))
        if op.outcome in (sm.COMMITTED, sm.VALIDATION_FAILED, sm.COMMIT_FAILED, sm.COMMIT_UNKNOWN,
                          sm.NOOP) or (    # NOOP with an operation: validated, no snapshot
                run_read_failures and op.outcome == sm.READ_FAILED):
            timed.append((op.java_at, 1, "commit", op))
    timed.sort(key=lambda e: (e[0], e[1]))
    archive = state.store.archive()
    data, deletes = live_file_paths(archive, archive[state.catalog.pointer].current)
    # DVs have no placeholder object on the Java side (java_driver.JavaTable.java_file), so
    # their deletion cannot be observed there and is left out of the comparison
    deleted = sorted(p for p in state.store.deleted
                     if isinstance(archive[p], (DataFile, DeleteFile))
                     and getattr(archive[p], "content", None) != DV)
    return Plan(config.table, tuple(config.setup), ops, [(kind, op) for _, _, kind, op in timed],
                list(data), list(deletes), skip, time.perf_counter() - t0, deleted)


def run_plan(plan: Plan, catalog: str = "hadoop", *, table: TableConfig | None = None) -> JavaRun:
    """Execute ``plan`` on a fresh real table. JavaDriverError (inexpressible) propagates."""
    from .java_driver import COMMITTED, JavaDriverError, JavaTable

    t0 = time.perf_counter()
    run = JavaRun()
    with JavaTable(table or plan.table, catalog) as jt:
        for n, op in enumerate(plan.setup, 1):
            w = jt.writer(f"setup{n}")
            w.begin(op)
            outcome, message = w.commit()
            if outcome != COMMITTED:
                raise JavaDriverError(f"set-up commit {n} did not commit on Java: {outcome} "
                                      f"{message}")
        writers = {}
        for kind, op in plan.events:
            key = (op.writer, op.index)
            if kind == "begin":
                w = jt.writer(op.writer)
                w.begin(op.operation)
                writers[key] = w
            else:
                w = writers[key]
                outcome, message = w.commit()
                run.outcomes[key] = JavaOutcome(outcome, message,
                                                None if outcome == COMMITTED else w.java_exception,
                                                w.snapshot)
        # a model noop, or an operation begun and never committed (crashed, unfinished, read
        # failed): not run on Java, never the model's own outcome (compare._agree notes it)
        for op in plan.ops:
            run.outcomes.setdefault((op.writer, op.index), JavaOutcome(NOT_RUN, None))
        run.live_data_files, run.live_delete_files = jt.live_files()
        run.deleted_files = jt.deleted_files()
    run.seconds = time.perf_counter() - t0
    return run
