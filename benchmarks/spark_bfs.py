"""Distributed BFS speedup (issue 13): ``engines.spark_bfs.spark_search`` on ``local[1]`` and
``local[2]`` on the same configuration, beside the local one-process BFS, with identical state
counts checked. Writes reports/spark-bfs.{json,md} together (atomic), figures as ratios of runs
in this same benchmark (a busy machine moves them all).

    python -m benchmarks.spark_bfs [--profile P --writers W --ops O --mix a,b --retries R]
"""

from __future__ import annotations

import argparse
import json
import os
import time

from icecheck.engines.config import mix_config
from icecheck.engines.explicit import search, with_retries
from icecheck.engines.spark_bfs import spark_search
from icecheck.traces.format import write_together


def run(cfg, masters: list[str]) -> dict:
    from icecheck.sweep.distributed import spark_session

    t = time.monotonic()
    local = search(cfg, engine="bfs", workers=1, traces=False)
    rows = [{"engine": "bfs (1 process)", "states": local.states,
             "seconds": round(time.monotonic() - t, 2)}]
    for m in masters:
        spark = spark_session(m, app="icecheck-bench-spark-bfs")
        try:
            t = time.monotonic()
            r = spark_search(cfg, spark=spark, traces=False)
            rows.append({"engine": f"spark-bfs {m}", "states": r.states,
                         "seconds": round(time.monotonic() - t, 2)})
        finally:
            spark.stop()
        if (r.states, sorted(r.violations)) != (local.states, sorted(local.violations)):
            raise SystemExit(f"spark-bfs {m} disagrees with bfs: {r.states} vs {local.states}")
    base = rows[1]["seconds"]
    for row in rows:
        row["states_per_s"] = round(row["states"] / row["seconds"], 1) if row["seconds"] else 0
        row["speedup_vs_local1"] = round(base / row["seconds"], 2) if row["seconds"] else 0
    return {"config": cfg.name, "cores": os.cpu_count(),
            "load_average": os.getloadavg()[0], "rows": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="spark-3.5-mor-snapshot")
    ap.add_argument("--writers", type=int, default=3)
    ap.add_argument("--ops", type=int, default=1)
    ap.add_argument("--mix", default="delete,update")
    ap.add_argument("--retries", type=int, default=1)
    ap.add_argument("--out", default="reports")
    a = ap.parse_args(argv)
    cfg = with_retries(mix_config(a.profile, a.writers, a.ops, tuple(a.mix.split(",")), 1),
                       a.retries)
    doc = run(cfg, ["local[1]", "local[2]"])
    md = [f"# spark-bfs speedup: {doc['config']}", "",
          f"{doc['cores']} cores, load average {doc['load_average']:.1f} at the end.", "",
          "| engine | states | seconds | states/s | speedup vs spark-bfs local[1] |",
          "|---|---:|---:|---:|---:|"]
    md += [f"| {r['engine']} | {r['states']:,} | {r['seconds']} | {r['states_per_s']} | "
           f"{r['speedup_vs_local1']} |" for r in doc["rows"]]
    os.makedirs(a.out, exist_ok=True)
    write_together({os.path.join(a.out, "spark-bfs.json"): json.dumps(doc, indent=2),
                    os.path.join(a.out, "spark-bfs.md"): "\n".join(md) + "\n"})
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
