"""The explorer's Session (the notebook API, and the one code path of the web page), its BFS, its
rendering, and the page's server through Flask's test client (error pages, saving)."""

import base64
import json
import os
import re
import subprocess
import sys
import zlib
from urllib.parse import parse_qs, urlencode, urlparse

import pytest

from icecheck.engines.config import mix_config
from icecheck.explorer import Session, SessionError
from icecheck.explorer.render import dot_available, session_diff
from icecheck.explorer.server import create_app, decode_config, encode_config
from icecheck.traces import format as fmt
from icecheck.traces.replay import replay_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNDELETE_TRACE = os.path.join(ROOT, "traces", "undelete-v2-mor-snapshot.json")
UNDELETE = ["w1.begin#1", "w1.refresh", "w2.begin", "w1.cas", "w2.refresh", "w2.cas"]
REJECTED = os.path.join(ROOT, "traces", "undelete-v2-mor-serializable-rejected.json")


def fresh():
    return Session.from_config(mix_config("spark-3.5-mor-snapshot", 2, 1))


def violated(s):
    return {p.name for p in s.properties() if p.violated}


# -- Session ----------------------------------------------------------------------------------
def test_from_trace_opens_where_the_anomaly_shows_and_steps_from_the_start():
    s = Session.from_trace(UNDELETE_TRACE)
    assert s.trace_property == "undelete"
    assert s.at == 6 and s.path == UNDELETE and s.ahead == [] and s.full_path == UNDELETE
    assert "undelete" in violated(s)
    s.goto(0)
    assert s.at == 0 and s.path == [] and s.ahead == UNDELETE
    assert "w1.begin#1" in s.actions()
    assert violated(s) == set()
    for k in range(1, 7):
        s.redo()
        assert s.at == k and s.path == UNDELETE[:k]
    assert "undelete" in violated(s)
    undelete = next(p for p in s.properties() if p.name == "undelete")
    assert undelete.status == "known_finding"
    assert "deleted id=1" in undelete.violations[0].message
    with pytest.raises(SessionError, match="nothing to redo"):
        s.redo()
    assert s.actions() == []
    assert Session.from_trace(UNDELETE_TRACE, at=0).at == 0
    assert Session.from_trace(UNDELETE_TRACE, at=2).path == UNDELETE[:2]
    # a rejected trace violates nothing: it opens at the initial state
    assert Session.from_trace(REJECTED).at == 0


#: the undelete trace with a third writer whose only command is an INSERT of another key,
#: committed after the undelete: the anomaly shows at step 6 and stays, three steps before the
#: path ends (and it became inevitable at step 4, as in the trace)
LONGER = UNDELETE + ["w3.begin", "w3.refresh", "w3.cas"]


def longer_trace(tmp_path):
    from icecheck.engines.config import ExploreConfig

    doc = fmt.load_trace(UNDELETE_TRACE)["config"]
    doc["writers"].append([[[["rows", [[301, "w3.1"]]], ["sql", "INSERT"]]]])
    s = Session.from_config(ExploreConfig.from_json(doc), LONGER)
    path = str(tmp_path / "longer.json")
    saved = s.save_trace(path)
    assert saved["property"] == "undelete" and saved["actions"] == LONGER
    return path


def test_a_trace_opens_at_its_first_violating_state_not_at_its_end(tmp_path):
    s = Session.from_trace(longer_trace(tmp_path))
    assert s.at == 6 and s.ahead == LONGER[6:]
    assert "undelete" in violated(s)
    assert "undelete" not in violated(s.copy().goto(5))
    assert s.first_violation() == 6 and s.first_violation("isolation") == 6
    assert s.first_violation("lost_write") is None
    prop, found = s.inevitable()
    assert prop == "undelete" and found.step == 4


