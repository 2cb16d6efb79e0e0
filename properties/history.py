"""The committed history of a state, as the properties see it.

* the *lineage*: the current snapshot and its ancestors, oldest first (the table's committed
  versions);
* one ``Op`` per finished operation of every writer (plus one per setup commit), with where it
  read (its base snapshot) and, if its snapshot is on the lineage, where it landed;
* rows of any snapshot, read once per evaluation.

Snapshot ids are unique within one state (writer slot * 1000 + the writer's count of ids taken;
setup commits are 1..n) but for the attempts of one snapshot: a snapshot keeps its id across its
commit attempts, and the metadata file of an attempt that lost its race, which no reader reaches,
lists another version of it. Lookups by id read the current metadata, or else the version
written last (``snapshots_by_id``: the committed one), so per-evaluation caches keyed by
snapshot id are sound.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

from icecheck.models.commands_spec import Command
from icecheck.models.filters import eval_row
from icecheck.models.metadata import Snapshot, TableMetadata, snapshots_by_id
from icecheck.models.reads import live_data_entries, live_delete_entries, read_rows
from icecheck.models.operations import TRANSACTION
from icecheck.models.system import COMMITTED, Model, OpRecord, State

SETUP = "setup"


@dataclass
class Op:
    """One operation: a writer's finished operation, or a setup commit."""

    label: str                 # "w1.1" (writer w1, its 1st operation), "setup.1"
    writer: str
    index: int
    record: OpRecord | None    # None for setup commits
    intent: Any                # a Command, or a raw Operation
    base_snapshot_id: int | None
    snapshot_id: int | None
    outcome: str
    position: int | None = None   # index in the lineage when its snapshot is on it
    sequence_number: int | None = None

    @property
    def kind(self) -> str:
        if isinstance(self.intent, Command):
            return self.intent.kind
        return getattr(self.intent, "kind", "?")

    @property
    def acknowledged(self) -> bool:
        return self.outcome == COMMITTED

    @property
    def on_lineage(self) -> bool:
        return self.position is not None

    def describe(self) -> str:
        return f"{self.writer} ({describe_intent(self.intent)})"


def where_selects(h: "History", op: Op | None, rows, kinds) -> bool | None:
    """Does the WHERE of ``op`` (a command of one of ``kinds``) select one of ``rows``? None
    when it is not such a command or has no WHERE (it reads whole keys or the whole table).
    What the isolation and undelete checks ask of a DELETE (UPDATE, overwrite by filter) and
    a row of its key another write left or added: a row its WHERE does not select is not one
    it read."""
    intent = getattr(op, "intent", None)
    if not isinstance(intent, Command) or intent.kind not in kinds or intent.where is None:
        return None
    schema = h.model.table.schema
    return any(eval_row(intent.where, schema.as_dict(tuple(r))) for r in rows)


def describe_intent(intent: Any) -> str:
    if isinstance(intent, Command) or hasattr(intent, "describe"):
        return str(intent)
    kind = getattr(intent, "kind", None)
    if getattr(intent, "ops", ()):
        return f"transaction of {', '.join(o.kind for o in intent.ops)}"
    return f"{kind} operation" if kind else repr(intent)


