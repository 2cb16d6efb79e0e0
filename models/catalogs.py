"""Named catalogs: ``catalog: rest`` in a pipeline, mapped to the model's swap and faults.

Users know which catalog they run (REST, Hive, Glue, JDBC ...), not which of the model's three
swaps (``catalog.KINDS``) it amounts to, nor which commit faults its client libraries can really
bring to a writer. ``catalogs.yaml`` answers both, per name, with the source lines (at a named
release) that establish each answer, so the mapping can be checked and corrected as data rather
than argued in code. This module reads that table and turns a pipeline's ``catalog`` section into
the model's settings: ``kind``, ``faults`` (a commit whose outcome the writer never learns),
``applied_failed`` (a commit applied but answered CommitFailedException) and ``crashes`` (the
writer's own, independent of the catalog).

Faults depend on the client as much as on the catalog (PyIceberg's Glue client resends a commit
with no status check, Java's settles it by reloading the table), so a name's faults are those of
the clients its pipeline's jobs commit through: ``java`` for every engine but PyIceberg's.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from . import catalog as cat

TABLE_PATH = os.path.join(os.path.dirname(__file__), "catalogs.yaml")
#: the catalog faults a name can enable, and the model flag (ExploreConfig field) each sets
FAULTS = ("commit_unknown", "applied_failed")
MODEL_FLAG = {"commit_unknown": "faults", "applied_failed": "applied_failed"}
EXHIBITS = ("can", "cannot", "unknown")
CLIENTS = ("java", "pyiceberg")
#: what a pipeline's ``catalog`` mapping may hold
SECTION_KEYS = ("name", "kind", "faults", "crashes", "applied_failed")
_CITATION = re.compile(r"^([a-z0-9.-]+):([^:\s]+):(\d+)-(\d+)$")


@dataclass(frozen=True)
class Citation:
    """Lines FIRST-LAST of PATH in SOURCE (a release named under ``sources:``), holding QUOTE."""

    source: str
    path: str
    first: int
    last: int
    quote: str

    def __str__(self) -> str:
        return f"{self.source}:{self.path}:{self.first}-{self.last}"


@dataclass(frozen=True)
class Fault:
    exhibits: str                       # can | cannot | unknown (EXHIBITS)
    how: str
    sources: tuple[Citation, ...]


@dataclass(frozen=True)
class Client:
    """One client library's view of a catalog: each fault, or why it cannot commit at all."""

    faults: tuple[tuple[str, Fault], ...] = ()
    unsupported: str | None = None
    sources: tuple[Citation, ...] = ()

    def fault(self, name: str) -> Fault | None:
        return dict(self.faults).get(name)


@dataclass(frozen=True)
class NamedCatalog:
    name: str
    aliases: tuple[str, ...]
    title: str
    commit: str
    kind: str | None                    # None: no engine can commit through it (writable: false)
    kind_sources: tuple[Citation, ...]
    clients: tuple[tuple[str, Client], ...]
    not_established: tuple[str, ...]
    same_as: str | None = None          # whose client table this one shares
    other_sources: tuple[Citation, ...] = ()

    @property
    def writable(self) -> bool:
        return self.kind is not None

    def client(self, name: str) -> Client | None:
        return dict(self.clients).get(name)

    def fault_possible(self, fault: str, clients: tuple[str, ...] = CLIENTS) -> bool:
        """Whether ``fault`` can reach a writer of one of ``clients``: ``can`` or ``unknown``
        (not excluded by source, so a check that is to be trusted must include it)."""
        for c in clients:
            client = self.client(c)
            f = client.fault(fault) if client and not client.unsupported else None
            if f is not None and f.exhibits != "cannot":
                return True
        return False

    def faults_for(self, clients: tuple[str, ...] = CLIENTS) -> tuple[str, ...]:
        """The faults ``faults: true`` turns on for a pipeline whose jobs use ``clients``."""
        return tuple(f for f in FAULTS if self.fault_possible(f, clients))


