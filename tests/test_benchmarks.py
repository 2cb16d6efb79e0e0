"""The benchmark baseline and report (benchmarks/): counts and rendering, never timings."""

import os
import pickle

import pytest

from benchmarks import twophase
from benchmarks.run import compute_targets, render_md


def test_two_phase_commit_baseline_has_the_published_state_counts():
    # TLA+ TwoPhase / Stateright's 2pc example: 288 distinct states with 3 resource managers
    assert twophase.bfs(3)["states"] == 288
    r = twophase.bfs(5)
    assert r["states"] == 8832 and r["violations"] == 0   # TCConsistent holds


def test_report_renders_every_section_from_a_document():
    red = {"states": 10, "transitions": 20, "max_depth": 3, "seconds": 1.0,
           "states_per_s": 10.0, "states_per_s_per_core": 10.0, "complete": True,
           "stopped": None, "final_states": 2, "violations": ["isolation"], "allowed": [],
           "shortest": {"isolation": 3}, "baseline_states_per_s": 100.0, "ratio": 0.1,
           "peak_rss_growth_kb": 10, "bytes_per_state": 1024}
    doc = {"machine": "m", "cores": 2, "python": "3.11", "date": "d", "workers": 1,
           "configs": [{"id": "canonical-x", "config": "c 3w", "profile": "p", "workers": 1,
                        "reduced": red, "unreduced": {"states": 50, "transitions": 80,
                                                      "seconds": 2.0, "states_per_s": 25.0,
                                                      "complete": True, "violations": []},
                        "state_reduction": 5.0, "transition_reduction": 4.0,
                        "reduction_is_lower_bound": False}],
           "growth": {"profile": "p", "mix": ["delete"], "retries": 0, "max_states": 10,
                      "cells": [dict(red, writers=2, ops=1, cut=True),
                                dict(red, writers=3, ops=1, cut=False,
                                     unreduced=dict(red, states=58, max_depth=3)),
                                dict(red, writers=4, ops=1, cut=False,
                                     unreduced=dict(red, states=10, max_depth=2,
                                                    complete=False))]},
           "hypothesis": {"config": "c", "profile": "p", "examples": 5, "steps": 50,
                          "new_steps": 20, "seconds": 1.0, "examples_per_s": 5.0,
                          "steps_per_s": 50.0, "baseline_states_per_s": 100.0,
                          "steps_ratio": 0.5},
           "compare": {"before_commit": "a" * 40, "after_commit": "b" * 40,
                       "configs": [{"id": "x", "before": dict(red, ratio=0.05), "after": red,
                                    "same_states": True, "same_verdicts": True,
                                    "speedup": 2.0}]},
           "compiled": {"cython": "3.3.1", "modules": 15, "build_seconds": 60.0,
                        "configs": [{"id": "y", "python": dict(red, ratio=0.08),
                                     "compiled": dict(red, ratio=0.096), "same_states": True,
                                     "same_verdicts": True, "speedup": 1.2}]},
           "corpus": []}
    doc["targets"] = compute_targets(doc)
    ratio_target = [t for t in doc["targets"] if "two-phase" in t["target"]]
    assert ratio_target and ratio_target[0]["met"]
    # the compiled build's ratios are a target line of their own, not met here (0.096)
    compiled_target = [t for t in ratio_target if "compiled build" in t["target"]]
    assert len(compiled_target) == 1 and not compiled_target[0]["met"]
    assert compiled_target[0]["measured"] == "0.096 to 0.096 (the Python source: 0.08 to 0.08)"
    md = render_md(doc)
    assert "## Pure Python and compiled" in md and "Cython 3.3.1" in md
    assert "| y | 10 | True, True | 1.0 | 1.0 | 0.08 | **0.096** | 1.2x |" in md
    assert "**cut**" in md and "| x | 10 | True, True |" in md and "2.0x" in md
    assert "1.0 KiB" in md
    # growth, reduced and unreduced: an exact reduction, a lower bound, none for a cut cell
    assert "(reduced and unreduced)" in md
    assert "| 2 | 1 | 10 | **cut** |" in md and md.count(" - | - | - |") == 1
    assert "| 58 | 3 | 5.80 |" in md and "| 10 (**cut**) | 2 | >= 1.00 |" in md


