"""How an audit is shown: the terminal summary, the Markdown report, the timeline.

The Markdown report (``--reports DIR``: ``audit.md``, ``audit.json``, ``audit.html`` and
``audit-timeline.svg``, written together by ``traces.format.write_together`` so that a killed
run leaves the previous set) holds the table's settings, each finding with its snapshots, files
and rows, and a timeline of the suspicious snapshots: every snapshot a finding names, in commit
order, with its parent, operation, engine and the findings that name it.

The SVG draws that timeline with the grid the counterexample timelines use
(``traces.timeline.render_graph``: a lane per writer, here each snapshot's engine, a row per
snapshot, its sequence number and findings in the note beside it, violations in red), so an
audit and a counterexample of ``icecheck explore`` look alike; it needs Graphviz's ``dot``,
and without it the reports say so and the rest is written. ``audit.html`` is the Markdown
rendered by markdown-it-py (rich's own dependency, raw HTML off so a message cannot inject
markup) with the SVG inline: one file to attach to a ticket.
"""

from __future__ import annotations

import datetime as _dt
import json
import os

from rich.markup import escape

from .checks import _op, _summary, short
from .findings import VIOLATION
from .run import AuditReport

#: the report files beside audit.md
SVG_NAME, HTML_NAME = "audit-timeline.svg", "audit.html"
#: at most this many snapshots in the SVG (the Markdown's table has them all): dot lays out a
#: few dozen rows in a moment; thousands would take minutes and draw nothing readable
SVG_MAX_ROWS = 60
#: how each engine ``audit.pipeline.engine_of`` tells apart is named in the SVG's lanes
ENGINE_LANES = {"spark": "Spark", "flink": "Flink", "trino": "Trino",
                "java": "Java application", "kafka-connect": "Kafka Connect",
                "pyiceberg": "PyIceberg (no Java summary)"}

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
            seen = named.setdefault(sid, [])
            if i not in seen:                 # a finding that names a snapshot twice
                seen.append(i)
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


