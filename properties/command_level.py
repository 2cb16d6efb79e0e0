"""The isolation level a violation is judged at when the commit that decided it ran at its own
level, not its profile's: Spark's overwrites, whose level is the write's ``isolation-level``
option, absent by default (models/write_options.py).

A violation is decided by a commit: a lost write, undelete, duplicate or inconsistent read by
the commit whose version first shows it (the oracle's mismatch position), a dependency cycle by
the last of its operations to commit (optimistic concurrency validates a commit against what
committed before it, so only that commit's checks could have refused the history; the same
reasoning as ``expectations._responsible``). When that commit is such an overwrite, the
violation's details get ``command_isolation`` (``serializable``, ``snapshot`` or ``none``),
which the expectation table's ``isolation:`` condition reads in place of the profile's
(properties/expectations.py ``_matches``); a lost write it decided also gets
``unread_by_remover``: whether every row it lost was absent from what that overwrite read
(appended after its base), which is what Spark's ``snapshot`` level leaves unchecked
(SparkWrite.java:329-331, 374-376 @ apache-iceberg-1.10.2: validateNoConflictingDeletes only).
"""

from __future__ import annotations

from dataclasses import replace

from icecheck.models.write_options import command_isolation


def _profile_of(h, writer: str):
    planner = getattr(h.model.config, "planner", None)
    got = getattr(planner, "writer_profiles", {}).get(writer)
    return got if got is not None else getattr(planner, "profile", None)


def deciding_op(a, v):
    """The committed operation that decided ``v`` (see the module docstring), or None."""
    h = a.history
    d = v.details or {}
    if v.property == "isolation":
        ops = [a.op(label) for label in d.get("ops", ())]
        ops = [o for o in ops if o is not None and o.position is not None]
        return max(ops, key=lambda o: o.position) if ops else None
    seq = d.get("first_sequence_number")
    if seq is None:
        return None
    for snap, op in zip(h.lineage, h.lineage_ops):
        if snap.sequence_number == seq:
            return op
    return None


def annotate(a, violations) -> list:
    """``violations`` with ``command_isolation`` (and, for a lost write, ``unread_by_remover``)
    in the details of those decided by a commit that ran at its own level."""
    out = []
    for v in violations:
        op = deciding_op(a, v)
        profile = _profile_of(a.history, op.writer) if op is not None else None
        level = command_isolation(profile, op.intent) if profile is not None else None
        if level is None:
            out.append(v)
            continue
        details = dict(v.details or {})
        details["command_isolation"] = level
        message = v.message
        checks = {"none": "which validates nothing",
                  "snapshot": "which checks concurrent deletes only",
                  "serializable": "which checks concurrent inserts and deletes"}[level]
        by = f"{a.who(op.label)}, computed at snapshot {op.base_snapshot_id}"
        if v.property == "lost_write" and details.get("level") == "row":
            base = {rv.values for rv in a.history.rows(op.base_snapshot_id)}
            unread = all(tuple(r) not in base for r in details.get("lost_rows", ()))
            details["unread_by_remover"] = unread
            details["removed_by"] = op.label
            message += (f" It was dropped by {by}, which replaced it at commit without having "
                        f"read it" if unread else
                        f" It was replaced by {by}, which wrote back what it had read")
            message += f" (an overwrite at isolation level {level}, {checks})."
        elif v.property == "undelete":
            message += (f" It came back with {by}, which wrote back what it had read (an "
                        f"overwrite at isolation level {level}, {checks}).")
        out.append(replace(v, message=message, details=details))
    return out
