"""The Spark target's form of an overwrite computed from its own read (``select``,
models/rmw.py) and of a command's write options (models/write_options.py).

* with no write options and a filter Spark SQL can say: ``INSERT OVERWRITE t SELECT ... FROM t
  [WHERE ...]`` in the writer's own session, static (``INSERT OVERWRITE t PARTITION (p = v)``
  for equalities on identity partition columns) or dynamic (``partitionOverwriteMode``);
* otherwise a DataFrame write, since Spark SQL's INSERT takes no write options (``INSERT
  OVERWRITE t WITH (...)`` and ``/*+ OPTIONS(...) */`` are syntax errors in Spark 3.5, observed):
  ``session.sql(<select>).writeTo(t).option(k, v)....overwritePartitions()`` (dynamic) or
  ``.overwrite(<where>)`` (static), and ``.append()`` for an INSERT with options.
  ``validate-from-snapshot-id: read`` is the id of main's snapshot when the statement starts
  (``t.refs``): the snapshot its scan reads, since nothing commits before the statement holds
  at its gate.

The SELECT reads the table itself, with the gate in its WHERE (the scan's snapshot is pinned
once it is reached). A dedup keeps, per key, the row first by ``order_by`` descending and then
by every column descending, nulls last (Spark's default for DESC), as the model does.
"""

from __future__ import annotations


class DataFrameWrite:
    """A statement that is a DataFrame write, not SQL text: ``run(session)`` does it;
    ``str()`` is what the run's log shows."""

    def __init__(self, name: str, select: str, options: tuple, how: str, where_sql: str):
        self.name, self.select, self.options = name, select, options
        self.how, self.where_sql = how, where_sql

    def __str__(self) -> str:
        opts = "".join(f".option({k!r}, {v!r})" for k, v in self.options)
        end = {"dynamic": ".overwritePartitions()", "append": ".append()"}.get(
            self.how, f".overwrite(expr({self.where_sql!r}))")
        return f"spark.sql({self.select!r}).writeTo({self.name!r}){opts}{end}"

    def run(self, session) -> None:
        from pyspark.sql import functions as F
        options = dict(self.options)
        if options.get("validate-from-snapshot-id") == "read":
            row = session.sql(f"SELECT snapshot_id FROM {self.name}.refs "
                              f"WHERE name = 'main'").collect()
            options["validate-from-snapshot-id"] = str(row[0][0])
        w = session.sql(self.select).writeTo(self.name)
        for k, v in sorted(options.items()):
            w = w.option(k, str(v))
        if self.how == "dynamic":
            w.overwritePartitions()
        elif self.how == "append":
            w.append()
        else:
            w.overwrite(F.expr(self.where_sql))


def select_sql(name: str, table, intent, gate: str | None, target) -> str:
    """The SELECT of ``intent`` (a command with ``select``) reading table ``name``; ``target``
    is conformance/spark_target.py, whose SQL helpers it uses (passed in: no import cycle)."""
    sql_filter, sql_literal = target.sql_filter, target.sql_literal
    names = table.schema.names
    types = table.schema.types()
    conds = []
    if intent.where is not None:
        conds.append(sql_filter(intent.where))
    if gate:
        conds.append(f"icecheck_gate('{gate}', `{names[0]}`)")
    src = f"SELECT * FROM {name}" + (f" WHERE {' AND '.join(conds)}" if conds else "")
    sel = intent.select
    if sel.dedup:
        order = list(sel.order_by or [c for c in names if c not in sel.dedup]) + list(names)
        rank = (f"row_number() OVER (PARTITION BY {', '.join(f'`{c}`' for c in sel.dedup)} "
                f"ORDER BY {', '.join(f'`{c}` DESC NULLS LAST' for c in order)})")
        src = (f"SELECT {', '.join(f'`{c}`' for c in names)} FROM (SELECT *, {rank} AS "
               f"icecheck_rn FROM ({src})) WHERE icecheck_rn = 1")
    sets = dict(sel.set)
    cols = ", ".join(f"{sql_literal(sets[c], types[c])} AS `{c}`" if c in sets else f"`{c}`"
                     for c in names)
    return f"SELECT /*+ REPARTITION(1) */ {cols} FROM ({src})"


def overwrite_statements(name: str, table, intent, gate: str | None, target) -> list:
    """The statements of an OVERWRITE / OVERWRITE_PARTITIONS with ``select`` or write options,
    or of an INSERT with write options."""
    NotExpressible, _static_partition = target.NotExpressible, target._static_partition
    _values_select, sql_filter = target._values_select, target.sql_filter
    if intent.kind == "INSERT":
        if gate:
            raise NotExpressible("an INSERT that overlaps another writer's commit (it has no "
                                 "scan to gate)")
        return [DataFrameWrite(name, _values_select(table, intent.rows), intent.write_options,
                               "append", "")]
    if intent.select is not None:
        select = select_sql(name, table, intent, gate, target)
    else:
        select = _values_select(table, intent.rows, gate=gate, hint="/*+ REPARTITION(1) */ ")
    dynamic = intent.kind == "OVERWRITE_PARTITIONS"
    static = None if dynamic or intent.where is None else _static_partition(table,
                                                                            intent.where)
    if not intent.write_options and (dynamic or intent.where is None or static is not None):
        if dynamic:
            return ["SET spark.sql.sources.partitionOverwriteMode=dynamic",
                    f"INSERT OVERWRITE {name} {select}"]
        if static is None:
            return ["SET spark.sql.sources.partitionOverwriteMode=static",
                    f"INSERT OVERWRITE {name} {select}"]
        names = table.schema.names
        sql_literal = target.sql_literal
        types = table.schema.types()
        spec = ", ".join(f"`{c}` = {sql_literal(v, types[c])}" for c, v in static.items())
        rest = ", ".join(f"`{n}`" for n in names if n not in static)
        return ["SET spark.sql.sources.partitionOverwriteMode=static",
                f"INSERT OVERWRITE {name} PARTITION ({spec}) SELECT {rest} FROM ({select})"]
    return [DataFrameWrite(name, select, intent.write_options,
                           "dynamic" if dynamic else "static", sql_filter(intent.where))]
