"""Exploration configurations: a table, its initial rows, an engine profile, a catalog, and the
writers' programs of SQL-level commands (each program entry a set of alternatives, so the
interleaving *and* the choice of command are explored).

A configuration is plain data (JSON/YAML-able, see ``as_json``), so it can be stored inside a
trace and rebuilt exactly for replay.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from icecheck.models import catalog as cat
from icecheck.models import operations as ops
from icecheck.models.commands import make_planner
from icecheck.models.files import pairs
from icecheck.models.operations import Operation
from icecheck.models.profiles import get_profile
from icecheck.models.system import ModelConfig, WriterProgram
from icecheck.models.table import Schema, TableConfig
from icecheck.models.transforms import PartitionField, PartitionSpec, parse_transform
from icecheck.scenarios.errors import InputError
from icecheck.scenarios.format import _Ctx, parse_command
from icecheck.scenarios.yamlload import LineDict, LineList

#: the most ticks a configuration's clock may advance (models/clock.py): each tick multiplies
#: the interleavings a search explores
MAX_TICKS = 20
MIX_KINDS = ("insert", "delete", "update", "merge", "compact", "merge_insert", "upsert",
             "cdc_delete", "expire", "rewrite_deletes", "overwrite_files", "rewrite_manifests",
             "add_files")


@dataclass(frozen=True)
class ExploreConfig:
    profile: str
    schema: tuple[tuple[str, str], ...] = (("id", "int"), ("v", "string"))
    partition_spec: tuple[str, ...] = ()
    format_version: int = 2
    properties: tuple = ()
    catalog: str = cat.CAS
    initial_rows: tuple[tuple, ...] = ((1, "v0"), (2, "v0"))
    # writers[i] = program of writer w{i+1}; each entry a tuple of alternative commands (dicts).
    writers: tuple = ()
    faults: bool = False
    crashes: bool = False
    key: str = "id"
    name: str = ""
    # swaps that apply while the catalog answers CommitFailedException (models/system.py)
    phantom_failures: bool = False
    # writer_profiles[i] = the engine profile of writer w{i+1} ("" or absent: ``profile``), so
    # one exploration mixes engines (a Spark job and a PyIceberg script on one table)
    writer_profiles: tuple[str, ...] = ()
    # how many times the logical clock may advance (models/clock.py): remove_orphan_files and
    # expire_snapshots by age compare its ticks; 0 (the default): it never does
    ticks: int = 0
    # schedule constraints between jobs (models/schedule.py): ((kind, i, j), ...) with writer
    # indexes (1-based); kind "never_overlap" or "after" (writer i starts once j has ended)
    schedule: tuple[tuple[str, int, int], ...] = ()
    # judge as a team's gate does (properties/expectations.py ``for_readers``): what the
    # table's readers would see is never allowed, whatever the catalog or isolation level
    protect_readers: bool = False
    # risks a team accepted in its pipeline file (properties/expectations.py ``accepted``):
    # ((property, writer indexes it may involve (() any), reason), ...)
    accepted: tuple[tuple[str, tuple[int, ...], str], ...] = ()
    # writers that run as streaming sinks (models/lifecycle.py): ((writer index, restarts,
    # restart kinds), ...)
    sinks: tuple[tuple[int, int, tuple[str, ...]], ...] = ()
    # each writer's own catalog client (models/clients.py), when a pipeline's job names one:
    # ((writer index, swap, faults, applied_failed, catalog name), ...); () = the catalog's
    clients: tuple[tuple[int, str, bool, bool, str], ...] = ()
    # engine profiles the configuration defines itself (a pipeline's ``profiles:``), as the
    # YAML text models/profiles.register_inline reads; "" for none
    inline_profiles: str = ""

    def profile_of(self, index: int) -> str:
        """The profile of writer ``w{index}`` (1-based)."""
        if index - 1 < len(self.writer_profiles) and self.writer_profiles[index - 1]:
            return self.writer_profiles[index - 1]
        return self.profile

    @property
    def mixed(self) -> bool:
        """Do the writers run on more than one engine profile?"""
        return len({self.profile_of(i) for i in range(1, len(self.writers) + 1)}
                   | {self.profile}) > 1

    @property
    def profile_label(self) -> str:
        """The profile for titles and explanations: ``w1 spark-..., w2 pyiceberg-...`` when mixed."""
        if not self.mixed:
            return self.profile
        return ", ".join(f"w{i} {self.profile_of(i)}" for i in range(1, len(self.writers) + 1))

    def _writer_commands(self):
        """(writer index, its engine profile, the SQL commands its program may run), for each
        writer whose profile is known (the notes below)."""
        from icecheck.models.profiles import get_profile
        for i in range(1, len(self.writers) + 1):
            try:
                profile = get_profile(self.profile_of(i))
            except KeyError:
                continue
            # a program entry's alternatives are kept as tuples of (key, value) pairs
            yield i, profile, {str(dict(alt).get("sql", "")).upper()
                               for entry in self.writers[i - 1] for alt in entry}

    @property
    def isolation_note(self) -> str | None:
        """For a mixed run whose writers' profiles ask for different isolation levels: Spark and
        PyIceberg read a command's level from the table's ``write.delete|update|merge.
        isolation-level`` properties (``profiles.isolation_property``), so two writers whose
        commands read the same property see one level on a real table (the mixed conformance
        target skips such pairings); each violation is judged by the writer whose commit came
        last (``properties.expectations.expectation``).
        The note names the properties such writers share, or says that they share none (a real
        table can then give each its level)."""
        if not self.mixed:
            return None
        from icecheck.models.profiles import isolation_property
        levels: dict[str, list[str]] = {}
        reads: dict[int, tuple[str, set[str]]] = {}       # writer -> (level, properties read)
        for i, profile, commands in self._writer_commands():
            if profile.isolation == "none":
                continue
            levels.setdefault(profile.isolation, []).append(f"w{i}")
            props = {isolation_property(profile, c) for c in commands} - {None}
            reads[i] = (profile.isolation, props)
        if len(levels) < 2:
            return None
        who = "; ".join(f"{level}: {', '.join(ws)}" for level, ws in sorted(levels.items()))
        shared = sorted({p for i, (li, pi) in reads.items() for j, (lj, pj) in reads.items()
                         if i < j and li != lj for p in pi & pj})
        if shared:
            return (f"the writers' profiles ask for different isolation levels ({who}), but "
                    f"writers at different levels run commands that read the same table "
                    f"property ({', '.join(shared)}): on a real table they would see one level; "
                    f"each violation is judged by the writer whose commit came last")
        return (f"the writers' profiles ask for different isolation levels ({who}); their "
                f"commands read different table properties (write.delete/update/merge."
                f"isolation-level), so a real table can give each its level")

    @property
    def mode_note(self) -> str | None:
        """For a mixed run whose writers run one kind of Spark command in different write
        modes (a copy-on-write DELETE beside a merge-on-read DELETE): Spark reads a row-level
        command's mode from the table's ``write.delete|update|merge.mode``
        (``profiles.mode_property``), so on a real table such writers run it in one mode; the
        note names the properties and who runs which mode, so that a violation of such a
        pairing is read as what it is (a DELETE in one mode beside an UPDATE in the other is
        a real table's choice, and gets no note)."""
        if not self.mixed:
            return None
        from icecheck.models.profiles import mode_property
        modes: dict[str, dict[str, set[str]]] = {}     # property -> mode -> writers
        for i, profile, commands in self._writer_commands():
            for command in commands:
                prop = mode_property(profile, command)
                rule = profile.commands.get(command)
                if prop is not None and rule is not None and rule.mode:
                    modes.setdefault(prop, {}).setdefault(rule.mode, set()).add(f"w{i}")
        split = {p: m for p, m in sorted(modes.items()) if len(m) > 1}
        if not split:
            return None
        who = "; ".join(f"{p}: " + ", ".join(f"{mode} by {', '.join(sorted(ws))}"
                                              for mode, ws in sorted(m.items()))
                        for p, m in split.items())
        return (f"the writers' profiles run one kind of command in different write modes "
                f"({who}): on a real table they would read one mode from that property; "
                f"each violation is judged by the writer whose commit came last")

    def writer_profile(self, writer: str) -> str:
        """The profile of writer ``writer`` (``"w2"``), for the expectation table's judgement
        of a violation by the writers it involves (``properties.expectations.expectation``)."""
        return self.profile_of(int(writer[1:])) if writer[1:].isdigit() else self.profile

    @cached_property
    def judged_profiles(self):
        """What the expectation table judges this run under: the profile, or for a mixed run
        the tuple of every writer's profile (``properties.expectations.expectation``). Cached
        (the configuration is frozen): a search asks at every evaluation."""
        if not self.mixed:
            return self.profile
        return tuple(sorted({self.profile_of(i) for i in range(1, len(self.writers) + 1)}))

    def as_json(self) -> dict:
        doc = {
            "name": self.name, "profile": self.profile,
            "table": {"schema": dict(self.schema), "partition_spec": list(self.partition_spec),
                      "format_version": self.format_version, "properties": dict(self.properties)},
            "catalog": self.catalog, "initial_rows": [list(r) for r in self.initial_rows],
            "writers": [[list(entry) for entry in prog] for prog in self.writers],
            "faults": self.faults, "crashes": self.crashes, "key": self.key,
        }
        if self.phantom_failures:  # only when on: configurations recorded before stay as they were
            doc["phantom_failures"] = True
        if any(self.writer_profiles):  # likewise: single-profile traces keep their old form
            doc["writer_profiles"] = list(self.writer_profiles)
        if self.schedule:
            doc["schedule"] = [list(c) for c in self.schedule]
        if self.ticks:   # only with a clock: configurations recorded before stay as they were
            doc["ticks"] = self.ticks
        if self.protect_readers:
            doc["protect_readers"] = True
        if self.accepted:
            doc["accepted"] = [{"property": p, "writers": list(ws), "reason": r}
                               for p, ws, r in self.accepted]
        if self.sinks:
            doc["sinks"] = [{"writer": i, "restarts": n, "restart": list(kinds)}
                            for i, n, kinds in self.sinks]
        if self.inline_profiles:
            doc["profiles_yaml"] = self.inline_profiles
        if self.clients:
            doc["clients"] = [{"writer": i, "swap": k, "faults": f, "applied_failed": a,
                               "name": n} for i, k, f, a, n in self.clients]
        return doc

    @staticmethod
    def from_json(doc: dict, path: str = "<config>") -> "ExploreConfig":
        inline = doc.get("profiles_yaml", "") if isinstance(doc, dict) else ""
        if inline:
            if not isinstance(inline, str):
                raise InputError("malformed configuration: profiles_yaml must be the YAML text "
                                 "of a profiles: mapping", path)
            from icecheck.models.profiles import register_inline
            register_inline(inline, path)
        try:
            t = doc["table"]
            writers = tuple(tuple(tuple(_freeze(c) for c in entry) for entry in prog)
                            for prog in doc["writers"])
            cfg = ExploreConfig(
                profile=doc["profile"], schema=tuple(t["schema"].items()),
                partition_spec=tuple(t.get("partition_spec", ())),
                format_version=int(t.get("format_version", 2)),
                properties=tuple(sorted(t.get("properties", {}).items())),
                catalog=doc.get("catalog", cat.CAS),
                initial_rows=tuple(tuple(r) for r in doc.get("initial_rows", ())),
                writers=writers, faults=bool(doc.get("faults", False)),
                crashes=bool(doc.get("crashes", False)), key=doc.get("key", "id"),
                name=doc.get("name", ""),
                phantom_failures=bool(doc.get("phantom_failures", False)),
                writer_profiles=tuple(doc.get("writer_profiles", ())),
                schedule=tuple(tuple(c) for c in doc.get("schedule", ())),
                ticks=doc.get("ticks", 0),
                protect_readers=bool(doc.get("protect_readers", False)),
                accepted=tuple((a["property"], tuple(a.get("writers", ())), a["reason"])
                               for a in doc.get("accepted", ())),
                sinks=tuple((int(x["writer"]), int(x.get("restarts", 1)),
                             tuple(x.get("restart", ("checkpoint",))))
                            for x in doc.get("sinks", ())),
                inline_profiles=inline,
                clients=tuple((int(x["writer"]), str(x["swap"]), bool(x.get("faults", False)),
                               bool(x.get("applied_failed", False)), str(x.get("name", "")))
                              for x in doc.get("clients", ())))
        except KeyError as e:
            raise InputError(f"malformed configuration: missing key {e.args[0]!r} (an "
                             f"exploration configuration needs profile, table.schema and "
                             f"writers)", path) from None
        except (TypeError, AttributeError, ValueError) as e:
            raise InputError(f"malformed configuration: a value of the wrong type or shape "
                             f"({e})", path) from None
        check_config(cfg, doc, path)
        build_model_config(cfg, path)  # validate everything now, with a clear message
        return cfg


def check_config(cfg: ExploreConfig, doc: dict, path: str) -> None:
    """Types ``int()``/``bool()`` would silently coerce: a configuration read from a file
    must say exactly what it means (``2.0`` or ``true`` is no format version)."""
    from icecheck.models.table import COLUMN_TYPES, INT_RANGES, property_error

    def bad(message: str) -> InputError:
        return InputError(f"malformed configuration: {message}", path)

    if type(cfg.ticks) is not int or not 0 <= cfg.ticks <= MAX_TICKS:
        raise bad(f"ticks must be an integer from 0 to {MAX_TICKS}, not {cfg.ticks!r}")
    fv = doc["table"].get("format_version", 2)
    if type(fv) is not int or fv not in (2, 3):
        raise bad(f"table.format_version must be 2 or 3, not {fv!r}")
    for flag in ("faults", "crashes", "phantom_failures", "protect_readers"):
        if not isinstance(doc.get(flag, False), bool):
            raise bad(f"{flag} must be true or false, not {doc[flag]!r}")
    if not isinstance(cfg.profile, str) or not isinstance(cfg.catalog, str):
        raise bad("profile and catalog must be strings")
    wp = doc.get("writer_profiles", [])
    if not isinstance(wp, list) or not all(isinstance(p, str) for p in wp):
        raise bad(f"writer_profiles must be a list of profile names, not {wp!r}")
    if len(wp) > len(cfg.writers):
        raise bad(f"writer_profiles names {len(wp)} profiles for {len(cfg.writers)} writers")
    from icecheck.models.schedule import schedule_error
    problem = schedule_error(doc.get("schedule", []), len(cfg.writers))
    if problem:
        raise bad(problem)
    from icecheck.properties.violation import PROPERTIES
    for p, ws, r in cfg.accepted:
        if p not in PROPERTIES or not isinstance(r, str) or not all(
                type(i) is int and 1 <= i <= len(cfg.writers) for i in ws):
            raise bad(f"accepted: {p!r} on writers {list(ws)!r} must name a property and "
                      f"writers 1..{len(cfg.writers)}, with a reason")
    types = dict(cfg.schema)
    for name, typ in cfg.schema:
        if typ not in COLUMN_TYPES:
            raise bad(f"column {name!r} has unknown type {typ!r}; expected one of "
                      f"{', '.join(COLUMN_TYPES)}")
    for k, v in cfg.properties:
        problem = property_error(k, v)
        if problem:
            raise bad(f"table.properties: {problem}")
    if not isinstance(cfg.key, str) or cfg.key not in types:
        raise bad(f"key {cfg.key!r} is not a column")
    for row in cfg.initial_rows:
        if len(row) != len(cfg.schema):
            raise bad(f"initial row {list(row)} must have {len(cfg.schema)} values")
        for (name, typ), v in zip(cfg.schema, row):
            if v is None:
                continue
            if typ in INT_RANGES:
                low, high = INT_RANGES[typ]
                if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
                    raise bad(f"initial row {list(row)}: {v!r} is not a {typ}")
            elif not isinstance(v, str):
                raise bad(f"initial row {list(row)}: {v!r} is not a string")


def _freeze(command: Any) -> tuple:
    """A command dict as a hashable, order-stable tuple of items."""
    if isinstance(command, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in command.items()))
    if isinstance(command, (list, tuple)):
        return tuple(_freeze(v) for v in command)
    return command


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple) and value and all(isinstance(x, tuple) and len(x) == 2
                                                   and isinstance(x[0], str) for x in value):
        return LineDict({k: _thaw(v) for k, v in value})
    if isinstance(value, tuple):
        return LineList(_thaw(v) for v in value)
    return value


