"""Running the cells as Spark tasks, persisting each finished cell, and gathering the results.

The same code path for ``local[N]`` and a cluster URL: the driver sends each cell (JSON) to a
task (``sweep.runner.run_cell_json``), results come back through Spark (``collect`` of each
batch job), and the driver writes one small JSON file per finished cell
(``<out>/cells/<cell id>.json``). A re-run skips cells whose file exists (``--resume``, the
default), so an interrupted sweep resumes where it stopped. At the end all results of the space
are gathered as a Spark DataFrame and written as Parquet (``<out>/results.parquet``).

Batches of cells run as concurrent Spark jobs (one cell per partition), so a cluster's cores
are kept busy and the driver persists cells as each batch finishes.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Callable

from icecheck.traces.format import write_atomic

CELLS_DIR = "cells"
SHIPPED_CONF = "icecheck.shippedWheel"     # the wheel's file name when the code is shipped
SHIPPED_DIR_CONF = "icecheck.shippedWheelDir"   # the driver's folder holding it (removed at stop)
PARQUET = "results.parquet"


def is_local(master: str) -> bool:
    return master.startswith("local")


#: A local session's driver (its RPC endpoint and block manager) listens on loopback only:
#: Spark's default is the host's address (here 192.0.2.2, which other machines reach). A
#: cluster's executors must reach the driver, so a non-local master keeps Spark's default.
LOOPBACK = {"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"}


class ShipError(RuntimeError):
    """The code could not be built for shipping, or the workers cannot import icecheck without
    it (one line for the CLI)."""


def build_wheel(dest_dir: str) -> str:
    """Build icecheck's wheel from this source checkout (``pip wheel --no-deps``, the
    pyproject.toml build: the same files and package data a ``pip install`` gets) into
    ``dest_dir``; return its path. Workers need icecheck's dependencies, not icecheck."""
    import subprocess

    import icecheck

    root = os.path.dirname(os.path.dirname(os.path.abspath(icecheck.__file__)))
    if not os.path.exists(os.path.join(root, "pyproject.toml")):
        raise ShipError(f"--ship-code builds icecheck's wheel from a source checkout; {root} has "
                        "no pyproject.toml (install icecheck on the workers and pass "
                        "--no-ship-code)")
    # setuptools builds in <root>/build; remove it afterwards unless it was there before
    had_build = os.path.exists(os.path.join(root, "build"))
    try:
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                               dest_dir, root], capture_output=True, text=True)
    finally:
        if not had_build:
            shutil.rmtree(os.path.join(root, "build"), ignore_errors=True)
    wheels = [f for f in os.listdir(dest_dir) if f.endswith(".whl")] if proc.returncode == 0 else []
    if not wheels:
        last = (proc.stderr.strip().splitlines() or ["no wheel produced"])[-1]
        raise ShipError(f"could not build icecheck's wheel for the workers: {last}")
    return os.path.join(dest_dir, sorted(wheels)[-1])


