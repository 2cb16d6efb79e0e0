"""Distributed BFS against one process (issues 13, 44): ``engines.spark_bfs.spark_search`` on
``local[1]`` and ``local[2]`` beside the local one-process BFS on the same configuration, with
identical state counts, transitions, verdicts and counterexamples checked; then one process
bounded to the memory the largest ``local[2]`` keeper needed (plus a tenth), which stops short
of the end the keepers reached (unless ``--no-large``); and the split search on Spark
(``--engine spark-bfs --split``, engines/split.py: a task per combination of the programs'
alternatives) on ``local[1]`` and ``local[2]`` (unless ``--no-split``). Writes
reports/spark-bfs.{json,md} together (atomic).

The figures are ratios of runs in this same benchmark (a busy machine moves them all), with the
load average before and after each run, and each run's CPU seconds in the keepers (which a busy
machine does not move): so a reader can tell a slow machine from a slow design.

    bin/benchmark spark-bfs [--profile P --writers W --ops O --mix a,b --retries R]
        [--no-large]        # or python -m benchmarks.spark_bfs ..., in a venv with PySpark
    bin/benchmark spark-bfs --markdown-only   # spark-bfs.md again from spark-bfs.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

from icecheck.engines.config import mix_config
from icecheck.engines.explicit import Bounds, search, with_retries
from icecheck.engines.spark_bfs import spark_search

#: Targets of issue 44, item 1.
PER_CORE_TARGET = 0.7
SPEEDUP_TARGET = 1.8


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _spark_row(cfg, master: str, bounds: Bounds = Bounds()) -> tuple[dict, object]:
    from icecheck.sweep.distributed import spark_session

    spark = spark_session(master, app="icecheck-bench-spark-bfs")
    try:
        load = _load()
        t = time.monotonic()
        r = spark_search(cfg, spark=spark, traces=False, bounds=bounds)
        seconds = time.monotonic() - t
    finally:
        spark.stop()
    work = getattr(r, "spark_work", {})
    cores = int(master[len("local["):-1]) if master.startswith("local[") else None
    return ({"engine": f"spark-bfs {master}", "cores": cores, "states": r.states,
             "transitions": r.transitions, "complete": r.complete, "stopped": r.stopped,
             "seconds": round(seconds, 2), "load_before": load, "load_after": _load(),
             "keeper_cpu_s": round(sum(w.get("expand_cpu", 0) + w.get("dedup_cpu", 0)
                                       for w in work.values()), 2),
             "keepers": [{"partition": k, "states": w.get("reused", 0) + w.get("replayed", 0),
                          "rebuilt": w.get("replayed", 0), "verdicts": w.get("verdicts", 0),
                          "cpu_s": round(w.get("expand_cpu", 0) + w.get("dedup_cpu", 0), 2),
                          "peak_rss_mb": round(w.get("peak_rss_mb", 0), 1)}
                         for k, w in work.items()],
             "levels": level_time(getattr(r, "spark_levels", []))}, r)


def level_time(levels: list[tuple]) -> dict:
    """Where a Spark search's wall time went, from its levels (``spark_search``'s
    ``spark_levels``: depth, frontier, where it ran, wall seconds, each keeper's CPU seconds):
    the levels the driver ran; the hand-over level (the keepers' first, which waits for
    Spark's first job and their start); the later levels' wall seconds beside their slowest
    keeper's CPU seconds and all keepers' together. A level lasts as long as its slowest
    keeper plus what is not a keeper's CPU: Spark's scheduling and shuffle, the pickled blobs'
    trips, and any core the machine's other work held."""
    driver = [lv for lv in levels if lv[2] == "driver"]
    spark = [lv for lv in levels if lv[2] == "spark"]
    out = {"driver_levels": len(driver),
           "driver_s": round(sum(lv[3] for lv in driver), 2),
           "spark_levels": len(spark)}
    if spark:
        first, rest = spark[0], spark[1:]
        out.update(handover_depth=first[0], handover_s=round(first[3], 2),
                   handover_slowest_cpu_s=round(max(first[4].values(), default=0), 2),
                   later_s=round(sum(lv[3] for lv in rest), 2),
                   later_slowest_cpu_s=round(sum(max(lv[4].values(), default=0)
                                                 for lv in rest), 2),
                   later_cpu_s=round(sum(sum(lv[4].values()) for lv in rest), 2))
    return out


def _same(a, b) -> bool:
    return ((a.states, a.transitions, a.final_states, sorted(a.violations), sorted(a.allowed))
            == (b.states, b.transitions, b.final_states, sorted(b.violations), sorted(b.allowed))
            and all(a.violations[p].actions == b.violations[p].actions for p in a.violations))


def speedup(cfg, masters: list[str]) -> tuple[dict, object]:
    """The one-process BFS, then spark-bfs on each master, on ``cfg``: (the section's
    document, the one-process search's result)."""
    load = _load()
    t = time.monotonic()
    local = search(cfg, engine="bfs", workers=1, traces=False)
    rows = [{"engine": "bfs (1 process)", "cores": 1, "states": local.states,
             "transitions": local.transitions, "complete": local.complete,
             "seconds": round(time.monotonic() - t, 2), "load_before": load,
             "load_after": _load()}]
    for m in masters:
        row, r = _spark_row(cfg, m)
        if not _same(r, local):
            raise SystemExit(f"spark-bfs {m} disagrees with bfs: {r.states:,} states, "
                             f"{r.transitions:,} transitions, {sorted(r.violations)} vs "
                             f"{local.states:,}, {local.transitions:,}, {sorted(local.violations)}")
        rows.append(row)
    one = rows[0]["states"] / rows[0]["seconds"]
    base = next(r for r in rows if r["engine"] == "spark-bfs local[1]")["seconds"]
    for row in rows:
        row["states_per_s"] = round(row["states"] / row["seconds"], 1)
        row["per_core_vs_bfs"] = round(row["states_per_s"] / row["cores"] / one, 3)
        row["speedup_vs_local1"] = round(base / row["seconds"], 2)
    return {"config": _name(cfg), "rows": rows}, local


def split_speedup(cfg, masters: list[str], one: dict, whole) -> dict:
    """The split search (engines/split.py: a Spark task per combination of the programs'
    alternatives, each a one-process BFS) on each master, against ``one``, the one-process
    BFS's row of ``speedup`` (and ``whole`` its result). Its verdicts, shortest counterexample lengths and final
    outcomes are checked against the one-process search's (it searches the states before a
    choice once per part, so its state count is a sum: its speed is given as the whole
    search's distinct states over its seconds, what the user waits for)."""
    from icecheck.engines.split import split_search
    from icecheck.sweep.distributed import spark_session
    rows = []
    for m in masters:
        spark = spark_session(m, app="icecheck-bench-split")
        try:
            load = _load()
            t = time.monotonic()
            r = split_search(cfg, spark=spark, traces=False)
            seconds = time.monotonic() - t
        finally:
            spark.stop()
        same = ({p: v.depth for p, v in r.violations.items()},
                {p: v.depth for p, v in r.allowed.items()}, r.outcomes, r.final_states) == \
            ({p: v.depth for p, v in whole.violations.items()},
             {p: v.depth for p, v in whole.allowed.items()}, whole.outcomes, whole.final_states)
        if not same or not r.complete:
            raise SystemExit(f"the split search on {m} disagrees with bfs: "
                             f"{sorted(r.violations)} vs {sorted(whole.violations)}")
        cores = int(m[len("local["):-1]) if m.startswith("local[") else None
        rows.append({"engine": f"split, spark {m}", "cores": cores, "parts": r.parts,
                     "states_searched": r.states, "states": whole.states,
                     "seconds": round(seconds, 2), "load_before": load,
                     "load_after": _load()})
    rate = one["states"] / one["seconds"]
    base = rows[0]["seconds"]
    for row in rows:
        row["states_per_s"] = round(row["states"] / row["seconds"], 1)
        row["per_core_vs_bfs"] = round(row["states_per_s"] / row["cores"] / rate, 3)
        row["speedup_vs_local1"] = round(base / row["seconds"], 2)
    return {"config": _name(cfg), "rows": rows}


def _bounded_one_process(spec: tuple, max_memory_mb: int) -> dict:
    """The one-process BFS of ``spec`` bounded to ``max_memory_mb``, in a fresh interpreter
    (this one already holds the memory of the runs before it)."""
    import subprocess
    import sys
    code = ("import json, sys, time\n"
            "from benchmarks.spark_bfs import _cfg\n"
            "from icecheck.engines.explicit import Bounds, search\n"
            "t = time.monotonic()\n"
            f"r = search(_cfg(*{spec!r}), engine='bfs', workers=1, traces=False, "
            f"bounds=Bounds(max_memory_mb={max_memory_mb}))\n"
            "print(json.dumps({'states': r.states, 'complete': r.complete, "
            "'stopped': r.stopped, 'seconds': round(time.monotonic() - t, 2), "
            "'notes': [n for n in r.notes if 'memory' in n]}))\n")
    load = _load()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(os.path.dirname(
                             os.path.abspath(__file__))))
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    return {"engine": "bfs (1 process)", "max_memory_mb": max_memory_mb, **doc,
            "load_before": load, "load_after": _load()}


