"""``icecheck check PIPELINE.yaml``: a team's gate for its own table.

It explores the pipeline (exhaustive BFS within ``bounds.max_states``, or Hypothesis sampling
when the file asks for it) and judges every anomaly as the team's gate, not as the expectation
table of the project's own suite does (``ExploreConfig.protect_readers``,
``properties.expectations.for_readers``):

* **FAIL**: an anomaly the table's readers would see (an acknowledged write lost, a deleted row
  back, a key twice, rows no serial history gives, a table that cannot be read), whatever
  catalog, engine or isolation level made it possible, and every other must-hold violation.
  Being a known upstream bug changes nothing: the upstream status is shown beside it.
* **ALLOWED**: what readers cannot see and the table's choices permit (a dangling delete file,
  a dependency cycle whose table equals a serial order), with the rule that allows it.
* **ACCEPTED**: a risk the team accepted in the file (``accept:``), until its date.

A search cut before it is complete is INCONCLUSIVE (exit 1) unless the file asked for sampling
(``bounds.search: sample``); the anomalies it found before the cut stand (real runs, each the
shortest to its property), so a failing one fails the check. For each failure,
``pipelines.mitigate`` tries the changes a team could make to the file and re-checks each: the
report lists those that make it pass, with the diff to apply. Writers are named by their jobs
everywhere (``Pipeline.job_of``).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass, field

from .explain import command_lines, job_text, writer_names
from .load import Pipeline, load_pipeline

EXHAUSTIVE, SAMPLED = "exhaustive (BFS)", "sampled (Hypothesis)"
FAIL, ALLOWED, ACCEPTED = "fail", "allowed", "accepted"
_why = {FAIL: "why it fails", ALLOWED: "allowed", ACCEPTED: "accepted by the team"}
#: the order a verdict lists anomalies in: what readers see first (the row back before the
#: delete file that names a removed file, which is the same run seen from the metadata)
_RANK = {prop: n for n, prop in enumerate(
    ("lost_write", "undelete", "duplicate_keys", "consistent_read", "readable",
     "metadata_integrity", "isolation", "dangling_deletes"))}


@dataclass
class Anomaly:
    property: str
    verdict: str                 # FAIL | ALLOWED | ACCEPTED
    status: str                  # the judgement: must_hold | known_finding | allowed
    reason: str                  # why (the rule that allows it, the gate's, the team's)
    explanation: str             # the trace in words, writers named by their jobs
    message: str                 # the violation in one sentence (rows, keys, files), job-named
    jobs: tuple[str, ...]        # the jobs it involves
    trace: dict | None
    upstream: str = ""           # a known finding's upstream status and reproducer
    inevitable: str = ""         # the step where it became inevitable
    fixes: list = field(default_factory=list)   # [Fix] that remove it (pipelines.mitigate)
    tried: list = field(default_factory=list)   # [Fix] that do not

    def as_json(self) -> dict:
        return {"property": self.property, "verdict": self.verdict, "status": self.status,
                "jobs": list(self.jobs), "message": self.message, "reason": self.reason,
                "upstream": self.upstream, "inevitable": self.inevitable,
                "explanation": self.explanation,
                "fixes": [f.as_json() for f in self.fixes],
                "tried_without_effect": [f.title for f in self.tried]}


@dataclass
class Outcome:
    how: str                     # how it explored, in words
    complete: bool               # exhaustive and finished: an absence is proven
    states: int
    anomalies: list[Anomaly]
    inconclusive: str = ""       # why the verdict is not proven (a cut search)
    seconds: float = 0.0
    stuck: tuple[str, ...] = ()  # jobs that commit all their commands in no run (exhaustive)
    # what no property judges but a team must know (a streaming job that cannot restart)
    warnings: tuple[str, ...] = ()

    @property
    def failed(self) -> list[Anomaly]:
        return [a for a in self.anomalies if a.verdict == FAIL]

    @property
    def passed(self) -> bool:
        return not self.failed and not self.inconclusive


# -- exploring ---------------------------------------------------------------------------------
def explore(p: Pipeline, progress=None, time_budget: float | None = None,
            details: bool = True) -> Outcome:
    """Explore ``p`` and judge each anomaly. ``details``: work out each anomaly's inevitable
    step (a bounded search per anomaly); mitigation checks skip it."""
    from icecheck.scenarios.errors import InputError
    start = time.monotonic()
    say = progress or (lambda m: None)
    cut = ""
    states = 0
    found: list[Anomaly] = []
    if p.search == "exhaustive":
        try:
            res = exhaustive(p, p.config, time_budget=time_budget,
                             progress=_bfs_progress(say))
        except InputError as e:
            if e.path != "the configuration":
                raise
            # a job's command its engine refuses as it begins: the file is what is wrong
            raise InputError(e.detail, p.path) from None
        states = res.states
        # what the search found, complete or cut: each a real run, its shortest one
        found = [_anomaly(p, v.trace, v.property, details) for v in
                 sorted(res.violations.values(), key=lambda v: _RANK[v.property])]
        found += [_anomaly(p, v.trace, v.property, details)
                  for v in sorted(res.allowed.values(), key=lambda v: _RANK[v.property])
                  if v.property not in res.violations]
        if res.complete:
            return Outcome(f"{EXHAUSTIVE}: {res.states:,} states"
                           + (f" (summed over {res.parts} parts, one per combination of the "
                              "jobs' template alternatives)" if res.parts > 1 else "")
                           + ", every interleaving and choice", True, res.states, found,
                           seconds=time.monotonic() - start, stuck=_stuck(p, res.outcomes),
                           warnings=_warnings(p, res.reached))
        cut_parts = [q["part"] for q in res.part_results if q["stopped"] == "max states"]
        who = (f"the next level of {len(cut_parts)} of its {res.parts} parts "
               f"({'; '.join(cut_parts)}) would pass" if cut_parts
               else "its next level would pass")
        why = (f"{who} bounds.max_states={p.max_states:,}" if res.stopped in (None, "max states")
               else f"stopped: {res.stopped}")
        cut = (f"the exhaustive search stopped at {res.states:,} states ({why}), so an "
               f"absence of anomalies is not proven; raise bounds.max_states"
               + _split_hint(p) + ", or set bounds.search: sample to ask for sampling")
        say(cut + f"; sampling with Hypothesis ({p.max_examples} runs, seed {p.seed}) to "
                  f"look for anomalies meanwhile")
    from icecheck.engines.hypothesis_engine import explore as hyp
    left = None if time_budget is None else max(0.0, time_budget - (time.monotonic() - start))
    h = hyp(p.config, max_examples=p.max_examples, seed=p.seed, time_budget=left,
            progress=_hyp_progress(say, p.max_examples))
    # a cut search's anomalies stand (each is a real run, and the shortest to its property);
    # sampling adds the properties it did not reach, and one the search had seen only as
    # allowed that sampling shows failing fails (as a complete search's violation would)
    seen = sorted({a.property for a in found})
    best: dict[str, Anomaly] = {}
    for a in found + [_anomaly(p, f.trace, f.property, details)
                      for f in sorted(h.findings, key=lambda f: _RANK[f.property])]:
        had = best.get(a.property)
        if had is None or (had.verdict != FAIL and a.verdict == FAIL):
            best[a.property] = a
    found = sorted(best.values(), key=lambda a: _RANK[a.property])
    how = (f"{SAMPLED}: {h.examples} runs" + (f" after the BFS stopped at {states:,} states"
                                               + (f" (it had found {', '.join(seen)})"
                                                  if seen else "")
                                               if cut else "") + " (absence is not proven)")
    if h.timed_out:
        how += "; cut by the time budget"
    return Outcome(how, False, states, found, cut, time.monotonic() - start)


def _warnings(p: Pipeline, reached) -> tuple[str, ...]:
    """Outages no property judges (they lose or duplicate no row by themselves), from the
    events the search reached (properties/reachability.py)."""
    out = []
    if reached.get("sink_restore_failed"):
        sinks = [p.jobs[i - 1][0] for i, _, _ in p.config.sinks]
        who = f"the job `{sinks[0]}`" if len(sinks) == 1 else "a streaming job"
        out.append(f"{who} can fail to restart for good: in some runs, restored from its "
                   f"latest checkpoint, it finds the commit of that checkpoint no longer among "
                   f"the snapshots along main (an expiry removed them), so it must commit the "
                   f"checkpoint again, but its committer deleted the checkpoint's temporary "
                   f"manifest once the commit succeeded: every restore fails (\"Failed to open "
                   f"input stream for file\", apache/iceberg#5846). It stays down until an "
                   f"operator redeploys it without state. Keep more snapshots than its commits "
                   f"can fall behind by (retain_last), or expire by age well beyond its longest "
                   f"outage.")
    return tuple(out)


def _stuck(p: Pipeline, outcomes: set) -> tuple[str, ...]:
    """The jobs that in no final state committed every command (or had nothing to change):
    a change to the file that makes a job always fail does not fix the pipeline. ``outcomes``
    is the search's final-state signatures: per class of interchangeable writers
    (``engines.symmetry.symmetry_classes``), their outcome tuples, sorted."""
    from icecheck.engines.symmetry import symmetry_classes
    from icecheck.models.system import COMMITTED, NOOP
    classes = symmetry_classes(p.config)
    done = set()
    for sig in outcomes:
        for c, per in zip(classes, sig):
            if any(all(o in (COMMITTED, NOOP) for o in outs) for outs in per):
                done.update(c)
    return tuple(p.jobs[i - 1][0] for i in range(1, len(p.jobs) + 1) if i not in done)


def _hyp_progress(say, total: int):
    """A line per tenth of the runs: sampling says how far it got, with the count it aims at."""
    step = max(1, total // 10)

    def progress(examples: int) -> None:
        if examples % step == 0:
            say(f"  sampling: {examples:,} of {total:,} runs")
    return progress


def _bfs_progress(say):
    """One line per BFS level at most every few seconds: a run in CI's log says it lives."""
    last = [0.0]

    def progress(info: dict) -> None:
        now = time.monotonic()
        if now - last[0] >= 5.0:
            last[0] = now
            say(f"  exploring: {info.get('states', 0):,} states, depth {info.get('depth', 0)}"
                + (f", frontier {info['frontier']:,}" if "frontier" in info else "")
                + (f", parts done {info['parts'][0]} of {info['parts'][1]}"
                   if info.get("parts") else ""))
    return progress


