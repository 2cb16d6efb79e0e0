"""The trace format (version 1): one counterexample (or one rejected interleaving) as JSON.

A trace is everything needed to re-run it on the model and check that it still means the same:

* ``config``: the exploration configuration (``ExploreConfig.as_json()``): table, profile,
  catalog, initial rows and the writers' programs;
* ``actions``: the steps, as ``Action`` strings (``"w1.begin#1"``, ``"w2.cas"``);
* ``states``: one entry per state (the initial state, then one per action), each with the
  ``digest`` of the model state (``models.system.digest``) and a few readable fields;
* ``property``: the property the trace violates, or null for a *rejected* trace (the same
  interleaving under a stricter profile, where validation stops it);
* ``verdict``: the violations found in the final state (as JSON) and every writer's outcomes;
* ``explanation``: what happened, in words.

It is also a valid ITF file (Apalache/Quint's Informal Trace Format): it has ``#meta``, ``vars``
and ``states`` whose entries carry ``"#meta": {"index": i}``, and every state value is a string,
an integer, a boolean, a list or a record (never null), so ITF viewers can load it.

See docs/traces.md.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from typing import Any

from icecheck.scenarios.errors import InputError

FORMAT = "icecheck-trace"
VERSION = 1

KIND_VIOLATION = "violation"   # an unexpected (must-hold) property violation
KIND_ALLOWED = "allowed"       # a violation the expectation table allows for this profile
KIND_REJECTED = "rejected"     # no violation: a validation (or the catalog) prevents it
KINDS = (KIND_VIOLATION, KIND_ALLOWED, KIND_REJECTED)

STATE_VARS = ["action", "digest", "pointer", "snapshot", "seq", "rows", "phases"]

REQUIRED = ("format", "version", "kind", "config", "actions", "property", "verdict",
            "explanation", "states")


# -- JSON helpers ---------------------------------------------------------------------------
def jsonable(value: Any) -> Any:
    """Plain JSON data for an arbitrary model value (dataclasses, tuples, sets, ...)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((jsonable(v) for v in value), key=repr)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def violation_json(v: Any) -> dict:
    """A ``properties.Violation`` as JSON."""
    return {"property": v.property, "message": getattr(v, "message", ""),
            "severity": jsonable(getattr(v, "severity", None)),
            "details": jsonable(getattr(v, "details", None))}


