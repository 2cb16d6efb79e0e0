"""Long runs that survive (issue 13): checkpoint and resume of the exhaustive BFS
(``icecheck explore --engine bfs --checkpoint DIR [--resume]``, as TLC's ``-recover``), and a
memory bound (``--max-memory MB``) that stops a search with a message instead of letting the
OOM killer end it without a word.

What a checkpoint is. The BFS (``engines/explicit.py``) is level-synchronous: at the start of a
level its whole state is the visited set with each state's parent pointer (parent fingerprint,
action label), the frontier (fingerprint and POR pruned set of each state of the level), the
depth and the counters folded so far. A checkpoint holds exactly that, taken at the start of a
level; the frontier's *states* are not stored but rebuilt on resume by replaying each one's
parent path from the initial state (the BFS keeps, for every fingerprint, the concrete state its
first edge reached, so the replay gives the very state the uninterrupted run holds, and its
fingerprint is checked). Resuming therefore redoes the interrupted level from its start and
gives the same states, transitions, verdicts, counts and shortest counterexamples as a run that
was never stopped (``tests/test_checkpoint.py``).

Files in DIR (one checkpoint per folder):

* ``visited.bin``: the parent pointers, append-only fixed-size records (fingerprint, parent
  fingerprint, index of the action label), in the order the BFS visited the states; a later
  checkpoint appends only the states visited since the previous one, so checkpoint ``k`` costs
  what was explored since ``k-1``, not the whole visited set again;
* ``frontier.<seq>.bin``: the frontier of checkpoint ``seq`` (fingerprint, pruned labels);
* ``checkpoint.json``: the commit point, written last and atomically (temporary file,
  ``os.replace``): what the search was (configuration, reductions, bounds that change what is
  explored, a digest of the model's source and of the profiles), the number of visited records
  and the blake2b digest of exactly those records, the frontier file and its digest, the label
  table and the counters. Records appended after the last ``checkpoint.json`` (a run killed
  mid-write) are ignored and overwritten; a digest that does not match is a corrupt checkpoint.

Checkpoints are written at level boundaries, when at least ``every`` states were added since
the previous one (a count, never a clock: a run checkpoints at the same points on any
machine), and when the search stops early (Ctrl-C, ``--time-budget``, ``--max-states``,
``--max-memory``, ``--property`` found) or completes. A level is never split: an early stop writes the checkpoint
of the start of the level it was expanding, so at most one level is redone.

The memory bound is measured, not estimated: the resident set size of the search's processes
(the master and its workers, read from ``/proc/<pid>/statm``; elsewhere the peak RSS from
``resource``), every ``MEMORY_CHECK_EVERY`` expanded states (a count). The visited set stays in
memory: there is no disk-backed visited set; the bound and the checkpoint are what make a run
that outgrows the machine end cleanly and resumable (on a larger machine, or with the
distributed ``--engine spark-bfs``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import struct
import sys
import time
from dataclasses import dataclass, replace
from typing import Callable

FORMAT = "icecheck-checkpoint/1"
HEADER = "checkpoint.json"
VISITED = "visited.bin"
FP_SIZE = 16                          # engines/symmetry.py: blake2b, digest_size=16
_RECORD = struct.Struct(f"<{FP_SIZE}s{FP_SIZE}sI")
_ROOT = bytes(FP_SIZE)                # the parent field of the initial state
_NO_LABEL = 0xFFFFFFFF
_CHUNK = 1 << 16                      # records per read/write
DEFAULT_EVERY = 100_000               # states between two checkpoints
MEMORY_CHECK_EVERY = 2048             # expanded states between two RSS readings

# where a field of the search's identity comes from on the command line
_OPTION_OF = {"symmetry": "--no-symmetry", "por": "--no-por", "max_depth": "--max-depth",
              "max_files": "--max-files", "evaluate": "the properties evaluated",
              "engine": "--engine", "profiles": "--profile (its definition changed)"}
_CONFIG_OPTION = {"profile": "--profile", "writers": "--writers/--ops/--mix/--keys",
                  "catalog": "--catalog", "table": "--format-version/--retries",
                  "faults": "--faults", "crashes": "--crashes", "key": "the key column",
                  "phantom_failures": "--phantom-failures", "writer_profiles": "--writer-profile",
                  "initial_rows": "the initial rows", "schema": "the schema"}


class CheckpointError(Exception):
    """A checkpoint that cannot be used: corrupt, missing, or of another search. ``option``
    names what the user should change (the CLI prints ``option: message``, exit 2)."""

    def __init__(self, message: str, option: str = "--checkpoint"):
        super().__init__(message)
        self.option = option


# -- what a search is ---------------------------------------------------------------------------
def identity(cfg, symmetry: bool, por: bool, bounds, evaluate: bool) -> dict:
    """Everything that decides which states a BFS explores and how it judges them, as JSON:
    a checkpoint resumes only a search with the same identity. ``max_states``, the time budget,
    the memory bound, ``--property`` and the worker count only decide *when* a search stops (or
    not even that), so they may change between runs."""
    from icecheck.models.profiles import get_profile

    names = sorted({cfg.profile} | {p for p in cfg.writer_profiles if p})
    profiles = {}
    for n in names:
        try:
            text = repr(replace(get_profile(n), source=""))
        except KeyError:
            text = "<unknown>"
        profiles[n] = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
    doc = {"engine": "bfs", "configuration": cfg.as_json(), "symmetry": symmetry, "por": por,
           "max_depth": bounds.max_depth, "max_files": bounds.max_files,
           "evaluate": evaluate, "profiles": profiles}
    return json.loads(json.dumps(doc))


def code_digest() -> str:
    """A digest of the source that decides states, fingerprints and verdicts: the model
    (``models/``, its profiles), the properties (with the expectation table), the symmetry
    and POR reductions and the judge. A checkpoint of another version of these is refused:
    its fingerprints and verdicts would not be this code's."""
    import icecheck.engines
    import icecheck.models
    import icecheck.properties
    import icecheck.traces

    roots = [(os.path.dirname(icecheck.models.__file__), None),
             (os.path.dirname(icecheck.properties.__file__), None),
             (os.path.dirname(icecheck.engines.__file__), {"symmetry.py", "por.py", "config.py"}),
             (os.path.dirname(icecheck.traces.__file__), {"execute.py"})]
    h = hashlib.blake2b(digest_size=16)
    for root, only in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if not name.endswith((".py", ".yaml")) or (only and name not in only):
                    continue
                path = os.path.join(folder, name)
                h.update(os.path.relpath(path, os.path.dirname(root)).encode() + b"\0")
                with open(path, "rb") as f:
                    h.update(f.read())
                h.update(b"\0")
    return h.hexdigest()


