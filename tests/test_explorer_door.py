"""The interleaving explorer's server (explorer/server.py), issue 45: Ctrl-C ends it with exit
130 as it does every command, and a write is accepted only from the server's own origin,
parsed (scheme, host and port compared exactly; userinfo refused: ``http://127.0.0.1:P@evil``
names the host evil, not 127.0.0.1)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from icecheck.explorer.server import create_app, same_site

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRACE = os.path.join(ROOT, "traces", "undelete-v2-mor-snapshot.json")


@pytest.mark.parametrize("origin,host,same", [
    ("http://127.0.0.1:5000", "127.0.0.1:5000", True),
    ("http://127.0.0.1:5000/page?at=3", "127.0.0.1:5000", True),        # a Referer
    ("http://localhost", "localhost", True),
    ("http://LOCALHOST:80", "localhost", True),
    ("http://[::1]:8000/", "[::1]:8000", True),
    ("http://127.0.0.1:5000@evil.example", "127.0.0.1:5000", False),    # userinfo
    ("http://127.0.0.1:5000@127.0.0.1:5000", "127.0.0.1:5000", False),
    ("http://user:pw@127.0.0.1:5000", "127.0.0.1:5000", False),
    ("http://127.0.0.1:5001", "127.0.0.1:5000", False),                 # another port
    ("http://127.0.0.1", "127.0.0.1:5000", False),
    ("http://localhost:5000", "127.0.0.1:5000", False),                 # another host
    ("https://127.0.0.1:5000", "127.0.0.1:5000", False),                # another scheme
    ("http://127.0.0.1.evil.example:5000", "127.0.0.1:5000", False),
    ("http://evil.example", "evil.example", False),                     # not loopback
    ("http://127.0.0.1:99999", "127.0.0.1:99999", False),               # no such port
    ("http://[::1", "[::1]:80", False),
    ("null", "127.0.0.1:5000", False),
    ("", "127.0.0.1:5000", False),
])
def test_same_site_compares_parsed_origins_exactly(origin, host, same):
    assert same_site(origin, host) is same


def test_a_write_with_userinfo_in_its_origin_is_refused(tmp_path):
    app = create_app(trace=TRACE, save_dir=str(tmp_path))
    client = app.test_client()
    token = app.config["ICX"]["token"]
    form = dict(config="undelete-v2-mor-snapshot", path="w1.begin", name="x1", token=token)
    for headers in ({"Origin": "http://localhost:80@evil.example"},
                    {"Referer": "http://localhost@evil.example/page"},
                    {"Origin": "http://localhost:8080"}):
        r = client.post("/save", data=form, headers=headers)
        assert r.status_code == 403, headers
    assert not list(tmp_path.glob("*.json"))
    r = client.post("/save", data=form, headers={"Origin": "http://localhost"})
    assert r.status_code in (200, 302, 303), r.get_data(as_text=True)[:300]


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT")
def test_ctrl_c_ends_the_explorer_with_exit_130():
    proc = subprocess.Popen([sys.executable, "-m", "icecheck", "explore", "--interactive",
                             "--trace", TRACE], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()            # the URL: the server is listening
        assert line.startswith("icecheck explorer: http://127.0.0.1:"), line
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)   # a hang guard, not a speed assertion
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "interrupted", err
