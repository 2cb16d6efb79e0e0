"""bin/bootstrap.sh's stamp: a venv shared by clones reinstalls only when the tree, the content
of pyproject.toml or the extras asked for change. The venv here is a fake whose ``python``
records its arguments, so the test sees exactly which installs would run (no pip, no network)."""

import hashlib
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fake_venv(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    log = tmp_path / "calls.log"
    for name in ("python", "icecheck"):
        p = venv / "bin" / name
        p.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
        p.chmod(0o755)
    return venv, log


def bootstrap(venv, extras, root=ROOT):
    script = f'root="{root}"; source "{ROOT}/bin/bootstrap.sh"; icecheck_bootstrap "{extras}"'
    p = subprocess.run(["bash", "-c", script], env=dict(os.environ, ICECHECK_VENV=str(venv)),
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p


def installs(log):
    if not log.exists():
        return []
    return [line.split(" -e ", 1)[1] for line in log.read_text().splitlines() if " -e " in line]


def test_stamp_decides_reinstalls(tmp_path):
    venv, log = fake_venv(tmp_path)
    sha = hashlib.sha256(open(os.path.join(ROOT, "pyproject.toml"), "rb").read()).hexdigest()
    bootstrap(venv, "")                                    # no stamp: install
    assert installs(log) == [ROOT]
    stamp = (venv / ".icecheck-stamp").read_text()
    assert f"tree={ROOT}\n" in stamp and f"pyproject={sha}\n" in stamp
    bootstrap(venv, "")                                    # same tree and content: nothing
    assert installs(log) == [ROOT]
    bootstrap(venv, "conformance")                         # new extras: one install
    assert installs(log) == [ROOT, f"{ROOT}[conformance]"]
    bootstrap(venv, "browser")                             # keeps the extras it had
    assert installs(log)[-1] == f"{ROOT}[conformance,browser]"
    bootstrap(venv, "conformance,browser")
    bootstrap(venv, "")
    assert len(installs(log)) == 3
    (venv / ".icecheck-stamp").write_text(stamp.replace(f"tree={ROOT}", "tree=/elsewhere"))
    p = bootstrap(venv, "")                                # another clone's install: detected
    assert installs(log)[-1] == ROOT and "/elsewhere" in p.stderr
    (venv / ".icecheck-stamp").write_text(stamp.replace(sha, "0" * 64))
    bootstrap(venv, "")                                    # pyproject.toml changed: reinstall
    assert len(installs(log)) == 5


def test_set_up_prints_one_line_per_step_and_the_log_on_failure(tmp_path):
    """pip's output (about a thousand lines of setuptools warnings on a fresh clone) goes to
    $ICECHECK_VENV/setup.log; the terminal gets one line per step, and the log's tail only
    when a step fails."""
    venv, log = fake_venv(tmp_path)
    p = bootstrap(venv, "")
    lines = p.stderr.splitlines()
    assert lines == [f"icecheck: setting up {venv}...", f"icecheck: set-up log: {venv}/setup.log",
                     "icecheck: upgrading pip...",
                     "icecheck: installing icecheck and its pinned dependencies..."], lines
    (venv / ".icecheck-stamp").unlink()
    (venv / "bin" / "python").write_text('#!/bin/sh\necho "noisy warning"\nexit 3\n')
    script = f'root="{ROOT}"; source "{ROOT}/bin/bootstrap.sh"; icecheck_bootstrap ""'
    q = subprocess.run(["bash", "-c", script], env=dict(os.environ, ICECHECK_VENV=str(venv)),
                       capture_output=True, text=True, timeout=60)
    assert q.returncode == 1
    assert "icecheck: upgrading pip failed; the last lines of" in q.stderr
    assert "noisy warning" in q.stderr


def test_each_command_installs_what_it_needs_and_nothing_else(tmp_path):
    """bin/icecheck's extras per command (issue 42, item 4: `sweep --list` installed PySpark and
    Playwright first, and `explore --engine spark-bfs` installed nothing and exited 2)."""
    cases = {
        ("sweep", "--list"): ROOT,
        ("sweep", "--executor", "processes"): ROOT,
        ("sweep", "--executor=serial"): ROOT,
        ("sweep",): f"{ROOT}[conformance]",
        ("explore", "--engine", "spark-bfs"): f"{ROOT}[conformance]",
        ("explore", "--engine", "bfs"): ROOT,
        ("audit", "db.t"): f"{ROOT}[audit]",
        ("conform",): f"{ROOT}[conformance]",
        ("compile",): f"{ROOT}[compiled]",
        ("check",): ROOT,
    }
    for n, (args, want) in enumerate(cases.items()):
        venv, log = fake_venv(tmp_path / str(n))
        p = subprocess.run([os.path.join(ROOT, "bin", "icecheck"), *args],
                           env=dict(os.environ, ICECHECK_VENV=str(venv)),
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, (args, p.stderr)
        assert installs(log) == [want], (args, installs(log))
        java_setup = "icecheck.conformance.java_setup" in log.read_text()
        assert java_setup == want.endswith("[conformance]"), args
