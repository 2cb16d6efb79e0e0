"""Distributed exhaustive search on PySpark (``icecheck explore --engine spark-bfs``).

A level-synchronous BFS in the manner of TLC's distributed mode, in which Spark moves the
edges between partitions and each partition's states and visited fingerprints stay in memory,
in one long-lived process per partition (a *keeper*), from level to level.

Why keepers (issue 44, measured on local[1], 225,957 states of spark-3.5-cow-snapshot 3w x 2
DELETE/UPDATE): the search before this kept a partition's states in whichever Python worker
Spark ran its task in, and Spark hands a task to any idle worker of its pool (a ``zip`` of two
Python RDDs alone keeps two alive), so *none* of the 225,957 frontier states was found where it
had been generated: every one was replayed from its path (rebuilt step by step, fingerprinted
again: a third of a worker's time), with cold memos; and the visited set, an RDD, was
unpickled and pickled whole at every level, and every edge went through PySpark's Python
shuffle (pickled one by one, spilled and compressed). 1,800 states/s against 15,000 in one
process.

So each of the ``partitions`` has a keeper on the host that first ran one of its tasks
(``_keeper_main``: a process of its own, reached through a Unix socket in a private directory,
holding one ``engines.explicit.Expander`` whose memos stay warm for the whole search). Partition
``k``'s keeper holds

* the visited fingerprints whose ``fp_partition`` is ``k``;
* the states it generated when it expanded its part of the last level, by *handle* (their
  index); a state is expanded by the keeper that generated it, so it is never shipped nor
  rebuilt (as the local ``--workers`` BFS keeps a state in the process that made it).

A level is one Spark job of two stages, each task a thin proxy that hands its partition's
records to its keeper and yields what the keeper answers, as opaque pickled blobs (a few per
task: PySpark's shuffle sees a handful of records, not one per edge):

1. *expand* (partition ``g``): the keeper judges and expands the states it was told to keep
   (``Expander.judge``, ``Expander.successors``: the code the local BFS runs, with its symmetry
   order types passed on as the local BFS does), and combines its edges per target
   fingerprint as the local BFS does (``_first_edge``): the first edge in (parent
   fingerprint, action) order gives the concrete state, the POR pruned sets intersect, or
   are emptied once an edge reached another concrete state of the orbit; one blob of edges
   per target partition, and the level's summary;
2. *dedup* (partition ``p``): the keeper merges the candidates of every source, drops the
   fingerprints it has seen and adds the rest; each winner (its handle, fingerprint, pruned
   set and path) goes back to the partition that generated it: the next level's input.

Every state travels with its *path* (the action labels from the initial state along first
edges), which costs a few labels per state: a keeper that does not hold a state a winner
names (the level that hands the search over to the keepers, a retried level) rebuilds it by
replaying the path (``checkpoint.rebuild_states``, which checks the fingerprint; a miss is an
error, never skipped), and a violating state's path is its shortest counterexample, so no
parent pointers are kept. A retried dedup of the level just run gives the same winners (the
fingerprints the level added are kept apart until the next level starts).

The driver only sums per-level statistics and, for each property, keeps the least violating
fingerprint of the first level that shows it (what the local BFS records first, since it judges
a level in fingerprint order). States, transitions, final states, verdicts, coverage and
counterexamples equal the local BFS's (``tests/test_explore_spark.py``).

Keepers end when the search ends (a job asks every keeper of the search on its host to stop),
when the Spark worker daemon that started them is gone (a stopped session, a killed executor),
or after ``KEEPER_IDLE`` seconds without a request. A partition's visited fingerprints live
only in its keeper, so a partition must keep running on one host (``local[N]`` and one-host
clusters always do), and a keeper gone mid-search (killed, say by the OOM killer; or the
partition's task ran on another host) stops the search with ``KeeperLost`` rather than count
states again: one line naming the partition's keeper, which ``icecheck explore`` reports as
INCONCLUSIVE (exit 1). A task that finds its keeper's connection closed, or its socket left
with no process behind it, reports it as a record (``_Lost``: a failed task would fill the
log with stack traces), and starts no keeper after a partition's first level; a partition
answered by another keeper than before stops the search too (``_same_keeper``). The search's
end stops the other keepers and removes the lost one's socket.

The first levels, while the frontier has fewer than ``LOCAL_BELOW`` states a partition, run
in the driver's own ``_Keeper`` (no Spark job; a Spark level costs about 0.35 s here); the
first wider level is handed to the keepers of its states' fingerprints (``_hand_over``).

``local[N]`` by default; under ``spark-submit`` its ``--master`` stands (``sweep.distributed``).
On a cluster the workers need icecheck importable (``ship_code``) and its dependencies.
"""

