"""Parsing of a command's ``select`` (an overwrite whose rows derive from its own read:
models/rmw.py) and ``write_options`` (Spark's write options: models/write_options.py), each
error naming the file and line of the key or value at fault."""

from __future__ import annotations

from dataclasses import replace

from icecheck.models.commands_spec import OVERWRITE_PARTITIONS
from icecheck.models.rmw import Select
from icecheck.models.write_options import normalized

SELECT_KEYS = {"dedup", "order_by", "set"}


def _columns(ctx, table, node, key: str, what: str) -> tuple[str, ...]:
    value = node[key]
    cols = [value] if isinstance(value, str) else value
    if not isinstance(cols, list) or not cols or not all(isinstance(c, str) for c in cols):
        raise ctx.fail(f"{what} must be a column or a list of columns of table.schema, not "
                       f"{value!r}", node, key)
    for c in cols:
        if c not in table.schema.names:
            raise ctx.fail(f"{what} names {c!r}, which is not a column of the table (its "
                           f"columns: {', '.join(table.schema.names)})", node, key)
    if len(set(cols)) != len(cols):
        raise ctx.fail(f"{what} names a column twice", node, key)
    return tuple(cols)


def parse_select(ctx, table, node, check_value) -> Select:
    """``select: {dedup: [cols], order_by: [cols], set: {col: value}}``; ``check_value`` is the
    scenario format's (passed in: the format imports this module)."""
    snode = ctx.mapping(node["select"], "select (dedup, order_by, set)", node, "select")
    ctx.keys(snode, SELECT_KEYS, "select")
    if not snode:
        raise ctx.fail("select needs dedup or set (an empty select rewrites every row as "
                       "read: write set or dedup)", node, "select")
    dedup = _columns(ctx, table, snode, "dedup", "select.dedup") if "dedup" in snode else ()
    order = _columns(ctx, table, snode, "order_by", "select.order_by") \
        if "order_by" in snode else ()
    if order and not dedup:
        raise ctx.fail("select.order_by chooses the row a dedup keeps: it needs dedup",
                       snode, "order_by")
    sets = ()
    if "set" in snode:
        setnode = ctx.mapping(snode["set"], "select.set", snode, "set")
        if not setnode:
            raise ctx.fail("select.set names no column", snode, "set")
        types = table.schema.types()
        got = {}
        for col, value in setnode.items():
            if col not in types:
                raise ctx.fail(f"select.set sets unknown column {col!r} (the table's columns: "
                               f"{', '.join(table.schema.names)})", setnode, col)
            got[col] = check_value(ctx, types[col], value, setnode, col, f"column {col}")
        sets = tuple(sorted(got.items()))
    if not dedup and not sets:
        raise ctx.fail("select needs dedup or set", node, "select")
    return Select(dedup, order, sets)


def parse_write_options(ctx, node, key: str = "write_options") -> tuple:
    """``write_options: {isolation-level: ..., validate-from-snapshot-id: read,
    snapshot-property.<k>: v}`` as sorted (name, value) pairs; an unknown option or a bad
    value is an error at its own line."""
    onode = ctx.mapping(node[key], "write_options", node, key)
    out = []
    for name, value in onode.items():
        if not isinstance(name, str):
            raise ctx.fail(f"write option {name!r} is not a name", onode, name)
        got, problem = normalized(name, value)
        if problem is not None:
            raise ctx.fail(problem, onode, name)
        out.append((name, got))
    return tuple(sorted(out))


def with_select_and_options(ctx, table, node, cmd, check_value):
    """``cmd`` with the command's ``select`` and ``write_options`` (parse_command's, which
    passes its ``_check_value``)."""
    changes: dict = {}
    if "select" in node:
        if "rows" in node:
            raise ctx.fail(f"a {cmd.kind} has rows or a select, not both (select derives its "
                           f"rows from what it reads)", node, "select")
        changes["select"] = parse_select(ctx, table, node, check_value)
    if cmd.kind == OVERWRITE_PARTITIONS and "where" in node and "select" not in node:
        raise ctx.fail("an OVERWRITE_PARTITIONS replaces the partitions its rows land in: a "
                       "where belongs to a select (what it reads)", node, "where")
    if "write_options" in node:
        changes["write_options"] = parse_write_options(ctx, node)
    return replace(cmd, **changes) if changes else cmd


def check_options_read(ctx, profile, cmd, node) -> None:
    """Each of ``cmd``'s write options is one its engine reads on that command (an option an
    engine ignores is refused, never silently dropped): ``node`` is the command's mapping."""
    from icecheck.models.write_options import not_read_error
    if not cmd.write_options:
        return
    onode = node.get("write_options") if isinstance(node, dict) else None
    for name, _ in cmd.write_options:
        problem = not_read_error(profile, cmd.kind, name)
        if problem is not None:
            if isinstance(onode, dict) and name in onode:
                raise ctx.fail(problem, onode, name)
            raise ctx.fail(problem, node)
