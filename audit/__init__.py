"""``icecheck audit``: point icecheck at a real table and audit its history (issue 41).

The table is opened read-only through PyIceberg's catalog configuration (``source.py``); its
snapshots are walked in bounded memory, each manifest read when it enters or leaves a lineage
(``walk.py``, ``manifests.py``); the checks (``checks.py``: duplicate registrations, dangling
position deletes and deletion vectors, equality deletes a rewrite dropped, missing files;
``history.py``: stale parents, main moved back, sequence numbers, unreachable snapshots;
``orphans.py``: commits a catalog without compare-and-swap replaced) name snapshots, files
and, where the files can be read (``rows.py``), rows, each with how sure it is
(``findings.py``). ``report.py`` renders the terminal summary, JSON and Markdown;
``pipeline.py`` infers a draft pipeline file for ``icecheck check``. docs/audit.md.
"""

from __future__ import annotations

from .findings import Finding
from .run import AuditReport, audit
from .source import open_table

__all__ = ["Finding", "AuditReport", "audit", "open_table"]
