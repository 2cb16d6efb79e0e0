"""Iceberg table operations (the Java API's snapshot producers) and their validation switches.

An ``Operation`` is what an engine hands to Iceberg's ``commit()``: files to add and delete and
the validations it enabled. It is fixed once the writer has written its files and is re-applied,
unchanged, on every retry, exactly as Java's ``SnapshotProducer`` re-runs ``apply()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .files import DataFile, DeleteFile, DV
from .filters import Expr

APPEND = "append"              # MergeAppend (table.newAppend())
FAST_APPEND = "fast_append"    # FastAppend (table.newFastAppend())
OVERWRITE = "overwrite"        # BaseOverwriteFiles
ROW_DELTA = "row_delta"        # BaseRowDelta
REWRITE = "rewrite"            # BaseRewriteFiles
DELETE_FILES = "delete_files"  # StreamingDelete
REPLACE_PARTITIONS = "replace_partitions"  # BaseReplacePartitions
EXPIRE_SNAPSHOTS = "expire_snapshots"      # RemoveSnapshots (table.expireSnapshots()), models/expire.py
# table.updateProperties().set("format-version", "3") (PropertiesUpdate; Spark: ALTER TABLE ...
# SET TBLPROPERTIES ('format-version' = '3')): TableMetadata.replaceProperties upgrades the format
UPGRADE_FORMAT = "upgrade_format_version"
# table.manageSnapshots().cherrypick(id) (CherryPickOperation): models/cherrypick.py
CHERRY_PICK = "cherry_pick"
# operations that change the metadata without a snapshot, re-applied on every attempt's refresh
METADATA_KINDS = (EXPIRE_SNAPSHOTS, UPGRADE_FORMAT)
# table.newTransaction() ... commitTransaction() (BaseTransaction, SIMPLE): several snapshot
# producers applied one after another, committed with one metadata swap (models/transaction.py)
TRANSACTION = "transaction"
# table.rewriteManifests() with deleteManifest/addManifest, as Spark's rewrite_manifests
# procedure commits it (models/rewrite_manifests.py)
REWRITE_MANIFESTS = "rewrite_manifests"
# Spark's remove_orphan_files procedure (DeleteOrphanFilesSparkAction): lists the table location
# and deletes the files older than its cut-off that the loaded metadata does not reference; it
# commits nothing (models/orphans.py)
REMOVE_ORPHAN_FILES = "remove_orphan_files"
# ManageSnapshots (table.manageSnapshots()): ref updates, models/refs.py
CREATE_BRANCH = "create_branch"            # .createBranch(name, snapshotId)
CREATE_TAG = "create_tag"                  # .createTag(name, snapshotId)
FAST_FORWARD = "fast_forward"              # .fastForwardBranch(from, to)
REF_KINDS = (CREATE_BRANCH, CREATE_TAG, FAST_FORWARD)

KINDS = (APPEND, FAST_APPEND, OVERWRITE, ROW_DELTA, REWRITE, DELETE_FILES, REPLACE_PARTITIONS,
         EXPIRE_SNAPSHOTS, UPGRADE_FORMAT, CHERRY_PICK, TRANSACTION, REWRITE_MANIFESTS,
         REMOVE_ORPHAN_FILES) + REF_KINDS
# what a transaction may stage: snapshot producers whose effect is decided by their files
# (a row filter or ReplacePartitions inside a transaction is not modelled; models/transaction.py)
TRANSACTION_KINDS = (APPEND, FAST_APPEND, OVERWRITE, ROW_DELTA, REWRITE, DELETE_FILES)
KIND_ALIASES = {"merge_append": APPEND}

JAVA_NAMES = {
    APPEND: "AppendFiles (MergeAppend)",
    FAST_APPEND: "AppendFiles (FastAppend)",
    OVERWRITE: "OverwriteFiles",
    ROW_DELTA: "RowDelta",
    REWRITE: "RewriteFiles",
    DELETE_FILES: "DeleteFiles",
    REPLACE_PARTITIONS: "ReplacePartitions",
    EXPIRE_SNAPSHOTS: "ExpireSnapshots",
    UPGRADE_FORMAT: "UpdateProperties (format-version)",
    CHERRY_PICK: "ManageSnapshots.cherrypick",
    TRANSACTION: "Transaction (newTransaction ... commitTransaction)",
    REWRITE_MANIFESTS: "RewriteManifests",
    REMOVE_ORPHAN_FILES: "DeleteOrphanFiles (Spark action)",
    CREATE_BRANCH: "ManageSnapshots.createBranch",
    CREATE_TAG: "ManageSnapshots.createTag",
    FAST_FORWARD: "ManageSnapshots.fastForwardBranch",
}


class NothingToDo(Exception):
    """Raised by a planner (models/commands.py, models/rmw.py): the command changes no row
    (e.g. a DELETE matching nothing), so the engine commits nothing. Defined here, below the
    planners and the step that catches it (models/system.py re-exports it), so that neither
    imports the other (no import cycle)."""


@dataclass(frozen=True)
class Validations:
    """Each Java validation switch, on or off on its own.

    ``data_files_exist`` is the set of data file paths passed to ``validateDataFilesExist`` (None:
    not called). ``fail_missing_delete_paths`` None means "as Java derives it" (see
    ``missing_delete_paths_enabled``). ``validate_on_first_attempt`` False models PyIceberg,
    which validates only when a lost race forces a retry.
    """

    from_snapshot: bool = False
    filter: Expr | None = None
    no_conflicting_data: bool = False
    no_conflicting_deletes: bool = False
    no_conflicting_data_files: bool = False
    no_conflicting_delete_files: bool = False
    deleted_files: bool = False
    data_files_exist: tuple[str, ...] | None = None
    files_exist: bool = False
    starting_sequence_number: bool = False
    fail_missing_delete_paths: bool | None = None
    validate_on_first_attempt: bool = True
    # PyIceberg: a retry that finds its own snapshot id in the refreshed metadata stops there,
    # committed (the earlier attempt landed although it was reported failed); Java re-applies
    idempotent_retry: bool = field(default=False, metadata={"digest_omit": True})
    # PyIceberg: an OverwriteFiles checks concurrently deleted data files and new delete files
    # against its conflict filter even without a row filter (Java needs overwriteByRowFilter)
    deleted_data_files_by_filter: bool = field(default=False,
                                               metadata={"digest_omit_default": True})
    # PyIceberg: the conflict checks follow pyiceberg/table/update/validate.py (the conflict
    # filter on each file's metrics alone, no partition projection; PyIceberg's messages for
    # the added/deleted data files checks); fixed by the writer's profile, like idempotent_retry
    pyiceberg_validation: bool = field(default=False, metadata={"digest_omit": True})
    # ReplacePartitions.validateAppendOnly(): failAnyDelete on both filter managers
    append_only: bool = field(default=False, metadata={"digest_omit_default": True})
    # the highest table format version the engine can commit to (PyIceberg 0.12: 2, "Cannot
    # write manifest for table version: 3"); None: any. Fixed by the writer's profile, like
    # idempotent_retry
    max_format_version: int | None = field(default=None, metadata={"digest_omit": True})
    # the engine's retries of a lost swap when the table sets no commit.retry.num-retries
    # (Profile.commit_retries); None: the table's default. Fixed by the writer's profile
    commit_retries: int | None = field(default=None, metadata={"digest_omit": True})
    # PyIceberg: its ``str`` of the conflict filter (``filters.pyiceberg_str``), which its
    # "Found new conflicting delete files ..." message prints; None where the model does not
    # know PyIceberg's form (that message then keeps Java's wording, compared by its kind)
    # (left out of trace digests: the command it is rendered from is in the state)
    py_filter: str | None = field(default=None, metadata={"digest_omit": True})

    def enabled(self) -> list[str]:
        """Names of the switches that are on, for reports and traces."""
        out = []
        for name in ("from_snapshot", "no_conflicting_data", "no_conflicting_deletes",
                     "no_conflicting_data_files", "no_conflicting_delete_files", "deleted_files",
                     "files_exist", "starting_sequence_number", "deleted_data_files_by_filter",
                     "append_only"):
            if getattr(self, name):
                out.append(name)
        if self.filter is not None:
            out.append(f"filter({self.filter})")
        if self.data_files_exist is not None:
            out.append("data_files_exist")
        if self.fail_missing_delete_paths is not None:
            out.append(f"fail_missing_delete_paths={self.fail_missing_delete_paths}")
        return out


@dataclass(frozen=True)
class Operation:
    kind: str
    add_data: tuple[DataFile, ...] = ()
    delete_data: tuple[DataFile, ...] = ()
    add_deletes: tuple[DeleteFile, ...] = ()
    remove_deletes: tuple[DeleteFile, ...] = ()
    row_filter: Expr | None = None
    validations: Validations = field(default_factory=Validations)
    # ExpireSnapshots: the snapshots to expire (``expireSnapshotId``), named by their position in
    # the table's commit order (1 = the first snapshot ever committed), since real snapshot ids
    # are random; resolved against the snapshot log when the expiry applies (models/expire.py).
    expire: tuple[int, ...] = field(default=(), metadata={"digest_omit_default": True})
    # ExpireSnapshots with expireOlderThan(now) and retainLast(N) instead of ids: the snapshots
    # to expire are chosen on the metadata each attempt applies to (models/expire.py)
    retain_last: int | None = field(default=None, metadata={"digest_omit_default": True})
    # RewriteFiles.addFile(deleteFile, dataSequenceNumber): (path, data sequence number) of the
    # delete files it adds with one (rewrite_position_delete_files: the largest of the files
    # its group replaces)
    deletes_data_sequence_numbers: tuple[tuple[str, int], ...] = field(
        default=(), metadata={"digest_omit_default": True})
    # CHERRY_PICK: the snapshot it picks, by its position in commit order (as ``expire``); and,
    # when it re-applies an append, the snapshot it picked (source-snapshot-id)
    pick: int | None = field(default=None, metadata={"digest_omit_default": True})
    source_snapshot_id: int | None = field(default=None, metadata={"digest_omit_default": True})
    # UPGRADE_FORMAT: the format version it sets
    format_version: int | None = field(default=None, metadata={"digest_omit_default": True})
    # A command that changed no row on an engine that commits no snapshot for it but still
    # validates its window at commit (profile rule ``empty: validate``; PyIceberg's empty delete):
    # the commit refreshes, validates, and ends ``noop`` without a swap.
    no_snapshot: bool = field(default=False, metadata={"digest_omit_default": True})
    # ``toBranch(branch)``: the branch a snapshot-producing operation commits to (None = main).
    branch: str | None = field(default=None, metadata={"digest_omit_default": True})
    # ManageSnapshots ref updates (REF_KINDS): create_branch/create_tag ``(name, N)`` with N the
    # N-th snapshot committed (0 = the current snapshot); fast_forward ``(from, to)``.
    ref: tuple = field(default=(), metadata={"digest_omit_default": True})
    # TRANSACTION: the operations it stages, in order (its own add_data / add_deletes are
    # theirs, concatenated: the files the writer writes before the transaction commits)
    ops: tuple["Operation", ...] = field(default=(), metadata={"digest_omit_default": True})
    # REWRITE_MANIFESTS: what it rewrites, planned at its start ((content, deleted manifest
    # paths, the EXISTING entries of the new manifest), ...; models/rewrite_manifests.py)
    manifest_rewrite: tuple = field(default=(), metadata={"digest_omit_default": True})
    # Spark's rewrite_data_files with partial progress: the commits it makes one after another,
    # each a RewriteFiles of some file groups (this operation holds all of their files), and how
    # many of them may fail before the procedure fails (Model: WriterState.groups_left)
    groups: tuple["Operation", ...] = field(default=(), metadata={"digest_omit_default": True})
    # caseSensitive(false) (DeleteFiles, OverwriteFiles, RowDelta): its filters were written
    # with other cases; they are held with the schema's names, and ``written_names`` maps each
    # such schema name back to the name as written (Java prints the filter as written)
    case_sensitive: bool = field(default=True, metadata={"digest_omit_default": True})
    written_names: tuple = field(default=(), metadata={"digest_omit_default": True})
    max_failed_groups: int | None = field(default=None, metadata={"digest_omit_default": True})
    # PyIceberg's overwrite (profile key keep_delete_files): every delete file stays, even one
    # that names a data file the overwrite removes (pyiceberg/table/update/snapshot.py,
    # _OverwriteFiles._existing_manifests rewrites data manifests only); Java's
    # MergingSnapshotProducer drops the DVs of removed files and the delete files older than
    # every remaining data file. Fixed by the writer's profile, as pyiceberg_validation is
    keep_delete_files: bool = field(default=False, metadata={"digest_omit": True})
    # ``SnapshotUpdate.set(key, value)``: properties the engine records in the snapshot's
    # summary, ((key, value), ...) in the order set: a streaming sink's commit identity
    # (Flink's flink.job-id / flink.operator-id / flink.max-committed-checkpoint-id, Spark's
    # spark.sql.streaming.queryId / epochId: models/lifecycle.py) and Spark's
    # ``snapshot-property.<k>`` write options. Engines read them back to decide what to commit
    summary_properties: tuple = field(default=(), metadata={"digest_omit_default": True})
    # A procedure that compares times (models/clock.py): ``older_than`` its age in ticks
    # (REMOVE_ORPHAN_FILES' files, EXPIRE_SNAPSHOTS' snapshots by timestamp), and ``began_at``
    # the tick it was called at, recorded when the writer begins (``clock.at_begin``); the
    # cut-off is began_at - older_than
    older_than: int | None = field(default=None, metadata={"digest_omit_default": True})
    began_at: int | None = field(default=None, metadata={"digest_omit_default": True})

    def with_validations(self, **changes) -> "Operation":
        return replace(self, validations=replace(self.validations, **changes))

    @property
    def missing_delete_paths_enabled(self) -> bool:
        """Java's ``failMissingDeletePaths()``: when deleted files must still be found live."""
        v = self.validations
        if v.fail_missing_delete_paths is not None:
            return v.fail_missing_delete_paths
        if self.kind == REWRITE:
            return True
        if self.kind == OVERWRITE:
            return v.no_conflicting_data or v.no_conflicting_deletes
        if self.kind == ROW_DELTA:
            return v.deleted_files
        if self.kind == DELETE_FILES:
            return v.files_exist
        return False

    @property
    def referenced_data_files(self) -> tuple[str, ...]:
        """Data files named by the position deletes and DVs this operation adds."""
        seen: dict[str, None] = {}
        for d in self.add_deletes:
            for path in d.referenced_paths:
                seen.setdefault(path, None)
        return tuple(seen)

    @property
    def adds_dvs(self) -> bool:
        return any(d.content == DV for d in self.add_deletes)
