"""Random differential mode for the mixed target: random two-engine scenarios, each run on the
model and on ONE real table written by real Spark and real PyIceberg (``mixed_target``).

``mixed_scenario_docs()`` is a Hypothesis strategy for scenario documents
(docs/scenario-format.md) of the shape real pipelines have: a table, drawn from three shapes
(``SHAPES``): unpartitioned ``(id int, v string)`` holding a bystander row and key 1 in one
file, or ``(id int, cat string, v string)`` partitioned by ``identity(cat)`` or
``bucket(2, id)`` with one file per partition; a Spark writer and a PyIceberg writer
(``writer_profiles``; which of w1/w2 is Spark is drawn) on a pair of profiles at one isolation
level or at two (the table gives each command its writer's level: ``mixed_target._settings``),
format v2 (PyIceberg 0.12 cannot write
v3), each running one command from INSERT,
DELETE, UPDATE and MERGE (and for the PyIceberg writer OVERWRITE_FILES, a file-level script)
on a present or an absent key (on a table with ``cat``, a DELETE, UPDATE or OVERWRITE_FILES may
be scoped to a partition: ``cat = 'a' AND id = 1``, or ``cat = 'a'``), in a drawn
begin/commit order.
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

# (Spark profile, PyIceberg profile): one isolation level per pair, then (since session 23,
# when the target began giving each command the level of its own writer's profile:
# mixed_target._settings) the pairs at different levels; a draw whose two commands read one
# property at two levels (a Spark DELETE at snapshot beside a PyIceberg delete at serializable)
# is skipped by the target. Seeds before session 23 drew others.
PAIRS = (("spark-3.5-cow-serializable", "pyiceberg-0.12-serializable"),
         ("spark-3.5-mor-serializable", "pyiceberg-0.12-serializable"),
         ("spark-3.5-cow-snapshot", "pyiceberg-0.12-snapshot"),
         ("spark-3.5-mor-snapshot", "pyiceberg-0.12-snapshot"),
         ("spark-3.5-cow-snapshot", "pyiceberg-0.12-serializable"),
         ("spark-3.5-mor-snapshot", "pyiceberg-0.12-serializable"),
         ("spark-3.5-cow-serializable", "pyiceberg-0.12-snapshot"),
         ("spark-3.5-mor-serializable", "pyiceberg-0.12-snapshot"))
KINDS = ("INSERT", "DELETE", "UPDATE", "MERGE")
# the PyIceberg writer may also run a script on the file-level API (OVERWRITE_FILES: the files
# holding the matching rows swapped for copies with them updated); drawn since session 18, so
# a seed before that drew other scenarios
PY_KINDS = KINDS + ("OVERWRITE_FILES",)
# the orders of two writers' begin (b) and commit (c) steps
ORDERS = (("b1", "c1", "b2", "c2"), ("b1", "b2", "c1", "c2"), ("b1", "b2", "c2", "c1"))
# a third writer (w3, on the Spark profile), drawn since session 19: none, or a Spark INSERT or
# expire_snapshots (retain_last 1) committed whole at a drawn point of the two writers'
# timeline. A commit in between is what a writer's retry sees: the PyIceberg file-level
# overwrite finding needs one after the Spark DELETE, and a PyIceberg retry after an expiry
# resolves its window first (docs/conformance-mixed.md). Seeds before session 19 drew others.
THIRD = (None, "INSERT", "EXPIRE")


@dataclass(frozen=True)
class Shape:
    """A table shape: its schema, partition spec and set-up files (one per partition), and the
    keys commands target, each with the ``cat`` its row has (None: the table has no ``cat``)."""
    name: str
    schema: dict
    spec: tuple
    files: dict
    keys: dict          # key -> cat of its row; present keys are in ``files``, others absent

    @property
    def has_cat(self) -> bool:
        return "cat" in self.schema


# unpartitioned: the first shape, as before (a bystander row 0 and key 1 in one file)
UNPARTITIONED = Shape("unpartitioned", {"id": "int", "v": "string"}, (),
                      {"d1": [[0, "v0"], [1, "v0"]]}, {1: None, 2: None})
# identity(cat): partition a holds 0 and key 1, partition b holds 3 and 4; key 2 is absent
# (its rows go to partition a or b, drawn)
IDENTITY = Shape("identity", {"id": "int", "cat": "string", "v": "string"}, ("identity(cat)",),
                 {"d1": [[0, "a", "v0"], [1, "a", "v0"]], "d2": [[3, "b", "v0"], [4, "b", "v0"]]},
                 {1: "a", 3: "b", 2: None})
# bucket(2, id) (Iceberg's murmur3 bucket: 0, 1, 2, 4 -> 0; 3, 5 -> 1): bucket 0 holds 0 and
# key 1, bucket 1 holds 3 and 5, so its bounds [3, 5] span the absent key 4 of bucket 0 (what
# PyIceberg's metrics-only conflict filter sees); key 2 is absent and outside every file's bounds
BUCKET = Shape("bucket", {"id": "int", "cat": "string", "v": "string"}, ("bucket(2, id)",),
               {"d1": [[0, "a", "v0"], [1, "a", "v0"]], "d2": [[3, "b", "v0"], [5, "b", "v0"]]},
               {1: "a", 3: "b", 2: "a", 4: "a"})
SHAPES = (UNPARTITIONED, IDENTITY, BUCKET)


def _row(shape: Shape, key: int, cat: str | None, tag: str) -> list:
    return [key, cat, tag] if shape.has_cat else [key, tag]


def _where(draw, shape: Shape, key: int, cat: str | None) -> str:
    """``id = key``, or (tables with ``cat``) scoped to the key's cat, or the whole cat."""
    if not shape.has_cat:
        return f"id = {key}"
    form = draw(st.sampled_from(("id", "cat and id", "cat")))
    if form == "id":
        return f"id = {key}"
    if form == "cat and id":
        return f"cat = '{cat}' AND id = {key}"
    return f"cat = '{cat}'"


