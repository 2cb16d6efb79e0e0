"""The exhaustive explicit-state checker: BFS (shortest counterexamples) and DFS over the model's
own ``actions`` and ``step`` (there is no second model).

* states are deduplicated by canonical fingerprints (``engines/symmetry.py``: blake2b of an
  injective encoding, minimized over the writer-symmetry group when symmetry is on);
* partial-order reduction (``engines/por.py``) skips transitions that only re-order commuting
  actions (sleep sets: no reachable state lost), and BFS explores a doomed swap alone (a
  persistent set: it drops states where a lost race waits to be noticed, never a verdict, a
  shortest counterexample's length or a final outcome);
* the properties are evaluated at every distinct reached state (``traces.execute.judge``:
  ``properties.evaluate`` + ``split_expected`` + known findings): a must-hold violation is a
  violation, an allowed one is recorded, a known finding is a violation tagged ``known``;
* BFS processes one level at a time, in parallel (``workers`` processes). A state lives in the
  process that generated it (after one level is handed out by fingerprint, ``_balance``), so
  only fingerprints and action labels cross process boundaries;
  the master deduplicates a level's edges in a fixed order (parent fingerprint, then action), so
  the states, their parents, counts and verdicts do not depend on the number of workers;
* each violation comes with a trace in the corpus format (``traces.execute.build_trace``,
  canonicalized): with BFS, the path to the first state violating it (shortest).

See docs/exhaustive.md for the design and the soundness argument.
"""

from __future__ import annotations

import gc
import itertools
import os
import signal
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Callable

from icecheck.engines.config import ExploreConfig
from icecheck.engines.por import applies as por_applies, independent, sleep_after
from icecheck.engines.symmetry import Fingerprinter, capped, check_bounds, read_whole
from icecheck.models import system as S
from icecheck.models.commands import PlanError
from icecheck.models.metadata import TableMetadata
from icecheck.models.system import Action, Model, State
from icecheck.scenarios.errors import InputError

_NONE: frozenset = frozenset()   # no action asleep

BFS, DFS = "bfs", "dfs"
SPARK_BFS = "spark-bfs"            # engines/spark_bfs.py
SHORTEST = (BFS, SPARK_BFS)        # engines whose counterexamples are shortest


@dataclass(frozen=True)
class Bounds:
    """Search bounds beyond the configuration's own (writers, ops, keys, retries)."""

    max_depth: int | None = None
    max_files: int | None = None     # data + delete files in the store (written, committed or not)
    max_states: int | None = None
    max_memory_mb: int | None = None  # resident MB of the search's processes (checkpoint.py)


def with_retries(cfg: ExploreConfig, retries: int | None) -> ExploreConfig:
    """``cfg`` with the table property commit.retry.num-retries set (None: keep the default)."""
    if retries is None:
        return cfg
    props = dict(cfg.properties)
    props["commit.retry.num-retries"] = str(retries)
    return replace(cfg, properties=tuple(sorted(props.items())))


@dataclass
class Violation:
    property: str
    unexpected: bool           # must hold (or a known finding)
    known: bool                # a recorded known finding (expectations.yaml)
    depth: int                 # length of the counterexample found (BFS: the shortest)
    states_before: int         # distinct states when it was found
    seconds: float             # since the search started
    actions: list[str]
    trace: dict | None = None

    def as_json(self) -> dict:
        return {"property": self.property, "unexpected": self.unexpected,
                "known_finding": self.known, "length": self.depth,
                "found_after_states": self.states_before,
                "found_after_s": round(self.seconds, 3), "actions": self.actions,
                "trace_id": self.trace["id"] if self.trace else None,
                "trace_actions": self.trace["actions"] if self.trace else None,
                "explanation": self.trace["explanation"] if self.trace else None}


