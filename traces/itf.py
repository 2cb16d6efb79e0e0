"""The model state of a trace in the Informal Trace Format (ITF), encoded with ITF's own
``#set``, ``#tup``, ``#map``, ``#bigint`` and ``#unserializable`` (Apalache ADR-015,
https://apalache-mc.org/docs/adr/015adr-trace.html), for ITF viewers and TLA+-style tools.

Why a separate export: corpus traces (``traces/format.py``) are already ITF documents, but their
states carry a summary (digest, pointer, rows as plain lists) that replay compares; changing it
would break every stored trace. ``icecheck trace export --itf`` re-executes a trace on the model
and writes the full state at every step instead. Field by field: docs/traces.md, "ITF export".
"""

from __future__ import annotations

from typing import Any

from icecheck.engines.config import ExploreConfig
from icecheck.models.files import DataFile, DeleteFile
from icecheck.models.reads import read_rows
from icecheck.models.system import Model, State

from .execute import model_for, run_actions

MAX_SAFE = 2 ** 53 - 1      # ITF: integers beyond JavaScript's safe range are {"#bigint": ...}


def value(v: Any) -> Any:
    """A Python value as an ITF expression (ITF has no null and no floats)."""
    if isinstance(v, bool) or isinstance(v, str):
        return v
    if isinstance(v, int):
        return v if -MAX_SAFE <= v <= MAX_SAFE else {"#bigint": str(v)}
    if isinstance(v, (tuple, list)):
        return {"#tup": [value(x) for x in v]}
    if v is None:
        return {"#unserializable": "null"}
    return {"#unserializable": repr(v)}


def iset(items) -> dict:
    """A set, its elements in a stable order (by their JSON text)."""
    import json

    out = [value(x) if not isinstance(x, dict) else x for x in items]
    uniq = {json.dumps(x, sort_keys=True): x for x in out}
    return {"#set": [uniq[k] for k in sorted(uniq)]}


def imap(pairs) -> dict:
    return {"#map": [[value(k), v] for k, v in sorted(pairs, key=lambda kv: repr(kv[0]))]}


def _opt(v: int | None) -> int:
    """Snapshot ids and sequence numbers are positive; 0 stands for 'none'."""
    return 0 if v is None else value(v)


def _file(f) -> dict:
    rows = list(f.rows or ()) if isinstance(f, DataFile) else []
    dele = f if isinstance(f, DeleteFile) else None
    return {
        "content": f.content,
        "partition": value(tuple(f.partition)),
        "rows": imap((i, value(tuple(r))) for i, r in enumerate(rows)),
        "positions": iset(tuple(p) for p in (dele.positions if dele else ())),
        "equality_columns": value(tuple(dele.equality_columns if dele else ())),
        "equality_rows": iset(tuple(r) for r in (dele.equality_rows if dele else ())),
    }


def state_itf(model: Model, state: State, index: int, action: str) -> dict:
    meta = state.metadata
    snap = meta.current
    manifests, files = {}, {}
    rows = []
    if snap is not None:
        rows = [((r.path, r.position), value(tuple(r.values)))
                for r in read_rows(state.store.archive(), snap, model.table.schema.names)]
        # read as the rows are (the store's archive): an object a clean-up deleted is listed
        # in ``deleted``, and the table that needs it is unreadable (property ``readable``)
        objects = state.store.archive()
        for mp in objects[snap.manifest_list].manifests:
            m = objects[mp]
            manifests[mp] = {
                "content": m.content, "added_snapshot": value(m.added_snapshot_id),
                "seq": value(m.sequence_number),
                "entries": iset((e.status, e.file.path, e.snapshot_id, e.data_sequence_number,
                                 e.file_sequence_number) for e in m.entries)}
            for e in m.entries:
                files[e.file.path] = _file(e.file)
    return {
        "#meta": {"index": index},
        "action": action,
        "catalog": {"pointer": state.catalog.pointer, "version": value(meta.version)},
        "current_snapshot": _opt(meta.current_snapshot_id),
        "last_sequence_number": value(meta.last_sequence_number),
        "rows": imap(rows),
        "snapshots": imap((s.snapshot_id, {
            "parent": _opt(s.parent_id), "seq": value(s.sequence_number),
            "operation": s.operation, "writer": s.writer, "manifest_list": s.manifest_list})
            for s in meta.snapshots),
        "snapshot_log": [value(s) for s in meta.snapshot_log],
        "manifests": imap(manifests.items()),
        "files": imap(files.items()),
        "deleted": iset(sorted(state.store.deleted)),
        "writers": imap((w.name, {
            "phase": w.phase, "op_index": value(w.op_index),
            "base_snapshot": _opt(w.base_snapshot_id),
            "pending_snapshot": _opt(w.pending_snapshot_id), "attempt": value(w.attempt),
            "history": [{"outcome": r.outcome, "check": r.check or "",
                         "message": r.message or "", "snapshot": _opt(r.snapshot_id),
                         "seq": _opt(r.sequence_number), "base_snapshot":
                         _opt(r.base_snapshot_id), "attempts": value(r.attempts)}
                        for r in w.history]}) for w in state.writers),
    }


VARS = ["action", "catalog", "current_snapshot", "last_sequence_number", "rows", "snapshots",
        "snapshot_log", "manifests", "files", "deleted", "writers"]


def export(doc: dict, path: str = "<trace>") -> dict:
    """The ITF document of a loaded trace (``traces.format.load_trace``): its actions re-run
    on the model, one ITF state per state (state 0: the initial state)."""
    from icecheck.scenarios.errors import InputError

    cfg = ExploreConfig.from_json(doc["config"], f"{path}: field 'config'")
    model = model_for(cfg, path)
    run = run_actions(model, doc["actions"])
    if run.stopped is not None:
        raise InputError(f"action {run.stopped + 1} ({doc['actions'][run.stopped]}) is not "
                         f"enabled: {run.stop_reason}", path)
    states = [state_itf(model, s, i, str(run.actions[i - 1]) if i else "init")
              for i, s in enumerate(run.states)]
    return {"#meta": {"format": "ITF", "format-description":
                      "https://apalache-mc.org/docs/adr/015adr-trace.html",
                      "source": path, "description": doc.get("title") or doc.get("id") or "",
                      "generator": "icecheck trace export --itf"},
            "vars": VARS, "states": states}
