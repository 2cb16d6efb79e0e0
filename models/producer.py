"""Applying an operation to the refreshed table: Java's ``SnapshotProducer.apply()``.

Two halves, as in Java:

* ``validate_operation``: the operation's ``validate(base, parent)``, the checks enabled by its
  validation switches (see ``validation.py``), run against the refreshed head;
* ``produce_snapshot``: MergingSnapshotProducer's manifest work: filter the parent's manifests
  (rewriting the ones that lose files, which is where "Missing required files to delete" is
  raised), drop delete files that can no longer apply, write new manifests for added files, and
  build the new snapshot and metadata file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from . import operations as ops
from .files import DV, EQUALITY_DELETES, POSITION_DELETES, DataFile, DeleteFile, bounds_of
from .filters import (FalseExpr, manifest_can_contain_any, might_match_manifest,
                      must_match_file, rows_might_match_file)
from .metadata import (ADDED, APPEND, BRANCH, DATA_MANIFEST, MAIN_BRANCH, DELETE, DELETE_MANIFEST, DELETED, EXISTING,
                       OVERWRITE, REPLACE, Manifest, ManifestEntry, ManifestList, Snapshot,
                       TableMetadata, attempt_prefix)
from .operations import Operation
from .reads import manifests_of
from .table import TableConfig
from .validation import (PartitionSet, ValidationFailed, starting_sequence_number,
                         validate_added_data_files, validate_added_dvs, validate_data_files_exist,
                         validate_deleted_data_files, validate_no_new_delete_files,
                         validate_no_new_deletes_for_data_files)
from .values import replace


def operation_name(op: Operation, iceberg_version: tuple[int, int] = (1, 11)) -> str:
    """The snapshot's operation name (SnapshotProducer.operation() of each Java class)."""
    if op.kind in (ops.APPEND, ops.FAST_APPEND):
        return APPEND
    if op.kind == ops.REWRITE:
        return REPLACE
    if op.kind == ops.DELETE_FILES:
        return DELETE
    if op.kind == ops.REPLACE_PARTITIONS:
        return OVERWRITE
    if op.kind == ops.OVERWRITE:
        # BaseOverwriteFiles.operation(): deletesDataFiles() is ManifestFilterManager.
        # containsDeletes(), where a row filter `false` (deleteExpression == alwaysFalse()) is
        # no delete (differential seed 4: `overwrite, row_filter: 'false'` is `overwrite`)
        deletes = bool(op.delete_data) or (op.row_filter is not None
                                           and not isinstance(op.row_filter, FalseExpr))
        adds = bool(op.add_data)
        if deletes and not adds:
            return DELETE
        if adds and not deletes:
            return APPEND
        return OVERWRITE
    if op.kind == ops.ROW_DELTA:
        adds_rows = bool(op.add_data)
        adds_deletes = bool(op.add_deletes)
        # The APPEND branch is newer than Iceberg 1.10 (BaseRowDelta.operation() on main).
        # (main: `addsDataFiles() && !addsDeleteFiles() && !deletesDataFiles()`)
        if adds_rows and not adds_deletes and not op.delete_data and iceberg_version >= (1, 11):
            return APPEND
        if adds_deletes and not adds_rows:
            return DELETE
        return OVERWRITE
    raise ValueError(f"unknown operation kind {op.kind}")