def _anomaly(p: Pipeline, trace: dict | None, prop: str, details: bool) -> Anomaly:
    from icecheck.engines.config import ExploreConfig
    from icecheck.properties import commit_order
    from icecheck.properties.expectations import (ACCEPTED_PREFIX, DEFAULT_REASON,
                                                  KNOWN_FINDING, MUST_HOLD, Violation,
                                                  expectation_for, involved_writers)
    from icecheck.traces.execute import model_for, run_actions
    from icecheck.traces.explain import step_events, table_text
    if trace is None:    # never expected: every search attaches one (tests/test_pipelines.py)
        return Anomaly(prop, FAIL, MUST_HOLD, "", "", "", (), None)
    exp = trace.get("expectation") or {}
    status = exp.get("status") or MUST_HOLD
    reason = exp.get("reason") or ""
    verdict = FAIL
    if trace.get("kind") == "allowed":
        verdict = ACCEPTED if exp.get("accepted_from") else ALLOWED
        if verdict == ACCEPTED and reason.startswith(ACCEPTED_PREFIX):
            reason = reason[len(ACCEPTED_PREFIX):]
    names = writer_names(p, trace)
    cfg = ExploreConfig.from_json(trace["config"])
    model = model_for(cfg)
    run = run_actions(model, trace["actions"])
    v = next((x for x in trace["verdict"]["violations"] if x["property"] == prop), None)
    violation = Violation(prop, v["message"], v["severity"], v.get("details") or {}) \
        if v is not None else None
    if violation is not None and verdict == FAIL and not reason:
        # the trace keeps no expectation for a must-hold violation: say which rule (the
        # gate's, or the table's) holds it, as its explanation does
        order = commit_order(model, run.final, cfg.key) if cfg.mixed else None
        got = expectation_for(cfg, violation, order).reason
        reason = "" if got == DEFAULT_REASON else got
    jobs = [names.get(w, w) for w in sorted(involved_writers(violation))] if violation else []
    if not jobs:   # a property that names no operation (an unreadable table): who acted
        for a in trace["actions"]:
            j = names.get(a.split(".")[0], a.split(".")[0])
            if j not in jobs:
                jobs.append(j)
    upstream = ""
    if status == KNOWN_FINDING or exp.get("accepted_from") == KNOWN_FINDING:
        # the upstream status (properties/expectations.yaml ``upstream``), and the corpus trace
        # that reproduces it; being known upstream changes nothing for the gate
        upstream = (exp.get("upstream") or "a recorded known finding") + (
            f"; reproduced by the corpus trace {exp['trace']}" if exp.get("trace") else "")
        if verdict == FAIL:
            reason = "a known defect of the engine, which the gate does not let pass: " + reason
    steps = [f"{n}. {job_text(e.sentence, names)}"
             for n, e in enumerate(step_events(model, cfg.key, run), 1)]
    steps.append("Then " + job_text(table_text(model, cfg.key, run.final), names) + ".")
    anomaly = Anomaly(prop, verdict, status, job_text(reason, names), "\n".join(steps),
                      job_text(v["message"], names) if v else "", tuple(sorted(set(jobs))),
                      trace, upstream)
    if details:
        anomaly.inevitable = job_text(inevitable_text(model, run, trace, prop, cfg.key),
                                      names)
    return anomaly


