"""The sweep without Spark: the space as data, filters, stable cell ids, one cell's exploration
(exhaustive, and the Hypothesis fallback) and the reports."""

import json
import os

import pytest

from icecheck.scenarios.errors import InputError
from icecheck.sweep.report import write_reports
from icecheck.sweep.runner import run_cell
from icecheck.sweep.space import Filters, cells, load_space


def one(**filters):
    cs, _ = cells(load_space(), Filters(**filters))
    assert len(cs) == 1, [c["id"] for c in cs]
    return cs[0]


def test_default_space_shape_and_filters():
    space = load_space()
    cs, na = cells(space)
    per_row = [len(space.combos)] * len(space.profiles) + [
        len(own or space.combos) for own in space.mix_combos]
    assert len(cs) + len(na) == sum(per_row) * len(space.catalogs) * len(space.format_versions)
    # a mix with combos of its own (Flink: UPSERT, CDC_DELETE) runs those, not the global ones
    flink = [c for c in cs if "flink" in c["profile"]]
    assert flink and {c["combo"] for c in flink} == {
        "UPDATE+UPSERT", "DELETE+UPSERT", "MERGE_EXISTING+UPSERT", "COMPACT+UPSERT",
        "COMPACT+CDC_DELETE+INSERT"}
    assert all("COMPACT" in c["combo"] and "pyiceberg-0.12" in c["engine"] for c in na)
    assert len({c["id"] for c in cs}) == len(cs)            # ids are unique...
    assert [c["id"] for c in cells(load_space())[0]] == [c["id"] for c in cs]   # ...and stable
    mor, _ = cells(space, Filters(modes=("mor",), catalogs=("cas",), formats=(2,)))
    assert {c["profile"] for c in mor} == {"spark-3.5-mor-serializable", "spark-3.5-mor-snapshot",
                                           "spark-3.5-mor-serializable+pyiceberg-0.12-serializable",
                                           "spark-3.5-mor-serializable+flink-1.20-upsert",
                                           "spark-3.5-mor-snapshot+pyiceberg-0.12-snapshot",
                                           "spark-3.5-mor-snapshot+pyiceberg-0.12-serializable"}
    pair, _ = cells(space, Filters(commands=("UPDATE+DELETE",), profiles=("spark-3.5-*",)))
    # 4 Spark profiles and the 4 mixes that run the pair (a glob matches a mix's name, p1+p2);
    # a command filter matches either order, and the two mixes at different isolation levels
    # run both (a Spark DELETE beside a PyIceberg UPDATE, and the other way round)
    assert {c["combo"] for c in pair} == {"DELETE+UPDATE", "UPDATE+DELETE"} and len(pair) == 40
    assert {c["profile"] for c in pair if c["combo"] == "UPDATE+DELETE"} == {
        "spark-3.5-mor-snapshot+pyiceberg-0.12-serializable",
        "spark-3.5-cow-serializable+pyiceberg-0.12-snapshot"}
    si, _ = cells(space, Filters(isolations=("snapshot",), engines=("pyiceberg-0.12",)))
    # the engine and isolation filters match a mix with a writer of that engine or level
    assert {c["profile"] for c in si} == {"pyiceberg-0.12-snapshot",
                                          "spark-3.5-mor-snapshot+pyiceberg-0.12-snapshot",
                                          "spark-3.5-mor-snapshot+pyiceberg-0.12-serializable",
                                          "spark-3.5-cow-serializable+pyiceberg-0.12-snapshot"}
    py, _ = cells(space, Filters(profiles=("*pyiceberg*",), engines=("spark-3.5",)))
    assert {c["profile"] for c in py} == {"+".join(m) for m in space.mixes
                                          if any(p.startswith("pyiceberg-") for p in m)}


def _mixed_space(tmp_path, mixes="[[spark-3.5-cow-serializable, pyiceberg-0.12-serializable]]"):
    p = tmp_path / "space.yaml"
    p.write_text(f"mixes: {mixes}\ncatalogs: [cas]\nformat_versions: [2]\n"
                 "initial_rows: [[0, v0], [1, v0]]\n"
                 "commands:\n  MERGE: {sql: MERGE, 'on': [id], rows: [[2, '{tag}']]}\n"
                 "  UPDATE: {sql: UPDATE, where: 'id = 1', set: {v: '{tag}'}}\n"
                 "  COMPACT: {sql: COMPACT}\n"
                 "combos: [[MERGE, MERGE], [UPDATE, UPDATE], [COMPACT, COMPACT], "
                 "[UPDATE, UPDATE, UPDATE]]\n")
    return str(p)


