"""The planner: an engine runs a SQL-level command at its scan snapshot and produces the
Iceberg operation it will commit, following its profile (``profiles.py``).

What each command writes, by table mode:

* copy-on-write DELETE/UPDATE/MERGE: every data file holding a live row the command changes is
  deleted and rewritten (surviving rows, updated rows) -> OverwriteFiles;
* merge-on-read: a position delete file per touched data file (format v2, file-scoped, as Spark
  writes since Iceberg 1.8) or a deletion vector that also carries the file's earlier deleted
  positions and replaces the old DV (v3), plus new data files for updated and inserted rows
  -> RowDelta;
* COMPACT: the live rows of the matching files rewritten into one file per partition
  -> RewriteFiles;
* INSERT -> AppendFiles; overwrite(filter) -> OverwriteFiles.overwriteByRowFilter;
  overwritePartitions() -> ReplacePartitions;
* profiles whose OVERWRITE / OVERWRITE_PARTITIONS rule is copy-on-write (PyIceberg): a
  copy-on-write DELETE of the filter (or of the written partitions, by an identity-partition
  predicate) plus the new rows -> OverwriteFiles, conflict filter = that predicate;
* a MERGE rule with ``inserts: fast_append`` (PyIceberg's upsert): when no key matches, the
  inserted rows are a FastAppend with no validation;
* a DELETE/UPDATE/MERGE that changes no row follows its rule's ``empty:``: an operation with no
  files committed like any other (``snapshot``, Spark and Java), one that only validates at
  commit (``validate``, PyIceberg's empty delete), or nothing (``noop``). COMPACT with nothing
  to rewrite commits nothing on every engine (rewrite_data_files returns without a commit).

The scan is the writer's own read of its base snapshot, so a retry re-commits exactly the same
files (Java re-applies the operation; it never rescans).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any

from . import operations as ops
from .commands_spec import (COMPACT, COPY_ON_WRITE, DELETE, INSERT, MERGE, MERGE_INSERT,
                            MERGE_ON_READ, OVERWRITE, OVERWRITE_PARTITIONS,
                            REWRITE_MANIFESTS, REWRITE_POSITION_DELETES, UPDATE, UPSERT, EXPIRE,
                            OVERWRITE_FILES, ADD_FILES, REMOVE_ORPHAN_FILES,
                            Command)
from .files import DV, EQUALITY_DELETES, DataFile, DeleteFile, POSITION_DELETES
from .filters import (And, Cmp, Expr, In, IsNull, TrueExpr, eval_row, might_match_file,
                      must_match_bounds, must_match_strict_projection, or_, pyiceberg_str,
                      pyiceberg_str_of)
from .metadata import TableMetadata
from .operations import Operation, Validations
from .validation import ValidationFailed
from .profiles import EMPTY_NOOP, EMPTY_VALIDATE, CommandRule, Profile, get_profile
from .reads import RowVersion, live_data_entries, live_delete_entries, read_rows
from .rewrite_manifests import plan_rewrite as plan_rewrite_manifests
from .system import NothingToDo, StepError  # noqa: F401 (NothingToDo: planners raise it)
from .table import TableConfig


class PlanError(StepError):
    """The engine refuses the command outright (e.g. PyIceberg's dynamic_partition_overwrite on
    an unpartitioned table or a non-identity partition spec): the begin step cannot run."""


class _Names:
    """Fresh, deterministic file names for one operation of one writer."""

    def __init__(self, writer: str, op_number: int):
        self.prefix = f"{writer}-{op_number}"
        self.counts: dict[str, int] = defaultdict(int)

    def __call__(self, kind: str) -> str:
        self.counts[kind] += 1
        return f"{self.prefix}-{kind}{self.counts[kind]}"


def _matches(table: TableConfig, cmd: Command, row: tuple, where: Expr | None = None) -> bool:
    where = cmd.where if where is None else where
    return where is None or eval_row(where, table.schema.as_dict(row))


def _group_files(table: TableConfig, rows: list[tuple], names: _Names) -> tuple[DataFile, ...]:
    """Write ``rows`` into one new data file per partition (writers never mix partitions)."""
    by_part: dict[tuple, list[tuple]] = {}
    for r in rows:
        by_part.setdefault(table.partition_of_row(r), []).append(r)
    return tuple(table.data_file(names("d"), tuple(rs)) for _, rs in sorted(by_part.items(), key=repr))


def _validations(rule: CommandRule, profile: Profile, cmd: Command,
                 referenced: tuple[str, ...], where: Expr | None = None) -> Validations:
    v = set(rule.validations)
    py_filter = None
    if profile.pyiceberg_validation and "filter" in v:
        # what PyIceberg prints of its conflict filter: the text as written, parsed as its
        # parser builds it, or (an upsert's keys) the predicate its code builds
        if where is None or where is cmd.where:
            py_filter = pyiceberg_str(cmd.where_sql) if cmd.where_sql else None
        else:
            py_filter = pyiceberg_str_of(where)
    where = cmd.where if where is None else where
    return Validations(
        py_filter=py_filter,
        from_snapshot="from_snapshot" in v,
        filter=where if "filter" in v else None,
        no_conflicting_data="no_conflicting_data" in v,
        no_conflicting_deletes="no_conflicting_deletes" in v,
        no_conflicting_data_files="no_conflicting_data_files" in v,
        no_conflicting_delete_files="no_conflicting_delete_files" in v,
        deleted_files="deleted_files" in v,
        data_files_exist=referenced if "data_files_exist" in v else None,
        files_exist="files_exist" in v,
        starting_sequence_number="starting_sequence_number" in v,
        deleted_data_files_by_filter="deleted_data_files_by_filter" in v,
        validate_on_first_attempt=profile.validate_on_first_attempt,
        idempotent_retry=profile.idempotent_retry,
        pyiceberg_validation=profile.pyiceberg_validation,
        max_format_version=profile.max_format_version,
        commit_retries=profile.commit_retries,
    )


def _engine_only(profile: Profile) -> Validations:
    """No validation switch on, only the engine's commit behaviour (first-attempt validation,
    idempotent retry)."""
    return Validations(validate_on_first_attempt=profile.validate_on_first_attempt,
                       idempotent_retry=profile.idempotent_retry,
                       pyiceberg_validation=profile.pyiceberg_validation,
                       max_format_version=profile.max_format_version,
                       commit_retries=profile.commit_retries)


def _partition_predicate(table: TableConfig, rows: list[tuple]) -> Expr:
    """PyIceberg's dynamic_partition_overwrite delete filter: OR over the written partitions of
    AND over ``col = value`` (``col is null``); identity partition fields only."""
    spec = table.spec
    if spec.is_unpartitioned:
        raise PlanError("dynamic partition overwrite: cannot apply dynamic overwrite on an "
                        "unpartitioned table")
    bad = [str(f) for f in spec.fields if f.transform.kind != "identity"]
    if bad:
        raise PlanError("dynamic partition overwrite: only identity partition transforms are "
                        f"supported, not {', '.join(bad)}")
    return _equalities([f.source for f in spec.fields],
                       {table.partition_of_row(r) for r in rows})


def _equalities(columns: list[str], tuples) -> Expr:
    """OR, over the distinct ``tuples`` in a fixed order (by repr), of AND over ``col = value``
    (``col is null`` for a null): the filters PyIceberg builds from written partitions
    (``_partition_predicate``) and from an upsert's keys (``_pyiceberg_upsert``)."""
    expr: Expr | None = None
    for values in sorted(set(tuples), key=repr):
        term: Expr | None = None
        for col, value in zip(columns, values):
            p = IsNull(col) if value is None else Cmp("=", col, value)
            term = p if term is None else And(term, p)
        expr = term if expr is None else or_(expr, term)
    assert expr is not None
    return expr


