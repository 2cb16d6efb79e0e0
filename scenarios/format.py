"""Parse a scenario file (docs/scenario-format.md) into model objects.

Every problem is an ``InputError`` naming the file and the line: unknown keys, operations,
profiles, writers or file names, filters that do not parse, rows that do not fit the schema.
"""

from __future__ import annotations

import re

import os
from dataclasses import dataclass, field
from typing import Any

from icecheck.models import catalog as cat
from icecheck.models import operations as ops
from icecheck.models.files import (CONTENTS, DATA, DV, EQUALITY_DELETES, POSITION_DELETES,
                                   DataFile, DeleteFile, pairs)
from icecheck.models.filters import (FilterSyntaxError, check_columns, parse_filter,
                                     resolve_columns)
from icecheck.models.operations import Operation, Validations
from icecheck.models.system import OUTCOMES
from icecheck.models.table import COLUMN_TYPES, INT_RANGES, Schema, TableConfig, property_error
from icecheck.models.transforms import PartitionField, PartitionSpec, parse_transform
from icecheck.models.commands_spec import (COMMAND_KEYS, COMMANDS, COMPACT_OPTIONS, INSERT, MERGE,
                                           MERGE_INSERT, OVERWRITE_PARTITIONS, UPDATE, UPSERT,
                                           EXPIRE, OVERWRITE_FILES, ADD_FILES,
                                           REMOVE_ORPHAN_FILES, Command,
                                           compact_option_error)

from .errors import InputError
from .yamlload import Ctx as _Ctx, LineDict, LineList, kind_of, load_yaml_file

FORMAT_VERSION = 1
TOP_KEYS = {"version", "id", "description", "catalog", "profile", "writer_profiles", "table",
            "files", "steps", "expect", "conformance", "sinks", "clients"}
TABLE_KEYS = {"format_version", "schema", "partition_spec", "properties"}
FILE_KEYS = {"content", "rows", "partition", "record_count", "bounds", "null_counts", "deletes",
             "equality_ids"}
OP_KEYS = {"op", "add", "delete", "add_deletes", "remove_deletes", "row_filter", "validate",
           "expect", "snapshots", "branch", "name", "snapshot", "to", "format_version",
           "operations", "case_sensitive", "older_than"}
VALIDATE_KEYS = {"from_snapshot", "filter", "no_conflicting_data", "no_conflicting_deletes",
                 "no_conflicting_data_files", "no_conflicting_delete_files", "deleted_files",
                 "data_files_exist", "files_exist", "starting_sequence_number",
                 "fail_missing_delete_paths", "validate_on_first_attempt",
                 "deleted_data_files_by_filter", "append_only"}
PHASE_STEPS = ("write", "refresh", "validate", "write_metadata", "cas")
EXPECT_KEYS = {"outcome", "message", "attempts", "sequence_number", "operation", "summary",
               "data_files", "delete_files", "manifests"}
SUMMARY_KEYS = ("added-data-files", "added-delete-files", "deleted-data-files",
                "removed-delete-files")
FINAL_EXPECT_KEYS = {"outcome", "message", "live_data_files", "live_delete_files", "rows",
                     "deleted_files", "readable"}
OPS_ALLOWED_KEYS = {
    ops.APPEND: {"add"}, ops.FAST_APPEND: {"add"},
    ops.OVERWRITE: {"add", "delete", "row_filter"},
    ops.ROW_DELTA: {"add", "delete", "add_deletes", "remove_deletes"},
    ops.REWRITE: {"add", "delete", "add_deletes", "remove_deletes"},
    ops.DELETE_FILES: {"delete", "row_filter"},
    ops.REPLACE_PARTITIONS: {"add"},
    ops.EXPIRE_SNAPSHOTS: {"snapshots"},
    ops.UPGRADE_FORMAT: {"format_version"},
    ops.CHERRY_PICK: {"snapshot"},
    ops.TRANSACTION: {"operations"},
    ops.REWRITE_MANIFESTS: set(),
    ops.REMOVE_ORPHAN_FILES: {"older_than"},
    ops.CREATE_BRANCH: {"name", "snapshot"},
    ops.CREATE_TAG: {"name", "snapshot"},
    ops.FAST_FORWARD: {"name", "to"},
}
# operations with caseSensitive(boolean) (DeleteFiles, OverwriteFiles, RowDelta)
CASE_SENSITIVE_KINDS = (ops.DELETE_FILES, ops.OVERWRITE, ops.ROW_DELTA)
# operations that produce a snapshot and so may take ``branch`` (toBranch)
BRANCH_KINDS = (ops.APPEND, ops.FAST_APPEND, ops.OVERWRITE, ops.ROW_DELTA, ops.REWRITE,
                ops.DELETE_FILES, ops.REPLACE_PARTITIONS)
_REF_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
#: an ADD_FILES command's file name (its path in the model is ``ext/<name>``)
_EXTERNAL_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class StepExpect:
    outcome: str | None = None
    message: str | None = None
    # what the snapshot the step committed holds (None: not checked)
    attempts: int | None = None            # commit attempts (1 + retries after lost swaps)
    sequence_number: int | None = None
    operation: str | None = None           # the snapshot's operation (append, overwrite, ...)
    summary: tuple | None = None           # ((key, int), ...): these summary counts
    data_files: tuple[str, ...] | None = None    # live data files of that snapshot, sorted
    delete_files: tuple[str, ...] | None = None  # live delete files of that snapshot, sorted
    manifests: tuple[int, int] | None = None     # (data manifests, delete manifests) it lists


@dataclass(frozen=True)
class Step:
    """One scenario step. ``kind``: commit_now, begin, commit, phase, fault, crash, tick (one
    tick of the clock; ``writer`` "clock")."""

    kind: str
    line: int
    writer: str
    operation: Operation | None = None
    command: Any = None
    phase: str | None = None
    fault: str | None = None      # a fault's kind; a restart's way; a crash's before_commit_log
    expect: StepExpect | None = None


@dataclass(frozen=True)
class FinalExpect:
    outcome: str | None = None
    message: str | None = None
    live_data_files: tuple[str, ...] | None = None
    live_delete_files: tuple[str, ...] | None = None
    rows: tuple[tuple, ...] | None = None
    deleted_files: tuple[str, ...] | None = None   # named files gone from the object store
    readable: bool | None = None                   # the current metadata can be read in full


