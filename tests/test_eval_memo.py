"""The checker's speed plumbing changes no verdict (issue 13).

* ``properties.EvalMemo`` (rows and effects shared between evaluations, keyed by content): every
  state of a small exhaustive search is judged with one memo shared by all of them and without
  any memo, and the violations (with their details) and the reached events must be the same;
* ``isolation.DepGraph`` (the checks' dependency graph, not networkx): the networkx graph users
  get has the same nodes, edges and attributes, and its cycles are the same;
* ``few_collections``: the garbage collector's thresholds come back after a search.
"""

import gc

import pytest

from _search_util import walk

from icecheck.engines.config import mix_config
from icecheck.engines.explicit import few_collections, with_retries
from icecheck.properties import EvalMemo, analysis, dependency_graph, evaluate, reached
from icecheck.properties.isolation import find_cycles, node_attrs
from icecheck.traces.execute import judge


def _plain(vs):
    return [(v.property, v.message, repr(v.details)) for v in vs]


@pytest.mark.parametrize("config", [
    ("spark-3.5-mor-snapshot", 3, 1, ("delete", "update"), 1, "cas", 2, 1),
    ("spark-3.5-mor-serializable", 2, 2, ("delete", "update", "insert"), 1, "cas", 2, 1),
    ("spark-3.5-cow-serializable", 3, 1, ("insert",), 1, "last_writer_wins", 2, 4),
    # expiry deletes files without a new snapshot, crashes and faults leave staged work; a
    # phantom failure commits a snapshot its writer retries: what the lineage does not say
    ("spark-3.5-cow-serializable", 2, 1, ("insert", "merge", "expire"), 1, "cas", 2, 1,
     {"faults": True, "crashes": True}),
    ("spark-3.5-mor-serializable", 2, 1, ("delete", "rewrite_manifests", "rewrite_deletes"), 1,
     "cas", 2, 2, {"phantom_failures": True}),
], ids=lambda c: f"{c[0]}-{c[1]}w{c[2]}op-{c[5]}-{'-'.join(c[3])}")
def test_memoised_evaluation_equals_a_fresh_one(config):
    flags = config[8] if len(config) > 8 else {}
    cfg = with_retries(mix_config(*config[:7], **flags), config[7])
    ex, states = walk(cfg)
    memo = EvalMemo(ex.fp.content)
    violated = 0
    for s in states:
        analysis._CACHE.clear()
        fresh = (_plain(evaluate(ex.model, s)), reached(ex.model, s))
        analysis._CACHE.clear()
        shared = (_plain(evaluate(ex.model, s, memo=memo)), reached(ex.model, s, memo=memo))
        assert shared == fresh
        violated += bool(fresh[0])
        # the judgement too: each violation's expectation is memoised on the shared objects
        analysis._CACHE.clear()
        plain = judge(cfg, ex.model, s)
        analysis._CACHE.clear()
        memoised = judge(cfg, ex.model, s, memo)
        assert [(_plain(j.unexpected), _plain(v for v, _ in j.expected),
                 [(v.property, e) for v, e in j.known]) for j in (memoised,)] == \
            [(_plain(plain.unexpected), _plain(v for v, _ in plain.expected),
              [(v.property, e) for v, e in plain.known])]
    assert memo.rows and memo.effects and memo.oracles and memo.shapes
    assert memo.lineage_checks and memo.lineage_events
    if not flags:   # the first three show violations within their first 400 states
        assert violated and memo.expectations


@pytest.mark.parametrize("mix", [0, 1, 2, 3, 4])
def test_resumed_oracle_equals_a_fresh_fold(mix):
    """``memo_oracle`` resumes the oracle of the lineage one commit shorter: every field
    equals folding the whole lineage afresh (mismatches, expected versions, stale operations
    and the fold's own state included), on the memo tests' configurations."""
    from _search_util import MIXES
    from icecheck.properties.history import build_history
    from icecheck.properties.oracle import _oracle_key, memo_oracle, run_oracle
    prof, w, o, cmds, keys, catalog, fv, retries, flags = MIXES[mix]
    cfg = with_retries(mix_config(prof, w, o, cmds, keys, catalog=catalog, format_version=fv,
                                  **flags), retries)
    ex, states = walk(cfg, 300)
    memo = EvalMemo(ex.fp.content)
    resumed = 0
    for s in states:
        h = build_history(ex.model, s, memo)
        kf = memo.keyfn(ex.model.table, cfg.key)
        key = _oracle_key(h, kf)
        resumed += key is not None and key not in memo.oracles and key[:-1] in memo.oracles
        got = memo_oracle(h, kf)
        fresh = run_oracle(build_history(ex.model, s), kf)
        fields = ("writes", "version_order", "expected", "mismatches", "origin",
                  "last_writer", "stale_ops", "last_deleter", "idents")
        assert {f: getattr(got, f) for f in fields} == {f: getattr(fresh, f) for f in fields}
        effect = ("sets", "appends", "reads", "inserted", "deleted", "logical_noop",
                  "blind_sets")
        assert {k: [getattr(e, f) for f in effect] + [e.drop is None]
                for k, e in got.effects.items()} == \
            {k: [getattr(e, f) for f in effect] + [e.drop is None]
             for k, e in fresh.effects.items()}
    assert resumed


