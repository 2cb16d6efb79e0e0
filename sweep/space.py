"""The sweep's configuration space (``space.yaml``): loading, narrowing by filters, and the cells.

A cell is plain JSON data (so it travels to a Spark task as is): the profile and what it
encodes (engine, table mode, isolation level), catalog, format version, the commands (one per
writer, templates already filled in), the initial rows and the bounds. Its id is a stable hash
of exactly what determines its result, so a re-run with the same space skips finished cells.

A *mix* (``mixes:`` in the space) is a row of the matrix whose writers run on different engine
profiles (a Spark job and a PyIceberg script on one table): its cells carry ``writer_profiles``
(writer w runs on ``mix[(w-1) % len(mix)]``) and are explored as one mixed-engine
configuration (``ExploreConfig.writer_profiles``), judged as every mixed exploration is
(``properties.expectations.expectation``: the last committer's profile, or the strictest).
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any


from icecheck.models import catalog as cat
from icecheck.models.table import MAX_RETRIES
from icecheck.scenarios.errors import InputError, check_number

SPACE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "space.yaml")
SCALING_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scaling.yaml")
MODES = {"cow": "copy-on-write", "mor": "merge-on-read",
         "copy-on-write": "copy-on-write", "merge-on-read": "merge-on-read"}
# Bump when the meaning of a cell's result changes (the per-cell cache is keyed by it).
CELL_SCHEMA = 1
DEFAULT_BOUNDS = {"ops": 1, "retries": 1, "max_depth": None, "max_files": None, "max_states": 200000,
                  "time_budget": 60}
DEFAULT_HYPOTHESIS = {"max_examples": 300, "seed": 0, "time_budget": 60}


@dataclass
class Space:
    profiles: list[str]
    catalogs: list[str]
    format_versions: list[int]
    commands: dict[str, dict]
    combos: list[list[str]]
    initial_rows: list[list]
    bounds: dict = field(default_factory=lambda: dict(DEFAULT_BOUNDS))
    hypothesis: dict = field(default_factory=lambda: dict(DEFAULT_HYPOTHESIS))
    path: str = SPACE_PATH
    # mixed-engine rows: each a list of profiles, writer w on mix[(w-1) % len(mix)]
    mixes: list[list[str]] = field(default_factory=list)
    # per mix: its own combinations (a mix given as {profiles, combos}), or None for `combos`
    mix_combos: list[list[list[str]] | None] = field(default_factory=list)


def load_space(path: str | None = None) -> Space:
    path = path or SPACE_PATH
    from icecheck.scenarios.yamlload import load_yaml_file

    doc = load_yaml_file(path) or {}
    if not isinstance(doc, dict):
        raise InputError("expected a mapping (profiles, catalogs, format_versions, commands, "
                         "combos, bounds)", path, getattr(doc, "line", 1))
    unknown = set(doc) - {"profiles", "catalogs", "format_versions", "commands", "combos",
                          "initial_rows", "bounds", "hypothesis", "mixes"}
    if unknown:
        raise InputError(f"unknown key(s) {sorted(unknown, key=str)}", path,
                         _line(doc, sorted(unknown, key=str)[0]))
    for need in ("commands", "combos"):
        if need not in doc:
            raise InputError(f"the space needs {need!r}", path, getattr(doc, "line", 1))
    # the shape of every section first, each at its line: a string where a list belongs would
    # be read letter by letter ("unknown profile 's'"), a number or null end in a TypeError
    _seq(doc, "profiles", path, "of profile names", str)
    _seq(doc, "catalogs", path, "of catalog names", str)
    _seq(doc, "format_versions", path, "of format versions (2, 3)")
    _seq(doc, "combos", path, "of combinations such as [DELETE, UPDATE]", list)
    _seq(doc, "mixes", path, "of mixes such as [spark-3.5-cow-serializable, "
                            "pyiceberg-0.12-serializable]")
    _seq(doc, "initial_rows", path, "of rows such as [1, v0]", list, empty=True)
    for key in ("commands", "bounds", "hypothesis"):
        if key in doc and not (doc[key] is None and key != "commands") \
                and not isinstance(doc[key], dict):
            raise InputError(f"{key} must be a mapping, not {_kind(doc[key])}", path,
                             _line(doc, key))
    for i, combo in enumerate(doc["combos"]):
        if not all(isinstance(c, str) for c in combo):
            raise InputError(f"combos[{i}] must be a list of command names, not {combo!r}",
                             path, _line(doc, "combos", i))
    for name, command in doc["commands"].items():
        if not isinstance(command, dict):
            raise InputError(f"command {name}: a command is a mapping such as {{sql: DELETE, "
                             f"where: 'id = 1'}}, not {_kind(command)}", path,
                             _line(doc, "commands", name))
    try:
        space = Space(
            profiles=[str(p) for p in doc.get("profiles") or []],
            catalogs=[str(c) for c in doc.get("catalogs", [cat.CAS])],
            format_versions=list(doc.get("format_versions", [2])),
            commands={str(k): dict(v) for k, v in doc["commands"].items()},
            combos=[[str(c) for c in combo] for combo in doc["combos"]],
            initial_rows=[list(r) for r in doc.get("initial_rows", [[1, "v0"]])],
            bounds={**DEFAULT_BOUNDS, **(doc.get("bounds") or {})},
            hypothesis={**DEFAULT_HYPOTHESIS, **(doc.get("hypothesis") or {})},
            path=path,
            mixes=[_mix_entry(m, path, _line(doc, "mixes", i))
                   for i, m in enumerate(doc.get("mixes") or [])],
            mix_combos=[_mix_combos(m, path, _line(doc, "mixes", i))
                        for i, m in enumerate(doc.get("mixes") or [])])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise InputError(f"malformed sweep space: {type(e).__name__}: {e}", path) from None
    _validate(space, doc)
    return space


def _kind(value: Any) -> str:
    from icecheck.scenarios.yamlload import kind_of
    return kind_of(value)


def _seq(doc: dict, key: str, path: str, what: str, item: type | None = None,
         empty: bool = False) -> None:
    """``doc[key]``, when given, is a list (non-empty unless ``empty``: an empty list of
    profiles, catalogs, format versions, combinations or mixes makes a matrix without that
    axis, silently) whose items are of type ``item`` and not repeated (a repeated one runs
    its cells twice)."""
    if key not in doc:
        return
    value = doc[key]
    if not isinstance(value, list):
        raise InputError(f"{key} must be a list {what}, not {_kind(value)}", path,
                         _line(doc, key))
    if not value and not empty:
        raise InputError(f"{key} is empty; list one or more, or leave {key} out", path,
                         _line(doc, key))
    seen = []
    for i, v in enumerate(value):
        if item is not None and (not isinstance(v, item) or isinstance(v, bool)):
            raise InputError(f"{key}[{i}] must be {'a name' if item is str else 'a list'}, "
                             f"not {_kind(v)}", path, _line(doc, key, i))
        if v in seen and key != "initial_rows":
            raise InputError(f"{key}[{i}] repeats {v!r}; each is listed once", path,
                             _line(doc, key, i))
        seen.append(v)


def _mix_combos(value: Any, path: str, line: int | None) -> list[list[str]] | None:
    """A mix's own combinations: ``{profiles: [...], combos: [[...], ...]}`` gives engines with
    commands of their own (a Flink upsert sink runs UPSERT, not DELETE) the pairs that fit them,
    instead of a matrix of not-applicable cells."""
    if not isinstance(value, dict) or "combos" not in value:
        return None
    combos = value["combos"]
    if not isinstance(combos, list) or not combos or not all(isinstance(c, list) for c in combos):
        raise InputError(f"a mix's combos is a non-empty list of combinations, got {combos!r}",
                         path, line)
    return [[str(c) for c in combo] for combo in combos]


def _mix_entry(value: Any, path: str, line: int | None) -> list[str]:
    if isinstance(value, dict):
        unknown = set(value) - {"profiles", "combos"}
        if unknown or "profiles" not in value:
            raise InputError(f"a mix mapping has 'profiles' (and optionally 'combos'), got keys "
                             f"{sorted(map(str, value))}", path, line)
        value = value["profiles"]
    if not isinstance(value, list) or not 2 <= len(value) <= 3 \
            or not all(isinstance(p, str) for p in value):
        raise InputError(f"a mix is a list of 2 or 3 profile names (writer w1, w2, ...), got "
                         f"{value!r}", path, line)
    if len(set(value)) == 1:
        raise InputError(f"a mix names different profiles (one profile for every writer is a "
                         f"'profiles' entry): {value}", path, line)
    return [str(p) for p in value]


def _line(doc: Any, *keys: Any) -> int | None:
    """The line of ``doc[keys[0]][keys[1]]...`` (as deep as the keys exist), so an error in a
    space file points at the offending line, not just at the file."""
    line = getattr(doc, "line", None)
    node = doc
    for key in keys:
        if isinstance(node, dict) and key in node and hasattr(node, "line_of"):
            line = node.line_of(key)
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node) \
                and hasattr(node, "line_of"):
            line = node.line_of(key)
            node = node[key]
        else:
            break
    return line


def _string_keys(value: Any, path: str, where: str, line: int | None = None) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            here = value.line_of(k) if hasattr(value, "line_of") else line
            if not isinstance(k, str):
                raise InputError(f"{where}: key {k!r} is not a name", path, here)
            _string_keys(v, path, where, here)
    elif isinstance(value, list):
        for v in value:
            _string_keys(v, path, where, getattr(v, "line", line))


def _validate(space: Space, doc: Any = None) -> None:
    from icecheck.models.profiles import load_profiles
    known = load_profiles()
    path = space.path
    for i, p in enumerate(space.profiles):
        if p not in known:
            raise InputError(f"unknown profile {p!r}; known: {', '.join(sorted(known))}", path,
                             _line(doc, "profiles", i))
    for i, mix in enumerate(space.mixes):
        for p in mix:
            if p not in known:
                raise InputError(f"mix {mix}: unknown profile {p!r}; known: "
                                 f"{', '.join(sorted(known))}", path, _line(doc, "mixes", i))
    if not space.profiles and not space.mixes:
        raise InputError("the space needs 'profiles' or 'mixes' (none given)", path,
                         getattr(doc, "line", 1))
    for i, c in enumerate(space.catalogs):
        if c not in cat.KINDS:
            raise InputError(f"unknown catalog {c!r}; expected one of {', '.join(cat.KINDS)}",
                             path, _line(doc, "catalogs", i))
    for i, v in enumerate(space.format_versions):
        # the model's tables are v2 or v3 (ExploreConfig): a v1 cell could only fail
        check_number(v, "format_versions", path, low=2, high=3,
                     line=_line(doc, "format_versions", i))
    if not space.commands:
        raise InputError("commands is empty; a space names one or more command templates",
                         path, _line(doc, "commands"))
    for name, command in space.commands.items():
        _string_keys(command, path, f"command {name}", _line(doc, "commands", name))
        _check_command(name, command, space.format_versions, path,
                       _line(doc, "commands", name))
    _check_rows(space.initial_rows, path, doc)
    for i, combo in enumerate(space.combos + [c for cs in space.mix_combos or [] if cs
                                              for c in cs]):
        where = "combos" if i < len(space.combos) else "mixes"
        if not 1 <= len(combo) <= 3:
            raise InputError(f"a combination has 1 to 3 commands (one per writer): {combo}",
                             path, _line(doc, where, i) if where == "combos" else _line(doc, where))
        for name in combo:
            if name not in space.commands:
                raise InputError(f"combination {combo} names an unknown command {name!r}; "
                                 f"defined: {', '.join(space.commands)}", path,
                                 _line(doc, where, i) if where == "combos" else _line(doc, where))
    unknown = set(space.bounds) - set(DEFAULT_BOUNDS)
    if unknown:
        raise InputError(f"unknown bound(s) {sorted(unknown)}", path,
                         _line(doc, "bounds", sorted(unknown)[0]))
    unknown = set(space.hypothesis) - set(DEFAULT_HYPOTHESIS)
    if unknown:
        raise InputError(f"unknown hypothesis setting(s) {sorted(unknown)}", path,
                         _line(doc, "hypothesis", sorted(unknown)[0]))
    # Each bound multiplies every cell's state space: past these a sweep never ends.
    b, h = space.bounds, space.hypothesis

    def number(section: str, key: str, **kw: Any) -> None:
        value = (b if section == "bounds" else h)[key]
        check_number(value, f"{section}.{key}", path, line=_line(doc, section, key), **kw)

    number("bounds", "ops", low=1, high=9)
    number("bounds", "retries", low=0, high=MAX_RETRIES)
    number("bounds", "max_depth", low=0, high=1000, allow_none=True)
    number("bounds", "max_files", low=0, high=10_000, allow_none=True)
    number("bounds", "max_states", low=1, high=100_000_000, allow_none=True)
    number("bounds", "time_budget", low=0.001, high=86_400, integer=False)
    number("hypothesis", "max_examples", low=1, high=1_000_000)
    number("hypothesis", "seed", low=0, high=2**63)
    number("hypothesis", "time_budget", low=0.001, high=86_400, integer=False)


def _check_command(name: str, template: dict, format_versions: list[int], path: str,
                   line: int | None) -> None:
    """A command template, its placeholders filled in as writer 1's first operation, read as
    the scenario format reads a command (on the sweep's table, at each format version of the
    space): an unknown ``sql``, key or column is refused here at its line, not found by each
    cell at run time (or taken for a command no profile has a rule for: not applicable)."""
    from icecheck.engines.config import ExploreConfig, _freeze, command_of, table_config

    if not template:         # frozen, {} would be read as an empty list
        raise InputError(f"command {name}: an empty mapping; a command needs sql, such as "
                         f"{{sql: DELETE, where: 'id = 1'}}", path, line)
    for fv in format_versions:
        table = table_config(ExploreConfig(profile="", format_version=fv), path)
        try:
            command_of(table, _freeze(fill(template, 1, 1)), path)
        except InputError as e:
            raise InputError(f"command {name}: {e.detail}", path, line) from None


def _check_rows(rows: list, path: str, doc: Any) -> None:
    """``initial_rows`` fit the sweep's table (``ExploreConfig``'s schema: id int, v string);
    a row that does not would fail every cell at run time."""
    from icecheck.engines.config import ExploreConfig
    from icecheck.models.table import INT_RANGES

    schema = ExploreConfig(profile="").schema
    for i, row in enumerate(rows):
        line = _line(doc, "initial_rows", i)
        if len(row) != len(schema):
            raise InputError(f"initial_rows[{i}] must have {len(schema)} values "
                             f"({', '.join(c for c, _ in schema)}), not {row!r}", path, line)
        for (col, typ), v in zip(schema, row):
            if v is None:
                continue
            ok = (not isinstance(v, bool) and isinstance(v, int)
                  and INT_RANGES[typ][0] <= v <= INT_RANGES[typ][1]) if typ in INT_RANGES \
                else isinstance(v, str)
            if not ok:
                raise InputError(f"initial_rows[{i}]: {v!r} is not a value of column {col} "
                                 f"({typ})", path, line)


# -- filters ----------------------------------------------------------------------------------
@dataclass
class Filters:
    profiles: tuple[str, ...] = ()       # names or shell globs
    catalogs: tuple[str, ...] = ()
    formats: tuple[int, ...] = ()
    commands: tuple[str, ...] = ()       # combos as "DELETE+UPDATE"; "DELETE" = any combo with it
    modes: tuple[str, ...] = ()          # copy-on-write | merge-on-read (cow | mor)
    isolations: tuple[str, ...] = ()     # serializable | snapshot | none
    engines: tuple[str, ...] = ()        # spark-3.5 | pyiceberg-0.12 | none


def split_list(values: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``("a,b", "c")`` -> ``("a", "b", "c")`` (options may be repeated or comma-separated)."""
    return tuple(x.strip() for v in values for x in str(v).split(",") if x.strip())


