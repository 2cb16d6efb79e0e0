"""``Model.step``'s memo changes no state (issue 13).

The memo applies a step's effect (the writer's new state, the catalog, the objects written or
deleted), computed once, to every state that agrees on what the step reads. Here every state of
bounded breadth-first searches is reached three ways at once, by a model that runs every
handler (``memoise = False``), by one that memoises by identity (the default) and by one that
memoises by content and hash-conses what it builds (as the exhaustive checker does:
``Model.interning``), and the three states must be equal field
for field: the catalog entry, every object ever written (deleted ones included) with the
deleted paths, and every writer. The configurations reach every kind of step: retries, lost
swaps, faults, crashes, the applied-but-failed retry, expiry's deletes, compaction,
rewrite_manifests, partial progress and mixed engines (the example pipelines).
"""

import glob
import os

import pytest
from _search_util import MIXES

from icecheck.engines.config import mix_config
from icecheck.engines.explicit import with_retries
from icecheck.engines.symmetry import Fingerprinter
from icecheck.pipelines.load import load_pipeline
from icecheck.traces.execute import model_for

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))



def _walk(cfg, limit: int) -> int:
    """Breadth-first over up to ``limit`` distinct states, stepping the three models in
    lockstep; the number of steps compared."""
    plain, by_id, by_content = model_for(cfg), model_for(cfg), model_for(cfg)
    plain.memoise = False
    fp = Fingerprinter(cfg, symmetry=False)
    by_content.content_key = Fingerprinter(cfg, symmetry=True).content
    by_content.interning = True
    s0 = plain.initial()
    frontier = [((), s0, by_id.initial(), by_content.initial())]
    seen = {fp.fingerprint(s0)}
    compared = 0
    while frontier and len(seen) < limit:
        nxt = []
        for path, a_state, b_state, c_state in frontier:
            for action in plain.actions(a_state):
                here = path + (str(action),)
                a2 = plain.step(a_state, action)
                b2 = by_id.step(b_state, action)
                c2 = by_content.step(c_state, action)
                compared += 1
                # ObjectStore equality compares every object ever written and the deleted paths
                assert b2 == a2, f"the identity-keyed memo differs after {here}"
                assert c2 == a2, f"the content-keyed memo differs after {here}"
                h = fp.fingerprint(a2)
                if h not in seen:
                    seen.add(h)
                    nxt.append((here, a2, b2, c2))
        frontier = nxt
    return compared


@pytest.mark.parametrize("config", MIXES, ids=lambda c: f"{c[0]}-{'-'.join(c[3])}")
def test_memoised_steps_equal_fresh_ones(config):
    *args, retries, flags = config
    cfg = with_retries(mix_config(*args, **flags), retries)
    assert _walk(cfg, 1500) > 100


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "examples", "*.yaml"))),
                         ids=os.path.basename)
def test_memoised_steps_equal_fresh_ones_on_example_pipelines(path):
    cfg = load_pipeline(path).config
    assert _walk(cfg, 800) > 10


def test_a_repeated_step_runs_no_handler_and_shares_the_writer():
    cfg = with_retries(mix_config("spark-3.5-mor-snapshot", 2, 1, ("delete",)), 1)
    model = model_for(cfg)
    calls = []
    real = model._apply
    model._apply = lambda *a: calls.append(a[2]) or real(*a)
    s = model.initial()
    a = model.actions(s)[0]
    first, again = model.step(s, a), model.step(s, a)
    assert len(calls) == 1 and again == first
    assert again.writer(a.writer) is first.writer(a.writer)


def test_memo_is_bounded(monkeypatch):
    from icecheck.models import system
    monkeypatch.setattr(system, "STEP_MEMO_SIZE", 5)
    cfg = with_retries(mix_config("spark-3.5-mor-snapshot", 3, 1, ("delete", "update")), 1)
    model = model_for(cfg)
    states, steps = [model.initial()], 0
    for _ in range(4):
        states = [model.step(x, a) for x in states for a in model.actions(x)]
        steps += len(states)
        assert len(model._steps) <= 5
    assert steps > 50


def _finals(cfg, interning: bool) -> tuple:
    """(the model, the final states of an exhaustive walk of every path, no state merged)."""
    model = model_for(cfg)
    model.content_key = Fingerprinter(cfg, symmetry=True).content
    model.interning = interning
    out, frontier = [], [model.initial()]
    while frontier:
        nxt = []
        for s in frontier:
            acts = model.actions(s)
            if not acts:
                out.append(s)
            nxt.extend(model.step(s, a) for a in acts)
        frontier = nxt
    return model, out


def _copies(states, of) -> dict:
    """content -> the identities of the objects of that content ``of`` gives of ``states``."""
    by_content: dict = {}
    for s in states:
        by_content.setdefault(of(s), set()).add(id(of(s)))
    return by_content


def test_hash_consed_steps_share_equal_objects_built_along_different_paths():
    """``Model.interning`` (the exhaustive checker's hash-consing): the catalog entries and
    metadata files that steps build again along other paths (two writers' DELETEs of one row,
    committed in either order) are the objects built first; without it they are equal but
    distinct objects."""
    cfg = with_retries(mix_config("spark-3.5-cow-serializable", 2, 2, ("delete",)), 0)
    (_, plain), (_, shared) = _finals(cfg, False), _finals(cfg, True)
    assert plain == shared and len(plain) > 100
    for of in (lambda s: s.catalog, lambda s: s.metadata):
        a, b = _copies(plain, of), _copies(shared, of)
        assert a.keys() == b.keys()
        assert any(len(ids) > 1 for ids in a.values())
        assert all(len(ids) == 1 for ids in b.values())


def test_hash_consing_keeps_apart_metadata_of_equal_content_that_reach_other_files():
    """A metadata file names its manifest lists by path, and along two paths of a search one
    path can hold other content (here, with two writers each running a DELETE or an UPDATE,
    some final states hold equal metadata over other files). Hash-consing keys metadata by what it reaches, so these stay
    distinct objects: merged, the caches kept on them (step-memo reach keys, the snapshots'
    rows keys) would answer for the other files (keyed by content alone, the step memo
    replayed wrong steps: tests above)."""
    cfg = with_retries(mix_config("spark-3.5-cow-serializable", 2, 1, ("delete", "update")), 0)
    model, finals = _finals(cfg, True)
    groups = _copies(finals, lambda s: s.metadata)
    apart = [c for c, ids in groups.items() if len(ids) > 1]
    assert apart
    for content in apart:
        reach = {model._reach_key(s.store, s.metadata) for s in finals if s.metadata == content}
        assert len(reach) == len(groups[content]) > 1
