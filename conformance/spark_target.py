"""Conformance target ``spark``: SQL-level scenarios and traces on real Spark 3.5 + Iceberg 1.10.2.

The model runs first (Iceberg 1.10 rules); its actions are laid out on a timeline exactly as
for Java (``java_runner.build_plan``: a writer begins where it began in the model and commits
where its verdict was decided). Each model writer is a ``spark.newSession()`` of one local
SparkSession (``spark_session``), and each of its commands becomes one SQL statement:

* INSERT -> ``INSERT INTO t SELECT /*+ REPARTITION(1) */ ... FROM VALUES ...``
* DELETE -> ``DELETE FROM t WHERE <where>``
* UPDATE -> ``UPDATE t SET c = v, ... WHERE <where>``
* MERGE  -> ``MERGE INTO t USING (SELECT ... FROM VALUES ...) s ON t.k = s.k [AND <where>]
  WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *``
* MERGE_INSERT -> the same without the WHEN MATCHED clause (Spark plans it as an append)
* OVERWRITE_PARTITIONS -> ``INSERT OVERWRITE t SELECT ..`` in dynamic partitionOverwriteMode;
  OVERWRITE -> static ``INSERT OVERWRITE t [PARTITION (p = v)] SELECT ..`` (insert_overwrite_sql)
* an OVERWRITE / OVERWRITE_PARTITIONS with ``select`` -> ``INSERT OVERWRITE t SELECT .. FROM t``;
  a command with write options -> a DataFrame write with ``.option(..)`` (conformance/spark_rmw.py)
* REWRITE_POSITION_DELETES -> ``CALL <catalog>.system.rewrite_position_delete_files(table =>
  .., options => map('rewrite-all', 'true'))`` (only when nothing runs between its begin and
  its commit: a procedure cannot be paused)
* ADD_FILES -> its rows written once as one Parquet file in a folder of its own, then ``CALL
  <catalog>.system.add_files(table => .., source_table => '`parquet`.`<folder>`',
  check_duplicate_files => ..)`` (only when nothing runs between its begin and its commit: the
  procedure checks and commits in one call)
* EXPIRE -> ``CALL <catalog>.system.expire_snapshots(table => .., older_than => <far future>,
  retain_last => N)``, run whole at its commit event (the procedure decides what expires when
  it commits, and has no scan to pin)
* a raw ``append`` / ``fast_append`` of files with rows (a scenario's set-up commit, a trace's
  initial rows) -> INSERT of those rows: one statement (one commit, one manifest, as in the
  model) when the table is partitioned and each file is its partition's only one (Spark then
  writes one file per partition); otherwise one statement per data file, so that files stay
  one to one with the model's (one commit each: the manifests differ from the model's).

Ordering: a statement whose begin and commit are adjacent on the timeline runs synchronously.
Otherwise it runs in its own thread with the gate UDF in its condition (``AND
icecheck_gate(token, col)`` for DELETE/UPDATE, in the MERGE source's WHERE): the driver waits
until the gate has been reached (its scan is planned, so its snapshot is pinned), runs the
events in between, then opens the gate and joins the thread (its commit validates from the
old snapshot against everything committed meanwhile).

Compared: per operation the outcome (``committed`` / ``validation_failed`` from Iceberg's
ValidationException / ``commit_failed`` / ``error``) and, when both failed, the message key
(real file paths are renamed to the model's names first); at the end the table's rows
(``SELECT *``), which must equal the model's live rows. The live files are mapped to model
names and shown, but are not judged (Spark decides how many files a statement writes).
"""

from __future__ import annotations

import itertools
import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from icecheck.models import operations as mops
from icecheck.models import system as sm
from icecheck.models.commands import SPARK_DUPLICATE_FILES
from icecheck.models.commands_spec import (ADD_FILES, COMPACT, COMPACT_OPTIONS, DELETE, EXPIRE,
                                           INSERT, MERGE, MERGE_INSERT,
                                           OVERWRITE, OVERWRITE_PARTITIONS,
                                           REWRITE_MANIFESTS, REWRITE_POSITION_DELETES, UPDATE,
                                           Command)
from icecheck.models.filters import And, Cmp, FalseExpr, In, IsNull, Not, Or, TrueExpr
from icecheck.models.operations import Operation
from icecheck.models.reads import read_rows
from icecheck.models.system import Action, Model
from icecheck.scenarios.errors import InputError

from .compare import (AGREE, DEFAULT_MODEL_VERSION, DISAGREE, SKIPPED, AllowEntry,
                      Comparison, OpComparison, _agree, _op_lines, apply_allowlist, message_key,
                      scenario_on_model, trace_on_model)
from .java_driver import ILLEGAL_ARGUMENT_EXC, REFUSED_RE
from .java_runner import NOT_RUN, JavaOutcome, Plan, build_plan
from .targets import TargetUnavailable

NAME = "spark"
LABEL = "Spark"

_SQL_TYPES = {"int": "INT", "long": "BIGINT", "string": "STRING"}
_counter = itertools.count(1)


@dataclass
class SparkComparison(Comparison):
    """A Comparison with the table's rows at the end (the judged "live" check for Spark)."""

    target: str = NAME
    model_rows: list[list] | None = None
    real_rows: list[list] | None = None
    real_files: tuple[list[str], list[str]] | None = None   # live files, model names (info)
    statements: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        doc = super().as_json()
        doc["target"] = self.target
        doc["rows"] = None if self.model_rows is None else {
            "model": self.model_rows, "real": self.real_rows}
        doc["real_live_files"] = None if self.real_files is None else {
            "data": self.real_files[0], "deletes": self.real_files[1]}
        doc["statements"] = self.statements
        doc["real_seconds"] = doc.get("java_seconds")
        return doc


