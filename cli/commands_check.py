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
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import click
from rich.markup import escape

from icecheck.cli.main import (EXIT_FAILED, EXIT_OK, builtin_scenarios, err, fail_input, main,
                               out)
from icecheck.scenarios.errors import InputError

DEFAULT_BUDGET = 120.0


@dataclass
class Case:
    suite: str          # scenarios | corpus | explorations
    name: str
    status: str         # passed | failed | skipped
    seconds: float
    message: str = ""
    detail: str = ""


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
            x = Exploration(
                id=str(e["id"]), profile=str(e["profile"]), writers=int(e.get("writers", 2)),
                ops=int(e.get("ops", 1)), mix=tuple(e.get("mix", ("delete", "update", "insert"))),
                keys=int(e.get("keys", 1)), catalog=str(e.get("catalog", "cas")),
                format=int(e.get("format", 2)), faults=bool(e.get("faults", False)),
                crashes=bool(e.get("crashes", False)),
                max_examples=int(e.get("max_examples", 200)), seed=int(e.get("seed", 0)),
                allowed=tuple(expect.get("allowed", ())))
            from icecheck.engines.config import build_model_config
            build_model_config(x.config(), path)
        except InputError as err_:
            raise InputError(err_.detail, path, line) from None
        except (TypeError, ValueError) as err_:
            raise InputError(f"explorations[{i}]: {err_}", path, line) from None
        out_list.append(x)
    return out_list


# -- the three parts -------------------------------------------------------------------------
def run_scenarios(progress) -> list[Case]:
    from icecheck.scenarios.format import load_scenario
    from icecheck.scenarios.runner import run_scenario

    cases = []
    paths = builtin_scenarios()
    for i, path in enumerate(paths, 1):
        t = time.monotonic()
        v = run_scenario(load_scenario(path))
        cases.append(Case("scenarios", v.id, "passed" if v.passed else "failed",
                          time.monotonic() - t, "; ".join(v.failures),
                          json.dumps(v.as_json(), indent=2) if not v.passed else ""))
        progress(f"[scenario {i}/{len(paths)}] {v.id}: {'ok' if v.passed else 'FAILED'}")
    return cases


def run_corpus(progress, corpus: str | None = None) -> list[Case]:
    from icecheck.cli.commands_traces import corpus_files, expand_traces
    from icecheck.traces.replay import replay_file

    cases = []
    paths = expand_traces((corpus,)) if corpus else corpus_files()
    for i, path in enumerate(paths, 1):
        t = time.monotonic()
        r = replay_file(path)
        cases.append(Case("corpus", r.id, "passed" if r.ok else "failed", time.monotonic() - t,
                          "; ".join(r.drift)))
        progress(f"[trace {i}/{len(paths)}] {r.id}: {'reproduces' if r.ok else 'DRIFT'}")
    return cases


def run_explorations(entries: list[Exploration], deadline: float, progress,
                     strict: bool = False) -> list[Case]:
    from icecheck.engines.hypothesis_engine import explore
    from icecheck.traces.timeline import render_text

    cases = []
    for i, x in enumerate(entries):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            cases.append(Case("explorations", x.id, "skipped", 0.0, "time budget spent"))
            progress(f"[explore {i + 1}/{len(entries)}] {x.id}: skipped (time budget spent)")
            continue
        budget = remaining / (len(entries) - i)
        progress(f"[explore {i + 1}/{len(entries)}] {x.id}: {x.profile} {x.catalog} "
                 f"v{x.format} (up to {x.max_examples} runs, {budget:.0f}s)")
        r = explore(x.config(), max_examples=x.max_examples, seed=x.seed, time_budget=budget)
        note = (f"{r.examples} runs, {r.states} states"
                + (", cut by the time budget" if r.timed_out else "")
                + (f"; allowed: {', '.join(f'{p} ({n})' for p, n in sorted(r.allowed.items()))}"
                   if r.allowed else "")
                + f"; reached: {', '.join(sorted(r.reached)) or 'none'}")
        bad = [f for f in r.findings if f.unexpected]
        if r.failed and not strict and all(f.known for f in bad):
            refs = ", ".join(f"{f.property} (corpus {(f.trace.get('expectation') or {}).get('trace', '?')})"
                             for f in bad)
            cases.append(Case("explorations", x.id, "passed", r.elapsed,
                              f"KNOWN FINDING reproduced, still a violation: {refs}: "
                              f"{bad[0].trace['explanation']}; {note}",
                              render_text(bad[0].trace)))
        elif r.failed:
            cases.append(Case("explorations", x.id, "failed", r.elapsed,
                              f"unexpected {r.property}: {r.trace['explanation']}",
                              render_text(r.trace) + "\n" + json.dumps(r.trace["actions"])))
        else:
            missing = [p for p in x.allowed if p not in r.allowed]
            if missing and not r.timed_out:
                cases.append(Case("explorations", x.id, "failed", r.elapsed,
                                  f"expected allowed anomaly {', '.join(missing)} not found "
                                  f"(vacuous run?); {note}"))
            elif missing:
                cases.append(Case("explorations", x.id, "passed", r.elapsed,
                                  f"inconclusive: {', '.join(missing)} not found before the "
                                  f"time budget ran out; {note}"))
            else:
                cases.append(Case("explorations", x.id, "passed", r.elapsed, note))
        progress(f"    {x.id}: {cases[-1].status} ({r.elapsed:.1f}s, {note})")
    return cases


