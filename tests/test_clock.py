"""Maintenance that depends on time (issue 43, item 2): the logical clock (models/clock.py),
remove_orphan_files (models/orphans.py) and expire_snapshots by age (models/expire.py).

The clock lives in the object store: every object records the tick it was written at, every
snapshot's timestamp is its manifest list's, and the scheduler interleaves ticks with every
writer's steps up to ``ticks``. With no ticks nothing changes (the pinned state counts of
tests/test_state_counts.py and tests/test_pipelines.py hold). Bounded by state counts only.
"""

from __future__ import annotations

import os
import pickle
import textwrap

import pytest
from click.testing import CliRunner
from test_step_memo import _walk

from icecheck.cli.main import main
from icecheck.engines.config import ExploreConfig
from icecheck.models import clock, orphans
from icecheck.models.expire import retained_by_age
from icecheck.models.metadata import Snapshot, TableMetadata
from icecheck.models.store import ObjectStore
from icecheck.models.system import Action, StepError, digest
from icecheck.pipelines.check import EXHAUSTIVE, explore
from icecheck.pipelines.load import load_pipeline
from icecheck.scenarios.format import load_scenario
from icecheck.scenarios.runner import execute_scenario, model_config
from icecheck.traces.execute import model_for

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "slow-backfill-orphan-cleanup.yaml")
TICK = Action(clock.CLOCK, clock.TICK)


# -- the clock in the store -------------------------------------------------------------------
def test_the_store_stamps_what_it_writes_with_the_tick():
    s0 = ObjectStore({"a": 1})
    assert s0.now == 0 and s0.mtime("a") == 0 and not s0.mtimes
    s1 = s0.put_all({"b": 2})
    assert s1 == ObjectStore({"a": 1, "b": 2}) and not s1.mtimes   # tick 0 keeps nothing
    t2 = s1.tick().tick()
    assert t2.now == 2 and t2 != s1 and hash(t2) != hash(s1)
    t3 = t2.put_all({"c": 3}).delete_all(["a", "c"])
    assert (t3.mtime("a"), t3.mtime("b"), t3.mtime("c")) == (0, 0, 2)   # deleted keep theirs
    assert "c" not in t3 and t3.archive()["c"] == 3
    again = pickle.loads(pickle.dumps(t3))
    assert again == t3 and again.now == 2 and again.mtime("c") == 2
    # the same objects at another tick, or written at another tick, are another store
    assert t2.put_all({"c": 3}) != t2.tick().put_all({"c": 3})
    assert t2.put_all({"c": 3}).tick() != t2.tick().put_all({"c": 3})


def _scenario(tmp_path, text: str, name: str = "s.yaml"):
    f = tmp_path / name
    f.write_text(textwrap.dedent(text))
    return load_scenario(str(f))


SLOW_WRITER = """\
    version: 1
    id: slow-writer
    profile: spark-3.5-cow-serializable
    table:
      schema: {id: int, v: string}
    files:
      d1: {rows: [[1, a]]}
    steps:
      - commit: {op: append, add: [d1]}
      - begin: w1
        command: {sql: INSERT, rows: [[2, b]]}
      - write: w1
      - tick: %(ticks)d
      - begin: w2
        command: {sql: REMOVE_ORPHAN_FILES, older_than: %(age)d}
      - commit: w2
      - commit: w1
"""


@pytest.mark.parametrize("ticks,age,gone", [(2, 1, True), (1, 1, False), (2, 2, False),
                                            (3, 2, True)])
