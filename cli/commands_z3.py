"""``icecheck z3 ...``: the z3 symbolic checkers (docs/z3.md).

* ``search``: bounded model checking of a generic configuration (traces replayed on the model);
* ``prove-filters``: conflict-filter pruning (metrics, partitions) never skips a matching file;
* ``prove-cas-appends``: an inductive invariant: no acknowledged append is lost with a CAS
  catalog, for any number of writers (and a counterexample for last-writer-wins).
"""

from __future__ import annotations

import json
import sys

import click
from rich.markup import escape

from icecheck.cli.base import EXIT_FAILED, EXIT_OK, PROFILE, PROPERTY, err, fail_input, main, out
from icecheck.models import catalog as cat
from icecheck.scenarios.errors import InputError


@main.group()
def z3() -> None:
    """Symbolic checks with z3: bounded search, filter-pruning proofs, an inductive invariant."""


@z3.command("search")
@click.option("--profile", type=PROFILE, required=True,
              help="Engine profile (see `icecheck profiles`).")
@click.option("--writers", type=click.IntRange(1, 9), default=2, show_default=True)
@click.option("--ops", type=click.IntRange(1, 1), default=1, show_default=True,
              help="Operations per writer (the z3 encoding models one).")
@click.option("--mix", default="delete,update,insert", show_default=True,
              help="Commands each operation may be: some of insert,delete,update,merge,compact.")
@click.option("--keys", type=click.IntRange(1, 9), default=1, show_default=True)
@click.option("--catalog", type=click.Choice(list(cat.KINDS)), default=cat.CAS, show_default=True)
@click.option("--format-version", "--format", "format_version", type=click.Choice(["2", "3"]),
              default="2",
              show_default=True, help="Table format version.")
@click.option("--max-depth", "--depth", "depth", type=click.IntRange(0, 200), default=10,
              show_default=True,
              help="Bound: actions per run (at most 200: longer than any run the encoding "
                   "models; docs/z3.md). --depth is the same option (the name explore uses "
                   "is --max-depth).")
@click.option("--property", "properties", type=PROPERTY, multiple=True, metavar="PROPERTY",
              help="Hunt only this property (repeatable).")
@click.option("--save-trace", "save_dir", metavar="DIR", help="Write the traces here.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--strict", is_flag=True, help="Exit 1 on known findings too.")
def search(profile, writers, ops, mix, keys, catalog, format_version, depth, properties,
           save_dir, as_json, strict) -> None:
    """Bounded model checking with z3: every run of at most DEPTH actions.

    Exit 1 if a property that must hold is violated and is not a recorded known finding (any,
    with --strict; the trace, replayed on the model, is printed), 0 otherwise ("no violation within bounds" when z3 proves there is none),
    2 on bad arguments or a configuration the encoding does not model.
    """
    from icecheck.engines.config import build_model_config, mix_config
    from icecheck.properties import PROPERTIES

    for p in properties:
        if p not in PROPERTIES:
            fail_input(InputError(f"unknown property {p!r}; expected one of "
                                  f"{', '.join(PROPERTIES)}", "--property"))
    kinds = tuple(k.strip() for k in mix.split(",") if k.strip())
    try:
        cfg = mix_config(profile, writers, ops, kinds, keys, catalog, int(format_version))
        build_model_config(cfg, "--profile/--mix")
    except InputError as e:
        fail_input(e)
    run_z3(cfg, depth, properties, save_dir, as_json, strict, depth_option="--max-depth")


def run_z3(cfg, depth: int, properties, save_dir, as_json, strict: bool = False,
           depth_option: str = "--depth") -> None:
    """Run the z3 search on ``cfg``, print its result, and exit (shared with
    ``icecheck explore --engine z3``). On a terminal a transient line shows the step being
    encoded and the depth being solved (a deep search of a large configuration takes
    minutes)."""
    from rich.live import Live
    from rich.text import Text

    from icecheck.engines.z3_engine import MAX_DEPTH, Z3Unsupported, z3_search

    if not 0 <= depth <= MAX_DEPTH:
        fail_input(InputError(f"the z3 search takes a depth from 0 to {MAX_DEPTH} (every run "
                              f"it models is shorter), not {depth}", depth_option))
    live = Live(Text(""), console=err, transient=True, refresh_per_second=8)

    def progress(stage: str, done: int, total: int) -> None:
        what = ("encoding step" if stage == "encoding"
                else f"{stage}: solving for a run of depth")
        live.update(Text(f"z3: {what} {done} of {total}"))

    try:
        with live:
            result = z3_search(cfg, depth, properties or None, progress=progress)
    except Z3Unsupported as e:
        fail_input(InputError(str(e), "<arguments>"))
    from icecheck.cli.base import finish_run, print_trace

    def report(result, saved: dict[str, str]) -> None:
        longest = (f" (no run is longer than {result.encoded_depth} actions: "
                   f"{result.encoded_depth} steps encoded)"
                   if result.encoded_depth < depth else "")
        err.print(f"{cfg.name}: depth {depth}{longest}, {result.nodes} lineage nodes "
                  f"({result.model_runs} model steps, {result.facts} table facts), "
                  f"{result.seconds:.2f}s (tables {result.table_seconds:.2f}s, "
                  f"z3 + replay {result.solve_seconds:.2f}s)")
        for p, doc in result.traces.items():
            if p in result.unexpected:
                label = ("[bold yellow]KNOWN FINDING[/]" if p in result.known
                         else "[bold red]VIOLATED[/]")
            else:
                label = "[yellow]allowed anomaly[/]"
            out.print(f"\n{label} {escape(p)}: z3 trace of {len(doc['actions'])} actions, "
                      f"replayed on the model: {escape(' '.join(doc['actions']))}", markup=True)
            print_trace(doc)
            if p in saved:
                out.print(f"trace saved to {escape(saved[p])}")
        if result.unsat_within_bounds:
            out.print(f"[green]no violation within bounds[/] (z3: unsat for every run of at "
                      f"most {depth} actions)", markup=True)
        elif result.unexpected_unsat:
            out.print(f"[green]no unexpected violation within bounds[/] (depth {depth})",
                      markup=True)

    finish_run(result, list(result.traces.items()), save_dir, as_json, report, strict)


