"""Read a pipeline file into an exploration configuration, naming the file's line on errors.

A command is a scenario-format command (``sql: DELETE``, ``where: "id = {key}"`` ...) whose
strings may name ``{key}`` and ``{partition}``: such a command stands for one alternative per
value of ``domain.keys`` / ``domain.partitions`` (the product when it names both), so the
exploration also chooses which key or partition each job touches. ``{job}`` is the job's tag
(``w2.1`` for writer 2's first command), so every row version names who wrote it. A row value
that is exactly ``"{key}"`` becomes the key itself (an int when the key is).
"""

from __future__ import annotations

import datetime
import itertools
import os
import re
from dataclasses import dataclass, replace
from typing import Any

from icecheck.engines.config import ExploreConfig, _freeze, build_model_config, command_of, \
    table_config
from icecheck.models.profiles import get_profile, load_profiles, property_conflict
from icecheck.scenarios.errors import InputError
from icecheck.scenarios.yamlload import LineDict, kind_of, line_of, load_yaml_file

TOP_KEYS = {"name", "table", "catalog", "domain", "initial_rows", "key", "jobs", "bounds",
            "schedule", "accept", "profiles"}
JOB_KEYS = {"name", "profile", "program", "sink", "write_options", "client"}
SINK_KEYS = {"restarts", "restart"}
BOUND_KEYS = {"max_states", "max_examples", "seed", "search", "ticks", "split"}
ACCEPT_KEYS = {"anomaly", "jobs", "reason", "until"}
#: bounds.search: ``exhaustive`` (the default) proves an absence or ends INCONCLUSIVE when the
#: bound cuts it; ``sample`` asks for Hypothesis sampling only (absence not proven)
SEARCH_MODES = ("exhaustive", "sample")
STARTER = os.path.join(os.path.dirname(__file__), "starter.yaml")
_PLACEHOLDER = re.compile(r"\{(key|partition|job)\}")


@dataclass(frozen=True)
class Acceptance:
    """A risk the team accepted (``accept:``): an anomaly (a property) on some jobs, why, and
    until when. An expired one takes nothing: its anomaly fails the gate again."""
    line: int | None
    anomaly: str
    jobs: tuple[str, ...]          # () any jobs
    reason: str
    until: datetime.date | None
    expired: bool

    def entry(self, names: list[str]) -> tuple[str, tuple[int, ...], str]:
        """As ``ExploreConfig.accepted`` holds it: (property, writer indexes, reason)."""
        return self.anomaly, tuple(names.index(j) + 1 for j in self.jobs), self.reason

    def describe(self) -> str:
        on = f" on {', '.join(self.jobs)}" if self.jobs else ""
        until = f" until {self.until.isoformat()}" if self.until else ""
        return f"{self.anomaly}{on}{until} (line {self.line}): {self.reason}"


@dataclass(frozen=True)
class Pipeline:
    path: str
    name: str
    config: ExploreConfig
    jobs: tuple[tuple[str, str], ...]   # (job name, profile), writer w{i} is jobs[i-1]
    max_states: int
    max_examples: int
    seed: int
    search: str = "exhaustive"          # bounds.search (SEARCH_MODES)
    acceptances: tuple[Acceptance, ...] = ()
    schedule: tuple[tuple[str, str, str], ...] = ()   # (kind, job, job), as written
    # bounds.split: the exhaustive search split by the jobs' template alternatives, a part
    # per combination, the parts on every core (engines/split.py); max_states bounds each
    split: bool = False

    def job_of(self, writer: str) -> str:
        """The job name of writer ``w{i}``."""
        i = int(writer[1:]) if writer[1:].isdigit() else 0
        return self.jobs[i - 1][0] if 1 <= i <= len(self.jobs) else writer


_line = line_of     # a node's line, or its entry's (scenarios/yamlload.py)


def _mapping(node: Any, what: str, path: str, allowed: set[str], line=None) -> LineDict:
    if not isinstance(node, dict):
        raise InputError(f"{what} must be a mapping, not {kind_of(node)}", path, line)
    for k in node:
        if k not in allowed:
            raise InputError(f"{what}: unknown key {k!r}; expected some of "
                             f"{', '.join(sorted(allowed))}", path, _line(node, k))
    return node