def _line(d: Any) -> Any:
    if isinstance(d, LineDict):
        d.line, d.key_lines = 0, {}
        for v in d.values():
            _line(v)
    elif isinstance(d, LineList):
        d.line, d.item_lines = 0, []
        for v in d:
            _line(v)
    return d


def table_config(cfg: ExploreConfig, path: str = "<config>") -> TableConfig:
    schema = Schema(tuple(cfg.schema))
    fields = []
    for text in cfg.partition_spec:
        try:
            transform, source = parse_transform(text)
        except ValueError as e:
            raise InputError(str(e), path) from None
        fields.append(PartitionField(source, transform))
    return TableConfig(schema, PartitionSpec(tuple(fields)), cfg.format_version,
                       pairs(dict(cfg.properties)))


def command_of(table: TableConfig, command: tuple, path: str = "<config>"):
    node = _line(_thaw(command))
    parent = LineDict({"command": node})
    _line(parent)
    return parse_command(_Ctx(path), table, node, parent)


def build_model_config(cfg: ExploreConfig, path: str = "<config>") -> ModelConfig:
    """The model configuration: setup commit of the initial rows, then the writers' programs."""
    if cfg.catalog not in cat.KINDS:
        raise InputError(f"unknown catalog {cfg.catalog!r}; expected one of {', '.join(cat.KINDS)}", path)
    if cfg.inline_profiles:
        # the configuration's own profiles: whatever replays it (a worker) knows them
        from icecheck.models.profiles import register_inline
        register_inline(cfg.inline_profiles, path)
    if len(cfg.writer_profiles) > len(cfg.writers):
        raise InputError(f"{len(cfg.writer_profiles)} writer profiles for {len(cfg.writers)} "
                         f"writers", path)
    try:
        for name in {cfg.profile, *(p for p in cfg.writer_profiles if p)}:
            get_profile(name)
    except KeyError as e:
        raise InputError(str(e.args[0]), path) from None
    table = table_config(cfg, path)
    setup: tuple[Operation, ...] = ()
    if cfg.initial_rows:
        by_part: dict = {}
        for r in cfg.initial_rows:
            by_part.setdefault(table.partition_of_row(tuple(r)), []).append(tuple(r))
        files = tuple(table.data_file(f"s-d{i}", tuple(rows))
                      for i, (_, rows) in enumerate(sorted(by_part.items(), key=repr), 1))
        setup = (Operation(ops.APPEND, add_data=files),)
    writers = []
    for i, prog in enumerate(cfg.writers, 1):
        profile = cfg.profile_of(i)
        supported = get_profile(profile).commands
        entries = tuple(tuple(command_of(table, c, path) for c in entry) for entry in prog)
        for entry in entries:
            for c in entry:
                if c.kind not in supported:
                    raise InputError(f"profile {profile} has no rule for {c.kind} (it "
                                     f"supports {', '.join(supported)})", path)
        writers.append(WriterProgram(f"w{i}", entries))
    per_writer = {f"w{i}": cfg.profile_of(i) for i in range(1, len(cfg.writers) + 1)
                  if cfg.profile_of(i) != cfg.profile}
    sinks = tuple(sink_spec(cfg, i, restarts, kinds, writers, path)
                  for i, restarts, kinds in cfg.sinks)
    return ModelConfig(table, tuple(writers), cfg.catalog, cfg.faults, cfg.crashes, setup,
                       planner=make_planner(cfg.profile, per_writer), fuse_local_steps=True,
                       phantom_failures=cfg.phantom_failures,
                       schedule=tuple((kind, f"w{i}", f"w{j}") for kind, i, j in cfg.schedule),
                       sinks=sinks, ticks=cfg.ticks,
                       clients=tuple(client_spec(cfg, c, path) for c in cfg.clients))


