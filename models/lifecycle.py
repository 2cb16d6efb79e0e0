"""Job lifecycles: a streaming sink that crashes, restarts, and decides what to commit again
from what the table remembers.

A streaming job commits once per checkpoint (Flink) or micro-batch (Spark Structured
Streaming). When it fails, operators restart it, and the sink must neither lose a batch nor
commit one twice. Neither engine keeps that promise on its own: each reads back, from the
summaries of the snapshots along the branch, the identity it stamped on its own commits. So the
summaries are model state (``Operation.summary_properties``), the restart is an action the
scheduler interleaves with everything else (``Model`` calls this module; ``RESTART`` reads the
table's head), and whatever else the table went through meanwhile (an expiry, a compaction, a
rollback) decides what the restarted job finds.

The source is the job's program: entry ``k`` is batch ``k`` (checkpoint or epoch ``k + 1`` on a
first run), an INSERT of rows the source delivers. A sink's operations are numbered on
(``WriterState.op_index``: labels and file names stay unique), while ``SinkState.next_batch``
says which batch the source delivers next; each commit's intent is a ``SinkCommit`` naming the
batches it delivers, which the oracle reads as exactly-once delivery
(properties/oracle.py: a batch already delivered on the lineage adds nothing, so a second copy
of its rows is a duplicate) and properties/delivery.py checks for batches that never land.

Flink 1.20 + Iceberg 1.10.2 (``IcebergFilesCommitter``, flink/v1.20/flink/src/main/java/org/
apache/iceberg/flink/sink/):

* ``snapshotState(c)`` (lines 203-224): the batch's files are written, then checkpoint ``c``
  records every uncommitted checkpoint's files and the job id. The model records the durable
  checkpoint as the batch's files are written (``checkpointed``).
* ``notifyCheckpointComplete(c)`` (lines 227-250): commits every pending checkpoint up to ``c``
  in one commit stamped ``flink.job-id``, ``flink.operator-id``,
  ``flink.max-committed-checkpoint-id = c`` (commitUpToCheckpoint, lines 252-281; the summary
  keys: commitOperation, lines 380-395), but only ``if (checkpointId > maxCommittedCheckpointId)``;
  otherwise "Skipping committing checkpoint ..." and the files stay pending. A commit that throws
  fails the job (the model: the job is down, as after a crash).
* ``initializeState`` on restore (lines 142-200): ``maxCommittedCheckpointId`` is read from the
  table for the *restored* job id (SinkUtil.getMaxCommittedCheckpointId, SinkUtil.java:83-105:
  from ``table.snapshot(branch)`` back along ``parentId`` while ``table.snapshot(parentId)``
  finds the parent, the first snapshot with that job id, a matching or absent operator id and
  the property), and every restored checkpoint above it is committed at once, stamped with the
  restored job id and the highest such checkpoint. An expired snapshot ends the walk: the
  parent is no longer in the table.
* Restarts: ``checkpoint`` is Flink's failover (the same job, its latest completed checkpoint,
  the checkpoint counter continuing); ``savepoint`` restores an older completed checkpoint as a
  new job (a new job id; Flink's CheckpointCoordinator continues the counter from the
  savepoint's id, so the comment at lines 183-186 assuming it continues past the last committed
  checkpoint does not hold); ``no-state`` redeploys without the committer's state (its uid
  changed and ``allowNonRestoredState`` is on: the warning at lines 169-174) while the source
  resumes from the offsets the last completed checkpoint committed.

Spark 3.5 Structured Streaming + Iceberg 1.10.2 (``SparkWrite.BaseStreamingWrite``,
spark/v3.5/spark/src/main/java/org/apache/iceberg/spark/source/SparkWrite.java:525-589):
``commit(epochId)`` refreshes the table and walks from the current snapshot back along
``parentId`` to the first snapshot stamped with its ``spark.sql.streaming.queryId``; if that
snapshot's ``spark.sql.streaming.epochId`` is at least this epoch it logs "Skipping epoch ... as
it was already committed" and commits nothing, else it commits stamped with both (lines
542-578). The query id lives in the checkpoint location and survives restarts; after a crash
Spark re-runs the first batch whose entry is not in the checkpoint's commit log (written once
the sink's commit returned) with the same epoch and the same offsets: the model re-plans the
batch (new files, the same rows).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from . import operations as ops
from .operations import Operation

FLINK = "flink"
SPARK = "spark-streaming"
KAFKA_CONNECT = "kafka-connect"
MODES = (FLINK, SPARK, KAFKA_CONNECT)

CHECKPOINT = "checkpoint"   # restore the latest completed checkpoint (the same job / query)
SAVEPOINT = "savepoint"     # Flink: an older completed checkpoint, as a new job
NO_STATE = "no-state"       # Flink: a new job without the committer's state
RESTART_KINDS = {FLINK: (CHECKPOINT, SAVEPOINT, NO_STATE), SPARK: (CHECKPOINT,),
                 KAFKA_CONNECT: (CHECKPOINT,)}
RESTART_TEXT = {
    CHECKPOINT: "restarted from its latest completed checkpoint",
    SAVEPOINT: "was redeployed from an older savepoint as a new job",
    NO_STATE: "was redeployed as a new job without the committer's state",
}

#: SinkUtil.INITIAL_CHECKPOINT_ID (SinkUtil.java:38)
INITIAL_CHECKPOINT_ID = -1
FLINK_JOB_ID = "flink.job-id"
FLINK_OPERATOR_ID = "flink.operator-id"
FLINK_MAX_COMMITTED = "flink.max-committed-checkpoint-id"
SPARK_QUERY_ID = "spark.sql.streaming.queryId"
SPARK_EPOCH_ID = "spark.sql.streaming.epochId"
#: Coordinator.java at 1.11.0: OFFSETS_SNAPSHOT_PROP_FMT (with the connect group id) and
#: COMMIT_ID_SNAPSHOT_PROP
KC_OFFSETS = "kafka.connect.offsets.{group}"
KC_COMMIT_ID = "kafka.connect.commit-id"
SINK_COMMIT = "SINK_COMMIT"


def mode_of(engine: str) -> str | None:
    """The sink mode an engine profile's engine (``Profile.engine``) runs, or None."""
    if engine.startswith("flink"):
        return FLINK
    if engine.startswith("spark"):
        return SPARK
    if engine.startswith("kafka-connect"):
        return KAFKA_CONNECT
    return None