def _differs(saved: dict, now: dict, saved_opts: dict | None,
             now_opts: dict | None) -> tuple[str, str] | None:
    """(the option, how it differs) of the first difference between a checkpoint's search and
    this one, or None. Named by the command-line options when both runs recorded them."""
    if saved == now:
        return None
    if saved_opts and now_opts:
        for opt, value in now_opts.items():
            if opt in saved_opts and saved_opts[opt] != value:
                return opt, (f"it was written with {_show(opt, saved_opts[opt])}, this run has "
                             f"{_show(opt, value)}")
    for key in now:
        if saved.get(key) != now[key]:
            what, opt = key, _OPTION_OF.get(key, key)
            if key == "configuration":
                a, b = saved.get(key), now[key]
                a = a if isinstance(a, dict) else {}
                keys = [k for k in _CONFIG_OPTION if k in a or k in b] + sorted(
                    (set(a) | set(b)) - set(_CONFIG_OPTION))     # the name last: derived
                what = next((k for k in keys if a.get(k) != b.get(k)), key)
                opt = _CONFIG_OPTION.get(what, what)
            return opt, f"its {what} differs from this run's"
    return "--resume", "its search differs from this run's"


def _show(opt: str, value) -> str:
    """An option as it was given: ``--writers 3``, ``--faults``, ``--max-depth (none)``."""
    if value is True:
        return opt
    if value is False:
        return f"without {opt}"
    if value is None or value == []:
        return f"{opt} (not given)"
    if isinstance(value, list):
        return " ".join(f"{opt} {v}" for v in value)
    return f"{opt} {value}"


# -- the checkpointer ---------------------------------------------------------------------------
@dataclass
class Restored:
    """A loaded checkpoint: the BFS continues from it (``engines.explicit._bfs``)."""

    parents: dict
    frontier: list            # [(fingerprint, pruned labels)], in fingerprint order
    depth: int
    complete: bool
    elapsed: float
    result: dict              # the counters (``snapshot_result``)
    source: str = ""          # the folder it was read from (for messages)

    def apply(self, res, violation) -> None:
        restore_result(res, self.result, violation)