@dataclass
class Scenario:
    path: str
    id: str
    description: str
    catalog: str
    profile: str | None
    table: TableConfig
    files: dict[str, Any]
    steps: list[Step]
    expect: FinalExpect
    conformance_skip: dict[str, str] = field(default_factory=dict)
    # writer -> its own engine profile (a writer not named runs on ``profile``)
    writer_profiles: dict[str, str] = field(default_factory=dict)
    # streaming sinks (models/lifecycle.py): writer -> (restarts, ways to restart it)
    sinks: dict[str, tuple] = field(default_factory=dict)
    # writers' own catalog clients (models/clients.py): writer -> (swap, faults, applied_failed)
    clients: dict[str, tuple] = field(default_factory=dict)

    def profile_of(self, writer: str) -> str | None:
        return self.writer_profiles.get(writer, self.profile)

    @property
    def profiles(self) -> tuple[str, ...]:
        """Every engine profile a writer of the scenario runs on."""
        names = [self.profile] if self.profile else []
        names += [p for p in self.writer_profiles.values() if p not in names]
        return tuple(names)

    @property
    def uses_faults(self) -> bool:
        return any(s.kind == "fault" and s.fault != "applied_failed" for s in self.steps)

    @property
    def uses_phantom_failures(self) -> bool:
        return any(s.kind == "fault" and s.fault == "applied_failed" for s in self.steps)

    @property
    def uses_crashes(self) -> bool:
        return any(s.kind == "crash" for s in self.steps)

    @property
    def ticks(self) -> int:
        """How many times the scenario advances the clock (``tick`` steps)."""
        return sum(1 for s in self.steps if s.kind == "tick")


def load_scenario(path: str) -> Scenario:
    doc = load_yaml_file(path)
    return parse_scenario(doc, path)


def load_scenarios(paths: list[str]) -> list[Scenario]:
    """Several scenario files run together: their ids must be unique (a report keyed by id
    would otherwise merge two scenarios' verdicts)."""
    seen: dict[str, str] = {}
    out = []
    for path in paths:
        doc = load_yaml_file(path)
        sc = parse_scenario(doc, path)
        if sc.id in seen:
            line = doc.line_of("id") if isinstance(doc, LineDict) and "id" in doc else None
            raise InputError(f"duplicate scenario id {sc.id!r} (also in {seen[sc.id]})", path,
                             line)
        seen[sc.id] = path
        out.append(sc)
    return out


def parse_scenario(doc: Any, path: str) -> Scenario:
    """Parse a scenario document; every problem is an ``InputError`` naming the file (and
    the line, wherever the parser checked the node it read)."""
    try:
        return _parse_scenario(doc, path)
    except InputError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:
        # A value of the wrong shape that no check above caught (a list where a name belongs,
        # say): still one line naming the file, never a traceback.
        raise InputError(f"malformed scenario: a value has the wrong type or shape "
                         f"({type(e).__name__}: {e})", path) from None
    except RecursionError:
        raise InputError("malformed scenario: nested too deeply", path) from None


def _parse_scenario(doc: Any, path: str) -> Scenario:
    ctx = _Ctx(path)
    if not isinstance(doc, LineDict):
        raise ctx.fail("a scenario must be a YAML mapping", 1)
    ctx.keys(doc, TOP_KEYS, "the scenario")
    version = doc.get("version", FORMAT_VERSION)
    if type(version) is not int or version != FORMAT_VERSION:    # `true` and 1.0 == 1 in Python
        raise ctx.fail(f"unsupported scenario format version {version!r} (this is version "
                       f"{FORMAT_VERSION})", doc, "version")
    sid = str(doc.get("id") or os.path.splitext(os.path.basename(path))[0])
    catalog = doc.get("catalog", cat.CAS)
    if catalog not in cat.KINDS:
        raise ctx.fail(f"unknown catalog {catalog!r}; expected one of {', '.join(cat.KINDS)}",
                       doc, "catalog")
    if "table" not in doc:
        raise ctx.fail("missing 'table'", doc)
    table = parse_table(ctx, ctx.mapping(doc["table"], "table", doc, "table"))
    files = parse_files(ctx, table, ctx.mapping(doc.get("files", LineDict()), "files", doc, "files"))
    profile = doc.get("profile")
    from icecheck.models.profiles import load_profiles
    known = load_profiles()
    if profile is not None:
        if not isinstance(profile, str) or profile not in known:
            raise ctx.fail(f"unknown profile {profile!r}; known: {', '.join(sorted(known))}",
                           doc, "profile")
    writer_profiles: dict[str, str] = {}
    if "writer_profiles" in doc:
        wp = ctx.mapping(doc["writer_profiles"], "writer_profiles", doc, "writer_profiles")
        for w, p in wp.items():
            _writer_name(ctx, w, wp, w)
            if not isinstance(p, str) or p not in known:
                raise ctx.fail(f"writer_profiles: unknown profile {p!r} for {w}; known: "
                               f"{', '.join(sorted(known))}", wp, w)
            writer_profiles[str(w)] = p
    sinks = _parse_sinks(ctx, doc, profile, writer_profiles)
    clients = _parse_clients(ctx, doc)
    steps = parse_steps(ctx, table, files, ctx.seq(doc.get("steps"), "steps", doc, "steps"), profile,
                        writer_profiles, sinks)
    expect = parse_final_expect(ctx, table, files, doc.get("expect"), doc)
    skip = {}
    if "conformance" in doc:
        conf = ctx.mapping(doc["conformance"], "conformance", doc, "conformance")
        ctx.keys(conf, {"skip", "reason"}, "conformance")
        for target in conf.get("skip", []):
            skip[str(target)] = str(conf.get("reason", "not expressible on this target"))
    return Scenario(path, sid, str(doc.get("description", "")).strip(), catalog, profile, table,
                    files, steps, expect, skip, writer_profiles, sinks, clients)


def _parse_sinks(ctx: _Ctx, doc: LineDict, profile, writer_profiles: dict) -> dict:
    """``sinks: {w1: {restarts: 1, restart: [checkpoint]}}``: writers that run as streaming
    sinks of their profile's engine (models/lifecycle.py)."""
    from icecheck.models import lifecycle as life
    from icecheck.models.profiles import get_profile
    out: dict[str, tuple] = {}
    if "sinks" not in doc:
        return out
    node = ctx.mapping(doc["sinks"], "sinks", doc, "sinks")
    for w, spec in node.items():
        _writer_name(ctx, w, node, w)
        spec = ctx.mapping(spec if spec is not None else LineDict(), f"sinks.{w}", node, w)
        ctx.keys(spec, {"restarts", "restart"}, f"sinks.{w}")
        prof = writer_profiles.get(str(w), profile)
        mode = life.mode_of(get_profile(prof).engine) if prof else None
        if mode is None:
            raise ctx.fail(f"sinks.{w}: its profile ({prof}) runs no streaming sink the model "
                           f"knows (a Flink or a Spark profile)", node, w)
        n = spec.get("restarts", 1)
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= 3:
            raise ctx.fail(f"sinks.{w}.restarts must be an integer in [0, 3], not {n!r}", spec,
                           "restarts")
        kinds = spec.get("restart", [life.CHECKPOINT])
        kinds = [kinds] if isinstance(kinds, str) else kinds
        allowed = life.RESTART_KINDS[mode]
        if not isinstance(kinds, list) or not kinds or any(k not in allowed for k in kinds):
            raise ctx.fail(f"sinks.{w}.restart: one or more of {', '.join(allowed)} for a {mode} "
                           f"sink, not {kinds!r}", spec, "restart" if "restart" in spec else None)
        out[str(w)] = (n, tuple(dict.fromkeys(kinds)))
    return out


