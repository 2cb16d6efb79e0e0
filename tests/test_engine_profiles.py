"""Engine profiles read from each engine's own source (models/profiles/trino.yaml,
iceberg-go.yaml, iceberg-rust.yaml, kafka-connect.yaml, spark4.yaml; docs/engines.md).

None of these engines runs here, so nothing replays them: what keeps a profile honest is that
it names the release it follows and cites, for every command rule, the source lines the rule
rests on, and that where its source differs from Spark's the model's verdict differs the same
way. Each pin below states the source it follows."""

import os
import re
from dataclasses import replace

import pytest

from icecheck.engines.config import fit_mix_to_profiles, mix_config
from icecheck.engines.explicit import search
from icecheck.models.profiles import get_profile, load_profiles
from icecheck.scenarios.errors import InputError
from icecheck.scenarios.format import load_scenario
from icecheck.scenarios.runner import execute_scenario
from icecheck.scenarios.yamlload import load_yaml_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILE_DIR = os.path.join(ROOT, "models", "profiles")
# file -> the profiles it ships
FILES = {
    "trino.yaml": ("trino-483-serializable", "trino-483-snapshot"),
    "iceberg-go.yaml": ("iceberg-go-0.6-serializable", "iceberg-go-0.6-snapshot"),
    "iceberg-rust.yaml": ("iceberg-rust-0.10",),
    "kafka-connect.yaml": ("kafka-connect-1.11",),
    "spark4.yaml": ("spark-4.0-cow-serializable", "spark-4.0-cow-snapshot",
                    "spark-4.0-mor-serializable", "spark-4.0-mor-snapshot"),
}
# path:FIRST-LAST @ TAG
CITATION = re.compile(r"(?P<path>[\w./-]+\.(?:java|go|rs|scala|xml)):(?P<first>\d+)-(?P<last>\d+)"
                      r" @ (?P<tag>[\w.-]*\w)")
NO_RETRIES = (("commit.retry.num-retries", "0"),)


def _citations(text: str) -> list[re.Match]:
    return list(CITATION.finditer(" ".join(str(text).split())))


def _doc(name: str) -> dict:
    return load_yaml_file(os.path.join(PROFILE_DIR, name))


def _steps(tmp_path, profile: str, steps: str, properties: str = "") -> dict:
    """Run a scenario of ``steps`` on a table holding [0, v0], [1, v0] in one file; return
    each writer's last step verdict."""
    path = tmp_path / f"{profile}.yaml"
    path.write_text(f"""version: 1
id: pin
profile: {profile}
table:
  schema: {{id: int, v: string}}
{properties}
files:
  d1: {{rows: [[0, v0], [1, v0]]}}
steps:
  - commit: {{op: append, add: [d1]}}
{steps}
""")
    verdict, _ = execute_scenario(load_scenario(str(path)))
    return {s.writer: s for s in verdict.steps}


# -- every new profile loads, names its release, cites its source ------------------------------

@pytest.mark.parametrize("name", sorted(FILES))
def test_each_profile_file_loads_names_its_release_and_cites_each_rule(name):
    doc = _doc(name)
    profiles = load_profiles()
    source = doc["x-source"]
    release = " ".join(str(source["release"]).split())
    assert re.search(r"\d+\.\d+|\b4\d\d\b", release), release      # a version, or Trino's 483
    cited = source["commands"]
    for prof in FILES[name]:
        p = profiles[prof]
        assert p.source == os.path.join(PROFILE_DIR, name)
        assert "modelled from source, not replayed" in p.description, prof
        for command in p.commands:
            found = _citations(cited.get(command, ""))
            assert found, f"{prof}: no citation for its {command} rule"
            for m in found:
                assert int(m["first"]) <= int(m["last"]), m.group(0)
                # every citation is at a release the file names
                assert m["tag"] in release, f"{m.group(0)}: {m['tag']} is not named in {release}"
    # how a lost swap is retried, cited too
    assert _citations(source["retry"]), f"{name}: the retry is not cited"


def test_the_new_profiles_are_loaded_like_flink_from_the_profiles_folder():
    """models/profiles.py loads every *.yaml of the folder: no code names these files."""
    names = set(load_profiles())
    for shipped in FILES.values():
        assert set(shipped) <= names


# -- a small exploration per profile runs to completion ---------------------------------------

@pytest.mark.parametrize("profile,mix", [
    ("trino-483-serializable", ("delete", "update", "insert")),
    ("trino-483-snapshot", ("delete", "merge_insert")),
    ("iceberg-rust-0.10", ("insert",)),
    ("kafka-connect-1.11", ("insert",)),
    ("spark-4.0-cow-serializable", ("delete", "insert")),
    ("spark-4.0-mor-snapshot", ("delete", "update")),
])
def test_a_two_writer_exploration_completes(profile, mix):
    res = search(mix_config(profile, writers=2, mix=mix))
    assert res.complete and res.stopped is None
    assert res.states > 10
    # the writers met: one lost a race or committed on top of the other
    assert res.reached["lost_race"] or res.reached["commit_from_stale_base"]


