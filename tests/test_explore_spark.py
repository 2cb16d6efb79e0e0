"""``--engine spark-bfs`` (engines/spark_bfs.py) explores exactly what the local BFS does: the
same distinct states, transitions, final states, verdicts, counts of violating states, coverage
and the same shortest counterexamples. Bounded by counts (small configurations), never time.
Skipped with the reason when Java or pyspark is missing."""

import os
import pickle
import select
import shutil
import signal
import sys

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[conformance]')")
if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
    pytest.skip("no Java (apt-get install openjdk-17-jre-headless or set JAVA_HOME)",
                allow_module_level=True)

from icecheck.engines.config import mix_config  # noqa: E402
from icecheck.engines.explicit import Bounds, Expander, search, with_retries  # noqa: E402
from icecheck.engines.spark_bfs import (KeeperLost, _Keeper, _keeper_dir,  # noqa: E402
                                        spark_search)


@pytest.fixture(scope="module")
def spark():
    from icecheck.sweep.distributed import spark_session
    s = spark_session("local[2]", app="icecheck-test-spark-bfs")
    yield s
    s.stop()


def summary(r):
    found = {**r.violations, **r.allowed}
    return {"states": r.states, "finals": r.final_states, "transitions": r.transitions,
            "enabled": r.enabled_transitions, "max_depth": r.max_depth, "cut": r.cut,
            "complete": r.complete, "stopped": r.stopped,
            "violations": {p: v.known for p, v in r.violations.items()},
            "allowed": sorted(r.allowed),
            "firsts": {p: (v.depth, v.actions, v.states_before) for p, v in found.items()},
            "violation_counts": dict(r.violation_counts),
            "allowed_counts": dict(r.allowed_counts), "coverage": dict(r.coverage),
            "reached": dict(r.reached), "outcomes": r.outcomes}


MOR = ("spark-3.5-mor-snapshot", 3, 1, ("delete", "update"), 1, "cas", 2, 1)
LWW = ("spark-3.5-cow-serializable", 3, 1, ("insert",), 1, "last_writer_wins", 2, 4)


def sockets():
    return set(os.listdir(_keeper_dir()))


def processes_naming(text: str) -> list[int]:
    """The pids of the live processes whose command line holds ``text`` (a keeper's holds its
    socket's path, so its search's id)."""
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if text.encode() in f.read():
                        pids.append(int(d))
            except OSError:
                pass
    return pids


def kill_and_wait(pid: int, sig=signal.SIGKILL) -> None:
    """SIGKILL ``pid`` (as the OOM killer does) and return once it has ended (a pidfd turns
    readable then), so what a test does next meets a dead process, whatever the machine's
    load."""
    fd = os.pidfd_open(pid)
    try:
        os.kill(pid, sig)
        assert select.select([fd], [], [], 120)[0], f"process {pid} did not end"
    finally:
        os.close(fd)