def test_object_store_put_all_records_the_callers_paths_and_refuses_rewrites():
    """``put_all(objects, paths)`` of only new paths records the caller's very tuple as what the
    store added (a step memo entry's, shared by every replay of it); a path already there
    with other content is refused on either path, and one with the same content is not
    recorded as added."""
    from icecheck.models.store import ObjectStore
    base = ObjectStore({"a": 1})
    paths = ("b", "c")
    s = base.put_all({"b": 2, "c": 3}, paths)
    assert s._added is paths and dict(s) == {"a": 1, "b": 2, "c": 3}
    assert base.put_all({"b": 2})._added == ("b",)
    again = s.put_all({"a": 1, "d": 4}, ("a", "d"))
    assert again._added == ("d",) and dict(again) == {"a": 1, "b": 2, "c": 3, "d": 4}
    with pytest.raises(AssertionError, match="rewritten"):
        s.put_all({"a": 9, "e": 5}, ("a", "e"))


def test_instructions_configurations_include_the_canonical_one_on_a_profile():
    """``benchmarks.instructions --config canonical:PROFILE``: the canonical configuration on
    that profile, bounded by ``--max-states``; a profile that is not canonical is refused
    naming the choices (the measurement itself needs valgrind and is not run here)."""
    from benchmarks.instructions import _entry
    e = _entry("canonical:spark-3.5-mor-snapshot", 123)
    assert (e["profile"], e["max_states"], e["writers"], e["ops"]) == \
        ("spark-3.5-mor-snapshot", 123, 3, 2)
    assert "profiles" not in e and _entry("cow-lww-3w1op-insert")["writers"] == 3
    with pytest.raises(SystemExit, match="not a canonical profile.*spark-3.5-cow-snapshot"):
        _entry("canonical:spark-3.5-nope")
    with pytest.raises(SystemExit, match="no configuration 'nope'"):
        _entry("nope")


def test_object_store_derivation_is_bookkeeping_only():
    """A derived store remembers its base weakly (for incremental fingerprints); equality,
    pickling and the fingerprint ignore it."""
    from icecheck.engines.config import mix_config
    from icecheck.engines.symmetry import Fingerprinter
    from icecheck.models.store import ObjectStore
    from icecheck.traces.execute import model_for

    cfg = mix_config("spark-3.5-mor-serializable", 2, 1, ("delete",), 1)
    model = model_for(cfg)
    s = model.initial()
    path = [s]                       # keeps every base alive: the incremental path is taken
    for _ in range(6):
        acts = model.actions(s)
        if not acts:
            break
        s = model.step(s, acts[0])
        path.append(s)
    store = s.store
    flat = ObjectStore(dict(store._objects), store.deleted)      # no base: a full pass
    assert store._base is not None and store._base() is not None and flat == store
    fp, fresh = Fingerprinter(cfg), Fingerprinter(cfg)
    for p in fp.perms:
        assert fp.store_digest(store, p) == fresh.store_digest(flat, p)
    back = pickle.loads(pickle.dumps(store))
    assert back == store and back._base is None


def test_pipelines_and_tools_sections_render():
    """The pipelines and tools sections (issue 13 item 4) render from the report's JSON."""
    import json
    import os

    from benchmarks.run import SECTIONS, render_md

    assert "pipelines" in SECTIONS and "tools" in SECTIONS
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    doc = json.load(open(os.path.join(root, "reports", "benchmarks.json")))
    doc["pipelines"] = [{"pipeline": "examples/x.yaml", "states": 12, "complete": True,
                         "seconds": 0.1, "anomalies": [{"property": "undelete",
                                                        "status": "known_finding",
                                                        "states_before": 7, "seconds": 0.05,
                                                        "length": 9}]}]
    doc["tools"] = {"commands": [{"command": "icecheck z3 prove-filters", "name": "z3",
                                  "exit": 0, "seconds": 1.5}],
                    "java": {"skipped": "Java 17 is not installed"}}
    md = render_md(doc)
    assert "| examples/x.yaml | 12 | 0.1 | undelete (known_finding): 7 / 0.05 s / 9 |" in md
    assert "| `icecheck z3 prove-filters` | 0 | 1.5 |" in md
    assert "skipped: Java 17 is not installed" in md


