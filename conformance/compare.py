"""Conformance: run a scenario (or a trace) on the model AND on real Iceberg (Java), and compare.

The model runs first (``execute_scenario``, with ``TableConfig.iceberg_version`` set to the
release of the Java jar, 1.10 here). Its actions are then laid out on a Java timeline
(``java_runner.build_plan``: begins where the model began, commits where the model's verdict
was decided) and executed on a fresh real table (``java_runner.run_plan``).

Comparison rules (docs/conformance-java.md, "Comparing verdicts"):

* per operation, the **outcome** must be equal (``committed`` / ``validation_failed``; Java's
  ``error`` never equals a model outcome; a model ``noop`` runs nothing on Java and counts as
  agreeing; a crashed writer is begun and never committed on Java);
* when both failed, the **message key** must be equal: the message up to its first ``:`` that is
  not inside a quoted literal (so the rendered conflict filter, e.g. ``ref(name="category") ==
  "a"``, is part of the key, and the file list after it is not), with snapshot ids replaced by
  ``<id>``. The rest of the message (the file list) is shown, and a difference there is noted
  as ``detail`` but is not a disagreement;
* at the end, the live data files and live delete files (model names, sorted) must be equal.

A disagreement is *allowed* when ``conformance/allowlist.yaml`` lists the scenario (by id or
``fnmatch`` pattern) with a reason.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import os
import re
import time
from dataclasses import dataclass, field

from icecheck.models import system as sm
from icecheck.models.system import Action
from icecheck.scenarios.errors import InputError

from .java_runner import NOT_RUN, JavaRun, ModelOp, Plan, build_plan, run_plan

AGREE = "agree"
DISAGREE = "disagree"
ALLOWED = "allowed"      # a disagreement the allow-list explains
SKIPPED = "skipped"
ERROR = "error"          # the comparison itself broke (an unexpected exception)

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ALLOWLIST = os.path.join(HERE, "allowlist.yaml")
# The model follows the rules of this Iceberg release when compared with the jar (1.10.2).
DEFAULT_MODEL_VERSION = (1, 10)


# ----------------------------------------------------------------------------- messages

_ID_RE = re.compile(r"\b(snapshot|Snapshot|ancestor|ancestor of|snapshot id|Cannot expire)\s+-?\d+")


_PARTITION_SET_RE = re.compile(r"(records matching (?:partitions )?\[)([^\]]*)(\])")
# a manifest's path (RewriteManifests' "Deleted manifest %s could not be found ..."): the model's
# and Java's manifest names differ by construction; which manifest is named is not compared
_MANIFEST_RE = re.compile(r"(Deleted manifest )\S+\.avro\b")


def _normalize_key(key: str) -> str:
    """Snapshot ids become ``<id>``; a replaced-partitions list is compared as a set (Java prints
    its PartitionSet in hash order, which carries no meaning)."""
    key = _ID_RE.sub(r"\1 <id>", key.strip())
    key = _MANIFEST_RE.sub(r"\1<manifest>", key)
    return _PARTITION_SET_RE.sub(
        lambda m: m.group(1) + ", ".join(sorted(m.group(2).split(", "))) + m.group(3), key)


def split_message(message: str | None) -> tuple[str | None, str | None]:
    """(key, detail): the text before the first ':' outside double/single quotes, and the rest."""
    if message is None:
        return None, None
    message = _MANIFEST_RE.sub(r"\1<manifest>", message)   # a path may hold a ':' (file:/...)
    quote = None
    for i, ch in enumerate(message):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == ":":
            key, detail = message[:i], message[i + 1:].strip()
            return _normalize_key(key), detail
    return _normalize_key(message), None


def message_key(message: str | None) -> str | None:
    return split_message(message)[0]


# ----------------------------------------------------------------------------- results

@dataclass
class OpComparison:
    label: str
    writer: str
    kind: str | None
    model_outcome: str
    model_message: str | None
    java_outcome: str
    java_message: str | None
    agree: bool
    note: str | None = None

    def as_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class Comparison:
    id: str
    path: str
    source: str                          # "scenario" | "trace" | "random"
    status: str
    reason: str | None = None            # skip reason, error, or allow-list reason
    ops: list[OpComparison] = field(default_factory=list)
    model_live: tuple[list[str], list[str]] | None = None
    java_live: tuple[list[str], list[str]] | None = None
    differences: list[str] = field(default_factory=list)
    model_seconds: float = 0.0
    java_seconds: float = 0.0            # seconds on the real target (whichever it is)
    # Targets whose data files carry their own names (PyIceberg) compare rows instead of live
    # files: the current snapshot's rows, sorted (None: not compared).
    target: str = "java"
    model_rows: list | None = None
    target_rows: list | None = None

    @property
    def ok(self) -> bool:
        return self.status in (AGREE, ALLOWED, SKIPPED)

    def as_json(self) -> dict:
        return {
            "id": self.id, "path": self.path, "source": self.source, "status": self.status,
            "reason": self.reason, "differences": self.differences,
            "operations": [o.as_json() for o in self.ops],
            "live": None if self.model_live is None else {
                "model": {"data": self.model_live[0], "deletes": self.model_live[1]},
                "java": None if self.java_live is None else
                {"data": self.java_live[0], "deletes": self.java_live[1]}},
            "model_seconds": round(self.model_seconds, 4),
            "java_seconds": round(self.java_seconds, 4),
            **({"target": self.target, "rows": {"model": self.model_rows,
                                                 self.target: self.target_rows}}
               if self.model_rows is not None else {}),
        }

    def signature(self) -> tuple:
        """A coarse description of the disagreement (for grouping and for shrinking)."""
        for o in self.ops:
            if not o.agree:
                if o.model_outcome != o.java_outcome:
                    return ("outcome", o.kind, o.model_outcome, o.java_outcome,
                            _coarse(o.java_message))
                return ("message", o.kind)
        if self.model_live is not None and self.java_live is not None:
            for i, what in enumerate(("data files", "delete files")):
                model, java = set(self.model_live[i]), set(self.java_live[i])
                if model != java:
                    side = ("java keeps more" if java > model else
                            "model keeps more" if model > java else "both differ")
                    return ("live", what, side)
        if self.model_rows is not None and self.target_rows is not None \
                and self.model_rows != self.target_rows:
            return ("rows",)
        for d in self.differences:
            if d.startswith("files deleted by expiry"):
                return ("deleted files",)
            if ": snapshot " in d:
                label, _, rest = d.partition(": snapshot ")
                kind = next((o.kind for o in self.ops if o.label == label), None)
                return ("snapshot", kind, rest.split(":")[0])
        return ()


def _coarse(message: str | None) -> str | None:
    """The message's wording only: up to 'matching' / 'for' / ':' (names and filters dropped)."""
    if message is None:
        return None
    key = message_key(message) or ""
    for cut in (" matching ", " match filter ", " for ", " between "):
        if cut in key:
            return key.split(cut)[0] + cut.rstrip()
    return key


