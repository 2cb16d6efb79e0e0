"""Mixed engines in one exploration: each writer plans with its own profile (a Spark job and
a client that validates nothing on one table), the trace records the profiles, old traces
(no ``writer_profiles``) replay as before, symmetry never swaps writers on different engines,
and z3 refuses a mixed configuration with a clear message."""

from dataclasses import replace

import pytest

from icecheck.engines.config import ExploreConfig, build_model_config, mix_config
from icecheck.engines.explicit import search
from icecheck.engines.symmetry import symmetry_classes
from icecheck.scenarios.errors import InputError

SPARK = "spark-3.5-cow-serializable"


def _two_updates(writer_profiles=()):
    cfg = mix_config(SPARK, writers=2, ops_per_writer=1, mix=("update",), keys=1)
    return replace(cfg, writer_profiles=tuple(writer_profiles))


def _found(cfg):
    res = search(cfg, engine="bfs", traces=False)
    return set(res.violations) | set(res.allowed), res


def test_each_writer_plans_with_its_own_profile():
    spark_only, _ = _found(_two_updates())
    naive_only, _ = _found(replace(_two_updates(), profile="no-validation"))
    mixed, res = _found(_two_updates(("", "no-validation")))
    assert spark_only == set()            # Spark's validations stop every lost update
    assert naive_only                     # a client that validates nothing loses one
    assert mixed and mixed <= naive_only  # one naive writer beside Spark is enough
    # judged under the strictest of the writers' expectations: what the naive client may do
    # alone is a must-hold violation once a Spark job's rows are at stake
    assert set(res.violations) == mixed
    model = build_model_config(_two_updates(("", "no-validation")))
    assert model.planner.writer_profiles["w2"].name == "no-validation"
    assert "w1" not in model.planner.writer_profiles


def test_symmetry_keeps_writers_on_different_engines_apart():
    same = _two_updates()
    mixed = _two_updates(("", "no-validation"))
    assert symmetry_classes(same) == [[1, 2]]
    assert symmetry_classes(mixed) == [[1], [2]]
    with_sym = search(mixed, engine="bfs", symmetry=True, traces=False)
    without = search(mixed, engine="bfs", symmetry=False, traces=False)
    assert set(with_sym.violations) == set(without.violations) != set()
    assert with_sym.states == without.states  # nothing to fold: the writers differ


def test_trace_format_records_profiles_and_old_traces_still_load():
    mixed = _two_updates(("", "pyiceberg-0.12-serializable"))
    doc = mixed.as_json()
    assert doc["writer_profiles"] == ["", "pyiceberg-0.12-serializable"]
    back = ExploreConfig.from_json(doc)
    assert back == mixed and back.mixed and back.profile_of(2) == "pyiceberg-0.12-serializable"
    assert back.judged_profiles == tuple(sorted((SPARK, "pyiceberg-0.12-serializable")))
    old = _two_updates().as_json()
    assert "writer_profiles" not in old   # single-profile configurations keep their old form
    assert not ExploreConfig.from_json(old).mixed


@pytest.mark.parametrize("bad, message", [
    (["nope"], "nope"),
    (["", "", "x"], "writer_profiles names 3 profiles for 2 writers"),
    ("spark", "writer_profiles must be a list"),
])
def test_bad_writer_profiles_are_input_errors(bad, message):
    doc = _two_updates().as_json()
    doc["writer_profiles"] = bad
    with pytest.raises(InputError, match=message):
        ExploreConfig.from_json(doc)


def test_z3_refuses_mixed_profiles():
    from icecheck.engines.z3_engine import Z3Unsupported, z3_search
    with pytest.raises(Z3Unsupported, match="mixes profiles"):
        z3_search(_two_updates(("", "no-validation")), depth=4)


def test_hypothesis_explores_a_mixed_configuration():
    from icecheck.engines.hypothesis_engine import explore
    res = explore(_two_updates(("", "no-validation")), max_examples=200, seed=1)
    found = {f.property for f in res.findings}
    assert found and found <= set(search(_two_updates(("", "no-validation")), engine="bfs",
                                         traces=False).violations), "200 derandomised runs of two racing UPDATEs find the naive writer's loss"


