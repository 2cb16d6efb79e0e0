"""Input errors: one clear message naming the file and the line, and exit code 2."""

from __future__ import annotations


class InputError(Exception):
    """A malformed scenario, trace or configuration."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        message = " ".join(str(message).split())      # always one line, whatever its source
        self.path, self.line, self.detail = path, line, message
        where = path or "<input>"
        if line:                      # lines count from 1; 0 is a value built in memory, no line
            where += f":{line}"
        super().__init__(f"{where}: {message}")

    def __reduce__(self):
        """Pickled as what it was made of (a split search's part process sends its errors to
        the parent, engines/split.py): the default would make it again from its formatted
        text, naming ``<input>`` and the place twice."""
        return (type(self), (self.detail, self.path, self.line))


def check_number(value, what: str, path: str | None, *, low: float, high: float,
                 integer: bool = True, allow_none: bool = False, line: int | None = None):
    """``value`` if it is a number in ``[low, high]`` (an ``int``, not a bool or ``2.0``, when
    ``integer``; finite, for a float), else an ``InputError`` naming ``what``. Input files and
    options share it so that ``true``, ``nan``, ``-1`` or ``1e12`` mean the same thing (an
    error) everywhere."""
    import math

    if value is None and allow_none:
        return None
    if integer:
        ok = isinstance(value, int) and not isinstance(value, bool)
        kind = "an integer"
    else:
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
              and math.isfinite(value))
        kind = "a finite number"
    if not ok:
        raise InputError(f"{what} must be {kind}, not {value!r}", path, line)
    if not low <= value <= high:
        raise InputError(f"{what} must be between {low:g} and {high:g}, not {value!r}", path, line)
    return value
