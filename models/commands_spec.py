"""SQL-level commands, as an engine user writes them: INSERT, DELETE, UPDATE, MERGE, an
insert-only MERGE (``MERGE INTO t USING s ON key WHEN NOT MATCHED THEN INSERT *``: MERGE_INSERT),
compaction, the DataFrame writes overwrite(filter) and overwritePartitions(), and a streaming
upsert sink's checkpoint (UPSERT: Flink's ``upsert(true)``, a blind write keyed by ``on``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .files import Pairs, Row
from .filters import Expr

INSERT, DELETE, UPDATE, MERGE = "INSERT", "DELETE", "UPDATE", "MERGE"
COMPACT, OVERWRITE, OVERWRITE_PARTITIONS = "COMPACT", "OVERWRITE", "OVERWRITE_PARTITIONS"
MERGE_INSERT = "MERGE_INSERT"
# One checkpoint of a streaming upsert sink: ``rows`` upserted in arrival order, then the keys of
# ``deletes`` (a changelog's DELETE events) removed. It reads nothing: the rows it writes replace
# whatever the table holds for their keys when it commits.
UPSERT = "UPSERT"
# Spark's ``CALL system.expire_snapshots(table, older_than => now, retain_last => N)``: every
# snapshot older than now (all of them) that is not among the last ``retain_last`` ancestors of a
# branch, nor a ref's snapshot, expires when the procedure commits; see models/expire.py
EXPIRE = "EXPIRE"
# Spark's ``CALL system.rewrite_position_delete_files(table, options => map('rewrite-all',
# 'true'))``: per partition, the live position delete files rewritten into one, keeping only the
# positions of live data files; see models/commands.py _plan_rewrite_position_deletes
REWRITE_POSITION_DELETES = "REWRITE_POSITION_DELETES"
# Spark's ``CALL system.rewrite_manifests(table)``: every data manifest (and every delete
# manifest) of the current snapshot rewritten into one when there are two or more, committed as
# RewriteManifests; see models/rewrite_manifests.py
REWRITE_MANIFESTS = "REWRITE_MANIFESTS"
# A script swapping data files with a file-level API (PyIceberg's UpdateSnapshot.overwrite():
# delete_data_file + append_data_file): the files holding rows that match ``where`` at its base
# are replaced by copies whose matching rows are updated by ``set`` (or dropped without one)
OVERWRITE_FILES = "OVERWRITE_FILES"
# Registering a Parquet file written elsewhere (a backfill, a migration): PyIceberg's
# ``Transaction.add_files([path])`` or Spark's ``CALL system.add_files(...)``. ``file`` names
# the file (its path in the model is ``ext/<file>``, the same for every writer that adds it)
# and ``rows`` are its rows. With ``check_duplicate_files`` (the default of both) the engine
# first refuses a file the table already references, checked on the table it began at, once;
# the append that follows is unvalidated (see models/commands.py, _plan_add_files).
ADD_FILES = "ADD_FILES"
# Spark's ``CALL system.remove_orphan_files(table, older_than => ts)`` with ``older_than`` the
# tick ``older_than`` ticks before it is called: lists the table location and deletes the files
# older than that which the metadata it loaded does not reference; see models/orphans.py
REMOVE_ORPHAN_FILES = "REMOVE_ORPHAN_FILES"
COMMANDS = (INSERT, DELETE, UPDATE, MERGE, COMPACT, OVERWRITE, OVERWRITE_PARTITIONS, MERGE_INSERT,
            UPSERT, EXPIRE, REWRITE_POSITION_DELETES, OVERWRITE_FILES, REWRITE_MANIFESTS,
            ADD_FILES, REMOVE_ORPHAN_FILES)
#: where an ADD_FILES command's file lives in the model's object store: outside the writers'
#: own names (``w1-1-data1``), and the same path for every writer that adds it
EXTERNAL_PREFIX = "ext/"
COPY_ON_WRITE, MERGE_ON_READ = "copy-on-write", "merge-on-read"
# How an UPSERT is written (its rule's mode): an equality delete per key plus the row, position
# deletes for keys written twice in one checkpoint (Flink's BaseEqualityDeltaWriter); see
# models/commands.py, _plan_equality_upsert
EQUALITY_UPSERT = "equality-upsert"

# rewrite_data_files options the planner follows (COMPACT's ``options``), with their defaults in
# Spark 3.5 + Iceberg 1.10 (RewriteDataFiles.USE_STARTING_SEQUENCE_NUMBER_DEFAULT = true).
# use-starting-sequence-number: the rewritten files keep the data sequence number of the snapshot
# the rewrite started from (RewriteDataFilesCommitManager.commitFileGroups, 1.10.2 lines 85-89:
# ``rewrite.dataSequenceNumber(table.snapshot(startingSnapshotId).sequenceNumber())``), so
# equality deletes committed meanwhile still apply to them and do not fail the rewrite.
#
# File selection (BinPackRewriteFilePlanner, 1.10.2). The model has no file sizes: it takes every
# file to be smaller than min-file-size (75% of the 512 MB target), as the small files of a
# streaming table and of every scenario here are, so each file passes filterFiles by size and
# what decides is filterFileGroups, per partition (one file group: max-file-group-size is
# 100 GB): a group is rewritten when it has more than one file and at least min-input-files
# (default 5), or one of its files has at least delete-file-threshold delete files applying to
# it (default Integer.MAX_VALUE: never), or a ratio of file-scoped deleted records (position
# deletes naming the file, DVs) of at least delete-ratio-threshold (default 0.3).
# rewrite-all skips both filters. The model's default for COMPACT is rewrite-all: true (every
# file its ``where`` might match, one output file per partition), which Spark's procedure does
# only when asked: ``options: {rewrite-all: false}`` follows Spark's default selection.
#
# Partial progress (RewriteDataFilesSparkAction.doExecuteWithPartialProgress, 1.10.2):
# partial-progress.enabled commits the file groups (here one per partition) in
# ceil(groups / partial-progress.max-commits) -sized batches, each its own RewriteFiles validated
# from the starting snapshot; a failed commit is logged and skipped, and the procedure fails
# only when more than partial-progress.max-failed-commits (default: max-commits) failed.
COMPACT_OPTIONS = {"use-starting-sequence-number": (bool, True),
                   "partial-progress.enabled": (bool, False),
                   "partial-progress.max-commits": (int, 10),
                   "partial-progress.max-failed-commits": (int, None),
                   "rewrite-all": (bool, True),
                   "min-input-files": (int, 5),
                   "delete-file-threshold": (int, 2 ** 31 - 1),
                   "delete-ratio-threshold": (float, 0.3)}


def compact_option_error(name: str, value) -> str | None:
    """Java's precondition message for an option value out of range (SizeBasedFileRewritePlanner
    / BinPackRewriteFilePlanner.init), or None."""
    if name == "partial-progress.max-commits" and value <= 0:
        # RewriteDataFilesSparkAction.validateAndInitOptions (checked with partial progress on;
        # the model refuses it either way)
        return (f"Cannot set {name} to {value}, the value must be positive when "
                f"partial-progress.enabled is true")
    if name == "min-input-files" and value <= 0:
        return f"'{name}' is set to {value} but must be > 0"
    if name == "delete-file-threshold" and value < 0:
        return f"'{name}' is set to {value} but must be >= 0"
    if name == "delete-ratio-threshold" and value <= 0:
        return f"'{name}' is set to {value} but must be > 0"
    if name == "delete-ratio-threshold" and value > 1:
        return f"'{name}' is set to {value} but must be <= 1"
    return None

COMMAND_KEYS = {
    INSERT: {"rows", "write_options"},
    DELETE: {"where"},
    UPDATE: {"where", "set"},
    MERGE: {"on", "rows", "where"},
    MERGE_INSERT: {"on", "rows"},
    COMPACT: {"where", "options"},
    # ``select`` instead of ``rows``: INSERT OVERWRITE t SELECT ... FROM t (models/rmw.py);
    # ``write_options``: Spark's DataFrame write options (models/write_options.py)
    OVERWRITE: {"where", "rows", "select", "write_options"},
    OVERWRITE_PARTITIONS: {"rows", "where", "select", "write_options"},
    UPSERT: {"on", "rows", "deletes"},
    EXPIRE: {"retain_last", "older_than"},
    REWRITE_POSITION_DELETES: set(),
    REWRITE_MANIFESTS: set(),
    OVERWRITE_FILES: {"where", "set"},
    ADD_FILES: {"file", "rows", "check_duplicate_files"},
    REMOVE_ORPHAN_FILES: {"older_than"},
}


@dataclass(frozen=True)
class Command:
    """One SQL-level command. ``where`` is also what the engine pushes down as its scan filter."""

    kind: str
    where: Expr | None = None
    set: Pairs = ()
    rows: tuple[Row, ...] = ()
    on: tuple[str, ...] = ()
    where_sql: str = ""
    # COMPACT: rewrite_data_files options (COMPACT_OPTIONS), sorted; left out of state digests
    # while empty, so traces recorded before it replay unchanged
    options: Pairs = field(default=(), metadata={"digest_omit_default": True})
    # UPSERT: the keys (values of ``on``, in order) its changelog deletes after the upserts
    deletes: tuple[Row, ...] = field(default=(), metadata={"digest_omit_default": True})
    # ADD_FILES: the external file's name (EXTERNAL_PREFIX + file is its path)
    file: str = field(default="", metadata={"digest_omit_default": True})
    # OVERWRITE, OVERWRITE_PARTITIONS: rows derived from the command's own read
    # (a models.rmw.Select; None: ``rows`` as given)
    select: object = field(default=None, metadata={"digest_omit_default": True})
    # Spark's write options, ((name, value), ...) sorted (models/write_options.py)
    write_options: Pairs = field(default=(), metadata={"digest_omit_default": True})

    @property
    def check_duplicate_files(self) -> bool:
        """ADD_FILES: does the engine refuse a file the table already references (default
        true in PyIceberg and in Spark's procedure)?"""
        return dict(self.options).get("check_duplicate_files", True)

    @property
    def file_path(self) -> str:
        """ADD_FILES: the external file's path in the model's object store."""
        return EXTERNAL_PREFIX + self.file

    def option(self, name: str):
        """The value of option ``name``, or its default (COMPACT_OPTIONS)."""
        return dict(self.options).get(name, COMPACT_OPTIONS[name][1])

    def __str__(self) -> str:
        if self.select is not None or self.write_options:
            from .rmw import command_text
            return command_text(self, self._text())
        return self._text()

    def _text(self) -> str:
        if self.kind == INSERT:
            return f"INSERT {len(self.rows)} row(s) {list(self.rows)}"
        if self.kind == DELETE:
            return f"DELETE WHERE {self.where_text}"
        if self.kind == UPDATE:
            sets = ", ".join(f"{k} = {v!r}" for k, v in self.set)
            return f"UPDATE SET {sets} WHERE {self.where_text}"
        if self.kind == MERGE:
            return f"MERGE ON {', '.join(self.on)} USING {list(self.rows)}"
        if self.kind == MERGE_INSERT:
            return (f"MERGE ON {', '.join(self.on)} USING {list(self.rows)} "
                    f"WHEN NOT MATCHED THEN INSERT (only)")
        if self.kind == UPSERT:
            on = ', '.join(self.on)
            if not self.rows:
                return f"UPSERT ON {on}: delete {list(self.deletes)}"
            dels = f" then delete {list(self.deletes)}" if self.deletes else ""
            return f"UPSERT ON {on} {list(self.rows)}{dels}"
        if self.kind == OVERWRITE_FILES:
            sets = ", ".join(f"{k} = {v!r}" for k, v in self.set)
            what = f"rows updated SET {sets}" if sets else "rows dropped"
            return f"overwrite files WHERE {self.where_text} ({what}; file-level API)"
        if self.kind == ADD_FILES:
            check = "" if self.check_duplicate_files else ", check_duplicate_files false"
            return f"ADD FILES {self.file_path} ({len(self.rows)} row(s) {list(self.rows)}{check})"
        if self.kind == REWRITE_POSITION_DELETES:
            return "REWRITE POSITION DELETE FILES (rewrite_position_delete_files)"
        if self.kind == REWRITE_MANIFESTS:
            return "REWRITE MANIFESTS (rewrite_manifests)"
        if self.kind == EXPIRE:
            opts = dict(self.options)
            age = f", older_than {_ticks(opts['older_than'])}" if "older_than" in opts else ""
            return f"EXPIRE SNAPSHOTS (retain_last {opts.get('retain_last', 1)}{age})"
        if self.kind == REMOVE_ORPHAN_FILES:
            return f"REMOVE ORPHAN FILES (older_than {_ticks(dict(self.options)['older_than'])})"
        if self.kind == COMPACT:
            opts = "".join(f" {k}={str(v).lower()}" for k, v in self.options)
            return ("COMPACT (rewrite_data_files" + opts + ")"
                    + (f" WHERE {self.where_text}" if self.where else ""))
        if self.kind == OVERWRITE:
            return f"overwrite({self.where_text}) with {list(self.rows)}"
        return f"overwritePartitions() with {list(self.rows)}"

    @property
    def where_text(self) -> str:
        return self.where_sql or "true"


def _ticks(n: int) -> str:
    """An age in ticks of the model's clock (models/clock.py), in words."""
    return f"{n} tick" + ("" if n == 1 else "s")
