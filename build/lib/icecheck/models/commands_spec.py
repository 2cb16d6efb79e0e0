"""SQL-level commands, as an engine user writes them: INSERT, DELETE, UPDATE, MERGE, compaction,
and the DataFrame writes overwrite(filter) and overwritePartitions()."""

from __future__ import annotations

from dataclasses import dataclass

from .files import Pairs, Row
from .filters import Expr

INSERT, DELETE, UPDATE, MERGE = "INSERT", "DELETE", "UPDATE", "MERGE"
COMPACT, OVERWRITE, OVERWRITE_PARTITIONS = "COMPACT", "OVERWRITE", "OVERWRITE_PARTITIONS"
COMMANDS = (INSERT, DELETE, UPDATE, MERGE, COMPACT, OVERWRITE, OVERWRITE_PARTITIONS)
COPY_ON_WRITE, MERGE_ON_READ = "copy-on-write", "merge-on-read"

COMMAND_KEYS = {
    INSERT: {"rows"},
    DELETE: {"where"},
    UPDATE: {"where", "set"},
    MERGE: {"on", "rows", "where"},
    COMPACT: {"where"},
    OVERWRITE: {"where", "rows"},
    OVERWRITE_PARTITIONS: {"rows"},
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

    def __str__(self) -> str:
        if self.kind == INSERT:
            return f"INSERT {len(self.rows)} row(s) {list(self.rows)}"
        if self.kind == DELETE:
            return f"DELETE WHERE {self.where_text}"
        if self.kind == UPDATE:
            sets = ", ".join(f"{k} = {v!r}" for k, v in self.set)
            return f"UPDATE SET {sets} WHERE {self.where_text}"
        if self.kind == MERGE:
            return f"MERGE ON {', '.join(self.on)} USING {list(self.rows)}"
        if self.kind == COMPACT:
            return "COMPACT (rewrite_data_files)" + (f" WHERE {self.where_text}" if self.where else "")
        if self.kind == OVERWRITE:
            return f"overwrite({self.where_text}) with {list(self.rows)}"
        return f"overwritePartitions() with {list(self.rows)}"

    @property
    def where_text(self) -> str:
        return self.where_sql or "true"


def parse_command(ctx, table, node, parent):
    """Parse a scenario's ``command:`` mapping (``{sql: DELETE, where: "id = 1"}``)."""
    from icecheck.scenarios.format import _filter, _rows, _check_value

    node = ctx.mapping(node, "command", parent, "command")
    kind = str(node.get("sql", "")).upper()
    if kind not in COMMANDS:
        raise ctx.fail(f"unknown command {node.get('sql')!r}; expected one of "
                       f"{', '.join(COMMANDS)}", node, "sql" if "sql" in node else None)
    ctx.keys(node, COMMAND_KEYS[kind] | {"sql"}, f"a {kind} command")
    where = _filter(ctx, table, node, "where") if "where" in node else None
    rows = _rows(ctx, table, node["rows"], node, "rows") if "rows" in node else ()
    if kind in (INSERT, MERGE, OVERWRITE_PARTITIONS) and not rows:
        raise ctx.fail(f"{kind} needs rows", node)
    sets = ()
    if kind == UPDATE:
        snode = ctx.mapping(node.get("set"), "UPDATE set", node, "set")
        types = table.schema.types()
        for col, value in snode.items():
            if col not in types:
                raise ctx.fail(f"UPDATE sets unknown column {col!r}", snode, col)
            _check_value(ctx, types[col], value, snode, col, f"column {col}")
        sets = tuple(sorted(snode.items()))
    on = ()
    if kind == MERGE:
        onode = ctx.seq(node.get("on"), "MERGE on", node, "on")
        on = tuple(str(c) for c in onode)
        for c in on:
            if c not in table.schema.names:
                raise ctx.fail(f"MERGE on unknown column {c!r}", node, "on")
    return Command(kind, where, sets, rows, on, str(node.get("where", "")))