def _parse_clients(ctx: _Ctx, doc: LineDict) -> dict:
    """``clients: {w2: {swap: hms_lock, faults: true}}``: a writer's own catalog client
    (models/clients.py); writers not named commit as ``catalog`` says."""
    from icecheck.models.clients import SWAPS
    out: dict[str, tuple] = {}
    if "clients" not in doc:
        return out
    node = ctx.mapping(doc["clients"], "clients", doc, "clients")
    for w, spec in node.items():
        _writer_name(ctx, w, node, w)
        spec = ctx.mapping(spec, f"clients.{w}", node, w)
        ctx.keys(spec, {"swap", "faults", "applied_failed"}, f"clients.{w}")
        swap = spec.get("swap", doc.get("catalog", cat.CAS))
        if swap not in SWAPS:
            raise ctx.fail(f"clients.{w}.swap: one of {', '.join(SWAPS)}, not {swap!r}", spec,
                           "swap")
        for flag in ("faults", "applied_failed"):
            if not isinstance(spec.get(flag, False), bool):
                raise ctx.fail(f"clients.{w}.{flag} must be true or false", spec, flag)
        out[str(w)] = (swap, spec.get("faults", False), spec.get("applied_failed", False))
    return out


# -- table ------------------------------------------------------------------------------------

def parse_table(ctx: _Ctx, node: LineDict) -> TableConfig:
    ctx.keys(node, TABLE_KEYS, "table")
    fv = node.get("format_version", 2)
    if type(fv) is not int or fv not in (2, 3):
        raise ctx.fail(f"format_version must be 2 or 3, got {fv!r}", node, "format_version")
    schema_node = ctx.mapping(node.get("schema"), "table.schema", node, "schema")
    columns = []
    for name, typ in schema_node.items():
        if typ not in COLUMN_TYPES:
            raise ctx.fail(f"column {name!r} has unknown type {typ!r}; expected one of "
                           f"{', '.join(COLUMN_TYPES)}", schema_node, name)
        columns.append((str(name), typ))
    if not columns:
        raise ctx.fail("table.schema needs at least one column", node, "schema")
    schema = Schema(tuple(columns))
    fields = []
    spec_node = node.get("partition_spec") or LineList()
    spec_node = ctx.seq(spec_node, "table.partition_spec", node, "partition_spec")
    for i, text in enumerate(spec_node):
        try:
            transform, source = parse_transform(str(text))
        except ValueError as e:
            raise ctx.fail(str(e), spec_node, i) from None
        if source not in schema.names:
            raise ctx.fail(f"partition source column {source!r} is not in the schema", spec_node, i)
        fields.append(PartitionField(source, transform))
    props = node.get("properties") or {}
    props = ctx.mapping(props, "table.properties", node, "properties") if props else {}
    for k, v in props.items():
        problem = property_error(k, v)
        if problem:
            raise ctx.fail(problem, props, k)
    return TableConfig(schema, PartitionSpec(tuple(fields)), fv, pairs(dict(props)))


# -- files ------------------------------------------------------------------------------------