def test_a_commit_after_a_lost_race_shares_the_memo_of_the_same_commit_made_at_once():
    """Issue 44: the same lineage, once with w2 refreshing after w1's commit and committing at
    once, once with w2 losing its race first. The snapshot keeps its id across attempts and
    the memo keys leave out the attempt count and the attempt-named manifests, so the second
    evaluation runs no oracle and no lineage check of its own (and judges alike)."""
    from icecheck.engines.config import build_model_config
    from icecheck.engines.symmetry import Fingerprinter
    from icecheck.models.system import Action, Model
    cfg = mix_config("spark-3.5-cow-serializable", mix=("insert",))
    model = Model(build_model_config(cfg))

    def run(actions):
        state = model.initial()
        for a in actions:
            state = model.step(state, Action.parse(a))
        return state
    at_once = run(["w1.begin", "w2.begin", "w1.refresh", "w1.cas", "w2.refresh", "w2.cas"])
    lost = run(["w1.begin", "w2.begin", "w1.refresh", "w2.refresh", "w1.cas", "w2.cas",
                "w2.refresh", "w2.cas"])
    assert [r.attempts for r in lost.writer("w2").history] == [2]
    assert lost.metadata.current_snapshot_id == at_once.metadata.current_snapshot_id
    memo = EvalMemo(Fingerprinter(cfg).content)
    verdicts = []
    for s in (at_once, lost):
        analysis._CACHE.clear()
        verdicts.append((_plain(evaluate(model, s, memo=memo)), reached(model, s, memo=memo)))
    assert len(memo.oracles) == 1 and len(memo.lineage_checks) == 1
    assert verdicts[0][0] == verdicts[1][0]
    assert verdicts[1][1] - verdicts[0][1] == {"lost_race", "retry_committed"}


def test_a_bounded_memo_forgets_and_still_agrees():
    """A memo whose tables hold 3 entries keeps forgetting: the verdicts are the same."""
    cfg = with_retries(mix_config("spark-3.5-mor-snapshot", 3, 1, ("delete", "update"), 1), 1)
    ex, states = walk(cfg, 150)
    memo = EvalMemo(ex.fp.content, limit=3)
    for s in states:
        analysis._CACHE.clear()
        fresh = (_plain(evaluate(ex.model, s)), reached(ex.model, s))
        analysis._CACHE.clear()
        assert (_plain(evaluate(ex.model, s, memo=memo)), reached(ex.model, s, memo=memo)) == fresh
        assert all(len(t) <= 3 for t in (memo.rows, memo.effects, memo.oracles, memo.shapes,
                                         memo.lineage_checks, memo.lineage_events))


def test_dependency_graph_and_cycles_match_networkx():
    cfg = with_retries(mix_config("spark-3.5-mor-serializable", 2, 2, ("delete", "update"), 1), 0)
    ex, states = walk(cfg, 300)
    cyclic = 0
    for s in states:
        analysis._CACHE.clear()
        a = analysis.analyze(ex.model, s)
        g = dependency_graph(ex.model, s)
        # an operation's node attributes are made for the networkx graph only (node_attrs)
        ops = {op.label: op for op in a.history.committed_ops}
        assert set(g.nodes) == set(a.deps.nodes) and set(ops) <= set(g.nodes)
        for n, attrs in g.nodes(data=True):
            assert attrs == (node_attrs(ops[n]) if n in ops else {})
            if n in ops:
                assert attrs["command"] == ops[n].describe() and attrs["writer"] == ops[n].writer
        assert sorted(map(repr, g.edges(keys=True, data=True))) == sorted(
            repr((x, y, k, d)) for x, y, k, d in a.deps._edges)
        assert find_cycles(g) == a.cycles
        cyclic += bool(a.cycles)
    assert cyclic


def test_collector_thresholds_restored():
    before = gc.get_threshold()
    with few_collections():
        assert gc.get_threshold()[0] > before[0]
    assert gc.get_threshold() == before


def test_collector_freezes_only_during_a_search_and_never_what_the_caller_froze():
    """A search freezes what it keeps between batches and unfreezes it all at the end; a
    process that froze objects of its own keeps them frozen, and the search does not freeze.
    Objects frozen before the engine was imported are the interpreter's (CPython 3.12.1 starts
    with some): a search still freezes then."""
    from icecheck.engines.explicit import FROZEN_AT_IMPORT
    assert gc.get_freeze_count() <= FROZEN_AT_IMPORT
    with few_collections() as heap:
        assert heap.freezing
        heap.settle()
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
    cfg = with_retries(mix_config("spark-3.5-mor-snapshot", 2, 1, ("delete", "update"), 1), 1)
    from icecheck.engines.explicit import search
    assert search(cfg, traces=False).complete and gc.get_freeze_count() == 0
    gc.freeze()
    try:
        mine = gc.get_freeze_count()
        with few_collections() as heap:
            assert not heap.freezing
            keep = [[] for _ in range(1000)]
            heap.settle()
            assert gc.get_freeze_count() <= mine      # nothing more frozen
        assert 0 < gc.get_freeze_count() <= mine       # the caller's stay frozen
        del keep
    finally:
        gc.unfreeze()


def test_collector_freezes_when_the_interpreter_started_with_frozen_objects(monkeypatch):
    """CPython 3.12.1 starts with 375 objects in the permanent generation: they are not a
    caller's, and a search that took them for one never froze (8% of a search's time there).
    Simulated here: objects frozen before the engine's import (``FROZEN_AT_IMPORT``)."""
    from icecheck.engines import explicit
    gc.freeze()
    try:
        monkeypatch.setattr(explicit, "FROZEN_AT_IMPORT", gc.get_freeze_count())
        with few_collections() as heap:
            assert heap.freezing
            keep = [[] for _ in range(1000)]
            heap.settle()
            assert gc.get_freeze_count() > explicit.FROZEN_AT_IMPORT
        assert gc.get_freeze_count() == 0     # unfrozen with the search's own
        del keep
    finally:
        gc.unfreeze()