@dataclass(frozen=True)
class SinkSpec:
    """How one writer runs as a streaming sink: its engine's mode, how many times it may fail
    (each failure followed by a restart), and the ways operators restart it."""

    writer: str
    mode: str
    restarts: int = 1
    kinds: tuple[str, ...] = (CHECKPOINT,)


@dataclass(frozen=True)
class Checkpoint:
    """A completed checkpoint (Flink) or the checkpoint location's commit log (Spark): what a
    restart restores. ``pending``: ((checkpoint id, batch, Operation), ...) not known committed."""

    ckpt: int
    job: int
    next_batch: int
    pending: tuple = ()


@dataclass(frozen=True)
class SinkState:
    """A sink's run: its job (Flink job id / Spark query id, numbered), the checkpoint ids it
    used, what it committed as far as its memory goes, what it has pending, and the durable
    checkpoints it may be restarted from (oldest first)."""

    job: int = 1
    jobs: int = 1
    ckpt: int = 0
    committed: int = INITIAL_CHECKPOINT_ID
    next_batch: int = 0
    pending: tuple = ()
    checkpoints: tuple = ()
    failures: int = 0
    # the batch the running commit delivers for the first time, as (batch, planned Operation,
    # command); () for a restore's commit or between commits
    current: tuple = ()
    # each restart, for explanations: (kind, restored checkpoint or None, the job it was taken
    # by, what the job read back from the table (last_committed), the batches it committed
    # again at once)
    restarts: tuple = ()
    # Spark: the commit log's entry for the batch just committed is the newest and the next
    # batch has not begun: a crash may come before Spark wrote it (``crashed``)
    fresh_log: bool = False
    # Flink: the checkpoints whose temporary manifests the committer deleted once their commit
    # succeeded (FlinkManifestUtil.deleteCommittedManifests, IcebergFilesCommitter.java:280): a
    # restore that finds one of them uncommitted cannot read its files back
    cleaned: tuple = ()