@dataclass
class Result:
    config: ExploreConfig
    engine: str
    symmetry: bool
    por: bool
    workers: int
    bounds: Bounds
    states: int = 0
    transitions: int = 0           # explored (after POR)
    enabled_transitions: int = 0   # enabled at expanded states (before POR)
    max_depth: int = 0
    seconds: float = 0.0
    complete: bool = False         # exhausted within the bounds
    stopped: str | None = None     # "time budget" | "interrupted" | "max states" | ...
    cut: int = 0                   # states not expanded because of a bound
    final_states: int = 0
    violations: dict[str, Violation] = field(default_factory=dict)   # unexpected (incl. known)
    allowed: dict[str, Violation] = field(default_factory=dict)
    allowed_counts: Counter = field(default_factory=Counter)
    violation_counts: Counter = field(default_factory=Counter)
    coverage: Counter = field(default_factory=Counter)
    reached: Counter = field(default_factory=Counter)
    outcomes: set = field(default_factory=set)     # final-state outcome signatures
    symmetry_classes: list = field(default_factory=list)
    notes: list = field(default_factory=list)      # what the user should know about the run
    parts: int = 1     # the searches it sums: >1 for a split search (engines/split.py)
    # a split search's parts, in order: {"part", "states", "seconds", "complete", "stopped"}
    part_results: list = field(default_factory=list)

    def note_symmetry(self, note: str) -> None:
        """The fingerprinter turned symmetry off (a group too large to enumerate)."""
        if note:
            self.symmetry = False
            self.notes.append(note)

    @property
    def states_per_s(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0

    @property
    def failed(self) -> bool:
        """A must-hold property is violated (known findings included; ``failed_new`` excepts
        them: every command exits 1 on ``failed_new``, or on ``failed`` with --strict)."""
        return bool(self.violations)

    @property
    def failed_new(self) -> bool:
        return any(not v.known for v in self.violations.values())

    @property
    def violated(self) -> set[str]:
        return set(self.violations)

    def first(self, prop: str) -> Violation | None:
        return self.violations.get(prop) or self.allowed.get(prop)

    def as_json(self) -> dict:
        return {
            "config": self.config.name, "profile": self.config.profile,
            "catalog": self.config.catalog, "format_version": self.config.format_version,
            "engine": self.engine, "symmetry": self.symmetry, "por": self.por,
            "workers": self.workers,
            "bounds": {"max_depth": self.bounds.max_depth, "max_files": self.bounds.max_files,
                       "max_states": self.bounds.max_states,
                       "max_memory_mb": self.bounds.max_memory_mb},
            "symmetry_classes": [[f"w{i}" for i in c] for c in self.symmetry_classes],
            "notes": list(self.notes),
            "parts": self.parts,
            **({"part_results": self.part_results} if self.part_results else {}),
            "states": self.states, "transitions": self.transitions,
            "enabled_transitions": self.enabled_transitions, "max_depth": self.max_depth,
            "seconds": round(self.seconds, 3), "states_per_s": round(self.states_per_s, 1),
            "complete": self.complete, "stopped": self.stopped, "cut_by_bounds": self.cut,
            "final_states": self.final_states, "failed": self.failed,
            "failed_new": self.failed_new,
            "violations": [v.as_json() for v in self.violations.values()],
            "allowed": [dict(v.as_json(), states=self.allowed_counts[p])
                        for p, v in self.allowed.items()],
            "violating_states": dict(sorted(self.violation_counts.items())),
            "coverage": dict(sorted(self.coverage.items())),
            "reached": dict(sorted(self.reached.items())),
            "final_outcomes": sorted(repr(o) for o in self.outcomes),
        }


def _judge_key(s: State, fp: Fingerprinter) -> tuple:
    """Everything the properties and the "sometimes" events read of a state
    (``properties/history.py``, ``reachability.py``, ``integrity.py``), by *content*: the
    catalog entry, the current metadata (with it the committed lineage: what its snapshots
    reach is a function of their content, the producer being deterministic), each writer's
    finished operations and retry count, and the objects snapshot expiry deleted. What an
    in-flight writer has staged but not committed is not read, except a phantom attempt's
    operation (its snapshot can be on the lineage while the writer retries).

    Objects are keyed by their digests (``Fingerprinter.obj_digest``, cached on each object),
    so equal histories reached along different paths share one verdict (issue 13: 30,507
    evaluations instead of 62,371 with identity keys on the canonical mor-serializable
    configuration), up to the 128-bit collision the fingerprints already accept. A snapshot
    the history reads outside the current metadata (a lost commit, an expired ancestor) is
    found by ``history.py`` in whichever metadata file lists it, so then every metadata file's
    snapshots are part of the key (its last item, None otherwise)."""
    catalog = s.catalog
    store = s.store
    pointer = catalog.pointer
    # ObjectStore.__getitem__, inline (it raises KeyError for a deleted path)
    meta = store._objects[pointer] if pointer not in store._deleted else store[pointer]
    # the caches of _meta_key and _writer_key, read inline (a key is made for every state)
    got = meta.__dict__.get("_icecheck_jm")
    meta_digest, off = got if got is not None else _meta_key(meta, fp)
    writers = []
    listed = meta._by_id         # the metadata's snapshots by id (TableMetadata.snapshot)
    for w in s.writers:
        got = w.__dict__.get("_icecheck_jk")
        if got is None or got[2] is not _PART_TOKEN:
            got = _writer_key(w, fp)
        writers.append(got[0])
        sids = got[1]
        if not off:
            for sid in sids:
                if sid not in listed:
                    off = True
                    break
    extra = None
    if off:
        index: dict = {}
        for obj in s.store.archive().values():
            if type(obj) is TableMetadata:
                for snap in obj.snapshots:
                    index.setdefault(snap.snapshot_id, snap)
        extra = tuple((sid, fp.obj_digest(snap, fp.perms[0]))
                      for sid, snap in sorted(index.items()))
    return (pointer, catalog.version, meta_digest, tuple(writers), store._deleted, extra)


def _canonical_judge_key(s: State, fp: Fingerprinter) -> tuple:
    """The judge key of ``lift(p)(s)`` (``_judge_key``'s items, under ``p``), least over the
    candidates ``p`` of the writers' judged parts (their names under ``blind``, invariant
    under the group, as the fingerprint's ``candidates`` are of the whole writers'): the same
    for every state whose judged part is an image of this one's under the group, so the
    verdict memo shares it between them (``Expander.judge``). Sound because a verdict
    (properties violated, known, allowed; events reached) names no writer: the states of an
    orbit have one verdict, which symmetry reduction already relies on (docs/exhaustive.md).
    Only for a state whose history reads no snapshot outside its current metadata (whose
    ``_judge_key`` ends in None).

    Each writer's part names, one per permutation, are cached on the writer, tagged with the
    fingerprinter's token (they are of its group; a writer pickled to another process, by the
    Spark BFS, is named again there)."""
    ws = s.writers
    parts = []
    sigs = []
    bi = fp.blind.index
    for w in ws:
        wd = w.__dict__
        got = wd.get("_icecheck_jkp")
        if got is None or got[0] is not fp.token:
            got = (fp.token, [None] * fp.nperms)
            object.__setattr__(w, "_icecheck_jkp", got)
        names = got[1]
        parts.append(names)
        sig = names[bi]
        if sig is None:
            sig = names[bi] = _part_name(_writer_part(w, fp, fp.blind))
        sigs.append(sig)
    catalog = s.catalog
    pointer, version, deleted = catalog.pointer, catalog.version, s.store._deleted
    meta = s.store[pointer]
    best = None
    for p in fp.candidates_of_signatures(sigs):
        k = p.index
        named = []
        for i in p.order(len(ws)):
            name = parts[i][k]
            if name is None:
                name = parts[i][k] = _part_name(_writer_part(ws[i], fp, p))
            named.append(name)
        key = (fp.str_code(pointer, p), version, fp.obj_digest(meta, p), tuple(named),
               tuple(sorted(fp.str_code(x, p) for x in deleted)) if deleted else ())
        if best is None or key < best:
            best = key
    return best


def _writer_part(w, fp: Fingerprinter, p) -> tuple:
    """What the properties read of a writer, under the permutation ``p`` (``_writer_key``)."""
    d = fp.obj_digest
    # how many races a writer lost is read as zero or not (the ``lost_race`` event; -1 where
    # ``Model.fingerprint_writers`` merged its losses: at least one), and a
    # record's ``attempts`` as above one or not (``retry_committed``): both capped
    return (fp.str_code(w.name, p), w.attempt != 0,
            tuple(d(capped(r), p) if read_whole(r)
                  else (r.index, r.outcome, min(r.attempts, 2)) for r in w.history),
            None if w.phantom_id is None else (p.int_(w.phantom_id), d(w.operation, p)),
            # a streaming sink: whether it finished its source (properties/delivery.py judges
            # only those) and its restarts (never permuted: sinks are no writer's twin)
            None if w.sink is None else (w.phase == S.DONE, repr(w.sink.restarts)))


def _part_name(part: tuple) -> int:
    """The name of a writer's judged part (``_PART_NAMES``)."""
    name = _PART_NAMES.get(part)
    if name is None:
        if len(_PART_NAMES) >= _PART_NAMES_SIZE:
            _PART_NAMES.clear()      # an equal part gets a new name: a verdict memo miss
        name = _PART_NAMES[part] = next(_PART_COUNTER)
    return name


def _writer_key(w, fp: Fingerprinter) -> tuple:
    """(a name of what the properties read of a writer, the snapshot ids its records name,
    ``_PART_TOKEN``), cached on the writer object (identity digests do not depend on the
    fingerprinter's group). The name is an int (``_PART_NAMES``): a judge key hashes one int
    per writer, not the writer's nested part, at every state.

    Of a finished operation whose commit applied, or that was told it committed, the
    properties read everything (its snapshot, sequence number, intent, operation, base). Of
    one that did not (validation failed, nothing to do, a failed or crashed commit, an unknown
    outcome that did not apply, an unreadable file) they read only its index, outcome and
    attempts: the reachability events (``reachability.reached``) read those; the checks read
    the lineage, applied records (``History.by_snapshot``, metadata_integrity) and
    acknowledged ones (lost_write), and a message may name it, which no verdict reads. The
    races a writer lost are read as none or some, a record's attempts as one or more. So
    histories that differ only in where a failed operation started or what it planned share
    one verdict (issue 13: 3,126 evaluations instead of 9,080 on
    mor-serializable-3w2op-delete). tests/test_explicit.py judges every state of searches
    with faults, crashes, phantom failures, expiry and compaction afresh and checks that
    states of one key have one verdict."""
    got = w.__dict__.get("_icecheck_jk")
    if got is None or got[2] is not _PART_TOKEN:
        name = _part_name(_writer_part(w, fp, fp.perms[0]))
        sids = tuple(r.snapshot_id for r in w.history if r.snapshot_id is not None)
        got = (name, sids, _PART_TOKEN)
        object.__setattr__(w, "_icecheck_jk", got)
    return got


#: a writer's judge-key part -> its name: an int never reused for another part in this
#: process (names cached on writers are tagged with ``_PART_TOKEN``: a writer pickled in
#: another process, by the Spark BFS, is named again here)
_PART_NAMES: dict = {}
_PART_NAMES_SIZE = 200_000
_PART_COUNTER = itertools.count()
_PART_TOKEN = S.new_token()


def _meta_key(meta, fp: Fingerprinter) -> tuple:
    """(content digest of the metadata, is an ancestor of its current snapshot missing from
    it), cached on the metadata object."""
    got = meta.__dict__.get("_icecheck_jm")
    if got is None:
        off = False
        snap = meta.current
        while snap is not None and snap.parent_id is not None:
            snap = meta.snapshot(snap.parent_id)
            if snap is None:          # an expired ancestor
                off = True
        got = (fp.obj_digest(meta, fp.perms[0]), off)
        object.__setattr__(meta, "_icecheck_jm", got)
    return got


@dataclass
class LevelStats:
    """What expanding some states of a level adds to a ``Result`` (summed over workers).

    Transitions are first counted per set of coverage labels (``tally``: an index into
    ``label_sets``, the expander's registry; a batch has a few dozen sets), and the labels
    counted once per set when the stats are read (``flush``)."""

    coverage: Counter = field(default_factory=Counter)
    enabled: int = 0
    explored: int = 0
    cut: int = 0
    finals: int = 0
    outcomes: set = field(default_factory=set)
    tally: dict = field(default_factory=dict)
    label_sets: list | None = None

    def flush(self) -> "LevelStats":
        """Count the tallied transitions' labels into ``coverage``; drop the registry (a
        flushed LevelStats travels between processes without it)."""
        cov = self.coverage
        for i, n in self.tally.items():
            for label in self.label_sets[i]:
                cov[label] += n
        self.tally, self.label_sets = {}, None
        return self

    def as_dict(self) -> dict:
        self.flush()
        return {"coverage": self.coverage, "enabled": self.enabled, "explored": self.explored,
                "cut": self.cut, "finals": self.finals, "outcomes": self.outcomes}

    def add_to(self, res: "Result") -> None:
        self.flush()
        res.coverage.update(self.coverage)
        res.enabled_transitions += self.enabled
        res.transitions += self.explored
        res.cut += self.cut
        res.final_states += self.finals
        res.outcomes |= self.outcomes


# -- the per-process worker ---------------------------------------------------------------------
#: Entries of the coverage labels' and the pruned sets' memos (``Expander``) before each is
#: emptied (a module constant, not a class attribute: the compiled Expander's type is immutable).
TRANSITION_MEMO = 50_000


class Expander:
    """Expands states and judges them; holds the states it generated (one BFS level)."""

    def __init__(self, cfg: ExploreConfig, symmetry: bool, por: bool, bounds: Bounds,
                 evaluate: bool = True, merge_losses: bool = True):
        from icecheck.traces.execute import model_for
        self.cfg, self.por, self.bounds, self.evaluate = cfg, por, bounds, evaluate
        from icecheck.engines import por as por_
        self.ample = por and por_.DOOMED_SWAPS        # doomed swaps explored alone
        #: drop each state as ``expand`` expands it: the local BFS expands each state of its
        #: level once; a Spark task may run again, and its keeper keeps them
        self.release = False
        self.model: Model = model_for(cfg)
        self.fp = Fingerprinter(cfg, symmetry)
        from icecheck.engines import symmetry as symmetry_
        if merge_losses and symmetry_.MERGE_LOSSES and self.model.merges_losses:
            # states that differ only in how many races a writer lost, where that can no
            # longer matter, share a fingerprint (``Model.fingerprint_writers``); they are
            # reached at different depths, and the breadth-first search keeps the shallowest
            self.fp.writers_of = self.model.fingerprint_writers
        self.classes = self.fp.classes
        self.outcome_classes = self.fp.writer_classes
        self.states: dict[bytes, State] = {}
        self.next: dict[bytes, State] = {}
        self.verdicts: dict[tuple, tuple] = {}
        from icecheck.properties import EvalMemo
        self.memo = EvalMemo(self.fp.content)
        self.model.content_key = self.fp.content
        self.model.interning = True     # hash-consing of what steps build (Model._intern)
        self._labels: dict = {}   # _coverage's memo
        self._label_sets: list[tuple] = []        # each distinct set of coverage labels
        self._label_ids: dict[tuple, int] = {}    # ... and its index there
        self._position = self.model._positions   # writer name -> its place (Model.step's)
        self._pruned_memo: dict = {}   # _pruned's memo
        # the symmetry order types of this level's states and of the next level's, by
        # fingerprint, when ``successors`` saw them computed (``Fingerprinter.last_order``)
        self._orders: dict[bytes, tuple] = {}
        self._next_orders: dict[bytes, tuple] = {}

    def initial(self) -> tuple[bytes, bytes]:
        s = self.model.initial()
        fp, conc = self.fingerprints(s)
        self.next = {fp: s}
        return fp, conc

    def fingerprints(self, s: State) -> tuple[bytes, bytes]:
        """(canonical fingerprint, a key of this very state among the states of its orbit).

        The second is the canonical fingerprint followed by the index of the first candidate
        permutation reaching it (``Fingerprinter.candidates``): two states of one orbit are
        equal iff it is the same. (Equal states have the same candidates in the same order.
        If s and t = lift(q)(s) both reach the least hash through the same p, then
        lift(p)(t) = lift(p)(s), and lift(p) is a bijection, so t = s.) It is only ever
        compared with the key of a state of the same canonical fingerprint (partial-order
        reduction: are two edges into one orbit edges into the same state?), and costs no
        hash of the state as it is when the identity is not a candidate (issue 13)."""
        fp = self.fp
        if not fp.symmetric:
            h = fp.under(s, fp.perms[0])
            return h, h
        best = who = None
        for p in fp.candidates(s):
            h = fp.under(s, p)
            if best is None or h < best:
                best, who = h, p.index
        return best, best + who.to_bytes(2, "little")

    def advance(self, keep: list[bytes]) -> None:
        """Start a new level: keep the generated states the master assigned to this process."""
        nxt, orders = self.next, self._next_orders
        # ``keep`` names states of ``nxt``: all of them (one worker, no state seen before) is
        # the common case, and needs no copy
        if len(keep) == len(nxt):
            self.states, self._orders = nxt, orders
        else:
            self.states = {fp: nxt[fp] for fp in keep}
            self._orders = {fp: orders[fp] for fp in keep if fp in orders}
        self.next, self._next_orders = {}, {}

    def rebuild(self, items: list[tuple[bytes, list[str]]]) -> list[bytes]:
        """Resuming a checkpoint (``engines/checkpoint.py``): rebuild the states of
        ``items`` (fingerprint, action path) as the next level; the fingerprints that did not
        come out the same (an empty list when the checkpoint fits this model)."""
        self.next, self._next_orders = {}, {}
        return self.adopt(items)

    def adopt(self, items: list[tuple[bytes, list[str]]]) -> list[bytes]:
        """Take over states another worker generated (``_bfs``'s one-time balancing): rebuild
        ``items`` (fingerprint, action path) beside this worker's own next level; the
        fingerprints that did not come out the same (none, for a deterministic model)."""
        from icecheck.engines.checkpoint import rebuild_states
        got, bad = rebuild_states(self.model, self.fingerprints, items)
        self.next.update(got)
        return bad

    def judge(self, s: State) -> tuple:
        """(unexpected props, known props, allowed props, reached events), memoised by what
        the properties read (``_judge_key``, by content): many states differ only in what an
        in-flight writer is doing, or reach the same history along different paths, and share
        one verdict; and, on a miss, by the key's canonical form (``_canonical_judge_key``):
        a history that is another's with interchangeable writers renamed shares its verdict
        (issue 13: on the first 100,000 states of canonical mor-snapshot, 1,504 evaluations
        instead of 2,439)."""
        if not self.evaluate:
            return (), (), (), ()
        fp = self.fp
        key = _judge_key(s, fp)
        got = self.verdicts.get(key)
        if got is None:
            # a key not seen: its canonical form under writer symmetry (the history of a
            # state judged before, with interchangeable writers renamed, has its verdict),
            # made only here, where it can save an evaluation (made for every state it cost
            # more than it saved: docs/exhaustive.md, eleventh round)
            canonical = (_canonical_judge_key(s, fp) if fp.symmetric and key[-1] is None
                         else None)
            if canonical is not None:
                got = self.verdicts.get(canonical)
            if got is None:
                got = self._judge(s)
                if canonical is not None:
                    self.verdicts[canonical] = got
            self.verdicts[key] = got
        return got

    def _judge(self, s: State) -> tuple:
        from icecheck.traces.execute import judge, reached
        j = judge(self.cfg, self.model, s, self.memo)
        unexpected = tuple(sorted({v.property for v in j.unexpected}))
        found = j.known_findings()
        known = tuple(p for p in unexpected if p in found)
        allowed = tuple(sorted({v.property for v, _ in j.expected} - set(unexpected)))
        events = tuple(sorted(reached(self.model, s, self.cfg.key, self.memo)))
        return unexpected, known, allowed, events

    def outcome(self, s: State) -> tuple:
        """A final state's outcome, normalized over symmetric writers."""
        per = {w.slot: tuple(h.outcome for h in w.history) for w in s.writers}
        return tuple(tuple(sorted(per[i] for i in c)) for c in self.outcome_classes)

    def cut(self, s: State, depth: int) -> bool:
        b = self.bounds
        if b.max_depth is not None and depth >= b.max_depth:
            return True
        if b.max_files is not None:
            n = sum(1 for k, v in s.store._objects.items()
                    if type(v).__name__ in ("DataFile", "DeleteFile"))
            if n > b.max_files:
                return True
        return False

    def expand(self, items: list[tuple[bytes, frozenset | None]], depth: int) -> dict:
        """Judge and expand ``items`` (fingerprint, pruned action labels) of this level."""
        judged, edges = [], []
        stats = self.level_stats()
        orders = self._orders
        # a state expanded is a state no longer held (``release``): a level's states go as
        # the next level's come, so the two widest levels are not both held whole at its end
        take = self.states.pop if self.release else self.states.__getitem__
        for fp, pruned in items:
            s = take(fp)
            judged.append((fp, self.judge(s)))
            for fp2, label, conc2, p2, s2 in self.successors(s, pruned, depth, stats,
                                                              orders.get(fp), self._next_orders):
                if fp2 not in self.next:
                    self.next[fp2] = s2
                edges.append((fp2, fp, label, conc2, p2))
        return {"judged": judged, "edges": edges, **stats.as_dict()}

    def successors(self, s: State, pruned: frozenset | None, depth: int,
                   stats: "LevelStats", order: tuple | None = None,
                   orders: dict | None = None) -> list[tuple]:
        """The explored edges out of ``s`` at ``depth``, in action order: (canonical
        fingerprint, action label, concrete fingerprint, labels POR prunes after it, state).
        Every engine (local BFS, ``engines/spark_bfs.py``) expands states through this.

        ``order``: the symmetry order type of ``s`` when known (``Fingerprinter.writer_ranks``);
        ``orders``: where to keep each new fingerprint's first successor's order type, which
        the fingerprint just computed (``expand`` keeps that successor as the state)."""
        model = self.model
        parts = model.action_parts(s)      # each writer's enabled actions, in slot order
        if not any(parts):
            stats.finals += 1
            stats.outcomes.add(self.outcome(s))
            return []
        if self.cut(s, depth):
            stats.cut += 1
            return []
        out = []
        fpr = self.fp
        por = self.por
        doomed = -1
        if por:
            ranks = fpr.writer_ranks(s, order)
            pruned = pruned or _NONE
            if self.ample:
                doomed = self._doomed(s, parts)
            if not fpr.symmetric:      # no order type to keep (``candidates``)
                orders = None
            # the ids of the writers' enabled actions: a successor's are the same but for
            # its stepping writer's (``_pruned``'s memo key)
            ids = list(map(id, parts))
        else:
            orders = None
        step, coverage, fingerprints = model.step, self._coverage, self.fingerprints
        tally = stats.tally
        enabled = explored = 0
        for i, part in enumerate(parts):
            enabled += len(part)
            if doomed >= 0 and i != doomed:
                continue
            for a in part:
                label = str(a)
                if doomed < 0 and pruned and label in pruned:
                    continue
                s2 = step(s, a)
                explored += 1
                coverage(tally, s, s2, a, i)
                fp2, conc2 = fingerprints(s2)
                if orders is not None and fp2 not in orders:
                    orders[fp2] = fpr.last_order
                if doomed >= 0:
                    p2 = self._kept_asleep(a, pruned)
                else:
                    p2 = self._pruned(a, s2, ranks, pruned, ids, i) if por else _NONE
                out.append((fp2, label, conc2, p2, s2))
        stats.enabled += enabled
        stats.explored += explored
        return out

    def _doomed(self, s: State, parts: list) -> int:
        """The position of the first writer whose one enabled step is a swap that loses its
        race whatever the others do first (``Model.doomed_swap``), or -1: at such a state the
        search explores that step alone (``engines/por.py``, "Doomed swaps")."""
        model = self.model
        for i, part in enumerate(parts):
            if len(part) == 1 and part[0].kind == S.CAS and model.doomed_swap(s, s.writers[i]):
                return i
        return -1

    @staticmethod
    def _kept_asleep(a: Action, asleep: frozenset) -> frozenset:
        """The sleep set after a doomed swap ``a`` explored alone: what was asleep and is
        independent of it (nothing else was explored here to put to sleep)."""
        if not asleep:
            return _NONE
        return frozenset(label for label in asleep if independent(Action.parse(label), a))

    def _pruned(self, a: Action, s2: State, ranks: dict, asleep: frozenset, ids: list,
                i: int) -> frozenset:
        """The sleep set of ``s2`` along the edge ``a`` of the writer at position ``i`` from a
        state whose writers rank ``ranks``, whose sleep set is ``asleep`` and whose writers'
        enabled actions have the ids ``ids`` (``por.sleep_after``), memoised by the identity
        of ``a``, of the ranks (one dict per order type) and of each writer's enabled actions
        in ``s2`` (tuples the model memoises and keeps for its lifetime:
        ``Model.writer_actions``; only the stepping writer's can differ from ``ids``), whose
        concatenation is ``model.actions(s2)``, and by ``asleep`` (each of its actions is
        still enabled in ``s2``: it is independent of ``a``, so of another writer, whose
        enabled actions ``a`` does not change)."""
        model = self.model
        w = s2.writers[i]
        # Model.writer_actions's cache, read inline (a state's writers were stepped by it)
        wd = w.__dict__
        got = wd.get("_icecheck_acts")
        mine = got[1] if got is not None and got[0] is model._actions_tag \
            else model.writer_actions(s2, w)
        key = (id(a), id(ranks), *ids[:i], id(mine), *ids[i + 1:], asleep)
        got = self._pruned_memo.get(key)
        if got is None:
            if len(self._pruned_memo) >= TRANSITION_MEMO:
                self._pruned_memo.clear()
            enabled = model.actions(s2)
            by_label = {str(x): x for x in enabled}
            got = self._pruned_memo[key] = sleep_after(a, enabled, ranks, asleep, by_label.get)
        return got

    def level_stats(self) -> LevelStats:
        """An empty ``LevelStats`` that tallies this expander's coverage label sets."""
        return LevelStats(label_sets=self._label_sets)

    def _coverage(self, tally: dict, s: State, s2: State, a: Action, i: int = -1) -> None:
        """Tally the transition's coverage labels (``LevelStats.tally``): a function of the
        action's kind and the stepping writer before and after, memoised by their identity
        (the step memo shares writer objects; the entry keeps them alive, so their ids are
        not reused); each distinct set of labels is registered once, by an index. ``i``: the
        stepping writer's position, when the caller knows it."""
        if i < 0:
            i = self._position[a.writer]         # a state keeps its writers in slot order
        w1, w2 = s.writers[i], s2.writers[i]
        key = (id(w1), id(w2), a.kind)
        got = self._labels.get(key)
        if got is None:
            if len(self._labels) >= TRANSITION_MEMO:
                self._labels.clear()
            labels = tuple(self._labels_of(w1, w2, a))
            lid = self._label_ids.get(labels)
            if lid is None:
                lid = self._label_ids[labels] = len(self._label_sets)
                self._label_sets.append(labels)
            got = self._labels[key] = (w1, w2, lid)
        lid = got[2]
        tally[lid] = tally.get(lid, 0) + 1

    @staticmethod
    def _labels_of(w1, w2, a: Action) -> list[str]:
        """The coverage labels of one transition of writer w1 -> w2 by an action of ``a.kind``."""
        out = [f"action {a.kind}"]
        finished = len(w2.history) > len(w1.history)
        rec = w2.history[-1] if finished else None
        if a.kind == S.BEGIN:
            out.append("begin: " + ("noop (nothing to change)"
                                    if finished and rec.outcome == S.NOOP else "planned"))
        elif a.kind == S.REFRESH:
            if finished and rec.outcome == S.VALIDATION_FAILED:
                out.append(f"validation failed: {rec.check}")
            elif w2.phase == S.PREPARED:
                v = w1.operation.validations
                if v.validate_on_first_attempt or w1.attempt > 0:
                    names = v.enabled() or ["(no validation enabled)"]
                    for n in names:
                        out.append(f"validation passed: {n.split('(')[0]}")
                else:
                    out.append("validation skipped (first attempt)")
        elif a.kind in (S.CAS, S.CAS_REPLY_LOST, S.CAS_NOT_APPLIED):
            if finished:
                label = rec.outcome + (" (applied)" if rec.outcome == S.COMMIT_UNKNOWN
                                       and rec.applied else "")
                out.append(f"commit: {label}")
            else:
                out.append(f"commit: lost race, retry {w2.attempt}")
        elif a.kind == S.CRASH:
            out.append(f"crash while {w1.phase}")
        return out


# -- the garbage collector ----------------------------------------------------------------------
#: Allocations between young collections during a search (CPython's default is 700).
GC_THRESHOLD = 100_000
#: Objects already frozen when this module was imported, which are the interpreter's, not a
#: caller's: CPython 3.12.1 starts with 375 in the permanent generation (3.11 and 3.13 with
#: none), and a search that took them for a caller's never froze (``few_collections``).
FROZEN_AT_IMPORT = gc.get_freeze_count()


class _Heap:
    """What a search tells the garbage collector (``few_collections``)."""

    def __init__(self, freezing: bool):
        self.freezing = freezing

    def settle(self) -> None:
        """Everything alive now stays out of the collector's way (``gc.freeze``): called
        between batches of a search, whose frontier states and memoised objects are all
        reachable (none of it is cyclic garbage)."""
        if self.freezing:
            gc.freeze()


@contextmanager
def few_collections():
    """Run a search with rare cyclic garbage collections (issue 13). A search keeps every
    state of its frontier and every memoised object alive, so each collection traverses a heap
    that only grows, and none of it is garbage: with CPython's default thresholds the
    collector took about a fifth of a search's time. What the model creates and drops is freed
    by reference counting as before; only reference cycles wait longer (for 100,000
    allocations instead of 700).

    Even so, each young object the search keeps was traversed once: 7-8% of a search's time
    (0.72 s of 9.3 s on the canonical configuration's first 82,661 states, measured with
    ``gc.callbacks``), though no collection during a search found any garbage. So the yielded
    ``_Heap`` also freezes what is alive between batches (``_Heap.settle``): frozen objects
    are never traversed, and the ones a batch makes and drops are freed by reference counting
    as before. At the end everything frozen is unfrozen (a later collection can reclaim any
    cycle then). When the process has frozen objects of its own (more than it had when this
    module was imported, ``FROZEN_AT_IMPORT``), the search leaves them alone and does not
    freeze; objects frozen before that import are taken for the interpreter's and unfrozen
    with the search's (``gc.unfreeze`` moves them all to the oldest generation, which only
    makes a later full collection traverse them). The previous thresholds come back after
    the search."""
    old = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, 50, 100)
    heap = _Heap(gc.get_freeze_count() <= FROZEN_AT_IMPORT)
    try:
        yield heap
    finally:
        if heap.freezing:
            gc.unfreeze()
        gc.set_threshold(*old)


