"""The sweep's reports: ``<out>/index.md`` and ``<out>/index.html`` (self-contained: inline CSS
and inline SVG, no external asset), one trace JSON (corpus format, ``traces.format``) and one
timeline page per finding under ``<out>/traces/``.

The matrix has a row per (profile, catalog, format version) and a column per combination of
commands; each cell shows its worst outcome — a violation, a known finding, an anomaly the
isolation level allows (with the reason), or no violation within bounds — and links to its
minimal trace's timeline (a clean cell links to its row in the details table).
"""

from __future__ import annotations

import html
import json
import math
import os
from collections import Counter, defaultdict

from icecheck.traces.format import write_atomic, write_trace

from .runner import CLEAN, ERROR, EXPECTED, KNOWN, SEVERITY, UNKNOWN, VIOLATION

LABEL = {VIOLATION: "violation", KNOWN: "known finding", EXPECTED: "expected anomaly",
         CLEAN: "no violation within bounds", UNKNOWN: "none found (not exhaustive)",
         ERROR: "error"}
SYMBOL = {VIOLATION: "✗", KNOWN: "!", EXPECTED: "~", CLEAN: "✓", UNKNOWN: "?", ERROR: "E"}
COLOR = {VIOLATION: "#cf222e", KNOWN: "#bc4c00", EXPECTED: "#0969da", CLEAN: "#1a7f37",
         UNKNOWN: "#6e7781", ERROR: "#8250df"}
BG = {VIOLATION: "#ffebe9", KNOWN: "#fff1e5", EXPECTED: "#ddf4ff", CLEAN: "#dafbe1",
      UNKNOWN: "#f6f8fa", ERROR: "#fbefff"}
ISOLATIONS = ("serializable", "snapshot", "none")

CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#1f2328}
h1{font-size:22px}h2{font-size:18px;margin-top:28px}
table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #d0d7de;padding:4px 7px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
td.cell{text-align:center;white-space:nowrap}
td.cell a{text-decoration:none;font-weight:600}
.legend span{display:inline-block;margin-right:14px;padding:2px 6px;border-radius:4px}
pre{background:#f6f8fa;padding:10px;overflow-x:auto;font-size:12px}
.muted{color:#6e7781}
.small{font-size:12px}
pre.wrap,#timeline-text{white-space:pre-wrap;overflow-wrap:anywhere}
code.wrap{overflow-wrap:anywhere}
"""


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def trace_file(cid: str, prop: str) -> str:
    return f"{cid}-{prop}"


def primary(r: dict) -> dict | None:
    """The finding a cell shows: the worst one, first property order (runner sorted them)."""
    return r["findings"][0] if r["findings"] else None


def row_key(c: dict) -> tuple:
    return (c["profile"], c["catalog"], int(c["format_version"]))


# -- traces ---------------------------------------------------------------------------------
def write_traces(results: list[dict], out: str) -> dict[tuple[str, str], str]:
    """Write every finding's trace (JSON, corpus format) and its timeline page; return
    {(cell id, property): page path relative to ``out``}."""
    from icecheck.traces.timeline import build_timeline, render_text

    tdir = os.path.join(out, "traces")
    os.makedirs(tdir, exist_ok=True)
    pages = {}
    for r in results:
        for f in r["findings"]:
            doc = f.get("trace")
            if not doc:
                continue
            name = trace_file(r["id"], f["property"])
            jpath = os.path.join(tdir, name + ".json")
            hpath = os.path.join(tdir, name + ".html")
            write_trace(jpath, doc)
            if not os.path.exists(hpath) or os.path.getmtime(hpath) < os.path.getmtime(jpath):
                tl = build_timeline(doc)
                write_atomic(hpath, trace_page(r, f, doc, render_text(doc, tl=tl), _svg(doc, tl),
                                               tl.inevitable, tl.why))
            pages[(r["id"], f["property"])] = f"traces/{name}.html"
    return pages


def _svg(doc: dict, tl=None) -> str | None:
    import shutil
    if shutil.which("dot") is None:
        return None
    from icecheck.traces.timeline import render_graph
    svg = render_graph(doc, tl).pipe(format="svg").decode("utf-8")
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg


def _templates():
    """The Jinja2 environment of the report pages (sweep/templates/, autoescaped: every value
    from a result is text; only the SVG the report draws itself is marked safe)."""
    global _ENV
    if _ENV is None:
        from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

        folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
        _ENV = Environment(loader=FileSystemLoader(folder), autoescape=select_autoescape(["html"]),
                           undefined=StrictUndefined, keep_trailing_newline=True)
        _ENV.globals.update(css=CSS, color=COLOR, bg=BG, label=LABEL, symbol=SYMBOL)
    return _ENV


_ENV = None


def trace_page(r: dict, f: dict, doc: dict, text: str, svg: str | None,
               inevitable: int | None = None, why: str = "") -> str:
    from urllib.parse import urlencode

    from icecheck.traces.format import trace_id

    name = trace_file(r["id"], f["property"])
    actions = list(doc.get("actions") or [])
    tid = trace_id(doc, name + ".json")
    # The explorer picks its port at start-up, so the page gives the command and the path of
    # the URL at the step where the anomaly became inevitable, the step before the last and the
    # last (the state that violates).
    marks = {max(len(actions) - 1, 0): "", len(actions): "the violating state"}
    if inevitable is not None:
        marks[inevitable] = ("from here the anomaly is inevitable" if inevitable != len(actions)
                             else "the violating state; only here is the anomaly inevitable")
    steps = [(k, "/?" + urlencode({"config": tid, "path": "~".join(actions), "at": str(k)}),
              marks[k]) for k in sorted(marks)]
    return _templates().get_template("trace.html").render(
        r=r, c=r["cell"], f=f, doc=doc, text=text, svg=svg, name=name, explorer_steps=steps,
        why=why)


# -- plots (inline SVG) --------------------------------------------------------------------
def _bars(values: list[tuple[str, float, str]], title: str, unit: str, log: bool,
          width: int = 900, height: int = 220) -> str:
    """A bar chart: one bar per (label, value, color), value axis linear or log10."""
    n = max(1, len(values))
    left, bottom, top = 60, 30, 28
    plot_w, plot_h = width - left - 10, height - bottom - top
    vmax = max([v for _, v, _ in values] + [1e-9])

    def scale(v):
        if log:
            return plot_h * (math.log10(max(v, 1)) / max(math.log10(max(vmax, 10)), 1e-9))
        return plot_h * v / vmax

    bw = plot_w / n
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" aria-label="{_e(title)}" class="plot">',
             f'<text x="{left}" y="16" font-size="13" font-weight="600">{_e(title)}</text>',
             f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#57606a"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#57606a"/>']
    ticks = ([10 ** k for k in range(0, int(math.ceil(math.log10(max(vmax, 10)))) + 1)]
             if log else [vmax * i / 4 for i in range(5)])
    for t in ticks:
        y = top + plot_h - scale(t)
        lab = f"{t:g}" if log else (f"{t:.2f}" if vmax < 10 else f"{t:.0f}")
        parts.append(f'<text x="{left - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{lab}</text>'
                     f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#eaeef2"/>')
    for i, (label, v, color) in enumerate(values):
        h = scale(v)
        x = left + i * bw
        parts.append(f'<rect x="{x + 0.5:.1f}" y="{top + plot_h - h:.1f}" width="{max(bw - 1, 0.5):.1f}" '
                     f'height="{h:.1f}" fill="{color}"><title>{_e(label)}: {v:g} {unit}</title></rect>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 8}" font-size="11" text-anchor="middle">'
                 f'cells (sorted by {unit}; hover a bar for the cell)</text></svg>')
    return "".join(parts)


def _grouped(groups: dict[str, Counter], statuses: list[str], title: str,
             width: int = 600, height: int = 240) -> str:
    left, bottom, top = 50, 40, 28
    plot_w, plot_h = width - left - 150, height - bottom - top
    vmax = max([c[s] for c in groups.values() for s in statuses] + [1])
    gw = plot_w / max(1, len(groups))
    bw = (gw - 10) / max(1, len(statuses))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" aria-label="{_e(title)}" class="plot">',
             f'<text x="{left}" y="16" font-size="13" font-weight="600">{_e(title)}</text>',
             f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#57606a"/>']
    for gi, (g, cnt) in enumerate(groups.items()):
        x0 = left + gi * gw + 5
        for si, s in enumerate(statuses):
            v = cnt[s]
            h = plot_h * v / vmax
            x = x0 + si * bw
            parts.append(f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{bw - 2:.1f}" '
                         f'height="{h:.1f}" fill="{COLOR[s]}"><title>{_e(g)}: {v} {_e(LABEL[s])}</title></rect>'
                         f'<text x="{x + (bw - 2) / 2:.1f}" y="{top + plot_h - h - 3:.1f}" font-size="10" '
                         f'text-anchor="middle">{v}</text>')
        parts.append(f'<text x="{x0 + (gw - 10) / 2:.1f}" y="{top + plot_h + 16}" font-size="11" '
                     f'text-anchor="middle">{_e(g)}</text>')
    for si, s in enumerate(statuses):
        y = top + 10 + si * 18
        parts.append(f'<rect x="{left + plot_w + 15}" y="{y - 9}" width="10" height="10" fill="{COLOR[s]}"/>'
                     f'<text x="{left + plot_w + 30}" y="{y}" font-size="11">{_e(LABEL[s])}</text>')
    parts.append("</svg>")
    return "".join(parts)


def plots(results: list[dict]) -> dict[str, str]:
    def label(r):
        c = r["cell"]
        return f"{c['profile']} {c['catalog']} v{c['format_version']} {c['combo']}"

    by_states = sorted(results, key=lambda r: r["states"])
    by_time = sorted(results, key=lambda r: r["seconds"])
    groups = {iso: Counter() for iso in ISOLATIONS}
    for r in results:
        groups.setdefault(r["cell"]["isolation"], Counter())[r["status"]] += 1
    # per-property anomaly counts per isolation level (every finding, not only the worst)
    return {
        "states": _bars([(label(r), r["states"], COLOR[r["status"]]) for r in by_states],
                        "States explored per cell (log scale)", "states", log=True),
        "time": _bars([(label(r), r["seconds"], COLOR[r["status"]]) for r in by_time],
                      "Time per cell (s, inside its Spark task)", "seconds", log=False),
        "isolation": _grouped(groups, [VIOLATION, KNOWN, EXPECTED, CLEAN],
                              "Cells per isolation level, by outcome"),
    }


def anomaly_counts(results: list[dict]) -> dict[str, Counter]:
    """{isolation: Counter((status, property))} over every finding."""
    out: dict[str, Counter] = defaultdict(Counter)
    for r in results:
        for f in r["findings"]:
            out[r["cell"]["isolation"]][(f["status"], f["property"])] += 1
    return out


# -- the matrix -----------------------------------------------------------------------------
def _matrix(results: list[dict], skipped: list[dict]):
    combos: list[str] = []
    rows: dict[tuple, dict[str, dict]] = {}
    for r in results:
        c = r["cell"]
        if c["combo"] not in combos:
            combos.append(c["combo"])
        rows.setdefault(row_key(c), {})[c["combo"]] = r
    for c in skipped:
        if c["combo"] not in combos:
            combos.append(c["combo"])
        rows.setdefault(row_key(c), {}).setdefault(c["combo"], {"skipped": c})
    return combos, rows


def _cell_link(r: dict, pages: dict) -> str | None:
    f = primary(r)
    if f is not None and (r["id"], f["property"]) in pages:
        return pages[(r["id"], f["property"])]
    return None


def write_reports(results: list[dict], skipped: list[dict], out: str, meta: dict) -> dict:
    """Write traces, timeline pages, index.md and index.html; return the summary."""
    pages = write_traces(results, out)
    combos, rows = _matrix(results, skipped)
    statuses = Counter(r["status"] for r in results)
    summary = {"cells": len(results), "not_applicable": len(skipped),
               "by_status": dict(statuses), "meta": meta,
               "total_states": sum(r["states"] for r in results),
               "cell_seconds": round(sum(r["seconds"] for r in results), 3),
               "traces": len(pages)}
    write_atomic(os.path.join(out, "index.md"), markdown(results, combos, rows, pages, summary))
    write_atomic(os.path.join(out, "index.html"), html_page(results, combos, rows, pages, summary))
    write_atomic(os.path.join(out, "summary.json"), json.dumps(summary, indent=2) + "\n")
    return summary


def _short(r: dict) -> str:
    f = primary(r)
    return f["property"] if f else ""


def markdown(results, combos, rows, pages, summary) -> str:
    m = summary["meta"]
    lines = ["# Anomaly matrix (icecheck sweep)", "",
             f"Master `{m.get('master')}`, {summary['cells']} cells "
             f"({summary['not_applicable']} not applicable), wall time {m.get('wall_seconds')} s, "
             f"{summary['total_states']} states explored in total. Space: `{m.get('space')}`.",
             "",
             "Legend: ✓ no violation within bounds · ~ expected anomaly (allowed by the isolation "
             "level or catalog; reason in the details) · ! known finding (a real anomaly, "
             "reported, not allowed) · ✗ violation (a must-hold property failed) · ? none found "
             "but not exhaustive · E error · n/a the profile has no such command · — not one of "
             "this row's combinations (a mix with combinations of its own).", "",
             "| profile | catalog | v | " + " | ".join(combos) + " |",
             "|---|---|---|" + "---|" * len(combos)]
    for (profile, catalog, fv), cells in sorted(rows.items()):
        tds = []
        for combo in combos:
            r = cells.get(combo)
            if r is None:
                tds.append("—")
            elif "skipped" in r:
                tds.append("n/a")
            else:
                text = f"{SYMBOL[r['status']]} {_short(r)}".strip()
                link = _cell_link(r, pages)
                tds.append(f"[{text}]({link})" if link else text)
        lines.append(f"| {profile} | {catalog} | {fv} | " + " | ".join(tds) + " |")
    lines += ["", "## Findings", "",
              "| cell | profile | catalog | v | commands | property | outcome | reason | trace |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(results, key=lambda r: (SEVERITY[r["status"]], row_key(r["cell"]))):
        c = r["cell"]
        for f in r["findings"]:
            page = pages.get((r["id"], f["property"]))
            reason = (f.get("reason") or "").replace("|", "/").replace("\n", " ")
            lines.append(f"| `{r['id']}` | {c['profile']} | {c['catalog']} | {c['format_version']} "
                         f"| {c['combo']} | {f['property']} | {LABEL[f['status']]} | {reason} | "
                         + (f"[timeline]({page})" if page else "") + " |")
    lines += ["", "## Anomaly counts per isolation level", "",
              "| isolation | outcome | property | cells |", "|---|---|---|---|"]
    for iso, cnt in sorted(anomaly_counts(results).items()):
        for (st, prop), n in sorted(cnt.items()):
            lines.append(f"| {iso} | {LABEL[st]} | {prop} | {n} |")
    lines += ["", "Results as Parquet: `results.parquet`; per-cell JSON: `cells/`; "
              "the HTML version of this report (with plots): `index.html`.", ""]
    return "\n".join(lines)


def html_page(results, combos, rows, pages, summary) -> str:
    matrix = []
    for (profile, catalog, fv), cells in sorted(rows.items()):
        tds = []
        for combo in combos:
            r = cells.get(combo)
            if r is None:
                tds.append(None)
            elif "skipped" in r:
                tds.append({"skipped": r["skipped"]["not_applicable"]})
            else:
                st = r["status"]
                tip = "; ".join(f"{f['property']}: {LABEL[f['status']]}" for f in r["findings"]) \
                    or LABEL[st]
                tds.append({"skipped": None, "status": st, "id": r["id"], "combo": combo,
                            "tip": tip, "short": _short(r),
                            "link": _cell_link(r, pages) or f"#cell-{r['id']}"})
        matrix.append({"profile": profile, "catalog": catalog, "format": fv, "cells": tds})
    details = []
    for r in sorted(results, key=lambda r: (row_key(r["cell"]), r["cell"]["combo"])):
        c = r["cell"]
        details.append({
            "id": r["id"], "status": r["status"], "profile": c["profile"],
            "catalog": c["catalog"], "format": c["format_version"], "combo": c["combo"],
            "findings": [{"property": f["property"], "status": f["status"],
                          "reason": f.get("reason"), "page": pages.get((r["id"], f["property"]))}
                         for f in r["findings"]],
            "error": r.get("error"), "states": r["states"], "seconds": r["seconds"],
            "engine": r["engine_used"], "complete": r["complete"]})
    counts = [{"isolation": iso, "status": st, "property": prop, "n": n}
              for iso, cnt in sorted(anomaly_counts(results).items())
              for (st, prop), n in sorted(cnt.items())]
    by_status = ", ".join(f"{n} {LABEL[s]}" for s, n in sorted(summary["by_status"].items(),
                                                                  key=lambda kv: SEVERITY[kv[0]]))
    m = summary["meta"]
    meta = {k: m.get(k) for k in ("master", "parallelism", "wall_seconds", "space")}
    return _templates().get_template("index.html").render(
        m=meta, summary=summary, by_status=by_status, combos=combos, matrix=matrix,
        details=details, counts=counts, plots=plots(results),
        legend=(CLEAN, EXPECTED, KNOWN, VIOLATION, UNKNOWN, ERROR))
