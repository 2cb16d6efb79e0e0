"""The sweep's reports: ``<out>/index.md`` and ``<out>/index.html`` (inline CSS, no external
asset: everything it shows is in ``<out>``), their charts (``<out>/charts/*.svg``, drawn by
``icecheck.charts``), one trace JSON (corpus format, ``traces.format``) and one timeline page
per finding under ``<out>/traces/``.

The matrix has a row per (profile, catalog, format version) and a column per combination of
commands; each cell shows its worst outcome — a violation, a known finding, an anomaly the
isolation level allows (with the reason), or no violation within bounds — and links to its
minimal trace's timeline (a clean cell links to its row in the details table).
"""

from __future__ import annotations

import html
import json
import os
from collections import Counter, defaultdict

from icecheck.traces.format import write_atomic, write_together, write_trace

from .runner import CLEAN, ERROR, EXPECTED, KNOWN, SEVERITY, UNKNOWN, VIOLATION

LABEL = {VIOLATION: "violation", KNOWN: "known finding", EXPECTED: "allowed",
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
.charts{display:flex;flex-wrap:wrap;gap:12px}
.charts figure{margin:0;flex:1 1 560px;max-width:760px}
.charts img{width:100%;height:auto;border:1px solid #d0d7de;border-radius:6px}
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


# -- charts (icecheck/charts.py: matplotlib, SVG files under <out>/charts/) -----------------
#: The outcomes the charts stack, worst first; an outcome no cell has is left out of a chart.
CHART_ORDER = (VIOLATION, KNOWN, EXPECTED, CLEAN, UNKNOWN, ERROR)


def _outcome_series(groups: dict[str, Counter]) -> list[tuple[str, list[float], str]]:
    """One stacked series per outcome that occurs: (legend label with its total, counts per
    group, the outcome's colour as on the page)."""
    out = []
    for s in CHART_ORDER:
        values = [float(c[s]) for c in groups.values()]
        if any(values):
            out.append((f"{LABEL[s]} ({sum(values):g})", values, COLOR[s]))
    return out


def _by(results: list[dict], key, order=None) -> dict[str, Counter]:
    """{group: Counter(outcome)} of the cells, groups in ``order`` first, empty ones left out."""
    groups: dict[str, Counter] = {k: Counter() for k in (order or ())}
    for r in results:
        groups.setdefault(key(r), Counter())[r["status"]] += 1
    return {k: c for k, c in groups.items() if c}


def charts(results: list[dict], combos: list[str] | None = None) -> dict:
    """The report's charts: {name: icecheck.charts.Chart}. Cells per outcome by profile, by
    command combination and by isolation level (each cell counted once, by its worst outcome);
    findings per property (every finding of every cell, by its outcome); how many states and
    how much time the cells took (the cell list sorts them, to find one). Profiles are in the
    matrix's row order, combinations in its column order (``combos``) when given."""
    from icecheck import charts as C

    n = len(results)
    profiles = _by(results, lambda r: r["cell"]["profile"].replace("+", " +\n"),
                   sorted({r["cell"]["profile"].replace("+", " +\n") for r in results}))
    combos = _by(results, lambda r: r["cell"]["combo"], combos)
    isolation = _by(results, lambda r: r["cell"]["isolation"], ISOLATIONS)
    props: dict[str, Counter] = {}
    for r in results:
        for f in r["findings"]:
            props.setdefault(f["property"], Counter())[f["status"]] += 1
    props = dict(sorted(props.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))) \
        or {"(no finding)": Counter()}

    def per_cell(field):
        return [(LABEL[s], [float(r[field]) for r in results if r["status"] == s], COLOR[s])
                for s in CHART_ORDER if any(r["status"] == s for r in results)]

    def outcomes(groups: dict[str, Counter], by: str, ylabel: str):
        return C.stacked_bars(list(groups), _outcome_series(groups),
                              title=f"Cells per outcome, by {by}", xlabel="cells", ylabel=ylabel,
                              alt=f"Bar chart: the {n} cells, by {by}, stacked by outcome")

    return {
        "outcomes-by-profile": outcomes(profiles, "profile", "profile (or mix)"),
        "outcomes-by-commands": outcomes(combos, "combination of commands",
                                         "concurrent commands"),
        "findings-by-property": C.stacked_bars(
            list(props), _outcome_series(props),
            title="Findings per property", xlabel="findings (a cell can have several)",
            ylabel="property",
            alt="Bar chart: how many cells violate each property, stacked by outcome "
                "(violation, known finding, allowed)"),
        "outcomes-by-isolation": outcomes(isolation, "isolation level", "isolation level"),
        "states-per-cell": C.stacked_histogram(
            per_cell("states"), title="States explored per cell",
            xlabel="distinct states explored (log scale)", ylabel="cells",
            alt="Histogram: how many states the cells explored, stacked by outcome"),
        "time-per-cell": C.stacked_histogram(
            per_cell("seconds"), title="Time per cell",
            xlabel="seconds inside its task (log scale)", ylabel="cells",
            alt="Histogram: how long the cells took, stacked by outcome"),
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
    drawn = charts(results, combos)
    figures = [{"src": f"charts/{name}.svg", "alt": c.alt} for name, c in drawn.items()]
    # the pages and the charts they show appear together (one rename after another)
    write_together({
        **{os.path.join(out, "charts", name + ".svg"): c.svg for name, c in drawn.items()},
        os.path.join(out, "index.md"): markdown(results, combos, rows, pages, summary, figures),
        os.path.join(out, "index.html"): html_page(results, combos, rows, pages, summary,
                                                   figures),
        os.path.join(out, "summary.json"): json.dumps(summary, indent=2) + "\n"})
    return summary


def _short(r: dict) -> str:
    f = primary(r)
    return f["property"] if f else ""


def markdown(results, combos, rows, pages, summary, figures=()) -> str:
    m = summary["meta"]
    lines = ["# Anomaly matrix (icecheck sweep)", "",
             f"Master `{m.get('master')}`, {summary['cells']} cells "
             f"({summary['not_applicable']} not applicable), wall time {m.get('wall_seconds')} s, "
             f"{summary['total_states']} states explored in total. Space: `{m.get('space')}`.",
             "",
             "Legend: ✓ no violation within bounds · ~ allowed (by the isolation "
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
    if figures:
        lines += ["", "## Charts", ""]
        for f in figures:
            lines += [f"![{f['alt']}]({f['src']})", ""]
        lines.pop()
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
              "the HTML version of this report (filter and sort the cells): `index.html`.", ""]
    return "\n".join(lines)


def html_page(results, combos, rows, pages, summary, figures=()) -> str:
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
        details=details, counts=counts, figures=list(figures),
        legend=(CLEAN, EXPECTED, KNOWN, VIOLATION, UNKNOWN, ERROR))
