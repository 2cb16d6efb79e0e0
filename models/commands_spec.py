"""SQL-level commands, as an engine user writes them: INSERT, DELETE, UPDATE, MERGE, an
insert-only MERGE (``MERGE INTO t USING s ON key WHEN NOT MATCHED THEN INSERT *``: MERGE_INSERT),
compaction, and the DataFrame writes overwrite(filter) and overwritePartitions()."""

from __future__ import annotations

from dataclasses import dataclass

from .files import Pairs, Row
from .filters import Expr

INSERT, DELETE, UPDATE, MERGE = "INSERT", "DELETE", "UPDATE", "MERGE"
COMPACT, OVERWRITE, OVERWRITE_PARTITIONS = "COMPACT", "OVERWRITE", "OVERWRITE_PARTITIONS"
MERGE_INSERT = "MERGE_INSERT"
COMMANDS = (INSERT, DELETE, UPDATE, MERGE, COMPACT, OVERWRITE, OVERWRITE_PARTITIONS, MERGE_INSERT)
COPY_ON_WRITE, MERGE_ON_READ = "copy-on-write", "merge-on-read"

COMMAND_KEYS = {
    INSERT: {"rows"},
    DELETE: {"where"},
    UPDATE: {"where", "set"},
    MERGE: {"on", "rows", "where"},
    MERGE_INSERT: {"on", "rows"},
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
        if self.kind == MERGE_INSERT:
            return (f"MERGE ON {', '.join(self.on)} USING {list(self.rows)} "
                    f"WHEN NOT MATCHED THEN INSERT (only)")
        if self.kind == COMPACT:
            return "COMPACT (rewrite_data_files)" + (f" WHERE {self.where_text}" if self.where else "")
        if self.kind == OVERWRITE:
            return f"overwrite({self.where_text}) with {list(self.rows)}"
        return f"overwritePartitions() with {list(self.rows)}"

    @property
    def where_text(self) -> str:
        return self.where_sql or "true"