# -- worker processes ---------------------------------------------------------------------------
class _Refused:
    """What a worker sends back instead of a result when a command its configuration names is
    refused as it begins (``models.commands.PlanError``): the parent raises it as an
    ``InputError`` (``_refused``), as the in-process search does."""

    def __init__(self, message: str):
        self.message = message


def _refused(e) -> InputError:
    """A begin step the engine refuses outright (a PlanError: the job could never start, e.g.
    a Flink upsert sink whose partition column is not an equality field) stops no search
    silently and prints no traceback: it is an error in the configuration (exit 2)."""
    return InputError(f"a command of this configuration cannot run: {e}", "the configuration")


def _worker_main(conn, parent, cfg, symmetry, por, bounds, evaluate):
    """A BFS worker: expands what its parent sends until told to stop, or until the parent is
    gone (``engines/lifetime.py``: it never outlives a killed search; Ctrl-C is the
    parent's to handle, so SIGINT is ignored here)."""
    from icecheck.engines.lifetime import die_with_parent
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)
    ex = Expander(cfg, symmetry, por, bounds, evaluate)
    ex.release = True
    with few_collections() as heap:            # a process of its own: its own collector
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):        # the parent closed its end: nothing to do
                return
            op = msg[0]
            if op == "expand":
                try:
                    got = ex.expand(msg[1], msg[2])
                except PlanError as e:
                    got = _Refused(str(e))
                conn.send(got)
                heap.settle()
            elif op == "advance":
                ex.advance(msg[1])
                conn.send(None)
            elif op == "rebuild":
                conn.send(ex.rebuild(msg[1]))
            elif op == "adopt":
                conn.send(ex.adopt(msg[1]))
            elif op == "initial":
                conn.send(ex.initial())
            elif op == "stop":
                conn.close()
                return