def inevitable_text(model, run, trace: dict, prop: str, key: str) -> str:
    """The step where the anomaly became certain (traces/inevitable.py), naming its action."""
    from icecheck.traces.inevitable import inevitable_step
    got = inevitable_step(model, run, prop, key)
    text = got.text(len(run.actions))
    if got.step:
        text = text.replace(f"after step {got.step}",
                            f"after step {got.step} ({trace['actions'][got.step - 1]})", 1)
    return text


# -- stale acceptances -------------------------------------------------------------------------
def stale_acceptances(p: Pipeline, outcome: Outcome) -> list:
    """The acceptances that take no anomaly: neither one the search reported as accepted, nor
    (searched again without it) one it would otherwise let through. Linters report such
    baseline entries; so does the gate."""
    from dataclasses import replace as dc_replace

    used = {(a.property, a.reason) for a in outcome.anomalies if a.verdict == ACCEPTED}
    live = [a for a in p.acceptances if not a.expired]
    stale = []
    for acc in live:
        if (acc.anomaly, acc.reason) in used:
            continue
        if not outcome.complete:
            continue    # a cut search proves nothing either way
        names = [n for n, _ in p.jobs]
        others = tuple(a.entry(names) for a in live if a is not acc)
        res = exhaustive(p, dc_replace(p.config, accepted=others),
                         stop_on=frozenset({acc.anomaly}))
        v = res.violations.get(acc.anomaly)
        if v is None or v.trace is None or not _covers(p, acc, v.trace):
            stale.append(acc)
    return stale


