"""The model against PyIceberg 0.12 (conformance/pyiceberg_target.py).

* every built-in scenario (scenarios/builtin/) that PyIceberg can express agrees with the model, or is
  on conformance/allowlist.yaml (then it is xfail(strict): fix the model, drop the entry);
* the PyIceberg verdicts of scenarios/builtin/pyiceberg/ are pinned (OBSERVED): what PyIceberg 0.12
  really does, independent of the model;
* a trace with a PyIceberg profile replays through compare_trace.

Skipped (with the reason) when PyIceberg is not installed.
"""

import glob
import json
import os

import pytest

from icecheck.conformance.targets import TargetUnavailable, get_target

try:
    target = get_target("pyiceberg")
    target.ready()
    UNAVAILABLE = None
except TargetUnavailable as e:  # pragma: no cover - depends on the machine
    target, UNAVAILABLE = None, str(e)

pytestmark = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"PyIceberg: {UNAVAILABLE}")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ALL = sorted(glob.glob(os.path.join(ROOT, "scenarios", "builtin", "**", "*.yaml"), recursive=True))
OURS = sorted(glob.glob(os.path.join(ROOT, "scenarios", "builtin", "pyiceberg", "*.yaml")))

# What PyIceberg 0.12 did (writer -> outcome; final rows, sorted), observed by running it.
OBSERVED = {
    'py-add-files-twice-concurrently-duplicates-rows': ({'w1': 'committed', 'w2': 'committed',
                                                         'w3': 'validation_failed'},
        [[1, 'a'], [2, 'b'], [2, 'b']]),
    'py-serializable-insert-only-upsert-absent-key': ({'w1': 'committed', 'w2': 'committed',
                                                       'w3': 'noop'},
        [[1, 'a'], [2, 'a'], [3, 'x'], [3, 'y']]),
    'py-serializable-no-match-delete-validates': ({'w1': 'validation_failed', 'w2': 'committed',
                                                   'w3': 'noop'},
        [[1, 'apple'], [2, 'pear'], [5, 'kiwi']]),
    'py-serializable-file-overwrite-conflicts-with-any-append': ({'w1': 'validation_failed',
                                                                  'w2': 'committed'},
        [[1, 'a'], [2, 'a'], [5, 'late']]),
    'py-snapshot-file-overwrite-vs-concurrent-delete': ({'w1': 'validation_failed',
                                                         'w2': 'committed'},
        [[1, 'a']]),
    'py-serializable-append-append': ({'w1': 'committed', 'w2': 'committed'},
        [[1, 'a'], [2, 'a'], [3, 'a'], [4, 'b']]),
    'py-serializable-delete-partition-vs-append-part': ({'w1': 'validation_failed', 'w2': 'committed'},
        [[1, 'a'], [1, 'a'], [2, 'a'], [3, 'b']]),
    'py-serializable-delete-partition-vs-append-whole': ({'w1': 'validation_failed', 'w2': 'committed'},
        [[1, 'a'], [2, 'a'], [3, 'b'], [4, 'a']]),
    'py-serializable-delete-vs-delete-bounds-overlap': ({'w1': 'validation_failed', 'w2': 'committed'},
        [[0, 'b'], [1, 'a'], [2, 'a']]),
    'py-serializable-delete-vs-delete-same-file': ({'w1': 'committed', 'w2': 'validation_failed'},
        [[2, 'a'], [3, 'a']]),
    'py-serializable-delete-vs-delete-same-row': ({'w1': 'committed', 'w2': 'validation_failed'},
        [[2, 'a']]),
    'py-serializable-delete-vs-insert-matching': ({'w1': 'validation_failed', 'w2': 'committed'},
        [[1, 'a'], [1, 'b'], [2, 'a']]),
    'py-serializable-delete-vs-insert-other': ({'w1': 'committed', 'w2': 'committed'},
        [[2, 'a'], [5, 'b']]),
    'py-serializable-overwrite-filter-partial-file': ({'w1': 'committed'},
        [[1, 'z'], [2, 'a']]),
    'py-serializable-overwrite-filter-vs-append': ({'w1': 'validation_failed', 'w2': 'committed'},
        [[1, 'a'], [1, 'b'], [2, 'a']]),
    'py-serializable-overwrite-partitions-vs-append': ({'w1': 'validation_failed', 'w2': 'committed'},
        [[1, 'a'], [2, 'a'], [3, 'b'], [4, 'a']]),
    'py-serializable-update-vs-update-same-row': ({'w1': 'committed', 'w2': 'validation_failed'},
        [[1, 'x'], [2, 'a']]),
    'py-serializable-upsert-vs-upsert-absent-key': ({'w1': 'committed', 'w2': 'committed'},
        [[1, 'a'], [2, 'a'], [3, 'x'], [3, 'y']]),
    'py-serializable-upsert-vs-upsert-present-key': ({'w1': 'committed', 'w2': 'validation_failed'},
        [[1, 'x'], [2, 'a']]),
    'py-serializable-delete-not-equal-drops-null-only-file': (
        {'w1': 'committed', 'w2': 'committed'}, [[1, 0]]),
    'py-serializable-delete-not-equal-keeps-null-in-shared-file': (
        {'w1': 'committed', 'w2': 'committed'}, [[1, 0], [2, None]]),
    'py-serializable-upsert-retry-validates-its-match-filter': (
        {'w1': 'committed', 'w3': 'validation_failed', 'w5': 'noop'},
        [[0, 'a'], [0, 'c'], [1, 'x'], [2, 'b']]),
    'py-snapshot-append-append': ({'w1': 'committed', 'w2': 'committed'},
        [[1, 'a'], [2, 'a'], [3, 'a'], [4, 'b']]),
    'py-snapshot-delete-partition-vs-append-part': ({'w1': 'committed', 'w2': 'committed'},
        [[1, 'a'], [2, 'a'], [3, 'b']]),
    'py-snapshot-delete-partition-vs-append-whole': ({'w1': 'committed', 'w2': 'committed'},
        [[3, 'b'], [4, 'a']]),
    'py-snapshot-delete-vs-delete-bounds-overlap': ({'w1': 'validation_failed', 'w2': 'committed'},
        [[0, 'b'], [1, 'a'], [2, 'a']]),
    'py-snapshot-delete-vs-delete-same-file': ({'w1': 'committed', 'w2': 'validation_failed'},
        [[2, 'a'], [3, 'a']]),
    'py-snapshot-delete-vs-delete-same-row': ({'w1': 'committed', 'w2': 'validation_failed'},
        [[2, 'a']]),
    'py-snapshot-delete-vs-insert-matching': ({'w1': 'committed', 'w2': 'committed'},
        [[1, 'b'], [2, 'a']]),
    'py-snapshot-delete-vs-insert-other': ({'w1': 'committed', 'w2': 'committed'},
        [[2, 'a'], [5, 'b']]),
    'py-snapshot-overwrite-filter-vs-append': ({'w1': 'committed', 'w2': 'committed'},
        [[1, 'b'], [1, 'z'], [2, 'a']]),
    'py-snapshot-overwrite-partitions-vs-append': ({'w1': 'committed', 'w2': 'committed'},
        [[3, 'b'], [4, 'a'], [9, 'a']]),
    'py-snapshot-update-vs-update-same-row': ({'w1': 'committed', 'w2': 'validation_failed'},
        [[1, 'x'], [2, 'a']]),
    'py-snapshot-upsert-vs-upsert-absent-key': ({'w1': 'committed', 'w2': 'committed'},
        [[1, 'a'], [2, 'a'], [3, 'x'], [3, 'y']]),
    'py-snapshot-upsert-vs-upsert-present-key': ({'w1': 'committed', 'w2': 'validation_failed'},
        [[1, 'x'], [2, 'a']]),
    # bucket(2, id): PyIceberg's conflict filter reads the new file's bounds [4, 10] alone
    'py-serializable-delete-vs-insert-other-bucket-bounds-overlap': (
        {'w1': 'validation_failed', 'w2': 'committed'},
        [[1, 'a'], [10, 'b'], [4, 'b'], [5, 'a']]),
}