def test_instruction_count_benchmark_needs_valgrind_and_a_known_configuration(monkeypatch, capsys):
    import shutil

    import pytest

    from benchmarks import instructions
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert instructions.main([]) == 2
    assert "valgrind is not installed" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="no configuration 'nope'"):
        instructions._entry("nope")
    assert instructions._entry("mor-serializable-3w2op-delete")["writers"] == 3


def test_repeated_runs_report_the_best_ratio_and_the_median_and_refuse_to_differ():
    """A configuration measured several times (``--repeats``): the best run's figures, every
    run's ratio and their median; runs that found different states are an error."""
    import pytest

    from benchmarks.run import _best_of, _median

    def run(ratio, states=10):
        return {"states": states, "transitions": 12, "violations": ["isolation"],
                "allowed": [], "ratio": ratio, "cpu_seconds": 1.0 / ratio}

    got = _best_of([run(0.08), run(0.1), run(0.07), run(0.09)])
    assert got["ratio"] == 0.1 and got["cpu_seconds"] == 10.0
    assert got["ratio_runs"] == [0.08, 0.1, 0.07, 0.09] and got["ratio_median"] == 0.085
    assert _median(got) == "0.085 (4)"
    assert _best_of([run(0.05), run(0.07), run(0.06)])["ratio_median"] == 0.06
    assert _median(_best_of([run(0.05)])) == "-"
    with pytest.raises(RuntimeError, match="differ"):
        _best_of([run(0.1), run(0.1, states=11)], "[x]")


def test_costs_count_the_cold_work_of_a_search_the_same_every_run():
    """The costs section (``count_costs``): step handler runs and property evaluations of one
    search are counts, equal on every run; they are at most the transitions and the states,
    the wrapped methods are restored after the search, and the section renders."""
    from benchmarks.run import SECTIONS, _cfg, count_costs, render_md
    from icecheck.engines.explicit import Expander
    from icecheck.models.system import Model

    apply, judge = Model._apply, Expander._judge
    entry = {"profile": "spark-3.5-cow-serializable", "writers": 3, "ops": 1,
             "mix": ["insert"], "keys": 1, "catalog": "last_writer_wins", "format": 2,
             "retries": 4}
    a = count_costs(_cfg(entry, entry["profile"]))
    assert a == count_costs(_cfg(entry, entry["profile"]))
    assert Model._apply is apply and Expander._judge is judge
    assert a["complete"] and 0 < a["handler_runs"] <= a["transitions"]
    assert 0 < a["evaluations"] <= a["states"]
    assert a["evaluations_per_state"] == round(a["evaluations"] / a["states"], 4)
    assert "costs" in SECTIONS
    import json
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    doc = json.load(open(os.path.join(root, "reports", "benchmarks.json")))
    ratio = next(c["reduced"]["ratio"] for c in doc["configs"]
                 if c["id"] == "cow-lww-3w1op-insert")
    doc["costs"] = [dict(a, id="cow-lww-3w1op-insert", max_states=None),
                    dict(a, id="y", max_states=50, complete=False)]
    md = render_md(doc)
    assert "## Cold work: step handler runs and property evaluations" in md
    assert (f"| cow-lww-3w1op-insert | {a['states']:,} | {a['transitions']:,} | "
            f"{a['handler_runs']:,} | {a['handler_runs_per_transition']} | "
            f"{a['evaluations']:,} | {a['evaluations_per_state']} | {ratio} |") in md
    assert "(first 50: **cut**)" in md and md.endswith("\n")