def snapshot_result(res) -> dict:
    """The counters of a ``Result`` as JSON (what a checkpoint must carry besides the sets)."""
    def viol(v):
        return {"property": v.property, "unexpected": v.unexpected, "known": v.known,
                "depth": v.depth, "states_before": v.states_before, "seconds": v.seconds,
                "actions": list(v.actions)}

    return {"states": res.states, "transitions": res.transitions,
            "enabled_transitions": res.enabled_transitions, "max_depth": res.max_depth,
            "cut": res.cut, "final_states": res.final_states,
            "coverage": dict(res.coverage), "reached": dict(res.reached),
            "violation_counts": dict(res.violation_counts),
            "allowed_counts": dict(res.allowed_counts),
            "outcomes": sorted(res.outcomes, key=repr),
            "violations": [viol(v) for v in res.violations.values()],
            "allowed": [viol(v) for v in res.allowed.values()]}


def restore_result(res, doc: dict, violation) -> None:
    """Put the counters of ``doc`` into ``res``; ``violation`` builds a
    ``engines.explicit.Violation`` (passed in: the search imports this module, not the
    other way round)."""
    from collections import Counter

    for k in ("states", "transitions", "enabled_transitions", "max_depth", "cut",
              "final_states"):
        setattr(res, k, int(doc[k]))
    for k in ("coverage", "reached", "violation_counts", "allowed_counts"):
        setattr(res, k, Counter({str(a): int(b) for a, b in doc[k].items()}))
    res.outcomes = {_tuples(o) for o in doc["outcomes"]}
    for k in ("violations", "allowed"):
        setattr(res, k, {v["property"]: violation(
            v["property"], bool(v["unexpected"]), bool(v["known"]), int(v["depth"]),
            int(v["states_before"]), float(v["seconds"]), [str(a) for a in v["actions"]])
            for v in doc[k]})


def _tuples(x):
    return tuple(_tuples(y) for y in x) if isinstance(x, list) else x


