"""Say how to fix a failing pipeline, and prove the fix.

For each anomaly that fails the gate, the changes a team could make to its pipeline file are
tried, each as an edit of the file's text (so the diff shown is exactly what was checked):

* the isolation level: a job on a ``*-snapshot`` profile moves to ``*-serializable`` (and the
  table's ``write.*.isolation-level`` properties with it);
* the command's form: an insert-only MERGE (``MERGE_INSERT``, planned by Spark as an unvalidated
  append) becomes a MERGE with a MATCHED clause;
* a compaction option: ``use-starting-sequence-number: false`` (the rewrite then conflicts with
  a concurrent equality delete instead of dropping it);
* the catalog: one with compare-and-swap;
* the table's format: v3 (deletion vectors, validated against concurrent ones);
* the engine: a job moves to the profile another of the pipeline's jobs already runs;
* the schedule: two of the anomaly's jobs never overlap (``schedule: never_overlap``).

Each edited file is loaded and explored exhaustively, as the gate would; a change *fixes* the
anomaly when the anomaly no longer fails and no other anomaly fails in its place, and the search
completed. What was tried without effect is reported too. Bounded by counts: at most
``MAX_CANDIDATES`` edits per run, each within the file's own ``bounds.max_states``.
"""

from __future__ import annotations

import difflib
import os
import re
import tempfile
from dataclasses import dataclass
from typing import Callable

from icecheck.models.profiles import get_profile, load_profiles
from icecheck.models.write_options import read_by
from icecheck.scenarios.errors import InputError
from icecheck.scenarios.yamlload import LineDict, LineList, load_yaml

from .load import Pipeline, load_pipeline

MAX_CANDIDATES = 12


@dataclass
class Fix:
    title: str
    diff: str
    result: str = ""          # what the re-check found ("passes", or what still fails)
    removes: bool = False     # the anomaly is gone and nothing else fails

    def as_json(self) -> dict:
        return {"title": self.title, "diff": self.diff, "result": self.result}


# -- text edits --------------------------------------------------------------------------------
def _set_on_line(lines: list[str], line: int | None, key: str, value: str) -> list[str] | None:
    """Replace ``key: old`` by ``key: value`` on 1-based ``line`` (a block or a flow mapping)."""
    if not line or line > len(lines):
        return None
    pat = re.compile(rf"(?P<k>(?<![\w-]){re.escape(key)}\s*:\s*)(?P<v>\"[^\"]*\"|'[^']*'|"
                     rf"[^,}}\]#\n]*[^,}}\]#\s])")
    text = lines[line - 1]
    m = pat.search(text)
    if m is None:
        return None
    out = list(lines)
    out[line - 1] = text[:m.start("v")] + value + text[m.end("v"):]
    return out


def _insert_key(lines: list[str], node: LineDict, parent_line: int | None, key: str,
                value: str) -> list[str] | None:
    """Add ``key: value`` to a block mapping whose first key is on its own line (after it,
    with the same indentation), or to a flow mapping that starts on ``parent_line``."""
    first = next(iter(node), None)
    if first is not None:
        at = node.line_of(first)
        text = lines[at - 1]
        indent = len(text) - len(text.lstrip())
        stripped = text.lstrip()
        if not stripped.startswith("{") and not stripped.startswith("-") and parent_line != at:
            return lines[:at] + [" " * indent + f"{key}: {value}"] + lines[at:]
    if parent_line:
        text = lines[parent_line - 1]
        i = text.find("{")
        if i >= 0:
            out = list(lines)
            out[parent_line - 1] = text[:i + 1] + f"{key}: {value}, " + text[i + 1:].lstrip()
            return out
    return None


def _append_schedule(lines: list[str], doc: LineDict, entry: str) -> list[str]:
    node = doc.get("schedule")
    if isinstance(node, LineList) and node:
        last = max(node.line_of(i) for i in range(len(node)))
        text = lines[last - 1]
        indent = len(text) - len(text.lstrip())
        return lines[:last] + [" " * indent + f"- {entry}"] + lines[last:]
    body = list(lines)
    while body and not body[-1].strip():
        body.pop()
    return body + ["schedule:                          # added by icecheck's fix",
                   f"  - {entry}"]