def test_configs_option_reruns_named_configurations_and_keeps_the_other_rows(tmp_path):
    """``--configs ID``: only that configuration is measured again; every other row of the
    configs section is the previous report's, in the section's order; an unknown id is a
    usage error (exit 2)."""
    import json
    import shutil

    from benchmarks import run
    shutil.copy(os.path.join(run.ROOT, "reports", "benchmarks.json"), tmp_path)
    before = json.loads((tmp_path / "benchmarks.json").read_text())["configs"]
    assert run.main(["--sections", "configs", "--configs", "cow-lww-3w1op-insert",
                     "--repeats", "1", "--out", str(tmp_path)]) == 0
    after = json.loads((tmp_path / "benchmarks.json").read_text())["configs"]
    assert [c["id"] for c in after] == [c["id"] for c in before]
    for a, b in zip(after, before):
        if a["id"] == "cow-lww-3w1op-insert":
            assert a["reduced"]["states"] == 77 and a != b     # measured again
        else:
            assert a == b
    with pytest.raises(SystemExit) as e:
        run.main(["--sections", "configs", "--configs", "no-such-config",
                  "--out", str(tmp_path)])
    assert e.value.code == 2


def test_sections_not_run_again_say_which_run_their_figures_are_from():
    """A run of some ``--sections`` keeps the others' figures and gives the report its own
    date: each kept section says, under its heading, the run it was measured in; a section
    the run measured says nothing; a report from before the dates were kept dates its
    sections by its own date."""
    import json
    import os

    from benchmarks.run import SECTIONS, _section_dates

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    doc = json.load(open(os.path.join(root, "reports", "benchmarks.json")))
    doc.pop("section_dates", None)
    doc["date"] = "2026-01-01 00:00:00"
    dates = _section_dates(doc, ["corpus"], "2026-02-02 00:00:00")
    assert dates["corpus"] == "2026-02-02 00:00:00"
    assert dates["configs"] == "2026-01-01 00:00:00"
    assert set(dates) <= set(SECTIONS)
    # the next run keeps the dates it did not change
    doc["section_dates"], doc["date"] = dates, "2026-02-02 00:00:00"
    later = _section_dates(doc, ["configs"], "2026-03-03 00:00:00")
    assert later["configs"] == "2026-03-03 00:00:00"
    assert later["corpus"] == "2026-02-02 00:00:00"
    doc["section_dates"], doc["date"] = later, "2026-03-03 00:00:00"
    md = render_md(doc)
    lines = md.splitlines()
    corpus = next(i for i, x in enumerate(lines) if x.startswith("## Corpus anomalies"))
    assert lines[corpus + 2] == ("*Not run again by the run of 2026-03-03 00:00:00: these "
                                 "figures are from the run of 2026-02-02 00:00:00.*")
    configs = next(i for i, x in enumerate(lines) if x.startswith("## Pinned configurations"))
    assert not lines[configs + 2].startswith("*Not run again")


def test_spark_bfs_report_says_where_the_wall_time_went():
    """benchmarks/spark_bfs.py: a Spark search's levels (as ``spark_search`` records them)
    summed into the driver's levels, the hand-over level and the later ones beside their
    slowest keeper's CPU, and rendered as a table row per Spark run."""
    from benchmarks.spark_bfs import level_time, markdown
    levels = [(0, 1, "driver", 0.01, {"driver": 0.01}), (1, 3, "driver", 0.02, {"driver": 0.02}),
              (2, 9, "spark", 2.5, {0: 0.2, 1: 0.3}), (3, 20, "spark", 1.0, {0: 0.7, 1: 0.5}),
              (4, 30, "spark", 2.0, {0: 1.2, 1: 1.6})]
    lv = level_time(levels)
    assert lv == {"driver_levels": 2, "driver_s": 0.03, "spark_levels": 3, "handover_depth": 2,
                  "handover_s": 2.5, "handover_slowest_cpu_s": 0.3, "later_s": 3.0,
                  "later_slowest_cpu_s": 2.3, "later_cpu_s": 4.0}
    assert level_time([]) == {"driver_levels": 0, "driver_s": 0, "spark_levels": 0}
    row = {"states": 60, "seconds": 5.6, "states_per_s": 10.7, "per_core_vs_bfs": 0.8,
           "speedup_vs_local1": 1.0, "keeper_cpu_s": 4.5, "load_before": 1, "load_after": 1,
           "keepers": [{"partition": 0, "states": 30, "rebuilt": 2, "verdicts": 5,
                        "cpu_s": 2.1, "peak_rss_mb": 100}]}
    doc = {"cores": 2, "argv": "", "speedup": {"config": "c", "rows": [
        dict(row, engine="bfs (1 process)", per_core_vs_bfs=1.0),
        dict(row, engine="spark-bfs local[1]", levels=lv),
        dict(row, engine="spark-bfs local[2]", levels=level_time(levels[:2]))]}}
    md = markdown(doc)
    assert "| spark-bfs local[1] | 2 | 0.03 | 2 | 2.5 | 0.3 | 2 | 3.0 | 2.3 | 4.0 | 0.7 |" in md
    assert "| spark-bfs local[2] | 2 |" not in md      # no Spark level: no row


