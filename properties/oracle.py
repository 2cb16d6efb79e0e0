"""The consistent-read oracle: what each committed version of the table should contain.

Each committed operation's *logical effect* is computed from the rows it read at its own base
snapshot (``OpRecord.base_snapshot_id``), as the engine computed it:

* DELETE removes the rows it matched; UPDATE replaces the rows it matched by their updated form;
  MERGE replaces the matched rows by their source row and inserts the source rows whose key it
  did not find: each sets the keys it touched to (their rows at its base) - removed + added;
  an insert-only MERGE (MERGE_INSERT) sets each key it did not find to its source row and reads
  (leaves) the keys it found;
* INSERT appends its rows (a blind write: it reads nothing);
* UPSERT (a streaming upsert sink's checkpoint) is blind too: at commit, every row of its keys
  goes (its equality deletes apply to all older data) and the last row it wrote per key stays,
  unless its changelog deleted that key after writing it;
* COMPACT (rewrite_data_files), or any raw RewriteFiles, changes nothing logically;
* overwrite(filter) / overwritePartitions() delete by predicate at commit time (what they replace
  is theirs to replace) and append their rows; so does Spark's metadata-only DELETE (a
  DeleteFiles whose row filter Java applies again to the head it commits on);
* a raw ``Operation`` intent: its effect is derived from its files (the base rows of the data
  files it deletes and of the positions / equality rows its delete files remove, and the rows of
  its added data files).

Folding the effects of the lineage's operations in commit order gives the expected rows of every
committed version, key by key; a key whose actual rows differ is a *mismatch*, classified as an
undelete, a lost write, duplicate keys, or (otherwise) a consistent-read violation.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from icecheck.models import operations as ops
from icecheck.models.commands_spec import (ADD_FILES, COMPACT, DELETE, INSERT, MERGE,
                                           MERGE_INSERT, OVERWRITE, OVERWRITE_FILES,
                                           OVERWRITE_PARTITIONS, REWRITE_MANIFESTS, UPDATE,
                                           UPSERT, Command)
from icecheck.models.files import EQUALITY_DELETES
from icecheck.models.lifecycle import SINK_COMMIT, SinkCommit
from icecheck.models.filters import And, Cmp, In, Or, eval_row

from .history import History, Op

BOTTOM = None  # the version of a key no committed operation has written yet


def _sorted(rows) -> tuple:
    return tuple(sorted(rows, key=repr))


@dataclass
class Effect:
    """An operation's logical effect, per key."""

    sets: dict = field(default_factory=dict)       # key -> new rows (() = the key is deleted)
    appends: dict = field(default_factory=dict)    # key -> rows appended blindly
    drop: Callable[[tuple], bool] | None = None    # commit-time predicate delete
    reads: dict = field(default_factory=dict)      # key -> was it present at the base
    inserted: set = field(default_factory=set)     # keys it added while they were absent at base
    deleted: set = field(default_factory=set)      # keys it deleted (present at base, now gone)
    logical_noop: bool = False                     # COMPACT / RewriteFiles
    # a blind write's rows per key it leaves (an UPSERT: () for a key it deletes); the effect
    # itself is ``drop`` + ``appends``, this only tells the isolation check what it wrote
    blind_sets: dict = field(default_factory=dict)