def _check_value(ctx: _Ctx, typ: str, value: Any, node: Any, key: Any, what: str) -> Any:
    if value is None:
        return None
    if typ in ("int", "long"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ctx.fail(f"{what}: {value!r} is not an integer", node, key)
        low, high = INT_RANGES[typ]
        if not low <= value <= high:
            raise ctx.fail(f"{what}: {value} is out of range for {typ} ({low}..{high})",
                           node, key)
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise ctx.fail(f"{what}: {value!r} is not a string", node, key)
    return value


def _rows(ctx: _Ctx, table: TableConfig, node: Any, parent: LineDict, key: str,
          columns: tuple[str, ...] | None = None) -> tuple[tuple, ...]:
    rows_node = ctx.seq(node, "rows", parent, key)
    names = columns or table.schema.names
    types = table.schema.types()
    out = []
    for i, row in enumerate(rows_node):
        if not isinstance(row, list) or len(row) != len(names):
            raise ctx.fail(f"row {row!r} must be a list of {len(names)} values "
                           f"({', '.join(names)})", rows_node, i)
        out.append(tuple(_check_value(ctx, types[n], v, rows_node, i, f"column {n}")
                         for n, v in zip(names, row)))
    return tuple(out)


def _partition(ctx: _Ctx, table: TableConfig, node: LineDict, name: str) -> tuple | None:
    if "partition" not in node:
        return None
    pnode = ctx.mapping(node["partition"], f"file {name}: partition", node, "partition")
    types = table.schema.types()
    values = {}
    for col, value in pnode.items():
        if col not in types:
            raise ctx.fail(f"file {name}: partition column {col!r} is not in the schema", pnode, col)
        values[col] = _check_value(ctx, types[col], value, pnode, col, f"file {name}")
    for f in table.spec.fields:
        if f.source not in values:
            raise ctx.fail(f"file {name}: partition needs a value for {f.source!r}", node, "partition")
    return table.partition_from_values(values)


def parse_files(ctx: _Ctx, table: TableConfig, node: LineDict) -> dict[str, Any]:
    files: dict[str, Any] = {}
    deferred = []
    for name, spec in node.items():
        name = str(name)
        spec = ctx.mapping(spec, f"file {name}", node, name)
        ctx.keys(spec, FILE_KEYS, f"file {name}")
        content = spec.get("content", DATA)
        if content not in CONTENTS:
            raise ctx.fail(f"file {name}: unknown content {content!r}; expected one of "
                           f"{', '.join(CONTENTS)}", spec, "content")
        if content == DATA:
            files[name] = _data_file(ctx, table, name, spec)
        else:
            deferred.append((name, spec, content))
    for name, spec, content in deferred:
        files[name] = _delete_file(ctx, table, files, name, spec, content)
    return files


def _data_file(ctx: _Ctx, table: TableConfig, name: str, spec: LineDict) -> DataFile:
    partition = _partition(ctx, table, spec, name)
    if "rows" in spec and "null_counts" in spec:
        # rows give the file its metrics; null_counts beside them would be ignored unseen
        raise ctx.fail(f"file {name}: null_counts is for a file given by record_count and "
                       f"bounds; a file with rows counts its own nulls", spec, "null_counts")
    if "rows" in spec:
        rows = _rows(ctx, table, spec["rows"], spec, "rows")
        try:
            f = table.data_file(name, rows)
        except ValueError as e:
            raise ctx.fail(str(e), spec, "rows") from None
        if partition is not None and rows and partition != f.partition:
            raise ctx.fail(f"file {name}: rows are in partition {f.partition}, not {partition}",
                           spec, "partition")
        if not rows and partition is not None:
            f = DataFile(name, partition, 0, (), (), (), ())
        return f
    if "record_count" not in spec:
        raise ctx.fail(f"file {name}: a data file needs rows, or record_count (with bounds)", spec)
    count = spec["record_count"]
    if type(count) is not int or count < 0:                      # a YAML `true` is no count
        raise ctx.fail(f"file {name}: record_count must be a non-negative integer", spec, "record_count")
    if partition is None:
        if not table.spec.is_unpartitioned:
            raise ctx.fail(f"file {name}: a metadata-only file of a partitioned table needs "
                           f"'partition'", spec)
        partition = ()
    types = table.schema.types()
    lower, upper = {}, {}
    bnode = spec.get("bounds") or {}
    if bnode:
        bnode = ctx.mapping(bnode, f"file {name}: bounds", spec, "bounds")
    for col, pair in bnode.items():
        if col not in types:
            raise ctx.fail(f"file {name}: bounds column {col!r} is not in the schema", bnode, col)
        if not isinstance(pair, list) or len(pair) != 2:
            raise ctx.fail(f"file {name}: bounds of {col} must be [lower, upper]", bnode, col)
        lo, hi = (_check_value(ctx, types[col], v, bnode, col, f"file {name}") for v in pair)
        if lo is not None and hi is not None and lo > hi:
            raise ctx.fail(f"file {name}: lower bound of {col} is above its upper bound", bnode, col)
        lower[col], upper[col] = lo, hi
    nulls = spec.get("null_counts") or {}
    if nulls:
        nulls = ctx.mapping(nulls, f"file {name}: null_counts", spec, "null_counts")
    for col, n in nulls.items():
        # the metrics evaluators compare these with the record count (a column of nulls
        # only): a count that is no count would decide which files a filter may match
        if col not in types:
            raise ctx.fail(f"file {name}: null_counts column {col!r} is not in the schema",
                           nulls, col)
        if type(n) is not int or not 0 <= n <= count:
            raise ctx.fail(f"file {name}: null_counts of {col} must be an integer from 0 to "
                           f"the record_count {count}, not {n!r}", nulls, col)
    return DataFile(name, partition, count, pairs(lower), pairs(upper), pairs(dict(nulls)), None)


def _delete_file(ctx: _Ctx, table: TableConfig, files: dict, name: str, spec: LineDict,
                 content: str) -> DeleteFile:
    if content == DV and table.format_version < 3:
        raise ctx.fail(f"file {name}: deletion vectors need format_version 3", spec, "content")
    if content == POSITION_DELETES and table.format_version >= 3:
        raise ctx.fail(f"file {name}: format v3 tables use deletion vectors (content: dv), "
                       f"not position delete files", spec, "content")
    partition = _partition(ctx, table, spec, name)
    if content == EQUALITY_DELETES:
        ids = ctx.seq(spec.get("equality_ids"), f"file {name}: equality_ids", spec, "equality_ids")
        cols = tuple(str(c) for c in ids)
        for c in cols:
            if c not in table.schema.names:
                raise ctx.fail(f"file {name}: equality column {c!r} is not in the schema", spec,
                               "equality_ids")
        rows = _rows(ctx, table, spec.get("rows", LineList()), spec, "rows", cols)
        if partition is None:
            if not table.spec.is_unpartitioned:
                raise ctx.fail(f"file {name}: an equality delete of a partitioned table needs "
                               f"'partition'", spec)
            partition = ()
        return DeleteFile(name, content, partition, equality_columns=cols, equality_rows=rows)
    dnode = ctx.seq(spec.get("deletes"), f"file {name}: deletes", spec, "deletes")
    positions = []
    for i, item in enumerate(dnode):
        if not isinstance(item, list) or len(item) != 2 or type(item[1]) is not int:
            raise ctx.fail(f"file {name}: each delete is [data_file, position]", dnode, i)
        target, pos = str(item[0]), item[1]
        data = files.get(target)
        if not isinstance(data, DataFile):
            raise ctx.fail(f"file {name}: {target!r} is not a data file of this scenario", dnode, i)
        if data.rows is not None and not 0 <= pos < len(data.rows):
            raise ctx.fail(f"file {name}: {target} has no row at position {pos}", dnode, i)
        positions.append((target, pos))
    if not positions:
        raise ctx.fail(f"file {name}: deletes must not be empty", spec, "deletes")
    targets = {files[t].partition for t, _ in positions}
    if len(targets) > 1:
        raise ctx.fail(f"file {name}: a delete file covers one partition", spec, "deletes")
    if content == DV and len({t for t, _ in positions}) > 1:
        raise ctx.fail(f"file {name}: a deletion vector references exactly one data file", spec,
                       "deletes")
    own = targets.pop()
    if partition is not None and partition != own:
        raise ctx.fail(f"file {name}: partition differs from its data files' partition", spec,
                       "partition")
    return DeleteFile(name, content, own, positions=tuple(positions))


# -- steps ------------------------------------------------------------------------------------

def _file_list(ctx: _Ctx, files: dict, node: LineDict, key: str, want_delete: bool) -> tuple:
    items = node.get(key) or LineList()
    items = ctx.seq(items, key, node, key)
    out = []
    for i, name in enumerate(items):
        f = files.get(str(name))
        if f is None:
            raise ctx.fail(f"unknown file {name!r} in {key}", items, i)
        if f.is_delete != want_delete:
            kind = "a delete file" if f.is_delete else "a data file"
            raise ctx.fail(f"{name} is {kind}; {key} takes "
                           f"{'delete' if want_delete else 'data'} files", items, i)
        if f not in out:   # one commit adds a path once (DataFileSet / DeleteFileSet)
            out.append(f)
    return tuple(out)


def parse_operation(ctx: _Ctx, table: TableConfig, files: dict, node: LineDict) -> Operation:
    kind = node.get("op")
    if not isinstance(kind, str):
        raise ctx.fail(f"op must be an operation name, not {kind!r}", node, "op")
    kind = ops.KIND_ALIASES.get(kind, kind)
    if kind not in ops.KINDS:
        raise ctx.fail(f"unknown operation {node.get('op')!r}; expected one of "
                       f"{', '.join(ops.KINDS)}", node, "op")
    ctx.keys(node, OP_KEYS | {"begin"}, f"a {kind} operation")
    for key in ("add", "delete", "add_deletes", "remove_deletes", "row_filter", "snapshots",
                "name", "snapshot", "to", "format_version", "operations", "older_than"):
        if key in node and key not in OPS_ALLOWED_KEYS[kind]:
            raise ctx.fail(f"{kind} does not take {key!r} (it takes "
                           f"{', '.join(sorted(OPS_ALLOWED_KEYS[kind]))})", node, key)
    if kind in ops.REF_KINDS:
        return _ref_operation(ctx, kind, node)
    if kind == ops.TRANSACTION:
        return _transaction(ctx, table, files, node)
    if kind == ops.REMOVE_ORPHAN_FILES:
        for key in ("validate", "branch"):
            if key in node:
                raise ctx.fail(f"remove_orphan_files does not take {key!r} (it commits "
                               f"nothing)", node, key)
        return Operation(kind, older_than=_older_than(ctx, node, "remove_orphan_files",
                                                      required=True))
    if kind == ops.REWRITE_MANIFESTS:
        for key in ("validate", "branch"):
            if key in node:
                raise ctx.fail(f"rewrite_manifests does not take {key!r} (RewriteManifests "
                               f"validates its deleted manifests only)", node, key)
        return Operation(kind)
    branch = None
    if "branch" in node:
        if kind not in BRANCH_KINDS:
            raise ctx.fail(f"{kind} does not take 'branch' (toBranch is for operations that "
                           f"commit a snapshot)", node, "branch")
        branch = _ref_name(ctx, node, "branch")
    add = _file_list(ctx, files, node, "add", False)
    delete = _file_list(ctx, files, node, "delete", False)
    add_deletes = _file_list(ctx, files, node, "add_deletes", True)
    remove_deletes = _file_list(ctx, files, node, "remove_deletes", True)
    written = None
    if "case_sensitive" in node:
        if not isinstance(node["case_sensitive"], bool):
            raise ctx.fail("case_sensitive must be true or false", node, "case_sensitive")
        if kind not in CASE_SENSITIVE_KINDS:
            raise ctx.fail(f"{kind} takes no case_sensitive (caseSensitive is on "
                           f"{', '.join(CASE_SENSITIVE_KINDS)})", node, "case_sensitive")
        if not node["case_sensitive"]:
            written = {}
    row_filter = _filter(ctx, table, node, "row_filter", written) if "row_filter" in node \
        else None
    if kind == ops.REWRITE and not delete and not remove_deletes:
        raise ctx.fail("rewrite: Files to delete cannot be empty", node, "op")
    if kind == ops.REWRITE and delete:
        added = sum(f.record_count for f in add)
        replaced = sum(f.record_count for f in delete)
        if added > replaced:
            # BaseRewriteFiles: a compaction never adds rows (IllegalArgumentException in Java).
            raise ctx.fail(f"rewrite: Invalid REPLACE operation: {added} added records > "
                           f"{replaced} replaced records", node, "add")
    if kind == ops.REPLACE_PARTITIONS and not add:
        raise ctx.fail("replace_partitions needs at least one file to add", node, "op")
    if kind == ops.CHERRY_PICK:
        n = node.get("snapshot")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ctx.fail(f"cherry_pick needs snapshot: N (the N-th snapshot committed, from 1), "
                           f"not {n!r}", node, "snapshot" if "snapshot" in node else "op")
        if "validate" in node:
            raise ctx.fail("cherry_pick takes no validate", node, "validate")
        return Operation(kind, pick=n)
    if kind == ops.UPGRADE_FORMAT:
        v = node.get("format_version")
        if isinstance(v, bool) or v not in (2, 3):
            raise ctx.fail(f"upgrade_format_version needs format_version: 2 or 3, not {v!r}",
                           node, "format_version" if "format_version" in node else "op")
        if "validate" in node:
            raise ctx.fail("upgrade_format_version takes no validate", node, "validate")
        return Operation(kind, format_version=v)
    if kind == ops.EXPIRE_SNAPSHOTS:
        if "validate" in node:
            raise ctx.fail("expire_snapshots takes no validate (ExpireSnapshots has no "
                           "validations)", node, "validate")
        items = ctx.seq(node.get("snapshots"), "snapshots", node, "snapshots") \
            if "snapshots" in node else None
        if not items:
            raise ctx.fail("expire_snapshots needs snapshots: [N, ...] (N = the N-th snapshot "
                           "committed, from 1)", node, "snapshots" if "snapshots" in node else "op")
        for i, n in enumerate(items):
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ctx.fail(f"snapshots: {n!r} is not a snapshot number (1 = the first "
                               f"snapshot committed)", items, i)
        return Operation(kind, expire=tuple(int(n) for n in items))
    validations = parse_validations(ctx, table, files, node, kind, add_deletes, written)
    return Operation(kind, add, delete, add_deletes, remove_deletes, row_filter, validations,
                     branch=None if branch == "main" else branch,
                     case_sensitive=written is None,
                     written_names=tuple(sorted((written or {}).items())))


def _transaction(ctx: _Ctx, table: TableConfig, files: dict, node: LineDict) -> Operation:
    """transaction {operations: [OP, ...]}: table.newTransaction(), each operation staged and
    committed into it, then commitTransaction() (models/transaction.py)."""
    for key in ("validate", "branch"):
        if key in node:
            raise ctx.fail(f"transaction does not take {key!r} (each of its operations takes "
                           f"its own validate)", node, key)
    items = ctx.seq(node.get("operations"), "operations", node, "operations") \
        if "operations" in node else None
    if not items:
        raise ctx.fail("transaction needs operations: [{op: ...}, ...] (the operations it "
                       "stages, in order)", node, "operations" if "operations" in node else "op")
    staged = []
    for i, raw in enumerate(items):
        sub = ctx.mapping(raw, "an operation of the transaction", items, i)
        kind = ops.KIND_ALIASES.get(sub.get("op"), sub.get("op"))
        if kind in ops.KINDS and kind not in ops.TRANSACTION_KINDS:
            raise ctx.fail(f"a transaction here stages {', '.join(ops.TRANSACTION_KINDS)}, "
                           f"not {kind} (not modelled inside a transaction)", sub, "op")
        for key in ("branch", "expect", "begin"):
            if key in sub:
                raise ctx.fail(f"an operation inside a transaction does not take {key!r}",
                               sub, key)
        if "row_filter" in sub:
            raise ctx.fail("a row filter inside a transaction is not modelled (name the files "
                           "to delete)", sub, "row_filter")
        op = parse_operation(ctx, table, files, sub)
        if not op.validations.validate_on_first_attempt:
            raise ctx.fail("validate_on_first_attempt: false is PyIceberg's single-operation "
                           "commit, not a Java transaction", sub, "validate")
        staged.append(op)
    return Operation(ops.TRANSACTION, add_data=tuple(f for op in staged for f in op.add_data),
                     add_deletes=tuple(f for op in staged for f in op.add_deletes),
                     ops=tuple(staged))


def _ref_name(ctx: _Ctx, node: LineDict, key: str) -> str:
    name = node.get(key)
    if not isinstance(name, str) or not _REF_NAME_RE.match(name):
        raise ctx.fail(f"{key}: {name!r} is not a ref name (letters, digits, _ . -)", node, key)
    return name


def _ref_operation(ctx: _Ctx, kind: str, node: LineDict) -> Operation:
    """create_branch / create_tag {name, snapshot: N} and fast_forward {name, to}."""
    for key in ("validate", "branch"):
        if key in node:
            raise ctx.fail(f"{kind} does not take {key!r} (it takes "
                           f"{', '.join(sorted(OPS_ALLOWED_KEYS[kind]))})", node, key)
    if "name" not in node:
        raise ctx.fail(f"{kind} needs name: (the ref)", node, "op")
    name = _ref_name(ctx, node, "name")
    if kind == ops.FAST_FORWARD:
        if "to" not in node:
            raise ctx.fail("fast_forward needs to: (the ref whose head the branch moves to)",
                           node, "op")
        return Operation(kind, ref=(name, _ref_name(ctx, node, "to")))
    n = 0
    if "snapshot" in node:
        n = node["snapshot"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ctx.fail(f"snapshot: {n!r} is not a snapshot number (1 = the first snapshot "
                           f"committed)", node, "snapshot")
    return Operation(kind, ref=(name, int(n)))


def _filter(ctx: _Ctx, table: TableConfig, node: LineDict, key: str,
            written: dict | None = None):
    """Parse a predicate. ``written`` (an operation with ``case_sensitive: false``): names bind
    case-insensitively, and the names written otherwise than the schema's are recorded there."""
    text = node[key]
    if not isinstance(text, str):
        raise ctx.fail(f"{key} must be a predicate string", node, key)
    try:
        expr = parse_filter(text)
        if written is not None:
            expr, names = resolve_columns(expr, table.schema.names)
            for col, as_written in names.items():
                if written.setdefault(col, as_written) != as_written:
                    raise FilterSyntaxError(f"column {col} is written both {written[col]} and "
                                            f"{as_written} in one operation")
        check_columns(expr, table.schema.types())
    except FilterSyntaxError as e:
        raise ctx.fail(f"{key}: {e}", node, key) from None
    return expr


def parse_validations(ctx: _Ctx, table: TableConfig, files: dict, node: LineDict, kind: str,
                      add_deletes: tuple, written: dict | None = None) -> Validations:
    vnode = node.get("validate") or LineDict()
    vnode = ctx.mapping(vnode, "validate", node, "validate")
    ctx.keys(vnode, VALIDATE_KEYS, "validate")
    flags = {}
    for key in VALIDATE_KEYS - {"filter", "data_files_exist", "fail_missing_delete_paths"}:
        if key in vnode:
            if not isinstance(vnode[key], bool):
                raise ctx.fail(f"validate.{key} must be true or false", vnode, key)
            flags[key] = vnode[key]
    if "fail_missing_delete_paths" in vnode:
        if not isinstance(vnode["fail_missing_delete_paths"], bool):
            raise ctx.fail("validate.fail_missing_delete_paths must be true or false", vnode,
                           "fail_missing_delete_paths")
        flags["fail_missing_delete_paths"] = vnode["fail_missing_delete_paths"]
    if "filter" in vnode:
        flags["filter"] = _filter(ctx, table, vnode, "filter", written)
    if "data_files_exist" in vnode:
        value = vnode["data_files_exist"]
        if value is True:
            refs = []
            for d in add_deletes:
                refs.extend(p for p in d.referenced_paths if p not in refs)
            flags["data_files_exist"] = tuple(refs)
        elif value is False:
            pass
        else:
            items = ctx.seq(value, "validate.data_files_exist", vnode, "data_files_exist")
            names = []
            for i, n in enumerate(items):
                if not isinstance(files.get(str(n)), DataFile):
                    raise ctx.fail(f"unknown data file {n!r} in data_files_exist", items, i)
                names.append(str(n))
            flags["data_files_exist"] = tuple(names)
    return Validations(**flags)


def _step_expect(ctx: _Ctx, node: Any, parent: LineDict) -> StepExpect:
    node = ctx.mapping(node, "expect", parent, "expect")
    ctx.keys(node, EXPECT_KEYS, "a step's expect")
    outcome = node.get("outcome")
    if outcome is not None and outcome not in OUTCOMES:
        raise ctx.fail(f"unknown outcome {outcome!r}; expected one of {', '.join(OUTCOMES)}",
                       node, "outcome")
    message = node.get("message")
    extra: dict[str, Any] = {}
    for key in ("attempts", "sequence_number"):
        if key in node:
            value = node[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ctx.fail(f"{key} must be a positive integer, not {value!r}", node, key)
            extra[key] = value
    if "operation" in node:
        if node["operation"] not in ("append", "replace", "overwrite", "delete"):
            raise ctx.fail(f"unknown snapshot operation {node['operation']!r}; expected one of "
                           f"append, replace, overwrite, delete", node, "operation")
        extra["operation"] = node["operation"]
    if "summary" in node:
        summ = ctx.mapping(node["summary"], "summary", node, "summary")
        pairs = []
        for k, value in summ.items():
            if k not in SUMMARY_KEYS:
                raise ctx.fail(f"unknown summary key {k!r}; expected one of "
                               f"{', '.join(SUMMARY_KEYS)}", summ, k)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ctx.fail(f"summary {k} must be a count, not {value!r}", summ, k)
            pairs.append((k, value))
        extra["summary"] = tuple(sorted(pairs))
    for key in ("data_files", "delete_files"):
        if key in node:
            items = ctx.seq(node[key], key, node, key)
            extra[key] = tuple(sorted(str(x) for x in items))
    if "manifests" in node:
        mnode = ctx.mapping(node["manifests"], "manifests", node, "manifests")
        ctx.keys(mnode, {"data", "deletes"}, "manifests")
        counts = []
        for k in ("data", "deletes"):
            value = mnode.get(k, 0)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ctx.fail(f"manifests.{k} must be a count, not {value!r}", mnode, k)
            counts.append(value)
        extra["manifests"] = tuple(counts)
    return StepExpect(outcome, None if message is None else str(message), **extra)


def _writer_name(ctx: _Ctx, value: Any, node: LineDict, key: str) -> str:
    if not isinstance(value, str) or not value or not value.replace("_", "").replace("-", "").isalnum():
        raise ctx.fail(f"{key}: writer names are words like w1, got {value!r}", node, key)
    if value.startswith("setup") or (value.startswith("c") and value[1:].isdigit()):
        raise ctx.fail(f"{key}: writer name {value!r} is reserved", node, key)
    return value


def _check_supported(ctx, profile: str, command, node, table: TableConfig) -> None:
    """A command the profile has no rule for is an input error here, not a KeyError later;
    so is a table property that sets its write mode or isolation level otherwise than the
    profile (``profiles.property_conflict``: the engine reads them from the table)."""
    from icecheck.models.profiles import get_profile, property_conflict

    supported = get_profile(profile).commands
    if command.kind not in supported:
        raise ctx.fail(f"profile {profile} has no rule for {command.kind} (it supports "
                       f"{', '.join(supported)})", node, "command")
    problem = property_conflict(get_profile(profile), command.kind, dict(table.properties))
    if problem:
        raise ctx.fail(problem, node, "command")
    from .command_options import check_options_read
    check_options_read(ctx, get_profile(profile), command, node.get("command"))


def parse_steps(ctx: _Ctx, table: TableConfig, files: dict, node: LineList,
                profile: str | None, writer_profiles: dict[str, str] | None = None,
                sinks: dict | None = None) -> list[Step]:
    """The steps. A streaming sink's (``sinks``) may also ``begin`` with no command (its next
    batch: the one a restart runs again), ``crash`` between commits (``before_commit_log:
    true``: Spark's commit log not yet written), ``restart`` (``from:`` one of its ways) and
    ``commit`` what a restart began; the run checks that each such step can happen."""
    sinks = sinks or {}
    steps: list[Step] = []
    anonymous = 0
    begun: dict[str, bool] = {}
    added: dict[str, int] = {}
    for i, raw in enumerate(node):
        s = ctx.mapping(raw, "a step", node, i)
        line = s.line
        expect = _step_expect(ctx, s["expect"], s) if "expect" in s else None
        if "commit" in s and isinstance(s["commit"], LineDict):
            ctx.keys(s, {"commit", "expect"}, "a commit step")
            anonymous += 1
            op = parse_operation(ctx, table, files, s["commit"])
            inner = s["commit"].get("expect")
            if inner is not None:
                expect = _step_expect(ctx, inner, s["commit"])
            _claim_files(ctx, op, added, s, line)
            steps.append(Step("commit_now", line, f"c{anonymous}", operation=op, expect=expect))
        elif "commit" in s:
            ctx.keys(s, {"commit", "expect"}, "a commit step")
            w = _writer_name(ctx, s["commit"], s, "commit")
            if not begun.get(w) and w not in sinks:
                raise ctx.fail(f"commit: writer {w} has not begun (add a 'begin: {w}' step first)",
                               s, "commit")
            begun[w] = False
            steps.append(Step("commit", line, w, expect=expect))
        elif "begin" in s and _writer_name(ctx, s["begin"], s, "begin") in sinks \
                and "command" not in s:
            ctx.keys(s, {"begin", "expect"}, "a sink's begin step (its next batch)")
            steps.append(Step("begin", line, str(s["begin"]), expect=expect))
        elif "restart" in s:
            ctx.keys(s, {"restart", "from", "expect"}, "a restart step")
            w = _writer_name(ctx, s["restart"], s, "restart")
            if w not in sinks:
                raise ctx.fail(f"restart: writer {w} is not a streaming sink (list it under "
                               f"'sinks')", s, "restart")
            how = s.get("from", sinks[w][1][0])
            if how not in sinks[w][1]:
                raise ctx.fail(f"restart.from: {w} restarts {', '.join(sinks[w][1])} (its "
                               f"'sinks' entry), not {how!r}", s, "from")
            steps.append(Step("restart", line, w, fault=how, expect=expect))
        elif "begin" in s:
            w = _writer_name(ctx, s["begin"], s, "begin")
            if begun.get(w) and w not in sinks:
                raise ctx.fail(f"begin: writer {w} is still running its previous operation", s, "begin")
            begun[w] = True
            if "command" in s:
                ctx.keys(s, {"begin", "command", "expect"}, "a begin step")
                wprofile = (writer_profiles or {}).get(w, profile)
                if wprofile is None:
                    raise ctx.fail("a command step needs a top-level 'profile' (or the writer's "
                                   "entry in 'writer_profiles')", s, "command")
                command = parse_command(ctx, table, s["command"], s)
                _check_supported(ctx, wprofile, command, s, table)
                steps.append(Step("begin", line, w, command=command, expect=expect))
            else:
                op = parse_operation(ctx, table, files, s)
                _claim_files(ctx, op, added, s, line)
                steps.append(Step("begin", line, w, operation=op, expect=expect))
        elif "fault" in s:
            ctx.keys(s, {"fault", "expect"}, "a fault step")
            f = ctx.mapping(s["fault"], "fault", s, "fault")
            ctx.keys(f, {"writer", "kind"}, "fault")
            w = _writer_name(ctx, f.get("writer"), f, "writer")
            kind = f.get("kind")
            if kind not in ("reply_lost", "not_applied", "applied_failed"):
                raise ctx.fail("fault.kind must be reply_lost, not_applied or applied_failed",
                               f, "kind")
            if not begun.get(w) and w not in sinks:
                raise ctx.fail(f"fault: writer {w} has not begun", f, "writer")
            # applied_failed: the writer retries and is committed by a later step
            begun[w] = kind == "applied_failed"
            steps.append(Step("fault", line, w, fault=kind, expect=expect))
        elif "tick" in s:
            # the logical clock advances N ticks (models/clock.py)
            ctx.keys(s, {"tick"}, "a tick step")
            n = s["tick"]
            if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_OLDER_THAN:
                raise ctx.fail(f"tick: N advances the clock N ticks (1 to {MAX_OLDER_THAN}), "
                               f"not {n!r}", s, "tick")
            steps.extend(Step("tick", line, "clock") for _ in range(n))
        elif "crash" in s:
            ctx.keys(s, {"crash", "expect", "before_commit_log"}, "a crash step")
            w = _writer_name(ctx, s["crash"], s, "crash")
            if not begun.get(w) and w not in sinks:
                raise ctx.fail(f"crash: writer {w} has not begun", s, "crash")
            if "before_commit_log" in s and (w not in sinks or s["before_commit_log"] is not True):
                raise ctx.fail("crash.before_commit_log: true, for a streaming sink only",
                               s, "before_commit_log")
            begun[w] = False
            steps.append(Step("crash", line, w, expect=expect,
                              fault="before_commit_log" if "before_commit_log" in s else None))
        else:
            phase = next((p for p in PHASE_STEPS if p in s), None)
            if phase is None:
                raise ctx.fail("a step is one of commit, begin, "
                               f"{', '.join(PHASE_STEPS)}, fault, crash, restart, tick", node, i)
            ctx.keys(s, {phase, "expect"}, f"a {phase} step")
            w = _writer_name(ctx, s[phase], s, phase)
            if not begun.get(w) and w not in sinks:
                raise ctx.fail(f"{phase}: writer {w} has not begun", s, phase)
            steps.append(Step("phase", line, w, phase=phase, expect=expect))
    if not steps:
        raise ctx.fail("a scenario needs at least one step", node)
    return steps


def _claim_files(ctx: _Ctx, op: Operation, added: dict, node: LineDict, line: int) -> None:
    """Record where each file is first added. A later operation may add the same path again:
    Java's producers check no path against the table (MergingSnapshotProducer.add only
    de-duplicates within one commit, through a DataFileSet / DeleteFileSet), so the table then
    lists it twice and its rows are read twice (scenario
    ``appends/re-adding-an-existing-path-duplicates-rows``)."""
    for f in op.add_data + op.add_deletes:
        added.setdefault(f.path, line)


def parse_final_expect(ctx: _Ctx, table: TableConfig, files: dict, node: Any,
                       doc: LineDict) -> FinalExpect:
    if node is None:
        return FinalExpect()
    node = ctx.mapping(node, "expect", doc, "expect")
    ctx.keys(node, FINAL_EXPECT_KEYS, "expect")
    step = _step_expect(ctx, LineDict({k: node[k] for k in EXPECT_KEYS if k in node}), node) \
        if any(k in node for k in EXPECT_KEYS) else StepExpect()
    out = {}
    for key in ("live_data_files", "live_delete_files", "deleted_files"):
        if key in node:
            items = ctx.seq(node[key], key, node, key)
            out[key] = tuple(sorted(str(x) for x in items))
    if "deleted_files" in node:
        for i, name in enumerate(out["deleted_files"]):
            if name not in files:
                raise ctx.fail(f"unknown file {name!r} in deleted_files", node, "deleted_files")
    if "readable" in node:
        if not isinstance(node["readable"], bool):
            raise ctx.fail("readable must be true or false", node, "readable")
        out["readable"] = node["readable"]
    if "rows" in node:
        out["rows"] = _rows(ctx, table, node["rows"], node, "rows")
    return FinalExpect(step.outcome, step.message, **out)


# -- engine-level commands -------------------------------------------------------------------

#: the largest ``older_than`` (ticks): more than any bound on the clock (``ticks``) allows
MAX_OLDER_THAN = 100


def _older_than(ctx, node, what: str, *, required: bool) -> int | None:
    """``older_than: N``: an age in ticks of the logical clock (models/clock.py), 1 to
    ``MAX_OLDER_THAN``: the procedure removes what is more than N ticks older than the tick it
    was called at. Spark takes a timestamp; the model takes how long before the call it is
    (0 would remove what was written in the very tick of the call, which Spark's own
    procedure refuses below 24 hours: RemoveOrphanFilesProcedure.validateInterval)."""
    if "older_than" not in node:
        if required:
            raise ctx.fail(f"{what} needs older_than: N (an age in ticks of the model's clock, "
                           f"1 to {MAX_OLDER_THAN}; the pipeline's bounds.ticks, a scenario's "
                           f"tick steps, advance it)", node)
        return None
    n = node["older_than"]
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_OLDER_THAN:
        raise ctx.fail(f"{what} older_than must be an integer from 1 to {MAX_OLDER_THAN} "
                       f"(ticks), not {n!r}", node, "older_than")
    return n


def parse_command(ctx, table, node, parent) -> Command:
    """Parse a scenario's ``command:`` mapping (``{sql: DELETE, where: "id = 1"}``) into a
    ``models.commands_spec.Command`` (the model's data; the parsing lives with the format)."""
    node = ctx.mapping(node, "command", parent, "command")
    kind = str(node.get("sql", "")).upper()
    if kind not in COMMANDS:
        raise ctx.fail(f"unknown command {node.get('sql')!r}; expected one of "
                       f"{', '.join(COMMANDS)}", node, "sql" if "sql" in node else None)
    ctx.keys(node, COMMAND_KEYS[kind] | {"sql"}, f"a {kind} command")
    where = _filter(ctx, table, node, "where") if "where" in node else None
    rows = _rows(ctx, table, node["rows"], node, "rows") if "rows" in node else ()
    if kind in (INSERT, MERGE, MERGE_INSERT, OVERWRITE_PARTITIONS, ADD_FILES) and not rows \
            and "select" not in node:
        raise ctx.fail(f"{kind} needs rows", node)
    if kind == UPSERT and not rows and not node.get("deletes"):
        raise ctx.fail("UPSERT needs rows or deletes", node)
    sets = ()
    if kind == UPDATE or (kind == OVERWRITE_FILES and "set" in node):
        snode = ctx.mapping(node.get("set"), f"{kind} set", node, "set")
        types = table.schema.types()
        for col, value in snode.items():
            if col not in types:
                raise ctx.fail(f"UPDATE sets unknown column {col!r}", snode, col)
            _check_value(ctx, types[col], value, snode, col, f"column {col}")
        sets = tuple(sorted(snode.items()))
    on = ()
    if kind in (MERGE, MERGE_INSERT, UPSERT):
        what = "UPSERT" if kind == UPSERT else "MERGE"
        onode = ctx.seq(node.get("on"), f"{what} on", node, "on")
        on = tuple(str(c) for c in onode)
        for c in on:
            if c not in table.schema.names:
                raise ctx.fail(f"{what} on unknown column {c!r}", node, "on")
    deletes = ()
    if "deletes" in node:
        dnode = ctx.seq(node["deletes"], "UPSERT deletes (keys, each a list of the on columns)",
                        node, "deletes")
        types = table.schema.types()
        keys = []
        for i, k in enumerate(dnode):
            if not isinstance(k, list) or len(k) != len(on):
                raise ctx.fail(f"UPSERT deletes[{i}] must be a list of {len(on)} value(s), one "
                               f"per on column ({', '.join(on)})", dnode, i)
            for c, v in zip(on, k):
                _check_value(ctx, types[c], v, dnode, i, f"column {c}")
            keys.append(tuple(k))
        deletes = tuple(keys)
    options = ()
    file = ""
    if kind == ADD_FILES:
        file = node.get("file")
        if not isinstance(file, str) or not _EXTERNAL_NAME_RE.fullmatch(file):
            raise ctx.fail(f"ADD_FILES file must be a file name (letters, digits, '.', '_', "
                           f"'-'; starting with a letter), not {file!r}", node,
                           "file" if "file" in node else None)
        check = node.get("check_duplicate_files", True)
        if not isinstance(check, bool):
            raise ctx.fail(f"check_duplicate_files must be true or false, got "
                           f"{kind_of(check)}", node, "check_duplicate_files")
        if not check:
            options = (("check_duplicate_files", False),)
        if not table.spec.is_unpartitioned and \
                len({table.partition_of_row(tuple(r)) for r in rows}) > 1:
            # PyIceberg infers a file's partition from its column bounds and refuses a file
            # spanning several; Spark's procedure imports partition directories
            raise ctx.fail("ADD_FILES: the file's rows must all fall in one partition of the "
                           "table (an added file holds one partition)", node, "rows")
    if kind == EXPIRE:
        n = node.get("retain_last", 1)
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 100:
            raise ctx.fail(f"EXPIRE retain_last must be an integer from 1 to 100, not {n!r}",
                           node, "retain_last" if "retain_last" in node else None)
        options = (("retain_last", n),)
        age = _older_than(ctx, node, "EXPIRE", required=False)
        if age is not None:
            options = (("older_than", age),) + options
    if kind == REMOVE_ORPHAN_FILES:
        options = (("older_than", _older_than(ctx, node, "REMOVE_ORPHAN_FILES",
                                              required=True)),)
    if "options" in node:
        onode = ctx.mapping(node["options"], "COMPACT options", node, "options")
        for name, value in onode.items():
            if name not in COMPACT_OPTIONS:
                raise ctx.fail(f"unknown rewrite_data_files option {name!r}; the model follows "
                               f"{', '.join(sorted(COMPACT_OPTIONS))}", onode, name)
            typ = COMPACT_OPTIONS[name][0]
            if isinstance(value, bool) != (typ is bool) or not isinstance(
                    value, (int, float) if typ is float else typ):
                want = {bool: "true or false", int: "an integer", float: "a number"}[typ]
                raise ctx.fail(f"option {name} must be {want}, got {kind_of(value)}", onode,
                               name)
            problem = compact_option_error(name, value)
            if problem is not None:
                raise ctx.fail(problem, onode, name)
        options = tuple(sorted(onode.items()))
    cmd = Command(kind, where, sets, rows, on, str(node.get("where", "")), options, deletes,
                  file)
    # select (rows derived from the command's read) and Spark's write options
    from .command_options import with_select_and_options
    return with_select_and_options(ctx, table, node, cmd, _check_value)