class Checkpointer:
    """Writes the checkpoints of one BFS into ``directory`` and, with ``resume``, loads the one
    it holds first. ``options`` (command-line option -> value) lets a mismatch name the option
    that differs; ``notify`` is told of every checkpoint written (one line)."""

    def __init__(self, directory: str, *, resume: bool = False, every: int = DEFAULT_EVERY,
                 options: dict | None = None, notify: Callable[[str], None] | None = None):
        self.dir = directory
        self.resume = resume
        self.every = max(1, every)
        self.options = json.loads(json.dumps(options)) if options else None
        self.notify = notify
        self.identity: dict | None = None
        self.code = ""
        self.restored: Restored | None = None
        # what is committed on disk
        self.seq = 0
        self.records = 0
        self.hasher = hashlib.blake2b(digest_size=16)
        self.labels: list[str] = []
        self.label_index: dict[str, int] = {}
        self.states_written = 0
        self.snap: dict | None = None       # the start of the current level

    @property
    def header_path(self) -> str:
        return os.path.join(self.dir, HEADER)

    # -- starting ------------------------------------------------------------------------------
    def prepare(self, ident: dict) -> Restored | None:
        """Check the folder (a fresh run refuses to overwrite a checkpoint; a resumed one needs
        one, of this very search) and load the checkpoint when resuming."""
        self.identity, self.code = ident, code_digest()
        exists = os.path.exists(self.header_path)
        if not self.resume:
            if exists:
                raise CheckpointError(
                    f"{self.dir} already holds a checkpoint: add --resume to continue it, or "
                    "remove it (or choose another folder) to start over")
            from icecheck.scenarios.errors import InputError
            from icecheck.traces.format import check_writable_dir
            try:
                check_writable_dir(self.dir, "--checkpoint")
            except InputError as e:
                raise CheckpointError(e.detail) from None
            return None
        if not exists:
            raise CheckpointError(f"no checkpoint in {self.dir} (no {HEADER}) to resume",
                                  "--resume")
        self.restored = self._load()
        return self.restored

    def _load(self) -> Restored:
        head = _read_header(self.header_path)
        if head.get("format") != FORMAT:
            raise CheckpointError(f"corrupt checkpoint {self.header_path}: not an {FORMAT} "
                                  "header (field format)")
        if head.get("digest") != _header_digest(head):
            raise CheckpointError(f"corrupt checkpoint {self.header_path}: its content does not "
                                  "match its digest (edited or damaged)")
        check_header(head, self.header_path)
        opts = head.get("options")
        diff = _differs(head["identity"], self.identity, opts, self.options)
        if diff is not None:
            opt, how = diff
            raise CheckpointError(
                f"the checkpoint in {self.dir} is of another search: {how} (resume with the "
                "checkpoint's options, or start over in another folder)", opt)
        if head.get("code") != self.code:
            raise CheckpointError(
                f"the checkpoint in {self.dir} was written by another version of the model "
                "(models/, properties/ or the fingerprints changed since), so its states and "
                "verdicts are not this version's: start over in another folder", "--resume")
        try:
            return self._load_body(head)
        except CheckpointError:
            raise
        except (OSError, ValueError, KeyError, TypeError, IndexError, struct.error) as e:
            raise CheckpointError(f"corrupt checkpoint in {self.dir}: {e}") from None

    def _load_body(self, head: dict) -> Restored:
        """The parent pointers and the frontier, checked against the digests the (already
        validated) header records, and checked as a BFS writes them: records in visit order,
        so every state's parent is a record before it (an unknown parent or a cycle of parent
        pointers is refused here, and path reconstruction never meets one)."""
        labels = list(head["labels"])
        n = head["visited"]["records"]
        parents: dict = {}
        h = hashlib.blake2b(digest_size=16)
        size = _RECORD.size
        path = os.path.join(self.dir, VISITED)
        index = 0
        with open(path, "rb") as f:
            left = n
            while left:
                want = min(left, _CHUNK)
                buf = f.read(want * size)
                if len(buf) != want * size:
                    raise CheckpointError(
                        f"corrupt checkpoint in {self.dir}: {VISITED} is truncated (it holds "
                        f"{n - left + len(buf) // size:,} of the {n:,} visited states "
                        f"{HEADER} records)")
                h.update(buf)
                for fp, parent, li in _RECORD.iter_unpack(buf):
                    if index == 0:
                        if li != _NO_LABEL or parent != _ROOT:
                            raise CheckpointError(_record_error(path, 0, "the first record is "
                                                                         "not the initial state"))
                        parents[fp] = (None, None)
                    elif li == _NO_LABEL or li >= len(labels):
                        raise CheckpointError(_record_error(
                            path, index, f"its action label index {li} is not in the label "
                                         f"table of {HEADER} ({len(labels)} labels)"))
                    elif parent not in parents:
                        raise CheckpointError(_record_error(
                            path, index, "its parent is not a state visited before it (an "
                                         "unknown state, or a cycle of parent pointers)"))
                    elif fp in parents:
                        raise CheckpointError(_record_error(path, index,
                                                            "a state recorded twice"))
                    else:
                        parents[fp] = (parent, labels[li])
                    index += 1
                left -= want
        if h.hexdigest() != head["visited"]["digest"]:
            raise CheckpointError(f"corrupt checkpoint in {self.dir}: {VISITED} does not match "
                                  f"the digest {HEADER} records")
        fr = head["frontier"]
        fpath = os.path.join(self.dir, fr["file"])
        with open(fpath, "rb") as f:
            data = f.read()
        if hashlib.blake2b(data, digest_size=16).hexdigest() != fr["digest"]:
            raise CheckpointError(f"corrupt checkpoint in {self.dir}: {fr['file']} does not "
                                  f"match the digest {HEADER} records")
        frontier = _decode_frontier(data, labels, fr["count"], fpath)
        for i, (fp, _) in enumerate(frontier):
            if fp not in parents:
                raise CheckpointError(f"corrupt checkpoint {fpath}: entry {i + 1} is not a "
                                      f"state of {VISITED}")
        self.seq = head["seq"]
        self.records, self.hasher = n, h
        self.labels, self.label_index = labels, {x: i for i, x in enumerate(labels)}
        res = head["result"]
        self.states_written = res["states"]
        return Restored(parents, frontier, head["depth"], head["complete"],
                        float(head["elapsed"]), res, self.dir)

    def resumed_note(self) -> str:
        r = self.restored
        return (f"resumed from the checkpoint in {self.dir} (depth {r.depth}, "
                f"{int(r.result['states']):,} states)")

    # -- writing -------------------------------------------------------------------------------
    def level_start(self, res, depth: int, frontier: list, parents: dict, elapsed: float,
                    complete: bool = False) -> None:
        """The BFS is at the start of a level (or done, ``complete``): remember this point (a
        later early stop writes it) and write it when ``every`` states were added since the
        previous checkpoint, or the search completed."""
        self.snap = {"depth": depth, "frontier": frontier, "records": len(parents),
                     "elapsed": elapsed, "result": snapshot_result(res), "complete": complete}
        if complete or res.states - self.states_written >= self.every:
            self.write(parents)

    def write(self, parents: dict, res=None) -> None:
        """Commit the remembered level start to disk (with ``res``: a search that stopped
        early, which is told where its checkpoint is)."""
        snap = self.snap
        if snap is None:
            return
        try:
            if not snap.get("written"):
                self._write(parents, snap)
                snap["written"] = True
        except OSError as e:
            raise CheckpointError(f"cannot write the checkpoint in {self.dir}: "
                                  f"{e.strerror or e}") from None
        if res is not None:
            res.notes.append(f"checkpoint written to {self.dir} at the start of depth "
                             f"{snap['depth']} ({snap['result']['states']:,} states); "
                             "continue it with the same command and --resume")

    def _write(self, parents: dict, snap: dict) -> None:
        n = snap["records"]
        hasher = self._append(parents, n)
        seq = self.seq + 1
        fname = f"frontier.{seq}.bin"
        data = _encode_frontier(snap["frontier"], self._label)
        _write_bytes(os.path.join(self.dir, fname), data)
        head = {"format": FORMAT, "identity": self.identity, "options": self.options,
                "code": self.code, "seq": seq, "depth": snap["depth"],
                "complete": snap["complete"], "elapsed": snap["elapsed"],
                "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "visited": {"file": VISITED, "records": n, "digest": hasher.hexdigest()},
                "frontier": {"file": fname, "count": len(snap["frontier"]),
                             "digest": hashlib.blake2b(data, digest_size=16).hexdigest()},
                "labels": list(self.labels), "result": snap["result"]}
        head["digest"] = _header_digest(head)
        _write_bytes(self.header_path, (json.dumps(head, indent=1) + "\n").encode())
        self.seq, self.records, self.hasher = seq, n, hasher
        self.states_written = snap["result"]["states"]
        for name in os.listdir(self.dir):
            if name.startswith("frontier.") and name.endswith(".bin") and name != fname:
                try:
                    os.unlink(os.path.join(self.dir, name))
                except OSError:
                    pass
        where = "complete" if snap["complete"] else f"depth {snap['depth']}"
        line = (f"checkpoint {seq}: {snap['result']['states']:,} states, {where}, "
                f"{len(snap['frontier']):,} in the frontier -> {self.dir}")
        if self.notify:
            self.notify(line)

    def _label(self, label: str) -> int:
        i = self.label_index.get(label)
        if i is None:
            i = self.label_index[label] = len(self.labels)
            self.labels.append(label)
        return i

    def _append(self, parents: dict, n: int):
        """Append the parent pointers ``self.records .. n`` to the visited file (cut first to
        what the last checkpoint committed) and fsync; the digest of all ``n`` records."""
        path = os.path.join(self.dir, VISITED)
        hasher = self.hasher.copy()
        pack = _RECORD.pack
        label = self._label
        with open(path, "r+b" if os.path.exists(path) else "w+b") as f:
            f.truncate(self.records * _RECORD.size)
            f.seek(self.records * _RECORD.size)
            items = itertools.islice(parents.items(), self.records, n)
            while True:
                chunk = list(itertools.islice(items, _CHUNK))
                if not chunk:
                    break
                buf = b"".join(
                    pack(fp, _ROOT, _NO_LABEL) if parent is None else
                    pack(fp, parent, label(lab)) for fp, (parent, lab) in chunk)
                hasher.update(buf)
                f.write(buf)
            f.flush()
            os.fsync(f.fileno())
        return hasher


