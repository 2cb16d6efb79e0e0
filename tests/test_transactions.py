"""Transactions with several operations (models/transaction.py): one swap, every staged
operation re-applied and re-validated on a refreshed head, the oracle's combined effect, the
exploration engines, and the scenario input.

The Java agreement of scenarios/builtin/transactions/ is tested by
tests/conformance/test_conform_java.py (every built-in scenario).
"""

from __future__ import annotations

import glob
import os

import pytest

from icecheck.models import operations as ops
from icecheck.models.system import COMMITTED, VALIDATION_FAILED
from icecheck.properties.history import build_history
from icecheck.scenarios import BUILTIN_DIR
from icecheck.scenarios.errors import InputError
from icecheck.scenarios.format import load_scenario, parse_scenario
from icecheck.scenarios.runner import execute_scenario, model_config
from icecheck.scenarios.yamlload import load_yaml

TRANSACTIONS = os.path.join(BUILTIN_DIR, "transactions")
HEAD = ("version: 1\ntable:\n  schema: {id: int, cat: string}\nfiles:\n"
        "  a: {rows: [[1, x]]}\n  b: {rows: [[2, x], [3, x]]}\n  c: {rows: [[4, x]]}\n"
        "  pb: {content: position_deletes, deletes: [[b, 0]]}\n"
        "steps:\n  - commit: {op: append, add: [a]}\n")


def _run_text(text):
    sc = parse_scenario(load_yaml(text, "x.yaml"), "x.yaml")
    model_cfg = model_config(sc)
    verdict, state = execute_scenario(sc, model_cfg)
    return sc, model_cfg, verdict, state


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(TRANSACTIONS, "*.yaml"))))
def test_builtin_transaction_scenarios_pass(path):
    sc = load_scenario(path)
    verdict, _ = execute_scenario(sc, model_config(sc))
    assert verdict.passed, verdict.failures


def test_one_swap_several_snapshots_one_record():
    _, _, verdict, state = _run_text(
        HEAD + "  - begin: w1\n    op: transaction\n    operations:\n"
        "      - {op: append, add: [b]}\n      - {op: row_delta, add_deletes: [pb]}\n"
        "  - commit: w1\n")
    assert verdict.passed, verdict.failures
    rec = state.writer("w1").history[-1]
    assert rec.outcome == COMMITTED and len(rec.snapshot_ids) == 2
    meta = state.metadata
    first, last = (meta.snapshot(s) for s in rec.snapshot_ids)
    assert last.parent_id == first.snapshot_id and rec.snapshot_id == last.snapshot_id
    assert (first.sequence_number, last.sequence_number) == (2, 3)
    assert state.catalog.version == 2            # the set-up append and one swap
    # the position delete removed the appended row b@0: rows 1, 3 remain
    assert sorted(map(tuple, verdict.rows)) == [(1, "x"), (3, "x")]
    assert not verdict.properties, verdict.properties


def test_a_retried_transaction_keeps_its_snapshots_ids():
    """Each staged SnapshotProducer caches its snapshotId(): the retry after a lost race
    re-applies the staged operations under the same ids, with new manifest lists."""
    _, _, verdict, state = _run_text(
        "version: 1\ncatalog: cas\n" + HEAD[len("version: 1\n"):]
        + "  - begin: w1\n    op: transaction\n    operations:\n"
        "      - {op: append, add: [b]}\n      - {op: append, add: [c]}\n"
        "  - write: w1\n  - refresh: w1\n  - validate: w1\n  - write_metadata: w1\n"
        "  - commit: {op: append, add: [a]}\n"
        "  - cas: w1\n  - commit: w1\n    expect: {outcome: committed}\n")
    assert verdict.passed, verdict.failures
    rec = state.writer("w1").history[-1]
    assert rec.attempts == 2 and len(rec.snapshot_ids) == 2
    first, last = rec.snapshot_ids
    assert last == first + 1
    assert [state.metadata.snapshot(i).manifest_list for i in rec.snapshot_ids] == \
        [f"snap-{first}-v3.avro", f"snap-{last}-v3.avro"]
    assert state.writer("w1").ids_taken == 2


