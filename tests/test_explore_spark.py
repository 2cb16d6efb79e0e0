"""``--engine spark-bfs`` (engines/spark_bfs.py) explores exactly what the local BFS does: the
same distinct states, transitions, final states, verdicts, counts of violating states, coverage
and the same shortest counterexamples. Bounded by counts (small configurations), never time.
Skipped with the reason when Java or pyspark is missing."""

import os
import shutil

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[conformance]')")
if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
    pytest.skip("no Java (apt-get install openjdk-17-jre-headless or set JAVA_HOME)",
                allow_module_level=True)

from icecheck.engines.config import mix_config  # noqa: E402
from icecheck.engines.explicit import Bounds, search, with_retries  # noqa: E402
from icecheck.engines.spark_bfs import spark_search  # noqa: E402


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


@pytest.mark.parametrize("conf,partitions", [
    # violations (two known findings, found at depth 6)
    (("spark-3.5-mor-snapshot", 3, 1, ("delete", "update"), 1, "cas", 2, 1), 3),
    # an allowed anomaly under a last-writer-wins catalog
    (("spark-3.5-cow-serializable", 3, 1, ("insert",), 1, "last_writer_wins", 2, 4), 2),
])
def test_spark_bfs_equals_local_bfs(spark, conf, partitions):
    cfg = with_retries(mix_config(*conf[:7]), conf[7])
    local = search(cfg, engine="bfs", workers=1, traces=False)
    dist = spark_search(cfg, spark=spark, partitions=partitions, traces=False)
    assert dist.engine == "spark-bfs" and dist.complete
    assert summary(dist) == summary(local)
    assert local.violations or local.allowed      # the comparison covers counterexamples


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
