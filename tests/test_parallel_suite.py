"""bin/test's parallel run (tests/conftest.py): whole files go to the pytest-xdist workers, and
every file that starts a JVM is in the one work unit that keeps them on a single worker.

Why these tests: a new Spark or real-Iceberg test file left out of that unit would start a
second JVM on another worker (a minute of CPU and a gigabyte each on a 2-core machine), and a
scheduler that handed out single tests would build test_compiled.py's module fixture (two
minutes) once per worker; neither shows as a failure, only as a slower run."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
#: what a test file does that starts a JVM: a SparkSession, the py4j gateway to real Iceberg,
#: a conformance target made ready, or a skip unless PySpark is installed
STARTS_A_JVM = re.compile(r'spark_session\(|get_spark\(|get_gateway\(|ready_target\(|'
                          r'get_target\(|importorskip\("pyspark"')


def _conftest():
    """tests/conftest.py as a module of its own name (pytest has its own copy as ``conftest``,
    which tests/conformance/conftest.py may shadow)."""
    spec = importlib.util.spec_from_file_location("icecheck_tests_conftest", TESTS / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_file_that_starts_a_jvm_is_in_the_jvm_unit():
    c = _conftest()
    starters = []
    for path in sorted(TESTS.rglob("test_*.py")):
        rel = os.path.relpath(path, TESTS)
        if STARTS_A_JVM.search(path.read_text(encoding="utf-8")):
            starters.append(rel)
            assert c.work_unit(rel) == c.JVM_GROUP, (
                f"{rel} starts a JVM: add it to JVM_FILES in tests/conftest.py")
    # the pattern finds the known ones (a pattern that matched nothing would pass vacuously)
    assert {"test_sweep_spark.py", "test_explore_spark.py",
            os.path.join("conformance", "test_spark_target.py")} <= set(starters)
    assert c.work_unit("test_values.py") == "test_values.py"
    assert c.work_unit(os.path.join("conformance", "test_java_driver.py")) == c.JVM_GROUP


def test_the_longest_units_are_handed_out_first():
    c = _conftest()
    ranks = {rel: c._rank(rel) for rel in (
        os.path.join("conformance", "test_conform_java.py"), "test_sweep_spark.py",
        "test_compiled.py", "test_explorer_browser.py", "test_values.py")}
    assert ranks[os.path.join("conformance", "test_conform_java.py")] == ranks[
        "test_sweep_spark.py"] < ranks["test_compiled.py"] < ranks[
        "test_explorer_browser.py"] < ranks["test_values.py"]


def test_the_scheduler_splits_by_file_and_groups_the_jvm_files():
    pytest.importorskip("xdist", reason="pytest-xdist is not installed (bin/test installs it)")
    c = _conftest()
    values = {"tx": ["popen"] * 2, "dist": "loadgroup"}
    config = SimpleNamespace(getvalue=values.__getitem__, getoption=values.__getitem__,
                             option=SimpleNamespace(loadscopereorder=True), rootpath=ROOT)
    sched = c.pytest_xdist_make_scheduler(config=config, log=None)
    assert config.option.loadscopereorder is False        # the collection's order, longest first
    split = sched._split_scope
    assert split("tests/test_values.py::test_a[1-2]") == split("tests/test_values.py::test_b") \
        == "test_values.py"
    assert split("tests/conformance/test_java_driver.py::test_x") == c.JVM_GROUP
    assert split("tests/test_sweep_spark.py::test_y") == c.JVM_GROUP
    assert split("tests/test_values.py::test_c@mine") == "mine"    # an xdist_group mark wins
    values["dist"] = "load"
    assert c.pytest_xdist_make_scheduler(config=config, log=None) is None


def test_two_workers_each_run_whole_files():
    """A real ``-n 2 --dist loadgroup`` run of two files: every test of a file on one worker
    (xdist's own loadgroup would deal test_values.py's tests out to both)."""
    pytest.importorskip("xdist", reason="pytest-xdist is not installed (bin/test installs it)")
    files = ["tests/test_values.py", "tests/test_api.py"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-p",
         "no:cacheprovider", "-vv", *files], cwd=ROOT, capture_output=True, text=True,
        timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    workers: dict[str, set[str]] = {}
    for m in re.finditer(r"^\[(gw\d+)\] \[ *\d+%\] PASSED (\S+?)::", done.stdout, re.M):
        workers.setdefault(m.group(2), set()).add(m.group(1))
    assert set(workers) == set(files), done.stdout[-3000:]
    assert all(len(w) == 1 for w in workers.values()), workers
    assert len(set().union(*workers.values())) == 2, workers       # both workers had a file
