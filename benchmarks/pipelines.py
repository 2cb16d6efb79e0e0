"""Pipelines of realistic size (issue 44, item 3): the exhaustive search of each pipeline file
in ``benchmarks/pipelines/`` (4-6 jobs, 1-3 commands each, 2 keys, 2 partitions; one file per
engine mix), as ``icecheck check`` explores it, bounded by a count of states and a time budget.

Why a section of its own: the example pipelines (``--sections pipelines``) are a few hundred
states each, while the tables teams actually check have five jobs and reach millions of states.
What a team needs to know is whether such a file finishes on one machine, how long it takes,
how much memory it holds, when the first anomaly shows up, and, where it does not finish,
where it stopped. So each file's search runs in a fresh process (its peak RSS is its own) and
reports its states, transitions, whether it completed (or which bound cut it, at which BFS
level and how much of it), seconds, the time and states to its first anomaly, peak RSS and the
gate's verdict; then, in that same process, the two-phase-commit baseline the other sections
use (``benchmarks/twophase.py``), so that its speed is also given as a ratio that does not
depend on how busy the machine was. Each file is then searched again with the same bounds and
the partial-order reduction's sleep sets alone (no doomed swaps, ``engines/por.py``): the
report shows how that lever moved it (``levers``: states through the deepest BFS level both
searches reached).

Run through ``python -m benchmarks.run --sections realistic [--quick]`` (``bin/benchmark``),
which writes ``reports/pipelines.json`` and the section of ``reports/benchmarks.md``. The
bounds are counts and a budget (``FULL``, ``QUICK``; ``--realistic-max-states``,
``--realistic-budget``); a run a bound cut is reported as cut, never as a verdict.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time

from benchmarks.progress import item

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PIPELINE_DIR = os.path.join(ROOT, "benchmarks", "pipelines")
#: The whole section's four searches are meant to take about ten minutes on a 2-core machine:
#: each stops after ``time_budget_s`` seconds, or before the BFS level that would take it past
#: ``max_states`` distinct states (the first full run peaked at 1.8-2.7 KiB of resident memory
#: per state found, 4.5 GB at most: the bound keeps a run well inside a machine shared with
#: others), or at ``max_memory_mb`` resident (a safety net).
FULL = {"max_states": 2_000_000, "time_budget_s": 150.0, "max_memory_mb": 8000}
QUICK = {"max_states": 200_000, "time_budget_s": 60.0, "max_memory_mb": 8000}
#: What each pipeline's row holds (tests/test_benchmark_pipelines.py checks a run writes them)
FIELDS = ("pipeline", "name", "jobs", "engines", "states", "transitions", "max_depth",
          "complete", "stopped", "stopped_at", "seconds", "cpu_seconds", "states_per_s",
          "first_anomaly", "first_failure", "anomalies", "verdict", "peak_rss_mb",
          "baseline_states_per_s", "ratio", "level_sizes", "levers")
PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"


def pipeline_files() -> list[str]:
    """The benchmark's pipeline files, in name order."""
    return sorted(glob.glob(os.path.join(PIPELINE_DIR, "*.yaml")))


def verdict(complete: bool, failing: int) -> str:
    """The gate's verdict as ``icecheck check`` gives it, without its sampling and fixes: a
    failing anomaly found is a FAIL even when a bound cut the search (its counterexample is a
    real run); no failing anomaly passes only when the search completed."""
    if failing:
        return FAIL
    return PASS if complete else INCONCLUSIVE


def _peak_rss_mb() -> float:
    """This process's peak resident memory in MB: VmHWM, or ``resource``'s ru_maxrss where
    there is no /proc."""
    from benchmarks.run import _proc_kb
    kb = _proc_kb("VmHWM")
    if not kb:
        import resource
        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if sys.platform == "darwin":        # bytes there
            kb //= 1024
    return round(kb / 1024, 1)


class _Levels:
    """The BFS's progress, kept per level: the level's size (the distinct states first reached
    at that depth), and how much of the last level was expanded when the search stopped. Where a search stops says more than that it stopped: a cut after 90% of depth 13
    is close to its end, one at depth 6 of 25 is not. Also logs a line every ``every`` s."""

    def __init__(self, log, label: str, every: float = 15.0):
        self.sizes: list[int] = []      # index: depth
        self.last: dict = {}
        self.log, self.label, self.every = log, label, every
        self.t = time.monotonic()

    def __call__(self, info: dict) -> None:
        depth = info.get("depth", 0)
        if len(self.sizes) == depth:
            self.sizes.append(info.get("frontier", 0))
        self.last = info
        now = time.monotonic()
        if now - self.t >= self.every:
            self.t = now
            self.log(f"[realistic] {self.label}: {info.get('states', 0):,} states, depth "
                     f"{depth}, {info.get('expanded', 0):,} of {info.get('frontier', 0):,} of "
                     f"the level expanded, {info.get('elapsed', 0):.0f}s")