def _changes(table: TableConfig, cmd: Command, rows: list[RowVersion]):
    """Which live rows the command touches, and what they become (None: deleted)."""
    changed: dict[tuple[str, int], tuple | None] = {}
    inserts: list[tuple] = []
    names = table.schema.names
    if cmd.kind in (DELETE, UPDATE, OVERWRITE_FILES):
        sets = dict(cmd.set)
        for r in rows:
            if _matches(table, cmd, r.values):
                if cmd.kind == DELETE or not sets:
                    changed[(r.path, r.position)] = None
                else:
                    changed[(r.path, r.position)] = tuple(sets.get(n, v) for n, v in zip(names, r.values))
    elif cmd.kind == MERGE:
        key_idx = [names.index(c) for c in cmd.on]
        source = {tuple(s[i] for i in key_idx): s for s in cmd.rows}
        matched = set()
        for r in rows:
            key = tuple(r.values[i] for i in key_idx)
            if key in source and _matches(table, cmd, r.values):
                changed[(r.path, r.position)] = source[key]
                matched.add(key)
        inserts = [s for k, s in source.items() if k not in matched]
    return changed, inserts


def _drop_strict_matches(rows: list[RowVersion], live: dict, where: Expr, changed: dict) -> None:
    """PyIceberg's ``Transaction.delete`` (also under ``overwrite`` and
    ``dynamic_partition_overwrite``), profile key ``drop_strict_matches``: it first drops whole,
    by metadata, every data file whose column metrics prove that all its rows match the filter
    (``_DeleteFiles._compute_deletes``: ``_StrictMetricsEvaluator`` of the whole filter, no
    partition residual; a negative record count never matches), and only then rewrites the
    other files row by row with the complement of the filter (nulls kept). The metrics say a
    column holding only nulls matches ``!=`` and ``not in`` (``visit_not_equal``,
    ``visit_not_in``: "no row can have a value equal to the literal"), so such a file goes whole
    although the row filter, and PyIceberg's own scan, keep its rows (scenario
    pyiceberg/serializable-delete-not-equal-drops-null-only-file, PyIceberg-agreed)."""
    drop = {path for path, f in live.items()
            if f.record_count >= 0 and must_match_bounds(where, f.lower(), f.upper(), f.nulls(),
                                                         f.record_count)}
    for r in rows:
        if r.path in drop:
            changed[(r.path, r.position)] = None


