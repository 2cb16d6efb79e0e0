"""The per-profile expectation table (``expectations.yaml``): which violations must not happen
for a profile, catalog and format version, and which are allowed, with the documented reason.

A third status, ``known_finding``, records a real anomaly we have found and reported (with its
corpus trace): it is NOT allowed by the isolation level and every run reports it as a violation,
but the CI gate does not fail on it while it reproduces as recorded (``icecheck check --strict``
does). That keeps the gate useful without loosening the property.

Every known finding also records its ``upstream`` status (reported, with the issue; fixed, in
which release; published; or not reported, saying whether the tracker was searched), so that
whoever reads a failing run sees at once whether to report it, follow an issue or upgrade
(``Expectation.upstream``: one line built from the rule's mapping, ``upstream_text``)."""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Mapping


from .violation import PROPERTIES, Violation

MUST_HOLD, ALLOWED, KNOWN_FINDING = "must_hold", "allowed", "known_finding"
STATUSES = (MUST_HOLD, ALLOWED, KNOWN_FINDING)
#: The table, beside this module's source. Found through the package's search path, not
#: through the module's own file name: in the compiled build (icecheck/compiled.py) that is the
#: extension module's, in the build folder, while the package still searches the source folder.
TABLE_PATH = os.path.join(list(sys.modules[__package__].__path__)[0], "expectations.yaml")
CONDITIONS = ("property", "profile", "isolation", "catalog", "format_version", "severity",
              "details", "mixed")
DEFAULT_REASON = "No rule allows it: the property must hold for this profile, catalog and format."
UPSTREAM_STATUSES = ("reported", "not_reported", "published", "fixed")
UPSTREAM_KEYS = ("status", "ref", "fixed_in", "note")
#: an upstream issue or pull request, optionally with its state as last seen:
#: ``apache/iceberg#10312``, ``apache/iceberg-python#3817 (open)``
UPSTREAM_REF = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+#[0-9]+( \([^()]+\))?$")
#: the library an upstream repository releases, for "fixed in <library> <release>"
_LIBRARY_OF_REPO = {"apache/iceberg": "Iceberg", "apache/iceberg-python": "PyIceberg"}


@dataclass(frozen=True)
class Expectation:
    status: str   # "must_hold" | "allowed" | "known_finding"
    reason: str
    trace: str = ""   # for known findings: the corpus trace that reproduces it
    # a risk the team accepted in its pipeline file (status allowed): what it would be
    # otherwise ("must_hold" | "known_finding")
    accepted_from: str = ""
    # for known findings: their upstream status in one line (``upstream_text``), kept when a
    # mixed run, a team's gate or an acceptance rewrites the expectation
    upstream: str = ""


def _as_list(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]


@lru_cache(maxsize=None)
def load_rules(path: str = TABLE_PATH) -> tuple[dict, ...]:
    """The rules, checked; a malformed table is an ``InputError`` naming the file and line
    (the project's one line-aware YAML loader: size, alias and depth limits included)."""
    from icecheck.scenarios.yamlload import Ctx, load_yaml_file

    ctx = Ctx(path)
    doc = ctx.mapping(load_yaml_file(path), "the expectation table")
    rules = ctx.seq(doc.get("rules"), "'rules'", doc, "rules")
    for i, r in enumerate(rules):
        r = ctx.mapping(r, f"rule {i + 1}", rules, i)
        ctx.keys(r, set(CONDITIONS) | {"status", "reason", "trace", "upstream"}, f"rule {i + 1}")
        if r.get("status") not in STATUSES:
            raise ctx.fail(f"rule {i + 1}: status must be one of {', '.join(STATUSES)}", r,
                           "status" if "status" in r else None)
        _check_upstream(ctx, r, f"rule {i + 1}")
        if not isinstance(r.get("reason"), str) or not r["reason"].strip():
            raise ctx.fail(f"rule {i + 1}: every rule needs a reason", r,
                           "reason" if "reason" in r else None)
        for p in _as_list(r.get("property", [])):
            if p not in PROPERTIES:
                raise ctx.fail(f"rule {i + 1}: unknown property {p!r}", r, "property")
        if "mixed" in r and ("profile" in r or "isolation" in r
                             or not all(isinstance(g, str) for g in _as_list(r["mixed"]))
                             or len(_as_list(r["mixed"])) < 2):
            raise ctx.fail(f"rule {i + 1}: 'mixed' lists 2 or more profile globs (one per engine "
                           f"of a mixed run) and replaces 'profile'/'isolation'", r, "mixed")
        for fv in _as_list(r.get("format_version", [])):
            if isinstance(fv, bool) or not isinstance(fv, int):
                raise ctx.fail(f"rule {i + 1}: format_version must be an integer", r,
                               "format_version")
    return tuple(rules)


