"""Malformed input of any kind: exit 2 with one line naming the file (or the option), never a
traceback, never a hang.

A property-based test: Hypothesis (derandomized, bounded by example counts) mutates the valid
inputs icecheck ships (built-in scenarios, corpus traces, the exploration list, the sweep
space) and a small pipeline file (``icecheck check FILE.yaml``) by structure (type swaps, deletions, duplications, huge and non-finite numbers, deep
nesting, long filters) and by bytes (flips, truncation, non-UTF-8), and feeds each to its
loader or command. A mutant may still be valid: then any verdict is fine. What must never
happen is an exception other than ``InputError``/``SystemExit``, an exit-2 answer of more than
one line, or a run that does not end (a 60 s alarm; a hang detector, not a speed assertion).
"""

from __future__ import annotations

import contextlib
import copy
import glob
import json
import os
import signal

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icecheck.cli.main import main
from icecheck.scenarios import builtin_scenario_files
from icecheck.scenarios.errors import InputError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIOS = builtin_scenario_files()[::6]
TRACES = sorted(glob.glob(os.path.join(ROOT, "traces", "*.json")))

NASTY = [None, True, False, 0, -1, 2 ** 70, 2.0, float("nan"), float("inf"), "no", "", [], {},
         [[[[[[[[[[[[]]]]]]]]]]]], {"a": {"b": {"c": 1}}}, "x" * 500,
         " and ".join(["id = 1"] * 400), "(" * 300 + "id = 1" + ")" * 300, "w1", "DELETE"]
