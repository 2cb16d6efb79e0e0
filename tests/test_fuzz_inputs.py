"""Malformed input of any kind: exit 2 with one line naming the file (or the option), never a
traceback, never a hang.

A property-based test: Hypothesis (derandomized, bounded by example counts) mutates the valid
inputs icecheck ships (built-in scenarios, corpus traces, the exploration list, the sweep
space) by structure (type swaps, deletions, duplications, huge and non-finite numbers, deep
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