def _rewritten(path: str, by_file: dict, changed: dict) -> list[tuple]:
    """The rows a copy-on-write rewrite of file ``path`` keeps, in their order: each row as
    ``changed`` leaves it (updated, or dropped when None), the others as they are."""
    copy = (changed.get((path, r.position), r.values) for r in by_file[path])
    return [v for v in copy if v is not None]


def _separate_rewrites(table: TableConfig, touched: list[str], by_file: dict, changed: dict,
                       inserts: list[tuple], names: _Names) -> tuple[DataFile, ...]:
    """A copy-on-write command's new files as PyIceberg writes them (profile key
    ``separate_rewrites``): ``Transaction.delete`` rewrites each touched file apart into what it
    keeps (none when every row goes), then ``overwrite``'s append writes the updated rows and
    an upsert's append the inserted ones, each split by partition
    (``_dataframe_to_data_files``). A concurrent validation names every one of them
    (docs/conformance-mixed.md: a Spark MERGE's "Found conflicting files" named two files
    where the model wrote one)."""
    out: list[DataFile] = []
    for path in touched:
        kept = [r.values for r in by_file[path] if (path, r.position) not in changed]
        out += _group_files(table, kept, names)
    out += _group_files(table, [new for new in changed.values() if new is not None], names)
    out += _group_files(table, list(inserts), names)
    return tuple(out)


def _pyiceberg_upsert(table: TableConfig, cmd: Command, rows: list[RowVersion],
                      changed: dict) -> tuple[dict, Expr | None]:
    """PyIceberg's upsert (``Transaction.upsert``, pyiceberg/table/__init__.py, 0.12.0): a
    matched row whose other columns already equal the source row's is left alone
    (``upsert_util.get_rows_to_update``), and the rows it does update are overwritten by the
    filter ``upsert_util.create_match_filter`` builds from their keys, one per batch of the
    matched-rows scan (a data file), joined by Or: ``In(key, keys)`` for one join column, an Or
    of Ands of ``EqualTo`` otherwise. That filter is the copy-on-write
    delete's predicate (``Transaction.overwrite`` -> ``delete``), so it is the conflict filter
    a retry validates with (``_SnapshotProducer._validate_concurrency``): a concurrent append of
    other keys does not conflict (scenarios/builtin/pyiceberg/
    upsert-retry-validates-its-match-filter.yaml). (changed rows, that filter; None when nothing
    is updated or a key is null, which the model keeps unfiltered.)"""
    current = {(r.path, r.position): r.values for r in rows}
    changed = {at: new for at, new in changed.items() if new != current[at]}
    names = table.schema.names
    key_idx = [names.index(c) for c in cmd.on]
    # one filter per batch the matched-rows scan returns (a data file), joined by Or in scan
    # order: a key matched in two files is named twice, Or(EqualTo(id, 1), EqualTo(id, 1)), as
    # PyIceberg's conflict message prints it (mixed differential, seed 2327)
    by_file: dict[str, set] = {}
    for r in rows:
        new = changed.get((r.path, r.position))
        if new is not None:
            by_file.setdefault(r.path, set()).add(tuple(new[i] for i in key_idx))
    if not by_file or any(v is None for keys in by_file.values() for k in keys for v in k):
        return changed, None
    where = None
    for file_keys in by_file.values():
        ordered = sorted(file_keys, key=repr)
        one = In(cmd.on[0], tuple(k[0] for k in ordered)) if len(cmd.on) == 1 \
            else _equalities(list(cmd.on), ordered)
        where = one if where is None else or_(where, one)
    return changed, where


#: PyIceberg 0.12's refusal (Transaction.add_files), followed by the paths its check found
PY_ALREADY_REFERENCED = "Cannot add files that are already referenced by table, files: "
#: Spark's (SparkTableUtil.DUPLICATE_FILE_MESSAGE, Iceberg 1.10; Preconditions.checkState, so
#: an IllegalStateException), with the paths joined by ","
SPARK_DUPLICATE_FILES = ("Cannot complete import because data files to be imported already "
                         "exist within the target table: {}.  This is disabled by default as "
                         "Iceberg is not designed for multiple references to the same file "
                         "within the same table.  If you are sure, you may set "
                         "'check_duplicate_files' to false to force the import.")