# -- candidates --------------------------------------------------------------------------------
Candidate = tuple[str, Callable[[list[str], LineDict], "list[str] | None"]]


#: maintenance commands that add no snapshot (an expiry, an orphan-file clean-up)
NO_SNAPSHOT = ("EXPIRE", "REMOVE_ORPHAN_FILES")


def candidates(p: Pipeline, jobs: tuple[str, ...]) -> list[Candidate]:
    """The edits worth trying for an anomaly that involves ``jobs``, most specific first."""
    names = [n for n, _ in p.jobs]
    index = {n: i for i, n in enumerate(names)}
    known = set(load_profiles())
    out: list[Candidate] = []
    involved = [j for j in jobs if j in index] or names

    # the isolation level of each involved job that runs at snapshot isolation
    for j in involved:
        profile = p.jobs[index[j]][1]
        if profile.endswith("-snapshot") and profile[:-len("snapshot")] + "serializable" in known:
            target = profile[:-len("snapshot")] + "serializable"
            out.append((f"run `{j}` at serializable isolation ({target})",
                        _isolation_edit(index[j], target)))
    # the insert-only MERGE of an involved job -> a MERGE with a MATCHED clause
    for j in involved:
        out.append((f"give `{j}`'s insert-only MERGE a WHEN MATCHED clause (sql: MERGE)",
                    _command_edit(index[j], "MERGE_INSERT", lambda c: {"sql": "MERGE"})))
    # a Spark overwrite validates only by its write options (models/write_options.py)
    for j in involved:
        prof = get_profile(p.jobs[index[j]][1])
        for sql in ("OVERWRITE", "OVERWRITE_PARTITIONS"):
            if "isolation-level" in read_by(prof, sql):
                out.append((f"give `{j}`'s {sql} the write options isolation-level "
                            f"serializable and validate-from-snapshot-id read",
                            _command_edit(index[j], sql, _serializable_overwrite)))
    # compaction: the commit's own sequence number
    for j in involved:
        out.append((f"compact with use-starting-sequence-number=false in `{j}`",
                    _command_edit(index[j], "COMPACT", _no_starting_seq)))
    if p.config.catalog != "cas":
        out.append(("use a catalog with compare-and-swap (catalog kind cas)", _catalog_cas))
    if p.config.format_version == 2:
        out.append(("upgrade the table to format v3 (table.format_version: 3)", _format_v3))
    # a job on the engine another job already runs
    others = sorted({prof for _, prof in p.jobs})
    for j in involved:
        mine = p.jobs[index[j]][1]
        for prof in others:
            if prof != mine and get_profile(prof).engine != get_profile(mine).engine:
                out.append((f"run `{j}` on {prof}", _profile_edit(index[j], prof)))
    # remove orphan files only older than any run of a job lasts (models/clock.py): the model's
    # runs last at most bounds.ticks ticks
    if p.config.ticks:
        age = str(p.config.ticks)
        for j in involved:
            out.append((f"remove orphan files older than {age} ticks in `{j}` (older_than: "
                        f"{age}, the clock's bound: longer than any job runs)",
                        _command_edit(index[j], "REMOVE_ORPHAN_FILES",
                                      lambda c, a=age: {} if str(c.get("older_than")) == a
                                      else {"older_than": a})))
    # Hive jobs that lock beside jobs that do not: one locking setting for every job
    # (models/clients.py); a job whose client: is a name on its own line
    if any(c[1] == "hms_lock" for c in p.config.clients):
        for i, _, _, _, name in p.config.clients:
            if name != "hive":
                j = names[i - 1]
                out.append((f"commit `{j}` with the metastore lock, as the other jobs do "
                            f"(client: hive)", _client_edit(i - 1, "hive")))
    # a streaming sink's restart finds its last commit only if the expiry kept it: keep more
    # snapshots than the other jobs can commit meanwhile (models/lifecycle.py)
    sinks = {i - 1 for i, _, _ in p.config.sinks}
    if sinks and any(names[k] in involved for k in sinks):
        def commits(entry) -> bool:      # a program entry that may add a snapshot
            return any(str(dict(alt).get("sql", "")).upper() not in NO_SNAPSHOT for alt in entry)
        keep = 1 + sum(1 for k, prog in enumerate(p.config.writers) if k not in sinks
                       for entry in prog if commits(entry))
        down = ", ".join(f"`{names[k]}`" for k in sorted(sinks))
        for k, prog in enumerate(p.config.writers):
            if any(dict(alt).get("sql", "").upper() == "EXPIRE" for entry in prog for alt in entry):
                out.append((f"keep the last {keep} snapshots in `{names[k]}` (retain_last: "
                            f"{keep}), more than the other jobs commit while {down} is down: "
                            f"its restart still finds its last commit",
                            _command_edit(k, "EXPIRE", lambda c, n=str(keep): {"retain_last": n})))
    # never overlap two of the anomaly's jobs
    if len(involved) >= 2:
        for a in range(len(involved)):
            for b in range(a + 1, len(involved)):
                x, y = involved[a], involved[b]
                entry = f"never_overlap: [{_yaml_str(x)}, {_yaml_str(y)}]"
                out.append((f"never run `{x}` and `{y}` at the same time (schedule: {entry})",
                            lambda lines, doc, e=entry: _append_schedule(lines, doc, e)))
    return out


