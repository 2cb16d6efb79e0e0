"""The model state of a trace in the Informal Trace Format (ITF, Apalache ADR-015,
https://apalache-mc.org/docs/adr/015adr-trace.html), typed so that other tools read it back
as it is: ``#meta.varTypes`` gives each variable's Apalache type (ADR-002's Snowcat syntax),
and every value is written in the form Apalache's ITF reader expects for that type.

Why a separate export: corpus traces (``traces/format.py``) are already ITF documents, but their
states carry a summary (digest, pointer, rows as plain lists) that replay compares; changing it
would break every stored trace. ``icecheck trace export --itf`` re-executes a trace on the model
and writes the full state at every step instead. Field by field: docs/traces.md, "ITF export".

Why these forms (issue 42, item 6):

* **Duplicates survive.** What the model holds in order, and may hold twice, is written as a
  sequence (a JSON list): the rows a reader sees (``<<file, position, row>>`` tuples, in read
  order), the snapshots of the metadata file, the manifests of the manifest list and their
  entries, a data file's rows, a delete's positions and rows. A ``#map`` or ``#set`` would
  collapse them: ITF readers build dictionaries and sets (itf-py keeps one of two equal map
  keys; Apalache reads a ``#map`` as a function, one value per key), so the row that
  ``add_files`` added twice, the very thing the duplicate_keys traces show, vanished on
  parse. A sequence is the ITF form that needs no key, keeps the model's order (a scan's
  order, the manifest list's), and is a plain JSON array that every reader takes. A ``#set``
  of ``(row, multiplicity)`` pairs would keep the count too, but loses the order and the file
  and position each copy is read from. Only what is keyed by construction stays a ``#map``
  (files by their unique path, writers by name) or a ``#set`` (the deleted paths, a set in
  the model); a key that came twice with two different values cannot be written faithfully,
  and the export fails saying so.
* **Apalache's type system.** A type fixes a tuple's width and has no empty tuple (``<<>>`` does
  not parse), and a variable has one type for the whole trace. A row has the table schema's
  width, a partition the spec's (none: unpartitioned), an equality delete's rows its equality
  columns' (which vary between files), so all three are sequences of one value type.
  Iceberg columns are optional and ITF has no null (Apalache rejects ``#unserializable``), and
  the columns hold integers and strings: a table value is the variant
  ``Null(UNIT) | Number({ value: Int }) | String(Str)``, written ``{"tag": "String", "value":
  "x"}`` (``UNIT``'s one value is ``"u_OF_UNIT"``, as in Apalache's ``Option.tla``). A number
  is wrapped in a one-field record because itf-py (0.5.0) reads a variant whose value is a
  JSON object as a record, and fails on ``{"#bigint": ...}`` there; with the field named
  ``value`` it gives ``Number(value=5)``, the same shape as ``String(value='x')``.
* **Apalache's reader.** Every integer is ``{"#bigint": "..."}`` (the ADR's current text says
  integers must be; Apalache's reader takes a plain JSON number only within 32 bits); records
  are written with the ``{ field: T }`` syntax (its reader takes no ``[field: T]`` record),
  never empty; a string that looks like an uninterpreted constant (``a_OF_B``) would be read
  as one, so the export fails on it rather than write a value Apalache reads differently.
  Snapshot ids and sequence numbers are positive, so ``0`` stands for "none"; empty strings
  stand for "none" in a writer's history; a real ``0`` or ``""`` there would be ambiguous,
  and fails the export too.

Anything else that has no faithful form (a float, a bool or any other value in a row, a data
file whose rows the model does not know) fails the export with an ``InputError`` naming the
state and the field, never a silent approximation.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from icecheck.engines.config import ExploreConfig
from icecheck.models.files import DataFile, DeleteFile
from icecheck.models.reads import read_rows
from icecheck.models.system import Model, State
from icecheck.scenarios.errors import InputError

from .execute import model_for, run_actions

#: The value of Apalache's type ``UNIT`` (an uninterpreted constant, ADR-015).
UNIT = "u_OF_UNIT"
#: Strings Apalache's ITF reader takes for uninterpreted constants, not strings
#: (ModelValueHandler: the whole string matches ``name_OF_TYPE``).
_MODEL_VALUE = re.compile(r"[a-zA-Z0-9_]+_OF_[A-Z_][A-Z0-9_]*")

#: One table value: a cell of a row, a partition value, a value of an equality delete.
VALUE_TYPE = "Null(UNIT) | Number({ value: Int }) | String(Str)"
#: A row, a partition tuple, an equality delete's row: a sequence of table values.
ROW_TYPE = f"Seq({VALUE_TYPE})"

#: Each variable's Apalache type (ADR-002, the syntax of ``@type`` annotations); the keys are
#: the document's ``vars``, in order.
VAR_TYPES: dict[str, str] = {
    "action": "Str",
    "catalog": "{ pointer: Str, version: Int }",
    "current_snapshot": "Int",
    "last_sequence_number": "Int",
    "rows": f"Seq(<<Str, Int, {ROW_TYPE}>>)",
    "snapshots": "Seq({ id: Int, parent: Int, seq: Int, operation: Str, writer: Str, "
                 "manifest_list: Str })",
    "snapshot_log": "Seq(Int)",
    "refs": "Seq(<<Str, Str, Int>>)",
    "manifests": "Seq({ path: Str, content: Str, added_snapshot: Int, seq: Int, "
                 "entries: Seq(<<Str, Str, Int, Int, Int>>) })",
    "files": f"Str -> {{ content: Str, partition: {ROW_TYPE}, rows: Seq({ROW_TYPE}), "
             f"positions: Seq(<<Str, Int>>), equality_columns: Seq(Str), "
             f"equality_rows: Seq({ROW_TYPE}) }}",
    "deleted": "Set(Str)",
    "writers": "Str -> { phase: Str, op_index: Int, base_snapshot: Int, pending_snapshot: Int, "
               "attempt: Int, history: Seq({ outcome: Str, check: Str, message: Str, "
               "snapshot: Int, seq: Int, base_snapshot: Int, attempts: Int }) }",
}
VARS = list(VAR_TYPES)


class Unrepresentable(ValueError):
    """A model value with no faithful form of its declared type; ``where`` names the field."""

    def __init__(self, where: str, message: str):
        self.where = where
        super().__init__(f"{where}: {message}")


def integer(v: Any, where: str) -> dict:
    """An ``Int``: always ``#bigint`` (see the module docstring)."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise Unrepresentable(where, f"{v!r} is not an integer")
    return {"#bigint": str(v)}