def test_canonical_traces_keep_each_writers_profile():
    from icecheck.traces.canonical import rename_writers
    cfg = _two_updates(("", "no-validation"))
    renamed, _ = rename_writers(cfg, [], ["w2", "w1"])
    assert renamed.profile_of(1) == "no-validation" and renamed.profile_of(2) == SPARK
    res = search(cfg, engine="bfs", traces=True)
    for v in res.violations.values():
        got = ExploreConfig.from_json(v.trace["config"])
        assert "no-validation" in {got.profile_of(i) for i in range(1, len(got.writers) + 1)}


def test_explorer_session_walks_and_judges_a_mixed_trace(tmp_path):
    """The explorer loads a mixed-engine trace from disk and judges its end state under the
    strictest of its writers' expectations (the naive writer's loss is a must-hold failure)."""
    import json
    from icecheck.explorer.session import Session
    res = search(_two_updates(("", "no-validation")), engine="bfs", traces=True)
    prop, v = sorted(res.violations.items())[0]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(v.trace))
    s = Session.from_trace(str(path), at=None)
    assert s.config.mixed
    statuses = {x.name: [vv.status for vv in x.violations] for x in s.properties()}
    assert "must_hold" in statuses[prop]


def test_explore_cli_writer_profile():
    from click.testing import CliRunner
    from icecheck.cli.main import main
    args = ["explore", "--engine", "bfs", "--profile", SPARK, "--writers", "2", "--mix", "update"]
    assert CliRunner().invoke(main, args).exit_code == 0
    r = CliRunner().invoke(main, args + ["--writer-profile", "w2=no-validation"])
    assert r.exit_code == 1 and "w2 no-validation" in r.output
    r = CliRunner().invoke(main, args + ["--writer-profile", "w2=nope"])
    assert r.exit_code == 2 and "--writer-profile" in r.output


def test_a_mixed_run_of_different_isolation_levels_says_so():
    """A Spark serializable job beside a PyIceberg snapshot script: both engines read a
    command's isolation level from the table's properties, so the run notes it; one level for
    both writers, no note."""
    from dataclasses import replace

    from icecheck.engines.config import mix_config
    from icecheck.engines.explicit import Bounds, search

    base = mix_config("spark-3.5-mor-serializable", 2, 1, ("delete",), keys=1)
    mixed = replace(base, writer_profiles=("pyiceberg-0.12-snapshot",))
    note = mixed.isolation_note
    assert note and "serializable: w2; snapshot: w1" in note
    r = search(mixed, engine="bfs", workers=1, traces=False, bounds=Bounds(max_states=5))
    assert note in r.notes
    same = replace(base, writer_profiles=("pyiceberg-0.12-serializable",))
    assert same.isolation_note is None
    assert base.isolation_note is None


def test_the_isolation_note_names_the_properties_writers_share():
    """Writers at different levels share a property when their commands read it: a Spark
    DELETE and a PyIceberg file-level overwrite both read write.delete.isolation-level; a Spark
    DELETE and a PyIceberg upsert (an overwrite: write.update.isolation-level) do not."""
    from dataclasses import replace

    from icecheck.engines.config import mix_config

    shared = replace(mix_config("spark-3.5-mor-serializable", 2, 1, ("delete",), keys=1),
                     writer_profiles=("pyiceberg-0.12-snapshot",))
    assert "write.delete.isolation-level" in shared.isolation_note
    base = mix_config("spark-3.5-mor-serializable", 2, 1, ("delete", "merge"), keys=1)
    progs = (((("sql", "DELETE"), ("where", "id = 1")),),), \
        (((("sql", "MERGE"), ("on", ("id",)), ("rows", ((1, "x"),))),),)
    apart = replace(base, writers=progs, writer_profiles=("", "pyiceberg-0.12-snapshot"))
    note = apart.isolation_note
    assert note and "read different table properties" in note, note