def _compare(path):
    from icecheck.conformance.compare import load_allowlist
    from icecheck.scenarios.format import load_scenario

    return target.compare_scenario(load_scenario(path), allowlist=load_allowlist())


def _allowed_ids():
    from icecheck.conformance.compare import load_allowlist
    return load_allowlist()


@pytest.mark.parametrize("path", ALL, ids=lambda p: os.path.relpath(p, ROOT))
def test_scenario_agrees_with_pyiceberg(path):
    c = _compare(path)
    assert c.status != "error", c.reason
    if os.path.dirname(path).endswith(os.path.join("scenarios", "builtin", "pyiceberg")):
        assert c.status != "skipped", c.reason
    if c.status == "allowed":
        pytest.xfail(f"allow-listed: {c.reason}")
    if c.status == "skipped":
        return
    listed = [e for e in _allowed_ids() if e.matches(c.id)]
    assert not listed, f"{c.id} agrees now: remove its allow-list entry ({listed[0].pattern})"
    assert c.status == "agree", json.dumps(c.as_json(), indent=1, default=str)


@pytest.mark.parametrize("path", OURS, ids=os.path.basename)
def test_pyiceberg_verdicts_are_pinned(path):
    from icecheck.scenarios.format import load_scenario

    s = load_scenario(path)
    c = target.compare_scenario(s)
    outcomes, rows = OBSERVED[s.id]
    real = {o.writer: o.java_outcome for o in c.ops if o.writer.startswith("w")}
    assert real == outcomes
    assert [list(r) for r in c.target_rows] == [list(r) for r in rows]


