"""A z3 bounded model checker for the commit protocol (``icecheck z3 search``).

z3 searches the *interleavings*; the *data rules* stay in the executable model.

What z3 encodes, exactly, for K steps (one action per step, or a stutter step so that runs
shorter than K are covered):

* per writer: its phase (idle, written, prepared, or finished as committed / validation_failed /
  noop / commit_failed), the alternative it chose at ``begin``, its base (the catalog's lineage
  at ``begin``), the lineage it refreshed to, and its attempt counter (retries up to
  ``commit.retry.num-retries``);
* the catalog: the current lineage (a node of the lineage tree below), swapped by ``cas`` only
  when the pointer is still the one the writer refreshed to (``cas`` and ``put_if_absent``
  agree here: versions only grow, so "version still free" is "pointer unchanged");
* PyIceberg's first attempt: ``refresh`` keeps the base and skips validation;
* the actions are the executable model's own, fused as the exploration engines run it
  (``begin#c`` scans and writes, ``refresh`` refreshes + validates + writes metadata, ``cas``).

What z3 does NOT re-encode (it is abstracted into finite tables computed by running the
executable model itself, so the Java rules live in one place):

* a *lineage node* is the sequence of commits on the table, each ``(writer, choice, base)``
  with ``base`` the length of the lineage prefix the writer began at. The model is
  deterministic and its rules do not depend on snapshot ids or metadata paths (which count
  attempts), so a node fixes the table up to renaming;
* ``BEGUN[w, c, b]``: the phase writer ``w``'s alternative ``c`` is in after its ``begin`` at
  base node ``b``: written, or finished there as noop (it changes no row) or validation_failed
  (the engine refused it as it began: add_files of a file the table lists);
* ``VAL[w, c, b, r, retry]``: does its validation (and manifest work: "Missing required files
  to delete") pass when it began at ``b`` and refreshes to ``r`` -- the whole window, not a
  pairwise approximation (computed on a canonical run that reaches exactly that situation);
* ``CHILD[r, w, c, b]``: the node after its commit on ``r``;
* ``PROP[node]``: the properties (``icecheck.properties.evaluate``) violated by the committed
  history of a node, and which of them are unexpected (``traces.execute.judge``).

The tables are filled by a DFS over the lineage tree (``LineageTables``); every entry is one
run of the executable model on a canonical action list (with prefix caching). Assumptions the
encoding relies on, each checked on every trace z3 returns (``replay``): the properties of a
state depend only on its committed lineage (unfinished or failed writers do not change them);
a node's table entries do not depend on attempt counters. A z3 trace that does not replay --
an action not enabled, a phase or lineage different from z3's, or the property not violated --
raises ``Z3ReplayError``: it is a bug in this encoding, never a finding.

Scope: one operation per writer; catalogs ``cas`` and ``put_if_absent`` (a last-writer-wins
catalog can rewrite history, which the lineage tree does not represent: see
``z3_invariants.py`` for it); no faults or crashes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

import z3

from icecheck.engines.config import ExploreConfig
from icecheck.models import catalog as cat
from icecheck.models import system as msys
from icecheck.models.system import Action, Model
from icecheck.properties import PROPERTIES

# z3 phases of a writer.
IDLE, WRITTEN, PREPARED, COMMITTED, VFAILED, NOOPED, CFAILED = range(7)
PHASE_NAMES = {IDLE: msys.IDLE, WRITTEN: msys.WRITTEN, PREPARED: msys.PREPARED,
               COMMITTED: msys.COMMITTED, VFAILED: msys.VALIDATION_FAILED, NOOPED: msys.NOOP,
               CFAILED: msys.COMMIT_FAILED}
KINDS = (msys.BEGIN, msys.REFRESH, msys.CAS)


#: The largest depth a z3 search takes (``z3 search --depth``, ``explore --engine z3
#: --max-depth``; beyond it, exit 2). Every run of a configuration the encoding models is at most
#: ``LineageTables.longest_run`` actions long, writers x (1 + 2 x (retries + 1)): 9 writers
#: with 9 retries make 189, so 200 covers every run of every configuration, and a deeper
#: search would only add stutter steps (z3_search searches at most that many steps anyway).
MAX_DEPTH = 200


class Z3ReplayError(AssertionError):
    """A trace z3 produced does not replay on the executable model: an encoding bug."""


class Z3Unsupported(ValueError):
    """The configuration is outside what the z3 encoding models."""


Commit = tuple[int, int, int]          # (writer index, choice, base prefix length)
Lineage = tuple[Commit, ...]


@dataclass
class Z3Result:
    config: ExploreConfig
    depth: int
    violations: set[str] = field(default_factory=set)      # found, replayed (allowed or not)
    unexpected: set[str] = field(default_factory=set)      # of which: must-hold violations
    known: set[str] = field(default_factory=set)           # of which: recorded known findings
    traces: dict[str, dict] = field(default_factory=dict)  # property -> trace document
    actions: dict[str, list[str]] = field(default_factory=dict)
    unsat_within_bounds: bool = False     # z3 proved: no violation of the hunted properties
    unexpected_unsat: bool = False        # z3 proved: no unexpected violation of them
    searched: tuple[str, ...] = ()
    seconds: float = 0.0
    table_seconds: float = 0.0
    solve_seconds: float = 0.0
    nodes: int = 0
    model_runs: int = 0
    facts: int = 0
    encoded_depth: int = 0                # the steps encoded: min(depth, the longest run)

    @property
    def failed(self) -> bool:
        """A property that must hold was violated (known findings included, as ``explore``
        counts them; ``known`` tells them apart)."""
        return bool(self.unexpected)

    @property
    def failed_new(self) -> bool:
        """A must-hold property was violated that is not a recorded known finding."""
        return bool(self.unexpected - self.known)

    def as_json(self) -> dict:
        return {
            "engine": "z3", "config": self.config.name, "profile": self.config.profile,
            "catalog": self.config.catalog, "format_version": self.config.format_version,
            "depth": self.depth, "encoded_depth": self.encoded_depth,
            "searched": list(self.searched),
            "violations": sorted(self.violations), "unexpected": sorted(self.unexpected),
            "known_findings": sorted(self.known),
            "unsat_within_bounds": self.unsat_within_bounds,
            "unexpected_unsat_within_bounds": self.unexpected_unsat,
            "failed": self.failed, "failed_new": self.failed_new,
            "traces": {p: {"id": t["id"], "kind": t["kind"], "actions": t["actions"],
                           "explanation": t["explanation"]} for p, t in self.traces.items()},
            "lineage_nodes": self.nodes, "model_runs": self.model_runs, "table_facts": self.facts,
            "seconds": round(self.seconds, 3), "table_seconds": round(self.table_seconds, 3),
            "solve_seconds": round(self.solve_seconds, 3),
        }


# --------------------------------------------------------------------------------------------
# The tables, computed by running the executable model


class LineageTables:
    """The lineage tree of a configuration and the model facts z3 reads (see module docstring)."""

    def __init__(self, cfg: ExploreConfig):
        from icecheck.models.profiles import get_profile
        from icecheck.traces.execute import model_for

        if cfg.catalog not in (cat.CAS, cat.PUT_IF_ABSENT):
            raise Z3Unsupported(
                f"the z3 search models the cas and put_if_absent catalogs; {cfg.catalog} can "
                f"rewrite history (see `icecheck z3 prove-cas-appends` and the explicit engines)")
        if cfg.faults or cfg.crashes or cfg.phantom_failures:
            raise Z3Unsupported("the z3 search does not model faults or crashes")
        if getattr(cfg, "sinks", ()) or getattr(cfg, "clients", ()) or getattr(cfg, "ticks", 0):
            raise Z3Unsupported("the z3 search does not model streaming sinks that restart, "
                                "writers' own catalog clients or the clock (use the explicit or "
                                "Hypothesis engine)")
        if getattr(cfg, "mixed", False):
            raise Z3Unsupported("the z3 search models one engine profile for every writer; this "
                                "configuration mixes profiles (use the explicit or Hypothesis engine)")
        self.cfg = cfg
        self.model: Model = model_for(cfg)
        progs = self.model.config.writers
        if any(len(p.entries) != 1 for p in progs):
            raise Z3Unsupported("the z3 search models one operation per writer (--ops 1)")
        self.writers = [p.name for p in progs]
        self.choices = [len(p.entries[0]) for p in progs]
        self.vofa = get_profile(cfg.profile).validate_on_first_attempt
        self.max_retries = self.model.table.max_retries
        self.key = cfg.key
        self._cache: dict[tuple[str, ...], msys.State] = {(): self.model.initial()}
        self.runs = 0
        self.nodes: dict[Lineage, int] = {}
        self.lineages: list[Lineage] = []
        # (w, c, node) -> the phase after begin (WRITTEN, NOOPED or VFAILED)
        self.begun: dict[tuple[int, int, int], int] = {}
        self.val0: dict[tuple[int, int, int, int], bool] = {}     # (w, c, b, r) attempt 0
        self.val1: dict[tuple[int, int, int, int], bool] = {}     # (w, c, b, r) a retry
        self.child: dict[tuple[int, int, int, int], int] = {}     # (w, c, b, r) -> node
        self.prop: dict[int, set[str]] = {}
        self.prop_unexpected: dict[int, set[str]] = {}
        self._build()

    # -- running the model ----------------------------------------------------------------
    def run(self, actions: tuple[str, ...]) -> msys.State:
        """The state after ``actions`` (cached by prefix); raises if one is not enabled."""
        if actions in self._cache:
            return self._cache[actions]
        state = self.run(actions[:-1])
        self.runs += 1
        state = self.model.step(state, Action.parse(actions[-1]))
        self._cache[actions] = state
        return state

    def begin(self, w: int, c: int) -> str:
        return f"{self.writers[w]}.begin" + (f"#{c}" if c else "")

    def schedule(self, lineage: Lineage, extra: Commit | None = None) -> tuple[str, ...]:
        """A canonical action list that commits ``lineage`` in order (each writer beginning at
        its base) and, if given, begins ``extra`` at its base without committing it. With
        PyIceberg (no validation on the first attempt) a writer that commits on a later head
        than its base needs a retry: it refreshes before the next commit and loses that swap."""
        out: list[str] = []
        items = [(w, c, b, p) for p, (w, c, b) in enumerate(lineage)]
        if extra is not None:
            items.append((*extra, None))
        for t in range(len(lineage) + 1):
            late = []
            for w, c, b, p in items:
                if b == t:
                    out.append(self.begin(w, c))
                    if not self.vofa and (p is None or p > t) and t < len(lineage):
                        late.append(w)
            for w in late:
                out.append(f"{self.writers[w]}.refresh")
            if t < len(lineage):
                w = lineage[t][0]
                out += [f"{self.writers[w]}.refresh", f"{self.writers[w]}.cas"]
            for w in late:
                out.append(f"{self.writers[w]}.cas")
        return tuple(out)

    def phase_of(self, state: msys.State, w: int) -> int:
        ws = state.writer(self.writers[w])
        if ws.phase == msys.IDLE:
            return IDLE
        if ws.phase == msys.WRITTEN:
            return WRITTEN
        if ws.phase == msys.PREPARED:
            return PREPARED
        if ws.phase == msys.DONE:
            outcome = ws.history[-1].outcome
            for k, v in PHASE_NAMES.items():
                if v == outcome and k >= COMMITTED:
                    return k
        raise Z3ReplayError(f"writer {ws.name} is {ws.phase}: a phase the encoding does not model")

    def lineage_of(self, state: msys.State) -> list[str]:
        """Writer names of the state's lineage snapshots (setup excluded), oldest first."""
        meta = state.metadata
        snaps = list(meta.ancestors(meta.current_snapshot_id))
        return [s.writer for s in reversed(snaps) if s.writer != "setup"]

    # -- the DFS ----------------------------------------------------------------------------
    def _node(self, lineage: Lineage) -> int:
        if lineage not in self.nodes:
            self.nodes[lineage] = len(self.lineages)
            self.lineages.append(lineage)
        return self.nodes[lineage]

    def _build(self) -> None:
        from icecheck.traces.execute import judge

        self._node(())
        i = 0
        while i < len(self.lineages):
            lineage = self.lineages[i]
            node = i
            i += 1
            k = len(lineage)
            state = self.run(self.schedule(lineage))
            if self.lineage_of(state) != [self.writers[w] for w, _, _ in lineage]:
                raise Z3ReplayError(f"canonical run of {lineage} does not reach that lineage")
            j = judge(self.cfg, self.model, state)
            self.prop[node] = set(j.names)
            self.prop_unexpected[node] = {v.property for v in j.unexpected}
            done = {w for w, _, _ in lineage}
            for w in range(len(self.writers)):
                if w in done:
                    continue
                name = self.writers[w]
                for c in range(self.choices[w]):
                    # the begin at this node as a base: written, a noop, or refused
                    st = self.run(self.schedule(lineage, (w, c, k)))
                    phase = self.phase_of(st, w)
                    if phase not in (WRITTEN, NOOPED, VFAILED):
                        raise Z3ReplayError(f"a begin ended {PHASE_NAMES.get(phase, phase)}: "
                                            f"a phase the encoding does not model after begin")
                    self.begun[(w, c, node)] = phase
                    for b in range(k + 1):
                        bnode = self.nodes[lineage[:b]]
                        if self.begun[(w, c, bnode)] != WRITTEN:
                            continue
                        sched = self.schedule(lineage, (w, c, b))
                        ok = {}
                        retry = (not self.vofa) and b < k
                        if self.vofa or b == k:
                            st = self.run(sched + (f"{name}.refresh",))
                            ok[0] = self.phase_of(st, w) == PREPARED
                            self.val0[(w, c, bnode, node)] = ok[0]
                        if retry:
                            before = self.run(sched).writer(name)
                            if before.attempt != 1 or before.phase != msys.WRITTEN:
                                raise Z3ReplayError(f"retry construction failed for {sched}")
                            st = self.run(sched + (f"{name}.refresh",))
                            ok[1] = self.phase_of(st, w) == PREPARED
                            self.val1[(w, c, bnode, node)] = ok[1]
                        if any(ok.values()):
                            st = self.run(sched + (f"{name}.refresh", f"{name}.cas"))
                            if self.phase_of(st, w) != COMMITTED:
                                raise Z3ReplayError(f"{sched}: the swap after a fresh refresh "
                                                    f"did not apply")
                            self.child[(w, c, bnode, node)] = self._node(lineage + ((w, c, b),))

    @property
    def longest_run(self) -> int:
        """The most actions a run of this configuration takes: each writer begins once and
        refreshes and swaps at most once per attempt (``commit.retry.num-retries`` retries).
        Steps beyond it can only stutter."""
        return len(self.writers) * (1 + 2 * (self.max_retries + 1))

    @property
    def facts(self) -> int:
        return (len(self.begun) + len(self.val0) + len(self.val1) + len(self.child)
                + len(self.prop))


