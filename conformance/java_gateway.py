"""One JVM per Python process, started lazily through py4j and reused across scenarios.

``get_gateway()`` starts it on first use (with the classpath from ``java_setup.ensure_jars``)
and returns the same ``JavaGateway`` afterwards; ``shutdown_gateway()`` stops it (also run at
exit). The JVM also dies with the Python process (``die_on_exit``).

Memory is kept modest: ``-Xmx512m``, the serial GC and the C1 compiler only by default (a
faster start, the same per-commit time here); override the whole option list with
``ICECHECK_JAVA_OPTS`` (space separated). The JVM's stderr goes to a small in-memory ring,
``jvm_stderr_tail()``.

``cached_jvm()`` is ``gateway.jvm`` with every name it resolves kept: py4j resolves each
segment of ``jvm.org.apache.iceberg.X.method`` with its own round trip to the JVM, and the
conformance driver used to spend about a fifth of its calls on those look-ups.
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
_cached_view = None
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


class CachedView:
    """A py4j ``JVMView`` / ``JavaPackage`` / ``JavaClass`` whose attributes are resolved once.

    Packages and classes come back as ``CachedView`` too; static methods come back as their
    py4j ``JavaMember`` (calling it still calls Java every time); static fields are kept as the
    value read the first time, so only use this for constants (``MetadataColumns.X``).
    Calling a class view calls its constructor; ``raw`` is the py4j object itself."""

    __slots__ = ("raw", "_attrs", "_memo")

    def __init__(self, raw):
        self.raw = raw
        self._attrs: dict = {}
        self._memo: dict = {}

    def memo(self, key, factory):
        """``factory()``, computed once per JVM: for Java objects that never change (a type
        singleton, a Jackson ``JavaType``)."""
        if key not in self._memo:
            self._memo[key] = factory()
        return self._memo[key]

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        attrs = self._attrs
        if name in attrs:
            return attrs[name]
        from py4j.java_gateway import JavaClass, JavaPackage, JVMView
        value = getattr(self.raw, name)
        if isinstance(value, (JavaClass, JavaPackage, JVMView)):
            value = CachedView(value)
        attrs[name] = value
        return value

    def __call__(self, *args):
        return self.raw(*args)


def cached_jvm():
    """``get_gateway().jvm`` behind a ``CachedView`` (one per running JVM)."""
    global _cached_view
    gateway = get_gateway()
    with _lock:
        if _cached_view is None or _cached_view[0] is not gateway:
            _cached_view = (gateway, CachedView(gateway.jvm))
        return _cached_view[1]


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
