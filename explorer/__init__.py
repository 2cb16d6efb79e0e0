"""The interactive interleaving explorer: a ``Session`` (notebooks) and a web page over it
(``icecheck explore --interactive``). See docs/explorer.md."""

from .session import FindResult, PropertyStatus, RowMark, Session, SessionError

__all__ = ["Session", "SessionError", "PropertyStatus", "FindResult", "RowMark"]