@dataclass(frozen=True)
class SinkCommit:
    """The intent of a sink's commit: the source batches it delivers and their commands (what
    the oracle reads as exactly-once delivery), the checkpoint / epoch and job it is stamped
    with, and whether a restart committed it from restored state."""

    sink: str
    batches: tuple[int, ...]
    commands: tuple[Any, ...]
    ckpt: int
    job: int
    mode: str
    restored: bool = False
    # the sink's latest restart before this commit (``SinkState.restarts``' entry), or ()
    restart: tuple = ()
    kind: str = SINK_COMMIT

    @property
    def rows(self) -> tuple:
        return tuple(r for c in self.commands for r in c.rows)

    def describe(self) -> str:
        what = ", ".join(f"batch {b + 1}" for b in self.batches)
        unit = {FLINK: "checkpoint", KAFKA_CONNECT: "offsets up to"}.get(self.mode, "epoch")
        how = " restored after a restart" if self.restored else ""
        return f"streaming commit of {what} ({unit} {self.ckpt}{how})"

    def __str__(self) -> str:
        return self.describe()


def job_id(spec: SinkSpec, job: int) -> str:
    if spec.mode == KAFKA_CONNECT:
        return f"{spec.writer}-connect"       # the connect group: it survives restarts
    return f"{spec.writer}-job-{job}" if spec.mode == FLINK else f"{spec.writer}-query-{job}"


def operator_id(spec: SinkSpec) -> str:
    return f"{spec.writer}-committer"


def stamp(spec: SinkSpec, job: int, ckpt: int) -> tuple:
    """The summary properties the commit sets (commitOperation / BaseStreamingWrite.commit)."""
    if spec.mode == FLINK:
        return ((FLINK_JOB_ID, job_id(spec, job)), (FLINK_OPERATOR_ID, operator_id(spec)),
                (FLINK_MAX_COMMITTED, str(ckpt)))
    if spec.mode == KAFKA_CONNECT:
        # the control topic's offsets after this commit's events (merged with those committed:
        # Coordinator.commitToTable, lines 231-236), and the commit's id
        return ((KC_OFFSETS.format(group=job_id(spec, job)), f'{{"0":{ckpt}}}'),
                (KC_COMMIT_ID, f"{spec.writer}-commit-{ckpt}"))
    return ((SPARK_QUERY_ID, job_id(spec, job)), (SPARK_EPOCH_ID, str(ckpt)))


def last_committed(spec: SinkSpec, head, job: int) -> int | None:
    """What the restarted job reads back from the table's head metadata: Flink's
    getMaxCommittedCheckpointId for ``job`` (INITIAL_CHECKPOINT_ID when none), Spark's
    findLastCommittedEpochId (None when none). Both walk from main's head along parent ids
    while the parent is still in the table (``TableMetadata.ancestors``)."""
    me = job_id(spec, job)
    for snap in head.ancestors(head.current_snapshot_id):
        summary = dict(snap.summary)
        if spec.mode == FLINK:
            op = summary.get(FLINK_OPERATOR_ID)
            if summary.get(FLINK_JOB_ID) == me and (op is None or op == operator_id(spec)):
                value = summary.get(FLINK_MAX_COMMITTED)
                if value is not None:
                    return int(value)
        elif spec.mode == KAFKA_CONNECT:
            # lastCommittedOffsetsForTable (Coordinator.java:302-319 at 1.11.0): the first
            # snapshot carrying the group's offsets, back from the branch's head
            value = summary.get(KC_OFFSETS.format(group=me))
            if value is not None:
                return int(json.loads(value)["0"])
        elif summary.get(SPARK_QUERY_ID) == me:
            return int(summary[SPARK_EPOCH_ID])
    return INITIAL_CHECKPOINT_ID if spec.mode == FLINK else None