class _Local:
    """The in-process pool (one worker)."""

    def __init__(self, *args):
        self.ex = Expander(*args)
        self.ex.release = True

    def call(self, op, *args):
        return getattr(self.ex, op)(*args)


class _Remote:
    def __init__(self, ctx, *args):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, os.getpid(), *args),
                                daemon=True)
        self.proc.start()
        child.close()

    def send(self, op, *args):
        self.conn.send((op, *args))

    def recv(self):
        got = self.conn.recv()
        if type(got) is _Refused:
            raise _refused(got.message)
        return got

    def ask_stop(self):
        try:
            self.conn.send(("stop",))
        except (OSError, BrokenPipeError):
            pass


def _stop_pool(pool: list[_Remote]) -> None:
    """Ask every worker to stop, then wait for them together (a worker busy with a batch
    answers it first), terminating any that did not end (``engines/lifetime.stop_all``):
    none outlives the search, even when a second Ctrl-C interrupts the wait."""
    from icecheck.engines.lifetime import stop_all
    try:
        for r in pool:
            r.ask_stop()
    finally:
        stop_all([r.proc for r in pool])


# -- the search ---------------------------------------------------------------------------------
Progress = Callable[[dict], None]


def search(cfg: ExploreConfig, *, engine: str = BFS, symmetry: bool = True, por: bool = True,
           workers: int = 1, bounds: Bounds = Bounds(), time_budget: float | None = None,
           progress: Progress | None = None, traces: bool = True,
           stop_on: frozenset[str] | None = None, evaluate: bool = True,
           checkpoint=None) -> Result:
    """Explore every reachable state of ``cfg`` within ``bounds``.

    ``stop_on``: stop (BFS: at the end of the level) once every property in it was found
    (violated or allowed). ``traces``: build a corpus-format trace per violated property.
    A KeyboardInterrupt stops the search and returns the partial result (``stopped``).
    ``checkpoint``: an ``engines.checkpoint.Checkpointer`` (BFS only): write checkpoints, and
    first resume the one it holds when it was made with ``resume``; raises ``CheckpointError``
    for a checkpoint that is corrupt or of another search. ``bounds.max_memory_mb`` stops the
    search (``stopped == "memory bound"``) when its processes hold more resident memory.
    """
    por = por and por_applies(cfg)
    if symmetry:
        check_bounds(cfg)
    elapsed = 0.0
    if checkpoint is not None:
        if engine != BFS:
            raise ValueError(f"checkpoints are written by the bfs engine, not {engine!r}")
        from icecheck.engines.checkpoint import identity
        restored = checkpoint.prepare(identity(cfg, symmetry, por, bounds, evaluate))
        elapsed = restored.elapsed if restored is not None else 0.0
    now = time.monotonic()
    start = now - elapsed          # a resumed search's times count from its first start
    deadline = now + time_budget if time_budget is not None else None
    if engine not in (BFS, DFS):
        raise ValueError(f"unknown engine {engine!r}")
    with few_collections() as heap:
        try:
            if engine == BFS:
                res = _bfs(cfg, symmetry, por, max(1, workers), bounds, start, deadline,
                           progress, stop_on, evaluate, checkpoint, heap)
            else:
                res = _dfs(cfg, symmetry, por, bounds, start, deadline, progress, stop_on,
                           evaluate, heap)
        except PlanError as e:
            raise _refused(e) from None
    res.seconds = time.monotonic() - start
    res.notes.extend(n for n in (cfg.isolation_note, cfg.mode_note) if n)
    from icecheck.compiled import active
    if active():
        res.notes.append("compiled build: the model, the properties and this search ran "
                         "compiled (ICECHECK_COMPILED=1, icecheck/compiled.py)")
    if traces:
        attach_traces(res)
    return res