def _split_hint(p: Pipeline) -> str:
    """For a cut search of a file whose jobs have template alternatives and that does not
    split yet: how ``bounds.split`` would divide it (engines/split.py)."""
    if p.split:
        return ""
    from icecheck.engines.split import parts
    n = len(parts(p.config)[0])
    if n < 2:
        return ""
    return (f", or set bounds.split: true (the search split into {n} parts, one per "
            f"combination of the jobs' template alternatives, each holding a share of the "
            f"states and bounded by max_states, as many at once as there are cores)")


def exhaustive(p: Pipeline, cfg, *, time_budget: float | None = None, progress=None,
               stop_on: frozenset[str] | None = None):
    """The exhaustive search of ``cfg`` (``p``'s configuration, or an edit of it) within
    ``p``'s bounds: one BFS, or with ``bounds.split`` one per combination of the jobs'
    template alternatives, as many at once as the machine has cores (engines/split.py)."""
    from icecheck.engines.explicit import Bounds, search
    bounds = Bounds(max_states=p.max_states)
    if p.split:
        from icecheck.engines.split import split_search
        return split_search(cfg, workers=os.cpu_count() or 1, bounds=bounds,
                            time_budget=time_budget, progress=progress, stop_on=stop_on)
    return search(cfg, engine="bfs", bounds=bounds, traces=True, time_budget=time_budget,
                  progress=progress, stop_on=stop_on)