# ----------------------------------------------------------------------------- allow-list

@dataclass(frozen=True)
class AllowEntry:
    pattern: str
    reason: str

    def matches(self, scenario_id: str) -> bool:
        return fnmatch.fnmatchcase(scenario_id, self.pattern)


def load_allowlist(path: str | None = None) -> list[AllowEntry]:
    """Entries ``{scenario: ID-or-pattern, reason: why}``; a missing file is an empty list."""
    path = path or DEFAULT_ALLOWLIST
    if not os.path.exists(path):
        return []
    from icecheck.scenarios.yamlload import load_yaml_file

    # the shared loader: UTF-8 checked, alias bombs and deep nesting refused, lines kept
    doc = load_yaml_file(path) or {}
    entries = doc.get("allow", []) if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise InputError("allow-list must be a mapping with a list 'allow'", path,
                         getattr(doc, "line", None))
    out = []
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or set(e) != {"scenario", "reason"} \
                or not str(e.get("reason") or "").strip():
            raise InputError(f"allow-list entry {i + 1} must have exactly 'scenario' and a "
                             f"non-empty 'reason'", path, entries.line_of(i))
        out.append(AllowEntry(str(e["scenario"]), str(e["reason"]).strip()))
    return out


def apply_allowlist(c: Comparison, entries: list[AllowEntry]) -> Comparison:
    if c.status == DISAGREE:
        for e in entries:
            if e.matches(c.id):
                c.status, c.reason = ALLOWED, e.reason
                break
    return c


# ----------------------------------------------------------------------------- comparing

def java_catalog_for(model_catalog: str, override: str | None) -> str:
    if override:
        return override
    return {"put_if_absent": "hadoop"}.get(model_catalog, "jdbc")