def test_mixed_profiles_in_the_space(tmp_path):
    """A mix is a row whose writers run on different engines: each cell carries the writers'
    profiles, explores them as one mixed configuration, and is not applicable when a writer's
    own profile has no rule for its command."""
    from icecheck.sweep.space import explore_config

    space = load_space(_mixed_space(tmp_path))
    cs, na = cells(space)
    label = "spark-3.5-cow-serializable+pyiceberg-0.12-serializable"
    assert {c["profile"] for c in cs + na} == {label}
    assert [c["combo"] for c in na] == ["COMPACT+COMPACT"]
    assert na[0]["not_applicable"] == "w2 (pyiceberg-0.12-serializable) has no rule for COMPACT"
    triple = next(c for c in cs if c["writers"] == 3)
    assert triple["writer_profiles"] == ["spark-3.5-cow-serializable",
                                         "pyiceberg-0.12-serializable",
                                         "spark-3.5-cow-serializable"]   # the mix cycles
    cfg = explore_config(triple)
    assert cfg.mixed and cfg.profile_of(2) == "pyiceberg-0.12-serializable"
    assert cells(load_space(_mixed_space(tmp_path)))[0][0]["id"] == cs[0]["id"]   # stable
    merge = run_cell(next(c for c in cs if c["combo"] == "MERGE+MERGE"))
    # PyIceberg's upsert appends key 2 without validation after the Spark MERGE committed it:
    # a duplicate confirmed on real Spark + PyIceberg (reproducers/), a known finding by the
    # expectation table's mixed rule
    assert merge["complete"] and merge["status"] == "known_finding"
    assert {f["property"] for f in merge["findings"]} == {"duplicate_keys", "isolation"}
    update = run_cell(next(c for c in cs if c["combo"] == "UPDATE+UPDATE"))
    assert update["status"] == "clean" and update["complete"]
    # the writers' profiles are part of a cell's identity (a resumed sweep never confuses them)
    from icecheck.sweep.space import cell_id
    plain = {k: v for k, v in triple.items() if k != "writer_profiles"}
    assert cell_id(plain) != triple["id"] == cell_id(triple)


@pytest.mark.parametrize("mixes,message", [
    ("[[no-such, no-validation]]", "unknown profile 'no-such'"),
    ("[[no-validation]]", "a mix is a list of 2 or 3 profile names"),
    ("[[no-validation, no-validation]]", "a mix names different profiles"),
    ("[spark-3.5-cow-serializable]", "a mix is a list"),
])
def test_bad_mix_is_input_error(tmp_path, mixes, message):
    with pytest.raises(InputError, match=message) as e:
        load_space(_mixed_space(tmp_path, mixes))
    assert e.value.line == 1


def test_bad_space_is_input_error(tmp_path):
    p = tmp_path / "space.yaml"
    p.write_text("profiles: [nope]\ncommands: {D: {sql: DELETE, where: 'id = 1'}}\ncombos: [[D, D]]\n")
    with pytest.raises(InputError, match="unknown profile"):
        load_space(str(p))
    # a bare `on` is the key "on" (YAML 1.1 would read it as true: scenarios/yamlload.py)
    p.write_text("profiles: [no-validation]\ncommands: {M: {sql: MERGE, on: [id], rows: [[1, x]]}}\n"
                 "combos: [[M, M]]\n")
    assert load_space(str(p)).commands["M"]["on"] == ["id"]
    p.write_text("profiles: [no-validation]\ncommands: {M: {sql: MERGE, 1: [id], rows: [[1, x]]}}\n"
                 "combos: [[M, M]]\n")
    with pytest.raises(InputError, match="key 1 is not a name"):
        load_space(str(p))


def test_known_cells():
    undelete = run_cell(one(
        profiles=("spark-3.5-mor-snapshot",), catalogs=("cas",), formats=(2,),
        commands=("DELETE+UPDATE",)))
    assert undelete["status"] == "known_finding" and undelete["complete"]
    f = undelete["findings"][0]
    assert f["property"] == "undelete" and f["trace"]["actions"]
    lww = run_cell(one(profiles=("spark-3.5-cow-serializable",), catalogs=("last_writer_wins",),
                       formats=(2,), commands=("INSERT+INSERT",)))
    assert lww["status"] == "expected" and lww["findings"][0]["property"] == "lost_write"
    assert "compare-and-swap" in lww["findings"][0]["reason"]
    merge = run_cell(one(profiles=("spark-3.5-cow-snapshot",), catalogs=("cas",), formats=(2,),
                         commands=("MERGE+MERGE",)))
    assert merge["status"] == "expected"
    assert {x["property"] for x in merge["findings"]} == {"duplicate_keys", "isolation"}
    clean = run_cell(one(profiles=("spark-3.5-cow-serializable",), catalogs=("cas",),
                         formats=(2,), commands=("DELETE+UPDATE",)))
    assert clean["status"] == "clean" and clean["complete"] and not clean["findings"]