def _plan_add_files(cmd: Command, rule: CommandRule, profile: Profile, table: TableConfig,
                    store, snapshot) -> Operation:
    """ADD_FILES: register the external file ``cmd.file_path`` (its rows are ``cmd.rows``).

    With ``check_duplicate_files`` the engine first looks the path up among the live data
    entries of the snapshot it began at, and refuses the command when it is there: PyIceberg's
    ``Transaction.add_files`` (``_find_referenced_data_files``: the current snapshot's data
    manifests, deleted entries discarded, one path per entry, in manifest order) raises
    ValueError; Spark's ``add_files`` procedure (``SparkTableUtil.importSparkPartitions``: a join
    with the ENTRIES metadata table, ``status != 2``) fails ``Preconditions.checkState``. The
    check runs once, as the command begins: the append that follows validates nothing and its
    retry after a lost race does not look again (PyIceberg's ``_rebuild_snapshot_updates``
    re-runs the snapshot producer only; Java's ``SnapshotProducer.commit`` re-applies the
    append). Two jobs adding one file concurrently both commit it, and its rows are read twice
    (scenario pyiceberg/add-files-twice-concurrently-duplicates-rows)."""
    path = cmd.file_path
    pyiceberg = profile.engine.startswith("pyiceberg")
    if path in store.deleted and not pyiceberg:
        # the file is gone (an expiry deleted it once a commit stopped listing it): Spark's
        # procedure lists the folder, finds no file, checks nothing and commits an empty
        # append (added_files_count 0; observed on Spark 3.5 + Iceberg 1.10.2). PyIceberg
        # opens the file as it stages and fails (Model._write: read_failed)
        return Operation(rule.operation, validations=_validations(rule, profile, cmd, ()))
    if cmd.check_duplicate_files:
        found = [e.file.path for e in live_data_entries(store, snapshot) if e.file.path == path]
        if found:
            if pyiceberg:
                raise ValidationFailed("duplicate_files",
                                       PY_ALREADY_REFERENCED + ", ".join(found))
            raise ValidationFailed("duplicate_files",
                                   SPARK_DUPLICATE_FILES.format(",".join(found[:10])))
    return Operation(rule.operation, add_data=(table.data_file(path, tuple(cmd.rows)),),
                     validations=_validations(rule, profile, cmd, ()))