def compare_plan(cid: str, path: str, source: str, plan: Plan, catalog: str,
                 java_table=None, lines: dict | None = None) -> Comparison:
    """Run ``plan`` on Java and compare it with the model's run. Skips propagate as status."""
    from .java_driver import JavaDriverError

    c = Comparison(cid, path, source, AGREE, model_seconds=plan.model_seconds)
    if lines:
        for op in plan.ops:
            op.line = lines.get((op.writer, op.index))
    c.model_live = (plan.live_data_files, plan.live_delete_files)
    if plan.skip:
        c.status, c.reason = SKIPPED, plan.skip
        return c
    try:
        run = run_plan(plan, catalog, table=java_table)
    except JavaDriverError as e:
        c.status, c.reason = SKIPPED, f"not expressible on Java: {e}"
        return c
    c.java_seconds = run.seconds
    _judge(c, plan, run)
    return c


def _judge(c: Comparison, plan: Plan, run: JavaRun) -> None:
    for op in plan.ops:
        j = run.outcomes[(op.writer, op.index)]
        kind = op.operation.kind if op.operation is not None else None
        agree, note = _agree(op, j.outcome, j.message)
        c.ops.append(OpComparison(op.label, op.writer, kind, op.outcome, op.message, j.outcome,
                                  j.message if j.outcome != NOT_RUN else None, agree, note))
        if not agree:
            c.differences.append(f"{op.label}: {note}")
        elif op.snapshot is not None and j.snapshot is not None:
            # what the committed snapshot holds (docs/scenario-format.md, step expect)
            for k in ("sequence_number", "operation", "summary", "manifests"):
                if op.snapshot.get(k) != j.snapshot.get(k):
                    c.differences.append(f"{op.label}: snapshot {k}: model {op.snapshot[k]}, "
                                         f"java {j.snapshot[k]}")
    c.java_live = (run.live_data_files, run.live_delete_files)
    if run.live_data_files != plan.live_data_files:
        c.differences.append(f"live data files: model {plan.live_data_files}, "
                             f"java {run.live_data_files}")
    if run.live_delete_files != plan.live_delete_files:
        c.differences.append(f"live delete files: model {plan.live_delete_files}, "
                             f"java {run.live_delete_files}")
    if run.deleted_files != plan.deleted_files:
        c.differences.append(f"files deleted by expiry: model {plan.deleted_files}, "
                             f"java {run.deleted_files}")
    if c.differences:
        c.status = DISAGREE


def _agree(op: ModelOp, java_outcome: str, java_message: str | None) -> tuple[bool, str | None]:
    if java_outcome == NOT_RUN:
        # no evidence either way (every target judges this alike: say no engine's name)
        if op.operation is None:
            return True, "noop: nothing to run"
        return True, f"not committed on the real library (the model's operation ended {op.outcome})"
    if op.outcome != java_outcome:
        return False, (f"outcome: model {op.outcome}, java {java_outcome}"
                       + (f" ({java_message})" if java_message else ""))
    if op.outcome == sm.COMMITTED or op.operation is None or java_message is None \
            and op.message is None:
        return True, None
    if op.outcome not in (sm.VALIDATION_FAILED,):
        return True, None
    mk, md = split_message(op.message)
    jk, jd = split_message(java_message)
    if mk != jk:
        return False, f"message: model {mk!r}, java {jk!r}"
    bare_ids = (mk is not None and "snapshot" in mk.lower()
                and all(d is not None and re.fullmatch(r"-?\d+", d) for d in (md, jd)))
    if normalize_detail(md) != normalize_detail(jd) and not bare_ids:
        # (bare_ids: a message whose whole detail is a snapshot id, "Cannot set t1 to unknown
        # snapshot: 2882737484273737460": the model's and Java's ids differ by construction)
        if op.check == "expire_refs" and len(op.operation.expire) > 1:
            # RemoveSnapshots.java:198 checks `for (long idToRemove : idsToRemove)`, a HashSet of
            # Java's random snapshot ids: which referenced snapshot (and so which refs) it names
            # first is not determined by the scenario; the refusal itself is compared
            return True, f"refs named: model {md!r}, java {jd!r} (HashSet order of random ids)"
        if op.check in ("row_filter", "append_only"):
            # ManifestFilterManager filters the manifests in parallel (Tasks.foreach(...)
            # .executeWith(workerPool)) and the first task to meet a file the row filter matches
            # in part (or, with validateAppendOnly's failAnyDelete, a file it would delete)
            # throws: when several do, which one Java names is not determined
            return True, (f"{'file' if op.check == 'row_filter' else 'partition'} named: "
                          f"model {md!r}, java {jd!r} (parallel manifest filtering)")
        return False, f"message detail: model {md!r}, java {jd!r}"
    return True, None