def validate_operation(store: Mapping, table: TableConfig, base: TableMetadata, op: Operation,
                       starting_id: int | None) -> None:
    """Run the operation's enabled checks against ``base`` (the refreshed metadata), with the
    head of the operation's target branch as ``parent`` (SnapshotProducer.apply)."""
    if table.format_version >= 3:
        v2_positions = [d.path for d in op.add_deletes if d.content == POSITION_DELETES]
        if v2_positions:
            # MergingSnapshotProducer.validateDeleteFileForVersion (1.10.2 lines 303-308), run by
            # addDeletes as the operation is built: an IllegalArgumentException, never retried.
            # Engines that write DVs on v3 never get here; Flink 1.20's sink writes position
            # delete files whatever the format (scenario flink-upsert-v3-position-delete-refused)
            raise ValidationFailed("delete_version", f"Must use DVs for position deletes in "
                                                     f"V{table.format_version}: {v2_positions[0]}")
    parent = base.latest_snapshot(op.branch)
    if parent is None:
        return
    v = op.validations
    expr = v.filter
    args = (store, table, base, starting_id)
    py = {"pyiceberg": v.pyiceberg_validation}
    if op.kind == ops.OVERWRITE:
        # BaseOverwriteFiles keeps rowFilter() = Expressions.alwaysFalse() until
        # overwriteByRowFilter is called, and tests `rowFilter() != Expressions.alwaysFalse()`:
        # an explicit row filter `false` is the same as none (so the conflict filter falls back
        # to alwaysTrue: scenarios/builtin/regressions/overwrite-row-filter-false-is-unset.yaml)
        row_filter = None if isinstance(op.row_filter, FalseExpr) else op.row_filter
        if v.no_conflicting_data:
            # BaseOverwriteFiles.dataConflictDetectionFilter()
            if expr is not None:
                data_filter = expr
            elif row_filter is not None and not op.delete_data:
                data_filter = row_filter
            else:
                data_filter = None
            validate_added_data_files(*args, data_filter, parent, **py)
        if v.no_conflicting_deletes:
            if row_filter is not None:
                f = expr if expr is not None else row_filter
                validate_no_new_delete_files(*args, f, parent, py_filter=v.py_filter, **py)
                validate_deleted_data_files(*args, f, parent, **py)
            elif v.deleted_data_files_by_filter and expr is not None:
                # PyIceberg's _validate_concurrency: its delete predicate is checked whenever set
                validate_no_new_delete_files(*args, expr, parent, py_filter=v.py_filter, **py)
                validate_deleted_data_files(*args, expr, parent, **py)
            if op.delete_data:
                if v.pyiceberg_validation:
                    # _SnapshotProducer._validate_concurrency (pyiceberg/table/update/
                    # snapshot.py:504-508): for the files it deletes, they still exist, then
                    # no new delete applies to them. PyIceberg runs these for the rewritten
                    # files only (a DELETE's whole-file drops are another producer's, checked
                    # by its filter alone); a dropped file gone in the window already failed
                    # validate_deleted_data_files above (it matches the filter), so checking
                    # every deleted file fails the same way
                    validate_data_files_exist(*args, [f.path for f in op.delete_data], False,
                                              None, parent, pyiceberg=True)
                validate_no_new_deletes_for_data_files(*args, expr, op.delete_data, parent,
                                                       **py)
    elif op.kind == ops.ROW_DELTA:
        if starting_id is not None and all(
                s.snapshot_id != starting_id for s in base.ancestors(parent.snapshot_id)):
            # BaseRowDelta.validate: Preconditions.checkArgument(SnapshotUtil.isAncestorOf(
            # parent, startingSnapshotId, base::snapshot), ...): once ExpireSnapshots removed the
            # starting snapshot (or one between it and the head), the walk cannot reach it. An
            # IllegalArgumentException in Java, never retried; only RowDelta checks this.
            raise ValidationFailed(
                "starting_ancestor",
                f"Snapshot {starting_id} is not an ancestor of {parent.snapshot_id}")
        if v.data_files_exist:
            validate_data_files_exist(*args, v.data_files_exist, not v.deleted_files, expr, parent,
                                      op.written_names)
        if v.no_conflicting_data_files:
            validate_added_data_files(*args, expr, parent)
        if v.no_conflicting_delete_files:
            if op.delete_data:
                # BaseRowDelta.validate (BaseRowDelta.java:157): "validate that explicitly
                # deleted files have not had added deletes" (removeRows)
                validate_no_new_deletes_for_data_files(*args, expr, op.delete_data, parent)
            validate_no_new_delete_files(*args, expr, parent)
        referenced = set(v.data_files_exist or ())
        clash = [f.path for f in op.delete_data if f.path in referenced]
        if clash:
            # BaseRowDelta.validateNoConflictingFileAndPositionDeletes (BaseRowDelta.java:177):
            # removeRows of a file named by validateDataFilesExist
            raise ValidationFailed("removed_referenced",
                                   f"Cannot delete data files [{', '.join(clash)}] that are "
                                   f"referenced by new delete files")
        if table.format_version >= 3 and op.adds_dvs:
            targets = [d.referenced_data_file for d in op.add_deletes if d.content == DV]
            validate_added_dvs(*args, expr, parent, targets)
    elif op.kind == ops.REWRITE:
        if op.delete_data:
            validate_no_new_deletes_for_data_files(
                *args, None, op.delete_data, parent,
                ignore_equality_deletes=v.starting_sequence_number)
    elif op.kind == ops.REPLACE_PARTITIONS:
        pfilter = (None if table.spec.is_unpartitioned
                   else PartitionSet(frozenset(f.partition for f in op.add_data),
                                     tuple(f.name for f in table.spec.fields)))
        if v.no_conflicting_data:
            validate_added_data_files(*args, pfilter, parent)
        if v.no_conflicting_deletes:
            validate_deleted_data_files(*args, pfilter, parent)
            validate_no_new_delete_files(*args, pfilter, parent)


