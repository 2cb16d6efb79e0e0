"""Differential conformance benchmark: random scenarios on the model and on real Iceberg (Java).

Runs what ``icecheck conform --target java --random 1000 --seed 1`` runs, and writes

* ``reports/conformance-differential.json``: counts, throughput, every disagreement kind with
  its first and its minimal scenario;
* ``reports/conformance-differential.md``: the same, for people;
* ``reports/conformance/disagreement-<seed>-<n>.yaml``: each minimal scenario (runnable with
  ``icecheck conform --target java FILE``).

Usage (from the repository root, in the project's venv with the conformance extras):

    python benchmarks/conformance_differential.py            # --random 1000 --seed 1
    python benchmarks/conformance_differential.py -n 200 --seed 7 --no-shrink

Exit 0 when it ran (disagreements are results, not failures); 2 when Java is unavailable.
Reports are written atomically (temp file + rename).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--random", type=int, default=1000, help="scenarios (default 1000)")
    ap.add_argument("--seed", type=int, default=1, help="Hypothesis seed (default 1)")
    ap.add_argument("--catalog", choices=("hadoop", "jdbc"), default=None)
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--shrink-budget", type=float, default=90.0,
                    help="seconds of Hypothesis shrinking per disagreement kind, plus half of it "
                         "for the greedy reduction (default 90)")
    ap.add_argument("--out", default=os.path.join(ROOT, "reports"))
    args = ap.parse_args(argv)

    from icecheck.conformance.compare import load_allowlist
    from icecheck.conformance.differential import doc_yaml, run_differential, write_atomic
    from icecheck.conformance.java_setup import JavaSetupError, ensure_jars, iceberg_version

    try:
        ensure_jars()
        from icecheck.conformance.java_gateway import get_gateway
        get_gateway()
    except JavaSetupError as e:
        print(f"real Iceberg (Java) unavailable: {e}", file=sys.stderr)
        return 2

    t0 = time.perf_counter()
    last = [t0]

    def progress(i, c):
        if time.perf_counter() - last[0] > 30 or i == args.random:
            last[0] = time.perf_counter()
            print(f"[{i}/{args.random}] {last[0] - t0:.0f} s", file=sys.stderr, flush=True)

    res = run_differential(args.random, args.seed, catalog=args.catalog,
                           allowlist=load_allowlist(), shrink=not args.no_shrink,
                           shrink_budget_s=args.shrink_budget,
                           save_dir=os.path.join(args.out, "conformance"), progress=progress)
    total = time.perf_counter() - t0
    doc = res.as_json()
    doc["command"] = (f"icecheck conform --target java --random {args.random} --seed {args.seed}"
                      + (f" --catalog {args.catalog}" if args.catalog else ""))
    doc["iceberg_java"] = iceberg_version()
    doc["model_rules"] = "1.10"
    doc["total_seconds_with_shrinking"] = round(total, 1)
    doc["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count(),
                      "platform": platform.platform()}
    for f in doc["findings"]:
        if f["saved"]:
            f["saved"] = os.path.relpath(f["saved"], ROOT)
    write_atomic(os.path.join(args.out, "conformance-differential.json"),
                 json.dumps(doc, indent=2) + "\n")
    write_atomic(os.path.join(args.out, "conformance-differential.md"), _markdown(doc, doc_yaml,
                                                                                res))
    tp = doc["throughput"]
    print(f"{res.scenarios} scenarios, {res.agreements} agree, {res.disagreements} disagree "
          f"({len(res.findings)} kinds), {res.skipped} skipped, {res.errors} errors; "
          f"Java {tp['java_scenarios_per_s']} scenarios/s, model {tp['model_scenarios_per_s']} "
          f"scenarios/s; {total:.0f} s in all")
    return 0


def _markdown(doc: dict, doc_yaml, res) -> str:
    tp = doc["throughput"]
    lines = [
        "# Differential conformance: model vs real Iceberg (Java)",
        "",
        f"Command: `{doc['command']}` (via `python benchmarks/conformance_differential.py`).",
        f"Java: Iceberg {doc['iceberg_java']} core through py4j; model rules: Iceberg "
        f"{doc['model_rules']}.",
        "",
        "| | |",
        "|---|---|",
        f"| scenarios generated (parsed) | {doc['scenarios']} (+{doc['rejected']} rejected by "
        f"the parser) |",
        f"| compared on both sides | {doc['compared']} |",
        f"| agreements | {doc['agreements']} |",
        f"| disagreements | {doc['disagreements']} ({len(doc['findings'])} kinds) |",
        f"| allowed (allow-list) | {doc['allowed']} |",
        f"| skipped | {doc['skipped']} |",
        f"| errors | {doc['errors']} |",
        f"| Java scenarios/s (model + Java replay) | {tp['java_scenarios_per_s']} |",
        f"| Java replay only, scenarios/s | {tp['java_replay_only_scenarios_per_s']} |",
        f"| model alone, scenarios/s | {tp['model_scenarios_per_s']} |",
        f"| wall time of the {doc['requested']} runs | {tp['wall_seconds']} s |",
        f"| total with shrinking | {doc['total_seconds_with_shrinking']} s |",
        "",
    ]
    if doc["skip_reasons"]:
        lines += ["Skip reasons: " + ", ".join(f"{k} ({v})" for k, v in
                                               doc["skip_reasons"].items()), ""]
    for i, (f, fr) in enumerate(zip(doc["findings"], res.findings), 1):
        cmp = f["minimal"] or f["first"]
        lines += [f"## Disagreement {i}: `{f['signature']}` ({f['count']}x)", ""]
        lines += [f"- {d}" for d in cmp["differences"]]
        lines += ["", f"Minimal scenario (`{f['saved']}`, shrunk in {f['shrink_seconds']} s):",
                  "", "```yaml", doc_yaml(fr.minimal_doc or fr.first_doc).rstrip(), "```", ""]
    if not doc["findings"]:
        lines += ["No disagreements.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
