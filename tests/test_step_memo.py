"""``Model.step``'s memo changes no state (issue 13).

The memo applies a step's effect (the writer's new state, the catalog, the objects written or
deleted), computed once, to every state that agrees on what the step reads. Here every state of
bounded breadth-first searches is reached three ways at once, by a model that runs every
handler (``memoise = False``), by one that memoises by identity (the default) and by one that
memoises by content (as the exhaustive checker does), and the three states must be equal field
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
