"""``icecheck audit`` on tables real PyIceberg 0.12 wrote into a real SQLite catalog.

Each test builds its table in tmp_path with PyIceberg (the anomaly made the way the library
makes it: the add_files interleaving of reproducers/pyiceberg_add_files_twice_duplicates_rows.py,
a rollback through ManageSnapshots, a format-v1 writer that skips the catalog's
compare-and-swap requirement), then runs the command and checks what it names. Skipped when
PyIceberg (the conformance extras) is not installed. The Spark-written histories (position
deletes, deletion vectors, equality deletes) are in tests/conformance/test_audit_spark.py.
"""

import json
import os
import subprocess
import sys
import warnings

import pytest

pytest.importorskip("pyiceberg.catalog.sql",
                    reason="PyIceberg is not installed (pip install -e '.[conformance]')")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.types import IntegerType, NestedField, StringType  # noqa: E402

from icecheck.cli.main import main  # noqa: E402

SCHEMA = Schema(NestedField(1, "id", IntegerType(), required=False),
                NestedField(2, "category", StringType(), required=False))
ARROW = pa.schema([pa.field("id", pa.int32()), pa.field("category", pa.string())])


def rows(*r):
    return pa.Table.from_pylist([{"id": i, "category": c} for i, c in r], schema=ARROW)


class Cat:
    def __init__(self, tmp_path):
        self.dir = tmp_path
        self.db = tmp_path / "cat.db"
        self.uri = f"sqlite:///{self.db}"
        self.catalog = SqlCatalog("aud", uri=self.uri, warehouse=f"file://{tmp_path}/wh")
        self.catalog.create_namespace("db")

    def table(self, name="db.t", **props):
        return self.catalog.create_table(name, SCHEMA, properties=props)

    def load(self, name="db.t"):
        return self.catalog.load_table(name)

    def audit(self, *args, table="db.t"):
        r = CliRunner().invoke(main, ["audit", table, "--catalog", self.uri, *args])
        return r

    def audit_json(self, *args, table="db.t"):
        r = self.audit("--json", *args, table=table)
        assert r.exit_code in (0, 1), r.output
        return r.exit_code, json.loads(r.stdout)


@pytest.fixture
def cat(tmp_path):
    return Cat(tmp_path)


def _quiet():
    warnings.simplefilter("ignore")


def test_clean_table_has_no_findings(cat):
    """Appends, a delete, an overwrite and an upsert by PyIceberg: a clean history."""
    _quiet()
    t = cat.table()
    t.append(rows((1, "a"), (2, "b")))
    t.append(rows((3, "c")))
    cat.load().delete("id = 1")
    cat.load().overwrite(rows((4, "d")), overwrite_filter="id = 3")
    cat.load().upsert(rows((2, "B"), (5, "e")), join_cols=["id"])
    r = cat.audit()
    assert r.exit_code == 0, r.output
    assert "clean: no findings" in r.stdout
    code, doc = cat.audit_json("--check-files", "all")
    assert code == 0 and doc["findings"] == []
    assert doc["snapshots"] == len(cat.load().metadata.snapshots) >= 5
    assert doc["stats"]["existence_checks"] > 0


def test_branches_and_tags_are_walked_without_findings(cat):
    """A branch forked from the first snapshot, commits on both lines, a tag: every snapshot
    is reached by a ref, and the fork holds two live sets at once (the copy path)."""
    _quiet()
    t = cat.table()
    t.append(rows((1, "a")))
    s1 = cat.load().current_snapshot().snapshot_id
    cat.load().manage_snapshots().create_branch(s1, "audit-branch").commit()
    cat.load().append(rows((2, "b")), branch="audit-branch")
    cat.load().append(rows((3, "c")))
    cat.load().delete("id = 1", branch="audit-branch")
    cat.load().manage_snapshots().create_tag(s1, "first").commit()
    code, doc = cat.audit_json("--check-files", "all")
    assert code == 0 and doc["findings"] == []
    assert set(doc["refs"]) == {"main", "audit-branch", "first"}
    assert doc["stats"]["max_live_sets"] == 2 and doc["stats"]["snapshots_walked"] == 4


