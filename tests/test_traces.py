"""The trace corpus, replay (drift, malformed traces), canonicalization, minimization, timelines."""

import copy
import glob
import json
import os
import subprocess
import sys

import pytest

from icecheck.engines.config import mix_config
from icecheck.models.system import Action
from icecheck.traces import format as fmt
from icecheck.traces.canonical import canonicalize, minimize_actions, shrink
from icecheck.traces.execute import build_trace, model_for, run_actions, violated
from icecheck.traces.replay import replay_doc, replay_file
from icecheck.traces.timeline import render_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = sorted(glob.glob(os.path.join(ROOT, "traces", "*.json")))
UNDELETE = ["w1.begin#1", "w2.begin#0", "w1.refresh", "w1.cas", "w2.refresh", "w2.cas"]


def icecheck(*args):
    return subprocess.run([sys.executable, "-m", "icecheck", *args], capture_output=True,
                          text=True, cwd=ROOT)


def test_corpus_is_seeded():
    names = {os.path.basename(p) for p in CORPUS}
    for required in ("undelete-v2-mor-snapshot.json", "lost-write-last-writer-wins.json",
                     "lost-update-merge-mor-snapshot.json",
                     "undelete-v2-mor-serializable-rejected.json",
                     "undelete-v3-mor-snapshot-rejected.json"):
        assert required in names
    kinds = {fmt.load_trace(p)["kind"] for p in CORPUS}
    assert kinds == {"violation", "allowed", "rejected"}


@pytest.mark.parametrize("path", CORPUS, ids=[os.path.basename(p) for p in CORPUS])
def test_corpus_trace_replays(path):
    r = replay_file(path)
    assert r.ok, r.drift
    doc = fmt.load_trace(path)
    assert doc["states"][0]["#meta"] == {"index": 0}          # ITF-readable
    assert all(s["#meta"]["index"] == i for i, s in enumerate(doc["states"]))
    if doc["kind"] == "rejected":
        assert doc["property"] is None
        outs = [o for w in doc["verdict"]["outcomes"].values() for o in w]
        assert "committed" in outs


def test_rejected_traces_show_validation_failed():
    doc = fmt.load_trace(os.path.join(ROOT, "traces", "undelete-v2-mor-serializable-rejected.json"))
    assert doc["verdict"]["outcomes"]["w2"] == ["validation_failed"]


