"""A trace as a per-writer timeline (like the seed figures): one column per writer, one row per
action, the table's new snapshot and sequence number beside the commit that made it, and the
verdict at the bottom. As text, or as SVG through Graphviz (``dot``).
"""

from __future__ import annotations

import shutil
import textwrap
from dataclasses import dataclass

from icecheck.engines.config import ExploreConfig
from icecheck.scenarios.errors import InputError

from .execute import Run, model_for, run_actions
from .explain import StepEvent, step_events, table_text

COLUMN = 34


class GraphvizMissing(RuntimeError):
    pass


@dataclass
class Timeline:
    title: str
    writers: list[str]
    start: str                         # the table before the first action
    rows: list[tuple[int, StepEvent]]  # (step number, event)
    end: str                           # the table after the last action
    verdict: list[str]                 # lines for the bottom
    inevitable: int | None = None      # the step after which the anomaly was certain
    why: str = ""                      # that, in words (traces/inevitable.py)
    evidence: str = ""                 # commits' files, delete targets, rows, dependencies
    commits: dict | None = None        # step -> (files it added, rows after) for the SVG
    alarms: frozenset = frozenset()    # steps whose cell the SVG draws red (an audit's violations)


def build_timeline(doc: dict, path: str | None = None) -> Timeline:
    """``doc``: a checked trace (``format.load_trace``); ``path`` its file, named by the
    messages about a malformed configuration (``<trace>`` when it has none)."""
    where = f"{path or '<trace>'}: field 'config'"
    try:
        cfg = ExploreConfig.from_json(doc["config"], where)
        model = model_for(cfg, where)
        run: Run = run_actions(model, doc["actions"])
    except (KeyError, TypeError, ValueError) as e:
        # as replay_file says it: a configuration the model cannot start from (a partition
        # field on a column the schema lacks fails only when the first row is placed)
        raise InputError(f"malformed trace: {type(e).__name__}: {e}", path) from None
    events = step_events(model, cfg.key, run)
    writers = [w.name for w in run.final.writers
               if any(e.writer == w.name for e in events)] or [w.name for w in run.final.writers]
    verdict = []
    if doc["property"]:
        exp = doc.get("expectation") or {}
        status = (f"{exp.get('status')}: {exp.get('reason')}" if exp.get("status")
                  else "UNEXPECTED: must hold")
        for v in doc["verdict"]["violations"]:
            if v["property"] == doc["property"]:
                verdict.append(f"VIOLATED {v['property']}: {v['message']}")
        verdict.append(f"[{status}]")
    else:
        verdict.append("REJECTED: no property violated")
    for w, outs in doc["verdict"]["outcomes"].items():
        if outs:
            verdict.append(f"{w}: {', '.join(outs)}")
    inev, why = None, ""
    if doc["property"]:
        from .inevitable import inevitable_step
        found = inevitable_step(model, run, doc["property"], cfg.key)
        inev, why = found.step, found.text(len(run.actions))
        verdict.append(f"{doc['property']} {why}")
    from .evidence import evidence_text, snapshot_evidence
    commits = {k: (files, rows) for k, _, files, rows in snapshot_evidence(model, run, cfg.key)}
    evidence = evidence_text(model, run, cfg.key)
    meta = cfg
    title = doc.get("title") or doc.get("id") or "trace"
    if meta.profile not in title:
        title += f"  ({meta.profile}, {meta.catalog}, v{meta.format_version})"
    return Timeline(title, writers, table_text(model, cfg.key, run.states[0], "shows"),
                    list(enumerate(events, 1)), table_text(model, cfg.key, run.final), verdict,
                    inev, why, evidence, commits)


MARK = "==== from here the anomaly is inevitable ===="