def test_orphan_removal_deletes_an_uncommitted_writers_old_files(tmp_path, ticks, age, gone):
    """The slow writer's file was written at tick 0; the clean-up begins at ``ticks`` and
    deletes what is older than ``ticks - age``: the writer commits a file that is gone."""
    sc = _scenario(tmp_path, SLOW_WRITER % {"ticks": ticks, "age": age})
    verdict, state = execute_scenario(sc)
    assert [s.outcome for s in verdict.steps] == ["committed"] * 3
    assert state.store.now == ticks and state.store.mtime("w1-1-d1") == 0
    assert ("w1-1-d1" in state.store.deleted) == gone
    assert verdict.readable == (not gone)
    removal = verdict.steps[1]
    assert removal.message == (orphans.report(["w1-1-d1"]) if gone else "found no orphan file")
    props = {p["property"]: p["message"] for p in verdict.properties}
    assert ("readable" in props) == gone
    if gone:
        assert "as an orphan" in props["readable"] and "w1-1-d1" in props["readable"]


def test_valid_files_are_what_the_loaded_metadata_references(tmp_path):
    """DeleteOrphanFilesSparkAction.validFileIdentDS: every snapshot's manifest list, its
    manifests, their live entries' files, the current metadata file and (the model's metadata
    log) every older metadata version; a file only a DELETED entry names is not valid, nor a
    file an uncommitted writer wrote, nor a newer metadata file."""
    sc = _scenario(tmp_path, """\
        version: 1
        id: valid-files
        table:
          schema: {id: int, v: string}
        files:
          d1: {rows: [[1, a]]}
          d2: {rows: [[2, b]]}
          d3: {rows: [[3, c]]}
        steps:
          - commit: {op: append, add: [d1]}
          - commit: {op: append, add: [d2]}
          - commit: {op: delete_files, delete: [d1]}
          - begin: w1
            op: append
            add: [d3]
          - write: w1
        """)
    _, state = execute_scenario(sc)
    store, meta = state.store, state.metadata
    valid = orphans.valid_files(store, meta, store.archive())
    paths = {sc.files[n].path: n for n in ("d1", "d2", "d3")}
    named = {paths[p] for p in valid if p in paths}
    # d1 is live in the first two snapshots (kept in the metadata), d3 is not committed
    assert named == {"d1", "d2"}
    lists = {s.manifest_list for s in meta.snapshots}
    manifests = {m for s in meta.snapshots for m in store[s.manifest_list].manifests}
    metadata = {p for p, o in store.items() if type(o) is TableMetadata}
    assert lists | manifests <= valid and metadata <= valid
    assert valid == lists | manifests | metadata | {p for p in paths if paths[p] in named}
    # a file only a DELETED entry names is not valid: drop the snapshots that list d1 live
    last = meta.current
    only_last = TableMetadata("vX", meta.version + 1, 2, meta.last_sequence_number,
                              last.snapshot_id, (last,), meta.snapshot_log)
    deleted_only = orphans.valid_files(store, only_last, store.archive())
    assert any(e.file.path == sc.files["d1"].path and not e.is_live
               for m in store[last.manifest_list].manifests for e in store[m].entries)
    assert sc.files["d1"].path not in deleted_only and sc.files["d2"].path in deleted_only
    # a manifest the loaded metadata lists but an expiry deleted fails the read, as Java's does
    gone = store.delete_all([next(iter(store[last.manifest_list].manifests))])
    with pytest.raises(KeyError):
        orphans.valid_files(gone, meta, gone.archive())


def test_listing_is_the_table_location_older_than_the_cut_off():
    s = ObjectStore({"v0.metadata.json": "m", "ext/backfill": "x"}).tick()
    s = s.put_all({"w1-1-d1": "d"}).tick().put_all({"w2-1-d1": "e"})
    assert orphans.listing(s, None) == ()
    assert orphans.listing(s, 0) == ()
    assert orphans.listing(s, 1) == ("v0.metadata.json",)      # ext/: outside the location
    assert orphans.listing(s, 2) == ("v0.metadata.json", "w1-1-d1")
    assert orphans.listing(s, 3) == ("v0.metadata.json", "w1-1-d1", "w2-1-d1")


# -- expire_snapshots by age -------------------------------------------------------------------
def _snap(i: int, parent: int | None) -> Snapshot:
    return Snapshot(i, parent, i, "append", f"ml{i}")


