"""The state of a ``Session`` as HTML (and SVG): the table, the snapshot log, the metadata tree,
the writers, the properties, the dependency graph and the diff from the previous state.

Every displayed fact has a stable key (``snap:1001``, ``entry:snap-1001-m1.avro:w1-1-d1``,
``w:w2:phase``, ...). ``facts(state)`` maps keys to their text; the diff between two states is
the keys added, changed and removed, and the HTML marks the added and changed ones. The web page
and the notebook view (``Session.render``) share these functions and ``static/explorer.css``.
The HTML itself is in Jinja2 templates (``templates/sections/``, autoescaped); this module
gathers what each section shows.
"""

from __future__ import annotations

import html
import os
import re
import shutil
from dataclasses import dataclass
from typing import Any

from icecheck.models.files import EQUALITY_DELETES, DataFile, DeleteFile
from icecheck.models.metadata import Manifest, ManifestList
from icecheck.models.operations import JAVA_NAMES
from icecheck.models.reads import read_rows
from icecheck.models.system import Model, State, WriterState
from icecheck.traces.evidence import file_text as _file_text

STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
GONE = " (DELETED from storage: reading it fails)"


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


# -- facts and the diff ------------------------------------------------------------------------
def _intent_text(intent) -> str:
    if intent is None:
        return "-"
    return str(intent) if not hasattr(intent, "add_data") else f"{intent.kind} operation"


def _record_text(r) -> str:
    out = f"#{r.index + 1} {_intent_text(r.intent)}: {r.outcome}"
    if r.snapshot_id is not None and r.outcome in ("committed", "commit_unknown"):
        out += f" as snapshot {r.snapshot_id}" + (f" (seq {r.sequence_number})"
                                                  if r.sequence_number is not None else "")
    if r.check:
        out += f" [{r.check}]"
    if r.message:
        out += f": {r.message}"
    out += f"; read at snapshot {r.base_snapshot_id}; {r.attempts} attempt(s)"
    return out


def _op_files(w: WriterState) -> list:
    op = w.operation
    if op is None:
        return []
    return list(op.add_data) + list(op.add_deletes)