def plan(cmd: Command, profile: Profile, *, state, base: TableMetadata, writer,
         table: TableConfig) -> Operation:
    rule = profile.rule(cmd.kind)
    names = _Names(writer.name, writer.op_index + 1)
    snapshot = base.current
    store = state.store
    if cmd.select is not None:
        # INSERT OVERWRITE t SELECT ... FROM t: the rows derive from the base's (models/rmw.py)
        from .rmw import plan_select
        return plan_select(cmd, table, [r.values for r in read_rows(store, snapshot,
                                                                    table.schema.names)],
                           lambda c: plan(c, profile, state=state, base=base, writer=writer,
                                          table=table))

    if cmd.kind == INSERT:
        return Operation(rule.operation, add_data=_group_files(table, list(cmd.rows), names),
                         validations=_validations(rule, profile, cmd, ()))
    if cmd.kind == UPSERT:
        return _plan_equality_upsert(cmd, rule, profile, table, names)
    if cmd.kind == REWRITE_POSITION_DELETES:
        return _plan_rewrite_position_deletes(rule, profile, table, store, snapshot, names)
    if cmd.kind == REWRITE_MANIFESTS:
        if rule.operation != ops.REWRITE_MANIFESTS:
            raise PlanError(f"REWRITE_MANIFESTS is a rewrite_manifests operation, not "
                            f"{rule.operation}")
        groups = plan_rewrite_manifests(store, snapshot)
        if not groups:
            raise NothingToDo("rewrite_manifests finds no manifests to rewrite")
        return Operation(ops.REWRITE_MANIFESTS, manifest_rewrite=groups)
    if cmd.kind == EXPIRE:
        # reads nothing: which snapshots go is decided on the metadata the commit applies to
        if rule.operation != ops.EXPIRE_SNAPSHOTS:
            raise PlanError(f"EXPIRE is an expire_snapshots operation, not {rule.operation}")
        return Operation(ops.EXPIRE_SNAPSHOTS, retain_last=int(dict(cmd.options).get(
            "retain_last", 1)), older_than=dict(cmd.options).get("older_than"))
    if cmd.kind == REMOVE_ORPHAN_FILES:
        # reads nothing when it is planned: it loads the metadata as it begins and lists the
        # table location when it deletes (models/orphans.py)
        if rule.operation != ops.REMOVE_ORPHAN_FILES:
            raise PlanError(f"REMOVE_ORPHAN_FILES is a remove_orphan_files operation, not "
                            f"{rule.operation}")
        return Operation(ops.REMOVE_ORPHAN_FILES, older_than=dict(cmd.options)["older_than"])
    if cmd.kind == ADD_FILES:
        return _plan_add_files(cmd, rule, profile, table, store, snapshot)
    if cmd.kind == MERGE_INSERT:
        return _plan_merge_insert(cmd, rule, profile, table, store, snapshot, names)
    cow_overwrite = cmd.kind in (OVERWRITE, OVERWRITE_PARTITIONS) and rule.mode == COPY_ON_WRITE
    if cmd.kind == OVERWRITE_PARTITIONS and not cow_overwrite:
        return Operation(ops.REPLACE_PARTITIONS, add_data=_group_files(table, list(cmd.rows), names),
                         validations=_validations(rule, profile, cmd, ()))
    if cmd.kind == OVERWRITE and not cow_overwrite:
        return Operation(ops.OVERWRITE, add_data=_group_files(table, list(cmd.rows), names),
                         row_filter=cmd.where if cmd.where is not None else TrueExpr(),
                         validations=_validations(rule, profile, cmd, ()))

    if cmd.kind == DELETE and rule.metadata_delete:
        md = _metadata_delete(cmd, profile, table, store, snapshot)
        if md is not None:
            return md
    rows = read_rows(store, snapshot, table.schema.names)
    live = {e.file.path: e.file for e in live_data_entries(store, snapshot)}
    if cmd.kind == COMPACT:
        return _plan_compaction(cmd, rule, profile, table, rows, live, names, store, snapshot)

    where = cmd.where
    if cow_overwrite:
        # PyIceberg: overwrite(df, filter) / dynamic_partition_overwrite(df) = a copy-on-write
        # delete of the filter (the written partitions), frozen at the base, + the new rows
        if cmd.kind == OVERWRITE_PARTITIONS:
            where = _partition_predicate(table, list(cmd.rows))
        elif where is None:
            where = TrueExpr()
        changed = {(r.path, r.position): None for r in rows if _matches(table, cmd, r.values, where)}
        inserts = list(cmd.rows)
    else:
        changed, inserts = _changes(table, cmd, rows)
        if cmd.kind == MERGE and rule.inserts == ops.FAST_APPEND:
            changed, where = _pyiceberg_upsert(table, cmd, rows, changed)
            if not changed and not inserts:
                # every key matched a row already as given: no overwrite, no append, no commit
                raise NothingToDo(f"{cmd} changes no row at snapshot {base.current_snapshot_id}")
    if rule.drop_strict_matches:
        # (a copy-on-write DELETE, OVERWRITE or OVERWRITE_PARTITIONS: profiles.py checks it)
        _drop_strict_matches(rows, live, where if where is not None else TrueExpr(), changed)
    empty = not changed and not inserts
    if empty and rule.empty == EMPTY_NOOP:
        raise NothingToDo(f"{cmd} matches no row at snapshot {base.current_snapshot_id}")
    # otherwise an operation with no files goes through the commit path (rule.empty)
    if cmd.kind == MERGE and not changed and rule.inserts == ops.FAST_APPEND:
        # PyIceberg's upsert: no key matched, so the unmatched rows are one plain fast append
        # (no validation). When some key matches, the model keeps one copy-on-write overwrite
        # for the whole upsert (PyIceberg commits an overwrite and an append, two snapshots of one
        # transaction), so its validations then cover the inserted rows too.
        return Operation(ops.FAST_APPEND, add_data=_group_files(table, inserts, names),
                         validations=_engine_only(profile))
    touched = sorted({path for path, _ in changed})
    new_rows = [v for v in changed.values() if v is not None] + inserts
    if rule.mode == MERGE_ON_READ:
        deletes, removed_dvs = _position_deletes(table, store, snapshot, changed, names)
        referenced = tuple(touched)
        return Operation(rule.operation, add_data=_group_files(table, new_rows, names),
                         add_deletes=deletes, remove_deletes=removed_dvs,
                         validations=_validations(rule, profile, cmd, referenced),
                         no_snapshot=empty and rule.empty == EMPTY_VALIDATE)
    # copy-on-write: rewrite every touched file with its surviving and updated rows.
    by_file: dict[str, list[RowVersion]] = defaultdict(list)
    for r in rows:
        by_file[r.path].append(r)
    if cmd.kind == OVERWRITE_FILES:
        # a script's copy of each file it swaps, written apart (one file per old file, split by
        # partition as _dataframe_to_data_files does), its rows in their order, the matching
        # ones updated (or dropped without SET): the script rewrites each file as a whole
        # (mixed differential, seed 271129: a Spark validation named the one copy PyIceberg
        # wrote where the model, rewriting as Transaction.delete does, wrote two)
        add = tuple(f for path in touched
                    for f in _group_files(table, _rewritten(path, by_file, changed), names))
    elif profile.separate_rewrites:
        add = _separate_rewrites(table, touched, by_file, changed, inserts, names)
    else:
        rewritten = [v for path in touched for v in _rewritten(path, by_file, changed)]
        add = _group_files(table, rewritten + list(inserts), names)
    return Operation(ops.OVERWRITE, add_data=add,
                     delete_data=tuple(live[p] for p in touched),
                     validations=_validations(rule, profile, cmd, (), where),
                     no_snapshot=empty and rule.empty == EMPTY_VALIDATE,
                     keep_delete_files=profile.keep_delete_files)