# -- reports -----------------------------------------------------------------------------------
def junit_xml(cases: list[Case]) -> str:
    root = ET.Element("testsuites", name="icecheck check")
    for suite in ("scenarios", "corpus", "explorations"):
        cs = [c for c in cases if c.suite == suite]
        el = ET.SubElement(root, "testsuite", name=suite, tests=str(len(cs)),
                           failures=str(sum(c.status == "failed" for c in cs)),
                           skipped=str(sum(c.status == "skipped" for c in cs)),
                           time=f"{sum(c.seconds for c in cs):.3f}")
        for c in cs:
            tc = ET.SubElement(el, "testcase", classname=f"icecheck.{suite}", name=c.name,
                               time=f"{c.seconds:.3f}")
            if c.status == "failed":
                f = ET.SubElement(tc, "failure", message=c.message[:500])
                f.text = (c.message + "\n" + c.detail).strip()
            elif c.status == "skipped":
                ET.SubElement(tc, "skipped", message=c.message)
            elif c.message:
                so = ET.SubElement(tc, "system-out")
                so.text = c.message
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def markdown(cases: list[Case], elapsed: float, budget: float) -> str:
    failed = [c for c in cases if c.status == "failed"]
    lines = ["# icecheck check", "",
             f"**{'FAILED' if failed else 'PASSED'}** in {elapsed:.1f}s (time budget for "
             f"explorations: {budget:.0f}s)", "",
             "| part | passed | failed | skipped |", "|---|---|---|---|"]
    for suite in ("scenarios", "corpus", "explorations"):
        cs = [c for c in cases if c.suite == suite]
        lines.append(f"| {suite} | {sum(c.status == 'passed' for c in cs)} | "
                     f"{sum(c.status == 'failed' for c in cs)} | "
                     f"{sum(c.status == 'skipped' for c in cs)} |")
    if failed:
        lines += ["", "## Failures", ""]
        for c in failed:
            lines += [f"### {c.suite}: {c.name}", "", c.message.replace("\n", " "), ""]
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
@click.option("--time-budget", type=click.FloatRange(0), default=DEFAULT_BUDGET,
              show_default=True, help="Seconds for the whole gate; the explorations share "
                                      "what the scenarios and the corpus leave.")
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
def check(time_budget: float, reports_dir: str, explorations_path: str | None,
          corpus: str | None, strict: bool, as_json: bool) -> None:
    """The CI gate: the scenario suite, replay of the trace corpus, and the default
    explorations. Exit 1 if an expectation fails, a trace drifts or a must-hold property is
    violated."""
    from icecheck.traces.format import write_atomic

    start = time.monotonic()
    deadline = start + time_budget

    def progress(msg: str) -> None:
        err.print(escape(msg), markup=True)

    try:
        entries = load_explorations(explorations_path or explorations_file())
        cases = run_scenarios(progress)
        cases += run_corpus(progress, corpus)
    except InputError as e:
        fail_input(e)
    cases += run_explorations(entries, deadline, progress, strict)
    elapsed = time.monotonic() - start
    failed = [c for c in cases if c.status == "failed"]
    write_atomic(os.path.join(reports_dir, "junit.xml"), junit_xml(cases))
    write_atomic(os.path.join(reports_dir, "report.md"), markdown(cases, elapsed, time_budget))
    if as_json:
        print(json.dumps({
            "passed": not failed, "elapsed_s": round(elapsed, 3),
            "counts": {s: {st: sum(c.suite == s and c.status == st for c in cases)
                           for st in ("passed", "failed", "skipped")}
                       for s in ("scenarios", "corpus", "explorations")},
            "failed": [{"suite": c.suite, "name": c.name, "message": c.message}
                       for c in failed],
            "known_findings": [{"suite": c.suite, "name": c.name, "message": c.message}
                               for c in cases if c.message.startswith("KNOWN FINDING")]},
            indent=2))
    else:
        for c in failed:
            out.print(f"[bold red]FAIL[/] {c.suite}/{escape(c.name)}: {escape(c.message)}",
                      markup=True)
            if c.detail:
                out.print(escape(c.detail))
        for c in cases:
            if c.message.startswith("KNOWN FINDING"):
                out.print(f"[bold yellow]KNOWN FINDING[/] {c.suite}/{escape(c.name)}: "
                          f"{escape(c.message[len('KNOWN FINDING '):])}", markup=True)
        for suite in ("scenarios", "corpus", "explorations"):
            cs = [c for c in cases if c.suite == suite]
            out.print(f"{suite}: {sum(c.status == 'passed' for c in cs)} passed, "
                      f"{sum(c.status == 'failed' for c in cs)} failed, "
                      f"{sum(c.status == 'skipped' for c in cs)} skipped")
        out.print(f"\nicecheck check: {'FAILED' if failed else 'passed'} in {elapsed:.1f}s; "
                  f"reports in {reports_dir}/")
    sys.exit(EXIT_FAILED if failed else EXIT_OK)
