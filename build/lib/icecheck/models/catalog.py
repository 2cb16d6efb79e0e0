"""Catalogs: how a writer swaps the table's metadata pointer, and what can go wrong.

* ``cas``: a database-backed catalog (JDBC, REST, Glue, Nessie): an atomic compare-and-swap of the
  current metadata location, rejected when the writer's base is no longer current.
* ``put_if_absent``: a Hadoop-style file catalog: the next version file ``v{N+1}`` is created only
  if absent (atomic rename), so two writers from the same base cannot both create it.
* ``last_writer_wins``: a plain object-store PUT of the pointer with no coordination. Every swap
  "succeeds"; a writer whose base was stale silently erases the commits made since its base.
"""

from __future__ import annotations

from dataclasses import dataclass

CAS = "cas"
PUT_IF_ABSENT = "put_if_absent"
LAST_WRITER_WINS = "last_writer_wins"
KINDS = (CAS, PUT_IF_ABSENT, LAST_WRITER_WINS)


@dataclass(frozen=True)
class CatalogState:
    """The table's entry in the catalog: the current metadata file and its version."""

    pointer: str
    version: int


@dataclass(frozen=True)
class SwapResult:
    applied: bool
    catalog: CatalogState
    message: str | None = None


def swap(kind: str, catalog: CatalogState, base_path: str, base_version: int,
         new_path: str, new_version: int) -> SwapResult:
    """Attempt the commit's pointer swap; return whether it applied and the catalog after it."""
    new = CatalogState(new_path, new_version)
    if kind == CAS:
        if catalog.pointer != base_path:
            return SwapResult(False, catalog,
                              f"Cannot commit: metadata location {catalog.pointer} has changed "
                              f"from {base_path}")
        return SwapResult(True, new)
    if kind == PUT_IF_ABSENT:
        if catalog.version >= new_version:
            return SwapResult(False, catalog,
                              f"Version {new_version} already exists: v{new_version}.metadata.json")
        return SwapResult(True, new)
    if kind == LAST_WRITER_WINS:
        return SwapResult(True, new)
    raise ValueError(f"unknown catalog kind {kind!r}; expected one of {', '.join(KINDS)}")