# -- benchmarks/object_overhead.py: what typed model classes could give at most -----------------
# a callgrind output file: names compressed ("(n) name" once, "(n)" after), a recursion level
# ("'2"), the same function under two files, call lines (inclusive) after "calls="
_CALLGRIND = """\
# callgrind format
version: 1
events: Ir
fl=(1) /src/Objects/object.c
fn=(1) _PyObject_GenericGetAttrWithDict
10 300
cfl=(2) /src/Objects/dictobject.c
cfn=(2) PyDict_GetItemWithError
calls=4 20
+2 120
cfn=(3) property_descr_get
calls=1 30
+1 5000
cfn=(4) type_getattro
calls=1 30
* 40
fl=(3) /tmp/src/Objects/object.c
fn=(5) PyObject_GenericGetAttr'2
5 100
cfn=(1)
calls=2 10
5 700
cfn=(6) __pyx_getprop_8icecheck_x
calls=1 10
5 900
fn=(7) type_call
20 50
cfn=(8) object_new
calls=3 1
20 60
cfn=(9) py_blake2b_new
calls=1 1
20 400
cfn=(10) _PyObject_Call_Prepend
calls=1 1
20 2000
cfn=(19) _Py_CheckFunctionResult
calls=1 1
20 12
fn=(8)
1 30
fn=(11) _Py_Dealloc
1 10
cfn=(12) tupledealloc
calls=5 1
1 800
cfn=(13) subtype_dealloc
calls=1 1
1 90
fn=(13)
1 40
cfn=(14) PyObject_Free
calls=1 1
1 25
cfn=(16) dict_dealloc
calls=1 1
1 33
fn=(15) _PyEval_EvalFrameDefault
1 700
cfn=(2)
calls=1 1
1 99
fn=(2)
1 999
fn=(17) __pyx_pw_8icecheck_6models_f
1 60
fn=(18) method_vectorcall_O
1 15
fn=(19)
1 12
totals: 20000
"""


def test_object_overhead_reads_the_machinery_from_the_call_graph(tmp_path):
    from benchmarks.object_overhead import call_graph, machinery
    path = tmp_path / "callgrind.out"
    path.write_text(_CALLGRIND)
    own, calls, total = call_graph(str(path))
    assert total == 20_000
    # "'2" dropped; both files' PyObject_GenericGetAttr under one name; names decompressed
    assert own["PyObject_GenericGetAttr"] == 100 and own["_PyObject_GenericGetAttrWithDict"] == 300
    assert calls[("PyObject_GenericGetAttr", "_PyObject_GenericGetAttrWithDict")] == 700
    assert calls[("_Py_Dealloc", "subtype_dealloc")] == 90
    got = machinery(own, calls, total)
    # lookup: own 300 + 100, the dictionary helper 120; not the property's body (5000), a
    # class's lookup (40), a Cython getter (900), nor the call to the kind's own function
    # (700: its own instructions are counted once, as its own)
    assert got["lookup"] == 520
    # construction: own 50 + 30; not object_new's call (its own counted), the constructor of
    # a built-in type (400), the __init__ body (2000) nor the call machinery (12, a call's)
    assert got["construction"] == 80
    # deallocation: own 10 + 40, the memory freed (25) and the instance's dict (33); not the
    # tuples (800)
    assert got["deallocation"] == 108
    # interpreted: the interpreter's own only, not what it calls
    assert got["interpreted"] == 700
    # calls: a compiled function's wrapper, CPython's dispatch and check of a call, own
    assert got["calls"] == 60 + 15 + 12
    bad = tmp_path / "not-callgrind"
    bad.write_text("nothing here\n")
    with pytest.raises(ValueError, match="no totals"):
        call_graph(str(bad))