from __future__ import annotations

import os
import pickle
import socket
import struct
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter

from icecheck.engines.explicit import (SPARK_BFS, Bounds, Expander, Progress, Result,
                                       Violation, _Stop)

_NONE: frozenset = frozenset()
#: Seconds a keeper waits for a request before it ends (the daemon's end is noticed first).
KEEPER_IDLE = 3600.0
#: Seconds a task waits for a keeper it started to listen.
KEEPER_START = 120.0
#: Seconds the end of a search waits for a keeper told to stop to end (it ends at once).
KEEPER_STOP = 30.0
_PICKLE = pickle.HIGHEST_PROTOCOL
#: Levels whose frontier has fewer states than this per partition run in the driver (a
#: ``_Keeper`` of its own, the same code): a Spark level costs about 0.35 s whatever its size,
#: and the first ten or so levels of a search hold a few thousand states. The first level
#: too wide for the driver hands each state to the keeper of its fingerprint's partition,
#: which rebuilds it from its path: the search's subtrees start evenly spread over the
#: keepers, and stay so without moving states (a new state stays with the keeper that
#: generated it along its first edge, and those parents are as evenly spread).
LOCAL_BELOW = 1000
#: States a keeper expands between two ``settle``s of its heap (the local BFS's batch): what
#: they generated and keep is frozen, so the collector does not traverse it again and again
#: while a level of a hundred thousand states grows (settled once a level, a keeper spent
#: about a fifth more CPU per state than the local BFS: docs/exhaustive.md).
SETTLE = 128


def fp_partition(fp: bytes) -> int:
    """The partitioner of fingerprints (deterministic: not Python's salted ``hash``)."""
    return int.from_bytes(fp[:8], "big")


def _ident(k: int) -> int:
    """The partitioner of records already keyed by their partition's index."""
    return k


def _first_edge(a: list, b: list) -> list:
    """Combine two candidates [order key, concrete fp, pruned, mixed, generator, handle, path]
    for one fingerprint as the local BFS does (``explicit._bfs``): the first edge in (parent
    fp, action) order gives the concrete state (its generator, handle and path); the pruned set
    is the intersection over all edges, or empty once an edge reached another concrete state
    of the orbit. Associative and commutative, so it may combine in any grouping."""
    if b[0] < a[0]:
        a, b = b, a
    other = b[3] or b[1] != a[1]
    pruned = a[2]
    if pruned:
        pruned = _NONE if other else pruned & b[2]
    return [a[0], a[1], pruned, a[3] or other, a[4], a[5], a[6]]


# -- the wire between a task and its keeper --------------------------------------------------
def _send(sock: socket.socket, obj) -> None:
    data = pickle.dumps(obj, protocol=_PICKLE)
    sock.sendall(struct.pack("!Q", len(data)))
    sock.sendall(data)


def _recv(sock: socket.socket):
    (n,) = struct.unpack("!Q", _recv_exact(sock, 8))
    return pickle.loads(_recv_exact(sock, n))


def _recv_exact(sock: socket.socket, n: int) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if not k:
            raise EOFError("spark-bfs: the keeper closed the connection")
        got += k
    return buf


def _keeper_dir() -> str:
    """A directory only this user can enter: the keepers' sockets (no one else may connect)."""
    d = os.path.join(tempfile.gettempdir(), f"icecheck-spark-bfs-{os.getuid()}")
    os.makedirs(d, mode=0o700, exist_ok=True)
    st = os.lstat(d)
    if st.st_uid != os.getuid() or st.st_mode & 0o077 or not os.path.isdir(d) \
            or os.path.islink(d):
        # someone else's directory (or one others may write to): its sockets could be anyone's,
        # and what they answer is unpickled
        raise RuntimeError(f"spark-bfs: {d} is not a private directory of this user")
    return d


