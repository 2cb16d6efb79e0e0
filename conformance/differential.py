"""Differential testing: random small scenarios, run on the model and on real Iceberg (Java).

``scenario_docs()`` is a Hypothesis strategy for scenario documents (docs/scenario-format.md):
a table (v2/v3, unpartitioned, identity, bucket or truncate), a few data files with rows,
position deletes / DVs / equality deletes, a set-up commit, then 1-3 writers with random
operations (append, fast_append, overwrite, row_delta, rewrite, delete_files,
replace_partitions) over those files, random validation switches and conflict filters, plus
0-2 concurrent commits, in a random begin/commit order. Each document goes through the real
scenario parser, so a generated scenario is exactly a YAML file you can run.

``run_differential(n, seed)``:

1. generates ``n`` scenarios (Hypothesis, generate phase only, seeded) and compares each
   (``compare.compare_scenario``), counting agreements, disagreements and skips;
2. for each distinct disagreement *signature* (what differed, coarsely: the operation kind,
   the two outcomes or message wordings), asks Hypothesis to ``find`` a scenario with the same
   signature and shrink it to a minimal one; the minimal scenario is printed as YAML and saved
   to ``reports/conformance/disagreement-<n>.yaml``.

Deterministic for a given ``seed`` (the JVM side is deterministic: fresh table per scenario).
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hyp_seed
from hypothesis import strategies as st

from icecheck.models.operations import TRANSACTION_KINDS
from icecheck.models.table import Schema, TableConfig
from icecheck.models.transforms import parse_partition_spec
from icecheck.scenarios.errors import InputError
from icecheck.scenarios.format import BRANCH_KINDS

from .compare import AGREE, ALLOWED, DISAGREE, ERROR, SKIPPED, Comparison, compare_scenario

SPECS = ([], ["identity(cat)"], ["identity(cat)"], ["bucket(2, id)"], ["truncate(4, id)"])
CATS = ("a", "b")
FILTERS = ("cat = 'a'", "cat = 'b'", "id < 4", "id >= 4", "cat in ('a', 'b')",
           "cat = 'a' and id < 4", "cat = 'b' or id = 1", "id is null", "not cat = 'a'", "true",
           "false", "id != 2")
ROW_FILTERS = ("cat = 'a'", "cat = 'b'", "id < 4", "id >= 4", "true", "false", "id != 2",
               "id in (1, 3)", "id is null")


# ----------------------------------------------------------------------------- the strategy

@st.composite
def scenario_docs(draw) -> dict:
    fv = draw(st.sampled_from((2, 3)))
    spec = draw(st.sampled_from(SPECS))
    table = TableConfig(Schema((("id", "int"), ("cat", "string"))), parse_partition_spec(spec), fv)

    # Data files: 1-3 rows each, all in one partition.
    files: dict[str, dict] = {}
    data: list[str] = []
    rows_of: dict[str, list] = {}
    for i in range(1, draw(st.integers(3, 7)) + 1):
        cat = draw(st.sampled_from(CATS))
        first = [draw(st.one_of(st.integers(0, 9), st.none()) if i > 1 else st.integers(0, 9)),
                 cat]
        rows = [first]
        part = table.partition_of_row(tuple(first))
        for _ in range(draw(st.integers(0, 2))):
            row = [draw(st.integers(0, 9)), cat]
            if table.partition_of_row(tuple(row)) == part:
                rows.append(row)
        name = f"d{i}"
        files[name] = {"rows": rows}
        data.append(name)
        rows_of[name] = rows

    # Delete files over those data files.
    deletes: list[str] = []
    for i in range(1, draw(st.integers(0, 3)) + 1):
        kind = draw(st.sampled_from(("pos", "pos", "eq")))
        target = draw(st.sampled_from(data))
        if kind == "eq":
            value = draw(st.sampled_from([r[0] for r in rows_of[target]]))
            f: dict[str, Any] = {"content": "equality_deletes", "equality_ids": ["id"],
                                 "rows": [[value]]}
            if spec:
                src = "cat" if "cat" in spec[0] else "id"
                f["partition"] = {src: rows_of[target][0][0 if src == "id" else 1]}
            name = f"e{i}"
        else:
            positions = sorted(draw(st.sets(st.integers(0, len(rows_of[target]) - 1),
                                            min_size=1, max_size=2)))
            pairs = [[target, p] for p in positions]
            if fv == 2 and draw(st.booleans()):
                part = table.partition_of_row(tuple(rows_of[target][0]))
                others = [d for d in data if d != target
                          and table.partition_of_row(tuple(rows_of[d][0])) == part]
                if others:
                    pairs.append([draw(st.sampled_from(others)), 0])
            f = {"content": "dv" if fv == 3 else "position_deletes", "deletes": pairs}
            name = f"{'dv' if fv == 3 else 'p'}{i}"
        files[name] = f
        deletes.append(name)

    fresh_data = list(data)
    fresh_deletes = list(deletes)

    def take(pool: list[str], lo: int, hi: int) -> list[str]:
        k = draw(st.integers(min(lo, len(pool)), min(hi, len(pool))))
        out = pool[:k]
        del pool[:k]
        return out

    steps: list[dict] = []
    n_setup = draw(st.integers(1, max(1, min(3, len(fresh_data) - 1))))
    steps.append({"commit": {"op": "append", "add": take(fresh_data, n_setup, n_setup)}})
    if fresh_deletes and draw(st.booleans()):
        steps.append({"commit": {"op": "row_delta", "add_deletes": take(fresh_deletes, 1, 1)}})

    def operation() -> dict:
        kind = draw(st.sampled_from(("append", "fast_append", "overwrite", "row_delta",
                                     "rewrite", "delete_files", "replace_partitions")))
        op: dict[str, Any] = {"op": kind}
        v: dict[str, Any] = {}
        pick = lambda pool, lo, hi: draw(st.lists(st.sampled_from(pool), min_size=lo,  # noqa: E731
                                                  max_size=hi, unique=True)) if pool else []
        if kind in ("append", "fast_append"):
            op["add"] = take(fresh_data, 1, 2)
        elif kind == "overwrite":
            op["delete"] = pick(data, 0, 2)
            op["add"] = take(fresh_data, 0, 2)
            if draw(st.integers(0, 4)) == 0:
                op["row_filter"] = draw(st.sampled_from(ROW_FILTERS))
            if draw(st.booleans()):
                v["from_snapshot"] = True
            for sw in ("no_conflicting_data", "no_conflicting_deletes"):
                if draw(st.booleans()):
                    v[sw] = True
            if draw(st.booleans()):
                v["filter"] = draw(st.sampled_from(FILTERS))
        elif kind == "row_delta":
            op["add"] = take(fresh_data, 0, 1)
            op["add_deletes"] = take(fresh_deletes, 0, 2)
            if draw(st.integers(0, 3)) == 0:
                op["remove_deletes"] = pick(deletes, 1, 1)
            if draw(st.booleans()):
                v["from_snapshot"] = True
            for sw in ("no_conflicting_data_files", "no_conflicting_delete_files",
                       "deleted_files", "data_files_exist"):
                if draw(st.booleans()):
                    v[sw] = True
            if draw(st.booleans()):
                v["filter"] = draw(st.sampled_from(FILTERS))
        elif kind == "rewrite":
            op["delete"] = pick(data, 1, 2)
            added = take(fresh_data, 0, 2)
            # Compaction never adds rows: Java rejects a REPLACE snapshot whose added records
            # exceed its replaced records (IllegalArgumentException "Invalid REPLACE
            # operation"), which the model does not check (see the conformance report).
            replaced = sum(len(rows_of[d]) for d in op["delete"])
            while added and sum(len(rows_of[a]) for a in added) > replaced:
                fresh_data.insert(0, added.pop())
            op["add"] = added
            if draw(st.integers(0, 3)) == 0:
                op["remove_deletes"] = pick(deletes, 1, 1)
            if draw(st.booleans()):
                v["from_snapshot"] = True
            if draw(st.booleans()):
                v["starting_sequence_number"] = True
        elif kind == "delete_files":
            if draw(st.integers(0, 3)) == 0:
                op["row_filter"] = draw(st.sampled_from(ROW_FILTERS))
            else:
                op["delete"] = pick(data, 1, 2)
            if draw(st.booleans()):
                v["files_exist"] = True
        elif kind == "replace_partitions":
            op["add"] = take(fresh_data, 1, 2)
            if not op["add"]:
                op = {"op": "fast_append", "add": []}
            else:
                if draw(st.booleans()):
                    v["from_snapshot"] = True
                for sw in ("no_conflicting_data", "no_conflicting_deletes"):
                    if draw(st.booleans()):
                        v[sw] = True
        for key in ("add", "delete", "add_deletes", "remove_deletes"):
            if key in op and not op[key]:
                del op[key]
        if op["op"] == "rewrite" and "delete" not in op and "remove_deletes" not in op:
            op["op"] = "fast_append"
            op.pop("add_deletes", None)
            v = {}
        if v:
            op["validate"] = v
        return op

    n_writers = draw(st.integers(1, 3))
    n_anon = draw(st.integers(0, 2))
    tokens = [("b", w) for w in range(1, n_writers + 1)] + \
             [("c", w) for w in range(1, n_writers + 1)] + [("n", i) for i in range(n_anon)]
    order = draw(st.permutations(tokens))
    order = list(order)
    for w in range(1, n_writers + 1):      # each writer begins before it commits
        b, c = order.index(("b", w)), order.index(("c", w))
        if c < b:
            order[b], order[c] = order[c], order[b]
    for kind, w in order:
        if kind == "b":
            steps.append({"begin": f"w{w}", **operation()})
        elif kind == "c":
            steps.append({"commit": f"w{w}"})
        else:
            steps.append({"commit": operation()})

    # ExpireSnapshots (explicit ids) racing the writers: drawn last, so the scenarios of a seed
    # without it are the ones earlier versions drew. Ordinals name snapshots in commit order;
    # one that is the head then, or that does not exist, exercises Java's refusal / no-op.
    n_expire = draw(st.integers(0, 2))
    for _ in range(n_expire):
        at = draw(st.integers(1, len(steps)))
        commits_before = sum(1 for s_ in steps[:at] if "commit" in s_)
        picks = draw(st.lists(st.integers(1, max(1, commits_before)), min_size=1, max_size=2,
                              unique=True))
        steps.insert(at, {"commit": {"op": "expire_snapshots", "snapshots": sorted(picks)}})

    # Branches and tags (models/refs.py), drawn after everything else for the same reason:
    # some snapshot-producing operations commit to branch `dev` (created from main's head by
    # the first of them, or by create_branch) or, refused, to tag `t1`; ref updates (create a
    # branch or tag, fast-forward main to dev or dev to main) land anywhere, so they race the
    # writers that begin before them ("Table metadata refresh is required").
    if draw(st.integers(0, 2)) == 0:
        producing = [s_ if "op" in s_ else s_["commit"] for s_ in steps
                     if ("op" in s_ or isinstance(s_.get("commit"), dict))
                     and (s_ if "op" in s_ else s_["commit"])["op"] in BRANCH_KINDS]
        for op in producing[1:]:                      # the set-up append stays on main
            if draw(st.integers(0, 2)) == 0:
                op["branch"] = draw(st.sampled_from(("dev", "dev", "t1")))
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.integers(1, len(steps)))
            commits_before = sum(1 for s_ in steps[:at] if "commit" in s_)
            kind = draw(st.sampled_from(("create_branch", "create_tag", "fast_forward",
                                         "cherry_pick")))
            if kind == "cherry_pick":
                # publish a snapshot (often one staged on dev) by cherry-pick
                ref_op = {"op": kind, "snapshot": draw(st.integers(1, max(1, commits_before)))}
            elif kind == "fast_forward":
                name, to = draw(st.sampled_from((("main", "dev"), ("dev", "main"),
                                                 ("main", "t1"))))
                ref_op = {"op": kind, "name": name, "to": to}
            else:
                ref_op = {"op": kind, "name": "dev" if kind == "create_branch" else "t1"}
                if draw(st.booleans()):
                    ref_op["snapshot"] = draw(st.integers(1, max(1, commits_before)))
            steps.insert(at, {"commit": ref_op})

    # ReplacePartitions.validateAppendOnly (failAnyDelete) and RowDelta.removeRows, drawn last
    for s_ in steps:
        op = s_ if "op" in s_ else s_.get("commit")
        if isinstance(op, dict) and op.get("op") == "replace_partitions" \
                and draw(st.integers(0, 2)) == 0:
            op.setdefault("validate", {})["append_only"] = True
        if isinstance(op, dict) and op.get("op") == "row_delta" and data \
                and draw(st.integers(0, 2)) == 0:
            op["delete"] = [draw(st.sampled_from(data))]

    # a v2 -> v3 format upgrade racing the writers (updateProperties format-version), drawn
    # last: pending and later position delete files are then refused
    # (validateDeleteFilesForVersion)
    if fv == 2 and draw(st.integers(0, 3)) == 0:
        steps.insert(draw(st.integers(1, len(steps))),
                     {"commit": {"op": "upgrade_format_version", "format_version": 3}})

    # a writer's operation staged in a transaction with a second one (newTransaction ...
    # commitTransaction, models/transaction.py), drawn last: both re-applied on the refreshed
    # head, the second validating over the first's snapshot
    if draw(st.integers(0, 2)) == 0:
        def stageable(op: dict) -> bool:
            return op["op"] in TRANSACTION_KINDS and "row_filter" not in op \
                and "branch" not in op
        begins = [s_ for s_ in steps if "begin" in s_ and stageable(s_)]
        if begins:
            step = draw(st.sampled_from(begins))
            second = operation()
            if stageable(second):
                first = {k: v for k, v in step.items() if k != "begin"}
                for k in first:
                    del step[k]
                step.update({"op": "transaction", "operations": [first, second]})

    # caseSensitive(false) on some operations with a filter, their column names written in
    # upper case (they bind to id and cat), drawn last
    for s_ in steps:
        op = s_ if "op" in s_ else s_.get("commit")
        if isinstance(op, dict) and op.get("op") in ("overwrite", "row_delta", "delete_files") \
                and (op.get("row_filter") or (op.get("validate") or {}).get("filter")) \
                and draw(st.integers(0, 3)) == 0:
            op["case_sensitive"] = False
            if op.get("row_filter"):
                op["row_filter"] = _upper_columns(op["row_filter"])
            if (op.get("validate") or {}).get("filter"):
                op["validate"]["filter"] = _upper_columns(op["validate"]["filter"])

    # Spark's rewrite_manifests action (models/rewrite_manifests.py) racing the others: writer
    # w9 plans it somewhere and commits it later, drawn last
    if draw(st.integers(0, 2)) == 0:
        b = draw(st.integers(1, len(steps)))
        c = draw(st.integers(b + 1, len(steps) + 1))
        steps.insert(b, {"begin": "w9", "op": "rewrite_manifests"})
        steps.insert(c, {"commit": "w9"})

    # an append that adds again a path the set-up append already put in the table (Java
    # checks no path against the table: it is listed twice), drawn last
    if draw(st.integers(0, 3)) == 0:
        appends = [op for op in (s_ if "op" in s_ else s_.get("commit") for s_ in steps[1:])
                   if isinstance(op, dict) and op.get("op") in ("append", "fast_append")
                   and op.get("add")]
        if appends:
            again = draw(st.sampled_from(appends))
            again["add"] = list(again["add"]) + [draw(st.sampled_from(steps[0]["commit"]["add"]))]

    doc: dict[str, Any] = {"version": 1, "id": "random", "table": {
        "format_version": fv, "schema": {"id": "int", "cat": "string"}}}
    if spec:
        doc["table"]["partition_spec"] = list(spec)
    # manifest merging (MergeAppend and every merging producer, data and delete manifests),
    # drawn last: a small commit.manifest.min-count-to-merge makes merges happen
    if draw(st.integers(0, 3)) == 0:
        doc["table"]["properties"] = {"commit.manifest.min-count-to-merge": draw(
            st.integers(2, 4))}
    doc["files"] = files
    doc["steps"] = steps
    return doc


def _upper_columns(text: str) -> str:
    """A generated filter with its column names (id, cat) written in upper case."""
    import re
    return re.sub(r"\b(id|cat)\b", lambda m: m.group(1).upper(), text)


def doc_features(doc: dict) -> list[str]:
    """The operation kinds a scenario document uses, sorted (its features, for the report),
    with `to_branch`, `append_only` and `manifest_merge` for the switches that matter."""
    kinds = set()
    first = (doc.get("steps") or [{}])[0]
    first_added = (first.get("commit") or {}).get("add") or () if isinstance(
        first.get("commit"), dict) else ()
    if "commit.manifest.min-count-to-merge" in (doc.get("table", {}).get("properties") or {}):
        kinds.add("manifest_merge")
    for step in doc.get("steps", []):
        op = step["commit"] if isinstance(step.get("commit"), dict) else step
        if isinstance(op, dict) and "op" in op:
            kinds.add(op["op"])
            if "branch" in op:
                kinds.add("to_branch")
            if (op.get("validate") or {}).get("append_only"):
                kinds.add("append_only")
            if op["op"] == "row_delta" and op.get("delete"):
                kinds.add("remove_rows")
            if op.get("case_sensitive") is False:
                kinds.add("case_insensitive")
            if op["op"] in ("append", "fast_append") and step is not doc["steps"][0] and \
                    set(op.get("add") or ()) & set(first_added):
                kinds.add("readd_path")
    return sorted(kinds)


def doc_yaml(doc: dict, header: str = "") -> str:
    text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100)
    if header:
        text = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines()) + text
    return text


def parse_doc(doc: dict, sid: str = "random"):
    """The scenario for ``doc``, through the real YAML loader and parser."""
    from icecheck.scenarios.format import parse_scenario
    from icecheck.scenarios.yamlload import load_yaml

    doc = dict(doc, id=sid)
    return parse_scenario(load_yaml(doc_yaml(doc), f"<{sid}>"), f"<{sid}>")


# ----------------------------------------------------------------------------- running

@dataclass
class Finding:
    signature: tuple
    count: int
    first: Comparison
    first_doc: dict
    minimal_doc: dict | None = None
    minimal: Comparison | None = None
    saved: str | None = None
    shrink_seconds: float = 0.0


@dataclass
class DifferentialResult:
    seed: int
    requested: int
    scenarios: int = 0
    agreements: int = 0
    disagreements: int = 0
    allowed: int = 0
    skipped: int = 0
    errors: int = 0
    rejected: int = 0
    skip_reasons: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    wall_seconds: float = 0.0
    model_seconds: float = 0.0
    java_seconds: float = 0.0
    compared: int = 0          # scenarios run on both sides (not skipped)
    # per feature (an operation kind the scenario uses): scenarios compared, agreements,
    # disagreements (docs/conformance-java.md's per-feature table)
    features: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def java_rate(self) -> float:
        """Scenarios per second through the whole pipeline (model + Java replay)."""
        return self.compared / (self.model_seconds + self.java_seconds) \
            if self.model_seconds + self.java_seconds else 0.0

    @property
    def java_only_rate(self) -> float:
        return self.compared / self.java_seconds if self.java_seconds else 0.0

    @property
    def model_rate(self) -> float:
        return self.scenarios / self.model_seconds if self.model_seconds else 0.0

    def as_json(self) -> dict:
        return {
            "seed": self.seed, "requested": self.requested, "scenarios": self.scenarios,
            "compared": self.compared, "agreements": self.agreements,
            "disagreements": self.disagreements, "allowed": self.allowed,
            "skipped": self.skipped, "errors": self.errors, "rejected": self.rejected,
            "skip_reasons": self.skip_reasons,
            "features": {k: dict(v) for k, v in sorted(self.features.items())},
            "throughput": {
                "java_scenarios_per_s": round(self.java_rate, 2),
                "java_replay_only_scenarios_per_s": round(self.java_only_rate, 2),
                "model_scenarios_per_s": round(self.model_rate, 1),
                "wall_seconds": round(self.wall_seconds, 1),
                "model_seconds": round(self.model_seconds, 2),
                "java_seconds": round(self.java_seconds, 2),
            },
            "findings": [{
                "signature": list(f.signature), "count": f.count,
                "first": f.first.as_json(),
                "minimal": f.minimal.as_json() if f.minimal else None,
                "minimal_yaml": doc_yaml(f.minimal_doc) if f.minimal_doc else None,
                "saved": f.saved, "shrink_seconds": round(f.shrink_seconds, 1),
            } for f in self.findings],
        }


def _compare_doc(doc: dict, catalog: str | None, allowlist) -> Comparison | None:
    try:
        scenario = parse_doc(doc)
    except InputError:
        return None
    try:
        return compare_scenario(scenario, catalog=catalog, allowlist=allowlist, source="random")
    except InputError:
        return None
    except Exception as e:  # the comparison broke (py4j, JVM): an error finding, not a crash
        return Comparison(scenario.id, scenario.path, "random", ERROR,
                          f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")


def run_differential(n: int, seed: int, *, catalog: str | None = None, allowlist=None,
                     shrink: bool = True, max_findings: int = 5,
                     shrink_budget_s: float = 120.0, save_dir: str | None = None,
                     derandomize: bool = False,
                     progress: Callable[[int, Comparison | None], None] | None = None
                     ) -> DifferentialResult:
    """Generate ``n`` scenarios, compare each, then shrink one example per disagreement kind."""
    res = DifferentialResult(seed, n)
    findings: dict[tuple, Finding] = {}
    t0 = time.perf_counter()

    @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
              derandomize=derandomize, suppress_health_check=list(HealthCheck),
              print_blob=False)
    @given(scenario_docs())
    def explore(doc):
        c = _compare_doc(doc, catalog, allowlist)
        if c is None:
            res.rejected += 1
            return
        res.scenarios += 1
        res.model_seconds += c.model_seconds
        if c.status != SKIPPED:
            res.compared += 1
            res.java_seconds += c.java_seconds
        if c.status == AGREE:
            res.agreements += 1
        elif c.status == ALLOWED:
            res.allowed += 1
        elif c.status == SKIPPED:
            res.skipped += 1
            key = (c.reason or "").split(":")[0]
            res.skip_reasons[key] = res.skip_reasons.get(key, 0) + 1
        elif c.status == ERROR:
            res.errors += 1
        if c.status != SKIPPED:
            for feature in doc_features(doc):
                row = res.features.setdefault(feature, {"compared": 0, "agree": 0,
                                                        "disagree": 0, "other": 0})
                row["compared"] += 1
                key = {AGREE: "agree", DISAGREE: "disagree"}.get(c.status, "other")
                row[key] += 1
        if c.status in (DISAGREE, ERROR):
            if c.status == DISAGREE:
                res.disagreements += 1
            sig = c.signature() if c.status == DISAGREE else ("error", c.reason)
            if sig in findings:
                findings[sig].count += 1
            else:
                findings[sig] = Finding(sig, 1, c, doc)
        if progress:
            progress(res.scenarios, c)

    if not derandomize:
        explore = hyp_seed(seed)(explore)
    explore()
    res.wall_seconds = time.perf_counter() - t0
    res.findings = list(findings.values())

    if shrink:
        for f in res.findings[:max_findings]:
            _shrink(f, seed, n, catalog, allowlist, shrink_budget_s)
    if save_dir is not None:
        save_findings(res, save_dir)
    return res


class _Budget(Exception):
    pass


def _doc_size(doc: dict) -> int:
    return len(doc_yaml(doc))


def _shrink(f: Finding, seed: int, n: int, catalog, allowlist, budget_s: float) -> None:
    """Find a minimal scenario with the finding's signature (Hypothesis ``find``)."""
    from hypothesis import find
    from hypothesis.errors import FlakyFailure, NoSuchExample

    t0 = time.perf_counter()
    best: dict[str, Any] = {"doc": f.first_doc, "cmp": f.first, "size": _doc_size(f.first_doc)}

    def same(doc) -> bool:
        if time.perf_counter() - t0 > budget_s:
            raise _Budget()
        c = _compare_doc(doc, catalog, allowlist)
        if c is None:
            return False
        sig = c.signature() if c.status == DISAGREE else (
            ("error", c.reason) if c.status == ERROR else ())
        if sig != f.signature:
            return False
        size = _doc_size(doc)
        if size < best["size"]:
            best.update(doc=doc, cmp=c, size=size)
        return True

    try:
        if budget_s > 0:
            doc = find(scenario_docs(), same,
                       settings=settings(max_examples=max(n, 200), database=None,
                                         deadline=None, phases=[Phase.generate, Phase.shrink],
                                         suppress_health_check=list(HealthCheck)),
                       random=random.Random(seed))
            c = _compare_doc(doc, catalog, allowlist)
            if c is not None and _doc_size(doc) <= best["size"]:
                best.update(doc=doc, cmp=c, size=_doc_size(doc))
    except (NoSuchExample, _Budget, FlakyFailure):
        # FlakyFailure: the time budget ran out while Hypothesis was replaying a candidate
        # (the same document is then "interesting" once and not the next time); the best
        # document so far stands, and the greedy reduction below continues from it.
        pass
    # Hypothesis' shrinker works on the choice sequence; the file pools make some of its
    # moves impossible, so finish with a greedy reduction of the document itself.
    t1 = time.perf_counter()
    try:
        reduce_doc(best["doc"], same_untimed(f.signature, catalog, allowlist, best),
                   deadline=t1 + budget_s / 2)
    except _Budget:
        pass
    f.minimal_doc, f.minimal = best["doc"], best["cmp"]
    f.shrink_seconds = time.perf_counter() - t0