def _covers(p: Pipeline, acc, trace: dict) -> bool:
    a = _anomaly(p, trace, acc.anomaly, False)
    return not acc.jobs or set(a.jobs) <= set(acc.jobs)


# -- reports -----------------------------------------------------------------------------------
def _jobs_lines(p: Pipeline) -> list[str]:
    return [f"- `{name}` on `{profile}`" for name, profile in p.jobs]


def checked_lines(p: Pipeline, outcome: Outcome) -> list[str]:
    """What was checked, so that a team sees icecheck understood its jobs: the properties, the
    bounds, how each command was read (its operation, write mode and the checks its engine
    enables), the catalog and the schedule."""
    from icecheck.properties.violation import PROPERTIES
    lines = [f"- exploration: {outcome.how}",
             f"- properties judged: {', '.join(PROPERTIES)}",
             f"- bounds: max_states {p.max_states:,}" + (" per part" if p.split else "")
             + f", search {p.search}" + (" split by the jobs' template alternatives"
                                         if p.split else "")
             + (f", max_examples {p.max_examples}, seed {p.seed}"
                if p.search == "sample" or outcome.inconclusive else "")
             + (f", clock ticks {p.config.ticks}" if p.config.ticks else ""),
             f"- catalog: {p.config.catalog}"
             + "".join(f", {flag}" for flag, on in (("faults", p.config.faults),
                                                    ("crashes", p.config.crashes),
                                                    ("applied_failed",
                                                     p.config.phantom_failures)) if on)
             + f"; format v{p.config.format_version}"]
    if p.schedule:
        from icecheck.models.schedule import describe
        lines.append("- schedule: " + "; ".join(describe(k, f"`{a}`", f"`{b}`")
                                                for k, a, b in p.schedule))
    lines += command_lines(p)
    return lines


def report_md(p: Pipeline, outcome: Outcome, stale: list, run_id: str) -> str:
    verdict = "FAILED" if outcome.failed else ("INCONCLUSIVE" if outcome.inconclusive
                                               else "PASSED")
    lines = [f"# Pipeline check: {p.name}", "", f"**{verdict}**; file `{p.path}`; run "
             f"`{run_id}`", "", "## Jobs", ""] + _jobs_lines(p)
    lines += ["", "## What was checked", ""] + checked_lines(p, outcome) + [""]
    if outcome.inconclusive:
        lines += ["## Inconclusive", "", outcome.inconclusive, ""]
    for w in outcome.warnings:
        lines += ["## Warning", "", w, ""]
    if not outcome.anomalies:
        lines.append("No anomaly: every property held." if outcome.complete
                     else "No anomaly found (not proven absent).")
    for a in outcome.anomalies:
        lines += [f"## {a.verdict.upper()}: {a.property} ({', '.join(a.jobs)})", "",
                  a.message, ""]
        if a.upstream:
            lines += [f"Upstream: {a.upstream}", ""]
        if a.reason:
            lines += [f"{_why[a.verdict].capitalize()}: {a.reason}", ""]
        if a.inevitable:
            lines += [f"When: {a.inevitable}", ""]
        lines += ["What happened:", ""] + a.explanation.splitlines() + [""]
        if a.trace is not None and a.trace.get("_svg"):
            lines += [f"![timeline]({a.trace['_svg']})", ""]
        if a.fixes:
            lines += ["Fixes that make the pipeline pass (each checked):", ""]
            for f in a.fixes:
                lines += [f"- **{f.title}**", "", "```diff", f.diff.rstrip(), "```", ""]
        if a.tried:
            lines += ["Tried, and the pipeline still fails: "
                      + "; ".join(f"{f.title} ({f.result})" for f in a.tried), ""]
    if stale:
        lines += ["## Stale acceptances", ""]
        lines += [f"- {s.describe()}: matches no anomaly any more; remove it" for s in stale]
    expired = [a for a in p.acceptances if a.expired]
    if expired:
        lines += ["", "## Expired acceptances", ""]
        lines += [f"- {a.describe()}: expired; its anomaly fails again" for a in expired]
    return "\n".join(lines) + "\n"