@z3.command("prove-filters")
@click.option("--depth", type=click.IntRange(0, 4), default=2, show_default=True,
              help="Nesting depth of and/or/not in the expression shapes.")
@click.option("--samples", type=click.IntRange(0, 100_000), default=500, show_default=True,
              help="Random concrete samples for the cross-check against the Python rules "
                   "(at most 100,000: about 10 ms each).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def prove_filters_cmd(depth, samples, as_json) -> None:
    """Prove that partition and min/max pruning never skips a file holding a matching row.

    Exit 1 on a counterexample (or an undecided shape), 0 when every shape is proven.
    """
    from icecheck.engines.z3_filters import prove_filters

    proof = prove_filters(depth, cross_check_samples=samples)
    if as_json:
        print(json.dumps(proof.as_json(), indent=2))
    else:
        out.print(f"cross-check of the z3 encoding against the Python rules: "
                  f"{proof.cross_checked_bounds} metrics samples, "
                  f"{proof.cross_checked_partition} partition samples agree")
        out.print(f"{proof.trees} expression shapes of depth <= {depth} "
                  f"({proof.concrete_shapes} (kind, column) leaf assignments, symbolic literals)")
        out.print(f"  metrics (InclusiveMetricsEvaluator): {proof.bounds_proven}/{proof.trees} "
                  f"proven")
        for spec, n in proof.partition_proven.items():
            out.print(f"  partition {spec}: {n}/{proof.trees} proven")
        for c in proof.counterexamples:
            mark = "[bold red]COUNTEREXAMPLE[/]" if c.python_confirms else \
                "[yellow]z3-only counterexample (not confirmed by the Python rules)[/]"
            out.print(f"{mark} {escape(c.kind)} {escape(c.expr)} row={escape(str(c.row))} "
                      f"file={escape(str(c.file))}", markup=True)
        for kind, shape in proof.unknown:
            out.print(f"[yellow]undecided[/] {escape(kind)} {escape(shape)}", markup=True)
        out.print(f"{proof.seconds:.1f}s: " + ("[green]all proven[/]" if proof.ok
                                              else "[bold red]not all proven[/]"), markup=True)
    sys.exit(EXIT_OK if proof.ok else EXIT_FAILED)


@z3.command("prove-cas-appends")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def prove_cas_appends(as_json) -> None:
    """Inductive invariant: no acknowledged append is lost, for any number of writers.

    Proved for cas and put_if_absent; for last_writer_wins z3 gives a counterexample to
    induction and a reachable run, replayed on the model. Exit 0 when that is the outcome.
    """
    from icecheck.engines.z3_invariants import prove_appends

    results = [prove_appends(k) for k in (cat.CAS, cat.PUT_IF_ABSENT, cat.LAST_WRITER_WINS)]
    good = (results[0].proved and results[1].proved and not results[2].proved
            and results[2].replayed)
    if as_json:
        print(json.dumps({"ok": good, "results": [r.as_json() for r in results]}, indent=2))
    else:
        for r in results:
            head = "[green]PROVED[/]" if r.proved else "[bold red]NOT INDUCTIVE[/]"
            out.print(f"{head} {r.catalog}: no acknowledged append lost, any number of writers "
                      f"({r.seconds:.2f}s)", markup=True)
            for o in r.obligations:
                out.print(f"    {'✓' if o.holds else '✗'} {escape(o.name)} ({o.seconds:.3f}s)")
                if o.counterexample:
                    out.print(f"      counterexample to induction: "
                              f"{escape(json.dumps(o.counterexample))}")
            if r.bmc_trace:
                out.print(f"    reachable from Init: {escape(' '.join(r.bmc_trace))}"
                          + (" (replayed on the model: lost_write)" if r.replayed else ""))
    sys.exit(EXIT_OK if good else EXIT_FAILED)