def _check_upstream(ctx, r, what: str) -> None:
    """A known finding says where it stands upstream; no other rule does (an allowed or
    must-hold rule is the table's own judgement, not a defect to follow)."""
    if r.get("status") != KNOWN_FINDING:
        if "upstream" in r:
            raise ctx.fail(f"{what}: 'upstream' belongs to known_finding rules only", r,
                           "upstream")
        return
    if "upstream" not in r:
        raise ctx.fail(f"{what}: a known_finding rule needs 'upstream' (status: "
                       f"{' | '.join(UPSTREAM_STATUSES)}, with ref, fixed_in, note)", r)
    u = ctx.mapping(r["upstream"], f"{what}: 'upstream'", r, "upstream")
    ctx.keys(u, set(UPSTREAM_KEYS), f"{what}'s upstream")
    status = u.get("status")
    if status not in UPSTREAM_STATUSES:
        raise ctx.fail(f"{what}: upstream status must be one of {', '.join(UPSTREAM_STATUSES)}",
                       u, "status" if "status" in u else None)
    for key in ("fixed_in", "note"):
        if key in u and (not isinstance(u[key], str) or not u[key].strip()):
            raise ctx.fail(f"{what}: upstream {key} must be a non-empty string", u, key)
    refs = _as_list(u.get("ref", []))
    if "ref" in u and (not refs or not all(isinstance(x, str) and UPSTREAM_REF.match(x)
                                           for x in refs)):
        raise ctx.fail(f"{what}: upstream ref must be an issue or pull request as "
                       f"'owner/name#N', optionally followed by its state in parentheses "
                       f"('apache/iceberg#10312 (open)'), or a list of them", u, "ref")
    if "fixed_in" in u and status != "fixed":
        raise ctx.fail(f"{what}: upstream fixed_in is for status fixed", u, "fixed_in")
    if status == "reported" and not refs:
        raise ctx.fail(f"{what}: upstream status reported needs the issue (ref)", u, "status")
    if status == "fixed" and not (refs or "fixed_in" in u):
        raise ctx.fail(f"{what}: upstream status fixed needs the release (fixed_in) or the "
                       f"fix (ref)", u, "status")
    if status in ("not_reported", "published") and "note" not in u:
        raise ctx.fail(f"{what}: upstream status {status} needs a note (whether the tracker "
                       f"was searched; where it was published)", u, "status")


def upstream_text(rule: Mapping) -> str:
    """One line for a rule's ``upstream`` mapping (empty for a rule without one):
    ``reported upstream: apache/iceberg#10312 (open); <note>``, ``fixed in Iceberg 1.11.0
    (apache/iceberg#...); <note>``, ``published (<note>)``, ``not reported upstream (<note>)``."""
    u = rule.get("upstream")
    if not u:
        return ""
    refs = [" ".join(str(x).split()) for x in _as_list(u.get("ref", []))]
    note = " ".join(str(u.get("note", "")).split())
    status = u.get("status")
    if status == "not_reported":
        return "not reported upstream" + (f" ({note})" if note else "")
    if status == "reported":
        head = f"reported upstream: {', '.join(refs)}"
    elif status == "fixed":
        repo = refs[0].split("#")[0] if refs else "apache/iceberg"
        library = _LIBRARY_OF_REPO.get(repo, repo)
        head = (f"fixed in {library} {u['fixed_in']}" if u.get("fixed_in")
                else "fixed upstream") + (f" ({', '.join(refs)})" if refs else "")
    else:
        return "published" + (f" ({'; '.join(refs + [note] if note else refs)})"
                              if refs or note else "")
    return head + (f"; {note}" if note else "")


def _isolation_of(profile: str) -> str | None:
    try:
        from icecheck.models.profiles import get_profile
        return get_profile(profile).isolation
    except KeyError:
        return None


