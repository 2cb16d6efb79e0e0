"""What every ``icecheck`` command shares: the ``main`` group, the consoles, the exit codes and
the input-error helpers.

The command modules (``commands_*.py``) import this module and register their commands on
``main``; ``cli/main.py`` imports them all. So no command module imports ``cli/main.py``, and
the package has no import cycle (``tests/test_layout.py``).

Exit codes: 0 all good; 1 a property or expectation failed (or a trace drifted, or a run was
inconclusive); 2 bad input, always with one message naming file and line (or the option);
130 interrupted.
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


class ProfileName(click.ParamType):
    """An engine profile name (``icecheck profiles``), checked and completed by the shell
    from the profiles loaded at run time (built-in and ``$ICECHECK_PROFILES``)."""

    name = "profile"

    @staticmethod
    def names() -> list[str]:
        from icecheck.models.profiles import load_profiles
        try:
            return sorted(load_profiles())
        except InputError:
            return []

    def convert(self, value, param, ctx):
        from icecheck.models.profiles import load_profiles
        try:
            known = sorted(load_profiles())
        except InputError as e:    # a broken $ICECHECK_PROFILES file: its own file:line
            fail_input(e)
        if value not in known:
            self.fail(f"unknown profile {value!r}; known: {', '.join(known)}", param, ctx)
        return value

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem
        return [CompletionItem(n) for n in self.names() if n.startswith(incomplete)]


class PropertyName(click.ParamType):
    """A property name (``properties/``), checked and completed by the shell."""

    name = "property"

    @staticmethod
    def names() -> list[str]:
        from icecheck.properties import PROPERTIES
        return list(PROPERTIES)

    def convert(self, value, param, ctx):
        if value not in self.names():
            self.fail(f"unknown property {value!r}; expected one of {', '.join(self.names())}",
                      param, ctx)
        return value

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem
        return [CompletionItem(n) for n in self.names() if n.startswith(incomplete)]


PROFILE, PROPERTY = ProfileName(), PropertyName()


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


def expand_paths(paths: tuple[str, ...], pattern: str) -> list[str]:
    """Files as given, and the files matching ``pattern`` under each folder (sorted)."""
    files: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            files.extend(sorted(glob.glob(os.path.join(p, "**", pattern), recursive=True)))
        else:
            files.append(p)
    return files


# -- the end of every exploration (explore's engines and z3 search) -------------------------
def print_trace(doc: dict) -> None:
    from icecheck.traces.timeline import render_text

    out.print(escape(render_text(doc)), markup=True)
    out.print(escape(doc["explanation"]), markup=True)


def finish_run(result, traces, save_dir: str | None, as_json: bool, report,
               strict: bool = False, cut: str | None = None) -> None:
    """The end of every ``explore`` engine: save the traces (``(property, trace)`` pairs; a
    later one of the same property wins), print the result as JSON or via ``report(result,
    saved)``, and exit by the one rule every command follows (README, "Exit codes"): 1 if a
    must-hold property failed that is not a recorded known finding (any, with ``strict``), or
    if the run never reached its floor (``engines.config.floor_events``) or a bound cut it
    (``cut``: why, printed as INCONCLUSIVE); else 0."""
    from icecheck.engines.config import missing_floor

    saved: dict[str, str] = {}
    if save_dir:
        for prop, doc in traces:
            saved[prop] = save_trace(doc, save_dir)
    reached = getattr(result, "reached", None)       # z3 proves over every run: no floor
    missing = missing_floor(result.config, reached) if reached is not None else []
    if as_json:
        doc = result.as_json()
        doc["saved_traces"] = saved
        doc["floor_missing"] = missing
        print(json.dumps(doc, indent=2))
    else:
        report(result, saved)
    if missing:
        err.print(f"[bold red]INCONCLUSIVE[/]: the run never reached {escape(', '.join(missing))} "
                  "(properties/reachability.py), so it checked nothing there; give it more "
                  "examples, states or time", markup=True)
    if cut:     # a bound stopped the search before it exhausted the space: not a pass
        err.print(f"[bold red]INCONCLUSIVE[/]: {escape(cut)}", markup=True)
    failed = result.failed if strict else result.failed_new
    if getattr(result, "stopped", None) == "interrupted":
        sys.exit(130)   # a search that caught Ctrl-C and reported what it had: interrupted
    sys.exit(EXIT_FAILED if failed or missing or cut else EXIT_OK)


def save_trace(doc: dict, folder: str) -> str:
    from icecheck.traces.format import write_trace

    path = os.path.join(folder, f"{doc['id']}.json")
    write_trace(path, doc)
    return path