class NotExpressible(Exception):
    """The scenario/trace cannot be run as SQL on Spark (the reason is the message)."""


# ----------------------------------------------------------------------------- readiness

def ready() -> None:
    """Start (once) the local SparkSession; TargetUnavailable says what is missing."""
    from .spark_session import SparkUnavailable, get_spark

    try:
        get_spark()
    except SparkUnavailable as e:
        raise TargetUnavailable(f"Spark + Iceberg is not available: {e}") from None
    except Exception as e:  # JVM did not start, etc.
        raise TargetUnavailable(f"Spark did not start: {type(e).__name__}: "
                                f"{str(e).splitlines()[0] if str(e) else ''}") from None


# ----------------------------------------------------------------------------- SQL text

def sql_literal(value: Any, typ: str | None = None) -> str:
    if value is None:
        return f"CAST(NULL AS {_SQL_TYPES.get(typ, 'STRING')})" if typ else "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"CAST({value} AS BIGINT)" if typ == "long" else str(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql_filter(expr, prefix: str = "") -> str:
    """A model filter as a Spark SQL boolean expression (columns optionally qualified)."""
    def col(c: str) -> str:
        return f"{prefix}`{c}`"

    if expr is None or isinstance(expr, TrueExpr):
        return "true"
    if isinstance(expr, FalseExpr):
        return "false"
    if isinstance(expr, Cmp):
        op = "<>" if expr.op == "!=" else expr.op
        return f"{col(expr.column)} {op} {sql_literal(expr.value)}"
    if isinstance(expr, In):
        vals = ", ".join(sql_literal(v) for v in expr.values)
        return f"{col(expr.column)} {'NOT IN' if expr.negated else 'IN'} ({vals})"
    if isinstance(expr, IsNull):
        return f"{col(expr.column)} IS {'NOT NULL' if expr.negated else 'NULL'}"
    if isinstance(expr, And):
        return f"({sql_filter(expr.left, prefix)} AND {sql_filter(expr.right, prefix)})"
    if isinstance(expr, Or):
        return f"({sql_filter(expr.left, prefix)} OR {sql_filter(expr.right, prefix)})"
    if isinstance(expr, Not):
        return f"(NOT {sql_filter(expr.child, prefix)})"
    raise NotExpressible(f"filter {expr!r} has no SQL rendering")


def _values_select(table, rows, gate: str | None = None, hint: str = "") -> str:
    names = table.schema.names
    types = table.schema.types()
    tmp = [f"c{i}" for i in range(len(names))]
    vals = ", ".join("(" + ", ".join(sql_literal(v) for v in r) + ")" for r in rows)
    cols = ", ".join(f"CAST(c{i} AS {_SQL_TYPES[types[n]]}) AS `{n}`"
                     for i, n in enumerate(names))
    where = f" WHERE icecheck_gate('{gate}', c0)" if gate else ""
    return f"SELECT {hint}{cols} FROM VALUES {vals} AS v({', '.join(tmp)}){where}"


def create_table_sql(name: str, table, profile, props: dict[str, str] | None = None) -> str:
    types = table.schema.types()
    cols = ", ".join(f"`{n}` {_SQL_TYPES[types[n]]}" for n in table.schema.names)
    parts = []
    for f in table.spec.fields:
        t = f.transform
        if t.kind == "identity":
            parts.append(f"`{f.source}`")
        elif t.kind in ("bucket", "truncate"):
            parts.append(f"{t.kind}({t.param}, `{f.source}`)")
        else:
            raise NotExpressible(f"partition transform {t.kind} is not mapped to Spark DDL")
    props = table_properties(table, profile) if props is None else props
    prop_sql = ", ".join(f"'{k}'='{v}'" for k, v in props.items())
    part_sql = f" PARTITIONED BY ({', '.join(parts)})" if parts else ""
    return f"CREATE TABLE {name} ({cols}) USING iceberg{part_sql} TBLPROPERTIES ({prop_sql})"


def table_properties(table, profile, settings: dict | None = None) -> dict[str, str]:
    """format-version, the model table's own properties, and each row-level command's mode and
    isolation level: ``profile``'s, then ``settings`` over them (``command_settings``: what
    the writers' own profiles need)."""
    props: dict[str, str] = {"format-version": str(table.format_version)}
    for k, v in table.properties:
        props[str(k)] = str(v).lower() if isinstance(v, bool) else str(v)
    for cmd, key in ((DELETE, "delete"), (UPDATE, "update"), (MERGE, "merge")):
        try:
            rule = profile.rule(cmd)
        except KeyError:
            continue
        if rule.mode:
            props[f"write.{key}.mode"] = rule.mode
        if profile.isolation in ("serializable", "snapshot"):
            props[f"write.{key}.isolation-level"] = profile.isolation
    props.update(settings or {})
    props["write.delete.granularity"] = "file"
    return props