def test_retained_by_age_follows_remove_snapshots():
    """RemoveSnapshots.internalApply: a branch keeps its ancestors while fewer than
    retain_last are kept or they are not older than the cut-off; an unreferenced snapshot is
    kept when not older; without a cut-off every snapshot is older (the count-based EXPIRE)."""
    snaps = tuple(_snap(i, i - 1 if i > 1 else None) for i in (1, 2, 3, 4))
    # 5 forks off 2 and is referenced by nothing; 6 is tagged
    snaps += (_snap(5, 2), _snap(6, 1))
    meta = TableMetadata("m", 6, 2, 6, 4, snaps, (1, 2, 3, 4, 5, 6), (("t", "tag", 6),))
    ts = {1: 0, 2: 1, 3: 1, 4: 3, 5: 2, 6: 0}
    at = lambda s: ts[s.snapshot_id]   # noqa: E731
    assert retained_by_age(meta, 1) == (1, 2, 3, 5)
    assert retained_by_age(meta, 1, None, at) == retained_by_age(meta, 1)
    assert retained_by_age(meta, 1, 2, at) == (1, 2, 3)      # 5 (tick 2) is not older
    assert retained_by_age(meta, 1, 1, at) == (1,)           # 3 and 2 (tick 1) are not older
    assert retained_by_age(meta, 3, 2, at) == (1,)           # 4, 3, 2 kept by count; 5 kept
    assert retained_by_age(meta, 1, 0, at) == ()
    assert retained_by_age(meta, 1, 4, at) == (1, 2, 3, 5)   # everything older: the count


def test_expire_older_than_keeps_snapshots_of_recent_ticks(tmp_path):
    text = """\
        version: 1
        id: expire-by-age
        profile: spark-3.5-cow-serializable
        table:
          schema: {id: int, v: string}
        files:
          d1: {rows: [[1, a]]}
          d2: {rows: [[2, b]]}
          d3: {rows: [[3, c]]}
        steps:
          - commit: {op: append, add: [d1]}
          - tick: 1
          - commit: {op: append, add: [d2]}
          - tick: 1
          - commit: {op: append, add: [d3]}
          - begin: w1
            command: {sql: EXPIRE, %s}
          - commit: w1
        """
    kept = {}
    for name, args in (("age1", "older_than: 1, retain_last: 1"),
                       ("age2", "older_than: 2, retain_last: 1"),
                       ("count", "retain_last: 1"), ("age1-keep3", "older_than: 1, retain_last: 3")):
        _, state = execute_scenario(_scenario(tmp_path, text % args, name + ".yaml"))
        kept[name] = [state.metadata.snapshot_log.index(s.snapshot_id) + 1
                      for s in state.metadata.snapshots]
        assert [clock.snapshot_timestamp(state.store, s) for s in state.metadata.snapshots] \
            == [[0, 1, 2][i - 1] for i in kept[name]]
    assert kept == {"age1": [2, 3], "age2": [1, 2, 3], "count": [3], "age1-keep3": [1, 2, 3]}


# -- the transition system -------------------------------------------------------------------
def test_ticks_are_enabled_within_the_bound_between_attempts_only(tmp_path):
    sc = _scenario(tmp_path, SLOW_WRITER % {"ticks": 2, "age": 1})
    model = model_for_scenario(sc, fuse=True)
    s = model.initial()
    assert TICK in model.actions(s) and str(TICK) == "clock.tick"
    assert Action.parse("clock.tick") == TICK
    s = model.step(s, TICK)
    assert s.store.now == 1
    s = model.step(s, Action("w1", "begin"))
    s = model.step(s, Action("w1", "refresh"))          # fused: inside its attempt now
    assert s.writer("w1").phase == "prepared" and TICK not in model.actions(s)
    with pytest.raises(StepError, match="clock"):
        model.step(s, TICK)
    s = model.step(s, Action("w1", "cas"))
    s = model.step(s, TICK)
    assert s.store.now == 2 and TICK not in model.actions(s)   # the bound