def test_row_marks_point_at_the_rows_an_anomaly_is_about():
    """The row that came back, the key present twice (both copies), the write that vanished
    (row level and catalog level): each from its violation's details, marked in the table
    view; nothing is marked where no property is violated."""
    def trace(name, at="anomaly"):
        return Session.from_trace(os.path.join(ROOT, "traces", name + ".json"), at=at)

    s = trace("undelete-v2-mor-snapshot")
    marks = s.row_marks()
    assert [(m.property, m.row, m.present) for m in marks] == [("undelete", (1, "w1.1"), True)]
    assert "came back: w2.1 deleted id=1" in marks[0].note
    h = s.render("html")
    assert re.findall(r'<tr class="([^"]*)" data-key="row:([^"]*)" data-anomaly="undelete">', h) \
        == [("anomaly", "(1, &#39;w1.1&#39;)")]   # w1's UPDATE wrote it; w2's DELETE missed it
    assert trace("undelete-v2-mor-snapshot", at=5).row_marks() == []
    assert 'data-anomaly="' not in trace("undelete-v2-mor-snapshot", at=5).render("html")

    s = trace("duplicate-keys-spark-add-files-twice")
    assert {(m.property, m.row, m.present) for m in s.row_marks()} == {
        ("duplicate_keys", (900, "ext"), True)}
    h = s.render("html")
    assert h.count('data-anomaly="duplicate_keys"') == 2       # the key's two rows, both marked
    assert "id=900 has 2 live rows" in h

    s = trace("lost-write-null-partition-retention-delete")
    marks = s.row_marks()
    assert [(m.property, m.row, m.present) for m in marks] == [("lost_write", (2, None), False)]
    h = s.render("html")
    assert 'class="anomaly-missing" data-anomaly="lost_write"' in h
    assert "missing row <code>(2, None)</code>: lost: setup.1 committed it" in h

    s = trace("lost-write-last-writer-wins")                 # catalog level: a discarded snapshot
    marks = s.row_marks()
    assert [(m.property, m.row, m.present) for m in marks] == [("lost_write", (101, "w1.1"), False)]
    assert "snapshot 1001, which w2.1 discarded" in marks[0].note
    assert "missing row <code>(101, &#39;w1.1&#39;)</code>" in s.render("html")


def test_every_writers_profile_is_shown_for_a_mixed_engine_trace():
    mixed = os.path.join(ROOT, "traces", "duplicate-keys-mixed-spark-merge-pyiceberg-upsert.json")
    s = Session.from_trace(mixed)
    assert s.config.mixed
    assert s.writer_profiles() == {"w1": "spark-3.5-cow-serializable",
                                   "w2": "pyiceberg-0.12-serializable"}
    h = s.render("html")
    assert 'class="profile mixed" data-profile="spark-3.5-cow-serializable"' in h
    assert 'class="profile mixed" data-profile="pyiceberg-0.12-serializable"' in h
    page = create_app(trace=mixed).test_client().get("/", follow_redirects=True)
    text = page.get_data(as_text=True)
    head = text.split('id="profiles">')[1].split("</span>")[0]
    assert ('w1 <b data-writer="w1">spark-3.5-cow-serializable</b>, '
            'w2 <b data-writer="w2">pyiceberg-0.12-serializable</b>') in head
    # one engine: the header names it once, and no writer's profile is marked as mixed
    single = create_app(trace=UNDELETE_TRACE).test_client().get("/", follow_redirects=True)
    text = single.get_data(as_text=True)
    assert 'id="profiles"' not in text and "profile <b>spark-3.5-mor-snapshot</b>" in text
    assert 'class="profile" data-profile="spark-3.5-mor-snapshot"' in text


def test_the_graph_has_a_legend_of_its_edge_kinds():
    """ww, wr, rw and co are explained on the page (and in the notebook view), with the cycle
    classes, whether or not anything has committed yet."""
    for s in (Session.from_trace(UNDELETE_TRACE), Session.from_trace(UNDELETE_TRACE, at=0)):
        legend = s.render("html").split('id="graph-legend"')[1]
        kinds = dict(re.findall(r'<dt class="e-(\w+)">\1</dt><dd><b>([^<]*)</b>', legend))
        assert kinds == {"ww": "write after write", "wr": "write, then read",
                         "rw": "read, then overwritten", "co": "commit order"}
        assert "(an anti-dependency)" in legend and "never part of a cycle" in legend
        assert "<b>G-single</b> (exactly one rw) snapshot isolation" in legend
    page = create_app(trace=UNDELETE_TRACE).test_client().get("/", follow_redirects=True)
    assert 'id="graph-legend"' in page.get_data(as_text=True)


