"""Seed 002, Fig 8: manifest files across five snapshots, entry by entry.

Java writes a snapshot's new manifests first in its manifest list (the seed draws them last);
the test compares manifest lists in Java's order.
"""

import os

from icecheck.models.metadata import ADDED, DELETED, EXISTING
from icecheck.scenarios.format import load_scenario
from icecheck.scenarios.runner import execute_scenario

from icecheck.scenarios import BUILTIN_DIR  # noqa: E402

HERE = os.path.dirname(__file__)
SCENARIO = os.path.join(BUILTIN_DIR, "seeds", "seed-002-five-snapshots.yaml")


def manifest_view(state, snapshot):
    """[(added_snapshot_seq, [(file, status), ...]), ...] in manifest-list order."""
    meta = state.metadata
    seq_of = {s.snapshot_id: s.sequence_number for s in meta.snapshots}
    mlist = state.store[snapshot.manifest_list]
    out = []
    for path in mlist.manifests:
        m = state.store[path]
        out.append((seq_of[m.added_snapshot_id], [(e.file.path, e.status) for e in m.entries]))
    return out


def test_five_snapshot_walkthrough():
    verdict, state = execute_scenario(load_scenario(SCENARIO))
    assert verdict.passed, verdict.failures
    snaps = state.metadata.snapshots
    assert [s.sequence_number for s in snaps] == [1, 2, 3, 4, 5]
    assert [s.operation for s in snaps] == ["append", "delete", "append", "delete", "append"]
    views = [manifest_view(state, s) for s in snaps]
    # 1. manifest-1: data-1, data-2 ADDED.
    assert views[0] == [(1, [("data-1", ADDED), ("data-2", ADDED)])]
    # 2. manifest-1 rewritten as manifest-2: data-1 DELETED, data-2 EXISTING.
    assert views[1] == [(2, [("data-1", DELETED), ("data-2", EXISTING)])]
    # 3. manifest-3 with data-3 ADDED; manifest-2 carried unchanged (same file).
    assert views[2] == [(3, [("data-3", ADDED)]), (2, [("data-1", DELETED), ("data-2", EXISTING)])]
    assert state.store[snaps[2].manifest_list].manifests[1] == state.store[snaps[1].manifest_list].manifests[0]
    # 4. manifest-2 rewritten as manifest-4: data-2 DELETED, data-1 gone; manifest-3 carried.
    assert views[3] == [(3, [("data-3", ADDED)]), (4, [("data-2", DELETED)])]
    # 5. manifest-5 with data-4; manifest-3 carried; manifest-4 (only DELETED) dropped.
    assert views[4] == [(5, [("data-4", ADDED)]), (3, [("data-3", ADDED)])]