@pytest.mark.parametrize("conf,partitions,local_below", [
    # violations (two known findings, found at depth 6); every level in the keepers from
    # the initial state on (each state expanded where it was generated: all in one keeper)
    (MOR, 3, 0),
    # the first two levels in the driver, the third handed over (its states rebuilt from
    # their paths in the keepers of their fingerprints), the rest in the keepers
    (MOR, 3, 1),
    # every level in the driver's own keeper
    (MOR, 2, 10 ** 9),
    # an allowed anomaly under a last-writer-wins catalog
    (LWW, 2, 1),
])
def test_spark_bfs_equals_local_bfs(spark, conf, partitions, local_below):
    cfg = with_retries(mix_config(*conf[:7]), conf[7])
    local = search(cfg, engine="bfs", workers=1, traces=False)
    before = sockets()
    dist = spark_search(cfg, spark=spark, partitions=partitions, traces=False,
                        local_below=local_below)
    assert dist.engine == "spark-bfs" and dist.complete
    assert summary(dist) == summary(local)
    assert local.violations or local.allowed      # the comparison covers counterexamples
    work = dist.spark_work
    kept = sum(work[k].get("reused", 0) + work[k].get("replayed", 0) for k in range(partitions))
    in_driver = work["driver"].get("reused", 0) + work["driver"].get("replayed", 0)
    assert kept + in_driver == local.states
    if local_below == 0:
        assert in_driver == 0 and sum(work[k].get("replayed", 0) for k in work) == 1
    elif local_below == 1:
        assert 0 < in_driver < local.states
        assert sum(work[k].get("replayed", 0) for k in range(partitions)) > 1
    else:
        assert kept == 0
    # a level each, in order, run in the driver then in the keepers; the CPU they report per
    # level adds up to what they report for the whole search
    levels = dist.spark_levels
    assert [lv[0] for lv in levels] == list(range(dist.max_depth + 1))
    where = [lv[2] for lv in levels]
    assert where == sorted(where)          # "driver" ... then "spark" ...
    assert ("driver" in where) == (local_below > 0) and ("spark" in where) == (kept > 0)
    assert all(lv[3] >= 0 and all(c >= 0 for c in lv[4].values()) for lv in levels)
    for k in list(range(partitions)) + ["driver"]:
        cpu = work[k].get("expand_cpu", 0) + work[k].get("dedup_cpu", 0)
        assert sum(lv[4].get(k, 0) for lv in levels) == pytest.approx(cpu)
    assert sockets() <= before        # the search's keepers ended with it


def test_a_lost_keeper_stops_the_search(spark):
    """A partition answered by another keeper than before (here: one keeper told to stop
    after the second level, so the next task starts a new one) has lost its visited
    fingerprints: the search stops with an error instead of counting states again."""
    from icecheck.engines.spark_bfs import _ask
    cfg = with_retries(mix_config(*MOR[:7]), MOR[7])
    before = sockets()

    def progress(p):
        if p["depth"] == 1:
            mine = sorted(f for f in sockets() - before if f.endswith(".sock"))
            sid, k = mine[0][:-len(".sock")].rsplit("-", 1)
            _ask((sid, b"", 2), int(k), ("stop",))

    with pytest.raises(KeeperLost, match=r"the keeper of partition \d \(pid \d+, on .+\) was "
                       "lost at depth 2: no keeper of it answers on this host"):
        spark_search(cfg, spark=spark, partitions=2, traces=False, local_below=0,
                     progress=progress)
    assert sockets() <= before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux's /proc, pidfd")
def test_a_killed_keeper_ends_the_cli_with_one_line_and_leaves_nothing(spark, monkeypatch):
    """A keeper killed mid-search (SIGKILL, as the OOM killer sends; here after the second
    level, a count): ``icecheck explore --engine spark-bfs`` ends with one INCONCLUSIVE line
    naming the partition's keeper, that its visited fingerprints are lost, and what to do,
    exit 1, no traceback; no keeper process nor socket of the search is left. The search is
    the CLI's, on the module's session (the CLI would make and stop its own) with every level
    in the keepers (the CLI's configurations this small run in the driver)."""
    from click.testing import CliRunner

    from icecheck.cli.main import main
    from icecheck.engines import spark_bfs

    real = spark_bfs.spark_search
    before = sockets()
    killed: list = []

    def search_killing_a_keeper(cfg, progress=None, **kw):
        def progress_then_kill(p):
            progress(p)
            if p["depth"] == 1:
                sock = min(f for f in sockets() - before if f.endswith(".sock"))
                sid, k = sock[:-len(".sock")].rsplit("-", 1)
                [pid] = processes_naming(os.path.join(_keeper_dir(), sock))
                kill_and_wait(pid)
                killed.append((sid, int(k), pid))
        kw.update(spark=spark, partitions=2, local_below=0)
        return real(cfg, progress=progress_then_kill, **kw)

    monkeypatch.setattr(spark_bfs, "spark_search", search_killing_a_keeper)
    res = CliRunner().invoke(main, ["explore", "--engine", "spark-bfs", "--profile", MOR[0],
                                    "--writers", "3", "--ops", "1", "--mix", "delete,update",
                                    "--retries", "1"])
    [(sid, k, pid)] = killed
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output and not isinstance(res.exception, KeeperLost)
    last = res.output.strip().splitlines()[-1]
    assert last.startswith(f"INCONCLUSIVE: spark-bfs: the keeper of partition {k} (pid {pid}, "
                           "on "), last
    assert ("was lost at depth 2: its socket is left but no process answers it (killed or "
            "crashed). Its partition's visited fingerprints were only in it, so the search "
            "cannot go on. Rerun it") in last
    assert "--max-memory MB --checkpoint DIR" in last
    assert sockets() <= before, sockets() - before
    assert processes_naming(sid) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux's /proc, pidfd")