class KeyFn:
    """A row's identity: its key column, and on a table partitioned by identity transforms,
    also those partition columns.

    A key lives in one partition: rows ``(id 1, dt d1)`` and ``(id 1, dt d2)`` are two rows,
    and jobs that write partition by partition (a MERGE ... ON id restricted to
    ``dt = 'd1'``, another to ``dt = 'd2'``) touch different rows: real Spark commits both,
    and the table equals a serial order. Keying by ``id`` alone merged the two rows into one
    item and reported a duplicate key and a G-single cycle that do not exist
    (scenarios/builtin/regressions/merge-partition-scoped-where.yaml).
    """

    def __init__(self, columns: tuple[str, ...], key: str, scope: tuple[str, ...] = ()):
        self.keyed = key in columns
        self.key = key
        self.index = columns.index(key) if self.keyed else None
        self.columns = columns
        self.scope = tuple(c for c in scope if c != key and c in columns) if self.keyed else ()
        self.scope_index = tuple(columns.index(c) for c in self.scope)

    def __call__(self, row: tuple) -> Any:
        if not self.keyed:
            return row
        if not self.scope:
            return row[self.index]
        return (row[self.index],) + tuple(row[i] for i in self.scope_index)

    def looked(self, expr) -> set | None:
        """The identities a predicate looks up directly, or None."""
        keys = point_keys(expr, self.key)
        if keys is None or not self.scope:
            return keys
        import itertools
        parts = [point_keys(expr, c) for c in self.scope]
        if any(p is None for p in parts):
            return None
        return {(k,) + combo for k in keys for combo in itertools.product(*parts)}

    def text(self, k) -> str:
        if not self.keyed:
            return f"row {k!r}"
        if not self.scope:
            return f"{self.key}={k!r}"
        return f"{self.key}={k[0]!r} (" + ", ".join(f"{c}={v!r}" for c, v in
                                                    zip(self.scope, k[1:])) + ")"


def identity_partition_columns(table) -> tuple[str, ...]:
    return tuple(f.source for f in table.spec.fields if f.transform.kind == "identity")


def point_keys(expr, key: str):
    """Keys a predicate looks up directly (``id = 1``, ``id in (1, 2)``), or None."""
    if isinstance(expr, Cmp):
        return {expr.value} if expr.op == "=" and expr.column == key else None
    if isinstance(expr, In):
        return set(expr.values) if expr.column == key and not expr.negated else None
    if isinstance(expr, Or):
        a, b = point_keys(expr.left, key), point_keys(expr.right, key)
        return a | b if a is not None and b is not None else None
    if isinstance(expr, And):
        a, b = point_keys(expr.left, key), point_keys(expr.right, key)
        if a is not None and b is not None:
            return a & b
        return a if a is not None else b
    return None


def _set_effect(eff: Effect, kf: KeyFn, base_by_key: dict, removed: list, added: list) -> None:
    touched = {kf(r) for r in removed} | {kf(r) for r in added}
    rem = Counter((kf(r), r) for r in removed)
    for k in touched:
        left = []
        for r in base_by_key.get(k, ()):
            if rem[(k, r)] > 0:
                rem[(k, r)] -= 1
            else:
                left.append(r)
        new = left + [r for r in added if kf(r) == k]
        eff.sets[k] = _sorted(new)
        if not base_by_key.get(k):
            eff.inserted.add(k)
        elif not new:
            eff.deleted.add(k)


def memo_effect(h: History, op: Op, kf: KeyFn) -> Effect:
    """``effect_of``, shared between evaluations through the history's memo (when it has one):
    an effect is a function of the operation's intent, its planned operation (a metadata-only
    DELETE) and the rows of its base snapshot (``History.rows_key``), for a given table and
    key. A cherry-pick also reads the picked snapshot's files: never shared. Effects are not
    modified once built."""
    memo = h.memo
    intent = op.intent
    if memo is None or getattr(intent, "kind", None) in (ops.CHERRY_PICK, ADD_FILES, SINK_COMMIT):
        # (an ADD_FILES' effect reads the version it committed onto, not only its base; a
        # streaming sink's commit, what the sink delivered before it on the lineage)
        return effect_of(h, op, kf)
    content = memo.content
    planned = op.record.operation if op.record is not None else None
    key = (content(intent), None if planned is None else content(planned),
           h.rows_key(op.base_snapshot_id), kf.key, kf.scope)
    got = memo.effects.get(key)
    if got is None:
        got = memo.effects[key] = effect_of(h, op, kf)
    return got


def _parent_data_paths(h: History, op: Op) -> frozenset:
    """The live data file paths of the version ``op`` committed onto (the lineage's snapshot
    before its own; none for the first), or of its base when it is not on the lineage."""
    if op.position is not None:
        parent = h.lineage[op.position - 1] if op.position > 0 else None
    else:
        parent = h.snapshot(op.base_snapshot_id)
    return frozenset() if parent is None else h.file_facts(parent)[0]