def _sock_path(sid: str, index: int) -> str:
    return os.path.join(_keeper_dir(), f"{sid}-{index}.sock")


# -- the keeper (a process per partition) ------------------------------------------------------
class _Keeper:
    """One partition's states, visited fingerprints and Expander (see the module's docstring)."""

    def __init__(self, spec: bytes, index: int, nparts: int, settle=None):
        self.ex = Expander(*pickle.loads(spec))
        # what the keeper's collector is told between batches of a level's states
        # (``explicit._Heap.settle``), as the local BFS tells it between batches of SETTLE
        self.settle = settle or (lambda: None)
        self.index, self.nparts = index, nparts
        self.visited: set[bytes] = set()
        self.added: set[bytes] = set()      # what the last dedup added (kept apart: a retry)
        self.added_depth: int | None = None
        # the states generated by the last expand: handle -> (state, symmetry order type)
        self.generated: list[tuple] = []
        self.gen_depth: int | None = None    # ... which are of this level
        self.reused = self.replayed = 0
        # which keeper this is: a partition answered by another one has lost its visited
        # fingerprints (the driver stops the search rather than count states twice); its pid
        # first, for the message that names a keeper that was killed
        self.token = f"{os.getpid()}:{uuid.uuid4().hex}"

    def expand(self, depth: int, blobs: list, seen: bytes | None = None) -> tuple[dict, tuple]:
        """Judge and expand the winners in ``blobs`` (pickled lists of (handle, fp, pruned,
        path)) at ``depth``: ({target partition: pickled [(fp, candidate)]}, summary).
        ``seen``: the pickled fingerprints of this partition that the levels run in the
        driver reached (with the first level run here)."""
        if seen is not None:
            self.visited.update(pickle.loads(seen))
        cpu = time.process_time()
        evals = len(self.ex.verdicts)
        ex, g, nparts = self.ex, self.index, self.nparts
        items = [it for b in blobs for it in pickle.loads(b)]
        items.sort(key=lambda it: it[1])          # the local BFS's order: by fingerprint
        gen = self.generated if self.gen_depth == depth else None
        self.generated, self.gen_depth = [], None
        states, missing = [], []
        for h, fp, _, path in items:
            if h >= 0 and gen is not None:
                states.append(gen[h])
            else:
                states.append(None)
                missing.append((fp, list(path)))
        gen = None
        if missing:
            from icecheck.engines.checkpoint import rebuild_states
            got, bad = rebuild_states(ex.model, ex.fingerprints, missing)
            if bad:   # the model is deterministic: a replay that misses is a bug, never skipped
                path = dict(missing)[bad[0]]
                raise RuntimeError(f"spark-bfs: replaying {' '.join(path)} did not reach the "
                                   f"state of fingerprint {bad[0].hex()}")
            states = [s if s is not None else (got[fp], None)
                      for (_, fp, _, _), s in zip(items, states)]
        self.reused += len(items) - len(missing)
        self.replayed += len(missing)
        if depth == 0:
            self.visited.update(fp for h, fp, _, _ in items if h < 0)   # the initial state
        stats = ex.level_stats()
        verdicts: Counter = Counter()
        firsts: dict[tuple, tuple] = {}         # (kind, property) -> (least fp, known, path)
        by_target: list[dict] = [{} for _ in range(nparts)]
        new_gen = self.generated
        orders: dict | None = {} if ex.fp.symmetric else None
        successors, judge, settle = ex.successors, ex.judge, self.settle
        for n, ((_, fp, pruned, path), (s, order)) in enumerate(zip(items, states)):
            if not n % SETTLE:
                settle()
            verdict = judge(s)
            verdicts[verdict] += 1
            if verdict[0] or verdict[2]:
                known = verdict[1]
                for kind, props in (("v", verdict[0]), ("a", verdict[2])):
                    for p in props:
                        old = firsts.get((kind, p))
                        if old is None or fp < old[0]:
                            firsts[(kind, p)] = (fp, p in known, path)
            for i, (fp2, label, conc2, p2, s2) in enumerate(
                    successors(s, pruned, depth, stats, order, orders)):
                t = by_target[fp_partition(fp2) % nparts]
                c = t.get(fp2)
                if c is None:
                    t[fp2] = [(fp, i), conc2, p2, False, g, len(new_gen), path + (label,)]
                    new_gen.append((s2, orders.get(fp2) if orders is not None else None))
                else:                 # a later edge into the same fingerprint (_first_edge)
                    other = conc2 != c[1]
                    if c[2]:
                        c[2] = _NONE if other else c[2] & p2
                    if other:
                        c[3] = True
        self.gen_depth = depth + 1
        items = states = None
        counts: Counter = Counter()
        for (unexpected, _, allowed, events), n in verdicts.items():
            for kind, props in (("v", unexpected), ("a", allowed), ("r", events)):
                for p in props:
                    counts[(kind, p)] += n
        out = {t: pickle.dumps(list(d.items()), protocol=_PICKLE)
               for t, d in enumerate(by_target) if d}
        work = {"reused": self.reused, "replayed": self.replayed,
                "verdicts": len(ex.verdicts) - evals, "expand_cpu": time.process_time() - cpu,
                "peak_rss_mb": _peak_rss_mb()}
        self.reused = self.replayed = 0
        return out, (g, stats.flush(), firsts, counts, work, self.token)

    def dedup(self, depth: int, blobs: list) -> tuple[dict, tuple]:
        """Merge the candidates of level ``depth + 1`` sent to this partition, keep the
        fingerprints not seen: ({generator partition: pickled [(handle, fp, pruned, path)]},
        (this partition, how many, CPU seconds)). A new state goes back to the keeper that
        generated it (along its first edge)."""
        cpu = time.process_time()
        if self.added_depth != depth:
            self.visited.update(self.added)
        self.added, self.added_depth = set(), depth   # a retried level: its additions again
        best: dict = {}
        for b in blobs:
            for fp2, c in pickle.loads(b):
                old = best.get(fp2)
                best[fp2] = c if old is None else _first_edge(old, c)
        visited, added = self.visited, self.added
        out: list[list] = [[] for _ in range(self.nparts)]
        for fp2, c in best.items():
            if fp2 not in visited:
                added.add(fp2)
                out[c[4]].append((c[5], fp2, c[2], c[6]))
        return ({g: pickle.dumps(w, protocol=_PICKLE) for g, w in enumerate(out) if w},
                (self.index, len(added), time.process_time() - cpu, self.token))