_PATH_RE = re.compile(r"(?:[a-z]+:)?/?(?:[\w.@=+-]+/)+([\w.@=+-]+)")
_EXT_RE = re.compile(r"\.(?:parquet|avro|orc|puffin|metadata\.json|json)$")
_UUID_RE = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


_JAVA_FILE_RE = re.compile(r"\b(?:Generic(?:Data|Delete)File|DV)\{[^{}]*?(?:file_path|location)="
                           r"([^,{}]+)[^{}]*(?:\{[^{}]*\}[^{}]*)*\}")
_COMMA_LIST_RE = re.compile(r"^[^\s,\[\]]+(?:,[^\s,\[\]]+)+$")
# "[d2, d4]": the files a validation found, in the order Java's manifest scan met them (the
# order of manifests and entries, and of a parallel scan's workers): a set, not a sequence
_BRACKET_LIST_RE = re.compile(r"\[([^\[\]\s,]+(?:, [^\[\]\s,]+)+)\]")


def normalize_detail(detail: str | None) -> str | None:
    """A message's text after its key, compared whole (as Iceberg's own tests assert whole
    messages), with only what carries no meaning normalised:

    * a file as Java prints it (``GenericDataFile{content=data, file_path=a1, ...}``,
      ``DV{location=dv1, offset=4, length=8, referencedDataFile=d1}``) becomes its name: the
      rest is physical layout (sizes, offsets, column statistics) the model does not keep;
    * file locations become their base names (Java's driver puts them under a warehouse);
    * a comma-separated list of names is compared as a set (Java joins a hash set), and so is a
      bracketed list of files a validation found (Java lists them in its manifest-scan order);
    * UUIDs and snapshot ids are masked.
    """
    if detail is None:
        return None
    detail = _JAVA_FILE_RE.sub(lambda m: m.group(1), detail)
    detail = _PATH_RE.sub(lambda m: _EXT_RE.sub("", m.group(1)), detail)
    detail = _UUID_RE.sub("<uuid>", detail)
    detail = _ID_RE.sub(r"\1 <id>", detail).strip()
    if _COMMA_LIST_RE.match(detail):
        detail = ",".join(sorted(detail.split(",")))
    return _BRACKET_LIST_RE.sub(lambda m: "[" + ", ".join(sorted(m.group(1).split(", "))) + "]",
                                detail)


# ----------------------------------------------------------------------------- scenarios

def model_scenario(scenario, model_version: tuple[int, int] = DEFAULT_MODEL_VERSION):
    """The scenario with the model following the rules of Iceberg ``model_version``."""
    table = dataclasses.replace(scenario.table, iceberg_version=tuple(model_version))
    return dataclasses.replace(scenario, table=table)


@dataclass
class ModelRun:
    """A scenario or trace run on the model: what every target replays on real Iceberg."""

    id: str
    config: object            # models.system.ModelConfig
    actions: list             # models.system.Action, in order
    seconds: float
    profile: str | None = None
    verdict: object = None    # the scenario's Verdict (None for a trace)
    writer_profiles: dict = dataclasses.field(default_factory=dict)   # writer -> own profile

    def profile_of(self, writer: str) -> str | None:
        return self.writer_profiles.get(writer) or self.profile

    def mixed_reason(self, engine_prefix: str) -> str | None:
        """Why a one-engine target cannot run this mixed-engine run (None: it can)."""
        if not self.writer_profiles:
            return None
        profiles = {p for p in (self.profile, *self.writer_profiles.values()) if p}
        if any(not p.startswith(engine_prefix) for p in profiles):
            where = ("--target java (Flink has no runtime here; its commits are Java library "
                     "calls)" if any(p.startswith("flink-") for p in profiles)
                     else "--target mixed")
            return (f"writers run on several engines ({', '.join(sorted(profiles))}): run it "
                    f"with {where}")
        return None


