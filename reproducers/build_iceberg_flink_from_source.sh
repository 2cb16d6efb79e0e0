#!/usr/bin/env bash
# Builds Iceberg 1.10.2's Flink 1.20 connector (the iceberg-flink-1.20 module: FlinkSink,
# IcebergFilesCommitter, the SQL catalog and table factories) from apache/iceberg's source, for a
# machine that cannot fetch org.apache.iceberg:iceberg-flink-runtime-1.20:1.10.2 from Maven
# Central. With the real runtime jar, use it instead and skip this script.
#
# The classes are compiled unchanged against Iceberg 1.10.2 as the Iceberg Spark runtime jar
# ships it (iceberg-spark-runtime-3.5_2.12-1.10.2.jar: core, data, parquet, orc, with their
# third-party dependencies relocated under org.apache.iceberg.shaded), so the only edit to the
# sources is that relocation of import names (org.apache.parquet, org.apache.avro, org.apache.orc,
# org.apache.datasketches, com.github.benmanes, com.fasterxml.jackson ->
# org.apache.iceberg.shaded.*). PyFlink does not ship flink-metrics-dropwizard, so a stand-in of
# its DropwizardHistogramWrapper (writer metrics only) is compiled beside them.
# Only what FlinkSink and the SQL factories reach is compiled (javac -sourcepath).
#
# usage: reproducers/build_iceberg_flink_from_source.sh OUT.jar
# env:   ICEBERG_GIT_DIR     a git directory of apache/iceberg holding tag apache-iceberg-1.10.2
#        PYFLINK_LIB         pyflink's lib/ (pip install apache-flink==1.20.*)
#        ICEBERG_SPARK_JARS  the Iceberg 1.10.2 Spark runtime jar and the relocated Jackson jar
#                            (comma-separated; see /work/shared/real-iceberg.md)
#        PYSPARK_JARS        pyspark's jars/ (hadoop-client-api, metrics-core, slf4j-api)
set -euo pipefail
out=$(realpath -m "$1")
: "${ICEBERG_GIT_DIR:?}" "${PYFLINK_LIB:?}" "${ICEBERG_SPARK_JARS:?}" "${PYSPARK_JARS:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git --git-dir="$ICEBERG_GIT_DIR" archive apache-iceberg-1.10.2 flink/v1.20/flink/src/main \
  | tar -x -C "$tmp"
src="$tmp/flink/v1.20/flink/src/main/java"
find "$src" -name '*.java' -print0 | xargs -0 perl -pi -e \
  's/(?<![\w.])(org\.apache\.(parquet|avro|orc|datasketches)|com\.github\.benmanes|com\.fasterxml\.jackson)\b/org.apache.iceberg.shaded.$1/g'
stub="$tmp/stub/org/apache/flink/dropwizard/metrics"
mkdir -p "$stub"
cat > "$stub/DropwizardHistogramWrapper.java" <<'EOF'
package org.apache.flink.dropwizard.metrics;

import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.HistogramStatistics;

/** Stand-in for flink-metrics-dropwizard's adapter: a Flink histogram over a Dropwizard one. */
public class DropwizardHistogramWrapper implements Histogram {
  private final com.codahale.metrics.Histogram h;

  public DropwizardHistogramWrapper(com.codahale.metrics.Histogram h) {
    this.h = h;
  }

  @Override public void update(long value) { h.update(value); }
  @Override public long getCount() { return h.getCount(); }

  @Override
  public HistogramStatistics getStatistics() {
    final com.codahale.metrics.Snapshot s = h.getSnapshot();
    return new HistogramStatistics() {
      @Override public double getQuantile(double q) { return s.getValue(q); }
      @Override public long[] getValues() { return s.getValues(); }
      @Override public int size() { return s.size(); }
      @Override public double getMean() { return s.getMean(); }
      @Override public double getStdDev() { return s.getStdDev(); }
      @Override public long getMax() { return s.getMax(); }
      @Override public long getMin() { return s.getMin(); }
    };
  }
}
EOF
cp=$(ls "$PYFLINK_LIB"/*.jar | tr '\n' ':')${ICEBERG_SPARK_JARS//,/:}
for j in hadoop-client-api- metrics-core- slf4j-api- commons-lang3-; do
  cp="$cp:$(ls "$PYSPARK_JARS"/$j*.jar | head -1)"
done
mkdir -p "$tmp/classes/META-INF/services"
javac -nowarn --release 11 -proc:none -cp "$cp" -sourcepath "$src:$tmp/stub" -d "$tmp/classes" \
  "$src/org/apache/iceberg/flink/FlinkCatalogFactory.java" \
  "$src/org/apache/iceberg/flink/FlinkDynamicTableFactory.java" \
  "$src/org/apache/iceberg/flink/sink/FlinkSink.java"
cp "$tmp/flink/v1.20/flink/src/main/resources/META-INF/services/"* "$tmp/classes/META-INF/services/"
mkdir -p "$(dirname "$out")"
(cd "$tmp/classes" && jar cf "$out.tmp" .) && mv "$out.tmp" "$out"
echo "built $out ($(unzip -l "$out" | tail -1 | awk '{print $2}') entries)"