def client_of_engine(engine: str) -> str:
    """The client library a profile's engine commits through (``Profile.engine``)."""
    return "pyiceberg" if engine.split("-")[0] == "pyiceberg" else "java"


# -- the table ---------------------------------------------------------------------------------

def _citations(ctx, node, what: str, sources: dict) -> tuple[Citation, ...]:
    from icecheck.scenarios.yamlload import LineDict
    if node is None:
        return ()
    if not isinstance(node, list):
        raise ctx.fail(f"{what} must be a list of {{at, quote}}", node)
    out = []
    for i, c in enumerate(node):
        if not isinstance(c, LineDict) or set(c) != {"at", "quote"}:
            raise ctx.fail(f"{what}[{i}] must be a mapping of at and quote", node, i)
        m = _CITATION.match(str(c["at"]))
        if not m or m.group(1) not in sources or not isinstance(c["quote"], str) \
                or int(m.group(3)) > int(m.group(4)):
            raise ctx.fail(f"{what}[{i}]: at must be SOURCE:PATH:FIRST-LAST with SOURCE one of "
                           f"{', '.join(sources)}, and quote a string", c, "at")
        out.append(Citation(m.group(1), m.group(2), int(m.group(3)), int(m.group(4)),
                            c["quote"]))
    return tuple(out)


def _text(ctx, node, key: str, what: str) -> str:
    v = node.get(key)
    if not isinstance(v, str) or not v.strip():
        raise ctx.fail(f"{what}.{key} must be a non-empty string", node, key)
    return " ".join(v.split())


def _client(ctx, node, what: str, sources: dict) -> Client:
    node = ctx.mapping(node, what)
    if "unsupported" in node:
        if set(node) - {"unsupported", "sources"}:
            raise ctx.fail(f"{what}: an unsupported client has only unsupported and sources",
                           node)
        return Client(unsupported=_text(ctx, node, "unsupported", what),
                      sources=_citations(ctx, node.get("sources"), f"{what}.sources", sources))
    if set(node) != set(FAULTS):
        raise ctx.fail(f"{what} must give each of {', '.join(FAULTS)} (or unsupported)", node)
    faults = []
    for f in FAULTS:
        fn = ctx.mapping(node[f], f"{what}.{f}", node, f)
        if set(fn) != {"exhibits", "how", "sources"} or fn["exhibits"] not in EXHIBITS:
            raise ctx.fail(f"{what}.{f} must have exhibits ({' | '.join(EXHIBITS)}), how and "
                           "sources", fn)
        faults.append((f, Fault(fn["exhibits"], _text(ctx, fn, "how", f"{what}.{f}"),
                                _citations(ctx, fn["sources"], f"{what}.{f}.sources", sources))))
    return Client(tuple(faults))


