#!/usr/bin/env python3
"""Standalone check: a delete by row filter removes rows whose partition value is null although
the filter does not select them (Iceberg 1.10.2, unchanged on main). Spark SQL's ``DELETE FROM
t WHERE id < 4`` does it too: the rows ``SELECT * FROM t WHERE id < 4`` does not return are
deleted, silently.

A table partitioned by ``identity(id)`` holds ``(0, 'a')`` and ``(null, 'b')``, written in one
commit (so in one manifest). ``table.newDelete().deleteFromRowFilter(Expressions.lessThan("id",
4))`` removes both files. Under SQL's null semantics, and under Iceberg's own metrics
evaluators, ``null < 4`` is not true, so the second row must stay; the same delete on the same
rows in an unpartitioned table keeps it.

Why: ``ManifestFilterManager.PartitionAndMetricsEvaluator`` first reduces the filter with
``ResidualEvaluator.residualFor(partition)``. For an identity partition the strict projection
of ``id < 4`` is ``id < 4`` on the partition value, which ``ResidualVisitor.lt`` compares with
the literal's comparator, ``Comparators.nullsFirst()`` (``Literals.ComparableLiteral``): a null
sorts below 4, so the residual is ``alwaysTrue`` and the whole file counts as matching. The
metrics evaluators, which would say a file of nulls cannot match ``id < 4``, only see that
residual. ``<=``, ``!=`` and ``truncate`` partitions behave the same. The manifest must be
opened first: a manifest whose partitions are all null is skipped by ``ManifestEvaluator``, so
the loss needs the null partition to share a manifest with a partition the filter selects (one
INSERT, one append or a merged manifest).

Spark SQL reaches it through its metadata-only delete: ``SparkTable.canDeleteUsingMetadata``
accepts the filter (its strict-projection ``Evaluator`` is nulls-first too), then
``deleteWhere`` commits ``newDelete().deleteFromRowFilter(...)`` with the filter as written:
no ``id IS NOT NULL`` is added. ``DataFrameWriterV2.overwrite(col("id") < 4)`` goes through
``overwriteByRowFilter``, the same code.

A second way, on any table: ``StrictMetricsEvaluator.notEq`` (and ``notIn``) answer "every row
matches" for a file whose column holds only nulls. So on an unpartitioned table where
``(null, 'b')`` was inserted by a statement of its own, ``DELETE FROM t WHERE id != 0`` (no
file holding id 0) is a metadata-only delete that removes it; the script shows that too.

Needs only PySpark 3.5 and the Iceberg Spark runtime (no icecheck); it drives Iceberg's Java API
through the Spark JVM, with a Hadoop catalog in a temporary folder:
    pip install pyspark==3.5.*
    python reproducers/null_partition_row_filter_delete.py   # fetches
        org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0 from Maven Central
    ICEBERG_SPARK_JARS=/path/a.jar,/path/b.jar python reproducers/null_partition_row_filter_delete.py
Exit 0 when all three reproduce: the Java API deletes the null row only when the table is
partitioned, and Spark SQL's DELETE (``<`` on a partitioned table, ``!=`` on an unpartitioned
one) removes a row its own SELECT does not select.

icecheck: scenarios filters/null-partition-row-filter-delete (Java),
commands/spark-delete-null-partition-metadata-delete and
commands/spark-delete-not-equal-null-only-file (Spark SQL); docs/findings.md.
"""

import os
import shutil
import sys
import tempfile

from pyspark.sql import SparkSession


def _java_api(jvm, catalog, warehouse, partitioned) -> list:
    """Two one-row files, (0, 'a') and (null, 'b'), then deleteFromRowFilter(id < 4): the
    paths of the data files left, as the table's next scan plans them."""
    ice = jvm.org.apache.iceberg
    types = ice.types.Types
    fields = jvm.java.util.ArrayList()
    fields.add(types.NestedField.optional(1, "id", types.IntegerType.get()))
    fields.add(types.NestedField.optional(2, "cat", types.StringType.get()))
    schema = ice.Schema(fields)
    spec = (ice.PartitionSpec.builderFor(schema).identity("id").build() if partitioned
            else ice.PartitionSpec.unpartitioned())
    name = "db.parted" if partitioned else "db.flat"
    table = catalog.createTable(ice.catalog.TableIdentifier.parse(name), schema, spec)

    def long_map(values):
        # A Map<Integer, Long>: py4j sends small ints as Integer, so let Jackson build it.
        mapper = ice.util.JsonUtil.mapper()
        lang = jvm.java.lang
        jtype = mapper.getTypeFactory().constructMapType(
            jvm.java.util.HashMap._java_lang_class, lang.Integer._java_lang_class,
            lang.Long._java_lang_class)
        return mapper.readValue("{" + ", ".join(f'"{k}": {v}' for k, v in values.items()) + "}",
                                jtype)

    def data_file(path, id_value):
        # One row: the column metrics a writer records (value and null counts; bounds of id
        # only when it is not null).
        nulls = {1: 1 if id_value is None else 0, 2: 0}
        lower = jvm.java.util.HashMap()
        if id_value is not None:
            lower.put(jvm.java.lang.Integer(1),
                      ice.types.Conversions.toByteBuffer(types.IntegerType.get(),
                                                         jvm.java.lang.Integer(id_value)))
        metrics = ice.Metrics(1, None, long_map({1: 1, 2: 1}),
                              long_map(nulls), None, lower, lower)
        b = (ice.DataFiles.builder(spec).withPath(f"{warehouse}/{path}.parquet")
             .withFileSizeInBytes(10).withRecordCount(1).withMetrics(metrics))
        if partitioned:
            part = ice.PartitionData(spec.partitionType())
            part.set(0, None if id_value is None else jvm.java.lang.Integer(id_value))
            b = b.withPartition(part)
        return b.build()

    table.newAppend().appendFile(data_file("zero", 0)).appendFile(data_file("null", None)).commit()
    table.newDelete().deleteFromRowFilter(ice.expressions.Expressions.lessThan("id", 4)).commit()
    table.refresh()
    left = []
    tasks = table.newScan().planFiles()
    it = tasks.iterator()
    while it.hasNext():
        left.append(os.path.basename(it.next().file().location()))
    tasks.close()
    return sorted(left)


