"""Random differential mode for the mixed target: random two-engine scenarios, each run on the
model and on ONE real table written by real Spark and real PyIceberg (``mixed_target``).

``mixed_scenario_docs()`` is a Hypothesis strategy for scenario documents
(docs/scenario-format.md) of the shape real pipelines have: a table ``(id int, v string)``
holding a bystander row and key 1 in one file, a Spark writer and a PyIceberg writer
(``writer_profiles``; which of w1/w2 is Spark is drawn) on a pair of profiles with one isolation
level (one table has one ``write.*.isolation-level``), format v2 (PyIceberg 0.12 cannot write
v3), each running one command from INSERT,
DELETE, UPDATE and MERGE on key 1 or 2 (present or absent), in a drawn begin/commit order.
Every document goes through the real scenario parser, so a drawn scenario is a YAML file you
can run (``icecheck conform --target mixed FILE``).

``run_mixed_differential(n, seed)`` compares ``n`` drawn scenarios (Hypothesis, generate phase
only, seeded: the same seed draws the same scenarios) and saves each disagreeing one, whole, as
``reports/conformance/mixed-disagreement-<k>.yaml``. Unlike the Java differential it does not
shrink: a drawn scenario has two writers and one command each already, and every real run costs
seconds of Spark.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hyp_seed
from hypothesis import strategies as st

from .compare import AGREE, ALLOWED, DISAGREE, ERROR, SKIPPED, Comparison
from .differential import doc_yaml, parse_doc, write_atomic
from .spark_target import NotExpressible

# (Spark profile, PyIceberg profile): one isolation level per pair
PAIRS = (("spark-3.5-cow-serializable", "pyiceberg-0.12-serializable"),
         ("spark-3.5-mor-serializable", "pyiceberg-0.12-serializable"),
         ("spark-3.5-cow-snapshot", "pyiceberg-0.12-snapshot"),
         ("spark-3.5-mor-snapshot", "pyiceberg-0.12-snapshot"))
KINDS = ("INSERT", "DELETE", "UPDATE", "MERGE")
# the orders of two writers' begin (b) and commit (c) steps
ORDERS = (("b1", "c1", "b2", "c2"), ("b1", "b2", "c1", "c2"), ("b1", "b2", "c2", "c1"))


def _command(kind: str, key: int, tag: str) -> dict:
    if kind == "INSERT":
        return {"sql": "INSERT", "rows": [[key, tag]]}
    if kind == "DELETE":
        return {"sql": "DELETE", "where": f"id = {key}"}
    if kind == "UPDATE":
        return {"sql": "UPDATE", "where": f"id = {key}", "set": {"v": tag}}
    return {"sql": "MERGE", "on": ["id"], "rows": [[key, tag]]}


@st.composite
def mixed_scenario_docs(draw) -> dict:
    spark, py = draw(st.sampled_from(PAIRS))
    spark_writer = draw(st.sampled_from(("w1", "w2")))
    profiles = {spark_writer: spark, ("w2" if spark_writer == "w1" else "w1"): py}
    commands = {w: _command(draw(st.sampled_from(KINDS)), draw(st.sampled_from((1, 2))),
                            f"{w}-{'spark' if p == spark else 'py'}")
                for w, p in sorted(profiles.items())}
    order = draw(st.sampled_from(ORDERS))
    first = draw(st.sampled_from(("w1", "w2")))         # who begins first
    name = {"1": first, "2": "w2" if first == "w1" else "w1"}
    steps: list[dict] = [{"commit": {"op": "append", "add": ["d1"]}}]
    for ev in order:
        w = name[ev[1]]
        steps.append({"begin": w, "command": commands[w]} if ev[0] == "b" else {"commit": w})
    return {"version": 1, "id": "random-mixed",
            "description": f"random mixed-engine scenario: {spark_writer} on Spark",
            "profile": profiles["w1"], "writer_profiles": {"w2": profiles["w2"]},
            # format v2 only: PyIceberg 0.12 cannot write v3 ("Writing V3 is not yet supported")
            "table": {"format_version": 2, "schema": {"id": "int", "v": "string"}},
            "files": {"d1": {"rows": [[0, "v0"], [1, "v0"]]}},
            "steps": steps}


@dataclass
class MixedDifferentialResult:
    seed: int
    requested: int
    statuses: Counter = field(default_factory=Counter)
    skip_reasons: Counter = field(default_factory=Counter)
    kinds: Counter = field(default_factory=Counter)       # "INSERT+MERGE" compared
    disagreements: list[tuple[dict, Comparison]] = field(default_factory=list)
    saved: list[str] = field(default_factory=list)
    wall_seconds: float = 0.0
    real_seconds: float = 0.0

    @property
    def compared(self) -> int:
        return sum(n for s, n in self.statuses.items() if s != SKIPPED)

    def as_json(self) -> dict:
        return {"seed": self.seed, "requested": self.requested,
                "statuses": dict(self.statuses), "compared": self.compared,
                "skip_reasons": dict(self.skip_reasons.most_common()),
                "commands_compared": dict(sorted(self.kinds.items())),
                "disagreements": [{"differences": c.differences, "yaml": doc_yaml(d)}
                                  for d, c in self.disagreements],
                "saved": self.saved, "wall_seconds": round(self.wall_seconds, 1),
                "real_seconds": round(self.real_seconds, 1)}


def _kinds(doc: dict) -> str:
    return "+".join(s["command"]["sql"] for s in doc["steps"] if "command" in s)


def run_mixed_differential(n: int, seed: int, *, allowlist=None, save_dir: str | None = None,
                           compare: Callable[[Any], Comparison] | None = None,
                           progress: Callable[[int, Comparison], None] | None = None
                           ) -> MixedDifferentialResult:
    """Draw ``n`` scenarios and compare each on the mixed target (``compare`` replaces the
    target in tests of the strategy)."""
    if compare is None:
        from .mixed_target import compare_scenario

        def compare(scenario):
            return compare_scenario(scenario, allowlist=allowlist, source="random")
    res = MixedDifferentialResult(seed, n)
    t0 = time.perf_counter()
    done = [0]

    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), print_blob=False)
    @given(mixed_scenario_docs())
    def explore(doc):
        scenario = parse_doc(doc, f"random-mixed-{done[0] + 1}")
        try:
            c = compare(scenario)
        except NotExpressible as e:     # e.g. a Spark INSERT has no scan to hold open
            c = Comparison(scenario.id, scenario.path, "random", SKIPPED,
                           f"not expressible on Spark: {e}")
        except Exception as e:  # noqa: BLE001 - the comparison broke: an error, not a crash
            c = Comparison(scenario.id, scenario.path, "random", ERROR,
                           f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        done[0] += 1
        res.statuses[c.status] += 1
        res.real_seconds += c.java_seconds or 0.0
        if c.status == SKIPPED:
            res.skip_reasons[(c.reason or "").split(":")[0][:80]] += 1
        else:
            res.kinds[_kinds(doc)] += 1
        if c.status in (DISAGREE, ERROR):
            res.disagreements.append((doc, c))
            if save_dir:
                path = os.path.join(save_dir, f"mixed-disagreement-{len(res.disagreements)}.yaml")
                header = (f"icecheck conform --target mixed --random (seed {seed}): "
                          f"{'; '.join(c.differences) or c.reason}\n"
                          f"re-run: icecheck conform --target mixed <this file>")
                os.makedirs(save_dir, exist_ok=True)
                write_atomic(path, doc_yaml(doc, header))
                res.saved.append(path)
        if progress:
            progress(done[0], c)

    hyp_seed(seed)(explore)()
    res.wall_seconds = time.perf_counter() - t0
    return res


__all__ = ["mixed_scenario_docs", "run_mixed_differential", "MixedDifferentialResult",
           "AGREE", "ALLOWED"]