def _header_digest(head: dict) -> str:
    body = {k: v for k, v in head.items() if k != "digest"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def _record_error(path: str, index: int, what: str) -> str:
    return f"corrupt checkpoint {path}: record {index + 1}: {what}"


_JSON_NESTING = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _read_header(path: str) -> dict:
    """``checkpoint.json`` as a JSON object, or a ``CheckpointError`` naming the file and the
    line: not UTF-8, not JSON, or nested deeper than any header is (the header's deepest
    field, the configuration, is a dozen levels; Python's parser would recurse until a
    RecursionError on a deep file, so the depth is counted on the text first)."""
    from icecheck.scenarios.yamlload import MAX_DEPTH

    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise CheckpointError(f"cannot read the checkpoint {path}: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise CheckpointError(f"corrupt checkpoint {path}:{line}: not UTF-8 text "
                              f"(byte 0x{data[e.start]:02x})") from None
    depth = 0
    for m in _JSON_NESTING.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, m.start()) + 1
                raise CheckpointError(f"corrupt checkpoint {path}:{line}: nested more than "
                                      f"{MAX_DEPTH} levels deep")
        elif c in "]}":
            depth -= 1
    try:
        head = json.loads(text)
    except json.JSONDecodeError as e:
        raise CheckpointError(f"corrupt checkpoint {path}:{e.lineno}: not valid JSON: {e.msg} "
                              f"(column {e.colno})") from None
    except (ValueError, RecursionError) as e:     # a number too long to convert, say
        raise CheckpointError(f"corrupt checkpoint {path}: not valid JSON: {e}") from None
    if not isinstance(head, dict):
        raise CheckpointError(f"corrupt checkpoint {path}: not an {FORMAT} header (a JSON "
                              f"{_kind(head)}, not an object)")
    return head


