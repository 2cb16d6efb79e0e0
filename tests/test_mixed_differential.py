"""The mixed random differential's strategy and bookkeeping, without engines (a stand-in
comparison): drawn scenarios parse, mix the engines both ways, stay within what the mixed
target can run (format v2; writers at one isolation level or at two, since the target gives
each command its own writer's level), draw unpartitioned, identity(cat) and
bucket(2, id) tables (one set-up file per partition, commands aimed at either partition), are
the same for one seed, and a disagreement is saved as a runnable scenario file. Running them
on real Spark + PyIceberg is tests/conformance/test_mixed_differential_run.py."""

import os

from icecheck.conformance.compare import AGREE, DISAGREE, Comparison
from icecheck.conformance.mixed_differential import (SHAPES, doc_shape, mixed_scenario_docs,
                                                     run_mixed_differential)
from icecheck.models.profiles import get_profile
from icecheck.scenarios.format import load_scenario
from icecheck.scenarios.runner import execute_scenario, model_config


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
    spark_first, levels = set(), set()
    for sc in seen:
        profiles = {sc.profile_of("w1"), sc.profile_of("w2")}
        engines = {get_profile(p).engine for p in profiles}
        assert engines == {"spark-3.5", "pyiceberg-0.12"}
        levels.add(len({get_profile(p).isolation for p in profiles}))
        assert sc.table.format_version == 2
        spark_first.add(sc.profile_of("w1").startswith("spark"))
    assert spark_first == {True, False}
    assert levels == {1, 2}
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


def test_partitioned_tables_are_drawn_with_a_file_per_partition():
    seen = []
    res = run_mixed_differential(60, 11, compare=_record(seen))
    assert set(res.shapes) == {"unpartitioned", "identity", "bucket"}, res.shapes
    assert sum(res.shapes.values()) == 60
    specs, targeted = set(), set()
    for sc in seen:
        spec = tuple(str(f.transform.kind) + ":" + f.source for f in sc.table.spec.fields)
        specs.add(spec)
        setup = sc.steps[0]
        if not spec:
            assert tuple(sc.table.schema.names) == ("id", "v") and len(sc.files) == 1
            continue
        assert tuple(sc.table.schema.names) == ("id", "cat", "v")
        # one set-up commit of one file per partition, rows in two partitions
        parts = [f.partition for f in setup.operation.add_data]
        assert len(parts) == 2 and len(set(parts)) == 2, parts
        for st in sc.steps[1:]:
            where = getattr(st.command, "where_sql", "")
            if "cat = " in where:
                targeted.add(where.split("cat = ")[1][:3])
    assert specs == {(), ("identity:cat",), ("bucket:id",)}
    assert targeted == {"'a'", "'b'"}              # commands aimed at either partition


def test_same_seed_same_draws_and_other_seeds_differ():
    from hypothesis import HealthCheck, Phase, given, seed, settings

    def draws(s):
        docs = []

        @seed(s)
        @settings(max_examples=30, database=None, deadline=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(mixed_scenario_docs())
        def gen(doc):
            docs.append(doc)
        gen()
        return docs

    first = draws(21)
    assert first == draws(21)
    assert first != draws(22)
    assert {doc_shape(d) for d in first} <= {s.name for s in SHAPES}


def test_drawn_partitioned_scenarios_run_on_the_model():
    outcomes = set()

    def compare(sc):
        verdict, _ = execute_scenario(sc, model_config(sc))
        if not sc.table.spec.is_unpartitioned:
            outcomes.add(verdict.outcome)
        return Comparison(sc.id, sc.path, "random", AGREE)
    res = run_mixed_differential(40, 13, compare=compare)
    assert res.statuses == {AGREE: 40}
    assert {"committed", "validation_failed"} <= outcomes, outcomes


def test_a_third_spark_commit_is_drawn_at_any_point():
    """Since session 19 a third writer (w3, on the Spark writer's profile) may commit an INSERT
    or an expire_snapshots anywhere after the set-up: what the two writers' retries see. The
    drawn scenarios run on the model, and some end with a PyIceberg writer failing on its
    expired starting snapshot."""
    seen, messages = [], set()

    def compare(sc):
        seen.append(sc)
        verdict, _ = execute_scenario(sc, model_config(sc))
        messages.update(s.message for s in verdict.steps if s.message)
        return Comparison(sc.id, sc.path, "random", AGREE)
    run_mixed_differential(120, 17, compare=compare)
    thirds = [sc for sc in seen if "w3" in sc.writer_profiles]
    assert len(thirds) < len(seen)                  # not every scenario has one
    kinds = {st.command.kind for sc in thirds for st in sc.steps
             if getattr(st, "writer", None) == "w3" and getattr(st, "command", None)}
    assert kinds == {"INSERT", "EXPIRE"}, kinds
    for sc in thirds:
        spark = next(w for w in ("w1", "w2") if sc.profile_of(w).startswith("spark"))
        assert sc.profile_of("w3") == sc.profile_of(spark)
        positions = [i for i, st in enumerate(sc.steps) if getattr(st, "writer", None) == "w3"]
        assert positions[0] >= 1 and positions[1] == positions[0] + 1
    assert any(m.startswith("Cannot find starting snapshot") for m in messages), messages