def _matches(rule: dict, profile, catalog: str, fv: int, v: Violation) -> bool:
    """``profile`` is a name, or for a rule with ``mixed`` the tuple of a mixed run's
    profiles: each glob of ``mixed`` must match one of them (a mixed rule never matches a
    single-profile run, nor a plain rule a tuple)."""
    if "mixed" in rule:
        if not isinstance(profile, tuple) or not all(
                any(fnmatch.fnmatchcase(p, g) for p in profile) for g in _as_list(rule["mixed"])):
            return False
    elif profile is not None and not isinstance(profile, str):
        return False   # a mixed run's tuple; None (raw operations, no profile) matches plain rules
    if "property" in rule and v.property not in _as_list(rule["property"]):
        return False
    if "profile" in rule and (profile is None or not any(fnmatch.fnmatchcase(profile, p)
                                                         for p in _as_list(rule["profile"]))):
        return False
    if "isolation" in rule:
        # a commit at its own level (a Spark overwrite's write option) is judged at that level
        # (properties/command_level.py), any other at its profile's
        level = (v.details or {}).get("command_isolation")
        if level is None and profile is not None:
            level = _isolation_of(profile)
        if level not in _as_list(rule["isolation"]):
            return False
    if "catalog" in rule and catalog not in _as_list(rule["catalog"]):
        return False
    if "format_version" in rule and int(fv) not in [int(x) for x in _as_list(rule["format_version"])]:
        return False
    if "severity" in rule and v.severity not in _as_list(rule["severity"]):
        return False
    for k, want in (rule.get("details") or {}).items():
        if k not in v.details or v.details[k] not in _as_list(want):
            return False
    return True


_STRICTNESS = {MUST_HOLD: 0, KNOWN_FINDING: 1, ALLOWED: 2}
_ISOLATION_RANK = {"serializable": 2, "snapshot": 1, "none": 0}


def _isolation_of(profile: str) -> str:
    from icecheck.models.profiles import get_profile
    try:
        return get_profile(profile).isolation
    except KeyError:
        return "none"


_OP_LABEL = re.compile(r"^(w\d+)\.\d+$")


def _op_labels(violation: Violation):
    """The operation labels (``w2.1``) among ``violation``'s details' values (a cycle's
    operations, who deleted a key and who brought it back, who wrote each row, who added a
    delete file and who removed its data file...), each with its writer."""
    stack = [violation.details or {}]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            m = _OP_LABEL.match(x)
            if m:
                yield x, m.group(1)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, (list, tuple)):
            stack.extend(x)


def last_committer(violation: Violation, commit_order: Mapping[str, int] | None) -> str | None:
    """The writer whose operation, among those ``violation`` names, committed last on the
    table's lineage (``commit_order``: operation label -> its lineage position, see
    ``properties.commit_order``), or None (no order given, or none of them on the lineage)."""
    if not commit_order:
        return None
    on_lineage = [(commit_order[label], writer) for label, writer in _op_labels(violation)
                  if label in commit_order]
    return max(on_lineage)[1] if on_lineage else None


def involved_writers(violation: Violation) -> frozenset[str]:
    """The writers whose operations ``violation`` names (``_op_labels``)."""
    return frozenset(writer for _, writer in _op_labels(violation))


def expectation(profile, catalog: str, format_version: int, violation: Violation,
                writer_profile: Callable[[str], str] | None = None,
                commit_order: Mapping[str, int] | None = None) -> Expectation:
    """The expectation of ``violation``. ``profile`` is one profile name, or a tuple of the
    profiles of a mixed-engine run. With ``writer_profile`` (writer name -> its profile), a
    violation whose writers (``involved_writers``) all run one profile is judged as in a run of
    that profile alone: two Spark jobs' anomaly beside a PyIceberg script that took no part in
    it is a Spark one (a known Spark finding stays one, with its own reason and trace).
    Otherwise a rule naming the run's engines (``mixed:``) comes first: a finding confirmed on
    those engines together. Then, with ``commit_order`` (``properties.commit_order``), the
    profile of the writer whose commit came last among those the violation involves decides,
    when that engine validates at an isolation level (``_responsible``): a snapshot-isolation
    DELETE that loses to a serializable MERGE is the DELETE's known anomaly. Otherwise (no
    order, or a last committer that validates nothing: a naive client, a streaming sink)
    the strictest of the profiles' expectations holds, so that what a client that validates
    nothing does to a Spark job's rows is a must-hold violation."""
    if isinstance(profile, (tuple, list)):
        profile = tuple(profile)
        involved = involved_writers(violation) if writer_profile is not None else ()
        narrowed = tuple(sorted({writer_profile(w) for w in involved})) if involved else ()
        if len(narrowed) == 1:
            # the writers of one engine made it: no cross-engine rule explains it
            return _expectation(narrowed[0], catalog, format_version, violation)
        for rule in load_rules():
            if "mixed" in rule and _matches(rule, profile, catalog, format_version, violation):
                return _of_rule(rule)
        last = last_committer(violation, commit_order) if narrowed else None
        if last is not None and _isolation_of(writer_profile(last)) in ("serializable",
                                                                       "snapshot"):
            return _responsible(writer_profile(last), last, catalog, format_version, violation)
        if narrowed:
            profile = narrowed
        found = [(_expectation(p, catalog, format_version, violation), p) for p in profile]
        # the strictest; among equally strict, the reason of the engine that promises most (a
        # duplicate two Spark snapshot-isolation jobs make beside a Flink sink is allowed by
        # Spark's snapshot isolation, not explained by the sink's lack of validation)
        best, best_profile = min(found, key=lambda ep: (
            _STRICTNESS.get(ep[0].status, 0), -_ISOLATION_RANK.get(_isolation_of(ep[1]), 0)))
        return _stricter_promise(best, best_profile, found, involved, writer_profile)
    return _expectation(profile, catalog, format_version, violation)


