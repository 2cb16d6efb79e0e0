#!/usr/bin/env python3
"""Standalone check: ``OverwriteFiles.caseSensitive(false)`` is not honoured by
``validateAddedFilesMatchOverwriteFilter()`` (Iceberg core 1.10.2; unchanged on main).

An overwrite by the row filter ``CATEGORY = 'a'`` on a table whose column is ``category``, with
``caseSensitive(false)``, commits. The same overwrite with ``validateAddedFilesMatchOverwriteFilter()``
fails: ``BaseOverwriteFiles.validate`` projects the row filter with ``Projections.inclusive(spec)``
and ``Projections.strict(spec)``, which bind case-sensitively (the ``StrictMetricsEvaluator``
next to them is given ``isCaseSensitive()``), so Java throws ValidationException
"Cannot find field 'CATEGORY' in struct: ...". Nothing is lost; a writer that asked for
case-insensitive binding cannot use the validation.

Needs only PySpark 3.5 and the Iceberg Spark runtime (no icecheck); it drives Iceberg's Java API
through the Spark JVM, with a Hadoop catalog in a temporary folder:
    pip install pyspark==3.5.*
    python reproducers/overwrite_case_insensitive_filter_validation.py   # fetches
        org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0 from Maven Central
    ICEBERG_SPARK_JARS=/path/a.jar,/path/b.jar python reproducers/overwrite_case_insensitive_filter_validation.py
Exit 0 when it reproduces.

icecheck: docs/model.md ("caseSensitive(false)"), scenario filters/case-insensitive-filters.
"""

import os
import shutil
import sys
import tempfile

from pyspark.sql import SparkSession


def main() -> int:
    warehouse = tempfile.mkdtemp(prefix="wh-")
    b = (SparkSession.builder.master("local[1]").appName("iceberg-case-insensitive-overwrite")
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
    ice = jvm.org.apache.iceberg
    try:
        catalog = ice.hadoop.HadoopCatalog(spark._jsc.hadoopConfiguration(), "file://" + warehouse)
        types = ice.types.Types
        fields = jvm.java.util.ArrayList()
        fields.add(types.NestedField.optional(1, "id", types.IntegerType.get()))
        fields.add(types.NestedField.optional(2, "category", types.StringType.get()))
        schema = ice.Schema(fields)
        spec = ice.PartitionSpec.builderFor(schema).identity("category").build()
        table = catalog.createTable(ice.catalog.TableIdentifier.parse("db.t"), schema, spec)

        def data_file(name):
            return (ice.DataFiles.builder(spec).withPath(f"{warehouse}/{name}.parquet")
                    .withFileSizeInBytes(10).withRecordCount(1)
                    .withPartitionPath("category=a").build())

        table.newAppend().appendFile(data_file("a1")).commit()
        ex = ice.expressions.Expressions
        outcomes = []
        for validate in (False, True):
            u = (table.newOverwrite().overwriteByRowFilter(ex.equal("CATEGORY", "a"))
                 .caseSensitive(False).addFile(data_file(f"a2-{validate}")))
            if validate:
                u.validateAddedFilesMatchOverwriteFilter()
            try:
                u.commit()
                outcomes.append("committed")
            except Exception as e:  # py4j's Py4JJavaError
                jexc = getattr(e, "java_exception", None)
                outcomes.append(f"{jexc.getClass().getSimpleName()}: {jexc.getMessage()}"
                                if jexc is not None else repr(e))
            table.refresh()
            print(f"overwriteByRowFilter(CATEGORY = 'a').caseSensitive(false)"
                  f"{'.validateAddedFilesMatchOverwriteFilter()' if validate else ''}: "
                  f"{outcomes[-1]}")
        ok = (outcomes[0] == "committed"
              and outcomes[1].startswith("ValidationException: Cannot find field 'CATEGORY'"))
        print("REPRODUCED" if ok else "NOT REPRODUCED")
        return 0 if ok else 1
    finally:
        spark.stop()
        shutil.rmtree(warehouse, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
