#!/usr/bin/env python3
"""Standalone reproducer: an overwrite computed from its own read (INSERT OVERWRITE t SELECT ...
FROM t, a nightly dedup) silently undoes concurrent writes on Spark 3.5 + Iceberg, unless the
write sets the isolation-level option, which Spark SQL cannot.

Needs only PySpark 3.5 and the Iceberg Spark runtime (no icecheck):
    pip install pyspark==3.5.*
    python reproducers/spark_insert_overwrite_select_races.py   # fetches
        org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0 from Maven Central
    ICEBERG_SPARK_JARS=/path/a.jar,/path/b.jar python reproducers/spark_insert_overwrite_select_races.py
Exit 0 when every part behaves as described below.

Spark reads an overwrite's isolation level from the write option isolation-level alone
(SparkWriteConf.isolationLevel, no table property, no default) and validates nothing without it
(SparkWrite.DynamicOverwrite / OverwriteByFilter); validate-from-snapshot-id is used only with
it. Each part races a dedup of table t (id, day, v; partitioned by day; rows (1,d1,a),
(1,d1,b), (2,d1,v0), (5,d2,v0)) against one concurrent commit:

1. SQL INSERT OVERWRITE (static) vs an INSERT of id 3: the overwrite commits and id 3 is gone
   (REPRODUCED: a lost write).
2. SQL INSERT OVERWRITE (dynamic partitionOverwriteMode) vs a DELETE of id 2: the overwrite
   commits and id 2 is back (REPRODUCED: an undelete).
3. DataFrame overwritePartitions() with isolation-level=snapshot and validate-from-snapshot-id
   vs an INSERT of id 3: commits, id 3 is gone (REPRODUCED); vs a DELETE of id 2: fails with a
   ValidationException (as Spark documents snapshot: "checks for concurrent deletes").
4. isolation-level=serializable with validate-from-snapshot-id vs an INSERT: fails
   ("Found conflicting files"); without validate-from-snapshot-id it fails with nothing
   concurrent at all (its validation starts from the table's first snapshot).
5. REPLACE TABLE t AS SELECT ... FROM t vs an INSERT of id 3: the replace commits and the
   INSERT's snapshot is no longer in the table's metadata (REPRODUCED: a lost commit; the
   replace transaction re-commits the metadata it built at its start,
   BaseTransaction.commitReplaceTransaction).
6. Spark SQL's INSERT OVERWRITE takes no write options: WITH (...) and /*+ OPTIONS(...) */ are
   syntax errors.

Ordering: the overwrite's SELECT carries a Python UDF that blocks on a file until the
concurrent commit is done; by then the overwrite has planned its scan (its snapshot pinned).

icecheck: scenarios/builtin/commands/spark-insert-overwrite-select-drops-concurrent-insert.yaml,
spark-insert-overwrite-dynamic-undeletes-concurrent-delete.yaml,
spark-dataframe-overwrite-snapshot-level.yaml, spark-dataframe-overwrite-serializable-level.yaml;
examples/nightly-dedup-beside-streaming-append.yaml.
"""

import os
import shutil
import sys
import tempfile
import threading
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType

GATE_DIR = tempfile.mkdtemp(prefix="gate-")
INSERT3, DELETE2 = "INSERT INTO {t} VALUES (3, 'd1', 'new')", "DELETE FROM {t} WHERE id = 2"
DEDUP = ("SELECT id, day, v FROM (SELECT *, row_number() OVER (PARTITION BY id ORDER BY v DESC) "
         "AS rn FROM {t} WHERE gate('{tok}', id)) WHERE rn = 1")


def gate(token, _value):
    """Block the statement (in its Python worker) until the driver writes TOKEN.go."""
    open(os.path.join(GATE_DIR, f"{token}.started"), "w").close()
    deadline = time.time() + 120
    while not os.path.exists(os.path.join(GATE_DIR, f"{token}.go")):
        if time.time() > deadline:
            raise RuntimeError("gate never opened")
        time.sleep(0.02)
    return True


