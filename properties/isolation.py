"""Isolation: the dependency graph of committed operations, and Adya's cycle classes.

Nodes are the operations committed on the lineage (setup commits included). Each key has a
version order: the committed operations that wrote it, in commit order, after the initial
(absent) version. Edges (Adya, "Generalized isolation level definitions", 2000):

* ``ww``: X wrote a version of k and Y wrote the next one;
* ``wr``: Y read (at its base snapshot) the version of k that X wrote;
* ``rw``: Y read a version of k, and Z (not Y) wrote the next version (an anti-dependency);
* ``co``: consecutive commits (display only; never part of a cycle).

What an operation *reads*: the keys it matched at its base, the keys its predicate looks up
(``id = 1``), and a MERGE's source keys, found or not. What it *writes*: the keys whose rows its
logical effect changed (see ``oracle.py``). INSERT and compaction read nothing.

Cycle classes, weakest level violated first, as Jepsen's Elle reports them:
G0 (ww only) -> read uncommitted; G1c (ww/wr, no rw) -> read committed; G-single (exactly one
rw) -> snapshot isolation; G2-item (two or more rw) -> serializable.
"""

from __future__ import annotations

import networkx as nx

from icecheck.models.commands_spec import DELETE, OVERWRITE, OVERWRITE_FILES, UPDATE

from .common import jsonable
from .history import History, where_selects
from .oracle import Oracle
from .violation import VIOLATION, Violation

WW, WR, RW, CO = "ww", "wr", "rw", "co"
#: commands whose read of a key is their WHERE's rows (a MERGE reads its source keys' rows)
_FILTERED_READS = frozenset({DELETE, UPDATE, OVERWRITE, OVERWRITE_FILES})
DATA_EDGES = (WW, WR, RW)
LEVEL_VIOLATED = {"G0": "read-uncommitted", "G1c": "read-committed",
                  "G-single": "snapshot-isolation", "G2-item": "serializable"}
ANOMALY_ORDER = ("G0", "G1c", "G-single", "G2-item")


def version_read(h: History, oracle: Oracle, base_snapshot_id, k):
    """(found, label): the writer of the version of k visible at the base (label None: the
    initial version). found False when that version was written by a commit off the lineage."""
    for sid in h.ancestry(base_snapshot_id):
        op = h.by_snapshot.get(sid)
        if op is None:
            continue
        if op.on_lineage:
            if k in oracle.writes.get(op.label, ()):
                return True, op.label
        else:
            eff = _off_lineage_effect(h, oracle, op)
            if k in eff.sets or k in eff.appends:
                return False, op.label
    return True, None


def _off_lineage_effect(h, oracle, op):
    from .oracle import memo_effect
    eff = oracle.effects.get(op.label)
    if eff is None:
        eff = memo_effect(h, op, oracle.keyfn)
        oracle.effects[op.label] = eff
    return eff