#: What the table's readers see, whatever allowed it: an acknowledged write gone, a deleted row
#: back, a key twice, rows no serial history gives, a table that cannot be read.
READER_VISIBLE = frozenset({"lost_write", "undelete", "duplicate_keys", "consistent_read",
                            "readable"})


def reader_visible(v: Violation) -> bool:
    """Would the table's readers see ``v``? The ``READER_VISIBLE`` properties; a dangling
    delete whose rows are visible again (an undelete by another name); and a dependency cycle
    unless both conflicting writes left the table as a serial order would (only what the
    commands reported differs: ``equivalent_writes``, ``delete_where_misses_new_version``,
    properties/isolation.py). A dangling delete file readers skip, and such a cycle, are what
    readers cannot see."""
    if v.property in READER_VISIBLE:
        return True
    d = v.details or {}
    if v.property == "dangling_deletes":
        return d.get("classification") == "resurrected"
    if v.property == "isolation":
        return not (d.get("equivalent_writes") or d.get("delete_where_misses_new_version"))
    return False


def for_readers(e: Expectation, v: Violation) -> Expectation:
    """A team's gate (``ExploreConfig.protect_readers``, every pipeline check): an anomaly the
    table's readers would see is never allowed, whatever catalog, engine or isolation level
    permits it: those are the team's choices, and its table is what the gate protects. The
    expectation table's reason stays, after the gate's."""
    if e.status != ALLOWED or not reader_visible(v):
        return e
    return Expectation(MUST_HOLD, "The table's readers would see it, so a pipeline's gate never "
                                  f"allows it; the expectation table alone would: {e.reason}",
                       e.trace, upstream=e.upstream)


def expectation_for(cfg, v: Violation, commit_order: Mapping[str, int] | None = None
                    ) -> Expectation:
    """The expectation of ``v`` in the run of exploration configuration ``cfg``: its judged
    profiles, catalog and format version, each writer's profile, and, for a team's gate
    (``cfg.protect_readers``), ``for_readers``. Every judgement of a configuration's state
    (searches, traces, the explorer) asks here."""
    e = expectation(cfg.judged_profiles, cfg.catalog, cfg.format_version, v,
                    cfg.writer_profile, commit_order)
    if not getattr(cfg, "protect_readers", False):
        return e
    return accepted(for_readers(e, v), v, getattr(cfg, "accepted", ()))


ACCEPTED_PREFIX = "Accepted in the pipeline file: "


def accepted(e: Expectation, v: Violation, acceptances) -> Expectation:
    """A failing anomaly (must hold, or a known finding) that the team accepted in its pipeline
    file is allowed, with the team's reason: the first acceptance of its property whose
    writers include every writer ``v`` involves (``involved_writers``; an acceptance with no
    writers takes any). Judged inside the search, so that the search goes on looking for an
    instance of the same property the acceptance does not cover (another pair of jobs)."""
    if e.status == ALLOWED:
        return e
    involved = {int(w[1:]) for w in involved_writers(v)}
    for prop, writers, reason in acceptances:
        if prop == v.property and (not writers or involved <= set(writers)):
            return Expectation(ALLOWED, f"{ACCEPTED_PREFIX}{reason}", e.trace,
                               accepted_from=e.status, upstream=e.upstream)
    return e