def statement_sql(name: str, table, intent, gate: str | None, *,
                  gate_in_subquery: bool = False) -> list[str]:
    """The SQL statement(s) for one model intent (a Command, or a raw append of rows).

    ``gate_in_subquery``: a DELETE/UPDATE matching no row never evaluates a per-row gate (its
    filter prunes every file), so the gate goes into an uncorrelated EXISTS subquery instead:
    Spark runs it after the scan is planned (snapshot pinned) and pushes only the command's own
    filter into the scan, so the conflict-detection filter is unchanged."""
    names = table.schema.names
    if isinstance(intent, Operation):
        if intent.kind not in (mops.APPEND, mops.FAST_APPEND) or intent.delete_data \
                or intent.add_deletes or not intent.add_data:
            raise NotExpressible(f"raw operation {intent.kind} is not SQL-level")
        if gate:
            raise NotExpressible("a raw append that overlaps another writer's commit")
        for f in intent.add_data:
            if not f.rows:
                raise NotExpressible(f"data file {f.path} has no rows to INSERT")
        batches = [list(f.rows) for f in intent.add_data]
        partitions = [f.partition for f in intent.add_data]
        if table.spec.fields and len(set(partitions)) == len(partitions):
            # one file per partition: one INSERT writes exactly those files in one commit, so
            # in one manifest, as the model's append does (a delete by row filter opens a
            # manifest only when its partition range might match: ManifestEvaluator)
            batches = [[r for rows in batches for r in rows]]
        return [f"INSERT INTO {name} " + _values_select(table, rows, hint="/*+ REPARTITION(1) */ ")
                for rows in batches]
    if not isinstance(intent, Command):
        raise NotExpressible(f"intent {intent!r} is not a SQL command")
    gate_sql = f"icecheck_gate('{gate}', `{names[0]}`)" if gate else None
    if getattr(intent, "select", None) is not None or getattr(intent, "write_options", ()):
        # an overwrite computed from its own read, or a DataFrame write's options
        # the target's own SQL helpers are passed in (spark_rmw does not import this module)
        import sys
        from .spark_rmw import overwrite_statements
        return overwrite_statements(name, table, intent, gate, sys.modules[__name__])
    if intent.kind == INSERT:
        if gate:
            raise NotExpressible("an INSERT that overlaps another writer's commit (it has no "
                                 "scan to gate)")
        return [f"INSERT INTO {name} "
                + _values_select(table, intent.rows, hint="/*+ REPARTITION(1) */ ")]
    if intent.kind in (DELETE, UPDATE):
        cond = sql_filter(intent.where)
        if gate and gate_in_subquery:
            cond = (f"({cond}) AND EXISTS (SELECT 1 FROM VALUES (1) AS g(x) "
                    f"WHERE icecheck_gate('{gate}', g.x))")
        elif gate_sql:
            cond = f"({cond}) AND {gate_sql}"
        if intent.kind == DELETE:
            return [f"DELETE FROM {name} WHERE {cond}"]
        types = table.schema.types()
        sets = ", ".join(f"`{c}` = {sql_literal(v, types[c])}" for c, v in intent.set)
        return [f"UPDATE {name} SET {sets} WHERE {cond}"]
    if intent.kind == MERGE_INSERT:
        on = " AND ".join(f"t.`{c}` = s.`{c}`" for c in intent.on)
        src = _values_select(table, intent.rows, gate=gate)
        return [f"MERGE INTO {name} t USING ({src}) s ON {on} WHEN NOT MATCHED THEN INSERT *"]
    if intent.kind == MERGE:
        on = " AND ".join(f"t.`{c}` = s.`{c}`" for c in intent.on)
        if intent.where is not None:
            on += f" AND {sql_filter(intent.where, 't.')}"
        src = _values_select(table, intent.rows, gate=gate)
        return [f"MERGE INTO {name} t USING ({src}) s ON {on} "
                f"WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"]
    if intent.kind in (OVERWRITE, OVERWRITE_PARTITIONS):
        return insert_overwrite_sql(name, table, intent, gate)
    if intent.kind == EXPIRE:
        if gate:
            raise NotExpressible("expire_snapshots has no scan to gate")
        if "older_than" in dict(intent.options):
            # an age in ticks of the model's clock (models/clock.py), which no real run has
            raise NotExpressible("expire_snapshots older_than counts ticks of the model's clock")
        catalog, _, ident = name.partition(".")
        n = dict(intent.options).get("retain_last", 1)
        return [f"CALL {catalog}.system.expire_snapshots(table => '{ident}', "
                f"older_than => TIMESTAMP '9999-12-31 00:00:00', retain_last => {n})"]
    if intent.kind == ADD_FILES:
        if gate:
            raise NotExpressible("add_files cannot be paused between its duplicate check and "
                                 "its commit")
        if table.spec.fields:
            # the procedure imports a partitioned table from a folder laid out by partition
            # (Hive style); the target writes one flat folder per file
            raise NotExpressible("add_files into a partitioned table (the target writes an "
                                 "unpartitioned source folder)")
        catalog, _, ident = name.partition(".")
        check = "true" if intent.check_duplicate_files else "false"
        return [f"CALL {catalog}.system.add_files(table => '{ident}', source_table => "
                f"'`parquet`.`{external_dir(name, intent.file)}`', "
                f"check_duplicate_files => {check})"]
    if intent.kind == REWRITE_POSITION_DELETES:
        if gate:
            raise NotExpressible("rewrite_position_delete_files cannot be paused between its "
                                 "planning and its commit")
        catalog, _, ident = name.partition(".")
        return [f"CALL {catalog}.system.rewrite_position_delete_files(table => '{ident}', "
                f"options => map('rewrite-all', 'true'))"]
    if intent.kind == REWRITE_MANIFESTS:
        if gate:
            raise NotExpressible("rewrite_manifests cannot be paused between its planning and "
                                 "its commit")
        catalog, _, ident = name.partition(".")
        return [f"CALL {catalog}.system.rewrite_manifests(table => '{ident}')"]
    if intent.kind == COMPACT:
        if gate:
            raise NotExpressible("rewrite_data_files cannot be paused between its planning and "
                                 "its commit")
        catalog, _, ident = name.partition(".")
        # every option the model follows, explicitly (the model's COMPACT defaults to
        # rewrite-all, Spark's procedure does not); the where clause as a Spark SQL string
        opts = ", ".join(f"'{k}', '{_option_str(intent.option(k))}'"
                         for k in sorted(COMPACT_OPTIONS) if intent.option(k) is not None)
        where = ""
        if intent.where is not None:
            where = ", where => '" + sql_filter(intent.where).replace("'", "\\'") + "'"
        return [f"CALL {catalog}.system.rewrite_data_files(table => '{ident}'{where}, "
                f"options => map({opts}))"]
    raise NotExpressible(f"command {intent.kind} is not mapped to Spark SQL")