def test_step_undo_redo_and_branching():
    s = fresh()
    with pytest.raises(SessionError, match="nothing to undo"):
        s.undo()
    s.step("w1.begin#1").step("w2.begin")
    assert s.path == ["w1.begin#1", "w2.begin"]
    assert s.state.writer("w1").phase == "written"
    s.undo()
    assert s.path == ["w1.begin#1"] and s.ahead == ["w2.begin"]
    s.step("w2.begin")                       # the next step ahead: the path is kept
    assert s.ahead == [] and s.full_path == ["w1.begin#1", "w2.begin"]
    s.undo().undo()
    s.step("w1.begin")                       # a different step: the steps ahead are dropped
    assert s.full_path == ["w1.begin"] and s.ahead == []
    s.goto(0)
    assert s.at == 0 and s.ahead == ["w1.begin"]
    s.goto(-1)
    assert s.at == 1


def test_errors_name_the_step_and_the_reason():
    s = fresh()
    with pytest.raises(SessionError, match=r"action w1.cas is not enabled at step 1: .*idle"):
        s.step("w1.cas")
    with pytest.raises(SessionError, match="unknown action at step 1: not an action"):
        s.step("w1.fly")
    with pytest.raises(SessionError, match="unknown action at step 2"):
        Session.from_config(s.config, ["w1.begin", "nonsense"])
    with pytest.raises(SessionError, match=r"action w3.begin is not enabled at step 2: .*unknown writer"):
        Session.from_config(s.config, ["w1.begin", "w3.begin"])
    with pytest.raises(SessionError, match="bad step 5"):
        Session.from_config(s.config, ["w1.begin"], at=5)
    with pytest.raises(SessionError, match="bad trace"):
        Session.from_trace(os.path.join(ROOT, "pyproject.toml"))


def test_diff_marks_what_the_step_changed():
    s = Session.from_trace(UNDELETE_TRACE).goto(4)    # after w1.cas
    d = session_diff(s)
    changed = {k for k, *_ in d.changed}
    added = {k for k, *_ in d.added}
    assert {"catalog", "current", "w:w1:phase"} <= changed
    assert "snap:1001" in added and "h:w1:0" in added
    assert any(line.startswith("~ catalog pointer: v1-setup.metadata.json") for line in d.lines())
    assert session_diff(s.goto(0)).empty


def test_find_path_to_a_property_violation_loads_it():
    s = fresh()
    s.step("w1.begin")
    r = s.find_path(property="undelete")
    assert r.found and r.actions and s.path[0] == "w1.begin" and s.path[1:] == r.actions
    assert s.at == len(s.full_path)
    assert "undelete" in violated(s)
    # BFS: the nearest one (no shorter path from the same state violates it)
    assert len(r.actions) == 5


def test_find_path_to_a_failed_validation():
    s = Session.from_config(mix_config("spark-3.5-mor-serializable", 2, 1))
    r = s.find_path(validation="no_conflicting_data")
    assert r.found, r.message
    failed = [h for w in s.state.writers for h in w.history if h.outcome == "validation_failed"]
    assert failed and failed[-1].check == "no_conflicting_data"
    s.goto(0)
    assert s.find_path(validation="any")


def test_find_path_reports_when_nothing_is_reachable():
    s = fresh()
    r = s.find_path(property="lost_write")
    assert not r.found and "every reachable state seen" in r.message
    assert s.at == 0 and s.full_path == []          # nothing loaded
    with pytest.raises(SessionError, match="unknown property"):
        s.find_path(property="nope")
    with pytest.raises(SessionError, match="unknown validation"):
        s.find_path(validation="nope")
    with pytest.raises(SessionError, match="exactly one"):
        s.find_path()


def test_save_trace_replays(tmp_path):
    s = fresh().run(["w2.begin#1", "w1.begin", "w2.refresh", "w2.cas", "w1.refresh", "w1.cas"])
    out = tmp_path / "mine.json"
    doc = s.save_trace(str(out))
    assert doc["id"] == "mine" and doc["property"] == "undelete" and doc["kind"] == "violation"
    assert replay_file(str(out)).ok
    # a path with no violation becomes a rejected trace
    s2 = Session.from_trace(REJECTED).goto(-1)
    doc2 = s2.save_trace(str(tmp_path / "rej.json"))
    assert doc2["kind"] == "rejected" and replay_file(str(tmp_path / "rej.json")).ok


