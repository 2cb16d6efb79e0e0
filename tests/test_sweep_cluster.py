"""The sweep's cluster path on a Spark standalone cluster on this machine (sweep/standalone.py):
a Master and a Worker JVM on 127.0.0.1, executors launched by the worker, icecheck's code
shipped as a wheel. Opt-in (ICECHECK_CLUSTER_TEST=1: it starts two JVMs and an application,
about a minute here); the same cells must give the same results as the processes executor."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest
from _deps_python import deps_only_python

pytestmark = pytest.mark.skipif(os.environ.get("ICECHECK_CLUSTER_TEST") != "1",
                                reason="opt-in: ICECHECK_CLUSTER_TEST=1 (starts a standalone "
                                       "Spark cluster on 127.0.0.1)")


def _cells(out: str) -> dict:
    found = {}
    for path in glob.glob(os.path.join(out, "cells", "*.json")):
        doc = json.load(open(path))
        found[os.path.basename(path)] = {k: v for k, v in doc.items()      # not where/when
                                         if "second" not in k and k not in ("host", "pid")}
    return found


def test_sweep_on_a_standalone_cluster_matches_the_processes_executor(tmp_path, monkeypatch):
    pytest.importorskip("pyspark")
    from icecheck.sweep.standalone import standalone_cluster

    workers_python = deps_only_python(tmp_path / "deps")
    probe = subprocess.run([workers_python, "-c", "import pyspark, z3, hypothesis, yaml; "
                            "import icecheck"], capture_output=True, text=True, cwd=str(tmp_path))
    assert "No module named 'icecheck'" in probe.stderr, probe.stderr   # deps yes, icecheck no
    tmp = tmp_path / "tmp"                 # the workers' $TMPDIR: where they unpack the wheel
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    env = dict(os.environ, PYSPARK_PYTHON=workers_python, SPARK_LOCAL_IP="127.0.0.1")
    cli = [sys.executable, "-m", "icecheck", "sweep", "--profile",
           "spark-3.5-cow-serializable", "--json"]
    with standalone_cluster(cores=2, memory="1g", workdir=str(tmp_path / "cluster")) as master:
        p = subprocess.run(cli + ["--master", master, "--out", str(tmp_path / "c")], env=env,
                           capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    summary = json.loads(p.stdout)                    # stdout is the JSON summary alone
    assert summary["meta"]["master"] == master
    # the wheel was shipped with addFile to the executor's work dir
    assert glob.glob(str(tmp_path / "cluster" / "work" / "app-*" / "*" / "icecheck-*.whl"))
    # ... and unpacked by the workers into $TMPDIR/icecheck-code-<hash> (the driver's own build
    # folder, also icecheck-code-*, is gone once the sweep stops): one unpacked copy
    unpacked = glob.glob(str(tmp / "icecheck-code-*" / "icecheck" / "sweep" / "distributed.py"))
    assert len(unpacked) == 1, os.listdir(tmp)
    env["PYSPARK_PYTHON"] = sys.executable
    q = subprocess.run(cli + ["--executor", "processes", "--out", str(tmp_path / "p")],
                       env=env, capture_output=True, text=True, timeout=900)
    assert q.returncode == 0, q.stderr[-2000:]
    assert json.loads(q.stdout)["by_status"] == summary["by_status"]
    cluster, local = _cells(str(tmp_path / "c")), _cells(str(tmp_path / "p"))
    assert cluster and cluster == local


def test_spark_submit_on_a_standalone_cluster_prints_only_json(tmp_path):
    """The documented spark-submit form (docs/sweep.md): spark-submit's --master stands and
    stdout is the JSON summary alone."""
    pytest.importorskip("pyspark")
    from icecheck.sweep.standalone import spark_home, standalone_cluster

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1")
    with standalone_cluster(cores=2, memory="1g", workdir=str(tmp_path / "cluster")) as master:
        p = subprocess.run([os.path.join(spark_home(), "bin", "spark-submit"), "--master",
                            master, os.path.join(root, "icecheck", "__main__.py"), "sweep",
                            "--profile", "spark-3.5-cow-serializable", "--catalog", "cas",
                            "--out", str(tmp_path / "o"), "--json"],
                           env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert doc["meta"]["master"] == master and doc["cells"] > 0
