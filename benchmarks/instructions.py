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
mor-serializable-3w2op-delete). Prints one line per tree; writes nothing. Needs valgrind
(Debian package ``valgrind``): without it, says so and exits 2.
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
from icecheck.engines.explicit import search
entry = json.loads(sys.argv[1])
cfg = _cfg(entry, entry["profile"])
warm_up(cfg)
if sys.argv[2] == "1":
    r = search(cfg, engine="bfs", workers=1, traces=False)
    print(json.dumps({"states": r.states, "violations": sorted(r.violations)}))
"""


def _entry(config_id: str) -> dict:
    with open(os.path.join(ROOT, "benchmarks", "configs.yaml")) as f:
        doc = yaml.safe_load(f)
    for e in doc.get("others", []) + doc.get("compare", []):
        if e["id"] == config_id:
            return e
    raise SystemExit(f"benchmarks.instructions: no configuration {config_id!r} in "
                     f"benchmarks/configs.yaml (others, compare)")


def _count(tree: str, pythonpath: str, entry: dict, run: bool) -> tuple[int, str]:
    env = dict(os.environ, PYTHONPATH=pythonpath, PYTHONHASHSEED="0")
    p = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                        "--cachegrind-out-file=/dev/null", sys.executable, "-c", CHILD,
                        json.dumps(entry), "1" if run else "0"],
                       cwd=tree, env=env, capture_output=True, text=True)
    m = re.search(r"I\s+refs:\s+([\d,]+)", p.stderr)
    if p.returncode or not m:
        raise SystemExit(f"benchmarks.instructions: the measured process failed in {tree}:\n"
                         + p.stderr[-2000:])
    return int(m.group(1).replace(",", "")), p.stdout.strip()


def measure(tree: str, pythonpath: str, entry: dict) -> dict:
    full, out = _count(tree, pythonpath, entry, True)
    base, _ = _count(tree, pythonpath, entry, False)
    return {"instructions": full - base, **json.loads(out.splitlines()[-1])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.instructions",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--rev", help="also measure the code of this commit")
    ap.add_argument("--config", default="mor-serializable-3w2op-delete",
                    help="a configuration id of benchmarks/configs.yaml")
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("benchmarks.instructions: valgrind is not installed (apt-get install valgrind)",
              file=sys.stderr)
        return 2
    entry = _entry(args.config)
    rows = []
    if args.rev:
        from benchmarks.run import _tree_of
        tmp = tempfile.mkdtemp(prefix="icecheck-instr-")
        try:
            pkg = _tree_of(args.rev, tmp)
            # the old tree as the icecheck package, this tree's benchmarks/ (the child's driver);
            # run from the temporary folder, so that this tree's folders do not come first
            rows.append((args.rev, measure(tmp, os.pathsep.join([pkg, ROOT]), entry)))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    rows.append(("this tree", measure(ROOT, ROOT, entry)))
    for name, r in rows:
        print(f"{args.config} [{name}]: {r['instructions'] / 1e9:.2f} G instructions, "
              f"{r['states']:,} states, violations {r['violations']}")
    if len(rows) == 2:
        print(f"ratio (before / after): {rows[0][1]['instructions'] / rows[1][1]['instructions']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