def client_spec(cfg: ExploreConfig, c: tuple, path: str):
    """Writer ``w{i}``'s own catalog client (models/clients.py)."""
    from icecheck.models.clients import SWAPS, ClientSpec
    i, kind, faults, applied_failed, name = c
    if not 1 <= i <= len(cfg.writers) or kind not in SWAPS:
        raise InputError(f"client of writer w{i}: a writer 1-{len(cfg.writers)} and a swap "
                         f"({', '.join(SWAPS)}), not {kind!r}", path)
    return ClientSpec(f"w{i}", kind, faults, applied_failed, name or None)


#: restarts a sink may make: each multiplies what the search explores
MAX_SINK_RESTARTS = 3


def sink_spec(cfg: ExploreConfig, i: int, restarts: int, kinds: tuple[str, ...],
              writers: list, path: str):
    """Writer ``w{i}`` as a streaming sink of its engine (models/lifecycle.py): its engine
    must run one (Flink, Spark Structured Streaming) and its batches must be INSERTs, the
    appends a streaming sink commits (upsert and overwrite sinks are not modelled yet)."""
    from icecheck.models import lifecycle as life
    from icecheck.models.commands_spec import INSERT
    if not 1 <= i <= len(writers):
        raise InputError(f"sink writer w{i}: there are {len(writers)} writers", path)
    if not 0 <= restarts <= MAX_SINK_RESTARTS:
        raise InputError(f"a sink restarts 0 to {MAX_SINK_RESTARTS} times, not {restarts}", path)
    if not kinds:
        raise InputError("a sink needs at least one way to restart it", path)
    profile = get_profile(cfg.profile_of(i))
    mode = life.mode_of(profile.engine)
    if mode is None:
        raise InputError(f"profile {profile.name} ({profile.engine}) runs no streaming sink the "
                         f"model knows: a sink's profile is a Flink or a Spark one", path)
    for k in kinds:
        if k not in life.RESTART_KINDS[mode]:
            raise InputError(f"a {mode} sink restarts {', '.join(life.RESTART_KINDS[mode])}, "
                             f"not {k!r}", path)
    for entry in writers[i - 1].entries:
        for c in entry:
            if getattr(c, "kind", None) != INSERT:
                raise InputError(f"a streaming sink's batches are INSERTs (the appends it "
                                 f"commits); {c.kind} is not modelled for a sink yet", path)
    return life.SinkSpec(f"w{i}", mode, restarts, tuple(kinds) or (life.CHECKPOINT,))