def _delivered_before(h: History, op: Op) -> frozenset:
    """The batches of ``op``'s sink that commits before it on the lineage delivered."""
    end = op.position if op.position is not None else len(h.lineage_ops)
    out = set()
    for other in h.lineage_ops[:end]:
        intent = getattr(other, "intent", None)
        if isinstance(intent, SinkCommit) and intent.sink == op.intent.sink:
            out.update(intent.batches)
    return frozenset(out)


def effect_of(h: History, op: Op, kf: KeyFn) -> Effect:
    intent = op.intent
    eff = Effect()
    table = h.model.table
    schema = table.schema
    if isinstance(intent, SinkCommit):
        # exactly-once delivery: each batch of the sink's source appends its rows once; a
        # batch the sink already delivered on the lineage before this commit adds nothing, so
        # the table holding its rows again is a duplicate (models/lifecycle.py)
        before = _delivered_before(h, op)
        for batch, cmd in zip(intent.batches, intent.commands):
            if batch not in before:
                for r in cmd.rows:
                    eff.appends.setdefault(kf(r), []).append(tuple(r))
        return eff
    if isinstance(intent, Command):
        kind = intent.kind
        if intent.select is not None:
            # INSERT OVERWRITE t SELECT ... FROM t: read-modify-write (properties/rmw.py)
            from .rmw import rmw_effect
            return rmw_effect(h, op, kf, eff, _set_effect)
        if kind in (COMPACT, REWRITE_MANIFESTS):
            eff.logical_noop = True
            return eff
        if kind == INSERT:
            for r in intent.rows:
                eff.appends.setdefault(kf(r), []).append(tuple(r))
            return eff
        if kind == ADD_FILES:
            # the file's rows, appended; but with check_duplicate_files the engine refuses a
            # file the table already lists, so in a serial run an add_files committing onto a
            # version that lists its file would have failed: then it has no effect, and the
            # rows it read twice are a mismatch (the check ran only on its own base)
            if intent.check_duplicate_files and intent.file_path in _parent_data_paths(h, op):
                return eff
            planned = op.record.operation if op.record is not None else None
            if planned is not None and not planned.add_data:
                return eff      # the file was gone: Spark's procedure found none to add
            for r in intent.rows:
                eff.appends.setdefault(kf(r), []).append(tuple(r))
            return eff
        if kind == UPSERT:
            idx = [schema.index(c) for c in intent.on]
            final: dict = {}
            for r in intent.rows:
                final[tuple(r[i] for i in idx)] = tuple(r)
            for k in intent.deletes:
                final.pop(tuple(k), None)
            keys = {tuple(r[i] for i in idx) for r in intent.rows} | {tuple(k) for k in intent.deletes}
            eff.drop = lambda r: tuple(r[i] for i in idx) in keys
            for r in final.values():
                eff.appends.setdefault(kf(r), []).append(r)
            if kf.keyed and all(c in intent.on for c in (kf.key,) + kf.scope):
                for k in keys:
                    values = dict(zip(intent.on, k))
                    ident = values[kf.key] if not kf.scope else (
                        (values[kf.key],) + tuple(values[c] for c in kf.scope))
                    row = final.get(k)
                    eff.blind_sets[ident] = (row,) if row is not None else ()
            return eff
        planned = op.record.operation if op.record is not None else None
        if (kind in (OVERWRITE, OVERWRITE_PARTITIONS) and planned is not None
                and planned.kind != ops.REPLACE_PARTITIONS and planned.row_filter is None):
            # PyIceberg's overwrite(df, filter) and dynamic_partition_overwrite(df) (profile mode
            # copy-on-write, models/commands.py): a delete of the filter's rows frozen at the
            # base (the files it read, rewritten or dropped) plus the new rows, not Spark's
            # blind replace at commit: a row another writer added meanwhile stays (observed on
            # PyIceberg 0.12.0: scenarios/builtin/commands/mixed-pyiceberg-dynamic-overwrite-
            # keeps-concurrent-spark-insert.yaml). What the plan removes and adds, less the rows
            # a rewritten file keeps (unchanged: neither read nor written).
            doomed_files, positions, _ = _delete_targets(planned)
            base_rows = h.rows(op.base_snapshot_id)
            gone = Counter(rv.values for rv in base_rows
                           if rv.path in doomed_files or (rv.path, rv.position) in positions)
            new = Counter(tuple(r) for f in planned.add_data for r in (f.rows or ()))
            return _files_effect(eff, kf, base_rows, list((gone - new).elements()),
                                 list((new - gone).elements()), blind_appends=False)
        if kind in (OVERWRITE, OVERWRITE_PARTITIONS):
            for r in intent.rows:
                eff.appends.setdefault(kf(r), []).append(tuple(r))
            if kind == OVERWRITE:
                where = intent.where
                eff.drop = (lambda r: True) if where is None else (
                    lambda r: eval_row(where, schema.as_dict(r)))
            elif table.spec.is_unpartitioned:
                eff.drop = lambda r: True
            else:
                parts = {table.partition_of_row(tuple(r)) for r in intent.rows}
                eff.drop = lambda r: table.partition_of_row(r) in parts
            return eff
        if (kind == DELETE and planned is not None and planned.kind == ops.DELETE_FILES
                and planned.row_filter is not None):
            # Spark's metadata-only DELETE (models/commands.py _metadata_delete): a DeleteFiles
            # whose row filter is applied again to the head it commits on, so it deletes by
            # predicate at commit time, rows added concurrently included (blind, like
            # overwrite(filter)); it fails rather than cut through a file
            flt = planned.row_filter
            eff.drop = lambda r: eval_row(flt, schema.as_dict(r))
            return eff
        base = [rv.values for rv in h.rows(op.base_snapshot_id)]
        base_by_key: dict = {}
        for r in base:
            base_by_key.setdefault(kf(r), []).append(r)

        def matches(r):
            return intent.where is None or eval_row(intent.where, schema.as_dict(r))

        removed, added = [], []
        if kind in (DELETE, UPDATE, OVERWRITE_FILES):
            sets = dict(intent.set)
            for r in base:
                if matches(r):
                    removed.append(r)
                    if sets:
                        added.append(tuple(sets.get(n, v) for n, v in zip(schema.names, r)))
            looked = kf.looked(intent.where) if kf.keyed else None
        elif kind in (MERGE, MERGE_INSERT):
            idx = [schema.index(c) for c in intent.on]
            source = {tuple(s[i] for i in idx): tuple(s) for s in intent.rows}
            matched = set()
            for r in base:
                sk = tuple(r[i] for i in idx)
                if sk in source and kind == MERGE_INSERT:
                    matched.add(sk)               # found: WHEN NOT MATCHED does nothing
                elif sk in source and matches(r):
                    removed.append(r)
                    added.append(source[sk])
                    matched.add(sk)
            added += [s for sk, s in source.items() if sk not in matched]
            looked = {kf(s) for s in intent.rows} if kf.keyed else None
        else:
            looked = None
        for r in removed:
            eff.reads[kf(r)] = True
        for k in looked or ():
            eff.reads.setdefault(k, bool(base_by_key.get(k)))
        _set_effect(eff, kf, base_by_key, removed, added)
        return eff
    # A raw Operation: derive the effect from its files.
    operation = intent
    if operation.kind == ops.TRANSACTION:
        return _transaction_effect(h, op, kf)
    if operation.kind == ops.CHERRY_PICK:
        # a pick re-applied as a new append adds the picked snapshot's data files again; a
        # fast-forward adds no snapshot (main moves to the picked one, its committer's effect)
        from icecheck.models.cherrypick import added_data_files
        snap = h.snapshot(op.snapshot_id)
        files = added_data_files(h.store, snap) if snap is not None else ()
        operation = ops.Operation(ops.APPEND, add_data=files)
    if operation.kind in (ops.REWRITE, ops.REWRITE_MANIFESTS):
        eff.logical_noop = True
        return eff
    base_rows = h.rows(op.base_snapshot_id)
    doomed_files, positions, eq = _delete_targets(operation)
    removed = []
    for rv in base_rows:
        if rv.path in doomed_files or (rv.path, rv.position) in positions:
            removed.append(rv.values)
            continue
        for d in eq:
            key = tuple(rv.values[schema.index(c)] for c in d.equality_columns)
            if key in d.equality_rows and (not d.partition or d.partition == table.partition_of_row(rv.values)):
                removed.append(rv.values)
                break
    added = [tuple(r) for f in operation.add_data for r in (f.rows or ())]
    if operation.row_filter is not None:
        flt = operation.row_filter
        eff.drop = lambda r: eval_row(flt, schema.as_dict(r))
    elif operation.kind == ops.REPLACE_PARTITIONS:
        parts = {f.partition for f in operation.add_data}
        eff.drop = (lambda r: True) if table.spec.is_unpartitioned else (
            lambda r: table.partition_of_row(r) in parts)
    return _files_effect(eff, kf, base_rows, removed, added)