def _peak_rss_mb() -> float:
    """This process's peak resident memory in MB (Linux and macOS report it in different units)."""
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _keeper_main() -> None:
    """A keeper process: ``python -c ... SOCKET INDEX NPARTS WATCH`` with the pickled search
    spec on stdin. Serves one request at a time until told to stop, until process ``WATCH``
    (the Spark worker daemon that started it) is gone, or ``KEEPER_IDLE`` seconds without one."""
    import signal
    import traceback
    from icecheck.engines.explicit import few_collections

    path, index, nparts, watch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # Ctrl-C is the driver's to handle
    spec = sys.stdin.buffer.read()
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    srv.bind(path)
    srv.listen(8)

    def watcher():
        while True:
            time.sleep(1.0)
            try:
                os.kill(watch, 0)
            except ProcessLookupError:
                _gone(path)
            except PermissionError:
                pass
    threading.Thread(target=watcher, daemon=True).start()
    srv.settimeout(KEEPER_IDLE)
    with few_collections() as heap:
        keeper = _Keeper(spec, index, nparts, heap.settle)
        while True:
            try:
                conn, _ = srv.accept()
            except socket.timeout:
                _gone(path)
            with conn:
                conn.settimeout(None)
                try:
                    req = _recv(conn)
                except (EOFError, OSError):
                    continue
                op = req[0]
                try:
                    if op == "stop":
                        _send(conn, ("ok", None))
                        _gone(path)
                    elif op == "ping":
                        reply = ("ok", None)
                    elif op == "expand":
                        reply = ("ok", keeper.expand(req[1], req[2], req[3]))
                    elif op == "dedup":
                        reply = ("ok", keeper.dedup(req[1], req[2]))
                    else:
                        reply = ("error", f"unknown request {op!r}")
                except Exception:
                    reply = ("error", traceback.format_exc())
                try:
                    _send(conn, reply)
                except OSError:
                    pass
                reply = req = None
                heap.settle()