class DepGraph:
    """The dependency graph as the checks read it: nodes with their attributes, edges
    (a, b, key, attributes) in insertion order, and just the queries ``find_cycles``,
    ``classify_cycle`` and the reachability events make (``nodes``, ``edges(data=True)``,
    ``get_edge_data``), which ``networkx.MultiDiGraph`` answers the same way.

    Why not networkx here: building a MultiDiGraph for every evaluated history cost more than
    the cycle search itself (issue 13); users (``dependency_graph``, reports, the explorer)
    get the same graph as a networkx MultiDiGraph from ``to_networkx``. For the same reason
    an operation's node attributes (its command's text among them) are made there, from the
    operation (``add_op``), not for every evaluation; and the graph keeps its data edges'
    keys and its edge types as they are added (``data_keys``, ``types``), which is all the
    cycle search's memo and the "rw edge" event read."""

    __slots__ = ("nodes", "_edges", "_pairs", "_ops", "data_keys", "types")

    def __init__(self):
        self.nodes: dict = {}
        self._edges: list = []
        self._pairs: dict = {}       # (a, b) -> {key: attrs}
        self._ops: dict = {}         # node -> the operation its attributes are made from
        self.data_keys: list = []    # (a, b, key) of each data edge (ww, wr, rw), in order
        self.types: set = set()      # the types of the edges

    def add_node(self, n, **attrs) -> None:
        self.nodes.setdefault(n, {}).update(attrs)

    def add_op(self, op) -> None:
        """The node of a committed operation (``history.Op``); its attributes are those
        ``node_attrs`` gives, made by ``to_networkx``."""
        self.nodes.setdefault(op.label, {})
        self._ops[op.label] = op

    def add_edge(self, a, b, key, **attrs) -> None:
        self.nodes.setdefault(a, {})
        self.nodes.setdefault(b, {})
        pair = self._pairs.setdefault((a, b), {})
        if key in pair:
            pair[key].update(attrs)      # as networkx: the same key updates the edge
            return
        pair[key] = attrs
        self._edges.append((a, b, key, attrs))
        t = attrs.get("type")
        self.types.add(t)
        if t in DATA_EDGES:
            self.data_keys.append((a, b, key))

    def edges(self, data: bool = False):
        if data:
            return [(a, b, d) for a, b, _, d in self._edges]
        return [(a, b) for a, b, _, _ in self._edges]

    def get_edge_data(self, a, b):
        return self._pairs.get((a, b))

    def to_networkx(self) -> nx.MultiDiGraph:
        g = nx.MultiDiGraph()
        for n, attrs in self.nodes.items():
            op = self._ops.get(n)
            g.add_node(n, **(node_attrs(op) if op is not None else {}), **attrs)
        for a, b, key, attrs in self._edges:
            g.add_edge(a, b, key=key, **attrs)
        return g


def node_attrs(op) -> dict:
    """A committed operation's node attributes in the networkx graph."""
    return {"writer": op.writer, "op_index": op.index + 1, "command": op.describe(),
            "snapshot_id": op.snapshot_id, "sequence_number": op.sequence_number,
            "base_snapshot_id": op.base_snapshot_id}


def build_graph(h: History, oracle: Oracle) -> nx.MultiDiGraph:
    """The dependency graph as a networkx MultiDiGraph (for users: reports, the explorer)."""
    return build_deps(h, oracle).to_networkx()


def build_deps(h: History, oracle: Oracle) -> DepGraph:
    g = DepGraph()
    ops = h.committed_ops
    for op in ops:
        g.add_op(op)
    for a, b in zip(ops, ops[1:]):
        g.add_edge(a.label, b.label, key=f"{CO}", type=CO, row_key=None)
    for k, writers in oracle.version_order.items():
        for a, b in zip(writers, writers[1:]):
            if a != b:
                g.add_edge(a, b, key=f"{WW}:{k!r}", type=WW, row_key=k)
    for op in ops:
        eff = oracle.effects.get(op.label)
        if eff is None or not eff.reads:
            continue
        for k in sorted(eff.reads, key=repr):
            found, writer = version_read(h, oracle, op.base_snapshot_id, k)
            if not found:
                continue
            if writer is not None and writer != op.label:
                g.add_edge(writer, op.label, key=f"{WR}:{k!r}", type=WR, row_key=k)
            order = oracle.version_order.get(k, [])
            later = order if writer is None else (
                order[order.index(writer) + 1:] if writer in order else [])
            # the anti-dependency goes to the first later write that changes what op read of
            # k: one that replaced or removed rows of k, or added a row op's WHERE selects (a
            # row of the same key added elsewhere, e.g. another day, changes nothing it read)
            nxt = next((w for w in later if _changes_read(h, oracle, op, w, k)), None)
            if nxt is not None and nxt != op.label:
                g.add_edge(op.label, nxt, key=f"{RW}:{k!r}", type=RW, row_key=k)
    return g


def _changes_read(h: History, oracle: Oracle, reader, label: str, k) -> bool:
    """Does operation ``label``'s write of key ``k`` change what ``reader`` read of it? Yes
    when it replaced or removed rows of ``k`` (or its effect is not known); when it only added
    rows, only if ``reader``'s WHERE (a DELETE, UPDATE or overwrite by filter) selects one."""
    eff = oracle.effects.get(label)
    if eff is None or k in eff.sets or k in eff.blind_sets or eff.drop is not None:
        return True
    added = eff.appends.get(k)
    return not added or where_selects(h, reader, added, _FILTERED_READS) is not False


