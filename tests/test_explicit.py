"""Soundness of the explicit-state checker's reductions (engines/explicit.py, symmetry.py, por.py).

Symmetry and POR must not change what the search finds: the same set of violated (and allowed)
properties, the same shortest counterexample length per property, the same reachable final-state
outcomes (normalized over interchangeable writers); reduced state counts <= full ones. POR's
sleep sets must keep every reachable state; its doomed swaps (engines/por.py) drop states, never
a verdict, a shortest counterexample's length or a final outcome. Results must not depend on
the worker count.
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from _search_util import MIXES, walk

from icecheck.engines.config import mix_config
from icecheck.engines.explicit import Bounds, Expander, search, with_retries
from icecheck.engines import por as por_
from icecheck.engines import symmetry as symmetry_
from icecheck.engines.por import independent
from icecheck.engines.symmetry import Fingerprinter, Perm, group, symmetry_classes
from icecheck.models.system import digest
from icecheck.traces.execute import model_for, run_actions

CONFIGS = [
    mix_config("spark-3.5-mor-serializable", 2, 1, ("delete", "update", "insert"), 1),
    mix_config("spark-3.5-mor-snapshot", 2, 1, ("delete", "update", "insert"), 1),
    mix_config("spark-3.5-cow-serializable", 2, 1, ("delete", "update", "insert"), 1),
    mix_config("spark-3.5-cow-snapshot", 2, 1, ("merge", "delete"), 1),
    mix_config("spark-3.5-mor-snapshot", 2, 1, ("delete", "update"), 1, format_version=3),
    mix_config("spark-3.5-cow-serializable", 2, 1, ("insert",), 1, catalog="last_writer_wins"),
    mix_config("spark-3.5-mor-serializable", 2, 1, ("update",), 1, catalog="put_if_absent",
               faults=True),
    with_retries(mix_config("spark-3.5-mor-snapshot", 3, 1, ("delete", "update"), 1), 1),
    with_retries(mix_config("spark-3.5-cow-serializable", 2, 2, ("delete", "update"), 1), 1),
    with_retries(mix_config("spark-3.5-mor-serializable", 2, 1, ("delete", "insert"), 1,
                            crashes=True), 1),
    # an expiry may delete a file a copy-on-write MERGE or DELETE reads after it began: its
    # ``write`` is then a step of its own (Model._split_write), dependent on the swaps
    with_retries(mix_config("spark-3.5-cow-serializable", 3, 1, ("merge", "delete", "expire"), 1),
                 0),
    # lost races that wait to be noticed (engines/por.py, doomed swaps): PyIceberg's first
    # attempt swaps against the metadata it began from; a catalog that refuses a taken version
    with_retries(mix_config("pyiceberg-0.12-serializable", 3, 1, ("delete", "insert"), 1), 2),
    with_retries(mix_config("spark-3.5-mor-serializable", 3, 1, ("update", "insert"), 1,
                            catalog="put_if_absent"), 2),
]
IDS = [c.name for c in CONFIGS]
#: the configurations whose every reachable state the commutation test walks
COMMUTING = CONFIGS[:7] + CONFIGS[-1:]


def verdict(r):
    found = {p: v.depth for p, v in r.violations.items()}
    allowed = {p: v.depth for p, v in r.allowed.items()}
    return found, allowed, r.outcomes


def _unmerged(monkeypatch, **kw):
    """``search`` with every state's lost races counted (``symmetry.MERGE_LOSSES`` off)."""
    with monkeypatch.context() as m:
        m.setattr(symmetry_, "MERGE_LOSSES", False)
        return search(**kw)


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_reductions_preserve_verdicts(cfg, monkeypatch):
    # unreduced: no symmetry, no POR, and no state merged for its lost races
    full = _unmerged(monkeypatch, cfg=cfg, engine="bfs", symmetry=False, por=False,
                     traces=False)
    assert full.complete
    merges = model_for(cfg).merges_losses
    for sym, por in ((False, False), (True, False), (False, True), (True, True)):
        r = search(cfg, engine="bfs", symmetry=sym, por=por, traces=False)
        assert r.complete
        assert verdict(r) == verdict(full), (sym, por)
        assert r.states <= full.states
        assert r.transitions <= full.transitions
        if por:
            # the sleep sets alone keep every state (of the orbits, with symmetry); the doomed
            # swaps drop only states where a lost race waits to be noticed
            with monkeypatch.context() as m:
                m.setattr(por_, "DOOMED_SWAPS", False)
                sleep = search(cfg, engine="bfs", symmetry=sym, por=True, traces=False)
            ref = search(cfg, engine="bfs", symmetry=sym, por=False, traces=False)
            assert verdict(sleep) == verdict(full)
            assert sleep.states == ref.states
            assert r.states <= sleep.states
    # DFS: the same verdicts (its counterexamples need not be shortest) and the same states;
    # where states merge for their lost races, which of them the search keeps (the first it
    # meets; the breadth-first search, the shallowest) decides which renamed copies of their
    # futures it searches, so the counts differ, never beyond the unmerged search's
    for sym, por in ((False, False), (True, True)):
        d = search(cfg, engine="dfs", symmetry=sym, por=por, traces=False)
        assert d.complete
        assert set(d.violations) == set(full.violations)
        assert set(d.allowed) == set(full.allowed)
        assert d.outcomes == full.outcomes
        ref = _unmerged(monkeypatch, cfg=cfg, engine="bfs", symmetry=sym, por=False,
                        traces=False)
        if merges:
            assert d.states <= ref.states
        else:
            assert d.states == ref.states