def commit_of(spec: SinkSpec, sink: SinkState, pending: tuple, job: int, ckpt: int,
              restored: bool) -> tuple[SinkCommit, Operation]:
    """The commit of ``pending`` ((checkpoint, batch, planned Operation, command), ...): one
    append of
    their files (Flink's commitDeltaTxn with no delete files: table.newAppend(),
    IcebergFilesCommitter.java:333-343; Spark's StreamingAppend: table.newFastAppend()),
    stamped. Its files are those the batches were planned with: a restore commits the files
    its checkpoint names, as Flink does (they were written before the checkpoint)."""
    first = pending[0][2]
    files = tuple(f for p in pending for f in p[2].add_data)
    # Spark's StreamingAppend.doCommit: table.newFastAppend() (SparkWrite.java:599); Flink's
    # append-only checkpoint: table.newAppend() (IcebergFilesCommitter.java:339), as planned
    kind = ops.FAST_APPEND if spec.mode == SPARK else first.kind
    operation = replace(first, kind=kind, add_data=files,
                        summary_properties=stamp(spec, job, ckpt))
    intent = SinkCommit(spec.writer, tuple(p[1] for p in pending),
                        tuple(p[3] for p in pending), ckpt, job, spec.mode, restored,
                        sink.restarts[-1] if sink.restarts else ())
    return intent, operation


def begin(spec: SinkSpec, sink: SinkState, command, planned: Operation
          ) -> tuple[SinkCommit, Operation, SinkState]:
    """The commit the job makes for its next batch (``command`` planned as ``planned``): Flink
    takes the next checkpoint id and commits every pending checkpoint with it; Spark commits
    the batch as its epoch (batch + 1)."""
    batch = sink.next_batch
    if spec.mode == FLINK:
        ckpt = sink.ckpt + 1
        pending = sink.pending + ((ckpt, batch, planned, command),)
        intent, operation = commit_of(spec, sink, pending, sink.job, ckpt, False)
        return intent, operation, replace(sink, ckpt=ckpt, current=(batch, planned, command),
                                          fresh_log=False)
    epoch = batch + 1
    intent, operation = commit_of(spec, sink, ((epoch, batch, planned, command),), sink.job,
                                  epoch, False)
    return intent, operation, replace(sink, current=(batch, planned, command), fresh_log=False)


def written_files(sink: SinkState) -> tuple:
    """The files the running commit writes: its new batch's (a restore commits files written
    before the checkpoint it restored, and earlier pending checkpoints' files were written by
    their own batches: none is written again, even if a clean-up deleted it since)."""
    if not sink.current:
        return ()
    planned = sink.current[1]
    return planned.add_data + planned.add_deletes


def checkpointed(spec: SinkSpec, sink: SinkState, intent: SinkCommit) -> SinkState:
    """Flink's snapshotState(c) once the batch's files are written: checkpoint ``c`` completes,
    holding every checkpoint not yet committed (this one included) and the job id."""
    if spec.mode != FLINK or intent.restored or not sink.current:
        return sink
    batch, planned, command = sink.current
    pending = sink.pending + ((intent.ckpt, batch, planned, command),)
    done = Checkpoint(intent.ckpt, sink.job, batch + 1, pending)
    return replace(sink, pending=pending, checkpoints=sink.checkpoints + (done,))


def skip_message(spec: SinkSpec, sink: SinkState, intent: SinkCommit, head) -> str | None:
    """Why the commit is skipped, in the engine's words (its log line), or None. Flink compares
    the checkpoint with what it remembers committing (notifyCheckpointComplete, line 237);
    Spark reads the table as it commits (BaseStreamingWrite.commit, lines 545-551)."""
    if intent.restored:
        return None
    if spec.mode == FLINK:
        if intent.ckpt > sink.committed:
            return None
        return (f"Skipping committing checkpoint {intent.ckpt}. {sink.committed} is already "
                f"committed.")
    last = last_committed(spec, head, intent.job)
    if spec.mode == KAFKA_CONNECT:
        # the batch's events sit at control-topic offset ckpt - 1; commitToTable keeps the
        # envelopes at or after the committed offset (lines 238-246), and with none left commits
        # nothing (lines 269-271)
        if last is None or intent.ckpt - 1 >= last:
            return None
        return (f"Coordinator {spec.writer}-coordinator found nothing to commit to table "
                f"default.t, skipping")
    if last is None or intent.ckpt > last:
        return None
    return (f"Skipping epoch {intent.ckpt} for query {job_id(spec, intent.job)} as it was "
            f"already committed")