def _pair_edges(g, a, b) -> dict:
    """Edge types from a to b, each with its first key (deterministic)."""
    out: dict = {}
    data = g.get_edge_data(a, b) or {}
    for ek in sorted(data, key=str):
        attrs = data[ek]
        t = attrs["type"]
        if t in DATA_EDGES and t not in out:
            out[t] = attrs["row_key"]
    return out


def classify_cycle(g, nodes: list) -> tuple[str, list]:
    """The weakest anomaly the node cycle can be read as, and its edges (``g``: a
    ``DepGraph`` or a networkx MultiDiGraph)."""
    pairs = [(nodes[i], nodes[(i + 1) % len(nodes)]) for i in range(len(nodes))]
    chosen = []
    rw = 0
    only_ww = True
    for a, b in pairs:
        edges = _pair_edges(g, a, b)
        for t in (WW, WR, RW):
            if t in edges:
                chosen.append([a, b, t, edges[t]])
                if t != WW:
                    only_ww = False
                if t == RW:
                    rw += 1
                break
    if only_ww:
        anomaly = "G0"
    elif rw == 0:
        anomaly = "G1c"
    elif rw == 1:
        anomaly = "G-single"
    else:
        anomaly = "G2-item"
    return anomaly, chosen


def find_cycles(g) -> list[tuple[str, list]]:
    """Every elementary cycle of the data edges, classified; deterministic order (``g``: a
    ``DepGraph`` or a networkx MultiDiGraph). The caller's own copy."""
    if isinstance(g, DepGraph):
        return [(anomaly, [list(e) for e in edges]) for anomaly, edges in shared_cycles(g)]
    return _find_cycles(g)


def shared_cycles(g: DepGraph) -> list[tuple[str, list]]:
    """``find_cycles`` of a ``DepGraph``, memoised by its data edges (the answer is a function
    of them alone: nodes without one are on no cycle), and shared: evaluations of many
    histories build the same few graphs (issue 13). Never modified by its readers."""
    key = tuple(g.data_keys)      # each edge key holds its type and its row key's repr
    got = _CYCLES.get(key)
    if got is None:
        if len(_CYCLES) > 50_000:
            _CYCLES.clear()
        got = _CYCLES[key] = _find_cycles(g)
    return got


_CYCLES: dict = {}   # data edges of a DepGraph -> its cycles


def _find_cycles(g) -> list[tuple[str, list]]:
    succ: dict = {n: set() for n in g.nodes}
    for a, b, attrs in g.edges(data=True):
        if attrs["type"] in DATA_EDGES and a != b:
            succ[a].add(b)
    out = [classify_cycle(g, cyc) for cyc in elementary_cycles(succ)]
    out.sort(key=lambda c: (ANOMALY_ORDER.index(c[0]), len(c[1]), repr(c[1])))
    return out


