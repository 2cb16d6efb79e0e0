"""The compiled build: the modules an exhaustive search runs (the model, the properties, the
search itself) compiled by Cython from the same Python source (issue 13), used only while they
match that source.

Why: a search spends its time in the model's steps, the fingerprints, the search loop and the
evaluation of histories, and Python's cost per call is most of it. Cython compiles those
``.py`` files as they are (``annotation_typing=False``: the annotations stay hints); the
``.pxd`` files beside three of them (``engines/symmetry.pxd``, ``engines/explicit.pxd``,
``models/system.pxd``) only declare the attributes and argument types of the hot classes
(``Fingerprinter``, ``Expander``, ``Model``), so that attribute reads and calls among them are C
struct reads and C calls. No rule lives anywhere but in the ``.py`` files: the pure-Python path
runs them directly, and tests/test_compiled.py runs the model's and the search's tests on
both.

How it is kept honest:

* the build (``icecheck compile``, ``build``) goes to its own folder (``build/compiled/<python
  tag>/``, or ``$ICECHECK_COMPILED_DIR``), never beside the sources, where Python would prefer
  a stale extension module to an edited ``.py``;
* its ``manifest.json`` records the SHA-256 of every source it compiled (``.py`` and ``.pxd``);
  ``activate`` refuses a build whose sources changed since, naming the file, and the whole
  build or none of it is used (compiled classes of one module are the declared types of
  another's);
* it is used only when asked: ``ICECHECK_COMPILED=1`` in the environment (``icecheck/__init__``
  calls ``activate_from_env`` before any other module of the package is imported), so
  profilers and debuggers see the Python code by default;
* a build is written to a temporary folder and moved into place whole, manifest last.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

#: The environment variable that turns the compiled build on (``1``), and the one that moves it.
ENV = "ICECHECK_COMPILED"
DIR_ENV = "ICECHECK_COMPILED_DIR"

#: The modules compiled: the model and the properties (every step and every evaluation runs
#: them), the search's own engine modules and the judging of a state. Not ``models/profiles.py``,
#: which reads the profile files beside its source through ``__file__`` (a compiled module's
#: is in the build) once per process. ``properties/expectations.py``, whose table every
#: evaluation consults, finds its file through its package's search path (the source folder in
#: the build too), so it is compiled: mor-serializable-3w2op-delete 6.785 G -> 6.739 G
#: instructions on the compiled build (``benchmarks.instructions``).
#: Measured with ``bin/benchmark --sections compiled`` (reports/benchmarks.md).
_MODELS = ("", ".catalog", ".cherrypick", ".commands", ".commands_spec", ".expire", ".files",
           ".filters", ".metadata", ".operations", ".producer", ".reads", ".refs",
           ".rewrite_manifests", ".store", ".system", ".table", ".transaction", ".transforms",
           ".validation", ".values")
_PROPERTIES = ("", ".analysis", ".common", ".consistent", ".dangling", ".duplicates",
               ".expectations", ".history", ".integrity", ".isolation", ".lost_write", ".oracle",
               ".reachability", ".readable", ".undelete", ".violation")
HOT_MODULES = (tuple("icecheck.models" + m for m in _MODELS)
               + tuple("icecheck.properties" + m for m in _PROPERTIES)
               + ("icecheck.engines.config", "icecheck.engines.symmetry", "icecheck.engines.por",
                  "icecheck.engines.explicit", "icecheck.traces.canonical",
                  "icecheck.traces.execute"))

#: Cython's directives: the same semantics as Python (annotations are not types, functions keep
#: their Python introspection), language level 3.
DIRECTIVES = {"language_level": 3, "annotation_typing": False, "binding": True}

MANIFEST = "manifest.json"
_ROOT = Path(__file__).resolve().parent.parent      # the repository (an editable install)
_PACKAGES = ("icecheck.models", "icecheck.properties", "icecheck.engines", "icecheck.traces")


class CompiledError(Exception):
    """The compiled build cannot be made or used; the message says why and what to do."""


def _failure(log: str) -> str:
    """What a failed build's log says went wrong: Cython's own report of the first file it
    could not compile (its source excerpt and ``file:line:col: message`` lines), not the
    traceback of the worker pool that ends the log; the log's last lines when it has none."""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Error compiling Cython file"):
            return "\n".join(lines[i:i + 25])
    return "\n".join(lines[-25:])