def profile_facts(name: str) -> dict:
    """What a profile encodes: its engine, table mode (of DELETE/UPDATE/MERGE) and isolation."""
    from icecheck.models.profiles import get_profile
    p = get_profile(name)
    modes = sorted({r.mode for k, r in p.commands.items() if k in ("DELETE", "UPDATE", "MERGE")
                    and r.mode})
    return {"engine": p.engine, "isolation": p.isolation,
            "mode": "/".join(modes) if modes else "n/a", "supports": sorted(p.commands)}


def mix_label(mix: list[str]) -> str:
    """A mix's row name in the matrix and its cells' ``profile``: ``p1+p2``."""
    return "+".join(mix)


def mix_facts(mix: list[str]) -> dict:
    """A mix's facts, each the members' values joined by ``+`` (one value when they agree)."""
    members = [profile_facts(p) for p in mix]

    def joined(key: str) -> str:
        vals = list(dict.fromkeys(m[key] for m in members))
        return "+".join(vals)

    return {"engine": joined("engine"), "isolation": joined("isolation"),
            "mode": joined("mode"), "members": members}


def _facts_match(f: "Filters", modes: set, facts: list[dict]) -> bool:
    """Do the filters select a row whose writers have these facts (any writer matching)?"""
    if modes and not any(modes & set(x["mode"].split("/")) for x in facts):
        return False
    if f.isolations and not any(x["isolation"] in f.isolations for x in facts):
        return False
    if f.engines and not any(x["engine"] in f.engines for x in facts):
        return False
    return True


