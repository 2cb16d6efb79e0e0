"""Set-up for the real-Iceberg (Java) conformance target: find or build the jars it needs.

Idempotent; run it as ``python -m icecheck.conformance.java_setup`` or call ``ensure_jars()``.

Sources (no Maven: everything comes from PyPI and Debian):

* ``snowpark-connect-deps-iceberg`` (PyPI) ships ``iceberg-spark-runtime-3.5_2.12-<v>.jar``
  (Iceberg core + API, shaded), which we drive directly through py4j;
* ``pyspark`` (PyPI) ships Hadoop, logging and the py4j gateway jars, and Jackson 2.15;
* Debian's ``libjarjar-java`` relocates pyspark's Jackson under
  ``org.apache.iceberg.shaded.com.fasterxml.jackson``: the runtime jar references Iceberg's
  relocated Jackson but does not contain it (NoClassDefFoundError at the first table operation);
* Debian's ``libxerial-sqlite-jdbc-java`` provides the SQLite JDBC driver for ``JdbcCatalog``
  (optional: only the ``jdbc`` catalog needs it).

The relocated Jackson jar is cached under ``$ICECHECK_CACHE/jars`` (default
``<repo>/.cache/icecheck/jars``; never commit it). Its name carries a hash of the input jars, so
a different pyspark rebuilds it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

PIP_HINT = "run: pip install -e '.[conformance]'"
JARJAR_JAR = Path("/usr/share/java/jarjar.jar")
SQLITE_JDBC_JAR = Path("/usr/share/java/sqlite-jdbc.jar")
JACKSON_MODULES = ("jackson-core", "jackson-databind", "jackson-annotations",
                   "jackson-datatype-jsr310")
RELOCATION_RULE = ("rule com.fasterxml.jackson.** "
                   "org.apache.iceberg.shaded.com.fasterxml.jackson.@1\n")
RUNTIME_GLOB = "iceberg-spark-runtime-3.5_2.12-*.jar"


class JavaSetupError(RuntimeError):
    """The Java target cannot be set up; the message says what to do, on one line."""


def log(msg: str) -> None:
    print(f"[icecheck java-setup] {msg}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- locations

def repo_root() -> Path | None:
    """The source checkout this package runs from, if any (a folder with pyproject.toml or .git)."""
    here = Path(__file__).resolve().parent.parent
    if (here / "pyproject.toml").exists() or (here / ".git").exists():
        return here
    return None


def cache_dir() -> Path:
    """Where built jars live: ``$ICECHECK_CACHE/jars``, else ``<repo>/.cache/icecheck/jars``."""
    env = os.environ.get("ICECHECK_CACHE")
    if env:
        return Path(env).expanduser() / "jars"
    root = repo_root()
    if root is not None:
        return root / ".cache" / "icecheck" / "jars"
    return Path.home() / ".cache" / "icecheck" / "jars"


def java_executable() -> str:
    """The ``java`` to run: ``$JAVA_HOME/bin/java`` if set, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise JavaSetupError("java not found: install a JDK/JRE 11+ (e.g. apt-get install -y "
                             "openjdk-17-jre-headless) or set JAVA_HOME")
    return found


def check_java() -> str:
    java = java_executable()
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaSetupError(f"java at {java} does not run: {exc}") from None
    if out.returncode != 0:
        raise JavaSetupError(f"java at {java} does not run: {out.stderr.strip()[:200]}")
    first = (out.stderr or out.stdout).strip().splitlines()
    return first[0] if first else java