def _responsible(profile: str, writer: str, catalog: str, format_version: int,
                 violation: Violation) -> Expectation:
    """The expectation of a mixed run's violation under the profile of the writer whose
    commit came last among those it involves: optimistic concurrency validates a commit
    against what committed before it, so only that commit's checks (the isolation level its
    engine read from the table for that command) could refuse the history; each earlier one
    kept its own promise when it committed. A merge-on-read DELETE at snapshot isolation that
    commits after a serializable MERGE of its row leaves the MERGE's row (the known
    snapshot-isolation undelete, confirmed on Spark with per-command levels:
    tests/conformance/test_spark_target.py), whatever the MERGE's level."""
    e = _expectation(profile, catalog, format_version, violation)
    if e.status == MUST_HOLD:
        return e
    return Expectation(e.status, f"Judged under {profile} ({writer}), whose commit came last "
                                 f"among the writers it involves: {e.reason}", e.trace,
                       upstream=e.upstream)


def _stricter_promise(best: Expectation, best_profile: str, found: list, involved,
                      writer_profile: Callable[[str], str] | None) -> Expectation:
    """A mixed run's must-hold verdict (the strictest: no order known, or a last committer
    that validates nothing) that another involved writer's profile alone would not give: its
    reason says so, naming that profile's own verdict and reason, so that a reader sees what
    that engine alone (say, a client that validates nothing) is allowed to do and that the run
    holds it to the stricter writer's promise."""
    if best.status != MUST_HOLD:
        return best
    words = {ALLOWED: "allowed", KNOWN_FINDING: "a recorded known finding"}
    weaker = []
    for e, p in found:
        if e.status == MUST_HOLD:
            continue
        who = sorted(w for w in involved if writer_profile is not None and writer_profile(w) == p)
        weaker.append(f"under {p} alone{' (' + ', '.join(who) + ')' if who else ''} it is "
                      f"{words.get(e.status, e.status)}: {e.reason}")
    if not weaker:
        return best
    return Expectation(MUST_HOLD, f"Judged under the stricter writer's promise ({best_profile}); "
                                  + "; ".join(weaker), best.trace, upstream=best.upstream)


_MEMO: dict = {}       # (rules, profile, catalog, format, what the rules read) -> Expectation


def _expectation(profile: str, catalog: str, format_version: int, violation: Violation) -> Expectation:
    """Memoised by what the rules read of the violation (its property, severity and the detail
    keys some rule names): an exhaustive search asks the same question at thousands of states."""
    rules = load_rules()
    dkeys = _detail_keys(rules)
    details = violation.details or {}
    key = (id(rules), profile, catalog, format_version, violation.property, violation.severity,
           tuple((k, repr(details[k])) if k in details else (k,) for k in dkeys),
           details.get("command_isolation"))
    got = _MEMO.get(key)
    if got is None or got[0] is not rules:
        if len(_MEMO) > 100_000:
            _MEMO.clear()
        got = _MEMO[key] = (rules, _expectation_of(rules, profile, catalog, format_version,
                                                   violation))
    return got[1]


def _detail_keys(rules) -> tuple:
    got = _DETAIL_KEYS.get(id(rules))
    if got is None or got[0] is not rules:
        keys = tuple(sorted({k for r in rules for k in (r.get("details") or {})}))
        got = _DETAIL_KEYS[id(rules)] = (rules, keys)
    return got[1]


_DETAIL_KEYS: dict = {}


def _expectation_of(rules, profile: str, catalog: str, format_version: int,
                    violation: Violation) -> Expectation:
    for rule in rules:
        if _matches(rule, profile, catalog, format_version, violation):
            return _of_rule(rule)
    return Expectation(MUST_HOLD, DEFAULT_REASON)


def _of_rule(rule: Mapping) -> Expectation:
    """The expectation a matching rule gives: its status, reason (one line), corpus trace and
    upstream status (``upstream_text``)."""
    return Expectation(rule["status"], " ".join(str(rule["reason"]).split()),
                       str(rule.get("trace", "")), upstream=upstream_text(rule))


def split_expected(profile: str, catalog: str, format_version: int, violations,
                   expect: Callable[[Violation], Expectation] | None = None):
    """(unexpected: violations of properties that must hold, [(expected violation, why)]).

    Known findings stay in the first list: they are violations. Only the CI gate tolerates them
    (see ``is_known_finding``). ``expect``: ``expectation`` of a violation for these
    profile, catalog and format, memoised by the caller (``traces.execute.judge``)."""
    unexpected: list[Violation] = []
    allowed: list[tuple[Violation, Expectation]] = []
    for v in violations:
        e = expect(v) if expect is not None else expectation(profile, catalog, format_version, v)
        if e.status == ALLOWED:
            allowed.append((v, e))
        else:
            unexpected.append(v)
    return unexpected, allowed


def is_known_finding(profile: str, catalog: str, format_version: int, violation: Violation) -> bool:
    return expectation(profile, catalog, format_version, violation).status == KNOWN_FINDING