def _option_str(value) -> str:
    """An option value as Spark's options map takes it (booleans lower-case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _static_partition(table, where) -> dict[str, Any] | None:
    """``{column: value}`` when ``where`` is a conjunction of ``col = literal`` over identity
    partition columns (what an INSERT OVERWRITE ... PARTITION (col = v) clause says), else None."""
    identity = {f.source for f in table.spec.fields if f.transform.kind == "identity"}
    out: dict[str, Any] = {}
    stack = [where]
    while stack:
        e = stack.pop()
        if isinstance(e, And):
            stack.extend((e.left, e.right))
        elif isinstance(e, Cmp) and e.op == "=" and e.column in identity and e.column not in out:
            out[e.column] = e.value
        else:
            return None
    return out


def insert_overwrite_sql(name: str, table, intent, gate: str | None) -> list[str]:
    """Spark SQL's INSERT OVERWRITE, in the writer's own session (its own SQL conf):

    * OVERWRITE_PARTITIONS -> ``spark.sql.sources.partitionOverwriteMode=dynamic`` and
      ``INSERT OVERWRITE t SELECT ..``: Spark's OverwritePartitionsDynamic, which Iceberg commits
      as SparkWrite.DynamicOverwrite (ReplacePartitions);
    * OVERWRITE with no ``where`` -> mode ``static`` and ``INSERT OVERWRITE t SELECT ..``
      (OverwriteByExpression(true)); with ``where`` equalities on identity partition columns ->
      ``INSERT OVERWRITE t PARTITION (p = v, ..) SELECT <other columns> ..``: both commit as
      SparkWrite.OverwriteByFilter (``overwriteByRowFilter``).

    Neither validates from SQL: the isolation level and validate-from-snapshot-id are write
    *options* (SparkWriteConf), which SQL does not set (SparkWrite.java:308-386, 1.10.2). The
    gate sits in the source rows' WHERE, like MERGE's."""
    names = table.schema.names
    src = _values_select(table, intent.rows, gate=gate, hint="/*+ REPARTITION(1) */ ")
    if intent.kind == OVERWRITE_PARTITIONS:
        return ["SET spark.sql.sources.partitionOverwriteMode=dynamic",
                f"INSERT OVERWRITE {name} {src}"]
    if intent.where is None:
        return ["SET spark.sql.sources.partitionOverwriteMode=static",
                f"INSERT OVERWRITE {name} {src}"]
    static = _static_partition(table, intent.where)
    if static is None:
        raise NotExpressible("an OVERWRITE whose filter is not equalities on identity partition "
                             "columns has no INSERT OVERWRITE form")
    types = table.schema.types()
    for r in intent.rows:
        if any(r[names.index(c)] != v for c, v in static.items()):
            raise NotExpressible(f"OVERWRITE row {list(r)} lies outside its static partition")
    spec = ", ".join(f"`{c}` = {sql_literal(v, types[c])}" for c, v in static.items())
    rest = ", ".join(f"`{n}`" for n in names if n not in static)
    return ["SET spark.sql.sources.partitionOverwriteMode=static",
            f"INSERT OVERWRITE {name} PARTITION ({spec}) SELECT {rest} FROM ({src})"]


# ----------------------------------------------------------------------------- model side

@dataclass
class _ModelRun:
    plan: Plan
    intents: dict[tuple[str, int], Any]
    rows: list[list]


def _replay(config, actions: list[Action]) -> tuple[dict, list[list]]:
    """The intent of every finished or running operation, and the model's live rows at the end."""
    model = Model(config)
    state = model.initial()
    for a in actions:
        state = model.step(state, a)
    intents: dict[tuple[str, int], Any] = {}
    for w in state.writers:
        for rec in w.history:
            intents[(w.name, rec.index)] = rec.intent
        if w.intent is not None:
            intents[(w.name, w.op_index)] = w.intent
    rows = [list(r.values) for r in read_rows(state.store, state.metadata.current,
                                              config.table.schema.names)]
    return intents, sort_rows(rows)


def sort_rows(rows) -> list[list]:
    return sorted((list(r) for r in rows),
                  key=lambda r: [(v is None, type(v).__name__, v if v is not None else 0)
                                 for v in r])


def _check_expressible(config, plan: Plan, intents, profile_name: str | None) -> str | None:
    from icecheck.models import catalog as cat
    if config.catalog == cat.LAST_WRITER_WINS:
        return "catalog last_writer_wins has no Spark catalog (Iceberg catalogs swap atomically)"
    if plan.skip:
        return plan.skip.replace("on Java", "on Spark").replace("Java driver", "driver")
    if not profile_name or not str(profile_name).startswith("spark"):
        return f"profile {profile_name!r} is not a Spark profile (no SQL-level commands for Spark)"
    if not any(isinstance(i, Command) for i in intents.values()):
        return "not SQL-level: no command steps"
    for op in plan.ops:
        if op.outcome == sm.CRASHED:
            return "a crashed writer cannot be driven on Spark (a statement is atomic)"
        if op.operation is not None and op.end_at < 0:
            return "a writer that never finishes cannot be driven on Spark"
        if op.outcome in (sm.COMMIT_FAILED, sm.COMMIT_UNKNOWN):
            return f"outcome {op.outcome} cannot be driven on Spark"
    return None


# ----------------------------------------------------------------------------- Spark side

@dataclass
class _SparkRun:
    outcomes: dict[tuple[str, int], JavaOutcome] = field(default_factory=dict)
    rows: list[list] = field(default_factory=list)
    live: tuple[list[str], list[str]] = ([], [])
    statements: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _java_throwable(exc: BaseException):
    for attr in ("java_exception", "_origin"):
        j = getattr(exc, attr, None)
        if j is not None:
            return j
    return None


