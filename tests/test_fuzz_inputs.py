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


# -- checkpoints (issue 45, item 6) -------------------------------------------------------------
#: a BFS of 53 states (2 writers, one DELETE or UPDATE each), stopped by --max-states 30 with a
#: checkpoint every 10: a mutant that is still valid resumes a second's search
CK_ARGS = ["explore", "--engine", "bfs", "--profile", "spark-3.5-mor-snapshot", "--writers", "2",
           "--mix", "delete,update", "--retries", "1", "--workers", "1"]
CK_FUZZ = settings(FUZZ, max_examples=40)


@pytest.fixture(scope="module")
def stopped_checkpoint(tmp_path_factory):
    d = tmp_path_factory.mktemp("ck0") / "ck"
    r = run_cli([*CK_ARGS, "--max-states", "30", "--checkpoint", str(d),
                 "--checkpoint-every", "10"])
    assert r.exit_code == 1 and (d / "checkpoint.json").exists(), r.output
    return d


def _reseal(folder, head: dict, files: tuple[str, ...] = ()) -> None:
    """Write ``head`` with digests that match: those of ``files`` (visited.bin, the frontier
    file) when the header still names them where they are, then the header's own. A hand
    edit that knows the format passes the digests: only the checks of every field and record
    stand between it and the search."""
    import hashlib

    from icecheck.engines.checkpoint import _header_digest

    for name in files:
        part = head.get("visited" if name == "visited.bin" else "frontier")
        path = folder / name
        if isinstance(part, dict) and path.exists():
            part["digest"] = hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest()
    head["digest"] = _header_digest(head)
    (folder / "checkpoint.json").write_text(json.dumps(head))


def _value_paths(node, prefix=()):
    """The path (keys and list indexes) of every value in a JSON document."""
    out = [prefix] if prefix else []
    items = node.items() if isinstance(node, dict) else (
        enumerate(node) if isinstance(node, list) else ())
    for k, v in items:
        out += _value_paths(v, prefix + (k,))
    return out


@st.composite
def checkpoint_edit(draw, head):
    """``head`` with one value anywhere in it (all equally likely, however deep) deleted,
    replaced by a nasty value, duplicated in its list, or, for a count, moved by one: the
    edits a person makes, which the header's relations (states = records, depth = the
    paths' length, ...) must catch as well as its types."""
    head = copy.deepcopy(head)
    where = draw(st.sampled_from(_value_paths(head)))
    parent = head
    for k in where[:-1]:
        parent = parent[k]
    key, value = where[-1], parent[where[-1]]
    how = draw(st.sampled_from(["delete", "replace", "duplicate", "nudge"]))
    if how == "delete":
        del parent[key]
    elif how == "duplicate" and isinstance(parent, list):
        parent.insert(key, copy.deepcopy(value))
    elif how == "nudge" and type(value) is int:
        parent[key] = value + draw(st.sampled_from([-1, 1]))
    else:
        parent[key] = _nasty(draw)
    return head


@CK_FUZZ
@given(data=st.data())
def test_mutated_checkpoints(tmp_path_factory, stopped_checkpoint, data):
    """``explore --checkpoint DIR --resume`` on a mutant of a real checkpoint: one value of
    its header edited anywhere, or its header mutated by structure (re-sealed, as a hand edit
    that gets past the digest is, or not) or by bytes, or its visited records or frontier flipped, truncated or extended and
    re-sealed. Exit 2 with one line naming the folder (or a resumed run, 0/1, when the
    mutant is still valid); never a traceback, a KeyError, a RecursionError or a hang."""
    import shutil

    folder = tmp_path_factory.mktemp("ck") / "ck"
    shutil.copytree(stopped_checkpoint, folder)
    header = folder / "checkpoint.json"
    head = json.loads(header.read_text())
    how = data.draw(st.sampled_from(["edit", "edit", "edit", "structure", "unsealed",
                                     "header-bytes", "records", "frontier"]))
    if how in ("edit", "structure", "unsealed"):
        head = data.draw(checkpoint_edit(head) if how == "edit" else mutated(head))
        if how != "unsealed" and isinstance(head, dict):
            _reseal(folder, head)
        else:
            header.write_text(json.dumps(head))
    elif how == "header-bytes":
        header.write_bytes(data.draw(byte_mutated(header.read_bytes())))
    else:
        name = "visited.bin" if how == "records" else head["frontier"]["file"]
        path = folder / name
        raw = path.read_bytes()
        change = data.draw(st.sampled_from(["flip", "truncate", "extend"]))
        i = data.draw(st.integers(0, max(0, len(raw) - 1)))
        if change == "flip" and raw:
            raw = raw[:i] + bytes([raw[i] ^ data.draw(st.integers(1, 255))]) + raw[i + 1:]
        elif change == "truncate":
            raw = raw[:i]
        else:
            raw += data.draw(st.binary(min_size=1, max_size=80))
        path.write_bytes(raw)
        if how == "records" and change != "flip":
            head["visited"]["records"] = len(raw) // 36
        _reseal(folder, head, (name,))
    r = run_cli([*CK_ARGS, "--checkpoint", str(folder), "--resume"])
    if r.exit_code == 2:
        assert str(folder) in r.output, r.output