def python_tag() -> str:
    """What an extension module is built for: the interpreter and the platform."""
    return f"{sys.implementation.cache_tag}-{sysconfig.get_platform()}"


def build_dir(base: str | os.PathLike | None = None) -> Path:
    """The build's folder for this interpreter: ``base`` (default ``$ICECHECK_COMPILED_DIR``,
    else ``build/compiled`` in the repository) / the python tag."""
    base = base or os.environ.get(DIR_ENV) or _ROOT / "build" / "compiled"
    return Path(base) / python_tag()


def _package_dir(pkg: str) -> Path:
    """The folder of package ``pkg``'s sources, wherever it is installed (the repository's
    top-level folder in an editable install, ``icecheck/<name>`` in a wheel)."""
    spec = importlib.util.find_spec(pkg)
    if spec is None or not spec.submodule_search_locations:
        raise CompiledError(f"{pkg}: no source folder found")
    return Path(list(spec.submodule_search_locations)[0])


def source_files(name: str) -> list[Path]:
    """The sources of module ``name``: its ``.py`` file and its ``.pxd`` when there is one."""
    pkg = next((p for p in _PACKAGES if name == p or name.startswith(p + ".")), None)
    if pkg is None:
        raise CompiledError(f"{name}: not a module of icecheck's {', '.join(_PACKAGES)}")
    if name == pkg:                                     # a package: its __init__
        py = _package_dir(pkg) / "__init__.py"
    else:
        py = _package_dir(pkg).joinpath(*name[len(pkg) + 1:].split(".")).with_suffix(".py")
    if not py.is_file():
        raise CompiledError(f"{name}: no source at {py}")
    pxd = py.with_suffix(".pxd")
    return [py] + ([pxd] if pxd.is_file() else [])


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _rel(path: Path) -> str:
    """How the manifest and the messages name a source: from the repository's root when it
    is in it (an editable install), else in full."""
    try:
        return path.relative_to(_ROOT).as_posix()
    except ValueError:
        return path.as_posix()


# -- building ---------------------------------------------------------------------------------
def cython_version() -> str | None:
    try:
        import Cython
    except ImportError:
        return None
    return Cython.__version__


_BUILD_SCRIPT = r"""
import json, sys
from Cython.Build import cythonize
from setuptools import Distribution, Extension
spec = json.loads(sys.argv[1])
exts = [Extension(name, [path]) for name, path in spec["modules"]]
exts = cythonize(exts, compiler_directives=spec["directives"], nthreads=spec["jobs"],
                 include_path=[spec["src"]], quiet=True)
dist = Distribution({"ext_modules": exts})
cmd = dist.get_command_obj("build_ext")
cmd.build_lib, cmd.build_temp, cmd.parallel = spec["lib"], spec["tmp"], spec["jobs"]
dist.run_command("build_ext")
"""