def _expand(value: Any, subst: dict[str, Any]) -> Any:
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value)
        if whole and whole.group(1) in subst:
            return subst[whole.group(1)]
        return _PLACEHOLDER.sub(lambda m: str(subst.get(m.group(1), m.group(0))), value)
    if isinstance(value, dict):
        return {k: _expand(v, subst) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, subst) for v in value]
    return value


def _names(value: Any) -> set[str]:
    if isinstance(value, str):
        return {m.group(1) for m in _PLACEHOLDER.finditer(value)}
    if isinstance(value, dict):
        return set().union(*(_names(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_names(v) for v in value)) if value else set()
    return set()


def alternatives(command: dict, domain: dict[str, list], tag: str) -> list[dict]:
    """Every instance of a templated command over the domain, in a fixed order."""
    used = sorted(_names(command) - {"job"})
    out = []
    for values in itertools.product(*(domain[n] for n in used)):
        out.append(_expand(command, {"job": tag, **dict(zip(used, values))}))
    return out


def _int(node, key, default, low, high, path, what):
    v = node.get(key, default) if isinstance(node, dict) else default
    if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= high:
        raise InputError(f"{what}.{key} must be an integer in [{low}, {high}], not {v!r}", path,
                         _line(node, key))
    return v


def _text(node: dict, key: str, what: str, path: str) -> None:
    """``node[key]``, when given, is a string: a name shown in reports (``str()`` of a number
    or a list would pass silently), or the row key the properties judge."""
    if key in node and not isinstance(node[key], str):
        raise InputError(f"{what}{key} must be a string, not {kind_of(node[key])}", path,
                         _line(node, key))


def _values(node: dict, key: str, default: list, path: str) -> list:
    """``domain.keys`` / ``domain.partitions``: a list of integers or strings, the values a
    template's ``{key}`` / ``{partition}`` stands for (null, a number or a mapping is none)."""
    v = node.get(key, default)
    if not isinstance(v, list):
        raise InputError(f"domain.{key} must be a list of integers or strings, not "
                         f"{kind_of(v)}", path, _line(node, key))
    for i, x in enumerate(v):
        if isinstance(x, bool) or not isinstance(x, (int, str)):
            raise InputError(f"domain.{key}[{i}] must be an integer or a string, not "
                             f"{kind_of(x)}", path, _line(v, i))
    return list(v)


def _check_table(t: dict, schema: dict, spec: list, props: dict, path: str) -> None:
    """Each column, partition field and property at its own line: a column type the model has
    no values for, a transform of a column the table lacks or a property value no engine
    accepts would otherwise fail far from its line (or, for a property an engine does not read,
    not at all)."""
    from icecheck.models.table import COLUMN_TYPES, property_error
    from icecheck.models.transforms import PartitionField, PartitionSpec, parse_transform

    for name, typ in schema.items():
        if not isinstance(name, str):
            raise InputError(f"table.schema: column name {name!r} is not a name", path,
                             _line(schema, name))
        if not isinstance(typ, str) or typ not in COLUMN_TYPES:
            raise InputError(f"table.schema: column {name!r} has unknown type "
                             f"{kind_of(typ) if not isinstance(typ, str) else repr(typ)}; "
                             f"expected one of {', '.join(COLUMN_TYPES)}", path,
                             _line(schema, name))
    fields = []
    for i, text in enumerate(spec):
        try:
            transform, source = parse_transform(text)
        except ValueError as e:
            raise InputError(f"table.partition_spec: {e}", path, _line(spec, i)) from None
        if source not in schema:
            raise InputError(f"table.partition_spec: {text!r} partitions by {source!r}, which "
                             f"is not a column of table.schema", path, _line(spec, i))
        fields.append(PartitionField(source, transform))
        try:
            PartitionSpec(tuple(fields))
        except ValueError as e:
            raise InputError(f"table.partition_spec: {e}", path, _line(spec, i)) from None
    for k, v in props.items():
        problem = property_error(k, v)
        if problem:
            raise InputError(f"table.properties: {problem}", path, _line(props, k))


def _one_file_one_content(command: dict, seen: dict, path: str, line) -> None:
    """An external Parquet file (``ADD_FILES``' ``file``) is one file: every command that
    registers it must give it the same rows (two jobs adding "one file" with different rows
    describe two files, and the model's store refuses to rewrite a path)."""
    if str(command.get("sql", "")).upper() != "ADD_FILES" or "file" not in command:
        return
    rows = repr(command.get("rows"))
    got = seen.setdefault(str(command["file"]), (rows, line))
    if got[0] != rows:
        raise InputError(f"ADD_FILES names file {command['file']!r} with other rows than at "
                         f"line {got[1]}: one file has one content (name the other file "
                         f"differently)", path, line)


def _job_names(node: Any, what: str, names: list[str], path: str, line) -> list[int]:
    """Writer indexes (1-based) of the job names ``node`` lists."""
    if isinstance(node, str):
        node = [node]
    if not isinstance(node, list) or not node or not all(isinstance(n, str) for n in node):
        raise InputError(f"{what} must list job names, not {kind_of(node)}", path, line)
    out = []
    for n in node:
        if n not in names:
            raise InputError(f"{what}: no job is named {n!r}; the jobs are "
                             f"{', '.join(names)}", path, line)
        out.append(names.index(n) + 1)
    return out


def _schedule(doc: dict, names: list[str], path: str) -> tuple[tuple, tuple]:
    """``schedule:`` as (the configuration's (kind, i, j) constraints, (kind, job, job) as
    written). ``never_overlap: [a, b, ...]``: no two of them run at once; ``sequence: [a, b,
    ...]``: each starts only after the one before it has ended (models/schedule.py)."""
    from icecheck.models.schedule import AFTER, NEVER_OVERLAP, schedule_error
    node = doc.get("schedule", [])
    if not isinstance(node, list):
        raise InputError("schedule must be a list such as [{never_overlap: [a, b]}, {sequence: "
                         "[a, b]}]", path, _line(doc, "schedule"))
    out, written = [], []
    for n, c in enumerate(node):
        line = _line(node, n)
        if not isinstance(c, dict) or len(c) != 1 or next(iter(c)) not in ("never_overlap",
                                                                           "sequence"):
            raise InputError("a schedule entry is one of {never_overlap: [job, job, ...]} or "
                             "{sequence: [job, job, ...]}", path, line)
        kind, jobs = next(iter(c.items()))
        idx = _job_names(jobs, f"schedule.{kind}", names, path, line)
        if len(idx) < 2 or len(set(idx)) != len(idx):
            raise InputError(f"schedule.{kind} names two or more different jobs", path, line)
        if kind == "never_overlap":
            pairs = [(NEVER_OVERLAP, a, b) for a, b in itertools.combinations(idx, 2)]
        else:
            pairs = [(AFTER, b, a) for a, b in zip(idx, idx[1:])]
        out += pairs
        written += [(k, names[a - 1], names[b - 1]) for k, a, b in pairs]
        problem = schedule_error([list(x) for x in out], len(names))
        if problem:
            raise InputError(problem, path, line)
    return tuple(out), tuple(written)


def _accept(doc: dict, names: list[str], path: str, today: datetime.date) -> tuple:
    """``accept:``: the risks the team accepted, each ``{anomaly, jobs, reason, until}``."""
    from icecheck.properties.violation import PROPERTIES
    node = doc.get("accept", [])
    if not isinstance(node, list):
        raise InputError("accept must be a list of {anomaly, jobs, reason, until}", path,
                         _line(doc, "accept"))
    out = []
    for n, a in enumerate(node):
        line = _line(node, n)
        a = _mapping(a, f"accept[{n}]", path, ACCEPT_KEYS, line)
        anomaly = a.get("anomaly")
        if anomaly not in PROPERTIES:
            raise InputError(f"accept[{n}].anomaly must be one of {', '.join(PROPERTIES)}, not "
                             f"{anomaly!r}", path, _line(a, "anomaly") or line)
        reason = a.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise InputError(f"accept[{n}] needs a reason: why the team accepts this risk", path,
                             _line(a, "reason") or line)
        jobs = tuple(names[i - 1] for i in _job_names(a["jobs"], f"accept[{n}].jobs", names,
                                                       path, _line(a, "jobs"))) \
            if "jobs" in a else ()
        until = a.get("until")
        if until is not None:
            if isinstance(until, datetime.datetime):
                until = until.date()
            elif isinstance(until, str):
                try:
                    until = datetime.date.fromisoformat(until)
                except ValueError:
                    pass    # refused just below, as written
            if not isinstance(until, datetime.date):
                raise InputError(f"accept[{n}].until must be a date such as 2027-01-31, not "
                                 f"{a.get('until')!r}", path, _line(a, "until"))
        out.append(Acceptance(line, anomaly, jobs, " ".join(reason.split()), until,
                              until is not None and until < today))
    return tuple(out)


def _sink(job: dict, i: int, profile: str, path: str) -> tuple[int, int, tuple[str, ...]]:
    """A job's ``sink:`` (models/lifecycle.py): the job is a streaming sink whose program is its
    source's batches (one checkpoint or micro-batch each, in order), which may fail
    ``restarts`` times and is restarted in the ways ``restart`` lists."""
    from icecheck.engines.config import MAX_SINK_RESTARTS
    from icecheck.models import lifecycle as life
    line = _line(job, "sink")
    node = job["sink"]
    if node is None or node is True:
        node = {}
    node = _mapping(node, f"jobs[{i - 1}].sink", path, SINK_KEYS, line)
    mode = life.mode_of(get_profile(profile).engine)
    if mode is None:
        raise InputError(f"jobs[{i - 1}].sink: profile {profile} runs no streaming sink the model "
                         f"knows (Flink's FlinkSink, Spark Structured Streaming)", path, line)
    restarts = _int(node, "restarts", 1, 0, MAX_SINK_RESTARTS, path, f"jobs[{i - 1}].sink")
    kinds = node.get("restart", [life.CHECKPOINT])
    if isinstance(kinds, str):
        kinds = [kinds]
    allowed = life.RESTART_KINDS[mode]
    if not isinstance(kinds, list) or not kinds or any(k not in allowed for k in kinds):
        raise InputError(f"jobs[{i - 1}].sink.restart lists how the job is restarted: one or "
                         f"more of {', '.join(allowed)} for a {mode} sink, not {kinds!r}", path,
                         _line(node, "restart") or line)
    program = job["program"]
    for n, command in enumerate(program):
        options = command.get("any") if "any" in command else [command]
        for c in options:
            if str(c.get("sql", "")).upper() != "INSERT":
                raise InputError(f"jobs[{i - 1}] is a streaming sink: each program entry is one "
                                 f"batch its source delivers, an INSERT (the appends a sink "
                                 f"commits), not {c.get('sql')!r}", path, _line(program, n))
    return i, restarts, tuple(dict.fromkeys(kinds))


def _inline_profiles(doc: dict, path: str) -> str:
    """The pipeline's own engine profiles (``profiles:``, the syntax of a profile file's, checked
    at their lines), registered for its jobs to name; the YAML text the configuration carries
    (models/profiles.py ``register_inline``), or ""."""
    if "profiles" not in doc:
        return ""
    from icecheck.models.profiles import (_load, inline_text, parse_profiles, profile_dirs,
                                          register_inline)
    from icecheck.scenarios.yamlload import Ctx
    ctx = Ctx(path)
    node = ctx.mapping(doc["profiles"], "profiles", doc, "profiles")
    shipped = _load(tuple(profile_dirs()))
    for name in node:
        if name in shipped:
            raise InputError(f"profiles: {name} is already defined (in {shipped[name].source}); "
                             f"a profile of the pipeline's own needs a name of its own", path,
                             _line(node, name))
    parse_profiles(ctx, node, path)          # every problem at its line in this file
    text = inline_text(node)
    register_inline(text, path)
    return text


def load_pipeline(path: str, today: datetime.date | None = None) -> Pipeline:
    """``today`` decides which acceptances have expired (default: the machine's date)."""
    today = today or datetime.date.today()
    doc = load_yaml_file(path)
    doc = _mapping(doc, "the pipeline", path, TOP_KEYS, 1)
    _text(doc, "name", "", path)
    _text(doc, "key", "", path)
    for need in ("table", "jobs"):
        if need not in doc:
            raise InputError(f"the pipeline needs a {need!r} section", path, _line(doc))
    t = _mapping(doc["table"], "table", path,
                 {"schema", "partition_spec", "format_version", "properties"}, _line(doc, "table"))
    schema = t.get("schema", {"id": "int", "v": "string"})
    if not isinstance(schema, dict) or not schema:
        raise InputError("table.schema must map column names to types", path, _line(t, "schema"))
    spec = t.get("partition_spec", [])
    if not isinstance(spec, list):
        raise InputError("table.partition_spec must be a list of transforms such as "
                         "identity(day)", path, _line(t, "partition_spec"))
    props = t.get("properties", {})
    if not isinstance(props, dict):
        raise InputError("table.properties must be a mapping", path, _line(t, "properties"))
    _check_table(t, schema, spec, props, path)
    # a catalog's name (catalog: rest) or the model's kind, and its faults: models/catalogs.py
    from icecheck.models.catalogs import pipeline_catalog
    catalog = pipeline_catalog(doc, path)      # {kind, faults, crashes, applied_failed, name}
    from icecheck.models.catalogs import job_clients
    clients = job_clients(doc, path, catalog)  # each job's own client, when one names it
    kind = catalog["kind"]
    domain_node = _mapping(doc.get("domain", {}), "domain", path, {"keys", "partitions"},
                           _line(doc, "domain"))
    domain = {"key": _values(domain_node, "keys", [1], path),
              "partition": _values(domain_node, "partitions", [], path)}
    inline = _inline_profiles(doc, path)    # the file's own engine profiles, if any
    jobs_node = doc["jobs"]
    if not isinstance(jobs_node, list) or not jobs_node:
        raise InputError("jobs must be a non-empty list", path, _line(doc, "jobs"))
    if len(jobs_node) > 9:
        raise InputError(f"{len(jobs_node)} jobs; a pipeline explores at most 9", path,
                         _line(doc, "jobs"))
    jobs, programs, profiles, sinks = [], [], [], []
    external: dict[str, tuple] = {}     # ADD_FILES: file -> (its rows, the line it was named at)
    for i, job in enumerate(jobs_node, 1):
        job = _mapping(job, f"jobs[{i - 1}]", path, JOB_KEYS, _line(jobs_node, i - 1))
        _text(job, "name", f"jobs[{i - 1}].", path)
        profile = job.get("profile")
        try:
            get_profile(profile)
        except (KeyError, TypeError):
            raise InputError(f"jobs[{i - 1}].profile: unknown profile {profile!r}; expected one "
                             f"of {', '.join(load_profiles())}", path, _line(job, "profile")) from None
        program = job.get("program")
        if not isinstance(program, list) or not program:
            raise InputError(f"jobs[{i - 1}].program must be a non-empty list of commands",
                             path, _line(job, "program"))
        entries = []
        # the job's write options (Spark's; pipelines/job_options.py), the commands it runs
        from .job_options import check_command, check_job_options_used, job_options, \
            with_job_options
        job_opts, kinds = job_options(job, i, path), set()
        for n, command in enumerate(program, 1):
            line = _line(program, n - 1)
            if isinstance(command, dict) and "any" in command and len(command) > 1:
                others = ", ".join(sorted(str(k) for k in command if k != "any"))
                raise InputError(f"a command is either 'any: [...]' (alternatives) or one "
                                 f"command, not both ('any' beside {others})", path, line)
            options = command.get("any") if isinstance(command, dict) and "any" in command \
                else [command]
            if not isinstance(options, list) or not options:
                raise InputError("'any' must be a non-empty list of commands", path, line)
            alts = []
            for c in options:
                if not isinstance(c, dict):
                    raise InputError("a command must be a mapping such as {sql: DELETE, where: "
                                     "\"id = {key}\"}", path, line)
                bad_key = next((k for k in c if not isinstance(k, str)), None)
                if bad_key is not None:
                    raise InputError(f"command key {bad_key!r} is not a name", path, line)
                for name in _names(c) - {"job"}:
                    if not domain[name]:
                        raise InputError(f"the command names {{{name}}} but domain."
                                         f"{name}s is empty", path, line)
                sql = str(c.get("sql", "")).upper()
                problem = property_conflict(get_profile(profile), sql, props)
                if problem:
                    raise InputError(f"jobs[{i - 1}] ({job.get('name', f'job{i}')}): {problem}",
                                     path, line)
                check_command(c, profile, path, line)
                kinds.add(sql)
                alts += alternatives(dict(with_job_options(c, job_opts, profile)), domain,
                                     f"w{i}.{n}")
            for a in alts:
                _one_file_one_content(a, external, path, line)
            entries.append((line, tuple(_freeze(a) for a in alts)))
        check_job_options_used(job, i, job_opts, kinds, profile, path)
        if "sink" in job:
            sinks.append(_sink(job, i, profile, path))
        jobs.append((str(job.get("name", f"job{i}")), profile))
        programs.append(entries)
        profiles.append(profile)
    rows = doc.get("initial_rows", [])
    if not isinstance(rows, list):
        raise InputError("initial_rows must be a list of rows", path, _line(doc, "initial_rows"))
    fv = t.get("format_version", 2)
    cfg = ExploreConfig(
        profile=profiles[0], schema=tuple(schema.items()), partition_spec=tuple(spec),
        format_version=fv if isinstance(fv, int) else -1,
        properties=tuple(sorted(props.items())), catalog=kind,
        initial_rows=tuple(tuple(r) if isinstance(r, list) else (r,) for r in rows),
        writers=tuple(tuple(alts for _, alts in prog) for prog in programs),
        faults=catalog.get("faults", False), crashes=catalog.get("crashes", False),
        phantom_failures=catalog.get("applied_failed", False),
        key=str(doc.get("key", next(iter(schema)))),
        name=str(doc.get("name", path)),
        writer_profiles=tuple("" if p == profiles[0] else p for p in profiles),
        sinks=tuple(sinks), clients=clients, inline_profiles=inline)
    # each command on its own line first, so a bad one names the line it is on
    table = None
    try:
        table = table_config(cfg, path)
    except InputError as e:
        raise InputError(e.detail, path, _line(t, "partition_spec")) from None
    for prog in programs:
        for line, alts in prog:
            for a in alts:
                try:
                    command_of(table, a, path)
                except InputError as e:
                    raise InputError(e.detail, path, line) from None
    try:
        ExploreConfig.from_json(cfg.as_json(), path)   # the configuration's own checks
        build_model_config(cfg, path)
    except InputError as e:
        raise InputError(e.detail, path, _line(doc, "table")) from None
    bounds = _mapping(doc.get("bounds", {}), "bounds", path, BOUND_KEYS, _line(doc, "bounds"))
    search = bounds.get("search", "exhaustive")
    if search not in SEARCH_MODES:
        raise InputError(f"bounds.search must be one of {', '.join(SEARCH_MODES)}, not "
                         f"{search!r}", path, _line(bounds, "search"))
    split = bounds.get("split", False)
    if not isinstance(split, bool):
        raise InputError(f"bounds.split must be true or false, not {split!r}", path,
                         _line(bounds, "split"))
    if split and search != "exhaustive":
        raise InputError("bounds.split splits the exhaustive search; it does not go with "
                         "bounds.search: sample", path, _line(bounds, "split"))
    names = [n for n, _ in jobs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError(f"two jobs are named {dup!r}; each job needs its own name (verdicts "
                         f"and explanations name jobs)", path, _line(doc, "jobs"))
    schedule, written = _schedule(doc, names, path)
    acceptances = _accept(doc, names, path, today)
    # the gate's judgement: what readers see always fails, but for the risks accepted (and
    # not expired); the schedule is part of the runs the model explores
    # bounds.ticks: how many times the logical clock may advance (models/clock.py)
    from icecheck.engines.config import MAX_TICKS
    ticks = _int(bounds, "ticks", 0, 0, MAX_TICKS, path, "bounds")
    cfg = replace(cfg, schedule=schedule, protect_readers=True, accepted=tuple(
        a.entry(names) for a in acceptances if not a.expired), ticks=ticks)
    return Pipeline(path, cfg.name, cfg, tuple(jobs),
                    _int(bounds, "max_states", 200_000, 1, 10_000_000, path, "bounds"),
                    _int(bounds, "max_examples", 500, 1, 1_000_000, path, "bounds"),
                    _int(bounds, "seed", 0, 0, 2**32 - 1, path, "bounds"),
                    search, acceptances, written, split)