def finished(spec: SinkSpec, sink: SinkState, intent: SinkCommit, committed: bool,
             skipped: bool) -> tuple[SinkState, bool]:
    """The sink after its commit ended: (state, is the job down). A commit that throws fails
    the job (Flink's notifyCheckpointComplete, Spark's micro-batch): it is down until
    restarted. Spark's commit log records a batch once its commit returned."""
    if not (committed or skipped):
        return replace(sink, failures=sink.failures + 1, current=()), True
    nxt = sink.next_batch if intent.restored else sink.next_batch + 1
    if spec.mode == FLINK:
        if committed:
            # commitUpToCheckpoint then deletes the temporary manifests of what it committed
            # (line 280); a commit that threw (its outcome unknown) never gets there
            sink = replace(sink, committed=intent.ckpt, pending=(),
                           cleaned=sink.cleaned + tuple(p[0] for p in sink.pending))
        return replace(sink, next_batch=nxt, current=()), False
    log = Checkpoint(intent.ckpt, sink.job, nxt)
    return replace(sink, next_batch=nxt, current=(), checkpoints=sink.checkpoints + (log,),
                   fresh_log=True), False


#: CRASH choices of a Spark sink whose newest commit-log entry is fresh: after Spark wrote it,
#: or before (MicroBatchExecution writes commitLog.add(batchId) after the sink's commit returned)
CRASH_AFTER_LOG, CRASH_BEFORE_LOG = 0, 1


def crash_choices(spec: SinkSpec, sink: SinkState) -> tuple[int, ...]:
    if not may_crash(spec, sink):
        return ()
    return (CRASH_AFTER_LOG, CRASH_BEFORE_LOG) if sink.fresh_log else (CRASH_AFTER_LOG,)


def crashed(sink: SinkState, choice: int = CRASH_AFTER_LOG) -> SinkState:
    """The sink after a crash; with CRASH_BEFORE_LOG, Spark never wrote the commit log's entry
    of the batch it had just committed, so a restart runs that batch again."""
    checkpoints = sink.checkpoints
    if choice == CRASH_BEFORE_LOG and sink.fresh_log:
        checkpoints = checkpoints[:-1]
    return replace(sink, failures=sink.failures + 1, current=(), checkpoints=checkpoints,
                   fresh_log=False)


def may_crash(spec: SinkSpec, sink: SinkState) -> bool:
    return sink.failures < spec.restarts


def may_restart(spec: SinkSpec, sink: SinkState) -> bool:
    return sink.failures <= spec.restarts


def restore_points(spec: SinkSpec, sink: SinkState, kind: str) -> Checkpoint | None:
    """The checkpoint a restart of ``kind`` restores (None: none, or none older for a
    savepoint: the restart is not possible)."""
    if kind == CHECKPOINT or kind == NO_STATE:
        return sink.checkpoints[-1] if sink.checkpoints else None
    return sink.checkpoints[-2] if len(sink.checkpoints) >= 2 else None


def manifest_path(spec: SinkSpec, job: int, ckpt: int) -> str:
    """The temporary manifest Flink wrote checkpoint ``ckpt``'s files to
    (ManifestOutputFileFactory: flinkJobId-operatorUniqueId-subTaskId-attemptNumber-
    checkpointId-fileCount.avro, under the table's metadata folder)."""
    return f"metadata/{job_id(spec, job)}-{operator_id(spec)}-00000-0-{ckpt}-00001.avro"


def restore_failed(entry: tuple) -> bool:
    """Is ``entry`` (of ``SinkState.restarts``) a restore that failed? Such an entry carries a
    sixth field: the checkpoint whose deleted manifest it could not read (``restart``)."""
    return len(entry) > 5


def restore_failure(spec: SinkSpec, entry: tuple) -> str | None:
    """The error a failed restore (``restore_failed``) ends with, in Iceberg's words; None for
    a restart that did not fail."""
    if not restore_failed(entry):
        return None
    return f"Failed to open input stream for file: {manifest_path(spec, entry[2], entry[5])}"