# --------------------------------------------------------------------------------------------
# The z3 encoding


class Encoding:
    def __init__(self, tables: LineageTables, depth: int,
                 progress: Callable[[str, int, int], None] | None = None):
        self.t = tables
        self.K = depth
        W = len(tables.writers)
        self.W = W
        I, B = z3.IntSort(), z3.BoolSort()
        s = z3.Solver()
        self.solver = s
        n_nodes = len(tables.lineages)
        # Tables as uninterpreted functions pinned by facts (an argument outside the table is
        # unreachable; leaving it free only over-approximates, so unsat stays sound).
        self.begun_f = [z3.Function(f"begun_{w}", I, I, I) for w in range(W)]
        self.val0_f = [z3.Function(f"val0_{w}", I, I, I, B) for w in range(W)]
        self.val1_f = [z3.Function(f"val1_{w}", I, I, I, B) for w in range(W)]
        self.child_f = [z3.Function(f"child_{w}", I, I, I, I) for w in range(W)]
        for (w, c, b), v in tables.begun.items():
            s.add(self.begun_f[w](c, b) == v)
        for (w, c, b, r), v in tables.val0.items():
            s.add(self.val0_f[w](c, b, r) == v)
        for (w, c, b, r), v in tables.val1.items():
            s.add(self.val1_f[w](c, b, r) == v)
        for (w, c, b, r), v in tables.child.items():
            s.add(self.child_f[w](c, b, r) == v)
        # PROP as a membership test: the node is one of those whose history violates p.
        def member(nodes: list[int]):
            return lambda x: z3.Or([x == n for n in nodes]) if nodes else z3.BoolVal(False)

        self.prop_f = {p: member([n for n in range(n_nodes) if p in tables.prop[n]])
                       for p in PROPERTIES}
        self.unexp_f = {p: member([n for n in range(n_nodes) if p in tables.prop_unexpected[n]])
                        for p in PROPERTIES}

        # Variables.
        self.ch = [z3.Int(f"choice_{w}") for w in range(W)]
        self.base = [z3.Int(f"base_{w}") for w in range(W)]
        self.node = [z3.Int(f"node_{t}") for t in range(depth + 1)]
        self.ph = [[z3.Int(f"phase_{t}_{w}") for w in range(W)] for t in range(depth + 1)]
        self.ref = [[z3.Int(f"refreshed_{t}_{w}") for w in range(W)] for t in range(depth + 1)]
        self.att = [[z3.Int(f"attempt_{t}_{w}") for w in range(W)] for t in range(depth + 1)]
        self.act = [z3.Int(f"action_{t}") for t in range(depth)]   # 0 stutter, 1+3w+k

        s.add(self.node[0] == tables.nodes[()])
        for w in range(W):
            s.add(self.ph[0][w] == IDLE, self.att[0][w] == 0, self.ref[0][w] == -1)
            s.add(0 <= self.ch[w], self.ch[w] < tables.choices[w])
        for t in range(depth + 1):
            s.add(0 <= self.node[t], self.node[t] < n_nodes)
        for t in range(depth):
            s.add(0 <= self.act[t], self.act[t] <= 3 * W)
            s.add(z3.Or([self._step(t, a) for a in range(3 * W + 1)]))
            if progress is not None:
                progress("encoding", t + 1, depth)

    def _frame(self, t: int, keep: Iterable[int]) -> list:
        out = []
        for w in keep:
            out += [self.ph[t + 1][w] == self.ph[t][w], self.ref[t + 1][w] == self.ref[t][w],
                    self.att[t + 1][w] == self.att[t][w]]
        return out

    def _step(self, t: int, a: int):
        ph, ref, att = self.ph[t], self.ref[t], self.att[t]
        ph2, ref2, att2 = self.ph[t + 1], self.ref[t + 1], self.att[t + 1]
        node, node2 = self.node[t], self.node[t + 1]
        conds = [self.act[t] == a]
        if a == 0:   # stutter
            return z3.And(conds + [node2 == node] + self._frame(t, range(self.W)))
        w, kind = divmod(a - 1, 3)
        conds += self._frame(t, [x for x in range(self.W) if x != w])
        c, b = self.ch[w], self.base[w]
        if kind == 0:    # begin#c: scan at the current head, plan, write files
            conds += [ph[w] == IDLE, b == node, node2 == node, att2[w] == 0, ref2[w] == -1,
                      ph2[w] == self.begun_f[w](c, node)]
        elif kind == 1:  # refresh (+ validate + write metadata)
            first_no_refresh = z3.And(att[w] == 0, z3.BoolVal(not self.t.vofa))
            rr = z3.If(first_no_refresh, b, node)
            ok = z3.If(att[w] > 0, self.val1_f[w](c, b, rr), self.val0_f[w](c, b, rr)) \
                if not self.t.vofa else self.val0_f[w](c, b, rr)
            conds += [ph[w] == WRITTEN, node2 == node, ref2[w] == rr, att2[w] == att[w],
                      ph2[w] == z3.If(ok, PREPARED, VFAILED)]
        else:            # cas
            applied = node == ref[w]
            conds += [ph[w] == PREPARED, ref2[w] == ref[w],
                      z3.If(applied,
                            z3.And(node2 == self.child_f[w](c, b, ref[w]),
                                   ph2[w] == COMMITTED, att2[w] == att[w]),
                            z3.And(node2 == node,
                                   z3.If(att[w] < self.t.max_retries,
                                         z3.And(ph2[w] == WRITTEN, att2[w] == att[w] + 1),
                                         z3.And(ph2[w] == CFAILED, att2[w] == att[w]))))]
        return z3.And(conds)

    # -- reading a model back ---------------------------------------------------------------
    def trace(self, m: z3.ModelRef, upto: int) -> tuple[list[str], list[dict]]:
        """The action list of z3's run up to step ``upto`` (stutters dropped), and z3's
        predicted abstract state after each real action."""
        actions, predicted = [], []
        for t in range(upto):
            a = m.eval(self.act[t], model_completion=True).as_long()
            if a == 0:
                continue
            w, kind = divmod(a - 1, 3)
            name = self.t.writers[w]
            if kind == 0:
                c = m.eval(self.ch[w], model_completion=True).as_long()
                actions.append(self.t.begin(w, c))
            else:
                actions.append(f"{name}.{KINDS[kind]}")
            node = m.eval(self.node[t + 1], model_completion=True).as_long()
            predicted.append({
                "node": node,
                "phases": [m.eval(self.ph[t + 1][x], model_completion=True).as_long()
                           for x in range(self.W)],
                "attempts": [m.eval(self.att[t + 1][x], model_completion=True).as_long()
                             for x in range(self.W)],
            })
        return actions, predicted


