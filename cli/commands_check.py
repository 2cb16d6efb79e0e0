"""``icecheck check``: the CI gate.

1. the built-in scenario suite (every expectation must hold);
2. replay of every corpus trace (``traces/*.json``: no drift);
3. the default exploration set (``engines/default_explorations.yaml``) within ``--time-budget``:
   no unexpected (must-hold) violation; the allowed anomalies an entry names must be found.

Writes a terminal summary, JUnit XML and a Markdown report (atomically). Exit 1 if anything
failed, 2 on malformed input (a scenario, a trace, the exploration list).
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field

import click
from rich.markup import escape

from icecheck.junit import Case, junit_xml as _junit_xml
from icecheck.cli.base import (EXIT_FAILED, EXIT_OK, SECONDS, builtin_scenarios, err,
                               fail_input, main, out)
from icecheck.scenarios.errors import InputError, check_number

DEFAULT_BUDGET = 120.0


@dataclass
class Exploration:
    id: str
    profile: str
    writers: int = 2
    ops: int = 1
    mix: tuple[str, ...] = ("delete", "update", "insert")
    keys: int = 1
    catalog: str = "cas"
    format: int = 2
    faults: bool = False
    crashes: bool = False
    max_examples: int = 200
    seed: int = 0
    allowed: tuple[str, ...] = field(default=())

    def config(self):
        from icecheck.engines.config import mix_config
        return mix_config(self.profile, self.writers, self.ops, self.mix, self.keys,
                          self.catalog, self.format, self.faults, self.crashes)


def explorations_file() -> str:
    import icecheck.engines
    return os.path.join(os.path.dirname(os.path.abspath(icecheck.engines.__file__)),
                        "default_explorations.yaml")


_KEYS = {"id", "profile", "writers", "ops", "mix", "keys", "catalog", "format", "faults",
         "crashes", "max_examples", "seed", "expect"}


def load_explorations(path: str) -> list[Exploration]:
    from icecheck.scenarios.yamlload import load_yaml_file  # line-aware safe loader

    doc = load_yaml_file(path)
    entries = doc.get("explorations") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise InputError("expected a mapping with a list 'explorations'", path,
                         getattr(doc, "line", None))
    out_list = []
    first_line: dict = {}              # id -> the line of the entry that used it first
    for i, e in enumerate(entries):
        line = getattr(e, "line", None)
        if not isinstance(e, dict):
            raise InputError(f"explorations[{i}] must be a mapping", path, line)
        unknown = set(e) - _KEYS
        if unknown:
            k = sorted(unknown)[0]
            raise InputError(f"unknown key {k!r} in explorations[{i}]; expected some of "
                             f"{', '.join(sorted(_KEYS))}", path,
                             getattr(e, "key_lines", {}).get(k, line))
        for k in ("id", "profile"):
            if k not in e:
                raise InputError(f"explorations[{i}] needs {k!r}", path, line)
        expect = e.get("expect") or {}
        try:
            def num(key, default, low, high):
                return check_number(e.get(key, default), f"explorations[{i}].{key}", path,
                                    low=low, high=high,
                                    line=getattr(e, "key_lines", {}).get(key, line))

            def flag(key):
                v = e.get(key, False)
                if not isinstance(v, bool):
                    raise InputError(f"explorations[{i}].{key} must be true or false, not {v!r}",
                                     path, getattr(e, "key_lines", {}).get(key, line))
                return v

            for key in ("id", "profile", "catalog"):
                if key in e and not isinstance(e[key], str):
                    raise InputError(f"explorations[{i}].{key} must be a string, not {e[key]!r}",
                                     path, getattr(e, "key_lines", {}).get(key, line))
            mix = e.get("mix", ["delete", "update", "insert"])
            if not isinstance(mix, list) or not all(isinstance(m, str) for m in mix):
                raise InputError(f"explorations[{i}].mix must be a list of command names",
                                 path, getattr(e, "key_lines", {}).get("mix", line))
            if not isinstance(expect, dict) or not isinstance(expect.get("allowed", []), list):
                raise InputError(f"explorations[{i}].expect must be a mapping with a list "
                                 "'allowed'", path, getattr(e, "key_lines", {}).get("expect", line))
            # an unknown key or property would make the check vacuous or fail every run
            # (exit 1 for what is a typo in the file): both are input errors at their line
            for k in expect:
                if k != "allowed":
                    raise InputError(f"unknown key {k!r} in explorations[{i}].expect; expected "
                                     "'allowed'", path, getattr(expect, "key_lines", {}).get(
                                         k, line))
            from icecheck.properties import PROPERTIES
            allowed = expect.get("allowed", [])
            for j, prop in enumerate(allowed):
                if not isinstance(prop, str) or prop not in PROPERTIES:
                    raise InputError(f"explorations[{i}].expect.allowed[{j}]: unknown property "
                                     f"{prop!r}; expected one of {', '.join(PROPERTIES)}", path,
                                     allowed.line_of(j) if hasattr(allowed, "line_of") else line)
            if e["id"] in first_line:
                raise InputError(f"explorations[{i}]: duplicate id {e['id']!r} (first used by "
                                 f"the entry at line {first_line[e['id']]})", path,
                                 getattr(e, "key_lines", {}).get("id", line))
            first_line[e["id"]] = line
            x = Exploration(
                id=e["id"], profile=e["profile"], writers=num("writers", 2, 1, 9),
                ops=num("ops", 1, 1, 9), mix=tuple(mix), keys=num("keys", 1, 1, 9),
                catalog=e.get("catalog", "cas"), format=num("format", 2, 2, 3),
                faults=flag("faults"), crashes=flag("crashes"),
                max_examples=num("max_examples", 200, 1, 1_000_000),
                seed=num("seed", 0, 0, 2**63), allowed=tuple(expect.get("allowed", ())))
            from icecheck.engines.config import build_model_config
            build_model_config(x.config(), path)
        except InputError as err_:
            # an error without a line of its own (a profile with no rule for a command) points
            # at the entry
            raise InputError(err_.detail, path,
                             (err_.line if err_.path == path else None) or line) from None
        except (TypeError, ValueError) as err_:
            raise InputError(f"explorations[{i}]: {err_}", path, line) from None
        out_list.append(x)
    return out_list


# -- the three parts -------------------------------------------------------------------------
def run_scenarios(progress, paths: list[str]) -> list[Case]:
    from icecheck.scenarios.format import load_scenario
    from icecheck.scenarios.runner import run_scenario

    cases = []
    for i, path in enumerate(paths, 1):
        t = time.monotonic()
        v = run_scenario(load_scenario(path))
        cases.append(Case("scenarios", v.id, "passed" if v.passed else "failed",
                          time.monotonic() - t, "; ".join(v.failures),
                          json.dumps(v.as_json(), indent=2) if not v.passed else "",
                          kind="" if v.passed else "expectation"))
        progress(f"[scenario {i}/{len(paths)}] {v.id}: {'ok' if v.passed else 'FAILED'}")
    return cases


def run_corpus(progress, paths: list[str]) -> list[Case]:
    from icecheck.traces.replay import replay_file

    cases = []
    for i, path in enumerate(paths, 1):
        t = time.monotonic()
        r = replay_file(path)
        cases.append(Case("corpus", r.id, "passed" if r.ok else "failed", time.monotonic() - t,
                          "; ".join(r.drift), kind="" if r.ok else "drift"))
        progress(f"[trace {i}/{len(paths)}] {r.id}: {'reproduces' if r.ok else 'DRIFT'}")
    return cases


def run_explorations(entries: list[Exploration], deadline: float, progress,
                     strict: bool = False) -> list[Case]:
    """Run each exploration within its share of the remaining budget.

    One rule for every outcome (README, "Exit codes"): a must-hold violation fails; a known
    finding is reported (status ``known``) and fails only with ``strict``; a run that never
    reached its floor (``engines.config.floor_events``), or that the budget left no time for,
    is *inconclusive* and fails: a gate that did not look must not pass.
    """
    from icecheck.engines.config import missing_floor
    from icecheck.engines.hypothesis_engine import explore
    from icecheck.traces.timeline import render_text

    cases = []
    for i, x in enumerate(entries):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            cases.append(Case("explorations", x.id, "failed", 0.0,
                              "inconclusive: not run, the time budget was spent before it "
                              "(raise --time-budget)", kind="inconclusive"))
            progress(f"[explore {i + 1}/{len(entries)}] {x.id}: NOT RUN (time budget spent)")
            continue
        budget = remaining / (len(entries) - i)
        progress(f"[explore {i + 1}/{len(entries)}] {x.id}: {x.profile} {x.catalog} "
                 f"v{x.format} (up to {x.max_examples} runs, {budget:.0f}s)")
        cfg = x.config()
        r = explore(cfg, max_examples=x.max_examples, seed=x.seed, time_budget=budget)
        note = (f"{r.examples} runs, {r.states} states"
                + (f", CUT by the time budget after {r.examples} runs" if r.timed_out else "")
                + (f"; allowed: {', '.join(f'{p} ({n})' for p, n in sorted(r.allowed.items()))}"
                   if r.allowed else "")
                + f"; reached: {', '.join(sorted(r.reached)) or 'none'}")
        bad = [f for f in r.findings if f.unexpected]
        floor = missing_floor(cfg, r.reached)
        if r.failed_new or (r.failed and strict):
            f = next(f for f in bad if strict or not f.known)
            cases.append(Case("explorations", x.id, "failed", r.elapsed,
                              f"{'known finding (--strict)' if f.known else 'unexpected'} "
                              f"{f.property}: {f.trace['explanation']}",
                              render_text(f.trace) + "\n" + json.dumps(f.trace["actions"]),
                              kind="known_finding" if f.known else "violation"))
        elif floor:
            cases.append(Case("explorations", x.id, "failed", r.elapsed,
                              f"inconclusive: the run never reached {', '.join(floor)}, so it "
                              f"checked nothing there (raise --time-budget); {note}",
                              kind="inconclusive"))
        elif r.failed:
            refs = ", ".join(f"{f.property} (corpus {(f.trace.get('expectation') or {}).get('trace', '?')})"
                             for f in bad)
            cases.append(Case("explorations", x.id, "known", r.elapsed,
                              f"reproduced, still a violation: {refs}: "
                              f"{bad[0].trace['explanation']}; {note}",
                              render_text(bad[0].trace)))
        else:
            missing = [p for p in x.allowed if p not in r.allowed]
            if missing:
                why = ("before the time budget ran out" if r.timed_out
                       else "in its whole example budget (vacuous run?)")
                cases.append(Case("explorations", x.id, "failed", r.elapsed,
                                  f"inconclusive: expected allowed anomaly {', '.join(missing)} "
                                  f"not found {why}; {note}", kind="inconclusive"))
            else:
                cases.append(Case("explorations", x.id, "passed", r.elapsed, note))
        progress(f"    {x.id}: {cases[-1].status.upper() if cases[-1].status != 'passed' else 'passed'} "
                 f"({r.elapsed:.1f}s, {note})")
    return cases


# -- reports -----------------------------------------------------------------------------------
STATUSES = ("passed", "failed", "known", "skipped")
SUITES = ("scenarios", "corpus", "explorations")


def junit_xml(cases: list[Case], run_id: str) -> str:
    """The gate's JUnit XML: one suite per part (``icecheck.junit``)."""
    return _junit_xml(cases, run_id, SUITES)


