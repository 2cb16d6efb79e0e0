"""The audit's checks of file-level history, run on each snapshot the walk visits.

For each snapshot (``on_snapshot``) the walk hands over its live files and what changed since
its parent; the checks note, per file, the snapshots that made it live or removed it, and
record candidates:

* **duplicate_file**: a data file path counted twice among one snapshot's live entries (two
  registrations of one file, e.g. two overlapping ``add_files``): every read returns its rows
  twice. A violation, proven from metadata.
* **dangling_delete**: a live position delete file or deletion vector whose data file is not
  live. Either the delete was *added after* its data file was removed (its writer worked from a
  snapshot that still had the file, and its commit did not see it go: the delete may not have
  taken effect on rows the remover rewrote; a violation, like the model's dangling-delete and
  isolation findings), or it was *left behind* by the snapshot that removed the data file (on
  format v3 a violation: a deletion vector must go with its file; on v2 a finding, unless the
  rows it deleted are live again in the files that replaced its data file: then an undelete).
* **dropped_equality_delete**: a ``replace`` snapshot (a rewrite) removed an equality delete
  file while data files older than it (data sequence number below the delete's) are still live
  in its partition: rows it deleted may be visible again (possible; proven when the delete's
  keys are read and match live rows no other delete removes).
* **missing_file**: a manifest list or manifest that does not exist or cannot be read, a data
  or delete file live in a ref's head snapshot (``--check-files heads``, the default) or in any
  snapshot (``all``) that does not exist, a metadata file of the metadata log that does not.

The lineage checks (parents, sequence numbers, refs) read only the table metadata and live in
``history.py``. ``finish()`` turns the candidates into findings, reading rows (``rows.py``)
where the budget allows.
"""

from __future__ import annotations

from collections import defaultdict

from .findings import (FINDING, POSSIBLE, PROVEN_DATA, PROVEN_METADATA, VIOLATION, Finding)
from .manifests import DATA, EQUALITY_DELETES, POSITION_DELETES, MetadataReader
from .rows import RowReader, jsonable, row_key

CHECK_FILES = ("heads", "all", "none")


def describe(s) -> str:
    """``snapshot 123 (seq 4, overwrite by spark)``: how messages name a snapshot."""
    if s is None:
        return "an expired snapshot"
    op = _op(s)
    engine = (_summary(s).get("engine-name") or "")
    seq = f"seq {s.sequence_number}, " if s.sequence_number else ""     # v1: no numbers
    return (f"snapshot {s.snapshot_id} ({seq}{op}"
            + (f" by {engine}" if engine else "") + ")")


def _op(s) -> str:
    summ = s.summary
    op = getattr(summ, "operation", None) if summ is not None else None
    return getattr(op, "value", op) or "unknown"


def _summary(s) -> dict:
    summ = s.summary
    if summ is None:
        return {}
    return dict(getattr(summ, "additional_properties", {}) or {})


def short(path: str) -> str:
    return path.rsplit("/", 1)[-1]


