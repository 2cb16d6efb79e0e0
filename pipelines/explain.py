"""How a pipeline's commands were read, in words: for each job, each command (and each of its
alternatives) with the operation its engine commits, its write mode and the checks its engine
enables (the profile's ``CommandRule``). A passing verdict lists it, so that a team can see that
icecheck understood its jobs, and a surprising verdict starts from here.
"""

from __future__ import annotations

import re

from icecheck.models.profiles import get_profile

from .load import Pipeline

SHOWN = 4    # alternatives listed per command (a template over a domain has one per value)

#: What each command is, as the team writes it (docs/scenario-format.md, "Commands"): the form a
#: verdict lists beside the operation the engine commits, so a reader checks both halves.
FORMS = {
    "INSERT": "INSERT INTO t VALUES ...",
    "DELETE": "DELETE FROM t WHERE ...",
    "UPDATE": "UPDATE t SET ... WHERE ...",
    "MERGE": "MERGE INTO t USING rows ON key WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED "
             "THEN INSERT *",
    "MERGE_INSERT": "MERGE INTO t USING rows ON key WHEN NOT MATCHED THEN INSERT * (no MATCHED "
                    "clause)",
    "COMPACT": "CALL system.rewrite_data_files(...)",
    "OVERWRITE": "overwrite(filter) / static INSERT OVERWRITE",
    "OVERWRITE_PARTITIONS": "overwritePartitions() / dynamic INSERT OVERWRITE",
    "OVERWRITE_FILES": "a file-level overwrite (delete_data_file + append_data_file)",
    "REWRITE_POSITION_DELETES": "CALL system.rewrite_position_delete_files(...)",
    "REWRITE_MANIFESTS": "CALL system.rewrite_manifests(...)",
    "EXPIRE": "CALL system.expire_snapshots(..., retain_last => N)",
    "REMOVE_ORPHAN_FILES": "CALL system.remove_orphan_files(..., older_than => N ticks ago)",
    "ADD_FILES": "add_files: register a Parquet file written elsewhere",
    "UPSERT": "one checkpoint of an upsert sink (equality deletes, then the rows)",
}
#: where PyIceberg's API differs from the SQL form
PYICEBERG_FORMS = {
    "INSERT": "tbl.append(rows)",
    "DELETE": "tbl.delete(filter)",
    "UPDATE": "a read, then tbl.overwrite(rows, filter)",
    "MERGE": "tbl.upsert(rows)",
    "MERGE_INSERT": "tbl.upsert(rows, when_matched_update_all=False)",
    "OVERWRITE": "tbl.overwrite(rows, filter)",
    "OVERWRITE_PARTITIONS": "tbl.dynamic_partition_overwrite(rows)",
    "ADD_FILES": "tbl.add_files([path])",
}


def _command(c) -> str:
    """A command's one-line form: its SQL word and its arguments as written (templates already
    expanded: one line per alternative)."""
    d = dict(c)
    sql = str(d.pop("sql", "?"))
    args = ", ".join(f"{k}: {_value(v)}" for k, v in d.items())
    return f"{sql}" + (f" ({args})" if args else "")


def _value(v) -> str:
    if isinstance(v, tuple) and v and all(isinstance(x, tuple) and len(x) == 2
                                          and isinstance(x[0], str) for x in v):
        return "{" + ", ".join(f"{k}: {_value(x)}" for k, x in v) + "}"
    if isinstance(v, tuple):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return str(v)


def command_lines(p: Pipeline) -> list[str]:
    """``- job `name` (profile): SQL -> Operation (mode): checks`` per command."""
    names = {f"w{i}": name for i, (name, _) in enumerate(p.jobs, 1)}
    lines = []
    for i, ((name, profile), prog) in enumerate(zip(p.jobs, p.config.writers), 1):
        prof = get_profile(profile)
        rules = prof.commands
        forms = {**FORMS, **(PYICEBERG_FORMS if prof.engine.startswith("pyiceberg") else {})}
        client = next((c for c in p.config.clients if c[0] == i), None)
        lines.append(f"- job `{name}` ({profile}" + (f", {client_text(client)}" if client else "")
                     + "):")
        sink = next((s for s in p.config.sinks if s[0] == i), None)
        if sink is not None:
            from icecheck.models import lifecycle as life
            runs, commits = life.describe(life.mode_of(prof.engine), sink[1], sink[2])
            lines.append(f"  - runs as {runs}")
        for n, entry in enumerate(prog, 1):
            for k, alt in enumerate(entry[:SHOWN]):
                sql = str(dict(alt).get("sql", "")).upper()
                rule = rules.get(sql)
                how = rule.summary() if rule is not None else "not modelled for this profile"
                if rule is not None and dict(alt).get("write_options"):
                    from icecheck.models.write_options import describe_options
                    how += (" (the profile's); "
                            + describe_options(sql, dict(dict(alt)["write_options"]), prof))
                if sink is not None:
                    how = commits
                head = f"{n}." if k == 0 else f"{n}. or"
                form = f" = {forms[sql]}" if sql in forms and k == 0 else ""
                lines.append(f"  - {head} {job_text(_command(alt), names)}{form} -> {how}")
            if len(entry) > SHOWN:
                lines.append(f"  - {n}. or {len(entry) - SHOWN} more alternatives (the "
                             f"template's other values)")
    return lines


def client_text(client: tuple) -> str:
    """How a job's own catalog client commits (models/clients.py), in words."""
    from icecheck.models.clients import HMS_LOCK
    _, kind, faults, applied_failed, name = client
    swap = ("takes the metastore lock, checks the location, then writes without comparing "
            "(beside jobs that do not lock)" if kind == HMS_LOCK else f"swap {kind}")
    flags = [f for f, on in (("reply lost", faults), ("applied but failed", applied_failed)) if on]
    return f"client {name}: {swap}" + (f"; faults: {', '.join(flags)}" if flags else "")


def writer_names(p: Pipeline, trace: dict) -> dict[str, str]:
    """Each writer of ``trace`` (renamed by first action, idle ones dropped) -> its job's name,
    through ``found_by.writer_of`` (engines.explicit.trace_for)."""
    of = (trace.get("found_by") or {}).get("writer_of") or {}
    n = len(trace["config"]["writers"])
    return {f"w{i}": p.job_of(of.get(f"w{i}", f"w{i}")) for i in range(1, n + 1)}


# a writer, an operation tag or an action; not a file the model named after its writer
# (``w2-1-p1``: the model's names, kept as they are so that a reader can find them in the trace)
_WRITER = re.compile(r"\bw(\d+)(?:\.(\d+)|\.([a-z_]+(?:#\d+)?))?(?![\w-])")


def job_text(text: str, names: dict[str, str]) -> str:
    """``text`` with each writer named by its job: ``w2`` -> "the job `gdpr-delete`", an
    operation tag ``w2.1`` (a command's row values, a cycle's operations) -> ``gdpr-delete#1``
    (the job's first command), an action ``w2.cas`` -> ``gdpr-delete.cas``."""
    def sub(m: re.Match) -> str:
        name = names.get(f"w{m.group(1)}")
        if name is None:
            return m.group(0)
        if m.group(2):
            return f"{name}#{m.group(2)}"
        if m.group(3):
            return f"{name}.{m.group(3)}"
        return f"the job `{name}`"
    return _WRITER.sub(sub, text)
