"""Pipelines: a user's own table and the jobs that write it (each on its own engine profile),
read from a YAML pipeline file and checked by exploring every interleaving and choice within
bounds (``icecheck check PIPELINE.yaml``). See docs/pipelines.md.

``load`` turns the file into one ``engines.config.ExploreConfig`` (a mixed-engine one when the
jobs run on different profiles): the pipeline adds no model of its own.
"""

from .load import Pipeline, load_pipeline

__all__ = ["Pipeline", "load_pipeline"]