_ICEBERG_EXC = {
    "org.apache.iceberg.exceptions.ValidationException": sm.VALIDATION_FAILED,
    "org.apache.iceberg.exceptions.CommitFailedException": sm.COMMIT_FAILED,
    "org.apache.iceberg.exceptions.CommitStateUnknownException": sm.COMMIT_UNKNOWN,
    # a data file deleted (by expiry) between a statement's planning and its tasks' read
    "org.apache.iceberg.exceptions.NotFoundException": sm.READ_FAILED,
}


def classify_exception(exc: BaseException) -> tuple[str, str, str | None]:
    """(outcome, message, java class) of a failed statement: the Iceberg exception in the cause
    chain decides; anything else is ``error``."""
    j = _java_throwable(exc)
    first = None
    seen = 0
    while j is not None and seen < 20:
        seen += 1
        try:
            cls = j.getClass().getName()
            msg = j.getMessage()
        except Exception:
            break
        if first is None:
            first = (cls, msg)
        if cls in _ICEBERG_EXC:
            return _ICEBERG_EXC[cls], str(msg), cls
        if cls == "java.lang.IllegalStateException" and msg is not None and \
                str(msg).startswith(SPARK_DUPLICATE_FILES.split("{}")[0]):
            # add_files' duplicate check (SparkTableUtil: Preconditions.checkState), which the
            # model refuses as the command begins (validation_failed, check duplicate_files)
            return sm.VALIDATION_FAILED, str(msg), cls
        if cls == ILLEGAL_ARGUMENT_EXC and msg is not None and REFUSED_RE.match(str(msg)):
            # a commit's own refusal, never retried (BaseRowDelta.validate's "Snapshot X is
            # not an ancestor of Y" once expiry removed the starting snapshot, ...), which the
            # model reports as validation_failed, as the Java driver does (java_driver
            # REFUSED_RE); found by the mixed differential (seed 7) once a third writer could
            # expire snapshots
            return sm.VALIDATION_FAILED, str(msg), cls
        try:
            nxt = j.getCause()
        except Exception:
            nxt = None
        if nxt is None or nxt == j:
            break
        j = nxt
    text = str(exc)
    for cls, outcome in _ICEBERG_EXC.items():
        marker = cls + ": "
        if marker in text:
            return outcome, text.split(marker, 1)[1].splitlines()[0], cls
    if first is not None:
        return "error", f"{first[0]}: {first[1]}", first[0]
    line = text.splitlines()[0] if text else ""
    return "error", f"{type(exc).__name__}: {line}", None


def external_dir(table_name: str, file: str) -> str:
    """The folder holding an ADD_FILES command's external file (Spark's add_files imports a
    folder of Parquet files: this one holds just that file), one per table and file name."""
    import tempfile

    return os.path.join(tempfile.gettempdir(), "icecheck-spark-ext",
                        re.sub(r"[^\w.-]", "_", table_name), file)


#: the external files written so far: folder -> the Parquet file's path (written once)
_EXTERNAL: dict[str, str] = {}


def write_external(spark, table_name: str, table, intent) -> str:
    """Write ``intent``'s external file (its rows, one Parquet file) the first time a writer
    adds it, and return its path: every writer adds that same file (``intent``: anything with
    the ADD_FILES command's ``file`` and ``rows``). It is never written again: once an expiry
    deleted it, it stays gone, as in the model (a path is never rewritten)."""
    import glob

    folder = external_dir(table_name, intent.file)
    if folder not in _EXTERNAL:
        spark.sql(_values_select(table, intent.rows)).coalesce(1).write.mode("overwrite") \
            .parquet(folder)
        found = sorted(glob.glob(os.path.join(folder, "*.parquet")))
        if len(found) != 1:
            raise RuntimeError(f"expected one Parquet file in {folder}, found {len(found)}")
        _EXTERNAL[folder] = found[0]
    return _EXTERNAL[folder]


class _Files:
    """Real file paths <-> model names, learnt from what each statement added."""

    def __init__(self, spark, table_name: str):
        self.spark, self.table_name = spark, table_name
        self.names: dict[str, str] = {}
        self.live = self._live()

    def _live(self) -> dict[str, tuple[int, str | None]]:
        rows = self.spark.sql(f"SELECT content, file_path, referenced_data_file "
                              f"FROM {self.table_name}.files").collect()
        return {r[1]: (int(r[0]), r[2]) for r in rows}

    def learn(self, operation: Operation | None) -> None:
        """Name the files the last statement added after ``operation``'s model files."""
        now = self._live()
        added = {p: v for p, v in now.items() if p not in self.live}
        self.live = now
        if operation is None:
            return
        new_data = sorted(p for p, (c, _) in added.items() if c == 0)
        model_data = [f.path for f in operation.add_data]
        for real, name in zip(new_data, model_data):
            self.names[real] = name
        model_deletes = list(operation.add_deletes)
        for real in sorted(p for p, (c, _) in added.items() if c != 0):
            ref = self.names.get(added[real][1] or "")
            match = next((d for d in model_deletes if ref is not None and
                          {p for p, _ in (d.positions or ())} == {ref}), None)
            if match is None and model_deletes and ref is None:
                match = model_deletes[0]
            if match is not None:
                model_deletes.remove(match)
                self.names[real] = match.path

    def name(self, path: str) -> str:
        return self.names.get(path) or os.path.basename(path)

    def rename(self, message: str | None) -> str | None:
        if not message:
            return message
        for real in sorted(self.names, key=len, reverse=True):
            message = message.replace(real, self.names[real])
            if real.startswith("file:"):
                message = message.replace(real[len("file:"):], self.names[real])
        return message

    def live_names(self) -> tuple[list[str], list[str]]:
        self.live = self._live()
        data = sorted(self.name(p) for p, (c, _) in self.live.items() if c == 0)
        deletes = sorted(self.name(p) for p, (c, _) in self.live.items() if c != 0)
        return data, deletes


