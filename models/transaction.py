"""Transactions: several snapshot producers committed with one metadata swap.

Java's ``Transaction t = table.newTransaction(); t.newAppend()...commit(); t.newRowDelta()
...commit(); t.commitTransaction();`` (``BaseTransaction``, a SIMPLE transaction, Iceberg
1.10.2, core/src/main/java/org/apache/iceberg/BaseTransaction.java):

* ``newTransaction()`` starts from ``ops.current()``: the metadata the writer read when it
  began (``base``);
* each staged operation's ``commit()`` runs ``SnapshotProducer.commit()`` against the
  transaction's own ``TransactionTableOperations``: ``apply()`` validates against the
  transaction's current metadata (the base plus the operations staged before it) and produces
  its snapshot, which becomes that metadata's head. Nothing reaches the catalog yet, but a
  ValidationException is thrown right there, so a transaction whose operations conflict with
  each other fails while it is being built (the model: at ``begin``);
* ``commitTransaction()`` -> ``commitSimpleTransaction()`` retries (``commit.retry.num-retries``)
  ``applyUpdates(underlyingOps); underlyingOps.commit(base, current)``. ``applyUpdates``
  refreshes; when the table moved it re-commits every staged update in order on the refreshed
  metadata (``update.commit()``: each validates against the refreshed head plus the updates
  before it and produces its snapshot again with a new sequence number). A ValidationException
  ends the transaction (never retried); a lost swap refreshes and re-applies again;
* one metadata file holds every snapshot of the transaction: the catalog moves from the old
  head to the last one in one swap, so no reader of the current table sees the snapshots in
  between (time travel does: they are in the history);
* a staged operation's ``validateFromSnapshot(id)`` names the snapshot the engine began from,
  so its validation window includes the snapshots the transaction's earlier operations
  produced: an operation can conflict with one staged before it in the same transaction
  (scenario ``transactions/second-operation-conflicts-with-the-first``).

The model applies the staged operations in ``Model._begin`` (against the base: the in-transaction
``commit()`` calls) and again in ``Model._write_metadata`` (against the refreshed metadata:
``applyUpdates``), with the same ``validate_operation`` and ``produce_snapshot`` every single
operation uses. Not modelled: a row filter or ReplacePartitions inside a transaction (the
consistency oracle derives a transaction's effect from its files) and metadata updates
(expiry, properties, refs) staged in one; each is refused, never silently approximated. The
CAS_APPLIED_FAILED fault on a transaction is Model._reapply_applied_transaction.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Mapping

from .metadata import TableMetadata
from .operations import Operation
from .producer import produce_snapshot, validate_operation
from .table import TableConfig


def apply_transaction(store, table_at: Callable[[TableMetadata], TableConfig],
                      base: TableMetadata, op: Operation, *, first_snapshot_id: int,
                      writer_name: str, metadata_path: str, starting_id: int | None,
                      starting_sequence: int | None = None, caches: list | None = None,
                      tag: str = "") -> tuple[TableMetadata, dict, tuple[int, ...]]:
    """Apply the staged operations of ``op`` (a TRANSACTION) one after another on ``base``.

    Returns the metadata the transaction commits (one file, ``metadata_path``, one version
    after ``base``), the objects its snapshots wrote (manifests and manifest lists; the
    intermediate metadata lives only in memory, as in ``TransactionTableOperations``), and the
    ids of its snapshots in order (``first_snapshot_id``, +1, ...). ``starting_id`` is the
    snapshot the writer began from: each staged operation that validates from a snapshot
    validates from it. ``caches`` (one dict per staged operation, updated in place) are the
    operations' filter-manager caches (producer._filter_manifests), which a staged update keeps
    from its in-transaction commit to its re-application. Raises ``ValidationFailed`` as the
    failing operation's ``commit()`` does. ``tag``: names this commit attempt's files
    (its snapshots keep their ids across attempts; ``metadata.attempt_prefix``).
    """
    meta = base
    view = store
    objects: dict = {}
    ids = []
    for k, sub in enumerate(op.ops):
        table = table_at(meta)
        start = starting_id if sub.validations.from_snapshot else None
        validate_operation(view, table, meta, sub, start)
        sid = first_snapshot_id + k
        produced = produce_snapshot(view, table, meta, sub, snapshot_id=sid,
                                    writer_name=writer_name,
                                    metadata_path=f"{metadata_path}#{k}", starting_id=start,
                                    starting_sequence=starting_sequence,
                                    filter_cache=caches[k] if caches is not None else None,
                                    tag=tag)
        written = {p: o for p, o in produced.objects if not isinstance(o, TableMetadata)}
        objects.update(written)
        view = view.put_all(written)
        meta = produced.metadata
        ids.append(sid)
    final = replace(meta, path=metadata_path, version=base.version + 1)
    objects[metadata_path] = final
    return final, objects, tuple(ids)


def staged_files(ops: tuple[Operation, ...]) -> dict:
    """The data and delete files the staged operations add (what the writer writes)."""
    return {f.path: f for sub in ops for f in sub.add_data + sub.add_deletes}


def with_files(store: Mapping, op: Operation):
    """``store`` with the transaction's own files in it (for applying it at begin, before the
    writer's ``write`` step has stored them)."""
    return store.put_all(staged_files(op.ops))
