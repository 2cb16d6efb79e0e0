"""Engine profiles: SQL-level commands mapped to Iceberg operations and validations, as data.

The built-in profiles live in ``models/profiles/*.yaml``; users add their own files there or in
a folder named by ``ICECHECK_PROFILES``. A profile is only data: the planner in ``commands.py``
interprets it, so no engine is a code branch.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from functools import lru_cache

from . import operations as ops
from .commands_spec import COMMANDS, COPY_ON_WRITE, EQUALITY_UPSERT, MERGE_ON_READ, UPSERT

PROFILE_VALIDATIONS = ("from_snapshot", "filter", "no_conflicting_data", "no_conflicting_deletes",
                       "no_conflicting_data_files", "no_conflicting_delete_files",
                       "deleted_files", "data_files_exist", "starting_sequence_number",
                       "files_exist", "deleted_data_files_by_filter")
# How a MERGE commits the rows of unmatched keys: in its own operation (None) or, when no key
# matches, as a separate fast append with no validation (PyIceberg's upsert).
INSERT_MODES = ("fast_append",)
ISOLATION_LEVELS = ("serializable", "snapshot", "none")


# A command that matches no row, per engine (``empty:`` of a command rule):
#   snapshot  commit an operation with no files, through the whole commit path with its
#             validations (Java's SnapshotProducer commits empty snapshots; Spark 3.5 + Iceberg
#             1.10 adds an empty overwrite/delete snapshot for a DELETE/UPDATE/MERGE matching
#             nothing: scenarios/builtin/commands/no_match_*.yaml);
#   validate  no snapshot, but the commit refreshes and validates the operation's window (the
#             PyIceberg 0.12 installed here: Transaction.commit_transaction, "An empty staged
#             output (e.g. a delete whose plan matched nothing) ... run concurrency validation");
#   noop      nothing at all (the command ends at its begin).
EMPTY_SNAPSHOT, EMPTY_VALIDATE, EMPTY_NOOP = "snapshot", "validate", "noop"
EMPTY_MODES = (EMPTY_SNAPSHOT, EMPTY_VALIDATE, EMPTY_NOOP)
# the commands whose rule may set drop_strict_matches (those that delete by a filter)
DROP_STRICT_COMMANDS = ("DELETE", "OVERWRITE", "OVERWRITE_PARTITIONS")


@dataclass(frozen=True)
class CommandRule:
    operation: str
    mode: str | None
    validations: tuple[str, ...]
    inserts: str | None = None
    # What the engine does when the command changes no row (see EMPTY_MODES).
    empty: str = "snapshot"
    # DELETE only: the engine deletes whole files by metadata when the filter selects them
    # (Spark's SparkTable.canDeleteWhere -> deleteWhere: a DeleteFiles with the row filter).
    metadata_delete: bool = False
    # DELETE, OVERWRITE, OVERWRITE_PARTITIONS: before rewriting row by row, the engine drops
    # whole every data file whose column metrics prove all its rows match the filter
    # (PyIceberg's Transaction.delete: _DeleteFiles._compute_deletes, _StrictMetricsEvaluator
    # of the whole filter, no partition residual).
    drop_strict_matches: bool = False

    def summary(self) -> str:
        mode = f" ({self.mode})" if self.mode else ""
        vals = ", ".join(self.validations) or "no validation"
        ins = f"; unmatched inserts: {self.inserts}" if self.inserts else ""
        emp = f"; matching no row: {self.empty}" if self.empty != EMPTY_SNAPSHOT else ""
        md = "; whole files: DeleteFiles by metadata" if self.metadata_delete else ""
        drop = ("; drops files whose metrics match the filter whole"
                if self.drop_strict_matches else "")
        return f"{ops.JAVA_NAMES[self.operation]}{mode}: {vals}{ins}{emp}{md}{drop}"


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    engine: str
    isolation: str
    commands: dict
    validate_on_first_attempt: bool = True
    source: str = ""
    # a retry that finds its own snapshot id already in the table stops, committed (PyIceberg)
    idempotent_retry: bool = False
    # a copy-on-write command writes what it keeps of each rewritten file into a file of its
    # own and its new rows into others (PyIceberg: overwrite = delete(filter), which rewrites
    # each file apart, + append), instead of one file per partition with both
    separate_rewrites: bool = False
    # its conflict checks are PyIceberg's (pyiceberg/table/update/validate.py): the conflict
    # filter is evaluated on each file's metrics alone, with no partition projection, and they
    # fail with PyIceberg's messages where the model has them ("Added data files were found
    # matching the filter for snapshots {...}!"), not Java's
    pyiceberg_validation: bool = False
    # its overwrites keep every delete file (PyIceberg's _OverwriteFiles._existing_manifests
    # rewrites data manifests only; a delete manifest is kept as it is), where Java drops the
    # delete files older than every remaining data file and the DVs of removed files
    keep_delete_files: bool = False
    # the highest table format version it can commit to (None: any). PyIceberg 0.12 writes v1
    # and v2 manifests, manifest lists and metadata only: staging a snapshot on a v3 table
    # fails, "Cannot write manifest for table version: 3" (models/system.py, _write_metadata)
    max_format_version: int | None = None
    # how many times the engine retries a lost swap when the table sets no
    # commit.retry.num-retries (iceberg-go: 0, table/properties.go); None: Java's default (4)
    commit_retries: int | None = None

    def rule(self, command: str) -> CommandRule:
        try:
            return self.commands[command]
        except KeyError:
            raise KeyError(f"profile {self.name} does not support {command} (it supports "
                           f"{', '.join(self.commands)})") from None


#: The table property each engine reads a command's isolation level from, by command kind
#: (a command missing here validates without one: appends, insert-only MERGE, maintenance).
#: Spark 3.5 (SparkWriteConf.isolationLevel for the row-level command: write.delete/update/
#: merge.isolation-level); PyIceberg 0.12 (TableMetadata.isolation_level: an OVERWRITE
#: producer, that is overwrite(df, filter), UPDATE and upsert, reads write.update.isolation-level,
#: every other, delete() and the file-level overwrite (_isolation_operation DELETE), reads
#: write.delete.isolation-level).
_DELETE_LEVEL, _UPDATE_LEVEL, _MERGE_LEVEL = ("write.delete.isolation-level",
                                             "write.update.isolation-level",
                                             "write.merge.isolation-level")
ISOLATION_PROPERTIES = {
    "spark": {"DELETE": _DELETE_LEVEL, "UPDATE": _UPDATE_LEVEL, "MERGE": _MERGE_LEVEL},
    "pyiceberg": {"DELETE": _DELETE_LEVEL, "OVERWRITE_FILES": _DELETE_LEVEL,
                  "UPDATE": _UPDATE_LEVEL, "MERGE": _UPDATE_LEVEL, "OVERWRITE": _UPDATE_LEVEL,
                  "OVERWRITE_PARTITIONS": _UPDATE_LEVEL},
}


#: The table property Spark reads a row-level command's write mode from (SparkWriteConf:
#: deleteMode / updateMode / mergeMode read write.delete.mode, write.update.mode,
#: write.merge.mode; Spark 3.5, Iceberg 1.10.2): two Spark jobs running the same kind of
#: command on one table run it in one mode. Other engines take no mode from the table.
MODE_PROPERTIES = {
    "spark": {"DELETE": "write.delete.mode", "UPDATE": "write.update.mode",
              "MERGE": "write.merge.mode"},
}


def _engine_property(table: dict, profile: "Profile", command: str) -> str | None:
    """``table``'s entry for ``profile``'s engine family (``spark-3.5`` -> ``spark``) and
    ``command``, or None."""
    return table.get(profile.engine.split("-")[0], {}).get(command)


def mode_property(profile: "Profile", command: str) -> str | None:
    """The table property ``profile``'s engine reads ``command``'s write mode from, or None."""
    return _engine_property(MODE_PROPERTIES, profile, command)


def isolation_property(profile: "Profile", command: str) -> str | None:
    """The table property ``profile``'s engine reads ``command``'s isolation level from, or
    None (an engine with no such properties, or a command that takes no level)."""
    return _engine_property(ISOLATION_PROPERTIES, profile, command)


def table_settings(uses) -> tuple[dict[str, str], str | None]:
    """(the write-mode and isolation-level table properties a real table needs so that every
    engine runs each command as its writer's profile says, why no one table can or None).

    ``uses``: (writer, profile, command kind) for each command the writers run. Each engine
    reads a command's mode and level from a table property (``MODE_PROPERTIES``,
    ``ISOLATION_PROPERTIES``), so writers on different profiles share one real table when the
    writers reading each property ask for one value: Spark DELETE jobs at snapshot isolation
    beside Spark MERGE jobs and PyIceberg upserts at serializable (``write.delete`` and
    ``write.merge|update.isolation-level``). A Spark DELETE and a PyIceberg delete both read
    ``write.delete.isolation-level``: at two levels, no one table runs them."""
    need: dict[str, dict[str, list[str]]] = {}      # property -> value -> "w1 DELETE (profile)"
    for writer, profile, command in uses:
        rule = profile.commands.get(command)
        if rule is None:
            continue
        who = f"{writer} {command} ({profile.name})"
        for key, value in ((mode_property(profile, command), rule.mode),
                           (isolation_property(profile, command),
                            profile.isolation if profile.isolation != "none" else None)):
            if key is not None and value:
                users = need.setdefault(key, {}).setdefault(value, [])
                if who not in users:
                    users.append(who)
    split = {k: v for k, v in sorted(need.items()) if len(v) > 1}
    if split:
        return {}, "; ".join(
            f"one table has one {key}, and the writers ask for "
            + " and ".join(f"{value} ({', '.join(users)})" for value, users in sorted(v.items()))
            for key, v in split.items())
    return {k: next(iter(v)) for k, v in sorted(need.items())}, None


def profile_dirs() -> list[str]:
    dirs = [os.path.join(os.path.dirname(__file__), "profiles")]
    extra = os.environ.get("ICECHECK_PROFILES")
    if extra:
        dirs.extend(p for p in extra.split(os.pathsep) if p)
    return dirs


def _parse_rule(ctx, node, profile: str, command: str) -> CommandRule:
    node = ctx.mapping(node, f"profile {profile}: {command}")
    ctx.keys(node, {"operation", "mode", "validations", "inserts", "empty", "metadata_delete",
                    "drop_strict_matches"}, f"profile {profile}: {command}")
    op = node.get("operation")
    if op not in ops.KINDS:
        raise ctx.fail(f"profile {profile}: {command}: unknown operation {op!r}; expected one of "
                       f"{', '.join(ops.KINDS)}", node, "operation")
    mode = node.get("mode")
    if command == UPSERT and mode != EQUALITY_UPSERT:
        raise ctx.fail(f"profile {profile}: UPSERT: mode must be {EQUALITY_UPSERT}", node, "mode")
    if command != UPSERT and mode not in (None, COPY_ON_WRITE, MERGE_ON_READ):
        raise ctx.fail(f"profile {profile}: {command}: mode must be {COPY_ON_WRITE} or "
                       f"{MERGE_ON_READ}", node, "mode")
    vals = node.get("validations") or []
    vals = ctx.seq(vals, "validations", node, "validations") if vals else []
    for i, v in enumerate(vals):
        if v not in PROFILE_VALIDATIONS:
            raise ctx.fail(f"profile {profile}: {command}: unknown validation {v!r}; expected one "
                           f"of {', '.join(PROFILE_VALIDATIONS)}", vals, i)
    inserts = node.get("inserts")
    if inserts is not None and (command != "MERGE" or inserts not in INSERT_MODES):
        raise ctx.fail(f"profile {profile}: {command}: inserts is a MERGE option and must be one "
                       f"of {', '.join(INSERT_MODES)}", node, "inserts")
    empty = node.get("empty", EMPTY_SNAPSHOT)
    if empty not in EMPTY_MODES:
        raise ctx.fail(f"profile {profile}: {command}: empty must be one of "
                       f"{', '.join(EMPTY_MODES)}", node, "empty")
    md = node.get("metadata_delete", False)
    if not isinstance(md, bool) or (md and command != "DELETE"):
        raise ctx.fail(f"profile {profile}: {command}: metadata_delete is a DELETE option and "
                       f"must be true or false", node, "metadata_delete")
    drop = node.get("drop_strict_matches", False)
    if not isinstance(drop, bool) or (drop and command not in DROP_STRICT_COMMANDS):
        raise ctx.fail(f"profile {profile}: {command}: drop_strict_matches is an option of "
                       f"{', '.join(DROP_STRICT_COMMANDS)} and must be true or false", node,
                       "drop_strict_matches")
    if drop and mode != COPY_ON_WRITE:
        raise ctx.fail(f"profile {profile}: {command}: drop_strict_matches needs mode "
                       f"{COPY_ON_WRITE}", node, "drop_strict_matches")
    return CommandRule(op, mode, tuple(vals), inserts, empty, md, drop)


def _parse_file(path: str) -> dict[str, Profile]:
    from icecheck.scenarios.yamlload import Ctx as _Ctx, load_yaml_file

    ctx = _Ctx(path)
    doc = ctx.mapping(load_yaml_file(path), "a profile file")
    return parse_profiles(ctx, ctx.mapping(doc.get("profiles"), "profiles", doc, "profiles"),
                          path)


def parse_profiles(ctx, profiles, path: str) -> dict[str, Profile]:
    """The profiles of a ``profiles:`` mapping (a profile file's, or a pipeline's own: ``ctx``
    names the file and its lines)."""
    out = {}
    for name, node in profiles.items():
        node = ctx.mapping(node, f"profile {name}", profiles, name)
        flags = ("validate_on_first_attempt", "idempotent_retry", "separate_rewrites",
                 "pyiceberg_validation", "keep_delete_files")
        ctx.keys(node, {"description", "engine", "isolation", "commands", "max_format_version",
                        "commit_retries", *flags}, f"profile {name}")
        retries = node.get("commit_retries")
        if retries is not None and (type(retries) is not int or not 0 <= retries <= 100):
            raise ctx.fail(f"profile {name}: commit_retries must be an integer in [0, 100]",
                           node, "commit_retries")
        max_fv = node.get("max_format_version")
        if max_fv is not None and (type(max_fv) is not int or max_fv not in (1, 2, 3)):
            raise ctx.fail(f"profile {name}: max_format_version must be 1, 2 or 3", node,
                           "max_format_version")
        for flag in flags:
            if flag in node and not isinstance(node[flag], bool):
                raise ctx.fail(f"profile {name}: {flag} must be true or false", node, flag)
        isolation = node.get("isolation", "none")
        if isolation not in ISOLATION_LEVELS:
            raise ctx.fail(f"profile {name}: isolation must be one of "
                           f"{', '.join(ISOLATION_LEVELS)}", node, "isolation")
        cmds = ctx.mapping(node.get("commands"), f"profile {name}: commands", node, "commands")
        rules = {}
        for cmd, rule in cmds.items():
            if cmd not in COMMANDS:
                raise ctx.fail(f"profile {name}: unknown command {cmd!r}; expected one of "
                               f"{', '.join(COMMANDS)}", cmds, cmd)
            rules[cmd] = _parse_rule(ctx, rule, name, cmd)
        out[str(name)] = Profile(str(name), str(node.get("description", "")),
                                 str(node.get("engine", "")), isolation, rules,
                                 bool(node.get("validate_on_first_attempt", True)), path,
                                 bool(node.get("idempotent_retry", False)),
                                 bool(node.get("separate_rewrites", False)),
                                 bool(node.get("pyiceberg_validation", False)),
                                 bool(node.get("keep_delete_files", False)), max_fv,
                                 retries)
    return out


@lru_cache(maxsize=None)
def _load(dirs: tuple[str, ...]) -> dict[str, Profile]:
    from icecheck.scenarios.errors import InputError

    out: dict[str, Profile] = {}
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "*.yaml"))):
            for name, prof in _parse_file(path).items():
                if name in out:
                    raise InputError(f"profile {name} is defined twice (also in "
                                     f"{out[name].source})", path)
                out[name] = prof
    return out


#: profiles a configuration carries itself (a pipeline's ``profiles:``): name -> (the YAML
#: text of its definition, the Profile). A configuration registers them as it is built, so
#: anything that replays it (a trace, a Spark executor) knows them (``register_inline``).
_INLINE: dict[str, tuple[str, "Profile"]] = {}


def inline_text(profiles: dict) -> str:
    """The canonical YAML text of a ``profiles:`` mapping's plain data (what a configuration
    carries: ``ExploreConfig.inline_profiles``)."""
    import json

    import yaml
    return yaml.safe_dump({"profiles": json.loads(json.dumps(profiles))}, sort_keys=True)


def register_inline(text: str, source: str) -> tuple[str, ...]:
    """Register the profiles of ``text`` (``inline_text``); their names. A name of a built-in
    or ``$ICECHECK_PROFILES`` profile is refused (an inline profile cannot redefine one);
    registering a name again replaces its definition."""
    from icecheck.scenarios.errors import InputError
    from icecheck.scenarios.yamlload import Ctx as _Ctx, load_yaml

    ctx = _Ctx(source)
    doc = ctx.mapping(load_yaml(text, source), "profiles")
    node = ctx.mapping(doc.get("profiles"), "profiles", doc, "profiles")
    shipped = _load(tuple(profile_dirs()))
    for name in node:
        if name in shipped:
            raise InputError(f"profile {name} is already defined (in {shipped[name].source}); "
                             f"a profile of the file's own needs a name of its own",
                             source, node.line_of(name))
    parsed = parse_profiles(ctx, node, source)
    for name, prof in parsed.items():
        _INLINE[name] = (text, prof)
    return tuple(parsed)


def load_profiles() -> dict[str, Profile]:
    """Every profile: the built-in ones and those of the folders ``$ICECHECK_PROFILES`` names.
    A malformed profile file is an ``InputError`` naming its file and line; so is an entry of
    ``$ICECHECK_PROFILES`` that is not a folder (a typo would otherwise hide every profile it
    was meant to add, and the error would be an "unknown profile" far from its cause)."""
    from icecheck.scenarios.errors import InputError

    dirs = profile_dirs()
    for d in dirs[1:]:
        if not os.path.isdir(d):
            what = "is a file, not a folder" if os.path.exists(d) else "does not exist"
            raise InputError(f"names {d!r}, which {what}: it names folders of profile files "
                             f"(*.yaml), separated by {os.pathsep!r}", "ICECHECK_PROFILES")
    shipped = _load(tuple(dirs))
    if not _INLINE:
        return shipped
    return {**shipped, **{name: prof for name, (_, prof) in _INLINE.items()}}


def get_profile(name: str) -> Profile:
    profiles = load_profiles()
    if name not in profiles:
        raise KeyError(f"unknown profile {name!r}; known: {', '.join(sorted(profiles))}")
    return profiles[name]


def property_conflict(profile: Profile, command: str, properties: dict) -> str | None:
    """Why ``profile`` cannot run ``command`` on a table with these ``properties``, or None.

    The engines read a row-level command's write mode and isolation level from the table
    (``MODE_PROPERTIES``, ``ISOLATION_PROPERTIES``), and a profile fixes both: a table whose
    ``write.delete.mode`` is merge-on-read runs every Spark DELETE merge-on-read, whatever
    profile a job was described with. The model takes mode and level from the profile (the
    conformance targets write the profile's into the table), so a property that says otherwise
    would be silently ignored; this names it and the profiles that agree with the table."""
    try:
        rule = profile.rule(command)
    except KeyError:
        return None
    wrong = []
    mode_key, level_key = mode_property(profile, command), isolation_property(profile, command)
    if mode_key in properties and rule.mode and str(properties[mode_key]) != rule.mode:
        wrong.append((mode_key, rule.mode))
    if level_key in properties and profile.isolation in ("serializable", "snapshot") \
            and str(properties[level_key]) != profile.isolation:
        wrong.append((level_key, profile.isolation))
    if not wrong:
        return None
    agree = sorted(
        p.name for p in load_profiles().values()
        if p.engine == profile.engine and command in p.commands
        and (mode_key not in properties or str(properties[mode_key]) == p.commands[command].mode)
        and (level_key not in properties or str(properties[level_key]) == p.isolation))
    said = ", ".join(f"{k}: {properties[k]}" for k, _ in wrong)
    has = ", ".join(f"{k.rsplit('.', 1)[-1]} {v}" for k, v in wrong)
    return (f"profile {profile.name} runs {command} with {has}, but table.properties sets "
            f"{said} (the engine reads it from the table); "
            + (f"use {' or '.join(agree)}" if agree else "no profile of this engine agrees"))