def cell_task(shipped: str | None, locate: Callable[[str], str] | None = None,
              entry: str = "icecheck.sweep.runner:run_cell_json"):
    """The function each Spark task runs on a cell's JSON (``entry``, ``module:function``:
    the sweep's cell runner, or another task's, e.g. a split search's part,
    ``engines/split.py``). With ``shipped`` (the name of the
    wheel added with ``SparkContext.addFile``), the task first unpacks that wheel once per
    worker machine into a directory named by its content hash (atomically: unpacked aside, then
    renamed) and puts it first on ``sys.path``: an unpacked wheel is an installed package, so its
    package data (profiles, expectations, templates) are plain files, which a zip on
    ``sys.path`` would not give. The function is nested so that cloudpickle sends it by value:
    the worker needs nothing of icecheck to run it."""

    def task(cell_json):
        import importlib as _importlib
        import os as _os

        compiled = None
        if shipped:
            import hashlib as _hashlib
            import shutil as _shutil
            import sys as _sys
            import tempfile as _tempfile
            import zipfile as _zipfile

            if locate is None:
                from pyspark import SparkFiles
                wheel = SparkFiles.get(shipped)
            else:
                wheel = locate(shipped)
            with open(wheel, "rb") as fh:
                digest = _hashlib.blake2b(fh.read(), digest_size=8).hexdigest()
            target = _os.path.join(_tempfile.gettempdir(), f"icecheck-code-{digest}")
            if not _os.path.isdir(target):
                tmp = _tempfile.mkdtemp(prefix=".icecheck-unpack-", dir=_tempfile.gettempdir())
                with _zipfile.ZipFile(wheel) as z:
                    z.extractall(tmp)
                try:
                    _os.replace(tmp, target)
                except OSError:          # another task on this machine unpacked it first
                    _shutil.rmtree(tmp, ignore_errors=True)
            if target not in _sys.path:
                _sys.path.insert(0, target)
            # the wheel carries the Python source and no compiled build (icecheck/compiled.py):
            # a worker that inherited ICECHECK_COMPILED=1 from a local driver runs that source
            # rather than refusing to start
            compiled = _os.environ.pop("ICECHECK_COMPILED", None)
        module, _, name = entry.partition(":")
        try:
            run = getattr(_importlib.import_module(module), name)
        finally:
            if compiled is not None:
                _os.environ["ICECHECK_COMPILED"] = compiled
        return run(cell_json)

    return task


def under_spark_submit() -> bool:
    """Is this driver running under ``spark-submit``? (It hands PySpark its JVM gateway.)"""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def session_settings(master: str | None, *, submitted: bool, driver_memory: str | None = None,
                     executor_memory: str | None = None) -> tuple[str | None, dict]:
    """(the master to set on the builder, or None to keep spark-submit's; the memory settings).

    Under spark-submit its ``--master`` and memory options stand unless given here; run
    directly, the sweep defaults to ``local[*]`` and 1g (small cells need little)."""
    conf = {}
    for key, given in (("spark.driver.memory", driver_memory),
                       ("spark.executor.memory", executor_memory)):
        if given:
            conf[key] = given
        elif not submitted:
            conf[key] = "1g"
    return (master or (None if submitted else "local[*]")), conf


def spark_session(master: str | None, *, ship_code: bool | None = None,
                  app: str = "icecheck-sweep", conf: dict | None = None,
                  driver_memory: str | None = None, executor_memory: str | None = None):
    """A SparkSession for the sweep: no UI, Python workers that import icecheck.

    ``master`` None: spark-submit's master when run by spark-submit, else ``local[*]``.
    Python workers run ``PYSPARK_PYTHON`` (default here, locally: this interpreter, i.e. the
    venv that has icecheck installed). On a cluster set PYSPARK_PYTHON to a Python with
    icecheck's dependencies on every worker; ``ship_code`` (default: on for non-local masters)
    ships the icecheck code itself: a wheel built from this checkout (``build_wheel``), added
    with ``addFile`` and unpacked by each task (``cell_task``).
    """
    submitted = under_spark_submit()
    master, memory = session_settings(master, submitted=submitted, driver_memory=driver_memory,
                                      executor_memory=executor_memory)
    local = master is not None and is_local(master)
    if local:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    b = SparkSession.builder
    if master is not None:
        b = b.master(master)
    b = (b.appName(app)
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "4")
         .config("spark.python.worker.reuse", "true")
         .config("spark.task.maxFailures", "2")
         .config("spark.scheduler.mode", "FAIR"))
    for k, v in {**(LOOPBACK if local else {}), **memory, **(conf or {})}.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if ship_code is None:
        ship_code = not is_local(spark.sparkContext.master)
    if ship_code:
        tmp = tempfile.mkdtemp(prefix="icecheck-code-")
        wheel = build_wheel(tmp)
        spark.sparkContext.addFile(wheel)
        spark.conf.set(SHIPPED_CONF, os.path.basename(wheel))
        spark.conf.set(SHIPPED_DIR_CONF, tmp)
    return spark