def _gone(path: str) -> None:
    """End this keeper, removing its socket and its start lock."""
    for f in (path, path + ".lock"):
        try:
            os.unlink(f)
        except OSError:
            pass
    os._exit(0)


# -- the tasks (proxies to the keepers) --------------------------------------------------------
def _connect(path: str) -> socket.socket | None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return s
    except (FileNotFoundError, ConnectionRefusedError):
        s.close()
        return None


class _Lost(Exception):
    """In a task: partition ``index``'s keeper is gone (``what``: how it showed). The task
    reports it as a record, not by failing: a failed task is a Java stack trace and a Python
    one in the driver's log, and a retried one would start a keeper without the partition's
    visited fingerprints."""

    def __init__(self, index: int, what: str):
        super().__init__(index, what)
        self.record = (index, socket.gethostname(), what)


def _keeper(ctx: tuple, index: int, start: bool = True) -> socket.socket:
    """A connection to partition ``index``'s keeper on this host, started when there is none
    (under a lock: two tasks of one partition start one keeper) and ``start`` (the keeper's
    first request of the search); else ``_Lost``: once a keeper has been given the
    partition's visited fingerprints, a new one would not hold them."""
    import fcntl
    import subprocess
    sid, spec, nparts = ctx
    path = _sock_path(sid, index)
    s = _connect(path)
    if s is not None:
        return s
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        s = _connect(path)
        if s is not None:
            return s
        if not start:
            # a keeper that ends (told to stop, idle, its daemon gone) removes its socket: one
            # left behind is a keeper killed (the OOM killer, a user) or crashed
            raise _Lost(index, "its socket is left but no process answers it (killed or "
                               "crashed)" if os.path.exists(path) else
                        "no keeper of it answers on this host (it ended, or the partition's "
                        "task ran on another host than before)")
        err = tempfile.TemporaryFile()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        proc = subprocess.Popen(
            [sys.executable, "-c", "from icecheck.engines.spark_bfs import _keeper_main; "
             "_keeper_main()", path, str(index), str(nparts), str(os.getppid())],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err, env=env,
            start_new_session=True, close_fds=True)
        proc.stdin.write(spec)
        proc.stdin.close()
        deadline = time.monotonic() + KEEPER_START
        while True:
            s = _connect(path)
            if s is not None:
                return s
            if proc.poll() is not None or time.monotonic() > deadline:
                err.seek(0)
                raise RuntimeError(f"spark-bfs: the keeper of partition {index} did not start: "
                                   + err.read().decode(errors="replace")[-2000:])
            time.sleep(0.05)


def _ask(ctx: tuple, index: int, request: tuple, start: bool = True):
    """Partition ``index``'s keeper's answer to ``request`` (``start``: see ``_keeper``)."""
    with _keeper(ctx, index, start) as s:
        try:
            _send(s, request)
        except OSError:
            raise _Lost(index, _ENDED) from None
        status, value = _answer(s, index)
    if status != "ok":
        raise RuntimeError(f"spark-bfs: the keeper of partition {index} failed:\n{value}")
    return value


def _answer(s: socket.socket, index: int) -> tuple:
    """The keeper's reply on ``s``; ``_Lost`` when the connection ends first: a keeper
    replies to whatever it is asked (its errors too), so only its process's end closes it."""
    try:
        return _recv(s)
    except (EOFError, OSError):
        raise _Lost(index, _ENDED) from None


_ENDED = "it ended during a request (killed, say by the OOM killer or a user, or crashed)"


