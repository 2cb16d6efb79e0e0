"""The explorer's web page (Flask), served on 127.0.0.1 only.

The server keeps no per-user state: every request names its configuration and its path in the
URL (``?config=<id or encoded config>&path=w1.begin~w2.begin%231&at=2``), and the page is
rebuilt from a ``Session`` (the same class notebooks use). So any state can be shared and
reloaded. Malformed URLs answer HTTP 400 with the reason.

Routes: ``/`` the page; ``/find`` BFS to the nearest violation / failed validation, then the page
at the end of the found path; ``/trace.json`` the path as a trace (a download); ``POST /save``
writes the trace into the directory given on the command line (only there).
"""

from __future__ import annotations

import base64
import binascii
import glob
import json
import os
import re
import zlib
from dataclasses import dataclass
from urllib.parse import urlencode

from flask import Flask, Response, redirect, render_template, request
from werkzeug.exceptions import HTTPException

from icecheck.engines.config import ExploreConfig
from icecheck.scenarios.errors import InputError

from . import render
from .goals import ANY, VALIDATIONS
from .session import Session, SessionError

HOST = "127.0.0.1"
SEP = "~"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")

# The door. The page is served on loopback only, but a browser visiting any site can still
# send requests to it (DNS rebinding: a hostile name resolving to 127.0.0.1; cross-site forms):
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "[::1]"}   # the only Host names answered
MAX_REQUEST_BYTES = 64 * 1024          # a request body (the save form is a few hundred bytes)
MAX_CONFIG_BYTES = 256 * 1024          # an encoded configuration, once decompressed
MAX_WRITERS, MAX_OPS, MAX_ALTERNATIVES, MAX_ROWS = 6, 6, 40, 100
MAX_PATH = 400                         # actions in a URL path
MAX_SEARCHES = 2                       # "find a path" searches running at once
SEARCH_MAX_STATES = 20_000             # states one search may visit


class BadRequest(Exception):
    """A malformed request: answered with HTTP 400 and the reason."""


@dataclass
class Registered:
    config: ExploreConfig
    actions: list[str]
    title: str
    property: str | None = None    # the property the trace is about (None: a rejected trace)


# -- URLs ------------------------------------------------------------------------------------
def encode_config(cfg: ExploreConfig) -> str:
    text = json.dumps(cfg.as_json(), sort_keys=True, separators=(",", ":"))
    return "z" + base64.urlsafe_b64encode(zlib.compress(text.encode(), 9)).decode().rstrip("=")


def decode_config(text: str) -> ExploreConfig:
    if not text.startswith("z"):
        raise BadRequest(f"bad config {text[:60]!r}: not a known configuration id, nor an "
                         f"encoded configuration (which starts with 'z')")
    body = text[1:]
    try:
        inflate = zlib.decompressobj()
        raw = inflate.decompress(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)),
                                 MAX_CONFIG_BYTES)
        if inflate.unconsumed_tail:
            raise BadRequest(f"bad config: it expands to more than {MAX_CONFIG_BYTES:,} bytes")
        doc = json.loads(raw)
    except (binascii.Error, ValueError, zlib.error, RecursionError) as e:
        raise BadRequest(f"bad config: cannot decode the encoded configuration ({e})") from None
    if not isinstance(doc, dict):
        raise BadRequest("bad config: the encoded configuration is not a JSON object")
    try:
        cfg = ExploreConfig.from_json(doc, "config")
    except InputError as e:
        raise BadRequest(f"bad config: {e}") from None
    check_size(cfg)
    return cfg


def check_size(cfg: ExploreConfig) -> None:
    """A configuration small enough to explore by hand (a page of 2000 writers is 15 MB)."""
    if len(cfg.writers) > MAX_WRITERS:
        raise BadRequest(f"bad config: {len(cfg.writers)} writers; the explorer shows at most "
                         f"{MAX_WRITERS}")
    if any(len(prog) > MAX_OPS for prog in cfg.writers):
        raise BadRequest(f"bad config: more than {MAX_OPS} operations in a writer's program")
    if any(len(entry) > MAX_ALTERNATIVES for prog in cfg.writers for entry in prog):
        raise BadRequest(f"bad config: more than {MAX_ALTERNATIVES} alternative commands in "
                         "one program entry")
    if len(cfg.initial_rows) > MAX_ROWS:
        raise BadRequest(f"bad config: more than {MAX_ROWS} initial rows")


