"""``icecheck init``: write a commented starter pipeline (``icecheck check`` runs it)."""

from __future__ import annotations

import os

import click

from icecheck.cli.base import fail_input, main, out
from icecheck.scenarios.errors import InputError


@main.command()
@click.argument("path", required=False, default="pipeline.yaml")
def init(path: str) -> None:
    """Write a commented starter pipeline to PATH (default pipeline.yaml); never overwrites."""
    from icecheck.pipelines.load import STARTER
    from icecheck.traces.format import write_together
    if os.path.exists(path):
        fail_input(InputError("already exists; icecheck init never overwrites a file", path))
    with open(STARTER, encoding="utf-8") as f:
        text = f.read()
    try:
        write_together({path: text})
    except OSError as e:
        fail_input(InputError(f"cannot write: {e.strerror}", path))
    out.print(f"wrote {path}; check it with: icecheck check {path}")
