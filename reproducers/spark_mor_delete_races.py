#!/usr/bin/env python3
"""Standalone reproducer: Spark 3.5 merge-on-read DELETE races on Iceberg (format v2).

Needs only PySpark 3.5 and the Iceberg Spark runtime (no icecheck):
    pip install pyspark==3.5.*
    python reproducers/spark_mor_delete_races.py          # fetches
        org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0 from Maven Central
    ICEBERG_SPARK_JARS=/path/a.jar,/path/b.jar python reproducers/spark_mor_delete_races.py
        # offline: local jars instead of the Maven package
Exit 0 when all four anomalies reproduce.

1. Undelete (snapshot isolation; Vanlightly 2024): UPDATE and DELETE of the same row start from
   one snapshot. The UPDATE commits first (a new row version + a position delete of the old
   one). The DELETE's RowDelta enables no check for concurrent delete files (Spark adds
   validateNoConflictingDeleteFiles only for UPDATE and MERGE), so it commits a position delete
   of the *old* row: the updated row survives the DELETE, which no serial order allows.
2. Double delete (even serializable): two DELETEs of the same row both commit (two position
   deletes of one row). The table ends as a serial order would leave it, but both statements
   report deleting the row: a lost update (G-single).
3. The same with the row moved (even serializable): on a table bucketed by id, a MERGE moves
   id 1 from day d1 to d2 while DELETE ... WHERE day = 'd1' runs. The MERGE's new row does not
   match the DELETE's conflict filter, and the DELETE checks no new delete files, so both
   commit a position delete of (1, d1): the table is what "MERGE, then DELETE" leaves, but
   both report changing the old row (G-single).
4. A dangling deletion vector (format v3, serializable): on a table partitioned by day, a
   metadata-only DELETE ... WHERE day = 'd1' drops d1's file while a row-level DELETE of id 2
   runs; the row-level DELETE then commits a deletion vector for that removed file (no
   validateDeletedFiles for DELETE, and no other DV to clash with). The spec says no DV may
   outlive its data file; the table keeps one.

Ordering: each racing statement carries a Python UDF in its condition that blocks on a file
until the script lets it go. The UDF is evaluated while the statement scans (its snapshot is
pinned), so the other statement can commit in between: exactly the window two real jobs have.
(The UDF also keeps Spark from planning a metadata-only delete, which these files would not
qualify for anyway: each holds a row the DELETE does not select.)

icecheck: traces/undelete-v2-mor-snapshot.json, traces/double-delete-v2-mor-serializable.json,
traces/isolation-spark-mor-delete-vs-merge-moving-the-row.json,
traces/dangling-deletes-v3-spark-dv-after-metadata-delete.json,
scenarios/builtin/commands/spark-mor-si-undelete.yaml.
"""

import os
import shutil
import sys
import tempfile
import threading
import time

from pyspark.sql import SparkSession
from pyspark.sql.types import BooleanType

GATE_DIR = tempfile.mkdtemp(prefix="gate-")


def gate(token, _value):
    """Block the statement (in its Python worker) until the driver writes TOKEN.go."""
    open(os.path.join(GATE_DIR, f"{token}.started"), "w").close()
    deadline = time.time() + 120
    while not os.path.exists(os.path.join(GATE_DIR, f"{token}.go")):
        if time.time() > deadline:
            raise RuntimeError("gate never opened")
        time.sleep(0.02)
    return True


