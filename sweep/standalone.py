"""A Spark standalone cluster on this machine, bound to loopback: one Master and one Worker JVM
started from the installed PySpark (``spark-class``), for running the sweep's cluster path
(``--master spark://...``: executors launched by a worker, Python workers started by the
executors, code shipped as a wheel) without a second machine.

    with standalone_cluster(cores=2, memory="2g") as master:
        run_sweep(master=master, ...)          # or: icecheck sweep --master <master>

``python -m icecheck.sweep.standalone`` starts one and prints its master URL until Ctrl-C.
Both JVMs listen on 127.0.0.1 only and are stopped (their process groups) on exit.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Iterator


class ClusterError(RuntimeError):
    """The standalone cluster did not come up (its logs are named in the message)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_home() -> str:
    import pyspark
    return os.path.dirname(os.path.abspath(pyspark.__file__))


def _start(args: list[str], log: str, env: dict) -> subprocess.Popen:
    with open(log, "w") as fh:
        return subprocess.Popen(args, stdout=fh, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def _wait_for(log: str, text: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ClusterError(f"the process exited ({proc.returncode}) before '{text}'; "
                               f"see {log}")
        with open(log, errors="replace") as fh:
            if text in fh.read():
                return
        time.sleep(0.5)
    raise ClusterError(f"no '{text}' after {timeout:.0f} s; see {log}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@contextlib.contextmanager
def standalone_cluster(cores: int = 2, memory: str = "2g", workdir: str | None = None,
                       startup_timeout: float = 120.0) -> Iterator[str]:
    """Start a Master and a Worker on 127.0.0.1; yield the master URL; stop both."""
    workdir = workdir or tempfile.mkdtemp(prefix="icecheck-standalone-")
    os.makedirs(workdir, exist_ok=True)
    home = spark_home()
    spark_class = os.path.join(home, "bin", "spark-class")
    env = dict(os.environ, SPARK_HOME=home, SPARK_LOCAL_IP="127.0.0.1")
    port, ui, wui = _free_port(), _free_port(), _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    master = _start([spark_class, "org.apache.spark.deploy.master.Master", "--host",
                     "127.0.0.1", "--port", str(port), "--webui-port", str(ui)],
                    os.path.join(workdir, "master.log"), env)
    worker = None
    try:
        _wait_for(os.path.join(workdir, "master.log"), "I have been elected leader", master,
                  startup_timeout)
        worker = _start([spark_class, "org.apache.spark.deploy.worker.Worker", master_url,
                         "--host", "127.0.0.1", "--cores", str(cores), "--memory", memory,
                         "--work-dir", os.path.join(workdir, "work"), "--webui-port",
                         str(wui)], os.path.join(workdir, "worker.log"), env)
        _wait_for(os.path.join(workdir, "worker.log"), "Successfully registered with master",
                  worker, startup_timeout)
        yield master_url
    finally:
        if worker is not None:
            _stop(worker)
        _stop(master)


def main() -> int:
    with standalone_cluster() as url:
        print(url, flush=True)
        try:
            signal.pause()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