def test_render_html_and_svg():
    s = Session.from_trace(UNDELETE_TRACE).goto(-1)
    h = s._repr_html_()
    assert h.startswith('<div class="icx">') and "<style>" in h
    assert 'class="prop violated status-known_finding" data-property="undelete"' in h
    assert "snap-2001-v3-m1.avro" in h and "w2-1-p1" in h and ">ADDED<" in h
    assert "s-d1 @ 1" in h                               # a delete file's positions
    if dot_available():
        svg = s._repr_svg_()
        assert svg.startswith("<svg") and "snapshot 2001" in svg
        assert "cycle (G-single)" in h and "<svg" in h    # the dependency graph, drawn
    with pytest.raises(ValueError):
        s.render("png")


# -- the server (Flask test client) ----------------------------------------------------------
@pytest.fixture()
def client(tmp_path):
    app = create_app(trace=UNDELETE_TRACE, save_dir=str(tmp_path / "saved"))
    return app.test_client()


def q(**kw):
    return "/?" + urlencode(kw)


def test_page_redirects_a_trace_to_the_step_where_its_anomaly_shows(client):
    r = client.get("/")
    assert r.status_code == 302
    args = parse_qs(urlparse(r.headers["Location"]).query)
    assert args["config"] == ["undelete-v2-mor-snapshot"] and "at" not in args   # at the end
    assert args["path"] == ["~".join(UNDELETE)]
    page = client.get(r.headers["Location"]).get_data(as_text=True)
    assert "step <b>6</b> of 6" in page
    assert 'class="prop violated status-known_finding" data-property="undelete"' in page
    assert 'class="here violation"' in page and "<b>undelete</b> is first violated at step 6 " \
        "(this step)" in page
    assert 'data-anomaly="undelete"' in page                 # the row that came back
    start = client.get(q(config="undelete-v2-mor-snapshot", path="~".join(UNDELETE), at=0))
    text = start.get_data(as_text=True)
    assert "step <b>0</b> of 6" in text and 'data-action="w1.begin#1"' in text
    assert "go to step 6</a>" in text                        # the anomaly's step, linked


def test_every_corpus_trace_opens_at_the_first_state_violating_its_property(client):
    """Computed apart from the explorer (the trace's run, judged state by state); a rejected
    trace opens at 0. The readable trace opens on a metadata tree whose manifest list was
    deleted from storage: shown as such, not a 500."""
    from icecheck.explorer.server import corpus_configs
    from icecheck.traces.execute import model_for, run_actions
    from icecheck.traces.execute import violated as violated_at

    corpus = corpus_configs()
    assert len(corpus) >= 20
    for tid, reg in corpus.items():
        run = run_actions(model_for(reg.config, tid), reg.actions)
        want = 0 if not reg.property else next(
            k for k, st in enumerate(run.states)
            if reg.property in violated_at(run.model, st, reg.config.key))
        r = client.get(q(config=tid))
        assert r.status_code == 302, tid
        page = client.get(r.headers["Location"])
        assert page.status_code == 200, (tid, page.get_data(as_text=True)[-400:])
        text = page.get_data(as_text=True)
        assert f'data-step="{want}"' in text, tid
        if reg.property:
            assert re.search(rf'<li class="prop violated status-\w+" '
                             rf'data-property="{reg.property}">', text), tid
            assert f"<b>{reg.property}</b> is first violated at step {want} (this step)" in text
        if tid.startswith("readable-"):
            assert "deleted from storage</span>" in text


def test_page_of_a_longer_trace_opens_at_the_violation_and_marks_both_steps(tmp_path):
    import html

    client = create_app(trace=longer_trace(tmp_path)).test_client()
    r = client.get("/")
    args = parse_qs(urlparse(r.headers["Location"]).query)
    assert args["at"] == ["6"] and args["path"] == ["~".join(LONGER)]
    page = client.get(r.headers["Location"]).get_data(as_text=True)
    assert "step <b>6</b> of 9" in page
    path_bar = page.split('class="path small"')[1].split("</div>")[0]
    marked = {k: html.unescape(c) for c, k in
              re.findall(r'<a class="([^"]*)" href="[^"]*" data-k="(\d+)"', path_bar)}
    assert marked["6"] == "here violation"
    assert marked["4"] == "inevitable"
    assert [k for k, c in marked.items() if "inevitable" in c] == ["4"]
    assert all("violation" not in c for k, c in marked.items() if k != "6")


