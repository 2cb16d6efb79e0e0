"""``icecheck conform``: the model against a real Iceberg implementation.

Exit codes: 0 every comparison agrees (or its disagreement is on the documented allow-list,
conformance/allowlist.yaml, or the scenario is skipped with a stated reason); 1 a disagreement
(or a comparison that broke); 2 bad input, or a target that is not available (not implemented,
or Java/jars/packages missing: install Java 17 and the conformance extras, or run bin/test).

Targets (``conformance/targets.py``): ``java`` (Iceberg 1.10.2's Java core through py4j,
docs/conformance-java.md), ``spark`` (Spark 3.5 SQL + Iceberg 1.10.2, docs/conformance-spark.md),
``pyiceberg`` (PyIceberg 0.12; ``conformance/pyiceberg_target.py``), ``mixed`` (one table
written by real Spark and real PyIceberg on a shared catalog, writer by writer as each one's
profile says; docs/conformance-mixed.md). Each is a module with
``NAME``, ``ready()``, ``compare_scenario`` and ``compare_trace``.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import sys
import time

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from icecheck.cli.base import main
from icecheck.scenarios import builtin_scenario_files
from icecheck.scenarios.errors import InputError

EXIT_OK, EXIT_FAILED, EXIT_INPUT = 0, 1, 2

out = Console(highlight=False, soft_wrap=True,
              width=max(140, shutil.get_terminal_size((160, 24)).columns))
err = Console(stderr=True, highlight=False, soft_wrap=True)


def _repo_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _expand(paths: tuple[str, ...]) -> list[str]:
    files: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            found = glob.glob(os.path.join(p, "**", "*.yaml"), recursive=True)
            found += glob.glob(os.path.join(p, "**", "*.yml"), recursive=True)
            found += glob.glob(os.path.join(p, "**", "*.json"), recursive=True)
            files.extend(sorted(found))
        elif os.path.exists(p):
            files.append(p)
        else:
            raise InputError("no such file or folder", p)
    return files


def _fail_input(message: str) -> None:
    err.print(f"[bold red]error:[/] {escape(message)}", markup=True)
    sys.exit(EXIT_INPUT)


_LABELS = {"java": "Java", "spark": "Spark", "pyiceberg": "PyIceberg",
           "mixed": "Spark + PyIceberg"}


def _label(target: str, module=None) -> str:
    return getattr(module, "LABEL", None) or _LABELS.get(target, target)


def _load_target(name: str):
    """The target module, or exit 2 saying why it is not available."""
    from icecheck.conformance.targets import TargetUnavailable, get_target

    try:
        return get_target(name)
    except TargetUnavailable as e:
        _fail_input(f"--target {name} is not available: {e}")


def _target_ready(name: str, module) -> None:
    from icecheck.conformance.targets import TargetUnavailable

    try:
        module.ready()
    except TargetUnavailable as e:
        _fail_input(f"--target {name} is not available: {e}")


def _java_ready() -> None:
    _target_ready("java", _load_target("java"))


@main.command("conform")
@click.argument("paths", nargs=-1)
@click.option("--target", type=click.Choice(["java", "pyiceberg", "spark", "mixed"]),
              default="java",
              show_default=True,
              help="Real implementation to compare with: 'java' (Iceberg 1.10.2's Java core "
                   "through py4j), 'spark' (Spark 3.5 SQL + Iceberg 1.10.2; SQL-level scenarios "
                   "and traces only), 'pyiceberg' (PyIceberg 0.12). A target that cannot run "
                   "here exits 2.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparisons as JSON.")
@click.option("--catalog", type=click.Choice(["hadoop", "jdbc"]), default=None,
              help="Java catalog for every scenario (default: from the scenario's catalog: "
                   "put_if_absent -> hadoop, cas -> jdbc).")
@click.option("--random", "random_n", type=click.IntRange(1, 1_000_000), default=None,
              metavar="N",
              help="Differential mode (--target java, or mixed: random Spark + PyIceberg "
                   "scenarios, docs/conformance-mixed.md): N random scenarios (Hypothesis), "
                   "shrunk on disagreement (java).")
@click.option("--seed", type=int, default=None, help="Seed for --random (default: random).")
@click.option("--no-shrink", is_flag=True, help="With --random: do not shrink disagreements.")
@click.option("--allowlist", "allowlist_path", default=None, metavar="FILE",
              type=click.Path(exists=True, dir_okay=False),
              help="Allow-list of known, reasoned disagreements "
                   "(default: conformance/allowlist.yaml). A FILE that does not exist is an "
                   "error (exit 2), not an empty list.")
def conform(paths: tuple[str, ...], target: str, as_json: bool, catalog: str | None,
            random_n: int | None, seed: int | None, no_shrink: bool,
            allowlist_path: str | None) -> None:
    """Run SCENARIOs (YAML), FOLDERs of them, or TRACEs (traces/*.json) on the model AND on
    real Iceberg, and compare per operation (outcome, message key) and the live files at the
    end (live files for Java; the table's rows for Spark). Default: every scenario under
    scenarios/builtin/. See docs/conformance-java.md and docs/conformance-spark.md."""
    from icecheck.conformance.compare import load_allowlist

    module = _load_target(target)

    try:
        allowlist = load_allowlist(allowlist_path)
    except InputError as e:
        _fail_input(str(e))
    if random_n is not None:
        if paths:
            _fail_input("--random takes no SCENARIO arguments")
        if random_n < 1:
            _fail_input("--random N needs N >= 1")
        if target == "mixed":
            _run_random_mixed(module, random_n, seed, allowlist, as_json)
            return
        if target != "java":
            _fail_input(f"--random is only implemented for --target java and mixed, not "
                        f"{target}")
        _java_ready()
        _run_random(random_n, seed, catalog, allowlist, as_json, not no_shrink)
        return
    if seed is not None:
        _fail_input("--seed only goes with --random")
    try:
        files = _expand(paths) if paths else builtin_scenario_files()
    except InputError as e:
        _fail_input(str(e))
    if not files:
        _fail_input("no scenarios or traces to compare")
    # Parse everything first: bad input is exit 2 before the JVM starts.
    from icecheck.scenarios.format import load_scenario

    items = []
    try:
        for path in files:
            if path.endswith(".json"):
                from icecheck.conformance.compare import load_trace
                load_trace(path)
                items.append(("trace", path, None))
            else:
                items.append(("scenario", path, load_scenario(path)))
    except InputError as e:
        _fail_input(str(e))
    _target_ready(target, module)
    results = _compare_all(module, items, catalog, allowlist, quiet=as_json)
    if as_json:
        print(json.dumps({"target": target, "comparisons": [c.as_json() for c in results],
                          "summary": _summary(results)}, indent=2))
    else:
        _print_table(results, _label(target, module))
        out.print(_summary_line(results, target))
    sys.exit(EXIT_OK if all(c.ok for c in results) else EXIT_FAILED)


def _compare_all(module, items, catalog, allowlist, quiet: bool):
    from icecheck.conformance.compare import ERROR, Comparison

    opts = {"allowlist": allowlist}
    if catalog is not None:
        opts["catalog"] = catalog
    results = []
    for i, (kind, path, scenario) in enumerate(items, 1):
        try:
            not_driven = _not_driven(kind, path, scenario)
            if kind == "trace" and not not_driven:
                c = module.compare_trace(path, **opts)
            elif not_driven:
                from icecheck.conformance.compare import SKIPPED
                c = Comparison(scenario.id if scenario else os.path.basename(path), path, kind,
                               SKIPPED, not_driven)
            else:
                c = module.compare_scenario(scenario, **opts)
        except InputError as e:
            _fail_input(str(e))
        except Exception as e:  # the comparison broke (JVM, py4j): report, keep going
            c = Comparison(scenario.id if scenario else os.path.basename(path), path, kind,
                           ERROR, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        results.append(c)
        if not quiet:
            err.print(f"[{i}/{len(items)}] {c.id}: {c.status}")
    return results


def _not_driven(kind: str, path: str, scenario) -> str | None:
    """Why no target can drive the scenario's or trace's run, or None. The model's clock
    (models/clock.py): real files get the machine's modification times (reproducers/ set them
    by hand). A streaming sink's restart (models/lifecycle.py) and a writer's own catalog
    client (models/clients.py): the targets commit statements through one SQLite catalog
    (reproducers/ run the streaming jobs)."""
    if kind != "trace":
        ticks, sinks, clients = scenario.ticks, scenario.sinks, scenario.clients
    else:
        from icecheck.traces.format import load_trace
        config = load_trace(path).get("config", {})
        ticks = int(config.get("ticks", 0) or 0)
        sinks, clients = config.get("sinks"), config.get("clients")
    if ticks:
        return "the model's clock (tick steps, bounds.ticks) is not driven on real engines"
    if sinks:
        return ("a streaming sink's failures and restarts are not driven by the conformance "
                "targets (reproducers/ run them on real Spark and Flink)")
    if clients:
        return ("writers' own catalog clients are not driven: the targets commit through one "
                "SQLite catalog")
    return None


_STYLE = {"agree": "green", "allowed": "yellow", "skipped": "dim", "disagree": "bold red",
          "error": "bold red"}


def _verdict(outcome: str | None, message: str | None) -> str:
    """The outcome and the message key (the full message is in --json)."""
    from icecheck.conformance.compare import message_key

    if outcome is None:
        return ""
    key = message_key(message) if message else None
    if key and len(key) > 90:
        key = key[:87] + "..."
    return outcome + (f": {key}" if key else "")


def _print_table(results, label: str = "Java") -> None:
    t = Table(show_lines=False, pad_edge=False, expand=False, box=None, header_style="bold")
    t.add_column("scenario", overflow="fold", min_width=30, max_width=50)
    t.add_column("step/writer", no_wrap=True)
    t.add_column("model verdict", overflow="fold", min_width=30, max_width=60)
    t.add_column(f"real verdict ({label})", overflow="fold", min_width=30, max_width=60)
    t.add_column("agree?", no_wrap=True)
    notes = []
    for c in results:
        style = _STYLE.get(c.status, "")
        if not c.ops:
            t.add_row(escape(c.id), "-", f"[{style}]{c.status}[/]", escape(c.reason or ""),
                      f"[{style}]{c.status}[/]")
            continue
        for n, o in enumerate(c.ops):
            mark = "[green]yes[/]" if o.agree else "[bold red]NO[/]"
            if o.agree and o.note and o.note.startswith("detail"):
                mark += " [dim](detail)[/]"
            t.add_row(escape(c.id) if n == 0 else "", escape(o.label),
                      escape(_verdict(o.model_outcome, o.model_message)),
                      escape(_verdict(o.java_outcome, o.java_message)), mark)
        live_ok = not any(d.startswith("live") for d in c.differences)
        if c.model_live is not None and c.java_live is not None:
            t.add_row("", "live files",
                      escape(f"data {c.model_live[0]} deletes {c.model_live[1]}"),
                      escape(f"data {c.java_live[0]} deletes {c.java_live[1]}"),
                      "[green]yes[/]" if live_ok else "[bold red]NO[/]")
        model_rows = getattr(c, "model_rows", None)
        real_rows = getattr(c, "real_rows", None)
        if model_rows is not None and real_rows is not None:
            rows_ok = not any(d.startswith("rows") for d in c.differences)
            t.add_row("", "rows", escape(_rows_text(model_rows)), escape(_rows_text(real_rows)),
                      "[green]yes[/]" if rows_ok else "[bold red]NO[/]")
        real_files = getattr(c, "real_files", None)
        if c.java_live is None and real_files is not None and c.model_live is not None:
            t.add_row("", "live files (info)",
                      escape(f"data {c.model_live[0]} deletes {c.model_live[1]}"),
                      escape(f"data {real_files[0]} deletes {real_files[1]}"), "[dim]-[/]")
        if c.status == "allowed":
            t.add_row("", "", "", "", "[yellow]allowed[/] (see below)")
            notes.append(f"[yellow]allowed[/] {escape(c.id)}: {escape(c.reason or '')}")
        elif c.status in ("disagree", "error"):
            notes.append(f"[bold red]{c.status}[/] {escape(c.id)}: "
                         + escape("; ".join(c.differences) or c.reason or ""))
    out.print(t)
    for n in notes:
        out.print(n)


def _rows_text(rows, limit: int = 8) -> str:
    shown = ", ".join("(" + ", ".join(repr(v) for v in r) + ")" for r in rows[:limit])
    more = f", ... ({len(rows)} rows)" if len(rows) > limit else ""
    return f"[{shown}{more}]"


def _summary(results) -> dict:
    counts: dict[str, int] = {}
    for c in results:
        counts[c.status] = counts.get(c.status, 0) + 1
    ops = sum(len(c.ops) for c in results)
    return {"scenarios": len(results), "operations": ops, **counts}


def _summary_line(results, target: str = "java") -> str:
    s = _summary(results)
    parts = [f"{s.get(k, 0)} {k}" for k in ("agree", "disagree", "allowed", "skipped", "error")]
    bad = s.get("disagree", 0) + s.get("error", 0)
    head = "[bold red]DISAGREE[/]" if bad else "[green]OK[/]"
    return (f"\n{head} icecheck conform --target {target}: {s['scenarios']} scenarios "
            f"({s['operations']} operations compared): " + ", ".join(parts))


def _run_random_mixed(module, n: int, seed: int | None, allowlist, as_json: bool) -> None:
    """``--target mixed --random N``: random two-engine scenarios on one real table."""
    import random as _random

    from icecheck.conformance.mixed_differential import run_mixed_differential
    from icecheck.conformance.targets import TargetUnavailable

    try:
        module.ready()
    except TargetUnavailable as e:
        _fail_input(f"--target mixed is not available here: {e}")
    if seed is None:
        seed = _random.SystemRandom().randrange(2 ** 31)
    t0 = time.perf_counter()

    def progress(i, c):
        if not as_json:
            err.print(f"[{i}/{n}] {c.status} {time.perf_counter() - t0:.0f} s")

    err.print(f"icecheck conform --target mixed --random {n} --seed {seed}")
    res = run_mixed_differential(n, seed, allowlist=allowlist, progress=progress,
                                 save_dir=os.path.join(_repo_root(), "reports", "conformance"))
    doc = res.as_json()
    if as_json:
        print(json.dumps(doc, indent=2))
    else:
        for (d, c), path in zip(res.disagreements, res.saved):
            out.print(f"\n[bold red]{c.status}[/] saved to {escape(path)}", markup=True)
            for line in c.differences or [c.reason or ""]:
                out.print(f"  {escape(line)}")
        out.print(f"\nseed {seed}: {n} scenarios, {res.compared} compared: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(res.statuses.items())))
        if res.skip_reasons:
            out.print("skipped: " + "; ".join(f"{k} ({v})" for k, v in res.skip_reasons.items()))
        out.print(f"commands compared: {doc['commands_compared']}; tables compared: "
                  f"{doc['shapes_compared']}; wall {doc['wall_seconds']} s")
    sys.exit(EXIT_FAILED if res.disagreements else EXIT_OK)


def _run_random(n: int, seed: int | None, catalog, allowlist, as_json: bool,
                shrink: bool) -> None:
    import random as _random

    from icecheck.conformance.differential import doc_yaml, run_differential

    if seed is None:
        seed = _random.SystemRandom().randrange(2 ** 31)
    save_dir = os.path.join(_repo_root(), "reports", "conformance")
    t0 = time.perf_counter()

    def progress(i, c):
        if not as_json and (i % 50 == 0 or i == n):
            err.print(f"[{i}/{n}] {time.perf_counter() - t0:.0f} s")

    err.print(f"icecheck conform --target java --random {n} --seed {seed}")
    res = run_differential(n, seed, catalog=catalog, allowlist=allowlist, shrink=shrink,
                           save_dir=save_dir, progress=progress)
    doc = res.as_json()
    if as_json:
        print(json.dumps(doc, indent=2))
    else:
        for i, f in enumerate(res.findings, 1):
            out.print(f"\n[bold red]disagreement {i}[/] ({f.count}x) "
                      f"{escape(str(list(f.signature)))}", markup=True)
            cmp = f.minimal or f.first
            for d in cmp.differences:
                out.print(f"  {escape(d)}")
            out.print(f"  minimal scenario (saved to {escape(f.saved or '-')}):")
            out.print(escape(doc_yaml(f.minimal_doc or f.first_doc)))
        tp = doc["throughput"]
        if res.features:
            out.print("\nper feature (scenarios using it): compared / agree / disagree / other")
            for feature, row in sorted(res.features.items()):
                out.print(f"  {feature:20} {row['compared']:5} {row['agree']:5} "
                          f"{row['disagree']:5} {row['other']:5}")
        out.print(f"\nseed {seed}: {res.scenarios} scenarios ({res.rejected} rejected by the "
                  f"parser), {res.compared} compared: {res.agreements} agree, "
                  f"{res.disagreements} disagree, {res.allowed} allowed, {res.skipped} skipped, "
                  f"{res.errors} errors")
        out.print(f"throughput: Java {tp['java_scenarios_per_s']} scenarios/s (model + Java "
                  f"replay), model alone {tp['model_scenarios_per_s']} scenarios/s; wall "
                  f"{tp['wall_seconds']} s")
    sys.exit(EXIT_FAILED if res.disagreements or res.errors else EXIT_OK)