class _Recorder:
    """Folds judgements into the result (first occurrence per property)."""

    def __init__(self, res: Result, start: float):
        self.res, self.start = res, start

    def judged(self, items: list[tuple[bytes, tuple]], depth: int,
               path: Callable[[bytes], list[str]]) -> None:
        """Fold the verdicts of ``items`` ((fingerprint, verdict), in search order) at
        ``depth``; ``path(fp)`` gives a state's actions (asked at a property's first
        occurrence only). The counters are summed per distinct verdict (a level of thousands
        of states has a few dozen), the first occurrences found in order."""
        res = self.res
        tally: dict = {}
        for _, verdict in items:
            tally[verdict] = tally.get(verdict, 0) + 1
        for (unexpected, _, allowed, events), n in tally.items():
            for e in events:
                res.reached[e] += n
            for p in unexpected:
                res.violation_counts[p] += n
            for p in allowed:
                res.allowed_counts[p] += n
        for fp, (unexpected, known, allowed, _) in items:
            for p in unexpected:
                if p not in res.violations:
                    res.violations[p] = Violation(p, True, p in known, depth, res.states,
                                                  time.monotonic() - self.start, path(fp))
            for p in allowed:
                if p not in res.allowed:
                    res.allowed[p] = Violation(p, False, False, depth, res.states,
                                               time.monotonic() - self.start, path(fp))