def _delete_targets(operation) -> tuple[set, set, list]:
    """What a raw operation removes: the paths of the data files it deletes, the (path,
    position) pairs of its position deletes and DVs, and its equality delete files."""
    positions: set = set()
    eq = []
    for d in operation.add_deletes:
        if d.content == EQUALITY_DELETES:
            eq.append(d)
        else:
            positions.update(d.positions)
    return {f.path for f in operation.delete_data}, positions, eq


def _files_effect(eff: Effect, kf: KeyFn, base_rows, removed: list, added: list,
                  blind_appends: bool = True) -> Effect:
    """The effect of an operation decided by its files: blind appends when it removed no row
    of its base (``blind_appends``), else each touched key set to its base rows - removed +
    added. Without ``blind_appends`` (an overwrite, which replaces what it selected even when
    that was nothing) the added rows set their keys too."""
    if not removed and blind_appends:
        for r in added:
            eff.appends.setdefault(kf(r), []).append(r)
        return eff
    base_by_key: dict = {}
    for rv in base_rows:
        base_by_key.setdefault(kf(rv.values), []).append(rv.values)
    for r in removed:
        eff.reads[kf(r)] = True
    _set_effect(eff, kf, base_by_key, removed, added)
    return eff


def _transaction_effect(h: History, op: Op, kf: KeyFn) -> Effect:
    """A transaction's effect: its staged operations applied in order to the rows of its base,
    with Iceberg's delete rules between them (a position delete applies to rows of its own
    operation and earlier ones, an equality delete only to earlier ones: their data sequence
    numbers are lower); what left the base rows and what its operations added and kept is the
    effect, as for one raw operation. Only rewrites: a logical no-op."""
    eff = Effect()
    transaction = op.intent
    if all(sub.kind == ops.REWRITE for sub in transaction.ops):
        eff.logical_noop = True
        return eff
    table = h.model.table
    schema = table.schema
    base_rows = h.rows(op.base_snapshot_id)
    live = [(rv.path, rv.position, rv.values, -1) for rv in base_rows]  # -1: older than all
    for k, sub in enumerate(transaction.ops):
        doomed, positions, eq = _delete_targets(sub)

        def gone(path, pos, values, at) -> bool:
            if path in doomed or ((path, pos) in positions and at <= k):
                return True
            for d in eq:
                if at < k and tuple(values[schema.index(c)] for c in d.equality_columns) \
                        in d.equality_rows and (not d.partition
                                                or d.partition == table.partition_of_row(values)):
                    return True
            return False

        live = [row for row in live if not gone(*row)]
        live += [(f.path, i, tuple(r), k) for f in sub.add_data for i, r in enumerate(f.rows or ())]
    kept = {(path, pos) for path, pos, _, at in live if at < 0}
    removed = [rv.values for rv in base_rows if (rv.path, rv.position) not in kept]
    added = [values for _, _, values, at in live if at >= 0]
    return _files_effect(eff, kf, base_rows, removed, added)


