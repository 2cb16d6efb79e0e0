#!/usr/bin/env python3
"""Standalone check: ``caseSensitive(false)`` is not honoured by two validations of Iceberg
core 1.10.2 (both unchanged on main), which bind the operation's filter case-sensitively.

1. ``OverwriteFiles.validateAddedFilesMatchOverwriteFilter()``. An overwrite by the row filter
   ``CATEGORY = 'a'`` on a table whose column is ``category``, with ``caseSensitive(false)``,
   commits; the same overwrite with that validation fails: ``BaseOverwriteFiles.validate``
   projects the row filter with ``Projections.inclusive(spec)`` and ``Projections.strict(spec)``,
   which bind case-sensitively (the ``StrictMetricsEvaluator`` next to them is given
   ``isCaseSensitive()``).
2. ``RowDelta.validateDataFilesExist(...)`` with a conflict detection filter. A row delta adding a
   position delete for ``d2``, with ``caseSensitive(false)`` and the filter ``CATEGORY = 'b'``,
   commits when no commit landed since its starting snapshot; when one did (a DeleteFiles of
   another file, ``d1``), it fails, although ``d2`` is still there:
   ``MergingSnapshotProducer.validateDataFilesExist`` builds its ``ManifestGroup`` without
   ``.caseSensitive(caseSensitive)`` (MergingSnapshotProducer.java:800-811), so the filter is
   bound case-sensitively to the first manifest of the validation window. With the filter
   written ``category = 'b'`` it commits.

Both fail with ValidationException "Cannot find field 'CATEGORY' in struct: ...". Nothing is
lost: the commit fails (a retry fails the same way); a Java API user who asked for
case-insensitive binding cannot use these validations, and a RowDelta's failure depends on
whether anything else committed meanwhile.

Needs only PySpark 3.5 and the Iceberg Spark runtime (no icecheck); it drives Iceberg's Java API
through the Spark JVM, with a Hadoop catalog in a temporary folder:
    pip install pyspark==3.5.*
    python reproducers/case_insensitive_filter_validations.py   # fetches
        org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0 from Maven Central
    ICEBERG_SPARK_JARS=/path/a.jar,/path/b.jar python reproducers/case_insensitive_filter_validations.py
Exit 0 when both reproduce.

icecheck: docs/model.md ("caseSensitive(false)"), scenarios filters/case-insensitive-filters and
filters/case-insensitive-row-delta-data-files-exist.
"""

import os
import shutil
import sys
import tempfile

from pyspark.sql import SparkSession


def _outcome(update) -> str:
    """Commit ``update``: "committed", or the Java exception's class and message."""
    try:
        update.commit()
        return "committed"
    except Exception as e:  # py4j's Py4JJavaError
        jexc = getattr(e, "java_exception", None)
        return (f"{jexc.getClass().getSimpleName()}: {jexc.getMessage()}" if jexc is not None
                else repr(e))


def _table(jvm, catalog, name, partitioned):
    ice = jvm.org.apache.iceberg
    types = ice.types.Types
    fields = jvm.java.util.ArrayList()
    fields.add(types.NestedField.optional(1, "id", types.IntegerType.get()))
    fields.add(types.NestedField.optional(2, "category", types.StringType.get()))
    schema = ice.Schema(fields)
    spec = (ice.PartitionSpec.builderFor(schema).identity("category").build() if partitioned
            else ice.PartitionSpec.unpartitioned())
    return catalog.createTable(ice.catalog.TableIdentifier.parse(name), schema, spec), spec