_INT_MAX = 2**63 - 1
_HEX = re.compile(r"[0-9a-f]{32}\Z")
_FRONTIER_FILE = re.compile(r"frontier\.[0-9]{1,19}\.bin\Z")
_HEADER_KEYS = ("format", "identity", "options", "code", "seq", "depth", "complete", "elapsed",
                "written_at", "visited", "frontier", "labels", "result", "digest")
_COUNTERS = ("states", "transitions", "enabled_transitions", "max_depth", "cut", "final_states")
_TALLIES = ("coverage", "reached", "violation_counts", "allowed_counts")
_FOUND_KEYS = ("property", "unexpected", "known", "depth", "states_before", "seconds",
               "actions")


def _kind(v) -> str:
    if isinstance(v, bool):
        return "boolean"
    return {dict: "object", list: "list", str: "string", int: "integer", float: "number",
            type(None): "null"}.get(type(v), type(v).__name__)


def _shown(v) -> str:
    """A field's value in a message: short, one line."""
    if isinstance(v, (dict, list)):
        return f"a{'n' if isinstance(v, dict) else ''} {_kind(v)}"
    text = json.dumps(v)
    return text if len(text) <= 40 else text[:37] + "..."


def check_header(head: dict, path: str) -> None:
    """Every field of a ``checkpoint.json`` (the header's digest only proves it was not
    damaged by accident; a header edited and re-sealed, or written by a bug, must still be
    one the BFS can continue): its type and range, and the relations between fields that
    every checkpoint the BFS writes satisfies. A ``CheckpointError`` names the file and the
    field's path (``result.violations[0].depth``)."""
    from icecheck.properties.violation import PROPERTIES

    def fail(field: str, what: str, value=None, shown: bool = True):
        raise CheckpointError(f"corrupt checkpoint {path}: {field}: "
                              + (f"must be {what}, not {_shown(value)}" if shown else what))

    def obj(v, field: str, keys: tuple, optional: tuple = ()) -> dict:
        if not isinstance(v, dict):
            fail(field, "an object", v)
        for k in keys:
            if k not in v and k not in optional:
                fail(f"{field}.{k}" if field else k, "missing", shown=False)
        extra = sorted(set(v) - set(keys), key=str)
        if extra:
            fail(f"{field}.{extra[0]}" if field else str(extra[0]),
                 f"unknown field (expected some of {', '.join(keys)})", shown=False)
        return v

    def count(v, field: str, low: int = 0, high: int = _INT_MAX) -> int:
        if type(v) is not int or not low <= v <= high:
            fail(field, f"an integer from {low:,} to {high:,}" if high < _INT_MAX else
                 "a non-negative integer" if low == 0 else f"an integer of at least {low:,}", v)
        return v

    def text(v, field: str) -> str:
        if not isinstance(v, str):
            fail(field, "a string", v)
        return v

    def flag(v, field: str) -> bool:
        if not isinstance(v, bool):
            fail(field, "true or false", v)
        return v

    def seconds(v, field: str) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 1e12:
            fail(field, "a number of seconds from 0", v)
        return v

    def strings(v, field: str) -> list:
        if not isinstance(v, list):
            fail(field, "a list of strings", v)
        for i, x in enumerate(v):
            text(x, f"{field}[{i}]")
        return v

    def outcome(v, field: str) -> None:
        stack = [(v, field)]
        while stack:
            x, f = stack.pop()
            if isinstance(x, list):
                stack.extend((y, f"{f}[{i}]") for i, y in enumerate(x))
            elif not isinstance(x, (str, int, float, bool)) and x is not None:
                fail(f, "a list or a plain value", x)

    obj(head, "", _HEADER_KEYS, optional=("options", "written_at"))
    if not isinstance(head["identity"], dict):
        fail("identity", "an object", head["identity"])
    if head.get("options") is not None and not isinstance(head["options"], dict):
        fail("options", "an object", head["options"])
    if not _HEX.match(text(head["code"], "code")):
        fail("code", "a digest of 32 hexadecimal digits", head["code"])
    if "written_at" in head:
        text(head["written_at"], "written_at")
    count(head["seq"], "seq", 1)
    depth = count(head["depth"], "depth")
    complete = flag(head["complete"], "complete")
    seconds(head["elapsed"], "elapsed")
    visited = obj(head["visited"], "visited", ("file", "records", "digest"))
    if visited["file"] != VISITED:
        fail("visited.file", repr(VISITED), visited["file"])
    records = count(visited["records"], "visited.records", 1)
    frontier = obj(head["frontier"], "frontier", ("file", "count", "digest"))
    for part, field in ((visited, "visited"), (frontier, "frontier")):
        if not isinstance(part["digest"], str) or not _HEX.match(part["digest"]):
            fail(f"{field}.digest", "a digest of 32 hexadecimal digits", part["digest"])
    if not isinstance(frontier["file"], str) or not _FRONTIER_FILE.match(frontier["file"]):
        fail("frontier.file", "a file name frontier.<n>.bin", frontier["file"])
    front = count(frontier["count"], "frontier.count", 0, records)
    if complete and front:
        fail("frontier.count", "0 in a complete checkpoint", front)
    if not complete and not front:
        fail("frontier.count", "at least 1 in a checkpoint of an unfinished search", front)
    labels = strings(head["labels"], "labels")
    from icecheck.models.system import Action
    for i, label in enumerate(labels):
        try:
            Action.parse(label)
        except ValueError:
            fail(f"labels[{i}]", "an action label (WRITER.KIND[#CHOICE])", label)
    if len(set(labels)) != len(labels):
        dup = next(x for i, x in enumerate(labels) if x in labels[:i])
        fail(f"labels[{labels.index(dup, labels.index(dup) + 1)}]", f"the label {dup!r} listed "
             "twice", shown=False)
    known_labels = set(labels)
    res = obj(head["result"], "result", _COUNTERS + _TALLIES + ("outcomes", "violations",
                                                               "allowed"))
    for k in _COUNTERS:
        count(res[k], f"result.{k}")
    if res["states"] != records:
        fail("result.states", f"the number of visited states ({records:,})", res["states"])
    if res["max_depth"] != depth:
        fail("result.max_depth", f"the checkpoint's depth ({depth:,})", res["max_depth"])
    for k in _TALLIES:
        tally = res[k]
        if not isinstance(tally, dict):
            fail(f"result.{k}", "an object of counts", tally)
        for name, n in tally.items():
            count(n, f"result.{k}.{name}")
    if not isinstance(res["outcomes"], list):
        fail("result.outcomes", "a list", res["outcomes"])
    for i, o in enumerate(res["outcomes"]):
        if not isinstance(o, list):
            fail(f"result.outcomes[{i}]", "a list", o)
        outcome(o, f"result.outcomes[{i}]")
    for k in ("violations", "allowed"):
        found = res[k]
        if not isinstance(found, list):
            fail(f"result.{k}", "a list", found)
        seen: set = set()
        for i, v in enumerate(found):
            f = f"result.{k}[{i}]"
            obj(v, f, _FOUND_KEYS)
            prop = text(v["property"], f"{f}.property")
            if prop not in PROPERTIES:
                fail(f"{f}.property", f"a property ({', '.join(PROPERTIES)})", prop)
            if prop in seen:
                fail(f"{f}.property", f"{prop!r} listed twice", shown=False)
            seen.add(prop)
            flag(v["unexpected"], f"{f}.unexpected")
            flag(v["known"], f"{f}.known")
            d = count(v["depth"], f"{f}.depth", 0, depth)
            count(v["states_before"], f"{f}.states_before", 0, records)
            seconds(v["seconds"], f"{f}.seconds")
            actions = strings(v["actions"], f"{f}.actions")
            if len(actions) != d:
                fail(f"{f}.actions", f"a path of {d} actions (its depth)", actions)
            for j, a in enumerate(actions):
                if a not in known_labels:
                    fail(f"{f}.actions[{j}]", "an action of the label table", a)


