"""The split search (engines/split.py): one BFS per combination of the programs' alternatives.

It must find what the whole search finds: the same violated and allowed properties, the same
shortest counterexample length per property and the same final outcomes (normalized over the
whole configuration's interchangeable writers), with counterexamples that replay on the whole
configuration; and its result must not depend on how many parts run at once. Its final-state
count is at least the whole search's: a final state has made every choice, but where the choice
was an operation that failed, the fingerprint leaves out which (engines/symmetry.py), so one
final state of the whole search can be one of several parts.
"""

from __future__ import annotations

import os

import pytest

from icecheck.engines.config import mix_config
from icecheck.engines.explicit import Bounds, search, with_retries
from icecheck.engines.split import _renormal, parts, split_points, split_search, whole_labels
from icecheck.pipelines.load import load_pipeline
from icecheck.traces.execute import model_for, run_actions
from icecheck.traces.format import KIND_VIOLATION

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
FLINK = os.path.join(EXAMPLES, "flink-cdc-append-compaction.yaml")
CONFIGS = [
    # three interchangeable writers, each DELETE or UPDATE: 8 combinations, 4 up to symmetry
    with_retries(mix_config("spark-3.5-mor-snapshot", 3, 1, ("delete", "update"), 1), 0),
    # two operations each, with retries (lost races retried inside a part)
    with_retries(mix_config("spark-3.5-cow-serializable", 2, 2, ("delete", "update"), 1), 1),
    with_retries(mix_config("spark-3.5-mor-serializable", 2, 1, ("delete", "update", "insert"),
                            1), 0),
    # PyIceberg's first attempt, a catalog without compare-and-swap
    with_retries(mix_config("pyiceberg-0.12-serializable", 2, 1, ("delete", "insert"), 1), 1),
    mix_config("spark-3.5-cow-serializable", 2, 1, ("insert", "delete"), 1,
               catalog="last_writer_wins"),
]
IDS = [c.name for c in CONFIGS]


def summary(r):
    return ({p: v.depth for p, v in r.violations.items()},
            {p: v.depth for p, v in r.allowed.items()}, r.outcomes, r.final_states)


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_split_finds_what_the_whole_search_finds(cfg):
    whole = search(cfg, traces=False)
    split = split_search(cfg, traces=True)
    assert len(parts(cfg)[0]) > 1
    assert summary(split)[:3] == summary(whole)[:3]
    assert split.final_states >= whole.final_states
    assert split.complete and whole.complete
    assert split.symmetry_classes == whole.symmetry_classes
    assert [q["part"] for q in split.part_results] == [p.label(cfg) for p in parts(cfg)[0]]
    assert sum(q["states"] for q in split.part_results) == split.states
    assert [q["started"] for q in split.part_results] == list(range(1, split.parts + 1))
    # each counterexample is a run of the whole configuration, showing its property as found
    model = model_for(cfg)
    for v in list(split.violations.values()) + list(split.allowed.values()):
        run = run_actions(model, v.actions)
        assert run.stopped is None and len(run.actions) == len(v.actions)
        assert (v.trace["kind"] == KIND_VIOLATION) == v.unexpected
        assert v.depth == len(v.actions)


def test_parts_up_to_interchangeable_writers():
    cfg = CONFIGS[0]
    assert len(split_points(cfg)) == 3
    todo, total = parts(cfg)
    assert total == 8
    # one per multiset of choices: DDD, DDU, DUU, UUU
    assert [p.choices for p in todo] == [((0,), (0,), (0,)), ((0,), (0,), (1,)),
                                         ((0,), (1,), (1,)), ((1,), (1,), (1,))]
    assert len(parts(cfg, symmetry=False)[0]) == 8
    # a part's program has one alternative where the whole had several
    assert all(len(entry) == 1 for p in todo for prog in p.cfg.writers for entry in prog)


def test_split_without_symmetry_searches_every_combination():
    cfg = CONFIGS[0]
    a = split_search(cfg, symmetry=False, traces=False)
    b = search(cfg, symmetry=False, traces=False)
    assert summary(a)[:3] == summary(b)[:3]
    assert a.symmetry_classes == b.symmetry_classes == [[1], [2], [3]]
    assert any("8 parts" in n for n in a.notes)


