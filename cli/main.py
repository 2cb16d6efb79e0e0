"""``icecheck``: the command line.

Exit codes: 0 all good; 1 a property or expectation failed (or a trace drifted); 2 bad input
(a malformed scenario, trace or configuration), always with one message naming file and line.
"""

from __future__ import annotations

import glob
import json
import os
import sys

import click
from rich.console import Console
from rich.markup import escape

from icecheck.scenarios.errors import InputError

EXIT_OK, EXIT_FAILED, EXIT_INPUT = 0, 1, 2

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def repo_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def builtin_scenarios() -> list[str]:
    from icecheck.scenarios import builtin_scenario_files
    return builtin_scenario_files()


class Seconds(click.ParamType):
    """A time budget in seconds: a finite number greater than 0 (``nan``, ``inf``, 0 and
    negative budgets are usage errors, exit 2, naming the option)."""

    name = "seconds"

    def convert(self, value, param, ctx):
        import math

        try:
            x = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(x) or x <= 0:
            self.fail(f"{value!r} is not a positive, finite number of seconds", param, ctx)
        return x


SECONDS = Seconds()


def fail_input(e: InputError) -> None:
    err.print(f"[bold red]error:[/] {escape(str(e))}", markup=True)
    sys.exit(EXIT_INPUT)


class IcecheckGroup(click.Group):
    """The ``icecheck`` group, with one exit-code rule for what click handles itself.

    * A usage error (a bad option value, an unknown command) is one line, ``error: ...``
      naming the option, and exit 2, like every other input error (click prints four lines).
    * Ctrl-C (SIGINT) ends the command promptly with exit 130, the shell's code for an
      interrupted command, and no traceback (click says "Aborted!" and exits 1, which a CI
      system reads as a failed check).
    """

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True,
             **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)
        except (KeyboardInterrupt, click.exceptions.Abort):
            err.print("interrupted")
            sys.exit(130)
        except click.exceptions.UsageError as e:
            if type(e).__name__ == "NoArgsIsHelpError":      # `icecheck` alone: the help
                e.show()
            else:
                sub = e.ctx.command_path.split(" ", 1)[-1] if e.ctx is not None and \
                    " " in e.ctx.command_path else ""
                hint = f" (see icecheck {sub} --help)" if sub else ""
                err.print(f"[bold red]error:[/] {escape(e.format_message())}{escape(hint)}",
                          markup=True)
            sys.exit(EXIT_INPUT)
        except click.exceptions.ClickException as e:
            e.show()
            sys.exit(e.exit_code)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        sys.exit(rv if isinstance(rv, int) else 0)


@click.group(cls=IcecheckGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="icecheck")
def main() -> None:
    """icecheck: can concurrent writers to this Iceberg table lose data?"""


@main.group()
def scenario() -> None:
    """Run YAML scenarios (docs/scenario-format.md) on the model."""


def expand_paths(paths: tuple[str, ...], pattern: str) -> list[str]:
    """Files as given, and the files matching ``pattern`` under each folder (sorted)."""
    files: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            files.extend(sorted(glob.glob(os.path.join(p, "**", pattern), recursive=True)))
        else:
            files.append(p)
    return files


@scenario.command("run")
@click.argument("files", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON verdict per scenario.")
def scenario_run(files: tuple[str, ...], as_json: bool) -> None:
    """Run scenario FILES (or folders of them) and print each verdict."""
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


@main.command()
def profiles() -> None:
    """List the engine profiles (SQL commands -> Iceberg operations and validations)."""
    from icecheck.models.profiles import load_profiles

    try:
        profs = load_profiles()
    except InputError as e:
        fail_input(e)
    for p in profs.values():
        out.print(f"[bold]{p.name}[/]: {p.description}", markup=True)
        for cmd, rule in p.commands.items():
            out.print(f"    {cmd:<22} -> {rule.summary()}")


# The other commands live in their own modules; importing them registers them on ``main``.
from icecheck.cli import commands_check, commands_explore, commands_traces  # noqa: E402,F401
from icecheck.cli import commands_z3  # noqa: E402,F401
from icecheck.cli import commands_sweep  # noqa: E402,F401

from icecheck.cli.conform import conform  # noqa: E402

main.add_command(conform)


def entry() -> None:
    """The console entry point (``icecheck``, ``python -m icecheck``)."""
    main()


if __name__ == "__main__":
    entry()