def _pretty(value: Any, indent: int, width: int = 100) -> str:
    """JSON with an object or list on one line when it fits, else one item per line."""
    flat = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, (dict, list)) or len(flat) + indent <= width or not value:
        return flat
    pad, inner = " " * indent, " " * (indent + 2)
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(str(k), ensure_ascii=False)}: {_pretty(v, indent + 2, width)}"
                 for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    items = [inner + _pretty(v, indent + 2, width) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + pad + "]"


def dumps(doc: dict) -> str:
    """The trace as JSON text: stable, diff-friendly, short lists on one line."""
    return _pretty(json.loads(json.dumps(doc)), 0) + "\n"


def write_atomic(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically: a temporary file in the same folder, then
    ``os.replace``. A reader sees the old file or the new one, never half of one."""
    write_together({path: text})


def write_together(files: dict[str, str | bytes]) -> None:
    """Write several files that belong together (one run's reports): every new text goes to
    a fsynced temporary file first, and only then are they renamed into place, one
    ``os.replace`` after another, so a run that is killed while writing leaves the previous
    set untouched (the window between two renames is one system call, not a write). Stale
    temporary files of earlier killed runs are removed first."""
    temps: list[tuple[str, str]] = []
    try:
        for path, text in files.items():
            folder = os.path.dirname(os.path.abspath(path))
            os.makedirs(folder, exist_ok=True)
            remove_stale_temps(path)
            temps.append((write_temp(path, text), path))
        for tmp, path in temps:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in temps:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise


def write_temp(path: str, text: str | bytes) -> str:
    """A fsynced temporary file beside ``path`` holding ``text`` (or bytes), with the
    permissions a new file gets (``.<name>.<random>.tmp``, which ``remove_stale_temps`` knows):
    the first half of every write that must never leave a half-written file
    (``write_together``, a checkpoint's files, and ``icecheck init``, which links it into
    place). Removed again if writing fails."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                               dir=folder)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with (os.fdopen(fd, "wb") if isinstance(text, bytes)
              else os.fdopen(fd, "w", encoding="utf-8")) as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return tmp


def remove_stale_temps(path: str) -> None:
    """Remove temporary files ``write_atomic``/``write_together`` left for ``path`` when a
    run was killed mid-write (``.<name>.<random>.tmp`` beside it, over a minute old)."""
    folder = os.path.dirname(os.path.abspath(path))
    prefix = "." + os.path.basename(path) + "."
    try:
        names = os.listdir(folder)
    except OSError:
        return
    import time

    for name in names:
        if name.startswith(prefix) and name.endswith(".tmp"):
            full = os.path.join(folder, name)
            try:
                # a minute old: a killed run's, not a concurrent writer's in-progress file
                if time.time() - os.path.getmtime(full) > 60:
                    os.unlink(full)
            except OSError:
                pass


def check_writable_dir(folder: str, option: str) -> None:
    """Fail now, with exit 2 naming ``option``, if ``folder`` cannot be created or written,
    rather than after a long run whose results would then be lost. It creates the folder and
    a probe file (removed at once): the only test that every file system answers truly."""
    from icecheck.scenarios.errors import InputError

    try:
        os.makedirs(folder, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".icecheck-probe.", suffix=".tmp", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise InputError(f"cannot write to {folder!r}: {e.strerror or e}", option) from None


def write_trace(path: str, doc: dict) -> None:
    check_trace(doc, path)
    write_atomic(path, dumps(doc))


# -- reading and checking ---------------------------------------------------------------------
def _line_of(text: str | None, key: str) -> int | None:
    """The line of the first ``"key":`` in the file's text (for messages about a field)."""
    if not text:
        return None
    needle = json.dumps(key) + ":"
    pos = text.find(needle)
    if pos < 0:
        needle = json.dumps(key)
        pos = text.find(needle)
        if pos < 0:
            return None
    return text.count("\n", 0, pos) + 1


def load_trace(path: str) -> dict:
    """Read and check a trace file; raise ``InputError`` (file and line or field) if malformed."""
    from icecheck.scenarios.yamlload import read_text

    text = read_text(path, "trace")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON: {e.msg} (column {e.colno})", path, e.lineno) from None
    except RecursionError:
        raise InputError("not a trace: nested too deeply", path) from None
    check_trace(doc, path, text)
    return doc


def check_trace(doc: Any, path: str = "<trace>", text: str | None = None) -> None:
    """Check the shape of a trace document (not its meaning: that is replay's job)."""

    def bad(message: str, key: str | None = None) -> InputError:
        return InputError(message, path, _line_of(text, key) if key else None)

    if not isinstance(doc, dict):
        raise bad("a trace must be a JSON object")
    if doc.get("format") != FORMAT:
        if "format" not in doc:
            raise bad(f"missing field 'format' (expected \"{FORMAT}\")")
        raise bad(f"field 'format' is {doc.get('format')!r}, expected \"{FORMAT}\"", "format")
    for key in REQUIRED:
        if key not in doc:
            raise bad(f"missing field '{key}'")
    if type(doc["version"]) is not int or doc["version"] != VERSION:     # true == 1 in Python
        raise bad(f"unsupported trace version {doc['version']!r} (this icecheck reads "
                  f"version {VERSION})", "version")
    if doc["kind"] not in KINDS:
        raise bad(f"field 'kind' is {doc['kind']!r}, expected one of {', '.join(KINDS)}", "kind")
    if not isinstance(doc["config"], dict):
        raise bad("field 'config' must be an object", "config")
    actions = doc["actions"]
    if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
        raise bad("field 'actions' must be a list of action strings", "actions")
    from icecheck.models.system import Action
    for i, a in enumerate(actions):
        try:
            Action.parse(a)
        except ValueError as e:
            raise bad(f"field 'actions[{i}]': {e}", "actions") from None
    prop = doc["property"]
    if prop is not None and not isinstance(prop, str):
        raise bad("field 'property' must be a property name or null", "property")
    if (prop is None) != (doc["kind"] == KIND_REJECTED):
        raise bad("field 'property' must be null exactly when kind is 'rejected'", "property")
    verdict = doc["verdict"]
    if not isinstance(verdict, dict):
        raise bad("field 'verdict' must be an object with 'violations' and 'outcomes'", "verdict")
    for key in ("violations", "outcomes"):
        if key not in verdict:
            raise bad(f"missing field 'verdict.{key}'", "verdict")
    if not isinstance(verdict["violations"], list) or not all(
            isinstance(v, dict) and isinstance(v.get("property"), str)
            for v in verdict["violations"]):
        raise bad("field 'verdict.violations' must be a list of objects with a 'property'",
                  "violations")
    if not all(isinstance(v.get("message"), str) for v in verdict["violations"]):
        raise bad("field 'verdict.violations': each 'message' must be a string", "violations")
    if not isinstance(verdict["outcomes"], dict) or not all(
            isinstance(outs, list) and all(isinstance(o, str) for o in outs)
            for outs in verdict["outcomes"].values()):
        raise bad("field 'verdict.outcomes' must be an object (writer -> list of outcomes)",
                  "outcomes")
    # the optional fields every reader shows (trace show's title and status line, the
    # explorer's and ITF's description): of their type, or absent or null
    for key in ("id", "title"):
        if doc.get(key) is not None and not isinstance(doc[key], str):
            raise bad(f"field '{key}' must be a string", key)
    exp = doc.get("expectation")
    if exp is not None and (not isinstance(exp, dict) or not all(
            exp.get(k) is None or isinstance(exp[k], str) for k in ("status", "reason", "trace"))):
        raise bad("field 'expectation' must be null or an object with string 'status', "
                  "'reason' and 'trace'", "expectation")
    if not isinstance(doc["explanation"], str):
        raise bad("field 'explanation' must be a string", "explanation")
    states = doc["states"]
    if not isinstance(states, list):
        raise bad("field 'states' must be a list", "states")
    if len(states) != len(actions) + 1:
        raise bad(f"field 'states' has {len(states)} entries; expected {len(actions) + 1} "
                  f"(the initial state and one per action)", "states")
    for i, s in enumerate(states):
        if not isinstance(s, dict):
            raise bad(f"field 'states[{i}]' must be an object", "states")
        if not isinstance(s.get("digest"), str):
            raise bad(f"missing field 'states[{i}].digest'", "states")


def trace_id(doc: dict, path: str | None = None) -> str:
    if doc.get("id"):
        return doc["id"]
    if path:
        return os.path.splitext(os.path.basename(path))[0]
    return "trace"
