"""The explorer's one error, shared by the session and its path-search goals (explorer/goals.py) so
that neither imports the other."""


class SessionError(ValueError):
    """A path or an action the session cannot take (the web page answers it with HTTP 400)."""
