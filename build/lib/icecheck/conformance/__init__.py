"""Conformance targets: run the model's scenarios against real Iceberg implementations.

``java_setup`` (jars), ``java_gateway`` (one py4j JVM per process) and ``java_driver``
(``JavaTable`` / ``JavaWriter`` over Iceberg's Java core) form the Java target; see
docs/conformance-java.md. Nothing here starts a JVM on import.
"""
