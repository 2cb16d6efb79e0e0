"""Distributed exhaustive search on PySpark (``icecheck explore --engine spark-bfs``).

A level-synchronous BFS in the manner of TLC's distributed mode: the visited fingerprints and
the frontier are partitioned across executors by fingerprint hash (``fp_partition``). Each
level

1. expands the frontier where it lives (``mapPartitions``): every task judges and expands its
   states with the very ``engines.explicit.Expander`` the local BFS uses (one per Python
   worker, so its verdict memo survives across tasks) -- the same model, the same
   fingerprints, the same partial-order reduction;

   a state travels as its *path*, the action labels that reach it from the initial state,
   and is rebuilt where it is expanded (``_Levels``): from the successor the same Python
   worker generated a level earlier when it has it, else by replaying the path through the
   model's step memo. A pickled state is about 18 KB (its whole object store) and unpickles
   into objects none of the worker's caches know (1 ms each, then every digest and memo key
   computed afresh); a path is a few labels;
2. sends each successor edge to the partition that owns its fingerprint (``reduceByKey``, with
   a map-side combine): for every fingerprint the *first* edge in the local BFS's order
   (parent fingerprint, then action order) wins, so a state's parent, its concrete
   representative and its POR pruned set are exactly the local BFS's;
3. drops the fingerprints the owning partition has seen (``zip`` of the visited partition with
   the candidate partition of the same index: no shuffle of the visited set) and adds the new
   ones; the new states (with their paths) are the next frontier, left in place.

The driver only sums per-level statistics and, for each property, keeps the least violating
fingerprint of the first level that shows it (what the local BFS records first, since it judges
a level in fingerprint order), with its path: the first edges' chain from the initial state,
so the counterexample is a shortest one, and no parent pointers need to be kept. States,
transitions, final states, verdicts, coverage and counterexamples equal the local BFS's
(``tests/test_explore_spark.py``).

``local[N]`` by default; under ``spark-submit`` its ``--master`` stands (``sweep.distributed``).
On a cluster the workers need icecheck importable (``ship_code``) and its dependencies.
"""

from __future__ import annotations

import pickle
import time
from collections import Counter

from icecheck.engines.explicit import (SPARK_BFS, Bounds, Expander, Progress,
                                       Result, Violation, _Stop)


def fp_partition(fp: bytes) -> int:
    """The partitioner of fingerprints (deterministic: not Python's salted ``hash``)."""
    return int.from_bytes(fp[:8], "big")


# -- the executor side ------------------------------------------------------------------------
class _Levels:
    """One configuration's Expander in this Python worker (reused across tasks and levels, so
    its verdict, step and digest memos survive), and the successors it generated at the last
    level it expanded, by path: the next level's states, when Spark runs their task in this
    same worker."""

    def __init__(self, spec: bytes):
        self.ex = Expander(*pickle.loads(spec))
        self.depth = -1
        self.generated: dict[tuple, object] = {}    # path -> state, of level ``depth + 1``
        self.previous: dict[tuple, object] = {}     # the same one level earlier
        self.replayed = self.reused = 0

    def start(self, depth: int) -> None:
        """Expanding level ``depth``: what was generated at ``depth - 1`` is this level."""
        if depth != self.depth:
            if depth == self.depth + 1:
                self.previous, self.generated = self.generated, {}
            else:                 # another search of the same configuration, or a retried level
                self.previous, self.generated = {}, {}
            self.depth = depth

    def states(self, items: list) -> list:
        """The states of ``items`` (fingerprint, path, pruned), in order: kept, or replayed
        together (``rebuild_states`` walks the paths as a trie, each shared prefix once)."""
        from icecheck.engines.checkpoint import rebuild_states
        out = [self.previous.get(path) for _, path, _ in items]
        missing = [(fp, list(path)) for (fp, path, _), s in zip(items, out) if s is None]
        self.reused += len(items) - len(missing)
        self.replayed += len(missing)
        if missing:
            got, bad = rebuild_states(self.ex.model, self.ex.fingerprints, missing)
            if bad:   # the model is deterministic: a replay that misses is a bug, never skipped
                raise RuntimeError(f"spark-bfs: replaying {' '.join(dict(missing)[bad[0]])} "
                                   f"did not reach the state of fingerprint {bad[0].hex()}")
            out = [s if s is not None else got[fp] for (fp, _, _), s in zip(items, out)]
        return out


