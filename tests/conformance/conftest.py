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


def ready_target(name: str):
    """The conformance target ``name``, ready to run, or a skip saying why it is not."""
    from icecheck.conformance.targets import TargetUnavailable, get_target

    try:
        target = get_target(name)
        target.ready()
    except TargetUnavailable as e:
        pytest.skip(f"{name} target unavailable: {e}")
    return target


@pytest.fixture(scope="session")
def spark_target():
    return ready_target("spark")


@pytest.fixture(scope="session")
def mixed_target():
    return ready_target("mixed")