def markdown(cases: list[Case], elapsed: float, budget: float, run_id: str) -> str:
    failed = [c for c in cases if c.status == "failed"]
    known = [c for c in cases if c.status == "known"]
    lines = ["# icecheck check", "",
             f"**{'FAILED' if failed else 'PASSED'}** in {elapsed:.1f}s (time budget "
             f"{budget:.0f}s); run `{run_id}`", "",
             "| part | passed | failed | known findings | skipped |", "|---|---|---|---|---|"]
    for suite in SUITES:
        cs = [c for c in cases if c.suite == suite]
        lines.append(f"| {suite} | " + " | ".join(str(sum(c.status == st for c in cs))
                                                   for st in STATUSES) + " |")
    if failed:
        lines += ["", "## Failures", ""]
        for c in failed:
            lines += [f"### {c.suite}: {c.name} ({c.kind or 'failure'})", "",
                      c.message.replace("\n", " "), ""]
            if c.detail:
                lines += ["```", c.detail.rstrip(), "```", ""]
    if known:
        lines += ["", "## Known findings (real anomalies, reported every run; `--strict` fails on "
                      "them)", ""]
        for c in known:
            lines += [f"### KNOWN FINDING {c.suite}: {c.name}", "", c.message.replace("\n", " "),
                      ""]
            if c.detail:
                lines += ["```", c.detail.rstrip(), "```", ""]
    lines += ["", "## Corpus traces", ""]
    lines += [f"- `{c.name}`: {c.status}" + (f" — {c.message}" if c.message else "")
              for c in cases if c.suite == "corpus"] or ["(none)"]
    lines += ["", "## Explorations", ""]
    lines += [f"- `{c.name}`: {c.status} ({c.seconds:.1f}s) — {c.message.replace(chr(10), ' ')}"
              for c in cases if c.suite == "explorations"] or ["(none)"]
    return "\n".join(lines) + "\n"