def test_trace_with_pyiceberg_profile(tmp_path):
    with open(os.path.join(ROOT, "traces", "lost-write-cas-rejected.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    doc["config"]["profile"] = "pyiceberg-0.12-serializable"
    p = tmp_path / "t.json"
    p.write_text(json.dumps(doc))
    c = target.compare_trace(str(p))
    assert c.status == "agree", c.as_json()
    assert c.model_rows == c.target_rows and c.target_rows


def test_spark_trace_is_skipped():
    c = target.compare_trace(os.path.join(ROOT, "traces", "lost-write-cas-rejected.json"))
    assert c.status == "skipped" and "not a PyIceberg profile" in c.reason


def test_history_broken_by_expiry_is_worded_as_pyiceberg(tmp_path):
    """scenarios/builtin/expiry/pyiceberg-delete-retry-history-broken-by-expiry.yaml, run on
    PyIceberg itself (the target does not drive expiry): a DELETE staged at snapshot 1 retries
    after snapshot 2 (between its start and the head) was expired, and fails with the message
    the model gives (``validation.PY_NO_MATCHING_SNAPSHOT``)."""
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.exceptions import ValidationException
    from pyiceberg.schema import Schema
    from pyiceberg.types import IntegerType, NestedField, StringType

    from icecheck.scenarios.format import load_scenario
    from icecheck.scenarios.runner import run_scenario

    path = os.path.join(ROOT, "scenarios", "builtin", "expiry",
                        "pyiceberg-delete-retry-history-broken-by-expiry.yaml")
    verdict = run_scenario(load_scenario(path))       # its last step: w1's commit

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    cat.create_namespace("n")
    schema = Schema(NestedField(1, "id", IntegerType(), required=False),
                    NestedField(2, "v", StringType(), required=False))
    t = cat.create_table("n.t", schema=schema, properties={
        "format-version": "2", "write.delete.isolation-level": "serializable",
        "commit.retry.min-wait-ms": "1", "commit.retry.max-wait-ms": "5"})

    def rows(*rs):
        return pa.Table.from_pylist([{"id": i, "v": v} for i, v in rs], schema=schema.as_arrow())

    t.append(rows((1, "v0"), (2, "v0")))
    tx = cat.load_table("n.t").transaction()
    tx.delete("id = 1")
    other = cat.load_table("n.t")
    other.append(rows((3, "a")))
    second = other.current_snapshot().snapshot_id
    other.append(rows((4, "b")))
    other.maintenance.expire_snapshots().by_id(second).commit()
    with pytest.raises(ValidationException) as e:
        tx.commit_transaction()
    assert (verdict.outcome, verdict.message) == ("validation_failed", str(e.value))
    got = sorted((r["id"], r["v"]) for r in cat.load_table("n.t").scan().to_arrow().to_pylist())
    assert [list(r) for r in got] == [list(r) for r in verdict.rows]


PY_FILTERS = ["id = 1", "id = 1 and v = 'a'", "id < 3 or id > 7 or id = 5 or v is null",
              "v in ('a','b')", "id in (10, 9, 1)", "not id = 1", "id != 2",
              "v is not null and id >= 2 and id <= 9 and id != 4",
              "a = 1 and b = 2 and c = 3", "(a = 1 and b = 2) and c = 3",
              "a = 1 and (b = 2 and c = 3)", "not not a = 1", "not not not a = 1",
              "id in (1)", "id not in (1)", "id not in (10, 9, 1)", "true", "false",
              "not (a = 1 or b = 2)", "a = 1 and b = 2 or c = 3 and not d = 4", "id = -5",
              "v = 'it''s'", "id <> 3", "ID = 1", "id in (1, 1, 2)", "v in ('b', 'a', 'b')",
              "v is null", "not v is null", "((a = 1))",
              "a = 1 and (b = 2 or c = 3) and d = 4 and e = 5",
              "a = 1 or b = 2 or c = 3 or d = 4 or e = 5 or f = 6 or g = 7",
              "(true)"]


@pytest.mark.parametrize("text", PY_FILTERS)
def test_filters_print_as_pyiceberg_prints_its_parse(text):
    """``filters.pyiceberg_str``, what the model prints in PyIceberg's "Found new conflicting
    delete files that can apply to records matching {data_filter}: ..." message, equals
    ``str()`` of PyIceberg 0.12's own parse of the same text."""
    from pyiceberg.expressions.parser import parse

    from icecheck.models.filters import pyiceberg_str

    assert pyiceberg_str(text) == str(parse(text))


def test_an_upsert_key_filter_prints_as_pyiceberg_builds_it():
    """An upsert's conflict filter (``upsert_util.create_match_filter``: ``In(key, keys)``)."""
    from pyiceberg.expressions import In as PyIn

    from icecheck.models.filters import In, pyiceberg_str_of

    for keys in ((2,), (12, 3, 101)):
        assert pyiceberg_str_of(In("id", keys)) == str(PyIn("id", list(keys)))