def _plan_merge_insert(cmd, rule, profile, table, store, snapshot, names) -> Operation:
    """An insert-only MERGE (``WHEN NOT MATCHED THEN INSERT`` and no other clause): the source
    rows whose key is absent at the scan, as the rule's operation.

    Spark 3.5 rewrites it to an append of an anti-join (RewriteMergeIntoTable: no matched
    actions and one not-matched action -> ``AppendData``), which Iceberg commits with
    ``newAppend()`` and no validation whatever the isolation level (observed on Spark 3.5 +
    Iceberg 1.10.2: two concurrent ones both insert the key; one inserting nothing still adds
    an empty append snapshot). PyIceberg's ``upsert(..., when_matched_update_all=False)`` inserts
    the absent keys with a fast append, likewise unvalidated."""
    key_idx = [table.schema.names.index(c) for c in cmd.on]
    present = {tuple(r.values[i] for i in key_idx)
               for r in read_rows(store, snapshot, table.schema.names)}
    inserts = [r for r in cmd.rows if tuple(r[i] for i in key_idx) not in present]
    if not inserts and rule.empty == EMPTY_NOOP:
        raise NothingToDo(f"{cmd} finds every key at snapshot {snapshot.snapshot_id if snapshot else None}")
    return Operation(rule.operation, add_data=_group_files(table, inserts, names),
                     validations=_validations(rule, profile, cmd, ()))


def _plan_equality_upsert(cmd, rule, profile, table, names) -> Operation:
    """One checkpoint of Flink's upsert sink (``FlinkSink...upsert(true)``): blind, nothing read.

    Per upserted row, ``BaseDeltaTaskWriter.write`` (flink/v1.20, lines 79-90) calls
    ``deleteKey(key)`` then ``write(row)`` on the writer of the row's partition; a changelog
    DELETE calls ``deleteKey(key)`` alone (lines 97-101). In ``BaseTaskWriter
    .BaseEqualityDeltaWriter`` (core, 1.10.2): ``deleteKey`` writes a position delete of the
    key's earlier row when the key was already written in this checkpoint (``internalPosDelete``,
    lines 186-196: the row in the new data file) and otherwise writes the key to the equality
    delete file (lines 216-220), which removes every older row of the key in that partition
    (data sequence number below the commit's); ``write`` remembers the row's position
    (lines 152-164). ``IcebergFilesCommitter.commitDeltaTxn`` (flink/v1.20, lines 328-366)
    commits a checkpoint with delete files as ``newRowDelta()`` with no validation ("Row delta
    validations are not needed for streaming changes that write equality deletes"), and one
    with none as ``newAppend()``: the rule's ``operation`` and ``validations`` say which."""
    if table.spec.fields:
        cols = set(cmd.on)
        for i, f in enumerate(table.spec.fields):
            if f.source not in cols:
                # FlinkSink.Builder.appendWriter (flink/v1.20, FlinkSink.java:563-571), with
                # Java's PartitionField.toString (field id, name, transform(source id)) for the
                # ids a new table assigns
                src_id = table.schema.names.index(f.source) + 1
                raise PlanError(
                    f"In UPSERT mode, source column '{f.source}' of partition field "
                    f"'{1000 + i}: {f.name}: {f.transform}({src_id})', should be included in "
                    f"equality fields: '[{', '.join(cmd.on)}]'")
    key_idx = [table.schema.names.index(c) for c in cmd.on]
    # per partition writer: its rows (the new data file) and the events in arrival order
    writers: dict[tuple, list] = {}
    for r in cmd.rows:
        writers.setdefault(table.partition_of_row(r), []).append((tuple(r[i] for i in key_idx),
                                                                  tuple(r)))
    for k in cmd.deletes:
        # the partition source columns are equality fields (checked above), so a key names
        # its partition
        part = table.partition_from_values(dict(zip(cmd.on, k))) if table.spec.fields else ()
        writers.setdefault(part, []).append((tuple(k), None))
    data, deletes = [], []
    for part, events in sorted(writers.items(), key=repr):
        rows = tuple(r for _, r in events if r is not None)
        f = table.data_file(names("d"), rows) if rows else None
        inserted: dict[tuple, int] = {}      # insertedRowMap: key -> position in the new file
        eq_keys: list[tuple] = []            # the equality delete file's rows, as written
        positions: list[tuple[str, int]] = []
        written = 0
        for key, row in events:
            previous = inserted.pop(key, None)
            if previous is not None:
                positions.append((f.path, previous))
            else:
                eq_keys.append(key)
            if row is not None:
                inserted[key] = written
                written += 1
        if f is not None:
            data.append(f)
        if eq_keys:
            deletes.append(DeleteFile(names("e"), EQUALITY_DELETES, part,
                                      equality_columns=tuple(cmd.on),
                                      equality_rows=tuple(eq_keys)))
        if positions:
            deletes.append(DeleteFile(names("p"), POSITION_DELETES, part,
                                      positions=tuple(sorted(positions))))
    return Operation(rule.operation, add_data=tuple(data), add_deletes=tuple(deletes),
                     validations=_validations(rule, profile, cmd, ()))