def _watch(proc, src: Path, lib: Path, total: int, start: float, log,
           every: float = 5.0) -> None:
    """Wait for the build process, saying how far it got every ``every`` seconds: the modules
    Cython has translated (their .c files beside the sources), then those the C compiler has
    built (their extension modules), with an estimate of the time left from the rate so far
    (a build takes minutes on two cores, and used to say nothing until it ended)."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    said = ""
    while True:
        try:
            proc.wait(timeout=every)
            return
        except subprocess.TimeoutExpired:
            pass
        translated = sum(1 for _ in src.rglob("*.c"))
        built = sum(1 for _ in lib.rglob("*" + suffix)) if lib.exists() else 0
        elapsed = time.monotonic() - start
        if built:
            left = elapsed / built * (total - built)
            line = (f"  compiled {built}/{total} modules in {elapsed:.0f}s, about "
                    f"{left:.0f}s left")
        else:
            line = f"  translated {translated}/{total} modules to C in {elapsed:.0f}s"
        if line != said:
            log(line)
            said = line


def build(base: str | os.PathLike | None = None, jobs: int | None = None,
          log=lambda msg: None) -> dict:
    """Compile ``HOT_MODULES`` into ``build_dir(base)``, replacing the build there; returns the
    manifest. Runs Cython and the C compiler in a child process (its output goes to
    ``build.log`` in the temporary folder, and the end of it into the error when it fails)."""
    version = cython_version()
    if version is None:
        from icecheck.install_hint import install_hint
        raise CompiledError("Cython is not installed in this environment; `bin/icecheck compile` "
                            f"installs it (the 'compiled' extra: {install_hint('compiled')})")
    dest = build_dir(base)
    dest.parent.mkdir(parents=True, exist_ok=True)
    jobs = jobs or os.cpu_count() or 1
    start = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix=".building-", dir=dest.parent))
    try:
        src, lib = work / "src", work / "lib"
        modules, sources = [], {}
        for name in HOT_MODULES:
            files = source_files(name)
            parts = name.split(".")
            if files[0].name == "__init__.py":          # a package compiles its __init__
                parts.append("__init__")
            target = src.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            sources[name] = {}
            for f in files:
                # hashed as copied: the manifest names the very bytes compiled
                data = f.read_bytes()
                target.with_suffix(f.suffix).write_bytes(data)
                sources[name][_rel(f)] = hashlib.sha256(data).hexdigest()
            modules.append((name, str(target.with_suffix(".py"))))
        # the package folders, so that Cython names each module by its full dotted name
        for d in [p for p in src.rglob("*") if p.is_dir()]:
            (d / "__init__.py").touch(exist_ok=True)
        log(f"compiling {len(modules)} modules with Cython {version} ({jobs} jobs) ...")
        spec = {"modules": modules, "directives": DIRECTIVES, "jobs": jobs, "src": str(src),
                "lib": str(lib), "tmp": str(work / "tmp")}
        with open(work / "build.log", "w") as out:
            proc = subprocess.Popen([sys.executable, "-c", _BUILD_SCRIPT, json.dumps(spec)],
                                    cwd=work, stdout=out, stderr=subprocess.STDOUT)
            try:
                _watch(proc, src, lib, len(modules), start, log)
            except BaseException:
                proc.kill()
                proc.wait()
                raise
        if proc.returncode != 0:
            raise CompiledError("the compilation failed:\n" + _failure(
                (work / "build.log").read_text(errors="replace")))
        built = work / "built"
        files = {}
        for name in HOT_MODULES:
            # build_ext names a package's module after the package (``properties.*.so``)
            *folder, last = name.split(".")
            found = sorted(lib.joinpath(*folder).glob(
                last + importlib.machinery.EXTENSION_SUFFIXES[0]))
            if not found:
                raise CompiledError(f"{name}: the compilation wrote no extension module")
            out_path = built / found[0].relative_to(lib)
            out_path.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(found[0], out_path)
            files[name] = out_path.relative_to(built).as_posix()
        manifest = {"python": python_tag(), "cython": version, "directives": DIRECTIVES,
                    "built": time.strftime("%Y-%m-%d %H:%M:%S"),
                    "seconds": round(time.monotonic() - start, 1),
                    "modules": {name: {"file": files[name], "sources": sources[name]}
                                for name in HOT_MODULES}}
        (built / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        # into place whole: the old build out of the way first, then the new one
        old = dest.with_name(dest.name + ".old")
        if old.exists():
            shutil.rmtree(old)
        if dest.exists():
            dest.rename(old)
        built.rename(dest)
        shutil.rmtree(old, ignore_errors=True)
        return manifest
    finally:
        shutil.rmtree(work, ignore_errors=True)


# -- using ------------------------------------------------------------------------------------
def check(base: str | os.PathLike | None = None) -> dict:
    """The manifest of the build in ``build_dir(base)`` when every module it compiled is there
    and every source still has the content it was compiled from; else ``CompiledError``."""
    dest = build_dir(base)
    try:
        manifest = json.loads((dest / MANIFEST).read_text())
    except FileNotFoundError:
        raise CompiledError(f"no compiled build in {dest}; run `bin/icecheck compile`") from None
    except (OSError, ValueError) as e:
        raise CompiledError(f"{dest / MANIFEST}: unreadable ({e}); run `bin/icecheck compile`"
                            ) from None
    modules = manifest.get("modules") or {}
    if set(modules) != set(HOT_MODULES):
        raise CompiledError(f"{dest / MANIFEST}: built for other modules than this source's "
                            f"HOT_MODULES; run `bin/icecheck compile`")
    for name in HOT_MODULES:
        want = modules[name]["sources"]
        have = {_rel(f): _sha(f) for f in source_files(name)}
        for rel in sorted(set(want) | set(have)):
            if want.get(rel) != have.get(rel):
                what = "is new" if rel not in want else ("is gone" if rel not in have
                                                         else "changed")
                raise CompiledError(f"{rel} {what} since the compiled build of "
                                    f"{manifest.get('built')}; run `bin/icecheck compile` again")
        if not (dest / modules[name]["file"]).is_file():
            raise CompiledError(f"{dest / modules[name]['file']}: missing; run "
                                f"`bin/icecheck compile`")
    return manifest


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the compiled modules of one build (and nothing else)."""

    def __init__(self, dest: Path, manifest: dict):
        self.files = {name: dest / m["file"] for name, m in manifest["modules"].items()}
        self.manifest = manifest
        # a compiled package keeps its submodules' folder (its own source folder); found now,
        # before this finder answers (finding it later would ask this finder again)
        self.folders = {name: [str(_package_dir(name))] for name in self.files
                        if name in _PACKAGES}

    def find_spec(self, fullname, path=None, target=None):
        so = self.files.get(fullname)
        if so is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, so, submodule_search_locations=self.folders.get(fullname))