def test_add_files_twice_is_a_duplicate_registration(cat):
    """reproducers/pyiceberg_add_files_twice_duplicates_rows.py: two overlapping add_files of
    one Parquet file both commit; the audit names the file, both snapshots and its rows."""
    _quiet()
    t = cat.table()
    t.append(rows((1, "a")))
    os.makedirs(cat.dir / "ext")
    path = cat.dir / "ext" / "backfill.parquet"
    pq.write_table(rows((2, "b")), path)
    uri = f"file://{path}"
    tx1, tx2 = cat.load().transaction(), cat.load().transaction()
    tx1.add_files([uri])
    tx2.add_files([uri])
    tx1.commit_transaction()
    tx2.commit_transaction()
    snaps = [s.snapshot_id for s in cat.load().metadata.snapshots]
    code, doc = cat.audit_json()
    assert code == 1
    [f] = doc["findings"]
    assert (f["check"], f["property"], f["severity"]) == ("duplicate_file", "duplicate_keys",
                                                          "violation")
    assert f["files"] == [uri] and f["snapshots"] == snaps[1:]
    assert f["certainty"] == "proven from data files"
    assert f["rows"] == [{"id": 2, "category": "b"}]
    assert f["details"]["still_duplicated_in"] == ["main"]
    code, doc = cat.audit_json("--no-read-data")
    assert doc["findings"][0]["certainty"] == "proven from metadata"
    assert doc["findings"][0]["rows"] is None
    r = cat.audit("--reports", str(cat.dir / "rep"))
    assert r.exit_code == 1 and "VIOLATION duplicate_file" in r.stdout
    md = (cat.dir / "rep" / "audit.md").read_text()
    assert "## 1. duplicate_file (violation, proven from data files)" in md
    assert f"| 3 | {snaps[2]} | {snaps[1]} |" in md          # the timeline names both commits
    assert json.loads((cat.dir / "rep" / "audit.json").read_text())["violations"] == 1


def _add_files_twice_two_engines(cat, row=(2, "b")):
    """The add_files duplicate, the second commit stamped as a Spark commit (its summary's
    engine-name and iceberg-version, as Spark writes them), so the timeline has two lanes.
    Returns the three snapshot ids."""
    _quiet()
    t = cat.table()
    t.append(rows((1, "a")))
    os.makedirs(cat.dir / "ext")
    path = cat.dir / "ext" / "backfill.parquet"
    pq.write_table(rows(row), path)
    tx1, tx2 = cat.load().transaction(), cat.load().transaction()
    tx1.add_files([f"file://{path}"])
    tx2.add_files([f"file://{path}"], snapshot_properties={
        "engine-name": "spark", "iceberg-version": "Apache Iceberg 1.10.2"})
    tx1.commit_transaction()
    tx2.commit_transaction()
    return [s.snapshot_id for s in cat.load().metadata.snapshots]


