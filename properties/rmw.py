"""The oracle's reading of an overwrite whose rows derive from its own read
(``INSERT OVERWRITE t SELECT ... FROM t``: a command with ``select``, models/rmw.py).

Judged as read-modify-write, like a MERGE: its effect is computed from the rows it read at its
own base snapshot. It *reads* every key of the rows its SELECT read and of the rows it
replaces (and the keys its WHERE looks up); it *writes* the keys whose rows it changed: what it
replaced, less the rows it wrote back unchanged, plus what it wrote. A key it read and wrote
back as it was is read, not written; a row it never saw (committed after its base) is neither:
in every serial order of the commits that row is either read and carried over by the overwrite
or added after it, so the table keeps it.

What the engine does differs: Spark's overwrite replaces at commit whatever matches its filter
(overwriteByRowFilter) or lies in the partitions it writes (ReplacePartitions), so a row
another job appended meanwhile is dropped unseen (a lost write), and a row another job
deleted meanwhile is written back from the stale read (an undelete), unless the write's
isolation level refuses the commit (models/write_options.py). The oracle keeps the serial
meaning; the difference is the anomaly (observed on Spark 3.5 + Iceberg 1.10.2:
reproducers/spark_insert_overwrite_select_races.py).

What it replaces is the serial command's too: a static overwrite the rows its WHERE selects
(the whole table without one), a dynamic one every row of the partitions it writes (the whole
table when unpartitioned), read or not, as Spark's OverwriteByExpression and
OverwritePartitionsDynamic define them.
"""

from __future__ import annotations

from collections import Counter

from icecheck.models.commands_spec import OVERWRITE
from icecheck.models.rmw import derived_rows, rows_read


def rmw_effect(h, op, kf, eff, set_effect):
    """``eff`` filled with the effect of ``op`` (an overwrite with ``select``), through the
    oracle's ``set_effect`` (passed in: the oracle imports this module)."""
    intent = op.intent
    table = h.model.table
    schema = table.schema
    base = [rv.values for rv in h.rows(op.base_snapshot_id)]
    read = rows_read(intent.where, schema, base)
    written = derived_rows(intent.select, schema.names, read)
    if intent.kind == OVERWRITE:
        replaced = read
    elif table.spec.is_unpartitioned:
        replaced = base
    else:
        parts = {table.partition_of_row(r) for r in written}
        replaced = [r for r in base if table.partition_of_row(r) in parts]
    gone, new = Counter(replaced), Counter(written)
    base_by_key: dict = {}
    for r in base:
        base_by_key.setdefault(kf(r), []).append(r)
    for r in read + replaced:
        eff.reads[kf(r)] = True
    if kf.keyed and intent.where is not None:
        for k in kf.looked(intent.where) or ():
            eff.reads.setdefault(k, bool(base_by_key.get(k)))
    set_effect(eff, kf, base_by_key, list((gone - new).elements()),
                list((new - gone).elements()))
    return eff