class _Gated:
    def __init__(self, token: str, thread: threading.Thread):
        self.token, self.thread = token, thread
        self.result: tuple[str, str | None, str | None] | None = None


def start_gated(session, tname: str, table, intent, op, token: str, log: list[str]) -> _Gated:
    """Start ``op``'s statement in its own thread and wait until it holds at its gate (its scan
    is planned, so its snapshot is pinned); ``finish_gated`` lets it commit. A statement that
    matches no row carries its gate in a subquery (``statement_sql``)."""
    from .spark_session import GATE_TIMEOUT_S, gate_dir

    o = op.operation
    empty = o is not None and not (o.add_data or o.delete_data or o.add_deletes)
    sqls = statement_sql(tname, table, intent, token, gate_in_subquery=empty)
    g = _Gated(token, None)  # type: ignore[arg-type]

    def body():
        g.result = _run_statements(session, sqls, log)

    g.thread = threading.Thread(target=body, name=f"spark-{token}", daemon=True)
    g.thread.start()
    started = os.path.join(gate_dir(), f"{token}.started")
    deadline = time.time() + GATE_TIMEOUT_S
    while not os.path.exists(started) and g.thread.is_alive():
        if time.time() > deadline:
            raise RuntimeError(f"{op.writer}'s statement never reached its gate")
        time.sleep(0.01)
    if not os.path.exists(started):
        raise RuntimeError(f"{op.writer}'s statement finished without reaching its gate, so it "
                           f"could not be ordered: {g.result}")
    return g


def finish_gated(g: _Gated, op) -> tuple[str, str | None, str | None]:
    """Open ``g``'s gate and wait for its statement: (outcome, message, Java class)."""
    from .spark_session import GATE_TIMEOUT_S, gate_dir

    open(os.path.join(gate_dir(), f"{g.token}.go"), "w").close()
    g.thread.join(GATE_TIMEOUT_S)
    if g.thread.is_alive():
        raise RuntimeError(f"{op.writer}'s statement did not finish")
    return g.result


def _run_statements(session, sqls: list[str], log: list[str]) -> tuple[str, str | None, str | None]:
    for q in sqls:
        log.append(str(q))
        try:
            if hasattr(q, "run"):       # a DataFrame write (conformance/spark_rmw.py)
                q.run(session)
            else:
                session.sql(q).collect()
        except Exception as e:
            return classify_exception(e)
    return sm.COMMITTED, None, None


# procedures that commit nothing when they find nothing to do (the model's ``noop``): the
# Spark target runs them anyway, so "nothing to do" is checked on Spark too
_PROCEDURES = (COMPACT, REWRITE_POSITION_DELETES, REWRITE_MANIFESTS)


def with_begin_verdicts(plan: Plan, intents: dict) -> list:
    """The plan's events plus a ``noop`` event, at its begin, for each procedure the model
    ended ``noop`` and each command it refused as it began (the plan leaves both out: nothing
    to run on Java); an engine target runs those whole there."""
    keyed = [((op.begin_at if kind == "begin" else op.java_at), 0 if kind == "begin" else 1, n,
              (kind, op)) for n, (kind, op) in enumerate(plan.events)]
    for op in plan.ops:
        intent = intents.get((op.writer, op.index))
        if op.operation is None and op.outcome == sm.NOOP and \
                getattr(intent, "kind", None) in _PROCEDURES:
            keyed.append((op.begin_at, 0, -1, ("noop", op)))
        elif op.operation is None and op.outcome == sm.VALIDATION_FAILED:
            # refused as it began (add_files' duplicate check): run whole there
            keyed.append((op.begin_at, 0, -1, ("noop", op)))
    return [e for *_, e in sorted(keyed, key=lambda k: k[:3])]


def _snapshot_count(spark, tname: str) -> int:
    return spark.sql(f"SELECT count(*) FROM {tname}.snapshots").collect()[0][0]


def run_whole(session, spark, tname: str, table, intent, log: list[str]
              ) -> tuple[str, str | None, str | None]:
    """A ``noop`` event of ``with_begin_verdicts``, run whole at its begin: a procedure the
    model found nothing to do for (it agrees when Spark commits no new snapshot: ``noop``),
    or a command the model refused as it began."""
    before = _snapshot_count(spark, tname)
    outcome, message, cls = _run_statements(session, statement_sql(tname, table, intent, None),
                                            log)
    if outcome == sm.COMMITTED and _snapshot_count(spark, tname) == before:
        outcome, message = sm.NOOP, "no snapshot committed"
    return outcome, message, cls


def learn_external(spark, files: "_Files", tname: str, table, intent) -> None:
    """For an ADD_FILES intent: its external file written (once, ``write_external``) and its
    real path, in both spellings Spark prints, named after the model's ``ext/<file>``."""
    if getattr(intent, "kind", None) != ADD_FILES:
        return
    real = write_external(spark, tname, table, intent)
    files.names[real] = files.names[f"file:{real}"] = intent.file_path


def _metadata_delete(op) -> bool:
    """The model planned this DELETE as Spark's metadata-only delete (a DeleteFiles)."""
    return op.operation is not None and op.operation.kind == mops.DELETE_FILES


