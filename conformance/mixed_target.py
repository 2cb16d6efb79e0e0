"""Conformance target ``mixed``: one table written by real Spark and real PyIceberg at once.

A scenario (``writer_profiles:``) or trace (``writer_profiles`` in its config) whose writers run
on ``spark-3.5-*`` and ``pyiceberg-0.12-*`` profiles is run on the model first, then on ONE real
table in a shared catalog: a SQLite database that Iceberg's ``JdbcCatalog`` (inside the Spark
session, catalog ``mixed``) and PyIceberg's ``SqlCatalog`` both use, over one ``file://``
warehouse (/work/shared/real-iceberg.md: the table is created from PyIceberg first, and Spark's
catalog runs with ``jdbc.init-catalog-tables=false``). Each writer runs on the engine its profile
names, on the timeline the model laid out (``java_runner.build_plan``):

* a Spark writer's command is one SQL statement, held open across other writers' commits by the
  Spark target's gate (``spark_target.statement_sql``);
* a PyIceberg writer begins by staging its command in a ``Transaction`` and commits with
  ``commit_transaction()`` (``pyiceberg_target.PyWriter``).

Compared: each operation's outcome; for a Spark writer's validation failure the whole message
(file names normalised; the ``not_null`` conjuncts Spark's optimizer adds to a conflict filter
allowed as the spark target allows them, ``spark_target.spark_agree``), for a PyIceberg
writer's the whole message where the model words it as PyIceberg does (the added and deleted
data files checks and those of the files an overwrite deletes, snapshot ids and file names
masked) and otherwise the kind of check
(``pyiceberg_target.agree_on_failure``); at the end the table's rows.

The table gets each command's write mode and isolation level from the profile of the writer
that runs it (``_settings``): each engine reads them from a table property (Spark a DELETE's
from ``write.delete.*``, an UPDATE's from ``write.update.*``, a MERGE's from ``write.merge.*``;
PyIceberg a delete's and a file-level overwrite's from ``write.delete.isolation-level``, an
overwrite's and an upsert's from ``write.update.isolation-level``), so writers at different
levels share one table when no property is asked for two values. Skipped, with the reason:
writers that would need one property at two values (a Spark DELETE at snapshot isolation beside
a PyIceberg delete at serializable), any engine but these two, and everything either target
skips on its own (raw operations, phases, faults).
"""

from __future__ import annotations

import itertools
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from icecheck.models import system as sm
from icecheck.models.commands_spec import Command
from icecheck.models.profiles import get_profile
from icecheck.scenarios.errors import InputError

from . import pyiceberg_target as pyt
from . import spark_target as spt
from .compare import (AGREE, DISAGREE, SKIPPED, AllowEntry, Comparison, OpComparison,
                      apply_allowlist, scenario_on_model, trace_on_model)
from .java_runner import NOT_RUN, Plan, build_plan

NAME = "mixed"
SPARK, PYICEBERG = "spark-", "pyiceberg-"
_CATALOG = "mixed"
_counter = itertools.count(1)
_shared: dict[str, Any] = {}
_lock = threading.Lock()


def _target_unavailable():
    from .targets import TargetUnavailable
    return TargetUnavailable


def ready() -> None:
    """Both real engines, and the SQLite JDBC driver for the shared catalog."""
    pyt.ready()
    spt.ready()
    from .spark_session import SQLITE_JDBC_JAR
    if not os.path.exists(SQLITE_JDBC_JAR):
        raise _target_unavailable()(
            f"the SQLite JDBC driver is missing ({SQLITE_JDBC_JAR}); install Debian's "
            f"libxerial-sqlite-jdbc-java or point ICECHECK_SQLITE_JDBC_JAR at the jar")


def _catalogs():
    """(Spark session with the ``mixed`` JdbcCatalog, PyIceberg SqlCatalog), one per process,
    both on the same SQLite database and warehouse."""
    from pyiceberg.catalog.sql import SqlCatalog

    from .spark_session import get_spark

    with _lock:
        if not _shared:
            d = tempfile.mkdtemp(prefix="icecheck-mixed-")
            db, wh = os.path.join(d, "catalog.sqlite"), os.path.join(d, "warehouse")
            py = SqlCatalog(_CATALOG, uri=f"sqlite:///{db}", warehouse=f"file://{wh}")
            py.create_namespace("db")               # PyIceberg creates the catalog tables
            prefix = f"spark.sql.catalog.{_CATALOG}"
            conf = {prefix + k: v for k, v in {
                "": "org.apache.iceberg.spark.SparkCatalog",
                ".catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
                ".uri": f"jdbc:sqlite:{db}", ".warehouse": f"file://{wh}",
                ".jdbc.init-catalog-tables": "false", ".cache-enabled": "false"}.items()}
            _shared.update(dir=d, py=py, conf=conf)
            _shared["spark"] = _session(get_spark())
        return _shared["spark"], _shared["py"]