def test_reports_draw_the_timeline_as_svg_and_html(cat):
    """--reports: audit-timeline.svg (the counterexample timelines' grid, a lane per engine, a
    row per snapshot the findings name, a violation's cells red), linked from audit.md, and
    audit.html with the Markdown's content and the SVG inline; a row value holding markup is
    escaped in the HTML, not passed through."""
    import shutil
    import xml.etree.ElementTree as ET

    if shutil.which("dot") is None:
        pytest.skip("graphviz's dot is not installed")
    snaps = _add_files_twice_two_engines(cat, row=(2, "<script>x</script>"))
    rep = cat.dir / "rep"
    r = cat.audit("--reports", str(rep))
    assert r.exit_code == 1, r.output
    assert sorted(p.name for p in rep.iterdir()) == ["audit-timeline.svg", "audit.html",
                                                     "audit.json", "audit.md"]
    svg = (rep / "audit-timeline.svg").read_text()
    root = ET.fromstring(svg.encode())                  # well-formed SVG
    assert root.tag.endswith("svg")
    texts = [t.text or "" for t in root.iter() if t.tag.endswith("text")]
    assert "PyIceberg (no Java summary)" in texts and "Spark" in texts
    for sid in snaps[1:]:
        assert any(f"append {sid}" in t for t in texts)   # each commit the finding names
    assert not any(str(snaps[0]) in t for t in texts if "parent" not in t)  # not the first
    assert any("#1 duplicate_file (violation)" in t for t in texts)
    assert svg.count('stroke="red"') >= 3               # both commits' cells and the verdict
    md = (rep / "audit.md").read_text()
    assert "![The suspicious snapshots, a lane per engine](audit-timeline.svg)" in md
    page = (rep / "audit.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 1
    assert '<img src="audit-timeline.svg"' not in page  # inline, not linked
    assert "<h2>1. duplicate_file (violation, proven from data files)</h2>" in page
    assert "<script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page


def test_svg_timeline_keeps_the_violations_rows_when_capped(cat, monkeypatch):
    """More suspicious snapshots than the SVG draws: those a violation names are drawn first
    and the title says how many are drawn; the Markdown's table keeps them all. The add_files
    duplicate (a violation naming its two commits), then an append and a rollback to before
    it (a finding naming the append), two rows drawn: the violation's."""
    import shutil

    from icecheck.audit import report

    if shutil.which("dot") is None:
        pytest.skip("graphviz's dot is not installed")
    snaps = _add_files_twice_two_engines(cat)
    cat.load().append(rows((3, "c")))
    later = cat.load().current_snapshot().snapshot_id
    cat.load().manage_snapshots().rollback_to_snapshot(snaps[2]).commit()
    monkeypatch.setattr(report, "SVG_MAX_ROWS", 2)
    r = cat.audit("--reports", str(cat.dir / "rep"))
    assert r.exit_code == 1, r.output
    svg = (cat.dir / "rep" / "audit-timeline.svg").read_text()
    md = (cat.dir / "rep" / "audit.md").read_text()
    table = md[md.index("| seq | snapshot |"):md.index("## What was read")]
    assert [line.split(" | ")[1] for line in table.splitlines()[2:] if line] == [
        str(snaps[1]), str(snaps[2]), str(later)]       # all three in the Markdown
    assert "| #2 |" in table and "#1, #2 |" in table   # each finding once per snapshot
    assert "(2 of 3, violations first; audit.md lists all)" in svg
    assert f"append {snaps[1]}" in svg and f"append {snaps[2]}" in svg
    assert f"append {later}" not in svg
    assert "2 of 3 snapshots drawn, those violations name first" in md


def test_reports_without_graphviz_say_so_and_drop_a_stale_svg(cat, monkeypatch):
    """Without Graphviz's dot the reports are written without the SVG (audit.md says why and
    how to install it), and an SVG an earlier run left in the folder is removed: audit.md no
    longer links it. A clean table has no timeline, so no SVG either."""
    from icecheck.traces import timeline

    _add_files_twice_two_engines(cat)
    rep = cat.dir / "rep"
    rep.mkdir()
    (rep / "audit-timeline.svg").write_text("<svg>an earlier run's</svg>")
    monkeypatch.setattr(timeline.shutil, "which", lambda name: None)
    r = cat.audit("--reports", str(rep))
    assert r.exit_code == 1, r.output
    assert sorted(p.name for p in rep.iterdir()) == ["audit.html", "audit.json", "audit.md"]
    md = (rep / "audit.md").read_text()
    assert "No SVG timeline: SVG timelines need Graphviz's `dot` program" in md
    assert "apt-get install graphviz" in md and "audit-timeline.svg" not in md
    assert "<svg" not in (rep / "audit.html").read_text()
    (cat.dir / "clean").mkdir()
    clean = Cat(cat.dir / "clean")
    clean.table().append(rows((1, "a")))
    monkeypatch.undo()
    r = clean.audit("--reports", str(clean.dir / "rep"))
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (clean.dir / "rep").iterdir()) == [
        "audit.html", "audit.json", "audit.md"]
    assert "Timeline" not in (clean.dir / "rep" / "audit.md").read_text()