def junit(p: Pipeline, outcome: Outcome, run_id: str) -> str:
    """One test case per property: failed (the explanation is the message), skipped (allowed
    or accepted, saying which and why), or passed."""
    from icecheck.junit import Case, junit_xml
    from icecheck.properties.violation import PROPERTIES
    by = {a.property: a for a in outcome.anomalies}
    cases = []
    for prop in PROPERTIES:
        a = by.get(prop)
        if a is None:
            cases.append(Case(p.name, prop, "failed" if outcome.inconclusive else "passed",
                              0.0, outcome.inconclusive, kind="inconclusive"))
        elif a.verdict == FAIL:
            fixes = "; ".join(f.title for f in a.fixes)
            cases.append(Case(p.name, prop, "failed", 0.0,
                              f"{a.message} Jobs: {', '.join(a.jobs)}."
                              + (f" Fix: {fixes}." if fixes else ""),
                              detail=a.explanation, kind=a.status))
        else:
            cases.append(Case(p.name, prop, "known", 0.0, a.reason, detail=a.explanation,
                              skip_label=a.verdict.upper()))
    return junit_xml(cases, run_id, (p.name,), name=f"icecheck check {p.path}",
                     classname="icecheck.pipeline")


def as_json(p: Pipeline, outcome: Outcome, stale: list, run_id: str,
            traces: bool = True) -> dict:
    doc = {"pipeline": p.path, "run_id": run_id, "exploration": outcome.how,
           "complete": outcome.complete, "inconclusive": outcome.inconclusive or None,
           "passed": outcome.passed,
           "jobs": [{"name": n, "profile": prof} for n, prof in p.jobs],
           "warnings": list(outcome.warnings),
           "anomalies": [], "stale_acceptances": [s.describe() for s in stale],
           "expired_acceptances": [a.describe() for a in p.acceptances if a.expired]}
    for a in outcome.anomalies:
        d = a.as_json()
        if traces:
            d["trace"] = {k: v for k, v in (a.trace or {}).items() if not k.startswith("_")} \
                or None
        doc["anomalies"].append(d)
    return doc


# -- the command -------------------------------------------------------------------------------
def run(path: str, reports_dir: str, strict: bool, as_json_out: bool, out, progress, *,
        time_budget: float | None = None, fix: bool = True) -> int:
    """The exit code: 0 passed, 1 an anomaly fails the gate or the search is inconclusive
    (with ``strict``, a stale acceptance too). Input errors raise ``InputError`` (exit 2)."""
    from icecheck.traces.format import check_writable_dir, write_together
    check_writable_dir(reports_dir, "--reports")
    p = load_pipeline(path)
    run_id = uuid.uuid4().hex[:12]
    progress(f"pipeline {p.name}: {len(p.jobs)} job(s): "
             + ", ".join(f"{n} ({prof})" for n, prof in p.jobs))
    outcome = explore(p, progress, time_budget)
    if fix and outcome.failed:
        from .mitigate import mitigate
        mitigate(p, outcome, explore, progress)
    stale = stale_acceptances(p, outcome) if p.acceptances else []
    svgs = _timelines(p, outcome, reports_dir)
    files = {os.path.join(reports_dir, "pipeline.md"): report_md(p, outcome, stale, run_id),
             os.path.join(reports_dir, "pipeline.json"): json.dumps(
                 as_json(p, outcome, stale, run_id), indent=2, default=str) + "\n",
             os.path.join(reports_dir, "junit.xml"): junit(p, outcome, run_id)}
    files.update(svgs)
    write_together(files)
    failed = bool(outcome.failed) or bool(outcome.inconclusive) or (strict and bool(stale))
    if as_json_out:
        print(json.dumps(as_json(p, outcome, stale, run_id, traces=False), indent=2,
                         default=str))
    else:
        _terminal(p, outcome, stale, out)
        word = ("FAILED" if outcome.failed else "INCONCLUSIVE" if outcome.inconclusive
                else "FAILED (stale acceptances, --strict)" if failed else "passed")
        n = len(outcome.failed)
        out(f"\nicecheck check {p.path}: {word} ({n} failing anomal{'y' if n == 1 else 'ies'}"
            f", {len(outcome.anomalies) - n} allowed or accepted); reports in {reports_dir}/")
    return 1 if failed else 0