def restart(spec: SinkSpec, sink: SinkState, kind: str, head
            ) -> tuple[SinkState, tuple[SinkCommit, Operation] | None, str | None]:
    """The restarted job, the commit it makes as it starts (Flink's initializeState), if any,
    and why the restart failed (None: it did not). A Flink restore that must commit a
    checkpoint again whose temporary manifest was deleted after its commit fails reading it,
    as Iceberg's FileIO does ("Failed to open input stream for file: ...",
    NotFoundException), and fails again at every attempt: the job cannot come back (apache/
    iceberg#5846, apache/amoro#930)."""
    point = restore_points(spec, sink, kind)
    if spec.mode != FLINK:       # Spark's commit log, Kafka Connect's consumer offsets
        nxt = point.next_batch if point is not None else 0
        log = sink.restarts + ((kind, point.ckpt if point else None, sink.job, None, ()),)
        return SinkState(job=sink.job, jobs=sink.jobs, next_batch=nxt,
                         checkpoints=sink.checkpoints, failures=sink.failures,
                         restarts=log), None, None
    if point is None:
        # no checkpoint completed yet: the job starts over, from the source's beginning
        log = sink.restarts + ((kind, None, sink.job, None, ()),)
        new = SinkState(job=sink.jobs + 1, jobs=sink.jobs + 1, failures=sink.failures,
                        checkpoints=sink.checkpoints, restarts=log, cleaned=sink.cleaned)
        return new, None, None
    if kind == NO_STATE:
        # the committer restores nothing (initializeState returns at line 175); the source
        # resumes after the last completed checkpoint: its pending files are never committed
        log = sink.restarts + ((kind, point.ckpt, point.job, None, ()),)
        new = SinkState(job=sink.jobs + 1, jobs=sink.jobs + 1, next_batch=point.next_batch,
                        failures=sink.failures, checkpoints=sink.checkpoints, restarts=log,
                        cleaned=sink.cleaned)
        return new, None, None
    # failover keeps the job (and its checkpoint counter); a savepoint starts a new job whose
    # checkpoint ids continue from the savepoint's
    job = point.job if kind == CHECKPOINT else sink.jobs + 1
    jobs = sink.jobs if kind == CHECKPOINT else sink.jobs + 1
    ckpt = sink.ckpt if kind == CHECKPOINT else point.ckpt
    max_committed = last_committed(spec, head, point.job)
    uncommitted = tuple(p for p in point.pending if p[0] > max_committed)
    gone = [p[0] for p in uncommitted if p[0] in sink.cleaned]
    if gone:
        log = sink.restarts + ((kind, point.ckpt, point.job, max_committed, (), gone[0]),)
        failed = replace(sink, failures=sink.failures + 1, restarts=log)
        return failed, None, restore_failure(spec, log[-1])
    log = sink.restarts + ((kind, point.ckpt, point.job, max_committed,
                            tuple(p[1] for p in uncommitted)),)
    new = SinkState(job=job, jobs=jobs, ckpt=ckpt, committed=max_committed,
                    next_batch=point.next_batch, pending=uncommitted,
                    checkpoints=sink.checkpoints, failures=sink.failures, restarts=log,
                    cleaned=sink.cleaned)
    if not uncommitted:
        return new, None, None
    # commitUpToCheckpoint(uncommitted, restoredFlinkJobId, operatorUniqueId, max) (lines
    # 190-198): stamped with the job id the checkpoint was taken by
    intent, operation = commit_of(spec, new, uncommitted, point.job, uncommitted[-1][0], True)
    return new, (intent, operation), None


def enabled_restarts(spec: SinkSpec, sink: SinkState) -> tuple[int, ...]:
    """The choices of RESTART enabled: an index into ``spec.kinds`` per possible restart."""
    if not may_restart(spec, sink):
        return ()
    return tuple(i for i, k in enumerate(spec.kinds)
                 if k != SAVEPOINT or len(sink.checkpoints) >= 2)


def actions_key(sink: SinkState) -> tuple:
    """What a sink's enabled actions depend on besides its phase (``Model.writer_actions``)."""
    return (sink.next_batch, sink.failures, len(sink.checkpoints) >= 2, sink.fresh_log)