def test_missing_data_file_and_manifest(cat):
    _quiet()
    t = cat.table()
    t.append(rows((1, "a")))
    t.append(rows((2, "b")))
    t = cat.load()
    first = t.metadata.snapshots[0]
    data = [e.data_file.file_path for m in first.manifests(t.io)
            for e in m.fetch_manifest_entry(t.io)][0]
    os.remove(data[len("file://"):])
    code, doc = cat.audit_json()
    assert code == 1
    [f] = doc["findings"]
    assert (f["check"], f["property"], f["files"]) == ("missing_file", "readable", [data])
    assert f["details"] == {"kind": "data file", "refs": ["main"]}
    assert "reading main fails" in f["message"]
    code, doc = cat.audit_json("--check-files", "none")
    assert code == 0 and doc["findings"] == []

    manifest = t.current_snapshot().manifests(t.io)[0].manifest_path
    os.remove(manifest[len("file://"):])
    code, doc = cat.audit_json("--check-files", "none")
    assert code == 1
    [f] = doc["findings"]
    assert f["details"]["kind"] == "manifest" and f["files"] == [manifest]
    assert t.current_snapshot().snapshot_id in f["snapshots"]


def test_missing_manifest_list_names_its_snapshot(cat):
    _quiet()
    t = cat.table()
    t.append(rows((1, "a")))
    t.append(rows((2, "b")))
    first = cat.load().metadata.snapshots[0]
    os.remove(first.manifest_list[len("file://"):])
    code, doc = cat.audit_json()
    assert code == 1
    [f] = doc["findings"]
    assert f["details"]["kind"] == "manifest list"
    assert f["snapshots"] == [first.snapshot_id] and f["files"] == [first.manifest_list]


def test_rollback_moves_main_back(cat):
    """main set back to its first snapshot, then a new commit: the second snapshot and its data
    file left main; a finding (possible), so exit 0, and 1 with --strict."""
    _quiet()
    t = cat.table()
    t.append(rows((1, "a")))
    t.append(rows((2, "b")))
    t = cat.load()
    s1, s2 = t.metadata.snapshots
    t.manage_snapshots().set_current_snapshot(s1.snapshot_id).commit()
    cat.load().append(rows((3, "c")))
    lost = [e.data_file.file_path for m in s2.manifests(t.io) for e in m.fetch_manifest_entry(t.io)
            if e.snapshot_id == s2.snapshot_id]
    code, doc = cat.audit_json()
    assert code == 0
    [f] = doc["findings"]
    assert (f["check"], f["severity"], f["certainty"]) == ("main_moved_back", "finding",
                                                           "possible")
    assert f["details"]["dropped"] == [s2.snapshot_id] and f["files"] == lost
    assert cat.audit("--strict").exit_code == 1


def test_commit_from_a_stale_parent_v1(cat):
    """A format-v1 writer that commits without the catalog's assert-ref-snapshot-id
    requirement (a catalog or client that skips the compare-and-swap): its snapshot's parent
    is the one it began from, and the other writer's snapshot leaves main."""
    _quiet()
    t = cat.table(**{"format-version": "1"})
    t.append(rows((1, "a")))
    stale = cat.load()
    cat.load().append(rows((2, "b")))                      # the other writer commits
    tx = stale.transaction()
    tx.append(rows((3, "c")))
    cat.catalog.commit_table(stale, requirements=(), updates=tuple(tx._updates))
    s1, s2, s3 = cat.load().metadata.snapshots
    assert s3.parent_snapshot_id == s1.snapshot_id
    code, doc = cat.audit_json()
    assert code == 1
    [f] = doc["findings"]
    assert (f["check"], f["property"], f["certainty"]) == ("stale_parent", "lost_write",
                                                           "proven from metadata")
    assert f["details"]["dropped"] == [s2.snapshot_id]
    assert f["details"]["lost_data_files"] == 1 and len(f["files"]) == 1