class Race:
    def __init__(self, spark):
        self.spark, self.n = spark, 0

    def table(self) -> str:
        self.n += 1
        t = f"demo.db.t{self.n}"
        self.spark.sql(f"CREATE TABLE {t} (id int, day string, v string) USING iceberg "
                       f"PARTITIONED BY (day) TBLPROPERTIES ('format-version'='2')")
        self.spark.sql(f"INSERT INTO {t} VALUES (1, 'd1', 'a'), (1, 'd1', 'b'), (2, 'd1', 'v0'), "
                       f"(5, 'd2', 'v0')")
        return t

    def run(self, t: str, overwrite, concurrent: str | None, conf=None) -> tuple[str, list]:
        """Run ``overwrite(session, token)`` held at its gate while ``concurrent`` commits."""
        token, result = f"g{self.n}", {}

        def first():
            s = self.spark.newSession()
            s.udf.register("gate", gate, BooleanType())
            for k, v in (conf or {}).items():
                s.conf.set(k, v)
            try:
                overwrite(s, token)
                result["o"] = "committed"
            except Exception as e:  # noqa: BLE001 - reported
                lines = [x for x in str(e).splitlines() if x.strip()]
                result["o"] = "failed: " + next((x for x in lines if "Exception" in x),
                                                lines[0])[:200]

        th = threading.Thread(target=first)
        th.start()
        while not os.path.exists(os.path.join(GATE_DIR, f"{token}.started")):
            if not th.is_alive():
                raise RuntimeError(f"the overwrite ended before its gate: {result}")
            time.sleep(0.02)
        if concurrent:
            self.spark.newSession().sql(concurrent.format(t=t)).collect()
        open(os.path.join(GATE_DIR, f"{token}.go"), "w").close()
        th.join()
        rows = sorted(tuple(r) for r in self.spark.sql(f"SELECT * FROM {t}").collect())
        return result["o"], rows


def dataframe(t: str, mode: str, **options):
    def run(s, token):
        sid = s.sql(f"SELECT snapshot_id FROM {t}.refs WHERE name = 'main'").collect()[0][0]
        w = s.sql(DEDUP.format(t=t, tok=token)).writeTo(t)
        for k, v in options.items():
            w = w.option(k.replace("_", "-"), str(sid) if v == "SID" else v)
        w.overwritePartitions() if mode == "dynamic" else w.overwrite(F.lit(True))
    return run