# -- option values of every command (issue 45, item 6) --------------------------------------------
#: (command line without the option, option, kind, maximum or None): the base lines are cheap
#: (one writer, a few examples, listing only), so a value that is accepted runs seconds
_HYP = ["explore", "--profile", "spark-3.5-mor-snapshot", "--writers", "1", "--mix", "insert",
        "--max-examples", "3"]
_BFS = ["explore", "--engine", "bfs", "--profile", "spark-3.5-mor-snapshot", "--writers", "1",
        "--mix", "insert", "--workers", "1"]
_DFS = ["explore", "--engine", "dfs", "--profile", "spark-3.5-mor-snapshot", "--writers", "1",
        "--mix", "insert"]
_Z3 = ["explore", "--engine", "z3", "--profile", "spark-3.5-mor-snapshot", "--writers", "1",
       "--mix", "insert"]
_Z3S = ["z3", "search", "--profile", "spark-3.5-mor-snapshot", "--writers", "1", "--mix",
        "insert"]
OPTIONS = [
    (_HYP, "--max-examples", "count1", 1_000_000), (_HYP, "--seed", "seed", None),
    (_HYP, "--time-budget", "seconds", None), (_HYP, "--writers", "count1", 9),
    (_HYP, "--ops", "count1", 9), (_HYP, "--keys", "count1", 9),
    (_BFS, "--max-depth", "count0", None), (_BFS, "--max-files", "count0", None),
    (_BFS, "--max-states", "count1", None), (_BFS, "--max-memory", "count1", None),
    (_BFS, "--retries", "count0", 9), (_BFS, "--time-budget", "seconds", None),
    (_BFS, "--checkpoint-every", "count1", None), (_BFS, "--workers", "count1", 64),
    (_DFS, "--max-depth", "count0", None), (_DFS, "--max-states", "count1", None),
    (_DFS, "--max-memory", "count1", None), (_DFS, "--time-budget", "seconds", None),
    (_Z3, "--max-depth", "count0", 200), (_Z3, "--retries", "count0", 9),
    (_Z3, "--max-memory", "refused", None), (_Z3, "--max-states", "refused", None),
    (_Z3, "--workers", "refused", None), (_Z3, "--time-budget", "refused", None),
    (_Z3, "--checkpoint-every", "refused", None),
    (_Z3S, "--depth", "count0", 200), (_Z3S, "--writers", "count1", 9),
    (_Z3S, "--keys", "count1", 9),
    (["z3", "prove-filters", "--depth", "0", "--samples", "3"], "--samples", "count0", 100_000),
    (["z3", "prove-filters", "--samples", "3"], "--depth", "count0", 4),
    (["sweep", "--list", "--executor", "processes"], "--workers", "count1", 256),
    (["compile", "--check"], "--jobs", "count1", None),
    (["conform", "--target", "java"], "--random", "count1", 1_000_000),
    (["conform", "--target", "java"], "--seed", "refused", None),     # only with --random
]
HUGE = str(10 ** 30)
ODD = ["-1", "0", "nan", "inf", "-inf", "1e400", HUGE, "1.5", "abc", "", "0x10", "-0", "1e3"]


def _must_refuse(kind: str, most, value: str) -> bool:
    """Is ``value`` wrong for an option of ``kind`` whatever the rest of the line says?"""
    import math
    if kind == "refused":
        return True
    if kind == "seconds":
        try:
            x = float(value)
        except ValueError:
            return True
        return not math.isfinite(x) or x <= 0
    try:
        n = int(value)
    except ValueError:
        return True
    if kind == "seed":
        return False
    return n < (1 if kind == "count1" else 0) or (most is not None and n > most)


@settings(FUZZ, max_examples=70)
@given(data=st.data())
def test_odd_option_values(tmp_path_factory, data):
    """A count, a number of seconds or a seed given as a negative, 0, nan, inf, a huge
    number, a fraction or text: exit 2 with one line naming the option when the value can
    never be right (or the engine cannot honour the option), else a run of a few seconds;
    never a traceback, another exit code or a hang (the documented upper bounds refuse
    what would run for ever: --max-examples, --samples, --random, z3's depth)."""
    base, option, kind, most = data.draw(st.sampled_from(OPTIONS))
    value = data.draw(st.sampled_from(ODD))
    folder = tmp_path_factory.mktemp("o")
    args = [*base, option, value]
    if option == "--checkpoint-every" and kind != "refused":
        args += ["--checkpoint", str(folder / "ck")]
    if base[0] == "explore":
        args += ["--save-trace", str(folder / "traces")]
    r = run_cli(args)
    if _must_refuse(kind, most, value):
        assert r.exit_code == 2, (args, r.output)
        assert option in r.output or option.lstrip("-") in r.output, (args, r.output)