def test_a_keeper_killed_during_a_request_is_lost():
    """The task's side of a keeper killed while it holds a request (the OOM killer strikes a
    keeper busy expanding): the connection's end is ``_Lost`` (a record for the driver, not a
    failed task), a later task finds its socket left and does not start a keeper without the
    partition's fingerprints, and the end of the search removes the socket. A real keeper,
    stopped (SIGSTOP) while the request is sent, so it is killed with the request unanswered;
    and a keeper answering with another token is lost too (``_same_keeper``)."""
    from icecheck.engines.spark_bfs import (_answer, _connect, _keeper, _Lost, _same_keeper,
                                            _send, _sock_path, _stop_keepers)
    import uuid
    cfg = with_retries(mix_config(*MOR[:7]), MOR[7])
    sid = "test" + uuid.uuid4().hex[:12]
    ctx = (sid, pickle.dumps((cfg, True, True, Bounds(), True)), 1)
    path = _sock_path(sid, 0)
    try:
        _keeper(ctx, 0).close()                   # starts a real keeper process
        [pid] = processes_naming(path)
        os.kill(pid, signal.SIGSTOP)
        s = _connect(path)
        _send(s, ("ping",))
        kill_and_wait(pid)
        with s, pytest.raises(_Lost) as lost:
            _answer(s, 0)
        assert lost.value.record[0] == 0 and "ended during a request" in lost.value.record[2]
        with pytest.raises(_Lost, match="socket is left but no process answers it"):
            _keeper(ctx, 0, start=False)
        assert processes_naming(sid) == []         # no keeper started in its place
    finally:
        _stop_keepers(sid)
    assert not any(f.startswith(sid) for f in sockets())
    keepers: dict = {}
    _same_keeper(keepers, 0, "41:a", 3)
    _same_keeper(keepers, 0, "41:a", 4)
    with pytest.raises(KeeperLost, match=r"partition 0 \(pid 41\) was lost at depth 5: another "
                                          "keeper answered for it"):
        _same_keeper(keepers, 0, "42:b", 5)