def test_symmetry_reduces_three_writers():
    cfg = with_retries(mix_config("spark-3.5-mor-snapshot", 3, 1, ("delete", "update"), 1), 1)
    full = search(cfg, engine="bfs", symmetry=False, por=False, traces=False)
    red = search(cfg, engine="bfs", symmetry=True, por=True, traces=False)
    assert red.states * 4 < full.states
    assert red.transitions * 5 < full.transitions


def test_workers_do_not_change_results():
    cfg = with_retries(mix_config("spark-3.5-mor-snapshot", 3, 1, ("delete", "update"), 1), 1)
    one = search(cfg, engine="bfs", workers=1, traces=False)
    two = search(cfg, engine="bfs", workers=2, traces=False)
    three = search(cfg, engine="bfs", workers=3, traces=False)
    for r in (two, three):
        assert (r.states, r.transitions, r.max_depth, r.final_states) == \
            (one.states, one.transitions, one.max_depth, one.final_states)
        assert verdict(r) == verdict(one)
        assert {p: v.actions for p, v in r.violations.items()} == \
            {p: v.actions for p, v in one.violations.items()}
        assert r.coverage == one.coverage


def test_workers_share_the_search_after_one_level_is_handed_out(monkeypatch):
    """Every state descends from the worker that generated it, so without a hand-out the
    initial state's worker expands everything. The first level of ``BALANCE_AT`` new states
    per worker goes to the workers its fingerprints name, each moved state rebuilt from its
    path; then every worker expands states, and the results are still one worker's."""
    from icecheck.engines import explicit as E
    cfg = with_retries(mix_config("spark-3.5-mor-snapshot", 3, 1, ("delete", "update"), 1), 1)
    one = search(cfg, engine="bfs", workers=1, traces=False)
    moved = []
    real = E._balance

    def spy(broadcast, workers, new, path_to):
        owners = {fp: v[0] for fp, v in new.items()}
        real(broadcast, workers, new, path_to)
        moved.append(sum(1 for fp, v in new.items() if v[0] != owners[fp]))
        assert len({v[0] for v in new.values()}) > 1      # shared, by fingerprint

    monkeypatch.setattr(E, "_balance", spy)
    monkeypatch.setattr(E, "BALANCE_AT", 4)
    for w in (2, 3):
        moved.clear()
        r = search(cfg, engine="bfs", workers=w, traces=False)
        assert len(moved) == 1 and moved[0] > 0        # once, and it moved states
        assert (r.states, r.transitions, r.final_states) == \
            (one.states, one.transitions, one.final_states)
        assert verdict(r) == verdict(one) and r.coverage == one.coverage
        assert {p: v.actions for p, v in r.violations.items()} == \
            {p: v.actions for p, v in one.violations.items()}


def _reachable(cfg, limit=3000):
    model = model_for(cfg)
    fp = Fingerprinter(cfg, symmetry=False)
    seen, todo = {}, [model.initial()]
    while todo and len(seen) < limit:
        s = todo.pop()
        h = fp.fingerprint(s)
        if h in seen:
            continue
        seen[h] = s
        todo.extend(model.step(s, a) for a in model.actions(s))
    return model, list(seen.values())


@pytest.mark.parametrize("cfg", COMMUTING, ids=[c.name for c in COMMUTING])
def test_independent_actions_commute(cfg):
    """The POR independence relation: every independent pair of enabled actions commutes."""
    model, states = _reachable(cfg)
    pairs = 0
    for s in states:
        acts = model.actions(s)
        for a, b in itertools.combinations(acts, 2):
            if independent(a, b):
                ab = model.step(model.step(s, a), b)
                ba = model.step(model.step(s, b), a)
                assert digest(ab) == digest(ba), (a, b)
                pairs += 1
    assert pairs > 0


#: configurations with lost races that wait to be noticed (writers with retries left)
DOOMING = CONFIGS[7:9] + CONFIGS[-2:]