@dataclass
class Mismatch:
    """A key whose rows at a committed version differ from the oracle's."""

    kind: str                 # undelete | lost_write | duplicate_keys | consistent_read
    key: Any
    position: int             # lineage index of the first version showing it
    expected: tuple
    actual: tuple
    responsible: str | None   # label of the op whose effect is contradicted
    origins: dict             # row -> label of the op that wrote that row value (latest)
    positions: list = field(default_factory=list)


@dataclass
class Oracle:
    effects: dict                      # op label -> Effect
    writes: dict                       # op label -> set of keys it wrote (lineage ops)
    version_order: dict                # key -> [labels of lineage ops that wrote it, in order]
    expected: list                     # per lineage index: dict key -> rows
    mismatches: list                   # list[Mismatch], first occurrence order
    origin: dict                       # (key, row) -> label that (last) wrote that row value
    last_writer: dict                  # key -> label (at the end of the lineage)
    stale_ops: set                     # labels of lineage ops whose base is not on the lineage
    keyfn: KeyFn | None = None
    # the rest of the fold's state at the lineage's end, for resuming it (``memo_oracle``):
    # key -> did its last write delete it; each mismatch's identity, in ``mismatches`` order
    last_deleter: dict = field(default_factory=dict, repr=False)
    idents: list = field(default_factory=list, repr=False)


