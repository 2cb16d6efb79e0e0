"""Helpers for the tests of the checker's speed plumbing (memos, keys, digests): the
configurations they cover and a breadth-first walk of distinct states."""

from __future__ import annotations

from icecheck.engines.explicit import Bounds, Expander

#: (profile, writers, ops, mix, keys, catalog, format, retries, flags): faults, crashes,
#: applied-but-failed retries (phantom failures), expiry, compaction, rewrite_manifests,
#: rewrite_deletes and a last-writer-wins catalog between them
MIXES = [
    ("spark-3.5-mor-snapshot", 3, 1, ("delete", "update"), 1, "cas", 2, 1, {}),
    ("spark-3.5-mor-serializable", 2, 2, ("delete", "update", "insert", "compact"), 1, "cas", 2, 1,
     {}),
    ("spark-3.5-cow-serializable", 2, 1, ("insert", "merge", "expire"), 1, "cas", 2, 1,
     {"faults": True, "crashes": True}),
    ("spark-3.5-mor-serializable", 2, 1, ("delete", "rewrite_manifests", "rewrite_deletes"), 1,
     "cas", 2, 2, {"phantom_failures": True}),
    ("spark-3.5-cow-snapshot", 3, 1, ("insert",), 1, "last_writer_wins", 2, 2, {}),
    # one external file every writer adds (the only path two writers both write), and an
    # expiry that may delete it
    ("pyiceberg-0.12-serializable", 3, 1, ("add_files", "delete"), 1, "cas", 2, 1, {}),
    ("spark-3.5-cow-serializable", 2, 2, ("add_files", "expire"), 1, "cas", 2, 0, {}),
]


def walk(cfg, limit: int = 400, *, exact: bool = False, symmetry: bool = True):
    """(an Expander of ``cfg``, up to ``limit`` distinct states, breadth-first, deduplicated
    by canonical fingerprint; with ``exact``, by the fingerprint and the writers' exact
    content: states a fingerprint merges, differing in the records it leaves out, are all
    kept)."""
    ex = Expander(cfg, symmetry, False, Bounds(), evaluate=False)
    content = ex.fp.content

    def key(s):
        fp = ex.fingerprints(s)[0]
        return (fp, tuple(map(content, s.writers))) if exact else fp

    s0 = ex.model.initial()
    seen = {key(s0)}
    out, frontier = [s0], [s0]
    while frontier and len(out) < limit:
        nxt = []
        for s in frontier:
            for a in ex.model.actions(s):
                s2 = ex.model.step(s, a)
                fp = key(s2)
                if fp not in seen:
                    seen.add(fp)
                    out.append(s2)
                    nxt.append(s2)
        frontier = nxt
    return ex, out[:limit]