def _signature(c: Comparison | None) -> tuple | None:
    if c is None:
        return None
    if c.status == DISAGREE:
        return c.signature()
    if c.status == ERROR:
        return ("error", c.reason)
    return ()


def same_untimed(signature, catalog, allowlist, best):
    def pred(doc) -> bool:
        c = _compare_doc(doc, catalog, allowlist)
        if _signature(c) != signature:
            return False
        size = _doc_size(doc)
        if size <= best["size"]:
            best.update(doc=doc, cmp=c, size=size)
        return True
    return pred


def _candidates(doc: dict):
    """Smaller variants of a scenario document, biggest cuts first."""
    import copy

    steps = doc["steps"]
    # 1. drop a step (a begin together with its commit)
    for i, s in enumerate(steps):
        d = copy.deepcopy(doc)
        w = s.get("begin") or (s["commit"] if isinstance(s.get("commit"), str) else None)
        if w:
            d["steps"] = [t for t in d["steps"]
                          if t.get("begin") != w and t.get("commit") != w]
        else:
            del d["steps"][i]
        if d["steps"]:
            yield d
    # 2. drop files nobody references
    used = set()
    for s in steps:
        op = s["commit"] if isinstance(s.get("commit"), dict) else s
        for key in ("add", "delete", "add_deletes", "remove_deletes"):
            used.update(op.get(key, []) or [])
    for name, f in doc["files"].items():
        if name in used:
            for t, _ in f.get("deletes", []):
                used.add(t)
    unused = [n for n in doc["files"] if n not in used]
    if unused:
        d = copy.deepcopy(doc)
        for n in unused:
            del d["files"][n]
        yield d
    # 3. drop one file from an operation, one validation switch, a row filter
    for i, s in enumerate(steps):
        op = s["commit"] if isinstance(s.get("commit"), dict) else s
        if "op" not in op:
            continue
        for key in ("add", "delete", "add_deletes", "remove_deletes"):
            for name in list(op.get(key, []) or []):
                d = copy.deepcopy(doc)
                dop = d["steps"][i]["commit"] if isinstance(d["steps"][i].get("commit"), dict) \
                    else d["steps"][i]
                dop[key] = [x for x in dop[key] if x != name]
                if not dop[key]:
                    del dop[key]
                yield d
        for key in list((op.get("validate") or {}).keys()) + (["row_filter"] if "row_filter" in op else []):
            d = copy.deepcopy(doc)
            dop = d["steps"][i]["commit"] if isinstance(d["steps"][i].get("commit"), dict) \
                else d["steps"][i]
            if key == "row_filter":
                del dop["row_filter"]
            else:
                del dop["validate"][key]
                if not dop["validate"]:
                    del dop["validate"]
            yield d
    # 4. drop a row of a data file (the last one: keeps delete positions valid more often)
    for name, f in doc["files"].items():
        if len(f.get("rows", [])) > 1 and "content" not in f:
            d = copy.deepcopy(doc)
            d["files"][name]["rows"] = d["files"][name]["rows"][:-1]
            yield d
    # 5. no partition spec
    if doc["table"].get("partition_spec"):
        d = copy.deepcopy(doc)
        del d["table"]["partition_spec"]
        for f in d["files"].values():
            f.pop("partition", None)
        yield d


def reduce_doc(doc: dict, pred, deadline: float) -> dict:
    """Greedy reduction: apply the first smaller variant that keeps ``pred``, until none does."""
    current = doc
    progress = True
    while progress:
        progress = False
        for cand in _candidates(current):
            if time.perf_counter() > deadline:
                raise _Budget()
            if _doc_size(cand) < _doc_size(current) and pred(cand):
                current, progress = cand, True
                break
    return current


def save_findings(res: DifferentialResult, save_dir: str) -> None:
    os.makedirs(save_dir, exist_ok=True)
    for i, f in enumerate(res.findings, 1):
        doc = f.minimal_doc or f.first_doc
        cmp = f.minimal or f.first
        sid = f"disagreement-{res.seed}-{i}"
        header = (f"icecheck conform --target java --random: model and Java disagree "
                  f"(seed {res.seed}, {f.count} of {res.scenarios} generated scenarios)\n"
                  f"signature: {list(f.signature)}\n"
                  + "\n".join(cmp.differences) +
                  f"\nre-run: icecheck conform --target java <this file>")
        path = os.path.join(save_dir, f"{sid}.yaml")
        write_atomic(path, doc_yaml(dict(doc, id=sid), header))
        f.saved = path


def write_atomic(path: str, text: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
