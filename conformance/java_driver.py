"""The real-Iceberg (Java) conformance driver: model operations replayed on Iceberg's Java core.

Each ``JavaTable`` is one real Iceberg table in a fresh temporary warehouse, reached through a
``HadoopCatalog`` (put-if-absent of the next metadata version file) or a ``JdbcCatalog`` on
SQLite (a real compare-and-swap of the metadata location). Each ``JavaWriter`` has its own
catalog instance, so writers are as independent as two engines: ``begin`` loads the table and
builds the Java operation at the current snapshot; ``commit`` runs Java's own ``commit()``
(refresh, validate, write metadata, swap; retrying lost swaps).

Files are metadata only: ``DataFiles.builder`` / ``FileMetadata.deleteFileBuilder`` entries with
a path, partition, record count and metrics. Validation never opens a data file, so no Parquet
is written. Model file ``n`` lives at ``<warehouse>/data/n`` (no suffix, so the map preserves
the order of names, which Java's file-path bounds of position deletes rely on).

All Java calls go through one py4j gateway per process (``java_gateway.get_gateway``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Iterable

from ..models.files import DV, EQUALITY_DELETES, POSITION_DELETES, DataFile, DeleteFile, bounds_of
from ..models.operations import (APPEND, CREATE_BRANCH, CREATE_TAG, DELETE_FILES,
                                 EXPIRE_SNAPSHOTS, FAST_APPEND, FAST_FORWARD, KIND_ALIASES,
                                 OVERWRITE, REF_KINDS, REPLACE_PARTITIONS, REWRITE, ROW_DELTA,
                                 UPGRADE_FORMAT, CHERRY_PICK, TRANSACTION, REWRITE_MANIFESTS,
                                 Operation)
from ..models.table import TableConfig
from .java_gateway import cached_jvm, get_gateway

COMMITTED = "committed"
VALIDATION_FAILED = "validation_failed"
COMMIT_FAILED = "commit_failed"
COMMIT_UNKNOWN = "commit_unknown"
ERROR = "error"
READ_FAILED = "read_failed"   # NotFoundException: an object the table references was deleted

CATALOGS = ("hadoop", "jdbc")
# Scenario catalog names (docs/scenario-format.md) -> the Java catalog that implements them.
CATALOG_ALIASES = {"put_if_absent": "hadoop", "cas": "jdbc"}

CATALOG_NAME = "icecheck"
NAMESPACE = "db"
TABLE_NAME = "t"

# Quick retries: the model does not model back-off time, and tests should not sleep.
FAST_RETRY_PROPERTIES = {
    "commit.retry.min-wait-ms": "1",
    "commit.retry.max-wait-ms": "10",
}

_VALIDATION_EXC = "org.apache.iceberg.exceptions.ValidationException"
_COMMIT_FAILED_EXC = "org.apache.iceberg.exceptions.CommitFailedException"
# a ValidationException subclass (CherryPickOperation.validateNonAncestor)
_CHERRYPICK_EXC = "org.apache.iceberg.exceptions.CherrypickAncestorCommitException"
_COMMIT_UNKNOWN_EXC = "org.apache.iceberg.exceptions.CommitStateUnknownException"
ILLEGAL_ARGUMENT_EXC = "java.lang.IllegalArgumentException"
_NOT_FOUND_EXC = "org.apache.iceberg.exceptions.NotFoundException"
# Snapshot summary counts the model records (models/producer.py), compared when both commit.
_SUMMARY_KEYS = ("added-data-files", "added-delete-files", "deleted-data-files",
                 "removed-delete-files")
# IllegalArgumentExceptions of a commit's own checks (never retried), which the model reports as
# validation_failed: RemoveSnapshots.internalApply's refusal (check expire_refs,
# models/expire.py) and its array-size failure (expire_array_size), and BaseRowDelta.validate's
# starting-snapshot ancestry (starting_ancestor); and the ref preconditions of toBranch and
# ManageSnapshots, raised while the operation is built (ref_precondition, models/refs.py); and
# addDeletes' format check (a v2 position delete file on a v3 table: delete_version,
# models/producer.py).
REFUSED_RE = re.compile(r"^(Cannot expire -?\d+\. Still referenced by refs|"
                         r"Snapshot -?\d+ is not an ancestor of -?\d+$|"
                         r"arraySize cannot be negative but was: -\d+$|"
                         r"\S+ is a tag, not a branch\. Tags cannot be targets|"
                         r"Cannot fast-forward: \S+ is not an ancestor of \S+$|"
                         r"Ref \S+ already exists$|Ref does not exist: \S+$|"
                         r"Ref \S+ is a tag not a branch$|Cannot set \S+ to unknown snapshot|"
                         r"Must use DVs for position deletes in V\d+: \S+$|"
                         r"Cannot downgrade v\d+ table to v\d+$)")

# Java calls each validation switch maps to, per operation kind (docs/scenario-format.md).
_SWITCH_KINDS = {
    "no_conflicting_data": (OVERWRITE, REPLACE_PARTITIONS),
    "no_conflicting_deletes": (OVERWRITE, REPLACE_PARTITIONS),
    "no_conflicting_data_files": (ROW_DELTA,),
    "no_conflicting_delete_files": (ROW_DELTA,),
    "deleted_files": (ROW_DELTA,),
    "files_exist": (DELETE_FILES,),
    "starting_sequence_number": (REWRITE,),
    "append_only": (REPLACE_PARTITIONS,),
}
_FROM_SNAPSHOT_KINDS = (OVERWRITE, ROW_DELTA, REWRITE, REPLACE_PARTITIONS)
_FILTER_KINDS = (OVERWRITE, ROW_DELTA)

# a file in Iterables.toString(manifest reader) (BaseFile.toString, Iceberg 1.10.2)
_FILE_PATH_RE = re.compile(r"File\{content=[a-z_]+, file_path=(.*?), file_format=")

_FILE_SIZE = 1024          # bytes recorded for every metadata-only file
_DV_CONTENT_OFFSET = 4     # a Puffin blob starts after the 4-byte magic


class JavaDriverError(ValueError):
    """The scenario asks for something the Java API cannot express (or the driver was misused)."""


# ----------------------------------------------------------------------------- filters

_CMP = {
    "=": "equal", "==": "equal", "!=": "notEqual", "<>": "notEqual",
    "<": "lessThan", "<=": "lessThanOrEqual", ">": "greaterThan", ">=": "greaterThanOrEqual",
}


def to_java_expression(expr: Any, jvm) -> Any:
    """Convert a model filter (``models.filters`` dataclasses) to an Iceberg ``Expression``.

    Handles Cmp(op, column, value), In(column, values, negated), IsNull(column, negated),
    And(left, right), Or(left, right), Not(child), TrueExpr and FalseExpr (classes or
    instances), Python ``True``/``False``/``None`` (None = no filter = alwaysTrue), and filter
    text (parsed with ``models.filters.parse_filter``).
    """
    ex = jvm.org.apache.iceberg.expressions.Expressions
    if isinstance(expr, str):
        from ..models.filters import parse_filter
        expr = parse_filter(expr)
    if expr is None or expr is True:
        return ex.alwaysTrue()
    if expr is False:
        return ex.alwaysFalse()
    name = expr.__name__ if isinstance(expr, type) else type(expr).__name__
    if name in ("TrueExpr", "AlwaysTrue", "TRUE", "True_"):
        return ex.alwaysTrue()
    if name in ("FalseExpr", "AlwaysFalse", "FALSE", "False_"):
        return ex.alwaysFalse()
    if name == "Cmp":
        method = _CMP.get(expr.op)
        if method is None:
            raise JavaDriverError(f"unknown comparison operator {expr.op!r} in filter {expr}")
        if expr.value is None:
            raise JavaDriverError(f"comparison with null in filter {expr}: use 'is null'")
        return getattr(ex, method)(expr.column, expr.value)
    if name == "In":
        values = list(expr.values)
        return getattr(ex, "notIn" if expr.negated else "in")(expr.column, values)
    if name == "IsNull":
        return (ex.notNull if expr.negated else ex.isNull)(expr.column)
    if name in ("And", "Or"):
        method = getattr(ex, "and" if name == "And" else "or")
        children = getattr(expr, "children", None)
        if children is None:
            children = (expr.left, expr.right)
        out = None
        for child in children:
            jc = to_java_expression(child, jvm)
            out = jc if out is None else method(out, jc)
        return out if out is not None else (ex.alwaysTrue() if name == "And" else ex.alwaysFalse())
    if name == "Not":
        return getattr(ex, "not")(to_java_expression(expr.child, jvm))
    raise JavaDriverError(f"cannot convert filter node {name} ({expr!r}) to Java")


# ----------------------------------------------------------------------------- the table

class JavaTable:
    """One real Iceberg table (Java core, Iceberg's own commit path) in a fresh temp warehouse.

    ``catalog``: ``"hadoop"`` (HadoopCatalog: the next ``vN.metadata.json`` must not exist) or
    ``"jdbc"`` (JdbcCatalog on a SQLite file: CAS on the metadata location); the scenario names
    ``put_if_absent`` and ``cas`` are accepted as aliases.

    ``equality_delete_bounds``: record lower/upper bounds of the equality columns in equality
    delete files, as real Parquet writers do (Java's conflict filters can prune on them).
    """

    def __init__(self, table: TableConfig, catalog: str = "hadoop", *,
                 equality_delete_bounds: bool = True, warehouse_parent: str | None = None):
        kind = CATALOG_ALIASES.get(catalog, catalog)
        if kind not in CATALOGS:
            raise JavaDriverError(f"catalog {catalog!r} has no Java target "
                                  f"(use one of {', '.join(CATALOGS + tuple(CATALOG_ALIASES))})")
        self.config = table
        self.catalog_kind = kind
        self.equality_delete_bounds = equality_delete_bounds
        self.gateway = get_gateway()
        # names resolved once per JVM (each py4j look-up of a package, class or static member
        # is a round trip)
        self.jvm = cached_jvm()
        self._ice = self.jvm.org.apache.iceberg
        self.warehouse = Path(tempfile.mkdtemp(prefix="icecheck-java-", dir=warehouse_parent))
        self._closed = False
        self.snapshot_order: list[int] = []     # snapshot ids in commit order (note_commit)
        self._placeholders: set[str] = set()    # model files with a placeholder object
        self._seen_snapshots: set[int] = set()
        self._catalogs: list[Any] = []
        self._real: dict[str, str] = {}     # model name -> real path
        self._names: dict[str, str] = {}    # real path -> model name
        self._java_files: dict[tuple, Any] = {}
        self._partitions: dict[tuple, Any] = {}
        self._buffers: dict[tuple, Any] = {}    # (column, value type, value) -> ByteBuffer
        self._conf = None                       # the Hadoop Configuration of every catalog
        self._catalog_props: dict[bool, Any] = {}   # first instance? -> Java property map
        self.commit_seconds: list[float] = []
        try:
            self._types = {name: self._java_type(typ) for name, typ in table.schema.columns}
            self.schema = self._build_schema()
            self.field_ids = {name: self.schema.findField(name).fieldId()
                              for name in table.schema.names}
            self.spec = self._build_spec()
            self.identifier = self._ice.catalog.TableIdentifier.parse(f"{NAMESPACE}.{TABLE_NAME}")
            self._catalog = self._new_catalog()
            if kind == "jdbc":
                self._catalog.createNamespace(self.identifier.namespace())
            self._catalog.createTable(self.identifier, self.schema, self.spec,
                                      self._table_properties())
        except Exception:
            self.close()
            raise

    # -- set-up helpers

    def _java_type(self, typ: str):
        types = self._ice.types.Types
        if typ == "int":
            return self.jvm.memo("IntegerType", types.IntegerType.get)
        if typ == "long":
            return self.jvm.memo("LongType", types.LongType.get)
        if typ == "string":
            return self.jvm.memo("StringType", types.StringType.get)
        raise JavaDriverError(f"column type {typ!r} is not supported (int, long, string)")

    def _build_schema(self):
        nested = self._ice.types.Types.NestedField
        fields = [nested.optional(i, name, self._types[name])
                  for i, name in enumerate(self.config.schema.names, start=1)]
        return self._ice.Schema(fields)

    def _build_spec(self):
        builder = self._ice.PartitionSpec.builderFor(self.schema)
        for field in self.config.spec.fields:
            kind, param = field.transform.kind, field.transform.param
            if kind == "identity":
                builder = builder.identity(field.source)
            elif kind == "bucket":
                builder = builder.bucket(field.source, int(param))
            elif kind == "truncate":
                builder = builder.truncate(field.source, int(param))
            else:
                raise JavaDriverError(f"partition transform {kind!r} is not supported")
        return builder.build()

    def _table_properties(self) -> dict[str, str]:
        props = dict(FAST_RETRY_PROPERTIES)
        for key, value in self.config.properties:
            props[key] = _prop_str(value)
        props["format-version"] = str(int(self.config.format_version))
        return props

    def _new_catalog(self, name: str = CATALOG_NAME):
        # One name for every instance: JdbcCatalog keys its rows by catalog name.
        # Every instance is its own catalog (its own TableOperations, so its own base
        # metadata); they share one Hadoop Configuration and one property map per kind, which
        # neither catalog modifies (initialize copies the map), to save round trips.
        if self._conf is None:
            self._conf = self.jvm.org.apache.hadoop.conf.Configuration()
            self._conf.set("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem")
        first = not self._catalogs
        props = self._catalog_props.get(first)
        if props is None:
            if self.catalog_kind == "hadoop":
                entries = {"warehouse": str(self.warehouse)}
            else:
                entries = {
                    "warehouse": str(self.warehouse),
                    "uri": f"jdbc:sqlite:{self.warehouse / 'catalog.sqlite'}",
                    "clients": "1",
                }
                if not first:
                    # Only the first instance creates the catalog tables. When a JdbcCatalog
                    # finds them already there, its initialize() leaves a SQLite read lock open
                    # on its connection, and every later commit fails with SQLITE_BUSY
                    # (database is locked).
                    entries["jdbc.init-catalog-tables"] = "false"
            props = self.jvm.java.util.HashMap()
            for key, value in entries.items():
                props.put(key, value)
            self._catalog_props[first] = props
        catalog = (self._ice.hadoop.HadoopCatalog() if self.catalog_kind == "hadoop"
                   else self._ice.jdbc.JdbcCatalog())
        catalog.setConf(self._conf)
        catalog.initialize(name, props)
        self._catalogs.append(catalog)
        return catalog

    def _release_catalog(self, catalog) -> None:
        # by identity: `in` / remove() would call Java's equals() (a round trip) per catalog
        if catalog is self._catalog or not any(c is catalog for c in self._catalogs):
            return
        self._catalogs = [c for c in self._catalogs if c is not catalog]
        try:
            catalog.close()
        except Exception:
            pass

    # -- public API

    def note_commit(self) -> list[dict]:
        """Record the snapshots the last commit added, in commit order (``snapshot_order``).

        Scenarios name snapshots by their position in the table's commit order (an
        ``expire_snapshots`` step's ``snapshots``); the driver commits one operation at a time,
        so the new snapshots after each commit are that commit's."""
        table = self.load()
        # The snapshots come in one round trip, as the metadata JSON Java writes
        # (TableMetadataParser: `snapshots` in table order, `sequence-number` left out when it
        # is 0, the operation inside `summary`), instead of a dozen calls per snapshot.
        doc = json.loads(self._ice.TableMetadataParser.toJson(table.operations().current()))
        new = [s for s in doc.get("snapshots", ())
               if s["snapshot-id"] not in self._seen_snapshots]
        out = []
        io = table.io() if new else None
        for snap in sorted(new, key=lambda s: s.get("sequence-number", 0)):
            sid = snap["snapshot-id"]
            self._seen_snapshots.add(sid)
            self.snapshot_order.append(sid)
            summary = snap.get("summary", {})
            jsnap = table.snapshot(sid)
            out.append({"sequence_number": snap.get("sequence-number", 0),
                        "operation": summary.get("operation"),
                        "summary": {k: int(v) for k, v in summary.items()
                                    if k in _SUMMARY_KEYS},
                        "manifests": [jsnap.dataManifests(io).size(),
                                      jsnap.deleteManifests(io).size()]})
        return out

    def deleted_files(self) -> list[str]:
        """Model names of the data and delete files whose placeholder object is gone (deleted
        by Java's ExpireSnapshots clean-up), sorted."""
        data_dir = self.warehouse / "data"
        try:     # one directory listing rather than a stat per placeholder
            present = set(os.listdir(data_dir))
        except FileNotFoundError:
            present = set()
        return sorted(self.name_of(self.real_path(n)) for n in self._placeholders
                      if n not in present and ("/" not in n
                                               or not Path(self.real_path(n)).exists()))

    def writer(self, name: str) -> "JavaWriter":
        """A writer with its own catalog instance (so its table object is its own)."""
        self._check_open()
        return JavaWriter(self, name, self._new_catalog())

    def load(self, catalog=None):
        """The table, freshly loaded (from this table's own set-up catalog by default)."""
        self._check_open()
        return (catalog or self._catalog).loadTable(self.identifier)

    def live_files(self) -> tuple[list[str], list[str]]:
        """Model names of the data files and delete files live in the current snapshot, sorted."""
        table = self.load()
        snap = table.currentSnapshot()
        if snap is None:
            return [], []
        io, specs = table.io(), table.specs()
        files = self._ice.ManifestFiles
        data: list[str] = []
        deletes: list[str] = []
        for manifest in snap.dataManifests(io):
            data.extend(self._read_manifest(files.read(manifest, io, specs)))
        for manifest in snap.deleteManifests(io):
            deletes.extend(self._read_manifest(files.readDeleteManifest(manifest, io, specs)))
        return sorted(data), sorted(deletes)

    def _read_manifest(self, reader) -> list[str]:
        """The model names of a manifest's live files, read in one round trip: Guava's
        ``Iterables.toString`` walks the reader's iterator (live entries, as ``iterator()``
        gives them) and prints each file while it is current (the reader reuses its entry
        objects, so collecting them first would not do); ``BaseFile.toString`` starts with
        ``content=..., file_path=<location>, file_format=``."""
        try:
            text = self._ice.relocated.com.google.common.collect.Iterables.toString(reader)
            return [self.name_of(p) for p in _FILE_PATH_RE.findall(text)]
        finally:
            reader.close()

    def snapshots(self) -> list[dict]:
        """The current lineage, oldest first: snapshot_id, parent_id, sequence_number, operation."""
        table = self.load()
        out = []
        snap = table.currentSnapshot()
        while snap is not None:
            parent = snap.parentId()
            out.append({"snapshot_id": snap.snapshotId(), "parent_id": parent,
                        "sequence_number": snap.sequenceNumber(), "operation": snap.operation()})
            snap = table.snapshot(parent) if parent is not None else None
        out.reverse()
        return out

    def metadata_location(self) -> str:
        return self.load().operations().current().metadataFileLocation()

    def close(self) -> None:
        """Close the catalogs and delete the warehouse (keep it with ICECHECK_KEEP_WAREHOUSE=1)."""
        if self._closed:
            return
        self._closed = True
        for catalog in self._catalogs:
            try:
                catalog.close()
            except Exception:
                pass
        self._catalogs.clear()
        if os.environ.get("ICECHECK_KEEP_WAREHOUSE") != "1":
            shutil.rmtree(self.warehouse, ignore_errors=True)

    def __enter__(self) -> "JavaTable":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise JavaDriverError("JavaTable is closed")

    # -- names and paths

    def real_path(self, name: str) -> str:
        """The real path of model file ``name`` (stable, unique, order-preserving)."""
        path = self._real.get(name)
        if path is None:
            path = f"{self.warehouse}/data/{name}"
            self._real[name] = path
            self._names[path] = name
        return path

    def name_of(self, path: str) -> str:
        """The model name of a real path (the path itself if the driver did not make it)."""
        return self._names.get(str(path), str(path))

    def readable(self, message: str) -> str:
        """A Java message with real paths replaced by model names."""
        for path in sorted(self._names, key=len, reverse=True):
            if path in message:
                message = message.replace(path, self._names[path])
        return message

    # -- metadata-only files

    def java_file(self, f: DataFile | DeleteFile):
        """The Java ``DataFile`` / ``DeleteFile`` for a model file (built once, then reused)."""
        key = (f.path, f)
        jf = self._java_files.get(key)
        if jf is None:
            # a placeholder object at the file's path, so that ExpireSnapshots' clean-up has
            # something to delete and ``deleted_files`` can see what it deleted. Not for DVs:
            # Java reads an existing DV's Puffin blob (an empty file fails with EOFException)
            if getattr(f, "content", None) != DV:
                placeholder = Path(self.real_path(f.path))
                placeholder.parent.mkdir(parents=True, exist_ok=True)
                placeholder.touch()
                self._placeholders.add(f.path)
            jf = self._build_data_file(f) if not f.is_delete else self._build_delete_file(f)
            self._java_files[key] = jf
        return jf

    def partition(self, values: tuple):
        """A ``StructLike`` partition with Java's types, for a model partition tuple."""
        values = tuple(values)
        part = self._partitions.get(values)
        if part is None:
            # the same for every table of this schema and spec: the builders copy it
            # (DataFiles.Builder / FileMetadata.Builder.withPartition), nothing changes it
            key = ("partition", self.config.schema, self.config.spec,
                   tuple((type(v).__name__, v) for v in values))
            part = self.jvm.memo(key, lambda: self._build_partition(values))
            self._partitions[values] = part
        return part

    def _build_partition(self, values: tuple):
        fields = self.config.spec.fields
        if len(values) != len(fields):
            raise JavaDriverError(f"partition {values!r} does not fit spec {self.config.spec}")
        # Ints go through Java's partition-string parser, so long fields get java.lang.Long
        # (py4j sends small Python ints as Integer); strings and nulls are set afterwards, over
        # a placeholder of the field's type (the parser reads the string "null" as null).
        ptype = self.spec.partitionType()
        texts = []
        for i, v in enumerate(values):
            if isinstance(v, bool) or not isinstance(v, (int, str, type(None))):
                raise JavaDriverError(f"partition value {v!r} ({type(v).__name__}) is not "
                                      f"int, str or null")
            if isinstance(v, int):
                texts.append(str(v))
            else:
                is_string = ptype.fields().get(i).type().typeId().toString() == "STRING"
                texts.append("x" if is_string else "0")
        probe = (self._ice.DataFiles.builder(self.spec).withPath(f"{self.warehouse}/probe")
                 .withFormat("parquet").withFileSizeInBytes(1).withRecordCount(1)
                 .withPartitionValues(texts).build())
        part = probe.partition()
        for i, v in enumerate(values):
            if not isinstance(v, int):
                part.set(i, v)
        return part

    def _buffer(self, column: str, value: Any):
        """The bound ``value`` of ``column`` serialised as Iceberg does (one per value: Java
        reads bounds through duplicates, never moving the buffer's position)."""
        key = (column, type(value).__name__, value)
        buf = self._buffers.get(key)
        if buf is None:
            lit = self._ice.expressions.Expressions.lit(value)
            buf = lit.to(self._types[column]).toByteBuffer()
            self._buffers[key] = buf
        return buf

    def _long_map(self, values: dict[int, int]):
        """A java.util.Map<Integer, Long> (Long values cannot be sent directly through py4j)."""
        jvm = self.jvm
        mapper, jtype = jvm.memo("long-map-type", lambda: self._long_map_type())
        return mapper.readValue(json.dumps({str(k): int(v) for k, v in values.items()}), jtype)

    def _long_map_type(self):
        mapper = self._ice.util.JsonUtil.mapper()
        lang = self.jvm.java.lang
        return mapper, mapper.getTypeFactory().constructMapType(
            self.jvm.java.util.HashMap._java_lang_class, lang.Integer._java_lang_class,
            lang.Long._java_lang_class)

    def _metrics(self, record_count: int, columns: Iterable[str], lower: dict, upper: dict,
                 nulls: dict):
        ids = self.field_ids
        value_counts = {ids[c]: record_count for c in columns}
        null_counts = {ids[c]: n for c, n in nulls.items()}
        lowers = self.jvm.java.util.HashMap()
        uppers = self.jvm.java.util.HashMap()
        for c, v in lower.items():
            if v is not None:
                lowers.put(ids[c], self._buffer(c, v))
        for c, v in upper.items():
            if v is not None:
                uppers.put(ids[c], self._buffer(c, v))
        return self._ice.Metrics(record_count, None, self._long_map(value_counts),
                                 self._long_map(null_counts), None, lowers, uppers)

    def _build_data_file(self, f: DataFile):
        metrics = self._metrics(f.record_count, self.config.schema.names, f.lower(), f.upper(),
                                f.nulls())
        b = (self._ice.DataFiles.builder(self.spec).withPath(self.real_path(f.path))
             .withFormat("parquet").withFileSizeInBytes(_FILE_SIZE)
             .withRecordCount(f.record_count).withMetrics(metrics))
        if self.config.spec.fields:
            b = b.withPartition(self.partition(f.partition))
        return b.build()

    def _build_delete_file(self, f: DeleteFile):
        b = self._ice.FileMetadata.deleteFileBuilder(self.spec)
        if f.content in (POSITION_DELETES, DV):
            b = b.ofPositionDeletes()
            refs = [self.real_path(p) for p in f.referenced_paths]
            if f.content == DV:
                if len(refs) != 1:
                    raise JavaDriverError(f"DV {f.path} must reference exactly one data file")
                b = (b.withFormat("puffin").withReferencedDataFile(refs[0])
                     .withContentOffset(_DV_CONTENT_OFFSET)
                     .withContentSizeInBytes(max(8, 4 * len(f.positions))))
            else:
                b = b.withFormat("parquet")
                if len(refs) == 1:
                    b = b.withReferencedDataFile(refs[0])
                if refs:
                    fid = self.jvm.memo("DELETE_FILE_PATH",
                                        self._ice.MetadataColumns.DELETE_FILE_PATH.fieldId)
                    stype = self._java_type("string")
                    conv = self._ice.types.Conversions
                    lowers = self.jvm.java.util.HashMap()
                    uppers = self.jvm.java.util.HashMap()
                    lowers.put(fid, conv.toByteBuffer(stype, min(refs)))
                    uppers.put(fid, conv.toByteBuffer(stype, max(refs)))
                    b = b.withMetrics(self._ice.Metrics(f.record_count, None, None, None, None,
                                                        lowers, uppers))
        elif f.content == EQUALITY_DELETES:
            cols = list(f.equality_columns)
            ids = self.gateway.new_array(self.jvm.int, len(cols))
            for i, c in enumerate(cols):
                ids[i] = self.field_ids[c]
            b = b.ofEqualityDeletes(ids).withFormat("parquet")
            if self.equality_delete_bounds:
                lower, upper, nulls = bounds_of(cols, f.equality_rows)
                b = b.withMetrics(self._metrics(f.record_count, cols, dict(lower), dict(upper),
                                                dict(nulls)))
        else:
            raise JavaDriverError(f"unknown delete file content {f.content!r} ({f.path})")
        b = (b.withPath(self.real_path(f.path)).withFileSizeInBytes(_FILE_SIZE)
             .withRecordCount(f.record_count))
        if self.config.spec.fields:
            b = b.withPartition(self.partition(f.partition))
        return b.build()


# ----------------------------------------------------------------------------- writers

class JavaWriter:
    """One writer: ``begin`` fixes the operation at the current snapshot, ``commit`` runs it."""

    def __init__(self, table: JavaTable, name: str, catalog):
        self.table = table
        self.name = name
        self.catalog = catalog
        self.operation: Operation | None = None
        self.base_snapshot_id: int | None = None
        self.base_sequence_number: int | None = None
        self.java_message: str | None = None   # the raw Java message of the last failure
        self.java_exception: str | None = None  # its class name
        self.commit_seconds: float | None = None
        self._update = None
        self._begin_failure: tuple[str, str | None] | None = None
        self._done = False
        self.snapshot: dict | None = None  # the snapshot its commit added: seq, operation, summary

    def begin(self, op: Operation) -> None:
        """Load the table in this writer's catalog and build the Java operation at its head."""
        if self._update is not None or self._done:
            raise JavaDriverError(f"writer {self.name} has already begun")
        t = self.table
        jtable = t.load(self.catalog)
        # SnapshotUtil.latestSnapshot(TableMetadata, branch): the head of the branch the
        # operation commits to, main's head for a branch that does not exist yet (the parent
        # SnapshotProducer.apply uses; the Table overload would give null there)
        base = t._ice.util.SnapshotUtil.latestSnapshot(jtable.operations().current(),
                                                        op.branch or "main")
        self.base_snapshot_id = base.snapshotId() if base is not None else None
        self.base_sequence_number = base.sequenceNumber() if base is not None else None
        self.operation = op
        from py4j.protocol import Py4JJavaError
        try:
            self._update = self._build(jtable, op)
        except Py4JJavaError as exc:
            # Java refused the operation while it was being built (e.g. a plain position delete
            # in a v3 table): that is the writer's outcome, reported by commit().
            self._begin_failure = self._classify(exc.java_exception)
            self._update = False

    def commit(self) -> tuple[str, str | None]:
        """Run Java's commit(); the outcome and, unless committed, the (readable) Java message."""
        if self._update is None:
            raise JavaDriverError(f"writer {self.name} commits before it began")
        if self._done:
            raise JavaDriverError(f"writer {self.name} has already committed")
        self._done = True
        if self._begin_failure is not None:
            self.commit_seconds = 0.0
            return self._begin_failure
        from py4j.protocol import Py4JError, Py4JJavaError
        t0 = time.perf_counter()
        try:
            self._update.commit()
            outcome: tuple[str, str | None] = (COMMITTED, None)
            new = self.table.note_commit()
            self.snapshot = new[-1] if new else None
        except Py4JJavaError as exc:
            outcome = self._classify(exc.java_exception)
        except Py4JError as exc:
            outcome = (ERROR, f"py4j: {exc}")
        finally:
            self.commit_seconds = time.perf_counter() - t0
            self.table.commit_seconds.append(self.commit_seconds)
            self.table._release_catalog(self.catalog)  # a writer commits once: free its catalog
        return outcome

    def _classify(self, jexc) -> tuple[str, str | None]:
        if os.environ.get("ICECHECK_JAVA_STACK"):   # debugging the driver: the Java stack
            sys.stderr.write(str(jexc.toString()) + "\n" + "\n".join(
                "  at " + str(e) for e in list(jexc.getStackTrace())[:25]) + "\n")
        top_cls = jexc.getClass().getName()
        top_msg = jexc.getMessage()
        self.java_exception, self.java_message = top_cls, top_msg
        cur, depth = jexc, 0
        while cur is not None and depth < 10:
            cls = cur.getClass().getName()
            msg = self.table.readable(cur.getMessage() or "")
            if cls in (_VALIDATION_EXC, _CHERRYPICK_EXC):
                return VALIDATION_FAILED, msg
            if cls == _COMMIT_FAILED_EXC:
                return COMMIT_FAILED, msg
            if cls == _COMMIT_UNKNOWN_EXC:
                return COMMIT_UNKNOWN, msg
            if cls == _NOT_FOUND_EXC:
                return READ_FAILED, msg
            if cls == ILLEGAL_ARGUMENT_EXC and REFUSED_RE.match(msg):
                return VALIDATION_FAILED, msg
            cur, depth = cur.getCause(), depth + 1
        return ERROR, f"{top_cls}: {self.table.readable(top_msg or '')}"

    # -- building the Java operation

    def _build(self, jtable, op: Operation):
        if op.groups:
            # rewrite_data_files with partial progress: each commit built now, made one after
            # another at the commit step (RewriteDataFilesCommitManager per batch)
            return _StagedGroups([self._build(jtable, g) for g in op.groups],
                                 op.max_failed_groups)
        t = self.table
        kind = KIND_ALIASES.get(op.kind, op.kind)
        v = op.validations
        self._check_expressible(kind, op)
        jf = t.java_file

        if kind == APPEND or kind == FAST_APPEND:
            u = jtable.newAppend() if kind == APPEND else jtable.newFastAppend()
            for f in op.add_data:
                u.appendFile(jf(f))
        elif kind == OVERWRITE:
            u = jtable.newOverwrite()
            for f in op.add_data:
                u.addFile(jf(f))
            if op.remove_deletes:
                sets = t._ice.util
                u.deleteFiles(sets.DataFileSet.of([jf(f) for f in op.delete_data]),
                              sets.DeleteFileSet.of([jf(f) for f in op.remove_deletes]))
            else:
                for f in op.delete_data:
                    u.deleteFile(jf(f))
            if op.row_filter is not None:
                u.overwriteByRowFilter(self._as_written(op, op.row_filter))
        elif kind == ROW_DELTA:
            u = jtable.newRowDelta()
            for f in op.add_data:
                u.addRows(jf(f))
            for f in op.delete_data:
                u.removeRows(jf(f))
            for f in op.add_deletes:
                u.addDeletes(jf(f))
            for f in op.remove_deletes:
                u.removeDeletes(jf(f))
        elif kind == REWRITE:
            u = jtable.newRewrite()
            for f in op.delete_data:
                u.deleteFile(jf(f))
            for f in op.remove_deletes:
                u.deleteFile(jf(f))
            for f in op.add_data:
                u.addFile(jf(f))
            explicit = dict(op.deletes_data_sequence_numbers)
            for f in op.add_deletes:
                if f.path in explicit:
                    u.addFile(jf(f), explicit[f.path])
                else:
                    u.addFile(jf(f))
            if v.starting_sequence_number and self.base_sequence_number is not None:
                u.dataSequenceNumber(self.base_sequence_number)
        elif kind == DELETE_FILES:
            u = jtable.newDelete()
            for f in op.delete_data:
                u.deleteFile(jf(f))
            if op.row_filter is not None:
                u.deleteFromRowFilter(self._as_written(op, op.row_filter))
            if v.files_exist:
                u.validateFilesExist()
        elif kind == REPLACE_PARTITIONS:
            u = jtable.newReplacePartitions()
            for f in op.add_data:
                u.addFile(jf(f))
        elif kind in REF_KINDS:
            # ManageSnapshots: a SnapshotManager over a transaction built on ops.refresh() now;
            # its preconditions are checked by these calls, its commit() is the transaction's
            u = jtable.manageSnapshots()
            name, arg = op.ref
            if kind == FAST_FORWARD:
                u.fastForwardBranch(name, arg)
            else:
                if arg:
                    target = t.snapshot_order[arg - 1] if arg <= len(t.snapshot_order) else -1
                else:
                    current = jtable.currentSnapshot()
                    target = current.snapshotId() if current is not None else -1
                (u.createBranch if kind == CREATE_BRANCH else u.createTag)(name, target)
            return u
        elif kind == CHERRY_PICK:
            # SnapshotManager.cherrypick: a CherryPickOperation staged in ManageSnapshots'
            # transaction (built now, re-applied on the refreshed metadata at the commit)
            n = op.pick
            target = t.snapshot_order[n - 1] if 1 <= n <= len(t.snapshot_order) else -1
            return jtable.manageSnapshots().cherrypick(target)
        elif kind == REWRITE_MANIFESTS:
            return self._rewrite_manifests(jtable)
        elif kind == TRANSACTION:
            # table.newTransaction(); each operation built on the transaction and committed
            # into it now (a ValidationException here is the writer's outcome, reported by
            # commit()); commitTransaction() at the commit step (models/transaction.py)
            txn = jtable.newTransaction()
            for sub in op.ops:
                self._build(txn, sub).commit()
            return _StagedTransaction(txn)
        elif kind == UPGRADE_FORMAT:
            # PropertiesUpdate: TableMetadata.replaceProperties upgrades the format version
            return jtable.updateProperties().set("format-version", str(op.format_version))
        elif kind == EXPIRE_SNAPSHOTS:
            # RemoveSnapshots with explicit ids (ReachableFileCleanup); ordinals index the
            # table's commit order as this driver saw it (JavaTable.note_commit)
            u = jtable.expireSnapshots()
            if op.retain_last is not None:
                # Spark's expire_snapshots procedure: older_than now, retain_last N (its file
                # clean-up is the Spark action's own; core picks its own strategy here)
                now = t.jvm.java.lang.System.currentTimeMillis()
                u.expireOlderThan(now + 1000).retainLast(op.retain_last)
            for n in op.expire:
                if 1 <= n <= len(t.snapshot_order):
                    u.expireSnapshotId(t.snapshot_order[n - 1])
            return u
        else:
            raise JavaDriverError(f"unknown operation kind {op.kind!r}")

        if not op.case_sensitive:
            u.caseSensitive(False)
        if op.branch is not None:
            u.toBranch(op.branch)   # SnapshotProducer.targetBranch's precondition runs here
        if v.from_snapshot and kind in _FROM_SNAPSHOT_KINDS and self.base_snapshot_id is not None:
            u.validateFromSnapshot(self.base_snapshot_id)
        if v.filter is not None and kind in _FILTER_KINDS:
            u.conflictDetectionFilter(self._as_written(op, v.filter))
        if v.no_conflicting_data and kind in (OVERWRITE, REPLACE_PARTITIONS):
            u.validateNoConflictingData()
        if v.no_conflicting_deletes and kind in (OVERWRITE, REPLACE_PARTITIONS):
            u.validateNoConflictingDeletes()
        if v.append_only and kind == REPLACE_PARTITIONS:
            u.validateAppendOnly()
        if kind == ROW_DELTA:
            if v.no_conflicting_data_files:
                u.validateNoConflictingDataFiles()
            if v.no_conflicting_delete_files:
                u.validateNoConflictingDeleteFiles()
            if v.deleted_files:
                u.validateDeletedFiles()
            if v.data_files_exist is not None:
                names = (op.referenced_data_files if v.data_files_exist is True
                         else v.data_files_exist)
                paths = [t.real_path(_name(p)) for p in names]
                u.validateDataFilesExist(paths)
        return u

    def _as_written(self, op: Operation, expr):
        """The Java expression of ``expr`` with its column names as the scenario wrote them
        (caseSensitive(false) binds them to the schema's)."""
        if op.written_names:
            from ..models.filters import rename_columns
            expr = rename_columns(expr, dict(op.written_names))
        return to_java_expression(expr, self.table.jvm)

    def _rewrite_manifests(self, jtable):
        """RewriteManifestsSparkAction's plan and commit without Spark (Iceberg 1.10.2,
        doExecute / rewriteManifests(content) / replaceManifests): for data manifests and then
        delete manifests of the current snapshot, two or more are rewritten into one new
        manifest of their live files as EXISTING entries (sequence numbers kept), committed as
        rewriteManifests().deleteManifest(..).addManifest(..). The manifests are written now
        (at begin), as the action writes them before it commits."""
        t = self.table
        ice = t._ice
        u = jtable.rewriteManifests()
        snap = jtable.currentSnapshot()
        if snap is None:
            return u
        io = jtable.io()
        fv = jtable.operations().current().formatVersion()
        spec = jtable.spec()
        for n, content in enumerate(("data", "deletes")):
            manifests = list(snap.dataManifests(io) if content == "data"
                             else snap.deleteManifests(io))
            if len(manifests) < 2:
                continue
            out = io.newOutputFile(f"{jtable.location()}/metadata/icecheck-rm-"
                                   f"{self.name}-{uuid.uuid4().hex}-{n}.avro")
            writer = (ice.ManifestFiles.write(fv, spec, out, None) if content == "data"
                      else ice.ManifestFiles.writeDeleteManifest(fv, spec, out, None))
            for m in manifests:
                reader = (ice.ManifestFiles.read(m, io) if content == "data"
                          else ice.ManifestFiles.readDeleteManifest(m, io, jtable.specs()))
                it = reader.iterator()
                while it.hasNext():
                    f = it.next().copy()
                    writer.existing(f, m.snapshotId(), f.dataSequenceNumber(),
                                    f.fileSequenceNumber())
                reader.close()
            writer.close()
            for m in manifests:
                u.deleteManifest(m)
            u.addManifest(writer.toManifestFile())
        return u

    def _check_expressible(self, kind: str, op: Operation) -> None:
        v = op.validations
        problems = []
        if not op.case_sensitive and kind not in (DELETE_FILES, OVERWRITE, ROW_DELTA):
            problems.append(f"caseSensitive has no Java call on {kind}")
        for switch, kinds in _SWITCH_KINDS.items():
            if getattr(v, switch) and kind not in kinds:
                problems.append(f"validation {switch} has no Java call on {kind}")
        if v.data_files_exist is not None and kind != ROW_DELTA:
            problems.append(f"validation data_files_exist has no Java call on {kind}")
        if not v.validate_on_first_attempt:
            problems.append("validate_on_first_attempt=False is PyIceberg behaviour, not Java's")
        if v.deleted_data_files_by_filter:
            problems.append("deleted_data_files_by_filter is PyIceberg behaviour (Java checks "
                            "deleted data files only for overwriteByRowFilter)")
        dv_targets = [d.referenced_data_file for d in op.add_deletes if d.content == "dv"]
        if len(dv_targets) != len(set(dv_targets)):
            problems.append("two DVs of one data file in one commit: Java 1.10 reads and merges "
                            "them (MergingSnapshotProducer.mergeDVs), and this driver's DVs are "
                            "metadata-only (no Puffin bytes to read)")
        if v.fail_missing_delete_paths is not None:
            derived = Operation(kind, validations=_replace_fmdp(v))
            java_default = derived.missing_delete_paths_enabled
            if v.fail_missing_delete_paths != java_default:
                problems.append(f"fail_missing_delete_paths={v.fail_missing_delete_paths} differs "
                                f"from what Java derives for {kind} ({java_default})")
        allowed = {
            APPEND: {"add_data"}, FAST_APPEND: {"add_data"},
            OVERWRITE: {"add_data", "delete_data", "remove_deletes", "row_filter"},
            ROW_DELTA: {"add_data", "delete_data", "add_deletes", "remove_deletes"},
            REWRITE: {"add_data", "delete_data", "add_deletes", "remove_deletes"},
            DELETE_FILES: {"delete_data", "row_filter"},
            REPLACE_PARTITIONS: {"add_data"},
            EXPIRE_SNAPSHOTS: set(), UPGRADE_FORMAT: set(), CHERRY_PICK: set(),
            TRANSACTION: {"add_data", "add_deletes"},
            REWRITE_MANIFESTS: set(),
            CREATE_BRANCH: set(), CREATE_TAG: set(), FAST_FORWARD: set(),
        }.get(kind)
        if allowed is None:
            problems.append(f"unknown operation kind {op.kind!r}")
        else:
            for attr in ("add_data", "delete_data", "add_deletes", "remove_deletes"):
                if getattr(op, attr) and attr not in allowed:
                    problems.append(f"{kind} cannot {attr.replace('_', ' ')} in Java")
            if op.row_filter is not None and "row_filter" not in allowed:
                problems.append(f"{kind} takes no row filter in Java")
        if problems:
            raise JavaDriverError(f"writer {self.name}: " + "; ".join(problems))


class _StagedGroups:
    """Several commits of one command (partial progress): each is committed in turn, a failed
    one skipped (commitOrClean logs it); more than ``max_failed`` failures re-raise the first
    Java exception, as doExecuteWithPartialProgress then throws."""

    def __init__(self, updates: list, max_failed: int):
        self.updates = updates
        self.max_failed = max_failed

    def commit(self) -> None:
        from py4j.protocol import Py4JJavaError
        failures = []
        for u in self.updates:
            try:
                u.commit()
            except Py4JJavaError as e:
                failures.append(e)
        if len(failures) > self.max_failed:
            raise failures[0]


class _StagedTransaction:
    """A Java transaction whose operations are staged: ``commit()`` is commitTransaction()."""

    def __init__(self, txn):
        self.txn = txn

    def commit(self) -> None:
        self.txn.commitTransaction()


def _replace_fmdp(v):
    from dataclasses import replace
    return replace(v, fail_missing_delete_paths=None)


def _name(p: Any) -> str:
    """A model file name from a name, a path or a model file object."""
    return getattr(p, "path", p)


def _prop_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