def test_a_mixed_violation_is_judged_by_the_writer_that_committed_last():
    """A merge-on-read DELETE at snapshot isolation beside an UPDATE at serializable (a table
    whose write.delete.isolation-level is snapshot and write.update.isolation-level is
    serializable): the DELETE commits after the UPDATE and the updated row survives it, as on
    real Spark (tests/conformance/test_spark_target.py). Only the DELETE's validation saw the
    UPDATE's commit, so its profile judges it: the snapshot profile's known finding, as in a
    run of that profile alone, and the reason says whose commit decided. Without the commit
    order (or with the UPDATE last) the strictest expectation holds, and its reason names the
    weaker profile's own verdict."""
    from icecheck.properties import expectation
    from icecheck.properties.expectations import last_committer

    cfg = replace(mix_config("spark-3.5-mor-snapshot", 2, 1, ("delete", "update"), keys=1),
                  writer_profiles=("", "spark-3.5-mor-serializable"))
    res = search(cfg, engine="bfs", traces=True)
    assert not res.failed_new, res.as_json()["violations"]
    v = res.violations["undelete"]
    assert v.unexpected and v.known
    assert v.trace["expectation"]["reason"].startswith(
        "Judged under spark-3.5-mor-snapshot (w1), whose commit came last among the writers it "
        "involves: Vanlightly 2024")
    alone = search(mix_config("spark-3.5-mor-snapshot", 2, 1, ("delete", "update"), keys=1),
                   engine="bfs", traces=True)
    assert alone.violations["undelete"].known
    # the same violation judged without the order, or as if the UPDATE had come last
    from icecheck.properties import evaluate
    from icecheck.traces.execute import model_for, run_actions
    model = model_for(cfg)
    undelete = next(x for x in evaluate(model, run_actions(model, v.actions).final)
                    if x.property == "undelete")
    profiles = cfg.judged_profiles
    assert last_committer(undelete, {"w2.1": 1, "w1.1": 2}) == "w1"
    e = expectation(profiles, "cas", 2, undelete, cfg.writer_profile)
    assert e.status == "must_hold"
    assert ("Judged under the stricter writer's promise (spark-3.5-mor-serializable); under "
            "spark-3.5-mor-snapshot alone (w1) it is a recorded known finding: Vanlightly 2024"
            in e.reason)
    e = expectation(profiles, "cas", 2, undelete, cfg.writer_profile, {"w1.1": 1, "w2.1": 2})
    assert e.status == "must_hold"


def test_a_naive_last_committer_does_not_lower_the_verdict():
    """A client that validates nothing (isolation none) committing last over a Spark job's
    update is still judged by the stricter promise (the Spark job's rows are at stake), and
    the reason says what the naive profile alone would say."""
    res = search(_two_updates(("", "no-validation")), engine="bfs", traces=True)
    assert res.failed_new
    v = res.violations["isolation"]       # w2 (naive) overwrote w1's update
    assert v.unexpected and not v.known
    assert "under no-validation alone (w2) it is allowed" in v.trace["explanation"]
    assert "Judged under the stricter writer's promise (spark-3.5-cow-serializable)" \
        in v.trace["explanation"]
    # a must-hold verdict of every involved profile keeps the plain reason
    from icecheck.properties import expectation
    from icecheck.properties.expectations import DEFAULT_REASON
    from icecheck.properties.violation import VIOLATION, Violation
    lost = Violation("lost_write", "x", VIOLATION, {})
    e = expectation(("spark-3.5-mor-serializable", "spark-3.5-cow-serializable"), "cas", 2, lost)
    assert e.status == "must_hold" and e.reason == DEFAULT_REASON


def test_the_mode_note_names_a_command_run_in_two_write_modes():
    """Spark reads a row-level command's write mode from write.delete|update|merge.mode: a
    copy-on-write DELETE beside a merge-on-read DELETE cannot share a real table, and the run
    says so (naming the property and who runs which mode); a copy-on-write UPDATE beside a
    merge-on-read DELETE can (write.delete.mode=merge-on-read, write.update.mode=
    copy-on-write), and gets no note; nor does a PyIceberg script, which reads no mode."""
    from icecheck.engines.explicit import Bounds

    deletes = replace(mix_config("spark-3.5-mor-serializable", 2, 1, ("delete",), keys=1),
                      writer_profiles=("", "spark-3.5-cow-serializable"))
    note = deletes.mode_note
    assert note == ("the writers' profiles run one kind of command in different write modes "
                    "(write.delete.mode: copy-on-write by w2, merge-on-read by w1): on a real "
                    "table they would read one mode from that property; each violation is judged "
                    "by the writer whose commit came last")
    r = search(deletes, engine="bfs", workers=1, traces=False, bounds=Bounds(max_states=5))
    assert note in r.notes
    updates = mix_config("spark-3.5-mor-serializable", 2, 1, ("update",), keys=1)
    apart = replace(deletes, writers=(deletes.writers[0], updates.writers[1]))
    assert apart.mixed and apart.mode_note is None
    script = replace(mix_config("spark-3.5-mor-serializable", 2, 1, ("delete",), keys=1),
                     writer_profiles=("", "pyiceberg-0.12-serializable"))
    assert script.mode_note is None


