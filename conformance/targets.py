"""The registry of conformance targets: real implementations the model is compared with.

A target is a module ``icecheck.conformance.<name>_target`` with

* ``NAME``: its name (``java``, ``pyiceberg``, ``spark``);
* ``ready() -> None``: raises ``TargetUnavailable(message)`` when it cannot run here (the
  message says what to install);
* ``compare_scenario(scenario, **opts) -> Comparison`` and ``compare_trace(path, **opts) ->
  Comparison`` (``conformance.compare.Comparison``; options a target does not know are ignored).
"""

from __future__ import annotations

import importlib
from types import ModuleType

TARGETS = ("java", "pyiceberg", "spark", "mixed")


class TargetUnavailable(Exception):
    """The target cannot run on this machine (missing Java, jars, packages, or module)."""


def get_target(name: str) -> ModuleType:
    """The target module ``icecheck.conformance.<name>_target``.

    Raises ``TargetUnavailable`` when the module does not exist (yet) or cannot be imported."""
    if not name.replace("_", "").isalnum():
        raise TargetUnavailable(f"not a target name: {name!r}")
    modname = f"icecheck.conformance.{name}_target"
    try:
        module = importlib.import_module(modname)
    except ModuleNotFoundError as e:
        if e.name in (modname, "icecheck.conformance"):
            raise TargetUnavailable(f"target {name!r} is not implemented ({modname} does not "
                                    f"exist)") from None
        raise TargetUnavailable(f"target {name!r} cannot be imported: {e}") from None
    except ImportError as e:
        raise TargetUnavailable(f"target {name!r} cannot be imported: {e}") from None
    for attr in ("ready", "compare_scenario", "compare_trace"):
        if not callable(getattr(module, attr, None)):
            raise TargetUnavailable(f"target {name!r} ({modname}) has no {attr}()")
    return module
