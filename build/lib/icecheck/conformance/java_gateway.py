"""One JVM per Python process, started lazily through py4j and reused across scenarios.

``get_gateway()`` starts it on first use (with the classpath from ``java_setup.ensure_jars``)
and returns the same ``JavaGateway`` afterwards; ``shutdown_gateway()`` stops it (also run at
exit). The JVM also dies with the Python process (``die_on_exit``).

Memory is kept modest: ``-Xmx512m``, the serial GC and the C1 compiler only by default (a
faster start, the same per-commit time here); override the whole option list with
``ICECHECK_JAVA_OPTS`` (space separated). The JVM's stderr goes to a small in-memory ring,
``jvm_stderr_tail()``.
"""

from __future__ import annotations

import atexit
import collections
import os
import shlex
import threading
import time

from .java_setup import JavaSetupError, ensure_jars, java_executable, log

DEFAULT_JAVA_OPTS = ("-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                     "-Xshare:auto", "-Djava.awt.headless=true")

_lock = threading.Lock()
_gateway = None
_classpath: list[str] = []
_stderr_tail: collections.deque = collections.deque(maxlen=200)
start_seconds: float | None = None  # wall time the last JVM start took (gateway connected)


def java_opts() -> list[str]:
    env = os.environ.get("ICECHECK_JAVA_OPTS")
    return shlex.split(env) if env is not None else list(DEFAULT_JAVA_OPTS)


def get_gateway():
    """The process's ``py4j.java_gateway.JavaGateway``, starting the JVM on first use."""
    global _gateway, _classpath, start_seconds
    with _lock:
        if _gateway is not None:
            return _gateway
        try:
            from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway
        except ImportError:
            raise JavaSetupError("Python package py4j is not installed; "
                                 "run: pip install -e '.[conformance]'") from None
        jars = [str(p) for p in ensure_jars()]
        t0 = time.monotonic()
        try:
            port = launch_gateway(classpath=os.pathsep.join(jars), javaopts=java_opts(),
                                  die_on_exit=True, java_path=java_executable(),
                                  redirect_stderr=_stderr_tail, daemonize_redirect=True)
            gateway = JavaGateway(gateway_parameters=GatewayParameters(
                port=port, auto_convert=True, auto_close=True))
            # A first call proves the JVM answers and that Iceberg is on the classpath.
            version = gateway.jvm.org.apache.iceberg.IcebergBuild.version()
        except Exception as exc:
            tail = " | ".join(jvm_stderr_tail(3))
            raise JavaSetupError(f"the JVM did not start: {type(exc).__name__}: "
                                 f"{str(exc).splitlines()[0] if str(exc) else ''}"
                                 f"{' | JVM: ' + tail if tail else ''} (check java, the classpath "
                                 f"and ICECHECK_JAVA_OPTS)") from None
        start_seconds = time.monotonic() - t0
        log(f"JVM up on port {port}: Iceberg {version} in {start_seconds:.2f} s")
        _gateway = gateway
        _classpath = jars
        return gateway


def classpath() -> list[str]:
    """The classpath of the running JVM (empty before ``get_gateway()``)."""
    return list(_classpath)


def jvm_stderr_tail(lines: int = 20) -> list[str]:
    """The last lines the JVM printed to stderr (newest last), for error reports."""
    return list(reversed(list(_stderr_tail)[:lines]))


def is_running() -> bool:
    return _gateway is not None


def shutdown_gateway() -> None:
    """Stop the JVM if one was started (safe to call more than once)."""
    global _gateway
    with _lock:
        gateway, _gateway = _gateway, None
        if gateway is None:
            return
        try:
            gateway.shutdown()
        except Exception:  # the JVM may already be gone; nothing to do then
            pass


atexit.register(shutdown_gateway)
