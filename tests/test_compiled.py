"""The compiled build (icecheck/compiled.py): it is used only when asked and only while it
matches the sources, and the model's and the search's tests pass on it as they do on the
Python source.

The build itself (about two minutes on 2 cores) is made once, into a temporary folder, when
Cython is installed (``bin/test`` installs it: the 'compiled' extra); those tests then run
again in a child process with ``ICECHECK_COMPILED=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from icecheck import compiled

ROOT = Path(__file__).resolve().parent.parent
#: The tests run again on the compiled build: the search's (the pinned state counts, verdicts
#: and shortest lengths, the step memo against the handlers, the evaluation memo against fresh
#: evaluations, symmetry, POR, coverage) and the model's and properties' (every built-in
#: scenario, the corpus traces' replay, the example pipelines' verdicts, transactions, expiry,
#: branches). The whole suite passes on it too (run it with ICECHECK_COMPILED=1).
COMPILED_TESTS = ["tests/test_state_counts.py", "tests/test_step_memo.py",
                  "tests/test_eval_memo.py", "tests/test_explicit.py", "tests/test_scenarios.py",
                  "tests/test_model_system.py", "tests/test_properties_catch.py",
                  "tests/test_properties_findings.py", "tests/test_traces.py",
                  "tests/test_transactions.py", "tests/test_expiry.py", "tests/test_branches.py",
                  "tests/test_pipelines.py"]


def _env(extra: dict) -> dict:
    """This environment without the compiled build's variables, then ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in (compiled.ENV, compiled.DIR_ENV)}
    env.update(extra)
    return env


def _run(code: str, env_extra: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(env_extra),
                          capture_output=True, text=True, timeout=300)


def _fake_build(base: Path, change: str | None = None) -> Path:
    """A manifest of this source's modules (sources' true hashes, or ``change``'s altered)
    and empty files in place of the extension modules."""
    dest = compiled.build_dir(base)
    modules = {}
    for name in compiled.HOT_MODULES:
        sources = {compiled._rel(f): compiled._sha(f) for f in compiled.source_files(name)}
        if change in sources:
            sources[change] = "0" * 64
        rel = name.replace(".", "/") + ".so"
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes(b"")
        modules[name] = {"file": rel, "sources": sources}
    (dest / compiled.MANIFEST).write_text(json.dumps({"built": "then", "modules": modules}))
    return dest


def test_this_process_runs_what_it_was_asked_to():
    """With ICECHECK_COMPILED=1 every hot module comes from the build, otherwise none does
    (this test also runs in the compiled child process below)."""
    import importlib
    want = os.environ.get(compiled.ENV) == "1"
    assert compiled.active() == want
    for name in compiled.HOT_MODULES:
        f = importlib.import_module(name).__file__
        assert f.endswith(".py") != want, (name, f)
    # and a search says which it ran
    from icecheck.engines.config import mix_config
    from icecheck.engines.explicit import Bounds, search
    res = search(mix_config("spark-3.5-mor-serializable", 2, 1, ("delete",), 1), traces=False,
                 bounds=Bounds(max_states=10))
    assert any(n.startswith("compiled build:") for n in res.notes) == want


def test_no_compiled_module_looks_for_files_beside_its_source():
    """A compiled module's ``__file__`` is in the build folder, so a module that finds data
    files beside its source through ``__file__`` (profiles) must stay out of HOT_MODULES;
    expectations, compiled, finds its table through its package's search path."""
    for name in compiled.HOT_MODULES:
        py = compiled.source_files(name)[0]
        assert "__file__" not in py.read_text(), py


def test_a_missing_build_is_refused_with_one_message(tmp_path):
    with pytest.raises(compiled.CompiledError, match="no compiled build in .*icecheck compile"):
        compiled.check(tmp_path)
    done = _run("import icecheck.engines.explicit",
                {compiled.ENV: "1", compiled.DIR_ENV: str(tmp_path)})
    assert done.returncode == 2
    assert done.stderr.startswith("icecheck: ICECHECK_COMPILED=1: no compiled build in ")
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_build_of_other_sources_is_refused_naming_the_file(tmp_path):
    _fake_build(tmp_path)
    assert set(compiled.check(tmp_path)["modules"]) == set(compiled.HOT_MODULES)
    _fake_build(tmp_path, change="engines/symmetry.pxd")
    with pytest.raises(compiled.CompiledError,
                       match=r"engines/symmetry.pxd changed since the compiled build of then"):
        compiled.check(tmp_path)
    done = _run("import icecheck", {compiled.ENV: "1", compiled.DIR_ENV: str(tmp_path)})
    assert done.returncode == 2 and "engines/symmetry.pxd changed" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_module_file_or_a_bad_manifest_is_refused(tmp_path):
    dest = _fake_build(tmp_path)
    (dest / "icecheck/engines/explicit.so").unlink()
    with pytest.raises(compiled.CompiledError, match="explicit.so: missing"):
        compiled.check(tmp_path)
    (dest / compiled.MANIFEST).write_text("{not json")
    with pytest.raises(compiled.CompiledError, match="manifest.json: unreadable"):
        compiled.check(tmp_path)


def test_only_1_or_0_turn_it_on_or_off():
    done = _run("import icecheck", {compiled.ENV: "yes"})
    assert done.returncode == 2
    assert done.stderr.strip() == "icecheck: ICECHECK_COMPILED='yes': expected 1 (use the " \
                                  "compiled build) or 0"
    assert _run("import icecheck.compiled as c, icecheck.engines.explicit; "
                "assert not c.active()", {compiled.ENV: "0"}).returncode == 0


def test_activating_after_the_modules_were_imported_is_refused():
    import icecheck.engines.explicit  # noqa: F401  (imported from the source in this process)
    if compiled.active():
        pytest.skip("this process already runs the compiled build")
    with pytest.raises(compiled.CompiledError, match="already imported from the Python source"):
        compiled.activate()


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    if compiled.cython_version() is None:
        pytest.skip("Cython is not installed (bin/test installs it: the 'compiled' extra)")
    base = tmp_path_factory.mktemp("compiled")
    manifest = compiled.build(base)
    return base, manifest


def test_the_build_compiles_every_hot_module_and_is_used(build):
    base, manifest = build
    assert set(manifest["modules"]) == set(compiled.HOT_MODULES)
    assert compiled.check(base) == manifest
    done = _run("import icecheck.compiled as c, icecheck.engines.explicit as e, "
                "icecheck.properties as p; print(c.active(), e.__file__, p.__file__)",
                {compiled.ENV: "1", compiled.DIR_ENV: str(base)})
    assert done.returncode == 0, done.stderr
    flag, explicit, properties = done.stdout.split()
    assert flag == "True"
    assert explicit.startswith(str(base)) and not explicit.endswith(".py")
    assert properties.startswith(str(base)) and not properties.endswith(".py")


def test_the_model_and_search_tests_pass_on_the_compiled_build(build):
    base, _ = build
    env = _env({compiled.ENV: "1", compiled.DIR_ENV: str(base)})
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         f"{__file__}::test_this_process_runs_what_it_was_asked_to", *COMPILED_TESTS],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
