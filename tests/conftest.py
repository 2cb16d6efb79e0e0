"""The suite's fast subset: ``bin/test -m "not slow"`` leaves out the tests that start real
Iceberg (Java, Spark, PyIceberg: tests/conformance/), build the compiled extension, drive a
browser or a Spark cluster, or kill processes on purpose. They are marked here by file, so a
new test in one of those files is in the right subset without remembering a decorator. The
README's test command (bin/test, what CI runs) runs everything."""

from __future__ import annotations

import os

import pytest

#: files whose tests are slow for the reasons above (paths relative to tests/)
SLOW_FILES = frozenset({
    "test_compiled.py", "test_explorer_browser.py", "test_sweep_browser.py",
    "test_sweep_spark.py", "test_sweep_cluster.py", "test_explore_spark.py",
    "test_worker_lifetime.py", "test_benchmark_pipelines.py",
})


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: real Iceberg, the compiled build, a browser, Spark "
                                       "or killed processes (left out by -m 'not slow')")


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        rel = os.path.relpath(str(item.fspath), here)
        if rel.startswith("conformance" + os.sep) or rel in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