# -- cells ------------------------------------------------------------------------------------
_PLACEHOLDER = re.compile(r"\{(w|n|tag|new_key)\}")


def fill(template: Any, w: int, n: int = 1) -> Any:
    values = {"w": w, "n": n, "tag": f"w{w}.{n}", "new_key": 100 * w + n}
    if isinstance(template, dict):
        return {k: fill(v, w, n) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, w, n) for v in template]
    if isinstance(template, str):
        m = _PLACEHOLDER.fullmatch(template)
        if m and isinstance(values[m.group(1)], int):
            return values[m.group(1)]
        return _PLACEHOLDER.sub(lambda mm: str(values[mm.group(1)]), template)
    return template


def combo_label(combo: list[str]) -> str:
    return "+".join(combo)


@functools.lru_cache(maxsize=1)
def model_fingerprint() -> str:
    """A hash of everything that decides a cell's verdict besides the cell itself: the model,
    its profiles, the properties and their expectation table, and the engines. A resumed sweep
    re-runs every cell once any of them changes."""
    import icecheck.engines as engines
    import icecheck.models as models
    import icecheck.properties as properties

    h = hashlib.sha256()
    for pkg in (models, properties, engines):
        root = os.path.dirname(pkg.__file__)
        for dirpath, dirnames, filenames in sorted(os.walk(root)):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith((".py", ".yaml")):
                    path = os.path.join(dirpath, name)
                    h.update(os.path.relpath(path, root).encode())
                    with open(path, "rb") as f:
                        h.update(f.read())
    return h.hexdigest()[:16]