@lru_cache(maxsize=4)
def load_table(path: str = TABLE_PATH) -> dict[str, NamedCatalog]:
    """Every named catalog of ``path``, by name; malformed data names its line."""
    from icecheck.scenarios.yamlload import Ctx, load_yaml_file
    ctx = Ctx(path)
    doc = ctx.mapping(load_yaml_file(path), "the catalog table")
    sources = dict(ctx.mapping(doc.get("sources"), "sources", doc, "sources"))
    entries = ctx.mapping(doc.get("catalogs"), "catalogs", doc, "catalogs")
    allowed = {"title", "commit", "kind", "writable", "kind_sources", "clients", "aliases",
               "not_established", "notes_sources"}
    raw: dict[str, tuple[Any, Any]] = {}
    for name, node in entries.items():
        what = f"catalogs.{name}"
        node = ctx.mapping(node, what, entries, name)
        extra = set(node) - allowed
        if extra:
            raise ctx.fail(f"{what}: unknown key {sorted(extra)[0]!r}", node, sorted(extra)[0])
        if node.get("writable", True) is not False and node.get("kind") not in cat.KINDS:
            raise ctx.fail(f"{what}.kind must be one of {', '.join(cat.KINDS)}", node, "kind")
        raw[name] = (node, node.get("clients"))
    out: dict[str, NamedCatalog] = {}
    for name, (node, clients_node) in raw.items():
        what = f"catalogs.{name}"
        writable = node.get("writable", True) is not False
        same_as = None
        clients: tuple[tuple[str, Client], ...] = ()
        if writable:
            cn = ctx.mapping(clients_node, f"{what}.clients", node, "clients")
            if "same_as" in cn:
                same_as = cn["same_as"]
                if set(cn) != {"same_as"} or same_as not in raw or "same_as" in raw[same_as][1]:
                    raise ctx.fail(f"{what}.clients.same_as must name a catalog that lists "
                                   "its own clients", cn, "same_as")
                cn = raw[same_as][1]
            if set(cn) != set(CLIENTS):
                raise ctx.fail(f"{what}.clients must give {', '.join(CLIENTS)}", cn)
            clients = tuple((c, _client(ctx, cn[c], f"{what}.clients.{c}", sources))
                            for c in CLIENTS)
        aliases = node.get("aliases", [])
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise ctx.fail(f"{what}.aliases must be a list of names", node, "aliases")
        ne = node.get("not_established", [])
        if not isinstance(ne, list) or not all(isinstance(x, str) for x in ne):
            raise ctx.fail(f"{what}.not_established must be a list of strings", node,
                           "not_established")
        out[name] = NamedCatalog(
            name, tuple(aliases), _text(ctx, node, "title", what),
            _text(ctx, node, "commit", what), node.get("kind") if writable else None,
            _citations(ctx, node.get("kind_sources"), f"{what}.kind_sources", sources),
            clients, tuple(" ".join(x.split()) for x in ne), same_as,
            _citations(ctx, node.get("notes_sources"), f"{what}.notes_sources", sources))
    seen: dict[str, str] = {}
    for c in out.values():
        for n in (c.name,) + c.aliases:
            if n in seen or n in cat.KINDS:
                raise ctx.fail(f"catalog name {n!r} is used twice (or is a model kind)", entries)
            seen[n] = c.name
    return out


def sources(path: str = TABLE_PATH) -> dict[str, dict]:
    """The releases the citations name (``sources:``), by prefix."""
    from icecheck.scenarios.yamlload import load_yaml_file
    return {k: dict(v) for k, v in load_yaml_file(path)["sources"].items()}


def names() -> tuple[str, ...]:
    """Every name a pipeline may give, aliases included, sorted."""
    return tuple(sorted(n for c in load_table().values() for n in (c.name,) + c.aliases))


def lookup(name: str) -> NamedCatalog | None:
    for c in load_table().values():
        if name == c.name or name in c.aliases:
            return c
    return None


# -- a pipeline's catalog section --------------------------------------------------------------

def _line(node: Any, key: Any = None) -> int | None:
    from icecheck.scenarios.yamlload import line_of
    return line_of(node, key)


def _job_clients(doc: dict, path: str, named: NamedCatalog) -> tuple[str, ...]:
    """The clients the pipeline's jobs commit through (every client when no job names a known
    profile: the loader refuses such jobs later, at their own lines). A job whose client cannot
    commit through ``named`` is refused at its profile's line."""
    from icecheck.models.profiles import get_profile
    from icecheck.scenarios.errors import InputError
    jobs = doc.get("jobs")
    found: list[str] = []
    for i, job in enumerate(jobs if isinstance(jobs, list) else []):
        if not isinstance(job, dict) or not isinstance(job.get("profile"), str):
            continue
        try:
            engine = get_profile(job["profile"]).engine
        except (KeyError, TypeError):
            continue
        client = client_of_engine(engine)
        entry = named.client(client)
        if entry is not None and entry.unsupported:
            raise InputError(
                f"jobs[{i}] ({job.get('name', f'job{i + 1}')}): profile {job['profile']} "
                f"commits through {client}, which cannot use catalog {named.name}: "
                f"{entry.unsupported} (docs/catalogs.md)", path, _line(job, "profile"))
        if client not in found:
            found.append(client)
    return tuple(found) or CLIENTS