def model_for_scenario(sc, fuse: bool):
    from dataclasses import replace

    from icecheck.models.system import Model
    return Model(replace(model_config(sc), fuse_local_steps=fuse))


def test_no_ticks_leaves_states_and_digests_as_they_were(tmp_path):
    """With ticks 0 no tick is enabled and a state's digest has no clock part: recorded
    traces keep their digests."""
    cfg = load_pipeline(EXAMPLE).config
    from dataclasses import replace
    flat = model_for(replace(cfg, ticks=0))
    s = flat.initial()
    assert TICK not in flat.actions(s)
    ticking = model_for(cfg)
    assert digest(ticking.initial()) == digest(s)
    assert digest(ticking.step(s, TICK)) != digest(s)


# -- searches ----------------------------------------------------------------------------------
def _pipeline(tmp_path, age: int, ticks: int, extra: str = ""):
    text = open(EXAMPLE, encoding="utf-8").read()
    text = text.replace("older_than: 1}", f"older_than: {age}}}").replace(
        "bounds: {ticks: 2}", f"bounds: {{ticks: {ticks}}}") + extra
    f = tmp_path / f"p-{age}-{ticks}.yaml"
    f.write_text(text)
    return load_pipeline(str(f))


def test_the_search_finds_the_incident_at_a_short_older_than_only(tmp_path):
    """The shipped example fails ``readable``; an older_than at least the clock's bound finds
    nothing (no file can be older than tick 0)."""
    found = explore(load_pipeline(EXAMPLE), details=False)
    assert found.how.startswith(EXHAUSTIVE) and found.complete
    assert {(a.property, a.verdict) for a in found.anomalies} == {("readable", "fail")}
    for age, ticks in ((2, 2), (3, 3), (3, 2)):
        clean = explore(_pipeline(tmp_path, age, ticks), details=False)
        assert clean.complete and clean.anomalies == [], (age, ticks)
    # the incident needs a tick between the job's files and the clean-up's start: one more
    # tick than the age (3 ticks for older_than 2)
    late = explore(_pipeline(tmp_path, 2, 3), details=False)
    assert {a.property for a in late.anomalies} == {"readable"}


def test_a_streaming_insert_that_commits_at_once_is_never_orphaned(tmp_path):
    """A job whose files and commit fall in one tick (a fused begin, refresh and swap with no
    tick between) is never older than the cut-off while it is in flight."""
    text = """\
        name: quick writer
        table: {schema: {id: int, v: string}}
        initial_rows: [[1, v0]]
        jobs:
          - name: quick
            profile: spark-3.5-cow-serializable
            program:
              - {sql: INSERT, rows: [[2, "{job}"]]}
          - name: cleanup
            profile: spark-3.5-cow-serializable
            program:
              - {sql: REMOVE_ORPHAN_FILES, older_than: 1}
        schedule:
          - sequence: [quick, cleanup]
        bounds: {ticks: 3}
        """
    f = tmp_path / "quick.yaml"
    f.write_text(textwrap.dedent(text))
    out = explore(load_pipeline(str(f)), details=False)
    assert out.complete and out.anomalies == []


@pytest.mark.parametrize("name,extra", [
    ("example", ""),
    ("expire-by-age", "\n"),
])
def test_memoised_steps_equal_fresh_ones_with_ticks(tmp_path, name, extra):
    """tests/test_step_memo.py's lockstep walk (no memo, identity memo, content memo with
    hash-consing) on configurations whose clock moves: every state equal field for field."""
    if name == "example":
        cfg = load_pipeline(EXAMPLE).config
    else:
        from icecheck.engines.config import _freeze
        programs = [[[{"sql": "INSERT", "rows": [[2, "w1.1"]]}],
                     [{"sql": "INSERT", "rows": [[3, "w1.2"]]}]],
                    [[{"sql": "EXPIRE", "older_than": 1, "retain_last": 1}]],
                    [[{"sql": "REMOVE_ORPHAN_FILES", "older_than": 1}],
                     [{"sql": "UPDATE", "where": "id = 1", "set": {"v": "w3.2"}}]]]
        cfg = ExploreConfig(profile="spark-3.5-cow-serializable", initial_rows=((1, "v0"),),
                            writers=tuple(tuple(tuple(_freeze(c) for c in entry)
                                                for entry in prog) for prog in programs),
                            ticks=3)
    assert _walk(cfg, 1500) > 100