@pytest.mark.parametrize("cfg", DOOMING, ids=[c.name for c in DOOMING])
def test_doomed_swaps_are_independent_and_invisible(cfg):
    """What makes ``{a doomed cas}`` a persistent set (engines/por.py, "Doomed swaps"), on
    every reachable state: the writer's only enabled step is that cas; it changes only its own
    writer (no history record, pointer, file); every other writer's enabled action commutes
    with it and leaves it doomed; and the properties judge the state the same before and
    after it."""
    from icecheck.traces.execute import judge
    model, states = _reachable(cfg, limit=4000)
    seen = 0
    for s in states:
        for i, w in enumerate(s.writers):
            if not model.doomed_swap(s, w):
                continue
            seen += 1
            mine = model.writer_actions(s, w)
            assert [str(a) for a in mine] == [f"{w.name}.cas"]
            c = mine[0]
            after = model.step(s, c)
            assert after.catalog == s.catalog and after.store == s.store
            assert after.writers[:i] == s.writers[:i] and after.writers[i + 1:] == s.writers[i + 1:]
            assert after.writers[i].history == w.history
            assert after.writers[i].phase == "written"
            for b in model.actions(s):
                if b.writer == w.name:
                    continue
                sb = model.step(s, b)
                assert model.doomed_swap(sb, sb.writers[i]), (c, b)
                assert digest(model.step(sb, c)) == digest(model.step(after, b)), (c, b)
            v1, v2 = judge(cfg, model, s), judge(cfg, model, after)
            assert sorted(map(str, v1.unexpected)) == sorted(map(str, v2.unexpected))
            assert sorted(str(v) for v, _ in v1.expected) == sorted(str(v) for v, _ in v2.expected)
    assert seen > 0


def test_no_doomed_swap_without_retries_or_against_a_last_writer_wins_catalog():
    """A lost race with no retry left ends the command (a history record: visible), and a
    last-writer-wins catalog never refuses a swap: neither is a doomed swap."""
    for cfg in (with_retries(mix_config("spark-3.5-mor-snapshot", 3, 1, ("delete", "update"), 1),
                             0),
                with_retries(mix_config("spark-3.5-cow-serializable", 3, 1, ("insert",), 1,
                                        catalog="last_writer_wins"), 2)):
        model, states = _reachable(cfg, limit=1500)
        assert not any(model.doomed_swap(s, w) for s in states for w in s.writers), cfg.name
        assert any(w.phase == "prepared" for s in states for w in s.writers)


def _masked(s):
    """``s`` with what a fingerprint leaves out blanked (engines/symmetry.py): of a failed
    operation's record, its start, plan, message, check, sequence numbers, and its intent but
    for its kind; of every record, attempts beyond 2; of the store, what lost attempts wrote
    (``WriterState.lost``)."""
    import dataclasses

    from icecheck.engines.symmetry import _left_out, capped
    from icecheck.models.store import ObjectStore

    def mask(r):
        return dataclasses.replace(r, intent=type(r.intent).__name__, operation=None,
                                   message=None, check=None, base_snapshot_id=None,
                                   sequence_number=None, snapshot_ids=())
    lost = {p for w in s.writers for group in w.lost for p in group}
    store = ObjectStore({p: o for p, o in s.store.archive().items() if p not in lost},
                        s.store.deleted - lost)
    return dataclasses.replace(s, store=store, writers=tuple(
        dataclasses.replace(w, history=tuple(mask(capped(r)) if _left_out(r) else capped(r)
                                             for r in w.history)) for w in s.writers))


@pytest.mark.parametrize("retries", [0, 2])
@pytest.mark.parametrize("leave_out", [False, True])
def test_fingerprint_matches_model_digest_equality(leave_out, retries, monkeypatch):
    """Without symmetry, equal fingerprints <=> equal model digests (an injective encoding) of
    the states with what a fingerprint leaves out blanked (failed operations' records, lost
    attempts' objects; with that turned off, of the states themselves). Walked by digest:
    every distinct state (up to 3,000), with and without retries (a lost race then ends the
    command, or sends it back to try again)."""
    from icecheck.engines import symmetry
    monkeypatch.setattr(symmetry, "LEAVE_OUT_FAILED", leave_out)
    monkeypatch.setattr(symmetry, "LEAVE_OUT_LOST", leave_out)
    monkeypatch.setattr(symmetry, "LEAVE_OUT_LOSSES", leave_out)
    cfg = with_retries(mix_config("spark-3.5-mor-serializable", 2, 2, ("delete", "update"), 1),
                       retries)
    model = model_for(cfg)
    seen, todo = {}, [model.initial()]
    while todo and len(seen) < 3000:
        s = todo.pop()
        if digest(s) not in seen:
            seen[digest(s)] = s
            todo.extend(model.step(s, a) for a in model.actions(s))
    fp = Fingerprinter(cfg, symmetry=False)
    by_fp, keys = {}, set()
    for s in seen.values():
        key = digest(_masked(s)) if leave_out else digest(s)
        by_fp.setdefault(fp.fingerprint(s), set()).add(key)
        keys.add(key)
    assert all(len(v) == 1 for v in by_fp.values())
    assert len(keys) == len(by_fp)
    # with it on, some distinct states share a fingerprint (failed operations are there,
    # and lost races)
    assert (len(by_fp) < len(seen)) == leave_out
    assert any(w.lost for s in seen.values() for w in s.writers)