def _terminal(p: Pipeline, outcome: Outcome, stale: list, out) -> None:
    out("checked:")
    for line in checked_lines(p, outcome):
        out("  " + line[2:])
    if outcome.inconclusive:
        out(f"\nINCONCLUSIVE: {outcome.inconclusive}")
    for w in outcome.warnings:
        out(f"\nWARNING: {w}")
    shown: dict[tuple, Anomaly] = {}     # a run's actions -> the anomaly that showed it
    for a in outcome.anomalies:
        out(f"\n{a.verdict.upper()}: {a.property} (jobs: {', '.join(a.jobs)})")
        out(f"  {a.message}")
        if a.upstream:
            out(f"  upstream: {a.upstream}")
        if a.reason:
            out(f"  {_why[a.verdict]}: {a.reason}")
        run = tuple(a.trace["actions"]) if a.trace is not None else None
        same = shown.get(run) if run is not None else None
        if same is not None:
            # two properties' views of one run (an undelete and its dangling delete file):
            # the steps and the fixes' diffs once
            out(f"  what happened: the same run as {same.property} above")
            if a.fixes:
                out("  FIX (checked): " + "; ".join(f.title for f in a.fixes))
        else:
            if run is not None:
                shown[run] = a
            if a.inevitable:
                out(f"  when: {a.inevitable}")
            out("  what happened:")
            for line in a.explanation.splitlines():
                out(f"    {line}")
            for f in a.fixes:
                out(f"  FIX (checked: the pipeline passes with it): {f.title}")
                for line in f.diff.rstrip().splitlines():
                    out(f"    {line}")
        if a.tried:
            out("  tried without effect: " + "; ".join(f"{f.title} ({f.result})"
                                                       for f in a.tried))
        if a.trace is not None and a.trace.get("_file"):
            out(f"  trace: {a.trace['_file']} (icecheck trace show FILE; icecheck explore "
                f"--interactive --trace FILE)")
    for s in stale:
        out(f"\nSTALE ACCEPTANCE: {s.describe()}: it matches no anomaly any more; remove it")
    for a in p.acceptances:
        if a.expired:
            out(f"\nEXPIRED ACCEPTANCE: {a.describe()}: its anomaly fails again")


def _timelines(p: Pipeline, outcome: Outcome, reports_dir: str) -> dict[str, str]:
    """Each anomaly's timeline picture (the lanes of ``trace show --svg``, named by job) and its
    trace file, beside the report; {} where Graphviz is missing."""
    import shutil

    from icecheck.traces.timeline import svg_text
    files = {}
    for n, a in enumerate(outcome.anomalies, 1):
        if a.trace is None:
            continue
        base = f"anomaly-{n}-{a.property}"
        files[os.path.join(reports_dir, base + ".json")] = json.dumps(
            {k: v for k, v in a.trace.items() if not k.startswith("_")}, indent=2) + "\n"
        a.trace["_file"] = os.path.join(reports_dir, base + ".json")
        if shutil.which("dot") is not None:
            files[os.path.join(reports_dir, base + ".svg")] = svg_text(
                a.trace, {w: f"job {j}" for w, j in writer_names(p, a.trace).items()})
            a.trace["_svg"] = base + ".svg"
    return files