@st.composite
def _command(draw, shape: Shape, tag: str, kinds: tuple = KINDS) -> dict:
    kind = draw(st.sampled_from(kinds))
    key = draw(st.sampled_from(tuple(shape.keys)))
    cat = shape.keys[key]
    if cat is None and shape.has_cat:                   # an absent key: either partition
        cat = draw(st.sampled_from(("a", "b")))
    if kind == "INSERT":
        return {"sql": "INSERT", "rows": [_row(shape, key, cat, tag)]}
    if kind == "DELETE":
        return {"sql": "DELETE", "where": _where(draw, shape, key, cat)}
    if kind in ("UPDATE", "OVERWRITE_FILES"):
        return {"sql": kind, "where": _where(draw, shape, key, cat), "set": {"v": tag}}
    return {"sql": "MERGE", "on": ["id"], "rows": [_row(shape, key, cat, tag)]}


@st.composite
def mixed_scenario_docs(draw) -> dict:
    shape = draw(st.sampled_from(SHAPES))
    spark, py = draw(st.sampled_from(PAIRS))
    spark_writer = draw(st.sampled_from(("w1", "w2")))
    profiles = {spark_writer: spark, ("w2" if spark_writer == "w1" else "w1"): py}
    commands = {w: draw(_command(shape, f"{w}-{'spark' if p == spark else 'py'}",
                                 KINDS if p == spark else PY_KINDS))
                for w, p in sorted(profiles.items())}
    order = draw(st.sampled_from(ORDERS))
    first = draw(st.sampled_from(("w1", "w2")))         # who begins first
    name = {"1": first, "2": "w2" if first == "w1" else "w1"}
    steps: list[dict] = [{"commit": {"op": "append", "add": sorted(shape.files)}}]
    for ev in order:
        w = name[ev[1]]
        steps.append({"begin": w, "command": commands[w]} if ev[0] == "b" else {"commit": w})
    third = draw(st.sampled_from(THIRD))
    if third is not None:
        if third == "INSERT":
            key = draw(st.sampled_from(tuple(shape.keys)))
            cat = shape.keys[key] or ("a" if shape.has_cat else None)
            command = {"sql": "INSERT", "rows": [_row(shape, key, cat, "w3-spark")]}
        else:
            command = {"sql": "EXPIRE", "retain_last": 1}
        at = draw(st.integers(1, len(steps)))      # after the set-up commit, anywhere
        steps[at:at] = [{"begin": "w3", "command": command}, {"commit": "w3"}]
        profiles["w3"] = spark
    table: dict = {"format_version": 2, "schema": dict(shape.schema)}
    if shape.spec:
        table["partition_spec"] = list(shape.spec)
    return {"version": 1, "id": "random-mixed",
            "description": f"random mixed-engine scenario ({shape.name} table): "
                           f"{spark_writer} on Spark",
            "profile": profiles["w1"],
            "writer_profiles": {w: p for w, p in sorted(profiles.items()) if w != "w1"},
            # format v2 only: PyIceberg 0.12 cannot write v3 ("Writing V3 is not yet supported")
            "table": table,
            "files": {f: {"rows": [list(r) for r in rows]} for f, rows in shape.files.items()},
            "steps": steps}


def doc_shape(doc: dict) -> str:
    """The table shape a drawn document has: unpartitioned, identity or bucket."""
    spec = doc["table"].get("partition_spec") or ()
    return next((s.name for s in SHAPES if tuple(spec) == s.spec), "other")


@dataclass
class MixedDifferentialResult:
    seed: int
    requested: int
    statuses: Counter = field(default_factory=Counter)
    skip_reasons: Counter = field(default_factory=Counter)
    kinds: Counter = field(default_factory=Counter)       # "INSERT+MERGE" compared
    shapes: Counter = field(default_factory=Counter)      # "identity" compared
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
                "shapes_compared": dict(sorted(self.shapes.items())),
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
            res.shapes[doc_shape(doc)] += 1
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


__all__ = ["mixed_scenario_docs", "doc_shape", "SHAPES", "run_mixed_differential",
           "MixedDifferentialResult",
           "AGREE", "ALLOWED"]