def _stopped_at(r, levels: _Levels) -> dict | None:
    """Where a cut search stopped: the BFS level it was in, its size, how much of it was
    expanded, and (cut by ``max_states``) how many new states the next level would have
    added. None for a completed search."""
    if r.complete:
        return None
    last = levels.last
    if last.get("depth") != r.max_depth:    # stopped before its first batch of this level
        last = {"expanded": 0, "frontier": (r.states - sum(levels.sizes)
                                            if len(levels.sizes) == r.max_depth else None)}
    out = {"depth": r.max_depth, "level_states": last.get("frontier"),
           "level_expanded": last.get("expanded")}
    if r.stopped == "max states":
        out["next_level_new_states"] = r.cut      # the level's new states, over the bound
    return out


def measure(path: str, bounds: dict, workers: int = 1, log=None,
            doomed_swaps: bool = True) -> dict:
    """One pipeline's exhaustive search (traces off: the timing is the search's), then the
    two-phase-commit baseline, in this process. Run it in a fresh process
    (``measure_in_subprocess``) so that the peak RSS is this search's. ``doomed_swaps``
    False: the partial-order reduction's sleep sets alone (``engines/por.py``), the lever
    the section compares its searches with."""
    import gc

    from benchmarks.run import baseline_rate, warm_up
    from icecheck.engines import por
    from icecheck.engines.explicit import Bounds, search
    from icecheck.pipelines.load import load_pipeline
    por.DOOMED_SWAPS = doomed_swaps
    log = log or (lambda m: print(m, file=sys.stderr, flush=True))
    p = load_pipeline(path)
    warm_up(p.config)
    levels = _Levels(log, os.path.basename(path))
    cpu = time.process_time()
    r = search(p.config, engine="bfs", workers=workers, traces=False,
               time_budget=bounds.get("time_budget_s"), progress=levels,
               bounds=Bounds(max_states=bounds.get("max_states"),
                             max_memory_mb=bounds.get("max_memory_mb")))
    cpu = time.process_time() - cpu
    peak = _peak_rss_mb()
    anomalies = [{"property": prop, "status": ("allowed" if kind == "allowed" else
                                               "known_finding" if v.known else "must_hold"),
                  "states_before": v.states_before, "seconds": round(v.seconds, 2),
                  "length": v.depth}
                 for kind, found in (("violation", r.violations), ("allowed", r.allowed))
                 for prop, v in sorted(found.items())]
    failing = [a for a in anomalies if a["status"] != "allowed"]

    def first(rows):
        a = min(rows, key=lambda a: (a["seconds"], a["states_before"]), default=None)
        return {k: a[k] for k in ("property", "states_before", "seconds")} if a else None

    # the workers' share of the CPU is not in this process's (one worker: all of it)
    per_core = r.states / cpu if workers == 1 and cpu > 0 else r.states_per_s / workers
    row = {"pipeline": os.path.relpath(path, ROOT), "name": p.name,
           "jobs": len(p.jobs), "engines": sorted({prof for _, prof in p.jobs}),
           "states": r.states, "transitions": r.transitions, "max_depth": r.max_depth,
           "complete": r.complete, "stopped": r.stopped,
           "stopped_at": _stopped_at(r, levels), "seconds": round(r.seconds, 2),
           "cpu_seconds": round(cpu, 2), "states_per_s": round(r.states_per_s),
           "first_anomaly": first(anomalies), "first_failure": first(failing),
           "anomalies": anomalies, "verdict": verdict(r.complete, len(failing)),
           "peak_rss_mb": peak, "notes": list(r.notes),
           "level_sizes": levels.sizes}
    del r
    gc.collect()                 # the search's heap out of the baseline's way
    base = baseline_rate(2.0)["cpu_states_per_s"]
    row["baseline_states_per_s"] = round(base)
    row["ratio"] = round(per_core / base, 4) if base else None
    return row


def measure_in_subprocess(path: str, bounds: dict, workers: int = 1, log=None,
                          doomed_swaps: bool = True) -> dict:
    """``measure`` in a fresh Python process on the Python source (not the compiled build,
    whatever this process's environment says), its progress lines on this process's stderr:
    passed line by line to ``log`` when given (a run's ``benchmarks.progress.Progress``, whose
    progress bars a child writing to the terminal itself would garble), else straight."""
    import threading

    from icecheck.compiled import ENV
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    env[ENV] = "0"
    cmd = [sys.executable, "-m", "benchmarks.pipelines", "--measure",
           json.dumps({"path": path, "bounds": bounds, "workers": workers,
                       "doomed_swaps": doomed_swaps})]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE if log else None, text=True)
    relay = None
    if log:
        def forward():
            for line in proc.stderr:
                log(line.rstrip("\n"))
        relay = threading.Thread(target=forward, daemon=True)
        relay.start()
    out = proc.stdout.read()
    proc.wait()
    if relay is not None:
        relay.join()
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return json.loads(out.strip().splitlines()[-1])