# --------------------------------------------------------------------------------------------
# Replay


def replay(tables: LineageTables, actions: list[str], predicted: list[dict] | None,
           prop: str | None, *, unexpected: bool = False) -> None:
    """Replay z3's trace on the executable model; raise ``Z3ReplayError`` on any disagreement."""
    from icecheck.traces.execute import judge, run_actions

    model = tables.model
    run = run_actions(model, actions)
    if run.stopped is not None:
        raise Z3ReplayError(f"z3 trace {actions} does not replay: action {run.stopped + 1} "
                            f"({actions[run.stopped]}) is not enabled: {run.stop_reason}")
    for i, want in enumerate(predicted or []):
        st = run.states[i + 1]
        got_ph = [tables.phase_of(st, w) for w in range(len(tables.writers))]
        if got_ph != want["phases"]:
            raise Z3ReplayError(
                f"z3 trace {actions}: after {actions[i]} z3 predicted phases "
                f"{[PHASE_NAMES[p] for p in want['phases']]}, the model has "
                f"{[PHASE_NAMES[p] for p in got_ph]}")
        lineage = tables.lineages[want["node"]]
        want_names = [tables.writers[w] for w, _, _ in lineage]
        if tables.lineage_of(st) != want_names:
            raise Z3ReplayError(f"z3 trace {actions}: after {actions[i]} z3 predicted lineage "
                                f"{want_names}, the model has {tables.lineage_of(st)}")
        for w, want_att in enumerate(want["attempts"]):
            ws = st.writer(tables.writers[w])
            if ws.active and ws.attempt != want_att:
                raise Z3ReplayError(f"z3 trace {actions}: attempt of {ws.name} is {ws.attempt}, "
                                    f"z3 predicted {want_att}")
    j = judge(tables.cfg, model, run.final)
    if predicted:
        final = predicted[-1]["node"]
        if set(j.names) != tables.prop[final]:
            raise Z3ReplayError(f"z3 trace {actions}: z3's property table says "
                                f"{sorted(tables.prop[final])}, the model's verdict is "
                                f"{sorted(j.names)}")
    if prop is None:
        return
    names = {v.property for v in (j.unexpected if unexpected else j.violations)}
    if prop not in names:
        raise Z3ReplayError(f"z3 trace {actions} should violate {prop!r}"
                            f"{' (unexpectedly)' if unexpected else ''}, but the model's verdict "
                            f"is {sorted(j.names) or 'no violation'}")


