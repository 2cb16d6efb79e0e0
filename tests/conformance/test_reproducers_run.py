"""Run the standalone reproducers (reproducers/) on the real libraries: each must exit 0
("REPRODUCED"). The Spark ones get icecheck's Iceberg classpath through ICEBERG_SPARK_JARS
instead of downloading the runtime from Maven."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPRO = os.path.join(ROOT, "reproducers")


def _run(name, *targets, args=(), control=False):
    """Run ``reproducers/<name> [args]`` (skipped unless every target is ready here); with
    ``control``, the run must end "CONTROL OK" instead of "REPRODUCED"."""
    from icecheck.conformance.targets import TargetUnavailable, get_target
    try:
        for t in targets:
            get_target(t).ready()
    except TargetUnavailable as e:
        pytest.skip(f"{'/'.join(targets)} unavailable: {e}")
    env = dict(os.environ)
    if "spark" in targets:
        from icecheck.conformance.spark_session import classpath
        env["ICEBERG_SPARK_JARS"] = ",".join(classpath())
    p = subprocess.run([sys.executable, os.path.join(REPRO, name), *args], capture_output=True,
                       text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    if control:
        assert "CONTROL OK" in p.stdout, p.stdout[-2000:]
    else:
        assert "NOT REPRODUCED" not in p.stdout and "REPRODUCED" in p.stdout
    return p.stdout


def test_pyiceberg_upsert_duplicate_key():
    assert "id 3 has two rows" in _run("pyiceberg_upsert_duplicate_key.py", "pyiceberg")


def test_spark_mor_delete_races():
    assert _run("spark_mor_delete_races.py", "spark").count("REPRODUCED:") == 4


def test_spark_insert_only_merge_duplicates():
    out = _run("spark_insert_only_merge_duplicates.py", "spark")
    assert "both insert-only MERGEs inserted id 2" in out


def test_spark_insert_overwrite_select_races():
    """Issue 43, item 5: INSERT OVERWRITE t SELECT ... FROM t drops a concurrent append and
    writes back a concurrent delete (SQL, static and dynamic), drops the append at
    isolation-level snapshot, and REPLACE TABLE AS SELECT discards a concurrent commit; the
    controls (snapshot refuses the delete, serializable the append) hold."""
    out = _run("spark_insert_overwrite_select_races.py", "spark")
    assert out.count("REPRODUCED:") - out.count("NOT REPRODUCED:") == 4
    assert out.count("as described:") == 4


def test_mixed_spark_merge_pyiceberg_upsert_duplicate():
    if not os.path.exists(os.environ.get("SQLITE_JDBC_JAR", "/usr/share/java/sqlite-jdbc.jar")):
        pytest.skip("the SQLite JDBC driver (libxerial-sqlite-jdbc-java) is not installed")
    out = _run("mixed_spark_merge_pyiceberg_upsert_duplicate.py", "spark", "pyiceberg")
    assert "both inserted id 2" in out


def _needs_sqlite_jdbc():
    if not os.path.exists(os.environ.get("SQLITE_JDBC_JAR", "/usr/share/java/sqlite-jdbc.jar")):
        pytest.skip("the SQLite JDBC driver (libxerial-sqlite-jdbc-java) is not installed")


def test_mixed_spark_mor_delete_after_pyiceberg_delete():
    _needs_sqlite_jdbc()
    out = _run("mixed_spark_mor_delete_after_pyiceberg_delete.py", "spark", "pyiceberg")
    assert "PyIceberg delete committed; Spark DELETE committed" in out
    assert "d2 still in the table: False" in out


def test_mixed_spark_mor_update_after_pyiceberg_delete_is_refused():
    """The control: a Spark UPDATE in the same race validates deleted files and is refused."""
    _needs_sqlite_jdbc()
    out = _run("mixed_spark_mor_delete_after_pyiceberg_delete.py", "spark", "pyiceberg",
               args=("--control",), control=True)
    assert "Spark UPDATE failed: : org.apache.iceberg.exceptions.ValidationException: Cannot " \
           "commit, missing data files: [file:" in out


def test_spark_compaction_dangling_deletes():
    out = _run("spark_compaction_dangling_deletes.py", "spark")
    assert "1 pointing at a removed data file" in out


def test_compaction_drops_equality_delete_undelete():
    out = _run("compaction_drops_equality_delete_undelete.py", "spark")
    assert "after the CDC delete of id 1: [(0, 'v0')]" in out


def test_case_insensitive_filter_validations():
    out = _run("case_insensitive_filter_validations.py", "spark")
    assert "1. OverwriteFiles.validateAddedFilesMatchOverwriteFilter: REPRODUCED" in out
    assert "2. RowDelta.validateDataFilesExist: REPRODUCED" in out
    assert "d1 deleted meanwhile: ValidationException: Cannot find field 'CATEGORY'" in out


def test_null_partition_row_filter_delete():
    out = _run("null_partition_row_filter_delete.py", "spark")
    assert "Java API: REPRODUCED" in out
    assert "partitioned by id : SELECT returns [(0, 'a')], DELETE leaves []" in out
    assert "Spark SQL: REPRODUCED" in out
    assert "Spark SQL !=: REPRODUCED" in out


def test_pyiceberg_delete_not_equal_null_file():
    out = _run("pyiceberg_delete_not_equal_null_file.py", "pyiceberg")
    assert "partitioned  : scan(row_filter='day != 0') returns [(3, 7)]; after delete('day != 0') " \
           "the table holds [(1, 0)]" in out


def test_pyiceberg_file_overwrite_misses_position_delete():
    if not os.path.exists(os.environ.get("SQLITE_JDBC_JAR", "/usr/share/java/sqlite-jdbc.jar")):
        pytest.skip("the SQLite JDBC driver (libxerial-sqlite-jdbc-java) is not installed")
    out = _run("pyiceberg_file_overwrite_misses_position_delete.py", "spark", "pyiceberg")
    assert "PyIceberg file swap committed; rows [(1, 'a', 'py'), (2, 'a', 'v0')]" in out


def test_pyiceberg_add_files_twice_duplicates_rows():
    out = _run("pyiceberg_add_files_twice_duplicates_rows.py", "pyiceberg")
    assert "final rows: [(1, 'a'), (2, 'b'), (2, 'b')]" in out


def test_pyiceberg_add_files_twice_control_is_refused():
    """The same two add_files one after the other: the second is refused (the check works
    when it sees the first commit)."""
    from icecheck.conformance.targets import TargetUnavailable, get_target
    try:
        get_target("pyiceberg").ready()
    except TargetUnavailable as e:
        pytest.skip(f"pyiceberg unavailable: {e}")
    p = subprocess.run([sys.executable, os.path.join(REPRO, "pyiceberg_add_files_twice_"
                                                     "duplicates_rows.py"), "--control"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "second add_files refused: Cannot add files that are already referenced by " \
           "table, files: file://" in p.stdout


def test_spark_add_files_twice_duplicates_rows():
    out = _run("spark_add_files_twice_duplicates_rows.py", "spark")
    assert "rows: [(1, 'a'), (2, 'b'), (2, 'b')]; live entries of the backfill file: 2" in out


def test_spark_remove_orphan_files_deletes_uncommitted_job_files():
    """Iceberg's documented risk, replayed: the clean-up deletes a job's file written three
    days ago and not yet committed; the job commits it and reading the table fails
    (examples/slow-backfill-orphan-cleanup.yaml)."""
    out = _run("spark_remove_orphan_files_deletes_uncommitted_job_files.py", "spark")
    assert "the file exists: False" in out
    assert "NotFoundException: File does not exist: file:" in out


def test_spark_remove_orphan_files_keeps_a_younger_file():
    out = _run("spark_remove_orphan_files_deletes_uncommitted_job_files.py", "spark",
               args=("--control",), control=True)
    assert "deleted: []" in out and "rows: [(1, 'a'), (2, 'b')]" in out