def test_counterexample_names_the_alternative_the_whole_configuration_runs():
    """A part runs ``w1.begin`` (its entry has one alternative); the whole names which one."""
    cfg = CONFIGS[0]
    res = split_search(cfg, traces=False)
    begins = [a for v in res.violations.values() for a in v.actions if ".begin" in a]
    assert any("#1" in a for a in begins)        # an UPDATE (alternative 1) took part
    part = parts(cfg)[0][3]                      # every writer runs UPDATE
    assert whole_labels(cfg, part, ["w1.begin", "w2.begin"]) == ["w1.begin#1", "w2.begin#1"]
    assert whole_labels(cfg, parts(cfg)[0][0], ["w1.begin"]) == ["w1.begin"]


def test_parts_at_once_give_the_same_result():
    cfg = CONFIGS[1]
    one = split_search(cfg, workers=1, traces=False)
    two = split_search(cfg, workers=2, traces=False)
    assert (one.states, one.transitions, one.coverage) == (two.states, two.transitions,
                                                           two.coverage)
    assert {p: (v.actions, v.states_before) for p, v in one.violations.items()} == \
        {p: (v.actions, v.states_before) for p, v in two.violations.items()}
    assert summary(one) == summary(two)


def test_a_spent_time_budget_leaves_the_search_incomplete():
    res = split_search(CONFIGS[1], workers=2, time_budget=0.0, traces=False)
    assert not res.complete and res.stopped == "time budget"


def test_max_states_bounds_each_part():
    cfg = CONFIGS[1]
    res = split_search(cfg, traces=False, bounds=Bounds(max_states=50))
    assert not res.complete and res.stopped == "max states"
    n = len(parts(cfg)[0])
    assert 0 < res.states <= 50 * n


def test_streaming_sinks_are_not_split():
    """A sink that restarts begins a batch again and may pick another alternative."""
    p = load_pipeline(os.path.join(EXAMPLES, "spark-streaming-sink-expiry.yaml"))
    sink = p.config.sinks[0][0] - 1
    assert all(i != sink for i, _, _ in split_points(p.config))


def test_outcomes_of_writers_a_part_made_interchangeable():
    """w1 and w2 differ in the whole but are twins in a part: both assignments are outcomes."""
    got = _renormal(((("committed",), ("failed",)),), [[1, 2]], [[1], [2]])
    assert got == {((("committed",),), (("failed",),)), ((("failed",),), (("committed",),))}
    # a part's classes inside the whole's: the same signature
    assert _renormal(((("a",),), (("b",),)), [[1], [2]], [[1, 2]]) == {((("a",), ("b",)),)}


def test_a_pipeline_with_templates_splits_by_key():
    p = load_pipeline(FLINK)
    todo, total = parts(p.config)
    assert len(todo) == total == 2
    whole = search(p.config, traces=False)
    split = split_search(p.config, workers=2, traces=False)
    assert summary(split)[:3] == summary(whole)[:3]
    assert split.final_states >= whole.final_states


def _explore(*args):
    from click.testing import CliRunner

    from icecheck.cli.main import main
    return CliRunner().invoke(main, ["explore", "--profile", "spark-3.5-mor-snapshot",
                                     "--writers", "3", "--mix", "delete,update", "--retries",
                                     "0", "--json", *args])


def test_cli_split_reports_what_the_whole_search_reports():
    import json
    whole, split = _explore("--engine", "bfs"), _explore("--engine", "bfs", "--split",
                                                         "--workers", "2")
    assert whole.exit_code == split.exit_code == 0, split.output
    a, b = json.loads(whole.output), json.loads(split.output)
    assert [(v["property"], v["length"]) for v in a["violations"]] == \
        [(v["property"], v["length"]) for v in b["violations"]]
    assert a["final_outcomes"] == b["final_outcomes"] and b["complete"]
    assert any("split search: 4 parts" in n for n in b["notes"])
    assert [q["states"] for q in b["part_results"]] and sum(
        q["states"] for q in b["part_results"]) == b["states"]
    from click.testing import CliRunner

    from icecheck.cli.main import main
    text = CliRunner().invoke(main, ["explore", "--engine", "bfs", "--split", "--profile",
                                     "spark-3.5-mor-snapshot", "--writers", "3", "--mix",
                                     "delete,update", "--retries", "0"]).output
    assert "  part w1.1=DELETE, w2.1=DELETE, w3.1=UPDATE#1: " in text


@pytest.mark.parametrize("args", [["--engine", "dfs", "--split"],
                                  ["--engine", "bfs", "--split", "--checkpoint", "ck"]])