def _group(rows, kf: KeyFn) -> dict:
    out: dict = {}
    for r in rows:
        out.setdefault(kf(r), []).append(r)
    return {k: _sorted(v) for k, v in out.items()}


def _grouped(h: History, snapshot_id: int, kf: KeyFn) -> dict:
    """The snapshot's visible rows by key (``_group``), for one key function, shared
    through the history's memo (``History.by_files``); never modified by its readers
    (``run_oracle`` copies before it changes a state)."""
    return h.by_files(("grouped", kf.key, kf.scope), snapshot_id, _group_rows, h, snapshot_id,
                      kf)


def _group_rows(h: History, snapshot_id: int, kf: KeyFn) -> dict:
    return _group([rv.values for rv in h.rows(snapshot_id)], kf)


def memo_oracle(h: History, kf: KeyFn) -> Oracle:
    """``run_oracle``, shared between evaluations through the history's memo (when it has
    one). The oracle reads, for each snapshot of the lineage, its id, its rows
    (``History.rows_key``), whether it is a transaction's inner snapshot, and the operation
    that committed it (its label and record, by content; a setup commit by index) with the
    rows of its base, which make its effect (``memo_effect``). Histories that differ only in what
    did not reach the lineage (an operation that failed or is still in flight) share one
    oracle (issue 13: 2,326 oracles for 9,089 evaluations on mor-serializable-3w2op-delete).
    A cherry-pick's effect reads the store: never shared. Each caller gets its own
    ``effects`` dict (the isolation check adds off-lineage effects to it).

    ``h.oracle_key`` becomes a small int naming that key (a new one per entry of the memo's
    table, never reused): the keys of ``Analysis.shared`` hash it instead of the whole key."""
    memo = h.memo
    if memo is None:
        return run_oracle(h, kf)
    key_t = _oracle_key(h, kf)
    if key_t is None:
        return run_oracle(h, kf)
    got = memo.oracles.get(key_t)
    if got is None:
        # The fold's state after the lineage's first n-1 snapshots is a function of the first
        # n-1 items of the key (each item is all the fold reads at its position): resume the
        # oracle of the parent lineage when the memo has it (the lineage one commit shorter,
        # judged a level earlier), instead of folding every position again.
        parent = memo.oracles.get(key_t[:-1]) if len(key_t) > 3 else None
        got = memo.oracles[key_t] = (next(memo.ids),
                                     run_oracle(h, kf, parent[1] if parent else None))
    h.oracle_key = got[0]
    # a shallow copy (``copy.copy``, without its protocol lookups: one per evaluation)
    mine = object.__new__(Oracle)
    mine.__dict__.update(got[1].__dict__)
    mine.effects = dict(mine.effects)
    return mine