class FileChecks:
    def __init__(self, table, reader: MetadataReader, rows: RowReader | None,
                 check_files: str = "heads"):
        self.table = table
        self.meta = table.metadata
        self.reader = reader
        self.rows = rows
        self.check_files = check_files
        self.format_version = int(self.meta.format_version)
        self.snaps = {s.snapshot_id: s for s in self.meta.snapshots}
        self.heads: dict[int, list[str]] = defaultdict(list)
        for name, ref in sorted(self.meta.refs.items()):
            self.heads[ref.snapshot_id].append(name)
        self.head_live: dict[int, frozenset] = {}
        self.added: dict[int, list[str]] = {}          # snapshot -> data files it made live
        self.visited = 0
        self._refs_index: dict[str, set] = defaultdict(set)   # data path -> deletes naming it
        self._dups: dict[str, dict] = {}
        self._dangling: dict[str, dict] = {}
        self._eq: list[dict] = []
        self._missing: dict[str, dict] = {}

    # -- the walk's callback ---------------------------------------------------------------
    def on_snapshot(self, s, live, delta) -> None:
        sid = s.snapshot_id
        self.visited += 1
        for u in delta.unreadable:
            kind = "manifest list" if u.path == s.manifest_list else "manifest"
            self._note_missing(u.path, kind, sid, u.reason)
        if live is None:
            return
        files = self.reader.files
        added = []
        for p, (before, after) in delta.changes.items():
            info = files[p]
            if after > before:
                info.added_by.append(sid)
            if after == 0:
                info.removed_by.append(sid)
            if info.content == DATA and after > before:
                added.append(p)
        if added:
            self.added[sid] = added
        for p, (before, after) in delta.changes.items():
            info = files[p]
            if info.content == DATA:
                if after > 1 and after > before and p not in self._dups:
                    self._dups[p] = {"snapshot": sid, "count": after, "heads": {}}
            elif info.content == POSITION_DELETES and before == 0 and after > 0:
                if info.referenced is not None:
                    self._refs_index[info.referenced].add(p)
                    if live.complete and not live.counts.get(info.referenced):
                        self._dangle(p, info.referenced, sid, at_birth=True, live=live)
        for p in delta.removed():
            info = files[p]
            if info.content == DATA and live.complete:
                for d in self._refs_index.get(p, ()):
                    if live.counts.get(d):
                        self._dangle(d, p, sid, at_birth=False, live=live)
            elif info.content == EQUALITY_DELETES and _op(s) == "replace" and live.complete:
                self._dropped_eq(s, p, live)
        if self.check_files == "all":
            for p in delta.added():
                self._check_exists(p, sid)
        if sid in self.heads:
            if self.check_files == "heads":
                for p in live.counts:
                    self._check_exists(p, sid)
            self.head_live[sid] = frozenset(live.counts)
            for p, d in self._dups.items():
                d["heads"][sid] = live.counts.get(p, 0)
            for d, c in self._dangling.items():
                c["heads"][sid] = bool(live.counts.get(d)) and not live.counts.get(c["data"])

    def _note_missing(self, path, kind, sid, reason) -> None:
        m = self._missing.setdefault(path, {"kind": kind, "snapshots": [], "reason": reason})
        if sid is not None and sid not in m["snapshots"]:
            m["snapshots"].append(sid)

    def _check_exists(self, path, sid) -> None:
        info = self.reader.files.get(path)
        ok = self.reader.exists(path)
        if info is not None:
            info.exists = ok
        if not ok:
            self._note_missing(path, info.kind if info else "file", sid, "does not exist")

    def _dangle(self, d: str, data: str, sid: int, at_birth: bool, live) -> None:
        if d in self._dangling:
            return
        info = self.reader.files[data] if data in self.reader.files else None
        remover = sid if not at_birth else self._remover(data, sid)
        candidates, their_deletes = [], {}
        if remover is not None:
            # the data files the remover made live, and still live here: where a rewrite put
            # the rows it kept
            candidates = [c for c in self.added.get(remover, []) if live.counts.get(c)]
            for c in candidates:
                their_deletes[c] = sorted(x for x in self._refs_index.get(c, ())
                                          if live.counts.get(x))
        self._dangling[d] = {"data": data, "snapshot": sid, "at_birth": at_birth,
                             "remover": remover, "data_known": info is not None,
                             "candidates": candidates, "candidate_deletes": their_deletes,
                             "heads": {}}

    def _remover(self, data: str, sid: int) -> int | None:
        """The ancestor of ``sid`` (or ``sid``) after which ``data`` was no longer live."""
        info = self.reader.files.get(data)
        if info is None or not info.removed_by:
            return None
        ancestors = set(self._ancestry(sid, stop=set(info.removed_by)))
        hits = [r for r in info.removed_by if r in ancestors]
        return max(hits, key=lambda r: self.snaps[r].sequence_number or 0) if hits else None

    def _ancestry(self, sid, stop=()):
        while sid is not None and sid in self.snaps:
            yield sid
            sid = self.snaps[sid].parent_snapshot_id

    def _dropped_eq(self, s, e: str, live) -> None:
        info = self.reader.files[e]
        files = self.reader.files
        older = []
        other_eq = []
        for p in live.counts:
            f = files[p]
            if f.content == DATA and f.seq is not None and info.seq is not None \
                    and f.seq < info.seq and _same_partition(f, info):
                older.append(p)
            elif f.content == EQUALITY_DELETES and _same_partition(f, info):
                other_eq.append(p)
        if not older:
            return                     # nothing it could still delete: a safe removal
        deletes = {c: sorted(x for x in self._refs_index.get(c, ()) if live.counts.get(x))
                   for c in older}
        self._eq.append({"delete": e, "snapshot": s.snapshot_id, "older": sorted(older),
                         "older_deletes": deletes, "other_eq": sorted(other_eq)})

    # -- findings ----------------------------------------------------------------------------
    def finish(self) -> list[Finding]:
        out: list[Finding] = []
        out += self._dup_findings()
        out += self._dangling_findings()
        out += self._eq_findings()
        out += self._missing_findings()
        return out

    def _heads_text(self, heads: dict) -> str:
        names = [n for sid, flag in heads.items() if flag for n in self.heads.get(sid, [])]
        return ("still so in " + ", ".join(sorted(names))) if names else \
            "no longer so in any branch or tag"

    def _dup_findings(self) -> list[Finding]:
        out = []
        for p, d in self._dups.items():
            info = self.reader.files[p]
            sid = d["snapshot"]
            adders = list(dict.fromkeys(info.added_by))
            rows = self.rows.rows(p) if self.rows is not None else None
            still = {h: c > 1 for h, c in d["heads"].items()}
            msg = (f"Data file {short(p)} is registered {d['count']} times among the live entries "
                   f"of {describe(self.snaps.get(sid))}"
                   + (f" (entries added by snapshots {', '.join(map(str, adders))})"
                      if len(adders) > 1 else "")
                   + f": every read returns its {info.record_count} row(s) {d['count']} times; "
                   + self._heads_text(still) + ".")
            out.append(Finding(
                "duplicate_file", VIOLATION, PROVEN_DATA if rows else PROVEN_METADATA, msg,
                snapshots=list(dict.fromkeys([*adders, sid])), files=[p], rows=jsonable(rows),
                rows_note="the file's rows, each read twice" if rows else "",
                details={"registrations": d["count"], "record_count": info.record_count,
                         "still_duplicated_in": _names(still, self.heads)}))
        return out

    def _dangling_findings(self) -> list[Finding]:
        out = []
        for dpath, c in self._dangling.items():
            d = self.reader.files[dpath]
            data = c["data"]
            sid, remover = c["snapshot"], c["remover"]
            dv = d.fmt == "PUFFIN"
            rows_deleted = rows_live = None
            positions = None
            if self.rows is not None:
                positions = self.rows.positions(d, data)
                if positions:
                    rows_deleted = self.rows.rows_at(data, positions)
                if rows_deleted:
                    rows_live = self._resurrected(rows_deleted, c)
            snaps = [x for x in (d.added_by[0] if d.added_by else None, remover, sid)
                     if x is not None]
            rem = self.snaps.get(remover) if remover is not None else None
            if c["at_birth"]:
                when = (f"was added by {describe(self.snaps.get(sid))} after "
                        + (f"{describe(rem)} had removed its data file {short(data)}"
                           if rem is not None else
                           f"its data file {short(data)} had left the table"
                           + ("" if c["data_known"] else
                              " (the file is in no retained snapshot)"))
                        + ": its writer worked from a snapshot that still had the file, and "
                          "its commit did not see the file go, so the rows it meant to delete "
                          "may not be deleted where the remover rewrote them")
                severity = VIOLATION
            else:
                when = (f"was left behind by {describe(self.snaps.get(sid))}, which removed its "
                        f"data file {short(data)} and kept the delete")
                severity = VIOLATION if dv else FINDING
            if dv:
                when += " (format v3 requires a deletion vector to go with its data file)"
            certainty = PROVEN_METADATA
            harm = ""
            if rows_live:
                severity, certainty = VIOLATION, PROVEN_DATA
                harm = (f" The {len(rows_live)} row(s) it deleted are live again in "
                        f"{', '.join(short(x) for x in sorted({r['file'] for r in rows_live}))}"
                        " (undelete).")
            elif rows_deleted is not None and c["candidates"] and rows_live == []:
                harm = " None of the rows it deleted is in the files that replaced its data file."
            elif rows_deleted is None and c["candidates"]:
                harm = (" The rows it deleted may be live again in the files that replaced its "
                        "data file (" + ", ".join(short(x) for x in c["candidates"][:5])
                        + "): they could not be read.")
            kind = "Deletion vector" if dv else "Position delete file"
            msg = (f"{kind} {short(dpath)} names data file {short(data)}, which is not live: it "
                   f"{when}; {self._heads_text(c['heads'])}.{harm}")
            out.append(Finding(
                "dangling_delete", severity, certainty, msg, snapshots=list(dict.fromkeys(snaps)),
                files=[dpath, data] + list(c["candidates"]),
                rows=jsonable([dict(r["row"], _file=short(r["file"])) for r in rows_live])
                if rows_live else jsonable(rows_deleted),
                property="undelete" if rows_live else "dangling_deletes",
                rows_note="live again, read from the files named" if rows_live else
                "the rows it deletes, read from its data file",
                details={"added_after_data_file_removed": c["at_birth"],
                         "deletion_vector": dv, "removed_by": remover, "dangling_from": sid,
                         "positions": positions[:50] if positions else positions,
                         "rows_live_again": len(rows_live) if rows_live is not None else None,
                         "still_dangling_in": _names(c["heads"], self.heads)}))
        return out

    def _resurrected(self, deleted: list[dict], c: dict):
        """The deleted rows found in the files that replaced the data file (less the rows
        their own live position deletes remove), or None when those could not be read."""
        if not c["candidates"]:
            return None
        want = {}
        for r in deleted:
            want.setdefault(row_key(r, sorted(r)), r)
        found = []
        for f in c["candidates"]:
            rows = self.rows.rows(f)
            if rows is None:
                return None
            gone = set()
            for x in c["candidate_deletes"].get(f, []):
                pos = self.rows.positions(self.reader.files[x], f)
                if pos is None:
                    return None
                gone.update(pos)
            for i, r in enumerate(rows):
                k = row_key(r, sorted(r))
                if i not in gone and k in want:
                    found.append({"file": f, "row": r})
        return found

    def _eq_findings(self) -> list[Finding]:
        out = []
        for c in self._eq:
            e = self.reader.files[c["delete"]]
            s = self.snaps.get(c["snapshot"])
            live_again = self._eq_rows(e, c) if self.rows is not None else None
            base = (f"Equality delete file {short(e.path)} (seq {e.seq}) was removed by "
                    f"{describe(s)} while {len(c['older'])} data file(s) older than it "
                    f"(data sequence number below {e.seq}) are live in its partition")
            if live_again:
                msg = (base + f": {len(live_again)} row(s) it deleted are live again "
                       "(undelete).")
                out.append(Finding("dropped_equality_delete", VIOLATION, PROVEN_DATA, msg,
                                   snapshots=[*e.added_by[:1], c["snapshot"]],
                                   files=[e.path] + c["older"][:10],
                                   rows=jsonable([dict(r["row"], _file=short(r["file"]))
                                                  for r in live_again]),
                                   rows_note="deleted by it, live again",
                                   details={"older_files": len(c["older"])}))
            elif live_again is None:
                msg = base + ": rows it deleted may be visible again (the files were not read)."
                out.append(Finding("dropped_equality_delete", VIOLATION, POSSIBLE, msg,
                                   snapshots=[*e.added_by[:1], c["snapshot"]],
                                   files=[e.path] + c["older"][:10],
                                   details={"older_files": len(c["older"])}))
        return out

    def _eq_rows(self, e, c):
        """Rows of the older live files whose key the removed delete holds, and that no
        other live delete removes; None when something needed could not be read."""
        schema = self.table.schema()
        try:
            cols = [schema.find_field(i).name for i in (e.equality_ids or ())]
        except Exception:  # noqa: BLE001
            return None
        keys = self.rows.rows(e.path)
        if keys is None or not cols:
            return None
        deleted = {row_key(k, cols) for k in keys}
        others = []
        for o in c["other_eq"]:
            oi = self.reader.files[o]
            try:
                ocols = [schema.find_field(i).name for i in (oi.equality_ids or ())]
            except Exception:  # noqa: BLE001
                return None
            orows = self.rows.rows(o)
            if orows is None:
                return None
            others.append((oi.seq, ocols, {row_key(k, ocols) for k in orows}))
        found = []
        for f in c["older"]:
            fi = self.reader.files[f]
            rows = self.rows.rows(f)
            if rows is None:
                return None
            gone = set()
            for x in c["older_deletes"].get(f, []):
                pos = self.rows.positions(self.reader.files[x], f)
                if pos is None:
                    return None
                gone.update(pos)
            for i, r in enumerate(rows):
                if i in gone or row_key(r, cols) not in deleted:
                    continue
                if any(seq is not None and fi.seq is not None and seq > fi.seq
                       and row_key(r, oc) in ks for seq, oc, ks in others):
                    continue
                found.append({"file": f, "row": r})
        return found

    def _missing_findings(self) -> list[Finding]:
        out = []
        for path, m in self._missing.items():
            sids = m["snapshots"]
            refs = sorted({n for x in sids for n in self.heads.get(x, [])})
            where = ("listed by " + ", ".join(describe(self.snaps.get(x)) for x in sids[:3])
                     + (f" and {len(sids) - 3} more" if len(sids) > 3 else "")) if sids else ""
            if m["kind"] in ("manifest list", "manifest"):
                harm = "reading those snapshots fails"
            elif m["kind"] == "metadata file":
                harm = "the table's history lists it; rolling back to it fails"
            else:
                harm = ("reading " + (", ".join(refs) if refs else "those snapshots")
                        + " fails")
            msg = f"The {m['kind']} {path} {m['reason']}" + (f" ({where})" if where else "") \
                + f": {harm}."
            severity = FINDING if m["kind"] == "metadata file" else VIOLATION
            out.append(Finding("missing_file", severity, PROVEN_METADATA, msg, snapshots=sids,
                               files=[path], details={"kind": m["kind"], "refs": refs}))
        return out

    def check_metadata_log(self) -> None:
        """Every metadata file the metadata log names exists."""
        for entry in self.meta.metadata_log:
            if not self.reader.exists(entry.metadata_file):
                self._note_missing(entry.metadata_file, "metadata file", None, "does not exist")


def _same_partition(f, e) -> bool:
    """Whether an equality delete ``e`` applies to data file ``f``'s partition: a delete
    in an unpartitioned spec applies to every file; otherwise same spec and same values."""
    if not e.partition:
        return True
    return f.spec_id == e.spec_id and f.partition == e.partition


def _names(flags: dict, heads: dict) -> list[str]:
    return sorted(n for sid, flag in flags.items() if flag for n in heads.get(sid, []))
