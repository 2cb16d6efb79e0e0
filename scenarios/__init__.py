"""Scenarios: a YAML description of a table, named files and an interleaving of commits.

``format.py`` parses a file into model objects (every error names the file and line);
``runner.py`` runs it on the model and compares the verdicts with its expectations.
"""
