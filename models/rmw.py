"""Writes computed from their own read: ``INSERT OVERWRITE t SELECT ... FROM t``.

A job that rewrites its table from what it reads of it (a nightly dedup, a rewrite that
transforms a column) is an OVERWRITE (static: Spark's OverwriteByExpression) or an
OVERWRITE_PARTITIONS (dynamic: OverwritePartitionsDynamic) whose rows are not given but
derived, by ``select:``, from the rows it read at the snapshot it began at:

* ``where`` is the SELECT's WHERE (the rows read) and, for a static overwrite, also what it
  overwrites: ``INSERT OVERWRITE t PARTITION (day = 'd1') SELECT ... FROM t WHERE day = 'd1'``
  for an identity partition predicate, the DataFrame ``spark.table(t).where(c)...
  .writeTo(t).overwrite(c)`` for any other (Iceberg's overwriteByRowFilter then fails on a file
  the filter cuts through). No ``where``: the whole table. A dynamic overwrite replaces the
  partitions its rows land in (the whole table when unpartitioned), whatever it read;
* ``dedup: [cols]`` keeps one row per value of ``cols``: the greatest by ``order_by`` (a
  column list, descending, nulls last; ties by the whole row), by default by the other columns
  in schema order: ``row_number() OVER (PARTITION BY cols ORDER BY order_by DESC) = 1``;
* ``set: {col: value}`` gives ``col`` that value in every row written (``SELECT id, day,
  'x' AS v FROM t``), after the dedup.

The rows are planned by the model from the snapshot the job scanned, like a MERGE's
(``models/commands.py``): Spark plans ``INSERT OVERWRITE t SELECT ... FROM t`` as one query
whose scan is pinned when it is planned, and the write commits the rows that scan produced
(observed on Spark 3.5 + Iceberg 1.10.2: reproducers/spark_insert_overwrite_select_races.py).
What it then commits is the profile's OVERWRITE or OVERWRITE_PARTITIONS of those rows, so
every engine's own form applies unchanged: Spark's blind replace at commit (overwriteByRowFilter
/ ReplacePartitions, validated only by the write options, ``models/write_options.py``),
PyIceberg's copy-on-write delete frozen at the base (``tbl.overwrite(df, filter)``,
``tbl.dynamic_partition_overwrite(df)``). A dynamic overwrite that writes no row commits
nothing: Spark's DynamicOverwrite.commit returns on an empty file set ("Dynamic overwrite is
empty, skipping commit", spark/v3.5/spark/src/main/java/org/apache/iceberg/spark/source/
SparkWrite.java:311-316 @ apache-iceberg-1.10.2), PyIceberg's dynamic_partition_overwrite on
an empty table (pyiceberg/table/__init__.py, ``if df.shape[0] == 0: return``).

Not modelled: ``REPLACE TABLE t AS SELECT ... FROM t`` (docs/pipelines.md says why).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from .files import Pairs
from .filters import eval_row


@dataclass(frozen=True)
class Select:
    """How an overwrite's rows derive from the rows it read (see the module docstring)."""

    dedup: tuple[str, ...] = ()
    order_by: tuple[str, ...] = ()
    set: Pairs = ()

    def words(self) -> str:
        """What the SELECT does, without the schema: ``one row per id (greatest v); v = 'x'``."""
        parts = []
        if self.dedup:
            order = (f"greatest {', '.join(self.order_by)}" if self.order_by
                     else "greatest row")
            parts.append(f"one row per {', '.join(self.dedup)} ({order})")
        if self.set:
            parts.append(", ".join(f"{k} = {v!r}" for k, v in self.set))
        return "; ".join(parts) or "every row as read"

    def sql(self, columns: tuple[str, ...]) -> str:
        """The SELECT list and subquery in SQL words (for traces and explanations)."""
        sets = dict(self.set)
        cols = ", ".join(f"{sets[c]!r} AS {c}" if c in sets else c for c in columns) \
            if sets else "*"
        if not self.dedup:
            return f"SELECT {cols} FROM t"
        order = self.order_by or tuple(c for c in columns if c not in self.dedup)
        rank = (f"row_number() OVER (PARTITION BY {', '.join(self.dedup)} ORDER BY "
                f"{', '.join(c + ' DESC' for c in order) or '1'})")
        return f"SELECT {cols} FROM (SELECT *, {rank} AS rn FROM t) WHERE rn = 1"


def _rank(row: tuple, idx: list[int]) -> tuple:
    """A row's rank in ``ORDER BY ... DESC NULLS LAST`` (Spark's default for DESC): a null is
    below every value."""
    return tuple((row[i] is not None, row[i]) if row[i] is not None else (False, 0) for i in idx)


def derived_rows(select: Select, names: tuple[str, ...], rows: list[tuple]) -> list[tuple]:
    """The rows an overwrite writes, from the rows it read (``rows``, in scan order)."""
    out = [tuple(r) for r in rows]
    if select.dedup:
        key_idx = [names.index(c) for c in select.dedup]
        order = select.order_by or tuple(c for c in names if c not in select.dedup)
        idx = [names.index(c) for c in order]
        whole = list(range(len(names)))
        best: dict = {}
        for r in out:
            k = tuple(r[i] for i in key_idx)
            kept = best.get(k)
            if kept is None or (_rank(r, idx), _rank(r, whole)) > (_rank(kept, idx),
                                                                   _rank(kept, whole)):
                best[k] = r
        out = list(best.values())          # in the order each key was first read
    if select.set:
        sets = dict(select.set)
        out = [tuple(sets.get(n, v) for n, v in zip(names, r)) for r in out]
    return out


def rows_read(where, schema, rows: list[tuple]) -> list[tuple]:
    """The rows the SELECT reads: those its WHERE selects (all without one)."""
    if where is None:
        return list(rows)
    return [r for r in rows if eval_row(where, schema.as_dict(r))]


def plan_select(cmd, table, rows: list[tuple], plan_rows: Callable):
    """The operation of ``cmd`` (an OVERWRITE or OVERWRITE_PARTITIONS with ``select``): its
    rows derived from ``rows`` (the base snapshot's rows, in scan order), then planned by
    ``plan_rows`` as the same command with those rows given."""
    from .operations import NothingToDo
    written = derived_rows(cmd.select, table.schema.names,
                           rows_read(cmd.where, table.schema, rows))
    if cmd.kind == "OVERWRITE_PARTITIONS" and not written:
        raise NothingToDo(f"{cmd} writes no row: a dynamic overwrite of nothing commits "
                          f"nothing")
    return plan_rows(replace(cmd, rows=tuple(written), select=None))


def command_text(cmd, plain: str) -> str:
    """A command's text with its ``select`` and write options (``Command.__str__``)."""
    text = plain
    if cmd.select is not None:
        where = f" WHERE {cmd.where_text}" if cmd.where is not None else ""
        how = ("dynamic: replaces the partitions it writes" if cmd.kind == "OVERWRITE_PARTITIONS"
               else f"static: overwrite({cmd.where_text})")
        text = f"INSERT OVERWRITE t SELECT ... FROM t{where} ({cmd.select.words()}; {how})"
    if cmd.write_options:
        text += " [" + ", ".join(f"{k}={v}" for k, v in cmd.write_options) + "]"
    return text