def bench(bounds: dict, workers: int, log, files: list[str] | None = None,
          mode: str = "full") -> dict:
    """Every benchmark pipeline (or ``files``), each in a fresh process: the section's
    document, as reports/pipelines.json holds it."""
    rows = []
    for path in files if files is not None else pipeline_files():
        name = os.path.relpath(path, ROOT)
        log(f"[realistic] {name}: exhaustive BFS, at most {bounds['max_states']:,} states, "
            f"{bounds['time_budget_s']} s, {bounds['max_memory_mb']:,} MB ...")
        with item(log, name):
            row = measure_in_subprocess(path, bounds, workers, log)
        where = _where(row)
        log(f"[realistic] {name}: {row['states']:,} states in {row['seconds']} s "
            f"({where}), peak {row['peak_rss_mb']:,.0f} MB, ratio {row['ratio']}, "
            f"{row['verdict']}")
        log(f"[realistic] {name}: again with the sleep sets alone (no doomed swaps), the "
            f"same bounds ...")
        with item(log, name + " (sleep sets alone)"):
            off = measure_in_subprocess(path, bounds, workers, log, doomed_swaps=False)
        row["levers"] = levers(off, row)
        row["data_symmetries"] = data_symmetries(path)
        rows.append(row)
    return {"mode": mode, "bounds": bounds, "workers": workers,
            "date": time.strftime("%Y-%m-%d %H:%M:%S"), "cores": os.cpu_count(),
            "baseline": "benchmarks/twophase.py (two-phase commit, pure-Python BFS, 6 RMs), "
                        "run after each search in its process", "pipelines": rows}


def data_symmetries(path: str) -> list[str]:
    """The permutations of a pipeline file's domain (its keys, and its partitions) that map the
    file onto itself: its initial rows (as a multiset) and its jobs (as a multiset, up to
    their names), with every literal value of the domain renamed, in rows, ``set:`` values and
    the literals of ``where:`` text. Each one found would let a search keep one state of each
    orbit (data symmetry, issue 44, item 2); none found means that lever cannot pay on this
    file. Read on the file as written (the ``{key}``/``{partition}`` templates range over the
    whole domain, so every permutation keeps them)."""
    import itertools
    import re

    import yaml
    with open(path) as f:
        doc = yaml.safe_load(f)
    dom = doc.get("domain") or {}
    keys, parts = list(dom.get("keys") or []), list(dom.get("partitions") or [])

    def renamed(x, k: dict, p: dict):
        if isinstance(x, bool) or x is None:
            return x
        if isinstance(x, dict):
            return {a: renamed(b, k, p) for a, b in x.items()}
        if isinstance(x, list):
            return [renamed(v, k, p) for v in x]
        if x in k:
            return k[x]
        if isinstance(x, str):
            if x in p:
                return p[x]
            # the literals of SQL text: integers and quoted strings of the domain
            x = re.sub(r"(?<![\w.'])(-?\d+)(?![\w.'])",
                       lambda m: str(k.get(int(m.group(1)), m.group(1))), x)
            return re.sub(r"'([^']*)'", lambda m: f"'{p.get(m.group(1), m.group(1))}'", x)
        return x

    def canonical(k: dict, p: dict):
        jobs = sorted(json.dumps(renamed({a: b for a, b in j.items() if a != "name"}, k, p),
                                 sort_keys=True) for j in doc.get("jobs") or [])
        rows = sorted(json.dumps(renamed(r, k, p)) for r in doc.get("initial_rows") or [])
        return jobs, rows

    same = canonical({}, {})
    found = []
    for kp in itertools.permutations(keys):
        for pp in itertools.permutations(parts):
            k = {a: b for a, b in zip(keys, kp) if a != b}
            p = {a: b for a, b in zip(parts, pp) if a != b}
            if (k or p) and canonical(k, p) == same:
                found.append(", ".join(f"{a}->{b}" for a, b in [*k.items(), *p.items()]))
    return found


def levers(off: dict, on: dict) -> dict:
    """How the doomed swaps (engines/por.py) moved a pipeline's search: the search with the
    sleep sets alone (``off``) beside the one with both (``on``), compared through the
    deepest BFS level both reached (every level up to a search's last is whole: a bound cuts
    the level after it), since two cut searches stop at different depths. With POR off (a
    schedule or a clock) the two are the same search."""
    depth = min(len(off["level_sizes"]), len(on["level_sizes"])) - 1
    through = [sum(off["level_sizes"][:depth + 1]), sum(on["level_sizes"][:depth + 1])]
    return {"sleep_sets_alone": {k: off[k] for k in ("states", "transitions", "complete",
                                                        "seconds", "level_sizes",
                                                        "peak_rss_mb", "verdict")},
            "depth": depth, "states_through_depth": through,
            "ratio": round(through[1] / through[0], 4) if through[0] else None}


