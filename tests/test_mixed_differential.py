"""The mixed random differential's strategy and bookkeeping, without engines (a stand-in
comparison): drawn scenarios parse, mix the engines both ways, stay within what the mixed
target can run (format v2, one isolation level), are the same for one seed, and a disagreement
is saved as a runnable scenario file. Running them on real Spark + PyIceberg is
tests/conformance/test_mixed_differential_run.py."""

import os

from icecheck.conformance.compare import AGREE, DISAGREE, Comparison
from icecheck.conformance.mixed_differential import run_mixed_differential
from icecheck.models.profiles import get_profile
from icecheck.scenarios.format import load_scenario


def _record(seen, status=AGREE):
    def compare(sc):
        seen.append(sc)
        c = Comparison(sc.id, sc.path, "random", status)
        if status == DISAGREE:
            c.differences = ["w1: outcome: model noop, pyiceberg committed"]
        return c
    return compare


def test_drawn_scenarios_are_mixed_and_runnable():
    seen = []
    res = run_mixed_differential(40, 3, compare=_record(seen))
    assert res.statuses == {AGREE: 40} and res.compared == 40
    spark_first = set()
    for sc in seen:
        profiles = {sc.profile_of("w1"), sc.profile_of("w2")}
        engines = {get_profile(p).engine for p in profiles}
        assert engines == {"spark-3.5", "pyiceberg-0.12"}
        assert len({get_profile(p).isolation for p in profiles}) == 1
        assert sc.table.format_version == 2
        spark_first.add(sc.profile_of("w1").startswith("spark"))
    assert spark_first == {True, False}
    again = []
    run_mixed_differential(40, 3, compare=_record(again))
    assert [s.steps for s in again] == [s.steps for s in seen]     # one seed, one draw


def test_a_disagreement_is_saved_as_a_scenario(tmp_path):
    seen = []
    res = run_mixed_differential(2, 5, compare=_record(seen, DISAGREE), save_dir=str(tmp_path))
    assert res.statuses == {DISAGREE: 2} and len(res.saved) == 2
    text = open(res.saved[0]).read()
    assert text.startswith("# icecheck conform --target mixed --random (seed 5): w1: outcome")
    sc = load_scenario(res.saved[0])
    assert sc.writer_profiles and [s.kind for s in sc.steps] == [s.kind for s in seen[0].steps]
    assert sorted(os.listdir(tmp_path)) == ["mixed-disagreement-1.yaml",
                                            "mixed-disagreement-2.yaml"]