def command_settings(config, intents: dict, profile) -> tuple[dict[str, str], str | None]:
    """(the mode and isolation-level table properties each writer's commands need, why one
    table cannot hold the run or None): ``profiles.table_settings`` over every command the run
    begins, each with its writer's profile (``profile`` for writers without one). Spark reads
    a command's mode and level from the table (``write.delete|update|merge.mode`` and
    ``.isolation-level``), so DELETE jobs merge-on-read at snapshot isolation share one real
    table with MERGE jobs at serializable (``ExploreConfig.isolation_note``, ``mode_note``);
    two writers running one kind in different modes or levels cannot."""
    from icecheck.models.profiles import table_settings
    per_writer = getattr(config.planner, "writer_profiles", None) or {}
    return table_settings((writer, per_writer.get(writer, profile), getattr(intent, "kind", None))
                          for (writer, _), intent in sorted(intents.items()))


def run_on_spark(mrun: _ModelRun, table, profile, setup: tuple = (),
                 props: dict[str, str] | None = None) -> _SparkRun:
    """Execute the plan's timeline on a fresh Spark table; returns outcomes, rows, live files.
    ``props``: the table's properties (``table_properties``; ``profile``'s by default)."""
    from .spark_session import CATALOG, get_spark, writer_session

    spark = get_spark()
    t0 = time.perf_counter()
    n = next(_counter)
    tname = f"{CATALOG}.db.t{os.getpid()}_{n}"
    run = _SparkRun()
    ddl = create_table_sql(tname, table, profile, props)
    run.statements.append(ddl)
    spark.sql(ddl)
    try:
        files = _Files(spark, tname)
        for op in setup:
            outcome, message, _ = _run_statements(spark, statement_sql(tname, table, op, None),
                                                  run.statements)
            if outcome != sm.COMMITTED:
                raise RuntimeError(f"set-up INSERT failed on Spark: {outcome} {message}")
            files.learn(op)
        sessions: dict[str, Any] = {}
        gated: dict[tuple[str, int], _Gated] = {}
        events = with_begin_verdicts(mrun.plan, mrun.intents)
        for i, (kind, op) in enumerate(events):
            key = (op.writer, op.index)
            intent = mrun.intents[key]
            learn_external(spark, files, tname, table, intent)
            if kind == "noop":
                if op.writer not in sessions:
                    sessions[op.writer] = writer_session(spark)
                outcome, message, cls = run_whole(sessions[op.writer], spark, tname, table,
                                                  intent, run.statements)
                run.outcomes[key] = JavaOutcome(outcome, files.rename(message), cls)
                continue
            if op.writer not in sessions:
                sessions[op.writer] = writer_session(spark)
            session = sessions[op.writer]
            if kind == "begin":
                adjacent = i + 1 < len(events) and events[i + 1][0] == "commit" \
                    and events[i + 1][1] is op
                if adjacent or _metadata_delete(op) or getattr(intent, "kind", None) == EXPIRE:
                    # runs whole at its commit event; a metadata-only DELETE has no scan to pin
                    # (DeleteFiles applies its filter to the head it commits on), and a gate
                    # would turn it into a row-level DELETE
                    continue
                gated[key] = start_gated(session, tname, table, intent, op,
                                         f"g{os.getpid()}_{n}_{op.writer}_{op.index}",
                                         run.statements)
            else:
                if key in gated:
                    outcome, message, cls = finish_gated(gated.pop(key), op)
                else:
                    outcome, message, cls = _run_statements(
                        session, statement_sql(tname, table, intent, None), run.statements)
                files.learn(op.operation if outcome == sm.COMMITTED else None)
                run.outcomes[key] = JavaOutcome(outcome, files.rename(message), cls)
        for op in mrun.plan.ops:
            key = (op.writer, op.index)
            if key not in run.outcomes:
                run.outcomes[key] = JavaOutcome(NOT_RUN, None)
        run.rows = sort_rows(tuple(r) for r in spark.sql(f"SELECT * FROM {tname}").collect())
        run.live = files.live_names()
    finally:
        if os.environ.get("ICECHECK_KEEP_WAREHOUSE") != "1":
            try:
                spark.sql(f"DROP TABLE IF EXISTS {tname} PURGE")
            except Exception:
                pass
    run.seconds = time.perf_counter() - t0
    return run


# ----------------------------------------------------------------------------- comparing

def _compare(cid: str, path: str, source: str, config, actions, profile_name: str | None,
             setup: tuple, model_seconds: float, lines_from=None) -> SparkComparison:
    from icecheck.models.profiles import get_profile

    c = SparkComparison(cid, path, source, AGREE, model_seconds=model_seconds)
    try:
        plan = build_plan(config, actions, run_read_failures=True)
    except sm.StepError as e:
        c.status, c.reason = SKIPPED, f"the run does not replay on the model: {e}"
        return c
    intents, model_rows = _replay(config, actions)
    c.model_live = (plan.live_data_files, plan.live_delete_files)
    c.model_rows = model_rows
    if lines_from is not None:
        lines = lines_from(plan)
        for op in plan.ops:
            op.line = lines.get((op.writer, op.index))
    reason = _check_expressible(config, plan, intents, profile_name)
    if reason:
        c.status, c.reason = SKIPPED, reason
        return c
    profile = get_profile(profile_name)
    settings, reason = command_settings(config, intents, profile)
    if reason:
        c.status, c.reason = SKIPPED, reason
        return c
    props = table_properties(config.table, profile, settings)
    mrun = _ModelRun(plan, intents, model_rows)
    try:
        # Every statement must be expressible before anything runs.
        for kind, op in plan.events:
            if kind == "begin":
                statement_sql("t", config.table, intents[(op.writer, op.index)], None)
        for s in setup:
            statement_sql("t", config.table, s, None)
        create_table_sql("t", config.table, profile, props)
        run = run_on_spark(mrun, config.table, profile, setup, props)
    except NotExpressible as e:
        c.status, c.reason = SKIPPED, f"not expressible on Spark: {e}"
        return c
    c.java_seconds = run.seconds
    c.statements = run.statements
    _judge(c, plan, run)
    return c


