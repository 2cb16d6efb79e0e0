"""``icecheck explore --engine hypothesis ...``: hunt counterexamples on a generic configuration."""

from __future__ import annotations

import os
import sys

import click
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from icecheck.cli.base import (EXIT_FAILED, PROFILE, PROPERTY, SECONDS, err, fail_input,
                               finish_run, main, out, print_trace)
from icecheck.models import catalog as cat
from icecheck.scenarios.errors import InputError


class PlainProgress:
    """Progress for a log, not a terminal: rich's live display prints nothing when stderr is
    not a TTY (a CI job, ``2> log``), so there one plain line is printed every ``every``
    seconds instead."""

    def __init__(self, every: float = 10.0):
        import time
        self.clock = time.monotonic
        self.every = every
        self.enabled = not err.is_terminal
        self.last = self.clock()

    def maybe(self, line: str) -> None:
        if self.enabled and self.clock() - self.last >= self.every:
            self.last = self.clock()
            err.print(line, markup=False, highlight=False)


def progress_bar(total: int, description: str) -> tuple[Progress, callable]:
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err, transient=True)
    task = progress.add_task(description, total=total)
    plain = PlainProgress()
    start = plain.clock()

    def update(examples: int) -> None:
        progress.update(task, completed=min(examples, total))
        elapsed = plain.clock() - start
        plain.maybe(f"{description}: {examples:,} of up to {total:,} runs, "
                    f"{examples / elapsed if elapsed > 0 else 0:,.1f} runs/s, {elapsed:.0f}s")

    return progress, update


@main.command()
@click.option("--engine", type=click.Choice(["hypothesis", "bfs", "dfs", "spark-bfs", "z3"]),
              default="hypothesis", show_default=True,
              help="Exploration engine: hypothesis (random, shrinking), bfs (exhaustive, "
                   "shortest counterexamples), dfs (exhaustive), spark-bfs (bfs with states "
                   "and visited fingerprints partitioned over Spark executors; same states, "
                   "verdicts and shortest counterexamples; see --master) or z3 (symbolic, "
                   "bounded by --max-depth, default 10; see `icecheck z3 --help`).")
@click.option("--profile", type=PROFILE, default=None,
              help="Engine profile (see `icecheck profiles`); required unless --trace.")
@click.option("--writers", type=click.IntRange(1, 9), default=2, show_default=True)
@click.option("--writer-profile", "writer_profile", multiple=True, metavar="wN=PROFILE",
              help="Run writer wN on its own engine profile (mixed engines; repeatable); the "
                   "other writers use --profile. Not with z3.")
@click.option("--ops", type=click.IntRange(1, 9), default=1, show_default=True,
              help="Operations per writer.")
@click.option("--mix", default="delete,update,insert", show_default=True,
              help="Commands each operation may be: some of insert,delete,update,merge,compact,"
                   "merge_insert (an insert-only MERGE of a fresh key), upsert and cdc_delete "
                   "(a streaming upsert sink's checkpoint upserting / deleting the key: Flink), "
                   "expire (Spark's expire_snapshots, retain_last 1), rewrite_deletes (Spark's "
                   "rewrite_position_delete_files), rewrite_manifests (Spark's rewrite_manifests), "
                   "overwrite_files (PyIceberg's file-level "
                   "overwrite() API updating the key), add_files (a backfill job registering "
                   "one external Parquet file with add_files; every writer adds the same "
                   "file). "
                   "With --writer-profile, each writer keeps the commands its profile supports.")
@click.option("--keys", type=click.IntRange(1, 9), default=1, show_default=True)
@click.option("--catalog", type=click.Choice(list(cat.KINDS)), default=cat.CAS, show_default=True)
@click.option("--format-version", "--format", "format_version", type=click.Choice(["2", "3"]),
              default="2",
              show_default=True, help="Table format version.")
@click.option("--faults", is_flag=True, help="Explore lost swap replies.")
@click.option("--crashes", is_flag=True, help="Explore writer crashes between phases.")
@click.option("--phantom-failures", is_flag=True,
              help="Explore swaps that apply while the catalog answers CommitFailedException "
                   "(a REST client resending a timed-out commit); the writer retries as Java does.")
@click.option("--max-examples", type=click.IntRange(1, 1_000_000), default=500,
              show_default=True,
              help="hypothesis: runs to generate (at most 1,000,000, as in exploration lists "
                   "and sweep spaces).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Hypothesis seed (same seed, same result).")
