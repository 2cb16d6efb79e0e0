"""Split an exhaustive search by the programs' alternatives: one BFS per combination.

A program entry may hold several alternative commands (a pipeline's ``{key}`` and
``{partition}`` templates, ``--mix delete,update``): the writer picks one when it begins that
command (``Model.writer_actions``: ``begin#k``). Every run of the configuration picks, for each
such entry it reaches, one alternative, so the runs of the configuration are exactly the union
of the runs of its *parts*: the same configuration with each of those entries narrowed to one
alternative. A state is a state of every part whose choices agree with the ones it made; a
violation, its shortest counterexample and every verdict are those of some part, and the
shortest counterexample of the whole is the shortest among the parts'.

Why split (issue 44, "pipelines of realistic size"): the BFS holds its visited set and two
levels in memory, about 1 KB a state, and a pipeline of a platform team's size (five jobs, three
of them templated over two keys or partitions: 8 combinations) outgrows the machine before it
outgrows the clock. One part holds about an eighth of the states, so it fits where the whole
does not; and the parts are independent searches, so ``workers`` of them run at once, one per
core, with no level-by-level merge between processes (the local ``--workers`` BFS merges every
level in its master, a serial part, engines/explicit.py ``_bfs``). What it costs: a state
reached before a writer made its choice is a state of each of that writer's parts, so it is
searched once per part (the states before the choices are a small share of the deep levels:
measured in reports/benchmarks.md, "realistic").

Writers that are interchangeable (engines/symmetry.py ``symmetry_classes``) have their
alternatives in the same order, and a permutation of such writers maps the runs of one part onto
the runs of the permuted part, with the same verdicts (the premise the symmetry reduction rests
on): only parts whose interchangeable writers' choices are in non-decreasing order are searched.

What the merged result counts: ``states``, ``transitions``, coverage and the per-property state
counts are sums over the parts searched (a state shared by parts is counted in each); verdicts,
final outcomes and the shortest counterexample per property are the union and the minimum (ties:
the first part), and each counterexample's actions are translated back to the whole
configuration's labels (``w2.begin#1``), so it replays there. ``bounds.max_states`` and
``bounds.max_memory_mb`` bound each part, what one process holds; the time budget bounds the
whole. The merge goes in part order whatever order the parts finish in, so the result does not
depend on the machine's speed (but for the times).

A streaming sink's entries are never split: a sink that restarts begins a batch again and may
pick another alternative (models/lifecycle.py), so one run can make two choices for an entry.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from dataclasses import dataclass, replace

from icecheck.engines.config import ExploreConfig
from icecheck.engines.explicit import BFS, Bounds, Progress, Result, attach_traces, search


class PartLost(RuntimeError):
    """A part's process ended without a result (killed, out of memory): the search cannot
    say anything of that part, so it stops (the CLI: one line, INCONCLUSIVE, exit 1)."""


@dataclass(frozen=True)
class Part:
    """One combination: ``choices[i][j]`` is the alternative writer ``w{i+1}`` runs at program
    entry ``j`` (0 where the entry has one); ``cfg`` the configuration narrowed to it."""

    index: int
    choices: tuple[tuple[int, ...], ...]
    cfg: ExploreConfig

    def label(self, whole: ExploreConfig) -> str:
        """``w1.1=UPDATE#1, w2.1=DELETE``: the command each narrowed entry runs in this part,
        with the index of its alternative (as the whole's ``begin#1`` names it; none: 0)."""
        bits = []
        for i, j, _ in split_points(whole):
            c = self.choices[i][j]
            sql = dict(whole.writers[i][j][c]).get("sql", "")
            bits.append(f"w{i + 1}.{j + 1}={sql}" + (f"#{c}" if c else ""))
        return ", ".join(bits)


def _sink_writers(cfg: ExploreConfig) -> set[int]:
    return {s[0] for s in cfg.sinks}


def split_points(cfg: ExploreConfig) -> list[tuple[int, int, int]]:
    """(writer index 0-based, entry index, number of alternatives) of every entry a split
    narrows: those with several alternatives, of writers that are not streaming sinks."""
    sinks = _sink_writers(cfg)
    return [(i, j, len(entry)) for i, prog in enumerate(cfg.writers) if i + 1 not in sinks
            for j, entry in enumerate(prog) if len(entry) > 1]


def parts(cfg: ExploreConfig, symmetry: bool = True) -> tuple[list[Part], int]:
    """(the parts to search, in a fixed order; how many combinations there are in all).
    With ``symmetry``, one part per orbit of combinations under the interchangeable writers."""
    points = split_points(cfg)
    classes = []
    if symmetry:
        from icecheck.engines.symmetry import symmetry_classes
        classes = [c for c in symmetry_classes(cfg) if len(c) > 1]
    out: list[Part] = []
    total = 0
    for combo in itertools.product(*(range(n) for _, _, n in points)):
        total += 1
        choices = [[0] * len(prog) for prog in cfg.writers]
        for (i, j, _), c in zip(points, combo):
            choices[i][j] = c
        # writers of a class are in slot order: keep the combination whose choice vectors
        # are non-decreasing along it (each orbit has exactly one)
        if any(choices[a - 1] > choices[b - 1] for c in classes for a, b in zip(c, c[1:])):
            continue
        writers = tuple(tuple(entry if len(entry) == 1 or (i + 1) in _sink_writers(cfg)
                              else (entry[choices[i][j]],)
                              for j, entry in enumerate(prog))
                        for i, prog in enumerate(cfg.writers))
        out.append(Part(len(out), tuple(map(tuple, choices)), replace(cfg, writers=writers)))
    return out, total


def whole_labels(whole: ExploreConfig, part: Part, actions: list[str]) -> list[str]:
    """A part's counterexample as actions of the whole configuration: each ``begin`` of a
    narrowed entry gets back the alternative's index (the part's program has one, ``#0``).
    The entry a ``begin`` starts is read by replaying the actions on the part's model."""
    from icecheck.models.system import BEGIN, Action
    from icecheck.traces.execute import model_for
    narrowed = {(i, j) for i, j, _ in split_points(whole)}
    if not narrowed:
        return list(actions)
    model = model_for(part.cfg)
    state = model.initial()
    out = []
    for label in actions:
        a = Action.parse(label)
        if a.kind == BEGIN:
            i = int(a.writer[1:]) - 1
            j = state.writer(a.writer).op_index
            if (i, j) in narrowed:
                label = str(Action(a.writer, BEGIN, part.choices[i][j]))
        out.append(label)
        state = model.step(state, a)
    return out


def split_search(cfg: ExploreConfig, *, symmetry: bool = True, por: bool = True,
                 workers: int = 1, bounds: Bounds = Bounds(),
                 time_budget: float | None = None, progress: Progress | None = None,
                 traces: bool = True, stop_on: frozenset[str] | None = None,
                 evaluate: bool = True, on_spark: bool = False, spark=None,
                 master: str | None = None) -> Result:
    """Search every part of ``cfg`` (``parts``), ``workers`` at a time (each a one-process
    BFS, in a process of its own when ``workers`` > 1), and merge their results in part
    order. A configuration without alternatives is one part: the plain search.

    ``on_spark`` (or ``spark`` given): each part is a Spark task, on ``spark`` (a SparkSession,
    kept running) or on a session made for ``master`` (None: spark-submit's, else local[*])
    and stopped at the end, as many at once as the cluster's default
    parallelism (``_on_spark``); ``workers`` is not used."""
    todo, total = parts(cfg, symmetry)
    on_spark = on_spark or spark is not None
    if len(todo) <= 1 and not on_spark:
        return search(cfg, engine=BFS, symmetry=symmetry, por=por, workers=workers,
                      bounds=bounds, time_budget=time_budget, progress=progress,
                      traces=traces, stop_on=stop_on, evaluate=evaluate)
    start = time.monotonic()
    deadline = start + time_budget if time_budget is not None else None
    board = _Board(len(todo), start, progress)
    args = (symmetry, por, bounds, stop_on, evaluate)
    if on_spark:
        own = spark is None
        if own:
            from icecheck.sweep.distributed import spark_session
            spark = spark_session(master, app="icecheck-split")
        try:
            workers = max(1, spark.sparkContext.defaultParallelism)
            order = _start_order(todo, args, workers)
            results = _on_spark(order, args, deadline, board, spark, cfg)
            where = f"spark master {spark.sparkContext.master}"
        finally:
            if own:
                spark.stop()
    elif workers <= 1:
        order = todo
        results = _serial(todo, args, deadline, board)
    else:
        order = _start_order(todo, args, workers)
        results = _parallel(order, args, deadline, board, workers, cfg)
    res = merge(cfg, todo, results, symmetry=symmetry, por=por, workers=workers, bounds=bounds)
    res.parts = len(todo)
    started = {p.index: k + 1 for k, p in enumerate(order)}
    for q in res.part_results:          # the place each part started in (largest first?)
        q["started"] = started[q.pop("index")]
    if on_spark:
        from icecheck.engines.explicit import SPARK_BFS
        res.engine = SPARK_BFS
        res.notes.append(f"{where}: each part a Spark task, {workers} at once")
    res.notes.insert(0, f"split search: {len(todo)} parts (one per combination of the programs' "
                        f"alternatives" + (f", {total} in all, one per class of interchangeable "
                                            f"writers' choices" if total != len(todo) else "")
                        + f"); {sum(r is not None for r in results)} searched, states and "
                        "transitions summed over them (engines/split.py)")
    res.seconds = time.monotonic() - start
    if traces:
        attach_traces(res)
    return res


#: Parts run at once start largest first (``_largest_first``) when there are at most this many
#: per core: with few parts, the last to end may be a large one left alone on a core (with many,
#: the order they come in already ends them close together: on mor-snapshot 3 writers x 2,
#: 20 parts on 2 cores, the makespan in part order is within 0.01% of the ideal)
FEW_PARTS = 4
#: ... each probed by a BFS through the depth at which the first part passes this many states
PROBE_STATES = 5_000


def _start_order(todo: list[Part], args, at_once: int) -> list[Part]:
    """The order to start the parts in, ``at_once`` running together: largest first when
    there are few parts per core (``FEW_PARTS``), else as they are."""
    if 1 < at_once < len(todo) <= FEW_PARTS * at_once:
        return _largest_first(todo, args)
    return list(todo)


def _largest_first(todo: list[Part], args) -> list[Part]:
    """``todo`` in the order to start its parts: by the states of a probe BFS of each (verdicts
    off) through one depth, the largest first, ties in part order. Parts of similar shape
    grow alike, so the early levels rank them, once deep enough for their choices to tell: on
    spark-only.yaml's 8 parts (4.8 to 10.1 million states each) a 300-state probe ties them
    all, a 5,000-state one (1.4 s) ranks them as their whole sizes but for one adjacent pair;
    on mor-snapshot 3 writers x 2's 20 parts, a 300-state probe has rank correlation 0.97 with
    their whole sizes. Only the order the parts start in changes: results are merged in part
    order. A first part that completes within ``PROBE_STATES`` says they are all small: no
    probe then."""
    symmetry, por, _, _, _ = args
    first = search(todo[0].cfg, engine=BFS, symmetry=symmetry, por=por, traces=False,
                   evaluate=False, bounds=Bounds(max_states=PROBE_STATES))
    if first.complete:
        return list(todo)
    depth = Bounds(max_depth=first.max_depth)
    sizes = [first.states] + [search(p.cfg, engine=BFS, symmetry=symmetry, por=por,
                                     traces=False, evaluate=False, bounds=depth).states
                              for p in todo[1:]]
    return sorted(todo, key=lambda p: -sizes[p.index])


class _Board:
    """The parts' progress as one line's figures: states of the parts done plus those of the
    parts under way, the deepest level under way, and ``parts`` (how many are done, of how
    many)."""

    def __init__(self, n: int, start: float, progress: Progress | None):
        self.n, self.start, self.progress = n, start, progress
        self.done_states = 0
        self.done = 0
        self.live: dict[int, dict] = {}

    def update(self, index: int, info: dict) -> None:
        self.live[index] = info
        self.show()

    def finished(self, index: int, res: Result | None) -> None:
        self.live.pop(index, None)
        self.done += 1
        self.done_states += res.states if res is not None else 0
        self.show()

    def show(self) -> None:
        if self.progress is None:
            return
        live = list(self.live.values())
        self.progress({
            "states": self.done_states + sum(i["states"] for i in live),
            "frontier": sum(i["frontier"] for i in live),
            "expanded": sum(i.get("expanded", i["frontier"]) for i in live),
            "depth": max((i["depth"] for i in live), default=0),
            "transitions": sum(i.get("transitions", 0) for i in live),
            "elapsed": time.monotonic() - self.start,
            "parts": (self.done, self.n)})


def _search_part(part: Part, args, deadline, progress) -> Result:
    symmetry, por, bounds, stop_on, evaluate = args
    budget = None if deadline is None else max(0.0, deadline - time.monotonic())
    res = search(part.cfg, engine=BFS, symmetry=symmetry, por=por, workers=1, bounds=bounds,
                 time_budget=budget, progress=progress, traces=False, stop_on=stop_on,
                 evaluate=evaluate)
    res.__dict__.pop("_path_to", None)     # the part's parent pointers: not needed, not shipped
    return res


def _stops(res: Result) -> bool:
    """Does this part's end stop the parts after it? A time budget, an interrupt or the memory
    bound do (the whole is out of time or room); a ``max states`` cut does not (each part
    is bounded by it alone), nor a property found (``stop_on``: each part stops at it)."""
    return res.stopped in ("time budget", "interrupted", "memory bound")


def _record(part: Part, res: Result, results: list, board: _Board, why: str | None
            ) -> str | None:
    """Keep a part's result that came back while others ran (``_parallel``, ``_on_spark``);
    return why the parts still running must stop (``why`` as it was, or this part's reason
    when it is the first to stop the whole). A part the whole told to stop says "interrupted":
    it gets the whole's reason."""
    if why and res.stopped == "interrupted":
        res.stopped = why
    results[part.index] = res
    board.finished(part.index, res)
    if _stops(res) and not why:
        return res.stopped
    return why


def _serial(todo: list[Part], args, deadline, board: _Board) -> list[Result | None]:
    results: list[Result | None] = [None] * len(todo)
    for part in todo:
        res = _search_part(part, args, deadline,
                           lambda info, k=part.index: board.update(k, info))
        results[part.index] = res
        board.finished(part.index, res)
        if _stops(res):
            break
    return results


def _part_main(conn, parent: int, part: Part, args, deadline_left, halt) -> None:
    """A part's process: search it, sending progress (at most a few lines a second) and then
    its result. Ctrl-C is the parent's to handle: it sets ``halt``, which the progress
    callback (called by the BFS after every batch) turns into the KeyboardInterrupt the BFS
    answers with a partial result. (An event, not a signal: a signal could reach the process
    before it set a handler, or outside the search's own try.)"""
    from icecheck.engines.lifetime import die_with_parent
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)
    deadline = None if deadline_left is None else time.monotonic() + deadline_left
    last = [0.0]

    def progress(info: dict) -> None:
        if halt.is_set():
            raise KeyboardInterrupt
        now = time.monotonic()
        if now - last[0] >= 0.25:
            last[0] = now
            conn.send(("progress", {k: info[k] for k in
                                    ("states", "frontier", "expanded", "depth", "transitions")
                                    if k in info}))
    try:
        res = _search_part(part, args, deadline, progress)
        conn.send(("done", res))
    except Exception as e:              # an input error, a model error: the parent re-raises
        conn.send(("error", e))
    finally:
        conn.close()