def _expand_task(ctx: tuple, depth: int, g: int, records):
    """Partition ``g`` of level ``depth``'s expand stage (its one record: the winners' blobs
    for keeper ``g`` and the fingerprints it has seen, or None): (target, ("E", blob)) records
    and one (g, ("S", summary)); or (g, ("L", lost)) when keeper ``g`` is gone (``_Lost``).
    ``seen`` comes with a keeper's first level, which may start it."""
    for blobs, seen in records:
        if not blobs and seen is None:
            return
        try:
            out, summary = _ask(ctx, g, ("expand", depth, blobs, seen), start=seen is not None)
        except _Lost as e:
            yield g, ("L", e.record)
            return
        yield g, ("S", summary)
        for t, blob in out.items():
            yield t, ("E", blob)


def _dedup_task(ctx: tuple, depth: int, p: int, records):
    """Partition ``p`` of level ``depth``'s dedup stage: (generator, blob) records for the
    next level, (-1, summary) for each expand summary routed here, (-2, (p, new states, CPU
    seconds, the keeper's token)), (-3, lost) for a keeper gone (its expand's or this one's:
    keeper ``p`` was asked at the level it was handed its fingerprints, so it is never
    started here)."""
    blobs = []
    lost = False
    for _, (kind, v) in records:
        if kind == "S":
            yield -1, v
        elif kind == "L":
            lost = lost or v[0] == p
            yield -3, v
        else:
            blobs.append(v)
    if blobs and not lost:
        try:
            out, n = _ask(ctx, p, ("dedup", depth, blobs), start=False)
        except _Lost as e:
            yield -3, e.record
            return
        yield -2, n
        yield from out.items()


def _start_keepers(sc, ctx: tuple) -> None:
    """Start every partition's keeper: a job of a level's shape (a shuffle into one task per
    partition, each asking its keeper to answer), which also loads what Spark's first
    shuffle loads. Best effort: a keeper that did not start is started by its first task."""
    n = ctx[2]
    try:
        (sc.parallelize([(k, None) for k in range(n)], n).partitionBy(n, _ident)
         .mapPartitionsWithIndex(lambda k, it: [_ask(ctx, k, ("ping",))]).collect())
    except Exception:      # noqa: BLE001 -- the first level starts it and reports the error
        pass


def _stop_keepers(sid: str) -> None:
    """Stop every keeper of search ``sid`` on this host, each before the next (its
    connection closes when its process has ended), and remove the sockets of keepers that
    were killed (one that ends removes its own). Run when the search's jobs have ended."""
    d = _keeper_dir()
    for name in os.listdir(d):
        if name.startswith(sid + "-"):
            full = os.path.join(d, name)
            if name.endswith(".sock"):
                s = _connect(full)
                if s is None:
                    try:
                        os.unlink(full)
                    except OSError:
                        pass
                    continue
                with s:
                    try:
                        _send(s, ("stop",))
                        _recv(s)
                        s.settimeout(KEEPER_STOP)
                        s.recv(1)       # b"" once the keeper's process has closed its end
                    except (OSError, EOFError):
                        pass
            elif name.endswith(".lock"):
                try:
                    os.unlink(full)
                except OSError:
                    pass


# -- the driver -------------------------------------------------------------------------------
def spark_search(cfg, *, symmetry: bool = True, por: bool = True, bounds: Bounds = Bounds(),
                 master: str | None = None, partitions: int | None = None, spark=None,
                 time_budget: float | None = None, progress: Progress | None = None,
                 stop_on: frozenset[str] | None = None, evaluate: bool = True,
                 traces: bool = True, local_below: int = LOCAL_BELOW) -> Result:
    """``engines.explicit.search(engine=BFS)`` with the levels spread over Spark executors.

    ``spark``: a SparkSession to use (kept running); else one is made for ``master`` (None:
    spark-submit's, else ``local[*]``) and stopped at the end. ``partitions``: how many ways
    the fingerprints are split, each with its keeper process (default Spark's default
    parallelism: one per core). ``local_below``: ``LOCAL_BELOW`` (tests vary it to cover
    the levels run in the driver, the hand-over and the levels run in the keepers)."""
    from icecheck.engines.explicit import attach_traces, check_bounds, few_collections
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
    sid = uuid.uuid4().hex[:16]
    ctx = (sid, pickle.dumps((cfg, symmetry, por, bounds, evaluate)), nparts)
    # the keepers start (and Spark's first job warms up) while the driver runs the first levels
    warm = threading.Thread(target=_start_keepers, args=(sc, ctx), daemon=True,
                            name="icecheck-spark-bfs-start")
    warm.start()
    try:
        # the driver's own levels, as a keeper's (``SETTLE``); Spark's jobs allocate little
        with few_collections() as heap:
            _levels(sc, res, driver, ctx, bounds, start, deadline, progress, stop_on,
                    local_below, warm, heap.settle)
    except KeyboardInterrupt:
        res.stopped = "interrupted"
        sc.cancelAllJobs()
    finally:
        warm.join()
        try:
            sc.parallelize(range(nparts), nparts).foreach(lambda _: _stop_keepers(sid))
        except Exception:     # noqa: BLE001 -- a stopped context: its daemon's end stops them
            pass
        try:                  # and this host's, whatever Spark did (a lost keeper's socket)
            _stop_keepers(sid)
        except (OSError, RuntimeError):
            pass
        if own:
            spark.stop()
    res.seconds = time.monotonic() - start
    if traces:
        attach_traces(res)
    return res