def test_lift_is_a_group_action_and_bijection():
    cfg = mix_config("spark-3.5-mor-snapshot", 3, 1, ("delete", "update", "insert"), 1)
    classes = symmetry_classes(cfg)
    assert classes == [[1, 2, 3]]
    perms = group(classes)
    assert len(perms) == 6
    p = Perm(1, {1: 2, 2: 3, 3: 1})
    inv = Perm(2, {2: 1, 3: 2, 1: 3})
    for text in ("w1-1-d1", "v3-w2-1.metadata.json", "snap-3001-m1.avro", "w3.1", "v0", "s-d1",
                 "Cannot commit: v2-w1-1.metadata.json has changed from v1-setup.metadata.json"):
        assert inv._str(p._str(text)) == text
    for v in (1, 7, 101, 203, 399, 1001, 2002, 3999, 42):
        assert inv.int_(p.int_(v)) == v
    assert p._str("w1-1-d1") == "w2-1-d1" and p.int_(1001) == 2001 and p.int_(302) == 102


def test_symmetric_states_share_a_fingerprint():
    """w1 doing X then w2 doing Y, and w2 doing X' then w1 doing Y' (renamed): one orbit."""
    cfg = mix_config("spark-3.5-mor-snapshot", 2, 1, ("delete", "update"), 1)
    model = model_for(cfg)
    fp = Fingerprinter(cfg)
    a = run_actions(model, ["w1.begin", "w1.refresh", "w1.cas", "w2.begin#1"]).final
    b = run_actions(model, ["w2.begin", "w2.refresh", "w2.cas", "w1.begin#1"]).final
    assert digest(a) != digest(b)
    assert fp.fingerprint(a) == fp.fingerprint(b)
    c = run_actions(model, ["w1.begin#1", "w1.refresh", "w1.cas", "w2.begin"]).final
    assert fp.fingerprint(a) != fp.fingerprint(c)


def test_memoised_candidates_are_the_state_s_own():
    """``Fingerprinter.candidates`` (memoised on the ranks of the writers' signatures within
    each class) gives the same permutations as computing them from the state itself, on every
    state of a 3-writer search (ties included: writers that have not started are equal)."""
    cfg = with_retries(mix_config("spark-3.5-mor-serializable", 3, 1, ("delete", "update")), 0)
    model = model_for(cfg)
    fp = Fingerprinter(cfg)
    assert len(fp.perms) == 6
    frontier, seen, tied = [model.initial()], set(), 0
    while frontier:
        nxt = []
        for s in frontier:
            own = [p.index for p in fp._candidates_of(s)]
            assert [p.index for p in fp.candidates(s)] == own
            # Fingerprinter.under hashes the writers in Perm.order, which assumes slot order
            assert [w.slot for w in s.writers] == [1, 2, 3]
            for p in fp.perms:
                assert [s.writers[i] for i in p.order(3)] == \
                    sorted(s.writers, key=lambda w: p.writer(w.slot))
            tied += len(own) > 1
            h = fp.fingerprint(s)
            if h not in seen:
                seen.add(h)
                nxt.extend(model.step(s, a) for a in model.actions(s))
        frontier = nxt
    assert len(seen) > 100 and tied > 0


def test_por_order_is_invariant_under_the_symmetry_group():
    """The sleep sets' order (``Fingerprinter.writer_ranks``) must be the same for a state and
    its renaming: rank(lift(p)(s), p(w)) = rank(s, w) for every p of the group, which the
    soundness of POR under symmetry needs (docs/exhaustive.md; a fixed order by writer name
    fails it). Renamed states are made by running the renamed path; writers in equal states
    tie, and somewhere writers rank apart."""
    cfg = with_retries(mix_config("spark-3.5-mor-serializable", 3, 1, ("delete", "update")), 0)
    model = model_for(cfg)
    fp = Fingerprinter(cfg)
    frontier, seen, checked, apart = [(model.initial(), [])], set(), 0, 0
    while frontier and checked < 150:
        nxt = []
        for s, path in frontier:
            ranks = fp.writer_ranks(s)
            for p in fp.perms:
                name = {f"w{i}": f"w{p.writer(i)}" for i in (1, 2, 3)}
                renamed = [name[a.split(".")[0]] + a[a.index("."):] for a in path]
                t = run_actions(model, renamed).final
                assert fp.fingerprint(t) == fp.fingerprint(s)
                assert {name[w]: r for w, r in ranks.items()} == fp.writer_ranks(t)
            by_sig = {}
            for w in s.writers:
                by_sig.setdefault(fp.obj_digest(w, fp.blind), set()).add(ranks[w.name])
            assert all(len(v) == 1 for v in by_sig.values())      # equal writers tie
            apart += len(set(ranks.values())) > 1
            checked += 1
            for a in model.actions(s):
                s2 = model.step(s, a)
                h = fp.fingerprint(s2)
                if h not in seen:
                    seen.add(h)
                    nxt.append((s2, path + [str(a)]))
        frontier = nxt
    assert checked >= 150 and apart > 0