def _oracle_key(h: History, kf: KeyFn) -> tuple | None:
    """``memo_oracle``'s key (None: not shared), cached on the metadata object by the
    identity of the lineage's records when the metadata holds every snapshot the key reads
    (the lineage and its operations' bases): then the key is a function of the metadata
    object and those records (a snapshot object reaches the same content wherever it is,
    ``History.rows_key``). The cache pins the records, so their ids are not reused."""
    meta = h.meta
    memo = h.memo
    ids = (memo.token, kf.key, kf.scope) + tuple(
        None if op is None else id(op.record) if op.record is not None else op.index
        for op in h.lineage_ops)
    cache = meta.__dict__.get("_icecheck_ok")
    if cache is not None:
        got = cache.get(ids)
        if got is not None:
            return got[1]
    content, token = memo.content, memo.token
    listed = meta._by_id          # TableMetadata.snapshot, inline
    key: list = [kf.key, kf.scope]
    local = True
    for snap, op in zip(h.lineage, h.lineage_ops):
        sid = snap.snapshot_id
        # ``h.rows_key(sid)``; of a snapshot the metadata lists (``h.snapshot`` gives that
        # very object), the value cached on it, read inline (a key is made per evaluation)
        got = listed.get(sid)
        if got is None:
            local = False
            rows = h.rows_key(sid)
        else:
            cached = got.__dict__.get("_icecheck_rows_key")
            rows = cached[1] if cached is not None and cached[0] == token else h.rows_key(sid)
        if op is None:
            who = None
        elif getattr(op.intent, "kind", None) == ops.CHERRY_PICK:
            return None
        else:
            base = op.base_snapshot_id
            got = None if base is None else listed.get(base)
            if got is None:
                if base is not None:
                    local = False
                base_rows = h.rows_key(base)
            else:
                cached = got.__dict__.get("_icecheck_rows_key")
                base_rows = (cached[1] if cached is not None and cached[0] == token
                             else h.rows_key(base))
            who = (op.label, _record_key(op.record, content, token)
                   if op.record is not None else op.index, base_rows)
        key.append((sid, rows, sid in h.inner_ids, who))
    key_t = tuple(key)
    if local:
        if cache is None or len(cache) >= _KEYS_PER_METADATA:
            cache = {}
            object.__setattr__(meta, "_icecheck_ok", cache)
        cache[ids] = (tuple(op.record for op in h.lineage_ops if op is not None), key_t)
    return key_t


def _record_key(record, content: Callable, token) -> Any:
    """A finished operation's record by content, without ``attempts``, cached on the record
    (tagged with the memo's ``token``). Nothing the memo shares reads how many races an
    operation lost (only reachability's own ``reached`` does, never shared), and a snapshot
    keeps its id across its attempts (models/system.py ``Model._attempt_names``), and the
    rows keys leave out the attempt-named manifests (``History.rows_key``): so the lineages
    of writers that lost different numbers of races share their oracle and checks (issue 44:
    through the first 1,176,326 states of spark-only.yaml's largest part, 7,667 oracles and
    lineage checks instead of 20,665)."""
    got = record.__dict__.get("_icecheck_rk")
    if got is None or got[0] != token:
        got = (token, content(record if record.attempts == 1 else replace(record, attempts=1)))
        object.__setattr__(record, "_icecheck_rk", got)
    return got[1]


#: ``_oracle_key``'s cache on one metadata object holds at most this many keys
_KEYS_PER_METADATA = 64