def test_hypothesis_fallback_when_search_does_not_finish():
    cell = one(profiles=("spark-3.5-mor-snapshot",), catalogs=("cas",), formats=(2,),
               commands=("DELETE+UPDATE",))
    cell = dict(cell, bounds=dict(cell["bounds"], max_states=3),
                hypothesis={"max_examples": 200, "seed": 0, "time_budget": 30})
    r = run_cell(cell)
    assert not r["complete"] and r["engine_used"] == "bfs+hypothesis"
    assert r["status"] == "known_finding"
    assert any(f["engine"] == "hypothesis" and f["trace"] for f in r["findings"])


def test_reports_without_spark(tmp_path):
    space = load_space()
    cs, na = cells(space, Filters(profiles=("spark-3.5-mor-snapshot", "pyiceberg-0.12-snapshot"),
                                  catalogs=("cas",), formats=(2,),
                                  commands=("DELETE+UPDATE", "UPDATE+COMPACT")))
    results = [run_cell(c) for c in cs]
    summary = write_reports(results, na, str(tmp_path), {"master": "none", "wall_seconds": 0})
    assert summary["cells"] == 3 and summary["not_applicable"] == 1
    html = (tmp_path / "index.html").read_text()
    assert "http" not in html                 # no external asset: all it shows is under out
    assert html.count('class="cell"') >= 3 and "n/a" in html
    assert '<img src="charts/outcomes-by-profile.svg"' in html
    assert (tmp_path / "charts" / "outcomes-by-profile.svg").exists()
    md = (tmp_path / "index.md").read_text()
    assert "spark-3.5-mor-snapshot" in md and "known finding" in md
    traces = sorted(os.listdir(tmp_path / "traces"))
    assert any(t.endswith("-undelete.json") for t in traces)
    doc = json.loads((tmp_path / "traces" / next(t for t in traces
                                                  if t.endswith("-undelete.json"))).read_text())
    from icecheck.traces.replay import replay_doc
    assert replay_doc(doc).ok


def test_trace_page_opens_in_the_explorer_at_the_violating_step(tmp_path):
    """A sweep trace page names the explorer command and the URL paths of the step where the
    anomaly became inevitable (computed by searching every completion) and of its last steps;
    those paths load in the explorer started on that trace, and the last one shows the
    violation."""
    import html as html_mod
    import re

    from icecheck.explorer.server import create_app

    space = load_space()
    cs, _ = cells(space, Filters(profiles=("spark-3.5-mor-snapshot",), catalogs=("cas",),
                                 formats=(2,), commands=("DELETE+UPDATE",)))
    results = [run_cell(c) for c in cs]
    write_reports(results, [], str(tmp_path), {"master": "none", "wall_seconds": 0})
    page = next(p for p in sorted((tmp_path / "traces").glob("*-undelete.html")))
    text = page.read_text()
    assert "icecheck explore --interactive --trace traces/" in text
    urls = [html_mod.unescape(u) for u in re.findall(r'<code class="wrap">([^<]+)</code>', text)]
    assert len(urls) == 3
    assert "at=4" in urls[0] and "(from here the anomaly is inevitable)" in text
    assert 'id="inevitable"' in text and "after step 4" in text
    client = create_app(trace=str(page.with_suffix(".json"))).test_client()
    pages = [client.get(u) for u in urls]
    assert [p.status_code for p in pages] == [200, 200, 200]
    violated = 'class="prop violated status-known_finding" data-property="undelete"'
    assert violated in pages[-1].get_data(as_text=True)       # the violating state
    assert violated not in pages[0].get_data(as_text=True)    # one step before: not yet


def test_session_settings_respect_spark_submit():
    """Run by spark-submit, its --master and memory stand unless given; run directly, the
    sweep uses local[*] and 1g. (No Spark needed: the settings the builder gets.)"""
    from icecheck.sweep.distributed import session_settings

    assert session_settings(None, submitted=True) == (None, {})
    assert session_settings(None, submitted=False) == (
        "local[*]", {"spark.driver.memory": "1g", "spark.executor.memory": "1g"})
    assert session_settings("spark://h:7077", submitted=True, executor_memory="4g") == (
        "spark://h:7077", {"spark.executor.memory": "4g"})
    assert session_settings("local[2]", submitted=False, driver_memory="2g") == (
        "local[2]", {"spark.driver.memory": "2g", "spark.executor.memory": "1g"})


def test_sweep_bad_memory_is_exit_2():
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "icecheck", "sweep", "--executor-memory", "lots",
                        "--list"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "--executor-memory" in p.stderr and "Traceback" not in p.stderr


