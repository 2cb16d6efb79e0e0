"""The model: one pure, deterministic transition system of Iceberg's optimistic concurrency.

Start with ``system.py`` (states, ``Model.actions``, ``Model.step``); ``producer.py`` and
``validation.py`` hold the Java library's commit and validation rules; ``reads.py`` computes
the rows of a snapshot.
"""
