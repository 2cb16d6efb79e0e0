"""One cell's exploration: what a Spark task runs (pure Python; no Spark import here).

Bounded exhaustive exploration (``engines.explicit``, BFS in one process, the cell's time
budget) where it finishes; where it does not (time budget or ``max_states``), Hypothesis
(``engines.hypothesis_engine``) for the rest. The result is plain JSON: counts, each property
found (a violation, a known finding, or an anomaly the isolation level allows, with the reason)
and its minimal trace in the corpus format.
"""

from __future__ import annotations

import json
import os
import socket
import time
import traceback

# Cell statuses, worst first (a cell shows its worst finding).
VIOLATION, KNOWN, EXPECTED, CLEAN, UNKNOWN, ERROR = (
    "violation", "known_finding", "expected", "clean", "not_found", "error")
SEVERITY = {ERROR: 0, VIOLATION: 1, KNOWN: 2, EXPECTED: 3, UNKNOWN: 4, CLEAN: 5}
MUST_HOLD_REASON = "No rule allows it: the property must hold for this profile, catalog and format."


def _reason(trace: dict | None, status: str) -> str:
    exp = (trace or {}).get("expectation") or {}
    if exp.get("reason"):
        return exp["reason"]
    return MUST_HOLD_REASON if status == VIOLATION else ""


def _order(prop: str) -> int:
    from icecheck.properties.violation import PROPERTIES
    return PROPERTIES.index(prop) if prop in PROPERTIES else len(PROPERTIES)


def run_cell(cell: dict) -> dict:
    """Explore one cell; never raises (an error is a result with status ``error``)."""
    from icecheck.sweep.space import explore_config

    start = time.monotonic()
    res: dict = {"id": cell["id"], "cell": cell, "host": socket.gethostname(),
                 "pid": os.getpid(), "engine_used": "bfs", "states": 0, "transitions": 0,
                 "max_depth": 0, "complete": False, "stopped": None, "hypothesis_examples": 0,
                 "findings": [], "error": None}
    try:
        from icecheck.engines.explicit import BFS, Bounds, search

        cfg = explore_config(cell)
        b = cell["bounds"]
        bounds = Bounds(max_depth=b.get("max_depth"), max_files=b.get("max_files"),
                        max_states=b.get("max_states"))
        r = search(cfg, engine=BFS, workers=1, bounds=bounds, time_budget=b.get("time_budget"),
                   traces=True)
        res.update(states=r.states, transitions=r.transitions, max_depth=r.max_depth,
                   complete=r.complete, stopped=r.stopped, bfs_seconds=round(r.seconds, 3))
        found: dict[str, dict] = {}
        for v in r.violations.values():
            st = KNOWN if v.known else VIOLATION
            found[v.property] = {"property": v.property, "status": st, "length": v.depth,
                                 "states": r.violation_counts[v.property], "engine": "bfs",
                                 "reason": _reason(v.trace, st), "trace": v.trace}
        for v in r.allowed.values():
            found.setdefault(v.property, {
                "property": v.property, "status": EXPECTED, "length": v.depth,
                "states": r.allowed_counts[v.property], "engine": "bfs",
                "reason": _reason(v.trace, EXPECTED), "trace": v.trace})
        if not r.complete:
            # The exhaustive search did not finish within the bounds: Hypothesis for the rest.
            from icecheck.engines.hypothesis_engine import explore
            h = cell["hypothesis"]
            hr = explore(cfg, max_examples=int(h.get("max_examples", 300)),
                         seed=int(h.get("seed", 0)), time_budget=h.get("time_budget"))
            res["engine_used"] = "bfs+hypothesis"
            res["hypothesis_examples"] = hr.examples
            res["states"] = max(res["states"], hr.states)
            for f in hr.findings:
                st = (KNOWN if f.known else VIOLATION) if f.unexpected else EXPECTED
                if f.property not in found or SEVERITY[st] < SEVERITY[found[f.property]["status"]]:
                    found[f.property] = {"property": f.property, "status": st,
                                         "length": len(f.trace["actions"]) if f.trace else None,
                                         "states": None, "engine": "hypothesis",
                                         "reason": _reason(f.trace, st), "trace": f.trace}
            for prop, n in hr.allowed.items():
                found.setdefault(prop, {"property": prop, "status": EXPECTED, "length": None,
                                        "states": n, "engine": "hypothesis", "trace": None,
                                        "reason": ""})
        res["findings"] = sorted(found.values(),
                                 key=lambda e: (SEVERITY[e["status"]], _order(e["property"])))
        if res["findings"]:
            res["status"] = res["findings"][0]["status"]
        else:
            res["status"] = CLEAN if r.complete else UNKNOWN
    except Exception as e:  # a task must report, not die: the driver records the error
        res["status"] = ERROR
        res["error"] = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=8)}"
    res["seconds"] = round(time.monotonic() - start, 3)
    return res


def run_cell_json(cell_json: str) -> str:
    """The Spark task body: a cell as JSON in, its result as JSON out."""
    return json.dumps(run_cell(json.loads(cell_json)))
