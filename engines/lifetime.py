"""Worker processes that never outlive the search that started them (issue 45).

A search's workers (``engines/explicit.py``'s BFS pool, the sweep's ``--executor processes``
pool in ``sweep/local.py``) are killed when their parent is: Ctrl-C, ``kill``, the OOM killer, a
CI job's timeout. A parent killed by a signal runs no ``finally`` block, and a worker blocked on
its pipe does not notice: each forked worker holds copies of the pipe ends, so its read never
ends. Observed: workers of ``explore --engine bfs --workers 2`` killed with SIGTERM ran on for
minutes, each holding its share of the search's memory.

So every worker calls ``die_with_parent`` first. On Linux the kernel sends it SIGKILL when its
parent exits (``prctl(PR_SET_PDEATHSIG)``, through ctypes: no extension module); elsewhere a
daemon thread polls the parent's pid (``os.getppid`` changes when the parent dies and the worker
is re-parented) and ends the process. The parents also stop their pools in ``finally`` blocks
(``stop_all``), which covers a parent that is interrupted but lives on.

PR_SET_PDEATHSIG fires when the *thread* that created the worker exits; the pools here are
created, used and stopped within one call of one thread, so that thread outlives them.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1            # linux/prctl.h
POLL_SECONDS = 0.5               # the fallback watcher's interval (off Linux)


def die_with_parent(parent: int) -> str:
    """End this process when process ``parent`` (the pid its parent had before it started)
    ends. Returns how: ``"pdeathsig"`` or ``"watcher"``; ends the process at once when the
    parent is already gone."""
    how = "watcher"
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0:
                how = "pdeathsig"
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:           # the parent died before the line above
        os._exit(1)
    if how == "watcher":
        threading.Thread(target=_watch, args=(parent,), name="icecheck-parent-watch",
                         daemon=True).start()
    return how


def _watch(parent: int) -> None:
    while True:
        time.sleep(POLL_SECONDS)
        if os.getppid() != parent:
            os._exit(1)


def stop_all(procs, grace: float = 2.0) -> None:
    """Wait up to ``grace`` seconds in all for ``procs`` (``multiprocessing`` processes, each
    already asked to stop) to end, then terminate the rest, and kill what still runs. A
    KeyboardInterrupt while waiting (a second Ctrl-C) still ends every one before it
    propagates."""
    try:
        deadline = time.monotonic() + grace
        for p in procs:
            p.join(timeout=max(0.0, deadline - time.monotonic()))
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(timeout=1.0)
            if p.is_alive():
                p.kill()
                p.join(timeout=1.0)
