"""benchmarks/audit_history.py: the history it builds, its estimate, and that the audit finds
nothing wrong with it (a clean PyIceberg history of appends, retention deletes, overwrites and
expiries: a finding there would be a false alarm, and would make the benchmark time findings).

The build runs in a subprocess: it switches off two of PyIceberg's costs for itself
(``_fast_pyiceberg``), which must not leak into the other tests' PyIceberg. Bounded by counts
(commits, snapshots), never by time.
"""

import json
import os
import subprocess
import sys
import warnings

import pytest

from benchmarks.audit_history import FULL, QUICK, Progress

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_full_plan_is_ten_thousand_snapshots_and_about_a_hundred_thousand_files():
    kinds = [FULL.kind(i) for i in range(FULL.commits)]
    assert FULL.commits == 10_300 and FULL.commits - 3 * FULL.expire_each == 10_000
    assert kinds.count("delete") == 103 and kinds.count("overwrite") == 309
    appended = kinds.count("append") * FULL.files_per_append
    assert 95_000 <= appended <= 100_000
    assert FULL.expiry_points() == [2575, 5150, 7725]
    assert QUICK.commits == 530


def test_estimate_is_exact_on_a_cost_that_grows_linearly():
    """A commit's cost grows with the history (it rewrites the whole metadata): the estimate
    fits it, where a rate-based one would say half the time."""
    n = 10_000
    bar = Progress("x", n, "commits", growing=True, every=0)
    t = bar.t0
    for i in range(1, 3001):
        t += 0.02 + 4e-6 * i
        if i % 500 == 0:
            bar.marks.append((i, t))
    true = sum(0.02 + 4e-6 * j for j in range(3001, n + 1))
    assert bar.estimate(3000, t) == pytest.approx(true, rel=1e-6)
    flat = Progress("x", n, "commits", every=0)
    flat.t0 = bar.t0
    assert flat.estimate(3000, t) < 0.6 * true


BUILD = """
import json, sys
from benchmarks import audit_history as ah
plan = ah.Plan("t", snapshots=60, files_per_append=2, expire_each=3, partition_every=5,
               delete_every=20, overwrite_every=7, overwrite_files=3)
stop = int(sys.argv[2])
if stop:
    real = ah._one_commit
    def one(plan, table, i):
        if i == stop:
            raise KeyboardInterrupt
        return real(plan, table, i)
    ah._one_commit = one
try:
    info = ah.generate(plan, cache=sys.argv[1])
except KeyboardInterrupt:
    print(json.dumps({"stopped": stop}))
else:
    print(json.dumps(dict(info, folder=plan.folder(sys.argv[1]))))
"""


def _build(cache, stop=0):
    r = subprocess.run([sys.executable, "-c", BUILD, str(cache), str(stop)], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_small_build_resumes_and_audits_clean(tmp_path):
    """Stopped at commit 40 (after the second expiry) and run again, the build resumes there
    without expiring twice; the table has the plan's snapshots, every kind of commit, and
    `icecheck audit` reports nothing on it."""
    pytest.importorskip("pyiceberg.catalog.sql", reason="PyIceberg is not installed")
    from click.testing import CliRunner
    from pyiceberg.catalog.sql import SqlCatalog

    from icecheck.cli.main import main

    assert _build(tmp_path, stop=40) == {"stopped": 40}
    info = _build(tmp_path)
    assert info["resumed_at_commit"] == 40 and info["snapshots"] == 60
    folder = info["folder"]
    warnings.simplefilter("ignore")
    table = SqlCatalog("bench", uri=f"sqlite:///{folder}/cat.db", warehouse=f"file://{folder}/wh",
                       init_catalog_tables="false").load_table("db.events")
    commits = sorted(int(s.summary.additional_properties["icecheck.bench.commit"])
                     for s in table.metadata.snapshots)
    assert commits == list(range(9, 69))               # the 9 oldest expired, 3 at a time
    ops = {s.summary.operation.value for s in table.metadata.snapshots}
    assert ops == {"append", "delete", "overwrite"}
    r = CliRunner().invoke(main, ["audit", "db.events", "--catalog", f"sqlite:///{folder}/cat.db",
                                  "--json", "--check-files", "all"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["findings"] == [] and doc["snapshots"] == 60
    assert doc["stats"]["max_live_sets"] == 1