@dataclass(frozen=True)
class Produced:
    """What ``write metadata`` wrote: new objects for the store and the new metadata file."""

    objects: tuple[tuple[str, object], ...]
    metadata: TableMetadata
    snapshot: Snapshot


def _row_filter_deletes(table: TableConfig, op: Operation, f: DataFile) -> bool:
    """deleteFromRowFilter/overwriteByRowFilter: is this data file removed by the row filter?

    As Java's ManifestFilterManager decides it (PartitionAndMetricsEvaluator), from metadata
    only: the filter is first reduced by the file's partition (``residual_for``, nulls-first
    comparisons included); a file whose residual and bounds prove no row can match is kept; one
    where every row provably matches is removed; otherwise the commit fails, since Iceberg
    cannot delete part of a file by metadata.
    """
    if op.row_filter is None:
        return False
    expr = op.row_filter
    args = (table.spec, f.partition, f.lower(), f.upper(), f.nulls(), f.record_count)
    if not rows_might_match_file(expr, *args):
        return False
    if must_match_file(expr, *args):
        return True
    raise ValidationFailed(
        "row_filter",
        f"Cannot delete file where some, but not all, rows match filter {expr}: {f.path}")


def _row_filter_deletes_delete_file(table: TableConfig, op: Operation, d: DeleteFile) -> bool:
    """The row filter also applies to delete files, which are removed only when every row they
    could delete provably matches (a partial match keeps them, unlike data files): Java's
    ``markedForDelete || rowsMightMatch``, then ``rowsMustMatch``."""
    if op.row_filter is None:
        return False
    lower = upper = nulls = {}
    count = 1
    if d.content == EQUALITY_DELETES and d.equality_rows:
        lo, hi, nl = bounds_of(d.equality_columns, d.equality_rows)
        lower, upper, nulls, count = dict(lo), dict(hi), dict(nl), len(d.equality_rows)
    args = (table.spec, d.partition, lower, upper, nulls, count)
    return rows_might_match_file(op.row_filter, *args) and must_match_file(op.row_filter, *args)


class _ManifestWriter:
    """Names and writes the manifests of one snapshot attempt (paths are unique per attempt)."""

    def __init__(self, prefix: str, snapshot_id: int, seq: int):
        self.prefix, self.snapshot_id, self.seq = prefix, snapshot_id, seq
        self.count = 0
        self.objects: dict[str, object] = {}

    def write(self, content: str, entries: list[ManifestEntry]) -> Manifest:
        self.count += 1
        path = f"{self.prefix}-m{self.count}.avro"
        m = Manifest(path, content, self.snapshot_id, self.seq, tuple(entries))
        self.objects[path] = m
        return m


