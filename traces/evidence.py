"""The evidence behind a counterexample, in words, for the timeline, the sweep's trace pages and
the explorer: what each commit put in the table (its data files' rows; for each delete file,
which file and row it targets, and whether that row is still live), the rows of each snapshot
(with the file and position each is read from), and the dependency edges between committed
operations with their cycles. Everything is read from the model's states; nothing is re-derived.
"""

from __future__ import annotations

from icecheck.models.files import EQUALITY_DELETES, DataFile, DeleteFile
from icecheck.models.metadata import ADDED
from icecheck.models.reads import read_rows
from icecheck.models.system import Model, State


def _rows_text(rows) -> str:
    return ", ".join(repr(tuple(r)) for r in rows) if rows else "(none)"


def file_text(f) -> str:
    """A content file's contents: a data file's rows by position, a delete file's targets."""
    if isinstance(f, DataFile):
        if f.rows is None:
            return f"data file, {f.record_count} row(s)"
        return "data file: " + "; ".join(f"{i}: {tuple(r)!r}" for i, r in enumerate(f.rows))
    if isinstance(f, DeleteFile):
        if f.content == EQUALITY_DELETES:
            return (f"equality deletes on ({', '.join(f.equality_columns)}): "
                    + _rows_text(f.equality_rows))
        kind = "deletion vector" if f.content == "dv" else "position deletes"
        return f"{kind}: " + ", ".join(f"{p}@{pos}" for p, pos in f.positions)
    return type(f).__name__


def rows_of(model: Model, state: State) -> list[str]:
    """The rows of the current snapshot, each with the file and position it is read from."""
    rows = read_rows(state.store.archive(), state.metadata.current, model.table.schema.names)
    return [f"{tuple(r.values)!r} in {r.path}@{r.position}"
            for r in sorted(rows, key=lambda r: (repr(r.values), r.path, r.position))]


def _target(model: Model, before: State, after: State, path: str, pos: int, key: str) -> str:
    """``path@pos`` with the row there, and whether the delete removes a live row: a position
    no longer live before the commit (its row already deleted or rewritten) removes nothing, and
    the row that now carries that key is named (it is untouched)."""
    names = model.table.schema.names
    f = before.store.archive().get(path)
    values = None
    if isinstance(f, DataFile) and f.rows is not None and 0 <= pos < len(f.rows):
        values = tuple(f.rows[pos])
    text = f"{path}@{pos}" + (f" = {values!r}" if values is not None else "")
    live_before = {(r.path, r.position)
                   for r in read_rows(before.store.archive(), before.metadata.current, names)}
    if (path, pos) in live_before:
        return text
    text += ", a row no longer live when this commit landed (it removes nothing)"
    if values is not None and key in names:
        k = values[names.index(key)]
        same = [f"{tuple(r.values)!r} in {r.path}@{r.position}"
                for r in read_rows(after.store.archive(), after.metadata.current, names)
                if r.values[names.index(key)] == k]
        if same:
            text += f"; the live row with {key}={k!r} is " + ", ".join(same) + ", untouched"
    return text


def commit_lines(model: Model, before: State, after: State, key: str) -> list[str]:
    """What the current snapshot of ``after`` added: each file with its rows or targets; then
    each file live before and gone after, as ``removed <path>: ...`` (a rewritten data file, or
    a delete file the commit dropped: the evidence of an undelete by clean-up)."""
    snap = after.metadata.current
    if snap is None:
        return []
    out = []
    prev = before.metadata.current
    if prev is not None:
        from icecheck.models.reads import live_data_entries, live_delete_entries
        gone = []
        for entries in (live_data_entries, live_delete_entries):
            now = {e.file.path for e in entries(after.store.archive(), snap)}
            gone += [e for e in entries(before.store.archive(), prev) if e.file.path not in now]
        out += [f"removed {e.file.path}: {file_text(e.file)} (data seq {e.data_sequence_number})"
                for e in gone]
    # through the archive: a commit's clean-up (cleanAll after an applied-but-failed swap) may
    # have deleted the very manifest list the current snapshot names
    archive = after.store.archive()
    out += [f"{path}: deleted since (reading the table fails)"
            for path in [snap.manifest_list] + list(archive[snap.manifest_list].manifests)
            if path not in after.store]
    for mp in archive[snap.manifest_list].manifests:
        for e in archive[mp].entries:
            if e.status != ADDED or e.snapshot_id != snap.snapshot_id:
                continue
            f = e.file
            if isinstance(f, DeleteFile) and f.content != EQUALITY_DELETES:
                kind = "deletion vector" if f.content == "dv" else "position delete"
                out.append(f"{f.path}: {kind} targeting "
                           + "; ".join(_target(model, before, after, p, pos, key)
                                       for p, pos in f.positions))
            else:
                # a file committed with an older data sequence number than its snapshot's (a
                # compaction keeping its starting sequence number): deletes newer than it apply
                older = (f" (data seq {e.data_sequence_number}, older than the snapshot's)"
                         if e.data_sequence_number != snap.sequence_number else "")
                out.append(f"{f.path}: {file_text(f)}{older}")
    return out


def snapshot_evidence(model: Model, run, key: str) -> list[tuple[int, str, list[str], list[str]]]:
    """(step, 'snapshot N (seq Q, operation, by writer)', files it added, rows it shows) for
    every step of ``run`` that moved the table to a new current snapshot."""
    out = []
    for k in range(1, len(run.states)):
        before, after = run.states[k - 1], run.states[k]
        if after.catalog.pointer == before.catalog.pointer:
            continue
        snap = after.metadata.current
        if snap is None or snap.snapshot_id == getattr(before.metadata.current, "snapshot_id", None):
            continue
        head = (f"snapshot {snap.snapshot_id} (seq {snap.sequence_number}, {snap.operation}, "
                f"by {snap.writer or '?'})")
        out.append((k, head, commit_lines(model, before, after, key), rows_of(model, after)))
    return out


def dependency_lines(model: Model, state: State, key: str) -> tuple[list[str], list[str]]:
    """(the data dependency edges 'w1.1 -ww id=1-> w2.1', the cycles 'G-single: a -rw-> b ...')
    between the committed operations of ``state``."""
    from icecheck.properties import dependency_graph
    from icecheck.properties.isolation import find_cycles

    g = dependency_graph(model, state, key=key)
    edges = sorted(f"{a} -{t['type']} {key}={t.get('row_key')!r}-> {b}"
                   for a, b, t in g.edges(data=True) if t.get("type") != "co")
    cycles = [f"{name}: " + ", ".join(f"{a} -{t} {key}={k!r}-> {b}" for a, b, t, k in edges)
              for name, edges in find_cycles(g)]
    return edges, cycles


def evidence_text(model: Model, run, key: str) -> str:
    """The evidence as plain text (for ``trace show`` and the sweep's pages)."""
    lines = ["commits (what each wrote, which file and row each delete targets, the rows after):"]
    for k, head, files, rows in snapshot_evidence(model, run, key):
        lines.append(f"  step {k}: {head}")
        lines += [f"    - {f[len('removed '):]}" if f.startswith("removed ") else f"    + {f}"
                  for f in files] or ["    (no files)"]
        lines.append("    rows: " + ("; ".join(rows) if rows else "(empty)"))
    edges, cycles = dependency_lines(model, run.final, key)
    lines.append("dependencies between committed operations (ww/wr/rw on a key):")
    lines += [f"  {e}" for e in edges] or ["  (none)"]
    lines += [f"  cycle {c}" for c in cycles]
    return "\n".join(lines)