def test_kept_order_types_are_the_states_own():
    """``Expander.expand`` keeps each next-level state's symmetry order type as its
    fingerprint computed it, for POR's ranks at expansion: on every level of a 3-writer
    search it equals the stored state's own (ties included)."""
    from icecheck.engines.explicit import Expander
    cfg = with_retries(mix_config("spark-3.5-mor-serializable", 3, 1, ("delete", "update")), 0)
    ex = Expander(cfg, True, True, Bounds())
    fp0, _ = ex.initial()
    ex.advance([fp0])
    level, checked = [(fp0, frozenset())], 0
    while level:
        out = ex.expand(level, 0)
        new = {}
        for fp2, _, _, _, p2 in out["edges"]:
            new.setdefault(fp2, p2)
        ex.advance(list(new))
        for fp in new:
            assert ex._orders[fp] == ex.fp._order_type(ex.states[fp])
            checked += 1
        level = list(new.items())
    assert checked > 300


def test_bfs_traces_are_shortest_and_in_corpus_format():
    from icecheck.traces.format import check_trace
    cfg = mix_config("spark-3.5-mor-snapshot", 2, 1, ("delete", "update", "insert"), 1)
    r = search(cfg, engine="bfs")
    assert set(r.violations) == {"isolation", "undelete"}
    for v in r.violations.values():
        assert v.known
        assert v.depth == 6 and len(v.trace["actions"]) == 6
        check_trace(v.trace)


def test_no_violation_within_bounds():
    cfg = mix_config("spark-3.5-mor-snapshot", 2, 1, ("delete", "update"), 1, format_version=3)
    r = search(cfg, engine="bfs")
    assert r.complete and not r.violations and not r.failed


def test_bounds_and_time_budget():
    cfg = mix_config("spark-3.5-mor-serializable", 3, 2, ("delete", "update"), 1)
    r = search(cfg, engine="bfs", bounds=Bounds(max_depth=3), traces=False)
    assert r.complete and r.max_depth == 3 and r.cut > 0
    r = search(cfg, engine="bfs", time_budget=1e-6, traces=False)   # spent after the first state
    assert not r.complete and r.stopped == "time budget"


def test_coverage_shows_validation_branches():
    cfg = mix_config("spark-3.5-mor-serializable", 2, 1, ("delete", "update", "insert"), 1)
    r = search(cfg, engine="bfs", traces=False)
    keys = set(r.coverage)
    assert any(k.startswith("validation passed") for k in keys)
    assert any(k.startswith("validation failed") for k in keys)
    assert "commit: committed" in keys


@pytest.mark.parametrize("engine", ["bfs", "dfs"])
def test_memoised_coverage_labels_count_the_same(engine, monkeypatch):
    """The coverage labels memo (by the stepping writer's identity before and after) counts
    what computing every transition's labels counts, and the memo of the actions POR prunes
    (by the identity of the action and of each writer's enabled actions) explores the same
    transitions; faults, retries and crashes included."""
    cfg = with_retries(mix_config("spark-3.5-cow-serializable", 2, 1, ("insert", "delete"), 1,
                                  faults=True, crashes=True), 1)
    memoised = search(cfg, engine=engine, traces=False, bounds=Bounds(max_states=3000))
    from icecheck.engines import explicit
    monkeypatch.setattr(explicit, "TRANSITION_MEMO", 0)     # forgets before every new entry
    fresh = search(cfg, engine=engine, traces=False, bounds=Bounds(max_states=3000))
    assert memoised.coverage == fresh.coverage and sum(fresh.coverage.values()) > 500
    assert memoised.transitions == fresh.transitions and memoised.states == fresh.states
    assert any(k.startswith("crash while") for k in fresh.coverage)


