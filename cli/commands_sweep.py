"""``icecheck sweep``: the anomaly matrix, explored as Spark tasks (docs/sweep.md)."""

from __future__ import annotations

import contextlib
import json
import os
import sys

import click
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                           TimeElapsedColumn)

from icecheck.cli.base import EXIT_FAILED, EXIT_OK, err, fail_input, main, out
from icecheck.scenarios.errors import InputError


def _filters(profile, catalog, fmt, commands, engine_mode, isolation, engine):
    from icecheck.sweep.space import Filters, split_list
    try:
        formats = tuple(int(x) for x in split_list(fmt))
    except ValueError:
        raise InputError(f"--format takes format versions (2, 3), got {fmt!r}") from None
    return Filters(profiles=split_list(profile), catalogs=split_list(catalog), formats=formats,
                   commands=split_list(commands), modes=split_list(engine_mode),
                   isolations=split_list(isolation), engines=split_list(engine))


def _progress(label: str):
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("[dim]{task.fields[left]} left"), TimeElapsedColumn(),
                        console=err, transient=False)
    task = progress.add_task(label, total=None, left="?")

    def update(done: int, total: int) -> None:
        progress.update(task, total=total, completed=done, left=total - done)

    return progress, update


@main.command("sweep")
@click.option("--master", default=None,
              help="Spark master: local[N], local[*] or a cluster URL (spark://host:7077). "
                   "Default: spark-submit's --master when run by spark-submit, else local[*].")
@click.option("--driver-memory", default=None, metavar="SIZE",
              help="spark.driver.memory (default: spark-submit's, else 1g).")
@click.option("--executor-memory", default=None, metavar="SIZE",
              help="spark.executor.memory (default: spark-submit's, else 1g).")
@click.option("--space", "space_path", default=None,
              help="A space file (layout of sweep/space.yaml); default: the built-in space.")
@click.option("--profile", multiple=True, help="Profile name(s) or globs (repeat or comma-separate).")
@click.option("--catalog", multiple=True, help="cas, put_if_absent, last_writer_wins.")
@click.option("--format-version", "--format", "fmt", multiple=True,
              help="Format version(s): 2, 3.")
@click.option("--commands", multiple=True,
              help="Combinations, e.g. DELETE+UPDATE (exact, any order) or DELETE (any with it).")
@click.option("--engine-mode", multiple=True, help="copy-on-write|merge-on-read (cow|mor).")
@click.option("--isolation", multiple=True, help="serializable, snapshot, none.")
@click.option("--writer-engine", "--engine", "engine", multiple=True,
              help="The writers' engine (the profile's): spark-3.5, pyiceberg-0.12, none. "
                   "(--engine in explore is the search engine; this is not.)")
@click.option("--reports", "--out", "out_dir", default=os.path.join("reports", "sweep"),
              show_default=True,
              help="Output folder (cells/, traces/, results.parquet, index.{md,html}); "
                   "--reports as in check and audit (--out is the same option).")
@click.option("--resume/--fresh", default=True, show_default=True,
              help="Skip cells finished by an earlier run (--fresh forgets them).")
@click.option("--ship-code/--no-ship-code", default=None,
              help="Ship icecheck's code to the workers (a wheel built from this checkout); "
                   "default: on for a cluster.")
@click.option("--executor", type=click.Choice(["spark", "processes", "serial"]), default="spark",
              show_default=True,
              help="Where cells run: Spark tasks (--master), a local pool of worker processes "
                   "(--workers), or this process. Same cells, same results (sweep/local.py).")
@click.option("--workers", type=click.IntRange(1, 256), default=None,
              help="Worker processes for --executor processes (default: one per core).")
@click.option("--list", "list_only", is_flag=True, help="List the cells and exit (no Spark).")
@click.option("--scaling", is_flag=True,
              help="Run the same sweep (default space: sweep/scaling.yaml) on local[1] and "
                   "local[2], fresh, in temporary folders; write the speedup to "
                   "reports/sweep-scaling.{json,md}.")