@dataclass
class History:
    model: Model
    state: State
    meta: TableMetadata
    lineage: list[Snapshot]                      # oldest first
    ops: list[Op]                                # every finished op (writers, then setup)
    lineage_ops: list[Op | None]                 # op of each lineage snapshot (None: unknown)
    by_snapshot: dict[int, Op]
    # snapshots a transaction produced before its last one: in the history (time travel reads
    # them) but never the table's current version, so the oracle does not judge them
    inner_ids: frozenset = frozenset()
    memo: Any = None             # an ``analysis.EvalMemo`` shared between evaluations, or None
    oracle_key: Any = None       # the memo's key of this history's oracle (``memo_oracle``)
    _snapshots: dict[int, Snapshot] | None = None
    _rows: dict[Any, list] = field(default_factory=dict)
    _rows_keys: dict[Any, tuple] = field(default_factory=dict)
    _ancestry: dict[Any, list] = field(default_factory=dict)

    @property
    def store(self):
        """Every object the run wrote, including those ExpireSnapshots deleted: the history of
        what was committed does not change when its files are cleaned up (the ``readable``
        property checks what is still there)."""
        return self.state.store.archive()

    @property
    def columns(self) -> tuple[str, ...]:
        return self.model.table.schema.names

    @property
    def committed_ops(self) -> list[Op]:
        """Operations whose commit took effect on the lineage, in commit (lineage) order."""
        return [op for op in self.lineage_ops if op is not None]

    def snapshot(self, snapshot_id: int | None) -> Snapshot | None:
        if snapshot_id is None:
            return None
        snap = self.meta.snapshot(snapshot_id)
        if snap is not None:
            return snap
        if self._snapshots is None:  # off-lineage (a lost commit): search every metadata file
            self._snapshots = snapshots_by_id(self.store)
        return self._snapshots.get(snapshot_id)

    def ancestry(self, snapshot_id: int | None) -> list[int]:
        """Snapshot ids from ``snapshot_id`` back to the root (newest first); computed once per
        snapshot of this history (the dependency graph asks once per key each operation
        read). Never modified by its readers."""
        got = self._ancestry.get(snapshot_id)
        if got is None:
            got = []
            snap = self.snapshot(snapshot_id)
            while snap is not None:
                got.append(snap.snapshot_id)
                snap = self.snapshot(snap.parent_id)
            self._ancestry[snapshot_id] = got
        return got

    def rows(self, snapshot_id: int | None) -> list:
        """Visible rows (RowVersion) of a snapshot, deletes applied; [] for the empty table.
        Shared through the memo (``by_files``). The list is never modified by its readers."""
        got = self._rows.get(snapshot_id)
        if got is None:
            snap = self.snapshot(snapshot_id)
            got = [] if snap is None else self.by_files(
                (), snapshot_id, read_rows, self.store, snap, self.columns)
            self._rows[snapshot_id] = got
        return got

    def rows_key(self, snapshot_id: int | None) -> tuple:
        """What ``read_rows`` reads of a snapshot, by content (``memo.content``): the
        manifests its manifest list names, in order, without their names (``_rows_key_of``).
        () for no snapshot."""
        got = self._rows_keys.get(snapshot_id)
        if got is None:
            # self.snapshot, with its commonest case inline: a snapshot the metadata lists
            snap = None if snapshot_id is None else self.meta._by_id.get(snapshot_id)
            if snap is None:
                snap = self.snapshot(snapshot_id)
            if snap is None:
                got = ()
            else:
                # cached on the snapshot object for this memo: a snapshot object reaches
                # objects of the same content in every state that holds it (it enters a store
                # with the manifest list written with it; models.system.Model._step_key)
                cached = snap.__dict__.get("_icecheck_rows_key")
                if cached is not None and cached[0] == self.memo.token:
                    got = cached[1]
                else:
                    got = _rows_key_of(snap, self.store.__getitem__, self.memo)
                    object.__setattr__(snap, "_icecheck_rows_key", (self.memo.token, got))
            self._rows_keys[snapshot_id] = got
        return got

    def self_contained(self) -> bool:
        """Every operation whose snapshot the history knows is on the lineage and read a base
        on the lineage (or the empty table): the dependency graph's data edges are then a
        function of the lineage, its operations and the oracle alone (``memo_oracle``'s key),
        since what each operation read is found walking back the lineage."""
        ids = {s.snapshot_id for s in self.lineage}
        return (all(op.on_lineage for op in self.by_snapshot.values())
                and all(op.base_snapshot_id is None or op.base_snapshot_id in ids
                        for op in self.committed_ops))

    def by_files(self, tag: tuple, snapshot_id: int | None, compute: Callable[..., Any],
                 *args) -> Any:
        """``compute(*args)``, a function of what a reader of the snapshot opens (``rows_key``) and
        of ``tag`` (what is computed from it): with a ``memo``, shared through its table of
        rows (``memo.rows``, by ``tag + rows_key``) with every evaluation that reads a
        snapshot of the same manifests. Its result is never modified by its readers."""
        if self.memo is None:
            return compute(*args)
        rows = self._rows_keys.get(snapshot_id)     # rows_key's cache, read inline
        key = tag + (rows if rows is not None else self.rows_key(snapshot_id))
        got = self.memo.rows.get(key)
        if got is None:
            got = self.memo.rows[key] = compute(*args)
        return got

    def file_facts(self, snapshot: Snapshot) -> tuple:
        """(the paths of the snapshot's live data files, does it have live delete files, is
        one a deletion vector, the paths its live delete files apply to): what the
        reachability events read of its files (``by_files``)."""
        return self.by_files(("facts",), snapshot.snapshot_id, _file_facts, self, snapshot)

    def live_files(self, snapshot: Snapshot):
        """(live data entries, live delete entries) of a snapshot of this history
        (``by_files``)."""
        return self.by_files(("live",), snapshot.snapshot_id, _live_files, self.store, snapshot)