# --------------------------------------------------------------------------------------------
# The search


def z3_search(cfg: ExploreConfig, depth: int, properties: Iterable[str] | None = None, *,
              tables: LineageTables | None = None,
              progress: Callable[[str, int, int], None] | None = None) -> Z3Result:
    """Search every run of at most ``depth`` actions for a violation of ``properties``.

    For each property: the shortest run with an unexpected violation, else the shortest with
    any violation; the trace is replayed on the executable model (``Z3ReplayError`` if it does
    not reproduce) and turned into a trace document.

    ``depth`` is at most ``MAX_DEPTH``; the encoding has ``min(depth, tables.longest_run)``
    steps (a longer run does not exist: more steps would only stutter, and cost memory and
    time per step). ``progress(stage, done, total)`` is told of each step encoded
    (``"encoding"``) and of each depth the search for a property's shortest run tries (the
    property's name): the steps of a long search, for a terminal's progress line.
    """
    from icecheck.traces.execute import build_trace

    started = time.perf_counter()
    props = tuple(properties) if properties else PROPERTIES
    for p in props:
        if p not in PROPERTIES:
            raise ValueError(f"unknown property {p!r}; expected one of {', '.join(PROPERTIES)}")
    if not 0 <= depth <= MAX_DEPTH:
        raise ValueError(f"depth must be from 0 to {MAX_DEPTH}, not {depth}")
    tables = tables or LineageTables(cfg)
    t1 = time.perf_counter()
    asked, depth = depth, min(depth, tables.longest_run)
    enc = Encoding(tables, depth, progress)
    result = Z3Result(cfg, asked, searched=props, nodes=len(tables.lineages),
                      model_runs=tables.runs, facts=tables.facts,
                      table_seconds=t1 - started, encoded_depth=depth)
    s = enc.solver
    any_found = False
    any_unexpected = False
    for p in props:
        found = None
        for want_unexpected in (True, False):
            f = enc.unexp_f[p] if want_unexpected else enc.prop_f[p]
            if progress is not None:
                progress(p, depth, depth)
            if s.check(f(enc.node[depth])) != z3.sat:
                continue
            # the shortest run: the first step at which the property holds
            for d in range(depth + 1):
                if progress is not None:
                    progress(p, d, depth)
                if s.check(f(enc.node[d])) == z3.sat:
                    actions, predicted = enc.trace(s.model(), d)
                    replay(tables, actions, predicted, p, unexpected=want_unexpected)
                    found = (actions, want_unexpected)
                    break
            else:
                raise Z3ReplayError(f"z3: {p} reachable at depth {depth} but at no step")
            break
        if found is None:
            continue
        actions, _ = found
        any_found = True
        doc = build_trace(cfg, actions, property=p, trace_id=f"z3-{p}",
                          title=f"z3: {p} ({cfg.name})",
                          found_by={"engine": "z3", "depth": depth, "actions": len(actions)})
        result.violations.add(p)
        result.traces[p] = doc
        result.actions[p] = actions
        if doc["kind"] == "violation":
            result.unexpected.add(p)
            any_unexpected = True
            if (doc.get("expectation") or {}).get("status") == "known_finding":
                result.known.add(p)
    result.unsat_within_bounds = not any_found
    result.unexpected_unsat = not any_unexpected
    result.seconds = time.perf_counter() - started
    result.solve_seconds = result.seconds - result.table_seconds
    return result


