"""The mixed random differential on real Spark + PyIceberg (one shared SQLite catalog): a fixed
seed's drawn scenarios all agree with the model or are skipped with a reason."""

import pytest

from icecheck.conformance.compare import DISAGREE, ERROR
from icecheck.conformance.mixed_differential import run_mixed_differential
from icecheck.conformance.targets import TargetUnavailable, get_target


def test_random_mixed_scenarios_agree():
    try:
        get_target("mixed").ready()
    except TargetUnavailable as e:
        pytest.skip(f"mixed target unavailable: {e}")
    res = run_mixed_differential(12, 7)
    assert not res.statuses.get(DISAGREE) and not res.statuses.get(ERROR), \
        [c.differences or c.reason for _, c in res.disagreements]
    assert res.compared >= 6, res.as_json()
