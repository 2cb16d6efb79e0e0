"""The transition system itself: determinism, catalogs, faults, crashes, and the soundness of
fusing writer-local steps."""

import subprocess
import sys
from dataclasses import replace

import pytest

from icecheck.engines.config import build_model_config, mix_config
from icecheck.models import catalog as cat
from icecheck.models.metadata import snapshots_by_id
from icecheck.models.reads import read_rows
from icecheck.models.system import (COMMIT_FAILED, COMMIT_UNKNOWN, COMMITTED, CRASHED, Action,
                                    Model, StepError, digest)

UNDELETE = ["w1.begin#1", "w2.begin#0", "w1.refresh", "w1.cas", "w2.refresh", "w2.cas"]


def run(model, actions):
    state = model.initial()
    for a in actions:
        state = model.step(state, Action.parse(a))
    return state


def rows(model, state):
    return sorted(r.values for r in read_rows(state.store, state.metadata.current,
                                              model.table.schema.names))


def outcomes(state):
    return {w.name: [h.outcome for h in w.history] for w in state.writers}


def test_actions_are_small_serializable_values():
    a = Action.parse("w2.begin#3")
    assert (a.writer, a.kind, a.choice) == ("w2", "begin", 3)
    assert str(a) == "w2.begin#3" and Action.parse(str(a)) == a
    with pytest.raises(ValueError):
        Action.parse("w2.jump")


def test_step_rejects_disabled_actions():
    model = Model(build_model_config(mix_config("spark-3.5-mor-snapshot")))
    with pytest.raises(StepError, match="not enabled"):
        model.step(model.initial(), Action.parse("w1.cas"))


def test_states_are_immutable_and_step_is_pure():
    model = Model(build_model_config(mix_config("spark-3.5-mor-snapshot")))
    s0 = model.initial()
    d0 = digest(s0)
    s1 = model.step(s0, Action.parse("w1.begin#1"))
    assert digest(s0) == d0 and s1 != s0
    assert model.step(s0, Action.parse("w1.begin#1")) == s1
    assert hash(model.step(s0, Action.parse("w1.begin#1"))) == hash(s1)


DIGEST_SCRIPT = """
from icecheck.engines.config import build_model_config, mix_config
from icecheck.models.system import Model, Action, digest
m = Model(build_model_config(mix_config('spark-3.5-mor-snapshot')))
s = m.initial()
for a in %r:
    s = m.step(s, Action.parse(a))
print(digest(s))
"""


def test_digests_do_not_depend_on_the_hash_seed():
    outs = set()
    for seed in ("1", "2", "3"):
        proc = subprocess.run([sys.executable, "-c", DIGEST_SCRIPT % UNDELETE], text=True,
                              capture_output=True, env={"PYTHONHASHSEED": seed, "PATH": ""},
                              check=True)
        outs.add(proc.stdout.strip())
    assert len(outs) == 1


def test_cas_catalog_rejects_a_stale_swap_and_the_writer_retries():
    cfg = mix_config("spark-3.5-cow-serializable", mix=("insert",))
    model = Model(build_model_config(cfg))
    state = run(model, ["w1.begin", "w2.begin", "w1.refresh", "w2.refresh", "w1.cas", "w2.cas"])
    w2 = state.writer("w2")
    assert w2.phase == "written" and w2.attempt == 1  # lost the race, will refresh again
    state = run(model, ["w1.begin", "w2.begin", "w1.refresh", "w2.refresh", "w1.cas", "w2.cas",
                        "w2.refresh", "w2.cas"])
    assert outcomes(state) == {"w1": [COMMITTED], "w2": [COMMITTED]}
    assert state.writer("w2").history[0].attempts == 2
    assert rows(model, state) == [(0, "v0"), (1, "v0"), (101, "w1.1"), (201, "w2.1")]