def main() -> int:
    warehouse = tempfile.mkdtemp(prefix="wh-")
    b = (SparkSession.builder.master("local[2]").appName("iceberg-insert-overwrite-select")
         .config("spark.driver.bindAddress", "127.0.0.1")  # listen on loopback only
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.sql.extensions",
                 "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.sql.catalog.demo", "org.apache.iceberg.spark.SparkCatalog")
         .config("spark.sql.catalog.demo.type", "hadoop")
         .config("spark.sql.catalog.demo.warehouse", "file://" + warehouse)
         .config("spark.sql.catalog.demo.cache-enabled", "false")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "1"))
    jars = os.environ.get("ICEBERG_SPARK_JARS")
    b = (b.config("spark.jars", jars) if jars else
         b.config("spark.jars.packages", "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0"))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    race, ok = Race(spark), True

    def check(cond: bool, what: str, reproduced: bool = False) -> None:
        nonlocal ok
        ok = ok and cond
        print(("REPRODUCED: " if reproduced and cond else "as described: " if cond else
               "NOT REPRODUCED: ") + what)

    try:
        spark.sql("CREATE NAMESPACE IF NOT EXISTS demo.db")
        sql = lambda t: lambda s, tok: s.sql(  # noqa: E731
            f"INSERT OVERWRITE {t} " + DEDUP.format(t=t, tok=tok)).collect()

        t = race.table()
        got, rows = race.run(t, sql(t), INSERT3)
        print(f"1. static SQL dedup vs INSERT: {got}; rows {rows}")
        check(got == "committed" and not any(r[0] == 3 for r in rows),
              "the static INSERT OVERWRITE dropped the concurrently inserted id 3", True)

        t = race.table()
        got, rows = race.run(t, sql(t), DELETE2,
                             conf={"spark.sql.sources.partitionOverwriteMode": "dynamic"})
        print(f"2. dynamic SQL dedup vs DELETE id 2: {got}; rows {rows}")
        check(got == "committed" and any(r[0] == 2 for r in rows),
              "the dynamic INSERT OVERWRITE wrote back the concurrently deleted id 2", True)

        snap = dict(isolation_level="snapshot", validate_from_snapshot_id="SID")
        t = race.table()
        got, rows = race.run(t, dataframe(t, "dynamic", **snap), INSERT3)
        print(f"3a. overwritePartitions() at snapshot vs INSERT: {got}; rows {rows}")
        check(got == "committed" and not any(r[0] == 3 for r in rows),
              "isolation-level=snapshot dropped the concurrently inserted id 3", True)
        t = race.table()
        got, rows = race.run(t, dataframe(t, "dynamic", **snap), DELETE2)
        print(f"3b. overwritePartitions() at snapshot vs DELETE id 2: {got}")
        check(got.startswith("failed") and "Found conflicting deleted files" in got,
              "isolation-level=snapshot refused the concurrent DELETE")

        t = race.table()
        got, rows = race.run(t, dataframe(t, "static", isolation_level="serializable",
                                          validate_from_snapshot_id="SID"), INSERT3)
        print(f"4a. overwrite(true) at serializable vs INSERT: {got}")
        check(got.startswith("failed") and "Found conflicting files" in got,
              "isolation-level=serializable refused the concurrent INSERT")
        t = race.table()
        got, rows = race.run(t, dataframe(t, "static", isolation_level="serializable"), None)
        print(f"4b. overwrite(true) at serializable, no validate-from-snapshot-id, alone: {got}")
        check(got.startswith("failed") and "Found conflicting files" in got,
              "serializable without validate-from-snapshot-id fails with nothing concurrent")

        t = race.table()
        got, rows = race.run(t, lambda s, tok: s.sql(
            f"REPLACE TABLE {t} USING iceberg PARTITIONED BY (day) AS "
            + DEDUP.format(t=t, tok=tok)).collect(), INSERT3)
        snaps = [tuple(r) for r in spark.sql(f"SELECT snapshot_id, parent_id, operation "
                                            f"FROM {t}.snapshots").collect()]
        print(f"5. REPLACE TABLE AS SELECT vs INSERT: {got}; rows {rows}; snapshots {snaps}")
        check(got == "committed" and not any(r[0] == 3 for r in rows)
              and not any(op == "append" and parent is not None for _, parent, op in snaps),
              "REPLACE TABLE AS SELECT discarded the concurrent INSERT's snapshot", True)

        t = race.table()
        refused = 0
        for q in (f"INSERT OVERWRITE {t} WITH ('isolation-level'='serializable') SELECT * FROM {t}",
                  f"INSERT OVERWRITE {t} /*+ OPTIONS('isolation-level'='serializable') */ "
                  f"SELECT * FROM {t}"):
            try:
                spark.sql(q).collect()
            except Exception as e:  # noqa: BLE001 - reported
                refused += "PARSE_SYNTAX_ERROR" in str(e)
        print(f"6. SQL INSERT OVERWRITE with write options: {refused} of 2 forms refused")
        check(refused == 2, "Spark SQL's INSERT OVERWRITE takes no write options")
        return 0 if ok else 1
    finally:
        spark.stop()
        shutil.rmtree(warehouse, ignore_errors=True)
        shutil.rmtree(GATE_DIR, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
