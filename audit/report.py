"""How an audit is shown: the terminal summary, the Markdown report, the timeline.

The Markdown report (``--reports DIR``: ``audit.md`` and ``audit.json``, written together by
``traces.format.write_together`` so that a killed run leaves the previous pair) holds the
table's settings, each finding with its snapshots, files and rows, and a timeline of the
suspicious snapshots: every snapshot a finding names, in commit order, with its parent,
operation, engine and the findings that name it.
"""

from __future__ import annotations

import datetime as _dt
import json

from rich.markup import escape

from .checks import _op, _summary, short
from .findings import VIOLATION
from .run import AuditReport

LABEL = {VIOLATION: "[bold red]VIOLATION[/]", "finding": "[yellow]finding[/]"}


def print_terminal(report: AuditReport, out) -> None:
    refs = ", ".join(f"{n}@{sid}" for n, sid in report.refs.items()) or "no refs"
    s = report.stats
    out.print(f"[bold]audit {escape(report.table)}[/]: format v{report.format_version}, "
              f"{report.snapshots} snapshot(s), {escape(refs)}", markup=True)
    out.print(escape(f"  read {s.get('manifest_lists', 0)} manifest list(s), "
                     f"{s.get('manifests_read', 0)} manifest(s), "
                     f"{s.get('existence_checks', 0)} existence check(s), "
                     f"{s.get('data_files_read', 0)} data/delete file(s) read, "
                     f"in {report.seconds:.1f} s"), markup=True)
    for i, f in enumerate(report.findings, 1):
        out.print(f"{i}. {LABEL[f.severity]} {escape(f.check)} "
                  f"[dim]({escape(f.property)}, {escape(f.certainty)})[/]", markup=True)
        out.print(escape(f"   {f.message}"), markup=True)
        if f.rows:
            out.print(escape(f"   rows ({f.rows_note or 'read'}): {_rows_text(f.rows)}"),
                      markup=True)
    v = len(report.violations)
    n = len(report.findings) - v
    if not report.findings:
        out.print("[green]clean[/]: no findings", markup=True)
    else:
        out.print(f"{'[bold red]' if v else '[yellow]'}{v} violation(s), {n} finding(s)[/]",
                  markup=True)


def _rows_text(rows: list[dict]) -> str:
    return "; ".join(", ".join(f"{k}={v}" for k, v in r.items()) for r in rows)


def _when(ms: int) -> str:
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime(
        "%Y-%m-%d %H:%M:%S UTC")


def timeline(report: AuditReport, metadata) -> list[dict]:
    """The snapshots the findings name, in commit order, each with the findings naming it."""
    named: dict[int, list[int]] = {}
    for i, f in enumerate(report.findings, 1):
        for sid in f.snapshots:
            named.setdefault(sid, []).append(i)
    out = []
    for s in sorted(metadata.snapshots, key=lambda s: (s.sequence_number or 0, s.timestamp_ms)):
        if s.snapshot_id not in named:
            continue
        summ = _summary(s)
        out.append({"snapshot_id": s.snapshot_id, "parent": s.parent_snapshot_id,
                    "sequence_number": s.sequence_number, "time": _when(s.timestamp_ms),
                    "operation": _op(s), "engine": summ.get("engine-name", ""),
                    "app": summ.get("app-id") or summ.get("spark.app.id")
                    or summ.get("flink.job-id", ""),
                    "findings": named[s.snapshot_id]})
    return out


def markdown(report: AuditReport, metadata) -> str:
    lines = [f"# Audit of {report.table}", ""]
    lines += [f"- catalog: {report.catalog}", f"- metadata: `{report.metadata_location}`",
              f"- format version {report.format_version}, {report.snapshots} snapshot(s); refs: "
              + (", ".join(f"`{n}` at {sid}" for n, sid in report.refs.items()) or "none")]
    if report.settings:
        lines.append("- settings: " + ", ".join(f"`{k}={v}`" for k, v in report.settings.items()))
    v = len(report.violations)
    lines += ["", f"**{v} violation(s), {len(report.findings) - v} finding(s).**"
              if report.findings else "**Clean: no findings.**", ""]
    for i, f in enumerate(report.findings, 1):
        lines += [f"## {i}. {f.check} ({f.severity}, {f.certainty})", "",
                  f"Property: `{f.property}`.", "", f.message, ""]
        if f.snapshots:
            lines.append("Snapshots: " + ", ".join(str(s) for s in f.snapshots))
        if f.files:
            lines.append("")
            lines += [f"- `{p}`" for p in f.files]
        if f.rows:
            cols = list(dict.fromkeys(k for r in f.rows for k in r))
            lines += ["", f"Rows ({f.rows_note or 'read'}):", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
            lines += ["| " + " | ".join(str(r.get(c, "")) for c in cols) + " |" for r in f.rows]
        lines.append("")
    tl = timeline(report, metadata)
    if tl:
        lines += ["## Timeline of the suspicious snapshots", "",
                  "| seq | snapshot | parent | time | operation | engine | app | findings |",
                  "|---|---|---|---|---|---|---|---|"]
        for t in tl:
            lines.append(f"| {t['sequence_number']} | {t['snapshot_id']} | {t['parent'] or ''} | "
                         f"{t['time']} | {t['operation']} | {t['engine']} | {t['app']} | "
                         + ", ".join(f"#{n}" for n in t["findings"]) + " |")
        lines.append("")
    s = report.stats
    lines += ["## What was read", "",
              f"{s.get('snapshots_walked', 0)} snapshot(s) walked, "
              f"{s.get('manifest_lists', 0)} manifest list(s) and {s.get('manifests_read', 0)} "
              f"manifest(s) read ({s.get('manifest_cache_hits', 0)} cache hit(s)), "
              f"{s.get('files_tracked', 0)} distinct file(s) tracked, "
              f"{s.get('existence_checks', 0)} existence check(s), "
              f"{s.get('data_files_read', 0)} data or delete file(s) read; at most "
              f"{s.get('max_live_sets', 0)} live set(s) held at once.", ""]
    return "\n".join(lines) + "\n"


def as_json(report: AuditReport, metadata) -> dict:
    doc = report.as_json()
    doc["timeline"] = timeline(report, metadata)
    return doc


def write_reports(report: AuditReport, metadata, folder: str) -> list[str]:
    import os

    from icecheck.traces.format import write_together

    files = {os.path.join(folder, "audit.md"): markdown(report, metadata),
             os.path.join(folder, "audit.json"):
                 json.dumps(as_json(report, metadata), indent=2, default=str) + "\n"}
    write_together(files)
    return list(files)


__all__ = ["print_terminal", "markdown", "as_json", "write_reports", "timeline", "short"]