def string(v: Any, where: str) -> str:
    """A ``Str``; one Apalache would read as an uninterpreted constant fails."""
    if not isinstance(v, str):
        raise Unrepresentable(where, f"{v!r} is not a string")
    if _MODEL_VALUE.fullmatch(v):
        raise Unrepresentable(where, f"the string {v!r} has the form of an Apalache "
                                     f"uninterpreted constant (name_OF_TYPE), which "
                                     f"Apalache's ITF reader does not take as a string")
    return v


def value(v: Any, where: str) -> dict:
    """A table value as the variant ``VALUE_TYPE``."""
    if v is None:
        return {"tag": "Null", "value": UNIT}
    if isinstance(v, str):
        return {"tag": "String", "value": string(v, where)}
    if isinstance(v, int) and not isinstance(v, bool):
        return {"tag": "Number", "value": {"value": integer(v, where)}}
    raise Unrepresentable(where, f"{v!r} ({type(v).__name__}) is not a table value ITF can "
                                 f"carry here (an integer, a string or null)")


def row(values: Iterable, where: str) -> list:
    return [value(v, where) for v in values]


def tup(*items: Any) -> dict:
    return {"#tup": list(items)}


def keyed(pairs: Iterable[tuple[str, Any]], where: str) -> dict:
    """A ``Str -> T`` map, keys in sorted order. A key given twice must carry the same value
    (a file listed by two manifests); two different values fail (the map would keep one)."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        string(k, where)
        if k in out and out[k] != v:
            raise Unrepresentable(where, f"{k!r} stands for two different values")
        out[k] = v
    return {"#map": [[k, out[k]] for k in sorted(out)]}


def _none_is_zero(v: int | None, where: str) -> dict:
    """Snapshot ids and sequence numbers are positive; 0 stands for 'none'."""
    if v is None:
        return integer(0, where)
    if isinstance(v, int) and not isinstance(v, bool) and v <= 0:
        raise Unrepresentable(where, f"{v} would read as 'none' (0 stands for none)")
    return integer(v, where)


def _none_is_empty(v: str | None, where: str) -> str:
    if v is None:
        return ""
    if v == "":
        raise Unrepresentable(where, "an empty string would read as 'none'")
    return string(v, where)


def _file(f, where: str) -> dict:
    if isinstance(f, DataFile):
        if f.rows is None:
            raise Unrepresentable(where, "a data file whose rows the model does not know "
                                         "(metadata only) has no form here")
        rows = [row(r, f"{where}.rows") for r in f.rows]
    else:
        rows = []
    dele = f if isinstance(f, DeleteFile) else None
    return {
        "content": string(f.content, f"{where}.content"),
        "partition": row(f.partition, f"{where}.partition"),
        "rows": rows,
        "positions": [tup(string(p, f"{where}.positions"), integer(i, f"{where}.positions"))
                      for p, i in (dele.positions if dele else ())],
        "equality_columns": [string(c, f"{where}.equality_columns")
                             for c in (dele.equality_columns if dele else ())],
        "equality_rows": [row(r, f"{where}.equality_rows")
                          for r in (dele.equality_rows if dele else ())],
    }


def state_itf(model: Model, state: State, index: int, action: str) -> dict:
    """One ITF state: every variable of ``VAR_TYPES`` in its type's form."""
    meta = state.metadata
    snap = meta.current
    manifests, files = [], []
    rows = []
    if snap is not None:
        rows = [tup(string(r.path, "rows"), integer(r.position, "rows"), row(r.values, "rows"))
                for r in read_rows(state.store.archive(), snap, model.table.schema.names)]
        # read as the rows are (the store's archive): an object a clean-up deleted is listed
        # in ``deleted``, and the table that needs it is unreadable (property ``readable``)
        objects = state.store.archive()
        for mp in objects[snap.manifest_list].manifests:
            m = objects[mp]
            w = f"manifests[{mp}]"
            manifests.append({
                "path": string(mp, w), "content": string(m.content, w),
                "added_snapshot": integer(m.added_snapshot_id, w),
                "seq": integer(m.sequence_number, w),
                "entries": [tup(string(e.status, w), string(e.file.path, w),
                                integer(e.snapshot_id, w), integer(e.data_sequence_number, w),
                                integer(e.file_sequence_number, w)) for e in m.entries]})
            files += [(e.file.path, _file(e.file, f"files[{e.file.path}]")) for e in m.entries]
    return {
        "#meta": {"index": index},
        "action": string(action, "action"),
        "catalog": {"pointer": string(state.catalog.pointer, "catalog.pointer"),
                    "version": integer(meta.version, "catalog.version")},
        "current_snapshot": _none_is_zero(meta.current_snapshot_id, "current_snapshot"),
        "last_sequence_number": integer(meta.last_sequence_number, "last_sequence_number"),
        "rows": rows,
        "snapshots": [{
            "id": _none_is_zero(s.snapshot_id, "snapshots.id"),
            "parent": _none_is_zero(s.parent_id, "snapshots.parent"),
            "seq": integer(s.sequence_number, "snapshots.seq"),
            "operation": string(s.operation, "snapshots.operation"),
            "writer": string(s.writer, "snapshots.writer"),
            "manifest_list": string(s.manifest_list, "snapshots.manifest_list")}
            for s in meta.snapshots],
        "snapshot_log": [integer(s, "snapshot_log") for s in meta.snapshot_log],
        "refs": [tup(string(name, "refs"), string(kind, "refs"), integer(sid, "refs"))
                 for name, kind, sid in meta.refs],
        "manifests": manifests,
        "files": keyed(files, "files"),
        "deleted": {"#set": [string(p, "deleted") for p in sorted(state.store.deleted)]},
        "writers": keyed(((w.name, _writer(w, f"writers[{w.name}]")) for w in state.writers),
                         "writers"),
    }


