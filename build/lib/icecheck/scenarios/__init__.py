"""Scenarios: a YAML description of a table, named files and an interleaving of commits.

``format.py`` parses a file into model objects (every error names the file and line);
``runner.py`` runs it on the model and compares the verdicts with its expectations.
"""

import glob as _glob
import os as _os

#: The built-in scenario suite ships inside the package (``icecheck/scenarios/builtin``), so an
#: installed ``icecheck check`` runs the same scenarios as a checkout does.
BUILTIN_DIR = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "builtin")


def builtin_scenario_files(subdir: str = "") -> list[str]:
    """Every built-in scenario file (sorted), optionally only those under ``subdir``."""
    return sorted(_glob.glob(_os.path.join(BUILTIN_DIR, subdir, "**", "*.yaml"), recursive=True))