def overwrite_validation(jvm, catalog, warehouse) -> bool:
    ice = jvm.org.apache.iceberg
    ex = ice.expressions.Expressions
    table, spec = _table(jvm, catalog, "db.overwrite", True)

    def data_file(name):
        return (ice.DataFiles.builder(spec).withPath(f"{warehouse}/{name}.parquet")
                .withFileSizeInBytes(10).withRecordCount(1)
                .withPartitionPath("category=a").build())

    table.newAppend().appendFile(data_file("a1")).commit()
    outcomes = []
    for validate in (False, True):
        u = (table.newOverwrite().overwriteByRowFilter(ex.equal("CATEGORY", "a"))
             .caseSensitive(False).addFile(data_file(f"a2-{validate}")))
        if validate:
            u.validateAddedFilesMatchOverwriteFilter()
        outcomes.append(_outcome(u))
        table.refresh()
        print(f"1. overwriteByRowFilter(CATEGORY = 'a').caseSensitive(false)"
              f"{'.validateAddedFilesMatchOverwriteFilter()' if validate else ''}: "
              f"{outcomes[-1]}")
    return (outcomes[0] == "committed"
            and outcomes[1].startswith("ValidationException: Cannot find field 'CATEGORY'"))


def row_delta_validation(jvm, catalog, warehouse) -> bool:
    ice = jvm.org.apache.iceberg
    ex = ice.expressions.Expressions
    table, spec = _table(jvm, catalog, "db.row_delta", False)
    d1, d2 = (ice.DataFiles.builder(spec).withPath(f"{warehouse}/{n}.parquet")
              .withFileSizeInBytes(10).withRecordCount(2).build() for n in ("d1", "d2"))
    table.newAppend().appendFile(d1).appendFile(d2).commit()

    def row_delta(n, column, start):
        pos = (ice.FileMetadata.deleteFileBuilder(spec).ofPositionDeletes()
               .withPath(f"{warehouse}/pos-{n}.parquet").withFileSizeInBytes(10)
               .withRecordCount(1).build())
        referenced = jvm.java.util.ArrayList()
        referenced.add(d2.location())
        return (table.newRowDelta().addDeletes(pos).caseSensitive(False)
                .validateFromSnapshot(start).conflictDetectionFilter(ex.equal(column, "b"))
                .validateDeletedFiles().validateDataFilesExist(referenced))

    outcomes = []
    # nothing committed since its start: no manifest to bind the filter against
    start = table.currentSnapshot().snapshotId()
    outcomes.append(_outcome(row_delta(1, "CATEGORY", start)))
    print(f"2. RowDelta, filter CATEGORY = 'b', nothing committed meanwhile: {outcomes[-1]}")
    # a DeleteFiles of d1 (not the file the row delta references) commits meanwhile
    table.refresh()
    start = table.currentSnapshot().snapshotId()
    table.newDelete().deleteFile(d1).commit()
    table.refresh()
    outcomes.append(_outcome(row_delta(2, "CATEGORY", start)))
    print(f"2. RowDelta, filter CATEGORY = 'b', d1 deleted meanwhile: {outcomes[-1]}")
    table.refresh()
    outcomes.append(_outcome(row_delta(3, "category", start)))
    print(f"2. RowDelta, filter category = 'b', d1 deleted meanwhile: {outcomes[-1]}")
    return (outcomes[0] == "committed"
            and outcomes[1].startswith("ValidationException: Cannot find field 'CATEGORY'")
            and outcomes[2] == "committed")


def main() -> int:
    warehouse = tempfile.mkdtemp(prefix="wh-")
    b = (SparkSession.builder.master("local[1]").appName("iceberg-case-insensitive-validations")
         .config("spark.driver.bindAddress", "127.0.0.1")  # listen on loopback only
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false"))
    jars = os.environ.get("ICEBERG_SPARK_JARS")
    b = (b.config("spark.jars", jars) if jars else
         b.config("spark.jars.packages", "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0"))
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark._jvm
    try:
        catalog = jvm.org.apache.iceberg.hadoop.HadoopCatalog(spark._jsc.hadoopConfiguration(),
                                                               "file://" + warehouse)
        results = {"1. OverwriteFiles.validateAddedFilesMatchOverwriteFilter":
                   overwrite_validation(jvm, catalog, warehouse),
                   "2. RowDelta.validateDataFilesExist":
                   row_delta_validation(jvm, catalog, warehouse)}
        for name, ok in results.items():
            print(f"{name}: {'REPRODUCED' if ok else 'NOT REPRODUCED'}")
        return 0 if all(results.values()) else 1
    finally:
        spark.stop()
        shutil.rmtree(warehouse, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
