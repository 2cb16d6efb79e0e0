"""Spark's ``remove_orphan_files`` (DeleteOrphanFilesSparkAction, spark/v3.5 at Iceberg 1.10.2).

``CALL system.remove_orphan_files(table => t, older_than => ts)`` loads the table, lists its
location, computes the files its metadata references, and deletes every listed file older than
``ts`` that is not among them. It commits nothing: no snapshot, no metadata swap. The model
runs it as a writer with two steps (models/system.py): ``begin`` loads the metadata (the
procedure loads the table when it is called; every dataset below reads that ``Table``, whose
``ops.current()`` is not refreshed) and fixes the cut-off (models/clock.py); ``write`` lists
the location and deletes (``doExecute``, DeleteOrphanFilesSparkAction.java:248-278). In
between, other writers may commit: a commit that lands after the load is not in the valid set,
and its files are deleted if they are old enough (the action's own Javadoc: "It is dangerous to
call this action with a short retention interval as it might corrupt the state of the table if
another operation is writing at the same time", lines 94-95).

Valid files (``validFileIdentDS``, lines 280-293, with BaseSparkAction.java 147-221 at 1.10.2):

* ``contentFileDS``: every manifest of the ``all_manifests`` metadata table (every snapshot of
  the loaded metadata, ``AllManifestsTable``), read by ``ReadManifest`` through
  ``ManifestFiles.read(...).select(path, content)`` (and ``readDeleteManifest`` for delete
  manifests), whose iterator is ``liveEntries()`` (ManifestReader.java:332-334): the data and
  delete files of ADDED and EXISTING entries;
* ``manifestDS``: those manifests' own paths;
* ``manifestListDS``: every snapshot's manifest list (ReachableFileUtil.manifestListLocations);
* ``otherMetadataFileDS(table, recursive=false)``: the current metadata file and the files of
  its metadata log (``previousFiles()``, ReachableFileUtil.java:62-85), the version hint, and
  statistics files. The model keeps no metadata log: every metadata file of a version below the
  loaded one counts as in it (``write.metadata.previous-versions-max`` is 100, more versions
  than a bounded run makes). That keeps, too, the metadata files of swaps that lost a race,
  which Java would delete; nothing reads them. The model has no version hint and no statistics.

Listing (``listedFileDS``, lines 304-356): every file under the table location whose
modification time is before ``olderThanTimestamp`` (``file.getModificationTime() <
olderThanTimestamp``, line 326). The table location holds every object the model names but an
ADD_FILES external file (``ext/...``: Spark's ``add_files`` registers files where they are, in
the source folder); so the paths need none of the action's scheme and authority matching
(``FileURI``, lines 517-545): the model's paths have no scheme.

Reading the metadata can fail: a manifest list or manifest that an expiry deleted after the
load (the loaded metadata still lists the expired snapshot) fails ``ReadManifest`` with
``NotFoundException`` ("Failed to open input stream for file: ..."), and the action with it,
before it deletes anything; the model raises the store's KeyError, which ``Model._apply`` ends
``read_failed``.
"""

from __future__ import annotations

from typing import Mapping

from .commands_spec import EXTERNAL_PREFIX
from .metadata import TableMetadata


def valid_files(store: Mapping, meta: TableMetadata, archive: Mapping | None = None
                ) -> set[str]:
    """The paths DeleteOrphanFilesSparkAction.validFileIdentDS counts as referenced by the
    loaded metadata ``meta``. Manifest lists and manifests are read from ``store`` (a deleted
    one raises KeyError, as the real read fails); the metadata log from ``archive`` (the
    objects ever written: which metadata files exist is decided by the listing)."""
    valid = {meta.path}
    for path, obj in (archive if archive is not None else store).items():
        if type(obj) is TableMetadata and obj.version < meta.version:
            valid.add(path)
    for snap in meta.snapshots:
        valid.add(snap.manifest_list)
        mlist = store[snap.manifest_list]
        for mpath in mlist.manifests:
            if mpath in valid:
                continue            # dropDuplicates("path")
            valid.add(mpath)
            for e in store[mpath].entries:
                if e.is_live:
                    valid.add(e.file.path)
    return valid


def listing(store, cut: int | None) -> tuple[str, ...]:
    """The files of the table location whose modification time is before ``cut`` (sorted);
    none without a cut-off."""
    if cut is None:
        return ()
    mtime = store.mtime
    return tuple(sorted(p for p in store if not p.startswith(EXTERNAL_PREFIX)
                        and mtime(p) < cut))


def orphans(store, meta: TableMetadata, cut: int | None) -> list[str]:
    """The files the action deletes: listed (old enough) and not valid, sorted."""
    listed = listing(store, cut)
    if not listed:
        return []
    valid = valid_files(store, meta, store.archive())
    return [p for p in listed if p not in valid]


#: how a remove_orphan_files operation's record names what it deleted (``report``)
_REPORTED = "deleted {n} orphan file(s): "


def report(gone: list[str]) -> str:
    """The record message of a remove_orphan_files that deleted ``gone`` (Spark's procedure
    returns their locations, ``orphan_file_location``)."""
    if not gone:
        return "found no orphan file"
    return _REPORTED.format(n=len(gone)) + ", ".join(gone)


def reported(message: str | None) -> list[str]:
    """The paths a remove_orphan_files record's ``message`` (``report``) says it deleted."""
    if not message or not message.startswith("deleted ") or "orphan file(s): " not in message:
        return []
    return message.split("orphan file(s): ", 1)[1].split(", ")