def test_object_overhead_bound_is_of_the_searchs_own_instructions():
    from benchmarks.object_overhead import markdown, shares, with_ratios
    full = {"total": 8_000_000, "lookup": 1_500_000, "construction": 1_000_000,
            "deallocation": 900_000, "interpreted": 300_000, "calls": 100_000}
    base = {"total": 3_000_000, "lookup": 500_000, "construction": 500_000,
            "deallocation": 400_000, "interpreted": 300_000, "calls": 200_000}
    s = shares(full, base)       # 5 M of the search's own: 20% + 10% + 10% + 0% + 0%
    assert s == {"instructions": 5_000_000, "lookup": 0.2, "construction": 0.1,
                 "deallocation": 0.1, "interpreted": 0.0, "calls": 0.0, "sum": 0.4,
                 "at_most": 1.667}
    rows = with_ratios([{"id": "canonical-a", "states": 10, "max_states": 10, **s},
                        {"id": "canonical-b", "states": 10, "max_states": 10, **s},
                        {"id": "canonical-c", "states": 10, "max_states": 10, **s}],
                       {"canonical-a": {"ratio": 0.05}, "canonical-b": {"ratio": 0.07}})
    assert rows[0]["ratio_at_most"] == 0.0834 and rows[0]["reaches_target"] is False
    # 0.05 -> 0.1 needs 2x: 1 / (1 - x * 0.4) = 2, x = 1.25: more than all of it
    assert rows[0]["must_remove"] == 1.25
    assert rows[1]["ratio_at_most"] == 0.1167 and rows[1]["reaches_target"] is True
    assert rows[1]["must_remove"] == 0.75          # 1 / (1 - 0.4 x) = 0.1 / 0.07
    assert "compiled_ratio" not in rows[2]
    rows[1]["max_states"] = 0
    md = markdown({"machine": "m", "python": "Python 3.11", "date": "d", "rows": rows})
    assert "| canonical-a | 10 (bound 10) | 0.01 G | 20.0% | 10.0% | 10.0% | 0.0% | 0.0% | " \
           "40.0% | 1.667x | 0.05 | 0.0834 (below 0.1) | 125% | - |" in md
    assert "| canonical-b | 10 (whole search) |" in md
    assert "Below the target even at the bound: canonical-a." in md


def test_object_overhead_reads_kept_callgrind_files_of_the_same_run_only(tmp_path,
                                                                        monkeypatch):
    import benchmarks.object_overhead as oo
    runs = []

    def fake(entry, run, out):
        runs.append((entry["max_states"], run))
        with open(out, "w") as f:       # the search: 20,000 instructions; the warm-up: 10,000
            f.write(_CALLGRIND if run else _CALLGRIND.replace("totals: 20000",
                                                              "totals: 10000"))
        return '{"states": 7, "violations": []}'

    monkeypatch.setattr(oo, "_callgrind", fake)
    say = []
    first = oo.measure("spark-3.5-cow-snapshot", 100, "build-1", str(tmp_path), say.append)
    assert runs == [(100, True), (100, False)] and first["states"] == 7
    assert first["instructions"] == 10_000 and first["lookup"] == 0.0
    assert sorted(os.listdir(tmp_path)) == [
        "canonical-cow-snapshot-100.base.callgrind", "canonical-cow-snapshot-100.json",
        "canonical-cow-snapshot-100.search.callgrind"]
    again = oo.measure("spark-3.5-cow-snapshot", 100, "build-1", str(tmp_path), say.append)
    assert runs == [(100, True), (100, False)] and again == first     # read, not run
    assert "the callgrind files of" in say[-1]
    oo.measure("spark-3.5-cow-snapshot", 100, "build-2", str(tmp_path), say.append)
    assert len(runs) == 4                    # another compiled build: run again
    oo.measure("spark-3.5-cow-snapshot", 0, "build-2", str(tmp_path), say.append)
    assert runs[-2:] == [(0, True), (0, False)]   # the whole search is another run
    assert "canonical-cow-snapshot.json" in os.listdir(tmp_path)
    runs.clear()
    oo.measure("spark-3.5-cow-snapshot", 100, "build-2", None, say.append)
    assert len(runs) == 2 and "canonical-cow-snapshot-100.json" in os.listdir(tmp_path)