def test_cli_split_needs_a_plain_bfs(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = _explore(*args)
    assert res.exit_code == 2
    assert "--split" in res.output and "Traceback" not in res.output


def test_a_part_whose_process_dies_stops_the_search_with_a_message(monkeypatch):
    from icecheck.engines import split
    real = split._search_part

    def dies(part, *args):
        if part.index == 1:
            os._exit(9)                  # as the OOM killer would leave it: no result
        return real(part, *args)
    monkeypatch.setattr(split, "_search_part", dies)
    with pytest.raises(split.PartLost, match=r"part 2 of 4 \(w1.1=DELETE, w2.1=DELETE, "
                                             r"w3.1=UPDATE#1\) ended without a result"):
        split_search(CONFIGS[0], workers=2, traces=False)


def _with_bounds(tmp_path, bounds: str) -> str:
    text = open(FLINK).read()
    path = tmp_path / "split.yaml"
    path.write_text(text + f"bounds: {bounds}\n")
    return str(path)


def test_a_pipeline_asks_for_the_split_in_its_bounds(tmp_path):
    from icecheck.pipelines.check import explore
    split = load_pipeline(_with_bounds(tmp_path, "{split: true}"))
    whole = load_pipeline(FLINK)
    assert split.split and not whole.split
    a, b = explore(whole, details=False), explore(split, details=False)
    assert [(x.property, x.verdict) for x in a.anomalies] == \
        [(x.property, x.verdict) for x in b.anomalies]
    assert a.complete and b.complete
    assert "summed over 2 parts" in b.how and "parts" not in a.how


@pytest.mark.parametrize("bounds, message", [
    ("{split: yes please}", "bounds.split must be true or false, not 'yes please'"),
    ("{split: true, search: sample}", "bounds.split splits the exhaustive search"),
])
def test_a_malformed_split_bound_names_the_file_and_line(tmp_path, bounds, message):
    from icecheck.scenarios.errors import InputError
    path = _with_bounds(tmp_path, bounds)
    with pytest.raises(InputError) as e:
        load_pipeline(path)
    assert message in str(e.value) and "split.yaml" in str(e.value)
    assert e.value.line == len(open(path).read().splitlines())


def test_a_cut_check_of_a_file_with_alternatives_suggests_the_split(tmp_path):
    from icecheck.pipelines.check import explore
    p = load_pipeline(_with_bounds(tmp_path, "{max_states: 100, max_examples: 5}"))
    out = explore(p, details=False)
    assert not out.complete
    assert "or set bounds.split: true (the search split into 2 parts" in out.inconclusive
    split = load_pipeline(_with_bounds(tmp_path, "{max_states: 100, max_examples: 5, "
                                                 "split: true}"))
    out = explore(split, details=False)
    assert ("the next level of 2 of its 2 parts (w1.1=UPSERT; w1.1=UPSERT#1) would pass "
            "bounds.max_states=100") in out.inconclusive
    assert "bounds.split: true" not in out.inconclusive


def test_an_input_error_crosses_from_a_part_process_as_it_was():
    """A part's process sends its errors to the parent pickled (``_part_main``)."""
    import pickle

    from icecheck.scenarios.errors import InputError
    e = pickle.loads(pickle.dumps(InputError("no rule for UPSERT", "the configuration", 3)))
    assert (str(e), e.detail, e.path, e.line) == (
        "the configuration:3: no rule for UPSERT", "no rule for UPSERT", "the configuration", 3)


def test_a_lost_part_under_json_still_prints_a_document(monkeypatch):
    import json
    from icecheck.engines import split
    real = split._search_part

    def dies(part, *args):
        if part.index == 0:
            os._exit(9)
        return real(part, *args)
    monkeypatch.setattr(split, "_search_part", dies)
    res = _explore("--engine", "bfs", "--split", "--workers", "2")
    assert res.exit_code == 1
    doc = json.loads(res.stdout)
    assert doc["complete"] is False and doc["stopped"] == "lost"
    assert "part 1 of 4" in doc["error"] and "Traceback" not in res.output


def test_few_parts_per_core_start_largest_first(monkeypatch):
    """Only the order parts start in: a probe BFS of each ranks them (here their whole sizes
    are 72, 174, 154 and 52 states)."""
    from icecheck.engines import split
    monkeypatch.setattr(split, "PROBE_STATES", 20)
    todo, _ = parts(CONFIGS[0])
    args = (True, True, Bounds(), None, True)
    assert [p.index for p in split._start_order(todo, args, 2)] == [1, 2, 0, 3]
    assert split._start_order(todo, args, 1) == todo          # one at a time
    monkeypatch.setattr(split, "FEW_PARTS", 1)                # many parts per core
    assert split._start_order(todo, args, 2) == todo
    monkeypatch.setattr(split, "PROBE_STATES", 300)           # the first part is smaller
    monkeypatch.setattr(split, "FEW_PARTS", 4)
    assert split._start_order(todo, args, 2) == todo
