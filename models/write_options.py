"""Per-command write options: the Spark DataFrame write options that change what a write
validates (``isolation-level``, ``validate-from-snapshot-id``) or what its snapshot records
(``snapshot-property.<key>``), given per command or per job in a pipeline or scenario.

Why per command: Spark reads an overwrite's isolation level from the write's own options and
from nowhere else. ``SparkWriteConf.isolationLevel()`` parses the write option
``isolation-level`` alone, with no table property and no default (null when absent), and
``validateFromSnapshotId()`` the option ``validate-from-snapshot-id``
(spark/v3.5/spark/src/main/java/org/apache/iceberg/spark/SparkWriteConf.java:443-454 @
apache-iceberg-1.10.2). The two overwrites then validate (SparkWrite.java @ 1.10.2, spark/v3.5):

* ``DynamicOverwrite`` (overwritePartitions(), dynamic INSERT OVERWRITE: ReplacePartitions),
  lines 318-331, and ``OverwriteByFilter`` (overwrite(filter), static INSERT OVERWRITE:
  OverwriteFiles.overwriteByRowFilter), lines 364-376: ``validateFromSnapshot(id)`` only when
  both options are set; at ``serializable`` ``validateNoConflictingData()`` and
  ``validateNoConflictingDeletes()``, at ``snapshot`` ``validateNoConflictingDeletes()``
  alone, with no level nothing at all. Without ``validate-from-snapshot-id`` the starting
  snapshot is null and Java's ``validationHistory`` walks every ancestor
  (MergingSnapshotProducer.java:880-920 @ 1.10.2), so a serializable overwrite fails on any
  data file ever added where it writes. spark/v4.0's SparkWrite.java has the same code at
  lines 321-334 and 367-379.

Observed on Spark 3.5 + Iceberg 1.10.2 (reproducers/spark_insert_overwrite_select_races.py):
``isolation-level=snapshot`` with ``validate-from-snapshot-id`` commits over a concurrent
INSERT into what it overwrites (the row is gone) and fails on a concurrent DELETE ("Found
conflicting deleted files ..."); ``serializable`` fails on the INSERT ("Found conflicting
files ..."); ``serializable`` with no ``validate-from-snapshot-id`` fails with no concurrent
write at all; with no ``isolation-level`` both commit. Spark SQL's INSERT OVERWRITE takes no
write options at all (``INSERT OVERWRITE t WITH (...)`` and ``/*+ OPTIONS(...) */`` are syntax
errors in Spark 3.5), so only a DataFrame write (``df.writeTo(t).option(...)``) can set them.

The row-level commands (DELETE, UPDATE, MERGE) read their level from the table
(``SparkRowLevelOperationBuilder.isolationLevel``: ``write.delete|update|merge
.isolation-level``, spark/v3.5 .../source/SparkRowLevelOperationBuilder.java:95-113 @
1.10.2) and take no write options from SQL; an append (``BatchAppend``, SparkWrite.java:292-306)
validates nothing whatever its options say. So the model accepts ``isolation-level`` and
``validate-from-snapshot-id`` on OVERWRITE and OVERWRITE_PARTITIONS only, and
``snapshot-property.<key>`` on those and on INSERT (a DataFrame append): every Spark write
copies the ``snapshot-property.`` options into its snapshot's summary
(``SparkWriteConf.extraSnapshotMetadata``, SparkWriteConf.java:252-263, set by
``SparkWrite.commitOperation``, SparkWrite.java:208-216; ``SnapshotSummary
.EXTRA_METADATA_PREFIX``). An option a command's engine does not read is refused, never
silently ignored.
"""

from __future__ import annotations

from dataclasses import replace

from . import operations as ops

ISOLATION_LEVEL = "isolation-level"
VALIDATE_FROM = "validate-from-snapshot-id"
SNAPSHOT_PROPERTY = "snapshot-property."
#: the one value of validate-from-snapshot-id a pipeline can name ahead of a run: the snapshot
#: the command read (the id a job passes after reading its table's current snapshot)
READ = "read"
#: Spark's levels, IsolationLevel.fromName (core/src/main/java/org/apache/iceberg/
#: IsolationLevel.java:43-51 @ 1.10.2: any case)
LEVELS = ("serializable", "snapshot")
#: what a command's level is when the write option is absent: no validation
NO_LEVEL = "none"
KNOWN = (ISOLATION_LEVEL, VALIDATE_FROM, SNAPSHOT_PROPERTY + "<key>")

_OVERWRITE_OPTIONS = frozenset({ISOLATION_LEVEL, VALIDATE_FROM, SNAPSHOT_PROPERTY})
#: per engine family, the commands that read write options and which ones (an option named
#: by its kind: ``snapshot-property.`` for every ``snapshot-property.<key>``)
READS = {
    "spark": {"INSERT": frozenset({SNAPSHOT_PROPERTY}),
              "OVERWRITE": _OVERWRITE_OPTIONS,
              "OVERWRITE_PARTITIONS": _OVERWRITE_OPTIONS},
}
#: the commands whose isolation level is their write option (the others' is the profile's)
LEVEL_COMMANDS = ("OVERWRITE", "OVERWRITE_PARTITIONS")


def option_kind(name: str) -> str:
    """``snapshot-property.<key>`` -> ``snapshot-property.``; any other name as it is."""
    return SNAPSHOT_PROPERTY if name.startswith(SNAPSHOT_PROPERTY) else name