def _package_dir(module: str, dist: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise JavaSetupError(f"Python package {dist} is not installed; {PIP_HINT}")
    return Path(list(spec.submodule_search_locations)[0])


def pyspark_jars_dir() -> Path:
    jars = _package_dir("pyspark", "pyspark") / "jars"
    if not jars.is_dir():
        raise JavaSetupError(f"pyspark has no jars folder at {jars}; {PIP_HINT}")
    return jars


def iceberg_runtime_jar() -> Path:
    pkg = _package_dir("snowpark_connect_deps_iceberg", "snowpark-connect-deps-iceberg")
    found = sorted(pkg.rglob(RUNTIME_GLOB))
    if not found:
        raise JavaSetupError(f"no {RUNTIME_GLOB} inside {pkg}; {PIP_HINT}")
    return found[-1]


def iceberg_version() -> str:
    name = iceberg_runtime_jar().name
    return name.rsplit("-", 1)[-1].removesuffix(".jar")


def py4j_jar() -> Path | None:
    """py4j's own gateway jar (the Python py4j package ships it under <prefix>/share/py4j)."""
    try:
        from py4j.java_gateway import find_jar_path
    except ImportError:
        raise JavaSetupError(f"Python package py4j is not installed; {PIP_HINT}") from None
    path = find_jar_path()
    return Path(path) if path else None


def jackson_jars(jars_dir: Path) -> list[Path]:
    out = []
    for module in JACKSON_MODULES:
        found = sorted(jars_dir.glob(f"{module}-2.*.jar"))
        if not found:
            raise JavaSetupError(f"{module}-2.*.jar not found in {jars_dir}; {PIP_HINT}")
        out.append(found[-1])
    return out


# ----------------------------------------------------------------------------- Debian packages

def _apt_install(package: str) -> None:
    if shutil.which("apt-get") is None:
        raise JavaSetupError(f"cannot install Debian package {package}: no apt-get here")
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        raise JavaSetupError(f"cannot install Debian package {package}: not root "
                             f"(run: sudo apt-get install -y {package})")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "--no-install-recommends", package]
    log(f"installing Debian package {package} ...")
    t0 = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        log("apt-get install failed; running apt-get update first ...")
        subprocess.run(["apt-get", "update"], capture_output=True, text=True, env=env)
        res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        tail = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["?"]
        raise JavaSetupError(f"apt-get install {package} failed: {tail[0]}")
    log(f"installed {package} in {time.monotonic() - t0:.1f} s")


def ensure_jarjar() -> Path:
    if not JARJAR_JAR.exists():
        try:
            _apt_install("libjarjar-java")
        except JavaSetupError as exc:
            raise JavaSetupError(f"jarjar ({JARJAR_JAR}) is missing and could not be installed: "
                                 f"{exc}") from None
        if not JARJAR_JAR.exists():
            raise JavaSetupError(f"libjarjar-java installed but {JARJAR_JAR} is still missing")
    return JARJAR_JAR


def ensure_sqlite_jdbc(required: bool = False) -> Path | None:
    """Debian's SQLite JDBC driver (for JdbcCatalog). Returns None when unavailable and optional."""
    if SQLITE_JDBC_JAR.exists():
        return SQLITE_JDBC_JAR
    try:
        _apt_install("libxerial-sqlite-jdbc-java")
    except JavaSetupError as exc:
        if required:
            raise
        log(f"warning: no SQLite JDBC driver, the jdbc catalog is unavailable ({exc})")
        return None
    return SQLITE_JDBC_JAR if SQLITE_JDBC_JAR.exists() else None


# ----------------------------------------------------------------------------- relocated Jackson

def _inputs_hash(paths: list[Path]) -> str:
    h = hashlib.sha256(RELOCATION_RULE.encode())
    for p in paths:
        st = p.stat()
        h.update(f"{p.name}:{st.st_size}\n".encode())
    return h.hexdigest()[:12]


def _merge_jars(inputs: list[Path], out: Path) -> int:
    """Merge jars into one, dropping multi-release and module-info entries and duplicates."""
    seen: set[str] = set()
    count = 0
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for jar in inputs:
            with zipfile.ZipFile(jar) as zin:
                for info in zin.infolist():
                    name = info.filename
                    base = name.rsplit("/", 1)[-1]
                    if (name.startswith("META-INF/versions/") or base == "module-info.class"
                            or name.upper().endswith((".SF", ".RSA", ".DSA"))
                            or name in seen):
                        continue
                    seen.add(name)
                    zout.writestr(info, b"" if info.is_dir() else zin.read(name))
                    count += 1
    return count