def test_page_at_the_end_shows_the_violation(client):
    page = client.get(q(config="undelete-v2-mor-snapshot", path="~".join(UNDELETE)))
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert 'class="prop violated status-known_finding" data-property="undelete"' in text
    assert "none: a final state" in text


@pytest.mark.parametrize("query,status,reason", [
    (dict(config="undelete-v2-mor-snapshot", path="w1.begin~w1.explode"), 400,
     "unknown action at step 2: not an action: &#39;w1.explode&#39;"),
    (dict(config="undelete-v2-mor-snapshot", path="w1.begin~w1.cas"), 400,
     "action w1.cas is not enabled at step 2"),
    (dict(config="undelete-v2-mor-snapshot", path="w9.begin"), 400, "unknown writer"),
    (dict(config="no-such-config"), 400, "bad config &#39;no-such-config&#39;"),
    (dict(config="zQUJDRA"), 400, "bad config: cannot decode"),
    (dict(config="undelete-v2-mor-snapshot", path="w1.begin", at="x"), 400, "bad step"),
    (dict(config="undelete-v2-mor-snapshot", path="w1.begin", at="7"), 400, "bad step 7"),
])
def test_malformed_urls_get_a_400_with_the_reason(client, query, status, reason):
    r = client.get(q(**query))
    assert r.status_code == status
    text = r.get_data(as_text=True)
    assert 'id="reason"' in text and reason in text


def test_bad_encoded_config_content_is_a_400(client):
    cfg = mix_config("spark-3.5-mor-snapshot", 1, 1)
    good = encode_config(cfg)
    assert decode_config(good) == cfg
    assert client.get(q(config=good, path="w1.begin")).status_code == 200
    broken = dict(cfg.as_json(), profile="spark-0.1")   # well-formed encoding, bad content
    bad = "z" + base64.urlsafe_b64encode(zlib.compress(json.dumps(broken).encode())).decode()
    r = client.get(q(config=bad))
    assert r.status_code == 400 and "bad config" in r.get_data(as_text=True)
    assert client.get("/nowhere").status_code == 404


def test_find_route_loads_the_path(client):
    cfg = mix_config("spark-3.5-mor-snapshot", 2, 1)
    r = client.get("/find?" + urlencode(dict(config=encode_config(cfg), path="",
                                             goal="property:undelete")))
    assert r.status_code == 302
    args = parse_qs(urlparse(r.headers["Location"]).query)
    assert len(args["path"][0].split("~")) == 6 and "found" in args["found"][0]
    r = client.get("/find?" + urlencode(dict(config=encode_config(cfg), goal="property:lost_write")))
    assert r.status_code == 200 and "no path from step 0" in r.get_data(as_text=True)
    r = client.get("/find?" + urlencode(dict(config=encode_config(cfg), goal="bogus")))
    assert r.status_code == 400


def test_download_and_save(client, tmp_path):
    r = client.get("/trace.json?" + urlencode(dict(config="undelete-v2-mor-snapshot",
                                                   path="~".join(UNDELETE), name="dl")))
    assert r.status_code == 200 and "attachment" in r.headers["Content-Disposition"]
    doc = json.loads(r.get_data(as_text=True))
    fmt.check_trace(doc)
    assert doc["actions"] == UNDELETE and doc["property"] == "undelete"
    token = client.application.config["ICX"]["token"]
    form = dict(config="undelete-v2-mor-snapshot", path="~".join(UNDELETE), name="saved-one",
                token=token)
    r = client.post("/save", data=form, headers=SAME_SITE)
    assert r.status_code == 303
    saved = tmp_path / "saved" / "saved-one.json"
    assert saved.exists() and replay_file(str(saved)).ok
    for name in ("../escape", "/etc/passwd", "a/b", "", ".hidden"):
        r = client.post("/save", data=dict(form, name=name), headers=SAME_SITE)
        assert r.status_code == 400, name
        assert "bad trace name" in r.get_data(as_text=True)
    assert not (tmp_path / "escape.json").exists()


def test_save_is_refused_without_a_save_directory():
    app = create_app(trace=UNDELETE_TRACE)
    r = app.test_client().post("/save", headers=SAME_SITE,
                               data=dict(config="undelete-v2-mor-snapshot", path="w1.begin",
                                         name="x", token=app.config["ICX"]["token"]))
    assert r.status_code == 400 and "saving is disabled" in r.get_data(as_text=True)


