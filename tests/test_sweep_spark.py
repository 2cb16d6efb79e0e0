"""``icecheck sweep`` end to end on Spark (local[2]): a 3-cell space, results back through Spark,
Parquet, reports, and resume. Skipped with the reason when Java or pyspark is missing."""

import json
import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[conformance]')")
if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
    pytest.skip("no Java (apt-get install openjdk-17-jre-headless or set JAVA_HOME)",
                allow_module_level=True)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARGS = ["--master", "local[2]", "--profile", "spark-3.5-mor-snapshot,spark-3.5-mor-serializable",
        "--catalog", "cas", "--format", "2", "--commands", "DELETE+UPDATE"]


def sweep(out, *extra):
    return subprocess.run([sys.executable, "-m", "icecheck", "sweep", *ARGS, "--out", str(out),
                           "--json", *extra], cwd=ROOT, capture_output=True, text=True,
                          timeout=240)


@pytest.fixture(scope="module")
def spark_sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep")
    # the cell ids, without Spark
    p = subprocess.run([sys.executable, "-m", "icecheck", "sweep", *ARGS, "--list"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    ids = [line.split()[0] for line in p.stdout.splitlines() if "spark-3.5" in line]
    assert len(ids) == 2
    first = sweep(out, "--fresh")
    assert first.returncode == 0, first.stderr[-3000:]
    return out, ids, json.loads(first.stdout)


def test_results_come_back_through_spark(spark_sweep):
    out, ids, summary = spark_sweep
    assert summary["meta"]["master"] == "local[2]" and summary["cells"] == 2
    assert summary["by_status"] == {"known_finding": 1, "clean": 1}
    assert summary["meta"]["cells_run"] == 2
    for cid in ids:
        r = json.loads((out / "cells" / f"{cid}.json").read_text())
        assert r["pid"] != os.getpid() and r["status"] in ("known_finding", "clean")
    assert (out / "results.parquet").is_dir()
    assert any(f.endswith(".parquet") for f in os.listdir(out / "results.parquet"))
    assert (out / "index.html").exists() and (out / "index.md").exists()


def test_parquet_readable(spark_sweep):
    out, _, _ = spark_sweep
    from icecheck.sweep.distributed import spark_session
    spark = spark_session("local[1]")
    try:
        rows = {r["profile"]: r for r in
                spark.read.parquet(str(out / "results.parquet")).collect()}
    finally:
        spark.stop()
    assert rows["spark-3.5-mor-snapshot"]["status"] == "known_finding"
    assert "undelete" in rows["spark-3.5-mor-snapshot"]["known_findings"]
    assert rows["spark-3.5-mor-serializable"]["status"] == "clean"
    assert rows["spark-3.5-mor-serializable"]["complete"]


def test_resume_skips_finished_cells(spark_sweep):
    out, ids, _ = spark_sweep
    # forget one cell: the resumed run must run exactly that one
    os.unlink(out / "cells" / f"{ids[1]}.json")
    again = sweep(out)
    assert again.returncode == 0, again.stderr[-3000:]
    s = json.loads(again.stdout)
    assert s["meta"]["cells_run"] == 1 and s["meta"]["cells_resumed"] == 1 and s["cells"] == 2


def test_workers_without_icecheck_and_no_shipping_get_one_line(tmp_path):
    """Workers whose Python lacks icecheck, code not shipped (local masters do not ship): one
    line naming --ship-code and exit 2, not the driver's Py4JJavaError traceback."""
    from _deps_python import deps_only_python
    env = dict(os.environ, PYSPARK_PYTHON=deps_only_python(tmp_path / "deps"),
               SPARK_LOCAL_IP="127.0.0.1")
    p = subprocess.run([sys.executable, "-m", "icecheck", "sweep", "--master", "local[1]",
                        "--profile", "spark-3.5-cow-serializable", "--catalog", "cas",
                        "--format-version", "2", "--out", str(tmp_path / "o"), "--json"],
                       env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    assert p.returncode == 2, p.stderr[-2000:]
    # the driver's last word is one line (Spark's executor logs the task's failure above it in
    # local mode; on a cluster that log is in the executor's stderr file, not the driver's)
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("error: --ship-code: the Spark workers' Python"), p.stderr[-2000:]
    assert "cannot import icecheck: run with --ship-code" in last
    assert "Py4JJavaError" not in p.stderr, p.stderr[-2000:]       # no driver traceback
