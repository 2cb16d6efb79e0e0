"""icecheck: can concurrent writers to this Iceberg table lose data?

The package maps the repository's top-level folders:

* ``icecheck.models``      (models/)      the transition system: Iceberg's metadata, operations,
  validations, catalogs, writers and engine profiles;
* ``icecheck.scenarios``   (scenarios/)   the YAML scenario format and its runner;
* ``icecheck.conformance`` (conformance/) drivers that replay scenarios on real Iceberg;
* ``icecheck.cli``         (cli/)         the ``icecheck`` command.
"""

__version__ = "0.1.0"