def render_text(doc: dict, width: int = COLUMN, tl: Timeline | None = None,
                path: str | None = None) -> str:
    tl = tl or build_timeline(doc, path)
    cols = tl.writers + ["table"]
    lines = [tl.title, "start: " + tl.start, ""]
    header = "step  " + "".join(c.ljust(width) for c in cols)
    lines += [header.rstrip(), "-" * len(header.rstrip())]
    if tl.inevitable == 0:
        lines.append("      " + MARK)
    for n, e in tl.rows:
        cells = []
        for c in tl.writers:
            cells.append(textwrap.wrap(e.short, width - 2) if c == e.writer else [])
        cells.append(textwrap.wrap(e.table, width - 2) if e.table else [])
        height = max(1, *(len(c) for c in cells))
        for k in range(height):
            prefix = f"{n:>4}  " if k == 0 else "      "
            line = prefix + "".join((c[k] if k < len(c) else "").ljust(width) for c in cells)
            lines.append(line.rstrip())
        if n == tl.inevitable:
            lines.append("      " + MARK)
    lines.append("")
    lines.append("end: " + tl.end)
    lines += [w for v in tl.verdict for w in textwrap.wrap(v, 100, subsequent_indent="  ")]
    lines.append("")
    for v in tl.evidence.splitlines():
        indent = " " * (len(v) - len(v.lstrip()))
        lines += textwrap.wrap(v.lstrip(), 100, initial_indent=indent,
                               subsequent_indent=indent + "    ")
    return "\n".join(lines) + "\n"


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render_graph(doc: dict, tl: Timeline | None = None, path: str | None = None,
                 lanes: dict[str, str] | None = None):
    """A ``graphviz.Digraph``: a grid with a column per writer and a row per step; the step
    after which the anomaly was inevitable is drawn in orange. ``lanes``: a heading per
    writer (a pipeline names each by its job)."""
    import graphviz

    tl = tl or build_timeline(doc, path)
    g = graphviz.Digraph("timeline", graph_attr={"rankdir": "TB", "nodesep": "0.3",
                                                  "ranksep": "0.25", "label": _esc(tl.title),
                                                  "labelloc": "t", "fontname": "Helvetica"},
                         node_attr={"shape": "box", "fontname": "Helvetica", "fontsize": "10",
                                    "style": "rounded"})
    cols = tl.writers + ["table"]
    # header row
    with g.subgraph() as s:
        s.attr(rank="same")
        s.node("step_h", "", shape="plaintext")
        for c in cols:
            s.node(f"{c}_h", _esc((lanes or {}).get(c, c)), shape="plaintext", fontsize="12",
                   style="")
    prev = {c: f"{c}_h" for c in cols + ["step"]}
    for n, e in tl.rows:
        with g.subgraph() as s:
            s.attr(rank="same")
            certain = n == tl.inevitable
            s.node(f"step_{n}", f"{n}\ninevitable\nfrom here" if certain else str(n),
                   shape="plaintext", style="", fontcolor="darkorange" if certain else "black")
            for c in cols:
                name = f"{c}_{n}"
                if c == e.writer:
                    bad = n in tl.alarms or any(x in e.short
                                                for x in ("FAILED", "UNKNOWN", "CRASH"))
                    s.node(name, "\n".join(textwrap.wrap(e.short, 30)),
                           color="red" if bad else ("darkorange" if certain else "black"),
                           penwidth="2" if certain else "1")
                elif c == "table" and e.table:
                    files, rows = (tl.commits or {}).get(n, ([], []))
                    detail = [w for t in files + (["rows: " + "; ".join(rows)] if rows else [])
                              for w in textwrap.wrap(t, 48, subsequent_indent="  ")]
                    s.node(name, "\n".join([e.table] + detail), shape="note", style="",
                           color="blue", fontsize="9")
                else:
                    s.node(name, "", shape="point", width="0.01", style="invis")
        for c in cols + ["step"]:
            g.edge(prev[c], f"{c}_{n}", style="invis" if c in ("step", "table") else "solid",
                   arrowhead="none", weight="100", color="gray")
            prev[c] = f"{c}_{n}"
    cycles = [line.strip() for line in tl.evidence.splitlines() if line.strip().startswith("cycle ")]
    g.node("verdict", "\n".join(w for v in tl.verdict + cycles for w in textwrap.wrap(v, 80)) + "\n" + "\n".join(textwrap.wrap("end: " + tl.end, 60)),
           shape="box", style="", color="red" if doc["property"] else "darkgreen")
    for c in cols + ["step"]:
        g.edge(prev[c], "verdict", style="invis")
    return g


def render_svg(doc: dict, out_path: str) -> str:
    """Write the timeline as SVG to ``out_path`` (atomically). Needs Graphviz's ``dot``."""
    from .format import write_atomic

    write_atomic(out_path, svg_text(doc))
    return out_path


def svg_text(doc: dict, lanes: dict[str, str] | None = None, tl: Timeline | None = None) -> str:
    """The timeline as SVG text (``render_graph``); needs Graphviz's ``dot``. ``tl``: a
    timeline built elsewhere (``icecheck audit`` draws a real table's snapshots this way)."""
    if shutil.which("dot") is None:
        raise GraphvizMissing("SVG timelines need Graphviz's `dot` program, which is not "
                              "installed: run `apt-get install graphviz` (Debian/Ubuntu) or "
                              "`brew install graphviz` (macOS)")
    return render_graph(doc, tl=tl, lanes=lanes).pipe(format="svg").decode("utf-8")