def _wrote(state: State, w: WriterState) -> list[str]:
    """Every object writer ``w`` put in the store: its data and delete files
    (``w1-1-d1``), manifests and manifest lists (``snap-1001...``, snapshot id = slot * 1000 + n)
    and metadata files (``v2-w1-1.metadata.json``), abandoned attempts included."""
    out = []
    for p in state.store:
        if p.startswith(f"{w.name}-") or re.search(rf"-{re.escape(w.name)}-\d+\.metadata\.json$", p):
            out.append(p)
            continue
        m = re.match(r"^snap-(\d+)[-.]", p)
        if m and int(m.group(1)) // 1000 == w.slot:
            out.append(p)
    return sorted(out, key=lambda p: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", p)])


def facts(model: Model, state: State) -> dict[str, tuple[str, str]]:
    """key -> (label, text) for everything the page shows of ``state``."""
    out: dict[str, tuple[str, str]] = {}
    meta = state.metadata
    out["catalog"] = ("catalog pointer", f"{state.catalog.pointer} (version {state.catalog.version})")
    out["current"] = ("current snapshot", str(meta.current_snapshot_id))
    for sid in meta.snapshot_log:
        s = meta.snapshot(sid)
        if s is not None:
            out[f"snap:{sid}"] = (f"snapshot {sid}", f"seq {s.sequence_number} {s.operation} "
                                  f"(parent {s.parent_id}, by {s.writer})")
    snap = meta.current
    if snap is not None:
        # from the archive: the metadata may reference an object deleted from storage (the
        # `readable` anomaly), which the page shows as such instead of failing on it
        arch, deleted = state.store.archive(), state.store.deleted
        mlist: ManifestList = arch[snap.manifest_list]
        out[f"mlist:{mlist.path}"] = (f"manifest list {mlist.path}", ", ".join(mlist.manifests)
                                      + (GONE if mlist.path in deleted else ""))
        for mp in mlist.manifests:
            m: Manifest = arch[mp]
            out[f"manifest:{mp}"] = (f"manifest {mp}", f"{m.content}, added by snapshot "
                                     f"{m.added_snapshot_id}, seq {m.sequence_number}"
                                     + (GONE if mp in deleted else ""))
            for e in m.entries:
                out[f"entry:{mp}:{e.file.path}"] = (
                    f"entry {e.file.path} in {mp}",
                    f"{e.status} (snapshot {e.snapshot_id}, data seq {e.data_sequence_number}, "
                    f"file seq {e.file_sequence_number})")
    for r in read_rows(state.store.archive(), snap, model.table.schema.names):
        out[f"row:{r.values!r}"] = (f"row {tuple(r.values)!r}", f"in {r.path}@{r.position}")
    for w in state.writers:
        out[f"w:{w.name}:phase"] = (f"{w.name} phase", w.phase)
        out[f"w:{w.name}:base"] = (f"{w.name} base snapshot",
                                   str(w.base_snapshot_id) if w.active else "-")
        out[f"w:{w.name}:op"] = (f"{w.name} operation", _intent_text(w.intent) if w.active else "-")
        out[f"w:{w.name}:attempt"] = (f"{w.name} attempt", str(w.attempt + 1) if w.active else "-")
        out[f"w:{w.name}:wrote"] = (f"{w.name} wrote", ", ".join(_wrote(state, w)) or "-")
        for r in w.history:
            out[f"h:{w.name}:{r.index}"] = (f"{w.name} finished", _record_text(r))
    return out


@dataclass
class Diff:
    added: list[tuple[str, str, str]]            # (key, label, text)
    changed: list[tuple[str, str, str, str]]     # (key, label, old, new)
    removed: list[tuple[str, str, str]]

    def cls(self, key: str) -> str:
        """The CSS class marking ``key`` in the current state ('' when unchanged)."""
        if key in self._added:
            return " d-add"
        if key in self._changed:
            return " d-chg"
        return ""

    def __post_init__(self):
        self._added = {k for k, _, _ in self.added}
        self._changed = {k for k, *_ in self.changed}

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.removed)

    def lines(self) -> list[str]:
        return ([f"+ {label}: {text}" for _, label, text in self.added]
                + [f"~ {label}: {old} -> {new}" for _, label, old, new in self.changed]
                + [f"- {label}: {text}" for _, label, text in self.removed])


NO_DIFF = Diff([], [], [])


def diff(model: Model, before: State | None, after: State) -> Diff:
    if before is None:
        return NO_DIFF
    a, b = facts(model, before), facts(model, after)
    added = [(k, *b[k]) for k in b if k not in a]
    changed = [(k, b[k][0], a[k][1], b[k][1]) for k in b if k in a and a[k][1] != b[k][1]]
    removed = [(k, *a[k]) for k in a if k not in b]
    return Diff(added, changed, removed)


def session_diff(session) -> Diff:
    return diff(session.model, session.previous, session.state)


# -- HTML sections -----------------------------------------------------------------------------
_ENV = None


def _render(name: str, **values) -> str:
    """A section from explorer/templates/sections/ (Jinja2, autoescaped: every value from the
    model is text). Outside Flask too: the notebook view uses the same sections."""
    global _ENV
    if _ENV is None:
        from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

        folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates", "sections")
        _ENV = Environment(loader=FileSystemLoader(folder), autoescape=select_autoescape(["html"]),
                           undefined=StrictUndefined)
        _ENV.filters["pyrepr"] = repr
        _ENV.filters["tuplestr"] = lambda r: str(tuple(r))
        _ENV.filters["astuple"] = tuple
        _ENV.tests["data_file"] = lambda f: isinstance(f, DataFile)
        _ENV.tests["delete_file"] = lambda f: isinstance(f, DeleteFile)
        _ENV.globals.update(equality=EQUALITY_DELETES, content_label=_content_label,
                            intent_text=_intent_text, record_text=_record_text)
    return _ENV.get_template(name).render(**values)


