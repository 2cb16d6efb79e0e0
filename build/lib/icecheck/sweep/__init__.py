"""The anomaly-matrix sweep (``icecheck sweep``): the configuration space as data
(``space.yaml``), the per-cell exploration run as Spark tasks, and the reports.

See docs/sweep.md.
"""