def test_replay_cli_all_ok():
    proc = icecheck("replay", os.path.join(ROOT, "traces"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 drifted" in proc.stdout


def _tampered(tmp_path, mutate, name="t.json"):
    doc = json.load(open(os.path.join(ROOT, "traces", "undelete-v2-mor-snapshot.json")))
    mutate(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=2))
    return str(path)


def test_tampered_digest_is_drift_exit_1(tmp_path):
    def mutate(doc):
        doc["states"][3]["digest"] = "0" * 24
    path = _tampered(tmp_path, mutate)
    proc = icecheck("replay", path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "DRIFT" in proc.stdout and "step 3" in proc.stdout


def test_tampered_verdict_is_drift(tmp_path):
    def mutate(doc):
        doc["verdict"]["violations"] = [v for v in doc["verdict"]["violations"]
                                        if v["property"] != "undelete"]
    r = replay_file(_tampered(tmp_path, mutate))
    assert not r.ok and any("verdict" in d for d in r.drift)


def test_tampered_outcome_is_drift(tmp_path):
    def mutate(doc):
        doc["verdict"]["outcomes"]["w2"] = ["validation_failed"]
    r = replay_file(_tampered(tmp_path, mutate))
    assert not r.ok and any("outcomes" in d for d in r.drift)


def test_disabled_action_is_drift(tmp_path):
    def mutate(doc):
        doc["actions"][5] = "w1.cas"
    r = replay_file(_tampered(tmp_path, mutate))
    assert not r.ok and "step 6" in r.drift[0] and "not enabled" in r.drift[0]


def test_malformed_json_exit_2_with_line(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{\n  "format": "icecheck-trace",\n  "version": 1,\n  "kind" "x"\n}\n')
    proc = icecheck("replay", str(path))
    assert proc.returncode == 2
    assert f"{path}:4:" in proc.stderr.replace("\n", "")
    assert "Traceback" not in proc.stderr


def test_missing_field_exit_2_names_it(tmp_path):
    path = _tampered(tmp_path, lambda doc: doc.pop("actions"))
    proc = icecheck("replay", path)
    assert proc.returncode == 2
    assert "missing field 'actions'" in proc.stderr and path in proc.stderr.replace("\n", "")


def test_bad_field_names_field_and_line(tmp_path):
    def mutate(doc):
        doc["actions"][2] = "w1.fly"
    path = _tampered(tmp_path, mutate)
    proc = icecheck("replay", path)
    assert proc.returncode == 2
    err = proc.stderr.replace("\n", "")
    assert "actions[2]" in err and f"{path}:" in err


def test_bad_config_exit_2(tmp_path):
    def mutate(doc):
        doc["config"]["profile"] = "spark-9"
    proc = icecheck("replay", _tampered(tmp_path, mutate))
    assert proc.returncode == 2 and "spark-9" in proc.stderr


def test_write_is_atomic_and_round_trips(tmp_path):
    cfg = mix_config("spark-3.5-mor-snapshot")
    doc = build_trace(cfg, UNDELETE, property="undelete", trace_id="u")
    path = str(tmp_path / "sub" / "u.json")
    fmt.write_trace(path, doc)
    assert os.listdir(tmp_path / "sub") == ["u.json"]         # no temp file left behind
    assert replay_file(path).ok
    assert fmt.load_trace(path)["actions"] == [str(Action.parse(a)) for a in UNDELETE]


def test_write_never_leaves_half_a_file(tmp_path, monkeypatch):
    path = tmp_path / "x.json"
    path.write_text("old")

    def boom(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        fmt.write_atomic(str(path), "new")
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["x.json"]


# -- canonicalization and minimization -------------------------------------------------------
def test_canonicalize_renames_writers_by_first_action():
    cfg = mix_config("spark-3.5-mor-snapshot")
    swapped = ["w2.begin#1", "w1.begin#0", "w2.refresh", "w2.cas", "w1.refresh", "w1.cas"]
    c_cfg, c_acts = canonicalize(cfg, swapped)
    assert [str(a) for a in c_acts] == ["w1.begin#1", "w2.begin", "w1.refresh", "w1.cas",
                                        "w2.refresh", "w2.cas"]
    # the programs moved with the writers, and the writer tags were renamed
    text = json.dumps(c_cfg.as_json())
    assert text == json.dumps(cfg.as_json())
    run = run_actions(model_for(c_cfg), c_acts)
    assert "undelete" in violated(run.model, run.final)
    files = sorted(p for p in run.final.store if p.startswith("w"))
    assert all(not p.startswith("w2-") or "w2" in p for p in files)
    assert "w1-1-d1" in files                                   # w1 (the UPDATE) wrote it


def test_minimize_is_deterministic_and_minimal():
    cfg = mix_config("spark-3.5-mor-snapshot", writers=3)
    noisy = ["w3.begin#2", "w3.refresh", "w3.cas", "w2.begin#1", "w1.begin#0", "w2.refresh",
             "w2.cas", "w1.refresh", "w1.cas"]
    a = minimize_actions(cfg, noisy, "undelete")
    b = minimize_actions(cfg, list(noisy), "undelete")
    assert a == b
    assert len(a) == 6 and not any(x.writer == "w3" for x in a)
    s_cfg, s_acts = shrink(cfg, noisy, "undelete")
    assert len(s_cfg.writers) == 2 and len(s_acts) == 6
    assert shrink(cfg, noisy, "undelete") == (s_cfg, s_acts)
    assert [x.writer for x in s_acts][0] == "w1"


def test_minimize_rejects_passing_list():
    cfg = mix_config("spark-3.5-mor-snapshot")
    with pytest.raises(ValueError):
        minimize_actions(cfg, ["w1.begin"], "undelete")


# -- timelines -------------------------------------------------------------------------------
def test_timeline_text():
    doc = fmt.load_trace(os.path.join(ROOT, "traces", "undelete-v2-mor-snapshot.json"))
    text = render_text(doc)
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("step"))
    assert header.split() == ["step", "w1", "w2", "table"]
    assert "VIOLATED undelete" in text
    assert "snapshot 1001 (seq 2)" in text
    w2_col = header.index("w2")
    begin_w2 = next(line for line in lines if "begin DELETE" in line)
    assert begin_w2.index("begin DELETE") == w2_col            # w2's action in w2's column
    rejected = render_text(fmt.load_trace(
        os.path.join(ROOT, "traces", "undelete-v2-mor-serializable-rejected.json")))
    assert "VALIDATION FAILED" in rejected and "REJECTED" in rejected


def test_trace_show_cli_and_svg(tmp_path):
    path = os.path.join(ROOT, "traces", "undelete-v2-mor-snapshot.json")
    svg = tmp_path / "u.svg"
    proc = icecheck("trace", "show", path, "--svg", str(svg))
    if proc.returncode == 2 and "apt-get install graphviz" in proc.stderr:
        pytest.skip("graphviz's dot is not installed")
    assert proc.returncode == 0, proc.stderr
    assert "VIOLATED undelete" in proc.stdout
    assert svg.read_text().lstrip().startswith("<?xml") and "<svg" in svg.read_text()


def test_svg_without_dot_says_how_to_install(tmp_path, monkeypatch):
    from icecheck.traces import timeline
    monkeypatch.setattr(timeline.shutil, "which", lambda name: None)
    doc = fmt.load_trace(os.path.join(ROOT, "traces", "undelete-v2-mor-snapshot.json"))
    with pytest.raises(timeline.GraphvizMissing, match="apt-get install graphviz"):
        timeline.render_svg(doc, str(tmp_path / "x.svg"))


def test_shipped_traces_are_named_by_their_file_name(tmp_path, monkeypatch):
    """From a wheel there is no traces/ folder: ``trace show NAME`` and ``replay NAME`` find a
    shipped corpus trace by its file name, with or without .json (issue 42, item 8); a file
    that exists is always read as given."""
    from click.testing import CliRunner
    from icecheck.cli.main import main
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, ["trace", "show", "undelete-v2-mor-snapshot"])
    assert r.exit_code == 0 and "undone" in r.output, r.output
    r = CliRunner().invoke(main, ["replay", "undelete-v2-mor-snapshot.json"])
    assert r.exit_code == 0 and "1 reproduced" in r.output, r.output
    r = CliRunner().invoke(main, ["trace", "show", "no-such-trace"])
    assert r.exit_code == 2 and "no-such-trace" in r.output