def split_path(text: str | None) -> list[str]:
    path = [p for p in (text or "").split(SEP) if p.strip()]
    if len(path) > MAX_PATH:
        raise BadRequest(f"bad path: {len(path)} actions; at most {MAX_PATH}")
    return path


def host_allowed(host: str) -> bool:
    """Is ``host`` (a Host header, maybe with a port) a loopback name?"""
    name = host.strip().lower()
    if name.startswith("["):
        name = name[:name.find("]") + 1] if "]" in name else name
    else:
        name = name.rsplit(":", 1)[0]
    return name in LOOPBACK_HOSTS


def _origin(scheme: str, netloc: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an origin's or a Host header's ``netloc``, or None when it has
    userinfo (``http://127.0.0.1:8000@evil.example`` names evil.example: the part before
    ``@`` is a user name and password) or no valid port."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(f"{scheme}://{netloc}")
        port = parts.port
    except ValueError:                  # a port that is not a number from 0 to 65535
        return None
    if "@" in netloc or parts.username is not None or parts.password is not None:
        return None
    host = parts.hostname
    if not host:
        return None
    if ":" in host:                     # urlsplit drops an IPv6 address's brackets
        host = f"[{host}]"
    return scheme, host.lower(), port if port is not None else 80


def same_site(url: str | None, host: str | None = None) -> bool:
    """Does an Origin or Referer name a page of this loopback server? Parsed, not matched as
    text: no userinfo, scheme ``http``, a loopback host, and (given the request's ``host``,
    its Host header) exactly the scheme, host and port the request was sent to."""
    from urllib.parse import urlsplit

    if not url:
        return False
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    if parts.scheme != "http":
        return False
    origin = _origin("http", parts.netloc)
    if origin is None or origin[1] not in LOOPBACK_HOSTS:
        return False
    return host is None or origin == _origin("http", host)


def page_url(config_id: str, path: list[str], at: int | None = None, **extra) -> str:
    q = {"config": config_id, "path": SEP.join(path)}
    if at is not None and at != len(path):
        q["at"] = str(at)
    q.update({k: v for k, v in extra.items() if v is not None})
    return "/?" + urlencode(q)


# -- the app ---------------------------------------------------------------------------------
def corpus_configs() -> dict[str, Registered]:
    """The corpus traces (traces/*.json), by trace id."""
    import icecheck.traces
    from icecheck.traces import format as fmt

    out = {}
    folder = os.path.dirname(os.path.abspath(icecheck.traces.__file__))
    for p in sorted(glob.glob(os.path.join(folder, "*.json"))):
        try:
            doc = fmt.load_trace(p)
            cfg = ExploreConfig.from_json(doc["config"], p)
        except InputError:
            continue
        out[fmt.trace_id(doc, p)] = Registered(cfg, list(doc["actions"]), doc.get("title") or "",
                                               doc.get("property") or None)
    return out


def create_app(*, config: ExploreConfig | None = None, trace: str | None = None,
               save_dir: str | None = None) -> Flask:
    """The Flask app. Its start page is ``trace`` (a trace file, stepped from state 0) or
    ``config``; ``save_dir`` enables ``POST /save`` into that directory (and only there)."""
    from icecheck.traces import format as fmt

    import secrets
    import threading

    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = MAX_REQUEST_BYTES
    app.config["MAX_FORM_MEMORY_SIZE"] = MAX_REQUEST_BYTES
    token = secrets.token_urlsafe(24)       # the save form's anti-forgery token (per server)
    searches = threading.BoundedSemaphore(MAX_SEARCHES)
    registry = corpus_configs()
    if trace is not None:
        try:
            doc = fmt.load_trace(trace)
            cfg = ExploreConfig.from_json(doc["config"], f"{trace}: field 'config'")
        except InputError as e:
            raise SessionError(f"bad trace: {e}") from None
        start_id = fmt.trace_id(doc, trace)
        registry[start_id] = Registered(cfg, list(doc["actions"]), doc.get("title") or start_id,
                                        doc.get("property") or None)
    elif config is not None:
        start_id = encode_config(config)
    else:
        raise ValueError("create_app needs a config or a trace")
    app.config["ICX"] = {"registry": registry, "start": start_id, "token": token,
                         "save_dir": os.path.abspath(save_dir) if save_dir else None}

    @app.before_request
    def door():
        """Loopback Host names only (DNS rebinding); no compressed bodies (a 518 KB gzip
        expands to 400 MB); writes only from this server's own page (Origin or Referer of
        this loopback server, and the form's token)."""
        if not host_allowed(request.host or ""):
            return error_page(400, "Bad Host", f"this explorer answers only 127.0.0.1, "
                                               f"localhost and [::1], not {request.host!r}")
        if request.headers.get("Content-Encoding", "identity").lower() != "identity":
            return error_page(415, "Unsupported Media Type",
                              "compressed request bodies are not accepted")
        if request.method not in ("GET", "HEAD"):
            origin = request.headers.get("Origin") or request.headers.get("Referer")
            if not same_site(origin, request.host):
                return error_page(403, "Forbidden", "a write must come from this explorer's "
                                                    "own page (cross-site request refused)")
            if not secrets.compare_digest(str(request.form.get("token", "")), token):
                return error_page(403, "Forbidden", "missing or wrong form token: reload the "
                                                    "page and try again")

    def resolve(config_id: str) -> tuple[ExploreConfig, Registered | None]:
        reg = registry.get(config_id)
        if reg is not None:
            return reg.config, reg
        return decode_config(config_id), None

    def session_from_request(args) -> tuple[str, Session, Registered | None]:
        config_id = args.get("config") or start_id
        cfg, reg = resolve(config_id)
        path = split_path(args.get("path"))
        at = args.get("at")
        if at is not None:
            try:
                at = int(at)
            except ValueError:
                raise BadRequest(f"bad step {at!r}: 'at' must be a whole number") from None
        title = reg.title if reg and reg.title else cfg.name
        s = Session(cfg, path, at, title=title, source=config_id)
        s.trace_property = reg.property if reg else None
        return config_id, s, reg

    @app.errorhandler(BadRequest)
    @app.errorhandler(SessionError)
    def bad_request(e):
        return error_page(400, "Bad request", str(e))

    @app.errorhandler(HTTPException)
    def http_error(e):
        return error_page(e.code or 500, e.name, e.description or "")

    @app.errorhandler(InputError)
    @app.errorhandler(ValueError)
    @app.errorhandler(TypeError)
    @app.errorhandler(RecursionError)
    def malformed(e):  # a request the checks above did not foresee: still the client's input
        return error_page(400, "Bad request", f"{type(e).__name__}: {e}")

    @app.errorhandler(Exception)
    def internal_error(e):  # never a crash: the reason, with HTTP 500
        app.logger.exception("explorer error")
        return error_page(500, "Internal error", f"{type(e).__name__}: {e}")

    def error_page(code: int, title: str, reason: str):
        back = page_url(start_id, [])
        return render_template("error.html", code=code, title=title, reason=reason,
                               back=back), code

    @app.get("/")
    def index():
        args = request.args
        config_id = args.get("config") or start_id
        if "path" not in args and config_id in registry and registry[config_id].actions:
            # A trace: load its path, at the step where its anomaly shows (what it is opened
            # to see); Start and Back step through how it got there.
            actions = registry[config_id].actions
            return redirect(page_url(config_id, actions, opening_step(config_id)))
        config_id, s, reg = session_from_request(args)
        notice, bad = None, False
        if args.get("found"):
            notice = args["found"]
        if args.get("saved"):
            notice = f"saved the trace to {args['saved']}"
        return render_page(config_id, s, notice, bad)

    @app.get("/find")
    def find():
        config_id, s, _ = session_from_request(request.args)
        goal = request.args.get("goal", "")
        kind, _, name = goal.partition(":")
        if kind not in ("property", "validation") or not name:
            raise BadRequest(f"bad goal {goal!r}: expected property:NAME or validation:NAME")
        if not searches.acquire(blocking=False):
            return error_page(429, "Too Many Requests", f"{MAX_SEARCHES} searches are already "
                                                        "running; try again when one is done")
        try:
            result = s.find_path(**{kind: name}, max_states=SEARCH_MAX_STATES)
        finally:
            searches.release()
        if not result.found:
            return render_page(config_id, s, result.message, True)
        return redirect(page_url(config_id, s.full_path, s.at, found=result.message))

    @app.get("/trace.json")
    def trace_json():
        config_id, s, _ = session_from_request(request.args)
        name = request.args.get("name") or "explorer-trace"
        if not NAME_RE.match(name):
            raise BadRequest(f"bad trace name {name!r}: use letters, digits, '.', '_' and '-'")
        doc = s.trace(trace_id=name)
        return Response(fmt.dumps(doc), mimetype="application/json",
                        headers={"Content-Disposition": f'attachment; filename="{name}.json"'})

    @app.post("/save")
    def save():
        folder = app.config["ICX"]["save_dir"]
        if not folder:
            raise BadRequest("saving is disabled: start the explorer with --save-trace DIR to "
                             "save traces into DIR (or use the download link)")
        config_id, s, _ = session_from_request(request.form)
        name = (request.form.get("name") or "").strip()
        if name.endswith(".json"):
            name = name[:-5]
        if not NAME_RE.match(name):
            raise BadRequest(f"bad trace name {name!r}: use letters, digits, '.', '_' and '-' "
                             f"(a file name inside the save directory, not a path)")
        target = os.path.abspath(os.path.join(folder, name + ".json"))
        if os.path.dirname(target) != folder:
            raise BadRequest(f"bad trace name {name!r}: it must name a file inside {folder}")
        s.save_trace(target)
        return redirect(page_url(config_id, s.full_path, s.at, saved=target), code=303)

    anomaly_memo: dict[tuple, object] = {}

    def anomaly_of(config_id: str, s: Session):
        """(property, first violating step, (property, Inevitable) or None) for the path's
        anomaly, or None when its end violates nothing; searched once per path (a few paths
        kept), since every step of a path shows the same marks."""
        key = (config_id, tuple(s.full_path))
        if key not in anomaly_memo:
            if len(anomaly_memo) >= 64:
                anomaly_memo.pop(next(iter(anomaly_memo)))
            prop = s.anomaly_property()
            anomaly_memo[key] = None if prop is None else (
                prop, s.first_violation(prop),
                s.inevitable(prop, max_states=SEARCH_MAX_STATES // 4))
        return anomaly_memo[key]

    def opening_step(config_id: str) -> int:
        """Where a registered trace opens: the first state violating its property (0 for a
        rejected trace, or one whose property its path never violates)."""
        reg = registry[config_id]
        if not reg.property:
            return 0
        s = Session(reg.config, reg.actions, 0, title=reg.title, source=config_id)
        s.trace_property = reg.property
        found = anomaly_of(config_id, s)
        return found[1] if found and found[0] == reg.property and found[1] is not None else 0

    def render_page(config_id: str, s: Session, notice: str | None, bad: bool):
        from icecheck.properties import PROPERTIES

        full = s.full_path
        nxt = s.ahead[0] if s.ahead else None
        actions = [{"name": a, "what": s.describe_action(a), "next": a == nxt,
                    "url": page_url(config_id, full, s.at + 1) if a == nxt
                    else page_url(config_id, s.path + [a])}
                   for a in s.actions()]
        anomaly = anomaly_of(config_id, s)
        certain = anomaly[2] if anomaly else None
        mark = certain[1].step if certain else None
        shows = anomaly[1] if anomaly else None

        def step_title(k):
            return "; ".join(t for t, on in (
                (f"{anomaly[0] if anomaly else ''} is first violated here", k == shows),
                ("from here the anomaly is inevitable", k == mark)) if on)

        steps = [{"k": k, "action": full[k - 1] if k else "init",
                  "url": page_url(config_id, full, k), "title": step_title(k),
                  "cls": " ".join(c for c in ("here" if k == s.at else ("ahead" if k > s.at else ""),
                                              "inevitable" if k == mark else "",
                                              "violation" if k == shows else "") if c)}
                 for k in range(len(full) + 1)]
        why = first = None
        if certain:
            why = {"property": certain[0], "text": certain[1].text(len(full)), "step": mark,
                   "url": page_url(config_id, full, mark) if mark is not None else None}
        if shows is not None:
            first = {"property": anomaly[0], "step": shows, "here": shows == s.at,
                     "url": page_url(config_id, full, shows)}
        goals = ([("property:" + ANY, "a violation of any property")]
                 + [("property:" + p, f"a violation of {p}") for p in PROPERTIES]
                 + [("validation:" + ANY, "a failed validation (any check)")]
                 + [("validation:" + v, f"a failed {v} validation") for v in VALIDATIONS])
        return render_template(
            "page.html", s=s, config_id=config_id, sections=render.state_sections(s),
            actions=actions, steps=steps, goals=goals, notice=notice, bad=bad,
            back_url=page_url(config_id, full, s.at - 1) if s.at else None,
            forward_url=page_url(config_id, full, s.at + 1) if s.ahead else None,
            start_url=page_url(config_id, full, 0), end_url=page_url(config_id, full, len(full)),
            here_url=page_url(config_id, full, s.at),
            download_url="/trace.json?" + urlencode({"config": config_id,
                                                     "path": SEP.join(s.path)}),
            why=why, first=first, profiles=s.writer_profiles(), path_text=SEP.join(s.path),
            save_dir=app.config["ICX"]["save_dir"], token=token, cfg=s.config)

    return app


def request_handler(stream=None):
    """Werkzeug's request handler; its request log without ANSI colours when ``stream``
    (default stderr, where the log goes) is not a terminal (a log file, CI, a pipe)."""
    import sys

    from werkzeug.serving import WSGIRequestHandler

    stream = sys.stderr if stream is None else stream
    if getattr(stream, "isatty", lambda: False)():
        return WSGIRequestHandler

    class PlainLog(WSGIRequestHandler):
        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            try:
                msg = f"{self.command} {self.path} {self.request_version}"
            except AttributeError:       # no path when the request line was malformed
                msg = self.requestline
            msg = msg.translate(self._control_char_table)
            self.log("info", '"%s" %s %s', msg, code, size)

    return PlainLog


def serve(app: Flask, port: int = 0, *, announce=print) -> None:
    """Serve ``app`` on 127.0.0.1:``port`` (0: a free port) until interrupted (the
    KeyboardInterrupt propagates); announce the URL."""
    import socket
    import socketserver

    from werkzeug.serving import make_server

    if port:
        # Werkzeug reports a taken port by printing and calling sys.exit(1); find out first,
        # so the caller can answer with one line and exit 2.
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((HOST, port))           # raises OSError (EADDRINUSE) if taken
    server = make_server(HOST, port, app, threaded=True, request_handler=request_handler())
    announce(f"icecheck explorer: http://{HOST}:{server.server_port}/")
    try:
        # Ctrl-C ends the server and reaches the icecheck group, which exits 130 as every
        # command does when interrupted (README, exit codes), not 0 as a finished run.
        # Werkzeug's own serve_forever swallows the KeyboardInterrupt (BaseWSGIServer,
        # werkzeug 3.1): socketserver's loop underneath lets it through
        socketserver.BaseServer.serve_forever(server)
    finally:
        server.server_close()
