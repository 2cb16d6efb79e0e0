"""What typed model classes could give at most (issue 44, item 4): ``bin/benchmark
object-overhead [--configs ID,...] [--max-states N] [--out DIR]``.

Item 4 asks for the canonical configurations at 0.10 of the two-phase-commit baseline per core
"through the typed-classes route ..., if it pays": the model's value classes (writer, state,
metadata, snapshot) as Cython extension types in the compiled build. What such a class turns
into C is three kinds of CPython work: reading an attribute through the generic lookup
(``PyObject_GenericGetAttr``), building an object (``type_call``) and freeing it
(``_Py_Dealloc``). This benchmark counts, with valgrind's callgrind, the instructions the
compiled build's search spends inside each of the three, inclusive (with what they call), as
a share of the search's own instructions: a process that imports, warms up and searches,
minus one that only imports and warms up (``benchmarks.instructions`` counts the same way).

If typed classes removed all three, the search would run ``1 / (1 - share)`` times faster.
That is a bound, not an estimate: typed objects are still built and freed (a typed read of a
field does not call the generic lookup, and a typed object has no instance dict to free, but
the rest remains); the lookups include those of modules, classes and methods, which no typed
class removes; and the three may overlap (a constructor that reads attributes is counted
twice). The bound times the compiled build's ratio in ``reports/benchmarks.json`` (section
"compiled", the same configuration) is the most the route could bring that configuration to.

Counts, not times: the same on any machine, loaded or not. By default each configuration is
searched whole, as its ratio was measured; callgrind runs a search about 50 times slower than
it runs natively (canonical-mor-snapshot, 558,796 states: about 40 minutes), so ``--configs``
runs some and ``--keep`` keeps the other configurations' rows of the report in ``--out``.
``--max-states N`` searches only up to N states (the BFS stops at the end of the level within
it): the first levels, where the share is smaller (canonical-mor-snapshot: 36.9% up to 38,466
states, 45.3% searched whole), so a bounded row is no bound for the whole search. Needs
valgrind and the compiled build (``bin/icecheck compile``). Writes
``reports/object-overhead.{json,md}`` together (atomic).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: the CPython functions typed classes would take work from: (key, function, what it is)
FUNCTIONS = (("lookup", "PyObject_GenericGetAttr", "generic attribute lookup"),
             ("construction", "type_call", "object construction"),
             ("deallocation", "_Py_Dealloc", "deallocation"))
#: the canonical profiles, searched by default
CANONICAL = ("spark-3.5-mor-serializable", "spark-3.5-mor-snapshot",
             "spark-3.5-cow-serializable", "spark-3.5-cow-snapshot")
TARGET = 0.10

_LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)$")


def inclusive_counts(annotated: str) -> dict:
    """From ``callgrind_annotate --inclusive=yes`` output: the program's total and, for each
    function of ``FUNCTIONS``, its outermost inclusive count (callgrind names a recursive
    call's levels ``f'2``, ``f'3``: each of those is inside the outermost, counted once)."""
    got = {"total": None}
    names = {fn: key for key, fn, _ in FUNCTIONS}
    for line in annotated.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        count, what = int(m.group(1).replace(",", "")), m.group(2)
        if what.startswith("PROGRAM TOTALS"):
            got["total"] = count
            continue
        # "/path/Objects/object.c:_Py_Dealloc [/lib/libpython3.11.so]", or without the file
        fn = what.split(" [", 1)[0].rsplit(":", 1)[-1].strip()
        key = names.get(fn)
        if key is not None and key not in got:
            got[key] = count
    if got["total"] is None:
        raise ValueError("callgrind_annotate printed no PROGRAM TOTALS line")
    for key, _, _ in FUNCTIONS:
        got.setdefault(key, 0)
    return got


def shares(full: dict, base: dict) -> dict:
    """Each function's share of the search's own instructions (``full`` minus ``base``), the
    sum and the bound ``1 / (1 - sum)``."""
    own = full["total"] - base["total"]
    if own <= 0:
        raise ValueError("the search executed no instructions of its own")
    out = {"instructions": own}
    total = 0.0
    for key, _, _ in FUNCTIONS:
        s = max(0, full[key] - base[key]) / own
        out[key] = round(s, 4)
        total += s
    out["sum"] = round(total, 4)
    out["at_most"] = round(1 / (1 - total), 3) if total < 1 else None
    return out


def _id(profile: str) -> str:
    """A canonical profile's configuration id, as reports/benchmarks.json names it."""
    return "canonical-" + profile.replace("spark-3.5-", "")


def _entry(profile: str, max_states: int) -> dict:
    from benchmarks.instructions import _entry as entry_of
    return entry_of(f"canonical:{profile}", max_states)


def _callgrind(entry: dict, run: bool, tmp: str) -> tuple[dict, str]:
    from benchmarks.instructions import CHILD
    out = os.path.join(tmp, f"callgrind.{int(run)}")
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONHASHSEED="0", ICECHECK_COMPILED="1")
    p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        sys.executable, "-c", CHILD, json.dumps(entry), str(int(run))],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("the measured process failed:\n" + p.stderr[-2000:])
    a = subprocess.run(["callgrind_annotate", "--inclusive=yes", out],
                       capture_output=True, text=True)
    if a.returncode:
        raise RuntimeError("callgrind_annotate failed:\n" + a.stderr[-2000:])
    return inclusive_counts(a.stdout), p.stdout.strip()