_LEVELS: dict[bytes, _Levels] = {}


def _levels_of(spec: bytes) -> _Levels:
    got = _LEVELS.get(spec)
    if got is None:
        got = _LEVELS[spec] = _Levels(spec)
    return got


def _expand_partition(spec: bytes, depth: int, items):
    """Judge and expand this partition's frontier items (fingerprint, path, pruned): one
    ("S", summary) record, then ("E", (fingerprint, candidate)) per explored edge."""
    lv = _levels_of(spec)
    lv.start(depth)
    ex = lv.ex
    stats = ex.level_stats()
    firsts: dict[tuple, tuple] = {}         # (kind, property) -> (least fp, known, path)
    counts: Counter = Counter()             # (kind, property) -> states
    edges = []
    generated = lv.generated
    items = list(items)
    for (fp, path, pruned), s in zip(items, lv.states(items)):
        unexpected, known, allowed, events = ex.judge(s)
        for kind, props in (("v", unexpected), ("a", allowed), ("r", events)):
            for p in props:
                counts[(kind, p)] += 1
                if kind != "r":
                    old = firsts.get((kind, p))
                    if old is None or fp < old[0]:
                        firsts[(kind, p)] = (fp, p in known, path)
        for i, (fp2, label, conc2, p2, s2) in enumerate(ex.successors(s, pruned, depth, stats)):
            path2 = path + (label,)
            generated[path2] = s2
            # candidate: (order key, label, concrete fp, path, pruned, mixed)
            edges.append(("E", (fp2, ((fp, i), label, conc2, path2, p2, False))))
    yield ("S", (stats.flush(), firsts, counts, (lv.reused, lv.replayed)))
    lv.reused = lv.replayed = 0
    yield from edges


def _first_edge(a: tuple, b: tuple) -> tuple:
    """Combine two candidates for one fingerprint as the local BFS does (``explicit._bfs``):
    the first edge in (parent fp, action) order gives the parent and the concrete state (its
    path: the parent's concrete path and the action's label); the
    pruned set is the intersection over all edges, or empty once an edge reached another
    concrete state of the orbit. Associative and commutative, so a map-side combine is safe."""
    if b[0] < a[0]:
        a, b = b, a
    key, label, conc, path, pruned, mixed = a
    other = b[5] or b[2] != conc
    if pruned:
        pruned = frozenset() if other else pruned & b[4]
    return (key, label, conc, path, pruned, mixed or other)


def _dedup(pair):
    """(visited partition: a set of fingerprints, candidate partition) -> (visited with the new
    states, new frontier items (fp, path, pruned) in fingerprint order)."""
    visited, cands = pair
    new = []
    for fp2, (_key, _label, _conc, path, pruned, _mixed) in cands:
        if fp2 not in visited:
            visited.add(fp2)
            new.append((fp2, path, pruned))
    new.sort(key=lambda x: x[0])
    return visited, new


# -- the driver -------------------------------------------------------------------------------
def spark_search(cfg, *, symmetry: bool = True, por: bool = True, bounds: Bounds = Bounds(),
                 master: str | None = None, partitions: int | None = None, spark=None,
                 time_budget: float | None = None, progress: Progress | None = None,
                 stop_on: frozenset[str] | None = None, evaluate: bool = True,
                 traces: bool = True) -> Result:
    """``engines.explicit.search(engine=BFS)`` with the levels spread over Spark executors.

    ``spark``: a SparkSession to use (kept running); else one is made for ``master`` (None:
    spark-submit's, else ``local[*]``) and stopped at the end. ``partitions``: how many ways
    the fingerprints are split (default Spark's default parallelism: one partition per core.
    Each partition costs about 0.45 s a level here whatever its size, and fingerprints hash
    evenly, so more partitions than cores only add tasks: spark-3.5-cow-snapshot 3w x 2
    DELETE on ``local[1]`` took 14.7 s with one partition and 23.4 s with two)."""
    from icecheck.engines.explicit import attach_traces, check_bounds
    from icecheck.engines.por import applies as por_applies

    por = por and por_applies(cfg)
    if symmetry:
        check_bounds(cfg)
    start = time.monotonic()
    deadline = start + time_budget if time_budget is not None else None
    own = spark is None
    if own:
        from icecheck.sweep.distributed import spark_session
        spark = spark_session(master, app="icecheck-spark-bfs")
    sc = spark.sparkContext
    nparts = partitions or max(1, sc.defaultParallelism)
    driver = Expander(cfg, symmetry, por, bounds, evaluate)
    res = Result(cfg, SPARK_BFS, symmetry, por, sc.defaultParallelism, bounds)
    res.symmetry_classes = driver.classes
    res.note_symmetry(driver.fp.note)
    res.notes.append(f"spark master {sc.master}, {nparts} fingerprint partitions")
    spec = pickle.dumps((cfg, symmetry, por, bounds, evaluate))
    try:
        _levels(sc, res, driver, spec, nparts, bounds, start, deadline, progress, stop_on)
    except KeyboardInterrupt:
        res.stopped = "interrupted"
        sc.cancelAllJobs()
    finally:
        if own:
            spark.stop()
    res.seconds = time.monotonic() - start
    if traces:
        attach_traces(res)
    return res