def _levels(sc, res, driver, ctx, bounds, start, deadline, progress, stop_on,
            local_below, warm: threading.Thread, settle) -> None:
    nparts = ctx[2]
    s0 = driver.model.initial()
    fp0, _ = driver.fingerprints(s0)
    # the first levels, in the driver's own keeper (one partition, no Spark job)
    here: _Keeper | None = _Keeper(ctx[1], 0, 1, settle)
    mine = [pickle.dumps([(-1, fp0, _NONE, ())])]     # the initial state, from its empty path
    # then a level's input, per keeper: (pickled winners (handle, fp, pruned, path), the
    # pickled fingerprints it has seen when it is the first level there, else None)
    inbox: list = []
    res.states = 1
    work: dict[int, Counter] = {k: Counter() for k in range(nparts)}   # per keeper
    work["driver"] = Counter()
    keepers: dict[int, str] = {}     # partition -> the token of the keeper that answers it
    depth = 0
    frontier = 1
    # per level: (depth, its frontier, where it ran, wall seconds, each keeper's CPU seconds)
    levels: list[tuple] = []
    try:
        while True:
            began = time.monotonic()
            if deadline is not None and time.monotonic() >= deadline:
                res.stopped = "time budget"
                raise _Stop()
            res.max_depth = depth
            if here is not None and frontier >= local_below * nparts:
                warm.join()
                inbox = _hand_over(here, mine, nparts)
                here = mine = None
            cpus: Counter = Counter()
            if here is not None:
                where = "driver"
                out, summary = here.expand(depth, mine)
                winners, (_, new, cpu, _) = here.dedup(depth, list(out.values()))
                mine = list(winners.values())
                summaries = [("driver",) + summary[1:]]
                work["driver"]["dedup_cpu"] += cpu
                cpus["driver"] += cpu
            else:
                where = "spark"
                got = (sc.parallelize(inbox, nparts)
                       .mapPartitionsWithIndex(
                           lambda g, it, d=depth: _expand_task(ctx, d, g, it))
                       .partitionBy(nparts, _ident)
                       .mapPartitionsWithIndex(
                           lambda p, it, d=depth: _dedup_task(ctx, d, p, it))
                       .collect())
                inbox = [([], None) for _ in range(nparts)]
                new = 0
                summaries = []
                lost = sorted(v for k, v in got if k == -3)
                if lost:
                    raise KeeperLost(*lost[0], depth=depth, token=keepers.get(lost[0][0]))
                for k, v in got:
                    if k >= 0:
                        inbox[k][0].append(v)
                    elif k == -1:
                        summaries.append(v)
                    else:
                        p, n, cpu, token = v
                        _same_keeper(keepers, p, token, depth)
                        new += n
                        work[p]["dedup_cpu"] += cpu
                        cpus[p] += cpu
                got = None
            firsts: dict[tuple, tuple] = {}
            for g, stats, f, counts, w, token in summaries:
                if g != "driver":
                    _same_keeper(keepers, g, token, depth)
                rss = w.pop("peak_rss_mb")
                work[g].update(w)
                cpus[g] += w["expand_cpu"]
                work[g]["peak_rss_mb"] = max(work[g]["peak_rss_mb"], rss)
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
            if bounds.max_states is not None and res.states + new > bounds.max_states:
                res.stopped = "max states"
                res.cut += new
                raise _Stop()
            res.states += new
            levels.append((depth, frontier, where, time.monotonic() - began, dict(cpus)))
            if progress:
                progress({"states": res.states, "depth": depth, "frontier": new,
                          "transitions": res.transitions, "elapsed": time.monotonic() - start})
            if not new:
                break
            frontier = new
            depth += 1
        res.complete = True
    except _Stop:
        pass
    total = sum(work.values(), Counter())
    del total["peak_rss_mb"]
    res.notes.append(f"frontier states: {total['reused']:,} expanded where they were "
                     f"generated, {total['replayed']:,} rebuilt from their paths")
    res.notes.append("keepers (expanded states, verdicts evaluated, CPU seconds expanding + "
                     "deduplicating, peak resident MB): " + "; ".join(
                         f"{k}: {w['reused'] + w['replayed']:,}, {w['verdicts']:,}, "
                         f"{w['expand_cpu']:.1f} + {w['dedup_cpu']:.1f}, "
                         f"{w['peak_rss_mb']:,.0f}" for k, w in work.items()))
    res.spark_work = {k: dict(w) for k, w in work.items()}
    res.spark_levels = levels