def _parallel(todo: list[Part], args, deadline, board: _Board, workers: int,
              whole: ExploreConfig) -> list[Result | None]:
    import multiprocessing as mp
    from multiprocessing.connection import wait

    from icecheck.engines.lifetime import stop_all
    ctx = mp.get_context("fork" if hasattr(os, "fork") else "spawn")
    halt = ctx.Event()
    results: list[Result | None] = [None] * len(todo)
    pending = list(todo)
    running: dict = {}                  # conn -> (part, process)
    why = None      # why the parts still running were told to stop (they say "interrupted")
    error: BaseException | None = None

    def launch(part: Part) -> None:
        conn, child = ctx.Pipe(duplex=False)
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        proc = ctx.Process(target=_part_main,
                           args=(child, os.getpid(), part, args, left, halt), daemon=True)
        proc.start()
        child.close()
        running[conn] = (part, proc)

    def take(conn) -> None:
        nonlocal why, error
        part, proc = running[conn]
        try:
            kind, payload = conn.recv()
        except (EOFError, OSError):
            proc.join()
            kind, payload = "error", PartLost(
                f"split search: the process searching part {part.index + 1} of "
                f"{len(todo)} ({part.label(whole)}) ended without a result (exit code "
                f"{proc.exitcode}: killed, or out of memory?); rerun, with a lower "
                f"--workers (fewer parts at once) or --max-memory to stop cleanly")
        if kind == "progress":
            board.update(part.index, payload)
            return
        del running[conn]
        conn.close()
        proc.join()
        if kind == "error":
            error = error or payload
            why = why or "error"
            halt.set()
            board.finished(part.index, None)
            return
        stop = _record(part, payload, results, board, why)
        if stop != why:
            why = stop
            halt.set()

    try:
        while pending or running:
            try:
                while pending and not why and len(running) < workers:
                    launch(pending.pop(0))
                if not running:
                    break
                for conn in wait(list(running)):
                    take(conn)
            except KeyboardInterrupt:       # Ctrl-C: every part stops, with what it found
                why = why or "interrupted"
                halt.set()
    finally:
        stop_all([proc for _, proc in running.values()])
    if error is not None:
        raise error
    return results