def _bfs(cfg, symmetry, por, workers, bounds, start, deadline, progress, stop_on, evaluate,
         ck=None, heap: _Heap | None = None):
    res = Result(cfg, BFS, symmetry, por, workers, bounds)
    args = (cfg, symmetry, por, bounds, evaluate)
    if workers == 1:
        pool = None
        local = _Local(*args)
        res.symmetry_classes = local.ex.classes
        res.note_symmetry(local.ex.fp.note)
    else:
        import multiprocessing as mp
        ctx = mp.get_context("fork" if hasattr(os, "fork") else "spawn")
        pool = []
        try:
            for _ in range(workers):
                pool.append(_Remote(ctx, *args))
        except BaseException:          # Ctrl-C while they start: none is left behind
            _stop_pool(pool)
            raise
        fp = Fingerprinter(cfg, symmetry)
        res.symmetry_classes = fp.classes
        res.note_symmetry(fp.note)

    def broadcast(op, per_worker_args):
        if pool is None:
            return [local.call(op, *per_worker_args[0])]
        for r, a in zip(pool, per_worker_args):
            r.send(op, *a)
        return [r.recv() for r in pool]

    rec = _Recorder(res, start)
    # parents: fp -> (parent fp, action label); the concrete path from the initial state
    parents: dict[bytes, tuple[bytes | None, str | None]] = {}
    path_to = _Paths(parents)

    guard = None
    if bounds.max_memory_mb is not None:
        from icecheck.engines.checkpoint import MemoryGuard
        guard = MemoryGuard(bounds.max_memory_mb, lambda: [os.getpid()] + (
            [r.proc.pid for r in pool] if pool is not None else []))
    expanded = 0
    try:
        if ck is not None and ck.restored is not None:
            frontier, depth = _resume(ck.restored, res, parents, workers, broadcast, path_to)
            res.notes.append(ck.resumed_note())
        else:
            if pool is None:
                fp0, _ = local.call("initial")
            else:
                fp0, _ = broadcast("initial", [()] * workers)[0]
            parents[fp0] = (None, None)
            res.states = 1
            # frontier: [(fp, owner, pruned)], sorted by fp
            frontier = [(fp0, 0, frozenset())]
            broadcast("advance", [([fp0] if k == 0 else [],) for k in range(workers)])
            depth = 0
        batch = 128
        # several workers: a state is expanded by the worker that generated it, so every
        # state descends from the initial state's worker until one level is handed out
        balanced = ck is not None and ck.restored is not None   # a resume hands out its own
        while frontier:
            res.max_depth = depth
            if ck is not None:     # a level boundary: the only point a checkpoint describes
                ck.level_start(res, depth, frontier, parents, time.monotonic() - start)
            by_owner: list[list] = [[] for _ in range(workers)]
            for fp, owner, pruned in frontier:
                by_owner[owner].append((fp, pruned))
            # the frontier's order, to merge several workers' answers in
            order = {fp: i for i, (fp, _, _) in enumerate(frontier)} if workers > 1 else None
            edges_all: list[tuple[int, list]] = []   # (owner, edges)
            judged_all: list = []
            pos = [0] * workers
            while any(pos[k] < len(by_owner[k]) for k in range(workers)):
                if deadline is not None and time.monotonic() >= deadline:
                    res.stopped = "time budget"
                    raise _Stop()
                reqs = [(by_owner[k][pos[k]:pos[k] + batch], depth) for k in range(workers)]
                for k in range(workers):
                    pos[k] += batch
                outs = broadcast("expand", reqs)
                if heap is not None:
                    heap.settle()
                for k, o in enumerate(outs):
                    judged_all.extend(o["judged"])
                    edges_all.append((k, o["edges"]))
                    res.coverage.update(o["coverage"])
                    res.enabled_transitions += o["enabled"]
                    res.transitions += o["explored"]
                    res.cut += o["cut"]
                    res.final_states += o["finals"]
                    res.outcomes |= o["outcomes"]
                if guard is not None:
                    expanded += sum(len(r[0]) for r in reqs)
                    if guard.check(expanded) is not None:
                        res.stopped = "memory bound"
                        res.notes.append(guard.note(expanded))
                        raise _Stop()
                if progress:
                    # "expanded": how much of this level is done (a level of millions of
                    # states takes minutes; states are counted when the level is merged)
                    progress({"states": res.states, "depth": depth,
                              "frontier": len(frontier), "transitions": res.transitions,
                              "expanded": min(sum(pos), len(frontier)),
                              "elapsed": time.monotonic() - start})
            # verdicts of this level, in frontier order (deterministic; one worker expands its
            # batches in that order, so only several workers' answers need sorting)
            if workers > 1:
                judged_all.sort(key=lambda x: order[x[0]])
            rec.judged(judged_all, depth, path_to)
            if stop_on is not None and stop_on <= (set(res.violations) | set(res.allowed)):
                res.stopped = "found"
                raise _Stop()
            # dedup the next level: edges in (parent order, action order)
            if workers == 1:
                flat = [(0, e) for _, edges in edges_all for e in edges]   # in that order
            else:
                keyed = [(order[e[1]], i, k, e) for k, edges in edges_all
                         for i, e in enumerate(edges)]
                keyed.sort(key=lambda x: (x[0], x[1]))
                flat = [(k, e) for _, _, k, e in keyed]
            new: dict[bytes, list] = {}    # fp -> [owner, conc, pruned, parent, label]
            for k, (fp2, parent, label, conc2, p2) in flat:
                if fp2 in parents:
                    continue
                got = new.get(fp2)
                if got is None:
                    new[fp2] = [k, conc2, p2, parent, label]
                elif got[2]:
                    got[2] = got[2] & p2 if conc2 == got[1] else frozenset()
            if bounds.max_states is not None and res.states + len(new) > bounds.max_states:
                res.stopped = "max states"
                res.cut += len(new)
                raise _Stop()
            for fp2, (k, _, _, parent, label) in new.items():
                parents[fp2] = (parent, label)
            res.states += len(new)
            if pool is not None and not balanced and len(new) >= BALANCE_AT * workers:
                _balance(broadcast, workers, new, path_to)
                balanced = True
            frontier = sorted((fp2, v[0], v[2]) for fp2, v in new.items())
            keep = [[] for _ in range(workers)]
            for fp2, k, _ in frontier:
                keep[k].append(fp2)
            broadcast("advance", [(keep[k],) for k in range(workers)])
            if frontier:
                depth += 1
        res.complete = True
        if ck is not None:
            ck.level_start(res, depth, [], parents, time.monotonic() - start, complete=True)
    except _Stop:
        pass
    except KeyboardInterrupt:
        res.stopped = "interrupted"
    finally:
        if pool is not None:
            _stop_pool(pool)
    if ck is not None and not res.complete:
        ck.write(parents, res)    # the start of the level it stopped in
    res._path_to = path_to  # for traces of the partial result
    return res


