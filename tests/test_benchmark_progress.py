"""A benchmark run says where it is (benchmarks/progress.py): each item with its number, the
estimate of the time its section has left once one of its items has finished, the whole run's
estimate for --quick; and the plan's counts are the items the sections announce. Time is a
fake clock here: nothing is timed."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from benchmarks import pipelines as P
from benchmarks import progress as BP
from benchmarks import run


def _progress(plan, quick=False):
    clock = [0.0]
    con = Console(file=io.StringIO(), width=300, highlight=False)
    p = BP.Progress(plan, quick=quick, console=con, live=False, clock=lambda: clock[0])
    return p, clock, lambda: con.file.getvalue().splitlines()


def test_items_are_numbered_and_estimated_once_one_has_finished():
    p, clock, lines = _progress([("corpus", 3, "traces"), ("tools", 2, "commands")])
    p.begin()
    assert lines()[0].startswith("benchmarks: 2 section(s): corpus (3 traces), tools (2 "
                                 "commands); no measured estimate without --quick")
    with p.section("corpus"):
        with p.item("a"):
            clock[0] += 10
        with p.item("b"):
            clock[0] += 20
        with p.item("c"):
            assert p.left_in_section() == 15.0       # mean 15 s x 1 item, none of it spent
            clock[0] += 6
            assert p.left_in_section() == 9.0        # less what the running item has taken
    with p.section("tools"):
        with p.item("z3"):
            p("[tools] a result line")
    p.end()
    out = lines()
    assert "== section 1/2: corpus (3 traces), 0 s since the start" in out
    assert "[corpus 1/3] a" in out                    # nothing finished yet: no estimate
    assert "[corpus 2/3] b (about 20 s left in corpus)" in out
    assert "[corpus 3/3] c (about 15 s left in corpus)" in out
    assert "== corpus: done in 36 s" in out
    assert "== section 2/2: tools (2 commands), 36 s since the start" in out
    assert out.index("[tools 1/2] z3") < out.index("[tools] a result line")
    assert out[-1] == "benchmarks: done in 36 s"


def test_a_quick_run_is_estimated_up_front_and_with_every_item(monkeypatch):
    monkeypatch.setattr(BP, "QUICK_SECONDS", {"corpus": 100, "tools": 50})
    p, clock, lines = _progress([("corpus", 2, "traces"), ("tools", 1, "commands")], quick=True)
    p.begin()
    assert lines()[0].endswith(f"about 2 min 30 s ({BP.QUICK_MEASURED})")
    with p.section("corpus"):
        clock[0] += 4
        with p.item("a"):                 # no item finished: the section's measured seconds
            clock[0] += 30
        with p.item("b"):
            pass
    out = lines()
    assert "[corpus 1/2] a (about 2 min 26 s left in the run)" in out
    assert "[corpus 2/2] b (about 30 s left in corpus; about 1 min 20 s left in the run)" in out
    # a section QUICK_SECONDS does not know (compare), or a full run: no whole-run estimate
    assert BP.Progress([("compare", 4, "runs")], quick=True, console=Console(
        file=io.StringIO()), live=False).estimate() is None
    assert BP.Progress([("corpus", 2, "traces")], quick=False, console=Console(
        file=io.StringIO()), live=False).estimate() is None


def test_an_item_that_fails_is_not_counted_as_finished():
    p, clock, _ = _progress([("corpus", 2, "traces")])
    with p.section("corpus"):
        with pytest.raises(RuntimeError):
            with p.item("a"):
                clock[0] += 5
                raise RuntimeError("boom")
        assert p.done == [] and p.left_in_section() is None


def test_durations_read_as_a_person_reads_them():
    assert [BP.duration(s) for s in (0, 44.6, 60, 200, 3600, 3725)] == [
        "0 s", "45 s", "1 min 00 s", "3 min 20 s", "1 h 00 min", "1 h 02 min"]


def test_the_plan_counts_what_the_sections_run():
    spec = {"canonical": {"profiles": ["a", "b", "c", "d"]}, "others": [{}, {}, {}],
            "growth": {"writers": [2, 3], "ops": [1, 2, 3]}, "compare": [{}, {}]}
    quick = dict((s, n) for s, n, _ in run.plan(list(run.SECTIONS), spec, 5, True, "HEAD~1"))
    assert quick == {"configs": 3, "compiled": 30, "growth": 6, "hypothesis": 1,
                     "corpus": len(run.corpus_traces()),
                     "pipelines": len(run.example_pipelines()),
                     "realistic": 2 * len(P.pipeline_files()), "costs": 3,
                     "tools": len(run.TOOL_COMMANDS) + 1, "compare": 20}
    full = dict((s, n) for s, n, _ in run.plan(["configs", "compiled", "costs"], spec, 5,
                                               False))
    assert full == {"configs": 7, "compiled": 2 * (4 + 3 * 5), "costs": 7}
    assert [e[0] for e in run.config_entries(spec | {"others": [{"id": "x"}]}, 5, False)] == [
        "canonical-a", "canonical-b", "canonical-c", "canonical-d", "x"]


def test_a_run_announces_each_planned_item(tmp_path, capsys):
    """The realistic section on a tiny bound, through ``main``: one numbered line per search
    (each pipeline file twice: as checked, and with the sleep sets alone), k of the planned n."""
    n = 2 * len(P.pipeline_files())
    assert run.main(["--sections", "realistic", "--realistic-max-states", "50",
                     "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert f"realistic ({n} searches of the pipeline files)" in err.splitlines()[0]
    assert re.findall(r"^\[realistic (\d+)/(\d+)\] ", err, re.M) == [
        (str(k), str(n)) for k in range(1, n + 1)]
    assert err.count("== section 1/1: realistic") == 1 and "== realistic: done in" in err
    assert err.rstrip().splitlines()[-1].startswith("benchmarks: done in ")


def test_on_a_terminal_the_bars_come_and_go_and_the_lines_stay():
    con = Console(file=io.StringIO(), force_terminal=True, width=160, highlight=False,
                  color_system=None)
    p = BP.Progress([("corpus", 2, "traces")], console=con)
    assert p.live                                     # a terminal: rich's bars
    p.begin()
    assert p._bars is not None
    with p.section("corpus"):
        with p.item("a"):
            p("[corpus] a result line")
        with p.item("b"):
            pass
    p.end()
    assert p._bars is None
    out = con.file.getvalue()
    for line in ("[corpus 1/2] a", "[corpus] a result line", "[corpus 2/2] b",
                 "== corpus: done in", "benchmarks: done in"):
        assert line in out, line