def _yaml_str(s: str) -> str:
    return s if re.fullmatch(r"[A-Za-z_][\w.-]*", s) else '"' + s.replace('"', '\\"') + '"'


def _job_node(doc: LineDict, i: int):
    jobs = doc.get("jobs")
    return jobs[i] if isinstance(jobs, list) and i < len(jobs) else None


def _client_edit(i: int, client: str):
    """Job ``i``'s ``client: NAME`` (a name on its own line) set to ``client``."""
    def edit(lines, doc):
        job = _job_node(doc, i)
        if not isinstance(job, LineDict) or not isinstance(job.get("client"), str):
            return None
        return _set_on_line(lines, job.line_of("client"), "client", client)
    return edit


def _profile_edit(i: int, profile: str):
    def edit(lines, doc):
        job = _job_node(doc, i)
        if not isinstance(job, LineDict) or "profile" not in job:
            return None
        return _set_on_line(lines, job.line_of("profile"), "profile", profile)
    return edit


def _isolation_edit(i: int, profile: str):
    """The job's profile, and every table property that sets an isolation level to snapshot
    (the loader refuses a property that contradicts a job's profile)."""
    def edit(lines, doc):
        got = _profile_edit(i, profile)(lines, doc)
        if got is None:
            return None
        props = (doc.get("table") or {}).get("properties")
        if isinstance(props, LineDict):
            for k, v in props.items():
                if isinstance(k, str) and k.endswith("isolation-level") and v == "snapshot":
                    got = _set_on_line(got, props.line_of(k), k, "serializable") or got
        return got
    return edit


def _command_edit(i: int, sql: str, change: Callable[[dict], dict]):
    """Rewrite each command of job ``i`` whose ``sql`` is ``sql`` (a one-line flow mapping)."""
    def edit(lines, doc):
        job = _job_node(doc, i)
        prog = job.get("program") if isinstance(job, LineDict) else None
        if not isinstance(prog, LineList):
            return None
        out, hit = list(lines), False
        for n, c in enumerate(prog):
            options = c.get("any") if isinstance(c, LineDict) and "any" in c else [c]
            for k, alt in enumerate(options if isinstance(options, list) else []):
                if not isinstance(alt, LineDict) or str(alt.get("sql", "")).upper() != sql:
                    continue
                line = (options.line_of(k) if isinstance(options, LineList) and options is not
                        prog else prog.line_of(n))
                new = change(dict(alt))
                for key, value in new.items():
                    if key in alt:
                        got = _set_on_line(out, line, key, value)
                    else:
                        got = _insert_key(out, alt, line, key, value)
                    if got is None:
                        return None
                    out, hit = got, True
        return out if hit else None
    return edit


def _serializable_overwrite(c: dict) -> dict:
    """An overwrite with no write options gets the safe pair (SparkWrite.java:318-331,
    364-376 @ apache-iceberg-1.10.2); one with options of its own is left to the team."""
    return {} if "write_options" in c else {
        "write_options": "{isolation-level: serializable, validate-from-snapshot-id: read}"}