# -- input ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("command,fragment", [
    ("{sql: REMOVE_ORPHAN_FILES}", "REMOVE_ORPHAN_FILES needs older_than"),
    ("{sql: REMOVE_ORPHAN_FILES, older_than: 0}", "older_than must be an integer from 1"),
    ("{sql: REMOVE_ORPHAN_FILES, older_than: true}", "older_than must be an integer from 1"),
    ("{sql: EXPIRE, older_than: 1.5}", "older_than must be an integer from 1"),
    ("{sql: REMOVE_ORPHAN_FILES, older_than: 1, retain_last: 1}", "unknown key"),
])
def test_a_bad_older_than_names_its_line(tmp_path, command, fragment):
    text = open(EXAMPLE, encoding="utf-8").read().replace(
        "{sql: REMOVE_ORPHAN_FILES, older_than: 1}", command)
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    line = text.splitlines().index(next(ln for ln in text.splitlines() if command in ln)) + 1
    r = CliRunner().invoke(main, ["check", str(f)])
    assert r.exit_code == 2, r.output
    assert fragment in r.output and f"bad.yaml:{line}" in r.output, r.output
    assert "Traceback" not in r.output


@pytest.mark.parametrize("bounds", ["{ticks: -1}", "{ticks: 21}", "{ticks: two}",
                                    "{ticks: true}"])
def test_a_bad_tick_bound_names_its_line(tmp_path, bounds):
    text = open(EXAMPLE, encoding="utf-8").read().replace("{ticks: 2}", bounds)
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    line = len(text.rstrip("\n").splitlines())
    r = CliRunner().invoke(main, ["check", str(f)])
    assert r.exit_code == 2 and "bounds.ticks" in r.output, r.output
    assert f"bad.yaml:{line}" in r.output and "Traceback" not in r.output


def test_a_tick_step_past_the_last_writer_step_is_refused(tmp_path):
    f = tmp_path / "late.yaml"
    f.write_text(textwrap.dedent("""\
        version: 1
        id: late-tick
        table: {schema: {id: int, v: string}}
        files: {d1: {rows: [[1, a]]}}
        steps:
          - commit: {op: append, add: [d1]}
          - tick: 1
        """))
    r = CliRunner().invoke(main, ["scenario", "run", str(f)])
    assert r.exit_code == 2 and "late.yaml:7" in r.output and "clock" in r.output, r.output
    f.write_text(f.read_text().replace("tick: 1", "tick: 0"))
    r = CliRunner().invoke(main, ["scenario", "run", str(f)])
    assert r.exit_code == 2 and "tick: N advances" in r.output, r.output


def test_the_docs_quote_what_the_example_prints(tmp_path):
    """docs/pipelines.md, "Maintenance that depends on time": every line it quotes from
    ``icecheck check examples/slow-backfill-orphan-cleanup.yaml`` is in the real output."""
    with open(os.path.join(ROOT, "docs", "pipelines.md"), encoding="utf-8") as f:
        doc = f.read()
    section = doc[doc.index("## Maintenance that depends on time"):]
    block = section[section.index("```\nFAIL"):]
    quoted = [ln for ln in block[4:block.index("\n```", 4)].splitlines() if ln.strip() != "..."]
    assert len(quoted) >= 10
    r = CliRunner().invoke(main, ["check", EXAMPLE, "--reports", str(tmp_path)])
    assert r.exit_code == 1
    for ln in quoted:
        assert ln in r.output, ln
