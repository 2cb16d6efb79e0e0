"""A Python for Spark's workers that has icecheck's dependencies but not icecheck: the workers
of a real cluster (docs/sweep.md), where only the shipped wheel brings icecheck."""

import os
import subprocess


def deps_only_python(where) -> str:
    """A Python with icecheck's installed dependencies but not icecheck: a venv without pip
    whose one .pth line puts the driver venv's site-packages on sys.path as a plain folder, so
    the .pth files there (icecheck's editable finder among them) are not run. The same pinned
    versions as the driver, in a second, not in a pip install."""
    import sysconfig
    import venv
    venv.EnvBuilder(with_pip=False, symlinks=True).create(str(where))
    python = os.path.join(str(where), "bin", "python")
    site = subprocess.run([python, "-c", "import sysconfig; "
                           "print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(site, "deps.pth"), "w") as fh:
        fh.write(sysconfig.get_paths()["purelib"] + "\n")
    return python
