"""Conformance target: PyIceberg 0.12 (SqlCatalog on SQLite + a ``file://`` warehouse).

The model runs first, with a ``pyiceberg-0.12-*`` profile (INSERT fast_append; DELETE / UPDATE /
MERGE copy-on-write overwrite; the first attempt swaps against its base with no refresh and no
validation). Its actions are laid out as a timeline exactly as for Java
(``java_runner.build_plan``): a writer **begins** on PyIceberg where it began in the model (it
loads the table - its base - and stages its operation in a ``Transaction``, which is when
PyIceberg scans and writes its data files) and **commits** (``commit_transaction()``, which
swaps, and on a lost swap refreshes, validates and retries) where the model's verdict was decided.

What each model intent becomes on PyIceberg (all in one ``Transaction``):

=======================  ===========================================================
INSERT                   ``tx.append(rows)``
raw append of files      one data file per model file, one ``fast_append`` snapshot
DELETE                   ``tx.delete(where)`` (copy-on-write; isolation from
                         ``write.delete.isolation-level``)
UPDATE                   rows matching ``where`` read at the base, SET applied, then
                         ``tx.overwrite(updated_rows, overwrite_filter=where)`` (PyIceberg has
                         no UPDATE; overwrite = delete(filter) + append, isolation from
                         ``write.update.isolation-level``); nothing matching: an
                         overwrite of no rows (an empty append snapshot)
MERGE (no ``where``)     ``tx.upsert(rows, join_cols=on)``
MERGE_INSERT             ``tx.upsert(rows, join_cols=on, when_matched_update_all=False)``
OVERWRITE                ``tx.overwrite(rows, overwrite_filter=where or true)``
OVERWRITE_PARTITIONS     ``tx.dynamic_partition_overwrite(rows)``
OVERWRITE_FILES          each data file holding a matching row is read and written back
                         (matching rows updated by SET, or dropped), then
                         ``tx.update_snapshot().overwrite()``: ``delete_data_file`` +
                         ``append_data_file`` (the file-level API)
ADD_FILES                its rows written once to ``ext/<file>.parquet`` beside the
                         warehouse, then ``tx.add_files([that file],
                         check_duplicate_files=...)``
=======================  ===========================================================

A model ``noop`` with no operation (the planner found nothing to do) is run at its begin and
committed at once on PyIceberg; it agrees when PyIceberg adds no snapshot. A DELETE matching no
row (rule ``empty: validate``) begins and commits where the model did: PyIceberg stages nothing,
then validates the window at ``commit_transaction()``; ``noop`` agrees when it adds no snapshot. Skipped, with the reason: scenarios with
``conformance.skip: [pyiceberg]``, a non-PyIceberg profile, raw ``op:`` steps other than appends
of files with rows (row_delta, rewrite, overwrite/delete of named files, delete files), COMPACT,
MERGE with ``where``, the ``last_writer_wins`` catalog and fault steps.

Comparing (docs/conformance-pyiceberg.md): per operation the **outcome** must be equal; when both
failed validation, the **whole message** where the model words it as PyIceberg does (the added
and deleted data files checks, profile key ``pyiceberg_validation``, and the two checks of the
files an overwrite deletes; snapshot ids and PyIceberg's own file names masked), and for
the other checks, which the model still words as Java does, the *kind of check* (added data /
deleted data / new deletes / files gone / history) with a difference only noted (``detail``). At the end the **rows** of the
current snapshot must be equal (data files are PyIceberg's own names, so live files cannot be
compared by name).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
import warnings
from dataclasses import dataclass, field

from icecheck.models import catalog as cat
from icecheck.models import operations as mops
from icecheck.models import system as sm
from icecheck.models.commands import PY_ALREADY_REFERENCED
from icecheck.models.commands_spec import (ADD_FILES, COMPACT, DELETE, INSERT, MERGE, MERGE_INSERT,
                                           OVERWRITE, OVERWRITE_FILES, OVERWRITE_PARTITIONS,
                                           UPDATE, Command)
from icecheck.models.operations import Operation
from icecheck.models.reads import read_rows
from icecheck.models.system import Action, Model, ModelConfig
from icecheck.models.table import TableConfig
from icecheck.models.validation import (PY_NEW_DELETE_FILES, PY_NO_MATCHING_SNAPSHOT,
                                         PY_NO_STARTING_SNAPSHOT)

from .compare import (AGREE, DISAGREE, ERROR, SKIPPED, AllowEntry, Comparison, OpComparison,
                      apply_allowlist, scenario_on_model, trace_on_model)
from icecheck.install_hint import install_hint

from .java_runner import NOT_RUN, Plan, build_plan

NAME = "pyiceberg"
PYICEBERG_VERSION = "0.12"
INSTALL_HINT = (f"pip install 'pyiceberg[sql-sqlite,pyarrow]==0.12.0' "
                f"(or {install_hint('conformance')})")

# PyIceberg outcomes beyond the model's.
ERROR_OUTCOME = "error"
#: PyIceberg 0.12's refusal to stage a snapshot on a v3 table (pyiceberg/manifest.py,
#: write_manifest / write_manifest_list: "Cannot write manifest[ list] for table version: 3")
CANNOT_WRITE_V3 = "Cannot write manifest"
NOOP_OUTCOME = sm.NOOP


class PyIcebergUnsupported(Exception):
    """The scenario uses something PyIceberg cannot express (the comparison is skipped)."""


def _target_unavailable():
    from .targets import TargetUnavailable
    return TargetUnavailable


def ready() -> None:
    """Raise ``TargetUnavailable`` (with an install hint) when PyIceberg 0.12 is not usable."""
    try:
        import pyarrow  # noqa: F401
        import pyiceberg
        import sqlalchemy  # noqa: F401
        from pyiceberg.catalog.sql import SqlCatalog  # noqa: F401
    except ImportError as e:
        raise _target_unavailable()(f"PyIceberg is not installed ({e}); run: {INSTALL_HINT}") \
            from None
    version = getattr(pyiceberg, "__version__", "")
    if not version.startswith(PYICEBERG_VERSION + "."):
        raise _target_unavailable()(f"PyIceberg {version} found, {PYICEBERG_VERSION}.x needed; "
                                    f"run: {INSTALL_HINT}")


# ----------------------------------------------------------------------------- check kinds

_MODEL_CHECK_KIND = {
    "no_conflicting_data": "added data files",
    "no_conflicting_data_files": "added data files",
    "no_conflicting_deletes": "deleted data files",
    "no_conflicting_delete_files": "new delete files",
    "no_new_deletes_for_data_files": "new deletes for replaced files",
    "data_files_exist": "files gone",
    "missing_delete_paths": "files gone",
    "history": "history",
    "format_unsupported": "format version",
}

_PY_MESSAGE_KIND = (
    ("Added data files were found matching", "added data files"),
    ("Deleted data files were found matching", "deleted data files"),
    ("Found new conflicting delete files", "new delete files"),
    ("Cannot commit, found new delete for replace", "new deletes for replaced files"),
    ("Data files were concurrently deleted", "files gone"),
    ("Missing required files to delete", "files gone"),
    ("No matching snapshot found", "history"),
    (CANNOT_WRITE_V3, "format version"),
    ("Cannot find starting snapshot", "history"),
)


# The checks whose failure the model words as PyIceberg does (profile key pyiceberg_validation;
# models/validation.py, _py_conflict, validate_data_files_exist and
# validate_no_new_deletes_for_data_files with pyiceberg=True): compared whole, the rest by kind
# of check.
_FILES_GONE = "Data files were concurrently deleted: "
_REPLACED_FILE = "Cannot commit, found new delete for replace data file "
_PY_WORDED = ("Added data files were found matching", "Deleted data files were found matching",
              _FILES_GONE, _REPLACED_FILE, CANNOT_WRITE_V3, PY_NO_STARTING_SNAPSHOT,
              PY_NO_MATCHING_SNAPSHOT)
_SNAPSHOT_SET_RE = re.compile(r"\{[^{}]*\}")
_SNAPSHOT_ID_RE = re.compile(r"-?\d{4,}")
_QUOTED_RE = re.compile(r"'[^']*'")


def mask_snapshot_ids(message: str | None) -> str | None:
    """Each snapshot id of a message's ``{...}`` set as ``<id>``: PyIceberg's are random, the
    model's count from 1001 (the Java comparison masks snapshot ids too); how many there are,
    and ``set()``, still count."""
    if message is None:
        return None
    return _SNAPSHOT_SET_RE.sub(lambda m: _SNAPSHOT_ID_RE.sub("<id>", m.group(0)), message)


def mask_py_message(message: str | None) -> str | None:
    """A PyIceberg-worded failure as compared: snapshot ids masked (``mask_snapshot_ids``), and
    the files it names masked as ``<file>``, how many kept: PyIceberg names the files it wrote
    itself (``00000-0-<uuid>.parquet``), which the model cannot know. The replaced file of "found
    new delete for replace data file" is PyIceberg's whole ``DataFile`` record
    (``DataFile[DataFileContent.DATA, <path>, FileFormat.PARQUET, ...]``, with sizes, metrics
    and object addresses), the model's its path: both ``<file>``. The paths of "Data files were
    concurrently deleted: [...]" are a sorted Python list of strings: each ``'<file>'``."""
    message = mask_snapshot_ids(message)
    if message is None:
        return None
    if message.startswith(PY_NEW_DELETE_FILES) and ": [" in message:
        # "... matching {data_filter}: ['<path>', ...]": the filter compared as printed, the
        # delete files (Spark's, named by the real engine) counted
        head, _, paths = message.rpartition(": [")
        return f"{head}: [" + _QUOTED_RE.sub("'<file>'", paths)
    if message.startswith(PY_NO_STARTING_SNAPSHOT):     # PyIceberg's snapshot ids are random
        return _SNAPSHOT_ID_RE.sub("<id>", message)
    if message.startswith(_REPLACED_FILE):
        return _REPLACED_FILE + "<file>"
    if message.startswith(_FILES_GONE):
        return _QUOTED_RE.sub("'<file>'", message)
    return message


