"""The inductive invariant: appends are never lost with CAS (any number of writers); the same
invariant fails for a last-writer-wins catalog, with a run replayed on the model."""

from click.testing import CliRunner

from icecheck.cli.main import main
from icecheck.engines.z3_invariants import prove_appends


def test_cas_invariant_proves():
    r = prove_appends("cas")
    assert r.proved and [o.holds for o in r.obligations] == [True, True, True]
    assert r.enabled_actions == ["refresh", "swap applied", "swap lost (retry)"]


def test_put_if_absent_invariant_proves():
    assert prove_appends("put_if_absent").proved


def test_last_writer_wins_gives_a_counterexample():
    r = prove_appends("last_writer_wins")
    assert not r.proved
    step = r.obligations[1]
    assert not step.holds and step.counterexample["lost_append"] is not None
    assert r.bmc_trace and r.replayed


def test_cli_prove_cas_appends():
    r = CliRunner().invoke(main, ["z3", "prove-cas-appends", "--json"])
    assert r.exit_code == 0, r.output
    assert '"ok": true' in r.output