#: The first level with this many new states per worker is handed out by fingerprint
#: (``_balance``): before it, every state is the initial state's worker's.
BALANCE_AT = 256


def _balance(broadcast, workers: int, new: dict, path_to) -> None:
    """Hand out the next level by fingerprint: each new state goes to the worker its
    fingerprint names, which rebuilds it from its path (``Expander.adopt``) when another
    worker generated it, so the workers' subtrees from then on are about the same size.
    Without it every state descends from the initial state's worker and the others idle
    (measured: two workers took 51.9 s where one took 42.3 s). Owners decide where a state is
    expanded, never what is found: states, edges and verdicts are merged in the frontier's
    order whatever worker holds them."""
    moves: list[list] = [[] for _ in range(workers)]
    for fp2, v in new.items():
        k = int.from_bytes(fp2[:8], "big") % workers
        if k != v[0]:
            moves[k].append((fp2, path_to(fp2)))
            v[0] = k
    bad = [fp for got in broadcast("adopt", [(m,) for m in moves]) for fp in got]
    if bad:
        raise RuntimeError(f"{len(bad)} state(s) did not rebuild to their fingerprint from "
                           f"their path: the model is not deterministic")


class _Paths:
    """The concrete path (action labels) from the initial state to a fingerprint, by the BFS's
    parent pointers. An object, not a closure of ``_bfs``: the result keeps it
    (``Result._path_to``), and a compiled closure would keep all of ``_bfs``'s locals with it
    (Cython gives a function's inner functions one shared scope), the expander and every
    state of the search among them, until a full garbage collection."""

    __slots__ = ("parents",)

    def __init__(self, parents: dict):
        self.parents = parents

    def __call__(self, fp: bytes) -> list[str]:
        """The labels from the initial state to ``fp``. A path is never longer than the
        number of states, so a walk that gets longer has met a cycle of parent pointers; it
        and a parent that is no visited state (both only a damaged checkpoint could bring:
        ``engines/checkpoint.py`` refuses them on load) are a ``CheckpointError``, never an
        endless walk or a ``KeyError``."""
        parents, out = self.parents, []
        limit = len(parents)
        start = fp
        while True:
            got = parents.get(fp)
            if got is None:
                raise self._broken(start, "leads to a state that was never visited")
            parent, label = got
            if parent is None:
                return list(reversed(out))
            out.append(label)
            if len(out) > limit:
                raise self._broken(start, "goes round a cycle")
            fp = parent

    @staticmethod
    def _broken(fp: bytes, how: str):
        from icecheck.engines.checkpoint import CheckpointError
        return CheckpointError(f"the parent pointers of state {fp.hex()} {how}: a damaged "
                               "checkpoint (start over in another folder)", "--resume")


def _resume(restored, res, parents, workers, broadcast, path_to):
    """Continue from a checkpoint (``engines/checkpoint.py``): its parent pointers and
    counters, and its frontier's states rebuilt by replaying their paths in the workers (the
    owner of a state does not change what is explored, so any worker count resumes any
    checkpoint). Returns (frontier, depth)."""
    from icecheck.engines.checkpoint import CheckpointError
    parents.update(restored.parents)
    restored.apply(res, Violation)
    frontier = [(fp, i % workers, pruned) for i, (fp, pruned) in enumerate(restored.frontier)]
    per = [[] for _ in range(workers)]
    for fp, k, _ in frontier:
        path = path_to(fp)
        if len(path) != restored.depth:     # a level's states are all at its depth
            raise CheckpointError(
                f"the checkpoint in {restored.source} does not fit itself: it is at depth "
                f"{restored.depth}, but the path to a state of its frontier has {len(path)} "
                "actions (a damaged checkpoint)", "--resume")
        per[k].append((fp, path))
    bad = [fp for got in broadcast("rebuild", [(p,) for p in per]) for fp in got]
    if bad:
        raise CheckpointError(
            f"the checkpoint in {restored.source} does not fit this model: replaying the path "
            f"to {len(bad):,} frontier state(s) (e.g. {' '.join(path_to(bad[0]))}) reached "
            "another state",
            "--resume")
    broadcast("advance", [([fp for fp, _ in p],) for p in per])
    return frontier, restored.depth


class _Stop(Exception):
    pass


def _dfs(cfg, symmetry, por, bounds, start, deadline, progress, stop_on, evaluate,
         heap: _Heap | None = None):
    """Depth-first search (one process). POR with state caching: a revisited state whose stored
    pruned set is not included in the new edge's is re-expanded for the difference."""
    res = Result(cfg, DFS, symmetry, por, 1, bounds)
    # with a depth bound, no merging of states reached at different depths: the depth-first
    # search may meet the deeper one first, cut it at the bound, and skip the shallower one
    ex = Expander(cfg, symmetry, por, bounds, evaluate,
                  merge_losses=bounds.max_depth is None)
    res.symmetry_classes = ex.classes
    res.note_symmetry(ex.fp.note)
    model = ex.model
    rec = _Recorder(res, start)
    stats = ex.level_stats()     # the transitions' coverage, counted into res at the end
    s0 = model.initial()
    fp0, conc0 = ex.fingerprints(s0)
    seen: dict[bytes, tuple[bytes, frozenset]] = {fp0: (conc0, frozenset())}
    res.states = 1
    # stack entries: (state, fp, depth, actions to explore, index, the writers' ranks for POR)
    path: list[str] = []
    stack: list[list] = []

    def visit(s, fp, depth, pruned):
        verdict = ex.judge(s)
        rec.judged([(fp, verdict)], depth, lambda _: list(path))
        actions = model.actions(s)
        if not actions:
            res.final_states += 1
            res.outcomes.add(ex.outcome(s))
            return
        if ex.cut(s, depth):
            res.cut += 1
            return
        res.enabled_transitions += len(actions)
        todo = [a for a in actions if not (pruned and str(a) in pruned)]
        stack.append([s, fp, depth, todo, 0, ex.fp.writer_ranks(s) if por else None])

    guard = None
    if bounds.max_memory_mb is not None:
        from icecheck.engines.checkpoint import MemoryGuard
        guard = MemoryGuard(bounds.max_memory_mb)
    last = time.monotonic()
    try:
        visit(s0, fp0, 0, frozenset())
        while stack:
            top = stack[-1]
            s, fp, depth, todo, i, ranks = top
            if i >= len(todo):
                stack.pop()
                if path:
                    path.pop()
                continue
            top[4] = i + 1
            a = todo[i]
            s2 = model.step(s, a)
            res.transitions += 1
            ex._coverage(stats.tally, s, s2, a)
            fp2, conc2 = ex.fingerprints(s2)
            # depth-1 sleep sets (nothing inherited: a revisit re-expands only the difference)
            p2 = sleep_after(a, model.actions(s2), ranks) if por else _NONE
            old = seen.get(fp2)
            if old is not None:
                old_conc, old_pruned = old
                if not old_pruned:
                    continue
                if conc2 != old_conc:
                    p2 = frozenset()
                if old_pruned <= p2:
                    continue
                # re-expand what the first visit skipped but this edge does not allow skipping
                seen[fp2] = (old_conc, old_pruned & p2)
                redo = [b for b in model.actions(s2) if str(b) in old_pruned and str(b) not in p2]
                if redo:
                    path.append(str(a))
                    stack.append([s2, fp2, depth + 1, redo, 0, ex.fp.writer_ranks(s2)])
                continue
            seen[fp2] = (conc2, p2)
            res.states += 1
            if heap is not None and res.states % 4096 == 0:
                heap.settle()
            res.max_depth = max(res.max_depth, depth + 1)
            path.append(str(a))
            before = len(stack)
            visit(s2, fp2, depth + 1, p2)
            if len(stack) == before:
                path.pop()
            now = time.monotonic()
            if now - last > 0.2:
                last = now
                if progress:
                    progress({"states": res.states, "depth": depth + 1, "frontier": len(stack),
                              "transitions": res.transitions, "elapsed": now - start})
                if deadline is not None and now >= deadline:
                    res.stopped = "time budget"
                    break
            if bounds.max_states is not None and res.states >= bounds.max_states:
                res.stopped = "max states"
                break
            if guard is not None and guard.check(res.states) is not None:
                res.stopped = "memory bound"
                res.notes.append(guard.note(res.states))
                break
            if stop_on is not None and stop_on <= (set(res.violations) | set(res.allowed)):
                res.stopped = "found"
                break
        else:
            res.complete = True
    except KeyboardInterrupt:
        res.stopped = "interrupted"
    finally:
        res.coverage.update(stats.flush().coverage)
    return res


