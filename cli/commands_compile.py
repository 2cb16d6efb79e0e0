"""``icecheck compile``: the compiled build of what a search runs (icecheck/compiled.py)."""

from __future__ import annotations

import os
import sys

import click
from rich.markup import escape

from icecheck.cli.base import EXIT_FAILED, EXIT_INPUT, EXIT_OK, err, main, out


@main.command("compile")
@click.option("--check", "check_only", is_flag=True,
              help="Build nothing: exit 0 if the build is there and matches the sources, 1 "
                   "(saying why) if not.")
@click.option("--jobs", type=click.IntRange(min=1), default=None,
              help="C compilations at once (default: one per core).")
def compile_cmd(check_only: bool, jobs: int | None) -> None:
    """Compile what a search runs (the model, the properties, the search) with Cython, from
    the same Python source, into build/compiled/ (or $ICECHECK_COMPILED_DIR); about two
    minutes on 2 cores.

    Then run any command with ICECHECK_COMPILED=1 to use them, e.g.
    `ICECHECK_COMPILED=1 bin/icecheck explore ...`: the same states, verdicts and traces,
    found faster (reports/benchmarks.md, "Pure Python and compiled"). A build whose sources
    changed since is refused (exit 2, naming the file) until you compile again; without
    ICECHECK_COMPILED the Python source runs, as always."""
    from icecheck import compiled

    if check_only:
        try:
            manifest = compiled.check()
        except compiled.CompiledError as e:
            out.print(escape(f"not usable: {e}"), markup=True)
            sys.exit(EXIT_FAILED)
        out.print(escape(f"up to date: {len(manifest['modules'])} modules, built "
                         f"{manifest['built']} with Cython {manifest['cython']} in "
                         f"{compiled.build_dir()}"), markup=True)
        sys.exit(EXIT_OK)
    try:
        # plain lines, not a spinner: a CI log shows them too
        manifest = compiled.build(jobs=jobs, log=lambda m: err.print(escape(m), markup=True))
    except compiled.CompiledError as e:
        err.print(escape(f"icecheck compile: {e}"), markup=True)
        sys.exit(EXIT_INPUT if compiled.cython_version() is None else EXIT_FAILED)
    out.print(escape(f"compiled {len(manifest['modules'])} modules with Cython "
                     f"{manifest['cython']} into {compiled.build_dir()} in "
                     f"{manifest['seconds']} s"), markup=True)
    if os.environ.get(compiled.ENV) != "1":
        out.print(f"use them with {compiled.ENV}=1, e.g. {compiled.ENV}=1 bin/icecheck explore ...")
    sys.exit(EXIT_OK)