def cross_check(cfg: ExploreConfig, runs: int = 50, seed: int = 0, *,
                tables: LineageTables | None = None) -> int:
    """Differential test of the encoding against the executable model: run ``runs`` random
    complete runs of the model, pin z3's action variables to each, and require z3 to accept
    the run and predict every phase, attempt, lineage and the final verdict. Returns the
    number of runs checked; raises ``Z3ReplayError`` on the first disagreement."""
    import random

    from icecheck.traces.execute import model_for

    rng = random.Random(seed)
    tables = tables or LineageTables(cfg)
    model = model_for(cfg)
    codes = {}
    for w, name in enumerate(tables.writers):
        for k, kind in enumerate(KINDS):
            codes[(name, kind)] = 1 + 3 * w + k
    checked = 0
    encs: dict[int, Encoding] = {}
    for _ in range(runs):
        state, actions = model.initial(), []
        while True:
            enabled = model.actions(state)
            if not enabled:
                break
            a = rng.choice(enabled)
            actions.append(str(a))
            state = model.step(state, a)
        depth = len(actions)
        enc = encs.setdefault(depth, Encoding(tables, depth))
        pins = []
        for t, text in enumerate(actions):
            a = Action.parse(text)
            pins.append(enc.act[t] == codes[(a.writer, a.kind)])
            if a.kind == msys.BEGIN:
                pins.append(enc.ch[tables.writers.index(a.writer)] == a.choice)
        if enc.solver.check(pins) != z3.sat:
            raise Z3ReplayError(f"z3 rejects the model's run {actions}")
        got, predicted = enc.trace(enc.solver.model(), depth)
        if got != actions:
            raise Z3ReplayError(f"z3 read back {got} for {actions}")
        replay(tables, actions, predicted, None)
        checked += 1
    return checked