def _encode_frontier(frontier: list, label: Callable[[str], int]) -> bytes:
    parts = []
    for entry in frontier:
        fp, pruned = entry[0], entry[-1]
        idx = sorted(label(x) for x in pruned)
        parts.append(struct.pack(f"<{FP_SIZE}sH{len(idx)}I", fp, len(idx), *idx))
    return b"".join(parts)


def _decode_frontier(data: bytes, labels: list[str], count: int,
                     path: str = "frontier") -> list:
    """The ``count`` entries of a frontier file, in the strictly increasing fingerprint order
    the BFS writes them in; a ``CheckpointError`` naming the file and the entry otherwise."""
    out, pos = [], 0
    head = struct.Struct(f"<{FP_SIZE}sH")

    def bad(i: int, what: str) -> CheckpointError:
        return CheckpointError(f"corrupt checkpoint {path}: entry {i + 1}: {what}")

    for i in range(count):
        if pos + head.size > len(data):
            raise bad(i, f"missing (the file holds fewer than the {count:,} entries "
                         f"{HEADER} records)")
        fp, k = head.unpack_from(data, pos)
        pos += head.size
        if pos + 4 * k > len(data):
            raise bad(i, "truncated")
        idx = struct.unpack_from(f"<{k}I", data, pos)
        pos += 4 * k
        if any(j >= len(labels) for j in idx):
            raise bad(i, f"a label index beyond the label table of {HEADER} "
                         f"({len(labels)} labels)")
        if out and fp <= out[-1][0]:
            raise bad(i, "not in fingerprint order (or a state listed twice)")
        out.append((fp, frozenset(labels[j] for j in idx)))
    if pos != len(data):
        raise CheckpointError(f"corrupt checkpoint {path}: trailing bytes after its {count:,} "
                              "entries")
    return out


