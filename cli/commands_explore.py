"""``icecheck explore --engine hypothesis ...``: hunt counterexamples on a generic configuration."""

from __future__ import annotations

import json
import os
import sys

import click
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from icecheck.cli.main import EXIT_FAILED, EXIT_OK, err, fail_input, main, out
from icecheck.models import catalog as cat
from icecheck.scenarios.errors import InputError


def progress_bar(total: int, description: str) -> tuple[Progress, callable]:
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err, transient=True)
    task = progress.add_task(description, total=total)

    def update(examples: int) -> None:
        progress.update(task, completed=min(examples, total))

    return progress, update


def print_trace(doc: dict) -> None:
    from icecheck.traces.timeline import render_text

    out.print(escape(render_text(doc)), markup=True)
    out.print(escape(doc["explanation"]), markup=True)


def save_trace(doc: dict, folder: str) -> str:
    from icecheck.traces.format import write_trace

    path = os.path.join(folder, f"{doc['id']}.json")
    write_trace(path, doc)
    return path


@main.command()
@click.option("--engine", type=click.Choice(["hypothesis"]), default="hypothesis",
              show_default=True, help="Exploration engine.")
@click.option("--profile", default=None,
              help="Engine profile (see `icecheck profiles`); required unless --trace.")
@click.option("--writers", type=click.IntRange(1, 9), default=2, show_default=True)
@click.option("--ops", type=click.IntRange(1, 9), default=1, show_default=True,
              help="Operations per writer.")
@click.option("--mix", default="delete,update,insert", show_default=True,
              help="Commands each operation may be: some of insert,delete,update,merge,compact.")
@click.option("--keys", type=click.IntRange(1, 9), default=1, show_default=True)
@click.option("--catalog", type=click.Choice(list(cat.KINDS)), default=cat.CAS, show_default=True)
@click.option("--format", "format_version", type=click.Choice(["2", "3"]), default="2",
              show_default=True, help="Table format version.")
@click.option("--faults", is_flag=True, help="Explore lost swap replies.")
@click.option("--crashes", is_flag=True, help="Explore writer crashes between phases.")
@click.option("--max-examples", type=click.IntRange(1), default=500, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True,
              help="Hypothesis seed (same seed, same result).")
@click.option("--time-budget", type=click.FloatRange(0), default=None,
              help="Stop generating after SECONDS (shrinking a found failure still finishes).")
@click.option("--hypothesis-profile", type=click.Choice(["ci", "dev"]), default="ci",
              show_default=True, help="Hypothesis settings profile.")
@click.option("--property", "properties", multiple=True, metavar="PROPERTY",
              help="Hunt only this property (repeatable): stop on any violation of it, even "
                   "an allowed one, and shrink it into a trace.")
@click.option("--save-trace", "save_dir", metavar="DIR", help="Write the minimal trace here.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--interactive", is_flag=True,
              help="Serve the interleaving explorer on 127.0.0.1 and print its URL "
                   "(docs/explorer.md); --save-trace DIR is where its page saves traces.")
@click.option("--trace", metavar="TRACE", help="With --interactive: step through TRACE.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="With --interactive: the port (0: a free one).")
def explore(engine, profile, writers, ops, mix, keys, catalog, format_version, faults, crashes,
            max_examples, seed, time_budget, hypothesis_profile, properties, save_dir,
            as_json, interactive=False, trace=None, port=0) -> None:
    """Explore every interleaving and choice of commands of a generic configuration.

    Exit 1 if a property that must hold is violated (printing the minimal trace's timeline and
    explanation), 0 otherwise (listing the "sometimes" events reached, so a pass is not
    vacuous), 2 on bad arguments.
    """
    if interactive or trace or profile is None:  # the explorer's page: explorer/cli.py
        from icecheck.explorer.cli import run_interactive
        return run_interactive(interactive=interactive, trace=trace, port=port, save_dir=save_dir,
                               profile=profile, writers=writers, ops=ops, mix=mix, keys=keys,
                               catalog=catalog, format_version=format_version, faults=faults,
                               crashes=crashes)
    from icecheck.engines.config import mix_config
    from icecheck.engines.hypothesis_engine import explore as run_explore

    kinds = tuple(k.strip() for k in mix.split(",") if k.strip())
    from icecheck.properties import PROPERTIES
    for p in properties:
        if p not in PROPERTIES:
            fail_input(InputError(f"unknown property {p!r}; expected one of "
                                  f"{', '.join(PROPERTIES)}", "--property"))
    try:
        cfg = mix_config(profile, writers, ops, kinds, keys, catalog, int(format_version),
                         faults, crashes)
        from icecheck.engines.config import build_model_config
        build_model_config(cfg, "<arguments>")
    except InputError as e:
        fail_input(e)
    progress, update = progress_bar(max_examples, f"exploring {cfg.name}")
    with progress:
        result = run_explore(cfg, hypothesis_profile=hypothesis_profile,
                             max_examples=max_examples, seed=seed, time_budget=time_budget,
                             properties=properties, progress=update)
    saved: dict[str, str] = {}
    if save_dir:
        for f in result.findings:
            saved[f.property] = save_trace(f.trace, save_dir)
    if as_json:
        doc = result.as_json()
        doc["saved_traces"] = saved
        print(json.dumps(doc, indent=2))
    else:
        report_result(result, saved)
    sys.exit(EXIT_FAILED if result.failed else EXIT_OK)


def report_result(result, saved: dict[str, str]) -> None:
    cfg = result.config
    err.print(f"{cfg.name}: {result.examples} runs, {result.states} distinct states, "
              f"{result.elapsed:.1f}s (hypothesis profile {result.hypothesis_profile}, "
              f"seed {result.seed})" + (", time budget spent" if result.timed_out else ""))
    for f in result.findings:
        if f.unexpected and f.known:
            ref = (f.trace.get("expectation") or {}).get("trace", "")
            label = f"[bold red]VIOLATED[/] (a known finding{', corpus ' + escape(ref) if ref else ''})"
        else:
            label = "[bold red]VIOLATED[/]" if f.unexpected else "[yellow]allowed anomaly[/]"
        out.print(f"\n{label} {escape(f.property)}: Hypothesis shrank it to "
                  f"{len(f.hypothesis_actions)} actions; the minimal trace has "
                  f"{len(f.trace['actions'])}: {escape(' '.join(f.trace['actions']))}",
                  markup=True)
        print_trace(f.trace)
        if f.property in saved:
            out.print(f"trace saved to {escape(saved[f.property])}  "
                      f"(replay: icecheck replay {escape(saved[f.property])})", markup=True)
    if not result.failed:
        out.print("[green]no unexpected violation[/]", markup=True)
    if result.unexpected_seen:
        out.print("[yellow]unexpected violations of properties not hunted:[/] " + ", ".join(
            f"{p} ({n} states)" for p, n in sorted(result.unexpected_seen.items())), markup=True)
    if result.allowed:
        out.print("allowed anomalies seen: " + ", ".join(
            f"{p} ({n} states)" for p, n in sorted(result.allowed.items())))
    out.print("sometimes-events reached: " + (", ".join(sorted(result.reached)) or "none"))