def test_a_retried_snapshot_keeps_its_id_and_writes_new_files():
    """Java's SnapshotProducer caches snapshotId() across the attempts of commit() (and names
    each attempt's manifest list snap-<id>-<attempt>-<uuid>.avro); PyIceberg's
    _refresh_for_retry keeps _snapshot_id. The lost attempt's metadata file lists another
    version of the snapshot (another parent and sequence number) under the same id, which the
    lookups of a snapshot off the current metadata pass over (snapshots_by_id). Files are
    named after the version the attempt writes: the commit made after a lost race writes
    what the same commit made at once writes."""
    cfg = mix_config("spark-3.5-cow-serializable", mix=("insert",))
    model = Model(build_model_config(cfg))
    lost = run(model, ["w1.begin", "w2.begin", "w1.refresh", "w2.refresh", "w1.cas", "w2.cas"])
    assert lost.writer("w2").attempt == 1
    state = run(model, ["w1.begin", "w2.begin", "w1.refresh", "w2.refresh", "w1.cas", "w2.cas",
                        "w2.refresh", "w2.cas"])
    rec = state.writer("w2").history[0]
    assert (rec.outcome, rec.attempts, rec.snapshot_id) == (COMMITTED, 2, 2001)
    committed = state.metadata.snapshot(2001)
    assert committed.manifest_list == "snap-2001-v3.avro" and committed.parent_id == 1001
    first = lost.store["v2-w2-1.metadata.json"].snapshot(2001)      # the attempt that lost
    assert first.manifest_list == "snap-2001-v2.avro" and first.parent_id == 1
    assert state.metadata.path == "v3-w2-1.metadata.json"
    assert snapshots_by_id(state.store.archive())[2001] == committed
    at_once = run(model, ["w1.begin", "w2.begin", "w1.refresh", "w1.cas", "w2.refresh",
                          "w2.cas"])
    assert at_once.metadata == state.metadata
    lost_paths = {p for group in state.writer("w2").lost for p in group}
    assert lost_paths == {"v2-w2-1.metadata.json", "snap-2001-v2.avro", "snap-2001-v2-m1.avro"}
    assert {p: o for p, o in state.store.archive().items() if p not in lost_paths} == \
        dict(at_once.store.archive())
    # the writer's next operation takes the next id, whatever its last one lost
    assert state.writer("w2").ids_taken == 1


def test_a_retry_at_a_version_its_operation_wrote_before_is_named_after_its_attempt():
    """A writer whose client does not compare (last-writer-wins) can set the table's version
    back. w1's first attempt writes v3 and loses to w3, which sets the table to its own v2;
    w1's retry refreshes to that v2 and writes v3 again: its files are named after the
    attempt too (v3-2), and no object is written twice."""
    from icecheck.models import clients
    cfg = mix_config("spark-3.5-cow-serializable", 3, 1, ("insert",))
    mc = build_model_config(cfg)
    model = Model(replace(mc, clients=(clients.ClientSpec("w3", cat.LAST_WRITER_WINS),)))
    state = run(model, ["w3.begin", "w3.refresh", "w2.begin", "w2.refresh", "w2.cas",
                        "w1.begin", "w1.refresh", "w3.cas", "w1.cas", "w1.refresh", "w1.cas"])
    rec = state.writer("w1").history[0]
    assert (rec.outcome, rec.attempts, rec.snapshot_id) == (COMMITTED, 2, 1001)
    assert state.metadata.path == "v3-w1-1-2.metadata.json"
    assert state.metadata.snapshot(1001).manifest_list == "snap-1001-v3-2.avro"
    assert state.store.archive()["v3-w1-1.metadata.json"].snapshot(1001).manifest_list == \
        "snap-1001-v3.avro"


@pytest.mark.parametrize("kind", [cat.CAS, cat.PUT_IF_ABSENT])
def test_coordinated_catalogs_never_lose_an_append(kind):
    cfg = replace(mix_config("spark-3.5-cow-serializable", mix=("insert",)), catalog=kind)
    model = Model(build_model_config(cfg))
    state = run(model, ["w1.begin", "w2.begin", "w1.refresh", "w2.refresh", "w1.cas", "w2.cas",
                        "w2.refresh", "w2.cas"])
    assert (201, "w2.1") in rows(model, state) and (101, "w1.1") in rows(model, state)