def run_oracle(h: History, kf: KeyFn, prefix: Oracle | None = None) -> Oracle:
    """The oracle of the history's lineage: its operations' effects folded in commit order,
    each version compared with the table's rows. ``prefix``: the oracle of the lineage's first
    ``len(prefix.expected)`` snapshots (equal in everything the fold reads there), whose state
    the fold resumes from (copied: the prefix is shared and never modified)."""
    if prefix is None:
        effects: dict = {}
        writes: dict = {}
        version_order: dict = {}
        expected_list: list = []
        mismatches: dict = {}
        origin: dict = {}
        last_writer: dict = {}
        last_deleter: dict = {}  # key -> True when the last write of the key deleted it
        state: dict = {}
        start = 0
    else:
        effects, writes = dict(prefix.effects), dict(prefix.writes)
        version_order = {k: list(v) for k, v in prefix.version_order.items()}
        expected_list = list(prefix.expected)
        mismatches = {i: replace(m, positions=list(m.positions))
                      for i, m in zip(prefix.idents, prefix.mismatches)}
        origin, last_writer = dict(prefix.origin), dict(prefix.last_writer)
        last_deleter = dict(prefix.last_deleter)
        start = len(expected_list)
        state = expected_list[-1] if expected_list else {}
    lineage_ids = {s.snapshot_id for s in h.lineage}
    # operations whose base is not on the lineage (a function of the whole lineage)
    stale = {op.label for snap, op in zip(h.lineage, h.lineage_ops)
             if op is not None and snap.snapshot_id not in h.inner_ids
             and op.base_snapshot_id is not None and op.base_snapshot_id not in lineage_ids}
    for pos in range(start, len(h.lineage)):
        snap, op = h.lineage[pos], h.lineage_ops[pos]
        actual = _grouped(h, snap.snapshot_id, kf)
        if op is None:  # a snapshot no writer claims (reported by metadata_integrity): resync
            state = dict(actual)
            expected_list.append(state)
            continue
        if snap.snapshot_id in h.inner_ids:
            # a transaction's snapshot before its last: never the table's current version; the
            # transaction's effect is judged once, at its last snapshot
            expected_list.append(state)
            continue
        eff = memo_effect(h, op, kf)
        effects[op.label] = eff
        state = dict(state)
        wrote = set()
        if eff.drop is not None:
            for k, rows in list(state.items()):
                kept = tuple(r for r in rows if not eff.drop(r))
                if kept != rows:
                    state[k] = kept
                    wrote.add(k)
                    if not kept:
                        last_deleter[k] = True
        before_state = state
        state = dict(state)
        for k, rows in eff.sets.items():
            state[k] = rows
            wrote.add(k)
            last_deleter[k] = not rows
        for k, rows in eff.appends.items():
            state[k] = _sorted(state.get(k, ()) + tuple(rows))
            wrote.add(k)
            last_deleter[k] = False
        for k in sorted(wrote, key=repr):
            last_writer[k] = op.label
            version_order.setdefault(k, []).append(op.label)
        # A row value's origin is the operation that first wrote it into the key's rows: rows an
        # operation carries over unchanged keep their origin.
        for k, rows in eff.sets.items():
            # the rows the key held before, each kept row matched to one of them (a key holds
            # a row or two: a list, not a Counter, whose construction cost more than the rest)
            before = list(before_state.get(k, ()))
            for r in rows:
                if r in before:
                    before.remove(r)
                else:
                    origin[(k, r)] = op.label
        for k, rows in eff.appends.items():
            for r in rows:
                origin[(k, r)] = op.label
        state = {k: v for k, v in state.items() if v}
        writes[op.label] = wrote
        expected_list.append(state)
        if state == actual:     # the table as every operation left it (the common case)
            continue
        # compare
        for k in sorted(set(state) | set(actual), key=repr):
            e, a = state.get(k, ()), actual.get(k, ())
            if e == a:
                continue
            missing = Counter(e) - Counter(a)
            extra = Counter(a) - Counter(e)
            if not e:
                kind = "undelete" if last_deleter.get(k) else "consistent_read"
                resp = last_writer.get(k)
            elif missing:
                kind = "lost_write"
                lost = sorted(missing, key=repr)
                resp = origin.get((k, lost[0]), last_writer.get(k))
            elif extra and len(a) > 1:
                kind = "duplicate_keys"
                resp = last_writer.get(k)
            else:
                kind = "consistent_read"
                resp = last_writer.get(k)
            if not kf.keyed and kind in ("duplicate_keys", "lost_write", "undelete"):
                kind = "consistent_read"
            ident = (kind, repr(k), resp, _sorted(extra.elements()), _sorted(missing.elements()))
            if ident in mismatches:
                mismatches[ident].positions.append(pos)
                continue
            origins = {r: origin.get((k, r)) for r in set(a) | set(e)}
            mismatches[ident] = Mismatch(kind, k, pos, e, a, resp, origins, [pos])
    return Oracle(effects, writes, version_order, expected_list, list(mismatches.values()),
                  origin, last_writer, stale, kf, last_deleter, list(mismatches))