def pipeline_catalog(doc: dict, path: str) -> dict:
    """A pipeline's ``catalog`` section (absent, a name or kind, or a mapping of ``name`` or
    ``kind`` and the flags) as the model's settings: {kind, faults, crashes, applied_failed,
    name}. With a name, ``faults: true`` turns on every fault the table says the pipeline's
    clients can see; ``applied_failed`` given explicitly overrides that one fault, and cannot
    be asked of a catalog whose clients cannot see it."""
    from icecheck.scenarios.errors import InputError
    from icecheck.scenarios.yamlload import kind_of
    node = doc.get("catalog", {})
    at = _line(doc, "catalog")
    known = (f"expected a catalog ({', '.join(names())}; docs/catalogs.md) or a model kind "
             f"({', '.join(cat.KINDS)})")
    if isinstance(node, str):
        node = {"name": node} if node not in cat.KINDS else {"kind": node}
        key_line = lambda key: at                                        # noqa: E731
    elif isinstance(node, dict):
        for k in node:
            if k not in SECTION_KEYS:
                raise InputError(f"catalog: unknown key {k!r}; expected some of "
                                 f"{', '.join(sorted(SECTION_KEYS))}", path, _line(node, k))
        key_line = lambda key: _line(node, key)                          # noqa: E731
    else:
        raise InputError(f"catalog must be a catalog name such as rest, a model kind such as "
                         f"cas, or a mapping, not {kind_of(node)}", path, at)
    for flag in ("faults", "crashes", "applied_failed"):
        if not isinstance(node.get(flag, False), bool):
            raise InputError(f"catalog.{flag} must be true or false", path, key_line(flag))
    out = {"kind": cat.CAS, "faults": bool(node.get("faults", False)),
           "crashes": bool(node.get("crashes", False)),
           "applied_failed": bool(node.get("applied_failed", False)), "name": None}
    if "name" in node and "kind" in node:
        raise InputError("catalog: give name (the catalog you run) or kind (the model's swap), "
                         "not both", path, key_line("name"))
    if "kind" in node:
        kind = node["kind"]
        if kind not in cat.KINDS:
            hint = (f"; {kind!r} is a catalog name: write name: {kind}"
                    if isinstance(kind, str) and lookup(kind) else "")
            raise InputError(f"unknown catalog kind {kind!r}; expected one of "
                             f"{', '.join(cat.KINDS)}{hint}", path, key_line("kind"))
        out["kind"] = kind
        return out
    if "name" not in node:
        return out
    name = node["name"]
    named = lookup(name) if isinstance(name, str) else None
    if named is None:
        raise InputError(f"unknown catalog {name!r}; {known}", path, key_line("name"))
    if not named.writable:
        raise InputError(f"catalog {name} is refused: {named.commit} (docs/catalogs.md)",
                         path, key_line("name"))
    clients = _job_clients(doc, path, named)
    wanted = {"commit_unknown": out["faults"],
              "applied_failed": node.get("applied_failed", out["faults"])}
    if node.get("applied_failed") is True and not named.fault_possible("applied_failed",
                                                                        clients):
        why = "; ".join(f"{c}: {named.client(c).fault('applied_failed').how}" for c in clients
                        if named.client(c) and named.client(c).fault("applied_failed"))
        raise InputError(f"catalog.applied_failed: the clients of catalog {name} "
                         f"({', '.join(clients)}) cannot see this fault ({why}); kind: "
                         f"{named.kind} with applied_failed: true explores it anyway",
                         path, key_line("applied_failed"))
    on = named.faults_for(clients)
    out.update(kind=named.kind, name=named.name,
               faults=wanted["commit_unknown"] and "commit_unknown" in on,
               applied_failed=bool(wanted["applied_failed"]) and "applied_failed" in on)
    return out