def activate(base: str | os.PathLike | None = None) -> dict:
    """Use the compiled build of ``build_dir(base)`` for ``HOT_MODULES`` from now on (the
    manifest), after ``check``. Refused when one of them is imported already: a process
    would then mix a compiled class and its Python twin."""
    for finder in sys.meta_path:
        if isinstance(finder, _Finder):
            return finder.manifest
    loaded = [n for n in HOT_MODULES if n in sys.modules]
    if loaded:
        raise CompiledError(f"{', '.join(loaded)} already imported from the Python source; "
                            f"set {ENV}=1 before the process starts")
    manifest = check(base)
    sys.meta_path.insert(0, _Finder(build_dir(base), manifest))
    return manifest


def active() -> bool:
    """Is this process running the compiled modules?"""
    mod = sys.modules.get("icecheck.engines.explicit")
    if mod is not None:
        return not (getattr(mod, "__file__", "") or "").endswith(".py")
    return any(isinstance(f, _Finder) for f in sys.meta_path)


def activate_from_env() -> None:
    """``activate`` when ``ICECHECK_COMPILED`` is ``1`` (nothing when it is unset, empty or
    ``0``); a build that cannot be used stops the process with one message and exit 2."""
    value = os.environ.get(ENV, "").strip()
    if value in ("", "0"):
        return
    if value != "1":
        print(f"icecheck: {ENV}={value!r}: expected 1 (use the compiled build) or 0",
              file=sys.stderr)
        raise SystemExit(2)
    try:
        activate()
    except CompiledError as e:
        print(f"icecheck: {ENV}=1: {e} (or unset {ENV})", file=sys.stderr)
        raise SystemExit(2) from None