def large(spec: tuple, row: dict) -> dict:
    """After spark-bfs ``row`` ran ``spec`` to the end: the one-process BFS bounded to the
    memory its largest keeper needed (rounded up to 100 MB, plus a tenth), which stops short."""
    peak = max(k["peak_rss_mb"] for k in row["keepers"] if k["partition"] != "driver")
    bound = int(-(-peak * 1.1 // 100) * 100)
    return {"config": _name(_cfg(*spec)), "spark": row,
            "one_process": _bounded_one_process(spec, bound)}


def _cfg(profile, writers, ops, mix, retries):
    return with_retries(mix_config(profile, writers, ops, tuple(mix.split(",")), 1), retries)


def _name(cfg) -> str:
    """The configuration's name with its retries (``mix_config``'s name leaves them out)."""
    return f"{cfg.name}, retries {dict(cfg.properties).get('commit.retry.num-retries', 0)}"


def markdown(doc: dict) -> str:
    s = doc["speedup"]
    rows = {r["engine"]: r for r in s["rows"]}
    l1, l2 = rows["spark-bfs local[1]"], rows["spark-bfs local[2]"]
    md = ["# spark-bfs against one process", "",
          f"{doc['cores']} cores, shared with other developers' searches: each run's 1-minute "
          "load average before and after it is given. Regenerate: "
          f"`{' '.join(['bin/benchmark spark-bfs'] + doc['argv'].split())}`.", "",
          "## Targets (issue 44, item 1)", "",
          "| target | measured | met |", "|---|---:|---|",
          f"| per executor core, at least {PER_CORE_TARGET} of one process's states/s "
          f"(local[1]) | {l1['per_core_vs_bfs']} | "
          f"{'yes' if l1['per_core_vs_bfs'] >= PER_CORE_TARGET else 'no'} |",
          f"| the same, local[2] | {l2['per_core_vs_bfs']} | "
          f"{'yes' if l2['per_core_vs_bfs'] >= PER_CORE_TARGET else 'no'} |",
          f"| local[2] at least {SPEEDUP_TARGET}x local[1] | {l2['speedup_vs_local1']} | "
          f"{'yes' if l2['speedup_vs_local1'] >= SPEEDUP_TARGET else 'no'} |"]
    split = {r["engine"]: r for r in (doc.get("split") or {}).get("rows", [])}
    s1, s2 = split.get("split, spark local[1]"), split.get("split, spark local[2]")
    if s1 and s2:
        md += [f"| the split search (`--split`), per executor core, local[1] | "
               f"{s1['per_core_vs_bfs']} | "
               f"{'yes' if s1['per_core_vs_bfs'] >= PER_CORE_TARGET else 'no'} |",
               f"| the same, local[2] | {s2['per_core_vs_bfs']} | "
               f"{'yes' if s2['per_core_vs_bfs'] >= PER_CORE_TARGET else 'no'} |",
               f"| the split search, local[2] at least {SPEEDUP_TARGET}x local[1] | "
               f"{s2['speedup_vs_local1']} | "
               f"{'yes' if s2['speedup_vs_local1'] >= SPEEDUP_TARGET else 'no'} |"]
    if doc.get("large"):
        g = doc["large"]
        sp, op = g["spark"], g["one_process"]
        peak = max(k["peak_rss_mb"] for k in sp["keepers"] if k["partition"] != "driver")
        met = sp["complete"] and not op["complete"]
        md.append(f"| a run to the end that one process bounded to {op['max_memory_mb']:,} MB "
                  f"(the largest keeper's peak, {peak:,.0f} MB, plus a tenth) cannot finish | "
                  f"local[2]: {sp['states']:,} states; one process stopped at "
                  f"{op['states']:,} | {'yes' if met else 'no'} |")
    md += ["", f"## Speedup: {s['config']}", "",
           "Same states, transitions, final states, verdicts and shortest counterexamples in "
           "every row (checked). Per core = states/s per core / one process's states/s. "
           "Keeper CPU = the CPU seconds the keepers spent (a busy machine lengthens the wall "
           "time, not this); cores the keepers got = keeper CPU / seconds (below the number of "
           "keepers: they waited for Spark, for each other at the end of a level, or for a "
           "core the machine's other work held).", "",
           "| engine | states | seconds | states/s | per core vs 1 process | speedup vs local[1] | "
           "keeper CPU s | cores the keepers got | load before/after |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in s["rows"]:
        md.append(f"| {r['engine']} | {r['states']:,} | {r['seconds']} | {r['states_per_s']:,.0f} "
                  f"| {r['per_core_vs_bfs']} | {r['speedup_vs_local1']} | "
                  f"{r.get('keeper_cpu_s', '-')} | "
                  f"{round(r['keeper_cpu_s'] / r['seconds'], 2) if 'keeper_cpu_s' in r else '-'} "
                  f"| {r['load_before']} / {r['load_after']} |")
    md += ["", "Keepers (one process per partition, and the driver's own for the first "
           "levels): states expanded (of which rebuilt from their paths), verdicts evaluated, "
           "CPU seconds, peak resident MB (the driver's is this benchmark's process, which ran "
           "the one-process search first).", ""]
    for r in s["rows"][1:]:
        md.append(f"* {r['engine']}: " + "; ".join(
            f"{k['partition']}: {k['states']:,} ({k['rebuilt']:,}), {k['verdicts']:,}, "
            f"{k['cpu_s']} s, {k['peak_rss_mb']:,.0f} MB" for k in r["keepers"]))
    timed = [r for r in s["rows"][1:] if r.get("levels", {}).get("spark_levels")]
    if timed:
        md += ["", "Where the wall time went (`benchmarks/spark_bfs.level_time`): the levels "
               "the driver ran; the hand-over level, which also waits for Spark's first job "
               "and the keepers' start; the later levels beside their slowest keeper's CPU "
               "seconds (a level lasts as long as its slowest keeper, plus Spark's scheduling "
               "and shuffle, the blobs' trips and any core other work held) and all keepers' "
               "CPU seconds together.", "",
               "| engine | driver levels | their s | hand-over depth | its s | its slowest "
               "keeper CPU s | later levels | their s | slowest keeper CPU s | all keepers "
               "CPU s | not a keeper's CPU s |",
               "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in timed:
            lv = r["levels"]
            md.append(f"| {r['engine']} | {lv['driver_levels']} | {lv['driver_s']} | "
                      f"{lv['handover_depth']} | {lv['handover_s']} | "
                      f"{lv['handover_slowest_cpu_s']} | {lv['spark_levels'] - 1} | "
                      f"{lv['later_s']} | {lv['later_slowest_cpu_s']} | {lv['later_cpu_s']} | "
                      f"{round(lv['later_s'] - lv['later_slowest_cpu_s'], 2)} |")
    if doc.get("split"):
        sp = doc["split"]
        md += ["", f"## The split search on Spark: {sp['config']}", "",
               "`--engine spark-bfs --split` (engines/split.py): one Spark task per "
               "combination of the programs' alternatives (up to interchangeable writers), "
               "each a one-process BFS in a Spark Python worker; nothing crosses between "
               "tasks until their results are merged. Same verdicts, shortest counterexample "
               "lengths, final outcomes and final-state count as the one-process BFS "
               "(checked). States searched is a sum over the parts (a state reached before a "
               "writer chose is searched in each of its parts); states/s is the whole "
               "search's distinct states over the seconds, what a user waits for, and per core "
               "compares that with the one-process BFS above.", "",
               "| engine | parts | states searched | distinct states | seconds | states/s | "
               "per core vs 1 process | speedup vs local[1] | load before/after |",
               "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in sp["rows"]:
            md.append(f"| {r['engine']} | {r['parts']} | {r['states_searched']:,} | "
                      f"{r['states']:,} | {r['seconds']} | {r['states_per_s']:,.0f} | "
                      f"{r['per_core_vs_bfs']} | {r['speedup_vs_local1']} | "
                      f"{r['load_before']} / {r['load_after']} |")
    if doc.get("large"):
        g = doc["large"]
        sp, op = g["spark"], g["one_process"]
        md += ["", f"## Memory: {g['config']}", "",
               f"* spark-bfs {sp['engine'].split()[-1]} (above): {sp['states']:,} states to the "
               "end; its keepers' peak resident memory: " + ", ".join(
                   f"{k['partition']} {k['peak_rss_mb']:,.0f} MB" for k in sp["keepers"]
                   if k["partition"] != "driver"),
               f"* one process, `--max-memory {op['max_memory_mb']}` (in a fresh interpreter): "
               f"{op['states']:,} states, stopped: {op['stopped'] or 'no'}, after "
               f"{op['seconds']} s (load {op['load_before']} / {op['load_after']}). "
               + " ".join(op["notes"])]
    return "\n".join(md) + "\n"


def main(argv=None) -> int:
    from benchmarks.run import rendered_only, report_options, write_pair
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="spark-3.5-cow-snapshot")
    ap.add_argument("--writers", type=int, default=3)
    ap.add_argument("--ops", type=int, default=2)
    ap.add_argument("--mix", default="delete,insert")
    # issue 44 asks for local[2]'s speedup "on a configuration that takes minutes": with one
    # retry this one takes about seven on local[1] (2,902,202 states); with none (702,300) a
    # minute and a half, of which Spark's fixed costs (its first job, the keepers' start,
    # about 0.4 s a level) are a larger share
    ap.add_argument("--retries", type=int, default=1)
    ap.add_argument("--no-large", action="store_true")
    ap.add_argument("--no-split", action="store_true",
                    help="leave out the split search's rows (--engine spark-bfs --split)")
    report_options(ap, "spark-bfs", "reports")
    a = ap.parse_args(argv)
    if rendered_only(a, "spark-bfs", markdown):
        return 0
    import sys
    spec = (a.profile, a.writers, a.ops, a.mix, a.retries)
    doc = {"cores": os.cpu_count(), "argv": " ".join(sys.argv[1:] if argv is None else argv),
           "speedup": None}
    doc["speedup"], whole = speedup(_cfg(*spec), ["local[1]", "local[2]"])
    if not a.no_split:
        doc["split"] = split_speedup(_cfg(*spec), ["local[1]", "local[2]"],
                                     doc["speedup"]["rows"][0], whole)
    del whole
    if not a.no_large:
        doc["large"] = large(spec, doc["speedup"]["rows"][-1])
    print(write_pair(a.out, "spark-bfs", doc, markdown))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
