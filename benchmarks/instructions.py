"""Instructions one exhaustive search executes: ``python -m benchmarks.instructions [--rev REV]
[--config ID]``.

CPU seconds on a shared 2-core machine swing by 2x from one minute to the next (the baseline
ratio of ``benchmarks/run.py`` absorbs most of it, not all), which hides a 5% change. The
number of instructions a search executes does not swing: valgrind's cachegrind counts them
(``--cache-sim=no``; about 20x slower than the search itself). The figure is the count of a
process that imports, warms up and runs the search, minus the count of one that only imports
and warms up, so it is the search's own.

``--rev REV`` measures the code of commit REV too (extracted with ``git archive``, as
``benchmarks.run --compare`` does) and prints both and their ratio. ``--config`` names a
configuration of benchmarks/configs.yaml (``others`` or ``compare``; default
mor-serializable-3w2op-delete), or ``canonical:PROFILE``, the canonical configuration on that
profile, searched up to ``--max-states`` (default 40,000; the search stops at the end of the
last level within it). ``--warm`` counts, instead of the search, one more expansion of the
search's last level with every memo warm (the successors of each of its states: the
instructions of a second expansion minus a process that makes only the first), the work that
dominates a search at full scale, where most steps hit the memos. With ``ICECHECK_COMPILED=1``
in the environment, the compiled build is measured. Prints one line per tree; writes nothing.
Needs valgrind (Debian package ``valgrind``): without it, says so and exits 2.
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

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: what the measured child runs: the search of a configuration (JSON on argv), or only the
#: imports and warm-up when the second argument is "0"
CHILD = """
import json, sys
from benchmarks.run import _cfg, warm_up
from icecheck.engines.explicit import Bounds, search
entry = json.loads(sys.argv[1])
cfg = _cfg(entry, entry["profile"])
warm_up(cfg)
if sys.argv[2] == "1":
    n = entry.get("max_states")
    r = search(cfg, engine="bfs", workers=1, traces=False,
               bounds=Bounds(max_states=n) if n else Bounds())
    print(json.dumps({"states": r.states, "violations": sorted(r.violations)}))
"""
#: what the child of ``--warm`` runs: the search's levels (as ``_bfs`` runs them, one worker)
#: up to the configuration's max_states, then the last level's successors again, the number
#: of times the second argument says (the first of them is that level's own, cold, expansion)
WARM_CHILD = """
import json, sys
from benchmarks.run import _cfg, warm_up
from icecheck.engines.explicit import Bounds, Expander, few_collections
entry = json.loads(sys.argv[1])
cfg = _cfg(entry, entry["profile"])
warm_up(cfg)
with few_collections():
    ex = Expander(cfg, True, True, Bounds())
    fp0, _ = ex.initial()
    ex.advance([fp0])
    seen, frontier, depth = {fp0}, [(fp0, frozenset())], 0
    while frontier and len(seen) < entry["max_states"]:
        new = {}
        for fp2, _, _, _, p2 in ex.expand(frontier, depth)["edges"]:
            if fp2 not in seen and fp2 not in new:
                new[fp2] = p2
        seen.update(new)
        frontier = sorted(new.items())
        ex.advance([fp for fp, _ in frontier])
        depth += 1
    edges = 0
    for _ in range(int(sys.argv[2])):
        ex.next, ex._next_orders = {}, {}
        for fp, pruned in frontier:
            edges += len(ex.successors(ex.states[fp], pruned, depth, ex.level_stats(),
                                       ex._orders.get(fp), ex._next_orders))
    print(json.dumps({"states": len(frontier), "transitions": edges // int(sys.argv[2]),
                      "violations": []}))