def agree_on_failure(op, message: str | None) -> tuple[bool, str | None]:
    """Both failed validation: a message the model words as PyIceberg does is compared whole
    (``mask_py_message``: snapshot ids and PyIceberg's own file names masked); for the others,
    which the model still words as Java does, the kind of check is compared and a difference is
    only noted."""
    if op.message and (op.message.startswith(_PY_WORDED) or _py_worded_new_deletes(op.message)):
        if mask_py_message(op.message) != mask_py_message(message):
            return False, f"message: model {op.message!r}, pyiceberg {message!r}"
        return True, None
    mk, pk = model_check_kind(op.check), pyiceberg_check_kind(message)
    if mk != pk:
        return True, f"check differs (detail): model {mk!r}, pyiceberg {pk!r}"
    return True, None


def _py_worded_new_deletes(message: str) -> bool:
    """Did the model word "Found new conflicting delete files ..." as PyIceberg does? Its
    filter then prints as PyIceberg's classes (``EqualTo(...``, ``And(...``: a capital), where
    Java's rendering starts ``ref(``, ``(``, ``not(``, ``true`` (``Validations.py_filter``)."""
    rest = message[len(PY_NEW_DELETE_FILES):] if message.startswith(PY_NEW_DELETE_FILES) else ""
    return rest[:1].isupper()