def test_commit_lost_by_a_catalog_without_compare_and_swap(cat):
    """Two writers build on one version; the catalog swaps the pointer blindly (a catalog
    without compare-and-swap: here the pointer is written straight into the SQLite catalog),
    so the second replaces the first. The current metadata shows a clean history; the first
    writer's metadata file, left in the folder, holds its snapshot and data file."""
    import sqlite3
    import uuid

    from pyiceberg.serializers import ToOutputFile
    from pyiceberg.table.update import update_table_metadata

    _quiet()
    cat.table().append(rows((1, "a")))
    stale = cat.load()
    cat.load().append(rows((2, "b")))                     # writer A commits version 2
    a = cat.load()
    lost_snapshot = a.current_snapshot().snapshot_id
    lost_file = [e.data_file.file_path for m in a.current_snapshot().manifests(a.io)
                 for e in m.fetch_manifest_entry(a.io) if e.snapshot_id == lost_snapshot]
    tx = stale.transaction()                              # writer B, from version 1
    tx.append(rows((3, "c")))
    new = update_table_metadata(stale.metadata, tuple(tx._updates),
                                metadata_location=stale.metadata_location)
    loc = f"{stale.metadata.location}/metadata/00002-{uuid.uuid4()}.metadata.json"
    ToOutputFile.table_metadata(new, stale.io.new_output(loc))
    with sqlite3.connect(cat.db) as db:                   # the blind swap
        db.execute("UPDATE iceberg_tables SET metadata_location = ? WHERE table_name = 't'",
                   (loc,))
    assert [s.snapshot_id for s in cat.load().metadata.snapshots][-1] != lost_snapshot
    code, doc = cat.audit_json()
    assert code == 1
    [f] = doc["findings"]
    assert (f["check"], f["property"], f["severity"], f["certainty"]) == (
        "lost_commit", "lost_write", "violation", "possible")
    assert f["snapshots"] == [lost_snapshot] and f["files"][1:] == lost_file
    assert f["details"]["version"] == 2 and f["details"]["lost_data_files"] == 1
    assert doc["stats"]["metadata_folder_listed"] is True


def test_walk_reads_each_manifest_at_most_twice_and_holds_one_live_set(cat):
    """Bounded memory on a linear history: one live set at a time, each manifest read when
    it enters the lineage and, without a cache, once more when it leaves it."""
    from icecheck.audit import audit

    _quiet()
    t = cat.table(**{"commit.manifest-merge.enabled": "true",
                     "commit.manifest.min-count-to-merge": "3"})
    for i in range(8):
        cat.load().append(rows((i, "x")))
    t = cat.load()
    distinct = {m.manifest_path for s in t.metadata.snapshots for m in s.manifests(t.io)}
    rep = audit(t, "db.t", cache_entries=0)
    assert rep.findings == []
    assert rep.stats["manifest_lists"] == len(t.metadata.snapshots) == 8
    assert rep.stats["max_live_sets"] == 1
    assert len(distinct) <= rep.stats["manifests_read"] <= 2 * len(distinct)
    listed = sum(len(s.manifests(t.io)) for s in t.metadata.snapshots)
    assert rep.stats["manifests_read"] < listed           # not every list's every manifest
    cached = audit(t, "db.t")
    assert cached.stats["manifests_read"] == len(distinct)


def test_audit_writes_nothing(cat):
    _quiet()
    t = cat.table()
    t.append(rows((1, "a")))

    def snapshot():
        out = {}
        for root, _, files in os.walk(cat.dir):
            for f in files:
                p = os.path.join(root, f)
                with open(p, "rb") as fh:
                    out[p] = fh.read()
        return out

    before = snapshot()
    assert cat.audit("--check-files", "all").exit_code == 0
    assert snapshot() == before


@pytest.mark.parametrize("args, where, message", [
    (["db.nope"], "db.nope", "no such table in catalog 'audit' (catalogs in that database: aud)"),
    (["nonamespace"], "nonamespace", "name the table with its namespace"),
    (["db.t", "--warehouse", "/tmp"], "--warehouse", "needs --catalog URI"),
    (["db.t", "-P", "novalue"], "--property", "'novalue' is not KEY=VALUE"),
    (["db.t", "--check-files", "some"], "--check-files", "'some' is not one of"),
])
def test_bad_options_exit_2_in_one_line(cat, args, where, message):
    cat.table()
    extra = [] if "--warehouse" in args else ["--catalog", cat.uri]
    r = CliRunner().invoke(main, ["audit", *args, *extra])
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and where in lines[0] and message in lines[0], r.stderr
    assert "Traceback" not in r.output


def test_missing_sqlite_database_is_not_created(tmp_path):
    db = tmp_path / "nothing.db"
    r = CliRunner().invoke(main, ["audit", "db.t", "--catalog", f"sqlite:///{db}"])
    assert r.exit_code == 2
    assert r.stderr.strip() == f"error: --catalog: no SQLite catalog database at {db}"
    assert not db.exists()


