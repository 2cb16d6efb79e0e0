"""The object store: immutable objects by path, as a hashable, persistent mapping.

Writers only ever add objects under fresh names (Iceberg's file names carry UUIDs; ours carry
the writer and a counter), so ``put`` refuses to overwrite: an attempt to do so is a model bug.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping


class ObjectStore(Mapping[str, Any]):
    __slots__ = ("_objects", "_hash")

    def __init__(self, objects: Mapping[str, Any] | None = None):
        self._objects: dict[str, Any] = dict(objects or {})
        self._hash: int | None = None

    def __getitem__(self, path: str) -> Any:
        return self._objects[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._objects)

    def __len__(self) -> int:
        return len(self._objects)

    def put_all(self, objects: Mapping[str, Any]) -> "ObjectStore":
        clash = [p for p in objects if p in self._objects and self._objects[p] != objects[p]]
        if clash:
            raise AssertionError(f"object store paths are immutable, rewritten: {clash}")
        merged = dict(self._objects)
        merged.update(objects)
        return ObjectStore(merged)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._objects.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ObjectStore):
            return NotImplemented
        return self._objects == other._objects

    def __repr__(self) -> str:
        return f"ObjectStore({sorted(self._objects)})"