def _writer(w, where: str) -> dict:
    def rec(r, h: str) -> dict:
        return {"outcome": string(r.outcome, h), "check": _none_is_empty(r.check, h + ".check"),
                "message": _none_is_empty(r.message, h + ".message"),
                "snapshot": _none_is_zero(r.snapshot_id, h + ".snapshot"),
                "seq": _none_is_zero(r.sequence_number, h + ".seq"),
                "base_snapshot": _none_is_zero(r.base_snapshot_id, h + ".base_snapshot"),
                "attempts": integer(r.attempts, h + ".attempts")}
    return {
        "phase": string(w.phase, where + ".phase"),
        "op_index": integer(w.op_index, where + ".op_index"),
        "base_snapshot": _none_is_zero(w.base_snapshot_id, where + ".base_snapshot"),
        "pending_snapshot": _none_is_zero(w.pending_snapshot_id, where + ".pending_snapshot"),
        "attempt": integer(w.attempt, where + ".attempt"),
        "history": [rec(r, f"{where}.history[{i}]") for i, r in enumerate(w.history)],
    }


def export(doc: dict, path: str = "<trace>") -> dict:
    """The ITF document of a loaded trace (``traces.format.load_trace``): its actions re-run
    on the model, one ITF state per state (state 0: the initial state). A value with no
    faithful form raises ``InputError`` naming the state and the field."""
    cfg = ExploreConfig.from_json(doc["config"], f"{path}: field 'config'")
    model = model_for(cfg, path)
    run = run_actions(model, doc["actions"])
    if run.stopped is not None:
        raise InputError(f"action {run.stopped + 1} ({doc['actions'][run.stopped]}) is not "
                         f"enabled: {run.stop_reason}", path)
    states = []
    for i, s in enumerate(run.states):
        action = str(run.actions[i - 1]) if i else "init"
        try:
            states.append(state_itf(model, s, i, action))
        except Unrepresentable as e:
            raise InputError(f"cannot export state {i} ({action}) to ITF faithfully: {e}",
                             path) from None
    schema = model.table.schema
    return {"#meta": {"format": "ITF", "format-description":
                      "https://apalache-mc.org/docs/adr/015adr-trace.html",
                      "source": path, "description": doc.get("title") or doc.get("id") or "",
                      "generator": "icecheck trace export --itf",
                      "varTypes": dict(VAR_TYPES),
                      # what a row's and a partition's positions mean (not ITF, for readers)
                      "columns": [[n, t] for n, t in schema.columns],
                      "partition_fields": [str(f) for f in model.table.spec.fields]},
            "vars": VARS, "states": states}