def _committed_min_sequence(m: Manifest, snapshot_id: int) -> int | None:
    """``ManifestFile.minSequenceNumber`` as MergingSnapshotProducer.apply reads it for the
    delete-file clean-up (1.10.2 lines 948-957): ManifestWriter tracks the smallest data sequence
    number of the *live* entries it writes; a manifest with none is written UNASSIGNED and, once
    committed, inherits its snapshot's sequence number (so a carried manifest holding only
    DELETED entries counts with the sequence number of the commit that wrote it: found by the
    random differential, seed 3); one this commit rewrote counts its live (EXISTING) entries,
    and with none it is still UNASSIGNED and is left out (ManifestWriter.addEntry tracks
    ``entry.isLive()`` entries whatever their status: random differential, seed 11)."""
    live = [e.data_sequence_number for e in m.entries if e.is_live]
    if m.added_snapshot_id == snapshot_id:
        return min(live) if live else None
    return min(live) if live else m.sequence_number


def _filter_manifests(manifests: list[Manifest], doomed, writer: _ManifestWriter,
                      opened=None, cache: dict | None = None
                      ) -> tuple[list[Manifest], set[str], int]:
    """ManifestFilterManager: rewrite each manifest that loses a live file; keep the others.

    In a rewritten manifest, removed entries become DELETED (this snapshot's id), other live
    entries become EXISTING, and entries DELETED by earlier snapshots are dropped. ``opened``
    says which manifests the filter reads at all (None: every one). Returns the manifests, the
    removed paths, and the count the snapshot summary gives: per rewritten manifest, its removed
    paths once each (filterManifestWithDeletedFiles keeps a per-manifest set and counts a
    duplicate path in the same manifest only as ``duplicateDeleteCount``), so a path the table
    lists in two manifests counts twice.

    ``cache`` (manifest path -> the paths its filtering removed; empty: kept as it is) is
    ManifestFilterManager's ``filteredManifests``: the operation's filter manager keeps each
    manifest's result across its commit attempts (and, in a transaction, from the operation's
    in-transaction commit to the re-application), and only a new delete added to the builder
    clears it. So a retry does not filter a manifest it has seen again, even when the
    clean-up's minimum sequence number or the data files removed changed since. It is read
    and extended in place.
    """
    out: list[Manifest] = []
    removed: set[str] = set()
    count = 0
    for m in manifests:
        if cache is not None and m.path in cache:
            decided = cache[m.path]
            if not decided:
                out.append(m)
                continue
            hits = [e for e in m.entries if e.is_live and e.file.path in decided]
        elif opened is not None and not opened(m):
            if cache is not None:
                cache[m.path] = frozenset()
            out.append(m)
            continue
        else:
            hits = [e for e in m.entries if e.is_live and doomed(e)]
            if cache is not None:
                cache[m.path] = frozenset(e.file.path for e in hits)
        if not hits:
            out.append(m)
            continue
        hit_ids = {id(e) for e in hits}
        entries = []
        here: set[str] = set()
        for e in m.entries:
            if not e.is_live:
                continue
            if id(e) in hit_ids:
                if e.file.path not in here:
                    here.add(e.file.path)
                    count += 1
                removed.add(e.file.path)
                entries.append(replace(e, status=DELETED, snapshot_id=writer.snapshot_id))
            else:
                entries.append(replace(e, status=EXISTING))
        out.append(writer.write(m.content, entries))
    return out, removed, count


def _merge(manifests: list[Manifest], writer: _ManifestWriter, min_count: int) -> list[Manifest]:
    """ManifestMergeManager.mergeGroup: with at least ``min_count`` manifests, merge them into
    one. Java packs manifests into bins of ``commit.manifest.target-size-bytes`` (8 MB) by their
    byte length first; the model has no byte sizes and keeps one bin (every table it runs stays
    far below 8 MB), where Java's rule is "a bin holding the commit's first manifest is merged
    once it has min-count-to-merge manifests" (ManifestMergeManager.java:153). Entries keep
    their data sequence numbers (``ManifestWriter.add``/``existing`` preserve them)."""
    if len(manifests) < max(min_count, 2):
        return manifests
    entries = []
    for m in manifests:
        for e in m.entries:
            if e.snapshot_id == writer.snapshot_id:
                entries.append(e)
            elif e.is_live:
                entries.append(replace(e, status=EXISTING))
    return [writer.write(manifests[0].content, entries)]


