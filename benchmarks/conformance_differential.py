"""Differential conformance benchmark: random scenarios on the model and on real Iceberg (Java).

Runs what ``icecheck conform --target java --random N --seed S`` runs, for each of several seeds
(a single seed once hid a disagreement another seed found), and writes

* ``reports/conformance-differential.json``: counts, throughput, every disagreement kind with
  its first and its minimal scenario;
* ``reports/conformance-differential.md``: the same, for people;
* ``reports/conformance/disagreement-<seed>-<n>.yaml``: each minimal scenario (runnable with
  ``icecheck conform --target java FILE``).

Usage (from the repository root, in the project's venv with the conformance extras):

    python benchmarks/conformance_differential.py     # -n 200 --seeds 1,2,3,4,215313253
    python benchmarks/conformance_differential.py -n 1000 --seeds 7 --no-shrink

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
    ap.add_argument("-n", "--random", type=int, default=200,
                    help="scenarios per seed (default 200)")
    ap.add_argument("--seeds", default="1,2,3,4,215313253",
                    help="comma-separated Hypothesis seeds (default 1,2,3,4,215313253)")
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

    seeds = [int(x) for x in args.seeds.split(",") if x.strip()]
    runs = []
    t_all = time.perf_counter()
    for seed in seeds:
        t0 = time.perf_counter()
        last = [t0]

        def progress(i, c, seed=seed, t0=t0, last=last):
            if time.perf_counter() - last[0] > 30 or i == args.random:
                last[0] = time.perf_counter()
                print(f"[seed {seed}: {i}/{args.random}] {last[0] - t0:.0f} s", file=sys.stderr,
                      flush=True)

        res = run_differential(args.random, seed, catalog=args.catalog,
                               allowlist=load_allowlist(), shrink=not args.no_shrink,
                               shrink_budget_s=args.shrink_budget,
                               save_dir=os.path.join(args.out, "conformance"), progress=progress)
        doc = res.as_json()
        doc["command"] = (f"icecheck conform --target java --random {args.random} --seed {seed}"
                          + (f" --catalog {args.catalog}" if args.catalog else ""))
        doc["total_seconds_with_shrinking"] = round(time.perf_counter() - t0, 1)
        for f in doc["findings"]:
            if f["saved"]:
                f["saved"] = os.path.relpath(f["saved"], ROOT)
        runs.append((doc, res))
        tp = doc["throughput"]
        print(f"seed {seed}: {res.scenarios} scenarios, {res.agreements} agree, "
              f"{res.disagreements} disagree ({len(res.findings)} kinds), {res.skipped} skipped, "
              f"{res.errors} errors; Java {tp['java_scenarios_per_s']} scenarios/s",
              file=sys.stderr)
    total = {k: sum(d[k] for d, _ in runs) for k in ("scenarios", "compared", "agreements",
                                                       "disagreements", "allowed", "skipped",
                                                       "errors", "rejected")}
    features: dict[str, dict[str, int]] = {}
    for d, _ in runs:
        for name, row in d.get("features", {}).items():
            acc = features.setdefault(name, {"compared": 0, "agree": 0, "disagree": 0,
                                             "other": 0})
            for k in acc:
                acc[k] += row.get(k, 0)
    total["features"] = dict(sorted(features.items()))
    report = {"seeds": seeds, "per_seed": [d for d, _ in runs], "total": total,
              "iceberg_java": iceberg_version(), "model_rules": "1.10",
              "total_seconds": round(time.perf_counter() - t_all, 1),
              "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                          "platform": platform.platform()}}
    write_atomic(os.path.join(args.out, "conformance-differential.json"),
                 json.dumps(report, indent=2) + "\n")
    write_atomic(os.path.join(args.out, "conformance-differential.md"),
                 _markdown(report, doc_yaml, runs))
    print(f"{len(seeds)} seeds: {total['scenarios']} scenarios, {total['agreements']} agree, "
          f"{total['disagreements']} disagree, {total['skipped']} skipped, {total['errors']} "
          f"errors; {report['total_seconds']:.0f} s in all")
    return 0


def _markdown(report: dict, doc_yaml, runs) -> str:
    t = report["total"]
    lines = [
        "# Differential conformance: model vs real Iceberg (Java)",
        "",
        f"Command: `python benchmarks/conformance_differential.py` (each row is "
        f"`icecheck conform --target java --random N --seed S`). Java: Iceberg "
        f"{report['iceberg_java']} core through py4j; model rules: Iceberg {report['model_rules']}.",
        "",
        "| seed | scenarios (parsed) | compared | agree | disagree (kinds) | allowed | skipped "
        "| errors | Java scenarios/s | model scenarios/s | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for doc, _ in runs:
        tp = doc["throughput"]
        lines.append(f"| {doc['seed']} | {doc['scenarios']} (+{doc['rejected']} rejected) | "
                     f"{doc['compared']} | {doc['agreements']} | {doc['disagreements']} "
                     f"({len(doc['findings'])}) | {doc['allowed']} | {doc['skipped']} | "
                     f"{doc['errors']} | {tp['java_scenarios_per_s']} | "
                     f"{tp['model_scenarios_per_s']} | {doc['total_seconds_with_shrinking']} |")
    lines += [f"| **all** | {t['scenarios']} | {t['compared']} | {t['agreements']} | "
              f"{t['disagreements']} | {t['allowed']} | {t['skipped']} | {t['errors']} | | | "
              f"{report['total_seconds']} |", ""]
    if t.get("features"):
        lines += ["## Per feature", "",
                  "Scenarios (over all seeds) that used each operation kind or switch, and how "
                  "they ended (`to_branch`: a commit with `branch:`; `append_only`, "
                  "`remove_rows`: ReplacePartitions.validateAppendOnly, RowDelta.removeRows; "
                  "`manifest_merge`: a small `commit.manifest.min-count-to-merge`).", "",
                  "| feature | compared | agree | disagree | other (allowed/error) |",
                  "|---|---|---|---|---|"]
        lines += [f"| `{k}` | {v['compared']} | {v['agree']} | {v['disagree']} | {v['other']} |"
                  for k, v in t["features"].items()]
        lines.append("")
    n = 0
    for doc, res in runs:
        if doc["skip_reasons"]:
            lines += [f"Seed {doc['seed']} skip reasons: " + ", ".join(
                f"{k} ({v})" for k, v in doc["skip_reasons"].items()), ""]
        for f, fr in zip(doc["findings"], res.findings):
            n += 1
            cmp = f["minimal"] or f["first"]
            lines += [f"## Disagreement {n} (seed {doc['seed']}): `{f['signature']}` "
                      f"({f['count']}x)", ""]
            lines += [f"- {d}" for d in cmp["differences"]]
            lines += ["", f"Minimal scenario (`{f['saved']}`, shrunk in {f['shrink_seconds']} s):",
                      "", "```yaml", doc_yaml(fr.minimal_doc or fr.first_doc).rstrip(), "```", ""]
    if not n:
        lines += ["No disagreements.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
