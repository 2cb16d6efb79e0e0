"""What each reduction that drops states saves (issue 44, item 2): every subject searched with
all reductions on, and again with one of them off, each search in a fresh process; the report
gives the states, transitions and final states of both, and whether the verdicts, the shortest
counterexample lengths, the final outcomes and the "sometimes" events are the same.

The levers (each a module constant, not a search option, so a run turns it off in its own
process only):

* ``doomed_swaps``: ``engines/por.py``'s persistent set, a swap that loses its race explored
  alone (``DOOMED_SWAPS``);
* ``failed_records``: fingerprints that leave out most of a failed operation's record
  (``engines/symmetry.py``, ``LEAVE_OUT_FAILED``);
* ``lost_attempts``: fingerprints that leave out what attempts that lost their race wrote
  (``engines/symmetry.py``, ``LEAVE_OUT_LOST``; ``WriterState.lost``);
* ``lost_races``: fingerprints that leave out how many races a writer lost where that can no
  longer matter (``engines/symmetry.py``, ``MERGE_LOSSES``; ``Model.fingerprint_writers``);
* ``loss_counts``: fingerprints that encode a finished operation's attempts capped at 2
  (``engines/symmetry.py``, ``LEAVE_OUT_LOSSES``; ``capped``).

Writer symmetry and the sleep sets are measured elsewhere (the benchmark's "unreduced" runs in
reports/benchmarks.md). The subjects: the canonical configurations and the smaller ones of
benchmarks/configs.yaml, every example pipeline (examples/), and the realistic pipelines of
benchmarks/pipelines/, these through ``--max-depth`` BFS levels (their whole searches take
tens of minutes: the same depth on both sides is a like-for-like comparison, its final outcomes
and anomalies those of the runs that end by then). Writes reports/reductions.{json,md}
together (atomic).

    bin/benchmark reductions [--subjects canonical,others,examples,realistic | NAME,...]
        [--levers L,...] [--max-depth N] [--out DIR] [--keep]
                                                 # or python -m benchmarks.reductions ...
    bin/benchmark reductions --markdown-only     # reductions.md again from reductions.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: lever -> (module, constant that turns it off when False)
LEVERS = {"doomed_swaps": ("icecheck.engines.por", "DOOMED_SWAPS"),
          "failed_records": ("icecheck.engines.symmetry", "LEAVE_OUT_FAILED"),
          "lost_attempts": ("icecheck.engines.symmetry", "LEAVE_OUT_LOST"),
          "lost_races": ("icecheck.engines.symmetry", "MERGE_LOSSES"),
          "loss_counts": ("icecheck.engines.symmetry", "LEAVE_OUT_LOSSES")}
GROUPS = ("canonical", "others", "examples", "realistic")
#: BFS levels of a realistic pipeline searched on each side (about half a million states)
MAX_DEPTH = 14


def _spec() -> dict:
    """benchmarks/configs.yaml (the canonical and smaller configurations)."""
    import yaml
    with open(os.path.join(ROOT, "benchmarks", "configs.yaml")) as f:
        return yaml.safe_load(f)


def subjects(groups) -> list[str]:
    """The subjects of ``groups``, each named ``group:id``, in a fixed order."""
    from benchmarks.pipelines import pipeline_files
    from benchmarks.run import example_pipelines
    spec = _spec()
    out = []
    for g in groups:
        if g == "canonical":
            out += [f"canonical:{p}" for p in spec["canonical"]["profiles"]]
        elif g == "others":
            out += [f"others:{e['id']}" for e in spec["others"]]
        elif g == "examples":
            out += [f"examples:{os.path.basename(p)}" for p in example_pipelines()]
        elif g == "realistic":
            out += [f"realistic:{os.path.basename(p)}" for p in pipeline_files()]
    return out


def config_of(subject: str):
    """The configuration a subject names (``ValueError`` for one that names nothing)."""
    from benchmarks.run import _cfg
    from icecheck.pipelines.load import load_pipeline
    group, _, name = subject.partition(":")
    spec = _spec()
    if group == "canonical" and name in spec["canonical"]["profiles"]:
        return _cfg(spec["canonical"], name)
    if group == "others":
        for e in spec["others"]:
            if e["id"] == name:
                return _cfg(e, e["profile"])
    folder = {"examples": "examples", "realistic": os.path.join("benchmarks", "pipelines")}
    path = os.path.join(ROOT, folder.get(group, "-"), name)
    if group in folder and os.path.isfile(path):
        return load_pipeline(path).config
    raise ValueError(f"unknown subject {subject!r} (one of {', '.join(GROUPS)} and its "
                     "configuration's id or file name, e.g. examples:no-cas-catalog.yaml)")


def measure(subject: str, off: str | None, max_depth: int | None) -> dict:
    """One search of ``subject`` (traces off) with the lever ``off`` turned off (None: all
    on), in this process."""
    import importlib

    from icecheck.engines.explicit import Bounds, search
    if off is not None:
        module, name = LEVERS[off]
        setattr(importlib.import_module(module), name, False)
    cfg = config_of(subject)
    depth = max_depth if subject.startswith("realistic:") else None
    cpu = time.process_time()
    r = search(cfg, engine="bfs", traces=False, bounds=Bounds(max_depth=depth))
    return {"subject": subject, "off": off, "max_depth": depth, "states": r.states,
            "transitions": r.transitions, "final_states": r.final_states,
            "complete": r.complete, "stopped": r.stopped, "depth": r.max_depth,
            "cpu_seconds": round(time.process_time() - cpu, 2),
            "violations": {p: v.depth for p, v in sorted(r.violations.items())},
            "allowed": {p: v.depth for p, v in sorted(r.allowed.items())},
            "outcomes": len(r.outcomes),
            "outcomes_digest": hashlib.sha256(repr(sorted(r.outcomes)).encode()).hexdigest()[:16],
            "events": sorted(r.reached)}


def measure_in_subprocess(subject: str, off: str | None, max_depth: int | None) -> dict:
    """``measure`` in a fresh Python process on the Python source."""
    from benchmarks.run import fresh_process
    return fresh_process("benchmarks.reductions",
                         {"subject": subject, "off": off, "max_depth": max_depth})


SAME = ("violations", "allowed", "outcomes_digest", "events")


def compare(on: dict, off: dict) -> dict:
    """What turning a lever off changed: the counts on both sides, and which of the verdicts,
    shortest lengths, outcomes and events are the same (``same``: all of them)."""
    differ = [k for k in SAME if on[k] != off[k]]
    return {"states": [off["states"], on["states"]],
            "transitions": [off["transitions"], on["transitions"]],
            "final_states": [off["final_states"], on["final_states"]],
            "cpu_seconds": [off["cpu_seconds"], on["cpu_seconds"]],
            "ratio": round(on["states"] / off["states"], 4) if off["states"] else None,
            "same": not differ, "differ": differ}


def bench(names: list[str], max_depth: int, log, levers=tuple(LEVERS)) -> dict:
    rows = []
    for subject in names:
        log(f"[reductions] {subject}: all reductions on ...")
        on = measure_in_subprocess(subject, None, max_depth)
        row = {"subject": subject, "on": on, "levers": {}}
        for lever in levers:
            log(f"[reductions] {subject}: {lever} off ...")
            off = measure_in_subprocess(subject, lever, max_depth)
            row["levers"][lever] = compare(on, off) | {"off": off}
            c = row["levers"][lever]
            log(f"[reductions] {subject}: {lever}: {c['states'][0]:,} -> {c['states'][1]:,} "
                f"states, {'same' if c['same'] else 'DIFFERENT: ' + ', '.join(c['differ'])}")
        rows.append(row)
    return {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "cores": os.cpu_count(),
            "max_depth": max_depth, "levers": list(levers), "subjects": rows}


def kept(doc: dict, old: dict) -> dict:
    """``doc`` with the rows of the levers it did not run kept from ``old`` (``--keep``), for
    the subjects both have; each lever's rows say which run they come from (``runs``)."""
    by_subject = {row["subject"]: row for row in old.get("subjects", [])}
    runs = dict(old.get("runs") or {lever: old["date"] for lever in old.get("levers", [])})
    levers = [x for x in old.get("levers", []) if x not in doc["levers"]] + doc["levers"]
    for lever in doc["levers"]:
        runs[lever] = doc["date"]
    rows = []
    for row in doc["subjects"]:
        prev = by_subject.get(row["subject"])
        if prev is not None:
            row["levers"] = {**{k: v for k, v in prev["levers"].items()
                                if k not in row["levers"]}, **row["levers"]}
        rows.append(row)
    return {**doc, "levers": [x for x in levers if all(x in r["levers"] for r in rows)],
            "runs": runs, "subjects": rows}


