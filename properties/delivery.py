"""Delivery: a streaming sink that finished its source committed every batch of it.

A sink's batch is delivered when a commit of the sink that the catalog applied carries it
(models/lifecycle.py ``SinkCommit``). A sink that finished (its source has no batch left and
it is running) without delivering a batch lost that batch's rows, although the job reports
success: a lost write. A batch delivered twice is the oracle's to judge (its rows are in the
table twice: properties/oracle.py reads a sink's commits as exactly-once delivery), explained
here (``redelivery_text``). A job that failed for good (down, out of restarts) is not judged:
its operators see the failure.
"""

from __future__ import annotations

from icecheck.models.lifecycle import (FLINK, KAFKA_CONNECT, NO_STATE, RESTART_TEXT, SAVEPOINT,
                                       SinkCommit)
from icecheck.models.system import DONE

from .analysis import Analysis
from .common import jsonable, rows_text
from .violation import VIOLATION, Violation


def check(a: Analysis) -> list[Violation]:
    h = a.history
    out: list[Violation] = []
    sinks = getattr(h.model, "_sinks", {})
    for w in h.state.writers:
        spec = sinks.get(w.name)
        if spec is None or w.phase != DONE:
            continue
        entries = h.model.programs[w.name].entries
        got = set()
        for op in h.ops:
            if op.writer == w.name and isinstance(op.intent, SinkCommit) and \
                    op.record is not None and op.record.applied:
                got.update(op.intent.batches)
        for batch in range(len(entries)):
            if batch in got:
                continue
            rows = [tuple(r) for c in entries[batch] for r in getattr(c, "rows", ())]
            out.append(Violation(
                "lost_write",
                f"{w.name}'s streaming source batch {batch + 1} ({rows_text(rows)}) never "
                f"reached the table, although the job finished its source without an error."
                f"{_why_lost(spec, w.sink, batch)}",
                VIOLATION,
                {"sink": w.name, "batch": batch + 1, "rows": jsonable(rows),
                 "restarts": [list(r[:2]) for r in w.sink.restarts],
                 # the restart that dropped the batch (NO_STATE), or None
                 "sink_lost_after": next((r[0] for r in w.sink.restarts
                                          if r[0] == NO_STATE), None)}))
    return out


def _why_lost(spec, sink, batch: int) -> str:
    for kind, ckpt, job, _, _ in (r[:5] for r in sink.restarts):
        if kind == NO_STATE and ckpt is not None:
            return (f" Its files were pending in checkpoint {ckpt} when the job "
                    f"{RESTART_TEXT[kind]}: the new job's source resumed after that checkpoint, "
                    f"and its committer, restoring nothing, never committed them (Flink logs "
                    f"\"Failed to restore committer state\", IcebergFilesCommitter.java:169).")
    return ""


def redelivery(a: Analysis, position: int, rows) -> tuple[str, str] | None:
    """(text, how) when some of ``rows`` are in the table at lineage ``position`` again because
    a streaming sink delivered a batch it had already delivered: which restart led to it and
    what the job read back from the table's summaries, in words, and how (the restart kind,
    ``details["sink_redelivery"]``). Both are read from the commits' intents on the lineage,
    so the text is a function of the lineage, like the check that calls it."""
    h = a.history
    wanted = set(map(tuple, rows))
    delivered: dict[str, set] = {}
    for op in h.lineage_ops[:position + 1]:
        intent = getattr(op, "intent", None)
        if not isinstance(intent, SinkCommit):
            continue
        seen = delivered.setdefault(intent.sink, set())
        again = [b for b, c in zip(intent.batches, intent.commands)
                 if b in seen and wanted & set(map(tuple, c.rows))]
        seen.update(intent.batches)
        if not again or not intent.restart:
            continue
        kind, ckpt, job, found, _ = intent.restart[:5]
        batches = ", ".join(str(b + 1) for b in again)
        sink = op.writer
        if intent.mode == FLINK and kind == SAVEPOINT:
            return (f" After a failure, {sink} {RESTART_TEXT[kind]} (checkpoint {ckpt}): its source delivered "
                    f"batch {batches} again, and the new job committed it a second time once "
                    f"its checkpoint ids passed {found}, the last one the old job committed.",
                    kind)
        if intent.mode == FLINK:
            seen_text = "found none" if found == -1 else f"found checkpoint {found}"
            return (f" After a failure, {sink} {RESTART_TEXT[kind]} (checkpoint {ckpt}) and looked for its last "
                    f"commit, walking the table's snapshots back from main for flink.job-id "
                    f"{sink}-job-{job}: it {seen_text}, because the walk stops at the first "
                    f"snapshot expired from the table, so it committed batch {batches} again "
                    f"(IcebergFilesCommitter.initializeState, SinkUtil."
                    f"getMaxCommittedCheckpointId).", kind)
        if intent.mode == KAFKA_CONNECT:
            return (f" After a failure, {sink} {RESTART_TEXT[kind]} and its coordinator committed "
                    f"batch {batches} again: looking for the offsets it committed, walking the "
                    f"table's snapshots back from the branch's head for "
                    f"kafka.connect.offsets.{sink}-connect, it found none, because the walk "
                    f"stops at the first snapshot expired from the table "
                    f"(Coordinator.lastCommittedOffsetsForTable).", kind)
        return (f" After a failure, {sink} {RESTART_TEXT[kind]} and ran batch {batches} again (epoch "
                f"{intent.ckpt}); looking for its query's last epoch, walking the table's "
                f"snapshots back from the current one for spark.sql.streaming.queryId "
                f"{sink}-query-{job}, it found none, because the walk stops at the first "
                f"snapshot expired from the table, so it committed the epoch again "
                f"(SparkWrite.BaseStreamingWrite.findLastCommittedEpochId).", kind)
    return None