class KeeperLost(RuntimeError):
    """A partition's keeper is gone mid-search (killed, say by the OOM killer or a user,
    crashed, or the partition's task ran on another host than before): the partition's
    visited fingerprints were only in it, so the search cannot go on (a new keeper would
    count states again). One line for the CLI (``icecheck explore`` reports it as
    INCONCLUSIVE, exit 1): which partition's keeper, what showed it, and what to do."""

    def __init__(self, partition: int, host: str | None, what: str, *, depth: int,
                 token: str | None = None):
        self.partition, self.depth = partition, depth
        pid = token.split(":", 1)[0] if token else None
        where = ", ".join(x for x in ((f"pid {pid}" if pid else ""),
                                      (f"on {host}" if host else "")) if x)
        super().__init__(
            f"spark-bfs: the keeper of partition {partition}{f' ({where})' if where else ''} "
            f"was lost at depth {depth}: {what}. Its partition's visited fingerprints were "
            "only in it, so the search cannot go on. Rerun it (spark-bfs has neither "
            "--checkpoint/--resume nor --max-memory); if the OOM killer ended it (dmesg), "
            "give the search more memory, or run --engine bfs with --max-memory MB "
            "--checkpoint DIR, which stops cleanly and resumes")


def _same_keeper(keepers: dict, k: int, token: str, depth: int) -> None:
    """Partition ``k`` is answered by the keeper that answered it before: another one (its
    task ran on another host, or the keeper died and a task started a new one) does not hold
    the partition's visited fingerprints, and would count states again."""
    if keepers.setdefault(k, token) != token:
        raise KeeperLost(k, None, "another keeper answered for it (its task ran on another "
                                  "host, or the keeper ended and was started again; on a "
                                  "cluster of several hosts Spark does not promise to run a "
                                  "partition's tasks on one host: docs/exhaustive.md)",
                         depth=depth, token=keepers[k])


def _hand_over(here: _Keeper, mine: list, nparts: int) -> list:
    """The first level too wide for the driver: each of its states goes to the keeper of its
    fingerprint's partition, rebuilt there from its path (handle -1), and each keeper gets
    the fingerprints of its partition the driver has seen."""
    items: list[list] = [[] for _ in range(nparts)]
    for b in mine:
        for _, fp, pruned, path in pickle.loads(b):
            items[fp_partition(fp) % nparts].append((-1, fp, pruned, path))
    seen: list[list] = [[] for _ in range(nparts)]
    for fp in here.visited | here.added:
        seen[fp_partition(fp) % nparts].append(fp)
    return [([pickle.dumps(items[k], protocol=_PICKLE)] if items[k] else [],
             pickle.dumps(seen[k], protocol=_PICKLE)) for k in range(nparts)]