def _rows_key_of(snap: Snapshot, get, memo) -> tuple:
    """``History.rows_key`` of ``snap``: the content of each manifest its manifest list names,
    in order, without the manifest's path ((None,) when the manifest list is gone; None for a
    manifest that is). What a reader of the snapshot gets (rows, live entries, the files'
    facts) comes from the manifests' entries; their names are only how they are found, and
    no property names a manifest. An attempt's manifests are named after the version it
    writes (models/metadata.py ``attempt_prefix``), so with paths in it the same commit made
    at another version (after lost races, or after another writer's commit) had another key,
    and every memo keyed by it missed (issue 44). Each manifest's key is cached on it, for
    this memo (``memo.token``)."""
    mlist = get(snap.manifest_list)
    if mlist is None:
        return (None,)
    token, content = memo.token, memo.content
    out = []
    for path in mlist.manifests:
        m = get(path)
        if m is None:
            out.append(None)
            continue
        got = m.__dict__.get("_icecheck_pf")
        if got is None or got[0] != token:
            got = (token, content(replace(m, path="")))
            object.__setattr__(m, "_icecheck_pf", got)
        out.append(got[1])
    return tuple(out)


def _live_files(store, snapshot: Snapshot) -> tuple:
    return live_data_entries(store, snapshot), live_delete_entries(store, snapshot)


def _file_facts(h: History, snapshot: Snapshot) -> tuple:
    data, deletes = h.live_files(snapshot)
    return (frozenset(e.file.path for e in data), bool(deletes),
            any(e.file.content == "dv" for e in deletes),
            frozenset(p for e in deletes for p in e.file.referenced_paths))


def _lineage(state: State, meta: TableMetadata) -> list[Snapshot]:
    """The current snapshot and its ancestors, oldest first. A snapshot that ExpireSnapshots
    removed from the metadata is still part of the history: it is found in the metadata file
    that listed it (metadata files are never deleted by expiry)."""
    out: list[Snapshot] = []
    index: dict[int, Snapshot] | None = None
    sid = meta.current_snapshot_id
    while sid is not None:
        snap = meta.snapshot(sid)
        if snap is None:
            if index is None:
                index = snapshots_by_id(state.store.archive())
            snap = index.get(sid)
            if snap is None:
                break
        out.append(snap)
        sid = snap.parent_id
    out.reverse()
    return out


def build_history(model: Model, state: State, memo: Any = None) -> History:
    meta = state.metadata
    lineage = _lineage(state, meta)
    ops: list[Op] = []
    by_snapshot: dict[int, Op] = {}
    inner: set[int] = set()
    for w in state.writers:
        for r in w.history:
            op = Op(f"{w.name}.{r.index + 1}", w.name, r.index, r, r.intent, r.base_snapshot_id,
                    r.snapshot_id, r.outcome, sequence_number=r.sequence_number)
            ops.append(op)
            if r.snapshot_id is not None and r.applied:
                by_snapshot.setdefault(r.snapshot_id, op)
                for sid in r.snapshot_ids[:-1]:   # a transaction's (or a partial-progress
                    by_snapshot.setdefault(sid, op)  # compaction's) earlier snapshots
                    if r.operation is not None and r.operation.kind == TRANSACTION:
                        inner.add(sid)
    setup_ops = model.config.setup
    lineage_ops: list[Op | None] = []
    for pos, snap in enumerate(lineage):
        op = by_snapshot.get(snap.snapshot_id)
        if op is None and snap.writer == SETUP and 1 <= snap.snapshot_id <= len(setup_ops):
            i = snap.snapshot_id
            op = Op(f"{SETUP}.{i}", SETUP, i - 1, None, setup_ops[i - 1],
                    snap.parent_id, snap.snapshot_id, COMMITTED)
            ops.append(op)
            by_snapshot[snap.snapshot_id] = op
        if op is not None and op.writer != snap.writer:
            op = None
        if op is not None:
            op.position = pos
            op.sequence_number = snap.sequence_number
        lineage_ops.append(op)
    return History(model, state, meta, lineage, ops, lineage_ops, by_snapshot, frozenset(inner),
                   memo)