def merge_duplicate_dvs(deletes: tuple[DeleteFile, ...], snapshot_id: int) -> tuple:
    """MergingSnapshotProducer.mergeDVs (Iceberg 1.10): several DVs one commit adds for the same
    data file are read and merged into one ("Merging {} duplicate DVs for data file {}"), written
    to ``merged-dvs-<snapshot id>-<attempt>.puffin``; DVs of other data files and other delete
    files are kept as they are. Java writes every merged DV of an attempt as a blob of that one
    Puffin file; the model names each merged DV ``merged-dvs-<snapshot id>-<n>`` (n = 1, 2, ...
    in the order of the data files), since a model file is one path."""
    groups: dict[str, list[DeleteFile]] = {}
    for d in deletes:
        if d.content == DV:
            groups.setdefault(d.referenced_data_file, []).append(d)
    if all(len(g) == 1 for g in groups.values()):
        return deletes
    out: list[DeleteFile] = []
    merged_for: set[str] = set()
    n = 0
    for d in deletes:
        ref = d.referenced_data_file if d.content == DV else None
        if ref is None or len(groups[ref]) == 1:
            out.append(d)
        elif ref not in merged_for:
            merged_for.add(ref)
            n += 1
            positions = sorted({p for g in groups[ref] for p in g.positions})
            out.append(DeleteFile(f"merged-dvs-{snapshot_id}-{n}", DV, d.partition,
                                  positions=tuple(positions)))
    return tuple(out)


def _fail_any_delete(table: TableConfig, op: Operation, manifests, removed) -> None:
    """ReplacePartitions.validateAppendOnly() -> MergingSnapshotProducer.failAnyDelete() sets
    failAnyDelete on the data *and* the delete filter manager (MergingSnapshotProducer.java:172);
    ManifestFilterManager.manifestHasDeletedFiles (ManifestFilterManager.java:460) then throws
    DeleteException for any file it would remove: a data file of a replaced partition, but also
    a delete file there (a position delete left behind by an earlier DeleteFiles) or one dropped
    as older than every live data file. BaseReplacePartitions.apply (BaseReplacePartitions.java:
    121) rethrows it as ValidationException "Cannot commit file that conflicts with existing
    partition: <partitionToPath>" of that file (the model names the first in manifest order)."""
    if not (op.validations.append_only and removed):
        return
    first = next(e.file for m in manifests for e in m.entries if e.is_live and e.file.path in removed)
    where = str(PartitionSet(frozenset({first.partition}), tuple(f.name for f in table.spec.fields)))
    raise ValidationFailed("append_only", "Cannot commit file that conflicts with existing "
                                          f"partition: {where[1:-1]}")