def table_html(session, d: Diff) -> str:
    state, model = session.state, session.model
    meta = state.metadata
    names = model.table.schema.names
    rows = sorted(read_rows(state.store.archive(), meta.current, names), key=lambda r: repr(r.values))
    marks: dict[tuple, list] = {}
    missing = []
    for m in session.row_marks():
        if m.present:
            marks.setdefault(m.row, []).append(m)
        else:
            missing.append(m)
    return _render("table.html", state=state, meta=meta, names=names, rows=rows, d=d,
                   marks=marks, missing=missing)


def snapshot_log_html(session, d: Diff) -> str:
    meta = session.state.metadata
    snaps = [s for s in (meta.snapshot(sid) for sid in meta.snapshot_log) if s is not None]
    return _render("snapshots.html", meta=meta, snapshots=snaps, d=d)


def _content_label(f) -> str:
    return {"data": "data", "position_deletes": "pos-del", "equality_deletes": "eq-del",
            "dv": "DV"}.get(f.content, f.content)


def tree_html(session, d: Diff) -> str:
    state, model = session.state, session.model
    snap = state.metadata.current
    if snap is None:
        return _render("tree.html", snap=None)
    arch = state.store.archive()
    live = {(r.path, r.position) for r in read_rows(arch, snap, model.table.schema.names)}
    mlist: ManifestList = arch[snap.manifest_list]
    gone = [label for k, label, _ in d.removed if k.startswith(("manifest:", "entry:", "mlist:"))]
    return _render("tree.html", snap=snap, mlist=mlist, live=live, d=d, gone=gone,
                   deleted=state.store.deleted,
                   manifests=[(mp, arch[mp]) for mp in mlist.manifests])


def writers_html(session, d: Diff) -> str:
    state = session.state
    return _render("writers.html", writers=state.writers, d=d, java_names=JAVA_NAMES,
                   wrote={w.name: _wrote(state, w) for w in state.writers},
                   profiles=session.writer_profiles(), mixed=session.config.mixed)


def properties_html(session) -> str:
    return _render("properties.html", props=session.properties())


def diff_html(session, d: Diff) -> str:
    a = session.last_action
    sentence = ""
    if a is not None:
        from icecheck.traces.explain import step_event
        sentence = step_event(session.model, session.config.key, session.previous, a,
                              session.state).sentence
    return _render("diff.html", action=a, at=session.at, sentence=sentence, d=d)


# -- the dependency graph ----------------------------------------------------------------------
def dot_available() -> bool:
    return shutil.which("dot") is not None


def _strip_xml(svg: str) -> str:
    i = svg.find("<svg")
    return svg[i:] if i >= 0 else svg


def dependency_graphviz(session):
    import graphviz

    g, cycles = session.dependency_graph()
    on_cycle = {(a, b, t) for _, edges in cycles for a, b, t, _ in edges}
    cyc_nodes = {n for _, edges in cycles for e in edges for n in e[:2]}
    dg = graphviz.Digraph("deps", graph_attr={"rankdir": "LR", "fontname": "Helvetica",
                                              "bgcolor": "transparent"},
                          node_attr={"shape": "box", "style": "rounded", "fontname": "Helvetica",
                                     "fontsize": "10"},
                          edge_attr={"fontname": "Helvetica", "fontsize": "9"})
    for n, attrs in g.nodes(data=True):
        label = f"{n}\n{attrs.get('command', '')}\nsnapshot {attrs.get('snapshot_id')}, seq " \
                f"{attrs.get('sequence_number')}"
        dg.node(str(n), label, color="red" if n in cyc_nodes else "black",
                penwidth="2" if n in cyc_nodes else "1")
    for a, b, attrs in g.edges(data=True):
        t = attrs.get("type")
        if t == "co":
            dg.edge(str(a), str(b), style="dashed", color="gray", label="co", fontcolor="gray")
            continue
        k = attrs.get("row_key")
        red = (a, b, t) in on_cycle
        dg.edge(str(a), str(b), label=f"{t} {session.config.key}={k!r}",
                color="red" if red else "black", fontcolor="red" if red else "black",
                penwidth="2" if red else "1")
    return dg, g, cycles