def run_part_blob(blob: bytes) -> bytes:
    """A Spark task's work (``_on_spark``, through ``sweep.distributed.cell_task``, which
    ships the code to a cluster's workers): one part's search, its result pickled. The
    deadline travels as a wall-clock time (a task may start after others end)."""
    import pickle
    part, args, deadline_at = pickle.loads(blob)
    deadline = None
    if deadline_at is not None:
        deadline = time.monotonic() + max(0.0, deadline_at - time.time())
    return pickle.dumps(_search_part(part, args, deadline, None))


def _on_spark(todo: list[Part], args, deadline, board: _Board, spark,
              whole: ExploreConfig) -> list[Result | None]:
    """The parts as Spark tasks: a one-task job per part, as many jobs at once as the
    cluster's default parallelism (each from a thread of this driver), so that results come
    back part by part (the progress line counts them; Ctrl-C keeps the parts done). A part's
    task runs the same one-process BFS as ``_serial`` does, in a Spark Python worker."""
    import pickle
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor
    from concurrent.futures import wait as wait_futures

    from icecheck.sweep.distributed import SHIPPED_CONF, cell_task
    sc = spark.sparkContext
    task = cell_task(spark.conf.get(SHIPPED_CONF, None) or None,
                     entry="icecheck.engines.split:run_part_blob")
    deadline_at = None if deadline is None else time.time() + (deadline - time.monotonic())
    at_once = max(1, sc.defaultParallelism)
    results: list[Result | None] = [None] * len(todo)

    def job(part: Part) -> Result:
        blob = pickle.dumps((part, args, deadline_at))
        return pickle.loads(sc.parallelize([blob], 1).map(task).collect()[0])

    pool = ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="icecheck-split")
    pending: dict = {}
    queue = list(todo)
    why = None
    try:
        while queue or pending:
            try:
                while queue and not why and len(pending) < at_once:
                    part = queue.pop(0)
                    pending[pool.submit(job, part)] = part
                if not pending:
                    break
                done, _ = wait_futures(list(pending), timeout=0.5,
                                       return_when=FIRST_COMPLETED)
                for fut in done:
                    part = pending.pop(fut)
                    try:
                        res = fut.result()
                    except Exception as e:
                        if why == "interrupted":       # cancelled by us
                            continue
                        first = str(e).strip().splitlines()[0] if str(e).strip() else repr(e)
                        raise PartLost(
                            f"split search: the Spark task searching part {part.index + 1} of "
                            f"{len(todo)} ({part.label(whole)}) failed: {first[:300]}; rerun "
                            f"(with more executor memory if it ran out)") from None
                    why = _record(part, res, results, board, why)
                board.show()
            except KeyboardInterrupt:          # Ctrl-C: the parts done stand
                why = "interrupted"
                sc.cancelAllJobs()
    finally:
        if why == "interrupted" or any(f.running() for f in pending):
            sc.cancelAllJobs()
        pool.shutdown(wait=False, cancel_futures=True)
    return results


