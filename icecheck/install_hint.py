"""How to install an optional extra, said the way that works where icecheck is installed: in a
checkout (an editable install of the repository), ``pip install -e '.[EXTRA]'`` from its root;
from a wheel, ``pip install 'icecheck[EXTRA]'`` (there is no ``.`` to install from)."""

from __future__ import annotations

import os

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def in_checkout() -> bool:
    """Is this package an editable install of a repository (its root holds pyproject.toml
    and bin/bootstrap.sh)?"""
    return (os.path.isfile(os.path.join(_ROOT, "pyproject.toml"))
            and os.path.isfile(os.path.join(_ROOT, "bin", "bootstrap.sh")))


def install_hint(extra: str) -> str:
    if in_checkout():
        return f"pip install -e '{_ROOT}[{extra}]'"
    return f"pip install 'icecheck[{extra}]'"
