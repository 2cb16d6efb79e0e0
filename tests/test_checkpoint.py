"""Checkpoint and resume of the exhaustive BFS, and the memory bound (engines/checkpoint.py).

A search stopped part-way (by --max-states, Ctrl-C, the memory bound) and resumed from its
checkpoint must give exactly what an uninterrupted search gives: states, transitions, counts,
coverage, verdicts, shortest counterexamples and their traces. A checkpoint of another search,
of another model, or a damaged one is refused with one line naming the option. Every run here
is bounded by state counts (the configuration has 517 states); nothing is timed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from icecheck.engines import checkpoint as ckmod
from icecheck.engines.checkpoint import Checkpointer, CheckpointError, rebuild_states
from icecheck.engines.config import mix_config
from icecheck.engines.explicit import Bounds, Expander, search, with_retries

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CFG = with_retries(mix_config("spark-3.5-mor-snapshot", 3, 1, ("delete", "update"), 1), 1)
CLI_CFG = ["--engine", "bfs", "--profile", "spark-3.5-mor-snapshot", "--writers", "3",
           "--mix", "delete,update", "--retries", "1", "--workers", "1"]


def signature(r) -> tuple:
    """Everything a search result says that must not depend on an interruption."""
    def found(vs):
        return {p: (v.depth, v.unexpected, v.known, v.states_before, list(v.actions),
                    v.trace["actions"] if v.trace else None) for p, v in vs.items()}
    return (r.states, r.transitions, r.enabled_transitions, r.max_depth, r.cut,
            r.final_states, r.complete, dict(r.coverage), dict(r.reached),
            dict(r.violation_counts), dict(r.allowed_counts), r.outcomes,
            found(r.violations), found(r.allowed))


@pytest.fixture(scope="module")
def full():
    r = search(CFG, engine="bfs", workers=1)
    assert r.complete and r.states == 517 and r.violations     # something to trace
    return r


def test_resume_after_max_states_gives_the_uninterrupted_result(full, tmp_path):
    lines = []
    part = search(CFG, engine="bfs", workers=1, bounds=Bounds(max_states=300),
                  checkpoint=Checkpointer(str(tmp_path), every=100, notify=lines.append))
    assert part.stopped == "max states" and part.states < full.states
    assert len(lines) >= 2                            # periodic checkpoints, then the stop's
    assert any("checkpoint written to" in n for n in part.notes)
    # resumed with another worker count: the owner of a state changes nothing
    res = search(CFG, engine="bfs", workers=2,
                 checkpoint=Checkpointer(str(tmp_path), resume=True, every=100))
    assert signature(res) == signature(full)
    assert any(n.startswith("resumed from the checkpoint") for n in res.notes)
    # a completed search's checkpoint resumes into the same result at once
    again = search(CFG, engine="bfs", workers=1,
                   checkpoint=Checkpointer(str(tmp_path), resume=True))
    assert signature(again) == signature(full)


def test_interrupted_mid_search_and_a_periodic_checkpoint_resume(full, tmp_path):
    """Ctrl-C after a level's expansion (before its successors are committed) writes the
    checkpoint of that level's start; a copy of an earlier periodic checkpoint, taken while
    the search ran, resumes to the same result too."""
    run, copy = tmp_path / "run", tmp_path / "copy"
    written, calls = [], []

    def progress(p):
        calls.append(p["states"])
        if len(written) == 2 and not copy.exists():
            shutil.copytree(run, copy)
        if len(calls) == 9:
            raise KeyboardInterrupt

    part = search(CFG, engine="bfs", workers=1, progress=progress,
                  checkpoint=Checkpointer(str(run), every=50, notify=written.append))
    assert part.stopped == "interrupted" and copy.exists() and len(written) >= 3
    for folder in (run, copy):
        res = search(CFG, engine="bfs", workers=1,
                     checkpoint=Checkpointer(str(folder), resume=True, every=50))
        assert signature(res) == signature(full), folder


def test_memory_bound_stops_cleanly_and_resumes(full, tmp_path, monkeypatch):
    monkeypatch.setattr(ckmod, "MEMORY_CHECK_EVERY", 64)
    part = search(CFG, engine="bfs", workers=1, bounds=Bounds(max_memory_mb=1),
                  checkpoint=Checkpointer(str(tmp_path)))
    assert part.stopped == "memory bound" and not part.complete
    assert any(n.startswith("memory bound: the search's processes held") for n in part.notes)
    assert os.path.exists(tmp_path / "checkpoint.json")
    res = search(CFG, engine="bfs", workers=1,
                 checkpoint=Checkpointer(str(tmp_path), resume=True))
    assert signature(res) == signature(full)
    # the workers' memory counts too; DFS honours the bound; a generous one changes nothing
    two = search(CFG, engine="bfs", workers=2, bounds=Bounds(max_memory_mb=1), traces=False)
    assert two.stopped == "memory bound"
    d = search(CFG, engine="dfs", bounds=Bounds(max_memory_mb=1), traces=False)
    assert d.stopped == "memory bound"
    big = search(CFG, engine="bfs", workers=1, bounds=Bounds(max_memory_mb=10**6))
    assert signature(big) == signature(full)


def _stopped_checkpoint(folder) -> str:
    search(CFG, engine="bfs", workers=1, bounds=Bounds(max_states=300), traces=False,
           checkpoint=Checkpointer(str(folder), every=100))
    return str(folder)


def test_another_search_is_refused_naming_what_differs(tmp_path):
    d = _stopped_checkpoint(tmp_path)
    other = with_retries(mix_config("spark-3.5-mor-snapshot", 2, 1, ("delete", "update"), 1), 1)
    with pytest.raises(CheckpointError) as e:
        search(other, engine="bfs", workers=1, checkpoint=Checkpointer(d, resume=True))
    assert e.value.option == "--writers/--ops/--mix/--keys" and "writers differs" in str(e.value)
    with pytest.raises(CheckpointError) as e:
        search(CFG, engine="bfs", workers=1, por=False, checkpoint=Checkpointer(d, resume=True))
    assert e.value.option == "--no-por"
    with pytest.raises(CheckpointError) as e:
        search(CFG, engine="bfs", bounds=Bounds(max_depth=5),
               checkpoint=Checkpointer(d, resume=True))
    assert e.value.option == "--max-depth"
    # a fresh run never overwrites a checkpoint; --resume needs one; checkpoints are BFS's
    with pytest.raises(CheckpointError, match="already holds a checkpoint"):
        search(CFG, engine="bfs", checkpoint=Checkpointer(d))
    with pytest.raises(CheckpointError, match="no checkpoint") as e:
        search(CFG, engine="bfs", checkpoint=Checkpointer(str(tmp_path / "none"), resume=True))
    assert e.value.option == "--resume"
    with pytest.raises(ValueError, match="bfs"):
        search(CFG, engine="dfs", checkpoint=Checkpointer(str(tmp_path / "dfs")))


def _edit_header(d, change):
    path = os.path.join(d, "checkpoint.json")
    with open(path) as f:
        head = json.load(f)
    change(head)
    head["digest"] = ckmod._header_digest(head)
    with open(path, "w") as f:
        json.dump(head, f)


@pytest.mark.parametrize("damage", ["truncated", "flipped", "header", "edited", "frontier",
                                    "model"])
def test_a_damaged_checkpoint_is_one_clear_error(tmp_path, damage):
    d = _stopped_checkpoint(tmp_path)
    visited = os.path.join(d, "visited.bin")
    if damage == "truncated":
        with open(visited, "r+b") as f:
            f.truncate(os.path.getsize(visited) - 10)
    elif damage == "flipped":
        with open(visited, "r+b") as f:
            f.seek(40)
            b = f.read(1)
            f.seek(40)
            f.write(bytes([b[0] ^ 1]))
    elif damage == "header":
        with open(os.path.join(d, "checkpoint.json"), "w") as f:
            f.write('{"format": "icecheck-checkpoint/1", "seq": ')
    elif damage == "edited":         # a hand edit without the digest
        path = os.path.join(d, "checkpoint.json")
        with open(path) as f:
            head = json.load(f)
        head["result"]["states"] += 1
        with open(path, "w") as f:
            json.dump(head, f)
    elif damage == "frontier":
        (name,) = [n for n in os.listdir(d) if n.startswith("frontier.")]
        with open(os.path.join(d, name), "ab") as f:
            f.write(b"\0")
    elif damage == "model":
        _edit_header(d, lambda h: h.update(code="0" * 32))
    with pytest.raises(CheckpointError) as e:
        search(CFG, engine="bfs", workers=1, checkpoint=Checkpointer(d, resume=True))
    msg = str(e.value)
    assert "\n" not in msg
    assert ("another version of the model" in msg) if damage == "model" else \
        ("corrupt checkpoint" in msg)
    if damage == "truncated":
        assert "truncated" in msg


def test_records_after_the_last_header_are_ignored(full, tmp_path):
    """A run killed while appending leaves records no header counts: they are cut off."""
    d = _stopped_checkpoint(tmp_path)
    with open(os.path.join(d, "visited.bin"), "ab") as f:
        f.write(b"\x07" * 100)
    res = search(CFG, engine="bfs", workers=1, checkpoint=Checkpointer(d, resume=True))
    assert signature(res) == signature(full)


def test_replay_detects_a_path_that_does_not_fit():
    ex = Expander(CFG, True, True, Bounds())
    s0 = ex.model.initial()
    fp0 = ex.fingerprints(s0)[0]
    got, bad = rebuild_states(ex.model, ex.fingerprints,
                              [(fp0, []), (b"x" * 16, ["w1.begin"]), (b"y" * 16, ["w9.cas"])])
    assert list(got) == [fp0] and sorted(bad) == [b"x" * 16, b"y" * 16]


# -- the command line ---------------------------------------------------------------------------
def icecheck(*args):
    return subprocess.run([sys.executable, "-m", "icecheck", *args], capture_output=True,
                          text=True, cwd=ROOT)


def _summary(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith("states "))


def test_cli_checkpoint_resume_and_errors(tmp_path):
    d = str(tmp_path / "ck")
    whole = icecheck("explore", *CLI_CFG)
    assert whole.returncode == 0, whole.stderr
    part = icecheck("explore", *CLI_CFG, "--max-states", "300", "--checkpoint", d,
                    "--checkpoint-every", "100")
    assert part.returncode == 1 and "INCONCLUSIVE" in part.stderr
    assert "checkpoint 1:" in part.stderr and "--resume" in part.stderr
    again = icecheck("explore", *CLI_CFG, "--checkpoint", d)
    assert again.returncode == 2 and "already holds a checkpoint" in again.stderr
    other = icecheck("explore", *[a if a != "3" else "2" for a in CLI_CFG], "--checkpoint", d,
                     "--resume")
    assert other.returncode == 2
    assert other.stderr.strip().splitlines() == [
        f"error: --writers: the checkpoint in {d} is of another search: it was written with "
        "--writers 3, this run has --writers 2 (resume with the checkpoint's options, or start "
        "over in another folder)"]
    res = icecheck("explore", *CLI_CFG, "--checkpoint", d, "--resume")
    assert res.returncode == 0, res.stderr
    assert _summary(res.stdout).split("seconds")[0] == _summary(whole.stdout).split("seconds")[0]
    assert "resumed from the checkpoint" in res.stderr
    with open(os.path.join(d, "visited.bin"), "r+b") as f:
        f.truncate(100)
    bad = icecheck("explore", *CLI_CFG, "--checkpoint", d, "--resume")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "corrupt checkpoint" in bad.stderr and "Traceback" not in bad.stderr


def test_cli_long_run_options_need_their_engine(tmp_path):
    d = str(tmp_path / "ck")
    for args, option in ((["--engine", "dfs", "--checkpoint", d], "--checkpoint"),
                         (["--engine", "bfs", "--resume"], "--resume"),
                         (["--engine", "bfs", "--checkpoint-every", "10"], "--checkpoint-every"),
                         (["--engine", "spark-bfs", "--max-memory", "100"], "--max-memory"),
                         (["--engine", "bfs", "--max-memory", "0"], "--max-memory")):
        proc = icecheck("explore", "--profile", "spark-3.5-mor-snapshot", *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and option in proc.stderr, args
    mem = icecheck("explore", *CLI_CFG, "--max-memory", "1", "--json")
    assert mem.returncode == 1 and "INCONCLUSIVE: --max-memory 1 MB" in mem.stderr
    doc = json.loads(mem.stdout)
    assert doc["stopped"] == "memory bound" and doc["bounds"]["max_memory_mb"] == 1


# -- a checkpoint edited and re-sealed (issue 45): every field checked on load -----------------
def _edit_visited(d, change):
    """Change the parent records of ``d`` (``change(records)``, each a [fp, parent, label
    index] list) and re-seal them: the visited file's digest in the header, then the
    header's own digest, as a hand edit that knows the format would."""
    import hashlib
    rec = ckmod._RECORD
    path = os.path.join(d, "visited.bin")
    with open(path, "rb") as f:
        data = f.read()
    records = [list(rec.unpack_from(data, i * rec.size)) for i in range(len(data) // rec.size)]
    change(records)
    buf = b"".join(rec.pack(*r) for r in records)
    with open(path, "wb") as f:
        f.write(buf)
    _edit_header(d, lambda h: h["visited"].update(
        records=len(records), digest=hashlib.blake2b(buf, digest_size=16).hexdigest()))


def _frontier_fps(d) -> list[bytes]:
    with open(os.path.join(d, "checkpoint.json")) as f:
        head = json.load(f)
    with open(os.path.join(d, head["frontier"]["file"]), "rb") as f:
        data = f.read()
    return [fp for fp, _ in ckmod._decode_frontier(data, head["labels"],
                                                   head["frontier"]["count"])]


def _repoint(target: str):
    """A change of the visited records: the first frontier state's parent becomes an
    unknown state, or (``cycle``) its parent's parent becomes that state itself."""
    def change(records, d):
        index = {r[0]: i for i, r in enumerate(records)}
        child = index[_frontier_fps(d)[0]]
        if target == "unknown":
            records[child][1] = b"\x01" * 16
        else:
            parent = index[records[child][1]]
            records[parent][1], records[parent][2] = records[child][0], records[child][2]
    return change


@pytest.mark.parametrize("damage,where", [
    ("nested", "checkpoint.json:2: nested more than 100 levels deep"),
    ("not-json", "checkpoint.json:1: not valid JSON"),
    ("result", "checkpoint.json: result.coverage: must be an object of counts, not a list"),
    ("counter", "checkpoint.json: result.transitions: must be a non-negative integer, not -1"),
    ("negative-depth", "checkpoint.json: depth: must be a non-negative integer, not -5"),
    ("depth", "checkpoint.json: result.max_depth: must be the checkpoint's depth"),
    ("elapsed", "checkpoint.json: elapsed: must be a number of seconds from 0, not NaN"),
    ("violation", "checkpoint.json: result.violations[0].actions: must be a path of"),
    ("property", "checkpoint.json: result.violations[0].property: must be a property"),
    ("labels", "checkpoint.json: labels[1]: the label"),
    ("frontier-file", "checkpoint.json: frontier.file: must be a file name"),
    ("unknown-parent", "visited.bin: record"),
    ("cycle", "visited.bin: record"),
    ("label-index", "visited.bin: record 2: its action label index"),
    ("root", "visited.bin: record 1: the first record is not the initial state"),
])
def test_an_edited_and_resealed_checkpoint_is_refused_naming_the_field(tmp_path, damage, where):
    """The header's digest only catches accidents: a checkpoint edited and re-sealed (or
    written by a bug) is checked field by field and record by record, and refused with one
    line naming the file and the field (``result.coverage``) or record, never a traceback,
    a KeyError in path reconstruction or an endless walk round a cycle of parent pointers."""
    d = _stopped_checkpoint(tmp_path)
    header = os.path.join(d, "checkpoint.json")
    if damage == "nested":
        with open(header, "w") as f:
            f.write('{"format": "icecheck-checkpoint/1",\n "x": ' + "[" * 5000 + "]" * 5000
                    + "}")
    elif damage == "not-json":
        with open(header, "w") as f:
            f.write('{"format": "icecheck-checkpoint/1", "seq": }')
    elif damage == "result":
        _edit_header(d, lambda h: h["result"].update(coverage=[]))
    elif damage == "counter":
        _edit_header(d, lambda h: h["result"].update(transitions=-1))
    elif damage == "negative-depth":
        _edit_header(d, lambda h: h.update(depth=-5))
    elif damage == "depth":
        _edit_header(d, lambda h: h.update(depth=h["depth"] + 1))
    elif damage == "elapsed":
        _edit_header(d, lambda h: h.update(elapsed=float("nan")))
    elif damage == "violation":
        _edit_header(d, lambda h: h["result"]["violations"][0]["actions"].pop())
    elif damage == "property":
        _edit_header(d, lambda h: h["result"]["violations"][0].update(property="no_such"))
    elif damage == "labels":
        _edit_header(d, lambda h: h.update(labels=[h["labels"][0]] + h["labels"]))
    elif damage == "frontier-file":
        _edit_header(d, lambda h: h["frontier"].update(file="../../etc/passwd"))
    elif damage in ("unknown-parent", "cycle"):
        change = _repoint("unknown" if damage == "unknown-parent" else "cycle")
        _edit_visited(d, lambda records: change(records, d))
    elif damage == "label-index":
        _edit_visited(d, lambda records: records[1].__setitem__(2, 10**6))
    elif damage == "root":
        _edit_visited(d, lambda records: records[0].__setitem__(1, b"\x02" * 16))
    with pytest.raises(CheckpointError) as e:
        search(CFG, engine="bfs", workers=1, checkpoint=Checkpointer(d, resume=True))
    msg = str(e.value)
    assert "\n" not in msg and f"{d}{os.sep}{where}" in msg, msg


def test_a_checkpoint_whose_depth_disagrees_with_its_paths_is_refused(tmp_path):
    """Depth and the counters agree, but the frontier's paths are shorter: the restored
    search would count depths wrong from there on."""
    d = _stopped_checkpoint(tmp_path)
    _edit_header(d, lambda h: (h.update(depth=h["depth"] + 1),
                               h["result"].update(max_depth=h["depth"])))
    with pytest.raises(CheckpointError, match="does not fit itself") as e:
        search(CFG, engine="bfs", workers=1, checkpoint=Checkpointer(d, resume=True))
    assert e.value.option == "--resume"


class _Counting(dict):
    """Parent pointers that count their lookups and fail past ``limit``: a path walk that
    never ends fails the test by a count, not a clock."""

    def __init__(self, items, limit):
        super().__init__(items)
        self.left = limit

    def _tick(self):
        self.left -= 1
        assert self.left > 0, "the path walk did not stop"

    def get(self, key, default=None):
        self._tick()
        return super().get(key, default)

    def __getitem__(self, key):
        self._tick()
        return super().__getitem__(key)


def test_path_reconstruction_refuses_unknown_parents_and_cycles():
    from icecheck.engines.explicit import _Paths
    a, b, c, root = b"a" * 16, b"b" * 16, b"c" * 16, b"r" * 16
    good = _Paths(_Counting({root: (None, None), a: (root, "w1.begin"), b: (a, "w1.refresh")},
                            100))
    assert good(b) == ["w1.begin", "w1.refresh"]
    with pytest.raises(CheckpointError, match="never visited"):
        _Paths(_Counting({root: (None, None), a: (c, "w1.begin")}, 100))(a)
    with pytest.raises(CheckpointError, match="cycle") as e:
        _Paths(_Counting({root: (None, None), a: (b, "w1.begin"), b: (a, "w2.begin")},
                         100))(a)
    assert e.value.option == "--resume" and "\n" not in str(e.value)


def test_cli_an_edited_checkpoint_is_one_line_exit_2(tmp_path):
    d = str(tmp_path / "ck")
    part = icecheck("explore", *CLI_CFG, "--max-states", "300", "--checkpoint", d)
    assert part.returncode == 1, part.stderr
    change = _repoint("cycle")
    _edit_visited(d, lambda records: change(records, d))
    bad = icecheck("explore", *CLI_CFG, "--checkpoint", d, "--resume")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    (line,) = bad.stderr.strip().splitlines()
    assert line.startswith(f"error: --checkpoint: corrupt checkpoint {d}{os.sep}visited.bin: "
                           "record "), line
    _edit_header(d, lambda h: h["result"].update(coverage=[]))
    bad = icecheck("explore", *CLI_CFG, "--checkpoint", d, "--resume")
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        f"error: --checkpoint: corrupt checkpoint {d}{os.sep}checkpoint.json: result.coverage: "
        "must be an object of counts, not a list"]