def _plan_rewrite_position_deletes(rule, profile, table, store, snapshot, names) -> Operation:
    """Spark's rewrite_position_delete_files with ``rewrite-all`` (v2 tables).

    BinPackRewritePositionDeletePlanner groups the live position delete files by partition;
    SparkRewritePositionDeleteRunner.doRewrite reads each group's deletes and keeps only those
    whose data file is live in that partition ("keep only valid position deletes": a left-semi
    join with the data files), writing them into a new file; RewritePositionDeletesCommitManager
    .commit (1.10.2) commits one RewriteFiles validated from the start snapshot that deletes the
    group's files and adds the new ones with ``group.maxRewrittenDataSequenceNumber()``. A group
    whose deletes are all dangling adds no file. Nothing to rewrite: no commit."""
    if table.format_version >= 3:
        raise PlanError("rewrite_position_delete_files on a v3 table rewrites v2 position "
                        "deletes into deletion vectors, which the model does not follow")
    live = {e.file.path for e in live_data_entries(store, snapshot)}
    groups: dict[tuple, list] = {}
    for e in live_delete_entries(store, snapshot):
        if e.file.content == POSITION_DELETES:
            groups.setdefault(e.file.partition, []).append(e)
    if not groups:
        raise NothingToDo("rewrite_position_delete_files: no position delete file to rewrite")
    removed, added, seqs = [], [], []
    for part, entries in sorted(groups.items(), key=repr):
        removed += [e.file for e in entries]
        valid = sorted({p for e in entries for p in e.file.positions if p[0] in live})
        if valid:
            f = DeleteFile(names("p"), POSITION_DELETES, part, positions=tuple(valid))
            added.append(f)
            seqs.append((f.path, max(e.data_sequence_number for e in entries)))
    return Operation(rule.operation, add_deletes=tuple(added), remove_deletes=tuple(removed),
                     deletes_data_sequence_numbers=tuple(seqs),
                     validations=_validations(rule, profile, Command(REWRITE_POSITION_DELETES),
                                              ()))


def _metadata_delete(cmd, profile, table, store, snapshot) -> Operation | None:
    """Spark's metadata-only DELETE, or None when the filter cuts through a file.

    Spark 3.5 (OptimizeMetadataOnlyDeleteFromTable) asks the table first; Iceberg's
    SparkTable.canDeleteWhere -> canDeleteUsingMetadata (spark/v3.5 SparkTable.java, 1.10.2
    lines 339-382): every data file its scan plans for the filter (partition projection and
    metrics) must match it entirely (the strict partition projection, evaluated nulls first, or
    StrictMetricsEvaluator); an empty set qualifies (ExpressionUtil.selectsPartitions, checked
    first there, answers true only where this does too). Then deleteWhere commits
    ``newDelete().deleteFromRowFilter(expr)`` with the filter as written: a DeleteFiles
    with no validation, whose filter is applied again to the head it commits on (a concurrently
    added file that matches entirely is deleted too; one that matches in part fails "Cannot
    delete file where some, but not all, rows match filter"). Observed on Spark 3.5 + Iceberg
    1.10: a DELETE whose filter selects whole files (or none) adds a ``delete`` snapshot."""
    where = cmd.where if cmd.where is not None else TrueExpr()
    for e in live_data_entries(store, snapshot):
        f = e.file
        args = (table.spec, f.partition, f.lower(), f.upper(), f.nulls(), f.record_count)
        if might_match_file(where, *args) and not must_match_strict_projection(where, *args):
            return None
    return Operation(ops.DELETE_FILES, row_filter=where,
                     validations=_engine_only(profile))


def _position_deletes(table, store, snapshot, changed, names):
    """One file-scoped position delete file (v2) or deletion vector (v3) per touched file."""
    by_file: dict[str, list[int]] = defaultdict(list)
    for (path, pos) in sorted(changed):
        by_file[path].append(pos)
    out: list[DeleteFile] = []
    removed: list[DeleteFile] = []
    old_dvs = {e.file.referenced_data_file: e.file for e in live_delete_entries(store, snapshot)
               if e.file.content == DV}
    data = {e.file.path: e.file for e in live_data_entries(store, snapshot)}
    for path, positions in by_file.items():
        partition = data[path].partition
        if table.format_version >= 3:
            old = old_dvs.get(path)
            merged = set(positions) | (set(p for _, p in old.positions) if old else set())
            out.append(DeleteFile(names("dv"), DV, partition,
                                  positions=tuple((path, p) for p in sorted(merged))))
            if old is not None:
                removed.append(old)
        else:
            out.append(DeleteFile(names("p"), POSITION_DELETES, partition,
                                  positions=tuple((path, p) for p in positions)))
    return tuple(out), tuple(removed)