def test_history_maps_every_snapshot_and_judges_only_the_last():
    sc, model_cfg, _, state = _run_text(
        HEAD + "  - commit:\n      op: transaction\n      operations:\n"
        "        - {op: append, add: [b]}\n        - {op: row_delta, add_deletes: [pb]}\n")
    from icecheck.models.system import Model
    h = build_history(Model(model_cfg), state)
    rec = state.writers[-1].history[-1]
    inner, last = rec.snapshot_ids
    assert h.inner_ids == frozenset({inner})
    assert h.by_snapshot[inner] is h.by_snapshot[last]
    assert h.by_snapshot[last].position == len(h.lineage) - 1


def test_failure_while_staged_ends_at_begin():
    # the overwrite's window (from the begin snapshot) holds the transaction's own append
    _, _, verdict, state = _run_text(
        HEAD + "  - begin: w1\n    op: transaction\n    operations:\n"
        "      - {op: append, add: [b]}\n"
        "      - {op: overwrite, delete: [a], add: [c], validate: {from_snapshot: true, "
        "filter: 'true', no_conflicting_data: true}}\n"
        "  - commit: w1\n    expect: {outcome: validation_failed}\n")
    assert verdict.passed, verdict.failures
    rec = state.writer("w1").history[-1]
    assert rec.outcome == VALIDATION_FAILED and rec.attempts == 1 and not rec.applied
    assert "matching true: [b]" in rec.message
    assert state.catalog.version == 1


def test_exploration_covers_a_transaction():
    sc, model_cfg, _, _ = _run_text(
        HEAD + "  - begin: w1\n    op: transaction\n    operations:\n"
        "      - {op: append, add: [b]}\n      - {op: row_delta, add_deletes: [pb]}\n"
        "  - commit: {op: fast_append, add: [c]}\n  - commit: w1\n")
    from dataclasses import replace
    from icecheck.models.system import Model
    model = Model(replace(model_cfg, fuse_local_steps=True))
    # every interleaving of the transaction with the concurrent append ends with both committed
    frontier, finals = [model.initial()], []
    while frontier:
        s = frontier.pop()
        acts = model.actions(s)
        if not acts:
            finals.append(s)
        frontier.extend(model.step(s, a) for a in acts)
    assert finals
    for s in finals:
        outcomes = [r.outcome for w in s.writers for r in w.history]
        assert outcomes.count(COMMITTED) == len(outcomes)
        assert len(s.metadata.snapshots) == 4


@pytest.mark.parametrize("ops_yaml, message", [
    ("[]", "transaction needs operations"),
    ("[{op: replace_partitions, add: [b]}]", "not replace_partitions"),
    ("[{op: expire_snapshots, snapshots: [1]}]", "not expire_snapshots"),
    ("[{op: delete_files, row_filter: 'id = 1'}]", "row filter inside a transaction"),
    ("[{op: append, add: [b], branch: dev}]", "does not take 'branch'"),
    ("[{op: append, add: [b], validate: {validate_on_first_attempt: false}}]",
     "PyIceberg's single-operation"),
])
def test_bad_transaction_input_names_the_line(ops_yaml, message):
    with pytest.raises(InputError) as e:
        parse_scenario(load_yaml(HEAD + f"  - commit: {{op: transaction, operations: {ops_yaml}}}\n",
                                 "x.yaml"), "x.yaml")
    assert message in str(e.value) and "x.yaml:" in str(e.value)


def test_transaction_kinds_are_snapshot_producers():
    assert set(ops.TRANSACTION_KINDS) <= set(ops.KINDS)
    assert ops.TRANSACTION not in ops.TRANSACTION_KINDS