def relocated_jackson_jar(jars_dir: Path | None = None) -> Path:
    """Build (once) pyspark's Jackson relocated under Iceberg's shaded prefix; return its path."""
    jars_dir = jars_dir or pyspark_jars_dir()
    inputs = jackson_jars(jars_dir)
    out_dir = cache_dir()
    target = out_dir / f"iceberg-shaded-jackson-{_inputs_hash(inputs)}.jar"
    if target.exists() and target.stat().st_size > 0:
        return target
    jarjar = ensure_jarjar()
    java = java_executable()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise JavaSetupError(f"cannot create cache dir {out_dir}: {exc} (set ICECHECK_CACHE)") \
            from None
    log(f"relocating {', '.join(p.name for p in inputs)} -> {target.name} ...")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="icecheck-jarjar-", dir=out_dir) as tmp:
        merged = Path(tmp) / "jackson-merged.jar"
        rules = Path(tmp) / "rules.txt"
        relocated = Path(tmp) / "relocated.jar"
        _merge_jars(inputs, merged)
        rules.write_text(RELOCATION_RULE)
        res = subprocess.run([java, "-jar", str(jarjar), "process", str(rules), str(merged),
                              str(relocated)], capture_output=True, text=True)
        if res.returncode != 0 or not relocated.exists():
            tail = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["?"]
            raise JavaSetupError(f"jarjar failed to relocate Jackson: {tail[0]}")
        with zipfile.ZipFile(relocated) as z:
            probe = "org/apache/iceberg/shaded/com/fasterxml/jackson/databind/ObjectMapper.class"
            if probe not in z.namelist():
                raise JavaSetupError(f"jarjar output lacks {probe}")
        os.replace(relocated, target)  # atomic: concurrent set-ups just race to the same file
    log(f"built {target} in {time.monotonic() - t0:.1f} s")
    return target


# ----------------------------------------------------------------------------- entry points

def ensure_jars(jdbc: bool = True) -> list[Path]:
    """Check Java and the packages, build what is missing, and return the JVM classpath.

    Order: the Iceberg runtime jar, the relocated Jackson jar, the SQLite JDBC driver (when
    ``jdbc`` and it can be had), then pyspark's jars except its py4j jar (``launch_gateway``
    puts the py4j jar matching the Python py4j package first itself).
    Raises ``JavaSetupError`` with a one-line reason when something cannot be had.
    """
    check_java()
    runtime = iceberg_runtime_jar()
    jars_dir = pyspark_jars_dir()
    jackson = relocated_jackson_jar(jars_dir)
    classpath = [runtime, jackson]
    if jdbc:
        sqlite = ensure_sqlite_jdbc(required=False)
        if sqlite is not None:
            classpath.append(sqlite)
    if py4j_jar() is None:
        raise JavaSetupError(f"py4j's gateway jar (share/py4j/py4j*.jar) not found; {PIP_HINT}")
    classpath.extend(sorted(p for p in jars_dir.glob("*.jar")
                            if not p.name.startswith("py4j-")))
    return classpath


def main(argv: list[str] | None = None) -> int:
    t0 = time.monotonic()
    try:
        log(f"java: {check_java()}")
        classpath = ensure_jars()
    except JavaSetupError as exc:
        print(f"icecheck java-setup: error: {exc}", file=sys.stderr)
        return 1
    log(f"Iceberg {iceberg_version()} runtime: {classpath[0]}")
    log(f"relocated Jackson: {classpath[1]}")
    log(f"sqlite jdbc: {SQLITE_JDBC_JAR if SQLITE_JDBC_JAR in classpath else 'unavailable'}")
    log(f"classpath: {len(classpath)} jars; ready in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
