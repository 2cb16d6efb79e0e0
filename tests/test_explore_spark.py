"""``--engine spark-bfs`` (engines/spark_bfs.py) explores exactly what the local BFS does: the
same distinct states, transitions, final states, verdicts, counts of violating states, coverage
and the same shortest counterexamples. Bounded by counts (small configurations), never time.
Skipped with the reason when Java or pyspark is missing."""

import os
import pickle
import shutil

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[conformance]')")
if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
    pytest.skip("no Java (apt-get install openjdk-17-jre-headless or set JAVA_HOME)",
                allow_module_level=True)

from icecheck.engines.config import mix_config  # noqa: E402
from icecheck.engines.explicit import Bounds, Expander, search, with_retries  # noqa: E402
from icecheck.engines.spark_bfs import _Keeper, _keeper_dir, spark_search  # noqa: E402


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

    with pytest.raises(RuntimeError, match="lost its keeper"):
        spark_search(cfg, spark=spark, partitions=2, traces=False, local_below=0,
                     progress=progress)
    assert sockets() <= before


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