#: the test client's own origin (its requests carry Host: localhost, port 80): the door
#: compares an Origin's scheme, host and port with the request's exactly
SAME_SITE = {"Origin": "http://localhost"}


def test_the_door_refuses_other_hosts_cross_site_writes_and_oversized_input(client, tmp_path):
    """DNS rebinding, cross-site forms, decompression bombs, huge configurations, bad input:
    each is refused with a 4xx and a reason, never a 500 and never a write."""
    import base64
    import zlib

    ok = client.get("/", headers={"Host": "127.0.0.1:8123"})
    assert ok.status_code in (200, 302)
    for host in ("evil.example:8123", "127.0.0.1.evil.example", "10.0.0.5"):
        r = client.get("/", headers={"Host": host})
        assert r.status_code == 400 and "Bad Host" in r.get_data(as_text=True), host
    token = client.application.config["ICX"]["token"]
    form = dict(config="undelete-v2-mor-snapshot", path="~".join(UNDELETE), name="x1",
                token=token)
    for headers in ({}, {"Origin": "http://evil.example"},
                    {"Referer": "http://evil.example/page"}, {"Origin": "null"}):
        r = client.post("/save", data=form, headers=headers)
        assert r.status_code == 403, headers
    r = client.post("/save", data=dict(form, token="guess"), headers=SAME_SITE)
    assert r.status_code == 403
    assert not list((tmp_path / "saved").glob("x1.json")) if (tmp_path / "saved").exists() \
        else True
    r = client.post("/save", data="x" * 200_000, headers=dict(SAME_SITE),
                    content_type="application/x-www-form-urlencoded")
    assert r.status_code == 413
    r = client.post("/save", data=zlib.compress(b"a" * 1_000_000), headers=dict(
        SAME_SITE, **{"Content-Encoding": "deflate"}))
    assert r.status_code == 415
    bomb = "z" + base64.urlsafe_b64encode(zlib.compress(b" " * 5_000_000, 9)).decode()
    r = client.get("/?" + urlencode(dict(config=bomb)))
    assert r.status_code == 400 and "expands to more than" in r.get_data(as_text=True)
    big = mix_config("spark-3.5-mor-snapshot", 7, 1, ("delete",), 1)
    r = client.get("/?" + urlencode(dict(config=encode_config(big))))
    assert r.status_code == 400 and "writers" in r.get_data(as_text=True)
    for query in (dict(config="undelete-v2-mor-snapshot", path="w1.begin", at="-1"),
                  dict(config="undelete-v2-mor-snapshot", path="~".join(["w1.begin"] * 500)),
                  dict(config="zzzz"), dict(config="undelete-v2-mor-snapshot", path="w1.begin", at="1e9"),
                  dict(config="undelete-v2-mor-snapshot", path="w9.cas")):
        r = client.get("/?" + urlencode(query))
        assert r.status_code == 400, (query, r.status_code)


def test_find_searches_are_capped_in_number_and_bounded_by_states(client, monkeypatch):
    """At most MAX_SEARCHES "find a path" searches run at once (the next is answered 429), and
    each is bounded by a state count (SEARCH_MAX_STATES), not only by time. Nested requests
    from inside a search hold the semaphore deterministically, with no threads or sleeps."""
    from icecheck.explorer import server
    from icecheck.explorer.session import FindResult

    seen = []
    url = "/find?" + urlencode(dict(config="undelete-v2-mor-snapshot", path="",
                                    goal="property:any"))

    def held_search(self, property=None, validation=None, *, max_states=None, **kw):
        seen.append(max_states)
        if len(seen) <= server.MAX_SEARCHES:
            seen.append(client.get(url).status_code)
        return FindResult(False, "g", [], 0, "not found (test)")

    monkeypatch.setattr(Session, "find_path", held_search)
    r = client.get(url)
    assert r.status_code == 200 and "not found (test)" in r.get_data(as_text=True)
    statuses = [x for x in seen if x in (200, 429)]
    bounds = [x for x in seen if x not in (200, 429)]
    assert statuses == [429, 200], seen        # the third concurrent search was refused
    assert bounds == [server.SEARCH_MAX_STATES] * server.MAX_SEARCHES
    assert client.get(url).status_code == 200  # and the semaphore was released