def mix_config(profile: str, writers: int = 2, ops_per_writer: int = 1,
               mix: tuple[str, ...] = ("delete", "update", "insert"), keys: int = 1,
               catalog: str = cat.CAS, format_version: int = 2, faults: bool = False,
               crashes: bool = False, phantom_failures: bool = False) -> ExploreConfig:
    """A generic configuration: every writer may run any command of ``mix`` on keys 1..keys
    of a table that starts with one file holding those keys and a bystander row 0.

    UPDATE and MERGE write a value naming the writer and operation (``w2.1``), so every row
    version is distinguishable; INSERT adds a fresh key per writer and operation.
    """
    if not mix:
        raise InputError(f"name at least one command (some of {', '.join(MIX_KINDS)})", "--mix")
    for kind in mix:
        if kind not in MIX_KINDS:
            raise InputError(f"unknown mix kind {kind!r}; expected some of {', '.join(MIX_KINDS)}",
                             "--mix")
    if "rewrite_deletes" in mix and format_version >= 3:
        # models/commands.py, _plan_rewrite_position_deletes: refused as the command begins,
        # which would stop a search at its first REWRITE_POSITION_DELETES
        raise InputError("rewrite_deletes (Spark's rewrite_position_delete_files) is not "
                         "modelled on format v3 tables, where it rewrites v2 position deletes "
                         "into deletion vectors; use --format 2 or drop it from --mix", "--mix")
    programs = []
    for w in range(1, writers + 1):
        prog = []
        for n in range(1, ops_per_writer + 1):
            tag = f"w{w}.{n}"
            alts = []
            for kind in mix:
                if kind == "insert":
                    alts.append({"sql": "INSERT", "rows": [[100 * w + n, tag]]})
                elif kind == "compact":
                    alts.append({"sql": "COMPACT"})
                elif kind == "rewrite_deletes":
                    # Spark's rewrite_position_delete_files (rewrite-all)
                    alts.append({"sql": "REWRITE_POSITION_DELETES"})
                elif kind == "rewrite_manifests":
                    # Spark's rewrite_manifests procedure
                    alts.append({"sql": "REWRITE_MANIFESTS"})
                elif kind == "add_files":
                    # a backfill job registering one external Parquet file (key 900): the same
                    # file for every writer, as two runs of one job would add it
                    alts.append({"sql": "ADD_FILES", "file": "backfill", "rows": [[900, "ext"]]})
                elif kind == "expire":
                    # Spark's expire_snapshots procedure keeping only the current snapshot
                    alts.append({"sql": "EXPIRE", "retain_last": 1})
                for k in range(1, keys + 1):
                    if kind == "delete":
                        alts.append({"sql": "DELETE", "where": f"id = {k}"})
                    elif kind == "update":
                        alts.append({"sql": "UPDATE", "where": f"id = {k}", "set": {"v": tag}})
                    elif kind == "merge":
                        alts.append({"sql": "MERGE", "on": ["id"], "rows": [[k, tag]]})
                    elif kind == "overwrite_files":
                        # a script swapping the key's data file with a file-level API
                        alts.append({"sql": "OVERWRITE_FILES", "where": f"id = {k}",
                                     "set": {"v": tag}})
                    elif kind == "merge_insert":
                        # a dedup insert of a fresh key (1000 + k), which every writer may add
                        alts.append({"sql": "MERGE_INSERT", "on": ["id"],
                                     "rows": [[1000 + k, tag]]})
                    elif kind == "upsert":
                        # a streaming upsert sink's checkpoint (Flink upsert mode)
                        alts.append({"sql": "UPSERT", "on": ["id"], "rows": [[k, tag]]})
                    elif kind == "cdc_delete":
                        # a changelog DELETE of the key through the upsert sink
                        alts.append({"sql": "UPSERT", "on": ["id"], "deletes": [[k]]})
            prog.append(tuple(_freeze(a) for a in alts))
        programs.append(tuple(prog))
    # Row 0 is a bystander no command touches: it shares the initial file with the keyed rows,
    # as rows do in real tables, so a DELETE of a key cuts through that file and Spark plans it
    # row-level. Without it every such file would match a DELETE entirely, and Spark deletes a
    # file its filter matches entirely by metadata (DeleteFiles, no validation: models/
    # commands.py _metadata_delete) - the published undelete then cannot happen.
    initial = ((0, "v0"),) + tuple((k, "v0") for k in range(1, keys + 1))
    return ExploreConfig(profile=profile, catalog=catalog, format_version=format_version,
                         initial_rows=initial, writers=tuple(programs), faults=faults,
                         crashes=crashes, phantom_failures=phantom_failures,
                         name=f"{profile} {writers}w x {ops_per_writer} op(s) {'/'.join(mix)} "
                              f"keys={keys} {catalog} v{format_version}")


