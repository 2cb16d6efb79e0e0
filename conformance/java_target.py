"""The Java target (Iceberg 1.10.2's Java core through py4j) behind the target registry API.

A thin wrapper over ``conformance.compare`` (docs/conformance-java.md)."""

from __future__ import annotations

from icecheck.install_hint import install_hint

from .compare import Comparison
from .compare import compare_scenario as _compare_scenario
from .compare import compare_trace as _compare_trace
from .targets import TargetUnavailable

NAME = "java"
LABEL = "Java"


def ready() -> None:
    from .java_setup import JavaSetupError, ensure_jars

    try:
        ensure_jars()
        from .java_gateway import get_gateway
        get_gateway()
    except JavaSetupError as e:
        raise TargetUnavailable(
            f"real Iceberg (Java) is not available: {e}. Install Java 17 and run "
            f"`{install_hint('conformance')} && python -m icecheck.conformance.java_setup` "
            f"(in a checkout, bin/test does both).") from None


def _opts(opts: dict) -> dict:
    return {k: v for k, v in opts.items() if k in ("catalog", "model_version", "allowlist")}


def compare_scenario(scenario, **opts) -> Comparison:
    return _compare_scenario(scenario, **_opts(opts))


def compare_trace(path: str, **opts) -> Comparison:
    return _compare_trace(path, **_opts(opts))
