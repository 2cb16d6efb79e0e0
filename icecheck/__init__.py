"""icecheck: can concurrent writers to this Iceberg table lose data?

The package maps the repository's top-level folders:

* ``icecheck.models``      (models/)      the transition system: Iceberg's metadata, operations,
  validations, catalogs, writers and engine profiles;
* ``icecheck.scenarios``   (scenarios/)   the YAML scenario format, its runner, the built-in suite;
* ``icecheck.properties``  (properties/)  lost write, undelete, dangling deletes, isolation, ...;
* ``icecheck.engines``     (engines/)     Hypothesis, explicit-state BFS/DFS and z3 over the model;
* ``icecheck.traces``      (traces/)      counterexample traces: format, replay, explanations;
* ``icecheck.conformance`` (conformance/) drivers that replay scenarios on real Iceberg;
* ``icecheck.explorer``    (explorer/)    the interactive explorer (web page, notebook Session);
* ``icecheck.sweep``       (sweep/)       the anomaly-matrix sweep on Spark;
* ``icecheck.cli``         (cli/)         the ``icecheck`` command;
* ``icecheck.charts``      (icecheck/charts.py) the charts of the reports (sweep, benchmarks).

The public Python API (docs/api.md, versioned by docs/versioning.md) is the names in
``__all__``. They are imported on first use, so ``import icecheck`` stays cheap and pulls in
no engine.
"""

from __future__ import annotations

import importlib
import os

__version__ = "0.1.0"

# ICECHECK_COMPILED=1: the checker's hot modules from the compiled build (icecheck/compiled.py),
# switched on before any of them is imported
if os.environ.get("ICECHECK_COMPILED", "").strip() not in ("", "0"):
    from icecheck.compiled import activate_from_env as _activate

    _activate()

_API = {
    # configurations and the model
    "ExploreConfig": "icecheck.engines.config",
    "mix_config": "icecheck.engines.config",
    "Model": "icecheck.models.system",
    "Action": "icecheck.models.system",
    # scenarios
    "load_scenario": "icecheck.scenarios.format",
    "run_scenario": "icecheck.scenarios.runner",
    "builtin_scenario_files": "icecheck.scenarios",
    # properties
    "evaluate": "icecheck.properties",
    "PROPERTIES": "icecheck.properties",
    # engines
    "explore": "icecheck.engines.hypothesis_engine",
    "search": "icecheck.engines.explicit",
    # traces
    "load_trace": "icecheck.traces.format",
    "replay_file": "icecheck.traces.replay",
    # the explorer's notebook session
    "Session": "icecheck.explorer.session",
    # errors
    "InputError": "icecheck.scenarios.errors",
}

__all__ = sorted(_API) + ["__version__"]


def __getattr__(name: str):
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'icecheck' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