def test_table_settings_give_each_property_the_level_of_the_writers_reading_it():
    """One real table holds writers at different levels when no table property is asked for
    two values (``profiles.table_settings``, used by the spark and mixed conformance targets):
    a Spark DELETE reads write.delete.*, a PyIceberg upsert write.update.isolation-level; a
    PyIceberg delete or file-level overwrite reads write.delete.isolation-level too, so beside
    a Spark DELETE at another level there is no one table; an append reads no level."""
    from icecheck.models.profiles import get_profile, table_settings
    spark = get_profile("spark-3.5-mor-snapshot")
    py = get_profile("pyiceberg-0.12-serializable")
    props, why = table_settings([("w1", spark, "DELETE"), ("w2", py, "MERGE"),
                                 ("w2", py, "INSERT"), ("w1", spark, "INSERT")])
    assert why is None
    assert props == {"write.delete.isolation-level": "snapshot",
                     "write.delete.mode": "merge-on-read",
                     "write.update.isolation-level": "serializable"}
    for command in ("DELETE", "OVERWRITE_FILES"):
        props, why = table_settings([("w1", spark, "DELETE"), ("w2", py, command)])
        assert props == {}
        assert why == ("one table has one write.delete.isolation-level, and the writers ask "
                       f"for serializable (w2 {command} (pyiceberg-0.12-serializable)) and "
                       "snapshot (w1 DELETE (spark-3.5-mor-snapshot))")
    # a writer running a command twice is named once; a command its profile lacks counts nothing
    props, why = table_settings([("w1", spark, "DELETE"), ("w1", spark, "DELETE"),
                                 ("w2", py, "UPSERT")])
    assert why is None and set(props) == {"write.delete.isolation-level", "write.delete.mode"}


def test_the_mixed_target_runs_writers_at_different_levels_on_one_table(tmp_path):
    """The mixed conformance target used to skip every run whose writers' levels differed; now
    only one that needs a property at two values (no engine is started here)."""
    from icecheck.conformance import mixed_target as mt
    from icecheck.conformance.compare import scenario_on_model
    from icecheck.conformance.java_runner import build_plan
    from icecheck.scenarios.format import load_scenario

    def reason(py_command):
        path = tmp_path / "split-levels.yaml"
        path.write_text(f"""
version: 1
id: split-levels
profile: spark-3.5-mor-snapshot
writer_profiles: {{w2: pyiceberg-0.12-serializable}}
table: {{schema: {{id: int, v: string}}}}
files: {{d1: {{rows: [[1, v0], [2, v0]]}}}}
steps:
  - commit: {{op: append, add: [d1]}}
  - begin: w1
    command: {{sql: DELETE, where: "id = 1"}}
  - begin: w2
    command: {py_command}
  - commit: w2
  - commit: w1
""")
        run = scenario_on_model(load_scenario(str(path)))
        plan = build_plan(run.config, run.actions, run_read_failures=True)
        intents, _ = mt._intents_and_rows(run.config, run.actions)
        return mt._skip_reason(run, plan, intents), mt._settings(run, plan, intents)[0]

    why, props = reason("{sql: MERGE, on: [id], rows: [[2, w2]]}")
    assert why is None
    assert props["write.delete.isolation-level"] == "snapshot"
    assert props["write.update.isolation-level"] == "serializable"
    why, props = reason("{sql: DELETE, where: \"id = 2\"}")
    assert props == {} and why.startswith("one table has one write.delete.isolation-level")
