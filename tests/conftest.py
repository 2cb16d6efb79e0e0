"""The suite's fast subset and its parallel run.

``bin/test -m "not slow"`` leaves out the tests that start real Iceberg (Java, Spark,
PyIceberg: tests/conformance/), build the compiled extension, drive a browser or a Spark
cluster, or kill processes on purpose. They are marked here by file, so a new test in one of
those files is in the right subset without remembering a decorator. The README's test command
(bin/test, what CI runs) runs everything.

bin/test runs the suite on several pytest-xdist workers (``-n N --dist loadgroup``); the
scheduler below hands out whole files, never single tests, so a module's fixtures (the compiled
build of test_compiled.py, a server, a browser) are made once, and keeps every file that talks
to a JVM (real Iceberg through py4j, a SparkSession) on one worker, in the order a serial run
has them, so that one JVM and one SparkSession serve them all, as in a serial run. ``-n 0`` or
``-p no:xdist`` runs serially."""

from __future__ import annotations

import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

#: files whose tests are slow for the reasons above (paths relative to tests/)
SLOW_FILES = frozenset({
    "test_compiled.py", "test_explorer_browser.py", "test_sweep_browser.py",
    "test_sweep_spark.py", "test_sweep_cluster.py", "test_explore_spark.py",
    "test_worker_lifetime.py", "test_benchmark_pipelines.py",
})

#: files outside tests/conformance/ that start a JVM (a SparkSession); with those of
#: tests/conformance/ they are the work unit JVM_GROUP
JVM_FILES = frozenset({"test_sweep_spark.py", "test_explore_spark.py", "test_sweep_cluster.py"})
JVM_GROUP = "jvm"

#: work units handed out first under xdist, longest first (about 6 and 4 minutes of a 15-minute
#: serial run here): started last, either would run alone at the end while the other workers
#: idle. The other slow files follow, then the rest in collection order.
FIRST_UNITS = (JVM_GROUP, "test_compiled.py")


def _rel(path: str) -> str:
    """``path`` relative to tests/ (a test file's path, absolute or relative to the rootdir)."""
    return os.path.relpath(os.path.abspath(path), HERE)


def _is_slow(rel: str) -> bool:
    return rel.startswith("conformance" + os.sep) or rel in SLOW_FILES


def work_unit(rel: str) -> str:
    """The xdist work unit of the test file ``rel`` (relative to tests/): JVM_GROUP for the
    files that share the JVM, else the file itself."""
    if rel.startswith("conformance" + os.sep) or rel in JVM_FILES:
        return JVM_GROUP
    return rel


def _rank(rel: str) -> int:
    unit = work_unit(rel)
    if unit in FIRST_UNITS:
        return FIRST_UNITS.index(unit)
    return len(FIRST_UNITS) + (0 if _is_slow(rel) else 1)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: real Iceberg, the compiled build, a browser, Spark "
                                       "or killed processes (left out by -m 'not slow')")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _is_slow(_rel(str(item.path))):
            item.add_marker(pytest.mark.slow)
    if hasattr(config, "workerinput"):
        # an xdist worker: the controller hands out the work units in the order the workers
        # collected them (pytest_xdist_make_scheduler), so the longest go first. A serial
        # run keeps pytest's order. The sort is stable and the same on every worker (xdist
        # requires identical collections).
        items.sort(key=lambda item: _rank(_rel(str(item.path))))


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``_FileScheduling`` for ``--dist loadgroup`` (what bin/test passes); xdist's own
    scheduler for any other ``--dist``. Optional: without xdist (``-p no:xdist``) it is never
    called."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class _FileScheduling(LoadGroupScheduling):
        """``--dist loadgroup`` where a test without an ``xdist_group`` mark goes with its file
        (``work_unit``), not alone: xdist's own loadgroup hands such tests out one by one, so a
        module-scoped fixture would be made once per worker (the compiled build: two minutes
        each). Work units are taken in collection order (``pytest_collection_modifyitems`` puts
        the longest first), not xdist's default of the most tests first, which would start
        test_compiled.py's nine tests, four minutes long, near the end."""

        def __init__(self, config, log=None):
            super().__init__(config, log)
            config.option.loadscopereorder = False

        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)      # an xdist_group mark's name, or nodeid
            if scope != nodeid:
                return scope
            path = nodeid.split("::", 1)[0]
            return work_unit(_rel(os.path.join(str(self.config.rootpath), path)))

    return _FileScheduling(config, log)