def fit_mix_to_profiles(cfg: ExploreConfig, option: str = "--mix") -> ExploreConfig:
    """A mixed-engine generic configuration where each writer keeps only the mix commands its
    own profile has a rule for: a Flink upsert sink cannot run a Spark MERGE, nor a Spark job
    Flink's UPSERT, yet one exploration gives both to the jobs that run them. A writer left with
    no command, or a mix command no writer can run, is an input error naming ``option``."""
    if not cfg.mixed:
        return cfg
    from dataclasses import replace as _replace
    used: set = set()
    asked: set = set()
    programs = []
    for i, prog in enumerate(cfg.writers, 1):
        profile = cfg.profile_of(i)
        supported = get_profile(profile).commands
        new_prog = []
        for entry in prog:
            kept = tuple(c for c in entry if dict(c).get("sql") in supported)
            asked.update(dict(c).get("sql") for c in entry)
            used.update(dict(c).get("sql") for c in kept)
            if not kept:
                raise InputError(f"w{i} ({profile}) supports none of the mix's commands "
                                 f"({', '.join(sorted({dict(c).get('sql') for c in entry}))}); it "
                                 f"supports {', '.join(supported)}", option)
            new_prog.append(kept)
        programs.append(tuple(new_prog))
    unused = sorted(asked - used)
    if unused:
        raise InputError(f"no writer's profile supports {', '.join(unused)}", option)
    return _replace(cfg, writers=tuple(programs))


