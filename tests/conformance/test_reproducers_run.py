"""Run the standalone reproducers (reproducers/) on the real libraries: each must exit 0
("REPRODUCED"). The Spark one gets icecheck's Iceberg classpath through ICEBERG_SPARK_JARS
instead of downloading the runtime from Maven."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPRO = os.path.join(ROOT, "reproducers")


def _run(name, env=None):
    p = subprocess.run([sys.executable, os.path.join(REPRO, name)], capture_output=True,
                       text=True, timeout=600, env={**os.environ, **(env or {})})
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "NOT REPRODUCED" not in p.stdout and "REPRODUCED" in p.stdout
    return p.stdout


def test_pyiceberg_upsert_duplicate_key():
    from icecheck.conformance.targets import TargetUnavailable, get_target
    try:
        get_target("pyiceberg").ready()
    except TargetUnavailable as e:
        pytest.skip(f"PyIceberg unavailable: {e}")
    assert "id 3 has two rows" in _run("pyiceberg_upsert_duplicate_key.py")


def test_spark_mor_delete_races():
    from icecheck.conformance.targets import TargetUnavailable, get_target
    try:
        get_target("spark").ready()
    except TargetUnavailable as e:
        pytest.skip(f"Spark unavailable: {e}")
    from icecheck.conformance.spark_session import classpath
    out = _run("spark_mor_delete_races.py", {"ICEBERG_SPARK_JARS": ",".join(classpath())})
    assert out.count("REPRODUCED:") == 2


def test_spark_insert_only_merge_duplicates():
    from icecheck.conformance.targets import TargetUnavailable, get_target
    try:
        get_target("spark").ready()
    except TargetUnavailable as e:
        pytest.skip(f"Spark unavailable: {e}")
    from icecheck.conformance.spark_session import classpath
    out = _run("spark_insert_only_merge_duplicates.py",
               {"ICEBERG_SPARK_JARS": ",".join(classpath())})
    assert "both insert-only MERGEs inserted id 2" in out


def test_mixed_spark_merge_pyiceberg_upsert_duplicate():
    from icecheck.conformance.targets import TargetUnavailable, get_target
    try:
        get_target("spark").ready()
        get_target("pyiceberg").ready()
    except TargetUnavailable as e:
        pytest.skip(f"Spark or PyIceberg unavailable: {e}")
    if not os.path.exists("/usr/share/java/sqlite-jdbc.jar"):
        pytest.skip("the SQLite JDBC driver (libxerial-sqlite-jdbc-java) is not installed")
    from icecheck.conformance.spark_session import classpath
    out = _run("mixed_spark_merge_pyiceberg_upsert_duplicate.py",
               {"ICEBERG_SPARK_JARS": ",".join(classpath())})
    assert "both inserted id 2" in out


def test_spark_compaction_dangling_deletes():
    from icecheck.conformance.targets import TargetUnavailable, get_target
    try:
        get_target("spark").ready()
    except TargetUnavailable as e:
        pytest.skip(f"Spark unavailable: {e}")
    from icecheck.conformance.spark_session import classpath
    out = _run("spark_compaction_dangling_deletes.py",
               {"ICEBERG_SPARK_JARS": ",".join(classpath())})
    assert "1 pointing at a removed data file" in out