def _levels(sc, res, driver, spec, nparts, bounds, start, deadline, progress, stop_on) -> None:
    from pyspark import StorageLevel

    s0 = driver.model.initial()
    fp0, _ = driver.fingerprints(s0)
    home = fp_partition(fp0) % nparts
    # one element per partition: (visited fingerprints, frontier items (fp, path, pruned))
    level = sc.parallelize(range(nparts), nparts).map(
        lambda i: ({fp0}, [(fp0, (), frozenset())]) if i == home else (set(), []))
    level.persist(StorageLevel.MEMORY_AND_DISK)
    res.states = 1
    reused = replayed = 0
    depth = 0
    frontier_n = 1
    try:
        while True:
            if deadline is not None and time.monotonic() >= deadline:
                res.stopped = "time budget"
                raise _Stop()
            res.max_depth = depth
            visited = level.map(lambda x: x[0])
            frontier = level.flatMap(lambda x: x[1])
            expanded = frontier.mapPartitions(
                lambda it, d=depth: _expand_partition(spec, d, it), preservesPartitioning=True)
            expanded.persist(StorageLevel.MEMORY_AND_DISK)
            summaries = expanded.filter(lambda r: r[0] == "S").map(lambda r: r[1]).collect()
            firsts: dict[tuple, tuple] = {}
            for stats, f, counts, (n_reused, n_replayed) in summaries:
                reused += n_reused
                replayed += n_replayed
                stats.add_to(res)
                for (kind, p), n in counts.items():
                    {"v": res.violation_counts, "a": res.allowed_counts,
                     "r": res.reached}[kind][p] += n
                for k, v in f.items():
                    if k not in firsts or v[0] < firsts[k][0]:
                        firsts[k] = v
            now = time.monotonic() - start
            for (kind, p), (fp, known, path) in sorted(
                    firsts.items(), key=lambda x: (x[1][0], x[0][0] != "v", x[0][1])):
                table = res.violations if kind == "v" else res.allowed
                if p not in table:
                    # the state's concrete path: the chain of first edges, a shortest one
                    table[p] = Violation(p, kind == "v", kind == "v" and known, depth,
                                         res.states, now, list(path))
            if stop_on is not None and stop_on <= (set(res.violations) | set(res.allowed)):
                res.stopped = "found"
                raise _Stop()
            cands = (expanded.filter(lambda r: r[0] == "E").map(lambda r: r[1])
                     .reduceByKey(_first_edge, nparts, fp_partition))
            nxt = visited.zip(cands.glom()).map(_dedup)
            nxt.persist(StorageLevel.MEMORY_AND_DISK)
            nxt.localCheckpoint()
            new = sum(nxt.map(lambda x: len(x[1])).collect())
            expanded.unpersist()
            if bounds.max_states is not None and res.states + new > bounds.max_states:
                res.stopped = "max states"
                res.cut += new
                level = nxt
                raise _Stop()
            level.unpersist()
            level = nxt
            res.states += new
            frontier_n = new
            if progress:
                progress({"states": res.states, "depth": depth, "frontier": frontier_n,
                          "transitions": res.transitions, "elapsed": time.monotonic() - start})
            if not new:
                break
            depth += 1
        res.complete = True
    except _Stop:
        pass
    res.notes.append(f"frontier states rebuilt from their paths: {reused:,} kept by the Python "
                     f"worker that generated them, {replayed:,} replayed")