def _no_starting_seq(c: dict) -> dict:
    """A compaction with no options gets this one; one with options of its own is left to the
    team (not a one-line edit)."""
    return {} if "options" in c else {"options": "{use-starting-sequence-number: false}"}


def _catalog_cas(lines, doc):
    """``kind: cas``; a catalog given by name (docs/catalogs.md) becomes a REST catalog, whose
    commit is a compare-and-swap."""
    node = doc.get("catalog")
    if isinstance(node, LineDict) and "kind" in node:
        return _set_on_line(lines, node.line_of("kind"), "kind", "cas")
    if isinstance(node, LineDict) and "name" in node:
        return _set_on_line(lines, node.line_of("name"), "name", "rest")
    if isinstance(node, str):
        return _set_on_line(lines, doc.line_of("catalog"), "catalog", "cas")
    return None


def _format_v3(lines, doc):
    table = doc.get("table")
    if not isinstance(table, LineDict):
        return None
    if "format_version" in table:
        return _set_on_line(lines, table.line_of("format_version"), "format_version", "3")
    return _insert_key(lines, table, doc.line_of("table"), "format_version", "3")


# -- checking them -----------------------------------------------------------------------------
def mitigate(p: Pipeline, outcome, explore, progress=None) -> None:
    """Try the candidates of each failing anomaly of ``outcome`` (``pipelines.check.Outcome``)
    and record on it the fixes that work and the edits that do not. ``explore``: the gate's
    own (``pipelines.check.explore``), which calls this module, so it is passed in."""
    say = progress or (lambda m: None)
    with open(p.path, encoding="utf-8") as f:
        text = f.read()
    lines = text.splitlines()
    doc = load_yaml(text, p.path)
    tried: dict[str, tuple] = {}     # new text -> (title, outcome or error)
    budget = MAX_CANDIDATES
    for a in outcome.failed:
        for title, edit in candidates(p, a.jobs):
            try:
                new = edit(lines, doc)
            except (KeyError, IndexError, TypeError, ValueError):
                new = None
            if new is None or new == lines:
                continue
            new_text = "\n".join(new) + "\n"
            if new_text not in tried:
                if budget <= 0:
                    break
                budget -= 1
                say(f"trying a fix: {title}")
                tried[new_text] = (title, _recheck(p, new_text, explore))
            got_title, got = tried[new_text]
            diff = "".join(difflib.unified_diff(
                text.splitlines(keepends=True), new_text.splitlines(keepends=True),
                f"a/{os.path.basename(p.path)}", f"b/{os.path.basename(p.path)}", n=1))
            fix = Fix(title, diff)
            if isinstance(got, str):
                fix.result = got
                a.tried.append(fix)
                continue
            still = [x for x in got.failed if x.property == a.property]
            new_fail = [x for x in got.failed if x.property != a.property]
            if not got.complete:
                fix.result = "the re-check was cut short of complete"
                a.tried.append(fix)
            elif still:
                fix.result = f"{a.property} still fails"
                a.tried.append(fix)
            elif set(got.stuck) - set(outcome.stuck):
                fix.result = ("then " + ", ".join(f"`{j}`" for j in sorted(
                    set(got.stuck) - set(outcome.stuck))) + " can never commit its work")
                a.tried.append(fix)
            elif new_fail:
                fix.result = ("it removes this anomaly but then "
                              + ", ".join(sorted({x.property for x in new_fail})) + " fails")
                a.tried.append(fix)
            else:
                fix.result, fix.removes = "passes", True
                a.fixes.append(fix)


def _recheck(p: Pipeline, new_text: str, explore):
    """The outcome of the edited file (written beside nothing: a temporary file), or why it
    could not be checked (the edit made the file invalid for this combination)."""
    fd, tmp = tempfile.mkstemp(suffix=".yaml", prefix="icecheck-fix-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(new_text)
        try:
            q = load_pipeline(tmp)
        except InputError as e:
            return f"not a valid pipeline then: {e.detail}"
        return explore(q, None, None, details=False)
    finally:
        os.unlink(tmp)