@pytest.mark.parametrize("profile", ["iceberg-go-0.6-serializable", "iceberg-go-0.6-snapshot"])
def test_an_iceberg_go_exploration_completes_and_never_validates_without_a_retry(profile):
    """On a table with iceberg-go's own default, commit.retry.num-retries 0
    (table/properties.go:103-113 @ v0.6.0), its one attempt swaps against the metadata it began
    at and runs no validator (table/table.go:424-433, 476-506 @ v0.6.0): a writer that loses
    the race fails, and no state ever reaches a validation."""
    cfg = replace(mix_config(profile, writers=2, mix=("delete", "insert")), properties=NO_RETRIES)
    res = search(cfg)
    assert res.complete and res.states > 10
    assert res.reached["commit_failed"] > 0
    assert res.coverage["validation skipped (first attempt)"] > 0
    assert not res.reached["validation_conflict"]
    assert not res.violations


# -- Trino 483: where its source differs from Spark's -----------------------------------------

MERGE_INSERT_RACE = """  - begin: w1
    command: {sql: MERGE_INSERT, "on": [id], rows: [[2, w1]]}
  - begin: w2
    command: {sql: MERGE_INSERT, "on": [id], rows: [[2, w2]]}
  - commit: w2
  - commit: w1"""


def test_trino_insert_only_merge_is_a_validated_row_delta_not_an_append(tmp_path):
    """Trino plans every MERGE as a merge (QueryPlanner.java:952-995 @ 483) and finishWrite
    validates its RowDelta with validateNoConflictingDataFiles at serializable
    (IcebergMetadata.java:3368-3371 @ 483): of two jobs inserting one absent key, the second
    fails. Spark 3.5 rewrites the same MERGE to an unvalidated append: both insert it."""
    trino = _steps(tmp_path, "trino-483-serializable", MERGE_INSERT_RACE)
    assert trino["w2"].outcome == "committed"
    assert (trino["w1"].outcome, trino["w1"].check) == ("validation_failed",
                                                         "no_conflicting_data")
    spark = _steps(tmp_path, "spark-3.5-cow-serializable", MERGE_INSERT_RACE)
    assert spark["w1"].outcome == spark["w2"].outcome == "committed"


def test_trino_snapshot_isolation_delete_checks_concurrent_delete_files(tmp_path):
    """Trino's DELETE enables validateDeletedFiles and validateNoConflictingDeleteFiles at every
    level (IcebergMetadata.java:3373-3375 @ 483); Spark's merge-on-read DELETE enables them only
    for UPDATE and MERGE, so at snapshot isolation it undeletes a row updated concurrently
    (scenarios/builtin/commands/spark-mor-si-undelete.yaml). Trino's DELETE fails instead."""
    steps = """  - begin: w1
    command: {sql: UPDATE, where: "id = 1", set: {v: w1}}
  - begin: w2
    command: {sql: DELETE, where: "id = 1"}
  - commit: w1
  - commit: w2"""
    trino = _steps(tmp_path, "trino-483-snapshot", steps)
    assert trino["w1"].outcome == "committed"
    assert (trino["w2"].outcome, trino["w2"].check) == ("validation_failed",
                                                         "no_conflicting_delete_files")
    spark = _steps(tmp_path, "spark-3.5-mor-snapshot", steps)
    assert spark["w2"].outcome == "committed"


def test_trino_commits_nothing_for_a_delete_that_matches_no_row(tmp_path):
    """finishWrite returns without a commit when no task wrote a file ("Avoid recording 'empty'
    write operation", IcebergMetadata.java:3347-3351 @ 483); Spark commits an empty snapshot."""
    steps = """  - begin: w1
    command: {sql: DELETE, where: "id = 7"}
  - commit: w1"""
    assert _steps(tmp_path, "trino-483-serializable", steps)["w1"].outcome == "noop"
    assert _steps(tmp_path, "spark-3.5-mor-serializable", steps)["w1"].outcome == "committed"


def test_trino_reads_no_write_mode_and_has_no_insert_overwrite():
    """Row-level commands are merge-on-read whatever write.*.mode says (no copy-on-write path
    in IcebergMetadata @ 483), and the connector commits no OverwriteFiles or
    ReplacePartitions (its only producers: newAppend/newFastAppend, newRowDelta, newRewrite,
    newDelete)."""
    for name in FILES["trino.yaml"]:
        p = get_profile(name)
        assert {p.commands[c].mode for c in ("DELETE", "UPDATE", "MERGE")} == {"merge-on-read"}
        for absent in ("OVERWRITE", "OVERWRITE_PARTITIONS", "UPSERT"):
            with pytest.raises(KeyError, match=f"does not support {absent}"):
                p.rule(absent)


# -- iceberg-go v0.6.0 -------------------------------------------------------------------------

#: a DELETE (w1) that loses the race to an INSERT of another key (w2)
LOST_RACE = """  - begin: w1
    command: {sql: DELETE, where: "id = 1"}
  - begin: w2
    command: {sql: INSERT, rows: [[100, w2]]}
  - commit: w2
  - commit: w1"""