def session(warehouse: str) -> SparkSession:
    b = (SparkSession.builder.master("local[2]").appName("iceberg-mor-races")
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
    if jars:
        b = b.config("spark.jars", jars)
    else:
        b = b.config("spark.jars.packages",
                     "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0")
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.udf.register("gate", gate, BooleanType())
    return spark


def create(spark, name: str, isolation: str) -> str:
    t = f"demo.db.{name}"
    spark.sql("CREATE NAMESPACE IF NOT EXISTS demo.db")
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    props = {"format-version": "2", "write.delete.mode": "merge-on-read",
             "write.update.mode": "merge-on-read", "write.merge.mode": "merge-on-read",
             "write.delete.isolation-level": isolation,
             "write.update.isolation-level": isolation}
    spark.sql(f"CREATE TABLE {t} (id int, fruit string) USING iceberg TBLPROPERTIES ("
              + ", ".join(f"'{k}'='{v}'" for k, v in props.items()) + ")")
    # one data file holding both rows
    spark.sql(f"INSERT INTO {t} SELECT /*+ REPARTITION(1) */ * FROM VALUES "
              f"(1, 'apple'), (2, 'pear') AS v(id, fruit)")
    return t


def create_by_day(spark, name: str, partitioning: str, format_version: int, values: str) -> str:
    """A merge-on-read, serializable table (id int, day string, v string) partitioned by
    ``partitioning``, holding ``values`` (one write: one file per partition)."""
    t = f"demo.db.{name}"
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    props = {"format-version": str(format_version)}
    for command in ("delete", "update", "merge"):
        props[f"write.{command}.mode"] = "merge-on-read"
        props[f"write.{command}.isolation-level"] = "serializable"
    spark.sql(f"CREATE TABLE {t} (id int, day string, v string) USING iceberg "
              f"PARTITIONED BY ({partitioning}) TBLPROPERTIES ("
              + ", ".join(f"'{k}'='{v}'" for k, v in props.items()) + ")")
    spark.sql(f"INSERT INTO {t} SELECT /*+ REPARTITION(1) */ * FROM VALUES {values} "
              f"AS v(id, day, v)")
    return t


def race(spark, first_sql: str, held_sql: str, token: str):
    """Run held_sql up to its gate, run first_sql to completion, then release held_sql."""
    outcome = {}

    def body():
        s = spark.newSession()                 # a second job: its own session
        s.udf.register("gate", gate, BooleanType())
        try:
            s.sql(held_sql).collect()
            outcome["held"] = "committed"
        except Exception as e:  # noqa: BLE001 - reported
            outcome["held"] = f"failed: {str(e).splitlines()[0][:200]}"

    th = threading.Thread(target=body)
    th.start()
    while not os.path.exists(os.path.join(GATE_DIR, f"{token}.started")):
        if not th.is_alive():
            raise RuntimeError(f"statement ended before its gate: {outcome}")
        time.sleep(0.02)
    spark.newSession().sql(first_sql).collect()
    open(os.path.join(GATE_DIR, f"{token}.go"), "w").close()
    th.join()
    return outcome["held"]


def main() -> int:
    warehouse = tempfile.mkdtemp(prefix="wh-")
    spark = session(warehouse)
    ok = True
    try:
        t = create(spark, "undelete", "snapshot")
        held = race(spark, f"UPDATE {t} SET fruit = 'banana' WHERE id = 1",
                    f"DELETE FROM {t} WHERE id = 1 AND gate('u', id)", "u")
        rows = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect())
        print(f"1. undelete: UPDATE committed, DELETE {held}; rows {rows}")
        if held == "committed" and (1, "banana") in rows:
            print("   REPRODUCED: the DELETE committed, yet the updated row id=1 survives")
        else:
            ok = False
            print("   NOT REPRODUCED")

        t = create(spark, "double_delete", "serializable")
        held = race(spark, f"DELETE FROM {t} WHERE id = 1",
                    f"DELETE FROM {t} WHERE id = 1 AND gate('d', id)", "d")
        deletes = spark.sql(f"SELECT count(*) FROM {t}.delete_files").collect()[0][0]
        rows = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect())
        print(f"2. double delete: first DELETE committed, second {held}; rows {rows}; "
              f"live delete files {deletes}")
        if held == "committed" and deletes == 2:
            print("   REPRODUCED: both DELETEs of id=1 committed (two position deletes of one row)")
        else:
            ok = False
            print("   NOT REPRODUCED")

        # ids 1 and 2 share bucket 0: one data file
        t = create_by_day(spark, "moved", "bucket(2, id)", 2, "(1, 'd1', 'v0'), (2, 'd2', 'v0')")
        held = race(spark, f"MERGE INTO {t} t USING (SELECT 1 AS id, 'd2' AS day, 'moved' AS v) s "
                           f"ON t.id = s.id WHEN MATCHED THEN UPDATE SET * "
                           f"WHEN NOT MATCHED THEN INSERT *",
                    f"DELETE FROM {t} WHERE day = 'd1' AND gate('m', id)", "m")
        deletes = spark.sql(f"SELECT count(*) FROM {t}.delete_files").collect()[0][0]
        rows = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect())
        print(f"3. moved row: MERGE committed, DELETE WHERE day = 'd1' {held}; rows {rows}; "
              f"live delete files {deletes}")
        if held == "committed" and deletes == 2 and rows == [(1, "d2", "moved"), (2, "d2", "v0")]:
            print("   REPRODUCED: both committed a position delete of (1, 'd1', 'v0')")
        else:
            ok = False
            print("   NOT REPRODUCED")

        t = create_by_day(spark, "dangling_dv", "day", 3,
                          "(1, 'd1', 'v0'), (2, 'd1', 'v0'), (3, 'd2', 'v0')")
        d1 = [r[0] for r in spark.sql(f"SELECT file_path FROM {t}.files "
                                      f"WHERE partition.day = 'd1'").collect()]
        held = race(spark, f"DELETE FROM {t} WHERE day = 'd1'",
                    f"DELETE FROM {t} WHERE id = 2 AND gate('v', id)", "v")
        live = {r[0] for r in spark.sql(f"SELECT file_path FROM {t}.files").collect()}
        dvs = spark.sql(f"SELECT file_format, referenced_data_file FROM {t}.delete_files").collect()
        rows = sorted(tuple(r) for r in spark.sql(f"SELECT * FROM {t}").collect())
        print(f"4. v3 dangling DV: metadata-only DELETE committed, DELETE of id 2 {held}; rows "
              f"{rows}; live delete files {[(r[0], r[1]) for r in dvs]}; d1 {d1}")
        if (held == "committed" and len(dvs) == 1 and dvs[0][0] == "PUFFIN"
                and dvs[0][1] in d1 and dvs[0][1] not in live and rows == [(3, "d2", "v0")]):
            print("   REPRODUCED: a live deletion vector names a data file no longer in the table")
        else:
            ok = False
            print("   NOT REPRODUCED")
    finally:
        spark.stop()
        shutil.rmtree(warehouse, ignore_errors=True)
        shutil.rmtree(GATE_DIR, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