def markdown(report: AuditReport, metadata, svg_note: str | None = None) -> str:
    """The Markdown report. ``svg_note``: None links the SVG timeline beside it
    (``SVG_NAME``); a text says why there is none."""
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
        lines += ["## Timeline of the suspicious snapshots", ""]
        lines += [f"![The suspicious snapshots, a lane per engine]({SVG_NAME})", "",
                  f"([{SVG_NAME}]({SVG_NAME}); {HTML_NAME} has it inline"
                  + (f"; {SVG_MAX_ROWS} of {len(tl)} snapshots drawn, those violations "
                     "name first" if len(tl) > SVG_MAX_ROWS else "") + ")", ""] \
            if svg_note is None else [f"No SVG timeline: {svg_note}", ""]
        lines += ["| seq | snapshot | parent | time | operation | engine | app | findings |",
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


def svg_timeline(report: AuditReport, metadata, tl: list[dict] | None = None) -> str:
    """The suspicious snapshots as SVG (raises ``GraphvizMissing`` without ``dot``): at most
    ``SVG_MAX_ROWS`` of them, those a violation names first, drawn in commit order."""
    from icecheck.traces.explain import StepEvent
    from icecheck.traces.timeline import Timeline, svg_text

    from .pipeline import engine_of

    tl = timeline(report, metadata) if tl is None else tl
    bad = {i for i, f in enumerate(report.findings, 1) if f.severity == VIOLATION}
    shown = tl
    if len(tl) > SVG_MAX_ROWS:
        first = sorted(range(len(tl)), key=lambda k: (not bad & set(tl[k]["findings"]), k))
        shown = [tl[k] for k in sorted(first[:SVG_MAX_ROWS])]
    snaps = {s.snapshot_id: s for s in metadata.snapshots}
    lanes: list[str] = []
    rows, notes, alarms = [], {}, set()
    for n, t in enumerate(shown, 1):
        lane = ENGINE_LANES.get(engine_of(snaps[t["snapshot_id"]]), "other")
        if lane not in lanes:
            lanes.append(lane)
        app = f" (app {t['app']})" if t["app"] else ""
        table = (f"seq {t['sequence_number']}: snapshot {t['snapshot_id']}\n"
                 f"parent {t['parent'] if t['parent'] is not None else 'none'}\n{t['time']}")
        rows.append((n, StepEvent(lane, f"{t['operation']} {t['snapshot_id']}{app}", "", table)))
        notes[n] = ([f"#{i} {report.findings[i - 1].check} ({report.findings[i - 1].severity})"
                     for i in t["findings"]], [])
        if bad & set(t["findings"]):
            alarms.add(n)
    v = len(report.violations)
    verdict = [f"{v} violation(s), {len(report.findings) - v} finding(s)"
               if report.findings else "clean: no findings"]
    verdict += [f"#{i} {f.check} ({f.severity}, {f.certainty})"
                for i, f in enumerate(report.findings, 1)]
    title = f"audit of {report.table}: the snapshots the findings name, in commit order"
    if len(shown) < len(tl):
        title += f" ({len(shown)} of {len(tl)}, violations first; audit.md lists all)"
    end = "refs: " + (", ".join(f"{n} at {sid}" for n, sid in report.refs.items()) or "none")
    drawing = Timeline(title, lanes, "", rows, end, verdict, commits=notes,
                       alarms=frozenset(alarms))
    return svg_text({"property": "violation" if v else ""}, tl=drawing)


def html(report: AuditReport, md: str, svg: str | None) -> str:
    """``md`` as one self-contained HTML page: the SVG (if any) inline where the Markdown
    links it. Raw HTML in the Markdown is escaped, not passed through (messages quote file
    paths and rows the table holds)."""
    from jinja2 import Environment
    from markdown_it import MarkdownIt

    renderer = MarkdownIt("commonmark", {"html": False}).enable("table")
    body = renderer.render(md)
    if svg is not None:
        image = renderer.render(f"![The suspicious snapshots, a lane per engine]({SVG_NAME})")
        drawing = svg[svg.find("<svg"):] if "<svg" in svg else svg
        body = body.replace(image.strip(), f'<div class="timeline">{drawing}</div>', 1)
    page = Environment(autoescape=True).from_string(_PAGE)
    return page.render(title=f"Audit of {report.table}", body=body)


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem; }
table { border-collapse: collapse; margin: 1rem 0; } td, th { border: 1px solid #ccc;
padding: .25rem .5rem; text-align: left; } code { background: #f4f4f4; padding: 0 .2rem; }
.timeline { overflow-x: auto; } .timeline svg { max-width: 100%; height: auto; }
</style></head>
<body>
{{ body | safe }}
</body></html>
"""


def write_reports(report: AuditReport, metadata, folder: str) -> list[str]:
    """audit.md, audit.json, audit.html and, when a finding names a snapshot and Graphviz is
    installed, audit-timeline.svg, written together; an SVG an earlier run left is removed
    when this run draws none (audit.md no longer links it)."""
    from icecheck.traces.format import write_together
    from icecheck.traces.timeline import GraphvizMissing

    tl = timeline(report, metadata)
    svg, note = None, None
    if tl:
        try:
            svg = svg_timeline(report, metadata, tl)
        except GraphvizMissing as e:
            note = str(e)
    md = markdown(report, metadata, note)
    svg_path = os.path.join(folder, SVG_NAME)
    files = {os.path.join(folder, "audit.md"): md,
             os.path.join(folder, "audit.json"):
                 json.dumps(as_json(report, metadata), indent=2, default=str) + "\n",
             os.path.join(folder, HTML_NAME): html(report, md, svg)}
    if svg is not None:
        files[svg_path] = svg
    write_together(files)
    if svg is None and os.path.exists(svg_path):
        os.unlink(svg_path)
    return list(files)


__all__ = ["print_terminal", "markdown", "as_json", "write_reports", "timeline", "short",
           "svg_timeline", "html"]