def _session(session):
    """``session`` with the shared catalog (catalog settings are per session: a writer's
    ``newSession()`` does not inherit them)."""
    for k, v in _shared["conf"].items():
        session.conf.set(k, v)
    return session


class SharedTable(pyt.PyTable):
    """The real table, created from PyIceberg in the shared catalog with the modes and
    isolation levels the writers' profiles need (``_settings``); PyWriter drives it as a
    PyIceberg table."""

    def __init__(self, table, spark_profile, settings: dict[str, str]):
        self.config = table
        self.dir = None
        _, self.catalog = _catalogs()
        n = next(_counter)
        self.IDENT = f"db.t{os.getpid()}_{n}"
        self.spark_name = f"{_CATALOG}.{self.IDENT}"
        props = spt.table_properties(table, spark_profile, settings) if spark_profile else {
            "format-version": str(table.format_version), **settings}
        props.setdefault("commit.retry.num-retries", str(table.max_retries))
        props.setdefault("commit.retry.min-wait-ms", "1")
        props.setdefault("commit.retry.max-wait-ms", "10")
        if table.format_version >= 3:
            # PyIceberg 0.12 cannot write v3 metadata, not even a new table's ("Writing V3 is
            # not yet supported"): Spark creates it; PyIceberg reads it, and each snapshot it
            # stages fails at its manifests (PyWriter.begin)
            spark, _ = _catalogs()
            spark.sql(spt.create_table_sql(self.spark_name, table, spark_profile, props))
        else:
            self.catalog.create_table(self.IDENT, schema=self._schema(),
                                      partition_spec=self._spec(), properties=props)

    def external_file(self, name: str, rows) -> str:
        """An ADD_FILES command's file, written by Spark once for both engines
        (``spark_target.write_external``), named as Spark's add_files registers it
        (``file:/...``): each engine's duplicate check compares path strings, so a PyIceberg
        writer adds it under that same string."""
        from types import SimpleNamespace

        spark, _ = _catalogs()
        return "file:" + spt.write_external(spark, self.spark_name, self.config,
                                            SimpleNamespace(file=name, rows=rows))

    def close(self) -> None:
        try:
            self.catalog.drop_table(self.IDENT)
        except Exception:
            pass


class _Files(spt._Files):
    """Real paths -> model names, by content: PyIceberg and Spark split rows into files their
    own way (PyIceberg's upsert writes the rewritten file and the new rows as two files where
    the model writes one), so a new real data file is named after the model data file of the
    same commit that holds its rows."""

    def learn(self, operation) -> None:
        now = self._live()
        added = {p: v for p, v in now.items() if p not in self.live}
        new_data = sorted(p for p, (c, _) in added.items() if c == 0)
        if operation is None or not new_data or not operation.add_data:
            return super().learn(operation)
        import pyarrow.parquet as pq

        for real in new_data:
            local = real[len("file://"):] if real.startswith("file://") else (
                real[len("file:"):] if real.startswith("file:") else real)
            try:
                rows = [tuple(r.values()) for r in pq.read_table(local).to_pylist()]
            except OSError:
                continue
            for f in operation.add_data:
                model_rows = [tuple(r) for r in (f.rows or ())]
                if rows and all(r in model_rows for r in rows):
                    self.names[real] = f.path
                    break
        # delete files (Spark's) by the parent's rules, data files already named above
        named = dict(self.names)
        super().learn(operation)
        self.names.update(named)


@dataclass
class _Run:
    outcomes: dict = field(default_factory=dict)     # (writer, index) -> (outcome, message)
    rows: list = field(default_factory=list)
    statements: list = field(default_factory=list)
    seconds: float = 0.0


def _engine(profile: str | None) -> str | None:
    for prefix in (SPARK, PYICEBERG):
        if profile and profile.startswith(prefix):
            return prefix
    return None