def cell_id(cell: dict) -> str:
    key = {k: cell[k] for k in ("profile", "catalog", "format_version", "commands",
                                "initial_rows", "bounds", "hypothesis")}
    if cell.get("writer_profiles"):   # only mixed cells: single-profile ids are unchanged
        key["writer_profiles"] = cell["writer_profiles"]
    key["schema"] = CELL_SCHEMA
    key["model"] = model_fingerprint()
    blob = json.dumps(key, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _combo_matches(combo: list[str], wanted: tuple[str, ...]) -> bool:
    if not wanted:
        return True
    for w in wanted:
        parts = [p.strip().upper() for p in w.split("+")]
        if len(parts) == 1 and parts[0] in [c.upper() for c in combo]:
            return True
        if sorted(parts) == sorted(c.upper() for c in combo):
            return True
    return False


def _rows(space: Space, f: Filters) -> list[tuple[str, dict, list[str] | None, list]]:
    """The matrix rows that pass the profile filters: (label, facts, mix or None, combos)."""
    modes = {MODES.get(m.lower(), m.lower()) for m in f.modes}
    rows = []
    for profile in space.profiles:
        if f.profiles and not any(fnmatch.fnmatchcase(profile, p) for p in f.profiles):
            continue
        facts = profile_facts(profile)
        if _facts_match(f, modes, [facts]):
            rows.append((profile, facts, None, space.combos))
    for i, mix in enumerate(space.mixes):
        label = mix_label(mix)
        if f.profiles and not any(fnmatch.fnmatchcase(label, p) for p in f.profiles):
            continue
        facts = mix_facts(mix)
        if _facts_match(f, modes, facts["members"]):
            own = space.mix_combos[i] if i < len(space.mix_combos) else None
            rows.append((label, facts, mix, own or space.combos))
    return rows


def cells(space: Space, filters: Filters | None = None) -> tuple[list[dict], list[dict]]:
    """The cells of ``space`` that pass ``filters``: (applicable cells, not-applicable cells)."""
    f = filters or Filters()
    out, skipped = [], []
    for profile, facts, mix, combos in _rows(space, f):
        for catalog in space.catalogs:
            if f.catalogs and catalog not in f.catalogs:
                continue
            for fv in space.format_versions:
                if f.formats and fv not in f.formats:
                    continue
                for combo in combos:
                    if not _combo_matches(combo, f.commands):
                        continue
                    ops = int(space.bounds.get("ops", 1))
                    # commands[w-1][n-1]: writer w's n-th operation
                    cmds = [[fill(space.commands[name], w, n) for n in range(1, ops + 1)]
                            for w, name in enumerate(combo, 1)]
                    cell = {"profile": profile, "engine": facts["engine"], "mode": facts["mode"],
                            "isolation": facts["isolation"], "catalog": catalog,
                            "format_version": fv, "combo": combo_label(combo),
                            "command_names": list(combo), "commands": cmds,
                            "writers": len(combo), "initial_rows": space.initial_rows,
                            "bounds": dict(space.bounds), "hypothesis": dict(space.hypothesis)}
                    if mix is not None:
                        cell["writer_profiles"] = [mix[(w - 1) % len(mix)]
                                                   for w in range(1, len(combo) + 1)]
                    cell["id"] = cell_id(cell)
                    missing: dict[str, list[str]] = {}   # who -> commands without a rule
                    for w, prog in enumerate(cmds, 1):
                        wprofile = cell["writer_profiles"][w - 1] if mix is not None else profile
                        who = f"w{w} ({wprofile})" if mix is not None else profile
                        supports = profile_facts(wprofile)["supports"]
                        for c in prog:
                            kind = c.get("sql", "").upper()
                            if kind not in supports and kind not in missing.get(who, []):
                                missing.setdefault(who, []).append(kind)
                    if missing:
                        cell["not_applicable"] = "; ".join(
                            f"{who} has no rule for {', '.join(sorted(kinds))}"
                            for who, kinds in missing.items())
                        skipped.append(cell)
                    else:
                        out.append(cell)
    return out, skipped


def explore_config(cell: dict):
    """The ``ExploreConfig`` of a cell (one writer per command, ``ops`` operations each)."""
    from icecheck.engines.config import ExploreConfig, _freeze
    from icecheck.engines.explicit import with_retries

    writers = tuple(tuple((_freeze(c),) for c in prog) for prog in cell["commands"])
    mixed = tuple(cell.get("writer_profiles") or ())
    cfg = ExploreConfig(profile=mixed[0] if mixed else cell["profile"],
                        format_version=int(cell["format_version"]),
                        catalog=cell["catalog"],
                        initial_rows=tuple(tuple(r) for r in cell["initial_rows"]),
                        writers=writers, writer_profiles=mixed,
                        name=f"{cell['profile']} {cell['combo']} {cell['catalog']} "
                             f"v{cell['format_version']}")
    return with_retries(cfg, cell["bounds"].get("retries"))


def space_summary(space: Space) -> dict:
    return {"path": space.path, "profiles": space.profiles,
            "mixes": [mix_label(m) for m in space.mixes],
            "mix_combos": {mix_label(m): [combo_label(c) for c in cs]
                           for m, cs in zip(space.mixes, space.mix_combos) if cs},
            "catalogs": space.catalogs,
            "format_versions": space.format_versions,
            "combos": [combo_label(c) for c in space.combos], "bounds": space.bounds,
            "hypothesis": space.hypothesis}
