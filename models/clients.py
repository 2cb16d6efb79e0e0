"""Catalog clients, per writer: one table, several clients, each with its own commit.

The catalog section of a configuration says what the server does (models/catalog.py: its swap)
and, by default, every writer commits through the same client. Real tables mix clients: a
Spark job that takes the Hive Metastore lock beside a job configured with
``engine.hive.lock-enabled=false``, a REST client that resends a commit after a timeout beside
one that does not, PyIceberg beside Java. A ``ClientSpec`` says, for one writer, the swap its
commit does and which catalog faults can reach it; ``Model`` asks this module, per writer.

The one swap that is not a catalog kind is the Hive lock taken beside writers that do not lock
(``HMS_LOCK``). A locking writer checks the table's metadata_location under the lock and then
calls alter_table with no expected value (HiveTableOperations.doCommit, lines 180-186 and
213-215 at Iceberg 1.10.2); a writer without the lock never looks at the lock and swaps with
HMS's expected-value check (a CAS, HiveOperationsBase.java:93-101). Among locking writers the
lock makes check and write one step; a no-lock commit that lands between a locking writer's
check and its write is overwritten. So a locking writer's swap is two steps here: ``cas``
checks under the lock (a lost race as any other when the location moved) and takes the lock
(``LOCKED``), and the next ``cas`` writes without comparing. While one writer holds the lock no
other locking writer may check (``Model.action_parts``).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import catalog as cat

#: a Hive writer that takes the metastore lock, beside writers that do not (see above)
HMS_LOCK = "hms_lock"
SWAPS = cat.KINDS + (HMS_LOCK,)


@dataclass(frozen=True)
class ClientSpec:
    """One writer's catalog client: the swap its commit does (``SWAPS``), whether a commit's
    reply can be lost (``faults``: CAS_REPLY_LOST, CAS_NOT_APPLIED) and whether an applied
    commit can be answered CommitFailedException (``applied_failed``), and the named catalog
    entry it stands for (models/catalogs.yaml), if any."""

    writer: str
    kind: str
    faults: bool = False
    applied_failed: bool = False
    name: str | None = None


def swap(kind: str, catalog: cat.CatalogState, base_path: str, base_version: int,
         new_path: str, new_version: int, locked: bool) -> cat.SwapResult:
    """The writer's swap: the catalog's, or for ``HMS_LOCK`` the check under the lock (not
    ``locked``: it applies nothing, and fails as a lost race when the location moved) or the
    write that follows it (``locked``: the new location, whatever is there now)."""
    if kind != HMS_LOCK:
        return cat.swap(kind, catalog, base_path, base_version, new_path, new_version)
    if locked:
        return cat.swap(cat.LAST_WRITER_WINS, catalog, base_path, base_version, new_path,
                        new_version)
    if catalog.pointer != base_path:
        # HiveTableOperations.doCommit, lines 180-186: CommitFailedException
        return cat.SwapResult(False, catalog,
                              f"Cannot commit: Base metadata location '{base_path}' is not same "
                              f"as the current table metadata location '{catalog.pointer}' "
                              f"for default.t")
    return cat.SwapResult(False, catalog, None)


def needs_lock_step(kind: str) -> bool:
    return kind == HMS_LOCK