def _settings(run, plan: Plan, intents: dict) -> tuple[dict[str, str], str | None]:
    """The write-mode and isolation-level properties the shared table needs for every
    writer's commands to run as its own profile says (``profiles.table_settings``: a Spark
    MERGE reads write.merge.isolation-level, a PyIceberg upsert write.update.isolation-level,
    a Spark or PyIceberg delete write.delete.isolation-level), or why one table cannot."""
    from icecheck.models.profiles import table_settings
    return table_settings((op.writer, get_profile(run.profile_of(op.writer)),
                           getattr(intents.get((op.writer, op.index)), "kind", None))
                          for op in plan.ops)


def _skip_reason(run, plan: Plan, intents: dict) -> str | None:
    profiles = {op.writer: run.profile_of(op.writer) for op in plan.ops}
    engines = {w: _engine(p) for w, p in profiles.items()}
    bad = sorted(w for w, e in engines.items() if e is None)
    if bad:
        return (f"writers {', '.join(bad)} run on profiles that are neither Spark nor PyIceberg "
                f"({', '.join(sorted({str(profiles[w]) for w in bad}))})")
    if len(set(engines.values())) < 2:
        return "every writer runs on one engine: use that engine's target"
    _, why = _settings(run, plan, intents)
    if why:
        return why
    for op in plan.ops:
        intent = intents.get((op.writer, op.index))
        try:
            if engines[op.writer] == SPARK:
                spt.statement_sql("t", plan.table, intent, None)
            else:
                pyt.check_expressible(intent, plan.table)
        except (spt.NotExpressible, pyt.PyIcebergUnsupported) as e:
            return f"not expressible on {engines[op.writer].rstrip('-')}: {e}"
    for s in plan.setup:
        try:
            spt.statement_sql("t", plan.table, s, None)
        except spt.NotExpressible as e:
            return f"set-up not expressible: {e}"
    return None


def _intents_and_rows(config, actions):
    """Each operation's intent and the model's final rows (sorted as the Spark rows are)."""
    intents, rows = pyt._intents_and_rows(config, actions)
    return intents, spt.sort_rows(rows)


def _run_real(run, plan: Plan, intents: dict) -> _Run:
    from .spark_session import writer_session

    t0 = time.perf_counter()
    out = _Run()
    spark, _ = _catalogs()
    spark_profile = next((run.profile_of(op.writer) for op in plan.ops
                          if _engine(run.profile_of(op.writer)) == SPARK), None)
    settings, _ = _settings(run, plan, intents)
    pt = SharedTable(plan.table, get_profile(spark_profile) if spark_profile else None, settings)
    try:
        name = pt.spark_name
        for op in plan.setup:
            outcome, message, _ = spt._run_statements(spark, spt.statement_sql(name, plan.table,
                                                                               op, None),
                                                      out.statements)
            if outcome != sm.COMMITTED:
                raise RuntimeError(f"set-up INSERT failed on Spark: {outcome} {message}")
        files = _Files(spark, name)              # real paths -> model names, both engines'
        for op in plan.setup:
            files.learn(op)
        sessions: dict[str, Any] = {}
        gated: dict = {}
        py_writers: dict = {}
        events = spt.with_begin_verdicts(plan, intents)
        n = next(_counter)
        for i, (kind, op) in enumerate(events):
            key = (op.writer, op.index)
            intent = intents[key]
            engine = _engine(run.profile_of(op.writer))
            spt.learn_external(spark, files, name, plan.table, intent)
            if engine == PYICEBERG:
                if kind in ("begin", "noop"):
                    w = pyt.PyWriter(pt, op.writer)
                    w.begin(intent)
                    py_writers[key] = w
                if kind in ("commit", "noop"):
                    outcome, message = py_writers.pop(key).commit()
                    files.learn(op.operation if outcome == sm.COMMITTED else None)
                    out.outcomes[key] = (outcome, files.rename(message))
                continue
            if op.writer not in sessions:
                sessions[op.writer] = _session(writer_session(spark))
            session = sessions[op.writer]
            if kind == "begin":
                adjacent = i + 1 < len(events) and events[i + 1][0] == "commit" \
                    and events[i + 1][1] is op
                if adjacent or spt._metadata_delete(op):
                    continue
                gated[key] = spt.start_gated(session, name, plan.table, intent, op,
                                             f"x{os.getpid()}_{n}_{op.writer}_{op.index}",
                                             out.statements)
            else:
                if kind == "noop":
                    outcome, message, _ = spt.run_whole(session, spark, name, plan.table,
                                                        intent, out.statements)
                elif key in gated:
                    outcome, message, _ = spt.finish_gated(gated.pop(key), op)
                else:
                    outcome, message, _ = spt._run_statements(
                        session, spt.statement_sql(name, plan.table, intent, None),
                        out.statements)
                files.learn(op.operation if outcome == sm.COMMITTED else None)
                out.outcomes[key] = (outcome, files.rename(message))
        # never the model's own outcome for what the real engines did not run (an operation the
        # model left unfinished or crashed): "not run", noted, claiming no real outcome
        for op in plan.ops:
            out.outcomes.setdefault((op.writer, op.index), (NOT_RUN, None))
        out.rows = spt.sort_rows(tuple(r) for r in spark.sql(f"SELECT * FROM {name}").collect())
    finally:
        pt.close()
    out.seconds = time.perf_counter() - t0
    return out