@click.option("--scaling-out", default="reports", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def sweep_cmd(master, driver_memory, executor_memory, space_path, profile, catalog, fmt, commands, engine_mode, isolation, engine,
              out_dir, resume, ship_code, executor, workers, list_only, scaling, scaling_out,
              as_json) -> None:
    """Explore every cell of the configuration space (profile x catalog x format x commands x
    bounds) as Spark tasks and write the anomaly matrix (Parquet, Markdown, HTML, traces)."""
    from icecheck.sweep.space import cells, load_space

    import re
    for opt, size in (("--driver-memory", driver_memory), ("--executor-memory", executor_memory)):
        if size is not None and not re.fullmatch(r"[1-9][0-9]{0,6}[kmgt]?b?", size, re.I):
            fail_input(InputError(f"bad size {size!r}: a JVM memory size such as 512m or 2g",
                                  opt))
    try:
        filters = _filters(profile, catalog, fmt, commands, engine_mode, isolation, engine)
        space = load_space(space_path)
        todo, skipped = cells(space, filters)
    except InputError as e:
        fail_input(e)
    if not todo:
        used = [opt for opt, value in (("--profile", profile), ("--catalog", catalog),
                                       ("--format", fmt), ("--commands", commands),
                                       ("--engine-mode", engine_mode),
                                       ("--isolation", isolation), ("--engine", engine))
                if value]
        fail_input(InputError(f"no cell of {space.path} passes the filters",
                              "/".join(used) or "--space"))
    if list_only:
        for c in todo:
            out.print(f"{c['id']}  {c['profile']:<28} {c['catalog']:<17} v{c['format_version']}  "
                      f"{c['combo']}", markup=False)
        for c in skipped:
            out.print(f"{'n/a':<16}  {c['profile']:<28} {c['catalog']:<17} v{c['format_version']}  "
                      f"{c['combo']}  ({c['not_applicable']})", markup=False)
        out.print(f"{len(todo)} cells, {len(skipped)} not applicable", markup=False)
        sys.exit(EXIT_OK)
    if executor != "spark":
        for opt, value in (("--master", master), ("--driver-memory", driver_memory),
                           ("--executor-memory", executor_memory), ("--ship-code", ship_code),
                           ("--scaling", scaling or None)):
            if value is not None:
                fail_input(InputError(f"{opt} is a Spark option; not with --executor {executor}",
                                      opt))
    elif workers is not None:
        fail_input(InputError("--workers is for --executor processes (Spark: --master local[N])",
                              "--workers"))
    if executor == "serial" and workers not in (None, 1):
        fail_input(InputError("--executor serial runs one cell at a time", "--workers"))
    if executor == "spark":
        try:
            import pyspark  # noqa: F401
        except ImportError:
            from icecheck.install_hint import install_hint
            fail_input(InputError(f"icecheck sweep needs pyspark: {install_hint('conformance')} "
                                  "(or --executor processes)"))
    from icecheck.sweep.driver import check_out_dir
    try:      # before any progress line: a file named by --out is one line, exit 2
        if scaling:
            check_out_dir(scaling_out, "--scaling-out", subfolders=False)
        else:
            check_out_dir(out_dir, subfolders=resume)
    except InputError as e:
        fail_input(e)

    if scaling:
        from icecheck.sweep.driver import scaling as run_scaling
        from icecheck.sweep.space import SCALING_PATH
        space_path = space_path or SCALING_PATH
        progress, update = _progress("scaling")
        with progress:
            doc = run_scaling(scaling_out, space_path=space_path, filters=filters,
                              on_progress=lambda m, d, t: update(d, t))
        for r in doc["runs"]:
            out.print(f"{r['master']}: {r['cells']} cells, sweep {r['sweep_seconds']} s "
                      f"(speedup {r['speedup_sweep']}x), wall {r['wall_seconds']} s", markup=False)
        out.print(f"wrote {os.path.join(scaling_out, 'sweep-scaling.json')} and .md", markup=False)
        sys.exit(EXIT_OK)

    from icecheck.sweep.distributed import ShipError, under_spark_submit
    from icecheck.sweep.driver import sweep

    where = (f"sweep on {master or 'the default master'}" if executor == "spark" else
             f"sweep ({executor}{f', {workers} workers' if workers else ''})")
    # spark-submit runs this driver with its stderr merged into stdout (PythonRunner), so with
    # --json the progress would corrupt the JSON: under spark-submit it stays silent
    quiet = as_json and under_spark_submit()
    progress, update = _progress(where) if not quiet else (contextlib.nullcontext(),
                                                           lambda done, total: None)

    def started(n, na):
        if not quiet:
            err.print(f"sweep: {n} cells ({na} not applicable), out {escape(out_dir)}")

    try:
        with progress:
            summary = sweep(master, out_dir, space_path=space_path, filters=filters,
                            resume=resume, on_progress=update, on_start=started,
                            ship_code=ship_code, driver_memory=driver_memory,
                            executor_memory=executor_memory, executor=executor,
                            workers=workers)
    except ShipError as e:
        fail_input(InputError(str(e), "--ship-code"))
    except InputError as e:       # --out, checked before the first cell
        fail_input(e)
    if summary.get("interrupted"):
        err.print(f"[yellow]interrupted[/]: {summary['done']}/{summary['total']} cells done; "
                  f"run the same command again to resume")
        sys.exit(130)
    if as_json:
        print(json.dumps(summary, indent=2))
    else:
        m = summary["meta"]
        spark_start = (f" (Spark start {m['spark_start_seconds']} s)" if executor == "spark"
                       else "")
        out.print(f"{summary['cells']} cells ({m['cells_run']} run, {m['cells_resumed']} resumed, "
                  f"{summary['not_applicable']} not applicable) in {m['wall_seconds']} s"
                  f"{spark_start} on {m['master']}", markup=False)
        out.print("  " + ", ".join(f"{n} {s}" for s, n in sorted(summary["by_status"].items())),
                  markup=False)
        parquet = "results.parquet, " if m.get("parquet") else ""
        out.print(f"  report: {os.path.join(out_dir, 'index.html')} (and index.md, "
                  f"{parquet}traces/)", markup=False)
    bad = summary["by_status"].get("violation", 0) + summary["by_status"].get("error", 0)
    sys.exit(EXIT_FAILED if bad else EXIT_OK)
