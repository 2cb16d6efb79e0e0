"""The conflict checks of Java's MergingSnapshotProducer, over the validation window.

Each check walks the snapshots committed since the writer's starting snapshot (the *validation
window*, ``validation_history``), reads only the manifests those snapshots wrote, keeps the
entries whose snapshot is in the window, applies the conflict-detection filter, and raises
``ValidationFailed`` with the Java message when it finds a conflict. ValidationException is never
retried by Java: the operation aborts.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote_plus
from typing import Iterable, Mapping

from .files import DV, EQUALITY_DELETES, DataFile, DeleteFile, bounds_of
from .filters import Expr, might_match_bounds, might_match_file, might_match_partition, predicates
from .metadata import (APPEND, DATA_MANIFEST, DELETE, DELETE_MANIFEST, DELETED, ADDED, EXISTING,
                       OVERWRITE, REPLACE, Manifest, ManifestEntry, Snapshot, TableMetadata)
from .table import TableConfig

# Operation-name filters (MergingSnapshotProducer's static sets).
VALIDATE_ADDED_FILES_OPERATIONS = frozenset({APPEND, OVERWRITE})
VALIDATE_DATA_FILES_EXIST_OPERATIONS = frozenset({OVERWRITE, REPLACE, DELETE})
VALIDATE_DATA_FILES_EXIST_SKIP_DELETE_OPERATIONS = frozenset({OVERWRITE, REPLACE})
VALIDATE_ADDED_DELETE_FILES_OPERATIONS = frozenset({OVERWRITE, DELETE})
VALIDATE_ADDED_DVS_OPERATIONS = frozenset({OVERWRITE, DELETE, REPLACE})
VALIDATE_DELETED_DATA_FILES_OPERATIONS = frozenset({OVERWRITE, REPLACE, DELETE})


class ValidationFailed(Exception):
    """Java's ValidationException: the message is Java's, the ``check`` names the validation."""

    def __init__(self, check: str, message: str):
        super().__init__(message)
        self.check = check
        self.message = message


def fmt_paths(paths: Iterable[str]) -> str:
    return "[" + ", ".join(paths) + "]"


def fmt_filter(expr) -> str:
    return "true" if expr is None else str(expr)


@dataclass(frozen=True)
class Window:
    """The snapshots in the validation window that match an operation filter, and their manifests."""

    manifests: tuple[Manifest, ...]
    snapshot_ids: frozenset[int]


#: PyIceberg's failures of the commit window (pyiceberg/table/update/validate.py
#: ``_validation_history``; pyiceberg/table/update/snapshot.py ``CommitWindow.resolve``)
PY_NO_MATCHING_SNAPSHOT = "No matching snapshot found."
PY_NO_STARTING_SNAPSHOT = "Cannot find starting snapshot "
#: the start of PyIceberg's (and Java's) "Found new conflicting delete files ..." message
PY_NEW_DELETE_FILES = "Found new conflicting delete files that can apply to records matching "


def ancestors_between(meta: TableMetadata, latest_id: int | None, oldest_id: int | None) -> list[Snapshot]:
    """Java SnapshotUtil.ancestorsBetween: from ``latest`` back, stopping before ``oldest``."""
    out = []
    for snap in meta.ancestors(latest_id):
        if oldest_id is not None and snap.snapshot_id == oldest_id:
            break
        out.append(snap)
    return out


def validation_history(store: Mapping, base: TableMetadata, starting_id: int | None,
                       operations: frozenset[str], content: str, parent: Snapshot, *,
                       pyiceberg: bool = False) -> Window:
    """Java's ``MergingSnapshotProducer.validationHistory``: the manifests of ``content`` that
    the window's snapshots of ``operations`` added.

    ``pyiceberg``: PyIceberg's ``_validation_history`` (pyiceberg/table/update/validate.py,
    0.12.0): the same walk from the head, which must reach the starting snapshot itself, or
    "No matching snapshot found." (a snapshot between them was expired: the chain of parents
    breaks). Where Java's check is ``lastSnapshot.parentId() == startingSnapshotId``, the two
    agree whenever the starting snapshot is still in the metadata, which PyIceberg's retry
    makes sure of first (``CommitWindow.resolve``, ``Model._validate``); with no starting
    snapshot (an empty table when the writer began) PyIceberg walks the whole lineage and
    never fails, Java fails where the chain breaks."""
    manifests: list[Manifest] = []
    new_ids: set[int] = set()
    last: Snapshot | None = None
    for snap in ancestors_between(base, parent.snapshot_id, starting_id):
        last = snap
        if snap.operation in operations:
            new_ids.add(snap.snapshot_id)
            for path in store[snap.manifest_list].manifests:
                m: Manifest = store[path]
                if m.content == content and m.added_snapshot_id == snap.snapshot_id:
                    manifests.append(m)
    if last is not None and last.parent_id != starting_id:
        if pyiceberg:
            if starting_id is None:
                return Window(tuple(manifests), frozenset(new_ids))
            raise ValidationFailed("history", PY_NO_MATCHING_SNAPSHOT)
        raise ValidationFailed(
            "history",
            f"Cannot determine history between starting snapshot "
            f"{'null' if starting_id is None else starting_id} "
            f"and the last known ancestor {last.snapshot_id}")
    return Window(tuple(manifests), frozenset(new_ids))


def starting_sequence_number(base: TableMetadata, starting_id: int | None) -> int:
    snap = base.snapshot(starting_id)
    return snap.sequence_number if snap is not None else 0


@dataclass(frozen=True)
class PartitionSet:
    """ReplacePartitions' conflict filter: the partitions it replaces (Java's PartitionSet).

    Rendered as Java does, each partition as ``spec.partitionToPath``: ``[category=a]``,
    ``[a=1/id_bucket=3]`` (values URL-encoded, null as ``null``).
    """

    partitions: frozenset
    names: tuple[str, ...] = ()

    def __str__(self) -> str:
        def path(p: tuple) -> str:
            return "/".join(f"{n}={'null' if v is None else quote_plus(str(v))}"
                            for n, v in zip(self.names, p))
        # Java prints its hash set's order; the model sorts (nulls first) to be deterministic.
        key = lambda p: tuple((v is not None, repr(v)) for v in p)  # noqa: E731
        return "[" + ", ".join(path(p) for p in sorted(self.partitions, key=key)) + "]"


ConflictFilter = Expr | PartitionSet | None


def data_matches(table: TableConfig, expr: ConflictFilter, f: DataFile) -> bool:
    """ManifestGroup.filterData for data entries: partition projection and metrics."""
    if expr is None:
        return True
    if isinstance(expr, PartitionSet):
        return f.partition in expr.partitions
    return might_match_file(expr, table.spec, f.partition, f.lower(), f.upper(), f.nulls(),
                            f.record_count)


def delete_matches(table: TableConfig, expr: ConflictFilter, f: DeleteFile) -> bool:
    """Delete files: partition pruning, plus the equality columns' bounds of equality deletes.

    Position deletes and DVs carry no bounds for table columns, so only their partition can
    exclude them (the seed's "only partition spec-based predicates can be applied").
    """
    if expr is None:
        return True
    if isinstance(expr, PartitionSet):
        return f.partition in expr.partitions
    if f.content == EQUALITY_DELETES and f.equality_rows:
        lower, upper, nulls = _equality_bounds(f)
        return might_match_file(expr, table.spec, f.partition, lower, upper, nulls,
                                f.record_count)
    return might_match_partition(expr, table.spec, f.partition)


def _equality_bounds(d: DeleteFile) -> tuple[dict, dict, dict]:
    """(lower bounds, upper bounds, null counts) of an equality delete file's equality columns:
    the metrics its writer records, the only ones it has of the table's columns."""
    lower, upper, nulls = bounds_of(d.equality_columns, d.equality_rows)
    return dict(lower), dict(upper), dict(nulls)


def _entries(window: Window) -> Iterable[ManifestEntry]:
    for m in window.manifests:
        for e in m.entries:
            if e.snapshot_id in window.snapshot_ids:
                yield e


def _py_matches(expr: ConflictFilter, f: DataFile | DeleteFile) -> bool:
    """PyIceberg's ``_filter_manifest_entries`` (pyiceberg/table/update/validate.py, 0.12):
    the conflict filter is evaluated by ``_InclusiveMetricsEvaluator`` on the entry's file
    alone: no partition projection (Java's ``data_matches`` / ``delete_matches`` project it on
    the file's partition first). So a file of another bucket whose bounds span the filter's
    value conflicts in PyIceberg and not in Java
    (scenarios/builtin/pyiceberg/serializable-delete-vs-insert-other-bucket-bounds-overlap.yaml),
    and a delete file holds no bounds of the table's columns unless it is an equality delete
    (its equality columns'): every position delete file and DV conflicts, whatever its
    partition ("partition_set is None, so any concurrently committed delete file counts as a
    conflict even in unrelated partitions", ``_SnapshotProducer._validate_concurrency``)."""
    if expr is None or isinstance(expr, PartitionSet):
        return True
    if isinstance(f, DeleteFile):
        if f.content == EQUALITY_DELETES and f.equality_rows:
            return might_match_bounds(expr, *_equality_bounds(f), f.record_count)
        return might_match_bounds(expr, {}, {}, {}, f.record_count)
    return might_match_bounds(expr, f.lower(), f.upper(), f.nulls(), f.record_count)


def _py_entries(window: Window, expr: ConflictFilter, statuses: tuple[str, ...]) -> list:
    """The entries PyIceberg finds in conflict, in its order: the window's manifests newest
    snapshot first, each entry whose snapshot is in the window and whose status is one the
    check reads (added data files: every live entry, ``fetch_manifest_entry`` discarding
    DELETED ones; deleted data files: DELETED; added delete files: ADDED), kept by
    ``_py_matches``."""
    return [e for e in _entries(window) if e.status in statuses and _py_matches(expr, e.file)]


def _py_conflict(check: str, what: str, entries: list) -> ValidationFailed:
    """PyIceberg's failure of ``_validate_added_data_files`` / ``_validate_deleted_data_files``
    over its conflicting ``entries`` (``_py_entries``): "{What} data files were found matching
    the filter for snapshots {ids}!". Its entries are a generator, and ``if any(entries)``
    consumes the first before ``{e.snapshot_id for e in entries}`` is built, so the set holds
    the snapshot ids of the conflicting entries after the first (``set()`` when there is
    one). The ids are the model's; the PyIceberg target masks both sides' ids
    (``pyiceberg_target.mask_snapshot_ids``), so how many there are is what is compared."""
    ids = sorted({e.snapshot_id for e in entries[1:] if e.snapshot_id is not None})
    shown = "{" + ", ".join(str(i) for i in ids) + "}" if ids else "set()"
    return ValidationFailed(check, f"{what} data files were found matching the filter for "
                                   f"snapshots {shown}!")


def validate_added_data_files(store, table, base, starting_id, expr, parent, *,
                              pyiceberg: bool = False):
    """validateAddedDataFiles: no data file was ADDED in the window that could match ``expr``.
    ``pyiceberg``: PyIceberg's ``_validate_added_data_files`` (``_py_entries``)."""
    window = validation_history(store, base, starting_id, VALIDATE_ADDED_FILES_OPERATIONS,
                                DATA_MANIFEST, parent, pyiceberg=pyiceberg)
    if pyiceberg:
        entries = _py_entries(window, expr, (ADDED, EXISTING))
        if entries:
            raise _py_conflict("no_conflicting_data", "Added", entries)
        return
    conflicts = [e.file.path for e in _entries(window)
                 if e.status == ADDED and data_matches(table, expr, e.file)]
    if conflicts:
        what = f"partitions {expr}" if isinstance(expr, PartitionSet) else fmt_filter(expr)
        raise ValidationFailed(
            "no_conflicting_data",
            f"Found conflicting files that can contain records matching {what}: {fmt_paths(conflicts)}")


def _added_delete_entries(store, table, base, starting_id, expr, parent, operations, *,
                          pyiceberg: bool = False) -> list[ManifestEntry]:
    """Java's addedDeleteFiles(): live delete entries of manifests written in the window whose
    data sequence number is above the starting snapshot's (no per-entry snapshot filter).
    ``pyiceberg``: PyIceberg's ``_added_delete_files``: the ADDED delete entries of the
    window's snapshots, by ``_py_matches`` (no partition)."""
    if table.format_version < 2:
        return []
    window = validation_history(store, base, starting_id, operations, DELETE_MANIFEST, parent,
                                pyiceberg=pyiceberg)
    if pyiceberg:
        return _py_entries(window, expr, (ADDED,))
    start_seq = starting_sequence_number(base, starting_id)
    return [e for m in window.manifests for e in m.entries
            if e.is_live and e.data_sequence_number > start_seq
            and delete_matches(table, expr, e.file)]


def delete_can_apply_to(delete: ManifestEntry, data_file: DataFile, data_seq: int) -> bool:
    """Java DeleteFileIndex.forDataFile: may this delete file apply to ``data_file``?

    * position deletes with a referenced data file (file-scoped, DVs) apply to that file only;
      others are keyed by partition and apply to every data file of it (no file-path range
      check in the current index); they need ``data_seq <= seq(delete)``;
    * equality deletes apply within their partition (unpartitioned: globally) when
      ``data_seq < seq(delete)`` and the data file's bounds on the equality columns overlap the
      delete's (canContainEqDeletesForFile).
    """
    d: DeleteFile = delete.file
    if d.content == EQUALITY_DELETES:
        if d.partition and d.partition != data_file.partition:
            return False
        if data_seq >= delete.data_sequence_number:
            return False
        return _equality_bounds_overlap(d, data_file)
    if data_seq > delete.data_sequence_number:
        return False
    ref = d.referenced_data_file
    if ref is not None:
        return ref == data_file.path
    return d.partition == data_file.partition


def _equality_bounds_overlap(d: DeleteFile, data_file: DataFile) -> bool:
    """Java DeleteFileIndex.canContainEqDeletesForFile (1.10), on the metrics a writer records
    (value count = record count, null counts, bounds; every column optional):

    * per equality column, if both files may hold nulls, they may match on null: next column;
    * if the data file's column is all null and the delete's has no null, no match (and the
      other way round): an equality delete with **zero rows** is "all null" (0 nulls of 0
      values), so it can apply to no file holding values
      (scenarios/builtin/regressions/equality-delete-zero-rows-cannot-apply.yaml);
    * otherwise, where both files have bounds, disjoint ranges mean no match.
    """
    d_lower, d_upper, d_nulls = _equality_bounds(d)
    d_count = len(d.equality_rows)
    f_lower, f_upper, f_nulls = data_file.lower(), data_file.upper(), data_file.nulls()
    f_count = data_file.record_count
    check_ranges = bool(d_lower) and bool(d_upper)       # deleteFile.hasLowerAndUpperBounds()
    for col in d.equality_columns:
        d_null, f_null = d_nulls.get(col), f_nulls.get(col)
        contains_null = (lambda n: n is None or n > 0)
        all_non_null = (lambda n: n is not None and n <= 0)
        all_null = (lambda n, count: n is not None and n == count)
        if contains_null(f_null) and contains_null(d_null):
            continue
        if all_null(f_null, f_count) and all_non_null(d_null):
            return False
        if all_null(d_null, d_count) and all_non_null(f_null):
            return False
        if not check_ranges:
            continue
        if col not in d_lower or col not in d_upper or col not in f_lower or col not in f_upper:
            continue  # a bound is unknown: assume the delete file may match
        if d_upper[col] < f_lower[col] or d_lower[col] > f_upper[col]:
            return False
    return True


def _py_delete_applies(entry: ManifestEntry, data_file: DataFile, seq_num: int) -> bool:
    """PyIceberg's ``DeleteFileIndex.for_data_file(seq_num, data_file, data_file.partition)``
    (pyiceberg/table/delete_file_index.py, 0.12.0 and main): every delete file is indexed as a
    position delete, keyed by the one data file its ``file_path`` bounds name
    (``_referenced_data_file_path``: lower == upper) or else by its partition; a partition's
    deletes apply when the path bounds may hold the data file's path (``_applies_to_data_file``;
    none recorded: always: an equality delete, whose bounds are on its equality columns, or a DV,
    which Java writes with ``referencedDataFile`` and no column bounds). Either way only the
    deletes whose data sequence number is at least ``seq_num`` count (``PositionDeletes.
    filter_by_seq``: ``bisect_left``)."""
    if entry.data_sequence_number < seq_num:
        return False
    d: DeleteFile = entry.file
    bounds = None if d.content in (EQUALITY_DELETES, DV) else d.path_bounds
    if bounds is not None and bounds[0] == bounds[1]:
        return bounds[0] == data_file.path
    if d.partition != data_file.partition:
        return False
    return bounds is None or bounds[0] <= data_file.path <= bounds[1]


def validate_no_new_deletes_for_data_files(store, table, base, starting_id, expr, data_files,
                                           parent, *, ignore_equality_deletes=False,
                                           pyiceberg: bool = False):
    """validateNoNewDeletesForDataFiles: no new delete in the window applies to a replaced file.

    ``pyiceberg``: PyIceberg's ``_validate_no_new_deletes_for_data_files``
    (pyiceberg/table/update/validate.py, 0.12.0; unchanged on main as of 2026-08). Its caller
    ``_SnapshotProducer._validate_concurrency`` passes the catalog's head as the function's
    ``starting_snapshot`` and the operation's base as its ``parent_snapshot``
    (snapshot.py:506-508), so the window (base, head] is right but the sequence number the
    deletes must reach is the *head's* (``_starting_sequence_number(table,
    starting_snapshot)``), not the base's as in Java: a delete file committed in the window
    applies only when no later commit followed it. A delete for a replaced file that another
    commit followed is missed, and the overwrite brings the deleted rows back
    (scenarios/builtin/commands/
    mixed-pyiceberg-file-overwrite-misses-position-delete-followed-by-commit.yaml,
    seen on real Spark 3.5 + PyIceberg 0.12). Which deletes apply: ``_py_delete_applies``;
    the message names PyIceberg's ``DataFile`` record, here its path
    (``pyiceberg_target`` compares the rest whole)."""
    if not data_files:
        return
    deletes = _added_delete_entries(store, table, base, starting_id, expr, parent,
                                    VALIDATE_ADDED_DELETE_FILES_OPERATIONS, pyiceberg=pyiceberg)
    if pyiceberg:
        seq_num = parent.sequence_number or 0        # INITIAL_SEQUENCE_NUMBER
        for f in data_files:
            if any(_py_delete_applies(d, f, seq_num) for d in deletes):
                raise ValidationFailed(
                    "no_new_deletes_for_data_files",
                    f"Cannot commit, found new delete for replace data file {f.path}")
        return
    start_seq = starting_sequence_number(base, starting_id)
    for f in data_files:
        applying = [d for d in deletes if delete_can_apply_to(d, f, start_seq)]
        if ignore_equality_deletes:
            if any(d.file.content != EQUALITY_DELETES for d in applying):
                raise ValidationFailed(
                    "no_new_deletes_for_data_files",
                    f"Cannot commit, found new position delete for replaced data file: {f.path}")
        elif applying:
            raise ValidationFailed(
                "no_new_deletes_for_data_files",
                f"Cannot commit, found new delete for replaced data file: {f.path}")


def validate_no_new_delete_files(store, table, base, starting_id, expr, parent, *,
                                 pyiceberg: bool = False, py_filter: str | None = None):
    """validateNoNewDeleteFiles: no delete file added in the window could match ``expr``.
    ``pyiceberg``: PyIceberg's ``_validate_no_new_delete_files``, worded as PyIceberg words it
    when ``py_filter`` (its ``str`` of the filter, ``Validations.py_filter``) is known:
    "... matching {data_filter}: {conflicting_delete_paths}", the paths a Python list."""
    deletes = _added_delete_entries(store, table, base, starting_id, expr, parent,
                                    VALIDATE_ADDED_DELETE_FILES_OPERATIONS, pyiceberg=pyiceberg)
    if deletes and pyiceberg and py_filter is not None:
        raise ValidationFailed(
            "no_conflicting_delete_files",
            f"{PY_NEW_DELETE_FILES}{py_filter}: {[d.file.path for d in deletes]!r}")
    if deletes:
        what = fmt_filter(expr)
        raise ValidationFailed(
            "no_conflicting_delete_files",
            f"Found new conflicting delete files that can apply to records matching {what}: "
            f"{fmt_paths(d.file.path for d in deletes)}")


def validate_deleted_data_files(store, table, base, starting_id, expr, parent, *,
                                pyiceberg: bool = False):
    """validateDeletedDataFiles: no data file matching ``expr`` was deleted in the window.
    ``pyiceberg``: PyIceberg's ``_validate_deleted_data_files`` (``_py_entries``)."""
    window = validation_history(store, base, starting_id, VALIDATE_DELETED_DATA_FILES_OPERATIONS,
                                DATA_MANIFEST, parent, pyiceberg=pyiceberg)
    if pyiceberg:
        entries = _py_entries(window, expr, (DELETED,))
        if entries:
            raise _py_conflict("no_conflicting_deletes", "Deleted", entries)
        return
    conflicts = [e.file.path for e in _entries(window)
                 if e.status == DELETED and data_matches(table, expr, e.file)]
    if conflicts:
        verb = "apply to" if isinstance(expr, PartitionSet) else "contain"
        raise ValidationFailed(
            "no_conflicting_deletes",
            f"Found conflicting deleted files that can {verb} records matching {fmt_filter(expr)}: "
            f"{fmt_paths(conflicts)}")


def validate_data_files_exist(store, table, base, starting_id, required: Iterable[str], skip_deletes,
                              expr, parent, written: tuple = (), *, pyiceberg: bool = False):
    """validateDataFilesExist: no required data file was removed in the window.

    ``pyiceberg``: PyIceberg's ``_validate_data_files_exist`` (pyiceberg/table/update/
    validate.py, 0.12.0) over the files an overwrite deletes: "Data files were concurrently
    deleted: [...]" (``skip_deletes``, ``expr`` and ``written`` are Java's and unused).

    ``written``: the operation's ``written_names`` (``caseSensitive(false)`` with a filter
    written in other cases). This one validation builds its ManifestGroup without
    ``.caseSensitive(caseSensitive)`` (MergingSnapshotProducer.java:800-811 in 1.10.2, the same
    on main), so the conflict filter binds case-sensitively as soon as the window holds a
    manifest to evaluate (``ManifestGroup.entries``' evaluator cache, ``Projections.inclusive``
    binding each predicate): the commit fails there, before any file is compared
    (scenarios/builtin/filters/case-insensitive-row-delta-data-files-exist.yaml)."""
    required = set(required)
    if not required:
        return
    if pyiceberg:
        # _validate_data_files_exist: the window's DELETED entries of the files' partitions
        # (partition_set, no filter) that are one of the files; paths sorted, as a Python list
        window = validation_history(store, base, starting_id, VALIDATE_DATA_FILES_EXIST_OPERATIONS,
                                    DATA_MANIFEST, parent, pyiceberg=True)
        gone = sorted({e.file.path for e in _entries(window)
                       if e.status == DELETED and e.file.path in required})
        if gone:
            raise ValidationFailed("data_files_exist",
                                   f"Data files were concurrently deleted: {gone!r}")
        return
    ops = (VALIDATE_DATA_FILES_EXIST_SKIP_DELETE_OPERATIONS if skip_deletes
           else VALIDATE_DATA_FILES_EXIST_OPERATIONS)
    window = validation_history(store, base, starting_id, ops, DATA_MANIFEST, parent)
    if written and window.manifests and expr is not None:
        _bind_case_sensitive(table, expr, dict(written))
    missing = [e.file.path for e in _entries(window)
               if e.status == DELETED and e.file.path in required and data_matches(table, expr, e.file)]
    if missing:
        raise ValidationFailed("data_files_exist",
                               f"Cannot commit, missing data files: {fmt_paths(missing)}")


def _bind_case_sensitive(table: TableConfig, expr: Expr, written: Mapping[str, str]) -> None:
    """Java's case-sensitive binding of a filter the model holds with the schema's names
    (``written``: schema name -> the name as written, for those written otherwise): the first
    predicate, left to right, whose name as written is not a column fails as
    ``NamedReference.bind`` does (NamedReference.java:45). ``written`` holds a column's first
    spelling other than the schema's (``filters.resolve_columns``), which is the one Java
    fails on first, even where a correctly spelled predicate of that column comes before it."""
    for pred in predicates(expr):
        name = written.get(pred.column)
        if name is not None:
            raise ValidationFailed("data_files_exist", f"Cannot find field '{name}' in struct: "
                                                       f"{table.schema.java_struct()}")


def validate_added_dvs(store, table, base, starting_id, expr, parent, dv_targets: Iterable[str]):
    """validateAddedDVs (v3): no DV for the same data file was added concurrently."""
    targets = set(dv_targets)
    if not targets:
        return
    window = validation_history(store, base, starting_id, VALIDATE_ADDED_DVS_OPERATIONS,
                                DELETE_MANIFEST, parent)
    for e in _entries(window):
        if (e.status == ADDED and e.file.content == DV and e.file.referenced_data_file in targets
                and delete_matches(table, expr, e.file)):
            raise ValidationFailed(
                "added_dvs",
                f"Found concurrently added DV for {e.file.referenced_data_file}: {e.file.path}")