def test_cli_bfs(tmp_path):
    from click.testing import CliRunner
    from icecheck.cli.main import main
    import json
    res = CliRunner().invoke(main, ["explore", "--engine", "bfs", "--profile",
                                    "spark-3.5-mor-snapshot", "--format", "3", "--mix",
                                    "delete,update", "--workers", "1"])
    assert res.exit_code == 0, res.output
    assert "no violation within bounds" in res.output
    res = CliRunner().invoke(main, ["explore", "--engine", "bfs", "--profile",
                                    "spark-3.5-mor-snapshot", "--mix", "delete,update",
                                    "--workers", "2", "--json", "--save-trace", str(tmp_path),
                                    "--strict"])
    assert res.exit_code == 1            # known findings: exit 1 only with --strict
    doc = json.loads(res.output)
    assert doc["failed"] and not doc["failed_new"]
    assert {v["property"] for v in doc["violations"]} == {"isolation", "undelete"}
    assert doc["complete"] and doc["states"] > 0
    assert len(list(tmp_path.glob("*.json"))) == 2


def test_deleted_objects_are_part_of_the_fingerprint():
    """A store that lost objects (expiry clean-up, a phantom failure's cleanAll) is another
    state, and the incremental store digest equals a fresh one over the same content."""
    import dataclasses

    from icecheck.models.store import ObjectStore

    cfg = mix_config("spark-3.5-cow-serializable", 2, 1, ("insert",), 1)
    fp = Fingerprinter(cfg, True)
    s = model_for(cfg).initial()
    gone = sorted(s.store._objects)[:1]
    s2 = dataclasses.replace(s, store=s.store.delete_all(gone))
    assert fp.fingerprint(s) != fp.fingerprint(s2)
    fresh = ObjectStore(dict(s2.store._objects), s2.store.deleted)
    assert fp.fingerprint(dataclasses.replace(s, store=fresh)) == fp.fingerprint(s2)


def test_bfs_progress_reports_how_much_of_the_level_is_expanded():
    """Progress within a level (a level of millions of states takes minutes): each report
    says how many of the level's states are expanded, and the last one of a level all."""
    cfg = with_retries(mix_config("spark-3.5-mor-serializable", 3, 1, ("delete", "update")), 0)
    seen: list = []
    search(cfg, engine="bfs", traces=False, progress=seen.append)
    assert seen
    last: dict = {}
    for p in seen:
        assert 0 < p["expanded"] <= p["frontier"]
        last[p["depth"]] = p
    assert all(p["expanded"] == p["frontier"] for p in last.values())


@pytest.mark.parametrize("config", MIXES, ids=lambda c: f"{c[0]}-{'-'.join(c[3])}")
def test_states_of_one_judge_key_have_one_verdict(config):
    """The verdict memo's key (``_judge_key``) reads of a failed operation only its index,
    outcome and attempts: every state of these searches (faults, crashes, phantom failures,
    expiry, compaction, a last-writer-wins catalog) is judged afresh, and states that share a
    key must share the verdict; some keys must be shared by states whose full records differ."""
    from icecheck.engines.explicit import _judge_key
    from icecheck.properties import analysis
    *args, retries, flags = config
    cfg = with_retries(mix_config(*args, **flags), retries)
    # exact: the fingerprint leaves out what this key leaves out, so a walk deduplicated by
    # fingerprint alone would hold one state of each such key
    ex, states = walk(cfg, 1500, exact=True)
    verdicts: dict = {}
    records: dict = {}
    for s in states:
        key = _judge_key(s, ex.fp)
        analysis._CACHE.clear()
        verdicts.setdefault(key, set()).add(ex._judge(s))
        records.setdefault(key, set()).add(tuple(w.history for w in s.writers))
    assert all(len(v) == 1 for v in verdicts.values())
    from icecheck.models.system import COMMITTED
    if any(not r.applied and r.outcome != COMMITTED
           for s in states for w in s.writers for r in w.history):
        assert any(len(r) > 1 for r in records.values())


@pytest.mark.parametrize("config", MIXES, ids=lambda c: f"{c[0]}-{'-'.join(c[3])}")
def test_states_of_one_fingerprint_behave_alike(config):
    """A fingerprint leaves out most of the record of an operation that neither applied nor
    was told it committed, and what attempts that lost their race wrote (engines/symmetry.py),
    so the search keeps one state of those that differ only there. On every state of these
    searches, walked without symmetry and deduplicated by exact content, states of one
    fingerprint must have the same verdict, the same enabled actions, successors of the same
    fingerprints and the same outcome, at the same depth; and some fingerprints must join
    states whose records or lost attempts differ."""
    from icecheck.properties import analysis
    *args, retries, flags = config
    cfg = with_retries(mix_config(*args, **flags), retries)
    ex, states = walk(cfg, 4000, exact=True, symmetry=False)
    model = ex.model
    seen: dict = {}
    joined = 0
    for s in states:
        analysis._CACHE.clear()
        acts = model.actions(s)
        behaviour = (ex._judge(s), sum(len(w.history) + w.attempt for w in s.writers),
                     tuple((str(a), ex.fingerprints(model.step(s, a))[0]) for a in acts),
                     None if acts else ex.outcome(s))
        fp = ex.fingerprints(s)[0]
        if fp in seen:
            assert seen[fp] == behaviour
            joined += 1
        seen[fp] = behaviour
    from icecheck.models.system import COMMITTED
    if any(not r.applied and r.outcome != COMMITTED
           for s in states for w in s.writers for r in w.history) or any(
            w.lost for s in states for w in s.writers):
        assert joined


