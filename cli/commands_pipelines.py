"""``icecheck init``: write a commented starter pipeline (``icecheck check`` runs it)."""

from __future__ import annotations

import errno
import os
import shlex

import click

from icecheck.cli.base import fail_input, main, out
from icecheck.scenarios.errors import InputError

_NEVER = "icecheck init never overwrites a file or follows a link"


def _create(path: str, text: str) -> None:
    """Write ``text`` to a new file ``path``, atomically, never replacing what is there.

    The text goes to a fsynced temporary file beside ``path``, which is then hard-linked to
    ``path``: ``link`` fails when ``path`` exists in any form (a file, a folder, a symbolic
    link, dangling or not) and never follows it, so nothing is overwritten even if ``path``
    appears after the check in ``init``, and a reader sees the whole file or none. Where the
    file system has no hard links, ``O_EXCL | O_NOFOLLOW`` keeps the same promise (not
    atomically: a run killed mid-write leaves part of the starter)."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
    except FileExistsError:          # a file, or a dangling link, where a folder should be
        raise NotADirectoryError(errno.ENOTDIR, f"{folder!r} is not a folder") from None
    from icecheck.traces.format import write_temp
    tmp = write_temp(path, text)
    try:
        try:
            os.link(tmp, path)
            return
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV,
                               errno.EMLINK):
                raise
        new = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
        with os.fdopen(new, "w", encoding="utf-8") as f:
            f.write(text)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


@main.command()
@click.argument("path", required=False, default="pipeline.yaml")
def init(path: str) -> None:
    """Write a commented starter pipeline to PATH (default pipeline.yaml); never overwrites."""
    from icecheck.pipelines.load import STARTER
    if not path or path.endswith(("/", os.sep)):
        fail_input(InputError(f"{path!r} names no file; name the pipeline file to write",
                              "PATH"))
    if os.path.islink(path):
        fail_input(InputError(f"is a symbolic link; {_NEVER}", path))
    if os.path.lexists(path):
        fail_input(InputError(f"already exists; {_NEVER}", path))
    with open(STARTER, encoding="utf-8") as f:
        text = f.read()
    try:
        _create(path, text)
    except FileExistsError:
        fail_input(InputError(f"already exists; {_NEVER}", path))
    except OSError as e:
        fail_input(InputError(f"cannot write: {e.strerror or e}", path))
    # the path as given, not rich markup ('a[/]b.yaml' is a closing tag to rich), and quoted
    # for the shell in the command to run next
    out.print(f"wrote {path}; check it with: icecheck check {shlex.quote(path)}", markup=False)