def _spark_sql(spark, partitioned) -> tuple:
    """The same rows through Spark SQL, in one INSERT: what ``SELECT ... WHERE id < 4`` returns,
    then what ``DELETE FROM ... WHERE id < 4`` leaves."""
    name = f"ice.db.sql_{'parted' if partitioned else 'flat'}"
    spark.sql(f"CREATE TABLE {name} (id int, cat string) USING iceberg"
              + (" PARTITIONED BY (id)" if partitioned else ""))
    spark.sql(f"INSERT INTO {name} VALUES (0, 'a'), (null, 'b')")
    selected = [tuple(r) for r in spark.sql(f"SELECT id, cat FROM {name} WHERE id < 4").collect()]
    spark.sql(f"DELETE FROM {name} WHERE id < 4")
    left = [tuple(r) for r in spark.sql(f"SELECT id, cat FROM {name}").collect()]
    return selected, left


def _spark_sql_not_equal(spark) -> tuple:
    """An unpartitioned table, rows (7, 'c') and (null, 'b') inserted by two statements (two
    files): what ``SELECT ... WHERE id != 0`` returns, then what ``DELETE ... WHERE id != 0``
    leaves. StrictMetricsEvaluator.notEq takes a file whose id is all null to match id != 0."""
    name = "ice.db.sql_not_equal"
    spark.sql(f"CREATE TABLE {name} (id int, cat string) USING iceberg")
    spark.sql(f"INSERT INTO {name} VALUES (7, 'c')")
    spark.sql(f"INSERT INTO {name} VALUES (null, 'b')")
    selected = [tuple(r) for r in spark.sql(f"SELECT id, cat FROM {name} WHERE id != 0").collect()]
    spark.sql(f"DELETE FROM {name} WHERE id != 0")
    left = [tuple(r) for r in spark.sql(f"SELECT id, cat FROM {name}").collect()]
    return selected, left


def main() -> int:
    warehouse = tempfile.mkdtemp(prefix="wh-")
    b = (SparkSession.builder.master("local[1]").appName("iceberg-null-partition-row-filter")
         .config("spark.driver.bindAddress", "127.0.0.1")  # listen on loopback only
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.extensions",
                 "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
         .config("spark.sql.catalog.ice.type", "hadoop")
         .config("spark.sql.catalog.ice.warehouse", "file://" + warehouse + "/sql")
         .config("spark.sql.catalog.ice.cache-enabled", "false"))
    jars = os.environ.get("ICEBERG_SPARK_JARS")
    b = (b.config("spark.jars", jars) if jars else
         b.config("spark.jars.packages", "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0"))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark._jvm
    try:
        catalog = jvm.org.apache.iceberg.hadoop.HadoopCatalog(spark._jsc.hadoopConfiguration(),
                                                               "file://" + warehouse + "/api")
        parted = _java_api(jvm, catalog, warehouse, partitioned=True)
        flat = _java_api(jvm, catalog, warehouse, partitioned=False)
        print("Java API, deleteFromRowFilter(id < 4), rows (0, 'a') and (null, 'b'):")
        print(f"  partitioned by identity(id): files left {parted}")
        print(f"  unpartitioned:               files left {flat}")
        java_lost = parted == [] and flat == ["null.parquet"]
        print(f"Java API: {'REPRODUCED' if java_lost else 'NOT REPRODUCED'}: the row with a null "
              f"id {'was deleted only because the table is partitioned by id' if java_lost else 'was kept'}")
        print("Spark SQL, INSERT (0, 'a'), (null, 'b'); SELECT/DELETE ... WHERE id < 4:")
        results = {}
        for partitioned in (True, False):
            selected, left = _spark_sql(spark, partitioned)
            results[partitioned] = (selected, left)
            print(f"  {'partitioned by id' if partitioned else 'unpartitioned':18}: SELECT returns "
                  f"{selected}, DELETE leaves {left}")
        sql_lost = (results[True] == ([(0, 'a')], []) and
                    results[False] == ([(0, 'a')], [(None, 'b')]))
        print(f"Spark SQL: {'REPRODUCED' if sql_lost else 'NOT REPRODUCED'}: DELETE "
              f"{'removed (null, b), which its WHERE does not select' if sql_lost else 'kept (null, b)'}")
        selected, left = _spark_sql_not_equal(spark)
        ne_lost = selected == [(7, 'c')] and left == []
        print(f"Spark SQL, unpartitioned, INSERT (7, 'c'); INSERT (null, 'b'); SELECT/DELETE ... "
              f"WHERE id != 0: SELECT returns {selected}, DELETE leaves {left}")
        print(f"Spark SQL !=: {'REPRODUCED' if ne_lost else 'NOT REPRODUCED'}: DELETE "
              f"{'removed (null, b), which its WHERE does not select' if ne_lost else 'kept (null, b)'}")
        return 0 if java_lost and sql_lost and ne_lost else 1
    finally:
        spark.stop()
        shutil.rmtree(warehouse, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