def model_check_kind(check: str | None) -> str | None:
    return _MODEL_CHECK_KIND.get(check or "", check)


def pyiceberg_check_kind(message: str | None) -> str | None:
    for prefix, kind in _PY_MESSAGE_KIND:
        if message and message.startswith(prefix):
            return kind
    return None


# ----------------------------------------------------------------------------- the real table

def _isolation(profile_name: str | None) -> str | None:
    if not profile_name:
        return None
    from icecheck.models.profiles import get_profile
    return get_profile(profile_name).isolation


class PyTable:
    """A fresh PyIceberg table in a temp warehouse (SqlCatalog on SQLite)."""

    IDENT = "icecheck.t"

    def __init__(self, table: TableConfig, isolation: str | None = None):
        from pyiceberg.catalog.sql import SqlCatalog

        self.config = table
        self.dir = tempfile.mkdtemp(prefix="icecheck-pyiceberg-")
        self.catalog = SqlCatalog("icecheck", uri=f"sqlite:///{self.dir}/catalog.sqlite",
                                  warehouse=f"file://{self.dir}/warehouse")
        self.catalog.create_namespace("icecheck")
        props = {str(k): (str(v).lower() if isinstance(v, bool) else str(v))
                 for k, v in table.properties}
        props["format-version"] = str(table.format_version)
        props.setdefault("commit.retry.num-retries", str(table.max_retries))
        props.setdefault("commit.retry.min-wait-ms", "1")
        props.setdefault("commit.retry.max-wait-ms", "10")
        if isolation in ("serializable", "snapshot"):
            props.setdefault("write.delete.isolation-level", isolation)
            props.setdefault("write.update.isolation-level", isolation)
        self.catalog.create_table(self.IDENT, schema=self._schema(), partition_spec=self._spec(),
                                  properties=props)

    # -- set-up
    def _schema(self):
        from pyiceberg.schema import Schema
        from pyiceberg.types import IntegerType, LongType, NestedField, StringType

        types = {"int": IntegerType(), "long": LongType(), "string": StringType()}
        return Schema(*[NestedField(i, name, types[t], required=False)
                        for i, (name, t) in enumerate(self.config.schema.columns, 1)])

    def _spec(self):
        from pyiceberg.partitioning import PartitionField, PartitionSpec
        from pyiceberg.transforms import BucketTransform, IdentityTransform, TruncateTransform

        fields = []
        for i, f in enumerate(self.config.spec.fields):
            tr = f.transform
            transform = (IdentityTransform() if tr.kind == "identity" else
                         BucketTransform(tr.param) if tr.kind == "bucket" else
                         TruncateTransform(tr.param))
            fields.append(PartitionField(source_id=self.config.schema.index(f.source) + 1,
                                         field_id=1000 + i, transform=transform, name=f.name))
        return PartitionSpec(*fields)

    def arrow(self, rows):
        import pyarrow as pa

        types = {"int": pa.int32(), "long": pa.int64(), "string": pa.string()}
        schema = pa.schema([pa.field(n, types[t], nullable=True)
                            for n, t in self.config.schema.columns])
        cols = list(zip(*rows)) if rows else [()] * len(schema)
        return pa.table({n: pa.array(list(c), type=schema.field(n).type)
                         for n, c in zip(schema.names, cols)}, schema=schema)

    def load(self):
        return self.catalog.load_table(self.IDENT)

    def external_file(self, name: str, rows) -> str:
        """The URI of the Parquet file an ADD_FILES command registers, written beside the
        warehouse (``ext/<name>.parquet``, the model's ``ext/<name>``) the first time a writer
        asks: every writer that adds it adds that same file."""
        import pyarrow.parquet as pq

        path = os.path.join(self.dir, "ext", f"{name}.parquet")
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            pq.write_table(self.arrow(list(rows)), path)
        return f"file://{path}"

    def rows(self) -> list[list]:
        names = self.config.schema.names
        out = [[r[n] for n in names] for r in self.load().scan().to_arrow().to_pylist()]
        return sorted(out, key=repr)

    def snapshot_count(self) -> int:
        return len(self.load().metadata.snapshots)

    def close(self) -> None:
        try:
            self.catalog.engine.dispose()
        except Exception:
            pass
        if not os.environ.get("ICECHECK_KEEP_WAREHOUSE"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def check_expressible(intent, table: TableConfig) -> None:
    """Raise PyIcebergUnsupported when PyIceberg has no way to run ``intent``."""
    if isinstance(intent, Command):
        if intent.kind == COMPACT:
            raise PyIcebergUnsupported("COMPACT: PyIceberg 0.12 has no rewrite_data_files "
                                       "(no RewriteFiles)")
        if intent.kind == MERGE and intent.where is not None:
            raise PyIcebergUnsupported("MERGE with a condition: PyIceberg's upsert has none")
        if intent.kind == OVERWRITE_PARTITIONS and table.spec.is_unpartitioned:
            raise PyIcebergUnsupported("dynamic_partition_overwrite needs a partitioned table")
        if intent.kind == OVERWRITE_PARTITIONS and any(
                f.transform.kind != "identity" for f in table.spec.fields):
            raise PyIcebergUnsupported("dynamic_partition_overwrite supports identity "
                                       "partitions only")
        return
    if isinstance(intent, Operation):
        if intent.kind not in (mops.APPEND, mops.FAST_APPEND):
            raise PyIcebergUnsupported(f"raw op {intent.kind}: PyIceberg's API cannot commit "
                                       f"named files (only appends of rows are mapped)")
        if intent.add_deletes or any(f.rows is None for f in intent.add_data):
            raise PyIcebergUnsupported("an append of a metadata-only file (no rows) or of "
                                       "delete files")
        return
    raise PyIcebergUnsupported(f"unknown intent {intent!r}")


class PyWriter:
    def __init__(self, pt: PyTable, name: str):
        self.pt, self.name = pt, name
        self.tx = None
        self.refused: str | None = None
        self.unread: str | None = None      # a file staging reads was gone (read_failed)

    def begin(self, intent) -> None:
        """Stage the command in a transaction. On a v3 table PyIceberg 0.12 fails here, as the
        staged snapshot writes its manifests ("Cannot write manifest for table version: 3",
        or "... manifest list ..." when it has no file to list): that refusal is kept and
        reported at ``commit``, where the model refuses the commit (profile key
        ``max_format_version``); nothing reached the table in between. So is add_files'
        refusal of a file the table already lists (the model refuses that command as it
        begins, and its verdict is laid out at the same step)."""
        try:
            self._stage(intent)
        except ValueError as e:
            if not str(e).startswith((CANNOT_WRITE_V3, PY_ALREADY_REFERENCED)):
                raise
            self.tx, self.refused = None, str(e)
        except FileNotFoundError as e:
            # add_files of a file an expiry deleted: staging reads its Parquet footer
            # (_parquet_files_to_data_files); the model fails it read_failed as it begins
            self.tx, self.unread = None, f"{type(e).__name__}: {e}"

    def _stage(self, intent) -> None:
        from pyiceberg.expressions import AlwaysTrue

        table = self.pt.load()
        tx = table.transaction()
        self.snapshots_before = len(table.metadata.snapshots)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if isinstance(intent, Operation):        # raw append (checked by check_expressible)
                self._append_files(table, tx, intent)
            elif intent.kind == INSERT:
                tx.append(self.pt.arrow(list(intent.rows)))
            elif intent.kind == DELETE:
                tx.delete(intent.where_sql if intent.where is not None else AlwaysTrue())
            elif intent.kind == UPDATE:
                where = intent.where_sql if intent.where is not None else AlwaysTrue()
                names = self.pt.config.schema.names
                found = table.scan(row_filter=where).to_arrow().to_pylist()
                sets = dict(intent.set)
                new = [tuple(sets.get(n, r[n]) for n in names) for r in found]
                # nothing found: an overwrite of no rows (an empty delete, validated on a
                # retry, and an empty append snapshot), as a script doing this would commit
                tx.overwrite(self.pt.arrow(new), overwrite_filter=where)
            elif intent.kind == MERGE:
                tx.upsert(self.pt.arrow(list(intent.rows)), join_cols=list(intent.on))
            elif intent.kind == MERGE_INSERT:
                tx.upsert(self.pt.arrow(list(intent.rows)), join_cols=list(intent.on),
                          when_matched_update_all=False)
            elif intent.kind == OVERWRITE:
                tx.overwrite(self.pt.arrow(list(intent.rows)),
                             overwrite_filter=intent.where_sql if intent.where is not None
                             else AlwaysTrue())
            elif intent.kind == OVERWRITE_PARTITIONS:
                tx.dynamic_partition_overwrite(self.pt.arrow(list(intent.rows)))
            elif intent.kind == OVERWRITE_FILES:
                self._overwrite_files(table, tx, intent)
            elif intent.kind == ADD_FILES:
                tx.add_files([self.pt.external_file(intent.file, intent.rows)],
                             check_duplicate_files=intent.check_duplicate_files)
            else:
                raise PyIcebergUnsupported(f"command {intent.kind}")
        self.tx = tx

    def _overwrite_files(self, table, tx, intent) -> None:
        """A script using the file-level API: read each data file holding a row that matches
        (its live rows: the scan task's delete files applied, as ``Transaction.delete`` reads a
        file it rewrites, ``ArrowScan(...).to_table(tasks=[task])``), write its rows back
        (matching ones updated, or dropped without SET), and swap the files with
        ``update_snapshot().overwrite()``; nothing matching, nothing staged."""
        from pyiceberg.expressions import AlwaysTrue
        from pyiceberg.io.pyarrow import ArrowScan, _dataframe_to_data_files

        from icecheck.models.filters import eval_row

        where = intent.where_sql if intent.where is not None else AlwaysTrue()
        names = self.pt.config.schema.names
        sets = dict(intent.set)
        swaps = []
        for task in table.scan(row_filter=where).plan_files():
            rows = ArrowScan(table_metadata=table.metadata, io=table.io,
                             projected_schema=table.schema(),
                             row_filter=AlwaysTrue()).to_table(tasks=[task]).to_pylist()
            new, hit = [], False
            for r in rows:
                values = tuple(r[n] for n in names)
                if intent.where is None or eval_row(intent.where, dict(zip(names, values))):
                    hit = True
                    if sets:
                        new.append(tuple(sets.get(n, v) for n, v in zip(names, values)))
                else:
                    new.append(values)
            if hit:
                swaps.append((task.file, new))
        if not swaps:
            return
        with tx.update_snapshot().overwrite() as o:
            for old, new in swaps:
                o.delete_data_file(old)
                if new:
                    for df in _dataframe_to_data_files(tx.table_metadata, self.pt.arrow(new),
                                                      table.io):
                        o.append_data_file(df)

    def _append_files(self, table, tx, intent: Operation) -> None:
        """A raw append: one data file per model file (each holds one partition), all in one
        fast-append snapshot, as the model commits it; a validation that lists what it found
        then meets as many files (one ``tx.append`` of all the rows would write one)."""
        from pyiceberg.io.pyarrow import _dataframe_to_data_files

        with tx.update_snapshot().fast_append() as a:
            for f in intent.add_data:
                for df in _dataframe_to_data_files(tx.table_metadata, self.pt.arrow(list(f.rows)),
                                                  table.io):
                    a.append_data_file(df)

    def commit(self) -> tuple[str, str | None]:
        from pyiceberg.exceptions import CommitFailedException, ValidationException

        import logging

        if self.refused is not None:
            return sm.VALIDATION_FAILED, self.refused
        if self.unread is not None:
            return sm.READ_FAILED, self.unread

        log = logging.getLogger("pyiceberg.table")
        level = log.level
        log.setLevel(logging.ERROR)      # "Commit failed ..., retrying" is expected here
        # counted now, not at begin: another writer (another engine too) may have committed
        # in between, and only a snapshot of this commit makes it more than a no-op
        self.snapshots_before = self.pt.snapshot_count()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.tx.commit_transaction()
        except ValidationException as e:
            return sm.VALIDATION_FAILED, str(e)
        except CommitFailedException as e:
            return sm.COMMIT_FAILED, str(e)
        except FileNotFoundError as e:
            # a file the commit reads is gone (another engine's expiry deleted it): the model's
            # read_failed (pyarrow's "Failed to open local file ...")
            return sm.READ_FAILED, f"{type(e).__name__}: {e}"
        except Exception as e:  # noqa: BLE001 - reported as PyIceberg's error
            return ERROR_OUTCOME, f"{type(e).__name__}: {e}"
        finally:
            log.setLevel(level)
        if self.pt.snapshot_count() == self.snapshots_before:
            return NOOP_OUTCOME, None
        return sm.COMMITTED, None


# ----------------------------------------------------------------------------- the plan

@dataclass
class PyRun:
    outcomes: dict = field(default_factory=dict)       # (writer, index) -> (outcome, message)
    rows: list | None = None
    seconds: float = 0.0


def _intents_and_rows(config: ModelConfig, actions: list[Action]):
    """Replay ``actions``: each operation's intent, and the model's final rows."""
    model = Model(config)
    state = model.initial()
    for a in actions:
        state = model.step(state, a)
    intents = {}
    for w in state.writers:
        for rec in w.history:
            intents[(w.name, rec.index)] = rec.intent
        if w.active or w.phase == sm.CRASHED:
            intents.setdefault((w.name, w.op_index), w.intent)
    names = config.table.schema.names
    rows = sorted([list(r.values) for r in read_rows(state.store, state.metadata.current, names)],
                  key=repr)
    return intents, rows


def _skip_reason(config: ModelConfig, intents: dict, profile: str | None) -> str | None:
    if config.catalog == cat.LAST_WRITER_WINS:
        return "catalog last_writer_wins: PyIceberg's SqlCatalog always swaps atomically"
    has_commands = any(isinstance(i, Command) for i in intents.values())
    if has_commands and not (profile or "").startswith("pyiceberg-"):
        return f"profile {profile!r} is not a PyIceberg profile (pyiceberg-0.12-*)"
    try:
        for op in config.setup:
            check_expressible(op, config.table)
        for intent in intents.values():
            check_expressible(intent, config.table)
    except PyIcebergUnsupported as e:
        return f"not expressible on PyIceberg: {e}"
    return None


def run_plan(plan: Plan, intents: dict, profile: str | None) -> PyRun:
    t0 = time.perf_counter()
    run = PyRun()
    with PyTable(plan.table, _isolation(profile)) as pt:
        for n, op in enumerate(plan.setup, 1):
            w = PyWriter(pt, f"setup{n}")
            w.begin(op)
            outcome, message = w.commit()
            if outcome != sm.COMMITTED:
                raise RuntimeError(f"set-up commit {n} did not commit on PyIceberg: {outcome} "
                                   f"{message}")
        timed = []
        for op in plan.ops:
            key = (op.writer, op.index)
            if op.operation is None and op.outcome in (sm.NOOP, sm.VALIDATION_FAILED):
                # nothing to commit (noop), or refused as it began (add_files' duplicate
                # check): run where it began, and committed at once
                timed.append((op.begin_at, 0, "noop", op))
            elif op.operation is not None:
                timed.append((op.begin_at, 0, "begin", op))
                if op.outcome in (sm.COMMITTED, sm.VALIDATION_FAILED, sm.COMMIT_FAILED, sm.NOOP):
                    timed.append((op.java_at, 1, "commit", op))
        timed.sort(key=lambda e: (e[0], e[1]))
        writers = {}
        for _, _, kind, op in timed:
            key = (op.writer, op.index)
            if kind in ("begin", "noop"):
                w = PyWriter(pt, op.writer)
                w.begin(intents[key])
                writers[key] = w
            if kind in ("commit", "noop"):
                run.outcomes[key] = writers[key].commit()
        # never the model's own outcome for an operation PyIceberg did not run (one the model
        # left unfinished, or ended before its commit): "not run", which counts as no evidence
        for op in plan.ops:
            run.outcomes.setdefault((op.writer, op.index), (NOT_RUN, None))
        run.rows = pt.rows()
    run.seconds = time.perf_counter() - t0
    return run


def _judge(c: Comparison, plan: Plan, run: PyRun, model_rows: list) -> None:
    for op in plan.ops:
        outcome, message = run.outcomes[(op.writer, op.index)]
        kind = op.operation.kind if op.operation is not None else None
        agree, note = True, None
        if outcome == NOT_RUN:
            note = "not run on PyIceberg"
        elif outcome != op.outcome:
            agree = False
            note = f"outcome: model {op.outcome}, pyiceberg {outcome}" + (
                f" ({message})" if message else "")
        elif outcome == sm.VALIDATION_FAILED:
            agree, note = agree_on_failure(op, message)
        c.ops.append(OpComparison(op.label, op.writer, kind, op.outcome, op.message, outcome,
                                  message, agree, note))
        if not agree:
            c.differences.append(f"{op.label}: {note}")
    c.model_rows, c.target_rows = model_rows, run.rows
    if run.rows != model_rows:
        c.differences.append(f"rows: model {model_rows}, pyiceberg {run.rows}")
    if c.differences:
        c.status = DISAGREE


def compare_plan(cid: str, path: str, source: str, config: ModelConfig, plan: Plan,
                 actions: list[Action], profile: str | None, lines: dict | None = None
                 ) -> Comparison:
    c = Comparison(cid, path, source, AGREE, model_seconds=plan.model_seconds)
    c.target = NAME
    if lines:
        for op in plan.ops:
            op.line = lines.get((op.writer, op.index))
    c.model_live = (plan.live_data_files, plan.live_delete_files)
    intents, model_rows = _intents_and_rows(config, actions)
    skip = _skip_reason(config, intents, profile)
    if skip is None and plan.skip and "commit_failed" not in plan.skip:
        skip = plan.skip
    if skip:
        c.status, c.reason = SKIPPED, skip
        return c
    try:
        run = run_plan(plan, intents, profile)
    except PyIcebergUnsupported as e:
        c.status, c.reason = SKIPPED, f"not expressible on PyIceberg: {e}"
        return c
    except Exception as e:  # noqa: BLE001 - the comparison itself broke
        c.status, c.reason = ERROR, f"{type(e).__name__}: {e}"
        return c
    c.java_seconds = run.seconds
    _judge(c, plan, run, model_rows)
    return c


# ----------------------------------------------------------------------------- entry points

def _expires(scenario) -> bool:
    """Does the scenario expire snapshots (a raw expire_snapshots operation)?"""
    from icecheck.models import operations as ops

    for step in scenario.steps:
        op = getattr(step, "operation", None)
        if op is not None and getattr(op, "kind", None) == ops.EXPIRE_SNAPSHOTS:
            return True
    return False


def compare_scenario(scenario, *, allowlist: list[AllowEntry] | None = None,
                     source: str = "scenario", **_opts) -> Comparison:
    """Run ``scenario`` on the model, replay it on PyIceberg, compare (outcomes, then rows)."""
    from .compare import _op_lines

    if NAME in scenario.conformance_skip:
        return Comparison(scenario.id, scenario.path, source, SKIPPED,
                          f"conformance.skip lists pyiceberg: {scenario.conformance_skip[NAME]}")
    if scenario.uses_faults or scenario.uses_phantom_failures:
        return Comparison(scenario.id, scenario.path, source, SKIPPED,
                          "fault steps cannot be driven on PyIceberg")
    if scenario.catalog == cat.LAST_WRITER_WINS:
        return Comparison(scenario.id, scenario.path, source, SKIPPED,
                          "catalog last_writer_wins: PyIceberg's SqlCatalog always swaps "
                          "atomically")
    if _expires(scenario):
        return Comparison(scenario.id, scenario.path, source, SKIPPED,
                          "snapshot expiration is not driven on PyIceberg by this target "
                          "(PyIceberg 0.12's ExpireSnapshots differs from Java's; the Java "
                          "target compares it)")
    run = scenario_on_model(scenario)
    if run.mixed_reason("pyiceberg-"):
        return Comparison(scenario.id, scenario.path, source, SKIPPED,
                          run.mixed_reason("pyiceberg-"))
    config, actions, verdict, seconds = run.config, run.actions, run.verdict, run.seconds
    try:
        plan = build_plan(config, actions)
    except sm.StepError as e:
        return Comparison(scenario.id, scenario.path, source, ERROR, f"model replay: {e}")
    plan.model_seconds = seconds
    c = compare_plan(scenario.id, scenario.path, source, config, plan, actions,
                     scenario.profile, _op_lines(plan, verdict))
    return apply_allowlist(c, allowlist or [])


def compare_trace(path: str, *, allowlist: list[AllowEntry] | None = None, **_opts
                  ) -> Comparison:
    """Rebuild the model from the trace's config, replay its actions, run them on PyIceberg."""
    run = trace_on_model(path)
    config, tid, actions = run.config, run.id, run.actions
    if run.mixed_reason("pyiceberg-"):
        return Comparison(tid, path, "trace", SKIPPED, run.mixed_reason("pyiceberg-"))
    if not str(run.profile).startswith("pyiceberg-"):
        return Comparison(tid, path, "trace", SKIPPED,
                          f"profile {run.profile!r} is not a PyIceberg profile (pyiceberg-0.12-*)")
    t0 = time.perf_counter()
    try:
        plan = build_plan(config, actions)
    except sm.StepError as e:
        return Comparison(tid, path, "trace", SKIPPED,
                          f"the trace does not replay on the model: {e}")
    plan.model_seconds = time.perf_counter() - t0
    c = compare_plan(tid, path, "trace", config, plan, actions, run.profile)
    return apply_allowlist(c, allowlist or [])
