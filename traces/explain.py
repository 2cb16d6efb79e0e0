"""What a trace did, in words (Elle-style): who read what at which snapshot, who committed what
as which snapshot and sequence number, who was rejected and why, and what the table shows now.

``step_events`` gives one event per action (a short form for timelines, a sentence for the
explanation); ``explain`` joins them and adds the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from icecheck.models import lifecycle as life
from icecheck.models.clock import TICK, cutoff as clock_cutoff
from icecheck.models.filters import eval_row
from icecheck.models.reads import read_rows
from icecheck.models.system import (BEGIN, CAS, CAS_NOT_APPLIED, CAS_REPLY_LOST, COMMIT_FAILED,
                                    COMMIT_UNKNOWN, COMMITTED, CRASH, NOOP, READ_FAILED, REFRESH,
                                    LOCKED, RESTART, VALIDATION_FAILED, WRITE, Action, Model,
                                    State, WriterState)


@dataclass(frozen=True)
class StepEvent:
    writer: str
    short: str             # for a timeline cell
    sentence: str          # for the explanation
    table: str = ""        # what changed in the table (a new current snapshot), if anything


def _snap(state: State) -> str:
    meta = state.metadata
    if meta.current_snapshot_id is None:
        return "the empty table"
    return f"snapshot {meta.current_snapshot_id}"


def _snap_of_path(state: State, path: str | None) -> str:
    if path is None:
        return "?"
    sid = state.metadata_at(path).current_snapshot_id
    return "the empty table" if sid is None else f"snapshot {sid}"


def _row_text(model: Model, key: str, values) -> str:
    names = model.table.schema.names
    d = dict(zip(names, values))
    rest = ", ".join(str(v) for n, v in d.items() if n != key)
    return f"{key} {d.get(key)}" + (f" ({rest})" if rest else "")


def _intent(w: WriterState):
    if w.intent is not None:
        return w.intent
    return w.history[-1].intent if w.history else None


def _read(model: Model, key: str, state: State, intent) -> str:
    """The rows ``intent`` read at the current snapshot of ``state``."""
    kind = getattr(intent, "kind", None)
    rows = [r.values for r in read_rows(state.store.archive(), state.metadata.current,
                                        model.table.schema.names)]
    names = model.table.schema.names
    if kind in ("DELETE", "UPDATE", "COMPACT", "OVERWRITE"):
        where = getattr(intent, "where", None)
        hit = [r for r in rows if where is None or eval_row(where, model.table.schema.as_dict(r))]
    elif kind == "MERGE":
        idx = [names.index(c) for c in intent.on]
        keys = {tuple(s[i] for i in idx) for s in intent.rows}
        hit = [r for r in rows if tuple(r[i] for i in idx) in keys]
        if not hit:
            return "found no matching " + key + " " + ", ".join(
                str(k[0] if len(k) == 1 else k) for k in sorted(keys, key=repr))
    else:
        return ""
    if not hit:
        return "found no matching row"
    return "read " + "; ".join(_row_text(model, key, r) for r in sorted(hit, key=repr))


def _what(w: WriterState) -> str:
    intent = _intent(w)
    return str(intent) if intent is not None else f"operation {w.op_index + 1}"


def step_event(model: Model, key: str, before: State, action: Action, after: State) -> StepEvent:
    if action.kind == TICK:    # the clock (models/clock.py): no writer's step
        return StepEvent(action.writer, f"tick: now {after.store.now}",
                         f"the clock advanced to tick {after.store.now}",
                         f"clock: tick {after.store.now}")
    wb, wa = before.writer(action.writer), after.writer(action.writer)
    name = action.writer
    finished = wa.history[len(wb.history):]
    rec = finished[-1] if finished else None
    table = ""
    if after.catalog.pointer != before.catalog.pointer:
        meta = after.metadata
        table = f"snapshot {meta.current_snapshot_id} (seq {meta.last_sequence_number})"

    if action.kind == BEGIN:
        what = str(_intent(wa))
        read = _read(model, key, before, _intent(wa))
        at = _snap(before)
        if rec is not None and rec.outcome == NOOP:
            return StepEvent(name, f"begin {what} @{at}: no-op",
                             f"{name} began {what} at {at}"
                             + (f" and {read}" if read else "")
                             + "; it changes no row, so it commits nothing")
        return StepEvent(name, f"begin {what} @{at}" + (f"; {read}" if read else ""),
                         f"{name} began {what} at {at}" + (f" and {read}" if read else ""))

    if action.kind == REFRESH:
        if rec is not None and rec.outcome == NOOP:
            # a streaming sink found its batch already committed (models/lifecycle.py)
            return StepEvent(name, f"refresh: skipped ({rec.message})",
                             f"{name} skipped its {_what(wb)}: {rec.message}")
        if rec is not None and rec.outcome == VALIDATION_FAILED:
            base = _snap_of_path(before, before.catalog.pointer)
            return StepEvent(name, f"refresh @{base}: VALIDATION FAILED ({rec.check})",
                             f"{name} refreshed to {base} and its {_what(wb)} failed validation "
                             f"({rec.check}): {rec.message}")
        refreshed = wa.refreshed_path or wb.base_path
        at = _snap_of_path(after, refreshed)
        first_no_validation = (wb.attempt == 0 and wb.operation is not None
                               and not wb.operation.validations.validate_on_first_attempt)
        if first_no_validation:
            return StepEvent(name, f"prepare on @{at} (no validation)",
                             f"{name} prepared its commit on {at}, its base, without refreshing "
                             f"or validating (first attempt)")
        return StepEvent(name, f"refresh @{at}: validated",
                         f"{name} refreshed to {at} and validated")

    if action.kind in (CAS, CAS_REPLY_LOST, CAS_NOT_APPLIED):
        what = _what(wb)
        base_snap = wb.base_snapshot_id
        if rec is not None and rec.outcome == COMMITTED:
            computed = ""
            parent = before.metadata_at(wb.refreshed_path).current_snapshot_id
            if base_snap != parent:
                computed = (f" though it was computed at snapshot {base_snap}"
                            if base_snap is not None else " though it was computed on the empty table")
            erased = ""
            if before.catalog.pointer != wb.refreshed_path:
                erased = (f"; its blind swap replaced the pointer to {_snap(before)}, "
                          f"dropping the commits made since {_snap_of_path(before, wb.refreshed_path)}")
            return StepEvent(name, f"cas: committed snapshot {rec.snapshot_id} (seq "
                                   f"{rec.sequence_number})",
                             f"{name} committed {what} as snapshot {rec.snapshot_id} "
                             f"(seq {rec.sequence_number}){computed}{erased}", table)
        if rec is not None and rec.outcome == COMMIT_FAILED:
            return StepEvent(name, "cas: COMMIT FAILED",
                             f"{name}'s swap failed and its retries ran out: {rec.message}")
        if rec is not None and rec.outcome == COMMIT_UNKNOWN:
            applied = "it applied" if rec.applied else "it did not apply"
            return StepEvent(name, f"cas: UNKNOWN ({'applied' if rec.applied else 'not applied'})",
                             f"{name}'s swap reply was lost ({applied}); {name} sees "
                             f"CommitStateUnknownException", table)
        if wa.phase == LOCKED and wb.phase != LOCKED:
            return StepEvent(name, "cas: took the metastore lock, location checked",
                             f"{name} took the Hive metastore lock and found the table's "
                             f"metadata location still at its base; it writes next, without "
                             f"comparing (a writer that does not lock can commit in between)")
        if wa.attempt > wb.attempt:
            return StepEvent(name, f"cas: lost race, retry {wa.attempt}",
                             f"{name}'s swap lost the race (the table moved to {_snap(before)}); "
                             f"it retries (attempt {wa.attempt + 1})")
        return StepEvent(name, f"{action.kind}", f"{name} ran {action.kind}", table)

    if action.kind == WRITE:
        # a step of its own only where a writer may expire snapshots (Model._split_write): the
        # job's tasks read the files it planned and write its new ones
        if rec is not None and rec.outcome == READ_FAILED:
            return StepEvent(name, f"write: READ FAILED ({rec.message})",
                             f"{name}'s tasks ran and failed reading a file an expiry had "
                             f"deleted since it began: {rec.message}")
        if rec is not None and rec.operation is not None \
                and rec.operation.kind == "remove_orphan_files":
            # models/orphans.py: it lists the table location and deletes
            return StepEvent(name, f"remove orphans: {rec.message}",
                             f"{name} listed the table location and {rec.message} (not "
                             f"referenced by the metadata it loaded, older than tick "
                             f"{clock_cutoff(rec.operation)})")
        return StepEvent(name, "write: tasks read and wrote files",
                         f"{name}'s tasks read the files it planned and wrote its new ones")

    if action.kind == CRASH:
        spec = getattr(model, "_sinks", {}).get(name)
        text = life.crash_text(spec, wb.sink, action.choice) if spec is not None else None
        if text is not None:
            return StepEvent(name, "CRASH (before the commit log)", f"{name} {text}")
        if spec is not None and not wb.active:
            return StepEvent(name, "CRASH (between commits)",
                             f"{name} crashed between commits")
        return StepEvent(name, f"CRASH (while {wb.phase})", f"{name} crashed while {wb.phase}")

    if action.kind == RESTART:
        spec = model._sinks[name]
        return StepEvent(name, f"RESTART ({spec.kinds[action.choice]})",
                         f"{name} {life.restart_text(spec, wa.sink)}", table)

    return StepEvent(name, action.kind, f"{name} ran {action.kind}", table)


def step_events(model: Model, key: str, run) -> list[StepEvent]:
    return [step_event(model, key, run.states[i], a, run.states[i + 1])
            for i, a in enumerate(run.actions)]


def table_text(model: Model, key: str, state: State, verb: str = "now shows") -> str:
    rows = sorted((r.values for r in read_rows(state.store.archive(), state.metadata.current,
                                               model.table.schema.names)), key=repr)
    if not rows:
        return f"the table ({_snap(state)}) is empty"
    return (f"the table ({_snap(state)}) {verb} "
            + "; ".join(_row_text(model, key, r) for r in rows))


def explain(cfg, model: Model, run, judgement, prop: str | None) -> str:
    key = cfg.key
    sentences = [e.sentence for e in step_events(model, key, run)]
    sentences.append(table_text(model, key, run.final))
    text = "; ".join(sentences) + "."
    if prop is not None:
        v = next(v for v in judgement.violations if v.property == prop)
        expectation = judgement.expectation_of(prop)
        where = f"{getattr(cfg, 'profile_label', cfg.profile)}, {cfg.catalog}, v{cfg.format_version}"
        status_name = getattr(expectation, "status", None)
        if status_name == "known_finding":
            status = (f"KNOWN FINDING: must hold under {where}, and a recorded known "
                      f"finding (reported by every run; fails only with --strict): "
                      f"{getattr(expectation, 'reason', '')}")
        elif status_name != "allowed":
            status = f"UNEXPECTED: must hold under {where}"
            if getattr(cfg, "mixed", False) or getattr(cfg, "protect_readers", False):
                # a mixed run's must-hold verdict that an involved writer's profile alone would
                # not give says so (``expectations._stricter_promise``), and so does a team's
                # gate that holds the readers' view to account (``expectations.for_readers``)
                from icecheck.properties import commit_order
                from icecheck.properties.expectations import DEFAULT_REASON, expectation_for
                order = commit_order(model, run.final, key) if cfg.mixed else None
                reason = expectation_for(cfg, v, order).reason
                if reason != DEFAULT_REASON:
                    status += f". {reason}"
        else:
            status = f"allowed under {where}: {getattr(expectation, 'reason', '')}"
        text += f" Violated: {prop}: {v.message} [{status}]"
    else:
        rejected = [f"{w.name}'s {h.intent} ({h.outcome}: {h.message})"
                    for w in run.final.writers for h in w.history
                    if h.outcome in (VALIDATION_FAILED, COMMIT_FAILED)]
        text += (" No property is violated"
                 + (": " + "; ".join(rejected) + " was rejected" if rejected else "") + ".")
        if judgement.violations:
            text += " (Allowed: " + ", ".join(sorted(judgement.names)) + ".)"
    return text