def _write_bytes(path: str, data: bytes) -> None:
    """Atomically: a fsynced temporary file beside ``path``, then ``os.replace``
    (``traces.format.write_together``, which takes bytes too)."""
    from icecheck.traces.format import write_together
    write_together({path: data})


# -- rebuilding the frontier's states ------------------------------------------------------------
def rebuild_states(model, fingerprints, items: list[tuple[bytes, list[str]]]):
    """Replay each (fingerprint, action path from the initial state); the paths are walked as a
    trie (sorted, each shared prefix stepped once). Returns ({fingerprint: state}, fingerprints
    whose replay failed or reached a state of another fingerprint)."""
    from icecheck.models.system import Action

    out, bad = {}, []
    labels: list[str] = []
    states = [model.initial()]
    for fp, path in sorted(items, key=lambda it: it[1]):
        k = 0
        n = min(len(path), len(labels))
        while k < n and path[k] == labels[k]:
            k += 1
        del labels[k:]
        del states[k + 1:]
        try:
            for lab in path[k:]:
                states.append(model.step(states[-1], Action.parse(lab)))
                labels.append(lab)
        except ValueError:            # StepError is one: the action is not enabled there
            bad.append(fp)
            continue
        s = states[-1]
        if fingerprints(s)[0] != fp:
            bad.append(fp)
        else:
            out[fp] = s
    return out, bad


# -- the memory bound ---------------------------------------------------------------------------
def resident_mb(pids: list[int]) -> float:
    """Resident memory of ``pids`` in MB (summed; pages they share count in each, so a bound
    on it errs on the safe side). Off Linux: this process's peak RSS, plus its children's."""
    total, ok = 0, True
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            ok = False
            break
    if ok:
        return total / 2**20
    import resource
    scale = 1 if sys.platform == "darwin" else 1024
    ru = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
          + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return ru * scale / 2**20


class MemoryGuard:
    """``check(count)`` reads the resident memory once ``count`` (states expanded so far) has
    grown by ``MEMORY_CHECK_EVERY`` since the last reading, and answers the MB measured when it
    is over ``limit_mb``, else None."""

    def __init__(self, limit_mb: int, pids: Callable[[], list[int]] | None = None):
        self.limit = limit_mb
        self.pids = pids or (lambda: [os.getpid()])
        self.next_at = 0              # a first reading at once, then every MEMORY_CHECK_EVERY
        self.measured = 0.0

    def check(self, count: int) -> float | None:
        if count < self.next_at:
            return None
        self.next_at = count + MEMORY_CHECK_EVERY
        self.measured = resident_mb(self.pids())
        return self.measured if self.measured >= self.limit else None

    def note(self, count: int) -> str:
        return (f"memory bound: the search's processes held {self.measured:,.0f} MB resident "
                f"(bound {self.limit:,} MB) after expanding {count:,} states")