@click.option("--time-budget", type=SECONDS, default=None,
              help="Stop generating after SECONDS (shrinking a found failure still finishes).")
@click.option("--hypothesis-profile", type=click.Choice(["ci", "dev"]), default="ci",
              show_default=True, help="Hypothesis settings profile.")
@click.option("--property", "properties", type=PROPERTY, multiple=True, metavar="PROPERTY",
              help="Hunt only this property (repeatable): stop on any violation of it, even "
                   "an allowed one, and shrink it into a trace.")
@click.option("--save-trace", "save_dir", metavar="DIR", help="Write the minimal trace here.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--strict", is_flag=True,
              help="Exit 1 on known findings too (real anomalies recorded in "
                   "properties/expectations.yaml); without it they are reported, exit 0.")
@click.option("--interactive", is_flag=True,
              help="Serve the interleaving explorer on 127.0.0.1 and print its URL "
                   "(docs/explorer.md); --save-trace DIR is where its page saves traces.")
@click.option("--trace", metavar="TRACE", help="With --interactive: step through TRACE.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="With --interactive: the port (0: a free one).")
@click.option("--max-depth", type=click.IntRange(0), default=None,
              help="bfs/dfs: do not expand states at this depth (actions from the start); z3: "
                   "the longest run searched, 0 to 200 (default 10; docs/z3.md).")
@click.option("--retries", type=click.IntRange(0, 9), default=None,
              help="bfs/dfs: table property commit.retry.num-retries (default: the table's, 4).")
@click.option("--max-files", type=click.IntRange(0), default=None,
              help="bfs/dfs: do not expand states with more data/delete files than this.")
@click.option("--max-states", type=click.IntRange(1), default=None,
              help="bfs/dfs/spark-bfs: a memory bound: stop after this many distinct states; "
                   "the run is INCONCLUSIVE (exit 1), not a pass.")
@click.option("--max-memory", "max_memory", type=click.IntRange(1), default=None, metavar="MB",
              help="bfs/dfs: stop cleanly (INCONCLUSIVE, exit 1; with --checkpoint, "
                   "resumable) when the search's processes hold more than MB megabytes "
                   "resident, rather than being killed by the OOM killer without a word.")
@click.option("--checkpoint", "checkpoint_dir", metavar="DIR", default=None,
              help="bfs: write checkpoints to DIR (at level boundaries, every "
                   "--checkpoint-every states, and when the search stops early or completes); "
                   "see docs/exhaustive.md, Long runs.")
@click.option("--resume", is_flag=True,
              help="bfs, with --checkpoint DIR: continue the search DIR holds a checkpoint of "
                   "(same configuration and options; exit 2 naming the option that differs). "
                   "The result is the one an uninterrupted run gives.")
@click.option("--checkpoint-every", type=click.IntRange(1), default=None, metavar="N",
              help="With --checkpoint: write one at the first level boundary after every N new "
                   "states (a count: the same points on a fast or a busy machine).  "
                   "[default: 100000]")
@click.option("--no-symmetry", is_flag=True, help="bfs/dfs: no writer-symmetry reduction.")
@click.option("--no-por", is_flag=True, help="bfs/dfs: no partial-order reduction.")
@click.option("--workers", type=click.IntRange(1, 64), default=None,
              help="bfs: worker processes (default: every core). Results do not depend on it.")
@click.option("--split", is_flag=True,
              help="bfs: one search per combination of the programs' alternatives (--mix's "
                   "choices; engines/split.py), --workers of them at once: each holds a part "
                   "of the states (--max-states and --max-memory bound each part). Same "
                   "verdicts and shortest counterexamples; states are summed over the parts. "
                   "spark-bfs: each part a Spark task, on --master.")
@click.option("--master", default=None,
              help="spark-bfs: Spark master, local[N] or a cluster URL (default: spark-submit's "
                   "--master when run by spark-submit, else local[*]).")
@click.option("--partitions", type=click.IntRange(1, 4096), default=None,
              help="spark-bfs: fingerprint partitions (default: Spark's parallelism, one per core). "
                   "Results do not depend on it.")
def explore(engine, profile, writers, ops, mix, keys, catalog, format_version, faults, crashes,
            max_examples, seed, time_budget, hypothesis_profile, properties, save_dir,
            as_json, strict=False, interactive=False, trace=None, port=0, max_depth=None, retries=None,
            max_files=None, max_states=None, no_symmetry=False, no_por=False,
            workers=None, phantom_failures=False, writer_profile=(), master=None,
            partitions=None, max_memory=None, checkpoint_dir=None, resume=False,
            checkpoint_every=None, split=False) -> None:
    """Explore every interleaving and choice of commands of a generic configuration.

    Exit 1 if a property that must hold is violated (printing the minimal trace's timeline and
    explanation), 0 otherwise (listing the "sometimes" events reached, so a pass is not
    vacuous), 2 on bad arguments.
    """
    if writer_profile and (interactive or trace or profile is None):
        fail_input(InputError("needs --profile, and is not yet supported with --interactive or "
                              "--trace (a trace records its writers' profiles itself)",
                              "--writer-profile"))
    if interactive or trace or profile is None:  # the explorer's page: explorer/cli.py
        from icecheck.cli.commands_traces import resolve_trace   # a file, or a shipped name
        from icecheck.explorer.cli import run_interactive
        return run_interactive(interactive=interactive, trace=trace and resolve_trace(trace),
                               port=port, save_dir=save_dir,
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
        if save_dir:
            from icecheck.traces.format import check_writable_dir
            check_writable_dir(save_dir, "--save-trace")
        cfg = mix_config(profile, writers, ops, kinds, keys, catalog, int(format_version),
                         faults, crashes, phantom_failures)
        if writer_profile:
            from icecheck.engines.config import fit_mix_to_profiles
            cfg = fit_mix_to_profiles(_with_writer_profiles(cfg, writer_profile, writers))
        from icecheck.engines.config import build_model_config
        build_model_config(cfg, "--profile/--mix")
    except InputError as e:
        fail_input(e)
    if engine == "z3":
        from icecheck.cli.commands_z3 import run_z3
        from icecheck.engines.explicit import with_retries
        _refuse_unused_by_z3(click.get_current_context())
        run_z3(with_retries(cfg, retries), max_depth if max_depth is not None else 10,
               properties, save_dir, as_json, strict, depth_option="--max-depth")
        return
    long_run = _long_run_options(engine, max_memory, checkpoint_dir, resume, checkpoint_every)
    if split and (engine not in ("bfs", "spark-bfs") or checkpoint_dir is not None
                  or partitions is not None):
        fail_input(InputError("splits the breadth-first search (--engine bfs, or spark-bfs: "
                              "a Spark task per part), without --checkpoint or --partitions "
                              "(each part is a search of its own)", "--split"))
    if engine in ("bfs", "dfs", "spark-bfs"):
        options = {"--profile": profile, "--writer-profile": list(writer_profile),
                   "--writers": writers, "--ops": ops, "--mix": mix, "--keys": keys,
                   "--catalog": catalog, "--format-version": format_version,
                   "--faults": faults, "--crashes": crashes,
                   "--phantom-failures": phantom_failures, "--retries": retries,
                   "--max-depth": max_depth, "--max-files": max_files,
                   "--no-symmetry": no_symmetry, "--no-por": no_por}
        run_exhaustive(cfg, engine=engine, retries=retries, max_depth=max_depth,
                       max_files=max_files, max_states=max_states, symmetry=not no_symmetry,
                       por=not no_por, workers=workers, time_budget=time_budget,
                       properties=properties, save_dir=save_dir, as_json=as_json, strict=strict,
                       master=master, partitions=partitions, options=options, split=split,
                       **long_run)
        return
    progress, update = progress_bar(max_examples, f"exploring {cfg.name}")
    with progress:
        result = run_explore(cfg, hypothesis_profile=hypothesis_profile,
                             max_examples=max_examples, seed=seed, time_budget=time_budget,
                             properties=properties, progress=update)
    finish_run(result, [(f.property, f.trace) for f in result.findings], save_dir, as_json,
               report_result, strict)


#: explore's options the z3 search cannot honour (its bound is --max-depth; it has no state
#: set to bound, checkpoint or spread over workers, and no budget or random examples), each
#: with the engines that do
_NOT_Z3 = {"max_memory": "bfs or dfs", "checkpoint_dir": "bfs", "resume": "bfs",
           "checkpoint_every": "bfs", "max_states": "bfs, dfs or spark-bfs",
           "max_files": "bfs or dfs", "workers": "bfs", "no_symmetry": "bfs or dfs",
           "no_por": "bfs or dfs", "time_budget": "hypothesis, bfs, dfs or spark-bfs",
           "master": "spark-bfs", "partitions": "spark-bfs", "max_examples": "hypothesis",
           "seed": "hypothesis", "hypothesis_profile": "hypothesis", "split": "bfs"}


def _refuse_unused_by_z3(ctx: click.Context) -> None:
    """One line naming the first option given that ``--engine z3`` would ignore, and exit 2:
    a run that silently drops ``--max-memory`` or ``--checkpoint`` is not the run asked for."""
    from click.core import ParameterSource

    for param in ctx.command.params:
        if param.name in _NOT_Z3 and ctx.get_parameter_source(param.name) in (
                ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
            fail_input(InputError(f"is not an option of --engine z3 (a symbolic search "
                                  f"bounded by --max-depth); --engine {_NOT_Z3[param.name]} "
                                  "takes it", param.opts[0]))


def _long_run_options(engine, max_memory, checkpoint_dir, resume, checkpoint_every) -> dict:
    """The long-run options (engines/checkpoint.py), checked against the engine: one line
    naming the option and exit 2 when an engine cannot honour them."""
    if checkpoint_dir is not None and engine != "bfs":
        fail_input(InputError(f"checkpoints are written by --engine bfs, not {engine}",
                              "--checkpoint"))
    if resume and checkpoint_dir is None:
        fail_input(InputError("needs --checkpoint DIR (the folder holding the checkpoint)",
                              "--resume"))
    if checkpoint_every is not None and checkpoint_dir is None:
        fail_input(InputError("needs --checkpoint DIR", "--checkpoint-every"))
    if max_memory is not None and engine not in ("bfs", "dfs"):
        fail_input(InputError(f"is a bound of --engine bfs and dfs, not {engine}"
                              + (" (Spark bounds its executors' memory itself: "
                                 "spark.executor.memory)" if engine == "spark-bfs" else ""),
                              "--max-memory"))
    return {"max_memory": max_memory, "checkpoint_dir": checkpoint_dir, "resume": resume,
            "checkpoint_every": checkpoint_every}


def report_result(result, saved: dict[str, str]) -> None:
    cfg = result.config
    err.print(f"{cfg.name}: {result.examples} runs, {result.states} distinct states, "
              f"{result.elapsed:.1f}s (hypothesis profile {result.hypothesis_profile}, "
              f"seed {result.seed})"
              + (f"; CUT by the time budget after {result.examples} runs (of up to "
                 f"{result.max_examples}); a rerun that reaches the same number of runs gives "
                 "the same result" if result.timed_out else ""))
    for f in result.findings:
        if f.unexpected and f.known:
            ref = (f.trace.get("expectation") or {}).get("trace", "")
            label = f"[bold yellow]KNOWN FINDING[/]{' (corpus ' + escape(ref) + ')' if ref else ''}"
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
    elif not result.failed_new:
        out.print("[yellow]only known findings[/] (exit 0; --strict fails on them)", markup=True)
    if result.unexpected_seen:
        out.print("[yellow]unexpected violations of properties not hunted:[/] " + ", ".join(
            f"{p} ({n} states)" for p, n in sorted(result.unexpected_seen.items())), markup=True)
    if result.allowed:
        out.print("allowed anomalies seen: " + ", ".join(
            f"{p} ({n} states)" for p, n in sorted(result.allowed.items())))
    out.print("sometimes-events reached: " + (", ".join(sorted(result.reached)) or "none"))


# -- bfs / dfs ------------------------------------------------------------------------------------
def run_exhaustive(cfg, *, engine, retries, max_depth, max_files, max_states, symmetry, por,
                   workers, time_budget, properties, save_dir, as_json, strict=False,
                   master=None, partitions=None, options=None, max_memory=None,
                   checkpoint_dir=None, resume=False, checkpoint_every=None,
                   split=False) -> None:
    """``icecheck explore --engine bfs|dfs|spark-bfs``: exhaust the configuration within the
    bounds (``split``: one BFS per combination of the programs' alternatives,
    engines/split.py)."""
    from rich.live import Live
    from rich.text import Text

    from icecheck.engines.explicit import Bounds, search, with_retries

    cfg = with_retries(cfg, retries)
    workers = workers or (os.cpu_count() or 1)
    if engine == "dfs":
        workers = 1
    bounds = Bounds(max_depth=max_depth, max_files=max_files, max_states=max_states,
                    max_memory_mb=max_memory)
    live = Live(Text(""), console=err, transient=True, refresh_per_second=8)
    plain = PlainProgress()

    def progress(p: dict) -> None:
        # the rate of states expanded so far (the states found, less the part of the current
        # level not yet expanded): it does not fall while one large level is expanded
        done = p["states"] - p["frontier"] + p.get("expanded", p["frontier"])
        rate = done / p["elapsed"] if p["elapsed"] > 0 else 0.0
        eta = ""
        if max_states and rate > 0:
            # an upper bound: the search may finish before it reaches --max-states
            eta += f"  at most {max(0.0, (max_states - p['states']) / rate):.0f}s to --max-states"
        if time_budget:
            eta += f"  budget left {max(0.0, time_budget - p['elapsed']):.0f}s"
        level = (f" ({p['expanded']:,} expanded)" if p.get("expanded") is not None
                 and p["expanded"] < p["frontier"] else "")
        parts = (f"  parts done {p['parts'][0]}/{p['parts'][1]}" if p.get("parts") else "")
        line = (f"{engine}{' --split' if split else ''}: {p['states']:,} states  "
                f"{rate:,.0f} states/s  "
                f"frontier {p['frontier']:,}{level}  depth {p['depth']}  "
                f"{p['elapsed']:.1f}s{parts}{eta}")
        live.update(Text(line))
        plain.maybe(line)

    if engine == "spark-bfs":
        try:
            import pyspark  # noqa: F401
        except ImportError:
            fail_input(InputError("needs pyspark and Java (pip install -e '.[conformance]')",
                                  "--engine spark-bfs"))
    from icecheck.engines.checkpoint import DEFAULT_EVERY, Checkpointer, CheckpointError
    from icecheck.engines.spark_bfs import KeeperLost
    from icecheck.engines.split import PartLost
    checkpoint = None
    if checkpoint_dir is not None:
        checkpoint = Checkpointer(checkpoint_dir, resume=resume,
                                  every=checkpoint_every or DEFAULT_EVERY, options=options,
                                  notify=lambda line: err.print(line, markup=False,
                                                                highlight=False))
    try:
        with live:
            if split:
                from icecheck.engines.split import split_search
                result = split_search(cfg, symmetry=symmetry, por=por, workers=workers,
                                      bounds=bounds, time_budget=time_budget,
                                      progress=progress, stop_on=frozenset(properties) or None,
                                      on_spark=engine == "spark-bfs", master=master)
            elif engine == "spark-bfs":
                from icecheck.engines.spark_bfs import spark_search
                result = spark_search(cfg, symmetry=symmetry, por=por, bounds=bounds,
                                      master=master, partitions=partitions,
                                      time_budget=time_budget, progress=progress,
                                      stop_on=frozenset(properties) or None)
            else:
                result = search(cfg, engine=engine, symmetry=symmetry, por=por,
                                workers=workers, bounds=bounds, time_budget=time_budget,
                                progress=progress, stop_on=frozenset(properties) or None,
                                checkpoint=checkpoint)
    except CheckpointError as e:
        fail_input(InputError(str(e), e.option))
    except ValueError as e:
        fail_input(InputError(str(e), "--engine"))
    except (KeeperLost, PartLost) as e:
        # a spark-bfs keeper or a --split part's process killed mid-search (the OOM killer, a
        # user): an engine that could not finish, one line and exit 1 like a cut search, never
        # a traceback
        err.print(f"[bold red]INCONCLUSIVE[/]: {escape(str(e))}", markup=True)
        if as_json:         # a consumer of --json gets a document, not an empty stdout
            import json
            print(json.dumps({"config": cfg.name, "engine": engine, "complete": False,
                              "stopped": "lost", "error": str(e)}, indent=2))
        sys.exit(EXIT_FAILED)
    found = list(result.violations.values()) + list(result.allowed.values())
    cut = None
    if result.stopped == "max states":
        cut = (f"--max-states {max_states:,} stopped the search before it exhausted the "
               f"configuration ({result.states:,} states explored, {result.cut:,} more "
               "found); a pass would cover only those states, so raise --max-states")
    elif result.stopped == "memory bound":
        cut = (f"--max-memory {max_memory:,} MB stopped the search before it exhausted the "
               f"configuration ({result.states:,} states explored); a pass would cover only "
               "those states: raise --max-memory"
               + (", and continue the checkpoint with --resume" if checkpoint else
                  ", or rerun with --checkpoint DIR to be able to continue it"))
    elif result.stopped in ("time budget", "interrupted"):
        why = ("--time-budget" if result.stopped == "time budget" else "an interrupt (Ctrl-C)")
        cut = (f"{why} stopped the search before it exhausted the configuration "
               f"({result.states:,} states explored); a pass would cover only those states"
               + ("; continue the checkpoint with --resume" if checkpoint else
                  "; rerun with a larger --time-budget, or with --checkpoint DIR to be able "
                  "to continue it"))
    finish_run(result, [(v.property, v.trace) for v in found if v.trace is not None], save_dir,
               as_json, report_exhaustive, strict, cut=cut)


def report_exhaustive(result, saved: dict[str, str]) -> None:
    cfg = result.config
    red = ", ".join(x for x, on in (("symmetry", result.symmetry), ("POR", result.por)) if on)
    status = ("exhausted" if result.complete else f"stopped: {result.stopped}")
    out.print(f"{escape(cfg.name)} [{result.engine}, {red or 'no reduction'}, "
              f"{result.workers} worker(s)]: {status}", markup=True)
    for note in result.notes:
        err.print(f"[yellow]note:[/] {escape(note)}", markup=True)
    out.print(f"states {result.states:,}  transitions {result.transitions:,} "
              f"(of {result.enabled_transitions:,} enabled)  max_depth {result.max_depth}  "
              f"seconds {result.seconds:.2f}  states_per_s {result.states_per_s:,.0f}  "
              f"final states {result.final_states:,}"
              + (f"  cut by bounds {result.cut:,}" if result.cut else ""))
    for q in result.part_results:       # a split search (engines/split.py): each part
        out.print(f"  part {escape(q['part'])}: {q['states']:,} states, {q['seconds']:.1f}s"
                  + ("" if q["complete"] else f", stopped: {q['stopped']}"), markup=True)
    for v in result.violations.values():
        if v.known:
            ref = (v.trace or {}).get("expectation", {}) or {}
            label = (f"[bold yellow]KNOWN FINDING[/]"
                     f"{' (corpus ' + escape(ref.get('trace', '')) + ')' if ref.get('trace') else ''}")
        else:
            label = "[bold red]VIOLATED[/]"
        _print_violation(label, v, result, saved)
    for v in result.allowed.values():
        _print_violation("[yellow]allowed anomaly[/]", v, result, saved,
                         f" ({result.allowed_counts[v.property]:,} states)")
    if not result.violations:
        scope = "within bounds" if result.complete else "in the states explored"
        out.print(f"[green]no violation {scope}[/]", markup=True)
    out.print("coverage (explored transitions):")
    for k, n in sorted(result.coverage.items()):
        out.print(f"  {escape(k)}: {n:,}", markup=True)
    out.print("sometimes-events reached: " + (", ".join(
        f"{e} ({n:,})" for e, n in sorted(result.reached.items())) or "none"))


def _print_violation(label, v, result, saved, extra="") -> None:
    kind = "shortest" if result.engine in ("bfs", "spark-bfs") else "first found"
    actions = v.trace["actions"] if v.trace else v.actions
    out.print(f"\n{label} {escape(v.property)}{extra}: {kind} counterexample, {v.depth} actions, "
              f"after {v.states_before:,} states / {v.seconds:.2f}s: {escape(' '.join(actions))}",
              markup=True)
    if v.trace:
        print_trace(v.trace)
    if v.property in saved:
        out.print(f"trace saved to {escape(saved[v.property])}  "
                  f"(replay: icecheck replay {escape(saved[v.property])})", markup=True)


def _with_writer_profiles(cfg, specs, writers: int):
    """``cfg`` with ``--writer-profile wN=PROFILE`` applied (engines/config.py writer_profiles)."""
    from dataclasses import replace

    from icecheck.models.profiles import load_profiles
    chosen = [""] * writers
    for spec in specs:
        name, eq, prof = spec.partition("=")
        index = name[1:] if name[:1] == "w" else name
        if not eq or not index.isdigit() or not 1 <= int(index) <= writers:
            raise InputError(f"expected wN=PROFILE with N in 1..{writers}, not {spec!r}",
                             "--writer-profile")
        if prof not in load_profiles():
            raise InputError(f"unknown profile {prof!r}; expected one of "
                             f"{', '.join(load_profiles())}", "--writer-profile")
        chosen[int(index) - 1] = "" if prof == cfg.profile else prof
    while chosen and not chosen[-1]:
        chosen.pop()
    new = replace(cfg, writer_profiles=tuple(chosen))
    return replace(new, name=f"{cfg.name} [{new.profile_label}]") if new.mixed else new
