"""The step where a trace's anomaly became inevitable (traces/inevitable.py over the engines'
``inevitable`` search from a state): every completion after it violates, some completion
before it does not; a cut search says so instead of guessing."""

import os

from icecheck.engines.config import ExploreConfig
from icecheck.engines.explicit import inevitable, shortest_path
from icecheck.traces import format as fmt
from icecheck.traces.execute import model_for, run_actions, violated
from icecheck.traces.inevitable import inevitable_step
from icecheck.traces.timeline import MARK, render_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(name):
    doc = fmt.load_trace(os.path.join(ROOT, "traces", name))
    cfg = ExploreConfig.from_json(doc["config"])
    model = model_for(cfg)
    return doc, cfg, model, run_actions(model, doc["actions"])


def test_undelete_becomes_inevitable_when_the_update_commits():
    doc, cfg, model, run = _load("undelete-v2-mor-snapshot.json")
    r = inevitable_step(model, run, "undelete", cfg.key)
    assert r.step == 4 and r.cut_at is None          # w1.cas: the UPDATE is in the table
    # the witness from step 3: w2 commits its DELETE first, w1's UPDATE loses and fails
    assert r.escape == ("w2.refresh", "w2.cas", "w1.cas", "w1.refresh")
    assert "(e.g. w2.refresh w2.cas w1.cas w1.refresh)" in r.text(len(run.actions))

    def goal(s):
        return "undelete" in violated(model, s, cfg.key)

    # one step earlier some schedule escapes: a completed run (no action left) ends without it
    before = inevitable(model, run.states[3], goal)
    assert before.found is False
    for k in range(4, len(run.states)):
        assert inevitable(model, run.states[k], goal).found is True
    escape = shortest_path(model, run.states[3],
                           lambda s: not model.actions(s) and not goal(s))
    assert escape.found                               # a witness completion that avoids it


def test_a_bound_cuts_the_search_and_is_reported():
    doc, cfg, model, run = _load("undelete-v2-mor-snapshot.json")
    r = inevitable_step(model, run, "undelete", cfg.key, max_states=1)
    assert r.cut_at is not None and "cut at its bound" in r.text(len(run.actions))


def test_the_timeline_marks_the_step():
    doc, *_ = _load("undelete-v2-mor-snapshot.json")
    lines = render_text(doc).splitlines()
    mark = next(i for i, line in enumerate(lines) if MARK in line)
    assert "cas: committed snapshot 1001" in "\n".join(lines[mark - 2:mark])
    assert any("undelete inevitable after step 4" in line for line in lines)


def test_the_timeline_names_what_each_delete_targets_and_the_cycle():
    """The issue's example: w2's position delete targets the row w1 had already replaced, and the
    live row w1 wrote is untouched; the G-single cycle is named."""
    doc, *_ = _load("undelete-v2-mor-snapshot.json")
    text = " ".join(render_text(doc).split())
    assert ("w2-1-p1: position delete targeting s-d1@1 = (1, 'v0'), a row no longer live when "
            "this commit landed (it removes nothing); the live row with id=1 is (1, 'w1.1') in "
            "w1-1-d1@0, untouched") in text
    assert "rows: (0, 'v0') in s-d1@0; (1, 'w1.1') in w1-1-d1@0" in text
    assert "cycle G-single: w1.1 -ww id=1-> w2.1, w2.1 -rw id=1-> w1.1" in text