#: configurations where states merge for their lost races (``Model.fingerprint_writers``): a
#: writer that lost can run out of retries in one and not in the other, on a CAS and on a
#: put-if-absent catalog
LOSS_MIXES = [
    ("spark-3.5-cow-serializable", 2, 3, ("insert",), 1, "cas", 2, 2),
    ("spark-3.5-mor-serializable", 3, 1, ("insert", "delete"), 1, "cas", 2, 2),
    ("spark-3.5-cow-serializable", 2, 2, ("insert", "delete"), 1, "put_if_absent", 2, 2),
]


@pytest.mark.parametrize("config", LOSS_MIXES, ids=lambda c: f"{c[0]}-{c[5]}-r{c[7]}")
def test_states_merged_for_their_lost_races_behave_alike(config):
    """States that differ only in how many races a writer lost, where that can no longer
    matter, share a fingerprint (``Model.fingerprint_writers``); the search keeps one of them.
    Their futures are the same up to the names the writer gives what it writes next, so: for
    every pair of such states among the first 6,000 of a walk that keeps them apart, walked
    side by side along the same actions (up to 20,000 pairs of states), both sides must have
    the same enabled actions, the same verdict and events, and, at the end, the same outcome.
    A writer wrongly merged (one that can still run out of retries in one state and not in
    the other: try ``attempt + losses <= retries + 1`` in ``fingerprint_writers``) fails."""
    from icecheck.properties import analysis
    cfg = with_retries(mix_config(*config[:7]), config[7])
    ex, states = walk(cfg, 6000, exact=True, symmetry=False)
    model = ex.model
    assert model.merges_losses
    first: dict = {}
    todo = []
    for s in states:
        fp = ex.fingerprints(s)[0]
        if fp in first:
            todo.append((first[fp], s))
        else:
            first[fp] = s
    assert any(tuple(w.attempt for w in a.writers) != tuple(w.attempt for w in b.writers)
               for a, b in todo), "no states merged whose writers lost different numbers of races"
    seen = set()
    budget = 20_000
    while todo and budget:
        a, b = todo.pop()
        budget -= 1
        analysis._CACHE.clear()
        acts = model.actions(a)
        assert [str(x) for x in acts] == [str(x) for x in model.actions(b)]
        assert ex._judge(a) == ex._judge(b)
        if not acts:
            assert ex.outcome(a) == ex.outcome(b)
        for x in acts:
            a2, b2 = model.step(a, x), model.step(b, x)
            key = (digest(a2), digest(b2))
            if key not in seen:
                seen.add(key)
                todo.append((a2, b2))
    assert not todo or not budget


def _strings(obj, out: set) -> None:
    """Every string inside a model value (fields, tuples, sets, dicts), into ``out``."""
    import dataclasses
    if type(obj) is str:
        out.add(obj)
    elif isinstance(obj, (tuple, list, frozenset, set)):
        for x in obj:
            _strings(x, out)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _strings(k, out)
            _strings(v, out)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            _strings(getattr(obj, f.name), out)


@pytest.mark.parametrize("config", MIXES, ids=lambda c: f"{c[0]}-{'-'.join(c[3])}")
def test_nothing_names_what_lost_attempts_wrote(config):
    """What a fingerprint leaves out of the store (``WriterState.lost``, ``Model._lost_paths``:
    the metadata file, manifest list and new manifests of an attempt that lost its race) must
    be what nothing reads again. On every state of these searches: each lost path is in the
    store, never deleted, and not named by anything a step or a property can start from (the
    catalog, every writer's other fields, its finished records) nor by any object those name,
    transitively (the metadata log, snapshots, manifest lists, manifests, files); and where a
    phantom failure may put an attempt's snapshot in the table, nothing is marked lost."""
    *args, retries, flags = config
    cfg = with_retries(mix_config(*args, **flags), retries)
    _, states = walk(cfg, 4000, exact=True, symmetry=False)
    marked = 0
    for s in states:
        lost = {p for w in s.writers for group in w.lost for p in group}
        if not lost:
            continue
        assert not flags.get("phantom_failures")
        marked += 1
        objs = s.store.archive()
        assert lost <= set(objs) and not lost & s.store.deleted
        # one group per lost attempt, its metadata file first (``Fingerprinter._lost_sum``)
        assert all(type(objs[g[0]]).__name__ == "TableMetadata" for w in s.writers
                   for g in w.lost)
        roots: set = set()
        _strings(s.catalog, roots)
        for w in s.writers:
            _strings(dataclasses.replace(w, lost=()), roots)
        reach, todo = set(), [r for r in roots if r in objs]
        while todo:
            path = todo.pop()
            if path in reach:
                continue
            reach.add(path)
            names: set = set()
            _strings(objs[path], names)
            todo.extend(n for n in names if n in objs and n not in reach)
        assert not lost & reach, sorted(lost & reach)
    if retries and cfg.catalog == "cas" and not flags.get("phantom_failures"):
        assert marked       # the search has lost races, and marks them