def test_catalog_from_pyiceberg_environment(cat, tmp_path):
    """``load_catalog(name)`` reads PYICEBERG_CATALOG__<NAME>__* variables; without any
    configuration the command names --catalog-name (exit 2)."""
    _quiet()
    cat.table().append(rows((1, "a")))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYICEBERG_")}
    env["HOME"] = str(tmp_path)                    # no ~/.pyiceberg.yaml
    cmd = [sys.executable, "-m", "icecheck.cli.main", "audit", "db.t", "-q"]
    p = subprocess.run(cmd + ["--catalog-name", "aud"], capture_output=True, text=True,
                       env=dict(env, PYICEBERG_CATALOG__AUD__URI=cat.uri))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "clean: no findings" in p.stdout
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        "error: --catalog-name: no catalog named 'default' in PyIceberg's configuration "
        "(~/.pyiceberg.yaml or PYICEBERG_CATALOG__* variables); name one with --catalog-name, "
        "or give --catalog URI"]


def _add_files_twice(cat):
    t = cat.table()
    t.append(rows((1, "a")))
    os.makedirs(cat.dir / "ext")
    path = cat.dir / "ext" / "backfill.parquet"
    pq.write_table(rows((2, "b")), path)
    tx1, tx2 = cat.load().transaction(), cat.load().transaction()
    tx1.add_files([f"file://{path}"])
    tx2.add_files([f"file://{path}"])
    tx1.commit_transaction()
    tx2.commit_transaction()


def test_inferred_pipeline_reproduces_the_add_files_duplicate(cat):
    """--pipeline: the two add_files commits the duplicate finding names become two overlapping
    runs of one ADD_FILES job (PyIceberg: its summaries name no engine), and ``icecheck check``
    finds the duplicate on the model and the schedule that prevents it."""
    import yaml

    _quiet()
    _add_files_twice(cat)
    out = cat.dir / "pipeline.yaml"
    r = cat.audit("--pipeline", str(out))
    assert r.exit_code == 1 and f"draft pipeline: {out}" in r.stderr
    text = out.read_text()
    doc = yaml.safe_load(text)
    assert [(j["name"], j["profile"], j["program"][0]["sql"]) for j in doc["jobs"]] == [
        ("pyiceberg-insert", "pyiceberg-0.12-serializable", "INSERT"),
        ("pyiceberg-add-files", "pyiceberg-0.12-serializable", "ADD_FILES"),
        ("pyiceberg-add-files-overlapping", "pyiceberg-0.12-serializable", "ADD_FILES")]
    snaps = [str(s.snapshot_id) for s in cat.load().metadata.snapshots]
    assert f"# inferred from 2 snapshot(s): {snaps[1]}, {snaps[2]}" in text
    assert doc["catalog"] == {"name": "jdbc"} and doc["table"]["schema"] == {
        "id": "int", "category": "string"}
    r = CliRunner().invoke(main, ["check", str(out), "--reports", str(cat.dir / "check")])
    assert r.exit_code == 1, r.output
    assert "FAIL: duplicate_keys (jobs: pyiceberg-add-files, pyiceberg-add-files-overlapping)" \
        in r.stdout


def test_inferred_pipeline_of_a_clean_table_passes(cat):
    _quiet()
    t = cat.table(**{"write.delete.isolation-level": "snapshot"})
    t.append(rows((1, "a"), (2, "b")))
    cat.load().delete("id = 1")
    out = cat.dir / "p.yaml"
    assert cat.audit("--pipeline", str(out)).exit_code == 0
    text = out.read_text()
    assert "profile: pyiceberg-0.12-snapshot" in text           # from the table's property
    assert "write.delete.isolation-level: snapshot" in text
    r = CliRunner().invoke(main, ["check", str(out), "--reports", str(cat.dir / "check")])
    assert r.exit_code == 0, r.output
    r = cat.audit("--pipeline", str(cat.dir))
    assert r.exit_code == 2 and "--pipeline" in r.stderr and "is a folder" in r.stderr