def markdown(doc: dict) -> str:
    L = ["# What each reduction saves", "",
         f"Generated by `bin/benchmark reductions` ({doc['date']}). Each subject searched "
         "(BFS, writer symmetry and partial-order reduction on, traces off) with every "
         "reduction on, and again with one of them off, each in a fresh process; the "
         "realistic pipelines through the first "
         f"{doc['max_depth']} BFS levels on both sides, every other subject to the end. Same: "
         "the violated and allowed properties with their shortest counterexample lengths, "
         "the final outcomes and the \"sometimes\" events are all equal.", ""]
    titles = {"doomed_swaps": "Doomed swaps explored alone (engines/por.py)",
              "failed_records": "Most of a failed operation's record left out of fingerprints "
                                "(engines/symmetry.py)",
              "lost_attempts": "What attempts that lost their race wrote left out of "
                               "fingerprints (engines/symmetry.py)",
              "lost_races": "How many races a writer lost left out of fingerprints where it "
                            "can no longer matter (engines/symmetry.py, models/system.py)",
              "loss_counts": "A finished operation's attempts beyond the second left out of "
                             "fingerprints (engines/symmetry.py)"}
    runs = doc.get("runs") or {}
    for lever in doc["levers"]:
        L += [f"## {titles.get(lever, lever)}", ""]
        if runs.get(lever, doc["date"]) != doc["date"]:
            L += [f"(The run of {runs[lever]}, kept: `--keep`; its \"on\" side had the levers "
                  "of that day.)", ""]
        L += [
              "| subject | states off -> on | ratio | transitions off -> on | final states "
              "off -> on | CPU s off -> on | same? |", "|---|---|---|---|---|---|---|"]
        for row in doc["subjects"]:
            c = row["levers"][lever]
            cut = (f" (through depth {row['on']['max_depth']})" if row["on"]["max_depth"]
                   else "" if row["on"]["complete"] else f" (cut: {row['on']['stopped']})")
            L.append(f"| {row['subject']}{cut} | {c['states'][0]:,} -> {c['states'][1]:,} | "
                     f"{c['ratio']} | {c['transitions'][0]:,} -> {c['transitions'][1]:,} | "
                     f"{c['final_states'][0]:,} -> {c['final_states'][1]:,} | "
                     f"{c['cpu_seconds'][0]} -> {c['cpu_seconds'][1]} | "
                     + ("yes" if c["same"] else "**no**: " + ", ".join(c["differ"])) + " |")
        L.append("")
    return "\n".join(L)


