"""A job's ``write_options`` (Spark's write options, models/write_options.py), given for the
whole job or per command, each checked at its own line of the pipeline file.

A job-level option applies to every command of the job whose engine reads it there (Spark:
``snapshot-property.<key>`` on INSERT, OVERWRITE and OVERWRITE_PARTITIONS; ``isolation-level``
and ``validate-from-snapshot-id`` on the overwrites); a command's own value overrides the job's.
An option that no command of the job reads, or that a command names although its engine does
not read it there, is refused: the model would otherwise describe a safer job than the one
that runs.
"""

from __future__ import annotations

from typing import Any

from icecheck.models.profiles import get_profile
from icecheck.models.write_options import normalized, not_read_error, option_kind, read_by
from icecheck.scenarios.errors import InputError

KEY = "write_options"


def _line(node: Any, key: Any = None):
    from icecheck.scenarios.yamlload import line_of
    return line_of(node, key)


def job_options(job: dict, i: int, path: str) -> dict:
    """The job's own ``write_options`` (name -> value as written), each name and value
    checked at its line."""
    if KEY not in job:
        return {}
    node = job[KEY]
    if not isinstance(node, dict):
        raise InputError(f"jobs[{i - 1}].write_options must be a mapping such as "
                         f"{{isolation-level: serializable, validate-from-snapshot-id: read}}",
                         path, _line(job, KEY))
    for name, value in node.items():
        _, problem = normalized(str(name), value)
        if problem is not None:
            raise InputError(f"jobs[{i - 1}].write_options: {problem}", path,
                             _line(node, name))
    return dict(node)


def with_job_options(command: dict, options: dict, profile: str) -> dict:
    """``command`` with the job's options its engine reads on it (its own values first)."""
    if not options or not isinstance(command, dict):
        return command
    kind = str(command.get("sql", "")).upper()
    reads = read_by(get_profile(profile), kind)
    taken = {k: v for k, v in options.items() if option_kind(str(k)) in reads}
    if not taken:
        return command
    own = command.get(KEY)
    merged = {**taken, **(own if isinstance(own, dict) else {})}
    return {**command, KEY: merged}


def check_command(command: dict, profile: str, path: str, line) -> None:
    """A command's own options are ones its engine reads on it."""
    own = command.get(KEY) if isinstance(command, dict) else None
    if not isinstance(own, dict):
        return
    kind = str(command.get("sql", "")).upper()
    for name, value in own.items():
        problem = normalized(str(name), value)[1] or \
            not_read_error(get_profile(profile), kind, str(name))
        if problem is not None:
            raise InputError(problem, path, _line(own, name) or line)


def check_job_options_used(job: dict, i: int, options: dict, kinds: set, profile: str,
                           path: str) -> None:
    """Each job-level option is read by some command of the job (``kinds``: the SQL words of
    its commands)."""
    prof = get_profile(profile)
    node = job.get(KEY, {})
    for name in options:
        if not any(option_kind(str(name)) in read_by(prof, k) for k in kinds):
            takers = sorted(k for k, o in _reads(prof).items()
                            if option_kind(str(name)) in o)
            raise InputError(
                f"jobs[{i - 1}].write_options: no command of the job reads {name!r} on "
                f"{profile}" + (f" (it is read by {', '.join(takers)})" if takers else
                                " (its engine takes no write options)"),
                path, _line(node, name) or _line(job, KEY))


def _reads(profile) -> dict:
    from icecheck.models.write_options import READS
    return READS.get(profile.engine.split("-")[0], {})
