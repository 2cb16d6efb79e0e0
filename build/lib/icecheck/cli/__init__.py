"""The ``icecheck`` command line (click + rich)."""