def main(argv=None) -> int:
    from benchmarks.run import names_of, rendered_only, report_options, write_pair
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--subjects", default=",".join(GROUPS), metavar="GROUP|NAME,...",
                    help=f"groups ({', '.join(GROUPS)}) or subjects (group:id) to run")
    ap.add_argument("--max-depth", type=int, default=MAX_DEPTH, metavar="N",
                    help="BFS levels of each realistic pipeline's searches")
    ap.add_argument("--levers", default=",".join(LEVERS), metavar="L,...",
                    help=f"the levers to turn off in turn ({', '.join(LEVERS)})")
    ap.add_argument("--keep", action="store_true",
                    help="keep the other levers' rows of the reductions.json in --out")
    report_options(ap, "reductions", os.path.join(ROOT, "reports"))
    ap.add_argument("--measure", help=argparse.SUPPRESS)   # internal: one search, JSON out
    a = ap.parse_args(argv)
    if a.measure:
        m = json.loads(a.measure)
        print(json.dumps(measure(m["subject"], m["off"], m["max_depth"])))
        return 0
    if rendered_only(a, "reductions", markdown):
        return 0
    names = []
    for item in (x.strip() for x in a.subjects.split(",") if x.strip()):
        names += subjects([item]) if item in GROUPS else [item]
    for name in names:
        try:
            config_of(name)
        except ValueError as e:
            print(f"--subjects: {e}", file=sys.stderr)
            return 2
    levers = names_of(a.levers, LEVERS, "--levers", "lever")
    if levers is None:
        return 2
    old = None
    if a.keep:
        try:
            with open(os.path.join(a.out, "reductions.json")) as f:
                old = json.load(f)
        except (OSError, ValueError):
            old = None
    doc = bench(names, a.max_depth, lambda m: print(m, file=sys.stderr, flush=True), levers)
    if old is not None:
        doc = kept(doc, old)
    print(write_pair(a.out, "reductions", doc, markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
