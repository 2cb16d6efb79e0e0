"""The object store: immutable objects by path, as a hashable, persistent mapping.

Writers only ever add objects under fresh names (Iceberg's file names carry UUIDs; ours carry
the writer and a counter), so ``put`` refuses to overwrite: an attempt to do so is a model bug.

Objects can be deleted (ExpireSnapshots' file clean-up, ``delete_all``): a deleted object is gone
for every reader of the store (``store[path]`` raises KeyError, iteration skips it), exactly as
on S3. The analysis of what a run *did* still needs the objects a deleted snapshot pointed at,
so ``archive()`` gives a read-only view that includes them; the model reads it only for what a
job planned before the deletion.

The store is also the filesystem's clock (models/clock.py): ``now`` is the logical tick the
scheduler has advanced to, and every object records the tick it was written at (its modification
time, ``mtime``), which DeleteOrphanFilesSparkAction compares with its ``older_than``. While the
clock stands at 0 nothing of it is kept (no tick has passed: every object is of tick 0), so a
search without ticks builds, compares and hashes stores exactly as before.
"""

from __future__ import annotations

import weakref
from typing import Any, Iterator, Mapping


class ObjectStore(Mapping[str, Any]):
    """``_base``/``_added`` record (weakly) the store this one was derived from and the paths
    it added: a checker's fingerprint of the store is then its base's plus the added objects'
    (engines/symmetry.py), instead of a pass over every object at every step. They are
    bookkeeping only: equality, hashing, iteration and pickling ignore them, and ``digests``."""

    __slots__ = ("_objects", "_hash", "_deleted", "_base", "_added", "digests", "_now",
                 "_mtimes", "clock_digests", "__weakref__")

    def __init__(self, objects: Mapping[str, Any] | None = None,
                 deleted: frozenset[str] = frozenset(), *,
                 base: "ObjectStore | None" = None, added: tuple[str, ...] = (),
                 now: int = 0, mtimes: Mapping[str, int] | None = None):
        self._objects: dict[str, Any] = dict(objects or {})
        self._hash: int | None = None
        self._deleted: frozenset[str] = deleted
        self._base = weakref.ref(base) if base is not None else None
        self._added = added
        #: a checker's digests of this store (engines/symmetry.py), bookkeeping like _base
        self.digests: Any = None
        #: the clock (models/clock.py): the current tick, and the tick each object written
        #: after tick 0 was written at (a path not in ``_mtimes`` was written at tick 0; the
        #: entries of deleted objects stay, as their objects do)
        self._now: int = now
        self._mtimes: dict[str, int] = dict(mtimes or {})
        #: a checker's digests of the clock (engines/symmetry.py), bookkeeping like digests
        self.clock_digests: Any = None

    def __reduce__(self):
        if self._now:
            return (_restore, (self._objects, self._deleted, self._now, self._mtimes))
        return (ObjectStore, (self._objects, self._deleted))

    @property
    def now(self) -> int:
        """The clock's tick (models/clock.py): 0 until the scheduler advances it."""
        return self._now

    def mtime(self, path: str) -> int:
        """The tick the object at ``path`` was written at (its modification time; deleted
        objects keep theirs)."""
        return self._mtimes.get(path, 0)

    @property
    def mtimes(self) -> Mapping[str, int]:
        """The modification time of every object written after tick 0 (read-only)."""
        return self._mtimes

    def tick(self) -> "ObjectStore":
        """The store one tick later: the same objects, the clock advanced."""
        new = self._derived(self._objects, self._deleted, ())
        new._now, new._mtimes = self._now + 1, self._mtimes
        return new

    def __getitem__(self, path: str) -> Any:
        if path in self._deleted:
            raise KeyError(path)
        return self._objects[path]

    def __contains__(self, path: object) -> bool:
        return path in self._objects and path not in self._deleted

    def __iter__(self) -> Iterator[str]:
        if not self._deleted:
            return iter(self._objects)
        return (p for p in self._objects if p not in self._deleted)

    def __len__(self) -> int:
        return len(self._objects) - len(self._deleted)

    @property
    def deleted(self) -> frozenset[str]:
        """Paths of objects that were written and later deleted."""
        return self._deleted

    def delete_all(self, paths) -> "ObjectStore":
        """The store without ``paths`` (paths that do not exist are ignored, as FileIO does)."""
        gone = frozenset(p for p in paths if p in self._objects) | self._deleted
        if gone == self._deleted:
            return self
        return self._derived(self._objects, gone, ())

    def written(self, path: str) -> Any:
        """The object ever written at ``path``, deleted or not (None if none): what a memo
        keys by identity (``Model.step``), never what a reader opens."""
        return self._objects.get(path)

    def changes_since(self, older: "ObjectStore") -> tuple[dict[str, Any], frozenset[str]]:
        """(objects this store has that ``older`` never had, in insertion order; paths it
        deleted that ``older`` had not): what a step did to the store, to apply again to
        another store (``Model.step``'s memo)."""
        old = older._objects
        return {p: o for p, o in self._objects.items() if p not in old}, \
            self._deleted - older._deleted

    def archive(self) -> Mapping[str, Any]:
        """Every object ever written, deleted ones included: for the history analysis, and for
        what a writer read before an expiry deleted it (the files a job's plan listed,
        ``system._merge_scan``; the base a PyIceberg retry resolves its window from)."""
        return self._objects

    def put_all(self, objects: Mapping[str, Any], paths: tuple[str, ...] | None = None
                ) -> "ObjectStore":
        """The store with ``objects`` added. ``paths``: the tuple of ``objects``' keys, when
        the caller keeps one (a step memo entry, ``Model._replay``): a store that adds only new
        paths records that very tuple as what it added, and a checker's digest of the added
        objects, cached by the tuple, serves every store that adds it
        (``Fingerprinter._added_sum``)."""
        old = self._objects
        if old.keys().isdisjoint(objects):       # only new paths (the common case)
            merged = dict(old)
            merged.update(objects)
            return self._derived(merged, self._deleted,
                                 paths if paths is not None else tuple(objects))
        clash = [p for p in objects if p in self._objects and self._objects[p] != objects[p]]
        if clash:
            raise AssertionError(f"object store paths are immutable, rewritten: {clash}")
        merged = dict(self._objects)
        merged.update(objects)
        added = tuple(p for p in objects if p not in self._objects)
        return self._derived(merged, self._deleted, added)

    def _derived(self, objects: dict[str, Any], deleted: frozenset[str],
                 added: tuple[str, ...]) -> "ObjectStore":
        """A store derived from this one that adopts ``objects`` as it is: the stores are
        immutable, so a derived store shares its base's dict when it adds nothing, and a new
        dict is copied once, not again by ``__init__`` (a store per state of a search). It
        keeps this store's clock; what it adds after tick 0 is stamped with the tick."""
        new = ObjectStore.__new__(ObjectStore)
        new._objects, new._hash, new._deleted = objects, None, deleted
        new._base, new._added, new.digests = weakref.ref(self), added, None
        new._now, new._mtimes, new.clock_digests = self._now, self._mtimes, None
        if self._now and added:
            mtimes = dict(self._mtimes)
            for path in added:
                mtimes[path] = self._now
            new._mtimes = mtimes
        return new

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash((frozenset(self._objects.items()), self._deleted)) \
                if not self._now else \
                hash((frozenset(self._objects.items()), self._deleted, self._now,
                      frozenset(self._mtimes.items())))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ObjectStore):
            return NotImplemented
        return self._objects == other._objects and self._deleted == other._deleted \
            and self._now == other._now and self._mtimes == other._mtimes

    def __repr__(self) -> str:
        return f"ObjectStore({sorted(self._objects)})"


def _restore(objects, deleted, now, mtimes) -> ObjectStore:
    """Unpickle a store whose clock has advanced (``ObjectStore.__reduce__``)."""
    return ObjectStore(objects, deleted, now=now, mtimes=mtimes)