# -- a job's own client ------------------------------------------------------------------------
CLIENT_KEYS = ("name", "faults", "applied_failed")
#: Hive clients that take the metastore lock: Java's default, and PyIceberg always
#: (models/catalogs.yaml hive, hive-no-lock's pyiceberg entry)
LOCKING = ("hive",)


def _family(name: str) -> str:
    return name.split("-")[0]


def job_clients(doc: dict, path: str, catalog: dict) -> tuple:
    """Each job's catalog client, when any job names one (``client:``), as ((writer index,
    swap, faults, applied_failed, catalog name), ...) for ``ExploreConfig.clients``; () when
    none does (every writer then commits as the catalog section says). ``client:`` is a named
    catalog of the same family as the pipeline's (``hive-no-lock`` beside ``hive``), or a
    mapping of ``name`` and the flags, which a job's client library must be able to see
    (models/catalogs.yaml); a job that names none uses the catalog section's. Hive jobs that
    lock beside jobs that do not get the two-step locked swap (models/clients.py)."""
    from icecheck.models.clients import HMS_LOCK
    from icecheck.models.profiles import get_profile
    from icecheck.scenarios.errors import InputError
    from icecheck.scenarios.yamlload import kind_of
    jobs = doc.get("jobs")
    jobs = jobs if isinstance(jobs, list) else []
    if not any(isinstance(j, dict) and "client" in j for j in jobs):
        return ()
    server = catalog.get("name")
    if server is None:
        raise InputError("a job's client: needs the pipeline's catalog by name (catalog: hive, "
                         "catalog: {name: rest, ...}; docs/catalogs.md), not a model kind",
                         path, _line(doc, "catalog"))
    out = []
    for i, job in enumerate(jobs):
        if not isinstance(job, dict):
            continue
        what = f"jobs[{i}].client"
        node = job.get("client", {})
        at = _line(job, "client") or _line(job)
        if isinstance(node, str):
            node = {"name": node}
        if not isinstance(node, dict):
            raise InputError(f"{what} must be a catalog name such as hive-no-lock or a mapping "
                             f"of {', '.join(CLIENT_KEYS)}, not {kind_of(node)}", path, at)
        for k in node:
            if k not in CLIENT_KEYS:
                raise InputError(f"{what}: unknown key {k!r}; expected some of "
                                 f"{', '.join(CLIENT_KEYS)}", path, _line(node, k) or at)
        for flag in ("faults", "applied_failed"):
            if not isinstance(node.get(flag, False), bool):
                raise InputError(f"{what}.{flag} must be true or false", path,
                                 _line(node, flag) or at)
        name = node.get("name", server)
        named = lookup(name) if isinstance(name, str) else None
        if named is None or not named.writable:
            raise InputError(f"{what}: unknown catalog {name!r}; expected one of "
                             f"{', '.join(n for n in names() if lookup(n).writable)}", path, at)
        if _family(named.name) != _family(server):
            raise InputError(f"{what}: a {named.name} client cannot commit to the pipeline's "
                             f"{server} catalog (a client of the same catalog: "
                             f"{', '.join(n for n in names() if _family(n) == _family(server))})",
                             path, at)
        try:
            lib = client_of_engine(get_profile(job.get("profile")).engine)
        except (KeyError, TypeError):
            continue         # the loader refuses the profile at its own line
        entry = named.client(lib)
        if entry is not None and entry.unsupported:
            raise InputError(f"{what}: profile {job.get('profile')} commits through {lib}, which "
                             f"cannot use catalog {named.name}: {entry.unsupported}", path, at)
        wanted = {"commit_unknown": node.get("faults", catalog.get("faults", False)),
                  "applied_failed": node.get("applied_failed",
                                             node.get("faults", catalog.get("applied_failed",
                                                                            False)))}
        on = named.faults_for((lib,))
        if node.get("applied_failed") is True and "applied_failed" not in on:
            raise InputError(f"{what}.applied_failed: a {lib} client of {named.name} cannot see "
                             f"this fault (docs/catalogs.md)", path, _line(node, "applied_failed")
                             or at)
        locks = named.name in LOCKING or (lib == "pyiceberg" and _family(named.name) == "hive")
        out.append([i + 1, named.kind, bool(wanted["commit_unknown"]) and "commit_unknown" in on,
                    bool(wanted["applied_failed"]) and "applied_failed" in on, named.name, locks])
    hive = [c for c in out if _family(c[4]) == "hive"]
    if any(c[5] for c in hive) and not all(c[5] for c in hive):
        for c in hive:
            if c[5]:
                c[1] = HMS_LOCK
    return tuple(tuple(c[:5]) for c in out)