# -- traces -------------------------------------------------------------------------------------
def trace_for(cfg: ExploreConfig, actions: list[str], prop: str, engine: str) -> dict:
    """The corpus-format trace of ``actions`` (canonicalized: writers renamed by first action;
    writers that never act are dropped from the configuration)."""
    from icecheck.engines.hypothesis_engine import trace_name
    from icecheck.traces.canonical import canonicalize, minimize_config, writer_of
    from icecheck.traces.execute import build_trace

    renamed: dict[str, str] = {}
    c_cfg, c_acts = canonicalize(cfg, actions, renamed)
    c_cfg = minimize_config(c_cfg, c_acts, prop)
    return build_trace(
        c_cfg, c_acts, property=prop, trace_id=trace_name(c_cfg, prop),
        # the canonical configuration's label: canonicalizing renames writers, and with mixed
        # engines their profiles move with them
        title=f"{prop} under {c_cfg.profile_label} ({cfg.catalog}, v{cfg.format_version})",
        found_by={"engine": engine, "explored_config": cfg.name,
                  "search_actions": list(actions), "shortest": engine in SHORTEST,
                  "writer_of": writer_of(renamed, c_cfg)})


class TraceError(RuntimeError):
    """A violation the search found whose actions do not reproduce it on a fresh model: a
    model step that is not a function of what its memo key reads (issue 45: a crash read the
    table's head, CRASH not being in ``READS_HEAD``), or a verdict memo key that misses what a
    property reads. Reported, never a violation without a trace."""


def attach_traces(res: Result) -> None:
    """Give every violation and allowed anomaly its trace: canonical and minimal
    (``trace_for``), or, when renaming the writers or dropping idle ones changed what the
    actions do, the search's own actions on the explored configuration. Until issue 45 a
    ValueError there left the violation with no trace, which a pipeline reported as a MUST
    HOLD with an empty explanation; now a violation whose own actions do not reproduce it
    with the same kind (violation or allowed) raises ``TraceError``."""
    for v in list(res.violations.values()) + list(res.allowed.values()):
        if v.trace is not None:
            continue
        try:
            trace = trace_for(res.config, v.actions, v.property, res.engine)
        except ValueError:
            trace = None
        if trace is None or _kind_of(trace) != v.unexpected:
            trace = _raw_trace(res, v)
        v.trace = trace


def _kind_of(trace: dict) -> bool:
    """Does the trace show its property as a violation (True) or allowed (False)?"""
    from icecheck.traces import format as fmt
    return trace["kind"] == fmt.KIND_VIOLATION


def _raw_trace(res: Result, v: Violation) -> dict:
    """The trace of the search's own actions on the explored configuration (no renaming, no
    minimization), or ``TraceError`` when even they do not reproduce ``v``."""
    from icecheck.engines.hypothesis_engine import trace_name
    from icecheck.traces.execute import build_trace
    cfg = res.config
    try:
        trace = build_trace(
            cfg, v.actions, property=v.property, trace_id=trace_name(cfg, v.property),
            title=f"{v.property} under {cfg.profile_label} ({cfg.catalog}, "
                  f"v{cfg.format_version})",
            found_by={"engine": res.engine, "explored_config": cfg.name,
                      "search_actions": list(v.actions), "shortest": res.engine in SHORTEST,
                      "canonical": False,
                      "writer_of": {f"w{i}": f"w{i}" for i in range(1, len(cfg.writers) + 1)}})
    except ValueError as e:
        raise TraceError(f"the search found {v.property!r} along {v.actions}, but these "
                         f"actions do not reproduce it on a fresh model: {e}") from None
    if _kind_of(trace) != v.unexpected:
        raise TraceError(f"the search found {v.property!r} "
                         f"{'violated' if v.unexpected else 'allowed'} along {v.actions}, but "
                         f"on a fresh model these actions show it "
                         f"{'violated' if _kind_of(trace) else 'allowed'}")
    return trace


# -- searches from a given state ------------------------------------------------------------
# The explorer ("find a path to...") and the counterexample pages ("when did the anomaly become
# inevitable?") ask questions about the states reachable from ONE state of a trace, with a goal
# that is a plain predicate. They use these two functions (one per strategy) rather than their
# own loops; the model's ``actions``/``step`` and ``models.system.digest`` are the only inputs.

@dataclass
class FromState:
    """The answer of a search from a state: ``found`` (the shortest action list to a goal
    state for ``shortest_path``; whether every completion reaches the goal for ``inevitable``,
    ``None`` when a bound cut the search), ``explored`` distinct states, ``capped`` whether a
    bound (states, depth or time) cut the search."""
    found: object
    explored: int
    capped: bool


def shortest_path(model: Model, start: State, goal: Callable[[State], bool], *,
                  max_states: int = 20000, max_depth: int = 60,
                  time_budget: float | None = None,
                  avoid: Callable[[State], bool] | None = None) -> FromState:
    """Breadth-first search from ``start`` to the nearest state satisfying ``goal`` (fewest
    actions), states deduplicated by digest, never passing through a state satisfying
    ``avoid``. ``found`` is the list of actions or None. The
    optional ``time_budget`` (seconds) is for interactive callers (the explorer's server);
    tests and reports bound by ``max_states``/``max_depth`` only."""
    from collections import deque

    if goal(start):
        return FromState([], 1, False)
    deadline = time.monotonic() + time_budget if time_budget else None
    k0 = S.digest(start)
    parents: dict[str, tuple[str | None, Action | None]] = {k0: (None, None)}
    queue = deque([(start, k0, 0)])
    capped = False
    while queue:
        state, key, depth = queue.popleft()
        if depth >= max_depth:
            capped = True
            continue
        for a in model.actions(state):
            nxt = model.step(state, a)
            k = S.digest(nxt)
            if k in parents:
                continue
            parents[k] = (key, a)
            if avoid is not None and avoid(nxt):
                continue
            if goal(nxt):
                path: list[Action] = []
                cur: str | None = k
                while cur is not None:
                    cur, act = parents[cur]
                    if act is not None:
                        path.append(act)
                path.reverse()
                return FromState(path, len(parents), False)
            if len(parents) >= max_states or (deadline and time.monotonic() > deadline):
                return FromState(None, len(parents), True)
            queue.append((nxt, k, depth + 1))
    return FromState(None, len(parents), capped)


def inevitable(model: Model, start: State, goal: Callable[[State], bool], *,
               max_states: int = 20000, memo: dict[str, bool] | None = None) -> FromState:
    """Whether EVERY maximal run from ``start`` passes through a state satisfying ``goal``
    (CTL's AF goal), by depth-first search with a verdict per state digest. A run ends when no
    action is enabled; a run that revisits a state on its own path without meeting the goal
    could loop forever, so it counts as escaping. ``found`` is True/False, or None when more
    than ``max_states`` distinct states would have to be seen. ``memo`` may be shared between
    calls on states of one trace (a later state's verdict answers for an earlier one's
    successor)."""
    memo = {} if memo is None else memo
    seen_before = len(memo)
    on_path: set[str] = set()

    class _Cut(Exception):
        pass

    def visit(state: State, key: str) -> bool:
        if key in memo:
            return memo[key]
        if key in on_path:
            return False
        if goal(state):
            memo[key] = True
            return True
        if len(memo) - seen_before + len(on_path) >= max_states:
            raise _Cut
        acts = model.actions(state)
        on_path.add(key)
        verdict = bool(acts)
        for a in acts:
            nxt = model.step(state, a)
            if not visit(nxt, S.digest(nxt)):
                verdict = False
                break
        on_path.discard(key)
        memo[key] = verdict
        return verdict

    try:
        found = visit(start, S.digest(start))
    except _Cut:
        return FromState(None, len(memo) - seen_before, True)
    return FromState(found, len(memo) - seen_before, False)
