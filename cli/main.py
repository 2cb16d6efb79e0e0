"""``icecheck``: the command line (the ``main`` group of ``cli/base.py`` with every command
registered: ``scenario`` and ``profiles`` here, the others in ``commands_*.py``)."""

from __future__ import annotations

import json
import sys

import click
from rich.markup import escape

from icecheck.cli.base import EXIT_FAILED, EXIT_OK, expand_paths, fail_input, main, out
from icecheck.scenarios.errors import InputError


@main.group()
def scenario() -> None:
    """Run YAML scenarios (docs/scenario-format.md) on the model."""


@scenario.command("run")
@click.argument("files", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON list, one verdict per scenario (docs/scenario-format.md): "
                   "outcomes, live files, rows, failed expectations and violated properties.")
def scenario_run(files: tuple[str, ...], as_json: bool) -> None:
    """Run scenario FILES (or folders of them) and print each verdict, with the properties
    (undelete, lost write, duplicate keys, ...) its final table violates.

    Exit 1 if an expectation of a scenario fails, 0 otherwise: the properties are reported
    (each labelled must-hold, known finding or allowed under the scenario's profile), since a
    scenario may reproduce an anomaly on purpose."""
    from icecheck.scenarios.format import load_scenarios
    from icecheck.scenarios.runner import run_scenario

    try:
        scenarios = load_scenarios(expand_paths(files, "*.yaml"))
        verdicts = [run_scenario(s) for s in scenarios]
    except InputError as e:
        fail_input(e)
    if as_json:
        print(json.dumps([v.as_json() for v in verdicts], indent=2))
    else:
        for v in verdicts:
            _print_verdict(v)
        passed = sum(v.passed for v in verdicts)
        out.print(f"\n{passed} passed, {len(verdicts) - passed} failed")
    sys.exit(EXIT_OK if all(v.passed for v in verdicts) else EXIT_FAILED)


def _print_verdict(v) -> None:
    mark = "[green]PASS[/]" if v.passed else "[bold red]FAIL[/]"
    out.print(f"{mark} {escape(v.id)}: {v.outcome}"
              + (f" — {escape(v.message)}" if v.message else ""), markup=True)
    out.print(escape(f"     live data files: {v.live_data_files}  "
                     f"live delete files: {v.live_delete_files}"), markup=True)
    for f in v.failures:
        out.print(f"     [red]✗ {escape(f)}[/]", markup=True)
    labels = {"must_hold": "[bold red]VIOLATED[/]", "known_finding": "[bold yellow]KNOWN FINDING[/]",
              "allowed": "[yellow]allowed anomaly[/]", "raw": "[yellow]anomaly[/]"}
    for p in v.properties:
        out.print(f"     {labels.get(p['status'], p['status'])} {escape(p['property'])}: "
                  f"{escape(p['message'])}", markup=True)
        if p["status"] != "must_hold":
            out.print(f"       ({escape(p['reason'])})", markup=True)


@main.command()
@click.option("--json", "as_json", is_flag=True,
              help="Print the profiles as JSON: name, description, engine, isolation, and per "
                   "command its operation, mode, validations and unmatched-insert rule.")
def profiles(as_json: bool) -> None:
    """List the engine profiles (SQL commands -> Iceberg operations and validations)."""
    from icecheck.models.profiles import load_profiles

    try:
        profs = load_profiles()
    except InputError as e:
        fail_input(e)
    if as_json:
        print(json.dumps([{
            "name": p.name, "description": p.description, "engine": p.engine,
            "isolation": p.isolation, "validate_on_first_attempt": p.validate_on_first_attempt,
            "commands": {cmd: {"operation": r.operation, "mode": r.mode,
                               "validations": list(r.validations), "inserts": r.inserts}
                         for cmd, r in p.commands.items()}} for p in profs.values()], indent=2))
        return
    for p in profs.values():
        out.print(f"[bold]{p.name}[/]: {p.description}", markup=True)
        for cmd, rule in p.commands.items():
            out.print(f"    {cmd:<22} -> {rule.summary()}")


# The other commands live in their own modules; importing them registers them on ``main``.
from icecheck.cli import commands_check, commands_explore, commands_traces  # noqa: E402,F401
from icecheck.cli import commands_z3  # noqa: E402,F401
from icecheck.cli import commands_compile  # noqa: E402,F401
from icecheck.cli import commands_sweep  # noqa: E402,F401
from icecheck.cli import commands_pipelines  # noqa: E402,F401
from icecheck.cli import commands_audit  # noqa: E402,F401

from icecheck.cli import commands_conform  # noqa: E402,F401


def entry() -> None:
    """The console entry point (``icecheck``, ``python -m icecheck``)."""
    main()


if __name__ == "__main__":
    entry()