# -- docs/catalogs.md's generated part ---------------------------------------------------------

def markdown() -> str:
    """docs/catalogs.md's per-catalog sections, from the table (tests/test_catalogs.py keeps
    the page equal to this, so the page cannot drift from what the loader does)."""
    table = load_table()
    src = sources()
    lines = ["| Name | Model kind | `faults: true` turns on (Java clients) | "
             "(PyIceberg clients) |", "|---|---|---|---|"]
    for c in table.values():
        per = []
        for client in CLIENTS:
            entry = c.client(client)
            if not c.writable:
                per.append("refused: cannot commit")
            elif entry.unsupported:
                per.append("refused: no such client")
            else:
                per.append(", ".join(f"{f}" + (" (not established)"
                                               if entry.fault(f).exhibits == "unknown" else "")
                                     for f in c.faults_for((client,))) or "none")
        names_ = ", ".join(f"`{n}`" for n in (c.name,) + c.aliases)
        lines.append(f"| {names_} | {c.kind or '-'} | {per[0]} | {per[1]} |")
    lines += ["", "Sources (each citation is `SOURCE:PATH:FIRST-LAST` at these releases):", ""]
    for k, v in src.items():
        where = v.get("repository", v.get("package"))
        at = f" tag `{v['release']}`" if "release" in v else ""
        note = f" ({v['note']})" if "note" in v else ""
        lines.append(f"* `{k}`: {where}{at}{note}")

    def cites(cs: tuple[Citation, ...]) -> str:
        return "; ".join(f"`{c}`" for c in cs)

    for c in table.values():
        lines += ["", f"### `{c.name}`: {c.title}", ""]
        if c.aliases:
            lines += [f"Also named: {', '.join(f'`{a}`' for a in c.aliases)}.", ""]
        lines += [f"**Commit.** {c.commit}", ""]
        if c.writable:
            lines += [f"**Model kind:** `{c.kind}`. Sources: {cites(c.kind_sources)}.", ""]
        else:
            lines += [f"**Refused** (`catalog: {c.name}` exits 2). Sources: "
                      f"{cites(c.kind_sources)}.", ""]
        if c.same_as:
            lines += [f"**Clients:** as for `{c.same_as}` (its section says what each client "
                      "can see).", ""]
        elif c.writable:
            for client in CLIENTS:
                entry = c.client(client)
                if entry.unsupported:
                    lines.append(f"* {client}: refused, {entry.unsupported}. "
                                 f"Sources: {cites(entry.sources)}.")
                    continue
                for f in FAULTS:
                    x = entry.fault(f)
                    lines.append(f"* {client}, `{f}`: **{x.exhibits}**. {x.how} "
                                 f"Sources: {cites(x.sources)}.")
            lines.append("")
        if c.not_established:
            lines += ["Not established:", ""]
            lines += [f"* {x}" for x in c.not_established]
            if c.other_sources:
                lines.append(f"* (sources: {cites(c.other_sources)})")
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":          # python -m icecheck.models.catalogs: print the docs part
    print(markdown(), end="")