def test_request_log_has_no_ansi_colours_when_not_a_terminal(caplog):
    """Werkzeug colours its request log; in a log file or CI that is escape-code litter."""
    import io
    import threading
    import urllib.error
    import urllib.request

    from werkzeug.serving import WSGIRequestHandler, make_server

    from icecheck.explorer.server import request_handler

    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert request_handler(Tty()) is WSGIRequestHandler
    handler = request_handler(io.StringIO())
    assert handler is not WSGIRequestHandler
    app = create_app(trace=UNDELETE_TRACE)
    srv = make_server("127.0.0.1", 0, app, threaded=False, request_handler=handler)
    t = threading.Thread(target=srv.handle_request)
    t.start()
    with caplog.at_level("INFO", logger="werkzeug"):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{srv.server_port}/?config=zz", timeout=60)
        except urllib.error.HTTPError as e:
            assert e.code == 400          # a 4xx: Werkzeug would colour it bold red
        t.join()
    srv.server_close()
    lines = [r.getMessage() for r in caplog.records if r.name == "werkzeug"]
    assert any("GET /?config=zz" in m and " 400 " in m for m in lines), lines
    assert not any("\x1b[" in m for m in lines), lines


# -- the command line ------------------------------------------------------------------------
def icecheck(*args):
    return subprocess.run([sys.executable, "-m", "icecheck", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def test_cli_opens_a_shipped_trace_by_its_name(tmp_path):
    """``--trace undelete-v2-mor-snapshot`` (no file of that name where it runs) is the shipped
    trace: the served page opens at its violating step. An unknown name exits 2."""
    import urllib.request

    proc = subprocess.Popen([sys.executable, "-m", "icecheck", "explore", "--interactive",
                             "--trace", "undelete-v2-mor-snapshot", "--port", "0"],
                            cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("icecheck explorer: http://127.0.0.1:"), (line, proc.stderr)
        with urllib.request.urlopen(line.split(": ", 1)[1].strip(), timeout=120) as r:
            page = r.read().decode()
        assert "step <b>6</b> of 6" in page and 'data-anomaly="undelete"' in page
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
    p = subprocess.run([sys.executable, "-m", "icecheck", "explore", "--interactive", "--trace",
                        "no-such-trace"], capture_output=True, text=True, cwd=str(tmp_path),
                       timeout=120)
    assert p.returncode == 2 and "no-such-trace" in p.stderr and "Traceback" not in p.stderr


def test_cli_argument_errors_exit_2():
    p = icecheck("explore")
    assert p.returncode == 2 and "--profile" in p.stderr
    p = icecheck("explore", "--trace", UNDELETE_TRACE)
    assert p.returncode == 2 and "--trace needs --interactive" in p.stderr
    p = icecheck("explore", "--interactive")
    assert p.returncode == 2 and "needs --trace TRACE or --profile" in p.stderr
    p = icecheck("explore", "--interactive", "--trace", os.path.join(ROOT, "README.md"))
    assert p.returncode == 2 and "bad trace" in p.stderr
    p = icecheck("explore", "--interactive", "--profile", "spark-9")
    assert p.returncode == 2


def test_the_page_marks_the_step_where_the_anomaly_became_inevitable():
    """Loaded from the undelete trace, the explorer computes (with the engines' search from
    each state of the path) that the DELETE was doomed once w1's UPDATE committed (step 4),
    marks that step in the path and links to it."""
    import html

    from icecheck.explorer.server import create_app

    trace = os.path.join(ROOT, "traces", "undelete-v2-mor-snapshot.json")
    s = Session.from_trace(trace)
    prop, found = s.inevitable()
    assert prop == "undelete" and found.step == 4
    client = create_app(trace=trace).test_client()
    page = client.get("/", follow_redirects=True).get_data(as_text=True)
    assert 'id="inevitable"' in page and "after step 4" in page
    link = html.unescape(page.split('id="inevitable"')[1].split('href="')[1].split('"')[0])
    assert "at=4" in link and client.get(link).status_code == 200
    assert 'data-k="4" title="from here the anomaly is inevitable"' in page
    assert 'class="inevitable"' in page                  # opened at step 6: step 4 is behind
    at0 = client.get(html.unescape(link).replace("at=4", "at=0")).get_data(as_text=True)
    assert 'class="ahead inevitable"' in at0
