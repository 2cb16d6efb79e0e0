"""The whole sweep: cells of the space -> Spark tasks -> per-cell files -> Parquet + reports;
and the scaling run (the same small sweep on local[1] and local[2])."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from typing import Callable

from icecheck.scenarios.errors import InputError
from icecheck.traces.format import check_writable_dir, write_atomic

from .distributed import SHIPPED_DIR_CONF, reset, run_cells, spark_session, write_parquet
from .report import write_reports
from .space import Filters, cells, load_space, space_summary


def check_out_dir(out: str, option: str = "--out", subfolders: bool = True) -> None:
    """Fail before the first cell runs, with exit 2 naming ``option``, when ``out`` cannot be
    the sweep's folder: a file of that name (or, with ``subfolders``, of one of the folders a
    resumed run writes in; ``--fresh`` removes those) would otherwise end the run in a
    traceback, the scaling run's only after every master ran."""
    from .distributed import CELLS_DIR

    subs = (os.path.join(out, CELLS_DIR), os.path.join(out, "traces")) if subfolders else ()
    for p in (out, *subs):
        if os.path.exists(p) and not os.path.isdir(p):
            raise InputError(f"{p!r} is a file, not a folder; name a folder for the sweep's "
                             f"results", option)
    check_writable_dir(out, option)


def sweep(master: str | None, out: str, *, space_path: str | None = None,
          filters: Filters | None = None, resume: bool = True,
          on_progress: Callable[[int, int], None] | None = None,
          on_start: Callable[[int, int], None] | None = None,
          ship_code: bool | None = None, spark=None, report: bool = True,
          driver_memory: str | None = None, executor_memory: str | None = None,
          executor: str = "spark", workers: int | None = None) -> dict:
    """Run a sweep; return its summary (``summary.json``). ``spark``: reuse a session.
    ``executor``: ``spark`` (tasks on ``master``), ``processes`` (a local pool of ``workers``
    processes, default one per core) or ``serial`` (this process): sweep/local.py."""
    t0 = time.monotonic()
    space = load_space(space_path)
    todo, skipped = cells(space, filters)
    check_out_dir(out, subfolders=resume)
    if not resume:
        reset(out)
    if executor != "spark":
        return _sweep_local(todo, skipped, space, out, t0, resume=resume, report=report,
                            workers=1 if executor == "serial" else (workers or os.cpu_count()
                                                                    or 1),
                            on_start=on_start, on_progress=on_progress)
    own = spark is None
    if own:
        spark = spark_session(master, ship_code=ship_code, driver_memory=driver_memory,
                              executor_memory=executor_memory)
    try:
        spark_up = time.monotonic() - t0
        if on_start:
            on_start(len(todo), len(skipped))
        run = run_cells(spark, todo, out, resume=resume, on_progress=on_progress)
        if run.interrupted:
            return {"interrupted": True, "done": len(run.results), "total": len(todo),
                    "out": out}
        parquet = write_parquet(spark, run.results, out) if run.results else None
        master_used = spark.sparkContext.master
    finally:
        if own:
            shipped_dir = spark.conf.get(SHIPPED_DIR_CONF, None)
            spark.stop()
            if shipped_dir:      # the wheel built for the workers: served until the stop
                shutil.rmtree(shipped_dir, ignore_errors=True)
    return _finish(run, skipped, space, out, t0, master=master_used, spark_up=spark_up,
                   parquet=parquet, report=report)


def _finish(run, skipped, space, out, t0, *, master, spark_up, parquet, report) -> dict:
    """The run's metadata, and its reports (or just the counts)."""
    meta = {"master": master, "parallelism": run.parallelism,
            "wall_seconds": round(time.monotonic() - t0, 2),
            "spark_start_seconds": round(spark_up, 2), "sweep_seconds": round(run.seconds, 2),
            "cells_run": run.ran, "cells_resumed": run.skipped,
            "space": os.path.relpath(space.path) if space.path else "",
            "space_summary": space_summary(space), "parquet": parquet}
    summary = (write_reports(run.results, skipped, out, meta) if report
               else {"cells": len(run.results), "meta": meta})
    summary["out"] = out
    return summary


def _sweep_local(todo, skipped, space, out, t0, *, resume, report, workers, on_start,
                 on_progress) -> dict:
    from .local import run_cells_local, write_parquet_local

    if on_start:
        on_start(len(todo), len(skipped))
    run = run_cells_local(todo, out, resume=resume, workers=workers, on_progress=on_progress)
    if run.interrupted:
        return {"interrupted": True, "done": len(run.results), "total": len(todo), "out": out}
    parquet = write_parquet_local(run.results, out) if run.results else None
    return _finish(run, skipped, space, out, t0, master=run.master, spark_up=0.0,
                   parquet=parquet, report=report)


def scaling(out_dir: str, *, space_path: str | None = None, filters: Filters | None = None,
            masters: tuple[str, ...] = ("local[1]", "local[2]"),
            on_progress: Callable[[str, int, int], None] | None = None) -> dict:
    """The same sweep on each master, fresh each time (no resume), in one run; the speedup
    of each master over the first one. Writes ``<out_dir>/sweep-scaling.{json,md}``."""
    check_out_dir(out_dir, "--scaling-out", subfolders=False)
    runs = []
    for master in masters:
        tmp = tempfile.mkdtemp(prefix="icecheck-scaling-")
        t0 = time.monotonic()
        s = sweep(master, tmp, space_path=space_path, filters=filters, resume=False,
                  report=False,
                  on_progress=(lambda d, t, m=master: on_progress(m, d, t)) if on_progress else None)
        wall = time.monotonic() - t0
        m = s["meta"]
        runs.append({"master": master, "parallelism": m["parallelism"], "cells": s["cells"],
                     "wall_seconds": round(wall, 2),
                     "spark_start_seconds": m["spark_start_seconds"],
                     "sweep_seconds": m["sweep_seconds"]})
    base = runs[0]
    for r in runs:
        r["speedup_sweep"] = round(base["sweep_seconds"] / r["sweep_seconds"], 2) if r["sweep_seconds"] else None
        r["speedup_wall"] = round(base["wall_seconds"] / r["wall_seconds"], 2) if r["wall_seconds"] else None
    space = load_space(space_path)
    doc = {"space": os.path.relpath(space.path), "filters": filters.__dict__ if filters else {},
           "cpu_count": os.cpu_count(), "runs": runs,
           "note": "sweep_seconds: from the first task submitted to the last result persisted "
                   "(Spark start-up excluded); wall_seconds: including start-up and Parquet."}
    os.makedirs(out_dir, exist_ok=True)
    write_atomic(os.path.join(out_dir, "sweep-scaling.json"), json.dumps(doc, indent=2) + "\n")
    lines = ["# Sweep scaling (icecheck sweep --scaling)", "",
             f"The same sweep ({runs[0]['cells']} cells, space `{doc['space']}`, filters "
             f"`{json.dumps(doc['filters'])}`) on each master, fresh, on a {os.cpu_count()}-core "
             "machine.", "",
             "| master | tasks in parallel | cells | sweep s | speedup | wall s (incl. Spark start) | speedup (wall) |",
             "|---|---|---|---|---|---|---|"]
    for r in runs:
        lines.append(f"| {r['master']} | {r['parallelism']} | {r['cells']} | {r['sweep_seconds']} | "
                     f"{r['speedup_sweep']}x | {r['wall_seconds']} | {r['speedup_wall']}x |")
    lines += ["", doc["note"], ""]
    write_atomic(os.path.join(out_dir, "sweep-scaling.md"), "\n".join(lines))
    return doc