def measure(profile: str, max_states: int, log=print) -> dict:
    entry = _entry(profile, max_states)
    tmp = tempfile.mkdtemp(prefix="icecheck-overhead-")
    try:
        log(f"[object-overhead] {profile}: the "
            + (f"search up to {max_states:,} states" if max_states else "whole search")
            + " under callgrind (about 50 times its native time) ...")
        full, out = _callgrind(entry, True, tmp)
        log(f"[object-overhead] {profile}: the warm-up alone ...")
        base, _ = _callgrind(entry, False, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    got = json.loads(out.splitlines()[-1])
    return {"id": _id(profile), "profile": profile,
            "max_states": max_states, "states": got["states"],
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "violations": got["violations"], **shares(full, base)}


def compiled_ratios(path: str) -> dict:
    """Each configuration's best compiled ratio in reports/benchmarks.json (its "compiled"
    section), by id; {} when the file or the section is missing."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    out = {}
    for row in ((doc.get("compiled") or {}).get("configs") or []):
        ratio = (row.get("compiled") or {}).get("ratio")
        if ratio is not None:
            out[row["id"]] = {"ratio": ratio}
    return out


def with_ratios(rows: list[dict], ratios: dict) -> list[dict]:
    """Each row with its compiled ratio, the most the route could bring it to, and whether
    that reaches the target."""
    out = []
    for r in rows:
        got = ratios.get(r["id"])
        r = dict(r)
        if got is not None and r.get("at_most"):
            r["compiled_ratio"] = got["ratio"]
            r["ratio_at_most"] = round(got["ratio"] * r["at_most"], 4)
            r["reaches_target"] = r["ratio_at_most"] >= TARGET
            # 1 / (1 - x * sum) = TARGET / ratio: the part x of the three to remove
            r["must_remove"] = round(max(0.0, 1 - got["ratio"] / TARGET) / r["sum"], 3)
        out.append(r)
    return out


def kept(rows: list[dict], path: str) -> list[dict]:
    """``rows`` and the rows of the report at ``path`` (if any) of the configurations not in
    ``rows``, in the canonical profiles' order (``--keep``: a configuration at a time)."""
    try:
        with open(path) as f:
            old = json.load(f).get("rows", [])
    except (OSError, ValueError):
        old = []
    ids = {r["id"] for r in rows}
    order = [_id(p) for p in CANONICAL]
    return sorted(rows + [r for r in old if r["id"] not in ids],
                  key=lambda r: order.index(r["id"]) if r["id"] in order else len(order))


def markdown(doc: dict) -> str:
    lines = ["# What typed model classes could give at most", "",
             f"Generated by `bin/benchmark object-overhead` on {doc['machine']} "
             f"({doc['python']}, {doc['date']}); see benchmarks/object_overhead.py.", "",
             "Instructions of the compiled build's search (callgrind; the search minus a "
             "process that only imports and warms up), each canonical configuration searched "
             "whole, or up to the bound its row gives (its first BFS levels, where the share "
             "is smaller: no bound for the whole search). Share: the instructions spent inside "
             "each CPython function, with what it calls. **At most**: the speedup if typed "
             "classes removed all three (they do not: objects are still built and freed, and "
             "the lookups include those of modules, classes and methods). Compiled ratio: "
             f"the configuration's in reports/benchmarks.json (section \"compiled\"); the "
             f"next column is the most the route could bring it to, against the target "
             f"{TARGET}; **must remove**: the part of the three that typed classes would have "
             f"to remove to reach it.", "",
             "| configuration | states | instructions | attribute lookup | construction | "
             "deallocation | all three | at most | compiled ratio | at most x ratio | "
             "must remove | run |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in doc["rows"]:
        ratio = r.get("compiled_ratio")
        reach = ("-" if ratio is None else
                 f"{r['ratio_at_most']} ({'reaches' if r['reaches_target'] else 'below'} "
                 f"{TARGET})")
        lines.append(
            f"| {r['id']} | {r['states']:,}"
            f"{f' (bound {b:,})' if (b := r.get('max_states')) else ' (whole search)'} | "
            f"{r['instructions'] / 1e9:.2f} G | {r['lookup']:.1%} | {r['construction']:.1%} | "
            f"{r['deallocation']:.1%} | {r['sum']:.1%} | {r['at_most']}x | "
            f"{'-' if ratio is None else ratio} | {reach} | "
            f"{'-' if r.get('must_remove') is None else format(r['must_remove'], '.0%')} | "
            f"{r.get('date', '-')} |")
    below = [r["id"] for r in doc["rows"] if r.get("reaches_target") is False]
    if below:
        lines += ["", f"Below the target even at the bound: {', '.join(below)}. On these, "
                  "typed classes cannot bring the compiled build to "
                  f"{TARGET} of the baseline, whatever else they remove (of a row with a "
                  "bound, in the levels it searched: deeper, the share grows)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    from benchmarks.run import names_of, rendered_only, report_options, write_pair
    ap = argparse.ArgumentParser(prog="bin/benchmark object-overhead",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", default=",".join(CANONICAL), metavar="PROFILE,...",
                    help="canonical profiles to measure")
    ap.add_argument("--max-states", type=int, default=0, metavar="N",
                    help="search each configuration up to this many states (default: whole)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the rows of object-overhead.json in --out of the configurations "
                         "not run now")
    report_options(ap, "object-overhead", os.path.join(ROOT, "reports"))
    a = ap.parse_args(argv)
    if rendered_only(a, "object-overhead", markdown):
        return 0
    profiles = names_of(a.configs, CANONICAL, "--configs", "canonical profile")
    if profiles is None:
        return 2
    if a.max_states < 0:
        print("--max-states: at least 0 (0: the whole search)", file=sys.stderr)
        return 2
    for tool in ("valgrind", "callgrind_annotate"):
        if shutil.which(tool) is None:
            print(f"bin/benchmark object-overhead: {tool} is not installed "
                  f"(Debian package valgrind)", file=sys.stderr)
            return 2
    from icecheck.compiled import CompiledError, check
    try:
        check()
    except CompiledError as e:
        print(f"bin/benchmark object-overhead: the compiled build: {e}", file=sys.stderr)
        return 2
    import platform
    log = lambda m: print(m, file=sys.stderr, flush=True)   # noqa: E731
    rows = [measure(p, a.max_states, log) for p in profiles]
    if a.keep:
        rows = kept(rows, os.path.join(a.out, "object-overhead.json"))
    doc = {"machine": platform.node(), "python": f"Python {platform.python_version()}",
           "date": time.strftime("%Y-%m-%d %H:%M:%S"), "target": TARGET,
           "rows": with_ratios(rows, compiled_ratios(os.path.join(ROOT, "reports",
                                                                  "benchmarks.json")))}
    print(write_pair(a.out, "object-overhead", doc, markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