def merge(cfg: ExploreConfig, todo: list[Part], results: list[Result | None], *,
          symmetry: bool, por: bool, workers: int, bounds: Bounds) -> Result:
    """The parts' results as one result of ``cfg`` (the module's docstring says what is summed
    and what is the minimum), in part order."""
    from icecheck.engines.symmetry import symmetry_classes
    res = Result(cfg, BFS, symmetry, por, workers, bounds)
    full_classes = symmetry_classes(cfg)
    # as the whole search's result gives them (``Fingerprinter.classes``)
    res.symmetry_classes = full_classes if symmetry else [[i] for i in
                                                          range(1, len(cfg.writers) + 1)]
    res.complete = True
    for part, r in zip(todo, results):
        if r is None:                   # never searched: the whole is not complete
            res.complete = False
            continue
        res.part_results.append({"part": part.label(cfg), "index": part.index,
                                 "states": r.states,
                                 "seconds": round(r.seconds, 2), "complete": r.complete,
                                 "stopped": r.stopped})
        before = res.states
        res.states += r.states
        res.transitions += r.transitions
        res.enabled_transitions += r.enabled_transitions
        res.max_depth = max(res.max_depth, r.max_depth)
        res.cut += r.cut
        res.final_states += r.final_states
        res.coverage.update(r.coverage)
        res.reached.update(r.reached)
        res.allowed_counts.update(r.allowed_counts)
        res.violation_counts.update(r.violation_counts)
        part_classes = symmetry_classes(part.cfg)
        for o in r.outcomes:
            res.outcomes |= _renormal(o, part_classes, full_classes)
        res.complete = res.complete and r.complete
        # the whole's reason: the first part's that stopped the whole (time budget, interrupt,
        # memory), else the first part's (max states, a property found)
        if r.stopped and (res.stopped is None or _stops(r) and not _stops(res)):
            res.stopped = r.stopped
        if not r.symmetry and symmetry:
            res.symmetry = False
        for note in r.notes:
            if note not in res.notes:
                res.notes.append(note)
        for mine, theirs in ((res.violations, r.violations), (res.allowed, r.allowed)):
            for prop, v in theirs.items():
                got = mine.get(prop)
                if got is None or v.depth < got.depth:
                    mine[prop] = replace(v, actions=whole_labels(cfg, part, v.actions),
                                         states_before=before + v.states_before, trace=None)
    return res


def _renormal(outcome: tuple, part_classes: list[list[int]],
              full_classes: list[list[int]]) -> set[tuple]:
    """A part's final outcome (``Expander.outcome``: per class of the part's interchangeable
    writers, their histories' outcomes, sorted) as the whole configuration's signatures (the
    same, per class of the whole's writers). Narrowing the programs may make writers that differ
    in the whole interchangeable in a part, so the part's sorted tuple no longer says which
    writer ended how; but then every assignment of those outcomes to those writers is the
    outcome of a final state of the part (a permutation of interchangeable writers maps a run to
    a run), and so of the whole: each is returned."""
    per_class = []
    for pc, outs in zip(part_classes, outcome):
        perms = sorted(set(itertools.permutations(outs)))
        per_class.append([dict(zip(pc, perm)) for perm in perms])
    out = set()
    for combo in itertools.product(*per_class):
        slots: dict[int, tuple] = {}
        for d in combo:
            slots.update(d)
        out.add(tuple(tuple(sorted(slots[i] for i in c)) for c in full_classes))
    return out
