"""The transition system: states, enabled actions, and ``step``.

This is the one model every engine drives (scenario runner, Hypothesis, explicit-state search,
z3 replay, the explorer). It is pure and deterministic: ``step(state, action)`` depends on nothing
else, and names (files, snapshot ids, metadata paths) are derived from the writer and its
counters, never from clocks or randomness.

A writer runs each operation of its program through the phases of Java's commit path:

    begin (scan at base) -> write (data/delete files) -> refresh -> validate
      -> write_metadata (manifests, manifest list, metadata file) -> cas
      -> committed | validation_failed | commit_failed | commit_unknown

A lost swap sends the writer back to ``refresh`` (Java re-applies the operation on the new head;
at most ``commit.retry.num-retries`` retries). How long it backs off is the scheduler's choice,
which the interleaving already models. Optional faults: a swap whose reply is lost (it applied,
or it did not, and the writer never learns which), and a crash between any two phases.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import uuid
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Callable

from . import catalog as cat
from . import clients as clients_
from . import expire as exp
from . import lifecycle as life
from . import refs as refs_
from . import cherrypick as pick_
from . import rewrite_manifests as rwm_
from . import schedule as sched
from . import transaction as txn_
from .operations import (APPEND, CHERRY_PICK, EXPIRE_SNAPSHOTS, METADATA_KINDS, REF_KINDS,
                         OVERWRITE, REWRITE_MANIFESTS, TRANSACTION, UPGRADE_FORMAT)
from .metadata import Manifest, ManifestList, TableMetadata, snapshot_files_key
from .operations import NothingToDo, Operation
from .producer import produce_snapshot, validate_operation
from .commands_spec import ADD_FILES, EXPIRE as EXPIRE_COMMAND, MERGE as MERGE_COMMAND
from .commands_spec import COMPACT as COMPACT_COMMAND
from .store import ObjectStore
from .table import TableConfig
from .validation import PY_NO_STARTING_SNAPSHOT, ValidationFailed
from .values import replace
from . import clock as clock_
from . import orphans as orphans_
from .operations import REMOVE_ORPHAN_FILES
from .commands_spec import REMOVE_ORPHAN_FILES as ORPHANS_COMMAND

# Writer phases.
IDLE = "idle"
SCANNED = "scanned"
WRITTEN = "written"
REFRESHED = "refreshed"
VALIDATED = "validated"
PREPARED = "prepared"
DONE = "done"
CRASHED = "crashed"
# a Hive writer that took the metastore lock and checked the location, before its write
# (models/clients.py HMS_LOCK)
LOCKED = "locked"
ACTIVE_PHASES = (SCANNED, WRITTEN, REFRESHED, VALIDATED, PREPARED, LOCKED)

# Outcomes of one operation.
COMMITTED = "committed"
VALIDATION_FAILED = "validation_failed"
COMMIT_FAILED = "commit_failed"
COMMIT_UNKNOWN = "commit_unknown"
NOOP = "noop"  # the command changed no row, so the engine committed nothing
# an object the operation had to read was deleted (Java's NotFoundException, never retried):
# only after a clean-up deleted what the table references (the readable property)
READ_FAILED = "read_failed"
OUTCOMES = (COMMITTED, VALIDATION_FAILED, COMMIT_FAILED, COMMIT_UNKNOWN, CRASHED, NOOP,
            READ_FAILED)

# Action kinds.
BEGIN, WRITE, REFRESH, VALIDATE, WRITE_METADATA, CAS = (
    "begin", "write", "refresh", "validate", "write_metadata", "cas")
CAS_REPLY_LOST = "cas_reply_lost"      # the swap applied, the reply was lost
CAS_NOT_APPLIED = "cas_not_applied"    # the swap did not apply, and the writer never learns that
# the swap applied, but the catalog answered CommitFailedException (a REST client that resent a
# commit whose first attempt had applied, or a catalog bug): the writer retries
CAS_APPLIED_FAILED = "cas_applied_failed"
CRASH = "crash"
# a streaming sink that failed starts again (models/lifecycle.py): choice k is the k-th way its
# pipeline restarts it; it reads the table's head (what the sink committed before)
RESTART = "restart"
ACTION_KINDS = (BEGIN, WRITE, REFRESH, VALIDATE, WRITE_METADATA, CAS, CAS_REPLY_LOST,
                CAS_NOT_APPLIED, CRASH, CAS_APPLIED_FAILED, RESTART)
#: the steps that read the table's head: the catalog entry, and the metadata file it points at
#: (``Model._step_key``); the others read only their writer's own paths
READS_HEAD = frozenset({BEGIN, REFRESH, CAS, CAS_REPLY_LOST, CAS_NOT_APPLIED, CAS_APPLIED_FAILED,
                        RESTART})
NEXT_PHASE_ACTION = {SCANNED: WRITE, WRITTEN: REFRESH, REFRESHED: VALIDATE,
                     VALIDATED: WRITE_METADATA, PREPARED: CAS, LOCKED: CAS}

EMPTY_METADATA_PATH = "v0.metadata.json"
#: Entries of ``Model.step``'s memo before it is emptied (a long search's memory stays bounded;
#: forgetting costs only recomputation: results are equal either way).
STEP_MEMO_SIZE = 100_000
_TOKENS = itertools.count(1)
#: the clock's tick (models/clock.py): the action ``clock.tick`` of no writer
TICK = clock_.TICK
ACTION_KINDS += (TICK,)
#: a writer in these phases is inside one commit attempt (refresh to swap), during which the
#: clock does not advance (models/clock.py)
MID_ATTEMPT = (REFRESHED, VALIDATED, PREPARED, LOCKED)


def _in_attempt(writers) -> bool:
    """Is a writer inside one commit attempt (``MID_ATTEMPT``)? A loop, not a generator:
    ``Model.action_parts`` is a cpdef function in the compiled build, which takes no closure."""
    for w in writers:
        if w.phase in MID_ATTEMPT:
            return True
    return False


def new_token() -> tuple:
    """A tag no other memo has, in this process or in any other: the memos tag what they cache
    on model objects (``Model._reach_key``, ``properties.EvalMemo``), and those attributes
    travel with the objects when states are pickled to another process (the Spark BFS ships
    each level's states between executors), where a counter alone would repeat a tag and
    trust a value that names something else there. The process id tells forked processes
    apart, the random part separate hosts. Tags only say which cache an entry belongs to:
    no result depends on them."""
    return (os.getpid(), _HOST_TAG, next(_TOKENS))


_HOST_TAG = uuid.uuid4().hex

#: where ``Model.fingerprint_writers`` keeps its summary of a writer on the writer object
#: (``Model._twin_info``: entries left, slack, and the writer as the checker compares it)
_TWINS_ATTR = "_icecheck_twins"

#: the fields of an operation in flight, as a writer has them between operations
_CLEARED = dict(intent=None, base_path=None, base_snapshot_id=None, operation=None,
                refreshed_path=None, pending_path=None, pending_snapshot_id=None, attempt=0,
                phantom_id=None, written=(), whole=None, groups_left=(), group_ids=(),
                group_failures=(), filter_cache=(), pending_cache=())


@dataclass(frozen=True, order=True)
class Action:
    """A small, serializable step: ``w1.cas``, ``w2.begin#1`` (choice 1 of a program entry)."""

    writer: str
    kind: str
    choice: int = 0

    def __str__(self) -> str:
        # cached on the object (the model hands out the same Action objects again:
        # writer_actions is memoised); equality and hashing read the fields only
        label = self.__dict__.get("_label")
        if label is None:
            label = f"{self.writer}.{self.kind}" + (f"#{self.choice}" if self.choice else "")
            object.__setattr__(self, "_label", label)
        return label

    @staticmethod
    def parse(text: str) -> "Action":
        head, _, choice = text.partition("#")
        writer, dot, kind = head.rpartition(".")
        if not dot or not writer or kind not in ACTION_KINDS:
            raise ValueError(f"not an action: {text!r} (expected WRITER.KIND[#CHOICE], "
                             f"KIND one of {', '.join(ACTION_KINDS)})")
        return Action(writer, kind, int(choice) if choice else 0)


@dataclass(frozen=True)
class OpRecord:
    """One finished operation of a writer: what it was, from where, and how it ended."""

    index: int
    intent: Any
    operation: Operation | None
    outcome: str
    message: str | None
    check: str | None
    base_snapshot_id: int | None
    snapshot_id: int | None
    sequence_number: int | None
    attempts: int
    applied: bool  # did its metadata become (at some point) the catalog's pointer?
    # a transaction's snapshots, in order (``snapshot_id`` is the last); () for one operation
    snapshot_ids: tuple[int, ...] = field(default=(), metadata={"digest_omit_default": True})


@dataclass(frozen=True)
class WriterState:
    name: str
    slot: int
    phase: str = IDLE
    op_index: int = 0
    intent: Any = None
    base_path: str | None = None
    base_snapshot_id: int | None = None
    operation: Operation | None = None
    refreshed_path: str | None = None
    pending_path: str | None = None
    pending_snapshot_id: int | None = None
    attempt: int = 0
    # how many snapshot ids the writer has taken: an operation's first attempt takes the next
    # (``Model._attempt_names``; a transaction one per staged operation), its retries keep them
    ids_taken: int = 0
    history: tuple[OpRecord, ...] = ()
    # the snapshot of an attempt the catalog applied while answering CommitFailedException
    # (Java's SnapshotProducer keeps its snapshot id across attempts), and the manifest lists
    # and manifests the operation's attempts wrote (what Java's cleanAll deletes)
    phantom_id: int | None = field(default=None, metadata={"digest_omit_default": True})
    written: tuple[str, ...] = field(default=(), metadata={"digest_omit_default": True})
    # a command committed in several commits (rewrite_data_files with partial progress): the
    # whole operation, the commits still to make after the current one (``operation``), and the
    # (snapshot id, sequence number) of those committed and the (outcome, message, check) of
    # those that failed so far
    whole: Operation | None = field(default=None, metadata={"digest_omit_default": True})
    groups_left: tuple = field(default=(), metadata={"digest_omit_default": True})
    group_ids: tuple = field(default=(), metadata={"digest_omit_default": True})
    group_failures: tuple = field(default=(), metadata={"digest_omit_default": True})
    # ManifestFilterManager's cache of delete-manifest results, kept across the operation's
    # attempts (producer._filter_manifests): one ((manifest path, removed paths), ...) per
    # operation (per staged operation of a transaction). ``filter_cache`` holds what earlier
    # attempts decided (set when a swap is lost, and by a transaction's in-transaction
    # commits); ``pending_cache`` what the pending attempt decided, a function of the state's
    # other fields (its base, operation and filter_cache), so it is left out of digests
    filter_cache: tuple = field(default=(), metadata={"digest_omit_default": True})
    pending_cache: tuple = field(default=(), metadata={"digest_omit": True})
    # a streaming sink's run (models/lifecycle.py SinkState): None for every other writer
    sink: Any = field(default=None, metadata={"digest_omit_default": True})
    # the paths of what this writer's attempts that lost their race wrote, one tuple per
    # attempt (its metadata file, then the manifest lists and new manifests it reaches;
    # ``Model._lost_paths``): objects nothing reads again. Bookkeeping for the checker, which
    # leaves them out of fingerprints (engines/symmetry.py); left out of digests, since the
    # store holds the objects themselves
    lost: tuple[tuple[str, ...], ...] = field(default=(), metadata={
        "digest_omit": True, "fingerprint_omit": True})

    @property
    def active(self) -> bool:
        return self.phase in ACTIVE_PHASES


@dataclass(frozen=True)
class WriterProgram:
    """A writer's program: each entry is a tuple of alternatives (usually one)."""

    name: str
    entries: tuple[tuple[Any, ...], ...]


def _freeze_caches(caches: list[dict]) -> tuple:
    """Filter-manager caches as immutable, canonically ordered state; () when every one is
    empty (an operation that met no delete manifest: the state is what it was before)."""
    if not any(caches):
        return ()
    return tuple(tuple(sorted(c.items())) for c in caches)


def _as_written(message: str, written_names: tuple) -> str:
    """A message naming a filter of a caseSensitive(false) operation, with its column
    references as the user wrote them: Java prints the unbound expression it was given."""
    for schema_name, written in written_names:
        message = message.replace(f'ref(name="{schema_name}")', f'ref(name="{written}")')
    return message


def _with_phantom(w: "WriterState", snapshot_id, seq, applied: bool,
                  snapshot_ids: tuple) -> tuple:
    """(snapshot id, sequence number, applied, snapshot ids) of the record of an operation
    that ends after an attempt the catalog applied while answering CommitFailedException
    (``phantom_id``, CAS_APPLIED_FAILED). That attempt's snapshot became the catalog's pointer
    whatever ends the operation (a ValidationException, exhausted retries, a lost or
    unanswered swap, a crash, an unreadable file), so the record says it applied
    (``OpRecord.applied``): the history maps the snapshot to this operation, and
    metadata_integrity does not call it an orphan. Until issue 45 a retry that ended in
    ``cas_not_applied``, ``cas_reply_lost`` of a swap the catalog refused, or exhausted
    retries recorded it as not applied, a false "no commit of w1 applied it".

    When this attempt did not apply, the record names the phantom snapshot, with no sequence
    number: the writer was never told one (the history reads the snapshot's own). When this
    attempt applied a snapshot of its own (the phantom had left its base: a catalog without
    compare-and-swap dropped it), the phantom's ids come first in ``snapshot_ids``
    (``History.by_snapshot`` maps every id there to the operation)."""
    phantom_ids = Model._transaction_ids(w, w.phantom_id) or (w.phantom_id,)
    if not applied:
        return w.phantom_id, None, True, phantom_ids if len(phantom_ids) > 1 else ()
    if snapshot_id is None or snapshot_id == w.phantom_id:
        return snapshot_id, seq, applied, snapshot_ids
    return snapshot_id, seq, applied, phantom_ids + (snapshot_ids or (snapshot_id,))


def _files_read_late(op: Operation) -> list[str]:
    """The data files a job reads after its tasks start, past the point where its scan was
    planned: those it rewrites (copy-on-write, compaction: Spark's rewrite reads them again
    after the runtime group filter found them). A merge-on-read command reads the rows its
    deletes target as it scans, at the start (observed on Spark 3.5 + Iceberg 1.10.2: a
    merge-on-read MERGE whose target file an expiry deleted after it began gets through its
    scan and fails on its expired starting snapshot, found by the mixed differential, seed
    2327; scenario expiry/spark-mor-merge-of-a-file-expiry-deleted-fails-on-its-snapshot)."""
    return [f.path for f in op.delete_data if f.path]


def _reads_late(w: "WriterState") -> bool:
    """Does the job read data files while its tasks run, after planning (``_write`` checks
    them against what an expiry deleted)? An engine's command that validates on its first
    attempt (Spark, Flink; not PyIceberg, which read everything as it staged the transaction
    when it began) and rewrites files (``_files_read_late``) or is a copy-on-write MERGE
    (``_merge_scan``). A Java API user's raw operation reads nothing."""
    op = w.whole or w.operation
    if isinstance(w.intent, Operation) or not op.validations.validate_on_first_attempt:
        return False
    return bool(_files_read_late(op)) or _is_cow_merge(w)


def _is_cow_merge(w: "WriterState") -> bool:
    return getattr(w.intent, "kind", None) == MERGE_COMMAND \
        and (w.whole or w.operation).kind == OVERWRITE


def _merge_scan(store: ObjectStore, w: "WriterState", spec) -> list[str]:
    """The data files a copy-on-write MERGE's target scan reads besides those it rewrites:
    every live data file of the snapshot it planned on that the ON clause's target-only
    conjuncts (``where``) keep, by partition and metrics, read from the store as written (its
    plan listed them; an expiry may have deleted the manifests since). Spark 3.5 joins the
    source with a scan of the whole target (RewriteMergeIntoTable; for copy-on-write, first to
    find the files to rewrite: the runtime group filter), and those tasks run after the source
    is computed, so a file an expiry deleted after the MERGE began fails it even when no row of
    that file matched (observed on Spark 3.5 + Iceberg 1.10.2, "File does not exist": scenario
    expiry/spark-merge-reads-a-file-expiry-deleted-after-it-began, found by the mixed
    differential, seed 7). A merge-on-read MERGE in the same race was observed to get through
    its scan and fail on its expired starting snapshot instead ("... is not an ancestor of
    ...": expiry/spark-mor-merge-starting-snapshot-expired): a merge-on-read command reads
    what it reads as it scans (``_files_read_late``)."""
    if not _is_cow_merge(w) or w.base_path is None or w.base_snapshot_id is None:
        return []
    snapshot = store.written(w.base_path).snapshot(w.base_snapshot_id)
    if snapshot is None:
        return []
    from .filters import might_match_file
    from .reads import live_data_entries
    where = w.intent.where
    return [e.file.path for e in live_data_entries(store.archive(), snapshot)
            if where is None or might_match_file(where, spec, e.file.partition, e.file.lower(),
                                                 e.file.upper(), e.file.nulls(),
                                                 e.file.record_count)]


@dataclass(frozen=True)
class ModelConfig:
    table: TableConfig
    writers: tuple[WriterProgram, ...]
    catalog: str = cat.CAS
    faults: bool = False
    crashes: bool = False
    setup: tuple[Operation, ...] = ()
    planner: Callable[..., Operation] | None = field(default=None, compare=False)
    # Fuse each writer's local steps: ``begin`` also writes its files, and ``refresh`` also
    # validates and writes metadata. Sound, because those steps read nothing shared but the
    # catalog pointer (read by refresh) and immutable objects; it shortens traces and shrinks
    # the state space (the exploration engines use it; scenarios keep every phase).
    fuse_local_steps: bool = False
    # the fault CAS_APPLIED_FAILED (a swap that applied, answered CommitFailedException)
    phantom_failures: bool = False
    # which jobs may not overlap or run in sequence (models/schedule.py): ((kind, a, b), ...)
    schedule: tuple = ()
    # the writers that run as streaming sinks, crash and restart (models/lifecycle.SinkSpec)
    sinks: tuple = ()
    # writers whose catalog client differs from the catalog's default (models/clients.py
    # ClientSpec): their swap and the faults that reach them
    clients: tuple = ()
    # how many times the clock may advance (models/clock.py); 0: it never does
    ticks: int = 0


@dataclass(frozen=True)
class State:
    catalog: cat.CatalogState
    store: ObjectStore
    writers: tuple[WriterState, ...]

    def writer(self, name: str) -> WriterState:
        for w in self.writers:
            if w.name == name:
                return w
        raise KeyError(f"no writer named {name!r}")

    @property
    def metadata(self) -> TableMetadata:
        return self.store[self.catalog.pointer]

    def metadata_at(self, path: str) -> TableMetadata:
        """A metadata file a writer holds: the one it began at, refreshed to, or wrote. Java's
        TableOperations keep a TableMetadata in memory once loaded, so it is read as written
        even when a clean-up deleted the file since (remove_orphan_files deletes superseded
        ones it does not count in the metadata log, models/orphans.py); the table's pointer
        is read from storage (``metadata``)."""
        meta = self.store.written(path)
        if meta is None:
            raise KeyError(path)
        return meta


_object_new, _object_setattr = object.__new__, object.__setattr__


def _new_state(catalog: cat.CatalogState, store: ObjectStore,
               writers: tuple[WriterState, ...]) -> State:
    """``State(catalog, store, writers)``, stored as its frozen dataclass ``__init__`` stores
    the fields (``object.__setattr__``) but without calling it: that ``__init__`` is generated
    Python, interpreted even in the compiled build, and a search builds a state per
    transition (``Model._put_writer``)."""
    s = _object_new(State)
    _object_setattr(s, "catalog", catalog)
    _object_setattr(s, "store", store)
    _object_setattr(s, "writers", writers)
    return s


def _lock_excluded(writers: tuple, parts: list, lockers: frozenset) -> list:
    """``parts`` (each writer's enabled actions) without the lock check (``cas`` from
    ``prepared``) of every locking writer but the one holding the Hive metastore lock, while
    one holds it (models/clients.py). A function of its own, not inside ``Model.action_parts``:
    the compiled build cannot compile a generator inside a cpdef method."""
    holder = None
    for w in writers:
        if w.phase == LOCKED:
            holder = w.name
    if holder is None:
        return parts
    out = []
    for w, part in zip(writers, parts):
        if w.name in lockers and w.name != holder and w.phase == PREPARED:
            part = tuple([a for a in part if a.kind != CAS])
        out.append(part)
    return out


def _shared_path(w: "WriterState") -> str | None:
    """The path of the file writer ``w``'s ADD_FILES command writes, shared with every other
    writer that adds it (commands_spec.EXTERNAL_PREFIX), or None: every other file a writer
    writes has a name of its own."""
    intent = w.intent
    if getattr(intent, "kind", None) == ADD_FILES:
        return intent.file_path
    return None


def _intents(config: "ModelConfig"):
    """Every command or operation any writer's program may run (each alternative)."""
    return (i for p in config.writers for entry in p.entries for i in entry)


def _commits_more_than_once(config: "ModelConfig") -> bool:
    """Can one entry of a program commit more than once? A compaction with
    partial-progress.enabled commits each batch of file groups on its own
    (``commands.compaction``)."""
    return any(getattr(i, "kind", None) == COMPACT_COMMAND
               and i.option("partial-progress.enabled") for i in _intents(config))


def _runs_any(config: "ModelConfig", kinds: tuple) -> bool:
    """Does any writer's program run a command or operation of one of ``kinds``?"""
    return any(getattr(i, "kind", None) in kinds for i in _intents(config))


class StepError(ValueError):
    """An action that is not enabled in the state (a malformed or drifted trace)."""


def canonical(value: Any) -> Any:
    """A deterministic, hash-seed-independent structure for digests."""
    if isinstance(value, ObjectStore):
        out = [[k, canonical(value[k])] for k in sorted(value)]
        if value.deleted:  # only expiry deletes objects; older traces never did
            out.append(["deleted", sorted(value.deleted)])
        if value.now:  # the clock has moved (models/clock.py): only with ticks
            out.append(["clock", value.now, sorted(value.mtimes.items())])
        return out
    if is_dataclass(value) and not isinstance(value, type):
        # a field marked digest_omit_default (added after traces were recorded) is left out
        # while it holds its default, so recorded digests stay valid; one marked digest_omit is
        # always left out: it is fixed by the writer's profile, which the configuration records,
        # or by the rest of the state (``WriterState.lost``: paths of objects the store holds)
        return [type(value).__name__] + [canonical(getattr(value, f.name)) for f in fields(value)
                                         if f.compare and not f.metadata.get("digest_omit")
                                         and not (f.metadata.get("digest_omit_default")
                                                  and getattr(value, f.name) == f.default)]
    if isinstance(value, (tuple, list)):
        return [canonical(v) for v in value]
    if isinstance(value, frozenset):
        return sorted(repr(canonical(v)) for v in value)
    if isinstance(value, dict):
        return [[k, canonical(v)] for k, v in sorted(value.items())]
    return value


def digest(state: State) -> str:
    """A stable fingerprint of a state (the same across processes and hash seeds)."""
    return hashlib.blake2b(repr(canonical(state)).encode(), digest_size=12).hexdigest()


class Model:
    """The transition system for one configuration."""

    def __init__(self, config: ModelConfig):
        self.config = config
        self.table = config.table
        self.programs = {p.name: p for p in config.writers}
        self._positions = {p.name: i for i, p in enumerate(config.writers)}   # see step
        #: fused steps keep a job's ``write`` (the reads of its tasks) a step of its own when a
        #: writer may expire snapshots: an expiry committed between the job's planning and its
        #: tasks fails it (``_reads_late``), an interleaving fusing would remove
        #: (or remove orphan files, which deletes what a job wrote and may read)
        self._split_write = config.fuse_local_steps and _runs_any(
            config, (EXPIRE_COMMAND, EXPIRE_SNAPSHOTS, ORPHANS_COMMAND, REMOVE_ORPHAN_FILES))
        self._ticks = config.ticks          # see action_parts, models/clock.py
        self._tick_parts: dict = {}         # see _with_tick
        self._plans: dict[tuple, tuple] = {}   # see _plan
        self._steps: dict[tuple, tuple] = {}   # see step
        self._writer_actions: dict[tuple, tuple] = {}   # see writer_actions
        self._actions_tag = object()    # marks the actions writer_actions keeps on writers
        #: memoise steps (False: every step runs the handlers, for tests that compare)
        self.memoise = True
        self._content_key: Callable[[Any], Any] | None = None
        self._content_token = 0
        self._reach_names: dict[tuple, int] = {}   # see _reach_key
        #: Hash-cons what memoised steps build (needs ``content_key``; the exhaustive checker
        #: sets both): see ``_intern``.
        self.interning = False
        self._interned: dict = {}      # see _intern
        self._schedule = tuple(config.schedule)   # see action_parts
        #: does the table set commit.retry.num-retries itself? (see _retries)
        self._table_retries = "commit.retry.num-retries" in dict(config.table.properties)
        self._sinks = {s.writer: s for s in config.sinks}   # see models/lifecycle.py
        #: each writer's client (models/clients.py): its swap, and which faults reach it
        self._clients = {c.writer: c for c in config.clients}
        #: record what lost attempts wrote (``WriterState.lost``, ``_lost_paths``)? Not where
        #: anything may read those objects again: a clean-up after a phantom failure deletes
        #: the attempts' objects it kept (``_clean_all``), remove_orphan_files lists and
        #: deletes every unreferenced file and names them in its report, and a clock stamps
        #: each object (models/clock.py)
        self._track_lost = not (config.phantom_failures or config.ticks or any(
            c.applied_failed for c in config.clients) or _runs_any(
            config, (ORPHANS_COMMAND, REMOVE_ORPHAN_FILES)))
        self._lockers = frozenset(c.writer for c in config.clients
                                  if clients_.needs_lock_step(c.kind))
        #: does the table's version only ever rise? Not where a swap may install a file of a
        #: lower version than the catalog's (a last-writer-wins catalog, and catalog clients:
        #: one that does not compare, a Hive lock's write after its check): there a retry may
        #: write a version an earlier attempt of its operation wrote (``_attempt_names``)
        self._versions_rise = (config.catalog in (cat.CAS, cat.PUT_IF_ABSENT)
                               and not config.clients)
        #: let the checker compare states without how many races a writer lost, where that
        #: can no longer matter (``fingerprint_writers``)? Only where every lost race needs
        #: another writer's applied swap and each program entry swaps at most once: not with
        #: faults (a swap that never happened is a loss no other writer caused), crashes and
        #: streaming sinks (restarts commit again), other catalog clients (a Hive lock's
        #: two-step swap), partial-progress compactions (a commit per file group), and not
        #: where lost attempts are not tracked (their objects may be read again)
        self._merge_losses = self._track_lost and not (
            config.faults or config.crashes or config.sinks or config.clients
            or _commits_more_than_once(config))

    @property
    def content_key(self) -> Callable[[Any], Any] | None:
        """A content key of model objects for the step memo (None: identity; see
        ``_step_key``). Setting it starts a new memo."""
        return self._content_key

    @content_key.setter
    def content_key(self, f: Callable[[Any], Any] | None) -> None:
        self._content_key = f
        self._content_token = new_token()   # tags what _reach_key caches on objects
        self._steps.clear()
        self._reach_names.clear()
        self._interned.clear()

    # -- states ---------------------------------------------------------------------------
    def initial(self) -> State:
        empty = TableMetadata(EMPTY_METADATA_PATH, 0, self.table.format_version, 0, None, (), ())
        store = ObjectStore({EMPTY_METADATA_PATH: empty})
        catalog = cat.CatalogState(EMPTY_METADATA_PATH, 0)
        meta = empty
        objects: dict[str, Any] = {}
        for i, op in enumerate(self.config.setup, start=1):
            for f in op.add_data + op.add_deletes:
                objects[f.path] = f
            store = store.put_all(objects)
            produced = produce_snapshot(store, self.table, meta, op, snapshot_id=i,
                                        writer_name="setup",
                                        metadata_path=f"v{meta.version + 1}-setup.metadata.json",
                                        starting_id=None)
            store = store.put_all(dict(produced.objects))
            meta = produced.metadata
            catalog = cat.CatalogState(meta.path, meta.version)
        writers = tuple(WriterState(p.name, slot, sink=life.SinkState()
                                    if p.name in self._sinks else None)
                        for slot, p in enumerate(self.config.writers, 1))
        return State(catalog, store, writers)

    # -- actions --------------------------------------------------------------------------
    def actions(self, state: State) -> list[Action]:
        out: list[Action] = []
        for part in self.action_parts(state):
            out.extend(part)
        return out

    def action_parts(self, state: State) -> list[tuple[Action, ...]]:
        """Each writer's enabled actions (``writer_actions``), in slot order: ``actions`` is
        their concatenation. The checker keeps them per state, for its sleep sets."""
        tag = self._actions_tag
        out = []
        for w in state.writers:
            # writer_actions's cache, read inline (the instance dict in a local: the
            # compiled build reads it as a dict)
            wd = w.__dict__
            got = wd.get("_icecheck_acts")
            out.append(got[1] if got is not None and got[0] is tag
                       else self.writer_actions(state, w))
        if self._lockers:
            # while a Hive writer holds the metastore lock, no other locking writer checks
            # (models/clients.py)
            out = _lock_excluded(state.writers, out, self._lockers)
        if self._schedule:
            # a job the schedule holds back may not begin its first command (models/schedule.py)
            held = sched.blocked(self._schedule, state.writers, self._positions)
            if held:
                out = [() if w.name in held else part for w, part in zip(state.writers, out)]
        if self._ticks and state.store._now < self._ticks and any(out) \
                and not _in_attempt(state.writers):
            # the clock may advance while a writer has a step left, but not inside a commit
            # attempt (models/clock.py); the tick rides in the first writer's part (a checker
            # tallies a part's steps against its writer, whom a tick leaves as it is)
            out[0] = self._with_tick(out[0])
        return out

    def writer_actions(self, state: State, w: WriterState) -> tuple[Action, ...]:
        """The writer's enabled actions: a function of its name, phase, operation number and
        whether it commits in several commits (memoised on those, and kept on the writer
        object for this model: a search asks twice per state)."""
        wd = w.__dict__
        got = wd.get("_icecheck_acts")
        if got is not None and got[0] is self._actions_tag:
            return got[1]
        key = (w.name, w.phase, w.op_index, w.whole is None,
               None if w.sink is None else life.actions_key(w.sink))
        got = self._writer_actions.get(key)
        if got is None:
            got = self._writer_actions[key] = tuple(self._enabled(w))
        object.__setattr__(w, "_icecheck_acts", (self._actions_tag, got))
        return got

    def _enabled(self, w: WriterState) -> list[Action]:
        if w.sink is not None:
            return self._sink_enabled(w)
        if w.phase == IDLE:
            entries = self.programs[w.name].entries
            if w.op_index >= len(entries):
                return []
            return [Action(w.name, BEGIN, i) for i in range(len(entries[w.op_index]))]
        if not w.active:
            return []
        out = [Action(w.name, NEXT_PHASE_ACTION[w.phase])] + self._faults_at(w)
        if self.config.crashes:
            out.append(Action(w.name, CRASH))
        return out

    def _sink_enabled(self, w: WriterState) -> list[Action]:
        """A streaming sink's actions (models/lifecycle.py): it begins its next batch while the
        source has one, may fail at any point (while its failures stay within the restarts
        its pipeline allows: between batches and after the last one too, since a streaming
        job keeps running), and once down, restarts in one of the ways its pipeline allows."""
        spec, sink = self._sinks[w.name], w.sink
        if w.phase == CRASHED:
            return [Action(w.name, RESTART, i) for i in life.enabled_restarts(spec, sink)]
        crash = [Action(w.name, CRASH, i) for i in life.crash_choices(spec, sink)]
        if w.phase in (IDLE, DONE):
            entries = self.programs[w.name].entries
            if w.phase == IDLE and sink.next_batch < len(entries):
                return [Action(w.name, BEGIN, i)
                        for i in range(len(entries[sink.next_batch]))] + crash
            return crash
        return [Action(w.name, NEXT_PHASE_ACTION[w.phase])] + self._faults_at(w) + crash

    def _faults_at(self, w: WriterState) -> list[Action]:
        """The catalog faults that can reach the writer's swap now: its client's
        (models/clients.py), else the configuration's. A locking Hive writer's swap is the
        write after its check (``LOCKED``); every other writer's is its one ``cas``."""
        client = self._clients.get(w.name)
        at = LOCKED if client is not None and w.name in self._lockers else PREPARED
        if w.phase != at:
            return []
        faults = self.config.faults if client is None else client.faults
        phantom = self.config.phantom_failures if client is None else client.applied_failed
        out = [Action(w.name, CAS_REPLY_LOST), Action(w.name, CAS_NOT_APPLIED)] if faults else []
        if phantom and w.whole is None:
            out.append(Action(w.name, CAS_APPLIED_FAILED))
        return out

    # -- step -----------------------------------------------------------------------------
    def step(self, state: State, action: Action) -> State:
        """The state after ``action``, memoised by what the step reads (see ``_step_key``):
        a writer's step changes only that writer, the catalog and the store, so its effect,
        computed once, is applied to every state that agrees on what it reads (about nine
        steps in ten of an exhaustive search). The memo returns the very objects computed
        the first time, so states reached along different paths share them (and the
        checker's digests cached on them). The result is equal, field for field, to what
        the handlers compute: tests/test_step_memo.py compares both on whole searches."""
        if action.kind == TICK:
            return self._tick(state, action)
        # a state keeps its writers in slot order (``initial``): look the writer up at its
        # place, and by name only in a state that does not
        ws = state.writers
        i = self._positions.get(action.writer)
        w = ws[i] if i is not None and i < len(ws) else None
        if w is None or w.name != action.writer:
            try:
                w = state.writer(action.writer)
            except KeyError:
                raise StepError(f"{action}: unknown writer {action.writer!r}") from None
        if action not in self.writer_actions(state, w):
            raise StepError(f"{action} is not enabled: writer {w.name} is {w.phase}")
        if not self.memoise:
            return self._apply(state, w, action)
        key, alive = self._step_key(state, w, action)
        got = self._steps.get(key)
        if got is not None and got[0] == alive:
            return self._replay(state, got[1], got[2], got[3], got[4], got[5])
        result = self._apply(state, w, action)
        added, deleted = result.store.changes_since(state.store)
        w2 = result.writer(w.name)
        shared = _shared_path(w2)
        if shared is not None and w2.phase == WRITTEN and shared not in added:
            # an ADD_FILES' external file is the one path two writers both write: when another
            # writer already wrote it here, this write added nothing new to this store, yet
            # replayed on a store without it, the step must write it (the memo records it)
            added = {**added, shared: result.store.written(shared)}
        catalog = result.catalog if result.catalog != state.catalog else None
        if self.interning and self._content_key is not None:
            w2, catalog, added, changed = self._intern(result.store, w2, catalog, added)
            if changed:      # the entry replayed, as on a hit, with the objects kept first
                result = self._replay(state, w2, catalog, added, deleted)
        if len(self._steps) >= STEP_MEMO_SIZE:
            self._steps.clear()
        # the added paths as one tuple the entry keeps: every store a replay of it derives
        # records that tuple (ObjectStore.put_all), so a checker digests the added objects
        # once per entry, not once per store (Fingerprinter._added_sum)
        self._steps[key] = (alive, w2, catalog, added, deleted, tuple(added))
        return result

    def _intern(self, store: ObjectStore, w2: WriterState, catalog: cat.CatalogState | None,
                added: dict) -> tuple:
        """(writer, catalog entry, added objects, was any replaced): what a step's handlers
        built, each replaced by the first object built of the same kind of content
        (hash-consing), so that the caches kept on it (the checker's digests and judge-key
        parts, the step memo's reach keys, the evaluation's oracle and integrity caches)
        serve every copy, and fewer objects stay alive (issue 13: on
        mor-serializable-3w2op-delete, 1,440 of the 3,486 writers, 1,021 of the 1,048 catalog
        entries and 770 of the 1,049 metadata files the handlers build equal one built
        before; the search there: 10.91 G -> 10.79 G instructions, whole-process peak memory
        97.5 -> 93.9 MiB, CPU time 0-5% less).

        A writer and a catalog entry are values: they are keyed by their content
        (``content_key``). A metadata file is keyed by what it reaches (``_reach_key``: its
        content and its snapshots' manifest lists and manifests in ``store``), never by its
        content alone: it names those files by path, the same path holds other content along
        another path of a search (a writer's file name does not say what it read), and the
        caches on a metadata object and on its snapshots hold for what it reaches. Other
        objects are kept as built: their digests are already shared between equal objects
        (``Fingerprinter.obj_digest``'s twins), and merging them measured no gain.
        The replacement is equal to what it replaces, field for field
        (tests/test_step_memo.py compares whole states with and without it)."""
        table, f = self._interned, self._content_key
        if len(table) >= STEP_MEMO_SIZE:
            table.clear()
        changed = False
        got = table.setdefault(f(w2), w2)
        changed |= got is not w2
        w2 = got
        if catalog is not None:
            got = table.setdefault(f(catalog), catalog)
            changed |= got is not catalog
            catalog = got
        if any(type(o) is TableMetadata for o in added.values()):
            out = {}
            for path, o in added.items():
                if type(o) is TableMetadata:
                    got = table.setdefault(("reach", self._reach_key(store, o)), o)
                    changed |= got is not o
                    o = got
                out[path] = o
            added = out
        return w2, catalog, added, changed

    def _replay(self, state: State, w2: WriterState, catalog: cat.CatalogState | None,
                added: dict, deleted: frozenset, paths: tuple | None = None) -> State:
        """A step memo entry applied to ``state``: the writer it left, the catalog entry (None:
        unchanged), the objects it added (``paths``: their keys, the tuple the entry keeps)
        and the paths it deleted."""
        store = state.store
        if added:
            store = store.put_all(added, paths)
        if deleted:
            store = store.delete_all(deleted)
        return self._put_writer(state, w2, store, catalog)

    def _step_key(self, state: State, w: WriterState, action: Action) -> tuple[tuple, tuple]:
        """(memo key, the objects it names by identity). A step reads its action and writer,
        the metadata files at the writer's base, refreshed and pending paths, the objects
        those reach, which paths were deleted (any read may find its object gone), and, for
        the steps that look at the table's head (``READS_HEAD``: begin scans it, refresh
        reads it, a swap compares the catalog entry), the catalog entry and the metadata file
        at its pointer; nothing of the other writers.

        Without ``content_key`` the writer and the metadata files are keyed by identity: one
        metadata *object* reaches the same objects in every state that holds it (it enters a
        store only with the objects it was written with, by its own step or by this memo
        replaying that step, and paths are never rewritten); the entry keeps them alive so
        that no id is reused while it stands (``alive`` is compared on a hit). With
        ``content_key`` (the exhaustive checker passes its fingerprinter's content digest,
        cached on each object) they are keyed by content, so that equal objects built along
        different paths share entries (mor-serializable-3w2op-delete: the handlers run 3,565
        times for 35,464 steps, against 11,396 with identity keys): the writer
        by its own content (it is a value), each metadata file by what it reaches
        (``_reach_key``), never by its own content alone, which does not fix its manifests.
        With ``interning`` as well (the checker sets both) the keys are by identity again:
        every writer and metadata object a memoised step hands out is the one interned object
        of its content (of its reach, for metadata), so identity keys find the same entries as
        content keys (the same handler runs on every benchmark configuration) without a
        content lookup per object per step (issue 13, tenth round: 1.3% fewer instructions on
        the canonical configuration's first levels). Only once the interning table is emptied
        (``STEP_MEMO_SIZE`` entries, which no benchmark configuration reaches) can an object
        equal to an older one miss an entry, and then the handlers run: slower, never wrong
        (``alive`` keeps every keyed object, so no id is reused while its entry stands)."""
        store = state.store
        written = store._objects.get      # ObjectStore.written, inline
        metas = (written(w.base_path), written(w.refreshed_path), written(w.pending_path))
        # the action by its label (a string: its hash is cached), the catalog entry by its
        # fields (no dataclass __hash__ call per step)
        head: tuple = (str(action), store.deleted)
        if action.kind in READS_HEAD:
            catalog = state.catalog
            metas += (written(catalog.pointer),)
            head += (catalog.pointer, catalog.version)
        if store._now:
            # the clock has moved (models/clock.py): a step stamps what it writes with the
            # tick, and a procedure that compares times reads what it compares
            head += (store._now,) + clock_.memo_key(store, w, action, metas)
        f = self._content_key
        if f is None or self.interning:
            return head + tuple(map(id, metas)) + (id(w),), metas + (w,)
        token, reach = self._content_token, []
        for m in metas:
            # _reach_key's cache, read inline
            got = None if m is None else m.__dict__.get("_icecheck_reach")
            reach.append(got[1] if got is not None and got[0] == token
                         else self._reach_key(store, m))
        return head + tuple(reach) + (f(w),), ()

    def _reach_key(self, store: ObjectStore, meta: TableMetadata | None):
        """A name (an int) of the content of a metadata file and of everything a step can read
        through it: each snapshot's manifest list and manifests (their entries carry the
        files, rows included); equal contents get one name while ``_reach_names`` holds it.
        Cached on the object (it reaches content-equal objects in every state
        that holds it: it enters a store with the objects written with it, and what it
        reaches of older ones was equal in content, part of the key that replayed it)."""
        if meta is None:
            return None
        f, token = self._content_key, self._content_token
        got = meta.__dict__.get("_icecheck_reach")
        if got is not None and got[0] == token:
            return got[1]
        key = (f(meta),) + tuple(snapshot_files_key(snap, store.written, f)
                                 for snap in meta.snapshots)
        # named by a number (never reused), so that a step's key hashes one int per metadata
        # file, not the nested content on every step
        names = self._reach_names
        name = names.get(key)
        if name is None:
            if len(names) >= STEP_MEMO_SIZE:
                names.clear()
            name = names[key] = next(_TOKENS)
        object.__setattr__(meta, "_icecheck_reach", (token, name))
        return name

    def _apply(self, state: State, w: WriterState, action: Action) -> State:
        handler = getattr(self, "_" + action.kind)
        try:
            return handler(state, w, action)
        except KeyError as e:
            path = e.args[0] if e.args else None
            if not (isinstance(path, str) and path in state.store.deleted):
                raise
            if w.phase == IDLE:
                w = replace(w, intent=self._program_intent(w, action.choice),
                            base_snapshot_id=state.metadata.current_snapshot_id)
            return self._finish(state, w, READ_FAILED,
                                f"Failed to open input stream for file: {path}", "not_found")

    def _put_writer(self, state: State, w: WriterState, store: ObjectStore | None = None,
                    catalog: cat.CatalogState | None = None) -> State:
        # a state keeps its writers in slot order (``initial``): the writer's slot is its place
        ws = state.writers
        i = w.slot - 1
        return _new_state(catalog or state.catalog, store if store is not None else state.store,
                          ws[:i] + (w,) + ws[i + 1:])

    def _finish(self, state: State, w: WriterState, outcome: str, message: str | None,
                check: str | None = None, *, snapshot_id=None, seq=None, applied=False,
                store=None, catalog=None, snapshot_ids=()) -> State:
        if w.whole is not None and outcome in (COMMITTED, VALIDATION_FAILED, COMMIT_FAILED):
            # one commit of a command that commits in several (partial progress): a failed
            # one is logged and skipped (RewriteDataFilesCommitManager.commitOrClean)
            ids = w.group_ids + (((snapshot_id, seq),) if outcome == COMMITTED else ())
            fails = w.group_failures + (() if outcome == COMMITTED else
                                        ((outcome, message, check),))
            if w.groups_left:
                nxt = replace(w, operation=w.groups_left[0], groups_left=w.groups_left[1:],
                              group_ids=ids, group_failures=fails, phase=WRITTEN, attempt=0,
                              refreshed_path=None, pending_path=None, pending_snapshot_id=None,
                              filter_cache=(), pending_cache=())
                return self._put_writer(state, nxt, store, catalog)
            return self._finish_groups(state, w, ids, fails, store, catalog)
        if w.phantom_id is not None:
            snapshot_id, seq, applied, snapshot_ids = _with_phantom(
                w, snapshot_id, seq, applied, snapshot_ids)
        if w.whole is not None:
            # ended otherwise (a fault, a read failure): the commits it made stay its own
            made = tuple(i for i, _ in w.group_ids)
            if made and not applied:
                (snapshot_id, seq), applied = w.group_ids[-1], True
            elif applied and snapshot_id is not None and snapshot_id not in made:
                made += (snapshot_id,)
            snapshot_ids = made
            w = replace(w, operation=w.whole)
        if outcome == VALIDATION_FAILED and message and w.operation is not None \
                and w.operation.written_names:
            message = _as_written(message, w.operation.written_names)
        record = OpRecord(w.op_index, w.intent, w.operation, outcome, message, check,
                          w.base_snapshot_id, snapshot_id, seq, w.attempt + 1, applied,
                          snapshot_ids)
        if w.sink is not None:
            phase, sink = self._sink_after(w, outcome)
            done = replace(w, phase=phase, op_index=w.op_index + 1, history=w.history + (record,),
                           sink=sink, **_CLEARED)
            return self._put_writer(state, done, store, catalog)
        more = w.op_index + 1 < len(self.programs[w.name].entries)
        done = replace(w, phase=IDLE if more else DONE, op_index=w.op_index + 1,
                       history=w.history + (record,), **_CLEARED)
        return self._put_writer(state, done, store, catalog)

    def _program_intent(self, w: WriterState, choice: int) -> Any:
        """The command the writer's program runs next: its next operation's, or for a streaming
        sink the next batch of its source (models/lifecycle.py)."""
        entries = self.programs[w.name].entries
        return entries[w.sink.next_batch if w.sink is not None else w.op_index][choice]

    def _sink_after(self, w: WriterState, outcome: str) -> tuple[str, Any]:
        """(phase, sink state) of a streaming sink whose commit ended with ``outcome``."""
        spec = self._sinks[w.name]
        if not isinstance(w.intent, life.SinkCommit):   # failed before it was a commit
            return CRASHED, life.crashed(w.sink)
        sink, down = life.finished(spec, w.sink, w.intent, committed=outcome == COMMITTED,
                                   skipped=outcome == NOOP)
        if down:
            return CRASHED, sink
        return (IDLE if sink.next_batch < len(self.programs[w.name].entries) else DONE), sink

    def _restart(self, state: State, w: WriterState, a: Action) -> State:
        """A failed streaming sink starts again (models/lifecycle.py ``restart``): from the
        checkpoint its restart restores, reading what it committed from the table's head;
        Flink first commits what that checkpoint holds and the table does not show."""
        spec = self._sinks[w.name]
        head = state.metadata
        sink, commit, failed = life.restart(spec, w.sink, spec.kinds[a.choice], head)
        if failed is not None:       # the job failed as it started: it is down again
            return self._put_writer(state, replace(w, sink=sink))
        if commit is None:
            more = sink.next_batch < len(self.programs[w.name].entries)
            return self._put_writer(state, replace(w, phase=IDLE if more else DONE, sink=sink))
        intent, operation = commit
        w = replace(w, phase=SCANNED, sink=sink, intent=intent, base_path=head.path,
                    base_snapshot_id=head.current_snapshot_id, operation=operation, attempt=0)
        state = self._put_writer(state, w)
        if self.config.fuse_local_steps:
            state = self._write(state, w, a)
        return state

    def _finish_groups(self, state: State, w: WriterState, ids: tuple, fails: tuple, store,
                       catalog) -> State:
        """The end of a command committed in several commits (doExecuteWithPartialProgress):
        it succeeds unless more than ``max_failed_groups`` of its commits failed, when Spark
        throws "partial-progress.enabled is true but N rewrite commits failed. This is more
        than the maximum allowed failures of M. ..." (reported with the first failure's
        outcome and check)."""
        whole = w.whole
        total = len(whole.groups)
        w = replace(w, operation=whole, whole=None, groups_left=(), group_ids=(),
                    group_failures=())
        last_id, last_seq = ids[-1] if ids else (None, None)
        all_ids = tuple(i for i, _ in ids)
        if len(fails) > whole.max_failed_groups:
            outcome, _, check = fails[0]
            # RewriteDataFilesSparkAction.doExecuteWithPartialProgress's RuntimeException
            message = (f"partial-progress.enabled is true but {len(fails)} rewrite commits "
                       f"failed. This is more than the maximum allowed failures of "
                       f"{whole.max_failed_groups}. Check the logs to determine why the "
                       f"individual commits failed. If this is persistent it may help to "
                       f"increase partial-progress.max-commits which will split the rewrite "
                       f"operation into smaller commits.")
            return self._finish(state, w, outcome, message, check, snapshot_id=last_id,
                                seq=last_seq, applied=bool(ids), store=store, catalog=catalog,
                                snapshot_ids=all_ids)
        message = None
        if fails:
            message = (f"partial progress: {len(fails)} of {total} rewrite commits failed: "
                       f"{fails[0][1]}")
        return self._finish(state, w, COMMITTED, message, None, snapshot_id=last_id,
                            seq=last_seq, applied=bool(ids), store=store, catalog=catalog,
                            snapshot_ids=all_ids)

    def _begin(self, state: State, w: WriterState, a: Action) -> State:
        intent = self._program_intent(w, a.choice)
        base = state.metadata
        if isinstance(intent, Operation):
            operation = intent
        else:
            if self.config.planner is None:
                raise StepError(f"{a}: writer {w.name} has a command but no engine profile")
            operation = self._plan(intent, state, base, w)
            if isinstance(operation, NothingToDo):
                scanned = replace(w, intent=intent, base_snapshot_id=base.current_snapshot_id)
                return self._finish(state, scanned, NOOP, str(operation))
            if isinstance(operation, ValidationFailed):
                # the engine refused the command as it began (ADD_FILES' duplicate check):
                # nothing was written, nothing committed
                scanned = replace(w, intent=intent, base_snapshot_id=base.current_snapshot_id)
                return self._finish(state, scanned, VALIDATION_FAILED, operation.message,
                                    operation.check)
        if w.sink is not None and not isinstance(intent, Operation):
            # a streaming sink commits its batch as its engine stamps it (models/lifecycle.py)
            intent, operation, sink = life.begin(self._sinks[w.name], w.sink, intent, operation)
            w = replace(w, sink=sink)
        if operation.kind == REWRITE_MANIFESTS and not operation.manifest_rewrite:
            # a raw rewrite_manifests is planned as Spark's action plans it: on the snapshot
            # it starts from (models/rewrite_manifests.py); nothing to rewrite, no commit
            groups = rwm_.plan_rewrite(state.store, base.current)
            if not groups:
                scanned = replace(w, intent=intent, base_snapshot_id=base.current_snapshot_id)
                return self._finish(state, scanned, NOOP, "rewrite_manifests finds no manifests "
                                                          "to rewrite")
            operation = replace(operation, manifest_rewrite=groups)
        head = base.latest_snapshot(operation.branch)
        operation = clock_.at_begin(operation, state.store)   # the tick it was called at
        w = replace(w, phase=SCANNED, intent=intent, base_path=base.path,
                    base_snapshot_id=head.snapshot_id if head else None, operation=operation,
                    attempt=0)
        if operation.groups:
            # committed group by group (partial progress); the writer writes every file first
            w = replace(w, operation=operation.groups[0], groups_left=operation.groups[1:],
                        whole=operation)
        try:
            # the ref preconditions Java checks while the operation is built (models/refs.py)
            refs_.check_target_branch(base, operation.branch)
            if operation.kind in REF_KINDS:
                refs_.update_refs(base, operation)
            if operation.kind == TRANSACTION:
                # each staged operation's commit() inside the transaction applies it to the
                # transaction's metadata, validating it there (BaseTransaction); its filter
                # managers keep what they decided for the re-application
                caches: list[dict] = [{} for _ in operation.ops]
                txn_.apply_transaction(txn_.with_files(state.store, operation), self._table_at,
                                       base, operation, first_snapshot_id=0,
                                       writer_name=w.name, metadata_path="(transaction)",
                                       starting_id=w.base_snapshot_id, caches=caches)
                w = replace(w, filter_cache=_freeze_caches(caches))
        except ValidationFailed as e:
            return self._finish(state, w, VALIDATION_FAILED, e.message, e.check)
        state = self._put_writer(state, w)
        if self.config.fuse_local_steps and not (self._split_write and _reads_late(w)) \
                and operation.kind != REMOVE_ORPHAN_FILES:
            state = self._write(state, w, a)
        return state

    def _plan(self, intent: Any, state: State, base: TableMetadata,
              w: WriterState) -> "Operation | NothingToDo | ValidationFailed":
        """The planner's operation (or its NothingToDo), memoised: a planner reads the command,
        the writer's name and operation number, the base metadata and the objects it reaches
        (immutable, named by path) and which of them were deleted, nothing else. The base is
        keyed by identity (a metadata object is shared by every state that descends from the
        one that wrote it, with the objects it reaches), and the memo keeps it alive so that
        its id is never reused."""
        key = (id(intent), w.name, w.op_index, id(base), state.store.deleted)
        got = self._plans.get(key)
        if got is not None and got[0] is base and got[1] is intent:
            return got[2]
        try:
            result = self.config.planner(intent, state=state, base=base, writer=w,
                                         table=self._table_at(base))
        except (NothingToDo, ValidationFailed) as e:
            result = e
        self._plans[key] = (base, intent, result)
        return result

    def _write(self, state: State, w: WriterState, a: Action) -> State:
        op = w.whole or w.operation
        if op.kind == REMOVE_ORPHAN_FILES:
            return self._remove_orphans(state, w)
        if state.store.deleted and _reads_late(w):
            # An engine reads the data files it rewrites (and a copy-on-write MERGE its whole
            # target) while its tasks run: after planning, before the commit. One that expiry
            # deleted meanwhile fails the job (Spark: Iceberg's NotFoundException "File does not
            # exist", observed; scenario spark-expire-retain-last-stale-writer). A Java API user's
            # raw operation already has its files and reads nothing, and PyIceberg (which swaps
            # its first attempt against the metadata it began at: validate_on_first_attempt
            # false) read and wrote everything as it staged the transaction, when it began.
            gone = [p for p in _files_read_late(op) + _merge_scan(state.store, w, self.table.spec)
                    if p in state.store.deleted]
            if gone:
                return self._finish(state, w, READ_FAILED, f"File does not exist: {gone[0]}",
                                    "not_found")
        shared = _shared_path(w)
        if shared is not None and shared in state.store.deleted and \
                any(f.path == shared for f in op.add_data):
            # PyIceberg's add_files reads the file's Parquet footer as it stages the append
            # (_parquet_files_to_data_files): one an expiry deleted fails it, FileNotFoundError
            # (observed on PyIceberg 0.12.0); a file is never written again under a path
            return self._finish(state, w, READ_FAILED, f"File does not exist: {shared}",
                                "not_found")
        if w.sink is not None:
            # the batch's files, then Flink's checkpoint of them (models/lifecycle.py)
            files = {f.path: f for f in life.written_files(w.sink)}
            sink = life.checkpointed(self._sinks[w.name], w.sink, w.intent)
            return self._put_writer(state, replace(w, phase=WRITTEN, sink=sink),
                                    store=state.store.put_all(files))
        files = {f.path: f for f in op.add_data + op.add_deletes}
        return self._put_writer(state, replace(w, phase=WRITTEN), store=state.store.put_all(files))

    def _refresh(self, state: State, w: WriterState, a: Action) -> State:
        pointer = state.catalog.pointer
        if w.sink is not None and w.attempt == 0:
            # a streaming sink decides whether the batch is already committed (Flink from what
            # it remembers, Spark from the table's summaries: models/lifecycle.py)
            skip = life.skip_message(self._sinks[w.name], w.sink, w.intent,
                                     state.metadata_at(pointer))
            if skip is not None:
                return self._finish(state, w, NOOP, skip)
        if w.attempt == 0 and not w.operation.validations.validate_on_first_attempt \
                and not w.operation.no_snapshot:
            # PyIceberg: the first attempt swaps against the metadata it started from, with no
            # refresh (and so no validation); only a lost race makes it refresh and validate.
            pointer = w.base_path
        if w.phantom_id is not None and w.operation.validations.idempotent_retry:
            landed = state.metadata_at(pointer).snapshot(w.phantom_id)
            if landed is not None:
                # PyIceberg's Transaction.commit_transaction: after a CommitFailedException it
                # refreshes and, when every producer's (stable) snapshot id is in the table,
                # "A previous attempt actually landed even though it was reported as failed ...
                # Stop here instead of committing the same data again."
                return self._finish(state, w, COMMITTED, None, snapshot_id=w.phantom_id,
                                    seq=landed.sequence_number, applied=True)
        if w.operation.kind in REF_KINDS:
            # BaseTransaction.applyUpdates: the ref update was built on the metadata the writer
            # began with; any other metadata fails it ("Table metadata refresh is required")
            if pointer != w.base_path:
                return self._finish(state, w, COMMIT_FAILED, refs_.REFRESH_REQUIRED, "commit")
            if refs_.changes_nothing(state.metadata_at(pointer), w.operation):
                # commitSimpleTransaction: "if there were no changes, don't try to commit"
                return self._finish(state, w, COMMITTED, None)
        w = replace(w, phase=REFRESHED, refreshed_path=pointer)
        state = self._put_writer(state, w)
        if self.config.fuse_local_steps:
            state = self._validate(state, w, a)
            w = state.writer(w.name)
            if w.phase == VALIDATED:
                state = self._write_metadata(state, w, a)
        return state

    def _table_at(self, meta: TableMetadata) -> TableConfig:
        """The table as ``meta`` has it: its format version may have been upgraded since the
        table was created (UPGRADE_FORMAT); engines plan, and Java validates, by the metadata."""
        if meta.format_version == self.table.format_version:
            return self.table
        return replace(self.table, format_version=meta.format_version)

    def _starting_id(self, w: WriterState) -> int | None:
        return w.base_snapshot_id if w.operation.validations.from_snapshot else None

    def _validate(self, state: State, w: WriterState, a: Action) -> State:
        op = w.operation
        if op.kind in REF_KINDS:  # checked when built, on this same metadata
            return self._put_writer(state, replace(w, phase=VALIDATED))
        if op.kind == REWRITE_MANIFESTS:
            # BaseRewriteManifests.apply validates the deleted manifests: in _write_metadata
            return self._put_writer(state, replace(w, phase=VALIDATED))
        if op.kind == TRANSACTION:
            # applyUpdates validates each staged operation as it re-applies it, on the
            # refreshed metadata plus the operations before it: done in _write_metadata
            return self._put_writer(state, replace(w, phase=VALIDATED))
        if op.kind == UPGRADE_FORMAT:
            base = state.metadata_at(w.refreshed_path)
            if op.format_version < base.format_version:
                # TableMetadata.Builder.upgradeFormatVersion's precondition (an
                # IllegalArgumentException, never retried)
                return self._finish(state, w, VALIDATION_FAILED,
                                    f"Cannot downgrade v{base.format_version} table to "
                                    f"v{op.format_version}", "format_downgrade")
            return self._put_writer(state, replace(w, phase=VALIDATED))
        if op.kind == EXPIRE_SNAPSHOTS:
            # RemoveSnapshots.internalApply's precondition on the refreshed metadata
            try:
                exp.expire(state.metadata_at(w.refreshed_path), op.expire, "", op.retain_last,
                           **clock_.expiry(op, state.store))
            except ValidationFailed as e:
                return self._finish(state, w, VALIDATION_FAILED, e.message, e.check)
            return self._put_writer(state, replace(w, phase=VALIDATED))
        if op.validations.validate_on_first_attempt or w.attempt > 0 or op.no_snapshot:
            base = state.metadata_at(w.refreshed_path)
            if op.validations.pyiceberg_validation and w.base_snapshot_id is not None \
                    and base.snapshot(w.base_snapshot_id) is None:
                # PyIceberg's retry (Transaction._rebuild_snapshot_updates) and its empty staged
                # output resolve the commit window on the refreshed metadata first, for every
                # producer, a plain append too: CommitWindow.resolve raises "Cannot find starting
                # snapshot {id}" once the snapshot the writer began at was expired (scenario
                # commands/mixed-pyiceberg-append-retry-starting-snapshot-expired, agreed on real
                # Spark + PyIceberg)
                return self._finish(state, w, VALIDATION_FAILED,
                                    f"{PY_NO_STARTING_SNAPSHOT}{w.base_snapshot_id}", "history",
                                    store=self._clean_all(state, w),
                                    snapshot_id=w.phantom_id, applied=w.phantom_id is not None)
            try:
                validate_operation(state.store, self._table_at(base), base, op,
                                   self._starting_id(w))
            except ValidationFailed as e:
                return self._finish(state, w, VALIDATION_FAILED, e.message, e.check,
                                    store=self._clean_all(state, w),
                                    snapshot_id=w.phantom_id, applied=w.phantom_id is not None)
        if op.no_snapshot:
            # PyIceberg's commit_transaction with an empty staged output: the refreshed window
            # validated, nothing to swap ("run concurrency validation explicitly before
            # reporting success")
            return self._finish(state, w, NOOP, "matches no row: validated, no snapshot")
        return self._put_writer(state, replace(w, phase=VALIDATED))

    def _write_metadata(self, state: State, w: WriterState, a: Action) -> State:
        base = state.metadata_at(w.refreshed_path)
        w, n, path, tag = self._attempt_names(w, base)
        snapshot_id = w.slot * 1000 + n
        if w.operation.kind == TRANSACTION:
            return self._write_transaction(state, w, base, path, n, tag)
        if w.phantom_id is not None and base.snapshot(w.phantom_id) is not None:
            # SnapshotProducer.commit: apply() reuses the snapshot id, and "if
            # (base.snapshot(newSnapshot.snapshotId()) != null) { // this is a rollback
            # operation update.setBranchSnapshot(...)": no change when it is still the head (the
            # commit succeeds with the applied snapshot), else main is set back to it
            phantom = base.snapshot(w.phantom_id)
            if base.current_snapshot_id == w.phantom_id:
                return self._finish(state, w, COMMITTED, None, snapshot_id=w.phantom_id,
                                    seq=phantom.sequence_number, applied=True)
            meta = TableMetadata(path, base.version + 1, base.format_version,
                                 base.last_sequence_number, w.phantom_id, base.snapshots,
                                 base.snapshot_log + (w.phantom_id,), base.refs)
            w = replace(w, phase=PREPARED, pending_path=path, pending_snapshot_id=w.phantom_id)
            return self._put_writer(state, w, store=state.store.put_all({path: meta}))
        operation = w.operation
        if operation.kind == REWRITE_MANIFESTS:
            try:
                meta, objects = rwm_.apply_rewrite(state.store, base, operation.manifest_rewrite,
                                                   snapshot_id=snapshot_id, writer_name=w.name,
                                                   metadata_path=path, tag=tag)
            except ValidationFailed as e:
                return self._finish(state, w, VALIDATION_FAILED, e.message, e.check)
            w = replace(w, phase=PREPARED, pending_path=path, pending_snapshot_id=snapshot_id)
            return self._put_writer(state, w, store=state.store.put_all(objects))
        if operation.kind == CHERRY_PICK:
            try:
                how, what = pick_.plan_pick(state.store, base, operation.pick)
            except ValidationFailed as e:
                return self._finish(state, w, VALIDATION_FAILED, e.message, e.check)
            except pick_.NotModelled as e:
                raise StepError(f"{a}: {e}") from None
            if how == pick_.FAST_FORWARD:
                # no new snapshot: main moves to the picked one, which stays its committer's
                # (the model's snapshot log is its commit order, for ordinals: no entry)
                meta = replace(base, path=path, version=base.version + 1,
                               current_snapshot_id=what.snapshot_id)
                w = replace(w, phase=PREPARED, pending_path=path, pending_snapshot_id=None)
                return self._put_writer(state, w, store=state.store.put_all({path: meta}))
            picked, files = what
            # the picked append's data files, added again as a merging append on main
            operation = Operation(APPEND, add_data=files, source_snapshot_id=picked.snapshot_id)
        if w.operation.kind in METADATA_KINDS + REF_KINDS:
            if w.operation.kind == EXPIRE_SNAPSHOTS:
                meta = exp.expire(base, w.operation.expire, path, w.operation.retain_last,
                                  **clock_.expiry(w.operation, state.store))
            elif w.operation.kind == UPGRADE_FORMAT:
                # PropertiesUpdate.commit: replaceProperties on each attempt's refreshed metadata
                # (TableMetadata.Builder.upgradeFormatVersion; the same version changes nothing)
                meta = replace(base, path=path, version=base.version + 1,
                               format_version=max(base.format_version,
                                                  w.operation.format_version))
            else:
                meta = refs_.apply_refs(base, w.operation, path)
            w = replace(w, phase=PREPARED, pending_path=path, pending_snapshot_id=None)
            return self._put_writer(state, w, store=state.store.put_all({path: meta}))
        limit = operation.validations.max_format_version
        if limit is not None and base.format_version > limit:
            # PyIceberg 0.12 (profile key max_format_version) writes v1 and v2 manifests and
            # manifest lists only (pyiceberg/manifest.py, write_manifest:1297-1302 and
            # write_manifest_list:1432-1439 raise ValueError for any other version): a snapshot
            # of data files fails at its manifest, one with none at its manifest list. PyIceberg
            # fails as it stages the snapshot, before any commit; nothing reaches the table in
            # between, and the model refuses it here, not retried (its catalog could not write
            # v3 metadata either: TableMetadataV3.model_dump_json raises NotImplementedError)
            what = "manifest" if operation.add_data or operation.delete_data else "manifest list"
            return self._finish(state, w, VALIDATION_FAILED,
                                f"Cannot write {what} for table version: {base.format_version}",
                                "format_unsupported")
        try:
            start_id = self._starting_id(w)
            start_seq = None
            if start_id is not None and w.base_path is not None:
                began = state.metadata_at(w.base_path).snapshot(start_id)
                start_seq = began.sequence_number if began is not None else None
            cache = dict(w.filter_cache[0]) if w.filter_cache else {}
            reads = state.store
            if w.attempt == 0 and not operation.validations.validate_on_first_attempt \
                    and w.refreshed_path == w.base_path:
                # PyIceberg's first attempt is the snapshot it staged when it began (manifests
                # and manifest list written inside the transaction's ``with`` block), from what
                # the base reached then: an expiry since cannot fail it (every object of the
                # base is in the archive; scenario commands/mixed-pyiceberg-append-retry-
                # starting-snapshot-expired, agreed on real Spark + PyIceberg)
                reads = state.store.archive()
            produced = produce_snapshot(reads, self._table_at(base), base, operation,
                                        snapshot_id=snapshot_id, writer_name=w.name,
                                        metadata_path=path, starting_id=start_id,
                                        starting_sequence=start_seq, filter_cache=cache,
                                        tag=tag)
        except ValidationFailed as e:
            return self._finish(state, w, VALIDATION_FAILED, e.message, e.check)
        w = replace(w, pending_cache=_freeze_caches([cache]))
        written = w.written
        if self.config.phantom_failures:  # only needed for the clean-up after a phantom failure
            written += tuple(p for p, o in produced.objects if not isinstance(o, TableMetadata))
        w = replace(w, phase=PREPARED, pending_path=path, pending_snapshot_id=snapshot_id,
                    written=written)
        return self._put_writer(state, w, store=state.store.put_all(dict(produced.objects)))

    def _attempt_names(self, w: WriterState, base: TableMetadata
                       ) -> tuple[WriterState, int, str, str]:
        """(the writer, ``n``, the attempt's metadata file name, the tag its manifests and
        manifest list are named with, ``metadata.attempt_prefix``) of the metadata write about
        to happen: the operation's snapshot is ``slot * 1000 + n`` (a transaction's ``n``,
        ``n + 1``, ...). An operation's first attempt takes new ids (``ids_taken``); its
        retries keep them, as the engines do: Java's SnapshotProducer caches ``snapshotId()``
        across the attempts of ``commit()`` (a snapshot that lost its race is applied again
        under the same id), and PyIceberg's ``_SnapshotProducer._refresh_for_retry`` keeps
        ``_snapshot_id`` ("kept stable across attempts so it acts as an idempotency key").

        Each attempt writes new files, named after the snapshot id and the version of the
        metadata file the attempt writes (``v<version>-<writer>-<n>.metadata.json``,
        ``snap-<id>-v<version>.avro``, ``snap-<id>-v<version>-m<k>.avro``): where the
        table's version only rises (``_versions_rise``), a retry follows a swap that moved the
        version on (another writer's, or its own applied one), so its version is new. Named
        after the version, not the attempt, a commit made after lost races writes what the
        same commit made at once writes, and the two states differ only in what the lost
        attempts left (left out of fingerprints) and the count of attempts (issue 44).
        Where a swap can set the version back (a last-writer-wins catalog, catalog clients),
        a retry may write a version an earlier attempt of its operation wrote: a retry is
        named after its attempt too there (``v3-2``). Names are a function of the writer and
        the metadata it refreshed to, as the step memo requires (``_step_key``)."""
        span = len(w.operation.ops) if w.operation.kind == TRANSACTION else 1
        version = base.version + 1
        if w.attempt == 0:
            n = w.ids_taken + 1
            w = replace(w, ids_taken=w.ids_taken + span)
        else:
            n = w.ids_taken - span + 1
        if w.attempt and not self._versions_rise:
            tag = f"v{version}-{w.attempt + 1}"
            return w, n, f"v{version}-{w.name}-{n}-{w.attempt + 1}.metadata.json", tag
        return w, n, f"v{version}-{w.name}-{n}.metadata.json", f"v{version}"

    def _write_transaction(self, state: State, w: WriterState, base: TableMetadata, path: str,
                           n: int, tag: str) -> State:
        """commitSimpleTransaction's applyUpdates: every staged operation re-applied, in
        order, on the refreshed metadata; one metadata file, one swap (models/transaction.py).
        Its snapshots take ids ``slot * 1000 + n``, ``+ 1``, ... (``_attempt_names``: the
        first attempt takes one id per staged operation, and the retries keep them)."""
        op = w.operation
        if w.phantom_id is not None and base.snapshot(w.phantom_id) is not None:
            return self._reapply_applied_transaction(state, w, base, path, n)
        first = w.slot * 1000 + n
        caches = [dict(c) for c in w.filter_cache] or [{} for _ in op.ops]
        try:
            meta, objects, ids = txn_.apply_transaction(
                state.store, self._table_at, base, op, first_snapshot_id=first,
                writer_name=w.name, metadata_path=path, starting_id=w.base_snapshot_id,
                caches=caches, tag=tag)
        except ValidationFailed as e:
            return self._finish(state, w, VALIDATION_FAILED, e.message, e.check)
        written = w.written
        if self.config.phantom_failures:  # only needed for the clean-up after a phantom failure
            written += tuple(p for p, o in objects.items() if not isinstance(o, TableMetadata))
        w = replace(w, phase=PREPARED, pending_path=path, pending_snapshot_id=ids[-1],
                    pending_cache=_freeze_caches(caches),
                    written=written)
        return self._put_writer(state, w, store=state.store.put_all(objects))

    def _reapply_applied_transaction(self, state: State, w: WriterState, base: TableMetadata,
                                     path: str, n: int) -> State:
        """The retry of a transaction whose swap the catalog applied while answering
        CommitFailedException. commitSimpleTransaction's applyUpdates finds the table moved and
        re-commits every staged update on the refreshed metadata; each is a SnapshotProducer
        whose snapshot id is cached, so ``apply()`` validates it against the transaction's
        metadata (its own snapshots included: it can conflict with itself) and its commit()
        takes the rollback branch (``base.snapshot(id) != null``: ``setBranchSnapshot(id)``),
        one staged update after the other: main ends at the last one's snapshot, and a commit
        another writer made on top in between is dropped. A ValidationException ends the
        transaction, and its clean-up (cleanAll of every update) deletes what its attempts
        wrote, the applied snapshots' manifest lists included."""
        op = w.operation
        ids = self._transaction_ids(w, w.phantom_id)
        meta = base
        for sub, sid in zip(op.ops, ids):
            start = w.base_snapshot_id if sub.validations.from_snapshot else None
            try:
                validate_operation(state.store, self._table_at(meta), meta, sub, start)
            except ValidationFailed as e:
                return self._finish(state, w, VALIDATION_FAILED,
                                    e.message, e.check, store=self._clean_all(state, w),
                                    snapshot_id=w.phantom_id, applied=True, snapshot_ids=ids)
            if meta.current_snapshot_id != sid:
                meta = replace(meta, current_snapshot_id=sid,
                               snapshot_log=meta.snapshot_log + (sid,))
        last = base.snapshot(ids[-1])
        if meta is base:      # one staged update, still the head: nothing to change
            return self._finish(state, w, COMMITTED, None, snapshot_id=ids[-1],
                                seq=last.sequence_number, applied=True, snapshot_ids=ids)
        meta = replace(meta, path=path, version=base.version + 1)
        w = replace(w, phase=PREPARED, pending_path=path, pending_snapshot_id=ids[-1])
        return self._put_writer(state, w, store=state.store.put_all({path: meta}))

    def _swap(self, state: State, w: WriterState) -> cat.SwapResult:
        base = state.metadata_at(w.refreshed_path)
        new = state.metadata_at(w.pending_path)
        client = self._clients.get(w.name)
        if client is None:
            return cat.swap(self.config.catalog, state.catalog, base.path, base.version,
                            new.path, new.version)
        return clients_.swap(client.kind, state.catalog, base.path, base.version, new.path,
                             new.version, locked=w.phase == LOCKED)

    def _cas(self, state: State, w: WriterState, a: Action) -> State:
        result = self._swap(state, w)
        new = state.metadata_at(w.pending_path)
        if not result.applied and result.message is None:
            # a locking Hive writer's check passed: it holds the lock until its write
            return self._put_writer(state, replace(w, phase=LOCKED))
        if result.applied:
            store = None
            if w.operation.kind == EXPIRE_SNAPSHOTS:
                # RemoveSnapshots.cleanExpiredSnapshots: ReachableFileCleanup after the commit
                base = state.metadata_at(w.refreshed_path)
                store = state.store.delete_all(exp.files_to_delete(state.store, base, new))
                return self._finish(state, w, COMMITTED, None, applied=True,
                                    catalog=result.catalog, store=store)
            if w.operation.kind in REF_KINDS + (UPGRADE_FORMAT,) or (
                    w.operation.kind == CHERRY_PICK and w.pending_snapshot_id is None):
                return self._finish(state, w, COMMITTED, None, applied=True,
                                    catalog=result.catalog)
            snap = new.snapshot(w.pending_snapshot_id)  # a rollback keeps its old number
            seq = snap.sequence_number if snap is not None else new.last_sequence_number
            return self._finish(state, w, COMMITTED, None, snapshot_id=w.pending_snapshot_id,
                                seq=seq, applied=True, catalog=result.catalog,
                                snapshot_ids=self._transaction_ids(w))
        lost = self._lost_paths(state, w)
        if w.attempt < self._retries(w):
            retry = replace(w, phase=WRITTEN, attempt=w.attempt + 1, refreshed_path=None,
                            pending_path=None, pending_snapshot_id=None,
                            filter_cache=w.pending_cache or w.filter_cache, pending_cache=(),
                            lost=lost)
            return self._put_writer(state, retry)
        # retries exhausted: SnapshotProducer.commit's catch (CommitFailedException is a
        # CleanableFailure) runs cleanAll, which after a phantom failure deletes objects the
        # table references, as in _cas_applied_failed (``_clean_all``)
        return self._finish(state, replace(w, lost=lost), COMMIT_FAILED, result.message,
                            "commit", store=self._clean_all(state, w))

    def _lost_paths(self, state: State, w: WriterState) -> tuple[tuple[str, ...], ...]:
        """``w.lost`` once its pending attempt has lost its race (a plain swap the catalog
        refused): with the paths of what the attempt wrote, its metadata file and the manifest
        lists and manifests it reaches that the metadata it refreshed to does not. Nothing
        reads them again: the pointer never names this metadata file (each applied swap
        raises the version past it), so no reader reaches the version of the writer's
        snapshot it lists (the next attempt lists its own under the same id: lookups by id
        off the current metadata take the version written last, ``snapshots_by_id``), the
        next attempt writes under new names and reuses none of them (the filter cache keeps
        which files a manifest's filter removed, not what it wrote), and the clean-up of an
        attempt nothing committed is not modelled (``_clean_all``). Unchanged where
        ``_track_lost`` is off, and after a phantom failure (the writer's snapshot may be in
        the table)."""
        if not self._track_lost or w.phantom_id is not None or w.pending_path is None:
            return w.lost
        objs = state.store._objects
        new = objs.get(w.pending_path)
        base = objs.get(w.refreshed_path)
        if type(new) is not TableMetadata or type(base) is not TableMetadata:
            return w.lost
        old_lists = {s.manifest_list for s in base.snapshots}
        old_manifests: set | None = None
        out = [w.pending_path]
        for snap in new.snapshots:
            lpath = snap.manifest_list
            if lpath in old_lists or lpath in out:
                continue
            mlist = objs.get(lpath)
            if type(mlist) is not ManifestList:
                continue
            out.append(lpath)
            if old_manifests is None:
                old_manifests = {m for s in base.snapshots
                                 for m in getattr(objs.get(s.manifest_list), "manifests", ())}
            out.extend(m for m in mlist.manifests if m not in old_manifests
                       and type(objs.get(m)) is Manifest and m not in out)
        return w.lost + (tuple(out),)

    def doomed_swap(self, state: State, w: WriterState) -> bool:
        """Will ``w``'s next step, a plain ``cas``, lose its race whatever the other writers do
        first, and only send it back to try again? True when it is prepared, its swap fails
        now against a catalog already past the version it refreshed (each applied swap raises
        the version, so no later catalog can let it apply: a metadata path is never the
        pointer twice), it has retries left (the step finishes nothing: no history record, no
        file deleted, only its own phase and attempt change), and its catalog is the
        configuration's (a Hive client's locked two-step swap is not this). The partial-order
        reduction (``engines/por.py``, "Doomed swaps") explores such a step alone."""
        if w.phase != PREPARED or w.operation is None or w.name in self._clients:
            return False
        if w.attempt >= self._retries(w):
            return False
        base = state.metadata_at(w.refreshed_path)
        if state.catalog.version <= base.version:
            return False
        return not self._swap(state, w).applied

    @property
    def merges_losses(self) -> bool:
        """Does ``fingerprint_writers`` leave anything out in this configuration?"""
        return self._merge_losses

    def fingerprint_writers(self, state: State) -> tuple[WriterState, ...]:
        """``state``'s writers as the checker compares states (engines/symmetry.py), each
        without how many races it lost where that can no longer change what happens
        (``_merge_losses``; the writers themselves otherwise).

        What a lost race leaves a writer: ``attempt`` one higher, and the objects of the
        attempt (``lost``, already left out). Its snapshot keeps its id, and its next
        attempt's files are named after the version they write (``_attempt_names``). Two
        states that differ only in these, or in ``ids_taken``, behave alike, as far as any
        verdict can tell:

        * ``ids_taken`` names what the writer writes next (its next operation's snapshot
          ``slot * 1000 + ids_taken + 1``, and the files named after it), and ``attempt``
          does where an attempt's version was written before (``v3-2``): the two futures are
          the same up to a renaming of the writer's new names, which keeps their order (all
          above what it wrote before, below the next writer's ids), and no step or property
          reads a name for more than identity and order. ``ids_taken`` is left out (0) for
          every writer.
        * ``attempt`` is read as zero or not (PyIceberg's first attempt, the ``lost_race``
          event; a finished record's ``attempts`` is read as above one or not) and against
          the retry limit. A writer that lost at least once, and cannot lose enough further
          races to run out (``attempt + losses <= retries``), is left as ``attempt = -1``.
          Every race it loses from here needs another writer's applied swap after its
          refresh (a CAS or put-if-absent catalog refuses a swap only when the version moved
          on), one per loss (it refreshes after each), so ``losses`` is the other writers'
          program entries left (one swap each at most: the conditions of
          ``_merge_losses``), plus one when it holds a refresh another swap may already
          have made stale.

        The states merged this way are reached by paths of different lengths (each lost
        race is two more steps); the breadth-first search keeps the shallowest, so the
        shortest counterexamples stay the same (engines/por.py, "Lost races")."""
        ws = state.writers
        if not self._merge_losses:
            return ws
        # each writer's part of the decision, cached on it (``_twin_info``): the writers'
        # program entries left, summed, are all that is read of the state beyond them
        tag = self._actions_tag
        infos = []
        total = 0
        for w in ws:
            got = w.__dict__.get(_TWINS_ATTR)
            if got is None or got[0] is not tag:
                got = self._twin_info(w)
            infos.append(got)
            total += got[1]
        out = []
        for info in infos:
            slack = info[2]
            out.append(info[4] if slack is not None and total - info[1] <= slack else info[3])
        return tuple(out)

    def _twin_info(self, w: WriterState) -> tuple:
        """(this model's tag, the writer's program entries left, its slack: how many other
        writers' entries may be left for it to be merged with attempt -1, or None: never,
        itself as compared otherwise, itself as compared when merged), cached on the writer
        (``_TWINS_ATTR``; the tag: entries and retries are this model's)."""
        left = 0 if w.phase == DONE else len(self.programs[w.name].entries) - w.op_index
        slack = None
        if w.attempt > 0 and w.operation is not None:
            # safe iff attempt + (others' entries left) + (holds a refresh) <= retries
            slack = self._retries(w) - w.attempt - (w.refreshed_path is not None)
        plain = replace(w, ids_taken=0) if w.ids_taken else w
        merged = replace(w, attempt=-1, ids_taken=0) if slack is not None else None
        got = (self._actions_tag, left, slack, plain, merged)
        object.__setattr__(w, _TWINS_ATTR, got)
        return got

    def _retries(self, w: WriterState) -> int:
        """How many times the writer retries a lost swap: the table's
        commit.retry.num-retries when it sets it, else its engine's own default
        (``Profile.commit_retries``: iceberg-go's is 0), else Java's (4)."""
        own = w.operation.validations.commit_retries if w.operation is not None else None
        if own is None or self._table_retries:
            return self.table.max_retries
        return own

    @staticmethod
    def _transaction_ids(w: WriterState, last: int | None = None) -> tuple[int, ...]:
        """The ids of a transaction's snapshots, ending at ``last`` (default: the pending
        snapshot's); () for one operation. A transaction's ids are consecutive
        (_write_transaction)."""
        last = w.pending_snapshot_id if last is None else last
        if w.operation.kind != TRANSACTION or last is None:
            return ()
        return tuple(range(last - len(w.operation.ops) + 1, last + 1))

    def _clean_all(self, state: State, w: WriterState):
        """SnapshotProducer.cleanAll (on a ValidationException or exhausted retries): delete every
        manifest list and new manifest the operation's attempts wrote. Modelled only after a
        phantom failure, the one case where it deletes objects the table references; the
        clean-up of attempts nothing committed changes nothing a reader sees and is left out."""
        if w.phantom_id is None or not w.written:
            return None
        return state.store.delete_all(w.written)

    def _cas_applied_failed(self, state: State, w: WriterState, a: Action) -> State:
        result = self._swap(state, w)
        phantom = w.pending_snapshot_id if result.applied else w.phantom_id
        if w.attempt < self._retries(w):
            retry = replace(w, phase=WRITTEN, attempt=w.attempt + 1, refreshed_path=None,
                            pending_path=None, pending_snapshot_id=None, phantom_id=phantom,
                            filter_cache=w.pending_cache or w.filter_cache, pending_cache=())
            return self._put_writer(state, retry, catalog=result.catalog)
        w = replace(w, phantom_id=phantom)
        return self._finish(state, w, COMMIT_FAILED, "CommitFailedException (the swap applied)",
                            "commit", snapshot_id=w.pending_snapshot_id, applied=result.applied,
                            store=self._clean_all(state, w), catalog=result.catalog)

    def _cas_reply_lost(self, state: State, w: WriterState, a: Action) -> State:
        result = self._swap(state, w)
        new = state.metadata_at(w.pending_path)
        snap = new.snapshot(w.pending_snapshot_id)  # a rollback keeps its old number (_cas)
        seq = snap.sequence_number if snap is not None else new.last_sequence_number
        return self._finish(state, w, COMMIT_UNKNOWN, "Commit status unknown: reply lost",
                            "commit", snapshot_id=w.pending_snapshot_id,
                            seq=seq, applied=result.applied,
                            catalog=result.catalog, snapshot_ids=self._transaction_ids(w))

    def _cas_not_applied(self, state: State, w: WriterState, a: Action) -> State:
        return self._finish(state, w, COMMIT_UNKNOWN, "Commit status unknown: no reply", "commit",
                            snapshot_id=w.pending_snapshot_id, applied=False,
                            snapshot_ids=self._transaction_ids(w))

    def _crash(self, state: State, w: WriterState, a: Action) -> State:
        if not w.active:
            # a streaming sink that fails between commits, or after its last one (a streaming
            # job keeps running): nothing in flight (models/lifecycle.py)
            return self._put_writer(state, replace(w, phase=CRASHED,
                                                   sink=life.crashed(w.sink, a.choice)))
        # a partial-progress compaction keeps the commits it made before the crash
        last_id, last_seq = w.group_ids[-1] if w.group_ids else (None, None)
        applied = bool(w.group_ids)
        ids = tuple(i for i, _ in w.group_ids)
        if w.phantom_id is not None:
            # an attempt the catalog applied while answering CommitFailedException (never with
            # partial progress): the writer dies believing it failed, but its snapshot became
            # the pointer and stays in the table unless a later commit rolled it back
            # (``_with_phantom``). Nothing of the table's head is read: CRASH is not in
            # READS_HEAD, so the step memo replays a crash on every state that agrees on the
            # writer (until issue 45 the record took the phantom's sequence number from the
            # head, and a replayed crash carried another state's: a false metadata_integrity
            # "told sequence number" that its trace did not reproduce)
            last_id, last_seq, applied, ids = _with_phantom(w, last_id, last_seq, applied, ids)
        record = OpRecord(w.op_index, w.intent, w.whole or w.operation, CRASHED,
                          f"crashed while {w.phase}", None, w.base_snapshot_id, last_id,
                          last_seq, w.attempt + 1, applied, ids)
        if w.sink is not None:
            # a streaming sink is restarted (RESTART): its next operation is a new one
            crashed = replace(w, phase=CRASHED, op_index=w.op_index + 1,
                              history=w.history + (record,), sink=life.crashed(w.sink),
                              **_CLEARED)
            return self._put_writer(state, crashed)
        crashed = replace(w, phase=CRASHED, history=w.history + (record,))
        return self._put_writer(state, crashed)

    # -- helpers for engines --------------------------------------------------------------
    def run_writer(self, state: State, name: str, *, stop_before: str | None = None) -> State:
        """Run writer ``name`` alone through its phases until its current operation ends."""
        start = len(state.writer(name).history)
        while True:
            w = state.writer(name)
            if len(w.history) > start or not w.active:
                return state
            kind = NEXT_PHASE_ACTION[w.phase]
            if kind == stop_before:
                return state
            state = self.step(state, Action(name, kind))

    def is_final(self, state: State) -> bool:
        return not self.actions(state)

    # -- time (models/clock.py, models/orphans.py) ---------------------------------------
    def _with_tick(self, part: tuple) -> tuple:
        """``part`` with the clock's tick after it: one tuple per part, kept (a checker keys
        memos by the identity of a state's parts)."""
        got = self._tick_parts.get(part)
        if got is None:
            got = self._tick_parts[part] = part + (Action(clock_.CLOCK, TICK),)
        return got

    def _tick(self, state: State, action: Action) -> State:
        """The clock advances one tick (models/clock.py): enabled while fewer than
        ``ModelConfig.ticks`` have passed, some writer has a step left and none is inside a
        commit attempt."""
        if action != Action(clock_.CLOCK, TICK) or action not in self.actions(state):
            raise StepError(f"{action} is not enabled: the clock is at tick "
                            f"{state.store.now} of {self._ticks}; it advances only while a "
                            f"writer has a step left and none is inside a commit attempt "
                            f"(from its refresh to its swap)")
        return _new_state(state.catalog, clock_.advance(state.store), state.writers)

    def _remove_orphans(self, state: State, w: WriterState) -> State:
        """DeleteOrphanFilesSparkAction.doExecute (models/orphans.py): list the table location,
        keep what the metadata loaded when the procedure began references (``w.base_path``,
        held in memory), delete every other file older than the cut-off. No snapshot, no
        swap: the operation ends ``committed`` with the orphans it deleted named."""
        meta = state.metadata_at(w.base_path)
        gone = orphans_.orphans(state.store, meta, clock_.cutoff(w.operation))
        return self._finish(state, w, COMMITTED, orphans_.report(gone),
                            store=state.store.delete_all(gone) if gone else None)