@dataclass
class SweepRun:
    out: str
    total: int
    skipped: int = 0                 # finished in an earlier run (resume)
    ran: int = 0
    seconds: float = 0.0
    parallelism: int = 0
    master: str = ""
    interrupted: bool = False
    results: list[dict] = field(default_factory=list)


def cell_path(out: str, cid: str) -> str:
    return os.path.join(out, CELLS_DIR, f"{cid}.json")


def load_finished(out: str, cells: list[dict]) -> dict[str, dict]:
    done = {}
    for c in cells:
        p = cell_path(out, c["id"])
        if os.path.exists(p):
            try:
                with open(p, encoding="utf-8") as f:
                    done[c["id"]] = json.load(f)
            except (OSError, ValueError):
                pass  # a damaged file: run the cell again
    return done


def reset(out: str) -> None:
    """``--fresh``: forget finished cells, traces and reports of an earlier run."""
    for sub in (CELLS_DIR, "traces", PARQUET):
        p = os.path.join(out, sub)
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.unlink(p)


def _batches(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def run_cells(spark, cells: list[dict], out: str, *, resume: bool = True,
              on_progress: Callable[[int, int], None] | None = None,
              batch_size: int | None = None, concurrent_jobs: int = 2) -> SweepRun:
    """Run the cells not finished yet as Spark tasks; persist each result as it comes back."""
    sc = spark.sparkContext
    task = cell_task(spark.conf.get(SHIPPED_CONF, None) or None)
    os.makedirs(os.path.join(out, CELLS_DIR), exist_ok=True)
    done = load_finished(out, cells) if resume else {}
    todo = [c for c in cells if c["id"] not in done]
    par = max(1, sc.defaultParallelism)
    run = SweepRun(out, len(cells), skipped=len(done), parallelism=par, master=sc.master)
    size = batch_size or max(1, min(2 * par, -(-len(todo) // max(1, 2 * concurrent_jobs)) or 1))
    batches = _batches(todo, size)
    finished = dict(done)
    lock = threading.Lock()
    start = time.monotonic()

    def job(batch: list[dict]) -> list[dict]:
        rdd = sc.parallelize([json.dumps(c) for c in batch], len(batch))
        try:
            collected = rdd.map(task).collect()
        except Exception as e:
            # workers whose Python lacks icecheck, code not shipped: Spark ends with a Java stack
            # trace around the worker's ModuleNotFoundError; say what to do in one line instead
            if "No module named 'icecheck'" in str(e):
                raise ShipError("the Spark workers' Python (PYSPARK_PYTHON="
                                f"{os.environ.get('PYSPARK_PYTHON', 'python3')}) cannot import "
                                "icecheck: run with --ship-code, or install icecheck there"
                                ) from None
            raise
        results = [json.loads(r) for r in collected]
        for r in results:   # persist at once: an interruption keeps finished batches
            write_atomic(cell_path(out, r["id"]), json.dumps(r))
            with lock:
                finished[r["id"]] = r
        return results

    def running_done() -> int:
        """Tasks finished in jobs still running (their cells are not persisted yet)."""
        n = 0
        try:
            st = sc.statusTracker()
            for sid in st.getActiveStageIds():
                info = st.getStageInfo(sid)
                if info:
                    n += info.numCompletedTasks
        except Exception:
            pass
        return n

    pool = ThreadPoolExecutor(max_workers=max(1, concurrent_jobs))
    pending = set()
    queue = list(batches)
    try:
        while queue or pending:
            while queue and len(pending) < concurrent_jobs:
                pending.add(pool.submit(job, queue.pop(0)))
            complete, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            for fut in complete:
                fut.result()          # re-raise a Spark failure
            if on_progress:
                with lock:
                    n = len(finished)
                on_progress(min(len(cells), n + running_done()), len(cells))
    except KeyboardInterrupt:
        run.interrupted = True
        sc.cancelAllJobs()
        for fut in pending:
            fut.cancel()
    finally:
        pool.shutdown(wait=not run.interrupted, cancel_futures=True)
    if on_progress:
        on_progress(len(finished), len(cells))
    run.ran = len(finished) - len(done)
    run.seconds = time.monotonic() - start
    run.results = [finished[c["id"]] for c in cells if c["id"] in finished]
    return run


# -- gathering ------------------------------------------------------------------------------
def result_row(r: dict) -> dict:
    """A flat row (no traces) of a cell result, for the DataFrame / Parquet."""
    c = r["cell"]
    return {
        "cell_id": r["id"], "profile": c["profile"], "engine": c["engine"], "mode": c["mode"],
        "isolation": c["isolation"], "catalog": c["catalog"],
        "format_version": int(c["format_version"]), "commands": c["combo"],
        "writers": int(c["writers"]), "ops_per_writer": int(c["bounds"].get("ops", 1)),
        "status": r["status"],
        "properties": ",".join(f["property"] for f in r["findings"]),
        "violations": ",".join(f["property"] for f in r["findings"] if f["status"] == "violation"),
        "known_findings": ",".join(f["property"] for f in r["findings"]
                                   if f["status"] == "known_finding"),
        "expected": ",".join(f["property"] for f in r["findings"] if f["status"] == "expected"),
        "findings_json": json.dumps([{k: v for k, v in f.items() if k != "trace"}
                                     for f in r["findings"]]),
        "engine_used": r["engine_used"], "complete": bool(r["complete"]),
        "stopped": r.get("stopped") or "", "states": int(r["states"]),
        "transitions": int(r["transitions"]), "max_depth": int(r["max_depth"]),
        "seconds": float(r["seconds"]), "host": r.get("host", ""), "error": r.get("error") or "",
    }


def write_parquet(spark, results: list[dict], out: str) -> str:
    """Gather the results as a DataFrame and write it as Parquet (one file)."""
    from pyspark.sql import Row
    from pyspark.sql.types import (BooleanType, DoubleType, IntegerType, LongType, StringType,
                                   StructField, StructType)

    types = {"format_version": IntegerType(), "writers": IntegerType(),
             "ops_per_writer": IntegerType(), "complete": BooleanType(), "states": LongType(),
             "transitions": LongType(), "max_depth": IntegerType(), "seconds": DoubleType()}
    rows = [result_row(r) for r in results]
    cols = list(result_row_template().keys())
    schema = StructType([StructField(c, types.get(c, StringType()), True) for c in cols])
    df = spark.createDataFrame([Row(**{c: row[c] for c in cols}) for row in rows], schema)
    path = os.path.join(out, PARQUET)
    # Spark writes part files and _SUCCESS last; an interruption mid-write would leave a
    # folder without _SUCCESS. Write beside it, then swap the complete folder into place.
    import shutil
    import uuid

    tmp = os.path.join(out, f".{PARQUET}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        df.coalesce(1).write.mode("overwrite").parquet(tmp)
        old = None
        if os.path.exists(path):
            old = os.path.join(out, f".{PARQUET}.old-{uuid.uuid4().hex[:8]}")
            os.replace(path, old)
        os.replace(tmp, path)
        if old:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for name in os.listdir(out):           # litter of earlier interrupted writes
        if name.startswith(f".{PARQUET}."):
            shutil.rmtree(os.path.join(out, name), ignore_errors=True)
    return path


def result_row_template() -> dict:
    return result_row({"id": "", "cell": {"profile": "", "engine": "", "mode": "",
                                          "isolation": "", "catalog": "", "format_version": 0,
                                          "combo": "", "writers": 0, "bounds": {}},
                       "status": "", "findings": [], "engine_used": "", "complete": False,
                       "states": 0, "transitions": 0, "max_depth": 0, "seconds": 0.0})
