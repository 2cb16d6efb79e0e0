"""Bad input gets one clear message naming the file and line, exit code 2, no traceback."""

import subprocess
import sys
import textwrap

import pytest

GOOD_HEAD = """\
version: 1
table:
  schema: {id: int, category: string}
  partition_spec: [identity(category)]
files:
  d1: {rows: [[1, a]]}
"""

CASES = {
    "unknown-op": (GOOD_HEAD + "steps:\n  - commit: {op: upsert, add: [d1]}\n", 8,
                   "unknown operation 'upsert'"),
    "unknown-file": (GOOD_HEAD + "steps:\n  - commit: {op: append, add: [d9]}\n", 8,
                     "unknown file 'd9'"),
    "bad-filter": (GOOD_HEAD + "steps:\n  - commit: {op: append, add: [d1]}\n"
                   "  - begin: w1\n    op: overwrite\n    delete: [d1]\n"
                   "    validate: {filter: \"id = = 3\"}\n", 12, "invalid filter 'id = = 3' at column 6"),
    "unknown-profile": ("profile: spark-9\n" + GOOD_HEAD + "steps:\n  - commit: {op: append, add: [d1]}\n",
                        1, "unknown profile 'spark-9'"),
    "bad-yaml": (GOOD_HEAD + "steps:\n  - commit: {op: append, add: [d1]\n", 9, "not valid YAML"),
    "unknown-key": (GOOD_HEAD + "steps:\n  - commit: {op: append, add: [d1], validat: {}}\n", 8,
                    "unknown key 'validat'"),
    "row-shape": (GOOD_HEAD.replace("[[1, a]]", "[[1]]") + "steps:\n  - commit: {op: append, add: [d1]}\n",
                  6, "must be a list of 2 values"),
    "dv-in-v2": (GOOD_HEAD + "  x: {content: dv, deletes: [[d1, 0]]}\nsteps:\n  - commit: {op: append, add: [d1]}\n",
                 7, "deletion vectors need format_version 3"),
    "rewrite-adds-rows": (GOOD_HEAD + "  d2: {rows: [[1, a], [2, a]]}\nsteps:\n  - commit: {op: append, add: [d1]}\n"
                          "  - commit: {op: rewrite, delete: [d1], add: [d2]}\n", 10,
                          "Invalid REPLACE operation: 2 added records > 1 replaced records"),
    "compact-option-not-modelled": ("profile: spark-3.5-cow-serializable\n" + GOOD_HEAD
                                    + "steps:\n  - begin: w1\n    command:\n      sql: COMPACT\n"
                                    "      options:\n        remove-dangling-deletes: true\n",
                                    13, "unknown rewrite_data_files option 'remove-dangling-deletes'"),
    "compact-option-type": ("profile: spark-3.5-cow-serializable\n" + GOOD_HEAD
                            + "steps:\n  - begin: w1\n    command:\n      sql: COMPACT\n"
                            "      options: {use-starting-sequence-number: 'no'}\n",
                            12, "option use-starting-sequence-number must be true or false, got a string"),
    "compact-option-range": ("profile: spark-3.5-cow-serializable\n" + GOOD_HEAD
                             + "steps:\n  - begin: w1\n    command:\n      sql: COMPACT\n"
                             "      options: {rewrite-all: false, min-input-files: 0}\n",
                             12, "'min-input-files' is set to 0 but must be > 0"),
    "compact-option-int-not-bool": ("profile: spark-3.5-cow-serializable\n" + GOOD_HEAD
                                    + "steps:\n  - begin: w1\n    command:\n      sql: COMPACT\n"
                                    "      options: {delete-file-threshold: true}\n",
                                    12, "option delete-file-threshold must be an integer, got a boolean"),
    "commit-before-begin": (GOOD_HEAD + "steps:\n  - commit: w1\n", 8, "writer w1 has not begun"),
    "version-bool": (GOOD_HEAD.replace("version: 1", "version: true") +
                     "steps:\n  - commit: {op: append, add: [d1]}\n", 1,
                     "unsupported scenario format version True"),
    "version-float": (GOOD_HEAD.replace("version: 1", "version: 1.0") +
                      "steps:\n  - commit: {op: append, add: [d1]}\n", 1,
                      "unsupported scenario format version 1.0"),
    "record-count-bool": (GOOD_HEAD.replace("d1: {rows: [[1, a]]}",
                                            "d1: {record_count: true, partition: {category: a}}") +
                          "steps:\n  - commit: {op: append, add: [d1]}\n", 6,
                          "record_count must be a non-negative integer"),
    "property-against-profile": ("profile: spark-3.5-mor-serializable\n"
                                 + GOOD_HEAD.replace("  partition_spec: [identity(category)]\n",
                                                     "  partition_spec: [identity(category)]\n"
                                                     "  properties: {write.delete.mode: "
                                                     "copy-on-write}\n")
                                 + "steps:\n  - commit: {op: append, add: [d1]}\n"
                                 "  - begin: w1\n    command: {sql: DELETE, where: 'id = 1'}\n",
                                 12, "profile spark-3.5-mor-serializable runs DELETE with mode "
                                 "merge-on-read, but table.properties sets write.delete.mode: "
                                 "copy-on-write"),
    "unknown-column-filter": (GOOD_HEAD + "steps:\n  - begin: w1\n    op: overwrite\n    delete: [d1]\n"
                              "    validate: {filter: \"colour = 'a'\"}\n", 11, "colour"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_scenario_exits_2_with_file_and_line(tmp_path, name):
    text, line, fragment = CASES[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(textwrap.dedent(text))
    proc = subprocess.run([sys.executable, "-m", "icecheck", "scenario", "run", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{path}:{line}:" in proc.stderr.replace("\n", ""), proc.stderr
    assert fragment in proc.stderr.replace("\n", ""), proc.stderr


def test_missing_file_exits_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "icecheck", "scenario", "run",
                           str(tmp_path / "nope.yaml")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "cannot read" in proc.stderr


def test_failed_expectation_exits_1(tmp_path):
    path = tmp_path / "wrong.yaml"
    path.write_text(GOOD_HEAD + "steps:\n  - commit: {op: append, add: [d1]}\n"
                    "    expect: {outcome: validation_failed}\n")
    proc = subprocess.run([sys.executable, "-m", "icecheck", "scenario", "run", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert "expected validation_failed, got committed" in proc.stdout.replace("\n", "")


def test_trace_version_true_is_not_version_1(tmp_path):
    """JSON ``true == 1`` in Python: a boolean version must not pass as version 1."""
    import glob
    import json
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    doc = json.load(open(sorted(glob.glob(os.path.join(root, "traces", "*.json")))[0]))
    doc["version"] = True
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    proc = subprocess.run([sys.executable, "-m", "icecheck", "replay", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "unsupported trace version True" in proc.stderr


SPACE_CASES = {
    # today's issue: `ops: 100000000` grew without end; each bound now has a ceiling
    "absurd-ops": (r"^(\s*ops:\s*).*$", r"\g<1>100000000", "bounds.ops must be between 1 and 9"),
    "bool-ops": (r"^(\s*ops:\s*).*$", r"\g<1>true", "bounds.ops must be an integer, not True"),
    "nan-ops": (r"^(\s*ops:\s*).*$", r"\g<1>.nan", "bounds.ops must be an integer, not nan"),
    "bool-format": (r"^format_versions: .*$", "format_versions: [2, true]",
                    "format_versions must be an integer, not True"),
    "unknown-catalog": (r"^catalogs: .*$", "catalogs: [cas, zzz]", "unknown catalog 'zzz'"),
}


@pytest.mark.parametrize("name", sorted(SPACE_CASES))
def test_bad_sweep_space_names_file_and_line(tmp_path, name):
    import os
    import re
    pattern, replacement, fragment = SPACE_CASES[name]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    good = open(os.path.join(root, "sweep", "space.yaml")).read()
    text, count = re.subn(pattern, replacement, good, count=1, flags=re.M)
    assert count == 1
    line = next(i for i, (a, b) in enumerate(zip(good.splitlines(), text.splitlines()), 1) if a != b)
    path = tmp_path / "space.yaml"
    path.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "icecheck", "sweep", "--space", str(path), "--list"],
                          capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert f"{path}:{line}: {fragment}" in proc.stderr, proc.stderr


NO_RULE_EXPLORATION = """\
explorations:
  - id: a
    profile: pyiceberg-0.12-serializable
    mix: [compact]
    max_examples: 5
"""


@pytest.mark.parametrize("text,fragment", [
    (NO_RULE_EXPLORATION, "profile pyiceberg-0.12-serializable has no rule for COMPACT"),
    (NO_RULE_EXPLORATION.replace("pyiceberg-0.12-serializable", "nope"), "unknown profile 'nope'"),
])
def test_bad_exploration_names_file_and_line(tmp_path, text, fragment):
    """A command the profile has no rule for (once a KeyError) points at its entry's line."""
    path = tmp_path / "ex.yaml"
    path.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "icecheck", "check", "--explorations", str(path),
                           "--reports", str(tmp_path / "reports")], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert f"{path}:2: {fragment}" in proc.stderr, proc.stderr


@pytest.mark.parametrize("args", [
    ["explore", "--profile", "pyiceberg-0.12-serializable", "--mix", "compact", "--max-examples", "5"],
    ["z3", "search", "--profile", "pyiceberg-0.12-serializable", "--mix", "compact"],
])
def test_no_rule_for_a_command_names_the_options(args):
    proc = subprocess.run([sys.executable, "-m", "icecheck", *args], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip() == ("error: --profile/--mix: profile pyiceberg-0.12-serializable has "
                                   "no rule for COMPACT (it supports INSERT, DELETE, UPDATE, MERGE, "
                                   "MERGE_INSERT, OVERWRITE, OVERWRITE_PARTITIONS, "
                                   "OVERWRITE_FILES, ADD_FILES)"), proc.stderr


@pytest.mark.parametrize("engine", ["bfs", "hypothesis"])
def test_rewrite_deletes_on_v3_is_refused_before_the_search(engine):
    """The model does not follow rewrite_position_delete_files on v3 (deletion vectors): the
    option is refused up front (it used to stop a BFS with a worker's traceback)."""
    proc = subprocess.run([sys.executable, "-m", "icecheck", "explore", "--engine", engine,
                           "--profile", "spark-3.5-mor-serializable", "--format", "3",
                           "--mix", "rewrite_deletes,delete", "--max-examples", "5"],
                          capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("error: --mix: rewrite_deletes (Spark's "
                                          "rewrite_position_delete_files) is not modelled on "
                                          "format v3 tables"), proc.stderr


@pytest.mark.parametrize("change,expected", [
    ({"key": [1]}, "field 'config': malformed configuration: key [1] is not a column"),
    ({"writers": "abc"}, "field 'config': command must be a mapping, got a string"),
    ({"faults": "no"}, "field 'config': malformed configuration: faults must be true or false"),
])
def test_malformed_trace_config_is_an_input_error(tmp_path, change, expected):
    """A malformed trace configuration is exit 2 (not drift, not a TypeError), with no bogus
    line 0 for a value that has no line in the file."""
    import glob
    import json
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    doc = json.load(open(sorted(glob.glob(os.path.join(root, "traces", "*.json")))[0]))
    doc["config"].update(change)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    proc = subprocess.run([sys.executable, "-m", "icecheck", "replay", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(f"error: {path}: {expected}"), proc.stderr


@pytest.mark.parametrize("text,line", [
    ("version: 1\nx: " + "[" * 5000 + "]" * 5000 + "\n", 2),
    ("version: 1\nx:\n" + "".join("  " * i + "a:\n" for i in range(1, 300)), 101),
], ids=["flow", "block"])
def test_deep_nesting_names_its_line(tmp_path, text, line):
    """Nesting past the limit is found while composing (PyYAML recurses per level), so the
    message names the line where it went too deep instead of a bare RecursionError."""
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "icecheck", "scenario", "run", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip() == f"error: {path}:{line}: nested more than 100 levels deep"


@pytest.mark.parametrize("data,expected", [
    (b"allow:\n  - scenario: x\n    reason: ok\n  - scenario: y\n",
     ":4: allow-list entry 2 must have exactly 'scenario' and a non-empty 'reason'"),
    (b"allow: [\xff]\n", ":1: not UTF-8 text (byte 0xff)"),
    (b"a: &a [x, x, x, x, x, x, x, x, x]\n" + b"".join(
        f"{c}: &{c} [{', '.join(['*' + chr(ord(c) - 1)] * 9)}]\n".encode() for c in "bcdefghi"),
     "expands to more than 200,000 values"),
])
def test_conformance_allowlist_uses_the_safe_line_aware_loader(tmp_path, data, expected):
    from icecheck.conformance.compare import load_allowlist
    from icecheck.scenarios.errors import InputError
    path = tmp_path / "allow.yaml"
    path.write_bytes(data)
    with pytest.raises(InputError) as err:
        load_allowlist(str(path))
    assert str(err.value).startswith(str(path)) and expected in str(err.value), str(err.value)


def test_sweep_filters_matching_nothing_name_the_options():
    proc = subprocess.run([sys.executable, "-m", "icecheck", "sweep", "--list", "--catalog", "cas",
                           "--format", "7"], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("error: --catalog/--format: no cell of "), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_upgrade_format_version_input_errors(tmp_path):
    from icecheck.scenarios.errors import InputError
    from icecheck.scenarios.format import load_scenario
    p = tmp_path / "s.yaml"
    p.write_text("version: 1\nid: x\ntable: {schema: {id: int}}\nsteps:\n"
                 "  - commit: {op: upgrade_format_version, format_version: 4}\n")
    with pytest.raises(InputError, match="format_version: 2 or 3, not 4") as e:
        load_scenario(str(p))
    assert e.value.line == 5


def test_small_manifest_target_size_is_refused(tmp_path):
    """The model has no manifest byte sizes: a target size that would make Java bin manifests
    is an input error naming the line, not a silently different model."""
    from icecheck.scenarios.errors import InputError
    from icecheck.scenarios.format import load_scenario
    p = tmp_path / "s.yaml"
    p.write_text("version: 1\nid: x\ntable:\n  schema: {id: int}\n  properties:\n"
                 "    commit.manifest.target-size-bytes: 1024\nsteps: []\n")
    with pytest.raises(InputError, match="is not modelled: the model has no manifest byte sizes"):
        load_scenario(str(p))


@pytest.mark.parametrize("text,expected", [
    ("", "the pipeline must be a mapping, not nothing (an empty value or file)"),
    ("- 1\n- 2\n", "the pipeline must be a mapping, not a list"),
    ("just words\n", "the pipeline must be a mapping, not a string"),
])
def test_pipeline_of_the_wrong_shape_says_what_it_got(tmp_path, text, expected):
    """A pipeline file that is not a mapping is named in YAML's terms (a list, a string, an
    empty file), never by the loader's Python classes (``LineList``, ``NoneType``)."""
    path = tmp_path / "p.yaml"
    path.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "icecheck", "check", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip() == f"error: {path}:1: {expected}", proc.stderr


def test_kind_of_names_yaml_values():
    from icecheck.scenarios.yamlload import LineDict, LineList, kind_of
    assert [kind_of(v) for v in (None, True, 3, 2.5, "x", LineList(), LineDict(), [], {})] == [
        "nothing (an empty value or file)", "a boolean", "an integer", "a number", "a string",
        "a list", "a mapping", "a list", "a mapping"]


def test_a_key_written_on_or_yes_stays_a_name():
    """YAML 1.1 reads a plain ``on`` as true, also as a mapping key: a MERGE written
    ``{sql: MERGE, on: [id], ...}`` was refused "unknown key True in a MERGE command". Keys
    stay the text they were written as; values keep YAML's reading."""
    from icecheck.scenarios.yamlload import load_yaml
    doc = load_yaml("command: {sql: MERGE, on: [id], rows: [[1, a]]}\nyes: no\n", "x.yaml")
    assert doc == {"command": {"sql": "MERGE", "on": ["id"], "rows": [[1, "a"]]}, "yes": False}


# -- issue 45, item 6 --------------------------------------------------------------------------
EXPLORATION = """\
explorations:
  - id: a
    profile: spark-3.5-mor-snapshot
    max_examples: 5
"""


@pytest.mark.parametrize("text,line,fragment", [
    (EXPLORATION + "    expect:\n      allowed: [undelete, no_such]\n", 6,
     "explorations[0].expect.allowed[1]: unknown property 'no_such'; expected one of "),
    (EXPLORATION + "    expect:\n      allowed:\n        - 3\n", 7,
     "explorations[0].expect.allowed[0]: unknown property 3"),
    (EXPLORATION + "    expect:\n      allowed: [undelete]\n      forbidden: [lost_write]\n", 7,
     "unknown key 'forbidden' in explorations[0].expect; expected 'allowed'"),
    (EXPLORATION + EXPLORATION.split("\n", 1)[1] + "  - id: b\n    profile: "
     "spark-3.5-mor-snapshot\n", 5,
     "explorations[1]: duplicate id 'a' (first used by the entry at line 2)"),
])
def test_exploration_expectations_and_ids_are_checked(tmp_path, text, line, fragment):
    """An unknown property in expect.allowed made every run fail (exit 1, as a failed
    check would); a duplicate id made two reports of one name. Both are input errors at
    their line, found before any exploration runs."""
    path = tmp_path / "ex.yaml"
    path.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "icecheck", "check", "--explorations", str(path),
                           "--reports", str(tmp_path / "reports")], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (first,) = proc.stderr.strip().splitlines()
    assert first.startswith(f"error: {path}:{line}: {fragment}"), first


def test_conform_allowlist_must_exist(tmp_path):
    """A missing --allowlist was read as an empty list: every known disagreement failed."""
    for path in (tmp_path / "missing.yaml", tmp_path):
        proc = subprocess.run([sys.executable, "-m", "icecheck", "conform", "--allowlist",
                               str(path)], capture_output=True, text=True)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        (line,) = proc.stderr.strip().splitlines()
        assert line.startswith("error: Invalid value for '--allowlist'") and str(path) in line


@pytest.mark.parametrize("setup,expected", [
    ("broken", "{dir}/mine.yaml:4: profile mine: isolation must be one of serializable, "
               "snapshot, none"),
    ("file", "ICECHECK_PROFILES: names '{dir}/mine.yaml', which is a file, not a folder"),
    ("missing", "ICECHECK_PROFILES: names '{dir}/nowhere', which does not exist"),
])
@pytest.mark.parametrize("args", [
    ["explore", "--engine", "bfs", "--profile", "spark-3.5-mor-snapshot", "--writers", "1"],
    ["z3", "search", "--profile", "spark-3.5-mor-snapshot"],
    ["profiles"],
], ids=["explore", "z3", "profiles"])
def test_a_broken_profiles_folder_reports_its_own_error(tmp_path, setup, expected, args):
    """A broken $ICECHECK_PROFILES file made every --profile "unknown profile ...; known: "
    with an empty list; the file's own error (file:line), or what is wrong with the
    variable, is the message."""
    import os
    (tmp_path / "mine.yaml").write_text("profiles:\n  mine:\n    engine: spark-3.5\n"
                                        "    isolation: bogus\n    commands: {}\n")
    value = {"broken": str(tmp_path), "file": str(tmp_path / "mine.yaml"),
             "missing": str(tmp_path / "nowhere")}[setup]
    proc = subprocess.run([sys.executable, "-m", "icecheck", *args], capture_output=True,
                          text=True, env=dict(os.environ, ICECHECK_PROFILES=value))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: " + expected.format(dir=tmp_path)), line