@pytest.mark.parametrize("config", MIXES, ids=lambda c: f"{c[0]}-{'-'.join(c[3])}")
def test_histories_equal_up_to_writer_names_share_one_verdict(config):
    """The verdict memo's second key (``_canonical_judge_key``): on every state of these
    searches walked *without* symmetry reduction (so a state and its images under a renaming
    of interchangeable writers are all there), each judged afresh, states of one canonical key
    have one verdict, and some of those keys join states whose identity keys (``_judge_key``)
    differ (a history and its image with the writers renamed)."""
    from icecheck.engines.explicit import _canonical_judge_key, _judge_key
    from icecheck.properties import analysis
    *args, retries, flags = config
    cfg = with_retries(mix_config(*args, **flags), retries)
    plain = Expander(cfg, False, False, Bounds())
    fp = Fingerprinter(cfg, True)
    assert fp.symmetric
    states = []
    seen = set()
    frontier = [plain.model.initial()]
    while frontier and len(states) < 1200:
        nxt = []
        for s in frontier:
            h = plain.fingerprints(s)[0]
            if h in seen:
                continue
            seen.add(h)
            states.append(s)
            nxt.extend(plain.model.step(s, a) for a in plain.model.actions(s))
        frontier = nxt
    verdicts: dict = {}
    identity: dict = {}
    for s in states:
        if _judge_key(s, fp)[-1] is not None:     # reads outside its metadata: no canonical key
            continue
        key = _canonical_judge_key(s, fp)
        analysis._CACHE.clear()
        verdicts.setdefault(key, set()).add(plain._judge(s))
        identity.setdefault(key, set()).add(_judge_key(s, fp))
    assert verdicts and all(len(v) == 1 for v in verdicts.values())
    assert any(len(k) > 1 for k in identity.values())


@pytest.mark.parametrize("checker", [False, True], ids=["model", "checker-memo"])
def test_chained_store_digests_equal_full_ones(checker):
    """``Fingerprinter.store_digest`` sums a store's digest along the chain of the stores it
    was derived from (kept after those are collected), and the digests of the objects a step
    memo entry adds once for every store that replays it (``_added_sum``): on every state of
    a search with expiry, crashes and faults, under every permutation, it equals the sum over
    every object and deleted path; with the step memo as the model keeps it and as the
    checker configures it (content keys, interning)."""
    import gc
    cfg = with_retries(mix_config("spark-3.5-cow-serializable", 2, 1, ("insert", "merge", "expire"),
                                  1, faults=True, crashes=True), 1)
    model = model_for(cfg)
    fp = Fingerprinter(cfg)
    if checker:
        model.content_key, model.interning = fp.content, True
    frontier, seen, checked, deleted = [model.initial()], set(), 0, 0
    shared: dict = {}       # id of a store's tuple of added paths -> (the tuple, stores)
    while frontier and checked < 600:
        nxt = []
        for s in frontier:
            for p in fp.perms:
                # a pass over every object and deleted path, by a fresh fingerprinter
                f = Fingerprinter(cfg)
                full = (sum(int.from_bytes(f._item(k, o, p), "little")
                            for k, o in s.store.archive().items())
                        + sum(f._gone(k, p) for k in s.store.deleted)) % (1 << 128)
                assert fp.store_digest(s.store, p) == full
            checked += 1
            deleted += bool(s.store.deleted)
            if s.store._added:
                got = shared.setdefault(id(s.store._added), [s.store._added, set()])
                got[1].add(id(s.store))
            h = fp.fingerprint(s)
            if h not in seen:
                seen.add(h)
                nxt.extend(model.step(s, a) for a in model.actions(s))
        frontier = nxt
        gc.collect()    # the previous level's stores go: their chain must still serve
    assert checked >= 600 and deleted
    # replays of one memo entry made stores that share its tuple of added paths
    assert any(len(stores) > 1 for _, stores in shared.values())
