"""z3 proofs that conflict-filter pruning is sound, and the cross-check that ties the z3
encoding to the Python rules (models/filters.py)."""

import pytest
import z3

from icecheck.engines import z3_filters as zf
from icecheck.models import filters


def test_encoding_agrees_with_might_match_bounds_on_500_samples():
    assert zf.cross_check_bounds(500, seed=11) == 500


def test_encoding_agrees_with_might_match_partition_on_500_samples():
    assert zf.cross_check_partition(500, seed=12) == 500


def test_pruning_is_sound_for_every_shape_of_depth_2():
    proof = zf.prove_filters(2)
    assert proof.trees == 37
    assert proof.ok, (proof.counterexamples, proof.unknown)
    assert proof.bounds_proven == 37
    assert all(n == 37 for n in proof.partition_proven.values())


def test_the_proof_has_teeth(monkeypatch):
    # An unsound metrics rule (<= prunes when lower == literal) must produce a counterexample,
    # which the Python rules (sound) do not confirm.
    original = zf._metrics_atom

    def unsound(a, st):
        lo = zf._sel(a.col, st.lo)
        return z3.And(original(a, st), z3.Not(z3.And(a.kind == zf.LE, lo == a.l1)))

    monkeypatch.setattr(zf, "_metrics_atom", unsound)
    r = zf.prove_bounds(zf.Leaf(0))
    assert isinstance(r, zf.Counterexample) and not r.python_confirms


def test_the_cross_check_catches_a_rule_change(monkeypatch):
    original = filters._metrics_cmp

    def changed(pred, stats):
        if pred.op == "<=":
            lower = stats.lower.get(pred.column)
            if lower is not None and lower == pred.value:
                return False
        return original(pred, stats)

    monkeypatch.setattr(filters, "_metrics_cmp", changed)
    with pytest.raises(zf.FilterEncodingError):
        zf.cross_check_bounds(2000, seed=5)
