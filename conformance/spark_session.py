"""One local SparkSession (Spark 3.5 + Iceberg 1.10.2) per Python process, for the Spark target.

``get_spark()`` starts it on first use and returns the same session afterwards; writers are
``spark.newSession()`` children (own SQL conf and temp views, one SparkContext/JVM). The Iceberg
catalog ``ice`` is a ``SparkCatalog`` of ``type=hadoop`` on a temp warehouse with
``cache-enabled=false``, so every statement loads the table afresh and sees the other
sessions' commits.

Ordering gate: the Python UDF ``icecheck_gate(token, x)`` returns true, but first writes the
marker ``<gate dir>/<token>.started`` and then waits until ``<gate dir>/<token>.go`` exists.
Python UDFs run in Spark's Python worker processes, so the signal goes through files, not
threading events. A statement whose condition calls the gate has planned its scan (pinned its
snapshot) before the gate runs, and cannot commit before the driver opens it.

Environment: ``ICECHECK_SPARK_MEMORY`` (driver memory, default 768m), ``ICECHECK_KEEP_WAREHOUSE=1``.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
import time

_lock = threading.Lock()
_spark = None
_warehouse: str | None = None
_gate_dir: str | None = None
start_seconds: float | None = None

CATALOG = "ice"
GATE_TIMEOUT_S = 120.0


class SparkUnavailable(Exception):
    """pyspark, Java or the Iceberg jars are missing (the message says what to do)."""


def _gate_udf_factory(gate_dir: str):
    def icecheck_gate(token, _value):
        import os as _os
        import time as _time

        started = _os.path.join(gate_dir, f"{token}.started")
        go = _os.path.join(gate_dir, f"{token}.go")
        if not _os.path.exists(started):
            try:
                with open(started, "w") as fh:
                    fh.write(str(_os.getpid()))
            except OSError:
                pass
        deadline = _time.time() + GATE_TIMEOUT_S
        while not _os.path.exists(go):
            if _time.time() > deadline:
                break
            _time.sleep(0.01)
        return True

    return icecheck_gate


# Debian's libxerial-sqlite-jdbc-java (/work/shared/real-iceberg.md)
SQLITE_JDBC_JAR = os.environ.get("ICECHECK_SQLITE_JDBC_JAR", "/usr/share/java/sqlite-jdbc.jar")


def classpath() -> list[str]:
    """The runtime jar and the relocated Jackson jar (pyspark ships the rest)."""
    from .java_setup import JavaSetupError, iceberg_runtime_jar, relocated_jackson_jar, check_java

    try:
        check_java()
        return [str(iceberg_runtime_jar()), str(relocated_jackson_jar())]
    except JavaSetupError as e:
        raise SparkUnavailable(str(e)) from None


def get_spark():
    """The process's SparkSession with the Iceberg catalog and the gate UDF registered."""
    global _spark, _warehouse, _gate_dir, start_seconds
    with _lock:
        if _spark is not None:
            return _spark
        try:
            import pyspark  # noqa: F401  (pyflakes: availability check)
            from pyspark.sql import SparkSession
            from pyspark.sql.types import BooleanType
        except ImportError:
            raise SparkUnavailable("pyspark is not installed; run: pip install -e "
                                   "'.[conformance]'") from None
        jars = classpath()
        t0 = time.perf_counter()
        _warehouse = tempfile.mkdtemp(prefix="icecheck-spark-wh-")
        _gate_dir = tempfile.mkdtemp(prefix="icecheck-spark-gate-")
        os.environ.setdefault("PYSPARK_PYTHON", __import__("sys").executable)
        from icecheck.sweep.distributed import LOOPBACK, is_local
        mem = os.environ.get("ICECHECK_SPARK_MEMORY", "768m")
        master = os.environ.get("ICECHECK_SPARK_MASTER", "local[4]")
        builder = (
            SparkSession.builder.master(master).appName("icecheck-conformance")
            .config("spark.jars", ",".join(jars))
            .config("spark.driver.memory", mem)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "1")
            .config("spark.default.parallelism", "2")
            .config("spark.sql.adaptive.enabled", "false")
            .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
            # the SQLite JDBC driver, for the JDBC catalog the mixed target shares with
            # PyIceberg (DriverManager needs it on the driver's own class path)
            .config("spark.driver.extraClassPath",
                    SQLITE_JDBC_JAR if os.path.exists(SQLITE_JDBC_JAR) else "")
            .config("spark.python.worker.reuse", "true")
            .config("spark.sql.extensions",
                    "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
            .config(f"spark.sql.catalog.{CATALOG}", "org.apache.iceberg.spark.SparkCatalog")
            .config(f"spark.sql.catalog.{CATALOG}.type", "hadoop")
            .config(f"spark.sql.catalog.{CATALOG}.warehouse", "file://" + _warehouse)
            .config(f"spark.sql.catalog.{CATALOG}.cache-enabled", "false")
        )
        if is_local(master):      # a local driver listens on loopback only (LOOPBACK)
            for k, v in LOOPBACK.items():
                builder = builder.config(k, v)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel(os.environ.get("ICECHECK_SPARK_LOG_LEVEL", "OFF"))
        spark.udf.register("icecheck_gate", _gate_udf_factory(_gate_dir), BooleanType())
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.db")
        _spark = spark
        start_seconds = time.perf_counter() - t0
        atexit.register(stop_spark)
        return spark


def writer_session(spark=None):
    """A new session for one writer (the gate UDF is registered per session)."""
    from pyspark.sql.types import BooleanType

    spark = spark or get_spark()
    s = spark.newSession()
    s.udf.register("icecheck_gate", _gate_udf_factory(gate_dir()), BooleanType())
    return s


def gate_dir() -> str:
    assert _gate_dir is not None, "get_spark() first"
    return _gate_dir


def warehouse() -> str:
    assert _warehouse is not None, "get_spark() first"
    return _warehouse


def stop_spark() -> None:
    global _spark
    with _lock:
        if _spark is not None:
            try:
                _spark.stop()
            except Exception:
                pass
            _spark = None
        if os.environ.get("ICECHECK_KEEP_WAREHOUSE") != "1":
            for d in (_warehouse, _gate_dir):
                if d:
                    shutil.rmtree(d, ignore_errors=True)