def scenario_on_model(scenario, model_version: tuple[int, int] | None = None) -> ModelRun:
    """Run ``scenario`` on the model (following Iceberg ``model_version``'s rules if given)."""
    from icecheck.scenarios.runner import execute_scenario, model_config

    ms = model_scenario(scenario, model_version) if model_version else scenario
    config = model_config(ms)
    t0 = time.perf_counter()
    verdict, _state = execute_scenario(ms, config)
    seconds = time.perf_counter() - t0
    return ModelRun(scenario.id, config, [Action.parse(a) for a in verdict.actions], seconds,
                    scenario.profile, verdict, dict(getattr(scenario, "writer_profiles", {})))


def trace_on_model(path: str, model_version: tuple[int, int] | None = None) -> ModelRun:
    """Rebuild the model from a trace's configuration; its actions are replayed by the caller."""
    from icecheck.engines.config import ExploreConfig, build_model_config

    doc = load_trace(path)
    cfg = ExploreConfig.from_json(doc["config"], f"{path}: field 'config'")
    config = build_model_config(cfg, path)
    if model_version:
        config = dataclasses.replace(config, table=dataclasses.replace(
            config.table, iceberg_version=tuple(model_version)))
    tid = str(doc.get("id") or os.path.splitext(os.path.basename(path))[0])
    try:
        actions = [a if isinstance(a, Action) else Action.parse(str(a)) for a in doc["actions"]]
    except ValueError as e:
        raise InputError(str(e), path) from None
    wp = {f"w{i}": p for i, p in enumerate(cfg.writer_profiles, 1) if p}
    return ModelRun(tid, config, actions, 0.0, cfg.profile, None, wp)


def compare_scenario(scenario, *, catalog: str | None = None,
                     model_version: tuple[int, int] = DEFAULT_MODEL_VERSION,
                     allowlist: list[AllowEntry] | None = None, source: str = "scenario"
                     ) -> Comparison:
    """Run ``scenario`` on the model, replay it on Java, compare. InputError propagates."""
    if "java" in scenario.conformance_skip:
        return Comparison(scenario.id, scenario.path, source, SKIPPED,
                          f"conformance.skip lists java: {scenario.conformance_skip['java']}")
    run = scenario_on_model(scenario, model_version)
    config, actions, verdict, run_seconds = run.config, run.actions, run.verdict, run.seconds
    try:
        plan = build_plan(config, actions)
    except sm.StepError as e:   # cannot happen for a run we just made; report it plainly
        return Comparison(scenario.id, scenario.path, source, ERROR, f"model replay: {e}")
    plan.model_seconds = run_seconds
    lines = _op_lines(plan, verdict)
    if scenario.uses_faults and not plan.skip:
        plan.skip = "fault steps cannot be driven on Java"
    c = compare_plan(scenario.id, scenario.path, source, plan,
                     java_catalog_for(scenario.catalog, catalog), java_table=scenario.table,
                     lines=lines)
    return apply_allowlist(c, allowlist or [])


def _op_lines(plan: Plan, verdict) -> dict:
    """Scenario lines of the steps that ended each operation (verdict steps are in end order)."""
    ended = [op for op in plan.ops if op.end_at >= 0]
    out = {}
    for op, step in zip(ended, verdict.steps):
        if step.writer == op.writer:
            out[(op.writer, op.index)] = step.line
    return out


# ----------------------------------------------------------------------------- traces

def load_trace(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path) from None
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON: {e.msg}", path, e.lineno) from None
    if not isinstance(doc, dict) or "config" not in doc or "actions" not in doc:
        raise InputError("a trace needs 'config' and 'actions'", path)
    return doc


def compare_trace(path: str, *, catalog: str | None = None,
                  model_version: tuple[int, int] = DEFAULT_MODEL_VERSION,
                  allowlist: list[AllowEntry] | None = None) -> Comparison:
    """Rebuild the model from the trace's config, replay its actions, run the result on Java."""
    run = trace_on_model(path, model_version)
    config, tid, actions = run.config, run.id, run.actions
    t0 = time.perf_counter()
    try:
        plan = build_plan(config, actions)
    except sm.StepError as e:
        return Comparison(tid, path, "trace", SKIPPED,
                          f"the trace does not replay on the model under Iceberg "
                          f"{'.'.join(map(str, model_version))} rules: {e}")
    plan.model_seconds = time.perf_counter() - t0
    table = dataclasses.replace(config.table, iceberg_version=(1, 11))
    c = compare_plan(tid, path, "trace", plan, java_catalog_for(config.catalog, catalog),
                     java_table=table)
    return apply_allowlist(c, allowlist or [])
