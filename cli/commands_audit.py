"""``icecheck audit TABLE``: audit a real table's history (docs/audit.md).

Exit codes, for a scheduled job: 0 no violation (findings, if any, are printed), 1 a violation
(or, with ``--strict``, any finding), 2 the table cannot be read or an option is wrong (one
line naming it).
"""

from __future__ import annotations

import json
import sys

import click
from rich.markup import escape

from icecheck.cli.base import EXIT_FAILED, EXIT_OK, err, fail_input, main, out
from icecheck.scenarios.errors import InputError


def _properties(values: tuple[str, ...]) -> dict[str, str]:
    props = {}
    for v in values:
        key, sep, val = v.partition("=")
        if not sep or not key.strip():
            raise InputError(f"{v!r} is not KEY=VALUE", "--property")
        props[key.strip()] = val
    return props


@main.command()
@click.argument("table")
@click.option("--catalog", "catalog_uri", metavar="URI",
              help="The catalog's URI (sqlite:////path/cat.db, postgresql://..., http(s):// "
                   "for REST, thrift:// for Hive); default: PyIceberg's configuration "
                   "(~/.pyiceberg.yaml, PYICEBERG_CATALOG__* variables).")
@click.option("--catalog-name", metavar="NAME",
              help="The catalog's name in PyIceberg's configuration, or in a SQL catalog's "
                   "database (default: PyIceberg's default catalog; with --catalog, the one "
                   "catalog of the database holding TABLE).")
@click.option("--warehouse", metavar="LOCATION", help="The catalog's warehouse (with --catalog).")
@click.option("--property", "-P", "props", multiple=True, metavar="KEY=VALUE",
              help="Another catalog property (credentials, FileIO settings); repeatable.")
@click.option("--check-files", type=click.Choice(["heads", "all", "none"]), default="heads",
              show_default=True,
              help="Which data and delete files to check exist: those live in a branch's or "
                   "tag's head snapshot, in any snapshot (one check per distinct file), or "
                   "none. Manifest lists and manifests are always read.")
@click.option("--no-read-data", is_flag=True,
              help="Read no data or delete file: findings rest on metadata alone.")
@click.option("--max-data-files", type=click.IntRange(0, 1_000_000), default=100,
              show_default=True, help="At most this many data or delete files read for rows.")
@click.option("--strict", is_flag=True, help="Exit 1 on any finding, not only on violations.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--reports", "reports_dir", metavar="DIR",
              help="Write audit.md, audit.json, audit.html and (with Graphviz's dot) "
                   "audit-timeline.svg, the suspicious snapshots' timeline, into DIR.")
@click.option("--pipeline", "pipeline_out", metavar="OUT.yaml",
              help="Write a draft pipeline inferred from the history (jobs by engine and "
                   "command, streaming sinks by their identity, an expire_snapshots job when "
                   "the history shows expiry, profiles from the table's properties) for "
                   "icecheck check.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def audit(table, catalog_uri, catalog_name, warehouse, props, check_files, no_read_data,
          max_data_files, strict, as_json, reports_dir, pipeline_out, quiet) -> None:
    """Audit TABLE (namespace.table) of a real catalog: read only, never writes to it.

    Walks every snapshot's manifests in bounded memory and reports data files registered
    twice, position deletes and deletion vectors whose data file is gone, equality deletes a
    rewrite dropped while older rows are live, missing manifests and files, commits from a
    stale parent or replaced without compare-and-swap, sequence-number anomalies, snapshots
    no ref reaches, and streaming sinks (Spark, Flink, Kafka Connect) whose restart would not
    find their last commit once an expiry removed it; each finding names snapshots, files and
    rows, and how sure it is
    (docs/audit.md). Exit 0 without violations, 1 with one (--strict: with any finding), 2 when
    the table cannot be read."""
    from icecheck.audit.report import print_terminal, write_reports
    from icecheck.audit.report import as_json as report_json
    from icecheck.audit.run import audit as run_audit
    from icecheck.audit.source import open_table

    try:
        if warehouse and not catalog_uri:
            raise InputError("needs --catalog URI (a configured catalog has its own "
                             "warehouse)", "--warehouse")
        src = open_table(table, catalog_name, catalog_uri, warehouse, _properties(props))
        report = _run(run_audit, src, table, check_files, not no_read_data, max_data_files,
                      quiet or not err.is_terminal)
    except InputError as e:
        fail_input(e)
    meta = src.table.metadata
    if as_json:
        print(json.dumps(report_json(report, meta), indent=2, default=str))
    else:
        print_terminal(report, out)
    if reports_dir:
        try:
            paths = write_reports(report, meta, reports_dir)
        except OSError as e:
            fail_input(InputError(f"cannot write the reports: {e.strerror or e}", "--reports"))
        err.print(escape("reports: " + ", ".join(paths)), markup=True)
    if pipeline_out:
        try:
            _write_pipeline(src, report, pipeline_out)
        except InputError as e:
            fail_input(e)
        err.print(escape(f"draft pipeline: {pipeline_out} (review it, then: icecheck check "
                         f"{pipeline_out})"), markup=True)
    sys.exit(EXIT_FAILED if report.failed(strict) else EXIT_OK)


def _run(run_audit, src, table, check_files, read_data, max_data_files, quiet):
    """The audit, with a progress bar on stderr (snapshots walked) unless quiet."""
    def go(progress=None):
        try:
            return run_audit(src.table, table, src.where, check_files=check_files,
                             read_data=read_data, max_data_files=max_data_files,
                             progress=progress)
        except (KeyboardInterrupt, InputError):
            raise
        except Exception as e:  # noqa: BLE001 - metadata the reader cannot parse: exit 2
            text = " ".join(str(e).split())[:300] or type(e).__name__
            raise InputError(f"cannot read the table's history: {type(e).__name__}: {text}",
                             table) from None

    if quiet:
        return go()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(TextColumn("auditing snapshots"), BarColumn(), MofNCompleteColumn(),
                  console=err, transient=True) as bar:
        task = bar.add_task("walk", total=len(src.table.metadata.snapshots))
        return go(lambda done, total: bar.update(task, completed=done))


def _write_pipeline(src, report, path: str) -> None:
    """Infer the draft, check that the pipeline loader reads it, and write it in place."""
    import os
    import tempfile

    from icecheck.audit.pipeline import infer
    from icecheck.pipelines.load import load_pipeline
    from icecheck.traces.format import write_together

    if os.path.isdir(path):
        raise InputError(f"{path!r} is a folder; name the file to write", "--pipeline")
    text = infer(src.table, report, src.catalog, report.external)
    with tempfile.TemporaryDirectory() as d:
        probe = os.path.join(d, "pipeline.yaml")
        with open(probe, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            load_pipeline(probe)
        except InputError as e:
            raise InputError(f"the inferred pipeline does not load ({e.detail}); please "
                             "report it", "--pipeline") from None
    try:
        write_together({path: text})
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror or e}", "--pipeline") from None