def test_a_keeper_without_the_states_rebuilds_them_and_a_retried_dedup_repeats_itself():
    """A keeper asked to expand states it does not hold (a task that ran on another host, a
    keeper restarted, a retried level) rebuilds them from their paths and answers as the
    keeper that held them; a dedup retried answers the same winners."""
    cfg = with_retries(mix_config(*MOR[:7]), MOR[7])
    spec = pickle.dumps((cfg, True, True, Bounds(), True))
    fp0, _ = Expander(cfg, True, True, Bounds()).fingerprints(
        Expander(cfg, True, True, Bounds()).model.initial())
    held = _Keeper(spec, 0, 1)
    mine = [pickle.dumps([(-1, fp0, frozenset(), ())])]
    for depth in range(4):
        out, summary_ = held.expand(depth, mine)
        winners, (_, n, _, _) = held.dedup(depth, list(out.values()))
        again, (_, n2, _, _) = held.dedup(depth, list(out.values()))
        assert (again, n2) == (winners, n) and n > 0
        mine = list(winners.values())
    fresh = _Keeper(spec, 0, 1)
    fresh.visited = held.visited | held.added
    out_f, sum_f = fresh.expand(4, mine)
    out_h, sum_h = held.expand(4, mine)
    assert sum_h[4]["replayed"] == 0 and sum_f[4]["replayed"] == sum_h[4]["reused"] > 0
    unpickled = [{t: pickle.loads(b) for t, b in o.items()} for o in (out_f, out_h)]
    # the same edges, but for the handles, which index each keeper's own list
    assert ([(fp, c[:4] + c[6:]) for fp, c in unpickled[0][0]]
            == [(fp, c[:4] + c[6:]) for fp, c in unpickled[1][0]])
    assert (sum_f[1].as_dict(), sum_f[2], sum_f[3]) == (sum_h[1].as_dict(), sum_h[2], sum_h[3])


def test_max_states_cuts_like_local_bfs(spark):
    cfg = with_retries(mix_config("spark-3.5-cow-serializable", 3, 1, ("insert",), 1,
                                  "last_writer_wins", 2), 4)
    local = search(cfg, engine="bfs", workers=1, bounds=Bounds(max_states=30), traces=False)
    dist = spark_search(cfg, spark=spark, partitions=2, bounds=Bounds(max_states=30),
                        traces=False)
    assert not dist.complete and dist.stopped == "max states"
    assert summary(dist) == summary(local)


@pytest.mark.skipif(not os.path.isdir("/proc/self/net"), reason="needs Linux's /proc")
def test_local_session_listens_on_loopback_only(spark):
    """A local session's driver (RPC endpoint, block manager) binds to loopback, not to the
    host's address that Spark picks by default (``sweep.distributed.LOOPBACK``)."""
    from _net_util import is_loopback, jvm_pid, listening
    addrs = listening(jvm_pid(spark))
    assert addrs and all(is_loopback(a) for a in addrs), addrs


def test_split_on_spark_equals_the_local_split(spark):
    """``--engine spark-bfs --split``: each part a Spark task (engines/split.py ``_on_spark``),
    the same merged result as the parts searched in this process, in part order."""
    from icecheck.engines.split import split_search
    cfg = with_retries(mix_config("spark-3.5-cow-serializable", 2, 2, ("delete", "update"), 1),
                       1)
    here = split_search(cfg, workers=1, traces=False)
    there = split_search(cfg, spark=spark, traces=False)
    assert there.engine == "spark-bfs" and there.parts == here.parts > 1
    assert summary(there) == summary(here)
    # and what the whole search finds
    whole = search(cfg, traces=False)
    assert {p: v.depth for p, v in there.violations.items()} == \
        {p: v.depth for p, v in whole.violations.items()}
    assert there.outcomes == whole.outcomes


def test_split_on_spark_from_the_cli(spark, monkeypatch):
    import json

    from click.testing import CliRunner

    from icecheck.cli.main import main
    from icecheck.sweep import distributed
    monkeypatch.setattr(distributed, "spark_session", lambda *a, **k: _Kept(spark))
    res = CliRunner().invoke(main, ["explore", "--engine", "spark-bfs", "--split", "--profile",
                                    "spark-3.5-mor-snapshot", "--writers", "3", "--mix",
                                    "delete,update", "--retries", "0", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["engine"] == "spark-bfs" and doc["parts"] == 4 and doc["complete"]
    assert {v["property"] for v in doc["violations"]} == {"isolation", "undelete"}


class _Kept:
    """The module's session, which the search must not stop (the other tests use it)."""

    def __init__(self, spark):
        self._spark = spark

    def __getattr__(self, name):
        return getattr(self._spark, name)

    def stop(self):
        pass