_NOT_NULL = re.compile(r'not_null\((ref\(name="[^"]*"\))\)')


def _conjuncts(filter_text: str) -> list[str] | None:
    """The conjuncts of an Iceberg-rendered pure conjunction (None if it has or/not)."""
    if " or " in filter_text or "not(" in filter_text.replace("not_null(", ""):
        return None
    out = []
    for t in re.split(r"\s+and\s+", filter_text):
        t = t.strip()
        while t.startswith("(") and t.count("(") > t.count(")"):
            t = t[1:].strip()
        while t.endswith(")") and t.count(")") > t.count("("):
            t = t[:-1].strip()
        if t:
            out.append(t)
    return out


def inferred_not_null_only(model_message: str | None, spark_message: str | None
                           ) -> tuple[bool, str | None]:
    """Do the message keys differ only by the ``not_null(ref(...))`` conjuncts that Spark's
    optimizer infers for every column of a null-intolerant predicate (InferFiltersFromConstraints)
    and pushes into the scan, whose filter Iceberg uses as the conflict detection filter?"""
    mk, sk = message_key(model_message), message_key(spark_message)
    if not mk or not sk or " matching " not in mk or " matching " not in sk:
        return False, None
    mw, mf = mk.split(" matching ", 1)
    sw, sf = sk.split(" matching ", 1)
    if mw != sw:
        return False, None
    mc, sc = _conjuncts(mf), _conjuncts(sf)
    if mc is None or sc is None:
        return False, None
    refs = set(_NOT_NULL.findall(sf))
    kept = [c for c in sc if not (_NOT_NULL.fullmatch(c) and c not in mc
                                  and any(_NOT_NULL.fullmatch(c).group(1) in o
                                          for o in sc if o != c))]
    if sorted(kept) != sorted(mc) or not refs:
        return False, None
    return True, (f"detail: Spark's conflict filter adds the inferred not_null conjunct(s) "
                  f"(Catalyst InferFiltersFromConstraints), otherwise equal: spark {sk!r}")


def spark_agree(op, outcome: str, message: str | None) -> tuple[bool, str | None]:
    """``compare._agree`` for an operation Spark ran, with Spark's one documented normalisation
    (``inferred_not_null_only``); the spark and mixed targets both judge Spark writers by it."""
    agree, note = _agree(op, outcome, message)
    if not agree and note and note.startswith("message:"):
        same, why = inferred_not_null_only(op.message, message)
        if same:
            return True, why
    return agree, note


def _judge(c: SparkComparison, plan: Plan, run: _SparkRun) -> None:
    for op in plan.ops:
        r = run.outcomes[(op.writer, op.index)]
        kind = op.operation.kind if op.operation is not None else None
        agree, note = spark_agree(op, r.outcome, r.message)
        if note:
            note = note.replace(", java ", ", spark ")
        c.ops.append(OpComparison(op.label, op.writer, kind, op.outcome, op.message, r.outcome,
                                  r.message if r.outcome != NOT_RUN else None, agree, note))
        if not agree:
            c.differences.append(f"{op.label}: {note}")
    c.real_rows = run.rows
    c.real_files = run.live
    c.java_live = None       # files are not judged for Spark (see real_files)
    if run.rows != c.model_rows:
        c.differences.append(f"rows: model {c.model_rows}, spark {run.rows}")
    if c.differences:
        c.status = DISAGREE


def compare_scenario(scenario, *, model_version: tuple[int, int] = DEFAULT_MODEL_VERSION,
                     allowlist: list[AllowEntry] | None = None, source: str = "scenario",
                     **_ignored) -> Comparison:
    """Run ``scenario`` on the model, then as SQL on Spark; compare outcomes and rows."""
    if NAME in scenario.conformance_skip:
        return SparkComparison(scenario.id, scenario.path, source, SKIPPED,
                               f"conformance.skip lists spark: "
                               f"{scenario.conformance_skip[NAME]}")
    if not any(s.command is not None for s in scenario.steps):
        return SparkComparison(scenario.id, scenario.path, source, SKIPPED,
                               "not SQL-level: no command steps (raw op: steps only)")
    if any(s.kind in ("phase", "fault", "crash") for s in scenario.steps):
        return SparkComparison(scenario.id, scenario.path, source, SKIPPED,
                               "phase/fault/crash steps cannot be driven on Spark (a SQL "
                               "statement commits as a whole)")
    run = scenario_on_model(scenario, model_version)
    if run.mixed_reason("spark-"):
        return SparkComparison(scenario.id, scenario.path, source, SKIPPED,
                               run.mixed_reason("spark-"))
    config, actions, verdict, secs = run.config, run.actions, run.verdict, run.seconds
    try:
        c = _compare(scenario.id, scenario.path, source, config, actions,
                     getattr(scenario, "profile", None), (), secs,
                     lines_from=lambda plan: _op_lines(plan, verdict))
    except InputError:
        raise
    return apply_allowlist(c, allowlist or [])


def compare_trace(path: str, *, model_version: tuple[int, int] = DEFAULT_MODEL_VERSION,
                  allowlist: list[AllowEntry] | None = None, **_ignored) -> Comparison:
    """Rebuild the model from the trace's config, replay its actions, run them as SQL on Spark."""
    run = trace_on_model(path, model_version)
    if run.mixed_reason("spark-"):
        return SparkComparison(run.id, path, "trace", SKIPPED, run.mixed_reason("spark-"))
    c = _compare(run.id, path, "trace", run.config, run.actions, run.profile,
                 tuple(run.config.setup), 0.0)
    return apply_allowlist(c, allowlist or [])