"""


def _entry(config_id: str, max_states: int = 40_000) -> dict:
    with open(os.path.join(ROOT, "benchmarks", "configs.yaml")) as f:
        doc = yaml.safe_load(f)
    if config_id.startswith("canonical:"):
        profile = config_id.split(":", 1)[1]
        can = doc["canonical"]
        if profile not in can["profiles"]:
            raise SystemExit(f"benchmarks.instructions: {profile!r} is not a canonical profile "
                             f"(choose from {', '.join(can['profiles'])})")
        return {k: v for k, v in can.items() if k != "profiles"} | {
            "id": config_id, "profile": profile, "max_states": max_states}
    for e in doc.get("others", []) + doc.get("compare", []):
        if e["id"] == config_id:
            return e
    raise SystemExit(f"benchmarks.instructions: no configuration {config_id!r} in "
                     f"benchmarks/configs.yaml (others, compare, or canonical:PROFILE)")


def _count(tree: str, pythonpath: str, entry: dict, run, script: str = CHILD
           ) -> tuple[int, str]:
    env = dict(os.environ, PYTHONPATH=pythonpath, PYTHONHASHSEED="0")
    p = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                        "--cachegrind-out-file=/dev/null", sys.executable, "-c", script,
                        json.dumps(entry), str(int(run))],
                       cwd=tree, env=env, capture_output=True, text=True)
    m = re.search(r"I\s+refs:\s+([\d,]+)", p.stderr)
    if p.returncode or not m:
        raise SystemExit(f"benchmarks.instructions: the measured process failed in {tree}:\n"
                         + p.stderr[-2000:])
    return int(m.group(1).replace(",", "")), p.stdout.strip()


def measure(tree: str, pythonpath: str, entry: dict, warm: bool = False) -> dict:
    if warm:        # a second expansion of the last level, minus the first
        full, out = _count(tree, pythonpath, entry, 2, WARM_CHILD)
        base, _ = _count(tree, pythonpath, entry, 1, WARM_CHILD)
    else:
        full, out = _count(tree, pythonpath, entry, True)
        base, _ = _count(tree, pythonpath, entry, False)
    return {"instructions": full - base, **json.loads(out.splitlines()[-1])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.instructions",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--rev", help="also measure the code of this commit")
    ap.add_argument("--config", default="mor-serializable-3w2op-delete",
                    help="a configuration id of benchmarks/configs.yaml, or canonical:PROFILE")
    ap.add_argument("--max-states", type=int, default=40_000,
                    help="canonical:PROFILE and --warm: search up to this many states")
    ap.add_argument("--warm", action="store_true",
                    help="count one more expansion of the search's last level, memos warm")
    args = ap.parse_args(argv)
    if args.max_states < 1:
        ap.error("--max-states: at least 1")
    if shutil.which("valgrind") is None:
        print("benchmarks.instructions: valgrind is not installed (apt-get install valgrind)",
              file=sys.stderr)
        return 2
    entry = _entry(args.config, args.max_states)
    if args.warm:
        entry.setdefault("max_states", args.max_states)
    rows = []
    if args.rev:
        from benchmarks.run import _tree_of
        tmp = tempfile.mkdtemp(prefix="icecheck-instr-")
        try:
            pkg = _tree_of(args.rev, tmp)
            # the old tree as the icecheck package, this tree's benchmarks/ (the child's driver);
            # run from the temporary folder, so that this tree's folders do not come first
            rows.append((args.rev, measure(tmp, os.pathsep.join([pkg, ROOT]), entry,
                                           args.warm)))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    rows.append(("this tree", measure(ROOT, ROOT, entry, args.warm)))
    for name, r in rows:
        what = (f"warm expansion of a level of {r['states']:,} states "
                f"({r['transitions']:,} transitions)" if args.warm
                else f"{r['states']:,} states, violations {r['violations']}")
        print(f"{args.config} [{name}]: {r['instructions'] / 1e9:.3f} G instructions, {what}")
    if len(rows) == 2:
        print(f"ratio (before / after): {rows[0][1]['instructions'] / rows[1][1]['instructions']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