def restart_text(spec: SinkSpec, after: SinkState) -> str:
    """What a restart did, in a data engineer's words (the explanation of a RESTART step)."""
    kind, ckpt, job, found, again = after.restarts[-1][:5]
    how = RESTART_TEXT[kind]
    failure = restore_failure(spec, after.restarts[-1])
    if failure is not None:
        gone = after.restarts[-1][5]
        seen = "found none" if found == INITIAL_CHECKPOINT_ID else f"found checkpoint {found}"
        return (f"tried to restart from checkpoint {ckpt}: reading flink.max-committed-"
                f"checkpoint-id of job {job_id(spec, job)} from the snapshots along main, it "
                f"{seen}, so it must commit checkpoint {gone} again; but its committer deleted "
                f"that checkpoint's temporary manifest once its commit succeeded, and the "
                f"restore fails reading it (\"{failure}\"), at every attempt: the job is down")
    if spec.mode == KAFKA_CONNECT:
        start = 1 if ckpt is None else after.next_batch + 1
        return (f"{how}: its coordinator reads the control topic again from the consumer offsets "
                f"it committed, so batch {start} is committed next")
    if spec.mode == SPARK:
        if ckpt is None:
            return f"{how}: no batch is in its commit log, so it runs batch 1 again"
        return (f"{how} (its commit log ends at epoch {ckpt}): it runs batch "
                f"{after.next_batch + 1} next")
    if ckpt is None:
        return f"{how}: no checkpoint had completed, so its source starts over"
    if kind == NO_STATE:
        return (f"{how}: the source resumes after checkpoint {ckpt}, and the committer restores "
                f"nothing, so the files pending in that checkpoint are never committed")
    seen = "found none" if found == INITIAL_CHECKPOINT_ID else f"found checkpoint {found}"
    where = (f"(checkpoint {ckpt}); reading flink.max-committed-checkpoint-id of job "
             f"{job_id(spec, job)} from the snapshots along main, it {seen}")
    if again:
        return (f"{how} {where}, so it commits batch "
                f"{', '.join(str(b + 1) for b in again)} again")
    return f"{how} {where}: nothing to commit again"


def crash_text(spec: SinkSpec, before: SinkState, choice: int) -> str | None:
    """A sink's crash between commits, in words; None for a crash during a commit."""
    if choice == CRASH_BEFORE_LOG and before.fresh_log:
        if spec.mode == KAFKA_CONNECT:
            return ("crashed after its commit of batch "
                    f"{before.checkpoints[-1].ckpt}, before its coordinator committed the "
                    f"control topic's consumer offsets (Coordinator.doCommit, line 177)")
        return ("crashed after its commit of epoch "
                f"{before.checkpoints[-1].ckpt}, before Spark wrote it to the commit log")
    return None


def describe(mode: str, restarts: int, kinds: tuple[str, ...]) -> tuple[str, str]:
    """(how the job runs, how each batch commits), for a pipeline's report."""
    ways = " or ".join({CHECKPOINT: "from its latest checkpoint", SAVEPOINT: "from an older "
                        "savepoint as a new job", NO_STATE: "as a new job without the "
                        "committer's state"}[k] for k in kinds)
    if mode == FLINK:
        return (f"a Flink streaming sink (FlinkSink, IcebergFilesCommitter): each entry is one "
                f"checkpoint; it may fail {restarts} time(s) and is restarted {ways}",
                "streaming commit: AppendFiles (MergeAppend) of every pending checkpoint, "
                "stamped flink.job-id / flink.max-committed-checkpoint-id: no validation; a "
                "restore commits again what the table's summaries do not show")
    if mode == KAFKA_CONNECT:
        return (f"a Kafka Connect sink (Iceberg's connector): each entry is one coordinator "
                f"commit; it may fail {restarts} time(s) and is restarted from the consumer "
                f"offsets it committed",
                "coordinator commit: AppendFiles (MergeAppend) stamped kafka.connect.offsets.<group>: "
                "the events below the committed offsets found along the branch are left out")
    return (f"a Spark Structured Streaming query (Iceberg's streaming sink): each entry is one "
            f"micro-batch; it may fail {restarts} time(s) and is restarted {ways} (its "
            f"checkpoint location)",
            "streaming commit: AppendFiles (FastAppend) stamped spark.sql.streaming.queryId / "
            "epochId: no validation; skipped when the table's summaries show the epoch")