FUZZ = settings(max_examples=60, derandomize=True, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


class Hang(Exception):
    pass


@contextlib.contextmanager
def hang_detector(seconds: int = 60):
    def alarm(*_):
        raise Hang()
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@st.composite
def mutated(draw, doc):
    """``doc`` with one to three structural mutations at random paths."""
    doc = json.loads(json.dumps(doc))
    for _ in range(draw(st.integers(1, 3))):
        doc = _mutate(draw, doc)
    return doc


def _mutate(draw, node):
    if isinstance(node, dict) and node:
        key = draw(st.sampled_from(sorted(node, key=str)))
        how = draw(st.sampled_from(["delete", "replace", "recurse", "recurse"]))
        if how == "delete":
            del node[key]
        elif how == "replace":
            node[key] = _nasty(draw)
        else:
            node[key] = _mutate(draw, node[key])
        return node
    if isinstance(node, list) and node:
        i = draw(st.integers(0, len(node) - 1))
        how = draw(st.sampled_from(["delete", "duplicate", "replace", "recurse", "recurse"]))
        if how == "delete":
            node.pop(i)
        elif how == "duplicate":
            node.append(node[i])
        elif how == "replace":
            node[i] = _nasty(draw)
        else:
            node[i] = _mutate(draw, node[i])
        return node
    return _nasty(draw)


def _nasty(draw):
    """A fresh copy of a nasty value: later mutations must never change ``NASTY`` itself (the
    next example would then draw from another list, and Hypothesis reports it as flaky)."""
    return copy.deepcopy(draw(st.sampled_from(NASTY)))


@st.composite
def byte_mutated(draw, data: bytes):
    how = draw(st.sampled_from(["flip", "truncate", "non-utf8", "insert"]))
    i = draw(st.integers(0, max(0, len(data) - 1)))
    if how == "flip":
        return data[:i] + bytes([data[i] ^ draw(st.integers(1, 255))]) + data[i + 1:]
    if how == "truncate":
        return data[:i]
    if how == "non-utf8":
        return data[:i] + b"\xff\xfe\xc3" + data[i:]
    return data[:i] + draw(st.sampled_from([b"&a [*a]", b": :", b"{{", b"\t", b"\x00"])) + data[i:]


def run_cli(args: list[str]):
    with hang_detector():
        result = CliRunner().invoke(main, args)
    exc = result.exception
    assert exc is None or isinstance(exc, SystemExit), \
        f"{args}: {type(exc).__name__}: {exc}\n{result.output}"
    if result.exit_code == 2:
        lines = [ln for ln in result.output.strip().splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error:"), result.output
        assert "Traceback" not in result.output
    else:
        assert result.exit_code in (0, 1), (result.exit_code, result.output)
    return result


def write_mutant(data, source: str, folder, name: str, load, dump) -> str:
    """A mutant of ``source`` in ``folder``: structurally mutated (parsed with ``load``,
    written with ``dump``) or byte-mutated, as Hypothesis chooses."""
    path = folder / name
    if data.draw(st.booleans()):
        with open(source, encoding="utf-8") as f:
            path.write_text(dump(data.draw(mutated(load(f)))))
    else:
        with open(source, "rb") as f:
            path.write_bytes(data.draw(byte_mutated(f.read())))
    return str(path)


@pytest.mark.parametrize("source", SCENARIOS, ids=os.path.basename)
@FUZZ
@given(data=st.data())
def test_mutated_scenarios(tmp_path_factory, source, data):
    path = write_mutant(data, source, tmp_path_factory.mktemp("s"), "case.yaml",
                        yaml.safe_load, yaml.safe_dump)
    run_cli(["scenario", "run", path])


@FUZZ
@given(data=st.data())
def test_mutated_traces(tmp_path_factory, data):
    source = data.draw(st.sampled_from(TRACES))
    path = write_mutant(data, source, tmp_path_factory.mktemp("t"), "case.json", json.load,
                        json.dumps)
    run_cli(["replay", path])


def _loader_rejects_cleanly(load, path: str) -> None:
    with hang_detector():
        try:
            load(path)
        except InputError as e:
            text = str(e)
            assert text.startswith(path) and "\n" not in text, text


@FUZZ
@given(data=st.data())
def test_mutated_exploration_lists(tmp_path_factory, data):
    from icecheck.cli.commands_check import explorations_file, load_explorations

    with open(explorations_file(), encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    path = tmp_path_factory.mktemp("x") / "explorations.yaml"
    path.write_text(yaml.safe_dump(data.draw(mutated(doc))))
    _loader_rejects_cleanly(load_explorations, str(path))


@FUZZ
@given(data=st.data())
def test_mutated_sweep_spaces(tmp_path_factory, data):
    from icecheck.sweep.space import SPACE_PATH, cells, load_space

    with open(SPACE_PATH, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    path = tmp_path_factory.mktemp("w") / "space.yaml"
    path.write_text(yaml.safe_dump(data.draw(mutated(doc))))

    def load(p):
        space = load_space(p)
        list(cells(space))           # expanding the space must end, or fail cleanly

    _loader_rejects_cleanly(load, str(path))


#: A valid pipeline touching every section the loader reads (docs/pipelines.md): two jobs on
#: two engines, a template per domain, an ``any``, a partitioned table with properties. Its
#: state space is 53 states, explored whole within ``max_states: 60``; mutants are held to
#: that bound (``_small``), so a valid one is a run of a second, never a large search.
PIPELINE = {
    "name": "fuzzed",
    "table": {"schema": {"id": "int", "day": "string", "v": "string"},
              "partition_spec": ["identity(day)"], "format_version": 2,
              "properties": {"write.delete.mode": "merge-on-read",
                             "write.delete.isolation-level": "serializable"}},
    "catalog": {"kind": "cas", "faults": False, "crashes": False, "applied_failed": False},
    "domain": {"keys": [1], "partitions": ["d1"]},
    "initial_rows": [[1, "d1", "v0"]],
    "key": "id",
    "jobs": [
        {"name": "spark", "profile": "spark-3.5-mor-serializable",
         "program": [{"sql": "DELETE", "where": "id = {key}"}]},
        {"name": "script", "profile": "pyiceberg-0.12-serializable",
         "program": [{"any": [{"sql": "UPDATE", "where": "day = '{partition}'",
                               "set": {"v": "{job}"}},
                              {"sql": "INSERT", "rows": [[2, "d1", "{job}"]]}]}]},
    ],
    "bounds": {"max_states": 60, "max_examples": 5, "seed": 0},
}
PIPELINE_STATES = 60


def _dump(doc) -> str:
    """YAML in the mapping's own order: a schema's column order is the rows' order."""
    return yaml.safe_dump(doc, sort_keys=False)


PIPELINE_FUZZ = settings(FUZZ, max_examples=150)
UNKNOWN_KEYS = ["zz", "Name", "tabel", "profiles", "where ", "7"]


def _small(doc):
    """Keep a mutant's search within ``PIPELINE_STATES``: a deleted ``bounds`` or
    ``max_states`` (default 200,000) or a larger one is put back to the bound; every other
    mutation of ``bounds`` stays, for the loader to judge."""
    if not isinstance(doc, dict):
        return doc
    bounds = doc.setdefault("bounds", {"max_states": PIPELINE_STATES})
    if isinstance(bounds, dict):
        n = bounds.get("max_states")
        if n is None or (isinstance(n, int) and not isinstance(n, bool)
                         and n > PIPELINE_STATES):
            bounds["max_states"] = PIPELINE_STATES
    return doc


def _mappings(node, out):
    """Every mapping in ``node``, ``node`` first."""
    if isinstance(node, dict):
        out.append(node)
        for v in node.values():
            _mappings(v, out)
    elif isinstance(node, list):
        for v in node:
            _mappings(v, out)
    return out


@st.composite
def pipeline_mutant(draw):
    """``PIPELINE`` mutated by structure (``mutated``: deletions, type swaps, odd scalars, deep
    nesting, huge numbers), perhaps with an unknown key in one of its mappings."""
    doc = draw(mutated(PIPELINE))
    targets = _mappings(doc, [])
    if targets and draw(st.booleans()):
        node = draw(st.sampled_from(targets))
        node[draw(st.sampled_from(UNKNOWN_KEYS))] = _nasty(draw)
    return _small(doc)


def _paths(node, prefix=()):
    """The path of every value in ``node`` (keys and list indexes), depth first."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, prefix + (i,))
    return out


def _load_rejects_cleanly(path: str) -> bool:
    """Load a pipeline: True if valid; an ``InputError`` must be one line naming the file."""
    from icecheck.pipelines.load import load_pipeline
    with hang_detector():
        try:
            load_pipeline(path)
        except InputError as e:
            text = str(e)
            assert text.startswith(path) and "\n" not in text, text
            return False
    return True


def test_the_fuzzed_pipeline_is_valid_and_explored_whole(tmp_path):
    """The starting point of the pipeline mutants passes, exhaustively, within the bound the
    mutants keep (else every mutant would only test the loader's first error)."""
    path = tmp_path / "p.yaml"
    path.write_text(_dump(PIPELINE))
    r = run_cli(["check", str(path), "--reports", str(tmp_path / "r")])
    assert r.exit_code == 0 and "exhaustive (BFS): 53 states" in r.output, r.output


@pytest.mark.parametrize("value", [None, True, 2 ** 70, -1, "x", [], {}, [[["deep"]]]],
                         ids=repr)
def test_every_pipeline_key_of_the_wrong_type(tmp_path, value):
    """Each value of the pipeline, one at a time, replaced by a value of another type (or
    another value of its type): the loader accepts it or refuses it in one line naming the
    file, never with another exception."""
    path = str(tmp_path / "p.yaml")
    refused = 0
    for where in _paths(PIPELINE):
        doc = copy.deepcopy(PIPELINE)
        node = doc
        for k in where[:-1]:
            node = node[k]
        node[where[-1]] = copy.deepcopy(value)
        with open(path, "w", encoding="utf-8") as f:
            f.write(_dump(_small(doc)))
        refused += not _load_rejects_cleanly(path)
    assert refused, "no replacement was refused: the loader checks nothing?"


@PIPELINE_FUZZ
@given(data=st.data())
def test_mutated_pipelines(tmp_path_factory, data):
    """``icecheck check`` on a mutant: exit 2 with one ``error:`` line naming the file (after
    at most the progress lines of a check that began), or 0/1 for a valid one; never a
    traceback or another exit code."""
    folder = tmp_path_factory.mktemp("p")
    path = folder / "pipeline.yaml"
    if data.draw(st.integers(0, 3)):
        path.write_text(_dump(data.draw(pipeline_mutant())))
    else:
        path.write_bytes(data.draw(byte_mutated(_dump(PIPELINE).encode())))
    with hang_detector():
        result = CliRunner().invoke(main, ["check", str(path), "--reports",
                                           str(folder / "reports")])
    exc = result.exception
    assert exc is None or isinstance(exc, SystemExit), \
        f"{type(exc).__name__}: {exc}\n{result.output}\n{path.read_text(errors='replace')}"
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
        assert len(errors) == 1 and result.stderr.rstrip().endswith(errors[0]), result.stderr
        assert errors[0].startswith(f"error: {path}"), errors[0]
        assert not result.stdout.strip(), result.stdout
    else:
        assert result.exit_code in (0, 1), (result.exit_code, result.output)


@pytest.mark.parametrize("args", [
    ["explore", "--profile", "spark-3.5-mor-snapshot", "--time-budget", "nan"],
    ["explore", "--profile", "spark-3.5-mor-snapshot", "--time-budget", "-3"],
    ["explore", "--profile", "spark-3.5-mor-snapshot", "--max-examples", "0"],
    ["explore", "--profile", "spark-3.5-mor-snapshot", "--writers", "1e9"],
    ["explore", "--profile", "spark-3.5-mor-snapshot", "--mix", ","],
    ["explore", "--profile", "pyiceberg-0.12-serializable", "--mix", "compact"],
    ["explore", "--engine", "z3", "--profile", "pyiceberg-0.12-snapshot", "--mix", "compact"],
    ["check", "--time-budget", "inf"],
    ["check", "--time-budget", "0"],
    ["z3", "search", "--profile", "spark-3.5-mor-snapshot", "--depth", "-1"],
])
def test_nonsense_options_exit_2(args):
    assert run_cli(args).exit_code == 2