def test_iceberg_go_loses_the_race_where_spark_validates_and_commits(tmp_path):
    """iceberg-go's first attempt swaps against its base and validates nothing; with its
    default of no retry (table/properties.go:103-113 @ v0.6.0) a DELETE that lost the race to
    an INSERT of another key fails. Spark refreshes, finds no conflicting file and commits."""
    steps = LOST_RACE
    props = "  properties: {commit.retry.num-retries: 0}"
    go = _steps(tmp_path, "iceberg-go-0.6-serializable", steps, props)
    assert go["w2"].outcome == "committed"
    assert go["w1"].outcome == "commit_failed"
    spark = _steps(tmp_path, "spark-3.5-cow-serializable", steps, props)
    assert spark["w1"].outcome == "committed"


def test_iceberg_go_retries_as_its_table_says_and_not_at_all_by_default(tmp_path):
    """Its own default of no retry (commit_retries: 0) holds where the table sets no
    commit.retry.num-retries; a table that sets it decides (Java's re-apply, docs/engines.md)."""
    steps = LOST_RACE
    unset = _steps(tmp_path, "iceberg-go-0.6-serializable", steps, "  properties: {}")
    assert unset["w1"].outcome == "commit_failed"
    retried = _steps(tmp_path, "iceberg-go-0.6-serializable", steps,
                     "  properties: {commit.retry.num-retries: 4}")
    assert retried["w1"].outcome == "committed"
    assert get_profile("iceberg-go-0.6-snapshot").commit_retries == 0
    assert get_profile("spark-3.5-cow-serializable").commit_retries is None


def test_iceberg_go_has_no_update_or_merge():
    """Its Transaction has Append, Delete, Overwrite, AddFiles, ReplaceFiles, RowDelta and
    RewriteFiles, no UPDATE or MERGE (table/transaction.go @ v0.6.0)."""
    for name in FILES["iceberg-go.yaml"]:
        p = get_profile(name)
        assert set(p.commands) == {"INSERT", "DELETE", "OVERWRITE"}
        assert not p.validate_on_first_attempt


# -- iceberg-rust v0.10.1 and the Kafka Connect sink: append-only -------------------------------

@pytest.mark.parametrize("profile,operation", [("iceberg-rust-0.10", "fast_append"),
                                               ("kafka-connect-1.11", "append")])
def test_append_only_engines_refuse_every_other_command(profile, operation):
    """iceberg-rust's only snapshot-producing action is fast_append
    (crates/iceberg/src/transaction/mod.rs:135-172 @ v0.10.1); the Kafka Connect sink's writers
    only append and its coordinator commits newAppend() (Coordinator.java:273-286,
    RecordUtils.java:161-177 @ apache-iceberg-1.11.0)."""
    p = get_profile(profile)
    assert set(p.commands) == {"INSERT"}
    assert p.rule("INSERT").operation == operation and not p.rule("INSERT").validations
    with pytest.raises(KeyError, match="supports INSERT"):
        p.rule("DELETE")
    cfg = replace(mix_config("spark-3.5-cow-serializable", writers=2, mix=("delete",)),
                  writer_profiles=("", profile))
    with pytest.raises(InputError, match=f"w2 \\({profile}\\) supports none"):
        fit_mix_to_profiles(cfg)


def test_an_append_only_engine_beside_spark_keeps_its_inserts(tmp_path):
    """Mixed: a Spark DELETE job and an iceberg-rust writer; the writer keeps its inserts."""
    cfg = fit_mix_to_profiles(replace(
        mix_config("spark-3.5-cow-serializable", writers=2, mix=("delete", "insert")),
        writer_profiles=("", "iceberg-rust-0.10")))
    assert {dict(c)["sql"] for c in cfg.writers[1][0]} == {"INSERT"}
    res = search(cfg)
    assert res.complete and res.states > 10


# -- Spark 4.0 + Iceberg 1.10.2: the Spark 3.5 rules ---------------------------------------------

@pytest.mark.parametrize("variant", ["cow-serializable", "cow-snapshot", "mor-serializable",
                                     "mor-snapshot"])
def test_spark4_commits_as_spark_3_5(variant):
    """spark/v4.0 and spark/v3.5 share their commit code at apache-iceberg-1.10.2 (the diff is
    row lineage only): each rule, and the exploration it drives, are Spark 3.5's."""
    four, three = get_profile(f"spark-4.0-{variant}"), get_profile(f"spark-3.5-{variant}")
    assert four.commands == three.commands and four.isolation == three.isolation
    r4 = search(mix_config(four.name, writers=2, mix=("delete", "update", "insert")))
    r3 = search(mix_config(three.name, writers=2, mix=("delete", "update", "insert")))
    assert (r4.states, r4.transitions) == (r3.states, r3.transitions)
    assert set(r4.violations) | set(r4.allowed) == set(r3.violations) | set(r3.allowed)