def _judge(c: Comparison, run, plan: Plan, real: _Run, model_rows) -> None:
    for op in plan.ops:
        outcome, message = real.outcomes[(op.writer, op.index)]
        engine = _engine(run.profile_of(op.writer))
        kind = op.operation.kind if op.operation is not None else None
        if engine == SPARK:     # as the spark target judges it (inferred not_null conjuncts)
            agree, note = spt.spark_agree(op, outcome, message)
        else:
            agree, note = True, None
            if outcome == NOT_RUN:
                note = "not run on PyIceberg"
            elif outcome != op.outcome:
                agree, note = False, f"outcome: model {op.outcome}, pyiceberg {outcome}"
            elif outcome == sm.VALIDATION_FAILED:
                agree, note = pyt.agree_on_failure(op, message)
        if note:
            note = note.replace(", java ", f", {engine.rstrip('-')} ")
        c.ops.append(OpComparison(f"{op.label} [{engine.rstrip('-')}]", op.writer, kind,
                                  op.outcome, op.message, outcome, message, agree, note))
        if not agree:
            c.differences.append(f"{op.label}: {note}")
    c.model_rows, c.real_rows = model_rows, real.rows
    if real.rows != model_rows:
        c.differences.append(f"rows: model {model_rows}, real {real.rows}")
    c.status = DISAGREE if c.differences else AGREE


def _compare(cid, path, source, run) -> Comparison:
    c = Comparison(cid, path, source, AGREE, model_seconds=run.seconds)
    try:
        # an operation the model ends read_failed (a file expiry deleted) is run too: the real
        # engine shows whether and how it fails
        plan = build_plan(run.config, run.actions, run_read_failures=True)
    except sm.StepError as e:
        c.status, c.reason = SKIPPED, f"the run does not replay on the model: {e}"
        return c
    intents, model_rows = _intents_and_rows(run.config, run.actions)
    reason = plan.skip or _skip_reason(run, plan, intents)
    if reason:
        c.status, c.reason = SKIPPED, reason
        return c
    real = _run_real(run, plan, intents)
    c.java_seconds = real.seconds
    _judge(c, run, plan, real, model_rows)
    return c


def compare_scenario(scenario, *, allowlist: list[AllowEntry] | None = None,
                     source: str = "scenario", **_ignored) -> Comparison:
    if NAME in scenario.conformance_skip:
        return Comparison(scenario.id, scenario.path, source, SKIPPED,
                          f"conformance.skip lists mixed: {scenario.conformance_skip[NAME]}")
    if not scenario.writer_profiles:
        return Comparison(scenario.id, scenario.path, source, SKIPPED,
                          "one engine profile for every writer (no writer_profiles)")
    if any(s.kind in ("phase", "fault", "crash") for s in scenario.steps):
        return Comparison(scenario.id, scenario.path, source, SKIPPED,
                          "phase/fault/crash steps cannot be driven on real engines")
    if not all(isinstance(s.command, Command) for s in scenario.steps if s.kind == "begin"):
        return Comparison(scenario.id, scenario.path, source, SKIPPED,
                          "raw operations: only SQL-level commands run on both engines")
    try:
        run = scenario_on_model(scenario)
    except InputError:
        raise
    return apply_allowlist(_compare(scenario.id, scenario.path, source, run), allowlist or [])


def compare_trace(path: str, *, allowlist: list[AllowEntry] | None = None, **_ignored
                  ) -> Comparison:
    run = trace_on_model(path)
    if not run.writer_profiles:
        return Comparison(run.id, path, "trace", SKIPPED,
                          "one engine profile for every writer (no writer_profiles)")
    return apply_allowlist(_compare(run.id, path, "trace", run), allowlist or [])