def _plan_compaction(cmd, rule, profile, table, rows, live, names, store, snapshot) -> Operation:
    """rewrite_data_files: rewrite the matching files' live rows, one file per partition."""
    targets = [f for f in live.values()
               if cmd.where is None or might_match_file(cmd.where, table.spec, f.partition, f.lower(),
                                                        f.upper(), f.nulls(), f.record_count)]
    if not cmd.option("rewrite-all"):
        targets = _binpack_selection(cmd, targets, store, snapshot)
    if not targets:
        raise NothingToDo("compaction finds no data file to rewrite")
    paths = {f.path for f in targets}
    kept = [r.values for r in rows if r.path in paths]
    v = _validations(rule, profile, cmd, ())
    if not cmd.option("use-starting-sequence-number"):
        # the new files get the commit's own sequence number, so an equality delete committed
        # since the start would no longer apply to them: validateNoNewDeletesForDataFiles
        # then fails on it too (RewriteDataFilesCommitManager.java:85-89, 1.10.2)
        v = replace(v, starting_sequence_number=False)
    added = _group_files(table, kept, names)
    replaced = tuple(sorted(targets, key=lambda f: f.path))
    if not cmd.option("partial-progress.enabled"):
        return Operation(ops.REWRITE, add_data=added, delete_data=replaced, validations=v)
    # doExecuteWithPartialProgress: one file group per partition, committed in batches of
    # ceil(groups / max-commits) groups, each batch its own RewriteFiles (in partition order
    # here; Spark commits batches as their rewrites finish)
    max_commits = cmd.option("partial-progress.max-commits")
    parts = sorted({f.partition for f in replaced}, key=repr)
    per_commit = -(-len(parts) // max_commits)
    groups = []
    for i in range(0, len(parts), per_commit):
        batch = set(parts[i:i + per_commit])
        groups.append(Operation(ops.REWRITE,
                                add_data=tuple(f for f in added if f.partition in batch),
                                delete_data=tuple(f for f in replaced if f.partition in batch),
                                validations=v))
    max_failed = cmd.option("partial-progress.max-failed-commits")
    return Operation(ops.REWRITE, add_data=added, delete_data=replaced, validations=v,
                     groups=tuple(groups),
                     max_failed_groups=max_commits if max_failed is None else max_failed)


def _binpack_selection(cmd, targets: list, store, snapshot) -> list:
    """BinPackRewriteFilePlanner.filterFileGroups (Iceberg 1.10.2) on one group per partition,
    every file taken to be below min-file-size (commands_spec.COMPACT_OPTIONS): a group is
    rewritten when it has more than one file and at least ``min-input-files``, or a file with
    at least ``delete-file-threshold`` delete files applying to it (DeleteFileIndex, as the scan
    task carries them), or whose file-scoped deleted records reach ``delete-ratio-threshold``
    of its records (``tooHighDeleteRatio``)."""
    from .validation import delete_can_apply_to
    data_seq = {e.file.path: e.data_sequence_number for e in live_data_entries(store, snapshot)}
    deletes = live_delete_entries(store, snapshot)
    min_files = cmd.option("min-input-files")
    threshold = cmd.option("delete-file-threshold")
    ratio = cmd.option("delete-ratio-threshold")

    def deletes_heavy(f) -> bool:
        applying = [d for d in deletes if delete_can_apply_to(d, f, data_seq[f.path])]
        if len(applying) >= threshold:     # tooManyDeletes: a threshold of 0 takes every file
            return True
        if not applying:
            return False
        known = sum(d.file.record_count for d in applying
                    if d.file.content != EQUALITY_DELETES and d.file.referenced_data_file)
        return min(known, f.record_count) / f.record_count >= ratio

    groups: dict = defaultdict(list)
    for f in targets:
        groups[f.partition].append(f)
    out = []
    for files in groups.values():
        if (1 < len(files) and len(files) >= min_files) or any(deletes_heavy(f) for f in files):
            out.extend(files)
    return out


def make_planner(profile_name: str, writer_profiles: dict[str, str] | None = None):
    """The planner the model calls at ``begin`` for command intents.

    ``writer_profiles`` maps a writer's name to its own profile (a pipeline whose jobs run on
    different engines: a Flink job, a Spark MERGE, a PyIceberg script on one table); a writer
    it does not name plans with ``profile_name``. The planner dispatches on the writer the
    model passes, so the transition system itself stays one model for every mix of engines."""
    default = get_profile(profile_name)
    per_writer = {w: get_profile(p) for w, p in (writer_profiles or {}).items()}

    def planner(cmd: Command, **kwargs: Any) -> Operation:
        writer = kwargs.get("writer")
        profile = per_writer.get(writer.name, default) if writer is not None else default
        if getattr(cmd, "write_options", ()):
            # the command's own write options (models/write_options.py)
            from .write_options import apply
            return apply(plan(cmd, profile, **kwargs), cmd, profile)
        return plan(cmd, profile, **kwargs)

    planner.profile = default  # type: ignore[attr-defined]
    planner.writer_profiles = per_writer  # type: ignore[attr-defined]
    return planner
