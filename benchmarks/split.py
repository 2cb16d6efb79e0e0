"""Pipelines of realistic size searched to the end, split by their alternatives (issue 44,
item 3): each file of ``benchmarks/pipelines/`` through ``engines.split.split_search`` (one
BFS per combination of its jobs' template alternatives, ``--workers`` parts at once, a
process each), as ``icecheck check`` searches a file with ``bounds: {split: true}``.
Writes reports/split.{json,md} together (atomic).

Why a benchmark of its own, out of ``bin/benchmark``'s default sections: its point is whether
these files *finish* on this machine, and a finished search of one of them takes tens of
minutes (the realistic section bounds its searches to 150 s each and reports where they
stopped). Each file runs in a fresh process, so the memory figures are its own: the peak
resident memory of the largest part's process (``RUSAGE_CHILDREN``; with ``--workers 1`` the
parts run in the measuring process itself, and its own peak is given), the CPU seconds of every
part, and then, in that process, the two-phase-commit baseline (``benchmarks/twophase.py``), so
that the speed per core is also given as a ratio a busy machine does not move.

    bin/benchmark split [--files spark-only.yaml,...] [--workers N] [--budget S]
        [--max-states N] [--max-memory MB] [--keep] [--compiled]
                                                    # or python -m benchmarks.split ...
    bin/benchmark split --markdown-only             # split.md again from split.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Each part: at most this many distinct states and this much resident memory (what one
#: process holds; ``workers`` parts run at once); the whole file: at most this many seconds.
DEFAULTS = {"max_states": 10_000_000, "max_memory_mb": 9000, "time_budget_s": 3600.0}


def measure(path: str, bounds: dict, workers: int) -> dict:
    """One file's split search (traces off), then the baseline, in this process (and its
    parts' processes, which inherit its build: the Python source or the compiled one)."""
    from benchmarks.pipelines import verdict
    from benchmarks.run import baseline_rate, warm_up
    from icecheck.compiled import active
    from icecheck.engines.explicit import Bounds
    from icecheck.engines.split import parts, split_search
    from icecheck.pipelines.load import load_pipeline
    p = load_pipeline(path)
    warm_up(p.config)
    todo, total = parts(p.config)
    t0, last = time.monotonic(), [0.0]

    def progress(info: dict) -> None:
        now = time.monotonic()
        if now - last[0] >= 30.0:
            last[0] = now
            done, n = info.get("parts", (0, len(todo)))
            print(f"[split] {os.path.basename(path)}: {info['states']:,} states, "
                  f"{done}/{n} parts done, {now - t0:.0f}s", file=sys.stderr, flush=True)
    cpu = time.process_time()
    r = split_search(p.config, workers=workers, traces=False, progress=progress,
                     time_budget=bounds["time_budget_s"],
                     bounds=Bounds(max_states=bounds["max_states"],
                                   max_memory_mb=bounds["max_memory_mb"]))
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - cpu + kids.ru_utime + kids.ru_stime
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    anomalies = [{"property": prop, "status": ("allowed" if kind == "allowed" else
                                               "known_finding" if v.known else "must_hold"),
                  "length": v.depth}
                 for kind, found in (("violation", r.violations), ("allowed", r.allowed))
                 for prop, v in sorted(found.items())]
    failing = [a for a in anomalies if a["status"] != "allowed"]
    row = {"pipeline": os.path.relpath(path, ROOT), "name": p.name, "jobs": len(p.jobs),
           "parts": len(todo), "combinations": total, "workers": workers,
           "states": r.states, "transitions": r.transitions, "max_depth": r.max_depth,
           "complete": r.complete, "stopped": r.stopped, "seconds": round(r.seconds, 1),
           "cpu_seconds": round(cpu, 1),
           "part_peak_rss_mb": round(kids.ru_maxrss / 1024 if workers > 1 else own),
           "anomalies": anomalies, "verdict": verdict(r.complete, len(failing)),
           "part_results": r.part_results, "compiled": active()}
    del r
    base = baseline_rate(2.0)["cpu_states_per_s"]
    row["baseline_states_per_s"] = round(base)
    row["ratio"] = round(row["states"] / cpu / base, 4) if cpu > 0 and base else None
    return row


def measure_in_subprocess(path: str, bounds: dict, workers: int,
                          compiled: bool = False) -> dict:
    """``measure`` in a fresh Python process on the Python source (or the compiled build),
    its progress on stderr."""
    from benchmarks.run import fresh_process
    got = fresh_process("benchmarks.split", {"path": path, "bounds": bounds,
                                             "workers": workers}, compiled=compiled)
    if got["compiled"] != compiled:
        raise RuntimeError("asked for the compiled build, the search ran on the Python source "
                           "(is the build current? bin/icecheck compile)" if compiled else
                           "asked for the Python source, the search ran on the compiled build")
    return got


