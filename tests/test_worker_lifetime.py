"""Worker processes never outlive a killed search (issue 45; engines/lifetime.py).

``explore --engine bfs --workers 2`` and ``sweep --executor processes --workers 2`` are started
in a subprocess on configurations that take minutes, killed (SIGTERM: no handler, no
``finally``; SIGINT: Ctrl-C) once a worker is busy, and every worker must be gone after a
bounded number of polls. Before the fix, SIGTERM left the workers running for minutes and an
interrupted sweep waited for the cells its workers were running. Linux only (the process tree
is read from /proc); nothing is timed: the waits are counted polls.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLLS = 600          # at most this many polls of 0.05 s for a state to be reached
BUSY_TICKS = 50      # a worker counts as busy once it has used this much CPU (clock ticks)

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"),
                                reason="reads the process tree from /proc (Linux)")


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def _children(pid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None and st[1] == str(pid):
                out.append(int(name))
    return out


def _alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] != "Z"


def _cpu_ticks(pid: int) -> int:
    st = _stat(pid)
    return int(st[11]) + int(st[12]) if st else 0      # utime + stime


def _poll(predicate) -> bool:
    for _ in range(POLLS):
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _as_from_a_terminal() -> None:
    """In the child, before it runs icecheck: SIGINT handled by default and not blocked, as in
    a command started from a terminal, where Ctrl-C reaches it. A child inherits an ignored
    or blocked signal across exec, and the suite may run with SIGINT ignored: a shell without
    job control starts a background command (``bin/test &``) with SIGINT and SIGQUIT ignored,
    Python then installs no KeyboardInterrupt handler, and both SIGINT cases saw the search
    run to its end (as icecheck should, for a command that ignores Ctrl-C)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _kill_and_check(args: list[str], sig: int, workers: int) -> int:
    """Start ``icecheck ARGS``, wait until it has ``workers`` children and one of them is
    busy (a BFS's early levels are owned by one worker), send ``sig``, and check every child
    it had ends; the parent's exit code."""
    proc = subprocess.Popen([sys.executable, "-m", "icecheck", *args], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=_as_from_a_terminal)
    kids: list[int] = []
    try:
        def busy():
            kids[:] = _children(proc.pid)
            return len(kids) >= workers and max(map(_cpu_ticks, kids)) >= BUSY_TICKS
        assert _poll(busy), f"{workers} workers, one busy, never appeared: {kids}"
        proc.send_signal(sig)
        assert _poll(lambda: proc.poll() is not None), "the parent did not end"
        left = []

        def gone():
            left[:] = [k for k in kids if _alive(k)]
            return not left
        assert _poll(gone), f"workers outlived their parent: {left}"
        return proc.returncode
    finally:
        for k in kids:
            if _alive(k):
                os.kill(k, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# 3 writers x 2 DELETE/UPDATE: 515,368 states, a minute of search (docs/exhaustive.md)
BFS = ["explore", "--engine", "bfs", "--profile", "spark-3.5-mor-serializable", "--writers",
       "3", "--ops", "2", "--mix", "delete,update", "--retries", "0", "--workers", "2"]


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, -signal.SIGTERM), (signal.SIGINT, 130)],
                         ids=["SIGTERM", "SIGINT"])
def test_bfs_workers_die_with_their_search(sig, code):
    assert _kill_and_check(BFS, sig, 2) == code


SPACE = """\
profiles: [spark-3.5-mor-serializable]
catalogs: [cas]
format_versions: [2]
initial_rows: [[0, "v0"], [1, "v0"]]
commands:
  DELETE:  {sql: DELETE, where: "id = 1"}
  UPDATE:  {sql: UPDATE, where: "id = 1", set: {v: "{tag}"}}
combos:
  - [DELETE, UPDATE, UPDATE]
  - [DELETE, DELETE, UPDATE]
  - [UPDATE, UPDATE, UPDATE]
bounds: {ops: 2, retries: 0, max_depth: null, max_files: null, max_states: 10000000, time_budget: 3600}
hypothesis: {max_examples: 300, seed: 0, time_budget: 60}
"""


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, -signal.SIGTERM), (signal.SIGINT, 130)],
                         ids=["SIGTERM", "SIGINT"])
def test_sweep_process_workers_die_with_their_sweep(tmp_path, sig, code):
    """Cells of minutes each (three writers, two operations): an interrupted sweep ends its
    workers at once (the cells run again on resume) instead of waiting for them."""
    space = tmp_path / "space.yaml"
    space.write_text(SPACE)
    args = ["sweep", "--executor", "processes", "--workers", "2", "--space", str(space),
            "--out", str(tmp_path / "out")]
    assert _kill_and_check(args, sig, 2) == code
