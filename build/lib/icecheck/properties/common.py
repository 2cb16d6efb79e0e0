"""Small helpers shared by the property modules."""

from __future__ import annotations

from typing import Any


def jsonable(value: Any) -> Any:
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [jsonable(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def rows_text(rows) -> str:
    if not rows:
        return "no row"
    return ", ".join(repr(tuple(r)) for r in rows)