def _unsplit(out: str) -> dict:
    """The realistic section's rows (reports/pipelines.json: the same files searched whole,
    within its bounds), by file, when that report is there."""
    try:
        with open(os.path.join(out, "pipelines.json")) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    rows = {r["pipeline"]: r for r in doc.get("pipelines", [])}
    return {k: dict(r, bounds=doc.get("bounds", {}), run=doc.get("date"))
            for k, r in rows.items()}


def _name(row: dict) -> str:
    """A row's file name, and the build it ran on when not the Python source."""
    return os.path.basename(row["pipeline"]) + (" (compiled build)" if row.get("compiled")
                                                else "")


def markdown(doc: dict) -> str:
    b = doc["bounds"]
    L = ["# Pipelines of realistic size, searched to the end: the split search", "",
         f"Generated by `bin/benchmark split` ({doc['date']}, {doc['cores']} cores, load "
         f"{doc['load_before']} before, {doc['load_after']} after"
         + (f"; rows of files not run then kept from the run of {doc['kept_from']}, `--keep`"
            if doc.get("kept_from") else "") + "). Each file of "
         "benchmarks/pipelines/ searched by `engines/split.py` (one BFS per combination of its "
         "jobs' template alternatives, up to interchangeable writers; symmetry + POR in each) "
         f"with {doc['workers']} parts at once, in a fresh process, as `icecheck check` runs a "
         "file with `bounds: {split: true}`. Bounds: each part at most "
         f"{b['max_states']:,} states and {b['max_memory_mb']:,} MB resident; the file at most "
         f"{b['time_budget_s']:.0f} s. States are summed over the parts (a state reached "
         "before a writer chose its alternative is searched in each of that writer's parts). "
         "Peak RSS: the largest part's process. Ratio: states per CPU second over the "
         "two-phase-commit baseline's, run in the same process afterwards.", "",
         "| pipeline | jobs | parts | states | finished? | wall s | CPU s | peak RSS, one part "
         "| states/s | ratio | verdict | anomalies (shortest length) | run (load before/after) |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["pipelines"]:
        found = "; ".join(f"{a['property']} ({a['status']}, {a['length']})"
                          for a in r["anomalies"]) or "none"
        rate = round(r["states"] / r["seconds"]) if r["seconds"] else 0
        L.append(f"| {_name(r)} | {r['jobs']} | {r['parts']} | "
                 f"{r['states']:,} | {'yes' if r['complete'] else '**no**: ' + str(r['stopped'])}"
                 f" | {r['seconds']:,} | {r['cpu_seconds']:,} | {r['part_peak_rss_mb']:,} MB | "
                 f"{rate:,} | {r['ratio']} | **{r['verdict']}** | {found} | "
                 f"{r.get('date', '-')} ({r.get('load_before', '-')} / "
                 f"{r.get('load_after', '-')}) |")
    with_parts = [r for r in doc["pipelines"] if r.get("part_results")]
    if with_parts:
        L += ["", "Each part (the command each templated job runs in it, `#k` its alternative): "
              f"states and seconds, in part order, and the place it started in where the run "
              f"recorded it (with few parts per core, largest first: engines/split.py); "
              f"{doc['workers']} ran at once, so the largest ones set the wall time.", ""]
        for r in with_parts:
            L.append(f"* {_name(r)}: " + "; ".join(
                f"{q['part']}: {q['states']:,} in {q['seconds']:,.0f} s"
                + (f", started {q['started']}" if "started" in q else "")
                + ("" if q["complete"] else f" ({q['stopped']})") for q in r["part_results"]))
    whole = doc.get("unsplit") or {}
    if whole:
        first = next(iter(whole.values()))
        wb = first.get("bounds", {})
        run = f", run {first['run']}" if first.get("run") else ""
        L += ["", "The same files searched whole (one BFS), from the realistic section of "
              f"reports/benchmarks.md (reports/pipelines.json{run}: at most "
              f"{wb.get('max_states', 0):,} states, {wb.get('time_budget_s')} s):", "",
              "| pipeline | states | finished? | s | peak RSS | verdict |",
              "|---|---|---|---|---|---|"]
        for name in dict.fromkeys(r["pipeline"] for r in doc["pipelines"]):
            w = whole.get(name)
            if w:
                L.append(f"| {os.path.basename(name)} | {w['states']:,} | "
                         f"{'yes' if w['complete'] else 'no: ' + str(w['stopped'])} | "
                         f"{w['seconds']} | {w['peak_rss_mb']:,.0f} MB | {w['verdict']} |")
    return "\n".join(L) + "\n"


def main(argv=None) -> int:
    from benchmarks.run import rendered_only, report_options, write_pair
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", metavar="NAME,NAME",
                    help="only these files of benchmarks/pipelines/ (default: every one)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="parts at once (default: every core)")
    ap.add_argument("--budget", type=float, default=DEFAULTS["time_budget_s"], metavar="S",
                    help="seconds per file")
    ap.add_argument("--max-states", type=int, default=DEFAULTS["max_states"], metavar="N",
                    help="distinct states per part")
    ap.add_argument("--max-memory", type=int, default=DEFAULTS["max_memory_mb"], metavar="MB",
                    help="resident MB per part")
    report_options(ap, "split", os.path.join(ROOT, "reports"))
    ap.add_argument("--keep", action="store_true",
                    help="keep the rows of split.json in --out for the files not run now, on "
                         "the build not run now (a file at a time: each takes tens of "
                         "minutes)")
    ap.add_argument("--compiled", action="store_true",
                    help="run the searches on the compiled build (bin/icecheck compile first)")
    ap.add_argument("--measure", help=argparse.SUPPRESS)   # internal: one file, JSON out
    a = ap.parse_args(argv)
    if a.measure:
        m = json.loads(a.measure)
        print(json.dumps(measure(m["path"], m["bounds"], m["workers"])))
        return 0
    if rendered_only(a, "split", markdown):
        return 0
    from benchmarks.pipelines import PIPELINE_DIR, pipeline_files
    files = pipeline_files()
    if a.files:
        names = [n.strip() for n in a.files.split(",") if n.strip()]
        unknown = [n for n in names if not os.path.exists(os.path.join(PIPELINE_DIR, n))]
        if unknown:
            ap.error(f"--files: no {', '.join(unknown)} in benchmarks/pipelines/")
        files = [os.path.join(PIPELINE_DIR, n) for n in names]
    for opt, v in (("--workers", a.workers), ("--budget", a.budget),
                   ("--max-states", a.max_states), ("--max-memory", a.max_memory)):
        if not v > 0:
            ap.error(f"{opt}: above 0, not {v}")
    if a.compiled:
        from icecheck.compiled import CompiledError, check
        try:
            check()
        except CompiledError as e:
            ap.error(f"--compiled: {e}")
    bounds = {"max_states": a.max_states, "max_memory_mb": a.max_memory,
              "time_budget_s": a.budget}
    doc = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "cores": os.cpu_count(),
           "workers": a.workers, "bounds": bounds, "load_before": round(os.getloadavg()[0], 2),
           "pipelines": []}
    for path in files:
        print(f"[split] {os.path.basename(path)} ...", file=sys.stderr, flush=True)
        load = round(os.getloadavg()[0], 2)
        row = measure_in_subprocess(path, bounds, a.workers, a.compiled)
        row.update(date=time.strftime("%Y-%m-%d %H:%M:%S"), load_before=load,
                   load_after=round(os.getloadavg()[0], 2))
        print(f"[split] {os.path.basename(path)}: {row['states']:,} states, "
              f"{'finished' if row['complete'] else 'stopped: ' + str(row['stopped'])}, "
              f"{row['seconds']} s, {row['verdict']}", file=sys.stderr, flush=True)
        doc["pipelines"].append(row)
    doc["load_after"] = round(os.getloadavg()[0], 2)
    if a.keep:
        try:
            with open(os.path.join(a.out, "split.json")) as f:
                old = json.load(f)
        except (OSError, ValueError):
            old = {}
        # a file's row on the Python source and its row on the compiled build are two rows
        def key(r):
            return r["pipeline"], bool(r.get("compiled"))
        now = {key(r) for r in doc["pipelines"]}
        kept = [r for r in old.get("pipelines", []) if key(r) not in now]
        doc["pipelines"] = sorted(kept + doc["pipelines"], key=key)
        if kept:        # rows of earlier runs: each row has its own date and loads
            doc["kept_from"] = old.get("date")
    doc["unsplit"] = {k: v for k, v in _unsplit(a.out).items()
                      if k in {r["pipeline"] for r in doc["pipelines"]}}
    print(write_pair(a.out, "split", doc, markdown))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