def normalized(name: str, value) -> tuple[object, str | None]:
    """(the value as the model holds it, or an error message for a bad name or value)."""
    kind = option_kind(name)
    if kind == SNAPSHOT_PROPERTY:
        if name == SNAPSHOT_PROPERTY:
            return None, f"{name!r} names no summary key: write {SNAPSHOT_PROPERTY}<key>"
        if isinstance(value, (dict, list)) or value is None:
            return None, f"{name} must be a string (a snapshot summary value), not {value!r}"
        # Spark's options are strings: a number or a boolean is recorded as its text
        return (str(value).lower() if isinstance(value, bool) else str(value)), None
    if kind == ISOLATION_LEVEL:
        if not isinstance(value, str) or value.lower() not in LEVELS:
            return None, (f"{name} must be one of {', '.join(LEVELS)} (Spark's "
                          f"IsolationLevel.fromName), not {value!r}")
        return value.lower(), None
    if kind == VALIDATE_FROM:
        if value != READ:
            return None, (f"{name} must be {READ!r} (the snapshot the command read, as a job "
                          f"passes it after reading its table's current snapshot id); a pipeline "
                          f"cannot name a snapshot id ahead of a run, not {value!r}")
        return READ, None
    return None, (f"unknown write option {name!r}; the model follows "
                  f"{', '.join(KNOWN)} (Spark's write options that change what a write "
                  f"validates or records)")


def _family(profile) -> str:
    return profile.engine.split("-")[0]


def read_by(profile, kind: str) -> frozenset:
    """The option kinds ``profile``'s engine reads for command ``kind``."""
    return READS.get(_family(profile), {}).get(kind, frozenset())


def not_read_error(profile, kind: str, name: str) -> str | None:
    """Why ``profile``'s engine does not read option ``name`` on a ``kind`` command, or None."""
    if option_kind(name) in read_by(profile, kind):
        return None
    takers = [f"{c} ({', '.join(sorted(o.replace(SNAPSHOT_PROPERTY, SNAPSHOT_PROPERTY + '<key>') for o in opts))})"
              for c, opts in READS.get(_family(profile), {}).items()]
    where = ("; on this engine " + "; ".join(takers)) if takers else \
        f"; {profile.name} takes no write options (they are Spark's DataFrame write options)"
    if kind in ("DELETE", "UPDATE", "MERGE") and option_kind(name) == ISOLATION_LEVEL \
            and takers:
        where += (f" (Spark reads a {kind}'s level from the table property "
                  f"write.{kind.lower()}.isolation-level: choose it with the job's profile)")
    return f"{profile.name} does not read write option {name!r} on {kind}{where}"


def command_isolation(profile, cmd, rule=None) -> str | None:
    """The isolation level ``cmd`` runs at when its engine reads it from the write's options
    (Spark's overwrites): the option's value, or ``none`` when absent and the profile's rule
    enables no validation; None for every other command (its level is the profile's)."""
    if getattr(cmd, "kind", None) not in LEVEL_COMMANDS or \
            ISOLATION_LEVEL not in read_by(profile, cmd.kind):
        return None
    rule = rule if rule is not None else profile.commands.get(cmd.kind)
    if rule is None or rule.mode is not None:
        return None
    level = dict(cmd.write_options).get(ISOLATION_LEVEL)
    if level is not None:
        return level
    return NO_LEVEL if not rule.validations else None


def apply(op: ops.Operation, cmd, profile) -> ops.Operation:
    """``op`` (planned by the profile) as ``cmd``'s write options change it: the overwrite's
    validations (SparkWrite.java:318-331, 364-376 @ 1.10.2) and the summary properties."""
    options = dict(getattr(cmd, "write_options", ()) or ())
    if not options:
        return op
    changes: dict = {}
    props = tuple((k[len(SNAPSHOT_PROPERTY):], v) for k, v in cmd.write_options
                  if k.startswith(SNAPSHOT_PROPERTY))
    if props:
        changes["summary_properties"] = tuple(op.summary_properties) + props
    level = options.get(ISOLATION_LEVEL)
    if level is not None and op.kind in (ops.OVERWRITE, ops.REPLACE_PARTITIONS) and \
            command_isolation(profile, cmd) is not None:
        changes["validations"] = replace(
            op.validations,
            from_snapshot=VALIDATE_FROM in options,
            no_conflicting_data=level == "serializable",
            no_conflicting_deletes=True)
    return replace(op, **changes) if changes else op


def describe_options(kind: str, written: dict, profile) -> str:
    """``describe`` of a command of ``kind`` with the options as written (a pipeline's)."""
    from types import SimpleNamespace
    options = tuple(sorted((str(k), normalized(str(k), v)[0]) for k, v in written.items()))
    return describe(SimpleNamespace(kind=kind, write_options=options), profile)


def describe(cmd, profile) -> str:
    """What ``cmd``'s write options make its engine do, for the explanation of a pipeline's
    commands (empty without options)."""
    options = dict(getattr(cmd, "write_options", ()) or ())
    if not options:
        return ""
    parts = []
    level = command_isolation(profile, cmd)
    if level is not None:
        if level == NO_LEVEL:
            parts.append("no isolation-level: validates nothing"
                         + (" (validate-from-snapshot-id alone is ignored)"
                            if VALIDATE_FROM in options else ""))
        else:
            checks = ("no_conflicting_data, no_conflicting_deletes" if level == "serializable"
                      else "no_conflicting_deletes")
            start = ("from the snapshot it read" if VALIDATE_FROM in options else
                     "from the table's first snapshot (no validate-from-snapshot-id)")
            parts.append(f"isolation-level {level}: {checks}, {start}")
    props = [f"{k}={v}" for k, v in sorted(options.items()) if k.startswith(SNAPSHOT_PROPERTY)]
    if props:
        parts.append("summary " + ", ".join(p[len(SNAPSHOT_PROPERTY):] for p in props))
    return "write options: " + "; ".join(parts)
