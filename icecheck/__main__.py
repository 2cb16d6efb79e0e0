from icecheck.cli.main import main

main()