def test_object_overhead_build_id_ignores_when_it_was_built():
    from benchmarks.object_overhead import build_id
    m = {"python": "cp311", "cython": "3.3.1", "directives": {}, "built": "then",
         "seconds": 1.0, "modules": {"a": {"file": "a.so", "sources": {"a.py": "x"}}}}
    assert build_id(m) == build_id(dict(m, built="now", seconds=2.0))
    assert build_id(m) != build_id(dict(m, modules={"a": {"sources": {"a.py": "y"}}}))


def test_object_overhead_keeps_the_rows_of_configurations_not_run_now(tmp_path):
    import json
    from benchmarks.object_overhead import kept
    path = tmp_path / "object-overhead.json"
    assert kept([{"id": "canonical-mor-snapshot", "new": True}], str(path)) == [
        {"id": "canonical-mor-snapshot", "new": True}]            # no report yet
    path.write_text(json.dumps({"rows": [{"id": "canonical-cow-snapshot"},
                                         {"id": "canonical-mor-snapshot", "new": False}]}))
    got = kept([{"id": "canonical-mor-snapshot", "new": True},
                {"id": "canonical-mor-serializable"}], str(path))
    # this run's row replaces the old one; the canonical profiles' order
    assert got == [{"id": "canonical-mor-serializable"},
                   {"id": "canonical-mor-snapshot", "new": True},
                   {"id": "canonical-cow-snapshot"}]


def test_object_overhead_refuses_unknown_profiles(capsys):
    from benchmarks.object_overhead import main
    assert main(["--configs", "spark-3.5-nope"]) == 2
    assert "--configs: unknown canonical profile 'spark-3.5-nope'" in capsys.readouterr().err
    assert main(["--max-states", "-1"]) == 2     # (0 is the whole search: not run here)


def test_object_overhead_counts_attribute_reads_by_class():
    from benchmarks.object_overhead import extension_types, markdown, reads
    assert {"models.system.Model", "engines.explicit.Expander",
            "engines.symmetry.Fingerprinter"} <= extension_types()
    got = reads("spark-3.5-cow-snapshot", 300, top=40, log=lambda m: None)
    # (the search stops at the end of the last BFS level within the bound)
    assert got["id"] == "canonical-cow-snapshot" and 0 < got["states"] <= 300
    by = {c["class"]: c for c in got["classes"]}
    # the writers' states are read by the model, never by themselves; the model is an
    # extension type in the compiled build, read mostly by its own methods
    assert by["models.system.WriterState"]["reads"] > 0
    assert by["models.system.WriterState"]["extension_type"] is False
    assert by["models.system.Model"]["extension_type"] is True
    assert by["models.system.Model"]["on_self"] > 0.5
    assert got["reads"] >= sum(c["reads"] for c in got["classes"])
    assert 0 < got["extension_types"] < 1
    md = markdown({"machine": "m", "python": "Python 3.11", "date": "d", "rows": [],
                   "reads": [got]})
    assert "## Whose attributes are read" in md
    assert f"**canonical-cow-snapshot**, {got['states']:,} states (bound 300)" in md
    assert "| models.system.Model | " in md and " | yes |" in md


def test_object_overhead_refuses_negative_reads(capsys):
    from benchmarks.object_overhead import main
    assert main(["--reads", "-1"]) == 2
    assert "--reads: at least 0" in capsys.readouterr().err
