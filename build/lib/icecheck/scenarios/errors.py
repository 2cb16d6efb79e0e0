"""Input errors: one clear message naming the file and the line, and exit code 2."""

from __future__ import annotations


class InputError(Exception):
    """A malformed scenario, trace or configuration."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        self.path, self.line, self.detail = path, line, message
        where = path or "<input>"
        if line is not None:
            where += f":{line}"
        super().__init__(f"{where}: {message}")