def test_last_writer_wins_catalog_silently_loses_a_commit():
    cfg = replace(mix_config("spark-3.5-cow-serializable", mix=("insert",)),
                  catalog=cat.LAST_WRITER_WINS)
    model = Model(build_model_config(cfg))
    state = run(model, ["w1.begin", "w2.begin", "w1.refresh", "w2.refresh", "w1.cas", "w2.cas"])
    assert outcomes(state) == {"w1": [COMMITTED], "w2": [COMMITTED]}  # both acknowledged
    assert rows(model, state) == [(0, "v0"), (1, "v0"), (201, "w2.1")]  # w1's row is gone
    lineage = [s.snapshot_id for s in state.metadata.ancestors(state.metadata.current_snapshot_id)]
    assert state.writer("w1").history[0].snapshot_id not in lineage


def test_retries_are_bounded_by_the_table_property():
    cfg = replace(mix_config("spark-3.5-cow-serializable", mix=("insert",)),
                  properties=(("commit.retry.num-retries", 0),))
    model = Model(build_model_config(cfg))
    state = run(model, ["w1.begin", "w2.begin", "w1.refresh", "w2.refresh", "w1.cas", "w2.cas"])
    rec = state.writer("w2").history[0]
    assert rec.outcome == COMMIT_FAILED and rec.message.startswith("Cannot commit")


def test_faults_reply_lost_applies_and_not_applied_does_not():
    cfg = replace(mix_config("spark-3.5-cow-serializable", mix=("insert",)), faults=True)
    model = Model(build_model_config(cfg))
    lost = run(model, ["w1.begin", "w1.refresh", "w1.cas_reply_lost"])
    rec = lost.writer("w1").history[0]
    assert rec.outcome == COMMIT_UNKNOWN and rec.applied
    assert (101, "w1.1") in rows(model, lost)
    none = run(model, ["w1.begin", "w1.refresh", "w1.cas_not_applied"])
    rec = none.writer("w1").history[0]
    assert rec.outcome == COMMIT_UNKNOWN and not rec.applied
    assert (101, "w1.1") not in rows(model, none)


def test_a_crash_stops_the_writer_for_good():
    cfg = replace(mix_config("spark-3.5-cow-serializable", mix=("insert",), ops_per_writer=2),
                  crashes=True)
    model = Model(build_model_config(cfg))
    state = run(model, ["w1.begin", "w1.crash"])
    assert state.writer("w1").phase == CRASHED
    assert not [a for a in model.actions(state) if a.writer == "w1"]


def _final_outcomes(model):
    """Every final state reachable (DFS over all interleavings): its rows and writer outcomes."""
    seen, finals, stack = set(), set(), [model.initial()]
    while stack:
        s = stack.pop()
        if s in seen:
            continue
        seen.add(s)
        acts = model.actions(s)
        if not acts:
            finals.add((tuple(rows(model, s)),
                        tuple((w.name, tuple((h.outcome, h.message) for h in w.history))
                              for w in s.writers)))
        stack.extend(model.step(s, a) for a in acts)
    return finals, len(seen)


@pytest.mark.parametrize("profile", ["spark-3.5-mor-snapshot", "spark-3.5-cow-serializable"])
def test_fusing_local_steps_reaches_exactly_the_same_outcomes(profile):
    cfg = mix_config(profile, mix=("delete", "update"))
    fused = build_model_config(cfg)
    fine = replace(fused, fuse_local_steps=False)
    fused_finals, fused_states = _final_outcomes(Model(fused))
    fine_finals, fine_states = _final_outcomes(Model(fine))
    assert fused_finals == fine_finals
    assert fused_states < fine_states
