"""``icecheck replay TRACE...`` and ``icecheck trace show TRACE [--svg OUT.svg]``."""

from __future__ import annotations

import glob
import json
import os
import sys

import click
from rich.markup import escape

from icecheck.cli.base import (EXIT_FAILED, EXIT_INPUT, EXIT_OK, err, expand_paths, fail_input,
                               main, out)
from icecheck.scenarios.errors import InputError


def corpus_dir() -> str:
    import icecheck.traces
    return os.path.dirname(os.path.abspath(icecheck.traces.__file__))


def corpus_files() -> list[str]:
    return sorted(glob.glob(os.path.join(corpus_dir(), "*.json")))


def resolve_trace(arg: str) -> str:
    """A trace file as given, or a shipped corpus trace named by its file name with or without
    ``.json`` (``undelete-v2-mor-snapshot``): from a wheel there is no traces/ folder to name,
    and a checkout finds the same files either way."""
    if os.path.exists(arg) or os.sep in arg or "/" in arg:
        return arg
    name = arg if arg.endswith(".json") else arg + ".json"
    shipped = os.path.join(corpus_dir(), name)
    return shipped if os.path.isfile(shipped) else arg


def expand_traces(paths: tuple[str, ...]) -> list[str]:
    return expand_paths(tuple(resolve_trace(p) for p in paths), "*.json")


@main.command()
@click.argument("traces", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON result per trace.")
def replay(traces: tuple[str, ...], as_json: bool) -> None:
    """Re-execute TRACES (files or folders of *.json) on the model; check every state digest
    and the verdict. Exit 0 if all reproduce, 1 on drift, 2 on a malformed trace."""
    from icecheck.traces.replay import replay_file

    results = []
    try:
        for path in expand_traces(traces):
            results.append(replay_file(path))
    except InputError as e:
        fail_input(e)
    if as_json:
        print(json.dumps([r.as_json() for r in results], indent=2))
    else:
        for r in results:
            if r.ok:
                out.print(f"[green]ok[/]    {escape(r.path)}: {r.steps} steps, "
                          f"{escape(r.property or 'rejected')} reproduces", markup=True)
            else:
                out.print(f"[bold red]DRIFT[/] {escape(r.path)}:", markup=True)
                for d in r.drift:
                    out.print(f"      [red]✗ {escape(d)}[/]", markup=True)
        bad = sum(not r.ok for r in results)
        out.print(f"\n{len(results) - bad} reproduced, {bad} drifted")
    sys.exit(EXIT_OK if all(r.ok for r in results) else EXIT_FAILED)


@main.group()
def trace() -> None:
    """Look at traces (counterexamples found by `icecheck explore`)."""


@trace.command("show")
@click.argument("trace_file", metavar="TRACE")
@click.option("--svg", "svg", metavar="OUT.svg", help="Also write the timeline as SVG "
              "(needs Graphviz's `dot`).")
@click.option("--explain/--no-explain", default=True, help="Print the explanation in words.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the trace's summary as JSON: id, kind, property, actions, the "
                   "verdict, the explanation and the timeline text.")
def trace_show(trace_file: str, svg: str | None, explain: bool, as_json: bool) -> None:
    """Print TRACE (a file, or a shipped trace's name) as a per-writer timeline (and its
    explanation)."""
    trace_file = resolve_trace(trace_file)
    from icecheck.traces.format import load_trace
    from icecheck.traces.timeline import GraphvizMissing, render_svg, render_text

    try:
        if svg:
            from icecheck.traces.format import check_writable_dir
            check_writable_dir(os.path.dirname(os.path.abspath(svg)), "--svg")
            if os.path.isdir(svg):
                raise InputError(f"{svg!r} is a folder; name the SVG file to write", "--svg")
        doc = load_trace(trace_file)
        text = render_text(doc, path=trace_file)
    except InputError as e:
        fail_input(e)
    if as_json:
        import json
        print(json.dumps({"id": doc.get("id"), "kind": doc.get("kind"),
                          "property": doc.get("property"), "title": doc.get("title"),
                          "actions": doc.get("actions"), "verdict": doc.get("verdict"),
                          "expectation": doc.get("expectation"),
                          "explanation": doc.get("explanation"), "timeline": text}, indent=2))
    else:
        out.print(escape(text), markup=True)
    if explain and not as_json:
        out.print(escape(doc["explanation"]), markup=True)
    if svg:
        try:
            render_svg(doc, svg)
        except GraphvizMissing as e:
            err.print(f"[bold red]error:[/] {escape(str(e))}", markup=True)
            sys.exit(EXIT_INPUT)
        err.print(f"wrote {svg}")


@trace.command("export")
@click.argument("trace_file", metavar="TRACE")
@click.option("--itf", "itf", is_flag=True, required=True,
              help="Write the Informal Trace Format with the full model state at every step, "
                   "each variable's Apalache type in #meta.varTypes (docs/traces.md, \"ITF "
                   "export\").")
@click.option("-o", "--output", "output", metavar="OUT.itf.json",
              help="Write to this file (atomically) instead of standard output.")
def trace_export(trace_file: str, itf: bool, output: str | None) -> None:
    """Export TRACE (a file, or a shipped trace's name), re-run on the model, with every state
    in full."""
    trace_file = resolve_trace(trace_file)
    import json

    from icecheck.traces.format import check_writable_dir, load_trace, write_atomic
    from icecheck.traces.itf import export

    try:
        if output:
            if os.path.isdir(output):
                raise InputError(f"{output!r} is a folder; name the file to write", "--output")
            check_writable_dir(os.path.dirname(os.path.abspath(output)), "--output")
        doc = export(load_trace(trace_file), trace_file)
    except InputError as e:
        fail_input(e)
    text = json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    if output:
        write_atomic(output, text)
        err.print(f"wrote {output}", markup=False)
    else:
        sys.stdout.write(text)
