"""The properties stay silent on correct configurations: every interleaving (every reachable
state of the deterministic model, faults and crashes included) of small serializable CAS
configurations shows no unexpected violation."""

import dataclasses
import time

import pytest

from _props_util import explore, model_of, unexpected_anywhere

from icecheck.engines.config import build_model_config
from icecheck.models.system import Model
from icecheck.properties import evaluate, reached

SERIALIZABLE = [
    ("spark-3.5-cow-serializable", 2, ("delete", "update", "insert", "merge", "compact")),
    ("spark-3.5-cow-serializable", 3, ("delete", "update", "insert", "merge", "compact")),
    ("pyiceberg-0.12-serializable", 2, ("delete", "update", "insert", "merge")),
    ("spark-3.5-mor-serializable", 3, ("delete", "update", "insert", "merge", "compact")),
    # v2 merge-on-read serializable without two DELETEs (see test_properties_findings.py)
    ("spark-3.5-mor-serializable", 2, ("update", "insert", "merge", "compact")),
]


@pytest.mark.parametrize("profile,format_version,mix", SERIALIZABLE, ids=lambda x: str(x))
@pytest.mark.parametrize("catalog", ["cas", "put_if_absent"])
def test_exhaustive_serializable_is_silent(profile, format_version, mix, catalog):
    cfg, m = model_of(profile, writers=2, mix=mix, format_version=format_version, catalog=catalog,
                      faults=True, crashes=True)
    found = unexpected_anywhere(cfg, m)
    assert not found, "\n".join(f"{k[0]}: {k[1]}\n  actions: {p}" for k, p in found.items())


LARGER = [
    ("spark-3.5-cow-serializable", dict(writers=2, ops_per_writer=2, mix=("delete", "update", "insert"))),
    ("spark-3.5-cow-snapshot", dict(writers=2, ops_per_writer=2, mix=("delete", "update", "insert"))),
    ("spark-3.5-cow-serializable", dict(writers=2, keys=2, mix=("delete", "update", "insert", "merge"))),
    ("spark-3.5-mor-serializable", dict(writers=3, format_version=3, mix=("delete", "update", "insert"))),
    ("spark-3.5-cow-serializable", dict(writers=2, catalog="put_if_absent", mix=("delete", "update"),
                                        properties={"commit.retry.num-retries": 0})),
]


@pytest.mark.parametrize("profile,kw", LARGER, ids=lambda x: str(x))
def test_larger_configurations_silent(profile, kw):
    cfg, m = model_of(profile, **kw)
    found = unexpected_anywhere(cfg, m)
    assert not found, "\n".join(f"{k[0]}: {k[1]}\n  actions: {p}" for k, p in found.items())


def test_evaluate_is_fast_and_deterministic():
    cfg, m = model_of("spark-3.5-mor-snapshot", writers=3, mix=("delete", "update", "insert"))
    states = [s for s, _ in explore(cfg, m)]
    t0 = time.perf_counter()
    for s in states:
        evaluate(m, s)
        reached(m, s)
    avg = (time.perf_counter() - t0) / len(states)
    assert avg < 0.005, f"evaluate+reached average {avg * 1000:.2f} ms"
    # A fresh model (no cache) gives the same violations in the same order.
    m2 = Model(build_model_config(cfg))
    for s in states[::50]:
        assert [v.message for v in evaluate(m, s)] == [v.message for v in evaluate(m2, s)]