#: Events that show a run exercised concurrency at all: two writers met (one lost a race, one
#: failed validation against the other's commit, or one committed on top of the other's).
CONCURRENCY_EVENTS = ("lost_race", "validation_conflict", "concurrent_committed_writes",
                      "commit_from_stale_base")


def floor_events(cfg: ExploreConfig) -> list[tuple[str, ...]]:
    """What any honest run of ``cfg`` must reach, as groups of alternative "sometimes" events
    (``properties/reachability.py``); a run that misses a group checked nothing there.

    * ``commit``: some operation committed. Every mix command but COMPACT commits when it runs
      alone on the initial rows, so a run that never saw a commit never got anywhere.
    * with two or more writers, one of ``CONCURRENCY_EVENTS``: two writers that begin at the
      same snapshot and both run meet in one of these ways, whatever the catalog or profile.
    """
    active = [prog for prog in cfg.writers if prog]
    commands = [dict(c) for prog in active for entry in prog for c in entry]
    if not commands or all(c.get("sql") == "COMPACT" for c in commands):
        return []
    floor = [("commit",)]
    if len(active) >= 2:
        floor.append(CONCURRENCY_EVENTS)
    return floor


def missing_floor(cfg: ExploreConfig, reached) -> list[str]:
    """The floor groups ``reached`` misses, each as ``a|b|c`` (empty: the floor is met)."""
    got = set(reached)
    return ["|".join(group) for group in floor_events(cfg) if not got & set(group)]


def command_text(command: tuple) -> str:
    """A readable one-line form of a frozen command, for traces and explanations."""
    d = dict(command)
    sql = d.get("sql")
    if sql == "DELETE":
        return f"DELETE WHERE {d.get('where', 'true')}"
    if sql == "UPDATE":
        sets = ", ".join(f"{k} = {v!r}" for k, v in d.get("set", ()))
        return f"UPDATE SET {sets} WHERE {d.get('where', 'true')}"
    if sql == "INSERT":
        return f"INSERT {[list(r) for r in d.get('rows', ())]}"
    if sql == "MERGE":
        return f"MERGE ON {', '.join(d.get('on', ()))} USING {[list(r) for r in d.get('rows', ())]}"
    if sql == "COMPACT":
        return "COMPACT"
    return json.dumps(d)
