"""``icecheck check PIPELINE.yaml``: explore a pipeline, print each anomaly with a minimal
trace in words, write the reports, and say whether every must-hold property held.

Exhaustive BFS when the state space fits ``bounds.max_states``; beyond, Hypothesis with
``bounds.max_examples`` derandomised runs (seed ``bounds.seed``): the output says which, since
only the first proves an absence.
"""

from __future__ import annotations

import json
import os

from .load import Pipeline, load_pipeline

EXHAUSTIVE, SAMPLED = "exhaustive (BFS)", "sampled (Hypothesis)"


def explore(p: Pipeline, progress=None) -> tuple[str, list[dict]]:
    """(how it explored, [anomaly]) where an anomaly is {property, status, explanation, trace}."""
    from icecheck.engines.explicit import Bounds, search
    from icecheck.scenarios.errors import InputError
    try:
        res = search(p.config, engine="bfs", bounds=Bounds(max_states=p.max_states), traces=True)
    except InputError as e:
        if e.path != "the configuration":
            raise
        # a job's command its engine refuses as it begins: the file is what is wrong
        raise InputError(e.detail, p.path) from None
    if res.complete:
        found = []
        for prop, v in sorted(res.violations.items()):
            found.append(_anomaly(prop, "known_finding" if v.known else "must_hold", v.trace))
        for prop, v in sorted(res.allowed.items()):
            if prop not in res.violations:
                found.append(_anomaly(prop, "allowed", v.trace))
        return f"{EXHAUSTIVE}: {res.states} states, every interleaving and choice", found
    if progress:
        # BFS stops at a level's end: the next level would have passed the bound
        progress(f"the exhaustive search stopped at {res.states} states, its next level "
                 f"would pass bounds.max_states={p.max_states}; "
                 f"sampling with Hypothesis ({p.max_examples} runs, seed {p.seed})")
    from icecheck.engines.hypothesis_engine import explore as hyp
    h = hyp(p.config, max_examples=p.max_examples, seed=p.seed)
    found = [_anomaly(f.property, (f.trace.get("expectation") or {}).get("status", "must_hold")
                      if f.trace else "must_hold", f.trace) for f in h.findings]
    return (f"{SAMPLED}: {h.examples} runs after BFS stopped at {res.states} states "
            f"(absence is not proven)", found)


def _anomaly(prop: str, status: str, trace: dict | None) -> dict:
    return {"property": prop, "status": status,
            "explanation": (trace or {}).get("explanation", ""), "trace": trace}


def report_md(p: Pipeline, how: str, found: list[dict]) -> str:
    lines = [f"# Pipeline check: {p.name}", "", f"File: `{p.path}`", "", "Jobs:"]
    lines += [f"- w{i} `{name}` on `{profile}`" for i, (name, profile) in enumerate(p.jobs, 1)]
    lines += ["", f"Exploration: {how}", ""]
    if not found:
        lines.append("No anomaly: every property held.")
    for a in found:
        lines += [f"## {a['property']} ({a['status']})", "", a["explanation"], ""]
    return "\n".join(lines) + "\n"


def run(path: str, reports_dir: str, strict: bool, as_json: bool, out, progress) -> int:
    """The exit code: 0 every must-hold property held, 1 one failed (a known finding only with
    ``strict``). Input errors raise ``InputError`` (the caller exits 2)."""
    from icecheck.traces.format import check_writable_dir, write_together
    check_writable_dir(reports_dir, "--reports")
    p = load_pipeline(path)
    progress(f"pipeline {p.name}: {len(p.jobs)} job(s): "
             + ", ".join(f"w{i} {n} ({prof})" for i, (n, prof) in enumerate(p.jobs, 1)))
    how, found = explore(p, progress)
    failed = [a for a in found if a["status"] == "must_hold"
              or (strict and a["status"] == "known_finding")]
    files = {os.path.join(reports_dir, "pipeline.md"): report_md(p, how, found),
             os.path.join(reports_dir, "pipeline.json"): json.dumps(
                 {"pipeline": p.path, "exploration": how, "passed": not failed,
                  "anomalies": found}, indent=2, default=str) + "\n"}
    write_together(files)
    if as_json:
        print(json.dumps({"pipeline": p.path, "exploration": how, "passed": not failed,
                          "anomalies": [{k: a[k] for k in ("property", "status", "explanation")}
                                        for a in found]}, indent=2))
    else:
        out(f"exploration: {how}")
        for a in found:
            out(f"\n{a['status'].upper().replace('_', ' ')}: {a['property']}\n  {a['explanation']}")
        out(f"\nicecheck check {p.path}: {'FAILED' if failed else 'passed'} "
            f"({len(found)} anomal{'y' if len(found) == 1 else 'ies'}); reports in {reports_dir}/")
    return 1 if failed else 0