@main.command()
@click.option("--time-budget", type=SECONDS, default=DEFAULT_BUDGET,
              show_default=True, help="Seconds for the whole gate; the explorations share "
                                      "what the scenarios and the corpus leave. An "
                                      "exploration the budget cuts short of its floor fails "
                                      "the gate as inconclusive.")
@click.option("--reports", "reports_dir", default=os.path.join("reports", "check"),
              show_default=True, help="Where to write junit.xml and report.md.")
@click.option("--explorations", "explorations_path", default=None, metavar="FILE",
              help="Exploration list (default: engines/default_explorations.yaml).")
@click.option("--corpus", "corpus", default=None, metavar="DIR",
              help="Trace corpus to replay (default: the traces/*.json shipped with icecheck).")
@click.option("--strict", is_flag=True,
              help="Fail on known findings too (real anomalies recorded in "
                   "properties/expectations.yaml with their corpus trace).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--no-fix", "no_fix", is_flag=True,
              help="With PIPELINE.yaml: do not try the mitigations of a failing anomaly.")
@click.argument("pipeline", required=False, metavar="[PIPELINE.yaml]")
@click.pass_context
def check(ctx: click.Context, time_budget: float, reports_dir: str,
          explorations_path: str | None, corpus: str | None, strict: bool, as_json: bool,
          no_fix: bool, pipeline: str | None) -> None:
    """The CI gate: the scenario suite, replay of the trace corpus, and the default
    explorations. Exit 1 if an expectation fails, a trace drifts, a must-hold property is
    violated (a known finding only with --strict) or an exploration is inconclusive; 2 on
    bad input, or when there is nothing to check. With PIPELINE.yaml, check that pipeline
    instead (docs/pipelines.md): exit 1 when an anomaly its readers would see can happen
    (unless the file accepts it) or the search is cut short of complete."""
    given = {name for name in ("time_budget", "explorations_path", "corpus", "no_fix")
             if ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT}
    if pipeline is not None:
        from icecheck.engines.explicit import TraceError
        from icecheck.pipelines.check import run as run_pipeline
        for name, option in (("explorations_path", "--explorations"), ("corpus", "--corpus")):
            if name in given:
                fail_input(InputError(f"{option} is for the built-in gate; a pipeline check "
                                      f"explores its own file", option))
        try:
            sys.exit(run_pipeline(pipeline, reports_dir, strict, as_json,
                                  lambda m: out.print(escape(m), soft_wrap=True),
                                  lambda m: err.print(escape(m)),
                                  time_budget=time_budget if "time_budget" in given else None,
                                  fix=not no_fix))
        except InputError as e:
            fail_input(e)
        except TraceError as e:
            # a violation the search found that a fresh model does not reproduce: a model bug,
            # never a verdict to print or pass (engines.explicit.attach_traces)
            err.print(f"icecheck: internal error, please report it: {escape(str(e))}")
            sys.exit(EXIT_FAILED)
    if "no_fix" in given:
        fail_input(InputError("--no-fix applies to a pipeline check (icecheck check "
                              "PIPELINE.yaml)", "--no-fix"))
    import uuid

    from icecheck.cli.commands_traces import corpus_files, expand_traces
    from icecheck.traces.format import check_writable_dir, write_together

    start = time.monotonic()
    deadline = start + time_budget
    run_id = uuid.uuid4().hex[:12]

    def progress(msg: str) -> None:
        err.print(escape(msg), markup=True)

    try:
        check_writable_dir(reports_dir, "--reports")
        entries = load_explorations(explorations_path or explorations_file())
        scenario_paths = builtin_scenarios()
        trace_paths = expand_traces((corpus,)) if corpus else corpus_files()
        for what, got, origin in (
                ("built-in scenarios", scenario_paths, "icecheck.scenarios.BUILTIN_DIR"),
                ("traces", trace_paths, corpus or "the shipped corpus"),
                ("explorations", entries, explorations_path or explorations_file())):
            if not got:
                raise InputError(f"nothing to check: no {what} (a gate that checks nothing "
                                 "must not pass)", origin)
        cases = run_scenarios(progress, scenario_paths)
        cases += run_corpus(progress, trace_paths)
    except InputError as e:
        fail_input(e)
    cases += run_explorations(entries, deadline, progress, strict)
    elapsed = time.monotonic() - start
    failed = [c for c in cases if c.status == "failed"]
    known = [c for c in cases if c.status == "known"]
    write_together({os.path.join(reports_dir, "junit.xml"): junit_xml(cases, run_id),
                    os.path.join(reports_dir, "report.md"): markdown(cases, elapsed,
                                                                     time_budget, run_id)})
    counts = {s: {st: sum(c.suite == s and c.status == st for c in cases) for st in STATUSES}
              for s in SUITES}
    if as_json:
        print(json.dumps({
            "passed": not failed, "elapsed_s": round(elapsed, 3), "run_id": run_id,
            "counts": counts,
            "failed": [{"suite": c.suite, "name": c.name, "kind": c.kind, "message": c.message}
                       for c in failed],
            "known_findings": [{"suite": c.suite, "name": c.name, "message": c.message}
                               for c in known]},
            indent=2))
    else:
        for c in failed:
            out.print(f"[bold red]FAIL[/] {c.suite}/{escape(c.name)} ({c.kind or 'failure'}): "
                      f"{escape(c.message)}", markup=True)
            if c.detail:
                out.print(escape(c.detail))
        for c in known:
            out.print(f"\n[bold yellow]KNOWN FINDING[/] {c.suite}/{escape(c.name)}:", markup=True)
            out.print(escape(c.message), soft_wrap=False)
        for suite in SUITES:
            cs = counts[suite]
            out.print(f"{suite}: {cs['passed']} passed, {cs['failed']} failed"
                      + (f", {cs['known']} known findings" if cs["known"] else "")
                      + (f", {cs['skipped']} skipped" if cs["skipped"] else ""))
        out.print(f"\nicecheck check: {'FAILED' if failed else 'passed'} in {elapsed:.1f}s; "
                  f"reports in {reports_dir}/ (run {run_id})")
    sys.exit(EXIT_FAILED if failed else EXIT_OK)
