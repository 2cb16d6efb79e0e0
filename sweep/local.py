"""Running the sweep's cells without Spark: in this process (``serial``) or in a local pool of
worker processes (``processes``).

The default sweep runs its cells as Spark tasks (``sweep.distributed``), which pays for itself on
a cluster; on one machine Spark's start and per-job overhead can cost more than the cells
(docs/sweep.md gives the measured figures). These executors run the very same cell function
(``sweep.runner.run_cell``), persist each finished cell the same way
(``<out>/cells/<cell id>.json``, atomically, so a run resumes where it stopped), and return the
same ``SweepRun``; the results of a cell do not depend on the executor.

Parquet is written with pyarrow when it is installed (``pip install -e '.[conformance]'``
brings it); without it the per-cell JSON files and the reports are the results.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Callable

from icecheck.engines.lifetime import die_with_parent, stop_all
from icecheck.traces.format import write_atomic

from .distributed import CELLS_DIR, PARQUET, SweepRun, cell_path, load_finished, result_row
from .runner import run_cell

EXECUTORS = ("spark", "processes", "serial")


def run_cells_local(cells: list[dict], out: str, *, resume: bool = True, workers: int = 1,
                    on_progress: Callable[[int, int], None] | None = None) -> SweepRun:
    """Run the cells not finished yet, ``workers`` at a time (1: in this process)."""
    os.makedirs(os.path.join(out, CELLS_DIR), exist_ok=True)
    done = load_finished(out, cells) if resume else {}
    todo = [c for c in cells if c["id"] not in done]
    workers = max(1, int(workers))
    master = "serial" if workers == 1 else f"processes[{workers}]"
    run = SweepRun(out, len(cells), skipped=len(done), parallelism=workers, master=master)
    finished = dict(done)
    start = time.monotonic()

    def keep(result: dict) -> None:
        write_atomic(cell_path(out, result["id"]), json.dumps(result))
        finished[result["id"]] = result
        if on_progress:
            on_progress(len(finished), len(cells))

    if on_progress:
        on_progress(len(finished), len(cells))
    try:
        if workers == 1:
            for cell in todo:
                keep(run_cell(cell))
        else:
            # spawn, not fork: the parent runs a progress thread, and a forked child could
            # inherit one of its locks held
            ctx = multiprocessing.get_context("spawn")
            # every worker dies with this process (engines/lifetime.py); an interrupted run
            # ends its workers at once (their cells run again on resume) instead of waiting
            # for the cells they are running, which can take minutes
            pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                       initializer=die_with_parent, initargs=(os.getpid(),))
            ended = False
            try:
                pending = {pool.submit(run_cell, c) for c in todo}
                while pending:
                    complete, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in complete:
                        keep(fut.result())
                ended = True
            finally:
                if ended:
                    pool.shutdown(wait=True)
                else:
                    _end_pool(pool)
    except KeyboardInterrupt:
        run.interrupted = True
    run.ran = len(finished) - len(done)
    run.seconds = time.monotonic() - start
    run.results = [finished[c["id"]] for c in cells if c["id"] in finished]
    return run


def _end_pool(pool: ProcessPoolExecutor) -> None:
    """Stop ``pool`` without waiting for the cells its workers are running: cancel what has
    not started, then terminate the workers (``stop_all``; the pool offers no public way to
    reach them before Python 3.14's ``terminate_workers``)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    try:
        pool.shutdown(wait=False, cancel_futures=True)
    finally:
        stop_all(procs, grace=0.0)


def write_parquet_local(results: list[dict], out: str) -> str | None:
    """The results as one Parquet file (the columns Spark writes), or None without pyarrow."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    rows = [result_row(r) for r in results]
    table = pa.Table.from_pylist(rows) if rows else None
    if table is None:
        return None
    path = os.path.join(out, PARQUET)
    tmp = os.path.join(out, f".{PARQUET}.tmp-local")
    os.makedirs(tmp, exist_ok=True)
    pq.write_table(table, os.path.join(tmp, "part-00000.parquet"))
    open(os.path.join(tmp, "_SUCCESS"), "w").close()
    if os.path.isdir(path):
        import shutil
        old = f"{path}.old-local"
        os.replace(path, old)
        os.replace(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, path)
    return path