def produce_snapshot(store: Mapping, table: TableConfig, base: TableMetadata, op: Operation,
                     *, snapshot_id: int, writer_name: str, metadata_path: str,
                     starting_id: int | None, starting_sequence: int | None = None,
                     filter_cache: dict | None = None, tag: str = "") -> Produced:
    """Apply ``op`` to ``base``. ``starting_sequence`` is the sequence number of the writer's
    starting snapshot as it read it when it began (Spark passes it to
    ``RewriteFiles.dataSequenceNumber`` at planning time), so an expiry of that snapshot does not
    change it; None: look it up in ``base``. The parent is the head of ``op.branch``
    (``SnapshotUtil.latestSnapshot``), and the new snapshot becomes that branch's head
    (``setBranchSnapshot(snapshot, targetBranch)``): main's current snapshot, or another
    branch's ref, created from main's head when it does not exist yet."""
    parent = base.latest_snapshot(op.branch)
    seq = base.last_sequence_number + 1
    prefix = attempt_prefix(snapshot_id, tag)   # the attempt's files: new names each time
    mw = _ManifestWriter(prefix, snapshot_id, seq)
    parent_data = manifests_of(store, parent, DATA_MANIFEST)
    parent_deletes = manifests_of(store, parent, DELETE_MANIFEST)

    # 1. Data manifests lose the files this operation deletes.
    delete_paths = {f.path for f in op.delete_data}
    delete_partitions = {f.partition for f in op.delete_data}
    drop_partitions = ({f.partition for f in op.add_data}
                       if op.kind == ops.REPLACE_PARTITIONS else set())
    # ReplacePartitions on an unpartitioned table deletes by the row filter alwaysTrue().
    unpartitioned_replace = op.kind == ops.REPLACE_PARTITIONS and table.spec.is_unpartitioned

    def partitions_open(m: Manifest, partitions) -> bool:
        """ManifestFileUtil.canContainAny on the manifest's partition summary (dropped
        partitions: canContainDroppedPartitions; removed delete files' partitions:
        canContainDroppedFiles)."""
        return bool(partitions) and manifest_can_contain_any(
            (e.file.partition for e in m.entries), partitions)

    def data_doomed(e: ManifestEntry) -> bool:
        f = e.file
        return (f.path in delete_paths or f.partition in drop_partitions
                or unpartitioned_replace or _row_filter_deletes(table, op, f))

    def expression_opens(m: Manifest) -> bool:
        """ManifestFilterManager.canContainExpressionDeletes: ManifestEvaluator on the
        manifest's partition summary (every entry it was written with)."""
        return op.row_filter is not None and might_match_manifest(
            op.row_filter, table.spec, [e.file.partition for e in m.entries])

    def data_manifest_opened(m: Manifest) -> bool:
        """ManifestFilterManager.canContainDeletedFiles for a data manifest: a row filter opens
        only the manifests whose partition summary might match it, files deleted by object
        (``deleteFile(DataFile)``: canContainDroppedFiles) only those that can contain their
        partitions; once opened, every entry is checked against the row filter. (Which
        manifests open matters only to a row filter: an opened manifest that loses nothing is
        kept as it was. Java differential, seed 112601: a null-partition file in a manifest of
        its own survives an overwrite by row filter that also deletes another file.)"""
        return (op.row_filter is None or expression_opens(m) or partitions_open(m, delete_partitions)
                or partitions_open(m, drop_partitions) or unpartitioned_replace)

    data_manifests, removed_data, n_removed_data = _filter_manifests(parent_data, data_doomed, mw,
                                                     opened=data_manifest_opened)
    _fail_any_delete(table, op, parent_data, removed_data)
    if op.missing_delete_paths_enabled:
        # ManifestFilterManager.validateRequiredDeletes: COMMA.join(...), no brackets, no spaces
        missing = sorted(delete_paths - removed_data)
        if missing:
            raise ValidationFailed("missing_delete_paths",
                                   f"Missing required files to delete: {','.join(missing)}")

    # 2. New data files, with this snapshot's sequence number (or the starting one, for
    #    a compaction that keeps it).
    data_seq = seq
    if op.kind == ops.REWRITE and op.validations.starting_sequence_number:
        data_seq = (starting_sequence if starting_sequence is not None
                    else starting_sequence_number(base, starting_id))
    new_data = [mw.write(DATA_MANIFEST, [ManifestEntry(ADDED, snapshot_id, data_seq, seq, f)
                                         for f in op.add_data])] if op.add_data else []

    # 3. Delete manifests lose removed delete files, DVs of removed data files, delete files
    #    of dropped partitions or matching the row filter, and (dropDeleteFilesOlderThan)
    #    delete files older than the minimum data sequence number of the filtered parent data
    #    manifests. Java (1.10) opens a delete manifest only for one of the first reasons, so
    #    the sequence-number drop happens only in manifests opened anyway.
    remove_delete_paths = {d.path for d in op.remove_deletes}
    remove_delete_partitions = {d.partition for d in op.remove_deletes}
    dropped_data = delete_paths | removed_data  # filesToBeDeleted(): requested and found
    min_data_seq = min((s for m in data_manifests
                        if (s := _committed_min_sequence(m, snapshot_id)) is not None),
                       default=base.last_sequence_number)

    def delete_doomed(e: ManifestEntry) -> bool:
        if op.keep_delete_files:
            return False
        d: DeleteFile = e.file
        if d.path in remove_delete_paths or d.partition in drop_partitions:
            return True
        if unpartitioned_replace or _row_filter_deletes_delete_file(table, op, d):
            return True
        if d.content == DV and d.referenced_data_file in dropped_data:
            return True
        return 0 < e.data_sequence_number < min_data_seq

    def delete_manifest_opened(m: Manifest) -> bool:
        """ManifestFilterManager.canContainDeletedFiles (Iceberg 1.10)."""
        if partitions_open(m, drop_partitions) or unpartitioned_replace or expression_opens(m):
            return True
        if remove_delete_paths:
            return partitions_open(m, remove_delete_partitions)
        return bool(dropped_data)

    delete_manifests, removed_deletes, n_removed_deletes = _filter_manifests(
        parent_deletes, delete_doomed, mw, opened=delete_manifest_opened, cache=filter_cache)
    _fail_any_delete(table, op, parent_deletes, removed_deletes)
    if op.missing_delete_paths_enabled:
        # Java sets failMissingDeletePaths on both the data and the delete filter managers.
        missing = sorted(remove_delete_paths - removed_deletes)
        if missing:
            raise ValidationFailed("missing_delete_paths",
                                   f"Missing required files to delete: {','.join(missing)}")
    added_deletes = merge_duplicate_dvs(op.add_deletes, snapshot_id)
    explicit = dict(op.deletes_data_sequence_numbers)
    new_deletes = [mw.write(DELETE_MANIFEST, [
        ManifestEntry(ADDED, snapshot_id, explicit.get(d.path, seq), seq, d)
        for d in added_deletes])] if added_deletes else []

    # 4. The manifest list: new manifests first. FastAppend copies every parent manifest as is;
    #    the merging producers drop carried manifests with no ADDED or EXISTING entry.
    if op.kind == ops.FAST_APPEND:
        data_list = new_data + parent_data
        delete_list = parent_deletes
    else:
        def keep(m: Manifest) -> bool:
            return m.added_snapshot_id == snapshot_id or m.has_added_or_existing

        data_list = new_data + [m for m in data_manifests if keep(m)]
        delete_list = new_deletes + [m for m in delete_manifests if keep(m)]
        if table.prop_bool("commit.manifest-merge.enabled"):
            # MergingSnapshotProducer.java:989-990: data and delete manifests each through their
            # own ManifestMergeManager, with the same min-count rule
            min_count = int(table.prop("commit.manifest.min-count-to-merge"))
            data_list = _merge(data_list, mw, min_count)
            delete_list = _merge(delete_list, mw, min_count)
    mlist = ManifestList(f"{prefix}.avro", snapshot_id,
                         tuple(m.path for m in data_list + delete_list))

    summary = (
        ("added-data-files", len(op.add_data)),
        ("added-delete-files", len(added_deletes)),
        ("deleted-data-files", n_removed_data),
        ("removed-delete-files", n_removed_deletes),
    ) + tuple(op.summary_properties)
    snap = Snapshot(snapshot_id, parent.snapshot_id if parent else None, seq, operation_name(op, table.iceberg_version),
                    mlist.path, summary, writer_name, source_snapshot_id=op.source_snapshot_id,
                    replace_partitions=op.kind == ops.REPLACE_PARTITIONS)
    if op.branch is None or op.branch == MAIN_BRANCH:
        current, refs = snapshot_id, base.refs
    elif (base.ref(op.branch) or (BRANCH,))[0] != BRANCH:
        # TableMetadata.Builder.setBranchSnapshotInternal (TableMetadata.java:1756): the branch
        # became a tag after the operation was built (its targetBranch check passed then)
        raise ValidationFailed("ref_precondition", f"Cannot update branch: {op.branch} is a tag")
    else:
        current, refs = base.current_snapshot_id, base.with_ref(op.branch, BRANCH, snapshot_id)
    meta = TableMetadata(metadata_path, base.version + 1, base.format_version, seq, current,
                         base.snapshots + (snap,), base.snapshot_log + (snapshot_id,), refs)
    objects = dict(mw.objects)
    objects.update({d.path: d for d in added_deletes if d.path.startswith("merged-dvs-")})
    objects[mlist.path] = mlist
    objects[metadata_path] = meta
    return Produced(tuple(objects.items()), meta, snap)
