"""Properties after a commit the catalog applied while answering CommitFailedException (a
phantom failure, ``--phantom-failures``): what the writer's record says when it crashes, and
the Java retry findings as explorations report them (known findings, not must-hold)."""

from icecheck.engines.config import mix_config
from icecheck.models import system as S
from icecheck.properties import evaluate
from icecheck.traces.execute import judge, model_for, run_actions


def _run(profile, actions, mix=("delete", "update"), writers=2, crashes=False):
    cfg = mix_config(profile, writers, 1, mix, 1, crashes=crashes, phantom_failures=True)
    m = model_for(cfg)
    return cfg, m, run_actions(m, actions).final


def test_a_writer_that_crashes_after_a_phantom_failure_applied_its_commit():
    """Its snapshot is the table's head: the crash record says so (applied, with the phantom's
    snapshot id), so metadata_integrity no longer calls it an orphan (it did, must-hold, in
    every --crashes --phantom-failures exploration). No sequence number: the writer was never
    told one, and a crash reads nothing of the table's head (issue 45: reading it there made
    the step memo replay another state's number, a false "told sequence number")."""
    for profile in ("spark-3.5-cow-serializable", "pyiceberg-0.12-serializable"):
        cfg, m, s = _run(profile, ["w1.begin", "w1.refresh", "w1.cas_applied_failed",
                                   "w1.crash"], crashes=True)
        r = s.writer("w1").history[-1]
        assert r.outcome == S.CRASHED and r.applied
        assert r.snapshot_id == s.metadata.current_snapshot_id
        assert r.sequence_number is None
        assert "metadata_integrity" not in {v.property for v in evaluate(m, s)}


def test_java_retry_against_its_own_applied_snapshot_is_the_known_unreadable_finding():
    cfg, m, s = _run("spark-3.5-cow-serializable",
                     ["w1.begin#1", "w1.refresh", "w1.cas_applied_failed", "w1.refresh"])
    j = judge(cfg, m, s)
    readable = [v for v in j.violations if v.property == "readable"]
    assert readable and readable[0].details["applied_but_told_failed"]
    assert "readable" in j.known_findings()


def test_a_rollback_by_a_writer_still_retrying_is_the_known_rollback_finding():
    """w1's commit applies as it is answered CommitFailedException, w2 commits on top, w1's
    retry (the same snapshot id) applies again, rolling w2 back, and is answered failed again:
    w1 is still retrying, with no record of the snapshot yet, and the lost write is still the
    Java rollback (rolled_back), a known finding."""
    cfg, m, s = _run("spark-3.5-cow-serializable",
                     ["w1.begin", "w2.begin", "w1.refresh", "w1.cas_applied_failed",
                      "w2.refresh", "w2.cas", "w1.refresh", "w1.cas_applied_failed"],
                     mix=("insert",))
    assert s.writer("w1").active
    j = judge(cfg, m, s)
    lost = [v for v in j.violations if v.property == "lost_write"]
    assert lost and lost[0].details["rolled_back"] and lost[0].details["discarded_by"] == "w1.1"
    assert "lost_write" in j.known_findings()
