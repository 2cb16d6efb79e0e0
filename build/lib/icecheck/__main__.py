from icecheck.cli.main import entry

entry()