def graph_html(session) -> str:
    try:
        dg, g, cycles = dependency_graphviz(session)
    except Exception as e:  # noqa: BLE001 - the graph is a view: show why, never fail the page
        return _render("graph.html", error=str(e))
    svg = dot_error = None
    if g.number_of_nodes() and dot_available():
        try:
            svg = _strip_xml(dg.pipe(format="svg").decode())
        except Exception as e:  # noqa: BLE001
            dot_error = str(e)
    key = session.config.key
    return _render("graph.html", error=None, nodes=g.number_of_nodes(), svg=svg,
                   dot_error=dot_error,
                   edges=[(a, b, t.get("type")) for a, b, t in g.edges(data=True)],
                   cycles=[(anomaly, "; ".join(f"{a} -{t}-> {b} on {key}={k!r}"
                                               for a, b, t, k in edges))
                           for anomaly, edges in cycles])


# -- whole views -------------------------------------------------------------------------------
def css() -> str:
    with open(os.path.join(STATIC, "explorer.css"), encoding="utf-8") as f:
        return f.read()


def state_sections(session) -> dict[str, str]:
    d = session_diff(session)
    return {"diff": diff_html(session, d), "table": table_html(session, d),
            "snapshots": snapshot_log_html(session, d), "tree": tree_html(session, d),
            "writers": writers_html(session, d), "properties": properties_html(session),
            "graph": graph_html(session)}


def notebook_html(session) -> str:
    """A self-contained fragment (its own scoped style) for Jupyter."""
    return _render("notebook.html", css=css(), title=session.title, at=session.at,
                   total=len(session.full_path), path=" ".join(session.path) or "(initial state)",
                   enabled=", ".join(session.actions()) or "none (final)",
                   s=state_sections(session))


def state_svg(session) -> str:
    """The state's metadata tree and writers as an SVG diagram (Graphviz)."""
    import graphviz

    if not dot_available():
        raise RuntimeError("SVG diagrams need Graphviz's `dot` (apt-get install graphviz)")
    state = session.state
    meta = state.metadata
    g = graphviz.Digraph("state", graph_attr={"rankdir": "LR", "fontname": "Helvetica",
                                              "label": f"{session.title} - step {session.at}",
                                              "labelloc": "t"},
                         node_attr={"shape": "box", "fontname": "Helvetica", "fontsize": "10"})
    g.node("catalog", f"catalog\n{state.catalog.pointer}", shape="cylinder")
    snap = meta.current
    if snap is not None:
        g.node("snap", f"snapshot {snap.snapshot_id}\nseq {snap.sequence_number} {snap.operation}")
        g.edge("catalog", "snap")
        mlist = state.store.archive()[snap.manifest_list]
        for mp in mlist.manifests:
            m = state.store.archive()[mp]
            g.node(mp, f"{m.content} manifest\n{mp}", style="rounded")
            g.edge("snap", mp)
            for e in m.entries:
                fid = f"{mp}/{e.file.path}"
                color = {"ADDED": "darkgreen", "EXISTING": "black", "DELETED": "red"}[e.status]
                g.node(fid, f"{e.status} {e.file.path}\n{_file_text(e.file)}", color=color,
                       fontcolor=color, shape="note")
                g.edge(mp, fid)
    for w in state.writers:
        label = f"{w.name}: {w.phase}"
        if w.active:
            label += f"\n{_intent_text(w.intent)}\nbase snapshot {w.base_snapshot_id}"
        for r in w.history:
            label += f"\n#{r.index + 1} {r.outcome}"
        g.node(f"writer {w.name}", label, shape="oval")
    return _strip_xml(g.pipe(format="svg").decode())
