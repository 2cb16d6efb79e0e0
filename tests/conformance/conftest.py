"""Fixtures the conformance tests share."""

import pytest


@pytest.fixture(scope="session")
def java():
    """Real Iceberg (Java) through py4j, or a skip with the reason when it is unavailable."""
    from icecheck.conformance.java_setup import JavaSetupError, ensure_jars
    try:
        ensure_jars()
        from icecheck.conformance import java_gateway
        java_gateway.get_gateway()
    except JavaSetupError as exc:
        pytest.skip(f"real Iceberg (Java) unavailable: {exc}")
    return True