def _where(row: dict) -> str:
    """'complete', or which bound cut the search and where (the level, how much of it)."""
    if row["complete"]:
        return "complete"
    at = row.get("stopped_at") or {}
    text = f"cut by {row['stopped']} in depth {at.get('depth')}"
    if row["stopped"] == "max states" and at.get("next_level_new_states") is not None:
        return (f"{text}: its {at.get('level_states') or 0:,} states expanded, the next level's "
                f"{at['next_level_new_states']:,} new states would pass the bound")
    if at.get("level_states"):
        return (f"{text}: {at.get('level_expanded') or 0:,} of its {at['level_states']:,} "
                f"states expanded")
    return text


def _first(a: dict | None) -> str:
    return f"{a['property']}: {a['states_before']:,} states / {a['seconds']} s" if a else "none"


def render_lines(doc: dict) -> list[str]:
    """The section of reports/benchmarks.md, from reports/pipelines.json's document."""
    b = doc["bounds"]
    L = ["", "## Pipelines of realistic size (benchmarks/pipelines/)", "",
         f"Each file's exhaustive BFS as `icecheck check` runs it (symmetry + POR, "
         f"{doc['workers']} worker(s), traces off), in a fresh process, run {doc['date']} in "
         f"{doc['mode']} mode: stopped after {b['time_budget_s']} s, before the BFS level "
         f"that would pass {b['max_states']:,} distinct states, or at {b['max_memory_mb']:,} MB "
         f"resident. A cut search is INCONCLUSIVE unless it already found a failing anomaly "
         f"(its counterexample is a real run). First anomaly: distinct states and seconds "
         f"when it was found. Ratio: states/s per core over the two-phase-commit baseline's, "
         f"run in the same process right after the search. Details (the size of each BFS "
         f"level, every anomaly): reports/pipelines.json.", "",
         "| pipeline | jobs | states | transitions | finished? | s | first anomaly | "
         "first failing anomaly | peak RSS | states/s | ratio | verdict |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["pipelines"]:
        L.append(f"| {os.path.basename(r['pipeline'])} | {r['jobs']} "
                 f"({', '.join(r['engines'])}) | {r['states']:,} | {r['transitions']:,} | "
                 f"{'yes' if r['complete'] else '**no**: ' + _where(r)} | {r['seconds']} | "
                 f"{_first(r['first_anomaly'])} | {_first(r['first_failure'])} | "
                 f"{r['peak_rss_mb']:,.0f} MB | {r['states_per_s']:,} | {r['ratio']} | "
                 f"**{r['verdict']}** |")
    with_levers = [r for r in doc["pipelines"] if r.get("levers")]
    if with_levers:
        L += ["", "How the partial-order reduction's doomed swaps (engines/por.py) moved each "
              "search: the same file and bounds searched with the sleep sets alone, compared "
              "through the deepest BFS level both searches reached (a whole level each).", "",
              "| pipeline | depth | states, sleep sets alone | states, + doomed swaps | "
              "ratio | sleep sets alone: finished? | verdict |", "|---|---|---|---|---|---|---|"]
        for r in with_levers:
            lv, off = r["levers"], r["levers"]["sleep_sets_alone"]
            L.append(f"| {os.path.basename(r['pipeline'])} | {lv['depth']} | "
                     f"{lv['states_through_depth'][0]:,} | {lv['states_through_depth'][1]:,} | "
                     f"{lv['ratio']} | {'yes' if off['complete'] else 'no'} "
                     f"({off['states']:,} states, {off['seconds']} s) | {off['verdict']} |")
    sym = [r for r in doc["pipelines"] if "data_symmetries" in r]
    if sym:
        found = [f"{os.path.basename(r['pipeline'])} ({'; '.join(r['data_symmetries'])})"
                 for r in sym if r["data_symmetries"]]
        L += ["", "Data symmetry (`data_symmetries`: a renaming of the domain's keys and "
                  "partitions that maps the file onto itself): "
                  + (", ".join(found) if found else
                     f"none of these {len(sym)} files admits one (their initial rows and "
                     f"their jobs' literals tell the keys and partitions apart), so that "
                     f"lever cannot pay here.")]
    return L


def main(argv=None) -> int:
    """Internal: ``--measure JSON`` runs one measurement and prints it as JSON (the section
    runs through benchmarks.run)."""
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measure", required=True, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    m = json.loads(args.measure)
    print(json.dumps(measure(m["path"], m["bounds"], m.get("workers", 1),
                             doomed_swaps=m.get("doomed_swaps", True))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