def elementary_cycles(succ: dict) -> list[list]:
    """Every elementary cycle of the directed graph ``succ`` (node -> successors), each once,
    rotated to start at its least node.

    Why not ``networkx.simple_cycles``: the graphs here have a handful of nodes (one per
    committed operation), and building a DiGraph for Johnson's algorithm cost 16% of an
    exhaustive search's time (issue 13). A plain depth-first search from each node ``s``,
    through nodes greater than ``s`` only, finds each cycle exactly once, from its least node;
    on graphs of this size that is all it takes. The cycles found are the same set, and
    ``find_cycles`` sorts them, so the result is identical.
    """
    out: list[list] = []
    nodes = sorted(succ)
    for s in nodes:
        path = [s]
        on_path = {s}
        stack = [iter(sorted(x for x in succ[s] if x >= s))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                on_path.discard(path.pop())
                continue
            if nxt == s:
                out.append(list(path))
            elif nxt not in on_path:
                path.append(nxt)
                on_path.add(nxt)
                stack.append(iter(sorted(x for x in succ[nxt] if x >= s)))
    return out


def _left(eff, key, missing):
    """The rows ``eff`` leaves for ``key`` (a blind UPSERT's too), or ``missing``."""
    return eff.sets.get(key, eff.blind_sets.get(key, missing))


def _left_by(a, label, key, missing):
    """The rows operation ``label`` left for ``key``: its effect's rows for the key, or, for a
    blind effect (a metadata-only DELETE, an overwrite by filter: rows dropped by predicate at
    commit), the key's rows right after its commit on the lineage; ``missing`` otherwise. Two
    DELETEs of one row, one of them metadata-only (a whole file by its metrics or partition),
    left the key the same."""
    eff = a.oracle.effects.get(label)
    if eff is None:
        return missing
    got = _left(eff, key, _ABSENT)
    if got is not _ABSENT:
        return got
    op = a.op(label)
    if eff.drop is not None and op is not None and op.position is not None:
        return a.oracle.expected[op.position].get(key, ())
    return missing


_ABSENT = object()


def check(a) -> list:
    """One violation per elementary dependency cycle, weakest anomaly first.

    A lineage check (``properties._CHECKS``): when the history is self-contained the
    dependency graph, its cycles and everything a message names (each operation on the
    lineage: its label, record and sequence number; the effects; the key) are functions of the
    oracle's key and the lineage's sequence numbers (issue 13)."""
    out = []
    effects = a.oracle.effects
    for anomaly, edges in a.cycles:
        rw = [e for e in edges if e[2] == RW]
        # Every anti-dependency is on a key its reader found absent and its writer inserted
        # (an INSERT, or a MERGE's not-matched branch): concurrently inserted keys.
        absent = bool(rw) and all(
            effects.get(e[0]) is not None and effects[e[0]].reads.get(e[3]) is False
            and effects.get(e[1]) is not None
            and (e[3] in effects[e[1]].inserted or e[3] in effects[e[1]].appends)
            for e in rw)
        # Every anti-dependency points at a write that inserted the key (found it absent at
        # its base): the reader did not see a concurrently ADDED row, which Iceberg's snapshot
        # isolation never validates (no primary keys).
        into_insert = bool(rw) and all(
            effects.get(e[1]) is not None
            and (e[3] in effects[e[1]].inserted or e[3] in effects[e[1]].appends)
            for e in rw)
        # Every anti-dependency's two writers left the key the same (e.g. two DELETEs of one
        # row): the table equals a serial order's; only what each reported (row counts) differs.
        same = bool(rw) and all(
            effects.get(e[0]) is not None and effects.get(e[1]) is not None
            and _left_by(a, e[0], e[3], 0) == _left_by(a, e[1], e[3], 1)
            for e in rw)
        # Every anti-dependency's reader is a DELETE whose WHERE does not select what its
        # writer left of the key (an UPDATE or MERGE that moved the row out of the predicate):
        # the table is what "the writer, then the DELETE" leaves; only the DELETE's report (a
        # row deleted) does not fit it.
        moved = bool(rw) and all(
            effects.get(e[1]) is not None
            and _left(effects[e[1]], e[3], ()) != ()
            and a.delete_where_misses(e[0], _left(effects[e[1]], e[3], ()))
            for e in rw)
        writers = []
        for e in edges:
            if e[0] not in writers:
                writers.append(e[0])
        steps = "; ".join(f"{e[0]} -{e[2]}-> {e[1]} on {a.key_text(e[3])}" for e in edges)
        out.append(Violation(
            "isolation",
            f"{anomaly} cycle among {', '.join(a.who(w) for w in writers)}: {steps}. No serial "
            f"order of these commits explains what each read and wrote, which violates "
            f"{LEVEL_VIOLATED[anomaly]}."
            + (" Both conflicting writes left the key the same, so the table matches a serial "
               "order; only what each command reported (e.g. rows deleted) does not." if same
               else " The DELETE's WHERE does not select the version the other write left, so "
               "the table matches a serial order (that write, then the DELETE); only what the "
               "DELETE reported (a row deleted) does not." if moved else ""),
            VIOLATION,
            {"anomaly": anomaly, "level_violated": LEVEL_VIOLATED[anomaly],
             "cycle": [[e[0], e[1], e[2], jsonable(e[3])] for e in edges],
             "ops": writers, "rw_edges": len(rw), "on_absent_keys": absent,
             "rw_into_concurrent_insert": into_insert, "equivalent_writes": same,
             "delete_where_misses_new_version": moved,
             "insert_only_merge": a.insert_only_merges(writers),
             "file_level_overwrite": a.file_level_overwrites(writers),
             "based_on_lost_commit": bool(set(writers) & a.oracle.stale_ops)}))
    return out