def test_shipped_wheel_runs_a_cell_on_a_worker_without_icecheck(tmp_path, monkeypatch):
    """--ship-code builds icecheck's wheel (pip wheel, the pyproject build) and each task
    unpacks it once and imports from it: a worker Python whose only icecheck is that unpacked
    wheel runs a cell (profiles, expectations: package data as plain files), and gets the same
    result as the driver's own installation."""
    import subprocess
    import sys

    from icecheck.sweep.distributed import build_wheel, cell_task
    from icecheck.sweep.runner import run_cell_json

    # the task puts the unpacked wheel first on sys.path: only for this test (processes that
    # later tests spawn would import it instead of the checkout)
    monkeypatch.setattr(sys, "path", list(sys.path))
    wheel = build_wheel(str(tmp_path))
    assert wheel.endswith(".whl")
    task = cell_task(os.path.basename(wheel), locate=lambda name: os.path.join(str(tmp_path), name))
    space = load_space()
    cs, _ = cells(space, Filters(profiles=("spark-3.5-mor-snapshot",), catalogs=("cas",),
                                 formats=(2,), commands=("DELETE+UPDATE",)))
    cell = json.dumps(cs[0])
    here = json.loads(task(cell))                       # unpacks, then runs (in this process)
    import tempfile
    target = next(p for p in sys.path if p.startswith(tempfile.gettempdir())
                  and "icecheck-code-" in p)
    assert os.path.exists(os.path.join(target, "icecheck", "models", "profiles", "builtin.yaml"))
    code = ("import json, sys, icecheck; from icecheck.sweep.runner import run_cell_json; "
            "print(icecheck.__file__); print(run_cell_json(sys.stdin.read()))")
    proc = subprocess.run([sys.executable, "-c", code], input=cell, capture_output=True,
                          text=True, cwd=str(tmp_path),
                          env={**{k: v for k, v in os.environ.items() if k != "ICECHECK_COMPILED"},
                               "PYTHONPATH": target})    # a worker with no compiled build
    assert proc.returncode == 0, proc.stderr
    where, result = proc.stdout.splitlines()[0], json.loads(proc.stdout.splitlines()[1])
    assert where.startswith(target)                      # the worker imported the shipped code
    mine = json.loads(run_cell_json(cell))
    for r in (here, result):
        assert r["status"] == mine["status"] != "error"
        assert [f["property"] for f in r["findings"]] == [f["property"] for f in mine["findings"]]
    sys.path.remove(target)


def _cell_results(out):
    d = os.path.join(out, "cells")
    out = {}
    for f in sorted(os.listdir(d)):
        r = json.load(open(os.path.join(d, f)))
        out[f] = (r["status"], r["states"], r["transitions"], r["complete"],
                  [(x["property"], x["status"], x.get("message")) for x in r["findings"]])
    return out


def test_local_executors_match_and_resume(tmp_path):
    """--executor serial and processes run the same cells to the same results as files the
    Spark executor would write; a second run resumes (runs nothing)."""
    from click.testing import CliRunner
    from icecheck.cli.main import main
    args = ["sweep", "--profile", "*flink*", "--catalog", "cas", "--format", "2"]
    outs = {}
    for ex in ("serial", "processes"):
        out = str(tmp_path / ex)
        extra = ["--workers", "2"] if ex == "processes" else []
        r = CliRunner().invoke(main, args + ["--executor", ex, "--out", out, "--json"] + extra)
        assert r.exit_code == 0, r.output
        doc = json.loads(r.output[r.output.index("{"):])
        assert doc["cells"] == 10 and doc["by_status"].get("known_finding") == 2
        outs[ex] = _cell_results(out)
        again = CliRunner().invoke(main, args + ["--executor", ex, "--out", out, "--json"] + extra)
        assert json.loads(again.output[again.output.index("{"):])["meta"]["cells_run"] == 0
    assert outs["serial"] == outs["processes"]


@pytest.mark.parametrize("extra,option", [
    (["--executor", "serial", "--master", "local[2]"], "--master"),
    (["--workers", "2"], "--workers"),
    (["--executor", "serial", "--workers", "2"], "--workers"),
])
def test_executor_options_are_checked(extra, option):
    from click.testing import CliRunner
    from icecheck.cli.main import main
    r = CliRunner().invoke(main, ["sweep", "--profile", "*flink*"] + extra)
    assert r.exit_code == 2 and option in r.output


def test_json_stays_clean_when_spark_submit_merges_stderr(tmp_path):
    """spark-submit runs the driver with its stderr merged into stdout (PythonRunner): with
    --json under spark-submit (PYSPARK_GATEWAY_PORT set) nothing but the JSON is printed."""
    import subprocess
    import sys

    env = dict(os.environ, PYSPARK_GATEWAY_PORT="1")
    p = subprocess.run([sys.executable, "-m", "icecheck", "sweep", "--executor", "serial",
                        "--profile", "spark-3.5-cow-serializable", "--catalog", "cas",
                        "--format-version", "2", "--out", str(tmp_path / "o"), "--json"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert p.returncode == 0, p.stdout[-2000:]
    assert json.loads(p.stdout)["cells"] > 0
